"""`cudnn-doctor check`: probe, judge, summarise, render. cli.py declares its options (and fix's, the same
ones) and calls check() here with them."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from cudnn_doctor.command import guarded
from cudnn_doctor.errors import DoctorError
from cudnn_doctor.knowledge import inputs
from cudnn_doctor.knowledge.data import sublibrary_names
from cudnn_doctor.model import Report
from cudnn_doctor.probes.collect import collect_report
from cudnn_doctor.probes.context import SearchContext
from cudnn_doctor.render import formats
from cudnn_doctor.rules import evaluate, rule_modules, summarize
from cudnn_doctor.rules.requirements import parse_requirement
from cudnn_doctor.selection import Selection, select_findings


@dataclass
class CheckOptions:
    """What a check looks at and judges."""

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
    from cudnn_doctor.probes.project_folders import SUBPROJECT_DEPTH, find_subprojects, has_build_file

    if not has_build_file(folder):
        read, beyond, cut = find_subprojects(folder)
        if not read and not beyond and not cut:
            raise DoctorError(f"--project {given}: no pom.xml or Gradle build in it, nor in its subfolders "
                              f"({SUBPROJECT_DEPTH} levels down; hidden and build-output folders skipped)",
                              fix="pass the folder that holds the project's pom.xml or build.gradle")
    return folder


def run_check(options: CheckOptions, progress: Callable[[str], None] | None = None) -> Report:
    # bad input fails before probing, each value read by the one rule of knowledge/inputs.py
    requirements = [parse_requirement(inputs.requirement_text(text)) for text in options.require]
    for spec in options.frameworks:
        inputs.framework_spec("--framework", spec)
    project_dir = project_folder(options.project_dir)
    ctx = SearchContext.from_environment(options.search_paths, python=options.python)
    report = collect_report(ctx, sublibrary_names(), project_dir, options.deep, while_children_run=_load_judges,
                            progress=progress)
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


def _load_judges() -> None:
    """The rules and the plan, loaded while the probes' children answer (collect_report's WHILE_CHILDREN_RUN)."""
    import cudnn_doctor.plan.fixes
    import cudnn_doctor.plan.planner  # noqa: F401

    rule_modules()


def treat(report: Report, home: str, python: str | None, requirements: list[Any]) -> None:
    """The one plan for REPORT's findings; every finding's fix rendered from it."""
    if not any(f.severity in ("error", "warning") or f.code == "CD310" for f in report.findings):
        from cudnn_doctor.plan.fixes import advised

        report.findings = advised(report.findings)  # nothing to treat (information only): no planner
        return
    from cudnn_doctor.plan.fixes import with_fixes
    from cudnn_doctor.plan.planner import Setting, make_plan

    report.plan = make_plan(report, report.findings, Setting(home, python, tuple(requirements)))
    report.findings = with_fixes(report.findings, report.plan, report.ld_library_path)


def check_settings(select: list[str], ignore: list[str], strict: bool | None, require: list[str],
                   output_format: str | None, json_output: bool):  # type: ignore[no-untyped-def]
    """The command line's selection, strictness, requirements and format merged with CUDNN_DOCTOR_* and
    [tool.cudnn-doctor] (cudnn_doctor/settings.py); the format checked. For `check` and `fix`."""

    from cudnn_doctor.settings import resolve_settings

    given = _check_format(output_format, json_output) if output_format is not None or json_output else None
    from cudnn_doctor.rules.requirements import parse_requirement

    settings = resolve_settings(select=select, ignore=ignore, strict=strict, require=require, output_format=given,
                                parse_requirement=parse_requirement, formats=formats.NAMES)
    if given is None and settings.output_format is not None:
        where = settings.sources.get("format", "")
        chosen = settings.output_format.strip().lower()
        if chosen not in formats.FORMATS:
            raise DoctorError(f"format {settings.output_format!r} (from {where}): not a format I know",
                              fix=formats.words(formats.NAMES))
        settings = replace(settings, output_format=chosen)
    return settings


def check_options(settings, search_path: list[str], framework: list[str], project: str | None,  # type: ignore[no-untyped-def]
                  python: str | None, deep: bool = False) -> CheckOptions:
    """What a check looks at and judges, from the command line's values (check's and fix's, declared once
    in cli.py) and the resolved SETTINGS."""
    from cudnn_doctor.probes.context import absolute_path, working_folder

    # absolute from here: `fix` hands these options to a check that runs in / (child.NEUTRAL_CWD)
    here = working_folder()
    if python is not None and (os.sep in python or os.path.exists(python)):
        python = absolute_path(python, here, "--python")
    return CheckOptions(require=list(settings.require), strict=settings.strict,
                        search_paths=[absolute_path(folder, here) for folder in search_path],
                        project_dir=absolute_path(project, here, "--project") if project is not None else None,
                        deep=deep, frameworks=list(framework), python=python,
                        selection=settings.selection, selection_sources=dict(settings.sources))


def options_to_json(options: CheckOptions) -> str:
    """OPTIONS as one JSON text: how `fix` hands them to the check it runs again in a new process."""
    import json
    from dataclasses import asdict

    return json.dumps(asdict(options))


def options_from_json(text: str) -> CheckOptions:
    import json

    data = json.loads(text)
    selection = data.pop("selection")
    return CheckOptions(**data, selection=Selection(tuple(selection["select"]), tuple(selection["ignore"])))


def check_again(options_json: str) -> int:
    """The check `fix` runs after its steps, in a process of its own (what a new shell sees): the report
    as one JSON object on standard output; its exit status."""
    from cudnn_doctor.render.json_out import write_json

    report = run_check(options_from_json(options_json))
    from cudnn_doctor.render.report_json import report_to_json

    write_json(report_to_json(report))
    return report.summary.exit_code if report.summary else 3


@guarded
def check(json_output: bool = False, output_format: str | None = None, output: str | None = None,
          junit_xml: str | None = None, require: list[str] | None = None, strict: bool | None = None,
          select: list[str] | None = None, ignore: list[str] | None = None, search_path: list[str] | None = None,
          framework: list[str] | None = None, project: str | None = None, python: str | None = None,
          deep: bool = False, quiet: bool = False, verbose: bool = False) -> None:
    """Diagnose the GPUs, driver, CUDA toolkits, cuDNN copies and frameworks; ends with SystemExit(status)."""
    require, select, ignore = require or [], select or [], ignore or []
    search_path, framework = search_path or [], framework or []
    if quiet and verbose:
        raise DoctorError("-q and -v ask for less and for more at once", fix="give one of them")
    settings = check_settings(select, ignore, strict, require, output_format, json_output)
    options = check_options(settings, search_path, framework, project, python, deep)
    chosen = settings.output_format or "text"
    if output is not None:
        _check_output_path(output, chosen)
    if junit_xml is not None:
        from cudnn_doctor.render.output_file import check_target

        check_target(junit_xml, "--junit-xml")
    from cudnn_doctor.render.wait_line import WaitLine

    with WaitLine(shown=deep and chosen == "text" and not quiet) as waiting:  # --deep takes seconds: say what for
        report = run_check(options, waiting.say)
    if junit_xml is not None:
        from cudnn_doctor.render.junit import write_junit

        write_junit(report, junit_xml, settings.strict)
    answer = formats.FORMATS[chosen]
    if answer.document is not None:
        _write_document(answer.document(report, settings.strict, verbose), output)
    elif answer.show is not None:
        answer.show(report, verbose, quiet)
    raise SystemExit(report.summary.exit_code if report.summary else 3)


def _check_output_path(output: str, chosen: str) -> None:
    """--output FILE: only for a document format, a file that may be renamed over (checked before probing)."""
    if not formats.FORMATS[chosen].is_document:
        raise DoctorError(f"--output goes with --format {formats.words(formats.documents())}, not {chosen}",
                          fix="cudnn-doctor check --format prometheus --output /var/lib/node_exporter/cudnn_doctor.prom")
    from cudnn_doctor.render.output_file import check_target

    check_target(output, "--output")


def _write_document(text: str, output: str | None) -> None:
    """A document format's TEXT, to standard output or atomically to OUTPUT."""
    if output is None:
        from cudnn_doctor.render.json_out import write_document

        write_document(text)
        return
    from cudnn_doctor.render.output_file import write_atomically

    try:
        write_atomically(output, text)
    except OSError as error:
        raise DoctorError(f"--output {output}: {error.strerror or error}",
                          fix="give a file in a folder you can write to") from None


def _check_format(output_format: str | None, json_output: bool) -> str:
    if output_format is None:
        return "json" if json_output else "text"
    chosen = output_format.strip().lower()
    if chosen not in formats.FORMATS:
        raise DoctorError(f"--format {output_format}: not a format I know", fix=f"--format {formats.words(formats.NAMES)}")
    if json_output and chosen != "json":
        raise DoctorError(f"--json and --format {chosen} ask for two formats", fix="give one of them")
    return chosen


if __name__ == "__main__":  # fix's check after its steps (commands/fix.py), options as JSON
    sys.exit(check_again(sys.argv[1]))
