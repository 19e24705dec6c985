"""Run at the start of every child script of the doctor (_probe_child.py, _load_child.py, _deep_child.py,
_allreduce_child.py), from its own file: a library the user's environment preloads may close stdin, stdout or
stderr before the child's first line (Python then starts with sys.stdout None). Each one closed is /dev/null
again, so that a print or flush works and no pipe or file the child opens takes its number and gets what is
printed.

It also gives the script `answer_fd()`: the runner's answer channel as it is when the answer is written. A library
the child loads (at start, or when it is opened: a libcuda.so.1 first on LD_LIBRARY_PATH) may close every descriptor
it did not open, the channel among them, and a file opened after may then hold its number: the channel is opened
again by its path (CUDNN_DOCTOR_ANSWER_PATH, the doctor's own end of the pipe under /proc), never written where
another file now is. Standard library only, old syntax: it runs under whatever Python the child does."""

import os
import sys


def die_with_parent():
    """In the doctor's tree (CUDNN_DOCTOR_PID names the doctor): this process is killed when its parent dies
    (prctl PR_SET_PDEATHSIG), so that a doctor killed with SIGKILL, which can clean nothing, leaves no child running
    on (a framework import that hangs would run for ever); and where the doctor is already gone, it ends now."""
    named = os.environ.get("CUDNN_DOCTOR_PID", "")
    if not named or named.strip("0123456789") or not sys.platform.startswith("linux"):
        return
    parent = os.getppid()
    try:
        import ctypes

        ctypes.CDLL(None).prctl(1, 9, 0, 0, 0)  # PR_SET_PDEATHSIG, SIGKILL
    except (ImportError, OSError, AttributeError):
        return
    try:
        gone = os.getppid() != parent  # the parent died before the setting took
        os.kill(int(named), 0)
    except ProcessLookupError:
        gone = True
    except OSError:
        pass
    if gone:
        os._exit(1)


die_with_parent()

for _fd, _name, _mode in ((0, "stdin", "r"), (1, "stdout", "w"), (2, "stderr", "w")):
    try:
        os.fstat(_fd)
        continue
    except OSError:
        pass
    _null = os.open(os.devnull, os.O_RDWR)
    if _null != _fd:
        os.dup2(_null, _fd)
        os.close(_null)
    if getattr(sys, _name) is None:
        setattr(sys, _name, open(_fd, _mode, closefd=False))


def answer_fd():
    """The descriptor the answer goes on: the runner's channel (CUDNN_DOCTOR_ANSWER_FD) where that descriptor is
    still its pipe, else the pipe opened again by its path; 1 (stdout) where there is no channel at all."""
    named = os.environ.get("CUDNN_DOCTOR_ANSWER_FD", "")
    if not named or named.strip("0123456789"):  # ASCII digits alone
        return 1
    path = os.environ.get("CUDNN_DOCTOR_ANSWER_PATH", "")
    if not path:  # no /proc (not Linux): the descriptor as it was given
        return int(named)
    try:
        wanted = os.stat(path)
    except OSError:  # the doctor's end is gone (it stopped): nobody reads the answer
        return int(named)
    try:
        have = os.fstat(int(named))
        if (have.st_dev, have.st_ino) == (wanted.st_dev, wanted.st_ino):
            return int(named)
    except OSError:
        pass
    try:  # O_NONBLOCK: a pipe nobody reads any more must not block the open; the writes then wait as usual
        fd = os.open(path, os.O_WRONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
        os.set_blocking(fd, True)
    except OSError:
        return int(named)
    os.environ["CUDNN_DOCTOR_ANSWER_FD"] = str(fd)
    return fd
