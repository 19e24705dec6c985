"""How many instructions `cudnn-doctor check --json` executes, next to a bare `python -c "import typer"`:
the steady twin of check_speed.py's wall time, for a shared machine whose load moves wall time by 20 %.

Usage: python benchmarks/check_instructions.py [--runs N] [--before DIR ...] [-- extra check arguments]
Counts instructions (valgrind's callgrind, `Ir`) of the main process only: the children check starts (the
probe child, ldconfig) run beside it and are left out, so this measures check's own start and work, not the
waits that check_speed.py's wall time also holds. Each command runs once first (bytecode written, the parsed
data cached), then N times under callgrind; the median is printed with its ratio to `import typer`'s.
Needs valgrind (Debian: valgrind) and typer for the yardstick (pip install typer: the tool no longer uses it). Like check_speed.py, each check runs from an empty folder.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
COLLECTED = re.compile(rb"Collected : (\d+)")


def instructions(command: list[str], env: dict[str, str], cwd: str) -> int:
    done = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", "--trace-children=no",
                           *command], env=env, cwd=cwd, capture_output=True)
    found = COLLECTED.search(done.stderr)
    if not found:
        raise SystemExit(f"check_instructions: callgrind gave no count for {command}: "
                         f"{done.stderr.decode(errors='replace')[-400:]}")
    return int(found.group(1))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--before", type=Path, action="append", default=[],
                        help="another checkout whose check is counted too (repeatable)")
    parser.add_argument("extra", nargs="*")
    options = parser.parse_args()
    import importlib.util

    if importlib.util.find_spec("typer") is None:
        raise SystemExit("check_instructions: the yardstick needs typer (fix: pip install typer)")
    if shutil.which("valgrind") is None:
        raise SystemExit("check_instructions: valgrind is not installed (fix: apt-get install valgrind)")
    env = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}
    neutral = tempfile.mkdtemp(prefix="check-instructions-")
    check = [sys.executable, "-m", "cudnn_doctor", "check", "--json", *options.extra]
    commands = {'python -c "import typer"': ([sys.executable, "-c", "import typer"], env)}
    for name, tree in [("cudnn-doctor check --json", REPO), *((f"check --json of {d}", d) for d in options.before)]:
        path = os.pathsep.join(filter(None, [str(Path(tree).resolve()), os.environ.get("PYTHONPATH")]))
        commands[name] = (check, {**env, "PYTHONPATH": path})
    rows = []
    unit = None
    for name, (command, command_env) in commands.items():
        subprocess.run(command, env=command_env, cwd=neutral, capture_output=True)  # bytecode, data cache
        counts = [instructions(command, command_env, neutral) for _ in range(options.runs)]
        median = statistics.median(counts)
        unit = unit or median
        rows.append({"command": name, "runs": options.runs, "instructions_median": int(median),
                     "instructions_min": min(counts), "x_import_typer": round(median / unit, 2)})
    shutil.rmtree(neutral, ignore_errors=True)
    print(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
