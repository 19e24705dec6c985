"""An image's facts as the rules read them: its platform, its NVIDIA variables and labels, the CUDA it was built
for (each place that says so), its cuDNN libraries and its frameworks (read by the same probe as `check`'s, from
the few small files of the layers staged in a private temporary folder)."""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from dataclasses import dataclass, field
from typing import Any

from cudnn_doctor import json_values
from cudnn_doctor.image.layers import LIBRARY, ImageFiles
from cudnn_doctor.image.sources import ImageParts
from cudnn_doctor.model import Framework
from cudnn_doctor.versions import major_minor, version_tuple

ENV_KEYS = ("CUDA_VERSION", "NV_CUDNN_VERSION", "NVIDIA_REQUIRE_CUDA", "NVIDIA_VISIBLE_DEVICES",
            "NVIDIA_DRIVER_CAPABILITIES", "NVIDIA_DISABLE_REQUIRE", "NV_CUDA_CUDART_VERSION", "NV_LIBCUDNN_VERSION",
            "NV_CUDNN_PACKAGE", "PYTORCH_VERSION", "TF_VERSION", "NVIDIA_PYTORCH_VERSION", "NVIDIA_TENSORFLOW_VERSION")
LABEL_WORDS = ("cuda", "cudnn", "nvidia", "pytorch", "tensorflow", "org.opencontainers.image.ref.name",
               "org.opencontainers.image.version")
HEADER_DEFINE = re.compile(r"#define\s+CUDNN_(MAJOR|MINOR|PATCHLEVEL)\s+(\d+)")


@dataclass
class CudaClaim:
    version: str  # major.minor
    where: str  # what says so, e.g. "CUDA_VERSION=12.8.1"


@dataclass
class ImageFacts:
    reference: str
    source: str
    os: str | None
    arch: str | None
    layers: int
    env: dict[str, str]
    labels: dict[str, str]
    cuda: list[CudaClaim] = field(default_factory=list)
    cudnn: list[dict[str, Any]] = field(default_factory=list)  # {path, version, source}
    frameworks: list[Framework] = field(default_factory=list)
    driver_libraries: list[str] = field(default_factory=list)  # a libcuda or NVML baked into the image
    notes: list[str] = field(default_factory=list)
    manifest_digest: str | None = None


def image_facts(parts: ImageParts, files: ImageFiles) -> ImageFacts:
    config = parts.config
    inner: dict[str, Any] = config["config"] if isinstance(config.get("config"), dict) else {}
    env = {}
    listed = inner.get("Env")
    for item in listed if isinstance(listed, list) else []:
        if isinstance(item, str) and "=" in item:
            key, _, value = item.partition("=")
            if key in ENV_KEYS:
                env[key] = value[:1000]
    given = inner.get("Labels")
    labels = {str(k)[:200]: str(v)[:1000] for k, v in (given if isinstance(given, dict) else {}).items()
              if any(word in str(k).lower() for word in LABEL_WORDS)}
    facts = ImageFacts(parts.reference, parts.source, _text(config.get("os")), _text(config.get("architecture")),
                       len(parts.layers), env, labels, notes=parts.notes + files.notes,
                       manifest_digest=parts.manifest_digest)
    facts.cuda = _cuda_claims(env, files)
    facts.cudnn = _cudnn_libraries(env, files)
    facts.driver_libraries = sorted("/" + p for p in files.entries
                                    if LIBRARY.match(os.path.basename(p)) and os.path.basename(p).startswith(
                                        ("libcuda.so", "libnvidia-ml.so")) and "/compat/" not in p)
    facts.frameworks = _frameworks(files)
    facts.notes = parts.notes + files.notes  # with what reading the frameworks refused
    for framework in facts.frameworks:
        if framework.cuda_built_for and major_minor(framework.cuda_built_for):
            facts.cuda.append(CudaClaim(_mm(framework.cuda_built_for),
                                        f"{framework.name} {framework.version} (built for CUDA {framework.cuda_built_for})"))
    return facts


def needed_cuda(facts: ImageFacts) -> CudaClaim | None:
    """The newest CUDA any part of the image says it was built for (the one the driver must support)."""
    return max(facts.cuda, key=lambda claim: (version_tuple(claim.version) or (),
                                              claim.where.startswith("NVIDIA_REQUIRE_CUDA")), default=None)


def _text(value: object) -> str | None:
    return str(value)[:100] if isinstance(value, str) else None


def _mm(version: str) -> str:
    found = major_minor(version)
    return f"{found[0]}.{found[1]}" if found else version


def _cuda_claims(env: dict[str, str], files: ImageFiles) -> list[CudaClaim]:
    claims = []
    if major_minor(env.get("CUDA_VERSION")):
        claims.append(CudaClaim(_mm(env["CUDA_VERSION"]), f"CUDA_VERSION={env['CUDA_VERSION']}"))
    from cudnn_doctor.knowledge.platforms import required_cuda

    required = required_cuda(env.get("NVIDIA_REQUIRE_CUDA", ""))
    if required:
        claims.append(CudaClaim(required, f"NVIDIA_REQUIRE_CUDA={env['NVIDIA_REQUIRE_CUDA']}"))
    for path, entry in files.entries.items():
        if path.endswith("version.json") and entry.content:
            try:
                version = json_values.loads(entry.content).get("cuda", {}).get("version")
            except (ValueError, AttributeError, RecursionError):
                continue
            if isinstance(version, str) and major_minor(version):
                claims.append(CudaClaim(_mm(version), f"/{path} says CUDA {version}"))
        match = LIBRARY.match(os.path.basename(path))
        if match and match.group(1) == "libcudart" and match.group(2) and len(match.group(2).split(".")) >= 2:
            claims.append(CudaClaim(_mm(match.group(2)), f"/{path}"))
    return claims


def _cudnn_libraries(env: dict[str, str], files: ImageFiles) -> list[dict[str, Any]]:
    found = []
    for path, entry in sorted(files.entries.items()):
        match = LIBRARY.match(os.path.basename(path))
        if not match or match.group(1) != "libcudnn" or entry.kind != "file":
            continue
        version = match.group(2) if match.group(2) and match.group(2).count(".") >= 2 else None
        found.append({"path": "/" + path, "version": version, "source": "layer file name" if version else None})
    headers = {p: e for p, e in files.entries.items() if "cudnn_version" in p and e.content}
    header_version = None
    for entry in headers.values():
        defines = dict(HEADER_DEFINE.findall((entry.content or b"").decode("utf-8", "replace")))
        if {"MAJOR", "MINOR", "PATCHLEVEL"} <= defines.keys():
            header_version = f"{defines['MAJOR']}.{defines['MINOR']}.{defines['PATCHLEVEL']}"
    for install in found:
        if install["version"] is None and header_version:
            install["version"], install["source"] = header_version, "cudnn_version.h"
    if not found and env.get("NV_CUDNN_VERSION"):
        found.append({"path": None, "version": env["NV_CUDNN_VERSION"], "source": "NV_CUDNN_VERSION"})
    return found


def _frameworks(files: ImageFiles) -> list[Framework]:
    """The frameworks of each site-packages folder in the image, read by `check`'s probe from a staged copy of the
    small files it reads (METADATA, torch/version.py, ...) and empty stand-ins for the libraries it looks for."""
    from cudnn_doctor.probes.context import SearchContext
    from cudnn_doctor.probes.frameworks import detect_python_frameworks

    sites = sorted(files.site_packages)
    if not sites:
        return []
    staging = tempfile.mkdtemp(prefix="cudnn-doctor-image-")
    try:
        for path, entry in files.entries.items():
            if not any(path.startswith(site + "/") for site in sites):
                continue
            if entry.content is None and path not in files.libraries_under_site:
                continue
            target = os.path.join(staging, path)
            try:  # a path cleaned of '..', under the private staging folder; one too deep for this system is left out
                os.makedirs(os.path.dirname(target), exist_ok=True)
                with open(target, "wb") as out:
                    out.write(entry.content or b"")
            except OSError:
                continue
        staged = []
        for site in sites:
            folder = os.path.join(staging, site)
            try:
                os.makedirs(folder, exist_ok=True)
            except OSError:  # too deep for this system: its frameworks are not read (said in the notes)
                files.note(f"/{site[:120]}...: a folder too deep to read its Python packages")
                continue
            staged.append(folder)
        ctx = SearchContext(env={}, python_paths=staged, python="(the image's)")
        found = detect_python_frameworks(ctx)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return [_in_image(framework, staging) for framework in found]


def _in_image(framework: Framework, staging: str) -> Framework:
    from dataclasses import replace

    def back(value: object) -> object:
        return "/" + value[len(staging):].lstrip("/") if isinstance(value, str) and value.startswith(staging) else value

    details = {key: back(value) for key, value in framework.details.items() if key != "python"}
    location = back(framework.location)
    return replace(framework, location=location if isinstance(location, str) else None, found_via="image dist-info",
                   details=details)
