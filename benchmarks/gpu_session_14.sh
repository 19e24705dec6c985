#!/usr/bin/env bash
# Round fourteen's GPU measurements in two device calls (machines are scarce: each start costs minutes of the
# session's 30), from the checkout's top folder; the device brings OUT back.
#   bash benchmarks/gpu_session_14.sh before OUT SEALED_SCENARIOS.py BEFORE_TREE
#       the sealed scenarios judged and scored with the round's first commit (BEFORE_TREE, an unpacked archive),
#       then the facts owed since round thirteen (first use, the CUDA libraries as each framework loads them,
#       settings read when used) and where --deep's seconds go (deep_phases.py)
#   bash benchmarks/gpu_session_14.sh both OUT SEALED_SCENARIOS.py BEFORE_TREE
#       on a card other than the first call's: the scenarios judged afresh and scored with BEFORE_TREE, then with
#       this tree on the same judges, then speed as below
#   bash benchmarks/gpu_session_14.sh after OUT SEALED_SCENARIOS.py BEFORE_TREE [JUDGES.json]
#       the same scenarios scored with this tree (the first call's judges reused where given: they do not depend on
#       the doctor), then speed: check --json against nvidia-smi -q and check --deep against collect_env, this tree
#       and BEFORE_TREE in the same interleaved rounds
set -u
mode=${1:?usage: gpu_session_14.sh before|after OUT SEALED BEFORE_TREE [JUDGES]}
out=${2:?OUT}; sealed=${3:?SEALED}; before=${4:?BEFORE_TREE}; judges=${5:-}
mkdir -p "$out"
py=${PYTHON:-python3}
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$out/gpu.txt" 2>&1
if [ "$mode" = before ]; then
    timeout 260 $py benchmarks/gpu_scenarios.py --scenarios "$sealed" --out "$out/sealed" --quiet-cases \
        --doctor-tree "$before" --budget-s 240 > "$out/sealed.log" 2>&1; tail -c 900 "$out/sealed.log"
    timeout 90 $py benchmarks/first_use_facts.py --out "$out/first_use" --budget-s 75 > "$out/first_use.log" 2>&1
    tail -c 400 "$out/first_use.log"
    timeout 90 $py benchmarks/cuda_library_facts.py --out "$out/libraries" --budget-s 75 > "$out/libraries.log" 2>&1
    tail -c 400 "$out/libraries.log"
    timeout 50 $py benchmarks/when_used_facts.py --out "$out/when_used" > "$out/when_used.log" 2>&1
    timeout 50 $py benchmarks/settings_facts.py --out "$out/settings" --only round12 > "$out/settings.log" 2>&1
    tail -c 300 "$out/when_used.log" "$out/settings.log"
    timeout 90 $py benchmarks/deep_phases.py --runs 3 > "$out/deep_phases.log" 2>&1; cat "$out/deep_phases.log"
elif [ "$mode" = both ]; then
    timeout 200 $py benchmarks/gpu_scenarios.py --scenarios "$sealed" --out "$out/sealed_before" --quiet-cases \
        --doctor-tree "$before" --budget-s 185 > "$out/sealed_before.log" 2>&1; tail -c 700 "$out/sealed_before.log"
    timeout 200 $py benchmarks/gpu_scenarios.py --scenarios "$sealed" --out "$out/sealed" --quiet-cases \
        --judges "$out/sealed_before/scenarios.json" --budget-s 185 > "$out/sealed.log" 2>&1
    tail -c 700 "$out/sealed.log"
    timeout 45 $py benchmarks/check_speed.py --runs 9 --compare "nvidia-smi -q" --before "$before" \
        > "$out/speed.log" 2>&1
    timeout 75 $py benchmarks/deep_speed.py --runs 3 --before "$before" >> "$out/speed.log" 2>&1
    tail -c 1500 "$out/speed.log"
else
    reuse=()
    [ -n "$judges" ] && reuse=(--judges "$judges")
    timeout 260 $py benchmarks/gpu_scenarios.py --scenarios "$sealed" --out "$out/sealed" --quiet-cases \
        "${reuse[@]}" --budget-s 240 > "$out/sealed.log" 2>&1; tail -c 900 "$out/sealed.log"
    timeout 60 $py benchmarks/check_speed.py --runs 9 --compare "nvidia-smi -q" --before "$before" \
        > "$out/speed.log" 2>&1
    timeout 100 $py benchmarks/deep_speed.py --runs 3 --before "$before" >> "$out/speed.log" 2>&1
    tail -c 2000 "$out/speed.log"
fi
