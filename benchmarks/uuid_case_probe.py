"""What the real CUDA driver and the frameworks do with CUDA_VISIBLE_DEVICES (and JAX's GPU-client variables) in the
forms issue 45's round eleven drew on, asked of the real things on the GPU machine (not of the doctor): each form in
a fresh child, cuInit and cuDeviceGetCount through ctypes, then torch's device count, availability and first
CUDA work, and JAX's device list; then what `cudnn-doctor check --json` and `check --deep --json` say of it (their
findings' codes, severities and evidence).

Forms: GPU 0's UUID as nvidia-smi prints it, in upper case, with 'gpu-' in lower case, a short prefix in upper case,
with spaces around, a MIG- form of a GPU UUID; JAX_CUDA_VISIBLE_DEVICES (a flag no variable sets) in bad forms beside
CUDA_VISIBLE_DEVICES; XLA_PYTHON_CLIENT_COLLECTIVE_MEM_SIZE_MB=1GB, XLA_PYTHON_CLIENT_PREALLOCATE=no,
JAX_SKIP_CUDA_CONSTRAINTS_CHECK=0.

  python3 benchmarks/uuid_case_probe.py --out DIR      (writes DIR/uuid_case.json)
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CUINIT = ("import ctypes; c=ctypes.CDLL('libcuda.so.1'); r=c.cuInit(0); n=ctypes.c_int(-1); "
          "print('cuInit', r, 'count', c.cuDeviceGetCount(ctypes.byref(n)) if r == 0 else None, n.value)")
# torch's own count (NVML-based), cuInit's availability, and its first CUDA work: where the two counts part, the work
# is what fails (torch 2.11: 'min() iterable argument is empty' in _lazy_init)
TORCH = ("import torch; print('torch', torch.cuda.device_count(), 'available', torch.cuda.is_available()); "
         "print('work', torch.ones(2, device='cuda').sum().item())")
JAX = "import jax; print('jax', jax.devices())"


def run(argv: list[str], env: dict[str, str], timeout: float = 180) -> dict[str, object]:
    whole = {**os.environ, **env}
    started = time.monotonic()
    try:
        done = subprocess.run(argv, capture_output=True, text=True, env=whole, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"timed_out": timeout}
    return {"rc": done.returncode, "out": done.stdout.strip()[-400:], "err": done.stderr.strip()[-600:],
            "s": round(time.monotonic() - started, 2)}


def findings(python: str, env: dict[str, str], *more: str) -> object:
    """check --json's findings with ENV (and MORE: --deep): (code, severity, evidence, subject, detail), or what went
    wrong."""
    try:
        done = subprocess.run([python, "-m", "cudnn_doctor", "check", "--json", *more], capture_output=True, text=True,
                              timeout=180, env={**os.environ, **env, "PYTHONPATH": str(ROOT)})
        report = json.loads(done.stdout)
    except (ValueError, subprocess.TimeoutExpired) as error:
        return f"check failed: {error}"
    return [(f["code"], f["severity"], f["evidence"], f["subject"], f["detail"][:300])
            for f in report.get("findings", [])]


def first_uuid() -> str:
    done = subprocess.run(["nvidia-smi", "--query-gpu=uuid", "--format=csv,noheader"], capture_output=True, text=True)
    return done.stdout.split()[0] if done.returncode == 0 and done.stdout.split() else ""


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("--python", default=sys.executable, help="the Python that has torch and jax")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    uuid = first_uuid()
    forms: dict[str, dict[str, str]] = {
        "uuid-as-printed": {"CUDA_VISIBLE_DEVICES": uuid},
        "uuid-upper": {"CUDA_VISIBLE_DEVICES": uuid.upper()},
        "uuid-lower-prefix": {"CUDA_VISIBLE_DEVICES": "gpu-" + uuid[4:]},
        "uuid-short-upper": {"CUDA_VISIBLE_DEVICES": uuid[:12].upper()},
        "uuid-spaces": {"CUDA_VISIBLE_DEVICES": f" {uuid} "},
        "uuid-as-mig": {"CUDA_VISIBLE_DEVICES": "MIG-" + uuid},
        "uuid-upper-then-index": {"CUDA_VISIBLE_DEVICES": uuid.upper() + ",0"},
        "jax-cvd-uuid": {"JAX_CUDA_VISIBLE_DEVICES": uuid},
        "jax-cvd-spaces": {"JAX_CUDA_VISIBLE_DEVICES": "0 , 1", "CUDA_VISIBLE_DEVICES": "0"},
        "jax-cvd-minus-one": {"JAX_CUDA_VISIBLE_DEVICES": "-1"},
        "collective-1GB": {"XLA_PYTHON_CLIENT_COLLECTIVE_MEM_SIZE_MB": "1GB"},
        "preallocate-no": {"XLA_PYTHON_CLIENT_PREALLOCATE": "no"},
        "skip-check-0": {"JAX_SKIP_CUDA_CONSTRAINTS_CHECK": "0"},
    }
    results: dict[str, object] = {"uuid": uuid}
    for name, env in forms.items():
        results[name] = {
            "env": env,
            "cuinit": run([args.python, "-c", CUINIT], env),
            "torch": run([args.python, "-c", TORCH], env),
            "jax": run([args.python, "-c", JAX], env),
            "check": findings(args.python, env),
            "check_deep": findings(args.python, env, "--deep"),
        }
        print(name, json.dumps(results[name])[:300], flush=True)
    (args.out / "uuid_case.json").write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
