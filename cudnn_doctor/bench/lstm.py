"""The LSTM forward pass (inference) through cuDNN's v8 RNN API, in the child: returns a plain
dict (JSON-ready) and the GPU's output as a float32 (T,B,H) array, with the inputs and weights
the CPU reference needs.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from ctypes import byref, c_int, c_size_t, c_void_p
from dataclasses import dataclass
from typing import Any

import numpy as np

from cudnn_doctor.bench import cudnn as dnn
from cudnn_doctor.bench.device import GpuSession, poisoned_run
from cudnn_doctor.bench.dtypes import PLANS, from_storage, storage_dtype, to_storage
from cudnn_doctor.bench.timing import time_ms
from cudnn_doctor.bench.workloads import LstmShape


class WorkloadUnavailable(RuntimeError):
    """This cuDNN is too old for a workload's API (cuDNN 7.x and the v8 RNN API): skipped, not failed."""


@dataclass
class LstmInputs:
    x: np.ndarray  # (T,B,I) float32, rounded to the dtype
    w: np.ndarray  # (4H,I), gates i,f,g,o
    r: np.ndarray  # (4H,H)
    bias: np.ndarray  # (4H,) = input bias + recurrent bias


def run_lstm(gpu: GpuSession, shape: LstmShape, dtype: str, rng: np.random.Generator, warmup: int,
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


def _run_lstm_algo(gpu: GpuSession, shape: LstmShape, dtype: str, rng: np.random.Generator, warmup: int,
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
        stored = poisoned_run(rt, operation, y, np.empty((shape.seq, shape.batch, shape.hidden), dtype=store))
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


def _read_lstm_weights(gpu: GpuSession, rnn: int, weights: int, weight_size: int, host: np.ndarray, item: int,
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
