"""Convolutions (forward, backward-data, backward-filter) through cuDNN's C API, in the child:
the backend (graph) API, autotuned, where this cuDNN has it and it works, else the legacy
cudnnFind*Ex API. Each pass returns a plain dict (JSON-ready) and the GPU's output as a
float32 NHWC array, so the caller can check it against the CPU reference.
"""

from __future__ import annotations

import math
from ctypes import byref, c_int, c_size_t, c_void_p
from dataclasses import dataclass
from typing import Any

import numpy as np

from cudnn_doctor.bench import backend
from cudnn_doctor.bench import cudnn as dnn
from cudnn_doctor.bench.cudart import CudaError
from cudnn_doctor.bench.device import GpuSession, poisoned_run
from cudnn_doctor.bench.dtypes import PLANS, DtypePlan, from_storage, storage_dtype, to_storage
from cudnn_doctor.bench.reference import nchw_to_nhwc, nhwc_to_nchw
from cudnn_doctor.bench.timing import quick_ms, time_ms
from cudnn_doctor.bench.workloads import ConvShape

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


def run_conv(gpu: GpuSession, shape: ConvShape, dtype: str, layout: str, passes: tuple[str, ...], inputs: ConvInputs,
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


def _run_conv_pass(gpu: GpuSession, name: str, conv: int, operands: tuple[Any, ...], plan: DtypePlan, dtype: str,
                   fmt: int, workspace_limit: int | None, warmup: int, repeats: int, shape: ConvShape,
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
        stored = poisoned_run(rt, operation, out, np.empty(_device_shape(out_shape, fmt),
                                                             dtype=storage_dtype(dtype)))
    finally:
        descriptors.destroy_all()
    output = from_storage(stored, dtype)
    if fmt == dnn.TENSOR_NCHW:
        output = nchw_to_nhwc(output)
    return {"workload": name, **chosen, **timings, "output": output}


def _graph_conv(gpu: GpuSession, name: str, shape: ConvShape, plan: DtypePlan, fmt: int, workspace_limit: int | None,
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
            candidate.ms = quick_ms(gpu, run)
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


def _legacy_conv(gpu: GpuSession, name: str, conv: int, operands: tuple[Any, ...], plan: DtypePlan,
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
