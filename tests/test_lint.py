"""The code passes ruff, as configured in pyproject.toml."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_ruff_finds_nothing() -> None:
    ruff = shutil.which("ruff") or str(Path(sys.executable).parent / "ruff")
    if not Path(ruff).exists():
        pytest.skip("ruff is not installed (pip install '.[test]')")
    folders = [name for name in ("cudnn_doctor", "tests", "benchmarks") if (ROOT / name).is_dir()]
    result = subprocess.run([ruff, "check", *folders], cwd=ROOT,
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def test_mypy_finds_nothing() -> None:
    mypy = shutil.which("mypy") or str(Path(sys.executable).parent / "mypy")
    if not Path(mypy).exists():
        pytest.skip("mypy is not installed (pip install '.[test]')")
    # mypy's incremental cache in the test cache, kept between runs and shared by every checkout (one mypy at a time
    # on it): mypy validates each entry itself (its version and options, and each source by its size and, where the
    # path or time differs, its hash), so a fresh CI clone in a new folder reuses the entries of the files it shares
    # with the last run and checks the changed ones again. Kept per checkout's path before, every fresh clone (each in
    # a folder of its own) checked the whole package again (about 10 CPU s) and left a 16 MB folder behind.
    from tests.locks import locked
    from tests.real_wheels import cache_root

    cache = cache_root() / "mypy" / "shared"
    with locked("mypy-cache"):
        result = subprocess.run([mypy, "--cache-dir", str(cache)], cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
