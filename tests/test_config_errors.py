"""Bad configuration is a usage error: one line naming the variable or key and what it takes, exit 2, and with JSON
asked any way (--json, --format JSON, --format=Json, CUDNN_DOCTOR_FORMAT, format = "json" in pyproject.toml) one
JSON error object; never a traceback, a hang or exit 3."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import Machine


@pytest.mark.parametrize("variable, value", [
    ("CUDNN_DOCTOR_RETRY_BACKOFF", "abc"), ("CUDNN_DOCTOR_RETRY_BACKOFF", "nan"), ("CUDNN_DOCTOR_RETRY_BACKOFF", "inf"),
    ("CUDNN_DOCTOR_PROBE_TIMEOUT", "nan"), ("CUDNN_DOCTOR_PROBE_TIMEOUT", "-5"), ("CUDNN_DOCTOR_DOWNLOAD_DEADLINE", "x"),
    ("CUDNN_DOCTOR_BENCH_TIMEOUT", "inf"), ("CUDNN_DOCTOR_CPU_BASELINE", "fortran"), ("CUDNN_DOCTOR_FORMAT", "yaml"),
    ("CUDNN_DOCTOR_READ_TIMEOUT", "0"), ("CUDNN_DOCTOR_REQUIRE", "cudnn>>>9"),
])
def test_a_bad_variable_is_one_line_and_exit_2(variable: str, value: str, machine: Machine) -> None:
    machine.env[variable] = value
    for command in (["install", "--version", "9.1.0", "--dry-run"], ["check"]):
        if variable in ("CUDNN_DOCTOR_FORMAT", "CUDNN_DOCTOR_REQUIRE") and command[0] != "check":
            continue
        result = machine.run(*command, timeout=30)
        assert result.exit_code == 2, (command, result.stderr)
        [line] = result.stderr.splitlines()
        assert line.startswith("cudnn-doctor: error: ") and variable in line and "fix:" in line, line
    if variable != "CUDNN_DOCTOR_FORMAT":  # --json on the command line wins over the variable's format
        result = machine.run("check", "--json", timeout=30)
        assert result.exit_code == 2 and json.loads(result.stdout)["exit_code"] == 2


@pytest.mark.parametrize("digits", ["\u0967\u0966", "\u0663", "\uff15", "\u0e55.5", "1\u00b2"])
def test_a_number_variable_in_other_digits_is_a_usage_error_for_every_one(digits: str) -> None:
    """float() reads Devanagari, Arabic-Indic and fullwidth digits as numbers; every number variable refuses them,
    naming itself and the digits 0-9, as --cuda does."""
    from cudnn_doctor.errors import DoctorError
    from cudnn_doctor.variables import NUMBERS, number

    for name in NUMBERS:
        with pytest.raises(DoctorError) as refused:
            number(name, 1.0, {name: digits})
        assert refused.value.exit_code == 2 and name in str(refused.value) and "digits 0-9" in str(refused.value)


@pytest.mark.parametrize("variable", ["CUDNN_DOCTOR_PROBE_TIMEOUT", "CUDNN_DOCTOR_HELPER_TIMEOUT"])
def test_a_timeout_in_devanagari_digits_is_one_json_error(variable: str, machine: Machine) -> None:
    machine.env[variable] = "\u0967\u0966"
    result = machine.run("check", "--json", timeout=30)
    error = json.loads(result.stdout)
    assert result.exit_code == 2 and error["exit_code"] == 2, result.stdout[-400:]
    assert variable in error["error"]["message"] and "digits 0-9" in error["error"]["message"]


@pytest.mark.parametrize("table, words", [
    ("ignore = " + "[" * 100_000 + "]" * 100_000, "nested too deep"),
    ('format = "yaml"', "format: 'yaml' is not a format"),
    ("strict = 3", "is not true or false"),
    ('require = ["cudnn>>>9"]', "require 'cudnn>>>9': '>>>9' is not a version specifier"),
])
def test_a_bad_project_key_is_one_line_and_exit_2(table: str, words: str, machine: Machine, tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(f"[tool.cudnn-doctor]\n{table}\n")
    result = machine.run("check", timeout=30)
    assert result.exit_code == 2, result.stderr
    [line] = result.stderr.splitlines()
    assert str(tmp_path / "pyproject.toml") in line and words in line, line


@pytest.mark.parametrize("how", [["--format", "JSON"], ["--format=Json"], ["--format", " json "], "env", "pyproject"])
def test_json_chosen_any_way_gets_the_json_error(how: list[str] | str, machine: Machine, tmp_path: Path) -> None:
    args = ["check", "--no-such-option"]
    if how == "env":
        machine.env["CUDNN_DOCTOR_FORMAT"] = "JSON"
    elif how == "pyproject":
        (tmp_path / "pyproject.toml").write_text('[tool.cudnn-doctor]\nformat = "Json"\n')
    else:
        args += list(how)
    for bad in (args, ["check", "--require", "cudnn>>>9", *args[2:]]):
        result = machine.run(*bad, timeout=30)
        assert result.exit_code == 2, result.stderr
        data = json.loads(result.stdout)
        assert data["schema"] == "cudnn-doctor/error/1" and data["exit_code"] == 2
    if how == "pyproject":  # the command line's own format wins over the project's: no JSON then
        assert machine.run("check", "--no-such-option", "--format", "text", timeout=30).stdout == ""
