#!/usr/bin/env bash
# Round eight's GPU call for issue 45, in the order its figures matter: the sealed scenarios (written apart, figures
# only) on this tree with the judges of the before run; speed against .before/ (the round's first commit) in the same
# rounds; the facts behind round eight's new rules (settings_facts.py round8); round seven's development set.
#   bash benchmarks/gpu_final_48.sh OUT [SEALED] [JUDGES] [BUDGET_S]
set -u
out=${1:?usage: gpu_final_48.sh OUT [SEALED] [JUDGES] [BUDGET_S]}
sealed=${2:-.sealed/round8/scenarios45}
judges=${3:-}
budget=${4:-200}
mkdir -p "$out"
cd "$(dirname "$0")/.."
timeout $((budget + 15)) python3 benchmarks/gpu_scenarios.py --scenarios "$sealed/scenarios.py" --out "$out/s8after" \
    --quiet-cases --budget-s "$budget" ${judges:+--judges "$judges"} > "$out/s8after.txt" 2>&1
tail -c 1000 "$out/s8after.txt"
timeout 100 bash benchmarks/gpu_speed_48.sh "$out/speed" .before > "$out/speed.txt" 2>&1
grep -E "median_exit_ms|nvml|\"command\"|median_s" "$out/speed.txt" | head -30
timeout 120 python3 benchmarks/settings_facts.py --out "$out/sf" --only round8 > "$out/sf.txt" 2>&1
tail -c 1500 "$out/sf.txt"
timeout 90 python3 benchmarks/process_watch_gpu.py "$out/pw" 2>&1 | tail -3
