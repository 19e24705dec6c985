"""The dynamic loader's view: its search folders, its cache, and the copy it really picks."""

from __future__ import annotations

import os
import re
from typing import TYPE_CHECKING

from cudnn_doctor.child import ChildAnswer
from cudnn_doctor.probes.context import SearchContext
from cudnn_doctor.records import record
from cudnn_doctor.user_files import is_regular_file

if TYPE_CHECKING:
    from cudnn_doctor.child import ChildBatch
    from cudnn_doctor.probes.library_jobs import ProbeBatch

HELPER_BUDGET_S = 10.0  # seconds for check's helper programs (ldconfig -p; the nvcc --version runs together)


def ldconfig_command(ctx: SearchContext) -> list[str] | None:
    """The `ldconfig -p` that lists the loader's cache of this system (or of the system under the
    prefix), or None where there is no ldconfig or no cache. Run through the child runner."""
    from cudnn_doctor.operating_system import CURRENT

    ldconfig = CURRENT.system_tool("ldconfig", ctx.env.get("PATH", ""))  # the system's own first
    if ldconfig is None:
        return None
    command = [ldconfig, "-p"]
    if ctx.prefix not in ("", "/"):
        cache = ctx.system("/etc/ld.so.cache")
        if not is_regular_file(cache):  # missing, or a FIFO that ldconfig would wait on
            return None
        command += ["-C", os.path.abspath(cache)]
    return command


def ldconfig_cache(ctx: SearchContext) -> dict[str, list[str]]:
    """soname -> paths from the ldconfig cache, for this machine's architecture: `ldconfig -p` run on
    its own through the child runner (check runs it beside nvcc, under one budget)."""
    from cudnn_doctor.child import deadline_in, helper_timeout, run_child

    command = ldconfig_command(ctx)
    if command is None:
        return {}
    answer = run_child(command, ctx.env, deadline_in(helper_timeout()), what="ldconfig -p", read_to_end=True)
    return under_prefix(cache_from_answer(answer, ctx.arch), ctx)


def under_prefix(cache: dict[str, list[str]], ctx: SearchContext) -> dict[str, list[str]]:
    """CACHE with its paths moved under the system prefix where the file is there: the cache of a system under a
    prefix (a mounted image, `ldconfig -r ROOT`) names its files as that system sees them, from its own root, not
    the host's; a path that only the host has (a cache built with absolute folders) is kept as it is."""
    if ctx.prefix in ("", "/"):
        return cache
    root = os.path.normpath(ctx.prefix)
    moved: dict[str, list[str]] = {}
    for soname, paths in cache.items():
        moved[soname] = [path if path == root or path.startswith(root + os.sep) or not os.path.lexists(ctx.system(path))
                         else ctx.system(path) for path in paths]
    return moved


def cache_from_answer(answer: ChildAnswer, arch: str) -> dict[str, list[str]]:
    """The cache `ldconfig -p` listed, or {} when it hung or failed (a partial listing is not trusted)."""
    if answer.timed_out or answer.crashed or answer.error:
        return {}
    return parse_ldconfig_cache(answer.stdout, arch)


def parse_ldconfig_cache(out: str, arch: str) -> dict[str, list[str]]:
    """`ldconfig -p`'s lines for ARCH as soname -> paths; OUT decoded with surrogateescape, so a folder
    whose name is not UTF-8 keeps its bytes."""
    wanted = {"x86_64": "x86-64", "aarch64": "AArch64", "ppc64le": "ppc64"}.get(arch, "")
    entries: dict[str, list[str]] = {}
    for line in out.split("\n"):
        match = re.match(r"\s+(\S+) \(([^)]*)\) => (.+)$", line)
        if match and (not wanted or wanted in match.group(2)):
            entries.setdefault(match.group(1), []).append(match.group(3))
    return entries


def loader_search_dirs(ctx: SearchContext, cache: dict[str, list[str]]) -> list[str]:
    """LD_LIBRARY_PATH, then the folders of the ldconfig cache, then the default folders (Windows: System32
    and the Windows folder, then PATH)."""
    ordered = search_order(ctx, [], cache)
    unique: list[str] = []
    seen: set[str] = set()
    for folder in ordered:
        real = os.path.realpath(folder)
        if real not in seen and os.path.isdir(folder):
            seen.add(real)
            unique.append(folder)
    return unique


def resolve_like_loader(soname: str, runpath: list[str], ctx: SearchContext,
                        cache: dict[str, list[str]]) -> str | None:
    """The path ld.so would open for SONAME from a library whose DT_RUNPATH is RUNPATH:
    LD_LIBRARY_PATH first, then RUNPATH, then the cache, then the default folders. On Windows, the file
    LoadLibrary(SONAME) opens: the program's own folder (RUNPATH stands for it), System32, the Windows
    folder, then PATH."""
    if ctx.os_name == "windows":
        candidates = [os.path.join(folder, soname) for folder in search_order(ctx, runpath, cache)]
    else:
        from cudnn_doctor.probes.hwcaps import with_levels

        # each folder once: a later copy of a folder (a long LD_LIBRARY_PATH repeats them) is never reached first
        candidates = [os.path.join(folder, soname)
                      for folder in dict.fromkeys(with_levels(ctx.library_path() + list(runpath), ctx.env))]
        candidates += cache.get(soname, [])
        candidates += [os.path.join(folder, soname) for folder in ctx.default_lib_dirs()]
    return next((candidate for candidate in candidates if os.path.exists(candidate)), None)


def find_nvml(ctx: SearchContext, cache: dict[str, list[str]]) -> str | None:
    """The NVML library pynvml would load: libnvidia-ml.so.1 where the loader finds it; on Windows, nvml.dll
    in System32 (the DCH drivers), else in %ProgramFiles%\\NVIDIA Corporation\\NVSMI (older drivers)."""
    if ctx.os_name != "windows":
        return resolve_like_loader(ctx.layout.nvml, [], ctx, cache)
    candidates = [os.path.join(ctx.windows_folder(), "System32", ctx.layout.nvml)]
    candidates += [os.path.join(root, "NVIDIA Corporation", "NVSMI", ctx.layout.nvml) for root in ctx.program_files()]
    return next((candidate for candidate in candidates if os.path.isfile(candidate)), None)


def search_order(ctx: SearchContext, runpath: list[str], cache: dict[str, list[str]]) -> list[str]:
    """The folders a loader searches, in its order. Linux: LD_LIBRARY_PATH, RUNPATH, the cache's folders,
    the default folders. Windows (LoadLibrary's standard order, SafeDllSearchMode): the program's folder
    (RUNPATH), System32, the Windows folder, PATH."""
    if ctx.os_name == "windows":
        return list(runpath) + ctx.default_lib_dirs() + ctx.library_path()
    from cudnn_doctor.probes.hwcaps import with_levels

    cached = list(dict.fromkeys(os.path.dirname(path) for paths in cache.values() for path in paths))
    return with_levels(ctx.library_path() + list(runpath), ctx.env) + cached + ctx.default_lib_dirs()


LD_CACHE_LIMIT = 64 << 20  # bytes of /etc/ld.so.cache read at most (a large machine's is a few MB)


def may_load(soname: str, ctx: SearchContext) -> bool:
    """Whether the loader may find SONAME: in an LD_LIBRARY_PATH or default folder (Windows: System32, the
    Windows folder, PATH), or named in the loader's cache. A superset of resolve_like_loader()'s exact answer,
    read without `ldconfig -p`: what lets the slowest child start before that answer is known."""
    if resolve_like_loader(soname, [], ctx, {}) is not None:  # the loader's own folders, its cache left out
        return True
    cache = ctx.system("/etc/ld.so.cache")
    if not is_regular_file(cache):  # missing, or a FIFO that would block the read
        return False
    try:
        with open(cache, "rb") as handle:
            return soname.encode() in handle.read(LD_CACHE_LIMIT)
    except OSError:
        return False


def may_load_nvml(ctx: SearchContext) -> bool:
    """Whether pynvml may find NVML: may_load's answer for libnvidia-ml.so.1; on Windows, where pynvml looks."""
    return find_nvml(ctx, {}) is not None or may_load(ctx.layout.nvml, ctx)


@record(frozen=True)
class StartedNvml:
    """NVML's child for CTX, started as soon as CTX is known (None where the loader cannot find NVML): on a GPU
    machine it is the longest wait of a check, so it runs while the probes' and rules' modules load."""

    ctx: SearchContext
    batch: ProbeBatch | None


_EARLY: list[StartedNvml] = []  # the child start_nvml_early started, until start_nvml takes it or stops it


def start_nvml_early() -> None:
    """NVML's child for the machine as this process was started (check's search context before its options are
    read), started by the command's entry before the command line is parsed and the modules load (entry.main, for
    `check` only): on a GPU machine it is check's longest wait. start_nvml takes it where the context the options
    give is the same for NVML (its environment, system prefix, system, architecture), and stops it otherwise; a
    command that never gets there (a usage error, --help) leaves it to stop_all at exit, like any child. `ldconfig
    -p` starts beside it: the loader's cache is the first answer check waits for (start_ldconfig takes it so)."""
    try:
        ctx = SearchContext.from_environment()
        _EARLY.append(start_nvml(ctx))
        _EARLY_LDCONFIG.append(StartedLdconfig(ctx, _ldconfig_request(ctx)))
    except Exception:  # noqa: BLE001 - a setting it reads is wrong (CUDNN_DOCTOR_PROBE_TIMEOUT): the command says so
        return  # where it reads it again, with its one line and exit code; nothing more starts early


@record
class StartedLdconfig:
    """`ldconfig -p` for CTX (its command and its batch; None where there is no ldconfig or cache), as started."""

    ctx: SearchContext
    started: tuple[tuple[str, ...], ChildBatch] | None


_EARLY_LDCONFIG: list[StartedLdconfig] = []  # the one start_nvml_early started, until start_ldconfig takes or stops it


def _ldconfig_request(ctx: SearchContext) -> tuple[tuple[str, ...], ChildBatch] | None:
    """`ldconfig -p` for CTX started now through the child runner, under the helpers' budget
    (CUDNN_DOCTOR_HELPER_TIMEOUT): its command and its batch; None where there is nothing to run."""
    from cudnn_doctor.child import ChildBatch, deadline_in, helper_request, helper_timeout

    command = ldconfig_command(ctx)
    if command is None:
        return None
    budget = helper_timeout()
    return tuple(command), ChildBatch([helper_request(command, ctx.env, "ldconfig -p", budget)],
                                      deadline=deadline_in(budget))


def start_ldconfig(ctx: SearchContext) -> ChildBatch | None:
    """`ldconfig -p`'s batch for CTX: the one the command's entry started where CTX runs the same command in the
    same environment (its answer is then already under way), else one started now (the early one stopped)."""
    early = _EARLY_LDCONFIG.pop() if _EARLY_LDCONFIG else None
    command = ldconfig_command(ctx)
    if early is not None and early.started is not None:
        if command is not None and tuple(command) == early.started[0] and _same_for_nvml(early.ctx, ctx):
            return early.started[1]
        early.started[1].stop()
    started = _ldconfig_request(ctx)
    return started[1] if started is not None else None


def _same_for_nvml(first: SearchContext, second: SearchContext) -> bool:
    return (first.env, first.prefix, first.os_name, first.arch) == (second.env, second.prefix, second.os_name,
                                                                    second.arch)


def start_nvml(ctx: SearchContext) -> StartedNvml:
    from cudnn_doctor.probes.library_jobs import NVML_JOB, ProbeBatch

    early = _EARLY.pop() if _EARLY else None
    if early is not None and _same_for_nvml(early.ctx, ctx):
        return StartedNvml(ctx, early.batch)
    if early is not None and early.batch is not None:
        early.batch.stop()
    batch = ProbeBatch([NVML_JOB], env=ctx.env) if may_load_nvml(ctx) else None  # started as it returns
    return StartedNvml(ctx, batch)
