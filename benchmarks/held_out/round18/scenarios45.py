"""Round 18's sealed GPU scenarios for issue 45: classes neither the built-in suite nor rounds 5-17 took.

SEALED: not to be read by whoever builds the code for issue 45. Run it with the harness, on the GPU machine:

    timeout 300 python3 benchmarks/gpu_scenarios.py --scenarios .sealed/round18/scenarios45/scenarios.py \
        --out "$OUT/s18" --quiet-cases --budget-s 230

Every scenario bends ONE shell's environment: variables, files written at build time under
/tmp/cudnn-doctor-scenarios/s18-* (a JAX persistent compilation cache filled by one real JAX run at build time and then
damaged in copies; half-copies of CUDA wheel libraries; Git LFS pointer text files under library and cache names;
folders whose paths leave no room for a file name; cuDNN-frontend errata files; start-up hooks; links to the toolkit's
libraries), the working folder. Sources are found at build time from the judges' own Python (the harness's
interpreter: its site-packages, the CUDA wheels' `nvidia/*/lib` and dist-info METADATA, torch's own `lib` folder and
`__init__.py`, JAX itself for the cache fill), the loader's cache (glibc's debugging libraries, the driver's
libraries), the CUDA toolkit under /usr/local. A scenario whose source is missing is left out (on the GPU machine
described none is). No installed file is written, nothing outside /tmp, no network, no GPU setting is touched, no
scenario runs alone.

`causes` are codes of cudnn_doctor/codes.py (names and one-line meanings only) that a right answer names if the setup
fails; for a scenario predicted to work, `causes` holds the code a wrong answer would most likely raise. Where no
code fits, or fits only partly, `cause_class` says the class in words. `predicted` is the author's guess before any
run; the judges decide. Each scenario also carries `source` (an attribute the harness ignores).
"""

from __future__ import annotations

import glob
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import sysconfig
from pathlib import Path

import gpu_scenarios
from gpu_scenarios import Scenario, scratch

LFS_POINTER = ("version https://git-lfs.github.com/spec/v1\n"
               "oid sha256:3e7a91c0d55b2f4e8a6c1b9d0f7e2a4c6b8d0e1f3a5c7b9d1e3f5a7c9b1d3e5f\n"
               "size 48213904\n")
EM_AARCH64 = 183
DT_NEEDED, DT_STRTAB, DT_SONAME = 1, 5, 14
PATH_MAX = 4096  # Linux: a path (with its terminating NUL) longer than this is refused with ENAMETOOLONG
AUTOTUNE_DIR = "xla_gpu_per_fusion_autotune_cache_dir"  # the folder JAX puts XLA's autotuning cache in

JAX_COMPILER = ("https://github.com/jax-ml/jax/blob/main/jax/_src/compiler.py (jax-ml/jax@cec06d1: with the persistent "
                "cache on, XLA's per-fusion autotuning cache is put in <cache>/xla_gpu_per_fusion_autotune_cache_dir, "
                "as jax_persistent_cache_enable_xla_caches' default 'xla_gpu_per_fusion_autotune_cache_dir' asks; "
                "_cache_read warns on an error unless jax_raise_persistent_cache_errors) and "
                "https://github.com/jax-ml/jax/blob/main/jax/_src/config.py (jax_persistent_cache_enable_xla_caches, "
                "jax_raise_persistent_cache_errors default False) and "
                "https://github.com/jax-ml/jax/blob/main/jax/_src/lru_cache.py (entries <key>-cache, <key>-atime)")
JAX_CACHE_DOC = "https://docs.jax.dev/en/latest/persistent_compilation_cache.html"
XLA_AUTOTUNE = ("https://github.com/openxla/xla/blob/main/xla/service/gpu/autotuning/autotuner_util.cc "
                "(TryToFindInFileBasedCacheIfEnabled: a cache file that does not parse as a text proto is 'Failed to "
                "parse autotune result.', an error; Autotune: a cache miss with "
                "xla_gpu_require_complete_aot_autotune_results is NotFound 'Complete XLA AOT autotuning results are "
                "required'; AddResultToFileBasedCacheIfEnabled writes each new result under the cache folder) and "
                "https://openxla.org/xla/persisted_autotuning")
XLA_KERNEL_CACHE = ("https://github.com/openxla/xla/blob/main/xla/service/gpu/compile_module_to_llvm_ir.cc (LoadCache: "
                    "an existing xla_gpu_kernel_cache_file that does not parse is 'Failed to parse serialized "
                    "CompilationCacheProto.'; the kernel cache is used only with "
                    "xla_gpu_enable_llvm_module_compilation_parallelism, default false in debug_options_flags.cc)")
XLA_GEMM_OVERRIDE = ("https://github.com/openxla/xla/blob/main/xla/backends/gpu/autotuner/triton.cc "
                     "(TritonBackend::GetOverriddenConfigs reads xla_gpu_gemm_autotuner_override_file for matrix-product "
                     "fusions only)")
TORCH_INIT = ("https://github.com/pytorch/pytorch/blob/main/torch/__init__.py (_load_global_deps: libtorch_global_deps.so "
              "loaded by full path with its DT_NEEDED CUDA libraries found by the loader (LD_LIBRARY_PATH before its "
              "RUNPATH); on an OSError naming one of the CUDA libraries of its cuda_libs table, each is preloaded by "
              "full path from the nvidia wheels and the load tried again; any other OSError is raised)")
JAX_PLUGIN = ("https://github.com/jax-ml/jax/blob/main/jax_plugins/cuda/__init__.py (jax-ml/jax@cec06d1: _load loads "
              "libcudart, libnvrtc, libcublas(Lt), libcupti, libcusparse, libcusolver, libcufft from "
              "nvidia.cu13.__path__[0]/lib by full path and ignores a failed load; _check_cuda_versions compares "
              "cuFFT against its build version ignoring the patch, CUDA, cuBLAS and cuSPARSE against fixed minimums)")
GLIBC_DL_LOAD = ("https://sourceware.org/git/?p=glibc.git;a=blob;f=elf/dl-load.c (open_verify: a file whose header is "
                 "not ELF ends the search with 'invalid ELF header'; a file for another machine is skipped; segments "
                 "are mapped as the program headers say, so a file cut short faults with SIGBUS when touched)")
PY_NAMESPACE = ("https://peps.python.org/pep-0420/ and https://docs.python.org/3/reference/import.html#namespace-packages "
                "(a namespace package's portions follow sys.path order; PYTHONPATH comes before site-packages)")
PY_SITE = "https://docs.python.org/3/library/site.html (sitecustomize imported from sys.path, PYTHONPATH included)"
TMP_DIRS = ("https://github.com/openxla/xla/blob/main/xla/tsl/platform/default/env.cc (GetLocalTempDirectories: "
            "TEST_TMPDIR, TMPDIR, TMP, /tmp, the first that is a folder; XLA writes the PTX it hands to ptxas there), "
            "https://docs.python.org/3/library/tempfile.html#tempfile.gettempdir (Python tries to create a file in "
            "each candidate and skips one where it cannot) and "
            "https://man7.org/linux/man-pages/man3/errno.3.html (ENAMETOOLONG: a path longer than PATH_MAX, 4096 "
            "bytes on Linux)")
CUDA_ENV = "https://docs.nvidia.com/cuda/cuda-programming-guide/05-appendices/environment-variables.html"
CUDNN_ERRATA = ("https://github.com/NVIDIA/cudnn-frontend/blob/main/README.md (Errata Filter: CUDNN_ERRATA_JSON_FILE, "
                "rules of operation, engine, knob, cudnn_version_start/end) and "
                "https://github.com/NVIDIA/cudnn-frontend/blob/main/include/cudnn_frontend_Errata.h (check_rule: a "
                "rule blocks every plan whose tag starts with <operation>_eng<engine>_; an empty knob list blocks all "
                "knobs; the engine is read as an integer: int64_t engine = json_handle['engine']) and "
                "https://docs.pytorch.org/docs/stable/cuda_environment_variables.html (CUDNN_ERRATA_JSON_FILE) "
                "and https://github.com/openxla/xla/blob/main/xla/stream_executor/cuda/cuda_dnn.cc (XLA applies its "
                "static errata and the file named by CUDNN_ERRATA_JSON_FILE)")
KINETO = ("https://github.com/pytorch/pytorch/blob/main/torch/csrc/profiler/kineto_client_interface.cpp "
          "(global_kineto_init: KINETO_USE_DAEMON set makes torch call libkineto_init at import) and "
          "https://github.com/pytorch/pytorch/blob/main/test/profiler/test_kineto.py (testKinetoUseDaemon: torch "
          "imports and initialises CUDA with it) and https://github.com/facebookincubator/dynolog (KINETO_USE_DAEMON, "
          "KINETO_DAEMON_INIT_DELAY_S for on-demand tracing)")
GLIBC_MALLOC = ("https://www.gnu.org/software/libc/manual/html_node/Heap-Consistency-Checking.html (MALLOC_CHECK_ works "
                "only with libc_malloc_debug.so preloaded since glibc 2.34) and "
                "https://man7.org/linux/man-pages/man1/memusage.1.html (libmemusage.so, MEMUSAGE_OUTPUT, "
                "MEMUSAGE_TRACE_MMAP)")
DRIVER_LIBS = ("https://docs.nvidia.com/datacenter/tesla/driver-installation-guide/ (the driver's user-space libraries: "
               "libnvidia-gpucomp and libnvidia-nvvm, used by the driver's JIT compilers) and " + GLIBC_DL_LOAD)
TORCH_LAZY = ("https://github.com/pytorch/pytorch/blob/main/aten/src/ATen/cuda/detail/LazyNVRTC.cpp and "
              "https://github.com/pytorch/pytorch/blob/main/aten/src/ATen/native/cuda/linalg/BatchLinearAlgebraLib.cpp "
              "(libcaffe2_nvrtc.so and libtorch_cuda_linalg.so opened by name on first use of NVRTC or of CUDA linear "
              "algebra)")
COREDUMP = ("https://docs.nvidia.com/cuda/cuda-gdb/index.html#gpu-core-dump-support (CUDA_ENABLE_USER_TRIGGERED_COREDUMP,"
            " CUDA_COREDUMP_PIPE: a pipe the driver makes for each process; writing to it requests a core dump)")
TORCH_ENV = ("https://docs.pytorch.org/docs/stable/cuda_environment_variables.html (PYTORCH_NO_CUDA_MEMORY_CACHING, "
             "TORCH_CUDNN_V8_API_LRU_CACHE_LIMIT)")


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
        for name in sorted(glob.glob(os.path.join(folder, "nvidia", "*", "lib", stem + ".so.[0-9]*")), key=len):
            if re.fullmatch(re.escape(stem) + r"\.so\.\d+", os.path.basename(name)):
                return name
    return ""


def _wheel_version(sites: list[str], pattern: str) -> str:
    """Version: of the first dist-info matching PATTERN (e.g. nvidia_cufft*)."""
    for folder in sites:
        for meta in sorted(glob.glob(os.path.join(folder, pattern + ".dist-info", "METADATA"))):
            try:
                for line in Path(meta).read_text(errors="replace").splitlines():
                    if line.startswith("Version:"):
                        return line.split(":", 1)[1].strip()
            except OSError:
                continue
    return ""


def _major_minor(text: str) -> tuple[int, int] | None:
    match = re.search(r"(\d+)\.(\d+)", text)
    return (int(match.group(1)), int(match.group(2))) if match else None


def _dynamic(path: str) -> dict[str, list[str]]:
    """DT_NEEDED and DT_SONAME of a 64-bit little-endian ELF file ({} if it cannot be read)."""
    try:
        with open(path, "rb") as handle:
            head = handle.read(64)
            if len(head) < 64 or head[:4] != b"\x7fELF" or head[4] != 2 or head[5] != 1:
                return {}
            phoff, = struct.unpack_from("<Q", head, 32)
            phentsize, phnum = struct.unpack_from("<HH", head, 54)
            handle.seek(phoff)
            table = handle.read(phentsize * phnum)
            loads, dynamic = [], None
            for index in range(phnum):
                p_type, _flags, p_offset, p_vaddr, _paddr, p_filesz = struct.unpack_from("<IIQQQQ", table,
                                                                                       index * phentsize)
                if p_type == 1:
                    loads.append((p_vaddr, p_offset, p_filesz))
                elif p_type == 2:
                    dynamic = (p_offset, p_filesz)
            if dynamic is None:
                return {}
            handle.seek(dynamic[0])
            raw = handle.read(dynamic[1])
            entries = []
            for offset in range(0, len(raw) - 15, 16):
                tag, value = struct.unpack_from("<qQ", raw, offset)
                if tag == 0:
                    break
                entries.append((tag, value))
            strtab = next((value for tag, value in entries if tag == DT_STRTAB), None)
            if strtab is None:
                return {}
            base = next((off + strtab - vaddr for vaddr, off, size in loads if vaddr <= strtab < vaddr + size), None)
            if base is None:
                return {}
            found: dict[str, list[str]] = {"needed": [], "soname": []}
            for tag, value in entries:
                key = {DT_NEEDED: "needed", DT_SONAME: "soname"}.get(tag)
                if key:
                    handle.seek(base + value)
                    found[key].append(handle.read(256).split(b"\0", 1)[0].decode(errors="replace"))
            return found
    except (OSError, struct.error):
        return {}


def _cut_copy(source: str, target: Path) -> None:
    """The first half of SOURCE (a copy interrupted by a full disk or a killed rsync), copied in chunks."""
    left = os.path.getsize(source) // 2
    with open(source, "rb") as reading, open(target, "wb") as writing:
        while left > 0:
            chunk = reading.read(min(left, 8 << 20))
            if not chunk:
                break
            writing.write(chunk)
            left -= len(chunk)


def _other_machine_copy(source: str, target: Path) -> None:
    """A copy of SOURCE whose ELF header says AArch64 (what a home shared with ARM nodes holds)."""
    data = bytearray(Path(source).read_bytes())
    data[18:20] = struct.pack("<H", EM_AARCH64)
    target.write_bytes(bytes(data))


def _long_folder(root: Path, length: int) -> Path:
    """A folder under ROOT whose absolute path is exactly LENGTH characters (nested names of at most 200)."""
    path = str(root)
    while True:
        room = length - len(path) - 1  # characters left for the next name, after its '/'
        if room <= 0:
            break
        piece = room if room <= 200 else (200 if room - 201 >= 2 else 150)
        path = os.path.join(path, "d" * piece)
    os.makedirs(path, exist_ok=True)
    return Path(path)


def _fill_jax_cache(cache: Path) -> tuple[bool, str]:
    """One real run of the harness's own JAX judge with a persistent cache in CACHE (every compilation kept): the
    cache a user's earlier run leaves. (True, '') or (False, why)."""
    code = getattr(gpu_scenarios, "JAX_JUDGE", "")
    if not code:
        return False, "the harness has no JAX judge"
    env = dict(os.environ, JAX_COMPILATION_CACHE_DIR=str(cache), JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS="0",
               JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES="-1", XLA_PYTHON_CLIENT_PREALLOCATE="false")
    for name in ("JAX_PERSISTENT_CACHE_ENABLE_XLA_CACHES", "JAX_ENABLE_COMPILATION_CACHE", "JAX_PLATFORMS",
                 "JAX_RAISE_PERSISTENT_CACHE_ERRORS"):
        env.pop(name, None)
    try:
        run = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=150,
                             cwd=str(cache.parent))
    except (OSError, subprocess.TimeoutExpired) as error:
        return False, str(error)
    if run.returncode != 0 or "jax ok" not in run.stdout:
        return False, (run.stdout + run.stderr).strip()[-200:]
    return True, ""


def _entries(cache: Path) -> list[Path]:
    """The executable entries of a JAX cache folder (its top-level files)."""
    return [p for p in sorted(cache.iterdir()) if p.is_file()] if cache.is_dir() else []


def _autotune_files(cache: Path) -> list[Path]:
    folder = cache / AUTOTUNE_DIR
    return [p for p in sorted(folder.rglob("*")) if p.is_file() and p.parent.name != "tmp"] if folder.is_dir() else []


# ------------------------------------------------------------------------------------------------ scenarios
def build_scenarios(machine: dict[str, object]) -> list[Scenario]:
    sites = _site_packages()
    cache = _ldconfig()
    found: list[Scenario] = []

    def add(name: str, why: str, causes: tuple[str, ...], predicted: str, source: str, cause_class: str = "",
            **kwargs: object) -> None:
        scenario = Scenario(name, why, causes, predicted=predicted, cause_class=cause_class,
                            **kwargs)  # type: ignore[arg-type]
        scenario.source = source  # type: ignore[attr-defined]
        found.append(scenario)

    # 1. A JAX persistent compilation cache left by an earlier run (filled here by one real run of the JAX judge),
    #    then damaged the ways shared or copied caches are. Every scenario gets its own copy.
    filled_root = scratch("s18-jax-cache-fill")
    filled = filled_root / "cache"
    filled.mkdir()
    ok, why_not = _fill_jax_cache(filled)
    tuned = _autotune_files(filled) if ok else []
    algo_ids = any("algo_id:" in p.read_text(errors="replace") for p in tuned)
    fill_note = "" if ok else " (the build-time fill failed here: " + " ".join(why_not.split())[:120] + ")"

    def cache_copy(name: str) -> Path:
        where = scratch(name) / "cache"
        if filled.is_dir():
            shutil.copytree(filled, where)
        else:
            where.mkdir()
        return where

    def cache_env(where: Path, **extra: str) -> dict[str, str]:
        return {"JAX_COMPILATION_CACHE_DIR": str(where), "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0", **extra}

    where = cache_copy("s18-jax-cache-warm")
    add("s18-jax-cache-warm",
        "JAX_COMPILATION_CACHE_DIR names the cache an earlier run of the same program filled (its executables and "
        "XLA's autotuning results, untouched): the program's compilations are read back" + fill_note,
        ("CD417",), "works", JAX_COMPILER + "; " + JAX_CACHE_DOC, env=cache_env(where))
    where = cache_copy("s18-jax-cache-entries-cut")
    for entry in _entries(where):
        entry.write_bytes(entry.read_bytes()[:entry.stat().st_size // 2])
    add("s18-jax-cache-entries-cut",
        "the same earlier cache with every executable entry cut to its first half (copied while the first run was "
        "still writing): JAX warns 'Error reading persistent compilation cache entry' and compiles again" + fill_note,
        ("CD417", "CD411"), "works", JAX_COMPILER,
        cause_class="a persistent compilation cache whose entries cannot be read (JAX warns and compiles)",
        env=cache_env(where))
    where = cache_copy("s18-jax-cache-cut-raise")
    for entry in _entries(where):
        entry.write_bytes(entry.read_bytes()[:entry.stat().st_size // 2])
    add("s18-jax-cache-cut-raise",
        "the cache with cut entries, and JAX_RAISE_PERSISTENT_CACHE_ERRORS=true from a CI profile (so that cache "
        "problems are not silent): the first read of a damaged entry raises" + fill_note,
        ("CD411", "CD417"), "fails" if ok else "works", JAX_COMPILER,
        cause_class="a damaged persistent-cache entry made fatal by JAX's own switch",
        env=cache_env(where, JAX_RAISE_PERSISTENT_CACHE_ERRORS="true"))
    where = cache_copy("s18-jax-cache-autotune-garbage")
    for entry in _entries(where):
        entry.unlink()
    garbage = ('version: 4\nresults {\n  device: "CUDA: 9.0, Cores: 132, GPU clock: 1.98 GHz"\n'
               '  hlo: "(written by a newer jaxlib)"\n  result { run_time { nanos: 10112 } }\n}\n')
    for tuned_file in _autotune_files(where):
        tuned_file.write_text(garbage)
    add("s18-jax-cache-autotune-garbage",
        f"the earlier cache shared with a newer jaxlib, which rewrote XLA's autotuning results in its own format "
        f"({len(tuned)} file(s) under {AUTOTUNE_DIR}, text that is no AutotuneResult), the executables evicted: "
        "XLA compiles and reads the autotuning file of the convolution" + fill_note,
        ("CD417", "CD411"), "fails" if tuned else "works", JAX_COMPILER + "; " + XLA_AUTOTUNE,
        cause_class="XLA's per-fusion autotuning cache (kept inside JAX's cache folder by default) holding files "
                    "that do not parse: the compilation stops",
        env=cache_env(where))
    where = cache_copy("s18-jax-cache-autotune-garbage-off")
    for entry in _entries(where):
        entry.unlink()
    for tuned_file in _autotune_files(where):
        tuned_file.write_text(garbage)
    add("s18-jax-cache-autotune-garbage-off",
        "the same cache with unparsable autotuning files, and JAX_PERSISTENT_CACHE_ENABLE_XLA_CACHES=none (JAX "
        "then gives XLA no autotuning cache folder, so the files are never read)" + fill_note,
        ("CD417", "CD411"), "works", JAX_COMPILER,
        cause_class="damaged XLA cache files that the settings keep XLA from reading",
        env=cache_env(where, JAX_PERSISTENT_CACHE_ENABLE_XLA_CACHES="none"))
    where = cache_copy("s18-jax-cache-autotune-foreign-algo")
    for entry in _entries(where):
        entry.unlink()
    for tuned_file in _autotune_files(where):
        tuned_file.write_text(re.sub(r"algo_id: \d+", "algo_id: 999", tuned_file.read_text(errors="replace")))
    add("s18-jax-cache-autotune-foreign-algo",
        "the earlier cache whose autotuning results were edited by a tuning script to pick cuDNN engine 999 for "
        "the convolution (an engine this cuDNN does not have; the executables evicted): XLA takes the cached "
        "choice without measuring" + fill_note,
        ("CD316", "CD417"), "fails" if algo_ids else "works", XLA_AUTOTUNE + "; " + JAX_COMPILER,
        cause_class="an autotuning cache naming a cuDNN engine that does not exist: the convolution cannot run",
        env=cache_env(where))
    where = cache_copy("s18-jax-cache-autotune-is-file")
    for entry in _entries(where):
        entry.unlink()
    shutil.rmtree(where / AUTOTUNE_DIR, ignore_errors=True)
    (where / AUTOTUNE_DIR).write_text("autotuning results moved to the team bucket\n")
    add("s18-jax-cache-autotune-is-file",
        f"the earlier cache in which {AUTOTUNE_DIR} (XLA's autotuning folder that JAX puts there) was replaced by a "
        "note of the same name, the executables evicted: XLA's first new autotuning result cannot be written"
        + fill_note, ("CD417", "CD411"), "fails", JAX_COMPILER + "; " + XLA_AUTOTUNE,
        cause_class="the autotuning folder JAX derives from its cache folder is a regular file (set by no "
                    "variable: only JAX_COMPILATION_CACHE_DIR is set)",
        env=cache_env(where))

    # 2. XLA flags that make a compilation depend on results or caches someone else must supply.
    flag_require = "--xla_gpu_require_complete_aot_autotune_results=true"
    add("s18-xla-require-aot-empty",
        f"XLA_FLAGS={flag_require} (from a deployment guide for ahead-of-time autotuned models) with no autotuning "
        "results anywhere: the convolution's autotuning is a cache miss", ("CD411",), "fails", XLA_AUTOTUNE,
        cause_class="a valid XLA flag that demands autotuning results nobody supplied",
        env={"XLA_FLAGS": flag_require})
    where = cache_copy("s18-xla-require-aot-warm")
    for entry in _entries(where):
        entry.unlink()
    add("s18-xla-require-aot-warm",
        f"XLA_FLAGS={flag_require} beside the earlier run's cache (its autotuning results kept, its executables "
        "evicted): every autotuning lookup is found" + fill_note, ("CD411",), "works" if tuned else "fails",
        XLA_AUTOTUNE + "; " + JAX_COMPILER, env=cache_env(where, XLA_FLAGS=flag_require))
    kernel = scratch("s18-xla-kernel-cache") / "kernels.bin"
    kernel.write_text(LFS_POINTER)
    add("s18-xla-kernel-cache-lfs-alone",
        f"XLA_FLAGS=--xla_gpu_kernel_cache_file={kernel} naming a Git LFS pointer checked out in place of the "
        "team's kernel cache, without module-compilation parallelism (XLA uses the kernel cache only with it)",
        ("CD411", "CD417"), "works", XLA_KERNEL_CACHE,
        cause_class="a broken cache file a flag names, which XLA never opens under the other settings",
        env={"XLA_FLAGS": f"--xla_gpu_kernel_cache_file={kernel}"})
    add("s18-xla-kernel-cache-lfs-parallel",
        "the same Git LFS pointer as XLA's kernel cache, with --xla_gpu_enable_llvm_module_compilation_parallelism"
        "=true (the pair a compile-time guide recommends): XLA loads the cache before emitting kernels",
        ("CD411", "CD417"), "fails", XLA_KERNEL_CACHE,
        cause_class="an XLA kernel cache file that does not parse: every compilation stops",
        env={"XLA_FLAGS": "--xla_gpu_enable_llvm_module_compilation_parallelism=true "
                          f"--xla_gpu_kernel_cache_file={kernel}"})
    add("s18-xla-gemm-override-missing",
        "XLA_FLAGS=--xla_gpu_gemm_autotuner_override_file naming a file that was never copied to this machine "
        "(read only when a matrix-product fusion is autotuned; the judges' work has none)",
        ("CD411", "CD417"), "works", XLA_GEMM_OVERRIDE,
        cause_class="a missing file that a flag names for work the programs do not do",
        env={"XLA_FLAGS": "--xla_gpu_gemm_autotuner_override_file=/nonexistent/tuning/gemm_overrides.textproto"})

    # 3. torch's import-time fallback: CUDA libraries its libtorch_global_deps.so (or libtorch_cuda.so) links,
    #    broken first on LD_LIBRARY_PATH in ways that do and do not raise an OSError naming the library.
    torch_dir = next((os.path.join(s, "torch") for s in sites if os.path.isfile(os.path.join(s, "torch", "__init__.py"))),
                     "")
    torch_text = Path(torch_dir, "__init__.py").read_text(errors="replace") if torch_dir else ""
    torch_lib = os.path.join(torch_dir, "lib") if torch_dir else ""
    global_needs = set(_dynamic(os.path.join(torch_lib, "libtorch_global_deps.so")).get("needed", [])) if torch_lib \
        else set()
    import_needs: set[str] = set(global_needs)
    for own in ("libtorch_cuda.so", "libtorch.so", "libtorch_python.so", "libc10_cuda.so"):
        if torch_lib:
            import_needs.update(_dynamic(os.path.join(torch_lib, own)).get("needed", []))
    plugin_text = "\n".join(Path(p).read_text(errors="replace")
                            for s in sites for p in glob.glob(os.path.join(s, "jax_plugins", "*", "__init__.py")))

    def torch_outcome(soname: str, kind: str) -> str:
        """What torch's import does with a broken SONAME first on the path: 'fails' or 'works'."""
        if soname not in import_needs:
            return "works"
        if kind == "cut":
            return "fails"  # the loader maps it and faults: no OSError, no fallback
        stem = soname.split(".")[0]
        if soname in global_needs and f'"{stem}' in torch_text:
            return "works"  # OSError naming it: every CUDA library preloaded by full path, then loaded again
        return "fails"

    for stem, label in (("libcurand", "curand"), ("libcufft", "cufft")):
        real = _wheel_lib(sites, stem)
        if not real:
            continue
        soname = os.path.basename(real)
        where = scratch(f"s18-cut-{label}")
        _cut_copy(real, where / soname)
        jax_way = "loads its own by full path" if f'"{soname}"' in plugin_text else "never loads it"
        add(f"s18-cut-{label}",
            f"the first half of {soname} (a copy of the CUDA wheel's lib folder interrupted by a full disk) in a "
            f"project's lib folder first on LD_LIBRARY_PATH; torch's global-deps library "
            f"{'links' if soname in global_needs else 'does not link'} it, JAX {jax_way}",
            ("CD203", "CD409"), torch_outcome(soname, "cut"),
            TORCH_INIT + "; " + JAX_PLUGIN + "; " + GLIBC_DL_LOAD,
            cause_class="a CUDA library cut short first on the path: the loader faults where a framework asks for "
                        "it by name before its own fallback can load the wheel's",
            env={"LD_LIBRARY_PATH": str(where)})
    real = _wheel_lib(sites, "libcurand")
    if real:
        soname = os.path.basename(real)
        where = scratch("s18-lfs-curand")
        (where / soname).write_text(LFS_POINTER)
        add("s18-lfs-curand",
            f"a Git LFS pointer (text) checked out as {soname} in a project's lib folder first on LD_LIBRARY_PATH "
            "(torch's first load of its global-deps library fails with an OSError naming it; JAX never loads cuRAND)",
            ("CD203", "CD409"), torch_outcome(soname, "text"), TORCH_INIT + "; " + GLIBC_DL_LOAD,
            cause_class="a CUDA library broken first on the path that torch's own fallback replaces with the "
                        "wheel's",
            env={"LD_LIBRARY_PATH": str(where)})
    real = _wheel_lib(sites, "libcusparseLt")
    if real:
        soname = os.path.basename(real)
        where = scratch("s18-lfs-cusparselt")
        (where / soname).write_text(LFS_POINTER)
        add("s18-lfs-cusparselt",
            f"a Git LFS pointer (text) checked out as {soname} (cuSPARSELt, which only torch uses) first on "
            "LD_LIBRARY_PATH", ("CD203", "CD409"), torch_outcome(soname, "text"), TORCH_INIT + "; " + GLIBC_DL_LOAD,
            cause_class="a CUDA library only one framework links, broken first on the path",
            env={"LD_LIBRARY_PATH": str(where)})
    cusolver = _wheel_lib(sites, "libcusolver")
    libz = cache.get("libz.so.1", "")
    if cusolver and libz:
        soname = os.path.basename(cusolver)
        where = scratch("s18-arm-cusolver")
        _other_machine_copy(os.path.realpath(libz), where / soname)
        add("s18-arm-cusolver",
            f"an AArch64 file named {soname} first on LD_LIBRARY_PATH (a shared home's lib folder filled on ARM "
            "nodes; the loader skips a file for another machine and goes on)", ("CD203", "CD409"), "works",
            GLIBC_DL_LOAD, env={"LD_LIBRARY_PATH": str(where)})

    # 4. Temporary and cache folders whose paths leave no room for a file name (deep project trees, a workspace
    #    path made of hashes): the folder exists, nothing can be created in it.
    deep = _long_folder(scratch("s18-tmpdir-long"), PATH_MAX - 1 - 24)
    add("s18-tmpdir-long",
        f"TMPDIR names an existing folder whose path is {len(str(deep))} characters (a job's scratch folder nested "
        "in a deep workspace): no file name of more than 23 characters fits under it (ENAMETOOLONG); Python's "
        "tempfile skips it, XLA writes the PTX it hands to ptxas there",
        ("CD417",), "fails", TMP_DIRS,
        cause_class="a temporary folder that exists but whose path leaves no room for a file name",
        env={"TMPDIR": str(deep)}, unset=("TEST_TMPDIR",))
    deep = _long_folder(scratch("s18-test-tmpdir-long"), PATH_MAX - 1 - 24)
    add("s18-test-tmpdir-long",
        f"TEST_TMPDIR (left by a Bazel test wrapper) names an existing folder whose path is {len(str(deep))} "
        "characters; XLA takes it before TMPDIR, Python never reads it",
        ("CD417",), "fails", TMP_DIRS,
        cause_class="a temporary folder only XLA reads, whose path leaves no room for a file name",
        env={"TEST_TMPDIR": str(deep)})
    deep = _long_folder(scratch("s18-tmp-long"), PATH_MAX - 1 - 24)
    add("s18-tmp-long",
        f"TMP alone (TMPDIR and TEST_TMPDIR unset: a profile written for Windows tools) names an existing folder whose "
        f"path is {len(str(deep))} characters; XLA takes TMP when the other two are unset",
        ("CD417",), "fails", TMP_DIRS,
        cause_class="a temporary folder that exists but whose path leaves no room for a file name",
        env={"TMP": str(deep)}, unset=("TMPDIR", "TEST_TMPDIR"))
    deep = _long_folder(scratch("s18-jax-cache-long"), PATH_MAX - 1 - 56)
    add("s18-jax-cache-long",
        f"JAX_COMPILATION_CACHE_DIR names an existing, empty folder whose path is {len(str(deep))} characters: "
        f"JAX's entries cannot be written (it warns), and XLA's autotuning results go to {AUTOTUNE_DIR} under it, "
        "where the folder fits and no result file does",
        ("CD417", "CD411"), "fails", JAX_COMPILER + "; " + XLA_AUTOTUNE + "; " + TMP_DIRS,
        cause_class="a compilation-cache folder whose path leaves no room for the files XLA writes in it",
        env={"JAX_COMPILATION_CACHE_DIR": str(deep), "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0"})
    deep = _long_folder(scratch("s18-home-long"), PATH_MAX - 1 - 10)
    add("s18-home-long",
        f"HOME names an existing folder whose path is {len(str(deep))} characters, the XDG folders unset: CUDA's "
        "JIT cache (~/.nv/ComputeCache) and every cache under HOME cannot be made",
        ("CD417", "CD416"), "works", CUDA_ENV + " (CUDA_CACHE_PATH defaults to ~/.nv/ComputeCache); " + TMP_DIRS,
        cause_class="a home folder in which nothing can be created, used only for caches",
        env={"HOME": str(deep)}, unset=("XDG_CACHE_HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME"))

    # 5. cuDNN-frontend errata rules (CUDNN_ERRATA_JSON_FILE) written by a script, blocking every engine of one
    #    operation: the forward convolution both judges run, or the weight gradient neither runs.
    errata = scratch("s18-errata")
    for operation, label in (("ConvFwd", "fwd"), ("ConvBwdFilter", "bwd-filter")):
        rules = [{"rule_id": f"{operation}_eng{engine}_sweep", "operation": operation, "engine": engine, "knob": [],
                  "cudnn_version_start": 8000, "cudnn_version_end": -1} for engine in range(0, 512)]
        (errata / f"{label}.json").write_text(json.dumps({"version": 1, "rules": rules}, indent=1))
    add("s18-errata-all-conv-fwd",
        "CUDNN_ERRATA_JSON_FILE names an errata file a script generated to block a misbehaving engine, which blocks "
        "engines 0-511 of ConvFwd (every forward-convolution engine, every knob): torch's and XLA's plans for the "
        "convolution are all filtered out", ("CD316", "CD411"), "fails", CUDNN_ERRATA,
        cause_class="a cuDNN errata file that blocks every engine of an operation the programs run",
        env={"CUDNN_ERRATA_JSON_FILE": str(errata / "fwd.json")})
    stringly = [{"rule_id": "ConvFwd_eng12_bad_results", "operation": "ConvFwd", "engine": "12", "knob": [],
                 "cudnn_version_start": 8000, "cudnn_version_end": -1}]
    (errata / "stringified.json").write_text(json.dumps({"version": 1, "rules": stringly}, indent=1))
    add("s18-errata-engine-string",
        "CUDNN_ERRATA_JSON_FILE names an errata file of one rule whose engine is written as a string, \"12\" (as "
        "the frontend's README words it, 'stringified version of the engine ID'); the frontend reads the engine as "
        "an integer while checking every plan", ("CD316", "CD411"), "fails", CUDNN_ERRATA,
        cause_class="a cuDNN errata file whose rule the frontend cannot read: checking any plan throws",
        env={"CUDNN_ERRATA_JSON_FILE": str(errata / "stringified.json")})
    add("s18-errata-all-conv-bwd-filter",
        "CUDNN_ERRATA_JSON_FILE names the same kind of file blocking engines 0-511 of ConvBwdFilter only (the "
        "weight gradient, which inference and the judges' work never run)", ("CD316", "CD411"), "works",
        CUDNN_ERRATA, cause_class="a cuDNN errata file blocking an operation the programs do not run",
        env={"CUDNN_ERRATA_JSON_FILE": str(errata / "bwd-filter.json")})

    # 6. A profiling daemon's hooks (Kineto's dynolog client) left in a shell with no daemon running.
    add("s18-kineto-daemon",
        "KINETO_USE_DAEMON=1 and KINETO_DAEMON_INIT_DELAY_S=3 from a cluster's on-demand profiling setup, no dynolog "
        "daemon running: torch initialises Kineto's daemon client at import", ("CD411", "CD412"), "works", KINETO,
        cause_class="a profiler's daemon hooks in a shell without its daemon",
        env={"KINETO_USE_DAEMON": "1", "KINETO_DAEMON_INIT_DELAY_S": "3"})
    kineto = scratch("s18-kineto-config")
    (kineto / "libkineto.conf").write_text("# on-demand tracing\nACTIVITIES_WARMUP_PERIOD_SECS = soon\n"
                                           "CUPTI_PROFILER_METRICS = kineto__cuda_core_flops,nonsense\n"
                                           "this line is not a setting\n")
    add("s18-kineto-config-garbage",
        "KINETO_USE_DAEMON=1 with KINETO_CONFIG naming a config file with a garbage line and values Kineto cannot "
        "parse, KINETO_LOG_LEVEL=0 (most verbose)", ("CD411", "CD417"), "works", KINETO,
        cause_class="a profiler's config file that only a trace request reads",
        env={"KINETO_USE_DAEMON": "1", "KINETO_CONFIG": str(kineto / "libkineto.conf"), "KINETO_LOG_LEVEL": "0"})

    # 7. glibc's own malloc debugging, with and without the library that makes it work.
    add("s18-malloc-check-alone",
        "MALLOC_CHECK_=3 left from a debugging session (since glibc 2.34 it does nothing without "
        "libc_malloc_debug.so preloaded)", ("CD411", "CD412"), "works", GLIBC_MALLOC,
        cause_class="a C library debugging variable that is inert on its own",
        env={"MALLOC_CHECK_": "3"})
    malloc_debug = cache.get("libc_malloc_debug.so.0", "")
    if malloc_debug:
        add("s18-malloc-debug-preload",
            f"LD_PRELOAD={malloc_debug} with MALLOC_CHECK_=3 (glibc's heap-consistency checks in every program; an "
            "error found aborts)", ("CD317", "CD412"), "works", GLIBC_MALLOC,
            cause_class="glibc's malloc debugging library preloaded into every program",
            env={"LD_PRELOAD": malloc_debug, "MALLOC_CHECK_": "3"})
    memusage = cache.get("libmemusage.so", "")
    if memusage:
        out = scratch("s18-memusage")
        add("s18-memusage-preload",
            f"LD_PRELOAD={memusage} with MEMUSAGE_TRACE_MMAP=1 and MEMUSAGE_OUTPUT in a writable folder (glibc's "
            "memory-usage profiler, as the memusage script sets it up, left exported)", ("CD317", "CD412"), "works",
            GLIBC_MALLOC, cause_class="glibc's memory-usage profiler preloaded into every program",
            env={"LD_PRELOAD": memusage, "MEMUSAGE_TRACE_MMAP": "1", "MEMUSAGE_OUTPUT": str(out / "memusage.dat")})

    # 8. The driver's own compiler libraries (full-release sonames) broken first on LD_LIBRARY_PATH.
    libcuda = os.path.realpath(cache["libcuda.so.1"]) if "libcuda.so.1" in cache else ""
    driver_dir = os.path.dirname(libcuda) if libcuda else ""
    libcuda_needs = set(_dynamic(libcuda).get("needed", [])) if libcuda else set()
    gpucomp = sorted(glob.glob(os.path.join(driver_dir, "libnvidia-gpucomp.so.*"))) if driver_dir else []
    if gpucomp:
        soname = (_dynamic(gpucomp[0]).get("soname") or [os.path.basename(gpucomp[0])])[0]
        where = scratch("s18-lfs-gpucomp")
        (where / soname).write_text(LFS_POINTER)
        add("s18-lfs-gpucomp",
            f"a Git LFS pointer (text) named {soname} (the driver's GPU compiler library, behind its PTX JIT) in a "
            "folder first on LD_LIBRARY_PATH (a container image's driver files copied by a broken checkout); "
            f"libcuda {'links' if soname in libcuda_needs else 'does not link'} it",
            ("CD110", "CD416"), "fails" if soname in libcuda_needs else "works", DRIVER_LIBS,
            cause_class="a driver compiler library that only the driver's JIT loads, broken first on the path",
            env={"LD_LIBRARY_PATH": str(where)})
    nvvm = cache.get("libnvidia-nvvm.so.4", "")
    if nvvm:
        where = scratch("s18-lfs-driver-nvvm")
        (where / "libnvidia-nvvm.so.4").write_text(LFS_POINTER)
        add("s18-lfs-driver-nvvm",
            "a Git LFS pointer (text) named libnvidia-nvvm.so.4 (the driver's NVVM, used to JIT NVVM IR and "
            f"link-time-optimised code) first on LD_LIBRARY_PATH; libcuda "
            f"{'links' if 'libnvidia-nvvm.so.4' in libcuda_needs else 'does not link'} it",
            ("CD110", "CD416"), "fails" if "libnvidia-nvvm.so.4" in libcuda_needs else "works", DRIVER_LIBS,
            cause_class="a driver compiler library no program of this work loads, broken first on the path",
            env={"LD_LIBRARY_PATH": str(where)})

    # 9. torch's own libraries that it opens by name only on first use of a feature the judges never use.
    for name, label in (("libtorch_cuda_linalg.so", "linalg"), ("libcaffe2_nvrtc.so", "nvrtc")):
        if torch_lib and os.path.isfile(os.path.join(torch_lib, name)):
            where = scratch(f"s18-torch-lazy-{label}")
            (where / name).write_text(LFS_POINTER)
            add(f"s18-torch-lazy-{label}",
                f"a Git LFS pointer (text) named {name} (a torch library opened by name on first use of "
                f"{'CUDA linear algebra' if label == 'linalg' else 'NVRTC'}) in a C++ project's lib folder first on "
                "LD_LIBRARY_PATH", ("CD409",), "fails" if name in import_needs else "works", TORCH_LAZY,
                cause_class="a framework's own library broken first on the path, opened only by work the programs "
                            "do not do",
                env={"LD_LIBRARY_PATH": str(where)})

    # 10. CUDA's user-triggered GPU core dumps (a pipe the driver makes per process).
    pipes = scratch("s18-coredump-pipe")
    add("s18-user-coredump-pipe",
        "CUDA_ENABLE_USER_TRIGGERED_COREDUMP=1 with CUDA_COREDUMP_PIPE and CUDA_COREDUMP_FILE in a writable "
        "folder (a debugging how-to's settings left exported)", ("CD416", "CD417"), "works", COREDUMP,
        cause_class="CUDA's user-triggered core dump switch",
        env={"CUDA_ENABLE_USER_TRIGGERED_COREDUMP": "1", "CUDA_COREDUMP_PIPE": str(pipes / "corepipe.%p"),
             "CUDA_COREDUMP_FILE": str(pipes / "core.%p")})
    add("s18-user-coredump-pipe-missing",
        "CUDA_ENABLE_USER_TRIGGERED_COREDUMP=1 with CUDA_COREDUMP_PIPE in a folder that does not exist (the pipe "
        "cannot be made)", ("CD416", "CD417"), "works", COREDUMP,
        cause_class="CUDA's user-triggered core dump switch with a pipe that cannot be made",
        env={"CUDA_ENABLE_USER_TRIGGERED_COREDUMP": "1",
             "CUDA_COREDUMP_PIPE": "/nonexistent/cuda-pipes/corepipe.%h.%p"})

    # 11. A namespace portion nvidia/cu13/lib on PYTHONPATH holding real libraries: JAX's CUDA plugin preloads from
    #     nvidia.cu13.__path__[0], which is now this folder.
    cu13_site = next((s for s in sites if os.path.isdir(os.path.join(s, "nvidia", "cu13", "lib"))
                      and not os.path.exists(os.path.join(s, "nvidia", "__init__.py"))
                      and not os.path.exists(os.path.join(s, "nvidia", "cu13", "__init__.py"))), "")
    jax_libs = ("libcudart.so.13", "libnvrtc.so.13", "libcublas.so.13", "libcublasLt.so.13", "libcupti.so.13",
                "libcusparse.so.12", "libcusolver.so.12", "libcufft.so.12")
    if cu13_site:
        kit = {}
        for soname in jax_libs:
            hits = sorted(glob.glob(f"/usr/local/cuda-*/targets/x86_64-linux/lib/{soname}")
                          + glob.glob(f"/usr/local/cuda/lib64/{soname}")
                          + glob.glob(f"/usr/local/cuda-*/extras/CUPTI/lib64/{soname}"))
            if hits:
                kit[soname] = os.path.realpath(hits[0])
        if kit:
            where = scratch("s18-pythonpath-toolkit-cu13")
            lib = where / "nvidia" / "cu13" / "lib"
            lib.mkdir(parents=True)
            for soname, target in kit.items():
                os.symlink(target, lib / soname)
            kit_fft = _major_minor(os.path.basename(kit.get("libcufft.so.12", "")).split(".so.", 1)[-1])
            wheel_fft = _major_minor(_wheel_version(sites, "nvidia_cufft*"))
            older = kit_fft is not None and wheel_fft is not None and kit_fft < wheel_fft
            add("s18-pythonpath-toolkit-cu13",
                f"PYTHONPATH names a build folder whose nvidia/cu13/lib holds links to the CUDA toolkit's own "
                f"libraries ({len(kit)} of JAX's preloads; the toolkit's cuFFT {kit_fft}, the wheel's {wheel_fft}): "
                "JAX's CUDA plugin takes nvidia.cu13's first path entry and preloads the toolkit's files",
                ("CD419", "CD203", "CD410"), "fails" if older else "works", JAX_PLUGIN + "; " + PY_NAMESPACE,
                cause_class="CUDA libraries of the toolkit's release reached by JAX's full-path preload through a "
                            "namespace portion on PYTHONPATH",
                env={"PYTHONPATH": str(where)})
        where = scratch("s18-pythonpath-wheel-cu13")
        lib = where / "nvidia" / "cu13" / "lib"
        lib.mkdir(parents=True)
        linked = 0
        for soname in jax_libs:
            real = os.path.join(cu13_site, "nvidia", "cu13", "lib", soname)
            if os.path.exists(real):
                os.symlink(real, lib / soname)
                linked += 1
        add("s18-pythonpath-wheel-cu13",
            f"PYTHONPATH names a folder whose nvidia/cu13/lib holds links to the installed wheel's own files ({linked} "
            "of JAX's preloads): JAX preloads the very files it would anyway",
            ("CD419", "CD203"), "works", JAX_PLUGIN + "; " + PY_NAMESPACE, env={"PYTHONPATH": str(where)})

    # 12. A start-up hook that imports one framework into every Python (so the other framework's program carries it).
    hook = scratch("s18-site-imports-torch")
    (hook / "sitecustomize.py").write_text(
        "# team policy: reproducible convolutions in every notebook and script\n"
        "try:\n    import torch\n    torch.backends.cudnn.benchmark = False\n"
        "    torch.backends.cudnn.deterministic = True\nexcept ImportError:\n    pass\n")
    add("s18-site-imports-torch",
        "PYTHONPATH names a team folder whose sitecustomize.py imports torch in every Python to set cuDNN's "
        "deterministic mode (JAX's program then holds torch's CUDA libraries too)", ("CD419", "CD317"), "works",
        PY_SITE + "; " + TORCH_INIT, cause_class="a start-up hook that imports a framework into every program",
        env={"PYTHONPATH": str(hook)})
    hook = scratch("s18-site-imports-jax")
    (hook / "sitecustomize.py").write_text(
        "# team policy: full-precision matrix products\n"
        "try:\n    import jax\n    jax.config.update('jax_default_matmul_precision', 'highest')\n"
        "except ImportError:\n    pass\n")
    add("s18-site-imports-jax",
        "PYTHONPATH names a team folder whose sitecustomize.py imports jax in every Python to set the default "
        "matrix-product precision (torch's program then imports JAX first)", ("CD419", "CD411"), "works",
        PY_SITE + "; " + JAX_COMPILER, cause_class="a start-up hook that imports a framework into every program",
        env={"PYTHONPATH": str(hook)})

    # 13. torch's own caches at their smallest.
    add("s18-torch-caches-minimal",
        "PYTORCH_NO_CUDA_MEMORY_CACHING=1 (every allocation a cudaMalloc, as memory checkers want) and "
        "TORCH_CUDNN_V8_API_LRU_CACHE_LIMIT=1 (one cuDNN plan kept)", ("CD411", "CD412"), "works", TORCH_ENV,
        env={"PYTORCH_NO_CUDA_MEMORY_CACHING": "1", "TORCH_CUDNN_V8_API_LRU_CACHE_LIMIT": "1"})
    return found
