"""Where `check --deep`'s time goes before and around its framework children, beside `python -m torch.utils.collect_env`
and a bare `import torch` under the same Python, in interleaved rounds (medians of N).

    python benchmarks/deep_start.py [--runs 5] [--python /opt/torch/.venv/bin/python] [--tree DIR]

For `check --deep --json` (the checkout's package, or --tree's, started as the command starts, entry.main, the framework
Python's folder first on PATH so that its frameworks are found): when its first framework child started (ms after the
command's own start: the doctor's start-up, its scan and the frameworks found), when the last of that first wave
answered, how many started at once, and the command's exit. On a machine without a GPU the frameworks fail, and --deep
then tries the environment's parts one by one (doctor/bisect.py), which a GPU machine whose frameworks work never does:
the exit is then not the GPU machine's figure, the first wave's end is. Needs torch in --python's environment."""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

TIMELINE = r"""
import atexit, json, sys, time
T0 = time.perf_counter()
children = {}  # id of each framework child's Popen -> [its start, its end], seconds after the command's start
import subprocess
execute, wait = subprocess.Popen._execute_child, subprocess.Popen._wait
def framework(args):
    return any("_deep_child.py" in str(a) for a in (args if isinstance(args, (list, tuple)) else [args]))
def started(self, args, *rest, **options):
    if framework(args):
        children[id(self)] = [time.perf_counter() - T0, None]
    return execute(self, args, *rest, **options)
def waited(self, *rest, **options):
    code = wait(self, *rest, **options)
    if code is not None and id(self) in children and children[id(self)][1] is None:
        children[id(self)][1] = time.perf_counter() - T0
    return code
subprocess.Popen._execute_child, subprocess.Popen._wait = started, waited
atexit.register(lambda: sys.stderr.write("DEEP " + json.dumps({"children": sorted(children.values()),
                                                               "exit": time.perf_counter() - T0}) + "\n"))
sys.argv = ["cudnn-doctor", "check", "--deep", "--json"]
from cudnn_doctor.entry import main
main()
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--python", default=sys.executable, help="the Python that has torch")
    parser.add_argument("--tree", type=Path, default=REPO, help="the checkout whose check --deep is timed")
    options = parser.parse_args()
    env = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}
    env["PATH"] = f"{Path(options.python).parent}{os.pathsep}{env.get('PATH', '')}"
    doctor_env = {**env, "PYTHONPATH": os.pathsep.join(filter(None, [str(options.tree.resolve()),
                                                                      env.get("PYTHONPATH")]))}
    neutral = tempfile.mkdtemp(prefix="deep-start-")
    plain = {"python -c pass": [options.python, "-c", "pass"],
             "python -c 'import torch'": [options.python, "-c", "import torch"],
             "python -m torch.utils.collect_env": [options.python, "-m", "torch.utils.collect_env"]}
    for command in plain.values():  # warm-up: page cache, bytecode
        subprocess.run(command, capture_output=True, env=env, cwd=neutral)
    subprocess.run([sys.executable, "-c", TIMELINE], capture_output=True, env=doctor_env, cwd=neutral)
    walls: dict[str, list[float]] = {name: [] for name in plain}
    deep: list[dict[str, object]] = []
    for round_ in range(options.runs):
        for name, command in (plain.items() if round_ % 2 else reversed(list(plain.items()))):
            started = time.perf_counter()
            subprocess.run(command, capture_output=True, env=env, cwd=neutral)
            walls[name].append(time.perf_counter() - started)
        done = subprocess.run([sys.executable, "-c", TIMELINE], capture_output=True, text=True, env=doctor_env,
                              cwd=neutral)
        line = next((x for x in done.stderr.splitlines() if x.startswith("DEEP ")), None)
        if line is None:
            sys.exit(done.stderr[-3000:])
        deep.append(json.loads(line[5:]))
    result: dict[str, object] = {name: {"median_s": round(statistics.median(v), 3), "min_s": round(min(v), 3),
                                        "max_s": round(max(v), 3), "runs": len(v)} for name, v in walls.items()}

    def median_ms(values: list[float]) -> float:
        return round(statistics.median(values) * 1000, 1)

    waves = []  # each run's first wave: the framework children started within 50 ms of the first
    for run in deep:
        children = run["children"]
        if children:
            wave = [c for c in children if c[0] - children[0][0] < 0.05]  # type: ignore[index,operator]
            waves.append((children[0][0], max(c[1] or run["exit"] for c in wave), len(wave)))  # type: ignore[index,operator]
    result["check --deep --json"] = {
        "runs": len(deep),
        "first_framework_child_start_ms": median_ms([w[0] for w in waves]) if waves else None,
        "children_at_once": statistics.median(w[2] for w in waves) if waves else 0,
        "first_wave_end_ms": median_ms([w[1] for w in waves]) if waves else None,
        "exit_ms": median_ms([run["exit"] for run in deep]),  # type: ignore[misc]
        "framework_children_in_all": statistics.median(len(run["children"]) for run in deep),  # type: ignore[arg-type]
    }
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
