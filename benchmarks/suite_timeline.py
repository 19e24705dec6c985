"""Where the test suite's time goes, per test: a pytest plugin that writes one JSON line per test (its worker, start,
end, its own CPU and its reaped children's), and a reader that sums them and writes tests/slow_tests.txt.

    PYTHONPATH=benchmarks SUITE_TIMELINE=/tmp/timeline.jsonl python -m pytest -p suite_timeline [files...]
    python benchmarks/suite_timeline.py /tmp/timeline.jsonl [--write-slow-list]

The machine is shared: read CPU seconds (own + children) rather than wall time, and compare files measured alike.
--write-slow-list writes the tests that took 1.5 CPU s or more (or 45 s of wall on the shared machine) to
tests/slow_tests.txt, slowest first: tests/conftest.py starts them first (the longest work first, so no worker is
left with a long test while the others have finished)."""

from __future__ import annotations

import json
import os
import resource
import sys
import time
from collections import defaultdict
from pathlib import Path

import pytest

OUT = os.environ.get("SUITE_TIMELINE", "suite-timeline.jsonl")
SLOW_CPU_S, SLOW_WALL_S = 1.5, 45.0
# tests whose cost on this machine is a warm cache's, where a fresh CI machine's is cold: kept in the list whatever
# the run measured (mypy's incremental cache: about 10 CPU s for the whole package, 1 s when warm)
COLD_ON_CI = ("tests/test_lint.py::test_mypy_finds_nothing",)


def _cpu(who: int) -> float:
    usage = resource.getrusage(who)
    return usage.ru_utime + usage.ru_stime


_OUTCOMES: dict[str, str] = {}


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """Each test's outcome (a failure in setup, call or teardown is its outcome): a run stopped by a time limit
    prints no summary, so the timeline says which tests failed."""
    if report.failed:
        _OUTCOMES[report.nodeid] = "failed"
    elif report.skipped:
        _OUTCOMES.setdefault(report.nodeid, "skipped")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None):  # type: ignore[no-untyped-def]
    started, own, children = time.time(), _cpu(resource.RUSAGE_SELF), _cpu(resource.RUSAGE_CHILDREN)
    yield
    row = {"id": item.nodeid, "w": os.environ.get("PYTEST_XDIST_WORKER", "main"), "t0": started, "t1": time.time(),
           "cpu": round(_cpu(resource.RUSAGE_SELF) - own, 3),
           "ccpu": round(_cpu(resource.RUSAGE_CHILDREN) - children, 3),
           "outcome": _OUTCOMES.pop(item.nodeid, "passed")}
    with open(OUT, "a") as handle:
        handle.write(json.dumps(row) + "\n")


def function_id(nodeid: str) -> str:
    """A test's id without its parameters and the group tests/conftest.py writes into it (`@FILE`): the slow list
    names functions, whatever their parameters are."""
    return nodeid.split("[", 1)[0].split("@", 1)[0]


def main() -> None:
    rows = [json.loads(line) for line in Path(sys.argv[1]).read_text().splitlines() if line.strip()]
    rows = [row for row in rows if "id" in row]
    per_file: dict[str, list[float]] = defaultdict(lambda: [0, 0.0, 0.0])
    per_function: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0])
    for row in rows:
        cpu = row["cpu"] + row["ccpu"]
        entry = per_file[row["id"].split("::")[0]]
        entry[0] += 1
        entry[1] += cpu
        entry[2] += row["t1"] - row["t0"]
        slowest = per_function[function_id(row["id"])]
        slowest[0], slowest[1] = max(slowest[0], cpu), max(slowest[1], row["t1"] - row["t0"])
    print(f"{len(rows)} tests, {sum(e[1] for e in per_file.values()):.0f} CPU s (own + reaped children)")
    for name, (count, cpu, wall) in sorted(per_file.items(), key=lambda kv: -kv[1][1])[:30]:
        print(f"{cpu:7.1f} CPU s {wall:7.1f} s {count:5d} tests  {name}")
    if "--write-slow-list" in sys.argv:
        slow = sorted((f for f, (cpu, wall) in per_function.items() if cpu >= SLOW_CPU_S or wall >= SLOW_WALL_S),
                      key=lambda f: -max(per_function[f][0], per_function[f][1] / 12))
        slow = [f for f in COLD_ON_CI if f in per_function and f not in slow] + slow
        target = Path(__file__).resolve().parents[1] / "tests" / "slow_tests.txt"
        target.write_text("# the tests that take longest, slowest first (benchmarks/suite_timeline.py wrote it):\n"
                          "# tests/conftest.py starts them first\n" + "".join(f"{f}\n" for f in slow))
        print(f"{len(slow)} tests written to {target}")


if __name__ == "__main__":
    main()
