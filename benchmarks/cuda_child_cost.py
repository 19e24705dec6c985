"""What asking CUDA itself (the probe child's `cuda` job: dlopen libcuda.so.1, cuInit, the visible GPUs) costs
next to NVML's child, alone, side by side and one after the other; on the GPU machine.

  python3 benchmarks/cuda_child_cost.py [--runs N]

Prints the median wall time of each arrangement over N rounds (interleaved), and `nvidia-smi -q` for scale.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

CHILD = str(Path(__file__).resolve().parents[1] / "cudnn_doctor" / "_job_child.py")


def pynvml_folder() -> str:
    import importlib.util

    spec = importlib.util.find_spec("pynvml")
    return str(Path(spec.origin).parent) if spec and spec.origin else ""


def child(job: str, *args: str) -> list[str]:
    return [sys.executable, "-I", "-S", CHILD, "_probe_jobs", job, *args]


def timed(commands: list[list[str]], together: bool) -> float:
    started = time.perf_counter()
    if together:
        running = [subprocess.Popen(c, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) for c in commands]
        for process in running:
            process.wait()
    else:
        for command in commands:
            subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - started


PHASES = r"""
import ctypes, os, sys, time
t = [time.perf_counter()]
lib = ctypes.CDLL("libcuda.so.1", mode=os.RTLD_NOW)
t.append(time.perf_counter())
status = lib.cuInit(0)
t.append(time.perf_counter())
count = ctypes.c_int(0); lib.cuDeviceGetCount(ctypes.byref(count))
t.append(time.perf_counter())
names = ("dlopen", "cuInit", "count")
sys.stdout.write(" ".join(f"{n} {(b - a) * 1000:.1f}" for n, a, b in zip(names, t, t[1:])) + f" status {status}\n")
sys.stdout.flush()
if len(sys.argv) > 1:
    os.close(1)
    time.sleep(float(sys.argv[1]))
"""


def phases(runs: int) -> None:
    """Where the cuda child's time goes: each phase inside it, and the rest (start and exit) from outside."""
    for _ in range(runs):
        started = time.perf_counter()
        process = subprocess.Popen([sys.executable, "-I", "-S", "-c", PHASES], stdout=subprocess.PIPE, text=True)
        line = process.stdout.readline().strip() if process.stdout else ""
        answered = time.perf_counter()
        process.wait()
        ended = time.perf_counter()
        print(f"{line}; answer after {(answered - started) * 1000:.1f} ms, exit after {(ended - started) * 1000:.1f} ms")


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--phases", action="store_true", help="where the cuda child's time goes")
    options = parser.parse_args()
    runs = options.runs
    if options.phases:
        phases(runs)
        return 0
    nvml = child("nvml", "-", pynvml_folder())
    cuda = child("cuda", "libcuda.so.1")
    arrangements = {
        "nvml child alone": ([nvml], True),
        "cuda child alone": ([cuda], True),
        "both side by side": ([nvml, cuda], True),
        "nvml, then cuda": ([nvml, cuda], False),
        "nvidia-smi -q": ([["nvidia-smi", "-q"]], True),
    }
    times: dict[str, list[float]] = {name: [] for name in arrangements}
    for _ in range(runs + 1):  # the first round warms the page cache, and is dropped
        for name, (commands, together) in arrangements.items():
            times[name].append(timed(commands, together))
    for name, values in times.items():
        kept = values[1:]
        print(f"{name:22} median {statistics.median(kept) * 1000:7.1f} ms  (min {min(kept) * 1000:.1f}, "
              f"max {max(kept) * 1000:.1f}, {len(kept)} runs)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
