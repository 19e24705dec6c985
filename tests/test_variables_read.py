"""The variables each installed reader reads, asked of the thing itself (issue 45, item 3; round sixteen, k22).

benchmarks/variables_read.py lists every name the installed torch, jax/jaxlib, onnxruntime and cupy read in their
Python files, and every name of their prefixes the NVIDIA libraries hold in their read-only data
(benchmarks/results/variables_read.json, with the package versions it was read from). A name a framework reads in a
way that can fail (int(), float(), JAX's validating states, bool_env) must have a row in compat/ or a grammar the
doctor reads from the installed reader itself, or stand in LEFT_OUT with its source and why. The rows written from
the list are judged as their readers read them, proven against the real torch 2.13.0+cpu where a CPU build runs the
reader."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from cudnn_doctor.knowledge.environment import family_of, rows
from tests.conftest import Machine
from tests.real_wheels import real_torch_cpu
from tests.test_environment_settings import check, closed_loop, real_jax_site, settings_findings
from tests.test_process_env import finding, gpu_machine, plan_lines
from tests.test_settings_parsers import COMPILE, run_jax_with, torch_site

__all__ = ["real_jax_site", "torch_site"]  # the fixtures, used by name

ROOT = Path(__file__).resolve().parent.parent
LIST = ROOT / "benchmarks" / "results" / "variables_read.json"

# names a framework reads in a way that can fail that have no row, each with why and where it is read (the
# package==version the committed list was read from)
LEFT_OUT = {
    "TORCH_BISECT_MAX": "read only by torch.compile's bisector, a debugging tool a user runs on purpose to find the "
                        "failing step of a compilation (torch==2.13.0+cpu torch/_inductor/compiler_bisector.py "
                        "CompilerBisector: int(get_env_val('TORCH_BISECT_MAX')))",
    "TF_USE_ROCM_NHWC": "read only by XLA on an AMD GPU (jax-cuda13-pjrt==0.10.2's xla_cuda_plugin.so holds its "
                        "fatal check; openxla/xla xla/service/gpu/transforms/layout_assignment.cc reads it in the "
                        "branch of se::RocmComputeCapability): never on an NVIDIA GPU",
    "CUPY_TEST_CASUAL": "read only by CuPy's own test suite (cupy-cuda13x==14.2.0 cupy/testing/_parameterized.py)",
    "CUPY_TEST_FULL_COMBINATION": "read only by CuPy's own test suite (cupy-cuda13x==14.2.0 "
                                  "cupy/testing/_parameterized.py)",
    "CUPY_TEST_GPU_LIMIT": "read only by CuPy's own test suite (cupy-cuda13x==14.2.0 cupy/testing/_attr.py)",
    "CUPY_TEST_RANDOM_NONDETERMINISTIC": "read only by CuPy's own test suite (cupy-cuda13x==14.2.0 "
                                         "cupy/testing/_random.py)",
    "CUPY_TEST_RANDOM_SUBSAMPLE": "read only by CuPy's own test suite (cupy-cuda13x==14.2.0 "
                                  "cupy/testing/_parameterized.py)",
}


def scanner() -> ModuleType:
    """benchmarks/variables_read.py as a module (benchmarks/ is scripts, not a package)."""
    spec = importlib.util.spec_from_file_location("variables_read", ROOT / "benchmarks" / "variables_read.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def committed() -> dict:
    return json.loads(LIST.read_text())


def failing_names(found: dict) -> dict[str, dict]:
    """Every name of a reader's own prefixes that it reads in a way that can fail: {name: its entry}."""
    out = {}
    for reader in found["readers"].values():
        own = tuple(prefix + "_" for prefix in reader["prefixes"])
        out.update({name: entry for name, entry in reader["names"].items() if entry["fails"] and name.startswith(own)})
    return out


# --- the committed list -----------------------------------------------------------------------------------------

def test_the_list_names_what_it_was_read_from_and_what_each_reader_reads() -> None:
    found = committed()
    assert found["schema"] == "cudnn-doctor/variables-read/1"
    packages = found["packages"]
    for package in ("torch", "jax", "jaxlib", "jax-cuda13-plugin", "onnxruntime", "cupy-cuda13x", "nvidia-cudnn-cu13",
                    "nvidia-nccl-cu13", "nvidia-cublas", "nvidia-cuda-runtime", "nvidia-cuda-nvrtc", "nvidia-nvjitlink"):
        assert packages.get(package), (package, packages)
    readers = found["readers"]
    assert {"torch", "jax", "onnxruntime", "cupy", "cudnn", "nccl", "cublas", "cudart", "nvrtc"} <= set(readers)
    # read from each thing itself: a Python read with its parser, a library's string
    assert readers["torch"]["names"]["TORCHDYNAMO_TRANSLATION_VALIDATION_TIMEOUT"]["how"] == ["int()"]
    assert readers["jax"]["names"]["JAX_ENABLE_X64"]["how"] == ["jax state bool"]
    assert readers["jax"]["names"]["XLA_PYTHON_CLIENT_ABORT_COLLECTIVES_ON_FAILURE"]["fails"]  # int() through a name
    # NCCL's defaults are compile-time numbers: from its source at a commit, with the declaration
    assert found["nccl_source"].startswith("NVIDIA/nccl@")
    assert readers["nccl"]["names"]["NCCL_WIN_STRIDE"]["default"] == "-1"
    assert readers["nccl"]["names"]["NCCL_WIN_STRIDE"]["declared"].startswith("src/dev_runtime.cc:")
    assert "NCCL_P2P_LEVEL" in readers["nccl"]["names"] and "CUDNN_FORWARD_COMPAT_DISABLE" in readers["cudnn"]["names"]
    # cuDNN 9.28 keeps no plain string of its documented logging variables: the library view of it is partial
    assert "CUDNN_LOGLEVEL_DBG" not in readers["cudnn"]["names"]
    # a library's own API names (its headers' enum constants) are not variables
    assert "CUDNN_STATUS_SUCCESS" not in readers["cudnn"]["names"]
    assert "CUBLAS_STATUS_SUCCESS" not in readers["cublas"]["names"]
    # a library's fatal check around its reader, kept for its message: a read that can fail, with its default
    checked = readers["jax"]["names"]["TF_PER_DEVICE_MEMORY_LIMIT_MB"]
    assert checked["fails"] and "checked ReadInt64FromEnvVar, default 0" in checked["how"], checked


def test_every_name_a_framework_reads_in_a_way_that_can_fail_has_a_row_or_its_reason() -> None:
    derived = scanner().derived_grammar
    known = rows()
    missing = sorted(name for name, entry in failing_names(committed()).items()
                     if name not in known and not derived(name, entry, family_of) and name not in LEFT_OUT)
    assert not missing, f"read in a way that can fail, with no row in compat/ and no reason in LEFT_OUT: {missing}"


def test_each_name_left_out_is_still_read_so_and_has_no_row() -> None:
    failing = failing_names(committed())
    known = rows()
    for name, why in LEFT_OUT.items():
        assert name in failing and name not in known, name
        assert "==" in why and "read only by" in why, (name, why)


# --- the scanner, on code of the shapes the frameworks use ----------------------------------------------------------

SHAPES = '''
import os
from jax._src import config
A = int(os.environ.get("K22_A", "0"))
B = os.environ.get("K22_B", "0") == "1"
C = None if (env_str := os.getenv("K22_C")) is None else int(env_str)
D = None if (env_str := os.getenv("K22_D")) is None else "x"
flag = config.bool_state(name="jax_k22_e", default=False, help="")
text = config.string_state("jax_k22_f", "", help="")
def later():
    abort = os.getenv("K22_G", "0")
    return bool(int(abort))
if "K22_H" in os.environ:
    pass
'''


def test_the_scanner_reads_how_each_name_is_parsed(tmp_path: Path) -> None:
    source = tmp_path / "shapes.py"
    source.write_text(SHAPES)
    read = {name: (how, at) for name, how, at in scanner().python_reads(source)}
    assert read == {"K22_A": ("int()", "import"), "K22_B": ("compared with words", "import"),
                    "K22_C": ("int()", "import"), "K22_D": ("os.getenv", "import"),
                    "JAX_K22_E": ("jax state bool", "import"), "JAX_K22_F": ("jax state text", "import"),
                    "K22_G": ("int()", "function"), "K22_H": ("set or not", "import")}


def test_the_scanner_reads_a_librarys_strings_less_its_headers_names(tmp_path: Path) -> None:
    gcc = shutil.which("gcc") or shutil.which("cc")
    if gcc is None:
        pytest.skip("no C compiler")
    (tmp_path / "fake.c").write_text('const char *names[] = {"CUDNN_K22_DBG", "CUDNN_STATUS_K22", '
                                     '"CUDNN_CONV_K22_ENGINE", "cudnn_k22", "NCCL_K22 set by environment to %s", '
                                     '"NCCL_K22"};\n')
    library = tmp_path / "libfake.so"
    subprocess.run([gcc, "-shared", "-fPIC", "-o", str(library), str(tmp_path / "fake.c")], check=True)
    (tmp_path / "fake.h").write_text("typedef enum { CUDNN_STATUS_K22 = 0 } cudnnStatus_t;\n")
    module = scanner()
    read = dict(module.library_reads(library, ["CUDNN", "NCCL"]))
    # every string of the prefixes (an engine's name is left out by read_all, with the headers' names)
    assert read == {"CUDNN_K22_DBG": "rodata", "CUDNN_STATUS_K22": "rodata", "CUDNN_CONV_K22_ENGINE": "rodata",
                    "NCCL_K22": "rodata, parsed as text"}
    assert "CUDNN_STATUS_K22" in module.api_names([tmp_path])
    found = module.read_all([tmp_path])  # no reader's files here: nothing read
    assert found["readers"] == {}


# --- torch's int() reads, as torch reads them ------------------------------------------------------------------------

def run_torch(env: dict[str, str], code: str) -> subprocess.CompletedProcess[str]:
    """CODE run by the real torch 2.13.0+cpu with ENV."""
    whole = {"PATH": "/usr/bin:/bin", "HOME": os.environ.get("HOME", "/tmp"), "PYTHONPATH": str(real_torch_cpu()),
             **env}
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=whole, timeout=300,
                          stdin=subprocess.DEVNULL)


# One real torch start proves two values where each value's effect is its own, apart in that start's output: what
# TorchDynamo or Inductor made of its variable, printed on standard output by the code, and what libc10 said of
# TORCH_CPP_LOG_LEVEL when torch's libraries loaded, on standard error (c10 reads no other variable set there, and
# neither Python reader reads TORCH_CPP_LOG_LEVEL). Each start is a clean import that must succeed (exit 0) for both
# tests, so neither value can hide the other's failure. A torch start is about 1.6 CPU s; made once per run for every
# pytest-xdist worker (its answer kept in the run's shared temporary folder, under a lock).
SHARED_STARTS = {
    "validation-timeout": ({"TORCHDYNAMO_TRANSLATION_VALIDATION_TIMEOUT": " 1_000 ", "TORCH_CPP_LOG_LEVEL": "WARN"},
                           "import torch; print(torch.fx.experimental._config.translation_validation_timeout)"),
    "max-autotune": ({"TORCHINDUCTOR_MAX_AUTOTUNE": "true", "TORCH_CPP_LOG_LEVEL": " 1"},
                     "import torch._inductor.config as c; print(c.max_autotune)"),
}


def shared_torch_start(name: str, tmp_path_factory: pytest.TempPathFactory) -> subprocess.CompletedProcess[str]:
    """SHARED_STARTS[NAME] run by the real torch once in this run: the first test to need it runs it, the others
    (in any worker) read its exit status, stdout and stderr back."""
    from tests.locks import locked, worker_id

    # the run's own folder: a pytest-xdist worker's basetemp is popen-gwN inside it; without workers, basetemp is it
    run = tmp_path_factory.getbasetemp()
    folder = (run.parent if worker_id() != "main" else run) / "torch-starts"
    folder.mkdir(exist_ok=True)
    kept = folder / f"{name}.json"
    with locked(name, folder):
        if not kept.exists():
            env, code = SHARED_STARTS[name]
            said = run_torch(env, code)
            kept.write_text(json.dumps([said.returncode, said.stdout, said.stderr]))
    returncode, stdout, stderr = json.loads(kept.read_text())
    return subprocess.CompletedProcess([sys.executable, "-c", SHARED_STARTS[name][1]], returncode, stdout, stderr)


@pytest.mark.parametrize("value", ["yes", ""])
def test_a_value_torchs_import_refuses_with_int_is_an_error_with_its_rule(machine: Machine, torch_site: Path,
                                                                          value: str) -> None:
    variable = "TORCHDYNAMO_TRANSLATION_VALIDATION_TIMEOUT"
    machine.env[variable] = value
    refused = finding(check(machine), "CD411")
    assert refused["subject"] == variable and refused["severity"] == "error" and refused["evidence"] == "rule"
    assert f"{value!r} is not a whole number to Python's int()" in refused["detail"], refused["detail"]
    said = run_torch({variable: value}, "import torch")  # the rule, proven against the real torch
    assert said.returncode != 0 and "invalid literal for int() with base 10" in said.stderr, said.stderr[-600:]
    if value:
        closed_loop(machine, "CD411", variable)


def test_a_value_torchs_int_takes_is_no_finding(machine: Machine, torch_site: Path,
                                              tmp_path_factory: pytest.TempPathFactory) -> None:
    variable = "TORCHDYNAMO_TRANSLATION_VALIDATION_TIMEOUT"
    machine.env[variable] = " 1_000 "  # int() strips blanks and takes '_' between digits
    assert not settings_findings(check(machine), variable)
    said = shared_torch_start("validation-timeout", tmp_path_factory)  # " 1_000 ", read by torch's own config
    assert SHARED_STARTS["validation-timeout"][0][variable] == " 1_000 "
    assert said.returncode == 0 and said.stdout.split() == ["1000"], said.stderr[-600:]


def test_a_value_torch_compile_refuses_is_a_warning_that_says_when(machine: Machine, torch_site: Path) -> None:
    machine.env["TORCHDYNAMO_REPRO_LEVEL"] = "yes"
    warned = finding(check(machine), "CD414")
    assert warned["subject"] == "TORCHDYNAMO_REPRO_LEVEL" and warned["severity"] == "warning", warned
    assert "torch.compile" in warned["detail"] and "'yes' is not a whole number" in warned["detail"], warned["detail"]
    said = run_torch({"TORCHDYNAMO_REPRO_LEVEL": "yes"}, "import torch\nprint('imported', flush=True)\n"
                                                         "torch.compile(lambda x: x + 1)")
    assert said.stdout.startswith("imported") and "invalid literal for int() with base 10" in said.stderr, said.stderr


def test_a_value_init_process_group_refuses_is_said_for_a_collective(machine: Machine, torch_site: Path) -> None:
    machine.env["TORCH_DIST_INIT_BARRIER"] = "yes"
    [said] = settings_findings(check(machine), "TORCH_DIST_INIT_BARRIER")
    # one GPU and no launcher's count above 1: a program here runs no collective, so it is information
    assert said["code"] == "CD414" and said["severity"] == "info", said
    assert "first collective" in said["detail"] and "'yes' is not a whole number" in said["detail"], said["detail"]
    machine.env["TORCH_DIST_INIT_BARRIER"] = "1"
    assert not settings_findings(check(machine), "TORCH_DIST_INIT_BARRIER")
    group = ("import torch.distributed as d; d.init_process_group('gloo', rank=0, world_size=1, "
             "init_method='tcp://127.0.0.1:{port}'); print('made')")
    refused = run_torch({"TORCH_DIST_INIT_BARRIER": "yes"}, group.format(port=29621))  # the real torch refuses it
    assert "invalid literal for int() with base 10: 'yes'" in refused.stderr, refused.stderr[-600:]


# --- NCCL's integer parameters, as ncclLoadParam reads them ---------------------------------------------------------

@pytest.mark.parametrize(("value", "words"), [
    ("abc", "NCCL takes it as 0"),  # strtoll reads no number as 0 and ncclLoadParam keeps it (no errno)
    ("12abc", "NCCL takes it as 12"),
    ("99999999999999999999", "NCCL warns and keeps its default"),  # ERANGE: the default
])
def test_an_nccl_parameter_found_in_its_library_is_read_as_ncclloadparam_reads_it(machine: Machine, tmp_path: Path,
                                                                                  value: str, words: str) -> None:
    gpu_machine(machine, tmp_path, gpus=2)
    machine.env["NCCL_WIN_STRIDE"] = value
    warned = finding(check(machine), "CD176")
    assert warned["subject"] == "NCCL_WIN_STRIDE" and words in warned["detail"], warned["detail"]
    assert "NCCL_PARAM(WinStride" in " ".join(warned["refs"]), warned["refs"]


@pytest.mark.parametrize("value", ["0x10", "-1", "010"])
def test_an_nccl_parameter_written_as_strtoll_reads_it_is_no_finding(machine: Machine, tmp_path: Path,
                                                                     value: str) -> None:
    gpu_machine(machine, tmp_path, gpus=2)
    machine.env["NCCL_WIN_STRIDE"] = value
    found = [f for f in settings_findings(check(machine), "NCCL_WIN_STRIDE") if f["code"] == "CD176"]
    assert not found or "octal" in found[0]["detail"], found


# --- a JAX text option JAX gives to Python's re: kind regex ---------------------------------------------------------

@pytest.mark.parametrize("value", ["(", "a[", "*"])
def test_a_regex_jax_cannot_compile_is_an_error_at_its_first_compilation(machine: Machine, real_jax_site: Path,
                                                                        value: str) -> None:
    variable = "JAX_HLO_SOURCE_FILE_CANONICALIZATION_REGEX"
    machine.env[variable] = value
    refused = finding(check(machine), "CD411")
    assert refused["subject"] == variable and refused["severity"] == "error" and refused["evidence"] == "rule"
    assert "is not a regular expression to Python's re" in refused["detail"], refused["detail"]
    assert "first compilation" in refused["detail"], refused["detail"]
    said = run_jax_with({variable: value}, COMPILE)  # the rule, proven against the real jax
    assert said.returncode != 0 and "re.error" in said.stderr, said.stderr[-600:]


def test_a_regex_jax_compiles_is_no_finding(machine: Machine, real_jax_site: Path) -> None:
    variable = "JAX_HLO_SOURCE_FILE_CANONICALIZATION_REGEX"
    machine.env[variable] = ".*/site-packages/"
    assert not settings_findings(check(machine), variable)
    said = run_jax_with({variable: ".*/site-packages/"}, COMPILE)
    assert said.returncode == 0 and "2.0" in said.stdout, said.stderr[-600:]


# --- XLA's settings in the installed CUDA plugin: a refusal read from its own strings is a warning ------------------

@pytest.mark.parametrize(("variable", "value", "words"), [
    ("TF_CUDA_PLATFORM_GPU_DEVICE_SCHEDULE", "busy", "'busy' is not one of spin, yield, blocking_sync"),
    ("TF_CUDA_PLATFORM_GPU_DEVICE_SCHEDULE", "", "'' is not one of"),  # set but empty: strcmp fails, QFATAL
    ("TF_PER_DEVICE_MEMORY_LIMIT_MB", "1G", "'1G' is not a whole number to TensorFlow's ReadInt64FromEnvVar"),
    ("TF_DETERMINISTIC_ALLOCATOR", "yes", "'yes' is not one of 0, false, 1, true"),
])
def test_a_value_xlas_gpu_backend_aborts_on_is_a_warning_read_from_its_plugin(
        machine: Machine, real_jax_site: Path, variable: str, value: str, words: str) -> None:
    machine.env[variable] = value
    warned = finding(check(machine), "CD411")
    assert warned["subject"] == variable and warned["severity"] == "warning" and warned["evidence"] == "read"
    assert words in warned["detail"] and "ends the process" in warned["detail"], warned["detail"]
    assert "--deep" in warned["detail"], warned["detail"]
    held = committed()["readers"]["jax"]["names"][variable]  # the installed plugin holds the name
    assert held["files"] == ["jax_plugins/xla_cuda13/xla_cuda_plugin.so"], held


@pytest.mark.parametrize(("variable", "value"), [
    ("TF_CUDA_PLATFORM_GPU_DEVICE_SCHEDULE", "blocking_sync"), ("TF_PER_DEVICE_MEMORY_LIMIT_MB", " 512 "),
    ("TF_DETERMINISTIC_ALLOCATOR", "TRUE"), ("XLA_PJRT_GPU_HOST_MEMORY_LIMIT_GB", "128"),
])
def test_a_value_xlas_gpu_backend_takes_is_no_finding(machine: Machine, real_jax_site: Path, variable: str,
                                                      value: str) -> None:
    machine.env[variable] = value
    assert not settings_findings(check(machine), variable)


def test_a_host_memory_limit_xla_cannot_read_is_a_warning_that_it_keeps_its_default(machine: Machine,
                                                                                     real_jax_site: Path) -> None:
    machine.env["XLA_PJRT_GPU_HOST_MEMORY_LIMIT_GB"] = "64GB"
    warned = finding(check(machine), "CD414")
    assert warned["subject"] == "XLA_PJRT_GPU_HOST_MEMORY_LIMIT_GB" and warned["severity"] == "warning", warned
    assert "ignores it and keeps its default" in warned["detail"], warned["detail"]


# --- CuPy's switches: int(value) == 1, anything int() refuses is off without a word -------------------------------

@pytest.mark.parametrize(("value", "warned"), [("true", True), ("yes", True), ("1", False), (" 01 ", False),
                                               ("0", False)])
def test_a_cupy_switch_int_cannot_read_is_a_warning_that_it_stays_off(machine: Machine, tmp_path: Path, value: str,
                                                                      warned: bool) -> None:
    gpu_machine(machine, tmp_path, gpus=1)
    machine.env["CUPY_COMPILE_WITH_PTX"] = value
    found = settings_findings(check(machine), "CUPY_COMPILE_WITH_PTX")
    assert bool(found) == warned, found
    if warned:
        assert found[0]["code"] == "CD414" and found[0]["severity"] == "warning", found
        assert "leaves it off without a word" in found[0]["detail"], found[0]["detail"]


# --- torch's C++ logging level, as libc10 parses it ------------------------------------------------------------------

@pytest.mark.parametrize(("value", "refused"), [("WARN", True), (" 1", True), ("info", False), ("", False)])
def test_torchs_cpp_log_level_as_libc10_parses_it(machine: Machine, torch_site: Path, value: str,
                                                  refused: bool, tmp_path_factory: pytest.TempPathFactory) -> None:
    machine.env["TORCH_CPP_LOG_LEVEL"] = value
    found = settings_findings(check(machine), "TORCH_CPP_LOG_LEVEL")
    assert bool(found) == refused, found
    if refused:
        assert found[0]["code"] == "CD414" and found[0]["severity"] == "warning", found
    # the real torch's own words, or none: a start of its own, or the shared start that sets this value
    [shared] = [name for name, (env, _) in SHARED_STARTS.items() if env.get("TORCH_CPP_LOG_LEVEL") == value] or [None]
    said = (shared_torch_start(shared, tmp_path_factory) if shared
            else run_torch({"TORCH_CPP_LOG_LEVEL": value}, "import torch"))
    assert said.returncode == 0 and ("environment variable cannot be parsed" in said.stderr) == refused, said.stderr


# --- a switch the installed torch compares with words: read from its own file, a word it does not compare is off ----

@pytest.fixture
def inductor_site(torch_site: Path) -> Path:
    """torch_site whose torch/_inductor/config.py is the real torch 2.13.0+cpu's (the family's reader asks it)."""
    (torch_site / "torch" / "_inductor").mkdir(parents=True, exist_ok=True)
    (torch_site / "torch" / "_inductor" / "config.py").symlink_to(real_torch_cpu() / "torch" / "_inductor" /
                                                                  "config.py")
    return torch_site


@pytest.mark.parametrize(("variable", "value", "read_as"), [
    ("TORCHINDUCTOR_MAX_AUTOTUNE", "true", "read as off, where it means on"),  # == '1', no default
    ("TORCHINDUCTOR_MAX_AUTOTUNE", "on", "read as off, where it means on"),
    ("TORCHINDUCTOR_FREEZING", "yes", "read as off, where it means on"),  # == '1', default '0'
    ("TORCHINDUCTOR_MAX_AUTOTUNE", "2", "read as off"),  # means nothing, read as off, and its default is off: said
])
def test_a_switch_torch_compares_with_words_is_a_warning_where_read_otherwise(
        machine: Machine, inductor_site: Path, variable: str, value: str, read_as: str) -> None:
    machine.env[variable] = value
    [warned] = settings_findings(check(machine), variable)
    assert warned["code"] == "CD414" and warned["severity"] == "warning", warned
    assert "only '1' is on" in warned["detail"] and read_as in warned["detail"], warned["detail"]
    assert "torch.compile" in warned["detail"], warned["detail"]  # read only where a program compiles


def test_a_switch_read_as_meant_is_no_finding(machine: Machine, inductor_site: Path) -> None:
    for value in ("1", "0", "false", ""):
        machine.env["TORCHINDUCTOR_MAX_AUTOTUNE"] = value
        assert not settings_findings(check(machine), "TORCHINDUCTOR_MAX_AUTOTUNE"), value


def test_the_real_torch_reads_such_a_switch_as_off_and_the_plan_writes_its_word(
        machine: Machine, inductor_site: Path, tmp_path_factory: pytest.TempPathFactory) -> None:
    said = shared_torch_start("max-autotune", tmp_path_factory)  # TORCHINDUCTOR_MAX_AUTOTUNE=true
    assert SHARED_STARTS["max-autotune"][0]["TORCHINDUCTOR_MAX_AUTOTUNE"] == "true"
    assert said.returncode == 0 and said.stdout.split() == ["False"], said.stderr[-600:]
    machine.env["TORCHINDUCTOR_MAX_AUTOTUNE"] = "true"
    lines = plan_lines(machine)
    assert any("TORCHINDUCTOR_MAX_AUTOTUNE=1" in line for line in lines), lines


@pytest.fixture
def dynamo_site(torch_site: Path) -> Path:
    """torch_site whose TorchDynamo option files are the real torch 2.13.0+cpu's."""
    for part in ("_dynamo/config.py", "_dynamo/eval_frame.py", "fx/experimental/_config.py"):
        (torch_site / "torch" / part).parent.mkdir(parents=True, exist_ok=True)
        (torch_site / "torch" / part).symlink_to(real_torch_cpu() / "torch" / part)
    return torch_site


def test_torchdynamos_switches_are_read_from_its_own_files(machine: Machine, dynamo_site: Path) -> None:
    machine.env["TORCHDYNAMO_DISABLE"] = "true"  # eval_frame.py: os.environ.get("TORCHDYNAMO_DISABLE", "") == "1"
    machine.env["TORCHDYNAMO_VERBOSE"] = "1"
    machine.env["TORCHDYNAMO_VERBSE"] = "1"  # no file of the installed torch names it
    report = check(machine)
    [warned] = settings_findings(report, "TORCHDYNAMO_DISABLE")
    assert warned["code"] == "CD414" and "only '1' is on" in warned["detail"], warned
    assert "read as off, where it means on" in warned["detail"] and "torch.compile" in warned["detail"]
    assert not settings_findings(report, "TORCHDYNAMO_VERBOSE")
    [unread] = settings_findings(report, "TORCHDYNAMO_VERBSE")
    assert unread["code"] == "CD418" and "reads no variable of this name" in unread["detail"], unread


# --- ONNX Runtime's attention switches: its own bool parser, six words and nothing else ----------------------------

@pytest.mark.parametrize(("value", "refused"), [("TRUE", True), ("yes", True), (" 1", True), ("True", False),
                                                ("0", False), ("", False)])
def test_an_onnxruntime_switch_as_its_bool_parser_reads_it(machine: Machine, tmp_path: Path, value: str,
                                                           refused: bool) -> None:
    gpu_machine(machine, tmp_path, gpus=1)
    machine.env["ORT_DISABLE_FLASH_ATTENTION"] = value
    found = settings_findings(check(machine), "ORT_DISABLE_FLASH_ATTENTION")
    assert bool(found) == refused, found
    if refused:
        assert found[0]["code"] == "CD414" and found[0]["severity"] == "warning", found
        assert "Failed to parse environment variable" in found[0]["detail"], found[0]["detail"]
