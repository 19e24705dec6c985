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
    import rich

    site = Path(rich.__file__).resolve().parents[1]
    numpy_site = Path(numpy.__file__).resolve().parents[1]
    farm = tmp_path / "site-without-numpy"
    if farm.is_dir():
        return farm
    farm.mkdir()
    for entry in site.iterdir():
        if not entry.name.lower().startswith(("numpy", "cudnn_doctor", "_editable")) and not entry.name.endswith(".pth"):
            (farm / entry.name).symlink_to(entry)
    assert numpy_site == site  # the same environment: leaving NumPy out of the farm really leaves it out
    return farm


def _without_numpy(machine: Machine, tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    tmp_path.mkdir(exist_ok=True)
    env = {**machine.env, "PYTHONPATH": f"{ROOT}{os.pathsep}{python_without_numpy(tmp_path)}"}
    return subprocess.run([sys.executable, "-S", "-m", "cudnn_doctor", *args], env=env, cwd=machine.cwd,
                          capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)


def test_numpy_is_a_dependency_so_the_readme_install_line_brings_it() -> None:
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert any(dependency.split(">")[0].strip() == "numpy" for dependency in project["dependencies"])
    assert "python3 -m pip install . && cudnn-doctor check" in (ROOT / "README.md").read_text()


def test_check_never_imports_numpy(machine: Machine) -> None:
    result = subprocess.run([sys.executable, "-X", "importtime", "-m", "cudnn_doctor", "check", "--json"],
                            env=machine.env, cwd=machine.cwd, capture_output=True, text=True, timeout=60)
    assert '"schema": "cudnn-doctor/report/1"' in result.stdout
    imported = [line.rsplit("|", 1)[-1].strip() for line in result.stderr.splitlines() if line.startswith("import time:")]
    assert "cudnn_doctor.commands.check" in imported and not [name for name in imported if name.split(".")[0] == "numpy"]


def test_bench_without_a_gpu_says_so_first_even_where_numpy_is_missing(machine: Machine, tmp_path: Path) -> None:
    def without(*args: str) -> tuple[int, str, str]:
        result = _without_numpy(machine, tmp_path, *args)
        return result.returncode, result.stdout, result.stderr

    def with_numpy(*args: str) -> tuple[int, str, str]:
        result = machine.run(*args)
        return result.exit_code, result.stdout, result.stderr

    for run in (without, with_numpy):
        code, stdout, _ = run("bench", "--json")
        data = json.loads(stdout)
        assert code == 1 and [f["code"] for f in data["findings"]] == ["CD601"] and data["summary"]["exit_code"] == 1
        code, stdout, stderr = run("bench")
        assert code == 1 and "CD601" in stdout and "NumPy" not in stdout + stderr


def test_bench_with_a_gpu_but_a_python_without_numpy_names_this_python(machine: Machine, tmp_path: Path) -> None:
    for args in (["bench", *fakes()], ["bench", "--json", *fakes()]):
        result = _without_numpy(machine, tmp_path / str(len(args)), *args)
        assert result.returncode == 2, result.stderr
        assert "Traceback" not in result.stderr and "CD606" not in result.stdout + result.stderr
        assert "bench needs NumPy" in result.stderr and "nothing was run on the GPU" in result.stderr
        fix = f"{sys.executable} -m pip install 'numpy>=1.24'"
        assert fix in result.stderr and "cudnn-doctor[bench]" not in result.stderr
        if "--json" in args:
            assert json.loads(result.stdout)["error"]["fix"] == fix


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
