"""The probe that needs no option, started before the command line is read.

On a GPU machine NVML's child costs as much as every other probe together: it opens the driver, as
`nvidia-smi` does (40-60 ms on an H100). The `cudnn-doctor` command (entry.py) starts it here, before
typer and the doctor's own modules are imported, so that it runs beside those imports instead of after
them. collect_report() takes it over only where its own decision is the same (the loader can find
libnvidia-ml.so.1) and a batch started then would be the very same child (command line, environment, time
allowed); otherwise it is stopped unread and collect_report() starts its own. Nothing here decides
anything: a wrong guess costs one child, never an answer.
"""

from __future__ import annotations

import re

from cudnn_doctor.probes.child import NVML_JOB, NVML_SONAME, Job, ProbeBatch
from cudnn_doctor.probes.context import SearchContext
from cudnn_doctor.probes.loader import resolve_like_loader
from cudnn_doctor.user_files import is_regular_file

COLLECTING = ("check", "fix", "bench", "explain")  # the commands that run collect_report()
HELP = ("--help", "-h")
NO_PROBES = ("--offline-only",)  # explain without this machine's readings
LD_CACHE_LIMIT = 64 << 20  # bytes of /etc/ld.so.cache read at most (a large machine's is a few MB)

CODE = re.compile(r"CD\d{3}", re.IGNORECASE)

_started: dict[Job, ProbeBatch] = {}


def start(argv: list[str]) -> None:
    """Start NVML's child when ARGV (sys.argv[1:]) runs a command that collects a report and the loader
    may find libnvidia-ml.so.1."""
    command = command_of(argv)
    if command not in COLLECTING or any(arg in HELP or arg in NO_PROBES for arg in argv):
        return
    if command == "explain" and any(CODE.fullmatch(arg) for arg in argv):
        return  # a finding code is explained from the registry alone
    if _may_load(NVML_SONAME, SearchContext.from_environment()):
        batch = _started[NVML_JOB] = ProbeBatch([NVML_JOB])
        batch.wait_launched()  # started here, not whenever the batch's thread next gets the interpreter


def take(job: Job, wanted: bool) -> ProbeBatch | None:
    """The batch started early for JOB, when WANTED and it is what a batch started now would be; any other
    early batch of JOB is stopped."""
    batch = _started.pop(job, None)
    if batch is None:
        return None
    if wanted and batch.starts_as([job]):
        return batch
    batch.stop()
    return None


def command_of(argv: list[str]) -> str | None:
    """The subcommand's name: the first argument that is not an option (the top level's options take no
    value)."""
    return next((arg for arg in argv if not arg.startswith("-")), None)


def _may_load(soname: str, ctx: SearchContext) -> bool:
    """Whether the loader may find SONAME: in an LD_LIBRARY_PATH or default folder, or named in the
    loader's cache. A superset of collect_report()'s exact answer, read without starting `ldconfig -p`."""
    if resolve_like_loader(soname, [], ctx, {}) is not None:  # the loader's own folders, its cache left out
        return True
    cache = ctx.system("/etc/ld.so.cache")
    if not is_regular_file(cache):  # missing, or a FIFO that would block the read
        return False
    try:
        with open(cache, "rb") as handle:
            return soname.encode() in handle.read(LD_CACHE_LIMIT)
    except OSError:
        return False
