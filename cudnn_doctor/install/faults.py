"""Named step boundaries of install, rollback and recovery, for fault injection by the tests.

`step("apply.put")` marks a boundary. With `CUDNN_DOCTOR_TEST_KILL_AT=apply.put:3` the process
SIGKILLs itself at the third time it reaches that boundary (`:N` left out: the first time;
`apply.put:3:TERM` sends itself SIGTERM instead, `:INT` SIGINT, as a Ctrl-C would);
with `CUDNN_DOCTOR_TEST_STEP_LOG=FILE` each boundary reached is appended to FILE as `name:N`,
so that a test can list every boundary and then kill at each one. Without either variable a
step costs one dictionary look-up.
"""

from __future__ import annotations

import os
import signal

KILL_VARIABLE = "CUDNN_DOCTOR_TEST_KILL_AT"
LOG_VARIABLE = "CUDNN_DOCTOR_TEST_STEP_LOG"
_counts: dict[str, int] = {}


def step(name: str) -> None:
    """A boundary between two steps; see the module's text."""
    kill_at = os.environ.get(KILL_VARIABLE)
    log = os.environ.get(LOG_VARIABLE)
    if not kill_at and not log:
        return
    count = _counts[name] = _counts.get(name, 0) + 1
    if log:
        with open(log, "a", encoding="utf-8") as handle:
            handle.write(f"{name}:{count}\n")
    if kill_at:
        wanted, _, rest = kill_at.partition(":")
        times, _, how = rest.partition(":")
        if wanted == name and count == int(times or 1):
            os.kill(os.getpid(), getattr(signal, f"SIG{how or 'KILL'}"))
