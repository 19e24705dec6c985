"""Round 11's sealed GPU scenarios for issue 45: classes neither the built-in suite nor rounds 5-10 have.

SEALED: not to be read by whoever builds the code for issue 45. Run it with the harness, on the GPU machine:

    timeout 300 python3 benchmarks/gpu_scenarios.py --scenarios .sealed/round11/scenarios45/scenarios.py \
        --out "$OUT/s11" --quiet-cases --budget-s 260

Every scenario bends ONE shell's environment: variables (set or unset), files it writes under
/tmp/cudnn-doctor-scenarios/s11-* (a relocated Python user base with start-up hooks), the working folder. Sources
are found on the machine at build time (the judges' Python: its version, its user-site switch, its user scheme; the
C library's version; the loader's cache: the system cuDNN's folder; nvidia-smi: the GPU's UUID); a scenario whose
source is missing is left out, and a prediction that depends on the machine is made from these facts. No installed
file is written, nothing outside /tmp, no network, no GPU setting is touched.

`causes` are codes of cudnn_doctor/codes.py (names and one-line meanings only) that a right answer names if the setup
fails. Where no code fits, `causes` is empty and `cause_class` says the class in words; where a code fits only partly,
both are given. `predicted` is the author's guess before any run; the judges decide. Each scenario also carries
`source` (an attribute the harness ignores): where the class comes from real users or the documentation.
"""

from __future__ import annotations

import glob
import os
import re
import site
import struct
import subprocess
import sys
import sysconfig
from pathlib import Path

from gpu_scenarios import Scenario, scratch

NOWHERE = "/proc/cudnn-doctor-s11-nowhere"  # a path nobody (root included) can create
PLACEHOLDER_UUID = "GPU-5f1c0de0-1111-2222-3333-444455556666"


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


def _soname(path: str) -> str:
    """The DT_SONAME of a 64-bit little-endian ELF shared library ('' if it has none or is not one)."""
    try:
        with open(path, "rb") as handle:
            data = handle.read(64 << 20)
    except OSError:
        return ""
    if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        return ""
    phoff, = struct.unpack_from("<Q", data, 0x20)
    phentsize, phnum = struct.unpack_from("<HH", data, 0x36)
    loads, dynamic = [], None
    for index in range(phnum):
        p_type, _, p_offset, p_vaddr, _, p_filesz, _, _ = struct.unpack_from("<IIQQQQQQ", data,
                                                                            phoff + index * phentsize)
        if p_type == 1:
            loads.append((p_vaddr, p_offset, p_filesz))
        elif p_type == 2:
            dynamic = (p_offset, p_filesz)
    if dynamic is None:
        return ""
    strtab = soname = None
    for offset in range(dynamic[0], dynamic[0] + dynamic[1], 16):
        tag, value = struct.unpack_from("<qQ", data, offset)
        if tag == 0:
            break
        if tag == 5:
            strtab = value
        elif tag == 14:
            soname = value
    if strtab is None or soname is None:
        return ""
    for vaddr, offset, size in loads:
        if vaddr <= strtab < vaddr + size:
            start = offset + (strtab - vaddr) + soname
            return data[start:data.index(b"\0", start)].decode("ascii", "replace")
    return ""


def _glibc() -> tuple[int, int]:
    """The C library's version, as the running process sees it ((0, 0) if unknown)."""
    try:
        text = os.confstr("CS_GNU_LIBC_VERSION") or ""
    except (ValueError, OSError):
        text = ""
    match = re.search(r"(\d+)\.(\d+)", text)
    return (int(match.group(1)), int(match.group(2))) if match else (0, 0)


def _user_base(name: str, files: dict[str, str]) -> str:
    """A fresh Python user base SCRATCH/NAME whose user site (as this Python's posix_user scheme names it) holds
    FILES (file name -> text). Returns the base folder."""
    base = scratch(name)
    user_site = Path(sysconfig.get_path("purelib", "posix_user", vars={"userbase": str(base)}))
    user_site.mkdir(parents=True, exist_ok=True)
    for file_name, text in files.items():
        (user_site / file_name).write_text(text)
    return str(base)


HIDE_GPUS = ('import os\n'
             '# a user\'s "keep my notebooks off the GPU" hook, left in the user site\n'
             'os.environ["CUDA_VISIBLE_DEVICES"] = ""\n')
ALLOC_PTH = ('import os; os.environ.setdefault("PYTORCH_CUDA_ALLOC_CONF", "max_split_size_mb:8")\n')


# ------------------------------------------------------------------------------------------------ the set
def build_scenarios(machine: dict[str, object]) -> list[Scenario]:
    cache = _ldconfig()
    system_main = cache.get("libcudnn.so.9") or str(machine.get("system_cudnn") or "")
    system_dir = os.path.dirname(system_main) if system_main else ""
    gpus = list(machine.get("gpus") or [])  # type: ignore[call-overload]
    uuid = str(gpus[0][1]) if gpus and len(gpus[0]) > 1 and str(gpus[0][1]).startswith("GPU-") else ""
    user_site_on = bool(site.ENABLE_USER_SITE)
    glibc = _glibc()
    free_threaded = bool(sysconfig.get_config_var("Py_GIL_DISABLED"))
    scenarios: list[Scenario] = []

    def add(scenario: Scenario, source: str) -> None:
        scenario.source = source  # type: ignore[attr-defined]
        scenarios.append(scenario)

    # ======================================================== 1. torch's allocator grammar, numbers (new keys/forms)
    alloc_source = ("https://github.com/pytorch/pytorch/blob/main/c10/core/AllocatorConfig.cpp (parseMaxSplitSize: "
                    "'max_split_size_mb too small, must be >= 20'; parseRoundUpPower2Divisions: 'the divisions has to "
                    "be power of 2'; ConfigTokenizer::toSizeT is std::stoull, which reads the leading digits) and "
                    "https://docs.pytorch.org/docs/stable/notes/cuda.html#optimizing-memory-usage-with-pytorch-cuda-"
                    "alloc-conf")
    add(Scenario("s11-alloc-split-too-small", "PYTORCH_CUDA_ALLOC_CONF=max_split_size_mb:16 (a forum's value for a "
                 "small GPU; torch's floor is 20 MB)", ("CD411",),
                 env={"PYTORCH_CUDA_ALLOC_CONF": "max_split_size_mb:16"}, predicted="fails"),
        alloc_source)
    add(Scenario("s11-alloc-split-exponent", "PYTORCH_CUDA_ALLOC_CONF=max_split_size_mb:1e3 (meant as 1000; the "
                 "value is read as an unsigned integer, so '1e3' is 1)", ("CD411",),
                 env={"PYTORCH_CUDA_ALLOC_CONF": "max_split_size_mb:1e3"}, predicted="fails"),
        alloc_source)
    add(Scenario("s11-alloc-non-split-small", "PYTORCH_CUDA_ALLOC_CONF=max_non_split_rounding_mb:8 (the rounding "
                 "cap for unsplit blocks, set below torch's floor of 20 MB)", ("CD411",),
                 env={"PYTORCH_CUDA_ALLOC_CONF": "max_non_split_rounding_mb:8"}, predicted="fails"),
        alloc_source)
    add(Scenario("s11-alloc-split-unit", "PYTORCH_CUDA_ALLOC_CONF=max_split_size_mb:512MB (a unit after the number: "
                 "the integer reader stops at the letters, 512 is taken)", ("CD411",),
                 env={"PYTORCH_CUDA_ALLOC_CONF": "max_split_size_mb:512MB"}, predicted="works",
                 cause_class="an allocator number with a unit suffix that torch's reader tolerates"),
        alloc_source)
    add(Scenario("s11-alloc-roundup-three", "PYTORCH_CUDA_ALLOC_CONF=roundup_power2_divisions:3 (the single-value "
                 "form; divisions must be a power of 2)", ("CD411",),
                 env={"PYTORCH_CUDA_ALLOC_CONF": "roundup_power2_divisions:3"}, predicted="fails"),
        alloc_source)
    add(Scenario("s11-alloc-roundup-brackets", "PYTORCH_CUDA_ALLOC_CONF=roundup_power2_divisions:[256:1,512:2,"
                 "1024:4,>:8],max_non_split_rounding_mb:64 (the bracketed per-size grammar, valid)", ("CD411",),
                 env={"PYTORCH_CUDA_ALLOC_CONF": "roundup_power2_divisions:[256:1,512:2,1024:4,>:8],"
                                                 "max_non_split_rounding_mb:64"},
                 predicted="works", cause_class="a valid nested allocator setting (colons inside brackets)"),
        alloc_source)

    # ======================================================== 2. torch's CUDA-only allocator keys (new keys)
    cuda_alloc_source = ("https://github.com/pytorch/pytorch/blob/main/c10/cuda/CUDAAllocatorConfig.cpp "
                         "(parsePinnedNumRegisterThreads: 'Number of register threads has to be power of 2'; "
                         "per_process_memory_fraction; 'Unrecognized key ... in CUDA allocator config') and "
                         "https://docs.pytorch.org/docs/stable/notes/cuda.html")
    add(Scenario("s11-alloc-pinned-threads", "PYTORCH_CUDA_ALLOC_CONF=pinned_use_cuda_host_register:True,"
                 "pinned_num_register_threads:6 (six threads for six CPU cores; the count must be a power of 2, "
                 "and the whole setting is parsed at the first CUDA allocation, pinned memory used or not)",
                 ("CD411",), env={"PYTORCH_CUDA_ALLOC_CONF": "pinned_use_cuda_host_register:True,"
                                                           "pinned_num_register_threads:6"},
                 predicted="fails"),
        cuda_alloc_source)
    add(Scenario("s11-alloc-process-fraction", "PYTORCH_CUDA_ALLOC_CONF=per_process_memory_fraction:0.001 (copied "
                 "from a note on sharing a GPU; a key of recent torch releases: 0.1 % of the GPU, or a key an older "
                 "release refuses)", ("CD413", "CD411"),
                 env={"PYTORCH_CUDA_ALLOC_CONF": "per_process_memory_fraction:0.001"}, predicted="fails"),
        cuda_alloc_source)
    add(Scenario("s11-alloc-rare-valid", "PYTORCH_CUDA_ALLOC_CONF=backend:native,release_lock_on_cudamalloc:True,"
                 "pinned_use_cuda_host_register:True,pinned_num_register_threads:8 (rarely seen keys, all valid)",
                 ("CD411",), env={"PYTORCH_CUDA_ALLOC_CONF": "backend:native,release_lock_on_cudamalloc:True,"
                                                          "pinned_use_cuda_host_register:True,"
                                                          "pinned_num_register_threads:8"},
                 predicted="works", cause_class="valid CUDA-only allocator keys"),
        cuda_alloc_source)

    # ======================================================== 3. the ROCm name of the allocator setting (new)
    add(Scenario("s11-hip-alloc-conf", "PYTORCH_HIP_ALLOC_CONF=max_split_size_mb:16 left by a shared .bashrc of a "
                 "cluster with AMD and NVIDIA nodes (no PYTORCH_CUDA_ALLOC_CONF or PYTORCH_ALLOC_CONF set): "
                 "torch's device-generic allocator config reads the ROCm name as a deprecated alias on every build",
                 ("CD411",), env={"PYTORCH_HIP_ALLOC_CONF": "max_split_size_mb:16"},
                 unset=("PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_ALLOC_CONF"), predicted="fails",
                 cause_class="a ROCm-named setting read by a CUDA build (whether it is read depends on the torch "
                             "release)"),
        "https://github.com/pytorch/pytorch/blob/main/c10/core/AllocatorConfig.cpp (AcceleratorAllocatorConfig::"
        "instance: PYTORCH_ALLOC_CONF, then PYTORCH_CUDA_ALLOC_CONF, then PYTORCH_HIP_ALLOC_CONF, the last two "
        "'deprecated, use PYTORCH_ALLOC_CONF instead'; no USE_ROCM guard there, unlike c10/cuda/CUDAAllocatorConfig.h)")

    # ======================================================== 4. JAX_CUDA_VISIBLE_DEVICES grammar (new forms)
    jax_vis_source = ("https://github.com/jax-ml/jax/blob/main/jax/_src/xla_bridge.py (jax_cuda_visible_devices, "
                      "default 'all'; otherwise options['visible_devices'] = [int(x) for x in value.split(',')]) "
                      "and https://docs.jax.dev/en/latest/gpu_memory_allocation.html")
    add(Scenario("s11-jax-visible-uuid", "JAX_CUDA_VISIBLE_DEVICES set to the GPU's UUID (the form "
                 "CUDA_VISIBLE_DEVICES takes; JAX reads integers only)", ("CD411",),
                 env={"JAX_CUDA_VISIBLE_DEVICES": uuid or PLACEHOLDER_UUID}, predicted="fails"),
        jax_vis_source)
    add(Scenario("s11-jax-visible-trailing-comma", "JAX_CUDA_VISIBLE_DEVICES='0,' (a list built in a shell loop "
                 "with a trailing comma: int('') fails)", ("CD411",), env={"JAX_CUDA_VISIBLE_DEVICES": "0,"},
                 predicted="fails"),
        jax_vis_source)
    add(Scenario("s11-jax-visible-minus-one", "JAX_CUDA_VISIBLE_DEVICES=-1 (CUDA's 'hide every GPU' idiom given to "
                 "JAX: an integer, but no device has it)", ("CD411", "CD113"),
                 env={"JAX_CUDA_VISIBLE_DEVICES": "-1"}, predicted="fails",
                 cause_class="a device id no GPU has, in JAX's own visible-devices setting"),
        jax_vis_source)
    add(Scenario("s11-jax-visible-space", "JAX_CUDA_VISIBLE_DEVICES=' 0' (a leading space from an env file: "
                 "Python's int() strips it)", ("CD411",), env={"JAX_CUDA_VISIBLE_DEVICES": " 0"},
                 predicted="works", cause_class="white space Python's int() tolerates"),
        jax_vis_source + "; https://docs.python.org/3/library/functions.html#int (surrounding white space allowed)")
    add(Scenario("s11-jax-visible-with-cvd-uuid", "CUDA_VISIBLE_DEVICES=<the GPU's UUID> and "
                 "JAX_CUDA_VISIBLE_DEVICES=0 (JAX's index counts the GPUs CUDA leaves visible)", ("CD411", "CD113"),
                 env={"CUDA_VISIBLE_DEVICES": uuid or "0", "JAX_CUDA_VISIBLE_DEVICES": "0"}, predicted="works",
                 cause_class="two visible-device settings that agree"),
        jax_vis_source + "; https://docs.nvidia.com/cuda/cuda-c-programming-guide/#cuda-environment-variables")

    # ======================================================== 5. jaxlib's GPU client options from the environment (new)
    client_source = ("https://github.com/jax-ml/jax/blob/main/jaxlib/xla_client.py (generate_pjrt_gpu_plugin_options: "
                     "'XLA_CLIENT_MEM_FRACTION is specified together with XLA_PYTHON_CLIENT_MEM_FRACTION', "
                     "int(XLA_PYTHON_CLIENT_COLLECTIVE_MEM_SIZE_MB), bool(int(XLA_PYTHON_CLIENT_ABORT_COLLECTIVES_ON_"
                     "FAILURE)) and bool(int(XLA_PYTHON_CLIENT_USE_TFRT_GPU_CLIENT)), preallocate off only for 'false', 'False', '0') and jax/_src/xla_bridge.py "
                     "(discover_pjrt_plugins logs an exception in a plugin's initialize() and goes on without it)")
    add(Scenario("s11-xla-both-fractions", "XLA_CLIENT_MEM_FRACTION=.3 added beside the old "
                 "XLA_PYTHON_CLIENT_MEM_FRACTION=.3 (a migration that kept both names; same value)", ("CD411",),
                 env={"XLA_CLIENT_MEM_FRACTION": ".3", "XLA_PYTHON_CLIENT_MEM_FRACTION": ".3",
                      "XLA_PYTHON_CLIENT_PREALLOCATE": "false"}, alone=False, predicted="fails"),
        client_source)
    add(Scenario("s11-xla-collective-size-unit", "XLA_PYTHON_CLIENT_COLLECTIVE_MEM_SIZE_MB=64MB (a unit after the "
                 "number)", ("CD411",),
                 env={"XLA_PYTHON_CLIENT_COLLECTIVE_MEM_SIZE_MB": "64MB", "XLA_PYTHON_CLIENT_PREALLOCATE": "false"},
                 alone=False, predicted="fails"),
        client_source)
    add(Scenario("s11-xla-abort-collectives-true", "XLA_PYTHON_CLIENT_ABORT_COLLECTIVES_ON_FAILURE=true (the variable "
                 "is read as an integer)", ("CD411",),
                 env={"XLA_PYTHON_CLIENT_ABORT_COLLECTIVES_ON_FAILURE": "true",
                      "XLA_PYTHON_CLIENT_PREALLOCATE": "false"}, alone=False, predicted="fails"),
        client_source)
    add(Scenario("s11-xla-tfrt-client-false", "XLA_PYTHON_CLIENT_USE_TFRT_GPU_CLIENT=false (a switch written as a "
                 "word; the variable is read as an integer)", ("CD411",),
                 env={"XLA_PYTHON_CLIENT_USE_TFRT_GPU_CLIENT": "false", "XLA_PYTHON_CLIENT_PREALLOCATE": "false"},
                 alone=False, predicted="fails"),
        client_source)
    add(Scenario("s11-xla-preallocate-no", "XLA_PYTHON_CLIENT_PREALLOCATE=no (meant as off: only 'false', 'False' and "
                 "'0' turn preallocation off, so JAX still takes 75 % of the GPU; judged alone)", ("CD411", "CD413"),
                 env={"XLA_PYTHON_CLIENT_PREALLOCATE": "no"}, predicted="works",
                 cause_class="a setting whose value is silently taken as the default"),
        client_source)
    add(Scenario("s11-jax-skip-constraints", "JAX_SKIP_CUDA_CONSTRAINTS_CHECK=1 (set once to get past a version "
                 "check, nothing wrong now)", ("CD411", "CD321"), env={"JAX_SKIP_CUDA_CONSTRAINTS_CHECK": "1"},
                 predicted="works", cause_class="JAX's CUDA version check skipped on a sound installation"),
        "https://github.com/jax-ml/jax/blob/main/jax_plugins/cuda/__init__.py (initialize: "
        "os.getenv('JAX_SKIP_CUDA_CONSTRAINTS_CHECK') skips _check_cuda_versions)")
    add(Scenario("s11-jax-pgle", "JAX_ENABLE_PGLE=true with JAX_PGLE_PROFILING_RUNS=1 (profile-guided latency "
                 "estimation: the first run is profiled through CUPTI)", ("CD411",),
                 env={"JAX_ENABLE_PGLE": "true", "JAX_PGLE_PROFILING_RUNS": "1"}, predicted="works",
                 cause_class="JAX's profile-guided compilation (a CUPTI side path)"),
        "https://docs.jax.dev/en/latest/gpu_performance_tips.html (profile-guided latency estimator: "
        "JAX_ENABLE_PGLE, JAX_PGLE_PROFILING_RUNS)")

    # ======================================================== 6. CUDA_VISIBLE_DEVICES by UUID in capitals (new form)
    if uuid:
        upper = "GPU-" + uuid[4:].upper()
        if upper != uuid:
            add(Scenario("s11-cvd-uuid-uppercase", "CUDA_VISIBLE_DEVICES=<the GPU's UUID with its hex digits in "
                         "capitals> (typed from a inventory sheet that upper-cases serials)", ("CD113",),
                         env={"CUDA_VISIBLE_DEVICES": upper}, predicted="fails",
                         cause_class="a GPU UUID whose letters differ in case"),
                "https://docs.nvidia.com/cuda/cuda-c-programming-guide/#cuda-environment-variables "
                "(CUDA_VISIBLE_DEVICES: indices or UUID strings as nvidia-smi prints them)")

    # ======================================================== 7. a relocated Python user base with hooks (new)
    user_source = ("https://docs.python.org/3/library/site.html (PYTHONUSERBASE; usercustomize; .pth lines starting "
                   "with 'import' are executed; ENABLE_USER_SITE is false in a virtual environment and with "
                   "PYTHONNOUSERSITE) and https://docs.python.org/3/using/cmdline.html#envvar-PYTHONUSERBASE")
    base = _user_base("s11-userbase-hide", {"usercustomize.py": HIDE_GPUS})
    add(Scenario("s11-userbase-usercustomize", "PYTHONUSERBASE names a shared project folder whose user site holds a "
                 "usercustomize.py that empties CUDA_VISIBLE_DEVICES inside every Python (the shell's environment "
                 "shows nothing)" + ("" if user_site_on else "; the judges' Python reads no user site (a virtual "
                                     "environment), so the hook never runs"),
                 ("CD113",), env={"PYTHONUSERBASE": base}, predicted="fails" if user_site_on else "works",
                 cause_class="a Python start-up hook in a relocated user site that changes a GPU setting"),
        user_source)
    base = _user_base("s11-userbase-pth", {"zz-team.pth": ALLOC_PTH})
    add(Scenario("s11-userbase-pth-alloc", "PYTHONUSERBASE names a folder whose user site holds a .pth file with an "
                 "import line that sets PYTORCH_CUDA_ALLOC_CONF=max_split_size_mb:8 inside every Python"
                 + ("" if user_site_on else "; the judges' Python reads no user site, so the line never runs"),
                 ("CD411",), env={"PYTHONUSERBASE": base}, predicted="fails" if user_site_on else "works",
                 cause_class="a torch setting made inside Python by a .pth line, invisible in the shell"),
        user_source)
    base = _user_base("s11-userbase-off", {"usercustomize.py": HIDE_GPUS, "zz-team.pth": ALLOC_PTH})
    add(Scenario("s11-userbase-nousersite", "the same two hooks in a relocated user site, with PYTHONNOUSERSITE=1: "
                 "Python does not read the user site at all", ("CD113", "CD411"),
                 env={"PYTHONUSERBASE": base, "PYTHONNOUSERSITE": "1"}, predicted="works",
                 cause_class="start-up hooks Python never reads"),
        user_source)

    # ======================================================== 8. start-up variables of newer Pythons (new)
    gil_fails = sys.version_info >= (3, 13) and not free_threaded
    add(Scenario("s11-python-gil-off", "PYTHON_GIL=0 from a free-threading experiment"
                 + (": this Python has the GIL built in and refuses to start ('Disabling the GIL is not supported by "
                    "this build')" if gil_fails else
                    " (this Python is older than 3.13 or free-threaded: the variable is ignored or honoured)"),
                 (), env={"PYTHON_GIL": "0"}, predicted="fails" if gil_fails else "works",
                 cause_class="a Python start-up variable the interpreter refuses (no Python starts, the doctor's "
                             "own included)"),
        "https://docs.python.org/3/using/cmdline.html#envvar-PYTHON_GIL and "
        "https://docs.python.org/3/howto/free-threading-python.html")
    add(Scenario("s11-python-cpu-count", "PYTHON_CPU_COUNT=1 and PYTHON_FROZEN_MODULES=off (a batch script's "
                 "settings for Python 3.13; older Pythons ignore them)", (),
                 env={"PYTHON_CPU_COUNT": "1", "PYTHON_FROZEN_MODULES": "off"}, predicted="works",
                 cause_class="Python's processor-count override and frozen-module switch"),
        "https://docs.python.org/3/using/cmdline.html#envvar-PYTHON_CPU_COUNT and #envvar-PYTHON_FROZEN_MODULES")
    in_venv = sys.prefix != getattr(sys, "base_prefix", sys.prefix)
    add(Scenario("s11-python-executable", "PYTHONEXECUTABLE names a removed interpreter (a macOS framework-build "
                 "setting carried in a dotfile; documented for macOS, yet CPython's path calculation reads it on Linux "
                 "too: sys.executable becomes that path, and a virtual environment's pyvenv.cfg is then looked for "
                 "beside it)" + (": the judges' Python is a virtual environment, which loses its site-packages"
                                 if in_venv else ": the judges' Python is not a virtual environment"),
                 ("CD415",) if in_venv else (),
                 env={"PYTHONEXECUTABLE": "/opt/removed/python3.9/bin/python3.9"},
                 predicted="fails" if in_venv else "works",
                 cause_class="a Python start-up variable that moves sys.executable (and a venv's prefix) elsewhere; "
                             "no code names it: CD415 is the nearest (the framework cannot be imported)"),
        "https://docs.python.org/3/using/cmdline.html#envvar-PYTHONEXECUTABLE and "
        "https://docs.python.org/3/library/sys_path_init.html (pyvenv.cfg is looked for beside the executable)")

    # ======================================================== 9. the loader's legacy and binding variables (new)
    old_glibc = (0, 0) < glibc < (2, 36)
    add(Scenario("s11-ld-assume-kernel", "LD_ASSUME_KERNEL=2.4.1 (advice for old Java/LinuxThreads programs, left in "
                 "a profile)" + (": this C library still honours it and refuses every library built for a newer "
                                 "kernel" if old_glibc else
                                 ": the C library here (2.36 or later) removed it, so it does nothing"),
                 (), env={"LD_ASSUME_KERNEL": "2.4.1"}, predicted="fails" if old_glibc else "works",
                 cause_class="a loader variable that once rejected every library (removed in glibc 2.36)"),
        "https://sourceware.org/git/?p=glibc.git;a=commit;h=b46d250656794e63a2946c481fda29dde6c9b0c5 (\"Remove "
        "kernel version check\", glibc 2.36: the LD_ASSUME_KERNEL environment variable removed) and "
        "https://man7.org/linux/man-pages/man8/ld.so.8.html")
    add(Scenario("s11-ld-weak-hwcap", "LD_DYNAMIC_WEAK=1 and LD_HWCAP_MASK=0 (from an old tuning guide)", (),
                 env={"LD_DYNAMIC_WEAK": "1", "LD_HWCAP_MASK": "0"}, predicted="works",
                 cause_class="loader variables for weak-symbol binding and hardware-capability masks"),
        "https://man7.org/linux/man-pages/man8/ld.so.8.html (LD_DYNAMIC_WEAK, LD_HWCAP_MASK)")

    # ======================================================== 10. a library folder on the Python path (new)
    if system_dir:
        add(Scenario("s11-pythonpath-library-folder", f"PYTHONPATH={system_dir} (the folder of the system's cuDNN "
                     "9.14, put in the Python path instead of the loader's path): Python finds no module there and "
                     "the loader never reads PYTHONPATH", ("CD321", "CD305", "CD419"),
                     env={"PYTHONPATH": system_dir}, predicted="works",
                     cause_class="a library folder in the wrong path variable"),
            "https://docs.python.org/3/using/cmdline.html#envvar-PYTHONPATH and "
            "https://man7.org/linux/man-pages/man8/ld.so.8.html (the loader's search order names no PYTHONPATH); "
            "https://github.com/pytorch/pytorch/blob/main/torch/__init__.py (_preload_cuda_deps looks only under "
            "<entry>/nvidia/<package>/lib)")

    # ======================================================== 10b. math-library link stubs under their sonames (new)
    stubs = sorted(glob.glob("/usr/local/cuda*/targets/*/lib/stubs") + glob.glob("/usr/local/cuda*/lib64/stubs"))
    linked: dict[str, str] = {}
    for stub_dir in stubs:
        for stem in ("libcufft", "libcusparse", "libcusolver", "libcurand"):
            stub = os.path.join(stub_dir, stem + ".so")
            name = _soname(stub) if os.path.isfile(stub) else ""
            if name.startswith(stem + ".so.") and name not in linked:
                linked[name] = os.path.realpath(stub)
    if len(linked) >= 2:
        d = scratch("s11-math-stubs")
        for name, stub in linked.items():
            os.symlink(stub, d / name)
        add(Scenario("s11-math-stubs-first", "a folder first on LD_LIBRARY_PATH whose " + ", ".join(sorted(linked))
                     + " are links to the toolkit's link stubs (made on a CPU build machine to link an extension); "
                     "the judges' work uses none of these libraries (cuFFT, cuSPARSE, cuSOLVER, cuRAND)",
                     ("CD203", "CD409"), env={"LD_LIBRARY_PATH": str(d)}, predicted="works",
                     cause_class="link stubs of CUDA math libraries a program loads but does not call"),
            "https://docs.nvidia.com/cuda/cuda-installation-guide-linux/ (the toolkit's lib64/stubs: libraries to "
            "link against, not to run with) and https://github.com/pytorch/pytorch/issues/138460 (CUDA libraries of "
            "another release first on LD_LIBRARY_PATH)")

    # ======================================================== 11. HOME and the user's identity unset (new)
    add(Scenario("s11-home-unset", "HOME, USER, LOGNAME and the XDG folders unset (a cron job or a container "
                 "started with env -i and a PATH)", (),
                 unset=("HOME", "USER", "LOGNAME", "XDG_CACHE_HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME"),
                 predicted="works",
                 cause_class="no HOME in the environment (Python and CUDA fall back to the password database)"),
        "https://docs.python.org/3/library/os.path.html#os.path.expanduser (falls back to the password database) "
        "and https://docs.nvidia.com/cuda/cuda-c-programming-guide/#cuda-environment-variables (CUDA_CACHE_PATH "
        "defaults under the home folder)")

    # ======================================================== 12. other subsystems' GPU variables (new)
    add(Scenario("s11-graphics-offload", "a laptop's render-offload settings in .profile: __NV_PRIME_RENDER_OFFLOAD=1, "
                 "__GLX_VENDOR_LIBRARY_NAME=nvidia, __VK_LAYER_NV_optimus=NVIDIA_only, DRI_PRIME=1, "
                 "__GL_THREADED_OPTIMIZATIONS=1 (OpenGL/Vulkan only)", ("CD418",),
                 env={"__NV_PRIME_RENDER_OFFLOAD": "1", "__GLX_VENDOR_LIBRARY_NAME": "nvidia",
                      "__VK_LAYER_NV_optimus": "NVIDIA_only", "DRI_PRIME": "1", "__GL_THREADED_OPTIMIZATIONS": "1"},
                 predicted="works", cause_class="graphics-stack variables CUDA does not read"),
        "https://download.nvidia.com/XFree86/Linux-x86_64/580.65.06/README/primerenderoffload.html")
    add(Scenario("s11-ucx-mpi-cuda", "CUDA-aware MPI/UCX settings in a plain shell: UCX_TLS=rc,cuda_copy,cuda_ipc, "
                 "UCX_MEMTYPE_CACHE=n, UCX_RNDV_SCHEME=get_zcopy, OMPI_MCA_pml=ucx, OMPI_MCA_opal_cuda_support=true "
                 "(nothing here loads UCX)", ("CD418",),
                 env={"UCX_TLS": "rc,cuda_copy,cuda_ipc", "UCX_MEMTYPE_CACHE": "n", "UCX_RNDV_SCHEME": "get_zcopy",
                      "OMPI_MCA_pml": "ucx", "OMPI_MCA_opal_cuda_support": "true"},
                 predicted="works", cause_class="MPI/UCX GPU settings no judge reads"),
        "https://openucx.readthedocs.io/en/master/faq.html (UCX_MEMTYPE_CACHE, UCX_TLS with CUDA) and "
        "https://docs.open-mpi.org/en/v5.0.x/tuning-apps/networking/cuda.html")
    return scenarios
