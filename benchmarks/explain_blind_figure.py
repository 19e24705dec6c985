"""One held-out set scored blind, figures only (round twenty-two, e31).

Usage: python benchmarks/explain_blind_figure.py TREE SET.toml
TREE is the checkout whose explain answers (this one, or `git archive REV` unpacked); SET.toml a published set kept
unread (see EXPLAIN_HOLD_OUT in explain_dev_sets.py). Prints one line: related cases recognised and right family, right
family by family, unrelated claimed. Nothing per case is printed, so the set stays unread by whoever runs it.
"""

from __future__ import annotations

import sys
from collections import defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    tree, set_path = Path(argv[0]).resolve(), Path(argv[1]).resolve()
    sys.path.insert(0, str(tree))
    sys.path.insert(1, str(HERE))
    from explain_dev_sets import scored_cases  # type: ignore[import-not-found]

    rows = scored_cases(tree, set_path, "blind")
    related = [r for r in rows if r["family"] != "unrelated"]
    unrelated = [r for r in rows if r["family"] == "unrelated"]
    family: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for row in related:
        family[row["family"]][0] += 1
        family[row["family"]][1] += row["right_family"]
    recognised, right = sum(r["recognised"] for r in related), sum(r["right_family"] for r in related)
    print(f"related {len(related)}: recognised {recognised} ({100 * recognised / max(1, len(related)):.1f} %), "
          f"right family {right} ({100 * right / max(1, len(related)):.1f} %); by family "
          + ", ".join(f"{name} {n[1]}/{n[0]}" for name, n in sorted(family.items()))
          + f"; unrelated claimed {sum(r['claimed'] for r in unrelated)} of {len(unrelated)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
