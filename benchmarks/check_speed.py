"""How long `cudnn-doctor check` takes, wall time from the user's shell, as a user runs it, next to a bare
`python -c "import typer"` in the same interleaved rounds: the unit of issue 31's budget (a Typer command's floor;
the tool reads its command line with argparse since, so typer is installed only for this yardstick: pip install typer).

Usage: python benchmarks/check_speed.py [--runs N] [--before DIR] [--compare "CMD"] [-- extra check arguments]
Prints, for `python -m cudnn_doctor check --json` and each other command, the median, min and max wall
time of N interleaved runs and the median CPU time (user + system of the process and the children it
waited for: the steadier figure on a shared machine), after one warm-up run each (page cache, bytecode,
the parsed-data cache), and the ratio of each median to `import typer`'s. Bytecode is written and read as
an installed package's is (PYTHONDONTWRITEBYTECODE is dropped for the runs). --before DIR (repeatable) also times the
check of another checkout (e.g. `git archive` of the commit before a change, unpacked into DIR).
"""

from __future__ import annotations

import argparse
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


def cpu_used() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_once(command: list[str], env: dict[str, str], cwd: str) -> tuple[float, float]:
    before, started = cpu_used(), time.perf_counter()
    subprocess.run(command, capture_output=True, env=env, cwd=cwd)
    return time.perf_counter() - started, cpu_used() - before


def python_path(checkout: Path) -> str:
    """CHECKOUT first, then what PYTHONPATH held (the device machine's platformdirs, say)."""
    return os.pathsep.join(filter(None, [str(checkout), os.environ.get("PYTHONPATH")]))


def typer_yardstick() -> None:
    """The unit of issue 31's budget is a bare `import typer`; typer is no longer a dependency of the tool."""
    import importlib.util

    if importlib.util.find_spec("typer") is None:
        raise SystemExit("the yardstick `python -c \"import typer\"` needs typer in this environment "
                         "(fix: pip install typer; cudnn-doctor itself no longer depends on it)")


def main() -> None:
    typer_yardstick()
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--before", type=Path, action="append", default=[],
                        help="another checkout whose check is timed too (may be given more than once)")
    parser.add_argument("--compare", action="append", default=[], help="another shell command, timed the same way")
    parser.add_argument("extra", nargs="*")
    options = parser.parse_args()
    env = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}
    # Each check runs from an empty folder, as from a user's project: not from a checkout whose own
    # pyproject.toml names cudnn-doctor (that would be parsed for [tool.cudnn-doctor] on every run).
    # The checkout is found through PYTHONPATH: `-m cudnn_doctor` takes its package.
    neutral = tempfile.mkdtemp(prefix="check-speed-")
    check = [sys.executable, "-m", "cudnn_doctor", "check", "--json", *options.extra]
    commands: dict[str, tuple[list[str], str, dict[str, str]]] = {
        'python -c "import typer"': ([sys.executable, "-c", "import typer"], neutral, env),
        "cudnn-doctor check --json": (check, neutral, {**env, "PYTHONPATH": python_path(REPO)}),
    }
    for before in options.before:
        commands[f"check --json of {before.name}"] = (check, neutral, {**env, "PYTHONPATH": python_path(before.resolve())})
    for other in options.compare:
        commands[other] = (["bash", "-c", other], neutral, env)
    for command, cwd, command_env in commands.values():
        subprocess.run(command, capture_output=True, env=command_env, cwd=cwd)  # warm-up
    wall: dict[str, list[float]] = {name: [] for name in commands}
    cpu: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(options.runs):
        for name, (command, cwd, command_env) in commands.items():  # interleaved: a busy moment hits all alike
            seconds, used = run_once(command, command_env, cwd)
            wall[name].append(seconds)
            cpu[name].append(used)
    floor_wall = statistics.median(wall['python -c "import typer"'])
    floor_cpu = statistics.median(cpu['python -c "import typer"'])
    results = []
    for name in commands:
        results.append({"command": name, "runs": options.runs,
                        "median_s": round(statistics.median(wall[name]), 3), "min_s": round(min(wall[name]), 3),
                        "max_s": round(max(wall[name]), 3), "cpu_median_s": round(statistics.median(cpu[name]), 3),
                        "x_import_typer": round(statistics.median(wall[name]) / floor_wall, 2),
                        "cpu_x_import_typer": round(statistics.median(cpu[name]) / floor_cpu, 2)})
    report = json.loads(subprocess.run(check, capture_output=True, text=True, env=commands["cudnn-doctor check --json"][2],
                                       cwd=neutral).stdout)
    results[1].update({"probe_timings_ms": report.get("timings_ms"), "gpus": len(report.get("gpus", [])),
                       "cudnn_copies": len(report.get("cudnn", []))})
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
