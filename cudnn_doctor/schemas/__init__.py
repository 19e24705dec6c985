"""JSON Schemas of every `--json` output, shipped in the package: `python -m cudnn_doctor.schemas NAME` prints one."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

FOLDER = Path(__file__).resolve().parent
NAMES = ("report", "compat", "explain", "install", "bench", "fleet", "plan", "error", "image", "p2p")


def schema_path(name: str) -> Path:
    """The file of the schema NAME (`report` for `cudnn-doctor/report/1`, ...)."""
    return FOLDER / f"{name}.schema.json"


LIMIT = 16 << 20  # each is kilobytes


class DamagedSchema(Exception):
    """A schema file of the installed package that cannot be read or is not a JSON object, in words."""


def schema_text(name: str) -> str:
    """The text of the schema NAME, read as a hostile file is (this package imports nothing of the doctor's: its
    reader is written out here): never waiting on a FIFO, only a regular file of at most LIMIT bytes, UTF-8 text
    holding one JSON object; anything else is DamagedSchema."""
    import os
    import stat

    path = schema_path(name)
    try:
        descriptor = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except OSError as error:
        raise DamagedSchema(f"{path}: {error.strerror or error}") from None
    try:
        info = os.fstat(descriptor)
        if not stat.S_ISREG(info.st_mode) or info.st_size > LIMIT:
            raise DamagedSchema(f"{path}: not a regular file of at most {LIMIT} bytes")
        raw = os.read(descriptor, LIMIT + 1)
    except OSError as error:
        raise DamagedSchema(f"{path}: {error.strerror or error}") from None
    finally:
        os.close(descriptor)
    try:
        text = raw.decode("utf-8")
        if not isinstance(json.loads(text), dict):
            raise ValueError("not a JSON object")
    except (ValueError, RecursionError) as error:
        raise DamagedSchema(f"{path}: not a JSON Schema ({str(error)[:200]})") from None
    return text


def load_schema(name: str) -> dict[str, Any]:
    return json.loads(schema_text(name))  # type: ignore[no-any-return]
