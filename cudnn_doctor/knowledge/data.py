"""Read the TOML files of compat/ (the product's knowledge), once per process: the one reader of the doctor's own
data, which holds it to its schema and, in an installed wheel, to the installer's RECORD (issue 43).

tomllib takes ~90 ms for the larger tables, so each parsed file is kept as JSON
in the cache folder, named by a digest of its content (cudnn_doctor.cache.parsed).
"""

from __future__ import annotations

import errno
import os
from typing import TYPE_CHECKING, Any

from cudnn_doctor.errors import DoctorError

if TYPE_CHECKING:
    from pathlib import Path

# folders as strings: pathlib's import (with urllib.parse) is not on check's path
_PACKAGE = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
PACKAGE_DATA = os.path.join(_PACKAGE, "_data", "compat")
SOURCE_TREE = os.path.join(os.path.dirname(_PACKAGE), "compat")


def compat_folder() -> str:
    """compat/ inside an installed wheel, or beside the package in a source checkout."""
    return PACKAGE_DATA if os.path.isdir(PACKAGE_DATA) else SOURCE_TREE


def compat_dir() -> Path:
    """compat_folder() as a Path, for the commands and tests that walk it."""
    from pathlib import Path

    return Path(compat_folder())


DATA_LIMIT = 16 << 20  # the largest file of compat/ is under 600 KB (resemblance.toml); one of 16 MB is not ours
REPAIR = "reinstall cudnn-doctor (pip install --force-reinstall cudnn-doctor, or your package manager's reinstall)"


class DamagedData(DoctorError):
    """A file of the doctor's own installed data (compat/, its schemas) cannot be read, parsed or validated: the
    install is damaged, not the user's machine. One line names the file; the fix is a reinstall."""

    def __init__(self, path: str, why: str) -> None:
        super().__init__(f"cudnn-doctor's own data file {path} is damaged: {why}", fix=REPAIR, exit_code=2,
                         code="CD012")
        self.path = path


_LOADED: dict[str, dict[str, Any]] = {}
DAMAGE: list[DamagedData] = []  # the first damage found, kept: a caller that swallowed it is not the last word


def load(subject: str) -> dict[str, Any]:
    """The parsed compat/SUBJECT.toml, validated against its schema (once, where it is parsed; a parsed copy
    kept in the cache was validated before it was written). Every subject asked for is one the package ships: a
    file that is missing is damage too. Any damage is DamagedData, raised again on each call and kept (damage())."""
    found = _LOADED.get(subject)
    if found is not None:
        return found
    try:
        data = _read(subject)
    except DamagedData as error:
        if not DAMAGE:
            DAMAGE.append(error)
        raise
    _LOADED[subject] = data
    return data


def damage() -> DamagedData | None:
    """The first damaged file this process met, or None."""
    return DAMAGE[0] if DAMAGE else None


def _read(subject: str) -> dict[str, Any]:
    path = os.path.join(compat_folder(), f"{subject}.toml")
    raw = read_data_file(path)
    from cudnn_doctor.cache import parsed

    return parsed("compat", subject, raw, lambda text: _parse_and_check(path, subject, text))


def _recorded_digest(path: str) -> str | None:
    """The sha256 the installer wrote for PATH in the wheel's RECORD (PEP 376/627: `path,sha256=<urlsafe b64>,size`),
    where PATH is a file of an installed wheel that has one; None in a source checkout or where none is written."""
    site = os.path.dirname(_PACKAGE)
    relative = os.path.relpath(path, site).replace(os.sep, "/")
    if not relative.startswith("cudnn_doctor/_data/"):
        return None
    try:
        folders = [name for name in os.listdir(site) if name.startswith("cudnn_doctor-") and name.endswith(".dist-info")]
    except OSError:
        return None
    for folder in folders:
        try:
            record = read_data_file(os.path.join(site, folder, "RECORD")).decode("utf-8", "replace")
        except DamagedData:  # no RECORD to hold the file to (another installer): the schema is the check
            continue
        for line in record.splitlines():
            fields = line.rsplit(",", 2)
            if len(fields) == 3 and fields[0].strip('"') == relative and fields[1].startswith("sha256="):
                return fields[1].removeprefix("sha256=")
    return None


def _matches_record(path: str, raw: bytes) -> None:
    """DamagedData where the installer recorded another content for PATH: a file cut short at a row's end is still
    valid TOML that holds its schema, and only its recorded digest tells that rows are missing."""
    recorded = _recorded_digest(path)
    if recorded is None:
        return
    import base64
    import hashlib

    actual = base64.urlsafe_b64encode(hashlib.sha256(raw).digest()).rstrip(b"=").decode()
    if actual != recorded:
        raise DamagedData(path, f"its content is not what was installed ({len(raw)} bytes, another sha256 than the "
                                "wheel's RECORD holds)")


# a limit of this process (ulimit -n, -v), not damage: raised as it is, for the runner to name the limit
_LIMIT_ERRNOS = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOMEM})


def read_data_file(path: str) -> bytes:
    """The bytes of a file of the doctor's own data, read as a user's file is (user_files: opened without blocking,
    a regular file only, at most DATA_LIMIT bytes); anything else is DamagedData naming it."""
    from cudnn_doctor.user_files import UnreadableFile, read_user_file

    try:
        return read_user_file(path, DATA_LIMIT)
    except UnreadableFile as error:
        cause = error.__context__
        if isinstance(cause, OSError) and cause.errno in _LIMIT_ERRNOS:
            raise cause from None
        raise DamagedData(path, str(error)) from None


def schema_file(subject: str) -> str:
    """compat/schema/SUBJECT.schema.json, else (a framework's build table) the one framework.schema.json."""
    folder = os.path.join(compat_folder(), "schema")
    own = os.path.join(folder, f"{subject}.schema.json")
    return own if os.path.lexists(own) else os.path.join(folder, "framework.schema.json")


def _parse_and_check(path: str, subject: str, raw: bytes) -> dict[str, Any]:
    """RAW parsed as TOML and checked against SUBJECT's schema: the only way data enters the process or the cache."""
    import json

    from cudnn_doctor.knowledge.schema_check import SchemaMismatch, check

    _matches_record(path, raw)
    try:
        data = _parse_toml(raw)
    except UnicodeDecodeError as error:
        raise DamagedData(path, f"not UTF-8 text (byte {error.start})") from None
    except ValueError as error:  # tomllib.TOMLDecodeError
        raise DamagedData(path, f"not valid TOML ({error})") from None
    except RecursionError:
        raise DamagedData(path, "not valid TOML (nested too deep)") from None
    schema_path = schema_file(subject)
    try:
        schema = json.loads(read_data_file(schema_path))
    except (ValueError, RecursionError) as error:  # UnicodeDecodeError is a ValueError
        raise DamagedData(schema_path, f"not valid JSON ({str(error)[:200]})") from None
    if not isinstance(schema, dict):
        raise DamagedData(schema_path, f"a JSON {type(schema).__name__}, not a schema")
    try:
        check(data, schema)
    except SchemaMismatch as error:
        where = schema_path if "the schema" in str(error) else path
        raise DamagedData(where, f"does not hold its schema ({str(error)[:300]})") from None
    except RecursionError:
        raise DamagedData(path, "does not hold its schema (nested too deep)") from None
    return data


def _parse_toml(raw: bytes) -> dict[str, Any]:
    """The TOML parser is imported only when the cache has no parsed copy (the first run after an update)."""
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib  # type: ignore[no-redef]
    return tomllib.loads(raw.decode("utf-8"))


def sublibrary_names() -> dict[int, list[str]]:
    """cuDNN major -> the sub-library base names of that generation (compat/cudnn.toml)."""
    names: dict[int, list[str]] = {}
    for generation in load("cudnn").get("generation", []):
        names[int(generation["major"])] = list(generation.get("sublibraries", []))
    return names
