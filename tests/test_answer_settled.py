"""A command's one answer (JSON, JUnit XML, Prometheus text) is written and settled as one step as far as signals go:
a SIGINT or SIGTERM that lands while it is written, or between its last byte and settle(), leaves the command's own
exit status beside a whole answer (round sixteen's red-team: exit 130 beside a whole report that said nothing of it);
where the write fails, the signal still ends the command with 128 + N."""

from __future__ import annotations

import subprocess
import sys

from tests.conftest import ROOT

SCRIPT = r"""
import os, signal, sys
from cudnn_doctor import signals
from cudnn_doctor.render import json_out
signals.install()
real = sys.stdout
class Landing:  # the signals land inside the answer's own write and flush
    def write(self, text):
        os.kill(os.getpid(), signal.SIGINT)
        return real.write(text)
    def flush(self):
        real.flush()
        os.kill(os.getpid(), signal.SIGTERM)
        if FAIL:
            raise BrokenPipeError
sys.stdout = Landing()
FAIL = sys.argv[1] == "fail"
try:
    json_out.write_document('{"status": "ok"}\n')
except signals.Interrupted as error:
    sys.stdout = real
    print("interrupted", error.signum, file=sys.stderr)
    sys.exit(signals.exit_code(error))
except BrokenPipeError:
    sys.stdout = real
    print("broken pipe", signals.received(), file=sys.stderr)
    sys.exit(141)
print("settled", signals.settled(), file=sys.stderr)
"""


def _run(mode: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", SCRIPT, mode], capture_output=True, text=True, cwd=ROOT, timeout=60,
                          env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})


def test_a_signal_while_the_answer_is_written_leaves_the_answer_and_its_exit_status() -> None:
    done = _run("ok")
    assert done.returncode == 0 and done.stdout == '{"status": "ok"}\n', done
    assert "settled True" in done.stderr and "Traceback" not in done.stderr, done.stderr


def test_where_the_write_fails_the_failure_is_what_ends_it_and_the_signal_is_kept() -> None:
    done = _run("fail")
    assert done.returncode == 141 and "broken pipe 2" in done.stderr, done  # SIGINT (2) received, recorded


def test_once_settled_a_signal_in_the_interpreters_own_exit_does_not_kill_the_command() -> None:
    """Python's finalization puts SIG_DFL back for a signal whose handler is a Python function: a SIGINT landing then
    killed the command (exit -2) after its whole answer. Settled in the command's process (install() ran), the stop
    signals are ignored by the kernel; in a program that calls the doctor in-process its handlers stay its own."""
    script = r"""
import os, signal, sys
from cudnn_doctor import signals
own = signal.getsignal(signal.SIGINT)
if sys.argv[1] == "command":
    signals.install()
signals.settle()
print(signal.getsignal(signal.SIGINT) == signal.SIG_IGN, signal.getsignal(signal.SIGINT) is own)
sys.stdout.flush()
os.kill(os.getpid(), signal.SIGTERM) if sys.argv[1] == "command" else None
"""
    done = subprocess.run([sys.executable, "-c", script, "command"], capture_output=True, text=True, timeout=60,
                          env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0 and done.stdout.split()[0] == "True", done  # ignored, whatever it was at start
    done = subprocess.run([sys.executable, "-c", script, "library"], capture_output=True, text=True, timeout=60,
                          env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0 and done.stdout.split()[1] == "True", done  # its own handler, as it was


def test_ctrl_c_in_the_packages_first_imports_ends_the_command_as_any_ctrl_c(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """A SIGINT landing while cudnn_doctor/__init__.py runs (before entry installs its handlers) is stood in for by a
    module it imports that raises KeyboardInterrupt: the command ends 130 with no traceback; a program importing the
    package gets its KeyboardInterrupt."""
    standin = tmp_path / "standin"  # on PYTHONPATH, not the working folder: the command leaves that off sys.path
    standin.mkdir()
    (standin / "resource.py").write_text("raise KeyboardInterrupt\n")
    env = {"PYTHONPATH": f"{standin}:{ROOT}", "PATH": "/usr/bin:/bin"}
    done = subprocess.run([sys.executable, "-m", "cudnn_doctor", "--version"], capture_output=True, text=True,
                          timeout=60, env=env, cwd=tmp_path)
    assert done.returncode == 130 and "Traceback" not in done.stderr, done
    done = subprocess.run([sys.executable, "-c", "import cudnn_doctor"], capture_output=True, text=True, timeout=60,
                          env=env, cwd=tmp_path)
    assert done.returncode == -2 and "KeyboardInterrupt" in done.stderr, done  # Python's own end: by SIGINT
