"""ld.so looks in a searched folder's glibc-hwcaps/<level> subfolders (the levels this CPU supports, best first)
before the folder itself: the doctor asks ld.so which levels it searches (`ld.so --help`), and its loader model,
its copies of cuDNN and its plan follow. Judged against the real loader: a child that opens libcudnn.so.9 by name
and reads its own /proc/self/maps."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from cudnn_doctor.probes import hwcaps
from cudnn_doctor.probes.context import SearchContext
from cudnn_doctor.probes.loader import resolve_like_loader
from tests.conftest import Machine
from tests.fakes.build import fake_cudnn

LEVELS = hwcaps.searched_levels(os.environ)
pytestmark = pytest.mark.skipif(not LEVELS, reason="this ld.so names no glibc-hwcaps level (glibc before 2.33)")

MAPPED = r"""
import ctypes, sys
ctypes.CDLL("libcudnn.so.9")
print(next(line.split()[-1] for line in open("/proc/self/maps") if "libcudnn.so" in line))
"""


def test_ld_so_help_is_read_as_ld_so_prints_it() -> None:
    text = ("Subdirectories of glibc-hwcaps directories, in priority order:\n  x86-64-v4\n"
            "  x86-64-v3 (supported, searched)\n  x86-64-v2 (supported, searched)\n\n"
            "Legacy HWCAP subdirectories under library search path directories:\n  tls (supported, searched)\n")
    assert hwcaps.parse_help(text) == ("x86-64-v3", "x86-64-v2")
    assert hwcaps.parse_help("Usage: ld.so [OPTION]... EXECUTABLE-FILE\n") == ()
    assert hwcaps.parse_help(text.replace("x86-64-v3", "../../etc")) == ("x86-64-v2",)


def _folders(tmp_path: Path) -> tuple[Path, Path]:
    folder = tmp_path / "libs"
    fake_cudnn(folder, version=91900)
    level = folder / hwcaps.HWCAPS / LEVELS[-1]  # the lowest level searched: any CPU that searches one has it
    fake_cudnn(level, version=91400)
    return folder, level


def test_the_copy_in_a_searched_hwcaps_subfolder_is_the_one_the_loader_takes(tmp_path: Path) -> None:
    folder, level = _folders(tmp_path)
    env = {**os.environ, "LD_LIBRARY_PATH": str(folder)}
    real = subprocess.run([sys.executable, "-c", MAPPED], env=env, capture_output=True, text=True, check=True)
    ctx = SearchContext(env=env)
    said = resolve_like_loader("libcudnn.so.9", [], ctx, {})
    assert said is not None and os.path.realpath(said) == os.path.realpath(real.stdout.strip())
    assert os.path.dirname(said) == str(level)
    # a level ld.so does not search here (a name no CPU has) is passed over, as by ld.so
    (folder / hwcaps.HWCAPS / "no-such-level").mkdir()
    fake_cudnn(folder / hwcaps.HWCAPS / "no-such-level", version=90100)
    assert os.path.dirname(resolve_like_loader("libcudnn.so.9", [], SearchContext(env=env), {}) or "") == str(level)


def test_check_finds_the_hwcaps_copy_and_names_it_the_loaders(machine: Machine, tmp_path: Path) -> None:
    folder, level = _folders(tmp_path)
    machine.add_library_path(folder)
    report = machine.check_json()
    by_path = {os.path.dirname(install["library"]): install for install in report["cudnn"]}
    assert str(level) in by_path and by_path[str(level)]["version"].startswith("9.14")
    assert "ld.so" in by_path[str(level)]["loaded_by"]
    assert "ld.so" not in by_path.get(str(folder), {}).get("loaded_by", [])
