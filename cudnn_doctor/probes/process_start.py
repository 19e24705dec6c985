"""What the shell gives every program it starts, besides its variables and limits (issue 45): the umask and the
signals it ignores. Both pass through exec unchanged (execve(2): an ignored signal stays ignored, the umask is kept),
so this process, started by that shell, has them as a program started there would: read from its own
/proc/self/status (the kernel's own record; nothing started, nothing asked of a child, ~0.1 ms).

Python itself ignores SIGPIPE and SIGXFSZ at its start, so those two bits say nothing about the shell; SIGCHLD, SIGINT,
SIGTERM and SIGHUP it leaves as it found them (a handler for SIGINT only where it was not ignored)."""

from __future__ import annotations

import os
import signal

from cudnn_doctor.operating_system import kernel_getcwd

# the signals a shell can leave ignored (`trap '' CHLD`, nohup, a launcher), each passed to every program it starts;
# SIGPIPE (13) and SIGXFSZ (25) are Python's own (it ignores them at start), so never read here. Only those
# compat/process_start.toml has a row for are judged; the others are reported (process.shell)
SIGNALS = {number.value: number.name for number in signal.Signals if number.value not in (13, 25)}


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
    if mask is not None and status_path == "/proc/self/status":
        from cudnn_doctor import signals

        if signals.sigint_ignored_at_start():  # the doctor handles it since (signals.install); its shell ignored it
            mask |= 1 << (signal.SIGINT - 1)
    if mask is not None:
        out["ignored"] = ",".join(name for number, name in sorted(SIGNALS.items()) if mask >> (number - 1) & 1)
    uid = fields.get("Uid", "").split()
    blocked = fields.get("SigBlk", "")
    try:  # signals blocked at exec stay blocked (sigprocmask is inherited): said, not judged
        mask = int(blocked, 16) if blocked else 0
    except ValueError:
        mask = 0
    if mask:
        out["blocked"] = ",".join(_signal_name(number) for number in range(1, 65) if mask >> (number - 1) & 1)
    if status_path == "/proc/self/status":
        out.update(_descriptors())
    if len(uid) > 1 and uid[1].isascii() and uid[1].isdigit():  # the effective uid: who the kernel checks files for
        out["uid"] = uid[1]
    elif hasattr(os, "geteuid"):
        out["uid"] = str(os.geteuid())
    try:  # the working folder a program started here inherits: deleted under the shell (its inode kept, no name)
        kernel_getcwd()
    except FileNotFoundError:
        try:
            out["cwd_gone"] = os.readlink("/proc/self/cwd").removesuffix(" (deleted)")
        except OSError:
            out["cwd_gone"] = os.environ.get("PWD", "") or "?"
    except OSError:
        pass
    return out


def _signal_name(number: int) -> str:
    import signal

    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def _descriptors() -> dict[str, str]:
    """What the descriptors this process was started with (limits.record_inherited: the command's first instant) say
    of a program started here: "descriptors" (how many it holds below the soft open-files limit, the standard
    streams among them), "inherited" (those past the streams, runs of one kind: "3-983 /dev/null, 984 pipe"),
    "streams" (a standard stream closed, or one every write to fails). {} where nothing was recorded."""
    from cudnn_doctor.limits import held_at_start, inherited

    links = inherited()
    held = held_at_start()
    if links is None or held is None:
        return {}
    out = {"descriptors": str(held)}
    runs: list[list[object]] = []  # [first, last, kind]
    for fd in sorted(fd for fd in links if fd > 2):
        kind = _kind(links[fd])
        if runs and runs[-1][1] == fd - 1 and runs[-1][2] == kind:
            runs[-1][1] = fd
        else:
            runs.append([fd, fd, kind])
    if runs:
        shown = [f"{first}-{last} {kind}" if first != last else f"{first} {kind}" for first, last, kind in runs[:8]]
        out["inherited"] = ", ".join(shown) + (f", and {len(runs) - 8} more runs" if len(runs) > 8 else "")
    streams = [f"{name} closed" if fd not in links else f"{name} {links[fd]}" for fd, name in
               ((0, "stdin"), (1, "stdout"), (2, "stderr")) if fd not in links or links[fd] == "/dev/full"]
    if streams:
        out["streams"] = ", ".join(streams)
    return out


def _kind(link: str) -> str:
    """A descriptor's /proc link in a word or a path: 'pipe', 'socket', 'anon_inode:[eventfd]', '/dev/null'."""
    for kind in ("pipe", "socket"):
        if link.startswith(kind + ":["):
            return kind
    return link if len(link) <= 80 else link[:77] + "..."


def glibc_tunables(env: dict[str, str]) -> tuple[tuple[str, str, str, str], ...]:
    """Each entry of GLIBC_TUNABLES as this machine's glibc took it, asked of glibc itself: the ld.so that started
    this process run with `--list-tunables` under that GLIBC_TUNABLES alone (it prints each tunable's value as it
    parsed it, with its range). (name, value set, value glibc holds or "", "taken" | "unknown" | "refused"): a name
    it does not list is one it does not have (a typo, another release's), a value it does not hold is one it refused
    (out of its range, not a number); glibc ignores both without a word. () where it is unset or ld.so cannot say
    (before glibc 2.33, not Linux)."""
    value = env.get("GLIBC_TUNABLES")
    if not value:
        return ()
    from cudnn_doctor.probes.hwcaps import this_loader

    loader = this_loader()
    if loader is None:
        return ()
    from cudnn_doctor.child import deadline_in, run_child

    answer = run_child([loader, "--list-tunables"], {"GLIBC_TUNABLES": value}, deadline_in(5.0),
                       what=f"{loader} --list-tunables")
    if answer.exit_code != 0:
        return ()
    held: dict[str, str] = {}
    for line in answer.stdout.splitlines():
        name, colon, rest = line.partition(":")
        if colon and name.startswith("glibc.") and " " not in name:
            held[name] = rest.split("(")[0].strip()
    if not held:
        return ()
    out = []
    for entry in value.split(":")[:32]:
        name, equals, wanted = entry.partition("=")
        if not name:
            continue
        if name not in held:
            out.append((name, wanted, "", "unknown"))
        elif equals and not _same_number(wanted, held[name]) and held[name]:
            out.append((name, wanted, held[name], "refused"))
        else:
            out.append((name, wanted, held[name], "taken"))
    return tuple(out)


def _same_number(wanted: str, held: str) -> bool:
    """Whether glibc holds WANTED: both read as C's strtoul reads them (0x hexadecimal, a leading 0 octal)."""
    def number(text: str) -> int | None:
        text = text.strip().lower()
        try:
            return int(text, 16) if text.startswith("0x") else int(text, 8) if len(text) > 1 and text.startswith("0") \
                else int(text)
        except ValueError:
            return None

    a, b = number(wanted), number(held)
    return a is not None and a == b if b is not None else wanted.strip() == held.strip()
