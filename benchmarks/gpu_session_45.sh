#!/usr/bin/env bash
# Issue 45's runs on the GPU machine, in one call (run from the checkout's top folder):
#   bash benchmarks/gpu_session_45.sh OUT [SEALED]
# 1. the sealed scenarios (SEALED/scenarios.py, written apart from the code): an earlier run's outcomes judged again
#    against their causes as mapped now (--rescore, nothing run), then this tree, figures only (--quiet-cases);
# 2. the built-in scenario suite (issue 30's 54, a regression check), figures only;
# 3. speed: check --json against nvidia-smi -q, and check --deep against torch's collect_env, this tree and .before/
#    (the session's first commit, unpacked there) in the same rounds.
# Each step has its own time limit; what it wrote stays under OUT.
set -u
out=${1:?usage: gpu_session_45.sh OUT [SEALED]}
sealed=${2:-.sealed/scenarios45}
mkdir -p "$out"
if [ -f "$sealed/runs/before-scenarios.json" ]; then
    timeout 60 python3 benchmarks/gpu_scenarios.py --out "$out/rescore" --scenarios "$sealed/scenarios.py" \
        --rescore "$sealed/runs/before-scenarios.json" > "$out/before_rescored.txt" 2>&1
    tail -c 600 "$out/before_rescored.txt"
fi
timeout 250 python3 benchmarks/gpu_scenarios.py --scenarios "$sealed/scenarios.py" --out "$out/s45after" \
    --quiet-cases --budget-s 170 2>&1 | tail -3
if [ "${BUILTIN:-1}" != 0 ]; then  # BUILTIN=0 leaves the built-in suite out (its alone-scenarios take minutes)
    timeout 190 python3 benchmarks/gpu_scenarios.py --out "$out/builtin" --quiet-cases --budget-s 120 2>&1 | tail -3
fi
before=()
[ -d .before ] && before=(--before .before)
timeout 60 python3 benchmarks/check_speed.py --runs 9 --compare "nvidia-smi -q" "${before[@]}" > "$out/speed.log" 2>&1
timeout 90 python3 benchmarks/deep_speed.py --runs 3 "${before[@]}" >> "$out/speed.log" 2>&1
tail -c 2500 "$out/speed.log"
