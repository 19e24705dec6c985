"""Round 16's sealed GPU scenarios for issue 45: classes neither the built-in suite nor rounds 5-15 took.

SEALED: not to be read by whoever builds the code for issue 45. Run it with the harness, on the GPU machine:

    timeout 300 python3 benchmarks/gpu_scenarios.py --scenarios .sealed/round16/scenarios45/scenarios.py \
        --out "$OUT/s16" --quiet-cases --budget-s 230

Every scenario bends ONE shell's environment: variables, files written at build time under
/tmp/cudnn-doctor-scenarios/s16-* (symbolic links to real libraries found on the machine, copies of small system
libraries cut in half or with their ELF machine field changed, text files where a library or a flag file is expected, a
copy of the JAX CUDA plugin's Python files), the working folder, a light second GPU program started beside each
program. Sources are found at build time from the judges' own Python (the harness's interpreter: its site-packages,
the CUDA wheels' `nvidia/*/lib` folders and dist-info METADATA, the JAX plugin package, the interpreter's own ELF
header), the loader's cache (libz, libstdc++, libgcc_s), the CUDA toolkit under /usr/local. A scenario whose source is
missing is left out. No installed file is written, nothing outside /tmp, no network, no GPU setting is touched, no
scenario runs alone.

`causes` are codes of cudnn_doctor/codes.py (names and one-line meanings only) that a right answer names if the setup
fails; for a scenario predicted to work, `causes` holds the code a wrong answer would most likely raise. Where no code
fits, or fits only partly, `cause_class` says the class in words. `predicted` is the author's guess before any run;
the judges decide. Each scenario also carries `source` (an attribute the harness ignores).
"""

from __future__ import annotations

import glob
import os
import re
import shlex
import shutil
import struct
import subprocess
import sys
import sysconfig
from importlib.util import find_spec
from pathlib import Path

from gpu_scenarios import Scenario, scratch

LFS_POINTER = ("version https://git-lfs.github.com/spec/v1\n"
               "oid sha256:6f1e0c2b9a8d7e6f5a4b3c2d1e0f9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c4d3e2f\n"
               "size 1974273\n")
EM_AARCH64 = 183
DT_NEEDED, DT_STRTAB, DT_RPATH, DT_RUNPATH = 1, 5, 15, 29

# the CUDA wheel libraries JAX's CUDA plugin loads by full path from nvidia/cu13/lib (jax_plugins/cuda/__init__.py)
JAX_CU13_PRELOADS = ("libcudart.so.13", "libnvrtc.so.13", "libcublas.so.13", "libcublasLt.so.13", "libcupti.so.13",
                     "libcusparse.so.12", "libcusolver.so.12", "libcufft.so.12")
JAX_OTHER_PRELOADS = ("libnccl.so.2", "libnvshmem_host.so.3", "libcudnn.so.9")
C_RUNTIME = ("libc.so.6", "libm.so.6", "libdl.so.2", "libpthread.so.0", "librt.so.1", "libgcc_s.so.1",
             "libstdc++.so.6", "ld-linux-x86-64.so.2")

CUDA_ENV = "https://docs.nvidia.com/cuda/cuda-programming-guide/05-appendices/environment-variables.html"
JAX_PLUGIN = ("https://github.com/jax-ml/jax/blob/main/jax_plugins/cuda/__init__.py (initialize(): _get_library_path "
              "looks for xla_cuda_plugin.so beside the package's own __init__.py and returns without registering the "
              "CUDA backend when it is not there; _load_nvidia_libraries loads the CUDA wheel libraries by full path "
              "from nvidia.cu13's first __path__ entry and goes on silently when that fails)")
PY_IMPORT = ("https://docs.python.org/3/reference/import.html#namespace-packages and "
             "https://peps.python.org/pep-0420/ (a namespace package's portions follow sys.path order; PYTHONPATH and "
             "the working folder of python -c come before site-packages)")
LD_SO = ("https://man7.org/linux/man-pages/man8/ld.so.8.html (LD_LIBRARY_PATH before DT_RUNPATH; LD_PRELOAD; "
         "$ORIGIN is the folder of the path the object was loaded by)")
GLIBC_DL_LOAD = ("https://sourceware.org/git/?p=glibc.git;a=blob;f=elf/dl-load.c (open_verify: a file whose header "
                 "is not ELF ends the search with 'invalid ELF header'; a file for another machine is skipped and the "
                 "search goes on; segments are mapped as the headers say, so a cut file faults)")
CUDNN_DEPS = ("https://docs.nvidia.com/deeplearning/cudnn/installation/latest/linux.html (cuDNN's sub-libraries "
              "depend on zlib) and the wheel's own DT_NEEDED entries, read at build time")
TORCH_INIT = ("https://github.com/pytorch/pytorch/blob/main/torch/__init__.py (_load_global_deps, _preload_cuda_deps: "
              "the wheels' CUDA libraries loaded by full path)")
NVJITLINK_ISSUE = "https://github.com/pytorch/pytorch/issues/138460 (cuSPARSE takes nvJitLink through LD_LIBRARY_PATH)"
XLA_PARSE = ("https://github.com/openxla/xla/blob/main/xla/parse_flags_from_env.cc (XLA_FLAGS: a value that does not "
             "start with '-' is read as a file of flags, split on white space; an unknown flag is fatal)")
XLA_FLAGS_DOC = ("https://openxla.org/xla/flags_guidance and https://github.com/openxla/xla/blob/main/xla/xla.proto "
                 "(DebugOptions: xla_gpu_force_conv_nhwc, xla_gpu_strict_conv_algorithm_picker, "
                 "xla_gpu_require_exclusive_lock, xla_gpu_experimental_disable_binary_libraries, xla_gpu_cuda_data_dir) "
                 "and https://github.com/openxla/xla/blob/main/xla/service/gpu/nvptx_compiler.cc (ConvRewriter and the "
                 "cuDNN passes added only without xla_gpu_experimental_disable_binary_libraries)")
XLA_TMP = ("https://github.com/openxla/xla/blob/main/xla/tsl/platform/default/env.cc (GetLocalTempDirectories: "
           "TEST_TMPDIR, TMPDIR, TMP, /tmp; the first that is a folder holds the PTX handed to ptxas) and "
           "https://docs.python.org/3/library/tempfile.html#tempfile.gettempdir (Python skips a folder it cannot "
           "write)")
JAX_BRIDGE = ("https://github.com/jax-ml/jax/blob/main/jax/_src/xla_bridge.py (JAX_PLATFORMS split on ',', each "
              "name looked up as written; an empty value means every platform) and "
              "https://docs.jax.dev/en/latest/config_options.html")
JAX_CACHE = ("https://docs.jax.dev/en/latest/persistent_compilation_cache.html and "
             "https://github.com/jax-ml/jax/blob/main/jax/_src/path.py (etils.epath if installed, else pathlib)")
TF_ENV = ("https://www.tensorflow.org/xla (TF_XLA_FLAGS, read by TensorFlow's own XLA bridge) and "
          "https://github.com/openxla/xla/blob/main/xla/debug_options_flags.cc (jaxlib reads XLA_FLAGS only)")
CUBLAS_ENV = ("https://docs.nvidia.com/cuda/cublas/index.html#cublas-logging (CUBLAS_LOGINFO_DBG, CUBLAS_LOGDEST_DBG) "
              "and https://docs.nvidia.com/cuda/cublas/index.html#results-reproducibility (CUBLAS_WORKSPACE_CONFIG); "
              "https://github.com/pytorch/pytorch/blob/main/aten/src/ATen/cuda/CublasHandlePool.cpp (torch's reader)")
CUDNN_LOG = ("https://docs.nvidia.com/deeplearning/cudnn/backend/latest/reference/troubleshooting.html "
             "(CUDNN_LOGLEVEL_DBG replaces CUDNN_LOGINFO_DBG, CUDNN_LOGWARN_DBG and CUDNN_LOGERR_DBG)")
TORCH_MPS = ("https://docs.pytorch.org/docs/stable/mps_environment_variables.html and "
             "https://rocm.docs.amd.com/projects/install-on-linux/en/latest/reference/system-requirements.html "
             "(HSA_OVERRIDE_GFX_VERSION, read by ROCm's runtime only)")
OTHER_GPU_PY = ("https://docs.cupy.dev/en/stable/reference/environment.html and "
                "https://numba.readthedocs.io/en/stable/reference/envvars.html (read by CuPy and Numba only)")
BASH_JOBS = "https://www.gnu.org/software/bash/manual/html_node/Job-Control-Basics.html"
NVIDIA_SMI_SHARING = ("https://docs.nvidia.com/deploy/mps/index.html (without MPS, processes on one GPU share it by "
                      "time slicing)")


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
    """Version: of the first dist-info matching PATTERN (e.g. nvidia_nvjitlink*)."""
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


def _file_release(path: str) -> tuple[int, int] | None:
    """(major, minor) from a real file name such as libnvJitLink.so.13.0.88."""
    return _major_minor(os.path.basename(os.path.realpath(path)).split(".so.", 1)[-1])


def _dynamic(path: str) -> dict[str, list[str]]:
    """DT_NEEDED, DT_RPATH and DT_RUNPATH of a 64-bit little-endian ELF file ({} if it cannot be read)."""
    try:
        data = Path(path).read_bytes()
    except OSError:
        return {}
    if len(data) < 64 or data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        return {}
    phoff, = struct.unpack_from("<Q", data, 32)
    phentsize, phnum = struct.unpack_from("<HH", data, 54)
    loads, dynamic = [], None
    for index in range(phnum):
        p_type, _flags, p_offset, p_vaddr, _paddr, p_filesz = struct.unpack_from("<IIQQQQ", data,
                                                                               phoff + index * phentsize)
        if p_type == 1:
            loads.append((p_vaddr, p_offset, p_filesz))
        elif p_type == 2:
            dynamic = (p_offset, p_filesz)
    if dynamic is None:
        return {}
    entries = []
    for offset in range(dynamic[0], dynamic[0] + dynamic[1], 16):
        tag, value = struct.unpack_from("<qQ", data, offset)
        if tag == 0:
            break
        entries.append((tag, value))
    strtab = next((value for tag, value in entries if tag == DT_STRTAB), None)
    if strtab is None:
        return {}
    base = next((off + strtab - vaddr for vaddr, off, size in loads if vaddr <= strtab < vaddr + size), None)
    if base is None:
        return {}

    def text(at: int) -> str:
        end = data.index(b"\0", base + at)
        return data[base + at:end].decode(errors="replace")

    found: dict[str, list[str]] = {"needed": [], "rpath": [], "runpath": []}
    for tag, value in entries:
        key = {DT_NEEDED: "needed", DT_RPATH: "rpath", DT_RUNPATH: "runpath"}.get(tag)
        if key:
            found[key].append(text(value))
    return found


def _starters_need() -> set[str]:
    """What the programs of every scenario need before any framework runs: bash and the judges' interpreter (with its
    libpython). A library in this set, broken first on the path, would stop every program, the doctor's too."""
    needed: set[str] = set()
    libdir = str(sysconfig.get_config_var("LIBDIR") or "")
    for path in (shutil.which("bash") or "/bin/bash", os.path.realpath(sys.executable)):
        own = _dynamic(path).get("needed", [])
        needed.update(own)
        for name in own:
            if name.startswith("libpython"):
                for where in (libdir, os.path.join(os.path.dirname(os.path.realpath(sys.executable)), "..", "lib")):
                    if os.path.isfile(os.path.join(where, name)):
                        needed.update(_dynamic(os.path.join(where, name)).get("needed", []))
                        break
    return needed


def _other_machine_copy(source: str, target: Path) -> None:
    """A copy of SOURCE whose ELF header says AArch64 (what a home shared with ARM nodes holds)."""
    data = bytearray(Path(source).read_bytes())
    data[18:20] = struct.pack("<H", EM_AARCH64)
    target.write_bytes(bytes(data))


def _cut_copy(source: str, target: Path) -> None:
    """The first half of SOURCE (a copy interrupted by a full disk or a killed rsync)."""
    data = Path(source).read_bytes()
    target.write_bytes(data[:len(data) // 2])


def _toolkit_lib(soname: str) -> str:
    """The CUDA toolkit's own file of SONAME under /usr/local (real path), '' if none."""
    found = sorted(glob.glob(f"/usr/local/cuda-*/targets/x86_64-linux/lib/{soname}")
                   + glob.glob(f"/usr/local/cuda-*/lib64/{soname}") + glob.glob(f"/usr/local/cuda/lib64/{soname}"))
    return os.path.realpath(found[0]) if found else ""


def _jax_plugin_folder(sites: list[str]) -> tuple[str, bool]:
    """The installed JAX CUDA plugin package (jax_plugins/<name>, the one holding xla_cuda_plugin.so) and whether
    jax_plugins is a namespace package there (no __init__.py)."""
    for site in sites:
        for folder in sorted(glob.glob(os.path.join(site, "jax_plugins", "*"))):
            if os.path.isfile(os.path.join(folder, "__init__.py")) and \
                    os.path.exists(os.path.join(folder, "xla_cuda_plugin.so")):
                return folder, not os.path.exists(os.path.join(site, "jax_plugins", "__init__.py"))
    return "", False


# ------------------------------------------------------------------------------------------------ scenarios
def build_scenarios(machine: dict[str, object]) -> list[Scenario]:
    sites = _site_packages()
    cache = _ldconfig()
    starters = _starters_need()
    scenarios: list[Scenario] = []

    def add(scenario: Scenario, source: str) -> None:
        scenario.source = source  # type: ignore[attr-defined]
        scenarios.append(scenario)

    def folder(name: str) -> Path:
        return scratch("s16-" + name)

    # 1. The driver's device-order switch as shells and env files leave it (a value outside its two words makes
    #    cuInit refuse, round fourteen's run showed; whether case and white space count is the question).
    for name, value, why, predicted in (
            ("s16-device-order-lowercase", "pci_bus_id", "CUDA_DEVICE_ORDER=pci_bus_id (lower case, as a Python "
             "script's str.lower() of a config value wrote it)", "fails"),
            ("s16-device-order-crlf", "PCI_BUS_ID\r", "CUDA_DEVICE_ORDER='PCI_BUS_ID\\r' (an env file with CRLF line "
             "ends, sourced by a job script)", "fails"),
            ("s16-device-order-trailing-space", "PCI_BUS_ID ", "CUDA_DEVICE_ORDER='PCI_BUS_ID ' (a trailing space "
             "from a copied profile line)", "fails"),
            ("s16-device-order-empty", "", "CUDA_DEVICE_ORDER set but empty (`export CUDA_DEVICE_ORDER=$ORDER` with "
             "ORDER unset)", "works")):
        add(Scenario(name, why, ("CD416", "CD411", "CD113"), env={"CUDA_DEVICE_ORDER": value}, predicted=predicted,
                     cause_class="the CUDA driver's device-order variable spelled as shells leave it: cuInit refuses a "
                                 "word it does not know, so no program sees the GPU"), CUDA_ENV)

    # 2. JAX's CUDA plugin package copied (its Python files only) into a folder on PYTHONPATH: jax_plugins is a
    #    namespace package, so the copy is found before the installed one.
    plugin, namespace = _jax_plugin_folder(sites)
    if plugin and namespace:
        name = os.path.basename(plugin)
        real_so = os.path.join(plugin, "xla_cuda_plugin.so")
        for label in ("python-only", "with-library"):
            where = folder("jax-plugin-" + label)
            copy = where / "jax_plugins" / name
            copy.mkdir(parents=True)
            for source in glob.glob(os.path.join(plugin, "*.py")):
                shutil.copy2(source, copy / os.path.basename(source))
            if label == "with-library":
                os.symlink(real_so, copy / "xla_cuda_plugin.so")
                needed = _dynamic(real_so).get("needed", [])
                preloaded = set(JAX_CU13_PRELOADS) | set(JAX_OTHER_PRELOADS)
                unreached = [n for n in needed if n not in preloaded and n not in cache and n not in C_RUNTIME
                             and not n.startswith("libcuda.so")]
                add(Scenario("s16-jax-plugin-copy-with-library", f"PYTHONPATH names a patches folder holding a copy "
                             f"of jax_plugins/{name}'s Python files (edited to print the CUDA versions it checks) "
                             "beside a symbolic link to the installed xla_cuda_plugin.so ($ORIGIN then names the "
                             "patches folder)", ("CD419", "CD421"), env={"PYTHONPATH": str(where)},
                             predicted="fails" if unreached else "works",
                             cause_class="a framework's plugin package shadowed by a copy that still reaches the "
                                         "installed native library"),
                    JAX_PLUGIN + "; " + PY_IMPORT + "; " + LD_SO)
            else:
                add(Scenario("s16-jax-plugin-copy-python-only", f"PYTHONPATH names a patches folder holding a copy of "
                             f"jax_plugins/{name}'s Python files only (copied to patch its version check; the native "
                             "library was not copied)", ("CD419", "CD421"), env={"PYTHONPATH": str(where)},
                             predicted="fails",
                             cause_class="a framework's plugin package shadowed by a copy without its native library: "
                                         "JAX starts without its CUDA backend"),
                    JAX_PLUGIN + "; " + PY_IMPORT)

    # 3. The CUDA toolkit's own copies of the wheels' CUDA libraries reaching the frameworks.
    wheel_jitlink = _wheel_lib(sites, "libnvJitLink")
    if wheel_jitlink:
        soname = os.path.basename(wheel_jitlink)
        kit = _toolkit_lib(soname)
        if kit:
            kit_release = _file_release(kit)
            wheel_release = _major_minor(_wheel_version(sites, "nvidia_nvjitlink*")) or _file_release(wheel_jitlink)
            older = kit_release is not None and wheel_release is not None and kit_release < wheel_release
            where = folder("toolkit-nvjitlink")
            os.symlink(kit, where / soname)
            add(Scenario("s16-toolkit-nvjitlink-alone", f"a folder first on LD_LIBRARY_PATH holding only {soname}, "
                         f"linked to the CUDA toolkit's (release {kit_release}) while the wheels' is {wheel_release} "
                         "(left from building a CUDA extension)", ("CD203", "CD410"),
                         env={"LD_LIBRARY_PATH": str(where)}, predicted="fails" if older else "works",
                         cause_class="a CUDA library's own dependency (nvJitLink under cuSPARSE) taken from the "
                                     "toolkit through LD_LIBRARY_PATH"),
                NVJITLINK_ISSUE + "; " + JAX_PLUGIN + "; " + LD_SO)
    kit_cudart, kit_nvrtc = _toolkit_lib("libcudart.so.13"), _toolkit_lib("libnvrtc.so.13")
    if kit_cudart and kit_nvrtc and _wheel_lib(sites, "libcudart"):
        add(Scenario("s16-preload-toolkit-runtime", f"LD_PRELOAD of the CUDA toolkit's libcudart and libnvrtc (release "
                     f"{_file_release(kit_cudart)}; the wheels' are "
                     f"{_wheel_version(sites, 'nvidia_cuda_runtime*') or 'unknown'}), from a how-to for a C++ "
                     "extension", ("CD203", "CD410", "CD317"), env={"LD_PRELOAD": f"{kit_cudart}:{kit_nvrtc}"},
                     predicted="works",
                     cause_class="the toolkit's CUDA runtime preloaded beside the wheels' (two copies in one process)"),
            LD_SO + "; " + TORCH_INIT + "; " + JAX_PLUGIN)

    # 4. A library the CUDA libraries and frameworks depend on, from outside CUDA, broken first on LD_LIBRARY_PATH
    #    (a project's vendored lib folder). Left out where bash or the judges' interpreter itself needs it.
    wheel_cudnn = _wheel_lib(sites, "libcudnn")
    cudnn_libs = sorted(glob.glob(os.path.join(os.path.dirname(wheel_cudnn), "libcudnn*.so.9"))) if wheel_cudnn else []
    cudnn_needs_z = [os.path.basename(p) for p in cudnn_libs if "libz.so.1" in _dynamic(p).get("needed", [])]
    libz = os.path.realpath(cache["libz.so.1"]) if "libz.so.1" in cache else ""
    z_why = (f" ({', '.join(cudnn_needs_z)} of the cuDNN wheel need it)" if cudnn_needs_z else
             " (no cuDNN wheel library here needs it)")
    if libz and "libz.so.1" not in starters:
        where = folder("libz-lfs")
        (where / "libz.so.1").write_text(LFS_POINTER)
        add(Scenario("s16-libz-lfs", "a Git LFS pointer (text) checked out as libz.so.1 in a project's vendored lib "
                     "folder first on LD_LIBRARY_PATH" + z_why, ("CD307", "CD319", "CD203"),
                     env={"LD_LIBRARY_PATH": str(where)}, predicted="fails" if cudnn_needs_z else "works",
                     cause_class="a dependency of the CUDA libraries from outside CUDA (zlib) broken first on the "
                                 "path: the loader stops at it"),
            GLIBC_DL_LOAD + "; " + CUDNN_DEPS)
        where = folder("libz-cut")
        _cut_copy(libz, where / "libz.so.1")
        add(Scenario("s16-libz-cut", "the first half of the system's libz.so.1 (an interrupted rsync of a lib folder) "
                     "first on LD_LIBRARY_PATH" + z_why, ("CD307", "CD309", "CD203"),
                     env={"LD_LIBRARY_PATH": str(where)}, predicted="fails" if cudnn_needs_z else "works",
                     cause_class="a dependency of the CUDA libraries from outside CUDA (zlib) cut short first on the "
                                 "path: whatever loads it faults"),
            GLIBC_DL_LOAD + "; " + CUDNN_DEPS)
    if libz:
        where = folder("libz-arm")
        _other_machine_copy(libz, where / "libz.so.1")
        add(Scenario("s16-libz-arm", "an AArch64 libz.so.1 (a shared home's lib folder filled on ARM nodes) first on "
                     "LD_LIBRARY_PATH (the loader skips a file for another machine)", ("CD307", "CD308", "CD203"),
                     env={"LD_LIBRARY_PATH": str(where)}, predicted="works"), GLIBC_DL_LOAD + "; " + CUDNN_DEPS)
    cxx = os.path.realpath(cache["libstdc++.so.6"]) if "libstdc++.so.6" in cache else ""
    if cxx and "libstdc++.so.6" not in starters:
        where = folder("libstdcxx-lfs")
        (where / "libstdc++.so.6").write_text(LFS_POINTER)
        add(Scenario("s16-libstdcxx-lfs", "a Git LFS pointer (text) checked out as libstdc++.so.6 in a project's "
                     "vendored lib folder first on LD_LIBRARY_PATH (every C++ library asks for it by name)",
                     ("CD409", "CD307", "CD203"), env={"LD_LIBRARY_PATH": str(where)}, predicted="fails",
                     cause_class="the C++ runtime broken first on the path: no framework's C++ library loads"),
            GLIBC_DL_LOAD)
    if cxx:
        where = folder("libstdcxx-arm")
        _other_machine_copy(cxx, where / "libstdc++.so.6")
        add(Scenario("s16-libstdcxx-arm", "an AArch64 libstdc++.so.6 (a toolchain unpacked for ARM nodes in a shared "
                     "home) first on LD_LIBRARY_PATH", ("CD409", "CD307"), env={"LD_LIBRARY_PATH": str(where)},
                     predicted="works"), GLIBC_DL_LOAD)
    gcc_s = os.path.realpath(cache["libgcc_s.so.1"]) if "libgcc_s.so.1" in cache else ""
    if gcc_s and "libgcc_s.so.1" not in starters:
        where = folder("libgcc-cut")
        _cut_copy(gcc_s, where / "libgcc_s.so.1")
        add(Scenario("s16-libgcc-s-cut", "the first half of libgcc_s.so.1 (a copy interrupted by a full disk) in a "
                     "project's lib folder first on LD_LIBRARY_PATH", ("CD409", "CD309", "CD203"),
                     env={"LD_LIBRARY_PATH": str(where)}, predicted="fails",
                     cause_class="the GCC runtime cut short first on the path: every C++ library that loads it "
                                 "faults"), GLIBC_DL_LOAD)

    # 5. TensorFlow's own XLA and runtime variables in a shell shared with TensorFlow (jaxlib reads XLA_FLAGS only).
    add(Scenario("s16-tf-xla-flags", "TF_XLA_FLAGS='--tf_xla_auto_jit=2 --tf_xla_cpu_global_jit', "
                 "TF_ENABLE_ONEDNN_OPTS=0 and TF_GPU_THREAD_MODE=gpu_private from a TensorFlow tuning guide",
                 ("CD411", "CD418"), env={"TF_XLA_FLAGS": "--tf_xla_auto_jit=2 --tf_xla_cpu_global_jit",
                                          "TF_ENABLE_ONEDNN_OPTS": "0", "TF_GPU_THREAD_MODE": "gpu_private"},
                 predicted="works"), TF_ENV)

    # 6. Another program computing on the GPU while each program of the scenario runs (not memory: time slices).
    busy = ("import time, torch\nx = torch.randn(2048, 2048, device='cuda')\nend = time.time() + 20\n"
            "while time.time() < end:\n    y = x @ x\n    torch.cuda.synchronize()\n    time.sleep(0.01)\n")
    add(Scenario("s16-busy-neighbour", "another user's torch program multiplies matrices on the GPU (about 1 GiB, "
                 "20 s) while each program runs (time slicing, no memory pressure)", ("CD115", "CD109"),
                 shell=f"( timeout 30 {shlex.quote(sys.executable)} -c {shlex.quote(busy)} >/dev/null 2>&1 & ); "
                       "sleep 3", alone=False, predicted="works",
                 cause_class="another process computing on the same GPU"), NVIDIA_SMI_SHARING + "; " + BASH_JOBS)

    # 7. JAX's persistent cache on a cloud URL.
    etils = find_spec("etils") is not None
    where = folder("jax-cache-url")
    add(Scenario("s16-jax-cache-gs-url", "JAX_COMPILATION_CACHE_DIR=gs://team-bucket/jax-cache (a cloud bucket from a "
                 "TPU guide) with JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS=0, no cloud file system installed "
                 f"(etils {'installed' if etils else 'not installed'})", ("CD417", "CD411"),
                 env={"JAX_COMPILATION_CACHE_DIR": "gs://team-bucket/jax-cache",
                      "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0"}, cwd=str(where), predicted="works",
                 cause_class="a compilation cache on a URL its path library cannot open (JAX warns 'Error reading "
                             "persistent compilation cache entry' and compiles)"), JAX_CACHE)

    # 8. cuBLAS's own variables (the judges' work calls no GEMM).
    add(Scenario("s16-cublas-log-missing-folder", "CUBLAS_LOGINFO_DBG=1 with CUBLAS_LOGDEST_DBG in a folder that does "
                 "not exist (from a debugging session)", ("CD417", "CD411"),
                 env={"CUBLAS_LOGINFO_DBG": "1", "CUBLAS_LOGDEST_DBG": "/nonexistent/cublas-logs/cublas.log"},
                 predicted="works"), CUBLAS_ENV)
    add(Scenario("s16-cublas-workspace-no-colon", "CUBLAS_WORKSPACE_CONFIG=4096:8 (the leading colon dropped from "
                 "the reproducibility recipe)", ("CD411", "CD414"), env={"CUBLAS_WORKSPACE_CONFIG": "4096:8"},
                 predicted="works"), CUBLAS_ENV)

    # 9. cuDNN 8's logging names under cuDNN 9.
    add(Scenario("s16-cudnn8-log-names", "CUDNN_LOGINFO_DBG=1, CUDNN_LOGWARN_DBG=1, CUDNN_LOGERR_DBG=1 and "
                 "CUDNN_LOGDEST_DBG=stderr (cuDNN 8's logging names, kept in a profile)", ("CD411", "CD418"),
                 env={"CUDNN_LOGINFO_DBG": "1", "CUDNN_LOGWARN_DBG": "1", "CUDNN_LOGERR_DBG": "1",
                      "CUDNN_LOGDEST_DBG": "stderr"}, predicted="works"), CUDNN_LOG)

    # 10. JAX_PLATFORMS empty, with a space after the comma, in quotes.
    add(Scenario("s16-jax-platforms-empty", "JAX_PLATFORMS set but empty (`export JAX_PLATFORMS=$PLATFORMS` with "
                 "PLATFORMS unset)", ("CD411", "CD412"), env={"JAX_PLATFORMS": ""}, predicted="works"), JAX_BRIDGE)
    add(Scenario("s16-jax-platforms-comma-space", "JAX_PLATFORMS='cuda, cpu' (a space after the comma, as people write "
                 "lists)", ("CD411", "CD113"), env={"JAX_PLATFORMS": "cuda, cpu"}, predicted="fails"), JAX_BRIDGE)
    add(Scenario("s16-jax-platforms-leading-space", "JAX_PLATFORMS=' cuda' (a space after the = of an env file line "
                 "'JAX_PLATFORMS= cuda')", ("CD411", "CD113"), env={"JAX_PLATFORMS": " cuda"}, predicted="fails"),
        JAX_BRIDGE)
    add(Scenario("s16-jax-platforms-quoted", "JAX_PLATFORMS='\"cuda\"' (the quotes kept by a docker --env-file)",
                 ("CD411", "CD113"), env={"JAX_PLATFORMS": '"cuda"'}, predicted="fails"),
        JAX_BRIDGE + "; https://docs.docker.com/reference/cli/docker/container/run/#env")

    # 11. Temporary and home folders on a read-only file system (/sys: nobody, root included, can create a file there).
    add(Scenario("s16-tmpdir-read-only", "TMPDIR=/sys (a folder on a read-only file system; Python's tempfile skips "
                 "it, XLA writes the PTX it hands to ptxas there)", ("CD417",), env={"TMPDIR": "/sys"}, unset=("TEST_TMPDIR",),
                 predicted="fails", cause_class="a temporary folder that exists and cannot be written"), XLA_TMP)
    add(Scenario("s16-tmp-read-only", "TMP=/sys alone (TMPDIR and TEST_TMPDIR unset; a Windows-minded profile sets TMP): "
                 "Python's tempfile skips a folder it cannot write, XLA takes TMP after TMPDIR", ("CD417",),
                 env={"TMP": "/sys"}, unset=("TMPDIR", "TEST_TMPDIR"), predicted="fails",
                 cause_class="a temporary folder that exists and cannot be written, named by the variable only XLA "
                             "and Python read last"), XLA_TMP)
    where = folder("test-tmpdir-writable")
    add(Scenario("s16-tmpdir-read-only-test-tmpdir", "TMPDIR=/sys with TEST_TMPDIR naming a writable folder (XLA "
                 "takes TEST_TMPDIR first)", ("CD417",), env={"TMPDIR": "/sys", "TEST_TMPDIR": str(where)},
                 predicted="works"), XLA_TMP)
    add(Scenario("s16-home-read-only", "HOME=/sys and XDG_CACHE_HOME=/sys/cache (a service account's home on a "
                 "read-only file system: CUDA's JIT cache and every cache folder cannot be made)", ("CD417", "CD416"),
                 env={"HOME": "/sys", "XDG_CACHE_HOME": "/sys/cache"}, predicted="works"),
        CUDA_ENV + " (CUDA_CACHE_PATH defaults to ~/.nv/ComputeCache)")

    # 12. The working folder holds an nvidia/cu13/lib namespace portion of text files (a Docker build context).
    cu13 = next((os.path.join(s, "nvidia", "cu13", "lib") for s in sites
                 if os.path.isdir(os.path.join(s, "nvidia", "cu13", "lib"))
                 and not os.path.exists(os.path.join(s, "nvidia", "__init__.py"))), "")
    if cu13:
        where = folder("cwd-nvidia-cu13")
        lib = where / "nvidia" / "cu13" / "lib"
        lib.mkdir(parents=True)
        names = [n for n in JAX_CU13_PRELOADS if os.path.exists(os.path.join(cu13, n))]
        for name in names:
            (lib / name).write_text(LFS_POINTER)
        add(Scenario("s16-cwd-nvidia-cu13-text", f"started in a Docker build context whose nvidia/cu13/lib holds Git "
                     f"LFS pointers named like the CUDA wheel libraries ({len(names)} files; python -c puts the working "
                     "folder first, so nvidia.cu13's first path entry is this one)", ("CD419", "CD203"),
                     cwd=str(where), predicted="works",
                     cause_class="a namespace portion in the working folder shadowing the CUDA wheels' folder that a "
                                 "framework preloads from (failures there are ignored; the libraries' own RUNPATH "
                                 "still finds the wheels)"),
            JAX_PLUGIN + "; " + PY_IMPORT)

    # 13. XLA_FLAGS naming a file of flags written on Windows.
    where = folder("xla-flags-crlf")
    (where / "xla_flags.txt").write_bytes(b"--xla_gpu_autotune_level=0\r\n--xla_gpu_deterministic_ops=true\r\n")
    add(Scenario("s16-xla-flags-file-crlf", "XLA_FLAGS naming a file of two valid flags saved with CRLF line ends",
                 ("CD411",), env={"XLA_FLAGS": str(where / "xla_flags.txt")}, predicted="works"), XLA_PARSE)
    where = folder("xla-flags-bom")
    (where / "xla_flags.txt").write_bytes("\ufeff--xla_gpu_autotune_level=0\n".encode())
    add(Scenario("s16-xla-flags-file-bom", "XLA_FLAGS naming a file of one valid flag saved by Notepad with a UTF-8 "
                 "byte-order mark before it (a token not starting with '-' is not taken as a flag: the flag is lost, "
                 "nothing stops)", ("CD411",), env={"XLA_FLAGS": str(where / "xla_flags.txt")},
                 predicted="works"), XLA_PARSE)

    where = folder("xla-flags-comment")
    (where / "xla_flags.txt").write_text("# autotuning off while we debug the convolution\n"
                                         "--xla_gpu_autotune_level=0\n")
    add(Scenario("s16-xla-flags-file-comment", "XLA_FLAGS naming a file of flags whose first line is a '#' comment "
                 "(as in a shell or TOML file; XLA's reader has no comments, and words not starting with '-' are not "
                 "flags)", ("CD411",), env={"XLA_FLAGS": str(where / "xla_flags.txt")}, predicted="works"), XLA_PARSE)
    where = folder("xla-flags-spaced")
    (where / "xla_flags.txt").write_text("--xla_gpu_autotune_level = 0\n")
    add(Scenario("s16-xla-flags-file-spaced", "XLA_FLAGS naming a file of flags written like a config file, "
                 "'--xla_gpu_autotune_level = 0' (spaces around the '=': the flag then has no value)", ("CD411",),
                 env={"XLA_FLAGS": str(where / "xla_flags.txt")}, predicted="fails"), XLA_PARSE)
    add(Scenario("s16-xla-flag-space-value", "XLA_FLAGS='--xla_gpu_autotune_level 0' (the value after a space, as "
                 "command-line programs take it)", ("CD411",), env={"XLA_FLAGS": "--xla_gpu_autotune_level 0"},
                 predicted="fails"), XLA_PARSE + "; https://github.com/openxla/xla/blob/main/xla/tsl/util/"
        "command_line_flags.cc (a flag takes its value after '=' only)")

    # 14. Valid XLA GPU flags that change how the convolution is compiled or run.
    add(Scenario("s16-xla-conv-layout-flags", "XLA_FLAGS='--xla_gpu_force_conv_nhwc=true "
                 "--xla_gpu_strict_conv_algorithm_picker=false' (from a performance guide)", ("CD411",),
                 env={"XLA_FLAGS": "--xla_gpu_force_conv_nhwc=true --xla_gpu_strict_conv_algorithm_picker=false"},
                 predicted="works"), XLA_FLAGS_DOC)
    add(Scenario("s16-xla-exclusive-lock", "XLA_FLAGS=--xla_gpu_require_exclusive_lock=true (each executable run "
                 "holds a process-wide lock on the GPU)", ("CD411",),
                 env={"XLA_FLAGS": "--xla_gpu_require_exclusive_lock=true"}, predicted="works"), XLA_FLAGS_DOC)
    add(Scenario("s16-xla-no-binary-libraries", "XLA_FLAGS=--xla_gpu_experimental_disable_binary_libraries=true (set "
                 "to keep XLA off cuDNN after a cuDNN error: the convolution is no longer rewritten to a cuDNN call "
                 "and goes to XLA's own generated kernels)", ("CD411", "CD412"),
                 env={"XLA_FLAGS": "--xla_gpu_experimental_disable_binary_libraries=true"}, predicted="works",
                 cause_class="a valid XLA flag that keeps the work off cuDNN (slower, a warning at most)"),
        XLA_FLAGS_DOC)

    # 15. torch's Apple-silicon and ROCm settings in a Linux CUDA shell.
    add(Scenario("s16-torch-mps-rocm-vars", "PYTORCH_ENABLE_MPS_FALLBACK=1, PYTORCH_MPS_HIGH_WATERMARK_RATIO=0.0, "
                 "HSA_OVERRIDE_GFX_VERSION=10.3.0, PYTORCH_ROCM_ARCH=gfx1030 and MIOPEN_FIND_MODE=FAST from dotfiles "
                 "shared with a Mac and an AMD workstation", ("CD418", "CD411"),
                 env={"PYTORCH_ENABLE_MPS_FALLBACK": "1", "PYTORCH_MPS_HIGH_WATERMARK_RATIO": "0.0",
                      "HSA_OVERRIDE_GFX_VERSION": "10.3.0", "PYTORCH_ROCM_ARCH": "gfx1030",
                      "MIOPEN_FIND_MODE": "FAST"}, predicted="works"), TORCH_MPS)

    # 16. Other GPU Python libraries' settings.
    add(Scenario("s16-cupy-numba-vars", "CUPY_ACCELERATORS=cub,cutensor, CUPY_CACHE_DIR in a missing folder, "
                 "NUMBA_CUDA_DRIVER naming a libcuda that does not exist and NUMBA_ENABLE_CUDASIM=1 (read by CuPy and "
                 "Numba only)", ("CD418", "CD111"),
                 env={"CUPY_ACCELERATORS": "cub,cutensor", "CUPY_CACHE_DIR": "/nonexistent/cupy-cache",
                      "NUMBA_CUDA_DRIVER": "/nonexistent/libcuda.so", "NUMBA_ENABLE_CUDASIM": "1"},
                 predicted="works"), OTHER_GPU_PY)

    # 17. The wheels' own CUDA and cuDNN folders put on LD_LIBRARY_PATH (a user's "fix").
    own = [os.path.dirname(p) for p in (_wheel_lib(sites, "libcudart"), wheel_cudnn) if p]
    if len(own) == 2:
        add(Scenario("s16-ld-path-wheels-own", "LD_LIBRARY_PATH names the CUDA wheels' own lib folder and the cuDNN "
                     "wheel's (the files the frameworks load anyway)", ("CD203", "CD305"),
                     env={"LD_LIBRARY_PATH": ":".join(dict.fromkeys(own))}, predicted="works"), LD_SO)

    # 18. XLA's CUDA folder flag naming the real toolkit.
    kits = sorted(glob.glob("/usr/local/cuda-*/bin/ptxas"))
    if kits:
        root = os.path.dirname(os.path.dirname(kits[-1]))
        kit_release = _major_minor(os.path.basename(root))
        nvcc_release = _major_minor(_wheel_version(sites, "nvidia_cuda_nvcc*"))
        older = kit_release is not None and nvcc_release is not None and kit_release < nvcc_release
        add(Scenario("s16-xla-cuda-data-dir-toolkit", f"XLA_FLAGS=--xla_gpu_cuda_data_dir={root} (the installed "
                     f"toolkit, release {kit_release}; the nvcc wheel is {nvcc_release})", ("CD411", "CD207"),
                     env={"XLA_FLAGS": f"--xla_gpu_cuda_data_dir={root}"}, predicted="fails" if older else "works",
                     cause_class="XLA told to take ptxas and libdevice from the system toolkit instead of the "
                                 "wheel"), XLA_FLAGS_DOC)
    return scenarios
