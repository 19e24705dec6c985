"""How long `cudnn-doctor check` takes, wall time from the user's shell, as a user runs it.

Usage: python benchmarks/check_speed.py [--runs N] [-- extra check arguments]
Prints the median, min and max of N runs of `python -m cudnn_doctor check --json`
(after one warm-up run that fills the parsed-data cache), and for scale the same
for any other command given with --compare "CMD".
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time


def time_command(command: list[str], runs: int) -> list[float]:
    subprocess.run(command, capture_output=True)  # warm-up: page cache, compat data cache
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run(command, capture_output=True)
        times.append(time.perf_counter() - started)
    return times


def describe(name: str, times: list[float]) -> dict[str, object]:
    return {"command": name, "runs": len(times), "median_s": round(statistics.median(times), 3),
            "min_s": round(min(times), 3), "max_s": round(max(times), 3)}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--compare", action="append", default=[], help="another shell command to time once per run")
    parser.add_argument("extra", nargs="*")
    options = parser.parse_args()
    check = [sys.executable, "-m", "cudnn_doctor", "check", "--json", *options.extra]
    results = [describe("cudnn-doctor check --json", time_command(check, options.runs))]
    probe = json.loads(subprocess.run(check, capture_output=True, text=True).stdout)
    results[0]["probe_timings_ms"] = probe.get("timings_ms")
    results[0]["gpus"] = len(probe.get("gpus", []))
    results[0]["cudnn_copies"] = len(probe.get("cudnn", []))
    for command in options.compare:
        results.append(describe(command, time_command(["bash", "-c", command], max(1, options.runs // 5))))
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
