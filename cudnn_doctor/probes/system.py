"""What a bug report needs beside the check (as PyTorch's collect_env gives it): the OS, the C library, the
Python, and the compilers on PATH with their versions. Plain facts, asked of the machine; nothing judged."""

from __future__ import annotations

import os
import platform
import re
import sys
from dataclasses import dataclass, field

from cudnn_doctor.operating_system import CURRENT, which

COMPILERS = ("gcc", "g++", "clang", "nvcc")


@dataclass(frozen=True)
class SystemFacts:
    os: str  # "Debian GNU/Linux 12 (bookworm)"
    kernel: str  # "Linux 6.1.0-18-amd64 x86_64"
    libc: str | None  # "glibc 2.36"
    python: str  # "3.11.7 (/usr/bin/python3)"
    compilers: dict[str, str | None] = field(default_factory=dict)  # name -> "12.2.0 (/usr/bin/gcc)" or None


def system_facts(env: dict[str, str] | None = None, nvcc: str | None = None) -> SystemFacts:
    """The facts of this machine; NVCC: the nvcc of the toolkit `check` picked, where PATH has none."""
    env = dict(os.environ if env is None else env)
    system, _node, machine = CURRENT.uname()  # not platform's: on Windows it asks WMI (100 ms; Wine crashes)
    return SystemFacts(os=_os_name(), kernel=f"{system} {CURRENT.system_release()} {machine}",
                       libc=_libc(), python=f"{platform.python_version()} ({sys.executable})",
                       compilers=_compilers(env, nvcc))


def _os_name() -> str:
    try:
        release = platform.freedesktop_os_release()
    except OSError:  # no /etc/os-release: not Linux
        system = CURRENT.uname()[0]
        return f"{system} {CURRENT.system_release()}" if system == "Windows" else platform.platform(terse=True)
    return release.get("PRETTY_NAME") or release.get("NAME") or platform.platform(terse=True)


def _libc() -> str | None:
    try:
        found = os.confstr("CS_GNU_LIBC_VERSION")  # "glibc 2.36"
    except (ValueError, OSError, AttributeError):
        found = None
    if found:
        return found
    name, version = platform.libc_ver()
    return f"{name} {version}" if name else None


def _compilers(env: dict[str, str], nvcc: str | None) -> dict[str, str | None]:
    """Each compiler's version, asked of it (`NAME --version`) through the child runner, side by side, read to the
    end as a build tool reads it (torch's cpp_extension: subprocess.check_output): what it did that such a build would
    meet (child.helper_trouble: it never ended, left a process holding its output, a signal ended it) said in its
    row, and stopped with the rest of what the compiler started."""
    from cudnn_doctor.child import helper_request, helper_timeout, helper_trouble, run_children

    found: dict[str, str | None] = {}
    paths: dict[str, str] = {}
    for name in COMPILERS:
        path = which(name, env.get("PATH")) or (nvcc if name == "nvcc" else None)
        found[name] = None
        if path:
            paths[name] = path
    seconds = helper_timeout()
    requests = [helper_request((path, "--version"), env, f"{name} --version", seconds) for name, path in paths.items()]
    for (name, path), answer in zip(paths.items(), run_children(requests), strict=True):
        said = f"{_version_of(answer.stdout) or 'version unreadable'} ({path})"
        trouble = helper_trouble(answer, seconds)
        if trouble is not None:
            said += f"; its --version {trouble}"
        found[name] = said
    return found


def _version_of(text: str) -> str | None:
    """The version in a compiler's --version banner ("gcc (Debian 12.2.0-14) 12.2.0", "release 13.0, V13.0.88")."""
    nvcc = re.search(r"release [\d.]+, V(\d+\.\d+\.\d+)", text)
    if nvcc:
        return nvcc.group(1)
    first = text.strip().splitlines()[0] if text.strip() else ""
    versions = re.findall(r"\b(\d+\.\d+(?:\.\d+)?)\b", first)
    return versions[-1] if versions else None
