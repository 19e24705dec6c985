"""The one exception type for failures the user can fix. It imports nothing of the package: every layer
raises it, and codes.doctor_error() makes the one of a registry code."""

from __future__ import annotations

from typing import Any


class DoctorError(Exception):
    """A failure caused by input or environment: printed as one line with its fix.

    Every one carries a code of the registry (codes.py): a failure of the machine or of an install carries the
    registry's Finding (codes.doctor_error), so the text and JSON of every command show its title and fix; a
    user's error carries the code of its class (CODE: CD001 a value an option does not take, CD004 no such file,
    ...), with its own message and fix. tests/test_errors.py holds both.
    """

    def __init__(self, message: str, fix: str | None = None, exit_code: int = 2, finding: Any = None,
                 code: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.fix = fix
        self.exit_code = exit_code
        self.finding = finding  # a cudnn_doctor.model.Finding, or None
        self.code = finding.code if finding is not None else code
