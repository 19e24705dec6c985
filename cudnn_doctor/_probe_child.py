"""The probe child's script: python -I -S _probe_child.py JOB [ARG] (the jobs and their answers: _probe_jobs.py).

A script is compiled from its source at every start; an imported module is read from its bytecode, which Python's own
import keeps beside it (__pycache__) and checks against the source's size and modification time, as it does for every
module of the doctor. So this script is only this: it imports _child_stdio.py (first: stdin, stdout and stderr a
preloaded library closed are /dev/null again) and _probe_jobs.py from its own folder, put last on sys.path, after the
standard library's folders (none of their modules is shadowed), and taken off once both are in. Compiling the two
from source was 7 ms of each probe child's 20 ms of CPU, five or more children in every check (benchmarks/README.md,
round sixteen). Standard library only, old syntax: it runs under whatever Python the doctor does."""

import os
import sys

if __name__ == "__main__":
    _FOLDER = os.path.dirname(os.path.abspath(__file__))
    sys.path.append(_FOLDER)
    try:
        import _child_stdio
        import _probe_jobs
    finally:
        sys.path.remove(_FOLDER)
    _probe_jobs.run_as_child(sys.argv, vars(_child_stdio))
