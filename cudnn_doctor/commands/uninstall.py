"""`cudnn-doctor uninstall`: the options read, the undo of the last install run as one transaction
(doctor/uninstall.py)."""

from __future__ import annotations

from collections.abc import Callable


def main(prefix: str, dry_run: bool, yes: bool, force: bool, json_output: bool, verbose: bool,
         ask: Callable[[str], bool]) -> None:
    """The command; ends with SystemExit(status)."""
    from cudnn_doctor.doctor.install import run_transaction
    from cudnn_doctor.doctor.uninstall import run_uninstall

    run_transaction("uninstall", lambda ui: run_uninstall(prefix, dry_run, yes, force, ui), json_output, verbose, ask)
