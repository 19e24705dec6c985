"""The install's own state folder as a hostile or damaged machine leaves it (issue 43, round fourteen): a lock that is
a link out of the prefix, a journal whose paths climb out of it, an install whose record (its manifest) is gone while
its backup of the user's files is still there. Nothing outside the prefix is made or changed, and nothing the user
had is deleted: each is refused or said in one line."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.install_helpers import clean_env, cudnn7_archive, cudnn7_prefix, run_json

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="installs are applied on Linux hosts")


@pytest.fixture(scope="module")
def archive(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return cudnn7_archive(tmp_path_factory.mktemp("archive"))


def fresh(tmp: Path) -> tuple[Path, dict[str, str]]:
    prefix = cudnn7_prefix(tmp / "cuda")
    return prefix, clean_env(tmp)


def install(archive: Path, prefix: Path, env: dict[str, str]) -> tuple[int, dict, str]:  # type: ignore[type-arg]
    return run_json(["install", "--from", str(archive), "--prefix", str(prefix), "--yes"], env)


def installed_beside_a_users_file(archive: Path, tmp: Path) -> tuple[Path, dict[str, str], Path]:
    """A prefix with the archive installed, its environment, and a file of the user's outside it (tmp/precious)."""
    prefix, env = fresh(tmp)
    code, _, err = install(archive, prefix, env)
    assert code == 0, err
    precious = tmp / "precious" / "keep.txt"
    precious.parent.mkdir()
    precious.write_text("the user's own\n")
    return prefix, env, precious


def test_a_lock_that_is_a_link_out_of_the_prefix_makes_nothing_there(archive: Path, tmp_path: Path) -> None:
    """The state folder's lock a dangling link to a file outside the prefix: opened without following it, refused
    in one line (CD514); the link's target is never made."""
    prefix, env = fresh(tmp_path)
    state = prefix / ".cudnn-doctor"
    state.mkdir()
    outside = tmp_path / "elsewhere" / "made-through-the-lock"
    outside.parent.mkdir()
    (state / "lock").symlink_to(outside)
    code, data, _ = install(archive, prefix, env)
    assert code == 2 and data["findings"][0]["code"] == "CD514" and "a link" in data["result"]["error"], data
    assert not outside.exists()
    assert not (prefix / "lib64" / "libcudnn.so.7.6.5").exists()  # nothing installed either


@pytest.mark.parametrize("key, value", [("backup", "../../precious/keep.txt"), ("dest", "../precious/keep.txt"),
                                        ("source", "/abs/keep.txt"), ("staging", "../precious")])
def test_a_journal_naming_paths_outside_the_prefix_moves_nothing(archive: Path, tmp_path: Path, key: str,
                                                                 value: str) -> None:
    """A journal of an interrupted run whose paths climb out of the prefix ('..', absolute): not one a run of ours
    wrote; its moves are not made (CD509), the file outside is as it was."""
    prefix, env, precious = installed_beside_a_users_file(archive, tmp_path)
    state = prefix / ".cudnn-doctor"
    journal = {"version": 2, "kind": "install", "phase": "applying", "pid": 1, "started": 0, "id": "x",
               "backup": ".cudnn-doctor/backup-x", "staging": ".cudnn-doctor/staging-x", "manifest": "manifest-x.json",
               "keep_backup": True, "on_commit_remove": [], "areas": [], "created_folders": [],
               "operations": [{"kind": "put", "dest": "lib64/libcudnn.so.7.6.5", "source": ".cudnn-doctor/staging-x/a",
                               "existed": True, "backup": ".cudnn-doctor/backup-x/lib64/libcudnn.so.7.6.5",
                               "inode": None}]}
    if key in ("backup", "dest", "source"):
        journal["operations"][0][key] = value  # type: ignore[index]
    else:
        journal[key] = value
    (state / "journal.json").write_text(json.dumps(journal))
    code, data, _ = install(archive, prefix, env)
    assert code == 2 and data["findings"][0]["code"] == "CD509" and "not a path inside the prefix" in \
        data["result"]["error"], data
    assert precious.read_text() == "the user's own\n"


def test_an_install_whose_record_is_gone_keeps_the_users_backup_and_says_so(archive: Path, tmp_path: Path) -> None:
    """The manifest of an install deleted, its backup of the cuDNN it replaced still there: uninstall cannot restore
    it (nothing says what the install wrote), and never deletes it: kept, said with how to put it back, exit 1 (was:
    the backup deleted as a killed run's leftover and 'nothing to do', exit 0)."""
    prefix, env = fresh(tmp_path)
    old = (prefix / "lib64" / "libcudnn.so.7.6.0").read_bytes()
    code, _, err = install(archive, prefix, env)
    assert code == 0, err
    state = prefix / ".cudnn-doctor"
    [manifest] = state.glob("manifest-*.json")
    [backup] = state.glob("backup-*")
    manifest.unlink()
    code, data, _ = run_json(["uninstall", "--prefix", str(prefix), "--yes"], env)
    assert code == 1 and data["result"]["status"] == "nothing-to-do", data
    said = " ".join(data["result"]["notes"])
    assert str(backup) in said and "missing" in said and "cp -a" in said, said
    assert [p.read_bytes() for p in backup.rglob("libcudnn.so.7.6.0")] == [old]
    code, data, _ = run_json(["uninstall", "--prefix", str(prefix), "--yes"], env)  # still there the next time
    assert code == 1 and backup.is_dir(), data


def test_a_record_whose_backed_up_file_climbs_out_of_the_prefix_is_refused_before_any_move(archive: Path,
                                                                                          tmp_path: Path) -> None:
    """The last install's record says a file it backed up was at '../precious/keep.txt': not a path a run of ours
    wrote. Refused in one line (CD509, exit 2) when the record is read, as a written file or a backup's copy outside
    the prefix is; it was an internal error (ValueError, exit 3) after the plan listed the user's file as one to
    restore (round seventeen's red-team, after its figure)."""
    prefix, env, precious = installed_beside_a_users_file(archive, tmp_path)
    [manifest] = (prefix / ".cudnn-doctor").glob("manifest-*.json")
    record = json.loads(manifest.read_text())
    assert record["backed_up"], record
    for backed in record["backed_up"]:
        backed["path"] = "../precious/keep.txt"
    manifest.write_text(json.dumps(record))
    code, data, _ = run_json(["uninstall", "--prefix", str(prefix), "--yes"], env)
    assert code == 2 and data["findings"][0]["code"] == "CD509" and "leaves the prefix" in data["result"]["error"], data
    assert precious.read_text() == "the user's own\n" and sorted(p.name for p in precious.parent.iterdir()) == ["keep.txt"]


def test_a_records_version_with_terminal_escapes_is_shown_escaped(archive: Path, tmp_path: Path) -> None:
    """The record's version and source hold a terminal's escape codes, a right-to-left override and a newline: the
    uninstall's text shows them as escapes, never raw (they reached the terminal: round seventeen's red-team)."""
    from tests.install_helpers import run_cli

    prefix, env = fresh(tmp_path)
    code, _, err = install(archive, prefix, env)
    assert code == 0, err
    [manifest] = (prefix / ".cudnn-doctor").glob("manifest-*.json")
    record = json.loads(manifest.read_text())
    record["version"] = record["installed_at"] = "9.19.0\x1b[2J\x1b]52;c;Zm9v\x07\n::error::owned\u202e"
    manifest.write_text(json.dumps(record))
    done = run_cli(["uninstall", "--prefix", str(prefix), "--yes"], env)
    shown = done.stdout + done.stderr
    assert done.returncode in (0, 1), shown
    assert not {"\x1b", "\x07", "\u202e"} & set(shown) and "\n::error::" not in shown, shown


def test_a_record_cut_short_at_any_byte_is_said_to_be_cut(archive: Path, tmp_path: Path) -> None:
    """The last install's record cut at seeded offsets (a copy interrupted, a disk that filled: our runs write it
    beside and rename it, whole or not at all): uninstall refuses in one JSON object, exit 2, nothing changed, and says
    the record is cut short, in words, where the JSON parser's own words ('Unterminated string starting at: line 7
    column 13') told the user nothing; a record with a wrong character in it is not said to be cut."""
    import random

    prefix, env, _ = installed_beside_a_users_file(archive, tmp_path)
    [manifest] = (prefix / ".cudnn-doctor").glob("manifest-*.json")
    whole = manifest.read_bytes()
    before = sorted(str(p.relative_to(prefix)) for p in prefix.rglob("*"))
    for offset in sorted(random.Random(19).sample(range(1, len(whole) - 1), 6)):
        manifest.write_bytes(whole[:offset])
        code, data, _ = run_json(["uninstall", "--prefix", str(prefix), "--yes"], env)
        assert code == 2 and data["findings"][0]["code"] == "CD509", (offset, data)
        assert "cut short" in data["result"]["error"] and f"after {offset} bytes" in data["result"]["error"], data
        assert sorted(str(p.relative_to(prefix)) for p in prefix.rglob("*")) == before
    manifest.write_bytes(whole.replace(b":", b";", 1))
    code, data, _ = run_json(["uninstall", "--prefix", str(prefix), "--yes"], env)
    assert code == 2 and data["findings"][0]["code"] == "CD509" and "cut short" not in data["result"]["error"], data


def test_an_install_over_a_record_cut_short_is_refused_before_anything_moves(archive: Path, tmp_path: Path) -> None:
    """An earlier install's record cut short: a second install over it backed up that install's files under a new
    record while the user's own files stayed in a backup only the unreadable record names (nothing could restore
    them). Refused now as uninstall refuses it (CD509, exit 2), the prefix as it was."""
    prefix, env, _ = installed_beside_a_users_file(archive, tmp_path)
    [manifest] = (prefix / ".cudnn-doctor").glob("manifest-*.json")
    manifest.write_bytes(manifest.read_bytes()[:300])
    before = sorted(str(p.relative_to(prefix)) for p in prefix.rglob("*"))
    code, data, _ = install(archive, prefix, env)
    assert code == 2 and data["findings"][0]["code"] == "CD509" and "cut short" in data["result"]["error"], data
    assert sorted(str(p.relative_to(prefix)) for p in prefix.rglob("*")) == before
