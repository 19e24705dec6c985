"""One writer at a time for what tests share across processes: the caches of downloads, extracted wheels, the
Windows prefix, the arm64 root. The suite runs in several pytest-xdist workers at once (README.md, Development),
and two CI runs may share a cache: whatever is made once into a shared folder is made under `locked(NAME)`.

A lock is flock(2) on a file: the kernel drops it when its holder dies, so a killed run leaves nothing stale."""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


def lock_folder() -> Path:
    from tests.real_wheels import cache_root

    folder = cache_root() / "locks"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


@contextmanager
def locked(name: str, folder: Path | None = None) -> Iterator[None]:
    """Hold the exclusive lock NAME (a file in FOLDER, the test cache's locks/ by default) for the block."""
    path = (folder or lock_folder()) / f"{name}.lock"
    path.parent.mkdir(parents=True, exist_ok=True)
    descriptor = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX)
        yield
    finally:
        os.close(descriptor)  # closing drops the lock


def worker_id() -> str:
    """This process's pytest-xdist worker ("gw0", "gw1", ...), "main" where the suite runs in one process."""
    return os.environ.get("PYTEST_XDIST_WORKER", "main")
