"""PyTorch's allocator settings against the real CUDA build on the GPU machine (issue 45): each value below is set
alone in a child (PYTORCH_CUDA_ALLOC_CONF, PYTORCH_HIP_ALLOC_CONF or PYTORCH_ALLOC_CONF, and some in pairs), the
child makes torch's first CUDA allocation (torch.zeros(1, device="cuda")), and its answer ("ok" or its exception's
first line) is recorded beside cudnn-doctor's own verdict for that environment (rules/process_env.py
alloc_conf_problems with the parsers the data says read it, the installed libraries' names asked as plain check asks
them). "disagree" lists every row where the two differ: each is a data row to correct. Also recorded: which of the
data's newer keys and checks the installed libc10_cuda.so and libc10.so name.

  python3 benchmarks/alloc_conf_edges.py --out DIR      (writes DIR/alloc_conf_edges.json)
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from cudnn_doctor.knowledge.data import load  # noqa: E402
from cudnn_doctor.knowledge.environment import rows  # noqa: E402
from cudnn_doctor.probes.file_words import names_in  # noqa: E402
from cudnn_doctor.rules.process_env import alloc_conf_problems  # noqa: E402

CUDA = "PYTORCH_CUDA_ALLOC_CONF"
VALUES = [
    "max_split_size_mb:20", "max_split_size_mb:19", "max_split_size_mb:512MB", "max_split_size_mb:-1",
    "max_split_size_mb:1e3", "max_split_size_mb:abc", "max_non_split_rounding_mb:19", "max_non_split_rounding_mb:20",
    "large_segment_size_mb:10", "large_segment_size_mb:11", "garbage_collection_threshold:1",
    "garbage_collection_threshold:0.5abc", "roundup_power2_divisions:0", "roundup_power2_divisions:[64:8,>:1]",
    "roundup_power2_divisions:[63:8]", "roundup_power2_divisions:[64:8", "expandable_segments:true",
    "backend:cudaMallocAsync", "backend:nonsense", "release_lock_on_cudamalloc:True",
    "pinned_use_cuda_host_register:True", "pinned_num_register_threads:0", "pinned_num_register_threads:3",
    "pinned_num_register_threads:128", "pinned_num_register_threads:256", "pinned_reserve_segment_size_mb:0",
    "graph_capture_record_stream_reuse:True", "per_process_memory_fraction:1", "per_process_memory_fraction:1.5",
    "pinned_free_catch_all:True", "throw_on_cudamalloc_oom:True", "expandable_segments_reserve:0.5",
    "pinned_max_cached_size_mb:64", "zzz:1", "max_split_mb:128",
]
ENVS: list[dict[str, str]] = [{CUDA: value} for value in VALUES] + [
    {"PYTORCH_HIP_ALLOC_CONF": "max_split_size_mb:10"}, {"PYTORCH_HIP_ALLOC_CONF": "backend:nonsense,zzz:1"},
    {"PYTORCH_ALLOC_CONF": "zzz:1"}, {"PYTORCH_ALLOC_CONF": "max_split_size_mb:10"},
    {CUDA: "max_split_size_mb:64", "PYTORCH_ALLOC_CONF": "max_split_size_mb:10,zzz:1"},
    {CUDA: "max_split_size_mb:64", "PYTORCH_HIP_ALLOC_CONF": "max_split_size_mb:10"},
    {"PYTORCH_ALLOC_CONF": "max_split_size_mb:64", "PYTORCH_HIP_ALLOC_CONF": "max_split_size_mb:10"},
]
CHILD = ("import warnings\nwarnings.simplefilter('ignore')\nimport torch\n"
         "try:\n    torch.zeros(1, device='cuda')\n    print('ok')\n"
         "except Exception as error:\n    print(type(error).__name__ + ': ' + str(error).splitlines()[0][:200])\n")


def libraries() -> list[str]:
    import torch  # the installed torch's own libraries, as plain check's probe reads them

    folder = os.path.join(os.path.dirname(torch.__file__), "lib")
    return sorted(glob.glob(os.path.join(folder, "libc10_cuda.so")) + glob.glob(os.path.join(folder, "libc10.so")))


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    out = Path(parser.parse_args().out)
    out.mkdir(parents=True, exist_ok=True)
    files = libraries()
    keys = [row["key"] for row in load("process_env")["alloc_conf_key"]] + ["zzz", "max_split_mb"]
    texts = [row["check_text"] for row in load("process_env")["alloc_conf_key"] if row.get("check_text")]
    named = sorted(names_in(files, keys + texts) or [])
    known, names = rows(), (CUDA, "PYTORCH_HIP_ALLOC_CONF", "PYTORCH_ALLOC_CONF")
    base = {key: value for key, value in os.environ.items() if key not in names}
    results = []
    for env in ENVS:
        child = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, timeout=300,
                               env={**base, **env})
        torch_says = (child.stdout.strip().splitlines() or [f"exit {child.returncode}: {child.stderr[-300:]}"])[-1]
        ours = []
        for name, value in env.items():
            row = known[name]
            parsers = tuple(entry["parser"] for entry in row.get("alloc_parsers", [])
                            if not any(other in env for other in entry.get("unless", [])))
            ours += alloc_conf_problems(value, tuple(named), parsers) if parsers else []
        results.append({"env": env, "torch": torch_says, "check": ours,
                        "agree": (torch_says == "ok") == (not ours)})
    report = {"libraries": files, "named": named, "results": results,
              "disagree": [row for row in results if not row["agree"]]}
    (out / "alloc_conf_edges.json").write_text(json.dumps(report, indent=1))
    print(f"{len(results)} environments, {len(report['disagree'])} disagree; {out / 'alloc_conf_edges.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
