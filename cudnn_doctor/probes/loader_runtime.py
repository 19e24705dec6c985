"""The C++ runtime a program maps: libstdc++ and libgcc_s as the loader gives them, against what the frameworks' own
libraries need.

Every framework's compiled parts (torch/lib, jaxlib, the nvidia-* wheels' libraries) are C++ and need symbol versions
of libstdc++.so.6 and libgcc_s.so.1 (GLIBCXX_3.4.30, CXXABI_1.3.13, GCC_12.0.0): the loader refuses a library whose
needed version the runtime it found lacks ("version `GLIBCXX_3.4.30' not found (required by libtorch_python.so)"), and
`import torch` fails. The system's runtime is the distribution's and serves; one an LD_PRELOAD entry or an
LD_LIBRARY_PATH folder gives first (an old conda environment's lib folder, a toolchain's) may not. Only then is
anything read: each such file's defined versions (DT_VERDEF) against what the frameworks' libraries need (DT_VERNEED),
and where one is missing (or the file is no library of this machine), the loader itself is asked, `ld.so --list` of the
framework's library in a child with this environment (it maps the tree and checks every version, running no code of
it): its words are the evidence. A file of another class it skips, as it skips it when searching: nothing is said.
"""

from __future__ import annotations

import glob
import os

from cudnn_doctor.elf import ElfError, ElfInfo, read_elf
from cudnn_doctor.model import Framework
from cudnn_doctor.probes.context import SearchContext

RUNTIMES = ("libstdc++.so.6", "libgcc_s.so.1")
# each framework's compiled parts, as its wheels lay them out (globs under its site-packages); the nvidia-* wheels'
# libraries are loaded by every framework installed beside them
OWN_LIBRARIES = {"torch": ("torch/lib/*.so*", "torch/_C*.so"),
                 "jax": ("jaxlib/*.so", "jaxlib/*/*.so", "jax_plugins/*/*.so", "jax_cuda*_plugin/*.so"),
                 "tensorflow": ("tensorflow/*.so*", "tensorflow/python/*.so")}
WHEELS = ("nvidia/*/lib/*.so*",)
MAX_FILES = 96  # a framework's compiled parts number tens


def runtimes_given(ctx: SearchContext) -> list[tuple[str, str, str]]:
    """(file, how the loader gets it, the entry as written) for each C++ runtime an LD_PRELOAD entry names by path or
    an LD_LIBRARY_PATH folder holds (its glibc-hwcaps levels first), the first of each soname only: what the loader
    gives every program before the system's own."""
    from cudnn_doctor.variables import preload_entries

    found: list[tuple[str, str, str]] = []
    preloads = preload_entries(ctx.env)
    folders = ctx.searched_library_path() if any(
        os.path.lexists(os.path.join(folder, soname)) for folder in ctx.library_path() if folder
        for soname in RUNTIMES) or any(os.path.isdir(os.path.join(f, "glibc-hwcaps")) for f in ctx.library_path()) \
        else []
    from cudnn_doctor.probes.hwcaps import entry_of

    for soname in RUNTIMES:
        stem = soname.split(".so")[0] + ".so"
        preloaded = next((entry for entry in preloads if "/" in entry and os.path.basename(entry).startswith(stem)),
                         None)
        if preloaded:
            found.append((preloaded, "LD_PRELOAD", preloaded))
            continue
        for folder in folders:
            candidate = os.path.join(folder, soname)
            if os.path.lexists(candidate) and os.path.isfile(candidate):
                found.append((candidate, "LD_LIBRARY_PATH", entry_of(folder)))
                break
    return found


def _serves_as_the_systems(soname: str, defined: set[str], ctx: SearchContext) -> bool:
    """Does a runtime defining DEFINED define every version the system's own SONAME does (the file of that name in the
    loader's default folders)? Then whatever the system's serves, it serves too, and no framework's library is read.
    False where the system has none to compare (a system under a prefix without one)."""
    for folder in ctx.default_lib_dirs():
        path = os.path.join(folder, soname)
        if os.path.isfile(path):
            try:
                return set(read_elf(path).version_defs) <= defined
            except (ElfError, OSError):
                return False
    return False


def _needs(site: str, framework: str) -> list[tuple[str, ElfInfo]]:
    files: list[str] = []
    for pattern in (*OWN_LIBRARIES.get(framework, ()), *WHEELS):
        files += sorted(glob.glob(os.path.join(glob.escape(site), pattern)))
    out = []
    for path in list(dict.fromkeys(files))[:MAX_FILES]:
        try:
            if not os.path.isfile(path):
                continue
            out.append((path, read_elf(path)))
        except (ElfError, OSError):
            continue
    return out


def runtime_refusals(ctx: SearchContext, frameworks: list[Framework]) -> tuple[tuple[str, ...], ...]:
    """(runtime file, via, entry, framework, its library the loader refuses, the versions missing, the loader's
    words) for each C++ runtime given before the system's that the loader refuses for a framework's own library, seen
    in a child (`ld.so --list`). () where no runtime is given so (the common case: nothing is read)."""
    given = runtimes_given(ctx)
    if not given:
        return ()
    out: list[tuple[str, ...]] = []
    for runtime, via, entry in given:
        soname = next(name for name in RUNTIMES if os.path.basename(runtime).startswith(name.split(".so")[0]))
        try:
            info = read_elf(runtime)
            defined: set[str] | None = set(info.version_defs)
        except (ElfError, OSError):
            defined = None  # not a library of this machine: the loader says what it makes of it
        if defined is not None and _serves_as_the_systems(soname, defined, ctx):
            continue  # it defines every version the system's own defines (a newer one): nothing more to read
        for framework in frameworks:
            site = str(framework.details.get("site_packages") or "")
            if not site or framework.details.get("assumed"):
                continue
            suspect = None
            for path, needs in _needs(site, framework.name):
                wanted = {version for library, version in needs.version_needs if library == soname}
                if soname not in needs.needed:
                    continue
                missing = sorted(wanted - defined) if defined is not None else sorted(wanted)
                if defined is None or missing:
                    size = os.path.getsize(path)
                    if suspect is None or size < suspect[0]:
                        suspect = (size, path, missing)
            if suspect is None:
                continue
            _, path, missing = suspect
            words = _loader_says(path, runtime, ctx)
            if words:
                out.append((runtime, via, entry, framework.name, path, ", ".join(missing), words))
    return tuple(out[:8])


def _loader_says(library: str, runtime: str, ctx: SearchContext) -> str | None:
    """The loader's own words refusing RUNTIME for LIBRARY: `ld.so --list LIBRARY` in a child with this environment
    (LD_LIBRARY_PATH and LD_PRELOAD as a program has them); None where it takes the runtime (or skips it)."""
    from cudnn_doctor.child import deadline_in, run_child
    from cudnn_doctor.probes.hwcaps import this_loader

    loader = this_loader()
    if loader is None:
        return None
    answer = run_child([loader, "--list", library], ctx.env, deadline_in(10.0), what=f"{loader} --list")
    if answer.exit_code is not None and answer.exit_code < 0:  # the loader itself killed mapping the tree: a file
        import signal  # cut short, whose pages past its end it touched (SIGBUS); RUNTIME is the one it read unusable

        try:
            name = signal.Signals(-answer.exit_code).name
        except ValueError:
            name = f"signal {-answer.exit_code}"
        return f"{loader} --list {library} was killed by {name} ({runtime}, which it maps for it, reads unusable)"
    text = f"{answer.stdout}\n{answer.stderr_tail}"
    real = os.path.realpath(runtime)
    said = [line.strip() for line in text.splitlines() if (runtime in line or real in line) and (
        "not found" in line or "invalid ELF" in line or "too short" in line or "cannot open" in line)]
    return "; ".join(dict.fromkeys(said))[:2000] or None
