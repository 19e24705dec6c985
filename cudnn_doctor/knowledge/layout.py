"""Where cuDNN's files go on each platform: one table, read by everything else.

An archive's files fall into categories (headers, shared libraries, DLLs, import
libraries); a platform's Layout says which prefix folder each category goes to and
which files in those folders are older cuDNN copies that an install replaces.
"""

from __future__ import annotations

import re
from dataclasses import field

from cudnn_doctor.records import record

INCLUDE, LIB, BIN, IMPLIB = "include", "lib", "bin", "implib"


@record(frozen=True)
class Layout:
    """Where an OS keeps cuDNN's files under a prefix."""

    platform: str  # NVIDIA's name: linux-x86_64, linux-sbsa, windows-x86_64, ...
    os_name: str  # linux | windows | macos
    arch: str  # the ELF machine its libraries must have (x86_64, aarch64, ...)
    folders: dict[str, str]  # category -> folder under the prefix ("/"-separated)
    library_folder: str  # the folder the loader must see (LD_LIBRARY_PATH / PATH)
    path_variable: str  # LD_LIBRARY_PATH | PATH | DYLD_LIBRARY_PATH
    # files of one major version of cuDNN, by category; "{major}" is filled in
    same_major: dict[str, str] = field(default_factory=dict)
    # files that only one cuDNN may own at a time (headers, import libraries)
    exclusive: dict[str, str] = field(default_factory=dict)
    # files of any cuDNN major (to tell which other majors stay beside the new one)
    any_major: dict[str, str] = field(default_factory=dict)
    plan_only: str | None = None  # why this platform can only be planned for, not installed

    def folder(self, category: str) -> str | None:
        return self.folders.get(category)

    def same_major_pattern(self, category: str, major: int) -> re.Pattern[str] | None:
        text = self.same_major.get(category)
        return re.compile(_known(text).replace("{major}", str(major))) if text else None

    def exclusive_pattern(self, category: str) -> re.Pattern[str] | None:
        text = self.exclusive.get(category)
        return re.compile(_known(text)) if text else None

    def any_major_pattern(self, category: str) -> re.Pattern[str] | None:
        text = self.any_major.get(category)
        return re.compile(_known(text)) if text else None


def known_names() -> dict[str, list[str]]:
    """The file names (without suffixes) that a cuDNN release installs, and nothing else: the main
    library and every generation's sub-libraries (compat/cudnn.toml, each row with its source),
    and the headers named after them as NVIDIA ships them (cudnn.h, cudnn_version.h,
    cudnn_backend.h, cudnn_ops.h, ... and their _vN copies: read off the nvidia-cudnn-cu12
    8.9.7.29 and nvidia-cudnn-cu13 9.19.0.56 wheels). A user's libcudnn_myplugin.so.9 or
    cudnn-frontend's cudnn_frontend.h are not among them, so no install ever removes them."""
    from cudnn_doctor.knowledge.data import sublibrary_names

    subs = sorted({name for names in sublibrary_names().values() for name in names})
    libs = ["libcudnn", *subs]
    return {"libs": libs, "dlls": [n.removeprefix("lib") for n in libs],
            "headers": ["cudnn", "cudnn_version", "cudnn_backend", *(n.removeprefix("lib") for n in subs)]}


def _known(text: str) -> str:
    for key, names in known_names().items():
        text = text.replace("{" + key + "}", "|".join(re.escape(n) for n in sorted(names, key=len, reverse=True)))
    return text


_LINUX_SAME_MAJOR = {LIB: r"^(?:{libs})\.so\.{major}(\.\d+)*$"}
_LINUX_ANY_MAJOR = {LIB: r"^(?:{libs})\.so\.(\d+)$"}
_HEADERS = {INCLUDE: r"^(?:{headers})(?:_v\d+)?\.h$"}


def _linux(platform: str, arch: str, lib_folder: str) -> Layout:
    return Layout(platform=platform, os_name="linux", arch=arch,
                  folders={INCLUDE: "include", LIB: lib_folder}, library_folder=lib_folder,
                  path_variable="LD_LIBRARY_PATH", same_major=_LINUX_SAME_MAJOR, exclusive=_HEADERS,
                  any_major=_LINUX_ANY_MAJOR)


MACOS_NOTE = ("NVIDIA's last cuDNN for macOS was 7.6.5, for CUDA 10.2 (2019); there is nothing newer to "
              "install, so this is a plan only")

LAYOUTS: dict[str, Layout] = {
    "linux-x86_64": _linux("linux-x86_64", "x86_64", "lib64"),
    "linux-sbsa": _linux("linux-sbsa", "aarch64", "lib"),  # NVIDIA's sbsa archives ship lib/
    "linux-aarch64": _linux("linux-aarch64", "aarch64", "lib"),  # Jetson
    "linux-ppc64le": _linux("linux-ppc64le", "ppc64le", "lib64"),
    "windows-x86_64": Layout(
        platform="windows-x86_64", os_name="windows", arch="x86_64",
        folders={INCLUDE: "include", BIN: "bin", IMPLIB: "lib/x64"}, library_folder="bin", path_variable="PATH",
        same_major={BIN: r"^(?:{dlls})64_{major}\.dll$"},
        exclusive={**_HEADERS, IMPLIB: r"^(?:{dlls})\.lib$"},
        any_major={BIN: r"^(?:{dlls})64_(\d+)\.dll$"}),
    "macos-x86_64": Layout(
        platform="macos-x86_64", os_name="macos", arch="x86_64",
        folders={INCLUDE: "include", LIB: "lib"}, library_folder="lib", path_variable="DYLD_LIBRARY_PATH",
        same_major={LIB: r"^(?:{libs})\.{major}(\.\d+)*\.dylib$"}, exclusive=_HEADERS,
        any_major={LIB: r"^(?:{libs})\.(\d+)\.dylib$"}, plan_only=MACOS_NOTE),
}

# (os, machine) -> platform; macOS on Apple silicon plans like Intel macOS (there is no cuDNN for it either)
PLATFORM_OF_HOST = {
    ("linux", "x86_64"): "linux-x86_64",
    ("linux", "aarch64"): "linux-sbsa",
    ("linux", "ppc64le"): "linux-ppc64le",
    ("windows", "x86_64"): "windows-x86_64",
    ("macos", "x86_64"): "macos-x86_64",
    ("macos", "aarch64"): "macos-x86_64",
}
OS_NAMES = ("linux", "windows", "macos")


def layout_for(os_name: str, arch: str) -> Layout | None:
    """The Layout for OS_NAME on ARCH, or None where NVIDIA never shipped cuDNN."""
    platform = PLATFORM_OF_HOST.get((os_name, arch)) or PLATFORM_OF_HOST.get((os_name, "x86_64"))
    return LAYOUTS.get(platform) if platform else None
