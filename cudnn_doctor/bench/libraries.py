"""Which libcudnn and libcudart the bench child loads: the ones `check` finds, picked the way
a program on this machine would get them."""

from __future__ import annotations

import glob
import os
from dataclasses import dataclass

from cudnn_doctor.model import CudnnInstall, Report


@dataclass(frozen=True)
class Choice:
    path: str | None
    why: str  # how it was chosen, or why none was


def choose_cudnn(report: Report) -> tuple[CudnnInstall | None, str]:
    """The install the dynamic loader picks; else one a framework loads; else the newest usable."""
    usable = [i for i in report.cudnn if i.version and not i.load_error and not i.crashed and not i.timed_out
              and not i.file_error]
    if not usable:
        return None, "no loadable cuDNN was found"
    for install in usable:
        if "ld.so" in install.loaded_by:
            return install, "the one the dynamic loader picks"
    for install in usable:
        frameworks = [name for name in install.loaded_by if name != "ld.so"]
        if frameworks:
            return install, f"the one {frameworks[0]} loads"
    newest = max(usable, key=lambda i: _version_key(i.version))
    return newest, "the newest found"


def choose_cudart(report: Report, install: CudnnInstall | None) -> Choice:
    """A libcudart of cuDNN's CUDA major: the pip runtime beside a pip cuDNN, a toolkit's, or the
    loader's."""
    major = _major(install.cuda_version) if install else None
    names = [f"libcudart.so.{major}"] if major else ["libcudart.so.*"]
    beside = _beside_wheel(install, names) if install else None
    if beside:
        return Choice(beside, "the pip CUDA runtime beside the cuDNN wheel")
    toolkits = [t for t in report.toolkits if t.cudart and os.path.exists(t.cudart) and
                (major is None or _major(t.runtime_version or t.version) == major)]
    if toolkits:
        return Choice(toolkits[0].cudart, f"the CUDA toolkit at {toolkits[0].path}")
    for folder in report.loader_path:
        for name in names:
            found = sorted(glob.glob(os.path.join(folder, name)))
            if found:
                return Choice(found[0], "the one on the dynamic loader's path")
    wanted = f"CUDA {major}" if major else "any CUDA"
    return Choice(None, f"no libcudart of {wanted} was found (toolkits, pip wheels, the loader's path)")


def _beside_wheel(install: CudnnInstall, names: list[str]) -> str | None:
    # .../site-packages/nvidia/cudnn/lib -> .../site-packages/nvidia/{cuda_runtime,cu13}/lib
    nvidia = os.path.dirname(os.path.dirname(os.path.realpath(install.path)))
    if os.path.basename(nvidia) != "nvidia":
        return None
    for folder in ["cuda_runtime", *sorted(os.path.basename(p) for p in glob.glob(os.path.join(nvidia, "cu[0-9]*")))]:
        for name in names:
            found = sorted(glob.glob(os.path.join(nvidia, folder, "lib", name)))
            if found:
                return found[0]
    return None


def library_folders(*paths: str | None) -> list[str]:
    """The folders of PATHS, real paths, in order, without repeats (for the child's LD_LIBRARY_PATH)."""
    folders: list[str] = []
    for path in paths:
        if not path or os.sep not in path:
            continue
        for candidate in (os.path.dirname(os.path.abspath(path)), os.path.dirname(os.path.realpath(path))):
            if candidate not in folders:
                folders.append(candidate)
    return folders


def _major(version: str | None) -> int | None:
    try:
        return int(str(version).split(".")[0]) if version else None
    except ValueError:
        return None


def _version_key(version: str | None) -> tuple[int, ...]:
    parts = []
    for part in (version or "0").split("."):
        try:
            parts.append(int(part))
        except ValueError:
            parts.append(0)
    return tuple(parts)
