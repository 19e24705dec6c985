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


# --- tests/jax_programs.py: a program forked before `import jax` answers as a new Python does ----------------------

# what the forking Python imports, then each name read from its environment: Python's (os.environ, recorded) and its
# libraries' C code's (getenv, written by tests/fakes/getenv_log.c); run with LD_PRELOAD set to that logger
READ_AT_PRELOAD = """import os, sys
read = []
real_get, real_has = os._Environ.__getitem__, os._Environ.__contains__
os._Environ.__getitem__ = lambda self, key: read.append(key) or real_get(self, key)
os._Environ.__contains__ = lambda self, key: read.append(key) or real_has(self, key)
sys.stderr.write("getenv --- imports\\n")
sys.stderr.flush()
for name in sys.argv[1:]:
    __import__(name)
sys.stderr.write("getenv --- done\\n")
sys.stderr.flush()
print("\\n".join(read))
"""


def test_what_the_forking_python_imports_reads_no_variable_a_forked_program_sets() -> None:
    """The forking Python imports NumPy, ml_dtypes and jaxlib's extension before it forks: none of them reads a
    variable of the names a forked program may set (jax_programs.FORKED_VARIABLES) as it loads, in Python or in C;
    so each forked child reads its own value, where jax (config.py) and jaxlib (the GPU client's options) read it."""
    from tests.fakes.build import compile_library
    from tests.jax_programs import BASE_PATH, FORKED_VARIABLES, PRELOADED
    from tests.real_wheels import real_jax_cpu

    logger = compile_library("getenv_log.c", "libgetenv_log.so")
    env = {"PATH": BASE_PATH, "PYTHONPATH": str(real_jax_cpu()), "LD_PRELOAD": str(logger)}
    done = subprocess.run([sys.executable, "-c", READ_AT_PRELOAD, *PRELOADED], capture_output=True, text=True,
                          env=env, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    in_c = done.stderr.split("getenv --- imports\n", 1)[1].split("getenv --- done\n", 1)[0].splitlines()
    assert in_c and all(line.startswith("getenv ") for line in in_c), done.stderr[-2000:]
    read = {line.split(" ", 1)[1] for line in in_c} | set(done.stdout.split())
    assert {"OPENBLAS_NUM_THREADS", "NPY_PROMOTION_STATE", "TF_CPP_MAX_VLOG_LEVEL"} <= read, read  # both heard
    assert not [name for name in read if FORKED_VARIABLES.fullmatch(name)], read


@pytest.mark.parametrize(("env", "code"), [
    ({"JAX_COMPILATION_CACHE_MAX_SIZE": ""}, "import jax"),  # refused at import by jax's config.py
    ({"JAX_COMPILATION_CACHE_MAX_SIZE": " 7 "}, "import jax; print(jax.jit(lambda x: x + 1)(1.0))"),  # taken
    ({"XLA_PYTHON_CLIENT_MEM_FRACTION": "2GB"},  # refused by jaxlib when the GPU client's options are made
     "from jaxlib import xla_client; print(xla_client.generate_pjrt_gpu_plugin_options())"),
    ({"XLA_PYTHON_CLIENT_PREALLOCATE": "0"},
     "from jaxlib import xla_client; print(xla_client.generate_pjrt_gpu_plugin_options())"),
    # XLA parses XLA_FLAGS at the first compilation: a value it cannot interpret ends the program there
    ({"XLA_FLAGS": "--xla_gpu_autotune_level=high"}, "import jax; print(jax.jit(lambda x: x + 1)(1.0))"),
    ({"XLA_FLAGS": "--xla_gpu_autotune_level=2"}, "import jax; print(jax.jit(lambda x: x + 1)(1.0))"),
])
def test_a_forked_jax_program_answers_as_a_new_python_does(env: dict[str, str], code: str) -> None:
    from tests.jax_programs import BASE_PATH, forks, run_jax_program
    from tests.real_wheels import real_jax_cpu

    whole = {"PATH": BASE_PATH, "PYTHONPATH": str(real_jax_cpu()), "JAX_PLATFORMS": "cpu", **env}
    assert forks(whole) is not every_run_in_a_process()
    forked = run_jax_program(whole, code)
    new = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=whole, timeout=300)
    assert (forked.returncode, forked.stdout) == (new.returncode, new.stdout), (forked, new)
    assert forked.stderr.strip().splitlines()[-1:] == new.stderr.strip().splitlines()[-1:], (forked.stderr, new.stderr)
    assert not forks({**whole, "TF_CPP_MIN_LOG_LEVEL": "3"})  # read as jaxlib's extension loads: a new Python
    assert not forks({**whole, "PYTHONPATH": f"{real_jax_cpu()}:/elsewhere"})
