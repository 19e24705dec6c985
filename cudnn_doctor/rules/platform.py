"""CD108, CD150-CD154: what is wrong because of where the doctor runs (WSL 2, a container and its image, a Jetson).

Pure: the platform's facts were read by probes/platform.py into report.host.platform.
"""

from __future__ import annotations

import os

from cudnn_doctor.codes import finding
from cudnn_doctor.knowledge import query
from cudnn_doctor.knowledge.platforms import driver_alternative_met, jetpack_row, required_cuda
from cudnn_doctor.model import Finding, Platform, Report
from cudnn_doctor.versions import major, major_minor

NO_GPU_VALUES = ("", "void", "none")  # NVIDIA_VISIBLE_DEVICES that ask the runtime for no GPU


def platform_of(report: Report) -> Platform:
    return report.host.platform or Platform("linux")


def gpus_requested(platform: Platform) -> str | None:
    """NVIDIA_VISIBLE_DEVICES where it asks the NVIDIA runtime for GPUs, else None."""
    value = platform.nvidia_env.get("NVIDIA_VISIBLE_DEVICES")
    if value is None or value.strip().lower() in NO_GPU_VALUES:
        return None
    return value


def runtime_hook_missing(report: Report) -> bool:
    """In a container whose image asks for GPUs, the NVIDIA runtime put no driver in: no device file, no library."""
    platform = platform_of(report)
    return (platform.container is not None and platform.driver_injected is False
            and gpus_requested(platform) is not None and report.driver.source == "none")


def hook_never_ran(report: Report) -> list[Finding]:
    if not runtime_hook_missing(report):
        return []
    platform = platform_of(report)
    detail = (f"NVIDIA_VISIBLE_DEVICES={gpus_requested(platform)} asks for GPUs, but there is no /dev/nvidia* device "
              f"and no libcuda.so.1 or libnvidia-ml.so.1 here (a {platform.container} container)")
    return [finding("CD108", refs=("compat/platforms.toml [[treatment]] gpus-flag",), detail=detail,
                    engine=platform.container)]


def image_cuda_requirement(env: dict[str, str]) -> tuple[str | None, str, bool]:
    """(the CUDA major.minor the image needs, why in words, whether it is a hard requirement) from the image's
    NVIDIA_REQUIRE_CUDA (its cuda>= clause; the runtime checks it) or else its CUDA_VERSION (what it was built with)."""
    required = required_cuda(env.get("NVIDIA_REQUIRE_CUDA", ""))
    if required:
        return required, f"NVIDIA_REQUIRE_CUDA={env['NVIDIA_REQUIRE_CUDA']}", True
    found = major_minor(env.get("CUDA_VERSION"))
    if found:
        return f"{found[0]}.{found[1]}", f"CUDA_VERSION={env['CUDA_VERSION']}", False
    return None, "", False


def image_needs_newer_driver(report: Report) -> list[Finding]:
    platform = platform_of(report)
    if platform.kind != "container":  # NVIDIA_REQUIRE_CUDA is a container image's: a plain shell's is nobody's check
        return []
    env = platform.nvidia_env
    needed, why, hard = image_cuda_requirement(env)
    driver_cuda = major_minor(report.driver.cuda_driver_version)
    if needed is None or driver_cuda is None or (major_minor(needed) or (0, 0)) <= driver_cuda:
        return []
    if hard and driver_alternative_met(env.get("NVIDIA_REQUIRE_CUDA", ""), report.driver.version):
        return []
    floor = query.toolkit_min_driver(needed, "windows" if platform.kind == "wsl2" else report.host.os)
    values = dict(image_cuda=needed, why=why, driver=report.driver.version or "(version unread)",
                  driver_cuda=report.driver.cuda_driver_version, min_driver=floor.version if floor else "a newer one")
    refs = ("compat/platforms.toml [[treatment]] image-needs-driver",) + ((floor.source,) if floor else ())
    same_major = major(needed) == driver_cuda[0]
    code = "CD151" if same_major and not hard else "CD150"
    return [finding(code, refs=refs, **values)]


def wsl_shadowed(report: Report) -> list[Finding]:
    platform = platform_of(report)
    if platform.kind != "wsl2" or not platform.shadowing:
        return []
    findings = []
    for library in platform.shadowing:
        folder = os.path.dirname(library)
        via = f" through LD_LIBRARY_PATH ({folder})" if any(
            os.path.normpath(f) == os.path.normpath(folder) for f in report.ld_library_path) else ""
        findings.append(finding("CD152", subject=library, refs=("compat/platforms.toml [[treatment]] no-linux-driver",),
                                wsl_lib=platform.wsl_lib, library=library, soname=os.path.basename(library),
                                via=via, folder=folder if via else None))
    return findings


def wsl_copies(report: Report) -> list[Finding]:
    platform = platform_of(report)
    if platform.kind != "wsl2" or not platform.wsl_copies:
        return []
    libcuda = [path for path in platform.wsl_copies if os.path.basename(path).startswith("libcuda.so")]
    if not libcuda:
        return []
    names = ", ".join(os.path.basename(path) for path in libcuda)
    return [finding("CD153", subject=libcuda[0], refs=("compat/platforms.toml [[treatment]] libcuda-copies",),
                    copies=names, wsl_lib=platform.wsl_lib, first=libcuda[0])]


def server_cudnn_on_jetson(report: Report) -> list[Finding]:
    platform = platform_of(report)
    if platform.kind != "jetson" or platform.sbsa is not False:
        return []
    row = jetpack_row(platform.l4t) or {}
    findings = []
    for install in report.cudnn:
        if install.source.startswith("pip:nvidia-cudnn"):
            findings.append(finding("CD154", subject=install.library, refs=(str(row.get("source", "compat/platforms.toml")),),
                                    library=install.library, source=install.source.removeprefix("pip:"),
                                    jetpack=platform.jetpack, l4t=platform.l4t, jetpack_cudnn=row.get("cudnn")))
    return findings


def stale_cdi_specs(report: Report) -> list[Finding]:
    platform = platform_of(report)
    driver = report.driver.version
    if not driver or report.driver.source != "nvml":
        return []
    return [finding("CD157", subject=spec, refs=("compat/fixes.toml CD157",), spec=spec, spec_driver=named,
                    driver=driver)
            for spec, named in platform.cdi_specs.items() if named and named != driver]


def docker_without_toolkit(report: Report) -> list[Finding]:
    platform = platform_of(report)
    if not platform.docker or platform.container_toolkit or report.driver.source == "none" or platform.cdi_specs:
        return []
    return [finding("CD158")]


RULES = (hook_never_ran, stale_cdi_specs, docker_without_toolkit, image_needs_newer_driver, wsl_shadowed, wsl_copies, server_cudnn_on_jetson)
