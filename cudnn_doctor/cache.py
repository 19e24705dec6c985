"""The doctor's cache folder (downloads, parsed compat data)."""

from __future__ import annotations

import functools
import json
import os
import re
import sys
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from cudnn_doctor import __version__

try:
    from _blake2 import blake2b  # what hashlib.blake2b is, without hashlib's OpenSSL (2 ms of every start)
except ImportError:  # a Python built without it
    from hashlib import blake2b

if TYPE_CHECKING:
    from pathlib import Path

STALE_TEMPORARY_S = 3600.0  # a .tmp this old belongs to a process that was killed mid-write


def cache_folder() -> str | None:
    """CUDNN_DOCTOR_CACHE_DIR (variables.cache_override), else the platform's user cache folder (platformdirs';
    on Linux XDG_CACHE_HOME when absolute, else ~/.cache with the home of variables.home_folder). A string: check
    reads its parsed data from here without importing pathlib. None where there is no home (HOME unset, empty or
    relative and no password entry for this user: a CI container's random uid) and no variable names a folder:
    Python's expanduser would answer '~', a folder named ~ made in the working folder."""
    from cudnn_doctor.variables import cache_override, home_folder

    override = cache_override()
    if override:
        return override
    if sys.platform.startswith("linux"):  # platformdirs' answer, without importing it (and tempfile, random)
        base = os.environ.get("XDG_CACHE_HOME", "")
        if base.strip() and os.path.isabs(base):  # a relative one is invalid and ignored (the XDG base directory spec)
            return os.path.join(base, "cudnn-doctor")
        home = home_folder()  # an empty or relative HOME is not / or the working folder
        return None if home is None else os.path.join(home, ".cache", "cudnn-doctor")
    from platformdirs import user_cache_dir

    found = user_cache_dir("cudnn-doctor", appauthor=False)
    return found if os.path.isabs(found) else None


_RUN_FOLDER: list[str] = []


def cache_dir() -> Path:
    """cache_folder() as a Path (install's downloads, bench's kernels); where there is none (no home), a private
    folder of this run (mkdtemp: mode 0700, a new name) removed when the process ends: nothing is kept, nothing is
    made in the working folder, and no other user's folder is trusted."""
    from pathlib import Path

    folder = cache_folder()
    if folder is not None:
        return Path(folder)
    if not _RUN_FOLDER:
        import atexit
        import shutil
        import tempfile

        try:
            _RUN_FOLDER.append(tempfile.mkdtemp(prefix="cudnn-doctor-cache-"))
        except OSError as error:
            from cudnn_doctor.errors import DoctorError

            raise DoctorError(f"no cache folder (no home, no CUDNN_DOCTOR_CACHE_DIR) and no temporary folder: "
                              f"{error.strerror or error}", fix="set CUDNN_DOCTOR_CACHE_DIR or TMPDIR to a folder you "
                              "can write to", exit_code=1, code="CD006") from None
        atexit.register(shutil.rmtree, _RUN_FOLDER[0], True)
    return Path(_RUN_FOLDER[0])


ENTRY_FORMAT = "cudnn-doctor/cache-entry/2"  # 2: compat data validated against its schema before it is kept


def parsed(kind: str, subject: str, raw: bytes, parse: Callable[[bytes], dict[str, Any]]) -> dict[str, Any]:
    """PARSE(RAW) (a table: a dict), kept in <cache>/KIND/SUBJECT-<key>.json.

    The key is a digest of this tool's version and of RAW, so another install of the same data reuses the
    entry and another version of the tool or of the data never does; writing a new entry removes SUBJECT's
    others. An entry is trusted only after checks (cached_value): on any doubt (not a regular file, too big,
    another format, tool, subject or data, a checksum that does not match, another shape) RAW is parsed
    again and the entry rewritten."""
    data_digest = blake2b(raw, digest_size=16).hexdigest()
    key = blake2b(f"{ENTRY_FORMAT}\0{__version__}\0{data_digest}".encode(), digest_size=8).hexdigest()
    base = cache_folder()
    if base is None:  # no home and no cache variable: parsed each run, nothing written
        return parse(raw)
    folder = os.path.join(base, kind)
    cached = os.path.join(folder, f"{subject}-{key}.json")
    header = {"format": ENTRY_FORMAT, "tool": __version__, "kind": kind, "subject": subject, "data": data_digest}
    found = cached_value(cached, header, limit=max(ENTRY_LIMIT, 8 * len(raw)))
    if found is not None:
        return found
    data = parse(raw)
    write_entry(folder, cached, header, data)
    prune(folder, subject, keep=os.path.basename(cached))
    return data


ENTRY_LIMIT = 4 << 20


def cached_value(path: str, header: dict[str, str], limit: int) -> dict[str, Any] | None:
    """The table kept at PATH if its header line is HEADER and its body the one that header's checksum
    names; None on any doubt. PATH is read without blocking (a FIFO is refused, never waited on), and
    only a regular file of at most LIMIT bytes."""
    from cudnn_doctor.user_files import UnreadableFile, read_user_file

    try:
        content = read_user_file(path, limit)
    except UnreadableFile:
        return None
    first, _, body = content.partition(b"\n")
    try:
        stored = json.loads(first)
        if not isinstance(stored, dict) or {k: stored.get(k) for k in header} != header:
            return None
        if stored.get("body") != blake2b(body, digest_size=16).hexdigest():
            return None
        value = json.loads(body)
    except (ValueError, RecursionError, UnicodeDecodeError):
        return None
    return value if isinstance(value, dict) else None


def write_entry(folder: str, cached: str, header: dict[str, str], data: dict[str, Any]) -> None:
    """HEADER (with the body's checksum) and DATA as JSON, written beside CACHED and renamed over it; a
    cache that cannot be written only costs time, and a write cut short (a signal) leaves no temporary."""
    body = json.dumps(data).encode("utf-8")
    line = json.dumps({**header, "body": blake2b(body, digest_size=16).hexdigest()}).encode("utf-8")
    temporary = os.path.join(folder, f"{os.path.splitext(os.path.basename(cached))[0]}.{os.getpid()}.tmp")
    try:
        os.makedirs(folder, exist_ok=True)
        with open(temporary, "xb") as handle:
            handle.write(line + b"\n" + body)
        os.replace(temporary, cached)
    except BaseException as error:
        try:
            os.unlink(temporary)
        except OSError:
            pass
        # a folder the system refuses (OSError), one of thousands of parts (os.makedirs recurses once a part: a
        # RecursionError) or a name no file can have (ValueError): the cache is not written, which only costs time
        if not isinstance(error, (OSError, RecursionError, ValueError)):
            raise


@functools.cache
def legacy_pattern() -> re.Pattern[str]:
    # SUBJECT-<size>-<mtime_ns>.json, keyed by install, not by data
    return re.compile(r"^[a-z0-9_]+-\d+-\d+\.json$")


@functools.cache
def temporary_pattern() -> re.Pattern[str]:
    return re.compile(r"^[a-z0-9_]+-[0-9a-f-]+\.\d+\.tmp$")


def prune(folder: str, subject: str, keep: str) -> list[str]:
    """Remove from FOLDER: SUBJECT's other versions, files named the old way (one per install), and
    temporary files that killed runs left behind. Anything else there is not ours and stays."""
    versions = re.compile(rf"^{re.escape(subject)}-[0-9a-f-]+\.json$")
    removed: list[str] = []
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return removed
    now = time.time()
    for entry in entries:
        name = entry.name
        try:
            stale = temporary_pattern().match(name) and now - entry.stat(follow_symlinks=False).st_mtime > STALE_TEMPORARY_S
            if (versions.match(name) and name != keep) or legacy_pattern().match(name) or stale:
                os.unlink(entry.path)
                removed.append(name)
        except OSError:
            continue  # another run removed it first, or it is not ours to remove
    return removed
