"""`cudnn-doctor check`: its options as data, its body, and its command line read without typer.

`check` is the command CI and Slurm run on every job, so it starts at the cost of its own work: a command
line made only of check's options in their plain forms (`--json`, `--format json`, `--format=json`,
`-o FILE`, ...) is read here and the body runs with typer never imported (30 ms of a 91 ms check on a
2-core machine). Anything else (help, completion, a short-option cluster, `--`, a value that starts with
`-`, an option check does not have, a positional argument) goes to typer through cli.py, which declares
the same options and calls the same body. tests/test_check_line.py holds OPTIONS to typer's declaration
and this reading to click's, option by option and over generated command lines."""

from __future__ import annotations

import os
import sys

from cudnn_doctor.command import console, guarded
from cudnn_doctor.completion import COMPLETE_VAR  # typer's shell completion asks through it: typer answers
from cudnn_doctor.errors import DoctorError
from cudnn_doctor.settings import CHECK_FORMATS

FLAG, VALUE, MANY = "flag", "value", "many"
# check's options: (parameter, kind, the names that set it, the names that unset it (a flag's --no-x))
OPTIONS: tuple[tuple[str, str, tuple[str, ...], tuple[str, ...]], ...] = (
    ("json_output", FLAG, ("--json",), ()),
    ("output_format", VALUE, ("--format",), ()),
    ("output", VALUE, ("--output", "-o"), ()),
    ("junit_xml", VALUE, ("--junit-xml",), ()),
    ("require", MANY, ("--require",), ()),
    ("strict", FLAG, ("--strict",), ("--no-strict",)),
    ("select", MANY, ("--select",), ()),
    ("ignore", MANY, ("--ignore",), ()),
    ("search_path", MANY, ("--search-path",), ()),
    ("framework", MANY, ("--framework",), ()),
    ("project", VALUE, ("--project",), ()),
    ("python", VALUE, ("--python",), ()),
    ("deep", FLAG, ("--deep",), ()),
    ("quiet", FLAG, ("-q", "--quiet"), ()),
    ("verbose", FLAG, ("-v", "--verbose"), ()),
)


def _defaults() -> dict[str, object]:
    defaults: dict[str, object] = {}
    for name, kind, _, unset in OPTIONS:
        defaults[name] = [] if kind == MANY else (None if kind == VALUE or unset else False)
    return defaults


def plain_options(args: list[str]) -> dict[str, object] | None:
    """check's options from ARGS (the command line after the program's name), as typer would pass them
    to check; None where typer must read the line (see the module's text)."""
    if not args or args[0] != "check" or COMPLETE_VAR in os.environ:
        return None
    by_name = {flag: (name, kind, flag in unset) for name, kind, sets, unset in OPTIONS for flag in (*sets, *unset)}
    values = _defaults()
    rest = iter(args[1:])
    for arg in rest:
        given, has_value, value = arg, False, ""
        if arg.startswith("--") and "=" in arg:
            given, value = arg.split("=", 1)
            has_value = True
        known = by_name.get(given)
        if known is None:
            return None
        name, kind, unsets = known
        if kind == FLAG:
            if has_value:
                return None
            values[name] = not unsets
            continue
        if not has_value:
            value = next(rest, "-")  # none left: typer says what is missing
            if value.startswith("-"):
                return None
        if kind == MANY:
            values[name].append(value)  # type: ignore[attr-defined]
        else:
            values[name] = value
    return values


def check_settings(select: list[str], ignore: list[str], strict: bool | None, require: list[str],
                   output_format: str | None, json_output: bool):  # type: ignore[no-untyped-def]
    """The command line's selection, strictness, requirements and format merged with CUDNN_DOCTOR_* and
    [tool.cudnn-doctor] (cudnn_doctor/settings.py); the format checked. For `check` and `fix`."""
    from cudnn_doctor.records import replace
    from cudnn_doctor.settings import resolve_settings

    given = _check_format(output_format, json_output) if output_format is not None or json_output else None
    settings = resolve_settings(select=select, ignore=ignore, strict=strict, require=require, output_format=given)
    if given is None and settings.output_format is not None:
        where = settings.sources.get("format", "")
        chosen = settings.output_format.strip().lower()
        if chosen not in CHECK_FORMATS:
            raise DoctorError(f"format {settings.output_format!r} (from {where}): not a format I know",
                              fix="text, json, github, junit or prometheus")
        settings = replace(settings, output_format=chosen)
    return settings


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
    chosen = settings.output_format or "text"
    if output is not None:
        _check_output_path(output, chosen)
    if junit_xml is not None:
        from cudnn_doctor.render.output_file import check_target

        check_target(junit_xml, "--junit-xml")
    from cudnn_doctor.commands.check import CheckOptions, run_check

    report = run_check(CheckOptions(require=list(settings.require), strict=settings.strict, search_paths=search_path,
                                    project_dir=project, deep=deep, frameworks=framework, python=python,
                                    selection=settings.selection, selection_sources=settings.sources))
    if junit_xml is not None:
        from cudnn_doctor.render.junit import write_junit

        write_junit(report, junit_xml, settings.strict)
    if chosen in ("json", "junit", "prometheus"):
        _write_machine_output(report, chosen, settings.strict, output)
    else:
        from cudnn_doctor.render.text import render_check

        if chosen == "github":
            from cudnn_doctor.render.github import log_lines, render_github

            shown = console()
            with shown.capture() as captured:
                render_check(report, shown, verbose, quiet)
            sys.stdout.write(log_lines(captured.get()))
            render_github(report, sys.stdout, os.environ.get("GITHUB_STEP_SUMMARY"), verbose)
        else:
            render_check(report, console(), verbose, quiet)
    raise SystemExit(report.summary.exit_code if report.summary else 3)


def _check_output_path(output: str, chosen: str) -> None:
    """--output FILE: only for a machine-readable format, a file that may be renamed over (checked before probing)."""
    if chosen not in ("json", "junit", "prometheus"):
        raise DoctorError(f"--output goes with --format json, junit or prometheus, not {chosen}",
                          fix="cudnn-doctor check --format prometheus --output /var/lib/node_exporter/cudnn_doctor.prom")
    from cudnn_doctor.render.output_file import check_target

    check_target(output, "--output")


def _write_machine_output(report, chosen: str, strict: bool, output: str | None) -> None:  # type: ignore[no-untyped-def]
    if chosen == "json":
        from cudnn_doctor.model import report_to_json

        if output is None:
            from cudnn_doctor.render.json_out import write_json

            write_json(report_to_json(report))
            return
        from cudnn_doctor.render.json_out import json_text

        text = json_text(report_to_json(report))
    elif chosen == "junit":
        from cudnn_doctor.render.junit import junit_xml_text

        text = junit_xml_text(report, strict)
    else:
        import time

        from cudnn_doctor.model import report_to_json
        from cudnn_doctor.render.prometheus import render_prometheus

        text = render_prometheus(report_to_json(report), now=time.time())
    if output is None:
        sys.stdout.write(text)
        sys.stdout.flush()
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
    if chosen not in CHECK_FORMATS:
        raise DoctorError(f"--format {output_format}: not a format I know", fix="--format text, json, github, junit or prometheus")
    if json_output and chosen != "json":
        raise DoctorError(f"--json and --format {chosen} ask for two formats", fix="give one of them")
    return chosen
