"""Facts issue 45's rules stand on, asked of the real things on the GPU machine (not of the doctor).

Each fact bends one shell's environment only (a copy in /tmp, a variable) and records what the real program said:

  nvml-stub      the CUDA toolkit's NVML link stub first on LD_LIBRARY_PATH: what nvmlInit, nvidia-smi, torch and
                 JAX answer there
  xla-flags      XLA_FLAGS with a flag the installed jaxlib does not define, and with a defined flag of a bad value:
                 JAX's words; which of jaxlib's files name its flags
  ptx-jit        CUDA_FORCE_PTX_JIT=1 and CUDA_DISABLE_PTX_JIT=1: torch's and JAX's first GPU work
  torch-deps     what torch/lib/libtorch_global_deps.so needs (NEEDED, RUNPATH)
  load-child     the doctor's loading children on this machine: what each framework mapped, and check's time

  python3 benchmarks/evidence_facts.py --out DIR      (writes DIR/facts.json)
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TORCH = ("import torch; x=torch.randn(2,8,16,16,device='cuda'); "
         "torch.nn.functional.conv2d(x, torch.randn(8,8,3,3,device='cuda')); torch.cuda.synchronize(); print('torch ok')")
JAX = ("import jax, jax.numpy as j; x=j.ones((2,8,16,16)); "
       "jax.lax.conv_general_dilated(x, j.ones((8,8,3,3)), (1,1), 'SAME').block_until_ready(); "
       "print('jax ok', jax.devices())")


def run(argv: list[str], env: dict[str, str] | None = None, timeout: float = 120, lines: int = 6) -> dict[str, object]:
    started = time.monotonic()
    try:
        done = subprocess.run(argv, capture_output=True, text=True, env={**os.environ, **(env or {})}, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"rc": None, "timed_out": True}
    tail = (done.stdout + done.stderr).strip().splitlines()
    return {"rc": done.returncode, "tail": tail[-lines:], "seconds": round(time.monotonic() - started, 2)}


def nvml_stub() -> dict[str, object]:
    stubs = sorted(glob.glob("/usr/local/cuda*/lib64/stubs/libnvidia-ml.so") +
                   glob.glob("/usr/local/cuda*/targets/*/lib/stubs/libnvidia-ml.so"))
    if not stubs:
        return {"skipped": "no NVML stub in the toolkit"}
    folder = Path("/tmp/evidence-facts/nvml-stub")
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(stubs[0], folder / "libnvidia-ml.so.1")
    env = {"LD_LIBRARY_PATH": str(folder)}
    return {"stub": stubs[0],
            "pynvml": run([sys.executable, "-c", "import pynvml; pynvml.nvmlInit(); print('init ok')"], env),
            "nvidia-smi": run(["nvidia-smi", "-L"], env),
            "torch": run([sys.executable, "-c", TORCH], env),
            "jax": run([sys.executable, "-c", JAX], env)}


def xla_flags() -> dict[str, object]:
    import importlib.util

    spec = importlib.util.find_spec("jaxlib")
    files = []
    if spec and spec.submodule_search_locations:
        roots = list(spec.submodule_search_locations) + glob.glob(os.path.join(
            os.path.dirname(list(spec.submodule_search_locations)[0]), "jax_plugins", "*"))
        for root in roots:
            for path in glob.glob(os.path.join(root, "**", "*.so*"), recursive=True):
                hit = subprocess.run(["grep", "-c", "xla_gpu_autotune_level", path], capture_output=True, text=True)
                if hit.stdout.strip() not in ("", "0"):
                    files.append(path)
    return {"files_naming_flags": files,
            "unknown": run([sys.executable, "-c", JAX], {"XLA_FLAGS": "--xla_gpu_no_such_flag_at_all=true"}),
            "bad_value": run([sys.executable, "-c", JAX], {"XLA_FLAGS": "--xla_gpu_autotune_level=abc"}),
            "valid": run([sys.executable, "-c", JAX], {"XLA_FLAGS": "--xla_gpu_autotune_level=0"})}


def ptx_jit() -> dict[str, object]:
    out = {}
    for variable in ("CUDA_FORCE_PTX_JIT", "CUDA_DISABLE_PTX_JIT"):
        out[variable] = {"torch": run([sys.executable, "-c", TORCH], {variable: "1"}),
                         "jax": run([sys.executable, "-c", JAX], {variable: "1"})}
    return out


def torch_deps() -> dict[str, object]:
    found = glob.glob(os.path.join(sys.prefix, "lib", "python3*", "*-packages", "torch", "lib",
                                   "libtorch_global_deps.so"))
    found += glob.glob("/usr/local/lib/python3*/*-packages/torch/lib/libtorch_global_deps.so")
    if not found:
        return {"skipped": "no torch"}
    return {"file": found[0], "dynamic": run(["readelf", "-d", found[0]])}


TORCH_MAPS = ("import torch, os; v = torch.backends.cudnn.version(); "
              "m = sorted({l.split()[-1] for l in open('/proc/self/maps') if 'libcudnn' in l}); "
              "x = torch.randn(2,8,16,16,device='cuda'); torch.nn.functional.conv2d(x, torch.randn(8,8,3,3,device='cuda')); "
              "torch.cuda.synchronize(); print('torch', v, m)")


def torch_loading() -> dict[str, object]:
    """Which libcudnn.so.9 real torch maps with another release first on LD_LIBRARY_PATH, beside what the doctor's
    loading child (torch's own _preload_cuda_lib for cuDNN) says it maps."""
    import importlib.util

    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.origin:
        return {"skipped": "no torch"}
    torch_dir = os.path.dirname(spec.origin)
    site = os.path.dirname(torch_dir)
    system = sorted(glob.glob("/usr/lib/x86_64-linux-gnu/libcudnn.so.9*") + glob.glob("/lib/x86_64-linux-gnu/libcudnn.so.9*"))
    own = os.path.join(site, "nvidia", "cudnn", "lib")
    mixed = Path("/tmp/evidence-facts/mixed")  # the system's front library beside torch's own sub-libraries
    mixed.mkdir(parents=True, exist_ok=True)
    for name in os.listdir(own):
        target = mixed / name
        if not target.exists():
            target.symlink_to(os.path.join(own, name))
    if system:
        (mixed / "libcudnn.so.9").unlink()
        (mixed / "libcudnn.so.9").symlink_to(os.path.realpath(system[0]))
    child = ROOT / "cudnn_doctor" / "_job_child.py"
    checks = "cudnnGraphVersionCheck,cudnnOpsVersionCheck,cudnnCnnVersionCheck,cudnnAdvVersionCheck"
    later = "libcudnn_engines_precompiled.so.9,libcudnn_engines_runtime_compiled.so.9,libcudnn_heuristic.so.9"
    out: dict[str, object] = {"system": system, "needed": {}}
    for lib in ("libtorch_global_deps.so", "libtorch_cuda.so"):
        dyn = subprocess.run(["readelf", "-d", os.path.join(torch_dir, "lib", lib)], capture_output=True, text=True)
        out["needed"][lib] = [line.strip() for line in dyn.stdout.splitlines() if "NEEDED" in line or "PATH" in line]
    for name, env in (("plain", {}), ("system-first", {"LD_LIBRARY_PATH": os.path.dirname(system[0])} if system else {}),
                      ("system-front-beside-own-subs", {"LD_LIBRARY_PATH": str(mixed)})):
        doctor = {}
        for recipe, call, functions, args in (
                ("cheap", "_preload_cuda_lib", "_get_cuda_dep_paths,_preload_cuda_lib", "['cudnn', 'libcudnn.so.*[0-9]']"),
                ("full", "_load_global_deps", "_get_cuda_dep_paths,_preload_cuda_lib,_preload_cuda_deps,_load_global_deps",
                 "[]")):
            done = run([sys.executable, "-I", "-S", str(child), "_load_jobs", "torch", site, "torch/__init__.py", call, functions,
                        "libcudnn.so.9", checks, later, args], env, lines=80)
            doctor[recipe] = {"seconds": done.get("seconds"), "rc": done.get("rc"),
                              "lines": [line for line in done.get("tail", []) if "front" in line or "check\t" in line
                                        or "version" in line or "recipe" in line][-8:]}
        out[name] = {"torch": run([sys.executable, "-c", TORCH_MAPS], env), "doctor": doctor}
    return out


def load_child() -> dict[str, object]:
    env = {"PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    runs = []
    for _ in range(3):
        runs.append(run([sys.executable, "-m", "cudnn_doctor", "check", "--json"], env, timeout=60))
    report = subprocess.run([sys.executable, "-m", "cudnn_doctor", "check", "--json"], capture_output=True, text=True,
                            env={**os.environ, **env}, timeout=60)
    try:
        data = json.loads(report.stdout)
        loads = (data.get("process") or {}).get("loads")
        findings = [(f["code"], f["severity"], f.get("evidence")) for f in data.get("findings", [])]
    except ValueError:
        loads, findings = report.stdout[-2000:], []
    smi = [run(["nvidia-smi", "-q"]) for _ in range(3)]
    return {"check_seconds": [r.get("seconds") for r in runs], "nvidia_smi_q_seconds": [r.get("seconds") for r in smi],
            "loads": loads, "findings": findings}


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("--only", help="comma-separated facts to gather (default: all)")
    args = parser.parse_args()
    facts = {}
    only = set(args.only.split(",")) if args.only else None
    for name, gather in (("torch-deps", torch_deps), ("load-child", load_child), ("nvml-stub", nvml_stub),
                         ("xla-flags", xla_flags), ("ptx-jit", ptx_jit), ("torch-loading", torch_loading)):
        if only is not None and name not in only:
            continue
        try:
            facts[name] = gather()
        except Exception as error:  # a fact that could not be gathered says why
            facts[name] = {"error": f"{type(error).__name__}: {error}"}
    Path(args.out).mkdir(parents=True, exist_ok=True)
    (Path(args.out) / "facts.json").write_text(json.dumps(facts, indent=1))
    print(json.dumps({k: (v if k != "load-child" else {**v, "loads": "(in facts.json)"}) for k, v in facts.items()},
                     indent=1)[:6000])
    return 0


if __name__ == "__main__":
    sys.exit(main())
