"""Text for `fleet merge` / `fleet run`: only what differs from the majority, and which nodes failed."""

from __future__ import annotations

import re
from typing import Any

from rich.console import Console
from rich.markup import escape as escape_markup

# what would break a node's line in two, move the cursor or recolour the terminal
CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")


def escape(text: str) -> str:
    """A value from a node's report, on one line: control characters as \\xNN, markup escaped."""
    def one(match: re.Match[str]) -> str:
        code = ord(match.group())
        return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"

    return escape_markup(CONTROL.sub(one, str(text)))


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
