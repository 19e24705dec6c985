#!/usr/bin/env bash
# One device session's runs for issue 30, in one call (device time is scarce): the scenario suite with the first
# judges of the before run reused, check's speed against nvidia-smi -q (the whole machine, then one GPU visible),
# check --deep's evidence in three broken setups the suite leaves in /tmp, and --deep against collect_env.
# Usage on the GPU machine, from the checkout: bash benchmarks/gpu_session.sh OUT_DIR [BEFORE_TREE]
set -u
out=${1:?output folder}; before=${2:-}
mkdir -p "$out"
python3 benchmarks/gpu_scenarios.py --out "$out" --parallel 4 --judges benchmarks/results/gpu_scenarios_before.json \
    > "$out/scenarios.log" 2>&1
tail -1 "$out/scenarios.log"
python3 benchmarks/check_speed.py --runs 11 ${before:+--before "$before"} --compare "nvidia-smi -q" > "$out/speed.log" 2>&1
CUDA_VISIBLE_DEVICES=0 python3 benchmarks/check_speed.py --runs 7 --compare "nvidia-smi -q" > "$out/speed-one-gpu.log" 2>&1
for setup in "LD_LIBRARY_PATH=/tmp/cudnn-doctor-scenarios/mixed" "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:maybe" \
             "LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libcudnn.so.9"; do
    echo "== check --deep with $setup"
    env "$setup" python3 -m cudnn_doctor check --deep --json 2>/dev/null | python3 -c '
import json, sys
report = json.load(sys.stdin)
for f in report["findings"]:
    if f["severity"] == "error":
        print(f["code"], f["title"], "|", [r for r in f["refs"] if "--deep" in r][:2])'
done > "$out/deep-evidence.log" 2>&1
python3 -m cudnn_doctor check > "$out/check.txt" 2>&1
python3 benchmarks/deep_speed.py --runs 3 > "$out/deep-speed.log" 2>&1
grep -hE '"command"|median_s' "$out/speed.log" "$out/speed-one-gpu.log"; cat "$out/deep-evidence.log"; tail -4 "$out/deep-speed.log"
