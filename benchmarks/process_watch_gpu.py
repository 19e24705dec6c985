"""On the GPU machine: the children's ProcessWatch says nothing of the real NVIDIA libraries (issue 43, round eight).

Each child that loads a vendor library compares its own process before and after each step (loading it, cuInit,
nvmlInit): the environment as C reads it, the standard descriptors, a pipe end of its own, the limits, the folder,
the umask, a pending alarm. A hostile library is named for what it took (CPU tests: tests/test_hostile_constructors.py).
This proves the other side on the real driver 580, its NVML, the system cuDNN 9.14, pip's cuDNN 9.19 and the
frameworks' own copies: nothing is said of them, with CUDA asked (CUDA_VISIBLE_DEVICES=0) and under --deep.

    python3 benchmarks/process_watch_gpu.py OUT_DIR

Writes OUT_DIR/process_watch.json (per run: what each child said it lost, the codes) and prints one line; exit 1
where any real library is said to have taken anything.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
RUNS = {"check": ["check", "--json"], "check --deep": ["check", "--deep", "--json"]}


def said(report: dict) -> dict:
    process = report.get("process") or {}
    return {"cuda": process.get("changed_process") or [],
            "nvml": process.get("nvml_changed") or [],
            "cudnn": {i["library"]: i["changed_process"] for i in report.get("cudnn", []) if i.get("changed_process")},
            "codes": sorted({f["code"] for f in report.get("findings", [])}),
            "lost": [f["detail"] for f in report.get("findings", [])
                     if f["code"] in ("CD110", "CD118", "CD309") and "lost" in f["detail"]]}


def main() -> int:
    out = Path(sys.argv[1] if len(sys.argv) > 1 else "process-watch")
    out.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": os.environ.get("CUDA_VISIBLE_DEVICES", "0")}  # CUDA is asked
    results = {}
    for name, args in RUNS.items():
        done = subprocess.run([sys.executable, "-m", "cudnn_doctor", *args], capture_output=True, text=True,
                              cwd=REPO, env=env, timeout=600)
        results[name] = said(json.loads(done.stdout))
    (out / "process_watch.json").write_text(json.dumps(results, indent=2))
    good = not any(r["cuda"] or r["nvml"] or r["cudnn"] or r["lost"] for r in results.values())
    print(("ok: " if good else "NOT ok: ") + json.dumps(results))
    return 0 if good else 1


if __name__ == "__main__":
    raise SystemExit(main())
