"""Where one `check --json` spends its wall time, in order: imports, the command line, each step of diagnose, the
probes' own timings, and a profile of the run (cProfile, the costliest functions by own time).

    python benchmarks/check_timeline.py [--runs 5] [--profile] [--sort cumulative] [--lines 30]

Each run is a fresh process started as `python -m cudnn_doctor check --json` would be (entry.main: signals,
then argparse reads the command line), with markers put around the steps from outside the package; the medians of
RUNS are printed. Bytecode is written and read as an installed package's is."""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

CHILD = r"""
import io, json, sys, time
T0 = time.perf_counter()
marks = []
def mark(name):
    marks.append((name, round((time.perf_counter() - T0) * 1000, 1)))
sys.argv = ["cudnn-doctor", "check", "--json"]
from cudnn_doctor import signals
signals.install()
from cudnn_doctor import cli, runner; mark("cli (argparse) imported")
import cudnn_doctor.commands.check as check; mark("commands.check imported")
import cudnn_doctor.doctor.diagnosis as diagnosis
def wrap(module, name, label):
    original = getattr(module, name)
    def wrapped(*args, **kwargs):
        mark(label + " start"); result = original(*args, **kwargs); mark(label + " end"); return result
    setattr(module, name, wrapped)
wrap(check, "diagnose", "diagnose")
import cudnn_doctor.probes.collect as collect, cudnn_doctor.rules as rules  # imported by diagnose when it runs
for module, name, label in ((collect, "collect_report", "collect"), (rules, "evaluate", "rules"),
                            (diagnosis, "_plan_treatment", "plan"), (rules, "summarize", "summary")):
    wrap(module, name, label)
import cudnn_doctor.commands.check
if CHILDREN:  # each child's start and end, named by what it runs
    from cudnn_doctor import child as child_module
    def label(request):
        argv = [a for a in request.argv[("python" in request.argv[0].rsplit("/", 1)[-1]):] if not a.startswith("-")][:3]
        return " ".join(a.rsplit("/", 1)[-1][:40] for a in argv)
    _start, _end = child_module.ChildBatch._start, child_module.ChildBatch._end
    def start(self, index, *args, **kw):
        mark("child start: " + label(self.requests[index])); return _start(self, index, *args, **kw)
    def end(self, child, *args, **kw):
        mark("child end: " + label(self.requests[child.index])); return _end(self, child, *args, **kw)
    child_module.ChildBatch._start, child_module.ChildBatch._end = start, end
    _results = child_module.ChildBatch.answers
    def answers(self):
        mark("wait for " + ", ".join(label(r) for r in self.requests)[:80]); out = _results(self); mark("waited"); return out
    child_module.ChildBatch.answers = answers
if PROFILE:
    import cProfile, pstats
    profile = cProfile.Profile(); profile.enable()
import os, tempfile
held = tempfile.TemporaryFile(); saved = os.dup(1); os.dup2(held.fileno(), 1)
runner.call(cli._invoke_app, args=sys.argv[1:])  # the parser and the body, as runner.run runs them (run ends the process)
sys.stdout.flush(); os.dup2(saved, 1)
mark("end")
if PROFILE:
    profile.disable(); text = io.StringIO()
    pstats.Stats(profile, stream=text).sort_stats(SORT).print_stats(*FILTER, LINES); sys.stderr.write(text.getvalue())
held.seek(0); report = json.loads(held.read())
print(json.dumps({"marks": marks, "timings_ms": report.get("timings_ms")}))
"""


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--sort", default="tottime", choices=["tottime", "cumulative"])
    parser.add_argument("--lines", type=int, default=30)
    parser.add_argument("--children", action="store_true", help="mark each child's start and end (one run's order)")
    parser.add_argument("--only-doctor", action="store_true", help="the profile's lines of the doctor's own code only")
    options = parser.parse_args()
    env = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))
    neutral = tempfile.mkdtemp(prefix="check-timeline-")
    code = (CHILD.replace("PROFILE", "True" if options.profile else "False").replace("SORT", repr(options.sort))
            .replace("LINES", str(options.lines)).replace("CHILDREN", str(options.children)).replace("*FILTER, ", "'cudnn_doctor', " if options.only_doctor else ""))
    subprocess.run([sys.executable, "-c", code], capture_output=True, env=env, cwd=neutral)  # warm-up
    runs = []
    for _ in range(options.runs):
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=neutral)
        if done.returncode != 0 or not done.stdout.strip():
            sys.exit(done.stderr)
        runs.append(json.loads(done.stdout.splitlines()[-1]))
        profile = done.stderr
    if options.children:  # the marks of one run, in order (names repeat)
        for name, ms in runs[len(runs) // 2]["marks"]:
            print(f"{ms:8.1f} ms  {name}")
        return
    names = [name for name, _ in runs[0]["marks"]]
    for name in names:
        values = [dict(run["marks"]).get(name) for run in runs]
        print(f"{statistics.median(v for v in values if v is not None):8.1f} ms  {name}")
    for key in runs[0]["timings_ms"]:
        print(f"{statistics.median(run['timings_ms'][key] for run in runs):8.1f} ms  probes' own: {key}")
    if options.profile:
        print(profile)


if __name__ == "__main__":
    main()
