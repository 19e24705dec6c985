"""`cudnn-doctor install`: the options read, the install use-case run as one transaction (doctor/install.py)."""

from __future__ import annotations

from collections.abc import Callable


def main(location: str | None, version: str | None, cuda: int | None, mirror: str | None, sha256: str | None,
         no_verify: bool, prefix: str | None, os_name: str | None, dry_run: bool, yes: bool, replace_majors: bool,
         force: bool, json_output: bool, verbose: bool, ask: Callable[[str], bool]) -> None:
    """The command; ends with SystemExit(status)."""
    from cudnn_doctor.doctor.install import InstallOptions, run_install, run_transaction

    options = InstallOptions(location=location, version=version, cuda_major=cuda, mirror=mirror, sha256=sha256,
                             prefix=prefix, os_name=os_name, dry_run=dry_run, yes=yes, no_verify=no_verify,
                             replace_majors=replace_majors, force=force)
    run_transaction("install", lambda ui: run_install(options, ui), json_output, verbose, ask)
