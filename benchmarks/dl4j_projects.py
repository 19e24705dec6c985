"""What `cudnn-doctor check --project` finds at the root of real DL4J projects.

Usage: python benchmarks/dl4j_projects.py [--json] [LABEL=]PATH ...
Each PATH is a checkout of a DL4J project (for example deeplearning4j/deeplearning4j-examples at a
commit, extracted with `git --git-dir=REPO.git archive COMMIT | tar -x -C PATH` or `git worktree add`);
LABEL (e.g. the commit) names it in the output, else the path does. Nothing of those projects is kept
here: they are read where they lie. For each one, prints the DL4J records `check --json --project`
reported (version, backend, modules, CUDA, the cuDNN it needs, the cuDNN it found), the DL4J finding
codes, and the wall time of the whole `check`.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def run_check(path: str) -> tuple[dict[str, Any], float]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    started = time.perf_counter()
    result = subprocess.run([sys.executable, "-m", "cudnn_doctor", "check", "--json", "--project", path],
                            capture_output=True, text=True, env=env, timeout=300, stdin=subprocess.DEVNULL)
    elapsed = time.perf_counter() - started
    try:
        return json.loads(result.stdout), elapsed
    except json.JSONDecodeError:
        return {"error": (result.stderr or result.stdout).strip()[:300], "exit_code": result.returncode}, elapsed


def summarize(label: str, path: str) -> dict[str, Any]:
    report, elapsed = run_check(path)
    if "error" in report:
        return {"project": label, "error": report["error"], "exit_code": report["exit_code"],
                "seconds": round(elapsed, 2)}
    records = []
    for framework in report.get("frameworks", []):
        if framework.get("name") != "dl4j":
            continue
        details = framework.get("details", {})
        records.append({
            "version": framework.get("version"), "backend": details.get("artifact"),
            "classifiers": details.get("classifiers", []), "modules": details.get("modules", []),
            "profile": (details.get("profile") or {}).get("id"), "cuda": framework.get("cuda_built_for"),
            "cudnn_needed": framework.get("cudnn_expected"), "cudnn_found": framework.get("cudnn_used"),
            "cudnn_helpers": details.get("cudnn_helpers", []),
            "graves_lstm": len(details.get("graves_lstm") or []),
        })
    codes = sorted(f["code"] for f in report.get("findings", [])
                   if f["code"] in ("CD401", "CD405", "CD406", "CD407", "CD408") or f["code"].startswith("CD43"))
    return {"project": label, "dl4j": records, "findings": codes, "seconds": round(elapsed, 2),
            "frameworks_ms": report.get("timings_ms", {}).get("frameworks")}


def print_text(result: dict[str, Any]) -> None:
    print(f"{result['project']}  ({result['seconds']} s, frameworks probe {result.get('frameworks_ms')} ms)")
    if "error" in result:
        print(f"    error (exit {result['exit_code']}): {result['error']}")
        return
    for record in result["dl4j"]:
        modules = ", ".join(record["modules"][:4]) + (f" +{len(record['modules']) - 4}" if len(record["modules"]) > 4
                                                      else "")
        backend = record["backend"] or "no ND4J backend"
        if record["classifiers"]:
            backend += f" [{', '.join(record['classifiers'])}]"
        cuda = (f"CUDA {record['cuda']}, cuDNN {record['cudnn_needed'] or '?'}" if record["cuda"]
                else "CPU" if record["backend"] else "-")
        extra = f", profile {record['profile']}" if record["profile"] else ""
        extra += f", deeplearning4j-cuda-{'/'.join(record['cudnn_helpers'])}" if record["cudnn_helpers"] else ""
        extra += f", GravesLSTM x{record['graves_lstm']}" if record["graves_lstm"] else ""
        found = f", found {record['cudnn_found']}" if record["cudnn_found"] else ""
        print(f"    DL4J {record['version']}: {backend} ({cuda}{found}{extra}) in {modules}")
    print(f"    findings: {' '.join(result['findings']) or 'none'}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="one JSON list instead of text")
    parser.add_argument("projects", nargs="+", metavar="[LABEL=]PATH")
    options = parser.parse_args()
    results = []
    for item in options.projects:
        label, _, path = item.rpartition("=") if "=" in item else (item, "", item)
        results.append(summarize(label or path, path))
    if options.json:
        print(json.dumps(results, indent=1))
    else:
        for result in results:
            print_text(result)


if __name__ == "__main__":
    main()
