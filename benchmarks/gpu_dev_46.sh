#!/usr/bin/env bash
# Development run of round six (one GPU call): the round-5 set (a development set now) on this tree, cases shown;
# where check --deep spends its seconds; plain check's speed against nvidia-smi -q. bash benchmarks/gpu_dev_46.sh OUT
set -u
out=${1:?usage: gpu_dev_46.sh OUT}
mkdir -p "$out"
timeout 300 python3 benchmarks/gpu_scenarios.py --scenarios benchmarks/held_out/round5/scenarios45.py \
    --out "$out/r5" --budget-s 260 > "$out/r5.txt" 2>&1
tail -c 4000 "$out/r5.txt"
{
for i in 1 2 3; do
  s=$(date +%s.%N); python3 -m cudnn_doctor check --deep --json > /tmp/deep$i.json 2>/dev/null; e=$(date +%s.%N)
  python3 - "$i" "$(python3 -c "print(round($e-$s,2))")" <<'PY'
import json, sys
d = json.load(open(f"/tmp/deep{sys.argv[1]}.json"))
parts = {f["name"]: {k: f.get("details", {}).get("deep", {}).get(k) for k in ("seconds", "imported_at", "devices_at", "error")}
         for f in d["frameworks"]}
print("deep run", sys.argv[1], sys.argv[2], "s", parts, [(f["code"], f["severity"]) for f in d["findings"]])
PY
done
s=$(date +%s.%N); timeout 120 python3 -m torch.utils.collect_env >/dev/null 2>&1; e=$(date +%s.%N); echo "collect_env $(python3 -c "print(round($e-$s,2))") s"
timeout 60 python3 benchmarks/check_speed.py --runs 9 --compare "nvidia-smi -q" --before .before 2>&1 | tail -12
} > "$out/speed.txt" 2>&1
cat "$out/speed.txt"
