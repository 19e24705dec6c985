"""check's command line read without typer (cudnn_doctor/check_line.py) reads what typer reads.

OPTIONS is held to check's declaration in cli.py (names, kinds, defaults), and plain_options to click's
parser over generated command lines: wherever it answers, its answer is click's; where it does not, typer
reads the line (help, completion, errors). Then the CLI as a user runs it: a plain check never imports typer,
and the same line through typer gives the same output and exit status."""

from __future__ import annotations

import json
import random
import re
import subprocess
import sys
from pathlib import Path

import pytest
import typer.main

from cudnn_doctor import check_line
from cudnn_doctor.cli import app
from tests.conftest import Machine

CHECK = typer.main.get_command(app).commands["check"]  # type: ignore[attr-defined]


def click_reads(args: list[str]) -> dict[str, object]:
    """The parameters click passes to check for ARGS (the words after `check`)."""
    with CHECK.make_context("check", list(args)) as context:
        return {name: list(value) if isinstance(value, tuple) else value for name, value in context.params.items()}


def test_the_options_are_those_typer_declares_for_check() -> None:
    declared = {}
    for param in CHECK.params:
        kind = check_line.FLAG if param.is_flag else (check_line.MANY if param.multiple else check_line.VALUE)
        declared[param.name] = (kind, sorted(param.opts), sorted(param.secondary_opts))
    ours = {name: (kind, sorted(sets), sorted(unsets)) for name, kind, sets, unsets in check_line.OPTIONS}
    assert ours == declared
    assert check_line.plain_options(["check"]) == click_reads([])  # the defaults


def _generated_lines(count: int) -> list[list[str]]:
    """Command lines of check's options in every plain form: long and short names, --name=value, repeats,
    --strict after --no-strict, values with spaces, '=' and non-ASCII text."""
    chooser = random.Random(2511)
    values = ["json", "x.prom", "CD3", "cudnn>=9.1", "a b", "k=v", "é", "", "/tmp/out dir/f"]
    lines = []
    for _ in range(count):
        line = ["check"]
        for _ in range(chooser.randint(0, 7)):
            name, kind, sets, unsets = chooser.choice(check_line.OPTIONS)
            flag = chooser.choice(sets + unsets)
            if kind == check_line.FLAG:
                line.append(flag)
            elif flag.startswith("--") and chooser.random() < 0.5:
                line.append(f"{flag}={chooser.choice(values)}")
            else:
                line += [flag, chooser.choice([v for v in values if v])]
        lines.append(line)
    return lines


def test_every_line_read_without_typer_is_read_as_click_reads_it() -> None:
    read, lines = 0, _generated_lines(600)
    for line in lines:
        ours = check_line.plain_options(line)
        if ours is None:
            continue
        read += 1
        assert ours == click_reads(line[1:]), line
    assert read == len(lines)  # the plain forms are all read here, none passed on


@pytest.mark.parametrize("line", [
    ["check", "--help"], ["check", "-h"], ["check", "-qv"], ["check", "-ofile.json"], ["check", "--"],
    ["check", "--output", "--json"], ["check", "--output"], ["check", "--json=yes"], ["check", "--jso"],
    ["check", "extra"], ["check", "--format", "-"], ["--version"], ["compat", "--json"], [], ["check", "--deep=1"],
])
def test_what_is_not_plain_goes_to_typer(line: list[str]) -> None:
    assert check_line.plain_options(line) is None


def test_completion_goes_to_typer(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(check_line.COMPLETE_VAR, "complete_bash")
    assert check_line.plain_options(["check", "--json"]) is None


# The same check run both ways: through entry (check_line, no typer) and through cli.main (typer).
BOTH_WAYS = r"""
import sys
way = sys.argv.pop(1)
sys.argv[0] = "cudnn-doctor"
if way == "plain":
    from cudnn_doctor.entry import main
else:
    from cudnn_doctor.cli import main
import atexit
atexit.register(lambda: sys.stderr.write("typer imported: %s\n" % ("typer" in sys.modules)))
main()
"""


@pytest.mark.parametrize("args", [
    ["--json"], ["--format", "junit"], ["-q"], ["--require", "cudnn>=9", "--ignore", "CD101", "--json"],
    ["--select", "CD3", "--strict"], ["-q", "-v"], ["--format", "yaml"], ["--output", "r.json"],
    ["--json", "--project", "no-such-folder"], ["--format", "JSON"], ["--json", "--require", "cudnn>>9"],
    ["--json", "--output", "no-such-folder/r.json"], ["--json", "--python", "no-such-python"],
    ["--json", "--search-path", "/dev/null", "--select", "CD9"], ["--json", "--format", "junit"],
])
def test_a_plain_line_gives_what_typer_gives_and_never_imports_typer(machine: Machine, args: list[str]) -> None:
    runs = {}
    for way in ("plain", "typer"):
        runs[way] = subprocess.run([sys.executable, "-c", BOTH_WAYS, way, "check", *args], capture_output=True,
                                   text=True, env=machine.env, cwd=machine.cwd, timeout=120)
    plain, through_typer = runs["plain"], runs["typer"]
    assert plain.returncode == through_typer.returncode, (plain.stderr, through_typer.stderr)
    assert plain.stderr.replace("typer imported: False", "") == through_typer.stderr.replace("typer imported: True", "")
    assert "typer imported: False" in plain.stderr
    if "--json" in args or "JSON" in args:
        first, second = json.loads(plain.stdout), json.loads(through_typer.stdout)
        for report in (first, second):
            report.pop("timings_ms", None)  # the probes' own durations
        assert first == second
    elif "junit" in args:  # its time attributes are the probes' durations
        assert re.sub(r'time="[^"]*"', "", plain.stdout) == re.sub(r'time="[^"]*"', "", through_typer.stdout)
    else:
        assert plain.stdout == through_typer.stdout


# command.exit_now ends the process without the interpreter's teardown: what that teardown did that
# matters must still happen. A thread that is not a daemon finishes, atexit handlers run (child.py kills
# what the command started through one), and buffered output reaches its reader.
AT_EXIT = r"""
import atexit, sys, threading, time
sys.argv = ["cudnn-doctor", "check", "--json"]
atexit.register(lambda: open(sys.argv_file, "a").write("atexit ran\n"))
def late():
    time.sleep(0.3)
    open(sys.argv_file, "a").write("thread finished\n")
threading.Thread(target=late).start()
sys.stdout.write(" " * 70000)  # buffered, not yet written: the JSON comes after it
from cudnn_doctor.entry import main
main()
"""


def test_the_quick_exit_keeps_what_the_interpreter_s_exit_did(machine: Machine, tmp_path: Path) -> None:
    marks = tmp_path / "marks"
    code = AT_EXIT.replace("sys.argv_file", repr(str(marks)))
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=machine.env,
                          cwd=machine.cwd, timeout=120)
    assert done.returncode == 1, done.stderr  # CD101 and CD301 on this machine: errors
    assert json.loads(done.stdout)["summary"]["exit_code"] == 1  # all of it, after the 70,000 spaces
    assert marks.read_text().splitlines() == ["thread finished", "atexit ran"]
