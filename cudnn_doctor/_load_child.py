"""The loading child's script: python -I -S _load_child.py USER SITE_PACKAGES ... (what it does: _load_jobs.py).

Like _probe_child.py: a script is compiled from its source at every start, an imported module read from the bytecode
Python's import keeps beside it and checks against the source; this script imports _child_stdio.py (first) and
_load_jobs.py from its own folder, put last on sys.path and taken off once both are in (compiling the two from source
was 9 ms of this child's 35 ms of CPU). A .pyc cut short or damaged is removed and the module compiled from its
source. Standard library only, old syntax: it may run under the framework's own Python."""

import os
import sys


def _imported(name, folder):
    """Module NAME of FOLDER: from its bytecode where that is whole, else from its source (_probe_child.py's own)."""
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
        _JOBS = _imported("_load_jobs", _FOLDER)
    finally:
        sys.path.remove(_FOLDER)
    _JOBS.run_as_child(sys.argv, vars(_STDIO))
