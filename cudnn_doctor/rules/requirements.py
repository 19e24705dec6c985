"""--require SPEC: what the user says this machine must have."""

from __future__ import annotations

import functools
import re

from cudnn_doctor.codes import finding
from cudnn_doctor.errors import DoctorError
from cudnn_doctor.model import Finding, Report
from cudnn_doctor.records import record
from cudnn_doctor.specifiers import InvalidSpecifier, Specifiers

STACK_SUBJECTS = {
    "cudnn": "CD320", "cuda": "CD220", "cuda-driver": "CD120", "driver": "CD120", "gpu": "CD121",
    "compute-capability": "CD121", "gpu-healthy": "CD122", "no-ecc-errors": "CD122", "pcie": "CD122",
}
FRAMEWORK_CODE = "CD420"


def framework_subjects() -> dict[str, str]:
    """Each framework of compat/rules.toml by its name and by the name check reports it under (pytorch, torch),
    to the name check reports it under."""
    from cudnn_doctor.knowledge.frameworks import profiles

    subjects = {}
    for name, row in profiles().items():
        reported = str(row.get("report_name", name))
        subjects[name] = subjects[reported] = reported
    return subjects


def subjects() -> dict[str, str]:
    """What --require can name, and the code of its finding when unmet."""
    return {**STACK_SUBJECTS, **dict.fromkeys(framework_subjects(), FRAMEWORK_CODE)}
HEALTH_SUBJECTS = ("gpu-healthy", "no-ecc-errors", "pcie")


@functools.cache
def pcie_pattern() -> re.Pattern[str]:
    # pcie>=4x16: generation 4 possible, 16 lanes now
    return re.compile(r"^>=(\d{1,2})(?:x(\d{1,2}))?$")


@functools.cache
def spec_pattern() -> re.Pattern[str]:
    return re.compile(r"^\s*([A-Za-z][A-Za-z0-9_-]*)\s*((?:[<>=!~]=?|===)\s*[^\s].*)?$")


@record(frozen=True)
class Requirement:
    """One --require, parsed: its subject and version specifier."""

    text: str
    subject: str
    specifier: str  # "" means "present"

    def allows(self, version: str) -> bool:
        """Does VERSION meet this requirement's specifier?"""
        try:
            return _satisfies(version, Specifiers(self.specifier))
        except ValueError:  # a version too long to compare (Python's limit on digits)
            return False


def parse_requirement(text: str) -> Requirement:
    """"cudnn>=9.1" -> Requirement; a bad one is a usage error (exit 2)."""
    match = spec_pattern().match(text)
    subject = match.group(1).lower() if match else ""
    if not match or subject not in subjects():
        raise DoctorError(f"--require {text!r}: not a requirement I understand",
                          fix=f"use SUBJECT[OP VERSION] with SUBJECT one of {', '.join(sorted(subjects()))}, "
                              "e.g. --require 'cudnn>=9.1'", code="CD001")
    specifier = (match.group(2) or "").replace(" ", "")
    if subject in HEALTH_SUBJECTS:
        if (subject == "pcie") != bool(specifier) or (subject == "pcie" and not pcie_pattern().match(specifier)):
            raise DoctorError(f"--require {text!r}: not a requirement I understand",
                              fix="--require gpu-healthy, --require no-ecc-errors, or --require 'pcie>=4x16' "
                                  "(PCIe generation 4 possible, 16 lanes now)", code="CD001")
        return Requirement(text, subject, specifier)
    try:
        Specifiers(specifier)
    except InvalidSpecifier:
        raise DoctorError(f"--require {text!r}: {specifier!r} is not a version specifier",
                          fix="write it like >=9.1, ==12.4.*, or >=550,<600", code="CD001") from None
    return Requirement(text, framework_subjects().get(subject, subject), specifier)


def _candidates(report: Report, subject: str) -> list[tuple[str, str]]:
    """(version, what it belongs to) the requirement is checked against."""
    if subject == "cudnn":
        used = [i for i in report.cudnn if i.loaded_by and i.version]
        return [(i.version, i.library) for i in (used or [i for i in report.cudnn if i.version])]  # type: ignore[misc]
    if subject == "cuda":
        return [(t.version, t.path) for t in report.toolkits if t.version]  # type: ignore[misc]
    if subject == "cuda-driver":
        return [(report.driver.cuda_driver_version, "the driver")] if report.driver.cuda_driver_version else []
    if subject == "driver":
        return [(report.driver.version, "the driver")] if report.driver.version else []
    if subject == "gpu":
        return [(str(len(report.gpus)), "GPUs")] if report.gpus else []
    if subject == "compute-capability":
        return [(g.compute_capability, f"GPU {g.index}") for g in report.gpus if g.compute_capability]  # type: ignore[misc]
    return [(f.version, f.location or f.name) for f in report.frameworks if f.name == subject and f.version]  # type: ignore[misc]


def _satisfies(version: str, specifier: Specifiers) -> bool:
    try:
        return specifier.contains(version.split("+")[0])
    except ValueError:  # not a version (packaging's InvalidVersion), or one too long to compare
        return False


def _health_problems(report: Report, requirement: Requirement) -> list[str]:
    """What on this machine fails a health requirement; empty when it is met."""
    import cudnn_doctor.rules.health as health

    if not report.gpus:
        return ["no GPU"]
    unread = [f"GPU {g.index}: health not readable" for g in report.gpus if g.health is None]
    if requirement.subject == "gpu-healthy":
        problems = [f for rule in health.RULES for f in rule(report) if f.severity in ("error", "warning")]
        return unread + [f"{f.subject}: {f.title}" for f in problems]
    if requirement.subject == "no-ecc-errors":
        problems = health.ecc_errors(report) + [f for f in health.memory_repair(report)]
        return unread + [f"{f.subject}: {f.title}" for f in problems]
    match = pcie_pattern().match(requirement.specifier)
    assert match is not None
    generation, width = int(match.group(1)), int(match.group(2) or 0)
    out = []
    for gpu in report.gpus:
        h = gpu.health
        if h is None or h.pcie_link_generation_max is None or h.pcie_link_width is None:
            out.append(f"GPU {gpu.index}: PCIe link not readable")
        elif h.pcie_link_generation_max < generation or h.pcie_link_width < width:
            out.append(f"GPU {gpu.index}: generation {h.pcie_link_generation_max} x{h.pcie_link_width}")
    return out


def check_requirements(report: Report, requirements: list[Requirement]) -> list[Finding]:
    if not requirements:
        return []

    findings = []
    for requirement in requirements:
        if requirement.subject in HEALTH_SUBJECTS:
            problems = _health_problems(report, requirement)
            if problems:
                findings.append(finding("CD122", spec=requirement.text, found="; ".join(problems)))
            continue
        candidates = _candidates(report, requirement.subject)
        specifier = Specifiers(requirement.specifier)

        if any(_satisfies(version, specifier) for version, _ in candidates):
            continue
        found = ("found " + ", ".join(f"{v} ({owner})" for v, owner in candidates)) if candidates else "none found"
        findings.append(finding(subjects()[requirement.subject], spec=requirement.text, found=found))
    return findings
