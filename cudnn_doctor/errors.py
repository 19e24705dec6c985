"""The one exception type for failures the user can fix."""

from __future__ import annotations

from typing import Any

from cudnn_doctor.model import Finding


class DoctorError(Exception):
    """A failure caused by input or environment: printed as one line with its fix.

    Failures that have a finding code carry the registry's Finding (`DoctorError.of`), so the
    text and JSON of every command show the registry's title and fix; plain usage errors
    (a bad option) carry a message and a fix only.
    """

    def __init__(self, message: str, fix: str | None = None, exit_code: int = 2,
                 finding: Finding | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.fix = fix
        self.exit_code = exit_code
        self.finding = finding

    @classmethod
    def of(cls, code: str, exit_code: int = 2, subject: str | None = None, **values: Any) -> DoctorError:
        """The error for registry CODE, its explanation and fix filled in from VALUES."""
        from cudnn_doctor.codes import finding

        made = finding(code, subject=subject, **values)
        return cls(f"{made.code} {made.title}: {made.detail}", made.fix, exit_code=exit_code, finding=made)
