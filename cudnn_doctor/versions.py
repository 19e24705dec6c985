"""Small, forgiving version helpers for the dotted versions NVIDIA prints."""

from __future__ import annotations

import re


def version_tuple(text: str | None) -> tuple[int, ...] | None:
    """"12.4.1" -> (12, 4, 1); "580.159.04" -> (580, 159, 4); None or junk -> None."""
    if not text:
        return None
    match = re.match(r"^\s*v?(\d+(?:\.\d+)*)", str(text))
    if not match:
        return None
    return tuple(int(part) for part in match.group(1).split("."))


def major_minor(text: str | None) -> tuple[int, int] | None:
    parts = version_tuple(text)
    if parts is None:
        return None
    return (parts[0], parts[1] if len(parts) > 1 else 0)


def major(text: str | None) -> int | None:
    parts = version_tuple(text)
    return parts[0] if parts else None


def matches_prefix(version: str | None, prefix: str) -> bool:
    """Does VERSION fall in the series PREFIX names ("8.9" holds 8.9.7; "5" holds 5.1.10)?"""
    have, want = version_tuple(version), version_tuple(prefix)
    if have is None or want is None:
        return False
    padded = have + (0,) * max(0, len(want) - len(have))
    return padded[: len(want)] == want


def in_range(version: str | None, text_range: str) -> bool | None:
    """Is VERSION within "12.0-12.4" (inclusive, by major.minor)? None when unparseable."""
    have = major_minor(version)
    bounds = [major_minor(part) for part in text_range.split("-")]
    if have is None or not bounds or any(b is None for b in bounds):
        return None
    low, high = bounds[0], bounds[-1]
    return low <= have <= high  # type: ignore[operator]
