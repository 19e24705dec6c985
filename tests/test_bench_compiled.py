"""The compiled CPU baseline: built once per machine into the cache, and NumPy, with the reason,
wherever it cannot be built. Each case runs in a fresh interpreter, as the bench child does."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PROBE = ("import numpy as np\n"
         "from cudnn_doctor.bench import reference as ref\n"
         "x = np.arange(1, 10, dtype=np.float32).reshape(1, 3, 3, 1)\n"
         "y = ref.conv_forward(x, np.ones((1, 3, 3, 1), np.float32), pad=1, stride=1, threads=2)\n"
         "print(ref.baseline())\n"
         "print(y[0, :, :, 0].astype(int).tolist())\n")
SUMS = "[[12, 21, 16], [27, 45, 33], [24, 39, 28]]"  # each output: the sum of its 3x3 neighbourhood


def probe(tmp_path: Path, **env: str) -> list[str]:
    environment = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(tmp_path),
                   "CUDNN_DOCTOR_CACHE_DIR": str(tmp_path / "cache"), "PYTHONPATH": str(ROOT), **env}
    done = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, env=environment,
                          timeout=120, check=True)
    return done.stdout.splitlines()


def test_built_once_into_the_cache_then_reused(tmp_path):
    first = probe(tmp_path)
    assert first[0].startswith("compiled with ") and first[0].endswith(" around NumPy's OpenBLAS sgemm")
    assert first[1] == SUMS
    built = list((tmp_path / "cache" / "cpu-kernels").iterdir())
    assert len(built) == 1 and built[0].suffix == ".so"  # no temporary file left behind
    stamp = built[0].stat().st_mtime_ns
    assert probe(tmp_path) == first
    assert [p.stat().st_mtime_ns for p in (tmp_path / "cache" / "cpu-kernels").iterdir()] == [stamp]


def test_no_compiler_runs_numpy_and_says_why(tmp_path):
    empty = tmp_path / "bin"
    empty.mkdir()
    lines = probe(tmp_path, PATH=str(empty))
    assert lines == ["NumPy (no C compiler: install gcc, or set CC)", SUMS]


def test_a_compiler_that_fails_runs_numpy_and_says_why(tmp_path):
    lines = probe(tmp_path, CC="false")
    assert lines == ["NumPy (false could not build cpu_kernels.c: exited with status 1)", SUMS]
    assert not list((tmp_path / "cache" / "cpu-kernels").iterdir())  # nothing half-written


def test_numpy_on_request(tmp_path):
    assert probe(tmp_path, CUDNN_DOCTOR_CPU_BASELINE="numpy") == ["NumPy (CUDNN_DOCTOR_CPU_BASELINE=numpy)", SUMS]
    assert not (tmp_path / "cache" / "cpu-kernels").exists()


def test_an_unwritable_cache_builds_in_a_temporary_folder_then_removes_it(tmp_path):
    # a folder no one may write in, root included (a file there is a usage error of its own: test_hostile_settings)
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    lines = probe(tmp_path, TMPDIR=str(scratch), CUDNN_DOCTOR_CACHE_DIR="/proc/self")
    assert lines[0].startswith("compiled with ") and lines[1] == SUMS
    assert not list(scratch.iterdir())


def test_a_compiler_that_hangs_is_stopped_at_the_bench_limit_with_all_it_started(tmp_path):
    """A `cc` first on PATH (or CC) that never answers and leaves a child of its own: it runs through the one child
    runner, within CUDNN_DOCTOR_BENCH_TIMEOUT over the whole build (it waited 30 s for --version, then up to 300 s
    for each of two compiles, and a child it left ran on); then NumPy runs, and says why."""
    import time

    marker = tmp_path / "still-running"
    hanging = tmp_path / "bin" / "cc"
    hanging.parent.mkdir()
    hanging.write_text(f"#!/bin/sh\nsleep 60 {marker} &\nexec sleep 61\n")
    hanging.chmod(0o755)
    started = time.monotonic()
    lines = probe(tmp_path, PATH=f"{hanging.parent}:/usr/bin:/bin", CUDNN_DOCTOR_BENCH_TIMEOUT="1")
    assert time.monotonic() - started < 15
    assert lines == ["NumPy (cc did not finish within the bench's time limit (CUDNN_DOCTOR_BENCH_TIMEOUT))", SUMS]
    left = subprocess.run(["pgrep", "-f", f"sleep 60 {marker}"], capture_output=True, text=True).stdout.split()
    assert left == [], left
