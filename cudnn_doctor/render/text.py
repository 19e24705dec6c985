"""The `check` report as text, in the style of `flutter doctor`: one line per area with
[✓] / [!] / [✗], its facts and findings under it, details with -v, one summary line."""

from __future__ import annotations

import os

from rich.console import Console
from rich.markup import escape

from cudnn_doctor.model import CudnnInstall, Finding, Report

MARKS = {"ok": "[green][✓][/]", "warning": "[yellow][!][/]", "error": "[red][✗][/]", "info": "[green][✓][/]"}
FINDING_MARKS = {"error": "[red]✗[/]", "warning": "[yellow]![/]", "info": "[blue]i[/]"}
AREAS = (("CD1", "driver"), ("CD2", "toolkit"), ("CD3", "cudnn"), ("CD4", "frameworks"))


def _area_status(findings: list[Finding]) -> str:
    severities = {f.severity for f in findings}
    return "error" if "error" in severities else "warning" if "warning" in severities else "ok"


def _findings_for(report: Report, prefix: str) -> list[Finding]:
    return [f for f in report.findings if f.code.startswith(prefix)]


def render_check(report: Report, console: Console, verbose: bool = False) -> None:
    p = console.print
    by_area = {area: _findings_for(report, prefix) for prefix, area in AREAS}
    sections = (
        ("driver", _driver_lines(report, verbose)),
        ("toolkit", _toolkit_lines(report, verbose)),
        ("cudnn", _cudnn_lines(report, verbose)),
        ("frameworks", _framework_lines(report, verbose)),
    )
    for area, (headline, lines) in sections:
        findings = by_area[area]
        p(f"{MARKS[_area_status(findings)]} {headline}")
        for line in lines:
            p(f"    • {line}")
        for f in findings:
            _print_finding(console, f, verbose)
    other = [f for f in report.findings if not any(f.code.startswith(prefix) for prefix, _ in AREAS)]
    if other:
        p(f"{MARKS[_area_status(other)]} Requirements")
        for f in other:
            _print_finding(console, f, verbose)
    if verbose and report.loader_path:
        p("[dim]Loader search order: " + escape(" → ".join(report.loader_path)) + "[/]")
    if verbose and report.timings_ms:
        p("[dim]Probe time: " + ", ".join(f"{k} {v:g} ms" for k, v in report.timings_ms.items()) + "[/]")
    p("")
    p(_summary_line(report))


def _print_finding(console: Console, f: Finding, verbose: bool) -> None:
    if f.severity == "info" and not verbose:
        gist = f.detail.split(":")[0].split(". ")[0]
        gist = gist if len(gist) <= 90 else gist[:87] + "..."
        console.print(f"    {FINDING_MARKS['info']} {f.code} {escape(f.title)} [dim]({escape(gist)})[/]")
        return
    console.print(f"    {FINDING_MARKS.get(f.severity, '?')} [bold]{f.code}[/] {escape(f.title)}")
    console.print(f"        {escape(f.detail)}", highlight=False)
    console.print(f"        [bold]Fix:[/] {escape(f.fix)}", highlight=False)
    if verbose and f.refs:
        console.print(f"        [dim]Source: {escape('; '.join(f.refs))}[/]", highlight=False)


def _summary_line(report: Report) -> str:
    summary = report.summary
    if summary is None:
        return ""
    errors, warnings = summary.counts.get("error", 0), summary.counts.get("warning", 0)
    if not errors and not warnings:
        return "[green]• No issues found.[/]"
    parts = []
    if errors:
        parts.append(f"{errors} error{'s' * (errors != 1)}")
    if warnings:
        parts.append(f"{warnings} warning{'s' * (warnings != 1)}")
    return f"[{'red' if errors else 'yellow'}]! Doctor found {' and '.join(parts)}.[/] " \
           f"[dim](`cudnn-doctor explain CODE` for more)[/]"


def _driver_lines(report: Report, verbose: bool) -> tuple[str, list[str]]:
    driver = report.driver
    if driver.source == "none":
        return "NVIDIA driver: not found", []
    version = driver.version or "version unknown"
    cuda = f" (supports CUDA {driver.cuda_driver_version})" if driver.cuda_driver_version else ""
    count = len(report.gpus)
    gpus = f", {count} GPU{'s' * (count != 1)}" if driver.source == "nvml" else ""
    lines = []
    for gpu in report.gpus:
        memory = f", {gpu.memory_total_mib} MiB" if gpu.memory_total_mib else ""
        cc = f", compute capability {gpu.compute_capability}" if gpu.compute_capability else ""
        uuid = f", {gpu.uuid}" if verbose and gpu.uuid else ""
        lines.append(escape(f"GPU {gpu.index}: {gpu.name}{cc}{memory}{uuid}"))
    if verbose and driver.library:
        lines.append(escape(f"read through {driver.source} from {driver.library}"))
    return escape(f"NVIDIA driver {version}{cuda}{gpus}"), lines


def _toolkit_lines(report: Report, verbose: bool) -> tuple[str, list[str]]:
    if not report.toolkits:
        return "CUDA toolkit: none found", []
    versions = ", ".join(t.version or "?" for t in report.toolkits)
    lines = []
    for toolkit in report.toolkits:
        via = f"found via {toolkit.source}"
        links = f"; {', '.join(toolkit.links)} → here" if toolkit.links else ""
        line = f"CUDA {toolkit.version or '?'} at {toolkit.path} ({via}{links})"
        if verbose:
            line += f"; version from {toolkit.version_from or 'nowhere'}"
            if toolkit.runtime_version:
                line += f"; libcudart reports {toolkit.runtime_version}"
            if toolkit.nvcc:
                line += f"; nvcc {toolkit.nvcc}"
        lines.append(escape(line))
    return escape(f"CUDA toolkit{'s' * (len(report.toolkits) != 1)} {versions}"), lines


def _install_line(install: CudnnInstall, verbose: bool) -> str:
    version = install.version or (f"{install.major}.x (version unreadable)" if install.major else "unreadable")
    parts = [f"cuDNN {version} {install.library}", f"[{install.source}]"]
    if install.cuda_version:
        parts.append(f"built for CUDA {install.cuda_version}")
    if install.header_version:
        parts.append(f"headers {install.header_version}")
    if install.loaded_by:
        parts.append("loaded by " + ", ".join(install.loaded_by))
    line = " ".join(parts[:2]) + ("; " + "; ".join(parts[2:]) if parts[2:] else "")
    if verbose:
        present = sum(install.sublibraries.values())
        if install.sublibraries:
            line += f"; sub-libraries {present}/{len(install.sublibraries)}"
        if install.same_file_as:
            line += f"; also at {', '.join(install.same_file_as)}"
        if install.header_path:
            line += f"; header {install.header_path}"
    return escape(line)


def _cudnn_lines(report: Report, verbose: bool) -> tuple[str, list[str]]:
    if not report.cudnn:
        return "cuDNN: none found", []
    picked = next((i for i in report.cudnn if "ld.so" in i.loaded_by), None)
    versions = sorted({i.version for i in report.cudnn if i.version})
    count = len(report.cudnn)
    headline = f"cuDNN {', '.join(versions) or 'version unknown'} ({count} cop{'ies' if count != 1 else 'y'})"
    if picked:
        headline += f"; the loader picks {os.path.basename(picked.library)} {picked.version or ''} from {picked.path}"
    return escape(headline), [_install_line(i, verbose) for i in report.cudnn]


def _framework_lines(report: Report, verbose: bool) -> tuple[str, list[str]]:
    if not report.frameworks:
        return "Frameworks: none found", []
    lines = []
    for framework in report.frameworks:
        parts = [f"{framework.name} {framework.version or '?'}"]
        if framework.cuda_built_for:
            parts.append(f"built for CUDA {framework.cuda_built_for}")
        if framework.cudnn_expected:
            parts.append(f"expects cuDNN {framework.cudnn_expected}")
        if framework.cudnn_used:
            parts.append(f"loads {framework.cudnn_used}")
        line = ", ".join(parts)
        if verbose and framework.location:
            line += f" ({framework.found_via}: {framework.location})"
        lines.append(escape(line))
    names = ", ".join(f"{f.name} {f.version or '?'}" for f in report.frameworks)
    return escape(f"Frameworks: {names}"), lines
