"""The process a program starts in (issue 45): the working folder Python puts first on sys.path for `python -c`, the
REPL and scripts kept there, and the shell's own settings every program started here inherits. The real interpreter
and a real bash are the judges; the doctor itself must keep working there."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT, Machine
from tests.test_frameworks import install_torch, python_env, real_python_sees
from tests.test_process_env import gpu_machine

pytestmark = pytest.mark.subprocess
# the doctor started as `python -c` is (benchmarks/gpu_scenarios.py starts it so): "" first on sys.path after it
START = (f"import sys; sys.path.insert(0, {str(ROOT)!r}); sys.argv[0] = 'cudnn-doctor'; "
         "from cudnn_doctor.entry import main; main()")


def _torch(machine: Machine, tmp_path: Path) -> Path:
    gpu_machine(machine, tmp_path)
    site = python_env(machine, tmp_path)
    install_torch(site, version="2.11.0+cu130", cuda="13.0", cudnn=91900, pin="nvidia-cudnn-cu13==9.19.0.56")
    real_python_sees(site, tmp_path)
    return site


def _doctor_c(machine: Machine, cwd: Path, *args: str, before: str = "") -> subprocess.CompletedProcess[str]:
    """The doctor as `python -c START ARGS` in a bash at CWD (after BEFORE, a shell line)."""
    import shlex

    line = f"{before}{'; ' if before else ''}exec {shlex.join([sys.executable, '-c', START, *args])}"
    env = {k: v for k, v in machine.env.items() if k != "PYTHONPATH"}
    return subprocess.run(["bash", "-c", line], env=env, cwd=cwd, capture_output=True, text=True, timeout=120,
                          stdin=subprocess.DEVNULL)


def test_the_doctor_started_from_a_folder_that_shadows_pythons_own_modules_still_reports(machine: Machine,
                                                                                          tmp_path: Path) -> None:
    _torch(machine, tmp_path)
    project = tmp_path / "project"
    project.mkdir()
    for name in ("json.py", "typing.py", "subprocess.py"):  # a user's project's own modules
        (project / name).write_text("raise ImportError(\"the project's own module\")\n")
    done = _doctor_c(machine, project, "check", "--json")
    assert "Traceback" not in done.stderr, done.stderr
    report = json.loads(done.stdout)
    shadows = {f["subject"]: f for f in report["findings"] if f["code"] == "CD419"}
    assert set(shadows) == {str(project / "json"), str(project / "typing"), str(project / "subprocess")}, shadows
    assert all(f["severity"] == "warning" and f["evidence"] == "read" for f in shadows.values())
    said = subprocess.run([sys.executable, "-c", "import typing"], cwd=project, capture_output=True, text=True,
                          timeout=60)
    assert "the project's own module" in said.stderr  # what the warning says, as Python does it


def _venv_torch(machine: Machine, tmp_path: Path) -> Path:
    """torch's stand-in (it runs its first GPU steps on the fake driver) in a real virtual environment: its python3
    is the interpreter itself, with the user's PYTHONPATH and signals as they are (a /bin/sh wrapper in between sets
    its own)."""
    from tests.test_bisect import BREAKABLE_TORCH

    gpu_machine(machine, tmp_path)
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(tmp_path / "venv")], check=True, timeout=120)
    site = tmp_path / "venv" / "lib" / f"python{sys.version_info[0]}.{sys.version_info[1]}" / "site-packages"
    machine.env["PATH"] = f"{tmp_path / 'venv' / 'bin'}:{machine.env['PATH']}"
    install_torch(site, version="2.11.0+cu130", cuda="13.0", cudnn=91900, pin="nvidia-cudnn-cu13==9.19.0.56")
    (site / "torch" / "__init__.py").write_text(BREAKABLE_TORCH)
    return site


_breakable_torch = _venv_torch


def test_deep_runs_the_framework_from_the_working_folder_as_python_c_does_and_fix_leaves_it_off(
        machine: Machine, tmp_path: Path) -> None:
    """A `torch/` package in the folder programs start from (a checkout, a stray copy): `python -c 'import torch'`
    there imports it. --deep starts torch's child there as `python -c` is started, sees it fail, and sees it work
    with PYTHONSAFEPATH=1 (Python's own switch for leaving that folder off sys.path): an error, seen, and fix's line,
    verified; sourced in bash, the program works there and check is clean of it."""
    _breakable_torch(machine, tmp_path)
    project = tmp_path / "project"
    (project / "torch").mkdir(parents=True)
    (project / "torch" / "__init__.py").write_text("raise ImportError('a torch checkout that was never built')\n")
    plain = json.loads(_doctor_c(machine, project, "check", "--json").stdout)
    [read] = [f for f in plain["findings"] if f["code"] == "CD419"]
    assert read["severity"] == "warning" and read["evidence"] == "read", read
    deep = json.loads(_doctor_c(machine, project, "check", "--deep", "--json").stdout)
    [seen] = [f for f in deep["findings"] if f["code"] == "CD419" and f["subject"].startswith("environment")]
    assert seen["evidence"] == "seen" and "never built" in seen["proof"] and "PYTHONSAFEPATH=1" in seen["detail"], seen
    plan = json.loads(_doctor_c(machine, project, "fix", "--json").stdout)
    [step] = [a for a in plan["actions"] if a["kind"] == "env"]
    assert step["env"]["bash"] == ["export PYTHONSAFEPATH=1"] and step["verified"].startswith("verified here"), step
    after = json.loads(_doctor_c(machine, project, "check", "--deep", "--json", before="export PYTHONSAFEPATH=1").stdout)
    assert not [f for f in after["findings"] if f["code"] == "CD419"], after["findings"]
    judge = subprocess.run(["bash", "-c", "export PYTHONSAFEPATH=1; exec \"$0\" -c 'import torch; print(torch.__version__)'",
                            str(tmp_path / "venv" / "bin" / "python3")], env=machine.env, cwd=project,
                           capture_output=True, text=True, timeout=60)
    assert judge.stdout.strip() == "2.11.0+cu130", judge.stderr


def test_a_working_folder_whose_modules_the_framework_does_not_import_changes_nothing_under_deep(
        machine: Machine, tmp_path: Path) -> None:
    _breakable_torch(machine, tmp_path)
    project = tmp_path / "project"
    project.mkdir()
    (project / "train.py").write_text("raise SystemExit(\"the user's own script\")\n")
    (project / "json.py").write_text("raise ImportError(\"the project's own json\")\n")  # torch's stand-in needs none
    deep = json.loads(_doctor_c(machine, project, "check", "--deep", "--json").stdout)
    assert not [f for f in deep["findings"] if f["severity"] == "error"], deep["findings"]
    [torch] = deep["frameworks"]
    assert torch["details"]["deep"].get("conv_ran") and torch["details"]["deep"]["working_folder"] == str(project)


# --- what the shell gives every program it starts: the umask, the signals it leaves ignored ------------------------

# torch's stand-in runs a compiler as a child and waits for it, as XLA runs ptxas (tsl's SubProcess: waitpid)
WAITING_TORCH_LINES = '''
def _compile():
    pid = os.posix_spawn("/bin/true", ["true"], dict(os.environ))
    try:
        os.waitpid(pid, 0)
    except ChildProcessError as error:
        raise RuntimeError("ptxas exited with non-zero error code -1: waitpid: " + str(error))
'''


def _waiting_torch(machine: Machine, tmp_path: Path) -> Path:
    from tests.test_bisect import BREAKABLE_TORCH

    site = _venv_torch(machine, tmp_path)
    (site / "torch" / "__init__.py").write_text(
        BREAKABLE_TORCH.replace("def randn(*shape, **kwargs):\n", WAITING_TORCH_LINES
                                + "def randn(*shape, **kwargs):\n    _compile()\n"))
    return site


def test_sigchld_left_ignored_by_the_shell_is_read_warned_and_its_line_undoes_it(machine: Machine,
                                                                                  tmp_path: Path) -> None:
    _torch(machine, tmp_path)
    plain = json.loads(_doctor_c(machine, tmp_path, "check", "--json", before="trap '' CHLD").stdout)
    [said] = [f for f in plain["findings"] if f["code"] == "CD116"]
    assert said["subject"] == "SIGCHLD" and said["severity"] == "warning" and said["evidence"] == "read", said
    assert "waitpid" in said["detail"] and "--deep" in said["proof"], said
    plan = json.loads(_doctor_c(machine, tmp_path, "fix", "--json", before="trap '' CHLD").stdout)
    lines = [line for a in plan["actions"] if a["kind"] == "env" for line in a["env"]["bash"]]
    assert lines == ["trap - CHLD"], plan["actions"]
    after = json.loads(_doctor_c(machine, tmp_path, "check", "--json", before="trap '' CHLD; trap - CHLD").stdout)
    assert not [f for f in after["findings"] if f["code"] == "CD116"], after["findings"]
    clean = json.loads(_doctor_c(machine, tmp_path, "check", "--json").stdout)  # the shell as it comes: nothing
    assert not [f for f in clean["findings"] if f["code"] == "CD116"], clean["findings"]


def test_deep_sees_a_framework_fail_its_waits_under_an_ignored_sigchld_and_fix_verifies_the_trap(
        machine: Machine, tmp_path: Path) -> None:
    """A framework that waits for a child it runs (XLA's ptxas) fails where the shell left SIGCHLD ignored: --deep
    sees it fail, and work again in a child with SIGCHLD's default disposition (an error, seen); fix's `trap - CHLD`
    is verified, and sourced in that shell the framework's work runs and check --deep is clean of it."""
    _waiting_torch(machine, tmp_path)
    deep = json.loads(_doctor_c(machine, tmp_path, "check", "--deep", "--json", before="trap '' CHLD").stdout)
    [seen] = [f for f in deep["findings"] if f["code"] == "CD116" and f["severity"] == "error"]
    assert seen["evidence"] == "seen" and "waitpid" in seen["proof"] and "trap - CHLD" in seen["detail"], seen
    plan = json.loads(_doctor_c(machine, tmp_path, "fix", "--json", before="trap '' CHLD").stdout)
    [step] = [a for a in plan["actions"] if a["kind"] == "env"]
    assert step["env"]["bash"] == ["trap - CHLD"] and step["verified"].startswith("verified here"), step
    after = json.loads(_doctor_c(machine, tmp_path, "check", "--deep", "--json",
                                 before="trap '' CHLD; trap - CHLD").stdout)
    assert not [f for f in after["findings"] if f["code"] == "CD116"], after["findings"]
    assert after["frameworks"][0]["details"]["deep"].get("lstm_ran"), after["frameworks"][0]["details"]["deep"]


def test_the_umask_is_read_from_the_kernels_record_and_judged_for_who_runs(tmp_path: Path) -> None:
    from cudnn_doctor.model import Host, ProcessView, Report, Tool
    from cudnn_doctor.probes.process_start import read_shell_settings
    from cudnn_doctor.rules.process_start import shell_settings

    status = tmp_path / "status"
    status.write_text("Name:\tpython3\nUmask:\t0777\nUid:\t1000\t1000\t1000\t1000\nSigIgn:\t0000000000011000\n")
    shell = read_shell_settings(str(status))
    assert shell == {"umask": "0777", "ignored": "SIGCHLD", "uid": "1000"}  # SIGPIPE (13) is Python's own: not said
    report = Report(tool=Tool("cudnn-doctor", "0"), host=Host("linux", "x86_64", "3.11", "node"),
                    process=ProcessView(shell=shell))
    said = {f.subject: f for f in shell_settings(report)}
    assert set(said) == {"umask", "SIGCHLD"} and said["umask"].severity == "warning", said
    assert "mode ---------" in said["umask"].detail and said["umask"].values["shell_line"] == "umask 022"
    as_root = Report(tool=Tool("cudnn-doctor", "0"), host=Host("linux", "x86_64", "3.11", "node"),
                     process=ProcessView(shell={**shell, "uid": "0", "ignored": ""}))
    assert shell_settings(as_root) == []  # root reads and writes its own files whatever their mode
    usual = Report(tool=Tool("cudnn-doctor", "0"), host=Host("linux", "x86_64", "3.11", "node"),
                   process=ProcessView(shell={"umask": "0022", "ignored": "", "uid": "1000"}))
    assert shell_settings(usual) == []


def test_the_umask_line_sourced_in_bash_is_the_usual_one(machine: Machine, tmp_path: Path) -> None:
    from cudnn_doctor.plan.actions import EnvChange
    from cudnn_doctor.plan.shell import _whole_value_line

    line = _whole_value_line("bash", EnvChange("umask", "shell", "022"))
    done = subprocess.run(["bash", "-c", f"umask 0777; {line}; umask"], capture_output=True, text=True, timeout=30)
    assert done.stdout.strip() == "0022"
    assert _whole_value_line("powershell", EnvChange("umask", "shell", "022")).startswith("# ")


def test_deep_asks_python_about_any_module_of_its_library_the_working_folder_holds(machine: Machine,
                                                                                    tmp_path: Path) -> None:
    """No list names `dataclasses`: torch's own __init__.py imports it (plain check reads that file: a warning), and
    the working folder holds a module of Python's own library, so --deep runs the framework there as `python -c`
    does, and its Python's answer decides (an error, seen)."""
    site = _breakable_torch(machine, tmp_path)
    (site / "torch" / "__init__.py").write_text("import dataclasses\n" + (site / "torch" / "__init__.py").read_text())
    project = tmp_path / "project"
    project.mkdir()
    (project / "dataclasses.py").write_text("raise ImportError(\"the project's own dataclasses\")\n")
    (project / "test.py").write_text("raise SystemExit(\"the project's tests\")\n")  # `test` is Python's too: not imported
    plain = json.loads(_doctor_c(machine, project, "check", "--json").stdout)
    assert not [f for f in plain["findings"] if f["severity"] == "error"], plain["findings"]
    # read: torch's own __init__.py imports dataclasses (its installed file says so), and nothing names `test`
    read = [f["subject"] for f in plain["findings"] if f["code"] == "CD419"]
    assert read == [str(project / "dataclasses")], plain["findings"]
    deep = json.loads(_doctor_c(machine, project, "check", "--deep", "--json").stdout)
    [seen] = [f for f in deep["findings"] if f["code"] == "CD419" and f["subject"].startswith("environment")]
    assert seen["evidence"] == "seen" and "own dataclasses" in seen["proof"], seen


# --- where a program's `import torch` finds it: the framework's Python asked, with this environment ---------------

def test_a_start_up_hook_that_puts_another_torch_first_is_what_python_says(machine: Machine, tmp_path: Path) -> None:
    """A sitecustomize on PYTHONPATH inserts an old folder at the front of sys.path: the framework's Python, started
    as a program is, answers that `import torch` finds that folder's torch (a warning, seen by Python's own finders);
    a hook that takes site-packages off sys.path leaves it none (an error, seen), and --deep's bisection cures it by
    unsetting PYTHONPATH, fix's line, verified."""
    _breakable_torch(machine, tmp_path)
    old = tmp_path / "old-site" / "torch"
    old.mkdir(parents=True)
    (old / "__init__.py").write_text("__version__ = '1.13.1'\n")
    hooks = tmp_path / "hooks"
    hooks.mkdir()
    (hooks / "sitecustomize.py").write_text(f"import sys\nsys.path.insert(0, {str(old.parent)!r})\n")
    before = machine.env["PYTHONPATH"]  # this checkout's folder: the doctor's own, on a machine without it installed
    machine.env["PYTHONPATH"] = f"{hooks}:{before}"
    report = machine.check_json()
    [said] = [f for f in report["findings"] if f["code"] == "CD419" and f["subject"] == "import torch"]
    assert said["severity"] == "warning" and str(old / "__init__.py") in said["detail"], said
    (hooks / "sitecustomize.py").write_text("import sys\nsys.path[:] = [p for p in sys.path if 'site-packages' not in p]\n")
    report = machine.check_json()
    [said] = [f for f in report["findings"] if f["code"] == "CD409" and f["subject"] == "import torch"]
    assert said["severity"] == "error" and said["evidence"] == "seen" and "nowhere" in said["proof"], said
    judge = subprocess.run([str(tmp_path / "venv" / "bin" / "python3"), "-c", "import torch"], env=machine.env,
                           capture_output=True, text=True, timeout=60)
    assert "No module named 'torch'" in judge.stderr  # what the error says, as Python does it
    plan = machine.run("fix", "--json").json
    [step] = [a for a in plan["actions"] if a["kind"] == "env"]
    assert step["env"]["bash"] == ["unset PYTHONPATH"] and step["verified"].startswith("verified here"), step
    judge = subprocess.run(["bash", "-c", "unset PYTHONPATH; exec \"$0\" -c 'import torch; print(torch.__version__)'",
                            str(tmp_path / "venv" / "bin" / "python3")], env=machine.env, capture_output=True,
                           text=True, timeout=60)
    assert judge.stdout.strip() == "2.11.0+cu130", judge.stderr  # the line sourced, the program imports torch
    machine.env["PYTHONPATH"] = before  # the hook's folder out (the doctor's own checkout kept)
    assert not [f for f in machine.check_json()["findings"] if f["code"] in ("CD409", "CD419")]


def test_the_installed_torch_found_where_it_is_installed_is_no_finding(machine: Machine, tmp_path: Path) -> None:
    _breakable_torch(machine, tmp_path)
    hooks = tmp_path / "hooks"
    hooks.mkdir()
    (hooks / "sitecustomize.py").write_text("import sys\nsys.path.append('/nonexistent')\n")  # starts the child
    machine.env["PYTHONPATH"] = f"{hooks}:{machine.env['PYTHONPATH']}"
    report = machine.check_json()
    assert report["process"]["python_imports"], report["process"]
    assert not [f for f in report["findings"] if f["code"] == "CD419"], report["findings"]


# --- GLIBC_TUNABLES, asked of glibc ----------------------------------------------------------------------------------

def test_tunables_glibc_does_not_have_or_refuses_are_what_its_own_listing_says(machine: Machine,
                                                                                tmp_path: Path) -> None:
    """glibc ignores a tunable it does not have and a value outside its range without a word: the ld.so that started
    the doctor, run with --list-tunables under the user's value, shows what it holds. A warning (glibc goes on with
    its default), and fix's line keeps the entries glibc took; sourced, check is clean of it."""
    _torch(machine, tmp_path)
    value = "glibc.malloc.arena_max=2:glibc.malloc.arena_maxx=1:glibc.rtld.nns=99"
    report = json.loads(_doctor_c(machine, tmp_path, "check", "--json", before=f"export GLIBC_TUNABLES={value}").stdout)
    [said] = [f for f in report["findings"] if f["subject"] == "GLIBC_TUNABLES"]
    assert said["code"] == "CD418" and said["severity"] == "warning" and said["evidence"] == "seen", said
    assert "glibc.malloc.arena_maxx" in said["detail"] and "glibc.rtld.nns" in said["detail"], said
    from cudnn_doctor.probes.hwcaps import this_loader

    listed = subprocess.run([str(this_loader()), "--list-tunables"], env={"GLIBC_TUNABLES": value},
                            capture_output=True, text=True, timeout=30).stdout
    assert "glibc.malloc.arena_maxx" not in listed and "glibc.rtld.nns: 0x4" in listed  # glibc's own word
    plan = json.loads(_doctor_c(machine, tmp_path, "fix", "--json", before=f"export GLIBC_TUNABLES={value}").stdout)
    lines = [line for a in plan["actions"] if a["kind"] == "env" for line in a["env"]["bash"]]
    assert lines == ["export GLIBC_TUNABLES=glibc.malloc.arena_max=2"], plan["actions"]
    after = json.loads(_doctor_c(machine, tmp_path, "check", "--json",
                                 before=f"export GLIBC_TUNABLES={value}; {lines[0]}").stdout)
    assert not [f for f in after["findings"] if f["subject"] == "GLIBC_TUNABLES"], after["findings"]
    assert after["process"]["tunables"] == [["glibc.malloc.arena_max", "2", "0x2", "taken"]]


def test_fix_yes_checks_again_with_the_shells_line_in_force(machine: Machine, tmp_path: Path) -> None:
    """`fix --yes` runs check again with its lines in force: `trap - CHLD` is set in its own process (what the check
    after, its child, inherits), as a shell that sourced it would start the program; CD116 is gone after."""
    _waiting_torch(machine, tmp_path)
    done = _doctor_c(machine, tmp_path, "fix", "--yes", "--json", before="trap '' CHLD")
    plan = json.loads(done.stdout)
    assert "CD116" in plan["before"]["codes"] and "CD116" not in plan["after"]["codes"], plan


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_the_shells_lines_undo_the_settings_in_each_shell(shell: str) -> None:
    """Each shell's lines, sourced in that shell after it set them: the usual umask, SIGCHLD's default (what the
    program it starts then inherits: /proc/self/status of a program started there)."""
    import shutil

    from cudnn_doctor.plan.actions import EnvChange
    from cudnn_doctor.plan.shell import env_lines

    if shutil.which(shell) is None:
        pytest.skip(f"{shell} is not installed here")
    lines = env_lines((EnvChange("trap", "shell", "- CHLD"), EnvChange("umask", "shell", "022")), {}, shell)
    sets = "umask 0777" if shell == "fish" else "trap '' CHLD; umask 0777"
    done = subprocess.run([shell, "-c", "; ".join([sets, *lines, "umask", "grep SigIgn /proc/self/status"])],
                          capture_output=True, text=True, timeout=30)
    umask, ignored = done.stdout.split()[0], int(done.stdout.split()[-1], 16)
    assert int(umask, 8) == 0o022 and not ignored >> 16 & 1, done.stdout + done.stderr


def test_a_module_of_pythons_own_on_pythonpath_is_read_then_seen_and_its_folder_taken_out(machine: Machine,
                                                                                           tmp_path: Path) -> None:
    """A `json.py` in a PYTHONPATH folder (PYTHONPATH comes before Python's own library) that torch's import reaches,
    and a lone `numpy.py` there: read, CD419 warnings; --deep's child keeps working itself (it imports without
    PYTHONPATH's folders, then puts them back for the framework), sees torch fail, and sees it work with PYTHONPATH
    unset: an error, seen, and fix's line, verified."""
    site = _venv_torch(machine, tmp_path)
    (site / "torch" / "__init__.py").write_text("import json\n" + (site / "torch" / "__init__.py").read_text())
    stray = tmp_path / "stray"
    stray.mkdir()
    (stray / "json.py").write_text("raise ImportError(\"a json.py left on PYTHONPATH\")\n")
    (stray / "numpy.py").write_text("raise ImportError(\"not numpy\")\n")
    (stray / "helpers.py").write_text("x = 1\n")  # no module of Python's or torch's: nothing said
    before = machine.env["PYTHONPATH"]
    machine.env["PYTHONPATH"] = f"{stray}:{before}"
    report = machine.check_json()
    read = {f["subject"]: f for f in report["findings"] if f["code"] == "CD419"}
    assert set(read) == {str(stray / "json"), str(stray / "numpy")}, read
    assert all(f["severity"] == "warning" for f in read.values())
    deep = machine.check_json("--deep")
    [seen] = [f for f in deep["findings"] if f["code"] == "CD419" and f["subject"].startswith("environment")]
    assert seen["evidence"] == "seen" and "json.py left on PYTHONPATH" in seen["proof"], seen
    plan = machine.run("fix", "--json").json
    lines = [line for a in plan["actions"] if a["kind"] == "env" for line in a["env"]["bash"]]
    assert lines == [f"export PYTHONPATH={before}"], plan["actions"]
    assert all(a["verified"].startswith("verified here") for a in plan["actions"] if a["kind"] == "env")


def test_a_working_folder_deleted_under_the_shell_is_said_and_torch_on_x86_64_is_an_error(machine: Machine,
                                                                                          tmp_path: Path) -> None:
    """A shell whose folder was deleted (getcwd: ENOENT) starts every program there: torch 2.11's x86-64 import failed
    so on an H100 (round eight's scenario, the proof), so with torch installed it is an error (rule); the plan says
    to cd to a folder that exists. Started as a shell does it: mkdir, cd, the folder removed, then the doctor."""
    import json
    import platform
    import shlex
    import subprocess
    import sys

    site = python_env(machine, tmp_path)
    install_torch(site, version="2.11.0+cu130", cuda="13.0", cudnn=91900, pin="nvidia-cudnn-cu13==9.19.0.56")
    gone = tmp_path / "gone"
    line = (f"mkdir {shlex.quote(str(gone))} && cd {shlex.quote(str(gone))} && rmdir {shlex.quote(str(gone))} && "
            f"exec {shlex.quote(sys.executable)} -m cudnn_doctor ")
    done = subprocess.run(["bash", "-c", line + "check --json"], env=machine.env, capture_output=True, text=True,
                          timeout=120)
    assert done.stdout.startswith("{"), (done.returncode, done.stderr[-2000:])  # once empty in a loaded full run
    [said] = [f for f in json.loads(done.stdout)["findings"] if str(f["subject"]).endswith("(deleted)")]
    x86 = platform.machine() in ("x86_64", "AMD64")
    assert said["code"] == "CD409" and said["severity"] == ("error" if x86 else "warning"), said
    assert str(gone) in said["subject"] and (said["evidence"] == "rule") == x86, said
    plan = json.loads(subprocess.run(["bash", "-c", line + "fix --json"], env=machine.env, capture_output=True,
                                     text=True, timeout=120).stdout)
    assert any("cd ~" in (a.get("text") or "") for a in plan["actions"] if a["kind"] == "manual"), plan["actions"]
    calm = subprocess.run([sys.executable, "-m", "cudnn_doctor", "check", "--json"], env=machine.env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)
    assert not [f for f in json.loads(calm.stdout)["findings"] if str(f["subject"]).endswith("(deleted)")]
