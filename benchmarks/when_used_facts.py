"""Settings read only when a program uses a feature (compat/process_env.toml [[feature]], issue 45 round twelve),
against the real frameworks on the GPU machine.

Each value below looks wrong and is set alone: torch's first GPU work (a cuDNN convolution and an LSTM), JAX's (a
convolution) and plain `cudnn-doctor check --json`'s findings for that variable are recorded side by side.
"false_error" where both frameworks ran and check raised an error for it; "kept_refusal" for the values that must stay
errors (TORCH_DISTRIBUTED_DEBUG, read as `import torch` imports torch.distributed): torch failed and check said an
error. Run on a machine with one GPU (or with CUDA_VISIBLE_DEVICES=0) to see the collective's settings said as info.

  python3 benchmarks/when_used_facts.py --out DIR      (writes DIR/when_used_facts.json)
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from settings_facts import check_says, run  # noqa: E402

TORCH = ("import torch; x=torch.randn(2,8,16,16,device='cuda'); "
         "y=torch.nn.functional.conv2d(x, torch.randn(8,8,3,3,device='cuda')); "
         "l=torch.nn.LSTM(16,16).cuda(); o=l(torch.randn(4,2,16,device='cuda'))[0]; torch.cuda.synchronize(); "
         "print('torch ok', tuple(y.shape), tuple(o.shape), torch.backends.cudnn.version())")
JAX = ("import jax, jax.numpy as j; x=j.ones((2,8,16,16)); "
       "jax.lax.conv_general_dilated(x, j.ones((8,8,3,3)), (1,1), 'SAME').block_until_ready(); "
       "print('jax ok', jax.devices())")

CASES = {  # variable -> values that look wrong, by class
    # NCCL and torch.distributed: read at the first collective
    "NCCL_DEBUG": ["LOUD"], "NCCL_SOCKET_IFNAME": ["nosuchif0"], "NCCL_P2P_LEVEL": ["BOGUS"],
    "NCCL_IB_HCA": ["mlx9_9"], "NCCL_P2P_DISABLE": ["maybe"], "NCCL_PROTO": ["LL,Fast"], "NCCL_NTHREADS": ["100"],
    "NCCL_TOPO_FILE": ["/nonexistent/topo.xml"], "TORCH_NCCL_BLOCKING_WAIT": ["maybe"],
    "TORCH_NCCL_ASYNC_ERROR_HANDLING": ["9"], "TORCH_NCCL_TRACE_BUFFER_SIZE": ["lots"], "MASTER_PORT": ["99999"],
    "MASTER_ADDR": ["no.such.host"], "RANK": ["-1"], "WORLD_SIZE": ["0", "two"], "LOCAL_WORLD_SIZE": ["0"],
    # compilers and torch.compile's caches and modes
    "CC": ["/nonexistent/gcc"], "CXX": ["/nonexistent/g++"], "NVCC_PREPEND_FLAGS": ["--no-such-flag"],
    "NVCC_APPEND_FLAGS": ["-bogus"], "TORCHINDUCTOR_CACHE_DIR": ["/etc/hostname/sub"],
    "TRITON_CACHE_DIR": ["/etc/hostname/sub"], "TORCHINDUCTOR_MAX_AUTOTUNE": ["maybe"],
    "TORCHINDUCTOR_COMPILE_THREADS": ["many"], "TRITON_INTERPRET": ["maybe"], "TORCH_EXTENSIONS_DIR": ["/proc/nope"],
    # CUDA's debugger, core dumps, clocks, JIT cache
    "CUDA_DEVICE_WAITS_ON_EXCEPTION": ["1", "2"], "CUDA_ENABLE_COREDUMP_ON_EXCEPTION": ["yes"],
    "CUDA_COREDUMP_FILE": ["/etc/hostname/core"], "CUDA_DEBUGGER_SOFTWARE_PREEMPTION": ["maybe"],
    "CUDA_AUTO_BOOST": ["7"], "CUDA_CACHE_PATH": ["/etc/hostname/sub"], "CUDA_CACHE_MAXSIZE": ["-1"],
    # cuBLAS's FP32 emulation
    "CUBLAS_EMULATE_SINGLE_PRECISION": ["maybe", "1"], "CUBLAS_EMULATION_STRATEGY": ["fastest"],
    # Apple MPS's and ROCm's on a CUDA build
    "PYTORCH_MPS_HIGH_WATERMARK_RATIO": ["abc"], "PYTORCH_ENABLE_MPS_FALLBACK": ["maybe"],
    "HIP_VISIBLE_DEVICES": ["7"], "ROCR_VISIBLE_DEVICES": ["bogus"], "MIOPEN_FIND_MODE": ["bogus"],
    "PYTORCH_HIP_ALLOC_CONF": ["backend:cudaMallocAsync,garbage_key:1"],
}
REFUSED = {"TORCH_DISTRIBUTED_DEBUG": ["LOUD", ""], "PYTORCH_HIP_ALLOC_CONF": ["expandable_segments:maybe"]}


def one(variable: str, value: str) -> dict[str, object]:
    env = {**os.environ, variable: value}
    jax_env = {**env, "XLA_PYTHON_CLIENT_PREALLOCATE": "false"}
    with ThreadPoolExecutor(3) as pool:
        torch_run = pool.submit(run, [sys.executable, "-c", TORCH], env)
        jax_run = pool.submit(run, [sys.executable, "-c", JAX], jax_env)
        said_run = pool.submit(check_says, {variable: value}, variable)
        torch, jax, said = torch_run.result(), jax_run.result(), said_run.result()
    errors = [f for f in said if isinstance(f, dict) and f.get("severity") == "error"] if isinstance(said, list) else []
    return {"variable": variable, "value": value, "torch": torch, "jax": jax, "check": said,
            "false_error": bool(errors) and torch.get("rc") == 0 and jax.get("rc") == 0,
            "kept_refusal": bool(errors) and (torch.get("rc") != 0 or jax.get("rc") != 0)}


def _failed(result: dict[str, object]) -> bool:
    return any(not isinstance(result[name], dict) or result[name].get("rc") != 0  # type: ignore[attr-defined]
               for name in ("torch", "jax"))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, type=Path)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    looks_wrong = [one(name, value) for name, values in CASES.items() for value in values]
    refused = [one(name, value) for name, values in REFUSED.items() for value in values]
    summary = {"cases": len(looks_wrong), "false_errors": [r["variable"] for r in looks_wrong if r["false_error"]],
               "frameworks_failed": [f"{r['variable']}={r['value']}" for r in looks_wrong if _failed(r)],
               "refusals_kept": sum(bool(r["kept_refusal"]) for r in refused), "refusals": len(refused)}
    (args.out / "when_used_facts.json").write_text(json.dumps(
        {"summary": summary, "looks_wrong": looks_wrong, "refused": refused}, indent=1))
    print(json.dumps(summary, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
