"""diagnose(options, env) -> Diagnosis: probes -> Report -> rules -> findings (selected) -> the plan -> each
finding's fix -> the summary. The one pipeline of check, fix, explain: what they share lives here."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import field, replace
from typing import TYPE_CHECKING, Any

from cudnn_doctor.errors import DoctorError
from cudnn_doctor.knowledge import inputs
from cudnn_doctor.probes.context import SearchContext
from cudnn_doctor.records import record
from cudnn_doctor.selection import Selection
from cudnn_doctor.variables import home_folder

if TYPE_CHECKING:
    from cudnn_doctor.model import Finding, Framework, Report
    from cudnn_doctor.plan.actions import Plan

# The probes' and the rules' modules are imported in diagnose(), once NVML's child is started: on a GPU machine
# that child is the longest wait of a check (it opens the driver, as nvidia-smi does), and the imports run beside it.


@record
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


@record(frozen=True)
class Diagnosis:
    """One diagnosis: the report (its findings fixed by the plan, its summary), the findings that count, and the
    plan that treats them (no actions where there is nothing to treat)."""

    report: Report
    findings: tuple[Finding, ...]
    plan: Plan
    options: CheckOptions


BUILD_FILES = ("pom.xml", "build.gradle", "build.gradle.kts", "settings.gradle", "settings.gradle.kts")


def project_folder(given: str | None) -> str | None:
    """--project, checked: a Maven or Gradle project's folder or build file, or a folder of projects; by
    default None (the probes read the real working folder, never a stale $PWD, and no subfolders)."""
    if given is None:
        return None
    if not given.strip():
        raise DoctorError("--project is empty", fix="pass a Maven or Gradle project folder, e.g. --project .", code="CD001")
    if not os.path.exists(given):
        raise DoctorError(f"--project {given}: no such file or folder",
                          fix="pass an existing Maven or Gradle project folder, or its pom.xml or build.gradle", code="CD004")
    if not os.path.isdir(given):
        if os.path.basename(given) not in BUILD_FILES:
            raise DoctorError(f"--project {given}: not a Maven or Gradle build file",
                              fix=f"pass the project's folder, or its {', '.join(BUILD_FILES[:3])}", code="CD005")
        return os.path.dirname(os.path.abspath(given))  # the build file's project, as Maven's -f reads it
    folder = os.path.abspath(given)
    from cudnn_doctor.probes.project_folders import SUBPROJECT_DEPTH, find_subprojects, has_build_file

    if not has_build_file(folder):
        read, beyond, cut = find_subprojects(folder)
        if not read and not beyond and not cut:
            raise DoctorError(f"--project {given}: no pom.xml or Gradle build in it, nor in its subfolders "
                              f"({SUBPROJECT_DEPTH} levels down; hidden and build-output folders skipped)",
                              fix="pass the folder that holds the project's pom.xml or build.gradle", code="CD004")
    return folder


def diagnose(options: CheckOptions, env: Mapping[str, str] | None = None,
             progress: Callable[[str], None] | None = None, preload: tuple[str, ...] = ()) -> Diagnosis:
    """The machine as a program started with ENV (this process's environment by default) finds it, judged and
    treated on paper. ENV is data: `fix` diagnoses again with its plan's environment lines in force this way.
    PROGRESS, where given, is told in words what the probes wait for (check --deep shows it on a terminal).
    PRELOAD: modules the caller needs once the report is made (its renderer's), imported while the children answer."""
    # bad input fails before probing, each value read by the one rule of knowledge/inputs.py
    requirements = [_parse_requirement(inputs.requirement_text(text)) for text in options.require]
    for spec in options.frameworks:
        inputs.framework_spec("--framework", spec)
    project_dir = project_folder(options.project_dir)
    ctx = SearchContext.from_environment(options.search_paths, python=options.python, env=env)
    from cudnn_doctor.probes.loader import start_nvml

    nvml = start_nvml(ctx)
    from cudnn_doctor.knowledge.data import sublibrary_names
    from cudnn_doctor.probes.collect import collect_report

    report = collect_report(ctx, sublibrary_names(), project_dir, options.deep,
                            while_children_run=lambda frameworks: _load_judges(frameworks, preload),
                            progress=progress, started_nvml=nvml)
    # the judges' modules after the probes' children have started (loaded while they answer: _load_judges)
    from cudnn_doctor.plan.actions import Plan
    from cudnn_doctor.rules import evaluate, summarize
    from cudnn_doctor.selection import select_findings

    if options.frameworks:
        from cudnn_doctor.knowledge.frameworks import assumed_framework

        report.frameworks += [assumed_framework(spec, report.cudnn, ctx.os_name) for spec in options.frameworks]
    # the one place where --select/--ignore act: after the rules, before the plan, any summary or renderer
    named = None
    if options.deep:  # each failing framework's own words, read by explain's reader: the evidence they are
        import dataclasses

        from cudnn_doctor.doctor.bisect import cure_for
        from cudnn_doctor.doctor.deep_words import codes_named, python_cause

        named = codes_named(report)
        if report.process is not None:  # and the one part of the environment without which they work, asked of them
            cure = cure_for(report, dict(ctx.env))
            if cure is not None:  # its class: what raised the failure, where the frames name it
                cure = dataclasses.replace(cure, cause=python_cause(report))
                report.process = dataclasses.replace(report.process, cured_by=cure)
    report.findings, report.ignored = select_findings(evaluate(report, requirements, named), options.selection)
    report.selection = {"select": list(options.selection.select), "ignore": list(options.selection.ignore),
                        "sources": dict(options.selection_sources)}
    _plan_treatment(report, home_folder(ctx.env) or os.path.expanduser("~"), options.python and ctx.python,
                    requirements)
    report.summary = summarize(report.findings, options.strict)
    return Diagnosis(report, tuple(report.findings), report.plan or Plan(targets=(), actions=()), options)


def _parse_requirement(text: str) -> Any:
    """--require's grammar (rules/requirements.py), loaded where a requirement is given."""
    from cudnn_doctor.rules.requirements import parse_requirement

    return parse_requirement(text)


def _read_requirement(text: str) -> Any:
    """TEXT read as diagnose reads every requirement (knowledge/inputs.py's plain text, then the grammar), so that a
    bad one written in pyproject.toml or CUDNN_DOCTOR_REQUIRE is refused naming where it was written, not --require."""
    return _parse_requirement(inputs.requirement_text(text))


def _load_judges(frameworks: list[Framework], preload: tuple[str, ...] = ()) -> None:
    """Everything judging and answering will import, loaded while the probes' children answer (collect_report's
    WHILE_CHILDREN_RUN), not after the last answer: the rules and the plan, --require's grammar (evaluate reads
    it), the frameworks' knowledge, verdicts and data where FRAMEWORKS were found (the rules read them only then),
    and PRELOAD (the caller's renderer)."""
    import cudnn_doctor.plan.actions
    import cudnn_doctor.plan.fixes
    import cudnn_doctor.plan.planner
    import cudnn_doctor.rules.requirements  # noqa: F401
    from cudnn_doctor.rules import rule_modules

    rule_modules()
    if frameworks:
        import cudnn_doctor.knowledge.frameworks
        import cudnn_doctor.knowledge.verdicts  # noqa: F401
        from cudnn_doctor.knowledge.data import DamagedData, load

        try:  # and the data they read of them (each one's table, CUDA's and the GPUs'), parsed now, not after
            for name in dict.fromkeys(cudnn_doctor.knowledge.frameworks.canonical_name(f.name) for f in frameworks):
                cudnn_doctor.knowledge.frameworks.all_rows(name or "")
            load("cuda")
            load("gpu_support")
        except DamagedData:  # raised again where a judge reads it, and said there as every damaged file is
            pass
    for name in preload:  # the import statement's own path (its audit event and -X importtime see it)
        __import__(name)


def _plan_treatment(report: Report, home: str, python: str | None, requirements: list[Any]) -> None:
    """The one plan for REPORT's findings; every finding's fix rendered from it."""
    if not any(f.severity in ("error", "warning") or f.code == "CD310" for f in report.findings):
        from cudnn_doctor.plan.fixes import advised

        report.findings = advised(report.findings)  # nothing to treat (information only): no planner
        return
    from cudnn_doctor.plan.fixes import with_fixes
    from cudnn_doctor.plan.planner import Setting, make_plan
    from cudnn_doctor.plan.shell import folders_of

    report.plan = make_plan(report, report.findings, Setting(home, python, tuple(requirements)))
    report.findings = with_fixes(report.findings, report.plan, folders_of(report))


def resolve_check_settings(select: list[str], ignore: list[str], strict: bool | None, require: list[str],
                           output_format: str | None, json_output: bool):  # type: ignore[no-untyped-def]
    """The command line's selection, strictness, requirements and format merged with CUDNN_DOCTOR_* and
    [tool.cudnn-doctor] (cudnn_doctor/settings.py); the format checked. For `check` and `fix`."""
    from cudnn_doctor.render import formats
    from cudnn_doctor.settings import resolve_settings

    given = _check_format(output_format, json_output) if output_format is not None or json_output else None
    settings = resolve_settings(select=select, ignore=ignore, strict=strict, require=require, output_format=given,
                                parse_requirement=_read_requirement, formats=formats.NAMES)
    if given is None and settings.output_format is not None:
        where = settings.sources.get("format", "")
        chosen = settings.output_format.strip().lower()
        if chosen not in formats.FORMATS:
            raise DoctorError(f"format {settings.output_format!r} (from {where}): not a format I know",
                              fix=formats.words(formats.NAMES), code="CD007")
        settings = replace(settings, output_format=chosen)
    return settings


def _check_format(output_format: str | None, json_output: bool) -> str:
    from cudnn_doctor.render import formats

    if output_format is None:
        return "json" if json_output else "text"
    chosen = output_format.strip().lower()
    if chosen not in formats.FORMATS:
        raise DoctorError(f"--format {output_format}: not a format I know", fix=f"--format {formats.words(formats.NAMES)}", code="CD001")
    if json_output and chosen != "json":
        raise DoctorError(f"--json and --format {chosen} ask for two formats", fix="give one of them", code="CD002")
    return chosen


def check_options(settings, search_path: list[str], framework: list[str], project: str | None,  # type: ignore[no-untyped-def]
                  python: str | None, deep: bool = False) -> CheckOptions:
    """What a check looks at and judges, from the command line's values (check's and fix's, declared once)
    and the resolved SETTINGS; paths made absolute from the working folder."""
    from cudnn_doctor.probes.context import absolute_path, working_folder

    here = working_folder()
    if python is not None and (os.sep in python or os.path.exists(python)):
        python = absolute_path(python, here, "--python")
    return CheckOptions(require=list(settings.require), strict=settings.strict,
                        search_paths=[absolute_path(folder, here) for folder in search_path],
                        project_dir=absolute_path(project, here, "--project") if project is not None else None,
                        deep=deep, frameworks=list(framework), python=python,
                        selection=settings.selection, selection_sources=dict(settings.sources))
