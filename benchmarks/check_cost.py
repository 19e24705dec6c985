"""What one plain `cudnn-doctor check` costs in CPU, and where: the command's own process and each child it starts
(the CPU the kernel counted for that child when it was reaped: os.wait4), with the wall time and the CPU of the
whole (user + system of the command and of every child it waited for).

    python benchmarks/check_cost.py [--runs 15] [--pretend] [--tree DIR ...] [-v] [-- check's arguments (default --json)]

Each run is a fresh `check` started as the command starts (entry.main), from an empty folder, the checkout's package on
PYTHONPATH (or each --tree's: another checkout, e.g. `git archive` of the commit before a change; the trees alternate,
the order turned each round), after one warm-up run each (bytecode, the parsed-data cache). Prints per tree the medians
of the wall time, the CPU in all, the command's own process, its children together and how many started; -v adds each
kind of child (its program and first two words) with its median CPU and how many a check starts. --pretend: on a
pretend machine laid out as the GPU machine is (benchmarks/gpu_like_machine.py: the tests' gcc-built NVML with one
H100, the CUDA toolkit, the system's cuDNN, a Python environment with torch's and JAX's files, NVIDIA's real cuDNN and
NCCL wheels), not this machine's own. The CPU figures are the steadier ones on a shared machine."""

from __future__ import annotations

import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

CHILD = r"""
import atexit, os, resource, subprocess, sys
reaped, names = {}, {}
def waitpid(pid, options, _wait4=os.wait4):  # every child the command reaps, with the CPU the kernel counted for it
    done, status, usage = _wait4(pid, options)
    if done:
        reaped[done] = reaped.get(done, 0.0) + usage.ru_utime + usage.ru_stime
    return done, status
os.waitpid = waitpid
execute = subprocess.Popen._execute_child
def named(self, args, *rest, **options):
    out = execute(self, args, *rest, **options)
    argv = [str(a) for a in args]
    words = [a for a in argv[1:] if not a.startswith("-")][:2]
    names[self.pid] = " ".join(a.rsplit("/", 1)[-1][:40] for a in [argv[0], *words])
    return out
subprocess.Popen._execute_child = named
def done():
    own = resource.getrusage(resource.RUSAGE_SELF)
    sys.stderr.write("COST " + repr({"own": own.ru_utime + own.ru_stime,
                                     "children": [(names.get(pid, "?"), cpu) for pid, cpu in reaped.items()]}) + "\n")
atexit.register(done)
sys.argv = ["cudnn-doctor", "check", *EXTRA]
from cudnn_doctor.entry import main
main()
"""


def main() -> None:
    args = sys.argv[1:]
    extra = args[args.index("--") + 1:] if "--" in args else ["--json"]
    args = args[:args.index("--")] if "--" in args else args
    runs = int(args[args.index("--runs") + 1]) if "--runs" in args else 15
    trees = [Path(args[i + 1]).resolve() for i, a in enumerate(args) if a == "--tree"] or [REPO]
    if "--pretend" in args:
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        from gpu_like_machine import build

        folder = Path(tempfile.mkdtemp(prefix="check-cost-machine-"))
        base, neutral = build(folder), str(folder / "work")
    else:
        base = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}
        neutral = tempfile.mkdtemp(prefix="check-cost-")
    code = CHILD.replace("*EXTRA", ", ".join(repr(a) for a in extra) + ("," if extra else ""))
    found: dict[Path, list[tuple[float, float, dict]]] = {tree: [] for tree in trees}  # type: ignore[type-arg]
    for index in range(runs + 1):
        for tree in trees[::1 if index % 2 else -1]:
            env = {**base, "PYTHONPATH": os.pathsep.join(filter(None, [str(tree), base.get("PYTHONPATH")]))}
            before, started = resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter()
            done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=neutral)
            wall, after = time.perf_counter() - started, resource.getrusage(resource.RUSAGE_CHILDREN)
            line = next((x for x in done.stderr.splitlines() if x.startswith("COST ")), None)
            if line is None:
                sys.exit(done.stderr[-3000:])
            if index:  # the first run writes bytecode and caches
                cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
                found[tree].append((wall, cpu, eval(line[5:])))  # noqa: S307 - our own child's repr of plain values
    summary = {}
    for tree, rows in found.items():
        def ms(values: list[float]) -> float:
            return round(statistics.median(values) * 1000, 1)

        summary[str(tree)] = one = {
            "runs": len(rows), "wall_ms": ms([r[0] for r in rows]), "cpu_ms": ms([r[1] for r in rows]),
            "own_cpu_ms": ms([r[2]["own"] for r in rows]),
            "children_cpu_ms": ms([sum(c for _, c in r[2]["children"]) for r in rows]),
            "children": statistics.median(len(r[2]["children"]) for r in rows)}
        if "-v" in args:
            kinds: dict[str, list[float]] = {}
            for r in rows:
                for name, cpu in r[2]["children"]:
                    kinds.setdefault(name, []).append(cpu)
            one["each"] = {name: {"cpu_ms": ms(cpus), "per_check": round(len(cpus) / len(rows), 2)}
                           for name, cpus in sorted(kinds.items(), key=lambda item: -statistics.median(item[1]))}
    print(json.dumps(summary, indent=1))


if __name__ == "__main__":
    main()
