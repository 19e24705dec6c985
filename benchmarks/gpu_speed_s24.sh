#!/usr/bin/env bash
# Round nineteen's speed run on the GPU machine (s24: the doctor's own time): plain check --json against nvidia-smi -q
# with BEFORE (another checkout, e.g. `git archive 35fb20f` unpacked) in the same interleaved rounds, the CPU of the
# command and of each child it starts for both trees, both trees' timelines (when NVML's child and the cuDNN copies'
# batch child start, the exit), and with PYTHON (an interpreter with torch, and JAX where there is one) check --deep's
# framework children beside collect_env.      bash benchmarks/gpu_speed_s24.sh OUT BEFORE [PYTHON]
# Needs typer in this Python for check_speed.py's yardstick (pip install typer). Under ten minutes in all.
set -u
out=${1:?usage: gpu_speed_s24.sh OUT BEFORE [PYTHON]}; before=$(realpath "${2:?usage: gpu_speed_s24.sh OUT BEFORE [PYTHON]}")
python=${3:-}
mkdir -p "$out"
cd "$(dirname "$0")/.."
echo "== check --json against nvidia-smi -q (this tree, $before)"
timeout 150 python3 benchmarks/check_speed.py --runs 31 --before "$before" --compare "nvidia-smi -q" > "$out/check_speed.json" 2>&1
grep -E '"command"|median_s|cpu_median_s' "$out/check_speed.json"
echo "== CPU of the command and of each child"
timeout 120 python3 benchmarks/check_cost.py --runs 15 --tree "$before" --tree . -v > "$out/check_cost.json" 2>&1
cat "$out/check_cost.json"
echo "== timelines"
timeout 120 python3 benchmarks/cli_timeline.py --runs 15 --tree "$before" --tree . > "$out/cli_timeline.txt" 2>&1
grep -E "^==|start|end|exit|^\{" "$out/cli_timeline.txt" | tail -40
if [ -n "$python" ]; then
  echo "== check --deep's framework children beside collect_env ($python)"
  timeout 150 python3 benchmarks/deep_start.py --runs 3 --python "$python" > "$out/deep_start.json" 2>&1
  cat "$out/deep_start.json"
fi
