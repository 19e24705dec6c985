"""Read the TOML files of compat/ (the product's knowledge), once per process.

tomllib takes ~90 ms for the larger tables, so each parsed file is kept as JSON
in the cache folder, named by a digest of its content (cudnn_doctor.cache.parsed).
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

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
        raw = path.read_bytes()
    except OSError:
        return {}
    from cudnn_doctor.cache import parsed

    return parsed("compat", subject, raw, _parse_toml)  # type: ignore[no-any-return]


def _parse_toml(raw: bytes) -> dict[str, Any]:
    """The TOML parser is imported only when the cache has no parsed copy (the first run after an update)."""
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib  # type: ignore[no-redef]
    return tomllib.loads(raw.decode("utf-8"))


def sublibrary_names() -> dict[int, list[str]]:
    """cuDNN major -> the sub-library base names of that generation (compat/cudnn.toml)."""
    names: dict[int, list[str]] = {}
    for generation in load("cudnn").get("generation", []):
        names[int(generation["major"])] = list(generation.get("sublibraries", []))
    return names
