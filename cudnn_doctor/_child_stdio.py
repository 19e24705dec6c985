"""Run at the start of every child script of the doctor (imported by _job_child.py, from its bytecode; run from its
own file by _deep_child.py and _allreduce_child.py): a library the user's environment preloads may close stdin, stdout or
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


_HELD: list = []  # the descriptors hold_descriptors opened: one gives way to a ProcessWatch's own, so the count stays


def hold_descriptors():
    """In a child that stands for a program started in the user's shell (CUDNN_DOCTOR_HOLD_FDS, limits.py): as many
    descriptors held below the open-files limit as that program holds before its first line (what its parent left
    open counts against the limit), /dev/null opened up to that count and kept (inheritable, as inherited ones are:
    what the framework starts, XLA's ptxas, holds them too); the answer channel takes the place of one of them. With
    ":stdin-closed" after the count, descriptor 0 is closed last, as the program's was (the first file it opens then
    gets 0). The variable is taken out of the environment: what this child starts holds them already."""
    wanted, _, stdin = os.environ.pop("CUDNN_DOCTOR_HOLD_FDS", "").partition(":")
    if not wanted or wanted.strip("0123456789") or len(wanted) > 6:
        return
    closing = stdin == "stdin-closed"  # the program's standard input was closed: ours is closed once the rest are held
    try:
        import resource

        soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    except (ImportError, OSError, ValueError):
        soft = -1
    try:
        names = os.listdir("/proc/self/fd")
    except OSError:
        return
    held = 0
    for name in names:
        if not name.isdigit() or (soft >= 0 and int(name) >= soft):
            continue
        try:
            os.fstat(int(name))  # the listing's own descriptor is closed by now
        except OSError:
            continue
        held += 1
    for _ in range(int(wanted) + closing - held):  # descriptor 0 is counted here, and closed after
        try:
            fd = os.open(os.devnull, os.O_RDONLY)
        except OSError:  # the limit is lower here than the count (a trial that lowered it): held as far as it goes
            break
        os.set_inheritable(fd, True)
        _HELD.append(fd)
    if closing:
        try:
            os.close(0)
        except OSError:
            pass
        setattr(sys, "stdin", None)  # noqa: B010 - as Python leaves it where descriptor 0 is closed at start


hold_descriptors()


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


# --- what a library loaded into this process changed in it -----------------------------------------------------------
# A library's constructor (or its first call: cuInit, nvmlInit) runs inside every program that loads it. What it does
# to that program is seen here, in the child, as the thing itself did it: the environment cleared or a variable of the
# user's taken away (every later getenv of the program fails: CUDA_VISIBLE_DEVICES, HOME, PATH), standard output or
# error pointed elsewhere (the program's output lost), a descriptor the program held closed (its files, pipes and
# sockets), a process limit lowered (ulimit -n 3: the program can open no file), the working folder or the umask
# changed, an alarm armed (SIGALRM ends the program), Ctrl-C and kill blocked or ignored, SIGCHLD ignored (its waits
# fail), the process pinned to fewer CPUs. Only what takes something from the program is said: a variable added, a
# limit raised, a CPU added is not.


def mapped_files():
    """Every file mapped into this process, once each, in the order of its first mapping (bytes-safe): _proc_maps.py,
    the one reader of /proc/self/maps, run once from its file beside this one (the script children import nothing of
    the doctor's folder; the job children's modules import it)."""
    if "mapped_files" not in _MAPS:
        path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_proc_maps.py")
        with open(path) as source:
            text = source.read()
        exec(compile(text, path, "exec"), _MAPS)
    return _MAPS["mapped_files"]()


_MAPS = {"__name__": "_proc_maps"}

_LIMITS = (("RLIMIT_NOFILE", "open files (ulimit -n)"), ("RLIMIT_AS", "address space (ulimit -v)"),
           ("RLIMIT_STACK", "stack (ulimit -s)"), ("RLIMIT_CPU", "CPU time (ulimit -t)"),
           ("RLIMIT_NPROC", "processes (ulimit -u)"), ("RLIMIT_DATA", "data (ulimit -d)"),
           ("RLIMIT_FSIZE", "file size (ulimit -f)"), ("RLIMIT_MEMLOCK", "locked memory (ulimit -l)"))
_STREAMS = ((0, "standard input"), (1, "standard output"), (2, "standard error"))


def _c_environ():
    """The environment as C's getenv reads it (NAME -> VALUE, bytes), or None where it cannot be read: a library may
    clear it (clearenv) or unset a variable without Python's os.environ knowing."""
    try:
        import ctypes

        pointer = ctypes.POINTER(ctypes.c_char_p).in_dll(ctypes.CDLL(None), "environ")
    except (ImportError, OSError, ValueError, AttributeError):
        return None
    found = {}
    if not pointer:
        return found
    for index in range(1 << 20):
        entry = pointer[index]
        if entry is None:
            break
        name, _, value = entry.partition(b"=")
        found.setdefault(name, value)
    return found


def _stream(fd):
    """(device, inode, access mode) of descriptor FD, None where it is closed."""
    try:
        status = os.fstat(fd)
    except OSError:
        return None
    try:
        import fcntl

        mode = fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_ACCMODE
    except (ImportError, OSError):
        mode = None
    return status.st_dev, status.st_ino, mode


def _limits():
    try:
        import resource
    except ImportError:
        return {}
    found = {}
    for name, _words in _LIMITS:
        if hasattr(resource, name):
            try:
                found[name] = resource.getrlimit(getattr(resource, name))
            except (OSError, ValueError):
                pass
    return found


def _process_state():
    state = {"streams": [_stream(fd) for fd, _words in _STREAMS], "limits": _limits(), "environ": _c_environ()}
    try:
        state["cwd"] = os.getcwd()
    except OSError:
        state["cwd"] = None
    try:
        mask = os.umask(0o22)
        os.umask(mask)
        state["umask"] = mask
    except OSError:
        state["umask"] = None
    try:
        import _signal as signal  # the C module: signal's own wrapper imports enum (2 ms of every probe child)

        state["alarm"] = signal.getitimer(signal.ITIMER_REAL)[0]
    except (ImportError, AttributeError, OSError):
        state["alarm"] = None
    state["blocked"], state["ignored"] = _signals()
    try:
        state["cpus"] = os.sched_getaffinity(0)
    except (AttributeError, OSError):
        state["cpus"] = None
    return state


# the signals whose loss stops a program: Ctrl-C, kill, a hang-up, its children's ends (a program that ignores
# SIGCHLD cannot wait for its children: subprocess fails with ECHILD)
_WATCHED_SIGNALS = ("SIGINT", "SIGTERM", "SIGHUP", "SIGCHLD")


def _signals():
    """(the watched signals this thread blocks, those the process ignores: /proc/self/status's SigIgn), None each
    where they cannot be read."""
    try:
        import _signal as signal  # the C module, as in _process_state: signal's wrapper imports enum

        numbers = {getattr(signal, name): name for name in _WATCHED_SIGNALS if hasattr(signal, name)}
        blocked = {numbers[number] for number in signal.pthread_sigmask(signal.SIG_BLOCK, []) if number in numbers}
    except (ImportError, AttributeError, OSError, ValueError):
        return None, None
    ignored = None
    try:
        with open("/proc/self/status", "rb") as status:
            for line in status:
                if line.startswith(b"SigIgn:"):
                    mask = int(line.split()[1], 16)
                    ignored = {name for number, name in numbers.items() if mask >> (int(number) - 1) & 1}
    except (OSError, ValueError, IndexError):
        pass
    return blocked, ignored


def _lower(before, after):
    """Whether the limit AFTER is below BEFORE (-1: unlimited)."""
    return before != after and (after != -1 and (before == -1 or after < before))


def _limit_text(value):
    return "unlimited" if value == -1 else str(value)


def _target(fd):
    try:
        return os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return "another file"


class ProcessWatch:
    """What the libraries loaded since this watch began took from this process. `check(STEP)` after each step (loading
    the library, its first call) says what changed since the start, each change once, as 'STEP: what': one list,
    `changes`. A descriptor held open from the start (one end of a pipe of its own: no other file shares its inode)
    tells a library that closes every descriptor it did not open, or opens another file on its number."""

    def __init__(self):
        self.changes = []
        self._said = set()
        self._sentinel = None
        # Windows: no constructor of a DLL reaches these (no LD_PRELOAD, no rlimits, no fcntl), and a descriptor
        # asked of the C runtime that a DLL closed ends the process (0xC0000409, seen under Wine): nothing is watched
        self._off = os.name == "nt"
        if self._off:
            return
        if _HELD:  # the watch's own descriptor takes the place of one held for the program: the count stays its
            os.close(_HELD.pop())
        try:
            read, write = os.pipe()
            os.close(write)
            status = os.fstat(read)
            self._sentinel = (read, status.st_dev, status.st_ino)
        except OSError:
            pass
        self._before = _process_state()

    def _sentinel_kept(self):
        if self._sentinel is None:
            return True
        try:
            status = os.fstat(self._sentinel[0])
        except OSError:
            return False
        return (status.st_dev, status.st_ino) == self._sentinel[1:]

    def _seen(self, after):
        before = self._before
        if not self._sentinel_kept():
            yield "descriptors", "closed descriptors it did not open (a program's own files, pipes and sockets)"
        for index, (fd, words) in enumerate(_STREAMS):
            was, now = before["streams"][index], after["streams"][index]
            if was is not None and now is None:
                yield f"stream {fd}", f"closed the program's {words}"
            elif was is not None and now[:2] != was[:2] and fd != 0:
                yield f"stream {fd}", f"pointed the program's {words} at {_target(fd)}"
            elif was is not None and fd != 0 and was[2] in (os.O_WRONLY, os.O_RDWR) and now[2] == os.O_RDONLY:
                yield f"stream {fd}", f"made the program's {words} unwritable"
        old_env, new_env = before["environ"], after["environ"]
        if old_env and new_env is not None:
            if not new_env:
                yield "environ", "cleared the environment (every variable the program reads, CUDA_VISIBLE_DEVICES " \
                                 "and PATH among them, is gone)"
            else:
                gone = sorted(name for name in old_env if name not in new_env)
                changed = sorted(name for name in old_env if name in new_env and new_env[name] != old_env[name])
                names = [os.fsdecode(name) for name in (gone + changed)[:5]]
                if gone or changed:
                    more = len(gone) + len(changed) - len(names)
                    yield "environ", "{} the program's variables {}{}".format(
                        "unset" if gone and not changed else "changed", ", ".join(names),
                        f" and {more} more" if more else "")
        for name, words in _LIMITS:
            was, now = before["limits"].get(name), after["limits"].get(name)
            if was is not None and now is not None and (_lower(was[0], now[0]) or _lower(was[1], now[1])):
                yield name, f"lowered the program's limit of {words} from {_limit_text(was[0])} to {_limit_text(now[0])}"
        if before["cwd"] is not None and after["cwd"] != before["cwd"]:
            yield "cwd", "changed the program's working folder to {}".format(after["cwd"] or "a folder that is gone")
        if before["umask"] is not None and after["umask"] is not None and after["umask"] & ~before["umask"]:
            yield "umask", "set the program's umask to {:04o} (the files it creates lose permissions)".format(
                after["umask"])
        if not before["alarm"] and after["alarm"]:
            yield "alarm", "armed an alarm: SIGALRM ends the program {:.0f} s later".format(after["alarm"])
        for key in ("blocked", "ignored"):
            gained = sorted(after[key] - before[key]) if before[key] is not None and after[key] is not None else []
            if gained:
                why = (["the program no longer stops on Ctrl-C, kill or a hang-up"] if set(gained) - {"SIGCHLD"}
                       else []) + (["its waits for its children fail"] if "SIGCHLD" in gained else [])
                yield key, "{} {} ({})".format(key, ", ".join(gained), "; ".join(why))
        if before["cpus"] and after["cpus"] is not None and len(after["cpus"]) < len(before["cpus"]):
            yield "cpus", "pinned the program to {} of its {} CPUs".format(len(after["cpus"]), len(before["cpus"]))

    def check(self, step):
        """What changed since the watch began and was not said yet, said as 'STEP: what; what'. A limit lowered is
        raised again where this process may: the child goes on to answer the rest (which file it mapped)."""
        if self._off:
            return self.changes
        after = _process_state()
        new = []
        for key, words in self._seen(after):
            if key not in self._said:
                self._said.add(key)
                new.append(words)
        if new:
            self.changes.append("{}: {}".format(step, "; ".join(new)))
        self._restore_limits(after["limits"])
        return self.changes

    def _restore_limits(self, now):
        try:
            import resource
        except ImportError:
            return
        for name, was in self._before["limits"].items():
            if now.get(name, was) == was:
                continue
            hard = now[name][1]  # a hard limit lowered stays lowered where this process may not raise it
            soft = was[0] if hard == -1 or (was[0] != -1 and was[0] <= hard) else hard
            for wanted in (was, (soft, hard)):
                try:
                    resource.setrlimit(getattr(resource, name), wanted)
                    break
                except (OSError, ValueError):
                    continue
