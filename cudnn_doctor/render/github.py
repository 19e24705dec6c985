"""`check --format github`: the report as GitHub Actions sees it.

Each error and warning becomes an annotation line (`::error title=CD301 ...::detail`), shown on the
run's summary page; with $GITHUB_STEP_SUMMARY set, a Markdown job summary is appended to that file.
Escaping follows the runner's workflow-command rules (actions/toolkit, packages/core/src/command.ts:
data escapes %, CR and LF; property values also escape : and ,). The runner (actions/runner,
ActionCommand.TryParseV2 and TryParse) reads every line of a step's output, split at CR and LF, as a
command when it starts with `::` after leading blanks, or holds `##[` anywhere; so the human report
printed before the annotations goes through `log_lines`, and a path or GPU name in it can neither
forge an `::error` line nor stop the commands that follow (`::stop-commands::TOKEN`).
"""

from __future__ import annotations

from typing import TextIO

from cudnn_doctor.model import Report
from cudnn_doctor.operating_system import CURRENT
from cudnn_doctor.render.text import AREA_NAMES, area_of
from cudnn_doctor.streams import printable

LEVELS = {"error": "error", "warning": "warning", "info": "notice"}
AREA_TITLES = {"driver": "NVIDIA driver", "toolkit": "CUDA toolkit", "cudnn": "cuDNN", "frameworks": "Frameworks",
               "requirements": "Requirements"}


def escape_data(text: str) -> str:
    """TEXT as a command's data: first every character no reader of the log should get raw (a terminal's escape,
    DEL, C1, U+2028, a bidi control, a path's byte that is not UTF-8: streams.printable) as an escape, a tab kept;
    then the runner's own escapes, which it undoes (%25, %0D, %0A)."""
    return printable(text, keep="\t\r\n").replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def log_lines(text: str) -> str:
    """TEXT (the human report) as log lines that the runner never takes for a workflow command: a CR
    written %0D (the runner ends a line there too), a line's leading `::` written `:%3A`, `##[` written `##%5B`."""
    lines = []
    for line in text.replace("\r", "%0D").split("\n"):
        stripped = line.lstrip()
        if stripped.startswith("::"):
            line = f"{line[:len(line) - len(stripped)]}:%3A{stripped[2:]}"
        lines.append(line.replace("##[", "##%5B"))
    return "\n".join(lines)


def workflow_commands(report: Report, verbose: bool = False) -> list[str]:
    """One workflow command per error and warning (and per info finding with -v)."""
    lines = []
    for f in report.findings:
        if f.severity == "info" and not verbose:
            continue
        title = escape_property(f"{f.code} {f.title}")
        lines.append(f"::{LEVELS.get(f.severity, 'warning')} title={title}::{escape_data(f'{f.detail} Fix: {f.fix}')}")
    return lines


def job_summary(report: Report) -> str:
    """The Markdown job summary: one row per area, then every error and warning with its fix."""
    summary = report.summary
    status = summary.status if summary else "error"
    mark = {"ok": "✅", "warning": "⚠️", "error": "❌"}[status if status in ("ok", "warning") else "error"]
    out = [f"## {mark} cudnn-doctor check: {status}", "", "| area | status | findings |", "| --- | --- | --- |"]
    for area in AREA_NAMES:
        found = [f for f in report.findings if area_of(f.code) == area and f.severity != "info"]
        if area == "requirements" and not found:
            continue
        worst = "error" if any(f.severity == "error" for f in found) else "warning" if found else "ok"
        out.append(f"| {AREA_TITLES[area]} | {worst} | {', '.join(f.code for f in found) or '—'} |")
    problems = [f for f in report.findings if f.severity in ("error", "warning")]
    if problems:
        out += ["", "| code | severity | problem | fix |", "| --- | --- | --- | --- |"]
        for f in problems:
            cells = [f.code, f.severity, f"**{f.title}**: {f.detail}", f.fix]
            out.append("| " + " | ".join(_cell(cell) for cell in cells) + " |")
    return "\n".join(out) + "\n\n"


def _cell(text: str) -> str:
    """TEXT for a cell of the job summary's table: one line (a CR or newline a blank), every other control, bidi or
    separator character and a path's byte that is not UTF-8 as an escape, its pipes escaped."""
    return printable(text.replace("\r", " ").replace("\n", " "), keep="\t").replace("|", "\\|")


def render_github(report: Report, out: TextIO, summary_file: str | None, verbose: bool = False) -> None:
    for line in workflow_commands(report, verbose):
        out.write(line + "\n")
    out.flush()
    if summary_file:
        import os
        import stat

        from cudnn_doctor.errors import DoctorError

        try:  # appended, as GitHub's runner expects; never blocks on a FIFO, never writes into a device
            descriptor = os.open(summary_file, os.O_WRONLY | os.O_APPEND | os.O_CREAT | CURRENT.open_flags, 0o644)
            try:
                if not stat.S_ISREG(os.fstat(descriptor).st_mode):
                    raise OSError(0, "not a regular file")
                from cudnn_doctor.user_files import ERROR_HANDLER

                os.write(descriptor, job_summary(report).encode("utf-8", ERROR_HANDLER))
            finally:
                os.close(descriptor)
        except OSError as error:
            raise DoctorError(f"GITHUB_STEP_SUMMARY={summary_file}: {error.strerror or error}",
                              fix="point it at a writable file, or unset it", code="CD006") from None
