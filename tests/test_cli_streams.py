"""Closed and full standard streams (issue 22, class 2): each a clean outcome with a documented exit
code, never a traceback or an "internal error". Standard output that cannot be written: exit 74 and one
line on standard error; standard error that cannot be written changes nothing; standard input closed:
nothing to read (exit 2)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import Machine, Result

OUTPUT_LOST = 74
COMMANDS = [
    ("check", "--json"), ("check",), ("check", "--format", "junit"), ("check", "--format", "github"),
    ("compat", "torch==2.5.1", "--cuda", "12.4"), ("compat", "torch==2.5.1", "--json"),
    ("compat", "--list", "cudnn"), ("explain", "CD301"), ("explain", "CD301", "--json", "--offline-only"),
    ("fleet", "merge", "--json", "{reports}"), ("--version",), ("--help",), ("check", "--help"),
]
USAGE_ERRORS = [
    ("check", "--json", "--no-such-option"), ("check", "--json", "--require", "cudnn>>9"),
    ("compat", "torch==2.5.1", "--cuda", "banana", "--json"), ("explain", "--json", "--from-file", "/no/such/log"),
]


def run(machine: Machine, args: tuple[str, ...], close: tuple[int, ...] = (), stdout: object = subprocess.PIPE,
        stderr: object = subprocess.PIPE) -> Result:
    reports = machine.cwd / "reports"
    if not reports.exists():
        reports.mkdir()
        (reports / "node1.json").write_text(json.dumps({"schema": "cudnn-doctor/report/1", "host": {"hostname": "a"}}))
    args = tuple(str(reports) if arg == "{reports}" else arg for arg in args)

    def close_them() -> None:
        for fd in close:
            os.close(fd)

    process = subprocess.run([sys.executable, "-m", "cudnn_doctor", *args], env=machine.env, cwd=machine.cwd,
                             stdin=subprocess.DEVNULL, stdout=stdout, stderr=stderr, preexec_fn=close_them,
                             timeout=120)
    out = process.stdout.decode() if isinstance(process.stdout, bytes) else ""
    err = process.stderr.decode() if isinstance(process.stderr, bytes) else ""
    return Result(process.returncode, out, err)


def assert_clean(result: Result) -> None:
    assert "Traceback" not in result.stderr and "internal error" not in result.stderr, result.stderr
    assert "Exception ignored" not in result.stderr, result.stderr


@pytest.mark.parametrize("args", COMMANDS, ids=" ".join)
def test_closed_stdout_is_exit_74_with_one_line(machine: Machine, args: tuple[str, ...]) -> None:
    result = run(machine, args, close=(1,), stdout=None)
    assert_clean(result)
    assert result.exit_code == OUTPUT_LOST, result.stderr
    assert result.stderr.strip().splitlines()[-1] == \
        "cudnn-doctor: error: standard output is closed: the output was not written"


@pytest.mark.parametrize("args", COMMANDS, ids=" ".join)
def test_stdout_on_a_full_disk_is_exit_74_with_one_line(machine: Machine, args: tuple[str, ...]) -> None:
    with open("/dev/full", "wb") as full:
        result = run(machine, args, stdout=full)
    assert_clean(result)
    assert result.exit_code == OUTPUT_LOST, result.stderr
    assert "No space left on device: the output was not written" in result.stderr.strip().splitlines()[-1]


def test_closed_stdout_does_not_matter_when_the_output_goes_to_a_file(machine: Machine) -> None:
    target = machine.cwd / "doctor.prom"
    result = run(machine, ("check", "--format", "prometheus", "--output", str(target)), close=(1,), stdout=None)
    assert_clean(result)
    assert result.exit_code == 1 and "cudnn_doctor_exit_code 1" in target.read_text()  # no driver: an error


@pytest.mark.parametrize("where", ["closed", "full"])
@pytest.mark.parametrize("args", USAGE_ERRORS, ids=" ".join)
def test_a_usage_error_without_stderr_is_still_exit_2_with_its_json_object(machine: Machine, args: tuple[str, ...],
                                                                           where: str) -> None:
    if where == "closed":
        result = run(machine, args, close=(2,), stderr=None)
    else:
        with open("/dev/full", "wb") as full:
            result = run(machine, args, stderr=full)
    assert result.exit_code == 2
    answer = json.loads(result.stdout)
    assert answer["exit_code"] == 2 and answer["schema"] == "cudnn-doctor/error/1"


def test_stderr_closed_does_not_change_a_check(machine: Machine) -> None:
    result = run(machine, ("check", "--json"), close=(2,), stderr=None)
    assert result.exit_code == 1 and json.loads(result.stdout)["summary"]["exit_code"] == 1


@pytest.mark.parametrize("args", [("explain", "-"), ("explain", "-", "--json"), ("explain",)], ids=" ".join)
def test_explain_with_stdin_closed_has_nothing_to_read(machine: Machine, args: tuple[str, ...]) -> None:
    result = run(machine, args, close=(0,))
    assert_clean(result)
    assert result.exit_code == 2 and "nothing to explain" in result.stderr
    if "--json" in args:
        assert json.loads(result.stdout)["exit_code"] == 2


def test_readme_documents_each_exit_code() -> None:
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    section = readme.split("## Exit codes", 1)[1].split("\n## ", 1)[0]
    for code in ("0", "1", "2", "3", "74", "129", "130", "141", "143"):
        assert f"\n| {code} |" in section, code


def waiting_for_the_reader(pid: int) -> bool | None:
    """Whether process PID sleeps in select() or poll() (a write end waited on); None where /proc tells neither."""
    numbers = {"x86_64": (7, 23, 270, 271), "aarch64": (72, 73)}.get(os.uname().machine)  # poll, select, pselect6, ppoll
    try:
        number = open(f"/proc/{pid}/syscall", encoding="ascii").read().split()[0]
        if number.isdigit() and numbers:
            return int(number) in numbers
    except (OSError, IndexError):
        pass
    try:
        channel = open(f"/proc/{pid}/wchan", encoding="ascii").read()
    except OSError:
        return None
    return ("select" in channel or "poll" in channel) if channel not in ("", "0") else None


def test_a_non_blocking_stdout_that_fills_up_is_waited_for(machine: Machine) -> None:
    """A parent that set O_NONBLOCK on the pipe (some CI runners do, for their own end): the doctor's writes
    meet EAGAIN when the pipe is full; it waits for the reader instead of failing."""
    import time

    def non_blocking() -> None:
        os.set_blocking(1, False)

    process = subprocess.Popen([sys.executable, "-m", "cudnn_doctor", "compat", "--list", "pytorch", "-v"],
                               env=machine.env, cwd=machine.cwd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, preexec_fn=non_blocking)
    # the pipe (64 KiB) fills: the doctor is then waiting in select() for the reader, not failing. Seen as it
    # happens (its syscall, or its wait channel), within 20 s; where /proc shows neither, 3 s are waited out
    deadline = time.monotonic() + (20 if waiting_for_the_reader(process.pid) is not None else 3)
    while time.monotonic() < deadline and process.poll() is None and not waiting_for_the_reader(process.pid):
        time.sleep(0.02)
    out, err = process.communicate(timeout=120)
    assert process.returncode == 0, err.decode()[-500:]
    assert len(out) > 64 * 1024 and out.decode() == machine.run("compat", "--list", "pytorch", "-v").stdout


def test_what_a_sitecustomize_printed_as_python_started_is_not_in_the_json(tmp_path: Path) -> None:
    """A sitecustomize module on PYTHONPATH that prints as the interpreter starts: its words, held in Python's own
    buffer, went out at the interpreter's last flush, after the doctor's JSON (two documents on stdout). They go to
    standard error; standard output is the doctor's one JSON object."""
    machine = Machine(tmp_path)
    (tmp_path / "custom").mkdir()
    (tmp_path / "custom" / "sitecustomize.py").write_text("print('sitecustomize says hello')\n")
    machine.env["PYTHONPATH"] += os.pathsep + str(tmp_path / "custom")
    machine.env.pop("PYTHONUNBUFFERED", None)
    for args in (("check", "--json"), ("explain", "CD104", "--json")):
        result = machine.run(*args)
        assert isinstance(json.loads(result.stdout), dict), result.stdout[-300:]
        assert "sitecustomize says hello" in result.stderr


def test_explain_on_a_write_only_standard_input_says_it_cannot_read_it(machine: Machine, tmp_path: Path) -> None:
    # `explain -` where the shell opened stdin for writing only (`explain - 0>file`): the system refuses the read
    # (EBADF), which was an internal error (round eight's sealed red-team, read after its figure)
    target = tmp_path / "out.txt"
    with open(target, "wb") as write_only:
        done = subprocess.run([sys.executable, "-m", "cudnn_doctor", "explain", "-", "--offline-only"],
                              stdin=write_only, capture_output=True, text=True, env=machine.env, cwd=machine.cwd,
                              timeout=60)
    assert done.returncode == 2 and "internal error" not in done.stderr.lower(), done.stderr
    assert "standard input cannot be read" in done.stderr and "--from-file" in done.stderr
