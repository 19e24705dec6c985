"""The one exception type for failures the user can fix. It imports nothing of the package: every layer
raises it, and codes.doctor_error() makes the one of a registry code."""

from __future__ import annotations

from typing import Any


class DoctorError(Exception):
    """A failure caused by input or environment: printed as one line with its fix.

    Failures that have a finding code carry the registry's Finding (codes.doctor_error), so the text and JSON
    of every command show the registry's title and fix; plain usage errors (a bad option) carry a message and
    a fix only.
    """

    def __init__(self, message: str, fix: str | None = None, exit_code: int = 2, finding: Any = None) -> None:
        super().__init__(message)
        self.message = message
        self.fix = fix
        self.exit_code = exit_code
        self.finding = finding  # a cudnn_doctor.model.Finding, or None
