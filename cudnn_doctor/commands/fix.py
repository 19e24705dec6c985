"""`cudnn-doctor fix`: the plan that makes `check` clean (diagnose(), doctor/diagnosis.py), and with --yes, that
plan applied and the machine diagnosed again (treat(), doctor/treatment.py); rendered as text or plan JSON."""

from __future__ import annotations

import sys
from collections.abc import Callable

from cudnn_doctor.doctor.diagnosis import check_options, diagnose, resolve_check_settings
from cudnn_doctor.doctor.treatment import Treatment, treat, untreated
from cudnn_doctor.doctor.verify import verified


def interactive() -> bool:
    try:
        return sys.stdin.isatty() and sys.stdout.isatty()
    except (AttributeError, ValueError):
        return False


def main(yes: bool, json_output: bool, shell: str, require: list[str] | None, select: list[str] | None,
         ignore: list[str] | None, search_path: list[str] | None, framework: list[str] | None, project: str | None,
         python: str | None, verbose: bool, ask: Callable[[str], bool]) -> None:
    """The command: the plan shown (or its JSON); on a terminal without --yes, ASK whether to apply it; with
    --yes (or a yes), applied and checked again; ends with SystemExit(status)."""
    from cudnn_doctor.plan.shell import SHELL_NAMES as SHELLS
    from cudnn_doctor.render.console import console
    from cudnn_doctor.streams import log_line

    if shell not in SHELLS:
        from cudnn_doctor.errors import DoctorError

        raise DoctorError(f"--shell {shell!r}: not a shell I write for", fix=f"use one of {', '.join(SHELLS)}", code="CD001")
    settings = resolve_check_settings(select or [], ignore or [], None, require or [], None, json_output)
    # each step of the plan tried on the frameworks that fail here, in children, before it is printed
    diagnosis = verified(diagnose(check_options(settings, search_path or [], framework or [], project, python)))
    treatment = untreated(diagnosis)
    go = yes
    if diagnosis.plan.actions and not yes and not json_output and interactive():
        from cudnn_doctor.render.plan_text import render_plan

        render_plan(console(), treatment, shell, applied=False)
        go = ask("Apply the steps marked run now?")
        if not go:
            raise SystemExit(1)
    elif not go:
        _show(treatment, shell, json_output, applied=False)
        raise SystemExit(treatment.exit_code)
    if diagnosis.plan.actions:
        def progress(line: str) -> None:  # a step's line: paths and pip's words are text, never markup
            if not json_output:
                console(stderr=True).print(log_line(line), markup=False, highlight=False)

        treatment = treat(diagnosis, progress)
    _show(treatment, shell, json_output, applied=True, shown=not yes)  # asked on a terminal: the plan is on screen
    raise SystemExit(treatment.exit_code)


def _show(treatment: Treatment, shell: str, json_output: bool, applied: bool, shown: bool = False) -> None:
    if json_output:
        from cudnn_doctor.render.json_out import write_json

        write_json(treatment.to_json())
        return
    from cudnn_doctor.render.console import console
    from cudnn_doctor.render.plan_text import render_plan

    render_plan(console(), treatment, shell, applied=applied and treatment.after is not None, shown=shown)
