"""`explain` answers as text."""

from __future__ import annotations

from typing import Any

from rich.console import Console

from cudnn_doctor.render.safe import escape
from cudnn_doctor.render.text import print_with_commands, print_wrapped


def render_explain(data: dict[str, Any], console: Console, verbose: bool = False) -> None:
    p = console.print
    if "codes" in data:  # explain --list
        for entry in data["codes"]:
            p(f"[bold]{entry['code']}[/]  {entry['severity']:<8} {escape(entry['title'])}")
        return
    code = data.get("code")
    if code is None and "code" in data:
        p(f"[yellow]{escape(data['query'])} is not a cudnn-doctor finding code.[/] cudnn-doctor explain --list "
          "lists them.")
        return
    if code:
        p(f"[bold]{code['code']}[/] {escape(code['title'])} [dim]({code['severity']})[/]")
        print_wrapped(console, escape(code['explanation']), 4)
        print_with_commands(console, "[bold]Fix:[/] ", code['fix'], 4)
        if data["matches"]:
            p("    Messages that lead here:")
            for entry in data["matches"][: None if verbose else 5]:
                lines = [line.strip() for line in entry["example"].splitlines() if line.strip()] or [""]
                p(f"      • {escape('[' + entry['framework'] + ']')} {escape(lines[0][:160])}")
                for line in lines[1:4]:  # a multi-line snippet stays under its bullet
                    p(f"          {escape(line[:160])}")
        return
    if (data.get("input") or {}).get("note"):
        p(f"[dim]{escape(data['input']['note'])}[/]")
    if not data["matches"]:
        _set_aside(console, data.get("set_aside") or [])
        p("[yellow]No known cause for this message.[/] It is not in cudnn-doctor's catalog of cuDNN/CUDA errors.")
    for match in data["matches"]:  # the fault first: a TensorFlow log opens with five harmless start-up lines
        p(f"[bold]{escape(match['framework'])}[/]: [bold]{match['code']}[/] [dim]({escape(match['id'])})[/]")
        if match.get("by_resemblance"):  # no rule read it: the reports it resembles, said as such
            print_wrapped(console, f"[yellow]{escape(match['matched'])}[/]", 4)
        else:
            print_wrapped(console, f"Matched: {escape(match['matched'])}", 4)
        print_wrapped(console, f"[bold]Cause:[/] {escape(match['cause'])}", 4)
        print_with_commands(console, "[bold]Fix:[/] ", match['fix'], 4)
        print_wrapped(console, f"[dim]Source: {escape(match['source'])}[/]", 4)
    if data["matches"]:
        _set_aside(console, data.get("set_aside") or [])
    facts = data.get("facts") or {}
    if verbose and facts:
        read = [f"{lib['file']} ({lib['part']}, {lib['failure'] or 'named'})" for lib in facts.get("libraries", [])]
        read += [f"{s['name']} ({s['number']})" for s in facts.get("statuses", [])]
        read += [f"sm {cc}" for cc in facts.get("compute_capabilities", [])]
        if read:
            p(f"    [dim]Read from the message: {escape(', '.join(read[:12]))}[/]")
    machine = data.get("machine")
    if machine:
        p("[bold]On this machine[/] (what cudnn-doctor check sees):")
        for sentence in machine["summary"]:
            print_wrapped(console, f"• {escape(sentence)}", 4, 6)
        for finding in machine["findings"][: None if verbose else 4]:
            print_wrapped(console, f"{finding['code']} {escape(finding['title'])}: {escape(finding['detail'])}", 4)
            print_with_commands(console, "[bold]Fix:[/] ", finding['fix'], 8)


def _set_aside(console: Console, rows: list[dict[str, Any]]) -> None:
    """The lines read and set aside: the program's own requests, harmless start-up lines, each with why."""
    for row in rows:
        label = {"program": "The program's own request", "other-gpu": "Another vendor's GPU",
                 "other-platform": "A platform with no CUDA build of the framework"}.get(row["kind"], "A harmless line")
        console.print(f"[bold]{label}[/], not a GPU-stack fault: {escape(row['text'])}")
        console.print(f"    {escape(row['why'])}")
        console.print(f"    [dim]Source: {escape(row['source'])}[/]")
