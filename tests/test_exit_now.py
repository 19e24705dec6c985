"""The command's process leaves as soon as its answer is out (entry.command: the console script and `python -m
cudnn_doctor`), without Python's teardown of every module and object it made; nothing Python's exit would keep is
lost: the exit handlers run, the standard streams are flushed, the status is the command's, and where a stream cannot
be flushed Python's own exit says so as before. A program that calls entry.main() itself keeps Python's exit."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT

# An object whose finalizer only Python's teardown of the modules runs (it is alive to the end), and an exit handler
# registered before the command: the first says whether the teardown ran, the second that the handlers still run.
PROGRAM = """
import atexit, builtins, os, sys
sys.argv = ["cudnn-doctor", *sys.argv[2:]]
class Teardown:
    def __del__(self):
        os.write(2, b"TEARDOWN\\n")
builtins._s26_teardown = Teardown()
atexit.register(lambda: sys.stderr.write("EXIT HANDLER\\n"))
from cudnn_doctor import entry
getattr(entry, ENTRY)()
"""


def run(entry: str, *args: str, stdout: int | None = subprocess.PIPE, cwd: Path | None = None) -> \
        subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return subprocess.run([sys.executable, "-c", PROGRAM.replace("ENTRY", repr(entry)), "-", *args], stdout=stdout,
                          stderr=subprocess.PIPE, text=True, env=env, cwd=cwd, timeout=120)


def test_the_command_leaves_without_the_teardown_and_loses_nothing(tmp_path: Path) -> None:
    now, before = run("command", "check", "--json", cwd=tmp_path), run("main", "check", "--json", cwd=tmp_path)
    assert "TEARDOWN" in before.stderr and "TEARDOWN" not in now.stderr  # the teardown skipped, and only there
    for done in (now, before):
        assert done.stderr.count("EXIT HANDLER") == 1, done.stderr[-2000:]  # run once, as Python's exit runs it
        report = json.loads(done.stdout)  # the whole answer, flushed
        assert done.returncode == report["summary"]["exit_code"]
    assert now.returncode == before.returncode


@pytest.mark.parametrize("args", [("--version",), ("nosuch",), ("check", "--no-such-option")])
def test_the_status_and_the_streams_are_the_commands(args: tuple[str, ...], tmp_path: Path) -> None:
    now, before = run("command", *args, cwd=tmp_path), run("main", *args, cwd=tmp_path)
    assert (now.returncode, now.stdout) == (before.returncode, before.stdout)
    assert now.stderr.replace("TEARDOWN\n", "") == before.stderr.replace("TEARDOWN\n", "")


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="no /dev/full")
def test_a_stream_that_cannot_be_flushed_ends_as_python_ends_it(tmp_path: Path) -> None:
    """stdout on a full device: the answer cannot be written; the status and what stderr says are Python's exit's (or
    the doctor's own), as with main(), not a silent 0."""
    with open("/dev/full", "w") as full:
        now = run("command", "--version", stdout=full.fileno(), cwd=tmp_path)
        before = run("main", "--version", stdout=full.fileno(), cwd=tmp_path)
    assert now.returncode == before.returncode != 0
    assert now.stderr.replace("TEARDOWN\n", "") == before.stderr.replace("TEARDOWN\n", "")


def test_python_m_and_the_console_script_run_the_command(tmp_path: Path) -> None:
    """`python -m cudnn_doctor` leaves without the teardown (the object made by a sitecustomize at the interpreter's
    start), its answer whole; the console script pip writes calls the same function."""
    import tomllib

    (tmp_path / "site").mkdir()
    (tmp_path / "site" / "sitecustomize.py").write_text(PROGRAM.split("from cudnn_doctor")[0].replace(
        'sys.argv = ["cudnn-doctor", *sys.argv[2:]]', ""))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path / "site"), str(ROOT)])}
    done = subprocess.run([sys.executable, "-m", "cudnn_doctor", "check", "--json"], capture_output=True, text=True,
                          env=env, cwd=tmp_path, timeout=120)
    assert "EXIT HANDLER" in done.stderr and "TEARDOWN" not in done.stderr, done.stderr[-2000:]
    assert json.loads(done.stdout)["summary"]["exit_code"] == done.returncode
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts["cudnn-doctor"] == "cudnn_doctor.entry:command"
