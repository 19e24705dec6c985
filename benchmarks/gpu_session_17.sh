#!/usr/bin/env bash
# Round twenty-one's GPU measurements (session seventeen), from the checkout's top folder on the device; each call
# starts a machine, which costs minutes of the session's 30, so each mode does several things in one call.
#   bash benchmarks/gpu_session_17.sh before OUT SEALED_SCENARIOS.py BEFORE_TREE
#       speed of this tree against BEFORE_TREE (plain check against nvidia-smi -q), then the sealed scenarios judged
#       once and scored with BEFORE_TREE (the round's first commit, unpacked), then round nineteen's published set
#       (a development set) with this tree
#   bash benchmarks/gpu_session_17.sh after OUT SEALED_SCENARIOS.py BEFORE_TREE JUDGES.json
#       the sealed scenarios scored with this tree on the before run's judges (JUDGES.json: its scenarios.json),
#       then speed: plain check against nvidia-smi -q and check --deep against collect_env, this tree and BEFORE_TREE
#       in the same interleaved rounds
# PYTHON: the judges' interpreter (torch and JAX); the doctor's own dependencies come from .whl (carried).
set -u
mode=${1:?usage: gpu_session_17.sh before|after OUT SEALED BEFORE_TREE [JUDGES]}
out=${2:?OUT}; sealed=${3:?SEALED}; before=${4:?BEFORE_TREE}
mkdir -p "$out"
py=${PYTHON:-python3}
$py -m pip install -q --no-index --find-links .whl platformdirs argcomplete rich-argparse rich requests packaging \
    nvidia-ml-py > "$out/pip.log" 2>&1
$py -m pip install -q --no-index --no-deps --find-links .whl typer shellingham annotated-doc >> "$out/pip.log" 2>&1
export PYTHON=$py
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$out/gpu.txt" 2>&1
cat "$out/gpu.txt"
if [ "$mode" = before ]; then
    timeout 80 $py benchmarks/check_speed.py --runs 11 --compare "nvidia-smi -q" --before "$before" \
        > "$out/speed.json" 2> "$out/speed.err"
    timeout 260 $py benchmarks/gpu_scenarios.py --scenarios "$sealed" --out "$out/sealed_before" --quiet-cases \
        --doctor-tree "$before" --budget-s 220 > "$out/sealed_before.log" 2>&1
    tail -c 1500 "$out/sealed_before.log"
    timeout 200 $py benchmarks/gpu_scenarios.py --scenarios benchmarks/held_out/round19/scenarios45.py \
        --out "$out/dev19" --quiet-cases --budget-s 170 > "$out/dev19.log" 2>&1
    tail -c 1500 "$out/dev19.log"
else
    judges=${5:?JUDGES}
    timeout 240 $py benchmarks/gpu_scenarios.py --scenarios "$sealed" --out "$out/sealed_after" --quiet-cases \
        --judges "$judges" --budget-s 200 > "$out/sealed_after.log" 2>&1
    tail -c 1500 "$out/sealed_after.log"
    timeout 80 $py benchmarks/check_speed.py --runs 11 --compare "nvidia-smi -q" --before "$before" \
        > "$out/speed.json" 2> "$out/speed.err"
    timeout 120 $py benchmarks/deep_speed.py --runs 3 --before "$before" > "$out/deep_speed.log" 2>&1
    tail -c 800 "$out/deep_speed.log"
fi
$py -c "import json,sys; [print(r['command'], r['median_s'], 'cpu', r['cpu_median_s']) for r in json.load(open(sys.argv[1]))]" \
    "$out/speed.json" 2>/dev/null
