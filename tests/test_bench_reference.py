"""The CPU reference of `cudnn-doctor bench` against hand-computed results and naive loops, in both
of its implementations: the compiled kernels (built here with the machine's gcc) and NumPy alone."""

from __future__ import annotations

import numpy as np
import pytest

from cudnn_doctor.bench import compiled
from cudnn_doctor.bench import reference as ref
from cudnn_doctor.bench.workloads import (
    CONV_SHAPES,
    LSTM_SHAPES,
    ConvShape,
    LstmShape,
    conv_flops,
    lstm_flops,
    tolerance,
)


@pytest.fixture(scope="module")
def kernel_cache(tmp_path_factory):
    return tmp_path_factory.mktemp("cache")


@pytest.fixture(params=["compiled", "numpy"])
def baseline(request, monkeypatch, kernel_cache):
    """Each test runs with each implementation; "compiled" fails the test where it cannot build."""
    monkeypatch.setenv("CUDNN_DOCTOR_CACHE_DIR", str(kernel_cache))
    monkeypatch.setenv(compiled.ENV, request.param)
    assert ref.baseline().startswith("compiled with" if request.param == "compiled" else "NumPy")
    return request.param


def naive_conv(x, w, pad, stride):
    """Forward output and a function giving (dx, dw) for an output gradient, by plain loops (float64)."""
    n, h, wd, c = x.shape
    k, r, s, _ = w.shape
    p, q = (h + 2 * pad - r) // stride + 1, (wd + 2 * pad - s) // stride + 1
    xp = np.pad(x.astype(np.float64), ((0, 0), (pad, pad), (pad, pad), (0, 0)))
    y = np.zeros((n, p, q, k))
    for i in range(p):
        for j in range(q):
            y[:, i, j, :] = np.einsum("nrsc,krsc->nk", xp[:, i * stride:i * stride + r, j * stride:j * stride + s], w)

    def gradients(dy):
        dxp, dw = np.zeros_like(xp), np.zeros(w.shape)
        for i in range(p):
            for j in range(q):
                window = (slice(None), slice(i * stride, i * stride + r), slice(j * stride, j * stride + s))
                dxp[window] += np.einsum("nk,krsc->nrsc", dy[:, i, j, :], w)
                dw += np.einsum("nk,nrsc->krsc", dy[:, i, j, :], xp[window])
        return dxp[:, pad:pad + h, pad:pad + wd, :], dw

    return y, gradients


@pytest.mark.parametrize("n,h,w,c,k,r,pad,stride", [
    (2, 5, 6, 3, 4, 3, 1, 1), (3, 7, 7, 2, 5, 3, 1, 2), (2, 6, 5, 3, 2, 3, 0, 1), (1, 8, 8, 4, 3, 5, 2, 2),
    (2, 4, 4, 2, 3, 1, 0, 1),
])
@pytest.mark.parametrize("threads,split", [(1, "default"), (3, "default"), (3, "rows"), (2, "images")])
def test_convolution_matches_naive_loops(n, h, w, c, k, r, pad, stride, threads, split, monkeypatch, baseline):
    """SPLIT forces each way the work is cut. NumPy: a worker per image run, blocks of rows of
    one image, blocks of several whole images. Compiled: a GEMM per output pixel, or one GEMM
    for a thread's whole share (the built-in shapes are too big to test here)."""
    if split != "default":
        monkeypatch.setattr(ref, "FLOPS_PER_WORKER", 1.0)
        monkeypatch.setattr(ref, "BLOCK_BYTES", 1 if split == "rows" else 1 << 20)
        monkeypatch.setattr(compiled, "BLOCK_BYTES", 1 if split == "rows" else 1 << 30)
        monkeypatch.setattr(compiled, "BLOCK_PIXELS", 1)
    rng = np.random.default_rng(n * 100 + h * 10 + stride)
    x = rng.uniform(-1, 1, (n, h, w, c)).astype(np.float32)
    filters = rng.uniform(-1, 1, (k, r, r, c)).astype(np.float32)
    expected, gradients = naive_conv(x, filters, pad, stride)
    y = ref.conv_forward(x, filters, pad, stride, threads)
    dy = rng.uniform(-1, 1, y.shape).astype(np.float32)
    dx_expected, dw_expected = gradients(dy.astype(np.float64))
    assert ref.scaled_error(y, expected) < 1e-6
    assert ref.scaled_error(ref.conv_backward_data(dy, filters, pad, stride, (h, w), threads), dx_expected) < 1e-6
    assert ref.scaled_error(ref.conv_backward_filter(x, dy, (r, r), pad, stride, threads), dw_expected) < 1e-6


def test_convolution_hand_computed(baseline):
    # a 3x3 image 1..9, a 3x3 filter of ones, pad 1: each output is the sum of its neighbourhood
    x = np.arange(1, 10, dtype=np.float32).reshape(1, 3, 3, 1)
    ones = np.ones((1, 3, 3, 1), dtype=np.float32)
    y = ref.conv_forward(x, ones, pad=1, stride=1)
    assert y[0, :, :, 0].tolist() == [[12, 21, 16], [27, 45, 33], [24, 39, 28]]
    # the gradient wrt the filter of sum(y) is, per tap, the sum of the input the tap sees
    dw = ref.conv_backward_filter(x, np.ones_like(y), (3, 3), pad=1, stride=1)
    assert dw[0, :, :, 0].tolist() == [[12, 21, 16], [27, 45, 33], [24, 39, 28]]
    # and wrt the input: how many outputs each pixel feeds (4 at corners, 6 at edges, 9 inside)
    dx = ref.conv_backward_data(np.ones_like(y), ones, pad=1, stride=1, hw=(3, 3))
    assert dx[0, :, :, 0].tolist() == [[4, 6, 4], [6, 9, 6], [4, 6, 4]]


def naive_lstm(x, w, r, b):
    steps, batch, _ = x.shape
    hidden = r.shape[1]
    h, c, ys = np.zeros((batch, hidden)), np.zeros((batch, hidden)), []

    def sigmoid(z):
        return 1 / (1 + np.exp(-z))

    for t in range(steps):
        z = x[t].astype(np.float64) @ w.T + h @ r.T + b
        i, f, g, o = (z[:, k * hidden:(k + 1) * hidden] for k in range(4))
        c = sigmoid(f) * c + sigmoid(i) * np.tanh(g)
        h = sigmoid(o) * np.tanh(c)
        ys.append(h)
    return np.stack(ys)


@pytest.mark.parametrize("threads", [1, 2, 3, 8])  # 3: shares of 1, 1 and 2 units; 8: more threads than units
def test_lstm_matches_naive_loop(threads, baseline):
    rng = np.random.default_rng(7)
    steps, batch, features, hidden = 9, 3, 5, 4
    x = rng.uniform(-1, 1, (steps, batch, features)).astype(np.float32)
    w = rng.uniform(-0.7, 0.7, (4 * hidden, features)).astype(np.float32)
    r = rng.uniform(-0.7, 0.7, (4 * hidden, hidden)).astype(np.float32)
    b = rng.uniform(-0.7, 0.7, 4 * hidden).astype(np.float32)
    assert ref.scaled_error(ref.lstm_forward(x, ref.LstmWeights.pack(w, r, b), threads), naive_lstm(x, w, r, b)) < 1e-6


def test_lstm_hand_computed_single_unit(baseline):
    # one unit, one step, zero weights but a bias: i = f = o = σ(0) = 1/2, g = tanh(0) = 0 -> h = 0;
    # with g's bias 1: c = tanh(1)/2, h = tanh(c)/2
    x = np.zeros((1, 1, 1), dtype=np.float32)
    zeros = np.zeros((4, 1), dtype=np.float32)
    bias = np.array([0, 0, 1, 0], dtype=np.float32)
    h = ref.lstm_forward(x, ref.LstmWeights.pack(zeros, zeros, bias))[0, 0, 0]
    assert h == pytest.approx(np.tanh(np.tanh(1.0) / 2) / 2, rel=1e-6)


def test_scaled_error_treats_nan_and_shape_mismatch_as_failure():
    reference = np.ones((2, 2), dtype=np.float32)
    assert ref.scaled_error(reference * 1.001, reference) == pytest.approx(1e-3, rel=1e-3)
    assert ref.scaled_error(np.full((2, 2), np.nan), reference) == float("inf")
    assert ref.scaled_error(np.ones((2, 3)), reference) == float("inf")


def test_bfloat16_rounding_round_trips():
    values = np.array([1.0, -2.5, 3.140625, 1.0 + 2 ** -9], dtype=np.float32)
    back = ref.from_bfloat16_bits(ref.to_bfloat16_bits(values))
    assert back[:3].tolist() == [1.0, -2.5, 3.140625]
    assert back[3] == 1.0  # 1 + 2^-9 is halfway between bf16 neighbours: ties to even


def test_flop_counts():
    shape = ConvShape("t", n=2, c=3, h=4, w=4, k=5, r=3, s=3)  # pad 1: P = Q = 4
    assert conv_flops(shape) == 2 * 2 * 5 * 3 * 3 * 3 * 4 * 4
    assert conv_flops(CONV_SHAPES["medium"]) == 2 * 32 * 64 * 64 * 9 * 56 * 56  # 3.70 GFLOP
    assert lstm_flops(LstmShape("t", seq=10, batch=2, input=3, hidden=4)) == 2 * 10 * 2 * 4 * 4 * (3 + 4)
    assert lstm_flops(LSTM_SHAPES["medium"]) == 2 * 100 * 64 * 4 * 512 * 1024


def test_tolerances_follow_the_precision():
    for workload in ("conv-fwd", "lstm-fwd"):
        assert tolerance(workload, "fp32") < tolerance(workload, "tf32") <= tolerance(workload, "bf16")
        assert tolerance(workload, "fp16") < tolerance(workload, "bf16")
    assert tolerance("lstm-fwd", "bf16") > tolerance("conv-fwd", "bf16")
    # fp32 must catch TF32 sneaking in (about 1e-3 of the scale)
    assert tolerance("conv-fwd", "fp32") < 1e-3
