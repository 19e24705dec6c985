"""Every place plain `check` and `check --deep` can raise an error, read from the code (issue 45, round twenty-one):
each call that makes a finding of an error code (codes.py), or turns a finding into an error, with the evidence it
gives: the code's class (codes.evidence_of) where the call says nothing, else the call's own words. Static: what a
call may give, not what a run gave. Run from the checkout's top folder:

    python benchmarks/error_audit.py            # one line per place: code, file:function:line, evidence
    python benchmarks/error_audit.py --counts   # places by the evidence they give

Install (CD5xx), bench (CD6xx), the command line's own refusals (CD0xx) and image's rules are left out: they report
what happened to the doctor's own work, not what a program will do."""

from __future__ import annotations

import argparse
import ast
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from cudnn_doctor.codes import CODES, evidence_of  # noqa: E402

MAKERS = ("finding", "doctor_error")
WHERE = ("rules",)  # plain check's and --deep's verdicts: the rules and what evaluate runs after them
LEFT_OUT = ("rules/image.py", "rules/bench.py")


def _function_at(tree: ast.AST, line: int) -> str:
    best = ""
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.lineno <= line <= (node.end_lineno or 0):
            best = node.name  # the innermost: ast.walk meets outer functions first
    return best


def _evidence(node: ast.Call, source: str, code: str | None) -> str:
    given = next((ast.get_source_segment(source, k.value) for k in node.keywords if k.arg == "evidence"), None)
    if given is not None:
        return given.strip('"')
    splat = next((ast.get_source_segment(source, k.value) for k in node.keywords if k.arg is None), None)
    if splat is not None:  # finding(..., **said): the dict may give it
        return f"{evidence_of(code) if code else 'the code class'}, unless **{splat} says"
    return evidence_of(code) if code else "the code's class"


def places() -> list[tuple[str, str, str, str]]:
    """(code, file:function:line, how it becomes an error, evidence) for every error a rule can raise."""
    rows = []
    for path in sorted((ROOT / "cudnn_doctor").rglob("*.py")):
        relative = str(path.relative_to(ROOT / "cudnn_doctor"))
        if not relative.startswith(WHERE) or relative in LEFT_OUT:
            continue
        source = path.read_text()
        tree = ast.parse(source)
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call):
                continue
            name = node.func.id if isinstance(node.func, ast.Name) else getattr(node.func, "attr", "")
            where = f"{relative}:{_function_at(tree, node.lineno)}:{node.lineno}"
            if name in MAKERS and node.args:
                first = node.args[0]
                code = first.value if isinstance(first, ast.Constant) and isinstance(first.value, str) else None
                if code is not None and (code not in CODES or CODES[code].severity != "error"):
                    continue
                rows.append((code or ast.get_source_segment(source, first) or "?", where, "registry",
                             _evidence(node, source, code)))
            elif name == "replace" and any(k.arg == "severity" and "error" in (ast.get_source_segment(
                    source, k.value) or "") for k in node.keywords):
                given = next((ast.get_source_segment(source, k.value) for k in node.keywords if k.arg == "evidence"),
                             "kept")
                rows.append(("(any)", where, "made an error", (given or "kept").strip('"')))
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--counts", action="store_true")
    options = parser.parse_args()
    rows = places()
    if options.counts:
        for evidence, count in Counter(row[3] for row in rows).most_common():
            print(f"{count:4d}  {evidence}")
        print(f"{len(rows):4d}  in all")
        return 0
    for code, where, how, evidence in rows:
        print(f"{code}\t{where}\t{how}\t{evidence}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
