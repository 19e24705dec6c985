"""Facts from any pasted text, whatever its wording: libraries and how loading them failed, status and
error codes by name or number, pairs of versions and what they belong to, GPU architectures, and the
framework that printed it.

The knowledge is data (compat/libraries.toml, compat/status_codes.toml). The text is read line by line
with plain token scans and bounded patterns only, so the cost is linear in the input. Of a log longer than
MAX_BYTES, the first HEAD_BYTES (TensorFlow prints its loading errors at start-up) and the last TAIL_BYTES
(where the error is) are read, with a line that says which bytes were skipped between them.
"""

from __future__ import annotations

import functools
import itertools
import re
from dataclasses import dataclass, field
from typing import Any

from cudnn_doctor.knowledge.data import load
from cudnn_doctor.versions import ascii_digits

MAX_BYTES = 2_000_000  # of a longer log, its head and its tail are read, this much in all
HEAD_BYTES = 256_000  # the start of a log: a framework's loading errors
TAIL_BYTES = MAX_BYTES - HEAD_BYTES  # the end of a log, where the error is
MAX_LINE = 4096  # longer lines are read in pieces of this size
MAX_LINES = 3000  # the last lines that can carry a fact, at most
CONTEXT = 3  # lines kept on either side of one that can (a message wrapped over lines)
FRAMEWORK_WINDOW = 256_000  # the framework that printed a log is named near its end
FACT_WINDOW = 512_000  # facts are read from the last this many characters of the candidate lines
MAX_FACT_LINES = 64  # the last lines with a fact that are read; a log's error is at its end
PER_LINE = 24  # facts of one kind read from one line, at most (a real message names a few)

# Lines without any of these cannot carry a fact; most of a long log is skipped on this test alone.
TRIGGERS = (
    "cu", "dnn", "nvidia", "nvml", ".so", ".dll", "sm_", "compute_", "gpu", "driver", "capability", "kernel image",
    "ptx", "nvrtc", "jitlink", "nvinfer", "tensorrt", "onnx", "xla", "jax", "paddle", "torch", "tensorflow", "nd4j",
    "dl4j", "deeplearning4j", "theano", "container", "falling back",
    # loaders and package managers
    "java.library.path", "unsatisfiedlink", "winerror", "loadlibrary", "dlopen", "dll load", "error 12", "error 19",
    "no matching distribution", "satisfies the requirement", "nothing provides",
    # resolvers, serialized engines, engine flavours
    "conflict", "incompatible", "resolutionimpossible", "unsatisfiable", "cannot install", "no solution found",
    "version solving", "which is not installed", "serializ", "trt", "execution_context", "flavor", "nvjpeg",
    # builds without GPU support, compilers, installers that found nothing
    "compile", "built", "cpu", "nvcc", "packagesnotfound", "packagenotfound", "package missing", "symbolic link",
    "missing from your computer", "driver init",
    # the kernel's and the driver's own words (issue 21): Xid events, PCIe errors, undefined symbols of a framework
    "xid", "nvrm", "pcie", "undefined symbol", ".version", "unsupported gnu version", "unsupported clang version",
    "unsupported microsoft visual studio version",
    # "module" in the languages Windows prints error 126 in
    "modul", "módulo", "модуль", "模块", "模組", "モジュール", "모듈",
)

_TOKEN = re.compile(r"[A-Za-z0-9_.+\-]{1,300}")
_DLL_NAME = re.compile(r"([a-z][a-z0-9_+\-]{0,80}?)(?:64)?((?:_[0-9][0-9.]{0,12}){0,3})")
_STATUS_NAME = re.compile(r"\b(?:CUDNN_STATUS_[A-Z0-9_]{2,60}|CUDA_ERROR_[A-Z0-9_]{2,60}|NVML_ERROR_[A-Z0-9_]{2,60}"
                          r"|CUBLAS_STATUS_[A-Z0-9_]{2,60}|CUFFT_[A-Z0-9_]{2,60}|CURAND_STATUS_[A-Z0-9_]{2,60}"
                          r"|CUSOLVER_STATUS_[A-Z0-9_]{2,60}|CUSPARSE_STATUS_[A-Z0-9_]{2,60}|NVRTC_ERROR_[A-Z0-9_]{2,60}"
                          r"|cudaError[A-Za-z0-9]{2,60})")
_STATUS_NUMBER = re.compile(r"(?i)\b(cudnn|cuda|nvml|cublas|cu[a-z]{2,30})\b[a-z_ :]{0,30}?"
                            r"\b(?:error|failure|status|err|code)\b[\s:=(#]{0,4}(\d{1,4})\b")
_SYMBOL = re.compile(r"(?i)(?:undefined symbol:?|procedure entry point)\s{1,3}([A-Za-z_?@][A-Za-z0-9_@?$]{0,200})")
_ERROR_NUMBER = re.compile(r"(?i)\berror (\d{2,4}): ")
_VERSION = re.compile(r"\(\s{0,2}\d{1,2},\s{0,2}\d{1,2},\s{0,2}\d{1,3}\s{0,2}\)|\b\d{1,2}(?:\.\d{1,4}){1,3}\b|\b\d{4,5}\b")
_ARCH = re.compile(r"(?i)\b(?:sm|compute)_(\d{2,3})[a-z]?\b|capability\W{1,3}(?:of\s|is\s|sm_)?(\d{1,2})\.(\d)\b"
                   r"|capability\W{1,3}\((\d{1,2}), (\d)\)|\bcompute (\d{1,2})\.(\d)\b")

ARCH_CUES = ("no kernel image", "not compatible", "incompatible", "not supported", "unsupported", "no longer supports",
             "too old", "not a recognized processor", "only supports", "minimum", "requires", "kernel binaries",
             "arch_mismatch", "is not compatible", "does not support", "not defined", "unknown", "not recognized",
             "unrecognized")
BUILT_WORDS = ("compile", "built", "build", "link", "source", "header", "expect", "requir", "need", "minimum", "at least",
               "was made", "supports up to")
FOUND_WORDS = ("found", "loaded", "runtime", "library is", "installed", "you have", "got", "detected", "current",
               "while the library", "local installation", "your", "is older", "older than", "driver version")


@dataclass(frozen=True)
class Library:
    file: str  # as written: libcudnn_cnn_infer.so.8, cudnn64_8.dll
    name: str  # its row in libraries.toml: cudnn_cnn_infer
    part: str  # driver | cuda | cudnn | framework
    component: str
    failure: str | None  # missing | symbol | version | wrong-arch | broken | init | load-failed | None
    cuda_major: str | None = None
    cudnn_major: str | None = None
    cuda_version: str | None = None  # 11.0 from cudart64_110.dll / libcudart.so.11.0
    framework: str | None = None
    finding: str | None = None  # the library's own finding, where libraries.toml gives one
    line: int = 0
    source: str = ""
    gpu: bool = True  # part of the GPU stack (false: a framework's CPU-only library, libraries.toml `gpu`)


@dataclass(frozen=True)
class Symbol:
    name: str  # as the loader printed it
    owner: str  # what provides it, from libraries.toml [[symbol]]
    finding: str
    line: int = 0
    source: str = ""


@dataclass(frozen=True)
class Status:
    api: str  # cudnn | cudart | driver | nvml
    name: str
    number: int
    meaning: str
    finding: str  # "" when it is no problem of the installation
    how: str  # "name" | "number" | "message"
    line: int = 0
    source: str = ""


@dataclass(frozen=True)
class VersionPair:
    subject: str  # cudnn | cudnn-header | driver | cuda | tensorrt | framework
    built: str
    found: str
    line: int = 0


@dataclass(frozen=True)
class Arch:
    compute_capability: str  # "8.6"
    cue: str | None  # the words that say it does not fit, if any
    line: int = 0


@dataclass(frozen=True)
class Phrase:
    text: str
    finding: str
    meaning: str
    source: str
    line: int = 0


@dataclass(frozen=True)
class Conflict:
    tool: str  # pip | uv | poetry | conda: the package manager whose words say the set of packages is inconsistent
    packages: tuple[str, ...]  # the GPU stack's packages the conflict names (nvidia-cudnn-cu12, torch 2.1.0+cu121, ...)
    pins: tuple[str, ...]  # the resolver's lines that say which package requires which version
    line: int = 0
    source: str = ""


@dataclass(frozen=True)
class CpuBuild:
    framework: str | None  # the framework whose marker it is, None where the generic grammar read it
    text: str  # the words that say so
    line: int = 0
    source: str = ""


@dataclass(frozen=True)
class Compiler:
    name: str  # nvcc | ptxas | nvrtc
    cue: str  # its words for an architecture it does not know
    bundled_by: str | None  # the framework that ships this compiler, where the message names it
    line: int = 0
    source: str = ""


@dataclass(frozen=True)
class NotFound:
    tool: str  # pip | conda | uv
    packages: tuple[str, ...]  # the requested packages of the GPU stack or with a CUDA tag
    line: int = 0
    source: str = ""


@dataclass(frozen=True)
class Event:
    """A fact in the kernel's, the driver's or a tool's own fixed words (compat/errors.toml [[xid]], [[event]],
    [[ptx_isa]]): an Xid number, a GPU that fell off the bus, a PCIe error, a display watchdog reset, a
    missing compiler tool, a PTX ISA newer than the ptxas that reads it, a retired package."""

    kind: str  # xid | bus | module | aer | tdr | toolchain | budget | placeholder | ptx | host-compiler
    code: str
    text: str  # the words read
    meaning: str
    fix: str
    source: str
    values: tuple[tuple[str, str], ...] = ()
    line: int = 0


@dataclass(frozen=True)
class Facts:
    libraries: tuple[Library, ...] = ()
    symbols: tuple[Symbol, ...] = ()
    statuses: tuple[Status, ...] = ()
    versions: tuple[VersionPair, ...] = ()
    archs: tuple[Arch, ...] = ()
    phrases: tuple[Phrase, ...] = ()
    conflicts: tuple[Conflict, ...] = ()
    cpu_builds: tuple[CpuBuild, ...] = ()
    compilers: tuple[Compiler, ...] = ()
    not_found: tuple[NotFound, ...] = ()
    events: tuple[Event, ...] = ()
    frameworks: tuple[str, ...] = ()  # most mentioned first
    lines: tuple[str, ...] = field(default=(), repr=False)  # the lines that can carry a fact (for the catalog)

    @property
    def framework(self) -> str | None:
        return self.frameworks[0] if self.frameworks else None

    def any(self) -> bool:
        return bool(self.libraries or self.symbols or self.statuses or self.versions or self.archs or self.phrases
                    or self.conflicts or self.cpu_builds or self.compilers or self.not_found or self.events)


def to_text(data: bytes | str) -> str:
    """Any bytes as text: a long input's head and tail (head_and_tail), control bytes (NUL included) as spaces,
    invalid UTF-8 replaced."""
    if isinstance(data, str):
        data = data.encode("utf-8", "surrogateescape")
    return head_and_tail(data).translate(_CONTROLS).decode("utf-8", "replace")


_SKIPPED = re.compile(rb"\n\[cudnn-doctor: (\d{1,15}) bytes skipped, from byte (\d{1,15}) to byte (\d{1,15})\]\n")
SKIPPED_LINE = re.compile(r"^\[cudnn-doctor: (\d{1,15}) bytes skipped, from byte (\d{1,15}) to byte (\d{1,15})\]$")


def defang(data: bytes) -> bytes:
    """DATA, the user's, with the doctor's own skip-line marker written another way: only a line the doctor put
    between a long input's head and tail says that bytes were skipped (a short log quoting one does not)."""
    return data.replace(b"[cudnn-doctor: ", b"[cudnn-doctor : ")


def skip_line(start: int, end: int) -> bytes:
    """The line that stands for bytes START..END of the input, which were not read."""
    return f"\n[cudnn-doctor: {end - start} bytes skipped, from byte {start} to byte {end}]\n".encode()


def head_and_tail(data: bytes) -> bytes:
    """DATA if it is at most MAX_BYTES long; else its first HEAD_BYTES and last TAIL_BYTES with the skip line
    between them (data a reader already cut this way is kept as it is)."""
    if len(data) <= MAX_BYTES + 200 and (len(data) <= MAX_BYTES or _SKIPPED.search(data, HEAD_BYTES - 1, HEAD_BYTES + 200)):
        return data
    return data[:HEAD_BYTES] + skip_line(HEAD_BYTES, len(data) - TAIL_BYTES) + data[-TAIL_BYTES:]


def skipped(text: str) -> dict[str, int] | None:
    """{bytes, start, end} of the part of the input that was not read, from its skip line; None if all was read."""
    at = text.find("\n[cudnn-doctor: ", 0, HEAD_BYTES + 16)
    if at < 0:
        return None
    match = SKIPPED_LINE.match(text[at + 1:text.find("\n", at + 1)])
    if match is None:
        return None
    return {"bytes": int(match.group(1)), "start": int(match.group(2)), "end": int(match.group(3))}


_CONTROLS = bytes(32 if (code < 32 and code not in (9, 10)) or code == 127 else code for code in range(256))


def candidate_lines(text: str) -> list[str]:
    """The lines that can carry a fact and CONTEXT lines on either side of each (a message wrapped over lines),
    long lines cut into pieces, the last MAX_LINES of them. Of a log whose middle was skipped, the head keeps a
    quarter of that share (its first and its last lines) and the skip line stays between head and tail."""
    if skipped(text) is not None:
        at = text.find("\n[cudnn-doctor: ")
        end = text.find("\n", at + 1)
        head = _candidates(text[:at])
        share = MAX_LINES // 4  # the head's first lines (start-up errors) and its last ones
        head = head if len(head) <= share else head[:share // 2] + head[-(share // 2):]
        return head + [text[at + 1:end]] + _candidates(text[end + 1:])[-(MAX_LINES - len(head) - 1):]
    return _candidates(text)[-MAX_LINES:]


def _candidates(text: str) -> list[str]:
    pieces: list[str] = []
    for raw in text.splitlines():
        if len(raw) > MAX_LINE:
            pieces.extend(raw[i:i + MAX_LINE] for i in range(0, len(raw), MAX_LINE))
        else:
            pieces.append(raw)
    keep: set[int] = set()
    whole = text.lower()
    present = [trigger for trigger in _triggers() if trigger in whole]  # most triggers are absent from most logs
    asides = [aside for aside, _ in aside_texts() if aside in whole]
    dropped: set[int] = set()
    for index, line in enumerate(pieces):
        lower = line.lower()
        if asides and any(aside in lower for aside in asides):
            dropped.add(index)  # not a GPU-stack fault (compat/errors.toml [[aside]]): never read as one
        elif any(trigger in lower for trigger in present):
            keep.update(range(index - CONTEXT, index + CONTEXT + 1))
    return [pieces[index] for index in sorted(keep - dropped) if 0 <= index < len(pieces)]


@functools.cache
def aside_texts() -> tuple[tuple[str, dict[str, Any]], ...]:
    """(text, row) of compat/errors.toml [[aside]]: a program's own request or a harmless start-up line."""
    return tuple((row["text"], row) for row in load("errors").get("aside", []))


def set_aside(text: str) -> list[dict[str, Any]]:
    """The [[aside]] rows whose text occurs in TEXT (each once)."""
    lower = text.lower()
    return [dict(row) for aside, row in aside_texts() if aside in lower]


def split_at_skip(lines: list[str] | tuple[str, ...]) -> int:
    """The index of the skip line in LINES, or -1."""
    return next((i for i, line in enumerate(lines) if SKIPPED_LINE.match(line)), -1)


@functools.cache
def _triggers() -> tuple[str, ...]:
    """TRIGGERS and the texts of the tables whose words alone carry a fact (NVIDIA's error strings, phrases, the
    product names of libraries), so that a line of only those words is read."""
    status = load("status_codes")
    texts = [row["text"] for table in ("message", "phrase") for row in status.get(table, [])]
    texts += [alias for row in load("libraries").get("library", []) for alias in row.get("aliases", [])]
    errors = load("errors")
    texts += [row["text"] for table in ("event", "outside") for row in errors.get(table, [])]
    texts += [text for row in errors.get("error", []) for text in row.get("triggers", ())]  # a catalog entry's own words
    return tuple(dict.fromkeys((*TRIGGERS, *texts)))


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
    return Facts(libraries=tuple(libraries), symbols=tuple(_unique(symbols, lambda s: s.name)), statuses=tuple(_unique(statuses, lambda s: (s.api, s.name))),
                 versions=tuple(_unique(versions, lambda v: (v.subject, v.built, v.found))),
                 archs=tuple(_unique(archs, lambda a: (a.compute_capability, a.cue))),
                 phrases=tuple(_unique(phrases, lambda p: p.text)), conflicts=tuple(_conflicts(lines, lowers)),
                 cpu_builds=tuple(_unique(cpu_builds, lambda c: c.text)), compilers=tuple(_unique(compilers, lambda c: c.name)),
                 not_found=tuple(_not_found(lines, lowers)), events=tuple(_unique(events, lambda e: (e.kind, e.code, e.text))),
                 frameworks=_frameworks(lowers), lines=tuple(lines))


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
        pairs = _versions(index, line, lower) if digits else []
        if digits and not pairs and index > 0:  # "X was built for:" on one line, the versions on the next
            pairs = _versions(index, lines[index - 1] + " | " + line, lowers[index - 1] + " | " + lower)
        facts = (_libraries(index, line, lower, lowers) + _products(index, lower), _statuses(index, line, lower, cudnn_named), pairs,
                 _archs(index, line, lower), _phrases(index, lower), _symbols(index, line, lower, lines),
                 _cpu_builds(index, lower), _compilers(index, lower, whole), _events(index, line, lower))
        if any(facts):
            found.append(facts)
            if len(found) >= most:
                break
    return found


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


# ----------------------------------------------------------------------------------------------- libraries


@functools.cache
def _library_table() -> tuple[dict[str, dict[str, Any]], list[tuple[str, dict[str, Any]]]]:
    exact: dict[str, dict[str, Any]] = {}
    prefixes: list[tuple[str, dict[str, Any]]] = []
    for row in load("libraries").get("library", []):
        if row["name"].endswith("*"):
            prefixes.append((row["name"][:-1], row))
        else:
            exact[row["name"]] = row
    return exact, prefixes


@functools.cache
def _failure_texts() -> tuple[tuple[str, str], ...]:
    return tuple((row["text"], row["kind"]) for row in load("libraries").get("failure", []))


def parse_library(token: str) -> tuple[dict[str, Any], str, str | None] | None:
    """(row, file, version digits from the name) for a library file name, or None for any other token."""
    file = token.strip(".:-+'\"")
    lower = file.lower()
    version: str | None = None
    if lower.endswith(".dll"):
        match = _DLL_NAME.fullmatch(lower[:-4])
        if not match:
            return None
        base, suffix = match.group(1), match.group(2)
        version = suffix.lstrip("_").split("_")[0] if suffix else None
    else:
        for extension in (".so", ".dylib"):
            at = lower.find(extension)
            if at > 0 and (len(lower) == at + len(extension) or lower[at + len(extension)] == "."):
                base = lower[:at]
                rest = lower[at + len(extension):].lstrip(".")
                version = rest or None
                break
        else:
            # a bare name, as Java prints it: "no jnicudnn in java.library.path"
            base = lower
        base = base.removeprefix("lib")
    if len(base) > 9 and base[-9] == "-" and all(c in "0123456789abcdef" for c in base[-8:]):
        base = base[:-9]  # a wheel's bundled copy: libcudart-6d56b25a.so.12
    row = _lookup(base)
    if row is None:
        return None
    if version and not re.fullmatch(r"\d{1,4}(?:\.\d{1,4}){0,3}", version):
        version = None
    return row, file, version


def _lookup(base: str) -> dict[str, Any] | None:
    exact, prefixes = _library_table()
    for candidate in (base, base.removeprefix("jni")):
        if candidate in exact:
            return exact[candidate]
    for prefix, row in prefixes:
        if base.startswith(prefix):
            return row
    return None


def _majors(row: dict[str, Any], version: str | None, dll: bool) -> dict[str, str | None]:
    majors: dict[str, str | None] = {"cuda_major": None, "cudnn_major": None, "cuda_version": None}
    if not version:
        return majors
    first = version.split(".")[0]
    if row["major"] == "cuda":
        if dll and "." not in version and len(first) >= 3:  # cudart64_110.dll, nvrtc64_112_0.dll
            majors["cuda_version"] = f"{first[:-1]}.{first[-1]}"
            majors["cuda_major"] = first[:-1]
        elif len(first) <= 2:
            majors["cuda_major"] = first
            majors["cuda_version"] = version if "." in version else None
    elif row["major"] == "cudnn" and len(first) <= 2:
        majors["cudnn_major"] = first
    elif row["major"] == "own":
        majors["cuda_major"] = row.get("cuda_by_major", {}).get(first)
    return majors


def _libraries(index: int, line: str, lower: str, lowers: list[str]) -> list[Library]:
    java = "java.library.path" in lower
    if not java and ".so" not in lower and ".dll" not in lower and ".dylib" not in lower:
        return []
    found: list[tuple[int, dict[str, Any], str, str | None]] = []
    for token in _TOKEN.finditer(line):
        if len(found) >= PER_LINE:
            break
        text = token.group(0)
        low = text.lower()
        # Java names the library it could not find before "java.library.path", then lists that path's folders
        if ".so" not in low and ".dll" not in low and ".dylib" not in low \
                and not (java and token.start() < lower.find("java.library.path")):
            continue
        parsed = parse_library(text)
        if parsed is not None:
            found.append((token.start(), *parsed))
    if not found:
        return []
    if any(text in near for near in lowers[max(0, index - 1):index + 2] for text, _ in outside_texts()):
        return []  # the loader failed for a reason outside the GPU stack (the paging file is too small)
    markers = _markers(lower)[:PER_LINE]
    if not markers:  # "Error loading X" on one line and the loader's words on the next
        for near in (index + 1, index - 1):
            if 0 <= near < len(lowers):
                markers = [(-1 if near < index else len(lower) + 1, kind, rank)
                           for _, kind, rank in _markers(lowers[near])][:1]
                if markers:
                    break
    out = []
    for position, row, file, version in found:
        failure = None
        if markers and len(found) == 1:  # one library: the most specific of the loader's words
            failure = min(markers, key=lambda m: m[2])[1]
        elif markers:  # "A: ... B: cannot open ...": each library takes the words nearest to it
            failure = min(markers, key=lambda m: abs(m[0] - position))[1]
        majors = _majors(row, version, file.lower().endswith(".dll"))
        out.append(Library(file=file, name=row["name"], part=row["part"], component=row["component"], failure=failure,
                           framework=row.get("framework"), finding=row.get("finding"), line=index,
                           source=row["source"], gpu=row.get("gpu", True), **majors))
    return out


def _markers(lower: str) -> list[tuple[int, str, int]]:
    """(position, kind, rank in the table) of every loader failure text in LOWER; a text inside a longer one
    counts once."""
    out: list[tuple[int, str, int]] = []
    taken: list[tuple[int, int]] = []
    for rank, (text, kind) in enumerate(_failure_texts()):
        start = lower.find(text)
        while start >= 0:
            end = start + len(text)
            if not any(s <= start and end <= e for s, e in taken):
                taken.append((start, end))
                out.append((start, kind, rank))
            if len(out) >= PER_LINE:
                return out
            start = lower.find(text, end)
    return out


@functools.cache
def _alias_table() -> tuple[tuple[str, dict[str, Any]], ...]:
    return tuple((alias, row) for row in load("libraries").get("library", []) for alias in row.get("aliases", []))


@functools.cache
def _absent_texts() -> tuple[tuple[str, str], ...]:
    return tuple((row["text"], row["where"]) for row in load("libraries").get("absent", []))


AFTER_WINDOW = 40  # characters after a product name in which the words that say it is missing may start
BEFORE_WINDOW = 24  # characters before it in which they may end


def _word_at(lower: str, start: int, end: int) -> bool:
    """LOWER[start:end] is a whole word: not part of a package, file or identifier (nvidia-cudnn-cu12, libcudnn,
    cudnn_ops, cudnn.h, torch/cudnn)."""
    if lower[max(0, start - 3):start] == "lib":  # libcudnn, libcublas named without a file suffix
        start -= 3
    before = lower[start - 1] if start > 0 else " "
    after = lower[end] if end < len(lower) else " "
    if before.isalnum() or before in "_-/\\." or after.isalnum() or after in "_-/\\":
        return False
    return not (after == "." and end + 1 < len(lower) and lower[end + 1].isalnum())


def _products(index: int, lower: str) -> list[Library]:
    """Libraries named by their product name ("The cuSPARSE library was not found", "Could not find cuBLAS",
    "Unable to load cuDNN DSO") with the words that say they are missing."""
    if not any(alias in lower for alias, _ in _alias_table()):
        return []
    out: list[Library] = []
    for alias, row in _alias_table():
        start = lower.find(alias)
        while start >= 0 and len(out) < PER_LINE:
            end = start + len(alias)
            if _word_at(lower, start, end) and _absent_near(lower, start, end):
                out.append(Library(file=alias if alias != "cuda runtime" else "CUDA runtime", name=row["name"],
                                   part=row["part"], component=row["component"], failure="missing",
                                   framework=row.get("framework"), finding=row.get("finding"), line=index,
                                   source=row["source"], gpu=row.get("gpu", True)))
                break
            start = lower.find(alias, end)
    return out


def _absent_near(lower: str, start: int, end: int) -> bool:
    after = lower[end:end + AFTER_WINDOW + 30]
    before = lower[max(0, start - BEFORE_WINDOW - 30):start]
    for text, where in _absent_texts():
        if where == "after":
            at = after.find(text)
            if 0 <= at <= AFTER_WINDOW and not any(stop in after[:at] for stop in STOPS):
                return True
        else:
            at = before.rfind(text)
            if at >= 0 and len(before) - (at + len(text)) <= BEFORE_WINDOW \
                    and not any(stop in before[at + len(text):] for stop in STOPS):
                return True
    return False


STOPS = (". ", ": ", "; ", ", ", "(")  # a clause ends: the words beyond it are about something else


# ------------------------------------------------------------------------------------- resolver conflicts


@functools.cache
def _resolver_tables() -> tuple[tuple[tuple[str, str, str], ...], tuple[str, ...]]:
    data = load("libraries")
    texts = tuple((row["text"], row["tool"], row["source"]) for row in data.get("resolver", []))
    return texts, tuple(row["prefix"] for row in data.get("package", []))


# a line of a resolver's explanation says which package requires which: only there a GPU package counts
DEPENDENCY_WORDS = ("depends on", "requires", "requested", "==", ">=", "<=", "incompatible", "conflict", "cannot install",
                    "provides", "needed by", "->", "pins", "but you have")
FRAMEWORK_CORE = ("torch", "jax", "jaxlib", "tensorflow", "paddlepaddle", "onnxruntime")
_LOCAL_CUDA = re.compile(r"\+cu\d{2,3}\b")
BLOCK_BEFORE, BLOCK_AFTER = 8, 12  # lines around a resolver's words that explain its conflict


def _gpu_packages(line: str, lower: str) -> list[str]:
    """The GPU stack's packages a resolver line names on its requirement side: after its first dependency word
    ("torch 2.2.1+cu121 requires nvidia-cublas-cu12==12.1.3.1"), so that "tensorflow-gpu 2.8.0 has requirement
    numpy>=1.20" (a GPU package wanting numpy) is not a conflict of the GPU stack."""
    _, prefixes = _resolver_tables()
    hits = [(at, word) for at, word in ((lower.find(word), word) for word in DEPENDENCY_WORDS) if at >= 0]
    verb, word = min(hits) if hits else (len(lower), "")
    required = _TOKEN.search(lower, verb + len(word)) if hits else None
    if required is not None and required.group(0).strip(".") in FRAMEWORK_CORE:
        verb = 0  # "torchvision 0.16.0+cu118 depends on torch==2.1.0": a CUDA build of a companion wants another torch
    found = []
    for token in itertools.islice(_TOKEN.finditer(line, verb), 200):
        text = token.group(0).strip(".,:;'\"")
        low = text.lower()
        if low.startswith(prefixes) or _LOCAL_CUDA.search(low):
            found.append(text)
            if len(found) >= PER_LINE:
                break
    return found


def _conflicts(lines: list[str], lowers: list[str]) -> list[Conflict]:
    """The package manager's conflicts that name the GPU stack's own packages: nvidia-*-cuNN wheels, cuda-toolkit,
    builds with a +cuXXX local version. Read from the end, within FACT_WINDOW characters."""
    texts, _ = _resolver_tables()
    out: list[Conflict] = []
    budget = FACT_WINDOW
    seen: set[int] = set()
    named_on: dict[int, list[str]] = {}  # each line is read for packages once, however many blocks it is in
    for index in range(len(lines) - 1, -1, -1):
        budget -= len(lines[index]) + 1
        if budget < 0 or len(out) >= 4:
            break
        hit = next(((tool, source) for text, tool, source in texts if text in lowers[index]), None)
        if hit is None:
            continue
        packages: list[str] = []
        pins: list[str] = []
        for near in range(max(0, index - BLOCK_BEFORE), min(len(lines), index + BLOCK_AFTER + 1)):
            lower = lowers[near]
            if not any(word in lower for word in DEPENDENCY_WORDS):
                continue
            if near not in named_on:
                named_on[near] = _gpu_packages(lines[near], lower)
            named = named_on[near]
            if named:
                packages.extend(name for name in named if name not in packages)
                if near not in seen:
                    seen.add(near)
                    pins.append(" ".join(lines[near].split())[:200])
        if packages:
            out.append(Conflict(tool=hit[0], packages=tuple(packages[:PER_LINE]), pins=tuple(pins[:4]), line=index,
                                source=hit[1]))
    out.reverse()
    return out


@functools.cache
def _symbol_table() -> tuple[dict[str, Any], ...]:
    rows = load("libraries").get("symbol", [])
    return tuple(sorted(rows, key=lambda row: -len(row["prefix"])))  # the most specific prefix first


def _symbols(index: int, line: str, lower: str, lines: list[str] | tuple[str, ...] = ()) -> list[Symbol]:
    if "undefined symbol" not in lower and "entry point" not in lower and not lower.rstrip().endswith("undefined"):
        return []
    text = line
    if _SYMBOL.search(line) is None and lines:  # "...so: undefined" / "symbol:" / "_ZN2at..." on lines of their own
        text = " ".join(part.strip() for part in lines[index:index + 3])
    out = []
    for match in itertools.islice(_SYMBOL.finditer(text), PER_LINE):
        name = match.group(1)
        row = _symbol_owner(name)
        if row is not None:
            out.append(Symbol(name=name, owner=row["owner"], finding=row["finding"], line=index, source=row["source"]))
    return out


def _symbol_owner(name: str) -> dict[str, Any] | None:
    """The [[symbol]] row whose namespace NAME belongs to: by its prefix (_ZN2at...), or, for a function of
    the extension's own that takes a framework's type (_Z24silu_and_mulRN2at6TensorE), by that namespace
    nested in its mangled parameters."""
    for row in _symbol_table():
        prefix = row["prefix"]
        if name.startswith(prefix) and (not row.get("upper") or name[len(prefix):len(prefix) + 1].isupper()):
            return row
    if name.startswith("_Z"):
        for row in _symbol_table():
            prefix = row["prefix"]
            if prefix.startswith("_ZN") and len(prefix) > 4 and prefix[2:] in name[3:]:
                return row
    return None


# ------------------------------------------------------------------------------------------ status codes


@functools.cache
def _status_tables() -> tuple[dict[str, dict[str, Any]], dict[tuple[str, int], dict[str, Any]], tuple[tuple[str, str], ...]]:
    data = load("status_codes")
    by_name: dict[str, dict[str, Any]] = {}
    by_number: dict[tuple[str, int], dict[str, Any]] = {}
    for row in data.get("status", []):
        by_name.setdefault(row["name"], row)
        api = row["api"]
        if api == "cudnn":
            api = "cudnn9" if row.get("cudnn") == "9" else "cudnn8"
        by_number.setdefault((api, int(row["number"])), row)
    messages = tuple((row["text"], row["name"]) for row in data.get("message", []))
    return by_name, by_number, messages


def _status(row: dict[str, Any], how: str, index: int) -> Status:
    return Status(api=row["api"], name=row["name"], number=int(row["number"]), meaning=row["meaning"],
                  finding=row["finding"], how=how, line=index, source=row["source"])


STATUS_PREFIXES = ("cudnn_status_", "cuda_error_", "nvml_error_", "cudaerror", "cublas_status_", "cufft_", "curand_status_",
                   "cusolver_status_", "cusparse_status_", "nvrtc_error_")


# a status as other languages' wrappers spell it: cudnnStatusArchMismatch (Python's cudnn wrappers, Julia's
# CUDNN.jl enum), "ERROR: Arch mismatch" (Mocha.jl prints the words of the name)
_CAMEL_STATUS = re.compile(r"\b(cudnnStatus|cudaError|CUresult|nvmlError)_?([A-Z][A-Za-z]{2,50})\b")
_CAMEL_WORD = re.compile(r"[A-Z][a-z]{0,20}|[A-Z]{2,10}(?![a-z])")
CAMEL_PREFIX = {"cudnnStatus": "CUDNN_STATUS_", "CUresult": "CUDA_ERROR_", "nvmlError": "NVML_ERROR_"}
# the words of a cuDNN status name that say one thing only; generic ones ("not supported", "internal error",
# "bad param") are read only with their prefix
SPELLED_MIN_WORDS = 2
SPELLED_GENERIC = ("not supported", "internal error", "bad param", "success", "execution failed", "not initialized",
                   "invalid value", "version mismatch", "alloc failed", "runtime in progress", "not supported shape",
                   "not supported padding", "not supported layout", "not supported data type", "license error")


@functools.cache
def _spelled_statuses() -> tuple[tuple[str, str], ...]:
    """cuDNN's status names as words ("arch mismatch" for CUDNN_STATUS_ARCH_MISMATCH), the specific ones only."""
    by_name, _, _ = _status_tables()
    out = []
    for name in by_name:
        if name.startswith("CUDNN_STATUS_"):
            words = name.removeprefix("CUDNN_STATUS_").lower().replace("_", " ")
            if words.count(" ") + 1 >= SPELLED_MIN_WORDS and words not in SPELLED_GENERIC:
                out.append((words, name))
    return tuple(out)


def _other_spellings(index: int, line: str, lower: str, cudnn_named: bool) -> list[Status]:
    by_name, _, _ = _status_tables()
    out = []
    for match in itertools.islice(_CAMEL_STATUS.finditer(line), PER_LINE):
        prefix, rest = match.group(1), match.group(2)
        words = "_".join(word.upper() for word in itertools.islice(_CAMEL_WORD.findall(rest), 12))
        name = CAMEL_PREFIX[prefix] + words if prefix in CAMEL_PREFIX else "cudaError" + rest
        if name in by_name:
            out.append(_status(by_name[name], "name", index))
    if cudnn_named and not out:
        out.extend(_status(by_name[name], "message", index) for words, name in _spelled_statuses()
                   if words in lower and "status" not in lower)
    return out


# a check macro's comparison with the success value, the status as a number only (glog's CHECK_EQ in Caffe and
# Paddle: "Check failed: status == CUDNN_STATUS_SUCCESS (3 vs. 0)", "cudaSuccess == cudaStat (0 vs. 38)")
_CHECK_PAIR = re.compile(r"\b(CUDNN_STATUS_SUCCESS|cudaSuccess|CUDA_SUCCESS|CUBLAS_STATUS_SUCCESS|NVML_SUCCESS)\b"
                         r"[^()]{0,40}\((\d{1,4}) vs\. ?(\d{1,4})\)")
CHECK_API = {"CUDNN_STATUS_SUCCESS": "cudnn", "cudaSuccess": "cudart", "CUDA_SUCCESS": "driver",
             "CUBLAS_STATUS_SUCCESS": "cublas", "NVML_SUCCESS": "nvml"}


def _check_pairs(index: int, line: str) -> list[Status]:
    _, by_number, _ = _status_tables()
    out = []
    for match in itertools.islice(_CHECK_PAIR.finditer(line), PER_LINE):
        number = max(int(match.group(2)), int(match.group(3)))  # the other side is the success value, 0
        api = CHECK_API[match.group(1)]
        if api == "cudnn":
            api = "cudnn9" if number >= 1000 else "cudnn8"
        row = by_number.get((api, number))
        if row is not None and number:
            out.append(_status(row, "number", index))
    return out


def _statuses(index: int, line: str, lower: str, cudnn_named: bool = False) -> list[Status]:
    other = _other_spellings(index, line, lower, cudnn_named) if ("cudnnstatus" in lower or "cudaerror" in lower
                                                                 or "curesult" in lower or "nvmlerror" in lower
                                                                 or cudnn_named) else []
    checked = _check_pairs(index, line) if " vs" in lower else []
    return other + checked + _known_statuses(index, line, lower)


def _known_statuses(index: int, line: str, lower: str) -> list[Status]:
    by_name, by_number, messages = _status_tables()
    # NVIDIA's own error strings name their code with no prefix at all ("the provided PTX was compiled with an
    # unsupported toolchain." is CUDA_ERROR_UNSUPPORTED_PTX_VERSION / cudaErrorUnsupportedPtxVersion, 222)
    said = [_status(by_name[name], "message", index) for text, name in messages if text in lower and name in by_name]
    if "cu" not in lower and "nvml" not in lower and "nvrtc" not in lower:
        return said
    out = []
    if any(prefix in lower for prefix in STATUS_PREFIXES):
        out = [_status(by_name[m.group(0)], "name", index)
               for m in itertools.islice(_STATUS_NAME.finditer(line), PER_LINE) if m.group(0) in by_name]
    if said:  # the library's own words name the code; a number beside them may be of an older numbering
        return out + said
    numbered: list[tuple[str, int]] = []
    if not any(word in lower for word in ("error", "failure", "status", "code", "err")):
        return out
    for match in itertools.islice(_STATUS_NUMBER.finditer(line), PER_LINE):
        word, number = match.group(1).lower(), int(match.group(2))
        if word == "cudnn":
            numbered.append(("cudnn9" if number >= 1000 else "cudnn8", number))
        elif word in ("nvml", "cublas"):
            numbered.append((word, number))
        elif word == "cuda":
            numbered.append(("cudart", number))
        elif word in ("cuinit", "cuctxcreate", "cudevicegetcount", "cudriver", "curesult") or word.startswith("cumem"):
            numbered.append(("driver", number))
    if "cuda" in lower:
        numbered.extend(("cudart", int(m.group(1))) for m in itertools.islice(_ERROR_NUMBER.finditer(line), PER_LINE))
    for api, number in numbered:
        row = by_number.get((api, number))
        if row is None and api in ("cudart", "driver"):
            row = by_number.get(("driver" if api == "cudart" else "cudart", number))
        if row is not None:
            out.append(_status(row, "number", index))
    return out


# -------------------------------------------------------------------------------------- versions and arch


def _normalise_version(text: str, subject: str) -> str:
    text = text.strip("() ")
    if "," in text:
        return ".".join(part.strip() for part in text.split(","))
    if ascii_digits(text):
        number = int(text)
        if subject.startswith("cudnn"):
            if number >= 90000:
                return f"{number // 10000}.{(number % 10000) // 100}.{number % 100}"
            return f"{number // 1000}.{(number % 1000) // 100}.{number % 100}"
        if subject in ("cuda", "driver", "framework") and number >= 1000:  # 11040 -> 11.4, 1201 -> 12.1
            if number >= 10000:
                return f"{number // 1000}.{(number % 1000) // 10}"
            return f"{number // 100}.{number % 100}"
    return text


def _subject(lower: str) -> str | None:
    if "dnn" in lower:
        return "cudnn-header" if "header" in lower else "cudnn"
    if "tensorrt" in lower or "trt" in lower:
        return "tensorrt"
    if "cuda" in lower and ("driver" in lower or "ptxas" in lower):
        return "driver"
    if "cuda" in lower:
        return "cuda"
    if any(word in lower for word in ("pytorch", "torch", "xformers", "flash", "jaxlib", "tensorflow")):
        return "framework"
    return None


def _role(lower: str, position: int) -> str | None:
    window = lower[max(0, position - 60):position]
    best: tuple[int, str] | None = None
    for words, role in ((BUILT_WORDS, "built"), (FOUND_WORDS, "found")):
        for word in words:
            at = window.rfind(word)
            if at >= 0 and (best is None or at > best[0]):
                # where the line also says what it was compiled against, what it is linked against is what it
                # found at run time ("linked-against version 8101 != compiled-against version 8100")
                best = (at, "found" if word == "link" and "compile" in lower else role)
    return best[1] if best else None


# a package manager's words for one package's requirement of another: the versions on such a line are pins of a
# resolver's conflict (CD521), not what a build was made for and what it found
PIN_WORDS = ("which is incompatible", "depends on", "you require", "but you'll have", "has requirement")


def _versions(index: int, line: str, lower: str) -> list[VersionPair]:
    if any(word in lower for word in PIN_WORDS):
        return []
    subject = _subject(lower)
    if subject is None or not any(word in lower for word in ("version", "compiled", "built", "found", "loaded", "have")):
        return []
    if subject == "framework" and not any(word in lower for word in ("built", "compiled", "linked")):
        return []  # "torchvision requires torch==2.0.1, but you have 2.1.0" is pip's conflict, not a build's
    built: list[str] = []
    found: list[str] = []
    for match in itertools.islice(_VERSION.finditer(line), PER_LINE):
        text = match.group(0)
        near = lower[max(0, match.start() - 12):match.start()]
        if ascii_digits(text) and "version" not in lower[max(0, match.start() - 30):match.start()] \
                and "cuda" not in near and "against" not in near:
            continue  # a bare number is a version only right after the word (or "compiled/linked against 7102")
        if line[max(0, match.start() - 1):match.start()] in (":", "/") and text.count(".") == 0:
            continue
        if line[max(0, match.start() - 2):match.start()] in ("==", ">=", "<=", "~=", "!="):
            continue  # a requirement's pin ("depends on cuda-toolkit==13.0.2"): the resolver's words, not a build's
        role = _role(lower, match.start())
        value = _normalise_version(text, subject)
        if role == "built":
            built.append(value)
        elif role == "found":
            found.append(value)
    pairs = []
    for b in built[:2]:
        for f in found[:2]:
            if b != f:
                pairs.append(VersionPair(subject=subject, built=b, found=f, line=index))
    return pairs[:2]


def _archs(index: int, line: str, lower: str) -> list[Arch]:
    if "sm_" not in lower and "compute" not in lower and "capability" not in lower:
        return []
    out = []
    cue = next((c for c in ARCH_CUES if c in lower), None)
    for match in itertools.islice(_ARCH.finditer(line), PER_LINE):
        if match.group(1):
            digits = match.group(1)
            value = f"{digits[:-1]}.{digits[-1]}"
        elif match.group(2):
            value = f"{match.group(2)}.{match.group(3)}"
        elif match.group(4):
            value = f"{match.group(4)}.{match.group(5)}"
        else:
            value = f"{match.group(6)}.{match.group(7)}"
        out.append(Arch(compute_capability=value, cue=cue, line=index))
    return out


# ----------------------------------------------------------------------------------- phrases, frameworks


@functools.cache
def _phrase_table() -> tuple[dict[str, Any], ...]:
    return tuple(load("status_codes").get("phrase", []))


def _phrases(index: int, lower: str) -> list[Phrase]:
    out = []
    for row in _phrase_table():
        if row["text"] in lower and (not row.get("any") or any(word in lower for word in row["any"])):
            out.append(Phrase(text=row["text"], finding=row["finding"], meaning=row["meaning"], source=row["source"],
                              line=index))
    return out


def _frameworks(lowers: list[str]) -> tuple[str, ...]:
    """Frameworks by how often their markers occur in the last FRAMEWORK_WINDOW characters, most first."""
    text = "\n".join(lowers)[-FRAMEWORK_WINDOW:]
    counts: dict[str, int] = {}
    for row in load("libraries").get("framework", []):
        hits = sum(text.count(marker) for marker in row["markers"])
        if hits:
            counts[row["name"]] = hits
    return tuple(sorted(counts, key=lambda name: -counts[name]))


# ------------------------------------------------------------------------------------------ CPU-only builds


@functools.cache
def _cpu_tables() -> tuple[dict[str, Any], tuple[dict[str, Any], ...]]:
    data = load("libraries")
    return data["cpu_words"], tuple(data.get("cpu_build", []))


_WORD = re.compile(r"[a-z_][a-z0-9_'=\-]{0,40}")
_CLAUSE = re.compile(r"[.;:!?]\s|\n")
CPU_AHEAD = 6  # a GPU word this many words after the build verb belongs to it ("not compiled with CUDA enabled")


def _cpu_builds(index: int, lower: str) -> list[CpuBuild]:
    """A build without GPU support, in any framework's words: its own markers ([[cpu_build]]) or the grammar of
    [cpu_words]: a negated build verb with a GPU word after it, an imperative to build with the GPU, or the CPU
    variant named beside a GPU word."""
    words, markers = _cpu_tables()
    out = [CpuBuild(framework=row["framework"], text=row["text"], line=index, source=row["source"]) for row in markers
           if row["text"] in lower and (not row.get("any") or any(word in lower for word in row["any"]))]
    if out or not any(word in lower for word in words["gpu"]):
        return out
    for clause in itertools.islice(_CLAUSE.split(lower, 16), 16):
        if not any(word in clause for word in words["gpu"]) or any(word in clause for word in words["architecture"]):
            continue
        tokens = [t.strip("'=-") for t in itertools.islice(_WORD.findall(clause), 200)]
        said = _negated_build(tokens, words) or next((v for v in words["variants"] if v in clause), None)
        if said:
            out.append(CpuBuild(framework=None, text=said, line=index, source=words["source"]))
            break
    return out


def _negated_build(tokens: list[str], words: dict[str, Any]) -> str | None:
    gpu = tuple(words["gpu"])
    for at, token in enumerate(tokens):
        if token not in words["build"]:
            continue
        ahead = tokens[at + 1:at + 1 + CPU_AHEAD]
        if not any(t.startswith(gpu) for t in ahead):
            continue
        before = tokens[max(0, at - 3):at]
        negated = any(t in words["negations"] for t in before) or (ahead and ahead[0] == "without")
        # "Please compile with CUDA enabled", "Compile with USE_CUDA=1 to enable GPU usage": the build lacks it
        imperative = token == "compile" and ahead[:1] == ["with"] and (at == 0 or tokens[at - 1] in ("please", "must"))
        if negated or imperative:
            return " ".join(tokens[max(0, at - 2):at + 1 + min(len(ahead), 3)])
    return None


# ---------------------------------------------------------------------------------------------- compilers


@functools.cache
def _compiler_table() -> tuple[dict[str, Any], ...]:
    return tuple(load("libraries").get("compiler", []))


def version_key(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.split(".") if ascii_digits(part))


def _compilers(index: int, lower: str, whole: str) -> list[Compiler]:
    """The CUDA compilers' own words that they do not know the GPU architecture asked of them."""
    if "nvcc" not in lower and "ptxas" not in lower and "nvrtc" not in lower:
        return []
    out = []
    for row in _compiler_table():
        if not any(marker in lower for marker in row["markers"]):
            continue
        cue = next((c for c in row["cues"] if c in lower), None)
        if cue is None:
            continue
        named = [arch.compute_capability for arch in _archs(index, lower, lower)]
        if named and "oldest" in row and all(version_key(cc) < version_key(row["oldest"]) for cc in named):
            continue  # an architecture a newer toolkit dropped ('sm_30' with CUDA 11), not a GPU newer than it
        bundled = next((name for name in row.get("bundled_by", []) if name in whole), None)
        out.append(Compiler(name=row["name"], cue=cue, bundled_by=bundled, line=index, source=row["source"]))
    return out


# ------------------------------------------------------------------------------------- installers: no build


# a CUDA tag in a package's name or version: mxnet-cu112, cupy-cuda91, paddlepaddle-gpu, torch==2.1.0+cu121,
# jaxlib==0.4.7+cuda11.cudnn86, nvidia-cudnn-cu12
_CUDA_TAG = re.compile(r"(?:^|[-_+.\[])(?:cu\d{2,3}x?|cuda\d{0,3}x?|gpu)(?=$|[-_+.=<>\],;])")
_PACKAGE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.+\-]{0,80}(?:\[[a-z0-9_,\-]{1,40}\])?(?:[=<>!~]{1,2}[A-Za-z0-9_.+*\-]{1,40}){0,3}")
NOT_FOUND_AFTER = 8  # conda lists the packages it did not find on the lines after its words


@functools.cache
def _not_found_table() -> tuple[tuple[str, str, str], ...]:
    return tuple((row["text"], row["tool"], row["source"]) for row in load("libraries").get("not_found", []))


def _not_found(lines: list[str], lowers: list[str]) -> list[NotFound]:
    """A package manager found no package for a request that names the GPU stack's packages or a CUDA build."""
    _, prefixes = _resolver_tables()
    out: list[NotFound] = []
    budget = FACT_WINDOW
    for index in range(len(lines) - 1, -1, -1):
        budget -= len(lines[index]) + 1
        if budget < 0 or len(out) >= 2:
            break
        hit = next(((text, tool, source) for text, tool, source in _not_found_table() if text in lowers[index]), None)
        if hit is None:
            continue
        text, tool, source = hit
        start = lowers[index].find(text) + len(text)
        pieces = [lowers[index][start:]] + [line for line in lowers[index + 1:index + 1 + NOT_FOUND_AFTER]
                                             if tool == "conda" and line.lstrip().startswith("-")]
        packages: list[str] = []
        for piece in pieces:
            for match in itertools.islice(_PACKAGE.finditer(piece), 12):
                name = match.group(0)
                if name.startswith(prefixes) or _CUDA_TAG.search(name):
                    packages.append(name)
            if tool != "conda":
                break  # pip names one requirement, right after its words
        if packages:
            out.append(NotFound(tool=tool, packages=tuple(packages[:PER_LINE]), line=index, source=source))
    out.reverse()
    return out


# -------------------------------------------------------------------- events in their own words (issue 21)


@functools.cache
def outside_texts() -> tuple[tuple[str, str], ...]:
    """(text, why) of compat/errors.toml [[outside]]: words that put a loader's failure outside the GPU stack."""
    return tuple((row["text"], row["why"]) for row in load("errors").get("outside", []))


@functools.cache
def _xid_table() -> dict[int, dict[str, Any]]:
    return {int(row["number"]): row for row in load("errors").get("xid", [])}


@functools.cache
def _event_table() -> tuple[dict[str, Any], ...]:
    return tuple(load("errors").get("event", []))


@functools.cache
def ptx_isa_toolkits() -> dict[str, str]:
    """PTX ISA version -> the first CUDA toolkit whose ptxas knows it (compat/errors.toml [[ptx_isa]])."""
    return {row["version"]: row["cuda"] for row in load("errors").get("ptx_isa", [])}


def ptx_isa_source() -> str:
    rows = load("errors").get("ptx_isa", [])
    return str(rows[0]["source"]) if rows else "NVIDIA PTX ISA release notes"


XID_SOURCE = "NVIDIA Xid Errors catalog, https://docs.nvidia.com/deploy/xid-errors/"
# "NVRM: Xid (PCI:0000:3b:00): 79, ...", "Xid=999", "XID 149", "caused by previous Xid 145"
_XID = re.compile(r"(?i)\bxid\b[\s:=(]{0,3}(?:(?:pci:)?(?P<pci>[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}(?:\.[0-7])?)\)?[\s:]{0,3})?"
                  r"(?P<number>\d{1,3})\b")
_PCI = re.compile(r"(?i)\b(?:pci:)?([0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}(?:\.[0-7])?)\b")
# ptxas: "Unsupported .version 8.5; current version is '7.5'"
_PTX = re.compile(r"(?i)unsupported\s{1,3}\.version\s{1,3}(\d{1,2}\.\d{1,2})\s{0,3};\s{0,3}current\s{1,3}version\s{1,3}is\s{1,3}"
                  r"'?(\d{1,2}\.\d{1,2})")
# nvcc's host_config.h: "unsupported GNU version! gcc versions later than 12 are not supported!"
_HOST_COMPILER = re.compile(r"(?i)unsupported\s{1,3}(gnu|clang|microsoft visual studio|msvc)\s{1,3}version!?"
                            r"(?:[^!\n]{0,40}?versions?\s{1,3}(?:later|newer)\s{1,3}than\s{1,3}(\d{1,2}(?:\.\d{1,2})?))?")


def _events(index: int, line: str, lower: str) -> list[Event]:
    out: list[Event] = []
    pci = _PCI.search(line)
    where = (("pci", pci.group(1)),) if pci else ()
    if "xid" in lower:
        for match in itertools.islice(_XID.finditer(line), PER_LINE):
            number = int(match.group("number"))
            row = _xid_table().get(number)
            at = (("pci", match.group("pci")),) if match.group("pci") else where
            if row is None:
                out.append(Event("xid", "CD142", f"Xid {number}", f"Xid {number}, a number NVIDIA's Xid catalog does not "
                                 "list (a monitoring tool's own marker for an unknown or critical error)",
                                 "Look up the Xid events in the kernel log (`sudo dmesg | grep -i xid`) in NVIDIA's Xid "
                                 "catalog (https://docs.nvidia.com/deploy/xid-errors/); reset the GPU or reboot if it "
                                 "stays unhealthy.", XID_SOURCE, (("xid", str(number)),) + at, index))
                continue
            out.append(Event("xid", row["code"], f"Xid {number} ({row['name']})", row["meaning"], row["action"] + ".",
                             row["source"], (("xid", str(number)), ("xid_name", row["name"])) + at, index))
    for row in _event_table():
        if row["text"] in lower and (not row.get("any") or any(word in lower for word in row["any"])):
            out.append(Event(row["kind"], row["code"], row["text"], row["meaning"], row["fix"], row["source"], where,
                             index))
    if ".version" in lower:
        for match in itertools.islice(_PTX.finditer(line), 2):
            out.append(_ptx_event(index, lower, match.group(1), match.group(2)))
    if "unsupported" in lower and "version" in lower:
        host = _HOST_COMPILER.search(line)
        if host is not None:
            out.append(_host_compiler_event(index, host.group(1), host.group(2)))
    return out


def _ptx_event(index: int, lower: str, ptx: str, known: str) -> Event:
    needs = ptx_isa_toolkits().get(ptx)
    has = ptx_isa_toolkits().get(known)
    values = (("ptx_isa", ptx), ("known_isa", known)) + ((("needs_cuda", needs),) if needs else ()) \
        + ((("has_cuda", has),) if has else ())
    needs_text = f" (CUDA {needs} or newer)" if needs else ""
    has_text = f", that of CUDA {has}" if has else ""
    if "ptx input" in lower:  # "ptxas application ptx input": the driver's JIT compiler, not a toolkit's ptxas
        return Event("ptx", "CD103", f"PTX ISA {ptx}, driver JIT knows {known}",
                     f"the driver's PTX JIT knows PTX ISA up to {known}{has_text}, older than the PTX ISA {ptx}{needs_text} "
                     "the program was built with: the driver is older than the CUDA that compiled the code",
                     f"Update the NVIDIA driver to one that supports CUDA {needs or 'of the PTX'} or newer (`nvidia-smi` "
                     "shows the CUDA version the driver supports), or use a build of the program compiled with a CUDA "
                     "the driver supports.", ptx_isa_source(), values, index)
    return Event("ptx", "CD207", f"PTX ISA {ptx}, ptxas knows {known}",
                 f"this ptxas knows PTX ISA up to {known}{has_text}; the PTX it was given is ISA {ptx}, written by a "
                 f"newer compiler{needs_text}", f"Use a ptxas from CUDA {needs or 'as new as the PTX'} or newer: put "
                 "that toolkit's bin/ first on PATH (or `pip install nvidia-cuda-nvcc-cu12` where the framework looks "
                 "for it), or have the compiler that writes the PTX target an older ISA; `ptxas --version` shows "
                 "which one runs.", ptx_isa_source(), values, index)


HOST_COMPILER_SOURCE = ("NVIDIA CUDA toolkit include/crt/host_config.h ('#error -- unsupported GNU version! gcc versions "
                        "later than N are not supported!'); CUDA Installation Guide for Linux, host compiler support "
                        "https://docs.nvidia.com/cuda/cuda-installation-guide-linux/#host-compiler-support-policy")


def _host_compiler_event(index: int, compiler: str, newest: str | None) -> Event:
    name = {"gnu": "gcc", "clang": "clang"}.get(compiler.lower(), "Visual Studio")
    limit = f" newer than {name} {newest}" if newest else ""
    values = (("host_compiler", name),) + ((("newest", newest),) if newest else ())
    use = f"{name} {newest}" if newest else f"a {name} it supports"
    return Event("host-compiler", "CD209", f"unsupported {compiler} version",
                 f"nvcc refuses the host compiler: this CUDA toolkit does not support {name}{limit}",
                 f"Build with {use}: install it beside the newer one and pass it to nvcc (`-ccbin g++-{newest}` for gcc, "
                 f"CC/CXX or CUDAHOSTCXX=/usr/bin/g++-{newest} for CMake and PyTorch extensions), or install a newer CUDA "
                 "toolkit that supports this compiler. `-allow-unsupported-compiler` skips the check at your own risk."
                 if name == "gcc" and newest else
                 f"Build with {use} (CUDAHOSTCXX for CMake, -ccbin for nvcc), or install a newer CUDA toolkit that "
                 "supports this compiler.", HOST_COMPILER_SOURCE, values, index)

