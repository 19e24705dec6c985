"""Round 7's sealed GPU scenarios for issue 45: classes neither the built-in suite nor rounds 5 and 6 have.

SEALED: not to be read by whoever builds the code for issue 45. Run it with the harness, on the GPU machine:

    python3 benchmarks/gpu_scenarios.py --scenarios .sealed/round7/scenarios45/scenarios.py --out "$OUT/s7" \
        --quiet-cases --budget-s 540

Every scenario bends ONE shell's environment: variables, soft limits, files it writes under
/tmp/cudnn-doctor-scenarios/s7-* (copies, links, small scripts), the working folder. Sources are found on the machine
at build time (torch's pip NVIDIA libraries under site-packages/nvidia, the loader's cache, the system cuDNN, the CUDA
toolkit under /usr/local); a scenario whose source is missing is left out. No installed file is written, nothing
outside /tmp, no network, no GPU setting is touched.

`causes` are codes of cudnn_doctor/codes.py (names and one-line meanings only, as of round 7) that a right answer
names if the setup fails. Where no code fits, `causes` is empty and `cause_class` says the class in words; where a
code fits only partly, both are given. `predicted` is the author's guess before any run; the judges decide. Each
scenario also carries `source` (an attribute the harness ignores): where the class comes from real users or the
documentation.
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

GONE = "/proc/cudnn-doctor-s7-nowhere"  # a folder nobody (root included) can create files in


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


def _pip_lib(site: str, stem: str) -> str:
    """The soname file (STEM.so.N) among the pip NVIDIA packages under SITE, or ''."""
    if not site:
        return ""
    for path in sorted(glob.glob(os.path.join(site, "nvidia", "*", "lib", stem + ".so.*"))):
        if re.fullmatch(re.escape(stem) + r"\.so\.\d+", os.path.basename(path)) and os.path.exists(path):
            return path
    return ""


def _script(path: Path, text: str) -> None:
    path.write_text("#!/bin/sh\n" + text)
    path.chmod(0o755)


def _aarch64_header() -> bytes:
    """An ELF64 little-endian shared-object header for EM_AARCH64 (183), padded: ld.so on x86-64 skips such a
    file silently (another machine) and searches on."""
    ident = b"\x7fELF" + bytes([2, 1, 1, 0]) + bytes(8)
    rest = struct.pack("<HHIQQQIHHHHHH", 3, 183, 1, 0, 64, 0, 0, 64, 56, 0, 64, 0, 0)
    return (ident + rest).ljust(65536, b"\0")


class _Elf:
    """The dynamic section of an x86-64 ELF file opened for update (a copy of ours: the source is only read)."""

    def __init__(self, handle) -> None:  # type: ignore[no-untyped-def]
        self.f = handle
        head = handle.read(64)
        if head[:4] != b"\x7fELF" or head[4] != 2 or head[5] != 1:
            raise ValueError("not an ELF64 little-endian file")
        phoff, = struct.unpack_from("<Q", head, 32)
        phentsize, phnum = struct.unpack_from("<HH", head, 54)
        handle.seek(phoff)
        table = handle.read(phentsize * phnum)
        self.loads: list[tuple[int, int, int]] = []
        dynamic = None
        for i in range(phnum):
            p_type, _fl, off, vaddr, _pa, filesz, _mem, _al = struct.unpack_from("<IIQQQQQQ", table, i * phentsize)
            if p_type == 1:
                self.loads.append((vaddr, off, filesz))
            elif p_type == 2:
                dynamic = (off, filesz)
        if dynamic is None:
            raise ValueError("no dynamic section")
        handle.seek(dynamic[0])
        raw = handle.read(dynamic[1])
        self.entries: list[tuple[int, int]] = []
        for i in range(0, len(raw) - 15, 16):
            tag, value = struct.unpack_from("<qQ", raw, i)
            if tag == 0:
                break
            self.entries.append((tag, value))
        self.strtab = self.offset(self.value(5))

    def value(self, tag: int) -> int:
        found = [v for t, v in self.entries if t == tag]
        if not found:
            raise ValueError(f"no dynamic tag {tag:#x}")
        return found[0]

    def offset(self, vaddr: int) -> int:
        for start, off, size in self.loads:
            if start <= vaddr < start + size:
                return off + vaddr - start
        raise ValueError("address outside the file")

    def string(self, index: int) -> bytes:
        self.f.seek(self.strtab + index)
        return self.f.read(256).split(b"\0", 1)[0]

    def rewrite(self, index: int, new: bytes) -> None:
        self.f.seek(self.strtab + index)
        self.f.write(new)


def _break_needed(path: Path) -> str:
    """Rename, in place and at the same length, one DT_NEEDED entry of PATH (not libc or the loader) to a library
    that exists nowhere: the file stays a valid ELF whose dependency the loader cannot find. Returns the new name."""
    with open(path, "r+b") as handle:
        elf = _Elf(handle)
        needed = [(v, elf.string(v)) for t, v in elf.entries if t == 1]
        preferred = [n for n in needed if n[1] in (b"libdl.so.2", b"libm.so.6", b"librt.so.1", b"libpthread.so.0")]
        others = [n for n in needed if not n[1].startswith((b"libc.so", b"ld-linux"))]
        choice = (preferred or others or needed)[0]
        new = b"liq" + choice[1][3:] if choice[1].startswith(b"lib") else b"q" + choice[1][1:]
        elf.rewrite(choice[0], new)
        return new.decode()


def _need_newer_glibc(path: Path) -> str:
    """Rename, in place, the newest GLIBC_2.N version PATH requires of libc.so.6 to GLIBC_9.N (its hash kept): the
    loader then refuses the file as built for a newer glibc ("version `GLIBC_9.N' not found"). Returns the name."""
    with open(path, "r+b") as handle:
        elf = _Elf(handle)
        verneed = elf.offset(elf.value(0x6FFFFFFE))
        count = elf.value(0x6FFFFFFF)
        best: tuple[tuple[int, ...], int, bytes] | None = None
        at = verneed
        for _ in range(count):
            handle.seek(at)
            _version, cnt, vn_file, vn_aux, vn_next = struct.unpack("<HHIII", handle.read(16))
            if elf.string(vn_file).startswith(b"libc.so"):
                aux = at + vn_aux
                for _ in range(cnt):
                    handle.seek(aux)
                    _hash, flags, _other, name, vna_next = struct.unpack("<IHHII", handle.read(16))
                    text = elf.string(name)
                    match = re.fullmatch(rb"GLIBC_2\.(\d+(?:\.\d+)?)", text)
                    if match and not flags & 0x2:  # not VER_FLG_WEAK
                        key = tuple(int(x) for x in match.group(1).split(b"."))
                        if best is None or key > best[0]:
                            best = (key, name, text)
                    if not vna_next:
                        break
                    aux += vna_next
            if not vn_next:
                break
            at += vn_next
        if best is None:
            raise ValueError("no GLIBC_2.N requirement")
        new = best[2].replace(b"GLIBC_2.", b"GLIBC_9.", 1)
        elf.rewrite(best[1], new)
        return new.decode()


# ------------------------------------------------------------------------------------------------ the set
def build_scenarios(machine: dict[str, object]) -> list[Scenario]:
    site = str(machine.get("site") or "")
    pip_cudnn = str(machine.get("pip_cudnn") or "")
    cache = _ldconfig()
    pip_cudnn_libs = sorted(glob.glob(os.path.join(pip_cudnn, "libcudnn*.so.9"))) if pip_cudnn else []
    system_main = cache.get("libcudnn.so.9") or str(machine.get("system_cudnn") or "")
    system_dir = os.path.dirname(system_main) if system_main else ""
    system_libs = {os.path.basename(p): os.path.join(system_dir, os.path.basename(p)) for p in pip_cudnn_libs}
    system_libs = {n: p for n, p in system_libs.items() if system_dir and os.path.exists(p)}
    gpus = list(machine.get("gpus") or [])  # type: ignore[call-overload]
    bus_id = str(gpus[0][2]) if gpus and len(gpus[0]) > 2 else ""
    path_now = os.environ.get("PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin")
    scenarios: list[Scenario] = []

    def add(scenario: Scenario, source: str) -> None:
        scenario.source = source  # type: ignore[attr-defined]
        scenarios.append(scenario)

    def links_to_system(folder: Path) -> None:
        for name, path in system_libs.items():
            os.symlink(os.path.realpath(path), folder / name)

    # ======================================================== CUDA driver variables no earlier set touched
    add(Scenario("s7-cuda-driver-knobs", "CUDA driver tuning variables with documented values: "
                 "CUDA_MANAGED_FORCE_DEVICE_ALLOC=1, CUDA_DEVICE_MAX_COPY_CONNECTIONS=2, CUDA_SCALE_LAUNCH_QUEUES=4x, "
                 "CUDA_MODULE_DATA_LOADING=EAGER, CUDA_FORCE_PRELOAD_LIBRARIES=0", ("CD416",),
                 env={"CUDA_MANAGED_FORCE_DEVICE_ALLOC": "1", "CUDA_DEVICE_MAX_COPY_CONNECTIONS": "2",
                      "CUDA_SCALE_LAUNCH_QUEUES": "4x", "CUDA_MODULE_DATA_LOADING": "EAGER",
                      "CUDA_FORCE_PRELOAD_LIBRARIES": "0"}, predicted="works",
                 cause_class="CUDA driver tuning variables (managed memory, copy connections, launch queues, module "
                             "data loading)"),
        "https://docs.nvidia.com/cuda/cuda-c-programming-guide/index.html#cuda-environment-variables")

    add(Scenario("s7-cuda-diagnostics-unwritable", "GPU core dumps on exception enabled with CUDA_COREDUMP_FILE and "
                 "CUDA_LOG_FILE in a folder that cannot exist", ("CD416",),
                 env={"CUDA_ENABLE_COREDUMP_ON_EXCEPTION": "1", "CUDA_ENABLE_CPU_COREDUMP_ON_EXCEPTION": "0",
                      "CUDA_COREDUMP_FILE": f"{GONE}/core.%h.%p", "CUDA_LOG_FILE": f"{GONE}/cuda.log"},
                 predicted="works",
                 cause_class="CUDA's diagnostic outputs (GPU core dump, error log) sent where nothing can be written"),
        "https://docs.nvidia.com/cuda/cuda-gdb/index.html#gpu-core-dump-support")

    add(Scenario("s7-profiler-injection-left", "CUDA_INJECTION64_PATH and NVTX_INJECTION64_PATH left from a profiler "
                 "session, naming a profiler install that is gone", ("CD416", "CD110"),
                 env={"CUDA_INJECTION64_PATH": "/opt/nvidia/nsight-systems/2025.3.1/target-linux-x64/"
                                               "libToolsInjection64.so",
                      "NVTX_INJECTION64_PATH": "/opt/nvidia/nsight-systems/2025.3.1/target-linux-x64/"
                                               "libToolsInjection64.so"}, predicted="works",
                 cause_class="profiler injection variables (CUDA_INJECTION64_PATH) naming a missing library"),
        "https://docs.nvidia.com/cupti/main/main.html (CUPTI injection: CUDA_INJECTION64_PATH)")

    # ======================================================== cuDNN / cuBLAS library variables
    add(Scenario("s7-cudnn-api-log-stdout", "cuDNN's API logging on at its most verbose, to stdout "
                 "(CUDNN_LOGLEVEL_DBG=3, CUDNN_LOGDEST_DBG=stdout), as the troubleshooting guide says", (),
                 env={"CUDNN_LOGLEVEL_DBG": "3", "CUDNN_LOGDEST_DBG": "stdout"}, predicted="works",
                 cause_class="a library's debug logging written into every program's stdout"),
        "https://docs.nvidia.com/deeplearning/cudnn/latest/reference/troubleshooting.html")

    add(Scenario("s7-library-logs-unwritable", "cuDNN backend, cuDNN frontend and cuBLASLt logging on, each to a file "
                 "in a folder that cannot exist", (),
                 env={"CUDNN_LOGLEVEL_DBG": "2", "CUDNN_LOGDEST_DBG": f"{GONE}/cudnn_%i.log",
                      "CUDNN_FRONTEND_LOG_INFO": "1", "CUDNN_FRONTEND_LOG_FILE": f"{GONE}/fe.log",
                      "CUBLASLT_LOG_LEVEL": "2", "CUBLASLT_LOG_FILE": f"{GONE}/cublaslt.log"}, predicted="works",
                 cause_class="library logging (cuDNN, cuDNN frontend, cuBLASLt) sent where nothing can be written"),
        "https://docs.nvidia.com/deeplearning/cudnn/frontend/latest/developer/debugging.html")

    add(Scenario("s7-workspace-precision-overrides", "CUDNN_CONV_WSCAP_DBG=0 (no convolution workspace), "
                 "CUBLASLT_WORKSPACE_SIZE=0 and NVIDIA_TF32_OVERRIDE=0", ("CD416",),
                 env={"CUDNN_CONV_WSCAP_DBG": "0", "CUBLASLT_WORKSPACE_SIZE": "0", "NVIDIA_TF32_OVERRIDE": "0"},
                 predicted="works",
                 cause_class="library workspace caps and precision overrides (cuDNN, cuBLASLt, TF32)"),
        "https://pytorch.org/docs/stable/cuda_environment_variables.html")

    d = scratch("s7-errata-not-json")
    (d / "errata.json").write_text(
        "// cuDNN errata: block the engine that crashed on our A100s (see ticket 4711)\n"
        "{ \"version\" : 1,\n"
        "  \"rules\"   : [\n"
        "    { \"rule_id\" : \"ConvFwd_eng42\", \"operation\" : \"ConvFwd\", \"engine\" : 42, \"knob\" : [],\n"
        "      \"cudnn_version_start\" : 8000, \"cudnn_version_end\" : -1 },\n"
        "  ]\n"
        "}\n")
    add(Scenario("s7-errata-not-json", "CUDNN_ERRATA_JSON_FILE names an errata filter written with a // comment and "
                 "a trailing comma (not JSON)", ("CD416", "CD411"),
                 env={"CUDNN_ERRATA_JSON_FILE": str(d / "errata.json")}, predicted="fails",
                 cause_class="a cuDNN frontend setting (the errata filter file) whose file the frontend cannot parse"),
        "https://github.com/NVIDIA/cudnn-frontend (README, Errata Filter: CUDNN_ERRATA_JSON_FILE)")

    d = scratch("s7-errata-valid")
    (d / "errata.json").write_text(
        "{ \"version\" : 1,\n"
        "  \"rules\"   : [\n"
        "    { \"rule_id\" : \"ConvFwd_eng999\", \"operation\" : \"ConvFwd\", \"engine\" : 999, \"knob\" : [],\n"
        "      \"cudnn_version_start\" : 8000, \"cudnn_version_end\" : -1 }\n"
        "  ]\n"
        "}\n")
    add(Scenario("s7-errata-valid", "CUDNN_ERRATA_JSON_FILE names a valid errata filter that blocks an engine no "
                 "GPU has", ("CD416", "CD411"), env={"CUDNN_ERRATA_JSON_FILE": str(d / "errata.json")},
                 predicted="works",
                 cause_class="a cuDNN frontend setting (the errata filter file)"),
        "https://pytorch.org/docs/stable/cuda_environment_variables.html")

    # ======================================================== PyTorch's own variables
    add(Scenario("s7-torch-logs-level", "TORCH_LOGS=INFO (a log level where torch wants component names)", ("CD411",),
                 env={"TORCH_LOGS": "INFO"}, predicted="fails"),
        "https://pytorch.org/docs/stable/logging.html")

    add(Scenario("s7-alloc-conf-new-name", "PYTORCH_ALLOC_CONF=expandable_segments:true (the allocator setting's new "
                 "name, a lower-case boolean)", ("CD411",),
                 env={"PYTORCH_ALLOC_CONF": "expandable_segments:true"}, predicted="fails"),
        "https://pytorch.org/docs/stable/notes/cuda.html#optimizing-memory-usage-with-pytorch-cuda-alloc-conf")

    add(Scenario("s7-alloc-conf-crlf", "PYTORCH_CUDA_ALLOC_CONF='expandable_segments:True\\r' (a CRLF env file; "
                 "torch's tokenizer drops white space)", ("CD411",),
                 env={"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True\r"}, predicted="works"),
        "https://github.com/direnv/direnv/issues/542 (CRLF env files leave \\r in values)")

    # ======================================================== JAX's own variables
    add(Scenario("s7-jax-x64-word", "JAX_ENABLE_X64=enabled (not one of JAX's truth words)", ("CD411",),
                 env={"JAX_ENABLE_X64": "enabled"}, predicted="fails"),
        "https://docs.jax.dev/en/latest/config_options.html")

    add(Scenario("s7-jax-matmul-precision-word", "JAX_DEFAULT_MATMUL_PRECISION=fp32 (not one of the names JAX "
                 "takes: float32, highest, ...)", ("CD411",), env={"JAX_DEFAULT_MATMUL_PRECISION": "fp32"},
                 predicted="fails"),
        "https://docs.jax.dev/en/latest/config_options.html (jax_default_matmul_precision)")

    add(Scenario("s7-jax-x64-on", "JAX_ENABLE_X64=1 (64-bit arrays: the convolution runs in float64)", ("CD411",),
                 env={"JAX_ENABLE_X64": "1"}, predicted="works"),
        "https://docs.jax.dev/en/latest/default_dtypes.html")

    d = scratch("s7-jax-cache-dir-file")
    (d / "jax-cache").write_text("this was meant to be a folder\n")
    add(Scenario("s7-jax-cache-dir-file", "JAX_COMPILATION_CACHE_DIR names an existing regular file (the persistent "
                 "cache and XLA's autotune cache below it cannot be folders there)", ("CD411",),
                 env={"JAX_COMPILATION_CACHE_DIR": str(d / "jax-cache"),
                      "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0"}, predicted="fails",
                 cause_class="a framework's cache-folder setting naming a path that cannot be a folder"),
        "https://github.com/goodfire-ai/spd/pull/974 (XLA autotune cache under the JAX cache dir kills runs)")

    add(Scenario("s7-jax-platforms-crlf", "JAX_PLATFORMS='cuda\\r' (a CRLF env file: the carriage return stays in "
                 "the value)", ("CD411", "CD412"), env={"JAX_PLATFORMS": "cuda\r"}, predicted="fails"),
        "https://github.com/direnv/direnv/issues/542 (CRLF env files leave \\r in values)")

    add(Scenario("s7-xla-allocator-platform", "XLA_PYTHON_CLIENT_ALLOCATOR=platform (allocate on demand, no BFC) "
                 "with XLA_PYTHON_CLIENT_PREALLOCATE=false", ("CD411", "CD413"),
                 env={"XLA_PYTHON_CLIENT_ALLOCATOR": "platform", "XLA_PYTHON_CLIENT_PREALLOCATE": "false"},
                 predicted="works"),
        "https://docs.jax.dev/en/latest/gpu_memory_allocation.html")

    # ======================================================== CUDA_VISIBLE_DEVICES forms never tried
    add(Scenario("s7-cvd-nodevfiles", "CUDA_VISIBLE_DEVICES=NoDevFiles (what Slurm sets for a job without GPUs)",
                 ("CD113",), env={"CUDA_VISIBLE_DEVICES": "NoDevFiles"}, predicted="fails"),
        "https://slurm.schedmd.com/gres.html (CUDA_VISIBLE_DEVICES set by Slurm's GRES plugin)")

    add(Scenario("s7-cvd-crlf", "CUDA_VISIBLE_DEVICES='0\\r' (from an env file with CRLF line ends)", ("CD113",),
                 env={"CUDA_VISIBLE_DEVICES": "0\r"}, predicted="works"),
        "https://github.com/direnv/direnv/issues/542")

    add(Scenario("s7-cvd-quoted", "CUDA_VISIBLE_DEVICES='\"0\"' (docker --env-file keeps the quotes)", ("CD113",),
                 env={"CUDA_VISIBLE_DEVICES": "\"0\""}, predicted="fails"),
        "https://github.com/docker/for-linux/issues/1208")

    if re.fullmatch(r"[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-9A-Fa-f]", bus_id):
        add(Scenario("s7-cvd-pci-bus-id", "CUDA_VISIBLE_DEVICES holds the GPU's PCI bus id as nvidia-smi prints it",
                     ("CD113",), env={"CUDA_VISIBLE_DEVICES": bus_id}, predicted="works"),
            "https://docs.nvidia.com/cuda/cuda-c-programming-guide/index.html#cuda-environment-variables")

    # ======================================================== LD_LIBRARY_PATH as glibc reads it
    if len(system_libs) >= 3 and os.path.realpath(system_dir) in (
            os.path.realpath("/usr/lib/x86_64-linux-gnu"), os.path.realpath("/usr/lib64")):
        add(Scenario("s7-ld-path-lib-token", "LD_LIBRARY_PATH='/usr/$LIB' (ld.so expands $LIB itself: the system's "
                     "library folder, with cuDNN 9.14)", ("CD305", "CD317", "CD401", "CD408"),
                     env={"LD_LIBRARY_PATH": "/usr/$LIB"}, predicted="fails",
                     cause_class="dynamic string tokens ($LIB, $PLATFORM, $ORIGIN) in LD_LIBRARY_PATH that ld.so "
                                 "expands"),
            "https://man7.org/linux/man-pages/man8/ld.so.8.html (Dynamic string tokens)")

    if len(system_libs) >= 3:
        base = scratch("s7-ld-path-platform-token")
        (base / "x86_64").mkdir()
        links_to_system(base / "x86_64")
        add(Scenario("s7-ld-path-platform-token", "LD_LIBRARY_PATH='<folder>/$PLATFORM' (ld.so expands $PLATFORM to "
                     "x86_64), whose x86_64/ subfolder holds the system's cuDNN 9.14",
                     ("CD305", "CD317", "CD401", "CD408"), env={"LD_LIBRARY_PATH": f"{base}/$PLATFORM"},
                     predicted="fails",
                     cause_class="dynamic string tokens ($LIB, $PLATFORM, $ORIGIN) in LD_LIBRARY_PATH that ld.so "
                                 "expands"),
            "https://man7.org/linux/man-pages/man8/ld.so.8.html (Dynamic string tokens)")

        add(Scenario("s7-ld-path-semicolons", "LD_LIBRARY_PATH with Windows-style ';' separators, the system's cuDNN "
                     "folder second (glibc splits on ';' too)", ("CD305", "CD317", "CD401", "CD408"),
                     env={"LD_LIBRARY_PATH": f"/opt/cuda/lib64;{system_dir}"}, predicted="fails",
                     cause_class="LD_LIBRARY_PATH separators other than ':' that glibc honours"),
            "https://man7.org/linux/man-pages/man8/ld.so.8.html (LD_LIBRARY_PATH: colons or semicolons)")

        home = scratch("s7-ld-path-literal-tilde") / "home"
        (home / "cudnn" / "lib").mkdir(parents=True)
        links_to_system(home / "cudnn" / "lib")
        add(Scenario("s7-ld-path-literal-tilde", "LD_LIBRARY_PATH='~/cudnn/lib:$HOME/cudnn/lib' quoted (neither is "
                     "expanded, by the shell or by ld.so); the home folder does hold a cuDNN 9.14 there",
                     ("CD305", "CD317", "CD401", "CD408"),
                     env={"HOME": str(home), "LD_LIBRARY_PATH": "~/cudnn/lib:$HOME/cudnn/lib"}, predicted="works",
                     cause_class="LD_LIBRARY_PATH entries with a literal ~ or $VAR that no one expands"),
            "https://www.gnu.org/software/bash/manual/html_node/Tilde-Expansion.html")

        base = scratch("s7-ld-path-latin1")
        folder = os.fsencode(str(base)) + b"/biblioth\xe8que-cudnn"  # Latin-1, not UTF-8
        os.mkdir(folder)
        for name, path in system_libs.items():
            os.symlink(os.fsencode(os.path.realpath(path)), folder + b"/" + os.fsencode(name))
        add(Scenario("s7-ld-path-latin1", "LD_LIBRARY_PATH's first folder has a Latin-1 (not UTF-8) name and holds "
                     "the system's cuDNN 9.14", ("CD305", "CD317", "CD401", "CD408"),
                     env={"LD_LIBRARY_PATH": os.fsdecode(folder)}, predicted="fails",
                     cause_class="a library folder whose name is not UTF-8"),
            "https://peps.python.org/pep-0383/ (bytes that are not UTF-8 in paths and the environment)")

    # ======================================================== library files of other kinds on the path
    graph = os.path.join(pip_cudnn, "libcudnn_graph.so.9") if pip_cudnn else ""
    if graph and os.path.exists(graph):
        d = scratch("s7-graph-missing-dependency")
        shutil.copyfile(os.path.realpath(graph), d / "libcudnn_graph.so.9")
        try:
            missing = _break_needed(d / "libcudnn_graph.so.9")
        except (OSError, ValueError, struct.error):
            missing = ""
        if missing:
            add(Scenario("s7-graph-missing-dependency", "a copy of libcudnn_graph.so.9 that needs a library no "
                         f"machine has ({missing}) first on LD_LIBRARY_PATH", ("CD307", "CD330", "CD304"),
                         env={"LD_LIBRARY_PATH": str(d)}, predicted="fails",
                         cause_class="a cuDNN library first on the path whose own dependency the loader cannot find"),
                "https://github.com/AUTOMATIC1111/stable-diffusion-webui/issues/10230 (a cuDNN library is found, "
                "its own dependency is not)")

    nvjitlink = _pip_lib(site, "libnvJitLink")
    if nvjitlink:
        d = scratch("s7-nvjitlink-newer-glibc")
        target = d / os.path.basename(nvjitlink)
        shutil.copyfile(os.path.realpath(nvjitlink), target)
        try:
            version = _need_newer_glibc(target)
        except (OSError, ValueError, struct.error):
            version = ""
        if version:
            add(Scenario("s7-nvjitlink-newer-glibc", f"a copy of {target.name} built for a newer glibc (it needs "
                         f"{version}) in a folder first on LD_LIBRARY_PATH", ("CD203", "CD409"),
                         env={"LD_LIBRARY_PATH": str(d)}, predicted="fails",
                         cause_class="a CUDA library first on the path built for a newer C library than the machine's "
                                     "(GLIBC version not found)"),
                "https://github.com/jax-ml/jax/issues/28929 (nvJitLink taken from LD_LIBRARY_PATH) and the common "
                "\"version `GLIBC_2.xx' not found\" of libraries copied between machines")

    d = scratch("s7-driver-libs-aarch64")
    for name in ("libcuda.so.1", "libnvidia-ml.so.1"):
        (d / name).write_bytes(_aarch64_header())
    add(Scenario("s7-driver-libs-aarch64", "aarch64 (Grace) copies of libcuda.so.1 and libnvidia-ml.so.1 in a shared "
                 "home's lib folder first on LD_LIBRARY_PATH (ld.so skips files of another machine)",
                 ("CD110", "CD118", "CD111"), env={"LD_LIBRARY_PATH": str(d)}, predicted="works",
                 cause_class="driver libraries built for another CPU architecture on the loader's path"),
        "https://man7.org/linux/man-pages/man8/ld.so.8.html")

    stubs = next(iter(sorted(glob.glob("/usr/local/cuda*/targets/x86_64-linux/lib/stubs")
                             + glob.glob("/usr/local/cuda*/lib64/stubs"), reverse=True)), "")
    if stubs and os.path.isdir(stubs):
        versioned = [n for n in ("libcuda.so.1", "libnvidia-ml.so.1") if os.path.exists(os.path.join(stubs, n))]
        add(Scenario("s7-toolkit-stubs-folder", "the CUDA toolkit's own stubs folder on LD_LIBRARY_PATH (a build's "
                     "setting left in the runtime shell; it holds libcuda.so and libnvidia-ml.so, no .so.1)",
                     ("CD111", "CD118"), env={"LD_LIBRARY_PATH": os.path.realpath(stubs)},
                     predicted="fails" if versioned else "works"),
            "https://github.com/numba/numba/issues/8985 (the stubs folder on LD_LIBRARY_PATH)")

    # ======================================================== the dynamic loader's own variables
    libz = cache.get("libz.so.1", "")
    if libz:
        add(Scenario("s7-ld-audit-not-auditor", "LD_AUDIT names an ordinary library (libz), not an audit module "
                     "(ld.so: 'cannot be loaded as audit interface ... ignored')", ("CD307", "CD409"),
                     env={"LD_AUDIT": os.path.realpath(libz)}, predicted="works",
                     cause_class="LD_AUDIT naming a library that is not an audit module"),
            "https://man7.org/linux/man-pages/man7/rtld-audit.7.html")

    add(Scenario("s7-ld-debug-libs", "LD_DEBUG=libs left on after debugging (every program writes the loader's "
                 "search to stderr)", (), env={"LD_DEBUG": "libs"}, predicted="works",
                 cause_class="the loader's debug output on in every program"),
        "https://man7.org/linux/man-pages/man8/ld.so.8.html (LD_DEBUG)")

    allocator = next((cache[n] for n in ("libjemalloc.so.2", "libtcmalloc_minimal.so.4", "libtcmalloc.so.4")
                      if n in cache), "")
    if allocator:
        add(Scenario("s7-preload-malloc", f"LD_PRELOAD of {os.path.basename(allocator)} (a faster malloc, as tuning "
                     "guides advise)", ("CD317", "CD409"), env={"LD_PRELOAD": os.path.realpath(allocator)},
                     predicted="works", cause_class="a non-CUDA library (a malloc replacement) preloaded"),
            "https://pytorch.org/tutorials/recipes/recipes/tuning_guide.html (jemalloc / tcmalloc)")

    # ======================================================== Python's start-up hooks and settings
    d = scratch("s7-sitecustomize-hides-gpu")
    (d / "sitecustomize.py").write_text(
        "# site policy: give Python programs only the GPUs the scheduler granted\n"
        "import os\n"
        "os.environ.setdefault(\"CUDA_VISIBLE_DEVICES\", os.environ.get(\"SLURM_STEP_GPUS\", \"\"))\n")
    add(Scenario("s7-sitecustomize-hides-gpu", "a sitecustomize.py on PYTHONPATH sets CUDA_VISIBLE_DEVICES from an "
                 "unset scheduler variable (empty) inside every Python program", ("CD113",),
                 env={"PYTHONPATH": str(d)}, unset=("CUDA_VISIBLE_DEVICES", "SLURM_STEP_GPUS"), predicted="fails",
                 cause_class="a Python start-up hook (sitecustomize) that changes the environment inside every "
                             "Python program"),
        "https://docs.python.org/3/library/site.html (sitecustomize)")

    if system_libs.get("libcudnn.so.9"):
        d = scratch("s7-sitecustomize-preloads-cudnn")
        (d / "sitecustomize.py").write_text(
            "# make cuDNN available to every program (it could not be found once)\n"
            "import ctypes\n"
            f"ctypes.CDLL({os.path.realpath(system_libs['libcudnn.so.9'])!r}, mode=ctypes.RTLD_GLOBAL)\n")
        add(Scenario("s7-sitecustomize-preloads-cudnn", "a sitecustomize.py on PYTHONPATH loads the system's cuDNN "
                     "9.14 with ctypes (RTLD_GLOBAL) into every Python program", ("CD317", "CD305", "CD401", "CD408"),
                     env={"PYTHONPATH": str(d)}, predicted="fails",
                     cause_class="a Python start-up hook that loads a library into every Python program"),
            "https://docs.python.org/3/library/site.html (sitecustomize)")

    if system_dir:
        d = scratch("s7-sitecustomize-sets-ld-path")
        (d / "sitecustomize.py").write_text(
            "# point programs at the system cuDNN\n"
            "import os\n"
            f"os.environ[\"LD_LIBRARY_PATH\"] = {system_dir!r} + \":\" + os.environ.get(\"LD_LIBRARY_PATH\", \"\")\n")
        add(Scenario("s7-sitecustomize-sets-ld-path", "a sitecustomize.py on PYTHONPATH sets LD_LIBRARY_PATH to the "
                     "system's cuDNN folder inside Python (too late for the running process's loader; children "
                     "inherit it)", ("CD305", "CD317", "CD401", "CD408"), env={"PYTHONPATH": str(d)},
                     predicted="works",
                     cause_class="LD_LIBRARY_PATH changed inside a running Python program (the loader read it at "
                                 "start)"),
            "https://docs.python.org/3/library/site.html (sitecustomize)")

    add(Scenario("s7-python-warnings-error", "PYTHONWARNINGS=error (every warning raised as an exception)", (),
                 env={"PYTHONWARNINGS": "error"}, predicted="works",
                 cause_class="Python's warnings turned into errors for every program"),
        "https://docs.python.org/3/using/cmdline.html#envvar-PYTHONWARNINGS")

    add(Scenario("s7-python-optimize-2", "PYTHONOPTIMIZE=2 (asserts and docstrings stripped)", (),
                 env={"PYTHONOPTIMIZE": "2"}, predicted="works",
                 cause_class="Python's optimisation mode (no asserts, no docstrings) for every program"),
        "https://github.com/jax-ml/jax/issues/21542 (import under python -OO)")

    add(Scenario("s7-ascii-locale", "an ASCII-only locale and stdio: LC_ALL=POSIX, PYTHONCOERCECLOCALE=0, "
                 "PYTHONUTF8=0, PYTHONIOENCODING=ascii:strict", (),
                 env={"LC_ALL": "POSIX", "LANG": "POSIX", "PYTHONCOERCECLOCALE": "0", "PYTHONUTF8": "0",
                      "PYTHONIOENCODING": "ascii:strict"}, predicted="works",
                 cause_class="an ASCII-only locale and standard streams"),
        "https://peps.python.org/pep-0538/")

    # ======================================================== CPU, threads and soft limits of other kinds
    add(Scenario("s7-omp-thread-vars", "OpenMP/MKL thread variables with values libgomp refuses: OMP_NUM_THREADS=0, "
                 "MKL_NUM_THREADS=auto, OMP_PROC_BIND=maybe", (),
                 env={"OMP_NUM_THREADS": "0", "MKL_NUM_THREADS": "auto", "OMP_PROC_BIND": "maybe"},
                 predicted="works", cause_class="CPU thread-pool variables (OpenMP, MKL) with invalid values"),
        "https://gcc.gnu.org/onlinedocs/libgomp/OMP_005fNUM_005fTHREADS.html")

    if shutil.which("taskset"):
        add(Scenario("s7-one-cpu-affinity", "the shell pinned to one CPU (taskset -p -c 0 $$), as a batch job with one "
                     "core", ("CD116",), shell="taskset -p -c 0 $$ >/dev/null", predicted="works",
                     cause_class="a CPU affinity of one core"),
            "https://man7.org/linux/man-pages/man1/taskset.1.html")

    add(Scenario("s7-cpu-time-2s", "ulimit -t 2 (two seconds of CPU time per process, as on some login nodes)",
                 ("CD116",), shell="ulimit -S -t 2", predicted="fails"),
        "https://man7.org/linux/man-pages/man2/setrlimit.2.html (RLIMIT_CPU)")

    add(Scenario("s7-file-size-64k", "ulimit -f 64 (no file over 64 KiB may be written)", ("CD116",),
                 shell="ulimit -S -f 64", predicted="works"),
        "https://man7.org/linux/man-pages/man2/setrlimit.2.html (RLIMIT_FSIZE)")

    add(Scenario("s7-data-limit-16g", "ulimit -d of 16 GB (RLIMIT_DATA: private writable memory, not the address "
                 "space)", ("CD116",), shell="ulimit -S -d 16000000", predicted="works"),
        "https://github.com/openSUSE/obs-build/pull/855 (ulimit -d instead of ulimit -v to bound memory)")

    # ======================================================== tools and container variables in a plain shell
    d = scratch("s7-stale-nvidia-smi")
    _script(d / "nvidia-smi", "echo 'Failed to initialize NVML: Driver/library version mismatch'\n"
                              "echo 'NVML library version: 535.183'\nexit 18\n")
    add(Scenario("s7-stale-nvidia-smi", "an nvidia-smi of an old driver install first on PATH (it answers 'Driver/"
                 "library version mismatch'); the programs never run it", ("CD104", "CD112"),
                 env={"PATH": f"{d}:{path_now}"}, predicted="works",
                 cause_class="a stale nvidia-smi first on PATH"),
        "https://github.com/tinygrad/open-gpu-kernel-modules/issues/47 (nvidia-smi of another NVML release)")

    add(Scenario("s7-container-require-vars", "container-toolkit variables in a plain shell: "
                 "NVIDIA_REQUIRE_CUDA='cuda>=13.2 brand=tesla,driver>=590', NVIDIA_DISABLE_REQUIRE=false",
                 ("CD150", "CD120"),
                 env={"NVIDIA_REQUIRE_CUDA": "cuda>=13.2 brand=tesla,driver>=590", "NVIDIA_DISABLE_REQUIRE": "false"},
                 predicted="works",
                 cause_class="container-runtime requirement variables outside any container"),
        "https://docs.nvidia.com/datacenter/cloud-native/container-toolkit/latest/docker-specialized.html")
    return scenarios
