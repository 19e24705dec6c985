"""The probe child's script: python -I -S _probe_child.py JOB [ARG] (the jobs and their answers: _probe_jobs.py).

A script is compiled from its source at every start; an imported module is read from its bytecode, which Python's own
import keeps beside it (__pycache__) and checks against the source's size and modification time, as it does for every
module of the doctor. So this script is only this: it imports _child_stdio.py (first: stdin, stdout and stderr a
preloaded library closed are /dev/null again) and _probe_jobs.py from its own folder, put last on sys.path, after the
standard library's folders (none of their modules is shadowed), and taken off once both are in. Compiling the two
from source was 10 ms of each probe child's 22 ms of CPU, five or more children in every check (benchmarks/README.md,
round sixteen). A .pyc cut short or damaged (one written under `ulimit -f`: Python keeps what its short write left) is
removed and the module compiled from its source, as the package's own modules are (cudnn_doctor/__init__.py).
Standard library only, old syntax: it runs under whatever Python the doctor does."""

import os
import sys


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


if __name__ == "__main__":
    import gc

    # as the command's own process (entry.COMMAND_GC_THRESHOLD): a child's short life makes little garbage, and
    # pynvml's import alone ran the collector 15 times (1.5 ms of NVML's child)
    gc.set_threshold(100000, *gc.get_threshold()[1:])
    _FOLDER = os.path.dirname(os.path.abspath(__file__))
    sys.path.append(_FOLDER)
    try:
        _STDIO = _imported("_child_stdio", _FOLDER)
        _JOBS = _imported("_probe_jobs", _FOLDER)
    finally:
        sys.path.remove(_FOLDER)
    _JOBS.run_as_child(sys.argv, vars(_STDIO))
