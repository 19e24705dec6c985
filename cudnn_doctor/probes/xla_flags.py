"""XLA_FLAGS as the installed jaxlib itself parses them (issue 45): JAX on the CPU in a child, with the user's
XLA_FLAGS in force. XLA parses every flag of XLA_FLAGS at the first compilation, on any backend, and ends the
process with its own words where one is unknown ("Unknown flag in XLA_FLAGS: --x") or its value does not parse
("Couldn't interpret value high for flag xla_gpu_autotune_level"); on the CPU no GPU is touched and it takes
well under a second. Started only where XLA_FLAGS is set and JAX is installed, beside the other probes."""

from __future__ import annotations

import re
from dataclasses import dataclass

from cudnn_doctor.child import ChildBatch, ChildRequest, deadline_in
from cudnn_doctor.model import Framework

# the child: the framework's site-packages first, JAX on the CPU, one tiny computation compiled (flags parse then)
CODE = ("import site, sys; site.addsitedir(sys.argv[1]); sys.path.insert(0, sys.argv[1]); "
        "import jax.numpy as jnp; (jnp.zeros(2) + 1).block_until_ready(); sys.stdout.write('XLA_FLAGS parsed\\n')")
UNKNOWN = re.compile(r"Unknown flags? in XLA_FLAGS: *(.+)")
XLA_WHITE_SPACE = " \t\r\n"  # what XLA skips before it looks for the '-' of a flag
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
BAD_VALUE = re.compile(r"Couldn't interpret value (.*) for flag (\S+?)\.?$")
TIMEOUT_S = 20.0


@dataclass(frozen=True)
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
        self.batch = ChildBatch([ChildRequest((python, "-I", "-c", CODE, site), child_env, TIMEOUT_S,
                                              "JAX on the CPU with XLA_FLAGS", on_stderr_line=self._line)],
                                deadline=deadline_in(TIMEOUT_S))

    def _line(self, line: bytes) -> None:
        if len(self.lines) < 64 and (b"XLA_FLAGS" in line or b"Couldn't interpret value" in line):
            self.lines.append(line[:1000].decode("utf-8", "replace"))

    def result(self) -> XlaFlagsAnswer | None:
        if self.batch is None:
            return None
        [answer] = self.batch.answers()
        if answer.timed_out or answer.exit_code is None:
            return None
        return parse(answer.exit_code, "\n".join([answer.stdout, *self.lines]))


def parse(exit_code: int, output: str) -> XlaFlagsAnswer | None:
    """The child's end as an answer: the flags XLA refused, in its words; an empty answer where it parsed them;
    None where it ended for another reason (JAX did not import: nothing is said of the flags)."""
    if exit_code == 0 and "XLA_FLAGS parsed" in output:
        return XlaFlagsAnswer((), ())
    refused: list[str] = []
    said: list[str] = []
    for line in output.splitlines():
        text = re.sub(r"^.{0,120}?\S+\.cc:\d+\] ", "", line.strip())  # the logger's prefix (time, file:line)
        unknown = UNKNOWN.search(text)
        bad = BAD_VALUE.search(text)
        if unknown:
            names = [entry.lstrip("-").split("=", 1)[0] for entry in unknown.group(1).split()]
            refused += [name for name in names if name]
            said.append(text[:300])
        elif bad:
            refused.append(bad.group(2).lstrip("-"))
            said.append(text[:300])
    if not refused:
        return None
    return XlaFlagsAnswer(tuple(dict.fromkeys(refused)), tuple(dict.fromkeys(said)))
