"""The report as JSON (`cudnn-doctor/report/1`): the model's fields mechanically, the plan as the plan's JSON."""

from __future__ import annotations

from typing import Any

from cudnn_doctor.model import REPORT_SCHEMA, Report, to_jsonable


def report_to_json(report: Report) -> dict[str, Any]:
    """The report as the `cudnn-doctor/report/1` JSON object."""
    plan = report.plan
    report.plan = None
    try:
        data = to_jsonable(report)
    finally:
        report.plan = plan
    data.pop("plan", None)
    if plan is not None:
        from cudnn_doctor.plan.shell import folders_of, plan_json

        data["plan"] = plan_json(plan, folders_of(report))
    for internal in ("search_errors", "helper_troubles", "dangling_variables", "nvml_error", "unreadable_files", "loader_path_real",
                     "variable_folders",
                     "ld_library_path", "ld_library_path_real", "doctor_bugs"):
        data.pop(internal, None)
    return {"schema": REPORT_SCHEMA, **data}
