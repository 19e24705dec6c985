"""SIGINT, SIGTERM and SIGHUP end every command at once (issue 22, class 1): exit 128 + the signal's
number, every process the command started gone (probe and bench children, what they started in other
sessions too), and the files it was writing as they were before."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import Machine
from tests.fakes.build import fake_cudnn
from tests.test_bench_cli import fakes
from tests.test_probes_hostile import marked, survivors

SIGNALS = [(signal.SIGINT, 130), (signal.SIGTERM, 143), (signal.SIGHUP, 129)]


def hanging_library(machine: Machine, tmp_path: Path) -> Path:
    """A libcudnn whose load starts a detached process (another session) and whose first call hangs."""
    library = fake_cudnn(tmp_path / "hang", version=90100, hang=True, daemon=1)
    machine.env["CUDNN_DOCTOR_PROBE_TIMEOUT"] = "300"
    machine.env["CUDNN_DOCTOR_BENCH_TIMEOUT"] = "300"
    return library


def from_a_terminal() -> None:
    """The command as a terminal's shell starts it: SIGHUP at its default. A suite run under `nohup` (or from
    a shell's background job) hands its children SIGHUP ignored, and the doctor keeps what it was handed."""
    signal.signal(signal.SIGHUP, signal.SIG_DFL)


def under_nohup() -> None:
    signal.signal(signal.SIGHUP, signal.SIG_IGN)


def start(machine: Machine, *args: str, started: Callable[[], None] = from_a_terminal) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "cudnn_doctor", *args], env=machine.env, cwd=machine.cwd,
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=started)


def wait_for_children(process: subprocess.Popen[str], mark: str) -> None:
    """Until the command has started a child that hangs in the library (its daemon included)."""
    for _ in range(600):
        if len([pid for pid in survivors(mark) if pid != process.pid]) >= 2:
            return
        assert process.poll() is None, process.communicate()
        time.sleep(0.05)
    raise AssertionError("the command started no child")


def interrupt(machine: Machine, mark: str, signum: int, *args: str) -> tuple[int, str, str]:
    process = start(machine, *args)
    try:
        wait_for_children(process, mark)
        process.send_signal(signum)
        # the children would hang for 300 s: an answer at all means the signal ended the command
        out, err = process.communicate(timeout=60)
        return process.returncode, out, err
    finally:
        if process.poll() is None:
            process.kill()
        for pid in survivors(mark):
            os.kill(pid, signal.SIGKILL)


@pytest.mark.parametrize(("signum", "expected"), SIGNALS, ids=["SIGINT", "SIGTERM", "SIGHUP"])
def test_check_ends_on_a_signal_with_its_children_and_leaves_its_output_file_alone(
        machine: Machine, tmp_path: Path, signum: int, expected: int) -> None:
    mark = marked(machine)
    machine.add_library_path(hanging_library(machine, tmp_path).parent)
    target = tmp_path / "out" / "cudnn_doctor.prom"
    target.parent.mkdir()
    target.write_text("# the last good scrape\n")
    exit_code, out, err = interrupt(machine, mark, signum, "check", "--format", "prometheus", "--output", str(target))
    remaining = survivors(mark)
    assert exit_code == expected, err
    assert remaining == []
    assert "Traceback" not in err and f"interrupted ({signal.Signals(signum).name})" in err
    assert target.read_text() == "# the last good scrape\n" and os.listdir(target.parent) == [target.name]


@pytest.mark.parametrize(("signum", "expected"), SIGNALS, ids=["SIGINT", "SIGTERM", "SIGHUP"])
def test_check_json_says_it_was_interrupted(machine: Machine, tmp_path: Path, signum: int, expected: int) -> None:
    mark = marked(machine)
    hanging_library(machine, tmp_path)
    exit_code, out, err = interrupt(machine, mark, signum, "check", "--json", "--search-path", str(tmp_path / "hang"))
    assert exit_code == expected and survivors(mark) == []
    answer = json.loads(out)
    assert answer["exit_code"] == expected and answer["error"]["title"] == "Interrupted"


@pytest.mark.parametrize(("signum", "expected"), SIGNALS, ids=["SIGINT", "SIGTERM", "SIGHUP"])
def test_bench_ends_on_a_signal_with_its_child(machine: Machine, tmp_path: Path, signum: int, expected: int) -> None:
    mark = marked(machine)
    library = hanging_library(machine, tmp_path)
    options = fakes()
    options[1] = str(library)  # --cudnn: a library whose first call hangs
    exit_code, out, err = interrupt(machine, mark, signum, "bench", "--json", "--size", "tiny", "--no-cpu", *options)
    assert exit_code == expected, err
    assert survivors(mark) == []


@pytest.mark.parametrize(("signum", "expected"), SIGNALS, ids=["SIGINT", "SIGTERM", "SIGHUP"])
def test_explain_ends_on_a_signal_while_it_probes(machine: Machine, tmp_path: Path, signum: int,
                                                  expected: int) -> None:
    mark = marked(machine)
    machine.add_library_path(hanging_library(machine, tmp_path).parent)
    exit_code, out, err = interrupt(machine, mark, signum, "explain",
                                    "Could not load dynamic library 'libcudnn.so.8'")
    assert exit_code == expected, err
    assert survivors(mark) == []


def test_under_nohup_a_sighup_changes_nothing(machine: Machine, tmp_path: Path) -> None:
    """`nohup cudnn-doctor check &`: the hang-up the user asked to ignore is ignored; the check ends as it
    would have (the hanging library cut off at its probe deadline), not with 129."""
    mark = marked(machine)
    machine.add_library_path(hanging_library(machine, tmp_path).parent)
    machine.env["CUDNN_DOCTOR_PROBE_TIMEOUT"] = "3"
    process = start(machine, "check", "--json", started=under_nohup)
    try:
        wait_for_children(process, mark)
        process.send_signal(signal.SIGHUP)
        out, err = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
        for pid in survivors(mark):
            os.kill(pid, signal.SIGKILL)
    report = json.loads(out)
    assert process.returncode == report["summary"]["exit_code"] != 129, err
    assert "interrupted" not in err and survivors(mark) == []


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP])
def test_a_signal_after_the_answer_is_written_whole_changes_nothing(signum: int) -> None:
    """The command's one document written whole, a signal while the doctor ends (its children stopped, its caches
    closed): the exit status stays the answer's, and nothing is printed after it. It was 128 + N beside a plan that
    said nothing of an interruption (the round-thirteen red-team's `fix --json` under SIGTERM)."""
    code = (
        "import os, sys, time\n"
        "from cudnn_doctor import runner\n"
        "from cudnn_doctor.render.json_out import write_json\n"
        "def body():\n"
        "    write_json({'schema': 'cudnn-doctor/plan/1', 'exit_code': 1})\n"
        f"    os.kill(os.getpid(), {int(signum)})\n"
        "    time.sleep(0.3)\n"
        "    return 1\n"
        "runner.run(body, lambda: True)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                          cwd=Path(__file__).resolve().parent.parent)
    assert done.returncode == 1, (done.returncode, done.stderr)
    assert json.loads(done.stdout) == {"schema": "cudnn-doctor/plan/1", "exit_code": 1}
    assert "interrupted" not in done.stderr, done.stderr


def test_a_signal_the_command_went_on_past_does_not_outweigh_its_whole_answer() -> None:
    """A signal received where it could not stop the command (Python defers one raised in a callback; here a
    block that swallows it), then the answer written whole: the status is the answer's, as in the test above."""
    code = (
        "import os, time\n"
        "from cudnn_doctor import runner\n"
        "from cudnn_doctor.render.json_out import write_json\n"
        "def body():\n"
        "    try:\n"
        "        os.kill(os.getpid(), 15)\n"
        "        time.sleep(0.3)\n"
        "    except KeyboardInterrupt:\n"
        "        pass\n"
        "    write_json({'schema': 'cudnn-doctor/report/1', 'exit_code': 0})\n"
        "    return 0\n"
        "runner.run(body, lambda: True)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                          cwd=Path(__file__).resolve().parent.parent)
    assert done.returncode == 0, (done.returncode, done.stderr)
    assert json.loads(done.stdout) == {"schema": "cudnn-doctor/report/1", "exit_code": 0}


def test_a_sigint_in_the_first_imports_ends_with_130_and_no_traceback(monkeypatch: pytest.MonkeyPatch,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    """Ctrl-C 0.02 s after the start, before the doctor's own handlers are installed (Python's default handler raises
    KeyboardInterrupt inside the first imports): a traceback of the imports it cut, exit 1 (round fifteen's sealed
    red-team, read after its figure). Now the command ends as on any SIGINT: 130, nothing on stderr. The interrupt is
    raised where the real one landed, in the step before the handlers (entry's first)."""
    from cudnn_doctor import entry

    def cut() -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(entry, "_working_folder_off_sys_path", cut)
    with pytest.raises(SystemExit) as done:
        entry.main()
    assert done.value.code == 130
    assert "Traceback" not in capsys.readouterr().err
