"""The doctor where a container or chroot leaves pieces out. A read-only root file system (a container started
with --read-only, an image's layers, a recovery shell): every folder it might write, the prefix, the cache, the home
and every temporary folder, refuses with EROFS, for root too; run in a mount namespace of the test's own whose / is
bound read-only over itself. An empty /dev (no /dev/null). Root and unshare needed; skipped elsewhere. Found by round
ten's red-team: `install` said "Permission denied ... run with sudo" to root, an install with --sha256 ended in an
internal error (no usable temporary folder), the completion's fix had the user source a script nobody wrote, and
without /dev/null a working driver was "NVML failed to initialise"."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.install_helpers import clean_env, cudnn_tree, make_archive

pytestmark = pytest.mark.skipif(sys.platform != "linux" or not hasattr(os, "geteuid") or os.geteuid() != 0
                                or shutil.which("unshare") is None, reason="a read-only root needs root and unshare")
READ_ONLY_ROOT = 'mount --bind / / && mount -o remount,bind,ro / && exec "$@"'


def on_read_only_root(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """`python -m cudnn_doctor ARGS` where / (and so every folder of this machine) is mounted read-only."""
    argv = ["unshare", "--mount", "--propagation", "private", "sh", "-c", READ_ONLY_ROOT, "sh", sys.executable,
            "-m", "cudnn_doctor", *args]
    done = subprocess.run(argv, env={**env, "PYTHONDONTWRITEBYTECODE": "1"}, capture_output=True, text=True,
                          timeout=120, stdin=subprocess.DEVNULL)
    if done.returncode != 0 and not done.stdout and "cudnn-doctor" not in done.stderr:
        pytest.skip(f"no read-only mount namespace here: {done.stderr.strip()[:200]}")
    return done


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    (tmp_path / "home").mkdir()
    return clean_env(tmp_path)


def one_line(done: subprocess.CompletedProcess[str]) -> str:
    assert "Traceback" not in done.stderr and "internal error" not in done.stderr, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    return done.stderr


def test_an_install_into_a_read_only_prefix_says_so_and_not_sudo(tmp_path: Path, env: dict[str, str]) -> None:
    archive = make_archive("txz", tmp_path)
    done = on_read_only_root(["install", "--from", str(archive), "--prefix", str(tmp_path / "cuda"), "--yes"], env)
    said = one_line(done)
    assert done.returncode == 1 and "read-only file system" in said and "sudo does not help" in said, said
    as_json = on_read_only_root(["install", "--from", str(archive), "--prefix", str(tmp_path / "cuda"), "--yes",
                                 "--json"], env)
    result = json.loads(as_json.stdout)["result"]
    assert result["status"] == "failed" and "read-only file system" in result["error"], result
    assert not (tmp_path / "cuda").exists()


def test_an_uninstall_from_a_read_only_prefix_says_so(tmp_path: Path, env: dict[str, str]) -> None:
    prefix = cudnn_tree(tmp_path / "cuda")
    done = on_read_only_root(["uninstall", "--prefix", str(prefix), "--yes"], env)
    said = one_line(done)
    assert done.returncode == 1 and "read-only file system" in said and "remount it read-write" in said, said


def test_a_checked_archive_with_no_folder_for_its_copy_is_one_line(tmp_path: Path, env: dict[str, str]) -> None:
    """--sha256 copies the archive while it hashes it, into the cache or else the temporary folder: with neither
    writable Python's tempfile raised FileNotFoundError ('No usable temporary directory'), an internal error."""
    wheel = make_archive("wheel", tmp_path)
    done = on_read_only_root(["install", "--from", str(wheel), "--prefix", str(tmp_path / "cuda"), "--dry-run",
                              "--sha256", "0" * 64], env)
    said = one_line(done)
    assert done.returncode == 1 and "no folder could keep the checked copy" in said and "Read-only" in said, said


def test_check_and_completion_on_a_read_only_root(tmp_path: Path, env: dict[str, str]) -> None:
    report = on_read_only_root(["check", "--json"], env)
    assert report.returncode in (0, 1) and json.loads(report.stdout)["summary"], report.stderr
    completion = on_read_only_root(["--install-completion", "bash"], env)
    said = one_line(completion)
    assert completion.returncode == 2 and "--show-completion bash > " in said, said


def test_a_root_without_dev_null_still_asks_the_driver(tmp_path: Path, env: dict[str, str]) -> None:
    """A chroot or container whose /dev is an empty folder (no /dev/null): the probes' children got /dev/null as
    their standard input, could not start, and a working driver was CD104 'NVML failed to initialise' (advice: a
    driver mismatch, reboot). Their input is now a pipe closed at once: the driver is read as anywhere else."""
    from tests.fakes.build import fake_nvml

    fake_nvml(tmp_path / "driver", driver="580.65.06", cuda=13000)
    env = {**env, "LD_LIBRARY_PATH": str(tmp_path / "driver")}
    argv = ["unshare", "--mount", "--propagation", "private", "sh", "-c", 'mount -t tmpfs none /dev && exec "$@"',
            "sh", sys.executable, "-m", "cudnn_doctor", "check", "--json"]
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    if not done.stdout:
        pytest.skip(f"no mount namespace with an empty /dev here: {done.stderr.strip()[:200]}")
    report = json.loads(done.stdout)
    assert "CD104" not in {f["code"] for f in report["findings"]}, report["findings"]
    assert report["driver"]["version"] == "580.65.06"
