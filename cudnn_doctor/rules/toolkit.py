"""CD2xx: CUDA toolkits and runtimes."""

from __future__ import annotations

import os
from dataclasses import replace

from cudnn_doctor.codes import finding
from cudnn_doctor.model import Finding, Report


def no_toolkit(report: Report) -> list[Finding]:
    return [] if report.toolkits else [finding("CD201")]


def unreadable_version(report: Report) -> list[Finding]:
    return [finding("CD202", subject=t.path, path=t.path) for t in report.toolkits if t.version is None]


def broken_runtime(report: Report) -> list[Finding]:
    """CD203: a toolkit's libcudart that a child could not load. An error where programs here get it: a package's
    runtime (pip, conda: the frameworks of that environment load it) or one in a folder the loader searches (a
    program asking for it by name); else a warning: nvcc links the runtime statically unless told otherwise, and no
    program here finds this file by name (round twenty-one's audit: the file's refusal is seen, a program's is not)."""
    searched = {os.path.normpath(folder) for folder in (*report.loader_path, *report.loader_path_real)}
    findings = []
    for toolkit in report.toolkits:
        if not toolkit.cudart_error:
            continue
        made = finding("CD203", subject=toolkit.cudart, library=toolkit.cudart, error=toolkit.cudart_error,
                       path=toolkit.path)
        folder = os.path.normpath(os.path.dirname(toolkit.cudart or ""))
        if report.process is not None and toolkit.source not in PACKAGED and folder not in searched:
            made = replace(made, severity="warning", evidence="read", proof=(
                f"a child could not load {toolkit.cudart}, but no program started here finds it: {folder} is on no "
                "path the loader searches (LD_LIBRARY_PATH, its cache, the system folders), and nvcc links the CUDA "
                "runtime statically unless told otherwise (--cudart, default static)"))
        findings.append(made)
    return findings


PACKAGED = ("pip", "conda")  # a package's runtime, which the frameworks of its environment load by their own paths


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
