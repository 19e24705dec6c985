"""Round 14's sealed GPU scenarios for issue 45: classes neither the built-in suite nor rounds 5-11 have.

SEALED: not to be read by whoever builds the code for issue 45. Run it with the harness, on the GPU machine:

    timeout 300 python3 benchmarks/gpu_scenarios.py --scenarios benchmarks/held_out/round14/scenarios45.py \
        --out "$OUT/s14" --quiet-cases --budget-s 230

Every scenario bends ONE shell's environment: variables, files it writes under /tmp/cudnn-doctor-scenarios/s14-*
(copies of real libraries found on the machine, renamed, patched or truncated; text files where a library should
be; start-up hooks; configuration files), the working folder, a soft limit, another process holding GPU memory.
Sources are found on the machine at build time: the judges' own Python (the harness's interpreter: its
site-packages, the `nvidia/*/lib` folders of the CUDA wheels, torch's own `lib` folder), the loader's cache (the
driver's libcuda and NVML, a small system library to stand in as a foreign ELF file), nvidia-smi (the GPU's memory).
A scenario whose source is missing is left out. No installed file is written, nothing outside /tmp, no network, no
GPU setting is touched.

`causes` are codes of cudnn_doctor/codes.py (names and one-line meanings only) that a right answer names if the setup
fails; where a scenario is predicted to work, `causes` holds the code a wrong answer would most likely raise. Where no
code fits, or fits only partly, `cause_class` says the class in words. `predicted` is the author's guess before any
run; the judges decide. Each scenario also carries `source` (an attribute the harness ignores).
"""

from __future__ import annotations

import glob
import os
import re
import shutil
import struct
import subprocess
import sys
import sysconfig
from pathlib import Path

from gpu_scenarios import Scenario, scratch

LFS_POINTER = ("version https://git-lfs.github.com/spec/v1\n"
               "oid sha256:4d7a214614ab2935c943f9e0ff69d22eadbb8f32b1258daaa5e2ca24d17e2393\n"
               "size 187302912\n")
EM_AARCH64 = 183

TORCH_INIT = ("https://github.com/pytorch/pytorch/blob/main/torch/__init__.py (_load_global_deps: libtorch_global_deps "
              "by full path, then _preload_cuda_deps loading every CUDA wheel library by full path from "
              "nvidia/<name>/lib or nvidia/cu<major>/lib, libcublasLt before libcublas, libnvJitLink before "
              "libcusparse)")
JAX_PLUGIN = ("https://github.com/jax-ml/jax/blob/main/jax_plugins/cuda/__init__.py (_load_nvidia_libraries: "
              "libcudart, libnvrtc, libcublas, libcupti, libcusparse, libcusolver, libcufft, libnvshmem_host and "
              "libcudnn by full path from the nvidia packages, libnvJitLink not among them; _check_cuda_versions "
              "raises on the first component it cannot load)")
GLIBC_DL_LOAD = ("https://sourceware.org/git/?p=glibc.git;a=blob;f=elf/dl-load.c (open_verify: a file whose header is "
                 "not ELF ends the search with 'invalid ELF header'; a file for another machine is skipped; "
                 "segments are mapped from the file as its headers say, so a cut file faults)")
CUDA_ENV = "https://docs.nvidia.com/cuda/cuda-c-programming-guide/index.html#cuda-environment-variables"
XLA_ENV = ("https://github.com/openxla/xla/blob/main/xla/parse_flags_from_env.cc (XLA_FLAGS split on white space, "
           "unknown flags fatal) and https://github.com/openxla/xla/blob/main/xla/tsl/util/command_line_flags.cc "
           "(a flag is '--name=value')")
JAX_CONFIG = "https://docs.jax.dev/en/latest/config_options.html"
SYS_PATH = ("https://docs.python.org/3/library/sys_path_init.html (python -c puts the working folder first on "
            "sys.path, ahead of the standard library)")
SITE = "https://docs.python.org/3/library/site.html (sitecustomize imported from sys.path, PYTHONPATH included)"
NCCL_ENV = ("https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html (NCCL_CONF_FILE, ~/.nccl.conf and "
            "/etc/nccl.conf read when NCCL initialises)")
TORCH_ENV = ("https://docs.pytorch.org/docs/stable/torch_environment_variables.html and "
             "https://docs.pytorch.org/docs/stable/cuda_environment_variables.html")
LD_SO = "https://man7.org/linux/man-pages/man8/ld.so.8.html (LD_PRELOAD, LD_LIBRARY_PATH before DT_RUNPATH)"
JAX_MEMORY = "https://docs.jax.dev/en/latest/gpu_memory_allocation.html"


# ------------------------------------------------------------------------------------------------ helpers
def _ldconfig() -> dict[str, str]:
    """soname -> path from the loader's cache (x86-64 entries; the first listed wins)."""
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


def _site_packages() -> list[str]:
    """The judges' site-packages folders (the harness's own interpreter is the judges')."""
    folders = [sysconfig.get_paths().get("purelib", ""), sysconfig.get_paths().get("platlib", "")]
    folders += glob.glob(os.path.join(sys.prefix, "lib", "python3*", "site-packages"))
    seen: list[str] = []
    for folder in folders:
        if folder and os.path.isdir(folder) and folder not in seen:
            seen.append(folder)
    return seen


def _wheel_lib(sites: list[str], stem: str) -> str:
    """The CUDA wheel's file named by its soname (stem.so.N), under nvidia/*/lib; '' if none."""
    for folder in sites:
        names = sorted(glob.glob(os.path.join(folder, "nvidia", "*", "lib", stem + ".so.[0-9]*")), key=len)
        for name in names:
            if re.fullmatch(re.escape(stem) + r"\.so\.\d+", os.path.basename(name)):
                return name
    return ""


def _torch_lib(sites: list[str], name: str) -> str:
    for folder in sites:
        path = os.path.join(folder, "torch", "lib", name)
        if os.path.isfile(path):
            return path
    return ""


def _other_machine_copy(source: str, target: Path) -> None:
    """A copy of SOURCE whose ELF header says AArch64 (what a shared home of ARM nodes holds)."""
    data = bytearray(Path(source).read_bytes())
    data[18:20] = struct.pack("<H", EM_AARCH64)
    target.write_bytes(bytes(data))


def _cut_copy(source: str, target: Path) -> None:
    """The first half of SOURCE (a copy interrupted by a full disk or a killed rsync)."""
    size = os.path.getsize(source)
    with open(source, "rb") as reading, open(target, "wb") as writing:
        left = size // 2
        while left > 0:
            chunk = reading.read(min(left, 8 << 20))
            if not chunk:
                break
            writing.write(chunk)
            left -= len(chunk)


def _gpu_gib(machine: dict[str, object]) -> float:
    """The first GPU's total memory in GiB (nvidia-smi's 'NNNN MiB'); 80 where nvidia-smi gave nothing."""
    gpus = machine.get("gpus") or []
    try:
        return float(str(gpus[0][3]).split()[0]) / 1024  # type: ignore[index]
    except (IndexError, ValueError, TypeError):
        return 80.0


# ------------------------------------------------------------------------------------------------ scenarios
def build_scenarios(machine: dict[str, object]) -> list[Scenario]:
    sites = _site_packages()
    cache = _ldconfig()
    foreign = os.path.realpath(cache["libz.so.1"]) if "libz.so.1" in cache else ""
    nvml = os.path.realpath(cache["libnvidia-ml.so.1"]) if "libnvidia-ml.so.1" in cache else ""
    libcuda = os.path.realpath(cache["libcuda.so.1"]) if "libcuda.so.1" in cache else ""
    scenarios: list[Scenario] = []

    def add(scenario: Scenario, source: str) -> None:
        scenario.source = source  # type: ignore[attr-defined]
        scenarios.append(scenario)

    def folder(name: str) -> Path:
        return scratch("s14-" + name)

    # 1. CUDA libraries other than cuDNN, broken first on LD_LIBRARY_PATH: a library both frameworks load by full path
    #    from their wheels (works), or one that only its neighbours ask for by name (nvJitLink, needed by cuSPARSE and
    #    not among JAX's preloads).
    for stem, name in (("libcufft", "s14-lfs-cufft"), ("libcusparse", "s14-lfs-cusparse")):
        real = _wheel_lib(sites, stem)
        if real:
            where = folder(name[4:])
            (where / os.path.basename(real)).write_text(LFS_POINTER)
            add(Scenario(name, f"a Git LFS pointer (text) checked out as {os.path.basename(real)} in a project's lib "
                         "folder first on LD_LIBRARY_PATH (both frameworks load their own copy by full path)",
                         ("CD203",), env={"LD_LIBRARY_PATH": str(where)}, predicted="works",
                         cause_class="a CUDA library other than cuDNN broken first on the path, which the frameworks "
                                     "never ask the loader for by name"),
                TORCH_INIT + "; " + JAX_PLUGIN + "; " + GLIBC_DL_LOAD)
    jitlink = _wheel_lib(sites, "libnvJitLink")
    if jitlink:
        soname = os.path.basename(jitlink)
        where = folder("lfs-nvjitlink")
        (where / soname).write_text(LFS_POINTER)
        add(Scenario("s14-lfs-nvjitlink", f"a Git LFS pointer (text) checked out as {soname} first on "
                     "LD_LIBRARY_PATH (cuSPARSE asks the loader for it by name; torch preloads it by full path, JAX "
                     "does not)", ("CD203", "CD409"), env={"LD_LIBRARY_PATH": str(where)}, predicted="fails",
                     cause_class="a CUDA library other than cuDNN broken first on the path, reached by name through "
                                 "another CUDA library's dependency"),
            TORCH_INIT + "; " + JAX_PLUGIN + "; " + GLIBC_DL_LOAD + "; https://github.com/pytorch/pytorch/issues/138460")
        where = folder("cut-nvjitlink")
        _cut_copy(jitlink, where / soname)
        add(Scenario("s14-cut-nvjitlink", f"the first half of {soname} (an interrupted copy) first on "
                     "LD_LIBRARY_PATH", ("CD203", "CD409"), env={"LD_LIBRARY_PATH": str(where)}, predicted="fails",
                     cause_class="a truncated CUDA library other than cuDNN first on the path (the loader faults "
                                 "mapping it)"),
            JAX_PLUGIN + "; " + GLIBC_DL_LOAD)
        if foreign:
            where = folder("arm-nvjitlink")
            _other_machine_copy(foreign, where / soname)
            add(Scenario("s14-arm-nvjitlink", f"an AArch64 file named {soname} first on LD_LIBRARY_PATH (a shared "
                         "home's lib folder built on ARM nodes; the loader skips a file for another machine)",
                         ("CD203", "CD409"), env={"LD_LIBRARY_PATH": str(where)}, predicted="works"),
                GLIBC_DL_LOAD)

    # 2. torch's own libraries (torch/lib) shadowed on LD_LIBRARY_PATH, which comes before their $ORIGIN RUNPATH.
    c10_cuda = _torch_lib(sites, "libc10_cuda.so")
    if c10_cuda:
        where = folder("torch-lfs-c10cuda")
        (where / "libc10_cuda.so").write_text(LFS_POINTER)
        add(Scenario("s14-torch-lfs-c10cuda", "a Git LFS pointer (text) checked out as libc10_cuda.so in a C++ "
                     "project's lib folder first on LD_LIBRARY_PATH (the project links against libtorch)",
                     ("CD409",), env={"LD_LIBRARY_PATH": str(where)}, predicted="fails"),
            GLIBC_DL_LOAD + "; " + LD_SO)
        where = folder("torch-arm-c10cuda")
        _other_machine_copy(c10_cuda, where / "libc10_cuda.so")
        add(Scenario("s14-torch-arm-c10cuda", "an AArch64 build of libc10_cuda.so (same name) first on "
                     "LD_LIBRARY_PATH, from a libtorch unpacked for ARM nodes in a shared home", ("CD409",),
                     env={"LD_LIBRARY_PATH": str(where)}, predicted="works"),
            GLIBC_DL_LOAD)
        where = folder("torch-copy-c10cuda")
        shutil.copy2(c10_cuda, where / "libc10_cuda.so")
        add(Scenario("s14-torch-copy-c10cuda", "an exact copy of this torch's own libc10_cuda.so alone in a folder "
                     "first on LD_LIBRARY_PATH (left by a C++ extension's build)", ("CD409", "CD419"),
                     env={"LD_LIBRARY_PATH": str(where)}, predicted="works"),
            LD_SO)
    libc10 = _torch_lib(sites, "libc10.so")
    if libc10:
        where = folder("torch-cut-c10")
        _cut_copy(libc10, where / "libc10.so")
        add(Scenario("s14-torch-cut-c10", "the first half of libc10.so (an interrupted copy of libtorch) first on "
                     "LD_LIBRARY_PATH", ("CD409",), env={"LD_LIBRARY_PATH": str(where)}, predicted="fails"),
            GLIBC_DL_LOAD)
    if _torch_lib(sites, "libshm.so") and foreign:
        where = folder("torch-foreign-shm")
        shutil.copy2(foreign, where / "libshm.so")
        add(Scenario("s14-torch-foreign-shm", "another project's libshm.so (an unrelated shared-memory library, "
                     "same file name as torch's own) first on LD_LIBRARY_PATH", ("CD409",),
                     env={"LD_LIBRARY_PATH": str(where)}, predicted="fails",
                     cause_class="a framework's own library shadowed by an unrelated ELF file of the same name "
                                 "(undefined symbols at import)"),
            LD_SO + "; " + GLIBC_DL_LOAD)

    # 3. CUDA driver variables with values no round tried (all documented or ignored).
    add(Scenario("s14-module-loading-lowercase", "CUDA_MODULE_LOADING=lazy (lower case)", ("CD416",),
                 env={"CUDA_MODULE_LOADING": "lazy"}, predicted="works"), CUDA_ENV)
    add(Scenario("s14-device-order-fastest", "CUDA_DEVICE_ORDER=FASTEST_FIRST and CUDA_AUTO_BOOST=0 from an old "
                 "tuning guide", ("CD416", "CD117"), env={"CUDA_DEVICE_ORDER": "FASTEST_FIRST", "CUDA_AUTO_BOOST": "0"},
                 predicted="works"), CUDA_ENV)
    add(Scenario("s14-device-order-typo", "CUDA_DEVICE_ORDER=PCI_BUS (not one of its two values)", ("CD416", "CD113"),
                 env={"CUDA_DEVICE_ORDER": "PCI_BUS"}, predicted="works",
                 cause_class="a CUDA environment variable with a value outside its grammar, ignored by the driver"),
        CUDA_ENV)
    add(Scenario("s14-cuda-exception-knobs", "CUDA_DEVICE_WAITS_ON_EXCEPTION=1, CUDA_DISABLE_PERF_BOOST=1 and "
                 "CUDA_GRAPHS_USE_NODE_PRIORITY=1 left from a debugging session", ("CD416",),
                 env={"CUDA_DEVICE_WAITS_ON_EXCEPTION": "1", "CUDA_DISABLE_PERF_BOOST": "1",
                      "CUDA_GRAPHS_USE_NODE_PRIORITY": "1"}, predicted="works"), CUDA_ENV)

    # 4. torch variables read at import or at the first CUDA/cuDNN call, none of them touched before.
    add(Scenario("s14-torch-cudnn-debug", "TORCH_CUDNN_V8_API_DEBUG=1 and TORCH_CUDNN_USE_HEURISTIC_MODE_B=1",
                 ("CD411",), env={"TORCH_CUDNN_V8_API_DEBUG": "1", "TORCH_CUDNN_USE_HEURISTIC_MODE_B": "1"},
                 predicted="works"), TORCH_ENV)
    add(Scenario("s14-torch-dsa-nccl", "TORCH_USE_CUDA_DSA=1 (on a build without device-side assertions) with "
                 "TORCH_NCCL_ASYNC_ERROR_HANDLING=3, TORCH_NCCL_BLOCKING_WAIT=1, TORCH_NCCL_DUMP_ON_TIMEOUT=1 in a "
                 "single-GPU shell", ("CD411", "CD176"),
                 env={"TORCH_USE_CUDA_DSA": "1", "TORCH_NCCL_ASYNC_ERROR_HANDLING": "3",
                      "TORCH_NCCL_BLOCKING_WAIT": "1", "TORCH_NCCL_DUMP_ON_TIMEOUT": "1"}, predicted="works"),
        TORCH_ENV)
    add(Scenario("s14-inductor-runtime", "TORCHINDUCTOR_MAX_AUTOTUNE=1, TORCHINDUCTOR_COMPILE_THREADS=1 and "
                 "TORCH_CUDA_ARCH_LIST=9.0a at run time (nothing is compiled)", ("CD411", "CD404"),
                 env={"TORCHINDUCTOR_MAX_AUTOTUNE": "1", "TORCHINDUCTOR_COMPILE_THREADS": "1",
                      "TORCH_CUDA_ARCH_LIST": "9.0a"}, predicted="works"),
        TORCH_ENV + "; https://github.com/pytorch/pytorch/blob/main/torch/_inductor/config.py")

    # 5. XLA_FLAGS as its tokenizer reads it, and XLA's logging variables.
    add(Scenario("s14-xla-single-dash", "XLA_FLAGS=-xla_gpu_autotune_level=0 (one dash, as absl's own flags allow)",
                 ("CD411",), env={"XLA_FLAGS": "-xla_gpu_autotune_level=0"}, predicted="fails"), XLA_ENV)
    add(Scenario("s14-xla-quoted", "XLA_FLAGS='\"--xla_gpu_autotune_level=0\"' (the quotes kept by a docker "
                 "--env-file; XLA reads a value that does not start with '-' as the name of a file of flags)",
                 ("CD411",), env={"XLA_FLAGS": '"--xla_gpu_autotune_level=0"'}, predicted="fails"),
        XLA_ENV + " (SetArgvFromEnv: a value not starting with '-' is opened as a file, fatal if it cannot be); "
        "https://docs.docker.com/reference/cli/docker/container/run/#env")
    where = folder("xla-flags-file")
    (where / "xla.flags").write_text("--xla_gpu_autotune_level=0\n--xla_dump_hlo_as_text\n")
    add(Scenario("s14-xla-flags-file", "XLA_FLAGS naming a file that holds valid flags (the file form XLA reads "
                 "when the value does not start with '-')", ("CD411", "CD417"),
                 env={"XLA_FLAGS": str(where / "xla.flags")}, predicted="works"),
        XLA_ENV + " (SetArgvFromEnv: a value not starting with '-' is read as a file of flags)")
    add(Scenario("s14-xla-host-devices", "XLA_FLAGS=--xla_force_host_platform_device_count=2 (a CPU-only flag from a "
                 "sharding tutorial)", ("CD411",), env={"XLA_FLAGS": "--xla_force_host_platform_device_count=2"},
                 predicted="works"), XLA_ENV + "; https://docs.jax.dev/en/latest/sharded-computation.html")
    add(Scenario("s14-xla-newline", "XLA_FLAGS with two valid flags on two lines (written from a heredoc)",
                 ("CD411",), env={"XLA_FLAGS": "--xla_gpu_autotune_level=0\n--xla_dump_hlo_as_text"},
                 predicted="works"), XLA_ENV)
    add(Scenario("s14-tf-cpp-vmodule", "TF_CPP_VMODULE=gpu_compiler=1,cuda_dnn=1 (XLA's per-file verbose logging)",
                 ("CD411",), env={"TF_CPP_VMODULE": "gpu_compiler=1,cuda_dnn=1"}, predicted="works"),
        "https://github.com/openxla/xla/blob/main/xla/tsl/platform/default/logging.cc (TF_CPP_VMODULE)")

    # 6. JAX configuration variables no round touched.
    add(Scenario("s14-jax-default-device-cpu", "JAX_DEFAULT_DEVICE=cpu (arrays placed on the CPU unless told "
                 "otherwise; the GPU is still listed)", ("CD411",), env={"JAX_DEFAULT_DEVICE": "cpu"},
                 predicted="works", cause_class="a setting that moves a framework's arrays off the GPU while it "
                                                "still sees the GPU (a warning at most)"), JAX_CONFIG)
    cache_dir = folder("jax-cache") / "cache"
    cache_dir.mkdir()
    add(Scenario("s14-jax-cache-writable", "JAX_COMPILATION_CACHE_DIR naming a writable folder, with "
                 "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS=0 (every compilation cached)", ("CD417",),
                 env={"JAX_COMPILATION_CACHE_DIR": str(cache_dir), "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0"},
                 predicted="works"), JAX_CONFIG + "; https://docs.jax.dev/en/latest/persistent_compilation_cache.html")
    add(Scenario("s14-jax-prng", "JAX_DEFAULT_PRNG_IMPL=rbg and JAX_THREEFRY_PARTITIONABLE=false", ("CD411",),
                 env={"JAX_DEFAULT_PRNG_IMPL": "rbg", "JAX_THREEFRY_PARTITIONABLE": "false"}, predicted="works"),
        JAX_CONFIG)

    # 7. A working folder holding a user's script named like a standard-library module (python -c puts it first).
    where = folder("cwd-inspect")
    (where / "inspect.py").write_text('"""Print the tensors of a checkpoint: python inspect.py CKPT."""\nimport sys\n\n'
                                      'if len(sys.argv) > 1:\n    print("would inspect", sys.argv[1])\n')
    add(Scenario("s14-cwd-inspect", "started in a project folder holding the user's inspect.py (a script to look "
                 "into checkpoints)", ("CD419",), cwd=str(where), predicted="fails",
                 cause_class="a user's file in the working folder shadows a standard-library module"), SYS_PATH)
    where = folder("cwd-platform")
    (where / "platform.py").write_text('"""The game\'s platform layer."""\nGRAVITY = 9.81\nTILE = 16\n')
    add(Scenario("s14-cwd-platform", "started in a game project's folder holding its own platform.py", ("CD419",),
                 cwd=str(where), predicted="fails",
                 cause_class="a user's file in the working folder shadows a standard-library module"), SYS_PATH)
    where = folder("cwd-project-scripts")
    for name in ("utils", "model", "train", "config", "data", "test"):
        (where / f"{name}.py").write_text(f'raise SystemExit("{name}.py is this project\'s script, not a library")\n')
    add(Scenario("s14-cwd-project-scripts", "started in a project folder holding utils.py, model.py, train.py, "
                 "config.py, data.py and test.py that exit if imported (no framework imports these names)",
                 ("CD419",), cwd=str(where), predicted="works"), SYS_PATH)

    # 8. A sitecustomize on PYTHONPATH (a team's shared tools folder) that changes a setting inside Python, where a
    #    shell-reading check cannot see it.
    where = folder("site-xla-typo")
    (where / "sitecustomize.py").write_text('import os\nos.environ["XLA_FLAGS"] = "--xla_gpu_autotune_levle=0"\n')
    add(Scenario("s14-site-xla-typo", "PYTHONPATH names a tools folder whose sitecustomize.py sets XLA_FLAGS to a "
                 "misspelt flag inside every Python", ("CD411",), env={"PYTHONPATH": str(where)}, predicted="fails",
                 cause_class="a start-up hook sets a framework setting inside Python"), SITE + "; " + XLA_ENV)
    where = folder("site-jax-cpu")
    (where / "sitecustomize.py").write_text('import os\nos.environ.setdefault("JAX_PLATFORMS", "cpu")\n')
    add(Scenario("s14-site-jax-cpu", "PYTHONPATH names a tools folder whose sitecustomize.py defaults JAX_PLATFORMS "
                 "to cpu inside every Python (for a laptop; the shell sets nothing)", ("CD412", "CD113", "CD415"),
                 env={"PYTHONPATH": str(where)}, predicted="fails",
                 cause_class="a start-up hook keeps a framework off the GPU inside Python"), SITE + "; " + JAX_CONFIG)
    where = folder("site-quiet")
    (where / "sitecustomize.py").write_text('import os\nos.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")\n'
                                            'os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")\n')
    add(Scenario("s14-site-quiet", "PYTHONPATH names a tools folder whose sitecustomize.py quiets XLA's logs and "
                 "turns JAX's preallocation off inside every Python", ("CD411", "CD413"),
                 env={"PYTHONPATH": str(where)}, predicted="works"), SITE + "; " + JAX_MEMORY)

    # 9. NCCL configuration files and variables in a single-GPU shell (NCCL reads them only when it initialises).
    where = folder("nccl-conf")
    (where / "nccl.conf").write_text("NCCL_DEBUG=TRACE\nthis line is not a setting\nNCCL_ALGO=Nonexistent\n")
    add(Scenario("s14-nccl-conf-file", "NCCL_CONF_FILE naming a file with a garbage line and an unknown algorithm, "
                 "NCCL_DEBUG_FILE in a folder that does not exist, NCCL_IB_HCA naming no adapter", ("CD176", "CD119"),
                 env={"NCCL_CONF_FILE": str(where / "nccl.conf"),
                      "NCCL_DEBUG_FILE": "/nonexistent/nccl-logs/nccl.%h.%p.log", "NCCL_IB_HCA": "mlx5_99"},
                 predicted="works"), NCCL_ENV)
    home = folder("nccl-home") / "home"
    home.mkdir()
    (home / ".nccl.conf").write_text("NCCL_P2P_LEVEL=garbage\nNCCL_SOCKET_IFNAME=nonexistent9\n")
    add(Scenario("s14-nccl-home-conf", "HOME names a shared home whose ~/.nccl.conf holds an invalid P2P level and "
                 "an interface that does not exist", ("CD176", "CD175"), env={"HOME": str(home)}, predicted="works"),
        NCCL_ENV)

    # 10. Temporary-folder variables naming a regular file.
    where = folder("tmp-file")
    (where / "tmp").write_text("not a folder\n")
    add(Scenario("s14-tmpdir-file", "TMPDIR, TMP, TEMP and TEST_TMPDIR naming a regular file (a script wrote the "
                 "folder's name into a file of that name)", ("CD417",),
                 env={name: str(where / "tmp") for name in ("TMPDIR", "TMP", "TEMP", "TEST_TMPDIR")},
                 predicted="works"),
        "https://docs.python.org/3/library/tempfile.html#tempfile.gettempdir; "
        "https://github.com/openxla/xla/blob/main/xla/tsl/platform/default/env.cc (temporary files: TEST_TMPDIR, "
        "TMPDIR, TMP, /tmp, the first that is a folder)")

    # 11. LD_PRELOAD of the real libraries programs load anyway (advice from issue threads).
    cusparse = _wheel_lib(sites, "libcusparse")
    if jitlink and cusparse:
        add(Scenario("s14-preload-wheel-jitlink", "LD_PRELOAD of the CUDA wheels' own libnvJitLink and libcusparse "
                     "(the workaround from a torch issue, left in .bashrc)", ("CD203", "CD317"),
                     env={"LD_PRELOAD": f"{jitlink}:{cusparse}"}, predicted="works"),
            "https://github.com/pytorch/pytorch/issues/138460; " + LD_SO)
    if nvml:
        add(Scenario("s14-preload-driver-nvml", "LD_PRELOAD of the driver's own NVML file", ("CD118", "CD104"),
                     env={"LD_PRELOAD": nvml}, predicted="works"), LD_SO)
    if libcuda:
        add(Scenario("s14-preload-driver-libcuda", "LD_PRELOAD of the driver's own libcuda file", ("CD111", "CD112"),
                     env={"LD_PRELOAD": libcuda}, predicted="works"), LD_SO)

    # 12. Exact copies of the driver's own user-space libraries in another folder, first on LD_LIBRARY_PATH.
    if nvml:
        where = folder("nvml-copy")
        shutil.copy2(nvml, where / "libnvidia-ml.so.1")
        add(Scenario("s14-nvml-copy-first", "an exact copy of the driver's NVML (same release) as libnvidia-ml.so.1 "
                     "in a folder first on LD_LIBRARY_PATH (a container image's bundled copy)", ("CD118", "CD104"),
                     env={"LD_LIBRARY_PATH": str(where)}, predicted="works"),
            "https://docs.nvidia.com/deploy/nvml-api/ (NVML is the driver's own library); " + LD_SO)
    if libcuda:
        where = folder("libcuda-copy")
        shutil.copy2(libcuda, where / "libcuda.so.1")
        add(Scenario("s14-libcuda-copy-first", "an exact copy of the driver's libcuda (same release as the kernel "
                     "module) as libcuda.so.1 in a folder first on LD_LIBRARY_PATH", ("CD112", "CD111"),
                     env={"LD_LIBRARY_PATH": str(where)}, predicted="works"),
            "https://docs.nvidia.com/deploy/cuda-compatibility/ (the user-space driver must match the kernel "
            "module's release); " + LD_SO)

    # 13. An open-files limit between the values tried (64 fails; 72, 100 and 1024 tried).
    add(Scenario("s14-nofile-128", "ulimit -n 128 (a batch system's default)", ("CD116",), shell="ulimit -S -n 128",
                 predicted="works"), "https://www.gnu.org/software/bash/manual/html_node/Bash-Builtins.html (ulimit)")

    # 14. Another process's memory beside a high, valid JAX memory fraction (each runs alone).
    gib = _gpu_gib(machine)
    hog = round(min(20.0, 0.2 * gib), 1)
    add(Scenario("s14-hog-fraction-prealloc", f"another process holds {hog} GiB while XLA_PYTHON_CLIENT_MEM_FRACTION="
                 ".95 asks JAX to preallocate 95 % of the GPU", ("CD115", "CD413", "CD109"), hog_gib=hog,
                 env={"XLA_PYTHON_CLIENT_MEM_FRACTION": ".95"}, predicted="fails"), JAX_MEMORY)
    add(Scenario("s14-hog-fraction-on-demand", f"another process holds {hog} GiB, XLA_PYTHON_CLIENT_MEM_FRACTION=.95 "
                 "with XLA_PYTHON_CLIENT_PREALLOCATE=false (a cap, allocated on demand)", ("CD413", "CD109"),
                 hog_gib=hog, env={"XLA_PYTHON_CLIENT_MEM_FRACTION": ".95", "XLA_PYTHON_CLIENT_PREALLOCATE": "false"},
                 predicted="works"), JAX_MEMORY)
    return scenarios
