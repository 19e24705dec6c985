#!/usr/bin/env bash
# Round sixteen's GPU measurements in two device calls (each start costs minutes of the session's 30), from the
# checkout's top folder; the device brings OUT back.
#   bash benchmarks/gpu_session_16.sh sealed OUT SEALED_SCENARIOS.py BEFORE_TREE
#       the sealed scenarios judged once and scored with the round's first commit (BEFORE_TREE, an unpacked archive),
#       then with this tree on the same judges (one machine: round fourteen showed a machine's state moves counts);
#       SPEED=1 adds the speed measurements of dev mode
#   bash benchmarks/gpu_session_16.sh dev OUT BEFORE_TREE [SCENARIOS.py]
#       a published set (a development set; round fifteen's by default) with this tree; speed: check --json against
#       nvidia-smi -q and check --deep against collect_env, this tree and BEFORE_TREE in the same interleaved rounds
set -u
mode=${1:?usage: gpu_session_16.sh sealed|dev OUT ...}
out=${2:?OUT}
mkdir -p "$out"
py=${PYTHON:-python3}
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$out/gpu.txt" 2>&1
speed() {  # first, on a machine nothing has run on yet: round sixteen's first call measured after the scenarios
           # (their children and caches around) and saw plain check at twice its time of the session before
    timeout 90 $py benchmarks/check_speed.py --runs 15 --compare "nvidia-smi -q" --before "$1" > "$out/speed.log" 2>&1
    if [ "${SPEED:-}" != check ]; then  # SPEED=check: plain check's alone, where the device time is short
        timeout 60 $py benchmarks/check_cost.py --runs 9 --tree "$1" --tree . -v > "$out/cost.log" 2>&1  # CPU per child
        timeout 100 $py benchmarks/deep_speed.py --runs 3 --before "$1" >> "$out/speed.log" 2>&1
    fi
    tail -c 1200 "$out/speed.log"
}
if [ "$mode" = sealed ]; then
    sealed=${3:?SEALED}; before=${4:?BEFORE_TREE}
    if [ -n "${SPEED:-}" ]; then speed "$before"; fi
    timeout 280 $py benchmarks/gpu_scenarios.py --scenarios "$sealed" --out "$out/sealed_before" --quiet-cases \
        --doctor-tree "$before" --budget-s 250 > "$out/sealed_before.log" 2>&1; tail -c 700 "$out/sealed_before.log"
    timeout 280 $py benchmarks/gpu_scenarios.py --scenarios "$sealed" --out "$out/sealed" --quiet-cases \
        --judges "$out/sealed_before/scenarios.json" --budget-s 250 > "$out/sealed.log" 2>&1
    tail -c 700 "$out/sealed.log"
else
    before=${3:?BEFORE_TREE}
    speed "$before"
    timeout 200 $py benchmarks/gpu_scenarios.py --scenarios ${4:-benchmarks/held_out/round15/scenarios45.py} \
        --out "$out/dev" --quiet-cases --budget-s 180 > "$out/dev.log" 2>&1; tail -c 700 "$out/dev.log"
fi
