"""How `cudnn-doctor fleet merge` scales: wall time and peak memory (the child's max RSS) of the
command as a user runs it, on folders of generated node reports.

    python benchmarks/fleet_merge.py [--reports 100000] [--distinct] [--big 12] [--timeout 600] [--work DIR]

- `--reports N`: N reports of a realistic node (a GPU, a driver, two toolkits, two cuDNN copies, torch and
  JAX, findings), each with its own hostname; a few nodes differ from the rest.
- `--distinct`: every node has its own driver version and a framework of its own (N distinct values of
  one field, N fields that only one node has: the case that was quadratic).
- `--big K`: K reports of about 14 MB each, mostly millions of tiny objects (several hundred MB each once
  parsed), for memory; `--limit-gb G` runs the merge under `ulimit -v` of G GiB (address space) as well.

The reports are written once into --work (default: a folder under /tmp, kept for the next run).
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def node_report(index: int, distinct: bool) -> dict:
    driver = f"580.{index // 1000}.{index % 1000:03d}" if distinct else ("570.86.15" if index % 97 == 0 else "580.159.04")
    cudnn = "9.14.0" if index % 53 == 0 else "9.19.0"
    report = {
        "schema": "cudnn-doctor/report/1",
        "tool": {"name": "cudnn-doctor", "version": "0.1.0"},
        "host": {"os": "linux", "arch": "x86_64", "python": "3.12.3", "hostname": f"gpu-{index:06d}"},
        "gpus": [{"index": i, "name": "NVIDIA H100 80GB HBM3", "uuid": f"GPU-{index:06d}-{i}",
                  "compute_capability": "9.0", "memory_total_mib": 81559, "driver_version": driver}
                 for i in range(8)],
        "driver": {"version": driver, "cuda_driver_version": "13.0", "source": "nvml", "library": None, "error": None},
        "toolkits": [{"path": "/usr/local/cuda-13.0", "version": "13.0.96", "source": "CUDA_HOME"},
                     {"path": "/opt/venv/lib/python3.12/site-packages/nvidia/cu13", "version": "13.0.96", "source": "pip"}],
        "cudnn": [{"path": "/usr/lib/x86_64-linux-gnu", "library": "/usr/lib/x86_64-linux-gnu/libcudnn.so.9",
                   "version": cudnn, "source": "system", "loaded_by": ["ld.so"]},
                  {"path": "/opt/venv/lib/python3.12/site-packages/nvidia/cudnn/lib",
                   "library": "/opt/venv/lib/python3.12/site-packages/nvidia/cudnn/lib/libcudnn.so.9",
                   "version": "9.19.0", "source": "pip:nvidia-cudnn-cu13", "loaded_by": ["torch", "jax"]}],
        "frameworks": [{"name": "torch", "version": "2.11.0+cu130", "cudnn_used": "/opt/venv/.../libcudnn.so.9"},
                       {"name": "jax", "version": "0.11.2", "cudnn_used": "/opt/venv/.../libcudnn.so.9"}],
        "findings": [{"code": "CD402", "severity": "info", "title": "Framework loads another cuDNN", "detail": "...",
                      "fix": "...", "refs": [], "subject": None}],
        "summary": {"status": "ok", "counts": {"error": 0, "warning": 0, "info": 1}, "exit_code": 0},
        "timings_ms": {"total": 200.0},
    }
    if distinct:  # a framework of its own too: a field name that no other node has
        report["frameworks"].append({"name": f"plugin-{index}", "version": "1.0", "cudnn_used": None})
    return report


def big_report(index: int) -> dict:
    """A report of about 14 MB that is mostly tiny objects (4.7 million of them, in a field the merge
    does not read): small on disk, several hundred MB once parsed."""
    report = node_report(index, False)
    report["notes"] = [{}] * 4_700_000
    return report


def write_reports(folder: Path, count: int, make) -> None:  # type: ignore[no-untyped-def]
    marker = folder / ".complete"
    if marker.exists():
        return
    folder.mkdir(parents=True, exist_ok=True)
    for index in range(count):
        (folder / f"gpu-{index:06d}.json").write_text(json.dumps(make(index), separators=(",", ":")))
    marker.write_text("")


def run_merge(folder: Path, timeout: float, limit_gb: float | None) -> tuple[float, float, int, str]:
    """(wall seconds, peak RSS in MiB, exit code, last line of stderr) of one `fleet merge --json FOLDER`."""
    def limit() -> None:
        if limit_gb:
            size = int(limit_gb * (1 << 30))
            resource.setrlimit(resource.RLIMIT_AS, (size, size))

    started = time.perf_counter()
    try:
        completed = subprocess.run([sys.executable, "-m", "cudnn_doctor", "fleet", "merge", "--json", str(folder)],
                                   cwd=REPO, capture_output=True, timeout=timeout, preexec_fn=limit)
    except subprocess.TimeoutExpired:
        return timeout, float("nan"), -1, f"did not finish within {timeout:.0f} s"
    wall = time.perf_counter() - started
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    tail = (completed.stderr.decode(errors="replace").strip().splitlines() or [""])[-1][:200]
    return wall, peak, completed.returncode, tail


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--reports", type=int, default=100_000)
    parser.add_argument("--distinct", action="store_true")
    parser.add_argument("--big", type=int, default=0)
    parser.add_argument("--limit-gb", type=float, default=None)
    parser.add_argument("--timeout", type=float, default=600)
    parser.add_argument("--work", default="/tmp/cudnn-doctor-fleet-bench")
    args = parser.parse_args()
    work = Path(args.work)
    if args.big:
        folder = work / f"big-{args.big}"
        write_reports(folder, args.big, big_report)
        what = f"{args.big} reports of {(folder / 'gpu-000000.json').stat().st_size / 1e6:.1f} MB"
    else:
        folder = work / f"{'distinct' if args.distinct else 'plain'}-{args.reports}"
        write_reports(folder, args.reports, lambda i: node_report(i, args.distinct))
        what = f"{args.reports} reports" + (", each with its own driver version and framework" if args.distinct else "")
    wall, peak, code, tail = run_merge(folder, args.timeout, args.limit_gb)
    limit = f" under a {args.limit_gb:g} GiB address-space limit" if args.limit_gb else ""
    print(f"fleet merge of {what}{limit}: {wall:.1f} s, peak RSS {peak:.0f} MiB, exit {code}"
          + (f" ({tail})" if code not in (0, 1) else ""))


if __name__ == "__main__":
    main()
