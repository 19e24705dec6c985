#!/usr/bin/env bash
# Round twenty-two's speed run on the GPU machine (s26): issue 45's bar for plain check (2x `nvidia-smi -q`), three
# trees in the same interleaved rounds: BEFORE (another checkout, e.g. `git archive` of main unpacked as .b21s), this
# tree, and this tree with records.py as before s25's shared __init__ (benchmarks/records_dataclass_init.py: what the
# shared __init__ saves there). Wall and CPU (check_speed.py, 31 rounds, `python -m cudnn_doctor check --json`: the
# console script's path), each child's CPU (check_cost.py), the exit and the end of the pipes (exit_gap.py).
# JSON under OUT; medians and ratios printed at the end. Needs typer beside python3 (check_speed.py's yardstick).
#     bash benchmarks/gpu_speed_s26.sh OUT BEFORE       (about three minutes)
set -u
out=${1:?usage: gpu_speed_s26.sh OUT BEFORE}; before=$(realpath "${2:?usage: gpu_speed_s26.sh OUT BEFORE}")
mkdir -p "$out"; out=$(realpath "$out")
cd "$(dirname "$0")/.."
init=$(mktemp -d)/dataclass_init; mkdir -p "$init"; cp -r cudnn_doctor compat "$init/"
cp benchmarks/records_dataclass_init.py "$init/cudnn_doctor/records.py"
nvidia-smi -L > "$out/machine.txt" 2>&1; python3 -VV >> "$out/machine.txt"; nproc >> "$out/machine.txt"
timeout 240 python3 benchmarks/check_speed.py --runs 31 --before "$before" --before "$init" --compare "nvidia-smi -q" \
    > "$out/check_speed.json" 2> "$out/check_speed.err"
timeout 120 python3 benchmarks/check_cost.py --runs 11 --tree "$before" --tree . --tree "$init" -v > "$out/check_cost.json" \
    2> "$out/check_cost.err"
timeout 150 python3 benchmarks/exit_gap.py --runs 11 --tree "$before" --tree . > "$out/exit_gap.json" 2> "$out/exit_gap.err"
python3 - "$out" <<'PY'
import json, sys
out = sys.argv[1]
def show(path, read):
    try:
        read(json.load(open(f"{out}/{path}")))
    except (OSError, ValueError, KeyError, StopIteration, TypeError) as error:
        print(f"{path}: no figures ({type(error).__name__}: {error}); see the file")
def speed(rows):
    smi = next(r for r in rows if r["command"] == "nvidia-smi -q")["median_s"]
    for r in rows:
        print(f"{r['command']:40s} median {r['median_s']:.3f} s (min {r['min_s']:.3f})  CPU {r['cpu_median_s']:.3f} s  "
              f"{r['median_s'] / smi:.2f}x nvidia-smi -q (bar 2x)")
def cost(trees):
    for tree, t in trees.items():
        print(f"CPU {tree}: all {t['cpu_ms']} ms, own {t['own_cpu_ms']} ms, children {t['children_cpu_ms']} ms "
              f"({t['children']}), wall {t['wall_ms']} ms")
show("check_speed.json", speed); show("check_cost.json", cost)
PY
tail -c 1500 "$out/exit_gap.json"
