"""SIGINT, SIGTERM and SIGHUP (and a wrapper's SIGQUIT, SIGUSR1, SIGUSR2 and SIGALRM) end every command the same way:
as an exception that unwinds it.

`install()` (called once, in cli.main) turns each of the three signals into `Interrupted`, a
KeyboardInterrupt that knows its signal. Every `finally`, `with` and `except KeyboardInterrupt` of the
doctor then runs for a CI runner's SIGTERM or a closed terminal's SIGHUP exactly as for Ctrl-C:

- child.py's runner kills the process groups of the children it started (and what they started)
  on any BaseException, without Thread.join (an interrupted join misleads Python 3.10-3.12);
- a file being written is a temporary beside its target, removed on the way out (the target stays
  as it was); install/ rolls back its transaction;
- the command ends with 128 + the signal's number: 130 (SIGINT), 143 (SIGTERM), 129 (SIGHUP);
- a write of the answer that waits on its reader (a full pipe) is cut by the signal even inside deferred() (writing),
  and from then on a write waits STALL_S at most for its reader (streams): the answer is whole, or cut short with the
  signal's exit code, never waited on for ever.

Only the first signal raises: the clean-up it starts is bounded (a child is reaped for at most
child.REAP_GRACE_S), and a second signal must not cut that clean-up short and leave children behind.

The kernel may deliver a signal to any thread; Python runs the handler in the main thread, and only once
that thread runs again. So the main thread never waits without a timeout (child.SIGNAL_CHECK_S): a lock or
Event waited on for ever would leave a SIGINT that the kernel gave to another thread unhandled.

For code that runs something outside child.py (fleet/slurm.py's srun): wrap the wait in
`try: ... except BaseException: <cancel it the way its tool expects>; raise`. `received()` tells
whether a signal is what is unwinding the stack, and which.
"""

from __future__ import annotations

import contextlib
import signal
import sys
from collections.abc import Iterator
from types import FrameType
from typing import Any

from cudnn_doctor.operating_system import CURRENT

HANDLED = CURRENT.stop_signals  # SIGHUP on POSIX, SIGBREAK on Windows
# a wrapper's signals whose default ends the process: handled as SIGTERM is where they are at their default (not where
# the user ignored them or a program calling the doctor in-process handles them), so that what a command was doing is
# undone as for SIGTERM (killed by SIGQUIT, SIGUSR1 or SIGALRM, it left its `--output` temporary beside the user's
# file); only in the command's own process
WRAPPER_SIGNALS = tuple(getattr(signal, name) for name in ("SIGQUIT", "SIGUSR1", "SIGUSR2", "SIGALRM")
                        if hasattr(signal, name))
_received: list[int] = []
_held: list[bool] = []


class Interrupted(KeyboardInterrupt):
    """The command was asked to stop by signal SIGNUM."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


_installed: list[bool] = []


def install() -> None:
    """Make SIGINT, SIGTERM and SIGHUP raise Interrupted in the main thread (the first one only)."""
    _installed.append(True)
    for signum in HANDLED:
        try:
            if signum == signal.SIGINT and signal.getsignal(signum) is not _raise_once:  # the command's first install
                _sigint_ignored[:] = [signal.getsignal(signum) == signal.SIG_IGN]
            if signum != signal.SIGINT and signal.getsignal(signum) == signal.SIG_IGN:
                continue  # nohup: the user asked for SIGHUP to be ignored
            signal.signal(signum, _raise_once)
        except (ValueError, OSError):  # not the main thread, or a platform without that signal
            continue
    for signum in WRAPPER_SIGNALS if CURRENT.owns_process else ():  # a program calling it keeps its own (runner.run
        # installs again once entry has said the process is the command's)
        try:
            if signal.getsignal(signum) == signal.SIG_DFL:
                signal.signal(signum, _raise_once)
        except (ValueError, OSError):
            pass
    cpu = getattr(signal, "SIGXCPU", None)  # the soft CPU-time limit (ulimit -S -t) reached: said, not a silent 152
    if cpu is not None:
        try:
            if signal.getsignal(cpu) == signal.SIG_DFL:
                signal.signal(cpu, _raise_once)
        except (ValueError, OSError):
            pass
    if getattr(sys.unraisablehook, "__name__", "") != "_unraisable":
        global _python_unraisable
        _python_unraisable = sys.unraisablehook
        sys.unraisablehook = _unraisable


_python_unraisable: Any = None
_sigint_ignored: list[bool] = []


def sigint_ignored_at_start() -> bool:
    """Whether this command was started with SIGINT ignored (a background job of a shell without job control, a
    launcher that ignores it): every program that shell starts then ignores it too, while the doctor handles SIGINT
    itself (install); child.py starts the doctor's children with it ignored, as a program there has it."""
    return bool(_sigint_ignored and _sigint_ignored[0])


def _unraisable(info: Any) -> None:
    """A signal's exception raised where Python cannot pass it on (a weakref callback of the import system, a
    __del__): it would be printed as 'Exception ignored' and lost. It is sent again instead, so that it raises at
    the next line the main thread runs, as every other one does."""
    error = getattr(info, "exc_value", None)
    if isinstance(error, Interrupted) and not _held and error.signum in _received:
        _received.remove(error.signum)
        import _thread
        import threading

        try:  # from another thread, once this hook has returned: the main thread then raises where it goes on
            threading.Timer(0.05, _thread.interrupt_main, (error.signum,)).start()
        except RuntimeError:  # no thread can start (a limit): the signal stays as lost as Python left it
            _received.append(error.signum)
        return
    (_python_unraisable or sys.__unraisablehook__)(info)


def raise_once(signum: int, _frame: FrameType | None) -> None:
    """The handler: raise Interrupted for the first signal (recorded for exit_code), ignore the ones after."""
    _raise_once(signum, _frame)


def _raise_once(signum: int, _frame: FrameType | None) -> None:
    if _held:
        return
    _received.append(signum)
    if len(_received) == 1 and (not _deferring or _writing):
        raise Interrupted(signum)


_writing: list[bool] = []


@contextlib.contextmanager
def writing() -> Iterator[None]:
    """A write of the answer that may wait on its reader (a pipe the reader stopped reading, a terminal held by
    Ctrl-S): a signal in it raises even inside deferred(), since the write it would wait for may never come; the write
    returns nothing written (EINTR), so what is out is what the reader got, and the rest is dropped (streams)."""
    _writing.append(True)
    try:
        yield
    finally:
        _writing.pop()


def deferring() -> bool:
    """Whether a step that deferred() guards (the answer's write) is under way."""
    return bool(_deferring)


def pending() -> int | None:
    """The signal that is ending the command (deferred, raised and being unwound, or past hold() at its last flush), or
    None where none came or the answer was written whole before it (settle)."""
    return _received[0] if _received and not _settled else None


_deferring: list[bool] = []


@contextlib.contextmanager
def deferred() -> Iterator[None]:
    """A step that must be done whole or not at all as far as signals go (writing the command's one answer and
    settling it): a signal in it is recorded, not raised, and raises when the step ends unless the step settled the
    command (settle). The handler runs in the main thread between two of its steps, whichever thread the kernel gave
    the signal to, so a flag is enough where a signal mask (per thread) would not be."""
    _deferring.append(True)
    try:
        yield
    finally:
        _deferring.pop()
    if _received and not _held and not _deferring:
        raise Interrupted(_received[0])


def hold() -> None:
    """The command's outcome is settled (cli.main, just before exiting): signals from now on are ignored,
    so none can raise in the last flush or an atexit handler. In the command's own process (install() ran) they are
    ignored by the kernel too: Python's finalization puts SIG_DFL back for a signal whose handler is a Python
    function (not for SIG_IGN), and one landing then killed the process (exit -2) after its whole answer."""
    _held.append(True)
    if not _installed or sys.platform == "win32":
        return  # a program that calls the doctor in-process keeps its own handlers; Windows' console handlers are
        # not signals (the finalization that restores SIG_DFL is POSIX's concern)
    for signum in (*HANDLED, *WRAPPER_SIGNALS):
        try:
            if signal.getsignal(signum) is _raise_once:
                signal.signal(signum, signal.SIG_IGN)
        except (ValueError, OSError):  # not the main thread
            pass


def settle() -> None:
    """The command's answer is written whole: its outcome is the answer's. A signal from now on is ignored (hold),
    and one received before that the command went on past (deferred by Python where it could not raise) no longer
    sets the exit status either (runner.run asks settled())."""
    hold()
    _settled.append(True)


def settled() -> bool:
    """Whether settle() was called: the command's answer was written whole."""
    return bool(_settled)


_settled: list[bool] = []


def received() -> int | None:
    """The first signal received since install(), or None."""
    return _received[0] if _received else None


def exit_code(error: BaseException | None = None) -> int:
    """The exit status of a command ended by a signal: 128 + its number (130 for a plain Ctrl-C)."""
    signum = getattr(error, "signum", None) or received() or signal.SIGINT
    return 128 + int(signum)
