"""Read the TOML files of compat/ (the product's knowledge), once per process.

tomllib takes ~90 ms for the larger tables, so each parsed file is kept as JSON
in the cache folder, named by a digest of its content (cudnn_doctor.cache.parsed).
"""

from __future__ import annotations

import functools
import os
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pathlib import Path

# folders as strings: pathlib's import (with urllib.parse) is not on check's path
_PACKAGE = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
PACKAGE_DATA = os.path.join(_PACKAGE, "_data", "compat")
SOURCE_TREE = os.path.join(os.path.dirname(_PACKAGE), "compat")


def compat_folder() -> str:
    """compat/ inside an installed wheel, or beside the package in a source checkout."""
    return PACKAGE_DATA if os.path.isdir(PACKAGE_DATA) else SOURCE_TREE


def compat_dir() -> Path:
    """compat_folder() as a Path, for the commands and tests that walk it."""
    from pathlib import Path

    return Path(compat_folder())


@functools.cache
def load(subject: str) -> dict[str, Any]:
    """The parsed compat/SUBJECT.toml, or {} when that file is absent."""
    try:
        with open(os.path.join(compat_folder(), f"{subject}.toml"), "rb") as handle:
            raw = handle.read()
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
