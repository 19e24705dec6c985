"""The walks through the house: for one `check --json`, one `fix --yes --json` and one `explain`, on a pretend
machine the tests' own builders make (a fake NVML driver, two fake cuDNN 9 copies on LD_LIBRARY_PATH: CD302, which
`fix` treats with one environment line), how far each goes:

- rooms: the package's modules whose functions ran in the command's own process;
- entered twice: the modules met again deeper on one call stack after another module came between (A -> B -> A,
  a climb back up), with the most times one stack held each;
- modules imported: the package's modules in sys.modules at the end;
- processes: every program started, the command's own included, its children's children too (strace -f, each
  successful execve), by program.

Usage: python benchmarks/house_walks.py [--json FILE]   (Linux, gcc and strace; from the repository's root)
Each command runs twice: once under strace for its processes, once in a Python with a profiler for its rooms.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PACKAGE = "cudnn_doctor"

# run in the traced interpreter: a profiler that keeps, per thread, the stack of the package's modules
_TRACER = r"""
import json, sys, threading
PACKAGE, OUT, ARGS = sys.argv[1], sys.argv[2], sys.argv[3:]
rooms, most = set(), {}
local = threading.local()

def profile(frame, event, arg):
    if event not in ("call", "return"):
        return
    state = getattr(local, "state", None)
    if state is None:
        state = local.state = ([], [], {})  # every frame: its module or None; the package's frames; runs per module
    frames, package, runs = state
    if event == "call":
        name = frame.f_globals.get("__name__", "")
        if name == PACKAGE or name.startswith(PACKAGE + "."):
            rooms.add(name)
            if not package or package[-1] != name:
                runs[name] = runs.get(name, 0) + 1
                if runs[name] > most.get(name, 0):
                    most[name] = runs[name]
            package.append(name)
            frames.append(name)
        else:
            frames.append(None)
        return
    if not frames:
        return
    name = frames.pop()
    if name is not None:
        package.pop()
        if not package or package[-1] != name:
            runs[name] -= 1

def dump():
    imported = sorted(m for m in sys.modules if m == PACKAGE or m.startswith(PACKAGE + "."))
    with open(OUT, "w") as stream:
        json.dump({"rooms": sorted(rooms), "entered": {k: v for k, v in most.items() if v > 1},
                   "imported": imported}, stream)

import atexit
atexit.register(dump)
threading.setprofile(profile)
sys.setprofile(profile)
sys.argv = ["cudnn-doctor", *ARGS]
from cudnn_doctor import cli
cli.main(ARGS)
"""


def pretend_machine(folder: Path) -> dict[str, str]:
    """The environment of a machine with a driver (fake NVML 580) and two cuDNN 9 copies on LD_LIBRARY_PATH."""
    sys.path.insert(0, str(REPO))
    from tests.fakes.build import fake_cudnn, fake_nvml

    cudnn9 = ["libcudnn_graph", "libcudnn_ops", "libcudnn_cnn", "libcudnn_adv", "libcudnn_engines_precompiled",
              "libcudnn_engines_runtime_compiled", "libcudnn_heuristic"]
    root, home = folder / "root", folder / "home"
    for made in (root / "etc", home):
        made.mkdir(parents=True, exist_ok=True)
    fake_nvml(folder / "driver", driver="580.65.06", cuda=13000)
    fake_cudnn(folder / "a", version=91900, cudart=13000, sublibraries=cudnn9)
    fake_cudnn(folder / "b", version=91400, cudart=13000, sublibraries=cudnn9)
    return {"PATH": "/usr/bin:/bin:/usr/sbin:/sbin", "HOME": str(home), "CUDNN_DOCTOR_SYSTEM_PREFIX": str(root),
            "CUDNN_DOCTOR_CACHE_DIR": str(folder / "cache"), "LANG": "C.UTF-8", "COLUMNS": "200",
            "LD_LIBRARY_PATH": f"{folder / 'a'}:{folder / 'b'}:{folder / 'driver'}", "PYTHONPATH": str(REPO)}


def processes(args: list[str], env: dict[str, str], cwd: Path) -> dict[str, object]:
    """Every program the command ARGS starts (itself included), from strace's successful execve calls."""
    with tempfile.NamedTemporaryFile("r") as log:
        subprocess.run(["strace", "-f", "-qq", "-s", "4096", "-e", "trace=execve", "-o", log.name, sys.executable, "-m", PACKAGE,
                        *args], env=env, cwd=cwd, capture_output=True, timeout=900)
        started = [re.search(r'execve\("([^"]*)", \[(.*)\], ', line) for line in log.read().splitlines()
                   if "execve(" in line and line.rstrip().endswith("= 0")]
    programs: dict[str, int] = {}
    for found in filter(None, started):
        words = re.findall(r'"((?:[^"\\]|\\.)*)"', found.group(2))
        name = os.path.basename(found.group(1))
        if name.startswith("python"):
            rest = [w for w in words[1:] if w not in ("-I", "-E", "-s", "-S", "-B", "-u")]
            if rest[:1] == ["-m"] and len(rest) > 1:
                name = f"python -m {rest[1]}"
            elif rest[:1] == ["-c"] and len(rest) > 3 and rest[2].startswith("["):  # child.python_module_argv
                name = f"python -m {rest[3]}"
            elif rest[:1] == ["-c"]:
                name = "python -c (a script)"
            elif rest:
                name = f"python {os.path.basename(rest[0])}"
        programs[name] = programs.get(name, 0) + 1
    return {"count": sum(programs.values()), "programs": dict(sorted(programs.items()))}


def walk(args: list[str], env: dict[str, str], cwd: Path) -> dict[str, object]:
    with tempfile.NamedTemporaryFile("r", suffix=".json") as out:
        subprocess.run([sys.executable, "-c", _TRACER, PACKAGE, out.name, *args], env=env, cwd=cwd,
                       capture_output=True, timeout=900)
        traced = json.loads(out.read() or "{}")
    short = {k.removeprefix(PACKAGE + "."): v for k, v in traced.get("entered", {}).items()}
    return {"rooms": len(traced.get("rooms", [])), "entered_twice": dict(sorted(short.items())),
            "imported": len(traced.get("imported", [])), "processes": processes(args, env, cwd)}


WALKS = {"check": ["check", "--json"], "fix --yes": ["fix", "--yes", "--json"],
         "explain": ["explain", "Could not load library libcudnn_cnn_infer.so.8"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", metavar="FILE", help="also write the figures to FILE")
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        env = pretend_machine(Path(folder))
        figures = {name: walk(args, env, Path(folder)) for name, args in WALKS.items()}
    for name, found in figures.items():
        procs = found["processes"]
        assert isinstance(procs, dict)
        print(f"{name}: {found['rooms']} rooms, {len(found['entered_twice'])} entered twice "  # type: ignore[arg-type]
              f"{found['entered_twice']}, {found['imported']} modules imported, {procs['count']} processes "
              f"{procs['programs']}")
    if options.json:
        Path(options.json).write_text(json.dumps(figures, indent=1) + "\n")


if __name__ == "__main__":
    main()
