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

from cudnn_doctor.versions import ascii_digits

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
        _append(log, f"{name}:{count}\n")
    if kill_at:
        wanted, _, rest = kill_at.partition(":")
        times, _, how = rest.partition(":")
        # a count that is no number or a signal with no such name is no kill point (never an internal error mid-install)
        number = int(times) if ascii_digits(times) else (1 if not times else None)
        signal_number = getattr(signal, f"SIG{how or 'KILL'}", None) if how.isalnum() or not how else None
        if wanted == name and count == number and isinstance(signal_number, int):
            os.kill(os.getpid(), signal_number)


def _append(path: str, line: str) -> None:
    """LINE added to the regular file PATH (made if missing), never blocking on a FIFO or failing the install: a
    log that cannot be written is left out."""
    import stat

    try:
        descriptor = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_NONBLOCK", 0), 0o644)
    except OSError:
        return
    try:
        if stat.S_ISREG(os.fstat(descriptor).st_mode):
            os.write(descriptor, line.encode("utf-8", "surrogateescape"))
    except OSError:
        pass
    finally:
        os.close(descriptor)
