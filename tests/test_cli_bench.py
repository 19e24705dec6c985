"""`bench` as a new user meets it (issue 16, item 5): without NumPy it names the missing optional dependency
and its fix before any GPU work; on a terminal it shows which workload runs, and nothing when piped or --json."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import ROOT, Machine
from tests.test_bench_cli import fakes
from tests.test_cli_terminal import run_in_terminal


def python_without_numpy(tmp_path: Path) -> Path:
    """A folder of this interpreter's installed packages, every one but NumPy (run with -S, only it counts)."""
    import numpy
    import typer

    site = Path(typer.__file__).resolve().parents[1]
    numpy_site = Path(numpy.__file__).resolve().parents[1]
    farm = tmp_path / "site-without-numpy"
    farm.mkdir()
    for entry in site.iterdir():
        if not entry.name.lower().startswith(("numpy", "cudnn_doctor", "_editable")) and not entry.name.endswith(".pth"):
            (farm / entry.name).symlink_to(entry)
    assert numpy_site == site  # the same environment: leaving NumPy out of the farm really leaves it out
    return farm


def test_bench_without_numpy_names_the_optional_dependency(machine: Machine, tmp_path: Path) -> None:
    farm = python_without_numpy(tmp_path)
    env = {**machine.env, "PYTHONPATH": f"{ROOT}{os.pathsep}{farm}"}
    gone = subprocess.run([sys.executable, "-S", "-c", "import numpy"], env=env, capture_output=True, text=True)
    assert "No module named 'numpy'" in gone.stderr
    for args in (["bench", *fakes()], ["bench", "--json"]):
        result = subprocess.run([sys.executable, "-S", "-m", "cudnn_doctor", *args], env=env, cwd=machine.cwd,
                                capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
        assert result.returncode == 2, result.stderr
        assert "Traceback" not in result.stderr and "CD606" not in result.stdout + result.stderr
        assert "bench needs NumPy" in result.stderr and "pip install 'cudnn-doctor[bench]'" in result.stderr
        assert "nothing was run on the GPU" in result.stderr
        if "--json" in args:
            assert json.loads(result.stdout)["error"]["fix"].startswith("pip install 'cudnn-doctor[bench]'")


def test_progress_on_a_terminal_only(machine: Machine) -> None:
    args = ("bench", "--size", "tiny", "--repeats", "2", "--workload", "conv", "--no-cpu", *fakes())
    code, screen = run_in_terminal(machine, *args, columns=120)
    assert code == 0, screen
    assert "GPU 0: conv-fwd, conv-bwd-data, conv-bwd-filter on the GPU" in screen
    assert "bench passed" in screen
    piped = machine.run(*args)
    assert piped.exit_code == 0 and "GPU 0: conv-fwd" not in piped.stdout + piped.stderr
    as_json = machine.run(*args, "--json")
    assert json.loads(as_json.stdout)["summary"]["exit_code"] == 0 and as_json.stderr == ""
