"""`cudnn-doctor compat`: what a framework release needs, and whether a combination works."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from cudnn_doctor.compat import frameworks as compat
from cudnn_doctor.compat.data import load
from cudnn_doctor.errors import DoctorError
from cudnn_doctor.versions import version_tuple

SCHEMA = "cudnn-doctor/compat/1"
LISTABLE = ("tensorflow", "pytorch", "theano", "dl4j", "cudnn", "cuda")
LIST_COLUMNS = {
    "tensorflow": ("version", "os", "cuda", "cudnn", "python", "package"),
    "pytorch": ("version", "cuda", "cudnn", "cudnn_package", "pypi_default"),
    "theano": ("version", "cudnn", "cuda"),
    "dl4j": ("version", "artifact", "cuda", "cudnn"),
    "cudnn": ("version", "build", "cuda", "cuda_toolkits", "min_compute_capability", "linux_min_driver"),
    "cuda": ("version", "linux_min_driver", "windows_min_driver"),
}


def list_rows(subject: str) -> dict[str, Any]:
    """Every row of one compat table, newest first, as {"columns": [...], "rows": [...]}."""
    name = compat.canonical_name(subject) or subject.lower()
    if name not in LISTABLE:
        raise DoctorError(f"--list {subject!r}: no such table", fix=f"use one of {', '.join(LISTABLE)}")
    if name == "cudnn":
        rows = [{**release, **variant, "version": release["version"], "build": variant.get("build", release.get("build")),
                 "source": variant.get("source") or release.get("source")}
                for release in load("cudnn").get("release", []) for variant in release.get("variant", [{}])]
    elif name == "cuda":
        rows = list(load("cuda").get("toolkit", []))
    else:
        rows = compat.all_rows(name)
    rows.sort(key=lambda row: version_tuple(str(row.get("version"))) or (), reverse=True)
    columns = LIST_COLUMNS[name]
    return {"schema": SCHEMA, "table": name, "columns": [*columns, "source"],
            "rows": [{column: row.get(column) for column in (*columns, "source")} for row in rows]}


def answer(spec: str, combo: compat.Combination, artifact: str | None = None) -> dict[str, Any]:
    """The compat/1 answer for SPEC ("tensorflow==2.15.0"), with a verdict when COMBO names anything."""
    name, version = compat.split_spec(spec)
    canonical = compat.canonical_name(name)
    if canonical is None:
        raise DoctorError(f"unknown framework {name!r}", fix="use tensorflow, torch, theano, dl4j or jax")
    if version is None:
        raise DoctorError(f"which {canonical} release? {spec!r} names no version",
                          fix=f"write it as {name}==VERSION; `cudnn-doctor compat --list {canonical}` lists them")
    need = compat.needs(canonical, version, combo.os, artifact)
    requires = [_requirement_of(canonical, row) for row in need.rows]
    data: dict[str, Any] = {"schema": SCHEMA, "framework": canonical, "version": version, "requires": requires}
    if need.build_cuda:
        data["build"] = f"CUDA {need.build_cuda}"
    if canonical in compat.ROW_TABLE and compat.rules(canonical):
        data["rules"] = compat.rules(canonical)
    if any((combo.cuda, combo.cudnn, combo.driver, combo.compute_capability)) or not need.rows:
        verdict, reasons = compat.judge(need, combo)
        data["given"] = {key: value for key, value in asdict(combo).items() if value is not None}
        data["verdict"] = verdict
        data["reasons"] = [asdict(reason) for reason in reasons]
    data["exit_code"] = 1 if data.get("verdict") == compat.INCOMPATIBLE else 0
    return data


def _requirement_of(framework: str, row: dict[str, Any]) -> dict[str, Any]:
    keep = ("cuda", "cudnn", "os", "artifact", "python", "cudnn_package", "pypi_default", "note")
    requirement = {key: row[key] for key in keep if key in row}
    from cudnn_doctor.compat import query

    cuda = row.get("cuda")
    if isinstance(cuda, str) and cuda != "unknown":
        minimum = query.toolkit_min_driver(cuda, row.get("os", "linux"))
        if minimum:
            requirement["driver"] = f">={minimum.version}"
            requirement["driver_source"] = minimum.source
    requirement["source"] = row.get("source")
    return requirement
