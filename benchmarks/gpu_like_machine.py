"""A pretend machine laid out as the GPU machine of issue 45's speed bar is, for plain `check`'s critical path on a
CPU: a driver (the tests' gcc-built NVML 580, one H100), the CUDA 13.0 toolkit under /usr/local with its libcudart,
the system's cuDNN 9.14 in the loader's default folder and cache (`ldconfig -p` answers for it), and one Python
environment holding torch 2.11 (+cu130: its METADATA, version.py and a libtorch_cuda.so whose RUNPATH finds the
wheel's cuDNN), NVIDIA's real cuDNN 9.19 and NCCL 2.32 wheels' libraries, the real JAX and jaxlib (CPU, 0.4.38,
with numpy and scipy) and a jax_cuda13_plugin 0.11.2 distribution. No variable opens a gate the machine does not open (no PYTHON*, OPENBLAS_*, XLA_FLAGS).

    from gpu_like_machine import build; env = build(Path(folder))   # the environment a check runs in there

Needs gcc and the tests' cache of real wheels (tests/real_wheels.py downloads them once; without a network the
missing part is left out and said on stderr)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CUDNN9 = ["libcudnn_graph", "libcudnn_ops", "libcudnn_cnn", "libcudnn_adv", "libcudnn_engines_precompiled",
          "libcudnn_engines_runtime_compiled", "libcudnn_heuristic"]


def _real(what: str) -> Path | None:
    """The tests' cached real package WHAT (tests/real_wheels.py's real_jax_cpu, real_nccl; or cuDNN 9.19's folder),
    or None where it cannot be had."""
    import tests.real_wheels as wheels

    try:
        return wheels.real_cudnn("9.19.0") if what == "real_cudnn_919" else getattr(wheels, what)()
    except BaseException as error:  # noqa: BLE001 - pytest.skip is a BaseException: no network, no wheel
        sys.stderr.write(f"gpu_like_machine: {what} left out ({error})\n")
        return None


def build(folder: Path) -> dict[str, str]:
    """Lay the machine out under FOLDER; the environment a program started there has."""
    sys.path.insert(0, str(REPO))
    from tests.fakes.build import fake_cudnn, fake_framework_library, fake_nvml
    from tests.test_check import make_toolkit

    root, home = folder / "root", folder / "home"
    for made in (root / "etc", home, folder / "work"):
        made.mkdir(parents=True, exist_ok=True)
    fake_nvml(folder / "driver", driver="580.65.06", cuda=13000)
    toolkit = make_toolkit(root, "13.0.88", 13000)
    (toolkit.parent / "cuda").symlink_to(toolkit.name)
    fake_cudnn(root / "usr" / "lib" / "x86_64-linux-gnu", version=91400, cudart=13000, sublibraries=CUDNN9)
    (root / "etc" / "ld.so.conf").write_text("/usr/lib/x86_64-linux-gnu\n")  # the system's cuDNN in the loader's cache
    ldconfig = shutil.which("ldconfig") or "/sbin/ldconfig"
    subprocess.run([ldconfig, "-r", str(root), "-C", "/etc/ld.so.cache", "-f", "/etc/ld.so.conf"], check=False,
                   capture_output=True)

    version = f"python{sys.version_info[0]}.{sys.version_info[1]}"
    site = folder / "venv" / "lib" / version / "site-packages"
    site.mkdir(parents=True)
    jax = _real("real_jax_cpu")
    if jax is not None:  # the real JAX, jaxlib, numpy and scipy, each entry linked in
        for entry in sorted(Path(jax).iterdir()):
            if entry.name not in ("bin", ".complete"):
                (site / entry.name).symlink_to(entry)
    plugin = site / "jax_cuda13_plugin-0.11.2.dist-info"
    plugin.mkdir()
    (plugin / "METADATA").write_text("Metadata-Version: 2.1\nName: jax-cuda13-plugin\nVersion: 0.11.2\n"
                                     "Requires-Dist: nvidia-cudnn-cu13<10.0,>=9.8\n")
    info = site / "torch-2.11.0+cu130.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: torch\nVersion: 2.11.0+cu130\n"
                                   "Requires-Dist: nvidia-cudnn-cu13==9.19.0.56; platform_system == \"Linux\"\n"
                                   "Requires-Dist: nvidia-nccl-cu13==2.32.3; platform_system == \"Linux\"\n")
    (site / "torch").mkdir()
    (site / "torch" / "version.py").write_text("__version__ = '2.11.0+cu130'\ncuda: Optional[str] = '13.0'\n")
    (site / "torch" / "__init__.py").write_text("")
    nvidia = site / "nvidia"
    nvidia.mkdir()
    cudnn = _real("real_cudnn_919")
    if cudnn is not None:
        (nvidia / "cudnn").symlink_to(cudnn)
    else:
        fake_cudnn(nvidia / "cudnn" / "lib", version=91900, cudart=13000, sublibraries=CUDNN9, versioned_files=False)
    (site / "nvidia_cudnn_cu13-9.19.0.56.dist-info").mkdir()
    nccl = _real("real_nccl")
    if nccl is not None:
        (nvidia / "nccl" / "lib").mkdir(parents=True)
        (nvidia / "nccl" / "lib" / "libnccl.so.2").symlink_to(nccl)
        (site / "nvidia_nccl_cu13-2.32.3.dist-info").mkdir()
    fake_framework_library(site / "torch" / "lib" / "libtorch_cuda.so", nvidia / "cudnn" / "lib",
                           "$ORIGIN/../../nvidia/cudnn/lib")
    python = folder / "venv" / "bin" / "python3"
    python.parent.mkdir()
    python.write_text(f"#!/bin/sh\nPYTHONPATH={site}${{PYTHONPATH:+:$PYTHONPATH}} exec {sys.executable} \"$@\"\n")
    python.chmod(0o755)
    (python.parent / "python").symlink_to("python3")
    return {"PATH": f"{python.parent}:/usr/bin:/bin:/usr/sbin:/sbin", "HOME": str(home),
            "CUDNN_DOCTOR_SYSTEM_PREFIX": str(root), "CUDNN_DOCTOR_CACHE_DIR": str(folder / "cache"),
            "LANG": "C.UTF-8", "LD_LIBRARY_PATH": str(folder / "driver"), "VIRTUAL_ENV": str(folder / "venv")}


if __name__ == "__main__":
    import json
    import tempfile

    print(json.dumps(build(Path(tempfile.mkdtemp(prefix="gpu-like-"))), indent=1))
    os._exit(0)
