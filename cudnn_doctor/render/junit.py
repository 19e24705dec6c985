"""JUnit XML for `check --junit-xml FILE` and `--format junit`: one test case per area of the report.

An area's test case fails on its error findings (and, with --strict, its warnings), so a CI system
that reads JUnit (GitLab, Jenkins, Azure Pipelines, GitHub's test reporters) shows which part of the
machine is wrong. Every finding's code, detail and fix are in the case's text.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET

from cudnn_doctor.model import Finding, Report
from cudnn_doctor.render.text import AREA_NAMES, area_of
from cudnn_doctor.streams import printable

SUITE = "cudnn-doctor check"


def xml_text(text: str) -> str:
    """TEXT as a strict XML 1.0 reader takes it and a person reads it: every character XML 1.0 forbids (C0 controls
    but tab and newline, U+FFFE, U+FFFF, a path's bytes that are not UTF-8) and every one it discourages or that
    can disguise the text (DEL, C1, U+2028 and U+2029, bidi controls) as an escape (\\x1b, \\u202e, \\xNN), a
    tab and a newline kept (ElementTree writes them as references in an attribute)."""
    return printable(text, keep="\t\n")


def _describe(findings: list[Finding]) -> str:
    """Each finding as its lines: its code and title, its detail, its fix. A title and a detail are one line each
    (no code's text has a newline), so a newline in them came with a value of the machine or the user (an interface
    named across two lines) and is written as an escape: it never starts a line of its own, which a CI log would take
    for a command of its own (`::error::`). A tab is kept."""
    return xml_text("\n\n".join(f"{f.code} {printable(f.title, keep=chr(9))} ({f.severity})\n"
                                  f"{printable(f.detail, keep=chr(9))}\nFix: {f.fix}" for f in findings))


def junit_tree(report: Report, strict: bool = False) -> ET.Element:
    failing = {"error", "warning"} if strict else {"error"}
    seconds = f"{report.timings_ms.get('total', 0.0) / 1000:.3f}"
    suites = ET.Element("testsuites", name=SUITE)
    suite = ET.SubElement(suites, "testsuite", name=SUITE, tests=str(len(AREA_NAMES)), time=seconds)
    failures = 0
    for area in AREA_NAMES:
        findings = [f for f in report.findings if area_of(f.code) == area]
        case = ET.SubElement(suite, "testcase", classname="cudnn-doctor.check", name=area)
        bad = [f for f in findings if f.severity in failing]
        if bad:
            failures += 1
            failure = ET.SubElement(case, "failure", type=xml_text(bad[0].code),
                                    message=xml_text("; ".join(f"{f.code} {f.title}" for f in bad)))
            failure.text = _describe(bad)
        others = [f for f in findings if f not in bad]
        if others:
            ET.SubElement(case, "system-out").text = _describe(others)
    suite.set("failures", str(failures))
    suite.set("errors", "0")
    suites.set("tests", str(len(AREA_NAMES)))
    suites.set("failures", str(failures))
    return suites


def junit_xml_text(report: Report, strict: bool = False) -> str:
    tree = junit_tree(report, strict)
    ET.indent(tree)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(tree, encoding="unicode") + "\n"


def write_junit(report: Report, path: str, strict: bool = False) -> None:
    """Write the XML to PATH in one piece (a temporary file beside it, then a rename)."""
    from cudnn_doctor.errors import DoctorError
    from cudnn_doctor.render.output_file import write_atomically

    text = junit_xml_text(report, strict)
    try:
        write_atomically(path, text, "--junit-xml")
    except OSError as error:
        raise DoctorError(f"--junit-xml {path}: {error.strerror or error}",
                          fix="give a file in a folder you can write to", code="CD006") from None
