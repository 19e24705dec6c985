"""On the GPU machine: what the real torch and JAX do with what probes/python_finder.py asks about, and what plain
`check --json` says of each (issue 45, round nine). Each case is a scratch folder on PYTHONPATH or HOME:

  plugin-gone       a distribution declaring a 'torch.backends' entry point whose module is not there
  plugin-gone-off   the same with TORCH_DEVICE_BACKEND_AUTOLOAD=0
  metadata-latin1   a distribution whose entry_points.txt is Latin-1, not UTF-8
  user-site-shadow  an old typing_extensions in the user site (HOME/.local/lib/pythonX.Y/site-packages)
  zip-shadow        a zip on PYTHONPATH holding typing_extensions

    python3 benchmarks/python_finder_facts.py OUT_DIR

Writes OUT_DIR/python_finder_facts.json: per case, `import torch` / `import jax` (exit, last line) and check's codes.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def dist(folder: Path, name: str, entry_points: bytes) -> None:
    info = folder / f"{name}-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n")
    (info / "entry_points.txt").write_bytes(entry_points)


def run(argv: list[str], env: dict[str, str]) -> dict[str, object]:
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=300, errors="replace")
    tail = [line for line in (done.stderr or done.stdout).splitlines() if line.strip()]
    return {"exit": done.returncode, "said": tail[-1][:300] if tail else ""}


def main() -> int:
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix="cudnn-doctor-finder-"))
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    cases: dict[str, dict[str, str]] = {}
    plugin = scratch / "plugin"
    dist(plugin, "torch_fakeaccel", b"[torch.backends]\nfakeaccel = torch_fakeaccel:_autoload\n")
    cases["plugin-gone"] = {"PYTHONPATH": str(plugin)}
    cases["plugin-gone-off"] = {"PYTHONPATH": str(plugin), "TORCH_DEVICE_BACKEND_AUTOLOAD": "0"}
    latin = scratch / "latin"
    dist(latin, "oldtool", "[console_scripts]\noldtool = oldtool:main  # \u00e9t\u00e9\n".encode("latin-1"))
    cases["metadata-latin1"] = {"PYTHONPATH": str(latin)}
    home = scratch / "home"
    user = home / ".local" / "lib" / version / "site-packages"
    user.mkdir(parents=True)
    (user / "typing_extensions.py").write_text("raise ImportError('an old typing_extensions in the user site')\n")
    cases["user-site-shadow"] = {"HOME": str(home)}
    bundle = scratch / "deps.zip"
    with zipfile.ZipFile(bundle, "w") as archive:
        archive.writestr("typing_extensions.py", "raise ImportError('typing_extensions from a zip')\n")
    cases["zip-shadow"] = {"PYTHONPATH": str(bundle)}
    results = {}
    for name, changes in cases.items():
        env = dict(os.environ, **changes)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (changes.get("PYTHONPATH", ""), os.environ.get("PYTHONPATH", ""))
                                            if p)
        doctor_env = dict(env, PYTHONPATH=os.pathsep.join(p for p in (str(REPO), env["PYTHONPATH"]) if p))
        check = subprocess.run([sys.executable, "-m", "cudnn_doctor", "check", "--json"], env=doctor_env,
                               capture_output=True, text=True, timeout=300, errors="replace")
        try:
            findings = json.loads(check.stdout)["findings"]
        except (ValueError, KeyError):
            findings = []
        results[name] = {"torch": run([sys.executable, "-c", "import torch"], env),
                         "jax": run([sys.executable, "-c", "import jax; print(jax.devices())"], env),
                         "check": sorted({f"{f['code']}:{f['severity']}" for f in findings}),
                         "subjects": [f["subject"] for f in findings if f["code"] == "CD409"]}
        print(name, json.dumps(results[name])[:400])
    (out / "python_finder_facts.json").write_text(json.dumps(results, indent=1))
    shutil.rmtree(scratch, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
