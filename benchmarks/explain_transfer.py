"""Transfer between explain's development sets (round sixteen, e22): for each set S, which of S's misses the OTHER
sets' cases would have taught (a case of the same family and class, in other words), and of those, how many the
other sets answer right today (the class has a rule, but the rule did not reach S's words: a phrase, not a
structure).

Usage: python benchmarks/explain_transfer.py PER_CASE.json     (the output of explain_dev_sets.py)

A case's class is read from its `cause` and `message` by the first of CLASSES whose pattern matches (an approximate
tag, written for this figure, never used by the doctor): what failed, independent of the stack's words.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from explain_dev_sets import development_sets, set_name  # noqa: E402
from score_explain import load_cases  # type: ignore[import-not-found]  # noqa: E402

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


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    rows = {(r["set"], r["id"]): r for r in json.loads(Path(argv[0]).read_text())}
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
    print(f"  of those {total_answered}: not recognised here {total_unread} (the rule's words did not reach these: a "
          f"phrase), recognised with another family {total_answered - total_unread} (the same answer, labelled "
          "otherwise here, or another cause read first)")
    print("misses by class (missed / class answered right in another set):")
    for name, (missed_n, elsewhere) in sorted(by_class.items(), key=lambda item: -item[1][0]):
        print(f"  {name:<22} {missed_n:4} {elsewhere:4}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
