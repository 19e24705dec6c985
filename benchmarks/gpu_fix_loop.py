"""The treatment plan on a real GPU machine, closed loop: break a working PyTorch the way users do, ask
`cudnn-doctor fix`, apply what it says, and run a real cuDNN convolution.

  A. LD_LIBRARY_PATH=/lib/x86_64-linux-gnu (the system cuDNN first): torch's pip cuDNN opens its sub-libraries
     from there and its first convolution fails. The plan must be one env change; sourced, torch runs and
     torch.backends.cudnn.version() is what torch was built with.
  B. a venv whose torch lacks its cuDNN wheel (made by hard-linking the image's torch environment without
     nvidia-cudnn-cu*, and rebuilding that wheel from the installed files as a local package index): the plan
     must be that venv's pip, offline; applied with `fix --yes`, torch's convolution runs.

Run on the GPU machine from the checkout: `python3 benchmarks/gpu_fix_loop.py` (prints everything it does).
"""

from __future__ import annotations

import base64
import csv
import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CONV = ("import torch; x = torch.randn(8, 64, 56, 56, device='cuda'); w = torch.randn(128, 64, 3, 3, device='cuda'); "
        "y = torch.nn.functional.conv2d(x, w, padding=1); torch.cuda.synchronize(); "
        "print('conv ok', tuple(y.shape), 'cudnn', torch.backends.cudnn.version(), 'torch', torch.__version__)")


def run(argv: list[str], env: dict[str, str] | None = None, shell: bool = False) -> subprocess.CompletedProcess[str]:
    shown = argv if isinstance(argv, str) else " ".join(argv)
    print(f"\n$ {shown}", flush=True)
    process = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=900, shell=shell)
    out = (process.stdout + process.stderr).strip()
    lines = out.splitlines()
    print("\n".join(lines[-40:]) if len(lines) > 40 else out)
    print(f"(exit {process.returncode})", flush=True)
    return process


def doctor(*args: str) -> list[str]:
    return [sys.executable, "-m", "cudnn_doctor", *args]


def scenario_a() -> None:
    print("\n=== A. LD_LIBRARY_PATH=/lib/x86_64-linux-gnu ahead of torch's own cuDNN ===")
    env = dict(os.environ, LD_LIBRARY_PATH="/lib/x86_64-linux-gnu")
    run([sys.executable, "-c", CONV], env)
    run(doctor("check"), env)
    plan = json.loads(run(doctor("fix", "--json"), env).stdout)
    lines = [a["text"] for a in plan["actions"] if a["kind"] == "env"]
    print("plan actions:", [(a["kind"], a["resolves"]) for a in plan["actions"]])
    script = "; ".join(lines + [f"{shlex_quote(sys.executable)} -c {shlex_quote(CONV)}"])
    run(["bash", "-c", script], env)
    run(doctor("fix", "--yes"), env)  # the whole plan: an offline machine cannot have onnxruntime-gpu, so it stops first
    run(doctor("fix", "--yes", "--ignore", "CD406"), env)  # the cuDNN treatment alone


def shlex_quote(text: str) -> str:
    import shlex

    return shlex.quote(text)


def rebuild_wheel(dist_info: Path, site: Path, folder: Path) -> Path:
    """The installed distribution DIST_INFO as a wheel again (its RECORD's files), for a local package index."""
    name, version = dist_info.name.removesuffix(".dist-info").rsplit("-", 1)
    target = folder / f"{name}-{version}-py3-none-manylinux_2_27_x86_64.whl"
    rows = list(csv.reader(io.StringIO((dist_info / "RECORD").read_text())))
    record = []
    with zipfile.ZipFile(target, "w", zipfile.ZIP_STORED) as wheel:
        for row in rows:
            path = row[0]
            if not path or path.endswith("RECORD") or path.startswith(".."):
                continue
            file = site / path
            if not file.is_file():
                continue
            data = file.read_bytes()
            digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
            wheel.writestr(path, data)
            record.append(f"{path},sha256={digest},{len(data)}")
        record.append(f"{dist_info.name}/RECORD,,")
        wheel.writestr(f"{dist_info.name}/RECORD", "\n".join(record) + "\n")
    return target


def scenario_b() -> None:
    print("\n=== B. a venv whose torch lacks its cuDNN wheel ===")
    import torch

    site = Path(torch.__file__).resolve().parents[1]
    venv = Path("/opt/fix-loop-venv")
    shutil.rmtree(venv, ignore_errors=True)
    run([sys.executable, "-m", "venv", "--without-pip", str(venv)])
    [venv_site] = list((venv / "lib").glob("python3*/site-packages"))
    cudnn_infos = sorted(site.glob("nvidia_cudnn_cu*.dist-info"))
    print("torch's site-packages:", site, "cuDNN wheels there:", [p.name for p in cudnn_infos])
    wheels = Path("/tmp/fix-loop-wheels")
    shutil.rmtree(wheels, ignore_errors=True)
    wheels.mkdir()
    for info in cudnn_infos:
        print("rebuilt", rebuild_wheel(info, site, wheels))
    skip = {"cudnn"}
    for entry in site.iterdir():
        if entry.name.startswith("nvidia_cudnn_cu") or entry.name == "__pycache__":
            continue
        target = venv_site / entry.name
        if entry.name == "nvidia" and entry.is_dir():
            target.mkdir(exist_ok=True)
            for sub in entry.iterdir():
                if sub.name not in skip:
                    subprocess.run(["cp", "-al", str(sub), str(target / sub.name)], check=False)
            continue
        if subprocess.run(["cp", "-al", str(entry), str(target)]).returncode != 0:
            subprocess.run(["cp", "-a", str(entry), str(target)], check=True)
    python = str(venv / "bin" / "python")
    env = dict(os.environ, PIP_NO_INDEX="1", PIP_FIND_LINKS=str(wheels), PIP_DISABLE_PIP_VERSION_CHECK="1")
    env.pop("LD_LIBRARY_PATH", None)
    run([python, "-c", CONV], env)
    run(["cat", str(venv / "pyvenv.cfg")], env)
    run([python, "-I", "-S", "-c", "import sys; print(sys.executable, sys.prefix, sys.base_prefix, sys.path)"], env)
    run([sys.executable, "-c", f"from cudnn_doctor.probes.context import interpreter_paths; "
                               f"print(interpreter_paths({python!r}))"], env)
    run(doctor("check", "--python", python), env)
    run(doctor("fix", "--python", python), env)
    run(doctor("fix", "--yes", "--python", python), env)  # stops before anything: onnxruntime-gpu cannot be had here
    run(doctor("fix", "--yes", "--python", python, "--ignore", "CD406"), env)  # the cuDNN treatment alone
    run([python, "-c", CONV], env)


if __name__ == "__main__":
    os.chdir(ROOT)
    run([sys.executable, "-c", CONV])
    scenario_a()
    scenario_b()
