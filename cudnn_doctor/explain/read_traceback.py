"""A failure's traceback read for what raised it (issue 45, check --deep): the frames a framework's error passed
through and the modules its Python imported from elsewhere than where the framework was installed. The cause is
the mechanism that raised, not the words alone: a plugin's failure raised through the framework's plugin loading
(compat/python_plugins.toml [[loader]]) is CD421 whatever the plugin said; a failure whose words or frames name a
module Python took from another copy than the installed one is CD419."""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Mapping, Sequence

from cudnn_doctor.explain.classify import Cause
from cudnn_doctor.knowledge.data import load

FRAME = re.compile(r'^[ \t]*File "([^"\n]+)", line (\d+), in (\S+)', re.MULTILINE)


def frames_in(text: str) -> list[str]:
    """The frames of a traceback pasted as Python prints it ('File "X", line N, in F'), as "X:N:F"."""
    return [f"{path}:{line}:{function}" for path, line, function in FRAME.findall(text)]


def _split(frame: str) -> tuple[str, str]:
    """(file, function) of a "file:line:function" frame (a file name may hold colons)."""
    parts = frame.rsplit(":", 2)
    return (parts[0], parts[2]) if len(parts) == 3 else (frame, "")


def plugin_loader(frames: Sequence[str]) -> tuple[dict[str, object], str] | None:
    """The [[loader]] row whose function the failure was raised through, and that frame."""
    rows = load("python_plugins").get("loader", [])
    for frame in reversed(list(frames)):
        path, function = _split(frame)
        for row in rows:
            if function == row.get("function") and path.replace(os.sep, "/").endswith("/" + str(row.get("file"))):
                return row, frame
    return None


def shadowing(words: str, frames: Sequence[str], elsewhere: Mapping[str, str]) -> tuple[str, str] | None:
    """(module, the file Python took it from) for a module imported from another copy than the installed one
    (ELSEWHERE: name -> file, as the failing Python said) that the failure's WORDS or FRAMES name: by its file or
    folder, or by its name as a word of the words."""
    files = [_split(frame)[0] for frame in frames]
    for name, origin in elsewhere.items():
        if not name or not origin:
            continue
        place = os.path.dirname(origin) if os.path.basename(origin).startswith("__init__.") else origin
        if place in words or any(path == origin or path.startswith(place.rstrip(os.sep) + os.sep) for path in files):
            return name, origin
        if re.search(r"(?<![\w.])" + re.escape(name) + r"(?![\w])", words):
            return name, origin
    return None


# "ImportError: /work/project/_ctypes.cpython-312-x86_64-linux-gnu.so: invalid ELF header": the file an extension
# module was imported from, as the import system names it where the loader refused it
_EXTENSION_FILE = re.compile(r"ImportError: (?P<path>/[^\n:]{0,400}/(?P<name>[A-Za-z_]\w{0,60})"
                             r"\.(?:cpython-\d{2,3}[^\s/:]{0,60}|abi3)\.so): ")


def standard_extension_elsewhere(words: str) -> tuple[str, str] | None:
    """(module, file) where WORDS say Python's own extension module (one of sys.stdlib_module_names: _ctypes, _ssl,
    math) was imported from a file outside the interpreter's lib-dynload: a copy in the working folder or on
    PYTHONPATH (a text file, another platform's build) came first on sys.path. Only names of the standard library and
    only files outside a lib-dynload folder: torch/_C's own refusal is not this."""
    for match in _EXTENSION_FILE.finditer(words[-20000:]):
        name, path = match.group("name"), match.group("path")
        if name in sys.stdlib_module_names and os.path.basename(os.path.dirname(path)) != "lib-dynload":
            return name, path
    return None


def mechanism(words: str, frames: Sequence[str], elsewhere: Mapping[str, str]) -> tuple[str, str] | None:
    """(code, why) where what raised the failure names its class: a plugin the framework loads at import (CD421), a
    module Python took from another copy than the installed one (CD419); None where the frames say nothing of it."""
    loader = plugin_loader(frames)
    if loader is not None:
        row, frame = loader
        return "CD421", (f"raised through {row['framework']}'s loading of its '{row['group']}' plugins "
                         f"({frame.rsplit(':', 2)[0]}, {row['function']})")
    shadow = shadowing(words, frames, elsewhere)
    if shadow is not None:
        name, origin = shadow
        return "CD419", f"{name} was imported from {origin}, not from the copy installed with the framework"
    standard = standard_extension_elsewhere(words)
    if standard is not None:
        name, origin = standard
        return "CD419", f"{name}, a module of Python's own library, was imported from {origin}, not from the interpreter's"
    raised = setting_raised(frames)
    if raised is not None:
        row, frame = raised
        return "CD411", (f"raised through {frame.rsplit(':', 2)[0]}, where {row['variable']}'s reader raises only "
                         f"with {row['raises_with']} on (otherwise it warns)")
    return None


def setting_raised(frames: Sequence[str]) -> tuple[dict[str, object], str] | None:
    """(the setting's row, the frame) where a failure was raised through a file that raises over a setting's path
    only under a switch (compat/process_env.toml raised_through: JAX's persistent cache with
    JAX_RAISE_PERSISTENT_CACHE_ERRORS); None where no frame is one of them."""
    for row in load("process_env").get("setting", []):
        ends = tuple("/" + str(end) for end in row.get("raised_through", ()))
        if not ends:
            continue
        for frame in reversed(frames):
            if _split(frame)[0].endswith(ends):
                return row, frame
    return None


def frame_causes(text: str) -> list[Cause]:
    """explain's door: the cause a pasted traceback's frames name by themselves (a plugin's failure, raised through
    the framework's plugin loading); another copy of a module needs the environment, which only check --deep has."""
    loader = plugin_loader(frames_in(text))
    if loader is None:
        return []
    row, frame = loader
    return [Cause("CD421", f"the traceback passes through {row['framework']}'s loading of its '{row['group']}' plugins "
                           f"({frame.rsplit(':', 2)[0]}, {row['function']}): a plugin it loads at import failed",
                  f"compat/python_plugins.toml: {row['source']}", {"group": str(row["group"])}, kind="frame")]
