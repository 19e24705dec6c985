#!/usr/bin/env bash
# Issue 45's two speed bars on the GPU machine, this tree and BEFORE (another checkout, e.g. `git archive` of the
# commit before a change) in the same interleaved rounds, in under 120 s:
#   plain check (`check --json` and the text `check`) against `nvidia-smi -q` (bar: 2x), with `--version` for the
#   interpreter's own share (exit_gap.py: the exit and the end of the pipes, as a caller sees them);
#   the command's timeline (cli_timeline.py: each child's start and end, the tail after the last answer);
#   `check --deep --json` against `python -m torch.utils.collect_env` (bar: 0.6x; deep_speed.py).
# Figures in OUT (exit_gap.json, timeline_json.txt, timeline_text.txt, deep_speed.txt); a summary on stdout.
#     bash benchmarks/gpu_speed_45.sh OUT [BEFORE]
set -u
out=${1:?usage: gpu_speed_45.sh OUT [BEFORE]}
before=${2:-}
mkdir -p "$out"
out=$(realpath "$out")
cd "$(dirname "$0")/.."
trees=(--tree .)
if [ -n "$before" ]; then trees+=(--tree "$(realpath "$before")"); fi
py=python3
echo "== $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>&1 | head -1); $(nproc) CPUs; $($py -V)"
echo "== floors: interpreter start with site, without"
$py -I -S -c 'import subprocess, statistics, time, sys
for argv in ([sys.executable, "-c", "pass"], [sys.executable, "-I", "-S", "-c", "pass"]):
    t = []
    for _ in range(8):
        s = time.perf_counter(); subprocess.run(argv); t.append(time.perf_counter() - s)
    print("%7.1f ms  %s" % (statistics.median(t[1:]) * 1000, " ".join(argv[1:])))'
echo "== plain check against nvidia-smi -q (exit_gap.py, 11 rounds)"
timeout 40 $py benchmarks/exit_gap.py --runs 11 "${trees[@]}" > "$out/exit_gap.json" 2>&1
$py -c 'import json, sys; d = json.load(open(sys.argv[1])); [print("%-40s %.3f s" % (k, v["exit"])) for k, v in d["median_s"].items()]; print("x nvidia-smi -q:", d["x_nvidia_smi_q"])' "$out/exit_gap.json" 2>/dev/null || { echo "exit_gap.py gave no figures (timed out?):"; tail -5 "$out/exit_gap.json"; }
echo "== timeline, check --json (cli_timeline.py, 7 runs a tree)"
timeout 15 $py benchmarks/cli_timeline.py --runs 7 "${trees[@]}" > "$out/timeline_json.txt" 2>&1
grep -E '^==|nvml|exit|median' "$out/timeline_json.txt" | tail -12
echo "== timeline, check (text)"
timeout 15 $py benchmarks/cli_timeline.py --runs 7 "${trees[@]}" -- --format text > "$out/timeline_text.txt" 2>&1
tail -1 "$out/timeline_text.txt"
echo "== check --deep against collect_env (deep_speed.py, 2 rounds)"
timeout 45 $py benchmarks/deep_speed.py --runs 2 ${before:+--before "$(realpath "$before")"} > "$out/deep_speed.txt" 2>&1
cat "$out/deep_speed.txt" | head -12
