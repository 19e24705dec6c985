"""What `check` (and `fix`, which takes the same options) is asked, from three places, strongest first:
the command line, `CUDNN_DOCTOR_*` variables (for CI), and `[tool.cudnn-doctor]` in the nearest
pyproject.toml from the working folder up (the current project's, as ruff and pytest find theirs).

`select` and `format` come from the strongest place that sets them; `strict` likewise (`--no-strict`
turns a project's `strict = true` off); `ignore` and `require` add up over all three, so a CI job
cannot drop a project's accepted warnings by adding its own."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import field

from cudnn_doctor.errors import DoctorError
from cudnn_doctor.operating_system import kernel_getcwd
from cudnn_doctor.records import record
from cudnn_doctor.selection import Selection, parse_codes

TABLE = "cudnn-doctor"  # [tool.cudnn-doctor]
KEYS = ("ignore", "select", "strict", "require", "format")
ENV_PREFIX = "CUDNN_DOCTOR_"
TRUE_WORDS, FALSE_WORDS = ("1", "true", "yes", "on"), ("0", "false", "no", "off", "")
PYPROJECT_LIMIT = 1 << 20


@record
class CheckSettings:
    """check's settings from the command line, CUDNN_DOCTOR_* and [tool.cudnn-doctor]."""

    selection: Selection = field(default_factory=Selection)
    strict: bool = False
    require: tuple[str, ...] = ()
    output_format: str | None = None
    config_file: str | None = None  # the pyproject.toml read, if any
    sources: dict[str, str] = field(default_factory=dict)  # key -> where it was set ("--ignore", "CUDNN_DOCTOR_IGNORE", path)


def find_project_config(start: str | None = None) -> tuple[str, dict[str, object]] | None:
    """The nearest pyproject.toml from START (the working folder) up that has [tool.cudnn-doctor], and that table."""
    try:
        folder = os.path.abspath(start or kernel_getcwd())
    except OSError:  # the working folder was removed: no project
        return None
    while True:
        path = os.path.join(folder, "pyproject.toml")
        table = _read_table(path)
        if table is not None:
            return path, table
        parent = os.path.dirname(folder)
        if parent == folder:
            return None
        folder = parent


def _read_table(path: str) -> dict[str, object] | None:
    from cudnn_doctor.user_files import UnreadableFile, read_user_file

    if not os.path.lexists(path):
        return None
    try:
        raw = read_user_file(path, PYPROJECT_LIMIT)
    except UnreadableFile as error:
        raise DoctorError(f"{path}: {error}", fix="make it a readable pyproject.toml, or run from another folder", code="CD007") from None
    if TABLE.encode() not in raw:  # no table of ours: not worth parsing
        return None
    try:
        import tomllib
    except ImportError:  # Python 3.10
        import tomli as tomllib  # type: ignore[no-redef]
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        line = raw[:error.start].count(b"\n") + 1
        raise DoctorError(f"{path}: not UTF-8 (byte 0x{raw[error.start]:02x} on line {line}), and a TOML file is UTF-8",
                          fix="save it as UTF-8 (it is read for [tool.cudnn-doctor])", code="CD007") from None
    if text.startswith("\ufeff"):  # Notepad's byte-order mark: Python's TOML reader (pip's, build's) refuses it too
        raise DoctorError(f"{path}: starts with a byte-order mark (U+FEFF), which Python's TOML reader refuses (as "
                          "pip and build do)", fix="save it as UTF-8 without a byte-order mark", code="CD007")
    deep = _long_dotted_key(text)
    if deep:  # Python's TOML reader takes time by the square of a key's parts: 300,000 of them, five minutes
        raise DoctorError(f"{path}: line {deep} holds more than {MAX_KEY_PARTS} dotted names in a row (a.b.c...), "
                          "which Python's TOML reader would take minutes over as a key", fix=f"write [tool.{TABLE}]'s "
                          "keys plainly (ignore = [...]), and no key or value of that many dotted parts",
                          code="CD007")
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise DoctorError(f"{path}: not valid TOML ({error})", fix="fix the file's syntax (it is read for [tool.cudnn-doctor])", code="CD007") from None
    except RecursionError:  # a value nested thousands deep: Python's TOML reader recurses once per level
        raise DoctorError(f"{path}: a value nested too deep to read", fix="write [tool.cudnn-doctor]'s values as "
                          "flat lists of strings", code="CD007") from None
    table = data.get("tool", {}).get(TABLE) if isinstance(data.get("tool"), dict) else None
    if table is None:
        return None
    if not isinstance(table, dict):
        raise DoctorError(f"{path}: [tool.{TABLE}] is not a table", fix=f"write it as [tool.{TABLE}] with keys {', '.join(KEYS)}", code="CD007")
    unknown = sorted(set(table) - set(KEYS))
    if unknown:
        raise DoctorError(f"{path}: [tool.{TABLE}] has no key {unknown[0]!r}", fix=f"the keys are {', '.join(KEYS)}", code="CD007")
    return table


MAX_KEY_PARTS = 128  # a.b.c...: real files have a handful; 128 parts cost Python's TOML reader nothing yet


def _long_dotted_key(text: str) -> int | None:
    """The number of the first line of TEXT with a run of more than MAX_KEY_PARTS dotted key parts (bare or quoted,
    a.b."c"...), None where there is none. A dotted key never spans lines, and only a line with that many dots is
    looked at, part by part: linear in the file, whatever it holds."""
    import re

    part = re.compile(r"[ \t]*(?:[A-Za-z0-9_-]+|\"[^\"\n]*\"|'[^'\n]*')[ \t]*")
    for number, line in enumerate(text.split("\n"), 1):
        if line.count(".") < MAX_KEY_PARTS:
            continue
        run = 0
        for piece in line.split("."):
            run = run + 1 if part.fullmatch(piece) else 0
            if run > MAX_KEY_PARTS:
                return number
    return None


def _strings(value: object, where: str) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list) and all(isinstance(item, str) for item in value):
        return list(value)
    example = '["cudnn>=9.1"]' if where.endswith("require") else '["CD406"]'
    raise DoctorError(f"{where}: expected a list of strings, got {value!r}", fix=f"write it like {where.split()[-1]} = {example}", code="CD007")


def _setting_codes(values: list[str], where: str) -> tuple[str, ...]:
    """VALUES read as --select/--ignore read theirs; a bad code is CD007 (a setting not valid), named by WHERE it was
    written, not CD001 (a value an option does not take): no option was given."""
    try:
        return parse_codes(values, where)
    except DoctorError as error:
        error.code = "CD007"
        raise


def _boolean(value: object, where: str) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in TRUE_WORDS + FALSE_WORDS:
        return value.strip().lower() in TRUE_WORDS
    raise DoctorError(f"{where}: {value!r} is not true or false", fix="write true or false (1 or 0 in a variable)", code="CD007")


def _requirements(specs: list[str], where: str, parse_requirement: Callable[[str], object] | None) -> list[str]:
    """SPECS, each checked as --require checks its own (PARSE_REQUIREMENT, handed down by the command that reads
    them: the rules are a layer above), a bad one named by WHERE it was written."""
    if parse_requirement is None:
        return specs
    for spec in specs:
        try:
            parse_requirement(spec)
        except DoctorError as error:
            error.message = error.message.replace("--require", where, 1)
            raise
    return specs


def _format(value: object, where: str, formats: tuple[str, ...]) -> str:
    """VALUE as one of FORMATS (render/formats.py's, handed down by the command: the renderers are a layer above)."""
    if not isinstance(value, str) or (formats and value.strip().lower() not in formats):
        raise DoctorError(f"{where}: {value!r} is not a format", fix=f"one of {', '.join(formats)}", code="CD007")
    return value.strip().lower()


def resolve_settings(*, select: list[str], ignore: list[str], strict: bool | None, require: list[str],
                     output_format: str | None, environ: dict[str, str] | None = None,
                     start: str | None = None,
                     parse_requirement: Callable[[str], object] | None = None,
                     formats: tuple[str, ...] = ()) -> CheckSettings:
    """The settings of one `check`/`fix`: the command line's values, then the variables', then the project's."""
    environ = dict(os.environ) if environ is None else environ
    found = find_project_config(start)
    path, table = found if found else (None, {})
    sources: dict[str, str] = {}

    def key(name: str) -> str:
        return f"{path} [tool.{TABLE}] {name}"

    def variable(name: str) -> str | None:
        value = environ.get(ENV_PREFIX + name.upper())
        return value if value is not None and value.strip() else None

    # every place's value is checked, also where a stronger place wins: a wrong one is said, never skipped over
    # (a project's `format = 5` passed every `check --json` and broke the first plain `check`)
    table_select = _setting_codes(_strings(table["select"], key("select")), key("select")) if "select" in table else None
    variable_select = _setting_codes([variable("select") or ""], f"{ENV_PREFIX}SELECT") if variable("select") else None
    variable_strict = _boolean(variable("strict"), f"{ENV_PREFIX}STRICT") if variable("strict") is not None else None
    table_strict = _boolean(table["strict"], key("strict")) if "strict" in table else None
    variable_format = _format(variable("format") or "", f"{ENV_PREFIX}FORMAT", formats) if variable("format") else None
    table_format = _format(table["format"], key("format"), formats) if "format" in table else None
    # select: the strongest place that sets it
    chosen_select: tuple[str, ...] = ()
    if select:
        chosen_select, sources["select"] = parse_codes(select, "--select"), "--select"
    elif variable_select is not None:
        chosen_select, sources["select"] = variable_select, f"{ENV_PREFIX}SELECT"
    elif table_select is not None:
        chosen_select, sources["select"] = table_select, path or ""
    # ignore and require: every place adds its own
    ignored: list[str] = []
    required: list[str] = []
    ignore_from: list[str] = []
    require_from: list[str] = []
    if "ignore" in table:
        ignored += _setting_codes(_strings(table["ignore"], key("ignore")), key("ignore"))
        ignore_from.append(path or "")
    if "require" in table:
        required += _requirements(_strings(table["require"], key("require")), key("require"), parse_requirement)
        require_from.append(path or "")
    if variable("ignore"):
        ignored += _setting_codes([variable("ignore") or ""], f"{ENV_PREFIX}IGNORE")
        ignore_from.append(f"{ENV_PREFIX}IGNORE")
    if variable("require"):  # specs hold commas ('cudnn>=9.1,<10'): several are separated by ';'
        required += _requirements([spec.strip() for spec in (variable("require") or "").split(";") if spec.strip()],
                                  f"{ENV_PREFIX}REQUIRE", parse_requirement)
        require_from.append(f"{ENV_PREFIX}REQUIRE")
    if ignore:
        ignored += parse_codes(ignore, "--ignore")
        ignore_from.append("--ignore")
    if require:
        required += require
        require_from.append("--require")
    for name, places in (("ignore", ignore_from), ("require", require_from)):
        if places:
            sources[name] = ", ".join(places)
    # strict and format: the strongest place that sets them
    chosen_strict = False
    if strict is not None:
        chosen_strict, sources["strict"] = strict, "--strict" if strict else "--no-strict"
    elif variable_strict is not None:
        chosen_strict, sources["strict"] = variable_strict, f"{ENV_PREFIX}STRICT"
    elif table_strict is not None:
        chosen_strict, sources["strict"] = table_strict, path or ""
    chosen_format = output_format
    if chosen_format is None and variable_format is not None:
        chosen_format, sources["format"] = variable_format, f"{ENV_PREFIX}FORMAT"
    elif chosen_format is None and table_format is not None:
        chosen_format, sources["format"] = table_format, path or ""
    return CheckSettings(selection=Selection(select=chosen_select, ignore=tuple(dict.fromkeys(ignored))),
                         strict=chosen_strict, require=tuple(dict.fromkeys(required)), output_format=chosen_format,
                         config_file=path, sources=sources)
