"""Start the bench child for one GPU (`python -m cudnn_doctor.bench.child`) and read its answer;
commands/bench.py runs the bench, rules/bench.py judges the answers."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from cudnn_doctor.bench.timeout import bench_timeout

PACKAGE_ROOT = str(Path(__file__).resolve().parents[2])


def run_child(request: dict[str, Any], timeout: float | None = None,
              on_progress: Callable[[dict[str, Any]], None] | None = None) -> dict[str, Any]:
    """Run the bench child for one device through the child runner; a crash or a hang comes back as
    {'crash': ...}. The child's progress lines on stderr go to ON_PROGRESS as they come."""
    from cudnn_doctor.bench.libraries import library_folders
    from cudnn_doctor.child import deadline_in, python_module_argv
    from cudnn_doctor.child import run_child as run_one

    timeout = bench_timeout() if timeout is None else timeout
    env = dict(os.environ)
    folders = library_folders(request["cudnn"], request["cudart"])
    env["LD_LIBRARY_PATH"] = os.pathsep.join([*folders, *[p for p in env.get("LD_LIBRARY_PATH", "").split(os.pathsep)
                                                          if p]])
    # one BLAS thread per CPU-reference worker: the reference spreads work over its own threads
    for variable in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        env[variable] = "1"
    # isolated: this package first, then this interpreter's own path (NumPy where the doctor found it),
    # never the current folder
    here = os.getcwd()
    paths = [PACKAGE_ROOT, *[p for p in sys.path if p and os.path.abspath(p) != here]]
    argv = python_module_argv("cudnn_doctor.bench.child", json.dumps(request), paths=paths)
    answer = run_one(argv, env, deadline_in(timeout), what="the benchmark process",
                     on_stderr_line=_progress_reader(on_progress) if on_progress else None, answer_channel=True)
    if answer.timed_out:
        return {"crash": f"did not finish within {timeout:g} s (it hangs; CUDNN_DOCTOR_BENCH_TIMEOUT sets the limit)",
                "results": []}
    if answer.crashed or answer.values is None:
        if not answer.crashed and answer.error:  # it could not be started
            return {"crash": answer.error, "results": []}
        if answer.exit_code is not None and answer.exit_code < 0:
            how = answer.error or "crashed"
        else:
            how = f"exited with status {answer.exit_code} without an answer" + \
                (f" ({answer.stderr_tail})" if answer.stderr_tail else "")
        return {"crash": how, "results": [], "wall_ms": answer.wall_ms}
    result = dict(answer.values)
    result["wall_ms"] = answer.wall_ms
    return result


def _progress_reader(on_progress: Callable[[dict[str, Any]], None]) -> Callable[[bytes], None]:
    """A stderr-line callback that hands the child's progress lines (PROGRESS_PREFIX + JSON) to ON_PROGRESS."""
    from cudnn_doctor.bench.child import PROGRESS_PREFIX

    prefix = PROGRESS_PREFIX.encode()

    def read(line: bytes) -> None:
        if line.startswith(prefix):
            try:
                on_progress(json.loads(line[len(prefix):]))
            except ValueError:
                pass

    return read
