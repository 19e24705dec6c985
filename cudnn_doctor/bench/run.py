"""Start the bench child for one GPU (`python -m cudnn_doctor.bench.child`) and read its answer;
commands/bench.py runs the bench, rules/bench.py judges the answers."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

DEFAULT_TIMEOUT_S = 600.0
PACKAGE_ROOT = str(Path(__file__).resolve().parents[2])


def bench_timeout() -> float:
    """Seconds one child may take; CUDNN_DOCTOR_BENCH_TIMEOUT overrides."""
    try:
        return float(os.environ.get("CUDNN_DOCTOR_BENCH_TIMEOUT", DEFAULT_TIMEOUT_S))
    except ValueError:
        return DEFAULT_TIMEOUT_S


def run_child(request: dict[str, Any], timeout: float | None = None,
              on_progress: Callable[[dict[str, Any]], None] | None = None) -> dict[str, Any]:
    """Run the bench child for one device; a crash or a hang comes back as {'crash': ...}."""
    from cudnn_doctor.bench.libraries import library_folders

    timeout = bench_timeout() if timeout is None else timeout
    env = dict(os.environ)
    folders = library_folders(request["cudnn"], request["cudart"])
    env["LD_LIBRARY_PATH"] = os.pathsep.join([*folders, *[p for p in env.get("LD_LIBRARY_PATH", "").split(os.pathsep)
                                                          if p]])
    env["PYTHONPATH"] = os.pathsep.join([PACKAGE_ROOT, *[p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]])
    # one BLAS thread per CPU-reference worker: the reference spreads work over its own threads
    for variable in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        env[variable] = "1"
    started = time.perf_counter()
    try:
        process = subprocess.Popen([sys.executable, "-m", "cudnn_doctor.bench.child", json.dumps(request)],
                                   stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                   env=env, start_new_session=True)
    except OSError as error:
        return {"crash": f"could not start the benchmark process: {error}", "results": []}
    try:
        if on_progress is None:
            out, err = process.communicate(timeout=timeout)
        else:
            out, err = _communicate_with_progress(process, timeout, on_progress)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except OSError:
            process.kill()
        if on_progress is None:
            process.communicate()
        else:
            process.wait()  # the progress readers own the pipes
        return {"crash": f"did not finish within {timeout:g} s (it hangs; CUDNN_DOCTOR_BENCH_TIMEOUT sets the limit)",
                "results": []}
    wall_ms = round((time.perf_counter() - started) * 1000, 1)
    lines = [line for line in out.decode(errors="replace").splitlines() if line.startswith("{")]
    if process.returncode != 0 or not lines:
        if process.returncode and process.returncode < 0:
            how = f"crashed with {signal.Signals(-process.returncode).name}"
        else:
            how = f"exited with status {process.returncode} without an answer"
        tail = err.decode(errors="replace").strip().splitlines()
        return {"crash": how + (f" ({tail[-1]})" if tail else ""), "results": [], "wall_ms": wall_ms}
    try:
        answer: dict[str, Any] = json.loads(lines[-1])
    except ValueError:
        return {"crash": "answered garbage", "results": [], "wall_ms": wall_ms}
    answer["wall_ms"] = wall_ms
    return answer


def _communicate_with_progress(process: subprocess.Popen[bytes], timeout: float,
                               on_progress: Callable[[dict[str, Any]], None]) -> tuple[bytes, bytes]:
    """communicate(), with the child's progress lines on stderr handed to ON_PROGRESS as they come."""
    import threading

    from cudnn_doctor.bench.child import PROGRESS_PREFIX

    out: list[bytes] = []
    err: list[bytes] = []
    assert process.stdout is not None and process.stderr is not None
    stdout, stderr = process.stdout, process.stderr

    def read_stdout() -> None:
        out.append(stdout.read())

    def read_stderr() -> None:
        for line in iter(stderr.readline, b""):
            if line.startswith(PROGRESS_PREFIX.encode()):
                try:
                    on_progress(json.loads(line[len(PROGRESS_PREFIX):]))
                except ValueError:
                    pass
            else:
                err.append(line)

    readers = [threading.Thread(target=read_stdout, daemon=True), threading.Thread(target=read_stderr, daemon=True)]
    for reader in readers:
        reader.start()
    process.wait(timeout=timeout)  # TimeoutExpired: the caller kills the process group, which closes the pipes
    for reader in readers:
        reader.join(timeout=5)
    return b"".join(out), b"".join(err)


def _decode_cudnn(encoded: int) -> str:
    if encoded >= 90000:
        return f"{encoded // 10000}.{encoded % 10000 // 100}.{encoded % 100}"
    return f"{encoded // 1000}.{encoded % 1000 // 100}.{encoded % 100}"


def _decode_cuda(encoded: int) -> str:
    return f"{encoded // 1000}.{encoded % 1000 // 10}"
