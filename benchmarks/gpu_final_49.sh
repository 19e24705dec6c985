#!/usr/bin/env bash
# Round nine's GPU calls for issue 45, in the order its figures matter.
#   bash benchmarks/gpu_final_49.sh scenarios OUT SEALED [JUDGES]   the sealed scenarios on this tree (with JUDGES:
#        the before run's judges, same card kind; without: the before tree .before/ runs first, its judges reused)
#   bash benchmarks/gpu_final_49.sh facts OUT                         speed against .before/, plain check where
#        LD_LIBRARY_PATH names cuDNN, python_finder_facts.py, settings_facts.py --only round9,names
set -u
what=${1:?usage: gpu_final_49.sh scenarios|facts OUT ...}
out=${2:?usage: gpu_final_49.sh scenarios|facts OUT ...}
mkdir -p "$out"
cd "$(dirname "$0")/.."
if [ "$what" = scenarios ]; then
  sealed=${3:?the sealed scenarios folder}
  bash benchmarks/gpu_round10.sh scenarios "$out" "$sealed/scenarios.py" ${4:-}  # one runner of before/after
else
  timeout 110 bash benchmarks/gpu_speed_48.sh "$out/speed" .before > "$out/speed.txt" 2>&1
  grep -E "median_exit_ms|\"command\"|median_s" "$out/speed.txt" | head -20
  timeout 80 bash benchmarks/gpu_slow_paths.sh "$out/slow" 2>&1 | grep -E "^==|^run" | head -20
  timeout 100 python3 benchmarks/python_finder_facts.py "$out/pf" 2>&1 | tail -6
  timeout 240 python3 benchmarks/settings_facts.py --only round9,names --out "$out/sf" > "$out/sf.txt" 2>&1
  tail -c 2500 "$out/sf.txt"
fi
