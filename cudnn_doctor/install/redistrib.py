"""NVIDIA's redistributable manifest (`redistrib_<version>.json`): which file to fetch.

Shape: {"cudnn": {"version": "9.19.0.56", "cuda_variant": ["12", "13"],
"linux-x86_64": {"cuda13": {"relative_path", "sha256", "size"}, ...}, ...}}. Older
manifests may put `relative_path` directly under the platform: both shapes are read.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from cudnn_doctor.errors import DoctorError

DEFAULT_BASE_URL = "https://developer.download.nvidia.com/compute/cudnn/redist/"
FULL_VERSION = re.compile(r"^\d+\.\d+\.\d+$")
MANIFEST_LINK = re.compile(r"redistrib_(\d+\.\d+\.\d+)\.json")


@dataclass(frozen=True)
class RedistFile:
    version: str  # the release's four-part version, "9.19.0.56"
    platform: str
    cuda_major: int | None
    relative_path: str
    sha256: str | None
    size: int | None


def manifest_name(version: str) -> str:
    return f"redistrib_{version}.json"


def pick_file(manifest: dict[str, Any], platform: str, cuda_major: int | None, where: str) -> RedistFile:
    """The archive for PLATFORM and CUDA_MAJOR (None: the newest variant) in MANIFEST."""
    product = manifest.get("cudnn")
    if not isinstance(product, dict):
        raise DoctorError(f"{where} is not a cuDNN redistributable manifest (no 'cudnn' key)", exit_code=2)
    version = str(product.get("version", "unknown"))
    entry = product.get(platform)
    if not isinstance(entry, dict):
        platforms = sorted(k for k, v in product.items() if isinstance(v, dict))
        raise DoctorError(f"cuDNN {version} has no build for {platform} (it has: {', '.join(platforms) or 'none'})",
                          exit_code=2)
    if "relative_path" in entry:  # one archive per platform, no per-CUDA keys
        variant, chosen_major = entry, _major_of(product.get("cuda_variant"))
    else:
        variants = {int(key[4:]): value for key, value in entry.items()
                    if re.fullmatch(r"cuda\d+", key) and isinstance(value, dict)}
        if not variants:
            raise DoctorError(f"{where}: no archive listed for {platform}", exit_code=2)
        chosen_major = cuda_major if cuda_major is not None else max(variants)
        if chosen_major not in variants:
            listed = ", ".join(str(m) for m in sorted(variants))
            raise DoctorError(f"cuDNN {version} for {platform} has no CUDA {chosen_major} build (it has CUDA {listed})",
                              f"pass --cuda {max(variants)}", exit_code=2)
        variant = variants[chosen_major]
    if not variant.get("relative_path"):
        raise DoctorError(f"{where}: the {platform} entry has no relative_path", exit_code=2)
    size = variant.get("size")
    return RedistFile(version=version, platform=platform, cuda_major=chosen_major,
                      relative_path=str(variant["relative_path"]), sha256=variant.get("sha256"),
                      size=int(size) if size not in (None, "") else None)


def _major_of(variants: Any) -> int | None:
    if isinstance(variants, list) and len(variants) == 1:
        try:
            return int(str(variants[0]).split(".")[0])
        except ValueError:
            return None
    return None


def newest_matching(listing: str, wanted: str) -> str | None:
    """The newest release in an index page that starts with WANTED ("9" -> "9.19.0")."""
    versions = set(MANIFEST_LINK.findall(listing))
    prefix = wanted.split(".")
    matches = [v for v in versions if v.split(".")[:len(prefix)] == prefix]
    return max(matches, key=lambda v: tuple(int(p) for p in v.split("."))) if matches else None
