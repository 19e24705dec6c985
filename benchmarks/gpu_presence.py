"""On the GPU machine: what `check` reads of the NVIDIA devices in it (issue 44), and that a machine with a GPU and
its driver gets no CD159 ("No NVIDIA GPU in this machine").

    python3 benchmarks/gpu_presence.py OUT_DIR

Writes OUT_DIR/gpu_presence.json (the PCI devices `check` saw, the GPUs NVML named, the finding codes) and prints
one line; exit 1 where the GPU is not seen on the PCI bus or CD159 is said.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def main() -> int:
    out = Path(sys.argv[1] if len(sys.argv) > 1 else "gpu-presence")
    out.mkdir(parents=True, exist_ok=True)
    done = subprocess.run([sys.executable, "-m", "cudnn_doctor", "check", "--json"], capture_output=True, text=True,
                          cwd=REPO, timeout=300)
    report = json.loads(done.stdout)
    result = {"nvidia_devices": report["host"]["platform"]["nvidia_devices"],
              "gpus": [gpu["name"] for gpu in report["gpus"]],
              "codes": sorted({finding["code"] for finding in report["findings"]})}
    (out / "gpu_presence.json").write_text(json.dumps(result, indent=2))
    good = bool(result["nvidia_devices"]) and "CD159" not in result["codes"]
    print(("ok: " if good else "NOT ok: ") + json.dumps(result))
    return 0 if good else 1


if __name__ == "__main__":
    raise SystemExit(main())
