"""The smallest group of names a test still holds for, found by halving: one question a step, a cause of one name in
the half asked or else in the other. Used where a child started without some variables answers differently (check's
refused first context, --deep's bisection over variables). Imports nothing of the package."""

from __future__ import annotations

import math
import time
from collections.abc import Callable


def smallest_group(names: list[str], holds: Callable[[list[str]], bool], ends: float = math.inf) -> list[str]:
    """Of NAMES, for which HOLDS is already known true, the smallest group seen to hold: halved while time (a
    time.monotonic() deadline, ENDS) is left, the first half asked, the second taken where it does not hold. A cause
    that needs names of both halves together leaves the smallest group that held (NAMES itself at worst)."""
    group = verified = list(names)
    while len(group) > 1 and time.monotonic() < ends:
        half = len(group) // 2
        first, second = group[:half], group[half:]
        if holds(first):
            group = verified = first
        else:  # one question a halving: a cause of one name is then in the other half, asked as it is halved
            group = second
    if group is not verified and not (time.monotonic() < ends and holds(group)):
        group = verified
    return group
