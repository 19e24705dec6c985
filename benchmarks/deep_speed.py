"""How long `cudnn-doctor check --deep` takes next to PyTorch's `python -m torch.utils.collect_env`,
both run as a user runs them (a fresh process each), interleaved, medians of N rounds.

    python benchmarks/deep_speed.py [--runs 7] [--python /opt/torch/.venv/bin/python] [--before DIR] [--json FILE]

--python: the interpreter that has torch (collect_env runs under it, and `check --deep` is run with it
on PATH first, so that it finds that environment's frameworks); default: this one. --before DIR: also
time `check --deep` of another checkout (e.g. `git archive` of the commit before a change) in the same
rounds. Prints one line per command (median, min, max, each run), the ratio to collect_env, and what
--deep found (the frameworks it imported and whether each answered) so that a fast run that imported
nothing is not mistaken for a fast one.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def timed(command: list[str], env: dict[str, str], cwd: str) -> tuple[float, str, int]:
    started = time.perf_counter()
    result = subprocess.run(command, capture_output=True, text=True, env=env, cwd=cwd)
    return time.perf_counter() - started, result.stdout, result.returncode


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--python", default=sys.executable, help="the Python that has torch")
    parser.add_argument("--before", type=Path, help="another checkout whose check --deep is timed too")
    parser.add_argument("--json", type=Path, help="also write the medians and each run here")
    options = parser.parse_args()
    env = {**os.environ, "PATH": f"{Path(options.python).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # as installed: bytecode cached
    commands: dict[str, tuple[list[str], str]] = {
        "python -m torch.utils.collect_env": ([options.python, "-m", "torch.utils.collect_env"], "/"),
        "cudnn-doctor check --deep --json": ([sys.executable, "-m", "cudnn_doctor", "check", "--deep", "--json"],
                                             str(REPO)),
    }
    if options.before:
        commands[f"check --deep of {options.before.name}"] = (
            [sys.executable, "-m", "cudnn_doctor", "check", "--deep", "--json"], str(options.before.resolve()))
    for command, cwd in commands.values():  # warm-up: page cache, bytecode, the parsed-data cache
        subprocess.run(command, capture_output=True, env=env, cwd=cwd)
    times: dict[str, list[float]] = {name: [] for name in commands}
    last: dict[str, str] = {}
    failed: dict[str, int] = {}
    for _ in range(options.runs):
        for name, (command, cwd) in commands.items():  # interleaved: the machine's load is shared fairly
            seconds, out, code = timed(command, env, cwd)
            times[name].append(seconds)
            last[name] = out
            if code not in (0, 1) or (code and "collect_env" in name):  # check exits 1 on error findings
                failed[name] = code
    reference = statistics.median(times["python -m torch.utils.collect_env"])
    print(f"{options.runs} interleaved rounds on {os.uname().nodename} ({os.cpu_count()} CPUs)")
    for name, samples in times.items():
        median = statistics.median(samples)
        print(f"{name + ':':40s} median {median:6.2f} s (min {min(samples):.2f}, max {max(samples):.2f}; "
              f"runs {', '.join(f'{t:.2f}' for t in samples)})  {median / reference:.2f}x collect_env"
              + (f"  FAILED (exit {failed[name]}): not a figure" if name in failed else ""))
    if options.json:
        options.json.write_text(json.dumps({"host": os.uname().nodename, "cpus": os.cpu_count(), "runs": options.runs,
                                            "commands": {name: {"median_s": round(statistics.median(samples), 3),
                                                                "x_collect_env": round(statistics.median(samples)
                                                                                       / reference, 3),
                                                                "runs_s": [round(t, 3) for t in samples],
                                                                "failed_exit": failed.get(name)}
                                                         for name, samples in times.items()}}, indent=1) + "\n")
    try:
        report = json.loads(last["cudnn-doctor check --deep --json"])
    except ValueError:
        print("check --deep printed no JSON")
        return
    for framework in report.get("frameworks", []):
        deep = framework.get("details", {}).get("deep")
        if deep is None:
            continue
        said = f"error: {deep['error']}" if deep.get("error") else (
            f"version {deep.get('version')}, cuDNN {deep.get('cudnn_version')}, mapped "
            f"{', '.join(deep.get('mapped_cudnn') or []) or 'no libcudnn'}"
            f"{', conv ran' if deep.get('conv_ran') else ''}")
        print(f"  --deep imported {framework['name']}: {said}")
    print(f"  probe timings (ms): {report.get('timings_ms')}")
    print("target: check --deep under collect_env (< 1.0x)")


if __name__ == "__main__":
    main()
