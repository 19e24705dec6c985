"""Where plain `check --json`'s wall time goes after its work, as a caller that reads its output sees it: the
process's exit, and the end of its stdout and stderr (a pipe stays open while anything the doctor started still
holds it: `$(cudnn-doctor check --json)`, `| jq` and subprocess.run(capture_output=True) wait for that, not for the
doctor). Against `nvidia-smi -q` the same way.

    python benchmarks/exit_gap.py [--runs 11] [--tree DIR] > OUT.json     (on the GPU machine; any checkout)"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path


def once(argv: list[str], env: dict[str, str], cwd: str) -> dict[str, float]:
    start = time.perf_counter()
    process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=cwd)
    ends: dict[str, float] = {}

    def drain(name: str, stream) -> None:  # type: ignore[no-untyped-def]
        stream.read()
        ends[name] = time.perf_counter() - start

    readers = [threading.Thread(target=drain, args=(name, stream)) for name, stream in
               (("stdout_eof", process.stdout), ("stderr_eof", process.stderr))]
    for reader in readers:
        reader.start()
    process.wait()
    ends["exit"] = time.perf_counter() - start
    for reader in readers:
        reader.join(30)
    return ends


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=11)
    parser.add_argument("--tree", type=Path, default=Path(__file__).resolve().parents[1])
    options = parser.parse_args()
    neutral = tempfile.mkdtemp(prefix="exit-gap-")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(options.tree.resolve()),
                                                                     os.environ.get("PYTHONPATH")]))}
    commands = {"check --json": [sys.executable, "-m", "cudnn_doctor", "check", "--json"],
                "check": [sys.executable, "-m", "cudnn_doctor", "check"],
                **({"nvidia-smi -q": ["nvidia-smi", "-q"]} if shutil.which("nvidia-smi") else {})}
    runs: dict[str, list[dict[str, float]]] = {name: [] for name in commands}
    for argv in commands.values():
        once(argv, env, neutral)  # warm-up (bytecode written)
    for _ in range(options.runs):
        for name, argv in commands.items():
            runs[name].append(once(argv, env, neutral))
    out = {name: {key: round(statistics.median(r[key] for r in rows), 3) for key in ("exit", "stdout_eof",
                                                                                     "stderr_eof")}
           for name, rows in runs.items()}
    print(json.dumps({"tree": str(options.tree), "runs": options.runs, "median_s": out}, indent=1))


if __name__ == "__main__":
    main()
