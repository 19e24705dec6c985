"""How long `explain --from-file` takes on a long log, and how many bytes it reads of it: the figure that
tests/test_explain_bounded.py's mechanism test (one seek, at most MAX_BYTES read) stands for.

    python benchmarks/explain_tail.py [--mb 50] [--runs 5]

Writes a log of MB megabytes (training lines, the cuDNN error last), then runs `python -m cudnn_doctor explain
--from-file LOG --offline-only --json` RUNS times (a new process each: start-up included) and prints the median
wall time and the bytes the process read (/proc/PID/io's rchar, every read(2) of the process: its own modules
too), and the same for a log of 1 MB, whose difference is what the long log costs."""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LINE = b"2025-01-01 12:00:00 INFO epoch 1 step 100 loss 0.25 accuracy current cuda:0 documents\n"
ERROR = b"OSError: libcudnn_cnn_infer.so.8: cannot open shared object file: No such file or directory\n"


def write_log(path: Path, megabytes: int) -> None:
    with path.open("wb") as handle:
        handle.write(LINE * (megabytes * 1_000_000 // len(LINE)))
        handle.write(ERROR)


def one_run(log: Path) -> tuple[float, int]:
    """(wall seconds, bytes read by the process) of one explain run."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    started = time.perf_counter()
    process = subprocess.Popen([sys.executable, "-c",
                                "import runpy, sys; sys.argv = ['cudnn_doctor'] + sys.argv[1:]\n"
                                "try:\n    runpy.run_module('cudnn_doctor', run_name='__main__')\n"
                                "finally:\n    sys.stderr.write(open('/proc/self/io').read())",
                                "explain", "--from-file", str(log), "--offline-only", "--json"],
                               env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out, err = process.communicate(timeout=120)
    wall = time.perf_counter() - started
    assert process.returncode == 0 and b'"CD304"' in out, err.decode(errors="replace")[-500:]
    rchar = next(int(line.split()[1]) for line in err.decode().splitlines() if line.startswith("rchar:"))
    return wall, rchar


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=int, default=50)
    parser.add_argument("--runs", type=int, default=5)
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        for megabytes in (1, options.mb):
            log = Path(scratch) / f"train-{megabytes}.log"
            write_log(log, megabytes)
            one_run(log)  # warm: the page cache, the bytecode
            runs = [one_run(log) for _ in range(options.runs)]
            print(f"{megabytes:>4} MB log: {statistics.median(w for w, _ in runs) * 1000:7.0f} ms wall (median of "
                  f"{options.runs}), {statistics.median(r for _, r in runs) / 1e6:6.2f} MB read by the process")


if __name__ == "__main__":
    main()
