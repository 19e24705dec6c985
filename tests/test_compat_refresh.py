"""maintenance/refresh_compat.py against a PyPI JSON API served on 127.0.0.1 (pytest-httpserver): the newer
tables it covers report what compat/ lacks, offline.

The JSON is shaped like https://pypi.org/pypi/<name>/json (a `releases` map of files with `filename`, `url`,
`yanked`); the compared rows are compat/cudnn.toml [[wheel]] (read from nvidia-cudnn-cu13's PyPI files) and
compat/tensorrt.toml's tensorrt-cu11 rows (https://pypi.org/pypi/tensorrt-cu11/json)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.conftest import ROOT

pytest.importorskip("pytest_httpserver")


def wheel(name: str, version: str, tag: str, yanked: bool = False) -> dict[str, object]:
    filename = f"{name.replace('-', '_')}-{version}-py3-none-{tag}.whl"
    return {"filename": filename, "url": f"../../files/{filename}", "yanked": yanked}


def refresh(httpserver, *only: str) -> subprocess.CompletedProcess[str]:  # type: ignore[no-untyped-def]
    env = {**os.environ, "CUDNN_DOCTOR_PYPI": httpserver.url_for("/pypi")}
    return subprocess.run([sys.executable, str(ROOT / "maintenance" / "refresh_compat.py"), "--only", ",".join(only)],
                          capture_output=True, text=True, env=env, timeout=120)


def test_cudnn_wheels_new_release_and_changed_platforms(httpserver) -> None:  # type: ignore[no-untyped-def]
    """9.19.0.56 as in compat/ (Linux x86_64, Linux aarch64, Windows x64): silent. 9.28.1.4 lost its Windows
    files here: reported as changed. 9.99.0.1 is new; a yanked 9.25.0.15 stays out, as compat/ leaves it out."""
    linux = ("manylinux_2_27_x86_64", "manylinux_2_27_aarch64")
    project = {"releases": {
        "9.19.0.56": [wheel("nvidia-cudnn-cu13", "9.19.0.56", t) for t in (*linux, "win_amd64")],
        "9.28.1.4": [wheel("nvidia-cudnn-cu13", "9.28.1.4", t) for t in linux],
        "9.25.0.15": [wheel("nvidia-cudnn-cu13", "9.25.0.15", "manylinux_2_27_x86_64", yanked=True)],
        "9.99.0.1": [wheel("nvidia-cudnn-cu13", "9.99.0.1", "manylinux_2_27_x86_64")],
    }}
    httpserver.expect_request("/pypi/nvidia-cudnn-cu13/json").respond_with_json(project)
    result = refresh(httpserver, "nvidia-cudnn-cu13")
    assert result.returncode == 1 and "Traceback" not in result.stderr
    lines = result.stdout.strip().splitlines()
    assert "new cuDNN release: nvidia-cudnn-cu13==9.99.0.1 (compat/cudnn.toml has no 9.99.0)" in lines
    assert ("new cuDNN wheel: nvidia-cudnn-cu13 9.99.0 (9.99.0.1) for linux-x86_64 (compat/cudnn.toml [[wheel]] has "
            "no row)") in lines
    assert ("changed cuDNN wheel platforms: nvidia-cudnn-cu13 9.28.1: PyPI has linux-x86_64, linux-sbsa; "
            "compat/cudnn.toml [[wheel]] has linux-x86_64, linux-sbsa, windows-x86_64, windows-arm64") in lines
    assert not any("9.19.0" in line or "9.25.0" in line for line in lines)


def test_tensorrt_cu11_and_jax_cuda11_plugin_are_covered(httpserver) -> None:  # type: ignore[no-untyped-def]
    """tensorrt-cu11 is published as sdists: 10.13.0.35 is in compat/tensorrt.toml, a 10.13.9.9 would be news.
    jax-cuda11-plugin's releases 0.4.22-0.4.25 are in compat/jax.toml: with only sdists served, nothing differs."""
    httpserver.expect_request("/pypi/tensorrt-cu11/json").respond_with_json({"releases": {
        "10.13.0.35": [{"filename": "tensorrt_cu11-10.13.0.35.tar.gz", "url": "x", "yanked": False}],
        "10.13.9.9": [{"filename": "tensorrt_cu11-10.13.9.9.tar.gz", "url": "x", "yanked": False}],
    }})
    httpserver.expect_request("/pypi/jax-cuda11-plugin/json").respond_with_json({"releases": {
        v: [{"filename": f"jax_cuda11_plugin-{v}.tar.gz", "url": "x", "yanked": False}]
        for v in ("0.4.22", "0.4.23", "0.4.24", "0.4.25")}})
    result = refresh(httpserver, "tensorrt-cu11", "jax-cuda11-plugin")
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert result.stdout.strip().splitlines() == [
        "new release: tensorrt-cu11==10.13.9.9 (sdist only: read its -libs/-cuXX wheels; not in compat/tensorrt.toml)"]
