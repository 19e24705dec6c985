"""Score `cudnn-doctor compat` against the evaluation set in benchmarks/compat_eval/cases.toml.

Each case is run as a user would run it: a fresh `python -m cudnn_doctor compat <args> --json`
with PYTHONPATH set to the checkout, two at a time. The verdict is read from the JSON's
`verdict`; a run that exits 2, prints no JSON object or has no verdict counts as wrong and is
recorded as "error".

    python benchmarks/score_compat.py                 # table per framework + wrong cases
    python benchmarks/score_compat.py --json out.json # also write per-case results
    python benchmarks/score_compat.py --only torch    # cases whose id starts with a prefix

Exit status: 0 when every case is right, 1 when some are wrong, 2 on a bad cases file.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib  # type: ignore[no-redef]

REPO = Path(__file__).resolve().parent.parent
CASES = Path(__file__).resolve().parent / "compat_eval" / "cases.toml"
VERDICTS = ("compatible", "incompatible", "unknown")

# First CLI argument (the spec's name) -> the group the table reports it under.
GROUPS = (
    ("tensorflow", "TensorFlow"),
    ("torch", "PyTorch"),
    ("jax", "JAX"),
    ("theano", "Theano"),
    ("dl4j", "DL4J"),
    ("onnxruntime", "ONNX Runtime"),
    ("cudnn", "cuDNN/driver/GPU"),
    ("cupy", "CuPy"),
    ("tensorrt", "TensorRT"),
    ("paddlepaddle", "PaddlePaddle"),
    ("vllm", "vLLM"),
)


@dataclass(frozen=True)
class Case:
    id: str
    args: tuple[str, ...]
    expected: str
    accept: tuple[str, ...]
    source: str
    why: str

    @property
    def group(self) -> str:
        name = self.args[0].split("==", 1)[0].lower() if self.args else ""
        for prefix, label in GROUPS:
            if name.startswith(prefix):
                return label
        return "other"


@dataclass(frozen=True)
class Result:
    id: str
    group: str
    args: list[str]
    expected: str
    accept: list[str]
    got: str
    right: bool
    exit_code: int | None
    seconds: float
    detail: str


class CasesError(Exception):
    pass


def load_cases(path: Path) -> list[Case]:
    try:
        with path.open("rb") as fh:
            data = tomllib.load(fh)
    except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise CasesError(f"cannot read {path}: {exc}") from exc
    raw = data.get("case")
    if not isinstance(raw, list) or not raw:
        raise CasesError(f"{path}: no [[case]] tables")
    cases: list[Case] = []
    seen: set[str] = set()
    for n, item in enumerate(raw, 1):
        where = f"{path}: case {n}"
        if not isinstance(item, dict):
            raise CasesError(f"{where}: not a table")
        for key in ("id", "args", "expected", "source", "why"):
            if key not in item:
                raise CasesError(f"{where}: missing '{key}'")
        cid, args, expected = item["id"], item["args"], item["expected"]
        accept = item.get("accept", [])
        if not isinstance(cid, str) or not cid:
            raise CasesError(f"{where}: 'id' must be a non-empty string")
        if cid in seen:
            raise CasesError(f"{where}: duplicate id {cid!r}")
        seen.add(cid)
        if not isinstance(args, list) or not args or not all(isinstance(a, str) for a in args):
            raise CasesError(f"{where} ({cid}): 'args' must be a non-empty list of strings")
        if expected not in VERDICTS:
            raise CasesError(f"{where} ({cid}): 'expected' must be one of {', '.join(VERDICTS)}")
        if not isinstance(accept, list) or any(a not in VERDICTS for a in accept):
            raise CasesError(f"{where} ({cid}): 'accept' must be a list of verdicts")
        for key in ("source", "why"):
            if not isinstance(item[key], str) or not item[key].strip():
                raise CasesError(f"{where} ({cid}): '{key}' must be a non-empty string")
        cases.append(Case(cid, tuple(args), expected, tuple(accept), item["source"], item["why"]))
    return cases


def parse_verdict(stdout: str) -> tuple[str | None, str]:
    """The `verdict` of the first JSON object on stdout, or None and why not."""
    text = stdout.strip()
    if not text:
        return None, "no output"
    start = text.find("{")
    if start < 0:
        return None, "no JSON object on stdout"
    try:
        obj, _ = json.JSONDecoder().raw_decode(text[start:])
    except json.JSONDecodeError as exc:
        return None, f"invalid JSON: {exc.msg}"
    if not isinstance(obj, dict):
        return None, "JSON is not an object"
    verdict = obj.get("verdict")
    if not isinstance(verdict, str):
        return None, "JSON has no 'verdict'"
    return verdict, ""


def run_case(case: Case, repo: Path, timeout: float) -> Result:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(repo) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    cmd = [sys.executable, "-m", "cudnn_doctor", "compat", *case.args, "--json"]
    t0 = time.perf_counter()
    exit_code: int | None
    try:
        proc = subprocess.run(
            cmd, cwd=repo, env=env, capture_output=True, timeout=timeout, stdin=subprocess.DEVNULL
        )
        exit_code = proc.returncode
        stdout = proc.stdout.decode("utf-8", "replace")
        stderr = proc.stderr.decode("utf-8", "replace")
    except subprocess.TimeoutExpired:
        exit_code, stdout, stderr = None, "", f"timed out after {timeout:g} s"
    seconds = time.perf_counter() - t0
    verdict, problem = parse_verdict(stdout)
    if exit_code is None or exit_code == 2 or verdict is None:
        last = stderr.strip().splitlines()[-1] if stderr.strip() else ""
        detail = "; ".join(p for p in (problem if exit_code != 2 else "exit 2", last) if p)
        got = "error"
    else:
        got, detail = verdict, ""
    right = got == case.expected or got in case.accept
    return Result(
        case.id, case.group, list(case.args), case.expected, list(case.accept),
        got, right, exit_code, round(seconds, 3), detail[:300],
    )


def report(results: list[Result], out=sys.stdout) -> None:
    groups: dict[str, list[Result]] = {}
    for r in results:
        groups.setdefault(r.group, []).append(r)
    order = [label for _, label in GROUPS] + ["other"]
    width = max(len(g) for g in groups) if groups else 10
    print(f"{'framework':<{width}}  right / total   compatible  incompatible  unknown", file=out)
    for label in order:
        rs = groups.get(label)
        if not rs:
            continue
        by = Counter(r.expected for r in rs)
        right = sum(r.right for r in rs)
        print(
            f"{label:<{width}}  {right:>5} / {len(rs):<5}   {by['compatible']:>10}  {by['incompatible']:>12}  "
            f"{by['unknown']:>7}",
            file=out,
        )
    right = sum(r.right for r in results)
    by = Counter(r.expected for r in results)
    print(
        f"{'all':<{width}}  {right:>5} / {len(results):<5}   {by['compatible']:>10}  {by['incompatible']:>12}  "
        f"{by['unknown']:>7}",
        file=out,
    )
    got = Counter(r.got for r in results)
    print("verdicts given: " + ", ".join(f"{k} {got[k]}" for k in (*VERDICTS, "error") if got[k]), file=out)
    wrong = [r for r in results if not r.right]
    if wrong:
        print(f"\nwrong ({len(wrong)}):", file=out)
        for r in wrong:
            exp = r.expected + (f" (or {', '.join(r.accept)})" if r.accept else "")
            line = f"  {r.id}: expected {exp}, got {r.got}  [{' '.join(r.args)}]"
            if r.detail:
                line += f"  -- {r.detail}"
            print(line, file=out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", type=Path, default=CASES, help="cases file (default: %(default)s)")
    ap.add_argument("--repo", type=Path, default=REPO, help="checkout put on PYTHONPATH (default: %(default)s)")
    ap.add_argument("--workers", type=int, default=2, help="cases run at once (default: %(default)s)")
    ap.add_argument("--timeout", type=float, default=60.0, help="seconds per case (default: %(default)s)")
    ap.add_argument("--only", action="append", default=[], metavar="PREFIX", help="only ids with this prefix")
    ap.add_argument("--json", dest="json_out", type=Path, metavar="OUT", help="write per-case results here")
    ns = ap.parse_args(argv)
    try:
        cases = load_cases(ns.cases)
    except CasesError as exc:
        print(f"score_compat: {exc}", file=sys.stderr)
        return 2
    if ns.only:
        cases = [c for c in cases if any(c.id.startswith(p) for p in ns.only)]
    if not cases:
        print("score_compat: no cases selected", file=sys.stderr)
        return 2
    t0 = time.perf_counter()
    with ThreadPoolExecutor(max_workers=max(1, ns.workers)) as pool:
        results = list(pool.map(lambda c: run_case(c, ns.repo.resolve(), ns.timeout), cases))
    elapsed = time.perf_counter() - t0
    report(results)
    print(f"\n{len(results)} cases in {elapsed:.1f} s ({max(1, ns.workers)} workers)")
    if ns.json_out:
        payload = {
            "cases_file": str(ns.cases),
            "right": sum(r.right for r in results),
            "total": len(results),
            "results": [asdict(r) for r in results],
        }
        ns.json_out.write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
    return 0 if all(r.right for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
