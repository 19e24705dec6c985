"""Questions answered from the compat data; every answer carries the source of its row."""

from __future__ import annotations

from typing import Any

from cudnn_doctor.knowledge.data import load
from cudnn_doctor.records import record
from cudnn_doctor.versions import ascii_digits, major_minor, version_tuple


@record(frozen=True)
class DriverFloor:
    """The oldest driver a CUDA release runs on, with the row of NVIDIA's table that says so."""

    version: str
    source: str


def _known(value: Any) -> bool:
    return isinstance(value, str) and value not in ("", "unknown")


def toolkit_min_driver(toolkit_version: str, os_name: str) -> DriverFloor | None:
    """The minimum driver NVIDIA names for a toolkit's major.minor (its GA release's row: a release candidate's,
    CUDA 11.0.1 RC at 450.36.06, is no build's floor; 11.0's GA needs 450.51.05)."""
    wanted = major_minor(toolkit_version)
    key = "windows_min_driver" if os_name == "windows" else "linux_min_driver"
    rows = [r for r in load("cuda").get("toolkit", []) if major_minor(r.get("version")) == wanted and _known(r.get(key))
            and not r.get("prerelease")]
    if not rows:
        return None
    row = min(rows, key=lambda r: version_tuple(r["version"]) or ())
    return DriverFloor(row[key], row.get("source", ""))


def major_driver_span(cuda_major: int, os_name: str) -> tuple[DriverFloor, DriverFloor] | None:
    """(lowest, highest) of the minimum drivers NVIDIA names for the GA releases of CUDA CUDA_MAJOR.x: every x.y needs
    at least the lowest, and the highest runs every x.y (before minor-version compatibility, one toolkit each)."""
    key = "windows_min_driver" if os_name == "windows" else "linux_min_driver"
    floors: dict[tuple[int, ...], dict[str, Any]] = {}
    for row in load("cuda").get("toolkit", []):
        wanted = major_minor(row.get("version"))
        if wanted and wanted[0] == cuda_major and _known(row.get(key)) and not row.get("prerelease"):
            if wanted not in floors or (version_tuple(row["version"]) or ()) < (version_tuple(floors[wanted]["version"]) or ()):
                floors[wanted] = row
    if not floors:
        return None
    by_driver = sorted(floors.values(), key=lambda r: version_tuple(r[key]) or ())
    low, high = by_driver[0], by_driver[-1]
    return DriverFloor(low[key], low.get("source", "")), DriverFloor(high[key], high.get("source", ""))


def cudnn_release(version: str | None) -> dict[str, Any] | None:
    """The compat/cudnn.toml row of a cuDNN release (by major.minor.patch)."""
    have = version_tuple(version)
    if have is None:
        return None
    rows = load("cudnn").get("release", [])
    for row in rows:
        if version_tuple(row.get("version")) == have[:3]:
            return row
    # NVIDIA named cuDNN 5.0, 5.1 and 6.0 with two numbers (cudnn-8.0-linux-x64-v5.1.tgz); their libraries carry a third
    # (libcudnn.so.5.1.10, 6.0.21): such a release is the row of its two numbers
    for row in rows:
        named = version_tuple(row.get("version"))
        if named is not None and len(named) == 2 and named == have[:2]:
            return row
    return None


def cudnn_variant(version: str | None, cuda: str | None) -> tuple[dict[str, Any], dict[str, Any]] | None:
    """(release row, variant row) of the cuDNN build for CUDA version CUDA."""
    release = cudnn_release(version)
    cuda_parts = version_tuple(cuda)
    if release is None or cuda_parts is None:
        return None
    variants = release.get("variant", [])
    for variant in variants:  # exact toolkit builds first (cuDNN <= 8.2), then by major
        if version_tuple(variant.get("cuda")) == cuda_parts[:2]:
            return release, variant
    wanted = ".".join(str(p) for p in cuda_parts[:2])
    for variant in variants:  # one archive for several toolkits (8.2.2 for CUDA 11.4 covers 11.0-11.4)
        if any(wanted in entry.get("cuda_toolkits", []) for entry in variant.get("by_toolkit", [])):
            return release, variant
    for variant in variants:
        if version_tuple(variant.get("cuda")) == cuda_parts[:1]:
            return release, variant
    return None


def toolkit_rows(variant: dict[str, Any], cuda: str | None) -> list[dict[str, Any]]:
    """A major's variant narrowed to NVIDIA's matrix rows for one CUDA toolkit. cuDNN 9.10.2 for CUDA 12.x
    lists 12.8/12.9 twice: with driver >= 570.26 up to Blackwell, and with >= 525.60.13 up to Hopper. Each
    [[...by_toolkit]] entry that names the toolkit, merged over the variant; the variant itself when none does."""
    parts = version_tuple(cuda) or ()
    entries = variant.get("by_toolkit", [])
    if len(parts) < 2 or not entries:
        return [variant]
    wanted = f"{parts[0]}.{parts[1]}"
    found = []
    for entry in entries:
        if wanted in entry.get("cuda_toolkits", []):
            merged = {key: value for key, value in variant.items() if key != "by_toolkit"}
            merged.update({key: value for key, value in entry.items() if key != "cuda_toolkits"})
            merged["cuda_toolkits"] = ", ".join(entry["cuda_toolkits"])
            merged["toolkit"] = wanted
            found.append(merged)
    return found or [variant]


def minor_compat_min_driver(cuda_major: int, os_name: str) -> DriverFloor | None:
    """The oldest driver that runs any CUDA CUDA_MAJOR.x through minor-version compatibility."""
    key = "windows_min_driver" if os_name == "windows" else "linux_min_driver"
    for row in load("cuda").get("minor_version_compatibility", []):
        if int(row.get("major", -1)) == cuda_major and _known(row.get(key)):
            return DriverFloor(row[key], row.get("source", ""))
    return None


def minor_compat_branch(cuda_major: int) -> int | None:
    """The lowest driver branch NVIDIA's Table 2 names for CUDA CUDA_MAJOR.x minor-version compatibility (">=580")."""
    for row in load("cuda").get("minor_version_compatibility", []):
        if int(row.get("major", -1)) == cuda_major:
            text = str(row.get("driver_branch_range", ""))
            if text.startswith(">="):
                digits = text[2:].split(",")[0].strip()
                return int(digits) if ascii_digits(digits) else None
    return None


def newest_cudnn_for_cuda(cuda_major: int) -> str | None:
    """The newest cuDNN release in compat/cudnn.toml with a build for CUDA CUDA_MAJOR."""
    best: tuple[int, ...] | None = None
    for row in load("cudnn").get("release", []):
        if any(version_tuple(v.get("cuda")) in ((cuda_major,),) for v in row.get("variant", [])):
            parts = version_tuple(row.get("version"))
            if parts and (best is None or parts > best):
                best = parts
    return ".".join(str(p) for p in best) if best else None


# --- which cuDNN builds exist (for the planner: name only releases that exist) ---------------------

PLATFORMS = {  # (os, machine) as the doctor and Python name them -> the platform key of compat/cudnn.toml [[wheel]]
    ("linux", "x86_64"): "linux-x86_64", ("linux", "amd64"): "linux-x86_64",
    ("linux", "aarch64"): "linux-sbsa", ("linux", "arm64"): "linux-sbsa", ("linux", "sbsa"): "linux-sbsa",
    ("windows", "x86_64"): "windows-x86_64", ("windows", "amd64"): "windows-x86_64",
    ("windows", "arm64"): "windows-arm64", ("windows", "aarch64"): "windows-arm64",
}


@record(frozen=True)
class CudnnBuild:
    """One cuDNN release built for one CUDA major on one platform, and where that is written."""

    version: str  # the release as cuDNN reports it, "9.19.0"
    builds: tuple[str, ...]  # NVIDIA's four-part numbers of it ("9.19.0.56")
    cuda_major: int
    platform: str  # "linux-x86_64", "linux-sbsa", "windows-x86_64", "windows-arm64"
    package: str  # the pip distribution that carries it, "nvidia-cudnn-cu13"
    source: str


def platform_key(os_name: str, arch: str) -> str | None:
    """("linux", "x86_64") -> "linux-x86_64"; None for a platform no cuDNN build is recorded for (macOS)."""
    return PLATFORMS.get((os_name.strip().lower(), arch.strip().lower()))


def cudnn_builds_for(cuda_major: int, os_name: str = "linux", arch: str = "x86_64") -> list[CudnnBuild]:
    """The cuDNN releases that exist for CUDA CUDA_MAJOR on OS_NAME/ARCH, oldest first: a release of
    compat/cudnn.toml with a variant for that major whose [[wheel]] row lists the platform."""
    platform = platform_key(os_name, arch)
    if platform is None:
        return []
    found: list[CudnnBuild] = []
    for wheel in load("cudnn").get("wheel", []):
        if int(wheel.get("cuda", -1)) != cuda_major or platform not in wheel.get("platforms", []):
            continue
        release = str(wheel["release"])
        if cudnn_variant(release, str(cuda_major)) is None:
            continue  # a wheel the release table does not hold for that major: not named
        found.append(CudnnBuild(release, tuple(wheel.get("builds", [])), cuda_major, platform, str(wheel["package"]),
                                str(wheel["source"])))
    return sorted(found, key=lambda b: version_tuple(b.version) or ())


def cudnn_published(version: str) -> list[CudnnBuild]:
    """Every CUDA major and platform a cuDNN release (x.y.z) has a build for, from compat/cudnn.toml [[wheel]]."""
    found = []
    for cuda_major in sorted({int(w.get("cuda", -1)) for w in load("cudnn").get("wheel", [])}):
        for platform in dict.fromkeys(PLATFORMS.values()):
            os_name, _, arch = platform.partition("-")
            found += [b for b in cudnn_builds_for(cuda_major, os_name, arch) if b.version == version]
    return found


def cudnn_releases_for(cuda_major: int, os_name: str = "linux", arch: str = "x86_64") -> list[str]:
    """The cuDNN release numbers ("9.19.0") that exist for CUDA CUDA_MAJOR on OS_NAME/ARCH, oldest first."""
    return [build.version for build in cudnn_builds_for(cuda_major, os_name, arch)]
