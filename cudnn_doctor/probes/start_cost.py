"""What an LD_PRELOAD entry no row of the data knows costs every process started here, asked of the loader itself
(issue 45, round nineteen). A preloaded library's constructor runs in every process before its first line: glibc's
memory profiler (libmemusage.so, with MEMUSAGE_TRACE_MMAP=1 every mapping traced), a malloc debugger, a tracer. The
doctor has rules for the preloads it knows (a CUDA, cuDNN, NCCL or driver library: compat/libraries.toml; a sanitizer's
run-time: [[sanitizer]]); for any other, it cannot say from the file what it does. So the loader is asked, cheaply:
the same bare program (the doctor's own Python, `-I -S`, which says what its process was given) is started twice
side by side, once with the user's LD_PRELOAD and once without those entries, each timed from the doctor; what one
start with them costs more, and what it took from the process (the environment, a signal, a limit, the umask, an alarm,
the working folder, the CPUs, its output), is seen, not inferred. Started only where such an entry is set,
beside the other children; each start bounded (deadline_s), so a preload that makes processes crawl costs the check
that much at most here, and the finding names it (and the doctor's own children it slowed: rules.process_env.
slowed_by_preload)."""

from __future__ import annotations

import os
from typing import Any

from cudnn_doctor.child import ChildAnswer, ChildBatch, ChildRequest, deadline_in, own_python
from cudnn_doctor.model import LOADER_REFUSED
from cudnn_doctor.variables import preload_entries

DEADLINE_S = 5.0  # seconds one bare start may take here, at most; past it, "more than that" is the answer


def deadline_s() -> float:
    """DEADLINE_S, or the doctor's probe timeout where it is shorter (CUDNN_DOCTOR_PROBE_TIMEOUT): the question never
    waits longer than the doctor's other children do."""
    from cudnn_doctor.probes.library_jobs import probe_timeout

    return min(DEADLINE_S, probe_timeout())


# a bare Python (no site, no user variables) that says what its process was given by the time its first line ran:
# what a preload's constructor took from it shows against the same start without that preload
STATE = r"""
import os, sys, _signal
state = {}
try:
    with open("/proc/self/status") as status:
        for line in status:
            key, _, value = line.partition(":")
            if key in ("SigIgn", "SigBlk", "Umask"):
                state[key] = value.strip()
except OSError:
    pass
try:
    import resource
    state["limits"] = {name: list(resource.getrlimit(getattr(resource, name))) for name in
                       ("RLIMIT_NOFILE", "RLIMIT_STACK", "RLIMIT_AS", "RLIMIT_NPROC", "RLIMIT_FSIZE", "RLIMIT_DATA")}
except (ImportError, OSError, ValueError):
    pass
state["alarm"] = _signal.getitimer(_signal.ITIMER_REAL)[0]
state["environ"] = sorted(name for name in os.environ if name != "LD_PRELOAD")
try:
    state["cwd"] = os.getcwd()
except OSError:
    state["cwd"] = None
try:
    state["cpus"] = len(os.sched_getaffinity(0))
except (AttributeError, OSError):
    state["cpus"] = None
streams = []
for fd in (0, 1, 2):
    try:
        info = os.fstat(fd)  # its kind (a pipe, /dev/null, a file) and where it may be written: each start has its
        import fcntl
        streams.append([info.st_mode & 0o170000, info.st_rdev, fcntl.fcntl(fd, fcntl.F_GETFL) & 3])  # each start has
        # its own pipe: the kind (a pipe, /dev/null, a file) and its access mode are compared, not the pipe itself
    except OSError:
        streams.append(None)
state["streams"] = streams


def text(value):  # JSON without the json module (its import, re and enum, is most of a bare start's own time)
    if isinstance(value, str):
        return '"' + "".join(c if " " <= c <= "~" and c not in '"\\' else "\\u%04x" % min(ord(c), 0xFFFD)
                             for c in value) + '"'
    if isinstance(value, dict):
        return "{" + ", ".join(text(key) + ": " + text(item) for key, item in value.items()) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(text(item) for item in value) + "]"
    return "null" if value is None else repr(value)


sys.stdout.write("\n" + text(state) + "\n")
"""
START = ("-I", "-S", "-c", STATE)
PYTHON_SETS = {"LC_CTYPE"}  # Python sets it itself where the locale is C (PEP 538), into an empty environment too
SIGNALS = {1: "SIGHUP", 2: "SIGINT", 14: "SIGALRM", 15: "SIGTERM", 17: "SIGCHLD"}  # those whose loss a program feels
LIMIT_WORDS = {"RLIMIT_NOFILE": "open files (ulimit -n)", "RLIMIT_STACK": "stack (ulimit -s)",
               "RLIMIT_AS": "address space (ulimit -v)", "RLIMIT_NPROC": "processes (ulimit -u)",
               "RLIMIT_FSIZE": "file size (ulimit -f)", "RLIMIT_DATA": "data segment (ulimit -d)"}


def _bare(name: str) -> str:
    """A library file's name as compat/libraries.toml writes its rows: no folder, no 'lib', no '.so' and after."""
    base = os.path.basename(name).lower()
    base = base[3:] if base.startswith("lib") else base
    return base.split(".so", 1)[0]


def unvouched_preloads(env: dict[str, str]) -> tuple[str, ...]:
    """LD_PRELOAD's entries (as written) that no row of the data knows: not a library of the GPU stack
    (compat/libraries.toml's names and aliases, a cuDNN sub-library by its prefix) and not a sanitizer's run-time
    (compat/process_env.toml [[sanitizer]])."""
    entries = preload_entries(env)
    if not entries:
        return ()
    from cudnn_doctor.knowledge.data import load

    known = set()
    for row in load("libraries").get("library", []):
        known.add(str(row["name"]).lower())
        known.update(str(alias).lower() for alias in row.get("aliases", ()))
    runtimes = tuple(str(prefix) for row in load("process_env").get("sanitizer", []) for prefix in row["runtime"])
    return tuple(entry for entry in entries if _bare(entry) not in known and not _bare(entry).startswith("cudnn")
                 and not os.path.basename(entry).startswith(runtimes))


def audit_entries(env: dict[str, str]) -> tuple[str, ...]:
    """LD_AUDIT's entries (ld.so(8): a colon-separated list of audit libraries, each loaded into every process before
    the program, as LD_PRELOAD's are, its constructor run there): no row of the data knows any."""
    return tuple(part for part in env.get("LD_AUDIT", "").split(":") if part)


class PreloadStartCost:
    """The two bare starts, begun now; result() waits for them: one with LD_PRELOAD and LD_AUDIT as set, one without
    the entries no row knows (LD_AUDIT's all). Nothing is started where no entry is unvouched."""

    def __init__(self, env: dict[str, str]) -> None:
        self.batch: ChildBatch | None = None
        self.seconds = DEADLINE_S
        self.entries = unvouched_preloads(env) + audit_entries(env)
        if not self.entries:
            return
        kept = [entry for entry in preload_entries(env) if entry not in self.entries]
        without = {key: value for key, value in env.items() if key not in ("LD_PRELOAD", "LD_AUDIT")}
        if kept:
            without["LD_PRELOAD"] = " ".join(kept)
        argv, self.seconds = (own_python(), *START), deadline_s()
        self.batch = ChildBatch([ChildRequest(argv, env, self.seconds, "a bare Python with LD_PRELOAD"),
                                 ChildRequest(argv, without, self.seconds, "a bare Python without those entries")],
                                deadline=deadline_in(self.seconds), parallel=2)

    def result(self) -> tuple[tuple[str, float, float, float] | None, tuple[str, ...]]:
        """((the entries, joined by ' '; one start's milliseconds with them, -1 where it passed DEADLINE_S; without
        them), what a start with them was given otherwise than one without: taken()), or (None, ()) where not asked
        or the start without them did not answer (nothing to compare with)."""
        if self.batch is None:
            return None, ()
        with_them, without = self.batch.answers()
        if without.timed_out or without.exit_code != 0 or without.values is None:
            return None, ()
        took = -1.0 if with_them.timed_out else round(with_them.wall_ms, 1)
        return (" ".join(self.entries), took, round(without.wall_ms, 1), self.seconds), taken(with_them, without.values,
                                                                                                self.entries)


def taken(answer: ChildAnswer, bare: dict[str, Any], entries: tuple[str, ...] = ()) -> tuple[str, ...]:
    """What the start ANSWER (with the preload) was given otherwise than the start without it (BARE, its state), in
    words: each a program started here loses the same way. Its having answered nothing is one; an entry of ENTRIES the
    loader refused (its words on the start's standard error) another."""
    if answer.timed_out:
        return ()  # slow, said by the times
    refused = loader_refused(answer.stderr_tail, entries)
    if answer.exit_code != 0 or answer.values is None:
        how = f"was killed by signal {-answer.exit_code}" if answer.exit_code is not None and answer.exit_code < 0 \
            else f"exited with {answer.exit_code}" if answer.exit_code else "wrote no answer (its output taken)"
        return (f"a bare Python started with it {how} before its first line's answer, where one without it answered",)
    got, out = answer.values, []
    names_before, names_after = set(bare.get("environ") or ()), set(got.get("environ") or ()) - PYTHON_SETS
    if names_before - PYTHON_SETS and not names_after:
        out.append("cleared the environment (every variable a program reads is gone)")
    elif names_before - names_after:
        gone = sorted(names_before - names_after)
        out.append(f"unset the variables {', '.join(gone[:5])}{' and more' if len(gone) > 5 else ''}")
    for key, words in (("SigIgn", "ignored"), ("SigBlk", "blocked")):
        gained = _mask(got.get(key)) & ~_mask(bare.get(key))
        names = [name for number, name in SIGNALS.items() if gained >> (number - 1) & 1]
        if names:
            out.append(f"{words} {', '.join(names)}")
    if _mask(got.get("Umask"), 8) & ~_mask(bare.get("Umask"), 8):
        out.append(f"set the umask to {got.get('Umask')} (the files a program creates lose permissions)")
    for name, words in LIMIT_WORDS.items():
        was, now = (bare.get("limits") or {}).get(name), (got.get("limits") or {}).get(name)
        if was and now and _lower(was[0], now[0]):
            out.append(f"lowered the limit of {words} from {_limit(was[0])} to {_limit(now[0])}")
    if not bare.get("alarm") and got.get("alarm"):
        out.append(f"armed an alarm: SIGALRM ends every program {float(got['alarm']):.0f} s after its start")
    if bare.get("cwd") and got.get("cwd") != bare.get("cwd"):
        out.append(f"changed the working folder to {got.get('cwd') or 'a folder that is gone'}")
    if bare.get("cpus") and got.get("cpus") and got["cpus"] < bare["cpus"]:
        out.append(f"pinned every process to {got['cpus']} of its {bare['cpus']} CPUs")
    for fd, words in ((1, "standard output"), (2, "standard error")):
        was, now = (bare.get("streams") or [None] * 3)[fd], (got.get("streams") or [None] * 3)[fd]
        if was is not None and now != was:
            out.append(f"closed or redirected the program's {words}")
    return refused + tuple(out)


def loader_refused(stderr: str, entries: tuple[str, ...]) -> tuple[str, ...]:
    """The entries the loader could not load, in its own words on the bare start's standard error (glibc's rtld.c:
    "ERROR: ld.so: object '...' from LD_PRELOAD cannot be preloaded (...): ignored.", "... cannot be loaded as audit
    interface: ...; ignored."): it says the same on the standard error of every program started here, which then runs
    without that library. Only ENTRIES, those asked about, are taken from it: a preload that prints such a line itself
    names nothing else."""
    import re

    said = re.findall(r"ERROR: ld\.so: object '([^'\n]{0,4096})' (?:from \w+ cannot be preloaded \(([^)\n]{0,400})\)"
                      r"|cannot be loaded as audit interface: ([^;\n]{0,400}))", stderr)
    return tuple(f"{LOADER_REFUSED} ({preloaded or audit}): {entry!r} is not loaded, and ld.so prints "
                 "'ERROR: ld.so: object ... ignored.' on the standard error of every program started here"
                 for entry, preloaded, audit in dict.fromkeys(said) if entry in entries)


def _mask(value: object, base: int = 16) -> int:
    try:
        return int(str(value), base) if value is not None else 0
    except ValueError:
        return 0


def _lower(was: int, now: int) -> bool:
    return now != -1 and (was == -1 or now < was)


def _limit(value: int) -> str:
    return "unlimited" if value == -1 else str(value)
