"""The installer never creates a state `check` calls an error (issue 24, item 3): a cuDNN major over
another in one prefix is refused with the choice spelled out, or replaces the old one whole with
`--replace` (backed up, restored by uninstall); a cuDNN built for another CUDA major than the toolkit
in the prefix is refused without `--force`. Closed loops: install, then `check` the prefix."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.install_helpers import clean_env, make_archive, run_cli, run_json, snapshot
from tests.real_wheels import real_wheel, real_wheel_stored

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="installs are applied on Linux hosts")
HEADER_AND_SUBLIBRARY_ERRORS = {"CD303", "CD305"}


def check_codes(prefix: Path, env: dict[str, str]) -> dict[str, list[str]]:
    """`check --search-path PREFIX`: the codes of the findings about the copies in PREFIX, by code."""
    result = subprocess.run([sys.executable, "-m", "cudnn_doctor", "check", "--search-path", str(prefix), "--json"],
                            env=env, capture_output=True, text=True, timeout=300)
    report = json.loads(result.stdout)
    assert any(c["path"].startswith(str(prefix)) for c in report["cudnn"]), report["cudnn"]
    found: dict[str, list[str]] = {}
    for item in report["findings"]:
        if str(prefix) in (item.get("subject") or "") + item["detail"]:
            found.setdefault(item["code"], []).append(item["detail"])
    return found


def cuda_toolkit(prefix: Path, version: str, how: str = "version.json") -> Path:
    """A CUDA toolkit's tell-tale files (no libraries): its version.json or include/cuda.h."""
    (prefix / "include").mkdir(parents=True)
    (prefix / "bin").mkdir()
    (prefix / "bin" / "nvcc").write_text("#!/bin/sh\nexit 1\n")
    major, minor = (int(p) for p in version.split(".")[:2])
    if how == "version.json":
        (prefix / "version.json").write_text(json.dumps({"cuda": {"name": "CUDA SDK", "version": version}}))
    (prefix / "include" / "cuda.h").write_text(f"/* CUDA API */\n#define CUDA_VERSION {major * 1000 + minor * 10}\n")
    return prefix


def test_a_major_over_another_is_refused_with_the_choice_or_replaces_it_whole(tmp_path: Path) -> None:
    env = clean_env(tmp_path)
    prefix = tmp_path / "cuda"
    eight = make_archive("tgz", tmp_path, version=8907, cudart=12020)
    code, data, err = run_json(["install", "--from", str(eight), "--prefix", str(prefix), "--yes"], env)
    assert code == 0, err
    with_eight = snapshot(prefix)
    nine = make_archive("txz", tmp_path, version=91900, cudart=12040)

    for extra in ([], ["--dry-run"]):
        result = run_cli(["install", "--from", str(nine), "--prefix", str(prefix), "--yes", *extra], env)
        assert result.returncode == 2, result.stderr
        assert "CD518" in result.stderr and "cuDNN 8.9.7" in result.stderr and "--replace" in result.stderr
        assert f"--prefix {prefix}-cudnn9" in result.stderr and "Traceback" not in result.stderr
        assert snapshot(prefix) == with_eight  # nothing staged, nothing moved
    assert not HEADER_AND_SUBLIBRARY_ERRORS & set(check_codes(prefix, env))

    code, data, err = run_json(["install", "--from", str(nine), "--prefix", str(prefix), "--yes", "--replace"], env)
    assert code == 0, err
    assert data["plan"]["replaced_majors"] == [8] and data["plan"]["other_majors"] == []
    removed = {c["path"] for c in data["plan"]["changes"] if c["action"] == "remove"}
    assert {"lib64/libcudnn.so.8.9.7", "lib64/libcudnn.so.8", "lib64/libcudnn_cnn_infer.so.8.9.7"} <= removed
    assert not [p for p in os.listdir(prefix / "lib64") if ".so.8" in p]
    found = check_codes(prefix, env)
    assert not HEADER_AND_SUBLIBRARY_ERRORS & set(found), found

    code, data, err = run_json(["uninstall", "--prefix", str(prefix), "--yes"], env)
    assert code == 0, err
    assert snapshot(prefix) == with_eight  # cuDNN 8 back, byte for byte, the same inodes
    assert not HEADER_AND_SUBLIBRARY_ERRORS & set(check_codes(prefix, env))


@pytest.mark.parametrize("how", ["version.json", "cuda.h"])
def test_a_cudnn_for_another_cuda_major_than_the_toolkit_is_refused_without_force(tmp_path: Path, how: str) -> None:
    env = clean_env(tmp_path)
    prefix = cuda_toolkit(tmp_path / "cuda-13.0", "13.0.96" if how == "version.json" else "13.0", how)
    before = snapshot(prefix)
    archive = make_archive("txz", tmp_path, version=91900, cudart=12040, cuda=12)
    for extra in ([], ["--dry-run"]):
        code, data, err = run_json(["install", "--from", str(archive), "--prefix", str(prefix), "--yes", *extra], env)
        assert code == 2, err
        finding = data["findings"][0]
        assert finding["code"] == "CD519" and "built for CUDA 12" in finding["detail"]
        assert ("version.json" if how == "version.json" else "include/cuda.h") in finding["detail"]
        assert "--cuda 13 --prefix" in finding["fix"] and "--force" in finding["fix"]
        assert snapshot(prefix) == before
    code, data, err = run_json(["install", "--from", str(archive), "--prefix", str(prefix), "--yes", "--force"], env)
    assert code == 0, err
    assert any("--force" in note for note in data["plan"]["notes"])
    assert (prefix / "lib64" / "libcudnn.so.9.19.0").is_file()


# --- the same loops with NVIDIA's real wheels ----------------------------------------------------------------
@pytest.mark.integration
@pytest.mark.skipif(os.uname().machine != "x86_64", reason="the wheels are for x86_64")
def test_real_cudnn_8_then_9_in_one_prefix_never_leaves_a_header_mismatch(tmp_path: Path) -> None:
    env = clean_env(tmp_path)
    prefix = tmp_path / "cudnn"
    # cuDNN 8.9.7's 705 MB with its members stored (the same files; zlib inflating them is not this test's point),
    # 9.19.0's wheel itself: the replacing install inflates NVIDIA's real archive
    eight, nine = real_wheel_stored("8.9.7"), real_wheel("9.19.0")
    code, data, err = run_json(["install", "--from", str(eight), "--prefix", str(prefix), "--yes"], env)
    assert code == 0, err
    with_eight = snapshot(prefix)
    assert not HEADER_AND_SUBLIBRARY_ERRORS & set(check_codes(prefix, env))
    result = run_cli(["install", "--from", str(nine), "--prefix", str(prefix), "--yes"], env)
    assert result.returncode == 2 and "CD518" in result.stderr and "--replace" in result.stderr, result.stderr
    assert snapshot(prefix) == with_eight
    code, data, err = run_json(["install", "--from", str(nine), "--prefix", str(prefix), "--yes", "--replace"], env)
    assert code == 0, err
    assert data["result"]["installed"]["version"] == "9.19.0"
    found = check_codes(prefix, env)
    assert not HEADER_AND_SUBLIBRARY_ERRORS & set(found), found
    code, data, err = run_json(["uninstall", "--prefix", str(prefix), "--yes"], env)
    assert code == 0, err
    assert snapshot(prefix) == with_eight
    assert not HEADER_AND_SUBLIBRARY_ERRORS & set(check_codes(prefix, env))


@pytest.mark.integration
@pytest.mark.skipif(os.uname().machine != "x86_64", reason="the wheels are for x86_64")
def test_real_cu12_cudnn_into_a_cuda_13_toolkit_is_refused_and_nothing_written(tmp_path: Path) -> None:
    env = clean_env(tmp_path)
    prefix = cuda_toolkit(tmp_path / "cuda-13.0", "13.0.96")
    before = snapshot(prefix)
    result = run_cli(["install", "--from", str(real_wheel("8.9.7")), "--prefix", str(prefix), "--yes"], env)
    assert result.returncode == 2, result.stderr
    line = result.stderr.strip()
    assert line.startswith("cudnn-doctor: error: ") and "CD519" in line and "cuDNN 8.9.7" in line, line
    assert "cuDNN 8 has no CUDA 13 build" in line and "--cuda 13 --prefix" in line and "--force" in line
    assert snapshot(prefix) == before
