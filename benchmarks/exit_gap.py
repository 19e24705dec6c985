"""Where plain `check --json`'s wall time goes after its work, as a caller that reads its output sees it: the
process's exit, and the end of its stdout and stderr (a pipe stays open while anything the doctor started still
holds it: `$(cudnn-doctor check --json)`, `| jq` and subprocess.run(capture_output=True) wait for that, not for the
doctor). Against `nvidia-smi -q` the same way.

    python benchmarks/exit_gap.py [--runs 11] [--tree DIR ...] > OUT.json     (on the GPU machine; any checkout)

Each --tree's `check --json` and `check` (every tree in the same interleaved rounds, the order turned each round),
`python -m cudnn_doctor --version` (the interpreter's and the command line's own share) and `nvidia-smi -q`; the
medians, and each check's ratio to `nvidia-smi -q` (issue 45's bar: 2x)."""

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
    parser.add_argument("--tree", type=Path, action="append",
                        help="a checkout whose check is timed (repeatable: every tree in the same rounds)")
    options = parser.parse_args()
    trees = [tree.resolve() for tree in options.tree or [Path(__file__).resolve().parents[1]]]
    neutral = tempfile.mkdtemp(prefix="exit-gap-")
    commands: dict[str, tuple[list[str], dict[str, str]]] = {}
    for tree in trees:
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(tree), os.environ.get("PYTHONPATH")]))}
        env.pop("PYTHONDONTWRITEBYTECODE", None)  # bytecode cached, as installed
        label = "" if len(trees) == 1 else f" ({tree.name})"
        commands[f"check --json{label}"] = ([sys.executable, "-m", "cudnn_doctor", "check", "--json"], env)
        commands[f"check{label}"] = ([sys.executable, "-m", "cudnn_doctor", "check"], env)
    commands[f"{os.path.basename(sys.executable)} -m cudnn_doctor --version"] = (
        [sys.executable, "-m", "cudnn_doctor", "--version"], commands[next(iter(commands))][1])
    if shutil.which("nvidia-smi"):
        commands["nvidia-smi -q"] = (["nvidia-smi", "-q"], dict(os.environ))
    runs: dict[str, list[dict[str, float]]] = {name: [] for name in commands}
    for argv, env in commands.values():
        once(argv, env, neutral)  # warm-up (bytecode written)
    for index in range(options.runs):  # interleaved, the order turned each round
        for name, (argv, env) in list(commands.items())[::1 if index % 2 == 0 else -1]:
            runs[name].append(once(argv, env, neutral))
    out = {name: {key: round(statistics.median(r[key] for r in rows), 3) for key in ("exit", "stdout_eof",
                                                                                     "stderr_eof")}
           for name, rows in runs.items()}
    smi = out.get("nvidia-smi -q", {}).get("exit")
    ratios = {name: round(row["exit"] / smi, 2) for name, row in out.items() if smi and name.startswith("check")}
    print(json.dumps({"trees": [str(tree) for tree in trees], "runs": options.runs, "median_s": out,
                      "x_nvidia_smi_q": ratios}, indent=1))


if __name__ == "__main__":
    main()
