"""treat(diagnosis) -> Treatment: the plan's very actions applied, then the machine diagnosed again.

Preflight first (every pip install resolved by pip itself, `--dry-run`, before anything changes), then each action
in order, the first that fails stopping the rest: pip and conda run as the argv the plan holds (the environment's own
interpreter, the user's own index settings: a child, since pip must run in the environment it changes), each pip step
verified in that environment (pip_effect.py); `cudnn-doctor install` is the install use-case called in this process
(transactional); environment lines are collected, and the diagnosis after runs in this process with them in force
(the environment handed over as data, as a new shell that sourced them would have it); manual steps and edits are
shown, never run."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from cudnn_doctor import json_values
from cudnn_doctor.child import run_child
from cudnn_doctor.doctor.diagnosis import Diagnosis, diagnose
from cudnn_doctor.errors import DoctorError
from cudnn_doctor.model import Report
from cudnn_doctor.plan.actions import CONDA, ENV, INSTALL, PIP, PLAN_SCHEMA, Action, EnvChange, Plan
from cudnn_doctor.plan.shell import apply_changes, apply_shell_settings, folders_of, plan_json

ACTION_TIMEOUT_S = 3600.0  # a pip install of a framework with its CUDA wheels takes minutes, not hours


@dataclass
class Treatment:
    """What `fix` did: the plan, what each action came to, the diagnoses before and after."""

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
        data: dict[str, Any] = {"schema": PLAN_SCHEMA, **plan_json(self.plan, folders_of(self.report)),
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


def untreated(diagnosis: Diagnosis) -> Treatment:
    """DIAGNOSIS's plan, not applied."""
    return Treatment(plan=diagnosis.plan, report=diagnosis.report)


def _writable(changes: tuple[EnvChange, ...], env: Mapping[str, str]) -> bool:
    """Whether the line these CHANGES print (bash's; PowerShell's for Windows) is a line and not a comment that says
    why none can be written: the check after puts in force only what the user can source (a fix says the program
    will then work)."""
    from cudnn_doctor.plan.shell import env_lines
    from cudnn_doctor.variables import loader_folders

    current = {"LD_LIBRARY_PATH": [folder for folder in loader_folders(env.get("LD_LIBRARY_PATH", "")) if folder],
               **{name: env[name].split(os.pathsep) for name in ("PATH", "PYTHONPATH") if env.get(name)}}
    return any(not line.startswith(("#", "rem ")) for line in env_lines(changes, current, "bash"))


def summary_of(report: Report) -> dict[str, Any]:
    return {"summary": {"status": report.summary.status if report.summary else "error",
                        "counts": dict(report.summary.counts) if report.summary else {},
                        "exit_code": report.summary.exit_code if report.summary else 3},
            "codes": [f.code for f in report.findings]}


def treat(diagnosis: Diagnosis, say: Callable[[str], None], env: Mapping[str, str] | None = None) -> Treatment:
    """Run every action of DIAGNOSIS's plan the doctor can run, in order; stop at the first that fails; then
    diagnose again with the plan's environment lines in force. ENV: the environment treated (this process's)."""
    treatment = untreated(diagnosis)
    env = dict(os.environ if env is None else env)
    changes: list[EnvChange] = []
    refused = _preflight(treatment.plan, env, say)
    if refused is not None:
        treatment.failed = refused
        treatment.results = [{"status": "not run"} for _ in treatment.plan.actions]
        treatment.after = _diagnose_again(diagnosis, env)
        return treatment
    for index, action in enumerate(treatment.plan.actions, 1):
        if treatment.failed is not None:
            treatment.results.append({"status": "not run"})
            continue
        if action.kind in (PIP, CONDA, INSTALL) and action.argv:
            say(f"step {index}: running {_shown(action)}")
            result = _install(action, env, say) if action.kind == INSTALL else _run(action, env)
            treatment.results.append(result)
            if result["status"] == "failed":
                treatment.failed = f"step {index} ({_shown(action)}) {result['why']}"
        elif action.kind == ENV:
            if not _writable(action.env, env):  # no shell can be given a line for it: nothing a user can source
                treatment.results.append({"status": "not applied: no shell line can make this change exactly "
                                                    "(the comment says why)"})
                continue
            changes.extend(action.env)
            treatment.results.append({"status": "in force for the check after; source these lines in your shell"})
        else:
            treatment.results.append({"status": "shown: a step for you to take"})
    if changes:
        env = apply_changes(tuple(changes), env)  # LD_LIBRARY_PATH; PATH on Windows
        apply_shell_settings(tuple(changes))  # umask, SIGCHLD: set in this process, which the check after inherits
    treatment.after = _diagnose_again(diagnosis, env)
    return treatment


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


_INSTALL_VALUES = {"--version": "version", "--cuda": "cuda_major", "--prefix": "prefix", "--mirror": "mirror",
                   "--from": "location", "--sha256": "sha256", "--os": "os_name"}
_INSTALL_FLAGS = {"--replace": "replace_majors", "--force": "force", "--no-verify": "no_verify"}


def install_options(argv: tuple[str, ...]) -> Any:
    """The plan's `cudnn-doctor install ...` ARGV as the install use-case's options (with --yes: fix was told yes)."""
    from cudnn_doctor.doctor.install import InstallOptions

    values: dict[str, Any] = {"yes": True}
    words = list(argv[2:])
    while words:
        word = words.pop(0)
        if word in _INSTALL_FLAGS:
            values[_INSTALL_FLAGS[word]] = True
        elif word in _INSTALL_VALUES and words:
            value = words.pop(0)
            values[_INSTALL_VALUES[word]] = int(value) if word == "--cuda" else value
        else:
            raise ValueError(f"the plan's install step has a word the install does not take: {word!r}")
    return InstallOptions(**values)


def _install(action: Action, env: dict[str, str], say: Callable[[str], None]) -> dict[str, Any]:
    """The plan's install step, by the install use-case in this process (its transaction rolls back on failure)."""
    from cudnn_doctor.doctor.install import Ui, run_install

    started = time.monotonic()
    ui = Ui(show_plan=lambda plan: None, confirm=lambda question: True, note=lambda text: say(f"cudnn-doctor: {text}"),
            progress=False, can_ask=False)
    try:
        outcome = run_install(install_options(tuple(action.argv or ())), ui)
    except DoctorError as error:
        why = error.message + (f" (fix: {error.fix})" if error.fix else "")
        return {"status": "failed", "why": f"failed: {why}", "seconds": round(time.monotonic() - started, 1)}
    took = round(time.monotonic() - started, 1)
    if outcome.exit_code != 0:
        said = "; ".join(f"{f.code} {f.title}" for f in outcome.findings if f.severity == "error")
        return {"status": "failed", "why": f"failed ({outcome.status}){': ' + said if said else ''}", "seconds": took}
    return {"status": "done", "seconds": took}


def _run(action: Action, env: dict[str, str]) -> dict[str, Any]:
    """A pip or conda step in a child (it must run in the environment it changes), pip's checked after."""
    argv = tuple(action.argv or ())
    started = time.monotonic()
    answer = run_child(argv, env, time.monotonic() + ACTION_TIMEOUT_S, what=argv[0])
    took = round(time.monotonic() - started, 1)
    if answer.exit_code == 0:
        from cudnn_doctor.doctor.pip_effect import unverified

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
            values = json_values.loads(stdout)
        except (ValueError, RecursionError):
            values = None
        values = values if isinstance(values, dict) else None
    if values and isinstance(values.get("result"), dict) and values["result"].get("error"):
        return str(values["result"]["error"])
    if values and values.get("error"):
        return str(values["error"])
    lines = [line for line in (stderr_tail or stdout).splitlines() if line.strip()]
    return lines[-1].strip()[:400] if lines else ""


def _diagnose_again(diagnosis: Diagnosis, env: Mapping[str, str]) -> dict[str, Any]:
    """The same diagnosis, in this process, as a program started with ENV (the plan's environment lines in force)
    finds the machine now: its summary, codes and findings."""
    try:
        report = diagnose(diagnosis.options, env).report
    except DoctorError as error:
        return {"summary": {"status": "error", "counts": {"error": 1, "warning": 0, "info": 0}, "exit_code": 3},
                "codes": [], "error": error.message}
    return {**summary_of(report),
            "findings": [{"code": f.code, "severity": f.severity, "title": f.title, "subject": f.subject}
                         for f in report.findings]}
