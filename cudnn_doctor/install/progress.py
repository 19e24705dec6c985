"""A rich progress bar on stderr, or nothing (with --json, or when stderr is not a terminal)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


class Progress:
    def __init__(self, enabled: bool) -> None:
        self._bar: Any = None
        if enabled:
            from rich.console import Console
            from rich.progress import BarColumn, DownloadColumn, TextColumn, TimeRemainingColumn, TransferSpeedColumn
            from rich.progress import Progress as RichProgress

            console = Console(stderr=True)
            if console.is_terminal:
                # a description holds a file's name: text, never markup (render/safe.py)
                self._bar = RichProgress(TextColumn("{task.description}", markup=False), BarColumn(), DownloadColumn(),
                                         TransferSpeedColumn(), TimeRemainingColumn(), console=console,
                                         transient=False)

    def __enter__(self) -> Progress:
        if self._bar is not None:
            self._bar.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._bar is not None:
            self._bar.stop()

    def task(self, description: str, total: int | None) -> Callable[..., None]:
        """A callback `(done, total=None)` that moves the bar to DONE bytes."""
        if self._bar is None:
            return lambda done, total=None: None
        from cudnn_doctor.streams import printable

        bar = self._bar
        task_id = bar.add_task(printable(description), total=total)

        def update(done: int, new_total: int | None = None) -> None:
            if new_total is not None:
                bar.update(task_id, completed=done, total=new_total)
            else:
                bar.update(task_id, completed=done)
        return update
