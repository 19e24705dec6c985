"""Commands in fixes print unbroken on their own line in a narrow terminal, prose wraps at its indent
(issue 16, item 6): `check` runs in a real pseudo-terminal 60 columns wide."""

from __future__ import annotations

import fcntl
import os
import pty
import re
import select
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path

import pytest

from tests.conftest import Machine
from tests.fakes.build import fake_cudnn
from tests.test_check import CUDNN9_SUBLIBS, make_toolkit

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def run_in_terminal(machine: Machine, *args: str, columns: int = 60, timeout: float = 60) -> tuple[int, str]:
    """Run the doctor with a pty of COLUMNS as its terminal; returns the exit code and what the screen got."""
    main, child = pty.openpty()
    fcntl.ioctl(child, termios.TIOCSWINSZ, struct.pack("HHHH", 50, columns, 0, 0))
    env = {key: value for key, value in machine.env.items() if key != "COLUMNS"}  # the terminal's own width
    env["TERM"] = "xterm-256color"
    process = subprocess.Popen([sys.executable, "-m", "cudnn_doctor", *args], stdin=child, stdout=child,
                               stderr=child, env=env, cwd=machine.cwd, start_new_session=True)
    os.close(child)
    chunks = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ready, _, _ = select.select([main], [], [], 0.5)
        if ready:
            try:
                data = os.read(main, 65536)
            except OSError:  # EIO: the child side is closed
                break
            if not data:
                break
            chunks.append(data)
        elif process.poll() is not None:
            break
    os.close(main)
    code = process.wait(timeout=10)
    return code, ANSI.sub("", b"".join(chunks).decode("utf-8", errors="replace")).replace("\r\n", "\n")


def test_fix_commands_are_unbroken_in_60_columns(machine: Machine, tmp_path: Path) -> None:
    toolkit = make_toolkit(machine.root, "13.0.2", 13000)  # holding a cuDNN built for CUDA 12: CD306
    fake_cudnn(toolkit / "lib64", version=91900, cudart=12090, sublibraries=CUDNN9_SUBLIBS)

    code, screen = run_in_terminal(machine, "check", "-v")
    lines = screen.splitlines()
    install = f"cudnn-doctor install --version 9.19.0 --cuda 13 --prefix {toolkit}"  # CD306's fix: the same release
    export = f"export LD_LIBRARY_PATH={toolkit / 'lib64'}${{LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}}"  # not on the path
    assert code == 1, screen  # CD101: this pretend machine has no driver
    for command in (install, export):
        assert len(command) > 40
        found = [line for line in lines if command in line]  # whole, on one line (in each finding it treats)
        assert found and all(line.strip() == command for line in found)  # and alone on it
    headings = ("[", "! Doctor found", "• No issues", "Loader search order:", "Probe time:", "1 can be fixed here:")
    for line in lines:  # nothing continues at column 0: every wrapped line keeps its indent
        assert not line or line.startswith((" ", *headings)), repr(line)
    assert max(len(line.rstrip()) for line in lines if line.strip() not in (install, export)) <= 60

    _, wide = run_in_terminal(machine, "check", "-v", columns=400)  # wide: each command still alone on its line,
    wide_lines = [line.strip() for line in wide.splitlines()]      # with no backticks to paste with it (issue 36)
    assert "`" not in wide and install in wide_lines and export in wide_lines
    assert wide_lines[wide_lines.index(install) - 1] == "Fix:" and wide_lines[wide_lines.index(install) + 1] == "then"


def test_install_plan_command_is_unbroken_in_60_columns(machine: Machine, tmp_path: Path) -> None:
    from tests.install_helpers import make_archive

    archive = make_archive("txz", tmp_path)
    prefix = tmp_path / "a-rather-long-folder-name-for-cudnn" / "prefix"
    code, screen = run_in_terminal(machine, "install", "--from", str(archive), "--prefix", str(prefix), "--dry-run")
    assert code == 0, screen
    export = f"export LD_LIBRARY_PATH={prefix / 'lib64'}${{LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}}"
    [line] = [line for line in screen.splitlines() if export in line]
    assert line.strip() == export
    assert "  loader: not a system folder; programs find it with:" in screen


def test_a_path_s_markup_and_escape_codes_reach_no_terminal(machine: Machine, tmp_path: Path) -> None:
    """Every renderer's dynamic text goes through render/safe.escape: a folder named with rich markup
    and a terminal escape code prints as its characters in check's text, on a terminal and piped."""
    hostile = tmp_path / "gone [" / "] [bold]x\x1b[31mred"  # the path holds "gone [/] [bold]x<ESC>[31mred"
    shown = "gone [/] [bold]x\\x1b[31mred"
    code, screen = run_in_terminal(machine, "check", "--search-path", str(hostile), columns=400)
    assert code == 1 and "internal error" not in screen
    assert shown in screen and "\x1b[31mred" not in screen
    piped = subprocess.run([sys.executable, "-m", "cudnn_doctor", "check", "--search-path", str(hostile)],
                           capture_output=True, text=True, env=machine.env, cwd=machine.cwd, timeout=60)
    assert f"{shown}: no such folder" in piped.stdout and "\x1b" not in piped.stdout


@pytest.mark.parametrize("columns", ["0", "1", "2"])
def test_a_terminal_size_no_terminal_has_still_prints(machine_process: Machine, columns: str) -> None:
    machine = machine_process  # the command's own start reads the environment: a process of its own
    # COLUMNS=0 (a shell or CI exporting it empty-handed) made rich print nothing at all, exit 0: help, check and
    # explain silent (round eight's sealed red-team, read after its figure); now the terminal's own size is taken
    machine.env.update({"COLUMNS": columns, "LINES": "0"})
    for args in (("--help",), ("check", "--help"), ("check",), ("explain", "CUDNN_STATUS_NOT_INITIALIZED")):
        result = machine.run(*args)
        assert result.stdout.strip(), (args, result.exit_code, result.stderr[-300:])


@pytest.mark.parametrize("columns", [1, 2])
def test_a_terminal_that_says_it_is_one_column_wide_still_gets_the_help(machine: Machine, columns: int) -> None:
    """A pty whose own size is 1 or 2 columns (no COLUMNS set: the terminal's ioctl says it): rich printed nothing,
    exit 0 (round fifteen's sealed red-team, read after its figure); the output now comes at 80 columns, wrapped by
    the terminal."""
    code, screen = run_in_terminal(machine, "--help", columns=columns)
    assert code == 0 and "usage" in screen.lower() and "check" in screen, screen[:500]

