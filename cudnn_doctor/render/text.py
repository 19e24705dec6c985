"""The `check` report as text, in the style of `flutter doctor`: one line per area with
[✓] / [!] / [✗], its facts and findings under it, details with -v, one summary line."""

from __future__ import annotations

import os
import re

from rich.console import Console
from rich.text import Text

from cudnn_doctor.model import CudnnInstall, Finding, Report
from cudnn_doctor.operating_system import kernel_getcwd
from cudnn_doctor.quoting import split_code_spans
from cudnn_doctor.render.safe import escape
from cudnn_doctor.streams import printable

MARKS = {"ok": "[green][✓][/]", "warning": "[yellow][!][/]", "error": "[red][✗][/]", "info": "[green][✓][/]"}
FINDING_MARKS = {"error": "[red]✗[/]", "warning": "[yellow]![/]", "info": "[blue]i[/]"}
AREAS = (("CD1", "driver"), ("CD2", "toolkit"), ("CD3", "cudnn"), ("CD4", "frameworks"))
AREA_NAMES = ("driver", "toolkit", "cudnn", "frameworks", "requirements")
REQUIREMENT_CODE = re.compile(r"^CD\d2\d$")  # CD120, CD121, CD220, CD320, CD420: --require not met



def area_of(code: str) -> str:
    """The area of the report a finding code belongs to (the text's sections, JUnit's test cases)."""
    if REQUIREMENT_CODE.match(code):
        return "requirements"
    return next((area for prefix, area in AREAS if code.startswith(prefix)), "requirements")


def print_wrapped(console: Console, markup: str, indent: int, rest_indent: int | None = None) -> None:
    """MARKUP on a line of INDENT spaces; where the terminal is narrower, continued at REST_INDENT, never at
    column 0. Piped output is one line per line, as written."""
    rest = indent if rest_indent is None else rest_indent
    if console.soft_wrap:
        console.print(" " * indent + markup, highlight=False)
        return
    text = Text.from_markup(markup)
    width = max(20, console.width - rest)
    first, *others = text.wrap(console, width) if text.plain else [text]
    console.print(Text(" " * indent) + first, highlight=False, crop=False)
    for line in others:
        console.print(Text(" " * rest) + line, highlight=False, crop=False)


def fits_one_line(console: Console, plain: str) -> bool:
    """Whether PLAIN prints as one line here (piped output always does)."""
    return console.soft_wrap or len(plain) <= console.width


def print_command(console: Console, command: str, indent: int) -> None:
    """COMMAND on its own line, never wrapped: a narrow terminal shows it folded, a copy gets it whole."""
    console.print(Text(" " * indent + printable(command.strip())), no_wrap=True, overflow="ignore", crop=False,
                  highlight=False)


def is_command(quoted: str) -> bool:
    """Whether a `quoted` part of a fix is a command to paste (`pip install x`), not an option or a name (`--gpus all`)."""
    return " " in quoted.strip() and not quoted.startswith("-")


def _after_command(prose: str) -> str:
    """PROSE that follows a command on its line, without the punctuation that joined them ("`a`, then `b`")."""
    prose = prose.lstrip(" ,;")
    return prose[2:] if prose.startswith(". ") else prose


def print_with_commands(console: Console, label: str, text: str, indent: int) -> None:
    """LABEL (markup) and TEXT (plain), a fix or a plan line that quotes commands in `backticks`.

    Each quoted command goes on a line of its own, four spaces in, unbroken and without its backticks, so a
    copy of that line is the command and nothing else (pasted with backticks, bash would run it as a command
    substitution); the prose around it wraps at its indent. Quoted options and names (`--replace`) stay in
    the prose, without backticks."""
    parts = split_code_spans(text)
    if not any(index % 2 and is_command(part) for index, part in enumerate(parts)):
        print_wrapped(console, label + escape("".join(parts)), indent)
        return
    prose = label
    for index, part in enumerate(parts):
        if index % 2 == 1 and is_command(part):
            if prose.count("(") > prose.count(")") and parts[index + 1:index + 2] and parts[index + 1].startswith(")"):
                # "(`cmd`)", "(or only this: `cmd`)": the command on its line says it without the brackets
                at = prose.rfind("(")
                prose = prose[:at] + prose[at + 1:].lstrip()
                parts[index + 1] = parts[index + 1][1:]
            if prose.strip():
                print_wrapped(console, prose.strip(), indent)
            print_command(console, part, indent + 4)
            prose = ""
        else:
            prose += escape(part if index % 2 or prose.strip() else _after_command(part))
    if prose.strip() and prose.strip() not in ".,;:":
        print_wrapped(console, prose.strip(), indent)


def _area_status(findings: list[Finding]) -> str:
    severities = {f.severity for f in findings}
    return "error" if "error" in severities else "warning" if "warning" in severities else "ok"


def render_check(report: Report, console: Console, verbose: bool = False, quiet: bool = False) -> None:
    if quiet:
        _render_quiet(report, console)
        return
    by_area = {area: [f for f in report.findings if area_of(f.code) == area] for area in AREA_NAMES}
    sections = (
        ("driver", _driver_lines(report, verbose)),
        ("toolkit", _toolkit_lines(report, verbose)),
        ("cudnn", _cudnn_lines(report, verbose)),
        ("frameworks", _framework_lines(report, verbose)),
    )
    platform = _platform_line(report, verbose)
    if platform:
        print_wrapped(console, f"{MARKS['ok']} {platform}", 0, 4)
    for area, (headline, lines) in sections:
        if area == "cudnn" and report.cudnn and not verbose:  # the copies as a table, as nvidia-smi lists GPUs
            lines = []
        findings = by_area[area]
        mark = MARKS[_area_status(findings)]
        ignored = sorted({f.code for f in report.ignored if area_of(f.code) == area and f.severity != "info"})
        if ignored and _area_status(findings) == "ok":  # not healthy: its problems are ignored, as you chose
            mark, headline = "[dim][-][/]", f"{headline} [dim](ignored: {', '.join(ignored)})[/]"
        print_wrapped(console, f"{mark} {headline}", 0, 4)
        for line in lines:
            print_wrapped(console, f"• {line}", 4, 6)
        if area == "cudnn" and report.cudnn and not verbose:
            for row in copies_table(report):
                console.print(Text("    " + printable(row).rstrip()), no_wrap=True, overflow="ignore", crop=False,
                              highlight=False)
        for f, subjects in grouped(findings):
            _print_finding(console, f, verbose, subjects)
    other = by_area["requirements"]
    if other:
        print_wrapped(console, f"{MARKS[_area_status(other)]} Requirements", 0, 4)
        for f, subjects in grouped(other):
            _print_finding(console, f, verbose, subjects)
    if verbose and report.loader_path:
        print_wrapped(console, "[dim]Loader search order: " + escape(" → ".join(report.loader_path)) + "[/]", 0, 4)
    if verbose and report.timings_ms:
        print_wrapped(console, "[dim]Probe time: " + ", ".join(f"{k} {v:g} ms" for k, v in report.timings_ms.items())
                      + "[/]", 0, 4)
    console.print("")
    print_wrapped(console, _summary_line(report), 0, 2)
    _next_step(console, report)


def grouped(findings: list[Finding]) -> list[tuple[Finding, list[str]]]:
    """FINDINGS with the identical ones (the same code, text and fix about several subjects: CD405 of eight
    projects) as one, each with the subjects it is about, in the order they came."""
    groups: dict[tuple[str, str, str, str], tuple[Finding, list[str]]] = {}
    for f in findings:
        key = (f.code, f.severity, f.detail, f.fix)
        first, subjects = groups.setdefault(key, (f, []))
        if f.subject and f.subject not in subjects:
            subjects.append(f.subject)
    return list(groups.values())


def _where(subjects: list[str]) -> str:
    """The subjects of a finding seen several times, each named (relative to the working folder below it)."""
    try:
        here = kernel_getcwd()
    except OSError:
        here = None
    shown = [os.path.relpath(s, here) if here and os.path.isabs(s) and s.startswith(here + os.sep) else s
             for s in subjects]
    return f"In {len(shown)} places: " + ", ".join(shown)


def _render_quiet(report: Report, console: Console) -> None:
    """-q: one line per error or warning (with its fix), nothing when healthy; the exit code says the rest."""
    for f, subjects in grouped(report.findings):
        if f.severity in ("error", "warning"):
            print_wrapped(console, f"{FINDING_MARKS[f.severity]} [bold]{f.code}[/] {escape(f.title)}: "
                                   f"{escape(f.detail)}", 0, 4)
            if len(subjects) > 1:
                print_wrapped(console, escape(_where(subjects)), 4)
            print_with_commands(console, "[bold]Fix:[/] ", f.fix, 4)


def _cut_at_word(text: str, room: int) -> str:
    """TEXT in at most ROOM characters, cut after a whole word or a path's folder (with …) where it is longer; ""
    where none fits."""
    if len(text) <= room:
        return text
    head = text[:max(0, room - 1)]
    at = max(head.rfind(" "), head.rfind("/") + 1 if "/" in head else -1)
    cut = head[:at].rstrip(" ,;(") if at > 0 else ""
    return cut + "…" if cut else ""


def _print_finding(console: Console, f: Finding, verbose: bool, subjects: list[str] | None = None) -> None:
    several = subjects is not None and len(subjects) > 1
    if f.severity == "info" and not verbose:
        times = f" ×{len(subjects)}" if several and subjects else ""
        head = f"{FINDING_MARKS['info']} {f.code} {escape(f.title)}{times}"
        # one line: the gist of the detail, cut at a word where it would wrap (a terminal) or pass 90 characters
        room = 90 if console.soft_wrap else console.width - 4 - len(Text.from_markup(head).plain) - 3
        gist = _cut_at_word(f.detail.split(": ")[0].split(". ")[0], room)  # ": ": a drive letter keeps its colon
        print_wrapped(console, head + (f" [dim]({escape(gist)})[/]" if gist else ""), 4, 6)
        return
    print_wrapped(console, f"{FINDING_MARKS.get(f.severity, '?')} [bold]{f.code}[/] {escape(f.title)}", 4, 6)
    print_wrapped(console, escape(f.detail), 8)
    if f.proof:
        print_wrapped(console, f"[dim]Evidence ({f.evidence}): {escape(f.proof)}[/]", 8)
    if several and subjects:
        print_wrapped(console, escape(_where(subjects)), 8)
    print_with_commands(console, "[bold]Fix:[/] ", f.fix, 8)
    if verbose and f.refs:
        print_wrapped(console, f"[dim]Source: {escape('; '.join(f.refs))}[/]", 8)


def _summary_line(report: Report) -> str:
    summary = report.summary
    if summary is None:
        return ""
    errors, warnings = summary.counts.get("error", 0), summary.counts.get("warning", 0)
    ignored = ""
    if report.ignored:  # left out by --ignore/--select: named once, as pytest names what it deselected
        codes = ", ".join(sorted({f.code for f in report.ignored}))
        ignored = f" [dim]({len(report.ignored)} ignored: {codes})[/]"
    if not errors and not warnings:
        return f"[green]• No issues found.[/]{ignored}"
    parts = []
    if errors:
        parts.append(f"{errors} error{'s' * (errors != 1)}")
    if warnings:
        parts.append(f"{warnings} warning{'s' * (warnings != 1)}")
    return f"[{'red' if errors else 'yellow'}]! Doctor found {' and '.join(parts)}.[/] " \
           f"[dim](cudnn-doctor explain CODE for more)[/]{ignored}"


def _next_step(console: Console, report: Report) -> None:
    """Under the summary: how many findings `fix --yes` treats, and the command, alone at the end of its line."""
    from cudnn_doctor.render.next_step import fix_command, fixable

    count = fixable(report)
    if count:
        print_with_commands(console, f"[bold]{count} can be fixed here:[/] ", f"`{fix_command()}`", 0)


PLATFORM_NAMES = {"linux": "Linux", "wsl2": "WSL 2", "container": "a container", "jetson": "Jetson",
                  "windows": "Windows"}


def _platform_line(report: Report, verbose: bool) -> str:
    """Where the doctor ran, with what showed it: said where it is not plain Linux (and with -v always)."""
    platform = report.host.platform
    if platform is None or (platform.kind == "linux" and not verbose):
        return ""
    name = PLATFORM_NAMES.get(platform.kind, platform.kind)
    facts = []
    if platform.kind == "jetson":
        facts.append(f"L4T R{platform.l4t or '?'}" + (f" (JetPack {platform.jetpack})" if platform.jetpack else ""))
        if platform.board:
            facts.append(platform.board)
    if platform.container:
        facts.append(f"in a {platform.container} container" if platform.kind != "container" else platform.container)
        if platform.driver_injected is not None:
            facts.append("driver injected by the NVIDIA runtime" if platform.driver_injected
                         else "no driver injected by the NVIDIA runtime")
    image = {k: v for k, v in platform.nvidia_env.items() if k in ("CUDA_VERSION", "NV_CUDNN_VERSION")}
    if image:
        facts.append("image " + ", ".join(f"{k}={v}" for k, v in image.items()))
    line = f"Platform: {name}" + (f", {', '.join(facts)}" if facts else "")
    evidence = list(platform.evidence) if verbose else list(platform.evidence[:2])
    if evidence:
        line += f" ({'; '.join(evidence)}{'; ...' if len(platform.evidence) > len(evidence) else ''})"
    if verbose and platform.ignored:
        line += f"; not counted: {'; '.join(platform.ignored)}"
    return escape(line)


def _driver_lines(report: Report, verbose: bool) -> tuple[str, list[str]]:
    driver = report.driver
    platform = report.host.platform
    if driver.source == "none" and any(f.code == "CD159" for f in report.findings):
        return "NVIDIA GPU: none in this machine", [escape("the PCI bus lists no NVIDIA display controller")]
    if driver.source == "none":
        seen = platform.nvidia_devices if platform is not None and platform.nvidia_devices else ()
        return "NVIDIA driver: not found", [escape(f"GPU seen: {text}") for text in seen[:4]]
    version = driver.version or "version unknown"
    if driver.version is None and platform is not None and platform.kind == "jetson" and platform.l4t:
        version = f"of Jetson Linux R{platform.l4t}"  # a Jetson's driver is L4T's: no NVML to give a version
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
    lines += _program_view_lines(report, verbose)
    from cudnn_doctor.render.multi_gpu_text import multi_gpu_lines

    lines += multi_gpu_lines(report, verbose)  # issue 42: links, NCCL, the all-reduce
    return escape(f"NVIDIA driver {version}{cuda}{gpus}"), lines


def _program_view_lines(report: Report, verbose: bool) -> list[str]:
    """What a program started here gets from CUDA: where it was asked (or, with -v, why it was not)."""
    view = report.process
    if view is None:
        return []
    seen = ""
    if view.visible is not None:
        seen = "; sees " + (", ".join(f"cuda:{g.ordinal} = GPU {g.nvml_index if g.nvml_index is not None else '?'}"
                                      for g in view.visible) or "no GPU")
    if view.cuinit is None and view.visible_from == "nvml":
        return [escape(f"a program started here: CUDA_VISIBLE_DEVICES={view.cuda_visible_devices}{seen} (NVML's GPUs "
                       "in the order named; CUDA not asked: --deep asks)")]
    if view.cuinit is None:
        return [escape("a program started here: CUDA not asked (nothing in this environment can make its answer "
                       "differ from the driver's; --deep asks)")] if verbose else []
    status = view.cuinit_name or f"status {view.cuinit}"
    line = f"a program started here: cuInit {status} from {view.libcuda or 'libcuda.so.1'}{seen}"
    if view.context is not None:  # made because a CUDA variable no row vouches for is set (probe_cuda_context)
        line += f"; first context on its first GPU: {view.context}"
    if verbose and view.asked_because:
        line += f" (asked: {'; '.join(view.asked_because)})"
    return [escape(line)]


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


def _loaders(install: CudnnInstall) -> str:
    """Who loads INSTALL, the system's loader by its name: ld.so, or Windows' LoadLibrary for a DLL."""
    loader = "LoadLibrary" if install.library.lower().endswith(".dll") else "ld.so"
    return ", ".join(loader if name == "ld.so" else name for name in install.loaded_by)


def _install_line(install: CudnnInstall, verbose: bool) -> str:
    version = install.version or (f"{install.major}.x (version unreadable)" if install.major else "unreadable")
    parts = [f"cuDNN {version} {install.library}", f"[{install.source}]"]
    if install.cuda_version:
        parts.append(f"built for CUDA {install.cuda_version}")
    if install.header_version:
        parts.append(f"headers {install.header_version}")
    if install.loaded_by:
        parts.append("loaded by " + _loaders(install))
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


def copies_table(report: Report) -> list[str]:
    """The cuDNN copies as aligned columns: version, the CUDA it was built for, its headers, who installed it, who
    loads it, and the library last (its length varies the most)."""
    header = ("version", "CUDA", "headers", "owner", "loaded by", "library")
    rows = [(i.version or (f"{i.major}.x?" if i.major else "?"), i.cuda_version or "-", i.header_version or "-",
             i.source, _loaders(i) or "-", i.library) for i in report.cudnn]
    widths = [max(len(r[c]) for r in (header, *rows)) for c in range(len(header) - 1)]
    return ["  ".join(cell.ljust(width) for cell, width in zip(r[:-1], widths, strict=True)) + "  " + r[-1]
            for r in (header, *rows)]


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
        if framework.details.get("cpu_only"):
            parts.append("CPU-only build (no CUDA, no cuDNN)")
        if framework.cuda_built_for:
            parts.append(f"built for CUDA {framework.cuda_built_for}")
        if framework.cudnn_expected:
            parts.append(f"expects cuDNN {framework.cudnn_expected}")
        if framework.cudnn_used:
            parts.append(f"loads {framework.cudnn_used}")
        elif framework.details.get("uses_cudnn") is False:
            parts.append("uses no cuDNN")
        if framework.name == "dl4j" and framework.location and not verbose:  # projects alike are told apart
            parts.append(_where([framework.location]).split(": ", 1)[1])
        line = ", ".join(parts)
        if verbose and framework.location:
            line += f" ({framework.found_via}: {framework.location})"
        lines.append(escape(line))
    names = ", ".join(f"{f.name} {f.version or '?'}" for f in report.frameworks)
    return escape(f"Frameworks: {names}"), lines
