"""Which builds exist: the knowledge the planner names releases from (`builds`, `cudnn_releases_for`),
and the `builds` of `compat --json` that show it to a user."""

from __future__ import annotations

import pytest

from cudnn_doctor.knowledge import frameworks, query
from tests.conftest import Machine


def compat(machine: Machine, *args: str) -> dict:
    result = machine.run("compat", *args, "--json")
    assert "Traceback" not in result.stderr
    return result.json  # type: ignore[no-any-return]


def test_torch_release_lists_every_cuda_build_with_its_index(machine: Machine) -> None:
    """torch 2.13.0 ships cu126, cu130 (the PyPI wheel) and cu132 (issue 24); the non-default builds come from
    download.pytorch.org/whl/cuXYZ (pytorch.github.io previous-versions.md)."""
    data = compat(machine, "torch==2.13.0")
    got = {(b["cuda"], b["requirement"], b["index_url"], b["default"]) for b in data["builds"]}
    assert got == {("12.6", "torch==2.13.0+cu126", "https://download.pytorch.org/whl/cu126", False),
                   ("13.0", "torch==2.13.0", None, True),
                   ("13.2", "torch==2.13.0+cu132", "https://download.pytorch.org/whl/cu132", False)}
    assert all(b["source"] and b["installer"] == "pip" for b in data["builds"])
    assert any("previous-versions.md" in b["source"] for b in data["builds"] if b["index_url"])


def test_a_build_never_published_has_no_builds(machine: Machine) -> None:
    data = compat(machine, "torch==2.5.1+cu130")
    assert data["verdict"] == "incompatible" and data["builds"] == []


@pytest.mark.parametrize(("spec", "requirement"), [
    ("tensorflow==2.15.0", "tensorflow[and-cuda]==2.15.0"),  # tensorflow==2.15.0's and-cuda extra (PyPI)
    ("cupy-cuda12x==14.0.0", "cupy-cuda12x==14.0.0"),
    ("tensorrt-cu13==10.13.2", "tensorrt-cu13==10.13.2.6"),  # NVIDIA's four-part release on PyPI
])
def test_builds_name_the_package_that_installs_them(machine: Machine, spec: str, requirement: str) -> None:
    assert [b["requirement"] for b in compat(machine, spec)["builds"]] == [requirement]


def test_cudnn_release_lists_its_wheels_per_cuda_major_and_platform(machine: Machine) -> None:
    """compat/cudnn.toml [[wheel]], read from https://pypi.org/pypi/nvidia-cudnn-cu12/json and -cu13/json:
    9.19.0.56 has linux x86_64, aarch64 (sbsa) and win_amd64 files for CUDA 12 and 13."""
    data = compat(machine, "cudnn==9.19.0")
    got = {(b["cuda_major"], b["platform"]) for b in data["builds"]}
    assert got == {(m, p) for m in (12, 13) for p in ("linux-x86_64", "linux-sbsa", "windows-x86_64")}
    assert all("pypi.org/pypi/nvidia-cudnn-cu1" in b["source"] for b in data["builds"])


def test_cudnn_releases_for_a_cuda_major_and_platform() -> None:
    """nvidia-cudnn-cu13 on PyPI: the first CUDA 13 release is 9.12.0; 9.25.0.15's files were yanked, so 9.25.0
    is not offered; nvidia-cudnn-cu11 never had aarch64 files; nothing for macOS."""
    cu13 = query.cudnn_releases_for(13, "linux", "x86_64")
    assert cu13[0] == "9.12.0" and "9.25.0" not in cu13 and "9.25.1" in cu13
    assert query.cudnn_releases_for(11, "linux", "aarch64") == []
    assert query.cudnn_releases_for(12, "macos", "arm64") == []
    windows = query.cudnn_releases_for(12, "windows", "amd64")
    assert windows[0] == "8.9.4" and "8.9.2" not in windows  # nvidia-cudnn-cu12: the first win_amd64 file is 8.9.4.25
    assert "9.18.0" not in windows  # 9.18.0.77 has Linux files only
    for build in query.cudnn_builds_for(12, "linux", "x86_64"):
        assert query.cudnn_variant(build.version, "12") is not None  # a release compat/cudnn.toml holds for CUDA 12


def test_builds_for_the_planner_match_the_cli() -> None:
    assert [b.requirement for b in frameworks.builds("onnxruntime-gpu", "1.20.0")] == ["onnxruntime-gpu==1.20.0"]
    assert frameworks.builds("torch", "99.0") == []
