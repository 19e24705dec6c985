"""The `install` and `uninstall` commands; `register(app)` adds them to the CLI.

Only typer is imported here: everything else is imported inside the commands, so that
`cudnn-doctor --help` and `check` start fast.
"""

from __future__ import annotations

import sys
from typing import Any, Optional

import typer


def register(app: typer.Typer) -> None:
    """Define `install` and `uninstall` on APP."""
    from cudnn_doctor.cli import guarded

    @app.command("install")
    @guarded
    def install(
        location: Optional[str] = typer.Option(None, "--from", metavar="PATH_OR_URL",
                                               help="A cuDNN archive (.tar.xz, .tgz, .zip) or wheel (.whl), "
                                                    "as a local path or a URL."),
        version: Optional[str] = typer.Option(None, "--version", metavar="X.Y.Z",
                                              help="A cuDNN release from NVIDIA's redistributable manifest."),
        cuda: Optional[int] = typer.Option(None, "--cuda", metavar="MAJOR",
                                           help="The CUDA major of the build (default: the toolkit's, else the "
                                                "driver's, else the newest)."),
        mirror: Optional[str] = typer.Option(None, "--mirror", metavar="URL",
                                             help="Base URL, or a local folder, that replaces NVIDIA's redist site (air-gapped sites)."),
        sha256: Optional[str] = typer.Option(None, "--sha256", metavar="HEX",
                                             help="Refuse the archive unless it has this sha256."),
        no_verify: bool = typer.Option(False, "--no-verify",
                                       help="Install an archive whose manifest entry lists no sha256 or size "
                                            "(unchecked; a warning says so)."),
        prefix: Optional[str] = typer.Option(None, "--prefix", metavar="DIR",
                                             help="Where to install (default: the CUDA toolkit check picks)."),
        os_name: Optional[str] = typer.Option(None, "--os", metavar="linux|windows|macos",
                                              help="Plan for another OS's layout (plan only)."),
        dry_run: bool = typer.Option(False, "--dry-run", help="Show the plan and stop."),
        yes: bool = typer.Option(False, "--yes", "-y", help="Do not ask before changing anything."),
        json_output: bool = typer.Option(False, "--json", help="Print one JSON object (cudnn-doctor/install/1)."),
        verbose: bool = typer.Option(False, "-v", "--verbose", help="List every file of the plan."),
    ) -> None:
        """Install cuDNN into a prefix: plan first, then all or nothing, with a backup and a manifest."""
        from cudnn_doctor.commands.install import InstallOptions, run_install

        options = InstallOptions(location=location, version=version, cuda_major=cuda, mirror=mirror, sha256=sha256,
                                 prefix=prefix, os_name=os_name, dry_run=dry_run, yes=yes, no_verify=no_verify)
        _run("install", lambda ui: run_install(options, ui), json_output, verbose, yes or dry_run)

    @app.command("uninstall")
    @guarded
    def uninstall(
        prefix: str = typer.Option(..., "--prefix", metavar="DIR", help="The prefix an install was made into."),
        dry_run: bool = typer.Option(False, "--dry-run", help="Show the plan and stop."),
        yes: bool = typer.Option(False, "--yes", "-y", help="Do not ask before changing anything."),
        force: bool = typer.Option(False, "--force", help="Remove installed files even if changed since."),
        json_output: bool = typer.Option(False, "--json", help="Print one JSON object (cudnn-doctor/install/1)."),
        verbose: bool = typer.Option(False, "-v", "--verbose", help="Show every detail."),
    ) -> None:
        """Remove exactly what the last install into PREFIX wrote, and restore what it replaced."""
        from cudnn_doctor.commands.install import run_uninstall

        _run("uninstall", lambda ui: run_uninstall(prefix, dry_run, yes, force, ui), json_output, verbose,
             yes or dry_run)


def _run(command: str, action: Any, json_output: bool, verbose: bool, no_prompt: bool) -> None:
    from rich.console import Console

    from cudnn_doctor.cli import _console
    from cudnn_doctor.commands.install import Ui
    from cudnn_doctor.errors import DoctorError
    from cudnn_doctor.install.outcome import UninstallPlan, failure_to_json, outcome_to_json
    from cudnn_doctor.render import install_text as render
    from cudnn_doctor.render.json_out import write_json

    console = _console(stderr=json_output)  # a closed stdout ends quietly, as in every command
    shown: list[Any] = []

    def show_plan(plan: Any) -> None:
        shown.append(plan)
        if json_output:
            return
        if isinstance(plan, UninstallPlan):
            render.render_uninstall_plan(plan, console)
        else:
            render.render_plan(plan, console, verbose)

    def confirm(question: str) -> bool:
        if not sys.stdin.isatty():
            raise DoctorError("nothing was changed: the plan needs a yes, and there is no terminal to ask",
                              "add --yes (or --dry-run to only see the plan)", exit_code=2)
        return typer.confirm(question, default=False, err=True)

    def note(text: str) -> None:
        Console(stderr=True, highlight=False).print(f"cudnn-doctor: {text}", markup=False)

    ui = Ui(show_plan=show_plan, confirm=confirm, note=note,
            progress=not json_output and sys.stderr.isatty())
    try:
        outcome = action(ui)
    except DoctorError as error:
        if json_output:
            write_json(failure_to_json(command, error, shown[-1] if shown else None))
        from cudnn_doctor.install.safety import printable

        # paths and names in the message are the user's or an archive's: no escape code reaches the terminal
        error.message, error.fix = printable(error.message), printable(error.fix) if error.fix else error.fix
        raise
    if json_output:
        write_json(outcome_to_json(outcome))
    else:
        render.render_outcome(outcome, console)
    raise typer.Exit(outcome.exit_code)
