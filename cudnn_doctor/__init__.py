"""cudnn-doctor: find, check, install and benchmark CUDA and cuDNN."""

import sys as _sys

__version__ = "0.1.0"
# True in the `cudnn-doctor` command's own process (entry.main), False where a program calls the doctor in-process:
# only the command's environment is the one its process was started with (probes/context.started_environment)
COMMAND_PROCESS = False

try:
    import importlib.machinery as _machinery
    import os as _os

    # Under a limit on the size of the files a process writes (ulimit -f), Python cuts each .pyc it writes at the limit
    # (its writer does not check a short write) and keeps it: every later run would fail to import that module
    # ("marshal data too short"). The package's own modules are then compiled in memory only.
    try:
        import resource as _resource

        if _resource.getrlimit(_resource.RLIMIT_FSIZE)[0] != _resource.RLIM_INFINITY:
            _sys.dont_write_bytecode = True
    except (ImportError, OSError, ValueError):  # Windows: no such limit
        pass

    class _SourceWhereCacheBroken(_machinery.SourceFileLoader):
        """A module of the package whose .pyc was cut short or damaged (by an earlier run under ulimit -f, by an older
        release of the doctor that wrote one there) is compiled from its source, and that .pyc removed where it can be:
        the run goes on, and the next one writes it whole."""

        def get_code(self, fullname: str):  # type: ignore[no-untyped-def]
            try:
                return super().get_code(fullname)
            except (EOFError, ValueError):  # marshal: "data too short", "bad marshal data"
                import importlib.util

                path = self.get_filename(fullname)
                try:
                    _os.unlink(importlib.util.cache_from_source(path))
                except (OSError, NotImplementedError, ValueError):
                    pass
                return self.source_to_code(self.get_data(path), path)

    class _Finder:
        """Finds the package's modules as Python does, each with the loader above."""

        @classmethod
        def find_spec(cls, name, path=None, target=None):  # type: ignore[no-untyped-def]
            if not name.startswith("cudnn_doctor."):
                return None
            spec = _machinery.PathFinder.find_spec(name, path, target)
            if spec is not None and type(spec.loader) is _machinery.SourceFileLoader:
                spec.loader = _SourceWhereCacheBroken(spec.loader.name, spec.loader.path)
            return spec

    if _Finder not in _sys.meta_path:
        _sys.meta_path.insert(0, _Finder)
except KeyboardInterrupt:  # Ctrl-C in the command's first milliseconds, before entry installs its handlers: it ends
    # as every command ends on SIGINT (130, no traceback of the imports it cut); a program importing the package
    # gets its KeyboardInterrupt as ever
    if _sys.argv[:1] == ["-m"] or _sys.argv[0].replace("\\", "/").rsplit("/", 1)[-1].startswith("cudnn-doctor"):
        raise SystemExit(130) from None
    raise
