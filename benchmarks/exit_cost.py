"""Where `check --json`'s wall time goes after its work is done: the in-process end against the process's end, and
what is still running then (threads, child processes). python benchmarks/exit_cost.py [--runs 5] [check args]"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time

CODE = r'''
import os, sys, time, threading
T0 = time.perf_counter()
sys.argv = ["cudnn-doctor", "check", "--json"] + sys.argv[1:]
from cudnn_doctor import entry
import io, contextlib
out = io.StringIO()
try:
    with contextlib.redirect_stdout(out):
        entry.main()
except SystemExit:
    pass
done = time.perf_counter() - T0
kids = []
for task in os.listdir("/proc/self/task"):
    try:
        kids += open(f"/proc/self/task/{task}/children").read().split()
    except OSError:
        pass
names = []
for pid in kids:
    try:
        names.append(open(f"/proc/{pid}/cmdline", "rb").read().replace(b"\0", b" ")[:120].decode("utf-8", "replace"))
    except OSError:
        pass
sys.stderr.write("DONE %.3f THREADS %r CHILDREN %r\n" % (done, [t.name for t in threading.enumerate()], names))
'''


def main() -> None:
    runs = 5
    args = sys.argv[1:]
    if args[:1] == ["--runs"]:
        runs, args = int(args[1]), args[2:]
    walls, dones = [], []
    for _ in range(runs + 1):
        started = time.perf_counter()
        answer = subprocess.run([sys.executable, "-c", CODE, *args], capture_output=True, text=True)
        wall = time.perf_counter() - started
        line = next((x for x in answer.stderr.splitlines() if x.startswith("DONE ")), "DONE nan")
        walls.append(wall)
        dones.append(float(line.split()[1]))
        print(f"wall {wall:.3f} s | {line}")
    print(f"median wall {statistics.median(walls[1:]):.3f} s, median in-process {statistics.median(dones[1:]):.3f} s")


if __name__ == "__main__":
    main()
