"""`fleet run --slurm`: run `check --json` once on every node of an allocation or partition
through Slurm's own `srun`, one report file per node, then merge them.

srun forwards each task's standard output to the submitting host, and `--output=DIR/%N.json`
gives one file per node there, so no shared filesystem is needed. Nothing here executes anything
on another machine by itself: Slurm does.

srun runs through the one child runner (`child.py`), so its output is read without blocking and
kept bounded (a flood on its stderr costs nothing), and it ends at the deadline even when something
it started still holds its stderr. At the deadline, and when the doctor is stopped (Ctrl-C, an error,
SIGTERM once the command line turns it into an exception), srun is stopped the way Slurm expects: two
SIGINTs within a second, on which srun cancels its job steps and waits for them; it is killed only if
it has not exited some seconds later. srun writes into a new folder of the doctor's own, so nothing
that was there before (a FIFO named like a node's report) can block it; with --keep that folder is
inside the --keep folder, and the reports are renamed into it at the end. The folder is deleted only
once srun is gone.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from cudnn_doctor.child import run_child
from cudnn_doctor.errors import DoctorError
from cudnn_doctor.fleet import srun_options
from cudnn_doctor.fleet.merge import FleetResult, NodeReport, merge, read_node
from cudnn_doctor.operating_system import CURRENT
from cudnn_doctor.user_files import UnreadableFile, open_user_file, read_user_head
from cudnn_doctor.versions import ascii_digits

DEFAULT_DEADLINE_S = 600.0
# srun: "a second SIGINT within one second terminates the job step"; then time for it to say so and exit
STOP_SIGNALS = ((0.0, signal.SIGINT), (0.3, signal.SIGINT))
STOP_GRACE_S = 10.0
# the stopping is inside --deadline: srun is asked to stop this share of the deadline before it (at most the
# signals' pause and STOP_GRACE_S), so `--deadline 2` ends in about 2 s, a queued job cancelled
STOP_SHARE = 0.3
JOB_NAME_PREFIX = "cudnn-doctor-fleet-"
SCANCEL_TIMEOUT_S = 5.0
MAX_COMPLAINTS = 20  # srun's error lines kept (its stderr is read to the end, never kept whole)


@dataclass(frozen=True)
class SlurmRun:
    srun_options: tuple[str, ...]  # e.g. ("--partition=gpu", "--nodes=4") or ("--jobid=1234",)
    check_command: tuple[str, ...]  # how a node starts the doctor
    deadline_s: float = DEFAULT_DEADLINE_S
    keep: str | None = None  # a folder to keep the per-node reports in


def default_check_command() -> tuple[str, ...]:
    """The doctor as this host runs it; clusters install software at the same path on every node."""
    return (sys.executable, "-I", "-m", "cudnn_doctor", "check", "--json")


def keep_folder(keep: str | None) -> Path | None:
    """The --keep folder, made if missing; a usage error when it names a file or cannot be made."""
    if keep is None:
        return None
    if not keep.strip():
        raise DoctorError("--keep is empty", fix="--keep DIR, a folder for every node's report", code="CD001")
    path = Path(keep)
    try:
        path.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        raise DoctorError(f"--keep {keep}: exists and is not a folder",
                          fix="give a folder (it is made if missing) for every node's report", code="CD006") from None
    except (OSError, ValueError) as error:
        raise DoctorError(f"--keep {keep}: cannot make that folder ({getattr(error, 'strerror', None) or error})",
                          fix="give a folder you can write to, or leave --keep out", code="CD006") from None
    if not path.is_dir():
        raise DoctorError(f"--keep {keep}: exists and is not a folder",
                          fix="give a folder (it is made if missing) for every node's report", code="CD006")
    return path


def srun_argv(run: SlurmRun, folder: Path) -> list[str]:
    srun = shutil.which("srun")
    if srun is None:
        raise DoctorError("srun not found: this machine is not a Slurm submit host",
                          fix="run it where `srun` works, or gather `check --json` reports yourself "
                              "and use `cudnn-doctor fleet merge DIR`", code="CD008")
    # %n (the node's index in the job) names one file per node even where several Slurm nodes share a host
    # (multiple-slurmd); each node first says its Slurm name on standard error, which names its report
    pattern = str(folder).replace("%", "%%")  # srun reads % in a file name as a pattern; %% is a %
    named = [f"--job-name={job_name(folder)}"] if _own_job(run.srun_options) else []
    return [srun, "--ntasks-per-node=1", "--kill-on-bad-exit=0", *named, *_working_folder(run.srun_options),
            *run.srun_options,
            f"--output={pattern}/%n.json", f"--error={pattern}/%n.err", "/bin/sh", "-c", SAY_NODE_NAME,
            "cudnn-doctor-node", *run.check_command]


def _working_folder(options: tuple[str, ...]) -> list[str]:
    """--chdir=THIS FOLDER, unless OPTIONS give one (-D, --chdir): srun's tasks start in srun's own working folder
    (srun(1) --chdir: "The default is to chdir to the current working directory of the srun process"), and the child
    runner starts srun from "/", so each node's check ran in "/", not where the user's job runs (its working
    folder's modules, a relative path in its variables)."""
    if "chdir" in srun_options.given(options) or any(os.environ.get(name) for name in WORKING_FOLDER_VARIABLES):
        return []
    try:
        return [f"--chdir={os.getcwd()}"]
    except OSError:  # removed under us: the nodes start where srun does
        return []


# srun reads these as its --chdir (src/srun/opt.c env_vars: SLURM_WORKING_DIR; SLURM_REMOTE_CWD in older releases)
WORKING_FOLDER_VARIABLES = ("SLURM_WORKING_DIR", "SLURM_REMOTE_CWD")
# srun reads these as options the doctor's srun cannot run under (src/srun/opt.c env_vars): SLURM_LABELIO is --label
# (each line of a node's report written after "0: ", no longer JSON), SLURM_SRUN_MULTI is --multi-prog (the
# doctor's /bin/sh read as a multi-prog configuration file); a site's or a shell's default, not meant for this run
UNRUNNABLE_VARIABLES = ("SLURM_LABELIO", "SLURM_SRUN_MULTI")
UNRUNNABLE_OPTIONS = {"label": "-l/--label writes each line of a node's report after its task number ('0: '), which is "
                               "then no JSON to merge",
                      "multi-prog": "--multi-prog reads the command as a configuration file; the doctor's command is "
                                    "its check"}


def check_options(options: tuple[str, ...]) -> None:
    """A usage error where OPTIONS cannot go before the doctor's own words on srun's command line (srun_options.read)
    or ask for what the doctor cannot read back (--label, --multi-prog)."""
    found, why = srun_options.read(options)
    if why is not None:
        raise DoctorError(f"srun options: {why}", fix="give srun only options, each with its value, e.g. "
                          "`fleet run --slurm -- --partition=gpu --nodes=8`", code="CD001")
    for option, reason in UNRUNNABLE_OPTIONS.items():
        if option in found:
            raise DoctorError(f"srun options: {reason}", fix=f"leave --{option} out: the doctor names each node's "
                              "report itself", code="CD001")


def srun_environment() -> dict[str, str] | None:
    """srun's environment: this process's, without the variables srun would read as --label or --multi-prog."""
    if not any(name in os.environ for name in UNRUNNABLE_VARIABLES):
        return None
    return {name: value for name, value in os.environ.items() if name not in UNRUNNABLE_VARIABLES}


def job_name(folder: Path) -> str:
    """The name of the job this run's srun asks for: unique (its folder's), so that it alone can be cancelled."""
    return JOB_NAME_PREFIX + folder.name.rsplit("-", 1)[-1]


def _own_job(options: tuple[str, ...]) -> bool:
    """Whether srun makes a job of its own (not a step in the user's allocation, --jobid) with no name the user
    chose: then it is named, and cancelled by that name when srun was stopped."""
    named = srun_options.given(options)
    return "jobid" not in named and "job-name" not in named


NODE_NAME_TAG = "cudnn-doctor-node: "
SAY_NODE_NAME = f'printf "{NODE_NAME_TAG}%s\\n" "${{SLURMD_NODENAME:-}}" >&2; exec "$@"'


NODE_ERR_REWRITE_BYTES = 1 << 20  # a node's standard error up to this is kept without its name line


def _slurm_names(folder: Path) -> None:
    """Rename each node's N.json / N.err after the Slurm node name it gave (its first line on standard error). The
    .err is read as a user's file (a node's check may flood it with gigabytes, or leave a FIFO there): its first
    MiB, without blocking; one longer is renamed as it is, its first line the name."""
    import re

    for report in sorted(folder.glob("*.json")):
        if not ascii_digits(report.stem):
            continue
        errors = report.with_suffix(".err")
        try:
            with open_user_file(str(errors)) as stream:
                head = stream.read(NODE_ERR_REWRITE_BYTES + 1)
        except (UnreadableFile, OSError):
            continue
        first, newline, rest = head.partition(b"\n")
        line = first.decode("utf-8", "replace")
        name = line.removeprefix(NODE_NAME_TAG).strip() if newline and line.startswith(NODE_NAME_TAG) else ""
        if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}", name) or (folder / f"{name}.json").exists():
            continue
        report.rename(folder / f"{name}.json")
        if len(head) > NODE_ERR_REWRITE_BYTES:  # a flood: kept as srun wrote it, never read whole
            errors.rename(folder / f"{name}.err")
            continue
        errors.unlink()
        (folder / f"{name}.err").write_bytes(rest)


def run_slurm(run: SlurmRun) -> tuple[FleetResult, str | None]:
    """Run the checks, merge what came back; the second value is srun's complaint, if it failed."""
    check_options(run.srun_options)
    keep = keep_folder(run.keep)
    try:
        # absolute: srun's tasks open --output in their working folder (-D, SLURM_WORKING_DIR), not in the doctor's,
        # so a relative --keep given with -D elsewhere was no folder there and no node answered
        folder = Path(os.path.abspath(tempfile.mkdtemp(prefix=".cudnn-doctor-fleet-" if keep else "cudnn-doctor-fleet-",
                                                       dir=keep)))
    except OSError as error:
        raise DoctorError(f"--keep {run.keep}: cannot write there ({error.strerror or error})",
                          fix="give a folder you can write to", code="CD006") if keep else \
            DoctorError(f"cannot make a temporary folder: {error.strerror or error}", fix="check TMPDIR", code="CD006") from None
    janitor = None
    try:  # srun is gone (stopped, or killed with what it started) before this folder is deleted
        argv = srun_argv(run, folder)
        janitor = _start_janitor(argv, folder)
        try:
            complaint = _run_srun(argv, run.deadline_s)
        except BaseException:  # Ctrl-C, SIGTERM, an error: the job goes too, not only srun
            _cancel_job(argv)
            raise
        if complaint is not None and complaint.startswith("stopped after"):
            _cancel_job(argv)
        _slurm_names(folder)
        reports = _reports(folder)
        if not reports:
            raise DoctorError(f"srun ran no check: {complaint or 'no node answered'}",
                              fix="check the srun options (partition, nodes, account) with `srun hostname`", code="CD009")
        result = merge(_named(_with_stderr(read_node(path), path), path) for path in reports)
        unkept = _move_into(folder, keep) if keep else []
        missing = complaint if complaint and "stopped after" in complaint else None
        if unkept:
            missing = "; ".join(filter(None, (missing, f"not kept in --keep: {', '.join(unkept[:5])}")))
        return result, missing
    finally:
        shutil.rmtree(folder, ignore_errors=True)
        _end_janitor(janitor)


# The janitor: a process of its own session (no Ctrl-C of the terminal's reaches it, no PR_SET_PDEATHSIG) that
# waits on a pipe from the doctor. The doctor writes "done" once srun is gone and its folder deleted; a doctor killed
# with SIGKILL, which can clean nothing, closes the pipe without it, and the janitor does what the doctor would
# have: srun (found by its unique --output word) stopped the Slurm way, then killed, the job cancelled by its name,
# the folder deleted. Before it, srun, an external program, ran on with its queued job after the doctor was gone.
JANITOR = r"""
import os, shutil, signal, sys, time
output, folder, name, scancel, user, pause, grace = sys.argv[1:8]
said = sys.stdin.buffer.read(8)
if said.startswith(b"done"):
    sys.exit(0)
def sruns():
    found = []
    for pid in os.listdir("/proc"):
        if pid and not pid.strip("0123456789") and int(pid) != os.getpid():  # a process; not itself: its command line holds the word too
            try:
                with open("/proc/%s/cmdline" % pid, "rb") as file:
                    if os.fsencode(output) in file.read().split(b"\0"):
                        found.append(int(pid))
            except OSError:
                pass
    return found
for pid in sruns():
    for number in (signal.SIGINT, signal.SIGINT):
        try:
            os.kill(pid, number)
        except OSError:
            pass
        time.sleep(float(pause))
end = time.monotonic() + float(grace)
while sruns() and time.monotonic() < end:
    time.sleep(0.1)
for pid in sruns():
    try:
        os.kill(pid, signal.SIGKILL)
    except OSError:
        pass
shutil.rmtree(folder, ignore_errors=True)
if name and scancel:
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    try:  # scancel, 10 s at most
        pid = os.posix_spawn(scancel, [scancel, "--name=" + name] + (["--user=" + user] if user else []), os.environ)
        end = time.monotonic() + 10
        while os.waitpid(pid, os.WNOHANG) == (0, 0):
            if time.monotonic() > end:
                os.kill(pid, signal.SIGKILL)
                break
            time.sleep(0.1)
    except OSError:
        pass
"""


def _start_janitor(argv: list[str], folder: Path) -> subprocess.Popen[bytes] | None:
    """The janitor of this run (JANITOR), or None where it cannot start (the run goes on without it)."""
    output = next((word for word in argv if word.startswith("--output=")), None)
    if output is None:
        return None
    named = next((word.split("=", 1)[1] for word in argv if word.startswith(f"--job-name={JOB_NAME_PREFIX}")), "")
    user = os.environ.get("USER") or os.environ.get("LOGNAME") or ""
    return CURRENT.start_outliving([sys.executable, "-I", "-c", JANITOR, output, str(folder), named,
                                    shutil.which("scancel") or "", user, str(STOP_SIGNALS[-1][0]), str(STOP_GRACE_S)])


def _end_janitor(janitor: subprocess.Popen[bytes] | None) -> None:
    """Tell the janitor the run ended as it should (srun gone, the folder deleted): it exits doing nothing."""
    if janitor is None or janitor.stdin is None:
        return
    try:
        janitor.stdin.write(b"done\n")
        janitor.stdin.close()
        janitor.wait(timeout=5)
    except (OSError, subprocess.TimeoutExpired):
        pass


def _reports(folder: Path) -> list[Path]:
    try:
        return sorted(folder / name for name in os.listdir(folder) if name.endswith(".json"))
    except OSError:
        return []


def _move_into(folder: Path, keep: Path) -> list[str]:
    """srun's files, renamed into KEEP (same filesystem): what was there under that name is replaced,
    never opened, so a FIFO there cannot block. The files that could not be kept, each with why."""
    unkept = []
    for name in sorted(os.listdir(folder)):
        try:
            os.replace(folder / name, keep / name)
        except OSError as error:  # a folder of that name, say: the report stays unkept, the merge stands
            unkept.append(f"{name} ({error.strerror or error})")
    return unkept


def _named(node: NodeReport, path: Path) -> NodeReport:
    """A node is named as Slurm names it (its report's file), not by the host name inside the report: several
    Slurm nodes may share a host, and a node's NodeName is what `srun -w` and `sinfo` take."""
    from dataclasses import replace

    name = path.name.removesuffix(".json")
    return node if ascii_digits(name) or name == node.node else replace(node, node=name)


def _with_stderr(node: NodeReport, path: Path) -> NodeReport:
    """A node whose report is missing or broken: say what its check printed on standard error."""
    if node.failure is None:
        return node
    try:
        lines = [line for line in read_user_head(str(path.with_suffix(".err")), 4096).decode("utf-8", "replace")
                 .strip().splitlines() if not line.startswith(NODE_NAME_TAG)]
    except UnreadableFile:
        lines = []
    if lines:
        return NodeReport(node.node, node.source, failure=f"{node.failure}; it said: {lines[-1][:200]}")
    return node


def _cancel_job(argv: list[str]) -> None:
    """The job srun asked for, cancelled by its unique name (scancel, through the child runner): srun stopped in
    the middle of waiting for its allocation, or killed, may leave it queued or running."""
    named = next((word.split("=", 1)[1] for word in argv if word.startswith(f"--job-name={JOB_NAME_PREFIX}")), None)
    scancel = shutil.which("scancel")
    if named is None or scancel is None:
        return
    user = os.environ.get("USER") or os.environ.get("LOGNAME")
    run_child([scancel, f"--name={named}", *([f"--user={user}"] if user else [])], None,
              time.monotonic() + SCANCEL_TIMEOUT_S, what="scancel")


def _run_srun(argv: list[str], deadline_s: float) -> str | None:
    """Run srun to its end or the deadline (then stopped the Slurm way); its complaint, if it failed."""
    complaints: list[str] = []

    def on_line(line: bytes) -> None:
        text = line.decode("utf-8", "replace").strip()
        # srun's errors, and getopt's refusals of its options, which say no 'error' and begin with the path srun
        # was started by ("/usr/bin/srun: unrecognized option '--x'", "...: option '--job=x' is ambiguous"); srun's
        # own last line is only 'Try "srun --help" for more information'
        said_by = text.split(" ", 1)[0]
        if text and len(complaints) < MAX_COMPLAINTS and ("error" in text.lower() or (
                said_by.endswith("srun:") and ("option" in text or "requires an argument" in text))):
            complaints.append(text[:300])

    stopping = min(STOP_GRACE_S + STOP_SIGNALS[-1][0], deadline_s * STOP_SHARE)
    grace = max(0.0, stopping - STOP_SIGNALS[-1][0])
    answer = run_child(argv, srun_environment(), time.monotonic() + deadline_s - stopping, what="srun", on_stderr_line=on_line,
                       stop_signals=STOP_SIGNALS, stop_grace=grace)
    if answer.timed_out:
        return f"stopped after {deadline_s:.0f} s (--deadline): nodes that had not answered are missing"
    if answer.exit_code is None:
        raise DoctorError(f"srun could not start: {answer.error}", fix="check the Slurm installation", code="CD009")
    if answer.exit_code == 0:
        return None
    # exit 1 is also what srun says when a node's check found problems, which is an answer; the
    # caller uses this only where a node sent nothing back
    return (complaints[0] if complaints else answer.stderr_tail.strip() or f"srun: exit status {answer.exit_code}")[:300]
