"""Which children the test suite's CPU goes to: a pytest plugin that reaps every subprocess.Popen child of the
workers with os.wait4 (its rusage: its own CPU and its reaped descendants') and writes one JSON line per test with
that CPU by kind of child (the doctor's probe jobs, `python -m cudnn_doctor COMMAND`, `python -c CODE`, gcc, bash,
...), with the seconds the worker's own time.sleep slept by its caller (file:line: the doctor's waits in in-process
runs, the tests' own), and a reader that sums both over the suite or a file.

    PYTHONPATH=benchmarks SUITE_CHILDREN=/tmp/children.jsonl python -m pytest -p suite_children [files...]
    python benchmarks/suite_children.py /tmp/children.jsonl [--top N]

A child reaped otherwise than by Popen (os.waitpid of a fork, a grandchild the doctor reaps as subreaper) is in no
kind: `other` is the test's children CPU (RUSAGE_CHILDREN) less what the kinds hold."""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import threading
import time
from collections import defaultdict
from pathlib import Path

import pytest

OUT = os.environ.get("SUITE_CHILDREN", "suite-children.jsonl")
_LOCK = threading.Lock()
_KINDS: dict[str, float] = defaultdict(float)
_SLEEPS: dict[str, float] = defaultdict(float)
_real_sleep = time.sleep


def _sleep(seconds: float) -> None:
    caller = sys._getframe(1)
    where = f"{os.path.relpath(caller.f_code.co_filename)}:{caller.f_lineno}"
    started = time.monotonic()
    try:
        _real_sleep(seconds)
    finally:
        with _LOCK:
            _SLEEPS[where] += time.monotonic() - started


def kind_of(argv: object) -> str:
    """A short name for what a child runs: the probe job, the CLI command, the first words of `-c` code."""
    if isinstance(argv, (str, bytes)):
        return f"shell: {str(argv)[:40]}"
    words = [str(word) for word in argv]  # type: ignore[union-attr]
    if not words:
        return "?"
    program = os.path.basename(words[0])
    for index, word in enumerate(words):
        if word.endswith(".py") and "cudnn_doctor" in word:
            job = words[index + 1] if index + 1 < len(words) else ""
            return f"{os.path.basename(word)} {job}"[:60]
    if "-m" in words and words.index("-m") + 1 < len(words):
        module = words[words.index("-m") + 1]
        rest = words[words.index("-m") + 2:]
        return f"{program} -m {module} {rest[0] if rest else ''}".strip()[:60]
    if "-c" in words and words.index("-c") + 1 < len(words):
        code = words[words.index("-c") + 1].replace("\n", "; ")
        return f"{program} -c {code[:50]}"
    return f"{program} {os.path.basename(words[1]) if len(words) > 1 else ''}".strip()[:60]


def _try_wait(self: subprocess.Popen, wait_flags: int) -> tuple[int, int]:  # type: ignore[type-arg]
    try:
        pid, status, usage = os.wait4(self.pid, wait_flags)
    except ChildProcessError:
        return self.pid, 0
    if pid:
        with _LOCK:
            _KINDS[kind_of(self.args)] += usage.ru_utime + usage.ru_stime
    return pid, status


def pytest_configure(config: pytest.Config) -> None:
    subprocess.Popen._try_wait = _try_wait  # type: ignore[attr-defined]
    time.sleep = _sleep


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None):  # type: ignore[no-untyped-def]
    with _LOCK:
        _KINDS.clear()
        _SLEEPS.clear()
    before = _children_cpu()
    yield
    with _LOCK:
        kinds = {kind: round(cpu, 3) for kind, cpu in _KINDS.items()}
        _KINDS.clear()
        sleeps = {where: round(slept, 2) for where, slept in _SLEEPS.items()}
        _SLEEPS.clear()
    total = _children_cpu() - before
    kinds["other"] = round(total - sum(kinds.values()), 3)
    with open(OUT, "a") as handle:
        handle.write(json.dumps({"id": item.nodeid, "ccpu": round(total, 3), "kinds": kinds, "sleeps": sleeps}) + "\n")


def main(argv: list[str]) -> None:
    rows = [json.loads(line) for line in Path(argv[0]).read_text().splitlines() if line.strip()]
    top = int(argv[argv.index("--top") + 1]) if "--top" in argv else 40
    kinds: dict[str, float] = defaultdict(float)
    sleeps: dict[str, float] = defaultdict(float)
    for row in rows:
        for kind, cpu in row["kinds"].items():
            kinds[kind] += cpu
        for where, slept in row.get("sleeps", {}).items():
            sleeps[where] += slept
    print(f"{len(rows)} tests, {sum(row['ccpu'] for row in rows):.1f} CPU s in children")
    for kind, cpu in sorted(kinds.items(), key=lambda pair: -pair[1])[:top]:
        print(f"{cpu:8.1f}  {kind}")
    print(f"{sum(sleeps.values()):.1f} s slept in the workers' time.sleep")
    for where, slept in sorted(sleeps.items(), key=lambda pair: -pair[1])[:top]:
        print(f"{slept:8.1f}  {where}")


if __name__ == "__main__":
    main(sys.argv[1:])
