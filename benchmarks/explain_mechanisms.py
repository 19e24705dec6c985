"""Round twenty-one (e30): each structural reader of `explain` turned off and on over every development set.

Usage: python benchmarks/explain_mechanisms.py OUT.json

For each mechanism the cases are scored with it on (this tree as it is) and off (its reader patched out in this
process), with explain_dev_sets.py's rules (score_explain.py's). Printed per mechanism:
  reads     the cases where the mechanism's reader produced a fact (whatever answered them), by round and tool
  answers   the related cases right with it on and not right with it off: what no other row or reader answers
  claims    unrelated cases claimed with it on and not with it off (must be none)
A mechanism counts (the brief of round twenty-one) where it reads cases of at least three tools (`printed_by`) across
at least two rounds and claims no unrelated case.
"""

from __future__ import annotations

import json
import sys
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(1, str(HERE))

from explain_dev_sets import development_sets, set_name  # type: ignore[import-not-found]  # noqa: E402

from cudnn_doctor.explain import read_libraries, read_statuses, reader  # noqa: E402

READ: set[tuple[str, str]] = set()  # (mechanism, case key) where the mechanism's reader gave a fact
CURRENT: list[str] = [""]


def _recording(name: str, function: Callable[..., Any], hit: Callable[[Any], bool] = bool) -> Callable[..., Any]:
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        result = function(*args, **kwargs)
        if hit(result):
            READ.add((name, CURRENT[0]))
        return result
    return wrapped


def _owner_is_new(result: Any, name: str) -> bool:
    return result is not None and (name.startswith("*Z") or str(result.get("prefix", "")).startswith("aoti_torch_"))


@contextmanager
def patched(off: str | None) -> Iterator[None]:
    """The mechanisms' readers wrapped to record what they read; the one named OFF patched out."""
    saved = (read_statuses._library_spelled, read_statuses._status, read_libraries.looked_up,
             read_libraries._symbol_owner, reader.version_gates)
    spelled, status, looked, owner, gates = saved

    def status_without(row: dict[str, Any], how: str, index: int) -> Any:  # the CD211 finding e30 gave the status
        found = status(row, how, index)
        if row["name"] == "CUBLAS_STATUS_NOT_SUPPORTED":
            from dataclasses import replace
            return replace(found, finding="")
        return found

    def owner_without(name: str) -> Any:
        result = owner(name)
        return None if _owner_is_new(result, name) else result

    def owner_recorded(name: str) -> Any:
        result = owner(name)
        if _owner_is_new(result, name):
            READ.add(("symbol-namespace", CURRENT[0]))
        return result

    read_statuses._library_spelled = (lambda *a, **k: []) if off == "status-structure" else _recording("status-structure", spelled)
    if off == "status-structure":
        read_statuses._status = status_without
    read_libraries.looked_up = (lambda *a, **k: []) if off == "symbol-lookup" else _recording("symbol-lookup", looked)
    read_libraries._symbol_owner = owner_without if off == "symbol-namespace" else owner_recorded
    reader.version_gates = (lambda *a, **k: []) if off == "version-gate" else _recording("version-gate", gates)
    try:
        yield
    finally:
        (read_statuses._library_spelled, read_statuses._status, read_libraries.looked_up,
         read_libraries._symbol_owner, reader.version_gates) = saved


MECHANISMS = ("status-structure", "symbol-lookup", "symbol-namespace", "version-gate")


def score(off: str | None) -> dict[tuple[str, str], dict[str, Any]]:
    """Every case of every development set, scored as explain_dev_sets.scored_cases scores it (score_explain.py's
    load_cases, catalog_overlap, _first_match), one case at a time so that what a reader read is known per case."""
    import io
    from contextlib import redirect_stderr

    from score_explain import _first_match, catalog_overlap, load_cases  # type: ignore[import-not-found]

    from cudnn_doctor.commands.explain import run

    out = {}
    with patched(off):
        for path in development_sets():
            name = set_name(path)
            cases = load_cases(path)
            left_out = catalog_overlap(cases, ROOT / "compat" / "errors.toml")
            for case in cases:
                if case["id"] in left_out:
                    continue
                CURRENT[0] = f"{name}\t{case['id']}"
                try:
                    with redirect_stderr(io.StringIO()):
                        data = run(case["message"].encode("utf-8"), offline_only=True)
                    exit_code = data.get("exit_code", 0)
                except Exception as error:  # noqa: BLE001 - a usage error is "not recognised", as in explain_dev_sets
                    data, exit_code = {"error": str(error)}, 2
                matches, code, _ = _first_match(data)
                recognised = exit_code == 0 and matches > 0
                family = case["family"]
                out[(name, case["id"])] = {
                    "family": family, "recognised": recognised, "claimed": exit_code == 0,
                    "right_family": recognised and family != "unrelated" and bool(code) and code.startswith(family),
                    "printed_by": case.get("printed_by", "")}
    CURRENT[0] = ""
    return out


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    on = score(None)
    report: dict[str, Any] = {}
    for mechanism in MECHANISMS:
        reads = sorted(tuple(key.split("\t", 1)) for name, key in READ if name == mechanism)
        off = score(mechanism)
        answers = [key for key, row in on.items() if row["family"] != "unrelated" and row["right_family"]
                   and not off[key]["right_family"]]
        recognised = [key for key, row in on.items() if row["family"] != "unrelated" and row["recognised"]
                      and not off[key]["recognised"]]
        claims = [key for key, row in on.items() if row["family"] == "unrelated" and row["claimed"] and not off[key]["claimed"]]
        by_round: dict[str, list[str]] = defaultdict(list)
        tools = set()
        for set_label, case_id in reads:
            by_round[set_label].append(case_id)
            tools.add(on[(set_label, case_id)]["printed_by"])
        report[mechanism] = {
            "reads": len(reads), "read_tools": sorted(tools), "read_sets": {k: len(v) for k, v in sorted(by_round.items())},
            "read_unrelated": [f"{s} {i}" for s, i in reads if on[(s, i)]["family"] == "unrelated"],
            "answers_right": [f"{s} {i} ({on[(s, i)]['printed_by']})" for s, i in answers],
            "recognised_only_with_it": [f"{s} {i}" for s, i in recognised],
            "claims_unrelated": [f"{s} {i}" for s, i in claims],
        }
        r = report[mechanism]
        print(f"{mechanism}: reads {r['reads']} cases of {len(tools)} tools in {len(by_round)} sets "
              f"({', '.join(f'{k} {v}' for k, v in r['read_sets'].items())}); unrelated read {len(r['read_unrelated'])}")
        print(f"  right only with it: {len(answers)}; recognised only with it: {len(recognised)}; "
              f"unrelated claimed only with it: {len(claims)}")
        for line in r["answers_right"]:
            print(f"    {line}")
    Path(argv[0]).write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
