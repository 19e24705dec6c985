"""CPU-kernel selection variables (issue 45), asked of the real numpy in the framework's own Python: numpy refuses at
import a baseline feature it is asked to disable, and torch and JAX import numpy. The real numpy is the judge: its
baseline and dispatched features are its own lists; the plan's line, sourced in a real bash, cures it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import Machine, codes
from tests.test_frameworks import install_torch, python_env, real_python_sees
from tests.test_process_env import check_after, plan_lines


def numpy_features() -> tuple[list[str], list[str]]:
    """The real numpy's own baseline and dispatched CPU features."""
    code = ("import numpy\ntry:\n    from numpy._core import _multiarray_umath as m\nexcept ImportError:\n"
            "    from numpy.core import _multiarray_umath as m\nprint(' '.join(m.__cpu_baseline__))\n"
            "print(' '.join(m.__cpu_dispatch__))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    baseline, dispatch = (out.splitlines() + ["", ""])[:2]
    return baseline.split(), dispatch.split()


def torch_machine(machine: Machine, tmp_path: Path) -> None:
    site = python_env(machine, tmp_path)
    install_torch(site)
    real_python_sees(site, tmp_path)


def cpu_findings(report: dict, variable: str) -> list[dict]:
    return [f for f in report["findings"] if f["subject"] == variable]


def test_a_baseline_feature_disabled_stops_numpy_and_is_unset(machine: Machine, tmp_path: Path) -> None:
    baseline, _ = numpy_features()
    if not baseline:
        pytest.skip("this numpy has no baseline CPU feature to disable")
    torch_machine(machine, tmp_path)
    machine.env["NPY_DISABLE_CPU_FEATURES"] = baseline[0]
    report = machine.check_json()
    [refused] = cpu_findings(report, "NPY_DISABLE_CPU_FEATURES")
    assert refused["code"] == "CD411" and refused["severity"] == "error" and refused["evidence"] == "seen", refused
    assert "You cannot disable CPU feature" in refused["detail"] and baseline[0] in refused["detail"]
    lines = plan_lines(machine)
    assert "unset NPY_DISABLE_CPU_FEATURES" in lines, lines
    after = check_after(machine, lines)
    assert not cpu_findings(after, "NPY_DISABLE_CPU_FEATURES")


def test_both_numpy_variables_together_are_refused_and_one_is_unset(machine: Machine, tmp_path: Path) -> None:
    _, dispatch = numpy_features()
    if not dispatch:
        pytest.skip("this numpy dispatches no CPU feature")
    torch_machine(machine, tmp_path)
    machine.env["NPY_DISABLE_CPU_FEATURES"] = dispatch[-1]
    machine.env["NPY_ENABLE_CPU_FEATURES"] = dispatch[0]
    report = machine.check_json()
    refused = [f for f in report["findings"] if f["code"] == "CD411" and str(f["subject"]).startswith("NPY_")]
    assert len(refused) == 1 and refused[0]["evidence"] == "seen", refused
    after = check_after(machine, plan_lines(machine))
    assert not [f for f in after["findings"] if str(f["subject"]).startswith("NPY_")]


def test_a_dispatched_feature_disabled_is_no_finding(machine: Machine, tmp_path: Path) -> None:
    _, dispatch = numpy_features()
    if not dispatch:
        pytest.skip("this numpy dispatches no CPU feature")
    torch_machine(machine, tmp_path)
    machine.env["NPY_DISABLE_CPU_FEATURES"] = dispatch[-1]
    report = machine.check_json()
    assert not cpu_findings(report, "NPY_DISABLE_CPU_FEATURES")
    assert report["process"] is None or not report["process"].get("cpu_kernels")


@pytest.mark.parametrize(("variable", "value"), [("OPENBLAS_CORETYPE", "BOGUS"), ("OPENBLAS_CORETYPE", "NEOVERSEN1"),
                                                 ("MKL_CBWR", "COMPATIBLE")])
def test_values_numpy_works_with_are_no_finding(machine: Machine, tmp_path: Path, variable: str, value: str) -> None:
    """Asked of numpy (its import and a matrix product ran): nothing to say where it worked."""
    torch_machine(machine, tmp_path)
    machine.env[variable] = value
    assert not cpu_findings(machine.check_json(), variable)


def test_nothing_is_asked_where_no_such_variable_is_set(machine: Machine, tmp_path: Path) -> None:
    from cudnn_doctor.probes.cpu_kernels import CpuKernelQuestion, asked_variables
    from cudnn_doctor.probes.framework_python import PythonChildren

    assert asked_variables({"PATH": "/usr/bin", "OPENBLAS_VERBOSE": "2"}) == []
    question = CpuKernelQuestion([], {"NPY_DISABLE_CPU_FEATURES": "AVX2"})  # no framework's Python: nothing started
    children = PythonChildren({"NPY_DISABLE_CPU_FEATURES": "AVX2"}, [question])
    assert question.pythons == [] and children.pythons == []
    assert question.result(children.answers(), children.trials()) == ()
    torch_machine(machine, tmp_path)
    machine.env["OPENBLAS_VERBOSE"] = "2"  # a message at load, no change to the work: no finding
    assert "CD411" not in codes(machine.check_json())


def test_the_text_quotes_numpy(machine: Machine, tmp_path: Path) -> None:
    baseline, _ = numpy_features()
    if not baseline:
        pytest.skip("this numpy has no baseline CPU feature to disable")
    torch_machine(machine, tmp_path)
    machine.env["NPY_DISABLE_CPU_FEATURES"] = baseline[0]
    shown = machine.run("check", "--select", "CD411").stdout
    assert "Evidence (seen)" in shown and "unset NPY_DISABLE_CPU_FEATURES" in shown, shown


@pytest.mark.parametrize(("value", "code"), [("default", "CD412"), ("avx3", "CD414"), ("avx2", None)])
def test_torchs_cpu_capability_as_its_dispatcher_reads_it(machine: Machine, tmp_path: Path, value: str,
                                                          code: str | None) -> None:
    torch_machine(machine, tmp_path)
    machine.env["ATEN_CPU_CAPABILITY"] = value
    found = cpu_findings(machine.check_json(), "ATEN_CPU_CAPABILITY")
    assert [f["code"] for f in found] == ([code] if code else [])
    assert all(f["severity"] == "warning" for f in found)
