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
def _table(os_name: str = "linux") -> dict[str, dict[str, str]]:
    """Each code's advice: the row for OS_NAME where there is one (`os = "windows"`), else the general row."""
    rows = load("fixes").get("advice", [])
    general = {row["code"]: row for row in rows if "os" not in row}
    return general | {row["code"]: row for row in rows if row.get("os") == os_name}


def advice_row(code: str, os_name: str = "linux") -> dict[str, str] | None:
    return _table(os_name).get(code)


def advice(code: str, values: dict[str, Any], os_name: str = "linux") -> str:
    """The advice for CODE with VALUES filled in; a value not given reads as its name's words, not a
    placeholder ("the library"), so no template marker ever reaches a user. OS_NAME: the system it is for."""
    row = _table(os_name).get(code)
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
