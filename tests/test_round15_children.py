"""Issue 45, round twelve: the doctor's own children are immune to the Python start-up variables that rewrite
sys.executable (PYTHONEXECUTABLE: CPython's path calculation takes it even under -I and -E), while the children that
stand for the user's program keep them and report what that program gets."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import Machine
from tests.test_process_env import gpu_machine
from tests.test_python_start import _real_venv_torch

REMOVED = "/opt/removed/python3.9/bin/python3.9"  # an interpreter that is not there


def test_under_minus_i_pythonexecutable_still_rewrites_sys_executable(tmp_path: Path) -> None:
    """The fact the immunity rests on, asked of this CPython: -I (and -E) do not stop PYTHONEXECUTABLE."""
    env = {"PATH": os.environ.get("PATH", ""), "PYTHONEXECUTABLE": REMOVED}
    said = subprocess.run([sys.executable, "-I", "-S", "-c", "import sys; print(sys.executable)"], env=env,
                          capture_output=True, text=True, timeout=60)
    assert said.stdout.strip() == REMOVED, said.stdout + said.stderr


def test_own_python_is_the_interpreter_the_kernel_started(tmp_path: Path) -> None:
    """own_python() in a doctor started with PYTHONEXECUTABLE names the program that runs, not the variable's path."""
    env = {"PATH": os.environ.get("PATH", ""), "PYTHONEXECUTABLE": REMOVED,
           "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    code = "import sys; from cudnn_doctor.child import own_python; print(sys.executable); print(own_python())"
    said = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60,
                          cwd=str(Path(__file__).resolve().parents[1]))
    rewritten, own = said.stdout.split()
    assert rewritten == REMOVED and os.path.samefile(own, sys.executable) and own == sys.executable, said.stderr


def test_a_removed_pythonexecutable_names_the_variable_and_nothing_else(machine_process: Machine, tmp_path: Path) -> None:
    """Round eleven's s11-python-executable: a PYTHONEXECUTABLE naming a removed interpreter made every child of the
    doctor's own fail to start (sys.executable is that path), read as NVML, the CUDA runtime and cuDNN failing
    (CD104, CD203, CD307). Now only the variable is named, seen: the venv's python3 loses torch with it."""
    machine = machine_process  # the doctor a process of its own, started with the variable
    _real_venv_torch(machine, tmp_path)
    gpu_machine(machine, tmp_path, gpus=1)
    machine.env["PYTHONEXECUTABLE"] = REMOVED
    # the doctor's own dependencies from this venv's site-packages: it is started as another Python too
    machine.env["PYTHONPATH"] = os.pathsep.join([machine.env["PYTHONPATH"], *[p for p in sys.path if "site-packages"
                                                                               in p]])
    report = machine.check_json()
    errors = [f for f in report["findings"] if f["severity"] == "error"]
    assert errors and all(f["subject"] == "PYTHONEXECUTABLE" for f in errors), errors
    assert errors[0]["evidence"] == "seen" and "import torch" in errors[0]["proof"], errors[0]
