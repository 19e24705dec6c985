"""Plain check's errors by their evidence, over the published development sets' scenarios this machine can build
(issue 45, round twenty-one): each scenario of benchmarks/held_out/roundNN/scenarios45.py is built as the GPU harness
builds it (gpu_scenarios.load_scenarios and prepare, this machine's facts), and `check --json` of each doctor tree
runs in its shell. No framework runs and no GPU is here: this counts what each tree asserts (errors by evidence:
seen, rule, read) and where two trees differ, not whether a program failed. Run from the checkout's top folder:

    python benchmarks/evidence_by_kind.py --tree before=/tmp/main-archive --tree after=. [--rounds 14,15,16,17,18,19]
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import os
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "benchmarks"), str(ROOT)]

import gpu_scenarios as harness  # noqa: E402


def errors_of(scenario: harness.Scenario, env: dict[str, str], tree: Path) -> list[tuple[str, str]] | str:
    """(code, evidence) of each error of TREE's plain check in SCENARIO's shell, or why there is no answer."""
    code, out = harness.run_bash(harness.bash_line(scenario, harness.doctor(tree, "check", "--json")), env,
                                 timeout=120, cwd=harness.scenario_cwd(scenario))
    report = harness.last_json(out)
    if report is None:
        return f"no JSON (exit {code})"
    listed = report.get("findings")
    return [(str(f.get("code")), str(f.get("evidence"))) for f in listed if isinstance(f, dict)
            and f.get("severity") == "error"] if isinstance(listed, list) else "no findings"


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--tree", action="append", required=True, help="NAME=FOLDER, a doctor tree (repeatable)")
    parser.add_argument("--rounds", default="14,15,16,17,18,19")
    parser.add_argument("--parallel", type=int, default=2)
    parser.add_argument("--json", type=Path, help="write every scenario's errors per tree here")
    options = parser.parse_args()
    trees = dict(item.split("=", 1) for item in options.tree)
    harness.DEADLINE = harness.Deadline(3600)
    facts = harness.facts()
    base = dict(os.environ, PIP_RETRIES="0", PIP_TIMEOUT="5")
    rows: dict[str, dict[str, object]] = {}
    jobs = []
    for number in options.rounds.split(","):
        path = ROOT / "benchmarks" / "held_out" / f"round{number}" / "scenarios45.py"
        scenarios = harness.load_scenarios(str(path), facts)
        for scenario in scenarios:
            if harness.prepare(scenario, base):
                continue  # its setup needs what this machine lacks
            rows[scenario.name] = {"round": number}
            jobs.append(scenario)
    with concurrent.futures.ThreadPoolExecutor(options.parallel) as pool:
        futures = {(s.name, name): pool.submit(errors_of, s, harness.scenario_env(s, base), Path(folder))
                   for s in jobs for name, folder in trees.items()}
        for (scenario, name), future in futures.items():
            rows[scenario][name] = future.result()
    print(f"{len(rows)} scenarios built of rounds {options.rounds}")
    print("| tree | errors | seen | rule | read | scenarios with an error | no answer |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for name in trees:
        answers = [row[name] for row in rows.values()]
        errors = [e for a in answers if isinstance(a, list) for e in a]
        kinds = Counter(evidence for _, evidence in errors)
        print(f"| {name} | {len(errors)} | {kinds['seen']} | {kinds['rule']} | {kinds['read']} | "
              f"{sum(1 for a in answers if isinstance(a, list) and a)} | {sum(1 for a in answers if isinstance(a, str))} |")
    names = list(trees)
    for scenario, row in rows.items():
        answers = [row[name] for name in names]
        shown = [sorted(a) if isinstance(a, list) else a for a in answers]
        if any(s != shown[0] for s in shown[1:]):
            print(f"- {scenario} (round {row['round']}): " + "; ".join(
                f"{name} {' '.join(f'{c}/{e}' for c, e in s) if isinstance(s, list) else s}"
                for name, s in zip(names, shown, strict=True)))
    if options.json:
        options.json.write_text(json.dumps(rows, indent=1, default=list))
    return 0


if __name__ == "__main__":
    sys.exit(main())
