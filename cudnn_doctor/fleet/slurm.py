"""`fleet run --slurm`: run `check --json` once on every node of an allocation or partition
through Slurm's own `srun`, one report file per node, then merge them.

srun forwards each task's standard output to the submitting host, and `--output=DIR/%N.json`
gives one file per node there, so no shared filesystem is needed. Nothing here executes anything
on another machine by itself: Slurm does.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from cudnn_doctor.errors import DoctorError
from cudnn_doctor.fleet.merge import FleetResult, NodeReport, merge, read_node

DEFAULT_DEADLINE_S = 600.0


@dataclass(frozen=True)
class SlurmRun:
    srun_options: tuple[str, ...]  # e.g. ("--partition=gpu", "--nodes=4") or ("--jobid=1234",)
    check_command: tuple[str, ...]  # how a node starts the doctor
    deadline_s: float = DEFAULT_DEADLINE_S
    keep: str | None = None  # a folder to keep the per-node reports in


def default_check_command() -> tuple[str, ...]:
    """The doctor as this host runs it; clusters install software at the same path on every node."""
    return (sys.executable, "-I", "-m", "cudnn_doctor", "check", "--json")


def srun_argv(run: SlurmRun, folder: Path) -> list[str]:
    srun = shutil.which("srun")
    if srun is None:
        raise DoctorError("srun not found: this machine is not a Slurm submit host",
                          fix="run it where `srun` works, or gather `check --json` reports yourself "
                              "and use `cudnn-doctor fleet merge DIR`")
    # %n (the node's index in the job) names one file per node even where several Slurm nodes share a host
    # (multiple-slurmd); each node first says its Slurm name on standard error, which names its report
    return [srun, "--ntasks-per-node=1", "--kill-on-bad-exit=0", *run.srun_options,
            f"--output={folder}/%n.json", f"--error={folder}/%n.err", "/bin/sh", "-c", SAY_NODE_NAME,
            "cudnn-doctor-node", *run.check_command]


NODE_NAME_TAG = "cudnn-doctor-node: "
SAY_NODE_NAME = f'printf "{NODE_NAME_TAG}%s\\n" "${{SLURMD_NODENAME:-}}" >&2; exec "$@"'


def _slurm_names(folder: Path) -> None:
    """Rename each node's N.json / N.err after the Slurm node name it gave (its first line on standard error)."""
    import re

    for report in sorted(folder.glob("*.json")):
        if not report.stem.isdigit():
            continue
        errors = report.with_suffix(".err")
        try:
            lines = errors.read_bytes()[:1 << 20].decode("utf-8", "replace").splitlines()
        except OSError:
            continue
        name = lines[0].removeprefix(NODE_NAME_TAG).strip() if lines and lines[0].startswith(NODE_NAME_TAG) else ""
        if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}", name) or (folder / f"{name}.json").exists():
            continue
        report.rename(folder / f"{name}.json")
        errors.unlink()
        (folder / f"{name}.err").write_text("\n".join(lines[1:]) + ("\n" if len(lines) > 1 else ""))


def run_slurm(run: SlurmRun) -> tuple[FleetResult, str | None]:
    """Run the checks, merge what came back; the second value is srun's complaint, if it failed."""
    folder = Path(run.keep) if run.keep else Path(tempfile.mkdtemp(prefix="cudnn-doctor-fleet-"))
    folder.mkdir(parents=True, exist_ok=True)
    try:
        argv = srun_argv(run, folder)
        complaint = _run_with_deadline(argv, run.deadline_s)
        _slurm_names(folder)
        nodes = [_named(_with_stderr(read_node(path), path), path) for path in sorted(folder.glob("*.json"))]
        if not nodes:
            raise DoctorError(f"srun ran no check: {complaint or 'no node answered'}",
                              fix="check the srun options (partition, nodes, account) with `srun hostname`")
        missing = complaint if complaint and "stopped after" in complaint else None
        return merge(nodes), missing
    finally:
        if not run.keep:
            shutil.rmtree(folder, ignore_errors=True)


def _named(node: NodeReport, path: Path) -> NodeReport:
    """A node is named as Slurm names it (its report's file), not by the host name inside the report: several
    Slurm nodes may share a host, and a node's NodeName is what `srun -w` and `sinfo` take."""
    from dataclasses import replace

    name = path.name.removesuffix(".json")
    return node if name.isdigit() or name == node.node else replace(node, node=name)


def _with_stderr(node: NodeReport, path: Path) -> NodeReport:
    """A node whose report is missing or broken: say what its check printed on standard error."""
    if node.failure is None:
        return node
    error_file = path.with_suffix(".err")
    try:
        with open(error_file, "rb") as handle:
            lines = handle.read(4096).decode("utf-8", "replace").strip().splitlines()
    except OSError:
        lines = []
    if lines:
        return NodeReport(node.node, node.source, failure=f"{node.failure}; it said: {lines[-1][:200]}")
    return node


def _run_with_deadline(argv: list[str], deadline_s: float) -> str | None:
    """Run srun; at the deadline stop it (srun cancels its job steps on SIGINT/SIGTERM)."""
    try:
        process = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                   stderr=subprocess.PIPE, start_new_session=True)
    except OSError as error:
        raise DoctorError(f"srun could not start: {error.strerror or error}", fix="check the Slurm installation") from None
    try:
        _, stderr = process.communicate(timeout=deadline_s)
    except subprocess.TimeoutExpired:
        for sig in (signal.SIGTERM, signal.SIGKILL):
            try:
                os.killpg(process.pid, sig)
            except OSError:
                pass
            try:
                process.communicate(timeout=5)
                break
            except subprocess.TimeoutExpired:
                continue
        return f"stopped after {deadline_s:.0f} s (--deadline): nodes that had not answered are missing"
    lines = [line for line in stderr.decode("utf-8", "replace").splitlines() if line.strip()]
    if process.returncode == 0:
        return None
    # exit 1 is also what srun says when a node's check found problems, which is an answer; the
    # caller uses this only where a node sent nothing back
    errors = [line for line in lines if "error" in line.lower()] or lines
    return (errors[0].strip() if errors else f"srun: exit status {process.returncode}")[:300]
