"""The doctor on aarch64, for real: Debian's arm64 Python under qemu-user runs `check`, whose probe child loads the
real aarch64 cuDNN of NVIDIA's manylinux_2_27_aarch64 wheel; on a plain aarch64 (SBSA) machine that cuDNN is
fine, on a Jetson of JetPack 6 it is the server build that does not run there (CD154)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.aarch64 import arm64_python, pure_python_path
from tests.conftest import Machine, codes
from tests.real_wheels import real_cudnn
from tests.test_platforms import L4T_RELEASE, write

pytestmark = pytest.mark.integration


def check_on_aarch64(machine: Machine, *args: str) -> dict:
    python = arm64_python()
    env = dict(machine.env, PYTHONPATH=pure_python_path(), CUDNN_DOCTOR_PROBE_TIMEOUT="120")
    done = subprocess.run([str(python), "-m", "cudnn_doctor", "check", "--json", *args], capture_output=True,
                          text=True, env=env, cwd=machine.cwd, timeout=300)
    assert "Traceback" not in done.stderr, done.stderr
    return json.loads(done.stdout)


def test_check_on_aarch64_loads_the_real_aarch64_cudnn(machine: Machine) -> None:
    lib = real_cudnn("9.19.0", "aarch64") / "lib"
    report = check_on_aarch64(machine, "--search-path", str(lib))
    assert report["host"]["arch"] == "aarch64" and report["host"]["platform"]["kind"] == "linux"
    [install] = report["cudnn"]
    assert (install["version"], install["arch"], install["cuda_version"]) == ("9.19.0", "aarch64", "13.1")
    assert install["load_error"] is None and all(install["sublibraries"].values())
    assert not codes(report) & {"CD154", "CD304", "CD307", "CD308", "CD309"}


def test_the_server_cudnn_wheel_on_a_jetson_is_named(machine: Machine, tmp_path: Path) -> None:
    """`pip install nvidia-cudnn-cu13` on a JetPack 6.2 Jetson: the wheel's real aarch64 cuDNN loads (it is a
    valid aarch64 library), and it is still the wrong one there."""
    write(machine.root / "etc" / "nv_tegra_release", L4T_RELEASE)
    site = tmp_path / "venv" / "lib" / "python3.11" / "site-packages"
    (site / "nvidia" / "cudnn").mkdir(parents=True)
    (site / "nvidia" / "cudnn" / "lib").symlink_to(real_cudnn("9.19.0", "aarch64") / "lib")
    (site / "nvidia_cudnn_cu13-9.19.0.56.dist-info").mkdir()
    (tmp_path / "venv" / "bin").mkdir()
    (tmp_path / "venv" / "bin" / "python3").write_text("#!/bin/sh\n")
    machine.env["PATH"] = f"{tmp_path / 'venv' / 'bin'}:{machine.env['PATH']}"
    report = check_on_aarch64(machine)
    assert report["host"]["platform"]["kind"] == "jetson" and report["host"]["arch"] == "aarch64"
    [install] = report["cudnn"]
    assert (install["version"], install["arch"], install["source"]) == ("9.19.0", "aarch64", "pip:nvidia-cudnn-cu13")
    [sbsa] = [f for f in report["findings"] if f["code"] == "CD154"]
    assert "nvidia-cudnn-cu13" in sbsa["detail"] and "pip uninstall -y nvidia-cudnn-cu13" in sbsa["fix"]
