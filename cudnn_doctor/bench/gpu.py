"""The workloads on the GPU through cuDNN's C API (runs in the child process).

Each function returns plain dicts (JSON-ready) and the GPU's output as a float32 NHWC
(or T,B,H) array, so the caller can check it against the CPU reference.
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable
from ctypes import byref, c_int, c_size_t, c_void_p
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from cudnn_doctor.bench import backend
from cudnn_doctor.bench import cudnn as dnn
from cudnn_doctor.bench.cudart import CudaError, Cudart
from cudnn_doctor.bench.reference import from_bfloat16_bits, nchw_to_nhwc, nhwc_to_nchw, to_bfloat16_bits
from cudnn_doctor.bench.workloads import ConvShape, LstmShape

MIB = 1 << 20


@dataclass(frozen=True)
class DtypePlan:
    """How a --dtype maps onto cuDNN: storage type, math type, convolution compute type."""

    storage: int
    math: int
    compute: int
    rnn_math_precisions: tuple[int, ...]


PLANS = {
    # fp32 on the CUDA cores only (FMA_MATH forbids TF32), as PyTorch with allow_tf32 = False
    "fp32": DtypePlan(dnn.DATA_FLOAT, dnn.FMA_MATH, dnn.DATA_FLOAT, (dnn.DATA_FLOAT,)),
    # TF32 tensor cores for float32 data: DEFAULT_MATH, as PyTorch with allow_tf32 = True
    "tf32": DtypePlan(dnn.DATA_FLOAT, dnn.DEFAULT_MATH, dnn.DATA_FLOAT, (dnn.DATA_FLOAT,)),
    # half storage, float accumulation (PyTorch's choice for both convolutions and RNNs)
    "fp16": DtypePlan(dnn.DATA_HALF, dnn.TENSOR_OP_MATH, dnn.DATA_FLOAT, (dnn.DATA_FLOAT, dnn.DATA_HALF)),
    "bf16": DtypePlan(dnn.DATA_BFLOAT16, dnn.TENSOR_OP_MATH, dnn.DATA_FLOAT, (dnn.DATA_FLOAT, dnn.DATA_BFLOAT16)),
}


def to_storage(values: np.ndarray, dtype: str) -> np.ndarray:
    """float32 values in the dtype's storage format (bf16 as uint16 bit patterns)."""
    if dtype == "fp16":
        return np.ascontiguousarray(values, dtype=np.float16)
    if dtype == "bf16":
        return to_bfloat16_bits(values)
    return np.ascontiguousarray(values, dtype=np.float32)


def from_storage(stored: np.ndarray, dtype: str) -> np.ndarray:
    if dtype == "bf16":
        return from_bfloat16_bits(stored)
    return np.asarray(stored, dtype=np.float32)


def storage_dtype(dtype: str) -> Any:
    return {"fp16": np.float16, "bf16": np.uint16}.get(dtype, np.float32)


@dataclass
class Gpu:
    """The device, its runtime and one cuDNN handle; frees what it allocated."""

    rt: Cudart
    lib: dnn.Cudnn
    device: int
    handle: int = 0
    stream: int = 0
    allocations: list[int] = field(default_factory=list)

    def alloc(self, size: int) -> int:
        pointer = self.rt.malloc(size)
        self.allocations.append(pointer)
        return pointer

    def upload(self, host: np.ndarray) -> int:
        pointer = self.alloc(host.nbytes)
        self.rt.upload(pointer, host)
        return pointer

    def release(self) -> None:
        for pointer in reversed(self.allocations):
            try:
                self.rt.free(pointer)
            except Exception:  # noqa: BLE001 - teardown after a failure: keep the first error
                pass
        self.allocations.clear()


def _poisoned_run(rt: Cudart, operation: Callable[[], None], output: int, stored: np.ndarray) -> np.ndarray:
    """Poison OUTPUT (0xFF bytes are NaN in every float format), run OPERATION once more and read
    the output back into STORED: an element the algorithm forgot to write fails the check."""
    rt.synchronize()
    rt.memset(output, 0xFF, stored.nbytes)
    rt.synchronize()
    operation()
    rt.synchronize()
    rt.download(stored, output)
    return stored


def time_ms(gpu: Gpu, operation: Callable[[], None], warmup: int, repeats: int) -> dict[str, Any]:
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


def _batch(gpu: Gpu, operation: Callable[[], None], start: int, end: int, target_ms: float, most: int) -> int:
    """How many back-to-back calls of OPERATION take about TARGET_MS (at most MOST), from one timed call."""
    gpu.rt.record(start, gpu.stream)
    operation()
    gpu.rt.record(end, gpu.stream)
    return max(1, min(most, math.ceil(target_ms / max(gpu.rt.elapsed_ms(start, end), 1e-3))))


def _stream_ms(gpu: Gpu, operation: Callable[[], None], batch: int, repeats: int, start: int, end: int) -> float:
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


def _time_graph(gpu: Gpu, operation: Callable[[], None], batch: int, repeats: int, start: int,
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


# ---------------------------------------------------------------- convolution

_CONV_CALLS = {
    "conv-fwd": ("cudnnGetConvolutionForwardAlgorithmMaxCount", "cudnnGetConvolutionForwardAlgorithm_v7",
                 "cudnnFindConvolutionForwardAlgorithmEx", "cudnnConvolutionForward", dnn.FWD_ALGO_NAMES),
    "conv-bwd-data": ("cudnnGetConvolutionBackwardDataAlgorithmMaxCount",
                      "cudnnGetConvolutionBackwardDataAlgorithm_v7", "cudnnFindConvolutionBackwardDataAlgorithmEx",
                      "cudnnConvolutionBackwardData", dnn.BWD_DATA_ALGO_NAMES),
    "conv-bwd-filter": ("cudnnGetConvolutionBackwardFilterAlgorithmMaxCount",
                        "cudnnGetConvolutionBackwardFilterAlgorithm_v7",
                        "cudnnFindConvolutionBackwardFilterAlgorithmEx", "cudnnConvolutionBackwardFilter",
                        dnn.BWD_FILTER_ALGO_NAMES),
}


@dataclass
class ConvInputs:
    """Host data of one convolution, logical NHWC float32 (already rounded to the dtype)."""

    x: np.ndarray  # (N,H,W,C)
    w: np.ndarray  # (K,R,S,C)
    dy: np.ndarray  # (N,P,Q,K)


def make_conv_inputs(shape: ConvShape, dtype: str, rng: np.random.Generator) -> ConvInputs:
    def draw(*dims: int) -> np.ndarray:
        values = rng.uniform(-1.0, 1.0, size=dims).astype(np.float32)
        return from_storage(to_storage(values, dtype), dtype)

    return ConvInputs(x=draw(shape.n, shape.h, shape.w, shape.c), w=draw(shape.k, shape.r, shape.s, shape.c),
                      dy=draw(shape.n, shape.p, shape.q, shape.k))


class ApiUnavailable(RuntimeError):
    """The API that --api asked for is not in this cuDNN: a usage error, not a cuDNN failure."""


class WorkloadUnavailable(RuntimeError):
    """This cuDNN is too old for a workload's API (cuDNN 7.x and the v8 RNN API): skipped, not failed."""


def run_conv(gpu: Gpu, shape: ConvShape, dtype: str, layout: str, passes: tuple[str, ...], inputs: ConvInputs,
             workspace_limit: int | None, warmup: int, repeats: int, api: str = "auto") -> list[dict[str, Any]]:
    """Each pass of PASSES: the fastest engine or algorithm (within WORKSPACE_LIMIT bytes) of API
    (auto, graph, legacy), its median time, and the output (key 'output', logical NHWC/KRSC float32)."""
    lib, plan = gpu.lib, PLANS[dtype]
    fmt = dnn.TENSOR_NHWC if layout == "nhwc" else dnn.TENSOR_NCHW
    descriptors: list[tuple[str, int]] = []

    def tensor(n: int, c: int, h: int, w: int) -> int:
        desc = lib.create("TensorDescriptor")
        descriptors.append(("TensorDescriptor", desc))
        lib.call("cudnnSetTensor4dDescriptor", c_void_p(desc), fmt, plan.storage, n, c, h, w)
        return desc

    try:
        x_desc = tensor(shape.n, shape.c, shape.h, shape.w)
        y_desc = tensor(shape.n, shape.k, shape.p, shape.q)
        w_desc = lib.create("FilterDescriptor")
        descriptors.append(("FilterDescriptor", w_desc))
        lib.call("cudnnSetFilter4dDescriptor", c_void_p(w_desc), plan.storage, fmt, shape.k, shape.c, shape.r, shape.s)
        conv = lib.create("ConvolutionDescriptor")
        descriptors.append(("ConvolutionDescriptor", conv))
        lib.call("cudnnSetConvolution2dDescriptor", c_void_p(conv), shape.pad, shape.pad, shape.stride, shape.stride,
                 1, 1, dnn.CROSS_CORRELATION, plan.compute)
        dims = [c_int(0) for _ in range(4)]
        lib.call("cudnnGetConvolution2dForwardOutputDim", c_void_p(conv), c_void_p(x_desc), c_void_p(w_desc),
                 *(byref(d) for d in dims))
        if [d.value for d in dims] != [shape.n, shape.k, shape.p, shape.q]:
            raise RuntimeError(f"cuDNN computes output {[d.value for d in dims]} for {shape.describe()}")

        def device_layout(array: np.ndarray) -> np.ndarray:
            return to_storage(nhwc_to_nchw(array) if fmt == dnn.TENSOR_NCHW else array, dtype)

        x = gpu.upload(device_layout(inputs.x))
        w = gpu.upload(device_layout(inputs.w))
        dy = gpu.upload(device_layout(inputs.dy))
        item = np.dtype(storage_dtype(dtype)).itemsize
        y = gpu.alloc(inputs.dy.size * item)
        dx = gpu.alloc(inputs.x.size * item)
        dw = gpu.alloc(inputs.w.size * item)
        operands = {
            # pass: (input A desc, A, input B desc, B, output desc, output, output logical shape)
            "conv-fwd": (x_desc, x, w_desc, w, y_desc, y, inputs.dy.shape),
            "conv-bwd-data": (w_desc, w, y_desc, dy, x_desc, dx, inputs.x.shape),
            "conv-bwd-filter": (x_desc, x, y_desc, dy, w_desc, dw, inputs.w.shape),
        }
        roles = {  # the backend API's x, w, y of each pass
            "conv-fwd": {"x": x, "w": w, "y": y},
            "conv-bwd-data": {"x": dx, "w": w, "y": dy},
            "conv-bwd-filter": {"x": x, "w": dw, "y": dy},
        }
        results: list[dict[str, Any]] = []
        for name in passes:  # a pass that fails leaves the others to run
            try:
                results.append(_run_conv_pass(gpu, name, conv, operands[name], plan, dtype, fmt, workspace_limit,
                                              warmup, repeats, shape, roles[name], api))
            except (dnn.CudnnError, CudaError) as error:
                results.append({"workload": name, "exception": error})
        return results
    finally:
        for kind, desc in reversed(descriptors):
            lib.destroy(kind, desc)


def _run_conv_pass(gpu: Gpu, name: str, conv: int, operands: tuple[Any, ...], plan: DtypePlan, dtype: str, fmt: int,
                   workspace_limit: int | None, warmup: int, repeats: int, shape: ConvShape,
                   roles: dict[str, int], api: str = "auto") -> dict[str, Any]:
    """One pass: through the backend (graph) API, autotuned, where this cuDNN has it and it
    works; else through the legacy API's cudnnFind*Ex. API 'graph' or 'legacy' allows one only."""
    rt = gpu.rt
    out, out_shape = operands[5], operands[6]
    chosen: dict[str, Any] | None = None
    graph_error = None
    descriptors = backend.Descriptors(gpu.lib)
    try:
        if api == "graph" and not gpu.lib.has("cudnnBackendExecute"):
            raise ApiUnavailable("this cuDNN has no graph (backend) API (cudnnBackendExecute came with cuDNN 8.0)")
        if api != "legacy" and gpu.lib.has("cudnnBackendExecute"):
            try:
                chosen = _graph_conv(gpu, name, shape, plan, fmt, workspace_limit, roles, descriptors)
            except (dnn.CudnnError, CudaError) as error:
                if api == "graph":
                    raise
                graph_error = f"{error.call}: {error.name}"
                rt.lib.cudaGetLastError()
                rt.synchronize()
        if chosen is None:
            chosen = _legacy_conv(gpu, name, conv, operands, plan, workspace_limit)
            if graph_error:
                chosen["graph_api_error"] = graph_error
        operation = chosen.pop("run")
        timings = time_ms(gpu, operation, warmup, repeats)
        stored = _poisoned_run(rt, operation, out, np.empty(_device_shape(out_shape, fmt),
                                                             dtype=storage_dtype(dtype)))
    finally:
        descriptors.destroy_all()
    output = from_storage(stored, dtype)
    if fmt == dnn.TENSOR_NCHW:
        output = nchw_to_nhwc(output)
    return {"workload": name, **chosen, **timings, "output": output}


def _graph_conv(gpu: Gpu, name: str, shape: ConvShape, plan: DtypePlan, fmt: int, workspace_limit: int | None,
                roles: dict[str, int], descriptors: backend.Descriptors) -> dict[str, Any] | None:
    """The fastest plan of the backend API's heuristics (A, B, fallback), timed here; None when
    no plan runs."""
    lib, rt = gpu.lib, gpu.rt
    problem = backend.ConvProblem(
        name=name, storage=plan.storage, compute=plan.compute, nhwc=fmt == dnn.TENSOR_NHWC,
        x_dims=(shape.n, shape.c, shape.h, shape.w), w_dims=(shape.k, shape.c, shape.r, shape.s),
        y_dims=(shape.n, shape.k, shape.p, shape.q), pad=shape.pad, stride=shape.stride,
        tensor_cores=plan.math != dnn.FMA_MATH)
    free, _ = rt.memory_info()
    limit = int(free * 0.5) if workspace_limit is None else min(workspace_limit, int(free * 0.5))
    graph = backend.build_graph(lib, gpu.handle, problem, descriptors)
    plans, counts = backend.make_plans(lib, gpu.handle, problem, graph, limit, descriptors)
    if not plans:
        return None
    size = max(p.workspace for p in plans)
    workspace = gpu.alloc(size) if size else 0
    pack = backend.variant_pack(descriptors, roles, workspace)
    tried = []
    for candidate in plans:
        run = backend.executor(lib, gpu.handle, candidate.descriptor, pack)
        try:
            candidate.ms = _quick_ms(gpu, run)
        except (dnn.CudnnError, CudaError) as error:
            rt.lib.cudaGetLastError()
            tried.append({"engine": candidate.engine, "workspace_bytes": candidate.workspace, "error": error.name})
            continue
        tried.append({"engine": candidate.engine, "workspace_bytes": candidate.workspace,
                      "ms": round(candidate.ms, 5), "notes": candidate.notes})
    timed = [p for p in plans if p.ms is not None]
    if not timed:
        return None
    best = min(timed, key=lambda p: p.ms if p.ms is not None else math.inf)
    return {
        "api": "graph",
        "algo": f"eng{best.engine} (graph)",
        "math_type": "tensor-core" if "tensor-core" in best.notes else "cuda-core",
        "workspace_bytes": int(best.workspace),
        "workspace_available_bytes": int(limit),
        "heuristics": counts,
        "candidates": tried,
        "run": backend.executor(lib, gpu.handle, best.descriptor, pack),
    }


def _quick_ms(gpu: Gpu, operation: Callable[[], None]) -> float:
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


def _legacy_conv(gpu: Gpu, name: str, conv: int, operands: tuple[Any, ...], plan: DtypePlan,
                 workspace_limit: int | None) -> dict[str, Any]:
    """The algorithm cudnnFind*Ex picks within the workspace, and a callable that runs it."""
    lib, rt, handle = gpu.lib, gpu.rt, c_void_p(gpu.handle)
    max_count_call, heuristic_call, find_call, run_call, algo_names = _CONV_CALLS[name]
    a_desc, a, b_desc, b, out_desc, out, _ = operands
    lib.call("cudnnSetConvolutionMathType", c_void_p(conv), plan.math)

    count = c_int(0)
    lib.call(max_count_call, handle, byref(count))
    perf = (dnn.ConvolutionPerf * max(1, count.value))()
    returned = c_int(0)
    lib.call(heuristic_call, handle, c_void_p(a_desc), c_void_p(b_desc), c_void_p(conv), c_void_p(out_desc),
             count.value, byref(returned), perf)
    wanted = max([p.memory for p in perf[:returned.value] if p.status == 0] or [0])
    free, _ = rt.memory_info()
    workspace_size = min(wanted, int(free * 0.5))
    if workspace_limit is not None:
        workspace_size = min(workspace_size, workspace_limit)
    workspace = gpu.alloc(workspace_size) if workspace_size else 0

    lib.call(find_call, handle, c_void_p(a_desc), c_void_p(a), c_void_p(b_desc), c_void_p(b), c_void_p(conv),
             c_void_p(out_desc), c_void_p(out), count.value, byref(returned), perf, c_void_p(workspace),
             c_size_t(workspace_size))
    found = [p for p in perf[:returned.value] if p.status == 0 and p.memory <= workspace_size]
    if not found:
        statuses = sorted({lib.status_name(p.status) for p in perf[:returned.value]})
        raise dnn.CudnnError(find_call, perf[0].status if returned.value else 3000,
                             statuses[0] if statuses else "CUDNN_STATUS_NOT_SUPPORTED")
    best = found[0]
    lib.call("cudnnSetConvolutionMathType", c_void_p(conv), best.mathType)
    alpha, beta = dnn.scalars(plan.storage)
    run = lib.function(run_call)
    args = (handle, byref(alpha), c_void_p(a_desc), c_void_p(a), c_void_p(b_desc), c_void_p(b), c_void_p(conv),
            best.algo, c_void_p(workspace), c_size_t(best.memory), byref(beta), c_void_p(out_desc), c_void_p(out))

    def operation() -> None:
        status = run(*args)
        if status:
            raise dnn.CudnnError(run_call, status, lib.status_name(status))

    return {
        "api": "legacy",
        "algo": algo_names[best.algo] if 0 <= best.algo < len(algo_names) else str(best.algo),
        "math_type": dnn.MATH_NAMES.get(best.mathType, str(best.mathType)),
        "workspace_bytes": int(best.memory),
        "workspace_available_bytes": int(workspace_size),
        "run": operation,
    }


def _device_shape(logical_nhwc: tuple[int, ...], fmt: int) -> tuple[int, ...]:
    n, h, w, c = logical_nhwc
    return (n, c, h, w) if fmt == dnn.TENSOR_NCHW else (n, h, w, c)


# ---------------------------------------------------------------- LSTM


@dataclass
class LstmInputs:
    x: np.ndarray  # (T,B,I) float32, rounded to the dtype
    w: np.ndarray  # (4H,I), gates i,f,g,o
    r: np.ndarray  # (4H,H)
    bias: np.ndarray  # (4H,) = input bias + recurrent bias


def run_lstm(gpu: Gpu, shape: LstmShape, dtype: str, rng: np.random.Generator, warmup: int,
             repeats: int) -> tuple[dict[str, Any], LstmInputs]:
    """cudnnRNNForward (inference) of a one-layer LSTM with the faster of the STANDARD and
    PERSIST_STATIC algorithms (PyTorch picks PERSIST_STATIC for small batches; here both are
    timed), each on the same random data."""
    if not gpu.lib.has("cudnnRNNForward"):
        raise WorkloadUnavailable("this cuDNN has no cudnnRNNForward, the RNN API the LSTM runs through "
                                  "(it came with cuDNN 8.0)")
    state = rng.bit_generator.state
    best: tuple[dict[str, Any], LstmInputs] | None = None
    tried: dict[str, Any] = {}
    for algo in (dnn.RNN_ALGO_STANDARD, dnn.RNN_ALGO_PERSIST_STATIC):
        trial = np.random.default_rng()
        trial.bit_generator.state = state
        try:
            outcome = _run_lstm_algo(gpu, shape, dtype, trial, warmup, repeats, algo)
        except dnn.CudnnError as error:
            if algo == dnn.RNN_ALGO_STANDARD:
                raise
            tried[dnn.RNN_ALGO_NAMES[algo]] = error.name
            continue
        tried[dnn.RNN_ALGO_NAMES[algo]] = round(outcome[0]["gpu_ms"], 5)
        if best is None or outcome[0]["gpu_ms"] < best[0]["gpu_ms"]:
            best = outcome
        rng.bit_generator.state = trial.bit_generator.state
    assert best is not None  # STANDARD either ran or raised
    best[0]["candidates"] = tried
    return best


def _run_lstm_algo(gpu: Gpu, shape: LstmShape, dtype: str, rng: np.random.Generator, warmup: int,
                   repeats: int, algo: int) -> tuple[dict[str, Any], LstmInputs]:
    """cudnnRNNForward (inference) of a one-layer LSTM with ALGO; weights random, read back with
    cudnnGetRNNWeightParams so the CPU reference uses exactly the same ones."""
    lib, rt, plan = gpu.lib, gpu.rt, PLANS[dtype]
    handle = c_void_p(gpu.handle)
    created: list[tuple[str, int]] = []

    def create(kind: str) -> int:
        pointer = lib.create(kind)
        created.append((kind, pointer))
        return pointer

    try:
        dropout = create("DropoutDescriptor")
        states_size = c_size_t(0)
        lib.call("cudnnDropoutGetStatesSize", handle, byref(states_size))
        states = gpu.alloc(states_size.value)
        lib.call("cudnnSetDropoutDescriptor", c_void_p(dropout), handle, 0.0, c_void_p(states), states_size, 1234)
        rnn = create("RNNDescriptor")
        seq_lengths = dnn.int_array([shape.seq] * shape.batch)
        x_desc, y_desc = create("RNNDataDescriptor"), create("RNNDataDescriptor")
        lib.call("cudnnSetRNNDataDescriptor", c_void_p(x_desc), plan.storage, dnn.RNN_DATA_LAYOUT_SEQ_MAJOR_PACKED,
                 shape.seq, shape.batch, shape.input, seq_lengths, None)
        lib.call("cudnnSetRNNDataDescriptor", c_void_p(y_desc), plan.storage, dnn.RNN_DATA_LAYOUT_SEQ_MAJOR_PACKED,
                 shape.seq, shape.batch, shape.hidden, seq_lengths, None)
        weight_size, work_size, reserve_size = c_size_t(0), c_size_t(0), c_size_t(0)
        last_error: dnn.CudnnError | None = None
        math_precision = plan.rnn_math_precisions[0]
        for math_precision in plan.rnn_math_precisions:  # fp16/bf16: float accumulation if offered
            try:
                lib.call("cudnnSetRNNDescriptor_v8", c_void_p(rnn), algo, dnn.LSTM,
                         dnn.RNN_DOUBLE_BIAS, dnn.UNIDIRECTIONAL, dnn.LINEAR_INPUT, plan.storage, math_precision,
                         plan.math, shape.input, shape.hidden, shape.hidden, shape.layers, c_void_p(dropout),
                         dnn.RNN_PADDED_IO_DISABLED)
                lib.call("cudnnGetRNNWeightSpaceSize", handle, c_void_p(rnn), byref(weight_size))
                lib.call("cudnnGetRNNTempSpaceSizes", handle, c_void_p(rnn), dnn.FWD_MODE_INFERENCE, c_void_p(x_desc),
                         byref(work_size), byref(reserve_size))
                last_error = None
                break
            except dnn.CudnnError as error:
                last_error = error
        if last_error is not None:
            raise last_error
        state_desc = create("TensorDescriptor")
        lib.call("cudnnSetTensorNdDescriptor", c_void_p(state_desc), plan.storage, 3,
                 dnn.int_array([shape.layers, shape.batch, shape.hidden]),
                 dnn.int_array([shape.batch * shape.hidden, shape.hidden, 1]))

        store = storage_dtype(dtype)
        item = np.dtype(store).itemsize
        bound = 1.0 / math.sqrt(shape.hidden)  # PyTorch's LSTM initialisation
        host_weights = to_storage(rng.uniform(-bound, bound, size=weight_size.value // item).astype(np.float32), dtype)
        weights = gpu.upload(host_weights)
        logical_x = from_storage(to_storage(
            rng.uniform(-1.0, 1.0, size=(shape.seq, shape.batch, shape.input)).astype(np.float32), dtype), dtype)
        x = gpu.upload(to_storage(logical_x, dtype))
        y = gpu.alloc(shape.seq * shape.batch * shape.hidden * item)
        work = gpu.alloc(work_size.value) if work_size.value else 0
        reserve = gpu.alloc(reserve_size.value) if reserve_size.value else 0
        dev_seq = gpu.upload(np.full(shape.batch, shape.seq, dtype=np.int32))
        inputs = _read_lstm_weights(gpu, rnn, weights, weight_size.value, from_storage(host_weights, dtype), item,
                                    shape, logical_x, create)

        forward = lib.function("cudnnRNNForward")
        args = (handle, c_void_p(rnn), dnn.FWD_MODE_INFERENCE, c_void_p(dev_seq), c_void_p(x_desc), c_void_p(x),
                c_void_p(y_desc), c_void_p(y), c_void_p(state_desc), None, None, c_void_p(state_desc), None, None,
                weight_size, c_void_p(weights), work_size, c_void_p(work), reserve_size, c_void_p(reserve))

        def operation() -> None:
            status = forward(*args)
            if status:
                raise dnn.CudnnError("cudnnRNNForward", status, lib.status_name(status))

        timings = time_ms(gpu, operation, warmup, repeats)
        stored = _poisoned_run(rt, operation, y, np.empty((shape.seq, shape.batch, shape.hidden), dtype=store))
        result = {
            "workload": "lstm-fwd",
            "algo": dnn.RNN_ALGO_NAMES.get(algo, str(algo)),
            "math_type": dnn.MATH_NAMES.get(plan.math, str(plan.math)),
            "math_precision": {dnn.DATA_FLOAT: "fp32", dnn.DATA_HALF: "fp16", dnn.DATA_BFLOAT16: "bf16"}.get(
                math_precision, str(math_precision)),
            "workspace_bytes": int(work_size.value),
            "workspace_available_bytes": int(work_size.value),
            **timings,
            "output": from_storage(stored, dtype),
        }
        return result, inputs
    finally:
        for kind, pointer in reversed(created):
            lib.destroy(kind, pointer)


def _read_lstm_weights(gpu: Gpu, rnn: int, weights: int, weight_size: int, host: np.ndarray, item: int,
                       shape: LstmShape, logical_x: np.ndarray, create: Callable[[str], int]) -> LstmInputs:
    """The weight matrices and biases of layer 0, cut out of the host copy of the weight space
    at the offsets cudnnGetRNNWeightParams reports."""
    lib = gpu.lib
    matrix_desc, bias_desc = create("TensorDescriptor"), create("TensorDescriptor")
    hidden = shape.hidden
    w = np.zeros((4 * hidden, shape.input), dtype=np.float32)
    r = np.zeros((4 * hidden, hidden), dtype=np.float32)
    bias = np.zeros(4 * hidden, dtype=np.float32)
    for linear_id in range(8):
        matrix_addr, bias_addr = c_void_p(0), c_void_p(0)
        lib.call("cudnnGetRNNWeightParams", c_void_p(gpu.handle), c_void_p(rnn), 0, c_size_t(weight_size),
                 c_void_p(weights), linear_id, c_void_p(matrix_desc), byref(matrix_addr), c_void_p(bias_desc),
                 byref(bias_addr))
        gate = slice((linear_id % 4) * hidden, (linear_id % 4 + 1) * hidden)
        target = w if linear_id < 4 else r
        if matrix_addr.value:
            target[gate] = _cut(lib, host, matrix_desc, matrix_addr.value - weights, item, target.shape[1], hidden)
        if bias_addr.value:
            bias[gate] += _cut(lib, host, bias_desc, bias_addr.value - weights, item, 1, hidden).reshape(hidden)
    return LstmInputs(x=logical_x, w=w, r=r, bias=bias)


def _cut(lib: dnn.Cudnn, host: np.ndarray, desc: int, byte_offset: int, item: int, cols: int, rows: int) -> np.ndarray:
    """A ROWS x COLS matrix at BYTE_OFFSET of the weight space, with the row stride DESC gives."""
    data_type, count = c_int(0), c_int(0)
    dims, strides = (c_int * 8)(), (c_int * 8)()
    lib.call("cudnnGetTensorNdDescriptor", c_void_p(desc), 8, byref(data_type), byref(count), dims, strides)
    shape = [dims[i] for i in range(count.value)]
    size = int(np.prod(shape)) if shape else 0
    if size != rows * cols:
        raise RuntimeError(f"cudnnGetRNNWeightParams: a {shape} tensor where {rows}x{cols} was expected")
    row_stride = strides[count.value - 2] if count.value >= 2 and cols > 1 else cols
    start = byte_offset // item
    if row_stride == cols:
        return np.asarray(host[start:start + rows * cols], dtype=np.float32).reshape(rows, cols)
    return np.stack([host[start + i * row_stride:start + i * row_stride + cols] for i in range(rows)])


def device_info(rt: Cudart, device: int) -> dict[str, Any]:
    from cudnn_doctor.bench import cudart as cr

    major = rt.attribute(cr.ATTR_COMPUTE_CAPABILITY_MAJOR, device)
    minor = rt.attribute(cr.ATTR_COMPUTE_CAPABILITY_MINOR, device)
    free, total = rt.memory_info()
    return {
        "index": device,
        "name": rt.device_name(device),
        "compute_capability": f"{major}.{minor}",
        "multiprocessors": rt.attribute(cr.ATTR_MULTIPROCESSOR_COUNT, device),
        "clock_mhz": rt.attribute(cr.ATTR_CLOCK_RATE_KHZ, device) // 1000,
        "memory_total_mib": total // MIB,
        "memory_free_mib": free // MIB,
    }


def initialise(rt: Cudart, lib: dnn.Cudnn, device: int) -> Gpu:
    """Select DEVICE, create its context (the first cudaFree) and a cuDNN handle; load cuDNN's
    sub-libraries now (their version checks), so start-up cost is counted as such."""
    rt.set_device(device)
    rt.check("cudaFree", rt.lib.cudaFree(None))
    gpu = Gpu(rt=rt, lib=lib, device=device)
    gpu.handle = lib.create("")
    if rt.graphs:  # cuDNN works on a stream of its own, which CUDA graphs can capture
        gpu.stream = rt.stream()
        lib.call("cudnnSetStream", c_void_p(gpu.handle), c_void_p(gpu.stream))
    for check in ("cudnnOpsVersionCheck", "cudnnCnnVersionCheck", "cudnnAdvVersionCheck",
                  "cudnnOpsInferVersionCheck", "cudnnOpsTrainVersionCheck", "cudnnCnnInferVersionCheck",
                  "cudnnCnnTrainVersionCheck", "cudnnAdvInferVersionCheck", "cudnnAdvTrainVersionCheck"):
        if lib.has(check):
            function = getattr(lib.lib, check)
            function.argtypes, function.restype = [], c_int
            status = function()
            if status:
                raise dnn.CudnnError(check, status, lib.status_name(status))
    return gpu


def elapsed_ms(since: float) -> float:
    return round((time.perf_counter() - since) * 1000, 1)

