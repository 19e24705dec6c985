"""`cudnn-doctor install` / `uninstall` from local archives of every layout, run as a user runs them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.install_helpers import clean_env, make_archive, run_cli, run_json, snapshot

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="installs are applied on Linux hosts")


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return clean_env(tmp_path)


def check_json(prefix: Path, env: dict[str, str]) -> dict:  # type: ignore[type-arg]
    result = subprocess.run([sys.executable, "-m", "cudnn_doctor", "check", "--search-path", str(prefix), "--json"],
                            env=env, capture_output=True, text=True, timeout=120)
    return json.loads(result.stdout)


def test_txz_archive_installs_with_links_kept_and_check_finds_it(tmp_path: Path, env: dict[str, str]) -> None:
    archive = make_archive("txz", tmp_path, version=91900, cudart=12040)
    prefix = tmp_path / "cuda"
    code, data, err = run_json(["install", "--from", str(archive), "--prefix", str(prefix), "--yes"], env)
    assert code == 0, err
    assert data["schema"] == "cudnn-doctor/install/1"
    assert data["result"]["status"] == "installed"
    assert data["result"]["installed"]["version"] == "9.19.0"
    lib = prefix / "lib64"
    assert os.readlink(lib / "libcudnn.so") == "libcudnn.so.9"
    assert os.readlink(lib / "libcudnn.so.9") == "libcudnn.so.9.19.0"
    assert (lib / "libcudnn.so.9.19.0").is_file() and not (lib / "libcudnn.so.9.19.0").is_symlink()
    assert os.readlink(lib / "libcudnn_ops.so.9") == "libcudnn_ops.so.9.19.0"
    assert (prefix / "include" / "cudnn_version.h").is_file()
    assert not (prefix / "LICENSE").exists()
    for path in list(lib.iterdir()) + list((prefix / "include").iterdir()):
        if not path.is_symlink():
            assert path.stat().st_mode & 0o444 == 0o444, path  # a+r
    manifest = json.loads(Path(data["result"]["manifest"]).read_text())
    written = {f["path"]: f for f in manifest["files"]}
    assert written["lib64/libcudnn.so.9"]["target"] == "libcudnn.so.9.19.0"
    assert len(written["lib64/libcudnn.so.9.19.0"]["sha256"]) == 64
    assert "export LD_LIBRARY_PATH=" + str(lib) in data["result"]["loader"]
    report = check_json(prefix, env)
    found = [c for c in report["cudnn"] if c["path"] == str(lib)]
    assert found and found[0]["version"] == "9.19.0" and found[0]["cuda_version"] == "12.4"
    code, data, err = run_json(["uninstall", "--prefix", str(prefix), "--yes"], env)
    assert code == 0, err
    assert not prefix.exists()  # the install created it; nothing else was ever in it


def test_old_tgz_cuda_tree_installs(tmp_path: Path, env: dict[str, str]) -> None:
    archive = make_archive("tgz", tmp_path, version=8907, cudart=12020)
    prefix = tmp_path / "cuda"
    code, data, err = run_json(["install", "--from", str(archive), "--prefix", str(prefix), "--yes"], env)
    assert code == 0, err
    assert data["result"]["installed"]["version"] == "8.9.7"
    assert os.readlink(prefix / "lib64" / "libcudnn.so.8") == "libcudnn.so.8.9.7"
    assert (prefix / "lib64" / "libcudnn_cnn_infer.so.8.9.7").is_file()


def test_wheel_gets_the_versioned_chain_an_archive_has(tmp_path: Path, env: dict[str, str]) -> None:
    archive = make_archive("wheel", tmp_path, version=91900, cuda=13)
    prefix = tmp_path / "cuda"
    code, data, err = run_json(["install", "--from", str(archive), "--prefix", str(prefix), "--yes"], env)
    assert code == 0, err
    lib = prefix / "lib64"
    assert os.readlink(lib / "libcudnn.so") == "libcudnn.so.9"
    assert os.readlink(lib / "libcudnn.so.9") == "libcudnn.so.9.19.0"
    assert (lib / "libcudnn_heuristic.so.9.19.0").is_file()
    assert not (prefix / "nvidia_cudnn_cu13-9.19.0.7.dist-info").exists()
    assert data["plan"]["cuda_major"] == 13


def test_dry_run_plans_and_writes_nothing(tmp_path: Path, env: dict[str, str]) -> None:
    archive = make_archive("txz", tmp_path)
    prefix = tmp_path / "cuda"
    (prefix / "lib64").mkdir(parents=True)
    before = snapshot(prefix)
    code, data, err = run_json(["install", "--from", str(archive), "--prefix", str(prefix), "--dry-run"], env)
    assert code == 0, err
    assert data["result"]["status"] == "planned"
    actions = {c["path"]: c["action"] for c in data["plan"]["changes"]}
    assert actions["lib64/libcudnn.so.9.19.0"] == "add"
    assert "include" in data["plan"]["created_folders"]
    assert data["plan"]["bytes_needed"] > 0
    assert snapshot(prefix) == before


def test_text_plan_is_shown_before_the_result(tmp_path: Path, env: dict[str, str]) -> None:
    archive = make_archive("txz", tmp_path)
    result = run_cli(["install", "--from", str(archive), "--prefix", str(tmp_path / "p"), "--yes"], env)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert out.index("Plan: cuDNN 9.19.0 for CUDA 12") < out.index("✓ installed cuDNN 9.19.0")
    assert "+ lib64/libcudnn.so.9.19.0" in out
    assert "export LD_LIBRARY_PATH=" in out


def test_without_yes_and_without_a_terminal_nothing_changes(tmp_path: Path, env: dict[str, str]) -> None:
    archive = make_archive("txz", tmp_path)
    prefix = tmp_path / "p"
    prefix.mkdir()
    result = run_cli(["install", "--from", str(archive), "--prefix", str(prefix)], env)
    assert result.returncode == 2
    assert "--yes" in result.stderr
    assert snapshot(prefix) == {}


def test_upgrade_removes_same_major_replaces_other_major_and_uninstall_restores_exactly(
        tmp_path: Path, env: dict[str, str]) -> None:
    prefix = tmp_path / "cuda"
    old8 = make_archive("tgz", tmp_path, version=8907, cudart=12020)
    assert run_cli(["install", "--from", str(old8), "--prefix", str(prefix), "--yes"], env).returncode == 0
    # a cuDNN 9.1.0 copied by hand, the way the recipe does it (no manifest for it)
    (tmp_path / "hand").mkdir()
    hand = make_archive("txz", tmp_path / "hand", version=90100)
    import tarfile

    with tarfile.open(hand) as tar:
        tar.extractall(tmp_path / "unpacked", filter="tar")
    unpacked = next((tmp_path / "unpacked").iterdir())
    for path in (unpacked / "lib").iterdir():
        os.system(f"cp -P '{path}' '{prefix / 'lib64'}'")
    for path in (unpacked / "include").iterdir():
        os.system(f"cp '{path}' '{prefix / 'include'}'")
    before = snapshot(prefix)

    new = make_archive("txz", tmp_path, version=91900)
    code, data, err = run_json(["install", "--from", str(new), "--prefix", str(prefix), "--yes"], env)
    assert code == 2 and "CD518" in err and "--replace" in err  # cuDNN 8 is there: the choice is the user's
    assert snapshot(prefix) == before
    code, data, err = run_json(["install", "--from", str(new), "--prefix", str(prefix), "--yes", "--replace"], env)
    assert code == 0, err
    actions = {c["path"]: c["action"] for c in data["plan"]["changes"]}
    assert actions["lib64/libcudnn.so.9.1.0"] == "remove"
    assert actions["lib64/libcudnn_ops.so.9.1.0"] == "remove"
    assert actions["lib64/libcudnn.so.9"] == "replace"
    assert actions["include/cudnn_v8.h"] == "remove"  # headers of another version never stay beside
    assert actions["lib64/libcudnn.so.8"] == actions["lib64/libcudnn.so.8.9.7"] == "remove"  # --replace: whole
    assert data["plan"]["replaced_majors"] == [8] and data["plan"]["other_majors"] == []
    assert any("9.1.0" in line for line in data["plan"]["current"])
    lib = prefix / "lib64"
    assert not (lib / "libcudnn.so.9.1.0").exists()
    assert not (lib / "libcudnn.so.8.9.7").exists()  # never cuDNN 8's libraries beside cuDNN 9's headers
    assert os.readlink(lib / "libcudnn.so.9") == "libcudnn.so.9.19.0"

    code, data, err = run_json(["uninstall", "--prefix", str(prefix), "--yes"], env)
    assert code == 0, err
    assert data["result"]["status"] == "uninstalled"
    assert snapshot(prefix) == before  # same files, same inodes, same links

    # the cuDNN 8 install: the hand copy overwrote two of its files since, so it asks for --force
    code, data, err = run_json(["uninstall", "--prefix", str(prefix), "--yes"], env)
    assert code == 1 and "include/cudnn_version.h" in err and "--force" in err
    assert snapshot(prefix) == before
    code, data, err = run_json(["uninstall", "--prefix", str(prefix), "--yes", "--force"], env)
    assert code == 0, err
    remaining = {k for k in snapshot(prefix) if "libcudnn" in k and ".so.8" in k}
    assert remaining == set()
    code, data, err = run_json(["uninstall", "--prefix", str(prefix), "--yes"], env)
    assert code == 0 and data["result"]["status"] == "nothing-to-do"


def test_uninstall_refuses_when_an_installed_file_changed(tmp_path: Path, env: dict[str, str]) -> None:
    archive = make_archive("txz", tmp_path)
    prefix = tmp_path / "cuda"
    assert run_cli(["install", "--from", str(archive), "--prefix", str(prefix), "--yes"], env).returncode == 0
    (prefix / "include" / "cudnn.h").write_text("edited by hand\n")
    before = snapshot(prefix)
    result = run_cli(["uninstall", "--prefix", str(prefix), "--yes"], env)
    assert result.returncode == 1
    assert "changed since the install" in result.stderr and "--force" in result.stderr
    assert snapshot(prefix) == before
    result = run_cli(["uninstall", "--prefix", str(prefix), "--yes", "--force"], env)
    assert result.returncode == 0, result.stderr
    assert not (prefix / "include" / "cudnn.h").exists()


def test_windows_zip_is_planned_in_the_windows_layout(tmp_path: Path, env: dict[str, str]) -> None:
    archive = make_archive("zip", tmp_path)
    prefix = tmp_path / "win"
    code, data, err = run_json(["install", "--from", str(archive), "--prefix", str(prefix), "--os", "windows"], env)
    assert code == 0, err
    paths = {c["path"] for c in data["plan"]["changes"]}
    assert {"bin/cudnn64_9.dll", "bin/cudnn_ops64_9.dll", "include/cudnn.h", "lib/x64/cudnn.lib"} <= paths
    assert data["plan"]["env_line"] == f'set "PATH={prefix}\\bin;%PATH%"'.replace("/", "\\")
    assert data["result"]["status"] == "planned"
    assert not prefix.exists()


def test_windows_archive_is_refused_for_linux(tmp_path: Path, env: dict[str, str]) -> None:
    archive = make_archive("zip", tmp_path)
    result = run_cli(["install", "--from", str(archive), "--prefix", str(tmp_path / "p"), "--yes"], env)
    assert result.returncode == 2
    assert "CD506" in result.stderr and "Windows (DLL) libraries" in result.stderr
    assert not (tmp_path / "p").exists()


def test_macos_is_a_plan_that_says_cudnn_for_macos_ended(tmp_path: Path, env: dict[str, str]) -> None:
    archive = make_archive("txz", tmp_path)
    code, data, err = run_json(["install", "--from", str(archive), "--prefix", str(tmp_path / "mac"), "--os",
                                "macos", "--yes"], env)
    assert code == 0, err
    assert "7.6.5" in data["plan"]["plan_only"] and "10.2" in data["plan"]["plan_only"]
    assert {c["path"] for c in data["plan"]["changes"]} >= {"lib/libcudnn.so.9.19.0", "include/cudnn.h"}
    assert not (tmp_path / "mac").exists()


def test_verification_failure_rolls_back(tmp_path: Path, env: dict[str, str]) -> None:
    # headers say 9.19.0, the library answers 9.1.0: a mixed archive
    archive = make_archive("txz", tmp_path, version=90100, header_version=91900)
    prefix = tmp_path / "cuda"
    (prefix / "lib64").mkdir(parents=True)
    (prefix / "lib64" / "libcudnn.so.9").write_bytes(b"an old copy")
    before = snapshot(prefix)
    result = run_cli(["install", "--from", str(archive), "--prefix", str(prefix), "--yes"], env)
    assert result.returncode == 1, result.stderr
    assert "CD505" in result.stderr and "9.1.0" in result.stderr
    assert snapshot(prefix) == before


def test_permission_denied_is_one_line_with_both_ways_out(nobody) -> None:  # type: ignore[no-untyped-def]
    import shutil
    import tempfile

    tmp_path = Path(tempfile.mkdtemp(prefix="cudnn-doctor-perm-"))  # pytest's tmp folders are 0700: no use here
    try:
        tmp_path.chmod(0o755)
        (tmp_path / "home").mkdir()
        archive = make_archive("txz", tmp_path)
        prefix = tmp_path / "cuda"
        (prefix / "lib64").mkdir(parents=True)
        env = clean_env(tmp_path)
        (tmp_path / "cache").mkdir(mode=0o777)
        (tmp_path / "cache").chmod(0o777)
        result = subprocess.run([*nobody.argv, "-c", __import__("tests.install_helpers").install_helpers.CLI,
                                 "install", "--from", str(archive), "--prefix", str(prefix), "--yes"],
                                env=nobody.env(env), capture_output=True, text=True, timeout=120,
                                stdin=subprocess.DEVNULL)
        assert result.returncode == 1, result.stderr
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1, lines
        assert "CD503" in lines[0] and str(prefix) in lines[0]
        assert "sudo" in lines[0] and "--prefix ~/.local/cudnn" in lines[0] and "LD_LIBRARY_PATH" in lines[0]
        assert sorted(p.name for p in prefix.iterdir()) == ["lib64"]
    finally:
        shutil.rmtree(tmp_path)  # never left behind, also when the test fails


def test_cli_module_imports_nothing_of_install_at_start() -> None:
    code = ("import sys; import cudnn_doctor.cli; "
            "print(sorted(m for m in ('requests', 'cudnn_doctor.install', 'cudnn_doctor.commands.install', 'cudnn_doctor.doctor.install', 'tarfile') "
            "if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]", out


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="needs root to mount a small tmpfs")
@pytest.mark.parametrize("kind", ["txz", "wheel"])
def test_a_full_disk_rolls_back_with_one_line(tmp_path: Path, env: dict[str, str], kind: str) -> None:
    archive = make_archive(kind, tmp_path)
    disk = tmp_path / "disk"
    disk.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(disk)], capture_output=True).returncode:
        pytest.skip("cannot mount a tmpfs here")
    try:
        prefix = disk / "cuda"
        (prefix / "lib64").mkdir(parents=True)
        (prefix / "lib64" / "libcudart.so.12").write_bytes(b"x" * 1000)
        before = snapshot(prefix)
        result = run_cli(["install", "--from", str(archive), "--prefix", str(prefix), "--yes"], env)
        assert result.returncode == 1, result.stderr
        assert "CD507" in result.stderr and len(result.stderr.strip().splitlines()) == 1
        assert snapshot(prefix) == before
    finally:
        subprocess.run(["umount", str(disk)], check=False)
