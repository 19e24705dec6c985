"""Writing a command's output to a file that another program reads (node_exporter, a CI system):
atomically, so that a reader never sees half a file."""

from __future__ import annotations

import os
import stat
import tempfile

from cudnn_doctor.errors import DoctorError


def check_target(path: str, option: str) -> None:
    """A usage error unless PATH can be written by a rename: a new file or a regular one, in a folder that
    exists. What is renamed over is replaced, so a device (/dev/full), a FIFO, a socket or a link never is."""
    folder = os.path.dirname(os.path.abspath(path)) if path.strip() else ""
    if not path.strip() or not os.path.isdir(folder) or os.path.isdir(path):
        raise DoctorError(f"{option} {path!r}: not a file in an existing folder", fix="give a path like DIR/NAME", code="CD006")
    try:
        mode = os.lstat(path).st_mode
    except OSError:
        return  # a new file
    if not stat.S_ISREG(mode):
        raise DoctorError(f"{option} {path!r}: exists and is not a regular file, so it is not replaced",
                          fix="give a path like DIR/NAME", code="CD006")


def write_atomically(path: str, text: str, option: str = "--output") -> None:
    """Write TEXT to PATH through a temporary file in the same folder and a rename."""
    check_target(path, option)
    folder = os.path.dirname(os.path.abspath(path))
    descriptor, temporary = tempfile.mkstemp(prefix=".cudnn-doctor-", suffix=".tmp", dir=folder)
    try:
        from cudnn_doctor.user_files import ERROR_HANDLER

        # a renderer that let a path's non-UTF-8 byte through gets it written as \xNN, never a failure
        with os.fdopen(descriptor, "w", encoding="utf-8", errors=ERROR_HANDLER) as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(temporary, 0o644)
        os.replace(temporary, path)
    except BaseException:
        try:
            os.unlink(temporary)
        except OSError:
            pass
        raise
