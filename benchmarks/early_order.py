"""The order in which one `check --json` starts its children and imports typer, the model and pynvml, read
from Python's audit events in its own process: on a GPU machine NVML's child comes first (probes/early.py).

    python benchmarks/early_order.py
"""

from __future__ import annotations

import os
import runpy
import sys

WATCHED = ("typer", "cudnn_doctor.cli", "cudnn_doctor.model", "pynvml")


def main() -> None:
    events: list[str] = []

    def hook(event: str, args: tuple) -> None:  # type: ignore[type-arg]
        if event == "subprocess.Popen":
            events.append("start  " + " ".join(map(str, args[1]))[:100])
        elif event == "import" and args[0] in WATCHED:
            events.append("import " + args[0])

    sys.addaudithook(hook)
    sys.argv = ["cudnn-doctor", "check", "--json"]
    saved = os.dup(1)
    os.dup2(os.open(os.devnull, os.O_WRONLY), 1)  # the report itself is not what is looked at
    try:
        runpy.run_module("cudnn_doctor", run_name="__main__", alter_sys=True)
    except SystemExit:
        pass
    os.dup2(saved, 1)
    print("\n".join(events))


if __name__ == "__main__":
    main()
