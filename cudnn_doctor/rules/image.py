"""An image judged before it runs, against this node's driver and GPUs (doctor/image.py): the driver its CUDA needs
(CD150/CD151), its CPU architecture (CD155), a driver library baked into it (CD156), and its frameworks through the
same rules as `check` (CD403 built for a CUDA newer than the driver, CD404 the GPU, CD406 a CPU-only build).
Pure: the facts were read by image/."""

from __future__ import annotations

from typing import Any

from cudnn_doctor.codes import finding
from cudnn_doctor.image.facts import ImageFacts, needed_cuda
from cudnn_doctor.knowledge import query
from cudnn_doctor.knowledge.platforms import driver_alternative_met, required_cuda
from cudnn_doctor.model import Driver, Finding, Gpu, Host, Platform, Report, Tool
from cudnn_doctor.rules import sort_findings
from cudnn_doctor.versions import major, major_minor, version_tuple

ARCHES = {"amd64": "x86_64", "arm64": "aarch64", "ppc64le": "ppc64le"}
FRAMEWORK_CODES = ("CD403", "CD404", "CD406")


def judge_image(facts: ImageFacts, driver: Driver, gpus: list[Gpu], host: Host,
                gpu_absent: bool = False) -> list[Finding]:
    """GPU_ABSENT: no driver answers and this machine shows no NVIDIA GPU (a build box checking an image before it
    ships): CD159 says so, and the image's needs are still said, judged against no driver."""
    findings: list[Finding] = []
    findings += _architecture(facts, host)
    findings += [finding("CD159")] if gpu_absent and driver.source == "none" else _driver(facts, driver)
    if facts.driver_libraries:
        findings.append(finding("CD156", libraries=", ".join(facts.driver_libraries[:4])))
    findings += _frameworks(facts, driver, gpus, host)
    return sort_findings(findings)


def driver_floor(facts: ImageFacts) -> tuple[str | None, str | None, str | None]:
    """(CUDA major.minor the image needs, the oldest driver for it, the row that says so)."""
    claim = needed_cuda(facts)
    if claim is None:
        return None, None, None
    floor = query.toolkit_min_driver(claim.version, "linux")
    return claim.version, floor.version if floor else None, floor.source if floor else None


def _architecture(facts: ImageFacts, host: Host) -> list[Finding]:
    image_arch = ARCHES.get(facts.arch or "", facts.arch)
    if not image_arch or image_arch == host.arch:
        return []
    node = {v: k for k, v in ARCHES.items()}.get(host.arch, host.arch)
    return [finding("CD155", image_os=facts.os or "linux", image_arch=facts.arch, node_arch=f"{host.arch} ({node})",
                    node_platform=f"linux/{node}")]


def _driver(facts: ImageFacts, driver: Driver) -> list[Finding]:
    claim = needed_cuda(facts)
    if claim is None:
        return []
    if driver.source == "none":
        return [finding("CD101", refs=(f"NVML: {driver.error}",) if driver.error else ())]
    driver_cuda = major_minor(driver.cuda_driver_version)
    needed = major_minor(claim.version)
    if driver_cuda is None or needed is None or needed <= driver_cuda:
        return []
    require = facts.env.get("NVIDIA_REQUIRE_CUDA", "")
    hard = (version_tuple(required_cuda(require)) or ()) > driver_cuda and not driver_alternative_met(require,
                                                                                                       driver.version)
    cuda, floor, source = driver_floor(facts)
    values: dict[str, Any] = dict(image_cuda=cuda, why=claim.where, driver=driver.version or "(version unread)",
                                  driver_cuda=driver.cuda_driver_version, min_driver=floor or "a newer one")
    refs = tuple(filter(None, (source, "compat/platforms.toml [[treatment]] image-needs-driver")))
    code = "CD150" if hard or major(claim.version) != driver_cuda[0] else "CD151"
    return [finding(code, refs=refs, **values)]


def _frameworks(facts: ImageFacts, driver: Driver, gpus: list[Gpu], host: Host) -> list[Finding]:
    """The image's frameworks through `check`'s own framework rules, as if this node ran the image."""
    if not facts.frameworks:
        return []
    from cudnn_doctor.rules import frameworks as framework_rules

    report = Report(tool=Tool("cudnn-doctor", ""), host=Host(host.os, host.arch, host.python, host.hostname,
                                                              Platform("container", container="image")),
                    gpus=list(gpus), driver=driver, frameworks=list(facts.frameworks))
    found: list[Finding] = []
    for rule in framework_rules.RULES:
        found += [f for f in rule(report) if f.code in FRAMEWORK_CODES]
    return found
