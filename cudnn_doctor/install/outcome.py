"""What an install or uninstall did, as plain data: the renderers' only input."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from cudnn_doctor.errors import DoctorError
from cudnn_doctor.install.plan import FileChange, InstallPlan
from cudnn_doctor.model import CudnnInstall, Finding, to_jsonable

SCHEMA = "cudnn-doctor/install/1"


@dataclass(frozen=True)
class UninstallPlan:
    prefix: str
    install_id: str
    version: str | None
    installed_at: str
    changes: tuple[FileChange, ...]  # remove (what the install wrote) | restore (what it backed up)
    changed_since: tuple[str, ...]  # files modified after the install
    folders_removed: tuple[str, ...]


@dataclass(frozen=True)
class Outcome:
    command: str  # install | uninstall
    status: str  # planned | installed | declined | uninstalled | nothing-to-do
    plan: InstallPlan | UninstallPlan | None
    actions: tuple[str, ...] = ()
    findings: tuple[Finding, ...] = ()
    exit_code: int = 0
    manifest: str | None = None
    installed: CudnnInstall | None = None
    loader: str | None = None  # what was done so that the loader finds the result
    notes: tuple[str, ...] = ()


def outcome_to_json(outcome: Outcome) -> dict[str, Any]:
    return {
        "schema": SCHEMA,
        "command": outcome.command,
        "plan": to_jsonable(outcome.plan),
        "actions": list(outcome.actions),
        "result": {
            "status": outcome.status,
            "manifest": outcome.manifest,
            "installed": to_jsonable(outcome.installed),
            "loader": outcome.loader,
            "notes": list(outcome.notes),
        },
        "findings": to_jsonable(list(outcome.findings)),
        "exit_code": outcome.exit_code,
    }


def failure_to_json(command: str, error: DoctorError, plan: InstallPlan | UninstallPlan | None = None) -> dict[str, Any]:
    """The JSON object for a run that ended with a DoctorError: the registry's finding (code,
    title, detail, fix) when it has one; a usage error has only its message and fix."""
    findings = [to_jsonable(error.finding)] if error.finding is not None else []
    return {"schema": SCHEMA, "command": command, "plan": to_jsonable(plan), "actions": [],
            "result": {"status": "failed", "error": error.message, "fix": error.fix}, "findings": findings,
            "exit_code": error.exit_code}
