"""GPU health through NVML: the real pynvml on a gcc-built fake NVML with chosen readings."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import Machine, codes
from tests.fakes.build import fake_nvml

SICK = {"SICK_GPU": 1, "ECC_VOLATILE": 3, "ECC_AGGREGATE": 7, "THROTTLE": 0x48, "PCIE_WIDTH": 8,
        "PERSISTENCE": 0, "PROCS": 2, "TEMP": 84}
HEALTH_CODES = {f"CD{n}" for n in range(130, 141)}


def _gpus(machine: Machine, tmp_path: Path, gpus: int = 1, **health: int) -> None:
    machine.add_library_path(fake_nvml(tmp_path / "nvml", gpus=gpus, health=health).parent)


def test_every_reading_of_every_gpu_is_in_the_report_and_only_the_sick_gpu_has_findings(
        machine: Machine, tmp_path: Path) -> None:
    _gpus(machine, tmp_path, gpus=2, **SICK)
    report = machine.check_json()
    healthy, sick = (gpu["health"] for gpu in report["gpus"])
    assert healthy["ecc_enabled"] is True and healthy["ecc_errors_uncorrected_volatile"] == 0
    assert healthy["throttle_reasons"] == [] and healthy["pcie_link_width"] == 16
    assert healthy["persistence_mode"] is True and healthy["compute_mode"] == "default"
    assert healthy["not_supported"] == [] and healthy["errors"] == {}
    assert sick["ecc_errors_uncorrected_volatile"] == 3 and sick["ecc_errors_uncorrected_aggregate"] == 7
    assert sick["throttle_reasons"] == ["hw_slowdown", "hw_thermal_slowdown"]
    assert (sick["pcie_link_width"], sick["pcie_link_width_max"]) == (8, 16)
    assert [p["pid"] for p in sick["processes"]] == [4242, 4243] and sick["temperature_celsius"] == 84
    found = {f["code"]: f for f in report["findings"] if f["code"] in HEALTH_CODES}
    assert set(found) == {"CD130", "CD133", "CD134", "CD135", "CD139", "CD140"}
    assert all(f["subject"] == "GPU 1" for f in found.values())
    assert found["CD130"]["severity"] == "error" and "nvidia-smi -r -i 1" in found["CD130"]["fix"]
    assert "hardware thermal slowdown" in found["CD133"]["detail"] and "cooling" in found["CD133"]["fix"]
    assert "x8 while x16" in found["CD134"]["detail"]
    assert report["summary"]["exit_code"] == 1


def test_memory_repair_modes_and_compute_mode(machine: Machine, tmp_path: Path) -> None:
    _gpus(machine, tmp_path, REMAP_PENDING=1, REMAP_FAILED=1, RETIRED_PENDING=1, MIG=0, MIG_PENDING=1,
          COMPUTE_MODE=2)
    report = machine.check_json()
    found = {f["code"]: f for f in report["findings"]}
    assert {"CD131", "CD132", "CD136", "CD138"} <= set(found)
    assert "retired pages and remapped rows" in found["CD131"]["detail"]
    assert "MIG mode off but on pending" in found["CD136"]["detail"]
    assert "-c DEFAULT" in found["CD138"]["fix"]


def test_what_the_gpu_does_not_support_is_never_a_finding(machine: Machine, tmp_path: Path) -> None:
    _gpus(machine, tmp_path, NOT_SUPPORTED=1023)  # a consumer GPU on an old driver: nothing readable
    report = machine.check_json()
    health = report["gpus"][0]["health"]
    assert set(health["not_supported"]) >= {"ecc_enabled", "retired_pages_pending", "remapped_rows_pending",
                                            "throttle_reasons", "pcie_link_width", "persistence_mode", "mig_mode",
                                            "compute_mode", "processes", "temperature_celsius"}
    assert health["errors"] == {} and health["ecc_errors_uncorrected_volatile"] is None
    assert not codes(report) & HEALTH_CODES
    assert {f["code"] for f in report["findings"] if f["severity"] == "error"} == {"CD301"}  # no cuDNN here


def test_health_requirements_for_ci(machine: Machine, tmp_path: Path) -> None:
    _gpus(machine, tmp_path, gpus=2)
    ok = machine.check_json("--require", "gpu-healthy", "--require", "no-ecc-errors", "--require", "pcie>=5x16")
    assert "CD122" not in codes(ok)

    sick = Machine(tmp_path / "sick")
    _gpus(sick, tmp_path / "sick", gpus=2, **SICK)
    report = sick.check_json("--require", "no-ecc-errors", "--require", "pcie>=4x16", "--require", "gpu-healthy")
    unmet = [f["detail"] for f in report["findings"] if f["code"] == "CD122"]
    assert len(unmet) == 3
    assert any("no-ecc-errors: GPU 1: Uncorrectable ECC errors" in d for d in unmet)
    assert any("pcie>=4x16: GPU 1: generation 5 x8" in d for d in unmet)

    bad = machine.run("check", "--require", "pcie>=fast")
    assert bad.exit_code == 2 and "pcie>=4x16" in bad.stderr and "Traceback" not in bad.stderr


def test_health_text_shows_findings_under_the_driver_line(machine: Machine, tmp_path: Path) -> None:
    _gpus(machine, tmp_path, gpus=2, **SICK)
    result = machine.run("check")
    assert result.exit_code == 1
    driver_area = result.stdout.split("CUDA toolkit")[0]
    assert "CD130 Uncorrectable ECC errors on the GPU" in driver_area and "CD134" in driver_area
