"""cudnn-doctor: find, check, install and benchmark CUDA and cuDNN."""

import sys as _sys

__version__ = "0.1.0"
# True in the `cudnn-doctor` command's own process (entry.main), False where a program calls the doctor in-process:
# only the command's environment is the one its process was started with (probes/context.started_environment)
COMMAND_PROCESS = False

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
    if _sys.argv[:1] == ["-m"] or _sys.argv[0].replace("\\", "/").rsplit("/", 1)[-1].startswith("cudnn-doctor"):
        raise SystemExit(130) from None
    raise
