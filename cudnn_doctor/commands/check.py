"""`cudnn-doctor check`: probe, judge, summarise."""

from __future__ import annotations

from dataclasses import dataclass, field

from cudnn_doctor.compat.data import sublibrary_names
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


def run_check(options: CheckOptions) -> Report:
    requirements = [parse_requirement(text) for text in options.require]  # bad input fails before probing
    ctx = SearchContext.from_environment(options.search_paths, python=options.python)
    report = collect_report(ctx, sublibrary_names(), options.project_dir, options.deep)
    if options.frameworks:
        from cudnn_doctor.compat.frameworks import assumed_framework

        report.frameworks += [assumed_framework(spec, report.cudnn, ctx.os_name) for spec in options.frameworks]
    report.findings = evaluate(report, requirements)
    report.summary = summarize(report.findings, options.strict)
    return report
