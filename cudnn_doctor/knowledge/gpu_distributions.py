"""The GPU stack's Python distributions as one pattern, for every installer row of compat/errors.toml that names the
package it refused (`{gpu_package}` in a row's pattern): the rows share the one table instead of each listing the
packages it was written from (round twenty, e29: a row that listed torch and nvidia-* missed the same refusal of
deep_gemm, paddlepaddle or sgl-kernel). The names are compat/libraries.toml's [[package]] prefixes (a package of the
GPU stack by the start of its name) and [framework_swap]'s frameworks (released per CUDA): a name is read with '_' as
'-' (a wheel's file writes flash_attn, a requirement flash-attn)."""

from __future__ import annotations

import functools
import re

from cudnn_doctor.knowledge.data import load

PLACEHOLDER = "{gpu_package}"
TAIL = "[a-z0-9_.-]{0,40}?"  # what a prefix leaves open (nvidia-cudnn-cu12, tensorrt_cu12_libs), bounded and lazy


def _name(text: str) -> str:
    return re.escape(text.lower()).replace("\\-", "-").replace("-", "[-_]")


@functools.cache
def gpu_package_pattern() -> str:
    """One bounded alternation: every [[package]] prefix with what it leaves open, every framework by its name."""
    data = load("libraries")
    prefixes = sorted({row["prefix"] for row in data.get("package", [])}, key=lambda p: (-len(p), p))
    frameworks = sorted(set(data.get("framework_swap", {}).get("frameworks", ())) - set(prefixes), key=lambda f: (-len(f), f))
    # "pytorch": conda's name for torch (a framework by name, never a prefix: pytorch-lightning is no CUDA build)
    parts = [_name(p) + TAIL for p in prefixes] + [_name(f) for f in (*frameworks, "pytorch")]
    return "(?:" + "|".join(parts) + ")"


def expand(pattern: str) -> str:
    """PATTERN with the GPU stack's distributions where it says {gpu_package}."""
    return pattern.replace(PLACEHOLDER, gpu_package_pattern()) if PLACEHOLDER in pattern else pattern
