"""The plan as words: the environment lines in each shell, `cudnn-doctor fix`'s screens. Each finding's fix
is the plan's own (plan/fixes.py), so a finding's fix, the plan `fix` prints and the JSON never disagree.
"""

from __future__ import annotations

from typing import Any

from cudnn_doctor.plan.actions import ENV, RUNNABLE
from cudnn_doctor.plan.shell import command_line, env_lines, folders_of


def render_plan(console: Any, outcome: Any, shell: str, applied: bool, shown: bool = False) -> None:
    """`cudnn-doctor fix`: the plan, step by step; after --yes, what each step came to and before -> after.
    SHOWN: the plan is on the screen already (a terminal asked first): only what each step came to."""
    from cudnn_doctor.render.safe import escape
    from cudnn_doctor.render.text import print_with_commands, print_wrapped

    plan, report = outcome.plan, outcome.report
    if not plan.actions:
        console.print("Nothing to fix: cudnn-doctor check finds no error or warning the doctor can treat.",
                      highlight=False)
        return
    if not (applied and shown):
        console.print(f"Plan for {escape(', '.join(plan.targets))}:", highlight=False)
    for index, action in enumerate(plan.actions, 1):
        label = {"pip": "run", "conda": "run", "install": "run", "env": "source", "edit": "edit",
                 "manual": "do"}.get(action.kind, action.kind)
        if applied and shown:
            result = outcome.results[index - 1] if outcome.results[index - 1:index] else {"status": "not run"}
            extra = f": {result['why']}" if result.get("why") else ""
            console.print(f"  {index}. [bold]{label}[/] {escape(result['status'])}{escape(extra)}", highlight=False)
            continue
        # a step found by trying (fix's verification) may resolve no finding of the check: it cures what the
        # frameworks failed, which its `tried:` line says
        resolves = f" (resolves {', '.join(action.resolves)})" if action.resolves else ""
        console.print(f"  {index}. [bold]{label}[/]{resolves}", highlight=False)
        if action.kind == ENV:
            for line in env_lines(action.env, folders_of(report), shell):
                console.print("       " + escape(line), highlight=False, soft_wrap=True)
        elif action.kind == "edit":
            for line in (action.text or "").splitlines():
                console.print("       " + escape(line), highlight=False, soft_wrap=True)
        elif action.argv:
            console.print("       " + escape(_run_line(action.argv, shell)), highlight=False, soft_wrap=True)
        else:
            print_with_commands(console, "", action.text or "", 7)
        print_wrapped(console, "[dim]why:[/] " + escape(action.why), 7)  # prose: a value's `...` is no command
        if action.verified and action.verified.startswith(("verified here", "tried here")):  # what was tried (JSON
            print_with_commands(console, "[dim]tried:[/] ", action.verified, 7)  # says why the others were not)
        if applied and outcome.results[index - 1:index]:
            result = outcome.results[index - 1]
            extra = f": {result['why']}" if result.get("why") else ""
            console.print(f"       [bold]{escape(result['status'])}[/]{escape(extra)}", highlight=False)
    if plan.tried and not (applied and shown):
        print_with_commands(console, "[bold]Not cured here:[/] ", plan.tried, 2)
    if outcome.after is not None:
        before, after = report.summary, outcome.after["summary"]
        console.print(f"Before: {_counts(before.counts if before else {})} ({', '.join(f.code for f in report.findings)}).",
                      highlight=False)
        codes = ", ".join(outcome.after.get("codes", [])) or "none"
        console.print(f"After:  {_counts(after.get('counts', {}))} ({codes}).", highlight=False)
        if outcome.failed:
            failed = next((i for i, r in enumerate(outcome.results, 1) if r.get("status") == "failed"), None)
            console.print(f"Stopped: step {failed} failed (why is said under it); the steps after it were not run."
                          if failed else f"Stopped: {escape(outcome.failed)}", highlight=False)
    else:
        runnable = sum(1 for a in plan.actions if a.kind in RUNNABLE)
        console.print(f"cudnn-doctor fix --yes runs the {runnable} step(s) marked run, with the environment lines in "
                      "force, and checks again." if runnable else
                      "Take these steps, then run cudnn-doctor check again.", highlight=False)


def _run_line(argv: tuple[str, ...], shell: str) -> str:
    from cudnn_doctor.quoting import CannotQuote, comment

    try:
        return command_line(argv, shell)
    except CannotQuote as refusal:
        return comment(shell, f"cudnn-doctor wrote no {shell} line for this step: {refusal}, rename the folder")


def _counts(counts: dict[str, int]) -> str:
    return ", ".join(f"{counts.get(k, 0)} {k}{'s' if counts.get(k, 0) != 1 else ''}" for k in ("error", "warning"))
