"""Round 6's sealed GPU scenarios for issue 45: classes neither the built-in suite nor round 5's set has.

SEALED: not to be read by whoever builds the code for issue 45. Run it with the harness:

    python3 benchmarks/gpu_scenarios.py --scenarios .sealed/round6/scenarios45/scenarios.py --out "$OUT/s6" --quiet-cases

Every scenario finds its sources on the machine at build time (torch's pip CUDA libraries under site-packages/nvidia,
the loader's cache for libcuda, NVML and libz, the system cuDNN, the CUDA toolkit under /usr/local) and makes its own
copies, links and files under /tmp/cudnn-doctor-scenarios/s6-*; no installed file is written. A scenario whose source
is missing is left out.

`causes` are finding codes of cudnn_doctor/codes.py (as of round 6) that a right answer would name if the setup fails.
Where no code fits, `causes` is empty and `cause_class` says the class in words; where a code fits only partly, both
are given. `predicted` is the author's honest guess before any run; the judges (real torch and JAX) decide.
"""

from __future__ import annotations

import glob
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from gpu_scenarios import Scenario, scratch


def _ldconfig() -> dict[str, str]:
    """soname -> path, from the loader's cache (x86-64 entries; the first one listed wins)."""
    try:
        text = subprocess.run(["/sbin/ldconfig", "-p"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired):
        return {}
    found: dict[str, str] = {}
    for line in text.splitlines():
        match = re.match(r"\s*(\S+) \(([^)]*)\) => (\S+)", line)
        if match and "x86-64" in match.group(2):
            found.setdefault(match.group(1), match.group(3))
    return found


def _pip_lib(site: str, stem: str) -> str:
    """The soname file (e.g. libcublasLt.so.13) of STEM among the pip NVIDIA packages of SITE, or ''."""
    if not site:
        return ""
    for path in sorted(glob.glob(os.path.join(site, "nvidia", "*", "lib", stem + ".so.*"))):
        if re.fullmatch(re.escape(stem) + r"\.so\.\d+", os.path.basename(path)) and os.path.exists(path):
            return path
    return ""


def _toolkit_lib(name: str) -> str:
    """NAME (a soname) in a CUDA toolkit under /usr/local, or ''."""
    for pattern in ("/usr/local/cuda*/lib64/", "/usr/local/cuda*/targets/x86_64-linux/lib/"):
        for path in sorted(glob.glob(pattern + name), reverse=True):
            if os.path.exists(path):
                return path
    return ""


def _head_copy(source: str, target: Path, size: int) -> None:
    """The first SIZE bytes of SOURCE written to TARGET (SOURCE is only read)."""
    with open(source, "rb") as reader, open(target, "wb") as writer:
        writer.write(reader.read(size))


def _loop(folder: Path, name: str) -> None:
    """NAME in FOLDER as a symlink loop: NAME -> NAME.loop -> NAME."""
    os.symlink(name + ".loop", folder / name)
    os.symlink(name, folder / (name + ".loop"))


def _in_venv() -> bool:
    """The harness's python runs in a virtual environment without the user site (the judges run the same python)."""
    if sys.prefix == getattr(sys, "base_prefix", sys.prefix):
        return False
    config = Path(sys.prefix) / "pyvenv.cfg"
    try:
        return "include-system-site-packages = true" not in config.read_text().lower()
    except OSError:
        return True


def build_scenarios(machine: dict[str, object]) -> list[Scenario]:
    site = str(machine.get("site") or "")
    pip_cudnn = str(machine.get("pip_cudnn") or "")
    cache = _ldconfig()
    pip_cudnn_libs = sorted(glob.glob(os.path.join(pip_cudnn, "libcudnn*.so.9"))) if pip_cudnn else []
    system_main = cache.get("libcudnn.so.9") or str(machine.get("system_cudnn") or "")
    system_dir = os.path.dirname(system_main) if system_main else ""
    gpus = list(machine.get("gpus") or [])  # type: ignore[call-overload]
    uuid = str(gpus[0][1]) if gpus and len(gpus[0]) > 1 else ""
    libcuda = cache.get("libcuda.so.1", "")
    libz = cache.get("libz.so.1", "")
    scenarios: list[Scenario] = []
    add = scenarios.append

    # ------------------------------------------------------------ CUDA libraries other than cuDNN, on the path
    nvjitlink = _pip_lib(site, "libnvJitLink")
    if nvjitlink and libz:
        d = scratch("s6-nvjitlink-foreign-first")
        shutil.copyfile(os.path.realpath(libz), d / os.path.basename(nvjitlink))
        add(Scenario("s6-nvjitlink-foreign-first", f"an unrelated library saved as {os.path.basename(nvjitlink)} "
                     "(what cuSPARSE needs) in a folder first on LD_LIBRARY_PATH", ("CD203", "CD409"),
                     env={"LD_LIBRARY_PATH": str(d)}, predicted="fails",
                     cause_class="a CUDA library other than cuDNN (nvJitLink, needed by cuSPARSE) replaced by a "
                                 "foreign file first on the loader's path"))

    cublaslt = _pip_lib(site, "libcublasLt")
    if cublaslt:
        d = scratch("s6-cublaslt-truncated-first")
        _head_copy(cublaslt, d / os.path.basename(cublaslt), 8 << 20)
        add(Scenario("s6-cublaslt-truncated-first", f"an interrupted copy (8 MiB) of {os.path.basename(cublaslt)} "
                     "in a folder first on LD_LIBRARY_PATH", ("CD203", "CD409"),
                     env={"LD_LIBRARY_PATH": str(d)}, predicted="fails",
                     cause_class="a truncated CUDA math library (cuBLASLt) first on the loader's path"))

    cupti, nccl = _pip_lib(site, "libcupti"), _pip_lib(site, "libnccl")
    if cupti or nccl:
        d = scratch("s6-cupti-nccl-empty-first")
        for source in (cupti, nccl):
            if source:
                (d / os.path.basename(source)).write_bytes(b"")
        add(Scenario("s6-cupti-nccl-empty-first", "zero-length libcupti and libnccl files (a sync that stopped) in a "
                     "folder first on LD_LIBRARY_PATH", ("CD203", "CD409", "CD180"),
                     env={"LD_LIBRARY_PATH": str(d)}, predicted="works",
                     cause_class="zero-length CUDA profiling (CUPTI) and NCCL libraries first on the loader's path"))

    cudart = _pip_lib(site, "libcudart")
    d = scratch("s6-cudart-preload-empty")
    (d / (os.path.basename(cudart) if cudart else "libcudart.so.13")).write_bytes(b"")
    add(Scenario("s6-cudart-preload-empty", "LD_PRELOAD of a zero-length libcudart (ld.so: cannot be preloaded, "
                 "ignored)", ("CD203",), env={"LD_PRELOAD": str(next(d.iterdir()))}, predicted="works",
                 cause_class="a zero-length CUDA runtime in LD_PRELOAD"))

    nvrtc = _pip_lib(site, "libnvrtc")
    if nvrtc:
        d = scratch("s6-nvrtc-loop-first")
        _loop(d, os.path.basename(nvrtc))
        add(Scenario("s6-nvrtc-loop-first", f"{os.path.basename(nvrtc)} as a symlink loop in a folder first on "
                     "LD_LIBRARY_PATH", ("CD203", "CD409"), env={"LD_LIBRARY_PATH": str(d)}, predicted="works",
                     cause_class="a symlink loop named like a CUDA library (NVRTC) first on the loader's path"))

    toolkit_lt = _toolkit_lib("libcublasLt.so.13") or _toolkit_lib(os.path.basename(cublaslt) if cublaslt else "-")
    if cublaslt and toolkit_lt:
        same = os.path.getsize(os.path.realpath(toolkit_lt)) == os.path.getsize(os.path.realpath(cublaslt))
        add(Scenario("s6-preload-toolkit-cublaslt", "LD_PRELOAD of the CUDA toolkit's libcublasLt alone (the "
                     "framework's pip libcublas beside it)", ("CD410", "CD203", "CD409"),
                     env={"LD_PRELOAD": os.path.realpath(toolkit_lt)}, predicted="works" if same else "fails",
                     cause_class="a CUDA library (cuBLASLt) of another build preloaded beside the framework's "
                                 "cuBLAS"))

    # ------------------------------------------------------------ the CUDA driver and NVML a program loads
    if libcuda and os.path.exists(libcuda):
        d = scratch("s6-libcuda-empty-first")
        (d / "libcuda.so.1").write_bytes(b"")
        add(Scenario("s6-libcuda-empty-first", "a zero-length libcuda.so.1 in a folder first on LD_LIBRARY_PATH",
                     ("CD110", "CD113", "CD101"), env={"LD_LIBRARY_PATH": str(d)}, predicted="fails"))

        d = scratch("s6-libcuda-loop-first")
        _loop(d, "libcuda.so.1")
        add(Scenario("s6-libcuda-loop-first", "libcuda.so.1 as a symlink loop in a folder first on LD_LIBRARY_PATH",
                     ("CD110", "CD113", "CD101"), env={"LD_LIBRARY_PATH": str(d)}, predicted="fails"))

        if libz:
            d = scratch("s6-libcuda-foreign-first")
            shutil.copyfile(os.path.realpath(libz), d / "libcuda.so.1")
            add(Scenario("s6-libcuda-foreign-first", "an unrelated library saved as libcuda.so.1 in a folder first on "
                         "LD_LIBRARY_PATH", ("CD111", "CD110", "CD113", "CD112"), env={"LD_LIBRARY_PATH": str(d)},
                         predicted="fails"))

        real = os.path.realpath(libcuda)
        d = scratch("s6-libcuda-unreadable-copy")
        shutil.copyfile(real, d / os.path.basename(real))
        os.symlink(os.path.basename(real), d / "libcuda.so.1")
        (d / os.path.basename(real)).chmod(0)
        add(Scenario("s6-libcuda-unreadable-copy", "a copy of the driver's own libcuda with mode 000 in a folder "
                     "first on LD_LIBRARY_PATH", ("CD110", "CD112", "CD113"), env={"LD_LIBRARY_PATH": str(d)},
                     predicted="works"))

        d = scratch("s6-libcuda-misnamed-link")
        os.symlink(real, d / "libcuda.so.535.104.05")
        os.symlink("libcuda.so.535.104.05", d / "libcuda.so.1")
        add(Scenario("s6-libcuda-misnamed-link", "a folder first on LD_LIBRARY_PATH whose libcuda.so.1 points at "
                     "libcuda.so.535.104.05, itself a link to the driver's own libcuda (the name lies)",
                     ("CD112", "CD110"), env={"LD_LIBRARY_PATH": str(d)}, predicted="works"))

    d = scratch("s6-nvml-empty-first")
    (d / "libnvidia-ml.so.1").write_bytes(b"")
    add(Scenario("s6-nvml-empty-first", "a zero-length libnvidia-ml.so.1 in a folder first on LD_LIBRARY_PATH",
                 ("CD118", "CD104"), env={"LD_LIBRARY_PATH": str(d)}, predicted="works"))

    # ------------------------------------------------------------ LD_LIBRARY_PATH of odd shapes; cuDNN links
    if pip_cudnn_libs:
        add(Scenario("s6-ld-path-file-entry", "LD_LIBRARY_PATH names torch's libcudnn.so.9 file itself, then its "
                     "folder", ("CD313", "CD307"),
                     env={"LD_LIBRARY_PATH": f"{os.path.join(pip_cudnn, 'libcudnn.so.9')}:{pip_cudnn}"},
                     predicted="works"))
        if system_dir:
            add(Scenario("s6-ld-path-pip-then-system", "LD_LIBRARY_PATH holds torch's cuDNN folder, then the "
                         "system's cuDNN folder", ("CD302", "CD305", "CD317", "CD401", "CD408"),
                         env={"LD_LIBRARY_PATH": f"{pip_cudnn}/:{system_dir}/"}, predicted="works"))

        d = scratch("s6-cudnn-graph-loop-first")
        _loop(d, "libcudnn_graph.so.9")
        add(Scenario("s6-cudnn-graph-loop-first", "libcudnn_graph.so.9 as a symlink loop in a folder first on "
                     "LD_LIBRARY_PATH", ("CD307", "CD308", "CD304"), env={"LD_LIBRARY_PATH": str(d)},
                     predicted="fails"))

        d = scratch("s6-cudnn-main-loop-first")
        _loop(d, "libcudnn.so.9")
        add(Scenario("s6-cudnn-main-loop-first", "libcudnn.so.9 as a symlink loop in a folder first on "
                     "LD_LIBRARY_PATH", ("CD307", "CD308", "CD409"), env={"LD_LIBRARY_PATH": str(d)},
                     predicted="works"))

    long_path = ":".join(f"/opt/site/modules/pkg{i:04d}/lib64" for i in range(2500))
    add(Scenario("s6-ld-path-very-long", "LD_LIBRARY_PATH of 2500 folders that do not exist (about 80 kB, from "
                 "a module system)", ("CD313",), env={"LD_LIBRARY_PATH": long_path}, predicted="works",
                 cause_class="a very long LD_LIBRARY_PATH of missing folders"))

    # ------------------------------------------------------------ the GPUs a program sees
    if uuid.startswith("GPU-"):
        add(Scenario("s6-cvd-uuid-no-prefix", "CUDA_VISIBLE_DEVICES holds the GPU's UUID without its 'GPU-' prefix",
                     ("CD113",), env={"CUDA_VISIBLE_DEVICES": uuid[4:]}, predicted="fails"))
    add(Scenario("s6-cvd-torch-style", "CUDA_VISIBLE_DEVICES=cuda:0 (a torch device string)", ("CD113",),
                 env={"CUDA_VISIBLE_DEVICES": "cuda:0"}, predicted="fails"))
    add(Scenario("s6-cvd-leading-space", "CUDA_VISIBLE_DEVICES=' 0' (a space from an env file)", ("CD113",),
                 env={"CUDA_VISIBLE_DEVICES": " 0"}, predicted="works"))

    # ------------------------------------------------------------ the frameworks' settings
    add(Scenario("s6-alloc-gc-threshold", "PYTORCH_CUDA_ALLOC_CONF=garbage_collection_threshold:1.5 (outside 0..1)",
                 ("CD411",), env={"PYTORCH_CUDA_ALLOC_CONF": "garbage_collection_threshold:1.5"},
                 predicted="fails"))
    add(Scenario("s6-alloc-async", "PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync (valid)", ("CD411",),
                 env={"PYTORCH_CUDA_ALLOC_CONF": "backend:cudaMallocAsync"}, predicted="works"))
    add(Scenario("s6-jax-platforms-rocm", "JAX_PLATFORMS=rocm (copied from an AMD guide)", ("CD411", "CD412"),
                 env={"JAX_PLATFORMS": "rocm"}, predicted="fails"))
    add(Scenario("s6-jax-platforms-cpu-first", "JAX_PLATFORMS=cpu,cuda (the CPU listed first)", ("CD412", "CD411"),
                 env={"JAX_PLATFORMS": "cpu,cuda"}, predicted="fails"))
    add(Scenario("s6-jax-platforms-gpu", "JAX_PLATFORMS=gpu (the alias)", ("CD411", "CD412"),
                 env={"JAX_PLATFORMS": "gpu"}, predicted="works"))
    add(Scenario("s6-xla-removed-flag", "XLA_FLAGS=--xla_gpu_enable_xla_runtime_executable=true (a flag of older "
                 "XLA releases)", ("CD411",), env={"XLA_FLAGS": "--xla_gpu_enable_xla_runtime_executable=true"},
                 predicted="fails"))
    d = scratch("s6-xla-flagfile")
    (d / "xla.flags").write_text("--xla_gpu_autotune_level=2\n--xla_gpu_autotune_lvl=0\n")
    add(Scenario("s6-xla-flagfile", "XLA_FLAGS=--flagfile=FILE, the file naming a misspelt flag", ("CD411",),
                 env={"XLA_FLAGS": f"--flagfile={d / 'xla.flags'}"}, predicted="fails"))
    add(Scenario("s6-xla-cuda-data-dir-missing", "XLA_FLAGS=--xla_gpu_cuda_data_dir naming a CUDA folder that is "
                 "gone", ("CD411",), env={"XLA_FLAGS": "--xla_gpu_cuda_data_dir=/opt/cuda-11.8-removed"},
                 predicted="works", cause_class="XLA_FLAGS naming a CUDA data folder that does not exist"))

    # ------------------------------------------------------------ CUDA's own leftovers
    mps = scratch("s6-mps-leftovers")
    (mps / "pipe").mkdir()
    (mps / "log").mkdir()
    add(Scenario("s6-mps-leftovers", "MPS client settings left set with no MPS daemon running", (),
                 env={"CUDA_MPS_PIPE_DIRECTORY": str(mps / "pipe"), "CUDA_MPS_LOG_DIRECTORY": str(mps / "log"),
                      "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE": "50"}, predicted="works",
                 cause_class="CUDA MPS client settings with no MPS daemon"))

    # ------------------------------------------------------------ Python's import path
    if pip_cudnn_libs and system_dir and not _in_venv():
        version = f"{sys.version_info.major}.{sys.version_info.minor}"  # the judges run this same python
        system_libs = {os.path.basename(p): os.path.join(system_dir, os.path.basename(p)) for p in pip_cudnn_libs}
        system_libs = {n: p for n, p in system_libs.items() if os.path.exists(p)}
        if "libcudnn.so.9" in system_libs:
            for name, nousersite in (("s6-user-site-old-cudnn", False), ("s6-user-site-old-cudnn-off", True)):
                base = scratch(name)
                user_site = base / "lib" / f"python{version}" / "site-packages"
                lib = user_site / "nvidia" / "cudnn" / "lib"
                lib.mkdir(parents=True)
                for marker in ("nvidia/__init__.py", "nvidia/cudnn/__init__.py"):
                    if os.path.exists(os.path.join(site, marker)):
                        (user_site / marker).write_text("")
                for path in pip_cudnn_libs:
                    lib_name = os.path.basename(path)
                    os.symlink(os.path.realpath(system_libs.get(lib_name, path)), lib / lib_name)
                env = {"PYTHONUSERBASE": str(base)}
                if nousersite:
                    env["PYTHONNOUSERSITE"] = "1"
                add(Scenario(name, "a 'pip install --user' cuDNN of the system's release (nvidia/cudnn in the user "
                             "site, PYTHONUSERBASE)" + (", with PYTHONNOUSERSITE=1" if nousersite else ""),
                             ("CD401", "CD408", "CD305", "CD317"), env=env,
                             predicted="works" if nousersite else "fails",
                             cause_class="a user-site (pip --user) cuDNN package of another release that a framework "
                                         "loads by its import path"))

    pp = scratch("s6-pythonpath-jax-plugins")
    (pp / "jax_plugins").mkdir()
    (pp / "jax_plugins" / "__init__.py").write_text('"""Our own JAX plugins."""\n')
    add(Scenario("s6-pythonpath-jax-plugins", "PYTHONPATH holds a project with its own jax_plugins/__init__.py "
                 "(a regular package over JAX's namespace package)", ("CD409",), env={"PYTHONPATH": str(pp)},
                 predicted="fails",
                 cause_class="a folder on PYTHONPATH shadows the framework's GPU plugin namespace package"))

    work = scratch("s6-cwd-nvidia-package")
    (work / "nvidia").mkdir()
    (work / "nvidia" / "__init__.py").write_text('"""Helpers for our NVIDIA boxes."""\n')
    add(Scenario("s6-cwd-nvidia-package", "started in a project folder holding its own nvidia/__init__.py (the "
                 "working folder comes first on sys.path)", ("CD409",), cwd=str(work), predicted="works",
                 cause_class="a regular package named nvidia in the working folder over the namespace package of "
                             "NVIDIA's pip libraries"))

    work = scratch("s6-cwd-numpy-script")
    (work / "numpy.py").write_text("import numpy as np\nprint(np.arange(3))\n")
    add(Scenario("s6-cwd-numpy-script", "started in a folder holding the user's own numpy.py test script", (),
                 cwd=str(work), predicted="fails",
                 cause_class="a user's file in the working folder shadows a module the framework imports"))

    # ------------------------------------------------------------ limits, the loader, the environment
    root = os.geteuid() == 0
    add(Scenario("s6-nproc-64", "ulimit -u 64 (max user processes; threads count)", ("CD116",),
                 shell="ulimit -S -u 64", predicted="works" if root else "fails"))
    add(Scenario("s6-memlock-0", "ulimit -l 0 (no locked memory)", ("CD116",), shell="ulimit -S -l 0",
                 predicted="works"))
    add(Scenario("s6-ld-bind-now", "LD_BIND_NOW=1 (every symbol resolved at load)", ("CD307", "CD409"),
                 env={"LD_BIND_NOW": "1"}, predicted="works",
                 cause_class="loader settings (LD_BIND_NOW) that resolve every symbol at load"))
    big = {f"S6_MODULE_VAR_{i:04d}": "/opt/site/modules/" + "x" * 100 for i in range(1500)}
    add(Scenario("s6-huge-environment", "1500 extra variables (about 190 kB of environment)", (), env=big,
                 predicted="works", cause_class="a very large environment"))
    return scenarios
