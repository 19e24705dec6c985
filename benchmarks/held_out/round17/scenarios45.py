"""Round 17's sealed GPU scenarios for issue 45: classes neither the built-in suite nor rounds 5-16 have.

SEALED: not to be read by whoever builds the code for issue 45. Run it with the harness, on the GPU machine:

    timeout 300 python3 benchmarks/gpu_scenarios.py --scenarios .sealed/round17/scenarios45/scenarios.py \
        --out "$OUT/s17" --quiet-cases --budget-s 230

Every scenario bends ONE shell's environment: variables, files it writes under /tmp/cudnn-doctor-scenarios/s17-*
(symbolic links to real libraries and to device files, small copies of a system library, start-up hooks, text
files), the working folder, a soft limit, another process on the GPU. Sources are found on the machine at build
time: the judges' own Python (the harness's interpreter: its site-packages, the CUDA wheels under nvidia/*/lib, JAX's
CUDA plugin package, its extension-module suffix, whether it reads a user site, the user it runs as), the loader's
cache (the system cuDNN, libz), the toolkit's stub libcuda. A scenario whose source is missing is left out. No
installed file is written, nothing outside /tmp, no network, no GPU setting is touched.

`causes` are codes of cudnn_doctor/codes.py (names and one-line meanings only) that a right answer names if the setup
fails; where a scenario is predicted to work, `causes` holds the code a wrong answer would most likely raise (or is
empty with a `cause_class`). Where no code fits, or fits only partly, `cause_class` says the class in words.
`predicted` is the author's guess before any run; the judges decide. Each scenario also carries `source` (an
attribute the harness ignores).
"""

from __future__ import annotations

import glob
import importlib.machinery
import importlib.util
import os
import py_compile
import re
import shlex
import shutil
import site
import struct
import subprocess
import sys
import sysconfig
from pathlib import Path

from gpu_scenarios import Scenario, scratch

LFS_POINTER = ("version https://git-lfs.github.com/spec/v1\n"
               "oid sha256:9b3c1f0e7d5a2c4b6e8f0a1c3e5d7b9f1a3c5e7d9b1f3a5c7e9d1b3f5a7c9e1d\n"
               "size 1834672\n")
DT_NEEDED, DT_STRTAB, DT_RPATH, DT_RUNPATH = 1, 5, 15, 29
ET_REL = 1
PT_INTERP = 3

LD_SO = ("https://man7.org/linux/man-pages/man8/ld.so.8.html (LD_PRELOAD: 'a whitespace-separated list of additional, "
         "user-specified, ELF shared objects'; an entry with a slash is opened as a path, a relative one from the "
         "working folder; LD_LIBRARY_PATH searched before DT_RUNPATH; LD_PROFILE and LD_PROFILE_OUTPUT)")
GLIBC_DL_LOAD = ("https://sourceware.org/git/?p=glibc.git;a=blob;f=elf/dl-load.c (open_verify: a file whose header "
                 "is not ELF, or that is too short, ends the search for that name; _dl_map_object_from_fd: 'only "
                 "ET_DYN and ET_EXEC can be loaded', 'cannot dynamically load position-independent executable') and "
                 "https://sourceware.org/git/?p=glibc.git;a=blob;f=elf/rtld.c (a preload that fails: 'cannot be "
                 "preloaded ...: ignored')")
TORCH_INIT = ("https://github.com/pytorch/pytorch/blob/main/torch/__init__.py (_load_global_deps, _preload_cuda_deps: "
              "the wheels' CUDA libraries and libcudnn.so.9 loaded by full path; cuDNN's sub-libraries are opened by "
              "cuDNN itself, by name)")
JAX_PLUGIN = ("https://github.com/jax-ml/jax/blob/main/jax_plugins/cuda/__init__.py (_load_nvidia_libraries: the CUDA "
              "wheel libraries and libcudnn by full path, libnvJitLink not among them) and "
              "https://github.com/jax-ml/jax/blob/main/jax/_src/xla_bridge.py (discover_pjrt_plugins: every "
              "jax_plugins module's initialize() called, an exception logged and the plugin skipped; register_plugin)")
CUDNN_LAYOUT = ("https://docs.nvidia.com/deeplearning/cudnn/backend/latest/api/overview.html (libcudnn.so.9 is a shim "
                "that loads the graph, engine, ops, cnn and adv sub-libraries on demand)")
PY_IMPORT = ("https://docs.python.org/3/library/sys_path_init.html (python -c puts the working folder first on "
             "sys.path) and https://docs.python.org/3/reference/import.html#path-entry-finders (in each folder, "
             "extension modules with the interpreter's suffixes are tried before source files); "
             "https://github.com/python/cpython/blob/main/Lib/json/decoder.py (from _json import ... under "
             "try/except ImportError)")
PY_SITE = ("https://docs.python.org/3/library/site.html (sitecustomize imported from sys.path, PYTHONPATH included; "
           "usercustomize only where ENABLE_USER_SITE is true, never in a virtual environment without system site "
           "packages) and https://github.com/python/cpython/blob/main/Lib/site.py (execsitecustomize catches "
           "Exception only: SystemExit ends interpreter start-up) and https://peps.python.org/pep-3147/ (a "
           "__pycache__ .pyc without its source is never imported)")
XLA_BOOL = ("https://github.com/openxla/xla/blob/main/xla/tsl/util/command_line_flags.cc (ParseBoolFlag: '--name' "
            "alone is true, '=true' and '=false' are the only values; anything else 'Couldn't interpret value' and "
            "the parse fails) and https://github.com/openxla/xla/blob/main/xla/parse_flags_from_env.cc (XLA_FLAGS "
            "that do not parse are fatal); https://docs.jax.dev/en/latest/gpu_performance_tips.html "
            "(--xla_gpu_enable_latency_hiding_scheduler)")
TMP_DIRS = ("https://github.com/openxla/xla/blob/main/xla/tsl/platform/default/env.cc (GetLocalTempDirectories: "
            "TEST_TMPDIR, TMPDIR, TMP; XLA writes the PTX it hands to ptxas there) and "
            "https://man7.org/linux/man-pages/man7/capabilities.7.html (CAP_DAC_OVERRIDE: root writes into a folder "
            "of mode 0555)")
JAX_CACHE = ("https://docs.jax.dev/en/latest/persistent_compilation_cache.html and "
             "https://docs.jax.dev/en/latest/config_options.html (jax_enable_compilation_cache, "
             "jax_compilation_cache_dir, jax_persistent_cache_enable_xla_caches)")
GPU_SHARING = ("https://docs.nvidia.com/deploy/mps/index.html (without MPS, contexts of several processes share a GPU "
               "by time slicing; a stopped process keeps its context and memory) and "
               "https://www.gnu.org/software/coreutils/manual/html_node/timeout-invocation.html")
CUDA_L2 = ("https://docs.nvidia.com/cuda/cuda-programming-guide/04-special-topics/l2-cache-control.html "
           "(CUDA_DEVICE_DEFAULT_PERSISTING_L2_CACHE_PERCENTAGE_LIMIT, read when an MPS server starts) and "
           "https://docs.nvidia.com/cuda/cuda-programming-guide/05-appendices/environment-variables.html "
           "(CUDA_MODULE_LOADING: DEFAULT, LAZY, EAGER)")
CUBLASLT_CACHE = ("https://docs.nvidia.com/cuda/cublas/index.html#heuristics-cache "
                  "(CUBLASLT_HEURISTICS_CACHE_CAPACITY: "
                  "the capacity of cuBLASLt's heuristics cache, 0 turns it off)")
TUNABLEOP = ("https://docs.pytorch.org/docs/stable/cuda.tunable.html (PYTORCH_TUNABLEOP_ENABLED, "
             "PYTORCH_TUNABLEOP_TUNING, PYTORCH_TUNABLEOP_FILENAME; a results file whose validators do not match is "
             "not used) and https://github.com/pytorch/pytorch/blob/main/aten/src/ATen/cuda/tunable/README.md")
PIP_CONFIG = ("https://pip.pypa.io/en/stable/topics/configuration/ (PIP_CONFIG_FILE, PIP_REQUIRE_VIRTUALENV, "
              "PIP_NO_INDEX: read by pip only)")
ULIMIT_RT = ("https://man7.org/linux/man-pages/man2/getrlimit.2.html (RLIMIT_RTTIME: CPU time a process under a "
             "real-time scheduling policy may take without blocking; other processes are not bound by it) and "
             "https://www.gnu.org/software/bash/manual/html_node/Bash-Builtins.html (ulimit -R)")


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


def _wheel_soname(sites: list[str], stem: str) -> str:
    """The soname (stem.so.N) of a CUDA wheel library under nvidia/*/lib; '' if none."""
    for folder in sites:
        for name in sorted(glob.glob(os.path.join(folder, "nvidia", "*", "lib", stem + ".so.[0-9]*")), key=len):
            if re.fullmatch(re.escape(stem) + r"\.so\.\d+", os.path.basename(name)):
                return os.path.basename(name)
    return ""


def _elf_header(path: str) -> tuple[int, bool] | None:
    """(e_type, has PT_INTERP) of a 64-bit little-endian ELF file; None if it is not one."""
    try:
        with open(path, "rb") as handle:
            data = handle.read(4096)
    except OSError:
        return None
    if len(data) < 64 or data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        return None
    e_type, = struct.unpack_from("<H", data, 16)
    phoff, = struct.unpack_from("<Q", data, 32)
    phentsize, phnum = struct.unpack_from("<HH", data, 54)
    interp = False
    for index in range(phnum):
        at = phoff + index * phentsize
        if at + 4 <= len(data) and struct.unpack_from("<I", data, at)[0] == PT_INTERP:
            interp = True
    return e_type, interp


def _link(target: str, link: Path) -> None:
    link.parent.mkdir(parents=True, exist_ok=True)
    os.symlink(target, link)


def _jax_cuda_plugin(sites: list[str]) -> str:
    """The folder of JAX's CUDA PJRT plugin package (jax_plugins/<name>/ holding xla_cuda_plugin.so), where
    jax_plugins is a namespace package; '' if none."""
    for folder in sites:
        if os.path.exists(os.path.join(folder, "jax_plugins", "__init__.py")):
            continue
        for library in sorted(glob.glob(os.path.join(folder, "jax_plugins", "*", "xla_cuda_plugin.so"))):
            return os.path.dirname(library)
    return ""


# ------------------------------------------------------------------------------------------------ scenarios
def build_scenarios(machine: dict[str, object]) -> list[Scenario]:
    sites = _site_packages()
    cache = _ldconfig()
    found: list[Scenario] = []
    python = sys.executable  # not resolved: a virtual environment is found from the link's own folder
    root = os.geteuid() == 0

    def add(name: str, why: str, causes: tuple[str, ...], predicted: str, source: str, cause_class: str = "",
            **kwargs: object) -> None:
        scenario = Scenario(name, why, causes, predicted=predicted, cause_class=cause_class,
                            **kwargs)  # type: ignore[arg-type]
        scenario.source = source  # type: ignore[attr-defined]
        found.append(scenario)

    pip_cudnn = str(machine.get("pip_cudnn") or "")
    system_cudnn = str(machine.get("system_cudnn") or "")
    system_graph = os.path.join(os.path.dirname(system_cudnn), "libcudnn_graph.so.9") if system_cudnn else ""
    if system_graph and not os.path.exists(system_graph):
        system_graph = cache.get("libcudnn_graph.so.9", "")
    if system_graph and "site-packages" in os.path.realpath(system_graph):
        system_graph = ""
    stub = str(machine.get("stub") or "")
    libz = cache.get("libz.so.1", "")

    # 1. LD_PRELOAD entries given as relative paths: ld.so opens them from each program's working folder
    if system_graph:
        where = scratch("s17-preload-relative-graph")
        _link(os.path.realpath(system_graph), where / "lib" / "libcudnn_graph.so.9")
        add("s17-preload-relative-graph",
            "LD_PRELOAD=lib/libcudnn_graph.so.9 (a relative path, from a how-to run in a project that unpacked the "
            "system cuDNN 9.14's graph library into lib/), started in that project folder: the 9.14 graph library is "
            "preloaded into every program while the frameworks load cuDNN 9.19",
            ("CD317", "CD305"), "fails", LD_SO + "; " + CUDNN_LAYOUT,
            env={"LD_PRELOAD": "lib/libcudnn_graph.so.9"}, cwd=str(where))
        elsewhere = scratch("s17-preload-relative-elsewhere")
        add("s17-preload-relative-elsewhere",
            "the same LD_PRELOAD=lib/libcudnn_graph.so.9, started in a folder without lib/ (ld.so: 'cannot be "
            "preloaded (cannot open shared object file): ignored')",
            ("CD317",), "works", LD_SO + "; " + GLIBC_DL_LOAD,
            cause_class="a relative LD_PRELOAD entry that does not resolve from the programs' working folder",
            env={"LD_PRELOAD": "lib/libcudnn_graph.so.9"}, cwd=str(elsewhere))
    if stub:
        where = scratch("s17-preload-relative-stub")
        _link(stub, where / "lib" / "libcuda.so.1")
        add("s17-preload-relative-stub",
            "LD_PRELOAD=lib/libcuda.so.1 (relative), started in a build folder whose lib/libcuda.so.1 links to the "
            "toolkit's stubs/libcuda.so (made to link a program without a driver)",
            ("CD111",), "fails", LD_SO + "; https://docs.nvidia.com/cuda/cuda-runtime-api/driver-vs-runtime-api.html",
            env={"LD_PRELOAD": "lib/libcuda.so.1"}, cwd=str(where))

        nvml_stub = os.path.join(os.path.dirname(stub), "libnvidia-ml.so")
        if os.path.exists(nvml_stub):
            where = scratch("s17-preload-relative-nvml-stub")
            _link(nvml_stub, where / "lib" / "libnvidia-ml.so.1")
            add("s17-preload-relative-nvml-stub",
                "LD_PRELOAD=lib/libnvidia-ml.so.1 (relative), started in a monitoring project's folder whose "
                "lib/libnvidia-ml.so.1 links to the toolkit's stubs/libnvidia-ml.so (to build its exporter without a "
                "driver): every later request for NVML gets the stub", ("CD118",), "fails",
                LD_SO + "; https://docs.nvidia.com/deploy/nvml-api/index.html",
                cause_class="a link stub of NVML preloaded by a relative path (JAX asks NVML at start; torch does not)",
                env={"LD_PRELOAD": "lib/libnvidia-ml.so.1"}, cwd=str(where))

    # 2. Device files under library names first on LD_LIBRARY_PATH (a /dev/zero or /dev/null link left by a script
    #    that 'disabled' a library): ld.so reads no ELF header there and ends the search for that name
    where = scratch("s17-devzero-libcuda")
    _link("/dev/zero", where / "libcuda.so.1")
    add("s17-devzero-libcuda",
        "a folder first on LD_LIBRARY_PATH whose libcuda.so.1 is a link to /dev/zero (a script that 'switched off' the "
        "GPU for CPU tests)", ("CD101", "CD110", "CD113"), "fails", GLIBC_DL_LOAD,
        env={"LD_LIBRARY_PATH": str(where)})
    if pip_cudnn and os.path.exists(os.path.join(pip_cudnn, "libcudnn_graph.so.9")):
        where = scratch("s17-devzero-cudnn-graph")
        _link("/dev/zero", where / "libcudnn_graph.so.9")
        add("s17-devzero-cudnn-graph",
            "a folder first on LD_LIBRARY_PATH whose libcudnn_graph.so.9 is a link to /dev/zero (cuDNN's shim opens "
            "its graph library by name)", ("CD308", "CD304"), "fails", GLIBC_DL_LOAD + "; " + CUDNN_LAYOUT,
            env={"LD_LIBRARY_PATH": str(where)})
    if pip_cudnn and os.path.exists(os.path.join(pip_cudnn, "libcudnn_engines_precompiled.so.9")):
        where = scratch("s17-devzero-cudnn-engines")
        _link("/dev/zero", where / "libcudnn_engines_precompiled.so.9")
        add("s17-devzero-cudnn-engines",
            "a folder first on LD_LIBRARY_PATH whose libcudnn_engines_precompiled.so.9 (cuDNN's precompiled "
            "convolution engines) is a link to /dev/zero", ("CD308", "CD304"), "fails",
            GLIBC_DL_LOAD + "; " + CUDNN_LAYOUT, env={"LD_LIBRARY_PATH": str(where)})
    where = scratch("s17-devzero-nvml")
    _link("/dev/zero", where / "libnvidia-ml.so.1")
    add("s17-devzero-nvml",
        "a folder first on LD_LIBRARY_PATH whose libnvidia-ml.so.1 is a link to /dev/zero (NVML cannot be loaded at "
        "all, unlike a stub that loads and refuses)", ("CD118", "CD104"), "works", GLIBC_DL_LOAD,
        cause_class="an NVML that cannot be loaded, where the programs' GPU work does not need NVML",
        env={"LD_LIBRARY_PATH": str(where)})
    if pip_cudnn and os.path.exists(os.path.join(pip_cudnn, "libcudnn_adv.so.9")):
        where = scratch("s17-devzero-cudnn-adv")
        _link("/dev/zero", where / "libcudnn_adv.so.9")
        add("s17-devzero-cudnn-adv",
            "a folder first on LD_LIBRARY_PATH whose libcudnn_adv.so.9 (cuDNN's RNN sub-library, which only torch's "
            "LSTM loads) is a link to /dev/zero", ("CD308", "CD319"), "fails", GLIBC_DL_LOAD + "; " + CUDNN_LAYOUT,
            cause_class="a sub-library that only one framework's work loads, unreadable first on the path",
            env={"LD_LIBRARY_PATH": str(where)})
    jitlink = _wheel_soname(sites, "libnvJitLink")
    if jitlink:
        where = scratch("s17-devzero-nvjitlink")
        _link("/dev/zero", where / jitlink)
        add("s17-devzero-nvjitlink",
            f"a folder first on LD_LIBRARY_PATH whose {jitlink} is a link to /dev/zero (cuSPARSE asks the loader for "
            "it by name; torch preloads it by full path, JAX does not)", ("CD203", "CD409"), "fails",
            GLIBC_DL_LOAD + "; " + JAX_PLUGIN + "; " + TORCH_INIT,
            cause_class="a CUDA library other than cuDNN unreadable first on the path, reached by name through another",
            env={"LD_LIBRARY_PATH": str(where)})
    cufft = _wheel_soname(sites, "libcufft")
    if cufft:
        where = scratch("s17-devnull-cufft")
        _link("/dev/null", where / cufft)
        add("s17-devnull-cufft",
            f"a folder first on LD_LIBRARY_PATH whose {cufft} is a link to /dev/null (both frameworks load cuFFT by "
            "full path, and the judges compute no FFT)", ("CD203",), "works",
            GLIBC_DL_LOAD + "; " + JAX_PLUGIN + "; " + TORCH_INIT,
            cause_class="a library name on the path that no program asks the loader for",
            env={"LD_LIBRARY_PATH": str(where)})

    # 3. Compiled-extension files in the working folder (python -c searches it first, extension modules first)
    suffix = importlib.machinery.EXTENSION_SUFFIXES[0] if importlib.machinery.EXTENSION_SUFFIXES else ""
    tag = re.search(r"cpython-3(\d+)", suffix)
    ctypes_spec = importlib.util.find_spec("_ctypes")
    shadowable = bool(ctypes_spec and isinstance(ctypes_spec.loader, importlib.machinery.ExtensionFileLoader))
    if suffix and tag and shadowable:
        where = scratch("s17-cwd-ext-text")
        (where / ("_ctypes" + suffix)).write_text(LFS_POINTER)
        add("s17-cwd-ext-text",
            f"started in a project folder holding a Git LFS pointer (text) checked out as _ctypes{suffix} (a vendored "
            "build of Python's ctypes extension): `import ctypes` finds it first and fails", ("CD419",), "fails",
            PY_IMPORT, cause_class="a compiled extension module in the working folder shadowing the standard library's",
            cwd=str(where))
        if libz:
            where = scratch("s17-cwd-ext-foreign")
            shutil.copy2(os.path.realpath(libz), where / ("_ctypes" + suffix))
            add("s17-cwd-ext-foreign",
                f"started in a folder holding a real shared library (libz, copied by a packaging script under the "
                f"wrong name) as _ctypes{suffix}: it loads, but defines no PyInit__ctypes", ("CD419",), "fails",
                PY_IMPORT,
                cause_class="a compiled extension module in the working folder shadowing the standard library's",
                cwd=str(where))
        where = scratch("s17-cwd-ext-json")
        (where / ("_json" + suffix)).write_text(LFS_POINTER)
        add("s17-cwd-ext-json",
            f"started in a folder holding a Git LFS pointer as _json{suffix}: json imports its C accelerator under "
            "try/except ImportError and falls back to pure Python", ("CD419",), "works", PY_IMPORT,
            cause_class="a broken extension module whose importer falls back", cwd=str(where))
        where = scratch("s17-cwd-ext-pickle")
        (where / ("_pickle" + suffix)).write_text(LFS_POINTER)
        add("s17-cwd-ext-pickle",
            f"started in a folder holding a Git LFS pointer as _pickle{suffix}: pickle imports its C accelerator "
            "under try/except ImportError and falls back to pure Python (torch imports pickle)", ("CD419",), "works",
            PY_IMPORT + "; https://github.com/python/cpython/blob/main/Lib/pickle.py",
            cause_class="a broken extension module whose importer falls back", cwd=str(where))
        other = suffix.replace(f"cpython-3{tag.group(1)}", f"cpython-3{int(tag.group(1)) - 1}")
        where = scratch("s17-cwd-ext-other-python")
        (where / ("_ctypes" + other)).write_text(LFS_POINTER)
        add("s17-cwd-ext-other-python",
            f"started in a folder holding a text file named _ctypes{other} (another Python's tag: this interpreter "
            "never tries that suffix)", ("CD419",), "works", PY_IMPORT,
            cause_class="an extension file for another interpreter, never matched", cwd=str(where))

    # 4. XLA_FLAGS boolean values written as other programs write them
    flag = "--xla_gpu_enable_latency_hiding_scheduler"
    add("s17-xla-bool-capital", f"XLA_FLAGS={flag}=True (Python's spelling of a boolean)", ("CD411",), "fails",
        XLA_BOOL, env={"XLA_FLAGS": f"{flag}=True"})
    add("s17-xla-bool-one", f"XLA_FLAGS={flag}=1 (a boolean given as a number)", ("CD411",), "fails", XLA_BOOL,
        env={"XLA_FLAGS": f"{flag}=1"})
    add("s17-xla-bool-bare", f"XLA_FLAGS={flag} (the flag alone, without a value: true)", ("CD411",), "works",
        XLA_BOOL, env={"XLA_FLAGS": flag})

    # 5. Python start-up hooks that end the interpreter or are never read
    guard = scratch("s17-site-guard-exit")
    (guard / "sitecustomize.py").write_text(
        "import os, sys\n"
        "# site guard: no jobs on login nodes\n"
        "if not os.environ.get('SLURM_JOB_ID'):\n"
        "    sys.exit('run this on a compute node (srun ...)')\n")
    add("s17-site-guard-exit",
        "PYTHONPATH names a site tools folder whose sitecustomize.py calls sys.exit() outside a Slurm job (a "
        "login-node guard): SystemExit is not an Exception, so Python's start-up itself stops ('Fatal Python error: "
        "init_import_site')", (), "fails", PY_SITE,
        cause_class="a Python start-up hook on PYTHONPATH that ends every Python before its program runs (no cause "
                    "code fits: the frameworks are never reached)",
        env={"PYTHONPATH": str(guard)})
    user_hook = scratch("s17-usercustomize-on-path")
    (user_hook / "usercustomize.py").write_text("import os\nos.environ['CUDA_VISIBLE_DEVICES'] = ''\n")
    reads_user_site = bool(site.ENABLE_USER_SITE) and sys.prefix == sys.base_prefix
    add("s17-usercustomize-on-path",
        "PYTHONPATH names a folder whose usercustomize.py empties CUDA_VISIBLE_DEVICES inside Python (Python imports "
        "usercustomize only where it reads a user site: never in a virtual environment)",
        ("CD113",), "fails" if reads_user_site else "works", PY_SITE,
        cause_class="a user start-up hook placed on PYTHONPATH, read only where the interpreter reads a user site",
        env={"PYTHONPATH": str(user_hook)})
    stale = scratch("s17-sitecustomize-pycache-only")
    (stale / "sitecustomize.py").write_text("import os\nos.environ['CUDA_VISIBLE_DEVICES'] = '-1'\n")
    try:
        py_compile.compile(str(stale / "sitecustomize.py"), doraise=True)
        compiled = True
    except (py_compile.PyCompileError, OSError):
        compiled = False
    (stale / "sitecustomize.py").unlink()
    if compiled:
        add("s17-sitecustomize-pycache-only",
            "PYTHONPATH names a folder where only __pycache__/sitecustomize.cpython-*.pyc is left of a hook that hid "
            "the GPUs (its source deleted): Python never imports a cached .pyc without its source",
            ("CD113",), "works", PY_SITE, cause_class="stale bytecode of a start-up hook that Python never reads",
            env={"PYTHONPATH": str(stale)})

    # 6. Folders that only their permission bits keep from being written (root writes anyway)
    for name, why, env, fails_as_user in (
            ("s17-tmpdir-mode-555", "TMPDIR names a folder of mode 0555 (a shared scratch folder made read-only by "
             "an admin)", {"TMPDIR": "{dir}"}, True),
            ("s17-home-mode-555", "HOME names a folder of mode 0555 with the XDG folders unset (CUDA's JIT cache and "
             "every cache under HOME cannot be made by an ordinary user)", {"HOME": "{dir}"}, False),
            ("s17-jax-cache-mode-555", "JAX_COMPILATION_CACHE_DIR names a folder of mode 0555 with "
             "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS=0 (every compilation written there)",
             {"JAX_COMPILATION_CACHE_DIR": "{dir}", "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0"}, False)):
        folder = scratch(name)
        (folder / "inside").mkdir()
        os.chmod(folder / "inside", 0o555)
        add(name, why + (": the judges run as root, which writes there anyway" if root else ""),
            ("CD417",), "fails" if (fails_as_user and not root) else "works", TMP_DIRS + "; " + JAX_CACHE,
            cause_class="a folder unwritable by its permission bits only (root is not bound by them)",
            env={key: value.replace("{dir}", str(folder / "inside")) for key, value in env.items()},
            unset=("XDG_CACHE_HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME") if "HOME" in env else ())

    # 7. Another process on the GPU that was stopped (Ctrl-Z) while holding its context and memory
    neighbour = ("import os, signal, torch\n"
                 "held = torch.empty(1 << 30, dtype=torch.uint8, device='cuda'); torch.cuda.synchronize()\n"
                 "os.kill(os.getpid(), signal.SIGSTOP)\n")
    add("s17-stopped-neighbour",
        "another user's torch program holding 1 GiB and its CUDA context was stopped (Ctrl-Z, SIGSTOP) and is never "
        "resumed while each program runs (started 8 s before it, killed after 60 s)",
        ("CD115", "CD139"), "works", GPU_SHARING,
        cause_class="a stopped process holding a context on the same GPU",
        shell=(f"( timeout -s KILL 60 {shlex.quote(python)} -c {shlex.quote(neighbour)} >/dev/null 2>&1 & ); "
               "sleep 8"), alone=False)

    # 8. CUDA driver variables never set by a round: the MPS-era L2 set-aside default, an empty loading mode
    add("s17-cuda-l2-persisting-50",
        "CUDA_DEVICE_DEFAULT_PERSISTING_L2_CACHE_PERCENTAGE_LIMIT=50 (from an MPS tuning guide, set in a plain shell)",
        ("CD416", "CD414"), "works", CUDA_L2, cause_class="a CUDA variable read only when an MPS server starts",
        env={"CUDA_DEVICE_DEFAULT_PERSISTING_L2_CACHE_PERCENTAGE_LIMIT": "50"})
    add("s17-cuda-l2-persisting-250",
        "CUDA_DEVICE_DEFAULT_PERSISTING_L2_CACHE_PERCENTAGE_LIMIT=250 (a percentage above 100)",
        ("CD416", "CD414"), "works", CUDA_L2, cause_class="a CUDA variable read only when an MPS server starts",
        env={"CUDA_DEVICE_DEFAULT_PERSISTING_L2_CACHE_PERCENTAGE_LIMIT": "250"})
    add("s17-cuda-module-loading-empty",
        "CUDA_MODULE_LOADING set but empty (`export CUDA_MODULE_LOADING=$MODE` with MODE unset)",
        ("CD416", "CD414"), "works", CUDA_L2, cause_class="a CUDA enum variable set to the empty string",
        env={"CUDA_MODULE_LOADING": ""})

    # 9. cuBLASLt's heuristics cache
    add("s17-cublaslt-heuristics-off", "CUBLASLT_HEURISTICS_CACHE_CAPACITY=0 (cuBLASLt's heuristics cache off)",
        ("CD416",), "works", CUBLASLT_CACHE, cause_class="a cuBLASLt tuning variable at a documented value",
        env={"CUBLASLT_HEURISTICS_CACHE_CAPACITY": "0"})
    add("s17-cublaslt-heuristics-word", "CUBLASLT_HEURISTICS_CACHE_CAPACITY=unlimited (a word where a count goes)",
        ("CD416", "CD414"), "works", CUBLASLT_CACHE, cause_class="a cuBLASLt tuning variable that is not a number",
        env={"CUBLASLT_HEURISTICS_CACHE_CAPACITY": "unlimited"})

    # 10. LD_PRELOAD of ELF files that are not shared libraries
    true = shutil.which("true") or "/bin/true"
    header = _elf_header(os.path.realpath(true))
    if header and header[0] == 3 and header[1]:
        add("s17-preload-pie-program",
            f"LD_PRELOAD={os.path.realpath(true)} (a position-independent program, not a library: 'cannot dynamically "
            "load position-independent executable', ignored)", ("CD308", "CD317"), "works", GLIBC_DL_LOAD,
            cause_class="a preload entry the loader refuses and ignores",
            env={"LD_PRELOAD": os.path.realpath(true)})
    if libz:
        where = scratch("s17-preload-object-file")
        data = bytearray(Path(os.path.realpath(libz)).read_bytes())
        data[16:18] = struct.pack("<H", ET_REL)
        (where / "libgpumon.so").write_bytes(bytes(data))
        add("s17-preload-object-file",
            "LD_PRELOAD of a monitoring hook that is a relocatable object (ELF type ET_REL, a .o renamed .so by a "
            "broken build): 'only ET_DYN and ET_EXEC can be loaded', ignored", ("CD308", "CD317"), "works",
            GLIBC_DL_LOAD, cause_class="a preload entry the loader refuses and ignores",
            env={"LD_PRELOAD": str(where / "libgpumon.so")})

    # 11. The loader's profiling of one shared object
    profile = scratch("s17-ld-profile")
    add("s17-ld-profile-cudnn",
        "LD_PROFILE=libcudnn.so.9 with LD_PROFILE_OUTPUT naming a writable folder (the loader counts calls through "
        "cuDNN's PLT into libcudnn.so.9.profile, as sprof reads it)", ("CD309",), "works", LD_SO,
        cause_class="the loader's profiling switch on a library the frameworks load",
        env={"LD_PROFILE": "libcudnn.so.9", "LD_PROFILE_OUTPUT": str(profile)})

    # 12. A TunableOp results file written on another machine
    tunable = scratch("s17-tunableop-foreign")
    results = (
        "Validator,PT_VERSION,2.4.0\n"
        "Validator,ROCM_VERSION,6.1.0-82\n"
        "Validator,HIPBLASLT_VERSION,800-a5ae7d9\n"
        "Validator,GCN_ARCH_NAME,gfx942:sramecc+:xnack-\n"
        "GemmTunableOp_float_NT,nt_512_80_64_ld_512_64_512,Gemm_Hipblaslt_1_4617,0.00913\n"
        "GemmTunableOp_float_TN,tn_64_80_512,Default,0.0114\n")
    for name in ("tunableop_results.csv", "tunableop_results0.csv"):  # torch may insert the device ordinal
        (tunable / name).write_text(results)
    add("s17-tunableop-foreign-results",
        "TunableOp on with tuning off, its results file one copied from an AMD MI300 machine (its validators name "
        "ROCm, hipBLASLt and torch 2.4): PYTORCH_TUNABLEOP_ENABLED=1, PYTORCH_TUNABLEOP_TUNING=0, "
        "PYTORCH_TUNABLEOP_FILENAME=<that file>", ("CD411", "CD414"), "works", TUNABLEOP,
        cause_class="a framework's tuning results file from another machine, not used",
        env={"PYTORCH_TUNABLEOP_ENABLED": "1", "PYTORCH_TUNABLEOP_TUNING": "0",
             "PYTORCH_TUNABLEOP_FILENAME": str(tunable / "tunableop_results.csv")})

    # 13. JAX's persistent cache switched off beside a cache folder that could not be used
    add("s17-jax-cache-off-proc",
        "JAX_ENABLE_COMPILATION_CACHE=false beside JAX_COMPILATION_CACHE_DIR under /proc (nothing can be made there) "
        "with JAX_PERSISTENT_CACHE_ENABLE_XLA_CACHES=all: the cache is off, so the folder is never used",
        ("CD417", "CD411"), "works", JAX_CACHE,
        cause_class="a cache folder that cannot be used, with the cache itself switched off",
        env={"JAX_ENABLE_COMPILATION_CACHE": "false", "JAX_COMPILATION_CACHE_DIR": "/proc/s17-jax-cache",
             "JAX_PERSISTENT_CACHE_ENABLE_XLA_CACHES": "all", "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0"})

    # 14. A package manager's configuration the programs never read
    pip_conf = scratch("s17-pip-config")
    (pip_conf / "pip.conf").write_text("[global\nindex-url = http://pypi.internal.example/simple\ntimeout = soon\n")
    add("s17-pip-config-broken",
        "PIP_CONFIG_FILE naming a pip.conf with an unclosed section header, PIP_REQUIRE_VIRTUALENV=true and "
        "PIP_NO_INDEX=1 (pip's own settings; no judge runs pip)", ("CD523",), "works", PIP_CONFIG,
        cause_class="a package manager's configuration that only pip reads",
        env={"PIP_CONFIG_FILE": str(pip_conf / "pip.conf"), "PIP_REQUIRE_VIRTUALENV": "true", "PIP_NO_INDEX": "1"})

    # 15. A real-time CPU-time limit (binds only real-time scheduled processes)
    add("s17-ulimit-rttime", "ulimit -R 1000 (1 ms of real-time CPU time without blocking, from a low-latency "
        "audio setup's limits)", ("CD116",), "works", ULIMIT_RT,
        cause_class="a process limit that binds only real-time scheduled processes",
        shell="ulimit -S -R 1000")

    # 16. A second copy of JAX's CUDA plugin under another module name (two registrations of one platform)
    plugin = _jax_cuda_plugin(sites)
    if plugin:
        where = scratch("s17-jax-plugin-twin")
        twin = where / "jax_plugins" / (os.path.basename(plugin) + "_local")
        twin.mkdir(parents=True)
        for entry in sorted(os.listdir(plugin)):
            if entry != "__pycache__":
                os.symlink(os.path.join(plugin, entry), twin / entry)
        add("s17-jax-plugin-twin",
            f"PYTHONPATH names a folder holding jax_plugins/{twin.name}/, a second copy (links) of JAX's installed "
            f"CUDA plugin package {os.path.basename(plugin)} under another module name: JAX initialises both and the "
            "second registration of the same platform is logged and skipped", ("CD421",), "works", JAX_PLUGIN,
            cause_class="two plugin packages registering one PJRT platform",
            env={"PYTHONPATH": str(where)})
    return found
