"""Several GPUs, their links and NCCL (issue 42): pure functions of the report's `multi_gpu` part and
compat/multi_gpu.toml. What NVML, the kernel or NCCL itself refused is an error; what is read from settings and
/sys is a warning that says how to prove it (`check --deep` runs the all-reduce, `bench --p2p` the copies)."""

from __future__ import annotations

import dataclasses
from typing import Any

from cudnn_doctor.codes import finding
from cudnn_doctor.knowledge.data import load
from cudnn_doctor.knowledge.environment import (
    NCCL_OWN_GRAMMARS,
    bitset_problem,
    enum_reading,
    interface_list,
    names_problem,
)
from cudnn_doctor.model import Finding, MultiGpu, Report

CAUSE_CODES = ("CD170", "CD171", "CD173", "CD174", "CD175", "CD176", "CD177", "CD178", "CD180")


def _multi(report: Report) -> MultiGpu | None:
    return report.multi_gpu


def _data() -> dict[str, Any]:
    return load("multi_gpu")


def fabric(report: Report) -> list[Finding]:
    multi = _multi(report)
    if multi is None or (report.process is not None and report.process.cuinit in (0, 802)):
        return []  # cuInit's own 802 is rules/process_env.py's CD170; where cuInit succeeds, CUDA starts regardless
    waiting = [g for g in multi.gpus if g.fabric_state in ("not_started", "in_progress")
               or (g.fabric_state == "completed" and g.fabric_status not in (None, 0))]
    if not waiting:
        return []
    states = ", ".join(f"GPU {g.index} {g.fabric_state}" + (f" (status {g.fabric_status})" if g.fabric_status else "")
                       for g in waiting)
    return [finding("CD170", subject="nvidia-fabricmanager", refs=(_data()["fabric_manager"]["source"],),
                    detail=f"NVML reports the NVSwitch fabric as {states}", manager=multi.fabric_manager or "not known",
                    fabric_manager=multi.fabric_manager)]


def nvlinks_down(report: Report) -> list[Finding]:
    multi = _multi(report)
    if multi is None:
        return []
    found = []
    several = len(multi.gpus) > 1
    for gpu in multi.gpus:
        expected = gpu.nvlinks_expected
        if not expected or not gpu.nvlinks or gpu.nvlinks_active >= expected:
            continue
        # a bridge card without its bridge, or one GPU alone of a baseboard (a VM), has no active link: no fault
        if gpu.nvlinks_active == 0 and (gpu.nvlink_form == "bridge" or not several):
            continue
        down = [str(link.link) for link in gpu.nvlinks if not link.active]
        found.append(finding("CD171", subject=f"GPU {gpu.index}", gpu=f"{gpu.index} ({gpu.name})",
                             active=gpu.nvlinks_active, expected=expected,
                             down="link " + ", ".join(down) if down else f"{expected - gpu.nvlinks_active} missing",
                             share=f"{round(100 * gpu.nvlinks_active / expected)} %",
                             refs=(_nvlink_source(gpu.name),)))
    return found


def _nvlink_source(name: str) -> str:
    import re

    row = next((r for r in _data().get("nvlink", []) if re.search(r["name"], name)), None)
    return str(row["source"]) if row else "compat/multi_gpu.toml"


def pcie_busy(report: Report) -> list[Finding]:
    multi = _multi(report)
    if multi is None:
        return []
    idle = _data()["pcie_idle"]
    found = []
    for gpu in multi.gpus:
        if gpu.utilization_percent is None or gpu.utilization_percent < idle["busy_percent"]:
            continue
        if None in (gpu.pcie_generation, gpu.pcie_generation_max, gpu.pcie_width, gpu.pcie_width_max):
            continue
        if gpu.pcie_generation < gpu.pcie_generation_max or gpu.pcie_width < gpu.pcie_width_max:  # type: ignore[operator]
            found.append(finding("CD172", subject=f"GPU {gpu.index}", gpu=f"{gpu.index} ({gpu.name})",
                                 utilization=gpu.utilization_percent, generation=gpu.pcie_generation,
                                 width=gpu.pcie_width, generation_max=gpu.pcie_generation_max,
                                 width_max=gpu.pcie_width_max, refs=(idle["source"],)))
    return found


def peer_access(report: Report) -> list[Finding]:
    multi = _multi(report)
    if multi is None:
        return []
    found = []
    for p in multi.pairs:
        if p.p2p_read not in (None, "ok"):
            status = f"NVML answers '{p.p2p_read}'"
        elif p.can_access_peer is False:
            status = "cuDeviceCanAccessPeer answers no"
        else:
            continue
        found.append(finding("CD173", subject=f"GPU {p.gpus[0]}-{p.gpus[1]}", a=p.gpus[0], b=p.gpus[1],
                             status=status, path=p.path))
    return found


def acs(report: Report) -> list[Finding]:
    multi = _multi(report)
    if multi is None or len(multi.gpus) < 2 or all(p.path.startswith("NV") for p in multi.pairs):
        return []
    redirecting = [g for g in multi.gpus if g.acs_redirect]
    if not redirecting:
        return []
    detail = "; ".join(f"ACS redirects peer requests on {', '.join(g.acs_redirect)} above GPU {g.index}"
                       for g in redirecting)
    if multi.iommu == "on":
        detail += " (the IOMMU is on)"
    return [finding("CD174", subject="PCIe", detail=detail, refs=(_data()["acs"]["source"],))]


def interfaces_matched(row: dict[str, Any], value: str, interfaces: tuple[str, ...]) -> list[str]:
    """The interfaces NCCL keeps of INTERFACES under ROW's VALUE, read as NCCL reads it (knowledge/environment.py
    interface_list: a first ^ leaves out, = after it names exactly, each for the whole list; a :port names a port)."""
    read = interface_list(row, value)
    return [name for name in interfaces if read.keeps(name)]


def nccl_settings(report: Report) -> list[Finding]:
    """NCCL's settings of its own grammars (interfaces, flags, levels, debug), each said as its [[feature]] weighs it:
    read only at a program's first collective, so never an error, and only said (info) where a program here sees one
    GPU and no launcher started several processes (rules/process_env.py's when_used)."""
    from cudnn_doctor.rules.process_env import when_used

    return [when_used(made, made.subject or "", report) for made in _nccl_settings(report)]


def _nccl_settings(report: Report) -> list[Finding]:
    multi = _multi(report)
    if multi is None:
        return []
    found = []
    rows = {row["variable"]: row for row in _data().get("nccl_setting", [])}
    for variable, value in multi.nccl_settings.items():
        row = rows.get(variable)
        if row is None or row["grammar"] not in NCCL_OWN_GRAMMARS:
            continue  # the other grammars are judged with every setting's (rules/process_env.py)
        refs = (row["source"],)
        if row["grammar"] == "interfaces":
            pool = multi.interfaces if variable == "NCCL_SOCKET_IFNAME" else multi.infiniband
            unread = interface_list(row, value).unread  # too short to be the user's list: NCCL picks by itself
            if unread is not None:
                found.append(finding("CD176", subject=variable, refs=refs, variable=variable, value=value,
                                     why=f"{unread} ({row['effect']})"))
                continue
            if not pool or interfaces_matched(row, value, pool):
                continue
            if variable == "NCCL_SOCKET_IFNAME":
                found.append(finding("CD175", subject=variable, refs=refs, value=value, variable=variable,
                                     interfaces=", ".join(pool[:12])))
            else:
                found.append(finding("CD176", subject=variable, refs=refs, variable=variable, value=value,
                                     why=f"it names none of this node's adapters ({', '.join(pool[:12])}): NCCL talks "
                                         "over IP sockets instead"))
            continue
        values = row.get("values", [])
        if row["grammar"] == "bitset":  # NCCL 2.30's ncclParamBitsetOf: one unknown entry refuses the whole value
            problem = bitset_problem(row, value)
            if problem:
                found.append(finding("CD176", subject=variable, refs=refs, variable=variable, value=value,
                                     why=f"{problem} ({row['effect']})"))
            continue
        if row["grammar"] == "names":  # NCCL's parseList: a name it does not know fails the communicator
            problem = names_problem(row, value)
            if problem:
                found.append(finding("CD176", subject=variable, refs=refs, variable=variable, value=value,
                                     why=f"{problem} ({row['effect']})"))
            continue
        if row.get("reader"):  # as NCCL's own reader reads it ([[value_reader]]): 0x1 is 1, '0' is the level LOC
            read, problem = enum_reading(row, value)
            if read is None:
                found.append(finding("CD176", subject=variable, refs=refs, variable=variable, value=value,
                                     why=f"{problem or 'not one of ' + ', '.join(values)}; NCCL ignores it "
                                         f"({row['effect']})"))
            elif problem:  # taken, but not as written ('1abc' is 1, 'yes' is 0)
                found.append(finding("CD176", subject=variable, refs=refs, variable=variable, value=value,
                                     why=f"{problem}: NCCL takes it as {read} ({row['effect']})"))
            if read is not None and read in _slow_values(row):
                found.append(finding("CD181", subject=variable, refs=refs, variable=variable, value=value,
                                     effect=row["effect"]))
            continue
        accepted = value in values or (row["grammar"] == "debug" and value.upper() in values)
        if not accepted:
            found.append(finding("CD176", subject=variable, refs=refs, variable=variable, value=value,
                                 why=f"not one of {', '.join(values)}; NCCL ignores it ({row['effect']})"))
        elif value in _slow_values(row):
            found.append(finding("CD181", subject=variable, refs=refs, variable=variable, value=value,
                                 effect=row["effect"]))
    return found


def _slow_values(row: dict[str, Any]) -> tuple[str, ...]:
    """ROW's slow_when, one value or several."""
    slow = row.get("slow_when")
    return () if slow is None else (slow,) if isinstance(slow, str) else tuple(slow)


def shared_memory(report: Report) -> list[Finding]:
    multi = _multi(report)
    # NCCL's shared-memory transport joins GPUs of one node: with one GPU (or one visible) it makes no segment
    visible = report.process.visible if report.process is not None and report.process.visible is not None else None
    if multi is None or multi.shm_mib is None or len(multi.gpus) < 2 or (visible is not None and len(visible) < 2):
        return []
    shm = _data()["shm"]
    if multi.shm_refused:
        return [finding("CD177", subject="/dev/shm", refs=(shm["source"],), path="/dev/shm", size_mib=multi.shm_mib,
                        free_mib=multi.shm_free_mib, segment_mib=round(shm["segment_bytes"] / (1 << 20), 1),
                        refused=multi.shm_refused)]
    if multi.shm_mib < shm["warn_below_mib"]:
        return [finding("CD178", subject="/dev/shm", refs=(shm["source"],), path="/dev/shm", size_mib=multi.shm_mib)]
    return []


def nccl_library(report: Report) -> list[Finding]:
    multi = _multi(report)
    if multi is None:
        return []
    from cudnn_doctor.versions import version_tuple

    found = []
    for lib in multi.nccl_libraries:
        if not lib.library or not lib.built_with:
            continue
        seen = _seen_nccl(report, lib.user)
        if seen is not None and seen not in (lib.library, lib.library_real):
            continue  # its own loading child saw it get another copy (its code maps its wheel's): that one is judged
        floor = lib.built_with.startswith(">=")
        wanted = version_tuple(lib.built_with.lstrip(">=")) or ()
        if lib.version is None:
            effect = f"it does not answer ncclGetVersion ({lib.error or 'unknown'}), so the framework cannot use it"
        elif lib.version == lib.built_with or (floor and (version_tuple(lib.version) or ()) >= wanted):
            continue
        elif (version_tuple(lib.version) or ()) < wanted:
            effect = ("an older NCCL lacks functions the framework calls (its import or first collective fails with "
                      "'undefined symbol: nccl...') or differs in what it does")
        else:
            effect = "NCCL keeps its API within 2.x, so a newer one usually works, but it is not the one tested"
        found.append(finding("CD180", subject=lib.library, framework=lib.user, library=lib.library,
                             version=lib.version or "unreadable", via=lib.via or "the loader",
                             built_with=f"{lib.built_with[2:]} or newer" if floor else lib.built_with,
                             effect=effect, entry=lib.entry, after_preload=lib.after_preload))
    return found


def _seen_nccl(report: Report, user: str) -> str | None:
    """The libnccl.so.2 USER's loading child saw it get (issue 45: its own preloading code run first), or None."""
    view = report.process
    for seen_load in view.loads if view is not None else ():
        if seen_load.user == user:
            for library in seen_load.libraries:
                if library.soname == "libnccl.so.2" and library.path:
                    return library.real or library.path
    return None


def allreduce(report: Report) -> list[Finding]:
    multi = _multi(report)
    result = multi.allreduce if multi is not None else None
    if multi is None or result is None:
        return []
    if not result.ok:
        causes = [f for rule in (fabric, nvlinks_down, peer_access, acs, nccl_settings, shared_memory, nccl_library)
                  for f in rule(report) if f.code in CAUSE_CODES]
        cause = (" Cause check sees: " + "; ".join(f"{f.code} {f.title} ({f.subject})" for f in causes) + ".") \
            if causes else ""
        outcome = f"hung and was stopped ({result.error})" if result.timed_out else "failed"
        words = " | ".join(result.last_words[-4:]) or (result.error or "none")
        if "No module named" in words and not result.timed_out:
            return []  # the framework has no collectives here (a build without torch.distributed): nothing of NCCL
        made = finding("CD179", subject="NCCL all-reduce", world=result.world_size, outcome=outcome, words=words,
                       cause=cause, causes=[f.code for f in causes])
        if (result.world_size or 0) < 2 and not causes:
            # over one GPU the all-reduce moves nothing between GPUs: a program on one GPU never calls NCCL, so its
            # failure says only that multi-GPU work would fail too (the built-in suite's one-GPU machines: six such
            # errors, under address-space limits and beside other all-reduces, where the frameworks' work ran)
            made = dataclasses.replace(made, severity="warning")
        return [made]
    ratio = _data()["p2p"]["busbw_low_ratio"]
    if result.busbw_gbs is not None and result.predicted_busbw_gbs and \
            result.busbw_gbs < ratio * result.predicted_busbw_gbs:
        return [finding("CD182", subject="NCCL all-reduce", world=result.world_size, busbw=result.busbw_gbs,
                        predicted=result.predicted_busbw_gbs,
                        ratio=f"{round(100 * result.busbw_gbs / result.predicted_busbw_gbs)} %")]
    return []


RULES = (fabric, nvlinks_down, pcie_busy, peer_access, acs, nccl_settings, shared_memory, nccl_library, allreduce)


def p2p_copies(copies: list[dict[str, Any]], multi: MultiGpu | None) -> tuple[list[dict[str, Any]], list[Finding]]:
    """`bench --p2p`'s copies, each with its link and that link's peak (one direction), and CD611 for a pair far
    below it. The device-to-device copy of one GPU is a reference: it has no link to be judged against."""
    low = _data()["p2p"]["low_ratio"]
    pairs = {tuple(sorted(p.gpus)): p for p in (multi.pairs if multi else [])}
    rows, found = [], []
    for copy in copies:
        src, dst, gbs = copy.get("src"), copy.get("dst"), copy.get("gbs")
        row = dict(copy)
        pair = pairs.get(tuple(sorted((int(src), int(dst))))) if isinstance(src, int) and isinstance(dst, int) \
            and src != dst else None
        row["link"] = pair.path if pair else ("device-to-device (reference)" if src == dst else None)
        row["peak_gbs"] = pair.peak_gbs if pair else None
        row["ratio"] = round(gbs / pair.peak_gbs, 2) if pair and pair.peak_gbs and isinstance(gbs, (int, float)) \
            else None
        rows.append(row)
        if row["ratio"] is not None and row["ratio"] < low:
            found.append(finding("CD611", subject=f"GPU {src} -> GPU {dst}", src=src, dst=dst, gbs=gbs,
                                 ratio=f"{round(100 * row['ratio'])} %", peak=row["peak_gbs"], link=row["link"],
                                 refs=(_data()["p2p"]["source"],)))
    return rows, found
