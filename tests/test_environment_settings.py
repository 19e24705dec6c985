"""Every variable CUDA, cuBLAS, cuDNN, NCCL and the frameworks read is data (compat/process_env.toml [[setting]] and
[[setting_family]], compat/multi_gpu.toml [[nccl_setting]]), judged one way (issue 45): a test per kind of grammar,
the installed files asked where they can answer (the real jax's config.py, a gcc-built stand-in for torch's
libc10_cuda.so), each error with its rule, and the plan's lines sourced in a real bash leaving check clean of the
finding. The data is the only list of the variables' names: a test greps the package for a second one."""

from __future__ import annotations

import ast
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from cudnn_doctor.knowledge.environment import families, feature_of, rows
from tests.conftest import ROOT, Machine, codes
from tests.fakes.build import compile_library
from tests.jax_programs import run_jax_program
from tests.real_wheels import real_jax_cpu, real_nccl
from tests.test_architecture import syntax_tree
from tests.test_frameworks import install_torch, python_env
from tests.test_process_env import check_after, finding, gpu_machine, jax_install, plan_lines


def check(machine: Machine) -> dict:
    """check --json on MACHINE; every error in it carries seen or rule evidence (an error needs one)."""
    report = machine.check_json()
    unproven = [f for f in report["findings"] if f["severity"] == "error" and f["evidence"] not in ("seen", "rule")]
    assert not unproven, unproven
    return report


def closed_loop(machine: Machine, code: str, variable: str) -> None:
    """The plan's lines for this machine, sourced in bash, leave check without CODE for VARIABLE."""
    lines = plan_lines(machine)
    assert any(variable in line for line in lines), lines
    after = check_after(machine, lines)
    assert not [f for f in after["findings"] if f["code"] == code and f["subject"] == variable], after["findings"]


def settings_findings(report: dict, variable: str) -> list[dict]:
    return [f for f in report["findings"] if f["subject"] == variable]


# --- one test per kind of grammar: what the reader cannot use is a warning that says --deep proves it -------------

@pytest.mark.parametrize(("variable", "value", "words"), [
    ("CUDA_LAUNCH_BLOCKING", "yes", "'yes' is not one of 0, 1"),  # bool
    ("CUDA_MODULE_LOADING", "lazy", "'lazy' is not one of DEFAULT, LAZY, EAGER"),  # enum, case kept
    ("CUDA_DEVICE_MAX_CONNECTIONS", "64", "64 is above 32 (it takes 1 to 32)"),  # integer, range
    ("CUBLASLT_LOG_LEVEL", "verbose", "'verbose' is not a whole number"),  # integer
    ("CUBLAS_WORKSPACE_CONFIG", "4096:8", "is not of the form it takes: :SIZE_KIB:COUNT"),  # pattern
    ("CUDA_COREDUMP_GENERATION_FLAGS", "skip_abort,skip_all", "'skip_all' is not among"),  # list
    ("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE", "150", "150 is above 100"),  # float, range
])
def test_a_value_its_reader_does_not_take_is_a_warning_that_deep_proves(machine: Machine, tmp_path: Path,
                                                                         variable: str, value: str, words: str) -> None:
    gpu_machine(machine, tmp_path, gpus=1)
    machine.env[variable] = value
    report = check(machine)
    warned = finding(report, "CD414")
    assert warned["subject"] == variable and warned["severity"] == "warning" and warned["evidence"] == "read"
    assert words in warned["detail"], warned["detail"]
    # what only a feature's use reads (a GPU exception's core dump) says when it matters, not that --deep proves it
    proves = "It matters only when" if feature_of(variable) else "check --deep"
    assert proves in warned["detail"] and "compat/" not in warned["refs"][0]
    assert warned["refs"][0].startswith(("CUDA C++", "cuBLAS", "CUDA-GDB", "NVIDIA Multi-Process"))
    closed_loop(machine, "CD414", variable)


@pytest.mark.parametrize(("variable", "value"), [
    ("CUDA_MODULE_LOADING", "LAZY"), ("CUBLAS_WORKSPACE_CONFIG", ":4096:2:16:8"), ("CUDNN_LOGDEST_DBG", "stderr"),
    ("TORCH_NCCL_BLOCKING_WAIT", "TRUE"),  # the reader compares without case
    ("CUDA_COREDUMP_GENERATION_FLAGS", "skip_abort,skip_global_memory"), ("CUDA_DEVICE_MAX_CONNECTIONS", "1"),
    ("CUDA_VISIBLE_DEVICES", "0"),  # cuInit's own answer judges it, not a grammar
])
def test_values_the_readers_take_raise_nothing(machine: Machine, tmp_path: Path, variable: str, value: str) -> None:
    gpu_machine(machine, tmp_path, gpus=1)
    machine.env[variable] = value
    report = check(machine)
    assert not settings_findings(report, variable), report["findings"]
    assert report["process"]["settings"][variable] == value


def test_an_integer_its_reader_clips_is_no_refusal_but_what_it_clips_to(machine: Machine, tmp_path: Path) -> None:
    """cuDNN clips CUDNN_LOGLEVEL_DBG into 0-3: 7 is 3, its every-call log (slow), not a value it refuses."""
    gpu_machine(machine, tmp_path, gpus=1)
    machine.env["CUDNN_LOGLEVEL_DBG"] = "7"
    report = check(machine)
    assert [f["code"] for f in settings_findings(report, "CUDNN_LOGLEVEL_DBG")] == ["CD412"]
    closed_loop(machine, "CD412", "CUDNN_LOGLEVEL_DBG")


# --- paths: a folder or file its reader cannot use, and who writes there ------------------------------------------

@pytest.mark.parametrize(("variable", "target", "problem", "writer"), [
    ("CUDA_CACHE_PATH", "file/ComputeCache", "is not a folder", "the CUDA driver"),
    ("JAX_COMPILATION_CACHE_DIR", "file", "is not a folder", "JAX, which saves the XLA programs"),
    ("CUDNN_LOGDEST_DBG", "folder", "is a folder, where a file is written", "cuDNN, which writes its API log"),
    ("CUDA_INJECTION64_PATH", "missing/libinject.so", "does not exist", "loads that library into every CUDA program"),
    ("CUDA_MPS_PIPE_DIRECTORY", "missing", "does not exist", "the MPS control daemon"),
])
def test_a_path_its_reader_cannot_use_is_a_warning_naming_who_writes_there(
        machine: Machine, tmp_path: Path, variable: str, target: str, problem: str, writer: str) -> None:
    gpu_machine(machine, tmp_path, gpus=1)
    (tmp_path / "file").write_text("a file, not a folder\n")
    (tmp_path / "folder").mkdir()
    machine.env[variable] = str(tmp_path / target)
    report = check(machine)
    made = finding(report, "CD417")
    assert made["subject"] == variable and made["severity"] == "warning"
    assert problem in made["detail"] and writer in made["detail"], made["detail"]
    assert variable in report["process"]["setting_paths"]
    closed_loop(machine, "CD417", variable)


def test_a_writable_folder_a_reader_makes_and_hostile_values_are_no_finding(machine: Machine,
                                                                             tmp_path: Path) -> None:
    """A cache folder not made yet under a writable one is fine (its reader makes it); a FIFO where a file is read is
    never opened (the doctor does not hang on it; it says the reader would wait on it for a writer); a value with a
    newline, quotes and $(...) is quoted by the plan as bash reads it."""
    gpu_machine(machine, tmp_path, gpus=1)
    fifo = tmp_path / "errata.json"
    import os

    os.mkfifo(fifo)
    machine.env["CUDA_CACHE_PATH"] = str(tmp_path / "new" / "ComputeCache")
    machine.env["CUDNN_ERRATA_JSON_FILE"] = str(fifo)  # readable, as far as asking goes: never opened
    machine.env["CUDA_MODULE_LOADING"] = "lazy'$(touch pwned)\n\udcff"  # and a byte that is not UTF-8
    machine.env["CUBLAS_WORKSPACE_CONFIG"] = ":1" * 50_000  # a pattern is never run on 100 000 characters
    report = check(machine)
    assert not settings_findings(report, "CUDA_CACHE_PATH")
    assert all("FIFO" in f["detail"] for f in settings_findings(report, "CUDNN_ERRATA_JSON_FILE"))
    [long] = settings_findings(report, "CUBLAS_WORKSPACE_CONFIG")
    assert long["code"] == "CD414" and "a value of 100000 characters" in long["detail"] and len(long["detail"]) < 2000
    closed_loop(machine, "CD414", "CUDA_MODULE_LOADING")
    assert not (machine.cwd / "pwned").exists()


# --- JAX: its options as the installed jax defines them ------------------------------------------------------------

@pytest.fixture
def real_jax_site(machine: Machine, tmp_path: Path) -> Path:
    """A Python environment whose jax is the real one (0.4.38, CPU): its jax/_src/*.py are what is asked."""
    gpu_machine(machine, tmp_path, gpus=1)
    site = python_env(machine, tmp_path)
    jax_install(site)
    (site / "jax").symlink_to(real_jax_cpu() / "jax")
    (site / "jaxlib").symlink_to(real_jax_cpu() / "jaxlib")
    return site


def import_jax_with(name: str, value: str) -> subprocess.CompletedProcess[str]:
    """The real jax imported with NAME=VALUE: what the rule says it does."""
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(real_jax_cpu()), "JAX_PLATFORMS": "cpu", name: value}
    return run_jax_program(env, "import jax")  # forked before `import jax`, NAME set (tests/jax_programs.py)


@pytest.mark.parametrize(("variable", "value", "jax_says"), [
    ("JAX_LOG_COMPILES", "maybe", "invalid truth value 'maybe' for environment 'JAX_LOG_COMPILES'"),  # bool_state
    ("JAX_TRACEBACK_FILTERING", "none", 'Invalid value "none" for JAX flag jax_traceback_filtering'),  # enum_state
    ("JAX_COMPILATION_CACHE_MAX_SIZE", "1GB", 'Invalid value "1GB" for JAX flag jax_compilation_cache_max_size'),
])
def test_a_jax_option_refused_by_the_installed_jaxs_own_definition_is_an_error_with_its_rule(
        machine: Machine, real_jax_site: Path, variable: str, value: str, jax_says: str) -> None:
    machine.env[variable] = value
    report = check(machine)
    refused = finding(report, "CD411")
    assert refused["subject"] == variable and refused["severity"] == "error" and refused["evidence"] == "rule"
    assert "config.py" in refused["proof"] and "raises ValueError when it is imported" in refused["detail"]
    assert report["process"]["setting_answers"][variable]["kind"] in ("bool", "enum", "integer")
    said = import_jax_with(variable, value)  # the rule, proven against the real jax
    assert said.returncode != 0 and jax_says in said.stderr, said.stderr[-600:]
    assert import_jax_with(variable, "1" if "COMPILES" in variable else "off" if "FILTER" in variable else "7").returncode == 0
    closed_loop(machine, "CD411", variable)


def test_the_kinds_read_from_jaxs_files_are_those_the_real_jax_holds() -> None:
    """Every jax_* option of the real jax 0.4.38 (its config's State holders, asked after import) read from its files
    as this does: a bool, int or float option is read as that kind; a str option as an enum or any text."""
    from cudnn_doctor.model import Framework
    from cudnn_doctor.probes.settings import jax_options

    code = ("import json; from jax._src import config as c; print(json.dumps({n: type(h.value).__name__ for n, h in "
            "c.config._value_holders.items() if isinstance(h, c.State) and n.startswith('jax_')}))")
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(real_jax_cpu()), "JAX_PLATFORMS": "cpu"}
    done = run_jax_program(env, code)
    held = __import__("json").loads(done.stdout)
    assert len(held) > 40, done.stderr[-600:]
    jax = Framework("jax", "0.4.38", None, None, None, "site-packages", details={"site_packages": str(real_jax_cpu())})
    read = {name.lower(): answer.kind for name, answer in jax_options([n.upper() for n in held], [jax]).items()}
    expected = {"bool": {"bool"}, "int": {"integer"}, "float": {"float"}, "str": {"enum", "string"},
                "NoneType": {"enum", "string", "integer", "float", "bool"}}
    wrong = {name: (kind, read.get(name)) for name, kind in held.items() if read.get(name) not in expected[kind]}
    assert not wrong, wrong


def test_a_jax_variable_no_file_of_the_installed_jax_reads_is_a_warning(machine: Machine, real_jax_site: Path) -> None:
    """JAX_PLATFORM (JAX_PLATFORMS without its s) is read by nobody: JAX ignores it and picks its own backend."""
    machine.env["JAX_PLATFORM"] = "cpu"
    # one it defines, of a value it takes (JAX_NUMPY_RANK_PROMOTION, now a row of the data, was this test's first)
    machine.env["JAX_LEGACY_PRNG_KEY"] = "warn"
    machine.env["JAX_COORDINATOR_ADDRESS"] = "10.0.0.1:1234"  # read with os.getenv in distributed.py: any text
    report = check(machine)
    warned = finding(report, "CD418")
    assert warned["subject"] == "JAX_PLATFORM" and "JAX reads no variable of this name" in warned["detail"]
    answers = report["process"]["setting_answers"]
    assert answers["JAX_LEGACY_PRNG_KEY"]["values"] == ["allow", "warn", "error"]
    assert answers["JAX_COORDINATOR_ADDRESS"]["kind"] == "string"
    for known in ("JAX_LEGACY_PRNG_KEY", "JAX_COORDINATOR_ADDRESS"):
        assert not settings_findings(report, known), report["findings"]
    closed_loop(machine, "CD418", "JAX_PLATFORM")


def test_an_xla_variable_no_file_of_jaxlib_reads_is_a_warning(machine: Machine, real_jax_site: Path) -> None:
    """XLA_PYTHON_CLIENT_MEM_FRACTON (misspelt) is read by nothing: JAX keeps preallocating 75% of each GPU. One the
    data has no row for but jaxlib reads (in xla_client.py) is no finding."""
    machine.env["XLA_PYTHON_CLIENT_MEM_FRACTON"] = ".5"
    machine.env["XLA_PYTHON_CLIENT_COLLECTIVE_MEM_SIZE_MB"] = "64"
    report = check(machine)
    warned = finding(report, "CD418")
    assert warned["subject"] == "XLA_PYTHON_CLIENT_MEM_FRACTON" and "JAX reads no variable of this name" in \
        warned["detail"] and "jaxlib/*.py" in warned["detail"]
    # read by its name, and given to int() in generate_pjrt_gpu_plugin_options (tests/test_settings_parsers.py)
    assert report["process"]["setting_answers"]["XLA_PYTHON_CLIENT_COLLECTIVE_MEM_SIZE_MB"]["kind"] == "integer"
    assert not settings_findings(report, "XLA_PYTHON_CLIENT_COLLECTIVE_MEM_SIZE_MB")
    closed_loop(machine, "CD418", "XLA_PYTHON_CLIENT_MEM_FRACTON")


def test_a_jax_boolean_row_is_judged_where_jax_is_not_installed_as_a_warning(machine: Machine,
                                                                              tmp_path: Path) -> None:
    gpu_machine(machine, tmp_path, gpus=1)
    machine.env["JAX_ENABLE_X64"] = "maybe"
    warned = finding(check(machine), "CD414")
    assert "not installed" in warned["detail"] and "raises ValueError ('invalid truth value ...') when it is imported" in warned["detail"]


# --- PyTorch: the keys its allocator parser knows, asked of its own library ----------------------------------------

def c10_with(site: Path, *keys: str) -> None:
    """torch/lib/libc10_cuda.so of this torch: a library holding KEYS as its allocator parser's strings."""
    library = compile_library("fake_c10.c", "libc10_cuda.so", {"KEYS": ",".join(f'"{key}"' for key in keys)})
    shutil.copy(library, site / "torch" / "lib" / "libc10_cuda.so")


def test_allocator_keys_the_installed_torchs_library_names_are_taken_beside_the_datas(machine: Machine,
                                                                                      tmp_path: Path) -> None:
    """A key the data does not list but this torch's library names is taken (a newer torch); one neither names is
    refused, as torch's parser refuses every key it does not compare with; one only the data lists is still taken
    (a compiler may build a short literal from immediates, leaving no string to find)."""
    gpu_machine(machine, tmp_path, gpus=1)
    site = python_env(machine, tmp_path)
    install_torch(site)
    c10_with(site, "backend", "max_split_size_mb", "expandable_segments", "roundup_bypass_threshold_mb")
    machine.env["PYTORCH_CUDA_ALLOC_CONF"] = ("roundup_bypass_threshold_mb:64,max_split_size_mb:256,"
                                              "per_process_memory_fraction:0.5,max_split_mb:128")
    report = check(machine)
    refused = finding(report, "CD411")
    assert refused["evidence"] == "rule" and refused["severity"] == "error"
    assert "Unrecognized key 'max_split_mb' in CUDA allocator config (the installed torch's c10 libraries do not " \
           "name it either)" in refused["detail"]
    assert "Unrecognized key 'roundup_bypass_threshold_mb'" not in refused["detail"]
    assert "Unrecognized key 'per_process_memory_fraction'" not in refused["detail"]
    answer = report["process"]["setting_answers"]["PYTORCH_CUDA_ALLOC_CONF"]
    assert answer["kind"] == "alloc_conf" and answer["files"] == [str(site / "torch" / "lib" / "libc10_cuda.so")]
    assert sorted(answer["values"]) == ["max_split_size_mb", "roundup_bypass_threshold_mb"]
    lines = plan_lines(machine)
    assert ("export PYTORCH_CUDA_ALLOC_CONF=roundup_bypass_threshold_mb:64,max_split_size_mb:256,"
            "per_process_memory_fraction:0.5") in lines
    assert "CD411" not in codes(check_after(machine, lines))


# --- --deep's bisection: its variables are the data's ---------------------------------------------------------------

def test_the_bisection_unsets_the_variables_the_data_knows_and_no_others() -> None:
    from cudnn_doctor.doctor.bisect import variants

    env = {"CUDA_VISIBLE_DEVICES": "0", "CUDA_HOME": "/usr/local/cuda", "CUDNN_DOCTOR_PROBE_TIMEOUT": "9",
           "TF_CLI_CONFIG_FILE": "/root/.terraformrc", "JAX_PLATFORM": "cpu", "NCCL_P2P_LEVEL": "NVL",
           "CUBLAS_WORKSPACE_CONFIG": ":16:8", "EDITOR": "vi", "TORCH_FUTURE_SWITCH": "1",
           # the labels of NVIDIA's container images: read by nothing at run time
           "CUDA_VERSION": "13.0.1", "NCCL_VERSION": "2.27.7", "PYTORCH_VERSION": "2.11.0", "CUDNN_VERSION": "9.19"}
    tried = [v.variable for v in variants(env) if v.kind == "variable"]
    assert tried == ["CUBLAS_WORKSPACE_CONFIG", "JAX_PLATFORM", "NCCL_P2P_LEVEL", "TORCH_FUTURE_SWITCH"]


# --- the data is the one list of names ----------------------------------------------------------------------------

def _data_names() -> tuple[set[str], set[str]]:
    return set(rows()), {family["prefix"] for family in families()}


def test_no_second_list_of_variable_names_in_the_package() -> None:
    """No collection literal, and no regular expression, in cudnn_doctor/ names two or more of the variables (or
    prefixes) the data knows: code that needs a variable's name asks knowledge.environment, or names one alone."""
    names, prefixes = _data_names()
    offenders = []
    for path in sorted((ROOT / "cudnn_doctor").rglob("*.py")):
        tree = syntax_tree(path)
        for node in ast.walk(tree):
            strings: list[str] = []
            if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
                strings = [e.value for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
            elif isinstance(node, ast.Dict) and None not in node.keys:  # {**env, NAME: value}: a child's
                # environment sets values, it lists nothing to judge
                strings = [k.value for k in node.keys if isinstance(k, ast.Constant) and isinstance(k.value, str)]
            elif isinstance(node, ast.Constant) and isinstance(node.value, str) and "|" in node.value:
                strings = re.split(r"[|()^]", node.value)
            named = {s for s in strings if s in names or s in prefixes}
            if len(named) >= 2:
                offenders.append(f"{path.relative_to(ROOT)}:{node.lineno}: {sorted(named)}")
    assert not offenders, "variable names listed in code (keep them in compat/):\n" + "\n".join(offenders)


def test_every_family_and_row_is_sourced_and_no_row_is_shadowed_by_another_table() -> None:
    process_env = {row["variable"] for row in __import__("cudnn_doctor.knowledge.data", fromlist=["load"]).load(
        "process_env")["setting"]}
    nccl = {row["variable"] for row in __import__("cudnn_doctor.knowledge.data", fromlist=["load"]).load(
        "multi_gpu")["nccl_setting"]}
    assert not process_env & nccl
    assert all(row["source"] for row in rows().values()) and all(f["source"] for f in families())


# --- NCCL: its other grammars, judged with every setting's, in NCCL's own classes ----------------------------------

@pytest.mark.parametrize(("variable", "value", "code", "words"), [
    ("NCCL_SOCKET_NTHREADS", "32", "CD176", "32 is above 16"),  # integer, range
    ("NCCL_PROTO", "LL,Fast", "CD176", "'Fast' is not one of LL, LL128, Simple to NCCL's parseList"),  # names (r19)
    ("NCCL_NTHREADS", "100", "CD176", "'100' is read as 100 by NCCL's strtoll(value, NULL, 0), not one of 64, 128, "
                                      "256, 512"),  # enum, read by NCCL's strtoll (r19)
    ("NCCL_DEBUG_FILE", "file/nccl.%h.%p", "CD417", "NCCL, which writes its NCCL_DEBUG output there"),  # path
    ("NCCL_IB_DISABLE", "1", "CD181", "talks over IP sockets between nodes"),  # flag, slow
])
def test_nccls_other_grammars(machine: Machine, tmp_path: Path, variable: str, value: str, code: str,
                               words: str) -> None:
    gpu_machine(machine, tmp_path, gpus=2)
    (tmp_path / "file").write_text("a file, not a folder\n")
    machine.env[variable] = str(tmp_path / value) if code == "CD417" else value
    report = check(machine)
    [made] = settings_findings(report, variable)
    assert made["code"] == code and words in made["detail"], made
    if code != "CD181":  # what only changes how GPUs talk is said, not treated
        closed_loop(machine, code, variable)


def test_every_nccl_variable_of_the_data_is_a_name_the_real_nccl_reads() -> None:
    """Each [[nccl_setting]] row names a variable the real NCCL 2.32 holds as a string (NCCL_PARAM's literals); a
    misspelt one it does not. Its read-only data is searched, not its GPU code: a few milliseconds."""
    from cudnn_doctor.elf import ElfError, strings_held

    library = str(real_nccl())
    names = tuple(name for name, row in rows().items() if row["framework"] == "nccl")
    assert len(names) > 30 and strings_held(library, names) == set(names)
    assert strings_held(library, ("NCCL_SOCKET_IFNAMES", "NCCL_P2P_LEVEL")) == {"NCCL_P2P_LEVEL"}
    assert strings_held(library, ("P2P_LEVEL", "SOCKET_IFNAME")) == set()  # the tail of a longer name is not one
    with pytest.raises(ElfError):
        strings_held(str(ROOT / "README.md"), names)


def test_an_nccl_variable_the_installed_nccl_does_not_read_is_a_warning(machine: Machine, tmp_path: Path) -> None:
    gpu_machine(machine, tmp_path, gpus=2)
    site = python_env(machine, tmp_path)
    install_torch(site)
    (site / "nvidia" / "nccl" / "lib").mkdir(parents=True)
    (site / "nvidia" / "nccl" / "lib" / "libnccl.so.2").symlink_to(real_nccl())
    machine.env["NCCL_SOCKET_IFNAMES"] = "eth0"  # NCCL_SOCKET_IFNAME, misspelt: NCCL never reads it
    machine.env["NCCL_PROXY_CPUSET"] = "0-3"  # one the data has no row for, and NCCL reads (ncclGetEnv, a CPU set)
    machine.env["NCCL_ASYNC_ERROR_HANDLING"] = "1"  # PyTorch's older name of its own setting: NCCL never reads it
    report = check(machine)
    warned = finding(report, "CD418")
    assert warned["subject"] == "NCCL_SOCKET_IFNAMES" and "NCCL reads no variable of this name" in warned["detail"]
    assert report["process"]["setting_answers"]["NCCL_PROXY_CPUSET"]["kind"] == "string"
    assert not settings_findings(report, "NCCL_PROXY_CPUSET") + settings_findings(
        report, "NCCL_ASYNC_ERROR_HANDLING")
    closed_loop(machine, "CD418", "NCCL_SOCKET_IFNAMES")


def test_a_variable_cuda_reads_at_cuinit_has_cuinit_asked(machine: Machine, tmp_path: Path) -> None:
    """CUDA_INJECTION64_PATH (a profiler's library, loaded by the driver at cuInit) set: cuInit itself is asked in a
    child with it, which here starts (the fake driver answers CUDA_SUCCESS): the path is a warning, no error."""
    gpu_machine(machine, tmp_path, gpus=1)
    machine.env["CUDA_INJECTION64_PATH"] = str(tmp_path / "nsys" / "libToolsInjection64.so")
    report = check(machine)
    assert "CUDA_INJECTION64_PATH is set, and CUDA reads it at cuInit" in report["process"]["asked_because"]
    assert report["process"]["cuinit"] == 0
    assert [f["code"] for f in settings_findings(report, "CUDA_INJECTION64_PATH")] == ["CD417"]
    del machine.env["CUDA_INJECTION64_PATH"]
    assert check(machine)["process"]["cuinit"] is None  # nothing else here to ask it for


def test_cuda_device_order_outside_its_two_values_has_cuinit_asked(machine: Machine, tmp_path: Path) -> None:
    """CUDA_DEVICE_ORDER=PCI_BUS (not one of FASTEST_FIRST, PCI_BUS_ID): on an H100 torch then saw no GPU and JAX ran
    on the CPU (round fourteen's GPU set), while plain check only warned from the row: cuInit itself is asked, in a
    child with it. PCI_BUS_ID, set in many shells, costs no cuInit."""
    gpu_machine(machine, tmp_path, gpus=1)
    machine.env["CUDA_DEVICE_ORDER"] = "PCI_BUS"
    report = check(machine)
    assert "CUDA_DEVICE_ORDER is set, and CUDA reads it at cuInit" in report["process"]["asked_because"]
    assert report["process"]["cuinit"] == 0  # the fake driver starts; the real one's answer is what check reports
    [made] = settings_findings(report, "CUDA_DEVICE_ORDER")  # the row: cuInit answered 101 on an H100, driver 580
    # CUDA's own setting: its class is CD416 (A CUDA setting breaks the frameworks' GPU work), as --deep's cure says
    assert made["code"] == "CD416" and made["severity"] == "error" and made["evidence"] == "rule", made
    lines = plan_lines(machine)  # the value it was written for, kept (CUDA_VISIBLE_DEVICES' indices follow it), not
    assert "export CUDA_DEVICE_ORDER=PCI_BUS_ID" in lines, lines  # the default; sourced, the finding is gone
    assert not settings_findings(check_after(machine, lines), "CUDA_DEVICE_ORDER")
    machine.env["CUDA_DEVICE_ORDER"] = "PCI_BUS_ID"
    assert check(machine)["process"]["cuinit"] is None



def test_a_context_refused_with_and_without_the_variable_blames_no_variable(machine: Machine, tmp_path: Path) -> None:
    """The first context refused whatever the environment (the gcc-built driver answers CUDA_ERROR_OUT_OF_MEMORY: a GPU
    another process filled): made again without the unknown CUDA variable, it is refused as well, so the variable is
    not the cause and no CD416 names it (the memory and busy-GPU rules speak of the GPU)."""
    gpu_machine(machine, tmp_path, gpus=1, context_status=2)
    machine.env["CUDA_FAKE_CONTEXT_LIMIT"] = "50"  # a variable no row knows, which this driver takes
    report = check(machine)
    assert report["process"]["context"].startswith("cuDevicePrimaryCtxRetain: CUDA_ERROR_OUT_OF_MEMORY"), report["process"]
    assert report["process"]["context_without"].startswith("cuDevicePrimaryCtxRetain"), report["process"]
    assert "CD416" not in codes(report)

def test_a_user_triggered_core_dump_has_a_context_made(machine: Machine, tmp_path: Path) -> None:
    """CUDA_ENABLE_USER_TRIGGERED_COREDUMP=1: the driver makes its pipe as a program starts (round eighteen's published
    GPU set: with the pipe's folder missing, torch's first CUDA call and JAX's backend failed on an H100), so plain
    check makes a first context with it; where CUDA makes it (here the gcc-built driver), nothing is said. Off: no
    context is made."""
    gpu_machine(machine, tmp_path, gpus=1)
    machine.env.update({"CUDA_ENABLE_USER_TRIGGERED_COREDUMP": "1", "CUDA_COREDUMP_PIPE": str(tmp_path / "pipe.%p")})
    report = check(machine)
    assert report["process"]["context"] == "ok", report["process"]
    assert report["process"]["context_variables"] == ["CUDA_ENABLE_USER_TRIGGERED_COREDUMP"]
    assert "CD416" not in codes(report)
    machine.env["CUDA_ENABLE_USER_TRIGGERED_COREDUMP"] = "0"
    assert (check(machine)["process"] or {}).get("context") is None

def test_a_refused_context_is_made_again_without_every_cuda_setting_and_each_alone(machine: Machine,
                                                                                  tmp_path: Path) -> None:
    """CUDA_ENABLE_USER_TRIGGERED_COREDUMP=1 (the switch that has a context made) with CUDA_COREDUMP_PIPE, a path its
    row vouches for, in a folder that does not exist (round eighteen's published GPU set: torch and JAX failed; made
    again without the switch alone, driver 580 refused the context still and CD416 went unsaid, where the round
    before had named it). The context is made again without every CUDA setting but those choosing the GPU, and
    without each alone, side by side: the pipe is the one whose absence alone makes it (the gcc-built driver refuses
    a pipe in a missing folder whatever the switch), named, seen; the plan's line unsets it and after it the context
    is made. A GPU kept by CUDA_VISIBLE_DEVICES stays in every try."""
    gpu_machine(machine, tmp_path, gpus=1)
    machine.env.update({"CUDA_ENABLE_USER_TRIGGERED_COREDUMP": "1", "CUDA_VISIBLE_DEVICES": "0",
                        "CUDA_COREDUMP_PIPE": str(tmp_path / "missing" / "corepipe.%h.%p")})
    report = check(machine)
    process = report["process"]
    assert process["context"].startswith("cuDevicePrimaryCtxRetain: CUDA_ERROR_OPERATING_SYSTEM"), process
    assert process["context_variables"] == ["CUDA_ENABLE_USER_TRIGGERED_COREDUMP"]
    assert process["context_without"] == "ok", process
    assert process["context_without_unset"] == ["CUDA_ENABLE_USER_TRIGGERED_COREDUMP", "CUDA_COREDUMP_PIPE"], process
    assert process["context_blamed"] == ["CUDA_COREDUMP_PIPE"], process
    [made] = [f for f in report["findings"] if f["code"] == "CD416"]
    assert made["severity"] == "error" and made["evidence"] == "seen" and made["subject"] == "CUDA_COREDUMP_PIPE", made
    assert "CUDA_ERROR_OPERATING_SYSTEM" in made["proof"], made
    lines = plan_lines(machine)
    assert "unset CUDA_COREDUMP_PIPE" in lines, lines
    assert "CD416" not in codes(check_after(machine, lines))


def test_the_persisting_l2_percentage_above_100_is_a_cuda_setting_that_breaks(machine: Machine, tmp_path: Path) -> None:
    """CUDA_DEVICE_DEFAULT_PERSISTING_L2_CACHE_PERCENTAGE_LIMIT=250 (round seventeen's published GPU set: torch's first
    CUDA call failed and JAX found no CUDA device on an H100; 50 ran both; plain check was silent): an error of CUDA's
    class (CD416) on the row's proof, and the plan unsets it; a percentage in range is no finding."""
    gpu_machine(machine, tmp_path, gpus=1)
    variable = "CUDA_DEVICE_DEFAULT_PERSISTING_L2_CACHE_PERCENTAGE_LIMIT"
    machine.env[variable] = "250"
    [made] = settings_findings(check(machine), variable)
    assert made["code"] == "CD416" and made["severity"] == "error" and made["evidence"] == "rule", made
    assert "s17-cuda-l2-persisting-250" in made["proof"] and "250" in made["detail"], made
    lines = plan_lines(machine)
    assert f"unset {variable}" in lines, lines
    assert not settings_findings(check_after(machine, lines), variable)
    machine.env[variable] = "50"
    assert not settings_findings(check(machine), variable)


def test_a_cuda_variable_no_row_knows_has_a_context_made_and_its_refusal_seen(machine: Machine, tmp_path: Path) -> None:
    """A CUDA variable no row of the data knows (the gcc-built driver reads CUDA_FAKE_CONTEXT_LIMIT and refuses every
    context above 100, as driver 580 refused every context with the persisting-L2 percentage at 250 before the data
    had its row): plain check makes the first context a program's first GPU call makes, in a child with this
    environment, and CUDA's own refusal is the evidence (CD416, seen); the plan unsets it, and after it the context
    is made. A value the driver takes: the context is made, nothing said; no such variable: no context is made."""
    gpu_machine(machine, tmp_path, gpus=1)
    assert check(machine)["process"] is None or check(machine)["process"]["context"] is None
    machine.env["CUDA_FAKE_CONTEXT_LIMIT"] = "250"
    report = check(machine)
    assert report["process"]["context"].startswith("cuDevicePrimaryCtxRetain: CUDA_ERROR_INVALID_VALUE"), report["process"]
    assert report["process"]["context_variables"] == ["CUDA_FAKE_CONTEXT_LIMIT"]
    assert report["process"]["context_without"] == "ok", report["process"]  # made again without it
    [made] = [f for f in report["findings"] if f["code"] == "CD416"]
    assert made["severity"] == "error" and made["evidence"] == "seen" and made["subject"] == "CUDA_FAKE_CONTEXT_LIMIT", made
    assert "CUDA_ERROR_INVALID_VALUE" in made["proof"], made
    lines = plan_lines(machine)
    assert "unset CUDA_FAKE_CONTEXT_LIMIT" in lines, lines
    after = check_after(machine, lines)
    assert "CD416" not in codes(after)
    machine.env["CUDA_FAKE_CONTEXT_LIMIT"] = "50"
    report = check(machine)
    assert report["process"]["context"] == "ok" and "CD416" not in codes(report), report["process"]

@pytest.mark.integration
def test_under_deep_a_settings_warning_says_which_frameworks_ran_with_it(machine: Machine, tmp_path: Path) -> None:
    """What --deep was to prove, proven: torch (its GPU steps stood in for, its cuDNN the real 9.19 wheel's) ran in a
    child with CUDA_MODULE_LOADING=lazy set; the warning stays one, and says so. Plain check says only that --deep
    proves it."""
    from tests.test_loading import TORCH_NOT_USING_CUDNN, torch_with_real_cudnn

    site = torch_with_real_cudnn(machine, tmp_path)
    (site / "torch" / "__init__.py").write_text(TORCH_NOT_USING_CUDNN)
    machine.env["CUDA_MODULE_LOADING"] = "lazy"
    plain = finding(check(machine), "CD414")
    assert "check --deep` runs the frameworks here with it" in plain["detail"] and "under --deep" not in (plain["proof"] or "")
    deep = finding(machine.check_json("--deep"), "CD414")
    assert deep["severity"] == "warning" and "under --deep PyTorch ran its first GPU steps in a child with it set" \
        in deep["proof"], deep


@pytest.mark.integration
def test_under_deep_a_cuda_settings_error_is_outweighed_where_every_framework_ran(machine: Machine,
                                                                                  tmp_path: Path) -> None:
    """CUDA_FORCE_PTX_JIT=1 is an error of CUDA's class by its row (torch's and JAX's first convolutions failed with it
    on an H100); where --deep ran every framework's first GPU steps with it set (here torch's, stood in for), the
    frameworks contradict it: a warning that says so. Plain check keeps the error."""
    from tests.test_loading import TORCH_NOT_USING_CUDNN, torch_with_real_cudnn

    site = torch_with_real_cudnn(machine, tmp_path)
    (site / "torch" / "__init__.py").write_text(TORCH_NOT_USING_CUDNN)
    machine.env["CUDA_FORCE_PTX_JIT"] = "1"
    plain = finding(check(machine), "CD416")
    assert plain["severity"] == "error", plain
    deep = finding(machine.check_json("--deep"), "CD416")
    assert deep["severity"] == "warning" and "under --deep PyTorch ran its first GPU steps in a child with it set" \
        in deep["proof"], deep

def test_a_name_a_letter_from_a_documented_one_is_a_warning_naming_it(machine: Machine, tmp_path: Path) -> None:
    """CUDA_VISBLE_DEVICES is read by nobody: every GPU stays visible. A name of the prefix far from any documented
    one (another program's) is left alone."""
    gpu_machine(machine, tmp_path, gpus=2)
    machine.env["CUDA_VISBLE_DEVICES"] = "1"
    machine.env["CUDA_DEVICE_ID"] = "0"
    report = check(machine)
    [warned] = settings_findings(report, "CUDA_VISBLE_DEVICES")
    assert warned["code"] == "CD418" and "a letter or two from CUDA_VISIBLE_DEVICES" in warned["detail"], warned
    assert not settings_findings(report, "CUDA_DEVICE_ID")
    closed_loop(machine, "CD418", "CUDA_VISBLE_DEVICES")


@pytest.mark.subprocess  # the doctor's own Python start runs the hook: the process is the point
def test_a_setting_a_start_up_hook_sets_inside_python_is_treated_where_it_is_set(machine: Machine,
                                                                                 tmp_path: Path) -> None:
    """A tools folder on PYTHONPATH whose sitecustomize.py sets CUDNN_LOGLEVEL_DBG inside every Python (the shell
    sets nothing): check sees it set there (os.environ against the process's starting environment), names the hook,
    and the plan takes that folder out of PYTHONPATH, not `unset` (round fourteen's GPU set: `unset XLA_FLAGS` and
    `unset JAX_PLATFORMS` were tried and did not cure, a sitecustomize set them again). Sourced in a real bash, the
    finding is gone."""
    gpu_machine(machine, tmp_path, gpus=1)
    tools = tmp_path / "tools"
    tools.mkdir()
    (tools / "sitecustomize.py").write_text('import os\nos.environ.setdefault("CUDNN_LOGLEVEL_DBG", "3")\n')
    machine.env["PYTHONPATH"] = f"{tools}:{machine.env['PYTHONPATH']}"
    report = check(machine)
    assert [f["code"] for f in settings_findings(report, "CUDNN_LOGLEVEL_DBG")] == ["CD412"]
    assert ["CUDNN_LOGLEVEL_DBG", "3", str(tools / "sitecustomize.py")] in report["process"]["set_in_python"]
    lines = plan_lines(machine)
    assert not any("unset CUDNN_LOGLEVEL_DBG" in line for line in lines), lines
    assert any("PYTHONPATH" in line for line in lines), lines
    after = check_after(machine, lines)
    assert not settings_findings(after, "CUDNN_LOGLEVEL_DBG"), after["findings"]
    machine.env["PYTHONPATH"] = machine.env["PYTHONPATH"].split(":", 1)[1]  # the shell's own value: its unset
    machine.env["CUDNN_LOGLEVEL_DBG"] = "3"
    assert check(machine)["process"]["set_in_python"] == []


def test_what_the_doctor_sets_in_its_own_environment_is_no_start_up_hook(monkeypatch: pytest.MonkeyPatch) -> None:
    """entry.py sets COLUMNS=80 in its own process for a terminal of 1-2 columns: not a variable a start-up hook set
    (set_in_python lists what every Python program here gets from a hook); a variable changed after the start that
    no row of the doctor's owns still is."""
    import cudnn_doctor
    from cudnn_doctor.probes.context import set_inside_python

    monkeypatch.setattr(cudnn_doctor, "COMMAND_PROCESS", True)
    monkeypatch.setenv("COLUMNS", "80-by-the-doctor")
    monkeypatch.setenv("XLA_FLAGS", "--set-by-a-hook")
    inside = set_inside_python()
    assert "COLUMNS" not in inside and inside.get("XLA_FLAGS") == "--set-by-a-hook"


@pytest.mark.parametrize(("value", "meant"), [
    ("PCI_BUS", "PCI_BUS_ID"), ("pci_bus_id", "PCI_BUS_ID"), ("fastest", "FASTEST_FIRST"), (" Pci_Bus_Id ", "PCI_BUS_ID"),
    ("PC", None), ("PCI_B", None), ("bogus", None), ("PCI_BUS_ID_X", None),
])
def test_an_enum_value_in_another_case_or_cut_short_is_cured_to_the_value_meant(value: str, meant: str | None) -> None:
    from cudnn_doctor.knowledge.environment import intended_value

    assert intended_value(rows()["CUDA_DEVICE_ORDER"], value) == meant


def test_no_enum_value_is_meant_where_two_fit() -> None:
    from cudnn_doctor.knowledge.environment import intended_value

    row = {"kind": "enum", "values": ["default", "Default", "no_cache", "no_cache_files"]}
    assert intended_value(row, "DEFAULT") is None and intended_value(row, "no") is None and \
        intended_value(row, "NO_CACHE") == "no_cache" and intended_value(row, "no_cache_f") is None
