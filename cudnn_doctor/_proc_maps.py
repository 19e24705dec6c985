"""The one reader of /proc/self/maps: the files mapped into this process, each once, in the order of its first
mapping, with their names as the file system has them. The doctor's own process imports it (variables.mapped_here);
every child script loads it from this folder (_job_child.py imports it beside _child_stdio.py; _deep_child.py,
_python_child.py and _allreduce_child.py run it from its file, as they run _child_stdio.py). Standard library only,
old syntax: it runs under whatever Python the child does.

The kernel writes a newline in a mapped file's name as the four bytes \\012 (fs/proc/task_mmu.c show_map_vma:
seq_file_path(m, file, "\\n"), whose escape writes the octal form) and writes a backslash as it is, so \\012 in a line
is either a newline or those four bytes. The line's device and inode say which: the name whose file has them is the
one mapped; where none has them (an overlay's lower file, a file deleted since), the one that exists, else the
newline (the kernel's escape)."""

import itertools
import os

ESCAPED_NEWLINE = b"\\012"
MAX_READ = 1 << 24  # a process with every CUDA library mapped writes ~300 KB; more is not a process of ours
MAX_CHOICES = 8  # escapes in one name tried every way; beyond, each is a newline


def mapped_files():
    """Every file mapped into this process (str, bytes-safe: os.fsdecode), once each, in the order of its first
    mapping; [] where /proc/self/maps cannot be read (not Linux, a closed /proc)."""
    try:
        with open("/proc/self/maps", "rb") as maps:
            text = maps.read(MAX_READ)
    except OSError:
        return []
    found = {}
    for line in text.split(b"\n"):
        parts = line.split(None, 5)
        if len(parts) == 6 and parts[5].startswith(b"/"):
            path = parts[5] if ESCAPED_NEWLINE not in parts[5] else unescaped(parts[5], parts[3], parts[4])
            found.setdefault(os.fsdecode(path), None)
    return list(found)


def unescaped(raw, device=b"", inode=b""):
    """The name RAW (bytes, as a line of /proc/PID/maps writes it) stands for: each \\012 a newline or itself, chosen by
    the file whose DEVICE (major:minor, hex) and INODE are the line's, else by the file that exists."""
    places = []
    start = raw.find(ESCAPED_NEWLINE)
    while start >= 0 and len(places) < MAX_CHOICES:
        places.append(start)
        start = raw.find(ESCAPED_NEWLINE, start + len(ESCAPED_NEWLINE))
    every_newline = raw.replace(ESCAPED_NEWLINE, b"\n")
    if len(places) >= MAX_CHOICES:
        return every_newline
    wanted = _identity(device, inode)
    existing = []
    for choice in itertools.product((True, False), repeat=len(places)):
        name = _with(raw, places, choice)
        try:
            status = os.stat(name)
        except (OSError, ValueError):
            continue
        if wanted is not None and (os.major(status.st_dev), os.minor(status.st_dev), status.st_ino) == wanted:
            return name
        existing.append(name)
    return existing[0] if existing else every_newline


def _with(raw, places, choice):
    """RAW with the escape at each of PLACES a newline where CHOICE says so, else kept."""
    out, last = [], 0
    for index, place in enumerate(places):
        out.append(raw[last:place])
        out.append(b"\n" if choice[index] else ESCAPED_NEWLINE)
        last = place + len(ESCAPED_NEWLINE)
    out.append(raw[last:])
    return b"".join(out)


def _identity(device, inode):
    """(major, minor, inode) of a maps line's fields; None where they are not numbers."""
    major, _, minor = device.partition(b":")
    try:
        return int(major, 16), int(minor, 16), int(inode)
    except ValueError:
        return None
