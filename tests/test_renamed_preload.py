"""A library preloaded under another file name answers the loader for its SONAME: the probes name the file the loader
gave them (dlinfo's link map), not the first mapped file whose name matches."""

from __future__ import annotations

import shutil
from pathlib import Path

from tests.conftest import Machine
from tests.fakes.build import fake_libcuda, fake_nvml


def test_a_stub_nvml_preloaded_under_another_name_is_named_by_its_file(machine_in_process: Machine,
                                                                       tmp_path: Path) -> None:
    machine = machine_in_process
    fake_nvml(tmp_path / "driver", driver="580.65.06", cuda=13000)
    fake_libcuda(tmp_path / "driver", driver_cuda=13000, devices=1)
    machine.add_library_path(tmp_path / "driver")
    stub = fake_nvml(tmp_path / "stubs", driver="580.65.06", cuda=13000, stub=True)
    renamed = tmp_path / "tools" / "libmonitor-helper.so"
    renamed.parent.mkdir()
    shutil.copy(stub, renamed)
    machine.env["LD_PRELOAD"] = str(renamed)
    report = machine.check_json()
    [found] = [f for f in report["findings"] if f["code"] == "CD118"]
    # seen: nvmlInit refused with that file; an error where JAX is installed (it refuses to start), else a warning
    assert found["subject"] == str(renamed) and found["evidence"] == "seen", found
    assert "LD_PRELOAD" in found["detail"], found
    plan = machine.run("fix", "--json").json
    lines = [line for a in plan["actions"] if a["kind"] == "env" for line in a["env"]["bash"]]
    assert "unset LD_PRELOAD" in lines, plan["actions"]


def test_a_libcuda_stub_preloaded_under_another_name_is_named_by_its_file(machine_in_process: Machine,
                                                                          tmp_path: Path) -> None:
    machine = machine_in_process
    fake_nvml(tmp_path / "driver", driver="580.65.06", cuda=13000)
    fake_libcuda(tmp_path / "driver", driver_cuda=13000, devices=1)
    machine.add_library_path(tmp_path / "driver")
    stub = fake_libcuda(tmp_path / "stubs", driver_cuda=13000, status=34)  # CUDA_ERROR_STUB_LIBRARY
    renamed = tmp_path / "tools" / "libcuda-shim.so"
    renamed.parent.mkdir()
    shutil.copy(stub, renamed)
    machine.env["LD_PRELOAD"] = str(renamed)
    report = machine.check_json()
    [found] = [f for f in report["findings"] if f["code"] in ("CD111", "CD112", "CD110")]
    assert str(renamed) in (found["subject"] or "") + found["detail"] and found["severity"] == "error", found
    plan = machine.run("fix", "--json").json
    lines = [line for a in plan["actions"] if a["kind"] == "env" for line in a["env"]["bash"]]
    assert "unset LD_PRELOAD" in lines, plan["actions"]
