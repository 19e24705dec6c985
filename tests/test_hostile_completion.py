"""The completion entry point under what a shell, a user's folder or a hostile environment hands it: a COMP_POINT
that is no number or lies past the line, an unclosed quote ending in a backslash, a file name that is not UTF-8.
The shell gets completions or none; never a traceback, which it would print over the line being typed."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import Machine


def _complete(machine: Machine, line: str, point: str | None, **extra: str) -> tuple[int, str, str]:
    answers = machine.cwd / "answers"
    env = {**machine.env, "_ARGCOMPLETE": "1", "COMP_LINE": line, "_ARGCOMPLETE_IFS": "\n",
           "_ARGCOMPLETE_STDOUT_FILENAME": str(answers), **extra}
    if point is not None:
        env["COMP_POINT"] = point
    process = subprocess.run([sys.executable, "-m", "cudnn_doctor"], capture_output=True, text=True, env=env,
                             cwd=machine.cwd, timeout=60, stdin=subprocess.DEVNULL)
    read = answers.read_text(encoding="utf-8") if answers.exists() else ""
    return process.returncode, read, process.stdout + process.stderr


@pytest.mark.parametrize("point", ["abc", "", "1e309", "-1", "\u0663", "99999999999999999999999", None])
def test_a_cursor_that_is_no_number_or_past_the_line_completes_at_the_lines_end(machine: Machine,
                                                                                point: str | None) -> None:
    code, answers, printed = _complete(machine, "cudnn-doctor check --format p", point)
    assert code == 0 and printed == "", printed
    assert answers.split() == ["prometheus"]


@pytest.mark.parametrize("line", ['cudnn-doctor "a\\', "cudnn-doctor 'unclosed", "cudnn-doctor \x1b[31m"])
def test_a_line_argcomplete_cannot_split_gets_no_traceback(machine: Machine, line: str) -> None:
    code, _answers, printed = _complete(machine, line, str(len(line)))
    assert code in (0, 1) and "Traceback" not in printed and printed == "", printed


def test_a_file_name_that_is_not_utf8_leaves_the_others_completed(machine: Machine) -> None:
    """argcomplete's own file completer decodes bash's answer as UTF-8 and dies on the first other name."""
    folder = machine.cwd / "images"
    folder.mkdir()
    (folder / "ubuntu.tar").write_bytes(b"")
    (folder / "sub").mkdir()
    os.mkdir(os.fsencode(folder) + b"/caf\xe9")
    (folder / ".hidden").write_bytes(b"")
    code, answers, printed = _complete(machine, "cudnn-doctor image images/", None)
    assert code == 0 and printed == "", printed
    assert [line for line in answers.splitlines() if line.startswith("images/")] == ["images/sub/", "images/ubuntu.tar"]


def test_bad_protocol_variables_are_no_traceback(machine: Machine) -> None:
    code, answers, printed = _complete(machine, "cudnn-doctor check --format p", "29", _ARGCOMPLETE="x")
    assert code == 0 and printed == "" and answers.split() == ["prometheus"], printed


def test_no_comp_line_is_no_completion(tmp_path: Path, machine: Machine) -> None:
    env = {**machine.env, "_ARGCOMPLETE": "1", "_ARGCOMPLETE_STDOUT_FILENAME": str(tmp_path / "answers")}
    process = subprocess.run([sys.executable, "-m", "cudnn_doctor"], capture_output=True, text=True, env=env,
                             cwd=tmp_path, timeout=60, stdin=subprocess.DEVNULL)
    assert process.returncode == 1 and process.stdout + process.stderr == ""


def _need(shell: str) -> str:
    import shutil

    found = shutil.which(shell)
    if found is None:
        pytest.skip(f"{shell} is not installed here (.ci/run installs it)")
    return found


def test_fish_with_xdg_config_home_completes_from_where_it_was_installed(machine: Machine, tmp_path: Path) -> None:
    """fish reads completions from $XDG_CONFIG_HOME/fish where that is set: a script put in ~/.config/fish was
    never read. The real fish, started as a user's would be, completes through the installed file alone."""
    bin_folder = tmp_path / "bin"
    bin_folder.mkdir()
    (bin_folder / "cudnn-doctor").write_text(f'#!/bin/sh\nexec {sys.executable} -m cudnn_doctor "$@"\n')
    (bin_folder / "cudnn-doctor").chmod(0o755)
    machine.env["PATH"] = f"{bin_folder}:{machine.env['PATH']}"
    machine.env["XDG_CONFIG_HOME"] = str(tmp_path / "xdg")
    result = machine.run("--install-completion", "fish")
    assert result.exit_code == 0, result.stderr
    assert (tmp_path / "xdg" / "fish" / "completions" / "cudnn-doctor.fish").is_file()
    process = subprocess.run([_need("fish"), "-c", "complete -C'cudnn-doctor check --format p'"],
                             capture_output=True, text=True, env=machine.env, cwd=tmp_path, timeout=60)
    assert [line.split("\t")[0] for line in process.stdout.splitlines()] == ["prometheus"], process.stderr


def test_zsh_with_zdotdir_gets_the_line_in_the_zshrc_it_reads(machine: Machine, tmp_path: Path) -> None:
    """zsh reads $ZDOTDIR/.zshrc where ZDOTDIR is set: a line added to ~/.zshrc was never read."""
    machine.env["ZDOTDIR"] = str(tmp_path / "zdot")
    (tmp_path / "zdot").mkdir()
    result = machine.run("--install-completion", "zsh")
    assert result.exit_code == 0, result.stderr
    assert not (machine.home / ".zshrc").exists()
    process = subprocess.run([_need("zsh"), "-i", "-c", "print -r -- ${fpath[-1]}"], capture_output=True, text=True,
                             env=machine.env, cwd=tmp_path, timeout=60, stdin=subprocess.DEVNULL)
    assert process.stdout.strip().splitlines()[-1] == str(machine.home / ".zfunc"), process.stdout + process.stderr
