"""Issue 44: a machine with no NVIDIA GPU (a laptop, a CI runner, a build box). Whether an NVIDIA device is in the
machine at all (the PCI bus, WSL's /dev/dxg, a Jetson's integrated GPU) decides what comes first: it says there is
none and installs nothing unless asked; where a GPU is but no driver, the driver is the first step of every plan."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.conftest import Machine, codes
from tests.test_check import make_toolkit
from tests.test_first_hour import python_with_cpu_torch

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="the pretend machines are Linux ones")

HOST_BRIDGE = ("0000:00:00.0", "0x8086", "0x060000")
INTEL_GRAPHICS = ("0000:00:02.0", "0x8086", "0x030000")
NVIDIA_AUDIO = ("0000:01:00.1", "0x10de", "0x040300")  # a GPU's HDMI audio function is not a GPU
NVIDIA_3D = ("0000:01:00.0", "0x10de", "0x030200")


def pci(machine: Machine, *devices: tuple[str, str, str]) -> None:
    """/sys/bus/pci/devices of the pretend machine, as Linux's sysfs lists them (vendor, class: one line each)."""
    for address, vendor, device_class in devices:
        folder = machine.root / "sys" / "bus" / "pci" / "devices" / address
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "vendor").write_text(vendor + "\n")
        (folder / "class").write_text(device_class + "\n")


def test_a_laptop_without_an_nvidia_gpu_is_told_so_and_nothing_is_installed(machine: Machine, tmp_path: Path) -> None:
    pci(machine, HOST_BRIDGE, INTEL_GRAPHICS, NVIDIA_AUDIO)
    make_toolkit(machine.root, "13.0.96", 13000)
    text = machine.run("check")
    assert text.stdout.startswith("[!] NVIDIA GPU: none in this machine"), text.stdout
    assert "fix --yes" not in text.stdout and text.exit_code == 0
    report = machine.check_json()
    from tests.test_schemas import validate

    validate(report)
    assert codes(report) == {"CD159"}, report["findings"]
    assert report["host"]["platform"]["nvidia_devices"] == []
    [cd159] = report["findings"]
    assert "cudnn-doctor fix --require cudnn" in cd159["fix"]
    fixed = machine.run("fix", "--json")
    assert fixed.json["actions"] == [] and fixed.exit_code == 0, fixed.json


def test_a_cpu_torch_there_is_not_offered_a_cuda_build(machine: Machine, tmp_path: Path) -> None:
    pci(machine, HOST_BRIDGE, INTEL_GRAPHICS)
    venv = python_with_cpu_torch(tmp_path)
    plan = machine.run("fix", "--json", "--python", str(venv)).json
    assert not [a for a in plan["actions"] if a["kind"] == "pip"], plan["actions"]
    assert "CD406" not in codes(machine.check_json("--python", str(venv)))


def test_a_build_box_that_asks_for_cudnn_gets_it(machine: Machine, tmp_path: Path) -> None:
    pci(machine, HOST_BRIDGE)
    make_toolkit(machine.root, "13.0.96", 13000)
    plan = machine.run("fix", "--json", "--require", "cudnn").json
    kinds = [a["kind"] for a in plan["actions"]]
    assert kinds[0] == "install" and "manual" not in kinds, plan["actions"]
    assert machine.check_json("--require", "cudnn")["summary"]["exit_code"] == 1


def test_a_gpu_without_its_driver_gets_the_driver_first(machine: Machine, tmp_path: Path) -> None:
    pci(machine, HOST_BRIDGE, NVIDIA_3D)
    make_toolkit(machine.root, "13.0.96", 13000)
    report = machine.check_json()
    assert "CD101" in codes(report) and "CD301" in codes(report)
    assert report["host"]["platform"]["nvidia_devices"] == ["PCI 0000:01:00.0: NVIDIA display controller (class "
                                                            "0x030200)"]
    plan = machine.run("fix", "--json").json
    assert plan["actions"][0]["resolves"] == ["CD101"], plan["actions"]
    assert any(a["kind"] == "install" for a in plan["actions"][1:])
    text = machine.run("check").stdout
    assert "GPU seen: PCI 0000:01:00.0" in text


@pytest.mark.parametrize("where", ["wsl", "jetson", "no-bus"])
def test_where_a_gpu_may_be_the_missing_driver_stays_an_error(machine: Machine, where: str) -> None:
    """WSL's /dev/dxg, a Jetson's device tree, or no PCI bus to read (a sandbox): no verdict of "no GPU"."""
    if where == "wsl":
        pci(machine, HOST_BRIDGE)
        (machine.root / "dev").mkdir()
        (machine.root / "dev" / "dxg").write_bytes(b"")
    elif where == "jetson":
        (machine.root / "etc" / "nv_tegra_release").write_text(
            "# R36 (release), REVISION: 4.3, GCID: 38968081, BOARD: generic, EABI: aarch64, DATE: Wed Jan  8 01:49:37 "
            "UTC 2025\n")
        (machine.root / "proc" / "device-tree").mkdir(parents=True)
        (machine.root / "proc" / "device-tree" / "model").write_text("NVIDIA Jetson AGX Orin Developer Kit\0")
    report = machine.check_json()
    assert "CD159" not in codes(report) and ("CD101" in codes(report) or where == "jetson"), report["findings"]
    assert (report["host"]["platform"]["nvidia_devices"] is None) == (where == "no-bus")


def test_deep_on_a_machine_without_a_gpu_is_no_framework_failure(machine: Machine, tmp_path: Path) -> None:
    """--deep runs torch's first GPU steps, which fail where there is no GPU: what torch said explains CD159, and is
    no CD415 error of its own."""
    pci(machine, HOST_BRIDGE, INTEL_GRAPHICS)
    venv = python_with_cpu_torch(tmp_path)
    report = machine.check_json("--deep", "--python", str(venv))
    assert "CD415" not in codes(report) and report["summary"]["exit_code"] == 0, report["findings"]
    [cd159] = [f for f in report["findings"] if f["code"] == "CD159"]
    assert any("under --deep" in ref for ref in cd159["refs"]), cd159


def test_bench_there_says_there_is_no_gpu(machine: Machine) -> None:
    pci(machine, HOST_BRIDGE, INTEL_GRAPHICS)
    result = machine.run("bench")
    assert result.exit_code == 1 and "No NVIDIA GPU is in this machine" in result.stdout + result.stderr, result.stdout


def test_an_image_checked_on_a_build_box_without_a_gpu(machine: Machine, tmp_path: Path) -> None:
    """A CI runner checks an image before it ships: no NVIDIA GPU here is said (CD159, a warning), its needs still
    are, and no CD101 error fails the job."""
    from tests.images import config_of, oci_layout
    from tests.test_image import ENV, cuda_image_layers

    pci(machine, HOST_BRIDGE, INTEL_GRAPHICS)
    layers = cuda_image_layers()
    folder = oci_layout(tmp_path / "oci", config_of(ENV, layers=layers), layers)
    result = machine.run("image", str(folder), "--json")
    from tests.test_schemas import validate

    validate(result.json)
    assert codes(result.json) == {"CD159"} and result.exit_code == 0, result.json["findings"]
    assert result.json["needs"]["min_driver"] == "570.26"
