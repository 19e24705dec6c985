"""`cudnn-doctor fleet merge` and `fleet run --slurm`: many nodes' reports, one view of what differs."""

from __future__ import annotations

from typing import Any

from cudnn_doctor.errors import DoctorError
from cudnn_doctor.fleet.merge import fleet_to_json, merge_paths


def run_merge(paths: list[str]) -> dict[str, Any]:
    return fleet_to_json(merge_paths(paths))


def run_slurm(srun_options: list[str], command: str | None, deadline_s: float, keep: str | None) -> dict[str, Any]:
    import math
    import shlex

    from cudnn_doctor.fleet.slurm import SlurmRun, default_check_command, run_slurm

    if not math.isfinite(deadline_s) or deadline_s <= 0 or deadline_s > 7 * 24 * 3600:
        raise DoctorError(f"--deadline {deadline_s:g}: must be a number of seconds from 1 to a week", fix="--deadline 600")
    try:
        check = tuple(shlex.split(command)) if command is not None else default_check_command()
    except ValueError as error:  # an unclosed quote
        raise DoctorError(f"--command {command!r}: {error}",
                          fix="quote it as a shell would: --command '/opt/venv/bin/cudnn-doctor check --json'") from None
    if not check:
        raise DoctorError("--command is empty", fix="--command '/opt/venv/bin/cudnn-doctor check --json'")
    result, complaint = run_slurm(SlurmRun(tuple(srun_options), check, deadline_s, keep))
    data = fleet_to_json(result)
    if complaint:
        data["srun"] = complaint
    return data
