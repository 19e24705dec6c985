"""The `cudnn-doctor` command (and `python -m cudnn_doctor`): signals handled from the first instant, the
probe that needs no option started (probes/early.py), then the command line read by cli.main.

Kept apart from cli.py, whose first import is typer: what starts here runs beside those imports."""

from __future__ import annotations

import sys


def main() -> None:
    from cudnn_doctor import signals

    signals.install()  # a SIGTERM while the modules load unwinds as anywhere else: the early child is stopped
    try:
        from cudnn_doctor.probes import early

        early.start(sys.argv[1:])
        from cudnn_doctor.cli import main as run

        run()
    except KeyboardInterrupt as error:  # before cli.main's own handling began
        signals.hold()
        sys.exit(signals.exit_code(error))
