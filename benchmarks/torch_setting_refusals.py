"""Which TORCH_* and PYTORCH_* values the installed torch itself refuses at `import torch` and its first step, or JAX_*
values the installed jax refuses at `import jax` and its first compilation (--framework jax) (issue 45, round
eleven): every such name its Python files and libraries hold is set at once to a value (`x`, then empty);
where the import fails, the names are halved until the one that fails alone is found, taken out, and the rest tried
again. Prints each refusal with torch's own last line. On the GPU machine the first step is a CUDA tensor.

    python3 benchmarks/torch_setting_refusals.py --site SITE_PACKAGES [--framework torch|jax] [--values x ''] \
        [--cuda] [--out FILE.json]

Facts for compat/process_env.toml: a refusal seen here is a rule proven against the real torch (its row's proof).
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

PREFIXES = {"torch": rb"(?:PYTORCH|TORCH)_", "jax": rb"JAX_"}
LEFT_OUT = {"TORCH_CUDA_ARCH_LIST", "TORCH_HOME", "TORCH_EXTENSIONS_DIR",  # build-time and data folders
            "JAX_PLATFORMS", "JAX_PLATFORM_NAME"}  # the run's own (the CPU here)
PROGRAM = {"torch": "import torch; torch.ones(3{device}) + 1; print('ok')",
           "jax": "import jax; print(jax.jit(lambda x: x + 1)(jax.numpy.ones(3)))"}  # its first compilation
FRAMEWORK = "torch"


def names_in(site: Path) -> list[str]:
    name = re.compile(rb"['\"](" + PREFIXES[FRAMEWORK] + rb"[A-Z0-9_]{2,})['\"]")
    held = re.compile(rb"\x00(" + PREFIXES[FRAMEWORK] + rb"[A-Z0-9_]{2,})\x00")
    found: set[str] = set()
    for path in glob.glob(str(site / FRAMEWORK / "**" / "*.py"), recursive=True):
        if "/testing/" not in path and not path.endswith("test_util.py"):
            found |= {m.decode() for m in name.findall(Path(path).read_bytes())}
    for path in glob.glob(str(site / FRAMEWORK / "lib" / "*.so*")):
        found |= {m.decode() for m in held.findall(Path(path).read_bytes())}
    return sorted(found - LEFT_OUT)


def run(site: Path, env: dict[str, str], cuda: bool) -> subprocess.CompletedProcess[str]:
    code = PROGRAM[FRAMEWORK].format(device=", device='cuda'" if cuda else "")
    whole = {"PATH": "/usr/bin:/bin", "HOME": os.environ.get("HOME", "/tmp"), "PYTHONPATH": str(site), **env}
    if FRAMEWORK == "jax" and not cuda:
        whole["JAX_PLATFORMS"] = "cpu"
    with tempfile.TemporaryDirectory() as folder:  # what a value makes in the working folder (TORCH_LOGS_OUT=x) stays
        return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=whole, timeout=600,
                              stdin=subprocess.DEVNULL, cwd=folder)


def refusing(site: Path, names: list[str], value: str, cuda: bool) -> str | None:
    """The one name of NAMES that fails the import alone (halving), or None where none does."""
    if run(site, {n: value for n in names}, cuda).returncode == 0:
        return None
    while len(names) > 1:
        half = names[:len(names) // 2]
        names = half if run(site, {n: value for n in half}, cuda).returncode != 0 else names[len(names) // 2:]
    return names[0]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--site", required=True, type=Path)
    parser.add_argument("--framework", choices=sorted(PREFIXES), default="torch")
    parser.add_argument("--values", nargs="+", default=["x", ""])
    parser.add_argument("--cuda", action="store_true", help="the first step on the GPU")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    global FRAMEWORK
    FRAMEWORK = args.framework
    names = names_in(args.site)
    version = run(args.site, {}, False)
    print(f"{len(names)} names; torch without them: {version.stdout.strip() or version.stderr.strip()[-200:]}")
    facts = []
    for value in args.values:
        left = list(names)
        while (name := refusing(args.site, left, value, args.cuda)) is not None:
            said = run(args.site, {name: value}, args.cuda).stderr.strip().splitlines()
            facts.append({"variable": name, "value": value, "said": said[-1] if said else ""})
            print(f"{name}={value!r}: {facts[-1]['said']}")
            left.remove(name)
    if args.out:
        args.out.write_text(json.dumps(facts, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
