"""Run at the start of every child script of the doctor (_probe_child.py, _load_child.py, _deep_child.py,
_allreduce_child.py), from its own file: a library the user's environment preloads may close stdin, stdout or
stderr before the child's first line (Python then starts with sys.stdout None). Each one closed is /dev/null
again, so that a print or flush works and no pipe or file the child opens takes its number and gets what is
printed. Standard library only, old syntax: it runs under whatever Python the child does."""

import os
import sys

for _fd, _name, _mode in ((0, "stdin", "r"), (1, "stdout", "w"), (2, "stderr", "w")):
    try:
        os.fstat(_fd)
        continue
    except OSError:
        pass
    _null = os.open(os.devnull, os.O_RDWR)
    if _null != _fd:
        os.dup2(_null, _fd)
        os.close(_null)
    if getattr(sys, _name) is None:
        setattr(sys, _name, open(_fd, _mode, closefd=False))
