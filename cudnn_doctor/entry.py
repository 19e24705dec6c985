"""The `cudnn-doctor` command (and `python -m cudnn_doctor`): signals handled from the first instant, the
work that needs no option started (NVML's child, probes/early.py; the decompression of `install --from
FILE`, install/early.py), then the command line read: a plain `check` line by check_line.py, without
typer; any other by cli.main, through typer.

Kept apart from cli.py, whose first import is typer: what starts here runs beside those imports."""

from __future__ import annotations

import sys


def main() -> None:
    from cudnn_doctor import signals

    signals.install()  # a SIGTERM while the modules load unwinds as anywhere else: the early child is stopped
    try:
        from cudnn_doctor.probes import early

        args = sys.argv[1:]
        early.start(args)
        if "install" in args:  # `install --from FILE`: its decompression starts now (install/early.py)
            from cudnn_doctor.install import early as early_archive

            early_archive.start(args)
        from cudnn_doctor import check_line

        options = check_line.plain_options(args)
        if options is not None:
            from cudnn_doctor import command

            command.run(lambda: command.call(check_line.check, **options))
        from cudnn_doctor.cli import main as run

        run()
    except KeyboardInterrupt as error:  # before command.run's own handling began
        signals.hold()
        sys.exit(signals.exit_code(error))
