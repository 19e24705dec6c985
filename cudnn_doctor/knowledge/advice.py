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
    from cudnn_doctor.quoting import quote

    filled = _Fields({key: "unknown" if value is None else value for key, value in values.items()})
    # a value inside a `command` is one word of it, quoted for the shell (a path may hold a space, $(...), a quote)
    in_command = _Words({key: quote(str(value), "bash") for key, value in filled.items()})
    parts = row["text"].split("`")
    return "`".join(string.Formatter().vformat(part, (), in_command if index % 2 else filled)
                    for index, part in enumerate(parts))


def fields_of(code: str) -> list[str]:
    """The names the advice of CODE fills in."""
    row = _table().get(code)
    return FIELD.findall(row["text"]) if row else []


class _Fields(dict):  # type: ignore[type-arg]
    def __missing__(self, key: str) -> str:
        return "the " + key.replace("_", " ")


class _Words(dict):  # type: ignore[type-arg]
    def __missing__(self, key: str) -> str:
        return "'the " + key.replace("_", " ") + "'"
