"""Every usage error, the option parser's included, is one line `cudnn-doctor: error: ... (fix: ...)`, exit 2,
and with --json one `cudnn-doctor/error/1` object on standard output."""

from __future__ import annotations

import re

import pytest

from tests.conftest import Machine
from tests.test_schemas import validate


@pytest.fixture
def machine(machine_in_process: Machine) -> Machine:
    """The CLI runs in the test's own process (conftest.run_in_process): nothing here needs a process of its own."""
    return machine_in_process

CASES = [
    (["chek"], "no such command 'chek'", "did you mean `cudnn-doctor check`?"),
    (["fleet", "mrge", "x"], "fleet: no such command 'mrge'", "did you mean `cudnn-doctor fleet merge`?"),
    (["check", "--jsn"], "check: no such option --jsn", "did you mean --json?"),
    (["--bogus"], "no such option --bogus", "see `cudnn-doctor --help`"),
    (["install", "--cuda", "twelve"], "install: --cuda: 'twelve' is not a whole number", "--cuda takes MAJOR"),
    (["bench", "--repeats", "many"], "bench: --repeats: 'many' is not a whole number", "--repeats takes N"),
    (["check", "--require"], "check: --require needs a value", "write --require SPEC"),
    (["fleet", "run", "--slurm", "--deadline"], "fleet run: --deadline needs a value", "write --deadline SECONDS"),
    (["fleet", "merge"], "fleet merge: REPORT.json... | DIR is missing", "see `cudnn-doctor fleet merge --help`"),
    (["uninstall"], "uninstall: --prefix is missing", "give --prefix DIR"),
    (["check", "foo"], "check: unexpected argument 'foo'", "see `cudnn-doctor check --help`"),
    (["check", "--strict=maybe"], "check: option '--strict' does not take a value", "see `cudnn-doctor check --help`"),
    (["--json", "check"], "--json is an option of check, and goes after it", "cudnn-doctor check --json"),
    (["check", "-q", "-v"], "-q and -v ask for less and for more at once", "give one of them"),
    (["check", "--require", "cudnn>>9"], "--require 'cudnn>>9'", "write it like >=9.1"),  # the tool's own, unchanged
    (["\udcff"], "no such command '\\xff'", "the commands are check"),  # a name that is not UTF-8: its byte
]


@pytest.mark.parametrize(("args", "message", "fix"), CASES, ids=[" ".join(case[0]) for case in CASES])
def test_usage_errors_are_one_line_with_a_fix(machine: Machine, args: list[str], message: str, fix: str) -> None:
    result = machine.run(*args)
    assert result.exit_code == 2, result
    if "--json" in args:  # asked for, where the parser read it or not: one JSON object with the class's code
        assert result.json["error"]["code"] in ("CD001", "CD011"), result.stdout
    else:
        assert result.stdout == ""
    [line] = result.stderr.splitlines()
    shown = fix.replace("`", "")  # a command in a printed fix carries no backticks to paste (issue 36)
    assert line.startswith(f"cudnn-doctor: error: {message}") and "(fix: " in line and shown in line, line
    assert "`" not in line
    assert "╭" not in line and "Usage:" not in line and "Traceback" not in line


@pytest.mark.parametrize("args", [["check", "--jsn"], ["chek"], ["install", "--cuda", "twelve"],
                                  ["fleet", "merge"], ["check", "--require"]])
def test_usage_errors_with_json_are_one_object(machine: Machine, args: list[str]) -> None:
    result = machine.run(*args, "--json") if args != ["check", "--require"] else machine.run("check", "--json", "--require")
    assert result.exit_code == 2
    data = result.json
    validate(data)
    assert data["schema"] == "cudnn-doctor/error/1" and data["exit_code"] == 2
    from cudnn_doctor.codes import CODES

    # the class of the parser's error, from the registry: a word no part of it takes, or a value an option does not
    assert data["error"]["code"] == ("CD011" if args in (["check", "--jsn"], ["chek"]) else
                                     "CD003" if args == ["fleet", "merge"] else "CD001"), data
    assert data["error"]["title"] == CODES[data["error"]["code"]].title and data["error"]["fix"]
    assert result.stderr.count("\n") == 1 and data["error"]["message"] in result.stderr


@pytest.mark.parametrize("words", [[], ["check"], ["compat"], ["explain"], ["fleet"], ["fleet", "merge"], ["fleet", "run"],
                                   ["image"], ["bench"], ["fix"], ["install"], ["uninstall"]])
def test_every_command_has_its_help(machine: Machine, words: list[str]) -> None:
    """`--help` of the tool and of each command: its usage line, its summary, its options, exit 0, nothing else."""
    result = machine.run(*words, "--help")
    assert result.exit_code == 0 and result.stderr == ""
    assert result.stdout.startswith(" ".join(["Usage: cudnn-doctor", *words]) + " [-h]"), result.stdout
    assert "Options:\n  -h, --help" in result.stdout
    if words in ([], ["fleet"]):  # a command of commands lists them, each with its summary
        assert "Commands:\n" in result.stdout and ("  merge " in result.stdout or "  check " in result.stdout)


def test_the_version_is_one_line(machine: Machine) -> None:
    version = machine.run("--version")
    assert version.exit_code == 0 and re.fullmatch(r"cudnn-doctor \d+\.\d+\.\d+\n", version.stdout), version


@pytest.mark.parametrize("args", [["check", "--json"] + ["--ignore", "CD1"] * 50_000,
                                  ["check", "--json"] + ["--search-path=/nonexistent"] * 30_000])
def test_a_command_line_of_tens_of_thousands_of_options_is_one_usage_error_at_once(machine: Machine,
                                                                                    args: list[str]) -> None:
    """argparse's time grows with the square of the options: 50,000 `--ignore CD1` ran past 50 s (round nine's
    red-team, argv.shape[ignore_50000]). Past 10,000 options: one line, exit 2, one JSON object, at once."""
    result = machine.run(*args, timeout=15)
    assert result.exit_code == 2 and result.json["error"]["code"] == "CD001", result.stdout[-500:]
    assert "at most 10,000" in result.json["error"]["message"]
    assert len(result.stderr.strip().splitlines()) == 1 and "at most 10,000" in result.stderr
    validate(result.json)
