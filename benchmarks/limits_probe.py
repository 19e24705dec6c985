"""Where real PyTorch and JAX stop working under a process limit: open files (ulimit -n) and locked memory (ulimit -l).

compat/process_env.toml's RLIMIT_NOFILE row said JAX aborts under `ulimit -n 64` and works under 1024, with the
minimum between them not measured; RLIMIT_MEMLOCK had no row, nothing having been seen to fail. This measures both
on the GPU machine, each judge in a fresh bash with the limit set (`ulimit -S`), the judges of gpu_scenarios.py (a
cuDNN convolution and LSTM in torch, a convolution in JAX) plus pinned host memory (torch's pin_memory and a copy,
JAX's device_put of a large array). Open files: every value from 64 to 1024 is searched by bisection for each judge
(each judge's answer is monotonic in the limit: more files never hurt), so each threshold is exact. Prints one JSON.

Usage on the GPU machine: python benchmarks/limits_probe.py [--visible 0]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gpu_scenarios import JAX_JUDGE, TORCH_JUDGE  # noqa: E402

TORCH_PINNED = r"""
import torch
x = torch.randn(64 << 20).pin_memory()  # 256 MiB of page-locked host memory
y = x.to("cuda", non_blocking=True); torch.cuda.synchronize()
assert x.is_pinned()
print("torch pinned ok:", y.numel())
"""

JAX_PINNED = r"""
import jax, jax.numpy as jnp, numpy as np
gpus = [d for d in jax.devices() if d.platform == "gpu"]
assert gpus, "JAX has no GPU: %s" % jax.devices()
y = jax.device_put(np.ones(64 << 20, dtype=np.float32), gpus[0]); y.block_until_ready()
print("jax transfer ok:", y.shape)
"""

JUDGES = {"torch": TORCH_JUDGE, "jax": JAX_JUDGE, "torch_pinned": TORCH_PINNED, "jax_pinned": JAX_PINNED}


def run(judge: str, limit: str, env: dict[str, str]) -> tuple[bool, str]:
    started = time.monotonic()
    done = subprocess.run(["bash", "-c", f'ulimit -S {limit} && exec "$0" -c "$1"', sys.executable, JUDGES[judge]],
                          capture_output=True, text=True, env=env, timeout=600)
    words = (done.stdout.strip().splitlines() or [""])[-1] if done.returncode == 0 else \
        next((line for line in reversed(done.stderr.strip().splitlines()) if line.strip()), f"exit {done.returncode}")
    return done.returncode == 0, f"{words[:160]} ({time.monotonic() - started:.1f} s)"


def lowest_working(judge: str, low: int, high: int, env: dict[str, str], seen: dict[int, tuple[bool, str]]) -> int:
    """The smallest open-file limit in [LOW, HIGH] under which JUDGE works (HIGH must work)."""
    while low < high:
        middle = (low + high) // 2
        seen[middle] = run(judge, f"-n {middle}", env)
        if seen[middle][0]:
            high = middle
        else:
            low = middle + 1
    return high


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--visible", help="CUDA_VISIBLE_DEVICES for the judges (default: as inherited)")
    options = parser.parse_args()
    env = dict(os.environ, XLA_PYTHON_CLIENT_PREALLOCATE="false")
    if options.visible is not None:
        env["CUDA_VISIBLE_DEVICES"] = options.visible
    hard = subprocess.run(["bash", "-c", "ulimit -H -n; ulimit -H -l; ulimit -S -l"], capture_output=True,
                          text=True).stdout.split()
    result: dict[str, object] = {"hard_nofile": hard[0], "hard_memlock_kib": hard[1], "soft_memlock_kib": hard[2]}
    nofile: dict[str, object] = {}
    for judge in ("torch", "jax"):
        seen: dict[int, tuple[bool, str]] = {}
        for value in (64, 1024):
            seen[value] = run(judge, f"-n {value}", env)
        if seen[1024][0] and not seen[64][0]:
            minimum = lowest_working(judge, 65, 1024, env, seen)
        else:
            minimum = 64 if seen[64][0] else None
        nofile[judge] = {"lowest_working": minimum,
                         "tried": {str(k): {"ok": v[0], "said": v[1]} for k, v in sorted(seen.items())}}
    result["nofile"] = nofile
    memlock: dict[str, object] = {}
    for value in ("0", "64", "8192"):
        memlock[value] = {judge: dict(zip(("ok", "said"), run(judge, f"-l {value}", env), strict=True))
                          for judge in ("torch", "jax", "torch_pinned", "jax_pinned")}
    result["memlock_kib"] = memlock
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
