"""What a command imports beyond a bare `import typer`, and what each module costs: `python -X importtime`
run N times, each module's self time the median of the N.

    python benchmarks/import_cost.py [--runs 7] [--top 40] -- -m cudnn_doctor check --json

Prints the total of `import typer` and of the command, the modules the command imports that typer does
not, and the costliest of those (milliseconds, self time). Bytecode is cached as an installed package has
it (PYTHONDONTWRITEBYTECODE is dropped).
"""

from __future__ import annotations

import argparse
import collections
import os
import statistics
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def self_times(arguments: list[str], runs: int) -> dict[str, float]:
    env = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}
    samples: dict[str, list[int]] = collections.defaultdict(list)
    for _ in range(runs):
        stderr = subprocess.run([sys.executable, "-X", "importtime", *arguments], capture_output=True, text=True,
                                env=env, cwd=str(REPO)).stderr
        for line in stderr.splitlines():
            if line.startswith("import time:") and "self [us]" not in line:
                parts = line.split("|")
                samples[parts[2].strip()].append(int(parts[0].split(":")[1]))
    return {name: statistics.median(values) / 1000 for name, values in samples.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--top", type=int, default=40)
    parser.add_argument("command", nargs="+", help="the interpreter's arguments, e.g. -m cudnn_doctor check --json")
    options = parser.parse_args()
    command = self_times(options.command, options.runs)
    floor = self_times(["-c", "import typer"], options.runs)
    extra = {name: ms for name, ms in command.items() if name not in floor}
    print(f"import typer: {sum(floor.values()):.1f} ms in {len(floor)} modules; the command: "
          f"{sum(command.values()):.1f} ms in {len(command)}; beyond typer: {sum(extra.values()):.1f} ms in "
          f"{len(extra)} modules (medians of {options.runs} runs, self times)")
    for name, ms in sorted(extra.items(), key=lambda item: -item[1])[:options.top]:
        print(f"{ms:8.2f}  {name}")


if __name__ == "__main__":
    main()
