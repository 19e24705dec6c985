"""Which limit of the process stopped the doctor itself, in words: its open files (ulimit -n), its address space
(ulimit -v), its stack (ulimit -s), its CPU time (ulimit -t), the size of a file it writes (ulimit -f), its
processes or threads (ulimit -u). A doctor under a limit says so in one line (one JSON object with
--json) and exit 2, never an internal error, never a hang. It imports nothing of the package and nothing that may
need a file or memory the limit leaves none of."""

from __future__ import annotations

import errno
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # nothing loaded at run time: a limit may leave no file to load it
    from collections.abc import Mapping

FILES_ERRNOS = (errno.EMFILE, errno.ENFILE)
# what the doctor itself needs to run at all (its Python, its imports, the threads and pipes of its children): under
# less it says so before it starts, instead of failing wherever the limit happens to bite
FLOOR_ADDRESS_SPACE_KIB = 200_000
FLOOR_OPEN_FILES = 32
# the stack (ulimit -s): Python's own guards against deep input (RecursionError at 1,000 levels of JSON, TOML, XML,
# a nested list's repr) need 160 KiB (CPython 3.11) before the C code under them overruns the stack and dies of SIGSEGV
# (benchmarks/stack_floor.py measures it); glibc gives every thread of every program this much stack too. Thrice that.
FLOOR_STACK_KIB = 512
# the stack of each thread of the doctor's own (a child's reader, a probe's timer): glibc gives a new thread the soft
# stack limit, so `ulimit -s 1048576` made each reserve 1 GiB of address space and a few threads ran out of
# `ulimit -v` (the doctor then blamed -v); 2 MiB is ten times what the deepest input it parses in one needs
THREAD_STACK_BYTES = 2 << 20
MEMORY_ERRNOS = (errno.ENOMEM,)
PROCESS_ERRNOS = (errno.EAGAIN,)


def _soft_limit(name: str) -> str:
    try:
        import resource

        soft, _hard = resource.getrlimit(getattr(resource, name))
    except (ImportError, AttributeError, OSError, ValueError):
        return "unknown"
    return "unlimited" if soft < 0 or soft == getattr(resource, "RLIM_INFINITY", -1) else str(soft)


def _hard_limit(name: str) -> int | None:
    """The hard limit NAME in its own units; None where it is unlimited or cannot be read."""
    try:
        import resource

        hard = resource.getrlimit(getattr(resource, name))[1]
    except (ImportError, AttributeError, OSError, ValueError):
        return None
    return None if hard < 0 or hard == getattr(resource, "RLIM_INFINITY", -1) else int(hard)


def raise_line(name: str, option: str, wanted: str, needed: int, unit: int = 1, note: str = "") -> str:
    """The fix for a soft limit NAME (ulimit OPTION) too low: `ulimit -S OPTION WANTED` (or the hard limit, where that
    is less; NOTE after it) where the hard limit allows NEEDED (in ulimit's units: UNIT bytes each); where the hard
    limit itself is below NEEDED, raising the soft one fails ("cannot modify limit"): root raises both, anyone else
    needs a shell with a higher hard limit."""
    hard = _hard_limit(name)
    if hard is None or hard // unit >= needed:  # WANTED, or the most the hard limit allows where that is less
        value = wanted if hard is None or (wanted.isdecimal() and int(wanted) <= hard // unit) else str(hard // unit)
        return f"ulimit -S {option} {value}{note}, then run it again"
    if _may_raise_hard_limits():
        return (f"ulimit {option} {wanted}{note}, then run it again (the hard limit, ulimit -H {option}, is "
                f"{hard // unit} too: this process may raise it, and this raises both)")
    return (f"the hard limit (ulimit -H {option}) is {hard // unit} too, which only a process with CAP_SYS_RESOURCE "
            f"(root, where a container leaves it that) may raise: run it from a new login shell, or ask for more in "
            f"/etc/security/limits.conf (or the service's or container's own limits); ulimit -S {option} cannot go "
            "past it")


def _may_raise_hard_limits() -> bool:
    """Whether this process may raise a hard limit: it holds CAP_SYS_RESOURCE (Linux: bit 24 of CapEff in
    /proc/self/status; a container's root often does not); elsewhere, whether it is root."""
    import os

    try:
        with open("/proc/self/status", "rb") as status:
            for line in status.read(1 << 16).splitlines():
                if line.startswith(b"CapEff:"):
                    return bool(int(line.split()[1], 16) >> 24 & 1)
    except (OSError, ValueError, IndexError):
        pass
    return hasattr(os, "geteuid") and os.geteuid() == 0


def address_space_limited() -> bool:
    """Whether ulimit -v bounds this process (a thread or an allocation that fails may be that limit's doing)."""
    return _soft_limit("RLIMIT_AS") != "unlimited"


def _causes(error: BaseException) -> list[BaseException]:
    """ERROR and what it was raised from or during, in order (a limit often surfaces while another error is
    being handled: an import that needs one more file)."""
    found: list[BaseException] = []
    current: BaseException | None = error
    while current is not None and current not in found and len(found) < 16:
        found.append(current)
        current = current.__cause__ or current.__context__
    return found


def limit_stopped(error: BaseException) -> tuple[str, str] | None:
    """(message, fix) where ERROR (or what it came from) is a process limit reached, else None."""
    for cause in _causes(error):
        number = getattr(cause, "errno", None) if isinstance(cause, OSError) else None
        if number in FILES_ERRNOS:
            limit = _soft_limit("RLIMIT_NOFILE")
            return (f"cudnn-doctor stopped: it ran out of open files under this shell's limit (ulimit -n is {limit}); "
                    "it needs a few dozen for its own files and the children that ask the libraries",
                    raise_line("RLIMIT_NOFILE", "-n", "1024", FLOOR_OPEN_FILES))
        if number == errno.EFBIG:  # Python ignores SIGXFSZ: a write past ulimit -f fails with EFBIG
            limit = _soft_limit("RLIMIT_FSIZE")
            said = f"ulimit -f is {int(limit) // 1024} KiB" if limit.isdecimal() else f"ulimit -f is {limit}"
            return (f"cudnn-doctor stopped: a file it wrote reached this shell's file-size limit ({said})",
                    "ulimit -S -f unlimited (up to what ulimit -H -f allows), then run it again")
        thread = isinstance(cause, RuntimeError) and "can't start new thread" in str(cause)
        # an allocation that failed inside C code (an lru_cache, a C extension) can surface as a SystemError
        # "returned NULL without setting an exception": under ulimit -v that is the memory limit's doing
        lost = isinstance(cause, SystemError) and "returned NULL" in str(cause) and address_space_limited()
        # a thread's stack is address space: under ulimit -v, a thread that cannot start is the memory limit's
        if isinstance(cause, MemoryError) or lost or number in MEMORY_ERRNOS or (
                (thread or number in PROCESS_ERRNOS) and address_space_limited()):
            limit = _soft_limit("RLIMIT_AS")
            said = f"ulimit -v is {limit}" if limit in ("unknown", "unlimited") else f"ulimit -v is {int(limit) // 1024} KiB"
            return (f"cudnn-doctor stopped: it ran out of memory under this shell's address-space limit ({said}); "
                    "every CUDA program needs far more (cuInit alone reserves gigabytes of address space)",
                    raise_line("RLIMIT_AS", "-v", "unlimited", FLOOR_ADDRESS_SPACE_KIB, 1024,
                               f" (it needs at least {FLOOR_ADDRESS_SPACE_KIB} KiB itself)"))
        if number in PROCESS_ERRNOS or thread:
            limit = _soft_limit("RLIMIT_NPROC")
            return (f"cudnn-doctor stopped: it could not start a process or thread under this shell's limit "
                    f"(ulimit -u is {limit})", "ulimit -S -u 4096 (or more), then run it again")
    return None


# --- the descriptors this process was started with --------------------------------------------------------------
# A parent that started the shell without close_fds (an old daemon, a Jupyter kernel's subprocess, a batch wrapper)
# leaves descriptors open in it, and every program started there inherits them: they count against the soft
# open-files limit (RLIMIT_NOFILE bounds the descriptor's number). They are recorded at the command's start, before
# it opens anything of its own; children that stand for a program started here hold as many (_child_stdio.py).
# Below this many free, the doctor closes its own copies of them (the program's copies are the shell's: untouched),
# so that its children's pipes have room: what it judges is the record, not what it keeps.
ROOM_OPEN_FILES = 128
HOLD_VARIABLE = "CUDNN_DOCTOR_HOLD_FDS"  # in a child's environment: hold this many descriptors below the limit
HOLD_CAP = 1 << 16  # never more (a child opens each one: 65536 opens take about 0.1 s)
_at_start: dict[str, object] = {}


def _digits(text: str) -> bool:
    """TEXT is a number written with 0-9 only (versions.ascii_digits, which this module cannot import)."""
    return text.isascii() and text.isdecimal()


def record_inherited() -> None:
    """The descriptors open in this process now (the command's first instant: each one inherited), with what each
    is (/proc/self/fd's link: a pipe, a socket, a file), and the soft and hard open-files limits. Once."""
    import os

    # Windows has no /proc: under Wine the path reaches the wineserver's own /proc/self, and reading its descriptors
    # there made the server open and close its own lock file, which drops its lock on the prefix (a second server then
    # starts on it, `wineserver -k` finds none to stop): nothing is recorded, as on Windows itself. (Not asked of
    # operating_system.CURRENT: this module imports nothing of the package.)
    if _at_start or os.name == "nt" or not os.path.isdir("/proc/self/fd"):
        return
    try:
        names = os.listdir("/proc/self/fd")
    except OSError:
        return
    links: dict[int, str] = {}
    for name in names:
        if not _digits(name):
            continue
        try:  # the listing's own descriptor is closed by now: it fails here
            links[int(name)] = os.readlink(f"/proc/self/fd/{name}")
        except OSError:
            continue
    soft = _soft_limit("RLIMIT_NOFILE")
    _at_start.update(links=links, soft=int(soft) if soft.isdecimal() else -1, closed=())


def inherited() -> dict[int, str] | None:
    """Descriptor -> what it is, as this process was started (record_inherited); None where it was not recorded (the
    doctor called in-process, not as a command, or no /proc)."""
    links = _at_start.get("links")
    return dict(links) if isinstance(links, dict) else None


def held_at_start() -> int | None:
    """How many descriptors below the soft open-files limit a program started here holds before its first line (the
    three standard streams among them, as they were); None where not recorded."""
    links = inherited()
    if links is None:
        return None
    soft = _at_start.get("soft", -1)
    return sum(1 for fd in links if not isinstance(soft, int) or soft < 0 or fd < soft)


def hold_environment(env: Mapping[str, str]) -> Mapping[str, str]:
    """ENV for a child that stands for a program started here: it holds as many descriptors as this process was
    started with (HOLD_VARIABLE, read by _child_stdio.py), where it was started with more than the three streams, and
    its standard input closed where this process's was."""
    held = held_at_start()
    links = inherited()
    if held is None or links is None:
        return env
    stdin_closed = 0 not in links  # a daemon's or `cmd <&-`'s: the first file a program opens gets descriptor 0
    if held <= 3 and not stdin_closed:
        return env
    return {**env, HOLD_VARIABLE: str(min(held, HOLD_CAP)) + (":stdin-closed" if stdin_closed else "")}


def inherited_runs() -> str:
    """The descriptors past the standard streams a program started here holds below the limit, as runs: "3-983 990"
    ("" where none, or not recorded)."""
    links = inherited()
    soft = _at_start.get("soft", -1)
    if links is None:
        return ""
    runs: list[list[int]] = []
    for fd in sorted(fd for fd in links if fd > 2 and (not isinstance(soft, int) or soft < 0 or fd < soft)):
        if runs and runs[-1][1] == fd - 1:
            runs[-1][1] = fd
        else:
            runs.append([fd, fd])
    return " ".join(f"{first}-{last}" if first != last else str(first) for first, last in runs)


def forget(runs: str) -> None:
    """The descriptors of RUNS ("3-983 990") no longer held by a program started here: the shell closed them (`fix
    --yes`'s check after, in this process, judges that shell)."""

    links = inherited()
    if links is None:
        return
    for run in runs.split():
        first, _, last = run.partition("-")
        if _digits(first) and (not last or _digits(last)):
            for fd in range(int(first), int(last or first) + 1):
                links.pop(fd, None)
    _at_start["links"] = links


def make_room() -> None:
    """Where the descriptors this process inherited leave it fewer than ROOM_OPEN_FILES free, its own copies of them
    are closed (never 0, 1 and 2, nor one its command line names as /dev/fd/N or /proc/self/fd/N, nor one without
    inheritance, which this process's own start opened: a start-up hook's log file): the shell and the programs it
    starts keep theirs, and what a program gets is judged from the record."""
    import os
    import sys

    links = inherited()
    held = held_at_start()
    soft = _at_start.get("soft", -1)
    if links is None or held is None or not isinstance(soft, int) or soft < 0 or soft - held >= ROOM_OPEN_FILES:
        return
    named = {int(part) for arg in sys.argv for prefix in ("/dev/fd/", "/proc/self/fd/", f"/proc/{os.getpid()}/fd/")
             if prefix in arg and (part := arg.partition(prefix)[2].split("/")[0]).isdigit()}  # --opt=/dev/fd/5 too
    closed = []
    for fd in sorted(links):
        if fd > 2 and fd not in named:
            try:  # inherited through exec, so without close-on-exec; one this process opened itself has it (PEP 446)
                if os.get_inheritable(fd):
                    os.close(fd)
                    closed.append(fd)
            except OSError:
                continue
    _at_start["closed"] = tuple(closed)


def below_floor() -> tuple[str, str] | None:
    """(message, fix) where this process's soft limits leave the doctor less than it needs to run at all (its own
    address space, its open files), said before it starts; None where they do not."""
    space = _soft_limit("RLIMIT_AS")
    if space.isascii() and space.isdecimal() and int(space) // 1024 < FLOOR_ADDRESS_SPACE_KIB:
        return (f"cudnn-doctor stopped: it ran out of memory under this shell's address-space limit (ulimit -v is "
                f"{int(space) // 1024} KiB); every CUDA program needs far more (cuInit alone reserves gigabytes of "
                "address space)",
                raise_line("RLIMIT_AS", "-v", "unlimited", FLOOR_ADDRESS_SPACE_KIB, 1024,
                           f" (it needs at least {FLOOR_ADDRESS_SPACE_KIB} KiB itself)"))
    stack = _soft_limit("RLIMIT_STACK")
    if stack.isascii() and stack.isdecimal() and int(stack) // 1024 < FLOOR_STACK_KIB:
        return (f"cudnn-doctor stopped: its stack is smaller than it needs under this shell's stack limit (ulimit -s "
                f"is {int(stack) // 1024} KiB): it would die of a segmentation fault on deep input, and every thread "
                "of the programs it judges gets that small a stack too",
                raise_line("RLIMIT_STACK", "-s", "8192", FLOOR_STACK_KIB, 1024,
                           f" (the usual default; it needs at least {FLOOR_STACK_KIB} KiB)"))
    files = _soft_limit("RLIMIT_NOFILE")
    if files.isascii() and files.isdecimal() and int(files) < FLOOR_OPEN_FILES:
        return (f"cudnn-doctor stopped: it ran out of open files under this shell's limit (ulimit -n is {files}); "
                "it needs a few dozen for its own files and the children that ask the libraries",
                raise_line("RLIMIT_NOFILE", "-n", "1024", FLOOR_OPEN_FILES))
    return None


def cpu_time_stopped() -> tuple[str, str]:
    """(message, fix) for the soft CPU-time limit reached (SIGXCPU, ulimit -S -t)."""
    limit = _soft_limit("RLIMIT_CPU")
    said = f"ulimit -t is {limit} s" if limit.isdecimal() else f"ulimit -t is {limit}"
    return (f"cudnn-doctor stopped: it ran out of CPU time under this shell's limit ({said})",
            "ulimit -S -t unlimited (up to what ulimit -H -t allows), then run it again")


def size_thread_stacks() -> None:
    """Give the threads this process starts from now on THREAD_STACK_BYTES of stack, not the soft stack limit."""
    try:
        import threading

        threading.stack_size(THREAD_STACK_BYTES)
    except (ImportError, ValueError, RuntimeError):  # a platform that cannot size them keeps its own
        pass

