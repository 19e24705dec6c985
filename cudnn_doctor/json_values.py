"""Numbers as every JSON reader reads them: JavaScript and jq hold a number as a double, so an integer beyond +-2^53
comes back as another one (2^64 + 1 reads 18446744073709551616), and a strict reader refuses NaN and Infinity, which
Python's json writes by default. What the doctor prints carries such a value as a string (an integer's digits) or
null (a float that is no number), and a child's answer is taken with them as its words."""

from __future__ import annotations

import math
from typing import Any

EXACT = 2**53  # beyond it a double skips integers


def exact(value: Any, non_finite: str | None = None) -> Any:
    """VALUE (JSON-like: dicts, lists, tuples, strings, numbers) with every integer beyond +-2^53 as its digits, and
    every NaN or infinite float as NON_FINITE's choice: None (null), or "words" ("NaN", "Infinity", "-Infinity")."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, int):
        return value if -EXACT <= value <= EXACT else str(value)
    if isinstance(value, float):
        if math.isfinite(value):
            return value
        if non_finite != "words":
            return None
        return "NaN" if math.isnan(value) else "Infinity" if value > 0 else "-Infinity"
    if isinstance(value, dict):
        return {key: exact(item, non_finite) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [exact(item, non_finite) for item in value]
    return value
