"""How a library file a program opened came into it: the one answer every probe gives (libcuda, NVML, cuDNN and the
other CUDA libraries a loading child mapped, NCCL), so the rules and the plan read one word for it ("LD_PRELOAD",
"LD_LIBRARY_PATH", "its own wheel", "RUNPATH", "the loader's cache or a system folder") and the entry as the user
wrote it, which is what a fix removes.

The order is ld.so's (ld.so(8), "Dynamic string tokens" and the search order): LD_PRELOAD first, then
LD_LIBRARY_PATH, then the asking object's DT_RUNPATH, then the cache and the system folders. Entries are read as
ld.so reads them: LD_LIBRARY_PATH split at ':' and ';', an empty entry the working folder, $ORIGIN, $LIB and
$PLATFORM expanded; a bare LD_PRELOAD name searched for as a needed library is."""

from __future__ import annotations

import os
import re

from cudnn_doctor.probes.context import SearchContext
from cudnn_doctor.variables import _LOADER_TOKEN, preload_entries

LOADER_TOKEN = re.compile(_LOADER_TOKEN)
SYSTEM = "the loader's cache or a system folder"


def origin(path: str, soname: str, ctx: SearchContext, own: str | None = None,
           runpath: bool | None = None) -> tuple[str, str | None]:
    """How PATH (opened for SONAME) came into a program, and the entry that brought it as written there: an
    LD_PRELOAD entry, an LD_LIBRARY_PATH folder (PATH in it, or its SONAME a link to PATH, or a glibc-hwcaps subfolder
    of it), the framework's own wheel (OWN, that wheel's copy, is PATH's file), its RUNPATH (RUNPATH: whether the
    asking object's DT_RUNPATH found it; None: where PATH lies in a site-packages folder, as a wheel's library is
    found), or the loader's cache and system folders."""
    from cudnn_doctor.probes.hwcaps import entry_of

    real = os.path.realpath(path)
    for entry in preload_entries(ctx.env):
        if "/" not in entry:  # a bare name is searched for as a needed library is (ld.so(8)): the soname it names
            if entry in (soname, os.path.basename(path)):
                return "LD_PRELOAD", entry
        elif os.path.realpath(entry) == real or _expands_to(entry, path, real):
            return "LD_PRELOAD", entry
    folder = entry_of(os.path.dirname(real))  # a glibc-hwcaps subfolder's copy came through its folder's entry
    written = os.path.realpath(entry_of(os.path.dirname(path)))
    for entry in ctx.env_paths("LD_LIBRARY_PATH"):
        if entry and (os.path.realpath(entry) in (folder, written)
                      or os.path.realpath(os.path.join(entry, soname)) == real
                      or _expansions(entry.rstrip("/"), (os.path.dirname(path), folder))):
            return "LD_LIBRARY_PATH", entry
    if own and real == os.path.realpath(own):
        return "its own wheel", None
    if runpath is None:
        runpath = os.sep + "site-packages" + os.sep in path or os.sep + "dist-packages" + os.sep in path
    return ("RUNPATH", None) if runpath else (SYSTEM, None)


def _expands_to(entry: str, path: str, real: str) -> bool:
    """Whether ld.so, expanding the $LIB, $PLATFORM and $ORIGIN of ENTRY's folder (ld.so(8), "Dynamic string
    tokens": $LIB is lib/x86_64-linux-gnu on Debian, lib64 on Fedora), made REAL of it: PATH's folder (what the
    child mapped) read as the expansion, and ENTRY's file there being REAL."""
    folder, name = os.path.split(entry)
    return any(os.path.realpath(os.path.join(candidate, name)) == real
               for candidate in _expansions(folder, (os.path.dirname(path), os.path.dirname(real))))


def _expansions(folder: str, candidates: tuple[str, ...]) -> list[str]:
    """The CANDIDATES (folders a program mapped from) that FOLDER, written with ld.so's tokens, may expand to: each
    token read as any run of folders. None where FOLDER holds no token."""
    parts = [part for index, part in enumerate(LOADER_TOKEN.split(folder)) if index % 3 == 0]
    if len(parts) == 1:
        return []
    expression = re.compile(".+".join(re.escape(part) for part in parts) + r"\Z", re.DOTALL)
    return [candidate for candidate in dict.fromkeys(candidates) if expression.match(candidate)]
