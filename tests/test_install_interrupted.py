"""An install killed midway (SIGKILL) is rolled back by the next run; Ctrl-C and SIGTERM roll
back at once. Either way the prefix ends byte-for-byte as it was (same files, same inodes)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tarfile
import time
from pathlib import Path

import pytest

from tests.install_helpers import CLI, clean_env, make_archive, run_json, snapshot

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="installs are applied on Linux hosts")


@pytest.fixture
def upgrade(tmp_path: Path) -> tuple[Path, Path, dict[str, str]]:
    """(a cuDNN 9.19.0 archive, a prefix holding a hand-copied cuDNN 9.1.0, the environment)"""
    (tmp_path / "old").mkdir()
    old = make_archive("txz", tmp_path / "old", version=90100)
    prefix = tmp_path / "cuda"
    with tarfile.open(old) as tar:
        tar.extractall(tmp_path / "unpacked", filter="tar")
    unpacked = next((tmp_path / "unpacked").iterdir())
    (unpacked / "lib").rename(unpacked / "lib64")
    (unpacked / "LICENSE").unlink()
    unpacked.rename(prefix)
    (prefix / "bin").mkdir()
    (prefix / "bin" / "nvcc").write_text("#!/bin/sh\n")
    return make_archive("txz", tmp_path, version=91900), prefix, clean_env(tmp_path)


def start_paused(archive: Path, prefix: Path, env: dict[str, str], after: int) -> subprocess.Popen[str]:
    """Start an install that stops after AFTER files are moved; return once it has stopped there."""
    process = subprocess.Popen([sys.executable, "-c", CLI, "install", "--from", str(archive), "--prefix", str(prefix),
                                "--yes"], env={**env, "CUDNN_DOCTOR_TEST_PAUSE_AFTER_N_FILES": str(after)},
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True)
    assert process.stderr is not None
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        line = process.stderr.readline()
        if "paused after" in line:
            return process
        if not line and process.poll() is not None:
            break
    process.kill()
    raise AssertionError(f"the install never paused: {process.stderr.read()}")


def test_sigkill_midway_is_rolled_back_by_the_next_run(upgrade) -> None:  # type: ignore[no-untyped-def]
    archive, prefix, env = upgrade
    before = snapshot(prefix)
    process = start_paused(archive, prefix, env, after=12)
    process.send_signal(signal.SIGKILL)
    process.wait(timeout=30)
    assert snapshot(prefix) != before  # really half-done
    assert (prefix / ".cudnn-doctor" / "journal.json").exists()

    code, data, err = run_json(["install", "--from", str(archive), "--prefix", str(prefix), "--dry-run"], env)
    assert code == 0 and any("interrupted install is pending" in n for n in data["plan"]["notes"])

    code, data, err = run_json(["uninstall", "--prefix", str(prefix), "--yes"], env)
    assert code == 0, err
    assert any("rolled back an interrupted install" in note for note in data["result"]["notes"])
    assert data["result"]["status"] == "nothing-to-do"
    assert snapshot(prefix) == before


def test_the_next_install_rolls_back_first_then_installs(upgrade) -> None:  # type: ignore[no-untyped-def]
    archive, prefix, env = upgrade
    before = snapshot(prefix)
    process = start_paused(archive, prefix, env, after=3)
    os.kill(process.pid, signal.SIGKILL)
    process.wait(timeout=30)
    code, data, err = run_json(["install", "--from", str(archive), "--prefix", str(prefix), "--yes"], env)
    assert code == 0, err
    assert any("rolled back an interrupted install" in note for note in data["result"]["notes"])
    assert data["result"]["installed"]["version"] == "9.19.0"
    code, data, err = run_json(["uninstall", "--prefix", str(prefix), "--yes"], env)
    assert code == 0, err
    assert snapshot(prefix) == before


@pytest.mark.parametrize("signum, exit_code", [(signal.SIGINT, 130), (signal.SIGTERM, 130)])
def test_ctrl_c_and_sigterm_roll_back_at_once(upgrade, signum: int, exit_code: int) -> None:  # type: ignore[no-untyped-def]
    archive, prefix, env = upgrade
    before = snapshot(prefix)
    process = start_paused(archive, prefix, env, after=20)
    process.send_signal(signum)
    assert process.wait(timeout=60) == exit_code
    rest = process.stderr.read() if process.stderr else ""
    assert "rolled back" in rest
    assert snapshot(prefix) == before


def test_the_journal_is_written_before_anything_moves(upgrade) -> None:  # type: ignore[no-untyped-def]
    archive, prefix, env = upgrade
    process = start_paused(archive, prefix, env, after=1)
    try:
        journal = json.loads((prefix / ".cudnn-doctor" / "journal.json").read_text())
        puts = [op["dest"] for op in journal["operations"] if op["kind"] == "put"]
        takes = [op["dest"] for op in journal["operations"] if op["kind"] == "take"]
        assert "lib64/libcudnn.so.9.19.0" in puts and "lib64/libcudnn.so.9.1.0" in takes
    finally:
        process.kill()
        process.wait(timeout=30)
