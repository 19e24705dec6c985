"""NVML's child, the longest wait of a check on a GPU machine (it opens the driver, as nvidia-smi does), starts as
soon as the command line is read and the search context known: before the probes', rules' and plan's modules are
imported, which load beside it. Nothing starts before the command line is read. Order read from audit events of
the real command (entry.main) on the gcc-built fake NVML."""

from __future__ import annotations

import os
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
        words = [str(a).rsplit("/", 1)[-1] for a in args[1][1:] if not str(a).startswith("-")]
        events.append("start " + " ".join(words[:2]))
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
    started = next(i for i, e in enumerate(events) if e.startswith("start _probe_child.py nvml"))
    for module in ("cudnn_doctor.model", "cudnn_doctor.probes.collect", "cudnn_doctor.probes.process_env",
                   "cudnn_doctor.rules.cudnn", "cudnn_doctor.plan.planner"):
        assert events.index(f"import {module}") > started, (module, events[:started + 1])
    assert sum(e.startswith("start _probe_child.py nvml") for e in events) == 1  # one NVML child, not two


def test_nothing_starts_before_the_command_line_is_read(tmp_path: Path) -> None:
    events = _events(tmp_path, "check", "--no-such-option")
    assert not [e for e in events if e.startswith("start ")], events
