"""cudnn-doctor: find, check, install and benchmark CUDA and cuDNN."""

import sys as _sys

__version__ = "0.1.0"
# True in the `cudnn-doctor` command's own process (entry.main), False where a program calls the doctor in-process:
# only the command's environment is the one its process was started with (probes/context.started_environment)
COMMAND_PROCESS = False


def _command_started() -> bool:
    """Whether this process is the `cudnn-doctor` command (python -m cudnn_doctor, the console script), not a program
    importing the package."""
    first = _sys.argv[0] if _sys.argv else ""
    return first == "-m" or first.replace("\\", "/").rsplit("/", 1)[-1].startswith("cudnn-doctor")


if _command_started():
    # The command needs nothing from the folder it is started in, and a working folder inside an installed package
    # (site-packages/torch, read by a user) holds modules named like the standard library's (torch/__future__.py,
    # jax/typing.py): `python -m` and `python -c` put that folder first on sys.path, so the doctor's own first import
    # would fail there. Its entries leave this process's path before any other import; the package itself is already
    # found, and the children it starts set their own paths (child.py). What a program started in that folder meets
    # is still reported (CD419): the probes read the folder, not this process's path.
    try:
        import os as _os

        _here = _os.path.realpath(_os.getcwd())
        _sys.path[:] = [p for p in _sys.path if p not in ("", ".") and _os.path.realpath(p) != _here]
    except OSError:  # a working folder deleted under the shell: nothing of it can be imported either
        _sys.path[:] = [p for p in _sys.path if p not in ("", ".")]

try:
    # Under a limit on the size of the files a process writes (ulimit -f), Python cuts each .pyc it writes at the
    # limit (its writer does not check a short write) and keeps it: every later run would fail to import that module
    # ("marshal data too short"). The package's own modules are then compiled in memory only; this file is kept
    # small, as its own .pyc is written before it runs.
    try:
        import resource as _resource

        if _resource.getrlimit(_resource.RLIMIT_FSIZE)[0] != _resource.RLIM_INFINITY:
            _sys.dont_write_bytecode = True
    except (ImportError, OSError, ValueError):  # Windows: no such limit
        pass
    from cudnn_doctor import _cache_loader  # noqa: F401  (a damaged .pyc of the package read from its source)
except KeyboardInterrupt:  # Ctrl-C in the command's first milliseconds, before entry installs its handlers: 130, no
    # traceback of the imports it cut; a program importing the package gets its KeyboardInterrupt as ever
    if _command_started():
        raise SystemExit(130) from None
    raise
