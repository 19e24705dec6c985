"""Issue 15's install defects, each as a class: what is not cuDNN's stays, inputs are checked
before anything is written, a kill during extraction leaves nothing, downloads end, the plan
comes from the private staging of one pass and the space check from each member's header,
names are printed escaped, every sub-library is loaded, folders on another filesystem work.
Each test runs the CLI as a user would."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import socket
import subprocess
import sys
import tarfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from cudnn_doctor.codes import CODES
from cudnn_doctor.knowledge.advice import advice_row
from tests.install_helpers import (
    clean_env,
    cudnn7_archive,
    cudnn7_prefix,
    cudnn_tree,
    hostile_tar,
    make_archive,
    run_cli,
    run_json,
    snapshot,
    tar_folder,
    tar_info,
)

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="installs are applied on Linux hosts")
ROOT9 = "cudnn-linux-x86_64-9.19.0.7_cuda12-archive"


@pytest.fixture(scope="module")
def archive(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A cuDNN 7.6.5 .tgz (4 members: fast)."""
    return cudnn7_archive(tmp_path_factory.mktemp("a7"))


def one_line_error(result: subprocess.CompletedProcess[str], code: str | None, *words: str) -> str:
    assert result.returncode == 2 if code != "CD505" else 1, (result.returncode, result.stdout, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("cudnn-doctor: error: "), result.stderr
    if code:
        assert code in lines[0], lines[0]
    for word in words:
        assert word in lines[0], (word, lines[0])
    assert "Traceback" not in result.stderr and "\x1b" not in result.stderr + result.stdout
    return lines[0]


# --- what is not cuDNN's is never touched ---------------------------------------------------------
def test_cudnn_frontend_headers_and_user_plugins_stay(archive: Path, tmp_path: Path) -> None:
    prefix = cudnn7_prefix(tmp_path / "cuda")
    (prefix / "include" / "cudnn_frontend.h").write_text("// cudnn-frontend\n")
    (prefix / "include" / "cudnn_frontend_utils.h").write_text("// cudnn-frontend\n")
    (prefix / "lib64" / "libcudnn_myplugin.so.7").write_bytes(b"a user's plugin")
    (prefix / "lib64" / "libcudnn_myplugin.so.7.1").write_bytes(b"a user's plugin")
    theirs = {p: (prefix / p).read_bytes() for p in ("include/cudnn_frontend.h", "include/cudnn_frontend_utils.h",
                                                    "lib64/libcudnn_myplugin.so.7", "lib64/libcudnn_myplugin.so.7.1")}
    before = snapshot(prefix)
    env = clean_env(tmp_path)
    code, data, err = run_json(["install", "--from", str(archive), "--prefix", str(prefix), "--yes"], env)
    assert code == 0, err
    removed = {c["path"] for c in data["plan"]["changes"] if c["action"] == "remove"}
    assert removed == {"lib64/libcudnn.so.7.6.0"}  # the old release's own library, nothing else
    for path, content in theirs.items():
        assert (prefix / path).read_bytes() == content, path
    code, data, err = run_json(["uninstall", "--prefix", str(prefix), "--yes"], env)
    assert code == 0, err
    assert snapshot(prefix) == before


# --- inputs checked before anything is written ----------------------------------------------------------
@pytest.mark.parametrize("blank", ["", "   "])
def test_a_blank_prefix_is_a_usage_error(archive: Path, tmp_path: Path, blank: str) -> None:
    env = clean_env(tmp_path)
    one_line_error(run_cli(["install", "--from", str(archive), "--prefix", blank, "--yes"], env), None,
                   "--prefix", "empty")
    one_line_error(run_cli(["uninstall", "--prefix", blank, "--yes"], env), None, "--prefix", "empty")
    assert not (tmp_path / "home").exists() or not any((tmp_path / "home").rglob("include"))


def test_prefixes_that_cannot_be_installed_into_are_one_line(archive: Path, tmp_path: Path) -> None:
    env = clean_env(tmp_path)
    a_file = tmp_path / "a-file"
    a_file.write_text("not a folder")
    one_line_error(run_cli(["install", "--from", str(archive), "--prefix", str(a_file), "--yes"], env),
                   "CD514", "it is a file")
    dangling = tmp_path / "dangling"
    dangling.mkdir()
    (dangling / "lib64").symlink_to(tmp_path / "nowhere")
    one_line_error(run_cli(["install", "--from", str(archive), "--prefix", str(dangling), "--yes"], env),
                   "CD514", "lib64", "does not exist")
    state_file = tmp_path / "state-file"
    state_file.mkdir()
    (state_file / ".cudnn-doctor").write_text("a file")
    for args in (["install", "--from", str(archive), "--prefix", str(state_file), "--yes"],
                 ["uninstall", "--prefix", str(state_file), "--yes"]):
        one_line_error(run_cli(args, env), "CD514", ".cudnn-doctor")
    linked = tmp_path / "linked"
    linked.mkdir()
    (tmp_path / "someone-else").mkdir()
    (tmp_path / "someone-else" / "backup-2020").mkdir()
    (linked / ".cudnn-doctor").symlink_to(tmp_path / "someone-else")
    for args in (["install", "--from", str(archive), "--prefix", str(linked), "--yes"],
                 ["uninstall", "--prefix", str(linked), "--yes"]):
        one_line_error(run_cli(args, env), "CD514", ".cudnn-doctor")
    assert (tmp_path / "someone-else" / "backup-2020").is_dir()
    assert sorted(p.name for p in dangling.iterdir()) == ["lib64"]
    assert sorted(p.name for p in state_file.iterdir()) == [".cudnn-doctor"]


@pytest.mark.parametrize("name, words", [
    (f"{ROOT9}/lib/" + "x" * 300, "too long"),
    (f"{ROOT9}/lib/libcudnn\x1b[2J\x1b[31m.so.9", "control characters"),
    (f"{ROOT9}/include/cudnn\nfake.h", "control characters"),
    (f"{ROOT9}/include/cudnn\udcff.h", "not UTF-8"),
])
def test_hostile_member_names_are_refused_and_printed_escaped(tmp_path: Path, name: str, words: str) -> None:
    good = tar_folder(cudnn_tree(tmp_path / "t" / ROOT9), tmp_path / f"{ROOT9}.tar.xz", ROOT9)
    evil = hostile_tar(tmp_path / "evil.tar.gz", [(tar_info(name, size=4), b"evil")], good)
    prefix = tmp_path / "cuda"
    line = one_line_error(run_cli(["install", "--from", str(evil), "--prefix", str(prefix), "--yes"],
                                  clean_env(tmp_path)), "CD502", words)
    assert not prefix.exists()
    if "\x1b" in name:
        assert "\\x1b[2J" in line


def test_plan_paths_are_printed_escaped(archive: Path, tmp_path: Path) -> None:
    prefix = tmp_path / "cuda\x1b[2Jx"
    result = run_cli(["install", "--from", str(archive), "--prefix", str(prefix), "--dry-run"], clean_env(tmp_path))
    assert result.returncode == 0, result.stderr
    assert "\x1b" not in result.stdout and "cuda\\x1b[2Jx" in result.stdout
    prefix.write_text("a file named with an escape code")
    line = one_line_error(run_cli(["install", "--from", str(archive), "--prefix", str(prefix), "--yes"],
                                  clean_env(tmp_path)), "CD514")
    assert "cuda\\x1b[2Jx" in line


# --- a kill during extraction leaves nothing behind -------------------------------------------------------
def test_a_kill_during_extraction_is_cleaned_and_a_new_prefix_removed(archive: Path, tmp_path: Path) -> None:
    env = clean_env(tmp_path)
    prefix = tmp_path / "new" / "cuda"
    result = run_cli(["install", "--from", str(archive), "--prefix", str(prefix), "--yes"],
                     {**env, "CUDNN_DOCTOR_TEST_KILL_AT": "extract.member:3"})
    assert result.returncode == -9
    assert any(prefix.rglob("staging-*"))  # really killed with a staging folder
    code, data, err = run_json(["uninstall", "--prefix", str(prefix), "--yes"], env)
    assert code == 0, err
    assert not prefix.exists()  # the run that created it was killed: the next one removes it
    existing = cudnn7_prefix(tmp_path / "old")
    before = snapshot(existing)
    result = run_cli(["install", "--from", str(archive), "--prefix", str(existing), "--yes"],
                     {**env, "CUDNN_DOCTOR_TEST_KILL_AT": "extract.member:2"})
    assert result.returncode == -9
    code, data, err = run_json(["install", "--from", str(archive), "--prefix", str(existing), "--dry-run"], env)
    assert code == 0 and any("pending" in n for n in data["plan"]["notes"])
    code, data, err = run_json(["uninstall", "--prefix", str(existing), "--yes"], env)
    assert code == 0, err
    assert snapshot(existing) == before  # not even the state folder is left


# --- one pass: the plan comes from the private staging, before anything of the user's changes -----------
def test_the_archive_is_read_once_and_the_plan_shown_before_the_prefix_changes(archive: Path, tmp_path: Path) -> None:
    prefix = cudnn7_prefix(tmp_path / "cuda")
    before = snapshot(prefix)
    env = clean_env(tmp_path)
    log = tmp_path / "steps"
    result = run_cli(["install", "--from", str(archive), "--prefix", str(prefix), "--yes"],
                     {**env, "CUDNN_DOCTOR_TEST_KILL_AT": "apply.journal:1", "CUDNN_DOCTOR_TEST_STEP_LOG": str(log)})
    assert result.returncode == -9
    assert "Plan: cuDNN 7.6.5" in result.stdout and "~ include/cudnn.h" in result.stdout
    steps = log.read_text().split()
    assert steps.count("archive.read:1") == 1 and not any(s.startswith("archive.read:2") for s in steps), steps
    assert steps.index("staging.folders:1") < steps.index("extract.member:1")  # streamed into the staging
    # killed with the plan shown and every member staged: the user's files are as they were
    assert {k: v for k, v in snapshot(prefix).items() if not k.startswith(".cudnn-doctor")} == before
    code, data, err = run_json(["uninstall", "--prefix", str(prefix), "--yes"], env)
    assert code == 0, err
    assert snapshot(prefix) == before  # the staging is gone with the state folder


def test_a_bad_member_late_in_the_archive_refuses_the_whole_and_discards_the_staging(tmp_path: Path) -> None:
    good = tar_folder(cudnn_tree(tmp_path / "t" / ROOT9), tmp_path / "good.tar.xz", ROOT9)
    bad = hostile_tar(tmp_path / "bad.tar.gz", [(tar_info(f"{ROOT9}/lib/../../../etc/evil", size=4), b"evil")], good)
    prefix = cudnn7_prefix(tmp_path / "cuda")
    before = snapshot(prefix)
    log = tmp_path / "steps"
    result = run_cli(["install", "--from", str(bad), "--prefix", str(prefix), "--yes"],
                     {**clean_env(tmp_path), "CUDNN_DOCTOR_TEST_STEP_LOG": str(log)})
    one_line_error(result, "CD502", "climbs out")
    assert "extract.member:3" in log.read_text().split()  # good members were staged before the bad one came
    assert "Plan:" not in result.stdout
    assert snapshot(prefix) == before  # staging discarded, state folder gone


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="needs root to mount a small tmpfs")
def test_a_bomb_is_refused_while_it_is_staged_before_the_disk_fills(tmp_path: Path) -> None:
    tree = cudnn_tree(tmp_path / "t" / ROOT9)
    library = tree / "lib" / "libcudnn_ops.so.9.19.0"
    with open(library, "ab") as handle:  # 12 MiB of zeros: a few KiB compressed
        handle.truncate(12 << 20)
    bomb = tar_folder(tree, tmp_path / f"{ROOT9}.tar.gz", ROOT9, "w:gz")
    assert bomb.stat().st_size < 1 << 20
    disk = tmp_path / "disk"
    disk.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(disk)], capture_output=True).returncode:
        pytest.skip("cannot mount a tmpfs here")
    try:
        prefix = disk / "cuda"
        result = run_cli(["install", "--from", str(bomb), "--prefix", str(prefix), "--yes"], clean_env(tmp_path))
        assert result.returncode == 1, result.stderr
        assert "CD507" in result.stderr and "needs at least 12." in result.stderr, result.stderr
        assert str(prefix) in result.stderr and "staging" not in result.stderr
        assert not prefix.exists()  # the staging, the state folder and the prefix it made: all gone
        assert shutil.disk_usage(disk).used < 1 << 20  # refused from the member's header, before its bytes
    finally:
        subprocess.run(["umount", str(disk)], check=False)


@pytest.mark.skipif(shutil.which("tar") is None, reason="needs GNU tar to write a sparse member")
def test_a_sparse_member_is_refused(tmp_path: Path) -> None:
    tree = cudnn_tree(tmp_path / "t" / ROOT9)
    with open(tree / "lib" / "libcudnn_ops.so.9.19.0", "ab") as handle:
        handle.truncate(1 << 30)  # a hole of 1 GiB: no disk used, 1 GiB once extracted
    archive = tmp_path / f"{ROOT9}.tar.gz"
    made = subprocess.run(["tar", "--sparse", "-czf", str(archive), "-C", str(tree.parent), ROOT9],
                          capture_output=True)
    if made.returncode:
        pytest.skip(f"tar cannot write sparse members: {made.stderr!r}")
    prefix = tmp_path / "cuda"
    one_line_error(run_cli(["install", "--from", str(archive), "--prefix", str(prefix), "--yes"], clean_env(tmp_path)),
                   "CD502", "sparse")
    assert not prefix.exists()


# --- every sub-library is loaded -------------------------------------------------------------------------
def _unloadable(kind: str, out: Path) -> Path:
    source = out / "sub.c"
    source.write_text("extern int cudnn_doctor_missing(void);\nint cudnnGetVersion(void) "
                      "{ return cudnn_doctor_missing(); }\n")
    flags = ["-mx32", "-nostdlib"] if kind == "x32" else []
    built = out / f"{kind}.so"
    if subprocess.run(["gcc", "-shared", "-fPIC", *flags, "-o", str(built), str(source)],
                      capture_output=True).returncode:
        pytest.skip(f"gcc cannot build {kind} here")
    return built


@pytest.mark.parametrize("kind, words", [("x32", "wrong ELF class"), ("undefined", "undefined symbol")])
def test_a_sub_library_that_does_not_load_fails_verification(tmp_path: Path, kind: str, words: str) -> None:
    tree = cudnn_tree(tmp_path / "t" / ROOT9)
    shutil.copyfile(_unloadable(kind, tmp_path), tree / "lib" / "libcudnn_ops.so.9.19.0")
    archive = tar_folder(tree, tmp_path / f"{ROOT9}.tar.xz", ROOT9)
    prefix = tmp_path / "cuda"
    result = run_cli(["install", "--from", str(archive), "--prefix", str(prefix), "--yes"], clean_env(tmp_path))
    assert result.returncode == 1, result.stderr
    assert "CD505" in result.stderr and "libcudnn_ops.so.9" in result.stderr and words in result.stderr
    assert not prefix.exists()


# --- a library folder on another filesystem ---------------------------------------------------------------
@pytest.fixture
def elsewhere(tmp_path: Path) -> Iterator[Path]:
    """A folder on another filesystem than tmp_path (/dev/shm)."""
    if not os.path.isdir("/dev/shm") or os.stat("/dev/shm").st_dev == os.stat(tmp_path).st_dev:
        pytest.skip("no second filesystem at /dev/shm")
    folder = Path("/dev/shm") / f"cudnn-doctor-test-{os.getpid()}-{tmp_path.name}"
    folder.mkdir()
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def test_a_library_folder_on_another_filesystem_installs_and_uninstalls(archive: Path, tmp_path: Path,
                                                                        elsewhere: Path) -> None:
    prefix = cudnn7_prefix(tmp_path / "cuda")
    shutil.move(prefix / "lib64", elsewhere / "lib64")
    (prefix / "lib64").symlink_to(elsewhere / "lib64")
    before, before_there = snapshot(prefix), snapshot(elsewhere)
    env = clean_env(tmp_path)
    code, data, err = run_json(["install", "--from", str(archive), "--prefix", str(prefix), "--yes"], env)
    assert code == 0, err
    assert data["result"]["installed"]["version"] == "7.6.5"
    assert (elsewhere / "lib64" / "libcudnn.so.7.6.5").is_file()
    code, data, err = run_json(["uninstall", "--prefix", str(prefix), "--yes"], env)
    assert code == 0, err
    assert snapshot(prefix) == before and snapshot(elsewhere) == before_there
    # killed at each kind of boundary (the areas made, extracting into them, backing up, moving, committing,
    # and recovering): no temporary file is left on either filesystem
    for point in ("staging.folders:1", "extract.member:2", "apply.backup:2", "apply.put:3", "apply.take:1",
                  "commit.journal:1", "rollback.unput:1"):
        kill = {**env, "CUDNN_DOCTOR_TEST_KILL_AT": point}
        args = ["install", "--from", str(archive), "--prefix", str(prefix), "--yes"]
        if point.startswith("rollback"):
            result = run_cli(args, {**env, "CUDNN_DOCTOR_TEST_KILL_AT": "apply.put:2"})
            args = ["uninstall", "--prefix", str(prefix), "--yes"]
        result = run_cli(args, kill)
        assert result.returncode == -9, (point, result.stderr)
        code, data, err = run_json(["uninstall", "--prefix", str(prefix), "--yes"], env)
        assert code == 0, (point, err)
        assert snapshot(prefix) == before and snapshot(elsewhere) == before_there, point


# --- downloads end, in one line -----------------------------------------------------------------------------
class Server:
    """A raw socket server on 127.0.0.1: BEHAVIOUR(conn) serves each connection in a thread."""

    def __init__(self, behaviour) -> None:  # type: ignore[no-untyped-def]
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.port = self.sock.getsockname()[1]
        self.stop = threading.Event()
        self.behaviour = behaviour
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self.stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        try:
            conn.recv(65536)
            self.behaviour(conn, self.stop)
        except OSError:
            pass
        finally:
            conn.close()

    def close(self) -> None:
        self.stop.set()
        self.sock.close()


def drip(conn: socket.socket, stop: threading.Event) -> None:
    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n")
    while not stop.wait(0.3):
        conn.sendall(b"x")


def silent(conn: socket.socket, stop: threading.Event) -> None:
    stop.wait(60)


@pytest.mark.parametrize("behaviour", [drip, silent])
def test_a_download_has_one_deadline(tmp_path: Path, behaviour) -> None:  # type: ignore[no-untyped-def]
    server = Server(behaviour)
    try:
        env = clean_env(tmp_path, CUDNN_DOCTOR_DOWNLOAD_DEADLINE="1")
        started = time.monotonic()
        url = f"http://127.0.0.1:{server.port}/cudnn-linux-x86_64-9.19.0.7_cuda12-archive.tar.xz"
        # a checksum given: plain HTTP without one would add its "unverified" warning line (test_install_network.py)
        result = run_cli(["install", "--from", url, "--sha256", "0" * 64, "--prefix", str(tmp_path / "p"), "--yes"], env)
        took = time.monotonic() - started
        line = one_line_error(result, "CD511", "127.0.0.1", "--mirror")
        assert took < 15, took
        assert "HTTPConnectionPool" not in line and "Max retries" not in line
        # the manifest of --version too
        result = run_cli(["install", "--version", "9.19.0", "--mirror", f"http://127.0.0.1:{server.port}/r/",
                          "--prefix", str(tmp_path / "p"), "--dry-run"], env)
        one_line_error(result, "CD511", "127.0.0.1")
    finally:
        server.close()


def test_a_host_whose_name_does_not_resolve_is_one_line(tmp_path: Path) -> None:
    result = run_cli(["install", "--from", "https://cudnn-doctor-test.invalid/c/cudnn-9.tar.xz", "--prefix",
                      str(tmp_path / "p"), "--yes"], clean_env(tmp_path, CUDNN_DOCTOR_DOWNLOAD_DEADLINE="5"))
    line = one_line_error(result, "CD511", "cannot reach cudnn-doctor-test.invalid", "--mirror")
    assert "NameResolutionError" not in line and "Max retries" not in line


def test_an_unreachable_host_is_one_line_naming_it_and_the_mirror(tmp_path: Path) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # closed once the block ends: nothing listens there
    result = run_cli(["install", "--version", "9.19.0", "--mirror", f"http://127.0.0.1:{port}/redist/",
                      "--prefix", str(tmp_path / "p"), "--dry-run"], clean_env(tmp_path))
    line = one_line_error(result, "CD511", "cannot reach 127.0.0.1: the connection was refused", "--mirror")
    assert "HTTPConnectionPool" not in line and "Errno" not in line


# --- malformed manifests and URLs -----------------------------------------------------------------------------
def _mirror(tmp_path: Path, manifest: object) -> Path:
    folder = tmp_path / "mirror"
    folder.mkdir(exist_ok=True)
    (folder / "redistrib_9.19.0.json").write_text(json.dumps(manifest))
    return folder


def _entry(**values: object) -> dict[str, object]:
    entry: dict[str, object] = {"relative_path": "cudnn/linux-x86_64/c.tar.xz", "sha256": "ab" * 32, "size": "10"}
    entry.update(values)
    return {key: value for key, value in entry.items() if value is not None}


def _manifest(entry: dict[str, object]) -> dict[str, object]:
    return {"cudnn": {"version": "9.19.0.7", "linux-x86_64": {"cuda12": entry}}}


@pytest.mark.parametrize("manifest, code, words", [
    ([1, 2, 3], "CD512", "not a cuDNN redistributable manifest"),
    (_manifest(_entry(sha256=12345)), "CD512", "not 64 hexadecimal digits"),
    (_manifest(_entry(size="abc")), "CD512", "not a number of bytes"),
    (_manifest(_entry(relative_path="cudnn/linux-x86_64/")), "CD512", "names a folder"),
    (_manifest(_entry(relative_path="../../../etc/c.tar.xz")), "CD512", "climbs out of the mirror"),
    (_manifest(_entry(relative_path="cudnn/%2e%2e/%2e%2e/c.tar.xz")), "CD512", "climbs out of the mirror"),
    (_manifest(_entry(sha256=None, size=None)), "CD513", "lists no sha256 and size"),
    (_manifest(_entry(size=None)), "CD513", "lists no size"),
    ({"cudnn": {"version": "9.19.0.7", "linux-x86_64": {"cuda12": ["x"]}}}, "CD512", "no archive listed"),
])
def test_malformed_manifests_are_one_line(tmp_path: Path, manifest: object, code: str, words: str) -> None:
    mirror = _mirror(tmp_path, manifest)
    result = run_cli(["install", "--version", "9.19.0", "--mirror", str(mirror), "--prefix", str(tmp_path / "p"),
                      "--dry-run"], clean_env(tmp_path))
    one_line_error(result, code, words)


def test_an_unverifiable_entry_needs_no_verify_and_says_so(tmp_path: Path, archive: Path) -> None:
    folder = _mirror(tmp_path, _manifest(_entry(relative_path=f"cudnn/linux-x86_64/{archive.name}", sha256=None,
                                                size=None)))
    (folder / "cudnn" / "linux-x86_64").mkdir(parents=True)
    shutil.copyfile(archive, folder / "cudnn" / "linux-x86_64" / archive.name)
    result = run_cli(["install", "--version", "9.19.0", "--mirror", str(folder), "--prefix", str(tmp_path / "p"),
                      "--dry-run", "--no-verify"], clean_env(tmp_path))
    assert result.returncode == 0, result.stderr
    assert "warning: --no-verify" in result.stderr and "lists no sha256 and size" in result.stderr
    digest = hashlib.sha256(archive.read_bytes()).hexdigest()
    result = run_cli(["install", "--version", "9.19.0", "--mirror", str(folder), "--prefix", str(tmp_path / "p"),
                      "--dry-run", "--sha256", digest], clean_env(tmp_path))
    one_line_error(result, "CD513", "lists no size")


@pytest.mark.parametrize("url", ["http://127.0.0.1:9/x/%2e%2e", "http://127.0.0.1:9/x/", "http://127.0.0.1:9/..",
                                 "http://127.0.0.1:9/a%2fb.tgz"])
def test_a_from_url_that_names_no_file_is_a_usage_error(tmp_path: Path, url: str) -> None:
    one_line_error(run_cli(["install", "--from", url, "--prefix", str(tmp_path / "p"), "--yes"], clean_env(tmp_path)),
                   None, "--from")
    assert not (tmp_path / "p").exists()


@pytest.mark.parametrize("name, text", [("journal.json", "{not json"), ("journal.json", "[1]"),
                                        ("manifest-1.json", '{"id": 1}'), ("manifest-2.json", "\udcff")])
def test_unreadable_state_files_are_one_line_and_nothing_moves(archive: Path, tmp_path: Path, name: str,
                                                              text: str) -> None:
    prefix = cudnn7_prefix(tmp_path / "cuda")
    (prefix / ".cudnn-doctor").mkdir()
    (prefix / ".cudnn-doctor" / name).write_text(text, errors="surrogateescape")
    before = snapshot(prefix)
    env = clean_env(tmp_path)
    commands = [["uninstall", "--prefix", str(prefix), "--yes"]]
    if name == "journal.json":  # an install reads no earlier record, only an interrupted run's journal
        commands.append(["install", "--from", str(archive), "--prefix", str(prefix), "--yes"])
    for args in commands:
        line = one_line_error(run_cli(args, env), "CD509", name)
        assert snapshot(prefix) == before, line


@pytest.mark.parametrize("name", ["journal.json", "manifest-1.json"])
def test_a_state_file_that_is_a_fifo_is_refused_at_once(archive: Path, tmp_path: Path, name: str) -> None:
    """A FIFO where the journal or a manifest should be is refused without opening it to wait for a writer."""
    prefix = cudnn7_prefix(tmp_path / "cuda")
    (prefix / ".cudnn-doctor").mkdir()
    os.mkfifo(prefix / ".cudnn-doctor" / name)
    env = clean_env(tmp_path)
    commands = [["uninstall", "--prefix", str(prefix), "--yes"]]
    if name == "journal.json":
        commands.append(["install", "--from", str(archive), "--prefix", str(prefix), "--yes"])
    for args in commands:
        started = time.monotonic()
        line = one_line_error(run_cli(args, env, timeout=30), "CD509", name)
        assert time.monotonic() - started < 20 and "not a regular file" in line, line


@pytest.mark.parametrize("args", [["--version", "9" * 5000], ["--version", "9.x"], ["--version", "9.19.0.0.1"],
                                  ["--version", "9.19.0", "--cuda", "9" * 30], ["--version", "9.19.0", "--cuda", "0"]])
def test_bad_versions_are_usage_errors(tmp_path: Path, args: list[str]) -> None:
    one_line_error(run_cli(["install", *args, "--mirror", str(tmp_path), "--prefix", str(tmp_path / "p"), "--dry-run"],
                           clean_env(tmp_path)), None)


# --- an archive that is there but cannot be read --------------------------------------------------------------
def test_an_archive_that_is_not_a_readable_file_says_what_it_is(tmp_path: Path) -> None:
    env = clean_env(tmp_path)
    fifo = tmp_path / "cudnn.tar.xz"
    os.mkfifo(fifo)
    one_line_error(run_cli(["install", "--from", str(fifo), "--prefix", str(tmp_path / "p"), "--yes"], env,
                           timeout=30), "CD515", "not a regular file")
    one_line_error(run_cli(["install", "--from", str(tmp_path), "--prefix", str(tmp_path / "p"), "--yes"], env),
                   "CD515", "is a folder")
    one_line_error(run_cli(["install", "--from", str(tmp_path / "nope.tgz"), "--prefix", str(tmp_path / "p")], env),
                   "CD515", "no such file")


def test_an_unreadable_archive_is_not_no_such_archive(archive: Path, tmp_path: Path, nobody) -> None:  # type: ignore[no-untyped-def]
    import tempfile

    from tests.install_helpers import CLI

    work = Path(tempfile.mkdtemp(prefix="cudnn-doctor-unreadable-"))
    try:
        work.chmod(0o755)
        locked = work / archive.name
        shutil.copyfile(archive, locked)
        locked.chmod(0o000)
        env = clean_env(work)
        result = subprocess.run([*nobody.argv, "-c", CLI, "install", "--from", str(locked), "--prefix",
                                 str(work / "p"), "--dry-run"], env=nobody.env(env), capture_output=True, text=True,
                                timeout=60, stdin=subprocess.DEVNULL)
        line = one_line_error(result, "CD515", "exists but cannot be read")
        assert "no such" not in line
    finally:
        shutil.rmtree(work)


# --- the registry: the failure JSON carries the finding's own title and fix --------------------------------
def test_failure_json_carries_the_registry_finding(tmp_path: Path) -> None:
    good = tar_folder(cudnn_tree(tmp_path / "t" / ROOT9), tmp_path / f"{ROOT9}.tar.xz", ROOT9)
    evil = hostile_tar(tmp_path / "evil.tar.gz", [(tar_info("../evil.so", size=4), b"evil")], good)
    result = run_cli(["install", "--from", str(evil), "--prefix", str(tmp_path / "p"), "--yes", "--json"],
                     clean_env(tmp_path))
    data = json.loads(result.stdout)
    assert result.returncode == 2 and data["exit_code"] == 2 and data["result"]["status"] == "failed"
    [finding] = data["findings"]
    entry = CODES["CD502"]
    assert (finding["code"], finding["title"], finding["severity"]) == ("CD502", entry.title, entry.severity)
    assert finding["fix"] == advice_row("CD502")["text"] and "../evil.so" in finding["detail"]
    tarfile.open(evil).close()  # the archive itself is fine as a tar: the refusal is ours


# --- screens that said something untrue (issue 16, item 8) ------------------------------------------------
def test_a_local_archive_shows_no_download_bar(archive: Path, tmp_path: Path) -> None:
    import pty

    from tests.install_helpers import CLI

    master, slave = pty.openpty()
    try:
        process = subprocess.Popen([sys.executable, "-c", CLI, "install", "--from", str(archive), "--prefix",
                                    str(tmp_path / "p"), "--dry-run"], env={**clean_env(tmp_path), "COLUMNS": "120",
                                                                             "TERM": "xterm"},
                                   stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=slave, text=True)
        os.close(slave)
        slave = -1
        out, _ = process.communicate(timeout=60)
        screen = b""
        while True:
            try:
                data = os.read(master, 65536)
            except OSError:
                break
            if not data:
                break
            screen += data
    finally:
        os.close(master)
        if slave >= 0:
            os.close(slave)
    assert process.returncode == 0, screen
    assert b"read" in screen  # the terminal did get a progress bar: the archive being read
    assert b"download" not in screen
    assert "Plan: cuDNN 7.6.5" in out


def test_without_driver_or_gpu_the_plan_says_what_was_not_checked(archive: Path, tmp_path: Path) -> None:
    env = clean_env(tmp_path)
    code, data, err = run_json(["install", "--from", str(archive), "--prefix", str(tmp_path / "p"), "--dry-run"], env)
    assert code == 0, err
    if "no NVIDIA driver" not in (data["plan"]["machine"] or "") or "no GPU" not in data["plan"]["machine"]:
        pytest.skip("this machine has an NVIDIA driver or GPU")
    assert any("driver" in u for u in data["plan"]["unchecked"]) and any("GPU" in u for u in data["plan"]["unchecked"])
    result = run_cli(["install", "--from", str(archive), "--prefix", str(tmp_path / "p"), "--dry-run"], env)
    assert "not checked: the driver (none found), the GPU's compute capability (no GPU found)" in result.stdout
    assert "fits it" not in result.stdout and "fits its driver" not in result.stdout


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="needs root to mount a small tmpfs")
def test_an_uninstall_on_a_full_disk_is_rolled_back_and_leaves_no_file_of_its_own(tmp_path: Path) -> None:
    """The disk fills between install and uninstall: the journal cannot be written, the uninstall is rolled back and
    says so as an uninstall's (CD504), and the prefix is byte for byte as it was, its state folder too (the journal's
    temporary file was left there); with room again, the uninstall goes through."""
    archive = make_archive("txz", tmp_path)
    disk = tmp_path / "disk"
    disk.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(disk)], capture_output=True).returncode:
        pytest.skip("cannot mount a tmpfs here")
    try:
        prefix, env = disk / "cuda", clean_env(tmp_path)
        (prefix / "lib64").mkdir(parents=True)
        (prefix / "lib64" / "libcudnn.so.9.1.0").write_bytes(b"an older cuDNN the install backs up")
        assert run_cli(["install", "--from", str(archive), "--prefix", str(prefix), "--yes"], env).returncode == 0
        before = snapshot(prefix)
        filler = disk / "filler"
        with open(filler, "wb") as handle:
            try:
                handle.write(bytes(shutil.disk_usage(disk).free))
            except OSError:
                pass
        result = run_cli(["uninstall", "--prefix", str(prefix), "--yes"], env)
        assert result.returncode == 1 and "CD504 Install or uninstall rolled back" in result.stderr, result.stderr
        assert snapshot(prefix) == before
        filler.unlink()
        assert run_cli(["uninstall", "--prefix", str(prefix), "--yes"], env).returncode == 0
        assert sorted(p.name for p in (prefix / "lib64").iterdir()) == ["libcudnn.so.9.1.0"]
    finally:
        subprocess.run(["umount", str(disk)], check=False)
