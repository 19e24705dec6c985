"""The frameworks' Python asked, one start per interpreter (issue 45): plain check asks the Python that owns a
framework's site-packages about its start-up (probes/python_start.py), what it finds (probes/python_finder.py) and
numpy's CPU kernels (probes/cpu_kernels.py). Each question's module keeps its gate (a child starts only where
something it reads can matter) and says what its part of the request is and what the answers mean; this module
alone starts the children: ONE per interpreter, asking every question that wants it in one start
(_python_child.py), and, where a question's answer failed, one batch of trials (each variable unset alone, every
question that wants that trial asked in the same start). A Python start costs tens of milliseconds: three questions
open were three starts, they are one (benchmarks/python_children.py).

The answer is read by one parser (read_answer) into plain data (PythonAnswer): a line of JSON per question on the
runner's answer channel, bounded (MAX_ANSWER_BYTES); garbage, a child killed half-way, one that hangs (cut at the
timeout) or one that says too much leave the questions it did not answer unanswered, never an exception."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import field
from typing import Any, Protocol

from cudnn_doctor import json_values
from cudnn_doctor.child import PROGRAM_BOOT, ChildAnswer, ChildBatch, ChildRequest, deadline_in, file_names
from cudnn_doctor.records import record

CHILD = os.path.join(os.path.dirname(os.path.dirname(os.path.realpath(__file__))), "_python_child.py")
# python -c BOOT CHILD REQUEST: CHILD run as the program `python -c` would be ("" first on sys.path, not CHILD's own
# folder: _python_child.py puts sys.path back once it has imported what it needs, which PYTHONPATH's folders cannot
# shadow meanwhile: child.PROGRAM_BOOT)
BOOT = PROGRAM_BOOT
TIMEOUT_S = 10.0
MAX_ANSWER_BYTES = 1 << 20  # a finder's answer is some kilobytes; more than this is not an answer of ours
MAX_SAID_LINES = 64  # the first lines of each child's stderr kept (numpy's words)


@record
class PythonAnswer:
    """What one start of a framework's Python said (read_answer): each question's answer, empty where it was not
    asked or not answered; `said` the first lines of its stderr; `child` how it ended."""

    child: ChildAnswer
    started: bool = False  # its program's first line ran
    mapped: tuple[str, ...] = ()  # the GPU libraries mapped at that line
    resolved: tuple[tuple[str, str], ...] = ()  # (name, the file `import NAME` finds: '' a namespace portion, '-' none)
    own_sites: tuple[str, ...] = ()  # the site-packages folders it calls its own
    finder: dict[str, Any] = field(default_factory=dict)  # python_finder's answer: groups, modules, path, stdlib
    numpy_worked: bool = False  # numpy imported and its product ran
    said: tuple[str, ...] = ()
    # torch's own NVML-based count of the GPUs CUDA_VISIBLE_DEVICES selects, and its parse of the value (at most 16
    # entries); None where not asked or not answered (probes/visible_devices.py)
    torch_visible: tuple[int, tuple[str, ...]] | None = None


class Question(Protocol):
    """One question asked of the frameworks' Python: the interpreters it asks (none where its gate is shut), its part
    of each one's request, and the trials it wants once the answers are in (a variable unset alone)."""

    pythons: list[str]

    def request(self, python: str) -> dict[str, object]: ...

    def trials(self, answers: Mapping[str, PythonAnswer]) -> list[tuple[str, str]]: ...

    def trial_request(self) -> dict[str, object]: ...


class PythonChildren:
    """The children, started now (one per interpreter that a question asks); answers() and trials() read them."""

    def __init__(self, env: Mapping[str, str], questions: Sequence[Question], timeout: float = TIMEOUT_S) -> None:
        self.env = dict(env)
        self.questions = list(questions)
        self.timeout = timeout
        requests: dict[str, dict[str, object]] = {}
        for question in self.questions:
            for python in question.pythons:
                requests.setdefault(python, {}).update(question.request(python))
        self.pythons = list(requests)
        self._first = _Started([(python, self.env, requests[python]) for python in self.pythons], timeout)
        self._answers: dict[str, PythonAnswer] | None = None
        self._trials: dict[tuple[str, str], PythonAnswer] | None = None

    def answers(self) -> dict[str, PythonAnswer]:
        """Each interpreter's answer, by interpreter (waits for the children)."""
        if self._answers is None:
            self._answers = dict(zip(self.pythons, self._first.answers(), strict=True))
        return self._answers

    def trials(self) -> dict[tuple[str, str], PythonAnswer]:
        """(python, variable) -> its answer with that variable unset alone, for every trial a question wants after
        the first answers: one batch, one start per (python, variable) whatever asks it; none where nothing failed."""
        if self._trials is None:
            answers = self.answers()
            requests: dict[tuple[str, str], dict[str, object]] = {}
            for question in self.questions:
                for trial in question.trials(answers):
                    requests.setdefault(trial, {}).update(question.trial_request())
            keys = list(requests)
            runs = [(python, {k: v for k, v in self.env.items() if k != name}, requests[(python, name)])
                    for python, name in keys]
            self._trials = dict(zip(keys, _Started(runs, self.timeout).answers(), strict=True)) if runs else {}
        return self._trials


class _Started:
    """One batch of children of _python_child.py, started now: (python, its environment, its request) each."""

    def __init__(self, runs: list[tuple[str, dict[str, str], dict[str, object]]], timeout: float) -> None:
        self.said: list[list[str]] = [[] for _ in runs]
        self.batch = ChildBatch([ChildRequest((python, "-c", BOOT, CHILD, json.dumps(request)), env, timeout,
                                              python, on_stderr_line=_keep(lines), answer_channel=True)
                                 for (python, env, request), lines in zip(runs, self.said, strict=True)],
                                deadline=deadline_in(timeout))

    def answers(self) -> list[PythonAnswer]:
        return [read_answer(child, said) for child, said in zip(self.batch.answers(), self.said, strict=True)]


def _keep(lines: list[str]):  # type: ignore[no-untyped-def]
    return lambda line: lines.append(line[:1000].decode("utf-8", "replace")) if len(lines) < MAX_SAID_LINES else None


def read_answer(child: ChildAnswer, said: Sequence[str] = ()) -> PythonAnswer:
    """The one parser of a _python_child.py answer: each line of JSON on its channel (the first MAX_ANSWER_BYTES;
    a line cut there, or anything that is not a JSON object, is passed over; a question's first answer is the one
    taken), each field kept only where it has its form."""
    records: dict[str, Any] = {}
    for line in child.answer[:MAX_ANSWER_BYTES].splitlines():
        line = line.strip()
        if not line.startswith("{"):
            continue
        try:
            record = file_names(json_values.loads(line))  # named as this process names files (a C locale's ASCII)
        except (ValueError, RecursionError):
            continue
        if isinstance(record, dict):
            for key, value in record.items():
                records.setdefault(key, value)
    finder = records.get("finder")
    visible = records.get("torch_visible")
    counted = visible.get("count") if isinstance(visible, dict) else None
    parsed = visible.get("parsed") if isinstance(visible, dict) else None
    return PythonAnswer(
        child=child, started=records.get("started") is True, mapped=_strings(records.get("mapped")),
        resolved=tuple((pair[0], pair[1]) for pair in _list(records.get("resolved"))
                       if isinstance(pair, list) and len(pair) == 2 and all(isinstance(p, str) for p in pair)),
        own_sites=_strings(records.get("own_sites")), finder=finder if isinstance(finder, dict) else {},
        numpy_worked=records.get("numpy") == "worked", said=tuple(said),
        torch_visible=(counted, _strings(parsed)[:16]) if isinstance(counted, int) and not isinstance(counted, bool)
        and isinstance(parsed, list) else None)


def _list(value: object) -> list[Any]:
    return value[:256] if isinstance(value, list) else []


def _strings(value: object) -> tuple[str, ...]:
    return tuple(item for item in _list(value) if isinstance(item, str))
