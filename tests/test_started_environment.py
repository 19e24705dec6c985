"""The environment a program started here gets is the one the shell gave it: a sitecustomize on PYTHONPATH that sets
LD_LIBRARY_PATH inside Python (as the doctor, a Python program, runs it too) changes nothing for the loader of the
program that runs it, so check reads the loader's variables as this process was started with them
(/proc/self/environ); a variable CUDA reads after start (CUDA_VISIBLE_DEVICES at cuInit) is taken as the hook set it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.subprocess
ROOT = Path(__file__).resolve().parents[1]


def test_a_start_up_hook_that_sets_the_loaders_path_inside_python_changes_nothing(tmp_path: Path) -> None:
    hook, started_lib, elsewhere = tmp_path / "hook", tmp_path / "started" / "lib", tmp_path / "elsewhere"
    for folder in (hook, started_lib, elsewhere):
        folder.mkdir(parents=True)
    (hook / "sitecustomize.py").write_text(
        "import os\n"
        f"os.environ['LD_LIBRARY_PATH'] = {str(elsewhere)!r} + ':' + os.environ.get('LD_LIBRARY_PATH', '')\n"
        "os.environ['CUDA_VISIBLE_DEVICES'] = '7'\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(hook), str(ROOT)]), "LD_LIBRARY_PATH": str(started_lib)}
    env.pop("CUDA_VISIBLE_DEVICES", None)
    code = ("import cudnn_doctor; cudnn_doctor.COMMAND_PROCESS = True; "
            "from cudnn_doctor.probes.context import started_environment; import json, os; "
            "e = started_environment(); print(json.dumps([os.environ['LD_LIBRARY_PATH'], e.get('LD_LIBRARY_PATH'), "
            "e.get('CUDA_VISIBLE_DEVICES'), e.get('PYTHONPATH')]))")
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    inside, started, visible, python_path = json.loads(done.stdout)
    assert inside.startswith(str(elsewhere))  # the hook ran
    assert started == str(started_lib)  # what the loader of this program searched
    assert visible == "7"  # read by CUDA at cuInit, after the hook: as the hook set it
    assert python_path == env["PYTHONPATH"]
    report = subprocess.run([sys.executable, "-m", "cudnn_doctor", "check", "--json"], env=env, capture_output=True,
                            text=True, timeout=120, cwd=tmp_path)
    loader_path = json.loads(report.stdout)["loader_path"]
    assert str(started_lib) in loader_path and str(elsewhere) not in loader_path, loader_path
