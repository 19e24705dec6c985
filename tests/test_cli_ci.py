"""CI conventions (issue 16, item 9): GitHub Actions annotations and job summary, JUnit XML with one
test case per area, -q, --format, and the shell's completion (argcomplete)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

from tests.conftest import Machine
from tests.fakes.build import fake_cudnn, fake_nvml
from tests.test_check import CUDNN9_SUBLIBS, make_toolkit


def broken_machine(machine: Machine) -> None:
    """No driver (CD101), a CUDA 13 toolkit holding a cuDNN built for CUDA 12 (CD306, a warning)."""
    toolkit = make_toolkit(machine.root, "13.0.2", 13000)
    fake_cudnn(toolkit / "lib64", version=91900, cudart=12090, sublibraries=CUDNN9_SUBLIBS)


def test_github_format_annotates_and_appends_a_job_summary(machine: Machine, tmp_path: Path) -> None:
    broken_machine(machine)
    summary = tmp_path / "step_summary.md"
    summary.write_text("earlier step\n")
    machine.env["GITHUB_STEP_SUMMARY"] = str(summary)
    result = machine.run("check", "--format", "github", "--require", "cudnn>=9.20")
    assert result.exit_code == 1
    lines = result.stdout.splitlines()
    assert lines[0].startswith("[✗] NVIDIA driver: not found")  # the human report first, as in the log
    commands = [line for line in lines if line.startswith("::")]
    assert sorted(c.split("::")[1] for c in commands) == ["error title=CD101 No NVIDIA driver found",
                                                          "error title=CD320 cuDNN requirement not met",
                                                          "warning title=CD306 cuDNN built for another CUDA major"]
    cd320 = next(c for c in commands if "CD320" in c).split("::", 2)[2]
    assert cd320.startswith("--require cudnn>=9.20: found 9.19.0")
    # one treatment for CD320 and CD306: a cuDNN >= 9.20 for the toolkit's CUDA 13, into that toolkit
    assert re.search(r"Fix: `cudnn-doctor install --version 9\.([2-9]\d)\.\d+ --cuda 13 --prefix ", cd320), cd320
    text = summary.read_text()
    assert text.startswith("earlier step\n## ❌ cudnn-doctor check: error")  # appended, not replaced
    assert "| NVIDIA driver | error | CD101 |" in text and "| cuDNN | warning | CD306 |" in text
    assert "| Requirements | error | CD320 |" in text
    assert "| CD306 | warning | **cuDNN built for another CUDA major**:" in text


def test_github_escapes_what_would_end_a_workflow_command() -> None:
    from cudnn_doctor.render.github import escape_data, escape_property

    assert escape_data("50% done\r\nnext") == "50%25 done%0D%0Anext"
    assert escape_property("CD301: a, b") == "CD301%3A a%2C b"


def test_junit_xml_has_one_case_per_area_failing_on_errors(machine: Machine, tmp_path: Path) -> None:
    broken_machine(machine)
    target = tmp_path / "reports" / "doctor.xml"
    target.parent.mkdir()
    result = machine.run("check", "--json", "--junit-xml", str(target))
    assert result.exit_code == 1 and result.json["summary"]["status"] == "error"  # --json still prints the report
    suite = ET.parse(target).getroot().find("testsuite")
    assert suite is not None
    cases = {case.get("name"): case for case in suite.iter("testcase")}
    assert list(cases) == ["driver", "toolkit", "cudnn", "frameworks", "requirements"]
    assert suite.get("tests") == "5" and suite.get("failures") == "1"
    failure = cases["driver"].find("failure")
    assert failure is not None and failure.get("type") == "CD101" and "Fix: Install the NVIDIA driver" in (failure.text or "")
    assert cases["cudnn"].find("failure") is None  # a warning is not a failure...
    assert "CD306" in (cases["cudnn"].findtext("system-out") or "")
    strict = machine.run("check", "--strict", "--format", "junit")
    cudnn = next(c for c in ET.fromstring(strict.stdout).iter("testcase") if c.get("name") == "cudnn")
    assert strict.exit_code == 1 and cudnn.find("failure") is not None  # ...unless --strict


def test_quiet_prints_only_problems(machine: Machine) -> None:
    broken_machine(machine)
    result = machine.run("check", "-q")
    assert result.exit_code == 1
    assert sorted(line.split(":")[0] for line in result.stdout.splitlines() if not line.startswith(" ")) == [
        "! CD306 cuDNN built for another CUDA major", "✗ CD101 No NVIDIA driver found"]
    healthy = machine.run("check", "-q", "--format", "text", "--require", "cudnn>=9")
    assert "CD320" not in healthy.stdout


def test_format_and_json_agree_and_conflict_cleanly(machine: Machine) -> None:
    assert json.loads(machine.run("check", "--format", "json").stdout)["schema"] == "cudnn-doctor/report/1"
    both = machine.run("check", "--json", "--format", "github")
    assert both.exit_code == 2 and both.json["error"]["message"] == "--json and --format github ask for two formats"


def test_shell_completion_is_offered(machine: Machine) -> None:
    assert machine.complete("cudnn-doctor check --ju") == ["--junit-xml"]
    script = machine.run("--show-completion", "bash")  # the script --install-completion writes for bash
    assert script.exit_code == 0 and "_ARGCOMPLETE=1" in script.stdout
    assert "complete -o nospace -o default -o bashdefault -F _python_argcomplete cudnn-doctor" in script.stdout


FORGING = "\n::error file=x::forged\r::stop-commands::tok3n\n  ##[error]v1 forged\r\n\t::add-mask::50%25 %0A"


def runner_commands(output: str) -> list[tuple[str, str]]:
    """(command, data) of every line GitHub's runner takes for a workflow command, as actions/runner reads
    them (ActionCommand.TryParseV2, then TryParse): lines end at CR or LF; `::cmd props::data` after leading
    blanks, or `##[cmd props]data` anywhere in the line; data unescaped (%25, %0D, %0A)."""
    found = []
    for line in re.split(r"\r\n|\r|\n", output):
        trimmed = line.lstrip()
        end = trimmed.find("::", 2)
        if trimmed.startswith("::") and end >= 0:
            command, data = trimmed[2:end].split(" ")[0], trimmed[end + 2:]
        elif "##[" in line and "]" in line[line.index("##["):]:
            start = line.index("##[") + 3
            command, data = line[start:line.index("]", start)].split(" ")[0], line[line.index("]", start) + 1:]
        else:
            continue
        found.append((command, data.replace("%0D", "\r").replace("%0A", "\n").replace("%25", "%")))
    return found


def test_github_format_paths_cannot_forge_or_stop_workflow_commands(machine: Machine, tmp_path: Path) -> None:
    """Paths from CUDA_HOME, CUDNN_PATH and VIRTUAL_ENV that hold command syntax: the runner sees exactly
    one annotation per error and warning, each carrying the path whole, and nothing else."""
    broken_machine(machine)
    for variable in ("CUDA_HOME", "CUDNN_PATH", "VIRTUAL_ENV"):
        machine.env[variable] = f"{tmp_path}/{variable}{FORGING}"
    # a GPU whose name (as NVML reports it) holds a line of its own that reads like a command
    machine.add_library_path(fake_nvml(tmp_path / "nvml", name="H100\\n::error::gpu-forged ##[warning]v1").parent)
    report = machine.check_json()
    problems = sorted((f["severity"], f["code"]) for f in report["findings"] if f["severity"] in ("error", "warning"))
    result = machine.run("check", "--format", "github", "-v")
    assert result.exit_code == report["summary"]["exit_code"] and "Traceback" not in result.stderr
    found = runner_commands(result.stdout)
    assert sorted(command for command, _ in found if command != "notice") == [severity for severity, _ in problems]
    titles = [line.split("title=", 1)[1].split(" ", 1)[0] for line in result.stdout.splitlines() if line.startswith("::")]
    assert sorted(title for title in titles if title in {code for _, code in problems}) == sorted(c for _, c in problems)
    cd204 = next(data for command, data in found if f"{tmp_path}/CUDA_HOME" in data)
    assert f"{tmp_path}/CUDA_HOME{FORGING}" in cd204  # the whole path, unescaped by the runner as it was
    assert "forged" in result.stdout and "tok3n" in result.stdout and "gpu-forged" in result.stdout  # still shown


def strict_json(data: bytes) -> dict:
    """DATA parsed as a strict JSON parser would: UTF-8 only, no unpaired surrogate in any string."""
    def check(value: object) -> None:
        if isinstance(value, str):
            value.encode("utf-8")  # an unpaired \udcNN escape fails here
        elif isinstance(value, dict):
            for key, item in value.items():
                check(key)
                check(item)
        elif isinstance(value, list):
            for item in value:
                check(item)

    parsed = json.loads(data.decode("utf-8"))
    check(parsed)
    return parsed


def test_control_characters_and_non_utf8_paths_in_junit_and_json_files(machine: Machine, tmp_path: Path) -> None:
    """A CUDA_HOME with control characters and bytes that are not UTF-8: the JUnit file is well-formed XML
    (expat, a strict parser, reads it), the JSON file and stdout carry no unpaired surrogate; no exit 3."""
    broken_machine(machine)
    odd = f"{tmp_path}/cuda\x01\x1b[31m\x0b\x7f\ufffe" + os.fsdecode(b"\xff\xfe-latin1-\xe9")
    machine.env["CUDA_HOME"] = odd
    junit, output = tmp_path / "doctor.xml", tmp_path / "report.json"
    result = machine.run("check", "--format", "json", "--output", str(output), "--junit-xml", str(junit))
    assert result.exit_code == 1, result.stderr
    cases = {case.get("name"): case for case in ET.parse(junit).getroot().iter("testcase")}
    toolkit = cases["toolkit"].findtext("system-out") or ""
    assert "CD204" in toolkit and "cuda\\x01\\x1b[31m\\x0b\\x7f\\ufffe\\xff\\xfe-latin1-\\xe9" in toolkit
    report = strict_json(output.read_bytes())
    assert any("cuda\\x01" not in f["detail"] and "\\xff\\xfe-latin1-\\xe9" in f["detail"]
               for f in report["findings"] if f["code"] == "CD204")
    for args in (("--format", "junit"), ("--json",)):
        answer = subprocess.run([sys.executable, "-m", "cudnn_doctor", "check", *args], env=machine.env,
                                cwd=machine.cwd, capture_output=True, timeout=60)
        assert answer.returncode == 1, answer.stderr
        if args == ("--json",):
            strict_json(answer.stdout)
        else:
            ET.fromstring(answer.stdout)


def test_error_lines_on_stderr_cannot_forge_workflow_commands(machine: Machine, tmp_path: Path) -> None:
    """GitHub's runner reads a step's standard error for workflow commands too, whatever --format: each line
    the doctor writes there is one line (a newline or CR in a path written as an escape), begins with
    `cudnn-doctor`, and holds no `##[`. A DoctorError, a usage error and a bad format name, each carrying
    command syntax."""
    cases = [
        ("check", "--format", "github", "--project", f"{tmp_path}/missing{FORGING}"),
        ("check", "--json", "--require", f"cudnn>=9{FORGING}"),
        ("check", "--format", f"github{FORGING}"),
        ("compat", f"torch=={FORGING}"),
        ("explain", "--from-file", f"{tmp_path}/none{FORGING}"),
    ]
    for args in cases:
        result = machine.run(*args)
        assert result.exit_code == 2, (args, result.stderr)
        assert result.stderr.strip() and "Traceback" not in result.stderr
        assert runner_commands(result.stderr) == [], (args, result.stderr)
        lines = re.split(r"\r\n|\r|\n", result.stderr.rstrip("\n"))
        assert all(line.startswith("cudnn-doctor") for line in lines), (args, lines)
        assert "\\n::error" in result.stderr  # the value is still shown, its newline as an escape
