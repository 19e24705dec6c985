"""Where `check --deep`'s seconds go on a GPU machine: each framework's smallest proof cut into phases, each phase's
end timed from the process's own start, in fresh processes (medians of N), beside `python -m torch.utils.collect_env`.

    python benchmarks/deep_phases.py [--runs 5] [--python /opt/torch/.venv/bin/python]

Phases, JAX: interpreter up, `import jax`, `jax.devices()` (the CUDA plugin's client: cuInit, the device, its memory
pool), the cuDNN convolution (compiled and run), the first fused kernel (ptxas and libdevice). torch: `import torch`,
`torch.cuda.init()`, the cuDNN convolution. Also JAX with XLA's autotuning off (what the floor would be if --deep
did not autotune; --deep keeps the user's settings, so this is for comparison only) and the interpreter alone. The
question it answers: can `check --deep` reach issue 45's 0.6x of collect_env while it runs each framework's own
import, which collect_env also runs for torch.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

JAX = r"""
import time, os, json
t = {"up": time.time()}
import jax
t["import"] = time.time()
gpus = [d for d in jax.devices() if d.platform == "gpu"]
t["devices"] = time.time()
import numpy
x = numpy.ones((2, 16, 16, 8), numpy.float32)
w = jax.device_put(numpy.ones((3, 3, 8, 8), numpy.float32), gpus[0])
y = jax.lax.conv_general_dilated(x, w, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))
numpy.asarray(y)
t["conv"] = time.time()
import jax.numpy as jnp
numpy.asarray(jnp.exp(y * 0.0))
t["kernel"] = time.time()
print(json.dumps(t)); os._exit(0)
"""

TORCH = r"""
import time, os, json
t = {"up": time.time()}
import torch
t["import"] = time.time()
torch.cuda.init()
t["cuda_init"] = time.time()
x = torch.ones(2, 8, 16, 16, device="cuda"); w = torch.ones(8, 8, 3, 3, device="cuda")
torch.nn.functional.conv2d(x, w, padding=1); torch.cuda.synchronize()
t["conv"] = time.time()
print(json.dumps(t)); os._exit(0)
"""


def phases(python: str, code: str, env: dict[str, str]) -> dict[str, float] | str:
    started = time.time()
    done = subprocess.run([python, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    ended = time.time()
    if done.returncode != 0:
        return (done.stderr or done.stdout)[-300:]
    marks = json.loads(done.stdout.strip().splitlines()[-1])
    result = {name: round(value - started, 3) for name, value in marks.items()}
    result["exit"] = round(ended - started, 3)
    return result


def wall(command: list[str], env: dict[str, str]) -> float:
    started = time.perf_counter()
    subprocess.run(command, capture_output=True, env=env, timeout=120)
    return round(time.perf_counter() - started, 3)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--python", default=sys.executable)
    options = parser.parse_args()
    env = dict(os.environ)
    no_autotune = {**env, "XLA_FLAGS": (env.get("XLA_FLAGS", "") + " --xla_gpu_autotune_level=0").strip()}
    runs: dict[str, list[object]] = {"jax": [], "jax_autotune_off": [], "torch": [], "python": [], "collect_env": []}
    for _ in range(options.runs):  # interleaved: each round runs every one once
        runs["python"].append(wall([options.python, "-c", "pass"], env))
        runs["jax"].append(phases(options.python, JAX, env))
        runs["jax_autotune_off"].append(phases(options.python, JAX, no_autotune))
        runs["torch"].append(phases(options.python, TORCH, env))
        runs["collect_env"].append(wall([options.python, "-m", "torch.utils.collect_env"], env))
    for name, values in runs.items():
        failed = [v for v in values if isinstance(v, str)]
        if failed:
            print(f"{name}: {len(failed)} of {len(values)} failed: {failed[0]!r}")
        good = [v for v in values if not isinstance(v, str)]
        if not good:
            continue
        if isinstance(good[0], dict):
            keys = list(good[0])
            line = ", ".join(f"{k} {statistics.median(float(v[k]) for v in good):.3f}" for k in keys)  # type: ignore[index]
        else:
            line = f"{statistics.median(float(v) for v in good):.3f}"  # type: ignore[arg-type]
        print(f"{name} (median of {len(good)}, s from the start): {line}")


if __name__ == "__main__":
    main()
