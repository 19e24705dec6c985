"""The CPU reference and baseline: convolution and LSTM in NumPy, float32, NHWC.

Fair, not a straw man: the work goes to BLAS as a few large matrix products, and the
parts NumPy runs on one core (the im2col copies, the LSTM gates) are spread over a pool
of threads, each working on its own images or its own hidden units with a
single-threaded BLAS (the child sets OPENBLAS_NUM_THREADS=1; NumPy releases the GIL in
copies, ufuncs and matmul). This is how oneDNN, PyTorch's CPU path, parallelises too.

- Convolution: im2col per image, where each row of the im2col matrix is R contiguous runs
  of S·C values read through a strided view (no gather), then one GEMM against the filters
  laid out (R·S·C, K). Backward-data is a forward convolution of the (dilated, padded)
  output gradient with the flipped, transposed filters; backward-filter is
  dYᵀ (K × N·P·Q) times the im2col matrix of X.
- LSTM: the input projection of all steps in one GEMM, then per step the recurrent GEMM and
  the gates; the hidden units are split in blocks, one per thread, with a barrier per step.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
from numpy.lib.stride_tricks import as_strided

_POOLS: dict[int, ThreadPoolExecutor] = {}
_LOCAL = threading.local()


def default_threads() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def _pool(threads: int) -> ThreadPoolExecutor:
    if threads not in _POOLS:
        _POOLS[threads] = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="cudnn-doctor-cpu")
    return _POOLS[threads]


def _parallel(threads: int, function: Callable[[Any], Any], items: list[Any]) -> list[Any]:
    if threads <= 1 or len(items) <= 1:
        return [function(item) for item in items]
    return list(_pool(threads).map(function, items))


def _buffer(name: str, shape: tuple[int, ...], zero: bool = False) -> np.ndarray:
    """A per-thread scratch array, reused between calls of the same shape."""
    cache = getattr(_LOCAL, "buffers", None)
    if cache is None:
        cache = _LOCAL.buffers = {}
    array = cache.get(name)
    if array is None or array.shape != shape:
        array = cache[name] = np.zeros(shape, dtype=np.float32)
    elif zero:
        array.fill(0.0)
    return array


def _chunks(n: int, threads: int, per_item_bytes: int, limit_bytes: int = 16 << 20) -> list[tuple[int, int]]:
    size = max(1, min(-(-n // max(1, threads)), limit_bytes // max(1, per_item_bytes)))
    return [(start, min(n, start + size)) for start in range(0, n, size)]


def _im2col(padded: np.ndarray, r: int, s: int, p: int, q: int, stride: int) -> np.ndarray:
    """The (nb·P·Q, R·S·C) im2col matrix of a padded NHWC block, in a per-thread buffer."""
    nb, hp, wp, c = padded.shape
    item = padded.itemsize
    view = as_strided(padded, shape=(nb, p, q, r, s * c),
                      strides=(hp * wp * c * item, stride * wp * c * item, stride * c * item, wp * c * item, item),
                      writeable=False)
    cols = _buffer("cols", (nb, p, q, r, s * c))
    np.copyto(cols, view)
    return cols.reshape(nb * p * q, r * s * c)


def _fill_padded(source: np.ndarray, shape: tuple[int, int, int, int], offset: int, dilation: int) -> np.ndarray:
    """SOURCE (nb,h,w,c) placed at OFFSET with DILATION-1 zeros between elements in a zeroed buffer."""
    padded = _buffer("padded", shape, zero=True)
    h, w = source.shape[1], source.shape[2]
    padded[:, offset:offset + (h - 1) * dilation + 1:dilation, offset:offset + (w - 1) * dilation + 1:dilation, :] = source
    return padded


def _correlate(source: np.ndarray, filters_t: np.ndarray, r: int, s: int, buffer_hw: tuple[int, int], offset: int,
               dilation: int, stride: int, out_hw: tuple[int, int], threads: int) -> np.ndarray:
    """out[n,p,q,:] = sum_{i,j,c} buf[n, p·stride+i, q·stride+j, c] · filters_t[(i,j,c), :]."""
    n, c = source.shape[0], source.shape[3]
    k = filters_t.shape[1]
    p, q = out_hw
    out = np.empty((n, p, q, k), dtype=np.float32)

    def work(span: tuple[int, int]) -> None:
        start, end = span
        padded = _fill_padded(source[start:end], (end - start, buffer_hw[0], buffer_hw[1], c), offset, dilation)
        cols = _im2col(padded, r, s, p, q, stride)
        np.matmul(cols, filters_t, out=out[start:end].reshape(-1, k))

    _parallel(threads, work, _chunks(n, threads, p * q * r * s * c * 4))
    return out


def conv_forward(x: np.ndarray, w: np.ndarray, pad: int, stride: int, threads: int = 1) -> np.ndarray:
    """y (N,P,Q,K) = cross-correlation of x (N,H,W,C) with w (K,R,S,C), float32."""
    n, h, wd, c = x.shape
    k, r, s, _ = w.shape
    p, q = (h + 2 * pad - r) // stride + 1, (wd + 2 * pad - s) // stride + 1
    filters_t = np.ascontiguousarray(w.reshape(k, r * s * c).T, dtype=np.float32)
    return _correlate(np.asarray(x, np.float32), filters_t, r, s, (h + 2 * pad, wd + 2 * pad), pad, 1, stride,
                      (p, q), threads)


def conv_backward_data(dy: np.ndarray, w: np.ndarray, pad: int, stride: int, hw: tuple[int, int],
                       threads: int = 1) -> np.ndarray:
    """dx (N,H,W,C) from dy (N,P,Q,K) and w (K,R,S,C): the gradient of conv_forward wrt x."""
    k, r, s, c = w.shape
    if pad > r - 1 or pad > s - 1:
        raise ValueError("backward-data reference needs pad <= filter size - 1")
    h, wd = hw
    flipped_t = np.ascontiguousarray(w[:, ::-1, ::-1, :].transpose(1, 2, 0, 3).reshape(r * s * k, c), dtype=np.float32)
    # conv_forward with stride 1 over dy dilated by STRIDE, offset r-1-pad, in a buffer of H+R-1 rows
    if r - 1 - pad != s - 1 - pad:
        raise ValueError("backward-data reference needs a square filter")
    return _correlate(np.asarray(dy, np.float32), flipped_t, r, s, (h + r - 1, wd + s - 1), r - 1 - pad, stride, 1,
                      (h, wd), threads)


def conv_backward_filter(x: np.ndarray, dy: np.ndarray, rs: tuple[int, int], pad: int, stride: int,
                         threads: int = 1) -> np.ndarray:
    """dw (K,R,S,C) from x (N,H,W,C) and dy (N,P,Q,K): the gradient of conv_forward wrt w."""
    n, h, wd, c = x.shape
    _, p, q, k = dy.shape
    r, s = rs
    x = np.asarray(x, np.float32)
    dy = np.asarray(dy, np.float32)

    def work(span: tuple[int, int]) -> np.ndarray:
        start, end = span
        padded = _fill_padded(x[start:end], (end - start, h + 2 * pad, wd + 2 * pad, c), pad, 1)
        cols = _im2col(padded, r, s, p, q, stride)
        return dy[start:end].reshape(-1, k).T @ cols

    partials = _parallel(threads, work, _chunks(n, threads, p * q * r * s * c * 4))
    total = partials[0].copy()
    for partial in partials[1:]:
        total += partial
    return total.reshape(k, r, s, c)


def lstm_forward(x: np.ndarray, w: np.ndarray, rw: np.ndarray, bias: np.ndarray, threads: int = 1) -> np.ndarray:
    """y (T,B,H) of a one-layer LSTM from x (T,B,I), input weights w (4H,I), recurrent weights
    rw (4H,H) and bias (4H,), gates in cuDNN's (and PyTorch's) order i, f, g, o; h0 = c0 = 0.
    i,f,o = σ(·), g = tanh(·), c' = f·c + i·g, h' = o·tanh(c')."""
    t_steps, batch, features = x.shape
    hidden = rw.shape[1]
    blocks = max(1, min(threads, hidden // 8 or 1))
    edges = [round(b * hidden / blocks) for b in range(blocks + 1)]
    x2d = np.ascontiguousarray(x.reshape(t_steps * batch, features), dtype=np.float32)
    y = np.empty((t_steps, batch, hidden), dtype=np.float32)
    barrier = threading.Barrier(blocks) if blocks > 1 else None
    errors: list[BaseException] = []

    def rows(lo: int, hi: int) -> np.ndarray:
        return np.concatenate([np.arange(g * hidden + lo, g * hidden + hi) for g in range(4)])

    def work(block: int) -> None:
        lo, hi = edges[block], edges[block + 1]
        j = hi - lo
        try:
            index = rows(lo, hi)
            w_t = np.ascontiguousarray(w[index].T, dtype=np.float32)  # (I, 4j)
            r_t = np.ascontiguousarray(rw[index].T, dtype=np.float32)  # (H, 4j)
            projected = x2d @ w_t
            projected += bias[index].astype(np.float32)
            projected = projected.reshape(t_steps, batch, 4 * j)
            cell = np.zeros((batch, j), dtype=np.float32)
            gates = np.empty((batch, 4 * j), dtype=np.float32)
            scratch = np.empty((batch, j), dtype=np.float32)
            for step in range(t_steps):
                if step:
                    np.matmul(y[step - 1], r_t, out=gates)
                    gates += projected[step]
                else:
                    gates[:] = projected[step]
                # sigmoid(z) = 0.5·tanh(z/2) + 0.5 on i, f (and o below); tanh on g
                sig = gates[:, :2 * j]
                sig *= 0.5
                np.tanh(sig, out=sig)
                sig *= 0.5
                sig += 0.5
                out_gate = gates[:, 3 * j:]
                out_gate *= 0.5
                np.tanh(out_gate, out=out_gate)
                out_gate *= 0.5
                out_gate += 0.5
                candidate = gates[:, 2 * j:3 * j]
                np.tanh(candidate, out=candidate)
                cell *= gates[:, j:2 * j]
                np.multiply(gates[:, :j], candidate, out=scratch)
                cell += scratch
                np.tanh(cell, out=scratch)
                np.multiply(out_gate, scratch, out=y[step, :, lo:hi])
                if barrier is not None:
                    barrier.wait()
        except BaseException as error:  # noqa: BLE001 - handed to the caller below
            errors.append(error)
            if barrier is not None:
                barrier.abort()

    if blocks == 1:
        work(0)
    else:
        # one thread per block for the whole sequence: a dedicated pool, so that blocks
        # never wait for a worker that another task holds
        with ThreadPoolExecutor(max_workers=blocks, thread_name_prefix="cudnn-doctor-lstm") as pool:
            list(pool.map(work, range(blocks)))
    real = [e for e in errors if not isinstance(e, threading.BrokenBarrierError)]
    if real or errors:
        raise (real or errors)[0]
    return y


def nchw_to_nhwc(array: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(array.transpose(0, 2, 3, 1))


def nhwc_to_nchw(array: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(array.transpose(0, 3, 1, 2))


def scaled_error(result: np.ndarray, reference: np.ndarray) -> float:
    """max|result - reference| / max|reference|, in float64; inf for NaN or a shape mismatch."""
    if result.shape != reference.shape:
        return float("inf")
    result64 = np.asarray(result, dtype=np.float64)
    reference64 = np.asarray(reference, dtype=np.float64)
    if not np.all(np.isfinite(result64)):
        return float("inf")
    scale = float(np.max(np.abs(reference64))) or 1.0
    return float(np.max(np.abs(result64 - reference64))) / scale


def to_bfloat16_bits(values: np.ndarray) -> np.ndarray:
    """float32 -> bfloat16 bit patterns (uint16), rounding to nearest even."""
    bits = np.ascontiguousarray(values, dtype=np.float32).view(np.uint32)
    rounded = bits + 0x7FFF + ((bits >> 16) & 1)
    return (rounded >> 16).astype(np.uint16)


def from_bfloat16_bits(bits: np.ndarray) -> np.ndarray:
    return (np.asarray(bits, dtype=np.uint16).astype(np.uint32) << 16).view(np.float32)
