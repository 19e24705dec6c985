"""Read the TOML files of compat/ (the product's knowledge), once per process.

tomllib takes ~90 ms for the larger tables, so each parsed file is kept as JSON
in the cache folder, keyed by the file's size and modification time.
"""

from __future__ import annotations

import functools
import json
import os
from pathlib import Path
from typing import Any

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib  # type: ignore[no-redef]

PACKAGE_DATA = Path(__file__).resolve().parents[1] / "_data" / "compat"
SOURCE_TREE = Path(__file__).resolve().parents[2] / "compat"


def compat_dir() -> Path:
    """compat/ inside an installed wheel, or beside the package in a source checkout."""
    return PACKAGE_DATA if PACKAGE_DATA.is_dir() else SOURCE_TREE


@functools.cache
def load(subject: str) -> dict[str, Any]:
    """The parsed compat/SUBJECT.toml, or {} when that file is absent."""
    path = compat_dir() / f"{subject}.toml"
    try:
        stat = path.stat()
    except OSError:
        return {}
    from cudnn_doctor.cache import cache_dir

    cached = cache_dir() / "compat" / f"{subject}-{stat.st_size}-{stat.st_mtime_ns}.json"
    try:
        return json.loads(cached.read_text())  # type: ignore[no-any-return]
    except (OSError, ValueError):
        pass
    with path.open("rb") as handle:
        data = tomllib.load(handle)
    try:
        cached.parent.mkdir(parents=True, exist_ok=True)
        temporary = cached.with_suffix(f".{os.getpid()}.tmp")
        temporary.write_text(json.dumps(data))
        os.replace(temporary, cached)
    except OSError:
        pass  # a read-only cache only costs time
    return data


def sublibrary_names() -> dict[int, list[str]]:
    """cuDNN major -> the sub-library base names of that generation (compat/cudnn.toml)."""
    names: dict[int, list[str]] = {}
    for generation in load("cudnn").get("generation", []):
        names[int(generation["major"])] = list(generation.get("sublibraries", []))
    return names
