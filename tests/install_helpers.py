"""Build real cuDNN archives in every layout NVIDIA has shipped (with a gcc-built fake
libcudnn and real symlinks), run the install CLI as a user would, and snapshot folders."""

from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import stat
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

from tests.fakes.build import fake_cudnn

REPO = Path(__file__).resolve().parents[1]
SUBLIBRARIES = {
    9: ["libcudnn_graph", "libcudnn_ops", "libcudnn_cnn", "libcudnn_adv", "libcudnn_engines_precompiled",
        "libcudnn_engines_runtime_compiled", "libcudnn_heuristic"],
    8: ["libcudnn_ops_infer", "libcudnn_ops_train", "libcudnn_cnn_infer", "libcudnn_cnn_train",
        "libcudnn_adv_infer", "libcudnn_adv_train"],
}
# The CLI as a user runs it: the `cudnn-doctor` console script is entry.main, as `python -m cudnn_doctor` is
CLI = "import sys; sys.argv[0] = 'cudnn-doctor'; from cudnn_doctor.entry import main; main()"  # as the console script runs


def version_parts(version: int) -> tuple[int, int, int]:
    if version >= 90000:
        return version // 10000, (version % 10000) // 100, version % 100
    return version // 1000, (version % 1000) // 100, version % 100


def version_text(version: int) -> str:
    return ".".join(str(p) for p in version_parts(version))


def write_headers(folder: Path, version: int) -> None:
    major, minor, patch = version_parts(version)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "cudnn_version.h").write_text(
        f"#define CUDNN_MAJOR {major}\n#define CUDNN_MINOR {minor}\n#define CUDNN_PATCHLEVEL {patch}\n")
    (folder / "cudnn.h").write_text('#include "cudnn_version.h"\n/* fake cuDNN header */\n')
    (folder / f"cudnn_v{major}.h").write_text("/* fake */\n")


def cudnn_tree(root: Path, version: int = 91900, cudart: int = 12040, lib_folder: str = "lib",
               header_version: int | None = None, versioned_files: bool = True) -> Path:
    """ROOT/include and ROOT/LIB_FOLDER as NVIDIA ships them; returns ROOT."""
    major = version_parts(version)[0]
    fake_cudnn(root / lib_folder, version=version, cudart=cudart, sublibraries=SUBLIBRARIES.get(major, []),
               versioned_files=versioned_files)
    write_headers(root / "include", header_version or version)
    return root


def tar_folder(folder: Path, archive: Path, arcname: str, mode: str = "w:xz") -> Path:
    with tarfile.open(archive, mode) as tar:
        tar.add(folder, arcname=arcname)
    return archive


def make_archive(kind: str, out: Path, version: int = 91900, cudart: int = 12040, cuda: int = 12,
                 header_version: int | None = None) -> Path:
    """A real archive of KIND: txz (cuDNN >= 8.3), tgz (<= 8.2 `cuda/` tree), wheel, zip (Windows)."""
    major, minor, patch = version_parts(version)
    full = f"{major}.{minor}.{patch}.7"
    work = out / f"build-{kind}-{version}-{cuda}-{header_version}"
    shutil.rmtree(work, ignore_errors=True)
    if kind == "txz":
        name = f"cudnn-linux-x86_64-{full}_cuda{cuda}-archive"
        cudnn_tree(work / name, version, cudart, "lib", header_version)
        (work / name / "LICENSE").write_text("NVIDIA license\n")
        return tar_folder(work / name, out / f"{name}.tar.xz", name)
    if kind == "tgz":
        cudnn_tree(work / "cuda", version, cudart, "lib64", header_version)
        return tar_folder(work / "cuda", out / f"cudnn-{cuda}.2-linux-x64-v{full}.tgz", "cuda", "w:gz")
    if kind == "wheel":
        cudnn_tree(work / "nvidia" / "cudnn", version, cudart, "lib", header_version, versioned_files=False)
        wheel = out / f"nvidia_cudnn_cu{cuda}-{full}-py3-none-manylinux_2_27_x86_64.whl"
        with zipfile.ZipFile(wheel, "w", zipfile.ZIP_DEFLATED) as archive:
            for path in sorted((work / "nvidia").rglob("*")):
                if path.is_file():
                    info = zipfile.ZipInfo(str(path.relative_to(work)))
                    info.external_attr = 0o100644 << 16
                    info.create_system = 3
                    archive.writestr(info, path.read_bytes(), zipfile.ZIP_DEFLATED)
            archive.writestr(f"nvidia_cudnn_cu{cuda}-{full}.dist-info/METADATA", f"Version: {full}\n")
        return wheel
    if kind == "zip":
        name = f"cudnn-windows-x86_64-{full}_cuda{cuda}-archive"
        archive_path = out / f"{name}.zip"
        with zipfile.ZipFile(archive_path, "w") as archive:
            archive.writestr(f"{name}/bin/cudnn64_{major}.dll", b"MZ fake dll")
            for sub in SUBLIBRARIES.get(major, []):
                archive.writestr(f"{name}/bin/{sub.removeprefix('lib')}64_{major}.dll", b"MZ fake dll")
            archive.writestr(f"{name}/include/cudnn.h", b"/* fake */\n")
            archive.writestr(f"{name}/include/cudnn_version.h",
                             f"#define CUDNN_MAJOR {major}\n#define CUDNN_MINOR {minor}\n"
                             f"#define CUDNN_PATCHLEVEL {patch}\n".encode())
            archive.writestr(f"{name}/lib/x64/cudnn.lib", b"fake import library")
            archive.writestr(f"{name}/LICENSE", b"license")
        return archive_path
    raise ValueError(kind)


def hostile_tar(path: Path, members: list[tuple[tarfile.TarInfo, bytes | None]], good: Path | None = None) -> Path:
    """A .tar.gz with the members of GOOD (a real txz archive) followed by MEMBERS."""
    with tarfile.open(path, "w:gz") as tar:
        if good is not None:
            with tarfile.open(good) as source:
                for info in source.getmembers():
                    tar.addfile(info, source.extractfile(info) if info.isreg() else None)
        for info, data in members:
            tar.addfile(info, io.BytesIO(data) if data is not None else None)
    return path


def tar_info(name: str, kind: bytes = tarfile.REGTYPE, size: int = 0, linkname: str = "") -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type, info.size, info.linkname, info.mode = kind, size, linkname, 0o644
    return info


def clean_env(tmp: Path, **extra: str) -> dict[str, str]:
    """An environment that sees no real CUDA, no proxies, and a cache inside TMP."""
    root = tmp / "system-root"
    root.mkdir(exist_ok=True)
    env = {key: value for key, value in os.environ.items()
           if key not in ("CUDA_HOME", "CUDA_PATH", "LD_LIBRARY_PATH", "VIRTUAL_ENV", "CONDA_PREFIX")
           and "proxy" not in key.lower()}
    env.update({
        "PATH": "/usr/bin:/bin", "HOME": str(tmp / "home"), "CUDNN_DOCTOR_CACHE_DIR": str(tmp / "cache"),
        "CUDNN_DOCTOR_SYSTEM_PREFIX": str(root), "CUDNN_DOCTOR_RETRY_BACKOFF": "0", "PYTHONPATH": str(REPO),
        "NO_PROXY": "*",
    })
    env.update(extra)
    return env


# a variable that makes the run kill itself (install/faults.py): only ever in a process of its own
KILLS = "CUDNN_DOCTOR_TEST_KILL_AT"


def run_cli(args: list[str], env: dict[str, str], **kwargs) -> subprocess.CompletedProcess[str]:  # type: ignore[no-untyped-def]
    """ARGS run as the CLI with ENV as its whole environment. In this process (conftest.run_in_process: a Python
    start and the doctor's imports saved per run, the transaction the same) unless the run is to kill itself at a
    step, runs beside others in threads (a process's folder and environment are one), takes other arguments of
    subprocess.run, or CUDNN_DOCTOR_TEST_SUBPROCESS=1 asks for a process every time; IN_PROCESS=False: always a
    process (where the process is the point)."""
    import threading

    from tests.conftest import every_run_in_a_process, run_in_process

    timeout = kwargs.pop("timeout", 120)
    in_process = kwargs.pop("in_process", True)
    if (in_process and not kwargs and KILLS not in env and threading.current_thread() is threading.main_thread()
            and not every_run_in_a_process()):
        result = run_in_process(list(args), env, REPO, timeout)
        return subprocess.CompletedProcess([sys.executable, "-c", CLI, *args], result.exit_code, result.stdout,
                                           result.stderr)
    return subprocess.run([sys.executable, "-c", CLI, *args], env=env, capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=timeout, cwd=str(REPO), **kwargs)


def run_json(args: list[str], env: dict[str, str]) -> tuple[int, dict, str]:  # type: ignore[type-arg]
    result = run_cli([*args, "--json"], env)
    try:
        data = json.loads(result.stdout)
    except ValueError:
        raise AssertionError(f"not JSON (exit {result.returncode}): {result.stdout!r} {result.stderr!r}") from None
    return result.returncode, data, result.stderr


def snapshot(folder: Path) -> dict[str, tuple]:  # type: ignore[type-arg]
    """Every entry under FOLDER: kind, mode, and content hash or link target."""
    entries: dict[str, tuple] = {}  # type: ignore[type-arg]
    if not folder.exists():
        return entries
    for path in sorted(folder.rglob("*")):
        rel = str(path.relative_to(folder))
        info = path.lstat()
        if stat.S_ISLNK(info.st_mode):
            entries[rel] = ("link", os.readlink(path))
        elif stat.S_ISDIR(info.st_mode):
            entries[rel] = ("dir", stat.S_IMODE(info.st_mode))
        else:
            entries[rel] = ("file", stat.S_IMODE(info.st_mode), info.st_ino, sha256_of(path))
    return entries


def sha256_of(path: Path) -> str:
    """PATH's sha256, read in 1 MiB pieces into one buffer (hashlib.file_digest's way, which Python 3.10 lacks): a
    whole file read into one bytes object first cost as much CPU again as the hash (a real cuDNN 8.9.7 prefix is
    1.1 GB: 1.75 CPU s read whole, 0.95 in pieces) and held all of it in memory."""
    digest = hashlib.sha256()
    buffer = bytearray(1 << 20)
    view = memoryview(buffer)
    with path.open("rb", buffering=0) as handle:
        while size := handle.readinto(buffer):
            digest.update(view[:size])
    return digest.hexdigest()


def snapshot_content(folder: Path) -> dict[str, tuple]:  # type: ignore[type-arg]
    """Like snapshot, without inode numbers."""
    return {k: tuple(x for i, x in enumerate(v) if not (v[0] == "file" and i == 2)) for k, v in snapshot(folder).items()}


def cudnn7_tree(root: Path, version: int = 7605, header_version: int | None = None) -> Path:
    """The smallest real cuDNN: 7.x has no sub-libraries, one header (cudnn.h), one library and
    its two links. ROOT/include and ROOT/lib64; returns ROOT."""
    fake_cudnn(root / "lib64", version=version, cudart=10020, sublibraries=[])
    major, minor, patch = version_parts(header_version or version)
    (root / "include").mkdir(parents=True, exist_ok=True)
    (root / "include" / "cudnn.h").write_text(
        f"/* cuDNN {major}.{minor}.{patch} */\n#define CUDNN_MAJOR {major}\n#define CUDNN_MINOR {minor}\n"
        f"#define CUDNN_PATCHLEVEL {patch}\n")
    return root


def cudnn7_archive(out: Path, version: int = 7605, header_version: int | None = None) -> Path:
    """A cuDNN 7 `.tgz` (the `cuda/` tree NVIDIA shipped) with 4 members."""
    work = out / f"build-7-{version}-{header_version}"
    shutil.rmtree(work, ignore_errors=True)
    cudnn7_tree(work / "cuda", version, header_version)
    return tar_folder(work / "cuda", out / f"cudnn-10.2-linux-x64-v{version_text(version)}.{version}.tgz", "cuda",
                      "w:gz")


def cudnn7_prefix(prefix: Path, version: int = 7600) -> Path:
    """A toolkit prefix with a hand-copied cuDNN 7 in it (include/cudnn.h, lib64/libcudnn.so.7.*)."""
    cudnn7_tree(prefix, version)
    (prefix / "bin").mkdir(parents=True, exist_ok=True)
    (prefix / "bin" / "nvcc").write_text("#!/bin/sh\n")
    return prefix
