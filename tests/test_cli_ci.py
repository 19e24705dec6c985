"""CI conventions (issue 16, item 9): GitHub Actions annotations and job summary, JUnit XML with one
test case per area, -q, --format, and typer's shell completion."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

from tests.conftest import Machine
from tests.fakes.build import fake_cudnn
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
    machine.env.update({"_CUDNN_DOCTOR_COMPLETE": "complete_bash", "COMP_WORDS": "cudnn-doctor check --ju",
                        "COMP_CWORD": "2"})
    assert machine.run().stdout.split() == ["--junit-xml"]
    machine.env["_CUDNN_DOCTOR_COMPLETE"] = "source_bash"  # the script --install-completion writes for bash
    script = machine.run()
    assert script.exit_code == 0 and "_CUDNN_DOCTOR_COMPLETE=complete_bash" in script.stdout
    assert "complete -o default -F _cudnn_doctor_completion cudnn-doctor" in script.stdout
