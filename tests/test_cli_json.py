"""`--json` always prints one JSON object, whatever fails; a closed standard output ends quietly
(issue 16, item 2; issue 15, the closed pipe)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import Machine
from tests.install_helpers import make_archive

FAILURES = [
    # (command line, exit code, words of the message): the parser's usage errors and the doctor's own
    (["check", "--json", "--require", "cudnn>>9"], 2, "'>>9' is not a version specifier"),
    (["check", "--json", "--no-such-option"], 2, "no such option --no-such-option"),
    (["check", "--json", "--format", "yaml"], 2, "--format yaml"),
    (["compat", "--json"], 2, "name a framework or a table"),
    (["compat", "--json", "--list", "nonsense"], 2, "nonsense"),
    (["bench", "--json", "--dtype", "fp128"], 2, "fp128"),
    (["install", "--json", "--from", "/nowhere/cudnn.tar.xz", "--prefix", "/tmp/x", "--dry-run"], 2, "/nowhere"),
    (["install", "--json", "--version"], 2, "--version"),  # an option without its value
    (["check", "--format=json", "--strict=maybe"], 2, "--strict"),
]


@pytest.mark.parametrize(("args", "exit_code", "words"), FAILURES, ids=[" ".join(a[:3]) for a, _, _ in FAILURES])
def test_every_failure_with_json_is_one_json_object(machine: Machine, args: list[str], exit_code: int,
                                                    words: str) -> None:
    result = machine.run(*args)
    assert result.exit_code == exit_code, result.stderr
    data = json.loads(result.stdout)  # exactly one object, nothing else on stdout
    assert data["exit_code"] == exit_code
    assert "Traceback" not in result.stderr and result.stderr.strip()  # the human reads stderr as before
    if data["schema"] == "cudnn-doctor/install/1":  # install reports its own failures in its own schema
        assert words in data["result"]["error"]
        return
    assert data["schema"] == "cudnn-doctor/error/1" and data["command"] == args[0]
    assert words in data["error"]["message"], data
    assert data["error"]["title"] and data["error"]["fix"]


def test_an_output_file_that_cannot_be_written_is_one_json_object_before_any_probing(machine: Machine) -> None:
    target = machine.root / "no" / "such" / "folder" / "doctor.xml"
    result = machine.run("check", "--json", "--junit-xml", str(target))
    assert result.exit_code == 2
    assert result.json["error"] == {"code": "CD006", "title": "A file or folder that cannot be written",
                                    "message": result.json["error"]["message"], "fix": "give a path like DIR/NAME"}
    assert result.json["error"]["message"].startswith(f"--junit-xml '{target}': not a file in an existing folder")


def test_without_json_stdout_stays_empty_on_errors(machine: Machine) -> None:
    result = machine.run("check", "--require", "cudnn>>9")
    assert result.exit_code == 2 and result.stdout == ""


@pytest.mark.parametrize("args", [["compat", "--list", "pytorch", "-v"], ["compat", "--list", "cudnn", "--json"],
                                  ["explain", "CD301"], ["check"], ["check", "--json"], ["install"]])
def test_a_closed_stdout_ends_quietly(machine: Machine, args: list[str], tmp_path: Path) -> None:
    """`cudnn-doctor ... | head -1`: the reader goes away; no traceback, no message, exit 141 as for SIGPIPE."""
    if args == ["install"]:
        args += ["--from", str(make_archive("txz", tmp_path)), "--prefix", str(tmp_path / "p"), "--dry-run"]
    process = subprocess.Popen([sys.executable, "-m", "cudnn_doctor", *args], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, env=machine.env, cwd=machine.cwd, stdin=subprocess.DEVNULL)
    assert process.stdout is not None and process.stderr is not None
    process.stdout.close()  # closed before the doctor writes a byte: its first write fails
    err = process.stderr.read().decode()
    assert process.wait(timeout=60) == 141, err
    assert err == ""
