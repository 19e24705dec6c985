"""Killed at every step boundary of install, rollback and recovery, the next command leaves the
prefix byte-for-byte as it was (same files, same inodes) or fully installed; Ctrl-C and SIGTERM
roll back at once. The boundaries come from the product's own fault-injection hook
(`cudnn_doctor/install/faults.py`): a first run lists them, then one run is killed at each."""

from __future__ import annotations

import json
import os
import signal
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tests.install_helpers import (
    clean_env,
    cudnn7_archive,
    cudnn7_prefix,
    make_archive,
    run_cli,
    run_json,
    snapshot,
    snapshot_content,
)

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="installs are applied on Linux hosts")
KILL = "CUDNN_DOCTOR_TEST_KILL_AT"
LOG = "CUDNN_DOCTOR_TEST_STEP_LOG"


def steps_of(args: list[str], env: dict[str, str], log: Path) -> list[str]:
    """Every step boundary (`name:N`) one run of ARGS passes, in order."""
    log.unlink(missing_ok=True)
    run_cli(args, {**env, LOG: str(log)})
    return log.read_text().split()


def link_tree(source: Path, copy: Path) -> None:
    """SOURCE copied as hard links (files and symlinks alike): the same inodes, as a journal knows
    them; the lock file is left out (a lock is its inode)."""
    for folder, _dirs, files in os.walk(source):
        rel = Path(folder).relative_to(source)
        (copy / rel).mkdir(parents=True, exist_ok=True)
        for name in files:
            if name != "lock":
                os.link(Path(folder) / name, copy / rel / name, follow_symlinks=False)
    for folder, dirs, _files in os.walk(source):
        for name in dirs:  # os.walk lists links to folders as folders: none are expected here
            assert not (Path(folder) / name).is_symlink()


def install_args(archive: Path, prefix: Path) -> list[str]:
    return ["install", "--from", str(archive), "--prefix", str(prefix), "--yes"]


def killed(args: list[str], env: dict[str, str], at: str) -> None:
    result = run_cli(args, {**env, KILL: at})
    assert result.returncode == -signal.SIGKILL, (at, result.returncode, result.stderr)


def at_each(points: list[str], one) -> None:  # type: ignore[no-untyped-def]
    """ONE(index, point) for each kill point, one after the other in this thread: the killed run is a process of its
    own (the fault hook kills it), the commands after it run in this process (install_helpers.run_cli), as a user's
    next command would find the prefix. In two threads each of those was a process too: a Python start and the
    doctor's imports per command, about half of these families' CPU, on a machine whose cores the other workers use."""
    for index, point in enumerate(points):
        one(index, point)


@pytest.fixture(scope="module")
def archives(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(a good cuDNN 7.6.5, one whose library is 7.6.0 under 7.6.5 headers: verification fails)"""
    out = tmp_path_factory.mktemp("archives")
    (out / "bad").mkdir()
    return cudnn7_archive(out), cudnn7_archive(out / "bad", 7600, 7605)


def fresh(tmp: Path, name: str) -> tuple[Path, dict[str, str], dict[str, tuple]]:  # type: ignore[type-arg]
    """A prefix with cuDNN 7.6.0 in it, its environment, and its snapshot."""
    root = tmp / name
    root.mkdir()
    prefix = cudnn7_prefix(root / "cuda")
    return prefix, clean_env(root), snapshot(prefix)


def test_killed_at_every_install_step_the_next_command_restores_or_finishes(archives, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    good, _ = archives
    prefix, env, before = fresh(tmp_path, "list")
    points = steps_of(install_args(good, prefix), env, tmp_path / "steps.log")
    names = {p.split(":")[0] for p in points}
    assert {"staging.journal", "extract.member", "apply.journal", "apply.backup", "apply.put", "apply.take",
            "verify", "commit.manifest", "commit.journal", "commit.done"} <= names, points
    installed = snapshot_content(prefix)
    assert (prefix / "lib64" / "libcudnn.so.7.6.5").is_file() and not (prefix / "lib64" / "libcudnn.so.7.6.0").exists()

    def one(index: int, point: str) -> None:
        prefix, env, before = fresh(tmp_path, f"k{index}")
        killed(install_args(good, prefix), env, point)
        if index % 4 == 1:  # the next command is an install: it recovers (or finds it done) and installs
            code, data, err = run_json(install_args(good, prefix), env)
            assert code == 0, (point, err)
            now = snapshot_content(prefix)
            assert {k: v for k, v in now.items() if not k.startswith(".cudnn-doctor")} == \
                {k: v for k, v in installed.items() if not k.startswith(".cudnn-doctor")}, point
        for _ in range(3):  # each install recorded is undone by one uninstall, the newest first
            code, data, err = run_json(["uninstall", "--prefix", str(prefix), "--yes"], env)
            assert code == 0, (point, err)
            if data["result"]["status"] == "nothing-to-do":
                break
        assert snapshot(prefix) == before, point  # byte for byte, the same inodes

    at_each(points, one)
    print(f"install: {len(points)} kill points recovered")


def test_killed_at_every_rollback_step_the_originals_survive(archives, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    _, bad = archives
    prefix, env, before = fresh(tmp_path, "list")
    points = steps_of(install_args(bad, prefix), env, tmp_path / "steps.log")
    assert snapshot(prefix) == before  # verification failed: rolled back at once
    rollback = [p for p in points if p.startswith("rollback.")]
    assert {p.split(":")[0] for p in rollback} >= {"rollback.unput", "rollback.restore", "rollback.journal",
                                                   "rollback.cleanup"}, points

    def one(index: int, point: str) -> None:
        prefix, env, before = fresh(tmp_path, f"r{index}")
        original = (prefix / "include" / "cudnn.h").read_bytes()
        killed(install_args(bad, prefix), env, point)
        code, data, err = run_json(["uninstall", "--prefix", str(prefix), "--yes"], env)
        assert code == 0, (point, err)
        assert (prefix / "include" / "cudnn.h").read_bytes() == original, point
        assert snapshot(prefix) == before, point

    at_each(rollback, one)
    print(f"rollback: {len(rollback)} kill points recovered")


@pytest.mark.parametrize("interrupted_at", ["extract.member:2", "apply.take:1"])
def test_killed_at_every_recovery_step_the_next_run_still_recovers(archives, tmp_path: Path,
                                                                     interrupted_at: str) -> None:
    """Extraction (nothing moved yet), and after every move of the install (the most to undo)."""
    good, _ = archives
    prefix, env, before = fresh(tmp_path, "list")
    pristine = snapshot_content(prefix)
    killed(install_args(good, prefix), env, interrupted_at)
    interrupted = tmp_path / "interrupted"
    # the half-done prefix, copied for each kill point as hard links: the same inodes, as the journal knows them
    link_tree(prefix, interrupted)
    points = steps_of(["uninstall", "--prefix", str(prefix), "--yes"], env, tmp_path / "steps.log")
    assert snapshot(prefix) == before
    assert points, "the recovery passed no step"

    def one(index: int, point: str) -> None:
        prefix = tmp_path / f"c{index}" / "cuda"
        link_tree(interrupted, prefix)
        env = clean_env(prefix.parent)
        killed(["uninstall", "--prefix", str(prefix), "--yes"], env, point)
        code, data, err = run_json(["uninstall", "--prefix", str(prefix), "--yes"], env)
        assert code == 0, (point, err)
        assert snapshot_content(prefix) == pristine, point

    at_each(points, one)
    print(f"recovery after {interrupted_at}: {len(points)} kill points recovered")


def test_killed_at_every_uninstall_step_the_next_uninstall_finishes(archives, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    good, _ = archives
    prefix, env, before = fresh(tmp_path, "list")
    pristine = snapshot_content(prefix)
    code, data, err = run_json(install_args(good, prefix), env)
    assert code == 0, err
    installed = tmp_path / "installed"
    link_tree(prefix, installed)
    points = steps_of(["uninstall", "--prefix", str(prefix), "--yes"], env, tmp_path / "steps.log")
    assert snapshot(prefix) == before
    assert {p.split(":")[0] for p in points} >= {"apply.take", "apply.put", "commit.journal"}, points

    def one(index: int, point: str) -> None:
        prefix = tmp_path / f"u{index}" / "cuda"
        link_tree(installed, prefix)
        env = clean_env(prefix.parent)
        killed(["uninstall", "--prefix", str(prefix), "--yes"], env, point)
        # a killed uninstall is rolled back and done again, or finished: either way, once
        code, data, err = run_json(["uninstall", "--prefix", str(prefix), "--yes"], env)
        assert code == 0, (point, err)
        assert data["result"]["status"] in ("uninstalled", "nothing-to-do"), point
        assert snapshot_content(prefix) == pristine, point

    at_each(points, one)
    print(f"uninstall: {len(points)} kill points recovered")


def test_a_killed_install_is_pending_for_a_dry_run_and_noted_by_the_next_run(archives, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    good, _ = archives
    prefix, env, before = fresh(tmp_path, "p")
    killed(install_args(good, prefix), env, "apply.put:2")
    assert snapshot(prefix) != before  # really half-done
    code, data, err = run_json([*install_args(good, prefix)[:-1], "--dry-run"], env)
    assert code == 0 and any("interrupted install is pending" in n for n in data["plan"]["notes"])
    code, data, err = run_json(["uninstall", "--prefix", str(prefix), "--yes"], env)
    assert code == 0, err
    assert any("rolled back an interrupted install" in note for note in data["result"]["notes"])
    assert data["result"]["status"] == "nothing-to-do"
    assert snapshot(prefix) == before


def test_the_journal_is_written_before_anything_moves(archives, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    good, _ = archives
    prefix, env, before = fresh(tmp_path, "j")
    killed(install_args(good, prefix), env, "apply.journal")
    assert snapshot(prefix) == {**before, **{k: v for k, v in snapshot(prefix).items() if k.startswith(".cudnn")}}
    journal = json.loads((prefix / ".cudnn-doctor" / "journal.json").read_text())
    assert journal["phase"] == "applying"
    puts = [op["dest"] for op in journal["operations"] if op["kind"] == "put"]
    takes = [op["dest"] for op in journal["operations"] if op["kind"] == "take"]
    assert "lib64/libcudnn.so.7.6.5" in puts and "lib64/libcudnn.so.7.6.0" in takes


@pytest.mark.parametrize("signame", ["INT", "TERM", "HUP"])
def test_ctrl_c_and_sigterm_roll_back_at_once(tmp_path: Path, signame: str) -> None:
    (tmp_path / "a").mkdir()
    archive = make_archive("txz", tmp_path / "a", version=91900)
    prefix = tmp_path / "cuda"
    (prefix / "lib64").mkdir(parents=True)
    (prefix / "lib64" / "libcudnn.so.9.1.0").write_bytes(b"an old copy")
    os.symlink("libcudnn.so.9.1.0", prefix / "lib64" / "libcudnn.so.9")
    env = clean_env(tmp_path)
    before = snapshot(prefix)
    result = run_cli(install_args(archive, prefix), {**env, KILL: f"apply.put:12:{signame}"})
    assert result.returncode == 128 + getattr(signal, f"SIG{signame}"), result.stderr  # README: 130 and 143
    assert "rolled back" in result.stderr
    assert snapshot(prefix) == before


def _installed_as_recorded(prefix: Path) -> list[str]:
    """The files of PREFIX that are not what its newest manifest records (empty: one complete install)."""
    import hashlib

    from cudnn_doctor.install.manifest import read_records

    wrong = []
    for written in read_records(prefix)[-1].files:
        path = prefix / written.path
        if written.kind == "symlink":
            ok = path.is_symlink() and os.readlink(path) == written.target
        else:
            ok = not path.is_symlink() and path.is_file() and \
                hashlib.sha256(path.read_bytes()).hexdigest() == written.sha256
        if not ok:
            wrong.append(written.path)
    return wrong


def test_two_installs_into_one_prefix_at_once_leave_one_complete_install(tmp_path: Path) -> None:
    """The first install is held still between its yes and its first change (a slow machine), while a
    second tries another release in the same prefix: the first holds the prefix from its reading of the archive
    to its commit, so the second changes nothing (CD510); the first then finishes, complete and as recorded."""
    import subprocess
    import time

    from tests.install_helpers import CLI, REPO

    env = clean_env(tmp_path)
    first_archive = make_archive("txz", tmp_path / "a", version=91900)
    second_archive = make_archive("txz", tmp_path / "b", version=91800)
    prefix = tmp_path / "cuda"
    first = subprocess.Popen([sys.executable, "-c", CLI, "install", "--from", str(first_archive), "--prefix",
                              str(prefix), "--yes"], env={**env, KILL: "install.confirmed:1:STOP"}, cwd=str(REPO),
                             stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while Path(f"/proc/{first.pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "T":
            assert first.poll() is None and time.monotonic() < deadline, first.communicate()
            time.sleep(0.05)
        second = run_cli(["install", "--from", str(second_archive), "--prefix", str(prefix), "--yes"], env)
        assert second.returncode == 1 and "CD510" in second.stderr, second.stderr
    finally:
        os.kill(first.pid, signal.SIGCONT)
    _, stderr = first.communicate(timeout=120)
    assert first.returncode == 0, stderr
    assert len(list((prefix / ".cudnn-doctor").glob("manifest-*.json"))) == 1
    assert os.readlink(prefix / "lib64" / "libcudnn.so.9") == "libcudnn.so.9.19.0"
    assert _installed_as_recorded(prefix) == []

    # both at the very same time: one installs; the other waits its turn or is CD510, never both half
    for round_ in range(3):
        target = tmp_path / f"together-{round_}"
        with ThreadPoolExecutor(2) as pool:
            runs = [pool.submit(run_cli, ["install", "--from", str(archive), "--prefix", str(target), "--yes"], env)
                    for archive in (first_archive, second_archive)]
            results = [run.result() for run in runs]
        assert 0 in [r.returncode for r in results]
        assert all(r.returncode == 0 or "CD510" in r.stderr for r in results), [r.stderr for r in results]
        manifests = len(list((target / ".cudnn-doctor").glob("manifest-*.json")))
        assert manifests == sum(r.returncode == 0 for r in results)
        assert _installed_as_recorded(target) == []
