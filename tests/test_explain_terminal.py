"""explain - reading a terminal (round eighteen's published red-team, class stdinsrc; not blind): a terminal whose
other side closed (the read answers EIO, as Linux's pty does after a hang-up) ends the input with what came, as
Ctrl-D does; a terminal another program set non-blocking (the read answers EAGAIN) is waited on until the person
types. Both were internal errors or blamed an address-space limit before. The real kernel's pty is the judge."""

from __future__ import annotations

import fcntl
import json
import os
import pty
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MESSAGE = b"RuntimeError: cuDNN error: CUDNN_STATUS_NOT_INITIALIZED\n"


def _explain_on_a_terminal(typed: bytes, then_close: bool, nonblocking: bool = False, late: float = 0.0
                           ) -> subprocess.CompletedProcess[str]:
    master, slave = pty.openpty()
    if nonblocking:
        fcntl.fcntl(slave, fcntl.F_SETFL, fcntl.fcntl(slave, fcntl.F_GETFL) | os.O_NONBLOCK)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    child = subprocess.Popen([sys.executable, "-m", "cudnn_doctor", "explain", "-", "--json"], stdin=slave,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        time.sleep(late)
        os.write(master, typed)
        if then_close:
            # the kernel drops what the child has not read when the terminal hangs up: closed once it has read it all
            # (the terminal's input queue, FIONREAD on its slave side, empty), so the test is the doctor's, not the
            # scheduler's
            waiting = time.monotonic() + 30
            arrived = time.monotonic() + 2  # (or already read: then nothing is left to wait for)
            while time.monotonic() < arrived and typed and not _unread(slave) and child.poll() is None:
                time.sleep(0.01)  # the line discipline has the bytes (they arrive a moment after the write)
            while time.monotonic() < waiting and _unread(slave):
                time.sleep(0.02)  # and the child has read them
            os.close(master)
            master = -1
        else:
            os.write(master, b"\x04")  # Ctrl-D on a line of its own
        out, err = child.communicate(timeout=60)
    finally:
        os.close(slave)
        if master >= 0:
            os.close(master)
    return subprocess.CompletedProcess(child.args, child.returncode, out, err)


def _unread(fd: int) -> int:
    import array
    import termios

    count = array.array("i", [0])
    fcntl.ioctl(fd, termios.FIONREAD, count)
    return count[0]


def test_a_terminal_that_hangs_up_ends_the_input_with_what_came() -> None:
    done = _explain_on_a_terminal(MESSAGE, then_close=True)
    assert done.returncode in (0, 1), done.stderr
    answer = json.loads(done.stdout)
    assert answer["matches"] and answer["matches"][0]["code"].startswith("CD3"), answer


def test_a_terminal_that_hangs_up_before_anything_is_typed_is_nothing_to_explain() -> None:
    done = _explain_on_a_terminal(b"", then_close=True)
    assert done.returncode == 2 and "internal error" not in done.stderr, done.stderr
    assert json.loads(done.stdout)["error"]["code"] == "CD003", done.stdout


def test_a_non_blocking_terminal_is_waited_on_until_the_message_is_typed() -> None:
    done = _explain_on_a_terminal(MESSAGE, then_close=False, nonblocking=True, late=1.0)
    assert done.returncode in (0, 1) and "address-space" not in done.stderr, done.stderr
    assert json.loads(done.stdout)["matches"][0]["code"].startswith("CD3"), done.stdout
