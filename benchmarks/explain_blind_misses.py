"""Each published round's explain set scored by the tree that existed just before it was published (round twenty, e29).

Usage:
  python benchmarks/explain_blind_misses.py score OUT.json [--work DIR]   score every round with its own "before" tree
  python benchmarks/explain_blind_misses.py misses OUT.json [FAMILY ...]  print the misses (default CD4 CD5) to read
  python benchmarks/explain_blind_misses.py gains OUT.json [--work DIR]   each round's set also by the PREVIOUS round's
                                                                          tree: what the builders in between gained blind

A held_out round's set is published by the commit that adds `held_out/roundN/explain41_cases.toml`; the tree just
before it is that commit's first parent (main with every builder of the round merged, nothing built from the set).
`score` exports that tree's `cudnn_doctor` and `compat` (`git archive`) into DIR/roundN and scores the round's set
there in a child of its own (one process per tree: the modules differ), with explain_dev_sets.py's rules, keeping
every code the answer named in order (`codes`), so a miss can be told apart as not recognised, or recognised with the
right family ranked below another, or with no match of the right family at all. What the misses are (no shape of the
tool; the shape known, other words; a wrapper retelling the error) is read by a person from `misses`' listing.
"""

from __future__ import annotations

import io
import json
import subprocess
import sys
import tarfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent


def _git(*args: str) -> str:
    return subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, text=True, check=True).stdout


def published_rounds() -> list[tuple[str, str, Path]]:
    """(round name, the commit that published its set, the set's path), oldest first."""
    out = []
    for path in (HERE / "held_out").glob("*/explain41_cases.toml"):
        rel = str(path.relative_to(ROOT))
        commits = _git("log", "--diff-filter=A", "--format=%H %cI", "--", rel).split("\n")
        commit, when = [c for c in commits if c][-1].split()
        out.append((when, path.parent.name, commit, path))
    return [(name, commit, path) for _, name, commit, path in sorted(out)]


def export_tree(commit: str, into: Path) -> Path:
    if (into / "cudnn_doctor").is_dir():
        return into
    into.mkdir(parents=True, exist_ok=True)
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", f"{commit}^", "cudnn_doctor", "compat"],
                             capture_output=True, check=True).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(into, filter="data")
    return into


def score_one(tree: Path, set_path: Path) -> list[dict[str, Any]]:
    """Run in a child whose sys.path starts with TREE: every case of SET_PATH, every code of its answer
    (explain_dev_sets.scored_cases, the one scorer of a set's cases)."""
    sys.path.insert(0, str(tree))
    sys.path.insert(1, str(HERE))
    from explain_dev_sets import scored_cases  # type: ignore[import-not-found]

    return [{key: value for key, value in row.items() if key != "first_source"}
            for row in scored_cases(tree, set_path, set_path.parent.name)]


def score(out: Path, work: Path) -> None:
    rows: list[dict[str, Any]] = []
    for name, commit, set_path in published_rounds():
        tree = export_tree(commit, work / name)
        child = subprocess.run([sys.executable, __file__, "_one", str(tree), str(set_path)],
                               capture_output=True, text=True, check=True)
        part = json.loads(child.stdout)
        for row in part:
            row["tree"] = _git("rev-parse", "--short", f"{commit}^").strip()
        rows += part
        related = [r for r in part if r["family"] != "unrelated"]
        print(f"{name:>8} tree {part[0]['tree']}: {len(related)} related, "
              f"{sum(r['recognised'] for r in related)} recognised, {sum(r['right_family'] for r in related)} right family, "
              f"unrelated claimed {sum(r['claimed'] for r in part if r['family'] == 'unrelated')}", flush=True)
    out.write_text(json.dumps(rows, indent=1) + "\n", encoding="utf-8")


def gains(out: Path, work: Path) -> None:
    """Each round's set scored by the tree before the previous round was published and by its own: the difference is
    what the builders of the rounds in between gained on a set none of them had read (blind)."""
    rounds = published_rounds()
    rows: list[dict[str, Any]] = []
    for (_, earlier, _), (name, commit, set_path) in zip(rounds, rounds[1:], strict=False):
        both = {}
        for label, tree_commit in (("earlier", earlier), ("own", commit)):
            tree = export_tree(tree_commit, work / (name if label == "own" else f"{name}-earlier"))
            child = subprocess.run([sys.executable, __file__, "_one", str(tree), str(set_path)],
                                   capture_output=True, text=True, check=True)
            both[label] = {r["id"]: r for r in json.loads(child.stdout)}
        for case_id, own in both["own"].items():
            old = both["earlier"][case_id]
            rows.append({"set": name, "id": case_id, "family": own["family"], "earlier_right": old["right_family"],
                         "own_right": own["right_family"], "earlier_recognised": old["recognised"],
                         "own_recognised": own["recognised"], "earlier_claimed": old["claimed"],
                         "own_claimed": own["claimed"]})
        part = [r for r in rows if r["set"] == name and r["family"] != "unrelated"]
        moved = [r["id"] for r in part if r["own_right"] != r["earlier_right"]]
        print(f"{name:>8}: right family {sum(r['earlier_right'] for r in part)} -> {sum(r['own_right'] for r in part)} "
              f"of {len(part)}; recognised {sum(r['earlier_recognised'] for r in part)} -> "
              f"{sum(r['own_recognised'] for r in part)}; moved: {', '.join(moved) or 'none'}", flush=True)
    out.write_text(json.dumps(rows, indent=1) + "\n", encoding="utf-8")


def kind(row: dict[str, Any]) -> str:
    """How the answer missed: not recognised, the right family ranked below another, or no match of it."""
    if not row["recognised"]:
        return "not recognised"
    if any(code.startswith(row["family"]) for code in row["codes"]):
        return "right family ranked below"
    return "another family only"


def misses(path: Path, families: list[str]) -> None:
    rows = json.loads(path.read_text())
    for row in rows:
        if row["family"] in families and not row["right_family"]:
            first = " ".join(row["message"].split())[:400]
            print(f"--- {row['set']} {row['id']} [{row['family']}] {kind(row)}: {row['codes'][:4]} "
                  f"({row['printed_by']})\n    {first}\n    cause: {row['cause'][:200]}")


def main(argv: list[str]) -> int:
    if argv[:1] == ["_one"] and len(argv) == 3:
        json.dump(score_one(Path(argv[1]), Path(argv[2])), sys.stdout)
        return 0
    if argv[:1] == ["score"] and len(argv) in (2, 4):
        work = Path(argv[3]) if len(argv) == 4 and argv[2] == "--work" else Path("/tmp/explain_blind_trees")
        score(Path(argv[1]), work)
        return 0
    if argv[:1] == ["gains"] and len(argv) in (2, 4):
        gains(Path(argv[1]), Path(argv[3]) if len(argv) == 4 and argv[2] == "--work" else Path("/tmp/explain_blind_trees"))
        return 0
    if argv[:1] == ["misses"] and len(argv) >= 2:
        misses(Path(argv[1]), argv[2:] or ["CD4", "CD5"])
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
