"""Real NVIDIA cuDNN wheels from PyPI for integration tests: downloaded once, extracted once.

The cache lives in $CUDNN_DOCTOR_TEST_CACHE (default ~/.cache/cudnn-doctor-tests) so a CI
machine pays for each download once. No network: the tests that need them skip, saying so.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.locks import locked

WHEELS = {
    "8.9.7": "nvidia-cudnn-cu12==8.9.7.29",
    "9.19.0": "nvidia-cudnn-cu13==9.19.0.56",
}


def cache_root() -> Path:
    return Path(os.environ.get("CUDNN_DOCTOR_TEST_CACHE", Path.home() / ".cache" / "cudnn-doctor-tests"))


def real_wheel(version: str, arch: str = "x86_64") -> Path:
    """The wheel file of cuDNN VERSION for ARCH (x86_64, aarch64), downloaded with pip if not cached yet."""
    requirement = WHEELS[version]
    # another architecture's wheels in a folder of their own: a cache shared with older checkouts, whose lookup
    # takes any wheel of the name, never finds them
    folder = cache_root() / ("wheels" if arch == "x86_64" else f"wheels-{arch}")
    name = requirement.split("==")[0].replace("-", "_") + "-" + requirement.split("==")[1]
    # the build for ARCH: the cache may hold other platforms' wheels of the same release beside it
    found = sorted(folder.glob(f"{name}-*_{arch}.whl"))
    if found:
        return found[0]
    with locked(f"wheel-{name}-{arch}"):  # another worker may be downloading it: wait for it, then take its file
        return _download(requirement, name, arch, folder)


def _download(requirement: str, name: str, arch: str, folder: Path) -> Path:
    found = sorted(folder.glob(f"{name}-*_{arch}.whl"))
    if found:
        return found[0]
    folder.mkdir(parents=True, exist_ok=True)
    platforms = ["--platform", f"manylinux_2_27_{arch}"] + (["--platform", "manylinux1_x86_64"] if arch == "x86_64" else [])
    process = subprocess.run(
        [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", *platforms, "-d", str(folder),
         requirement],
        capture_output=True, text=True, timeout=900,
    )
    found = sorted(folder.glob(f"{name}-*_{arch}.whl"))
    if process.returncode != 0 or not found:
        pytest.skip(f"cannot download {requirement} from PyPI (no network?): {process.stderr.strip()[-300:]}")
    return found[0]


def real_cudnn(version: str, arch: str = "x86_64") -> Path:
    """The wheel's nvidia/cudnn folder (lib/ and include/), extracted once into the cache."""
    wheel = real_wheel(version, arch)
    target = cache_root() / "extracted" / wheel.stem
    done = target / ".complete"
    if not done.exists():
        with locked(f"extract-{wheel.stem}"):
            if not done.exists():
                with zipfile.ZipFile(wheel) as archive:
                    for member in archive.infolist():
                        if member.filename.startswith("nvidia/cudnn/") and not member.is_dir():
                            archive.extract(member, target)
                done.write_text("ok\n")
    return target / "nvidia" / "cudnn"


def real_wheel_stored(version: str) -> Path:
    """The real wheel of cuDNN VERSION written again with its members stored (zip method 0) instead of deflated:
    the same members, bytes, modes and RECORD, under the same file name, made once into the cache (keyed by the
    wheel's sha256, so a new download is never matched to an old copy). The closed loops of tests/test_fix.py serve
    it from their mirror: each `fix --yes` then copies, hashes, checks and writes every file of the real cuDNN as
    with the wheel itself, without zlib inflating NVIDIA's 705 MB once more per test (about half of each loop's CPU).
    Inflating the real wheels is tested where it is the point (tests/test_install_wheel.py, 9.19.0's in
    tests/test_install_prefix_fit.py)."""
    wheel = real_wheel(version)
    digest = wheel_sha256(wheel)
    target = cache_root() / "stored" / digest[:16] / wheel.name
    if target.exists():
        return target
    with locked(f"stored-{digest[:16]}"):
        if target.exists():
            return target
        target.parent.mkdir(parents=True, exist_ok=True)
        part = target.with_name(target.name + ".part")
        with zipfile.ZipFile(wheel) as source, zipfile.ZipFile(part, "w", zipfile.ZIP_STORED) as copy:
            for info in source.infolist():
                stored = zipfile.ZipInfo(info.filename, info.date_time)
                stored.external_attr, stored.create_system = info.external_attr, info.create_system
                stored.compress_type, stored.file_size = zipfile.ZIP_STORED, info.file_size
                with source.open(info) as reader, copy.open(stored, "w") as writer:
                    shutil.copyfileobj(reader, writer, 1 << 22)
        part.rename(target)
    return target


def wheel_sha256(path: Path) -> str:
    """PATH's sha256, kept beside it in PATH.sha256 (a file newer than PATH): hashed once per download."""
    import hashlib

    stamp = path.with_suffix(path.suffix + ".sha256")
    if stamp.exists() and stamp.stat().st_mtime >= path.stat().st_mtime:
        return stamp.read_text().strip()
    digest = hashlib.sha256()
    with path.open("rb") as stream:
        for block in iter(lambda: stream.read(1 << 22), b""):
            digest.update(block)
    part = stamp.with_name(f"{stamp.name}.{os.getpid()}")
    part.write_text(digest.hexdigest())
    part.rename(stamp)  # whole or absent: another worker may read it at once
    return digest.hexdigest()


JAX_CPU = ("jax==0.4.38", "jaxlib==0.4.38")  # the last release with wheels for every Python the suite runs on


def _pip_installed(name: str, requirements: tuple[str, ...], unreachable: str) -> Path:
    """A cache folder NAME holding REQUIREMENTS installed once with pip (binary wheels, with their dependencies);
    the test skips with UNREACHABLE and pip's last words where pip cannot install them."""
    folder = cache_root() / name
    if (folder / ".complete").exists():
        return folder
    with locked(name):
        if (folder / ".complete").exists():
            return folder
        shutil.rmtree(folder, ignore_errors=True)
        process = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-compile",
                                  "--only-binary=:all:", "--target", str(folder), *requirements],
                                 capture_output=True, text=True, timeout=900)
        if process.returncode != 0:
            shutil.rmtree(folder, ignore_errors=True)
            pytest.skip(f"{unreachable}: {process.stderr.strip()[-300:]}")
        (folder / ".complete").write_text("")
    return folder


def real_jax_cpu() -> Path:
    """A folder holding the real JAX and jaxlib (CPU) with their dependencies, installed once with pip into the
    cache (about 160 MB): what XLA itself says of XLA_FLAGS is asked of it there."""
    return _pip_installed("jax-cpu-0.4.38", JAX_CPU, f"cannot install {' '.join(JAX_CPU)} from PyPI (no network?)")


NCCL = "nvidia-nccl-cu13==2.32.3"


def real_nccl() -> Path:
    """The real NCCL's library (nvidia-nccl-cu13 2.32.3's nvidia/nccl/lib/libnccl.so.2), downloaded with pip and
    extracted once into the cache: the names of the variables NCCL reads are strings in it."""
    name, version = NCCL.split("==")
    target = cache_root() / "extracted" / f"{name.replace('-', '_')}-{version}"
    library = target / "nvidia" / "nccl" / "lib" / "libnccl.so.2"
    if (target / ".complete").exists():
        return library
    with locked(f"extract-{target.name}"):
        if not (target / ".complete").exists():
            wheel = _download(NCCL, name.replace("-", "_") + "-" + version, "x86_64", cache_root() / "wheels")
            with zipfile.ZipFile(wheel) as archive:
                archive.extract("nvidia/nccl/lib/libnccl.so.2", target)
            (target / ".complete").write_text("ok\n")
    return library


TORCH_CPU = "torch==2.13.0+cpu"  # a CPU build: its c10 holds the common allocator parser of every build


def real_torch_cpu() -> Path:
    """A folder holding a real CPU build of PyTorch with its dependencies, installed once with pip into the cache
    (about 800 MB installed): c10's own allocator-configuration parser is asked there. Skips where pip cannot
    find that build (it is not on PyPI itself: pip finds it where its configuration names a folder or index that
    holds it)."""
    return _pip_installed("torch-2.13.0-cpu", (TORCH_CPU,), f"cannot install {TORCH_CPU} with pip")


NVCC_CU12 = "nvidia-cuda-nvcc-cu12==12.6.85"  # bin/ptxas and nvvm/libdevice/libdevice.10.bc (no nvlink in this release)
NVRTC_CU12 = "nvidia-cuda-nvrtc-cu12==12.6.85"  # lib/libnvrtc.so.12 and lib/libnvrtc-builtins.so.12.6


def real_cuda_wheel(requirement: str) -> Path:
    """The site-packages-like folder holding REQUIREMENT's wheel (x86_64) extracted once into the cache, each
    member's mode kept as the wheel records it (ptxas is 0744 there), as pip installs it."""
    name, version = requirement.split("==")
    target = cache_root() / "extracted" / f"{name.replace('-', '_')}-{version}"
    if (target / ".complete").exists():
        return target
    with locked(f"extract-{target.name}"):
        if not (target / ".complete").exists():
            wheel = _download_any_tag(requirement)
            with zipfile.ZipFile(wheel) as archive:
                for member in archive.infolist():
                    if member.is_dir():
                        continue
                    path = Path(archive.extract(member, target))
                    mode = (member.external_attr >> 16) & 0o777
                    if mode:
                        path.chmod(mode)
            (target / ".complete").write_text("ok\n")
    return target


def _download_any_tag(requirement: str) -> Path:
    """REQUIREMENT's x86_64 wheel in the cache, downloaded with pip where missing: NVIDIA tags these wheels
    manylinux1, manylinux2010 or manylinux_2_5/2_12, which pip's explicit --platform list must name."""
    name, version = requirement.split("==")
    folder = cache_root() / "wheels"
    stem = f"{name.replace('-', '_')}-{version}"
    found = sorted(folder.glob(f"{stem}-*x86_64*.whl"))
    if found:
        return found[0]
    folder.mkdir(parents=True, exist_ok=True)
    platforms = [word for tag in ("manylinux_2_27_x86_64", "manylinux2014_x86_64", "manylinux2010_x86_64",
                                  "manylinux1_x86_64") for word in ("--platform", tag)]
    process = subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", *platforms,
                              "-d", str(folder), requirement], capture_output=True, text=True, timeout=900)
    found = sorted(folder.glob(f"{stem}-*x86_64*.whl"))
    if process.returncode != 0 or not found:
        pytest.skip(f"cannot download {requirement} from PyPI (no network?): {process.stderr.strip()[-300:]}")
    return found[0]
