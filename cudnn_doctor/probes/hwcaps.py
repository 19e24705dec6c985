"""The glibc-hwcaps subfolders ld.so searches, asked of ld.so itself (glibc 2.33 and later).

For every folder it searches (LD_LIBRARY_PATH's, a RUNPATH's, the system's), ld.so first looks in that folder's
glibc-hwcaps/<level> subfolders that this CPU supports, best first (x86-64-v4, v3, v2; power10, z15, ...), then in
the folder itself (ld.so(8), "Hardware capabilities"): a libcudnn.so.9 in dir/glibc-hwcaps/x86-64-v2 is the one a
program gets, not dir/libcudnn.so.9. Which levels it searches on this machine, with the user's GLIBC_TUNABLES, is
what `ld.so --help` prints ("Subdirectories of glibc-hwcaps directories, in priority order", each marked
"supported, searched"): that is asked, once, and only where a folder searched has a glibc-hwcaps subfolder at all.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

HWCAPS = "glibc-hwcaps"
HEADING = "Subdirectories of glibc-hwcaps directories"
_ASKED: dict[tuple[str, str, str], str | None] = {}  # (ld.so, GLIBC_TUNABLES, option) -> what it printed


def this_loader() -> str | None:
    """The ld.so that started this process (its mapping in /proc/self/maps), None where it cannot be named."""
    from cudnn_doctor.variables import mapped_here

    return next((path for path in mapped_here() if os.path.basename(path).startswith("ld-")
                 and ".so" in os.path.basename(path) and os.path.isabs(path)), None)


def searched_levels(env: Mapping[str, str]) -> tuple[str, ...]:
    """The glibc-hwcaps subfolder names ld.so searches here, best first; () where it names none (glibc before 2.33,
    no ld.so to ask, an answer that is not its help)."""
    said = _ask_loader("--help", env)
    return parse_help(said) if said is not None else ()


def loader_platform(env: Mapping[str, str]) -> str | None:
    """What ld.so puts for $PLATFORM in this process's world (its `dl_platform`, which `ld.so --list-diagnostics`
    prints, glibc 2.33 and later): on x86-64 glibc before 2.37 names the CPU's class there ("haswell" on an Intel
    CPU with AVX2, "xeon_phi" with AVX-512ER), not the machine. Asked once per ld.so and GLIBC_TUNABLES (which can
    mask the CPU's features); None where it cannot be asked (no ld.so named, an older glibc, no answer)."""
    said = _ask_loader("--list-diagnostics", env)
    return parse_platform(said) if said is not None else None


def _ask_loader(option: str, env: Mapping[str, str]) -> str | None:
    """What this process's ld.so prints for OPTION, with the user's GLIBC_TUNABLES (which can mask the CPU's
    features): asked once per ld.so, tunables and option; None where there is no ld.so to ask or it refused."""
    loader = this_loader()
    if loader is None:
        return None
    key = (loader, env.get("GLIBC_TUNABLES", ""), option)
    if key not in _ASKED:
        from cudnn_doctor.child import deadline_in, run_child

        answer = run_child([loader, option], env, deadline_in(5.0), what=f"{loader} {option}")
        _ASKED[key] = answer.stdout if answer.exit_code == 0 else None
    return _ASKED[key]


def parse_platform(text: str) -> str | None:
    """The dl_platform="..." line of ld.so --list-diagnostics (a plain name: anything else is not taken)."""
    import re

    found = re.search(r'^dl_platform="([A-Za-z0-9_.+-]{1,64})"$', text, re.MULTILINE)
    return found.group(1) if found else None


def parse_help(text: str) -> tuple[str, ...]:
    """The names ld.so --help lists under its glibc-hwcaps heading as "supported, searched", in its order."""
    levels: list[str] = []
    lines = text.splitlines()
    for index, line in enumerate(lines):
        if line.startswith(HEADING):
            for entry in lines[index + 1:]:
                if not entry.startswith("  "):
                    break
                name, _, marks = entry.strip().partition(" ")
                if "searched" in marks and name and "/" not in name and name not in (".", ".."):
                    levels.append(name)
            break
    return tuple(levels)


def with_levels(folders: list[str], env: Mapping[str, str]) -> list[str]:
    """FOLDERS as ld.so searches them: before each, the glibc-hwcaps subfolders of it that ld.so searches here and
    that exist, best first. FOLDERS unchanged where none has a glibc-hwcaps subfolder (ld.so is then not asked)."""
    # each folder asked once (a long LD_LIBRARY_PATH repeats them; every reader of the path comes through here)
    holding = {folder for folder in dict.fromkeys(folders) if os.path.isdir(os.path.join(folder or ".", HWCAPS))}
    if not holding:
        return list(folders)
    levels = searched_levels(env)
    if not levels:
        return list(folders)
    searched: list[str] = []
    for folder in folders:
        if folder in holding:
            searched += [path for level in levels if os.path.isdir(path := os.path.join(folder, HWCAPS, level))]
        searched.append(folder)
    return searched


def entry_of(folder: str) -> str:
    """The searched folder whose glibc-hwcaps subfolder FOLDER is (FOLDER itself where it is none)."""
    parent = os.path.dirname(folder.rstrip("/"))
    if os.path.basename(parent) == HWCAPS:
        return os.path.dirname(parent)
    return folder
