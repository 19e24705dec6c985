"""The plan as plain data: what to do, which findings it resolves, and the rows that make it right."""

from __future__ import annotations

from dataclasses import field

from cudnn_doctor.records import record

PLAN_SCHEMA = "cudnn-doctor/plan/1"

PIP, CONDA, INSTALL, ENV, EDIT, MANUAL = "pip", "conda", "install", "env", "edit", "manual"
RUNNABLE = (PIP, CONDA, INSTALL)  # what `fix --yes` runs itself; env lines are sourced, edits and manual steps shown


@record
class EnvChange:
    """One change to an environment variable that holds a list of folders."""

    variable: str  # LD_LIBRARY_PATH (Windows: PATH)
    op: str  # "prepend" | "remove"
    folder: str
    system: str = "posix"  # "windows": its lines are for PowerShell and cmd, its folders joined with ';'


@record
class Action:
    """One step of the treatment, with the codes it resolves and its source."""

    kind: str  # pip | conda | install | env | edit | manual
    resolves: tuple[str, ...]  # finding codes
    why: str
    source: str  # the data rows that make it right
    argv: tuple[str, ...] | None = None  # for what the doctor runs (pip, conda, install)
    text: str | None = None  # for what it cannot run (manual steps, an edit shown as a diff)
    env: tuple[EnvChange, ...] = ()  # for kind env
    findings: tuple[tuple[str, str | None], ...] = field(default=(), compare=False)  # (code, subject) it resolves
    verified: str | None = None  # "verified here: ..." (the frameworks' work ran again with it), or why it was not


@record
class Plan:
    """The one treatment of a report's findings."""

    targets: tuple[str, ...]
    actions: tuple[Action, ...]
    tried: str | None = None  # where no step cured what fails here: what was tried, and what the frameworks said

    def for_finding(self, code: str, subject: str | None) -> list[Action]:
        return [a for a in self.actions if (code, subject) in a.findings]
