"""The code passes ruff, as configured in pyproject.toml."""

from __future__ import annotations

import hashlib
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
    # mypy's incremental cache in the test cache (kept between runs: a fresh CI clone checks the package in about a
    # second instead of 10-15 s), one folder per checkout's path; mypy itself validates every entry (each source's
    # hash, its own version and options), so a changed file is checked again
    from tests.real_wheels import cache_root

    cache = cache_root() / "mypy" / hashlib.sha256(str(ROOT).encode()).hexdigest()[:16]
    result = subprocess.run([mypy, "--cache-dir", str(cache)], cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
