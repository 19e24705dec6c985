"""The frameworks' Python asked in one start per interpreter (probes/framework_python.py, _python_child.py): where the
start-up, finder and CPU-kernel questions are all open, plain check starts that Python once (and once more per
variable tried where an answer failed), each question answered from that start as it was from its own; and the one
parser of the answer takes garbage, a child killed half-way, a hang (cut at the timeout) and an answer over the size
limit without an exception, leaving unanswered what it did not answer. The starts are counted by the interpreter
itself: its python3 writes a line to a log each time it is started."""

from __future__ import annotations

import signal
import sys
import time
from pathlib import Path

import pytest

from cudnn_doctor.model import Framework
from tests.conftest import Machine, codes
from tests.test_cpu_kernels import numpy_features
from tests.test_python_plugins import _plugin, _plugin_findings, _torch


def counted(tmp_path: Path) -> Path:
    """The environment's python3 (the real interpreter behind it) writing a line to a log at each start; the log."""
    log = tmp_path / "starts.log"
    python = tmp_path / "venv" / "bin" / "python3"
    python.write_text(python.read_text().replace("#!/bin/sh\n", f"#!/bin/sh\necho started >> '{log}'\n", 1))
    return log


def starts(log: Path) -> int:
    return len(log.read_text().splitlines()) if log.exists() else 0


def test_three_questions_are_answered_by_one_start(machine: Machine, tmp_path: Path) -> None:
    site = _torch(machine, tmp_path)
    _plugin(site)  # a 'torch.backends' plugin whose module is gone: the finder's question, answered with an error
    log = counted(tmp_path)
    machine.env.update({"PYTHONHASHSEED": "0",  # read at start: the start-up question
                        "OPENBLAS_CORETYPE": "Haswell"})  # read at numpy's first product: the CPU-kernel question
    report = machine.check_json()
    assert starts(log) == 1, log.read_text()
    [plugin] = _plugin_findings(report)  # the finder's answer
    assert plugin["severity"] == "error" and plugin["evidence"] == "seen", plugin
    assert "CD411" not in codes(report)  # it started, and numpy worked with that core type
    # the same questions asked here of the same interpreter: every answer comes from its one start
    from cudnn_doctor.probes.cpu_kernels import CpuKernelQuestion
    from cudnn_doctor.probes.framework_python import PythonChildren
    from cudnn_doctor.probes.python_finder import FinderQuestion
    from cudnn_doctor.probes.python_start import StartQuestion

    torch = Framework("torch", "2.11.0", None, None, None, "dist-info", None, {"site_packages": str(site)})
    env = dict(machine.env)
    children = PythonChildren(env, [StartQuestion([torch], env), FinderQuestion([torch], env),
                                    CpuKernelQuestion([torch], env)])
    [python] = children.pythons
    answer = children.answers()[python]
    assert starts(log) == 2 and answer.started and answer.numpy_worked
    assert ("torch", str(site / "torch" / "__init__.py")) in answer.resolved
    [entry] = answer.finder["groups"]["torch.backends"]["entries"]
    assert entry["missing"] and entry["module"] == "torch_fakeaccel", entry


def test_a_failed_answer_is_tried_again_once_per_variable(machine: Machine, tmp_path: Path) -> None:
    baseline, _ = numpy_features()
    if not baseline:
        pytest.skip("this numpy has no baseline CPU feature to disable")
    _torch(machine, tmp_path)
    log = counted(tmp_path)
    machine.env.update({"PYTHONHASHSEED": "0", "NPY_DISABLE_CPU_FEATURES": baseline[0]})
    report = machine.check_json()
    assert starts(log) == 2, log.read_text()  # both questions in one start; numpy without the variable, one more
    [refused] = [f for f in report["findings"] if f["code"] == "CD411"]
    assert refused["subject"] == "NPY_DISABLE_CPU_FEATURES" and "You cannot disable CPU feature" in refused["detail"]
    assert refused["evidence"] == "seen", refused


def test_nothing_starts_where_no_gate_opens(machine: Machine, tmp_path: Path) -> None:
    _torch(machine, tmp_path)
    log = counted(tmp_path)
    machine.check_json()
    assert starts(log) == 0


# --- hostile answers: the framework's python3 is a stand-in that answers as below on the runner's channel -----------

def stand_in(tmp_path: Path, body: str) -> tuple[list[Framework], Path]:
    """A torch whose environment's python3 writes a line to a log, then runs BODY (bash; $A is the answer channel)."""
    site = tmp_path / "venv" / "lib" / "python3.12" / "site-packages"
    site.mkdir(parents=True)
    python = tmp_path / "venv" / "bin" / "python3"
    python.parent.mkdir()
    log = tmp_path / "starts.log"
    python.write_text(f"#!/bin/bash\necho started >> '{log}'\nA=$CUDNN_DOCTOR_ANSWER_FD\n{body}\n")
    python.chmod(0o755)
    torch = Framework("torch", "2.11.0", None, None, None, "dist-info", None, {"site_packages": str(site)})
    return [torch], log


def ask(frameworks: list[Framework], timeout: float = 10.0):  # type: ignore[no-untyped-def]
    """The start-up and CPU-kernel questions asked of the frameworks' Python: (questions, children, answers)."""
    from cudnn_doctor.probes.cpu_kernels import CpuKernelQuestion
    from cudnn_doctor.probes.framework_python import PythonChildren
    from cudnn_doctor.probes.python_start import StartQuestion

    env = {"PATH": "/usr/bin:/bin", "PYTHONHASHSEED": "0", "OPENBLAS_CORETYPE": "Haswell"}
    start, numpy = StartQuestion(frameworks, env), CpuKernelQuestion(frameworks, env)
    children = PythonChildren(env, [start, numpy], timeout=timeout)
    return start, numpy, children, children.answers()


def test_garbage_is_no_answer(tmp_path: Path) -> None:
    frameworks, log = stand_in(tmp_path, r"""printf 'not json\n{"started": tru\n[1, 2]\n{"a": %s%s}\n' "$(printf '[%.0s' {1..5000})" "$(printf ']%.0s' {1..5000})" >&$A
printf '{"mapped": "x", "resolved": [[1, 2], ["torch"]], "own_sites": [3], "finder": [], "numpy": "maybe"}\n' >&$A
printf '{"started": "yes"}\n' >&$A""")
    start, numpy, children, answers = ask(frameworks)
    [python] = children.pythons  # two questions, one interpreter: one child
    assert starts(log) == 1
    answer = answers[python]
    assert (answer.started, answer.mapped, answer.resolved, answer.own_sites, answer.finder, answer.numpy_worked) == \
        (False, (), (), (), {}, False)
    trials = children.trials()  # it did not start, and numpy did not work: each variable unset alone, one batch
    assert sorted(trials) == [(python, "OPENBLAS_CORETYPE"), (python, "PYTHONHASHSEED")] and starts(log) == 3
    assert start.result(answers, trials) == ((python, "it exited with 0", "", "", "PYTHONHASHSEED"),)
    assert numpy.result(answers, trials) == ()  # nothing cured it: not numpy's to name


def test_a_child_killed_half_way_keeps_what_it_said(tmp_path: Path) -> None:
    frameworks, log = stand_in(tmp_path, """printf '{"started": true}\\n{"resolved": [["torch", "-"]], "own_sites": []}\\n' >&$A
kill -9 $$""")
    start, numpy, children, answers = ask(frameworks)
    [python] = children.pythons
    answer = answers[python]
    assert answer.started and answer.resolved == (("torch", "-"),) and not answer.numpy_worked
    assert answer.child.exit_code == -9 and not answer.child.timed_out
    assert start.result(answers, children.trials()) == () and numpy.result(answers, children.trials()) == ()
    assert starts(log) == 2  # numpy's answer missing: tried once without its variable, which did not cure it


def test_a_hang_is_cut_at_the_timeout(tmp_path: Path) -> None:
    frameworks, log = stand_in(tmp_path, """printf '{"started": true}\\n' >&$A\nexec sleep 60""")
    started = time.monotonic()
    start, numpy, children, answers = ask(frameworks, timeout=1.0)
    [python] = children.pythons
    assert time.monotonic() - started < 8
    assert answers[python].child.timed_out and answers[python].started  # what came before the hang is kept
    assert children.trials() == {} and start.result(answers, {}) == () and numpy.result(answers, {}) == ()
    assert starts(log) == 1  # a hang is no failure to try again


def test_an_answer_over_the_size_limit_is_read_up_to_it(tmp_path: Path) -> None:
    from cudnn_doctor.probes.framework_python import MAX_ANSWER_BYTES

    frameworks, _ = stand_in(tmp_path, f"""printf '{{"started": true}}\\n' >&$A
head -c {MAX_ANSWER_BYTES + 1000} /dev/zero | tr '\\0' x >&$A
printf '\\n{{"numpy": "worked"}}\\n' >&$A""")
    _, _, children, answers = ask(frameworks)
    [python] = children.pythons
    answer = answers[python]
    assert len(answer.child.answer) > MAX_ANSWER_BYTES
    assert answer.started and not answer.numpy_worked  # the answer past the limit is not read


def test_numpy_dying_in_its_fork_ends_the_child_as_it_did(tmp_path: Path) -> None:
    """numpy's question runs in a process forked after the start: where it dies (OpenBLAS running kernels this CPU
    lacks dies of SIGILL), the child ends of the same signal after the other answers, and the variable without which
    it works is named. A numpy that dies so under one OPENBLAS_CORETYPE stands in for OpenBLAS."""
    fake = tmp_path / "fake" / "numpy"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text(
        "import os, signal\nif os.environ.get('OPENBLAS_CORETYPE') == 'Haswell':\n"
        "    os.kill(os.getpid(), signal.SIGILL)\n"
        "class _Array:\n    def __matmul__(self, other):\n        return self\n    def sum(self):\n        return 1.0\n"
        "def ones(shape):\n    return _Array()\n")
    frameworks, log = stand_in(tmp_path, f"PYTHONPATH={tmp_path / 'fake'} exec {sys.executable} \"$@\"")
    start, numpy, children, answers = ask(frameworks)
    [python] = children.pythons
    answer = answers[python]
    assert answer.started and answer.resolved and not answer.numpy_worked  # the others answered before it died
    assert answer.child.exit_code == -signal.SIGILL, answer.child
    trials = children.trials()
    assert list(trials) == [(python, "OPENBLAS_CORETYPE")] and trials[(python, "OPENBLAS_CORETYPE")].numpy_worked
    [(who, words, variable, value)] = numpy.result(answers, trials)
    assert (who, variable, value) == (python, "OPENBLAS_CORETYPE", "Haswell") and "SIGILL" in words, words
    assert start.result(answers, trials) == () and starts(log) == 2


def test_a_question_whose_answer_cannot_be_said_leaves_the_others_answered(machine: Machine, tmp_path: Path) -> None:
    """A start-up hook that puts an object on sys.path that is no string (Python's finders pass over it) leaves the
    finder's answer unsayable in JSON: that question stays unanswered, as when it had a child of its own, and the
    start-up and numpy questions of the same start are answered."""
    from cudnn_doctor.probes.cpu_kernels import CpuKernelQuestion
    from cudnn_doctor.probes.framework_python import PythonChildren
    from cudnn_doctor.probes.python_finder import FinderQuestion
    from cudnn_doctor.probes.python_start import StartQuestion

    site = _torch(machine, tmp_path)
    _plugin(site, module=True)  # a plugin group torch loads: the finder's question is asked
    hooks = tmp_path / "hooks"
    hooks.mkdir()
    (hooks / "sitecustomize.py").write_text("import pathlib, sys\nsys.path.append(pathlib.Path('/nowhere'))\n")
    env = dict(machine.env, PYTHONPATH=f"{hooks}:{machine.env['PYTHONPATH']}", OPENBLAS_CORETYPE="Haswell")
    torch = Framework("torch", "2.11.0", None, None, None, "dist-info", None, {"site_packages": str(site)})
    finder = FinderQuestion([torch], env)
    children = PythonChildren(env, [StartQuestion([torch], env), finder, CpuKernelQuestion([torch], env)])
    [python] = children.pythons
    assert finder.pythons == [python]  # asked, in the same start
    answer = children.answers()[python]
    assert answer.started and answer.numpy_worked and answer.resolved and answer.finder == {}, answer
    assert finder.plugins(children.answers()) == () and finder.shadows(children.answers(), env, None) == ()


@pytest.mark.parametrize("hostile", [5, "abc", {"a": 1}, None, [1, [2]]])
def test_a_finder_answer_of_the_wrong_types_is_passed_over(machine: Machine, tmp_path: Path, hostile: object) -> None:
    """The answer channel is read, never trusted for its types: a start-up hook of the user's can write on it before
    the child does (its first line for a question is taken). Locations, tags or plugin entries that are no list are
    none, not a probe that raised (CD902)."""
    import json

    from cudnn_doctor.child import ChildAnswer
    from cudnn_doctor.probes.framework_python import read_answer
    from cudnn_doctor.probes.python_finder import FinderQuestion

    site = _torch(machine, tmp_path)
    _plugin(site, module=True)
    torch = Framework("torch", "2.11.0", None, None, None, "dist-info", None, {"site_packages": str(site)})
    finder = FinderQuestion([torch], machine.env)
    [python] = finder.pythons
    modules = finder.request(python)["modules"]
    assert modules, finder.request(python)
    said = {"modules": {name: {"origin": str(tmp_path / "elsewhere" / name / "__init__.py"), "locations": hostile,
                               "foreign": hostile} for name in modules},
            "plugins": {"torch.backends": {"entries": hostile}}, "path": [str(tmp_path / "elsewhere")],
            "suffixes": hostile, "stdlib": hostile}
    answer = read_answer(ChildAnswer(None, None, False, False, 0.0, answer=json.dumps({"finder": said}) + "\n"))
    assert answer.finder == said
    answers = {python: answer}
    shadows = finder.shadows(answers, machine.env, None)
    assert shadows and all(len(row) == 5 for row in shadows), shadows  # no tags read out of what is no list
    assert isinstance(finder.plugins(answers), tuple)
