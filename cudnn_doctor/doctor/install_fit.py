"""Whether a cuDNN fits the prefix it goes into, before anything of the user's changes: the CUDA
major of the toolkit there (a cuDNN build needs a runtime of its own major), and another cuDNN
major already there (one prefix has one set of cuDNN headers). `check` calls either state an
error (CD306, CD303); the installer never creates it without being told to."""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from pathlib import Path

from cudnn_doctor.codes import doctor_error
from cudnn_doctor.install.archive import ArchiveContents
from cudnn_doctor.install.safety import printable
from cudnn_doctor.knowledge.layout import Layout
from cudnn_doctor.quoting import quote
from cudnn_doctor.versions import major, version_tuple

CUDA_H_HEAD = 256 << 10  # CUDA_VERSION is defined in cuda.h's first lines; the file is megabytes
SUPPORT_MATRIX = "https://docs.nvidia.com/deeplearning/cudnn/backend/latest/reference/support-matrix.html"


def toolkit_version_in(prefix: Path) -> tuple[str, str] | None:
    """(version, where it was read) of the CUDA toolkit in PREFIX: its version.json (or version.txt,
    the runtime wheel's dist-info, libcudart's name), else include/cuda.h's CUDA_VERSION; None when
    PREFIX holds no toolkit."""
    from cudnn_doctor.probes.toolkit import read_version_from_files
    from cudnn_doctor.user_files import UnreadableFile, read_user_head

    version, where = read_version_from_files(str(prefix))
    if version and where:
        return version, where
    try:
        head = read_user_head(str(prefix / "include" / "cuda.h"), CUDA_H_HEAD)
    except (OSError, UnreadableFile):
        return None
    match = re.search(rb"#define\s+CUDA_VERSION\s+(\d{4,6})\b", head)
    if not match:
        return None
    number = int(match.group(1))  # 13000 -> 13.0, 12040 -> 12.4
    return f"{number // 1000}.{number % 1000 // 10}", "include/cuda.h"


def staged_cuda_major(contents: ArchiveContents, staged: Callable[[str], Path]) -> int | None:
    """The CUDA major the staged libcudnn was built for, asked of the library itself
    (cudnnGetCudartVersion, in a child): for an archive whose name does not say."""
    from cudnn_doctor.probes.library_jobs import Job, run_jobs
    from cudnn_doctor.versions import decode_cuda

    main = next((f.dest for f in contents.files if re.fullmatch(r"libcudnn\.so\.\d+", os.path.basename(f.dest))),
                None)
    if main is None:
        return None
    job = Job("cudnn", str(staged(main)))
    answer = run_jobs([job])[job]
    return major(decode_cuda(answer.values.get("cudnnGetCudartVersion"))) if answer.loaded else None


def version_in_name(name: str) -> str | None:
    """The cuDNN version an archive's or wheel's file name gives (cudnn-linux-x86_64-9.19.0.56_cuda13-archive,
    nvidia_cudnn_cu12-8.9.7.29-..., cudnn-10.2-linux-x64-v7.6.5.32.tgz)."""
    match = re.search(r"(?:^|[-_v])(\d{1,2}\.\d{1,2}\.\d{1,3})(?:\.\d+)?(?=[-_.]|$)", name)
    return match.group(1) if match else None


def refuse_other_cuda(prefix: Path, version: str | None, cuda_major: int | None, archive: str,
                      force: bool) -> str | None:
    """CD519 when cuDNN VERSION, built for CUDA_MAJOR, goes into a prefix whose toolkit is another CUDA
    major (unless FORCE: then the sentence the plan notes)."""
    found = toolkit_version_in(prefix)
    if found is None or cuda_major is None or major(found[0]) in (None, cuda_major):
        return None
    toolkit_version, where = found
    toolkit_major = major(toolkit_version) or 0
    if force:
        return (f"cuDNN built for CUDA {cuda_major} installed into a CUDA {toolkit_version} toolkit because of "
                "--force: `check` will report CD306")
    raise doctor_error("CD519", exit_code=2, archive=printable(os.path.basename(archive)),
                         version=version or "(version unknown)", cudnn_cuda=cuda_major, prefix=str(prefix),
                         toolkit_version=toolkit_version, where=where,
                         fix=other_cuda_fix(prefix, major(version), cuda_major, toolkit_major))


def other_cuda_fix(prefix: Path, cudnn_major: int | None, cuda_major: int, toolkit_major: int) -> str:
    builds = builds_for_cuda(toolkit_major)
    own = [v for v in builds if major(v) == cudnn_major]
    pick = (own or builds)[-1] if builds else None
    if pick is None:
        lookup = (f"compat/cudnn.toml lists no cuDNN build for CUDA {toolkit_major}: look one up in NVIDIA's "
                  f"support matrix ({SUPPORT_MATRIX}) and install it with `cudnn-doctor install --from ARCHIVE "
                  f"--prefix {quote(str(prefix), 'bash')}`")
    else:
        why = (f"cuDNN {cudnn_major} has no CUDA {toolkit_major} build; " if not own and cudnn_major else "") + \
              f"{pick} is the newest cuDNN{' ' + str(cudnn_major) if own else ''} for CUDA {toolkit_major} in " \
              "compat/cudnn.toml"
        lookup = (f"install the CUDA {toolkit_major} build: `cudnn-doctor install --version {pick} --cuda "
                  f"{toolkit_major} --prefix {quote(str(prefix), 'bash')}` ({why})")
    return (f"{lookup[0].upper()}{lookup[1:]}; or install this one into a CUDA {cuda_major} toolkit or a prefix of "
            "its own; `--force` installs it here anyway.")


def builds_for_cuda(cuda_major: int) -> list[str]:
    """The cuDNN releases compat/cudnn.toml lists with a build for CUDA CUDA_MAJOR, oldest first."""
    from cudnn_doctor.knowledge.data import load

    found = set()
    for release in load("cudnn").get("release", []):
        for variant in release.get("variant", []):
            cuda = str(variant.get("cuda", ""))
            if cuda == str(cuda_major) or cuda.startswith(f"{cuda_major}."):
                found.add(str(release.get("version")))
    return sorted(found, key=lambda v: version_tuple(v) or (0,))


def other_majors_in(prefix: Path, layout: Layout, new_major: int) -> dict[int, list[str]]:
    """The cuDNN libraries of other majors than NEW_MAJOR in PREFIX (libcudnn.so.8, cudnn64_8.dll ...)."""
    found: dict[int, list[str]] = {}
    for category, folder in sorted(layout.folders.items()):
        pattern = layout.any_major_pattern(category)
        if pattern is None or not (prefix / folder).is_dir():
            continue
        for entry in sorted(os.scandir(prefix / folder), key=lambda e: e.name):
            match = pattern.match(entry.name)
            if match and int(match.group(1)) != new_major:
                found.setdefault(int(match.group(1)), []).append(f"{folder}/{entry.name}")
    return found


def refuse_other_major(prefix: Path, layout: Layout, new_major: int | None, version: str | None,
                       current: dict[int, str]) -> None:
    """CD518 when PREFIX holds another cuDNN major than NEW_MAJOR (the caller passes --replace by not
    calling); CURRENT: the versions `check` read of the majors there."""
    if new_major is None:
        return
    found = other_majors_in(prefix, layout, new_major)
    if not found:
        return
    files = [rel for major_files in found.values() for rel in major_files]
    raise doctor_error("CD518", exit_code=2, prefix=str(prefix),
                         current=", ".join(current.get(m) or f"{m}.x" for m in sorted(found)),
                         files=", ".join(files[:3]) + (" ..." if len(files) > 3 else ""),
                         version=version or f"{new_major}.x", current_major=" and ".join(map(str, sorted(found))),
                         major=new_major, other_prefix=f"{prefix}-cudnn{new_major}",
                         library_folder=layout.library_folder)
