"""Transfer of explain's rules between rounds (round seventeen, e25; round sixteen's class figure, e22, kept as --classes).

Usage:
  python benchmarks/explain_transfer.py PER_CASE.json [--rules N] [--at REV]   leave-one-round-out by rule (below)
  python benchmarks/explain_transfer.py --classes PER_CASE.json     e22's figure: misses whose class another set holds
PER_CASE.json is explain_dev_sets.py's output for THIS checkout, or for REV with --at (the rows are dated by
`git blame REV`); its first_id and first_source name the rule that answered each case.

The rows written from a round's cases cannot be taken out of the tree one by one, so what generalises is measured
instead, from the git history of this checkout:
- the sets are grouped by ROUND: held_out/roundN's published set, with the explain_eval/cases_K.toml files first
  committed while roundN was the newest published set (cases..cases_5, committed before round five, are "early");
- a RULE is the row that answered (first_id and first_source); its date is `git blame`'s commit of the line that
  carries it (the `id = "..."` line of a catalog event, else the line holding its source, in compat/*.toml or
  cudnn_doctor/**.py), the earliest where several lines carry it (a row extended later keeps its first date: this
  leans towards "written before", so the blind column is an upper bound); its HOME is the round that was newest
  when it was written;
- per rule: the related cases it answers right in its home round, in rounds published BEFORE it was written (seen by
  its writer), and in rounds published AFTER (sealed while it was written: the honest transfer). A rule that answers
  only its home round is FITTED;
- per round: its related cases answered right today, by rules of its own window (written from it: not blind), by
  rules written before it was published (blind), by rules of later windows; and the same for its cases whose stack
  (`printed_by`, the part before any parenthesis) or year no earlier round had.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
from explain_dev_sets import development_sets, set_name  # noqa: E402
from score_explain import load_cases  # type: ignore[import-not-found]  # noqa: E402

EARLY = "early"


def _git(*args: str) -> str:
    return subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, text=True, check=True).stdout


def first_commit_time(path: Path) -> str:
    """ISO time of the commit that added PATH (committer date, as written on the builder's branch)."""
    lines = _git("log", "--diff-filter=A", "--format=%cI", "--", str(path.relative_to(ROOT))).split()
    return lines[-1] if lines else "9999"


def round_windows() -> list[tuple[str, str]]:
    """(publication time, round name) of each held_out round, oldest first."""
    rounds = [(first_commit_time(p), p.parent.name) for p in (HERE / "held_out").glob("*/explain41_cases.toml")]
    return sorted(rounds)


def round_at(time: str, windows: list[tuple[str, str]]) -> str:
    """The round that was the newest published at TIME (EARLY before round five)."""
    current = EARLY
    for published, name in windows:
        if published <= time:
            current = name
    return current


def set_rounds(windows: list[tuple[str, str]]) -> dict[str, str]:
    out = {}
    for path in development_sets():
        name = set_name(path)
        out[name] = name if path.parent.parent.name == "held_out" else round_at(first_commit_time(path), windows)
    return out


class Blame:
    """Line -> commit time over compat/*.toml and cudnn_doctor/**.py, from one `git blame` per file."""

    def __init__(self, revision: str | None = None) -> None:
        self.revision = revision
        self.lines: list[tuple[str, str]] = []  # (line text, commit time)
        files = sorted(ROOT.glob("compat/*.toml")) + sorted(ROOT.glob("cudnn_doctor/**/*.py"))
        for path in files:
            if path.name == "resemblance.toml":
                continue
            self.lines.extend(self._blame(path))

    def _blame(self, path: Path) -> list[tuple[str, str]]:
        try:
            out = _git("blame", "--line-porcelain", *([self.revision] if self.revision else []), "--",
                       str(path.relative_to(ROOT)))
        except subprocess.CalledProcessError:  # a file the revision does not have
            return []
        times: dict[str, str] = {}
        rows, commit = [], ""
        for line in out.splitlines():
            if line.startswith("\t"):
                rows.append((line[1:], times.get(commit, "")))
            elif re.match(r"^[0-9a-f]{40} ", line):
                commit = line[:40]
            elif line.startswith("committer-time ") and commit not in times:
                from datetime import datetime, timezone
                stamp = int(line.split()[1])
                times[commit] = datetime.fromtimestamp(stamp, timezone.utc).strftime("%Y-%m-%dT%H:%M:%S+00:00")
        return rows

    def time_of(self, rule_id: str | None, source: str | None) -> str:
        """The newest commit time of the rule's id line, else of the line holding its source; '' when neither is found."""
        if rule_id:
            found = [t for text, t in self.lines if re.search(rf"""\bid = ["']{re.escape(rule_id)}["']""", text)]
            if found:
                return min(found)
        tail = re.sub(r"^compat/[\w.]+\.toml: ", "", source or "")
        for width in (60, 30):
            probe = tail[:width]
            if len(probe) < 12:
                return ""
            for variant in (probe, json.dumps(probe)[1:-1]):
                found = [t for text, t in self.lines if variant in text]
                if found:
                    return min(found)
        return ""


def stack_of(case: dict[str, Any]) -> str:
    return re.split(r"[(/,;]", str(case.get("printed_by", "")))[0].strip().lower()


def main(argv: list[str]) -> int:
    if argv[:1] == ["--classes"] and len(argv) == 2:
        return classes_figure(argv[1])
    revision = None
    if "--at" in argv:
        at = argv.index("--at")
        revision, argv = argv[at + 1], argv[:at] + argv[at + 2:]
    if not argv or len(argv) not in (1, 3):
        print(__doc__, file=sys.stderr)
        return 2
    shown = int(argv[2]) if len(argv) == 3 and argv[1] == "--rules" else 25
    rows = json.loads(Path(argv[0]).read_text())
    windows = round_windows()
    order = [EARLY] + [name for _, name in windows]
    of_set = set_rounds(windows)
    cases = {(set_name(p), c["id"]): c for p in development_sets() for c in load_cases(p)}
    blame = Blame(revision)
    rule_time: dict[tuple[str, str], str] = {}
    for row in rows:
        if row["recognised"]:
            key = (row["first_id"] or "", row.get("first_source") or "")
            if key not in rule_time:
                rule_time[key] = blame.time_of(*key)

    # per rule: right answers by round
    per_rule: dict[tuple[str, str], Counter[str]] = defaultdict(Counter)
    claims: Counter[tuple[str, str]] = Counter()
    for row in rows:
        key = (row["first_id"] or "", row.get("first_source") or "")
        if row["family"] == "unrelated":
            claims[key] += row["claimed"] and row["recognised"]
        elif row["right_family"]:
            per_rule[key][of_set[row["set"]]] += 1
    print("## Rules (the row that answered first), by where their right answers fall")
    kinds: Counter[str] = Counter()
    fitted_rows = []
    for key, by_round in per_rule.items():
        time = rule_time.get(key, "")
        home = round_at(time, windows) if time else "?"
        own = by_round.get(home, 0)
        before = sum(n for r, n in by_round.items() if r != home and order.index(r) < order.index(home)) if home in order else 0
        after = sum(n for r, n in by_round.items() if r != home and home in order and order.index(r) > order.index(home))
        kind = "no date" if home == "?" else "fitted" if own and not before and not after else "transfers"
        kinds[kind] += 1
        kinds[f"{kind} answers"] += sum(by_round.values())
        if kind == "fitted":
            fitted_rows.append((own, key, home))
        kinds["answers after written"] += after
    print("| rules written while this round was the newest | rules | fitted (answer only it) | answers in it | "
          "in rounds before it | in rounds published after it (blind) |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for name in order:
        mine = [(key, by_round) for key, by_round in per_rule.items()
                if rule_time.get(key) and round_at(rule_time[key], windows) == name]
        if not mine:
            continue
        own = sum(by_round.get(name, 0) for _, by_round in mine)
        before = sum(n for _, by_round in mine for r, n in by_round.items() if order.index(r) < order.index(name))
        after = sum(n for _, by_round in mine for r, n in by_round.items() if order.index(r) > order.index(name))
        fitted = sum(1 for _, by_round in mine if set(by_round) == {name})
        print(f"| {name} | {len(mine)} | {fitted} | {own} | {before} | {after} |")
    total = sum(sum(c.values()) for c in per_rule.values())
    print(f"rules answering a related case right: {len(per_rule)} ({total} answers)")
    for kind in ("transfers", "fitted", "no date"):
        print(f"  {kind:<10} {kinds[kind]:4} rules, {kinds[kind + ' answers']:5} answers")
    print(f"  answers to rounds published after the rule was written (blind): {kinds['answers after written']}")
    print(f"fitted rules (answer only the round that was newest when written), most answers first (top {shown}):")
    for own, (rule_id, source), home in sorted(fitted_rows, key=lambda r: (-r[0], r[1]))[:shown]:
        print(f"  {own:3} {home:<8} {rule_id:<34} {source[:70]}")
    print("unrelated messages claimed, by rule:")
    for (rule_id, source), n in claims.most_common():
        if n:
            print(f"  {n:3} {rule_id:<34} {source[:70]}")

    print("\n## Rounds: related cases answered right today, by when the answering rule was written")
    print("| round | related | right today | by its own window's rules (not blind) | by rules written before it was "
          "published (blind) | by later rules | new stack or year: cases / right / blind |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | --- |")
    seen_stacks: set[str] = set()
    seen_years: set[int] = set()
    for name in order:
        names = [s for s, r in of_set.items() if r == name]
        group = [r for r in rows if r["set"] in names and r["family"] != "unrelated"]
        if not group:
            continue

        def when(row: dict[str, Any], name: str = name) -> str:
            key = (row["first_id"] or "", row.get("first_source") or "")
            time = rule_time.get(key, "")
            if not time:
                return "?"
            written = round_at(time, windows)
            if written == name:
                return "own"
            return "before" if order.index(written) < order.index(name) else "later"

        right = [r for r in group if r["right_family"]]
        tally = Counter(when(r) for r in right)
        fresh = [r for r in group if stack_of(cases[(r["set"], r["id"])]) not in seen_stacks
                 or (cases[(r["set"], r["id"])].get("year") or 0) > max(seen_years, default=0)]
        fresh_right = [r for r in fresh if r["right_family"]]
        label = name if name == EARLY else f"{name} ({', '.join(sorted(names))})" if len(names) > 1 else name
        print(f"| {label} | {len(group)} | {len(right)} | {tally['own']} | {tally['before']} | {tally['later']} | "
              f"{len(fresh)} / {len(fresh_right)} / {sum(when(r) == 'before' for r in fresh_right)} |")
        for set_id in names:
            for case in (c for (s, _), c in cases.items() if s == set_id):
                seen_stacks.add(stack_of(case))
                if case.get("year"):
                    seen_years.add(int(case["year"]))
    return 0


# ---- e22's class figure (round sixteen), kept ---------------------------------------------------------------------

CLASSES: tuple[tuple[str, str], ...] = (
    ("out-of-memory", r"out of memory|\boom\b|ran out of memory|alloc_failed"),
    ("driver-too-old", r"driver (version )?(is )?(too old|insufficient)|insufficientdriver|insufficient ?driver|newer driver|driver .*older than|r5\d0\+"),
    ("cpu-build", r"cpu[- ]only|cpu build|cpu wheel|cpu jaxlib|cpu package|\+cpu|without (gpu|cuda) support|not compiled with cuda|cpuexecutionprovider|cpu variant"),
    ("binary-for-cuda", r"libbitsandbytes_cuda|no (cuda )?binary|binary for (this )?cuda|cuda binary"),
    ("resolver", r"no solution found|unsatisfiable|resolutionimpossible|packagesnotfound|no matching distribution|could not find a version|not a supported wheel|incompatible with the current platform|conflict"),
    ("architecture", r"sm_\d+|no kernel image|architecture|compute capability|blackwell|pascal|maxwell|kepler|gb10|rtx ?50\d0"),
    ("abi-symbol", r"undefined symbol|procedure could not be found|entry point|\babi\b|symbol"),
    ("library-missing", r"cannot open shared object|error loading|dll load failed|winerror 126|could not load|not found.*\.(so|dll)|\.dll|\.so\.\d"),
    ("version-pair", r"cudnn (version|library) .*(mismatch|but)|loaded runtime cudnn|compiled against|built (with|for|against)"),
    ("nccl", r"nccl"),
    ("build-tools", r"nvcc|compil|cmake|ptxas|bazel|ninja|host compiler|gcc|msvc"),
    ("device-fault", r"illegal (memory|address)|xid|unknown error|\b999\b|hardware|power|fell off the bus|ecc"),
    ("container", r"container|docker|apptainer|singularity|kubernetes|wsl"),
    ("permission-visibility", r"permission|visible_devices|no (cuda|gpu)s? (device|found|detected)|not detected"),
    ("status-code", r"cudnn_status|cublas_status|cusolver|curand|cufft|cuda_error|cudaerror"),
)


def case_class(case: dict[str, Any]) -> str:
    text = f"{case.get('cause', '')}\n{case.get('message', '')}".lower()
    return next((name for name, pattern in CLASSES if re.search(pattern, text)), "other")


def classes_figure(per_case: str) -> int:
    rows = {(r["set"], r["id"]): r for r in json.loads(Path(per_case).read_text())}
    tagged = []
    for path in development_sets():
        for case in load_cases(path):
            row = rows.get((set_name(path), case["id"]))
            if row is not None:
                tagged.append((row, case_class(case)))
    total_missed = total_taught = total_answered = total_unread = 0
    by_class: dict[str, list[int]] = {}
    for name in dict.fromkeys(r["set"] for r, _ in tagged):
        mine = [(r, c) for r, c in tagged if r["set"] == name and r["family"] != "unrelated"]
        others = [(r, c) for r, c in tagged if r["set"] != name and r["family"] != "unrelated"]
        known = {(r["family"], c) for r, c in others}
        answered = {(r["family"], c) for r, c in others if r["right_family"]}
        missed = [(r, c) for r, c in mine if not r["right_family"]]
        taught = [(r, c) for r, c in missed if (r["family"], c) in known and c != "other"]
        right_elsewhere = [(r, c) for r, c in taught if (r["family"], c) in answered]
        total_missed += len(missed)
        total_taught += len(taught)
        total_answered += len(right_elsewhere)
        total_unread += sum(not r["recognised"] for r, _ in right_elsewhere)
        for r, c in missed:
            counts = by_class.setdefault(c, [0, 0])
            counts[0] += 1
            counts[1] += (r["family"], c) in answered and c != "other"
        print(f"{name:>9}: {len(missed):3} misses; class held by other sets {len(taught):3}; "
              f"of those answered right there {len(right_elsewhere):3}")
    print(f"all sets: {total_missed} misses; the class is in another set for {total_taught}; "
          f"another set answers that family+class right for {total_answered}")
    print(f"  of those {total_answered}: not recognised here {total_unread}, recognised with another family "
          f"{total_answered - total_unread}")
    print("misses by class (missed / class answered right in another set):")
    for name, (missed_n, elsewhere) in sorted(by_class.items(), key=lambda item: -item[1][0]):
        print(f"  {name:<22} {missed_n:4} {elsewhere:4}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
