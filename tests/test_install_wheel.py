"""Integration: install the real `nvidia-cudnn-cu13==9.19.0.56` wheel from PyPI into a temporary
prefix; `check --search-path` must then report cuDNN 9.19.0 there."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.install_helpers import clean_env, run_json

pytestmark = [pytest.mark.integration,
              pytest.mark.skipif(sys.platform != "linux", reason="the wheel is for Linux x86_64")]
WHEEL = "nvidia_cudnn_cu13-9.19.0.56-py3-none-manylinux_2_27_x86_64.whl"


def cached_wheel() -> Path:
    """The wheel from the test cache, downloaded once with `pip download --no-deps`."""
    folders = [Path(os.environ["CUDNN_DOCTOR_TEST_CACHE"])] if os.environ.get("CUDNN_DOCTOR_TEST_CACHE") else []
    folders += [Path.home() / ".cache" / "cudnn-doctor-tests" / "wheels", Path("/tmp/wheels")]
    for folder in folders:
        if (folder / WHEEL).is_file():
            return folder / WHEEL
    target = folders[0]
    target.mkdir(parents=True, exist_ok=True)
    result = subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
                             "--platform", "manylinux_2_27_x86_64", "--python-version", "3.11",
                             "-d", str(target), "nvidia-cudnn-cu13==9.19.0.56"],
                            capture_output=True, text=True, timeout=1800)
    if result.returncode != 0 or not (target / WHEEL).is_file():
        pytest.skip(f"no network to download {WHEEL}: {result.stderr.strip().splitlines()[-1:]}")
    return target / WHEEL


@pytest.mark.skipif(os.uname().machine != "x86_64", reason="the wheel is for x86_64")
def test_real_wheel_installs_and_check_reports_it(tmp_path: Path) -> None:
    wheel = cached_wheel()
    env = clean_env(tmp_path)
    prefix = tmp_path / "cudnn"
    code, data, err = run_json(["install", "--from", str(wheel), "--prefix", str(prefix), "--yes"], env)
    assert code == 0, err
    assert data["result"]["installed"]["version"] == "9.19.0"
    assert data["result"]["installed"]["cuda_version"] == "13.1"
    lib = prefix / "lib64"
    assert os.readlink(lib / "libcudnn.so.9") == "libcudnn.so.9.19.0"
    assert (lib / "libcudnn_engines_precompiled.so.9.19.0").stat().st_size > 100 << 20
    check = subprocess.run([sys.executable, "-m", "cudnn_doctor", "check", "--search-path", str(prefix), "--json"],
                           env=env, capture_output=True, text=True, timeout=300)
    report = json.loads(check.stdout)
    found = [c for c in report["cudnn"] if c["path"] == str(lib)]
    assert found, report["cudnn"]
    assert found[0]["version"] == "9.19.0"
    assert found[0]["header_version"] == "9.19.0"
    assert all(found[0]["sublibraries"].values())
    code, data, err = run_json(["uninstall", "--prefix", str(prefix), "--yes"], env)
    assert code == 0, err
    assert not (lib / "libcudnn.so.9").exists()
