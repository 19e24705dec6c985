"""Every finding's fix is written here, and nowhere else: the plan's actions that resolve it, rendered; where
the plan has none for it (information, or nothing the doctor can run), its remedy: what its rule read that
the user can do (the value `fix`) or its code's advice (compat/fixes.toml), filled with the rule's values.
Rules and codes.py leave a finding's fix empty; every command that shows findings passes them through here."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from cudnn_doctor.knowledge.advice import advice
from cudnn_doctor.model import Finding
from cudnn_doctor.plan.actions import ENV, RUNNABLE, Action, Plan
from cudnn_doctor.plan.shell import Folders, command_line, env_lines
from cudnn_doctor.quoting import code_span, in_prose


def remedy_of(code: str, values: dict[str, Any], os_name: str = "linux") -> str:
    """What the user can do about CODE where no action of a plan is: the remedy its rule read, else its advice
    (for OS_NAME's shell and layout)."""
    return str(values["fix"]) if values.get("fix") else advice(code, values, os_name)


def remedy(finding: Finding, os_name: str = "linux") -> str:
    return remedy_of(finding.code, finding.values, os_name)


def advised(findings: list[Finding] | tuple[Finding, ...]) -> list[Finding]:
    """FINDINGS judged without a plan (information only, bench's, an install's fit), each with its remedy."""
    return [finding if finding.fix else replace(finding, fix=remedy(finding)) for finding in findings]


def action_text(action: Action, current: Folders) -> str:
    """One action as a sentence with its command in backticks."""
    if action.kind in RUNNABLE and action.argv:
        return code_span(command_line(action.argv))
    if action.kind == ENV:
        line = "; ".join(env_lines(action.env, current))
        removed = [c.folder for c in action.env if c.op == "remove"]
        variable = action.env[0].variable
        if action.env[0].system == "windows":  # PowerShell's line, cmd's, and the one that keeps it for new programs
            cmd, user = ("; ".join(env_lines(action.env, current, shell)) for shell in ("cmd", "user"))
            what = f"take {', '.join(removed)} out of {variable}" if removed else f"put it on {variable}"
            return (f"{what}, in PowerShell: {code_span(line)} in cmd: {code_span(cmd)} for every new program: "
                    f"{code_span(user)}")
        if removed:
            return f"take {in_prose(', '.join(removed))} out of {variable}: {code_span(line)}"
        return code_span(line)
    if action.kind == "edit" and action.text:
        files = [line[4:] for line in action.text.splitlines() if line.startswith("+++ ")]
        lines = action.text.splitlines()
        changes = [(a[1:].strip(), b[1:].strip()) for a, b in zip(lines, lines[1:], strict=False)
                   if a.startswith("-") and not a.startswith("---") and b.startswith("+") and not b.startswith("+++")]
        said = "; ".join(f"{code_span(old)} to {code_span(new)}" for old, new in changes[:2])
        return f"edit {in_prose(', '.join(files))}: {said} (cudnn-doctor fix shows the diff)"
    return action.text or ""


def with_fixes(findings: list[Finding], plan: Plan, current: Folders) -> list[Finding]:
    """FINDINGS, each with its fix: the plan's actions that resolve it, rendered; its remedy where none."""
    out = []
    for finding in findings:
        actions = plan.for_finding(finding.code, finding.subject)
        if actions:
            fix = ", then ".join(action_text(a, current) for a in actions)
            if len(plan.actions) > 1 and any(len(a.findings) > 1 for a in actions):
                fix += " (one treatment with the other findings, which cudnn-doctor fix shows)"
            finding = replace(finding, fix=fix)
        elif not finding.fix:
            finding = replace(finding, fix=remedy(finding))
        out.append(finding)
    return out
