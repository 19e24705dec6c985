"""The archive of `install --from FILE`, decompressed from the command's first instant.

An install is as long as its decompression: `xz -dc` of NVIDIA's single-threaded archives runs at
~190 MB/s, and everything the command does before its staging begins (the interpreter's start, typer,
the install's modules, the probe of the prefix: ~0.1 s on a 2-core machine) used to come before it.
The `cudnn-doctor` command (entry.py) starts the decompressor here, before those imports, and a thread
keeps its output (at most AHEAD bytes, then the decompressor waits on its pipe) until the staging takes
the stream over (`take`, from install/archive.py): the stream is the one the staging would have started
only where it is the very same file (device, inode, size, modification time) and program; otherwise it
is stopped unread. Nothing here decides anything: a wrong guess costs one decompressor, never a byte of
the install. A stream nobody takes is stopped at exit (atexit; a signal unwinds to it too).
"""

from __future__ import annotations

import atexit
import collections
import os
import subprocess
import threading

# the decompressor programs `tar -xf` runs beside itself, by the stream's first bytes
PROGRAMS = ((b"\xfd7zXZ\x00", "xz"), (b"\x1f\x8b", "gzip"), (b"BZh", "bzip2"))
CHUNK = 1 << 20
AHEAD = 64 << 20  # bytes kept before the staging takes over: ~0.35 s of xz, far more than the start costs
HELP = ("--help", "-h")

_started: list[EarlyStream] = []


class EarlyStream:
    """PROGRAM -dc of the open file FD, its output read ahead by a thread."""

    def __init__(self, fd: int, program: str) -> None:
        self.fd, self.program = fd, program
        self.identity = _identity(os.fstat(fd))
        self.process = subprocess.Popen([program, "-dc"], stdin=fd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                        start_new_session=True)  # as install/archive.py starts its own
        assert self.process.stdout is not None
        widen_pipe(self.process.stdout.fileno())
        self.chunks: collections.deque[bytes] = collections.deque()
        self._buffered = 0
        self._handed = False  # the staging took it, or it was stopped: the thread reads no more
        self._space = threading.Condition()
        self._reading = threading.Lock()  # held for each read of the pipe
        self._thread = threading.Thread(target=self._read_ahead, name="early-archive", daemon=True)
        self._thread.start()

    def _read_ahead(self) -> None:
        assert self.process.stdout is not None
        pipe = self.process.stdout.fileno()
        while True:
            with self._space:
                while self._buffered >= AHEAD and not self._handed:
                    self._space.wait()
                if self._handed:
                    return
            with self._reading:
                if self._handed:
                    return
                try:
                    data = os.read(pipe, CHUNK)
                except OSError:
                    return
            if not data:
                return  # the end: the staging's own read sees it, and the program's status
            with self._space:
                self.chunks.append(data)
                self._buffered += len(data)

    def hand_over(self) -> collections.deque[bytes]:
        """Stop reading ahead (a read in flight ends first) and give what was read, in order; the pipe is
        the caller's from here on."""
        with self._space:
            self._handed = True
            self._space.notify_all()
        with self._reading:
            pass
        self._thread.join()
        return self.chunks

    def stop(self) -> None:
        """Kill the program and let everything go."""
        with self._space:
            self._handed = True
            self._space.notify_all()
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()
        self._thread.join()
        for pipe in (self.process.stdout, self.process.stderr):
            if pipe is not None:
                pipe.close()
        try:
            os.close(self.fd)
        except OSError:
            pass
        self.chunks.clear()


def start(argv: list[str]) -> None:
    """Start decompressing when ARGV (sys.argv[1:]) installs from a local compressed tar archive."""
    path = _archive_argument(argv)
    if path is None:
        return
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)  # a FIFO must not block the start
    except OSError:
        return
    try:
        import stat

        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError("not a regular file")
        os.set_blocking(fd, True)
        program = program_for(os.pread(fd, 6, 0))
        if program is None:
            raise OSError("not compressed")
        _started.append(EarlyStream(fd, program))
    except OSError:
        os.close(fd)


def program_for(head: bytes) -> str | None:
    """The decompressor program on PATH for a stream that begins with HEAD, if any."""
    import shutil

    name = next((name for magic, name in PROGRAMS if head.startswith(magic)), None)
    return shutil.which(name) if name else None


def take(fd: int, program: str) -> EarlyStream | None:
    """The stream started early, when it decompresses the same file (FD, opened by the staging) with the
    same PROGRAM; any other early stream is stopped."""
    if not _started:
        return None
    stream = _started.pop()
    try:
        same = stream.identity == _identity(os.fstat(fd)) and stream.program == program
    except OSError:
        same = False
    if same:
        return stream
    stream.stop()
    return None


def widen_pipe(descriptor: int) -> None:
    """Let the decompressor run a chunk ahead: with the default 64 KiB pipe, xz stops while this process
    checks, hashes and writes each chunk, and the two take turns instead of running side by side. 1 MiB
    is what an unprivileged process may ask for (/proc/sys/fs/pipe-max-size); where it may not, the
    pipe stays as it is."""
    import fcntl

    try:
        fcntl.fcntl(descriptor, getattr(fcntl, "F_SETPIPE_SZ", 1031), CHUNK)
    except OSError:
        pass


def _archive_argument(argv: list[str]) -> str | None:
    """The local file `install --from` names, if ARGV is an install's (no help asked) and names one."""
    from cudnn_doctor.probes.early import command_of  # imported already: entry.py starts NVML's child first

    if command_of(argv) != "install" or any(arg in HELP for arg in argv):
        return None
    value = None
    for index, arg in enumerate(argv):
        if arg == "--from" and index + 1 < len(argv):
            value = argv[index + 1]
        elif arg.startswith("--from="):
            value = arg.split("=", 1)[1]
    if not value or "://" in value:
        return None
    return os.path.abspath(os.path.expanduser(value))  # as install/sources.py reads --from


def _identity(status: os.stat_result) -> tuple[int, int, int, int]:
    return status.st_dev, status.st_ino, status.st_size, status.st_mtime_ns


@atexit.register
def _stop_unused() -> None:
    while _started:
        _started.pop().stop()
