"""Programs run by the real JAX 0.4.38 (CPU) as `python -c CODE` runs them, each a process of its own, most of them
forked from one Python per pytest worker that has imported what `import jax` spends most of its time on: jaxlib's
extension (a 280 MB library), NumPy and ml_dtypes, about 0.7 of its 1.2 CPU s, and far more of its wall on a loaded
machine. Not jax itself: jax reads its options (JAX_*) from the environment as jax/_src/config.py defines them, at its
import; jaxlib reads XLA_PYTHON_CLIENT_* and XLA_CLIENT_MEM_FRACTION when a GPU client's options are made
(xla_client.py's functions, called when the backends start), and XLA's C++ reads XLA_FLAGS (and a dump's
TEST_UNDECLARED_OUTPUTS_DIR) at the first compilation, not as the library loads; so a child forked before
`import jax`, its environment set first, is what a program started with that environment gets. A variable of any
other name (LD_*, PYTHON*, CUDA_*, TF_CPP_*, which the extension reads as it loads), another PYTHONPATH, or
CUDNN_DOCTOR_TEST_SUBPROCESS=1 gets a new Python instead, as before. tests/test_suite_infrastructure.py proves that
the forking Python's imports read none of these names and that forked and new answer alike on refused and taken
values."""

from __future__ import annotations

import json
import os
import re
import select
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from tests.real_wheels import real_jax_cpu

BASE_PATH = "/usr/bin:/bin"
# read by jax's own Python at its import (config.py), by jaxlib's when the backends start, or by XLA at the first
# compilation: never by what the forking Python imported (tests/test_suite_infrastructure.py asks its os.environ and
# its getenv what that import read)
FORKED_VARIABLES = re.compile(r"JAX_[A-Z0-9_]*|XLA_PYTHON_CLIENT_[A-Z0-9_]*|XLA_CLIENT_MEM_FRACTION|XLA_FLAGS"
                              r"|TEST_UNDECLARED_OUTPUTS_DIR")
PRELOADED = ("numpy", "ml_dtypes", "jaxlib.xla_client")

# The forking Python: imports PRELOADED, then for each request line (JSON: env, code, cwd, out, err) forks a child
# that takes the request's environment and folder, writes its standard output and error to the request's files, and
# runs CODE as `python -c` does (in a new __main__, sys.argv ['-c'], an uncaught exception printed and exit 1,
# SystemExit's code, atexit's functions and the other threads at the end); it answers {"pid"} once the child is
# started and {"status"} (os.waitstatus_to_exitcode) once it has ended.
SERVER = r"""
import atexit, builtins, json, os, sys, threading, types
for name in sys.argv[1:]:
    __import__(name)
answers = os.fdopen(os.dup(1), "w")
for line in sys.stdin:
    request = json.loads(line)
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        answers.close()  # the worker's answers are the forking Python's alone
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.close(null)
        for fd, path in ((1, request["out"]), (2, request["err"])):
            file = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            os.dup2(file, fd)
            os.close(file)
        os.environ.clear()
        os.environ.update(request["env"])
        os.chdir(request["cwd"])
        sys.argv = ["-c"]
        main = types.ModuleType("__main__")
        main.__builtins__ = builtins
        sys.modules["__main__"] = main
        status = 0
        try:
            exec(compile(request["code"], "<string>", "exec"), main.__dict__)
        except SystemExit as end:
            if end.code is None:
                status = 0
            elif isinstance(end.code, int):
                status = end.code & 0xFF
            else:
                print(end.code, file=sys.stderr)
                status = 1
        except BaseException:
            sys.excepthook(*sys.exc_info())
            status = 1
        try:
            threading._shutdown()
            atexit._run_exitfuncs()
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(status)
    answers.write(json.dumps({"pid": pid}) + "\n")
    answers.flush()
    _, status = os.waitpid(pid, 0)
    answers.write(json.dumps({"status": os.waitstatus_to_exitcode(status)}) + "\n")
    answers.flush()
"""


class ForkingPython:
    """The forking Python of this pytest worker, started at its first program and ended with the worker."""

    def __init__(self, base_env: dict[str, str]) -> None:
        self.base_env = base_env
        self.said = tempfile.TemporaryFile()  # its own standard error: why it ended, where it did
        self.process = subprocess.Popen([sys.executable, "-c", SERVER, *PRELOADED], stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, stderr=self.said, env=base_env)
        self.lock = threading.Lock()
        self.pending = b""  # what it answered past the last whole line read

    def run(self, env: dict[str, str], code: str, timeout: float) -> subprocess.CompletedProcess[str]:
        with self.lock, tempfile.TemporaryDirectory(prefix="jax-program-") as folder:
            out, err = Path(folder) / "out", Path(folder) / "err"
            request = {"env": env, "code": code, "cwd": os.getcwd(), "out": str(out), "err": str(err)}
            assert self.process.stdin is not None
            self.process.stdin.write(json.dumps(request).encode() + b"\n")
            self.process.stdin.flush()
            pid = self._answer(time.monotonic() + 60)["pid"]
            try:
                status = self._answer(time.monotonic() + timeout)["status"]
            except subprocess.TimeoutExpired:
                os.kill(pid, signal.SIGKILL)
                self._answer(time.monotonic() + 60)
                raise subprocess.TimeoutExpired(["python", "-c", code], timeout) from None
            return subprocess.CompletedProcess([sys.executable, "-c", code], status,
                                               out.read_text(errors="replace"), err.read_text(errors="replace"))

    def _answer(self, deadline: float) -> dict:
        """Its next answer line, read from the pipe's descriptor itself (a buffered reader may hold a second line
        that select() then never reports)."""
        assert self.process.stdout is not None
        fd = self.process.stdout.fileno()
        while b"\n" not in self.pending:
            ready, _, _ = select.select([fd], [], [], max(0.0, deadline - time.monotonic()))
            if not ready:
                raise subprocess.TimeoutExpired(["python", "-c", "SERVER"], deadline)
            chunk = os.read(fd, 65536)
            if not chunk:
                self.said.seek(0)
                raise RuntimeError(f"the forking Python ended (exit {self.process.wait()}): "
                                   f"{self.said.read()[-2000:].decode(errors='replace')}")
            self.pending += chunk
        line, self.pending = self.pending.split(b"\n", 1)
        return json.loads(line)

    def close(self) -> None:
        if self.process.stdin is not None:
            self.process.stdin.close()
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.said.close()


_FORKING: ForkingPython | None = None


def forking_python() -> ForkingPython:
    global _FORKING
    if _FORKING is None:
        import atexit

        _FORKING = ForkingPython({"PATH": BASE_PATH, "PYTHONPATH": str(real_jax_cpu())})
        atexit.register(_FORKING.close)
    return _FORKING


def forks(env: dict[str, str]) -> bool:
    """Whether a program with ENV is forked (else a new Python runs it)."""
    from tests.conftest import every_run_in_a_process

    base = {"PATH": BASE_PATH, "PYTHONPATH": str(real_jax_cpu())}
    return (not every_run_in_a_process() and all(env.get(name) == value for name, value in base.items())
            and all(name in base or FORKED_VARIABLES.fullmatch(name) for name in env))


def run_jax_program(env: dict[str, str], code: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """CODE run as `python -c CODE` with ENV as its whole environment (PATH and PYTHONPATH the real JAX's folder
    among it): forked from this worker's forking Python where ENV allows (module docstring), else a new Python."""
    if forks(env):
        return forking_python().run(env, code, timeout)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=timeout)
