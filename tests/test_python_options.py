"""Python's own run-time options (issue 45), judged from Python's documentation: the development mode and the
allocators' debug hooks slow every program (CD412, warnings), a bytecode folder Python cannot write in makes every
start compile again (CD417, a warning), PYTHONDONTWRITEBYTECODE is nothing; none is an error. The real interpreter
says what each does; the plan's lines, sourced in a real bash, clear each warning."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import Machine
from tests.test_process_env import check_after, plan_lines


def about(report: dict, variable: str) -> list[dict]:
    return [f for f in report["findings"] if f.get("subject") == variable]


@pytest.mark.parametrize(("variable", "value"), [("PYTHONDEVMODE", "1"), ("PYTHONDEVMODE", "yes"),
                                                 ("PYTHONMALLOC", "debug"), ("PYTHONMALLOC", "malloc_debug")])
def test_slow_modes_are_warnings_that_unset_them(machine: Machine, variable: str, value: str) -> None:
    flag = "dev_mode" if variable == "PYTHONDEVMODE" else None
    if flag:  # the real interpreter takes any non-empty value as the mode on
        said = subprocess.run([sys.executable, "-c", "import sys; print(sys.flags.dev_mode)"], capture_output=True,
                              text=True, env={variable: value}).stdout.strip()
        assert said == "True"
    machine.env[variable] = value
    report = machine.check_json()
    [slow] = about(report, variable)
    assert slow["code"] == "CD412" and slow["severity"] == "warning", slow
    lines = plan_lines(machine)
    assert f"unset {variable}" in lines, lines
    assert not about(check_after(machine, lines), variable)


@pytest.mark.parametrize(("variable", "value"), [("PYTHONMALLOC", "malloc"), ("PYTHONMALLOC", "pymalloc"),
                                                 ("PYTHONDONTWRITEBYTECODE", "1"), ("PYTHONDEVMODE", "")])
def test_values_that_change_nothing_worth_saying_are_no_finding(machine: Machine, variable: str, value: str) -> None:
    machine.env[variable] = value
    assert not about(machine.check_json(), variable)


def test_a_bytecode_folder_python_cannot_write_is_a_warning(machine: Machine, tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a folder\n")
    prefix = blocker / "pycache"
    # the real interpreter: it imports, writes nothing there, and does not fail
    done = subprocess.run([sys.executable, "-c", "import sys, json; print(sys.pycache_prefix)"], capture_output=True,
                          text=True, env={"PYTHONPYCACHEPREFIX": str(prefix)})
    assert done.returncode == 0 and done.stdout.strip() == str(prefix)
    machine.env["PYTHONPYCACHEPREFIX"] = str(prefix)
    report = machine.check_json()
    [unusable] = about(report, "PYTHONPYCACHEPREFIX")
    assert unusable["code"] == "CD417" and unusable["severity"] == "warning" and "not a folder" in unusable["detail"]
    after = check_after(machine, plan_lines(machine))
    assert not about(after, "PYTHONPYCACHEPREFIX")


def test_a_bytecode_folder_that_will_be_made_is_no_finding(machine: Machine, tmp_path: Path) -> None:
    machine.env["PYTHONPYCACHEPREFIX"] = str(tmp_path / "new" / "pycache")
    assert not about(machine.check_json(), "PYTHONPYCACHEPREFIX")


# --- CUDA's JIT cache in its default place, CUDA_CACHE_PATH unset (a few stats, no child) ---------------------------

def test_the_default_jit_cache_that_is_a_file_is_a_warning_naming_a_writable_place(machine: Machine,
                                                                                   tmp_path: Path) -> None:
    home = machine.home
    (home / ".nv").mkdir(parents=True)
    (home / ".nv" / "ComputeCache").write_text("a file where CUDA's JIT cache folder goes\n")
    machine.env.pop("CUDA_CACHE_PATH", None)
    machine.env.pop("XDG_CACHE_HOME", None)
    report = machine.check_json()
    [cache] = about(report, "CUDA_CACHE_PATH")
    assert cache["code"] == "CD417" and cache["severity"] == "warning" and "is not a folder" in cache["detail"]
    lines = plan_lines(machine)
    wanted = f"export CUDA_CACHE_PATH={home / '.cache' / 'nv' / 'ComputeCache'}"
    assert wanted in lines, lines
    assert not about(check_after(machine, lines), "CUDA_CACHE_PATH")


@pytest.mark.parametrize("disable", [None, "1"])
def test_the_default_jit_cache_that_is_usable_or_off_is_no_finding(machine: Machine, tmp_path: Path,
                                                                   disable: str | None) -> None:
    home = machine.home
    if disable:  # the cache is off: its place does not matter
        (home / ".nv").write_text("a file\n")
        machine.env["CUDA_CACHE_DISABLE"] = disable
    machine.env.pop("CUDA_CACHE_PATH", None)
    assert not about(machine.check_json(), "CUDA_CACHE_PATH")
