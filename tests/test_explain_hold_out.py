"""EXPLAIN_HOLD_OUT keeps a published set out of every development run (round twenty-two, e31): a builder scores it
blind once at the end, so no tool built on explain_dev_sets.development_sets may read it meanwhile."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"


def _dev_sets_module():
    spec = importlib.util.spec_from_file_location("explain_dev_sets_e31", BENCHMARKS / "explain_dev_sets.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_hold_out_removes_only_the_sets_named(monkeypatch: pytest.MonkeyPatch) -> None:
    module = _dev_sets_module()
    monkeypatch.delenv("EXPLAIN_HOLD_OUT", raising=False)
    every = [module.set_name(path) for path in module.development_sets()]
    assert "round20" in every and "cases_2" in every
    monkeypatch.setenv("EXPLAIN_HOLD_OUT", "round20,cases_2")
    kept = [module.set_name(path) for path in module.development_sets()]
    assert "round20" not in kept and "cases_2" not in kept
    assert sorted(kept + ["round20", "cases_2"]) == sorted(every)


def test_hold_out_of_a_name_no_set_has_keeps_every_set(monkeypatch: pytest.MonkeyPatch) -> None:
    module = _dev_sets_module()
    monkeypatch.delenv("EXPLAIN_HOLD_OUT", raising=False)
    every = module.development_sets()
    monkeypatch.setenv("EXPLAIN_HOLD_OUT", "round2")  # a prefix of round20..round29 is not their name
    assert module.development_sets() == every
