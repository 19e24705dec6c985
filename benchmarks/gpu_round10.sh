#!/usr/bin/env bash
# Round ten's GPU calls for issues 45 and 41, in the order their figures matter.
#   bash benchmarks/gpu_round10.sh facts OUT      speed (plain check vs nvidia-smi -q, --deep vs collect_env), the
#        round-nine builders' fact scripts never run on a GPU (process_start_facts.py, run_time_facts.py,
#        loader_classes.py through gpu_scenarios.py)
#   bash benchmarks/gpu_round10.sh scenarios OUT SCENARIOS_PY [JUDGES]   a scenario file on this tree (with JUDGES:
#        an earlier run's judges on the same card kind; without, the before tree .before/ runs first, its judges
#        reused, so before and after are judged alike)
set -u
what=${1:?usage: gpu_round10.sh facts|scenarios OUT ...}
out=${2:?usage: gpu_round10.sh facts|scenarios OUT ...}
mkdir -p "$out"
cd "$(dirname "$0")/.."
if [ "$what" = scenarios ]; then
  file=${3:?the scenarios file}
  judges=${4:-}
  if [ -z "$judges" ]; then
    timeout 280 python3 benchmarks/gpu_scenarios.py --scenarios "$file" --out "$out/before" \
      --quiet-cases --budget-s 260 --doctor-tree .before > "$out/before.txt" 2>&1
    tail -c 700 "$out/before.txt"
    judges="$out/before/scenarios.json"
  fi
  timeout 280 python3 benchmarks/gpu_scenarios.py --scenarios "$file" --out "$out/after" \
    --quiet-cases --budget-s 260 --judges "$judges" > "$out/after.txt" 2>&1
  tail -c 700 "$out/after.txt"
else
  timeout 110 bash benchmarks/gpu_speed_48.sh "$out/speed" .before > "$out/speed.txt" 2>&1
  grep -E "median_exit_ms|\"command\"|median_s" "$out/speed.txt" | head -20
  timeout 150 python3 benchmarks/process_start_facts.py --out "$out/ps" --budget-s 130 > "$out/ps.txt" 2>&1
  tail -c 1500 "$out/ps.txt"
  timeout 120 python3 benchmarks/run_time_facts.py --out "$out/rt" > "$out/rt.txt" 2>&1
  tail -c 1500 "$out/rt.txt"
  timeout 150 python3 benchmarks/gpu_scenarios.py --scenarios benchmarks/loader_classes.py --out "$out/lc" \
    --quiet-cases --budget-s 130 > "$out/lc.txt" 2>&1
  tail -c 1500 "$out/lc.txt"
fi
