"""Text for `fleet merge` / `fleet run`: only what differs from the majority, and which nodes failed."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.markup import escape as escape_markup

from cudnn_doctor.streams import printable


def escape(text: str) -> str:
    """A value from a node's report, on one line: every control or invisible character (a newline, a terminal's
    escape, C1, U+2028/2029, a bidi control) and a byte not UTF-8 written as an escape (streams.printable, as
    every other renderer's), markup escaped. Its own set of characters had left bidi controls raw."""
    return escape_markup(printable(str(text)))


def render_fleet(data: dict[str, Any], console: Console) -> None:
    nodes, failed, drift = data["nodes"], data["failed"], data["drift"]
    answered = nodes - len(failed)
    console.print(f"{nodes} node(s): {answered} report(s) read, {len(failed)} failed")
    if data.get("srun"):
        console.print(f"[yellow]![/yellow] {escape(data['srun'])}")
    for node in failed:
        console.print(f"[red]✗[/red] {escape(node['node'])}: {escape(node['why'] or '')} ({escape(node['source'])})")
    if not drift:
        if answered:
            console.print("[green]✓[/green] every node that answered agrees on driver, toolkits, cuDNN copies, "
                          "frameworks and findings")
        return
    console.print(f"[yellow]![/yellow] {len(drift)} field(s) differ from the majority:")
    for entry in drift:
        majority = entry["majority"]
        value = "no value" if majority["value"] in ("(absent)", "(none)") else escape(majority["value"])
        if entry.get("tie"):  # no value has more nodes than the others: none of them is "the majority"
            console.print(f"  {escape(entry['field'])}: no majority, as many nodes have one value as another; "
                          f"{majority['nodes']} node(s) have {value}; the others:")
        else:
            console.print(f"  {escape(entry['field'])}: {majority['nodes']} node(s) have {value}")
        for outlier in entry["outliers"]:
            console.print(f"    • {escape(outlier['node'])}: {escape(outlier['value'])}")
