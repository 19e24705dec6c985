"""`--select` / `--ignore`, `[tool.cudnn-doctor]` in pyproject.toml and CUDNN_DOCTOR_* variables: which
findings count, as ruff and pytest choose. The empty pretend machine has CD101 (error: no driver), CD201
(warning: no toolkit) and CD301 (error: no cuDNN)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import Machine, codes
from tests.test_schemas import validate


@pytest.fixture
def machine(machine_in_process: Machine) -> Machine:
    """The CLI runs in the test's own process (conftest.run_in_process): nothing here needs a process of its own."""
    return machine_in_process


def test_ignored_errors_leave_the_exit_code_and_the_text_and_are_listed_in_the_json(machine: Machine) -> None:
    plain = machine.check_json()
    assert {"CD101", "CD201", "CD301"} <= codes(plain) and plain["summary"]["exit_code"] == 1
    assert plain["ignored"] == []

    report = machine.check_json("--ignore", "CD101", "--ignore", "cd3")  # a prefix, any case
    assert "CD101" not in codes(report) and "CD301" not in codes(report) and "CD201" in codes(report)
    assert {f["code"] for f in report["ignored"]} == {"CD101", "CD301"}
    assert report["summary"] == {"status": "warning", "counts": {"error": 0, "warning": 1, "info": 0}, "exit_code": 0}
    assert report["selection"] == {"select": [], "ignore": ["CD101", "CD3"], "sources": {"ignore": "--ignore"}}
    validate(report)

    text = machine.run("check", "--ignore", "CD101,CD301")
    assert text.exit_code == 0, text.stderr
    # the ignored finding is not shown; its area says it is ignored (issue 36: never a green [✓] for it)
    assert "✗ CD101" not in text.stdout and "No NVIDIA driver" not in text.stdout
    assert "[-] NVIDIA driver: not found (ignored: CD101)" in text.stdout
    assert "(2 ignored: CD101, CD301)" in text.stdout
    assert machine.run("check", "--ignore", "CD101,CD301", "--strict").exit_code == 1  # the warning still fails


def test_select_keeps_a_prefix_and_the_more_specific_of_select_and_ignore_wins(machine: Machine) -> None:
    only_toolkit = machine.check_json("--select", "CD2")
    assert codes(only_toolkit) == {"CD201"} and only_toolkit["summary"]["exit_code"] == 0
    narrowed = machine.check_json("--ignore", "CD", "--select", "CD301")
    assert codes(narrowed) == {"CD301"} and narrowed["summary"]["exit_code"] == 1
    tie = machine.check_json("--select", "CD3", "--ignore", "CD3")
    assert codes(tie) == set()


def test_ci_formats_leave_ignored_findings_out(machine: Machine, tmp_path: Path) -> None:
    summary = tmp_path / "summary.md"
    machine.env["GITHUB_STEP_SUMMARY"] = str(summary)
    github = machine.run("check", "--format", "github", "--ignore", "CD301")
    assert "::error title=CD101" in github.stdout and "::error title=CD301" not in github.stdout
    assert "No cuDNN found" not in github.stdout + summary.read_text() and "1 ignored: CD301" in github.stdout
    junit = machine.run("check", "--format", "junit", "--ignore", "CD301")
    assert "CD101" in junit.stdout and "CD301" not in junit.stdout
    prometheus = machine.run("check", "--format", "prometheus", "--ignore", "CD301")
    assert 'code="CD101"' in prometheus.stdout and "CD301" not in prometheus.stdout
    assert 'cudnn_doctor_findings_count{severity="error"} 1' in prometheus.stdout


def test_the_projects_pyproject_table_applies_from_a_subfolder(machine: Machine, tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname = "trainer"\n\n[tool.cudnn-doctor]\nignore = ["CD101", "CD301"]\nstrict = true\n'
        'require = ["cuda>=12"]\nformat = "json"\n')
    machine.cwd = tmp_path / "src" / "trainer"
    machine.cwd.mkdir(parents=True)
    result = machine.run("check")  # format = "json" from the table
    report = result.json
    assert codes(report) == {"CD201", "CD220"}  # the table's requirement is unmet: no toolkit
    assert result.exit_code == 1 and report["summary"]["exit_code"] == 1
    assert report["selection"]["sources"]["strict"] == str(tmp_path / "pyproject.toml")
    # the command line is stronger: --no-strict, another format; its ignores add to the project's
    text = machine.run("check", "--no-strict", "--format", "text", "--ignore", "CD220")
    assert text.exit_code == 0 and text.stdout.startswith("[")


def test_variables_for_ci(machine: Machine) -> None:
    machine.env.update({"CUDNN_DOCTOR_IGNORE": "CD101 CD301", "CUDNN_DOCTOR_STRICT": "1",
                        "CUDNN_DOCTOR_REQUIRE": "cudnn>=9.1,<10;driver>=550", "CUDNN_DOCTOR_FORMAT": "json"})
    result = machine.run("check")
    report = result.json
    assert codes(report) == {"CD201", "CD120", "CD320"} and result.exit_code == 1
    assert report["selection"]["sources"] == {"ignore": "CUDNN_DOCTOR_IGNORE", "require": "CUDNN_DOCTOR_REQUIRE",
                                              "strict": "CUDNN_DOCTOR_STRICT", "format": "CUDNN_DOCTOR_FORMAT"}
    machine.env["CUDNN_DOCTOR_SELECT"] = "CD2"
    assert codes(machine.run("check").json) == {"CD201"}
    failed = machine.run("check", "--require", "cudnn>>9")  # a failure, too, is JSON
    assert failed.exit_code == 2 and failed.json["error"]["message"].startswith("--require 'cudnn>>9'")


def test_bad_codes_and_settings_are_usage_errors_naming_where_they_came_from(machine: Machine, tmp_path: Path) -> None:
    for args, words in ((["--ignore", "CD8"], "--ignore CD8: no finding code starts with CD8"),
                        (["--select", "E501"], "--select E501: not a finding code or prefix")):
        result = machine.run("check", *args)
        assert result.exit_code == 2 and result.stderr.startswith(f"cudnn-doctor: error: {words}"), result.stderr
        assert len(result.stderr.splitlines()) == 1
        as_json = machine.run("check", "--json", *args)
        assert as_json.exit_code == 2 and as_json.json["error"]["message"].startswith(words)
    machine.env["CUDNN_DOCTOR_STRICT"] = "maybe"
    strict = machine.run("check")
    assert strict.exit_code == 2 and "CUDNN_DOCTOR_STRICT: 'maybe' is not true or false" in strict.stderr
    del machine.env["CUDNN_DOCTOR_STRICT"]
    (tmp_path / "pyproject.toml").write_text('[tool.cudnn-doctor]\nignored = ["CD101"]\n')
    typo = machine.run("check")
    assert typo.exit_code == 2 and "has no key 'ignored'" in typo.stderr and "the keys are ignore, select" in typo.stderr
    (tmp_path / "pyproject.toml").write_text('[tool.cudnn-doctor]\nignore = "CD101\n')
    broken = machine.run("check")
    assert broken.exit_code == 2 and "not valid TOML" in broken.stderr and str(tmp_path) in broken.stderr
