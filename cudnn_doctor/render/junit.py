"""JUnit XML for `check --junit-xml FILE` and `--format junit`: one test case per area of the report.

An area's test case fails on its error findings (and, with --strict, its warnings), so a CI system
that reads JUnit (GitLab, Jenkins, Azure Pipelines, GitHub's test reporters) shows which part of the
machine is wrong. Every finding's code, detail and fix are in the case's text.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

from cudnn_doctor.model import Finding, Report
from cudnn_doctor.render.text import AREA_NAMES, area_of
from cudnn_doctor.user_files import escaped

SUITE = "cudnn-doctor check"
# what XML 1.0 does not allow in a document at all, not even as a character reference (its Char production)
NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def xml_text(text: str) -> str:
    """TEXT as XML 1.0 can carry it: a path's bytes that are not UTF-8 as \\xNN, control characters as \\xNN
    (U+FFFE, U+FFFF as \\uNNNN)."""
    def one(match: re.Match[str]) -> str:
        code = ord(match.group())
        return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"

    return NOT_XML.sub(one, escaped(text))


def _describe(findings: list[Finding]) -> str:
    return xml_text("\n\n".join(f"{f.code} {f.title} ({f.severity})\n{f.detail}\nFix: {f.fix}" for f in findings))


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
