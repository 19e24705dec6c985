"""Issue 45's sealed GPU scenarios: classes the built-in suite of benchmarks/gpu_scenarios.py lacks.

SEALED: not to be read by whoever builds the code for issue 45. Run it with the harness:

    python3 benchmarks/gpu_scenarios.py --scenarios .sealed/scenarios45/scenarios.py --out "$OUT/s45" --quiet-cases

Every scenario finds its files on the machine at run time (torch's nvidia/cudnn/lib, the system cuDNN from
`ldconfig -p`, the CUDA toolkit under /usr/local, libz from the loader's cache) and makes its own copies, links
and files under /tmp/cudnn-doctor-scenarios/<name>; no installed file is ever written. A scenario whose source
is missing on the machine is left out (the count printed is then lower).

`causes` are finding codes of cudnn_doctor/codes.py as it was when these were written (CD1xx-CD4xx) that a right
answer would name if the setup fails. Where no code fits, `causes` is empty and `cause_class` says the class in
words (`# cause-class:` comments say the same), so that a later helper can map new codes onto it. `predicted` is
the author's honest guess before any run; the judges decide.
"""

from __future__ import annotations

import glob
import os
import re
import shutil
import struct
import subprocess
from pathlib import Path

from gpu_scenarios import Scenario, scratch

LFS_POINTER = ("version https://git-lfs.github.com/spec/v1\n"
               "oid sha256:4d7a214614ab2935c943f9e0ff69d22eadbb8f32b1258daaa5e2ca24d17e2393\n"
               "size 218734592\n")


def _ldconfig() -> dict[str, str]:
    """soname -> path of the loader's cache (x86-64 entries, first wins)."""
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


def _elf32_header() -> bytes:
    """A 32-bit (ELFCLASS32, i386) shared-object header, padded: ld.so skips it as a file of another class."""
    ident = b"\x7fELF" + bytes([1, 1, 1, 0]) + bytes(8)
    rest = struct.pack("<HHIIIIIHHHHHH", 3, 3, 1, 0, 52, 0, 0, 52, 32, 0, 40, 0, 0)
    return (ident + rest).ljust(4096, b"\0")


def _copy(source: str, target: Path) -> None:
    shutil.copyfile(os.path.realpath(source), target)


def _truncated_copy(source: str, target: Path) -> None:
    """The first half of SOURCE written to TARGET (SOURCE is only read)."""
    size = os.path.getsize(source)
    with open(source, "rb") as reader, open(target, "wb") as writer:
        left = size // 2
        while left > 0:
            chunk = reader.read(min(left, 1 << 24))
            if not chunk:
                break
            writer.write(chunk)
            left -= len(chunk)


def _script(path: Path, text: str) -> None:
    path.write_text("#!/bin/sh\n" + text)
    path.chmod(0o755)


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", text))


def build_scenarios(machine: dict[str, object]) -> list[Scenario]:
    pip_cudnn = str(machine.get("pip_cudnn") or "")
    site = str(machine.get("site") or "")
    cache = _ldconfig()
    pip_libs = sorted(glob.glob(os.path.join(pip_cudnn, "libcudnn*.so.9"))) if pip_cudnn else []
    pip_names = [os.path.basename(p) for p in pip_libs]
    system_main = cache.get("libcudnn.so.9") or str(machine.get("system_cudnn") or "")
    system_dir = os.path.dirname(system_main) if system_main else ""
    system_libs = {name: os.path.join(system_dir, name) for name in pip_names
                   if system_dir and os.path.exists(os.path.join(system_dir, name))}
    toolkits = sorted(p for p in glob.glob("/usr/local/cuda-*") if os.path.isdir(os.path.join(p, "lib64")))
    toolkit_lib = next((os.path.join(t, "lib64") for t in reversed(toolkits)
                        if glob.glob(os.path.join(t, "lib64", "libcudart.so.*"))), "")
    gpu_count = len(machine.get("gpus") or [])  # type: ignore[arg-type]
    path_now = os.environ.get("PATH", "/usr/bin:/bin")
    scenarios: list[Scenario] = []

    def add(scenario: Scenario) -> None:
        scenarios.append(scenario)

    # ---------------------------------------------------------------- the loader and the frameworks, observed
    if pip_names:
        d = scratch("s45-lfs-graph")
        (d / "libcudnn_graph.so.9").write_text(LFS_POINTER)
        add(Scenario("s45-lfs-graph", "a Git LFS pointer (text) checked out as libcudnn_graph.so.9, alone in a "
                     "folder first on LD_LIBRARY_PATH", ("CD308", "CD307", "CD304"),
                     env={"LD_LIBRARY_PATH": str(d)}, predicted="fails"))

        d = scratch("s45-dir-engines")
        (d / "libcudnn_engines_precompiled.so.9").mkdir()
        (d / "libcudnn_engines_precompiled.so.9" / "README").write_text("unpacked here by mistake\n")
        add(Scenario("s45-dir-engines", "a directory named libcudnn_engines_precompiled.so.9 in a folder first on "
                     "LD_LIBRARY_PATH (ld.so: cannot read file data: Is a directory)", ("CD308", "CD307", "CD304"),
                     env={"LD_LIBRARY_PATH": str(d)}, predicted="fails"))

        d = scratch("s45-elf32")
        for name in ("libcudnn.so.9", "libcudnn_graph.so.9", "libcudnn_engines_precompiled.so.9"):
            (d / name).write_bytes(_elf32_header())
        add(Scenario("s45-elf32", "32-bit (ELFCLASS32) files named like cuDNN libraries first on LD_LIBRARY_PATH: "
                     "ld.so skips a file of another class and searches on", ("CD308", "CD307"),
                     env={"LD_LIBRARY_PATH": str(d)}, predicted="works"))

        d = scratch("s45-dir-main")
        (d / "libcudnn.so.9").mkdir()
        add(Scenario("s45-dir-main", "a directory named libcudnn.so.9 first on LD_LIBRARY_PATH (frameworks that load "
                     "their cuDNN by full path never ask the loader by name)", ("CD308", "CD307"),
                     env={"LD_LIBRARY_PATH": str(d)}, predicted="works"))

        chain = scratch("s45-link-chain")
        middle = chain / "middle"
        front = chain / "front"
        middle.mkdir()
        front.mkdir()
        for path, name in zip(pip_libs, pip_names, strict=True):
            os.symlink(path, middle / name)
            os.symlink(os.path.join("..", "middle", name), front / name)
        os.symlink("front", chain / "lib")
        add(Scenario("s45-link-chain", "a folder reached through a symlink, whose cuDNN files are relative links to "
                     "links to torch's own files, first on LD_LIBRARY_PATH", ("CD307", "CD305"),
                     env={"LD_LIBRARY_PATH": str(chain / "lib")}, predicted="works"))

    if pip_names and "libcudnn_graph.so.9" in pip_names:
        d = scratch("s45-cure-keeps-cause")
        for path, name in zip(pip_libs, pip_names, strict=True):
            if name != "libcudnn_graph.so.9":
                _copy(path, d / name)
        ld_path = f"{d}:{system_dir}" if system_dir else str(d)
        add(Scenario("s45-cure-keeps-cause", "a copy of torch's cuDNN without libcudnn_graph.so.9 first on "
                     "LD_LIBRARY_PATH, the system's folder named after it (its 9.14 graph answers)",
                     ("CD304", "CD305", "CD401", "CD408"), env={"LD_LIBRARY_PATH": ld_path}, predicted="fails"))

    if system_libs.get("libcudnn_graph.so.9"):
        add(Scenario("s45-preload-graph", "LD_PRELOAD of the system's libcudnn_graph.so.9 (9.14) alone, torch's "
                     "9.19 libcudnn.so.9 beside it", ("CD317", "CD305", "CD401", "CD408"),
                     env={"LD_PRELOAD": os.path.realpath(system_libs["libcudnn_graph.so.9"])}, predicted="fails"))

    if pip_names and len(system_libs) >= 3:
        d = scratch("s45-main-new-subs-old")
        for path, name in zip(pip_libs, pip_names, strict=True):
            if name == "libcudnn.so.9":
                _copy(path, d / name)
            elif name in system_libs:
                os.symlink(os.path.realpath(system_libs[name]), d / name)
            else:
                os.symlink(path, d / name)
        add(Scenario("s45-main-new-subs-old", "torch's libcudnn.so.9 (9.19) copied into a folder whose sub-libraries "
                     "are links to the system's 9.14 ones, first on LD_LIBRARY_PATH", ("CD305", "CD401", "CD408"),
                     env={"LD_LIBRARY_PATH": str(d)}, predicted="fails"))

    if system_libs:
        work = scratch("s45-relative-entry")
        lib = work / "cudnn" / "lib"
        lib.mkdir(parents=True)
        for name, path in system_libs.items():
            os.symlink(os.path.realpath(path), lib / name)
        add(Scenario("s45-relative-entry", "LD_LIBRARY_PATH=cudnn/lib (a relative folder), started in a project that "
                     "unpacked the 9.14 cuDNN there", ("CD305", "CD401", "CD408", "CD317"),
                     env={"LD_LIBRARY_PATH": "cudnn/lib"}, cwd=str(work), predicted="fails"))

    if pip_names and "libcudnn_graph.so.9" in pip_names:
        work = scratch("s45-empty-entry")
        _truncated_copy(os.path.join(pip_cudnn, "libcudnn_graph.so.9"), work / "libcudnn_graph.so.9")
        tail = toolkit_lib or "/usr/local/cuda/lib64"
        add(Scenario("s45-empty-entry", "LD_LIBRARY_PATH=\":" + tail + "\" (an empty first entry: the working "
                     "folder), started in a folder holding a half-downloaded libcudnn_graph.so.9", ("CD308",),
                     env={"LD_LIBRARY_PATH": ":" + tail}, cwd=str(work), predicted="fails"))

    if site and os.path.isdir(os.path.join(site, "nvidia", "cudnn", "lib")):
        add(Scenario("s45-relative-pip", "LD_LIBRARY_PATH=nvidia/cudnn/lib, relative, started in site-packages (the "
                     "same files torch loads anyway)", ("CD307", "CD305"),
                     env={"LD_LIBRARY_PATH": "nvidia/cudnn/lib"}, cwd=site, predicted="works"))

    if system_libs:
        env_dir = scratch("s45-conda-env")
        (env_dir / "lib").mkdir()
        (env_dir / "conda-meta").mkdir()
        (env_dir / "conda-meta" / "history").write_text("==> 2026-10-01 09:00:00 <==\n# cmd: conda install cudnn=9.14\n")
        for name, path in system_libs.items():
            os.symlink(os.path.realpath(path), env_dir / "lib" / name)
        add(Scenario("s45-conda-env", "a conda environment active (CONDA_PREFIX) with a cuDNN 9.14 in its lib/, not "
                     "on LD_LIBRARY_PATH; the pip torch and JAX are run", ("CD305", "CD401", "CD408"),
                     env={"CONDA_PREFIX": str(env_dir), "CONDA_DEFAULT_ENV": "s45", "CONDA_SHLVL": "1"},
                     predicted="works"))

    # ---------------------------------------------------------------- what a program gets beyond cuDNN
    libz = cache.get("libz.so.1")
    if libz:
        d = scratch("s45-foreign-nvml")
        _copy(libz, d / "libnvidia-ml.so.1")
        # cause-class: a foreign or stub NVML (libnvidia-ml.so.1) that programs load through the loader's path
        add(Scenario("s45-foreign-nvml", "an unrelated library saved as libnvidia-ml.so.1 first on LD_LIBRARY_PATH, "
                     "with PYTORCH_NVML_BASED_CUDA_CHECK=1", ("CD104", "CD118"),
                     env={"LD_LIBRARY_PATH": str(d), "PYTORCH_NVML_BASED_CUDA_CHECK": "1"}, predicted="fails",
                     cause_class="a foreign or stub NVML (libnvidia-ml.so.1) that programs load through the "
                                 "loader's path"))

    nvml_stub = next(iter(sorted(glob.glob("/usr/local/cuda*/targets/*/lib/stubs/libnvidia-ml.so")
                                 + glob.glob("/usr/local/cuda*/lib64/stubs/libnvidia-ml.so"))), None)
    if nvml_stub:
        # cause-class: a stub NVML preloaded into every program
        add(Scenario("s45-stub-nvml-preload", "the toolkit's stubs/libnvidia-ml.so in LD_PRELOAD", ("CD104", "CD118"),
                     env={"LD_PRELOAD": os.path.realpath(nvml_stub)}, predicted="fails",
                     cause_class="a stub NVML (libnvidia-ml.so.1) preloaded into every program"))

    compat = sorted(p for p in glob.glob("/usr/local/cuda*/compat/libcuda.so.*")
                    if re.search(r"libcuda\.so\.\d+\.\d+", p) and not os.path.islink(p))
    kernel = re.search(r"Kernel Module\s+(?:for \S+\s+)?(\d+\.\d+(?:\.\d+)?)", str(machine.get("kernel_driver") or ""))
    if compat and kernel:
        compat_version = re.search(r"libcuda\.so\.(\d+\.\d+(?:\.\d+)?)", compat[-1])
        if compat_version and compat_version.group(1) != kernel.group(1):
            older = _version(compat_version.group(1)) < _version(kernel.group(1))
            add(Scenario("s45-compat-same-branch", "LD_LIBRARY_PATH=<toolkit>/compat (as CUDA containers set it): a "
                         f"forward-compatibility libcuda {compat_version.group(1)} under kernel module "
                         f"{kernel.group(1)}", ("CD112",), env={"LD_LIBRARY_PATH": os.path.dirname(compat[-1])},
                         predicted="fails" if older else "works"))

    if toolkit_lib:
        # cause-class (if it fails): cuBLAS/cudart of another release than the framework's first on the path
        add(Scenario("s45-toolkit-lib64-first", "LD_LIBRARY_PATH=<toolkit>/lib64 (its cudart, cuBLAS, NVRTC of the "
                     "toolkit's release ahead of the pip wheels')", ("CD203", "CD410"),
                     env={"LD_LIBRARY_PATH": toolkit_lib}, predicted="works",
                     cause_class="a CUDA library other than cuDNN (cudart, cuBLAS, NVRTC) of another release first "
                                 "on the loader's path"))

    # cause-class: CUDA's own JIT settings leave a kernel with no image the GPU can load
    add(Scenario("s45-jit-force-and-disable", "CUDA_FORCE_PTX_JIT=1 and CUDA_DISABLE_PTX_JIT=1 both set (copied from "
                 "two debugging guides)", ("CD416",), env={"CUDA_FORCE_PTX_JIT": "1", "CUDA_DISABLE_PTX_JIT": "1"},
                 predicted="fails", cause_class="CUDA's own JIT settings leave kernels with no image the GPU can "
                                                "load (PTX JIT forced and disabled)"))
    # cause-class: CUDA's own setting that disables the driver's PTX JIT
    add(Scenario("s45-disable-ptx-jit", "CUDA_DISABLE_PTX_JIT=1 alone (every kernel needs its own SASS)", ("CD416",),
                 env={"CUDA_DISABLE_PTX_JIT": "1"}, predicted="works",
                 cause_class="CUDA's own JIT setting (CUDA_DISABLE_PTX_JIT) where a kernel has only PTX"))
    # cause-class: CUDA's JIT cache settings
    add(Scenario("s45-cache-settings", "CUDA_CACHE_DISABLE=1, CUDA_CACHE_MAXSIZE=0 and CUDA_CACHE_PATH in /proc",
                 (), env={"CUDA_CACHE_DISABLE": "1", "CUDA_CACHE_MAXSIZE": "0",
                          "CUDA_CACHE_PATH": "/proc/cudnn-doctor-no-cache"}, predicted="works",
                 cause_class="CUDA's JIT cache settings (CUDA_CACHE_*)"))
    # cause-class: a CUDA variable with a value outside its grammar, which CUDA ignores
    add(Scenario("s45-module-loading-bad", "CUDA_MODULE_LOADING=DEFERRED (not one of LAZY, EAGER)", (),
                 env={"CUDA_MODULE_LOADING": "DEFERRED"}, predicted="works",
                 cause_class="a CUDA environment variable with a value outside its grammar"))

    dump = scratch("s45-xla-valid") / "dump"
    add(Scenario("s45-xla-valid", "XLA_FLAGS with valid flags (autotune level 0, a dump folder)", ("CD411",),
                 env={"XLA_FLAGS": f"--xla_gpu_autotune_level=0 --xla_dump_to={dump}"}, predicted="works"))
    add(Scenario("s45-xla-bad-value", "XLA_FLAGS=--xla_gpu_autotune_level=high (a known flag, a value it cannot "
                 "parse)", ("CD411",), env={"XLA_FLAGS": "--xla_gpu_autotune_level=high"}, predicted="fails"))
    add(Scenario("s45-jax-visible-out-of-range", "JAX_CUDA_VISIBLE_DEVICES names a GPU index one past the last",
                 ("CD411", "CD412"), env={"JAX_CUDA_VISIBLE_DEVICES": str(max(gpu_count, 1))}, predicted="fails"))
    add(Scenario("s45-cvd-all", "CUDA_VISIBLE_DEVICES=all (the NVIDIA_VISIBLE_DEVICES grammar)", ("CD113",),
                 env={"CUDA_VISIBLE_DEVICES": "all"}, predicted="fails"))
    add(Scenario("s45-nvidia-visible-none", "NVIDIA_VISIBLE_DEVICES=none and NVIDIA_DRIVER_CAPABILITIES=utility "
                 "outside any container", ("CD113", "CD108"),
                 env={"NVIDIA_VISIBLE_DEVICES": "none", "NVIDIA_DRIVER_CAPABILITIES": "utility"}, predicted="works"))
    # cause-class: variables of other frameworks and libraries (TensorFlow, NCCL, cuBLAS) that torch/JAX ignore here
    add(Scenario("s45-other-frameworks-vars", "TensorFlow, NCCL and cuBLAS settings left in a .bashrc: "
                 "TF_FORCE_GPU_ALLOW_GROWTH=maybe, TF_GPU_ALLOCATOR=cuda_malloc_async, NCCL_P2P_DISABLE=1, "
                 "NCCL_SOCKET_IFNAME=nonexistent0, CUBLAS_WORKSPACE_CONFIG=:banana, CUDA_DEVICE_MAX_CONNECTIONS=1", (),
                 env={"TF_FORCE_GPU_ALLOW_GROWTH": "maybe", "TF_GPU_ALLOCATOR": "cuda_malloc_async",
                      "TF_CPP_MIN_LOG_LEVEL": "3", "NCCL_DEBUG": "INFO", "NCCL_P2P_DISABLE": "1",
                      "NCCL_SOCKET_IFNAME": "nonexistent0", "CUBLAS_WORKSPACE_CONFIG": ":banana",
                      "CUDA_DEVICE_MAX_CONNECTIONS": "1"}, predicted="works",
                 cause_class="variables of other frameworks and libraries (TensorFlow, NCCL, cuBLAS) that torch and "
                             "JAX ignore or tolerate here"))
    add(Scenario("s45-torch-cudnn-vars", "TORCH_CUDNN_V8_API_DISABLED=1 and TORCH_CUDNN_V8_API_LRU_CACHE_LIMIT=lots",
                 ("CD411",), env={"TORCH_CUDNN_V8_API_DISABLED": "1", "TORCH_CUDNN_V8_API_LRU_CACHE_LIMIT": "lots"},
                 predicted="works"))
    # cause-class: build-time variables (torch extensions, cuDNN build scripts) set at run time
    add(Scenario("s45-build-vars", "build-time variables at run time: TORCH_CUDA_ARCH_LIST=5.2, CUDNN_PATH, "
                 "CUDNN_LIB_DIR and CUDNN_INCLUDE_DIR pointing nowhere", (),
                 env={"TORCH_CUDA_ARCH_LIST": "5.2", "CUDNN_PATH": "/opt/cudnn-nowhere",
                      "CUDNN_LIB_DIR": "/opt/cudnn-nowhere/lib", "CUDNN_INCLUDE_DIR": "/opt/cudnn-nowhere/include",
                      "MAX_JOBS": "2"}, predicted="works",
                 cause_class="build-time variables (torch extensions, cuDNN build scripts) that programs do not read"))

    root = scratch("s45-newer-toolkit")
    kit = root / "cuda-13.2"
    (kit / "bin").mkdir(parents=True)
    (kit / "lib64").mkdir()
    (kit / "version.json").write_text('{"cuda": {"name": "CUDA SDK", "version": "13.2.51"}}\n')
    _script(kit / "bin" / "nvcc", 'echo "nvcc: NVIDIA (R) Cuda compiler driver"\n'
                                  'echo "Cuda compilation tools, release 13.2, V13.2.51"\n')
    os.symlink("cuda-13.2", root / "cuda")
    # cause-class (if it fails): CUDA_HOME/CUDA_PATH/PATH naming a toolkit other than the one programs use
    add(Scenario("s45-newer-toolkit", "CUDA_HOME, CUDA_PATH and PATH point at a CUDA 13.2 toolkit (newer than the "
                 "driver's 13.0) through a 'cuda' symlink; it has no libraries", ("CD103", "CD204"),
                 env={"CUDA_HOME": str(root / "cuda"), "CUDA_PATH": str(root / "cuda"),
                      "PATH": f"{root / 'cuda' / 'bin'}:{path_now}"}, predicted="works",
                 cause_class="CUDA_HOME/CUDA_PATH/PATH naming a toolkit other than the libraries programs load"))

    tools = scratch("s45-foreign-ptxas")
    _script(tools / "ptxas", 'case "$*" in *--version*) echo "Cuda compilation tools, release 11.8, V11.8.89";;\n'
                             '*) echo "ptxas fatal   : Unsupported .version 9.0; current version is \'7.8\'" >&2; '
                             'exit 255;; esac\n')
    add(Scenario("s45-foreign-ptxas", "an old ptxas (CUDA 11.8) first on PATH", ("CD207", "CD206", "CD208"),
                 env={"PATH": f"{tools}:{path_now}"}, predicted="works"))

    # cause-class: unwritable temporary, home and cache folders
    add(Scenario("s45-unwritable-dirs", "TMPDIR missing, HOME unwritable, XDG_CACHE_HOME under /dev/null", (),
                 env={"TMPDIR": "/nonexistent/tmp", "HOME": "/proc/self", "XDG_CACHE_HOME": "/dev/null/cache"},
                 predicted="works", cause_class="unwritable or missing temporary, home and cache folders"))

    # ---------------------------------------------------------------- thresholds
    add(Scenario("s45-nofile-72", "ulimit -n 72", ("CD116",), shell="ulimit -S -n 72", predicted="fails"))
    add(Scenario("s45-nofile-100", "ulimit -n 100", ("CD116",), shell="ulimit -S -n 100", predicted="works"))
    add(Scenario("s45-stack-64k", "ulimit -s 64 (64 KiB stacks: threads get it as their default size too)",
                 ("CD116",), shell="ulimit -S -s 64", predicted="fails"))
    return scenarios
