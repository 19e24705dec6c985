"""The order in which one `check --json` starts its children and imports typer, the model and pynvml, read
from Python's audit events in its own process: on a GPU machine NVML's child comes first (probes/early.py).

    python benchmarks/early_order.py
"""

from __future__ import annotations

import atexit
import os
import runpy
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
WATCHED = ("typer", "cudnn_doctor.cli", "cudnn_doctor.check_line", "cudnn_doctor.model", "pynvml")


def main() -> None:
    events: list[str] = []

    def hook(event: str, args: tuple) -> None:  # type: ignore[type-arg]
        if event == "subprocess.Popen":
            events.append("start  " + " ".join(map(str, args[1]))[:100])
        elif event == "import" and args[0] in WATCHED:
            events.append("import " + args[0])

    sys.addaudithook(hook)
    sys.path.insert(0, str(REPO))  # this checkout's package, as `python -m cudnn_doctor` from it
    sys.argv = ["cudnn-doctor", "check", "--json"]
    saved = os.dup(1)
    os.dup2(os.open(os.devnull, os.O_WRONLY), 1)  # the report itself is not what is looked at
    # the command ends the process itself (command.exit_now) after running the atexit handlers
    atexit.register(lambda: os.write(saved, ("\n".join(events) + "\n").encode()))
    runpy.run_module("cudnn_doctor", run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
