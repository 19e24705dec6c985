"""check's output formats, one registry entry each: adding a format is one entry here and its renderer.

A document format (json, junit, prometheus) is one text, written to standard output or, with --output
FILE, atomically to FILE; a terminal format (text, github) prints for people and CI logs. The option's
values, its help, completion, the settings' check and --output's rule all read this table."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from cudnn_doctor.records import record


@record(frozen=True)
class OutputFormat:
    """One way check answers."""

    name: str
    help: str
    document: Callable[[Any, bool, bool], str] | None = None  # (report, strict, verbose) -> the whole text
    show: Callable[[Any, bool, bool], None] | None = None  # (report, verbose, quiet): printed for people
    # read by a program that decodes UTF-8 (a JSON or XML parser, Prometheus, GitHub's runner): written in UTF-8
    # whatever the locale or PYTHONIOENCODING says (the same bytes --output writes); text follows the terminal's
    utf8: bool = True
    # the renderer's own modules: check imports them while the probes' children answer (its wait), not after the
    # last answer, where every millisecond is the user's (rich alone is 15-25 ms of the text format)
    modules: tuple[str, ...] = ()

    @property
    def is_document(self) -> bool:
        return self.document is not None


def _json(report: Any, strict: bool, verbose: bool) -> str:
    from cudnn_doctor.render.json_out import json_text
    from cudnn_doctor.render.report_json import report_to_json

    return json_text(report_to_json(report))


def _junit(report: Any, strict: bool, verbose: bool) -> str:
    from cudnn_doctor.render.junit import junit_xml_text

    return junit_xml_text(report, strict)


def _prometheus(report: Any, strict: bool, verbose: bool) -> str:
    import time

    from cudnn_doctor.render.prometheus import render_prometheus
    from cudnn_doctor.render.report_json import report_to_json

    return render_prometheus(report_to_json(report), now=time.time())


def _markdown(report: Any, strict: bool, verbose: bool) -> str:
    from cudnn_doctor.probes.system import system_facts
    from cudnn_doctor.render.markdown import render_markdown

    nvcc = next((t.nvcc for t in report.toolkits if t.nvcc), None)
    return render_markdown(report, system_facts(nvcc=nvcc), verbose)


def _text(report: Any, verbose: bool, quiet: bool) -> None:
    from cudnn_doctor.render.console import console
    from cudnn_doctor.render.text import render_check

    render_check(report, console(), verbose, quiet)


def _github(report: Any, verbose: bool, quiet: bool) -> None:
    import os
    import sys

    from cudnn_doctor.render.console import console
    from cudnn_doctor.render.github import log_lines, render_github
    from cudnn_doctor.render.text import render_check

    shown = console()
    with shown.capture() as captured:
        render_check(report, shown, verbose, quiet)
    sys.stdout.write(log_lines(captured.get()))
    render_github(report, sys.stdout, os.environ.get("GITHUB_STEP_SUMMARY"), verbose)


CONSOLE, TEXT = "cudnn_doctor.render.console", "cudnn_doctor.render.text"
TEXT_PARTS = ("cudnn_doctor.render.next_step", "cudnn_doctor.render.multi_gpu_text")  # render.text imports them
JSON_OUT, REPORT_JSON = "cudnn_doctor.render.json_out", "cudnn_doctor.render.report_json"
FORMATS: dict[str, OutputFormat] = {one.name: one for one in (
    OutputFormat("text", "", show=_text, utf8=False, modules=(CONSOLE, TEXT, *TEXT_PARTS)),  # the default
    OutputFormat("json", "one object", document=_json, modules=(JSON_OUT, REPORT_JSON)),
    OutputFormat("github", "the report plus GitHub Actions annotations and a job summary ($GITHUB_STEP_SUMMARY)",
                 show=_github, modules=(CONSOLE, TEXT, *TEXT_PARTS, "cudnn_doctor.render.github")),
    OutputFormat("junit", "JUnit XML, one test case per area", document=_junit, modules=("cudnn_doctor.render.junit",)),
    OutputFormat("prometheus", "metrics for node_exporter's textfile collector", document=_prometheus,
                 modules=("cudnn_doctor.render.prometheus", REPORT_JSON)),
    OutputFormat("markdown", "a report to paste into an issue (OS, C library, Python, compilers, then the check)",
                 document=_markdown, modules=("cudnn_doctor.render.markdown", "cudnn_doctor.probes.system")),
)}
NAMES = tuple(FORMATS)


def documents() -> tuple[str, ...]:
    return tuple(name for name, one in FORMATS.items() if one.is_document)


def words(names: tuple[str, ...]) -> str:
    """'json, junit or prometheus'."""
    return ", ".join(names[:-1]) + f" or {names[-1]}" if len(names) > 1 else "".join(names)


def option_help() -> str:
    """--format's help: every format, the first the default, then what each one is."""
    names = words(tuple(f"{name} (default)" if index == 0 else name for index, name in enumerate(NAMES)))
    return f"{names}. " + "; ".join(f"{one.name}: {one.help}" for one in FORMATS.values() if one.help) + "."
