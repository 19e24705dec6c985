"""treat(): the plan applied and the machine diagnosed again in this process, the plan's environment lines handed
to that diagnosis as data (this process's own environment untouched), and no child that runs the doctor again."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from cudnn_doctor import child
from tests.conftest import Machine
from tests.fakes.build import fake_cudnn, fake_nvml

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="the plans are applied on Linux hosts")

CUDNN9 = ["libcudnn_graph", "libcudnn_ops", "libcudnn_cnn", "libcudnn_adv", "libcudnn_engines_precompiled",
          "libcudnn_engines_runtime_compiled", "libcudnn_heuristic"]


def test_an_env_line_is_in_force_for_the_diagnosis_after_and_no_doctor_child_runs(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from cudnn_doctor.doctor.diagnosis import CheckOptions, diagnose
    from cudnn_doctor.doctor.treatment import treat

    machine = Machine(tmp_path)
    fake_nvml(tmp_path / "driver", driver="580.65.06", cuda=13000)
    fake_cudnn(tmp_path / "a", version=91900, cudart=13000, sublibraries=CUDNN9)
    fake_cudnn(tmp_path / "b", version=91400, cudart=13000, sublibraries=CUDNN9)
    for folder in ("driver", "b", "a"):
        machine.add_library_path(tmp_path / folder)
    started: list[tuple[str, ...]] = []
    original = child.ChildBatch.__init__

    def recording(self: child.ChildBatch, requests: list[child.ChildRequest], *args: object, **kwargs: object) -> None:
        started.extend(tuple(request.argv) for request in requests)
        original(self, requests, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(child.ChildBatch, "__init__", recording)
    monkeypatch.chdir(tmp_path)
    ours = os.environ.get("LD_LIBRARY_PATH")
    diagnosis = diagnose(CheckOptions(), env=machine.env)
    assert "CD302" in {f.code for f in diagnosis.findings}
    assert [a.kind for a in diagnosis.plan.actions if "CD302" in a.resolves] == ["env"]
    treatment = treat(diagnosis, lambda line: None, env=machine.env)
    assert treatment.failed is None and treatment.after is not None
    assert "CD302" not in treatment.after["codes"]  # the line was in force for the diagnosis after
    assert os.environ.get("LD_LIBRARY_PATH") == ours  # as data, never by changing this process's environment
    # the probes' own children (a vendor library loaded, as a program loads it) are no doctor
    assert started and not [argv for argv in started if any(
        "cudnn_doctor" in word and not word.endswith("_job_child.py") for word in argv)]
