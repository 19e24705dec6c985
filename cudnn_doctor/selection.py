"""Which findings count: `--select` / `--ignore` by code or prefix, as ruff selects its rules.

A finding counts when a `select` entry matches it (no `select`: every finding) and no `ignore` entry
matches it more specifically: `--ignore CD4 --select CD406` keeps CD406 and drops the other CD4xx.
Pure: the checked codes come in, two lists go out (those that count, those ignored)."""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from typing import TYPE_CHECKING

from cudnn_doctor.errors import DoctorError
from cudnn_doctor.records import record

if TYPE_CHECKING:
    from cudnn_doctor.model import Finding


@functools.cache
def code_prefix_pattern() -> re.Pattern[str]:
    return re.compile(r"CD[0-9]{0,3}")


@record(frozen=True)
class Selection:
    """The codes --select and --ignore name."""

    select: tuple[str, ...] = ()  # codes or prefixes ("CD4", "CD406"); empty: every finding
    ignore: tuple[str, ...] = ()


def parse_codes(values: Iterable[str], where: str) -> tuple[str, ...]:
    """VALUES (each may hold several, split on commas or spaces) as code prefixes, checked against the
    registry: a code or prefix that names no finding is a usage error naming WHERE it came from."""
    from cudnn_doctor.codes import CODES

    parsed: list[str] = []
    for value in values:
        for word in re.split(r"[,\s]+", value.strip()):
            if not word:
                continue
            prefix = word.upper()
            if not code_prefix_pattern().fullmatch(prefix):
                raise DoctorError(f"{where} {word}: not a finding code or prefix",
                                  fix="give a code like CD306 or a prefix like CD3; `cudnn-doctor explain CD306` describes one", code="CD001")
            if not any(code.startswith(prefix) for code in CODES):
                raise DoctorError(f"{where} {word}: no finding code starts with {prefix}",
                                  fix="see the finding codes in the README, or `cudnn-doctor explain CODE`", code="CD001")
            if prefix not in parsed:
                parsed.append(prefix)
    return tuple(parsed)


def _longest_match(code: str, prefixes: tuple[str, ...]) -> int:
    return max((len(prefix) for prefix in prefixes if code.startswith(prefix)), default=-1)


def counts(code: str, selection: Selection) -> bool:
    """Does a finding of CODE count under SELECTION? The more specific of select and ignore wins."""
    selected = _longest_match(code, selection.select) if selection.select else 0
    if selected < 0:
        return False
    return _longest_match(code, selection.ignore) < selected  # a tie goes to ignore


def select_findings(findings: list[Finding], selection: Selection) -> tuple[list[Finding], list[Finding]]:
    """FINDINGS split into those that count and those SELECTION leaves out, each list in its order."""
    kept = [f for f in findings if counts(f.code, selection)]
    ignored = [f for f in findings if not counts(f.code, selection)]
    return kept, ignored
