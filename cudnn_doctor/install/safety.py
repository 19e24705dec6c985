"""What an archive member may be: refuse anything that could write outside the staging
folder, or that no cuDNN archive has ever held (device files, absurd sizes)."""

from __future__ import annotations

import os
import posixpath
import re
from collections.abc import Container
from dataclasses import dataclass

from cudnn_doctor.codes import doctor_error
from cudnn_doctor.errors import DoctorError
from cudnn_doctor.streams import printable  # re-exported: install's messages use it

FILE, DIR, SYMLINK, HARDLINK = "file", "dir", "symlink", "hardlink"
GiB = 1 << 30
MAX_MEMBER_BYTES = 8 * GiB  # cuDNN's largest file is under 1 GiB
MAX_TOTAL_BYTES = 32 * GiB
MAX_MEMBERS = 100_000
_WINDOWS_DRIVE = re.compile(r"^[A-Za-z]:")


@dataclass(frozen=True)
class Member:
    """One archive entry, its name already checked and normalised."""

    name: str  # "/"-separated, relative, no "." or ".." parts
    kind: str  # file | dir | symlink | hardlink
    size: int
    mode: int
    target: str | None = None  # symlink target, or the member a hardlink repeats


MAX_NAME_BYTES = 255  # one path part (NAME_MAX on Linux)
MAX_PATH_BYTES = 1024  # a whole member name; cuDNN's longest is under 100
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def refuse(archive: str, why: str) -> DoctorError:
    return doctor_error("CD502", exit_code=2, file=printable(os.path.basename(archive)), why=why)


def safe_name(archive: str, raw: str) -> str:
    """RAW as a clean relative path, or refuse it (absolute, drive letter, `..`)."""
    name = raw.replace("\\", "/")
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        raise refuse(archive, f"member '{printable(raw)}' has a name that is not UTF-8") from None
    if _CONTROL.search(name):
        raise refuse(archive, f"member '{printable(raw)}' has control characters (terminal escape codes) in its name")
    if len(name.encode("utf-8", "surrogateescape")) > MAX_PATH_BYTES or any(
            len(part.encode("utf-8", "surrogateescape")) > MAX_NAME_BYTES for part in name.split("/")):
        raise refuse(archive, f"member '{printable(raw[:60])}...' has a name too long for a file system "
                              f"({len(raw)} characters)")
    if name.startswith("/") or _WINDOWS_DRIVE.match(name):
        raise refuse(archive, f"member {raw!r} has an absolute path")
    parts = [part for part in name.split("/") if part not in ("", ".")]
    if ".." in parts:
        raise refuse(archive, f"member {raw!r} climbs out of the archive with '..'")
    if not parts:
        return ""
    return "/".join(parts)


def check_symlink(archive: str, name: str, target: str) -> str:
    """A link may only name a file beside it: libcudnn.so -> libcudnn.so.9."""
    clean = target.replace("\\", "/")
    if _CONTROL.search(clean) or len(clean) > MAX_NAME_BYTES:
        raise refuse(archive, f"link {name!r} has a target with control characters or too long a name")
    if clean.startswith("/") or _WINDOWS_DRIVE.match(clean):
        raise refuse(archive, f"link {name!r} points to the absolute path {target!r}")
    resolved = posixpath.normpath(posixpath.join(posixpath.dirname(name), clean))
    if resolved.startswith("../") or resolved == ".." or posixpath.dirname(resolved) != posixpath.dirname(name):
        raise refuse(archive, f"link {name!r} points outside its folder, to {target!r}")
    return posixpath.basename(resolved)


def check_placement(archive: str, name: str, dest: str, placed: Container[str], folders: set[str]) -> None:
    """A member may not lie under a path that an earlier member of the same archive made a link or a
    file (`lib/sub -> x`, then `lib/sub/evil.txt`: it would be written through the link, elsewhere than
    recorded), nor be put where earlier members made a folder. PLACED: the paths placed so far; FOLDERS:
    their folders, to which DEST's are added."""
    parents = [dest[:index] for index, character in enumerate(dest) if character == "/"]
    for parent in parents:
        if parent in placed:
            raise refuse(archive, f"member {name!r} lies under {parent!r}, which an earlier member made a link "
                                  "or a file, so it would not be written where it says")
    if dest in folders:
        raise refuse(archive, f"member {name!r} would replace the folder {dest!r} that earlier members lie in")
    folders.update(parents)


def check_size(archive: str, name: str, size: int, total: int, count: int) -> None:
    if size < 0 or size > MAX_MEMBER_BYTES:
        raise refuse(archive, f"member {name!r} claims an absurd size ({size} bytes)")
    if total > MAX_TOTAL_BYTES:
        raise refuse(archive, f"its members add up to an absurd size (over {MAX_TOTAL_BYTES // GiB} GiB)")
    if count > MAX_MEMBERS:
        raise refuse(archive, f"it has more than {MAX_MEMBERS} members")


def safe_mode(mode: int) -> int:
    """Readable by all (a+r), executable bits kept, no set-id bits, writable by the owner only."""
    return (mode & 0o755) | 0o644
