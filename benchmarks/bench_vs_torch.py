"""`cudnn-doctor bench` against PyTorch's own cuDNN path and CPU path, same shapes, same GPU, same run.

Run on a machine with an NVIDIA GPU and PyTorch, from the repository root:
    CUDNN_DOCTOR_CACHE_DIR=/tmp/cdc PYTHONPATH=$PWD python3 benchmarks/bench_vs_torch.py --out /tmp/bench
It runs the built-in workloads through `commands.bench.run` (the doctor's child process loads the cuDNN
`check` picks: on a PyTorch machine the one in torch's pip wheel), then times the same
shapes, dtypes and layouts in PyTorch with torch.backends.cudnn.benchmark = True, using the
same method (CUDA events around back-to-back batches of at least ~1 ms, median of 20), and
PyTorch's CPU convolution and LSTM on as many threads as the NumPy baseline used.
Writes results.json, bench_text.txt and summary.md into --out and prints the summary.
"""

from __future__ import annotations

import argparse
import io
import json
import math
import os
import platform
import statistics
import subprocess
import sys
import time
from typing import Any

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from _timing import median_ms  # noqa: E402  (benchmarks/ is the script folder)

from cudnn_doctor.bench.records import bench_to_json  # noqa: E402
from cudnn_doctor.bench.workloads import CONV_SHAPES, LSTM_SHAPES, BenchOptions  # noqa: E402
from cudnn_doctor.commands.bench import BenchCommandOptions, run  # noqa: E402

# (size, dtype, layout, workload, cpu baseline, workspace limit MB)
CONFIGS = [
    ("medium", "fp32", "nchw", "all", True, None),
    ("medium", "fp32", "nhwc", "conv", False, None),
    ("medium", "tf32", "nchw", "all", False, None),
    ("medium", "tf32", "nhwc", "conv", False, None),
    ("medium", "fp16", "nchw", "all", False, None),
    ("medium", "fp16", "nhwc", "conv", False, None),
    ("medium", "bf16", "nchw", "all", False, None),
    ("medium", "bf16", "nhwc", "conv", False, None),
    ("small", "fp32", "nchw", "all", True, None),
    ("small", "fp16", "nhwc", "all", False, None),
    ("large", "fp32", "nchw", "all", True, None),
    ("large", "bf16", "nhwc", "all", False, None),
    ("medium", "fp16", "nhwc", "conv", False, 0.0),
]
QUICK = [("small", "fp32", "nchw", "all", True, None), ("small", "fp16", "nhwc", "all", False, None)]


def batch_size(torch: Any, function: Any) -> tuple[Any, Any, int]:
    """Two timing events, and how many back-to-back calls take about 1 ms (at most 200), as the doctor's."""
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    function()
    end.record()
    end.synchronize()
    return start, end, max(1, min(200, math.ceil(1.0 / max(start.elapsed_time(end), 1e-3))))


def time_gpu(torch: Any, function: Any, warmup: int = 3, repeats: int = 20) -> float:
    """Median ms, the doctor's method: events around batches of back-to-back runs."""
    for _ in range(warmup):
        function()
    torch.cuda.synchronize()
    start, end, batch = batch_size(torch, function)
    samples = []
    for _ in range(repeats):
        start.record()
        for _ in range(batch):
            function()
        end.record()
        end.synchronize()
        samples.append(start.elapsed_time(end) / batch)
    return statistics.median(samples)


def time_graph(torch: Any, function: Any, repeats: int = 20) -> float | None:
    """Median ms per call of a CUDA graph of back-to-back calls (the doctor's 'graph' timing)."""
    try:
        stream = torch.cuda.Stream()
        stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(stream):
            for _ in range(3):
                function()
        torch.cuda.current_stream().wait_stream(stream)
        torch.cuda.synchronize()
        start, end, batch = batch_size(torch, function)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            for _ in range(batch):
                function()
        graph.replay()
        torch.cuda.synchronize()
        samples = []
        for _ in range(repeats):
            start.record()
            graph.replay()
            end.record()
            end.synchronize()
            samples.append(start.elapsed_time(end) / batch)
        return statistics.median(samples)
    except Exception as error:  # noqa: BLE001 - a shape torch cannot capture: no graph figure
        print(f"torch graph capture failed: {error}", flush=True)
        return None


def torch_dtype(torch: Any, dtype: str) -> Any:
    return {"fp32": torch.float32, "tf32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}[dtype]


def torch_conv(torch: Any, size: str, dtype: str, layout: str, device: str) -> dict[str, Any]:
    shape = CONV_SHAPES[size]
    kind = torch_dtype(torch, dtype)
    fmt = torch.channels_last if layout == "nhwc" else torch.contiguous_format
    x = torch.randn(shape.n, shape.c, shape.h, shape.w, device=device, dtype=kind).to(memory_format=fmt)
    w = torch.randn(shape.k, shape.c, shape.r, shape.s, device=device, dtype=kind).to(memory_format=fmt)
    dy = torch.randn(shape.n, shape.k, shape.p, shape.q, device=device, dtype=kind).to(memory_format=fmt)
    args = ([shape.stride] * 2, [shape.pad] * 2, [1, 1], False, [0, 0], 1)
    backward = torch.ops.aten.convolution_backward
    functions = {
        "conv-fwd": lambda: torch.nn.functional.conv2d(x, w, stride=shape.stride, padding=shape.pad),
        "conv-bwd-data": lambda: backward(dy, x, w, None, *args, [True, False, False]),
        "conv-bwd-filter": lambda: backward(dy, x, w, None, *args, [False, True, False]),
    }
    with torch.no_grad():
        if device == "cuda":
            return {name: (time_gpu(torch, f), time_graph(torch, f)) for name, f in functions.items()}
        return {name: median_ms(function) for name, function in functions.items()}


def torch_lstm(torch: Any, size: str, dtype: str, device: str) -> Any:
    shape = LSTM_SHAPES[size]
    kind = torch_dtype(torch, dtype)
    lstm = torch.nn.LSTM(shape.input, shape.hidden, num_layers=1).to(device=device, dtype=kind).eval()
    x = torch.randn(shape.seq, shape.batch, shape.input, device=device, dtype=kind)
    with torch.no_grad():
        if device == "cuda":
            return (time_gpu(torch, lambda: lstm(x)), time_graph(torch, lambda: lstm(x)))
        return median_ms(lambda: lstm(x))


def set_tf32(torch: Any, dtype: str) -> None:
    allowed = dtype == "tf32"
    torch.backends.cudnn.allow_tf32 = allowed
    torch.backends.cuda.matmul.allow_tf32 = allowed


def torch_libraries() -> tuple[str, str] | None:
    """The libcudnn and libcudart of torch's pip wheels (nvidia-cudnn-cu13, nvidia/cu13 or cuda_runtime)."""
    import glob

    for site in sys.path:
        cudnn = sorted(glob.glob(os.path.join(site, "nvidia", "cudnn", "lib", "libcudnn.so.*")))
        cudart = sorted(glob.glob(os.path.join(site, "nvidia", "cu1*", "lib", "libcudart.so.*")) +
                        glob.glob(os.path.join(site, "nvidia", "cuda_runtime", "lib", "libcudart.so.*")))
        if cudnn and cudart:
            return cudnn[0], cudart[0]
    return None


def render_text(report: Any) -> str:
    from rich.console import Console

    from cudnn_doctor.render.bench_text import render_bench

    buffer = io.StringIO()
    console = Console(file=buffer, width=200, highlight=False, color_system=None)
    render_bench(report, console)
    return buffer.getvalue()


def environment(torch: Any) -> dict[str, Any]:
    def smi(query: str) -> str:
        try:
            return subprocess.run(["nvidia-smi", f"--query-gpu={query}", "--format=csv,noheader"], capture_output=True,
                                  text=True, timeout=20).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            return "?"

    cpu = "?"
    try:
        with open("/proc/cpuinfo") as handle:
            cpu = next((line.split(":", 1)[1].strip() for line in handle if line.startswith("model name")), "?")
    except OSError:
        pass
    return {
        "date": time.strftime("%Y-%m-%d"), "gpu": smi("name"), "driver": smi("driver_version"),
        "torch": torch.__version__, "torch_cuda": torch.version.cuda, "torch_cudnn": torch.backends.cudnn.version(),
        "cpu": cpu, "cpu_threads": len(os.sched_getaffinity(0)), "python": platform.python_version(),
        "numpy": __import__("numpy").__version__,
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", default="/tmp/bench-vs-torch")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--no-torch-cpu", action="store_true")
    parser.add_argument("--auto-libraries", action="store_true",
                        help="let the doctor choose cuDNN (default: the cuDNN and CUDA runtime of torch's wheels)")
    arguments = parser.parse_args()
    os.makedirs(arguments.out, exist_ok=True)
    import torch

    torch.backends.cudnn.benchmark = True
    env = environment(torch)
    print(json.dumps(env), flush=True)
    libraries = None if arguments.auto_libraries else torch_libraries()
    print(f"libraries for the doctor: {libraries or 'chosen by the doctor'}", flush=True)
    rows: list[dict[str, Any]] = []
    texts: list[str] = []
    reports: list[dict[str, Any]] = []
    cpu_ours: dict[tuple[str, str], tuple[float, int]] = {}
    for size, dtype, layout, workload, cpu, limit in (QUICK if arguments.quick else CONFIGS):
        options = BenchOptions(workload=workload, dtype=dtype, layout=layout, size=size, cpu=cpu,
                               workspace_limit_mb=limit)
        started = time.perf_counter()
        report = run(BenchCommandOptions(options, cudnn_path=libraries[0], cudart_path=libraries[1]) if libraries
                     else BenchCommandOptions(options))
        wall = time.perf_counter() - started
        title = f"## {size} {dtype} {layout} {workload}" + (f" --workspace-limit {limit:g}" if limit is not None else "")
        text = render_text(report)
        texts.append(f"{title} (bench wall {wall:.1f} s)\n{text}")
        print(texts[-1], flush=True)
        reports.append({"config": [size, dtype, layout, workload, cpu, limit], **bench_to_json(report)})
        set_tf32(torch, dtype)
        theirs: dict[str, Any] = {}
        if workload in ("all", "conv"):
            theirs.update(torch_conv(torch, size, dtype, layout, "cuda"))
        if workload in ("all", "lstm"):
            theirs["lstm-fwd"] = torch_lstm(torch, size, dtype, "cuda")
        for result in report.results:
            name = result.workload
            eager, graph = theirs.get(name, (None, None))
            row = {"size": size, "dtype": dtype, "layout": result.layout, "workload": name, "limit": limit,
                   "algo": result.algo, "ours_graph_ms": result.graph_ms,
                   "ours_stream_ms": result.stream_ms, "torch_graph_ms": graph, "torch_eager_ms": eager,
                   "ours_tflops": result.tflops, "ok": result.ok, "max_error": result.max_error}
            if row["ours_graph_ms"] and graph:
                row["ratio_graph"] = graph / row["ours_graph_ms"]  # our throughput / torch's, both graphs
                row["torch_tflops"] = result.flops / (graph * 1e-3) / 1e12
            if row["ours_stream_ms"] and eager:
                row["ratio_eager"] = eager / row["ours_stream_ms"]
            rows.append(row)
            if result.cpu_ms:
                cpu_ours[(size, name)] = (result.cpu_ms, result.cpu_threads or 1)
        torch.cuda.empty_cache()

    cpu_rows = []
    if not arguments.no_torch_cpu:
        for (size, name), (ours_ms, threads) in sorted(cpu_ours.items()):
            torch.set_num_threads(threads)
            for layout in (("nchw", "nhwc") if name.startswith("conv") else ("TNC",)):
                if name.startswith("conv"):
                    theirs_ms = torch_conv(torch, size, "fp32", layout, "cpu")[name]
                else:
                    theirs_ms = torch_lstm(torch, size, "fp32", "cpu")
                cpu_rows.append({"size": size, "workload": name, "torch_layout": layout, "threads": threads,
                                 "ours_ms": ours_ms, "torch_ms": theirs_ms, "ratio": theirs_ms / ours_ms})

    lines = [f"GPU {env['gpu']}, driver {env['driver']}, PyTorch {env['torch']} (CUDA {env['torch_cuda']}, cuDNN "
             f"{env['torch_cudnn']}), CPU {env['cpu']} x{env['cpu_threads']}, NumPy {env['numpy']}, {env['date']}", "",
             "| size | workload | dtype | layout | algo (ours) | ours ms graph | torch ms graph | ours TFLOP/s "
             "| torch TFLOP/s | ours/torch (graph) | ours ms stream | torch ms eager | ours/torch (eager) | check |",
             "|---|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
    for row in rows:
        label = row["layout"] + (f" ws≤{row['limit']:g}MB" if row["limit"] is not None else "")
        lines.append(f"| {row['size']} | {row['workload']} | {row['dtype']} | {label} | {row['algo']} | "
                     f"{_f(row['ours_graph_ms'], 3)} | {_f(row['torch_graph_ms'], 3)} | {_f(row['ours_tflops'], 1)} | "
                     f"{_f(row.get('torch_tflops'), 1)} | {_f(row.get('ratio_graph'), 2)} | "
                     f"{_f(row['ours_stream_ms'], 3)} | {_f(row['torch_eager_ms'], 3)} | "
                     f"{_f(row.get('ratio_eager'), 2)} | {'ok' if row['ok'] else 'FAIL'} {_f(row['max_error'], 1, 'e')} |")
    lines += ["", "| size | workload | threads | torch layout | NumPy ms | torch CPU ms | NumPy/torch throughput |",
              "|---|---|---:|---|---:|---:|---:|"]
    for row in cpu_rows:
        lines.append(f"| {row['size']} | {row['workload']} | {row['threads']} | {row['torch_layout']} | "
                     f"{_f(row['ours_ms'], 1)} | {_f(row['torch_ms'], 1)} | {_f(row['ratio'], 2)} |")
    summary = "\n".join(lines)
    print(summary, flush=True)
    with open(os.path.join(arguments.out, "summary.md"), "w") as handle:
        handle.write(summary + "\n")
    with open(os.path.join(arguments.out, "bench_text.txt"), "w") as handle:
        handle.write("\n".join(texts))
    with open(os.path.join(arguments.out, "results.json"), "w") as handle:
        json.dump({"environment": env, "rows": rows, "cpu_rows": cpu_rows, "reports": reports}, handle, indent=1,
                  default=str)


def _f(value: Any, digits: int, kind: str = "f") -> str:
    if value is None:
        return "-"
    if isinstance(value, str):
        return value
    return f"{value:.{digits}{kind}}"


if __name__ == "__main__":
    main()
