#!/usr/bin/env bash
# Plain check where a user's environment names cuDNN: round eight's scenarios took 4-9 s of plain `check` wherever
# LD_LIBRARY_PATH or LD_PRELOAD named a cuDNN folder (0.4-0.7 s elsewhere, same machine, same runs). This times plain
# check --json under each such environment and prints one run's children (start/end) to show which child is slow.
#     bash benchmarks/gpu_slow_paths.sh OUT
set -u
out=${1:?usage: gpu_slow_paths.sh OUT}
mkdir -p "$out"
cd "$(dirname "$0")/.."
site=$(python3 -c "import torch, os; print(os.path.dirname(os.path.dirname(torch.__file__)))")
pip=$(dirname "$(ls "$site"/nvidia/cudnn/lib/libcudnn.so.9 "$site"/nvidia/cu*/lib/libcudnn.so.9 2>/dev/null | head -1)")
echo "pip cuDNN folder: $pip"
run() {  # LABEL VAR=VALUE...
  label=$1; shift
  echo "== $label"
  for i in 1 2 3; do
    s=$(date +%s.%N); env "$@" python3 -m cudnn_doctor check --json > "$out/$label.$i.json" 2>/dev/null; rc=$?
    e=$(date +%s.%N); echo "run $i: rc $rc, $(python3 -c "print(round($e - $s, 2))") s"
  done
  env "$@" timeout 100 python3 benchmarks/check_timeline.py --runs 1 --children > "$out/$label.timeline.txt" 2>&1
  grep -E "child (start|end)|diagnose end|^ *[0-9.]+ ms  end" "$out/$label.timeline.txt" | head -40
}
run plain X=1
run ld_library_path LD_LIBRARY_PATH="$pip"
run ld_preload LD_PRELOAD="$pip/libcudnn.so.9"
run ld_library_path_system LD_LIBRARY_PATH=/usr/lib/x86_64-linux-gnu
