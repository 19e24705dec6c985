"""The ptxas JAX compiles its kernels with (issue 45): XLA runs the first ptxas on PATH before its own candidates
(compat/process_env.toml [[xla_ptx_target]]), so that file is asked its release (`ptxas --version`, its own answer)
where JAX is installed. Nothing is asked where there is no ptxas on PATH or no JAX."""

from __future__ import annotations

import os
import re
import time

from cudnn_doctor.model import Framework

RELEASE = re.compile(r"release (\d+\.\d+)")
TIMEOUT_S = 5.0


def ptxas_on_path(env: dict[str, str], frameworks: list[Framework]) -> tuple[str | None, str | None]:
    """(the first ptxas on PATH, the release it says it is) where a GPU build of JAX is installed; (None, None)
    otherwise; (path, None) where it did not say."""
    if not any(f.name == "jax" and not f.details.get("cpu_only") and not f.details.get("assumed") for f in frameworks):
        return None, None
    path = _first_on_path("ptxas", env.get("PATH", ""))
    if path is None:
        return None, None
    from cudnn_doctor.child import run_child

    answer = run_child((path, "--version"), env, time.monotonic() + TIMEOUT_S, f"{path} --version")
    found = RELEASE.search(answer.stdout or "")
    return path, found.group(1) if found else None


def _first_on_path(name: str, value: str) -> str | None:
    for folder in value.split(os.pathsep):
        candidate = os.path.join(folder or ".", name)
        try:
            if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
                return os.path.abspath(candidate)
        except (OSError, ValueError):
            continue
    return None
