#!/usr/bin/env bash
# Round seven's last GPU call for issue 45, in the order its figures matter: the sealed scenarios (written apart,
# figures only) on this tree with the judges of the before run (the same frameworks' verdicts); speed against
# .before/ (the round's first commit) in the same rounds; cuDNN's CUDNN_LIB_CONFIG asked of torch and JAX; round six's
# development set again.   bash benchmarks/gpu_final_47.sh OUT [SEALED] [JUDGES]
set -u
out=${1:?usage: gpu_final_47.sh OUT [SEALED] [JUDGES]}
sealed=${2:-.sealed/round7/scenarios45}
judges=${3:-}
mkdir -p "$out"
cd "$(dirname "$0")/.."
timeout 200 python3 benchmarks/gpu_scenarios.py --scenarios "$sealed/scenarios.py" --out "$out/s7after" \
    --quiet-cases --budget-s 185 ${judges:+--judges "$judges"} > "$out/s7after.txt" 2>&1
tail -c 1000 "$out/s7after.txt"
timeout 100 bash benchmarks/gpu_speed_47.sh "$out/speed" .before > "$out/speed.txt" 2>&1
grep -E "median_exit_ms|\"command\"|median_s|collect_env|check --deep" "$out/speed.txt" | head -30
# cuDNN's library configuration (CUDNN_LIB_CONFIG: FULL, GRAPH_JIT_ONLY), asked of torch's convolution and LSTM and
# JAX's convolution: the facts behind its row in compat/process_env.toml
for value in GRAPH_JIT_ONLY NOT_A_MODE; do
  echo "== CUDNN_LIB_CONFIG=$value"
  CUDNN_LIB_CONFIG=$value timeout 40 python3 -c "import torch; x=torch.randn(2,8,16,16,device='cuda'); torch.nn.functional.conv2d(x, torch.randn(8,8,3,3,device='cuda')); l=torch.nn.LSTM(16,16).cuda(); l(torch.randn(4,2,16,device='cuda')); torch.cuda.synchronize(); print('torch ok')" 2>&1 | tail -2
  CUDNN_LIB_CONFIG=$value timeout 40 python3 -c "import jax, jax.numpy as j; x=j.ones((2,8,16,16)); jax.lax.conv_general_dilated(x, j.ones((8,8,3,3)), (1,1), 'SAME').block_until_ready(); print('jax ok')" 2>&1 | tail -1
done
timeout 170 python3 benchmarks/gpu_scenarios.py --scenarios benchmarks/held_out/round6/scenarios45.py \
    --out "$out/r6" --budget-s 150 > "$out/r6.txt" 2>&1
tail -c 700 "$out/r6.txt"
