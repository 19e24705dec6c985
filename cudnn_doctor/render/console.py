"""The rich console every command prints through: one for standard output, one for standard error."""

from __future__ import annotations

from typing import Any


def console(stderr: bool = False) -> Any:
    from rich.console import Console

    from cudnn_doctor.streams import stdout_closed

    class DoctorConsole(Console):
        def on_broken_pipe(self) -> None:  # rich's own exits with 1; ours ends as every command does
            stdout_closed()

    made = DoctorConsole(stderr=stderr, highlight=False)
    made.soft_wrap = not made.is_terminal  # piped output: one line per line, no wrapping at 80
    return made
