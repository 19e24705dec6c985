#!/usr/bin/env bash
# Round twenty-one's speed run on the GPU machine (s25): issue 45's two bars, this tree against BEFORE (another checkout,
# e.g. `git archive 3fb32a9` unpacked as .before21) in the same interleaved rounds. Plain `check --json` against
# `nvidia-smi -q` (bar: 2x), the CPU of the command and of each child it starts, both trees' timelines; `check --deep
# --json` against `python -m torch.utils.collect_env` under PYTHON, the interpreter with torch and JAX (bar: 0.6x).
# JSON under OUT; medians and ratios printed at the end. Needs typer beside python3 (check_speed.py's yardstick).
#     bash benchmarks/gpu_speed_s25.sh OUT BEFORE [PYTHON]       (about three minutes)
set -u
out=${1:?usage: gpu_speed_s25.sh OUT BEFORE [PYTHON]}; before=$(realpath "${2:?usage: gpu_speed_s25.sh OUT BEFORE [PYTHON]}")
python=${3:-/opt/torch/.venv/bin/python}
mkdir -p "$out"; out=$(realpath "$out")
cd "$(dirname "$0")/.."
nvidia-smi -L > "$out/machine.txt" 2>&1; python3 -VV >> "$out/machine.txt"; nproc >> "$out/machine.txt"
timeout 200 python3 benchmarks/check_speed.py --runs 31 --before "$before" --compare "nvidia-smi -q" > "$out/check_speed.json" 2> "$out/check_speed.err"
timeout 100 python3 benchmarks/check_cost.py --runs 11 --tree "$before" --tree . -v > "$out/check_cost.json" 2> "$out/check_cost.err"
timeout 100 python3 benchmarks/cli_timeline.py --runs 11 --tree "$before" --tree . > "$out/cli_timeline.txt" 2>&1
timeout 200 python3 benchmarks/deep_speed.py --runs 5 --python "$python" --before "$before" --json "$out/deep_speed.json" \
    > "$out/deep_speed.txt" 2>&1
python3 - "$out" <<'PY'
import json, sys
out = sys.argv[1]
def show(path, read):
    try:
        read(json.load(open(f"{out}/{path}")))
    except (OSError, ValueError, KeyError, StopIteration) as error:
        print(f"{path}: no figures ({type(error).__name__}: {error}); see the file")
def speed(rows):
    smi = next(r for r in rows if r["command"] == "nvidia-smi -q")["median_s"]
    for r in rows:
        print(f"{r['command']:40s} median {r['median_s']:.3f} s  CPU {r['cpu_median_s']:.3f} s  "
              f"{r['median_s'] / smi:.2f}x nvidia-smi -q (bar 2x)")
def cost(trees):
    for tree, t in trees.items():
        print(f"CPU {tree}: all {t['cpu_ms']} ms, own {t['own_cpu_ms']} ms, children {t['children_cpu_ms']} ms "
              f"({t['children']}), wall {t['wall_ms']} ms")
        print("    each child: " + "; ".join(f"{name} {c['cpu_ms']} ms x{c['per_check']}" for name, c in
                                            t.get("each", {}).items()))
def deep(data):
    for name, c in data["commands"].items():
        print(f"{name:40s} median {c['median_s']:.2f} s  {c['x_collect_env']:.2f}x collect_env (bar 0.6x)"
              + (f"  FAILED exit {c['failed_exit']}" if c["failed_exit"] is not None else ""))
show("check_speed.json", speed); show("check_cost.json", cost); show("deep_speed.json", deep)
PY
tail -1 "$out/cli_timeline.txt"
