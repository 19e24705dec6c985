"""An image judged before it runs, against this node's driver and GPUs: the use-case of `cudnn-doctor image`."""

from __future__ import annotations

from typing import Any

from cudnn_doctor.model import to_jsonable

SCHEMA = "cudnn-doctor/image/1"


def judge_image_here(ref: str, strict: bool = False) -> dict[str, Any]:
    """The image's facts, this node's driver and GPUs, the findings and the exit code, as one JSON-ready object."""
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
        raise DoctorError("image: no image given", fix="cudnn-doctor image IMAGE.tar | OCI-LAYOUT-DIR | HOST:PORT/NAME:TAG", code="CD003")
    ctx = SearchContext.from_environment()
    parts = open_image(ref, ctx.arch)
    try:
        libraries = tuple(library for _, _, libs in python_frameworks() for library in libs)
        files = read_layers(parts, libraries)
    finally:
        parts.close()
    facts = image_facts(parts, files)
    driver, gpus, nvml_error = node_driver(ctx)
    host = _host()
    from cudnn_doctor.plan.fixes import advised

    findings = advised(judge_image(facts, driver, gpus, host))  # each finding's fix, from the plan's remedies
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
