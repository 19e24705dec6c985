"""Lines for Windows shells (issue 43, class 2): a line is exact or it is a comment in words, never a command the user
did not ask for.

cmd is not on a Linux machine: its lines are read here by the phases cmd itself goes through (as its documentation
and the long-standing analysis of its parser describe them): percent expansion of the whole line first (`%NAME%`
anywhere, quotes or not), then `!NAME!` where delayed expansion is on, then the line split at an unquoted `& | < >`,
and a line ends at its newline. So a `set "NAME=value"` line is exact when its only percent signs are the `%NAME%`
it means, it holds no `!`, exactly two double quotes, and no control character. A word of a command line is exact
when it is bare (none of cmd's special characters) or double-quoted with nothing inside that cmd or the C runtime's
argument splitting would change (no `"`, `%`, `!`, trailing backslashes doubled). A comment is a `rem` line of plain
words that names none of the folder's characters.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from cudnn_doctor.plan.actions import EnvChange
from cudnn_doctor.plan.shell import command_line, env_lines
from cudnn_doctor.quoting import CannotQuote
from tests import powershell_model
from tests.conftest import Machine
from tests.fakes.build import fake_cudnn, fake_nvml
from tests.test_shell_lines import CUDNN9, HOSTILE

WINDOWS_HOSTILE = {
    **{name: os.fsdecode(raw) for name, raw in HOSTILE.items()},
    "percent variable": "C:\\Users\\%USERPROFILE%\\cudnn",
    "exclamation variable": "C:\\x!PATH!y",
    "newline then a command": "C:\\cudnn\r\ncalc.exe\\bin",
    "double quote": 'C:\\a" & calc & "b',
    "semicolon": "C:\\a;C:\\evil",
    "ampersand and caret, plain": "C:\\R&D ^x (1)\\bin",
    "trailing backslash": "C:\\cudnn\\bin\\",
}
PLAIN_WORDS = re.compile(r"rem [A-Za-z0-9 .,:_/=+-]+")
# a comment in words, in any shell: nothing cmd (before `rem`), a zsh without INTERACTIVE_COMMENTS or a half-pasted
# line would read as anything but words
WORDS_ONLY = re.compile(r"(?:rem|#) [A-Za-z0-9 .,:_/=+-]+")


def _cmd_set_line_is_exact(line: str, variable: str, value: str, prepend: bool) -> bool:
    """LINE is `set "VARIABLE=VALUE[;%VARIABLE%]"` and cmd's phases leave VALUE as it is."""
    expected = f'set "{variable}={value};%{variable}%"' if prepend else f'set "{variable}={value}"'
    if line != expected:
        return False
    percents = line.count("%")
    return (percents == (2 if prepend else 0) and "!" not in line and line.count('"') == 2
            and all(c.isprintable() for c in line))


def _is_rem_comment(line: str) -> bool:
    return bool(PLAIN_WORDS.fullmatch(line))


@pytest.mark.parametrize("name", list(WINDOWS_HOSTILE), ids=list(WINDOWS_HOSTILE))
@pytest.mark.parametrize("op", ["prepend", "remove"])
def test_a_cmd_line_is_exact_or_a_rem_comment_in_words(name: str, op: str) -> None:
    folder = WINDOWS_HOSTILE[name]
    current = [folder, "C:\\stray"] if op == "remove" else []
    change = EnvChange("PATH", op, folder if op == "prepend" else "C:\\stray", system="windows")
    [line] = env_lines((change,), current, "cmd")
    value = folder if op == "prepend" else folder
    if _is_rem_comment(line):
        assert "wrote no cmd line for PATH" in line
        return
    assert _cmd_set_line_is_exact(line, "PATH", value, op == "prepend"), line


@pytest.mark.parametrize("name", list(WINDOWS_HOSTILE), ids=list(WINDOWS_HOSTILE))
@pytest.mark.parametrize("shell", ["user", "powershell"])
def test_a_powershell_or_user_line_is_exact_or_a_comment(name: str, shell: str) -> None:
    folder = WINDOWS_HOSTILE[name]
    [line] = env_lines((EnvChange("PATH", "prepend", folder, system="windows"),), [], shell)
    if line.startswith("#"):
        assert "\n" not in line and folder not in line
        return
    assert ";" not in folder
    if shell == "powershell":
        assert powershell_model.source([line], {"PATH": "C:\\old"})["PATH"] == folder + ";C:\\old"
    else:
        assert line.startswith("[Environment]::SetEnvironmentVariable('PATH', ") and line.endswith(", 'User')")


def _cmd_words(line: str) -> list[str]:
    """LINE as cmd, then the C runtime, split it into arguments: cmd expands nothing (no percent or exclamation sign,
    no control character) and splits at no unquoted `& | < > ^`; the C runtime splits at unquoted spaces, a quote
    opens and closes, 2n backslashes before a quote are n backslashes, and a backslash elsewhere is itself."""
    assert "%" not in line and "!" not in line and all(c.isprintable() for c in line), line
    words: list[str] = []
    word: list[str] | None = None
    quoted = False
    index = 0
    while index < len(line):
        char = line[index]
        if char == "\\":
            run = len(line[index:]) - len(line[index:].lstrip("\\"))
            after = line[index + run:index + run + 1]
            assert after != '"' or run % 2 == 0, line  # an odd run would put a quote in the word
            word = (word or []) + ["\\" * (run // 2 if after == '"' else run)]
            index += run
            continue
        if char == '"':
            quoted = not quoted
            word = word or []
        elif char == " " and not quoted:
            if word is not None:
                words.append("".join(word))
            word = None
        else:
            assert quoted or char not in "&|<>^()", line  # cmd would act on it
            word = (word or []) + [char]
        index += 1
    assert not quoted, line
    if word is not None:
        words.append("".join(word))
    return words


def test_a_cmd_run_line_passes_its_words_exactly_or_is_refused() -> None:
    for name, word in WINDOWS_HOSTILE.items():
        argv = ("C:\\Python\\python.exe", "-m", "pip", "install", "nvidia-cudnn-cu13>=9.19", word)
        try:
            line = command_line(argv, "cmd")
        except CannotQuote as refusal:
            assert any(c in word for c in '%!"') or not word.isprintable() or "\\udc" in ascii(word), (name, refusal)
            continue
        assert _cmd_words(line) == list(argv), (name, line)


def _linux_plan(machine: Machine, tmp_path: Path) -> str:
    fake_nvml(tmp_path / "driver", driver="580.65.06", cuda=13000)
    machine.add_library_path(tmp_path / "driver")
    found = tmp_path / "off the path" / "lib"
    fake_cudnn(found, version=91900, cudart=13000, sublibraries=CUDNN9)
    return str(found)


@pytest.mark.parametrize("shell", ["cmd", "user"])
def test_fix_for_a_windows_shell_on_linux_says_in_words_what_it_cannot_write(shell: str, machine: Machine,
                                                                            tmp_path: Path) -> None:
    folder = _linux_plan(machine, tmp_path)
    result = machine.run("fix", "--shell", shell, "--search-path", folder)
    assert result.exit_code in (0, 1) and "internal error" not in result.stderr, result.stderr
    comment = "rem " if shell == "cmd" else "# "
    assert f"{comment}cudnn-doctor wrote no {shell} line for LD_LIBRARY_PATH" in result.stdout, result.stdout
    printed = [line.strip() for line in result.stdout.splitlines() if line.strip().startswith(comment)]
    assert printed and all(WORDS_ONLY.fullmatch(line) for line in printed), printed
    data = json.loads(machine.run("fix", "--json", "--search-path", folder).stdout)
    assert data["exit_code"] in (0, 1)


@pytest.mark.parametrize("system", ["linux", "windows"])
@pytest.mark.parametrize("shell", ["bash", "zsh", "fish", "powershell", "cmd", "user"])
def test_every_comment_any_shell_line_author_writes_is_words_only(shell: str, system: str) -> None:
    """Issue 43, class 2: each line is exact or a comment in words (no `;` `'` `"` `%` `&` `|` `$` `(`), for every
    hostile folder, operation, shell and system, so a comment pasted or read by cmd runs nothing."""
    from cudnn_doctor.install.ldconfig import env_line
    from cudnn_doctor.knowledge.layout import layout_for

    comments = 0
    folders = [*WINDOWS_HOSTILE.values(), "/opt/a:b/lib", "/opt/$ORIGIN/lib", "relative/lib", ""]
    for folder in folders:
        for op in ("prepend", "remove", "set"):
            change = EnvChange("LD_LIBRARY_PATH" if system == "linux" else "PATH", op, folder, system=system)
            for line in env_lines((change,), [folder, "/x"], shell):
                assert "\n" not in line and "\r" not in line, line
                if line.startswith(("#", "rem ")):
                    comments += 1
                    assert WORDS_ONLY.fullmatch(line), line
        for os_name in ("linux", "windows"):
            layout = layout_for(os_name, "x86_64")
            assert layout is not None
            line = env_line(folder, layout)
            if line.startswith(("#", "rem ")):
                assert WORDS_ONLY.fullmatch(line), line
    limit = env_lines((EnvChange("ulimit -v", "limit", "unlimited"),), [], shell)
    assert all(WORDS_ONLY.fullmatch(line) for line in limit if line.startswith(("#", "rem "))), limit
    assert comments, "no folder was refused: the family tests nothing"
