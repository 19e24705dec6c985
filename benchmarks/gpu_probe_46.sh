#!/usr/bin/env bash
# Session probes for issue 45, round six (one GPU call): the sealed set's "before" figure and the facts the round's
# rules and speed work need. bash benchmarks/gpu_probe_46.sh OUT
set -u
out=${1:?usage: gpu_probe_46.sh OUT}
mkdir -p "$out/s6before"
p=$out/probes.txt
if [ "${SEALED:-1}" != 0 ]; then
  timeout 430 python3 benchmarks/gpu_scenarios.py --scenarios .sealed/round6/scenarios45/scenarios.py \
      --out "$out/s6before" --quiet-cases --doctor-tree .before --budget-s 400 > "$out/s6before.txt" 2>&1
  tail -c 1200 "$out/s6before.txt"
fi
python3 -c "import sys; sys.path.insert(0, 'benchmarks'); import gpu_scenarios as g; open('/tmp/tj.py','w').write(g.TORCH_JUDGE); open('/tmp/jj.py','w').write(g.JAX_JUDGE)"
{
echo "== timing floor"
for code in "import torch" "import torch; torch.zeros(1, device='cuda')" \
  "import torch; x=torch.randn(8,64,56,56,device='cuda'); w=torch.randn(128,64,3,3,device='cuda'); torch.nn.functional.conv2d(x,w,padding=1); torch.cuda.synchronize()" \
  "import jax" "import jax; jax.devices()" "import jax.numpy as jnp, jax; x=jnp.ones((8,64,56,56)); w=jnp.ones((128,64,3,3)); jax.lax.conv_general_dilated(x,w,(1,1),'SAME').block_until_ready()"; do
  s=$(date +%s.%N); timeout 120 python3 -c "$code" >/dev/null 2>&1; rc=$?; e=$(date +%s.%N)
  echo "$(python3 -c "print(round($e-$s,2))") s rc=$rc :: $code"
done
s=$(date +%s.%N); timeout 120 python3 -m torch.utils.collect_env >/dev/null 2>&1; e=$(date +%s.%N); echo "collect_env $(python3 -c "print(round($e-$s,2))") s"
s=$(date +%s.%N); timeout 120 nvidia-smi -q >/dev/null 2>&1; e=$(date +%s.%N); echo "nvidia-smi -q $(python3 -c "print(round($e-$s,2))") s"
for tree in . .before; do
  s=$(date +%s.%N); (cd $tree && timeout 120 python3 -m cudnn_doctor check --deep --json > /tmp/deep.json 2>/dev/null); e=$(date +%s.%N)
  echo "check --deep [$tree] $(python3 -c "print(round($e-$s,2))") s"
  s=$(date +%s.%N); (cd $tree && timeout 120 python3 -m cudnn_doctor check --json > /tmp/plain.json 2>/dev/null); e=$(date +%s.%N)
  echo "check [$tree] $(python3 -c "print(round($e-$s,2))") s"
done
python3 -X importtime -m cudnn_doctor check --deep --json 2>/tmp/imp.txt >/dev/null; sort -t'|' -k2 -n /tmp/imp.txt | tail -8
timeout 90 python3 benchmarks/check_timeline.py --runs 3 --profile 2>&1 | tail -45
echo "== stack limits (torch judge, jax judge)"
for s in 64 128 256 512 1024; do
  t=$( (ulimit -S -s $s; timeout 120 python3 /tmp/tj.py 2>&1 | tail -c 200 | tr '\n' ' '); echo " rc=$?")
  j=$( (ulimit -S -s $s; timeout 120 python3 /tmp/jj.py 2>&1 | tail -c 200 | tr '\n' ' '); echo " rc=$?")
  echo "stack $s KiB: torch: $t"; echo "stack $s KiB: jax: $j"
done
echo "== XLA_FLAGS parsed on the CPU"
for flags in "--xla_gpu_autotune_level=high" "--xla_gpu_autotune_level=2" "--xla_no_such_flag=1" "--xla_dump_hlo_as_text=maybe" "--xla_gpu_enable_triton_gemm=false"; do
  s=$(date +%s.%N); r=$(JAX_PLATFORMS=cpu XLA_FLAGS="$flags" timeout 60 python3 -c "import jax.numpy as jnp; print((jnp.zeros(2)+1).sum())" 2>&1 | head -c 300 | tr '\n' ' '); rc=$?; e=$(date +%s.%N)
  echo "$flags: $(python3 -c "print(round($e-$s,2))") s :: $r"
done
echo "== ptxas"
which -a ptxas; ls "$(python3 -c 'import jax, os; print(os.path.dirname(os.path.dirname(jax.__file__)))')/nvidia" 2>&1 | tr '\n' ' '; echo
python3 -c "import importlib.metadata as m; print([d.metadata['Name']+'=='+d.version for d in m.distributions() if 'jax' in d.metadata['Name'].lower() or 'nvcc' in d.metadata['Name'].lower()])"
} > "$p" 2>&1
cat "$p" | tail -c 7000
