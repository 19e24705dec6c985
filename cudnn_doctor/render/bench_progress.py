"""The bench's progress on a terminal: a rich line on stderr saying which workload runs now."""

from __future__ import annotations

from types import TracebackType
from typing import Any


class WorkloadProgress:
    """A rich progress line on the terminal's stderr: which workload runs now, how many are done."""

    def __init__(self, per_device: int, devices: str) -> None:
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

        self.per_device = per_device
        self.progress = Progress(SpinnerColumn(), TextColumn("{task.description}", markup=False), BarColumn(), MofNCompleteColumn(),
                                 TimeElapsedColumn(), console=Console(stderr=True), transient=True)
        self.task = self.progress.add_task("starting the benchmark", total=per_device if devices != "all" else None)
        self.devices: set[int] = set()

    def __enter__(self) -> WorkloadProgress:
        self.progress.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        self.progress.stop()

    def update(self, device: int, event: dict[str, Any]) -> None:
        if device not in self.devices:
            self.devices.add(device)
            self.progress.update(self.task, total=self.per_device * len(self.devices))
        if "now" in event:
            self.progress.update(self.task, description=f"GPU {device}: {event['now']}", refresh=True)
        if "done" in event:
            self.progress.advance(self.task)
