"""Which KIND of explain knowledge reaches rounds published after it was written (round twenty-two, e31).

Usage: python benchmarks/explain_transfer_kinds.py PER_CASE.json --at REV
PER_CASE.json is explain_dev_sets.py's output for REV. Each related case answered right is credited to the rule that
answered first, dated as explain_transfer.py dates it (git blame at REV, the round newest when its line was written),
and the rule is put in one KIND by where its knowledge came from:
  catalog   compat/status_codes.toml: NVIDIA's enums and the texts their libraries print for them
  table     compat/libraries.toml: a table of libraries, packages, symbols, compilers read by a general reader
  source    a compat/errors.toml row whose first citation is a tool's code, a header, or a vendor's documentation
  thread    a compat/errors.toml row whose first citation is an issue thread (owner/repo#N)
Per kind (all rules, then those written in round five or later): rules, rules fitted (answer only their home round), answers in the home round, answers in rounds published
after the rule (blind), and those blind answers in rounds thirteen and later (the recent rounds, each of whose sets was
sealed while the rule was written).
"""

from __future__ import annotations

import json
import re
import sys
from collections import Counter, defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from explain_transfer import EARLY, Blame, round_at, round_windows, set_rounds  # noqa: E402

THREAD = re.compile(r"^[\w.-]+/[\w.-]+#\d+")


def kind_of(source: str) -> str:
    if source.startswith("compat/status_codes.toml"):
        return "catalog"
    if source.startswith("compat/"):
        return "table"
    return "thread" if THREAD.match(source.strip()) else "source"


def main(argv: list[str]) -> int:
    if len(argv) != 3 or argv[1] != "--at":
        print(__doc__, file=sys.stderr)
        return 2
    rows = json.loads(Path(argv[0]).read_text())
    windows = round_windows()
    order = [EARLY] + [name for _, name in windows]
    rank = {name: i for i, name in enumerate(order)}
    rounds = set_rounds(windows)
    blame = Blame(argv[2])
    dated: dict[tuple[str, str], str] = {}
    rules: dict[tuple[str, str], dict[str, int]] = defaultdict(Counter)  # (kind, rule) -> where its answers fall
    for row in rows:
        if row["family"] == "unrelated" or not row["right_family"]:
            continue
        source = row["first_source"] or ""
        rule = (kind_of(source), f"{row['first_id']}|{source[:80]}")
        key = (row["first_id"] or "", source)
        if key not in dated:
            dated[key] = blame.time_of(row["first_id"], source)
        time = dated[key]
        home = round_at(time, windows) if time else EARLY
        case_round = rounds.get(row["set"], EARLY)
        rules[rule]["late"] = int(home != EARLY)
        if rank[case_round] == rank[home]:
            rules[rule]["home"] += 1
        elif rank[case_round] > rank[home]:
            rules[rule]["blind"] += 1
            if rank[case_round] >= rank.get("round13", 99):
                rules[rule]["blind13"] += 1
        else:
            rules[rule]["before"] += 1
    print("| kind | rules | fitted | answers in home round | before it | blind (later rounds) | blind in rounds 13-20 | blind per rule |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for kind in ("catalog", "table", "source", "thread"):
        mine = {k: v for k, v in rules.items() if k[0] == kind}
        fitted = sum(1 for v in mine.values() if not v["blind"] and not v["before"])
        blind = sum(v["blind"] for v in mine.values())
        print(f"| {kind} | {len(mine)} | {fitted} | {sum(v['home'] for v in mine.values())} | "
              f"{sum(v['before'] for v in mine.values())} | {blind} | {sum(v['blind13'] for v in mine.values())} | "
              f"{blind / max(1, len(mine)):.2f} |")
    print()
    print("Rules written in round five or later (by the rounds' builders, not the early catalog):")
    print("| kind | rules | fitted | blind answers | blind in rounds 13-20 | blind per rule |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for kind in ("catalog", "table", "source", "thread"):
        mine = {k: v for k, v in rules.items() if k[0] == kind and v["late"]}
        fitted = sum(1 for v in mine.values() if not v["blind"] and not v["before"])
        blind = sum(v["blind"] for v in mine.values())
        print(f"| {kind} | {len(mine)} | {fitted} | {blind} | {sum(v['blind13'] for v in mine.values())} | "
              f"{blind / max(1, len(mine)):.2f} |")
    for kind in ("catalog", "table", "source", "thread"):
        top = sorted(((v["blind13"], k[1]) for k, v in rules.items() if k[0] == kind and v["blind13"]), reverse=True)[:6]
        print(f"{kind}: most blind answers in rounds 13-20: " + "; ".join(f"{n} {name[:60]}" for n, name in top))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
