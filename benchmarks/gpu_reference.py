"""Measure the healthy-GPU reference figures of compat/gpu_reference.toml on this machine.

    python benchmarks/gpu_reference.py --runs 3 --out rows.toml [--sizes small medium large]

For every dtype, layout and size it runs `cudnn-doctor bench --json --no-cpu` RUNS times (each run
a fresh child: context, handle, autotuning, warm-up, median of CUDA-event timings), keeps for each
workload the median of the runs' medians and their spread ((max - min) / median), refuses a run in
which NVML saw a hardware slowdown, and prints one TOML [[reference]] row per workload. Review the
rows (spread under a few per cent, the GPU idle otherwise) before adding them to compat/.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HARD = {"hw_slowdown", "hw_thermal_slowdown", "hw_power_brake_slowdown", "sw_thermal_slowdown"}


def bench_once(dtype: str, layout: str, size: str) -> dict:
    command = [sys.executable, "-m", "cudnn_doctor", "bench", "--json", "--no-cpu", "--dtype", dtype,
               "--layout", layout, "--size", size]
    completed = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, timeout=600)
    return json.loads(completed.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--dtypes", nargs="+", default=["fp32", "tf32", "fp16", "bf16"])
    parser.add_argument("--layouts", nargs="+", default=["nchw", "nhwc"])
    parser.add_argument("--sizes", nargs="+", default=["small", "medium", "large"])
    parser.add_argument("--out", type=Path, help="write the TOML rows here (also printed)")
    args = parser.parse_args()
    rows: list[str] = []
    date = time.strftime("%Y-%m-%d")
    for dtype in args.dtypes:
        for layout in args.layouts:
            for size in args.sizes:
                samples: dict[tuple[str, str], list[float]] = {}
                context = {}
                for _ in range(args.runs):
                    data = bench_once(dtype, layout, size)
                    device = (data.get("devices") or [{}])[0]
                    slowed = HARD & set((device.get("clocks") or {}).get("throttle_reasons") or [])
                    if slowed:
                        print(f"# {dtype} {layout} {size}: run refused, GPU slowed down ({', '.join(slowed)})",
                              file=sys.stderr)
                        continue
                    libraries = data.get("libraries", {})
                    context = {"gpu": device.get("name"), "cudnn": libraries.get("cudnn_version"),
                               "cudart": libraries.get("cudart_version"), "driver": libraries.get("driver_cuda_version")}
                    for result in data.get("results", []):
                        if result.get("ok") and result.get("gpu_ms"):
                            samples.setdefault((result["workload"], result["layout"]), []).append(result["gpu_ms"])
                for (workload, result_layout), values in sorted(samples.items()):
                    if workload == "lstm-fwd" and layout != args.layouts[0]:
                        continue  # the LSTM has one layout; measure it once per dtype and size
                    median = statistics.median(values)
                    spread = (max(values) - min(values)) / median
                    major = int(str(context["cudnn"]).split(".")[0])
                    rows.append(
                        "[[reference]]\n"
                        f'gpu = "{context["gpu"]}"\nworkload = "{workload}"\ndtype = "{dtype}"\n'
                        f'layout = "{result_layout}"\nsize = "{size}"\ncudnn_major = {major}\n'
                        f"gpu_ms = {median:.4f}\nruns = {len(values)}\nspread = {spread:.3f}\n"
                        f'measured = "{date}, cuDNN {context["cudnn"]}, CUDA runtime {context["cudart"]}, '
                        f'driver CUDA {context["driver"]}"\n'
                        f'source = "benchmarks/gpu_reference.py --runs {args.runs} on the project\'s {context["gpu"]} '
                        f'machine, {date} (benchmarks/README.md, GPU reference figures)"\n')
                    print(rows[-1], flush=True)
    if args.out:
        args.out.write_text("\n".join(rows))


if __name__ == "__main__":
    main()
