"""A bug in one rule or one probe is one finding (CD901, CD902) that names it, and the rest of the report stands:
the rules as functions on a built Report, a probe through diagnose() on a pretend machine."""

from __future__ import annotations

import sys
import types
from pathlib import Path

import pytest

from cudnn_doctor import rules
from cudnn_doctor.model import Host, Report, Tool
from cudnn_doctor.rules import driver, evaluate
from tests.conftest import Machine


def bare_report() -> Report:
    return Report(tool=Tool("cudnn-doctor", "0"), host=Host("linux", "x86_64", "3.11", "node"))


def test_a_rule_that_raises_is_one_finding_and_the_other_rules_still_judge(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken_rule(report: Report) -> list:
        raise KeyError("gpus")

    broken = types.ModuleType("cudnn_doctor.rules.broken")
    broken.RULES = (broken_rule,)  # type: ignore[attr-defined]
    monkeypatch.setattr(rules, "rule_modules", lambda: (broken, driver))
    findings = evaluate(bare_report())
    [bug] = [f for f in findings if f.code == "CD901"]
    assert bug.severity == "warning" and bug.subject == "broken.broken_rule"
    assert "broken.broken_rule raised KeyError: 'gpus'" in bug.detail and "a bug in cudnn-doctor" in bug.detail
    assert "CD104" in {f.code for f in findings}  # NVML unread: the driver rules still ran after the broken one


def test_an_unbroken_report_has_no_bug_finding() -> None:
    assert not {"CD901", "CD902"} & {f.code for f in evaluate(bare_report())}


@pytest.mark.skipif(sys.platform != "linux", reason="the probes of a Linux machine")
def test_a_probe_that_raises_is_one_finding_and_the_rest_of_the_report_stands(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from cudnn_doctor.doctor.diagnosis import CheckOptions, diagnose
    from cudnn_doctor.probes import collect
    from tests.fakes.build import fake_cudnn

    def broken_probe(*args: object) -> list:
        raise RuntimeError("a bug")

    machine = Machine(tmp_path)
    fake_cudnn(tmp_path / "cudnn", version=91900, cudart=13000)
    machine.add_library_path(tmp_path / "cudnn")
    monkeypatch.setattr(collect, "detect_frameworks", broken_probe)
    monkeypatch.chdir(tmp_path)
    diagnosis = diagnose(CheckOptions(), env=machine.env)
    [bug] = [f for f in diagnosis.findings if f.code == "CD902"]
    assert bug.subject == "frameworks" and "RuntimeError: a bug" in bug.detail
    assert "github.com/cudnn-doctor/cudnn-doctor/issues" in bug.fix  # the plan's advice: where to report it
    assert [i.version for i in diagnosis.report.cudnn] == ["9.19.0"]  # the other probes' findings stand
    assert diagnosis.report.summary is not None and diagnosis.report.summary.exit_code in (0, 1)


def test_the_plan_takes_its_findings_in_linear_time() -> None:
    """Each finding an action takes leaves the open ones at once (it filtered every open finding against those taken,
    and looked each action up among all: 2,000 `--search-path` folders that do not exist, a finding each, took 7 s
    of planning; 8,000 took a minute). 8,000 findings are planned in a second, each in its action."""
    import time

    from cudnn_doctor.codes import finding
    from cudnn_doctor.plan.planner import Setting, make_plan

    findings = [finding("CD313", subject=f"/nowhere/{n}", path=f"/nowhere/{n}", error="no such folder")
                for n in range(8_000)]
    started = time.monotonic()
    plan = make_plan(bare_report(), findings, Setting(home="/tmp/home"))
    assert time.monotonic() - started < 20  # quadratic: 6.4e7 comparisons, and as many findings copied
    assert sum(len(action.findings) for action in plan.actions) == 8_000
    assert plan.for_finding("CD313", "/nowhere/7999")
