"""`cudnn-doctor check`: probe, judge, summarise."""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from cudnn_doctor.errors import DoctorError
from cudnn_doctor.knowledge import inputs
from cudnn_doctor.knowledge.data import sublibrary_names
from cudnn_doctor.model import Report
from cudnn_doctor.probes.collect import collect_report
from cudnn_doctor.probes.context import SearchContext
from cudnn_doctor.rules import evaluate, summarize
from cudnn_doctor.rules.requirements import parse_requirement


@dataclass
class CheckOptions:
    require: list[str] = field(default_factory=list)
    strict: bool = False
    search_paths: list[str] = field(default_factory=list)
    project_dir: str | None = None
    deep: bool = False
    frameworks: list[str] = field(default_factory=list)  # --framework NAME[==VER]: checked as if installed
    python: str | None = None  # --python PATH: that interpreter's packages instead of the ones around


def project_folder(given: str | None) -> str | None:
    """--project, checked; by default the real working folder (os.getcwd(), never a stale $PWD)."""
    if given is None:
        try:
            return os.getcwd()
        except OSError:  # the working folder was removed: there is no default project
            return None
    if not given.strip():
        raise DoctorError("--project is empty", fix="pass a Maven or Gradle project folder, e.g. --project .")
    if not os.path.exists(given):
        raise DoctorError(f"--project {given}: no such folder", fix="pass an existing Maven or Gradle project folder")
    if not os.path.isdir(given):
        raise DoctorError(f"--project {given}: not a folder",
                          fix="pass the folder that holds pom.xml or build.gradle, not the file itself")
    return os.path.abspath(given)


def run_check(options: CheckOptions) -> Report:
    # bad input fails before probing, each value read by the one rule of knowledge/inputs.py
    requirements = [parse_requirement(inputs.requirement_text(text)) for text in options.require]
    for spec in options.frameworks:
        inputs.framework_spec("--framework", spec)
    project_dir = project_folder(options.project_dir)
    ctx = SearchContext.from_environment(options.search_paths, python=options.python)
    report = collect_report(ctx, sublibrary_names(), project_dir, options.deep)
    if options.frameworks:
        from cudnn_doctor.knowledge.frameworks import assumed_framework

        report.frameworks += [assumed_framework(spec, report.cudnn, ctx.os_name) for spec in options.frameworks]
    report.findings = evaluate(report, requirements)
    report.summary = summarize(report.findings, options.strict)
    return report
