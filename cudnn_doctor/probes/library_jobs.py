"""Ask `_job_child.py _probe_jobs` about vendor libraries, side by side, through the one child runner."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from cudnn_doctor import json_values
from cudnn_doctor.child import (
    ChildAnswer,
    ChildBatch,
    ChildRequest,
    file_names,
    job_child_argv,
    make_answer,
    parallel_limit,
    timeout_from_env,
)
from cudnn_doctor.records import record

if TYPE_CHECKING:  # the model's records are not needed: not before NVML's child has started
    from cudnn_doctor.model import LibraryProbe

JOBS = "_probe_jobs"  # the job child's module of jobs for these questions (child.JOB_CHILD)
DEFAULT_TIMEOUT_S = 20.0


def probe_timeout() -> float:
    """Seconds one child may take; CUDNN_DOCTOR_PROBE_TIMEOUT overrides."""
    return timeout_from_env("CUDNN_DOCTOR_PROBE_TIMEOUT", DEFAULT_TIMEOUT_S)


@record(frozen=True)
class Job:
    """One question for the probe jobs (_probe_jobs.py): a job kind and its target."""

    kind: str  # a job name of _probe_jobs.py
    target: str  # a path, a soname or a library name


NVML_SONAME = "libnvidia-ml.so.1"
NVML_JOB = Job("nvml", "-")  # pynvml opens NVML_SONAME itself, as any program would
LIBCUDA_JOB = Job("libcuda", "libcuda.so.1")


BATCHED_KINDS = ("cudnn", "cudart")  # the jobs a machine may have hundreds of
BATCH_SIZE = 32  # libraries per batch child at most
MIN_BATCH_SIZE = 8  # and at least, where there are that many: each batch child saves the start of 7 Pythons
IN_FLIGHT = 4  # libraries a batch child probes at once
BATCH_GRACE_S = 5.0


class ProbeBatch:
    """Children started now, answers collected later: probing overlaps with other work.

    Each library is loaded in a process of its own. Two or more libraries of a kind go in a batch: one child
    (Python starts once), which forks one process per library, each with its own deadline and only its own pipes
    open. Where they are no more than children may run at once (a check's two or three copies of cuDNN), one batch
    child forks them all at once, as that many children would have run; a Python start each was ~10 ms of CPU
    (the interpreter, ctypes, the jobs). Where there are more (600 copies of cuDNN), IN_FLIGHT at a time per batch
    child, and at most parallel_limit() / IN_FLIGHT batch children run at once, so no more libraries are loaded at
    once than parallel_limit() children."""

    def __init__(self, jobs: list[Job], timeout: float | None = None, env: Mapping[str, str] | None = None) -> None:
        self.jobs = list(jobs)
        self.timeout = probe_timeout() if timeout is None else timeout
        self._groups, self.requests, parallel = _plan(self.jobs, self.timeout, os.environ if env is None else env)
        self._batch = ChildBatch(self.requests, parallel=parallel)

    def stop(self) -> None:
        """Kill its children now, unread."""
        self._batch.stop()

    def results(self) -> dict[Job, LibraryProbe]:
        answers = self._batch.answers()
        found: dict[Job, LibraryProbe] = {}
        for group, answer in zip(self._groups, answers, strict=True):
            each = [answer] if len(group) == 1 else _batch_answers(answer, len(group), self.timeout)
            for index, one in zip(group, each, strict=True):
                found[self.jobs[index]] = _library_probe(self.jobs[index], one, self.timeout)
        return found


def _plan(jobs: list[Job], timeout: float, env: Mapping[str, str]) -> tuple[list[list[int]], list[ChildRequest], int]:
    """The job indices of each child, each child's request, and how many children run at once."""
    child_env = dict(env)  # the runner makes the working folder's relative paths absolute (child.started_environment)
    parallel = parallel_limit()
    planned = _groups(jobs, parallel)
    requests = []
    for group, in_flight in planned:
        if len(group) == 1:
            requests.append(ChildRequest(_argv(jobs[group[0]]), child_env, timeout, "the probe", answer_channel=True))
        else:
            targets = [_target(jobs[index]) for index in group]
            rounds = -(-len(group) // in_flight)
            kinds = [jobs[index].kind for index in group]  # one for all, or one per target
            kind = kinds[0] if len(set(kinds)) == 1 else ",".join(kinds)
            argv = job_child_argv(JOBS, "batch", kind, f"{timeout:g}", str(in_flight), *targets)
            requests.append(ChildRequest(argv, child_env, timeout * rounds + BATCH_GRACE_S, "the probe",
                                         answer_channel=True))
    many = any(len(group) > in_flight for group, in_flight in planned)  # batches that run their libraries in turns
    # with batches of many, IN_FLIGHT libraries per batch child: no more library processes at once than before
    return [group for group, _ in planned], requests, max(1, parallel // IN_FLIGHT) if many else parallel


def _groups(jobs: list[Job], parallel: int) -> list[tuple[list[int], int]]:
    """Job indices per child, with how many of them its batch runs at once: one child each for a job that is not of
    a batched kind, or where nothing forks; the jobs of the batched kinds together (each toolkit's libcudart, each
    cuDNN), where they are two or more and no more than PARALLEL, in one batch, all at once; a kind of one job alone;
    a kind of more than PARALLEL in batches, IN_FLIGHT at once each."""
    groups: list[tuple[list[int], int]] = []
    by_kind: dict[str, list[int]] = {}
    for index, job in enumerate(jobs):
        by_kind.setdefault(job.kind if job.kind in BATCHED_KINDS else f"single-{index}", []).append(index)
    batched = sorted(index for kind in BATCHED_KINDS for index in by_kind.get(kind, ()))
    together = hasattr(os, "fork") and 2 <= len(batched) <= parallel  # a batch forks
    for kind, indices in by_kind.items():
        if together and kind in BATCHED_KINDS:
            if indices[0] == batched[0]:  # once, where the first of them stands
                groups.append((batched, len(batched)))
        elif kind not in BATCHED_KINDS or len(indices) == 1 or not hasattr(os, "fork"):
            groups += [([index], 1) for index in indices]
        elif len(indices) <= parallel:
            groups.append((indices, len(indices)))
        else:
            slots = max(1, parallel // IN_FLIGHT)
            size = min(BATCH_SIZE, max(MIN_BATCH_SIZE, -(-len(indices) // slots)))
            groups += [(indices[start:start + size], IN_FLIGHT) for start in range(0, len(indices), size)]
    return groups


def _batch_answers(answer: ChildAnswer, count: int, timeout: float) -> list[ChildAnswer]:
    """The answer of each library of a batch child, from its lines; where a line is missing (the batch
    child crashed or was stopped), the batch's own error."""
    lines: dict[int, dict[str, Any]] = {}
    for text in answer.answer.splitlines():
        try:
            value = json_values.loads(text)
        except (ValueError, RecursionError):
            continue
        if isinstance(value, dict) and isinstance(value.get("index"), int) and 0 <= value["index"] < count:
            lines[value["index"]] = file_names(value)
    request = ChildRequest((), timeout=timeout, what="the probe")
    each = []
    for index in range(count):
        line = lines.get(index)
        if line is None:
            each.append(ChildAnswer(None, answer.error or "the batch of probes ended without an answer for it",
                                    crashed=answer.crashed or not answer.timed_out, timed_out=answer.timed_out,
                                    wall_ms=answer.wall_ms, exit_code=answer.exit_code))
            continue
        code = line.get("exit")
        each.append(make_answer(request, code if isinstance(code, int) else None,
                                str(line.get("stdout", "")).encode("utf-8", "surrogateescape"),
                                str(line.get("stderr", "")).encode("utf-8", "surrogateescape"),
                                float(line.get("wall_ms", 0.0)), bool(line.get("timed_out")), stopped=False,
                                answer=str(line.get("answer", "")).encode("utf-8", "surrogateescape")))
    return each


def _target(job: Job) -> str:
    # The child runs from "/": a relative path would be read from there, so it is made absolute here.
    return os.path.abspath(job.target) if os.sep in job.target else job.target


def _argv(job: Job) -> tuple[str, ...]:
    target = _target(job)
    extra = [folder] if job.kind == "nvml" and (folder := _module_folder("pynvml")) else []
    return job_child_argv(JOBS, job.kind, target, *extra)


def _library_probe(job: Job, answer: ChildAnswer, timeout: float) -> LibraryProbe:
    from cudnn_doctor.model import HANGS, LibraryProbe

    if answer.timed_out:
        why = answer.error if answer.error and answer.error.startswith("not started") else \
            f"did not answer within {timeout:g} s {HANGS}"
        return LibraryProbe(job.target, loaded=False, timed_out=True, error=why)
    if answer.crashed:
        return LibraryProbe(job.target, loaded=False, crashed=True, error=answer.error)
    if answer.error is not None:  # it could not be started
        return LibraryProbe(job.target, loaded=False, error=answer.error)
    values = answer.values
    if values is None:  # exit status 0, and no answer: the library ended the process (exit() in its code)
        said = answer.answer.strip()
        return LibraryProbe(job.target, loaded=False, crashed=True,
                            error=f"the probe answered garbage ({said[:80]!r})" if said else
                            "exited (status 0) before it answered: the library ended the process")
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
    return os.path.dirname(spec.origin)


def run_jobs(jobs: list[Job], timeout: float | None = None,
             env: Mapping[str, str] | None = None) -> dict[Job, LibraryProbe]:
    """Run JOBS side by side, each child with ENV (this process's by default); every job gets an answer, crash
    and timeout included."""
    return ProbeBatch(jobs, timeout, env).results()


def changed_process(values: Mapping[str, Any]) -> tuple[str, ...]:
    """What the library a child loaded took from that child's process (`changed_process`: each 'STEP: what', from
    _child_stdio's ProcessWatch): a program that loads it loses the same. Strings only, at most twenty."""
    said = values.get("changed_process")
    if not isinstance(said, list):
        return ()
    return tuple(item for item in said if isinstance(item, str))[:20]
