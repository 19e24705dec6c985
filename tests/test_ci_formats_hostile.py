"""The machine outputs for CI (JUnit XML, GitHub's workflow commands and job summary) carry any text a machine can
hold (issue 43, round thirteen): every character a strict XML 1.0 reader, GitHub's annotation parser or a person
reading the log could be fooled or stopped by is written as an escape (C0 controls but tab and newline where the
format has them, DEL, C1, U+2028 and U+2029, a path's bytes that are not UTF-8, bidi controls); a tab stays a tab
where the format allows one; the workflow commands' own escapes (%25 %0D %0A; in properties %3A %2C) still hold."""

from __future__ import annotations

import os
import re
import xml.etree.ElementTree as ET
from pathlib import Path
from xml.parsers import expat

import pytest

from cudnn_doctor.model import Finding, Host, Report, Summary, Tool
from tests.conftest import Machine
from tests.test_cli_ci import broken_machine, runner_commands

# each class of character, by name: what it is
HOSTILE = {
    "C0": "\x01\x08\x0b\x0c\x1b\x1f",
    "DEL": "\x7f",
    "C1": "\x80\x85\x9b\x9f",  # U+0085 (NEL) ends a line for some readers, U+009B is a terminal's CSI
    "separators": "\u2028\u2029",
    "bidi": "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u061c",
    "non-UTF-8": os.fsdecode(b"\xff\xfe\xe9"),  # lone surrogates, as a file name's bytes are kept in memory
    "noncharacters": "\ufffe\uffff",
}
ALL = "".join(HOSTILE.values())
BAD = set(ALL)  # none of them may reach a machine output raw


def hostile_report(text: str) -> Report:
    finding = Finding("CD204", "error", f"title{text}", f"detail{text}\ttabbed\nsecond line", f"fix{text}",
                      subject=f"/opt/cuda{text}")
    return Report(Tool("cudnn-doctor", "0"), Host("linux", "x86_64", "3.12", "node"), findings=[finding],
                  summary=Summary("error", {"error": 1, "warning": 0, "info": 0}, 1))


def strict_xml(text: str) -> ET.Element:
    """TEXT read by expat (a strict XML 1.0 parser) with no raw character beyond what XML 1.0 recommends: no C1, no
    DEL (XML 1.0 section 2.2 discourages them; XML 1.1 requires them escaped), no separator or bidi control."""
    parser = expat.ParserCreate()
    parser.Parse(text.encode("utf-8"), True)  # a lone surrogate fails the encode, a C0 control the parse
    assert not BAD & set(text), sorted(hex(ord(c)) for c in BAD & set(text))
    return ET.fromstring(text)


def test_junit_escapes_every_hostile_character_and_keeps_tabs() -> None:
    from cudnn_doctor.render.junit import junit_xml_text

    text = junit_xml_text(hostile_report(ALL))
    root = strict_xml(text)
    failure = next(root.iter("failure"))
    body = failure.text or ""
    # a tab is kept; a newline inside a detail came with a value (no code's text has one) and is an escape, so that
    # no value starts a line of its own (round twenty-one's red-team: an interface named '...\n::error::...')
    assert "\ttabbed\\nsecond line" in body, body
    for name, chars in HOSTILE.items():
        assert not set(chars) & set(body), name
    assert "\\x01\\x08\\x0b\\x0c\\x1b\\x1f\\x7f\\x80\\x85\\x9b\\x9f\\u2028\\u2029\\u202a" in body, body
    assert "\\xff\\xfe\\xe9\\ufffe\\uffff" in body, body
    assert not BAD & set(failure.get("message") or ""), failure.get("message")


@pytest.mark.parametrize("name", list(HOSTILE))
def test_github_annotations_escape_each_class(name: str) -> None:
    from cudnn_doctor.render.github import workflow_commands

    [line] = workflow_commands(hostile_report(HOSTILE[name] + "%:,"))
    assert not BAD & set(line), (name, line)
    assert "\n" not in line and "\r" not in line
    title, data = line.split("::", 2)[1:]
    assert title.startswith("error title=CD204 title") and title.endswith("%25%3A%2C"), title  # a property's escapes
    assert "%25:," in data and "\ttabbed%0Asecond line" in data, data  # data's: %25 %0A; a tab kept


def test_github_job_summary_cells_escape_each_class(tmp_path: Path) -> None:
    from cudnn_doctor.render.github import job_summary

    text = job_summary(hostile_report(ALL))
    assert not BAD & set(text), sorted(hex(ord(c)) for c in BAD & set(text))
    [row] = [line for line in text.splitlines() if line.startswith("| CD204 | error |")]
    assert "\\x1b" in row and "\\u202e" in row and "\\xff\\xfe\\xe9" in row, row
    assert row.count(" | ") == 3, row  # one row of four cells, whatever the text held


def test_github_log_of_the_human_report_escapes_each_class(machine: Machine, tmp_path: Path) -> None:
    """The whole `check --format github` output (the report for people, then the annotations) and the job summary
    file, for a CUDA_HOME holding every class: nothing raw, one annotation per problem, the path whole once the
    runner has unescaped it."""
    broken_machine(machine)
    summary = tmp_path / "summary.md"
    machine.env["GITHUB_STEP_SUMMARY"] = str(summary)
    machine.env["CUDA_HOME"] = f"{tmp_path}/cuda{ALL}\tend"
    report = machine.check_json()
    problems = sorted(f["severity"] for f in report["findings"] if f["severity"] in ("error", "warning"))
    result = machine.run("check", "--format", "github")
    assert result.exit_code == 1 and "Traceback" not in result.stderr, result.stderr
    out = result.stdout.encode("utf-8", "surrogateescape").decode("utf-8")  # strict UTF-8: no lone surrogate
    assert not BAD & set(out), sorted(hex(ord(c)) for c in BAD & set(out))
    assert sorted(command for command, _ in runner_commands(out)) == problems, runner_commands(out)
    assert not BAD & set(summary.read_text(encoding="utf-8"))
    assert re.search(r"cuda\\x01.*\\u202e.*\\xff\\xfe\\xe9", out), out


def test_junit_file_and_stdout_for_a_path_holding_each_class(machine: Machine, tmp_path: Path) -> None:
    broken_machine(machine)
    machine.env["CUDA_HOME"] = f"{tmp_path}/cuda{ALL}\tend"
    target = tmp_path / "doctor.xml"
    result = machine.run("check", "--format", "junit", "--junit-xml", str(target))
    assert result.exit_code == 1 and "Traceback" not in result.stderr, result.stderr
    for text in (result.stdout, target.read_text(encoding="utf-8")):
        root = strict_xml(text)
        toolkit = next(case for case in root.iter("testcase") if case.get("name") == "toolkit")
        assert "\\u202e" in (toolkit.findtext("system-out") or ""), text
