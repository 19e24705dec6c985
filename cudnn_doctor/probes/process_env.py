"""What a program started in the user's own environment gets (DESIGN.md, probes: the second view).

The files on disk say what could be loaded; this asks the things themselves, in a child that inherits the
user's environment and limits unchanged: the libcuda.so.1 the loader maps (LD_LIBRARY_PATH, LD_PRELOAD and
the cache as they are) and what cuInit answers, the GPUs CUDA_VISIBLE_DEVICES and CUDA_DEVICE_ORDER leave
and in which order, what LD_PRELOAD maps. Beside it, read here without a child: the kernel module's release,
the process limits, the frameworks' settings from the environment, and each cuDNN sub-library a framework's
copy will open, resolved as the loader resolves it and read as ELF. Never judges: rules/process_env.py does.
"""

from __future__ import annotations

import functools
import os
import re
import stat
from dataclasses import replace

from cudnn_doctor.elf import ElfError, ElfInfo, read_elf_and_exported_u32
from cudnn_doctor.knowledge.data import load, sublibrary_names
from cudnn_doctor.model import (
    STUB_WORDS,
    Framework,
    Gpu,
    LibraryProbe,
    LoadedCudnn,
    ObservedLoad,
    ProcessView,
    SubLibrary,
    VisibleGpu,
)
from cudnn_doctor.operating_system import CURRENT
from cudnn_doctor.probes.context import SearchContext
from cudnn_doctor.probes.library_jobs import Job, changed_process
from cudnn_doctor.probes.loader import resolve_like_loader
from cudnn_doctor.probes.origin import origin
from cudnn_doctor.variables import preload_entries
from cudnn_doctor.versions import ascii_digits, decode_cuda, release_in_file_name, version_tuple

CUDA_JOB = Job("cuda", "libcuda.so.1")  # dlopen'd by soname, as every CUDA program opens it


def context_said(said: object) -> str | None:
    """The probe's "context" answer in words: "ok", or "STEP: CUDA_ERROR_NAME (CUDA's text)"; None where not made."""
    if not isinstance(said, dict):
        return None
    if said.get("status") == 0:
        return "ok"
    name = said.get("name") if isinstance(said.get("name"), str) else f"CUDA error {said.get('status')}"
    text = f" ({said['text']})" if isinstance(said.get("text"), str) and said.get("text") != name else ""
    return f"{said.get('step')}: {name}{text}"[:300]


def cuda_job(env: dict[str, str], target: str = CUDA_JOB.target) -> Job:
    """The question for CUDA's child: cuInit and the GPUs, and a first context where a CUDA variable set here is one
    the data cannot vouch for (_probe_jobs.probe_cuda_context)."""
    from cudnn_doctor.knowledge.environment import read_at_context

    return Job("cuda_context" if read_at_context(env) else "cuda", target)


KERNEL_VERSION_FILE = "/proc/driver/nvidia/version"
LIMITS = ("RLIMIT_AS", "RLIMIT_NOFILE", "RLIMIT_MEMLOCK", "RLIMIT_STACK", "RLIMIT_CPU", "RLIMIT_NPROC", "RLIMIT_DATA",
          # read and reported (process.limits), never judged: nothing was seen to fail under them (round ten: a
          # resident-set, lock and message-queue limit, which Linux does not enforce or programs never reach; no
          # pending signals), or what fails is the program's own writing (core dumps, files past ulimit -f)
          "RLIMIT_FSIZE", "RLIMIT_CORE", "RLIMIT_SIGPENDING", "RLIMIT_MSGQUEUE", "RLIMIT_RSS", "RLIMIT_LOCKS",
          "RLIMIT_NICE", "RLIMIT_RTPRIO", "RLIMIT_RTTIME")
VERSION_SYMBOLS = ("cudnn_graph_version", "cudnn_ops_infer_version", "cudnn_adv_infer_version",
                   "cudnn_cnn_infer_version", "cudnn_ops_train_version", "cudnn_adv_train_version",
                   "cudnn_cnn_train_version")


def early_reasons(ctx: SearchContext, always: bool = False) -> list[str]:
    """The reasons to ask CUDA that the environment alone gives (no loader cache needed): what lets its child
    start first, beside NVML's."""
    reasons = []
    if preload_entries(ctx.env):
        reasons.append("LD_PRELOAD is set")
    if "CUDA_VISIBLE_DEVICES" in ctx.env and plain_entries(ctx.env["CUDA_VISIBLE_DEVICES"]) is None:
        reasons.append("CUDA_VISIBLE_DEVICES is set, and not to GPU indices or whole GPU UUIDs alone")
    if read_limits().get("RLIMIT_AS", (-1, -1))[0] >= 0:
        reasons.append("the address space is limited (ulimit -v)")
    free = free_descriptors()
    if free is not None and free < 1024 and free < max((float(row.get("jax_free_minimum", 0)) for row in load("process_env").get(
            "limit", []) if row.get("resource") == "RLIMIT_NOFILE"), default=0.0):
        reasons.append(f"only {free} descriptors are free under the open-files limit where a program starts")
    from cudnn_doctor.knowledge.environment import read_at_context, read_at_cuinit

    reasons += [f"{name} is set, and CUDA reads it at cuInit" for name in read_at_cuinit(ctx.env)]
    reasons += [f"{name} is set, and CUDA may read it where it makes a context (no row of the data vouches for "
                "its value): a context is made" for name in read_at_context(ctx.env)]
    if always:
        reasons.append("--deep")
    return reasons


def reasons_to_ask_cuda(ctx: SearchContext, cache: dict[str, list[str]], always: bool = False) -> list[str]:
    """Why a program's CUDA may answer otherwise than the driver's own files and NVML say, in this environment;
    empty where nothing can (then cuInit, 0.2 s a GPU on an H100, is not asked; `check --deep` always asks).
    What can: LD_PRELOAD, CUDA_VISIBLE_DEVICES, a finite address-space limit (early_reasons), a libcuda.so.1
    the loader finds that is not the kernel module's release (a stub, a compat package, another driver's copy),
    a missing /dev/nvidia-uvm. (A container's NVIDIA_VISIBLE_DEVICES is not one: the runtime hook gives CUDA
    and NVML the same device files; CUDA images set it whether or not the hook ran.)"""
    found = resolve_like_loader("libcuda.so.1", [], ctx, cache)
    reasons = early_reasons(ctx)
    if found is not None and os.path.exists(ctx.system("/dev/dxg")):
        # WSL 2: the driver is Windows's, reached through /dev/dxg; no kernel module or nvidia-uvm to compare with
        reasons.append("WSL 2 (/dev/dxg): the driver is the Windows one, and only CUDA itself can say what it gives")
    elif found is not None:
        kernel = kernel_driver_version(ctx)
        if kernel is None or release_in_name(found) != kernel:
            reasons.append(f"the loader finds {os.path.realpath(found)}, not the kernel module's release "
                           f"({kernel or 'unknown'})")
        # a file of that name earlier on LD_LIBRARY_PATH than the one read as the loader's pick (empty, foreign, cut
        # short): only the loader itself says whether it stops there
        for folder in ctx.searched_library_path():
            other = os.path.join(folder, "libcuda.so.1")
            if os.path.lexists(other) and os.path.realpath(other) != os.path.realpath(found):
                reasons.append(f"{other} is on LD_LIBRARY_PATH before the driver's")
                break
            if os.path.realpath(os.path.dirname(found)) == os.path.realpath(folder):
                break
        if not os.path.exists(ctx.system("/dev/nvidia-uvm")):
            reasons.append("/dev/nvidia-uvm is missing")
    if always:
        reasons.append("--deep")
    return reasons if found is not None or preload_entries(ctx.env) else []


@functools.cache
def plain_entry_pattern() -> re.Pattern[str]:
    return re.compile(r"0|[1-9][0-9]{0,3}|GPU-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def plain_entries(value: str) -> tuple[str, ...] | None:
    """CUDA_VISIBLE_DEVICES as GPU indices ("0", "1,0": what Slurm and most users set) or as whole GPU UUIDs (as
    nvidia-smi -L prints them), each written once; None for any other value (a UUID prefix, a MIG name, a space, a
    sign, an empty entry, a repeat, indices and UUIDs mixed): what those leave, only CUDA itself can say."""
    entries = tuple(value.split(","))
    if not all(plain_entry_pattern().fullmatch(entry) for entry in entries) or len(set(entries)) != len(entries):
        return None
    # indices and UUIDs never mixed: CUDA stops at the first entry of the other kind (seen on 2 x H100:
    # `1,GPU-<GPU 0's UUID>` leaves GPU 1 alone, `GPU-<GPU 0's UUID>,1` GPU 0 alone)
    return entries if len({entry.startswith("GPU-") for entry in entries}) == 1 else None


def visible_from_nvml(value: str, gpus: list[Gpu], env: dict[str, str]) -> tuple[VisibleGpu, ...] | None:
    """The GPUs a program sees where CUDA_VISIBLE_DEVICES (VALUE) names GPUs by index or whole UUID alone, from
    NVML's GPUS, without cuInit (0.2 s a GPU): CUDA takes the named GPUs in the order named, a UUID naming its GPU,
    an index counting GPUs of one kind by PCI bus, as NVML does. None where NVML alone cannot say: an index or UUID
    it has no GPU for (CUDA stops there), one GPU named twice, indices among GPUs of several kinds that CUDA numbers
    fastest first (unless CUDA_DEVICE_ORDER=PCI_BUS_ID), a GPU in MIG mode (whose instances CUDA shows instead), no
    GPU from NVML at all. Then CUDA is asked."""
    entries = plain_entries(value)
    by_index = {gpu.index: gpu for gpu in gpus}
    by_uuid = {gpu.uuid: gpu for gpu in gpus if gpu.uuid}
    if entries is None or not gpus or len(by_index) != len(gpus) or sorted(by_index) != list(range(len(gpus))):
        return None
    named = [by_uuid.get(entry) if entry.startswith("GPU-") else by_index.get(int(entry)) for entry in entries]
    if any(gpu is None for gpu in named) or len({id(gpu) for gpu in named}) != len(named):
        return None
    several_kinds = len({(gpu.name, gpu.compute_capability) for gpu in gpus}) > 1
    if several_kinds and env.get("CUDA_DEVICE_ORDER") != "PCI_BUS_ID" and ascii_digits(entries[0][:1]):
        return None
    if not all(_without_mig(gpu) for gpu in gpus):
        return None
    return tuple(VisibleGpu(ordinal, gpu.uuid, _cuda_bus(gpu.pci_bus_id), gpu.name, gpu.index)
                 for ordinal, gpu in enumerate(named) if gpu is not None)


def _without_mig(gpu: Gpu) -> bool:
    """NVML says GPU is not in MIG mode, nor will be at its next reset, or has no MIG at all."""
    health = gpu.health
    if health is None:
        return False
    if "mig_mode" in health.not_supported:
        return True
    return health.mig_mode is False and not health.mig_mode_pending


def _cuda_bus(text: str | None) -> str | None:
    """NVML's PCI bus id (00000000:19:00.0) as CUDA writes it (0000:19:00.0)."""
    if not text or ":" not in text:
        return text
    domain, rest = text.split(":", 1)
    return f"{domain[-4:].rjust(4, '0')}:{rest}" if len(domain) > 4 and not domain[:-4].strip("0") else text


PRELOAD_CHECKED = ("libcublas", "libcublasLt", "libcudart", "libnvrtc", "libcufft", "libcusparse", "libcurand",
                   "libcusolver", "libnvJitLink", "libnccl", "libcupti")


def preloaded_cuda_libraries(env: dict[str, str], frameworks: list[Framework]) -> tuple[tuple[str, ...], ...]:
    """LD_PRELOAD's CUDA libraries (not cuDNN, libcuda or NVML: their own rules) that a framework's own wheels hold
    under the same soname, where the releases differ: (entry, soname, its release, framework, the wheel's release).
    The preloaded copy comes first in every program's symbol scope, so the framework's libraries bind to it."""
    import glob

    found: list[tuple[str, ...]] = []
    for entry in preload_entries(env):
        soname = os.path.basename(entry)
        if not soname.startswith(PRELOAD_CHECKED) or ".so" not in soname:
            continue
        major = re.match(r"(.+?\.so\.\d+)", soname)  # libcublas.so.13.0.2.14 -> libcublas.so.13
        soname = major.group(1) if major else soname
        release = release_in_file_name(os.path.basename(os.path.realpath(entry)))
        for framework in frameworks:
            site = str(framework.details.get("site_packages") or "")
            if not site or framework.details.get("cpu_only") or framework.details.get("assumed"):
                continue
            for wheel_file in sorted(glob.glob(os.path.join(glob.escape(site), "nvidia", "*", "lib", soname))):
                if os.path.realpath(wheel_file) == os.path.realpath(entry):
                    continue
                component = wheel_file.split(os.sep)[-3]
                infos = sorted(glob.glob(os.path.join(glob.escape(site), f"nvidia_{component}*.dist-info")))
                wheel_release = os.path.basename(infos[0]).removesuffix(".dist-info").rsplit("-", 1)[-1] if infos else \
                    release_in_file_name(os.path.basename(os.path.realpath(wheel_file)))
                if release and wheel_release and release.split(".")[:2] != wheel_release.split(".")[:2]:
                    found.append((entry, soname, release, framework.name, wheel_release))
    return tuple(found)


def link_stub(path: str) -> str:
    """The CUDA toolkit's link stub that PATH (a soname-named file: libcublas.so.13) is, or '': its real file is a
    bare-named library (libcublas.so) in a folder named stubs, where the toolkit keeps the stubs it links against
    (STUB_SOURCE). A soname-named link or copy of it first on the path is what programs then load by that name."""
    real = os.path.realpath(path)
    name = os.path.basename(real)
    return real if os.path.basename(os.path.dirname(real)) == "stubs" and name.endswith(".so") else ""


def broken_cuda_on_path(ctx: SearchContext, cache: dict[str, list[str]] | None = None,
                        frameworks: list[Framework] | None = None,
                        loads: tuple[ObservedLoad, ...] = ()) -> tuple[tuple[str, ...], ...]:
    """(file, what is wrong[, the loader's words]) for each CUDA library (not cuDNN, libcuda or NVML: their own
    probes) in an LD_LIBRARY_PATH folder that the loader cannot use as what its name says: not an ELF file of this
    machine, cut short, or a library whose soname is another's (a foreign file saved under that name). Programs that
    open it by name stop there (JAX's XLA opens cuBLASLt and nvJitLink by name, lazily: seen on an H100). A library
    whose headers need what this machine may lack (a symbol version of a newer glibc than this one's, a library the
    loader finds nowhere) is asked of the loader in a child, by name as such a program opens it, only then: the
    loader's refusal is the third item, and the frameworks whose wheels hold a copy of that soname (their own loading
    code loads it by full path, before anything asks for it by name) the fourth."""
    from cudnn_doctor.elf import ElfError, read_elf

    found: list[tuple[str, ...]] = []
    suspects: list[tuple[str, str]] = []
    folders = list(ctx.searched_library_path())
    companions = driver_companions() if folders else {}  # the data asked only where a folder is searched
    for folder in folders:
        try:
            names = sorted(os.listdir(folder))
        except OSError:
            continue
        for name in names[:4096]:
            if (not name.startswith(PRELOAD_CHECKED) or ".so." not in name) and name not in companions:
                continue
            path = os.path.join(folder, name)
            if not os.path.exists(path):  # a link to nothing: ld.so's open fails (ENOENT) and it searches on
                continue
            try:
                info = read_elf(path)
            except ElfError as error:
                found.append((path, str(error)))
                continue
            except OSError:
                continue
            stem = name.split(".so.")[0]
            if info.soname and not info.soname.startswith(stem + ".so"):
                found.append((path, f"its soname is {info.soname}: another library saved under this name"))
            elif stub := link_stub(path):
                found.append((path, f"{STUB_WORDS} {stub}"))
            elif len(suspects) < 16 and (need := _needs_what_is_not_here(info, folder, ctx, cache or {})):
                suspects.append((path, need))
    if suspects:  # what the loading child that opens them by name already saw, else asked now (one child)
        seen = {library.path: library.said for load in loads if load.user == "ld.so" for library in load.libraries
                if library.path and not library.ok}
        asked = [item for item in suspects if item[0] not in seen and not any(
            load.user == "ld.so" and any(lib.path == item[0] for lib in load.libraries) for load in loads)]
        answered = [(path, read, seen[path]) for path, read in suspects if path in seen]
        found += [(*item, _own_copies(os.path.basename(item[0]), frameworks or []))
                  for item in answered + (_asked_of_the_loader(asked, ctx) if asked else [])]
    return tuple(found[:16])


def driver_companions() -> dict[str, dict[str, str]]:
    """compat's [[driver_companion]] rows by soname: the driver's libraries libcuda opens by name only when work
    needs them (libnvidia-ptxjitcompiler.so.1)."""
    from cudnn_doctor.knowledge.data import load

    return {row["soname"]: row for row in load("process_env").get("driver_companion", [])}


def hook_preloads(seen: list[tuple[str, str, tuple[str, ...]]], frameworks: list[Framework],
                  versions: dict[str, str | None],
                  pythonpath: list[str]) -> tuple[tuple[str, ...], ...]:
    """ProcessView.python_preloaded from what the started Pythons had mapped, (framework, library, hooks) each: with
    the framework wheels' own copy of that soname (or ''), the library's release where a probed copy is that file,
    "own" where it is the framework's own cuDNN, and the PYTHONPATH entries (as written) that hold a hook."""
    by_name = {f.name: f for f in frameworks}
    out = []
    for name, library, hooks in seen:
        framework = by_name.get(name)
        site = str(framework.details.get("site_packages") or "") if framework else ""
        real = os.path.realpath(library)
        own = own_copy(os.path.basename(library), site)
        used = framework.cudnn_used if framework else None
        is_own = (used and os.path.realpath(used) == real) or (own and os.path.realpath(own) == real)
        folders = {os.path.realpath(os.path.dirname(path)) for path in hooks if path}
        entries = [entry for entry in pythonpath if entry and os.path.realpath(entry) in folders]
        # PYTHONPATH's own separator: no entry of it holds one
        out.append((name, library, ", ".join(hooks), own, versions.get(real) or "", "own" if is_own else "",
                    os.pathsep.join(entries)))
    return tuple(out)


def own_copy(file_name: str, site: str) -> str:
    """The copy of FILE_NAME's soname (libcublas.so.13.1.0.3 -> libcublas.so.13) in an nvidia-* wheel of SITE, or ''."""
    import glob

    stem, _, rest = file_name.partition(".so")
    major = rest.lstrip(".").split(".")[0]
    if not site or not stem:
        return ""
    soname = f"{stem}.so.{major}" if major else f"{stem}.so"
    found = sorted(glob.glob(os.path.join(glob.escape(site), "nvidia", "*", "lib", glob.escape(soname))))
    return found[0] if found else ""


def _own_copies(soname: str, frameworks: list[Framework]) -> str:
    """The frameworks whose site-packages hold SONAME in an nvidia-* wheel (nvidia/*/lib, nvidia/cu*/lib)."""
    import glob

    return ", ".join(dict.fromkeys(
        f.name for f in frameworks if f.details.get("site_packages") and glob.glob(os.path.join(
            glob.escape(str(f.details["site_packages"])), "nvidia", "*", "lib", glob.escape(soname)))))


def _glibc_here() -> tuple[int, ...] | None:
    """This machine's glibc release, asked of the C library itself (confstr CS_GNU_LIBC_VERSION: 'glibc 2.36')."""
    try:
        words = os.confstr("CS_GNU_LIBC_VERSION") or ""
    except (ValueError, OSError, AttributeError):
        return None
    release = words.split(" ")[-1]
    parts = release.split(".")
    return tuple(int(p) for p in parts) if words.startswith("glibc ") and all(ascii_digits(p) for p in parts) else None


def _needs_what_is_not_here(info: ElfInfo, folder: str, ctx: SearchContext, cache: dict[str, list[str]]) -> str | None:
    """What the library's headers need that this machine seems to lack, in words (read: the loader proves it)."""
    here = _glibc_here()
    newest = None
    for library, version in info.version_needs:
        if library.startswith("libc.so") and version.startswith("GLIBC_") and here is not None:
            parts = version[len("GLIBC_"):].split(".")
            if all(ascii_digits(p) for p in parts) and tuple(int(p) for p in parts) > here and (
                    newest is None or tuple(int(p) for p in parts) > newest[0]):
                newest = (tuple(int(p) for p in parts), version)
    if newest is not None:
        return f"it needs {newest[1]} of the C library, and this machine's is glibc {'.'.join(map(str, here or ()))}"
    from cudnn_doctor.probes.loader import resolve_like_loader

    runpath = [entry.replace("$ORIGIN", folder).replace("${ORIGIN}", folder) for entry in info.runpath]
    # cheapest first: mapped here, in the loader's cache, beside it; only then the loader's search, file by file
    missing = [name for name in info.needed[:64] if "/" not in name and name not in _mapped_here()
               and name not in cache and not os.path.lexists(os.path.join(folder, name))
               and resolve_like_loader(name, runpath, ctx, cache) is None]
    return f"it needs {', '.join(missing)}, which the loader finds nowhere" if missing else None


@functools.lru_cache(maxsize=1)
def _mapped_here() -> frozenset[str]:
    """The names of the files mapped into this process (libc.so.6, libm.so.6, ...): the loader found them here."""
    from cudnn_doctor.variables import mapped_here

    return frozenset(os.path.basename(path) for path in mapped_here())


def _asked_of_the_loader(suspects: list[tuple[str, str]], ctx: SearchContext) -> list[tuple[str, ...]]:
    """Each suspect opened by its name in a child with this environment, as a program opens it: the loader's refusal
    (naming that file) is seen; where it loads, or the loader takes another file first, nothing is said."""
    from cudnn_doctor.probes.library_jobs import Job, run_jobs

    jobs = {path: Job("library", os.path.basename(path)) for path, _ in suspects}
    answers = run_jobs(list(dict.fromkeys(jobs.values())), env=ctx.env)
    out: list[tuple[str, ...]] = []
    for path, read in suspects:
        answer = answers[jobs[path]]
        if answer.loaded or answer.timed_out:
            continue
        words = answer.error or "the child ended before it answered"
        # the loader's words name this very file, or the library it needs that the headers said is nowhere
        if path in words or os.path.realpath(path) in words or (words.split(":")[0] and words.split(":")[0] in read):
            out.append((path, read, words))
    return out


# packages a framework's own import reaches, by framework: a folder of that name on PYTHONPATH comes first
SHADOWED = {"torch": ("torch", "nvidia", "triton"), "jax": ("jax", "jaxlib", "jax_plugins", "nvidia")}
# and, for the working folder, the packages they import at start (torch 2.11's and jax 0.11's Requires-Dist, in their
# METADATA: filelock, typing-extensions, sympy, networkx, jinja2, fsspec; numpy, ml_dtypes, opt_einsum, scipy)
IMPORTED = {"torch": ("filelock", "typing_extensions", "sympy", "networkx", "jinja2", "fsspec", "numpy"),
            "jax": ("numpy", "ml_dtypes", "opt_einsum", "scipy")}
# Python's own modules that `import numpy` (which both import) loads, from `python -X importtime -c "import numpy"`
# (numpy 2.x, CPython 3.11): a file of one of these names in the working folder is imported in their place
STDLIB_AT_START = ("ast", "collections", "contextlib", "contextvars", "copyreg", "ctypes", "datetime", "dis", "enum",
                   "functools", "inspect", "keyword", "linecache", "numbers", "opcode", "operator", "pickle",
                   "platform", "re", "reprlib", "struct", "textwrap", "token", "tokenize", "types", "typing",
                   "warnings", "weakref", "random", "secrets", "hashlib", "json", "logging", "threading", "copy",
                   "tempfile", "subprocess", "signal", "pathlib", "glob", "shutil", "traceback", "string", "uuid")


def python_shadows(env: dict[str, str], frameworks: list[Framework],
                   cwd: str | None = None) -> tuple[tuple[str, ...], ...]:
    """(PYTHONPATH entry, package, framework, "PYTHONPATH") for each package of an installed framework that a
    PYTHONPATH folder also holds: Python imports it from there, before site-packages (a namespace package such as
    jax_plugins or nvidia merges, its first folder's files first). And (CWD, module, framework, "working folder") for a
    file or package in the working folder CWD named like the framework, a package it imports at start or a module of
    Python's own library: `python -c`, the REPL and a script kept there put that folder first on sys.path."""
    entries = [e for e in env.get("PYTHONPATH", "").split(os.pathsep) if e]
    found: list[tuple[str, ...]] = []
    found += _working_folder_shadows(cwd, [f for f in frameworks if not _safe_path(env, f)])
    for framework in frameworks:
        site = str(framework.details.get("site_packages") or "")
        for package in SHADOWED.get(framework.name, ()):
            for entry in entries:
                if os.path.realpath(entry) == os.path.realpath(site) if site else False:
                    break
                if _imports_from(entry, package, site):
                    found.append((entry, package, framework.name, "PYTHONPATH"))
                    break
        # and a module of Python's own library the framework imports at start (a `typing.py`), or a lone file named
        # like a package it imports (a `numpy.py`: never a real numpy), in a PYTHONPATH folder: PYTHONPATH comes
        # before the standard library and site-packages for every program
        if framework.name in SHADOWED and not framework.details.get("assumed") and entries:
            found += _stray_modules(entries, framework, site)
    return tuple(found)


SINGLE_FILE_MODULES = ("typing_extensions",)  # of IMPORTED: the distributions that install one .py file


def _stray_modules(entries: list[str], framework: Framework, site: str) -> list[tuple[str, ...]]:
    import sys

    stdlib = set(getattr(sys, "stdlib_module_names", ())) or set(STDLIB_AT_START)
    found: list[tuple[str, ...]] = []
    for entry in entries[:64]:
        if site and os.path.realpath(entry) == os.path.realpath(site):
            break
        names = _module_names(entry)  # every name (a cut at 10,000 hid those listed later)
        if names is None:
            continue
        singles = {n[:-3] for n in names if n.endswith(".py")}
        packages = {n for n in names if n in stdlib and os.path.isfile(os.path.join(entry, n, "__init__.py"))}
        # a lone file named like a package is never that package (a numpy.py); one named like a module that is one
        # file when real (typing_extensions.py) shadows only a copy installed beside the framework
        wanted = {m for m in set(IMPORTED.get(framework.name, ())) & singles if m not in SINGLE_FILE_MODULES or (
            site and os.path.exists(os.path.join(site, m + ".py")))}
        stdlib_here = (singles | packages) & stdlib
        wanted |= _standard_extensions(names, site)  # Python's own compiled modules: PYTHONPATH precedes lib-dynload
        if stdlib_here:
            from cudnn_doctor.probes.python_start import imported_at_start

            started = set(STDLIB_AT_START) | imported_at_start(os.path.join(site, framework.name, "__init__.py"))
            wanted |= stdlib_here & started
        found += [(entry, module, framework.name, "PYTHONPATH") for module in sorted(wanted)]
    return found[:16]


def _extension_suffixes(site: str) -> tuple[str, ...]:
    """The file suffixes under which the Python of SITE (lib/python3.X/site-packages) imports a compiled module, as
    its importlib.machinery.EXTENSION_SUFFIXES lists them: this interpreter's own list where it is that version, else
    CPython's pattern on Linux (".cpython-3X-<multiarch>.so", ".abi3.so", ".so"). A file tagged for another Python
    or platform is passed over by its finder: no shadow."""
    import importlib.machinery
    import re
    import sys

    found = re.search(r"python3\.(\d+)(t?)", site)
    if found is None or (int(found.group(1)), found.group(2)) == (sys.version_info[1], "t" if getattr(
            sys, "_is_gil_enabled", lambda: True)() is False else ""):
        return tuple(importlib.machinery.EXTENSION_SUFFIXES)
    from cudnn_doctor.probes.context import TRIPLETS

    machine = CURRENT.uname()[2]  # not the `platform` module's: its import compiles its patterns (3 ms of a check)
    return (f".cpython-3{found.group(1)}{found.group(2)}-{TRIPLETS.get(machine, machine + '-linux-gnu')}.so",
            ".abi3.so", ".so")


def _standard_extensions(names: list[str], site: str) -> set[str]:
    """The modules of Python's own library that NAMES (a folder's files) hold as compiled modules the Python of SITE
    would import (a `_ctypes.cpython-312-x86_64-linux-gnu.so`: ctypes imports it with no fallback, so a text or
    foreign file of that name ends `import torch` with 'invalid ELF header'). Built into the interpreter, a module is
    found before any folder: only those the doctor's Python does not build in are named."""
    import sys

    stdlib = set(getattr(sys, "stdlib_module_names", ())) - set(sys.builtin_module_names)
    suffixes = _extension_suffixes(site)
    found = set()
    for name in names:
        suffix = next((s for s in suffixes if name.endswith(s)), None)
        if suffix is not None and name[:-len(suffix)] in stdlib:
            found.add(name[:-len(suffix)])
    return found


def _safe_path(env: dict[str, str], framework: Framework) -> bool:
    """Whether the framework's Python leaves the working folder off sys.path: PYTHONSAFEPATH set (not empty), read by
    Python 3.11 and later (the version in its site-packages' path, lib/python3.X; where that does not say, taken)."""
    import re

    if not env.get("PYTHONSAFEPATH"):
        return False
    found = re.search(r"python3\.(\d+)", str(framework.details.get("site_packages") or ""))
    return found is None or int(found.group(1)) >= 11


def _working_folder_shadows(cwd: str | None, frameworks: list[Framework]) -> list[tuple[str, ...]]:
    python = [f for f in frameworks if f.name in SHADOWED and not f.details.get("assumed")]
    if not cwd or not python or os.path.realpath(cwd) == "/":
        return []
    sites = {os.path.realpath(str(f.details.get("site_packages") or "")) for f in python}
    if os.path.realpath(cwd) in sites:
        return []
    names = _module_names(cwd)
    if names is None:
        return []
    sources, folders = {n[:-3] for n in names if n.endswith(".py")}, {n for n in names if "." not in n}
    found: list[tuple[str, ...]] = []
    for framework in python:
        site = str(framework.details.get("site_packages") or "")
        # Python's own compiled modules (lib-dynload) of the names a file here carries, for the suffixes this
        # framework's Python imports: the working folder comes before lib-dynload on sys.path
        compiled = _standard_extensions(names, site)
        wanted = (*SHADOWED[framework.name], *IMPORTED.get(framework.name, ()), *STDLIB_AT_START, *compiled)
        if (sources | folders) - set(wanted):  # and what the framework's own __init__.py imports, read from its file
            from cudnn_doctor.probes.python_start import imported_at_start

            wanted += tuple(imported_at_start(os.path.join(site, framework.name, "__init__.py")) - {framework.name})
        # a folder is a package where it holds __init__.py: asked only of the names that matter
        modules = sources | compiled | {n for n in folders & set(wanted)
                                        if os.path.isfile(os.path.join(cwd, n, "__init__.py"))}
        for module in sorted(modules):
            if module in wanted:
                found.append((cwd, module, framework.name, "working folder"))
    return found[:16]


MAX_LISTED = 1_000_000  # a working folder's names read at most (Python's own finder lists the whole folder)


def _module_names(folder: str) -> list[str] | None:
    """The names in FOLDER that can be a module Python's finder takes from it (NAME.py, a compiled NAME.SUFFIX, a
    folder NAME): every name listed (up to MAX_LISTED), only those kept, so that a folder of thousands of other files
    hides none (a cut at the first 10,000 names listed missed a shadow listed later); None where it cannot be listed."""
    import itertools

    try:
        with os.scandir(folder) as listing:
            return [entry.name for entry in itertools.islice(listing, MAX_LISTED)
                    if entry.name.endswith((".py", ".so", ".pyd")) or "." not in entry.name]
    except OSError:
        return None


def _imports_from(entry: str, package: str, site: str) -> bool:
    """Whether Python's import of PACKAGE takes it from the folder ENTRY (on PYTHONPATH, before SITE): a regular
    package (its __init__.py) or a module there wins; a folder without __init__.py is a namespace portion, which
    Python passes over for a regular package later on the path, and merges with one that is a namespace too."""
    folder = os.path.join(entry, package)
    if os.path.isfile(os.path.join(folder, "__init__.py")) or os.path.isfile(folder + ".py"):
        return True
    if not os.path.isdir(folder):
        return False
    return not (site and os.path.isfile(os.path.join(site, package, "__init__.py")))


def read_process_view(ctx: SearchContext, answer: LibraryProbe | None, gpus: list[Gpu],
                      frameworks: list[Framework], installs_by_real: dict[str, str | None],
                      cache: dict[str, list[str]], asked: list[str] | None = None,
                      from_nvml: tuple[VisibleGpu, ...] | None = None,
                      loads: tuple[ObservedLoad, ...] = ()) -> ProcessView:
    """The ProcessView from the cuda child's ANSWER (None: not asked) and what this process reads itself.
    INSTALLS_BY_REAL: each known cuDNN library's real path -> its version. FROM_NVML: the GPUs a program sees, where
    CUDA was not asked and CUDA_VISIBLE_DEVICES names GPUs by index or whole UUID (visible_from_nvml)."""
    # the readers of settings, flags and C++ run-times are loaded here, after the library children have started
    # (collect_report): loaded with this module, they were on the path before the cuDNN copies' batch child
    from cudnn_doctor.knowledge.environment import read_at_context
    from cudnn_doctor.probes.loader_runtime import runtime_refusals
    from cudnn_doctor.probes.settings import read_settings
    from cudnn_doctor.probes.xla_flags import flags_file

    values = answer.values if answer is not None and answer.loaded else {}
    visible = None
    visible_from = None
    if values.get("cuInit") == 0 and isinstance(values.get("devices"), list):
        by_uuid = {gpu.uuid: gpu for gpu in gpus if gpu.uuid}
        by_bus = {_bus(gpu.pci_bus_id): gpu for gpu in gpus if gpu.pci_bus_id}
        visible_list: list[VisibleGpu] = []
        for device in values["devices"]:
            if not isinstance(device, dict):
                continue
            match = by_uuid.get(str(device.get("uuid"))) or by_bus.get(_bus(device.get("pci_bus_id")))
            visible_list.append(VisibleGpu(int(device.get("ordinal", len(visible_list))), device.get("uuid"),
                                           device.get("pci_bus_id"), device.get("name"),
                                           match.index if match else None))
        visible, visible_from = tuple(visible_list), "cuda"
    elif answer is None and from_nvml is not None:
        visible, visible_from = from_nvml, "nvml"
    value = ctx.env.get("CUDA_VISIBLE_DEVICES")
    mapped = tuple(str(p) for p in values.get("mapped", []) if isinstance(p, str))
    libcuda = values.get("loaded_path") if isinstance(values.get("loaded_path"), str) else None
    if libcuda is None and answer is not None and (answer.crashed or answer.timed_out or changed_process(values)):
        # the child ended (or hung, or lost what it needs to read its maps) before it could say which file it
        # mapped: the one the loader finds first
        libcuda = resolve_like_loader("libcuda.so.1", [], ctx, cache)
    libcuda_via, libcuda_entry = origin(libcuda, "libcuda.so.1", ctx) if libcuda else (None, None)
    return ProcessView(
        asked_because=tuple(asked or ()),
        libcuda=libcuda,
        libcuda_with_nvml=bool(libcuda) and os.path.lexists(os.path.join(os.path.dirname(libcuda or ""),
                                                                         "libnvidia-ml.so.1")),
        libcuda_version=release_in_name(libcuda),
        libcuda_via=libcuda_via,
        libcuda_entry=libcuda_entry,
        kernel_driver=kernel_driver_version(ctx),
        cuda_driver_version=decode_cuda(values.get("cuDriverGetVersion")),
        cuinit=values.get("cuInit") if isinstance(values.get("cuInit"), int) else None,
        cuinit_name=values.get("cuInit_name") or status_name(values.get("cuInit")),
        context=context_said(values.get("context")),
        context_variables=tuple(read_at_context(ctx.env)) if isinstance(values.get("context"), dict) else (),
        load_error=answer.error if answer is not None and not answer.loaded else None,
        probe_failure=(answer.error or "ended without an answer") if answer is not None and (
            answer.crashed or answer.timed_out) and not (answer.error or "").startswith("not started") else None,
        libcuda_fifo=fifo_first(ctx, "libcuda.so.1") if answer is not None and answer.timed_out else None,
        xla_flags_file=flags_file(ctx.env.get("XLA_FLAGS")),
        changed_process=changed_process(values),
        visible=visible,
        visible_from=visible_from,
        cuda_visible_devices=value,
        ignored_entries=_ignored(value, visible),
        cuda_device_order=ctx.env.get("CUDA_DEVICE_ORDER"),
        preload=preload_entries(ctx.env),
        mapped=mapped,
        sanitizers=sanitizers_mapped(mapped, ctx.env),
        limits=read_limits(),
        shell=read_shell_settings(),
        tunables=glibc_tunables(ctx.env),
        cudnn=observed_cudnn(framework_cudnn(frameworks, mapped, installs_by_real, ctx, cache), loads, installs_by_real,
                             ctx),
        loads=loads,
        **xla_flags_known(ctx.env.get("XLA_FLAGS"), frameworks),  # type: ignore[arg-type]
        **read_settings(ctx.env, frameworks),
        preloaded_cuda=preloaded_cuda_libraries(ctx.env, frameworks),
        python_shadows=python_shadows(ctx.env, frameworks, ctx.cwd),
        set_in_python=set_in_python(ctx.env, frameworks),
        preloaded_cudnn_parts=tuple(
            (entry, os.path.dirname(os.path.realpath(entry)), release_in_file_name(os.path.realpath(entry)) or "")
            for entry in preload_entries(ctx.env) if "/" in entry and os.path.basename(entry).startswith("libcudnn_")),
        broken_cuda=broken_cuda_on_path(ctx, cache, frameworks, loads),
        cxx_runtime=runtime_refusals(ctx, frameworks),
    )


MAX_SET_IN_PYTHON = 32


def set_in_python(env: dict[str, str], frameworks: list[Framework]) -> tuple[tuple[str, str, str], ...]:
    """The variables this Python's start-up hooks set inside it (probes/context.set_inside_python), each with the
    hook files that name it (probes/python_start.hooks_setting), where ENV holds that value: (variable, value,
    files)."""
    from cudnn_doctor.probes.context import set_inside_python
    from cudnn_doctor.probes.python_start import hooks_setting

    inside = {name: value for name, value in set_inside_python().items() if env.get(name) == value}
    names = sorted(inside)[:MAX_SET_IN_PYTHON]
    files = hooks_setting(env, frameworks, names)
    return tuple((name, inside[name], os.pathsep.join(files.get(name, []))) for name in names)


def sanitizers_mapped(mapped: tuple[str, ...], env: dict[str, str]) -> tuple[tuple[str, str, str], ...]:
    """The sanitizer run-times (compat/process_env.toml [[sanitizer]]) among what the CUDA child mapped, each with the
    variable of its options and that variable's value here: (file, variable, value or "")."""
    found = []
    for row in load("process_env").get("sanitizer", []):
        runtime = next((path for path in mapped if os.path.basename(path).startswith(tuple(row["runtime"]))), None)
        if runtime is not None:
            found.append((runtime, str(row["variable"]), env.get(str(row["variable"]), "")))
    return tuple(found)


def fifo_first(ctx: SearchContext, soname: str) -> str | None:
    """The FIFO the loader opens for SONAME, where the first file of that name on LD_LIBRARY_PATH is one (its link
    followed): ld.so opens it and waits for a writer for ever (seen: `LD_PRELOAD=FIFO /bin/true` hangs), so every
    program that loads SONAME hangs at start. None where the first such file is another (a library, or one the
    loader refuses and skips) or there is none."""
    for folder in ctx.searched_library_path():
        candidate = os.path.join(folder or ".", soname)
        try:
            mode = os.stat(candidate).st_mode
        except (OSError, ValueError):
            continue
        return candidate if stat.S_ISFIFO(mode) else None
    return None


def status_name(status: object) -> str | None:
    """A CUresult's name from compat/process_env.toml, where the library could not name it (the stub names
    nothing, not even its own CUDA_ERROR_STUB_LIBRARY)."""
    return next((row["name"] for row in load("process_env").get("cuda_status", []) if row["status"] == status), None)


def _bus(text: object) -> str | None:
    """A PCI bus id in one form: NVML writes 00000000:00:06.0, CUDA 0000:00:06.0."""
    if not isinstance(text, str) or ":" not in text:
        return None
    domain, rest = text.lower().split(":", 1)
    return f"{int(domain, 16) if all(c in '0123456789abcdef' for c in domain) else domain}:{rest}"


def _ignored(value: str | None, visible: tuple[VisibleGpu, ...] | None) -> tuple[str, ...]:
    """The entries of CUDA_VISIBLE_DEVICES that CUDA did not use: it reads them in order and stops at the
    first it cannot use, so those after the GPUs it kept (cuInit's own count tells how many)."""
    if not value or visible is None:
        return ()
    entries = [entry.strip() for entry in value.split(",")]
    return tuple(entries[len(visible):]) if len(entries) > len(visible) else ()


def release_in_name(path: str | None) -> str | None:
    """The release in a versioned library's real file name: libcuda.so.580.159.04 -> 580.159.04."""
    if not path:
        return None
    return release_in_file_name(os.path.basename(os.path.realpath(path)))


def kernel_driver_version(ctx: SearchContext) -> str | None:
    """The NVIDIA kernel module's release, as /proc/driver/nvidia/version states it."""
    try:
        descriptor = os.open(ctx.system(KERNEL_VERSION_FILE), os.O_RDONLY | CURRENT.open_flags)
        try:
            text = os.read(descriptor, 4096).decode("utf-8", "replace")
        finally:
            os.close(descriptor)
    except OSError:
        return None
    found = re.search(r"Kernel Module(?:\s+for\s+\S+)?\s+(\d+\.\d+(?:\.\d+)?)", text)
    return found.group(1) if found else None


def glibc_tunables(env: dict[str, str]) -> tuple[tuple[str, str, str, str], ...]:
    from cudnn_doctor.probes.process_start import glibc_tunables as asked

    return asked(env)


def read_shell_settings() -> dict[str, str]:
    from cudnn_doctor.probes.process_start import read_shell_settings as read

    return read()


def free_descriptors() -> int | None:
    """How many descriptors a program started here may still open: the soft open-files limit less those it holds
    before its first line (limits.held_at_start); None where unlimited or not recorded."""
    from cudnn_doctor.limits import held_at_start

    held = held_at_start()
    soft = read_limits().get("RLIMIT_NOFILE", (-1, -1))[0]
    return None if held is None or soft < 0 else max(0, soft - held)


def read_limits() -> dict[str, tuple[int, int]]:
    """(soft, hard) of the limits that stop CUDA or a framework, as the kernel enforces them here; -1 for unlimited.
    Children inherit them. RLIMIT_NPROC is not enforced for root (setrlimit(2)): unlimited there."""
    try:
        import resource
    except ImportError:  # Windows
        return {}
    limits = {}
    for name in LIMITS:
        number = getattr(resource, name, None)
        if number is None:
            continue
        try:
            soft, hard = resource.getrlimit(number)
        except (OSError, ValueError):
            continue
        limits[name] = tuple(-1 if v == resource.RLIM_INFINITY else int(v) for v in (soft, hard))
    if "RLIMIT_NPROC" in limits and hasattr(os, "geteuid") and os.geteuid() == 0:
        limits["RLIMIT_NPROC"] = (-1, -1)
    return limits  # type: ignore[return-value]


def framework_cudnn(frameworks: list[Framework], mapped: tuple[str, ...], installs_by_real: dict[str, str | None],
                    ctx: SearchContext, cache: dict[str, list[str]]) -> tuple[LoadedCudnn, ...]:
    """The cuDNN each framework opens in this environment, with each of its sub-libraries as the loader
    resolves it from there. A preloaded libcudnn.so.N is what every program gets for that soname."""
    preloaded = {os.path.basename(path).split(".so")[0] + ".so." + _soname_major(path): path
                 for path in mapped if os.path.basename(path).startswith("libcudnn") and _soname_major(path)}
    loaded: list[LoadedCudnn] = []
    read: dict[str, tuple[SubLibrary, ...]] = {}
    for framework in frameworks:
        library = framework.cudnn_used
        if not library:
            continue
        major = _soname_major(library)
        soname = f"libcudnn.so.{major}" if major else os.path.basename(library)
        if soname in preloaded and os.path.realpath(preloaded[soname]) != os.path.realpath(library):
            library = preloaded[soname]
        via, entry = origin(library, soname, ctx)
        version = installs_by_real.get(os.path.realpath(library)) or release_in_name(library)
        if library not in read:  # frameworks that load one copy share what its sub-libraries are
            read[library] = tuple(_sublibrary(name, int(major), library, version, preloaded, ctx, cache)
                                  for name in sublibrary_names().get(int(major), [])) if major else ()
        subs = read[library]
        loaded.append(LoadedCudnn(framework.name, library, version, via, subs, entry, os.path.realpath(library)))
    return tuple(loaded)


def _soname_major(path: str) -> str:
    found = re.search(r"\.so\.(\d+)", os.path.basename(path))
    return found.group(1) if found else ""


def _sublibrary(name: str, major: int, library: str, version: str | None, preloaded: dict[str, str],
                ctx: SearchContext, cache: dict[str, list[str]]) -> SubLibrary:
    """Sub-library NAME as libcudnn.so.MAJOR at LIBRARY opens it: dlopen by soname from there (LD_LIBRARY_PATH,
    then its DT_RUNPATH $ORIGIN, then the cache), the one already preloaded first."""
    soname = f"{name}.so.{major}"
    rare = _rarely_used(name, major)
    path = preloaded.get(soname) or resolve_like_loader(soname, [os.path.dirname(library)], ctx, cache)
    if path is None:
        return SubLibrary(soname, None, None, "missing", rare)
    try:
        release = release_of_sublibrary(path)
    except ElfError as error:
        return SubLibrary(soname, path, None, f"broken: {error}", rare)
    problem = None
    if release and version and _release_key(release) != _release_key(version):
        problem = "another release"
    return SubLibrary(soname, path, release, problem, rare)


def release_of_sublibrary(path: str) -> str | None:
    """The release of the cuDNN sub-library at PATH: its exported version symbol, else its real file name's release.
    Raises ElfError where the file is no ELF file this reader takes."""
    _info, symbols = read_elf_and_exported_u32(path, VERSION_SYMBOLS)
    found = next(iter(symbols.values()), None)
    return f"{found >> 16}.{(found >> 8) & 0xFF}.{found & 0xFF}" if found else release_in_name(path)


def _release_key(version: str) -> tuple[int, ...]:
    numbers = (version_tuple(version) or ())[:3]
    return numbers + (0,) * (3 - len(numbers))


def _rarely_used(name: str, major: int) -> bool:
    return any(row["name"] == name and int(row["major"]) == major and row.get("rarely_used")
               for row in load("process_env").get("sublibrary", []))


def observed_cudnn(modelled: tuple[LoadedCudnn, ...], loads: tuple[ObservedLoad, ...],
                   installs_by_real: dict[str, str | None], ctx: SearchContext) -> tuple[LoadedCudnn, ...]:
    """Each framework's cuDNN as a child saw it load (LOADS), where one did: the front library it mapped, and each
    sub-library's problem as cuDNN's version checks and the loader answered, with their words as evidence. The
    sub-libraries no step loaded keep what the files say (read). Frameworks no child loaded keep MODELLED. A program
    that opens cuDNN by name ("ld.so") is one more user, where its child mapped a front library."""
    by_user = {seen_load.user: seen_load for seen_load in loads if seen_load.front or seen_load.steps}
    out: list[LoadedCudnn] = []
    for seen_load in loads:
        if seen_load.user != "ld.so" or not seen_load.front:
            continue
        major = _soname_major(seen_load.front)
        soname = f"libcudnn.so.{major}" if major else os.path.basename(seen_load.front)
        names = sublibrary_names().get(int(major), []) if major else []
        named = tuple(SubLibrary(f"{name}.so.{major}", None, None, None, _rarely_used(name, int(major)))
                      for name in names)
        via, entry = origin(seen_load.front, soname, ctx)
        # the path as the loader found it (a link in an LD_LIBRARY_PATH folder), not the file it resolves to
        twin = next((c for c in modelled if os.path.realpath(c.library) == os.path.realpath(seen_load.front)), None)
        library = twin.library if twin else os.path.join(entry, soname) if via == "LD_LIBRARY_PATH" and entry and \
            os.path.realpath(os.path.join(entry, soname)) == os.path.realpath(seen_load.front) else seen_load.front
        modelled += (LoadedCudnn("ld.so", library, None, via, twin.sublibraries if twin else named, entry,
                                 os.path.realpath(seen_load.front)),)
    for loaded in modelled:
        seen = by_user.get(loaded.user)
        if seen is None or seen.front is None:
            out.append(loaded)
            continue
        same = os.path.realpath(seen.front) == os.path.realpath(loaded.library)
        front = loaded.library if same else seen.front
        version = seen.version or installs_by_real.get(os.path.realpath(front)) or release_in_name(front)
        subs: list[SubLibrary] = []
        for sub in (loaded.sublibraries if same else _unread(loaded.sublibraries)):
            step = next((s for s in seen.steps if s.library == sub.name), None)
            if step is None and seen.died and (sub.problem or "").startswith(("broken", "truncated")):
                # the child died opening this copy, and this file of it is cut short: the death is its evidence
                subs.append(replace(sub, seen=f"{_display_user(seen.user)}: {seen.died}"))
                continue
            if step is None:
                subs.append(sub)
                continue
            path = step.refused or next((p for p in step.mapped if os.path.basename(p).startswith(
                sub.name.split(".so")[0] + ".so")), sub.path)
            if step.ok:
                subs.append(replace(sub, path=path, problem=None if sub.problem in ("missing", "another release")
                                    or sub.problem is None else sub.problem, refused_first=step.refused_first and
                                    f"{_display_user(seen.user)}: {step.step} -> {step.refused_first}",
                                    refused_first_file=step.refused_first_file))
            else:  # the release of the file the loader refused, where it is another than the one read
                release = sub.version if path == sub.path else _release_or_none(path)
                subs.append(replace(sub, path=path, version=release, problem=_problem_of(step.said, sub.problem),
                                    seen=f"{_display_user(seen.user)}: {step.step} -> {step.said}"))
        via, entry = (loaded.via, loaded.entry) if same else ("the framework's own loading code", None)
        out.append(replace(loaded, library=front, version=version, via=via, entry=entry, sublibraries=tuple(subs),
                           real_library=os.path.realpath(front), observed=True))
    return tuple(out)


def _release_or_none(path: str | None) -> str | None:
    if not path:
        return None
    try:
        return release_of_sublibrary(path)
    except (ElfError, OSError):
        return release_in_name(path)


def _display_user(user: str) -> str:
    return "a program that opens libcudnn by name" if user == "ld.so" else user


def _unread(modelled: tuple[SubLibrary, ...]) -> tuple[SubLibrary, ...]:
    """The sub-libraries of another copy than the one modelled: their names, problems unknown until seen."""
    return tuple(SubLibrary(sub.name, None, None, None, sub.rarely_used) for sub in modelled)


def _problem_of(said: str, read: str | None) -> str:
    """A failed step's words as a sub-library problem: missing, another release, or broken (as the loader said)."""
    lower = said.lower()
    if said.startswith("the loader refuses "):  # a file there, which the loader itself would not load: its words
        return f"not loadable: {said[len('the loader refuses '):]}"
    if "version_mismatch" in lower or "version mismatch" in lower:
        return "another release"
    if "unavailable" in lower or "no such file" in lower or "cannot open shared object" in lower:
        return "missing"
    return f"broken: {said}" if not (read or "").startswith(("broken", "truncated")) else str(read)


def xla_flags_known(value: str | None, frameworks: list[Framework]) -> dict[str, object]:
    """The names of XLA_FLAGS (VALUE) that no library of the installed jaxlib defines, asked of its own files: each
    flag's name is a string in the library that defines it ([[setting]] XLA_FLAGS's flag_files). Nothing where
    XLA_FLAGS is unset, JAX is not installed, or its libraries cannot be read."""
    if not value or not value.strip():
        return {}
    jax = next((f for f in frameworks if f.name == "jax" and f.details.get("site_packages")), None)
    row = next((r for r in load("process_env").get("setting", []) if r["variable"] == "XLA_FLAGS"), None)
    if jax is None or row is None:
        return {}
    import glob

    site = str(jax.details["site_packages"])
    files = [path for pattern in row.get("flag_files", []) for path in sorted(glob.glob(os.path.join(
        glob.escape(site), pattern))) if os.path.isfile(path)]
    from cudnn_doctor.probes.file_words import names_in
    from cudnn_doctor.probes.xla_flags import xla_flags

    names = [name for name, _ in xla_flags(value) if re.fullmatch(r"[A-Za-z0-9_]+", name)]
    if not files or not names:
        return {}
    found = names_in(files, names)
    if found is None:
        return {}
    return {"xla_flags_unknown": tuple(name for name in names if name not in found), "xla_flag_files": tuple(files)}


