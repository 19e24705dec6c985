"""Facts from any pasted text, whatever its wording: libraries and how loading them failed, status and
error codes by name or number, pairs of versions and what they belong to, GPU architectures, and the
framework that printed it.

The knowledge is data (compat/libraries.toml, compat/status_codes.toml). The text is read line by line
with plain token scans and bounded patterns only, so the cost is linear in the input. Of a log longer than
MAX_BYTES, the first HEAD_BYTES (TensorFlow prints its loading errors at start-up) and the last TAIL_BYTES
(where the error is) are read, with a line that says which bytes were skipped between them.
"""


from __future__ import annotations

from typing import Any

from cudnn_doctor.explain.facts import (
    Arch,
    Compiler,
    CpuBuild,
    Event,
    Facts,
    Library,
    Phrase,
    Status,
    Symbol,
    VersionPair,
)
from cudnn_doctor.explain.message_text import (
    FACT_WINDOW,
    FRAMEWORK_WINDOW,
    HEAD_BYTES,
    MAX_BYTES,
    MAX_FACT_LINES,
    MAX_LINES,
    TAIL_BYTES,
    candidate_lines,
    defang,
    head_and_tail,
    set_aside,
    skip_line,
    skipped,
    split_at_skip,
    to_text,
)
from cudnn_doctor.explain.read_compile import compile_errors, host_headers
from cudnn_doctor.explain.read_events import (
    components,
    events,
    extensions,
    kernel_modules,
    missing_headers,
    placeholders,
    registered_devices,
    release_skews,
    requirements,
    supported_lists,
    toolkit_variables,
    version_gates,
)
from cudnn_doctor.explain.read_libraries import libraries, products, symbols
from cudnn_doctor.explain.read_packages import (
    build_isolation,
    conda_cuda_fallback,
    conflicts,
    cpu_builds,
    foreign_binaries,
    framework_named_libraries,
    framework_swaps,
    installed_variants,
    not_found,
    pin_clashes,
    platform_requests,
    prebuilt_wheels,
    source_builds,
)
from cudnn_doctor.explain.read_statuses import block_statuses, statuses
from cudnn_doctor.explain.read_versions import archs, compilers, frameworks, phrases, versions

__all__ = ["HEAD_BYTES", "MAX_BYTES", "TAIL_BYTES", "Facts", "candidate_lines", "defang", "head_and_tail", "read",
           "set_aside", "skip_line", "skipped", "split_at_skip", "to_text"]

def read(data: bytes | str) -> Facts:
    """Every fact in DATA (bytes or text of any size), read from the end: the last MAX_FACT_LINES lines
    that carry a fact are enough, and reading stops there. Of a log whose middle was skipped, the head is
    read too, with a budget of its own."""
    lines = candidate_lines(to_text(data))
    lowers = [line.lower() for line in lines]
    found: list[FactsOfLine] = []
    whole = "\n".join(lowers[-MAX_LINES:])[-FRAMEWORK_WINDOW:]
    cudnn_named = "cudnn" in whole
    skip = split_at_skip(lines)
    # the tail is read from its end first; then the head, with a budget of its own, so a long tail cannot hide it
    parts = [(range(len(lines) - 1, skip, -1), FACT_WINDOW, MAX_FACT_LINES)]
    if skip >= 0:
        parts.append((range(skip - 1, -1, -1), FACT_WINDOW // 4, MAX_FACT_LINES // 2))
    for indexes, budget, most in parts:  # each part read from its end; the facts kept in the order of the lines
        found[:0] = reversed(_facts_of(indexes, budget, most, lines, lowers, cudnn_named, whole))
    libraries = [item for facts in found for item in facts[0]]
    statuses = [item for facts in found for item in facts[1]]
    versions = [item for facts in found for item in facts[2]]
    archs = [item for facts in found for item in facts[3]]
    phrases = [item for facts in found for item in facts[4]]
    symbols = [item for facts in found for item in facts[5]]
    cpu_builds = [item for facts in found for item in facts[6]]
    compilers = [item for facts in found for item in facts[7]]
    events = [item for facts in found for item in facts[8]]
    missing = (build_isolation(lines, lowers) + framework_named_libraries(lines, lowers) + conda_cuda_fallback(lines, lowers)
               + not_found(lines, lowers) + platform_requests(lines, lowers) + prebuilt_wheels(lines, lowers)
               + installed_variants(lines, lowers, refused=bool(cpu_builds)) + source_builds(lines, lowers)
               + foreign_binaries(lines, lowers))
    # a resolver's line that reports no build of a package ("Because X==V has no wheels with a matching platform tag ... we
    # can conclude that your requirements are unsatisfiable") is that, not a clash between two requirements
    reported = {_base(name) for item in missing for name in item.packages}
    clashes = [item for item in framework_swaps(lines, lowers) + conflicts(lines, lowers) + pin_clashes(lines, lowers)
               if not item.packages or not {_base(name) for name in item.packages} <= reported]
    return Facts(libraries=tuple(libraries), symbols=tuple(_unique(symbols, lambda s: s.name)), statuses=tuple(_unique(statuses, lambda s: (s.api, s.name))),
                 versions=tuple(_unique(versions, lambda v: (v.subject, v.built, v.found))),
                 archs=tuple(_unique(archs, lambda a: (a.compute_capability, a.cue))),
                 phrases=tuple(_unique(phrases, lambda p: p.text)), conflicts=tuple(clashes),
                 cpu_builds=tuple(_unique(cpu_builds, lambda c: c.text)), compilers=tuple(_unique(compilers, lambda c: c.name)),
                 not_found=tuple(missing), events=tuple(_unique(events, lambda e: (e.kind, e.code, e.text))),
                 frameworks=frameworks(lowers), lines=tuple(lines))


FactsOfLine = tuple[list["Library"], list["Status"], list["VersionPair"], list["Arch"], list["Phrase"], list["Symbol"],
                    list["CpuBuild"], list["Compiler"], list["Event"]]


def _facts_of(indexes: range, budget: int, most: int, lines: list[str], lowers: list[str], cudnn_named: bool,
              whole: str) -> list[FactsOfLine]:
    """The facts of the lines at INDEXES (read in that order), until BUDGET characters or MOST lines with facts."""
    found: list[FactsOfLine] = []
    for index in indexes:
        line, lower = lines[index], lowers[index]
        budget -= len(line) + 1
        if budget < 0:
            break
        digits = _has_digit(line)
        pairs = versions(index, line, lower) if digits else []
        # "X was built for:" on one line, the versions on the next; a line that gives versions of its own ends its
        # sentence there (Paddle's banner "Runtime API Version: 11.8", then "cuDNN Version: 8.9." are two facts, not a pair)
        if digits and not pairs and index > 0 and _introduces(lines[index - 1]):
            pairs = versions(index, lines[index - 1] + " | " + line, lowers[index - 1] + " | " + lower)
        # a phrase or event wrapped over two lines ("Resource exhausted: Out\nof memory while trying to allocate") is
        # read across the break: the line's words and the next line's, one space between
        wrapped = lower.rstrip() + " " + lowers[index + 1].lstrip() if index + 1 < len(lowers) else lower
        named = libraries(index, line, lower, lowers)
        # a product named beside its own file on the line ("Unable to load cudart library .../libcudart.so.12") is
        # that file: the file's failure is the fact
        found_products = [p for p in products(index, lower) if p.name not in {library.name for library in named}]
        facts = (named + found_products, statuses(index, line, lower, cudnn_named) + block_statuses(index, lowers), pairs,
                 archs(index, line, lower), phrases(index, wrapped), symbols(index, line, lower, lines),
                 cpu_builds(index, lower, wrapped), compilers(index, lower, whole),
                 events(index, line, wrapped) + kernel_modules(index, lowers) + components(index, lowers)
                 + extensions(index, lower) + requirements(index, lower) + toolkit_variables(index, lower)
                 + release_skews(index, line, lower) + version_gates(index, line, lower) + supported_lists(index, lower)
                 + placeholders(index, lower) + missing_headers(index, lower) + compile_errors(index, line, lower)
                 + registered_devices(index, lowers)
                 + host_headers(index, lines, lowers))
        if any(facts):
            found.append(facts)
            if len(found) >= most:
                break
    return found


def _base(requirement: str) -> str:
    """A requirement's distribution name ("nvidia-nccl-cu12==2.26.2" -> "nvidia-nccl-cu12"), lower case."""
    for mark in "=<>~![ ;(":
        requirement = requirement.split(mark, 1)[0]
    return requirement.strip().lower()


def _introduces(line: str) -> bool:
    """Does LINE leave its sentence to the next line: it does not end with a number of its own (a banner's
    "Runtime API Version: 11.8" is a fact complete on its line)?"""
    return not line.rstrip().rstrip(".,;").endswith(tuple("0123456789"))


def _has_digit(text: str) -> bool:
    return any(digit in text for digit in "0123456789")


def _unique(items: list[Any], key: Any) -> list[Any]:
    seen: set[Any] = set()
    out = []
    for item in items:
        if key(item) not in seen:
            seen.add(key(item))
            out.append(item)
    return out
