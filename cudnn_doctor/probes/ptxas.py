"""The ptxas JAX compiles its kernels with (issue 45): XLA runs the first ptxas on PATH before its own candidates
(compat/process_env.toml [[xla_ptx_target]]), so that file is asked its release (`ptxas --version`, its own answer)
where JAX is installed. Nothing is asked where there is no ptxas on PATH or no JAX."""

from __future__ import annotations

import os
import re
from collections.abc import Sequence

from cudnn_doctor.model import Framework, Toolkit

RELEASE = re.compile(r"release (\d+\.\d+)", re.ASCII)  # 0-9 only: what other digits say is no release
TIMEOUT_S = 5.0  # unless CUDNN_DOCTOR_HELPER_TIMEOUT says (the helper programs' time)


class PtxasChild:
    """`ptxas --version` of the first ptxas on PATH, started now (beside the other probes) where a GPU build of JAX
    is installed; its answer read later: (path, release) or (None, None)."""

    def __init__(self, env: dict[str, str], frameworks: list[Framework], toolkits: Sequence[Toolkit] = ()) -> None:
        from cudnn_doctor.child import ChildBatch, ChildRequest, deadline_in, timeout_from_env

        self.path: str | None = None
        self.release: str | None = None
        self.batch: ChildBatch | None = None
        if not any(f.name == "jax" and not f.details.get("cpu_only") and not f.details.get("assumed")
                   for f in frameworks):
            return
        self.path = _first_on_path("ptxas", env.get("PATH", ""))
        # a toolkit's own ptxas is of the toolkit's release, which its files already said: no child
        own = next((tk for tk in toolkits if self.path and tk.version and os.path.realpath(os.path.dirname(self.path))
                    == os.path.realpath(os.path.join(tk.path, "bin"))), None)
        if own is not None:
            self.release = ".".join(str(own.version).split(".")[:2])
        elif self.path is not None:
            seconds = timeout_from_env("CUDNN_DOCTOR_HELPER_TIMEOUT", TIMEOUT_S)
            self.batch = ChildBatch([ChildRequest((self.path, "--version"), env, seconds, f"{self.path} --version")],
                                    deadline=deadline_in(seconds))

    def result(self) -> tuple[str | None, str | None]:
        if self.release is not None:
            return self.path, self.release
        if self.batch is None:
            return None, None
        [answer] = self.batch.answers()
        found = RELEASE.search(answer.stdout or "")
        return self.path, found.group(1) if found else None


def _first_on_path(name: str, value: str) -> str | None:
    for folder in value.split(os.pathsep):
        candidate = os.path.join(folder or ".", name)
        try:
            if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
                return os.path.abspath(candidate)
        except (OSError, ValueError):
            continue
    return None
