"""THE child runner: every process the doctor starts goes through here.

A child is anything that may hang, crash or misbehave: a Python probe that dlopens a vendor library,
`nvcc --version`, `ldconfig -p`, a framework import, the bench. Each child

- runs in its own session and process group, from a neutral folder ("/"), with stdin closed (or a file of its request's input),
  the variables that name a path relative to the working folder made absolute (started_environment): it opens,
  searches and writes what a program started in the user's folder would;
- has ONE deadline that covers starting it, running it and reading its output: the pipes are read
  non-blocking, so a library whose load-time code daemonises (fork + setsid) and keeps stdout open
  cannot make us wait; at the deadline, or as soon as the child itself has exited, its pipes are
  closed and its whole group is killed;
- carries a token in its environment, so that whatever it started, in another session included,
  is found in /proc and killed when its batch ends: nothing a child started outlives the batch;
- may be asked to stop before it is killed (`stop_signals`, e.g. srun, which cancels its job steps
  when it gets SIGINT twice within a second): at its deadline, or when the doctor itself is stopped
  (Ctrl-C, an exception), those signals go to the child, which gets `stop_grace` seconds to exit
  before its group is killed all the same.

Children of a batch run side by side, at most `parallel_limit()` at a time (bounded by the open-file
limit and the cores), so 600 copies of cuDNN never run the doctor out of file descriptors.
"""

from __future__ import annotations

import atexit
import errno
import json
import os
import selectors
import signal
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import field
from typing import Any

from cudnn_doctor.json_values import loads
from cudnn_doctor.operating_system import CURRENT, stat_fields
from cudnn_doctor.records import record
from cudnn_doctor.versions import ascii_digits

NEUTRAL_CWD = CURRENT.neutral_cwd
TOKEN_VARIABLE = "CUDNN_DOCTOR_CHILD_TOKEN"
# The descriptor a child that answers in JSON writes its answer on (ChildRequest.answer_channel): never its stdout,
# which every library the user's environment loads into it (LD_PRELOAD, a framework) may print on, at load or exit
ANSWER_FD_VARIABLE = "CUDNN_DOCTOR_ANSWER_FD"
# the same channel by its path (this process's read end under /proc): a child one of whose libraries closed every
# descriptor opens it again from there (_child_stdio.answer_fd)
ANSWER_PATH_VARIABLE = "CUDNN_DOCTOR_ANSWER_PATH"
PID_VARIABLE = "CUDNN_DOCTOR_PID"  # the doctor's own process id, in its children's environment
STDOUT_LIMIT = 8 << 20  # bytes kept of a child's stdout (ldconfig -p of a big machine is ~1 MB)
STDERR_LIMIT = 64 << 10  # the tail of stderr is kept for the error line
REAP_GRACE_S = 1.0  # a child stuck in the kernel (D state) may not die at once; we do not wait longer
SIGNAL_CHECK_S = 0.1  # the longest the main thread waits at once: a signal is handled within this
STOP_WAIT_S = 10.0  # how long a stopped batch is given to kill its children (each reaped within REAP_GRACE_S)
# While a child runs we hold its stdout, stderr and answer channel; while it starts, 4 more (the write ends and
# subprocess's exec-error pipe). Some descriptors stay free for the doctor's own files.
FDS_PER_CHILD = 7
FDS_RESERVED = 32


@record
class ChildAnswer:
    """What one child left us. `values` is the last JSON object it printed on a line of its own
    (or as its whole output); `error` says why there is no usable answer, in words."""

    values: dict[str, Any] | None
    error: str | None
    crashed: bool
    timed_out: bool
    wall_ms: float
    exit_code: int | None = None  # negative: killed by that signal; None: it never finished
    stdout: str = ""  # decoded with surrogateescape: bytes a path had are kept
    stderr_tail: str = ""
    answer: str = ""  # what it wrote on its answer channel (ChildRequest.answer_channel); else its stdout
    # its pipes ("stdout", "stderr") that something it started still held open once it had exited (a daemon it
    # left): a caller that reads a pipe to its end, as XLA reads `ptxas --version`, would wait for that process
    held: tuple[str, ...] = ()


@record
class ChildRequest:
    """One child to run: its command line, environment and time allowed."""

    argv: tuple[str, ...]
    env: Mapping[str, str] | None = None  # None: the doctor's own environment
    timeout: float = 20.0  # seconds from its own start; a batch's deadline may cut it shorter
    what: str = "it"  # how the error line names the child: "the probe", "nvcc --version"
    # called (in the batch's thread) with each whole line of stderr as it comes: a child's progress
    on_stderr_line: Callable[[bytes], None] | None = None
    # before its group is killed: (pause, signal) sent to the child itself in turn, then up to
    # stop_grace seconds for it to exit (its pipes still read)
    stop_signals: tuple[tuple[float, int], ...] = ()
    stop_grace: float = 0.0
    # the child answers on a pipe of its own, the descriptor named by ANSWER_FD_VARIABLE, not on stdout
    answer_channel: bool = False
    stdin: bytes = b""  # what the child reads on its standard input (a credential helper's server URL); else none
    # with an answer channel: seconds within which the child writes its first byte there (a child script of ours
    # does once its Python is up): a start-up that hangs (a sitecustomize, a .pth file) is cut off then, not at the
    # request's whole timeout
    start_timeout: float | None = None
    # its stdout read to its end, up to its timeout, even after it has exited (as a caller such as XLA reads
    # `ptxas --version`): what it left holding that pipe past then is named in ChildAnswer.held
    read_to_end: bool = False


def signals_as_handed() -> dict[str, Any]:
    """Popen's options that start a child with the signals a program started here gets: where the doctor was started
    with SIGINT ignored (signals.sigint_ignored_at_start: a background job of a shell without job control, a launcher),
    every program that shell starts ignores it (execve(2): an ignored signal stays ignored), while the doctor handles
    SIGINT itself and exec resets a handled signal to its default; the child then sets it ignored between its fork and
    its exec. Nothing elsewhere. Not a toggle of the doctor's own disposition around the start: a SIGINT landing in
    that instant was lost (seen: the command went on past it)."""
    from cudnn_doctor import signals

    if not signals.sigint_ignored_at_start() or sys.platform == "win32":
        return {}
    # Python code between fork and exec (preexec_fn) in a process with threads: only a signal's disposition is set,
    # nothing that takes a lock or imports; a child that hung there anyway is ended at its deadline as any other
    return {"preexec_fn": _ignore_sigint}


def _ignore_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def write_answer(text: str) -> None:
    """In a child of ours that answers in JSON: TEXT on the answer channel the runner gave it (ANSWER_FD_VARIABLE;
    opened again by its path where a library the child loaded closed it: _child_stdio.answer_fd, the one copy),
    else on stdout. The channel is not passed on to what the child starts."""
    named = os.environ.get(ANSWER_FD_VARIABLE, "")
    if not ascii_digits(named):
        sys.stdout.write(text)
        sys.stdout.flush()
        return
    import runpy

    sys.stdout.flush()
    descriptor = runpy.run_path(os.path.join(os.path.dirname(os.path.abspath(__file__)), "_child_stdio.py"),
                                run_name="_child_stdio")["answer_fd"]()
    os.environ.pop(ANSWER_FD_VARIABLE, None)
    os.environ.pop(ANSWER_PATH_VARIABLE, None)
    data = text.encode("utf-8", "surrogateescape")
    while data:
        data = data[os.write(descriptor, data):]


def with_stdio(code: str) -> str:
    """CODE (a `python -c` child of ours, standard library only) after _child_stdio.py run from its file: the child's
    standard descriptors made whole again, and its answer channel as `_stdio["answer_fd"]()`, the channel as it is
    when the answer is written (a library the user's environment preloads may have closed it)."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_child_stdio.py")
    return (f"_stdio = {{'__name__': '_child_stdio'}}\n"
            f"exec(compile(open({path!r}, 'rb').read(), {path!r}, 'exec'), _stdio)\n{code}")


def timeout_from_env(variable: str, default: float) -> float:
    """Seconds from the environment variable VARIABLE (variables.py: a usage error when it is not a number
    of seconds), else DEFAULT."""
    from cudnn_doctor.variables import number

    return number(variable, default)


def deadline_in(seconds: float) -> float:
    """The time.monotonic() value SECONDS from now."""
    return time.monotonic() + seconds


def parallel_limit() -> int:
    """How many children may run at once: what the open-file limit leaves, and a few per core."""
    by_cores = 4 * (os.cpu_count() or 1)
    try:
        import resource

        soft, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    except (ImportError, OSError, ValueError):
        return max(1, min(by_cores, 16))
    if soft < 0 or soft == getattr(resource, "RLIM_INFINITY", -1):
        soft = 1 << 20
    try:
        in_use = len(os.listdir("/proc/self/fd"))
    except OSError:
        in_use = 64
    by_files = (soft - in_use - FDS_RESERVED) // FDS_PER_CHILD
    return max(1, min(by_cores, by_files, 64))


# The variables CPython's path calculation takes as sys.executable even under -I and -E (Modules/getpath.py: "If set,
# these variables imply that we should be using them as sys.executable and when searching for venvs"; getpath.c
# reads them whatever use_environment says). In a doctor started with one, sys.executable names that path, which may
# not exist; a child of the doctor's own started with one looks for its venv beside that path and loses it.
EXECUTABLE_VARIABLES = ("PYTHONEXECUTABLE", "__PYVENV_LAUNCHER__")


def own_python() -> str:
    """The interpreter this process runs in, as the kernel started it: sys.executable, unless a variable of
    EXECUTABLE_VARIABLES rewrote it; then the program named by the command line that started this process (its
    argv[0], looked up on PATH where it holds no slash, as CPython does before those variables), where it is the
    same file as /proc/self/exe, else /proc/self/exe itself. What the doctor's own children are started with."""
    if not any(os.environ.get(name) for name in EXECUTABLE_VARIABLES):
        return sys.executable
    global _OWN_PYTHON
    if _OWN_PYTHON is None:
        _OWN_PYTHON = _started_as()
    return _OWN_PYTHON


_OWN_PYTHON: str | None = None


def _started_as() -> str:
    import shutil

    running = os.path.realpath("/proc/self/exe") if os.path.exists("/proc/self/exe") else ""
    first = (getattr(sys, "orig_argv", None) or [""])[0]
    named = (os.path.abspath(first) if os.sep in first else shutil.which(first) or "") if first else ""
    try:
        if named and running and os.path.samefile(named, running):
            return named  # a venv's bin/python3 keeps its venv: its pyvenv.cfg is found beside it
    except OSError:
        pass
    if running:
        return running
    return named or sys.executable


def own_child_env(env: Mapping[str, str]) -> dict[str, str]:
    """ENV for a child that runs the doctor's own code (a probe script, started -I): without the variables that
    rewrite sys.executable, which would move it out of its venv whatever -I says. A child that stands for the user's
    program (a framework's import) keeps them: that is what programs get."""
    return {name: value for name, value in env.items() if name not in EXECUTABLE_VARIABLES}


def bytecode_flags() -> tuple[str, ...]:
    """This process's own bytecode settings as a Python's options, for a child started -I (which drops the PYTHON*
    variables): no bytecode written where it writes none (PYTHONDONTWRITEBYTECODE, -B), read and written where it
    keeps it (PYTHONPYCACHEPREFIX). A child script's imports (_job_child.py's) are then cached as
    this process's are."""
    flags: tuple[str, ...] = ("-B",) if sys.dont_write_bytecode else ()
    prefix = getattr(sys, "pycache_prefix", None)
    if prefix:  # PYTHONPYCACHEPREFIX=pycache is kept relative by CPython, read against the working folder at each
        # write: the child, started from "/", is given the same folder
        try:
            prefix = os.path.abspath(prefix)
        except OSError:  # the working folder was removed: nothing is written below it by anyone
            pass
        flags += (f"-Xpycache_prefix={prefix}",)
    return flags


# the one script of the job children (_probe_jobs' and _load_jobs' work): python -I -S JOB_CHILD JOBS ARG...
JOB_CHILD = os.path.join(os.path.dirname(os.path.realpath(__file__)), "_job_child.py")


def job_child_argv(jobs: str, *args: str, python: str | None = None) -> tuple[str, ...]:
    """PYTHON (this interpreter where None) running the job child isolated (-I -S), with this process's bytecode
    settings, on the module of jobs JOBS ("_probe_jobs", "_load_jobs") and its ARGS."""
    if python is None:
        return python_argv(JOB_CHILD, jobs, *args)
    return (python, "-I", "-S", *bytecode_flags(), JOB_CHILD, jobs, *args)


def python_argv(script: str, *args: str, site: bool = False) -> tuple[str, ...]:
    """This interpreter running SCRIPT isolated (-I: no PYTHONPATH, no user site, no script or
    current folder on sys.path); -S as well unless SITE: a big environment's .pth files cost time; this process's
    bytecode settings (bytecode_flags)."""
    flags = ("-I",) if site else ("-I", "-S")
    return (own_python(), *flags, *bytecode_flags(), script, *args)


# python -c PROGRAM_BOOT SCRIPT ARGS...: a script of the doctor's (standard library only) in the user's Python, started
# as a program of the user's is (its site code, .pth files, sitecustomize and PYTHONPATH in force), run as a script
# would be but without "" (the working folder) or its own folder on sys.path; PYTHONPATH's folders are off sys.path too
# while the script imports what it needs itself (a json.py there would stop it where the user's program may never
# import json), kept in _DOCTOR_PATH (and the modules Python had at start in _DOCTOR_AT_START) for the script to put
# back before it asks what the program's imports find (_deep_child.py, _python_child.py, the all-reduce's ranks);
# old syntax, any Python 3
PROGRAM_BOOT = ("import os, sys; _DOCTOR_AT_START = set(sys.modules); _DOCTOR_PATH = list(sys.path); "
                "_DOCTOR_USER = [os.path.realpath(p) for p in os.environ.get('PYTHONPATH', '').split(os.pathsep) if p]; "
        "sys.path[:] = [p for p in sys.path if p not in ('', '.') and os.path.realpath(p) not in _DOCTOR_USER]; "
        "sys.argv = sys.argv[1:]; __file__ = sys.argv[0]; exec(compile(open(__file__, 'rb').read(), __file__, 'exec'))")


_MODULE_BOOTSTRAP = (
    "import json, runpy, sys; sys.path[:0] = json.loads(sys.argv[1]); module = sys.argv[2]; "
    "sys.argv = [module] + sys.argv[3:]; runpy.run_module(module, run_name='__main__', alter_sys=True)"
)


def python_module_argv(module: str, *args: str, paths: Sequence[str] = ()) -> tuple[str, ...]:
    """This interpreter running MODULE isolated, with PATHS (e.g. the folder that holds this package)
    put first on its sys.path instead of PYTHONPATH and the current folder."""
    return (own_python(), "-I", "-c", _MODULE_BOOTSTRAP, json.dumps(list(paths)), module, *args)


def started_environment(env: Mapping[str, str]) -> dict[str, str]:
    """ENV as a child started from NEUTRAL_CWD gets it: every variable that names a path its reader resolves against
    the working folder (LD_PRELOAD=lib/libcuda.so.1, TMPDIR=tmp, PYTHONPATH=src, XLA_FLAGS=--xla_dump_to=dump) made
    absolute against this process's working folder (variables.child_environment), so that the child opens what a
    program started here opens. Every child the runner starts gets it, whoever asked for the child."""
    from cudnn_doctor.variables import child_environment

    return child_environment(env)


def run_child(argv: Sequence[str], env: Mapping[str, str] | None, deadline: float, what: str = "it",
              on_stderr_line: Callable[[bytes], None] | None = None,
              stop_signals: tuple[tuple[float, int], ...] = (), stop_grace: float = 0.0,
              answer_channel: bool = False, read_to_end: bool = False) -> ChildAnswer:
    """Run one child until it ends or DEADLINE (a time.monotonic() value); always an answer."""
    request = ChildRequest(tuple(argv), env, max(0.0, deadline - time.monotonic()), what, on_stderr_line,
                           stop_signals, stop_grace, answer_channel, read_to_end=read_to_end)
    return ChildBatch([request], deadline=deadline, background=False).answers()[0]


def run_children(requests: Sequence[ChildRequest], deadline: float | None = None,
                 parallel: int | None = None) -> list[ChildAnswer]:
    """Run REQUESTS side by side, at most PARALLEL at once; one answer each, in order."""
    return ChildBatch(requests, deadline=deadline, parallel=parallel, background=False).answers()


_RETRY = object()  # _start's answer when the machine cannot start one more child now


@record
class _Running:
    """A child started by a batch, and what it has said so far."""

    index: int
    process: subprocess.Popen[bytes]
    started: float
    deadline: float
    out: bytearray = field(default_factory=bytearray)
    err: bytearray = field(default_factory=bytearray)
    answer: bytearray = field(default_factory=bytearray)
    answer_pipe: Any = None  # the read end of its answer channel, a file object, or None
    open_pipes: int = 2
    # when its answer channel (or, without one, its last pipe) reached its end while it still ran: a child about to
    # exit, or one whose library closed every descriptor and runs on (its answer then comes by the channel's path)
    answer_closed_at: float = 0.0
    start_expired: bool = False  # cut off for saying nothing within its request's start_timeout
    # its stdout read to its end (read_to_end) reached STDOUT_LIMIT: stopped there, by the bytes, not at its deadline
    flooded: bool = False
    on_stderr_line: Callable[[bytes], None] | None = None
    partial_line: bytearray = field(default_factory=bytearray)

    def took_stderr(self, chunk: bytes, final: bool = False) -> None:
        """Hand each whole line of stderr to the request's callback (the last part too when FINAL)."""
        if self.on_stderr_line is None:
            return
        self.partial_line += chunk
        *lines, rest = bytes(self.partial_line).split(b"\n")
        self.partial_line = bytearray(rest[-STDERR_LIMIT:])  # a flood without a newline is kept bounded too
        if final and rest:
            lines.append(rest)
            self.partial_line = bytearray()
        for line in lines:
            try:
                self.on_stderr_line(line)
            except Exception:  # noqa: BLE001 - a callback's failure must not stop the reading
                pass


class ChildBatch:
    """Children started now (the first PARALLEL of them before the constructor returns; read in a background thread
    unless BACKGROUND is false), answers collected later: probing overlaps with the doctor's other work."""

    def __init__(self, requests: Sequence[ChildRequest], deadline: float | None = None,
                 parallel: int | None = None, background: bool = True) -> None:
        self.requests = list(requests)
        self.deadline = deadline
        self.parallel = max(1, parallel or parallel_limit())
        self.token = os.urandom(8).hex()  # secrets.token_hex without importing secrets, random, hmac
        self._since = last_pid()  # what its children start gets a later process id (kill_strays)
        self._answers: list[ChildAnswer | None] = [None] * len(self.requests)
        self._answered = threading.Condition()
        self._stop = threading.Event()
        self._done = threading.Event()  # set once every child has ended and what they started is gone
        self._launched = threading.Event()  # set once the first children (up to `parallel`) have been started
        # a limit of the process (open files, memory, processes) that left no room for even one child, or what
        # else stopped the batch's thread: raised in the caller's thread (limits.py says which limit)
        self._limit: BaseException | None = None
        self._thread: threading.Thread | None = None
        if not self.requests:
            self._done.set()
            self._launched.set()
            return
        _LIVE.add(self)
        if background:
            self._thread = threading.Thread(target=self._run, name="cudnn-doctor-children", daemon=True)
            self._thread.start()
            # started now, not when the batch's thread next gets the interpreter's lock: the caller's thread, busy
            # (imports, the scan), gives it up 5 ms a turn, and a child's start takes several turns
            self.wait_launched()
        else:
            self._run()

    def answers(self) -> list[ChildAnswer]:
        """Every child's answer, once all have ended (and what they started is gone)."""
        if self._thread is not None:
            try:
                # An Event, not Thread.join: a join interrupted by a signal marks the thread as stopped on
                # Python 3.10-3.12 (it releases the thread's lock in its `except`), so a second join returns
                # at once, the doctor exits and the daemon thread dies before it has killed the children.
                # And never a wait without a timeout: the kernel may deliver SIGINT to the batch's thread,
                # which does not wake this one; Python runs the handler only when this thread wakes.
                while not self._done.wait(SIGNAL_CHECK_S):
                    self._check_thread()
            except BaseException:  # Ctrl-C, SIGTERM, SIGHUP while waiting: the children go first
                self.stop()
                raise
        self._raise_limit()
        return [a if a is not None else _answer_without_run("the doctor stopped before it ran") for a in self._answers]

    def _check_thread(self) -> None:
        """The batch's thread is gone without finishing (it could not even begin: no memory left for its first
        frame under ulimit -v): what it started is killed, and the caller stops waiting for it."""
        if self._thread is None or self._thread.is_alive() or self._done.is_set():
            return
        kill_strays(self.token, self._since)
        _LIVE.discard(self)
        if self._limit is None:
            from cudnn_doctor.limits import address_space_limited

            self._limit = MemoryError("the thread that runs the children ended before it could finish") \
                if address_space_limited() else RuntimeError("the thread that runs the children ended early")
        self._done.set()
        self._launched.set()

    def _raise_limit(self) -> None:
        """The limit that left no room for a child, raised in the caller's thread (limits.py says which)."""
        if self._limit is not None:
            raise self._limit

    def wait_launched(self) -> None:
        """Until the first children have been started (or the batch has ended)."""
        try:
            while not self._launched.wait(SIGNAL_CHECK_S):
                self._check_thread()
        except BaseException:
            self.stop()
            raise
        self._raise_limit()

    def answer(self, index: int) -> ChildAnswer:
        """Child INDEX's answer as soon as it has one; the others may still run."""
        try:
            with self._answered:
                while self._answers[index] is None and not self._done.is_set():
                    self._answered.wait(SIGNAL_CHECK_S)
                    self._check_thread()
        except BaseException:  # a signal while waiting: the children go first
            self.stop()
            raise
        self._raise_limit()
        found = self._answers[index]
        return found if found is not None else _answer_without_run("the doctor stopped before it ran")

    def _set(self, index: int, answer: ChildAnswer) -> None:
        with self._answered:
            self._answers[index] = answer
            self._answered.notify_all()

    # --- the loop ---------------------------------------------------------------------------

    def _run(self) -> None:
        pending = deque(range(len(self.requests)))
        running: dict[int, _Running] = {}
        selector: selectors.BaseSelector | None = None
        try:
            selector = CURRENT.pipe_selector()  # selectors where select() takes pipes (an epoll descriptor)
            while pending or running:
                now = time.monotonic()
                while pending and len(running) < self.parallel and not self._stop.is_set():
                    index = pending.popleft()
                    if self.deadline is not None and now >= self.deadline:
                        self._set(index, _answer_without_run("not started: the time for all of them ran out",
                                                             timed_out=True))
                        continue
                    started = self._start(index, selector, retry_later=bool(running))
                    if started is _RETRY:  # out of file descriptors or processes: wait for a running one to end
                        pending.appendleft(index)
                        self.parallel = max(1, len(running))
                        break
                    if self._limit is not None:  # not even one child fits under the limit: nothing more is started
                        pending.clear()
                        break
                    if isinstance(started, _Running):
                        running[index] = started
                self._launched.set()
                if self._stop.is_set():
                    break
                if not running:
                    continue
                wait = min(r.deadline for r in running.values()) - time.monotonic()
                # a child whose pipes are closed is about to exit: look again soon (for its first 50 ms: one whose
                # library closed them runs on, and is looked at every 20 ms, not spun on); otherwise a pipe wakes us
                # (a child that exits while a daemon it left holds its pipes is seen within 20 ms)
                now = time.monotonic()
                soon = 0.001 if any(r.open_pipes == 0 and now - r.answer_closed_at < 0.05
                                    for r in running.values()) else 0.02
                events = selector.select(timeout=max(0.0, min(wait, soon)))
                for key, _mask in events:
                    self._read(key, selector, running)
                for child in running.values():  # an answer channel opened again by its path: read as it comes
                    if child.answer_closed_at and child.answer_pipe is not None and not child.answer_pipe.closed:
                        _append(child.answer, _drain(child.answer_pipe.fileno()), STDOUT_LIMIT, keep_tail=False)
                now = time.monotonic()
                for index, child in list(running.items()):
                    if child.flooded:
                        self._finish(child, selector, timed_out=True)
                        del running[index]
                    elif _has_exited(child.process):
                        if self._reading_on(child, now):
                            continue
                        self._finish(child, selector, timed_out=False)
                        del running[index]
                    elif self._not_started(child, now) or now >= child.deadline:
                        self._finish(child, selector, timed_out=True)
                        del running[index]
        except Exception as error:  # noqa: BLE001 - no descriptor or memory left (a limit), or a bug: it goes to
            self._limit = self._limit or error  # the caller's thread (answers), never dies with this one
        except BaseException:  # a signal in the main thread (run_child): kill the process groups, then go on
            self._stop.set()
            raise
        finally:
            try:
                if selector is not None:
                    for child in list(running.values()):
                        self._finish(child, selector, timed_out=True, stopped=self._stop.is_set())
            except Exception as error:  # noqa: BLE001 - the children are killed below all the same
                self._limit = self._limit or error
            finally:  # even when a second Ctrl-C cut the stopping short: whatever carries the token goes
                try:
                    if selector is not None:
                        selector.close()
                    kill_strays(self.token, self._since)
                except Exception as error:  # noqa: BLE001 - out of memory while cleaning: still done
                    self._limit = self._limit or error
                finally:
                    _LIVE.discard(self)
                    self._launched.set()
                    self._done.set()

    def stop(self, wait: float = STOP_WAIT_S) -> None:
        """Kill every child of this batch now (and what they started); wait up to WAIT s for that."""
        self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            end = time.monotonic() + wait
            while not self._done.wait(SIGNAL_CHECK_S) and time.monotonic() < end:
                self._check_thread()  # a thread that is gone is not waited for

    def _start(self, index: int, selector: selectors.BaseSelector, retry_later: bool) -> _Running | object | None:
        request = self.requests[index]
        env = started_environment(os.environ if request.env is None else request.env)
        if request.argv[1:2] == ("-I",):  # the doctor's own code, isolated: never moved out of its venv
            env = own_child_env(env)
        env = with_token(env, self.token)
        env[PID_VARIABLE] = str(os.getpid())  # a child script of ours dies with its parent (_child_stdio)
        started = time.monotonic()
        deadline = started + request.timeout
        if self.deadline is not None:
            deadline = min(deadline, self.deadline)
        answer_read = answer_write = None
        stdin_file = None
        options = {**CURRENT.popen_options, **signals_as_handed()}
        try:
            if request.answer_channel and CURRENT.name == "posix":  # Windows: stdout, as before
                answer_read, answer_write = os.pipe()
                env[ANSWER_FD_VARIABLE] = str(answer_write)
                env[ANSWER_PATH_VARIABLE] = f"/proc/{os.getpid()}/fd/{answer_read}"
                options["pass_fds"] = (answer_write,)
            if request.stdin:  # a file, not a pipe: a child that never reads it cannot block the batch
                import tempfile

                stdin_file = tempfile.TemporaryFile()
                stdin_file.write(request.stdin)
                stdin_file.seek(0)
            CURRENT.before_start()
            with CURRENT.starting:  # started and known as ours at once: no other batch takes it for an orphan
                # nothing to read: a pipe whose end is closed at once, not /dev/null (a container or chroot
                # without /dev/null made every probe 'could not start', read as NVML failing: reboot)
                process = subprocess.Popen(list(request.argv), stdin=stdin_file or subprocess.PIPE,
                                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=NEUTRAL_CWD,
                                           **options)
                CURRENT.adopt(process)
            if process.stdin is not None:
                process.stdin.close()
        except (OSError, ValueError) as error:
            if answer_read is not None:
                os.close(answer_read)
            if getattr(error, "errno", None) in (errno.EMFILE, errno.ENFILE, errno.EAGAIN, errno.ENOMEM):
                if retry_later:
                    return _RETRY
                if isinstance(error, OSError):  # none running, and still no room: a limit of the process
                    self._limit = error
                    return None
            why = getattr(error, "strerror", None) or str(error)
            self._set(index, _answer_without_run(f"could not start {request.what}: {why}"))
            return None
        finally:
            if answer_write is not None:
                os.close(answer_write)
            if stdin_file is not None:
                stdin_file.close()
        child = _Running(index, process, started, deadline, on_stderr_line=request.on_stderr_line)
        pipes: list[Any] = [process.stdout, process.stderr]
        if answer_read is not None:
            child.answer_pipe = open(answer_read, "rb", buffering=0)  # noqa: SIM115 - closed in _read or _end
            child.open_pipes += 1
            pipes.append(child.answer_pipe)
        for pipe in pipes:
            assert pipe is not None
            os.set_blocking(pipe.fileno(), False)
            selector.register(pipe, selectors.EVENT_READ, child)
        return child

    def _read(self, key: selectors.SelectorKey, selector: selectors.BaseSelector,
              running: dict[int, _Running]) -> None:
        child: _Running = key.data
        pipe = key.fileobj
        target = child.out if pipe is child.process.stdout else child.answer if pipe is child.answer_pipe else child.err
        while True:
            try:
                chunk = os.read(key.fd, 65536)
            except BlockingIOError:
                return
            except OSError:
                chunk = b""
            if not chunk:  # end of file: every writer has closed it
                selector.unregister(pipe)
                child.open_pipes -= 1
                if pipe is child.answer_pipe:  # kept open: a child whose library closed it opens it again by its
                    child.answer_closed_at = time.monotonic()  # path (_child_stdio), and is read while it runs
                    return
                pipe.close()  # type: ignore[union-attr]
                if child.open_pipes == 0:
                    child.answer_closed_at = child.answer_closed_at or time.monotonic()
                return
            if target is child.err:
                child.took_stderr(chunk)
            _append(target, chunk, STDERR_LIMIT if target is child.err else STDOUT_LIMIT, keep_tail=target is child.err)
            if target is child.out and len(child.out) >= STDOUT_LIMIT and self.requests[child.index].read_to_end:
                child.flooded = True  # what is kept is full: reading on to its deadline would only wait
                return

    def _reading_on(self, child: _Running, now: float) -> bool:
        """Whether CHILD, exited, is one whose stdout is read to its end (its request's read_to_end) and that pipe is
        still open before its deadline: something it started may yet close it."""
        stdout = child.process.stdout
        return self.requests[child.index].read_to_end and stdout is not None and not stdout.closed and \
            now < child.deadline

    def _not_started(self, child: _Running, now: float) -> bool:
        """Whether CHILD has said nothing on its answer channel within its request's start_timeout."""
        limit = self.requests[child.index].start_timeout
        if limit is None or child.answer or child.answer_pipe is None:
            return False
        if now - child.started < limit and now < child.deadline:  # at its deadline, silent: it never came up
            return False
        child.start_expired = True
        return True

    def _finish(self, child: _Running, selector: selectors.BaseSelector, timed_out: bool,
                stopped: bool = False) -> None:
        try:
            if timed_out and self.requests[child.index].stop_signals:
                self._ask_to_stop(child)
        finally:  # a second Ctrl-C while it is asked does not save it from being killed
            self._end(child, selector, timed_out, stopped)

    def _ask_to_stop(self, child: _Running) -> None:
        """Send the request's stop signals to the child, then give it stop_grace seconds to exit."""
        request = self.requests[child.index]
        process = child.process
        for pause, signum in request.stop_signals:
            self._wait_for_exit(child, pause)
            if _has_exited(process):
                return
            try:
                os.kill(process.pid, signum)  # not reaped yet (waitid WNOWAIT): the pid is still this child's
            except OSError:
                return
        self._wait_for_exit(child, request.stop_grace)

    def _wait_for_exit(self, child: _Running, seconds: float) -> None:
        """Up to SECONDS for the child to exit, its pipes read meanwhile (a full pipe would hold it up)."""
        end = time.monotonic() + seconds
        while not _has_exited(child.process) and time.monotonic() < end:
            for pipe, target in ((child.process.stdout, child.out), (child.process.stderr, child.err)):
                if pipe is not None and not pipe.closed:
                    rest = _drain(pipe.fileno())
                    if target is child.err:
                        child.took_stderr(rest)
                    _append(target, rest, STDOUT_LIMIT if target is child.out else STDERR_LIMIT, target is child.err)
            time.sleep(0.02)

    def _end(self, child: _Running, selector: selectors.BaseSelector, timed_out: bool, stopped: bool) -> None:
        process = child.process
        # Everything the child wrote before it exited is in the pipes now: take it without waiting
        # for an end of file that a daemon it left behind may never send.
        held = []
        for pipe, target in ((process.stdout, child.out), (process.stderr, child.err),
                             (child.answer_pipe, child.answer)):
            if pipe is None or pipe.closed:
                continue
            rest, ended = _drain_to_end(pipe.fileno())
            if not ended and not timed_out and pipe is not child.answer_pipe:
                # it has exited (its own descriptors closed before it became a zombie): another process holds it
                held.append("stdout" if pipe is process.stdout else "stderr")
            if target is child.err:
                child.took_stderr(rest)
            _append(target, rest, STDERR_LIMIT if target is child.err else STDOUT_LIMIT, target is child.err)
            try:
                selector.unregister(pipe)
            except (KeyError, ValueError):
                pass
            pipe.close()
        child.took_stderr(b"", final=True)
        CURRENT.kill_tree(process)  # before reaping: the group's id cannot have been reused yet
        _reap(process)
        CURRENT.release(process)
        wall_ms = round((time.monotonic() - child.started) * 1000, 1)
        request = self.requests[child.index]
        answer = bytes(child.answer) if child.answer_pipe is not None else None
        made = make_answer(request, process.returncode, bytes(child.out), bytes(child.err), wall_ms, timed_out,
                           stopped, answer, child.start_expired, child.flooded)
        made.held = tuple(held)
        self._set(child.index, made)


_LIVE: set[ChildBatch] = set()
_STREAMS: set[StreamingChild] = set()
PIPE_SIZE = 1 << 20  # a stream's pipe: what an unprivileged process may ask for (/proc/sys/fs/pipe-max-size)


class StreamingChild:
    """A child whose standard output is the caller's to read as a stream (install's decompressor, `xz -dc`):
    started as every child is (a session and group of its own, a neutral folder, the token in its
    environment) with the open file STDIN_FD as its standard input; its group killed on close(), and by
    stop_all() when the doctor stops. Its output has no deadline: the reader's pace is the child's."""

    def __init__(self, argv: Sequence[str], stdin_fd: int) -> None:
        self.token = os.urandom(8).hex()
        self._since = last_pid()
        env = with_token(started_environment(os.environ), self.token)
        env[PID_VARIABLE] = str(os.getpid())
        CURRENT.before_start()
        with CURRENT.starting:
            self.process = subprocess.Popen(list(argv), stdin=stdin_fd, stdout=subprocess.PIPE,
                                            stderr=subprocess.PIPE, env=env, cwd=NEUTRAL_CWD,
                                            **{**CURRENT.popen_options, **signals_as_handed()})
            CURRENT.adopt(self.process)
        _STREAMS.add(self)
        assert self.process.stdout is not None
        _widen_pipe(self.process.stdout.fileno())

    def close(self) -> None:
        """Kill the child's group (whatever it started too), reap it, close its pipes."""
        _STREAMS.discard(self)
        if self.process.returncode is None:  # not reaped yet: its group's id is still its own
            CURRENT.kill_tree(self.process)
        _reap(self.process)
        CURRENT.release(self.process)
        kill_strays(self.token, self._since)
        for pipe in (self.process.stdout, self.process.stderr):
            if pipe is not None:
                pipe.close()


def _widen_pipe(descriptor: int) -> None:
    """Let a stream's child run a chunk ahead: with the default 64 KiB pipe, a decompressor stops while the
    reader checks, hashes and writes each chunk, and the two take turns instead of running side by side."""
    CURRENT.widen_pipe(descriptor, PIPE_SIZE)


@atexit.register
def stop_all() -> None:
    """Kill the children of every batch still running, and every stream's (the doctor is stopping: an
    error, a signal); no child, and nothing a child started, outlives it."""
    for batch in list(_LIVE):
        try:
            batch.stop()
        except MemoryError:  # a limit that stopped the doctor stops this too: what it started dies with its group
            pass
    for stream in list(_STREAMS):
        try:
            stream.close()
        except MemoryError:
            pass


def _append(target: bytearray, chunk: bytes, limit: int, keep_tail: bool) -> None:
    target += chunk
    if len(target) > limit:
        if keep_tail:
            del target[: len(target) - limit]
        else:
            del target[limit:]


def _drain(fd: int) -> bytes:
    """What can be read from FD now, without waiting (up to STDOUT_LIMIT)."""
    return _drain_to_end(fd)[0]


def _drain_to_end(fd: int) -> tuple[bytes, bool]:
    """What can be read from FD now, without waiting (up to STDOUT_LIMIT), and whether its end was reached (every
    writer had closed it); a pipe still flooding past the limit counts as held."""
    chunks = []
    size = 0
    ended = False
    while size <= STDOUT_LIMIT:
        try:
            chunk = os.read(fd, 65536)
        except BlockingIOError:  # nothing more now: a writer still holds it
            break
        except OSError:  # not readable at all: nothing more will come
            ended = True
            break
        if not chunk:
            ended = True
            break
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks), ended


def _has_exited(process: subprocess.Popen[bytes]) -> bool:
    """Has PROCESS exited? Asked without reaping it, so its process group id stays ours to kill."""
    if process.returncode is not None:
        return True
    try:
        info = os.waitid(os.P_PID, process.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    except ChildProcessError:
        return True
    except (AttributeError, OSError):  # no waitid: poll() reaps, which is fine there
        return process.poll() is not None
    return info is not None


def _reap(process: subprocess.Popen[bytes]) -> None:
    try:
        process.wait(timeout=REAP_GRACE_S)
    except subprocess.TimeoutExpired:  # unkillable for now (in the kernel); its answer says it timed out
        pass


def kill_strays(token: str, since: int | None = None) -> int:
    """Kill every process that still carries TOKEN in its environment: what a child started, in
    another session or detached from it included. Returns how many were found (Linux; 0 elsewhere).

    SINCE (last_pid() before the first child started) narrows the search to the processes started after
    it: Linux gives process ids out in turn (cyclically, up to pid_max), so whatever a child started has
    an id in (SINCE, last_pid() now]. Only those have their environment read; on a machine with
    thousands of processes, reading every one's took 30 ms of each batch. Without SINCE, all of them.

    /proc is listed, then each listed process read: what a stray forks in between was not listed. So the
    scan is done again while the last pass killed a stray (a process killed can fork no more: a pass that
    kills none found every one) or met a zombie of this process's own (the doctor is the subreaper of what
    its children leave: a daemon's first fork that has exited, its child reparented before it died); a
    process met gone, or another's zombie, may be such a fork too but is on a busy machine mostly another
    program's: it makes one more pass, once. _STRAY_PASSES at most. A stray's whole process group is
    killed at once where the group is not the doctor's: the kernel aborts a fork that a signal to the
    group meets, so what it forks at that instant dies with it."""
    if not hasattr(os, "getpgid"):  # Windows: no /proc, no process groups (0 elsewhere, as said)
        return 0
    marker = f"{TOKEN_VARIABLE}={token}".encode()
    me, my_group, my_session = os.getpid(), _own(os.getpgid), _own(os.getsid)
    met: set[int] = set()  # the processes met that were strays, or were gone or dead when read
    without: set[int] = set()  # read, without the token (which no process gets later): only asked if left to us
    found = 0
    killed: dict[int, bytes | None] = {}  # each stray killed, with its start time (to tell it from a reuse of its id)
    looked_again = False  # the one more pass that a process met gone (or another's zombie) makes
    with CURRENT.starting:  # no child of another batch is between its start and its being known as ours
        for _ in range(_STRAY_PASSES):
            try:
                entries = os.listdir("/proc")
            except OSError:
                return found
            started_after = _started_after(since)
            again, unknown = False, False
            for entry in entries:
                if not ascii_digits(entry):
                    continue
                pid = int(entry)
                if pid == me or pid in met or not started_after(pid):
                    continue
                if pid in without:  # its parent may have died since: an orphan of ours now (its environment cleared)
                    if not CURRENT.orphan(pid):
                        continue
                    environ = b""
                else:
                    read = _environ(entry)
                    if read is None:  # gone (its children reparented first); no buffer under ulimit -v
                        met.add(pid)
                        unknown = True
                        continue
                    environ = read
                    if not environ and (parent := _dead_parent(pid)) is not None:  # a zombie reads as empty: it
                        met.add(pid)  # forks no more, its children were reparented before it died
                        again, unknown = again or parent == me, True
                        continue
                    if not environ:  # in the middle of an exec (its new image has no environment yet)?
                        environ = _environ_after_exec(entry)
                if marker in environ.split(b"\0") or CURRENT.orphan(pid):  # or left, its environment cleared
                    met.add(pid)
                    again = True
                    found += 1
                    killed[pid] = _start_time(pid)
                    _kill_stray(pid, my_group, my_session)
                    CURRENT.reap(pid)
                else:
                    without.add(pid)
            if not again and (looked_again or not unknown):
                break
            looked_again = looked_again or not again
    _await_deaths(killed)
    return found


_STRAY_PASSES = 16  # kill_strays' scans at most: each one after the first follows a fork it met
_DEATH_WAIT_S = 2.0  # how long kill_strays waits for what it killed to be dead (SIGKILL is delivered, not awaited)


def with_token(env: Mapping[str, str], token: str) -> dict[str, str]:
    """ENV with the batch's TOKEN first: /proc/PID/environ is read from its start, and kill_strays reads 1 MiB of
    it (an environment can hold 2 MB and more: the token last was past what was read)."""
    return {TOKEN_VARIABLE: token, **{name: value for name, value in env.items() if name != TOKEN_VARIABLE}}


_EXEC_WAITS_S = (0.001, 0.004, 0.016, 0.03)  # an exec's window without an environment, waited out (51 ms at most)


def _environ_after_exec(entry: str) -> bytes:
    """The environment of process ENTRY, read again while it reads empty: between the point where execve closes
    the close-on-exec descriptors (the starter's subprocess returns then) and the one where it places the new
    image's environment, /proc/PID/environ is empty; a stray met there was taken for one without the token. A
    kernel thread, or a process started with no environment at all, stays empty: b"" after the waits."""
    if _kernel_thread(entry):
        return b""
    for wait in _EXEC_WAITS_S:
        time.sleep(wait)
        environ = _environ(entry)
        if environ is None:
            return b""
        if environ:
            return environ
    return b""


def _environ(entry: str) -> bytes | None:
    """The first MiB of process ENTRY's environment; None where it is gone (or no buffer is left under ulimit -v)."""
    try:
        with open(f"/proc/{entry}/environ", "rb") as handle:
            return handle.read(1 << 20)
    except (OSError, MemoryError):
        return None


def _kernel_thread(entry: str) -> bool:
    """Whether process ENTRY is a kernel thread (PF_KTHREAD in /proc/PID/stat's flags): never a stray."""
    fields = stat_fields(entry)
    try:
        return fields is None or bool(int(fields[6]) & 0x00200000)
    except (IndexError, ValueError):
        return True


def _start_time(pid: int) -> bytes | None:
    """PID's start time in clock ticks since boot (/proc/PID/stat field 22), None where it cannot be read."""
    fields = stat_fields(pid)
    return fields[19] if fields is not None and len(fields) > 19 else None


def _await_deaths(killed: Mapping[int, bytes | None]) -> None:
    """Wait, _DEATH_WAIT_S at most, until each process killed is dead: gone, a zombie, or its id given to another
    process. kill() returns once SIGKILL is sent; on a loaded machine a process with much mapped takes tens of
    milliseconds more to exit, and a check that returned before then would leave it to be seen running. Orphans
    of ours are reaped as they die."""
    left = dict(killed)
    deadline = time.monotonic() + _DEATH_WAIT_S
    pause = 0.002
    while left:
        for pid, started in list(left.items()):
            CURRENT.reap(pid, wait=False)
            parent = _dead_parent(pid)
            if parent is not None or _start_time(pid) != started:
                del left[pid]
        if not left or time.monotonic() >= deadline:
            return
        time.sleep(pause)
        pause = min(pause * 2, 0.05)


def _own(query: Callable[[int], int]) -> int | None:
    try:
        return query(0)
    except OSError:
        return None


def _dead_parent(pid: int) -> int | None:
    """The parent of PID where PID is a zombie (0 where it is already gone); None where it is alive."""
    fields = stat_fields(pid)
    if fields is None:
        return 0
    try:
        return int(fields[1]) if fields[0] in (b"Z", b"X", b"x") else None
    except (IndexError, ValueError):
        return 0


def _kill_stray(pid: int, my_group: int | None, my_session: int | None) -> None:
    """SIGKILL to PID's whole process group, where that group is in another session than the doctor's (made by a
    child of ours: setsid makes a session only for the caller's own descendants), then to PID itself."""
    try:
        group, session = os.getpgid(pid), os.getsid(pid)
        if group not in (my_group, None) and session != my_session and group > 1:
            os.killpg(group, signal.SIGKILL)
    except OSError:
        pass
    try:
        os.kill(pid, signal.SIGKILL)
    except OSError:
        pass


def last_pid() -> int | None:
    """The last process id the kernel gave out in this process's pid namespace (/proc/loadavg), or None."""
    try:
        with open("/proc/loadavg", "rb") as handle:
            return int(handle.read(256).split()[4])
    except (OSError, IndexError, ValueError):
        return None


def _proc_is_own_namespace() -> bool:
    """Whether /proc lists this process's pid namespace (/proc/loadavg counts in that one): a process
    put in a new namespace under the host's /proc sees other numbers there."""
    try:
        return os.readlink("/proc/self") == str(os.getpid())
    except OSError:
        return False


def _started_after(since: int | None) -> Callable[[int], bool]:
    """Whether a process id was given out after SINCE (every id, where SINCE or the last id is unknown)."""
    last = last_pid() if since is not None else None
    if since is None or last is None or not _proc_is_own_namespace():
        return lambda pid: True
    if since <= last:
        return lambda pid: since < pid <= last
    return lambda pid: pid > since or pid <= last  # the ids wrapped around pid_max in between


def _answer_without_run(error: str, timed_out: bool = False) -> ChildAnswer:
    return ChildAnswer(values=None, error=error, crashed=False, timed_out=timed_out, wall_ms=0.0)


def make_answer(request: ChildRequest, returncode: int | None, out: bytes, err: bytes, wall_ms: float,
                timed_out: bool, stopped: bool, answer: bytes | None = None, not_started: bool = False,
                flooded: bool = False) -> ChildAnswer:
    """The ChildAnswer of what a child left: its answer from ANSWER (its answer channel) where it had one, else
    from its stdout. FLOODED: its stdout, read to its end, filled what is kept and it was stopped there (an answer
    cut off as a timeout is: nothing partial is taken)."""
    stdout = out.decode("utf-8", "surrogateescape")
    said = stdout if answer is None else answer.decode("utf-8", "surrogateescape")
    stderr = err.decode("utf-8", "surrogateescape")
    lines = stderr.strip().splitlines()
    # where stderr is silent, the last line the child printed that is not its answer: cuDNN's front DLL on
    # Windows prints 'Invalid handle. Cannot load symbol cudnnGetVersion' on stdout before it ends the process
    lines = lines or [line for line in stdout.strip().splitlines() if line.strip() and not line.startswith("{")]
    tail = lines[-1] if lines else ""
    if timed_out:
        why = "the doctor was stopped" if stopped else (
            f"printed more than {STDOUT_LIMIT >> 20} MiB: stopped there" if flooded else
            f"did not start within {request.start_timeout:g} s" if not_started and request.start_timeout else
            f"did not finish within {request.timeout:g} s")
        return ChildAnswer(None, why, crashed=False, timed_out=True, wall_ms=wall_ms, exit_code=returncode,
                           stdout=stdout, stderr_tail=tail, answer=said)
    values = last_json_object(said)
    if returncode != 0:
        how = describe_exit(returncode)
        return ChildAnswer(values, how + (f" ({tail})" if tail else ""), crashed=True, timed_out=False,
                           wall_ms=wall_ms, exit_code=returncode, stdout=stdout, stderr_tail=tail, answer=said)
    return ChildAnswer(values, None, crashed=False, timed_out=False, wall_ms=wall_ms, exit_code=0,
                       stdout=stdout, stderr_tail=tail, answer=said)


def last_json_object(text: str) -> dict[str, Any] | None:
    """The last line of TEXT that is a JSON object (a child's answer), or None."""
    for line in reversed(text.splitlines()):
        line = line.strip()
        if line.startswith("{"):
            try:
                value = loads(line)  # an integer past int()'s 4,300 digits kept as its digits, not the answer lost
            except (ValueError, RecursionError):
                continue
            if isinstance(value, dict):
                return file_names(value)
    return None


# A child writes its answer in UTF-8, the bytes of a path (os.fsdecode's surrogates) as UTF-8 text. Where this
# process names files in another encoding (a C or POSIX locale with Python's UTF-8 mode off: ASCII), each string is
# taken back to those bytes and decoded as this process decodes file names, so a path in it names the same file here
# (a path with 'è' would otherwise fail every os call: "ascii codec can't encode").
_FILE_NAMES_NOT_UTF8 = sys.getfilesystemencoding().lower().replace("-", "") != "utf8"


def file_names(value: Any) -> Any:
    """VALUE (a child's answer: strings, lists, dicts) with each string named as this process names files (see
    above); the same VALUE where file names are UTF-8 here."""
    if not _FILE_NAMES_NOT_UTF8:
        return value
    if isinstance(value, str):
        return os.fsdecode(value.encode("utf-8", "surrogateescape"))
    if isinstance(value, dict):
        return {key: file_names(item) for key, item in value.items()}
    if isinstance(value, list):
        return [file_names(item) for item in value]
    return value


HELPER_TIMEOUT_VARIABLE = "CUDNN_DOCTOR_HELPER_TIMEOUT"  # seconds each helper program (--version, ldconfig -p) has
HELPER_TIMEOUT_S = 10.0


def helper_timeout() -> float:
    """The seconds a helper program is given (CUDNN_DOCTOR_HELPER_TIMEOUT, 10 unless set; variables.py's one
    validation)."""
    return timeout_from_env(HELPER_TIMEOUT_VARIABLE, HELPER_TIMEOUT_S)


def helper_request(argv: Sequence[str], env: Mapping[str, str] | None, what: str,
                   seconds: float | None = None) -> ChildRequest:
    """A helper program asked as a build reads it (`nvcc --version`, `ldconfig -p`: subprocess.check_output, XLA's
    GetToolVersionString): its output read to its end, within the helpers' timeout; what it leaves holding that
    output past then is named in its answer (ChildAnswer.held) and killed with the rest of what it started."""
    return ChildRequest(tuple(argv), env, helper_timeout() if seconds is None else seconds, what, read_to_end=True)


def helper_trouble(answer: ChildAnswer, seconds: float) -> str | None:
    """What a helper program (a helper_request) did that a program reading its output to its end would meet, in
    words, None where it answered and ended: it never ended, it left a process holding its output, a signal ended
    it, it flooded its output past what is kept, it could not start. What it started is gone by then (the runner)."""
    if answer.timed_out and "the doctor was stopped" not in (answer.error or ""):
        flooding = len(answer.stdout.encode("utf-8", "surrogateescape")) >= STDOUT_LIMIT
        return (f"printed more than {STDOUT_LIMIT >> 20} MiB, still printing" if flooding else
                f"did not end within {seconds:g} s") + " (stopped, with what it started)"
    if "stdout" in answer.held:
        return (f"left a process holding its output {seconds:g} s on: a program that reads it to its end (a build's "
                "check_output, XLA) waits for that process (stopped)")
    if answer.exit_code is not None and answer.exit_code < 0:
        return f"was ended by a signal: it {describe_exit(answer.exit_code)}"
    if answer.exit_code is None and answer.error:
        return f"could not be run: {answer.error}"
    if len(answer.stdout.encode("utf-8", "surrogateescape")) >= STDOUT_LIMIT:
        return f"printed more than {STDOUT_LIMIT >> 20} MiB (the rest was not read)"
    return None


def describe_exit(returncode: int | None) -> str:
    """'crashed with SIGSEGV', 'exited with status 2'."""
    if returncode is None:
        return "did not finish"
    return CURRENT.describe_exit(returncode)
