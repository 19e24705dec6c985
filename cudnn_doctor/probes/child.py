"""Ask `_probe_child.py` about vendor libraries, side by side, through the one child runner."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from cudnn_doctor.child import ChildAnswer, ChildBatch, ChildRequest, python_argv, timeout_from_env
from cudnn_doctor.model import LibraryProbe

CHILD = str(Path(__file__).resolve().parents[1] / "_probe_child.py")
DEFAULT_TIMEOUT_S = 20.0


def probe_timeout() -> float:
    """Seconds one child may take; CUDNN_DOCTOR_PROBE_TIMEOUT overrides."""
    return timeout_from_env("CUDNN_DOCTOR_PROBE_TIMEOUT", DEFAULT_TIMEOUT_S)


@dataclass(frozen=True)
class Job:
    kind: str  # a job name of _probe_child.py
    target: str  # a path, a soname or a library name


class ProbeBatch:
    """Children started now, answers collected later: probing overlaps with other work."""

    def __init__(self, jobs: list[Job], timeout: float | None = None, env: Mapping[str, str] | None = None) -> None:
        self.jobs = list(jobs)
        self.timeout = probe_timeout() if timeout is None else timeout
        child_env = _child_environment(os.environ if env is None else env)
        requests = [ChildRequest(_argv(job), child_env, self.timeout, "the probe") for job in self.jobs]
        self._batch = ChildBatch(requests)

    def results(self) -> dict[Job, LibraryProbe]:
        answers = self._batch.answers()
        return {job: _library_probe(job, answer, self.timeout) for job, answer in zip(self.jobs, answers, strict=True)}


def _argv(job: Job) -> tuple[str, ...]:
    # The child runs from "/": a relative path would be read from there, so it is made absolute here.
    target = os.path.abspath(job.target) if os.sep in job.target else job.target
    extra = [folder] if job.kind == "nvml" and (folder := _module_folder("pynvml")) else []
    return python_argv(CHILD, job.kind, target, *extra)


def _child_environment(env: Mapping[str, str]) -> dict[str, str]:
    """ENV with LD_LIBRARY_PATH's relative folders made absolute: the child runs from "/", and the loader
    must search the same folders it would search for a program started here."""
    child = dict(env)
    value = child.get("LD_LIBRARY_PATH")
    if value:
        child["LD_LIBRARY_PATH"] = os.pathsep.join(os.path.abspath(p) if p else p for p in value.split(os.pathsep))
    return child


def _library_probe(job: Job, answer: ChildAnswer, timeout: float) -> LibraryProbe:
    if answer.timed_out:
        why = answer.error if answer.error and answer.error.startswith("not started") else \
            f"did not answer within {timeout:g} s (it hangs while loading or in its first call)"
        return LibraryProbe(job.target, loaded=False, timed_out=True, error=why)
    if answer.crashed:
        return LibraryProbe(job.target, loaded=False, crashed=True, error=answer.error)
    if answer.error is not None:  # it could not be started
        return LibraryProbe(job.target, loaded=False, error=answer.error)
    values = answer.values
    if values is None:
        return LibraryProbe(job.target, loaded=False, crashed=True, error="the probe answered garbage")
    error = values.get("error")
    found = values.get("values")
    return LibraryProbe(
        job.target,
        loaded=bool(values.get("loaded")),
        error=error if isinstance(error, str) else None,
        values=found if isinstance(found, dict) else {},
    )


def _module_folder(name: str) -> str | None:
    """The sys.path entry that holds module NAME, found without importing it."""
    import importlib.util

    spec = importlib.util.find_spec(name)
    if spec is None or spec.origin is None:
        return None
    return str(Path(spec.origin).parent)


def run_jobs(jobs: list[Job], timeout: float | None = None) -> dict[Job, LibraryProbe]:
    """Run JOBS side by side; every job gets an answer, crash and timeout included."""
    return ProbeBatch(jobs, timeout).results()
