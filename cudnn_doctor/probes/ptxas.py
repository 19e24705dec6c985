"""The ptxas JAX compiles its kernels with (issue 45): XLA runs the first ptxas on PATH before its own candidates
(compat/process_env.toml [[xla_ptx_target]]), so that file is asked its release (`ptxas --version`, its own answer)
where JAX is installed. Nothing is asked where there is no ptxas on PATH or no JAX."""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Sequence
from typing import Any

from cudnn_doctor.model import Framework, Toolkit


@functools.cache
def release_pattern() -> re.Pattern[str]:
    # 0-9 only: what other digits say is no release
    return re.compile(r"release (\d+\.\d+)", re.ASCII)


TIMEOUT_S = 5.0  # unless CUDNN_DOCTOR_HELPER_TIMEOUT says (the helper programs' time)


class PtxasChild:
    """`ptxas --version` of the first ptxas on PATH where a GPU build of JAX is installed, read later: (path, release)
    or (None, None). It is the answer XLA's own search got from that file (probes/first_use.XlaCompilerSearch, which
    asks it in any case: `ALSO`), so the file is run once; a child of its own only where that search did not run."""

    def __init__(self, env: dict[str, str], frameworks: list[Framework], toolkits: Sequence[Toolkit] = (),
                 search: Any = None) -> None:
        from cudnn_doctor.child import ChildBatch, deadline_in, helper_request, timeout_from_env

        self.path: str | None = path_ptxas(env, frameworks)
        self.release: str | None = None
        self.batch: ChildBatch | None = None
        self.search = search
        if self.path is None:
            return
        # a toolkit's own ptxas is of the toolkit's release, which its files already said: no child
        own = next((tk for tk in toolkits if tk.version and os.path.realpath(os.path.dirname(self.path))
                    == os.path.realpath(os.path.join(tk.path, "bin"))), None)
        if own is not None:
            self.release = ".".join(str(own.version).split(".")[:2])
        elif search is None or not search.has(self.path):
            seconds = timeout_from_env("CUDNN_DOCTOR_HELPER_TIMEOUT", TIMEOUT_S)
            self.batch = ChildBatch([helper_request((self.path, "--version"), env, f"{self.path} --version", seconds)],
                                    deadline=deadline_in(seconds))

    def result(self) -> tuple[str | None, str | None]:
        if self.release is not None:
            return self.path, self.release
        if self.path is None:
            return None, None
        if self.batch is not None:
            [answer] = self.batch.answers()
        else:
            answer = self.search.answer_of(self.path)
        if answer is None or answer.timed_out or "stdout" in answer.held:
            return self.path, None  # not run, or it hangs whoever reads its answer to the end: no release
        found = release_pattern().search(answer.stdout or "")
        return self.path, found.group(1) if found else None


def path_ptxas(env: dict[str, str], frameworks: Sequence[Framework]) -> str | None:
    """The first ptxas on PATH, where a GPU build of JAX is installed (the one XLA runs before its own)."""
    if not any(f.name == "jax" and not f.details.get("cpu_only") and not f.details.get("assumed")
               for f in frameworks):
        return None
    return _first_on_path("ptxas", env.get("PATH", ""))


def _first_on_path(name: str, value: str) -> str | None:
    for folder in value.split(os.pathsep):
        candidate = os.path.join(folder or ".", name)
        try:
            if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
                return os.path.abspath(candidate)
        except (OSError, ValueError):
            continue
    return None
