"""Turn a Report into Findings: pure functions of the report and the compat data, no I/O."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from types import ModuleType
from typing import Any

from cudnn_doctor import __version__
from cudnn_doctor.codes import finding
from cudnn_doctor.model import ERROR, INFO, WARNING, Finding, Report, Summary

__all__ = ["evaluate", "finding", "rule_modules", "sort_findings", "summarize"]


def rule_modules() -> tuple[ModuleType, ...]:
    """The modules of rules, in the order they run (imported on first use: `check` loads them while its
    probes' children answer)."""
    from cudnn_doctor.rules import cudnn, dl4j, driver, frameworks, health, platform, process_env, toolkit

    return driver, health, toolkit, cudnn, frameworks, dl4j, process_env, platform


def evaluate(report: Report, requirements: list[Any] | None = None) -> list[Finding]:
    """Every finding for REPORT, most severe first, in a stable order. Each rule is guarded: one that raises is
    one finding (CD901, a bug of ours) and the others still judge; a probe that raised is one too (CD902)."""
    from cudnn_doctor.rules import process_env
    from cudnn_doctor.rules import requirements as required

    findings = [finding("CD902", subject=probe, probe=probe, error=error, version=__version__)
                for probe, error in report.doctor_bugs]
    for module in rule_modules():
        for rule in module.RULES:
            findings.extend(guarded_rule(rule, report, f"{module.__name__.rsplit('.', 1)[-1]}.{rule.__name__}"))
    findings.extend(guarded_rule(lambda r: required.check_requirements(r, requirements or []), report,
                                 "requirements.check_requirements"))
    try:
        return sort_findings(process_env.with_evidence(report, findings))
    except Exception as error:  # the evidence is lost, the findings are not
        return sort_findings([*findings, crashed_rule("process_env.with_evidence", error)])


def guarded_rule(rule: Callable[[Report], Iterable[Finding]], report: Report, name: str) -> list[Finding]:
    """RULE's findings for REPORT; a rule that raises (a bug of ours) is one CD901 finding that names it (NAME)."""
    try:
        return list(rule(report))
    except Exception as error:
        return [crashed_rule(name, error)]


def crashed_rule(name: str, error: Exception) -> Finding:
    return finding("CD901", subject=name, rule=name, error=f"{type(error).__name__}: {error}", version=__version__)


def sort_findings(findings: list[Finding]) -> list[Finding]:
    """FINDINGS most severe first, then by code; equal ones keep their order (every command's order)."""
    order = {ERROR: 0, WARNING: 1, INFO: 2}
    return sorted(findings, key=lambda f: (order.get(f.severity, 3), f.code))


def summarize(findings: list[Finding], strict: bool = False) -> Summary:
    counts = {severity: sum(1 for f in findings if f.severity == severity) for severity in (ERROR, WARNING, INFO)}
    status = "error" if counts[ERROR] else "warning" if counts[WARNING] else "ok"
    failed = counts[ERROR] > 0 or (strict and counts[WARNING] > 0)
    return Summary(status=status, counts=counts, exit_code=1 if failed else 0)
