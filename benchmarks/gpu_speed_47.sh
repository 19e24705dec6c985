#!/usr/bin/env bash
# Round seven's speed run on the GPU machine: where one check spends its wall time (cli_timeline.py: the real
# command, its children's starts and ends), this tree against DIR (a checkout of the round's first commit) in the
# same rounds, and check --deep against collect_env.   bash benchmarks/gpu_speed_47.sh OUT [DIR]
set -u
out=${1:?usage: gpu_speed_47.sh OUT [DIR]}
before=${2:-}
mkdir -p "$out"
cd "$(dirname "$0")/.."
for round in 1; do
  echo "== timeline, this tree (round $round)"; timeout 100 python3 benchmarks/cli_timeline.py --runs 9
  if [ -n "$before" ]; then echo "== timeline, $before"; CHECKOUT=$(realpath "$before") timeout 100 python3 benchmarks/cli_timeline.py --runs 9 | tail -1; fi
done
echo "== check --json against nvidia-smi -q"
timeout 40 python3 benchmarks/check_speed.py --runs 15 ${before:+--before "$before"} --compare "nvidia-smi -q" > "$out/check_speed.json" 2>&1
grep -E '"command"|median_s|min_s|max_s' "$out/check_speed.json"
echo "== check --deep against collect_env"
timeout 50 python3 benchmarks/deep_speed.py --runs 3 ${before:+--before "$before"} 2>&1 | tail -12
