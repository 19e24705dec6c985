"""How many descriptors real PyTorch, JAX and CUDA itself need free at a program's start, by the mechanism round ten
found (issue 45): a shell that holds descriptors its parent left open, under an ordinary soft open-files limit.

For each judge (torch: a cuDNN convolution and LSTM; jax: a convolution; cuda: cuInit through ctypes, as any CUDA
program starts), the smallest number of FREE descriptors at which it works is found by bisection: each trial is a
fresh bash under `ulimit -S -n LIMIT` holding descriptors 3..LIMIT-FREE-1 on /dev/null (inherited by what it execs),
then the judge. Each answer is monotonic in the count (more free never hurts), so each floor is exact. The floor is
then checked the other way, by the limit alone (no descriptor held, `ulimit -S -n FLOOR+3`: the three standard
streams), to show the count is what matters. What each judge holds open once its work is done is read from its own
/proc/self/fd.

Then the doctor, in the same shells: at one free fewer than each framework's floor (it fails there), plain `check`,
`check --deep` and `fix` (its env lines sourced in that bash before the judge runs again: cured or not); and the same
descriptors under a roomy limit (min(65536, hard)), where everything must work and check stay silent of CD116.

  python3 benchmarks/descriptor_floor.py --out DIR [--limit 1024] [--no-doctor] [--budget-s 540]
      (writes DIR/descriptor_floor.json; one trial at a time, JAX not preallocating; within --budget-s)

compat/process_env.toml's RLIMIT_NOFILE row (jax_free_minimum, torch_free_minimum, seen_failing_free) takes its
figures from here.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
from gpu_scenarios import JAX_JUDGE, TORCH_JUDGE  # noqa: E402

# what the judge holds once its work is done (the listing needs one descriptor more: where none is left, -1, and the
# judge's answer stands)
HELD_AFTER = ("\nimport os as _o\ntry:\n    print('held after:', len(_o.listdir('/proc/self/fd')) - 1)\n"
              "except OSError:\n    print('held after: -1')\n")
CUDA_JUDGE = r"""
import ctypes
cuda = ctypes.CDLL("libcuda.so.1")
status = cuda.cuInit(0)
count = ctypes.c_int(0)
assert status == 0, "cuInit answered %d" % status
cuda.cuDeviceGetCount(ctypes.byref(count))
print("cuda ok:", count.value, "GPUs")
"""
JUDGES = {"torch": TORCH_JUDGE, "jax": JAX_JUDGE, "cuda": CUDA_JUDGE}
START = ("import sys; sys.path.insert(0, {root!r}); sys.argv[0] = 'cudnn-doctor'; "
         "from cudnn_doctor.entry import main; main()")


class Budget:
    def __init__(self, seconds: float) -> None:
        self.ends = time.monotonic() + seconds

    def left(self) -> float:
        return self.ends - time.monotonic()


def holding(limit: int, free: int) -> str:
    """A bash line: soft limit LIMIT, and descriptors 3.. held so that FREE remain below it (0, 1, 2 open)."""
    last = limit - free - 1
    opened = f'; for i in $(seq 3 {last}); do eval "exec $i</dev/null"; done' if last >= 3 else ""
    return f"ulimit -S -n {limit}{opened}"


def bash(line: str, env: dict[str, str], timeout: float) -> tuple[int, str]:
    try:
        done = subprocess.run(["bash", "-c", line], env=env, capture_output=True, text=True, timeout=timeout,
                              stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        return 124, "timed out"
    return done.returncode, done.stdout + done.stderr


def judge(name: str, before: str, env: dict[str, str]) -> dict[str, object]:
    started = time.monotonic()
    code, out = bash(f"{before}; exec {shlex.quote(sys.executable)} -c {shlex.quote(JUDGES[name] + HELD_AFTER)}",
                     env, timeout=120)
    lines = [line for line in out.splitlines() if line.strip()]
    ok = code == 0 and any(line.startswith(f"{name} ok") for line in lines)
    held = next((int(line.split()[-1]) for line in lines if line.startswith("held after:")), None)
    said = next((line for line in reversed(lines) if "Error" in line or "error" in line), lines[-1] if lines else "")
    return {"ok": ok, "said": (lines[-2] if ok and len(lines) > 1 else said)[:240], "held_after": held,
            "seconds": round(time.monotonic() - started, 1)}


def floor(name: str, limit: int, env: dict[str, str], budget: Budget) -> dict[str, object]:
    """The fewest free descriptors (1..limit-4) with which judge NAME works, by bisection."""
    tried: dict[int, dict[str, object]] = {}
    high = min(256, limit - 4)
    tried[high] = judge(name, holding(limit, high), env)
    if not tried[high]["ok"]:
        return {"floor": None, "why": f"fails with {high} free too", "tried": tried}
    low = 1
    while low < high and budget.left() > 30:
        middle = (low + high) // 2
        tried[middle] = judge(name, holding(limit, middle), env)
        if tried[middle]["ok"]:
            high = middle
        else:
            low = middle + 1
    found = high if low >= high else None
    out: dict[str, object] = {"floor": found, "tried": {str(k): v for k, v in sorted(tried.items())}}
    if found is not None and budget.left() > 30:  # the same count by the limit alone: the three streams open
        out["by_limit_alone"] = {str(found + 3): judge(name, f"ulimit -S -n {found + 3}", env),
                                 str(found + 2): judge(name, f"ulimit -S -n {found + 2}", env)}
    return out


def doctor_case(before: str, env: dict[str, str], judges: list[str]) -> dict[str, object]:
    """Plain check, --deep and fix in a bash that ran BEFORE; fix's env lines sourced, the judges again."""
    doctor = [sys.executable, "-c", START.format(root=str(ROOT))]
    out: dict[str, object] = {"before": before[:120]}
    for label, args in (("check", ["check", "--json"]), ("deep", ["check", "--deep", "--json"]),
                        ("fix", ["fix", "--json"])):
        started = time.monotonic()
        code, text = bash(f"{before}; exec {shlex.join(doctor + args)}", env, timeout=240)
        report = _last_json(text)
        said: dict[str, object] = {"exit": code, "seconds": round(time.monotonic() - started, 1)}
        if report is None:
            said["no_json"] = text[-300:]
        elif label == "fix":
            actions = report.get("actions", [])
            said["lines"] = [line for a in actions if a.get("kind") == "env" for line in a.get("env", {}).get("bash", [])]
            said["verified"] = [str(a.get("verified", ""))[:160] for a in actions]
        else:
            said["findings"] = [{"code": f.get("code"), "severity": f.get("severity"), "evidence": f.get("evidence"),
                                 "subject": f.get("subject"), "detail": str(f.get("detail", ""))[:300]}
                                for f in report.get("findings", []) if f.get("severity") in ("error", "warning")]
            said["shell"] = (report.get("process") or {}).get("shell")
        out[label] = said
    lines = out.get("fix", {}).get("lines") if isinstance(out.get("fix"), dict) else None
    if lines:
        out["after_fix"] = {name: judge(name, f"{before}; {'; '.join(lines)}", env) for name in judges}
    return out


def _last_json(text: str) -> dict[str, object] | None:
    for start in [i for i, c in enumerate(text) if c == "{" and (i == 0 or text[i - 1] == "\n")]:
        try:
            value = json.loads(text[start:])
        except ValueError:
            continue
        if isinstance(value, dict):
            return value
    return None


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("--limit", type=int, default=1024)
    parser.add_argument("--no-doctor", action="store_true")
    parser.add_argument("--budget-s", type=float, default=540.0)
    options = parser.parse_args()
    budget = Budget(options.budget_s)
    env = dict(os.environ, XLA_PYTHON_CLIENT_PREALLOCATE="false")
    hard = int(subprocess.run(["bash", "-c", "ulimit -H -n"], capture_output=True, text=True).stdout.split()[0]
               .replace("unlimited", str(1 << 20)))
    try:
        gpus = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=60).stdout.splitlines()
    except (OSError, subprocess.TimeoutExpired):
        gpus = []
    result: dict[str, object] = {"limit": options.limit, "hard_nofile": hard, "uid": os.getuid(), "gpus": gpus}
    floors: dict[str, object] = {}
    for name in ("cuda", "torch", "jax"):
        if budget.left() < 60:
            floors[name] = "not run: budget spent"
            continue
        floors[name] = floor(name, options.limit, env, budget)
    result["floors"] = floors
    if not options.no_doctor:
        cases: dict[str, object] = {}
        for name in ("torch", "jax"):
            found = floors.get(name, {}).get("floor") if isinstance(floors.get(name), dict) else None
            if isinstance(found, int) and found > 1 and budget.left() > 90:
                cases[f"{name}-floor-minus-1"] = doctor_case(holding(options.limit, found - 1), env, ["torch", "jax"])
        roomy = min(65536, hard)
        if roomy >= 8192 and budget.left() > 90:
            cases["roomy"] = doctor_case(f"{holding(options.limit, 40)}; ulimit -S -n {roomy}", env, ["torch", "jax"])
        result["doctor"] = cases
    result["seconds_left"] = round(budget.left(), 1)
    out = Path(options.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "descriptor_floor.json").write_text(json.dumps(result, indent=1))
    print(json.dumps({k: (v.get("floor") if isinstance(v, dict) else v) for k, v in floors.items()}))


if __name__ == "__main__":
    main()
