"""PEP 440 version specifiers, judged without importing packaging where both sides are plain releases.

Every cuDNN pin a framework's wheel declares in compat/ (`<10.0,>=9.12.0.46`, `~=9.0`, `==8.9.7.29`) and
most `--require` specs are clauses of plain releases (digits and dots), and cuDNN's own versions are plain
releases. For those, PEP 440 comes down to comparing release numbers padded with zeros, done here; importing
packaging to do it cost 10-15 ms of `check` on a machine with many packages (its version grammar is
compiled at import). Anything else (pre-, post-, dev-releases, epochs, local versions, wildcards, `===`, a
spec packaging refuses) goes to packaging, the reference: a test holds both to the same answers.
"""

from __future__ import annotations

import re
from typing import Any

# 0-9 only (re.ASCII): PEP 440 and packaging read no other digit, and int() reads '9\u0661' as 91
PLAIN = re.compile(r"\d{1,20}(?:\.\d{1,20}){0,15}", re.ASCII)
CLAUSE = re.compile(r"\s*(~=|==|!=|<=|>=|<|>)\s*(\d{1,20}(?:\.\d{1,20}){0,15})\s*", re.ASCII)


class InvalidSpecifier(ValueError):
    """Not a PEP 440 version specifier (packaging's words)."""


class Specifiers:
    """A comma-separated PEP 440 specifier set, such as packaging.specifiers.SpecifierSet reads."""

    __slots__ = ("text", "_clauses", "_written", "_reference")

    def __init__(self, text: str) -> None:
        self.text = text
        self._clauses = _plain_clauses(text)
        # each clause as packaging writes it back: the operator, then the version as given
        self._written = [f"{m.group(1)}{m.group(2)}" for m in map(CLAUSE.fullmatch, text.split(",")) if m]
        self._reference: Any = None
        if self._clauses is None:
            self._packaging()  # packaging decides whether it is a specifier at all

    def contains(self, version: str, prereleases: bool | None = None) -> bool:
        """Whether VERSION is in the set, as SpecifierSet.contains(VERSION, prereleases) answers."""
        release = _release(version)
        if self._clauses is not None and release is not None:  # a plain release is never a pre-release
            return all(_holds(operator, release, bound) for operator, bound in self._clauses)
        return bool(self._packaging().contains(version, prereleases=prereleases))

    def __str__(self) -> str:
        return str(self._packaging()) if self._clauses is None else ",".join(sorted(self._written))

    def _packaging(self) -> Any:
        if self._reference is None:
            from packaging.specifiers import InvalidSpecifier as Refused
            from packaging.specifiers import SpecifierSet

            try:
                self._reference = SpecifierSet(self.text)
            except Refused as error:
                raise InvalidSpecifier(str(error)) from None
        return self._reference


def _release(version: str) -> tuple[int, ...] | None:
    return tuple(int(part) for part in version.split(".")) if PLAIN.fullmatch(version) else None


def _plain_clauses(text: str) -> list[tuple[str, tuple[int, ...]]] | None:
    """The clauses of TEXT when each is an operator and a plain release; None for anything else."""
    clauses = []
    for part in text.split(","):
        if not part.strip():
            if text.strip():
                return None  # an empty clause between commas: packaging's call
            continue
        match = CLAUSE.fullmatch(part)
        if match is None:
            return None
        operator, bound = match.group(1), tuple(int(n) for n in match.group(2).split("."))
        if operator == "~=" and len(bound) < 2:
            return None  # ~=9 is no specifier: packaging says so
        clauses.append((operator, bound))
    return clauses


def _padded(left: tuple[int, ...], right: tuple[int, ...]) -> tuple[tuple[int, ...], tuple[int, ...]]:
    size = max(len(left), len(right))
    return left + (0,) * (size - len(left)), right + (0,) * (size - len(right))


def _holds(operator: str, release: tuple[int, ...], bound: tuple[int, ...]) -> bool:
    """PEP 440's comparison of two plain releases: trailing zeros do not count (9.19 == 9.19.0)."""
    if operator == "~=":  # >= bound, and the same release up to bound's last part (~=9.0: >=9.0, ==9.*)
        prefix = bound[:-1]
        return _holds(">=", release, bound) and _padded(release, prefix)[0][:len(prefix)] == prefix
    left, right = _padded(release, bound)
    return {"==": left == right, "!=": left != right, "<=": left <= right, ">=": left >= right,
            "<": left < right, ">": left > right}[operator]
