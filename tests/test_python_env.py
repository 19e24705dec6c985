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
