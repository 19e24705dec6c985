"""NVML's child, the longest wait of a check on a GPU machine (it opens the driver, as nvidia-smi does), starts as
soon as the command line is read and the search context known: before the probes', rules' and plan's modules are
imported, which load beside it. Order read from audit events of
the real command (entry.main) on the gcc-built fake NVML. For `check` alone NVML's child starts as soon as the
command's entry runs, before the command line is read (probes/loader.start_nvml_early): check takes it where its
options leave the context the same; a usage error stops it."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.fakes.build import fake_nvml

ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.subprocess

RECORD = r"""
import sys
events = []
def hook(event, args):
    if event == "subprocess.Popen":
        words = [str(a).rsplit("/", 1)[-1] for a in args[1] if not str(a).startswith("-")]
        words = words[1:] if words and "python" in words[0] else words  # a Python child: its script
        events.append("start " + " ".join(words[:3 if words[:1] == ["_job_child.py"] else 2]))  # and its jobs
    elif event == "import" and args[0].startswith("cudnn_doctor."):
        events.append("import " + args[0])
sys.addaudithook(hook)
import atexit
atexit.register(lambda: sys.stderr.write("EVENTS " + repr(events) + "\n"))
sys.argv = ["cudnn-doctor", *sys.argv[1:]]
from cudnn_doctor.entry import main
main()
"""


def _events(tmp_path: Path, *argv: str) -> list[str]:
    folder = fake_nvml(tmp_path / "nvml").parent
    env = {**os.environ, "LD_LIBRARY_PATH": str(folder),
           "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    done = subprocess.run([sys.executable, "-c", RECORD, *argv], capture_output=True, text=True, env=env,
                          cwd=tmp_path, timeout=120)
    line = next(x for x in done.stderr.splitlines() if x.startswith("EVENTS "))
    return eval(line[7:])  # noqa: S307 - the child's repr of a list of strings


def test_nvml_child_starts_before_the_probes_and_rules_are_imported(tmp_path: Path) -> None:
    events = _events(tmp_path, "check", "--json")
    started = next(i for i, e in enumerate(events) if e.startswith("start _job_child.py _probe_jobs nvml"))
    for module in ("cudnn_doctor.model", "cudnn_doctor.probes.collect", "cudnn_doctor.probes.process_env",
                   "cudnn_doctor.rules.cudnn", "cudnn_doctor.plan.planner"):
        assert events.index(f"import {module}") > started, (module, events[:started + 1])
    assert sum(e.startswith("start _job_child.py _probe_jobs nvml") for e in events) == 1  # one NVML child, not two


def _left_running(marker: str) -> list[str]:
    """The processes whose environment holds MARKER (the fake NVML's folder, on LD_LIBRARY_PATH)."""
    found = []
    for entry in os.listdir("/proc"):
        try:
            with open(f"/proc/{entry}/environ", "rb") as handle:
                if marker.encode() in handle.read():
                    found.append(entry)
        except OSError:
            continue
    return found


def test_check_starts_nvml_before_its_command_line_is_read_and_a_usage_error_stops_it(tmp_path: Path) -> None:
    # check's NVML child starts before the parser's and the command's modules load (entry.main), and `ldconfig -p`
    # (the loader's cache: the first answer check waits for) is asked for beside it, with the batch child that waits
    # for the cuDNN copies' jobs; a command line the parser refuses ends the command with those children stopped
    # (ldconfig's perhaps before its batch started it), and nothing else started
    events = _events(tmp_path, "check", "--no-such-option")
    started = [e for e in events if e.startswith("start ")]
    assert started[0] == "start _job_child.py _probe_jobs nvml", events
    assert set(started[1:]) <= {"start ldconfig", "start _job_child.py _probe_jobs stdin"}, events
    assert len(started[1:]) == len(set(started[1:])), events
    assert events.index("start _job_child.py _probe_jobs nvml") < events.index("import cudnn_doctor.cli")
    assert not _left_running(str(tmp_path / "nvml"))


def test_other_commands_start_nothing_before_their_command_line_is_read(tmp_path: Path) -> None:
    for argv in (["compat", "--no-such-option"], ["fix", "--no-such-option"], ["--version"]):
        events = _events(tmp_path, *argv)
        assert not [e for e in events if e.startswith("start ")], (argv, events)


def test_check_takes_the_early_child_where_its_options_leave_the_context_the_same(tmp_path: Path) -> None:
    events = _events(tmp_path, "check", "--json", "--search-path", str(tmp_path))
    assert sum(e.startswith("start _job_child.py _probe_jobs nvml") for e in events) == 1
    ldconfig = shutil.which("ldconfig") or os.path.exists("/sbin/ldconfig")
    assert sum(e == "start ldconfig" for e in events) == (1 if ldconfig else 0)  # the early one taken, not run twice


def test_a_wrong_probe_timeout_is_the_commands_usage_error_not_the_early_childs(tmp_path: Path) -> None:
    # the early start reads CUDNN_DOCTOR_PROBE_TIMEOUT before the command's error handling is in place: a value it
    # cannot read starts nothing early, and check says what is wrong in its one line (exit 2), no traceback
    folder = fake_nvml(tmp_path / "nvml").parent
    for value in ("x" * 5000, "\udcf5u\x1c?", "-1"):
        env = {**os.environ, "LD_LIBRARY_PATH": str(folder), "CUDNN_DOCTOR_PROBE_TIMEOUT": value,
               "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
        done = subprocess.run([sys.executable, "-c", "import sys; sys.argv = ['cudnn-doctor', 'check', '--json']; "
                               "from cudnn_doctor.entry import main; main()"], capture_output=True, text=True,
                              env=env, cwd=tmp_path, timeout=120)
        assert "Traceback" not in done.stderr and done.returncode == 2, (value[:20], done.stderr[-500:])
        assert "CUDNN_DOCTOR_PROBE_TIMEOUT" in done.stdout + done.stderr


WAITS = RECORD.replace("sys.addaudithook(hook)", '''def waits(event, args):  # the command's own thread waiting for a batch's answers
    child = sys.modules.get("cudnn_doctor.child")
    if child is None or not hasattr(child, "ChildBatch") or getattr(child.ChildBatch, "wrapped", False):
        return
    answers = child.ChildBatch.answers
    def _answers(self):
        words = [" ".join(str(x).rsplit("/", 1)[-1] for x in r.argv[1:] if not str(x).startswith("-"))[:40]
                 for r in self.requests]
        events.append("wait for " + ", ".join(words))
        events.extend("loaded " + name for name in sorted(sys.modules) if name.startswith("cudnn_doctor."))
        return answers(self)
    child.ChildBatch.answers, child.ChildBatch.wrapped = _answers, True
sys.addaudithook(hook)
sys.addaudithook(waits)''')


@pytest.mark.parametrize(("argv", "renderer"), [(("check",), "cudnn_doctor.render.text"),
                                                (("check", "--json"), "cudnn_doctor.render.report_json")])
def test_the_renderer_and_the_rules_load_before_nvmls_answer_is_waited_for(tmp_path: Path, argv: tuple[str, ...],
                                                                         renderer: str) -> None:
    # what judging and rendering the report import (the renderer, --require's grammar, the rules and the plan) is
    # imported while the children answer, before the command waits for NVML's answer (its longest on a GPU
    # machine), not after the last answer; the order is the command's own, whatever the machine's load
    folder = fake_nvml(tmp_path / "nvml").parent
    env = {**os.environ, "LD_LIBRARY_PATH": str(folder),
           "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    done = subprocess.run([sys.executable, "-c", WAITS, *argv], capture_output=True, text=True, env=env, cwd=tmp_path,
                          timeout=120)
    events = eval(next(x for x in done.stderr.splitlines() if x.startswith("EVENTS "))[7:])  # noqa: S307
    waited = next(i for i, e in enumerate(events) if e.startswith("wait for _job_child.py _probe_jobs nvml"))
    loaded = {event[7:] for event in events[waited + 1:] if event.startswith("loaded ")}
    for module in (renderer, "cudnn_doctor.rules.requirements", "cudnn_doctor.rules.cudnn", "cudnn_doctor.plan.planner"):
        assert module in loaded, (module, sorted(loaded))
    assert done.stdout.strip(), done.stderr[-800:]  # and the report is written as before


def test_each_formats_renderer_modules_exist() -> None:
    import importlib

    from cudnn_doctor.render.formats import FORMATS

    for name, answer in FORMATS.items():
        assert answer.modules, name  # every format names what it imports, so check loads it while it waits
        for module in answer.modules:
            importlib.import_module(module)


@pytest.mark.skipif(not (shutil.which("ldconfig") or os.path.exists("/sbin/ldconfig")), reason="no ldconfig here")
def test_the_entrys_ldconfig_is_taken_for_the_same_context_and_stopped_for_another(tmp_path: Path) -> None:
    # in-process: what start_nvml_early started is what check's helpers get where the context runs the same command
    # in the same environment; for another environment it is stopped and one is started for that context
    from cudnn_doctor.probes import loader
    from cudnn_doctor.probes.context import SearchContext

    env = {**os.environ, "LD_LIBRARY_PATH": str(tmp_path)}
    first = SearchContext.from_environment(env=env)
    loader._EARLY_LDCONFIG.clear()
    loader._EARLY_LDCONFIG.append(loader.StartedLdconfig(first, loader._ldconfig_request(first)))
    early = loader._EARLY_LDCONFIG[0].started
    assert early is not None
    taken = loader.start_ldconfig(SearchContext.from_environment(env=dict(env)))
    assert taken is early[1] and not loader._EARLY_LDCONFIG
    assert taken.answer(0).stdout.strip()  # it answered, as before
    loader._EARLY_LDCONFIG.append(loader.StartedLdconfig(first, loader._ldconfig_request(first)))
    other = loader._EARLY_LDCONFIG[0].started
    assert other is not None
    again = loader.start_ldconfig(SearchContext.from_environment(env={**env, "LD_LIBRARY_PATH": str(tmp_path / "x")}))
    assert again is not None and again is not other[1] and other[1]._stop.is_set()  # the early one stopped
    again.answers()


def test_the_copies_batch_child_starts_at_the_entry_and_takes_the_jobs_the_scan_names(tmp_path: Path) -> None:
    # on a machine where NVML may load, a batch child starts at the command's entry beside NVML's and waits; the
    # cuDNN copies the scan names go to it (no batch child is started after the scan), and each copy is answered
    from tests.fakes.build import fake_cudnn

    folder = fake_nvml(tmp_path / "nvml").parent
    first = fake_cudnn(tmp_path / "one", version=91400).parent
    second = fake_cudnn(tmp_path / "two", version=91900).parent
    env = {**os.environ, "LD_LIBRARY_PATH": f"{folder}:{first}:{second}",
           "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    env.pop("LD_PRELOAD", None)
    done = subprocess.run([sys.executable, "-c", RECORD, "check", "--json"], capture_output=True, text=True, env=env,
                          cwd=tmp_path, timeout=120)
    events = eval(next(x for x in done.stderr.splitlines() if x.startswith("EVENTS "))[7:])  # noqa: S307
    assert events.index("start _job_child.py _probe_jobs stdin") < events.index("import cudnn_doctor.cli"), events
    assert not [e for e in events if e.startswith("start _job_child.py _probe_jobs batch")], events
    import json

    versions = {c["library"]: c["version"] for c in json.loads(done.stdout)["cudnn"]}
    assert versions == {str(first / "libcudnn.so.9"): "9.14.0", str(second / "libcudnn.so.9"): "9.19.0"}, versions


def test_a_waiting_batch_child_that_ends_without_its_answer_is_asked_again_in_a_child_of_its_own(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # a waiting child that reads its jobs and ends without an answer (a library that took its stdin, a start that
    # failed): the copies are asked as before, in a batch child started for them; one that cannot be handed its jobs
    # (already stopped) is never asked
    from cudnn_doctor.child import ChildBatch, ChildRequest
    from cudnn_doctor.probes import library_jobs
    from tests.fakes.build import fake_cudnn

    copies = [fake_cudnn(tmp_path / name, version=version) for name, version in (("a", 91400), ("b", 91900))]
    jobs = [library_jobs.Job("cudnn", str(path)) for path in copies]
    env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
    def said(batch: library_jobs.ProbeBatch) -> dict[object, object]:
        return {job: (probe.loaded, probe.values.get("cudnnGetVersion")) for job, probe in batch.results().items()}

    expected = said(library_jobs.ProbeBatch(jobs, env=env))
    assert sorted(expected.values()) == [(True, 91400), (True, 91900)], expected
    silent = ChildBatch([ChildRequest((sys.executable, "-c", "import sys; sys.stdin.read()"), env, 20.0,
                                      answer_channel=True, stdin_later=True)])
    monkeypatch.setattr(library_jobs, "_takes", lambda waiting, requests: True)
    again = library_jobs.ProbeBatch(jobs, env=env, waiting=silent)
    assert said(again) == expected
    stopped = library_jobs.waiting_batch(env)
    assert stopped is not None
    stopped.stop()
    assert said(library_jobs.ProbeBatch(jobs, env=env, waiting=stopped)) == expected
