#!/usr/bin/env bash
# Round eight's speed run on the GPU machine: plain check's timeline (cli_timeline.py: when NVML's child starts and
# ends, when the command exits) for this tree and each DIR (other checkouts: the round's first commit, a variant),
# check --json against nvidia-smi -q with the first DIR in the same interleaved rounds, the doctor's own profile, and
# each NVML call's time.      bash benchmarks/gpu_speed_48.sh OUT [DIR...]
set -u
out=${1:?usage: gpu_speed_48.sh OUT [DIR...]}; shift
mkdir -p "$out"
cd "$(dirname "$0")/.."
for tree in . "$@"; do
  echo "== timeline of $tree"
  CHECKOUT=$(realpath "$tree") timeout 120 python3 benchmarks/cli_timeline.py --runs 11 | grep -E "nvml|exit|median"
done
echo "== check --json against nvidia-smi -q"
others=()
for tree in "${@:2}"; do others+=(--compare "PYTHONPATH=$(realpath "$tree")\${PYTHONPATH:+:\$PYTHONPATH} python3 -m cudnn_doctor check --json"); done
timeout 150 python3 benchmarks/check_speed.py --runs 21 ${1:+--before "$1"} "${others[@]}" --compare "nvidia-smi -q" \
  > "$out/check_speed.json" 2>&1
grep -E '"command"|median_s' "$out/check_speed.json"
echo "== profile (tottime)"
timeout 100 python3 benchmarks/check_timeline.py --runs 3 --profile --sort tottime --only-doctor --lines 30 2>&1 | tail -36
echo "== timeline with children"
timeout 100 python3 benchmarks/check_timeline.py --runs 5 --children 2>&1 | grep -v "wait for $\|waited$" | head -40
echo "== NVML calls"
timeout 60 python3 benchmarks/nvml_calls.py --runs 5 > "$out/nvml_calls.json" 2>&1
python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(d['phases_ms'], d['wall_ms_all'], d['cpu_affinity']); [print(c) for c in d['calls'][:8]]" "$out/nvml_calls.json"
