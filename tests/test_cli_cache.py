"""The parsed-TOML cache keeps one file per subject and data version (issue 16, item 10): reinstalling the
same data reuses its file, new data replaces the old one, and files of older versions are pruned."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

from tests.conftest import ROOT, Machine


def copy_of_the_package(where: Path) -> Path:
    """The package and its data copied afresh (new modification times), as another install would have them."""
    for name in ("cudnn_doctor", "compat"):
        shutil.copytree(ROOT / name, where / name, copy_function=shutil.copy,
                        ignore=shutil.ignore_patterns("__pycache__"))
    return where


def run_check(machine: Machine, package: Path) -> None:
    env = {**machine.env, "PYTHONPATH": str(package)}
    result = subprocess.run([sys.executable, "-m", "cudnn_doctor", "check", "--json"], env=env, cwd=machine.cwd,
                            capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert result.returncode == 1 and '"schema": "cudnn-doctor/report/1"' in result.stdout, result.stderr


def cached(machine: Machine) -> list[str]:
    return sorted(os.listdir(Path(machine.env["CUDNN_DOCTOR_CACHE_DIR"]) / "compat"))


def test_one_file_per_subject_and_data_version(machine: Machine, tmp_path: Path) -> None:
    folder = Path(machine.env["CUDNN_DOCTOR_CACHE_DIR"]) / "compat"
    folder.mkdir(parents=True)
    old = ["cudnn-116786-1763000000000000000.json", "cuda-35336-1763000000000000000.json",  # size-mtime names
           "cudnn-0123456789abcdef.json"]  # an older data version
    for name in old:
        (folder / name).write_text("{}")
    stale = folder / "cudnn-116786-1763000000000000000.4242.tmp"  # left by a run killed mid-write
    stale.write_text("{")
    os.utime(stale, (time.time() - 7200, time.time() - 7200))
    fresh = folder / "cudnn-89abcdef01234567.999999.tmp"  # another run writing right now: left alone
    fresh.write_text("{")
    mine = folder / "cudnn-notes.txt"  # not a cache file: left alone
    mine.write_text("keep me")

    for install in ("first", "second", "third"):  # the same data, installed three times
        run_check(machine, copy_of_the_package(tmp_path / install))
    files = cached(machine)
    subjects = [re.match(r"^([a-z0-9_]+)-[0-9a-f]{16}\.json$", name) for name in files
                if name.endswith(".json")]
    assert all(subjects), files
    names = [match.group(1) for match in subjects if match]
    assert len(names) == len(set(names)) >= 1 and "cudnn" in names  # one file per subject
    assert not set(old) & set(files) and stale.name not in files
    assert fresh.name in files and mine.name in files

    changed = copy_of_the_package(tmp_path / "upgraded")  # new data: a new version replaces the old file
    toml = changed / "compat" / "cudnn.toml"
    toml.write_text(toml.read_text() + "\n# a newer data release\n")
    before = [name for name in files if name.startswith("cudnn-") and name.endswith(".json")]
    run_check(machine, changed)
    after = [name for name in cached(machine) if name.startswith("cudnn-") and name.endswith(".json")]
    assert len(before) == len(after) == 1 and before != after
