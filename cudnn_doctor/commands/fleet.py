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
        raise DoctorError(f"--deadline {deadline_s:g}: must be a number of seconds from 1 to a week", fix="--deadline 600", code="CD001")
    try:
        check = tuple(shlex.split(command)) if command is not None else default_check_command()
    except ValueError as error:  # an unclosed quote
        raise DoctorError(f"--command {command!r}: {error}",
                          fix="quote it as a shell would: --command '/opt/venv/bin/cudnn-doctor check --json'", code="CD001") from None
    if not check:
        raise DoctorError("--command is empty", fix="--command '/opt/venv/bin/cudnn-doctor check --json'", code="CD001")
    result, complaint = run_slurm(SlurmRun(tuple(srun_options), check, deadline_s, keep))
    data = fleet_to_json(result)
    if complaint:
        data["srun"] = complaint
    return data


def main_merge(reports: list[str], json_output: bool) -> None:
    """`fleet merge`: ends with SystemExit(status)."""
    _show(run_merge(reports), json_output)


def main_run(slurm: bool, srun_options: list[str], command: str | None, deadline_s: float, keep: str | None,
             json_output: bool) -> None:
    """`fleet run`: ends with SystemExit(status)."""
    if not slurm:
        raise DoctorError("name the engine", fix="cudnn-doctor fleet run --slurm -- --partition=gpu --nodes=8; "
                                                 "for Kubernetes, see README's Fleets section and use fleet merge", code="CD003")
    _show(run_slurm(srun_options, command, deadline_s, keep), json_output)


def _show(data: dict[str, Any], json_output: bool) -> None:
    if json_output:
        from cudnn_doctor.render.json_out import write_json

        write_json(data)
    else:
        from cudnn_doctor.render.console import console
        from cudnn_doctor.render.fleet_text import render_fleet

        render_fleet(data, console())
    raise SystemExit(data["exit_code"])
