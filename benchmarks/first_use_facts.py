"""Facts for what fails only at a framework's first compilation or first library use (issue 45, p17), asked of the
real torch and JAX on the GPU machine, beside what plain `check` says of the same environment (its first_use view
and its CD206/CD208/CD203 findings), so that the lead can prove or refute compat/first_use.toml's rows and turn a
warning into a rule where the framework fails as the data says.

Each scenario changes only the environment (the installed wheels stay as they are), in folders of its own under the
output folder:

  baseline             nothing changed
  old-ptxas-on-path    a ptxas first on PATH that answers V11.8.89 and fails every compilation, saying so (with the
                       nvcc wheel installed, XLA should take the wheel's first: JAX works, and check says nothing)
  ptxas-not-exec       a ptxas first on PATH without the execute bit (passed over by XLA)
  cuda-root-partial    CUDA_ROOT naming a folder whose nvvm/libdevice holds no libdevice.10.bc (XLA takes it first:
                       the exp kernel should fail 'libdevice not found')
  flags-data-dir-empty XLA_FLAGS=--xla_gpu_cuda_data_dir=<empty folder> (JAX's own CUDA path outranks it: nothing)
  parallel-no-nvlink   XLA_FLAGS asking for parallel compilation (fails where no nvlink is found)
  foreign-builtins     an unrelated library saved as the NVRTC wheel's libnvrtc-builtins.so.X.Y first on
                       LD_LIBRARY_PATH (torch preloads its own: unhit; a program by name: 'is corrupted')
  nvrtc-pair           the wheel's libnvrtc.so.N copied alone into a folder first on LD_LIBRARY_PATH (a program that
                       opens it by name finds no builtins)

For each: torch (a convolution, then a jiterator kernel that NVRTC compiles), jax (a convolution, then a kernel that
calls exp: ptxas and libdevice), nvrtc (a program that opens libnvrtc.so.N by name and compiles a kernel), and check.

  python3 benchmarks/first_use_facts.py --out DIR [--python PYTHON] [--budget-s 110] [--jobs 4]

Writes DIR/facts.json and DIR/summary.md (one line a scenario). Not run on a GPU in the session that wrote it.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import glob
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

TORCH = ("import torch; c = torch.nn.functional.conv2d(torch.randn(2, 8, 16, 16, device='cuda'), "
         "torch.randn(8, 8, 3, 3, device='cuda')); torch.cuda.synchronize(); print('conv ok'); "
         "f = torch.cuda.jiterator._create_jit_fn('template <typename T> T twice(T x) { return x + x; }'); "
         "f(torch.ones(4, device='cuda')); torch.cuda.synchronize(); print('torch ok', torch.version.cuda)")
JAX = ("import jax, jax.numpy as j; d = jax.devices(); assert d[0].platform == 'gpu', d; "
       "y = jax.lax.conv_general_dilated(j.ones((2, 8, 16, 16)), j.ones((8, 8, 3, 3)), (1, 1), 'SAME'); "
       "y.block_until_ready(); print('conv ok'); j.exp(y * 0.0).block_until_ready(); print('jax ok', d)")


def run(argv: list[str], env: dict[str, str], timeout: float, lines: int = 8) -> dict[str, object]:
    started = time.monotonic()
    try:
        done = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=timeout, cwd="/tmp")
    except subprocess.TimeoutExpired:
        return {"rc": None, "timed_out": True, "seconds": round(time.monotonic() - started, 2)}
    out = (done.stdout + done.stderr).strip().splitlines()
    return {"rc": done.returncode, "ok": done.returncode == 0, "tail": out[-lines:],
            "seconds": round(time.monotonic() - started, 2)}


def check(python: str, env: dict[str, str], timeout: float) -> dict[str, object]:
    started = time.monotonic()
    try:
        done = subprocess.run([python, "-m", "cudnn_doctor", "check", "--json"], capture_output=True, text=True,
                              env={**env, "PYTHONPATH": str(ROOT)}, timeout=timeout, cwd="/tmp")
        report = json.loads(done.stdout)
    except (subprocess.TimeoutExpired, ValueError) as error:
        return {"error": str(error)[:300]}
    said = [{k: f.get(k) for k in ("code", "severity", "evidence", "subject")} | {"kind": (f.get("values") or {})
            .get("kind")} for f in report.get("findings", []) if f["code"] in ("CD206", "CD208")
            or (f["code"] == "CD203" and "builtins" in f.get("detail", ""))]
    return {"exit_code": done.returncode, "seconds": round(time.monotonic() - started, 2), "findings": said,
            "first_use": report.get("first_use")}


def site_of(python: str) -> str:
    done = subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          capture_output=True, text=True, timeout=60)
    return done.stdout.strip()


def scenarios(out: Path, site: str) -> dict[str, dict[str, str]]:
    """Each scenario's environment changes, its files made under OUT."""
    made: dict[str, dict[str, str]] = {"baseline": {}}
    old = out / "old-ptxas" / "bin"
    old.mkdir(parents=True, exist_ok=True)
    (old / "ptxas").write_text("#!/bin/sh\ncase \"$1\" in --version) echo 'Cuda compilation tools, release 11.8, "
                               "V11.8.89'; exit 0;; esac\necho 'old-ptxas-on-path was run to compile' >&2\nexit 1\n")
    (old / "ptxas").chmod(0o755)
    made["old-ptxas-on-path"] = {"PATH": f"{old}:{os.environ.get('PATH', '')}"}
    locked = out / "locked-ptxas" / "bin"
    locked.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(old / "ptxas", locked / "ptxas")
    (locked / "ptxas").chmod(0o644)
    made["ptxas-not-exec"] = {"PATH": f"{locked}:{os.environ.get('PATH', '')}"}
    partial = out / "cuda-partial"
    (partial / "nvvm" / "libdevice").mkdir(parents=True, exist_ok=True)
    made["cuda-root-partial"] = {"CUDA_ROOT": str(partial)}
    empty = out / "cuda-empty"
    empty.mkdir(exist_ok=True)
    made["flags-data-dir-empty"] = {"XLA_FLAGS": f"--xla_gpu_cuda_data_dir={empty}"}
    made["parallel-no-nvlink"] = {"XLA_FLAGS": "--xla_gpu_enable_llvm_module_compilation_parallelism=true"}
    nvrtc = sorted(glob.glob(os.path.join(site, "nvidia", "*", "lib", "libnvrtc.so.[0-9]*")))
    builtins = sorted(glob.glob(os.path.join(site, "nvidia", "*", "lib", "libnvrtc-builtins.so.[0-9]*.[0-9]*")))
    libz = next(iter(sorted(glob.glob("/usr/lib/*/libz.so.1") + glob.glob("/lib/*/libz.so.1"))), None)
    if builtins and libz:
        foreign = out / "foreign-builtins"
        foreign.mkdir(exist_ok=True)
        shutil.copyfile(libz, foreign / os.path.basename(builtins[0]))
        made["foreign-builtins"] = {"LD_LIBRARY_PATH": f"{foreign}:{os.environ.get('LD_LIBRARY_PATH', '')}"}
    if nvrtc:
        pair = out / "nvrtc-pair"
        pair.mkdir(exist_ok=True)
        shutil.copyfile(nvrtc[0], pair / os.path.basename(nvrtc[0]))
        made["nvrtc-pair"] = {"LD_LIBRARY_PATH": f"{pair}:{os.environ.get('LD_LIBRARY_PATH', '')}"}
    return made


def one(name: str, changes: dict[str, str], python: str, nvrtc_soname: str | None) -> dict[str, object]:
    from cudnn_doctor.probes.first_use import NVRTC_CHILD

    env = {**os.environ, "XLA_PYTHON_CLIENT_PREALLOCATE": "false", **changes}
    jobs = {"torch": [python, "-c", TORCH], "jax": [python, "-c", JAX]}
    if nvrtc_soname:  # a program that opens NVRTC by its soname, as CuPy or a C++ program does
        # the doctor's child answers on its own channel (_child_stdio's answer_fd): here stdout, and the exit status
        # says whether NVRTC compiled
        program = '_stdio = {"answer_fd": lambda: 1}\n' + NVRTC_CHILD + '\nsys.exit(0 if words == "NVRTC_SUCCESS" else 1)\n'
        jobs["nvrtc"] = [python, "-I", "-c", program, nvrtc_soname]
    with concurrent.futures.ThreadPoolExecutor(len(jobs) + 1) as pool:
        running = {key: pool.submit(run, argv, env, 90) for key, argv in jobs.items()}
        running["check"] = pool.submit(check, python, env, 90)
        return {"scenario": name, "changes": changes, **{key: job.result() for key, job in running.items()}}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("--python", default=sys.executable)
    parser.add_argument("--budget-s", type=float, default=110.0)
    parser.add_argument("--jobs", type=int, default=4)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    site = site_of(args.python)
    nvrtc = sorted(glob.glob(os.path.join(site, "nvidia", "*", "lib", "libnvrtc.so.[0-9]*")))
    soname = os.path.basename(nvrtc[0]) if nvrtc else None
    made = scenarios(args.out, site)
    ends = time.monotonic() + args.budget_s
    facts: list[dict[str, object]] = []
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        futures = {}
        for name, changes in made.items():
            if time.monotonic() > ends:
                facts.append({"scenario": name, "skipped": "budget"})
                continue
            futures[name] = pool.submit(one, name, changes, args.python, soname)
        facts += [future.result() for future in futures.values()]
    (args.out / "facts.json").write_text(json.dumps(facts, indent=1) + "\n")
    lines = []
    for fact in facts:
        if fact.get("skipped"):
            lines.append(f"- {fact['scenario']}: skipped ({fact['skipped']})")
            continue
        parts = [f"{key} {'ok' if (fact.get(key) or {}).get('ok') else 'FAILED'}" for key in ("torch", "jax", "nvrtc")
                 if key in fact]
        said = ", ".join(f"{f['code']} {f['severity']} {f.get('kind')}" for f in fact["check"].get("findings", []))
        lines.append(f"- {fact['scenario']}: {'; '.join(parts)}; check: {said or 'nothing'}")
    (args.out / "summary.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
