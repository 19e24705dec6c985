"""`check --deep`: import each framework in a child process and ask it what it really loaded.

Slow (an `import torch` costs seconds), so only on request. The child uses the Python
that owns the framework's site-packages, and reports the cuDNN the framework says it
uses and the libcudnn file actually mapped into the process.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

from cudnn_doctor.model import CudnnInstall, Framework

CHILD_CODE = r"""
import json, os, sys
name = sys.argv[1]
answer = {}
def mapped():
    found = []
    with open("/proc/self/maps") as maps:
        for line in maps:
            path = line.split(None, 5)[-1].strip() if len(line.split(None, 5)) == 6 else ""
            base = os.path.basename(path)
            if base.startswith("libcudnn") and path not in found:
                found.append(path)
    return found
try:
    if name == "torch":
        import torch
        answer["version"] = torch.__version__
        answer["cuda"] = torch.version.cuda
        answer["cudnn_version"] = torch.backends.cudnn.version()
        answer["cuda_available"] = torch.cuda.is_available()
        answer["device_count"] = torch.cuda.device_count() if answer["cuda_available"] else 0
        if answer["cuda_available"]:
            x = torch.randn(1, 3, 8, 8, device="cuda")
            torch.nn.functional.conv2d(x, torch.randn(4, 3, 3, 3, device="cuda"))
            torch.cuda.synchronize()
            answer["conv_ran"] = True
    elif name == "tensorflow":
        import tensorflow as tf
        info = tf.sysconfig.get_build_info()
        answer["version"] = tf.__version__
        answer["cuda"] = info.get("cuda_version")
        answer["cudnn_version"] = info.get("cudnn_version")
        answer["gpus"] = [d.name for d in tf.config.list_physical_devices("GPU")]
    elif name == "jax":
        import jax
        answer["version"] = jax.__version__
        answer["devices"] = [str(d) for d in jax.devices()]
    answer["mapped_cudnn"] = mapped()
except BaseException as error:
    answer["error"] = f"{type(error).__name__}: {error}"
    try:
        answer["mapped_cudnn"] = mapped()
    except OSError:
        pass
print(json.dumps(answer))
"""
TIMEOUT_S = 180.0


def interpreter_for(site_packages: str) -> str | None:
    """The python that owns SITE_PACKAGES: this one, or <prefix>/bin/python3."""
    if site_packages in (os.path.realpath(p) for p in sys.path if p):
        return sys.executable
    prefix = Path(site_packages).parents[2] if "lib" in Path(site_packages).parts else None
    for candidate in ((prefix / "bin" / "python3") if prefix else None, (prefix / "python.exe") if prefix else None):
        if candidate and candidate.exists():
            return str(candidate)
    return None


def ask_framework(framework: Framework) -> dict[str, object]:
    site = str(framework.details.get("site_packages") or "")
    python = interpreter_for(site) if site else None
    if python is None:
        return {"error": f"no Python interpreter found for {site or framework.location}"}
    try:
        process = subprocess.run([python, "-c", CHILD_CODE, framework.name], capture_output=True, text=True,
                                 timeout=TIMEOUT_S, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        return {"error": f"importing {framework.name} did not finish within {TIMEOUT_S:g} s"}
    except OSError as error:
        return {"error": f"could not start {python}: {error}"}
    lines = [line for line in process.stdout.splitlines() if line.startswith("{")]
    if not lines:
        tail = (process.stderr.strip().splitlines() or ["no output"])[-1]
        return {"error": f"the import child exited with {process.returncode}: {tail}"}
    return json.loads(lines[-1])  # type: ignore[no-any-return]


def confirm_frameworks(frameworks: list[Framework], installs: list[CudnnInstall]
                       ) -> tuple[list[Framework], list[CudnnInstall]]:
    """Each Python framework with what it reports at run time under details["deep"]; the cuDNN it really
    mapped replaces the one resolved from files."""
    confirmed = []
    for framework in frameworks:
        if framework.name not in ("torch", "tensorflow", "jax"):
            confirmed.append(framework)
            continue
        answer = ask_framework(framework)
        details = {**framework.details, "deep": answer}
        listed = answer.get("mapped_cudnn")
        mapped = [str(p) for p in (listed if isinstance(listed, list) else [])
                  if os.path.basename(str(p)).startswith("libcudnn.so")]
        used = framework.cudnn_used
        if mapped:
            real = os.path.realpath(mapped[0])
            match = next((i for i in installs if os.path.realpath(i.library) == real), None)
            used = match.library if match else mapped[0]
            installs = [replace(i, loaded_by=tuple(x for x in i.loaded_by if x != framework.name)) for i in installs]
            installs = [replace(i, loaded_by=i.loaded_by + (framework.name,)) if i is match or (
                match and os.path.realpath(i.library) == real) else i for i in installs]
        confirmed.append(replace(framework, details=details, cudnn_used=used))
    return confirmed, installs
