"""Turn a Report into Findings: pure functions of the report and the compat data, no I/O."""

from __future__ import annotations

from types import ModuleType
from typing import Any

from cudnn_doctor.codes import finding
from cudnn_doctor.model import ERROR, INFO, WARNING, Finding, Report, Summary

__all__ = ["evaluate", "finding", "rule_modules", "sort_findings", "summarize"]


def rule_modules() -> tuple[ModuleType, ...]:
    """The modules of rules, in the order they run (imported on first use: `check` loads them while its
    probes' children answer)."""
    from cudnn_doctor.rules import cudnn, dl4j, driver, frameworks, health, platform, process_env, toolkit

    return driver, health, toolkit, cudnn, frameworks, dl4j, process_env, platform


def evaluate(report: Report, requirements: list[Any] | None = None) -> list[Finding]:
    """Every finding for REPORT, most severe first, in a stable order."""
    from cudnn_doctor.rules import process_env
    from cudnn_doctor.rules import requirements as required
    from cudnn_doctor.rules.driver import without_gpu

    findings: list[Finding] = []
    for module in rule_modules():
        for rule in module.RULES:
            findings.extend(rule(report))
    findings = without_gpu(report, findings, {getattr(r, "subject", "") for r in requirements or []})
    findings.extend(required.check_requirements(report, requirements or []))
    return sort_findings(process_env.with_evidence(report, findings))


def sort_findings(findings: list[Finding]) -> list[Finding]:
    """FINDINGS most severe first, then by code; equal ones keep their order (every command's order)."""
    order = {ERROR: 0, WARNING: 1, INFO: 2}
    return sorted(findings, key=lambda f: (order.get(f.severity, 3), f.code))


def summarize(findings: list[Finding], strict: bool = False) -> Summary:
    counts = {severity: sum(1 for f in findings if f.severity == severity) for severity in (ERROR, WARNING, INFO)}
    status = "error" if counts[ERROR] else "warning" if counts[WARNING] else "ok"
    failed = counts[ERROR] > 0 or (strict and counts[WARNING] > 0)
    return Summary(status=status, counts=counts, exit_code=1 if failed else 0)
