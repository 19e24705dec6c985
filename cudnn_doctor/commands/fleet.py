"""`cudnn-doctor fleet merge` and `fleet run --slurm`: many nodes' reports, one view of what differs."""

from __future__ import annotations

from typing import Any

from cudnn_doctor.errors import DoctorError
from cudnn_doctor.fleet.merge import fleet_to_json, merge_paths


def run_merge(paths: list[str]) -> dict[str, Any]:
    return fleet_to_json(merge_paths(paths))


def run_slurm(srun_options: list[str], command: str | None, deadline_s: float, keep: str | None) -> dict[str, Any]:
    import shlex

    from cudnn_doctor.fleet.slurm import SlurmRun, default_check_command, run_slurm

    if deadline_s <= 0:
        raise DoctorError(f"--deadline {deadline_s:g}: must be a positive number of seconds", fix="--deadline 600")
    check = tuple(shlex.split(command)) if command else default_check_command()
    if not check:
        raise DoctorError("--command is empty", fix="--command '/opt/venv/bin/cudnn-doctor check --json'")
    result, complaint = run_slurm(SlurmRun(tuple(srun_options), check, deadline_s, keep))
    data = fleet_to_json(result)
    if complaint:
        data["srun"] = complaint
    return data
