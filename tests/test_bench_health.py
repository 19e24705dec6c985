"""`bench` watches the GPU's clocks through NVML while it runs, and compares with healthy GPUs."""

from __future__ import annotations

import json

from tests.fakes.build import fake_nvml
from tests.test_bench_cli import bench, codes, fakes


def test_a_gpu_that_slows_down_during_the_bench_is_cd608(machine, tmp_path):
    nvml = fake_nvml(tmp_path / "nvml", health={"THROTTLE": 0x48, "SM_MHZ": 1200})
    machine.add_library_path(nvml.parent)
    result = bench(machine, "--json", "--size", "tiny", "--workload", "conv", "--no-cpu", "--repeats", "2", *fakes())
    data = json.loads(result.stdout)
    clocks = data["devices"][0]["clocks"]
    assert clocks["sampled"] >= 1 and clocks["sm_mhz_min"] == 1200 and clocks["sm_mhz_max_supported"] == 1980
    assert clocks["throttle_reasons"] == ["hw_slowdown", "hw_thermal_slowdown"]
    assert "CD608" in codes(data)
    slowed = next(f for f in data["findings"] if f["code"] == "CD608")
    assert "hardware thermal slowdown" in slowed["detail"] and "1200 MHz of 1980" in slowed["detail"]
    # the fake's tiny shape has no healthy reference: unknown, never a guess
    assert all(r["reference"]["unknown"].startswith("no reference for NVIDIA H100 80GB HBM3")
               for r in data["results"])
    text = bench(machine, "--size", "tiny", "--workload", "conv", "--no-cpu", "--repeats", "2", *fakes())
    assert "CD608" in text.stdout


def test_without_nvml_the_bench_runs_and_says_why_there_are_no_clocks(machine):
    result = bench(machine, "--json", "--size", "tiny", "--workload", "conv", "--no-cpu", "--repeats", "2", *fakes())
    data = json.loads(result.stdout)
    assert result.returncode == 0
    clocks = data["devices"][0]["clocks"]
    assert clocks["sampled"] == 0 and "NVML" in clocks["unavailable"]
    assert "CD608" not in codes(data)
