"""Numbers as every JSON reader reads them: JavaScript and jq hold a number as a double, so an integer beyond +-2^53
comes back as another one (2^64 + 1 reads 18446744073709551616), and a strict reader refuses NaN and Infinity, which
Python's json writes by default. What the doctor prints carries such a value as a string (an integer's digits) or
null (a float that is no number), and a child's answer is taken with them as its words."""

from __future__ import annotations

import math
from typing import Any

EXACT = 2**53  # beyond it a double skips integers
MAX_DIGITS = 4300  # Python's own limit on int() and str() of an integer (sys.get_int_max_str_digits' default)
MAX_DEPTH = 64  # levels of nesting kept of what another program answers (a report is a few levels deep)


def loads(text: str | bytes, **options: Any) -> Any:
    """TEXT (JSON another program or file wrote) as json.loads reads it, but an integer of more than MAX_DIGITS digits
    is kept as its digits (json.loads raises ValueError there: int()'s limit), and what is nested deeper than MAX_DEPTH
    is cut to words (each reader walks what it is given, and Python's recursion has a limit). Raises ValueError (not
    JSON) and RecursionError (nested past what the parser goes) as json.loads does."""
    import json

    read = json.loads(text, parse_int=_integer, **options)
    return shallow(read)


def _integer(digits: str) -> int | str:
    return int(digits) if len(digits.lstrip("+-")) <= MAX_DIGITS else digits


def shallow(value: Any, depth: int = MAX_DEPTH) -> Any:
    """VALUE with what is nested deeper than DEPTH levels in words."""
    if isinstance(value, dict):
        if depth <= 0:
            return f"(an object nested deeper than {MAX_DEPTH} levels)"
        return {key: shallow(item, depth - 1) for key, item in value.items()}
    if isinstance(value, list):
        if depth <= 0:
            return f"(a list nested deeper than {MAX_DEPTH} levels)"
        return [shallow(item, depth - 1) for item in value]
    return value


def digits_of(value: int) -> str:
    """VALUE's decimal digits, or words where it has more than MAX_DIGITS (str() raises there)."""
    if value.bit_length() > MAX_DIGITS * 3:  # 10**4300 has 14,285 bits: this is sure to be under the limit
        return f"(an integer of {value.bit_length()} bits)"
    try:
        return str(value)
    except ValueError:
        return f"(an integer of {value.bit_length()} bits)"


def exact(value: Any, non_finite: str | None = None, depth: int = MAX_DEPTH) -> Any:
    """VALUE (JSON-like: dicts, lists, tuples, strings, numbers) with every integer beyond +-2^53 as its digits, and
    every NaN or infinite float as NON_FINITE's choice: None (null), or "words" ("NaN", "Infinity", "-Infinity");
    what is nested deeper than DEPTH levels in words."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, int):
        return value if -EXACT <= value <= EXACT else digits_of(value)
    if isinstance(value, (dict, list, tuple)) and depth <= 0:
        return f"(nested deeper than {MAX_DEPTH} levels)"
    if isinstance(value, float):
        if math.isfinite(value):
            return value
        if non_finite != "words":
            return None
        return "NaN" if math.isnan(value) else "Infinity" if value > 0 else "-Infinity"
    if isinstance(value, dict):
        return {key: exact(item, non_finite, depth - 1) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [exact(item, non_finite, depth - 1) for item in value]
    return value
