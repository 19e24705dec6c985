"""NVIDIA's redistributable manifest (`redistrib_<version>.json`): which file to fetch.

Shape: {"cudnn": {"version": "9.19.0.56", "cuda_variant": ["12", "13"],
"linux-x86_64": {"cuda13": {"relative_path", "sha256", "size"}, ...}, ...}}. Older
manifests may put `relative_path` directly under the platform: both shapes are read.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from cudnn_doctor.codes import doctor_error
from cudnn_doctor.errors import DoctorError
from cudnn_doctor.versions import ascii_digits

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


def pick_file(manifest: Any, platform: str, cuda_major: int | None, where: str) -> RedistFile:
    """The archive for PLATFORM and CUDA_MAJOR (None: the newest variant) in MANIFEST. Anything
    malformed (a list, a number for a sha256, a size of "abc", a path that is a folder or leaves
    the mirror) is CD512, never a crash."""
    def bad(why: str) -> DoctorError:
        return doctor_error("CD512", exit_code=2, where=where, why=why)

    product = manifest.get("cudnn") if isinstance(manifest, dict) else None
    if not isinstance(product, dict):
        raise bad("it is not a cuDNN redistributable manifest (no 'cudnn' object)")
    version = product.get("version", "unknown")
    if not isinstance(version, str) or not re.fullmatch(r"\d{1,6}(\.\d{1,6}){1,3}", version):
        raise bad(f"its cudnn version {str(version)[:40]!r} is not a version")
    entry = product.get(platform)
    if not isinstance(entry, dict):
        platforms = sorted(k for k, v in product.items() if isinstance(v, dict))
        raise bad(f"cuDNN {version} has no build for {platform} (it has: {', '.join(platforms) or 'none'})")
    if "relative_path" in entry:  # one archive per platform, no per-CUDA keys
        variant, chosen_major = entry, _major_of(product.get("cuda_variant"))
    else:
        variants = {int(key[4:]): value for key, value in entry.items()
                    if re.fullmatch(r"cuda\d{1,3}", key) and isinstance(value, dict)}
        if not variants:
            raise bad(f"no archive listed for {platform}")
        chosen_major = cuda_major if cuda_major is not None else max(variants)
        if chosen_major not in variants:
            listed = ", ".join(str(m) for m in sorted(variants))
            raise bad(f"cuDNN {version} for {platform} has no CUDA {chosen_major} build (it has CUDA {listed}: "
                      f"pass --cuda {max(variants)})")
        variant = variants[chosen_major]
    path = variant.get("relative_path")
    if not isinstance(path, str) or not path:
        raise bad(f"the {platform} entry has no relative_path")
    problem = path_problem(path)
    if problem:
        raise bad(f"its relative_path {path[:80]!r} {problem}")
    sha256, size = variant.get("sha256"), variant.get("size")
    if sha256 is not None and (not isinstance(sha256, str) or not re.fullmatch(r"[0-9a-fA-F]{64}", sha256)):
        raise bad(f"its sha256 {str(sha256)[:80]!r} is not 64 hexadecimal digits")
    if size is not None and not (isinstance(size, int) and not isinstance(size, bool) and size >= 0) and not (
            isinstance(size, str) and ascii_digits(size) and len(size) < 16):
        raise bad(f"its size {str(size)[:40]!r} is not a number of bytes")
    return RedistFile(version=version, platform=platform, cuda_major=chosen_major, relative_path=path,
                      sha256=sha256.lower() if sha256 else None,
                      size=int(size) if size not in (None, "") else None)


def file_name(path: str) -> str | None:
    """The file name a URL path ends in, %-decoded, or None when it names no plain file."""
    from urllib.parse import unquote

    name = unquote(path.rsplit("/", 1)[-1])
    if name in ("", ".", "..") or "/" in name or "\\" in name or path_problem(path or "/"):
        return None
    return name


def path_problem(path: str) -> str | None:
    """Why PATH (relative, "/"-separated, maybe %-encoded) cannot name a file in the mirror; None if it can."""
    from urllib.parse import unquote

    for text in (path, unquote(path)):
        parts = text.replace("\\", "/").split("/")
        if text.startswith("/") or re.match(r"^[A-Za-z][A-Za-z0-9+.-]*:", text):
            return "is absolute, not relative to the mirror"
        if ".." in parts:
            return "climbs out of the mirror with '..'"
        if not parts[-1] or parts[-1] == ".":
            return "names a folder, not an archive"
        if any(ord(c) < 32 or ord(c) == 127 for c in text):
            return "has control characters"
        if len(parts[-1].encode("utf-8", "surrogateescape")) > 255:
            return "names a file too long for a file system"
    return None


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
