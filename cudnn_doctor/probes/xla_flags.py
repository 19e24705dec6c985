"""XLA_FLAGS as the installed jaxlib itself parses them (issue 45): JAX on the CPU in a child, with the user's
XLA_FLAGS in force. XLA parses every flag of XLA_FLAGS at the first compilation, on any backend, and ends the
process with its own words where one is unknown ("Unknown flag in XLA_FLAGS: --x") or its value does not parse
("Couldn't interpret value high for flag xla_gpu_autotune_level"), or where a flag it still names refuses the value
("Check failed: tsl::Flags::Parse(...) Flag parsing failed.", with a usage line that names no flag: JAX 0.11 with
--xla_gpu_enable_libnvptxcompiler=true, on an H100); on the CPU no GPU is touched and it takes well under a second.
Where that last answer cannot say which flag it was, each flag is asked alone, side by side. Started only where
XLA_FLAGS is set and JAX is installed, beside the other probes."""

from __future__ import annotations

import functools
import re
from collections.abc import Callable

from cudnn_doctor.child import ChildBatch, ChildRequest, deadline_in
from cudnn_doctor.model import Framework
from cudnn_doctor.records import record
from cudnn_doctor.variables import XLA_WHITE_SPACE, xla_flag_values  # XLA's own grammar, one copy

# the child: the framework's site-packages first, JAX on the CPU, one tiny computation compiled (flags parse then)
CODE = ("import site, sys; site.addsitedir(sys.argv[1]); sys.path.insert(0, sys.argv[1]); "
        "import jax.numpy as jnp; (jnp.zeros(2) + 1).block_until_ready(); sys.stdout.write('XLA_FLAGS parsed\\n')")
UNKNOWN = re.compile(r"Unknown flags? in XLA_FLAGS: *(.+)")
MAX_FLAGS_FILE_BYTES = 16 << 20  # a file of flags: a few lines; XLA reads all of it into memory


def flags_file(value: str | None) -> tuple[str, str] | None:
    """(file, what is wrong with it) where XLA reads XLA_FLAGS (VALUE) as the name of a file of flags (its first
    character after white space is not '-': compat/process_env.toml's file_source) and reading that file would stop
    every JAX program at start: not there (XLA ends the process), a FIFO (its open waits for a writer for ever), a
    device that never ends (/dev/zero: read to its end, into memory), or a file far larger than flags are. None where
    XLA_FLAGS holds flags, or names a file XLA reads as it should. Looked at, never opened."""
    import os
    import stat

    if not value or value.lstrip(XLA_WHITE_SPACE).startswith("-"):
        return None
    try:
        status = os.stat(value)
    except (OSError, ValueError) as error:
        why = getattr(error, "strerror", None) or str(error)
        return value, f"not a file XLA can open ({why}): XLA ends every JAX program at start ('Could not open file')"
    if stat.S_ISFIFO(status.st_mode):
        return value, "a FIFO: XLA opens it and waits for a writer for ever, so every JAX program hangs at start"
    if stat.S_ISCHR(status.st_mode) or stat.S_ISBLK(status.st_mode):
        try:
            null = os.stat(os.devnull).st_rdev
        except OSError:
            null = None
        if status.st_rdev != null:
            return value, ("a device: XLA reads it to its end into memory, which a device such as /dev/zero never "
                           "reaches, so every JAX program fills its memory at start")
    if stat.S_ISREG(status.st_mode) and status.st_size > MAX_FLAGS_FILE_BYTES:
        return value, (f"a file of {status.st_size} bytes: XLA reads all of it into memory at start, where a file of "
                       "flags holds a few lines")
    return None


@functools.cache
def bad_value_pattern() -> re.Pattern[str]:
    return re.compile(r"Couldn't interpret value (.*) for flag (\S+?)\.?$")


PARSE_FAILED = "Flag parsing failed"  # parse_flags_from_env.cc's CHECK on tsl::Flags::Parse: a flag refused its value
MAX_ALONE = 16  # flags asked one by one at the most, where XLA refused the whole of XLA_FLAGS without naming one
TIMEOUT_S = 20.0


@record(frozen=True)
class XlaFlagsAnswer:
    """What jaxlib said of XLA_FLAGS: the flag names it refused, and its own words (empty where it parsed them)."""

    refused: tuple[str, ...]
    said: tuple[str, ...]


class XlaFlagsChild:
    """The child, started now; its answer read later (None where it could not say: not started, timed out, died
    of something else than the flags)."""

    def __init__(self, frameworks: list[Framework], env: dict[str, str]) -> None:
        from cudnn_doctor.probes.context import interpreter_for

        self.batch: ChildBatch | None = None
        self.lines: list[str] = []  # XLA's words, kept as they come: its usage text after them can be long
        if not (env.get("XLA_FLAGS") or "").strip() or flags_file(env.get("XLA_FLAGS")) is not None:
            return  # a file of flags JAX would hang on or fill its memory with: the rule says it, no child tries
        jax = next((f for f in frameworks if f.name == "jax" and f.details.get("site_packages")
                    and not f.details.get("assumed")), None)
        site = str(jax.details["site_packages"]) if jax else ""
        python = interpreter_for(site) if site else None
        if python is None:
            return
        child_env = {**env, "JAX_PLATFORMS": "cpu", "TF_CPP_MIN_LOG_LEVEL": "0"}
        child_env.pop("CUDA_VISIBLE_DEVICES", None)
        self.argv = (python, "-I", "-c", CODE, site)
        self.env = child_env
        self.batch = ChildBatch([ChildRequest(self.argv, child_env, TIMEOUT_S, "JAX on the CPU with XLA_FLAGS",
                                              on_stderr_line=self._line)], deadline=deadline_in(TIMEOUT_S))

    def _line(self, line: bytes) -> None:
        if len(self.lines) < 64 and (b"XLA_FLAGS" in line or b"Couldn't interpret value" in line
                                     or PARSE_FAILED.encode() in line):
            self.lines.append(line[:1000].decode("utf-8", "replace"))

    def result(self) -> XlaFlagsAnswer | None:
        if self.batch is None:
            return None
        [answer] = self.batch.answers()
        if answer.timed_out or answer.exit_code is None:
            return None
        entries = [entry for _, entry in xla_flags(self.env.get("XLA_FLAGS", ""))]
        said = parse(answer.exit_code, "\n".join([answer.stdout, *self.lines]), entries)
        if said is None or said.refused or not said.said or len(entries) < 2:
            return said
        return self._alone(entries[:MAX_ALONE], said)

    def _alone(self, entries: list[str], whole: XlaFlagsAnswer) -> XlaFlagsAnswer | None:
        """XLA refused XLA_FLAGS without naming the flag: each flag asked alone, in children side by side; the
        flags it refuses alone are the answer (None where none is refused alone: it said no more than that)."""
        lines: list[list[str]] = [[] for _ in entries]

        def keep(into: list[str]) -> Callable[[bytes], None]:
            def line(text: bytes) -> None:
                if len(into) < 8 and (PARSE_FAILED.encode() in text or b"XLA_FLAGS" in text):
                    into.append(text[:1000].decode("utf-8", "replace"))
            return line

        requests = [ChildRequest(self.argv, {**self.env, "XLA_FLAGS": entry}, TIMEOUT_S, "JAX on the CPU with one flag",
                                 on_stderr_line=keep(said)) for entry, said in zip(entries, lines, strict=True)]
        refused: list[str] = []
        answers = ChildBatch(requests, deadline=deadline_in(TIMEOUT_S)).answers()
        for entry, answer, said in zip(entries, answers, lines, strict=True):
            if answer.timed_out or answer.exit_code is None:
                continue
            alone = parse(answer.exit_code, "\n".join([answer.stdout, *said, answer.stderr_tail]), [entry])
            if alone is not None and alone.refused:
                refused += alone.refused
        if not refused:
            return None
        return XlaFlagsAnswer(tuple(dict.fromkeys(refused)),
                              (*whole.said, f"asked alone, XLA refuses {' '.join('--' + n for n in refused)}"))


def xla_flags(value: str) -> list[tuple[str, str]]:
    """XLA_FLAGS as XLA reads it -> [(name, entry as written)] for each --name or --name=value (xla_flag_values)."""
    return [(name, written) for name, written, _value in xla_flag_values(value)]


def parse(exit_code: int, output: str, entries: list[str] | tuple[str, ...] = ()) -> XlaFlagsAnswer | None:
    """The child's end as an answer: the flags XLA refused, in its words; an empty answer where it parsed them;
    None where it ended for another reason (JAX did not import: nothing is said of the flags). ENTRIES: the
    flags of XLA_FLAGS as given; where XLA refused them as a whole ("Flag parsing failed") and there is one, that
    one is refused; several: refused unnamed (its words, no names: the caller asks each alone)."""
    if exit_code == 0 and "XLA_FLAGS parsed" in output:
        return XlaFlagsAnswer((), ())
    refused: list[str] = []
    said: list[str] = []
    failed = [re.sub(r"^.{0,120}?\S+\.cc:\d+\] ", "", line.strip()) for line in output.splitlines()
              if PARSE_FAILED in line]
    for line in output.splitlines():
        text = re.sub(r"^.{0,120}?\S+\.cc:\d+\] ", "", line.strip())  # the logger's prefix (time, file:line)
        unknown = UNKNOWN.search(text)
        bad = bad_value_pattern().search(text)
        if unknown:
            names = _unknown_names(unknown.group(1), entries)
            refused += [name for name in names if name]
            said.append(text[:300])
        elif bad:
            refused.append(bad.group(2).lstrip("-"))
            said.append(text[:300])
    if not refused and failed and exit_code != 0:
        names = [entry.lstrip("-").split("=", 1)[0] for entry in entries]
        words = f"{failed[0][:240]} (XLA_FLAGS={' '.join(entries)[:200]})"
        return XlaFlagsAnswer(tuple(names) if len(names) == 1 else (), (words,))
    if not refused:
        return None
    return XlaFlagsAnswer(tuple(dict.fromkeys(refused)), tuple(dict.fromkeys(said)))


def _unknown_names(words: str, entries: list[str] | tuple[str, ...]) -> list[str]:
    """The flags XLA's 'Unknown flags in XLA_FLAGS: WORDS' names: it joins the unknown entries with one space, each as
    it made it (a quoted value unquoted: '--f="a b"' is '--f=a b'), so each of ENTRIES (as written) is looked for whole
    among them; where none is (ENTRIES not known), the words that begin with '-'."""
    said = f" {words.strip()} "
    names = []
    for entry in entries:
        for name, _written, value in xla_flag_values(entry):
            if f" --{name}{'' if value is None else '=' + value} " in said:
                names.append(name)
    return names or [word.lstrip("-").split("=", 1)[0] for word in words.split() if word.startswith("-")]

