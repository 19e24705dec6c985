"""Issue 45's run-time classes against the real things on the GPU machine: for each setup, torch's first GPU work (a
cuDNN convolution and a matrix product), JAX's (a convolution), plain `cudnn-doctor check`'s errors and warnings
with their evidence, and, where check offered a plan, the frameworks again in a bash that sourced its lines.

  asan        AddressSanitizer preloaded (the machine's libasan.so.N, or libclang_rt.asan): ASAN_OPTIONS unset,
              with other options, with protect_shadow_gap=0 (expected: the frameworks fail on all three. With the gap
              protected cuInit answers 2: check names CD110 seen, its ASAN_OPTIONS line. On all three ASan's dlopen
              interceptor makes cuDNN's own dlopen of its sub-libraries search without libcudnn.so.9's RUNPATH: the
              system's 9.14 libcudnn_graph from the loader's cache, or none; check names CD305 or CD304 seen, its
              line takes the sanitizer out of LD_PRELOAD; the plan's lines cure). Each asan row also says which
              libcudnn_graph a Python that loads the pip cuDNN by full path maps under it ("runpath": the mechanism,
              asked of the loader). Skipped where no libasan is installed.
  numpy       NPY_DISABLE_CPU_FEATURES naming numpy's first baseline feature (expected: torch and JAX fail at import,
              check says CD411 seen), and its last dispatched one (expected: both run, no finding)
  python      PYTHONDEVMODE=1, PYTHONMALLOC=debug, PYTHONPYCACHEPREFIX under a file, PYTHONDONTWRITEBYTECODE=1
              (expected: both run; check at most a warning)
  vendors     HIP_VISIBLE_DEVICES=1, ROCR_VISIBLE_DEVICES=1, ZE_AFFINITY_MASK=0, ONEAPI_DEVICE_SELECTOR=level_zero:0
              (expected: both run on the GPU; no finding)
  cuda-cache  CUDA_CACHE_PATH under a file, and HOME with ~/.nv/ComputeCache a file (expected: both run; a warning
              at most)

  python3 benchmarks/run_time_facts.py --out DIR [--python PYTHON]     (writes DIR/run_time_facts.json)

Each row: "false_error" where both frameworks ran and check said an error, "missed" where one failed and check said
no error nor warning, "cured" where the plan's lines made the failing frameworks run.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TORCH = ("import torch; x=torch.randn(2,8,16,16,device='cuda'); "
         "torch.nn.functional.conv2d(x, torch.randn(8,8,3,3,device='cuda')); (x.flatten(1)@x.flatten(1).T).sum().item();"
         " torch.cuda.synchronize(); print('torch ok')")
JAX = ("import jax, jax.numpy as j; x=j.ones((2,8,16,16)); "
       "jax.lax.conv_general_dilated(x, j.ones((8,8,3,3)), (1,1), 'SAME').block_until_ready(); "
       "assert jax.devices()[0].platform == 'gpu', jax.devices(); print('jax ok', jax.devices())")


def bash(script: str, env: dict[str, str], timeout: float = 240) -> dict[str, object]:
    started = time.monotonic()
    try:
        done = subprocess.run(["bash", "-c", script], capture_output=True, text=True, env=env, timeout=timeout,
                              cwd="/tmp")
    except subprocess.TimeoutExpired:
        return {"rc": None, "timed_out": True}
    tail = (done.stdout + done.stderr).strip().splitlines()
    return {"rc": done.returncode, "tail": [line[:300] for line in tail[-4:]], "stdout": done.stdout,
            "seconds": round(time.monotonic() - started, 2)}


def frameworks(python: str, env: dict[str, str], before: str = "") -> dict[str, object]:
    out = {}
    for name, code in (("torch", TORCH), ("jax", JAX)):
        done = bash(f"{before}{python} -c {shlex.quote(code)}", env)
        out[name] = {"ok": done.get("rc") == 0, "tail": done.get("tail")}
    return out


def doctor(python: str, env: dict[str, str], command: str = "check") -> dict[str, object]:
    done = bash(f"{python} -m cudnn_doctor {command} --json", {**env, "PYTHONPATH": str(ROOT)})
    try:
        return json.loads(str(done.get("stdout") or ""))
    except json.JSONDecodeError:
        return {"error": done.get("tail")}


def scenario(python: str, base: dict[str, str], name: str, changes: dict[str, str]) -> dict[str, object]:
    env = {**base, **changes}
    ran = frameworks(python, env)
    report = doctor(python, env)
    findings = [{k: f.get(k) for k in ("code", "severity", "subject", "evidence", "detail")}
                for f in report.get("findings", []) if f.get("severity") in ("error", "warning")]
    failed = [n for n, r in ran.items() if not r["ok"]]  # type: ignore[index]
    row: dict[str, object] = {"name": name, "set": changes, "frameworks": ran, "check": findings,
                              "false_error": not failed and any(f["severity"] == "error" for f in findings),
                              "missed": bool(failed) and not findings}
    if failed:
        plan = doctor(python, env, "fix")
        lines = [line for action in plan.get("actions", []) if action.get("kind") == "env"
                 for line in action.get("env", {}).get("bash", [])]
        again = frameworks(python, env, before="".join(f"{line}; " for line in lines))
        row.update(plan_lines=lines, after=again, cured=all(again[n]["ok"] for n in failed))  # type: ignore[index]
    return row


RUNPATH_PROBE = ("import ctypes, glob, os, sys\n"
                 "found = [f for p in sys.path for f in glob.glob(os.path.join(p, 'nvidia/cudnn/lib/libcudnn.so.9'))]\n"
                 "lib = ctypes.CDLL(found[0])\nlib.cudnnGetVersion.restype = ctypes.c_size_t\n"
                 "print('version', lib.cudnnGetVersion())\n"
                 "print('graph', sorted({l.split()[-1] for l in open('/proc/self/maps') if 'libcudnn_graph' in l}))\n")


def runpath(python: str, env: dict[str, str]) -> dict[str, object]:
    """Which libcudnn_graph a Python that loads the pip cuDNN's front library by full path (as torch does) maps with
    ENV, and what cudnnGetVersion answers: under ASan's dlopen interceptor, the front library's RUNPATH is not searched."""
    done = bash(f"{python} -c {shlex.quote(RUNPATH_PROBE)}", env, timeout=60)
    return {"rc": done.get("rc"), "tail": done.get("tail")}


def numpy_features(python: str) -> tuple[list[str], list[str]]:
    code = ("try:\n    from numpy._core import _multiarray_umath as m\nexcept ImportError:\n"
            "    from numpy.core import _multiarray_umath as m\nprint(' '.join(m.__cpu_baseline__))\n"
            "print(' '.join(m.__cpu_dispatch__))\n")
    out = subprocess.run([python, "-c", code], capture_output=True, text=True).stdout.splitlines() + ["", ""]
    return out[0].split(), out[1].split()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", required=True)
    parser.add_argument("--python", default=sys.executable, help="the Python with torch and JAX")
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    base = dict(os.environ)
    rows = [scenario(args.python, base, "baseline", {})]
    asan = sorted(glob.glob("/usr/lib/*-linux-gnu/libasan.so.[0-9]*") + glob.glob("/usr/lib/llvm-*/lib/clang/*/lib/*/"
                                                                                 "libclang_rt.asan*x86_64.so"))
    if asan:
        preload = {"LD_PRELOAD": asan[0], "LSAN_OPTIONS": "detect_leaks=0"}
        asan_rows = [("asan", preload), ("asan with options", {**preload, "ASAN_OPTIONS": "halt_on_error=0"}),
                     ("asan gap unprotected", {**preload, "ASAN_OPTIONS": "protect_shadow_gap=0"})]
        for name, changes in asan_rows:
            row = scenario(args.python, base, name, changes)
            row["runpath"] = runpath(args.python, {**base, **changes})
            rows.append(row)
        rows.append({"name": "runpath without asan", "runpath": runpath(args.python, base)})
    else:
        rows.append({"name": "asan", "skipped": "no libasan.so.N or libclang_rt.asan on this machine"})
    baseline, dispatch = numpy_features(args.python)
    if baseline:
        rows.append(scenario(args.python, base, "numpy baseline disabled", {"NPY_DISABLE_CPU_FEATURES": baseline[0]}))
    if dispatch:
        rows.append(scenario(args.python, base, "numpy dispatched disabled", {"NPY_DISABLE_CPU_FEATURES": dispatch[-1]}))
    scratch = Path(tempfile.mkdtemp(prefix="run-time-facts-"))
    (scratch / "file").write_text("not a folder\n")
    for name, value in (("PYTHONDEVMODE", "1"), ("PYTHONMALLOC", "debug"),
                        ("PYTHONPYCACHEPREFIX", str(scratch / "file" / "pycache")), ("PYTHONDONTWRITEBYTECODE", "1")):
        rows.append(scenario(args.python, base, f"python {name}", {name: value}))
    rows.append(scenario(args.python, base, "other vendors", {"HIP_VISIBLE_DEVICES": "1", "ROCR_VISIBLE_DEVICES": "1",
                                                              "ZE_AFFINITY_MASK": "0",
                                                              "ONEAPI_DEVICE_SELECTOR": "level_zero:0"}))
    rows.append(scenario(args.python, base, "cuda cache under a file", {"CUDA_CACHE_PATH": str(scratch / "file" / "c")}))
    home = scratch / "home"
    (home / ".nv").mkdir(parents=True)
    (home / ".nv" / "ComputeCache").write_text("a file where CUDA's JIT cache folder goes\n")
    rows.append(scenario(args.python, base, "cuda cache default a file", {"HOME": str(home)}))
    summary = {"rows": len(rows), "false_errors": [r["name"] for r in rows if r.get("false_error")],
               "missed": [r["name"] for r in rows if r.get("missed")],
               "not_cured": [r["name"] for r in rows if r.get("cured") is False]}
    (out / "run_time_facts.json").write_text(json.dumps({"summary": summary, "rows": rows}, indent=1))
    print(json.dumps(summary, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
