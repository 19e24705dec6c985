"""What cuDNN's files are called and what they say about themselves: the one place both `check`'s
probes and `install` read it from.

- The main library: `libcudnn.so.N` (the soname the loader asks for), `cudnn64_N.dll`, `libcudnn.N.dylib`;
  an archive also holds the fully versioned file (`libcudnn.so.9.19.0`). N is cuDNN's major.
- The version the headers declare: `#define CUDNN_MAJOR/MINOR/PATCHLEVEL` in `cudnn_version.h`
  (cuDNN 8 and later) or `cudnn.h` (7 and older).
"""

from __future__ import annotations

import re

# the names the dynamic loader asks for (a copy on a machine is found by these)
SONAME = re.compile(r"^(?:libcudnn\.so\.(\d{1,4})|cudnn64_(\d{1,4})\.dll|libcudnn\.(\d{1,4})\.dylib)$")
# any name of the main library, fully versioned ones included (an archive's members): the text, compiled by the re
# module's own cache where install reads an archive (compiled here it was 1 ms of every check, which never uses it)
ANY_NAME = (r"^(?:libcudnn\.so\.(\d{1,4})(?:\.\d{1,4}){0,3}|cudnn64_(\d{1,4})\.dll|"
            r"libcudnn\.(\d{1,4})(?:\.\d{1,4}){0,3}\.dylib)$")
HEADER_DEFINE = re.compile(r"#define\s+CUDNN_(MAJOR|MINOR|PATCHLEVEL)\s+(\d{1,9})\b")


def library_file(name: str, major: int | None, os_name: str = "linux") -> str:
    """The file a program asks for, of cuDNN's library NAME (libcudnn, libcudnn_ops, ...) of MAJOR:
    libcudnn_ops.so.9 on Linux, cudnn_ops64_9.dll on Windows, libcudnn_ops.9.dylib on macOS."""
    if os_name == "windows":
        return f"{name.removeprefix('lib')}64_{major}.dll"
    if os_name == "macos":
        return f"{name}.{major}.dylib"
    return f"{name}.so.{major}"


def major_of(file_name: str, pattern: re.Pattern[str] | str = SONAME) -> int | None:
    """cuDNN's major from the main library's FILE_NAME (a base name), or None for any other file."""
    match = re.match(pattern, file_name)
    return int(next(group for group in match.groups() if group)) if match else None


def header_version(text: str | bytes) -> str | None:
    """The version a cudnn_version.h (or a cuDNN <= 7 cudnn.h) declares, "9.19.0"; None if none."""
    if isinstance(text, bytes):
        text = text.decode("latin-1")
    parts = dict(HEADER_DEFINE.findall(text))
    if "MAJOR" not in parts:
        return None
    return f"{int(parts['MAJOR'])}.{int(parts.get('MINOR', '0'))}.{int(parts.get('PATCHLEVEL', '0'))}"
