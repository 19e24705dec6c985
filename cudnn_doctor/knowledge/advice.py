"""compat/fixes.toml: the advice of each finding code, filled with the values its rule read.

Advice is the last resort of the plan: what to do where no exact action for this machine can be computed.
"""

from __future__ import annotations

import functools
import re
import string
from typing import Any

from cudnn_doctor.knowledge.data import load

FIELD = re.compile(r"(?<!\{)\{(\w{1,40})\}(?!\})")


@functools.cache
def _table() -> dict[str, dict[str, str]]:
    return {row["code"]: row for row in load("fixes").get("advice", [])}


def advice_row(code: str) -> dict[str, str] | None:
    return _table().get(code)


def advice(code: str, values: dict[str, Any]) -> str:
    """The advice for CODE with VALUES filled in; a value not given reads as its name's words, not a
    placeholder ("the library"), so no template marker ever reaches a user."""
    row = _table().get(code)
    if row is None:
        return ""
    filled = _Fields({key: "unknown" if value is None else value for key, value in values.items()})
    return string.Formatter().vformat(row["text"], (), filled)


def fields_of(code: str) -> list[str]:
    """The names the advice of CODE fills in."""
    row = _table().get(code)
    return FIELD.findall(row["text"]) if row else []


class _Fields(dict):  # type: ignore[type-arg]
    def __missing__(self, key: str) -> str:
        return "the " + key.replace("_", " ")
