"""What a loader's words say went wrong with a library (compat/libraries.toml [[failure]]): the one reading of them
that `explain` (a pasted message) and `check`'s rules (what a loading child was told) share.

Kinds: missing, symbol, version, wrong-arch, broken, init, and the others the table names. "broken" and
"wrong-arch" are a file that is there but is no library for this machine (a Git LFS pointer, a file cut short, a
library of another architecture): the file is the cause, not the search."""

from __future__ import annotations

import functools

from cudnn_doctor.knowledge.data import load

NOT_A_LIBRARY = ("broken", "wrong-arch")  # the file itself cannot be loaded here, wherever it is found


@functools.cache
def failure_texts() -> tuple[tuple[str, str], ...]:
    """(text in lower case, kind) of every loader failure the data knows, in the table's order (its rank)."""
    return tuple((row["text"], row["kind"]) for row in load("libraries").get("failure", []))


def failure_kind(words: str) -> str | None:
    """The kind of the first failure text in WORDS (a loader's or a program's message), or None."""
    lower = words.lower()
    found = [(at, kind) for text, kind in failure_texts() if (at := lower.find(text)) >= 0]
    return min(found)[1] if found else None
