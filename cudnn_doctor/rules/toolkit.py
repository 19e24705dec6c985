"""CD2xx: CUDA toolkits and runtimes."""

from __future__ import annotations

from cudnn_doctor.codes import finding
from cudnn_doctor.model import Finding, Report


def no_toolkit(report: Report) -> list[Finding]:
    return [] if report.toolkits else [finding("CD201")]


def unreadable_version(report: Report) -> list[Finding]:
    return [finding("CD202", subject=t.path, path=t.path) for t in report.toolkits if t.version is None]


def broken_runtime(report: Report) -> list[Finding]:
    return [finding("CD203", subject=t.cudart, library=t.cudart, error=t.cudart_error, path=t.path)
            for t in report.toolkits if t.cudart_error]


def dangling_variables(report: Report) -> list[Finding]:
    return [finding("CD204", subject=path, variable=variable, path=path)
            for variable, path in report.dangling_variables]


def several_toolkits(report: Report) -> list[Finding]:
    if len(report.toolkits) < 2:
        return []
    versions = ", ".join(f"{t.version or '?'} ({t.path})" for t in report.toolkits)
    picked = report.toolkits[0]
    return [finding("CD205", versions=versions, picked=f"{picked.path}, found via {picked.source}")]


def helper_troubles(report: Report) -> list[Finding]:
    """Each helper program (a toolkit's `nvcc --version`, `ldconfig -p`) that never ended, left a process holding
    its output, was ended by a signal or flooded its output (child.helper_trouble): a build that reads it waits or
    fails the same way."""
    return [finding("CD213", subject=command, command=command, trouble=trouble)
            for command, trouble in report.helper_troubles]


RULES = (no_toolkit, unreadable_version, broken_runtime, dangling_variables, several_toolkits, helper_troubles)
