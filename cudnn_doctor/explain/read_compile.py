"""What a C/C++ compiler says about code built against the GPU stack's headers (issue 41, round ten): a member, a
function or a template the code uses that the installed CUDA toolkit no longer declares (compat/errors.toml
[[removed_api]]: read from NVIDIA's own headers, release against release), a cuDNN function or type the code calls
as another cuDNN release declares it, and the host's C library declaring a function CUDA's headers declare too
([[host_header]]).

Each diagnostic is read in the compilers' own forms (EDG, which nvcc's front end is; GCC; Clang), for the names it
gives; the names, not the sentence, are judged against the data.
"""

from __future__ import annotations

import functools
import itertools
import re
from typing import Any

from cudnn_doctor.explain.facts import Event
from cudnn_doctor.knowledge.data import load

# a compiler's diagnostic naming an owner (a class, struct, namespace) and a member, or a lone identifier: EDG
# (nvcc's cudafe++), GCC and Clang. Quotes are normalised to ' before matching (GCC prints ‘ ’ in UTF-8 locales).
_MEMBER = re.compile(
    r"(?:class|struct|union|namespace) '(?P<o1>[a-z_][\w:]{0,80})' has no member (?:class |function |template |"
    r"variable )?'(?P<m1>[a-z_]\w{0,80})'"  # EDG
    # GCC: "'const struct cudaDeviceProp' has no member named 'clockRate'" (the type as the code declared it)
    r"|'(?:const |volatile )?(?:struct |class |union )?(?P<o2>[a-z_][\w:]{0,80})' has no member named '(?P<m2>[a-z_]\w{0,80})'"
    # GCC, and MSVC's C2039 ("'clockRate': is not a member of 'cudaDeviceProp'")
    r"|'(?P<m3>[a-z_]\w{0,80})':? is not a member of '(?:struct |class |union )?(?P<o3>[a-z_][\w:]{0,80})'"
    r"|no member named '(?P<m4>[a-z_]\w{0,80})' in (?:namespace )?'(?:struct |class )?(?P<o4>[a-z_][\w:]{0,80})'",  # Clang
    re.IGNORECASE)
_IDENTIFIER = re.compile(
    r"identifier '(?P<i1>[a-z_]\w{0,80})' is undefined"  # EDG
    r"|'(?P<i2>[a-z_]\w{0,80})' (?:was not declared in this scope|does not name a type|has not been declared)"  # GCC
    r"|use of undeclared identifier '(?P<i3>[a-z_]\w{0,80})'"  # Clang
    r"|(?:error: |^)(?P<i4>[a-z_]\w{0,80}) is not a template"  # EDG: "texture is not a template"
    r"|'(?P<i5>[a-z_]\w{0,80})' is not a template"  # GCC
    r"|parameter of type '(?P<i6>[a-z_]\w{0,80})'"  # EDG: "int" is incompatible with parameter of type "cudnnX_t"
    r"|(?:too many|too few) arguments to function '[^'(]{0,120}?(?P<i7>\b[a-z_]\w{0,80})\("  # GCC, the callee's name
    r"|(?:too many|too few) arguments in function call",  # EDG names no function: the line's cuDNN name is read
    re.IGNORECASE)
_DIAGNOSTIC = ("error", "has no member", "is undefined", "not declared", "undeclared", "not a template",
               "incompatible with parameter", "arguments to function", "arguments in function", "does not name a type",
               "is not a member")
# a cuDNN function or type (cudnnSetConvolutionNdDescriptor, cudnnNanPropagation_t)
_CUDNN_NAME = re.compile(r"\bcudnn[A-Z]\w{2,80}")
_QUOTES = str.maketrans({"\u2018": "'", "\u2019": "'", '"': "'", "`": "'"})
_CUDA_PATH_VERSION = re.compile(r"cuda[-_/]?(\d{1,2}\.\d{1,2})\b")


@functools.cache
def _removed_rows() -> tuple[dict[str, Any], ...]:
    return tuple(load("errors").get("removed_api", []))


@functools.cache
def _removed_index() -> dict[str, tuple[dict[str, Any], ...]]:
    index: dict[str, list[dict[str, Any]]] = {}
    for row in _removed_rows():
        for name in row["names"]:
            index.setdefault(name.lower(), []).append(row)
    return {name: tuple(rows) for name, rows in index.items()}


def _names(line: str) -> list[tuple[str | None, str]]:
    """(owner, name) pairs a compiler diagnostic on LINE names, in their own case."""
    text = line.translate(_QUOTES)
    out: list[tuple[str | None, str]] = []
    for match in itertools.islice(_MEMBER.finditer(text), 4):
        owner = next(value for key, value in match.groupdict().items() if key.startswith("o") and value)
        member = next(value for key, value in match.groupdict().items() if key.startswith("m") and value)
        out.append((owner, member))
    for match in itertools.islice(_IDENTIFIER.finditer(text), 4):
        name = next((value for value in match.groupdict().values() if value), None)
        if name is not None:
            out.append((None, name))
        elif "cudnn" in text.lower():  # EDG's "too many arguments in function call": the cuDNN function the line names
            out.extend((None, found) for found in itertools.islice(_CUDNN_NAME.findall(text), 1))
    return out


@functools.cache
def _changed_index() -> dict[str, dict[str, Any]]:
    """Each function and parameter type of compat/errors.toml [[changed_api]] (lower case) -> its row."""
    return {name.lower(): row for row in load("errors").get("changed_api", [])
            for name in (*row["names"], *row["types"])}


# a diagnostic about a call's arguments, and the names it quotes (a callee, a parameter's type): EDG's "no suitable
# constructor exists to convert from "int" to "cudaMemLocation"", GCC's "expected 'CUmemLocation' ... but argument is
# of type 'CUdevice'", "passing argument 4 of 'cuMemPrefetchAsync_v2'"
_ARGUMENT_WORDS = ("argument", "parameter", "convert", "expected '")
_QUOTED = re.compile(r"'([A-Za-z_]\w{2,80}?)(?:_v\d)?[' (]|\b([A-Za-z_]\w{2,80}?)(?:_v\d)?\(")


def _changed_call(index: int, line: str, lower: str) -> list[Event]:
    if not any(word in lower for word in _ARGUMENT_WORDS) or not _changed_index():
        return []
    for found in itertools.islice(_QUOTED.finditer(line.translate(_QUOTES)), 8):
        name = found.group(1) or found.group(2)
        row = _changed_index().get(name.lower())
        if row is None:
            continue
        changed = str(row["changed_in"])
        last = f"{int(changed.split('.')[0]) - 1}.x"
        # a parameter type the new signature takes names the call only by its kind
        call = name if name in row["names"] else f"a function whose CUDA {changed} signature takes a {name}"
        values = (("api", name), ("changed_in", changed),
                  ("spec", f"CUDA {last}, the last major with the older signature (or port the call as the cause says)"))
        return [Event("api", row["code"], name, row["meaning"].replace("{name}", call), row["fix"], row["source"],
                      values, index)]
    return []


def compile_errors(index: int, line: str, lower: str) -> list[Event]:
    """A compiler's diagnostic on LINE that names what the installed CUDA toolkit removed ([[removed_api]]) or changed
    ([[changed_api]]), or a cuDNN function or type the code uses otherwise than the cuDNN installed declares it."""
    changed = _changed_call(index, line, lower) if "error" in lower or "note:" in lower else []
    if changed:
        return changed
    if not any(word in lower for word in _DIAGNOSTIC):
        return []
    for owner, name in _names(line):
        gated = _gated_index().get(name.lower())
        if gated is not None and owner is not None and owner.split("::")[-1].lower() == gated["owner"].lower():
            return [_gated_event(index, gated, f"{owner}::{name}", name)]
        for row in _removed_index().get(name.lower(), ()):
            if row.get("owner") and (owner is None or owner.split("::")[-1].lower() != row["owner"].lower()):
                continue
            if not row.get("owner") and owner is not None:
                continue
            said = f"{owner}::{name}" if owner else name
            return [_removed_event(index, row, said, name)]
        if owner is not None and owner.split("::")[0].lower() == "thrust" and name in _thrust_table().get("headers", {}):
            return [_transitive_event(index, owner, name)]
        cudnn = name if _CUDNN_NAME.fullmatch(name) else None
        if cudnn is None and owner is None and ("argument" in lower or "parameter" in lower):
            cudnn = next(iter(_CUDNN_NAME.findall(line)), None)
        if cudnn is not None:
            return [_cudnn_event(index, cudnn)]
    return []


@functools.cache
def _gated_index() -> dict[str, dict[str, Any]]:
    """Each name of compat/errors.toml [[arch_gated_api]] (lower case) -> its row: declared only for newer targets."""
    return {name.lower(): row for row in load("errors").get("arch_gated_api", []) for name in row["names"]}


def _gated_event(index: int, row: dict[str, Any], said: str, name: str) -> Event:
    values = (("api", said), ("min_cc", str(row["min_cc"])))
    return Event("api", row["code"], said, row["meaning"].replace("{name}", name), row["fix"], row["source"], values,
                 index)


def _removed_event(index: int, row: dict[str, Any], said: str, name: str) -> Event:
    removed = str(row["removed_in"])
    meaning = row["meaning"].replace("{name}", said)
    last = f"{int(removed.split('.')[0]) - 1}.x"
    values = (("api", said), ("removed_in", removed),
              ("spec", f"CUDA {last}, the last major that declares {said} (or port the code as the cause says)"))
    return Event("api", row["code"], said, meaning, row["fix"].replace("{name}", said), row["source"], values, index)


@functools.cache
def _thrust_table() -> dict[str, Any]:
    return dict(load("errors").get("thrust_headers", {}))


def _transitive_event(index: int, owner: str, name: str) -> Event:
    """A name Thrust or CUB still has, that the compiler did not find: the file relied on a header that another one
    included for it, which a newer CCCL no longer does (compat/errors.toml [thrust_headers])."""
    row = _thrust_table()
    header = str(row["headers"][name])
    include = f"#include <{header}>"
    said = f"{owner}::{name}"
    values: tuple[tuple[str, str], ...] = (("api", said), ("header", header))
    return Event("api", row["code"], said, row["meaning"].replace("{name}", said),
                 row["fix"].replace("{name}", said).replace("{include}", include), row["source"], values, index)


def _cudnn_event(index: int, name: str) -> Event:
    row = load("errors").get("cudnn_api_words", {})
    return Event("api", row.get("code", "CD320"), name, row["meaning"].replace("{name}", name),
                 row["fix"].replace("{name}", name), row["source"], (("api", name),), index)


# ------------------------------------------------------------------------ the host's C library and CUDA's headers

_PREVIOUS = re.compile(r"(?P<that>with that of\s+)?previous function '(?P<f>[a-z_]\w{0,40})'"  # EDG (wrapped: 'of' ends a line)
                       r"|declaration of '[^'(]{0,60}?\b(?P<g>[a-z_]\w{0,40})\([^']{0,200}' has a different exception"  # GCC
                       , re.IGNORECASE)
HOST_HEADER_WINDOW = 3  # EDG wraps "(declared at line N of .../crt/math_functions.h)" onto the lines after


@functools.cache
def _host_rows() -> tuple[dict[str, Any], ...]:
    return tuple(load("errors").get("host_header", []))


def host_headers(index: int, lines: list[str], lowers: list[str]) -> list[Event]:
    """The host's C library headers declaring a function the CUDA toolkit's headers declare otherwise ([[host_header]]:
    glibc 2.41's C23 sinpi/cospi against CUDA's crt/math_functions.h), read where the CUDA header is named within a few
    lines."""
    lower = lowers[index]
    if "previous function" not in lower and "different exception" not in lower and "does not take arguments" not in lower:
        return []
    text = lines[index].translate(_QUOTES)
    near = " ".join(lowers[max(0, index - 1):index + HOST_HEADER_WINDOW + 1])
    found = _PREVIOUS.search(text)
    if found and found.group("f") and not found.group("that") and "exception specification" not in near:
        found = None  # EDG's words wrapped after 'with that of' ('previous function "cospi"' begins the next line)
    function = (found.group("f") or found.group("g")) if found else None
    for row in _host_rows():
        if function is not None and function.lower() not in row.get("functions", ()):
            continue
        if function is None and not any(word in lower for word in row.get("words", ())):
            continue
        if not any(word in near for word in row["cuda_words"]):
            continue
        cuda = _CUDA_PATH_VERSION.search(near)
        values: tuple[tuple[str, str], ...] = (("host_header", row["header"]),)
        if function:
            values += (("function", function),)
        if cuda:
            values += (("cuda_version", cuda.group(1)),)
        said = f"{function}: {row['header']}" if function else row["header"]
        meaning = row["meaning"] + (f"; the toolkit's path names CUDA {cuda.group(1)}" if cuda else "")
        return [Event("host-compiler", row["code"], said, meaning, row["fix"], row["source"], values, index)]
    return []
