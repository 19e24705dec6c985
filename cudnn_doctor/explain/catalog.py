"""The catalog of specific causes (compat/errors.toml): bounded patterns, searched only in the lines
that can carry a fact, so that no input can make them slow."""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import Any

from cudnn_doctor.explain.message_text import split_at_skip
from cudnn_doctor.knowledge.data import load
from cudnn_doctor.knowledge.gpu_distributions import expand
from cudnn_doctor.versions import ascii_digits

WINDOW = 64_000  # the catalog reads at most the last this many characters of the candidate lines


@dataclass(frozen=True)
class Match:
    id: str
    code: str
    framework: str
    cause: str
    fix: str
    source: str
    priority: int
    matched: str  # the text the pattern matched
    values: dict[str, str]  # named groups, normalised
    fix_without: str = ""  # the fix where a value its commands need is not in the message
    code_by_part: tuple[tuple[str, str], ...] = ()  # (part, code): the code where the library named is of that part


@functools.cache
def compiled() -> tuple[tuple[dict[str, Any], re.Pattern[str]], ...]:
    entries = load("errors").get("error", [])
    # {gpu_package}: the GPU stack's distributions from one table (knowledge/gpu_distributions.py)
    return tuple((entry, re.compile(expand(entry["pattern"]), re.IGNORECASE | re.DOTALL)) for entry in entries)


@functools.cache
def wrappers() -> frozenset[str]:
    """Ids of the entries marked `wrapper`: messages that only say that something failed inside them."""
    return frozenset(entry["id"] for entry in load("errors").get("error", []) if entry.get("wrapper"))


def match_lines(lines: tuple[str, ...] | list[str], stack_library_named: bool = True) -> list[Match]:
    """Catalog entries found in LINES, best first: only those of the highest priority that matched, so a
    summary line never outranks the specific message under it. Entries about the loader in general
    (`stack_library = true`: a too old glibc, a wrong ELF class) hold only where STACK_LIBRARY_NAMED,
    that is where the message names a library of the GPU stack: the same words about matplotlib's
    extension are not the doctor's business."""
    skip = split_at_skip(lines)
    if skip >= 0:  # a log whose middle was skipped: its head is searched too, within a share of the window
        head = "\n".join(lines[:skip])
        if len(head) > WINDOW // 4:  # its first lines (start-up errors) and its last ones
            head = head[:WINDOW // 8] + "\n" + head[-(WINDOW // 8):]
        text = head + "\n" + "\n".join(lines[skip + 1:])[-WINDOW:]
    else:
        text = "\n".join(lines)[-WINDOW:]
    lower = text.lower()
    found: list[Match] = []
    for entry, pattern in compiled():
        if not all(word in lower for word in entry.get("requires", ())):
            continue
        if entry.get("stack_library") and not stack_library_named:
            continue
        hit = fullest(pattern, text)
        if hit is None:
            continue
        values = {key: normalise(key, value) for key, value in hit.groupdict().items() if value}
        found.append(Match(entry["id"], entry["code"], entry["framework"], entry["cause"].strip(),
                           entry["fix"].strip(), entry["source"].strip(), int(entry.get("priority", 0)),
                           " ".join(hit.group(0).split())[:300], values, entry.get("fix_without", "").strip(),
                           tuple(sorted(entry.get("code_by_part", {}).items()))))
    if not found:
        return []
    top = max(m.priority for m in found)
    return sorted((m for m in found if m.priority == top), key=lambda m: m.id)


MORE_HITS = 8  # later places a pattern is looked for when its first leaves a value of the message out


def fullest(pattern: re.Pattern[str], text: str) -> re.Match[str] | None:
    """The pattern's first hit in TEXT, or where that one leaves some of its named values out, the hit among the next
    few that fills the most: a traceback quotes the line that raises (`raise RuntimeError("Detected that PyTorch and
    torchvision were compiled with different CUDA versions. "`) before the message it prints with its values
    (`PyTorch has CUDA Version=11.3`), and the answer's values come from the message, never from words in their place."""
    first = pattern.search(text)
    if first is None or all(value is not None for value in first.groupdict().values()):
        return first
    best, filled = first, sum(value is not None for value in first.groupdict().values())
    for number, hit in enumerate(pattern.finditer(text, first.end())):
        if number >= MORE_HITS:
            break
        count = sum(value is not None for value in hit.groupdict().values())
        if count > filled:
            best, filled = hit, count
    return best


def normalise(key: str, value: str) -> str:
    """Versions as the catalog captured them -> dotted form ("8100" -> "8.1.0", "86" -> "8.6")."""
    value = value.strip().strip("'\"()")
    if key in ("runtime_version", "compiled_version"):
        if re.fullmatch(r"\d{1,3},\s{0,3}\d{1,3},\s{0,3}\d{1,3}", value):  # PyTorch prints (8, 3, 2)
            return ".".join(part.strip() for part in value.split(","))
        if ascii_digits(value):
            number = int(value)
            if number >= 90000:
                return f"{number // 10000}.{(number % 10000) // 100}.{number % 100}"
            return f"{number // 1000}.{(number % 1000) // 100}.{number % 100}"
    if key in ("cuda_version", "torch_cuda") and ascii_digits(value):
        number = int(value)
        if number >= 1000:  # driver-API encoding: 12080 -> 12.8
            return f"{number // 1000}.{(number % 1000) // 10}"
        if len(value) == 2 and 10 <= number <= 19:  # a major alone: cudart64_12.dll, jax_plugins.xla_cuda13
            return value
        return f"{value[:-1]}.{value[-1]}"  # cudart64_110.dll -> 11.0, cudart64_92.dll -> 9.2
    if key == "compute_capability" and ascii_digits(value):
        return f"{value[:-1]}.{value[-1]}"
    return value
