"""`cudnn-doctor check`: the options read, diagnose() called (doctor/diagnosis.py), the report rendered."""

from __future__ import annotations

from cudnn_doctor.doctor.diagnosis import check_options, diagnose, resolve_check_settings
from cudnn_doctor.errors import DoctorError
from cudnn_doctor.render import formats


def check(json_output: bool = False, output_format: str | None = None, output: str | None = None,
          junit_xml: str | None = None, require: list[str] | None = None, strict: bool | None = None,
          select: list[str] | None = None, ignore: list[str] | None = None, search_path: list[str] | None = None,
          framework: list[str] | None = None, project: str | None = None, python: str | None = None,
          deep: bool = False, quiet: bool = False, verbose: bool = False) -> None:
    """Diagnose the GPUs, driver, CUDA toolkits, cuDNN copies and frameworks; ends with SystemExit(status)."""
    require, select, ignore = require or [], select or [], ignore or []
    search_path, framework = search_path or [], framework or []
    if quiet and verbose:
        raise DoctorError("-q and -v ask for less and for more at once", fix="give one of them", code="CD002")
    settings = resolve_check_settings(select, ignore, strict, require, output_format, json_output)
    options = check_options(settings, search_path, framework, project, python, deep)
    chosen = settings.output_format or "text"
    if output is not None:
        _check_output_path(output, chosen)
    if junit_xml is not None:
        from cudnn_doctor.render.output_file import check_target

        check_target(junit_xml, "--junit-xml")
    from cudnn_doctor.render.wait_line import WaitLine

    with WaitLine(shown=deep and chosen == "text" and not quiet) as waiting:  # --deep takes seconds: say what for
        report = diagnose(options, progress=waiting.say, preload=formats.FORMATS[chosen].modules).report
    if junit_xml is not None:
        from cudnn_doctor.render.junit import write_junit

        write_junit(report, junit_xml, settings.strict)
    answer = formats.FORMATS[chosen]
    if answer.utf8:
        from cudnn_doctor.streams import utf8_stdout

        utf8_stdout()
    if answer.document is not None:
        _write_document(answer.document(report, settings.strict, verbose), output)
    elif answer.show is not None:
        answer.show(report, verbose, quiet)
    raise SystemExit(report.summary.exit_code if report.summary else 3)


def _check_output_path(output: str, chosen: str) -> None:
    """--output FILE: only for a document format, a file that may be renamed over (checked before probing)."""
    if not formats.FORMATS[chosen].is_document:
        raise DoctorError(f"--output goes with --format {formats.words(formats.documents())}, not {chosen}",
                          fix="cudnn-doctor check --format prometheus --output /var/lib/node_exporter/cudnn_doctor.prom", code="CD002")
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
                          fix="give a file in a folder you can write to", code="CD006") from None
