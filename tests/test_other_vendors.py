"""Other GPU vendors' visibility variables (issue 45) are read by no CUDA program: torch's installed
torch/cuda/__init__.py reads HIP_VISIBLE_DEVICES and ROCR_VISIBLE_DEVICES only where torch.version.hip is set (a
ROCm build), and Level Zero and SYCL read the Intel ones. A doctor raises nothing on them, with torch's own file (its
real _parse_visible_devices, as torch 2.11 ships it) in place."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import Machine
from tests.test_frameworks import install_torch, python_env, real_python_sees

# torch 2.11's torch/cuda/__init__.py, the part that reads the variables (pytorch/pytorch, _parse_visible_devices)
PARSE = '''import os
import torch


def _parse_visible_devices():
    var = os.getenv("CUDA_VISIBLE_DEVICES")
    if torch.version.hip:
        hip_devices = os.getenv("HIP_VISIBLE_DEVICES")
        rocr_devices = os.getenv("ROCR_VISIBLE_DEVICES")
        if hip_devices is not None:
            var = hip_devices
        elif rocr_devices is not None:
            var = rocr_devices
    if var is None:
        return list(range(64))
    return [e.strip() for e in var.split(",")]
'''


def test_other_vendors_visibility_is_no_finding_on_a_cuda_build(machine: Machine, tmp_path: Path) -> None:
    site = python_env(machine, tmp_path)
    install_torch(site)
    (site / "torch" / "cuda").mkdir()
    (site / "torch" / "cuda" / "__init__.py").write_text(PARSE)
    real_python_sees(site, tmp_path)
    named = {"HIP_VISIBLE_DEVICES": "1", "ROCR_VISIBLE_DEVICES": "GPU-deadbeef", "ZE_AFFINITY_MASK": "0.1",
             "ONEAPI_DEVICE_SELECTOR": "level_zero:0"}
    machine.env.update(named)
    report = machine.check_json()
    about = [f for f in report["findings"] if any(name in f"{f.get('subject')} {f.get('detail')}" for name in named)]
    assert about == []
    before = machine.check_json  # the same machine without them: the same findings, nothing more
    for name in named:
        del machine.env[name]
    assert {f["code"] for f in before()["findings"]} == {f["code"] for f in report["findings"]}
