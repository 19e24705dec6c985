"""Running the doctor as user nobody from a root test run, wherever this Python lives.

The permission tests run the CLI as nobody (setpriv) to meet folders it may not read. On a fresh machine the
interpreter may live where only root can look (a pyenv under /root, a venv in /root/project): nobody cannot
even start it. Then the folders it needs (the installation, the environment's site-packages, the checkout)
are shown to nobody through read-only bind mounts in a /tmp folder of their own (a copy of the standard
library where mounting is not allowed), and everything is removed when the session ends."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

SETPRIV = "/usr/bin/setpriv"
NOBODY = [SETPRIV, "--reuid=65534", "--regid=65534", "--clear-groups"]
ROOT = Path(__file__).resolve().parents[1]
IMPORTS = "import cudnn_doctor.cli, argcomplete, rich, requests, pynvml, platformdirs, packaging"


def can_run_as_nobody() -> str | None:
    """Why the nobody tests cannot run here, or None."""
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        return "needs root to run the doctor as another user"
    if not os.path.exists(SETPRIV):
        return "needs setpriv (util-linux) to run the doctor as another user"
    return None


@dataclass
class NobodyPython:
    """How to start this Python's doctor as nobody: `argv` + arguments, in an environment passed through `env`."""

    python: str
    pythonpath: list[str]
    views: list[Path] = field(default_factory=list)

    @property
    def argv(self) -> list[str]:
        return [*NOBODY, self.python]

    def env(self, env: dict[str, str]) -> dict[str, str]:
        """ENV with PYTHONPATH pointing where nobody can read this checkout and its dependencies."""
        return {**env, "PYTHONPATH": os.pathsep.join(self.pythonpath), "PYTHONNOUSERSITE": "1"}


def _works(python: str, pythonpath: list[str]) -> bool:
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": os.pathsep.join(pythonpath), "HOME": "/"}
    try:
        return subprocess.run([*NOBODY, python, "-c", IMPORTS], env=env, capture_output=True, timeout=60,
                              cwd="/").returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def _readable_by_nobody(path: str) -> bool:
    return subprocess.run([*NOBODY, "/bin/sh", "-c", 'test -r "$0" && test -x "$0"', path],
                          capture_output=True, timeout=30).returncode == 0


def _show(source: str, target: Path) -> bool:
    """SOURCE visible at TARGET: a read-only bind mount (True), else (no mounting here) a copy without its tests."""
    target.mkdir(parents=True)
    if subprocess.run(["mount", "--bind", "-o", "ro", source, str(target)], capture_output=True).returncode == 0:
        return True
    target.rmdir()
    shutil.copytree(source, target, symlinks=True, ignore=shutil.ignore_patterns(
        "__pycache__", "test", "tests", "idlelib", "tkinter", "turtledemo", "ensurepip", "lib2to3"))
    return False


def _packages() -> list[str]:
    """The folders of this Python's sys.path that hold packages, outside its installation, and the checkout."""
    base = os.path.realpath(sys.base_prefix)
    found = [str(ROOT)]
    for entry in sys.path:
        real = os.path.realpath(entry) if entry else ""
        if real and os.path.isdir(real) and not real.startswith(base + os.sep) and real not in found \
                and real != os.path.realpath(ROOT):
            found.append(real)
    return found


@contextlib.contextmanager
def nobody_python() -> Iterator[NobodyPython]:
    """This Python for nobody: itself where nobody can start it, else a view of it in /tmp (removed afterwards)."""
    packages = _packages()
    if _works(sys.executable, packages):
        yield NobodyPython(sys.executable, packages)
        return
    views = Path(tempfile.mkdtemp(prefix="cudnn-doctor-python-"))
    views.chmod(0o755)
    mounted: list[Path] = []
    try:
        base = views / "base"
        if _show(os.path.realpath(sys.base_prefix), base):
            mounted.append(base)
        version = f"python{sys.version_info.major}.{sys.version_info.minor}"
        shown: list[str] = []
        for index, folder in enumerate(packages):
            if _readable_by_nobody(folder):
                shown.append(folder)
                continue
            target = views / f"path-{index}"
            if _show(folder, target):
                mounted.append(target)
            shown.append(str(target))
        python = str(base / "bin" / version)
        if not _works(python, shown):
            raise RuntimeError(f"nobody cannot run {python} from the view of {sys.base_prefix} in {views}")
        yield NobodyPython(python, shown, mounted)
    finally:
        still_mounted = [target for target in reversed(mounted)
                         if subprocess.run(["umount", str(target)], capture_output=True).returncode != 0]
        if not still_mounted:  # never remove a folder through a mount that is still there
            shutil.rmtree(views, ignore_errors=True)
