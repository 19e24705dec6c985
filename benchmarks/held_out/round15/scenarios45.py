"""Round 15's sealed GPU scenarios for issue 45: classes neither the built-in suite nor rounds 5-14 took.

SEALED: not to be read by whoever builds the code for issue 45. Run it with the harness, on the GPU machine:

    timeout 300 python3 benchmarks/gpu_scenarios.py --scenarios benchmarks/held_out/round15/scenarios45.py \
        --out "$OUT/s15" --quiet-cases --budget-s 230

Every scenario bends ONE shell's environment: variables, files written at build time under
/tmp/cudnn-doctor-scenarios/s15-* (symbolic links to real libraries found on the machine, a small library copied with
its ELF machine field changed, text files where a library or a configuration file is expected, a copy of the
installed torch/__init__.py in a working folder), the working folder, soft limits. Sources are found at build time
from the judges' own Python (the harness's interpreter: its site-packages, the `nvidia/*/lib` folders of the CUDA
wheels, their dist-info METADATA, torch's own files), the loader's cache (the system cuDNN 9.14's sub-libraries, a
small system library), the CUDA toolkit's folders. A scenario whose source is missing is left out. No installed file
is written, nothing outside /tmp, no network, no GPU setting is touched, no scenario runs alone.

`causes` are codes of cudnn_doctor/codes.py (names and one-line meanings only) that a right answer names if the
setup fails; for a scenario predicted to work, `causes` holds the code a wrong answer would most likely raise.
Where no code fits, or fits only partly, `cause_class` says the class in words. `predicted` is the author's guess
before any run; the judges decide. Each scenario also carries `source` (an attribute the harness ignores).
"""

from __future__ import annotations

import glob
import os
import re
import struct
import subprocess
import sys
import sysconfig
from pathlib import Path

from gpu_scenarios import Scenario, scratch

LFS_POINTER = ("version https://git-lfs.github.com/spec/v1\n"
               "oid sha256:9b1c0e5a77d2f4c6e3f0a8b5d4c3b2a1908f7e6d5c4b3a29180f7e6d5c4b3a21\n"
               "size 274112512\n")
EM_AARCH64 = 183
DT_NEEDED, DT_STRTAB, DT_RPATH, DT_RUNPATH = 1, 5, 15, 29

LD_SO = ("https://man7.org/linux/man-pages/man8/ld.so.8.html (LD_PRELOAD: an object that cannot be loaded is "
         "reported and ignored; LD_LIBRARY_PATH before DT_RUNPATH, after DT_RPATH; LD_BIND_NOT, LD_DEBUG_OUTPUT)")
GLIBC_DL_LOAD = ("https://sourceware.org/git/?p=glibc.git;a=blob;f=elf/dl-load.c (open_verify: a file for another "
                 "machine is skipped and the search goes on; rtld.c: a preload that fails is 'ignored')")
CUDNN_LIBS = ("https://docs.nvidia.com/deeplearning/cudnn/backend/latest/api/overview.html (cuDNN 9's sub-libraries: "
              "cudnn_graph, cudnn_engines_*, cudnn_ops, cudnn_cnn, cudnn_adv holding the RNN API; each is loaded "
              "by the front library when first needed and must be of the same version)")
TORCH_INIT = ("https://github.com/pytorch/pytorch/blob/main/torch/__init__.py (_load_global_deps and "
              "_preload_cuda_deps: the CUDA wheel libraries loaded by full path, cuBLASLt before cuBLAS, cuDNN's "
              "front library only)")
JAX_PLUGIN = ("https://github.com/jax-ml/jax/blob/main/jax_plugins/cuda/__init__.py (_load_nvidia_libraries: "
              "libcudart, libnvrtc, libcublas, libcupti, libcusparse, libcusolver, libcufft, libnvshmem_host and "
              "libcudnn by full path; libcublasLt reached as libcublas's dependency)")
CUDA_ENV = "https://docs.nvidia.com/cuda/cuda-programming-guide/05-appendices/environment-variables.html"
XLA_FLAGS_DOC = "https://openxla.org/xla/flags_guidance"
XLA_AUTOTUNE = ("https://openxla.org/xla/persisted_autotuning (--xla_gpu_per_fusion_autotune_cache_dir, the "
                "recommended autotuning cache folder)")
XLA_TMP = ("https://github.com/openxla/xla/blob/main/xla/tsl/platform/default/env.cc (GetLocalTempDirectories: "
           "TEST_TMPDIR, TMPDIR, TMP, then /tmp; the first that exists as a folder is used for the PTX files "
           "handed to ptxas)")
XLA_DETERMINISM = ("https://openxla.org/xla/determinism and openxla/xla@bdae19b9e15c396985703bb7e88a4db6fcddc7f6 "
                   "xla/service/gpu/stream_executor_util.cc (RequireDeterminism reads only "
                   "xla_gpu_deterministic_ops and xla_gpu_exclude_nondeterministic_ops, no TF_ variable)")
TSL_ENV_VAR = ("openxla/xla@827aca0eb2748018b7e803606250f9ea56939ab0 xla/tsl/util/env_var.cc (ReadBoolFromEnvVar "
               "takes 0/1/true/false only, and returns an error for other words)")
JAX_CONFIG = "https://docs.jax.dev/en/latest/config_options.html"
JAX_BRIDGE = ("https://github.com/jax-ml/jax/blob/main/jax/_src/xla_bridge.py (JAX_PLATFORMS split on ',', each "
              "name looked up as written among the backend factories and aliases; an unknown name raises)")
JAX_CACHE = "https://docs.jax.dev/en/latest/persistent_compilation_cache.html"
SYS_PATH = ("https://docs.python.org/3/library/sys_path_init.html and "
            "https://docs.python.org/3/reference/import.html#regular-packages (python -c puts the working folder "
            "first on sys.path; a regular package wins over namespace portions wherever they are)")
ZIPIMPORT = ("https://docs.python.org/3/library/sys.html#sys.path_importer_cache and "
             "https://docs.python.org/3/library/zipimport.html (a sys.path entry that is a file and not a zip "
             "archive is skipped)")
PY_ENV = "https://docs.python.org/3/using/cmdline.html#environment-variables"
TORCH_ENV = ("https://docs.pytorch.org/docs/stable/torch_environment_variables.html and "
             "https://docs.pytorch.org/docs/stable/cuda_environment_variables.html")
NCCL_ENV = "https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html"
BASH_ULIMIT = "https://www.gnu.org/software/bash/manual/html_node/Bash-Builtins.html (ulimit)"
CUBLAS = ("https://docs.nvidia.com/cuda/cublas/ (cuBLAS is built on cuBLASLt: libcublas needs libcublasLt of the "
          "same release)")
TF_DETERMINISM = "https://github.com/NVIDIA/framework-reproducibility (TF_DETERMINISTIC_OPS, TF_CUDNN_DETERMINISTIC)"


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
    """Version: of the first dist-info matching PATTERN (e.g. nvidia_cublas*)."""
    for folder in sites:
        for meta in sorted(glob.glob(os.path.join(folder, pattern + ".dist-info", "METADATA"))):
            try:
                for line in Path(meta).read_text(errors="replace").splitlines():
                    if line.startswith("Version:"):
                        return line.split(":", 1)[1].strip()
            except OSError:
                continue
    return ""


def _dynamic(path: str) -> dict[str, list[str]]:
    """DT_NEEDED, DT_RPATH and DT_RUNPATH of a 64-bit little-endian ELF file ({} if it cannot be read)."""
    try:
        data = Path(path).read_bytes()
    except OSError:
        return {}
    if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
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


def _other_machine_copy(source: str, target: Path) -> None:
    """A copy of SOURCE whose ELF header says AArch64 (what a home shared with ARM nodes holds)."""
    data = bytearray(Path(source).read_bytes())
    data[18:20] = struct.pack("<H", EM_AARCH64)
    target.write_bytes(bytes(data))


def _major_minor(text: str) -> tuple[int, int] | None:
    match = re.search(r"(\d+)\.(\d+)", text)
    return (int(match.group(1)), int(match.group(2))) if match else None


# ------------------------------------------------------------------------------------------------ scenarios
def build_scenarios(machine: dict[str, object]) -> list[Scenario]:
    sites = _site_packages()
    cache = _ldconfig()
    scenarios: list[Scenario] = []

    def add(scenario: Scenario, source: str) -> None:
        scenario.source = source  # type: ignore[attr-defined]
        scenarios.append(scenario)

    def folder(name: str) -> Path:
        return scratch("s15-" + name)

    wheel_cudnn = _wheel_lib(sites, "libcudnn")
    wheel_dir = os.path.dirname(wheel_cudnn) if wheel_cudnn else ""
    wheel_adv = os.path.join(wheel_dir, "libcudnn_adv.so.9") if wheel_dir else ""
    if wheel_adv and not os.path.exists(wheel_adv):
        wheel_adv = ""
    front_rpath = bool(_dynamic(wheel_cudnn).get("rpath")) if wheel_cudnn else False
    system_adv = os.path.realpath(cache["libcudnn_adv.so.9"]) if "libcudnn_adv.so.9" in cache else ""
    libz = os.path.realpath(cache["libz.so.1"]) if "libz.so.1" in cache else ""

    # 1. cuDNN's RNN sub-library (libcudnn_adv): only torch's LSTM loads it; no round touched it.
    if system_adv and wheel_adv:
        where = folder("adv-914-first")
        os.symlink(system_adv, where / "libcudnn_adv.so.9")
        add(Scenario("s15-adv-914-first", "a folder first on LD_LIBRARY_PATH holding only libcudnn_adv.so.9, linked to "
                     "the system cuDNN 9.14's RNN sub-library (left from building an RNN extension against the "
                     "system cuDNN)", ("CD305", "CD321", "CD319"), env={"LD_LIBRARY_PATH": str(where)},
                     predicted="works" if front_rpath else "fails",
                     cause_class="a cuDNN sub-library that only one framework's work loads (the RNN API), of another "
                                 "release, alone first on the path: torch's LSTM gets it, JAX's convolution never "
                                 "asks for it"),
            CUDNN_LIBS + "; " + LD_SO + "; " + TORCH_INIT)
    if system_adv:
        needs = _dynamic(system_adv).get("needed", [])
        add(Scenario("s15-preload-system-adv", "LD_PRELOAD of the system cuDNN 9.14's libcudnn_adv.so.9 (a workaround "
                     "from a forum thread about an RNN error)" + (f"; it needs {', '.join(n for n in needs if 'cudnn' in n)}"
                                                                   if any("cudnn" in n for n in needs) else ""),
                     ("CD317", "CD305", "CD321"), env={"LD_PRELOAD": system_adv}, predicted="fails",
                     cause_class="a preloaded cuDNN sub-library of another release, which brings its own release's "
                                 "sub-libraries in through the loader's cache"),
            CUDNN_LIBS + "; " + LD_SO)
    if wheel_adv:
        add(Scenario("s15-preload-wheel-adv", "LD_PRELOAD of the wheel's own libcudnn_adv.so.9 (the release torch and "
                     "JAX load anyway; its cuDNN dependencies come from its own folder)", ("CD317", "CD305"),
                     env={"LD_PRELOAD": wheel_adv}, predicted="works"), CUDNN_LIBS + "; " + LD_SO)
    if wheel_adv:
        where = folder("adv-lfs-first")
        (where / "libcudnn_adv.so.9").write_text(LFS_POINTER)
        add(Scenario("s15-adv-lfs-first", "a Git LFS pointer (text) checked out as libcudnn_adv.so.9 in a project's "
                     "lib folder first on LD_LIBRARY_PATH (the loader stops at a file that is not ELF)",
                     ("CD308", "CD319"), env={"LD_LIBRARY_PATH": str(where)},
                     predicted="works" if front_rpath else "fails",
                     cause_class="a broken cuDNN sub-library that only one framework's work loads (the RNN API)"),
            CUDNN_LIBS + "; " + GLIBC_DL_LOAD)
    if libz and wheel_adv:
        where = folder("adv-other-machine")
        _other_machine_copy(libz, where / "libcudnn_adv.so.9")
        add(Scenario("s15-adv-other-machine", "an AArch64 file named libcudnn_adv.so.9 first on LD_LIBRARY_PATH (a "
                     "shared home's lib folder filled on ARM nodes; the loader skips a file for another machine)",
                     ("CD308", "CD305"), env={"LD_LIBRARY_PATH": str(where)}, predicted="works"),
            GLIBC_DL_LOAD + "; " + CUDNN_LIBS)

    # 2. LD_PRELOAD entries the loader refuses: reported on every start and ignored.
    where = folder("preload-lfs")
    (where / "libcudnn_graph.so.9").write_text(LFS_POINTER)
    add(Scenario("s15-preload-lfs-text", "LD_PRELOAD of a Git LFS pointer (text) checked out as libcudnn_graph.so.9 "
                 "(the loader prints 'cannot be preloaded' and goes on)", ("CD317", "CD308"),
                 env={"LD_PRELOAD": str(where / "libcudnn_graph.so.9")}, predicted="works"),
        LD_SO + "; " + GLIBC_DL_LOAD)
    preload_dir = wheel_dir or str(folder("preload-folder"))
    add(Scenario("s15-preload-a-folder", "LD_PRELOAD naming a folder (the cuDNN lib folder, where a file was meant; "
                 "the loader cannot read it as a library and ignores it)", ("CD317", "CD308"),
                 env={"LD_PRELOAD": preload_dir}, predicted="works"), LD_SO)

    # 3. Folders of symbolic links under the wheel's sonames (a `ln -s` loop in a setup script).
    wheel_subs = sorted(glob.glob(os.path.join(wheel_dir, "libcudnn*.so.9"))) if wheel_dir else []
    if len(wheel_subs) >= 4:
        where = folder("link-farm")
        for library in wheel_subs:
            os.symlink(library, where / os.path.basename(library))
        add(Scenario("s15-link-farm", "a folder first on LD_LIBRARY_PATH of symbolic links, one per cuDNN library, "
                     "each to the wheel's own file (a setup script's link farm)", ("CD305", "CD308", "CD304"),
                     env={"LD_LIBRARY_PATH": str(where)}, predicted="works"), LD_SO)
        names = [os.path.basename(p) for p in wheel_subs]
        if "libcudnn_graph.so.9" in names and "libcudnn_ops.so.9" in names:
            where = folder("link-farm-shifted")
            for library in wheel_subs:
                name = os.path.basename(library)
                target = os.path.join(wheel_dir, "libcudnn_ops.so.9") if name == "libcudnn_graph.so.9" else library
                os.symlink(target, where / name)
            add(Scenario("s15-link-farm-shifted", "the same link farm first on LD_LIBRARY_PATH, but its "
                         "libcudnn_graph.so.9 links to the wheel's libcudnn_ops.so.9 (a loop that paired names and "
                         "files one off)", ("CD308", "CD304", "CD305"), env={"LD_LIBRARY_PATH": str(where)},
                         predicted="fails",
                         cause_class="a cuDNN sub-library name that leads to another sub-library's file (loadable, "
                                     "but without the symbols the front library asks it for)"),
                LD_SO + "; " + CUDNN_LIBS)

    # 4. CUDA driver variables at their off values, out of their ranges, and the newer JIT switch.
    add(Scenario("s15-cuda-explicit-off", "CUDA variables set to their off values in a site profile: "
                 "CUDA_FORCE_PTX_JIT=0, CUDA_DISABLE_PTX_JIT=0, CUDA_LAUNCH_BLOCKING=0, CUDA_CACHE_DISABLE=0, "
                 "CUDA_MODULE_LOADING=LAZY", ("CD416", "CD412"),
                 env={"CUDA_FORCE_PTX_JIT": "0", "CUDA_DISABLE_PTX_JIT": "0", "CUDA_LAUNCH_BLOCKING": "0",
                      "CUDA_CACHE_DISABLE": "0", "CUDA_MODULE_LOADING": "LAZY"}, predicted="works"), CUDA_ENV)
    add(Scenario("s15-cuda-out-of-range", "CUDA_DEVICE_MAX_CONNECTIONS=64 (documented 1-32), "
                 "CUDA_SCALE_LAUNCH_QUEUES=0x (not one of its multipliers), CUDA_AUTO_BOOST=2", ("CD416",),
                 env={"CUDA_DEVICE_MAX_CONNECTIONS": "64", "CUDA_SCALE_LAUNCH_QUEUES": "0x", "CUDA_AUTO_BOOST": "2"},
                 predicted="works",
                 cause_class="CUDA driver variables with values outside their documented ranges"), CUDA_ENV)
    add(Scenario("s15-cuda-disable-jit", "CUDA_DISABLE_JIT=1 (no JIT of PTX or NVVM IR; every kernel needs its own "
                 "binary for the GPU)", ("CD416",), env={"CUDA_DISABLE_JIT": "1"}, predicted="works"), CUDA_ENV)
    jit_cache = folder("cuda-cache-huge") / "ComputeCache"
    jit_cache.mkdir()
    add(Scenario("s15-cuda-cache-huge", "CUDA_CACHE_MAXSIZE=8589934592 (twice the documented 4 GiB maximum) with "
                 "CUDA_CACHE_PATH naming a new, writable folder", ("CD416", "CD417"),
                 env={"CUDA_CACHE_MAXSIZE": "8589934592", "CUDA_CACHE_PATH": str(jit_cache)}, predicted="works"),
        CUDA_ENV)

    # 5. XLA's files and flags of other backends.
    where = folder("xla-fusion-cache")
    add(Scenario("s15-xla-fusion-cache", "XLA_FLAGS=--xla_gpu_per_fusion_autotune_cache_dir naming a new, writable "
                 "folder (the recommended autotuning cache)", ("CD411", "CD417"),
                 env={"XLA_FLAGS": f"--xla_gpu_per_fusion_autotune_cache_dir={where / 'autotune'}"},
                 predicted="works"), XLA_AUTOTUNE)
    where = folder("xla-fusion-cache-file")
    (where / "autotune").write_text("autotune results go here\n")
    add(Scenario("s15-xla-fusion-cache-file", "XLA_FLAGS=--xla_gpu_per_fusion_autotune_cache_dir naming a regular "
                 "file (the cache folder's name was taken by a note)", ("CD417", "CD411"),
                 env={"XLA_FLAGS": f"--xla_gpu_per_fusion_autotune_cache_dir={where / 'autotune'}"},
                 predicted="fails",
                 cause_class="an XLA cache folder flag naming a file: XLA's write of an autotuning result fails"),
        XLA_AUTOTUNE)
    where = folder("xla-target-config")
    (where / "h100.txtpb").write_text("# target config for deviceless compilation (TODO: paste from the cluster)\n"
                                      "gpu_device_info {\n  threads_per_block_limit: 1024\n")
    add(Scenario("s15-xla-target-config-garbage", "XLA_FLAGS=--xla_gpu_target_config_filename naming a half-written "
                 "text proto (from a deviceless-compilation how-to)", ("CD411", "CD417"),
                 env={"XLA_FLAGS": f"--xla_gpu_target_config_filename={where / 'h100.txtpb'}"}, predicted="fails",
                 cause_class="an XLA flag naming a file XLA reads and cannot parse"), XLA_FLAGS_DOC)
    add(Scenario("s15-xla-tpu-flags", "XLA_FLAGS holding TPU flags from a TPU tutorial "
                 "(--xla_tpu_enable_latency_hiding_scheduler=true --xla_tpu_megacore_fusion_allow_ags=false), which "
                 "the GPU jaxlib does not define", ("CD411",),
                 env={"XLA_FLAGS": "--xla_tpu_enable_latency_hiding_scheduler=true "
                                   "--xla_tpu_megacore_fusion_allow_ags=false"}, predicted="fails"),
        XLA_FLAGS_DOC + "; https://cloud.google.com/tpu/docs/performance-guide")
    add(Scenario("s15-xla-command-buffer-empty", "XLA_FLAGS=--xla_gpu_enable_command_buffer= (an empty list: CUDA "
                 "graphs off, a common debugging setting)", ("CD411",),
                 env={"XLA_FLAGS": "--xla_gpu_enable_command_buffer="}, predicted="works"), XLA_FLAGS_DOC)
    add(Scenario("s15-libtpu-vars", "LIBTPU_INIT_ARGS with TPU flags, TPU_ACCELERATOR_TYPE=v5litepod-8 and "
                 "TPU_WORKER_ID=0 left in a shell profile shared with TPU VMs (no libtpu installed)", ("CD411", "CD412"),
                 env={"LIBTPU_INIT_ARGS": "--xla_tpu_enable_latency_hiding_scheduler=true",
                      "TPU_ACCELERATOR_TYPE": "v5litepod-8", "TPU_WORKER_ID": "0"}, predicted="works"),
        "https://cloud.google.com/tpu/docs/performance-guide (LIBTPU_INIT_ARGS, read by libtpu only)")

    # 6. TensorFlow's determinism variables, which XLA no longer reads, and XLA's own determinism flag.
    add(Scenario("s15-tf-determinism-words", "TF_CUDNN_DETERMINISTIC=yes, TF_DETERMINISTIC_OPS=on and "
                 "TF_CUDNN_USE_AUTOTUNE=no (words TensorFlow's boolean reader refuses)", ("CD411", "CD414"),
                 env={"TF_CUDNN_DETERMINISTIC": "yes", "TF_DETERMINISTIC_OPS": "on", "TF_CUDNN_USE_AUTOTUNE": "no"},
                 predicted="works",
                 cause_class="TensorFlow-era variables with values their old reader refused, read by nothing in "
                             "jaxlib or torch"),
        TF_DETERMINISM + "; " + XLA_DETERMINISM + "; " + TSL_ENV_VAR)
    add(Scenario("s15-xla-exclude-nondeterministic", "TF_DETERMINISTIC_OPS=1 with "
                 "XLA_FLAGS=--xla_gpu_exclude_nondeterministic_ops=true and CUBLAS_WORKSPACE_CONFIG=:4096:8 (a "
                 "reproducibility recipe)", ("CD411",),
                 env={"TF_DETERMINISTIC_OPS": "1", "XLA_FLAGS": "--xla_gpu_exclude_nondeterministic_ops=true",
                      "CUBLAS_WORKSPACE_CONFIG": ":4096:8"}, predicted="works"),
        XLA_DETERMINISM + "; https://docs.pytorch.org/docs/stable/notes/randomness.html")

    # 7. Soft and hard limits of kinds no round or test touched.
    add(Scenario("s15-core-nice-limits", "ulimit -c 0 (hard and soft), with soft nice and real-time priority "
                 "ceilings of 0 (a batch site's profile)", ("CD116",),
                 shell="ulimit -c 0; ulimit -S -e 0 2>/dev/null; ulimit -S -r 0 2>/dev/null; true", predicted="works"),
        BASH_ULIMIT)

    # 8. A PYTHONPATH entry that is a regular file.
    where = folder("pythonpath-file")
    (where / "requirements.txt").write_text("torch==2.11.0\njax[cuda13]==0.11.0\n")
    (where / "src").mkdir()
    (where / "src" / "project_tools.py").write_text("VERSION = '0.1'\n")
    add(Scenario("s15-pythonpath-text-file", "PYTHONPATH naming the project's requirements.txt before its src folder "
                 "(a mistyped export)", ("CD419", "CD421"),
                 env={"PYTHONPATH": f"{where / 'requirements.txt'}:{where / 'src'}"}, predicted="works"), ZIPIMPORT)

    # 9. A working folder holding a package folder named like a framework.
    torch_init = next((os.path.join(s, "torch", "__init__.py") for s in sites
                       if os.path.isfile(os.path.join(s, "torch", "__init__.py"))), "")
    if torch_init:
        where = folder("cwd-torch-checkout")
        (where / "torch").mkdir()
        (where / "torch" / "__init__.py").write_bytes(Path(torch_init).read_bytes())
        version = os.path.join(os.path.dirname(torch_init), "version.py")
        if os.path.isfile(version):
            (where / "torch" / "version.py").write_bytes(Path(version).read_bytes())
        add(Scenario("s15-cwd-torch-checkout", "started in a project folder holding a `torch/` package (the "
                     "__init__.py of a PyTorch source checkout copied in to patch it, nothing built)",
                     ("CD419", "CD409"), cwd=str(where), predicted="fails",
                     cause_class="a framework's package shadowed from the working folder"), SYS_PATH)
    where = folder("cwd-jax-results")
    (where / "jax" / "run1").mkdir(parents=True)
    (where / "jax" / "results.csv").write_text("step,loss\n0,2.30\n100,0.41\n")
    (where / "jax" / "run1" / "metrics.json").write_text('{"loss": 0.41}\n')
    add(Scenario("s15-cwd-jax-results", "started in a benchmark folder whose results for JAX sit in a `jax/` folder "
                 "without __init__.py (a namespace portion loses to the installed package)", ("CD419",),
                 cwd=str(where), predicted="works"), SYS_PATH)

    # 10. JAX's platform and default-device settings spelled as other tools spell them.
    add(Scenario("s15-jax-platforms-upper", "JAX_PLATFORMS=CUDA (capitals, as in a CMake option)", ("CD411", "CD113"),
                 env={"JAX_PLATFORMS": "CUDA"}, predicted="fails"), JAX_BRIDGE + "; " + JAX_CONFIG)
    add(Scenario("s15-jax-platforms-trailing-comma", "JAX_PLATFORMS='cuda,' (a list built by a script that leaves "
                 "a trailing comma)", ("CD411",), env={"JAX_PLATFORMS": "cuda,"}, predicted="fails"),
        JAX_BRIDGE + "; " + JAX_CONFIG)
    add(Scenario("s15-jax-platforms-semicolon", "JAX_PLATFORMS='cuda;cpu' (a semicolon, as in a Windows-style list)",
                 ("CD411",), env={"JAX_PLATFORMS": "cuda;cpu"}, predicted="fails"), JAX_BRIDGE + "; " + JAX_CONFIG)
    add(Scenario("s15-jax-platforms-cuda", "JAX_PLATFORMS=cuda (the GPU backend named explicitly)", ("CD411", "CD412"),
                 env={"JAX_PLATFORMS": "cuda"}, predicted="works"), JAX_BRIDGE + "; " + JAX_CONFIG)
    add(Scenario("s15-jax-default-device-torch-style", "JAX_DEFAULT_DEVICE=cuda:0 (a torch device string)",
                 ("CD411",), env={"JAX_DEFAULT_DEVICE": "cuda:0"}, predicted="fails"), JAX_CONFIG)
    add(Scenario("s15-jax-default-device-cuda", "JAX_DEFAULT_DEVICE=cuda (a platform name)", ("CD411", "CD412"),
                 env={"JAX_DEFAULT_DEVICE": "cuda"}, predicted="works"), JAX_CONFIG)

    # 11. The loader's debugging and binding variables no round touched.
    where = folder("ld-debug-output")
    add(Scenario("s15-ld-bind-not-statistics", "LD_BIND_NOT=1 with LD_DEBUG=statistics written to files "
                 "(LD_DEBUG_OUTPUT in a writable folder)", (),
                 env={"LD_BIND_NOT": "1", "LD_DEBUG": "statistics", "LD_DEBUG_OUTPUT": str(where / "ld")},
                 predicted="works", cause_class="the loader's debugging and binding variables"), LD_SO)

    # 12. torch's math-library switches read at import or first use.
    add(Scenario("s15-torch-math-switches", "TORCH_ALLOW_TF32_CUBLAS_OVERRIDE=1, TORCH_LINALG_PREFER_CUSOLVER=1, "
                 "TORCH_BLAS_PREFER_HIPBLASLT=0 and PYTORCH_KERNEL_CACHE_PATH under /proc (the NVRTC kernel cache; "
                 "nothing is compiled)", ("CD411", "CD417"),
                 env={"TORCH_ALLOW_TF32_CUBLAS_OVERRIDE": "1", "TORCH_LINALG_PREFER_CUSOLVER": "1",
                      "TORCH_BLAS_PREFER_HIPBLASLT": "0", "PYTORCH_KERNEL_CACHE_PATH": "/proc/torch-kernels"},
                 predicted="works"), TORCH_ENV)

    # 13. The toolkit's cuBLASLt alone first on the path: libcublas (loaded by full path by JAX) takes its
    #     dependency through LD_LIBRARY_PATH before its own RUNPATH; torch loads the wheel's cuBLASLt first.
    wheel_lt = _wheel_lib(sites, "libcublasLt")
    wheel_blas = _wheel_lib(sites, "libcublas")
    if wheel_lt and wheel_blas:
        soname = os.path.basename(wheel_lt)
        kit = sorted(glob.glob(f"/usr/local/cuda*/targets/x86_64-linux/lib/{soname}") +
                     glob.glob(f"/usr/local/cuda*/lib64/{soname}"))
        if kit:
            kit_real = os.path.realpath(kit[0])
            kit_version = _major_minor(os.path.basename(kit_real).split(".so.", 1)[-1])
            wheel_version = _major_minor(_wheel_version(sites, "nvidia_cublas*"))
            blas_rpath = bool(_dynamic(wheel_blas).get("rpath"))
            same = kit_version is not None and kit_version == wheel_version
            where = folder("toolkit-cublaslt")
            os.symlink(kit_real, where / soname)
            add(Scenario("s15-toolkit-cublaslt-alone", f"a folder first on LD_LIBRARY_PATH holding only {soname}, "
                         f"linked to the CUDA toolkit's (release {kit_version}) while the wheels' cuBLAS is "
                         f"{wheel_version or 'unknown'}", ("CD203", "CD410"), env={"LD_LIBRARY_PATH": str(where)},
                         predicted="works" if (same or blas_rpath) else "fails",
                         cause_class="a CUDA math library's own dependency (cuBLASLt under cuBLAS) of another "
                                     "release, alone first on the path"),
                CUBLAS + "; " + JAX_PLUGIN + "; " + TORCH_INIT + "; " + LD_SO)

    # 14. NCCL's plugin and topology settings in a one-GPU shell (nothing initialises NCCL).
    where = folder("nccl-topo")
    (where / "topo.xml").write_text("<system version=\"1\">\n  <cpu numaid=\"0\"\n")
    add(Scenario("s15-nccl-plugin-topo", "NCCL_NET_PLUGIN naming a plugin that is not installed, NCCL_NVLS_ENABLE=2 "
                 "and NCCL_TOPO_FILE naming a cut XML file", ("CD176", "CD119"),
                 env={"NCCL_NET_PLUGIN": "aws-ofi-nonexistent", "NCCL_NVLS_ENABLE": "2",
                      "NCCL_TOPO_FILE": str(where / "topo.xml")}, predicted="works"), NCCL_ENV)

    # 15. Python switches of newer releases (ignored by older ones).
    add(Scenario("s15-python-new-switches", "PYTHONPERFSUPPORT=1 (perf trampolines, Python 3.12+), "
                 "PYTHON_HISTORY in a missing folder and PYTHONNODEBUGRANGES=1", ("CD411", "CD412"),
                 env={"PYTHONPERFSUPPORT": "1", "PYTHON_HISTORY": "/nonexistent/.python_history",
                      "PYTHONNODEBUGRANGES": "1"}, predicted="works"), PY_ENV)

    # 16. JAX's persistent cache with XLA's own caches inside it.
    cache_dir = folder("jax-xla-caches") / "cache"
    add(Scenario("s15-jax-xla-caches", "JAX_COMPILATION_CACHE_DIR naming a new folder, "
                 "JAX_PERSISTENT_CACHE_ENABLE_XLA_CACHES=all and JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS=0",
                 ("CD417", "CD411"),
                 env={"JAX_COMPILATION_CACHE_DIR": str(cache_dir), "JAX_PERSISTENT_CACHE_ENABLE_XLA_CACHES": "all",
                      "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0"}, predicted="works"), JAX_CACHE + "; " + JAX_CONFIG)
    add(Scenario("s15-jax-xla-caches-proc", "JAX_COMPILATION_CACHE_DIR under /proc (nothing can be made there) "
                 "with JAX_PERSISTENT_CACHE_ENABLE_XLA_CACHES=all", ("CD417", "CD411"),
                 env={"JAX_COMPILATION_CACHE_DIR": "/proc/jax-cache", "JAX_PERSISTENT_CACHE_ENABLE_XLA_CACHES": "all"},
                 predicted="works",
                 cause_class="a compilation cache folder that cannot be made (JAX treats cache errors as warnings; "
                             "whether XLA's own caches inside it fail the compilation is the question)"),
        JAX_CACHE + "; " + JAX_CONFIG)

    # 17. TEST_TMPDIR, which XLA reads before TMPDIR (Bazel sets it for tests).
    add(Scenario("s15-test-tmpdir-proc", "TEST_TMPDIR=/proc (left from a Bazel test shell; XLA takes it before TMPDIR "
                 "for the PTX files it hands to ptxas, Python never reads it)", ("CD417",),
                 env={"TEST_TMPDIR": "/proc"}, predicted="fails",
                 cause_class="a temporary folder only XLA reads, in which no file can be made"), XLA_TMP)
    gone = folder("test-tmpdir-gone") / "bazel-sandbox" / "_tmp"
    add(Scenario("s15-test-tmpdir-gone", "TEST_TMPDIR naming a Bazel sandbox folder that was removed (XLA skips a "
                 "folder that is not there)", ("CD417",), env={"TEST_TMPDIR": str(gone)}, predicted="works"), XLA_TMP)
    return scenarios
