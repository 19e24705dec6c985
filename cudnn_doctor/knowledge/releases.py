"""Which cuDNN releases exist (compat/cudnn.toml): a version a message or a user names, as one that can be installed."""

from __future__ import annotations

import shlex

from cudnn_doctor.knowledge.data import load
from cudnn_doctor.versions import ascii_digits, version_tuple


def existing_release(wanted: str) -> str:
    """WANTED if compat/ lists that release; else the newest listed release of its major.minor (8.9 -> 8.9.7) at or
    above it; else WANTED's series as words ("a 8.9.x release") so nothing unlisted is ever named."""
    parts = version_tuple(wanted) or ()
    releases = sorted((version_tuple(r.get("version")) or () for r in load("cudnn").get("release", [])), reverse=True)
    if len(parts) >= 3 and parts[:3] in releases:
        return ".".join(map(str, parts[:3]))
    series = [r for r in releases if r[:2] == parts[:2] and r >= parts[:3]]
    if series:
        return ".".join(map(str, series[0]))
    same_major = [r for r in releases if r[:1] == parts[:1] and r >= parts[:3]]
    if same_major:
        return ".".join(map(str, same_major[0]))
    return wanted


def wheel_build(version: str, cuda_major: int) -> str:
    """The nvidia-cudnn-cuNN wheel version of cuDNN VERSION (9.19.0 -> 9.19.0.56) from compat/, else "9.19.0.*"
    (a wheel's version has four parts: ==9.19.0 matches none of them)."""
    wanted = (version_tuple(version) or ())[:3]
    for row in load("cudnn").get("release", []):
        if version_tuple(row.get("version")) == wanted and ascii_digits(str(row.get("build", "unknown"))[:1]):
            if any(str(v.get("cuda", "")).split(".")[0] == str(cuda_major) for v in row.get("variant", [])):
                return str(row["build"])
    return f"{version}.*"


def cudnn_requirement(compiled: str) -> str | None:
    """The pip requirement, shell-quoted, of a cuDNN wheel that a framework compiled against cuDNN COMPILED accepts: the
    same major, at least COMPILED ('nvidia-cudnn-cu12>=8.9.4,<9'), from the newest CUDA major whose nvidia-cudnn-cuNN
    wheels (compat/cudnn.toml [[wheel]]) hold such a release; None where none does."""
    wanted = (version_tuple(compiled) or ())[:3]
    if not wanted:
        return None
    packages = {}
    for wheel in load("cudnn").get("wheel", []):
        release = version_tuple(wheel.get("release")) or ()
        if release[:1] == wanted[:1] and release[:3] >= wanted and ascii_digits(str(wheel.get("cuda", ""))):
            packages[int(wheel["cuda"])] = str(wheel["package"])
    if not packages:
        return None
    floor = ".".join(map(str, wanted))
    return shlex.quote(f"{packages[max(packages)]}>={floor},<{wanted[0] + 1}")
