"""The CPU baseline of `cudnn-doctor bench` (compiled, and NumPy alone) against PyTorch's CPU path
(NCHW and channels-last convolutions; nn.LSTM), same machine, same thread count. Prints markdown
table rows.

    PYTHONPATH=$PWD python3 benchmarks/bench_cpu_conv.py [--repeats N] [--rounds N]

Each side runs in its own process (a thread pool left spinning by one side, OpenMP's or
OpenBLAS's, would otherwise slow the next), with OPENBLAS_NUM_THREADS=1 for ours as in the
bench child. The sides run in turn, three rounds, and each row keeps its best median: the
machines are shared VMs where a slow spell of several seconds is common. Both sides compute the same LSTM from the same weights; the script checks they agree.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from typing import Any

import numpy as np
from _timing import median_ms  # noqa: E402  (benchmarks/ is the script folder)

SHAPES = {"small": (32, 32, 32, 32), "medium": (32, 64, 56, 64), "large": (64, 256, 14, 256)}  # N, C, H=W, K; 3x3
LSTMS = {"small": (50, 32, 512), "medium": (100, 64, 512), "large": (100, 64, 1024)}  # seq, batch, input = hidden
PASSES = ("fwd", "bwd-data", "bwd-filter")
SIDES = ("compiled", "numpy", "torch", "torch-cl")


def _data(name: str, kind: str) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(0)
    if kind == "conv":
        n, c, h, k = SHAPES[name]
        return {"x": rng.standard_normal((n, h, h, c)).astype(np.float32),
                "w": rng.standard_normal((k, 3, 3, c)).astype(np.float32),
                "dy": rng.standard_normal((n, h, h, k)).astype(np.float32)}
    seq, batch, hidden = LSTMS[name]
    bound = hidden ** -0.5  # nn.LSTM's initialisation range
    return {"x": rng.uniform(-1, 1, (seq, batch, hidden)).astype(np.float32),
            "w": rng.uniform(-bound, bound, (4 * hidden, hidden)).astype(np.float32),
            "r": rng.uniform(-bound, bound, (4 * hidden, hidden)).astype(np.float32),
            "bias": rng.uniform(-bound, bound, 4 * hidden).astype(np.float32)}


def _ours(repeats: int, threads: int) -> dict[str, Any]:
    from cudnn_doctor.bench import compiled
    from cudnn_doctor.bench import reference as ref

    kernels = compiled.get()
    times: dict[str, Any] = {"baseline": kernels.description if kernels else f"NumPy ({compiled.reason()})"}
    for name in SHAPES:
        d = _data(name, "conv")
        h = d["x"].shape[1]
        calls = (lambda: ref.conv_forward(d["x"], d["w"], 1, 1, threads),  # noqa: B023 - called at once
                 lambda: ref.conv_backward_data(d["dy"], d["w"], 1, 1, (h, h), threads),  # noqa: B023
                 lambda: ref.conv_backward_filter(d["x"], d["dy"], (3, 3), 1, 1, threads))  # noqa: B023
        for label, call in zip(PASSES, calls, strict=True):
            times[f"{name} conv-{label}"] = median_ms(call, repeats)
    for name in LSTMS:
        d = _data(name, "lstm")
        packed = ref.LstmWeights.pack(d["w"], d["r"], d["bias"])  # once, as nn.LSTM holds its weights
        times[f"{name} lstm-fwd"] = median_ms(lambda: ref.lstm_forward(d["x"], packed, threads), repeats)  # noqa: B023
        np.save(f"{os.environ['BENCH_OUT']}-{name}.npy", ref.lstm_forward(d["x"], packed, threads))
    return times


def _torch(repeats: int, threads: int, channels_last: bool) -> dict[str, Any]:
    import torch

    torch.set_num_threads(threads)
    times: dict[str, Any] = {"baseline": f"PyTorch {torch.__version__}"}
    args = ([1, 1], [1, 1], [1, 1], False, [0, 0], 1)
    backward = torch.ops.aten.convolution_backward
    with torch.no_grad():
        for name in SHAPES:
            x, w, dy = (torch.from_numpy(a).permute(0, 3, 1, 2).contiguous() for a in _data(name, "conv").values())
            if channels_last:
                x, w, dy = (a.to(memory_format=torch.channels_last) for a in (x, w, dy))
            calls = (lambda: torch.nn.functional.conv2d(x, w, padding=1),  # noqa: B023 - called at once
                     lambda: backward(dy, x, w, None, *args, [True, False, False]),  # noqa: B023
                     lambda: backward(dy, x, w, None, *args, [False, True, False]))  # noqa: B023
            for label, call in zip(PASSES, calls, strict=True):
                times[f"{name} conv-{label}"] = median_ms(call, repeats)
        if channels_last:
            return times
        for name in LSTMS:
            d = _data(name, "lstm")
            hidden = d["r"].shape[1]
            lstm = torch.nn.LSTM(hidden, hidden).eval()
            lstm.weight_ih_l0.copy_(torch.from_numpy(d["w"]))
            lstm.weight_hh_l0.copy_(torch.from_numpy(d["r"]))
            lstm.bias_ih_l0.copy_(torch.from_numpy(d["bias"]))
            lstm.bias_hh_l0.zero_()
            inputs = torch.from_numpy(d["x"])
            times[f"{name} lstm-fwd"] = median_ms(lambda: lstm(inputs), repeats)  # noqa: B023
            np.save(f"{os.environ['BENCH_OUT']}-{name}.npy", lstm(inputs)[0].numpy())
    return times


def _side(side: str, repeats: int, threads: int) -> dict[str, Any]:
    """Run one side in a fresh process; its times in ms by workload."""
    env = dict(os.environ, BENCH_OUT=f"/tmp/bench-cpu-{os.getpid()}-{side}")
    if side in ("compiled", "numpy"):
        env.update(OPENBLAS_NUM_THREADS="1", CUDNN_DOCTOR_CPU_BASELINE=side)
    done = subprocess.run([sys.executable, __file__, "--side", side, "--repeats", str(repeats), "--threads", str(threads)],
                          env=env, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"the {side} side failed:\n{done.stderr}")
    return dict(json.loads(done.stdout.strip().splitlines()[-1]), out=env["BENCH_OUT"])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--side", choices=SIDES)
    parser.add_argument("--repeats", type=int, default=9)
    parser.add_argument("--threads", type=int, default=len(os.sched_getaffinity(0)))
    parser.add_argument("--rounds", type=int, default=3, help="each side this many times, in turn; the best median")
    options = parser.parse_args()
    if options.side:
        if options.side.startswith("torch"):
            print(json.dumps(_torch(options.repeats, options.threads, options.side == "torch-cl")))
        else:
            print(json.dumps(_ours(options.repeats, options.threads)))
        return
    results: dict[str, dict[str, Any]] = {}
    for _ in range(options.rounds):  # in turn, so that a slow spell of a shared machine hits every side
        for side in SIDES:
            times = _side(side, options.repeats, options.threads)
            best = results.setdefault(side, times)
            for key, value in times.items():
                if isinstance(value, float):
                    best[key] = min(best[key], value)
    for side in SIDES:
        print(f"{side}: {results[side]['baseline']}")
    print("| shape | workload | threads | ours ms | NumPy-only ms | torch ms | torch channels-last ms | "
          "ours/torch | ours/channels-last |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    ours, numpy_only, plain, last = (results[side] for side in SIDES)
    for key in (k for k in ours if k not in ("baseline", "out")):
        name, workload = key.split(" ")
        conv = workload.startswith("conv")
        # throughput ratio: the same work, so time theirs / time ours
        print(f"| {name} | {workload} | {options.threads} | {ours[key]:.2f} | {numpy_only[key]:.2f} | {plain[key]:.2f} | "
              + (f"{last[key]:.2f} |" if conv else "- |")
              + f" {plain[key] / ours[key]:.2f} | " + (f"{last[key] / ours[key]:.2f} |" if conv else "- |"))
    for name in LSTMS:
        a, b = np.load(f"{ours['out']}-{name}.npy"), np.load(f"{plain['out']}-{name}.npy")
        print(f"LSTM {name}: max |ours - torch| / max |torch| = {float(np.abs(a - b).max() / np.abs(b).max()):.1e}")


if __name__ == "__main__":
    main()
