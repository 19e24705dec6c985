#!/usr/bin/env bash
# Every GPU measurement still owed, in ONE device call (machines are scarce: each start costs minutes of the
# session's 30), from the checkout's top folder:
#   bash benchmarks/gpu_session_13.sh OUT [SEALED_SCENARIOS.py]
# Order: what a verdict rests on first, speed last; each step under its own limit so one slow step costs only
# itself; everything each wrote stays under OUT (the device brings OUT back).
#  1. sealed scenarios, where a set gathered apart is given (gpu_scenarios.py, figures only);
#  2. first use (p17): what real torch, JAX and a program by name do in each first-use scenario, beside check;
#  3. the CUDA libraries other than cuDNN as each framework loads them (l15/l16);
#  4. settings read only when a feature is used (q16) and XLA's path flags (w16);
#  5. speed: check --json against nvidia-smi -q, check --deep against torch's collect_env (.before13 beside,
#     where an archive of the round's first commit is unpacked there).
set -u
out=${1:?usage: gpu_session_13.sh OUT [SEALED_SCENARIOS.py]}
sealed=${2:-}
mkdir -p "$out"
py=${PYTHON:-python3}
if [ -n "$sealed" ]; then
    timeout 200 $py benchmarks/gpu_scenarios.py --scenarios "$sealed" --out "$out/sealed" --quiet-cases \
        --budget-s 170 > "$out/sealed.log" 2>&1; tail -c 800 "$out/sealed.log"
fi
timeout 100 $py benchmarks/first_use_facts.py --out "$out/first_use" --budget-s 80 > "$out/first_use.log" 2>&1
tail -c 400 "$out/first_use.log"
timeout 100 $py benchmarks/cuda_library_facts.py --out "$out/libraries" --budget-s 80 > "$out/libraries.log" 2>&1
tail -c 400 "$out/libraries.log"
timeout 60 $py benchmarks/when_used_facts.py --out "$out/when_used" > "$out/when_used.log" 2>&1
timeout 60 $py benchmarks/settings_facts.py --out "$out/settings" --only round12 > "$out/settings.log" 2>&1
tail -c 300 "$out/when_used.log" "$out/settings.log"
before=()
[ -d .before13 ] && before=(--before .before13)
timeout 60 $py benchmarks/check_speed.py --runs 9 --compare "nvidia-smi -q" "${before[@]}" > "$out/speed.log" 2>&1
timeout 90 $py benchmarks/deep_speed.py --runs 3 "${before[@]}" >> "$out/speed.log" 2>&1
tail -c 2000 "$out/speed.log"
