"""benchmarks/gpu_scenarios.py's parts that need no GPU: the loader of --scenarios, issue 45's scoring, the
figures-only summary line."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _harness():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("gpu_scenarios_under_test", ROOT / "benchmarks" / "gpu_scenarios.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["gpu_scenarios_under_test"] = module
    spec.loader.exec_module(module)
    return module


def test_a_scenarios_file_is_loaded_with_the_harness_own_scenario_class(tmp_path: Path) -> None:
    harness = _harness()
    (tmp_path / "cases.py").write_text(
        "from gpu_scenarios import Scenario\n"
        "def build_scenarios(machine):\n"
        "    return [Scenario('one', 'why', ('CD113',), env={'X': machine['value']}, predicted='fails'),\n"
        "            Scenario('two', 'why', cause_class='words', cwd='/tmp')]\n")
    loaded = harness.load_scenarios(str(tmp_path / "cases.py"), {"value": "7"})
    assert [s.name for s in loaded] == ["one", "two"]
    assert isinstance(loaded[0], harness.Scenario) and loaded[0].env == {"X": "7"}
    assert loaded[1].cause_class == "words" and harness.scenario_cwd(loaded[1]) == "/tmp"


@pytest.mark.parametrize("text, words", [
    ("x = 1\n", "defines no build_scenarios"),
    ("from gpu_scenarios import Scenario\ndef build_scenarios(m):\n    return [Scenario('a', ''), Scenario('a', '')]\n",
     "used twice"),
])
def test_a_scenarios_file_without_builder_or_with_a_name_twice_is_refused(tmp_path: Path, text: str,
                                                                          words: str) -> None:
    harness = _harness()
    (tmp_path / "cases.py").write_text(text)
    with pytest.raises(SystemExit, match=words):
        harness.load_scenarios(str(tmp_path / "cases.py"), {})


def test_plain_check_names_by_warning_deep_only_by_error_and_working_setups_need_no_error() -> None:
    harness = _harness()
    scenario = harness.Scenario("s", "why", ("CD305",))
    failing = harness.Outcome("s", fails=True, codes=["CD101"], warnings=["CD305"], deep_warnings=["CD305"])
    assert harness.verdicts(scenario, failing, True) == ("named", "MISSED")
    failing.deep_codes = ["CD305"]
    assert harness.verdicts(scenario, failing, True) == ("named", "named")
    working = harness.Outcome("s", fails=False, warnings=["CD305"], deep_codes=["CD415"])
    assert harness.verdicts(scenario, working, True) == ("clean", "FALSE ERROR")
    unmapped = harness.Outcome("u", fails=True, codes=["CD305"])
    assert harness.verdicts(harness.Scenario("u", "why"), unmapped, False) == ("unmapped", "-")


def test_the_plan_own_verification_marks_are_read_whatever_their_form() -> None:
    harness = _harness()
    assert harness.is_verified(harness.verified_mark({"verified": True}))
    assert harness.is_verified(harness.verified_mark({"verification": "verified here"}))
    assert not harness.is_verified(harness.verified_mark({"verification": "not verified: needs root"}))
    assert harness.verified_mark({"kind": "env"}) is None


def test_the_summary_line_names_no_scenario() -> None:
    harness = _harness()
    scenarios = [harness.Scenario("secret-name-a", "why", ("CD1",), predicted="fails"),
                 harness.Scenario("secret-name-b", "why", predicted="works")]
    outcomes = [harness.Outcome("secret-name-a", fails=True, codes=["CD1"], verdict="named", deep_verdict="named",
                                fixed=True, plan_verified=True),
                harness.Outcome("secret-name-b", verdict="clean", deep_verdict="clean")]
    score = harness.summarise(scenarios, outcomes)
    score["wall_s"] = 1.0
    line = harness.summary_line(score)
    assert "secret-name" not in line
    assert score["named"] == 1 and score["verified_and_cured"] == 1 and score["prediction_right"] == 2
    assert "check named 1 of 1" in line and "cured 1 of 1" in line


def test_the_plan_runs_only_where_pip_can_have_every_package_it_installs(tmp_path: Path) -> None:
    """As `fix --yes` does: each pip install tried with --dry-run first (the real pip, offline), and where one cannot
    be had no step runs. Round fourteen's harness ran `pip uninstall onnxruntime -y`, then an install that failed
    offline: the GPU machine's own package was gone for the rest of the run and the next runs."""
    harness = _harness()
    scenario = harness.Scenario("offline", "why")
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "PIP_NO_INDEX": "1", "PIP_FIND_LINKS": str(tmp_path),
           "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    pip = [sys.executable, "-m", "pip"]
    uninstall = {"kind": "pip", "argv": [*pip, "uninstall", "onnxruntime", "-y"]}
    install = {"kind": "pip", "argv": [*pip, "install", "onnxruntime-gpu==1.30.0"]}
    why = harness.preflight(scenario, env, [uninstall, install])
    assert "pip cannot install it here (onnxruntime-gpu==1.30.0)" in why, why
    assert harness.preflight(scenario, env, [uninstall, {"kind": "env", "env": {}}]) == ""
