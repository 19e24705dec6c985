"""The `cudnn-doctor` command (and `python -m cudnn_doctor`): signals handled from the first instant, then
the command line read by argparse (cli.py). Nothing runs before the command line is read."""

from __future__ import annotations

import sys


def main() -> None:
    from cudnn_doctor import signals

    signals.install()  # a SIGTERM while the modules load unwinds as anywhere else
    try:
        from cudnn_doctor.cli import main as run

        run()
    except KeyboardInterrupt as error:  # before runner.run's own handling began
        signals.hold()
        sys.exit(signals.exit_code(error))
    except SystemExit:
        # The process ends with this exception. The interpreter's last collections need not walk every
        # object the command made: each is still freed, and atexit runs (10 ms of a check on 2 cores).
        # Here, not in cli.main: a program that calls cli.main in-process keeps its collector as it was.
        import gc

        gc.freeze()
        raise
