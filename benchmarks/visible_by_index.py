"""Does `check` say which GPUs a program sees, for CUDA_VISIBLE_DEVICES of indices or whole UUIDs, as CUDA does?

For each value (every index alone, every order of two), `cudnn-doctor check --json` (which reads such a value from
NVML's GPUs, without cuInit: process.visible_from "nvml") beside real PyTorch in a fresh process (CUDA's own
enumeration: each device's PCI bus and device). Prints one JSON object: per value, the PCI buses in CUDA's order by each, and
whether they agree. Run on the GPU machine: python benchmarks/visible_by_index.py
"""

from __future__ import annotations

import itertools
import json
import os
import re
import subprocess
import sys

TORCH = ("import torch; p = torch.cuda.get_device_properties; print(','.join('%02x:%02x' % (p(i).pci_bus_id, "
         "p(i).pci_device_id) for i in range(torch.cuda.device_count())))")


def buses_of_check(env: dict[str, str]) -> tuple[list[str], str | None, object]:
    done = subprocess.run([sys.executable, "-m", "cudnn_doctor", "check", "--json"], env=env, capture_output=True,
                          text=True, timeout=120)
    process = json.loads(done.stdout)["process"]
    visible = process.get("visible") or []
    return [":".join(str(g.get("pci_bus_id") or "").lower().split(":")[1:3]).split(".")[0] for g in visible], \
        process.get("visible_from"), process.get("cuinit")


def buses_of_torch(env: dict[str, str]) -> list[str] | str:
    done = subprocess.run([sys.executable, "-c", TORCH], env=env, capture_output=True, text=True, timeout=300)
    if done.returncode != 0:
        return "torch failed: " + done.stderr.strip().splitlines()[-1]
    return [bus for bus in done.stdout.strip().split(",") if bus]


def main() -> None:
    listed = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True).stdout
    count = listed.count("GPU ")
    uuids = re.findall(r"UUID: (GPU-[0-9a-f-]+)\)", listed)
    values = [str(i) for i in range(count)] + [",".join(map(str, p)) for p in itertools.permutations(range(count), 2)]
    values += uuids + [",".join(p) for p in itertools.permutations(uuids, 2)]  # whole UUIDs, as nvidia-smi -L says
    values += [f"{count - 1},{uuids[0]}"] if count > 1 and uuids else []  # an index and a UUID
    rows = []
    for value in values:
        env = {**os.environ, "CUDA_VISIBLE_DEVICES": value}
        checked, source, cuinit = buses_of_check(env)
        real = buses_of_torch(env)
        rows.append({"CUDA_VISIBLE_DEVICES": value, "check": checked, "visible_from": source, "cuinit_asked": cuinit
                     is not None, "torch": real, "agree": checked == real})
    print(json.dumps({"gpus": count, "values": len(rows), "agree": sum(r["agree"] for r in rows), "rows": rows},
                     indent=1))


if __name__ == "__main__":
    main()
