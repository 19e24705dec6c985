"""How many times plain `check` starts the frameworks' Python, and what it costs, on a pretend machine where all three
questions asked of that Python are open at once (issue 45):

- its start-up (probes/python_start.py): PYTHONHASHSEED is set, a variable Python reads at start;
- what it finds (probes/python_finder.py): torch's own __init__.py loads the 'torch.backends' entry points and a
  distribution in its site-packages names that group (the plugin loads: no finding);
- numpy's CPU kernels (probes/cpu_kernels.py): OPENBLAS_CORETYPE is set (to a value numpy works with: no finding).

The framework's python3 is a shell script that writes a line to a log at every start, then becomes this interpreter
(with the framework's site-packages first on PYTHONPATH, as the tests' stand-in environments do): the log counts the
starts, whatever started them. One more run under `strace -f -e trace=execve` counts every program the check starts,
by name. Wall time: N interleaved runs of `python -m cudnn_doctor check --json` (after one warm-up each), median, min
and max, and the median CPU time (user + system of the check and the children it waited for). Last, the questions
alone, without the rest of check: this interpreter asked all of them in one start, and in three starts side by side.

Usage: python benchmarks/python_children.py [--runs N] [--before DIR] [--json FILE]
  (Linux, gcc, numpy in this interpreter; strace for the per-program count; from the repository's root)
--before DIR also measures another checkout (e.g. `git archive` of the commit before a change, unpacked into DIR).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

# torch/__init__.py's own plugin loading (pytorch torch/__init__.py, 2.5 and later), as the tests' stand-in has it
AUTOLOAD = '''import os
from importlib.metadata import entry_points


def _import_device_backends():
    for backend_extension in entry_points(group="torch.backends"):
        try:
            backend_extension.load()()
        except Exception as err:
            raise RuntimeError(
                f"Failed to load the backend extension: {backend_extension.name}. "
                f"You can disable extension auto-loading with TORCH_DEVICE_BACKEND_AUTOLOAD=0."
            ) from err


if os.getenv("TORCH_DEVICE_BACKEND_AUTOLOAD", "1") == "1":
    _import_device_backends()
'''
CUDNN9 = ["libcudnn_graph", "libcudnn_ops", "libcudnn_cnn", "libcudnn_adv", "libcudnn_engines_precompiled",
          "libcudnn_engines_runtime_compiled", "libcudnn_heuristic"]


def pretend_machine(folder: Path) -> tuple[dict[str, str], Path]:
    """The environment of a machine with a driver (fake NVML 580) and torch 2.11 with its pip cuDNN 9.19 in a
    Python environment whose python3 logs each start; and that log."""
    sys.path.insert(0, str(REPO))
    from tests.fakes.build import fake_cudnn, fake_framework_library, fake_nvml

    root, home = folder / "root", folder / "home"
    for made in (root / "etc", home):
        made.mkdir(parents=True, exist_ok=True)
    fake_nvml(folder / "driver", driver="580.65.06", cuda=13000)
    site = folder / "venv" / "lib" / "python3.12" / "site-packages"
    info = site / "torch-2.11.0+cu130.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: torch\nVersion: 2.11.0+cu130\n"
                                   "Requires-Dist: nvidia-cudnn-cu13==9.19.0.56; platform_system == \"Linux\"\n")
    (site / "torch").mkdir()
    (site / "torch" / "version.py").write_text("__version__ = '2.11.0+cu130'\ncuda: Optional[str] = '13.0'\n")
    (site / "torch" / "__init__.py").write_text(AUTOLOAD)
    fake_framework_library(site / "torch" / "lib" / "libtorch_cuda.so", site, "$ORIGIN/../../nvidia/cudnn/lib")
    fake_cudnn(site / "nvidia" / "cudnn" / "lib", version=91900, cudart=13000, sublibraries=CUDNN9,
               versioned_files=False)
    (site / "nvidia_cudnn_cu13-9.19.0.56.dist-info").mkdir()
    plugin = site / "torch_fakeaccel-1.0.dist-info"  # a plugin that loads: the finder's gate opens, no finding
    plugin.mkdir()
    (plugin / "METADATA").write_text("Metadata-Version: 2.1\nName: torch_fakeaccel\nVersion: 1.0\n")
    (plugin / "entry_points.txt").write_text("[torch.backends]\nfakeaccel = torch_fakeaccel:_autoload\n")
    (site / "torch_fakeaccel.py").write_text("def _autoload():\n    pass\n")
    log = folder / "python-starts.log"
    python = folder / "venv" / "bin" / "python3"
    python.parent.mkdir()
    python.write_text(f"#!/bin/sh\necho started >> {log}\n"
                      f"PYTHONPATH={site}${{PYTHONPATH:+:$PYTHONPATH}} exec {sys.executable} \"$@\"\n")
    python.chmod(0o755)
    env = {"PATH": f"{python.parent}:/usr/bin:/bin:/usr/sbin:/sbin", "HOME": str(home),
           "CUDNN_DOCTOR_SYSTEM_PREFIX": str(root), "CUDNN_DOCTOR_CACHE_DIR": str(folder / "cache"),
           "LANG": "C.UTF-8", "LD_LIBRARY_PATH": str(folder / "driver"),
           "PYTHONHASHSEED": "0",  # read by Python at start: its start-up is asked
           "OPENBLAS_CORETYPE": "Haswell"}  # read by OpenBLAS at numpy's first product: numpy is asked
    return env, log


def cpu_used() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def check_once(checkout: Path, env: dict[str, str], cwd: Path) -> tuple[float, float, dict]:  # type: ignore[type-arg]
    before, started = cpu_used(), time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "cudnn_doctor", "check", "--json"], capture_output=True, cwd=cwd,
                          env={**env, "PYTHONPATH": str(checkout)}, timeout=300)
    wall, cpu = time.perf_counter() - started, cpu_used() - before
    try:
        report = json.loads(done.stdout)
    except ValueError:
        raise SystemExit(f"check of {checkout} did not answer in JSON: {done.stderr.decode()[-500:]}") from None
    return wall, cpu, report


def starts(log: Path) -> int:
    return len([line for line in log.read_text().splitlines() if line.strip()]) if log.exists() else 0


def programs(checkout: Path, env: dict[str, str], cwd: Path) -> dict[str, int]:
    """Every program one check starts (itself included), by name, from strace's successful execve calls."""
    if shutil.which("strace") is None:
        return {}
    with tempfile.NamedTemporaryFile("r") as trace:
        subprocess.run(["strace", "-f", "-qq", "-s", "256", "-e", "trace=execve", "-o", trace.name, sys.executable,
                        "-m", "cudnn_doctor", "check", "--json"], env={**env, "PYTHONPATH": str(checkout)}, cwd=cwd,
                       capture_output=True, timeout=600)
        lines = [line for line in trace.read().splitlines() if "execve(" in line and line.rstrip().endswith("= 0")]
    counted: dict[str, int] = {}
    for line in lines:
        found = re.search(r'execve\("([^"]*)"', line)
        if found:
            name = os.path.basename(found.group(1))
            counted[name] = counted.get(name, 0) + 1
    return dict(sorted(counted.items()))


def children_alone(runs: int, python: str) -> dict[str, list[float]]:
    """Wall seconds of the frameworks' Python asked every question in ONE start (_python_child.py, numpy's question
    forked after the start) and of the same questions in THREE starts side by side (each question's part of the
    request alone, as the three children were started before), interleaved, after a warm-up each."""
    from cudnn_doctor.probes.framework_python import BOOT, CHILD

    parts: list[dict[str, object]] = [{"resolve": ["torch", "jax", "tensorflow"]},
             {"groups": ["torch.backends"], "modules": ["numpy", "typing_extensions", "jaxlib", "ml_dtypes", "scipy"]},
             {"numpy": True}]
    whole = {key: value for part in parts for key, value in part.items()}
    cases: dict[str, list[dict[str, object]]] = {"one start": [whole], "three starts": parts}
    seconds: dict[str, list[float]] = {name: [] for name in cases}
    for round_number in range(runs + 1):
        for name, requests in cases.items():
            started = time.perf_counter()
            children = [subprocess.Popen([python, "-c", BOOT, CHILD, json.dumps(request)], cwd="/",
                                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) for request in requests]
            for child in children:
                child.wait()
            if round_number:  # the first round warms the page cache and bytecode
                seconds[name].append(time.perf_counter() - started)
    return seconds


@dataclass
class Figures:
    """One checkout's figures: the framework Python's starts and the findings of one check, wall and CPU seconds of
    each timed run, and every program one check starts."""

    python_starts: int
    codes: list[str]
    frameworks: list[str]
    wall_s: list[float] = field(default_factory=list)
    cpu_s: list[float] = field(default_factory=list)
    programs: dict[str, int] = field(default_factory=dict)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--before", type=Path, help="another checkout measured the same way")
    parser.add_argument("--json", type=Path, help="write the figures there too")
    options = parser.parse_args()
    checkouts = {"after (this checkout)": REPO}
    if options.before:
        checkouts = {f"before ({options.before.name})": options.before.resolve(), **checkouts}
    figures: dict[str, Figures] = {}
    with tempfile.TemporaryDirectory(prefix="python-children-") as made:
        folder = Path(made)
        env, log = pretend_machine(folder)
        cwd = folder / "work"
        cwd.mkdir()
        for name, checkout in checkouts.items():
            log.write_text("")
            _, _, report = check_once(checkout, env, cwd)  # warm-up: page cache, bytecode, the data cache
            figures[name] = Figures(starts(log), sorted({f["code"] for f in report["findings"]}),
                                    [f["name"] for f in report["frameworks"]])
        for round_number in range(options.runs):  # the order turned each round: neither always runs second
            for name, checkout in list(checkouts.items())[::1 if round_number % 2 == 0 else -1]:
                wall, cpu, _ = check_once(checkout, env, cwd)
                figures[name].wall_s.append(wall)
                figures[name].cpu_s.append(cpu)
        for name, checkout in checkouts.items():
            figures[name].programs = programs(checkout, env, cwd)
    print(f"{'check --json':34} {'Python starts':>13} {'median s':>9} {'min s':>7} {'max s':>7} {'CPU s':>7}  programs")
    for name, row in figures.items():
        print(f"{name:34} {row.python_starts:>13} {statistics.median(row.wall_s):>9.3f} {min(row.wall_s):>7.3f} "
              f"{max(row.wall_s):>7.3f} {statistics.median(row.cpu_s):>7.3f}  "
              + ", ".join(f"{k} {v}" for k, v in row.programs.items()))
        print(f"{'':34} findings: {' '.join(row.codes) or 'none'}; frameworks: {row.frameworks}")
    alone = children_alone(options.runs, sys.executable)
    for name, values in alone.items():
        print(f"the questions alone, {name:13} median {statistics.median(values):.3f} s, min {min(values):.3f} s")
    if options.json:
        options.json.write_text(json.dumps({"checks": {name: asdict(row) for name, row in figures.items()},
                                            "children_alone_s": alone}, indent=1))


if __name__ == "__main__":
    main()
