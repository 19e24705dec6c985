"""How long `check` takes on a machine with many copies of cuDNN, under a low open-file limit (issue 22, class 10).

Usage: python benchmarks/many_copies.py [--copies 600] [--open-files 1024] [--runs 3] [--package DIR]...

Builds a pretend machine (as the tests do: CUDNN_DOCTOR_SYSTEM_PREFIX on an empty root, a HOME of its own)
with COPIES conda environments, each with the pip wheel's layout of cuDNN 9 in its site-packages
(`nvidia/cudnn/lib/libcudnn.so.9` and its eight sub-libraries, the wheel's dist-info); the libraries are
gcc-built fakes from tests/fakes (gcc needed). Runs `python -m cudnn_doctor check --json` under
`ulimit -n OPEN_FILES` RUNS times after one warm-up run, and prints the wall times, the copies reported and
the doctor's own probe timings as JSON. Each `--package DIR` (a checkout, e.g. one of an older commit from
`git archive`) is timed on the same pretend machine, runs alternating between them; default: this checkout.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

SUBLIBRARIES = ["libcudnn_graph", "libcudnn_engines_precompiled", "libcudnn_engines_runtime_compiled",
                "libcudnn_heuristic", "libcudnn_ops", "libcudnn_cnn", "libcudnn_adv", "libcudnn_ext"]


def build_machine(where: Path, copies: int, package: Path = ROOT) -> dict[str, str]:
    from tests.fakes.build import fake_cudnn

    template = fake_cudnn(where / "template", version=91900, sublibraries=SUBLIBRARIES, versioned_files=False)
    home = where / "home"
    for index in range(copies):
        site = home / "miniconda3" / "envs" / f"env{index}" / "lib" / "python3.12" / "site-packages"
        folder = site / "nvidia" / "cudnn" / "lib"
        folder.mkdir(parents=True)
        for library in template.parent.iterdir():
            os.link(library, folder / library.name)  # hard links: 600 copies, one file's disk
        (site / "nvidia_cudnn_cu12-9.19.0.56.dist-info").mkdir()
    (where / "root" / "etc").mkdir(parents=True)
    return {
        "PATH": "/usr/bin:/bin:/usr/sbin:/sbin", "HOME": str(home), "LANG": "C.UTF-8",
        "CUDNN_DOCTOR_SYSTEM_PREFIX": str(where / "root"), "CUDNN_DOCTOR_CACHE_DIR": str(where / "cache"),
        "PYTHONPATH": str(package),
    }


def run_check(env: dict[str, str], open_files: int, cwd: Path) -> tuple[float, dict]:
    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (open_files, open_files))

    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "cudnn_doctor", "check", "--json"], env=env, cwd=cwd,
                          capture_output=True, text=True, preexec_fn=limit, stdin=subprocess.DEVNULL, timeout=900)
    elapsed = time.perf_counter() - started
    return elapsed, json.loads(done.stdout)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--copies", type=int, default=600)
    parser.add_argument("--open-files", type=int, default=1024)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--package", action="append", type=Path, default=[])
    options = parser.parse_args()
    packages = [p.resolve() for p in options.package] or [ROOT]
    where = Path(tempfile.mkdtemp(prefix="cudnn-doctor-many-copies-"))
    try:
        base = build_machine(where, options.copies)
        envs = {package: {**base, "PYTHONPATH": str(package)} for package in packages}
        for env in envs.values():
            run_check(env, options.open_files, where)  # warm-up: the parsed-data cache, the page cache
        times: dict[Path, list[float]] = {package: [] for package in packages}
        reports: dict[Path, dict] = {}
        loads = []
        for _ in range(options.runs):
            for package, env in envs.items():
                elapsed, reports[package] = run_check(env, options.open_files, where)
                times[package].append(elapsed)
                loads.append(os.getloadavg()[0])
        results = []
        for package in packages:
            installs = reports[package].get("cudnn", [])
            results.append({
                "package": str(package), "copies": options.copies, "open_files": options.open_files,
                "cores": os.cpu_count(), "runs": len(times[package]),
                "median_s": round(statistics.median(times[package]), 2), "min_s": round(min(times[package]), 2),
                "max_s": round(max(times[package]), 2),
                "copies_reported": len(installs),
                "copies_with_version": sum(1 for i in installs if i.get("version") == "9.19.0"),
                "timings_ms": reports[package].get("timings_ms"),
            })
        print(json.dumps({"load_average_during_runs": [round(min(loads), 1), round(max(loads), 1)],
                          "results": results}, indent=2))
    finally:
        shutil.rmtree(where, ignore_errors=True)


if __name__ == "__main__":
    main()
