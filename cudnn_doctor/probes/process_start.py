"""What the shell gives every program it starts, besides its variables and limits (issue 45): the umask and the
signals it ignores. Both pass through exec unchanged (execve(2): an ignored signal stays ignored, the umask is kept),
so this process, started by that shell, has them as a program started there would: read from its own
/proc/self/status (the kernel's own record; nothing started, nothing asked of a child, ~0.1 ms).

Python itself ignores SIGPIPE and SIGXFSZ at its start, so those two bits say nothing about the shell; SIGCHLD, SIGINT,
SIGTERM and SIGHUP it leaves as it found them (a handler for SIGINT only where it was not ignored)."""

from __future__ import annotations

import os

# the signals a shell can leave ignored (`trap '' CHLD`, nohup, a launcher) whose loss a program notices; SIGPIPE and
# SIGXFSZ are Python's own (it ignores them at start), so never read here
SIGNALS = {17: "SIGCHLD", 2: "SIGINT", 15: "SIGTERM", 1: "SIGHUP"}


def read_shell_settings(status_path: str = "/proc/self/status") -> dict[str, str]:
    """{"umask": "0022", "ignored": "SIGCHLD,...", "uid": "1000"} as the kernel holds them for this process; {} where
    it keeps no such file (not Linux) or it cannot be read."""
    from cudnn_doctor.user_files import UnreadableFile, read_user_file

    try:
        text = read_user_file(status_path, 1 << 16).decode("ascii", "replace")
    except (UnreadableFile, OSError):
        return {}
    fields = {}
    for line in text.splitlines():
        name, _, value = line.partition(":")
        fields[name.strip()] = value.strip()
    out: dict[str, str] = {}
    umask = fields.get("Umask", "")
    if umask and all(c in "01234567" for c in umask):
        out["umask"] = umask.rjust(4, "0")[-4:]
    ignored = fields.get("SigIgn", "")
    try:
        mask = int(ignored, 16) if ignored else None
    except ValueError:
        mask = None
    if mask is not None:
        out["ignored"] = ",".join(name for number, name in sorted(SIGNALS.items()) if mask >> (number - 1) & 1)
    uid = fields.get("Uid", "").split()
    if len(uid) > 1 and uid[1].isascii() and uid[1].isdigit():  # the effective uid: who the kernel checks files for
        out["uid"] = uid[1]
    elif hasattr(os, "geteuid"):
        out["uid"] = str(os.geteuid())
    return out
