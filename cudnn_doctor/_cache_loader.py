"""The package's own modules found as Python finds them, each loaded from its source where its cached bytecode is cut
short or damaged (cudnn_doctor/__init__.py installs the finder, after it has stopped Python writing bytecode under a
file-size limit: this module's own .pyc is then not written either)."""

import importlib.machinery as _machinery
import os as _os
import sys as _sys


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
