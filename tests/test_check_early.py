"""NVML's child starts before the command line is read (probes/early.py, issue 25): it runs beside the
imports of typer and of the doctor instead of after them, it is the one child NVML gets, commands that
collect no report start none, and a signal while the modules load still takes it down.

The order is read from Python's audit events in the doctor's own process (`subprocess.Popen`, `import`),
not from timings: the same on a loaded 2-core CI machine as on a quiet one."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import Machine
from tests.fakes.build import fake_nvml

# Runs `python -m cudnn_doctor ARGS...` as the user's shell would, with an audit hook that writes, in order,
# each child the process starts (its argv) and each module it imports, to the file named by argv[1].
# With SIGNAL_AT_IMPORT=MODULE:PID_FILE set, the import of MODULE waits until the fake NVML has written its
# pid (the early child is inside nvmlInit) and then sends the process SIGTERM: a signal while the modules load.
AUDITED = r"""
import os, runpy, signal, sys, time
log = open(sys.argv[1], "w", buffering=1)
signal_at, _, pid_file = os.environ.get("SIGNAL_AT_IMPORT", "").partition(":")
def hook(event, args):
    if event == "subprocess.Popen":
        log.write("popen " + " ".join(map(str, args[1])) + "\n")
    elif event == "import":
        log.write("import " + args[0] + "\n")
        if pid_file and args[0] == signal_at:
            for _ in range(400):
                if os.path.exists(pid_file) and open(pid_file).read().strip():
                    break
                time.sleep(0.05)
            os.kill(os.getpid(), signal.SIGTERM)
sys.addaudithook(hook)
sys.argv = ["cudnn-doctor", *sys.argv[2:]]
runpy.run_module("cudnn_doctor", run_name="__main__", alter_sys=True)
"""


def audited(machine: Machine, tmp_path: Path, *args: str, env: dict[str, str] | None = None) -> tuple[
        subprocess.CompletedProcess[str], list[str]]:
    log = tmp_path / "events.log"
    process = subprocess.run([sys.executable, "-c", AUDITED, str(log), *args], capture_output=True, text=True,
                             env={**machine.env, **(env or {})}, cwd=machine.cwd, stdin=subprocess.DEVNULL,
                             timeout=120)
    return process, log.read_text().splitlines()


def nvml_children(events: list[str]) -> list[int]:
    return [index for index, event in enumerate(events)
            if event.startswith("popen ") and "_probe_child.py nvml" in event]


def test_nvml_child_starts_before_the_model_is_imported_and_is_the_only_one(machine: Machine,
                                                                           tmp_path: Path) -> None:
    pids = tmp_path / "nvml-pids"
    fake_nvml(tmp_path / "driver", driver="570.86.15", pid_file=pids)
    machine.add_library_path(tmp_path / "driver")
    process, events = audited(machine, tmp_path, "check", "--json")
    report = json.loads(process.stdout)
    assert report["driver"]["version"] == "570.86.15" and report["driver"]["source"] == "nvml"
    started = nvml_children(events)
    assert len(started) == 1, events  # taken over by collect_report, not started a second time
    assert len(pids.read_text().split()) == 1
    imported = [event.split()[1] for event in events if event.startswith("import ")]
    # a plain check line is read without typer (check_line.py); an import event comes as the import begins
    assert "typer" not in imported and "cudnn_doctor.cli" not in imported
    assert started[0] < events.index("import cudnn_doctor.model") < events.index("import cudnn_doctor.probes.collect")


def test_the_commands_that_collect_no_report_start_no_nvml_child(machine: Machine, tmp_path: Path) -> None:
    pids = tmp_path / "nvml-pids"
    fake_nvml(tmp_path / "driver", pid_file=pids)
    machine.add_library_path(tmp_path / "driver")
    for args in (("explain", "--offline-only", "CUDNN_STATUS_NOT_INITIALIZED"), ("explain", "CD301"),
                 ("compat", "torch==2.5.1"), ("check", "--help"), ("--version",)):
        process, events = audited(machine, tmp_path, *args)
        assert process.returncode == 0, (args, process.stderr)
        assert not nvml_children(events), args
    assert not pids.exists()


def test_explain_of_a_message_takes_the_early_child_for_its_readings(machine: Machine, tmp_path: Path) -> None:
    pids = tmp_path / "nvml-pids"
    fake_nvml(tmp_path / "driver", pid_file=pids)
    machine.add_library_path(tmp_path / "driver")
    process, events = audited(machine, tmp_path, "explain", "CUDNN_STATUS_NOT_INITIALIZED")
    assert process.returncode == 0, process.stderr
    assert len(nvml_children(events)) == 1 and nvml_children(events)[0] < events.index("import typer")
    assert len(pids.read_text().split()) == 1


def test_without_libnvidia_ml_no_child_is_started_for_it(machine: Machine, tmp_path: Path) -> None:
    process, events = audited(machine, tmp_path, "check", "--json")
    assert json.loads(process.stdout)["driver"]["error"] == "NVML Shared Library Not Found"
    assert not nvml_children(events)


def test_an_early_child_the_check_does_not_want_is_stopped_not_read(machine: Machine, tmp_path: Path) -> None:
    """The environment the check runs with differs from the one the early child got (here the probe's time
    allowed): the early child is stopped and the check's own NVML child answers."""
    pids = tmp_path / "nvml-pids"
    fake_nvml(tmp_path / "driver", driver="570.86.15", pid_file=pids)
    machine.add_library_path(tmp_path / "driver")
    script = (AUDITED.replace('runpy.run_module', 'import cudnn_doctor.probes.early as early\n'
                              'original = early.start\n'
                              'def start(argv):\n'
                              '    original(argv)\n'
                              '    os.environ["CUDNN_DOCTOR_PROBE_TIMEOUT"] = "11"\n'
                              'early.start = start\n'
                              'runpy.run_module'))
    log = tmp_path / "events.log"
    process = subprocess.run([sys.executable, "-c", script, str(log), "check", "--json"], capture_output=True,
                             text=True, env=machine.env, cwd=machine.cwd, stdin=subprocess.DEVNULL, timeout=120)
    report = json.loads(process.stdout)
    assert report["driver"]["version"] == "570.86.15"
    assert len(nvml_children(log.read_text().splitlines())) == 2


@pytest.mark.parametrize(("args", "module", "not_yet"), [
    (("check", "--json"), "cudnn_doctor.model", "cudnn_doctor.probes.collect"),  # without typer
    (("explain", "CUDNN_STATUS_NOT_INITIALIZED"), "typer", "cudnn_doctor.commands.explain"),  # through typer
])
def test_sigterm_while_the_modules_load_ends_the_command_and_its_early_child(machine: Machine, tmp_path: Path,
                                                                             args: tuple[str, ...], module: str,
                                                                             not_yet: str) -> None:
    pids = tmp_path / "nvml-pids"
    fake_nvml(tmp_path / "driver", pid_file=pids, init_sleep_ms=60_000)
    machine.add_library_path(tmp_path / "driver")
    started = time.monotonic()
    process, events = audited(machine, tmp_path, *args, env={"SIGNAL_AT_IMPORT": f"{module}:{pids}"})
    assert process.returncode == 143, process.stderr
    assert "Traceback" not in process.stderr
    assert time.monotonic() - started < 30  # not the 60 s the child would sleep, nor the probe's deadline
    assert f"import {module}" in events and f"import {not_yet}" not in events  # while MODULE loaded
    (pid,) = map(int, pids.read_text().split())
    assert not running(pid)


def running(pid: int) -> bool:
    """Whether PID is a live process (a zombie waiting for its parent is not)."""
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False
    except OSError:
        return os.path.exists(f"/proc/{pid}")

