"""The doctor's own installed data damaged (issue 43): one line naming the file and the reinstall (CD012, exit 2), or
the usual answer where the command does not need that file; never exit 3, a traceback, a hang or a cache that
outlives the repair. The cases are a seeded generated family (tests/damaged_data.py): each damage once here, a
seeded sample of the whole family (CUDNN_DOCTOR_TEST_SEED picks another), and all of it in
benchmarks/damaged_data.py."""

from __future__ import annotations

import json
import os
import random
import shutil
from pathlib import Path

import pytest
import tomllib
from jsonschema import Draft202012Validator

from tests.damaged_data import COMMANDS, DAMAGES, Case, Family, damage_file, data_files, run, sample

pytestmark = pytest.mark.subprocess

SEED = int(os.environ.get("CUDNN_DOCTOR_TEST_SEED", "43"))


@pytest.fixture(scope="module")
def family(tmp_path_factory: pytest.TempPathFactory) -> Family:
    return Family(tmp_path_factory.mktemp("damaged-data"))


@pytest.mark.parametrize("damage", DAMAGES)
def test_each_damage_of_the_messages_table_is_one_line_naming_it(family: Family, damage: str) -> None:
    layout = "installed" if DAMAGES.index(damage) % 2 == 0 or damage == "truncated" else "source"
    assert family.run_case(Case(layout, "errors.toml", damage, "explain-json"), SEED) == []


@pytest.mark.parametrize("damage", ["invalid_syntax", "wrong_type", "table_as_string", "fifo"])
def test_a_damaged_schema_is_named_where_the_data_is_parsed(family: Family, damage: str) -> None:
    assert family.run_case(Case("source", "schema/errors.schema.json", damage, "explain"), SEED) == []


@pytest.mark.parametrize("index", range(8))
def test_a_seeded_sample_of_the_family(family: Family, index: int) -> None:
    case = sample(SEED, 8)[index]
    assert family.run_case(case, SEED) == [], case.name


def test_a_file_only_root_may_read_is_named_to_a_user(family: Family, nobody) -> None:  # type: ignore[no-untyped-def]
    """As user nobody, the installed package's messages table readable by root only. The package and its pretend
    machine are copied into a folder of /tmp of the test's own: under pytest's /tmp/pytest-of-root, which every
    pytest starting (another worker, another session) sets back to 0700, nobody lost the folder in the middle of
    its imports ('No module named cudnn_doctor.knowledge')."""
    import shutil
    import tempfile

    own = Path(tempfile.mkdtemp(prefix="cudnn-doctor-nobody-", dir="/tmp"))
    try:
        own.chmod(0o755)
        for part in ("installed", "home", "root", "driver", "cudnn"):
            if (family.work / part).exists():
                shutil.copytree(family.work / part, own / part, symlinks=True)
        target = own / "installed" / family.compat["installed"].relative_to(family.work / "installed") / "errors.toml"
        cache = own / "cache"
        cache.mkdir()
        cache.chmod(0o777)
        damage_file(target, "mode_000", random.Random(SEED))
        outcome = run(own / "installed", own, "explain", cache, as_user=nobody)
    finally:
        shutil.rmtree(own, ignore_errors=True)
    assert outcome.exit_code == 2 and str(target) in outcome.stderr, outcome.stderr
    assert "Permission denied" in outcome.stderr and "reinstall" in outcome.stderr


def test_the_family_covers_every_file_and_command() -> None:
    files = data_files()
    assert "errors.toml" in files and "schema/errors.schema.json" in files and len(files) >= 40
    assert {"check", "check-deep", "compat", "explain", "fix", "install-dry-run", "fleet-merge"} <= set(COMMANDS)


def test_the_reader_knows_every_keyword_the_schemas_use_and_agrees_with_jsonschema() -> None:
    """The reader's own schema check (no validator library on the user's machine) against jsonschema's, on the real
    data and on seeded damage of each kind that leaves valid TOML."""
    from cudnn_doctor.knowledge import schema_check
    from cudnn_doctor.knowledge.data import schema_file

    compat = Path(__file__).resolve().parents[1] / "compat"
    rng = random.Random(SEED)
    for path in sorted(compat.glob("*.toml")):
        schema = json.loads(Path(schema_file(path.stem)).read_text())
        for damage in ("none", "wrong_type", "missing_key", "table_as_string"):
            text = path.read_text()
            if damage != "none":
                copy = Path(os.environ.get("TMPDIR", "/tmp")) / f"schema-check-{os.getpid()}.toml"
                copy.write_text(text)
                damage_file(copy, damage, rng)
                text = copy.read_text()
                copy.unlink()
            try:
                data = tomllib.loads(text)
            except tomllib.TOMLDecodeError:
                continue
            theirs = next(iter(Draft202012Validator(schema).iter_errors(data)), None)
            try:
                schema_check.check(data, schema)
                mine = None
            except schema_check.SchemaMismatch as error:
                mine = str(error)
            assert (mine is None) == (theirs is None), (path.name, damage, mine, theirs and theirs.message)


def test_a_limit_of_the_process_is_not_called_damage(monkeypatch: pytest.MonkeyPatch) -> None:
    """Too few open files (ulimit -n) is the limit's own error, for the runner to name it (CD010), not CD012."""
    import errno

    from cudnn_doctor.knowledge import data

    def refuse(path: str, flags: int, *args: object) -> int:
        raise OSError(errno.EMFILE, "Too many open files", path)

    monkeypatch.setattr(data, "_LOADED", {})
    monkeypatch.setattr(os, "open", refuse)
    with pytest.raises(OSError) as caught:
        data.load("errors")
    assert caught.value.errno == errno.EMFILE and not isinstance(caught.value, data.DamagedData)
    assert data.DAMAGE == [] or all(d.code == "CD012" for d in data.DAMAGE)


def warm_cache(family: Family) -> Path:
    """The cache folder that `explain --json` of the installed package wrote from nothing, made once per family; its
    run answered exactly as the undamaged package's baseline."""
    cache = family.work / "cache-entry-warm"
    if not cache.exists():
        written = family.work / "cache-entry-writing"
        shutil.rmtree(written, ignore_errors=True)
        usual = family.baseline("installed", "explain-json")
        assert run(family.work / "installed", family.work, "explain-json", written).stdout == usual.stdout
        written.rename(cache)
    return cache


@pytest.mark.parametrize("damage", ["invalid_syntax", "empty", "binary", "truncated", "fifo", "folder", "link_loop",
                                    "huge", "wrong_type"])
def test_a_damaged_cache_entry_is_parsed_again_never_trusted(family: Family, damage: str) -> None:
    """The cache of parsed data: an entry damaged is never an error and never an answer; the data is parsed again.
    Each damage is done to a copy of one cache the package wrote (warm_cache: its run answered as usual), not to a
    cache written again by a run of its own per damage: the same entry, one process fewer per damage."""
    work, cache = family.work, family.work / f"cache-entry-{damage}"
    usual = family.baseline("installed", "explain-json")
    shutil.copytree(warm_cache(family), cache)
    entries = sorted((cache / "compat").glob("errors-*.json"))
    assert len(entries) == 1
    if damage == "wrong_type":  # valid JSON, its header intact: the body's checksum no longer holds
        entries[0].write_text(entries[0].read_text().replace('"schema": "', '"schema": 7, "x": "', 1))
    else:
        damage_file(entries[0], damage, random.Random(SEED))
    outcome = run(work / "installed", work, "explain-json", cache)
    assert (outcome.exit_code, outcome.stdout) == (usual.exit_code, usual.stdout), outcome.stderr[-500:]
    assert "Traceback" not in outcome.stderr


def test_a_damaged_gpu_peaks_table_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from cudnn_doctor.bench import peaks
    from cudnn_doctor.knowledge.data import DamagedData

    table = tmp_path / "peaks.toml"
    for content in (b"gpu = 'a string'", b"\xff\xfe[", b"[[gpu]\n"):
        table.write_bytes(content)
        monkeypatch.setattr(peaks, "TABLE", table)
        peaks.load.cache_clear()
        with pytest.raises(DamagedData) as caught:
            peaks.load()
        assert str(table) in caught.value.message and caught.value.code == "CD012"
    peaks.load.cache_clear()


def test_a_damaged_output_schema_is_one_line(tmp_path: Path) -> None:
    import subprocess
    import sys

    from tests.damaged_data import ROOT

    copy = tmp_path / "cudnn_doctor"
    shutil.copytree(ROOT / "cudnn_doctor", copy, ignore=shutil.ignore_patterns("__pycache__"))
    target = copy / "schemas" / "report.schema.json"
    for damage in ("fifo", "binary", "folder", "empty"):
        if target.is_dir():
            target.rmdir()
        elif target.exists() or target.is_symlink():
            target.unlink()
        target.write_text("{}")
        damage_file(target, damage, random.Random(SEED))
        done = subprocess.run([sys.executable, "-m", "cudnn_doctor.schemas", "report"], capture_output=True, text=True,
                              env={"PYTHONPATH": str(tmp_path), "PATH": "/usr/bin:/bin"}, timeout=30, cwd=tmp_path,
                              stdin=subprocess.DEVNULL)
        assert done.returncode == 2 and done.stdout == "", (damage, done.stdout[:200], done.stderr)
        assert len(done.stderr.splitlines()) == 1 and str(target) in done.stderr and "reinstall" in done.stderr
