"""The one job child (_job_child.py JOBS ...): each module of jobs it runs (_probe_jobs, _load_jobs) keeps every
property the child script of its own had: its answer through a preload that closes the standard descriptors or every
descriptor, under a hostile environment and working folder, after SIGKILL at seeded instants of a run that writes its
bytecode (the next run answers the same, from whole bytecode), and its death with a doctor killed by SIGKILL. A name
of jobs that is not the doctor's is refused in one line. (Its bytecode start, a damaged .pyc and its garbage
collector: tests/test_probe_child_json.py, for each jobs module.)"""

from __future__ import annotations

import os
import random
import re
import shutil
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from cudnn_doctor.child import JOB_CHILD, TOKEN_VARIABLE, deadline_in, job_child_argv, run_child
from tests.fakes.build import compile_library
from tests.test_probes_hostile import survivors

pytestmark = pytest.mark.subprocess

# each module of jobs: a question it answers with no library present (no cuDNN by that name)
QUESTIONS = {
    "_probe_jobs": ["cudnn", "libcudnn_none.so.9"],
    "_load_jobs": ["ld.so", "-", "-", "-", "-", "libcudnn_none.so.9", "cudnnOpsVersionCheck",
                   "libcudnn_heuristic.so.9", "[]", "libcudnn_ops.so.9", "-"],
}
JOBS = sorted(QUESTIONS)


def _answer(jobs: str, env: dict[str, str] | None = None, argv: tuple[str, ...] | None = None,
            cwd: str | None = None) -> tuple[str, int | None]:
    """The answer of JOBS' child asked its question through the one runner (its answer channel), and its exit code."""
    here = os.getcwd()
    if cwd:
        os.chdir(cwd)
    try:
        done = run_child(argv or job_child_argv(jobs, *QUESTIONS[jobs]), env, deadline_in(60), answer_channel=True)
    finally:
        os.chdir(here)
    return _steady(done.answer), done.exit_code


def _steady(answer: str) -> str:
    """ANSWER without what differs from run to run (milliseconds, process ids)."""
    return re.sub(r'"(child_ms|wall_ms|pid)": [0-9.e-]+', r'"\1": 0', answer).strip()


@pytest.mark.parametrize("jobs", JOBS)
def test_a_jobs_name_not_of_the_doctor_is_refused_in_one_line(tmp_path: Path, jobs: str) -> None:
    """What the job child imports is the doctor's own code: any other name (a module of the standard library, a path,
    a file planted beside it) is refused, exit 2, one line, no traceback; the doctor's names answer."""
    planted = tmp_path / "_planted.py"
    planted.write_text("import os\nopen(os.path.join(os.path.dirname(__file__), 'RAN'), 'w').close()\n")
    script = tmp_path / "_job_child.py"
    shutil.copy2(JOB_CHILD, script)
    for name in ("_planted", "os", "../_planted", "_probe_jobs.py", "", jobs.upper()):
        done = subprocess.run([sys.executable, "-I", "-S", str(script), name, *QUESTIONS[jobs]], capture_output=True,
                              text=True, timeout=60)
        assert done.returncode == 2 and done.stdout == "", (name, done)
        assert done.stderr.count("\n") == 1 and "usage: _job_child.py _probe_jobs|_load_jobs" in done.stderr, done
    assert not (tmp_path / "RAN").exists()
    answer, code = _answer(jobs)
    assert code == 0 and "libcudnn_none.so.9" in answer, answer


@pytest.mark.parametrize("closes", ["CLOSE_ALL", "CLOSE_EVERY"])
@pytest.mark.parametrize("jobs", JOBS)
def test_each_jobs_answers_through_a_preload_that_closes_descriptors(jobs: str, closes: str) -> None:
    """A preloaded library that closes stdin, stdout and stderr (CLOSE_ALL), or every descriptor and opens /dev/null
    on their numbers, the answer channel's among them (CLOSE_EVERY), before the child's first line: the answer is the
    one given without it."""
    plain, code = _answer(jobs)
    assert code == 0 and plain, plain
    preload = compile_library("closing_preload.c", f"libclosing-{closes}.so", {closes: True})
    closed, code = _answer(jobs, {**os.environ, "LD_PRELOAD": str(preload)})
    assert code == 0 and closed == plain, (closed, plain)


@pytest.mark.parametrize("jobs", JOBS)
def test_each_jobs_answers_the_same_under_a_hostile_environment(tmp_path: Path, jobs: str) -> None:
    """Modules of the child's names (its jobs, _child_stdio, gc) planted in the working folder and on PYTHONPATH, a
    PYTHONHOME, PYTHONSTARTUP, PYTHONINSPECT and PYTHONWARNINGS=error, a hostile locale: the child runs the doctor's
    own code (-I -S), answers what it answers in a plain environment, and nothing planted runs."""
    plain, _code = _answer(jobs)
    for name in ("_child_stdio", "_proc_maps", "_probe_jobs", "_load_jobs", "gc", "os", "importlib"):
        (tmp_path / f"{name}.py").write_text("import sys\nsys.stdout.write('PLANTED')\nsys.exit(7)\n")
    env = {**os.environ, "PYTHONPATH": str(tmp_path), "PYTHONHOME": str(tmp_path), "PYTHONINSPECT": "1",
           "PYTHONSTARTUP": str(tmp_path / "os.py"), "PYTHONWARNINGS": "error", "LC_ALL": "xx_XX.bogus",
           "PYTHONIOENCODING": "bogus-codec", "PYTHONPYCACHEPREFIX": str(tmp_path / "nowhere")}
    hostile, code = _answer(jobs, env, cwd=str(tmp_path))
    assert code == 0 and hostile == plain and "PLANTED" not in hostile, (hostile, plain)
    assert not (tmp_path / "nowhere").exists()


def _syscalls(argv: list[str], folder: Path) -> list[str]:
    """The system calls of one run of ARGV, in order, by name (strace)."""
    trace = folder / "trace"
    subprocess.run(["strace", "-qq", "-o", str(trace), *argv], capture_output=True, timeout=60, check=False)
    names = []
    for line in trace.read_text(errors="replace").splitlines():
        found = re.match(r"([a-z_0-9]+)\(", line)
        if found:
            names.append(found.group(1))
    return names


@pytest.mark.skipif(shutil.which("strace") is None, reason="strace kills between system calls")
@pytest.mark.parametrize("jobs", JOBS)
def test_each_jobs_killed_between_any_two_system_calls_leaves_the_next_run_whole(tmp_path: Path, jobs: str) -> None:
    """SIGKILL at seeded system calls of a first run (the one that compiles the child's modules and writes their
    bytecode): the run after answers as a run that was never killed, and the one after that reads whole bytecode."""
    folder = tmp_path / "package"
    folder.mkdir()
    for name in ("_job_child.py", f"{jobs}.py", "_child_stdio.py", "_proc_maps.py"):
        shutil.copy2(Path(JOB_CHILD).parent / name, folder / name)
    argv = [sys.executable, "-I", "-S", str(folder / "_job_child.py"), jobs, *QUESTIONS[jobs]]
    reference = subprocess.run(argv, capture_output=True, text=True, timeout=60).stdout
    assert "libcudnn_none.so.9" in reference, reference
    shutil.rmtree(folder / "__pycache__")
    calls = _syscalls(argv, tmp_path)
    shutil.rmtree(folder / "__pycache__")
    writes = [i for i, name in enumerate(calls) if name in ("openat", "write", "rename", "close")]
    chosen = sorted(set(random.Random(f"{jobs}-43").sample(writes, min(12, len(writes)))))
    for index in chosen:
        nth = calls[:index + 1].count(calls[index])
        killed = subprocess.run(["strace", "-qq", "-o", "/dev/null", "-e",
                                 f"inject={calls[index]}:signal=KILL:when={nth}", *argv],
                                capture_output=True, text=True, timeout=60)
        assert killed.returncode != 0, (index, calls[index], nth)
        after = subprocess.run(argv, capture_output=True, text=True, timeout=60)
        assert after.stdout == reference, (index, calls[index], nth, after.stdout, after.stderr[-800:])
        again = subprocess.run([*argv[:3], "-v", *argv[3:]], capture_output=True, text=True, timeout=60)
        assert again.stdout == reference
        for name in ("_child_stdio", "_proc_maps", jobs):
            assert f"code object from '{folder / '__pycache__' / name}" in again.stderr, (index, again.stderr[-1500:])
        shutil.rmtree(folder / "__pycache__")
    assert len(chosen) >= 6, chosen
    assert sorted(p.name for p in folder.iterdir()) == sorted(["_job_child.py", f"{jobs}.py", "_child_stdio.py",
                                                                "_proc_maps.py"])


@pytest.mark.parametrize("jobs", JOBS)
def test_each_jobs_child_dies_with_a_doctor_killed_with_sigkill(tmp_path: Path, jobs: str) -> None:
    """A library whose constructor never returns (hanging_library.c) asked of each jobs module by a doctor's runner:
    the doctor killed with SIGKILL (it cleans nothing), the job child ends too."""
    hanging = compile_library("hanging_library.c", "libcudnn_hangs.so.9", soname="libcudnn_hangs.so.9")
    question = ["cudnn", str(hanging)] if jobs == "_probe_jobs" else \
        ["ld.so", "-", "-", "-", "-", "libcudnn_hangs.so.9", "-", "-", "[]", "-", "-"]
    mark = uuid.uuid4().hex
    started = tmp_path / "started"
    code = ("import sys; from cudnn_doctor.child import job_child_argv, run_child, deadline_in\n"
            f"open({str(started)!r}, 'w').close()\n"
            f"run_child(job_child_argv({jobs!r}, *{question!r}), None, deadline_in(300), answer_channel=True)\n")
    env = {**os.environ, "CUDNN_DOCTOR_TEST_MARK": mark, "LD_LIBRARY_PATH": str(hanging.parent),
           "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    env.pop(TOKEN_VARIABLE, None)
    doctor = subprocess.Popen([sys.executable, "-c", code], env=env, stdin=subprocess.DEVNULL,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while len(survivors(mark)) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert started.exists() and len(survivors(mark)) >= 2, survivors(mark)  # the doctor and its job child
        time.sleep(0.3)  # inside the library's constructor by now
        doctor.send_signal(signal.SIGKILL)
        doctor.wait(timeout=10)
        deadline = time.monotonic() + 10
        while survivors(mark) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert survivors(mark) == []
    finally:
        doctor.kill()
        for pid in survivors(mark):
            os.kill(pid, signal.SIGKILL)
