"""The CPU reference and baseline: convolution and LSTM in NumPy, float32, NHWC.

Fair, not a straw man: the work goes to BLAS as a few large matrix products, and the
parts NumPy runs on one core (the im2col copies, the LSTM gates) are spread over a pool
of threads, each working on its own images or its own hidden units with a
single-threaded BLAS (the child sets OPENBLAS_NUM_THREADS=1; NumPy releases the GIL in
copies, ufuncs and matmul). This is how oneDNN, PyTorch's CPU path, parallelises too.

- Convolution: im2col per image (per block of output rows for very large images), where each row of the im2col matrix is R contiguous runs of S·C values read through a
  strided view (no gather), then a GEMM against the filters laid out (R·S·C, K). Backward-data is a forward convolution of the (dilated, padded)
  output gradient with the flipped, transposed filters; backward-filter is
  dYᵀ (K × N·P·Q) times the im2col matrix of X.
- LSTM: the input projection of all steps in one GEMM, then per step the recurrent GEMM (on
  all BLAS threads) and the gates, with one tanh over all four gates.
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


_BLAS_SETTERS: list[Callable[[int], Any]] | None = None


def _blas_setters() -> list[Callable[[int], Any]]:
    """The thread-count setters of the BLAS libraries loaded in this process (OpenBLAS under its
    various symbol prefixes, MKL); found once through /proc/self/maps."""
    global _BLAS_SETTERS
    if _BLAS_SETTERS is None:
        import ctypes

        setters: list[Callable[[int], Any]] = []
        paths: list[str] = []
        try:
            with open("/proc/self/maps") as maps:
                for line in maps:
                    path = line.split()[-1] if line.strip() else ""
                    if ("blas" in path.lower() or "mkl_rt" in path) and path not in paths and path.startswith("/"):
                        paths.append(path)
        except OSError:
            pass
        for path in paths:
            try:
                library = ctypes.CDLL(path)
            except OSError:
                continue
            for name in ("openblas_set_num_threads", "openblas_set_num_threads64_", "scipy_openblas_set_num_threads",
                         "scipy_openblas_set_num_threads64_", "MKL_Set_Num_Threads"):
                function = getattr(library, name, None)
                if function is not None:
                    function.argtypes, function.restype = [ctypes.c_int], None
                    setters.append(function)
                    break
        _BLAS_SETTERS = setters
    return _BLAS_SETTERS


class blas_threads:  # noqa: N801 - used like a function: `with blas_threads(4):`
    """Run the block with N BLAS threads (where the BLAS lets us set it), then go back to one:
    the bench child runs NumPy with OPENBLAS_NUM_THREADS=1 and parallelises itself."""

    def __init__(self, count: int) -> None:
        self.count = count

    def __enter__(self) -> None:
        for setter in _blas_setters():
            setter(self.count)

    def __exit__(self, *exc: object) -> None:
        if self.count != 1:
            for setter in _blas_setters():
                setter(1)


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


def _tasks(n: int, p: int, row_bytes: int, limit_bytes: int = 16 << 20) -> list[tuple[int, int, int]]:
    """(image, first output row, end row) blocks whose im2col rows fit in LIMIT_BYTES: whole
    images for the built-in shapes (blocks of ~1 MB, to stay in a core's L2, measured twice as
    slow on the H100 machine's Xeon: the GEMMs get too small for BLAS)."""
    rows = max(1, min(p, limit_bytes // max(1, row_bytes)))
    return [(image, row, min(p, row + rows)) for image in range(n) for row in range(0, p, rows)]


def _spread(threads: int, function: Callable[[list[Any]], Any], tasks: list[Any]) -> list[Any]:
    """FUNCTION over THREADS contiguous groups of TASKS (static schedule: one group a thread)."""
    groups = max(1, min(threads, len(tasks)))
    bounds = [round(g * len(tasks) / groups) for g in range(groups + 1)]
    return _parallel(threads, function, [tasks[bounds[g]:bounds[g + 1]] for g in range(groups)])


def _im2col(slab: np.ndarray, r: int, s: int, p: int, q: int, stride: int) -> np.ndarray:
    """The (P·Q, R·S·C) im2col matrix of a padded (rows, Wp, C) slab, in a per-thread buffer:
    each row is R contiguous runs of S·C values, read through a strided view."""
    _, wp, c = slab.shape
    item = slab.itemsize
    view = as_strided(slab, shape=(p, q, r, s * c), strides=(stride * wp * c * item, stride * c * item,
                                                             wp * c * item, item), writeable=False)
    cols = _buffer("cols", (p, q, r, s * c))
    np.copyto(cols, view)
    return cols.reshape(p * q, r * s * c)


def _slab(source: np.ndarray, rows: tuple[int, int], width: int, offset: int, dilation: int) -> np.ndarray:
    """Rows [a, b) of the virtual buffer in which SOURCE (h, w, c) sits at OFFSET, DILATION-1
    zeros between its elements, zeros around."""
    a, b = rows
    h, w, c = source.shape
    slab = _buffer("slab", (b - a, width, c), zero=True)
    first = max(0, -(-(a - offset) // dilation))
    last = min(h - 1, (b - 1 - offset) // dilation)
    if first <= last:
        top = offset + first * dilation - a
        slab[top:top + (last - first) * dilation + 1:dilation, offset:offset + (w - 1) * dilation + 1:dilation, :] = \
            source[first:last + 1]
    return slab


def _correlate(source: np.ndarray, filters_t: np.ndarray, r: int, s: int, width: int, offset: int, dilation: int,
               stride: int, out_hw: tuple[int, int], threads: int) -> np.ndarray:
    """out[n,p,q,:] = sum_{i,j,c} buf[n, p·stride+i, q·stride+j, c] · filters_t[(i,j,c), :]."""
    n, c = source.shape[0], source.shape[3]
    k = filters_t.shape[1]
    p, q = out_hw
    out = np.empty((n, p, q, k), dtype=np.float32)

    def work(tasks: list[tuple[int, int, int]]) -> None:
        for image, row, end in tasks:
            slab = _slab(source[image], (row * stride, (end - 1) * stride + r), width, offset, dilation)
            cols = _im2col(slab, r, s, end - row, q, stride)
            np.matmul(cols, filters_t, out=out[image, row:end].reshape(-1, k))

    _spread(threads, work, _tasks(n, p, q * r * s * c * 4))
    return out


def conv_forward(x: np.ndarray, w: np.ndarray, pad: int, stride: int, threads: int = 1) -> np.ndarray:
    """y (N,P,Q,K) = cross-correlation of x (N,H,W,C) with w (K,R,S,C), float32."""
    n, h, wd, c = x.shape
    k, r, s, _ = w.shape
    p, q = (h + 2 * pad - r) // stride + 1, (wd + 2 * pad - s) // stride + 1
    filters_t = np.ascontiguousarray(w.reshape(k, r * s * c).T, dtype=np.float32)
    with blas_threads(1):
        return _correlate(np.asarray(x, np.float32), filters_t, r, s, wd + 2 * pad, pad, 1, stride, (p, q), threads)


def conv_backward_data(dy: np.ndarray, w: np.ndarray, pad: int, stride: int, hw: tuple[int, int],
                       threads: int = 1) -> np.ndarray:
    """dx (N,H,W,C) from dy (N,P,Q,K) and w (K,R,S,C): the gradient of conv_forward wrt x.
    It is a stride-1 correlation of dy, dilated by STRIDE and placed at R-1-PAD, with the
    flipped filters, channels swapped."""
    k, r, s, c = w.shape
    if pad > r - 1 or r != s:
        raise ValueError("the backward-data reference needs a square filter and pad <= filter size - 1")
    h, wd = hw
    flipped_t = np.ascontiguousarray(w[:, ::-1, ::-1, :].transpose(1, 2, 0, 3).reshape(r * s * k, c), dtype=np.float32)
    with blas_threads(1):
        return _correlate(np.asarray(dy, np.float32), flipped_t, r, s, wd + s - 1, r - 1 - pad, stride, 1, (h, wd),
                          threads)


def conv_backward_filter(x: np.ndarray, dy: np.ndarray, rs: tuple[int, int], pad: int, stride: int,
                         threads: int = 1) -> np.ndarray:
    """dw (K,R,S,C) from x (N,H,W,C) and dy (N,P,Q,K): the gradient of conv_forward wrt w."""
    n, h, wd, c = x.shape
    _, p, q, k = dy.shape
    r, s = rs
    x = np.asarray(x, np.float32)
    dy = np.asarray(dy, np.float32)

    def work(tasks: list[tuple[int, int, int]]) -> np.ndarray:
        total = np.zeros((k, r * s * c), dtype=np.float32)
        for image, row, end in tasks:
            slab = _slab(x[image], (row * stride, (end - 1) * stride + r), wd + 2 * pad, pad, 1)
            cols = _im2col(slab, r, s, end - row, q, stride)
            total += dy[image, row:end].reshape(-1, k).T @ cols
        return total

    with blas_threads(1):
        partials = _spread(threads, work, _tasks(n, p, q * r * s * c * 4))
    total = partials[0]
    for partial in partials[1:]:
        total += partial
    return total.reshape(k, r, s, c)


def lstm_forward(x: np.ndarray, w: np.ndarray, rw: np.ndarray, bias: np.ndarray, threads: int = 1) -> np.ndarray:
    """y (T,B,H) of a one-layer LSTM from x (T,B,I), input weights w (4H,I), recurrent weights
    rw (4H,H) and bias (4H,), gates in cuDNN's (and PyTorch's) order i, f, g, o; h0 = c0 = 0.
    i,f,o = σ(·), g = tanh(·), c' = f·c + i·g, h' = o·tanh(c').

    The step loop is inherently sequential and its pieces are small, so it runs in one Python
    thread with the threads inside BLAS. σ(z) = (tanh(z/2) + 1)/2: the rows of the i, f, o
    gates are halved up front, so one tanh over all four gates serves them all."""
    t_steps, batch, features = x.shape
    hidden = rw.shape[1]
    half = np.ones(4 * hidden, dtype=np.float32)
    half[:2 * hidden] = 0.5
    half[3 * hidden:] = 0.5
    w_t = np.ascontiguousarray((w * half[:, None]).T, dtype=np.float32)  # (I, 4H)
    r_t = np.ascontiguousarray((rw * half[:, None]).T, dtype=np.float32)  # (H, 4H)
    y = np.empty((t_steps, batch, hidden), dtype=np.float32)
    with blas_threads(threads):
        projected = np.ascontiguousarray(x.reshape(t_steps * batch, features), dtype=np.float32) @ w_t
        projected += bias.astype(np.float32) * half
        projected = projected.reshape(t_steps, batch, 4 * hidden)
        cell = np.zeros((batch, hidden), dtype=np.float32)
        gates = np.empty((batch, 4 * hidden), dtype=np.float32)
        first, second = np.empty_like(cell), np.empty_like(cell)
        ti, tf, tg, to = (gates[:, g * hidden:(g + 1) * hidden] for g in range(4))
        for step in range(t_steps):
            if step:
                np.matmul(y[step - 1], r_t, out=gates)
                gates += projected[step]
            else:
                gates[:] = projected[step]
            np.tanh(gates, out=gates)
            # c' = ((tf + 1)·c + (ti + 1)·g) / 2 ; h' = (to + 1)·tanh(c') / 2
            np.add(tf, 1.0, out=first)
            first *= cell
            np.add(ti, 1.0, out=second)
            second *= tg
            np.add(first, second, out=cell)
            cell *= 0.5
            np.tanh(cell, out=first)
            np.add(to, 1.0, out=second)
            second *= first
            np.multiply(second, 0.5, out=y[step])
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
