"""`check --format markdown`: a report to paste into a bug tracker, as PyTorch's collect_env output is pasted
today: the machine (OS, C library, Python, compilers) in a table, then the check as text in a fenced block."""

from __future__ import annotations

import io
from typing import Any

from cudnn_doctor import __version__
from cudnn_doctor.model import Report


def _cell(value: object) -> str:
    """VALUE for a Markdown table cell: one line, every control or invisible character written as an escape (a
    terminal escape, a NUL, a bidi override reach no reader raw), its backslashes, pipes, backticks and angle
    brackets escaped."""
    from cudnn_doctor.streams import printable

    text = printable(" ".join(str(value).split()))
    for char in "\\|`<>":
        text = text.replace(char, "\\" + char)
    return text or " "


def check_text(report: Report, verbose: bool = False) -> str:
    """The text report as `check` prints it to a pipe: plain, one line per line."""
    from rich.console import Console

    from cudnn_doctor.render.text import render_check

    buffer = io.StringIO()
    console = Console(file=buffer, color_system=None, force_terminal=False, highlight=False, width=100)
    console.soft_wrap = True
    render_check(report, console, verbose)
    return buffer.getvalue()


def render_markdown(report: Report, facts: Any, verbose: bool = False) -> str:
    rows = [("cudnn-doctor", __version__), ("OS", f"{facts.os} ({facts.kernel})"),
            ("C library", facts.libc or "unknown"), ("Python", facts.python)]
    rows += [(name, found or "not found") for name, found in facts.compilers.items()]
    driver = report.driver
    rows.append(("NVIDIA driver", f"{driver.version} (CUDA {driver.cuda_driver_version})" if driver.version else
                 "not found"))
    rows.append(("GPUs", "; ".join(f"{g.index}: {g.name} (compute capability {g.compute_capability})"
                                   for g in report.gpus) or "none found"))
    summary = report.summary
    if summary is not None:
        counts = summary.counts
        rows.append(("Result", f"{summary.status}: {counts.get('error', 0)} error(s), {counts.get('warning', 0)} "
                               f"warning(s), exit {summary.exit_code}"))
    text = check_text(report, verbose).rstrip("\n")
    fence = "```"
    while fence in text:  # a path with ``` in it cannot end the block
        fence += "`"
    lines = ["### cudnn-doctor check", "", "| | |", "| --- | --- |"]
    lines += [f"| {_cell(name)} | {_cell(value)} |" for name, value in rows]
    lines += ["", f"{fence}text", "$ cudnn-doctor check", text, fence, ""]
    return "\n".join(lines)
