"""Where the NVML child's time goes on a real GPU: pynvml's import, nvmlInit, and each pynvml function the child
calls (calls, total ms), as `check` runs it, and each GPU's CPU list from sysfs beside NVML's (the child script's probe_nvml, isolated: -I -S).

    python3 benchmarks/nvml_calls.py [--runs 5]

Prints one JSON object: the median run's phases and its functions by total time."""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

CHILD = r"""
import json, sys, time
T0 = time.perf_counter()
sys.path.insert(0, sys.argv[2])
sys.path.insert(0, sys.argv[1])
import importlib.util
spec = importlib.util.spec_from_file_location("probe_jobs", sys.argv[3])
child = importlib.util.module_from_spec(spec); spec.loader.exec_module(child)
t_child = time.perf_counter()
pynvml = child._import_pynvml()
t_import = time.perf_counter()
calls = {}
for name in dir(pynvml):
    function = getattr(pynvml, name)
    if name.startswith("nvml") and callable(function):
        def timed(*args, _f=function, _n=name, **kw):
            start = time.perf_counter()
            try:
                return _f(*args, **kw)
            finally:
                entry = calls.setdefault(_n, [0, 0.0]); entry[0] += 1; entry[1] += time.perf_counter() - start
        setattr(pynvml, name, timed)
child._import_pynvml = lambda: pynvml
answer = child.probe_nvml()
t_end = time.perf_counter()
same = []  # sysfs's CPU list beside NVML's own answer, per GPU: the child reads the first where it can
if answer.get("ok"):
    pynvml.nvmlInit()
for gpu in answer.get("gpus", []) if answer.get("ok") else ():
    handle = pynvml.nvmlDeviceGetHandleByIndex(gpu["index"])
    same.append({"bus": gpu.get("pci_bus_id"), "sysfs": child._sysfs_cpu_list(gpu.get("pci_bus_id") or ""),
                 "nvml": child._cpu_list(pynvml.nvmlDeviceGetCpuAffinity(handle, 16))})
print(json.dumps({"phases_ms": {"child script": round((t_child - T0) * 1000, 1),
                                "import pynvml": round((t_import - t_child) * 1000, 1),
                                "probe_nvml": round((t_end - t_import) * 1000, 1)},
                  "gpus": len(answer.get("gpus", [])), "ok": answer.get("ok"), "cpu_affinity": same,
                  "calls": sorted(([n, c, round(s * 1000, 2)] for n, (c, s) in calls.items()), key=lambda x: -x[2])}))
"""


def main() -> None:
    from cudnn_doctor.probes.library_jobs import _module_folder

    runs = int(sys.argv[sys.argv.index("--runs") + 1]) if "--runs" in sys.argv else 5
    script = str(REPO / "cudnn_doctor" / "_probe_jobs.py")
    folder = _module_folder("pynvml") or ""
    found = []
    for _ in range(runs):
        start = __import__("time").perf_counter()
        done = subprocess.run([sys.executable, "-I", "-S", "-c", CHILD, str(REPO), folder, script],
                              capture_output=True, text=True, timeout=60)
        wall = __import__("time").perf_counter() - start
        if done.returncode:
            sys.exit(done.stderr[-2000:])
        answer = json.loads(done.stdout)
        answer["wall_ms"] = round(wall * 1000, 1)
        found.append(answer)
    found.sort(key=lambda a: a["wall_ms"])
    median = found[len(found) // 2]
    median["wall_ms_all"] = [a["wall_ms"] for a in found]
    median["wall_ms_median"] = statistics.median(a["wall_ms"] for a in found)
    print(json.dumps(median, indent=1))


if __name__ == "__main__":
    main()
