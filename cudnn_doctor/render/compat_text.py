"""`compat` answers as text."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table

from cudnn_doctor.render.safe import escape

VERDICT_STYLE = {"compatible": "green", "incompatible": "red", "unknown": "yellow"}


def render_answer(data: dict[str, Any], console: Console, verbose: bool = False) -> None:
    p = console.print
    build = f" ({data['build']})" if data.get("build") else ""
    p(f"[bold]{escape(data['framework'])} {escape(data['version'])}[/]{escape(build)}")
    if not data["requires"] and not data.get("reasons"):
        p("    no rows for this release in compat/")
    releases = {str(row.get("version")) for row in data["requires"] if row.get("version")}
    # a series asked for (torch==2.4): each row says which release it is (2.4.0, 2.4.1)
    asked = str(data.get("version") or "").split("+")[0]
    label = ("version",) if len(releases) > 1 or releases - {asked, str(data.get("version"))} else ()
    for row in data["requires"]:
        parts = [f"{key} {_text(row[key], key)}" for key in (*label, "os", "artifact", "package", "cuda", "min_cuda", "cudnn",
                                                               "driver", "python", "cudnn_package", "cudnn_requirement",
                                                               "compute_capability", "min_compute_capability",
                                                               "arch_list", "ptx")
                 if key in row and row[key] not in (None, "")]
        p("    • " + escape(", ".join(parts)))
        if verbose:
            p(f"      [dim]source: {escape(str(row.get('source')))}[/]")
    if "verdict" in data:
        style = VERDICT_STYLE.get(data["verdict"], "white")
        given = ", ".join(f"{k} {v}" for k, v in data.get("given", {}).items() if k != "os")
        p(f"[{style}]{escape(data['verdict'].upper())}[/]" + (f" with {escape(given)}" if given else ""))
        for reason in data["reasons"]:
            mark = {"compatible": "✓", "incompatible": "✗", "unknown": "?"}[reason["verdict"]]
            style = VERDICT_STYLE[reason["verdict"]]
            if reason.get("warning") and reason["verdict"] == "compatible":
                mark, style = "!", "yellow"
            p(f"    [{style}]{mark}[/] {escape(reason['part'])}: {escape(reason['why'])}")
            p(f"      [dim]source: {escape(_fitted(reason['source'], console, verbose, 14))}[/]")
        if data["verdict"] == "unknown":
            p("[yellow]warning: the data cannot decide this combination; unknown is not compatible.[/]")


def _fitted(text: str, console: Console, verbose: bool, indent: int) -> str:
    """TEXT whole under -v and wherever the output is not a terminal (a file, a pipe, JSON has it whole); on a
    terminal, cut to one line of its width (sources are 300 to 1,000 characters), ending in "... (-v: whole)"."""
    room = console.width - indent
    if verbose or not console.is_terminal or len(text) <= room:
        return text
    tail = "... (-v: whole)"
    return text[:max(10, room - len(tail))].rstrip() + tail


def _text(value: Any, key: str = "") -> str:
    if key == "arch_list" and isinstance(value, list) and value:
        return f"sm_{str(value[0]).replace('.', '')}..sm_{str(value[-1]).replace('.', '')}"
    return " or ".join(str(v) for v in value) if isinstance(value, list) else str(value)


def render_list(data: dict[str, Any], console: Console, verbose: bool = False) -> None:
    columns = data["columns"] if verbose else [c for c in data["columns"] if c != "source"]
    table = Table(title=f"compat/{data['table']}.toml", show_lines=False)
    for column in columns:
        table.add_column(column)
    for row in data["rows"]:
        table.add_row(*[escape("" if row.get(c) is None else _text(row.get(c), c)) for c in columns])
    if console.is_terminal:
        console.print(table)
    else:  # piped or redirected: every cell whole, however wide the rows are, never cut to 80 columns
        from rich.measure import Measurement

        narrow = console.width
        console.width = max(narrow, Measurement.get(console, console.options.update_width(1 << 16), table).maximum)
        try:
            console.print(table)
        finally:
            console.width = narrow
    if data.get("cuda"):
        console.print(f"[dim]builds for CUDA {escape(str(data['cuda']))}; a build for an older CUDA of the same "
                      "major runs on its driver too (CUDA minor version compatibility).[/]")
    if not verbose:
        console.print("[dim]-v adds each row's source.[/]")
