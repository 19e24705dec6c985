"""An image judged before it runs, against this node's driver and GPUs: the use-case of `cudnn-doctor image`."""

from __future__ import annotations

from typing import Any

from cudnn_doctor.model import to_jsonable

SCHEMA = "cudnn-doctor/image/1"


def judge_image_here(ref: str, strict: bool = False, platform: str | None = None) -> dict[str, Any]:
    """The image's facts, this node's driver and GPUs, the findings and the exit code, as one JSON-ready object.
    PLATFORM (--platform): which image of a multi-platform one; by default this machine's architecture."""
    from cudnn_doctor.errors import DoctorError
    from cudnn_doctor.image.facts import image_facts, needed_cuda
    from cudnn_doctor.image.layers import read_layers
    from cudnn_doctor.image.sources import open_image
    from cudnn_doctor.probes.collect import _host
    from cudnn_doctor.probes.context import SearchContext
    from cudnn_doctor.probes.frameworks import python_frameworks
    from cudnn_doctor.probes.platform import node_driver
    from cudnn_doctor.rules import summarize
    from cudnn_doctor.rules.image import driver_floor, judge_image

    if not ref.strip():
        raise DoctorError("image: no image given", fix="cudnn-doctor image IMAGE.tar | OCI-LAYOUT-DIR | nvidia/cuda:TAG | HOST:PORT/NAME:TAG",
                          code="CD003")
    ctx = SearchContext.from_environment()
    parts = open_image(ref, _architecture(platform) if platform is not None else ctx.arch)
    try:
        libraries = tuple(library for _, _, libs in python_frameworks() for library in libs)
        try:
            files = read_layers(parts, libraries)
        except DoctorError:  # what it met may be another program writing the file: said as that
            said = parts.changed()
            if said is None:
                raise
            raise said from None
        changed = parts.changed()  # read whole, but from two states of a file written meanwhile
        if changed is not None:
            raise changed
    finally:
        parts.close()
    facts = image_facts(parts, files)
    driver, gpus, nvml_error = node_driver(ctx)
    host = _host()
    from cudnn_doctor.plan.fixes import advised

    # each finding's fix, from the plan's remedies
    findings = advised(judge_image(facts, driver, gpus, host, _gpu_absent(ctx, driver)))
    summary = summarize(findings, strict)
    cuda, floor, floor_source = driver_floor(facts)
    claim = needed_cuda(facts)
    return {
        "schema": SCHEMA,
        "image": {
            "reference": facts.reference, "source": facts.source, "digest": facts.manifest_digest,
            "os": facts.os, "arch": facts.arch, "layers": facts.layers, "env": facts.env, "labels": facts.labels,
            "cuda": [{"version": c.version, "from": c.where} for c in facts.cuda],
            "cudnn": facts.cudnn, "frameworks": to_jsonable(facts.frameworks),
            "driver_libraries": facts.driver_libraries, "notes": facts.notes,
        },
        "needs": {"cuda": cuda, "from": claim.where if claim else None, "min_driver": floor, "source": floor_source},
        "node": {"driver": to_jsonable(driver), "gpus": to_jsonable(gpus), "arch": host.arch,
                 "nvml_error": nvml_error},
        "findings": to_jsonable(findings),
        "summary": to_jsonable(summary),
        "exit_code": summary.exit_code,
    }


def _gpu_absent(ctx: Any, driver: Any) -> bool:
    """No driver answers and the machine shows no NVIDIA GPU (probes/platform.py's nvidia_devices)."""
    import os

    from cudnn_doctor.probes.platform import nvidia_devices

    if driver.source != "none":
        return False
    kind = "jetson" if os.path.exists(ctx.system("/etc/nv_tegra_release")) else "linux"
    return nvidia_devices(ctx, kind, None) == ()


PLATFORM_ARCHES = ("amd64", "arm64", "ppc64le", "s390x", "arm", "386", "riscv64")


def _architecture(platform: str) -> str:
    """--platform linux/arm64 (docker's OS/ARCH[/VARIANT], or the architecture alone) -> "arm64"."""
    from cudnn_doctor.errors import DoctorError

    parts = platform.strip().lower().split("/")
    if parts[0] == "linux" and len(parts) > 1:
        parts = parts[1:]
    arch = {"x86_64": "amd64", "aarch64": "arm64"}.get(parts[0], parts[0])
    if arch not in PLATFORM_ARCHES or len(parts) > 2:
        raise DoctorError(f"image --platform {platform!r}: not a Linux platform", exit_code=2,
                          fix="--platform linux/amd64 or --platform linux/arm64", code="CD001")
    return arch
