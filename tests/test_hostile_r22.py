"""Round eighteen's reliability classes (issue 43; found by benchmarks/redteam_r22.py over the surfaces added in the
last three rounds, each a test that failed before its fix), and a sample of that red-team in CI."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests import redteam_sample
from tests.conftest import ROOT, Machine

linux_only = pytest.mark.skipif(sys.platform != "linux", reason="the loader's and the shells' behaviours of Linux")


# --- the wheels' RECORD read as the installer writes it ------------------------------------------------------------

def test_a_record_is_read_as_csv_and_rows_climbing_out_name_nothing(tmp_path: Path) -> None:
    """A RECORD is a CSV file (PEP 376; pip writes and reads it with the csv module): a hash quoted because it holds
    commas is one field, so the size is the third field as the installer reads it (a split at every comma took
    '5' for the size of a whole library: a false 'another release copied over it'). A row whose path climbs out
    of the installation (`../../etc/passwd`, `nvidia/../lib/...`), is absolute or has an empty part names nothing
    of the wheel's."""
    from cudnn_doctor.probes.loading import record_rows, recorded

    site = tmp_path / "site"
    info = site / "nvidia_cublas-13.1.0.3.dist-info"
    info.mkdir(parents=True)
    (info / "RECORD").write_bytes(
        b'nvidia/cu13/lib/libcublasLt.so.13,"sha256=a,5,",4096\n'
        b"../../../../etc/passwd,,1\nnvidia/../lib/libcudart.so.13,,5\n/etc/nvidia/x/lib/libnccl.so.2,,1\n"
        b"nvidia//lib/libcufft.so.12,,1\n\xff\xfe,\x00\n\"unclosed,,\n")
    rows = record_rows(str(info / "RECORD"))
    assert rows[0] == ("nvidia/cu13/lib/libcublasLt.so.13", "4096"), rows
    assert not [path for path, _ in rows if ".." in path.split("/") or path.startswith("/") or "//" in path], rows
    found = recorded(str(site), {"libcublasLt.so.13", "libcudart.so.13", "libnccl.so.2", "libcufft.so.12"})
    assert found == {"libcublasLt.so.13": (str(site / "nvidia/cu13/lib/libcublasLt.so.13"), 4096)}, found
    # a path listed twice, of two sizes (the same path once quoted, once not): the RECORD gives it no size
    (info / "RECORD").write_text('"nvidia/cu13/lib/libcublasLt.so.13",,7\nnvidia/cu13/lib/libcublasLt.so.13,,4096\n')
    assert recorded(str(site), {"libcublasLt.so.13"})["libcublasLt.so.13"][1] is None


@pytest.mark.integration
def test_a_quoted_hash_holding_commas_is_no_other_release_copied_over(machine: Machine, tmp_path: Path) -> None:
    """torch's cuBLASLt whole, its wheel's RECORD row quoting a hash that holds commas (`"sha256=a,5,"`): before, the
    size read was 5, and check warned that another release was copied over the library (CD203, and a loading child
    started for it). Now no finding names it."""
    from tests.test_cuda_libraries import torch_cu13

    site = torch_cu13(machine, tmp_path)
    own = site / "nvidia" / "cu13" / "lib" / "libcublasLt.so.13"
    (site / "nvidia_cublas-13.1.0.3.dist-info" / "RECORD").write_text(
        f'nvidia/cu13/lib/libcublasLt.so.13,"sha256=a,5,",{own.stat().st_size}\n')
    report = machine.check_json()
    assert not [f for f in report["findings"] if f["subject"] == str(own)], report["findings"]
    assert report["process"]["loads"] == [], report["process"]["loads"]


# --- the job child's own command line --------------------------------------------------------------------------------

@pytest.mark.parametrize("args", [["_probe_jobs"], ["_load_jobs"], ["_probe_jobs", "batch", "cuda", "x", "1", "t"],
                                  ["_load_jobs", "torch", "/", "x", "x", "x", "x", "x", "x", "not python", "x", "(((("]])
def test_a_job_childs_command_line_not_the_doctors_is_one_line(args: list[str]) -> None:
    """_job_child.py with its jobs module named but its arguments missing or not what the doctor writes (a literal
    that is no Python): one usage line, exit 2, as for a name of jobs not its own (was a traceback: IndexError,
    ValueError, SyntaxError)."""
    done = subprocess.run([sys.executable, "-I", "-S", str(ROOT / "cudnn_doctor" / "_job_child.py"), *args],
                          capture_output=True, text=True, timeout=60, cwd="/", env={"PATH": "/usr/bin:/bin"})
    assert done.returncode == 2 and done.stdout == "", done
    assert done.stderr.startswith(f"usage: _job_child.py {args[0]} ") and done.stderr.count("\n") == 1, done.stderr


# --- --deep's trial of the shell's limits keeps the whole environment -------------------------------------------------

@linux_only
def test_a_trial_under_raised_limits_keeps_variables_a_posix_shell_drops() -> None:
    """The child of a trial that raises soft limits (or sets the umask) starts with the environment as given: dash
    (/bin/sh) drops the variables whose names it cannot hold (APP-MODE, a.b), which bash, zsh, fish and a program's
    own environment keep. The limit is set as `ulimit -S` sets it (KiB for -s)."""
    from cudnn_doctor.probes.deep import limited

    code = ("import os, resource; print(os.environ.get('APP-MODE'), os.environ.get('a.b'), "
            "resource.getrlimit(resource.RLIMIT_STACK)[0], oct(os.umask(0)))")
    argv = limited((sys.executable, "-I", "-c", code), [("-s", "4096"), ("umask", "027")])
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60,
                          env={"PATH": "/usr/bin:/bin", "APP-MODE": "BAD", "a.b": "x"})
    assert done.stdout.split() == ["BAD", "x", str(4096 * 1024), "0o27"], (done.stdout, done.stderr)


def python_that_keeps_every_variable(site: Path, tmp_path: Path) -> None:
    """The environment's python3 a program of its own (not a sh script: dash would drop APP-MODE before Python)."""
    wrapper = tmp_path / "venv" / "bin" / "python3"
    wrapper.write_text(f"#!{sys.executable} -S\nimport os, sys\nos.environ['PYTHONPATH'] = {str(site)!r}\n"
                       f"os.execv({sys.executable!r}, [{sys.executable!r}, *sys.argv[1:]])\n")
    wrapper.chmod(0o755)


@pytest.mark.integration
@pytest.mark.subprocess
def test_deep_names_a_variable_no_shell_can_name_and_fix_writes_no_line_that_leaves_it(machine: Machine,
                                                                                      tmp_path: Path) -> None:
    """torch fails while APP-MODE (a name only a program's environment holds: systemd, docker's --env, `env`) is set,
    and the stack limit is below its hard one. Before: the trial of the raised limits ran through /bin/sh, which
    dropped APP-MODE, so torch worked there and `ulimit -S -s unlimited` was offered as the cure, verified, which
    cures nothing. Now the search finds APP-MODE; and fix writes no `unset APP-MODE` (bash accepts it and leaves the
    variable set; zsh and fish refuse it): a comment in words."""
    from tests.test_loading import LOADING_TORCH, torch_with_real_cudnn

    site = torch_with_real_cudnn(machine, tmp_path)
    (site / "torch" / "__init__.py").write_text(
        LOADING_TORCH.replace("def randn(", "def _randn(") +
        "\ndef randn(*shape, device=None):\n    import os\n    if os.environ.get('APP-MODE'):\n"
        "        raise RuntimeError('CUDA error: an illegal memory access was encountered')\n"
        "    return _randn(*shape, device=device)\n")
    python_that_keeps_every_variable(site, tmp_path)
    machine.env["APP-MODE"] = "BAD"
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_STACK)
    if soft == hard:
        pytest.skip("the stack's soft limit is its hard one here: no limits variant to try")
    report = machine.check_json("--deep")
    cure = report["process"]["cured_by"]
    assert (cure["kind"], cure["variable"]) == ("variable", "APP-MODE"), cure
    plan = machine.run("fix", "--json").json
    [step] = [a for a in plan["actions"] if a["kind"] == "env"]
    for shell in ("bash", "zsh", "fish", "powershell"):
        assert all(line.startswith("#") and "APP-MODE" not in line for line in step["env"][shell]), step["env"]


def test_a_line_for_a_variable_no_shell_can_name_is_a_comment() -> None:
    """env_lines for a variable named APP-MODE, a.b or with a newline: a comment in every shell, never `unset
    APP-MODE` (bash: silently nothing), `set -e a.b` (fish: an error) or `export` of a name that splits."""
    from cudnn_doctor.plan.actions import EnvChange
    from cudnn_doctor.plan.shell import env_lines

    for name in ("APP-MODE", "a.b", "X\nY", "1ST", "É"):
        for op in ("unset", "set"):
            for shell in ("bash", "zsh", "fish", "powershell"):
                [line] = env_lines((EnvChange(name, op, "v"),), [], shell)
                assert line.startswith("# ") and "\n" not in line and name not in line, (name, shell, line)
    assert env_lines((EnvChange("APP_MODE", "unset", ""),), [], "bash") == ["unset APP_MODE"]


# --- a working folder deleted under the doctor ------------------------------------------------------------------------

@linux_only
def test_a_working_folder_deleted_under_check_with_a_relative_path_entry_is_no_internal_error(tmp_path: Path) -> None:
    """Started from a folder that was deleted (a shell left in it), with a relative LD_LIBRARY_PATH entry: every
    reader that made that entry absolute (os.path.abspath, realpath) raised FileNotFoundError: exit 3, an internal
    error. Now the entry names nothing (as the kernel finds nothing in a deleted folder), the deleted folder is
    said, and the answer is one JSON object."""
    from tests.test_process_env import gpu_machine

    machine = Machine(tmp_path)
    gpu_machine(machine, tmp_path, gpus=1)
    machine.env["LD_LIBRARY_PATH"] += ":relative/lib:"
    work = tmp_path / "work"
    work.mkdir()
    done = subprocess.run(["sh", "-c", f'cd "{work}" && rmdir "{work}" && exec "$@"', "sh", sys.executable, "-P",
                           "-m", "cudnn_doctor", "check", "--json"],
                          env=machine.env, capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert done.returncode in (0, 1), (done.returncode, done.stderr)
    report = json.loads(done.stdout)
    assert any("deleted" in f"{f['detail']} {f['fix']}" for f in report["findings"]), report["findings"]


# --- the children's environment: relative entries that name nothing ---------------------------------------------------

@linux_only
def test_thousands_of_relative_entries_naming_nothing_leave_the_children_startable(machine: Machine,
                                                                                   tmp_path: Path) -> None:
    """6,000 relative LD_LIBRARY_PATH entries that name no folder (60 kB: a program starts with them): made absolute
    for the children (they start from "/"), the value passed what exec takes for one variable (128 KiB), so no child
    could start ('Argument list too long'), said as NVML failing (CD104, an error, with a driver's advice) and cuDNN
    crashing (CD309). Entries that name nothing are left out of the children's value (ld.so finds nothing there): no
    such error, and the probes answer."""
    from cudnn_doctor.variables import MAX_ARG_STRLEN, child_environment
    from tests.test_process_env import gpu_machine

    gpu_machine(machine, tmp_path, gpus=1)
    machine.env["LD_LIBRARY_PATH"] += ":" + ":".join(f"rel{n}/lib" for n in range(6000))
    report = machine.check_json()
    said = [f for f in report["findings"] if "Argument list too long" in f["detail"]]
    assert not said and not {"CD104", "CD110", "CD309"} & {f["code"] for f in report["findings"]}, report["findings"]
    assert len(report["gpus"]) == 1, report["gpus"]  # NVML's child started and answered
    (tmp_path / "kept").mkdir()
    many = ":".join(f"rel{n}/lib" for n in range(6000))
    child = child_environment({"LD_LIBRARY_PATH": f"{many}:kept::/abs", "PYTHONPATH": many}, str(tmp_path))
    assert child["LD_LIBRARY_PATH"] == f"{tmp_path / 'kept'}:{tmp_path}:/abs", child["LD_LIBRARY_PATH"][:200]
    assert len(child["PYTHONPATH"]) < MAX_ARG_STRLEN, len(child["PYTHONPATH"])
    # a short list made absolute whole, entries that name nothing too (as a program started here reads them)
    assert child_environment({"LD_PRELOAD": "x/none.so y.so"}, "/w") == {"LD_PRELOAD": "/w/x/none.so y.so"}


# --- the command's own sys.path under a PYTHONPATH of thousands of entries ----------------------------------------------

def test_thousands_of_pythonpath_entries_are_each_resolved_once(monkeypatch: pytest.MonkeyPatch,
                                                               tmp_path: Path) -> None:
    """entry._working_folder_off_sys_path with 8,000 PYTHONPATH entries that name nothing: each entry's real path
    asked at most once (those that name nothing only made absolute), no list searched for each entry (before: five
    realpath calls an entry, an lstat a folder of the path each, and a quadratic search: 52 s of a check started
    3,900 characters deep, past the red-team's 60 s with 8,000 LD_LIBRARY_PATH entries). The order kept: the user's
    entries after Python's own library, before site-packages."""
    from cudnn_doctor import entry

    stdlib = os.path.dirname(os.__file__)
    site = str(tmp_path / "site")
    os.mkdir(site)
    user = [str(tmp_path / f"p{n}") for n in range(8000)] + [site]
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(user))
    monkeypatch.setattr(sys, "path", [*user, stdlib, os.path.join(stdlib, "lib-dynload"), str(tmp_path / "other")])
    calls: list[str] = []
    real = os.path.realpath
    monkeypatch.setattr(os.path, "realpath", lambda path, *a, **k: calls.append(path) or real(path, *a, **k))
    entry._working_folder_off_sys_path()
    moved = sys.path[:]
    monkeypatch.undo()
    assert len(calls) < 50, len(calls)
    assert moved[:2] == [stdlib, os.path.join(stdlib, "lib-dynload")] and moved[2:8003] == user, moved[:4]
    assert moved[-1] == str(tmp_path / "other")


# --- a sample of the red-team in CI -------------------------------------------------------------------------------------

def _redteam():  # type: ignore[no-untyped-def]
    return redteam_sample.load("redteam_r22")


SAMPLED = ("job child", "wheel RECORD", "preload paths", "explain")  # the classes whose cases each take a second or two
SLOW = ("3,900", "60 MB", "64 GiB", "4 MiB", "3,000", "20,000", "8,000", "1 MB", "100,000", "50,000", "5,000",
        "the library a FIFO")  # left to the whole run: tens of seconds each, or a child waited for to its end


def quick(name: str, case: tuple) -> bool:  # type: ignore[type-arg]
    """The red-team's quick classes (a second or two each)."""
    return case[0] in SAMPLED and not any(word in name for word in SLOW)


@linux_only
@pytest.mark.integration
def test_a_seeded_sample_of_the_red_team_holds(tmp_path: Path) -> None:
    """Four cases of benchmarks/redteam_r22.py (the classes of a second or two each), a seed of their own each day:
    over time the sample covers the table."""
    redteam_sample.assert_holds("redteam_r22", quick, 4)
