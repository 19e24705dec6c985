"""An arm64 Python from Debian's packages, run under qemu-user (qemu-aarch64-static): the doctor runs on it as on an
aarch64 machine (a Grace server, a Jetson), its probe children too, and loads real aarch64 libraries.

The packages are fetched with apt-get's own client into a private state folder (the machine's apt lists and dpkg
architectures are left alone) and unpacked with dpkg-deb into a root, cached in the test cache. A wrapper script is
the interpreter: qemu runs the arm64 python with argv[0] set to the wrapper (`-0`), so sys.executable, which the
doctor's child runner starts, is the wrapper again."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.locks import locked
from tests.real_wheels import cache_root

PACKAGES = ("python3.11-minimal", "libpython3.11-minimal", "libpython3.11-stdlib", "libc6", "zlib1g", "libexpat1",
            "libffi8", "libgcc-s1", "libstdc++6", "libssl3", "libbz2-1.0", "liblzma5")


def arm64_python() -> Path:
    """The wrapper that runs Debian's arm64 python3.11 under qemu-aarch64-static; skips where that cannot be had."""
    qemu = shutil.which("qemu-aarch64-static")
    if qemu is None:
        pytest.skip("qemu-aarch64-static is not installed (.ci/run installs Debian's qemu-user-static)")
    base = cache_root() / "arm64-python3.11"
    root, wrapper = base / "root", base / "bin" / "python3"
    script = f"#!/bin/sh\nexport PYTHONHOME=/usr\nexec {qemu} -L {root} -0 \"$0\" {root}/usr/bin/python3.11 \"$@\"\n"
    if (base / ".complete").exists() and wrapper.is_file() and wrapper.read_text() == script:
        return wrapper
    with locked("arm64-python3.11"):  # another pytest-xdist worker may be building it or running the wrapper
        if not (base / ".complete").exists():
            _build(base, root)
        wrapper.parent.mkdir(parents=True, exist_ok=True)
        temporary = wrapper.with_name(f".python3.{os.getpid()}")
        temporary.write_text(script)
        temporary.chmod(0o755)
        os.replace(temporary, wrapper)  # a wrapper being run is never seen half-written
    return wrapper


def _build(base: Path, root: Path) -> None:
    apt_get, dpkg_deb = shutil.which("apt-get"), shutil.which("dpkg-deb")
    if apt_get is None or dpkg_deb is None:
        pytest.skip("apt-get and dpkg-deb are needed to fetch Debian's arm64 python")
    state = base / "apt"
    for folder in (state / "lists" / "partial", state / "cache" / "archives" / "partial", base / "debs"):
        folder.mkdir(parents=True, exist_ok=True)
    (state / "status").touch()
    options = [f"-o=Dir::State::Lists={state / 'lists'}", f"-o=Dir::Cache={state / 'cache'}",
               f"-o=Dir::State::status={state / 'status'}", "-o=APT::Architecture=arm64",
               "-o=APT::Architectures::=arm64", "-o=APT::Sandbox::User=root"]
    for step in (["update"], ["download", *PACKAGES]):
        done = subprocess.run([apt_get, "-qq", *options, *step], capture_output=True, text=True, timeout=600,
                              cwd=base / "debs")
        if done.returncode != 0:
            pytest.skip(f"cannot fetch Debian's arm64 packages (no network?): {done.stderr.strip()[-300:]}")
    shutil.rmtree(root, ignore_errors=True)
    for deb in sorted((base / "debs").glob("*.deb")):
        subprocess.run([dpkg_deb, "-x", str(deb), str(root)], check=True, capture_output=True)
    (base / ".complete").write_text("ok\n")


def pure_python_path() -> str:
    """This checkout and the site-packages of this environment (argcomplete, rich, pynvml: pure Python, architecture-free)."""
    import site

    return os.pathsep.join([str(Path(__file__).resolve().parents[1]), *site.getsitepackages()])
