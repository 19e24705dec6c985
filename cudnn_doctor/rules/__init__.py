"""Turn a Report into Findings: pure functions of the report and the compat data, no I/O."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from types import ModuleType
from typing import Any

from cudnn_doctor import __version__
from cudnn_doctor.codes import finding, on_platform
from cudnn_doctor.errors import DoctorError
from cudnn_doctor.model import ERROR, INFO, WARNING, Finding, Report, Summary

__all__ = ["evaluate", "finding", "rule_modules", "sort_findings", "summarize"]


def rule_modules() -> tuple[ModuleType, ...]:
    """The modules of rules, in the order they run (imported on first use: `check` loads them while its
    probes' children answer)."""
    from cudnn_doctor.rules import (
        cudnn,
        dl4j,
        driver,
        first_use,
        frameworks,
        health,
        multi_gpu,
        platform,
        process_env,
        process_start,
        python_plugins,
        toolkit,
    )

    return (driver, health, toolkit, cudnn, frameworks, dl4j, process_env, process_start, python_plugins, platform,
            multi_gpu, first_use)


def evaluate(report: Report, requirements: list[Any] | None = None,
             named: dict[str, tuple[str, ...]] | None = None) -> list[Finding]:
    """Every finding for REPORT, most severe first, in a stable order. Each rule is guarded: one that raises is
    one finding (CD901, a bug of ours) and the others still judge; a probe that raised is one too (CD902).
    NAMED: under --deep, the codes each failing framework's own words name (read by explain's reader), which make
    the findings they name its evidence; an error only read from files is a warning (hold_to_evidence)."""
    from cudnn_doctor.rules import process_env
    from cudnn_doctor.rules import requirements as required
    from cudnn_doctor.rules.driver import without_gpu

    findings = [finding("CD902", subject=probe, probe=probe, error=error, version=__version__)
                for probe, error in report.doctor_bugs]
    for module in rule_modules():
        for rule in module.RULES:
            findings.extend(guarded_rule(rule, report, f"{module.__name__.rsplit('.', 1)[-1]}.{rule.__name__}"))
    findings = without_gpu(report, findings, {getattr(r, "subject", "") for r in requirements or []})
    findings.extend(guarded_rule(lambda r: required.check_requirements(r, requirements or []), report,
                                 "requirements.check_requirements"))
    kind = report.host.platform.kind if report.host.platform else None
    findings = [on_platform(f, kind) for f in findings]  # WSL 2's driver is not a Linux kernel module
    try:  # the doctor's own children slowed past their deadline by a preload: the preload's finding, not theirs
        findings = process_env.slowed_by_preload(report, findings)
    except Exception as error:  # noqa: BLE001 - a bug of ours: said, the findings kept
        findings.append(crashed_rule("process_env.slowed_by_preload", error))
    try:  # a file the loader refused leads a chain: its refusal the error, what followed from it said so
        from cudnn_doctor.rules.chains import first_preload, first_refusal

        findings = first_preload(report, first_refusal(report, findings))
    except Exception as error:  # noqa: BLE001 - a bug of ours: said, the findings kept
        findings.append(crashed_rule("chains.first_refusal", error))
    try:
        return sort_findings(hold_to_evidence(report, process_env.with_evidence(report, findings, named)))
    except DoctorError:
        raise
    except Exception as error:  # the evidence is lost, the findings are not
        return sort_findings([*findings, crashed_rule("process_env.with_evidence", error)])


def guarded_rule(rule: Callable[[Report], Iterable[Finding]], report: Report, name: str) -> list[Finding]:
    """RULE's findings for REPORT; a rule that raises (a bug of ours) is one CD901 finding that names it (NAME)."""
    from cudnn_doctor.knowledge.data import DamagedData

    try:
        return list(rule(report))
    except DamagedData:  # the doctor's own data, not the rule: no verdict stands on half of it
        raise
    except Exception as error:
        return [crashed_rule(name, error)]


def crashed_rule(name: str, error: Exception) -> Finding:
    return finding("CD901", subject=name, rule=name, error=f"{type(error).__name__}: {error}", version=__version__)


def hold_to_evidence(report: Report, findings: list[Finding]) -> list[Finding]:
    """An error says a program will fail: it stands on the thing itself refusing ("seen") or a proven rule
    ("rule"). One only read from files is a warning that says how to prove it (issue 45)."""
    from dataclasses import replace

    ran = [f.name for f in report.frameworks
           if isinstance(f.details.get("deep"), dict) and not f.details["deep"].get("error")]
    out = []
    for f in findings:
        if f.severity == ERROR and f.evidence == "read":
            f = replace(f, severity=WARNING, proof=f.proof or _how_to_prove(report, ran))
        out.append(f)
    return out


def _how_to_prove(report: Report, ran: list[str]) -> str:
    if ran:
        return (f"read from files, not seen failing: under --deep {', '.join(ran)} ran its first GPU steps here; "
                "a program that loads the libraries otherwise may still fail")
    if any(f.name in ("torch", "jax", "tensorflow") and not f.details.get("assumed") for f in report.frameworks):
        return ("read from files, not seen failing: `cudnn-doctor check --deep` runs each framework's first GPU "
                "steps here and shows whether it fails")
    assumed = [f"{f.name}=={f.version}" if f.version else f.name for f in report.frameworks if f.details.get("assumed")]
    if assumed:  # --framework NAME: judged as if installed; nothing here can run it
        return (f"read from files, not seen failing: {', '.join(assumed)} is not installed here (--framework), so no "
                "program here can run it to prove it")
    return "read from files, not seen failing: no program here was run to prove it"


def sort_findings(findings: list[Finding]) -> list[Finding]:
    """FINDINGS most severe first, then by code; equal ones keep their order (every command's order)."""
    order = {ERROR: 0, WARNING: 1, INFO: 2}
    return sorted(findings, key=lambda f: (order.get(f.severity, 3), f.code))


def summarize(findings: list[Finding], strict: bool = False) -> Summary:
    counts = {severity: sum(1 for f in findings if f.severity == severity) for severity in (ERROR, WARNING, INFO)}
    status = "error" if counts[ERROR] else "warning" if counts[WARNING] else "ok"
    failed = counts[ERROR] > 0 or (strict and counts[WARNING] > 0)
    return Summary(status=status, counts=counts, exit_code=1 if failed else 0)
