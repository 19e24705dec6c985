"""`bench` watches the GPU's clocks through NVML while it runs, and compares with healthy GPUs."""

from __future__ import annotations

import json

import pytest

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


def test_a_result_well_below_a_healthy_h100_is_cd609_and_a_normal_one_is_not():
    """The comparison on the real reference rows measured on the H100 (compat/gpu_reference.toml)."""
    from cudnn_doctor.bench import healthy
    from cudnn_doctor.bench.records import BenchLibraries, WorkloadResult
    from cudnn_doctor.rules.bench import judge_result

    row = next(r for r in healthy._table()["reference"]
               if (r["gpu"], r["workload"], r["dtype"], r["layout"], r["size"]) ==
               ("NVIDIA H100 80GB HBM3", "conv-fwd", "bf16", "nhwc", "large"))
    libraries = BenchLibraries(cudnn_version="9.19.0")
    for factor, slow in ((1.05, False), (2.0, True)):
        raw = {"workload": "conv-fwd", "dtype": "bf16", "layout": "nhwc", "size": "large",
               "gpu_ms": row["gpu_ms"] * factor}
        reference = healthy.compare("NVIDIA H100 80GB HBM3", raw, 9)
        assert reference["ratio"] == pytest.approx(1 / factor)
        result = WorkloadResult(**raw, device=0, max_error=1e-3, tolerance=3e-2, reference=reference)
        judged, findings = judge_result(result, libraries, "NVIDIA H100 80GB HBM3", None, healthy.slow_ratio())
        assert judged.ok is True
        assert [f.code for f in findings] == (["CD609"] if slow else [])
    assert "0.50" in findings[0].detail and "NVIDIA H100 80GB HBM3" in findings[0].detail
    assert healthy.compare("NVIDIA H100 80GB HBM3", raw, 8)["unknown"].endswith("cuDNN 8")
    assert healthy.compare("NVIDIA A100-SXM4-80GB", raw, 9) == {"unknown": "no reference for NVIDIA A100-SXM4-80GB"}


@pytest.mark.parametrize("health, words", [
    ({"PROCS": 2}, "2 other processes had work on it (pid 4242"),
    ({"UTIL": 60}, "it was 60% busy before the bench started its own work"),
])
def test_a_gpu_shared_with_another_process_is_cd610_and_not_compared_with_a_healthy_one(machine, tmp_path, health,
                                                                                        words):
    nvml = fake_nvml(tmp_path / "nvml", health=health)
    machine.add_library_path(nvml.parent)
    result = bench(machine, "--json", "--size", "tiny", "--workload", "conv", "--no-cpu", "--repeats", "2", *fakes())
    data = json.loads(result.stdout)
    clocks = data["devices"][0]["clocks"]
    if "PROCS" in health:
        assert [p["pid"] for p in clocks["other_processes"]] == [4242, 4243]
        assert all(p["before"] and p["used_memory_mib"] == 1024 for p in clocks["other_processes"])
    else:
        assert clocks["other_processes"] == [] and clocks["utilization_before_percent"] == 60
    shared = [f for f in data["findings"] if f["code"] == "CD610"]
    assert len(shared) == 1 and words in shared[0]["detail"] and "NVIDIA H100 80GB HBM3" in shared[0]["detail"]
    assert "CD609" not in codes(data)  # no verdict against a healthy GPU from a shared one
    assert data["results"] and all(r["reference"] == {"not_compared": "GPU 0 was shared with other processes (CD610)"}
                                   for r in data["results"])
    text = bench(machine, "--size", "tiny", "--workload", "conv", "--no-cpu", "--repeats", "2", *fakes())
    assert "CD610" in text.stdout and "vs healthy: not compared: GPU 0 was shared" in text.stdout


def test_an_idle_gpu_is_not_called_shared(machine, tmp_path):
    nvml = fake_nvml(tmp_path / "nvml")
    machine.add_library_path(nvml.parent)
    data = json.loads(bench(machine, "--json", "--size", "tiny", "--workload", "conv", "--no-cpu", "--repeats", "2",
                            *fakes()).stdout)
    clocks = data["devices"][0]["clocks"]
    assert clocks["other_processes"] == [] and clocks["utilization_before_percent"] == 0
    assert "CD610" not in codes(data)
    assert all("not_compared" not in r["reference"] for r in data["results"])
