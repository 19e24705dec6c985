"""A doctor started with SIGINT ignored starts its children with SIGINT ignored, as its shell starts every program
(issue 45, round nineteen; round eighteen's known gap). A background job of a shell without job control, `nohup`-like
launchers and CI runners start programs with SIGINT ignored, and exec keeps an ignored signal ignored. The doctor
handles SIGINT itself (signals.py: every command ends on it the same way), and a handled signal is reset to its
default at exec: its children had SIGINT at its default where every program there ignores it, the one bit of
tests/test_child_parity.py's comparison it masked. The judge is tests/fakes/parity_report.c, preloaded: each process
writes the signals it holds ignored (/proc/self/status SigIgn) before any code of its own runs. The doctor still ends
on SIGINT (130) as before, and reports the shell's ignored SIGINT (process.shell.ignored)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import Machine
from tests.fakes.build import compile_library, fake_libcuda, fake_nvml
from tests.test_cli_signals import hanging_library, start, wait_for_children
from tests.test_probes_hostile import marked, survivors

pytestmark = pytest.mark.subprocess

SIGINT_BIT = 1 << (signal.SIGINT - 1)


def _judged(machine: Machine, tmp_path: Path) -> Path:
    """A driver (so check starts its NVML and CUDA children) and the judge preloaded into every process."""
    fake_nvml(tmp_path / "driver", driver="580.65.06", cuda=13000)
    fake_libcuda(tmp_path / "driver", driver_cuda=13000, devices=1)
    machine.add_library_path(tmp_path / "driver")
    report = tmp_path / "report.jsonl"
    machine.env.update({"LD_PRELOAD": str(compile_library("parity_report.c", "libparity.so")),
                        "PARITY_REPORT": str(report), "PARITY_NAMES": "HOME"})
    return report


def _check(machine: Machine, ignored: bool) -> subprocess.CompletedProcess[str]:
    trap = "trap '' INT; " if ignored else "trap - INT; "
    line = trap + "exec " + " ".join([sys.executable, "-m", "cudnn_doctor", "check", "--json"])
    return subprocess.run(["bash", "-c", line], env=machine.env, cwd=machine.cwd, capture_output=True, text=True,
                          timeout=120, stdin=subprocess.DEVNULL,
                          preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))


def _processes(report: Path) -> list[dict]:
    return [json.loads(line) for line in report.read_text().splitlines()]


def test_children_of_a_doctor_started_with_sigint_ignored_ignore_it(machine: Machine, tmp_path: Path) -> None:
    report = _judged(machine, tmp_path)
    done = _check(machine, ignored=True)
    assert "Traceback" not in done.stderr, done.stderr
    seen = _processes(report)
    doctor = [p for p in seen if "cudnn_doctor" in " ".join(p["argv"]) and "check" in p["argv"]]
    children = [p for p in seen if p not in doctor and p["argv"][:1] != ["bash"]]  # bash: the shell itself
    assert doctor and int(doctor[0]["SigIgn"], 16) & SIGINT_BIT, doctor  # what the shell handed it
    assert len(children) >= 2, [p["argv"] for p in seen]  # NVML's child and CUDA's (LD_PRELOAD is set), at least
    for child in children:
        assert int(child["SigIgn"], 16) & SIGINT_BIT, (child["argv"], child["SigIgn"])
    assert "SIGINT" in json.loads(done.stdout)["process"]["shell"]["ignored"].split(",")


def test_children_of_a_doctor_started_with_sigint_at_its_default_keep_the_default(machine: Machine,
                                                                                tmp_path: Path) -> None:
    report = _judged(machine, tmp_path)
    done = _check(machine, ignored=False)
    assert "Traceback" not in done.stderr, done.stderr
    seen = _processes(report)
    assert len(seen) >= 4, [p["argv"] for p in seen]  # bash, the doctor, NVML's child and CUDA's at least
    for process in seen:
        assert not int(process["SigIgn"], 16) & SIGINT_BIT, (process["argv"], process["SigIgn"])
    assert "SIGINT" not in json.loads(done.stdout)["process"]["shell"]["ignored"].split(",")


def _shell_ignoring_sigint() -> None:
    """The command as a background job of a shell without job control starts it: SIGINT ignored (SIGHUP at its
    default, as test_cli_signals' terminal)."""
    signal.signal(signal.SIGHUP, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def test_a_doctor_started_with_sigint_ignored_still_ends_on_sigint(machine: Machine, tmp_path: Path) -> None:
    """The doctor's own handling is as before: a SIGINT sent to it while its child hangs (and ignores SIGINT, as the
    shell's programs do) ends the command with 130, every child it started gone."""
    mark = marked(machine)
    machine.add_library_path(hanging_library(machine, tmp_path).parent)
    process = start(machine, "check", "--json", started=_shell_ignoring_sigint)
    try:
        wait_for_children(process, mark)
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=60)  # the children would hang for 300 s
    finally:
        if process.poll() is None:
            process.kill()
        for pid in survivors(mark):
            os.kill(pid, signal.SIGKILL)
    assert process.returncode == 130, err[-2000:]
    assert survivors(mark) == [] and "Traceback" not in err
    assert json.loads(out)["error"]["title"] == "Interrupted"
