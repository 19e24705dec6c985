"""compat/platforms.toml: JetPack releases and the treatments that fit each platform."""

from __future__ import annotations

import functools
import re
from typing import Any

from cudnn_doctor.knowledge.data import load
from cudnn_doctor.versions import major_minor, version_tuple

# NVIDIA_REQUIRE_CUDA: space-separated alternatives are ORed, comma-separated constraints ANDed (libnvidia-container)


@functools.cache
def constraint_pattern() -> re.Pattern[str]:
    return re.compile(r"^(cuda|driver|arch|brand)(>=|<=|==|=|>|<)(\S+)$")


def jetpack_row(l4t: str | None) -> dict[str, Any] | None:
    """The [[jetpack]] row of Jetson Linux L4T: the newest row of its major.minor that is not newer than it
    (L4T 36.4.4 is JetPack 6.2, whose row is 36.4.3)."""
    have = version_tuple(l4t)
    if not have:
        return None
    rows = [r for r in load("platforms").get("jetpack", [])
            if (version_tuple(r["l4t"]) or ())[:2] == have[:2] and _padded(r["l4t"]) <= _padded(l4t)]
    return max(rows, key=lambda r: _padded(r["l4t"]), default=None)


def treatment(platform: str, name: str, engine: str | None = None) -> dict[str, Any]:
    """The [[treatment]] row PLATFORM/NAME (its text and source); in a container of ENGINE, the row made for that
    engine instead of NAME where there is one (Apptainer's --nv instead of Docker's --gpus)."""
    rows = load("platforms").get("treatment", [])
    if engine is not None:
        for row in rows:
            if row["platform"] == platform and row.get("instead_of") == name and engine in row.get("engines", ()):
                return row  # type: ignore[no-any-return]
    return next(r for r in rows if (r["platform"], r["id"]) == (platform, name))


def _padded(text: str | None) -> tuple[int, ...]:
    found = version_tuple(text) or ()
    return tuple(found) + (0,) * (3 - len(found))


def required_cuda(require: str) -> str | None:
    """The CUDA major.minor an image's NVIDIA_REQUIRE_CUDA asks of the driver (its cuda>= constraint), or None."""
    for alternative in require.split():
        for clause in alternative.split(","):
            match = constraint_pattern().match(clause.strip())
            found = major_minor(match.group(3)) if match and match.group(1) == "cuda" and \
                match.group(2) in (">=", ">") else None
            if found:
                return f"{found[0]}.{found[1]}"
    return None


def driver_alternative_met(require: str, driver: str | None) -> bool:
    """Whether an alternative of NVIDIA_REQUIRE_CUDA made of driver constraints alone is met by DRIVER (one that names
    a brand or an architecture is not counted: the GPU's brand is not read)."""
    have = version_tuple(driver)
    if not have:
        return False
    for alternative in require.split()[1:]:
        clauses = [constraint_pattern().match(c.strip()) for c in alternative.split(",")]
        if not clauses or any(c is None or c.group(1) != "driver" for c in clauses):
            continue
        if all(_compare(have, c.group(2), version_tuple(c.group(3)) or ()) for c in clauses if c):
            return True
    return False


def _compare(have: tuple[int, ...], op: str, want: tuple[int, ...]) -> bool:
    have = have[:len(want)] if want else have
    return {">=": have >= want, ">": have > want, "<=": have <= want, "<": have < want, "==": have == want,
            "=": have == want}[op]
