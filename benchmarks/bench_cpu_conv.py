"""The NumPy CPU convolutions and LSTM of `cudnn-doctor bench` against PyTorch's CPU path (NCHW
and channels-last; nn.LSTM), same machine, same thread count. Prints markdown table rows.

    OPENBLAS_NUM_THREADS=1 PYTHONPATH=$PWD python3 benchmarks/bench_cpu_conv.py
(OPENBLAS_NUM_THREADS=1 as in the bench child: the reference runs its own threads.)
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np
import torch
from _timing import median_ms  # noqa: E402  (benchmarks/ is the script folder)

from cudnn_doctor.bench import reference as ref

SHAPES = {"small": (32, 32, 32, 32), "medium": (32, 64, 56, 64), "large": (64, 256, 14, 256)}  # N, C, H=W, K; 3x3
LSTMS = {"small": (50, 32, 512), "medium": (100, 64, 512), "large": (100, 64, 1024)}  # seq, batch, input = hidden


def torch_times(x: Any, w: Any, dy: Any) -> list[float]:
    args = ([1, 1], [1, 1], [1, 1], False, [0, 0], 1)
    backward = torch.ops.aten.convolution_backward
    return [median_ms(lambda: torch.nn.functional.conv2d(x, w, padding=1)),
            median_ms(lambda: backward(dy, x, w, None, *args, [True, False, False])),
            median_ms(lambda: backward(dy, x, w, None, *args, [False, True, False]))]


def main() -> None:
    threads = len(os.sched_getaffinity(0))
    torch.set_num_threads(threads)
    rng = np.random.default_rng(0)
    for name, (n, c, h, k) in SHAPES.items():
        x = rng.standard_normal((n, h, h, c)).astype(np.float32)
        w = rng.standard_normal((k, 3, 3, c)).astype(np.float32)
        dy = rng.standard_normal((n, h, h, k)).astype(np.float32)
        ours = [median_ms(lambda: ref.conv_forward(x, w, 1, 1, threads)),  # noqa: B023 - called at once
                median_ms(lambda: ref.conv_backward_data(dy, w, 1, 1, (h, h), threads)),  # noqa: B023
                median_ms(lambda: ref.conv_backward_filter(x, dy, (3, 3), 1, 1, threads))]  # noqa: B023
        nchw = [torch.from_numpy(a).permute(0, 3, 1, 2).contiguous() for a in (x, w, dy)]
        with torch.no_grad():
            plain = torch_times(*nchw)
            last = torch_times(*(a.to(memory_format=torch.channels_last) for a in nchw))
        for index, label in enumerate(("fwd", "bwd-data", "bwd-filter")):
            print(f"| {name} | conv-{label} | {threads} | {ours[index]:.1f} | {plain[index]:.1f} | {last[index]:.1f} | "
                  f"{plain[index] / ours[index]:.2f} | {last[index] / ours[index]:.2f} |", flush=True)
    for name, (seq, batch, hidden) in LSTMS.items():
        lstm = torch.nn.LSTM(hidden, hidden).eval()
        inputs = torch.from_numpy(rng.uniform(-1, 1, (seq, batch, hidden)).astype(np.float32))
        w, r = lstm.weight_ih_l0.detach().numpy(), lstm.weight_hh_l0.detach().numpy()
        bias = (lstm.bias_ih_l0 + lstm.bias_hh_l0).detach().numpy()
        packed = ref.LstmWeights.pack(w, r, bias)  # once, as nn.LSTM holds its weights
        ours_ms = median_ms(lambda: ref.lstm_forward(inputs.numpy(), packed, threads))  # noqa: B023
        with torch.no_grad():
            theirs_ms = median_ms(lambda: lstm(inputs))  # noqa: B023
            error = ref.scaled_error(ref.lstm_forward(inputs.numpy(), packed, threads), lstm(inputs)[0].numpy())
        print(f"| {name} | lstm-fwd {seq}x{batch}x{hidden} | {threads} | {ours_ms:.1f} | {theirs_ms:.1f} | - | "
              f"{theirs_ms / ours_ms:.2f} | - | (max error against torch {error:.1e}) |", flush=True)


if __name__ == "__main__":
    main()
