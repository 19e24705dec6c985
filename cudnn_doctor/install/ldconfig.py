"""Whether the dynamic loader already searches a folder, and telling it about new files:
`ldconfig` for a system folder, or the exact environment line for any other."""

from __future__ import annotations

import glob
import os

from cudnn_doctor.knowledge.layout import Layout
from cudnn_doctor.quoting import CannotQuote, check_list_entry, cmd_prepend, comment, quote
from cudnn_doctor.user_files import UnreadableFile, read_user_text

DEFAULT_FOLDERS = ("/lib", "/usr/lib", "/lib64", "/usr/lib64")


def configured_folders(conf: str = "/etc/ld.so.conf") -> set[str]:
    """The folders in ld.so.conf and the files it includes, plus the loader's own defaults."""
    found = {os.path.realpath(f) for f in DEFAULT_FOLDERS}
    seen: set[str] = set()

    def read(path: str) -> None:
        if path in seen:
            return
        seen.add(path)
        try:  # closed at once (an open file left to the collector is a ResourceWarning: under PYTHONWARNINGS=error
            # Python printed a traceback for each), never blocking on a FIFO, bounded
            lines = read_user_text(path).splitlines()
        except (OSError, UnreadableFile):
            return
        for line in lines:
            line = line.split("#", 1)[0].strip()
            if line.startswith("include "):
                pattern = line.split(None, 1)[1]
                if not os.path.isabs(pattern):
                    pattern = os.path.join(os.path.dirname(path), pattern)
                for included in sorted(glob.glob(pattern)):
                    read(included)
            elif line.startswith("/"):
                found.add(os.path.realpath(line))

    read(conf)
    return found


def loader_setup(library_folder: str, layout: Layout) -> tuple[str, str]:
    """("ldconfig", why) when the folder is one the loader is configured to search, else
    ("environment", the line that makes the loader search it)."""
    line = env_line(library_folder, layout)
    if layout.os_name == "linux" and os.path.realpath(library_folder) in configured_folders():
        return "ldconfig", line
    return "environment", line


def env_line(library_folder: str, layout: Layout) -> str:
    """The line for cmd (Windows) or a POSIX shell that puts LIBRARY_FOLDER first on the loader's variable,
    quoted so that it sets exactly that folder and runs nothing; a comment saying why where it cannot."""
    try:
        if layout.os_name == "windows":
            return cmd_prepend("PATH", library_folder.replace("/", "\\"))
        check_list_entry(library_folder)
    except CannotQuote as refusal:
        return comment("cmd" if layout.os_name == "windows" else "bash", f"cudnn-doctor wrote no line: {refusal}")
    variable = layout.path_variable  # no trailing ':' where it was unset: an empty entry would mean the working folder
    return f"export {variable}={quote(library_folder, 'bash')}${{{variable}:+:${variable}}}"


LDCONFIG_TIMEOUT_S = 120.0


def run_ldconfig() -> str:
    """Run the system's own ldconfig (before one on PATH: as root, a copy first on a user's PATH would run with
    root's rights) through the one child runner, bounded; a sentence saying what happened."""
    from cudnn_doctor.child import deadline_in, run_child
    from cudnn_doctor.operating_system import CURRENT

    ldconfig = CURRENT.system_tool("ldconfig", os.environ.get("PATH", ""))
    if ldconfig is None:
        return "ldconfig not found: run it yourself so that programs find the new files"
    if hasattr(os, "geteuid") and os.geteuid() != 0:
        return "ran as a normal user: run `sudo ldconfig` so that programs find the new files"
    answer = run_child([ldconfig], None, deadline_in(LDCONFIG_TIMEOUT_S), what="ldconfig")
    if answer.timed_out:
        return f"{ldconfig} did not finish within {LDCONFIG_TIMEOUT_S:g} s: run `sudo ldconfig`"
    if answer.exit_code != 0:
        return f"{ldconfig} failed ({(answer.stderr_tail or answer.error or '')[:200]}): run `sudo ldconfig`"
    return f"ran {ldconfig}"
