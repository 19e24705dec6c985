"""Score `cudnn-doctor explain` on the evaluation set of real error messages (issue 12).

Usage: python benchmarks/score_explain.py [--cases FILE] [--json OUT] [--show-misses] [--workers N]
                                          [--check-only] [--distinct-from OTHER_CASES_FILE ...]

Two sets exist: benchmarks/explain_eval/cases.toml (the default, written before the reader) and
benchmarks/explain_eval/cases_2.toml (held out, gathered after the reader was built); score the second
with `--cases benchmarks/explain_eval/cases_2.toml --distinct-from benchmarks/explain_eval/cases.toml`
(the second option makes a thread used by both sets a case problem).

Each case of benchmarks/explain_eval/cases.toml is run as a user would run it: the message is
written to a temporary file and `python -m cudnn_doctor explain --offline-only --json --from-file
FILE` runs in a fresh process (PYTHONPATH = this checkout). Scores:
  recognised       exit 0 with at least one match, over the related cases (every family but
                   "unrelated");
  right family     the first match's `code` starts with the case's family (CD1..CD5); a CD6xx
                   answer (the bench's own failures) is never right; a match with no code counts
                   as recognised but not as the right family;
  unrelated claimed  an unrelated case answered with exit 0.
Before running, the cases are checked: fields present, ids and messages unique, and no message
is or contains an `example` of compat/errors.toml (--check-only stops there).
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib  # type: ignore[no-redef]

REPO = Path(__file__).resolve().parent.parent
DEFAULT_CASES = REPO / "benchmarks" / "explain_eval" / "cases.toml"
CATALOG = REPO / "compat" / "errors.toml"
FAMILIES = ("CD1", "CD2", "CD3", "CD4", "CD5", "unrelated")
REQUIRED = ("id", "message", "source", "printed_by", "cause", "family")
RECENT_YEAR = 2022  # "2022-2026 stacks" in the wording
CASE_TIMEOUT_S = 120


@dataclass(frozen=True)
class CaseResult:
    id: str
    family: str
    printed_by: str
    year: int | None
    exit_code: int | None  # None: timed out
    matches: int
    first_code: str | None
    first_id: str | None
    recognised: bool
    right_family: bool
    claimed: bool  # exit 0, whatever the family
    seconds: float
    error: str | None  # set when the run did not give explain/1 JSON


def load_cases(path: Path) -> list[dict[str, Any]]:
    with path.open("rb") as handle:
        return list(tomllib.load(handle).get("case", []))


def _normalise(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip().lower()


def catalog_overlap(cases: list[dict[str, Any]], catalog_path: Path = CATALOG) -> set[str]:
    """Ids of cases whose message is, or contains, an `example` of the catalog: the catalog grew to hold
    that message (found independently in the same public thread), so the case no longer tests an unseen
    message and is left out of the score."""
    with catalog_path.open("rb") as handle:
        examples = [_normalise(e["example"]) for e in tomllib.load(handle).get("error", []) if e.get("example")]
    overlap = set()
    for case in cases:
        if isinstance(case.get("message"), str):
            message = _normalise(case["message"])
            if any(example and (example in message or message in example) for example in examples):
                overlap.add(case.get("id", ""))
    return overlap


def check_cases(cases: list[dict[str, Any]]) -> list[str]:
    """Problems with the set itself: missing fields, duplicates."""
    problems = []
    seen_ids: Counter[str] = Counter()
    seen_messages: Counter[str] = Counter()
    for number, case in enumerate(cases, 1):
        name = case.get("id", f"case #{number}")
        for field in REQUIRED:
            if not isinstance(case.get(field), str) or not case[field].strip():
                problems.append(f"{name}: `{field}` missing or empty")
        if case.get("family") not in FAMILIES:
            problems.append(f"{name}: family {case.get('family')!r} is not one of {', '.join(FAMILIES)}")
        if not isinstance(case.get("message"), str):
            continue
        seen_ids[name] += 1
        message = _normalise(case["message"])
        seen_messages[message] += 1
    problems += [f"{name}: id used {n} times" for name, n in seen_ids.items() if n > 1]
    problems += [f"message used {n} times: {m[:60]}..." for m, n in seen_messages.items() if n > 1]
    return problems


def _thread(source: str) -> str:
    """The thread a case came from: the URL that starts its `source`, without a trailing slash, lower case."""
    return (source.split() or [""])[0].rstrip("/").lower()


def shared_threads(cases: list[dict[str, Any]], other_path: Path) -> list[str]:
    """Problems for cases whose thread is also a thread of the set in `other_path` (sets must be disjoint)."""
    other = {_thread(c["source"]) for c in load_cases(other_path) if isinstance(c.get("source"), str)}
    return [f"{case.get('id')}: thread also used in {other_path.name}: {_thread(case['source'])}"
            for case in cases if isinstance(case.get("source"), str) and _thread(case["source"]) in other]


def _first_match(data: Any) -> tuple[int, str | None, str | None]:
    """(number of matches, first match's code, first match's id), tolerant of new fields."""
    matches = data.get("matches") if isinstance(data, dict) else None
    if not isinstance(matches, list) or not matches:
        return 0, None, None
    first = matches[0] if isinstance(matches[0], dict) else {}
    code = first.get("code")
    match_id = first.get("id")
    return len(matches), code if isinstance(code, str) else None, match_id if isinstance(match_id, str) else None


def run_case(case: dict[str, Any], python: str) -> CaseResult:
    family = case["family"]
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    with tempfile.TemporaryDirectory(prefix="explain-eval-") as folder:
        message_file = Path(folder) / "message.txt"
        message_file.write_bytes(case["message"].encode("utf-8"))
        command = [python, "-m", "cudnn_doctor", "explain", "--offline-only", "--json", "--from-file", str(message_file)]
        started = time.perf_counter()
        try:
            done = subprocess.run(command, capture_output=True, env=env, cwd=folder, timeout=CASE_TIMEOUT_S)
            exit_code: int | None = done.returncode
            stdout, stderr = done.stdout, done.stderr
        except subprocess.TimeoutExpired:
            exit_code, stdout, stderr = None, b"", b""
        seconds = time.perf_counter() - started
    error = None
    data: Any = None
    if exit_code is None:
        error = f"timed out after {CASE_TIMEOUT_S} s"
    else:
        try:
            data = json.loads(stdout)
        except ValueError:
            last_line = stderr.decode("utf-8", "replace").strip().splitlines()[-1:] or ["no output"]
            error = f"exit {exit_code}, no JSON: {last_line[0][:200]}"
    matches, code, match_id = _first_match(data)
    recognised = exit_code == 0 and matches > 0
    right = recognised and family != "unrelated" and code is not None and code.startswith(family)
    return CaseResult(
        id=case["id"], family=family, printed_by=case["printed_by"], year=case.get("year"), exit_code=exit_code,
        matches=matches, first_code=code, first_id=match_id, recognised=recognised, right_family=right,
        claimed=exit_code == 0, seconds=round(seconds, 3), error=error,
    )


def _percent(part: int, whole: int) -> str:
    return f"{100.0 * part / whole:5.1f} %" if whole else "    -  "


def summarise(results: list[CaseResult]) -> dict[str, Any]:
    related = [r for r in results if r.family != "unrelated"]
    unrelated = [r for r in results if r.family == "unrelated"]
    recent = [r for r in related if (r.year or 0) >= RECENT_YEAR]
    older = [r for r in related if (r.year or 0) < RECENT_YEAR]
    times = [r.seconds for r in results]

    def rates(group: list[CaseResult]) -> dict[str, Any]:
        return {"cases": len(group), "recognised": sum(r.recognised for r in group),
                "right_family": sum(r.right_family for r in group)}

    return {
        "related": rates(related),
        "unrelated": {"cases": len(unrelated), "claimed": sum(r.claimed for r in unrelated)},
        "by_family": {f: rates([r for r in related if r.family == f]) for f in FAMILIES if f != "unrelated"},
        "by_period": {f"before {RECENT_YEAR}": rates(older), f"{RECENT_YEAR} and later": rates(recent)},
        "by_printer": {p: rates([r for r in related if r.printed_by == p])
                       for p in sorted({r.printed_by for r in related})},
        "bench_codes": sum(1 for r in related if (r.first_code or "").startswith("CD6")),
        "errors": sum(r.error is not None for r in results),
        "seconds_total": round(sum(times), 2),
        "seconds_median": round(statistics.median(times), 3) if times else None,
        "seconds_max": round(max(times), 3) if times else None,
    }


def print_report(summary: dict[str, Any], wall_seconds: float, workers: int) -> None:
    def row(name: str, group: dict[str, Any]) -> str:
        n = group["cases"]
        return (f"{name:<26} {n:>5}   {group['recognised']:>4} {_percent(group['recognised'], n)}"
                f"   {group['right_family']:>4} {_percent(group['right_family'], n)}")

    header = f"{'':<26} {'cases':>5}   {'recognised':>12}   {'right family':>12}"
    print(header)
    for family, group in summary["by_family"].items():
        print(row(family, group))
    for period, group in summary["by_period"].items():
        print(row(period, group))
    print(row("all related", summary["related"]))
    unrelated = summary["unrelated"]
    print(f"{'unrelated':<26} {unrelated['cases']:>5}   claimed (exit 0): {unrelated['claimed']}")
    print()
    print(f"{'printed by':<26} {'cases':>5}   {'recognised':>12}   {'right family':>12}")
    for printer, group in summary["by_printer"].items():
        print(row(printer, group))
    print()
    print(f"related cases answered with a bench code (CD6xx, never right here): {summary['bench_codes']}")
    print(f"runs that gave no explain/1 JSON: {summary['errors']}")
    print(f"time: {wall_seconds:.1f} s wall with {workers} workers; per case median {summary['seconds_median']} s, "
          f"max {summary['seconds_max']} s, sum {summary['seconds_total']} s")


def print_misses(results: list[CaseResult], cases: dict[str, dict[str, Any]]) -> None:
    print()
    print("misses (related: not recognised or wrong family; unrelated: claimed):")
    for r in results:
        if r.family == "unrelated":
            missed = r.claimed
        else:
            missed = not r.right_family
        if not missed:
            continue
        got = r.error or (f"{r.first_code or 'no code'} ({r.first_id})" if r.recognised else f"exit {r.exit_code}")
        first_line = next((line.strip() for line in cases[r.id]["message"].splitlines() if line.strip()), "")
        print(f"  {r.id}  want {r.family}, got {got}\n      {first_line[:150]}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=Path, default=DEFAULT_CASES)
    parser.add_argument("--json", dest="json_out", type=Path, help="write per-case results here")
    parser.add_argument("--show-misses", action="store_true")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--python", default=sys.executable, help="interpreter that runs cudnn_doctor")
    parser.add_argument("--check-only", action="store_true", help="only check the cases file")
    parser.add_argument("--distinct-from", type=Path, action="append", default=[],
                        help="another cases file that must share no thread with --cases (repeatable)")
    options = parser.parse_args()

    cases = load_cases(options.cases)
    problems = check_cases(cases)
    for other in options.distinct_from:
        problems += shared_threads(cases, other)
    for problem in problems:
        print(f"case problem: {problem}", file=sys.stderr)
    if options.check_only or problems:
        print(f"{len(cases)} cases, {len(problems)} problems")
        return 1 if problems else 0
    overlap = catalog_overlap(cases)
    if overlap:
        print(f"left out of the score: {len(overlap)} case(s) whose message is now a catalog example: "
              f"{', '.join(sorted(overlap))}")
        cases = [case for case in cases if case.get("id") not in overlap]

    started = time.perf_counter()
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, options.workers)) as pool:
        results = list(pool.map(lambda case: run_case(case, options.python), cases))
    wall = time.perf_counter() - started
    summary = summarise(results)
    print_report(summary, wall, options.workers)
    if options.show_misses:
        print_misses(results, {c["id"]: c for c in cases})
    if options.json_out:
        options.json_out.write_text(json.dumps({
            "schema": "cudnn-doctor/explain-eval/1",
            "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "cases_file": str(options.cases),
            "workers": options.workers,
            "wall_seconds": round(wall, 2),
            "summary": summary,
            "cases": [asdict(r) for r in results],
        }, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
