"""The one script of the doctor's job children: python -I -S _job_child.py JOBS ARG... where JOBS names the module of
jobs it runs (_probe_jobs: vendor libraries asked and answered in JSON; _load_jobs: cuDNN loaded as each framework's
own code loads it), each module's run_as_child given the rest as its argv (ARG..., after this script's path).

A script is compiled from its source at every start; an imported module is read from its bytecode, which Python's own
import keeps beside it (__pycache__) and checks against the source's size and modification time, as it does for every
module of the doctor. So this script is only this: it imports _child_stdio.py (first: stdin, stdout and stderr a
preloaded library closed are /dev/null again, the child dies with the doctor) and the jobs module from its own folder,
put last on sys.path, after the standard library's folders (none of their modules is shadowed), and taken off once
both are in. Compiling them from source was 10 ms of each probe child's 22 ms of CPU and 9 of the loading child's 35
(benchmarks/README.md, round sixteen). A .pyc cut short or damaged (one written under `ulimit -f`: Python keeps what
its short write left) is removed and the module compiled from its source, as the package's own modules are
(cudnn_doctor/__init__.py). JOBS is one of JOBS_MODULES, never any other name: what this child imports is the doctor's
own code. Standard library only, old syntax: it runs under whatever Python the doctor does, or the framework's own."""

import os
import sys

JOBS_MODULES = ("_probe_jobs", "_load_jobs")


def _imported(name, folder):
    """Module NAME of FOLDER: from its bytecode where that is whole, else from its source."""
    try:
        return __import__(name)
    except (EOFError, ValueError):  # marshal: "data too short", "bad marshal data"
        pass
    import importlib.machinery
    import importlib.util

    path = os.path.join(folder, name + ".py")
    try:
        os.unlink(importlib.util.cache_from_source(path))  # the next run writes it whole
    except (OSError, NotImplementedError, ValueError):
        pass
    loader = importlib.machinery.SourceFileLoader(name, path)
    module = type(sys)(name)
    module.__file__ = path
    sys.modules[name] = module
    exec(loader.source_to_code(loader.get_data(path), path), module.__dict__)
    return module


FROM_STDIN = "stdin"  # _job_child.py JOBS stdin: the rest of the command line read from standard input


def _arguments_read():
    """The arguments the doctor wrote on standard input (one JSON list of strings, one line), once it knew them; none
    (stdin closed unwritten: the doctor did not need this child) ends the child quietly."""
    import json

    line = os.read(0, 1 << 20) if _readable() else b""
    while line and not line.endswith(b"\n"):
        more = os.read(0, 1 << 20)
        if not more:
            break
        line += more
    try:
        arguments = json.loads(line.decode("utf-8", "surrogateescape")) if line.strip() else None
    except ValueError:
        arguments = None
    if not isinstance(arguments, list) or not all(isinstance(a, str) for a in arguments):
        sys.exit(0)
    return arguments


def _readable():
    try:
        os.fstat(0)
    except OSError:  # stdin closed before this child could read it
        return False
    return True


def run(argv):
    """Import _child_stdio and the jobs module argv[1] names, then hand the jobs module its argv (this script's path,
    then the rest)."""
    if len(argv) < 2 or argv[1] not in JOBS_MODULES:
        sys.stderr.write("usage: _job_child.py {} ARG...\n".format("|".join(JOBS_MODULES)))
        sys.exit(2)
    folder = os.path.dirname(os.path.abspath(__file__))
    sys.path.append(folder)
    try:
        stdio = _imported("_child_stdio", folder)
        _imported("_proc_maps", folder)  # the one reader of /proc/self/maps, which both jobs modules import
        jobs = _imported(argv[1], folder)
    finally:
        sys.path.remove(folder)
    if argv[2:] == [FROM_STDIN]:  # started before its jobs were known: they come as one JSON line on stdin
        argv = argv[:2] + _arguments_read()
    wrong = jobs.usage_error([argv[0]] + argv[2:])
    if wrong is not None:  # a command line not the doctor's: one line, as for a name of jobs not its own
        sys.stderr.write(f"usage: _job_child.py {argv[1]} {wrong}\n")
        sys.exit(2)
    jobs.run_as_child([argv[0]] + argv[2:], vars(stdio))


if __name__ == "__main__":
    import gc

    # as the command's own process (entry.COMMAND_GC_THRESHOLD): a child's short life makes little garbage, and
    # pynvml's import alone ran the collector 15 times (1.5 ms of NVML's child)
    gc.set_threshold(100000, *gc.get_threshold()[1:])
    run(sys.argv)
