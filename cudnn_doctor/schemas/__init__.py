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


def load_schema(name: str) -> dict[str, Any]:
    return json.loads(schema_path(name).read_text(encoding="utf-8"))  # type: ignore[no-any-return]
