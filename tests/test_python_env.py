"""The doctor's own Python under the variables a CI runner or a user sets for their programs (issue 43): the same
answer as without them, no warning, no traceback, never a prompt left waiting. A seeded generated family
(tests/python_env.py): the settings that broke the doctor once each, a seeded sample of combinations
(CUDNN_DOCTOR_TEST_SEED picks another), and all of it in benchmarks/hostile_own.py."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.python_env import SETTINGS, Case, Family, sample

pytestmark = pytest.mark.subprocess

SEED = int(os.environ.get("CUDNN_DOCTOR_TEST_SEED", "43"))


@pytest.fixture(scope="module")
def family(tmp_path_factory: pytest.TempPathFactory) -> Family:
    return Family(tmp_path_factory.mktemp("python-env"))


@pytest.mark.parametrize("case", [
    Case((("PYTHONINSPECT", "1"),), "check"),  # a traceback of SystemExit, then Python's prompt waiting on stdin
    Case((("PYTHONINSPECT", "1"),), "explain-json"),
    Case((("PYTHONINSPECT", "1"), ("PYTHONWARNINGS", "error")), "compat"),
    Case((("PYTHONTRACEMALLOC", "25"),), "explain"),  # 40 s: every allocation of the doctor traced
    Case((("PYTHONSTARTUP", "{work}/startup.py"), ("PYTHONINSPECT", "1")), "bench-help"),
], ids=lambda case: case.name)
def test_settings_that_broke_the_doctor(family: Family, case: Case) -> None:
    assert family.run_case(case) == []


@pytest.mark.parametrize("index", range(10))
def test_a_seeded_sample_of_the_family(family: Family, index: int) -> None:
    case = sample(SEED, 10)[index]
    assert family.run_case(case) == [], case.name


def test_the_family_holds_every_variable_the_issue_names() -> None:
    names = {name for name, _ in SETTINGS}
    assert {"PYTHONWARNINGS", "PYTHONDEVMODE", "PYTHONOPTIMIZE", "PYTHONHASHSEED", "PYTHONUTF8", "PYTHONIOENCODING",
            "PYTHONMALLOC", "PYTHONTRACEMALLOC", "PYTHONNODEBUGRANGES", "PYTHONSAFEPATH", "PYTHONNOUSERSITE",
            "PYTHONDONTWRITEBYTECODE", "PYTHONINSPECT", "PYTHONSTARTUP"} <= names
    values = {value for name, value in SETTINGS if name == "PYTHONWARNINGS"}
    assert {"error", "error::DeprecationWarning", "error::ResourceWarning"} <= values
    assert Path(__file__).with_name("python_env.py").exists()


@pytest.mark.parametrize("settings", [{"PYTHONWARNINGS": "error"},
                                      {"PYTHONDEVMODE": "1", "PYTHONWARNINGS": "error::ResourceWarning"}],
                         ids=["warnings-error", "dev-resource-error"])
def test_an_install_plan_from_an_archive_leaves_no_file_to_the_collector(family: Family, settings: dict[str, str],
                                                                          tmp_path: Path) -> None:
    """`install --from ARCHIVE --dry-run` reads the loader's configuration (/etc/ld.so.conf and what it includes): each
    file was opened and left to the garbage collector, a ResourceWarning that PYTHONWARNINGS=error (a CI job's
    setting) turned into a traceback per file on stderr (round ten's red-team, pyflags install)."""
    import subprocess
    import sys

    from tests.damaged_data import machine_env
    from tests.install_helpers import make_archive
    from tests.python_env import ROOT

    archive = make_archive("txz", tmp_path, version=91900, cudart=12040, cuda=12)
    env = {**machine_env(family.work, ROOT, tmp_path / "cache"), **settings}
    done = subprocess.run([sys.executable, "-m", "cudnn_doctor", "install", "--from", str(archive), "--prefix",
                           str(tmp_path / "prefix"), "--dry-run", "--json"], env=env, cwd=tmp_path, capture_output=True,
                          text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert done.returncode == 0 and done.stdout.startswith("{"), done.stderr
    assert "Traceback" not in done.stderr and "ResourceWarning" not in done.stderr, done.stderr
