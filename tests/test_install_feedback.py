"""Issue 44: an install from a wheel as a new user meets it. The plan and its question come before the wheel's
hundreds of MB are unpacked (a wheel is listed in a moment, as --dry-run does); the bar's time left is estimated
from the bytes read, not from a jump to the zip's directory at its end; the wheel's Python package files
(__init__.py) are not cuDNN's and are not installed; the plan's "built for CUDA" does not contradict the result's."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.install_helpers import CLI, clean_env, make_archive, run_json

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="a pseudo-terminal, Linux libraries")


def nvidia_wheel(tmp_path: Path) -> Path:
    """A cuDNN wheel laid out as NVIDIA's are: the Python package files beside the libraries and headers."""
    wheel = make_archive("wheel", tmp_path, version=91900, cudart=12080, cuda=12)
    with zipfile.ZipFile(wheel, "a") as archive:
        for name in ("nvidia/__init__.py", "nvidia/cudnn/__init__.py", "nvidia/cudnn/include/__init__.py",
                     "nvidia/cudnn/lib/__init__.py", "nvidia/cudnn/lib/__pycache__/__init__.cpython-312.pyc"):
            archive.writestr(name, b"")
    return wheel


def on_a_terminal(args: list[str], env: dict[str, str], answer: bytes) -> tuple[int, bytes]:
    """(exit code, the whole screen) of the CLI with a terminal on stdin, stdout and stderr, ANSWER typed once
    the question shows."""
    import pty
    import time

    main, child = pty.openpty()
    process = subprocess.Popen([sys.executable, "-c", CLI, *args], stdin=child, stdout=child, stderr=child,
                               env={**env, "TERM": "xterm", "COLUMNS": "120"})
    os.close(child)
    screen = bytearray()
    answered = False
    deadline = time.monotonic() + 60
    try:
        while time.monotonic() < deadline:
            try:
                chunk = os.read(main, 65536)
            except OSError:
                break
            if not chunk:
                break
            screen += chunk
            if not answered and b"[y/N]" in screen:
                os.write(main, answer)
                answered = True
        process.wait(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
        os.close(main)
    return process.returncode, bytes(screen)


def test_the_plan_and_its_question_come_before_the_wheel_is_unpacked(tmp_path: Path) -> None:
    wheel = nvidia_wheel(tmp_path)
    prefix = tmp_path / "prefix"
    code, screen = on_a_terminal(["install", "--from", str(wheel), "--prefix", str(prefix)], clean_env(tmp_path),
                                 b"n\n")
    asked = screen.index(b"[y/N]")
    assert b"cuDNN 9.19.0 for CUDA 12 (linux" in screen[:asked] and b"extract" not in screen[:asked], screen
    assert code == 1 and not prefix.exists()  # declined: not even a staging folder was made
    code, screen = on_a_terminal(["install", "--from", str(wheel), "--prefix", str(prefix)], clean_env(tmp_path),
                                 b"y\n")
    assert code == 0, screen
    assert screen.count(b"[y/N]") == 1 and screen.count(b"cuDNN 9.19.0 for CUDA 12 (linux") == 1  # the plan unpacked is the one shown


def test_a_wheels_python_files_are_not_installed(tmp_path: Path) -> None:
    wheel = nvidia_wheel(tmp_path)
    prefix = tmp_path / "prefix"
    code, data, err = run_json(["install", "--from", str(wheel), "--prefix", str(prefix), "--yes"], clean_env(tmp_path))
    assert code == 0, err
    assert not [p for p in prefix.rglob("*") if p.name == "__init__.py" or "__pycache__" in p.parts]
    assert (prefix / "include" / "cudnn_version.h").is_file()


def test_reading_a_wheel_reports_progress_as_read(tmp_path: Path) -> None:
    """A zip is opened at its end (the central directory): the bar's first value was the whole size, and its speed
    estimate from that jump showed 0:00:00 left at 36 %."""
    from cudnn_doctor.install.archive import read_archive
    from cudnn_doctor.knowledge.layout import layout_for

    wheel = nvidia_wheel(tmp_path)
    seen: list[int] = []
    layout = layout_for("linux", "x86_64")
    assert layout is not None
    read_archive(str(wheel), layout, lambda name: tmp_path / "staged" / name, seen.append)
    assert seen == sorted(seen), seen[:5]
    assert seen[0] < wheel.stat().st_size // 2


def test_the_plans_built_for_cuda_is_the_majors_where_only_the_name_says(tmp_path: Path) -> None:
    """The plan knows the wheel's CUDA major from its name (cu12); it said "built for CUDA 12.0" where the library
    then said 12.8: it says 12."""
    wheel = nvidia_wheel(tmp_path)
    env = clean_env(tmp_path)
    toolkit = tmp_path / "system-root" / "usr" / "local" / "cuda-13.0"
    (toolkit / "bin").mkdir(parents=True)
    (toolkit / "version.json").write_text('{"cuda": {"name": "CUDA SDK", "version": "13.0.96"}}')
    code, data, err = run_json(["install", "--from", str(wheel), "--prefix", str(tmp_path / "p"), "--dry-run"], env)
    assert code == 0, err
    details = " ".join(f["detail"] for f in data["plan"]["fits"] if f["code"] == "CD306")
    assert "built for CUDA 12," in details and "12.0" not in details, data["plan"]["fits"]
