"""The suite's own machinery (issue 40, a suite within 5 minutes): the `machine` fixture runs the CLI in-process
unless the process is the point, an in-process run has a deadline as a subprocess has, the tests sharing a
module fixture stay in one pytest-xdist worker, and a lock keeps two workers from making one cache at once."""

from __future__ import annotations

import fcntl
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import (
    SLOW_TESTS,
    InProcessTimeout,
    Machine,
    every_run_in_a_process,
    plain_node_id,
    shared_fixture_group,
    slowest_first,
)
from tests.fakes.build import fake_cudnn
from tests.locks import locked


@pytest.fixture(scope="module")
def made_once() -> str:
    return "shared by this module's tests"


def test_machine_runs_in_process_by_default(machine: Machine) -> None:
    assert machine.in_process is not every_run_in_a_process()
    result = machine.run("--version")
    assert result.exit_code == 0 and result.stdout.startswith("cudnn-doctor ")


@pytest.mark.subprocess
def test_a_test_marked_subprocess_gets_a_process_per_run(machine: Machine) -> None:
    assert not machine.in_process
    result = machine.run("--version")
    assert result.exit_code == 0 and result.stdout.startswith("cudnn-doctor ")


def test_an_in_process_run_past_its_deadline_fails_and_leaves_the_process_as_it_was(tmp_path: Path) -> None:
    """A library that hangs in its probe (the probe's own limit 10 s) and a deadline of 1 s: the run ends at the
    deadline as subprocess.run's would, and the environment, folder and standard descriptors are this process's
    again (a run after it works)."""
    machine = Machine(tmp_path, in_process=True)
    fake_cudnn(tmp_path / "hang" / "lib", version=91900, hang=True)
    machine.add_library_path(tmp_path / "hang" / "lib")
    environment, folder = dict(os.environ), os.getcwd()
    descriptors = [os.fstat(fd).st_ino for fd in (0, 1, 2)]
    with pytest.raises(InProcessTimeout):
        machine.run("check", "--json", timeout=1)
    assert dict(os.environ) == environment and os.getcwd() == folder
    assert [os.fstat(fd).st_ino for fd in (0, 1, 2)] == descriptors
    assert machine.run("--version").exit_code == 0


def test_tests_of_a_module_fixture_share_a_group(request: pytest.FixtureRequest, made_once: str) -> None:
    assert shared_fixture_group(request.node) == "tests/test_suite_infrastructure.py"


def test_the_tests_of_a_group_run_in_one_worker_and_their_fixture_is_made_once(tmp_path: Path) -> None:
    """Two pytest-xdist workers, --dist loadgroup (pyproject's options): the module fixture's tests all run in one
    worker, each id ending in @its group, and the fixture is made once. Under pytest 9.2 pytest-xdist 3.8's suffix
    was lost (issue 1386) and the groups were handed out test by test (tests/conftest.group_in_node_id)."""
    made = tmp_path / "made"
    done = subprocess.run([sys.executable, "-m", "pytest", "-n", "2", "-p", "no:cacheprovider", "-v", "-k",
                           "made_once_in_a_group", __file__], capture_output=True, text=True, timeout=300,
                          cwd=Path(__file__).resolve().parents[1], env={**os.environ, "MADE_ONCE_LOG": str(made)})
    assert done.returncode == 0, done.stdout[-3000:]
    ran = re.findall(r"\[(gw\d+)\] .*PASSED (\S+)", done.stdout)
    assert len(ran) == 3 and len({worker for worker, _ in ran}) == 1, done.stdout[-3000:]
    assert all(test.endswith("@tests/test_suite_infrastructure.py") for _, test in ran), ran
    assert made.read_text().count("made\n") == 1


@pytest.fixture(scope="module")
def made_once_logged() -> str:
    log = os.environ.get("MADE_ONCE_LOG")
    if log:
        with open(log, "a") as handle:
            handle.write("made\n")
    return "made"


@pytest.mark.parametrize("case", range(3))
def test_made_once_in_a_group(made_once_logged: str, case: int) -> None:
    assert made_once_logged == "made"


def test_a_test_without_a_shared_fixture_goes_to_any_worker(request: pytest.FixtureRequest, tmp_path: Path) -> None:
    assert shared_fixture_group(request.node) is None


def test_the_slowest_tests_are_handed_out_first_and_groups_keep_their_place(request: pytest.FixtureRequest) -> None:
    """tests/slow_tests.txt (benchmarks/suite_timeline.py) puts the longest tests at the front of the order pytest-xdist
    hands them out in, slowest first; a test of a shared module fixture keeps its place; every listed test exists."""
    session_items = list(request.session.items)
    ordered = slowest_first(session_items)
    assert sorted(map(id, ordered)) == sorted(map(id, session_items))  # the same tests, none lost or doubled
    listed = [line for line in SLOW_TESTS.read_text().splitlines() if line and not line.startswith("#")]
    existing = {plain_node_id(item.nodeid).split("[", 1)[0] for item in session_items}
    if len(existing) > 1000:  # the whole suite collected: every listed test is still one of it
        assert set(listed) <= existing, set(listed) - existing
    front = [item for item in ordered[:len(ordered)] if item.nodeid.split("[", 1)[0] in listed
             and not item.get_closest_marker("xdist_group")]
    assert ordered[:len(front)] == front
    ranks = [listed.index(item.nodeid.split("[", 1)[0]) for item in front]
    assert ranks == sorted(ranks)
    grouped = [item for item in session_items if item.get_closest_marker("xdist_group")]
    assert [item for item in ordered if item.get_closest_marker("xdist_group")] == grouped


HOLDS_IT = """
import fcntl, os, sys
descriptor = os.open(sys.argv[1], os.O_RDWR)
try:
    fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
except BlockingIOError:
    print("held")
else:
    print("free")
"""


def test_a_lock_is_held_across_processes_for_its_block_only(tmp_path: Path) -> None:
    path = tmp_path / "cache.lock"

    def other_process_sees() -> str:
        return subprocess.run([sys.executable, "-c", HOLDS_IT, str(path)], capture_output=True, text=True,
                              timeout=60, check=True).stdout.strip()

    with locked("cache", folder=tmp_path):
        assert other_process_sees() == "held"
    assert other_process_sees() == "free"
    descriptor = os.open(path, os.O_RDWR)
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)  # this process can take it again
    finally:
        os.close(descriptor)
