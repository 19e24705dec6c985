"""One `cudnn-doctor check --json` as the command runs it (entry.main: the early NVML child, then the imports),
with the wall time of each child's start and end and of the end, in ms after the interpreter reached this script.

    python benchmarks/cli_timeline.py [--runs 5] [--pretend] [--tree DIR ...] [-- check's arguments (default --json)]

Prints the run of median length, its marks in order (wall and the process's CPU; each wait of the command's own
thread for children's answers), and the medians of the exit, of the tail (the last child's answer to the exit: the
command's own work that nothing runs beside), of the last child's start and of the time the command's thread waited. The checkout's package is the one run (PYTHONPATH), or each
--tree's (another checkout, e.g. `git archive` of the commit before a change), their runs alternating, the order
turned each round. --pretend: on a pretend machine laid out as the GPU machine is (benchmarks/gpu_like_machine.py:
gcc-built fakes, the real cuDNN, NCCL and JAX wheels of the tests' cache), not on this machine's own."""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(os.environ.get("CHECKOUT") or Path(__file__).resolve().parents[1])

CHILD = r"""
import atexit, os, sys, time
T0, C0 = time.perf_counter(), time.process_time()
marks = []
def mark(name):
    marks.append((round((time.perf_counter() - T0) * 1000, 1), name, round((time.process_time() - C0) * 1000, 1)))
def label(argv):
    argv = [str(a) for a in argv]
    argv = [a for a in argv[("python" in argv[0].rsplit("/", 1)[-1]):] if not a.startswith("-")][:3]
    return " ".join(a.rsplit("/", 1)[-1][:40] for a in argv)
patched = []
def hook(event, args):
    if event == "subprocess.Popen":
        mark("start " + label(args[1]))
    elif event == "import" and args[0] in ("cudnn_doctor.cli", "cudnn_doctor.commands.check", "cudnn_doctor.rules",
                                         "cudnn_doctor.plan.planner", "cudnn_doctor.render.formats"):
        mark("import " + args[0])
    if not patched and "cudnn_doctor.child" in sys.modules and hasattr(sys.modules["cudnn_doctor.child"], "ChildBatch"):
        patched.append(1)
        batch = sys.modules["cudnn_doctor.child"].ChildBatch
        end = batch._end
        def _end(self, child, *a, **k):
            mark("end " + label(self.requests[child.index].argv)); return end(self, child, *a, **k)
        batch._end = _end
        def waited(name):  # the command's own thread blocked on a batch's answer(s): how long, for whom
            original = getattr(batch, name)
            def wait(self, *a, **k):
                started = time.perf_counter(); out = original(self, *a, **k); took = time.perf_counter() - started
                if took > 0.0002 and self.requests:
                    mark(f"waited {took * 1000:.1f} ms for " + label(self.requests[a[0] if a else 0].argv))
                return out
            setattr(batch, name, wait)
        waited("answers"); waited("answer")
sys.addaudithook(hook)
def done():
    sys.stderr.write("MARKS " + repr(marks) + "\n")
atexit.register(lambda: (mark("exit"), done()))
sys.argv = ["cudnn-doctor", "check", *EXTRA]
from cudnn_doctor.entry import main
main()
"""


def main() -> None:
    args = sys.argv[1:]
    extra = args[args.index("--") + 1:] if "--" in args else ["--json"]  # `-- ARGS`: check ARGS (text without --json)
    args = args[:args.index("--")] if "--" in args else args
    runs = int(args[args.index("--runs") + 1]) if "--runs" in args else 5
    trees = [Path(args[i + 1]).resolve() for i, a in enumerate(args) if a == "--tree"] or [REPO]
    if "--pretend" in args:  # the GPU machine's layout with fakes (gpu_like_machine.py), not this machine's own
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        from gpu_like_machine import build

        folder = Path(tempfile.mkdtemp(prefix="cli-timeline-machine-"))
        base, neutral = build(folder), str(folder / "work")
    else:
        base = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}
        neutral = tempfile.mkdtemp(prefix="cli-timeline-")
    code = CHILD.replace("*EXTRA", ", ".join(repr(a) for a in extra) + ("," if extra else ""))
    found: dict[Path, list[list[tuple[float, str, float]]]] = {tree: [] for tree in trees}
    for index in range(runs + 1):  # the trees alternate, the order turned each round
        for tree in trees[::1 if index % 2 else -1]:
            env = {**base, "PYTHONPATH": os.pathsep.join(filter(None, [str(tree), base.get("PYTHONPATH")]))}
            done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=neutral)
            line = next((x for x in done.stderr.splitlines() if x.startswith("MARKS ")), None)
            if line is None:
                sys.exit(done.stderr[-2000:])
            if index:  # the first run writes bytecode and caches
                found[tree].append(eval(line[6:]))  # noqa: S307 - our own child's repr of a list of tuples
    summary = {}
    for tree, marks in found.items():
        marks.sort(key=lambda one: one[-1][0])
        print(f"== {tree}")
        for ms, name, cpu in marks[len(marks) // 2]:
            print(f"{ms:8.1f} ms  {cpu:7.1f} ms CPU  {name}")
        # the tail: from the last child's answer to the exit, the command's own work nothing runs beside (wall, and
        # the process's CPU, steadier on a loaded machine)
        last = [max((i for i, mark in enumerate(one) if mark[1].startswith("end ")), default=0) for one in marks]
        started = [max((i for i, mark in enumerate(one) if mark[1].startswith("start ")), default=0) for one in marks]
        summary[str(tree)] = {"exit_ms": [one[-1][0] for one in marks],
                              "median_exit_ms": statistics.median(one[-1][0] for one in marks),
                              "median_cpu_ms": statistics.median(one[-1][2] for one in marks),
                              "median_tail_ms": round(statistics.median(one[-1][0] - one[i][0]
                                                                        for one, i in zip(marks, last, strict=True)), 1),
                              "median_tail_cpu_ms": round(statistics.median(one[-1][2] - one[i][2]
                                                                            for one, i in zip(marks, last, strict=True)), 1),
                              # when every child is under way: the last start, wall and the process's CPU
                              "median_last_start_ms": statistics.median(one[i][0] for one, i in zip(marks, started, strict=True)),
                              "median_last_start_cpu_ms": statistics.median(one[i][2] for one, i in zip(marks, started, strict=True)),
                              # the command's own thread blocked on children's answers, in all (and on ldconfig's)
                              "median_waited_ms": statistics.median(_waited(one) for one in marks),
                              "median_waited_ldconfig_ms": statistics.median(_waited(one, "ldconfig") for one in marks)}
    print(json.dumps(summary if len(trees) > 1 else summary[str(trees[0])]))


def _waited(marks: list[tuple[float, str, float]], whom: str = "") -> float:
    """The milliseconds the command's thread waited for children's answers (for WHOM's, where given) in one run."""
    return round(sum(float(name.split()[1]) for _, name, _ in marks
                     if name.startswith("waited ") and whom in name.split(" for ", 1)[1]), 1)


if __name__ == "__main__":
    main()
