"""Shell completion as a user gets it: the script `--show-completion SHELL` prints, sourced in the real bash, zsh and
fish, completes an option's name and an option's value of `cudnn-doctor` (argcomplete on the doctor's side)."""

from __future__ import annotations

import os
import pty
import select
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import Machine

# (what the user typed before pressing Tab, what the line becomes)
LINES = (("cudnn-doctor check --fo", "cudnn-doctor check --format "),
         ("cudnn-doctor check --format p", "cudnn-doctor check --format prometheus "),
         ("cudnn-doctor bench --dtype b", "cudnn-doctor bench --dtype bf16 "))


@pytest.fixture
def shell_machine(machine: Machine, tmp_path: Path) -> Machine:
    """A machine whose PATH has a `cudnn-doctor` that runs this checkout (as the console script of an install would)."""
    bin_folder = tmp_path / "bin"
    bin_folder.mkdir()
    doctor = bin_folder / "cudnn-doctor"
    doctor.write_text(f'#!/bin/sh\nexec {sys.executable} -m cudnn_doctor "$@"\n')
    doctor.chmod(0o755)
    machine.env["PATH"] = f"{bin_folder}:{machine.env['PATH']}"
    return machine


def _script(machine: Machine, shell: str) -> Path:
    result = machine.run("--show-completion", shell)
    assert result.exit_code == 0 and "cudnn-doctor" in result.stdout, result.stderr
    path = machine.cwd / f"completion.{shell}"
    path.write_text(result.stdout)
    return path


def _need(shell: str) -> str:
    found = shutil.which(shell)
    if found is None:
        pytest.skip(f"{shell} is not installed here (.ci/run installs it)")
    return found


def test_bash_completes_through_the_shown_script(shell_machine: Machine) -> None:
    script = _script(shell_machine, "bash")
    steps = [f"source {script}", "complete -p cudnn-doctor"]
    for typed, _ in LINES:
        steps += [f"COMP_LINE='{typed}'", 'COMP_POINT=${#COMP_LINE}', f"COMP_WORDS=({typed})",
                  "COMP_CWORD=$((${#COMP_WORDS[@]} - 1))", "_python_argcomplete cudnn-doctor",
                  'printf "reply:%s\\n" "${COMPREPLY[@]}"']
    process = subprocess.run([_need("bash"), "--norc", "--noprofile", "-c", "\n".join(steps)], capture_output=True,
                             text=True, env=shell_machine.env, cwd=shell_machine.cwd, timeout=60)
    assert process.returncode == 0, process.stderr
    assert "-F _python_argcomplete cudnn-doctor" in process.stdout.splitlines()[0]
    replies = [line.removeprefix("reply:") for line in process.stdout.splitlines()[1:]]
    assert replies == [done.split(" ")[-2] + " " for _, done in LINES], process.stdout


def test_fish_completes_through_the_shown_script(shell_machine: Machine) -> None:
    script = _script(shell_machine, "fish")
    steps = [f"source {script}"] + [f"complete -C'{typed}'; echo ---" for typed, _ in LINES]
    process = subprocess.run([_need("fish"), "--no-config", "-c", "\n".join(steps)], capture_output=True, text=True,
                             env=shell_machine.env, cwd=shell_machine.cwd, timeout=60)
    assert process.returncode == 0, process.stderr
    answers = [[line.split("\t")[0] for line in block.strip().splitlines()] for block in process.stdout.split("---")]
    assert answers[:3] == [[done.split(" ")[-2]] for _, done in LINES], process.stdout
    assert "--format\ttext (default), json" in process.stdout  # fish shows the option's help beside it


def test_zsh_completes_through_the_shown_script(shell_machine: Machine, tmp_path: Path) -> None:
    """zsh completes only inside its line editor: an interactive zsh on a pseudo-terminal gets the keys typed, Tab,
    then a key bound to a widget that writes the edited line to a file."""
    script = _script(shell_machine, "zsh")
    lines = tmp_path / "lines"
    main, child = pty.openpty()
    env = {**shell_machine.env, "TERM": "dumb"}
    process = subprocess.Popen([_need("zsh"), "-f", "-i"], stdin=child, stdout=child, stderr=child, env=env,
                               cwd=shell_machine.cwd, start_new_session=True)
    os.close(child)
    screen = b""
    try:
        os.write(main, (f"autoload -U compinit && compinit -u -D\nsource {script}\n"
                        f"dump() {{ print -r -- \"$BUFFER\" >> {lines}; BUFFER=''; }}; zle -N dump; bindkey '^O' dump\n"
                        ).encode())
        for typed, _ in LINES:
            os.write(main, f"{typed}\t\x0f".encode())  # typed ahead: the line editor reads Tab, then ^O after it
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and (not lines.exists() or len(lines.read_text().splitlines()) < len(LINES)):
            if select.select([main], [], [], 0.1)[0]:
                try:
                    screen += os.read(main, 65536)
                except OSError:
                    break
    finally:
        process.kill()
        process.wait(timeout=10)
        os.close(main)
    assert lines.exists(), screen.decode(errors="replace")[-2000:]
    assert lines.read_text().splitlines() == [done for _, done in LINES], screen.decode(errors="replace")[-2000:]
