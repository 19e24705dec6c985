"""NCCL readiness (issue 42): the libnccl each framework loads and its version (ncclGetVersion in a child), NCCL's
settings, the node's network interfaces and InfiniBand adapters, /dev/shm (its size, and whether it takes one
segment of the size NCCL makes), the fabric manager of NVSwitch systems, and under --deep an all-reduce over the
visible GPUs (cudnn_doctor/_allreduce_child.py, one process per GPU, through the one child runner). No judgement:
rules/multi_gpu.py decides."""

from __future__ import annotations

import dataclasses
import glob
import os
import re
from typing import Any

from cudnn_doctor.child import ChildBatch, ChildRequest, deadline_in, timeout_from_env
from cudnn_doctor.knowledge.data import load
from cudnn_doctor.model import AllReduce, Framework, Gpu, GpuLinks, GpuPair, MultiGpu, NcclLibrary
from cudnn_doctor.probes.context import SearchContext
from cudnn_doctor.probes.loader import resolve_like_loader
from cudnn_doctor.probes.origin import origin
from cudnn_doctor.probes.topology import iommu_state, read_links
from cudnn_doctor.variables import preload_entries
from cudnn_doctor.versions import ascii_digits, decode_nccl

NCCL_SONAME = "libnccl.so.2"
NCCL_USERS = ("torch", "jax")  # their wheels bring NCCL (nvidia-nccl-cu*): torch pins it, jax's CUDA plugin a floor
CHILD = os.path.join(os.path.dirname(os.path.dirname(os.path.realpath(__file__))), "_allreduce_child.py")
ALLREDUCE_TIMEOUT_S = 60.0
ALLREDUCE_MIB = 256
ALLREDUCE_ITERATIONS = 20
SMALL_MIB = 16  # a machine whose all-reduce fails fails at once: the measured size only runs where it works


def nccl_runpath(framework: Framework) -> list[str]:
    """The folders a framework's own libraries find libnccl.so.2 in (torch: its nvidia-nccl wheel's lib)."""
    site = str(framework.details.get("site_packages") or "")
    if not site:
        return []
    return sorted(glob.glob(os.path.join(site, "nvidia", "nccl", "lib"))) + \
        sorted(glob.glob(os.path.join(site, "nvidia", "cu*", "lib")))


class NcclProbe:
    """The libnccl.so.2 each framework that uses NCCL gets (LD_LIBRARY_PATH first, then its RUNPATH, then the
    loader's cache), its version asked in a child started now and read with libraries(): it answers beside the
    other probes."""

    def __init__(self, frameworks: list[Framework], ctx: SearchContext, cache: dict[str, list[str]]) -> None:
        from cudnn_doctor.probes.library_jobs import Job, ProbeBatch

        self.found: list[NcclLibrary] = []
        for framework in frameworks:
            if framework.name not in NCCL_USERS or framework.details.get("cpu_only"):
                continue
            runpath = nccl_runpath(framework)
            built_with = framework.details.get("nccl_requirement")
            # as ld.so: a preloaded libnccl first (its objects come before any search), then the search
            behind = resolve_like_loader(NCCL_SONAME, runpath, ctx, cache)
            library = _preloaded(ctx) or behind
            if (library is None or framework.name == "jax") and not built_with:
                continue  # jax uses NCCL only through its CUDA plugin, which names the NCCL it takes
            via, entry = (origin(library, NCCL_SONAME, ctx, runpath=os.path.dirname(library) in runpath)
                          if library is not None else (None, None))
            after = None
            if via == "LD_PRELOAD" and behind is not None:  # what the search gives once the preload is gone
                without = dataclasses.replace(ctx, env={k: v for k, v in ctx.env.items() if k != "LD_PRELOAD"})
                then, then_entry = origin(behind, NCCL_SONAME, without, runpath=os.path.dirname(behind) in runpath)
                after = then_entry if then == "LD_LIBRARY_PATH" else None
            # the framework's own wheel, reached through its RUNPATH: the version its metadata names, no child (a
            # child loads 200 MB of NCCL and registers its kernels, every check); another copy is asked
            own = _wheel_version(framework, library) if via == "RUNPATH" and not any(
                os.path.basename(e).startswith("libnccl") for e in preload_entries(ctx.env)) else None
            self.found.append(NcclLibrary(framework.name, library, own, str(built_with) if built_with else None, via,
                                          entry, library_real=os.path.realpath(library) if library else None,
                                          after_preload=after))
        self.jobs = {item.library: Job("nccl", item.library) for item in self.found
                     if item.library and item.version is None}
        self.batch = ProbeBatch(list(self.jobs.values())) if self.jobs else None

    def libraries(self) -> list[NcclLibrary]:
        answers = self.batch.results() if self.batch is not None else {}
        for item in self.found:
            if item.library is None:
                item.error = "no libnccl.so.2 where the framework looks"
                continue
            if item.library not in self.jobs:  # the wheel's own, its version from its metadata
                continue
            answer = answers[self.jobs[item.library]]
            if not answer.loaded:
                item.error = answer.error or "it could not be loaded"
            else:
                item.version = decode_nccl(answer.values.get("ncclGetVersion"))
                if item.version is None:
                    item.error = f"ncclGetVersion answered {answer.values.get('status')}"
        return self.found


def _preloaded(ctx: SearchContext) -> str | None:
    """The libnccl LD_PRELOAD loads (an entry that is a file of that name, or the bare soname found as a needed
    library is), where one is there: ld.so maps it before any search, so every later libnccl.so.2 is that one."""
    for entry in preload_entries(ctx.env):
        if "/" in entry and os.path.basename(entry).startswith("libnccl") and os.path.isfile(entry):
            return entry
    return None


def _wheel_version(framework: Framework, library: str | None) -> str | None:
    """The version of the nvidia-nccl wheel whose nvidia/nccl/lib holds LIBRARY, from its dist-info's name."""
    import glob

    site = str(framework.details.get("site_packages") or "")
    if not site or library is None or os.path.dirname(os.path.dirname(os.path.dirname(library))) != \
            os.path.join(site, "nvidia"):
        return None
    infos = sorted(glob.glob(os.path.join(glob.escape(site), "nvidia_nccl*.dist-info")))
    version = os.path.basename(infos[0]).removesuffix(".dist-info").rsplit("-", 1)[-1] if infos else ""
    return version if re.fullmatch(r"\d+\.\d+\.\d+(\.\d+)*", version) else None


def read_multi_gpu(nvml_values: dict[str, Any], gpus: list[Gpu], nccl: NcclProbe | None, ctx: SearchContext,
                   cuinit: int | None) -> MultiGpu | None:
    """Everything several GPUs and NCCL need from this node; None where there is no GPU and no NCCL setting."""
    settings = {name: value for name, value in ctx.env.items() if name.startswith("NCCL_")}
    if not gpus and not settings:
        return None
    links, pairs = read_links(nvml_values, gpus, ctx)
    multi = MultiGpu(gpus=links, pairs=pairs, nccl_settings=dict(sorted(settings.items())))
    multi.interfaces = _interfaces(ctx.system("/sys/class/net"), settings.get("NCCL_SOCKET_IFNAME"), "NCCL_SOCKET_IFNAME")
    multi.infiniband = _interfaces(ctx.system("/sys/class/infiniband"), settings.get("NCCL_IB_HCA"), "NCCL_IB_HCA")
    multi.infiniband_ports = {name: ports for name in multi.infiniband
                              if (ports := _ports(ctx.system(f"/sys/class/infiniband/{name}/ports")))}
    multi.shm_mib, multi.shm_free_mib, multi.shm_refused = read_shm(ctx)
    multi.iommu = iommu_state(ctx) if len(links) > 1 else None
    fabric = load("multi_gpu").get("fabric_manager", {})
    if any(g.fabric_state for g in links) or cuinit == fabric.get("cuda_status", 802):
        multi.fabric_manager = fabric_manager_state(ctx, fabric)
    multi.nccl_libraries = nccl.libraries() if nccl is not None and gpus else []
    return multi


LISTED = 256  # the names of a folder a report lists
READ_NAMES = 1 << 16  # the names of /sys/class/net or /sys/class/infiniband read at most (a node has tens)
KEPT_BEYOND = 16  # names past the listed ones that the user's NCCL list keeps, kept to judge it


def _names(folder: str) -> list[str]:
    """The names of FOLDER (not those starting with a dot), the first READ_NAMES the kernel gives, sorted."""
    names: list[str] = []
    try:
        with os.scandir(folder) as entries:
            for entry in entries:
                if not entry.name.startswith("."):
                    names.append(entry.name)
                    if len(names) >= READ_NAMES:
                        break
    except OSError:
        return []
    return sorted(names)


def _listing(folder: str) -> tuple[str, ...]:
    return tuple(_names(folder)[:LISTED])


def _interfaces(folder: str, value: str | None, variable: str) -> tuple[str, ...]:
    """The first LISTED names of FOLDER, and past them the first KEPT_BEYOND that VALUE (the user's VARIABLE, as
    NCCL reads its list: knowledge/environment.interface_list) keeps: on a node of thousands of interfaces the one
    the user named is there, and rules/multi_gpu.py judges the list by what NCCL keeps, never by the first few."""
    names = _names(folder)
    listed = names[:LISTED]
    if value is None or len(names) <= LISTED:
        return tuple(listed)
    from cudnn_doctor.knowledge.environment import interface_list

    row = next((r for r in load("multi_gpu").get("nccl_setting", []) if r.get("variable") == variable), None)
    if row is None:
        return tuple(listed)
    read = interface_list(row, value)
    beyond = [name for name in names[LISTED:] if read.keeps(name)][:KEPT_BEYOND]
    return tuple(listed + beyond)


def _ports(folder: str) -> tuple[int, ...]:
    """The port numbers an InfiniBand adapter lists (its ports/1, ports/2 ...), the first 64."""
    from cudnn_doctor.versions import ascii_digits

    return tuple(sorted(int(name) for name in _listing(folder) if ascii_digits(name) and len(name) <= 4))[:64]


def read_shm(ctx: SearchContext) -> tuple[int | None, int | None, str | None]:
    """(/dev/shm's size in MiB, free MiB, the kernel's refusal of one segment of the size NCCL makes or None).
    The segment is reserved with posix_fallocate, as NCCL reserves its own, and removed at once."""
    folder = ctx.system("/dev/shm")
    if not hasattr(os, "statvfs"):  # Windows: no /dev/shm
        return None, None, None
    try:
        stat = os.statvfs(folder)
    except OSError:
        return None, None, None
    size, free = stat.f_blocks * stat.f_frsize >> 20, stat.f_bavail * stat.f_frsize >> 20
    segment = int(load("multi_gpu").get("shm", {}).get("segment_bytes", 9637888))
    path = os.path.join(folder, f"cudnn-doctor-{os.getpid()}")
    flags = os.O_RDWR | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags, 0o600)
    except OSError as error:
        return size, free, None if error.errno == 17 else f"cannot create a file there: {error.strerror}"
    refused = None
    try:
        os.posix_fallocate(fd, 0, segment)
    except OSError as error:
        refused = f"posix_fallocate of {segment} bytes: {error.strerror} (errno {error.errno})"
    finally:
        os.close(fd)
        try:
            os.unlink(path)
        except OSError:
            pass
    return size, free, refused


def fabric_manager_state(ctx: SearchContext, fabric: dict[str, Any]) -> str:
    """'running' where a process of the fabric manager runs, 'installed' where its unit or program is there,
    else 'absent'."""
    from cudnn_doctor.user_files import UnreadableFile, read_user_head

    process = str(fabric.get("process", "nv-fabricmanager"))
    for comm in glob.glob(ctx.system("/proc/[0-9]*/comm"))[:65536]:
        try:
            if read_user_head(comm, 64).strip()[:15] == process.encode()[:15]:  # comm: 15 characters at most
                return "running"
        except UnreadableFile:
            continue
    service = str(fabric.get("service", "nvidia-fabricmanager"))
    places = [f"/usr/bin/{process}", f"/lib/systemd/system/{service}.service",
              f"/usr/lib/systemd/system/{service}.service", f"/etc/systemd/system/{service}.service"]
    return "installed" if any(os.path.exists(ctx.system(place)) for place in places) else "absent"


class AllReduceRun:
    """The all-reduce child, started at once and read at the end of the probes (--deep)."""

    def __init__(self, framework: Framework, world: int) -> None:
        from cudnn_doctor.probes.context import interpreter_for

        self.world = world
        self.timeout = timeout_from_env("CUDNN_DOCTOR_ALLREDUCE_TIMEOUT", ALLREDUCE_TIMEOUT_S)
        site = str(framework.details.get("site_packages") or "")
        python = interpreter_for(site) if site else None
        self.error = None if python else f"no Python interpreter found for {site or framework.location}"
        from cudnn_doctor.probes.deep import BOOT

        try:
            here = os.getcwd()
        except OSError:  # removed under us: the ranks stay where the runner starts the launcher
            here = ""
        # the launcher is the doctor's own code (isolated); each rank imports torch as a program of the user's does
        # (PYTHONPATH, the user's site-packages, the working folder: deep.BOOT, as the framework child is started)
        requests = [] if python is None else [ChildRequest(
            (python, "-I", CHILD, "launch", str(world), str(ALLREDUCE_MIB), str(ALLREDUCE_ITERATIONS),
             f"{max(1.0, self.timeout - 5):g}", site, here, BOOT), None, self.timeout, "the NCCL all-reduce")]
        self.batch = ChildBatch(requests, deadline=deadline_in(self.timeout), parallel=1)

    def result(self, pairs: list[GpuPair]) -> AllReduce:
        if self.error is not None:
            return AllReduce(self.world, False, error=self.error)
        answer = self.batch.answer(0)
        values = answer.values or {}
        if answer.timed_out or not values:
            why = "the all-reduce launcher did not answer within its deadline" if answer.timed_out else \
                (answer.error or f"the all-reduce launcher exited with status {answer.exit_code}")
            return AllReduce(self.world, False, timed_out=answer.timed_out, error=why,
                             last_words=tuple(line for line in answer.stderr_tail.splitlines()[-6:] if line.strip()))
        return AllReduce(
            world_size=self.world, ok=bool(values.get("ok")), bytes=int(_number(values.get("bytes")) or 0),
            ms=_number(values.get("ms")), algbw_gbs=_number(values.get("algbw_gbs")),
            busbw_gbs=_number(values.get("busbw_gbs")), predicted_busbw_gbs=predicted_busbw(pairs, self.world),
            nccl_version=str(values["nccl_version"]) if values.get("nccl_version") else None,
            library=str(values["library"]) if values.get("library") else None,
            last_words=tuple(str(line) for line in values.get("last_words") or ()),
            timed_out=bool(values.get("timed_out")), error=str(values["error"]) if values.get("error") else None,
            can_access_peer={str(k): bool(v) for k, v in (values.get("can_access_peer") or {}).items()})


def with_peer_access(multi: MultiGpu, answers: dict[str, Any], nvml_index: dict[int, int | None] | None = None) -> None:
    """Each pair's cuDeviceCanAccessPeer, both ways, from ANSWERS ("0-1": bool, CUDA ordinals: the CUDA probe child's,
    or the all-reduce's rank 0 through torch); NVML_INDEX maps a CUDA ordinal to NVML's index where they differ."""
    def index(ordinal: str) -> int | None:
        number = int(ordinal)
        return nvml_index.get(number) if nvml_index is not None else number

    found: dict[tuple[int, int], bool] = {}
    for key, value in answers.items():
        first, _, second = str(key).partition("-")
        if not (ascii_digits(first) and ascii_digits(second)) or not isinstance(value, bool):
            continue
        a, b = index(first), index(second)
        if a is not None and b is not None:
            found[(a, b)] = value
    for pair in multi.pairs:
        a, b = pair.gpus
        if (a, b) in found and (b, a) in found:
            pair.can_access_peer = found[(a, b)] and found[(b, a)]


def predicted_busbw(pairs: list[GpuPair], world: int) -> float | None:
    """What a ring over GPUs 0..WORLD-1 can carry at most: the slowest link of the ring, one direction."""
    if world < 2:
        return None
    peaks = {tuple(sorted(p.gpus)): p.peak_gbs for p in pairs}
    ring = [peaks.get(tuple(sorted((i, (i + 1) % world)))) for i in range(world)]
    return min(ring) if ring and all(ring) else None  # type: ignore[type-var]


def start_allreduce(frameworks: list[Framework], world: int) -> AllReduceRun | None:
    """The all-reduce child for torch (the framework that speaks NCCL through torch.distributed), or None."""
    from cudnn_doctor.probes.context import interpreter_for

    torch = next((f for f in frameworks if f.name == "torch" and not f.details.get("cpu_only")), None)
    site = str(torch.details.get("site_packages") or "") if torch is not None else ""
    if torch is None or world < 2 or not site or interpreter_for(site) is None:
        # nothing to run it with (the framework's own --deep import says why), or one GPU: a program on one GPU
        # never calls NCCL, and an all-reduce over one moves nothing between GPUs
        return None
    return AllReduceRun(torch, world)


def _number(value: object) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


__all__ = ["AllReduceRun", "GpuLinks", "NcclProbe", "read_multi_gpu", "read_shm", "start_allreduce"]
