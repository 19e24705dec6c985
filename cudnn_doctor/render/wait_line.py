"""What the doctor waits for, on a terminal: one transient line on stderr (a spinner and words), gone when the answer
is printed. Only where stderr is a terminal and the output is for people: never in JSON, never when piped."""

from __future__ import annotations

import sys
from types import TracebackType
from typing import Any


class WaitLine:
    """A context manager whose `say(text)` shows TEXT on the terminal's stderr, or does nothing where that is not
    a terminal (SHOWN false)."""

    def __init__(self, shown: bool) -> None:
        self.status: Any = None
        if shown and _terminal(sys.stderr):
            from rich.console import Console

            self.status = Console(stderr=True).status("", spinner="dots")

    def __enter__(self) -> WaitLine:
        if self.status is not None:
            self.status.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        if self.status is not None:
            self.status.stop()

    def say(self, text: str) -> None:
        if self.status is not None:
            from rich.text import Text

            # naming the spinner again makes rich draw the words now, not at its next tick (12 a second): words
            # replaced sooner were otherwise never on the terminal
            self.status.update(Text(text), spinner="dots")


def _terminal(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError, OSError):
        return False
