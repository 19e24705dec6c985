"""`cudnn-doctor check`: probe, judge, summarise."""

from __future__ import annotations

import os
from typing import Any

from cudnn_doctor.errors import DoctorError
from cudnn_doctor.knowledge import inputs
from cudnn_doctor.knowledge.data import sublibrary_names
from cudnn_doctor.model import Report
from cudnn_doctor.probes.collect import collect_report
from cudnn_doctor.probes.context import SearchContext
from cudnn_doctor.records import field, record
from cudnn_doctor.rules import evaluate, summarize
from cudnn_doctor.rules.requirements import parse_requirement
from cudnn_doctor.selection import Selection, select_findings


@record
class CheckOptions:
    require: list[str] = field(default_factory=list)
    strict: bool = False
    search_paths: list[str] = field(default_factory=list)
    project_dir: str | None = None
    deep: bool = False
    frameworks: list[str] = field(default_factory=list)  # --framework NAME[==VER]: checked as if installed
    python: str | None = None  # --python PATH: that interpreter's packages instead of the ones around
    selection: Selection = field(default_factory=Selection)  # --select/--ignore: which findings count
    selection_sources: dict[str, str] = field(default_factory=dict)  # where select/ignore were set


BUILD_FILES = ("pom.xml", "build.gradle", "build.gradle.kts", "settings.gradle", "settings.gradle.kts")


def project_folder(given: str | None) -> str | None:
    """--project, checked: a Maven or Gradle project's folder or build file, or a folder of projects; by
    default None (the probes read the real working folder, never a stale $PWD, and no subfolders)."""
    if given is None:
        return None
    if not given.strip():
        raise DoctorError("--project is empty", fix="pass a Maven or Gradle project folder, e.g. --project .")
    if not os.path.exists(given):
        raise DoctorError(f"--project {given}: no such file or folder",
                          fix="pass an existing Maven or Gradle project folder, or its pom.xml or build.gradle")
    if not os.path.isdir(given):
        if os.path.basename(given) not in BUILD_FILES:
            raise DoctorError(f"--project {given}: not a Maven or Gradle build file",
                              fix=f"pass the project's folder, or its {', '.join(BUILD_FILES[:3])}")
        return os.path.dirname(os.path.abspath(given))  # the build file's project, as Maven's -f reads it
    folder = os.path.abspath(given)
    from cudnn_doctor.probes.dl4j import SUBPROJECT_DEPTH, find_subprojects, has_build_file

    if not has_build_file(folder):
        read, beyond, cut = find_subprojects(folder)
        if not read and not beyond and not cut:
            raise DoctorError(f"--project {given}: no pom.xml or Gradle build in it, nor in its subfolders "
                              f"({SUBPROJECT_DEPTH} levels down; hidden and build-output folders skipped)",
                              fix="pass the folder that holds the project's pom.xml or build.gradle")
    return folder


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
    # the one place where --select/--ignore act: after the rules, before the plan, any summary or renderer
    report.findings, report.ignored = select_findings(evaluate(report, requirements), options.selection)
    report.selection = {"select": list(options.selection.select), "ignore": list(options.selection.ignore),
                        "sources": dict(options.selection_sources)}
    treat(report, ctx.env.get("HOME") or os.path.expanduser("~"), options.python and ctx.python, requirements)
    report.summary = summarize(report.findings, options.strict)
    return report


def treat(report: Report, home: str, python: str | None, requirements: list[Any]) -> None:
    """The one plan for REPORT's findings; every finding's fix rendered from it."""
    if not any(f.severity in ("error", "warning") or f.code == "CD310" for f in report.findings):
        return  # nothing to treat (information only): the planner is not even imported
    from cudnn_doctor.plan.planner import Setting, make_plan
    from cudnn_doctor.render.plan_text import with_fixes

    report.plan = make_plan(report, report.findings, Setting(home, python, tuple(requirements)))
    report.findings = with_fixes(report.findings, report.plan, report.ld_library_path)
