"""The text output of `cudnn-doctor bench`: a header per GPU, one table row per workload,
the findings, a summary line. Formats only what commands/bench.py and rules/bench.py decided."""

from __future__ import annotations

from typing import Any

from cudnn_doctor.bench.records import BenchReport, DeviceRun, WorkloadResult
from cudnn_doctor.render.safe import escape as safe

MARKS = {"error": "[red]✗[/red]", "warning": "[yellow]![/yellow]", "info": "[blue]i[/blue]"}


def _bytes(value: int | None) -> str:
    if value is None:
        return "-"
    if value == 0:
        return "0"
    if value < 1 << 20:
        return f"{value / 1024:.0f} KiB"
    return f"{value / (1 << 20):.1f} MiB"


def _number(value: float | None, digits: int = 2) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _result_row(result: WorkloadResult) -> list[str]:
    first = [safe(result.workload), safe(result.dtype), safe(result.layout)]
    if result.skipped:
        return [*first, "-", "-", "-", "-", "-", "-", "-", "-", "-", "skipped (CD607)"]
    error = result.error
    if error:
        status = error.get("name") or error.get("message") or error.get("kind")
        return [*first, "-", "-", "-", "-", "-", "-", "-", "-", "-", f"[red]failed[/red] {safe(status)}"]
    share = result.peak_share
    checked = "full" if result.checked == "full" else "slice"
    check = f"[green]ok[/green] ({checked})" if result.ok else f"[red]FAIL[/red] ({checked})"
    max_error = result.max_error
    return [
        *first,
        safe("-" if result.algo is None else result.algo) + (safe(f" [{result.math_type}]") if result.math_type else ""),
        _bytes(result.workspace_bytes),
        _number(result.gpu_ms, 3),
        _number(result.tflops, 1),
        "unknown" if share is None else f"{share * 100:.0f}%",
        _healthy(result.reference),
        _number(result.cpu_ms, 1),
        "-" if result.speedup is None else f"{result.speedup:.0f}x",
        "-" if max_error is None else ("inf" if max_error == float("inf") else f"{max_error:.1e}"),
        check,
    ]


def _healthy(reference: dict[str, Any] | None) -> str:
    """This result's speed as a share of a healthy GPU of the same model: "0.93x", or "-"."""
    ratio = (reference or {}).get("ratio")
    return "-" if not isinstance(ratio, (int, float)) else f"{ratio:.2f}x"


def render_bench(bench: BenchReport, console: Any, verbose: bool = False) -> None:
    if not console.is_terminal:
        console.width = max(console.width, 180)  # piped: keep each table row on one line
    libraries = bench.libraries
    if libraries.cudnn:
        console.print(f"cuDNN {safe(libraries.cudnn_version or '?')}: {safe(libraries.cudnn)} "
                      f"({safe(libraries.cudnn_why or '')})")
    if libraries.cudart:
        console.print(f"CUDA runtime {safe(libraries.cudart_version or '?')}: {safe(libraries.cudart)} "
                      f"({safe(libraries.cudart_why or '')}); driver supports CUDA "
                      f"{safe(libraries.driver_cuda_version or '?')}")
    for device in bench.devices:
        _render_device(console, device, [r for r in bench.results if r.device == device.index], verbose)
    for item in bench.findings:
        console.print(f"{MARKS.get(item.severity, '?')} {safe(item.code)} {safe(item.title)}")
        from cudnn_doctor.render.text import print_with_commands, print_wrapped

        print_wrapped(console, safe(item.detail), 4)
        print_with_commands(console, "[bold]Fix:[/] ", item.fix, 4)
    tally = bench.tally
    if bench.summary.exit_code == 0:
        console.print(f"[green]bench passed[/green]: {tally.checked} workload(s) checked against the CPU reference"
                      + (f", {tally.skipped} not available in this cuDNN" if tally.skipped else ""))
    else:
        console.print(f"[red]bench failed[/red]: {bench.summary.counts.get('error', 0)} error(s)"
                      + (f", {tally.failed} workload(s) not passing" if bench.results else ""))


def _render_device(console: Any, device: DeviceRun, rows: list[WorkloadResult], verbose: bool) -> None:
    """The GPU's header line, its table of results and the notes under it."""
    from rich.table import Table

    startup = device.startup_ms or {}
    console.print(f"GPU {device.index}: {safe(device.name)} (compute capability {safe(device.compute_capability)}, "
                  f"{device.multiprocessors} SMs, {device.memory_total_mib} MiB); start-up "
                  f"{sum(startup.values()):.0f} ms (imports {startup.get('imports', 0):.0f} ms, libraries "
                  f"{startup.get('load', 0):.0f} ms, context and handle {startup.get('init', 0):.0f} ms)")
    if not rows:
        return
    table = Table(show_edge=False, pad_edge=False, box=None, header_style="bold")
    for column in ("workload", "dtype", "layout", "algo", "workspace", "GPU ms", "TFLOP/s", "% peak",
                   "vs healthy", "CPU ms", "speed-up", "max error", "check"):
        table.add_column(column, justify="right" if column in ("GPU ms", "TFLOP/s", "% peak", "vs healthy",
                                                               "CPU ms", "speed-up", "max error") else "left")
    for result in rows:
        table.add_row(*_result_row(result))
    console.print(table)
    shapes = sorted({safe(f"{r.workload.split('-')[0]}: {r.shape_name} {r.shape}") for r in rows})
    console.print("  shapes: " + "; ".join(shapes))
    threads = next((r.cpu_threads for r in rows if r.cpu_threads), None)
    graph = any(r.timing == "cuda-graph" for r in rows)
    console.print("  GPU ms: median per call after warm-up, CUDA events around "
                  + ("a CUDA graph of back-to-back calls (the GPU's time)" if graph else
                     "back-to-back calls on a stream"))
    compared = next((r.reference for r in rows if r.reference and r.reference.get("ratio")), None)
    shared = next((r.reference["not_compared"] for r in rows if r.reference and r.reference.get("not_compared")),
                  None)
    console.print("  vs healthy: " + (f"not compared: {safe(shared)}" if shared else
                                      f"its speed against a healthy {safe(device.name)} "
                                      f"({safe(compared['measured'])}; compat/gpu_reference.toml)" if compared else
                                      f"unknown: no reference figures for {safe(device.name)} with these "
                                      "settings in compat/gpu_reference.toml"))
    clocks = device.clocks or {}
    if clocks.get("sampled"):
        reasons = safe(", ".join(clocks.get("throttle_reasons") or []) or "none")
        console.print(f"  clocks: SM {clocks.get('sm_mhz_median'):.0f} MHz median while busy (min "
                      f"{clocks.get('sm_mhz_min')}, max supported {clocks.get('sm_mhz_max_supported')}), "
                      f"up to {clocks.get('temperature_max_celsius')} °C; slowdown reasons seen: {reasons}")
    elif clocks.get("unavailable"):
        console.print(f"  clocks: not watched ({safe(clocks['unavailable'])})")
    if any(r.cpu_ms for r in rows):
        computed = next((r.cpu_baseline for r in rows if r.cpu_baseline), "NumPy")
        console.print(f"  CPU ms: float32 NHWC reference on {threads} threads, {safe(computed)}")
    if verbose:
        for r in rows:
            if r.stream_ms:
                console.print(f"  {safe(r.workload)}: {r.stream_ms:.3f} ms per call launched from Python on a "
                              f"stream (host cost included), {r.graph_ms or 0:.3f} ms in a CUDA graph")
    if verbose and device.peaks_source:
        console.print(f"  peak: {safe(device.peaks_source)}")
