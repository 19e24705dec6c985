"""Read a user's file as if it were hostile, and print what came from one safely.

Every file of the user's may be a FIFO (opening it for reading would wait for a writer forever),
a device, a folder, huge, or not UTF-8. `read_user_file` opens without blocking, reads only
regular files, and only up to a limit; what it refuses it says in words (`UnreadableFile`).

Paths are bytes on Linux. Python hands them to us as str with the bytes that are not UTF-8 kept
as lone surrogates (surrogateescape), which is right for opening and comparing them, but may not
be written as text or JSON: `escaped` turns those into `\\xNN`, and `escape_output` makes every
write to stdout and stderr do the same.
"""

from __future__ import annotations

import codecs
import contextlib
import os
import stat
import sys
from collections.abc import Iterator
from typing import Any, BinaryIO

from cudnn_doctor.operating_system import CURRENT

METADATA_LIMIT = 1 << 20  # version.json, METADATA, .theanorc: kilobytes in real life
SOURCE_LIMIT = 8 << 20  # build_info.py, headers


class UnreadableFile(Exception):
    """Why a user's file was not read, in words."""


@contextlib.contextmanager
def _regular_file(path: str) -> Iterator[tuple[int, os.stat_result]]:
    """PATH opened without blocking (a FIFO with no writer would wait forever), and its fstat; anything but a
    regular file, or any OSError on the way, is UnreadableFile. The descriptor is closed on leaving."""
    flags = os.O_RDONLY | CURRENT.open_flags | getattr(os, "O_NOCTTY", 0)
    try:
        descriptor = os.open(path, flags)
    except OSError as error:
        raise UnreadableFile(error.strerror or str(error)) from None
    try:
        info = os.fstat(descriptor)
        if not stat.S_ISREG(info.st_mode):
            raise UnreadableFile("not a regular file (a FIFO, device or folder), so it was not read")
        yield descriptor, info
    except OSError as error:
        raise UnreadableFile(error.strerror or str(error)) from None
    finally:
        os.close(descriptor)


def open_user_file(path: str) -> BinaryIO:
    """The regular file PATH opened to read as a stream (an archive read piece by piece), opened without blocking
    and checked as read_user_file's are: a FIFO (which would wait for a writer forever), a device (/dev/zero would
    be read without end) or a folder is UnreadableFile, as is one that cannot be opened."""
    flags = os.O_RDONLY | CURRENT.open_flags | getattr(os, "O_NOCTTY", 0)
    try:
        descriptor = os.open(path, flags)
    except OSError as error:
        raise UnreadableFile(error.strerror or str(error)) from None
    try:
        if not stat.S_ISREG(os.fstat(descriptor).st_mode):
            raise UnreadableFile("not a regular file (a FIFO, device or folder), so it was not read")
        return os.fdopen(descriptor, "rb")
    except BaseException as error:
        os.close(descriptor)
        if isinstance(error, OSError):
            raise UnreadableFile(error.strerror or str(error)) from None
        raise


def read_user_file(path: str, limit: int = METADATA_LIMIT) -> bytes:
    """The bytes of the regular file PATH, at most LIMIT of them; a FIFO, device, folder or bigger
    file is refused with UnreadableFile, as is one that cannot be opened (FileNotFoundError included)."""
    with _regular_file(path) as (descriptor, info):
        if info.st_size > limit:
            raise UnreadableFile(f"larger than {limit} bytes ({info.st_size}), so it was not read")
        chunks = []
        size = 0
        while size <= limit:
            chunk = os.read(descriptor, min(1 << 20, limit + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        if size > limit:
            raise UnreadableFile(f"larger than {limit} bytes, so it was not read")
        return b"".join(chunks)


def read_user_head(path: str, size: int) -> bytes:
    """The first SIZE bytes of the regular file PATH (a program, a library), however big it is."""
    with _regular_file(path) as (descriptor, _info):
        return os.read(descriptor, size)


def read_user_text(path: str, limit: int = METADATA_LIMIT) -> str:
    """read_user_file decoded as UTF-8; bytes that are not UTF-8 become U+FFFD."""
    return read_user_file(path, limit).decode("utf-8", "replace")


def read_text_or_empty(path: str, limit: int = METADATA_LIMIT) -> str:
    """The text of PATH, or "" when it is missing or cannot be read for any reason."""
    try:
        return read_user_text(path, limit)
    except UnreadableFile:
        return ""


def is_regular_file(path: str) -> bool:
    """Is PATH (links followed) a regular file? Never opens it."""
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except (OSError, ValueError):
        return False


def escape_strings(value: Any) -> Any:
    """VALUE (JSON-like: dicts, lists, strings) with every string escaped(): JSON never carries a
    lone surrogate."""
    if isinstance(value, str):
        return escaped(value)
    if isinstance(value, dict):
        return {escaped(str(key)): escape_strings(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [escape_strings(item) for item in value]
    return value


def _escape_surrogates(error: UnicodeError) -> tuple[str, int]:
    if not isinstance(error, UnicodeEncodeError):
        raise error
    bad = error.object[error.start:error.end]
    out = []
    for character in bad:
        code = ord(character)
        out.append(f"\\x{code - 0xDC00:02x}" if 0xDC80 <= code <= 0xDCFF else f"\\u{code:04x}")
    return "".join(out), error.end


ERROR_HANDLER = "cudnn-doctor-escape"
codecs.register_error(ERROR_HANDLER, _escape_surrogates)


def escaped(text: str) -> str:
    """TEXT with the bytes of a path that were not UTF-8 (lone surrogates) written as \\xNN."""
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return text.encode("utf-8", ERROR_HANDLER).decode("utf-8")


def escape_output() -> None:
    """Make stdout and stderr write a path's non-UTF-8 bytes as \\xNN instead of failing."""
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            try:
                reconfigure(errors=ERROR_HANDLER)
            except (ValueError, OSError):  # a closed or detached stream
                pass
