"""Does `cudnn-doctor bench` notice that it is not alone on the GPU? For the GPU machine.

    python benchmarks/bench_contended.py [--torch-python /opt/torch/.venv/bin/python] [--device 0]
                                         [--size medium] [--workload conv]

Runs `cudnn-doctor bench --json` three times on one GPU: idle, then beside a second process that runs
matrix products (torch, fp16, back to back) on the same GPU, then idle again. For each run it prints
whether CD610 (GPU shared with other processes) appeared, the processes and the utilisation NVML gave,
whether the results were compared with a healthy GPU (CD609) or marked `not_compared`, and the median
GPU time of each workload, so that the cost of the other process shows too. Exit 0 when the shared run
has CD610 and the idle runs do not.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
MATMULS = """
import sys, time, torch
device = torch.device("cuda", int(sys.argv[1]))
a = torch.randn(8192, 8192, device=device, dtype=torch.float16)
b = torch.randn(8192, 8192, device=device, dtype=torch.float16)
(a @ b).sum().item()
print("ready", flush=True)
end = time.time() + float(sys.argv[2])
while time.time() < end:
    for _ in range(20):
        c = a @ b
    torch.cuda.synchronize(device)
"""


def bench(options: argparse.Namespace) -> dict:  # type: ignore[type-arg]
    command = [options.doctor_python, "-m", "cudnn_doctor", "bench", "--json", "--device", str(options.device),
               "--size", options.size, "--workload", options.workload, "--no-cpu"]
    result = subprocess.run(command, capture_output=True, text=True, cwd=str(REPO), timeout=900)
    try:
        return json.loads(result.stdout)
    except ValueError:
        raise SystemExit(f"bench printed no JSON (exit {result.returncode}): {result.stderr[-2000:]}") from None


def describe(label: str, report: dict) -> bool:  # type: ignore[type-arg]
    """Print what the run said; whether CD610 was among its findings."""
    codes = [f["code"] for f in report.get("findings", [])]
    device = (report.get("devices") or [{}])[0]
    clocks = device.get("clocks") or {}
    shared = "CD610" in codes
    print(f"{label}: CD610 {'APPEARED' if shared else 'absent'}; findings {codes or 'none'}")
    print(f"    GPU {device.get('index')} {device.get('name')}: utilisation before the bench "
          f"{clocks.get('utilization_before_percent')}%, max while it ran {clocks.get('utilization_max_percent')}%")
    for process in clocks.get("other_processes") or []:
        when = " and ".join(w for w in ("before", "during") if process.get(w))
        print(f"    other process: pid {process.get('pid')} {process.get('name') or '(name not visible)'}, "
              f"{process.get('used_memory_mib')} MiB, seen {when}")
    if clocks.get("processes_unavailable"):
        print(f"    processes: {clocks['processes_unavailable']}")
    for finding in report.get("findings", []):
        if finding["code"] in ("CD610", "CD609"):
            print(f"    {finding['code']}: {finding['detail']}")
    for result in report.get("results", []):
        reference = result.get("reference") or {}
        verdict = (f"not compared ({reference['not_compared']})" if "not_compared" in reference else
                   f"{reference['ratio']:.2f}x a healthy GPU" if isinstance(reference.get("ratio"), float) else
                   reference.get("unknown", "-"))
        print(f"    {result['workload']} {result.get('dtype')} {result.get('layout')}: {result.get('gpu_ms')} ms; "
              f"vs healthy: {verdict}")
    return shared


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--torch-python", default=sys.executable, help="a Python with torch (the second process)")
    parser.add_argument("--doctor-python", default=sys.executable, help="the Python that runs cudnn-doctor")
    parser.add_argument("--device", type=int, default=0)
    parser.add_argument("--size", default="medium")
    parser.add_argument("--workload", default="conv")
    parser.add_argument("--seconds", type=float, default=600, help="the longest the matmul process may run")
    options = parser.parse_args()

    idle_before = describe("idle GPU", bench(options))
    other = subprocess.Popen([options.torch_python, "-c", MATMULS, str(options.device), str(options.seconds)],
                             stdout=subprocess.PIPE, text=True, start_new_session=True)
    try:
        line = other.stdout.readline() if other.stdout else ""
        if line.strip() != "ready":
            raise SystemExit(f"the matmul process did not start (exit {other.poll()}): {line!r}")
        time.sleep(1.0)  # its matmuls are running now
        print(f"second process: pid {other.pid}, fp16 8192x8192 matmuls back to back on GPU {options.device}")
        shared = describe("beside the matmul process", bench(options))
    finally:
        os.killpg(other.pid, signal.SIGTERM)
        other.wait(timeout=30)
    time.sleep(2.0)  # NVML forgets the process
    idle_after = describe("idle again", bench(options))
    ok = shared and not idle_before and not idle_after
    print(f"RESULT: {'the bench noticed the other process, and only then' if ok else 'NOT as expected'}")
    raise SystemExit(0 if ok else 1)


if __name__ == "__main__":
    main()
