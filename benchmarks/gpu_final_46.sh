#!/usr/bin/env bash
# Round six's last GPU call for issue 45: the sealed scenarios (written apart, figures only) on this tree, then
# speed: check --deep against collect_env and check --json against nvidia-smi -q, this tree and .before/ (the
# round's first commit, unpacked there) in the same rounds. bash benchmarks/gpu_final_46.sh OUT [SEALED]
set -u
out=${1:?usage: gpu_final_46.sh OUT [SEALED]}
sealed=${2:-.sealed/round6/scenarios45}
mkdir -p "$out"
timeout 430 python3 benchmarks/gpu_scenarios.py --scenarios "$sealed/scenarios.py" --out "$out/s6after" \
    --quiet-cases --budget-s 400 > "$out/s6after.txt" 2>&1
tail -c 1500 "$out/s6after.txt"
before=()
[ -d .before ] && before=(--before .before)
timeout 70 python3 benchmarks/deep_speed.py --runs 3 "${before[@]}" > "$out/speed.log" 2>&1
timeout 60 python3 benchmarks/check_speed.py --runs 9 --compare "nvidia-smi -q" "${before[@]}" >> "$out/speed.log" 2>&1
grep -vE '^\s*"(min_s|max_s|runs|cpu_x_import_typer)"' "$out/speed.log" | tail -c 3500
