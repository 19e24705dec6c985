"""What the bench's answers mean: pure functions from the machine's report, the children's answers
and the workload results to findings (CD3xx, CD6xx), and the tally of the summary line. No I/O:
the reference figures (peaks, healthy GPUs) are looked up by commands/bench.py and arrive here
inside the results."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from cudnn_doctor.bench.records import BenchLibraries, WorkloadResult, WorkloadTally
from cudnn_doctor.codes import finding
from cudnn_doctor.model import Finding, Report
from cudnn_doctor.versions import major

# NVML's slowdown reasons that mean the GPU is unwell or badly cooled or powered (not a power cap)
HARD_SLOWDOWNS = {
    "hw_slowdown": "hardware slowdown", "hw_thermal_slowdown": "hardware thermal slowdown",
    "hw_power_brake_slowdown": "power brake", "sw_thermal_slowdown": "software thermal slowdown",
}
DEFAULT_CUDA_MAJOR = 12  # the fix's download link when no version says better


def no_gpu(report: Report) -> list[Finding]:
    """CD601 when the machine has no NVIDIA driver and no GPU: nothing to run cuDNN on."""
    if report.driver.source != "none" or report.gpus:
        return []
    from cudnn_doctor.rules.driver import no_nvidia_gpu

    if no_nvidia_gpu(report):
        return [finding("CD601", why="No NVIDIA GPU is in this machine (the PCI bus lists no NVIDIA display "
                                     "controller), so there is nothing to run cuDNN on.")]
    why = "No NVIDIA driver was found"
    if report.driver.error:
        why += f" ({report.driver.error})"
    return [finding("CD601", why=why + ", so there is no GPU to run cuDNN on.")]


def no_cudnn(report: Report) -> Finding:
    """CD301: no loadable cuDNN, with the fix for the CUDA major of the machine's toolkit or driver."""
    cuda_major = next((major(toolkit.version) for toolkit in report.toolkits if major(toolkit.version)), None)
    return finding("CD301", cuda_major=cuda_major or major(report.driver.cuda_driver_version) or DEFAULT_CUDA_MAJOR)


def no_cudart(why: str, cudnn_cuda_version: str | None) -> Finding:
    """CD604: no CUDA runtime of cuDNN's CUDA major to run it with."""
    return finding("CD604", why=why.capitalize() + ".", cuda_major=major(cudnn_cuda_version) or DEFAULT_CUDA_MAJOR)


def crashed(device: int, how: str) -> Finding:
    """CD606: the child of DEVICE crashed or hung."""
    return finding("CD606", subject=f"GPU {device}", device=device, how=how)


def slowdowns(device: int, clocks: dict[str, Any] | None) -> list[Finding]:
    """CD608 when NVML saw DEVICE slow down for a reason that is not a power cap."""
    slowed = [reason for reason in (clocks or {}).get("throttle_reasons") or () if reason in HARD_SLOWDOWNS]
    if not clocks or not slowed:
        return []
    return [finding("CD608", subject=f"GPU {device}", device=device,
                    reasons=", ".join(HARD_SLOWDOWNS[r] for r in slowed),
                    mhz=clocks.get("sm_mhz_min"), max_mhz=clocks.get("sm_mhz_max_supported"))]


SHARED_UTILIZATION_PERCENT = 10  # busy before the bench began its own work: someone else's kernels


def shared_gpu(device: int, gpu_name: str | None, clocks: dict[str, Any] | None) -> list[Finding]:
    """CD610 when NVML saw other processes on DEVICE, before or while the bench ran, or the GPU busy before
    the bench began (another container's processes are not listed)."""
    clocks = clocks or {}
    others = clocks.get("other_processes") or []
    busy = clocks.get("utilization_before_percent")
    if not others and not (isinstance(busy, int) and busy >= SHARED_UTILIZATION_PERCENT):
        return []
    parts = []
    if others:
        listed = "; ".join(
            f"pid {p.get('pid')}{' (' + p['name'] + ')' if p.get('name') else ''}"
            f"{', ' + str(p['used_memory_mib']) + ' MiB' if p.get('used_memory_mib') is not None else ''}"
            f", {'before and during the run' if p.get('before') and p.get('during') else 'before the run' if p.get('before') else 'during the run'}"
            for p in others[:5])
        parts.append(f"{len(others)} other process{'es' if len(others) != 1 else ''} had work on it ({listed}"
                     f"{'; ...' if len(others) > 5 else ''})")
    if isinstance(busy, int) and busy >= SHARED_UTILIZATION_PERCENT:
        parts.append(f"it was {busy}% busy before the bench started its own work")
    return [finding("CD610", subject=f"GPU {device}", device=device, gpu=gpu_name or "GPU",
                    others=" and ".join(parts))]


def not_compared(result: WorkloadResult, why: str) -> WorkloadResult:
    """RESULT without a comparison with a healthy GPU (it ran on a shared one): marked, never judged."""
    return replace(result, reference={"not_compared": why})


def judge_result(result: WorkloadResult, libraries: BenchLibraries, gpu_name: str | None,
                 memory_free_mib: int | None, slow_ratio: float) -> tuple[WorkloadResult, list[Finding]]:
    """RESULT with `ok` (or `skipped`) set, and its findings: CD607 for a workload this cuDNN lacks,
    the failure's finding, CD609 when well below a healthy GPU of its model, CD603 for a wrong answer."""
    device = result.device
    error = result.error
    if error and error.get("kind") == "workload-unavailable":
        skipped = replace(result, error=None, ok=None, skipped=error.get("message"))
        return skipped, [finding("CD607", subject=f"GPU {device}", workload=result.workload,
                                 why=error.get("message"))]
    if error:
        return replace(result, ok=False), [failed(error, libraries, result.workload, device, memory_free_mib)]
    findings: list[Finding] = []
    max_error = result.max_error
    ok = max_error is not None and result.tolerance is not None and max_error <= result.tolerance
    ratio = (result.reference or {}).get("ratio")
    if isinstance(ratio, float) and ratio < slow_ratio:
        reference = result.reference or {}
        findings.append(finding(
            "CD609", subject=f"GPU {device}", gpu=gpu_name, device=device,
            workload=f"{result.workload} ({result.dtype}, {result.layout}, {result.size})",
            ratio=f"{ratio:.2f}", ms=f"{result.gpu_ms:.3f}", reference_ms=f"{reference['gpu_ms']:.3f}",
            measured=reference.get("measured")))
    if not ok:
        findings.append(finding(
            "CD603", subject=f"GPU {device}",
            workload=f"{result.workload} ({result.dtype}, {result.layout}, {result.shape}, "
                     f"algorithm {result.algo}) on GPU {device}",
            error=_format_error(max_error), tolerance=f"{result.tolerance:.0e}"))
    return replace(result, ok=ok), findings


def failed(error: dict[str, Any], libraries: BenchLibraries, workload: str | None, device: int | None,
           memory_free_mib: int | None) -> Finding:
    """The finding for a failure the child described (ERROR: kind, call, code, name, ...)."""
    where = f" ({workload})" if workload else ""
    kind = error.get("kind")
    if kind == "load":
        library = error.get("library", "")
        if library == libraries.cudart:
            return finding("CD604", why=f"{library} failed to load: {error.get('message')}",
                           cuda_major=major(libraries.cudnn_cuda) or DEFAULT_CUDA_MAJOR)
        return finding("CD307", library=library, error=error.get("message"))
    if kind == "cuda":
        code, name = error.get("code"), error.get("name")
        call = f"{error.get('call')}{where} returned {name} ({code}): {error.get('text')}"
        if code == 100:
            return finding("CD601", why=f"The CUDA runtime sees no GPU: {call}.")
        if code == 2:
            return finding("CD605", workload=workload or "the benchmark", needed=_needed(error.get("call")),
                           free=_mib(memory_free_mib))
        if code == 35:
            return finding("CD604", why=f"The driver is too old for this CUDA runtime "
                                        f"({libraries.cudart}, CUDA {libraries.cudart_version}): {call}.",
                           cuda_major=major(libraries.driver_cuda_version) or DEFAULT_CUDA_MAJOR)
        return finding("CD604", why=f"{call}.", cuda_major=major(libraries.cudnn_cuda) or DEFAULT_CUDA_MAJOR)
    if kind == "cudnn":
        name = error.get("name", "")
        if "ALLOC_FAILED" in name:
            return finding("CD605", workload=workload or "the benchmark", needed="more than it could get",
                           free=_mib(memory_free_mib))
        return finding("CD602", call=f"{error.get('call')}{where}", status=f"{name} ({error.get('code')})",
                       meaning=error.get("meaning"), fix=error.get("fix"))
    return finding("CD606", device=device, how=f"failed{where}: {error.get('message')}")


def tally(results: tuple[WorkloadResult, ...] | list[WorkloadResult]) -> WorkloadTally:
    """Checked (ok), failed (a wrong answer or an error) and skipped workloads."""
    return WorkloadTally(checked=sum(1 for r in results if r.ok),
                         failed=sum(1 for r in results if r.ok is False or r.error),
                         skipped=sum(1 for r in results if r.skipped))


def _needed(call: str | None) -> str:
    # "cudaMalloc(123456 bytes)"
    if call and "(" in call and "bytes" in call:
        try:
            return _mib(int(call.split("(")[1].split()[0]) / (1 << 20))
        except (ValueError, IndexError):
            pass
    return "more than was free"


def _mib(value: float | None) -> str:
    return "unknown" if value is None else f"{value:,.0f} MiB"


def _format_error(value: float | None) -> str:
    if value is None:
        return "unknown"
    return "NaN/inf or missing values" if value == float("inf") else f"{value:.2e} of the output's scale"
