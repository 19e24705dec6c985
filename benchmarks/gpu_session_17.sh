#!/usr/bin/env bash
# Round twenty-one's GPU measurements (session seventeen), from the checkout's top folder on the device; each call
# starts a machine, which costs minutes of the session's 30, so each mode does several things in one call.
#   bash benchmarks/gpu_session_17.sh before OUT SEALED_SCENARIOS.py BEFORE_TREE
#       speed of this tree against BEFORE_TREE (plain check against nvidia-smi -q), then the sealed scenarios judged
#       once and scored with BEFORE_TREE (the round's first commit, unpacked), then round nineteen's published set
#       (a development set) with this tree
#   bash benchmarks/gpu_session_17.sh after OUT SEALED_SCENARIOS.py BEFORE_TREE [OLD_TREE]
#       the sealed scenarios judged once and scored with BEFORE_TREE and with this tree on those judges, then
#       speed: plain check against nvidia-smi -q and check --deep against collect_env, this tree and BEFORE_TREE in
#       the same interleaved rounds (and plain check of OLD_TREE where given)
# PYTHON: the judges' interpreter (torch and JAX); the doctor's own dependencies come from .whl (carried).
set -u
mode=${1:?usage: gpu_session_17.sh before|after OUT SEALED BEFORE_TREE [OLD_TREE]}
out=${2:?OUT}; sealed=${3:?SEALED}; before=${4:?BEFORE_TREE}
mkdir -p "$out"
py=${PYTHON:-python3}
$py -m pip install -q --no-index --find-links .whl platformdirs argcomplete rich-argparse rich requests packaging \
    nvidia-ml-py > "$out/pip.log" 2>&1
$py -m pip install -q --no-index --no-deps --find-links .whl typer shellingham annotated-doc >> "$out/pip.log" 2>&1
export PYTHON=$py
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>&1
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
    # both trees in this one call on one set of judges (the device brings back only a few files: the first call's
    # judges did not come back, so they are made again here), then speed; OLD_TREE ($5, optional): a third tree timed
    old=${5:-}
    timeout 200 $py benchmarks/gpu_scenarios.py --scenarios "$sealed" --out "$out/sb" --quiet-cases \
        --doctor-tree "$before" --budget-s 170 > "$out/sb.log" 2>&1
    tail -n 2 "$out/sb.log"
    timeout 200 $py benchmarks/gpu_scenarios.py --scenarios "$sealed" --out "$out/sa" --quiet-cases \
        --judges "$out/sb/scenarios.json" --budget-s 170 > "$out/sa.log" 2>&1
    tail -n 2 "$out/sa.log"
    mv "$out/sb/scenarios.json" "$out/sb_scenarios.json"; rm -rf "$out/sb"
    timeout 80 $py benchmarks/check_speed.py --runs 11 --compare "nvidia-smi -q" --before "$before" \
        > "$out/speed.json" 2> "$out/speed.err"
    if [ -n "$old" ]; then
        timeout 60 $py benchmarks/check_speed.py --runs 7 --compare "nvidia-smi -q" --before "$old" \
            > "$out/speed_old.json" 2>> "$out/speed.err"
        $py -c "import json,sys; [print(r['command'], r['median_s'], 'cpu', r['cpu_median_s']) for r in json.load(open(sys.argv[1]))]" \
            "$out/speed_old.json" 2>/dev/null
    fi
    timeout 120 $py benchmarks/deep_speed.py --runs 3 --before "$before" > "$out/deep_speed.log" 2>&1
    tail -c 800 "$out/deep_speed.log"
fi
$py -c "import json,sys; [print(r['command'], r['median_s'], 'cpu', r['cpu_median_s']) for r in json.load(open(sys.argv[1]))]" \
    "$out/speed.json" 2>/dev/null
