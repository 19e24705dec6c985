#!/usr/bin/env bash
# Round seven's last GPU call for issue 45: the sealed scenarios (written apart, figures only) on this tree with the
# judges of the before run (the same frameworks' verdicts), then round six's development set, then speed against
# .before/ (the round's first commit) in the same rounds.   bash benchmarks/gpu_final_47.sh OUT [SEALED] [JUDGES]
set -u
out=${1:?usage: gpu_final_47.sh OUT [SEALED] [JUDGES]}
sealed=${2:-.sealed/round7/scenarios45}
judges=${3:-}
mkdir -p "$out"
cd "$(dirname "$0")/.."
timeout 300 python3 benchmarks/gpu_scenarios.py --scenarios "$sealed/scenarios.py" --out "$out/s7after" \
    --quiet-cases --budget-s 280 ${judges:+--judges "$judges"} > "$out/s7after.txt" 2>&1
tail -c 1200 "$out/s7after.txt"
timeout 200 python3 benchmarks/gpu_scenarios.py --scenarios benchmarks/held_out/round6/scenarios45.py \
    --out "$out/r6" --budget-s 180 > "$out/r6.txt" 2>&1
tail -c 1500 "$out/r6.txt"
bash benchmarks/gpu_speed_47.sh "$out/speed" .before 2>&1 | tail -c 3500
