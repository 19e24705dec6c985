"""The doctor's cache folder (downloads, parsed compat data)."""

from __future__ import annotations

import os
from pathlib import Path


def cache_dir() -> Path:
    """CUDNN_DOCTOR_CACHE_DIR, else the platform's user cache folder (platformdirs)."""
    override = os.environ.get("CUDNN_DOCTOR_CACHE_DIR")
    if override:
        return Path(override)
    from platformdirs import user_cache_dir

    return Path(user_cache_dir("cudnn-doctor", appauthor=False))
