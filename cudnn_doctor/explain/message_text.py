"""The text of a pasted message: bytes to text, a long log cut to its head and tail, and the lines that can
carry a fact (with the lines around them), every other line left unread."""

from __future__ import annotations

import functools
import re
from typing import Any

from cudnn_doctor.knowledge.data import load

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
    # an architecture written "sm 75", "SM89", "sm120" (SGLang's, SageAttention's, TensorRT's words)
    "sm 5", "sm 6", "sm 7", "sm 8", "sm 9", "sm 1", "sm5", "sm6", "sm7", "sm8", "sm9", "sm1",
    # the kernel's and the driver's own words (issue 21): Xid events, PCIe errors, undefined symbols of a framework
    "xid", "nvrm", "pcie", "dkms", "insmod", "modprobe", "dcgm", "unknown symbol", "could not insert", "undefined symbol", ".version", "unsupported gnu version", "unsupported clang version",
    "unsupported microsoft visual studio version",
    # a compiler's diagnostic naming what a header lacks or declares otherwise; pip's own lines (issue 41, round ten)
    "has no member", "is undefined", "not a template", "previous function", "different exception", "does not take arguments",
    "not declared", "undeclared identifier", "arguments to function", "arguments in function call", "does not name a type",
    "is not a member", "parameter of type", "pip install", "pip3 install", "collecting ", "existing installation",
    "did not run successfully", "no module named", "attempting uninstall",
    # "module" in the languages Windows prints error 126 in
    "modul", "módulo", "модуль", "模块", "模組", "モジュール", "모듈",
)


def to_text(data: bytes | str) -> str:
    """Any bytes as text: a long input's head and tail (head_and_tail), control bytes (NUL included) as spaces,
    invalid UTF-8 replaced, and the full-width colon of Chinese and Japanese locales ("cuda_runtime.h：No such file")
    as the colon the programs' own words have there, and a quote escaped by what carried the message as the quote."""
    if isinstance(data, str):
        data = data.encode("utf-8", "surrogateescape")
    text = head_and_tail(data).translate(_CONTROLS).decode("utf-8", "replace").replace("\uff1a", ": ")
    # a quote escaped by what carried the message (a Python repr, a shell, Markdown: "option 'gpu-name\\'") is the quote
    text = text.replace("\\'", "'").replace('\\"', '"')
    if "](http" in text:  # a link GitHub's Markdown made of a URL in the message: its text is the message's
        text = MARKDOWN_LINK.sub(r"\1", text, count=REWRITES)
    return FORMAT_TUPLE.sub(_formatted, text, count=REWRITES) if "%s" in text else text


REWRITES = 256  # links and exception tuples rewritten, at most (a real message has a few; a crafted one, any number)


# GitHub's Markdown turns a URL the message printed into "[URL`](URL%60)": the text in brackets is what was printed
MARKDOWN_LINK = re.compile(r"\[([^\]\n]{1,300})\]\(https?://[^)\s]{1,500}\)")
# an exception raised with its format and arguments apart, printed as the tuple of them: RuntimeError(MESSAGE, a, b)
# prints "('... (%s) ... (%s).', '11.3', '12.8')" (torch.utils.cpp_extension's CUDA_MISMATCH_MESSAGE)
FORMAT_TUPLE = re.compile(r"\('([^'\n]{1,600})'((?:,\s{0,4}'[^'\n]{0,120}'){1,6})\)")
_ARGUMENT = re.compile(r"'([^'\n]{0,120})'")


def _formatted(match: re.Match[str]) -> str:
    """The message the exception meant: its format with its arguments in place of each %s, when they agree in number."""
    arguments = _ARGUMENT.findall(match.group(2))
    pieces = match.group(1).split("%s")
    if len(pieces) != len(arguments) + 1:
        return match.group(0)
    return "".join(piece + argument for piece, argument in zip(pieces, [*arguments, ""], strict=True))


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
    triggers = _line_triggers() if len(whole) > LONG_TEXT else _triggers()  # the same lines kept either way
    present = [trigger for trigger in triggers if trigger in whole]  # most triggers are absent from most logs
    asides = [aside for aside, _ in aside_texts() if aside in whole]
    if any(row.get("scope") == "message" for aside, row in aside_texts() if aside in asides):
        return []  # the whole message is another stack's (ZLUDA, a GCU's copy of PyTorch): nothing in it is ours
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


LONG_TEXT = 1 << 16  # characters past which the fewer triggers pay for working them out (40 ms, once a process)


@functools.cache
def _line_triggers() -> tuple[str, ...]:
    """The triggers a line is kept for, less those that hold another (a line that holds 'cudnn' holds 'cu'): the same
    lines are kept, with half the searches (540 triggers, 265 of them needed), each of the whole text first; the
    shortest first, since they are found most often."""
    kept: list[str] = []
    for trigger in sorted(_triggers(), key=len):
        if not any(shorter in trigger for shorter in kept):
            kept.append(trigger)
    return tuple(kept)


@functools.cache
def _triggers() -> tuple[str, ...]:
    """TRIGGERS and the texts of the tables whose words alone carry a fact (NVIDIA's error strings, phrases, the
    product names of libraries), so that a line of only those words is read."""
    status = load("status_codes")
    texts = [row["text"] for table in ("message", "phrase") for row in status.get(table, [])]
    texts += [alias for row in load("libraries").get("library", []) for alias in row.get("aliases", [])]
    # a CUDA compiler's own markers (nvc++-error), the solvers' and installers' words (round eleven)
    texts += [marker for row in load("libraries").get("compiler", []) for marker in row["markers"]]
    texts += [row["text"] for table in ("resolver", "not_found") for row in load("libraries").get(table, [])]
    texts += [load("libraries").get("prebuilt_wheel", {}).get("marker", "guessing wheel url:")]
    texts += list(load("libraries").get("version_gate", {}).get("triggers", ()))  # a package's check of another's release
    texts += list(load("libraries").get("build_isolation", {}).get("stages", ()))  # an installer's build step (uv's too)
    texts += list(load("libraries").get("build_isolation", {}).get("package_lines", ()))  # the package it builds
    errors = load("errors")
    texts += [row["text"] for table in ("event", "outside") for row in errors.get(table, [])]
    texts += [name for row in errors.get("component", []) for name in row["names"]]  # NVIDIA's host components
    texts += list(errors.get("missing_tool", {}).get("tools", ()))  # a toolkit program said to be missing
    headers = errors.get("toolkit_headers", {})
    texts += [*headers.get("headers", ()), *headers.get("folders", ())]  # a toolkit header said missing
    texts += ["-notfound", "(advanced)"] if errors.get("cmake_notfound") else []  # CMake's NOTFOUND variables
    texts += [text for row in errors.get("error", []) for text in row.get("triggers", ())]  # a catalog entry's own words
    texts += [text for row in status.get("no_gpu", []) for text in row["sentences"]]  # a framework's words: no GPU
    return tuple(dict.fromkeys((*TRIGGERS, *texts)))


def no_cuda_platform(text: str) -> dict[str, Any] | None:
    """The compat/errors.toml [[no_cuda_platform]] row whose marks TEXT carries (a Mac's /Users/ paths, Homebrew's
    folder, darwin), or None. A mark that starts with "/" counts only at the start of a path: after a quote, a space,
    a bracket or the start of a line, not after a drive letter ("C:/Users/")."""
    lower = text.lower()
    for row in load("errors").get("no_cuda_platform", []):
        if any(word in lower for word in row.get("unless", ())):
            continue  # the text names what the row rules out (an NVIDIA GPU beside the AMD one)
        marks = [(mark, text) for mark in row.get("exact_markers", ())] + [(mark, lower) for mark in row.get("markers", ())]
        for mark, where in marks:
            at = where.find(mark)
            while at >= 0:
                if not mark.startswith("/") or at == 0 or where[at - 1] in " \t\n'\"([=,":
                    return dict(row) | {"text": mark}
                at = where.find(mark, at + 1)
        for pattern in _platform_patterns(row["id"]):  # a device's model number (rx 580, 910b): only a pattern says it
            hit = pattern.search(lower)
            if hit is not None:
                return dict(row) | {"text": hit.group(0)}
    return None


@functools.cache
def _platform_patterns(row_id: str) -> tuple[re.Pattern[str], ...]:
    rows = [row for row in load("errors").get("no_cuda_platform", []) if row["id"] == row_id]
    return tuple(re.compile(pattern) for row in rows for pattern in row.get("patterns", ()))


def probe_without_failure(text: str) -> dict[str, Any] | None:
    """compat/errors.toml [probe_without_context] (with "text": the probe's line) where TEXT's only words about NVIDIA's
    libraries are a program's context-free probe lines ("Cannot load libnvidia-encode.so.1" alone on its line: the
    program asked whether the library exists) and no other line says that anything failed; else None."""
    row = load("errors").get("probe_without_context")
    if not row:
        return None
    line_pattern = _probe_line(row["line"])
    reports = [_probe_line(pattern) for pattern in row.get("reports", ())]
    lines = text.lower().splitlines()[-MAX_LINES:]
    probes = [line for line in lines if line_pattern.search(line)]
    if not probes:
        return None
    others = [line for line in lines if not line_pattern.search(line) and not any(r.search(line) for r in reports)]
    if any(_fails_here(line, row) for line in others):
        return None
    return dict(row) | {"text": probes[0].strip()}


def _fails_here(line: str, row: dict[str, Any]) -> bool:
    """Whether LINE says something failed that bears on the probe: a crash anywhere, or a failure word on a line that
    names NVIDIA's stack where the row lists its words (another subsystem's failure is not the probe's)."""
    if any(word in line for word in row.get("crash_words", ())):
        return True
    if not any(word in line for word in row["failure_words"]):
        return False
    stack = row.get("stack_words")
    return not stack or any(word in line for word in stack)


@functools.cache
def _probe_line(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern)


def done_after_warning(text: str) -> dict[str, Any] | None:
    """compat/errors.toml [done_after_warning] (with "text": the warning's line) where TEXT's last Python warning is
    followed by the run's own progress at 100 % and by no failure: the framework warned and went on; else None."""
    row = load("errors").get("done_after_warning")
    if not row:
        return None
    lines = text.lower().splitlines()[-MAX_LINES:]
    warned = [i for i, line in enumerate(lines) if any(word in line for word in row["warnings"])]
    if not warned:
        return None
    after = lines[warned[-1] + 1:]
    done = _probe_line(row["done"])
    if not any(done.search(line) for line in after):
        return None
    if any(word in line for line in after for word in row["failure_words"]):
        return None
    return dict(row) | {"text": lines[warned[-1]].strip()[:200]}
