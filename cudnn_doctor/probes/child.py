"""Start `_probe_child.py` processes side by side and collect their JSON answers."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from cudnn_doctor.model import LibraryProbe

CHILD = str(Path(__file__).resolve().parents[1] / "_probe_child.py")
DEFAULT_TIMEOUT_S = 20.0


def probe_timeout() -> float:
    """Seconds one child may take; CUDNN_DOCTOR_PROBE_TIMEOUT overrides."""
    try:
        return float(os.environ.get("CUDNN_DOCTOR_PROBE_TIMEOUT", DEFAULT_TIMEOUT_S))
    except ValueError:
        return DEFAULT_TIMEOUT_S


@dataclass(frozen=True)
class Job:
    kind: str  # a job name of _probe_child.py
    target: str  # a path, a soname or a library name
    needs_site_packages: bool = False


class ProbeBatch:
    """Children started now, answers collected later: probing overlaps with other work."""

    def __init__(self, jobs: list[Job], timeout: float | None = None) -> None:
        self.jobs = list(jobs)
        self.timeout = probe_timeout() if timeout is None else timeout
        self.started = time.monotonic()
        self._processes = [self._start(job) for job in self.jobs]

    @staticmethod
    def _start(job: Job) -> subprocess.Popen[bytes] | OSError:
        # -I: ignore PYTHONPATH and the user's site; -S: no site processing (a big environment's
        # .pth files cost a child hundreds of milliseconds). The NVML job is told where pynvml is.
        extra = [_module_folder("pynvml")] if job.kind == "nvml" else []
        try:
            return subprocess.Popen(
                [sys.executable, "-I", "-S", CHILD, job.kind, job.target, *filter(None, extra)],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,
            )
        except OSError as error:
            return error

    def results(self) -> dict[Job, LibraryProbe]:
        answers: dict[Job, LibraryProbe] = {}
        for job, process in zip(self.jobs, self._processes, strict=True):
            answers[job] = self._collect(job, process)
        return answers

    def _collect(self, job: Job, process: subprocess.Popen[bytes] | OSError) -> LibraryProbe:
        if isinstance(process, OSError):
            return LibraryProbe(job.target, loaded=False, error=f"could not start the probe: {process}")
        remaining = max(0.1, self.timeout - (time.monotonic() - self.started))
        try:
            out, err = process.communicate(timeout=remaining)
        except subprocess.TimeoutExpired:
            _kill(process)
            return LibraryProbe(
                job.target, loaded=False, timed_out=True,
                error=f"did not answer within {self.timeout:g} s (it hangs while loading or in its first call)",
            )
        if process.returncode != 0:
            how = _describe_exit(process.returncode)
            detail = err.decode(errors="replace").strip().splitlines()
            tail = f" ({detail[-1]})" if detail else ""
            return LibraryProbe(job.target, loaded=False, crashed=True, error=f"{how}{tail}")
        try:
            answer = json.loads(out.decode(errors="replace"))
        except ValueError:
            return LibraryProbe(job.target, loaded=False, crashed=True, error="the probe answered garbage")
        return LibraryProbe(
            job.target,
            loaded=bool(answer.get("loaded")),
            error=answer.get("error"),
            values=answer.get("values") or {},
        )


def _module_folder(name: str) -> str | None:
    """The sys.path entry that holds module NAME, found without importing it."""
    import importlib.util

    spec = importlib.util.find_spec(name)
    if spec is None or spec.origin is None:
        return None
    return str(Path(spec.origin).parent)


def _kill(process: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except OSError:
        process.kill()
    process.communicate()


def _describe_exit(returncode: int) -> str:
    if returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = f"signal {-returncode}"
        return f"crashed with {name}"
    return f"exited with status {returncode}"


def run_jobs(jobs: list[Job], timeout: float | None = None) -> dict[Job, LibraryProbe]:
    """Run JOBS side by side; every job gets an answer, crash and timeout included."""
    return ProbeBatch(jobs, timeout).results()
