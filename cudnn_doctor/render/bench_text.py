"""The text output of `cudnn-doctor bench`: a header per GPU, one table row per workload,
the findings, a summary line. Formats only what run.py decided."""

from __future__ import annotations

from typing import Any

from cudnn_doctor.bench.run import BenchReport

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


def _result_row(result: dict[str, Any]) -> list[str]:
    if result.get("skipped"):
        return [result["workload"], result["dtype"], result["layout"], "-", "-", "-", "-", "-", "-", "-", "-", "-",
                "skipped (CD607)"]
    error = result.get("error")
    if error:
        status = error.get("name") or error.get("message") or error.get("kind")
        return [result["workload"], result["dtype"], result["layout"], "-", "-", "-", "-", "-", "-", "-", "-", "-",
                f"[red]failed[/red] {status}"]
    share = result.get("peak_share")
    checked = "full" if result.get("checked") == "full" else "slice"
    check = f"[green]ok[/green] ({checked})" if result.get("ok") else f"[red]FAIL[/red] ({checked})"
    max_error = result.get("max_error")
    return [
        result["workload"], result["dtype"], result["layout"],
        f"{result.get('algo', '-')}" + (f" [{result['math_type']}]" if result.get("math_type") else ""),
        _bytes(result.get("workspace_bytes")),
        _number(result.get("gpu_ms"), 3),
        _number(result.get("tflops"), 1),
        "unknown" if share is None else f"{share * 100:.0f}%",
        _healthy(result.get("reference")),
        _number(result.get("cpu_ms"), 1),
        "-" if result.get("speedup") is None else f"{result['speedup']:.0f}x",
        "-" if max_error is None else ("inf" if max_error == float("inf") else f"{max_error:.1e}"),
        check,
    ]


def _healthy(reference: dict[str, Any] | None) -> str:
    """This result's speed as a share of a healthy GPU of the same model: "0.93x", or "-"."""
    ratio = (reference or {}).get("ratio")
    return "-" if not isinstance(ratio, (int, float)) else f"{ratio:.2f}x"


def render_bench(bench: BenchReport, console: Any, verbose: bool = False) -> None:
    from rich.table import Table

    if not console.is_terminal:
        console.width = max(console.width, 180)  # piped: keep each table row on one line
    libraries = bench.libraries
    if libraries.get("cudnn"):
        console.print(f"cuDNN {libraries.get('cudnn_version', '?')}: {libraries['cudnn']} "
                      f"({libraries.get('cudnn_why', '')})")
    if libraries.get("cudart"):
        console.print(f"CUDA runtime {libraries.get('cudart_version', '?')}: {libraries['cudart']} "
                      f"({libraries.get('cudart_why', '')}); driver supports CUDA "
                      f"{libraries.get('driver_cuda_version', '?')}")
    for device in bench.devices:
        startup = device.get("startup_ms") or {}
        console.print(f"GPU {device.get('index')}: {device.get('name')} (compute capability "
                      f"{device.get('compute_capability')}, {device.get('multiprocessors')} SMs, "
                      f"{device.get('memory_total_mib')} MiB); start-up {sum(startup.values()):.0f} ms "
                      f"(imports {startup.get('imports', 0):.0f} ms, libraries {startup.get('load', 0):.0f} ms, "
                      f"context and handle {startup.get('init', 0):.0f} ms)")
        rows = [r for r in bench.results if r.get("device") == device.get("index")]
        if rows:
            table = Table(show_edge=False, pad_edge=False, box=None, header_style="bold")
            for column in ("workload", "dtype", "layout", "algo", "workspace", "GPU ms", "TFLOP/s", "% peak",
                           "vs healthy", "CPU ms", "speed-up", "max error", "check"):
                table.add_column(column, justify="right" if column in ("GPU ms", "TFLOP/s", "% peak", "vs healthy",
                                                                       "CPU ms", "speed-up", "max error") else "left")
            for result in rows:
                table.add_row(*_result_row(result))
            console.print(table)
            shapes = sorted({f"{r['workload'].split('-')[0]}: {r.get('shape_name')} {r['shape']}" for r in rows})
            console.print("  shapes: " + "; ".join(shapes))
            threads = next((r.get("cpu_threads") for r in rows if r.get("cpu_threads")), None)
            graph = any(r.get("timing") == "cuda-graph" for r in rows)
            console.print("  GPU ms: median per call after warm-up, CUDA events around "
                          + ("a CUDA graph of back-to-back calls (the GPU's time)" if graph else
                             "back-to-back calls on a stream"))
            compared = next((r["reference"] for r in rows if (r.get("reference") or {}).get("ratio")), None)
            console.print("  vs healthy: " + (f"its speed against a healthy {device.get('name')} ({compared['measured']}; "
                                              "compat/gpu_reference.toml)" if compared else
                                              f"unknown: no reference figures for {device.get('name')} with these "
                                              "settings in compat/gpu_reference.toml"))
            clocks = device.get("clocks") or {}
            if clocks.get("sampled"):
                reasons = ", ".join(clocks.get("throttle_reasons") or []) or "none"
                console.print(f"  clocks: SM {clocks.get('sm_mhz_median'):.0f} MHz median while busy (min "
                              f"{clocks.get('sm_mhz_min')}, max supported {clocks.get('sm_mhz_max_supported')}), "
                              f"up to {clocks.get('temperature_max_celsius')} °C; slowdown reasons seen: {reasons}")
            elif clocks.get("unavailable"):
                console.print(f"  clocks: not watched ({clocks['unavailable']})")
            if any(r.get("cpu_ms") for r in rows):
                computed = next((r["cpu_baseline"] for r in rows if r.get("cpu_baseline")), "NumPy")
                console.print(f"  CPU ms: float32 NHWC reference on {threads} threads, {computed}")
            if verbose:
                for r in rows:
                    if r.get("stream_ms"):
                        console.print(f"  {r['workload']}: {r['stream_ms']:.3f} ms per call launched from Python on a "
                                      f"stream (host cost included), {r.get('graph_ms') or 0:.3f} ms in a CUDA graph")
            if verbose and device.get("peaks_source"):
                console.print(f"  peak: {device['peaks_source']}")
    for item in bench.findings:
        console.print(f"{MARKS.get(item.severity, '?')} {item.code} {item.title}")
        console.print(f"    {item.detail}")
        console.print(f"    fix: {item.fix}")
    summary = bench.summary
    if summary is None:
        return
    failed = sum(1 for r in bench.results if r.get("ok") is False or r.get("error"))
    checked = sum(1 for r in bench.results if r.get("ok"))
    skipped = sum(1 for r in bench.results if r.get("skipped"))
    if summary.exit_code == 0:
        console.print(f"[green]bench passed[/green]: {checked} workload(s) checked against the CPU reference"
                      + (f", {skipped} not available in this cuDNN" if skipped else ""))
    else:
        console.print(f"[red]bench failed[/red]: {summary.counts.get('error', 0)} error(s)"
                      + (f", {failed} workload(s) not passing" if bench.results else ""))
