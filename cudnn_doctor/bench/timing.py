"""How long a GPU operation takes: CUDA events around back-to-back calls on a stream, and the same
calls captured into a CUDA graph and replayed (the GPU's own time)."""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable
from typing import Any

from cudnn_doctor.bench import cudnn as dnn
from cudnn_doctor.bench.cudart import CudaError
from cudnn_doctor.bench.device import GpuSession


def time_ms(gpu: GpuSession, operation: Callable[[], None], warmup: int, repeats: int) -> dict[str, Any]:
    """Median time of OPERATION in ms, after WARMUP runs, measured with CUDA events two ways:
    - 'stream': events around batches of back-to-back calls (each batch at least ~1 ms), so
      the host's cost of each call counts where it is larger than the GPU's;
    - 'graph': the same batch captured once into a CUDA graph and replayed, so only the GPU's
      time counts (what the GPU can do; frameworks that capture graphs get this).
    gpu_ms is the graph time where the capture works, else the stream time."""
    rt = gpu.rt
    for _ in range(warmup):
        operation()
    start, end = rt.event(), rt.event()
    timings: dict[str, Any] = {}
    try:
        batch = _batch(gpu, operation, start, end, 1.0, 200)
        timings["stream_ms"] = _stream_ms(gpu, operation, batch, repeats, start, end)
        timings["batch"] = batch
        graph_ms = _time_graph(gpu, operation, batch, repeats, start, end)
        if graph_ms is not None:
            timings["graph_ms"] = graph_ms
    finally:
        rt.destroy_event(start)
        rt.destroy_event(end)
    timings["gpu_ms"] = timings.get("graph_ms", timings["stream_ms"])
    timings["timing"] = "cuda-graph" if "graph_ms" in timings else "stream"
    return timings


def _batch(gpu: GpuSession, operation: Callable[[], None], start: int, end: int, target_ms: float, most: int) -> int:
    """How many back-to-back calls of OPERATION take about TARGET_MS (at most MOST), from one timed call."""
    gpu.rt.record(start, gpu.stream)
    operation()
    gpu.rt.record(end, gpu.stream)
    return max(1, min(most, math.ceil(target_ms / max(gpu.rt.elapsed_ms(start, end), 1e-3))))


def _stream_ms(gpu: GpuSession, operation: Callable[[], None], batch: int, repeats: int, start: int, end: int) -> float:
    """Median ms per call of BATCH back-to-back calls on the stream, events around each batch."""
    rt, stream = gpu.rt, gpu.stream
    samples = []
    for _ in range(repeats):
        rt.record(start, stream)
        for _ in range(batch):
            operation()
        rt.record(end, stream)
        samples.append(rt.elapsed_ms(start, end) / batch)
    return statistics.median(samples)


def _time_graph(gpu: GpuSession, operation: Callable[[], None], batch: int, repeats: int, start: int,
                end: int) -> float | None:
    """Median ms per call of BATCH calls captured into one CUDA graph; None if it can't be captured."""
    rt, stream = gpu.rt, gpu.stream
    if not (rt.graphs and stream):
        return None
    graph = executable = 0
    try:
        rt.begin_capture(stream)
        try:
            for _ in range(batch):
                operation()
        finally:
            graph = rt.end_capture(stream)
        executable = rt.instantiate(graph)
        rt.launch_graph(executable, stream)
        rt.stream_synchronize(stream)
        samples = []
        for _ in range(repeats):
            rt.record(start, stream)
            rt.launch_graph(executable, stream)
            rt.record(end, stream)
            samples.append(rt.elapsed_ms(start, end) / batch)
        return statistics.median(samples)
    except (CudaError, dnn.CudnnError):
        rt.lib.cudaGetLastError()  # a failed capture leaves nothing sticky; clear what it left
        return None
    finally:
        rt.destroy_graph(graph, executable)


def quick_ms(gpu: GpuSession, operation: Callable[[], None]) -> float:
    """A short timing of one candidate plan: a CUDA graph of back-to-back calls where it can be
    captured (the GPU's time, as the final figure), else events around them."""
    rt = gpu.rt
    operation()
    rt.synchronize()
    start, end = rt.event(), rt.event()
    try:
        batch = _batch(gpu, operation, start, end, 0.5, 100)
        graph_ms = _time_graph(gpu, operation, batch, 3, start, end)
        return graph_ms if graph_ms is not None else _stream_ms(gpu, operation, batch, 3, start, end)
    finally:
        rt.destroy_event(start)
        rt.destroy_event(end)
