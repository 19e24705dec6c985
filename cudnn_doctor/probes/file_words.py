"""Which names appear, as whole words, in the bytes of files (a jaxlib's libraries for XLA_FLAGS' names, torch's c10
for its allocator's keys, NCCL's library for its variables): each name one search of each mapped file, at the pace of
a plain search, bounded in file size, names and bytes scanned."""

from __future__ import annotations

import mmap
import os
import re
import stat

from cudnn_doctor.operating_system import CURRENT

# bounds on asking jaxlib's own files for the names of XLA_FLAGS: a real jaxlib's libraries are a few hundred MB each;
# a user's XLA_FLAGS names a few flags. Past them (a sparse file of 100 GiB named like one, 20,000 flags) the files
# say nothing, and the child that runs JAX with XLA_FLAGS (probes/xla_flags.py) still answers
MAX_FLAG_FILE_BYTES = 2 << 30
MAX_FLAG_NAMES = 64
MAX_FLAG_SCAN_BYTES = 8 << 30  # each name is one search of each file (memchr's pace, about 2 GB/s)
_IDENTIFIER_BYTE = re.compile(rb"[A-Za-z0-9_]")


def names_in(files: list[str], names: list[str]) -> set[str] | None:
    """Which NAMES appear, as whole words, in the bytes of FILES (mapped, not read into memory): each name looked for
    as bytes, at the pace of a plain search, a hit kept only where no letter, digit or underscore touches it. None
    where a file cannot be read, is not a regular file, or the search would pass the bounds above."""
    wanted = list(dict.fromkeys(names))
    if len(wanted) > MAX_FLAG_NAMES:
        return None
    found: set[str] = set()
    scanned = 0
    for path in files:
        try:
            descriptor = os.open(path, os.O_RDONLY | CURRENT.open_flags)
        except OSError:
            return None
        try:
            status = os.fstat(descriptor)
            size = status.st_size
            if not stat.S_ISREG(status.st_mode) or size > MAX_FLAG_FILE_BYTES:
                return None
            if size == 0:
                continue
            scanned += size * len([n for n in wanted if n not in found])
            if scanned > MAX_FLAG_SCAN_BYTES:
                return None
            with mmap.mmap(descriptor, 0, access=mmap.ACCESS_READ) as data:
                for name in wanted:
                    if name not in found and _whole_word_in(data, name.encode()):
                        found.add(name)
        except (OSError, ValueError):
            return None
        finally:
            os.close(descriptor)
    return found


def _whole_word_in(data: mmap.mmap, word: bytes) -> bool:
    """Whether WORD occurs in DATA with no letter, digit or underscore just before or after it."""
    start = 0
    while True:
        at = data.find(word, start)
        if at < 0:
            return False
        before = data[at - 1:at] if at else b""
        after = data[at + len(word):at + len(word) + 1]
        if not _IDENTIFIER_BYTE.match(before) and not _IDENTIFIER_BYTE.match(after):
            return True
        start = at + 1
