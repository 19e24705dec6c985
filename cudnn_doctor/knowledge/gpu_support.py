"""Which GPUs a product release supports, as a class of facts rather than a row per release (compat/gpu_support.toml).

Three kinds of knowledge, each a table with its sources:
  [[support]]       architectures a product's releases add and drop: a drop holds for every later release (cuDNN 9.11
                    removed Maxwell, Pascal and Volta, so 9.12 and 9.28 have not got them back), an addition for every
                    later one; releases where two sources contradict each other are "unknown", citing both
  [[cuda_floor]]    a build for CUDA major N holds no code for GPUs below that toolkit's oldest target (CUDA 13: 7.5),
                    whatever the product (torch, JAX, CuPy, ONNX Runtime, TensorRT)
  [[driver_floor]]  a GPU generation needs a driver at least as new as the first CUDA toolkit that supports it: minor-
                    version compatibility lets an older driver run newer CUDA code, not drive a GPU it does not know
"""

from __future__ import annotations

from typing import Any

from cudnn_doctor.knowledge import query
from cudnn_doctor.knowledge.data import load
from cudnn_doctor.versions import version_tuple

COMPATIBLE, INCOMPATIBLE, UNKNOWN = "compatible", "incompatible", "unknown"


def _cc(text: str | None) -> tuple[int, ...] | None:
    return version_tuple(text) if text not in (None, "", "unknown") else None


def _at_or_after(version: tuple[int, ...], floor: str) -> bool:
    return version >= (version_tuple(floor) or ())


def _within(version: tuple[int, ...], line: str) -> bool:
    """VERSION is no newer than the release line LINE ("10.16" holds 10.16.1.11)."""
    through = version_tuple(line) or ()
    return version[:len(through)] <= through


def support_rows(product: str) -> list[dict[str, Any]]:
    return [row for row in load("gpu_support").get("support", []) if row.get("product") == product]


def release_support(product: str, version: str, cc: str, label: str, read_only: bool = False,
                    drops_only: bool = False, cuda_majors: set[str] | None = None) -> tuple[str, str, str] | None:
    """(verdict, why, source) for a GPU of compute capability CC under PRODUCT at VERSION from the [[support]] rows,
    or None where no row speaks about that GPU at that release. READ_ONLY: a "compatible" only from a row read for a
    bounded set of releases (through_version), never from a row that only records a drop. DROPS_ONLY: only the rows
    that record a removal speak. A row read for some CUDA majors' builds only (cuda_majors) speaks only where every
    build in question (CUDA_MAJORS) is one of them."""
    have, release = _cc(cc), version_tuple(version)
    if have is None or release is None:
        return None
    for row in support_rows(product):
        if have not in {_cc(c) for c in row.get("compute_capabilities", [])}:
            continue
        if row.get("cuda_majors") and not (cuda_majors and cuda_majors <= set(row["cuda_majors"])):
            continue  # read for other CUDA majors' builds
        if row.get("read_from") and not _at_or_after(release, row["read_from"]) or \
                row.get("through_version") and not _within(release, row["through_version"]):
            continue  # the sources of this row were read for other releases
        name, source = row["architecture"], str(row["source"])
        if row.get("disputed_from") and _at_or_after(release, row["disputed_from"]) and \
                not _at_or_after(release, row["disputed_until"]):
            return (UNKNOWN, f"{label}: the sources contradict each other on {name} GPUs ({row['dispute']}), so whether "
                             f"it supports compute capability {cc} is not known", str(row["dispute_source"]))
        if row.get("until_version") and _at_or_after(release, row["until_version"]):
            return (INCOMPATIBLE, f"{label}: {name} support (compute capability {cc}) was removed in {row['until_version']} "
                                  "and later releases do not bring it back", source)
        if drops_only and not row.get("until_version"):
            continue  # only what a release removed (an addition's start is read from the matrices where they exist)
        if row.get("from_version") and not _at_or_after(release, row["from_version"]):
            if row.get("binary_compatible_before"):
                return (UNKNOWN, f"{label}: {name} (compute capability {cc}) is supported from {row['from_version']}; "
                                 "an earlier release's kernels for the same major may run on it, which NVIDIA does not "
                                 "state", source)
            return (INCOMPATIBLE, f"{label}: {name} support (compute capability {cc}) arrives in {row['from_version']}; "
                                  "this release has no kernels for it", source)
        if read_only and not row.get("through_version"):
            continue
        since = f" since {row['from_version']}" if row.get("from_version") else ""
        return (COMPATIBLE, f"{label} supports {name} (compute capability {cc}){since}", source)
    return None


def cuda_floor(cuda: str | None, cc: str) -> tuple[str, str] | None:
    """(minimum compute capability, source) of a build for CUDA (its major), or None."""
    major = (version_tuple(cuda) or (None,))[0] if cuda else None
    for row in load("gpu_support").get("cuda_floor", []):
        if row.get("cuda_major") == major:
            return str(row["min_compute_capability"]), str(row["source"])
    return None


def below_cuda_floor(cuda: str | None, cc: str) -> tuple[str, str] | None:
    """(why, source) when a build for CUDA cannot hold code for a GPU of compute capability CC, else None."""
    floor = cuda_floor(cuda, cc)
    have = _cc(cc)
    if floor is None or have is None or have >= (_cc(floor[0]) or ()):
        return None
    major = (version_tuple(cuda) or (0,))[0]
    return (f"a build for CUDA {major} starts at compute capability {floor[0]} (CUDA {major} no longer targets older "
            f"GPUs); this GPU is {cc}", floor[1])


def driver_floor(cc: str, os_name: str = "linux") -> tuple[str, str, str, str] | None:
    """(architecture, first CUDA, minimum driver, source) for a GPU of compute capability CC, or None."""
    have = _cc(cc)
    for row in load("gpu_support").get("driver_floor", []):
        if have in {_cc(c) for c in row.get("compute_capabilities", [])}:
            floor = query.toolkit_min_driver(str(row["first_cuda"]), os_name)
            if floor is None:
                return None
            return str(row["architecture"]), str(row["first_cuda"]), floor.version, f"{row['source']}; {floor.source}"
    return None


def driver_ceiling(driver: str, cc: str) -> tuple[str, str, str] | None:
    """(verdict, why, source) when DRIVER's branch is newer than the last one that drives an old GPU generation."""
    have, branch = _cc(cc), (version_tuple(driver) or (0,))[0]
    for row in load("gpu_support").get("driver_ceiling", []):
        if have in {_cc(c) for c in row.get("compute_capabilities", [])} and branch > int(row["last_branch"]):
            return (INCOMPATIBLE, f"{row['architecture']} GPUs (compute capability {cc}) are driven by branches up to "
                                  f"R{row['last_branch']}; driver {driver} (R{branch}) no longer supports them: use the "
                                  f"R{row['last_branch']} legacy branch", str(row["source"]))
    return None


def judge_driver_for_gpu(driver: str, cc: str, os_name: str = "linux") -> tuple[str, str, str] | None:
    """(verdict, why, source): does DRIVER drive a GPU of compute capability CC at all? None where the data holds no
    floor for that GPU. A bare branch ("535") is judged by its number."""
    ceiling = driver_ceiling(driver, cc)
    if ceiling is not None:
        return ceiling
    floor = driver_floor(cc, os_name)
    have = version_tuple(driver)
    if floor is None or have is None:
        return None
    architecture, first_cuda, minimum, source = floor
    need = version_tuple(minimum) or ()
    if len(have) == 1:
        ok = have[0] > need[0] if have[0] != need[0] else None
    else:
        ok = have >= need
    if ok is None:
        return (UNKNOWN, f"driver branch {driver}: {architecture} GPUs need >= {minimum}; give the full driver version",
                source)
    if ok:
        return (COMPATIBLE, f"{architecture} GPUs (compute capability {cc}) need a driver from CUDA {first_cuda} on "
                            f"(>= {minimum}); {driver} is that or newer", source)
    return (INCOMPATIBLE, f"{architecture} GPUs (compute capability {cc}) are supported from CUDA {first_cuda}, whose driver "
                          f"is {minimum}: driver {driver} does not drive this GPU, whatever CUDA version it runs "
                          "(minor-version compatibility does not extend to new GPUs)", source)


def before_first_toolkit(cuda: str | None, cc: str) -> tuple[str, str] | None:
    """(why, source) when a CUDA (a toolkit x.y, or a major alone) is older than the first toolkit that targets a GPU of
    compute capability CC ([[driver_floor]] first_cuda), or any GPU of the same major at or below it, whose kernels it
    would run (SASS for X.y runs on X.z, z >= y): a build made with that CUDA holds no kernels for it. None where the
    data holds no first toolkit for the GPU, or a major alone that may or may not reach it."""
    have, parts = _cc(cc), version_tuple(cuda) if cuda else None
    if have is None or not parts:
        return None
    rows = [row for row in load("gpu_support").get("driver_floor", [])
            for c in row.get("compute_capabilities", []) if (_cc(c) or ())[:1] == have[:1] and (_cc(c) or ()) <= have]
    own = [row for row in rows if have in {_cc(c) for c in row.get("compute_capabilities", [])}]
    if not own:
        return None
    first = min(version_tuple(str(row["first_cuda"])) or () for row in rows)
    older = parts[:2] < first[:2] if len(parts) >= 2 else parts[0] < first[0]
    if not older:
        return None
    row = own[0]
    return (f"{row['architecture']} GPUs (compute capability {cc}) are targeted from CUDA "
            f"{'.'.join(map(str, first))} on; a build for CUDA {cuda} holds no kernels for them", str(row["source"]))
