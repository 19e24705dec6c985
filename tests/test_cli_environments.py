"""The environments users really have: a project's ./.venv that is not activated, CUDNN_PATH, and
`check --python PATH` for another interpreter's packages (issue 16, item 7)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import Machine, codes
from tests.fakes.build import fake_cudnn
from tests.test_check import CUDNN9_SUBLIBS, write_header


@pytest.fixture
def machine(machine_in_process: Machine) -> Machine:
    """The CLI runs in the test's own process (conftest.run_in_process): nothing here needs a process of its own."""
    return machine_in_process


def make_venv(folder: Path) -> Path:
    """A real virtual environment (python -m venv) holding the nvidia-cudnn-cu13 wheel's layout."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(folder)], check=True, capture_output=True)
    site = next(folder.glob("lib/python3*/site-packages"))
    fake_cudnn(site / "nvidia" / "cudnn" / "lib", version=91900, cudart=13010, sublibraries=CUDNN9_SUBLIBS,
               versioned_files=False)
    write_header(site / "nvidia" / "cudnn" / "include", "9.19.0")
    (site / "nvidia_cudnn_cu13-9.19.0.56.dist-info").mkdir()
    return folder / "bin" / "python"


def report_of(machine: Machine, *args: str) -> dict:
    result = machine.run("check", "--json", *args)
    data = json.loads(result.stdout)
    assert "summary" in data, (data, result.stderr)
    return data


def pip_copies(report: dict) -> list[dict]:
    return [i for i in report["cudnn"] if i["source"] == "pip:nvidia-cudnn-cu13"]


def test_a_projects_venv_and_python_option(machine: Machine, tmp_path: Path) -> None:
    project = tmp_path / "project"
    python = make_venv(project / ".venv")
    elsewhere = report_of(machine)  # run from tmp_path: the project's venv is not around
    assert pip_copies(elsewhere) == [] and "CD301" in codes(elsewhere)

    machine.cwd = project  # `cd project && cudnn-doctor check`, the venv not activated
    inside = report_of(machine)
    [copy] = pip_copies(inside)
    assert copy["version"] == "9.19.0" and copy["path"].startswith(str(project.resolve() / ".venv"))
    assert "CD301" not in codes(inside)

    machine.cwd = tmp_path
    asked = report_of(machine, "--python", str(python))  # that interpreter's packages, asked of it
    [copy] = pip_copies(asked)
    assert copy["version"] == "9.19.0"
    for folder in (project / ".venv", "project/.venv"):  # the environment's folder, as pip and uv take it
        [copy] = pip_copies(report_of(machine, "--python", str(folder)))
        assert copy["version"] == "9.19.0"


def test_python_option_refuses_what_is_not_a_working_interpreter(machine: Machine, tmp_path: Path) -> None:
    missing = machine.run("check", "--python", str(tmp_path / "nowhere" / "python"))
    assert missing.exit_code == 2 and f"{tmp_path / 'nowhere' / 'python'}: no such file" in missing.stderr
    assert missing.stderr.count("\n") == 1
    (tmp_path / "not-an-env").mkdir()
    folder = machine.run("check", "--python", str(tmp_path / "not-an-env"))
    assert folder.exit_code == 2 and "a folder without bin/python, so not a Python environment" in folder.stderr
    liar = tmp_path / "liar"
    liar.write_text("#!/bin/sh\necho 'this is not python'\n")
    liar.chmod(0o755)
    answer = machine.run("check", "--json", "--python", str(liar))
    assert answer.exit_code == 2 and answer.json["error"]["message"].startswith(f"--python {liar}: not a Python")
    sleeper = tmp_path / "sleeper"  # hangs, and leaves a child behind that keeps the output open
    sleeper.write_text("#!/bin/sh\nsleep 60 &\nsleep 60\n")
    sleeper.chmod(0o755)
    machine.env["CUDNN_DOCTOR_PROBE_TIMEOUT"] = "1"
    hung = machine.run("check", "--python", str(sleeper), timeout=20)
    assert hung.exit_code == 2 and "did not answer within 1 s" in hung.stderr
    leftover = subprocess.run(["pgrep", "-f", f"^/bin/sh {sleeper}"], capture_output=True, text=True)
    assert leftover.stdout == ""


def test_cudnn_path_is_honoured(machine: Machine, tmp_path: Path) -> None:
    root = tmp_path / "TensorRT-deps" / "cudnn"  # CUDNN_PATH names a cuDNN root, as TensorRT's build reads it
    fake_cudnn(root / "lib", version=90100, cudart=12040, sublibraries=CUDNN9_SUBLIBS)
    write_header(root / "include", "9.1.0")
    assert report_of(machine)["cudnn"] == []
    machine.env["CUDNN_PATH"] = str(root)
    [copy] = report_of(machine)["cudnn"]
    assert copy["source"] == "CUDNN_PATH" and copy["version"] == "9.1.0"
    assert copy["path"] == str(root / "lib")
