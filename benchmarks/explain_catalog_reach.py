"""How far NVIDIA's own message catalog could reach explain's development sets (round twenty-two, e31).

Usage: EXPLAIN_HOLD_OUT=... python benchmarks/explain_catalog_reach.py LIBCUDART PER_CASE.json
LIBCUDART is libcudart.so.N from a pip wheel (nvidia-cuda-runtime-cu12, unpacked under /tmp, never in the repository);
PER_CASE.json is explain_dev_sets.py's output for this checkout. cudaGetErrorString's texts are read from the binary's
string table, where each `cudaErrorX` name is followed by its text (texts the linker merged into a longer string are
not paired and are left out). The texts no [[message]] or [[phrase]] row of compat/status_codes.toml holds are looked
for in every development case; printed: the cases holding one, by whether today's explain answers them right (related:
right family; unrelated: not claimed), and each case answered wrong with the texts it holds. A catalog of these texts
could only move the cases answered wrong.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import tomllib

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from explain_dev_sets import development_sets, set_name  # noqa: E402
from score_explain import load_cases  # type: ignore[import-not-found]  # noqa: E402


def catalog_texts(library: Path) -> list[tuple[str, str]]:
    """(cudaError name, cudaGetErrorString text) pairs of LIBRARY's string table."""
    strings = subprocess.run(["strings", "-n", "4", str(library)], capture_output=True, text=True, check=True).stdout
    lines = strings.splitlines()
    return [(name, text) for name, text in zip(lines, lines[1:], strict=False)
            if re.fullmatch(r"cudaError[A-Z]\w+", name) and not text.startswith("cuda") and text != "no error"]


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    status = tomllib.loads((HERE.parent / "compat" / "status_codes.toml").read_text())
    known = {row["text"].lower() for table in ("message", "phrase") for row in status.get(table, [])}
    pairs = catalog_texts(Path(argv[0]))
    new = [text.lower() for _, text in pairs if text.lower() not in known and len(text) >= 10]
    print(f"{len(pairs)} name/text pairs in {Path(argv[0]).name}; {len(new)} texts (10 characters or more) no row holds")
    answers = {(row["set"], row["id"]): row for row in json.loads(Path(argv[1]).read_text())}
    tally: Counter[tuple[str, bool]] = Counter()
    for path in development_sets():
        for case in load_cases(path):
            row = answers.get((set_name(path), case["id"]))
            held = [text for text in new if text in case["message"].lower()]
            if row is None or not held:
                continue
            related = case["family"] != "unrelated"
            right = row["right_family"] if related else not row["claimed"]
            tally[("related" if related else "unrelated", right)] += 1
            if not right:
                print(f"  answered wrong: {set_name(path)} {case['id']} ({case['family']}, first {row['first_code']}): {held[:3]}")
    for (kind, right), count in sorted(tally.items()):
        print(f"{kind} cases holding such a text, answered {'right' if right else 'wrong'} today: {count}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
