"""CD1xx: the GPU and the driver."""

from __future__ import annotations

from cudnn_doctor.codes import finding
from cudnn_doctor.knowledge import query
from cudnn_doctor.model import Finding, Report
from cudnn_doctor.versions import major_minor


def nvml_library_missing(error: str | None) -> bool:
    """Does NVML's error (as the probe recorded it) say that libnvidia-ml itself is missing, rather
    than that the driver it found failed?"""
    text = (error or "").lower()
    return "library not found" in text or "libnvidia-ml" in text or "import failed" in text


GPU_ONLY = {"CD201": "cuda", "CD301": "cudnn", "CD406": None}  # what is missing only where a GPU is: its --require


def no_nvidia_gpu(report: Report) -> bool:
    """No driver answers, and the machine shows no NVIDIA GPU (probes/platform.py's nvidia_devices is empty)."""
    platform = report.host.platform
    return report.driver.source == "none" and platform is not None and platform.nvidia_devices == ()


def without_gpu(report: Report, findings: list[Finding], asked: set[str]) -> list[Finding]:
    """On a machine with no NVIDIA GPU (CD159 said so), what is missing for the GPU is no finding unless a --require
    asks for it (ASKED: their subjects): a build box asks for cuDNN, a laptop asks for nothing. In a container
    started without the NVIDIA runtime, CD108 speaks instead (a VM-backed runtime shows only the devices passed)."""
    if not any(f.code == "CD159" for f in findings):
        return findings
    return [f for f in findings if f.code not in GPU_ONLY or GPU_ONLY[f.code] in asked]


def no_driver(report: Report) -> list[Finding]:
    from cudnn_doctor.rules.platform import runtime_hook_missing

    if report.driver.source != "none" or runtime_hook_missing(report):  # CD108 says why (rules/platform.py)
        return []
    if no_nvidia_gpu(report):
        return [finding("CD159", refs=("/sys/bus/pci/devices/*/vendor, class",))]
    if nvml_library_missing(report.nvml_error) or "not loaded" in (report.nvml_error or "").lower():
        return [finding("CD101", refs=(f"NVML: {report.nvml_error}",))]
    if report.process is not None and report.process.nvml_fifo:  # a FIFO named like NVML first on the path: CD118
        return []  # says it; the driver was not reached, and no reboot cures it
    return [finding("CD104", error=report.nvml_error)]


def driver_without_nvml(report: Report) -> list[Finding]:
    platform = report.host.platform
    if report.driver.source != "libcuda" or (platform is not None and (platform.kind == "jetson" or platform.shadowing)):
        return []  # a Jetson has no NVML (libcuda is the driver's whole answer); on WSL, CD152 says whose NVML failed
    return [finding("CD105", error=report.nvml_error)]


def no_gpu(report: Report) -> list[Finding]:
    if report.driver.source == "nvml" and not report.gpus:
        return [finding("CD102")]
    return []


def driver_older_than_toolkit(report: Report) -> list[Finding]:
    driver_cuda = major_minor(report.driver.cuda_driver_version)
    findings = []
    for toolkit in report.toolkits:
        toolkit_cuda = major_minor(toolkit.version)
        if driver_cuda is None or toolkit_cuda is None or toolkit_cuda <= driver_cuda:
            continue
        requirement = query.toolkit_min_driver(toolkit.version or "", driver_os(report))
        min_driver = requirement.version if requirement else "the one its release notes name"
        refs = (requirement.source,) if requirement else ()
        code = "CD103" if toolkit_cuda[0] > driver_cuda[0] else "CD106"
        findings.append(finding(code, subject=toolkit.path, refs=refs, driver_cuda=report.driver.cuda_driver_version,
                                toolkit_path=toolkit.path, toolkit_version=toolkit.version, min_driver=min_driver))
    return findings


def forward_compatibility(report: Report) -> list[Finding]:
    findings = []
    for toolkit in report.toolkits:
        if toolkit.compat_libcuda:
            version = toolkit.compat_libcuda.rsplit(".so.", 1)[-1]
            findings.append(finding("CD107", subject=toolkit.compat_libcuda, path=toolkit.compat_libcuda, version=version))
    return findings


RULES = (no_driver, driver_without_nvml, no_gpu, driver_older_than_toolkit, forward_compatibility)


def driver_os(report: Report) -> str:
    """The OS whose driver table applies: on WSL 2 the driver is the Windows one (its version is Windows')."""
    platform = report.host.platform
    return "windows" if platform is not None and platform.kind == "wsl2" else report.host.os
