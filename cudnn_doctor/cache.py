"""The doctor's cache folder (downloads, parsed compat data)."""

from __future__ import annotations

import hashlib
import json
import os
import re
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

STALE_TEMPORARY_S = 3600.0  # a .tmp this old belongs to a process that was killed mid-write


def cache_dir() -> Path:
    """CUDNN_DOCTOR_CACHE_DIR, else the platform's user cache folder (platformdirs)."""
    override = os.environ.get("CUDNN_DOCTOR_CACHE_DIR")
    if override:
        return Path(override)
    if sys.platform.startswith("linux"):  # platformdirs' answer, without importing it (and tempfile, random)
        base = os.environ.get("XDG_CACHE_HOME", "")
        return Path(base if base.strip() else os.path.expanduser("~/.cache")) / "cudnn-doctor"
    from platformdirs import user_cache_dir

    return Path(user_cache_dir("cudnn-doctor", appauthor=False))


def parsed(kind: str, subject: str, raw: bytes, parse: Callable[[bytes], Any]) -> Any:
    """PARSE(RAW), kept as JSON in <cache>/KIND/SUBJECT-<digest of RAW>.json.

    The name comes from the content, so reinstalling the same data reuses the file; writing a new
    version removes the older ones of SUBJECT: the folder holds one file per subject and data version."""
    digest = hashlib.blake2b(raw, digest_size=8).hexdigest()
    folder = cache_dir() / kind
    cached = folder / f"{subject}-{digest}.json"
    try:
        return json.loads(cached.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        pass
    data = parse(raw)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        temporary = folder / f"{subject}-{digest}.{os.getpid()}.tmp"
        temporary.write_text(json.dumps(data), encoding="utf-8")
        os.replace(temporary, cached)
        prune(folder, subject, keep=cached.name)
    except OSError:
        pass  # a read-only cache only costs time
    return data


LEGACY = re.compile(r"^[a-z0-9_]+-\d+-\d+\.json$")  # SUBJECT-<size>-<mtime_ns>.json, keyed by install, not by data
TEMPORARY = re.compile(r"^[a-z0-9_]+-[0-9a-f-]+\.\d+\.tmp$")


def prune(folder: Path, subject: str, keep: str) -> list[str]:
    """Remove from FOLDER: SUBJECT's other versions, files named the old way (one per install), and
    temporary files that killed runs left behind. Anything else there is not ours and stays."""
    versions = re.compile(rf"^{re.escape(subject)}-[0-9a-f-]+\.json$")
    removed: list[str] = []
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return removed
    now = time.time()
    for entry in entries:
        name = entry.name
        try:
            stale = TEMPORARY.match(name) and now - entry.stat(follow_symlinks=False).st_mtime > STALE_TEMPORARY_S
            if (versions.match(name) and name != keep) or LEGACY.match(name) or stale:
                os.unlink(entry.path)
                removed.append(name)
        except OSError:
            continue  # another run removed it first, or it is not ours to remove
    return removed
