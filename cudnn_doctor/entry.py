"""The `cudnn-doctor` command (and `python -m cudnn_doctor`): signals handled from the first instant, then
the command line read by typer (cli.py). Nothing runs before the command line is read."""

from __future__ import annotations

import sys


def main() -> None:
    from cudnn_doctor import signals

    signals.install()  # a SIGTERM while the modules load unwinds as anywhere else
    try:
        from cudnn_doctor.cli import main as run

        run()
    except KeyboardInterrupt as error:  # before command.run's own handling began
        signals.hold()
        sys.exit(signals.exit_code(error))
