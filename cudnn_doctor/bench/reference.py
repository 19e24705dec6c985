"""The CPU reference and baseline: convolution and LSTM in NumPy, float32, NHWC.

Fair, not a straw man: the work goes to BLAS as a few large matrix products, and the
convolutions are spread over a pool of threads, each working on its own run of images with
a single-threaded BLAS (the child sets OPENBLAS_NUM_THREADS=1; NumPy releases the GIL in
copies, ufuncs and matmul), as oneDNN, PyTorch's CPU path, parallelises over images too.

- Convolution: the images are written once into a zero-padded buffer kept between calls;
  each worker copies the im2col matrix of a block of its images (several whole images, or
  rows of one large image) into its scratch, each row R contiguous runs of S·C values read
  through a strided view (no gather), then multiplies it by the filters laid out (R·S·C, K).
  Backward-data is a forward convolution of the (dilated, padded) output gradient with the
  flipped, transposed filters; backward-filter is dYᵀ (K × N·P·Q) times the im2col matrix
  of X, summed per worker, then over the workers.
- LSTM: the input projection of all steps in one GEMM, then per step the recurrent GEMM (on
  all BLAS threads, transposed: 4H rows for BLAS to share) and the gates, one tanh over all four.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.lib.stride_tricks import as_strided

from cudnn_doctor.bench import compiled

_POOLS: dict[int, ThreadPoolExecutor] = {}
_LOCAL = threading.local()


def baseline() -> str:
    """What computes the CPU baseline in this process: the compiled kernels, or NumPy and why."""
    kernels = compiled.get()
    if kernels is not None:
        return f"compiled with {kernels.description}"
    return f"NumPy ({compiled.reason() or 'the compiled kernels are not available'})"


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
        paths = compiled.blas_libraries()
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


def _parallel(threads: int, items: list[Any], function: Callable[[Any], Any]) -> list[Any]:
    if threads <= 1 or len(items) <= 1:
        return [function(item) for item in items]
    return list(_pool(threads).map(function, items))


def _scratch(size: int) -> np.ndarray:
    """This thread's flat float32 scratch of at least SIZE elements, reused between calls."""
    array = getattr(_LOCAL, "scratch", None)
    if array is None or array.size < size:
        array = _LOCAL.scratch = np.empty(size, dtype=np.float32)
    return array[:size]


_CACHE: dict[str, tuple[Any, np.ndarray]] = {}


def _cached(name: str, key: Any, shape: tuple[int, ...]) -> tuple[np.ndarray, bool]:
    """A zero-filled float32 array kept between calls of the same KEY (one per NAME), and whether
    it is new. Large scratch is kept because a fresh one costs a page fault per 4 KiB on first touch."""
    entry = _CACHE.get(name)
    if entry is not None and entry[0] == key:
        return entry[1], False
    _CACHE.pop(name, None)
    array = np.zeros(shape, dtype=np.float32)
    _CACHE[name] = (key, array)
    return array, True


# Measured on the 16-core H100 machine (benchmarks/README.md): in a VM a hand-over of the GIL costs
# tens of microseconds, so each worker takes one contiguous run of images and makes few, large NumPy
# calls; and a convolution gets one worker per FLOPS_PER_WORKER of work at most (the small
# convolution ran fastest on 8 of the 16 cores, the medium and large ones on all 16).
FLOPS_PER_WORKER = 64e6
BLOCK_BYTES = 8 << 20  # a worker's im2col block: several whole images, or rows of one large image
TASKS_PER_WORKER = 1  # image runs per worker, taken in turn; 2 and 4 (less waiting on a slow core) measured slower


def _workers(threads: int, images: int, flops: float) -> tuple[int, list[tuple[int, int]]]:
    """How many workers, and the contiguous image ranges they take in turn."""
    count = max(1, min(threads, images, int(flops // FLOPS_PER_WORKER)))
    tasks = min(images, count * TASKS_PER_WORKER)
    bounds = [round(g * images / tasks) for g in range(tasks + 1)]
    return count, [(bounds[g], bounds[g + 1]) for g in range(tasks)]


def _blocks(first: int, end: int, rows: int, row_bytes: int) -> list[tuple[int, int, int, int]]:
    """(first image, image count, first row, row count) blocks of images [FIRST, END) whose
    im2col fits in BLOCK_BYTES: runs of whole images, or runs of rows of one image."""
    image_bytes = rows * row_bytes
    if image_bytes <= BLOCK_BYTES:
        step = max(1, BLOCK_BYTES // image_bytes)
        return [(image, min(step, end - image), 0, rows) for image in range(first, end, step)]
    step = max(1, BLOCK_BYTES // row_bytes)
    return [(image, 1, row, min(step, rows - row)) for image in range(first, end) for row in range(0, rows, step)]


def _padded(source: np.ndarray, height: int, width: int, offset: int, dilation: int) -> tuple[np.ndarray, bool]:
    """The (n, HEIGHT, WIDTH, c) buffer in which each image of SOURCE sits at (OFFSET, OFFSET),
    DILATION-1 zeros between its elements, zeros around. Kept between calls: the zeros stay
    put, the workers write the images (_place)."""
    n, h, w, c = source.shape
    height = max(height, offset + (h - 1) * dilation + 1)
    width = max(width, offset + (w - 1) * dilation + 1)
    return _cached("padded", (n, height, width, c, h, w, offset, dilation), (n, height, width, c))


def _place(buffer: np.ndarray, source: np.ndarray, images: tuple[int, int], offset: int, dilation: int) -> None:
    a, b = images
    h, w = source.shape[1:3]
    buffer[a:b, offset:offset + (h - 1) * dilation + 1:dilation, offset:offset + (w - 1) * dilation + 1:dilation] = \
        source[a:b]


def _im2col(buffer: np.ndarray, block: tuple[int, int, int, int], r: int, s: int, q: int,
            stride: int) -> np.ndarray:
    """The (images·rows·Q, R·S·C) im2col matrix of a block of the padded BUFFER, in this thread's
    scratch: each row is R contiguous runs of S·C values, read through a strided view."""
    image, count, row, rows = block
    _, height, width, c = buffer.shape
    item = buffer.itemsize
    view = as_strided(buffer[image, row * stride:], shape=(count, rows, q, r, s * c),
                      strides=(height * width * c * item, stride * width * c * item, stride * c * item,
                               width * c * item, item), writeable=False)
    cols = _scratch(count * rows * q * r * s * c).reshape(count, rows, q, r, s * c)
    np.copyto(cols, view)
    return cols.reshape(count * rows * q, r * s * c)


def _correlate(source: np.ndarray, filters_t: np.ndarray, r: int, s: int, width: int, offset: int, dilation: int,
               stride: int, out_hw: tuple[int, int], threads: int) -> np.ndarray:
    """out[n,p,q,:] = sum_{i,j,c} buf[n, p·stride+i, q·stride+j, c] · filters_t[(i,j,c), :]."""
    n, c = source.shape[0], source.shape[3]
    k = filters_t.shape[1]
    p, q = out_hw
    out = np.empty((n, p, q, k), dtype=np.float32)
    buffer, _ = _padded(source, (p - 1) * stride + r, width, offset, dilation)

    def work(images: tuple[int, int]) -> None:
        _place(buffer, source, images, offset, dilation)
        for block in _blocks(*images, p, q * r * s * c * 4):
            image, count, row, rows = block
            np.matmul(_im2col(buffer, block, r, s, q, stride), filters_t,
                      out=out[image:image + count, row:row + rows].reshape(-1, k))

    _parallel(*_workers(threads, n, 2.0 * n * p * q * k * r * s * c), work)
    return out


def conv_forward(x: np.ndarray, w: np.ndarray, pad: int, stride: int, threads: int = 1) -> np.ndarray:
    """y (N,P,Q,K) = cross-correlation of x (N,H,W,C) with w (K,R,S,C), float32."""
    n, h, wd, c = x.shape
    k, r, s, _ = w.shape
    p, q = (h + 2 * pad - r) // stride + 1, (wd + 2 * pad - s) // stride + 1
    filters_t = np.ascontiguousarray(w.reshape(k, r * s * c).T, dtype=np.float32)
    kernels = compiled.get()
    with blas_threads(1):
        if kernels is not None:
            try:
                return kernels.conv_forward(x, filters_t, (r, s), (p, q), pad, stride, 1, threads)
            except compiled.Failed:
                pass
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
    kernels = compiled.get()
    with blas_threads(1):
        if kernels is not None:
            try:
                return kernels.conv_forward(dy, flipped_t, (r, s), (h, wd), r - 1 - pad, 1, stride, threads)
            except compiled.Failed:
                pass
        return _correlate(np.asarray(dy, np.float32), flipped_t, r, s, wd + s - 1, r - 1 - pad, stride, 1, (h, wd),
                          threads)


def conv_backward_filter(x: np.ndarray, dy: np.ndarray, rs: tuple[int, int], pad: int, stride: int,
                         threads: int = 1) -> np.ndarray:
    """dw (K,R,S,C) from x (N,H,W,C) and dy (N,P,Q,K): the gradient of conv_forward wrt w:
    dYᵀ (K × N·P·Q) times the im2col matrix of X, summed per worker, then over the workers."""
    n, h, wd, c = x.shape
    _, p, q, k = dy.shape
    r, s = rs
    x = np.asarray(x, np.float32)
    dy = np.asarray(dy, np.float32)
    kernels = compiled.get()
    if kernels is not None:
        try:
            with blas_threads(1):
                return kernels.conv_backward_filter(x, dy, rs, pad, stride, threads)
        except compiled.Failed:
            pass
    buffer, _ = _padded(x, (p - 1) * stride + r, wd + 2 * pad, pad, 1)

    def work(images: tuple[int, int]) -> np.ndarray:
        _place(buffer, x, images, pad, 1)
        total: np.ndarray | None = None
        for block in _blocks(*images, p, q * r * s * c * 4):
            image, count, row, rows = block
            cols = _im2col(buffer, block, r, s, q, stride)
            product = dy[image:image + count, row:row + rows].reshape(-1, k).T @ cols
            if total is None:
                total = product
            else:
                total += product
        assert total is not None
        return total

    with blas_threads(1):
        partials = _parallel(*_workers(threads, n, 2.0 * n * p * q * k * r * s * c), work)
    total = partials[0]
    for partial in partials[1:]:
        total += partial
    return total.reshape(k, r, s, c)


@dataclass(frozen=True)
class LstmWeights:
    """A one-layer LSTM's weights laid out for lstm_forward, once, as a framework packs them when
    it loads a model (and as the GPU side fills cuDNN's weight space before it times anything):
    gates reordered i, f, o, g so that the three sigmoids are one block, and their rows halved,
    because σ(z) = tanh(z/2)/2 + 1/2 lets one tanh serve all four gates."""

    input: np.ndarray  # (4H, I)
    recurrent: np.ndarray  # (4H, H)
    bias: np.ndarray  # (4H, 1)

    @classmethod
    def pack(cls, w: np.ndarray, rw: np.ndarray, bias: np.ndarray) -> LstmWeights:
        """From input weights w (4H,I), recurrent weights rw (4H,H) and bias (4H,), gates in
        cuDNN's (and PyTorch's) order i, f, g, o."""
        hidden = rw.shape[1]
        order = np.r_[0:2 * hidden, 3 * hidden:4 * hidden, 2 * hidden:3 * hidden]
        half = np.ones((4 * hidden, 1), dtype=np.float32)
        half[:3 * hidden] = 0.5
        return cls(np.ascontiguousarray(np.asarray(w, np.float32)[order] * half),
                   np.ascontiguousarray(np.asarray(rw, np.float32)[order] * half),
                   np.asarray(bias, np.float32)[order, None] * half)


def lstm_forward(x: np.ndarray, weights: LstmWeights, threads: int = 1) -> np.ndarray:
    """y (T,B,H) of a one-layer LSTM from x (T,B,I); h0 = c0 = 0.
    i,f,o = σ(·), g = tanh(·), c' = f·c + i·g, h' = o·tanh(c').

    The step loop is inherently sequential and its pieces are small, so it runs in one Python
    thread with the threads inside BLAS. It works transposed (gates as 4H × B), which gives
    BLAS 4H rows to share out instead of B (measured faster on 16 threads); the input projection
    of all steps is one GEMM up front. The result is a transposed view of the (T, H, B) states."""
    kernels = compiled.get()
    if kernels is not None:
        try:
            with blas_threads(1):
                states = kernels.lstm_forward(x, weights.input, weights.recurrent, weights.bias, threads)
            return states.transpose(0, 2, 1)
        except compiled.Failed:
            pass
    t_steps, batch, features = x.shape
    hidden = weights.recurrent.shape[1]
    inputs = np.ascontiguousarray(x, dtype=np.float32).reshape(t_steps * batch, features)
    projected, _ = _cached("lstm-projection", (4 * hidden, t_steps * batch), (4 * hidden, t_steps * batch))
    states = np.empty((t_steps, hidden, batch), dtype=np.float32)
    gates = np.empty((4 * hidden, batch), dtype=np.float32)
    cell = np.zeros((hidden, batch), dtype=np.float32)
    scratch = np.empty_like(cell)
    sigmoids, candidate = gates[:3 * hidden], gates[3 * hidden:]
    gate_i, gate_f, gate_o = gates[:hidden], gates[hidden:2 * hidden], gates[2 * hidden:3 * hidden]
    with blas_threads(threads):
        np.matmul(weights.input, inputs.T, out=projected)  # BLAS reads the transposed operand in place
        projected += weights.bias
        for step in range(t_steps):
            if step:
                np.matmul(weights.recurrent, states[step - 1], out=gates)
                gates += projected[:, step * batch:(step + 1) * batch]
            else:
                gates[:] = projected[:, :batch]
            np.tanh(gates, out=gates)
            sigmoids *= 0.5
            sigmoids += 0.5
            cell *= gate_f
            np.multiply(gate_i, candidate, out=scratch)
            cell += scratch
            np.tanh(cell, out=scratch)
            np.multiply(gate_o, scratch, out=states[step])
    return states.transpose(0, 2, 1)


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
