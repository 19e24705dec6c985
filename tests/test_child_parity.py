"""The doctor's children see what the user's program sees (issue 45, round eighteen).

Every child starts from "/" (child.NEUTRAL_CWD). A variable whose reader resolves its value against the working
folder (LD_PRELOAD=lib/libcuda.so.1, TMPDIR=tmp, PYTHONPATH=src, XLA_FLAGS=--xla_dump_to=dump) named another file
in the child than in the program: the child then loaded, imported or wrote something else, and check, --deep and fix
were silent where the program failed. The judge here is a preloaded gcc library (tests/fakes/parity_report.c) whose
constructor writes, from inside each process, its command line, working folder, the values of the variables, its
limits, umask and the signals it holds ignored or blocked; and, for the framework's own import, the stand-in torch
writes what Python gave it (sys.path, the working folder, tempfile's folder). Each child of check --deep and of fix
(the probe children, the loading child, NVML's, the framework children, the all-reduce, the bisection's variants and
fix's verification) is compared with a program the shell starts in the same folder: each variable's paths resolved
against each one's own working folder must be the same files."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from cudnn_doctor import child as child_module
from cudnn_doctor import limits
from tests.conftest import Machine
from tests.fakes.build import BUILD_DIR, compile_library

pytestmark = pytest.mark.subprocess

# The variables this test sets to a relative path, each as a program's reader takes it (the test's own reading,
# not the doctor's table: a path list split at ':' (LD_LIBRARY_PATH at ';' too), an empty entry the working folder;
# LD_PRELOAD's entries with a '/'; XLA_FLAGS' --name=value; else one path)
RELATIVE = {
    "TMPDIR": "tmp",
    "TMP": "tmp",
    "CUDA_CACHE_PATH": "cache/nv",
    "XDG_CACHE_HOME": "cache",
    "TORCHINDUCTOR_CACHE_DIR": "cache/inductor",
    "TRITON_CACHE_DIR": "cache/triton",
    "JAX_COMPILATION_CACHE_DIR": "cache/jax",
    "NCCL_DEBUG_FILE": "nccl.%h.%p.log",
    "CUDNN_LOGDEST_DBG": "logs/cudnn.log",
    "XLA_FLAGS": "--xla_dump_to=dump --xla_gpu_cuda_data_dir=cuda_sdk_lib",
}
LISTS = ("LD_LIBRARY_PATH", "PATH", "PYTHONPATH")
# the variables that are no framework's setting: the loader's, the shell's, Python's (variables.py lists them); the
# others above are the data's settings (compat/process_env.toml kind = "path", "xla_flags"), which the command reads
# after NVML's early child has started (entry.main starts it before the imports: check's longest wait); NVML's
# initialisation reads none of them
NOT_SETTINGS = (*LISTS, "LD_PRELOAD", "XDG_CACHE_HOME")
NAMES = (*RELATIVE, *LISTS, "LD_PRELOAD", "PYTHONPYCACHEPREFIX")


def resolved(report: dict) -> dict[str, object]:
    """Each variable of REPORT's environment as the files its readers open from REPORT's working folder."""
    here = report["cwd"]

    def at(path: str) -> str:
        return os.path.normpath(os.path.join(here, path))

    out: dict[str, object] = {}
    for name, value in report["env"].items():
        if name in LISTS:
            out[name] = [at(entry) for entry in re.split("[:;]" if name == "LD_LIBRARY_PATH" else ":", value)]
        elif name == "LD_PRELOAD":
            out[name] = [at(entry) if "/" in entry else entry for entry in re.split("[: ]+", value) if entry]
        elif name == "XLA_FLAGS":
            out[name] = {flag: at(path) for flag, path in re.findall(r"--(\w+)=(\S+)", value)}
        else:
            out[name] = at(value)
    return out


KINDS = ("_deep_child.py", "_allreduce_child.py", "_python_child.py", "_probe_jobs", "_load_jobs", "cudnn_doctor")


def _kind(argv: list[str]) -> str:
    """Which child of the doctor's a command line is ("cudnn_doctor": the doctor itself)."""
    line = " ".join(argv)
    return next((kind for kind in KINDS if kind in line), os.path.basename(argv[0]) if argv else "?")


@pytest.fixture
def project(machine: Machine, tmp_path: Path) -> Path:
    """A machine with two GPUs and torch's stand-in in a venv (its first GPU steps run on the fake driver); a
    project folder holding the judge (lib/libparity.so, preloaded by that relative path) and the relative paths the
    variables name; those variables set as a user's shell would have them."""
    from tests.test_process_start import _venv_torch

    site = _venv_torch(machine, tmp_path)
    (site / "torch" / "__init__.py").write_text(PYTHON_REPORT + (site / "torch" / "__init__.py").read_text())
    folder = tmp_path / "project"
    for name in ("lib", "libs", "tmp", "src", "bin", "cache"):
        (folder / name).mkdir(parents=True)
    shutil.copy(compile_library("parity_report.c", "libparity.so"), folder / "lib" / "libparity.so")
    machine.env.update(RELATIVE)
    machine.env.update({"LD_PRELOAD": "lib/libparity.so", "PARITY_REPORT": str(tmp_path / "report.jsonl"),
                        "PARITY_PY": str(tmp_path / "python.jsonl"), "PARITY_NAMES": ",".join(NAMES)})
    machine.env["LD_LIBRARY_PATH"] += ":libs:"  # a relative folder, and an empty entry: the working folder
    machine.env["PATH"] += ":bin"
    machine.env["PYTHONPATH"] = "src:" + machine.env["PYTHONPATH"]
    return folder


# what torch's stand-in writes as it is imported: what Python gave the program that imports it
PYTHON_REPORT = '''
import json as _json, os as _os, sys as _sys, tempfile as _tempfile
with open(_os.environ["PARITY_PY"], "a") as _out:
    _out.write(_json.dumps({"cwd": _os.getcwd(), "tempdir": _tempfile.gettempdir(),
                            "path": [_os.path.abspath(p) for p in _sys.path if p not in ("", ".")],
                            "argv": _sys.argv[:1]}) + "\\n")
'''
SHELL = "umask 027; ulimit -S -n 1000; ulimit -S -s 16384; trap '' USR1; "  # the user's shell's own settings


def _in_shell(machine: Machine, folder: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    """ARGV started by bash in FOLDER after SHELL, as the user's program is."""
    return subprocess.run(["bash", "-c", SHELL + "exec " + shlex.join(argv)], env=machine.env, cwd=folder,
                          capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)


def _doctor(machine: Machine, folder: Path, *args: str) -> dict:
    done = _in_shell(machine, folder, sys.executable, "-m", "cudnn_doctor", *args)
    assert "Traceback" not in done.stderr, done.stderr
    return json.loads(done.stdout)  # type: ignore[no-any-return]


def _reports(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def _reference(machine: Machine, folder: Path, tmp_path: Path) -> dict:
    """What a program the shell starts in FOLDER was given (the judge's line of /bin/true)."""
    before = len(_reports(tmp_path / "report.jsonl"))
    _in_shell(machine, folder, "/bin/true")
    [line] = [r for r in _reports(tmp_path / "report.jsonl")[before:] if r["argv"] == ["/bin/true"]]
    return line


def _early(child: dict) -> bool:
    """Whether CHILD is NVML's, which check starts before it reads the data (NOT_SETTINGS)."""
    return _kind(child["argv"]) == "_probe_jobs" and "nvml" in child["argv"]


def _differences(child: dict, program: dict, variant: bool = False) -> list[str]:
    """What CHILD was given that PROGRAM was not: a variable that names other files, a limit, the umask, a signal
    ignored or blocked. VARIANT: a child of the bisection's, which leaves out a variable or some of its entries on
    purpose; none of what it keeps may name another file than the program's."""
    said = []
    mine, theirs = resolved(child), resolved(program)
    for name in theirs:
        if _early(child) and name not in NOT_SETTINGS:
            continue
        kept, whole = mine.get(name), theirs[name]
        if variant and (kept is None or (isinstance(kept, list) and all(entry in whole for entry in kept))):
            continue
        if kept != whole:
            said.append(f"{name}: {kept!r} where the program has {whole!r}")
    limits = child.get("limits", {})
    if variant:  # the bisection's trial of the limits: a soft limit raised up to its hard one, never lowered
        limits = {number: program["limits"][number] if number in program["limits"] and pair[1] ==
                  program["limits"][number][1] and (pair[0] == -1 or pair[0] >= program["limits"][number][0] != -1)
                  else pair for number, pair in limits.items()}
    said += [f"limits: {limits!r} where the program has {program['limits']!r}"] if limits != program["limits"] else []
    said += [f"{key}: {child.get(key)!r} where the program has {program[key]!r}"
             for key in ("Umask", "SigIgn", "SigBlk") if child.get(key) != program[key]]
    return said


# SigIgn compared whole, SIGINT's bit too: where the tests themselves started with it ignored (a background job of a
# shell without job control, `.ci/run &`), the program bash starts ignores it, and the doctor, which handles SIGINT
# itself (signals.py), starts its children with it ignored as well (child.signals_as_handed; its own test is
# tests/test_sigint_ignored_children.py)


def test_every_child_of_check_deep_resolves_each_variable_to_the_programs_files(machine: Machine, project: Path,
                                                                               tmp_path: Path) -> None:
    # a start-up setting (plain check asks the framework's Python too), relative: a folder kept between runs (the
    # package compiled once), named from the project
    cache = BUILD_DIR / "parity-pycache"
    cache.mkdir(parents=True, exist_ok=True)
    machine.env["PYTHONPYCACHEPREFIX"] = os.path.relpath(cache, project)
    _doctor(machine, project, "check", "--deep", "--json")
    children = [r for r in _reports(tmp_path / "report.jsonl") if _kind(r["argv"]) != "cudnn_doctor"]
    program = _reference(machine, project, tmp_path)
    kinds = {_kind(r["argv"]) for r in children}
    # NVML's and the libraries' probe children, the loading child, the framework's, the all-reduce's: each preloaded
    # the judge from its relative path (before round seventeen none but the program did), and each saw the same files
    assert {"_probe_jobs", "_load_jobs", "_python_child.py", "_deep_child.py", "_allreduce_child.py"} <= kinds, kinds
    assert any("nvml" in r["argv"] for r in children), [r["argv"] for r in children]
    for child in children:
        assert not _differences(child, program), (child["argv"][:6], _differences(child, program))
    # the doctor's own children are given its bytecode folder (PYTHONPYCACHEPREFIX, relative) as an option: the
    # program's folder, not one below /
    given = [(child["cwd"], word.split("=", 1)[1]) for child in children for word in child["argv"]
             if word.startswith("-Xpycache_prefix=")]
    assert given and {os.path.normpath(os.path.join(cwd, folder)) for cwd, folder in given} == {str(cache)}, given


def test_the_bisections_variants_and_fixs_verification_see_the_programs_files(machine: Machine, project: Path,
                                                                              tmp_path: Path) -> None:
    machine.env["TORCH_BREAK"] = "1"  # torch's stand-in fails while it is set: fix searches for the cure and proves it
    plan = _doctor(machine, project, "fix", "--json")
    [step] = [a for a in plan["actions"] if a["kind"] == "env" and "TORCH_BREAK" in str(a["env"])]
    assert step["env"]["bash"] == ["unset TORCH_BREAK"] and step["verified"].startswith("verified here"), step
    program = _reference(machine, project, tmp_path)
    framework_children = [r for r in _reports(tmp_path / "report.jsonl") if _kind(r["argv"]) == "_deep_child.py"]
    assert len(framework_children) >= 3  # the failing run, a variant without the variable, the verification
    for child in framework_children:
        assert not _differences(child, program, variant=True), _differences(child, program, variant=True)


def test_the_frameworks_import_gets_what_python_gives_the_program(machine: Machine, project: Path,
                                                                  tmp_path: Path) -> None:
    """In the framework's own import (torch's stand-in writes it): the working folder, tempfile's folder
    (TMPDIR=tmp) and sys.path (PYTHONPATH=src) are the program's; the working folder itself is off sys.path in the
    child, as it holds nothing the framework imports (the doctor's own imports must not be shadowed by it)."""
    _doctor(machine, project, "check", "--deep", "--json")
    imports = _reports(tmp_path / "python.jsonl")
    _in_shell(machine, project, str(tmp_path / "venv" / "bin" / "python3"), "-c", "import torch")
    program = _reports(tmp_path / "python.jsonl")[-1]
    # the framework child, and each rank of the all-reduce (torch.distributed imported as torchrun's ranks do)
    children = [r for r in imports if r["argv"][0].endswith(("_deep_child.py", "_allreduce_child.py"))]
    assert sorted(os.path.basename(r["argv"][0]) for r in children) == \
        ["_allreduce_child.py", "_allreduce_child.py", "_deep_child.py"], imports
    for child in children:
        assert (child["cwd"], child["tempdir"]) == (program["cwd"], program["tempdir"]) == \
            (str(project), str(project / "tmp")), (child, program)
        assert child["path"][:3] == [p for p in program["path"] if p != str(project)][:3], (child, program["path"])
        assert child["path"][0] == str(project / "src")


def test_a_relative_pythonpath_to_a_broken_copy_of_the_framework_is_seen_by_deep_and_cured_by_fix(
        machine: Machine, project: Path, tmp_path: Path) -> None:
    """PYTHONPATH=src, and src/torch is a checkout that was never built: `python -c 'import torch'` in the project
    fails. The framework's child started from "/" put /src on sys.path and imported the installed torch: --deep said
    torch ran, fix verified nothing. Now --deep sees the import fail (an error, seen) and fix's line is verified."""
    (project / "src" / "torch").mkdir()
    (project / "src" / "torch" / "__init__.py").write_text(
        "raise ImportError('a torch checkout that was never built')\n")
    python = str(tmp_path / "venv" / "bin" / "python3")
    program = _in_shell(machine, project, python, "-c", "import torch")
    assert "never built" in program.stderr
    deep = _doctor(machine, project, "check", "--deep", "--json")
    seen = [f for f in deep["findings"] if f["code"] == "CD419" and f["severity"] == "error"]
    assert seen and all(f["evidence"] == "seen" for f in seen), deep["findings"]
    assert deep["summary"]["exit_code"] == 1
    plan = _doctor(machine, project, "fix", "--json")
    [step] = [a for a in plan["actions"] if a["kind"] == "env"]
    assert step["verified"].startswith("verified here"), step
    cured = _in_shell(machine, project, "bash", "-c", "\n".join(step["env"]["bash"]) + f"\nexec {python} -c 'import torch'")
    assert cured.returncode == 0, cured.stderr


# --- the one reading of the variables (variables.child_environment) -----------------------------------------------

@pytest.fixture
def data_paths() -> None:
    """The data's path settings given to the reading, as every command's guard gives them (runner.guarded)."""
    from cudnn_doctor.knowledge.environment import working_folder_paths
    from cudnn_doctor.variables import read_paths_from

    read_paths_from(working_folder_paths)


def test_the_datas_path_settings_are_read_and_no_other_setting(data_paths: None) -> None:
    """Which settings are paths is the data's (compat/process_env.toml kind = "path", "xla_flags"): each is read, and
    a setting of another kind (a number, a list of words) never is."""
    from cudnn_doctor.knowledge.environment import rows
    from cudnn_doctor.variables import working_folder_kinds

    kinds = working_folder_kinds()
    for name in ("TMPDIR", "TMP", "CUDA_CACHE_PATH", "TRITON_CACHE_DIR", "TORCHINDUCTOR_CACHE_DIR", "NCCL_TOPO_FILE",
                 "JAX_COMPILATION_CACHE_DIR", "PYTHONPYCACHEPREFIX", "CUDNN_LOGDEST_DBG"):
        assert kinds[name] == "path", name
    assert kinds["XLA_FLAGS"] == "xla flags" and kinds["LD_LIBRARY_PATH"] == "loader list"
    assert not [name for name, row in rows().items() if name in kinds and row.get("kind") not in ("path", "xla_flags")]

def test_child_environment_makes_each_kind_of_relative_value_absolute_and_leaves_the_rest(data_paths: None) -> None:
    from cudnn_doctor.variables import child_environment

    env = {
        "LD_LIBRARY_PATH": "libs;other::$ORIGIN/../lib:/abs",
        "LD_PRELOAD": "lib/libcuda.so.1 libnccl.so.2:/abs/libx.so",
        "PATH": "bin::/usr/bin",
        "PYTHONPATH": "src:",
        "TMPDIR": "tmp",
        "TRITON_CACHE_DIR": "~/triton",
        "CUDA_CACHE_PATH": "/abs/nv",
        "CUDNN_LOGDEST_DBG": "stderr",
        "CUBLASLT_LOG_FILE": "logs/lt.%i",
        "NCCL_DEBUG_FILE": "",
        "XLA_FLAGS": "--xla_gpu_autotune_level=0 --xla_dump_to=dump --xla_dump_to=- "
                     "--xla_gpu_cuda_data_dir='my cuda'",
        "HOME": "home",
        "NCCL_NET": "Socket",  # not a path
    }
    child = child_environment(env, "/w")
    assert child["LD_LIBRARY_PATH"] == "/w/libs:/w/other:/w:$ORIGIN/../lib:/abs"
    assert child["LD_PRELOAD"] == "/w/lib/libcuda.so.1 libnccl.so.2 /abs/libx.so"
    assert child["PATH"] == "/w/bin:/w:/usr/bin"
    assert child["PYTHONPATH"] == "/w/src:/w"
    assert (child["TMPDIR"], child["TRITON_CACHE_DIR"], child["CUDA_CACHE_PATH"]) == ("/w/tmp", "~/triton", "/abs/nv")
    assert (child["CUDNN_LOGDEST_DBG"], child["CUBLASLT_LOG_FILE"], child["NCCL_DEBUG_FILE"]) == \
        ("stderr", "/w/logs/lt.%i", "")
    assert child["XLA_FLAGS"] == ("--xla_gpu_autotune_level=0 --xla_dump_to=/w/dump --xla_dump_to=- "
                                  '--xla_gpu_cuda_data_dir="/w/my cuda"')
    assert (child["HOME"], child["NCCL_NET"]) == ("/w/home", "Socket")
    assert child_environment({"XLA_FLAGS": " flags.txt"}, "/w")["XLA_FLAGS"] == "/w/flags.txt"  # a file of flags


def test_xla_reads_the_rewritten_flags_as_the_program_had_them(data_paths: None) -> None:
    """The rewritten XLA_FLAGS split as XLA splits them (variables.xla_flag_values, XLA's own parser's reading): the
    same flags, each path now absolute, a value with a space still one value."""
    from cudnn_doctor.variables import child_environment, xla_flag_values

    written = "--xla_dump_to=dump  --xla_gpu_cuda_data_dir='my cuda' --xla_gpu_autotune_level=2"
    flags = xla_flag_values(child_environment({"XLA_FLAGS": written}, "/w")["XLA_FLAGS"])
    assert [(name, value) for name, _written, value in flags] == [
        ("xla_dump_to", "/w/dump"), ("xla_gpu_cuda_data_dir", "/w/my cuda"), ("xla_gpu_autotune_level", "2")]


@pytest.mark.integration
def test_a_sitecustomize_in_a_relative_pythonpath_folder_that_loads_another_cudnn_is_seen(machine: Machine,
                                                                                        tmp_path: Path) -> None:
    """PYTHONPATH=site-policy (relative: a project's own folder of hooks), whose sitecustomize.py loads a cuDNN 9.14
    with ctypes before torch (the real cuDNN 9.19 wheel) loads its own: torch refuses it at its first convolution.
    The framework's Python asked by plain check, started from "/", read /site-policy and ran no hook: check was clean
    while the program failed. Now the hook runs in that child as in the program: an error, seen, and fix's line."""
    from tests.fakes.build import fake_cudnn
    from tests.test_python_hooks import hook_folder, torch_with_its_python

    torch_with_its_python(machine, tmp_path)
    system = fake_cudnn(tmp_path / "system", version=91400)
    hook_folder(tmp_path, "# make cuDNN available to every program\nimport ctypes\n"
                          f"ctypes.CDLL({str(system)!r}, mode=ctypes.RTLD_GLOBAL)\n")
    machine.env["PYTHONPATH"] = f"site-policy:{machine.env['PYTHONPATH']}"  # relative to the working folder
    program = subprocess.run([str(tmp_path / "venv" / "bin" / "python3"), "-c",
                              "import torch; torch.nn.functional.conv2d()"],
                             env=machine.env, cwd=machine.cwd, capture_output=True, text=True, timeout=60)
    assert "cuDNN version incompatibility" in program.stderr, program.stderr[-500:]  # the program fails
    report = machine.check_json()
    said = [f for f in report["findings"] if f["code"] == "CD317"]
    assert said and said[0]["severity"] == "error" and said[0]["evidence"] == "seen", (program.stderr[-300:], said)
    plan = machine.run("fix", "--json").json
    [step] = [a for a in plan["actions"] if a["kind"] == "env"]
    assert step["verified"].startswith("verified here") and "site-policy" in step["why"], step


def test_every_child_the_runner_starts_gets_the_programs_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                               data_paths: None) -> None:
    """The runner's own children, whoever asks for them (a helper as `ldconfig -p` or `ptxas --version`, install's
    streaming decompressor): each resolves the variables to the files a program started in the working folder does."""
    from cudnn_doctor.child import StreamingChild, deadline_in, run_child

    project = tmp_path / "project"
    (project / "lib").mkdir(parents=True)
    shutil.copy(compile_library("parity_report.c", "libparity.so"), project / "lib" / "libparity.so")
    report = tmp_path / "report.jsonl"
    env = {"PATH": "/usr/bin:/bin:bin", "LD_PRELOAD": "lib/libparity.so", "PARITY_REPORT": str(report),
           "PARITY_NAMES": ",".join(NAMES), **RELATIVE}
    monkeypatch.chdir(project)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    answer = run_child(["/bin/true"], env, deadline_in(30), what="a helper")
    assert answer.exit_code == 0, answer.error
    with open("/dev/null", "rb") as nothing:
        streaming = StreamingChild(["/bin/cat"], nothing.fileno())
        assert streaming.process.stdout is not None
        assert streaming.process.stdout.read() == b""  # to its end: cat has run (its constructor first) and exited
        streaming.close()
    subprocess.run(["/bin/true"], env=env, cwd=project, check=True)  # the program, started here
    *children, program = _reports(report)
    assert len(children) == 2 and program["cwd"] == str(project)
    for child in children:
        assert child["cwd"] == "/" and not _differences(child, program), _differences(child, program)


@pytest.mark.integration
def test_a_cut_copy_in_a_relative_pythonpath_nvidia_folder_is_seen_in_the_loading_child(machine: Machine,
                                                                                       tmp_path: Path) -> None:
    """Round seventeen's class (k23) with the folder named relatively: PYTHONPATH=half-copied, holding
    nvidia/cu13/lib/libcublasLt.so.13 cut short; torch's own code globs sys.path, PYTHONPATH first, and dies opening
    that copy (SIGBUS). The loading child runs torch's code from "/", and read PYTHONPATH there as /half-copied: the
    copy was never opened and plain check said only a warning. Now CD409, seen, and the plan takes the folder out."""
    from tests.test_evidence_round17 import cut_in_half, errors_of, torch_cu13, venv_python_keeps_pythonpath
    from tests.test_process_env import check_after, plan_lines

    site = torch_cu13(machine, tmp_path)
    venv_python_keeps_pythonpath(site, tmp_path)
    lib = tmp_path / "half-copied" / "nvidia" / "cu13" / "lib"
    lib.mkdir(parents=True)
    cut_in_half(site / "nvidia" / "cu13" / "lib" / "libcublasLt.so.13", lib / "libcublasLt.so.13")
    machine.env["PYTHONPATH"] = f"half-copied:{machine.env['PYTHONPATH']}"  # relative to the working folder
    assert machine.cwd == tmp_path
    report = machine.check_json()
    [error] = [f for f in errors_of(report) if f["code"] == "CD409"]
    assert error["subject"] == str(lib / "libcublasLt.so.13") and error["evidence"] == "seen", error
    lines = plan_lines(machine)
    after = check_after(machine, lines)
    assert "CD409" not in {f["code"] for f in after["findings"]}, (lines, after["findings"])


# what the runner adds to each child's environment (child.py: the token, the doctor's process id, the answer channel,
# the descriptors a framework child holds) and what the all-reduce's launcher gives each rank, as torchrun does
RUNNER_ADDS = (child_module.TOKEN_VARIABLE, child_module.PID_VARIABLE, child_module.ANSWER_FD_VARIABLE,
               child_module.ANSWER_PATH_VARIABLE, limits.HOLD_VARIABLE)
RANK_ADDS = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT", "NCCL_DEBUG")


def test_every_child_has_the_programs_variables_but_the_runners_own(machine: Machine, project: Path,
                                                                   tmp_path: Path) -> None:
    """Every variable of the program's, in every child of check --deep, with the program's value (a path one naming
    the same file): none taken out, none changed, none added but the runner's own. COLUMNS below 10 is the one the
    doctor takes out of its own environment on purpose (entry.py: no terminal is that narrow; no GPU program reads
    it); `_` is the shell's last word, not a setting."""
    machine.env.update({"PARITY_NAMES": "*", "LC_ALL": "C.UTF-8", "TERM": "dumb", "PYTHONDONTWRITEBYTECODE": "1",
                        "PYTHONWARNINGS": "ignore", "CUDA_VISIBLE_DEVICES": "0,1", "COLUMNS": "5"})
    _doctor(machine, project, "check", "--deep", "--json")
    program = _reference(machine, project, tmp_path)
    # the doctor's children, each started from "/" (the doctor, the shells and the program start in the project)
    children = [r for r in _reports(tmp_path / "report.jsonl") if r["cwd"] == "/"]
    assert {_kind(r["argv"]) for r in children} >= {"_probe_jobs", "_deep_child.py", "_allreduce_child.py"}, children
    theirs = {name: value for name, value in program["env"].items() if name not in ("_", "COLUMNS")}
    for child in children:
        mine = {name: value for name, value in child["env"].items() if name != "_"}
        ranks = RANK_ADDS if _kind(child["argv"]) == "_allreduce_child.py" else ()
        assert set(mine) - set(theirs) <= {*RUNNER_ADDS, *ranks}, (child["argv"][:4], set(mine) - set(theirs))
        assert not set(theirs) - set(mine), (child["argv"][:4], set(theirs) - set(mine))
        changed = [name for name in theirs if mine[name] != theirs[name] and name not in NAMES]
        assert not changed, (child["argv"][:4], {name: (mine[name], theirs[name]) for name in changed})
        assert not _differences({**child, "env": {n: v for n, v in mine.items() if n in NAMES}},
                                {**program, "env": {n: v for n, v in theirs.items() if n in NAMES}})


def test_a_pythonpath_module_named_like_one_the_doctors_child_imports_is_no_error(machine: Machine,
                                                                                 tmp_path: Path) -> None:
    """A project's own json.py on PYTHONPATH: the user's program (`import torch`: torch's stand-in imports no json)
    works. Plain check's child in the framework's Python (_python_child.py, started with PYTHONPATH in force, as the
    program is) imported its own json from there and died, and the trials called that a start-up setting's failure:
    CD411, an error, seen, on a working setup. The child now imports what it needs with PYTHONPATH's folders off
    sys.path and puts them back for its questions (child.PROGRAM_BOOT, as --deep's child always did)."""
    from tests.test_process_start import _venv_torch

    _venv_torch(machine, tmp_path)
    project = tmp_path / "project"
    (project / "src").mkdir(parents=True)
    (project / "src" / "json.py").write_text("raise ImportError(\"the project's own json\")\n")
    machine.env["PYTHONPATH"] = f"{project / 'src'}:{machine.env['PYTHONPATH']}"
    machine.env["PYTHONPYCACHEPREFIX"] = str(tmp_path / "pycache")  # a start-up setting: plain check asks that Python
    program = _in_shell(machine, project, str(tmp_path / "venv" / "bin" / "python3"), "-c", "import torch")
    assert program.returncode == 0, program.stderr
    report = _doctor(machine, project, "check", "--json")
    assert not [f for f in report["findings"] if f["severity"] == "error"], report["findings"]
    [shadow] = [f for f in report["findings"] if f["code"] == "CD419"]  # the module itself is still named, read
    assert shadow["severity"] == "warning" and shadow["subject"] == str(project / "src" / "json"), shadow


def test_a_data_table_that_cannot_be_read_leaves_the_loaders_variables_read() -> None:
    """The data's table raising (compat/ damaged: the command says so where it reads it) never stops a child: the
    loader's, the shell's and Python's variables are still made absolute."""
    from cudnn_doctor.knowledge.environment import working_folder_paths
    from cudnn_doctor.variables import child_environment, read_paths_from

    def damaged() -> dict[str, str]:
        raise ValueError("compat/process_env.toml: not TOML")

    read_paths_from(damaged)
    try:
        assert child_environment({"PYTHONPATH": "src", "TMPDIR": "tmp"}, "/w") == {"PYTHONPATH": "/w/src", "TMPDIR": "tmp"}
    finally:
        read_paths_from(working_folder_paths)
