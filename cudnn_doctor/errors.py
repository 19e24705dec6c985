"""The one exception type for failures the user can fix."""

from __future__ import annotations


class DoctorError(Exception):
    """A failure caused by input or environment: printed as one line with its fix."""

    def __init__(self, message: str, fix: str | None = None, exit_code: int = 2) -> None:
        super().__init__(message)
        self.message = message
        self.fix = fix
        self.exit_code = exit_code
