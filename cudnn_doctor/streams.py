"""Standard input, output and error as the doctor uses them: closed or full, each has one clean outcome.

`prepare()` (called once, first thing in cli.main):

- a standard stream closed at start (`cudnn-doctor check >&-`, `2>&-`, `<&-`) gets /dev/null on its
  descriptor, so no file the doctor opens later lands on 0, 1 or 2, and `explain -` reads nothing
  (a usage error, exit 2) instead of failing on a missing sys.stdin;
- writing standard output raises OutputLost when it fails for any reason but a reader that went away
  (a full disk, an I/O error, closed at start): cli turns that into one line on standard error and
  exit OUTPUT_LOST_EXIT (74, EX_IOERR of sysexits.h); what was not written is dropped from then on,
  so the interpreter's last flush cannot fail again (exit 120). A reader that went away stays
  BrokenPipeError (exit 141, as for SIGPIPE);
- standard error never fails a command: what cannot be written there is dropped, so a usage error with
  standard error closed or full still exits 2 with its JSON object on standard output;
- once a signal is ending the command (signals.pending), a write waits STALL_S at most for a reader that takes
  nothing (a full pipe, a reader that stopped reading): standard output then drops the rest of the answer, which the
  reader has cut short (a JSON or XML parser refuses it), and the command ends with the signal's code.
"""

from __future__ import annotations

import io
import os
import select
import sys
import time
from typing import NoReturn

OUTPUT_LOST_EXIT = 74  # EX_IOERR: the output could not be written
CLOSED_PIPE_EXIT = 141  # 128 + SIGPIPE: what the shell reports for a tool whose reader went away


class OutputLost(Exception):
    """Standard output could not be written (closed at start, a full disk, an I/O error)."""


def _is_open(fd: int) -> bool:
    try:
        os.fstat(fd)
    except OSError:
        return False
    return True


def _reopen_on_devnull(fd: int) -> None:
    flags = os.O_RDONLY if fd == 0 else os.O_WRONLY
    opened = os.open(os.devnull, flags)
    if opened != fd:
        os.dup2(opened, fd)
        os.close(opened)


class _StdoutRaw(io.RawIOBase):
    """Descriptor 1, whose write errors (but EPIPE) become OutputLost once and are dropped after."""

    def __init__(self, closed_at_start: bool) -> None:
        super().__init__()
        self.lost: str | None = None
        self.closed_at_start = closed_at_start
        self.abandoned = False  # a signal stopped the command while its reader did not take the answer: rest dropped

    def writable(self) -> bool:
        return True

    def fileno(self) -> int:
        return 1

    def isatty(self) -> bool:
        return not self.closed_at_start and os.isatty(1)

    def write(self, data: bytes) -> int:  # type: ignore[override]
        if self.lost is not None or self.abandoned or not data:
            return len(data)
        if self.closed_at_start:
            self.lost = "standard output is closed"
            raise OutputLost(self.lost)
        from cudnn_doctor import signals

        try:
            return _write_when_ready(1, data)
        except BrokenPipeError:
            raise
        except Stalled:
            # a signal asked the command to stop and the reader takes nothing: what it has is all it gets (an answer
            # cut short, which no JSON or XML reader takes for a whole one); the command ends with the signal's code
            self.abandoned = True
            if signals.deferring():  # the answer itself was being written: it is not settled, the signal ends it
                raise signals.Interrupted(signals.pending() or 2) from None
            return len(data)
        except KeyboardInterrupt:  # the signal came while the write waited on its reader: nothing more is written
            self.abandoned = True
            raise
        except OSError as error:
            self.lost = f"standard output cannot be written: {error.strerror or error}"
            raise OutputLost(self.lost) from None


class Stalled(Exception):
    """A signal asked the command to stop, and the reader of FD took nothing for STALL_S."""


# once a signal asked the command to stop, the longest a write waits for its reader to take anything: a CI runner's
# SIGTERM at its timeout, a Ctrl-C, is not held up by a reader that stopped reading (a full pipe, `| less` left open)
STALL_S = 1.0
CHUNK = getattr(select, "PIPE_BUF", 512)  # what a pipe with room takes without waiting


def _write_when_ready(fd: int, data: bytes) -> int:
    """os.write, waiting while FD is non-blocking and full (a pipe another process set O_NONBLOCK on). Once a signal
    asked the command to stop, a write waits for its reader STALL_S at most (Stalled), and writes no more than a pipe
    with room takes at once; before that, a signal raises in a write that waits (signals.writing)."""
    from cudnn_doctor import signals

    while True:
        bounded = signals.pending() is not None
        if bounded:
            if not _writable_within(fd, STALL_S):
                raise Stalled(fd)
            data = data[:CHUNK]
        try:
            with signals.writing():
                if not bounded and signals.pending() is not None:
                    continue  # one came just before the mark, deferred: the write bounded, not waited on for ever
                return os.write(fd, data)
        except BlockingIOError:
            try:
                select.select([], [fd], [], 0.1)  # then a signal received meanwhile is looked at again
            except OSError:  # Windows: select() takes only sockets; a moment for the reader, then again
                time.sleep(0.01)


def _writable_within(fd: int, seconds: float) -> bool:
    try:
        return bool(select.select([], [fd], [], seconds)[1])
    except (OSError, ValueError):  # Windows (sockets only), or a descriptor select cannot take: written as before
        return True


class _StderrRaw(io.RawIOBase):
    """Descriptor 2, best effort: what cannot be written is dropped."""

    def writable(self) -> bool:
        return True

    def fileno(self) -> int:
        return 2

    def isatty(self) -> bool:
        return os.isatty(2)

    def write(self, data: bytes) -> int:  # type: ignore[override]
        try:
            return _write_when_ready(2, data) if data else 0
        except (OSError, Stalled):  # Stalled: a signal is ending the command and the reader takes nothing
            return len(data)


# every character JSON, a CI runner's command or a shell line is made of: an encoding that writes these as ASCII does
ASCII_PROBE = "".join(map(chr, range(32, 127))) + "\t\n\r"


def output_encoding(named: str | None) -> str:
    """The encoding the doctor's output is written in: the one its stream was given (the locale's,
    PYTHONIOENCODING's) where it writes ASCII as ASCII, else UTF-8. PYTHONIOENCODING=utf-16 (or utf-32, or an
    EBCDIC code page such as cp037) made `--json` a document no JSON reader takes (jq: "parse error") and every
    line of text, error and CI command one that no terminal or runner reads; JSON is UTF-8 by its standard (RFC
    8259), and its escapes keep it ASCII, so the ASCII-compatible encodings stay as they were."""
    import codecs

    try:
        if named and ASCII_PROBE.encode(codecs.lookup(named).name) == ASCII_PROBE.encode("ascii"):
            return named
    except (LookupError, UnicodeError, TypeError, ValueError):
        pass
    return "utf-8"


def utf8_stdout() -> None:
    """Standard output in UTF-8 from here on, whatever the locale or PYTHONIOENCODING chose: for output read by a
    program that decodes UTF-8 (JUnit XML declaring UTF-8, Prometheus' text format, GitHub's runner). cp1252 wrote
    a name's U+00EB as the one byte 0xEB (the XML did not parse, node_exporter refused the file), ascii:backslashreplace
    wrote \\u00eb into a Prometheus label (an escape the format does not have)."""
    reconfigure = getattr(sys.stdout, "reconfigure", None)
    try:
        import codecs

        if reconfigure is None or codecs.lookup(getattr(sys.stdout, "encoding", None) or "utf-8").name == "utf-8":
            return
        sys.stdout.flush()
        # the stream's own error handler kept (reconfigure's default for a new encoding is strict: a file name's
        # undecodable byte, a surrogate under a C locale, was an internal error)
        reconfigure(encoding="utf-8", errors=getattr(sys.stdout, "errors", None) or "strict")
    except (OSError, ValueError, LookupError):
        pass


def _text_stream(raw: io.RawIOBase, like: object, errors: str, write_through: bool) -> io.TextIOWrapper:
    encoding = output_encoding(getattr(like, "encoding", None))
    line_buffering = bool(getattr(like, "line_buffering", False))
    buffered = io.BufferedWriter(raw)
    return io.TextIOWrapper(buffered, encoding=encoding, errors=errors, line_buffering=line_buffering,
                            write_through=write_through)


_closed_at_start: dict[int, bool] = {}  # reopen_closed's record: which of 0, 1, 2 were closed at the command's start


def reopen_closed() -> None:
    """The command's own process, at its first instant (entry, right after limits.record_inherited and before any
    child or thread): each standard stream closed at start on /dev/null now, remembered for prepare(). Left to
    prepare(), descriptor 0 closed (`cudnn-doctor check <&-`) was the first free number for whatever check's early
    children and their thread opened meanwhile (a pipe, a folder listed), and prepare() found it open on that: a
    folder made sys.stdin's open fail with a traceback and no answer (IsADirectoryError; seen under load)."""
    for fd in (0, 1, 2):
        if fd in _closed_at_start:
            continue
        _closed_at_start[fd] = not _is_open(fd)
        if _closed_at_start[fd]:
            try:
                _reopen_on_devnull(fd)
            except OSError:
                pass


def prepare() -> None:
    """Closed standard streams on /dev/null (those reopen_closed found closed at the start count as closed);
    standard output and error wrapped as this module says."""
    from cudnn_doctor.user_files import ERROR_HANDLER

    closed = {fd: _closed_at_start.get(fd, False) or not _is_open(fd) for fd in (0, 1, 2)}
    for fd, was_closed in closed.items():
        if was_closed and not _is_open(fd):
            try:
                _reopen_on_devnull(fd)
            except OSError:
                pass
    if closed[0] or sys.stdin is None:
        sys.stdin = open(0, encoding="utf-8", errors="surrogateescape", closefd=False)  # noqa: SIM115
    from cudnn_doctor.operating_system import CURRENT

    hook_text = b""
    if not closed[1] and CURRENT.owns_process:  # the command's own process (a program calling it keeps its output)
        hook_text = _pending_taken(sys.stdout)
    sys.stdout = _text_stream(_StdoutRaw(closed[1]), sys.stdout, ERROR_HANDLER, write_through=False)
    sys.stderr = _text_stream(_StderrRaw(), sys.stderr, ERROR_HANDLER, write_through=True)
    if hook_text:
        _hook_printed(hook_text)


HOOK_PRINTED = False  # a start-up hook printed on standard output as Python started (_hook_printed)
MAX_HOOK_TEXT = 4096  # characters of it shown on standard error


def _hook_printed(text: bytes) -> None:
    """What a start-up hook (sitecustomize, usercustomize, a .pth file's import line) printed on standard output as
    Python started, before the doctor's first line: every Python program started here prints it before its own
    output, so it is said, in one line after the text itself (escaped: a hook's bytes drive no terminal), on standard
    error. What did not fit Python's output buffer went out at once and is on standard output already: the JSON
    object is then begun on a line of its own (render/json_out)."""
    global HOOK_PRINTED
    HOOK_PRINTED = True
    shown = printable(text.decode("utf-8", "surrogateescape"), keep="\n\t")
    if len(shown) > MAX_HOOK_TEXT:
        shown = shown[:MAX_HOOK_TEXT] + f"... ({len(text)} bytes)"
    try:
        sys.stderr.write(shown if shown.endswith("\n") else shown + "\n")
    except (OSError, ValueError):
        pass
    hooks = [getattr(sys.modules.get(name), "__file__", None) for name in ("sitecustomize", "usercustomize")]
    loaded = ", ".join(str(hook) for hook in hooks if hook)
    named = "a sitecustomize, usercustomize or .pth file" + (f"; loaded here: {loaded}" if loaded else "")
    say(f"cudnn-doctor: a start-up hook ({named}) printed {len(text)} bytes on standard output as Python started "
        "(above, on standard error; what did not fit Python's output buffer is on standard output before the "
        "doctor's output): every Python program started here prints it first (fix: take the print out of the hook, "
        "or start with PYTHONPATH without its folder; `python -S` reads no start-up hook)")


def _pending_taken(stream: object) -> bytes:
    """What STREAM (the interpreter's own standard output) holds unwritten, taken out of it: a sitecustomize module or
    a .pth file that printed as Python started is not the doctor's output, and the interpreter's last flush would put
    it after the doctor's JSON, two documents in one. It is flushed into a memory file (Linux), or onto standard
    error where there is none. (What such a module wrote at once, unbuffered, is out already.)"""
    flush = getattr(stream, "flush", None)
    if flush is None:
        return b""
    try:
        saved = os.dup(1)
    except OSError:
        return b""
    taken, memory = b"", None
    try:
        try:
            memory = os.memfd_create("cudnn-doctor-pending", 0)
        except (AttributeError, OSError):  # no memory files: onto standard error, as it was
            memory = None
        os.dup2(memory if memory is not None else 2, 1)
        flush()
        if memory is not None:
            size = os.lseek(memory, 0, os.SEEK_END)
            taken = os.pread(memory, size, 0) if size else b""
    except (OSError, ValueError):
        pass
    finally:
        try:
            os.dup2(saved, 1)
        finally:
            os.close(saved)
            if memory is not None:
                os.close(memory)
    return taken


def output_lost() -> str | None:
    """Why standard output could not be written, if it could not."""
    buffer = getattr(sys.stdout, "buffer", None)
    raw = getattr(buffer, "raw", None)
    return raw.lost if isinstance(raw, _StdoutRaw) else None


def unquoted(text: str) -> str:
    """TEXT with the `backticks` around commands taken off, as a fix is printed for people: pasted with them, bash
    would run the command inside as a substitution and then its output as a command (JSON keeps them)."""
    import re

    return re.sub(r"`([^`\n]+)`", r"\1", text)


def printable(text: str, keep: str = "") -> str:
    """TEXT with every control character (terminal escape codes, newlines, DEL, C1), invisible format character
    (bidi controls, U+2028 and U+2029) and lone surrogate written as an escape (\\x1b, \\u202e, a path's byte
    that is not UTF-8 as \\xNN), so that nothing read from an archive or a path reaches a reader raw. KEEP: the
    characters the caller's format carries as they are (a tab, a newline)."""
    out = []
    for char in text:
        code = ord(char)
        if char in keep or (char.isprintable() and not 0xD800 <= code <= 0xDFFF):
            out.append(char)
        elif 0xDC80 <= code <= 0xDCFF:  # os.fsdecode's surrogateescape: the byte itself
            out.append(f"\\x{code - 0xDC00:02x}")
        elif 0xD800 <= code <= 0xDFFF:
            out.append(f"\\u{code:04x}")
        else:
            out.append(char.encode("unicode_escape").decode("ascii"))
    return "".join(out)


def log_line(text: str) -> str:
    """TEXT as one line that no log reader takes for more: control characters (a newline, a CR, terminal
    escapes) written as escapes, and `##[` written `##%5B`, which GitHub's runner takes for a command
    anywhere in a line of a step's output, standard error included (render/github.py). Every line the
    doctor writes to standard error goes through here (say); each begins with `cudnn-doctor`, so none
    can begin with `::` either."""
    return printable(text).replace("##[", "##%5B")


def say(text: str) -> None:
    """One line on standard error, whatever state it is in (log_line: one line, whatever TEXT holds)."""
    try:
        sys.stderr.write(log_line(text) + "\n")
        sys.stderr.flush()
    except (OSError, ValueError, AttributeError):
        pass


def stdout_closed() -> NoReturn:
    """The reader of our output went away (`... | head -1`): end quietly, as a Unix tool killed by SIGPIPE would."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())  # the interpreter's last flush goes nowhere, without a complaint
    except (OSError, ValueError):
        pass
    raise SystemExit(CLOSED_PIPE_EXIT)


ERROR_TEXT_LIMIT = 2000  # characters of an error's message (or fix): a value of 500 kB quoted in it is cut


def bounded(text: str, limit: int = ERROR_TEXT_LIMIT) -> str:
    """TEXT, or where it is longer than LIMIT (a 500 kB value from a variable or a project file quoted whole), its
    beginning and end with what was cut said between: one line a terminal or a CI log can show."""
    if len(text) <= limit:
        return text
    room = limit - 40  # the note of what was cut fits in the rest
    head, tail = text[:room * 3 // 4], text[-(room // 4):]
    return f"{head}…({len(text) - len(head) - len(tail)} characters cut)…{tail}"
