"""`cudnn-doctor fix`: the plan that makes `check` clean, and with --yes, applying it and checking again.

The actions applied are the plan's very objects: pip and conda run as the argv the plan holds (the
environment's own interpreter, the user's own index settings), `cudnn-doctor install` runs as its own
command (transactional), environment lines are printed to be sourced and are in force for the check after,
manual steps and edits are shown. The first action that fails stops the rest.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cudnn_doctor.child import python_module_argv, run_child
from cudnn_doctor.commands.check import CheckOptions, options_to_json, run_check
from cudnn_doctor.model import Report
from cudnn_doctor.plan.model import CONDA, ENV, INSTALL, PIP, PLAN_SCHEMA, Action, EnvChange, Plan
from cudnn_doctor.plan.shell import apply_changes, plan_json
from cudnn_doctor.probes.project_folders import default_project_folder

ACTION_TIMEOUT_S = 3600.0  # a pip install of a framework with its CUDA wheels takes minutes, not hours
CHECK_TIMEOUT_S = 600.0
PACKAGE_FOLDER = str(Path(__file__).resolve().parents[2])


def _doctor_argv(*args: str) -> tuple[str, ...]:
    """This doctor as a new process, importing exactly what this one imports (its folder and its dependencies)."""
    return _doctor_argv_of("cudnn_doctor", *args)


def _doctor_argv_of(module: str, *args: str) -> tuple[str, ...]:
    paths = [PACKAGE_FOLDER, *(p for p in sys.path if p and os.path.isdir(p) and p != PACKAGE_FOLDER)]
    return python_module_argv(module, *args, paths=paths)


@dataclass
class FixOptions:
    check: CheckOptions
    yes: bool = False
    shell: str = "bash"


@dataclass
class Outcome:
    """What `fix` did: the plan, what each action came to, the checks before and after."""

    plan: Plan
    report: Report
    results: list[dict[str, Any]] = field(default_factory=list)
    after: dict[str, Any] | None = None
    failed: str | None = None

    @property
    def exit_code(self) -> int:
        if self.after is not None:
            return 0 if self.failed is None and self.after["summary"]["counts"]["error"] == 0 else 1
        return 1 if self.plan.actions else 0

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"schema": PLAN_SCHEMA, **plan_json(self.plan, self.report.ld_library_path),
                                "before": summary_of(self.report)}
        if self.results:
            for entry, result in zip(data["actions"], self.results, strict=False):
                entry["outcome"] = result
        if self.after is not None:
            data["after"] = self.after
        if self.failed is not None:
            data["failed"] = self.failed
        data["exit_code"] = self.exit_code
        return data


def summary_of(report: Report) -> dict[str, Any]:
    return {"summary": {"status": report.summary.status if report.summary else "error",
                        "counts": dict(report.summary.counts) if report.summary else {},
                        "exit_code": report.summary.exit_code if report.summary else 3},
            "codes": [f.code for f in report.findings]}


def diagnose(options: FixOptions) -> Outcome:
    report = run_check(options.check)
    plan = report.plan or Plan(targets=(), actions=())
    return Outcome(plan=plan, report=report)


def apply(outcome: Outcome, options: FixOptions, say: Callable[[str], None]) -> Outcome:
    """Run every action the doctor can run, in order; stop at the first that fails; then check again."""
    env = dict(os.environ)
    changes: list[EnvChange] = []
    refused = _preflight(outcome.plan, env, say)
    if refused is not None:
        outcome.failed = refused
        outcome.results = [{"status": "not run"} for _ in outcome.plan.actions]
        outcome.after = _check_again(options.check, env)
        return outcome
    for index, action in enumerate(outcome.plan.actions, 1):
        if outcome.failed is not None:
            outcome.results.append({"status": "not run"})
            continue
        if action.kind in (PIP, CONDA, INSTALL) and action.argv:
            say(f"step {index}: running {_shown(action)}")
            result = _run(action, env)
            outcome.results.append(result)
            if result["status"] == "failed":
                outcome.failed = f"step {index} ({_shown(action)}) {result['why']}"
        elif action.kind == ENV:
            changes.extend(action.env)
            outcome.results.append({"status": "in force for the check after; source these lines in your shell"})
        else:
            outcome.results.append({"status": "shown: a step for you to take"})
    if changes:
        env = apply_changes(tuple(changes), env)  # LD_LIBRARY_PATH; PATH on Windows
    outcome.after = _check_again(options.check, env)
    return outcome


def _preflight(plan: Plan, env: dict[str, str], say: Callable[[str], None]) -> str | None:
    """Every pip install of the plan resolved first (`pip install --dry-run`, pip >= 22.2), so that a package that
    cannot be had stops the plan before anything is uninstalled or changed. The reason, or None."""
    for index, action in enumerate(plan.actions, 1):
        argv = tuple(action.argv or ())
        if action.kind != PIP or "install" not in argv:
            continue
        at = argv.index("install") + 1
        trial = (*argv[:at], "--dry-run", "--quiet", *(a for a in argv[at:] if a != "--force-reinstall"))
        say(f"step {index}: checking that pip can install it: {_shown(action)}")
        answer = run_child(trial, env, time.monotonic() + ACTION_TIMEOUT_S, what=argv[0])
        said = _last_words(answer.stdout, answer.stderr_tail, None)
        if answer.exit_code != 0 and "no such option" in said:
            continue  # a pip older than 22.2 cannot try first: the action itself still stops the plan on failure
        if answer.exit_code != 0:
            return (f"step {index} ({_shown(action)}) cannot be installed here, so nothing was changed: "
                    f"{said or answer.error or 'pip refused it'}")
    return None


def _shown(action: Action) -> str:
    import shlex

    return shlex.join(action.argv or ())


def _run(action: Action, env: dict[str, str]) -> dict[str, Any]:
    argv = tuple(action.argv or ())
    if action.kind == INSTALL and argv[:1] == ("cudnn-doctor",):
        argv = _doctor_argv(*argv[1:], "--yes", "--json")
    started = time.monotonic()
    answer = run_child(argv, env, time.monotonic() + ACTION_TIMEOUT_S, what=argv[0])
    took = round(time.monotonic() - started, 1)
    if answer.exit_code == 0:
        from cudnn_doctor.commands.pip_effect import unverified

        why_not = unverified(argv, env) if action.kind == PIP else None
        if why_not is not None:  # pip's exit 0 is not the package in the environment meant
            return {"status": "failed", "why": why_not, "seconds": took}
        return {"status": "done", "seconds": took}
    said = _last_words(answer.stdout, answer.stderr_tail, answer.values)
    why = answer.error or "failed"
    return {"status": "failed", "why": f"{why}{': ' + said if said and said not in why else ''}", "seconds": took}


def _last_words(stdout: str, stderr_tail: str, values: dict[str, Any] | None) -> str:
    if values is None:
        try:
            values = json.loads(stdout)
        except (ValueError, RecursionError):
            values = None
        values = values if isinstance(values, dict) else None
    if values and isinstance(values.get("result"), dict) and values["result"].get("error"):
        return str(values["result"]["error"])
    if values and values.get("error"):
        return str(values["error"])
    lines = [line for line in (stderr_tail or stdout).splitlines() if line.strip()]
    return lines[-1].strip()[:400] if lines else ""


def _check_again(options: CheckOptions, env: dict[str, str]) -> dict[str, Any]:
    """check in a new process (what a new shell would see), with the plan's environment lines in force: the
    very options of the check before, handed over as data (commands/check.py's check_again)."""
    from dataclasses import replace

    # the check after runs from / (child.py): the paths of this command line as this working folder reads them,
    # and the project a check without --project reads here (a repository's projects) named
    project = options.project_dir if options.project_dir is not None else default_project_folder(env)
    options = replace(options, search_paths=[os.path.abspath(folder) for folder in options.search_paths],
                      project_dir=os.path.abspath(project) if project is not None else None,
                      python=os.path.abspath(options.python) if options.python and os.path.lexists(options.python)
                      else options.python)
    answer = run_child(_doctor_argv_of("cudnn_doctor.commands.check", options_to_json(options)), env,
                       time.monotonic() + CHECK_TIMEOUT_S, what="the check after", answer_channel=True)
    try:
        data = json.loads(answer.answer)
    except (ValueError, RecursionError):
        data = {}
    if not isinstance(data, dict) or "summary" not in data:
        return {"summary": {"status": "error", "counts": {"error": 1, "warning": 0, "info": 0}, "exit_code": 3},
                "codes": [], "error": answer.error or "the check after printed no report"}
    return {"summary": data["summary"], "codes": [f["code"] for f in data.get("findings", [])],
            "findings": [{"code": f["code"], "severity": f["severity"], "title": f["title"], "subject": f.get("subject")}
                         for f in data.get("findings", [])]}


def interactive() -> bool:
    try:
        return sys.stdin.isatty() and sys.stdout.isatty()
    except (AttributeError, ValueError):
        return False


def main(yes: bool, json_output: bool, shell: str, require: list[str], select: list[str], ignore: list[str],
         search_path: list[str], framework: list[str], project: str | None, python: str | None, verbose: bool,
         ask: Callable[[str], bool]) -> None:
    """The command: the plan shown (or its JSON); on a terminal without --yes, ASK whether to apply it; with
    --yes (or a yes), applied and checked again; ends with SystemExit(status)."""
    from cudnn_doctor.command import console
    from cudnn_doctor.commands.check import check_options, check_settings
    from cudnn_doctor.plan.shell import SHELL_NAMES as SHELLS
    from cudnn_doctor.streams import log_line

    if shell not in SHELLS:
        from cudnn_doctor.errors import DoctorError

        raise DoctorError(f"--shell {shell!r}: not a shell I write for", fix=f"use one of {', '.join(SHELLS)}")
    settings = check_settings(select, ignore, None, require, None, json_output)
    options = FixOptions(check_options(settings, search_path, framework, project, python), yes=yes, shell=shell)
    outcome = diagnose(options)
    go = yes
    if outcome.plan.actions and not yes and not json_output and interactive():
        from cudnn_doctor.render.plan_text import render_plan

        render_plan(console(), outcome, shell, applied=False)
        go = ask("Apply the steps marked run now?")
        if not go:
            raise SystemExit(1)
    elif not go:
        _show(outcome, shell, json_output, applied=False)
        raise SystemExit(outcome.exit_code)
    if outcome.plan.actions:
        def progress(line: str) -> None:  # a step's line: paths and pip's words are text, never markup
            if not json_output:
                console(stderr=True).print(log_line(line), markup=False, highlight=False)

        apply(outcome, options, progress)
    _show(outcome, shell, json_output, applied=True, shown=not yes)  # asked on a terminal: the plan is on screen
    raise SystemExit(outcome.exit_code)


def _show(outcome: Outcome, shell: str, json_output: bool, applied: bool, shown: bool = False) -> None:
    if json_output:
        from cudnn_doctor.render.json_out import write_json

        write_json(outcome.to_json())
        return
    from cudnn_doctor.command import console
    from cudnn_doctor.render.plan_text import render_plan

    render_plan(console(), outcome, shell, applied=applied and outcome.after is not None, shown=shown)
