"""Every development set of `explain` scored in one process per tree, with score_explain.py's own rules
(load_cases, catalog_overlap, _first_match) around `commands.explain.run(message, offline_only=True)`.

Usage: python benchmarks/explain_dev_sets.py TREE OUT.json
TREE is the checkout whose cudnn_doctor is scored (this one, or an archive of the branch point); the sets and the
scorer's rules are read from this checkout. OUT.json holds one record per case: set, id, family, recognised,
right_family, claimed, first_code, first_id, first_source
(the answering row's source: which rule answered). `--diff BEFORE.json AFTER.json` prints the cases that changed and
the figures per set.
"""

from __future__ import annotations

import io
import json
import os
import sys
from contextlib import redirect_stderr
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent


def development_sets() -> list[Path]:
    """The explain sets published for development: benchmarks/explain_eval/*.toml, held_out/*/explain41_cases.toml,
    less the sets named (comma-separated, by set_name) in EXPLAIN_HOLD_OUT: a published set a builder keeps unread to
    score it blind once at the end (round twenty-two, e31)."""
    held = {name for name in os.environ.get("EXPLAIN_HOLD_OUT", "").split(",") if name}
    paths = sorted((HERE / "explain_eval").glob("cases*.toml")) + sorted((HERE / "held_out").glob("*/explain41_cases.toml"))
    return [path for path in paths if set_name(path) not in held]


def set_name(path: Path) -> str:
    return path.stem if path.parent.name == "explain_eval" else path.parent.name


def scored_cases(tree: Path, path: Path, set_label: str) -> list[dict[str, Any]]:
    """Every case of the set at PATH answered by TREE's explain (offline), with score_explain.py's own rules: one
    record each (set, id, family, recognised, right_family, claimed, first_code, first_id, first_source, codes: every
    code of the answer, printed_by, message, cause). TREE must be first on sys.path (score_tree, or a child)."""
    from score_explain import _first_match, catalog_overlap, load_cases  # type: ignore[import-not-found]

    from cudnn_doctor.commands.explain import run

    cases = load_cases(path)
    left_out = catalog_overlap(cases, tree / "compat" / "errors.toml")
    rows = []
    for case in cases:
        if case["id"] in left_out:
            continue
        try:
            with redirect_stderr(io.StringIO()):
                data = run(case["message"].encode("utf-8"), offline_only=True)
            exit_code = data.get("exit_code", 0)
        except Exception as error:  # noqa: BLE001 - a usage error is "not recognised", as the command's exit 2
            data, exit_code = {"error": str(error)}, 2
        matches, code, match_id = _first_match(data)
        listed = data.get("matches") if isinstance(data.get("matches"), list) else []
        first = listed[0] if listed else {}
        source = first.get("source") if isinstance(first, dict) else None
        recognised = exit_code == 0 and matches > 0
        family = case["family"]
        rows.append({"set": set_label, "id": case["id"], "family": family, "recognised": recognised,
                     "right_family": recognised and family != "unrelated" and bool(code) and code.startswith(family),
                     "claimed": exit_code == 0, "first_code": code, "first_id": match_id,
                     "first_source": source if isinstance(source, str) else None,
                     "codes": [m.get("code") for m in listed if isinstance(m, dict) and m.get("code")],
                     "printed_by": case.get("printed_by", ""), "message": case["message"],
                     "cause": case.get("cause", "")})
    return rows


def score_tree(tree: Path) -> list[dict[str, Any]]:
    sys.path.insert(0, str(tree))
    sys.path.insert(1, str(HERE))
    rows = []
    for path in development_sets():
        rows += [{key: row[key] for key in ("set", "id", "family", "recognised", "right_family", "claimed",
                                            "first_code", "first_id", "first_source")}
                 for row in scored_cases(tree, path, set_name(path))]
    return rows


def figures(rows: list[dict[str, Any]]) -> dict[str, tuple[int, int, int, int, int]]:
    """Per set: (related, recognised, right family, unrelated, unrelated claimed)."""
    out: dict[str, tuple[int, int, int, int, int]] = {}
    for name in dict.fromkeys(r["set"] for r in rows):
        group = [r for r in rows if r["set"] == name]
        related = [r for r in group if r["family"] != "unrelated"]
        unrelated = [r for r in group if r["family"] == "unrelated"]
        out[name] = (len(related), sum(r["recognised"] for r in related), sum(r["right_family"] for r in related),
                     len(unrelated), sum(r["claimed"] for r in unrelated))
    return out


def diff(before_path: Path, after_path: Path) -> None:
    before = {(r["set"], r["id"]): r for r in json.loads(before_path.read_text())}
    after = json.loads(after_path.read_text())
    worse = 0
    for row in after:
        old = before.get((row["set"], row["id"]))
        if old is None or (old["first_code"], old["recognised"], old["right_family"], old["claimed"]) == (
                row["first_code"], row["recognised"], row["right_family"], row["claimed"]):
            continue
        if row["family"] == "unrelated":  # an unrelated message no longer claimed is better, not a recognition lost
            bad = row["claimed"] and not old["claimed"]
        else:
            bad = (old["right_family"] and not row["right_family"]) or (old["recognised"] and not row["recognised"])
        worse += bad
        print(f"{'WORSE ' if bad else ''}{row['set']} {row['id']} ({row['family']}): {old['first_code']} -> {row['first_code']}")
    old_figures, new_figures = figures(list(before.values())), figures(after)
    for name, (n, rec, fam, un, cl) in new_figures.items():
        o = old_figures.get(name, (0, 0, 0, 0, 0))
        print(f"{name:>10} {n:4} related: {100*o[1]/n:5.1f}/{100*o[2]/n:5.1f} -> {100*rec/n:5.1f}/{100*fam/n:5.1f}; "
              f"unrelated claimed {o[4]} -> {cl} of {un}")
    print(f"cases worse: {worse}")


def main(argv: list[str]) -> int:
    if argv[:1] == ["--diff"] and len(argv) == 3:
        diff(Path(argv[1]), Path(argv[2]))
        return 0
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    rows = score_tree(Path(argv[0]).resolve())
    Path(argv[1]).write_text(json.dumps(rows, indent=1) + "\n", encoding="utf-8")
    for name, (n, rec, fam, un, cl) in figures(rows).items():
        print(f"{name:>10} {n:4} related: {100*rec/n:5.1f} % recognised, {100*fam/n:5.1f} % right family; "
              f"unrelated claimed {cl} of {un}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
