"""Descriptors a program inherits from its shell (issue 45, round ten's class 1): a parent that started the shell
without close_fds leaves descriptors open in it, and they count against every program's open-files limit. Plain check
counts what a program started here holds (the doctor's own start is that program's); --deep runs the frameworks in
children that hold as many, so their failure is seen; the fix raises the soft limit, verified. The doctor itself keeps
working under them, and with its standard streams closed or full. torch's stand-in opens 60 descriptors at its first
GPU step, as a framework's first step opens its libraries and device files; a real bash holds the descriptors."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import Machine
from tests.test_process_start import START, _venv_torch

pytestmark = pytest.mark.subprocess

HUNGRY_LINES = '''
def _first_step():
    held = []
    try:
        for _ in range(60):  # a framework's first GPU step opens its libraries and the device files
            held.append(os.open(os.devnull, os.O_RDONLY))
    finally:
        for fd in held:
            os.close(fd)
'''


def _hungry_torch(machine: Machine, tmp_path: Path) -> Path:
    from tests.test_bisect import BREAKABLE_TORCH

    site = _venv_torch(machine, tmp_path)
    (site / "torch" / "__init__.py").write_text(
        BREAKABLE_TORCH.replace("def randn(*shape, **kwargs):\n", HUNGRY_LINES
                                + "def randn(*shape, **kwargs):\n    _first_step()\n"))
    return site


def _holding(last: int, limit: int) -> str:
    """A bash line: the soft open-files limit LIMIT, and descriptors 3..LAST open on /dev/null in the shell itself
    (inherited by what it execs, as a parent that forgot close_fds leaves them)."""
    return f'ulimit -S -n {limit}; for i in $(seq 3 {last}); do eval "exec $i</dev/null"; done'


def _doctor(machine: Machine, *args: str, before: str = "", stdin: object = subprocess.DEVNULL,
            stderr: object = subprocess.PIPE) -> subprocess.CompletedProcess[str]:
    line = f"{before}{'; ' if before else ''}exec {shlex.join([sys.executable, '-c', START, *args])}"
    env = {k: v for k, v in machine.env.items() if k != "PYTHONPATH"}
    return subprocess.run(["bash", "-c", line], env=env, cwd=machine.cwd, stdout=subprocess.PIPE, stderr=stderr,
                          text=True, timeout=180, stdin=stdin)


def _nofile(report: dict) -> list[dict]:
    return [f for f in report["findings"] if f["code"] == "CD116" and f["subject"] == "RLIMIT_NOFILE"]


def test_descriptors_the_shell_inherited_are_counted_against_the_limit(machine: Machine, tmp_path: Path) -> None:
    """1024 is an ordinary limit; 971 descriptors held leave 50: torch's floor (61, measured) is above it, a warning
    read, whose numbers say what a program holds; at 40 free (both frameworks seen failing there) a rule, an error."""
    _hungry_torch(machine, tmp_path)
    report = json.loads(_doctor(machine, "check", "--json", before=_holding(973, 1024)).stdout)
    [said] = _nofile(report)
    assert said["severity"] == "warning" and said["evidence"] == "read" and "--deep" in said["proof"], said
    assert "holds 974 descriptors" in said["detail"] and "3-973 /dev/null" in said["detail"], said["detail"]
    assert "50 are left" in said["detail"] and "PyTorch needs 61" in said["detail"], said["detail"]
    assert report["process"]["shell"]["descriptors"] == "974", report["process"]["shell"]
    report = json.loads(_doctor(machine, "check", "--json", before=_holding(983, 1024)).stdout)
    [said] = _nofile(report)
    assert said["severity"] == "error" and said["evidence"] == "rule" and "40 are left" in said["detail"], said


def test_many_inherited_descriptors_under_a_high_limit_are_silent(machine: Machine, tmp_path: Path) -> None:
    _hungry_torch(machine, tmp_path)
    report = json.loads(_doctor(machine, "check", "--deep", "--json", before=_holding(983, 8192)).stdout)
    assert not _nofile(report), report["findings"]
    assert not [f for f in report["findings"] if f["severity"] == "error"], report["findings"]
    assert report["frameworks"][0]["details"]["deep"].get("lstm_ran"), report["frameworks"][0]["details"]["deep"]


def test_deep_runs_the_framework_holding_them_sees_it_fail_and_fix_raises_the_soft_limit_verified(
        machine: Machine, tmp_path: Path) -> None:
    """The framework's child holds the 981 descriptors too: torch's stand-in fails ('Too many open files'), works with
    the soft limit raised: CD116, an error seen; fix's `ulimit -S -n` verified, and sourced in that shell the
    framework's work runs and check --deep is clean of it."""
    _hungry_torch(machine, tmp_path)
    holding = _holding(983, 1024)
    deep = json.loads(_doctor(machine, "check", "--deep", "--json", before=holding).stdout)
    torch = deep["frameworks"][0]["details"]["deep"]
    assert "Too many open files" in torch.get("error", ""), torch
    seen = [f for f in deep["findings"] if f["code"] == "CD116" and f["evidence"] == "seen"]
    assert seen and all(f["severity"] == "error" for f in seen), deep["findings"]
    assert any("Too many open files" in f["proof"] for f in seen), seen
    [cure] = [f for f in seen if f["subject"] == "environment: limits"]  # the one limit whose raising cures, alone
    assert "(ulimit -S -n " in cure["detail"] and "ulimit -S -s" not in cure["detail"], cure["detail"]
    plan = json.loads(_doctor(machine, "fix", "--json", before=holding).stdout)
    [step] = [a for a in plan["actions"] if a["kind"] == "env"]
    [line] = step["env"]["bash"]
    assert line.startswith("ulimit -S -n ") and step["verified"].startswith("verified here"), step
    after = json.loads(_doctor(machine, "check", "--deep", "--json", before=f"{holding}; {line}").stdout)
    assert not [f for f in after["findings"] if f["code"] == "CD116"], after["findings"]
    assert after["frameworks"][0]["details"]["deep"].get("lstm_ran"), after["frameworks"][0]["details"]["deep"]


def test_without_the_framework_holding_them_it_works_the_count_is_what_matters(machine: Machine,
                                                                                tmp_path: Path) -> None:
    """The stand-in itself, started from that shell as a program is, fails the same way: what --deep saw is what a
    program gets (and not a doctor's own doing)."""
    _hungry_torch(machine, tmp_path)
    python = tmp_path / "venv" / "bin" / "python3"
    code = "import torch; torch.randn(2); print('ran')"
    env = {k: v for k, v in machine.env.items() if k != "PYTHONPATH"}
    held = subprocess.run(["bash", "-c", f"{_holding(983, 1024)}; exec {python} -c {shlex.quote(code)}"], env=env,
                          capture_output=True, text=True, timeout=60)
    assert "Too many open files" in held.stderr, held.stderr
    free = subprocess.run(["bash", "-c", f"ulimit -S -n 1024; exec {python} -c {shlex.quote(code)}"], env=env,
                          capture_output=True, text=True, timeout=60)
    assert free.stdout.strip() == "ran", free.stderr


@pytest.mark.parametrize(("name", "streams"), [("none", ""), ("stdin closed", "exec 0<&-"),
                                               ("stderr full", "exec 2>/dev/full"), ("stderr closed", "exec 2>&-")])
def test_the_doctor_itself_runs_holding_1013_descriptors_under_1024(machine: Machine, tmp_path: Path, name: str,
                                                                    streams: str) -> None:
    """Eight descriptors free (nine with a stream closed): the doctor closes its own copies of them (a program keeps the shell's) and reports,
    in time, one JSON object, with its standard input closed and its standard error full or closed too."""
    _hungry_torch(machine, tmp_path)
    before = _holding(1015, 1024) + (f"; {streams}" if streams else "")
    for args in (("check", "--json"), ("check", "--deep", "--json")):
        done = _doctor(machine, *args, before=before, stderr=None if "stderr" in name else subprocess.PIPE)
        assert done.returncode in (0, 1), (name, args, done.returncode, done.stderr)
        report = json.loads(done.stdout)
        assert report["summary"]["exit_code"] == done.returncode
        [said] = _nofile(report)
        left = 9 if "closed" in name else 8  # a stream closed is one descriptor more a program may open
        assert said["severity"] == "error" and f"{left} are left" in said["detail"], said
        if streams:
            assert report["process"]["shell"].get("streams") == name.replace("full", "/dev/full"), \
                report["process"]["shell"]


def test_cuda_itself_refusing_under_them_is_seen_by_plain_check(machine: Machine, tmp_path: Path) -> None:
    """A driver whose cuInit opens 12 descriptors (the real one answered CUDA_ERROR_UNKNOWN with 8 free): plain check
    asks cuInit in a child holding what a program holds, hears it fail, asks once more without them and hears it
    work: CD116, an error seen, not a driver fault (CD110); no framework needed. With room, nothing."""
    from tests.test_process_env import gpu_machine

    gpu_machine(machine, tmp_path, gpus=1, opens=12)
    report = json.loads(_doctor(machine, "check", "--json", before=_holding(1015, 1024)).stdout)
    [said] = _nofile(report)
    assert said["severity"] == "error" and said["evidence"] == "seen", said
    assert "CUDA_ERROR_UNKNOWN" in said["proof"] and "without them" in said["proof"], said
    assert not [f for f in report["findings"] if f["code"] == "CD110"], report["findings"]
    assert report["process"]["cuinit"] == 0 and report["process"]["cuinit_held"] == "CUDA_ERROR_UNKNOWN"
    roomy = json.loads(_doctor(machine, "check", "--json", before=_holding(1015, 8192)).stdout)
    assert not _nofile(roomy) and not roomy["process"].get("cuinit_held")  # not even asked: nothing gives a reason
    assert not [f for f in roomy["findings"] if f["code"].startswith("CD1")], roomy["findings"]  # no cuDNN: CD301


def test_under_a_hard_limit_with_no_room_the_cure_is_closing_them_verified(machine: Machine, tmp_path: Path) -> None:
    """`ulimit -n 1024` sets the hard limit too: no soft limit raised can cure. --deep's children that hold none of
    the inherited descriptors run (a shell that closed them): CD116 seen, and fix's line closes them in the shell,
    verified; sourced there, the framework runs and check --deep is clean of it."""
    _hungry_torch(machine, tmp_path)
    holding = 'ulimit -n 1024; for i in $(seq 3 983); do eval "exec $i</dev/null"; done'
    plan = json.loads(_doctor(machine, "fix", "--json", before=holding).stdout)
    [step] = [a for a in plan["actions"] if a["kind"] == "env"]
    assert step["env"]["bash"] == ['for fd in $(seq 3 983); do exec {fd}>&-; done'], step
    assert step["verified"].startswith("verified here"), step
    after = json.loads(_doctor(machine, "check", "--deep", "--json",
                               before=f"{holding}; {step['env']['bash'][0]}").stdout)
    assert after["process"]["shell"]["descriptors"] == "3", after["process"]["shell"]
    assert not [f for f in after["findings"] if f["code"] == "CD116"], after["findings"]
    assert after["frameworks"][0]["details"]["deep"].get("lstm_ran"), after["frameworks"][0]["details"]["deep"]


def test_a_descriptor_the_command_line_names_is_kept_while_the_others_are_closed(machine: Machine,
                                                                                   tmp_path: Path) -> None:
    """`explain --from-file /dev/fd/5` with descriptor 5 a file the shell opened, among 1013 held: the doctor makes
    room by closing its copies of the others, never the one it was told to read."""
    log = tmp_path / "train.log"
    log.write_text("OSError: [Errno 24] Too many open files: '/x/jaxlib/mlir/dialects/mhlo.py'\n")
    done = _doctor(machine, "explain", "--json", "--from-file=/dev/fd/5",
                   before=f"{_holding(1015, 1024)}; exec 5<{shlex.quote(str(log))}")
    assert done.returncode == 0, done.stderr
    assert "CD116" in done.stdout, done.stdout


@pytest.mark.parametrize("hard", [True, False], ids=["hard limit: closed", "room: raised"])
def test_fix_yes_checks_again_with_its_line_in_force(machine: Machine, tmp_path: Path, hard: bool) -> None:
    """`fix --yes` checks again with its lines in force: the soft limit raised in its own process (its check's
    children inherit it), or the descriptors closed for the programs it starts next; CD116 is gone after."""
    _hungry_torch(machine, tmp_path)
    holding = f'ulimit {"" if hard else "-S "}-n 1024; for i in $(seq 3 983); do eval "exec $i</dev/null"; done'
    plan = json.loads(_doctor(machine, "fix", "--yes", "--json", before=holding).stdout)
    assert "CD116" in plan["before"]["codes"] and "CD116" not in plan["after"]["codes"], plan


def test_deep_runs_the_framework_with_standard_input_closed_where_the_program_has_it_so(machine: Machine,
                                                                                        tmp_path: Path) -> None:
    """A daemon's or `cmd <&-`'s standard input, closed: the framework's child under --deep has descriptor 0 closed
    too (the first file it opens gets 0), and holds as many others as the program does."""
    from tests.test_bisect import BREAKABLE_TORCH

    site = _venv_torch(machine, tmp_path)
    (site / "torch" / "__init__.py").write_text(BREAKABLE_TORCH.replace(
        "def randn(*shape, **kwargs):\n",
        "def randn(*shape, **kwargs):\n    fd = os.open(os.devnull, os.O_RDONLY)\n    os.close(fd)\n"
        "    raise RuntimeError('first file got descriptor %d, stdin %r, %d open' % (fd, __import__('sys').stdin, "
        "len(os.listdir('/proc/self/fd'))))\n"))
    for closed in (True, False):
        before = _holding(40, 1024) + ("; exec 0<&-" if closed else "")
        deep = json.loads(_doctor(machine, "check", "--deep", "--json", before=before).stdout)
        said = deep["frameworks"][0]["details"]["deep"].get("error", "")
        first = int(said.split("first file got descriptor ")[1].split(",")[0])
        # as many held as the program holds (3-40 and the streams; the doctor's answer channel takes one's place)
        assert (first == 0 and "stdin None" in said) if closed else (first >= 40 and "stdin None" not in said), said


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish", "powershell"])
def test_the_closing_line_closes_them_in_each_shell_that_can(shell: str) -> None:
    """bash and zsh run the line and hold none of them after (what a program started there then inherits: its own
    /proc/self/fd); fish and PowerShell cannot close a descriptor by number: a comment says what to do instead."""
    import shutil

    from cudnn_doctor.plan.actions import EnvChange
    from cudnn_doctor.plan.shell import env_lines

    [line] = env_lines((EnvChange("close", "shell", "3-40 45"),), {}, shell)
    if shell in ("fish", "powershell"):
        assert line.startswith("#") and "3-40 45" in line, line
        return
    if shutil.which(shell) is None:
        pytest.skip(f"{shell} is not installed here")
    opened = 'for i in $(seq 3 40) 45; do eval "exec $i</dev/null"; done'  # by a bash: zsh names 0-9 alone so
    done = subprocess.run(["bash", "-c", f'{opened}; exec "$0" -c "$1"', shell, f"{line}; ls /proc/self/fd"],
                          capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    assert sorted(int(fd) for fd in done.stdout.split()) == [0, 1, 2, 3], done.stdout  # 3: ls's own listing


def test_the_cuda_child_holds_exactly_what_a_program_holds(machine: Machine, tmp_path: Path) -> None:
    """At the boundary: a cuInit that opens 12 descriptors works with 12 free and fails with 11, in a program started
    from the shell (ctypes) and in the doctor's child alike: the child holds no more and no fewer than the program."""
    from tests.test_process_env import gpu_machine

    driver = gpu_machine(machine, tmp_path, gpus=1, opens=12)
    program = (f"import ctypes; cuda = ctypes.CDLL({str(driver / 'libcuda.so.1')!r}); "
               "print('cuInit', cuda.cuInit(0))")
    env = {k: v for k, v in machine.env.items() if k != "PYTHONPATH"}
    for free, works in ((12, True), (11, False)):
        shell = _holding(1024 - free - 1, 1024)
        judge = subprocess.run(["bash", "-c", f"{shell}; exec {shlex.quote(sys.executable)} -c {shlex.quote(program)}"],
                               env=env, capture_output=True, text=True, timeout=60)
        assert judge.stdout.strip() == ("cuInit 0" if works else "cuInit 999"), (free, judge.stdout, judge.stderr)
        report = json.loads(_doctor(machine, "check", "--json", before=shell).stdout)
        assert report["process"].get("cuinit_held") == (None if works else "CUDA_ERROR_UNKNOWN"), (free, report["process"])


def test_stdin_closed_is_never_taken_by_what_the_early_start_opens(machine: Machine, tmp_path: Path) -> None:
    """`check <&-`: descriptor 0 is the first free number, and check's early start (NVML's child and its thread,
    before the command line is read) opens descriptors while the command goes on to prepare its streams. Under load
    one of them, a folder being listed, was on 0 when sys.stdin was opened: a traceback and no answer (the
    1013-descriptor test above, once in CI, and 1 run in 75 here under load). Played in that order here: the early
    start holds a folder open on the first free descriptor. The closed stream is /dev/null before anything opens."""
    early = START.replace("from cudnn_doctor.entry import main",
                          "import os; from cudnn_doctor.probes import loader; "
                          "loader.start_nvml_early = lambda: os.open('/', os.O_RDONLY); "
                          "from cudnn_doctor.entry import main")
    env = {k: v for k, v in machine.env.items() if k != "PYTHONPATH"}
    done = subprocess.run(["bash", "-c", f"exec 0<&-; exec {shlex.join([sys.executable, '-c', early])} check --json"],
                          env=env, cwd=machine.cwd, capture_output=True, text=True, timeout=120)
    assert "Traceback" not in done.stderr, done.stderr
    report = json.loads(done.stdout)
    assert report["summary"]["exit_code"] == done.returncode
    assert report["process"]["shell"].get("streams") == "stdin closed", report["process"]["shell"]
