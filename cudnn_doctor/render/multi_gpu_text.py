"""The text lines of the report's `multi_gpu` part (issue 42): the GPUs' links, NCCL, /dev/shm, the all-reduce.
Shown under the driver's line where there are several GPUs, NCCL settings or an all-reduce (--deep), or with -v."""

from __future__ import annotations

from cudnn_doctor.model import MultiGpu, Report
from cudnn_doctor.render.safe import escape


def multi_gpu_lines(report: Report, verbose: bool) -> list[str]:
    multi = report.multi_gpu
    if multi is None or not (verbose or len(multi.gpus) > 1 or multi.allreduce or multi.nccl_settings):
        return []
    lines = []
    for pair in multi.pairs:
        peak = f", {pair.peak_gbs:g} GB/s a way" if pair.peak_gbs else ""
        p2p = f", P2P {pair.p2p_read}" if pair.p2p_read else ""
        lines.append(f"GPU {pair.gpus[0]} ↔ GPU {pair.gpus[1]}: {pair.path}{peak}{p2p}")
    if verbose or len(multi.gpus) > 1:
        for gpu in multi.gpus:
            lines.append(_gpu_line(gpu.index, multi))
    lines += _nccl_lines(multi, verbose)
    return [escape(line) for line in lines]


def _gpu_line(index: int, multi: MultiGpu) -> str:
    gpu = next(g for g in multi.gpus if g.index == index)
    parts = []
    if gpu.pcie_generation is not None:
        parts.append(f"PCIe {gpu.pcie_generation} x{gpu.pcie_width} (max {gpu.pcie_generation_max} "
                     f"x{gpu.pcie_width_max})")
    if gpu.nvlinks:
        parts.append(f"NVLinks {gpu.nvlinks_active}/{gpu.nvlinks_expected or len(gpu.nvlinks)} active")
    if gpu.numa_node is not None:
        parts.append(f"NUMA {gpu.numa_node}" + (f", CPUs {gpu.cpu_affinity}" if gpu.cpu_affinity else ""))
    if gpu.fabric_state:
        parts.append(f"fabric {gpu.fabric_state}")
    return f"GPU {gpu.index}: " + ", ".join(parts)


def _nccl_lines(multi: MultiGpu, verbose: bool) -> list[str]:
    lines = []
    for lib in multi.nccl_libraries:
        built = f" (built with {lib.built_with})" if lib.built_with else ""
        lines.append(f"NCCL for {lib.user}: {lib.library or 'none found'} {lib.version or ''}{built}"
                     + (f" through {lib.via}" if lib.via else ""))
    if multi.nccl_settings:
        lines.append("NCCL settings: " + " ".join(f"{k}={v}" for k, v in multi.nccl_settings.items()))
    if multi.shm_mib is not None and (verbose or len(multi.gpus) > 1):
        lines.append(f"/dev/shm: {multi.shm_mib} MiB ({multi.shm_free_mib} MiB free)")
    result = multi.allreduce
    if result is not None:
        if result.ok:
            bus = f"busbw {result.busbw_gbs:g} GB/s" if result.world_size > 1 else "one GPU, no bus traffic"
            lines.append(f"all-reduce over {result.world_size} GPU(s), {result.bytes >> 20} MiB: {result.ms:g} ms, "
                         f"algbw {result.algbw_gbs:g} GB/s, {bus}"
                         + (f" (the links allow {result.predicted_busbw_gbs:g})" if result.predicted_busbw_gbs else "")
                         + (f", NCCL {result.nccl_version}" if result.nccl_version else ""))
        else:
            lines.append(f"all-reduce over {result.world_size} GPU(s): failed")
    return lines
