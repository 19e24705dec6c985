"""Issue 44: feedback on waits. `check --deep` says on a terminal's stderr what it waits for (never in JSON, never
when stderr is piped)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import Machine

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="a pseudo-terminal")


def stderr_on_a_terminal(machine: Machine, *args: str) -> tuple[int, bytes, bytes]:
    """(exit code, stdout piped, what the terminal on stderr got) of `cudnn-doctor ARGS`."""
    import pty

    main, child = pty.openpty()
    process = subprocess.Popen([sys.executable, "-m", "cudnn_doctor", *args], stdin=subprocess.DEVNULL,
                               stdout=subprocess.PIPE, stderr=child, env={**machine.env, "TERM": "xterm"},
                               cwd=machine.cwd)
    os.close(child)
    seen = bytearray()
    try:
        while True:
            try:
                chunk = os.read(main, 65536)
            except OSError:  # the child closed the terminal
                break
            if not chunk:
                break
            seen += chunk
        out, _ = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
        os.close(main)
    return process.returncode, out, bytes(seen)


def test_check_deep_says_what_it_waits_for_on_a_terminal(machine: Machine, tmp_path: Path) -> None:
    from tests.test_first_hour import python_with_cpu_torch

    venv = python_with_cpu_torch(tmp_path)
    _code, out, terminal = stderr_on_a_terminal(machine, "check", "--deep", "--python", str(venv / "bin" / "python"))
    assert b"reading the driver" in terminal and b"--deep: waiting for torch" in terminal, terminal
    # the answer on stdout is the report alone (it may quote a framework "under --deep:" as a finding's evidence)
    assert b"--deep: waiting for" not in out and b"reading the driver" not in out and b"first GPU steps" not in out
    _code, out, terminal = stderr_on_a_terminal(machine, "check", "--deep", "--json")
    assert b"reading the driver" not in terminal and out.startswith(b"{")
    piped = machine.run("check", "--deep")
    assert "reading the driver" not in piped.stderr and "--deep" not in piped.stderr
