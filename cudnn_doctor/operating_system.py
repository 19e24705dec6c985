"""What differs between the systems the doctor runs on, as one object: `CURRENT`.

How a command is stopped (which signals), how a child's pipes are watched and how a child is killed with
all it started, how a file is opened without waiting on a FIFO, how an exit status is named. Every other
module asks `CURRENT`; none branches on the system itself (STYLE.md §1). Imports nothing of the package.

- POSIX: SIGINT, SIGTERM, SIGHUP; pipes watched by `selectors`; a child in its own session, killed with its
  whole process group; O_NONBLOCK keeps a FIFO from blocking an open.
- Windows: SIGINT, SIGTERM and SIGBREAK (Ctrl-Break; there is no SIGHUP); `select()` takes only sockets, so
  a child's pipes are asked with PeekNamedPipe how much they hold (non-blocking reads, Python 3.12+); a
  child is put in a job object, and killing the job kills whatever the child started; there are no FIFOs in
  the file system; a crash is an NTSTATUS exit code (0xC0000409, ...), named here.
"""

from __future__ import annotations

import os
import selectors
import signal
import subprocess
import time
from collections.abc import Mapping
from typing import Any

# NTSTATUS values a crashed Windows process exits with (ntstatus.h), by the name Microsoft gives them
NTSTATUS_NAMES = {
    0xC0000005: "STATUS_ACCESS_VIOLATION",
    0xC000001D: "STATUS_ILLEGAL_INSTRUCTION",
    0xC00000FD: "STATUS_STACK_OVERFLOW",
    0xC0000135: "STATUS_DLL_NOT_FOUND",
    0xC0000139: "STATUS_ENTRYPOINT_NOT_FOUND",
    0xC000007B: "STATUS_INVALID_IMAGE_FORMAT",
    0xC0000409: "STATUS_STACK_BUFFER_OVERRUN",  # also __fastfail and abort() of the MSVC runtime
    0xC0000374: "STATUS_HEAP_CORRUPTION",
    0xC000013A: "STATUS_CONTROL_C_EXIT",
}



kernel_getcwd = os.getcwd  # the kernel's own answer (FileNotFoundError where the folder was deleted), before
# keep_working_folder_named: the readers that say a deleted working folder is gone ask this one
GONE_FOLDER = "/nonexistent/deleted-working-folder"  # a relative path's folder once the working folder has no name


def keep_working_folder_named(started_in: str | None) -> None:
    """For the command's own process (entry.py): os.getcwd(), and through it os.path.abspath, realpath and relpath
    of a relative path (a relative LD_LIBRARY_PATH, PATH or PYTHONPATH entry, a relative option) and pathlib's
    resolve, answer STARTED_IN (the folder's name as the command started) or GONE_FOLDER where the working folder
    was deleted under the process, before or while it runs, instead of raising FileNotFoundError in whichever
    reader met a relative path first (an internal error). A relative path then names nothing that is there, as the
    kernel finds nothing in a deleted folder; what says the folder is gone asks kernel_getcwd."""
    def getcwd() -> str:
        try:
            return kernel_getcwd()
        except FileNotFoundError:
            return started_in or GONE_FOLDER

    os.getcwd = getcwd


def which(name: str, path: str | None) -> str | None:
    """The first executable file NAME in the folders of PATH (None: os.defpath), as shutil.which finds it on POSIX, for
    a NAME without a folder; one with a folder is taken as it is. Not shutil's own: importing shutil brings zlib, bz2
    and lzma, whose libraries a user's LD_LIBRARY_PATH can replace in the doctor's own process (a cut-short libz.so.1
    there ends it with SIGBUS), on every command's path."""
    if os.sep in name or (os.altsep and os.altsep in name):
        return name if os.path.isfile(name) and os.access(name, os.X_OK) else None
    if os.name == "nt":  # PATHEXT and the current folder first: shutil's own rules
        import shutil

        return shutil.which(name, path=path)
    for folder in (os.defpath if path is None else path).split(os.pathsep):
        candidate = os.path.join(folder, name)
        if folder and os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    return None

class Posix:
    """Linux (and the other Unix systems the doctor may run on)."""

    name = "posix"
    stop_signals: tuple[int, ...] = tuple(
        getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, name))
    # or'ed into every os.open of a user's file: a FIFO does not block the open; not inherited by children
    open_flags = getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    binary = 0  # or'ed into os.open's flags for a file written or read as bytes
    neutral_cwd = "/"
    popen_options: Mapping[str, Any] = {"start_new_session": True, "close_fds": True}

    def uname(self) -> tuple[str, str, str]:
        """(system, node, machine): os.uname() (the `platform` module, with its regular expressions compiled at
        import, costs every start of `check` for the same three strings)."""
        found = os.uname()  # type: ignore[attr-defined,unused-ignore]
        return found.sysname, found.nodename, found.machine

    def system_release(self) -> str:
        """The kernel's release ("6.1.0-18-amd64"); Windows: its version ("10.0.22631")."""
        return str(os.uname().release)  # type: ignore[attr-defined,unused-ignore]

    system_folders = "/sbin:/usr/sbin:/usr/bin:/bin"  # where the system keeps its own tools (ldconfig, xz)

    def system_tool(self, name: str, path: str = "") -> str | None:
        """The absolute path of the system's own NAME (ldconfig: it writes and reads the cache ld.so uses; xz: what
        it writes out becomes the installed files), before one on PATH (a stale copy, a wrapper, another libc's, or
        a hostile one first on a user's PATH), which is taken only where the system has none (NixOS); with PATH
        empty, never. None where there is none."""
        found = which(name, os.pathsep.join(p for p in (self.system_folders, path) if p))
        return os.path.abspath(found) if found else None

    def pipe_selector(self) -> selectors.BaseSelector:
        return selectors.DefaultSelector()

    # Whether this process is the doctor's own (the `cudnn-doctor` command, entry.py), not a program that calls it
    # in-process: only then does it become its children's subreaper (below), a setting of the whole process
    owns_process = False

    def __init__(self) -> None:
        import threading

        self._children: set[int] = set()  # the children the runner started and has not reaped yet
        self._subreaper: bool | None = None
        # held from a child's start until adopt() knows it, and while strays are looked for: a child just started is
        # never taken for an orphan by another batch (its parent is this process, its session its own)
        self.starting = threading.RLock()

    def adopt(self, process: subprocess.Popen[bytes]) -> None:
        """Make PROCESS (just started) one whose whole tree kill_tree can end: its own session does it. On Linux the
        doctor is also the subreaper of what it starts: a daemon a child leaves (fork, setsid, its environment
        cleared, so no token marks it) is then the doctor's child, not init's, and orphans() finds it."""
        self._children.add(process.pid)

    def before_start(self) -> None:
        """Before a child starts: the doctor's own process becomes the subreaper of what its children leave (once,
        before the first: a library may daemonise in the child's first instant)."""
        if self._subreaper is None and self.owns_process:
            self._subreaper = _become_subreaper()

    def start_outliving(self, argv: list[str]) -> subprocess.Popen[bytes] | None:
        """ARGV started to outlive the doctor (the one process that must: fleet run's janitor, which cleans up after
        a doctor killed with SIGKILL): in its own session, so no Ctrl-C of the terminal's group reaches it, never
        adopted or killed with the doctor's children, its stdin a pipe whose end tells it the doctor is gone. None
        where it cannot start."""
        try:
            return subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                    start_new_session=True, cwd="/")
        except OSError:
            return None

    def kill_tree(self, process: subprocess.Popen[bytes]) -> None:
        """Kill PROCESS and everything in its process group (not reaped yet: the group id is still ours)."""
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except OSError:
            pass

    def release(self, process: subprocess.Popen[bytes]) -> None:
        """PROCESS has been reaped: forget what adopt kept for it."""
        self._children.discard(process.pid)

    def orphan(self, pid: int) -> bool:
        """Whether PID is a process a child of ours left behind that this process adopted as its subreaper: its
        parent is this process, the runner did not start it, and it is not in this process's session (what the
        doctor starts outside the runner, ldconfig, a compiler, stays in it). Killed and reaped by kill_strays."""
        if not self._subreaper or pid in self._children:
            return False
        fields = stat_fields(pid)
        try:
            parent, session = (int(fields[1]), int(fields[3])) if fields is not None else (0, 0)
        except (ValueError, IndexError):
            return False
        return parent == os.getpid() and session != os.getsid(0) and pid not in self._children

    def reap(self, pid: int, wait: bool = True) -> None:
        """Reap PID, a killed orphan of ours, where it has died (with WAIT, 0.1 s at most for it to die: then init
        reaps it later); nothing where it is not one (the runner reaps its own children; another's process is not
        ours to wait for)."""
        if not self._subreaper or pid in self._children:
            return
        for _ in range(20 if wait else 1):
            try:
                if os.waitpid(pid, os.WNOHANG)[0]:
                    return
            except OSError:
                return
            if wait:
                time.sleep(0.005)

    def widen_pipe(self, fd: int, size: int) -> None:
        """Let the pipe FD hold SIZE bytes where the system allows it (Linux: F_SETPIPE_SZ)."""
        import fcntl

        try:
            fcntl.fcntl(fd, getattr(fcntl, "F_SETPIPE_SZ", 1031), size)
        except OSError:
            pass

    def lock(self, fd: int) -> None:
        """Hold an exclusive lock on the open file FD until it is closed; OSError at once if another has it."""
        import fcntl

        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)

    def describe_exit(self, returncode: int) -> str:
        if returncode < 0:
            try:
                name = signal.Signals(-returncode).name
            except ValueError:
                name = f"signal {-returncode}"
            return f"crashed with {name}"
        return f"exited with status {returncode}"


def stat_fields(pid: int | str) -> list[bytes] | None:
    """/proc/PID/stat's fields after the command's name (the state first: field 3 of proc(5) is index 0 here), read
    past the last ')' (a name may hold one); None where the process is gone or there is no /proc."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            return handle.read(4096).rpartition(b")")[2].split()
    except OSError:
        return None


def _become_subreaper() -> bool:
    """Linux: make this process the subreaper of its descendants (prctl PR_SET_CHILD_SUBREAPER): one whose parent
    dies is given to it, not to init. False where that cannot be done (another system, no libc to ask)."""
    import sys

    if not sys.platform.startswith("linux"):
        return False
    try:
        import ctypes

        return int(ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0)) == 0  # PR_SET_CHILD_SUBREAPER
    except (ImportError, OSError, AttributeError):
        return False


class Windows(Posix):
    """Windows (and Wine)."""

    name = "windows"
    stop_signals = tuple(getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGBREAK") if hasattr(signal, name))
    # no FIFOs in the file system (named pipes live in \\.\pipe\); O_BINARY, or os.read turns CRLF into LF
    # and stops at the first Ctrl-Z
    open_flags = getattr(os, "O_BINARY", 0) | getattr(os, "O_NOINHERIT", 0)
    binary = getattr(os, "O_BINARY", 0)
    neutral_cwd = os.path.abspath(os.sep)  # the root of the current drive
    popen_options = {"close_fds": True, "creationflags": 0x00000200}  # CREATE_NEW_PROCESS_GROUP: its own Ctrl-C

    def __init__(self) -> None:
        super().__init__()
        self._jobs: dict[int, int] = {}  # pid -> job object handle

    def uname(self) -> tuple[str, str, str]:
        """("Windows", the computer's name, "AMD64"), as the system's own variables say: the `platform` module
        asks WMI (Python 3.12+), which takes 100 ms on Windows and crashes Wine."""
        machine = os.environ.get("PROCESSOR_ARCHITEW6432") or os.environ.get("PROCESSOR_ARCHITECTURE") or "AMD64"
        return "Windows", os.environ.get("COMPUTERNAME", ""), machine

    system_folders = ""  # Windows has no system folder of tools apart from PATH

    def system_release(self) -> str:
        import sys

        version = sys.getwindowsversion()  # type: ignore[attr-defined,unused-ignore]
        return f"{version.major}.{version.minor}.{version.build}"

    def pipe_selector(self) -> selectors.BaseSelector:
        return PeekSelector()

    def adopt(self, process: subprocess.Popen[bytes]) -> None:
        job = _job_object()
        if job and _kernel32().AssignProcessToJobObject(job, int(process._handle)):  # type: ignore[attr-defined]
            self._jobs[process.pid] = job
        elif job:
            _kernel32().CloseHandle(job)

    def kill_tree(self, process: subprocess.Popen[bytes]) -> None:
        job = self._jobs.get(process.pid)
        if job:
            _kernel32().TerminateJobObject(job, 1)
        try:
            process.kill()  # TerminateProcess: also where the job could not be made
        except OSError:
            pass

    def start_outliving(self, argv: list[str]) -> subprocess.Popen[bytes] | None:
        """Windows: no Slurm, nothing that needs to outlive the doctor."""
        return None

    def orphan(self, pid: int) -> bool:
        """Windows: a child's job object ends whatever it started; no process is adopted."""
        return False

    def release(self, process: subprocess.Popen[bytes]) -> None:
        job = self._jobs.pop(process.pid, None)
        if job:
            _kernel32().CloseHandle(job)  # KILL_ON_JOB_CLOSE: what the child left running ends now

    def widen_pipe(self, fd: int, size: int) -> None:
        """A Windows pipe's buffer is set when it is made (subprocess's own): nothing to widen."""

    def lock(self, fd: int) -> None:
        import msvcrt

        msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)  # type: ignore[attr-defined,unused-ignore]  # held until closed

    def describe_exit(self, returncode: int) -> str:
        code = returncode & 0xFFFFFFFF
        if code in NTSTATUS_NAMES:
            return f"crashed with {NTSTATUS_NAMES[code]} (0x{code:08X})"
        if code >= 0xC0000000:
            return f"crashed with status 0x{code:08X}"
        return f"exited with status {returncode}"


class PeekSelector(selectors.BaseSelector):
    """A selector over pipes for Windows, where select() takes only sockets: a pipe is ready when
    PeekNamedPipe says it holds bytes or its writer is gone (then a read gives the end of file).
    Polled every few milliseconds; the reads themselves are non-blocking (os.set_blocking)."""

    POLL_S = 0.005

    def __init__(self) -> None:
        self._keys: dict[Any, selectors.SelectorKey] = {}

    def register(self, fileobj: Any, events: int, data: Any = None) -> selectors.SelectorKey:
        fd = fileobj if isinstance(fileobj, int) else fileobj.fileno()
        key = selectors.SelectorKey(fileobj, fd, events, data)
        self._keys[fileobj] = key
        return key

    def unregister(self, fileobj: Any) -> selectors.SelectorKey:
        return self._keys.pop(fileobj)

    def get_map(self) -> Mapping[Any, selectors.SelectorKey]:
        return dict(self._keys)

    def select(self, timeout: float | None = None) -> list[tuple[selectors.SelectorKey, int]]:
        import _winapi
        import msvcrt

        end = None if timeout is None else time.monotonic() + timeout
        while True:
            ready = []
            for key in list(self._keys.values()):
                try:
                    handle = msvcrt.get_osfhandle(key.fd)  # type: ignore[attr-defined,unused-ignore]
                    available, _left = _winapi.PeekNamedPipe(handle, 0)[:2]  # type: ignore[attr-defined,unused-ignore]
                except OSError:  # the writer closed it (ERROR_BROKEN_PIPE): the read gives the end of file
                    available = 1
                if available:
                    ready.append((key, selectors.EVENT_READ))
            if ready or (end is not None and time.monotonic() >= end):
                return ready
            time.sleep(self.POLL_S if end is None else max(0.0, min(self.POLL_S, end - time.monotonic())))

    def close(self) -> None:
        self._keys.clear()


_loaded: list[Any] = []


def _kernel32() -> Any:
    """kernel32 with the job-object functions declared (a HANDLE is pointer-sized, not a C int)."""
    if not _loaded:
        import ctypes
        from ctypes import wintypes

        kernel32 = ctypes.WinDLL("kernel32", use_last_error=True)  # type: ignore[attr-defined,unused-ignore]
        kernel32.CreateJobObjectW.restype = wintypes.HANDLE
        kernel32.CreateJobObjectW.argtypes = [ctypes.c_void_p, wintypes.LPCWSTR]
        kernel32.SetInformationJobObject.argtypes = [wintypes.HANDLE, ctypes.c_int, ctypes.c_void_p, wintypes.DWORD]
        kernel32.AssignProcessToJobObject.argtypes = [wintypes.HANDLE, wintypes.HANDLE]
        kernel32.TerminateJobObject.argtypes = [wintypes.HANDLE, wintypes.UINT]
        kernel32.CloseHandle.argtypes = [wintypes.HANDLE]
        _loaded.append(kernel32)
    return _loaded[0]


def _job_object() -> int | None:
    """A new job object whose processes all end when its last handle is closed, or None."""
    import ctypes
    from ctypes import wintypes

    class BasicLimits(ctypes.Structure):
        _fields_ = [("PerProcessUserTimeLimit", ctypes.c_int64), ("PerJobUserTimeLimit", ctypes.c_int64),
                    ("LimitFlags", wintypes.DWORD), ("MinimumWorkingSetSize", ctypes.c_size_t),
                    ("MaximumWorkingSetSize", ctypes.c_size_t), ("ActiveProcessLimit", wintypes.DWORD),
                    ("Affinity", ctypes.c_size_t), ("PriorityClass", wintypes.DWORD),
                    ("SchedulingClass", wintypes.DWORD)]

    class ExtendedLimits(ctypes.Structure):
        _fields_ = [("BasicLimitInformation", BasicLimits), ("IoInfo", ctypes.c_uint64 * 6),
                    ("ProcessMemoryLimit", ctypes.c_size_t), ("JobMemoryLimit", ctypes.c_size_t),
                    ("PeakProcessMemoryUsed", ctypes.c_size_t), ("PeakJobMemoryUsed", ctypes.c_size_t)]

    kernel32 = _kernel32()
    job = kernel32.CreateJobObjectW(None, None)
    if not job:
        return None
    limits = ExtendedLimits()
    limits.BasicLimitInformation.LimitFlags = 0x2000  # JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE
    extended_limit_information = 9
    kernel32.SetInformationJobObject(job, extended_limit_information, ctypes.byref(limits),
                                     ctypes.sizeof(limits))
    return int(job)


CURRENT: Posix = Windows() if os.name == "nt" else Posix()
