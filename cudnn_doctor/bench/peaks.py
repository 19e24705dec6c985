"""The GPUs' peak TFLOP/s per dtype, from peaks.toml (NVIDIA's published figures, cited)."""

from __future__ import annotations

import functools
import re
from pathlib import Path
from typing import Any

TABLE = Path(__file__).with_name("peaks.toml")


@functools.lru_cache(maxsize=1)
def load() -> list[dict[str, Any]]:
    """peaks.toml's rows, read as the doctor's own data is (knowledge/data.py): damage is one line naming the file."""
    from cudnn_doctor.knowledge.data import DamagedData, read_data_file

    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib  # type: ignore[no-redef]
    raw = read_data_file(str(TABLE))
    try:
        rows = tomllib.loads(raw.decode("utf-8")).get("gpu", [])
    except (ValueError, RecursionError) as error:  # UnicodeDecodeError and TOMLDecodeError are ValueErrors
        raise DamagedData(str(TABLE), f"not valid UTF-8 TOML ({str(error)[:200]})") from None
    if not isinstance(rows, list) or not all(isinstance(row, dict) for row in rows):
        raise DamagedData(str(TABLE), "its gpu rows are not a list of tables")
    return rows


def lookup(device_name: str | None) -> dict[str, Any] | None:
    """The row for DEVICE_NAME (the first row one of whose `match` strings it contains as whole
    words), or None."""
    if not device_name:
        return None
    for row in load():
        for fragment in row.get("match", []):
            # whole words only: "L4" must not match "L40S", nor "A10" match "A10G"
            if re.search(rf"(?<![A-Za-z0-9]){re.escape(fragment)}(?![A-Za-z0-9])", device_name, re.IGNORECASE):
                return row
    return None


def peak_tflops(device_name: str | None, key: str) -> float | None:
    row = lookup(device_name)
    value = row.get(key) if row else None
    return float(value) if value is not None else None
