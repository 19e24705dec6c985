"""The CI sample of a red-team under benchmarks/ (redteam_r22.py and after: a table of cases, `run_cases`): its module
loaded from its file, a few of its quick cases chosen by a seed of the day, run, and none may break. One helper for
every test_hostile_rNN / signals test that keeps such a sample, where each had written the three steps again."""

from __future__ import annotations

import datetime
import importlib.util
import io
import json
import random
import sys
from collections.abc import Callable
from types import ModuleType
from typing import Any

from tests.conftest import ROOT


def load(name: str) -> ModuleType:
    """benchmarks/NAME.py as a module (its own imports of the red-teams beside it found)."""
    if str(ROOT / "benchmarks") not in sys.path:
        sys.path.insert(0, str(ROOT / "benchmarks"))
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, ROOT / "benchmarks" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def seeded(module: ModuleType, keep: Callable[[str, Any], bool], seed: int, count: int) -> dict[str, Any]:
    """COUNT cases of MODULE's table that KEEP(name, case) takes, chosen by SEED."""
    table = [(name, case) for name, case in module.cases().items() if keep(name, case)]
    return dict(random.Random(seed).sample(table, count))


def assert_holds(name: str, keep: Callable[[str, Any], bool], count: int) -> None:
    """COUNT cases of benchmarks/NAME.py, a seed of their own each day (over time the sample covers the table): none
    breaks; a failure names the seed and the cases, to be run again with `--only NAME`."""
    module = load(name)
    seed = int(datetime.date.today().strftime("%Y%m%d"))
    chosen = seeded(module, keep, seed, count)
    said = io.StringIO()
    tally = module.run_cases(chosen, out=said)
    broken = [case for _good, _total, names in tally.values() for case in names]
    assert not broken, (f"seed {seed}: rerun with python benchmarks/{name}.py --only NAME", said.getvalue(),
                        json.dumps(sorted(chosen)))


def run_one(module: ModuleType, name: str) -> None:
    """The case NAME of MODULE's table, run: it holds (a failure says what broke)."""
    said = io.StringIO()
    tally = module.run_cases({name: module.cases()[name]}, out=said)
    assert not [case for _good, _total, names in tally.values() for case in names], said.getvalue()
