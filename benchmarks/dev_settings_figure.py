"""What plain `check` says, on this machine's CPU, for each failing GPU scenario of a development set whose setup is
only variables (issue 45, round eleven): the scenario's variables put in the environment of `check --json`, a Python
environment holding the jax (and torch) of SITE on PATH, and the codes it prints compared with the scenario's causes.

    python3 benchmarks/dev_settings_figure.py --site SITE_PACKAGES \
        --set benchmarks/held_out/round10/scenarios45.py=RESULTS_10.json \
        --set benchmarks/held_out/round9/scenarios45.py=RESULTS_9.json [--json OUT]

RESULTS_N.json: the set's per-scenario results on the GPU (gpu_scenarios.py's output: `fails` says which failed
there). SITE_PACKAGES: where the frameworks are installed (the GPU machine's, or a copy of their Python files; a
framework's libraries are asked only where a check asks them). Named: an error or a warning carrying a cause code.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent


# variables that only point the loader or Python at files the scenario built (copies of packages and libraries):
# such a setup is those files, which need the GPU machine's own packages, not a setting
PATHS = {"PYTHONPATH", "PYTHONHOME", "PYTHONUSERBASE", "LD_PRELOAD", "LD_LIBRARY_PATH", "PATH"}


def variable_only(scenario: object) -> bool:
    """A scenario whose setup is settings alone (no shell line, file, setup script, other folder or GPU hog, and no
    loader or Python path); a file its builder wrote that a setting names (JAX_DUMP_IR_TO's file) is the value's."""
    env = getattr(scenario, "env", {})
    return not (getattr(scenario, "shell", "") or getattr(scenario, "files", {}) or getattr(scenario, "setup", "")
                or getattr(scenario, "cwd", "") or getattr(scenario, "hog_gib", 0.0) or set(env) & PATHS) and bool(
        env or getattr(scenario, "unset", ()))


def load_set(path: Path, machine: dict[str, object]) -> list[object]:
    sys.path.insert(0, str(HERE))
    spec = importlib.util.spec_from_file_location(f"devset_{abs(hash(str(path)))}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return list(module.build_scenarios(machine))


def python_env(sites: list[Path], folder: Path) -> Path:
    """A Python environment check finds on PATH whose site-packages holds SITES' entries (links; the first site's
    entry where two hold one name)."""
    target = folder / "venv" / "lib" / "python3.12" / "site-packages"
    target.mkdir(parents=True)
    for site in sites:
        for entry in site.iterdir():
            if not (target / entry.name).exists():
                (target / entry.name).symlink_to(entry)
    (folder / "venv" / "bin").mkdir()
    # the environment's python3 is this interpreter seeing that site-packages: what check starts to ask Python's own
    # start (PYTHON* settings) is a real Python
    (folder / "venv" / "bin" / "python3").write_text(f"#!/bin/sh\nPYTHONPATH={target} exec {sys.executable} \"$@\"\n")
    (folder / "venv" / "bin" / "python3").chmod(0o755)
    return folder / "venv" / "bin"


def plain_check(bin_folder: Path, scenario: object) -> dict[str, list[str]]:
    env = {**os.environ, "PATH": f"{bin_folder}:{os.environ.get('PATH', '/usr/bin:/bin')}",
           "PYTHONPATH": str(ROOT), **getattr(scenario, "env", {})}
    for name in getattr(scenario, "unset", ()):
        env.pop(name, None)
    done = subprocess.run([sys.executable, "-m", "cudnn_doctor", "check", "--json"], capture_output=True, text=True,
                          env=env, timeout=300, stdin=subprocess.DEVNULL)
    report = json.loads(done.stdout)
    return {"errors": [f["code"] for f in report["findings"] if f["severity"] == "error"],
            "warnings": [f["code"] for f in report["findings"] if f["severity"] == "warning"]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--site", required=True, type=Path, action="append", help="repeatable; the first wins")
    parser.add_argument("--set", action="append", required=True, metavar="SCENARIOS=RESULTS")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as scratch:
        bin_folder = python_env([site.resolve() for site in args.site], Path(scratch))
        for pair in args.set:
            scenarios_path, results_path = pair.split("=", 1)
            results = json.loads(Path(results_path).read_text())
            failing = {o["name"]: o for o in results["outcomes"] if o.get("fails")}
            working = {o["name"] for o in results["outcomes"] if o.get("fails") is False}
            for scenario in load_set(Path(scenarios_path), results.get("machine", {})):
                name = str(scenario.name)  # type: ignore[attr-defined]
                if name in working and variable_only(scenario):  # a false error is an error on a setup that works
                    said = plain_check(bin_folder, scenario)
                    ours = [code for code in said["errors"] if code.startswith("CD41")]
                    rows.append({"set": scenarios_path, "name": name, "works": True, "now": said, "false": ours})
                    print(f"{name:40} works; now errors {','.join(said['errors']) or '-'} warnings "
                          f"{','.join(said['warnings']) or '-'}  {'FALSE ERROR' if ours else 'ok'}")
                    continue
                if name not in failing or not variable_only(scenario):
                    continue
                said = plain_check(bin_folder, scenario)
                causes = set(failing[name].get("causes") or getattr(scenario, "causes", ()))
                named = sorted(causes & set(said["errors"] + said["warnings"]))
                rows.append({"set": scenarios_path, "name": name, "env": getattr(scenario, "env", {}),
                             "causes": sorted(causes), "before": {"errors": failing[name].get("codes", []),
                                                                  "warnings": failing[name].get("warnings", [])},
                             "now": said, "named": named})
                print(f"{name:40} causes {','.join(sorted(causes)) or '-':12} before "
                      f"{','.join(failing[name].get('codes', []) + failing[name].get('warnings', [])) or '-':14} now "
                      f"errors {','.join(said['errors']) or '-'} warnings {','.join(said['warnings']) or '-'}"
                      f"  {'NAMED' if named else 'missed'}")
    failed = [r for r in rows if not r.get("works")]
    worked = [r for r in rows if r.get("works")]
    print(f"named {sum(1 for r in failed if r['named'])} of {len(failed)} variable-only failing scenarios; "
          f"a settings error (CD41x) on {sum(1 for r in worked if r['false'])} of {len(worked)} that work")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
