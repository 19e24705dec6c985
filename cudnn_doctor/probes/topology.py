"""How the GPUs of this node connect (issue 42): NVML's answer (the NVML child's `links` of each GPU and its `pairs`)
as records, with what /sys says of each GPU's PCIe path (IOMMU group, ACS on the bridges above it). No judgement:
rules/multi_gpu.py decides what a link down or a redirecting bridge means."""

from __future__ import annotations

import functools
import os
import re
from typing import Any

from cudnn_doctor.knowledge.data import load
from cudnn_doctor.model import Gpu, GpuLinks, GpuPair, NvLink
from cudnn_doctor.probes.context import SearchContext

# nvmlGpuTopologyLevel_t -> the words of `nvidia-smi topo -m`
ANCESTOR_PATH = {0: "X", 10: "PIX", 20: "PXB", 30: "PHB", 40: "NODE", 50: "SYS"}
# nvmlGpuP2PStatus_t
P2P_STATUS = {0: "ok", 1: "chipset not supported", 2: "GPU not supported", 3: "IOH topology not supported",
              4: "disabled by regkey", 5: "not supported", 6: "unknown"}
# nvmlGpuFabricState_t
FABRIC_STATE = {1: "not_started", 2: "in_progress", 3: "completed"}


@functools.cache
def bus_id_pattern() -> re.Pattern[str]:
    return re.compile(r"^[0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]$")


ACS_CAPABILITY = 0x000D  # PCIe extended capability ID of Access Control Services
ACS_BITS = ("SV", "TB", "RR", "CR", "UF", "EC", "DT")  # ACS Control register, bit 0 upwards


def read_links(nvml_values: dict[str, Any], gpus: list[Gpu], ctx: SearchContext) -> tuple[list[GpuLinks], list[GpuPair]]:
    """Each GPU's links and every pair's path, from the NVML child's answer (empty where it gave none)."""
    raw_gpus = [g for g in nvml_values.get("gpus") or [] if isinstance(g, dict)]
    by_index = {gpu.index: gpu for gpu in gpus}
    links = [_gpu_links(raw, by_index.get(raw.get("index", -1)), ctx) for raw in raw_gpus
             if isinstance(raw.get("index"), int)]
    pairs = [_pair(raw, links) for raw in nvml_values.get("pairs") or [] if isinstance(raw, dict)
             and isinstance(raw.get("gpus"), list) and len(raw["gpus"]) == 2]
    return links, [pair for pair in pairs if pair is not None]


def nvlink_model(name: str) -> dict[str, Any] | None:
    """The compat/multi_gpu.toml [[nvlink]] row of a GPU named NAME (NVML's name), or None."""
    return next((row for row in load("multi_gpu").get("nvlink", []) if re.search(row["name"], name)), None)


def pcie_peak_gbs(generation: int | None, width: int | None) -> float | None:
    """One direction of a PCIe link of GENERATION and WIDTH, in GB/s."""
    row = next((r for r in load("multi_gpu").get("pcie", []) if r["generation"] == generation), None)
    return round(row["gbs_per_lane"] * width, 1) if row and width else None


def _gpu_links(raw: dict[str, Any], gpu: Gpu | None, ctx: SearchContext) -> GpuLinks:
    values: dict[str, Any] = raw["links"] if isinstance(raw.get("links"), dict) else {}
    health = gpu.health if gpu is not None else None
    name = str(raw.get("name") or "unknown")
    nvlinks = tuple(NvLink(int(entry["link"]), bool(entry.get("active")),
                           entry.get("version") if isinstance(entry.get("version"), int) else None,
                           entry.get("remote_pci_bus_id") if isinstance(entry.get("remote_pci_bus_id"), str) else None)
                    for entry in values.get("nvlinks") or [] if isinstance(entry, dict)
                    and isinstance(entry.get("link"), int))
    model = nvlink_model(name)
    fabric: dict[str, Any] = values["fabric"] if isinstance(values.get("fabric"), dict) else {}
    bus = raw.get("pci_bus_id") if isinstance(raw.get("pci_bus_id"), str) else None
    iommu_group, redirect = _pci_path(bus, ctx)
    return GpuLinks(
        index=int(raw["index"]), name=name, pci_bus_id=bus,
        numa_node=_int(values.get("numa_node")), cpu_affinity=values.get("cpu_affinity")
        if isinstance(values.get("cpu_affinity"), str) else None,
        utilization_percent=_int(values.get("utilization_percent")),
        pcie_generation=health.pcie_link_generation if health else None,
        pcie_generation_max=health.pcie_link_generation_max if health else None,
        pcie_width=health.pcie_link_width if health else None,
        pcie_width_max=health.pcie_link_width_max if health else None,
        nvlinks=nvlinks, nvlinks_active=sum(link.active for link in nvlinks),
        nvlinks_expected=model["links"] if model else None, nvlink_form=model["form"] if model else None,
        nvlink_gbs_per_link=model["gbs_per_link"] if model else None,
        fabric_state=FABRIC_STATE.get(fabric.get("state")) if fabric else None,  # type: ignore[arg-type]
        fabric_status=_int(fabric.get("status")) if fabric else None,
        iommu_group=iommu_group, acs_redirect=redirect,
        not_supported=tuple(str(key) for key in values.get("not_supported") or ()),
        errors={str(k): str(v) for k, v in (values.get("errors") or {}).items()},
    )


def _pair(raw: dict[str, Any], links: list[GpuLinks]) -> GpuPair | None:
    a, b = raw["gpus"]
    first = next((g for g in links if g.index == a), None)
    second = next((g for g in links if g.index == b), None)
    if first is None or second is None:
        return None
    nvlinks = _nvlinks_between(first, second, links)
    path = f"NV{nvlinks}" if nvlinks else ANCESTOR_PATH.get(raw.get("common_ancestor"), "unknown")  # type: ignore[arg-type]
    peak: float | None
    if nvlinks and first.nvlink_gbs_per_link:
        peak = round(nvlinks * first.nvlink_gbs_per_link, 1)
    else:
        speeds = [pcie_peak_gbs(g.pcie_generation_max, g.pcie_width_max) for g in (first, second)]
        peak = min((s for s in speeds if s), default=None)
    return GpuPair(gpus=(a, b), path=path, nvlinks=nvlinks, p2p_read=P2P_STATUS.get(raw.get("p2p_read"))  # type: ignore[arg-type]
                   if isinstance(raw.get("p2p_read"), int) else None,
                   p2p_nvlink=P2P_STATUS.get(raw.get("p2p_nvlink")) if isinstance(raw.get("p2p_nvlink"), int) else None,  # type: ignore[arg-type]
                   peak_gbs=peak)


def _nvlinks_between(first: GpuLinks, second: GpuLinks, links: list[GpuLinks]) -> int:
    """Active links from FIRST that end at SECOND; where they end at no GPU of this node (NVSwitches), every
    GPU reaches every other over them: the fewer active of the two, as nvidia-smi topo -m counts them."""
    own = {_short_bus(g.pci_bus_id) for g in links if g.pci_bus_id}
    direct = sum(1 for link in first.nvlinks if link.active and _short_bus(link.remote_pci_bus_id) ==
                 _short_bus(second.pci_bus_id) and second.pci_bus_id)
    if direct:
        return direct
    switched = [link for link in first.nvlinks if link.active and link.remote_pci_bus_id
                and _short_bus(link.remote_pci_bus_id) not in own]
    other = [link for link in second.nvlinks if link.active and link.remote_pci_bus_id
             and _short_bus(link.remote_pci_bus_id) not in own]
    return min(len(switched), len(other)) if switched and other else 0


def _short_bus(bus: str | None) -> str:
    """A PCI bus id as /sys names it: 0000:18:00.0 (NVML writes 00000000:18:00.0)."""
    if not bus:
        return ""
    domain, _, rest = bus.lower().partition(":")
    return f"{domain[-4:]}:{rest}"


def _pci_path(bus: str | None, ctx: SearchContext) -> tuple[str | None, tuple[str, ...]]:
    """(the GPU's IOMMU group, the bridges above it whose ACS sends peer requests or completions up to the root
    complex). Extended configuration space (ACS) is readable by root only: where it cannot be read, nothing is said."""
    if not bus or not bus_id_pattern().match(bus):
        return None, ()
    device = ctx.system(f"/sys/bus/pci/devices/{_short_bus(bus)}")
    try:
        group = os.path.basename(os.readlink(os.path.join(device, "iommu_group")))
    except OSError:
        group = None
    try:
        real = os.path.realpath(device)
    except OSError:
        return group, ()
    redirect = []
    parts = real.split(os.sep)
    wanted = set(load("multi_gpu").get("acs", {}).get("redirect_bits", ["RR", "CR"]))
    for depth in range(len(parts) - 1, 0, -1):
        name = parts[depth]
        if not bus_id_pattern().match(name) or depth == len(parts) - 1:
            continue
        bits = _acs_control(os.sep.join(parts[:depth + 1]))
        if bits & wanted:
            redirect.append(f"{name} ({'+'.join(sorted(bits & wanted))})")
    return group, tuple(redirect)


def _acs_control(folder: str) -> set[str]:
    """The ACS Control bits set on the PCI function at FOLDER, read from its extended configuration space."""
    from cudnn_doctor.user_files import UnreadableFile, read_user_head

    try:  # without blocking: under a system prefix it may be a FIFO
        space = read_user_head(os.path.join(folder, "config"), 4096)
    except UnreadableFile:
        return set()
    offset, seen = 0x100, 0
    while 0x100 <= offset < len(space) - 8 and seen < 64:
        header = int.from_bytes(space[offset:offset + 4], "little")
        if header in (0, 0xFFFFFFFF):
            return set()
        if header & 0xFFFF == ACS_CAPABILITY:
            control = int.from_bytes(space[offset + 6:offset + 8], "little")
            return {name for bit, name in enumerate(ACS_BITS) if control >> bit & 1}
        offset, seen = header >> 20, seen + 1
    return set()


def iommu_state(ctx: SearchContext) -> str | None:
    """'on' where the kernel made IOMMU groups (or an IOMMU registered itself), 'off' where /sys shows none."""
    for folder in ("/sys/kernel/iommu_groups", "/sys/class/iommu"):
        try:
            if os.listdir(ctx.system(folder)):
                return "on"
        except OSError:
            continue
    return "off" if os.path.isdir(ctx.system("/sys/kernel")) else None


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None
