"""Events in their own fixed words (compat/errors.toml): Xid numbers, a GPU fallen off the bus, PCIe errors,
watchdog resets, a PTX ISA newer than the ptxas reading it, an unsupported host compiler."""

from __future__ import annotations

import functools
import itertools
import re
from typing import Any

from cudnn_doctor.explain.facts import Event
from cudnn_doctor.explain.message_text import PER_LINE
from cudnn_doctor.knowledge.data import load

# -------------------------------------------------------------------- events in their own words (issue 21)


@functools.cache
def _xid_table() -> dict[int, dict[str, Any]]:
    return {int(row["number"]): row for row in load("errors").get("xid", [])}


@functools.cache
def _event_table() -> tuple[dict[str, Any], ...]:
    return tuple(load("errors").get("event", []))


@functools.cache
def ptx_isa_toolkits() -> dict[str, str]:
    """PTX ISA version -> the first CUDA toolkit whose ptxas knows it (compat/errors.toml [[ptx_isa]])."""
    return {row["version"]: row["cuda"] for row in load("errors").get("ptx_isa", [])}


def ptx_isa_source() -> str:
    rows = load("errors").get("ptx_isa", [])
    return str(rows[0]["source"]) if rows else "NVIDIA PTX ISA release notes"


XID_SOURCE = "NVIDIA Xid Errors catalog, https://docs.nvidia.com/deploy/xid-errors/"
# "NVRM: Xid (PCI:0000:3b:00): 79, ...", "Xid=999", "XID 149", "caused by previous Xid 145"
_XID = re.compile(r"(?i)\bxid\b[\s:=(]{0,3}(?:(?:pci:)?(?P<pci>[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}(?:\.[0-7])?)\)?[\s:]{0,3})?"
                  r"(?P<number>\d{1,3})\b")
_PCI = re.compile(r"(?i)\b(?:pci:)?([0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}(?:\.[0-7])?)\b")
# ptxas: "Unsupported .version 8.5; current version is '7.5'"
_PTX = re.compile(r"(?i)unsupported\s{1,3}\.version\s{1,3}(\d{1,2}\.\d{1,2})\s{0,3};\s{0,3}current\s{1,3}version\s{1,3}is\s{1,3}"
                  r"'?(\d{1,2}\.\d{1,2})")
# nvcc's host_config.h: "unsupported GNU version! gcc versions later than 12 are not supported!"
_HOST_COMPILER = re.compile(r"(?i)unsupported\s{1,3}(gnu|clang|microsoft visual studio|msvc)\s{1,3}version!?"
                            r"(?:[^!\n]{0,40}?versions?\s{1,3}(?:later|newer)\s{1,3}than\s{1,3}(\d{1,2}(?:\.\d{1,2})?))?")
# nvcc on Windows, where its host compiler is Visual Studio's cl.exe (nvcc's own check): "nvcc fatal : nvcc cannot find a
# supported version of Microsoft Visual Studio. Only the versions between 2017 and 2019 (inclusive) are supported!"
_HOST_VISUAL_STUDIO = re.compile(r"(?i)cannot\s{1,3}find\s{1,3}a\s{1,3}supported\s{1,3}version\s{1,3}of\s{1,3}microsoft\s{1,3}"
                                 r"visual\s{1,3}studio(?:[^!\n]{0,60}?between\s{1,3}(\d{4})\s{1,3}and\s{1,3}(\d{4}))?")


@functools.cache
def _missing_tool() -> tuple[dict[str, Any], re.Pattern[str] | None]:
    """compat/errors.toml [missing_tool] and one pattern for its tools said missing in any of the words it lists."""
    row = load("errors").get("missing_tool", {})
    if not row:
        return {}, None
    tools = "|".join(re.escape(tool) for tool in row["tools"])
    after = "|".join(re.escape(word) for word in row["after"])
    before = "|".join(re.escape(word) for word in row["before"])
    # the tool first, then (after a quote, a colon, or nothing) the words that say it is missing; or the words first,
    # then a path that ends in the tool
    pattern = re.compile(rf"(?<![\w.-])(?:{tools})(?:\.exe)?['\"]?(?:\[\])?\)?:?\s{{0,3}}(?:{after})"
                         rf"|(?:{before})[^\s'\"]{{0,200}}?(?<![a-z0-9.-])(?:{tools})(?:\.exe)?(?![\w-])")
    return row, pattern


# a tool's path whose folder holds a ':' (not a drive letter's): "/usr/local/cuda:/usr/local/cuda/bin/nvcc"
_LISTED_HOME = re.compile(r"['\"]((?:/[^\s'\":]{1,200})?:/[^\s'\"]{1,200}?)/bin/(?:nvcc|ptxas)['\"]")


# a CMake cache variable set to NOTFOUND: "CUDNN_LIBRARY-NOTFOUND", or "CUDA_cublas_LIBRARY (ADVANCED)" in CMake's list of
# the variables "set to NOTFOUND"
_NOTFOUND = re.compile(r"\b([a-z][a-z0-9_]{2,60})(?:-notfound\b| \(advanced\))")


def _cmake_notfound(index: int, lower: str) -> list[Event]:
    if "notfound" not in lower and "(advanced)" not in lower:
        return []
    for match in itertools.islice(_NOTFOUND.finditer(lower), PER_LINE):
        row = next((r for r in load("errors").get("cmake_notfound", []) if r["word"] in match.group(1)), None)
        if row is not None:
            return [Event("toolchain", row["code"], match.group(0), row["meaning"], row["fix"], row["source"], (), index)]
    return []


# a release as pip names what it takes, right after the package's name: its file ("nvidia-tensorrt-0.0.1.dev5.tar.gz",
# "x-1.0-py3-none-any.whl") or a pin ("x==0.0.1.dev5")
_RELEASE_AFTER = re.compile(r"(?:-|==)(\d[a-z0-9.+!]{0,40}?)(?:\.tar\.gz|\.zip|-py\d|-cp\d|(?=[\s,;)'\"]|$))")


@functools.cache
def _placeholders() -> dict[str, tuple[dict[str, Any], frozenset[str]]]:
    return {row["name"]: (row, frozenset(row["versions"])) for row in load("libraries").get("placeholder", [])}


def placeholders(index: int, lower: str) -> list[Event]:
    """pip taking a release that is a placeholder (compat/libraries.toml [[placeholder]]): its file or its pin, read
    right after each place the line names the package (linear in the line)."""
    table = _placeholders()
    for name, (row, versions) in table.items():
        at = lower.find(name)
        while at >= 0:
            end = at + len(name)
            before = lower[at - 1] if at else " "
            release = _RELEASE_AFTER.match(lower, end) if not (before.isalnum() or before in "-_.") else None
            if release is not None and release.group(1) in versions:
                version = release.group(1)
                return [Event("placeholder", "CD522", f"{name} {version}", f"{name} {version} on PyPI is a placeholder, "
                              "not the software: its setup fails on purpose; the real wheels are on NVIDIA's index, and "
                              "pip took this release because that index was not given or has no wheel for this Python or "
                              "platform", f"Install {name} from NVIDIA's index: `pip install --extra-index-url "
                              f"{row['index']} {name}` (or `pip install nvidia-pyindex` first); if pip still takes the "
                              "placeholder, no wheel there fits this Python version or platform: use one the package's "
                              "release notes list.", row["source"], (("package", name), ("version", version)), index)]
            at = lower.find(name, end)
    return []


# a compiler's words for an include file it did not find: gcc/nvcc, MSVC, clang; CMake's
_MISSING_INCLUDE = re.compile(r"fatal error:? ?([\w./+-]{3,120}\.(?:h|hpp|cuh)): no such file or directory"
                              r"|cannot open include file: '([\w./+-]{3,120}\.(?:h|hpp|cuh))'"
                              r"|'([\w./+-]{3,120}\.(?:h|hpp|cuh))' file not found"
                              # CMake's FindCUDAToolkit: "Unable to find cublas_v2.h in either "/usr/local/cuda/include" ..."
                              r"|unable to find ([\w./+-]{3,120}\.(?:h|hpp|cuh)) in "
                              # the EDG front end of nvcc (cicc) and NVRTC: 'catastrophic error: cannot open source file
                              # "cuda_runtime.h"' (CuPy's and other runtime compilers' kernels, compiled with NVRTC)
                              r"|cannot open source file [\"<']([\w./+-]{3,120}\.(?:h|hpp|cuh))[\">']"
                              # the same in other languages' words before the header ("找不到<cudnn_graph.h>": not found)
                              r"|(?:找不到|无法打开|見つかりません)\s{0,2}[\"<'“「]?([\w./+-]{3,120}\.(?:h|hpp|cuh))")


def missing_headers(index: int, lower: str) -> list[Event]:
    """A header of the CUDA toolkit (compat/errors.toml [toolkit_headers]) a compiler says it did not find."""
    if "include" not in lower and "no such file" not in lower and "file not found" not in lower \
            and "unable to find" not in lower and "cannot open source file" not in lower \
            and not any(word in lower for word in ("找不到", "无法打开", "見つかりません")):
        return []
    found = _MISSING_INCLUDE.search(lower)
    if found is None:
        return []
    header = next(group for group in found.groups() if group).replace("\\", "/")
    # the toolkit's (and cuDNN's) headers are included by their own name, or under its own folders (thrust/, cub/); a
    # project's "mylib/cuda.h" is the project's
    tables = (load("errors").get(name) for name in ("toolkit_headers", "cudnn_headers", "nccl_headers"))
    row = next((row for row in tables
                if row and (header in row["headers"] or header.startswith(tuple(row["folders"])))), None)
    if row is None:
        return []
    owner = row.get("owner") or ("cuDNN" if row["code"].startswith("CD3") else "the CUDA toolkit")
    return [Event("toolchain", row["code"], found.group(0), f"{header} is a header of {owner}: {row['meaning']}",
                  row["fix"], row["source"], (("header", header),), index)]


def registered_devices(index: int, lowers: list[str]) -> list[Event]:
    """TensorFlow's op placement error with only the CPU device registered while the op lists GPU kernels
    (compat/errors.toml [registered_devices])."""
    row = load("errors").get("registered_devices")
    if not row or row["devices"] not in lowers[index]:
        return []
    window = lowers[index:index + int(row["window"])]
    if not any(row["kernels"] in line for line in window):
        return []
    return [Event("no-gpu-device", row["code"], "Registered devices: [CPU]", row["meaning"], row["fix"],
                  row["source"], (), index)]


def toolkit_variables(index: int, lower: str) -> list[Event]:
    """A program's words that it found no CUDA toolkit, on a line that names a variable for one (compat/errors.toml
    [toolkit_variable]: "Failed to auto-detect CUDA root directory. Please specify `CUDA_PATH`")."""
    row = load("errors").get("toolkit_variable")
    if not row or "cuda" not in lower:
        return []
    variable = next((name for name in row["variables"] if name in lower), None)
    failure = next((word for word in row["failures"] if word in lower), None) if variable else None
    if failure is None or variable is None:
        return []
    return [Event("toolkit-variable", row["code"], f"{variable.upper() if '_' in variable else variable}: {failure}",
                  row["meaning"], row["fix"], row["source"], (), index)]


def events(index: int, line: str, lower: str) -> list[Event]:
    out: list[Event] = _cmake_notfound(index, lower)
    tool, missing = _missing_tool()
    if missing is not None and (found := missing.search(lower)) is not None:
        code, meaning, fix = tool["code"], tool["meaning"], tool["fix"]
        values: tuple[tuple[str, str], ...] = ()
        listed = _LISTED_HOME.search(line)
        if listed is not None:  # a toolkit variable written as a list: the tool's path joins its folders with ':'
            home = next(part for part in listed.group(1).split(":") if part)
            meaning = (f"the build ran {listed.group(0).strip(chr(39) + chr(34))}, a path made from a toolkit variable "
                       f"(CUDA_HOME) that holds folders joined by ':' as PATH is written; it names no folder, so "
                       f"there is no nvcc there")
            fix = (f"Set the variable to one toolkit folder (`export CUDA_HOME={home}`; look for the line that "
                   "appends to it in ~/.bashrc or the environment file), then build again.")
            code, values = "CD204", (("cuda_home", listed.group(1)),)  # the variable points nowhere
        out.append(Event("toolchain", code, found.group(0), meaning, fix, tool["source"], values, index))
    pci = _PCI.search(line)
    where = (("pci", pci.group(1)),) if pci else ()
    if "xid" in lower:
        for match in itertools.islice(_XID.finditer(line), PER_LINE):
            number = int(match.group("number"))
            row = _xid_table().get(number)
            if row is not None and row.get("application"):
                continue  # the application's own error stopped its context (NVIDIA's catalog): no fault of the stack alone
            at = (("pci", match.group("pci")),) if match.group("pci") else where
            if row is None:
                out.append(Event("xid", "CD142", f"Xid {number}", f"Xid {number}, a number NVIDIA's Xid catalog does not "
                                 "list (a monitoring tool's own marker for an unknown or critical error)",
                                 "Look up the Xid events in the kernel log (`sudo dmesg | grep -i xid`) in NVIDIA's Xid "
                                 "catalog (https://docs.nvidia.com/deploy/xid-errors/); reset the GPU or reboot if it "
                                 "stays unhealthy.", XID_SOURCE, (("xid", str(number)),) + at, index))
                continue
            out.append(Event("xid", row["code"], f"Xid {number} ({row['name']})", row["meaning"], row["action"] + ".",
                             row["source"], (("xid", str(number)), ("xid_name", row["name"])) + at, index))
    for row in _event_table():
        if row["text"] in lower and (not row.get("any") or any(word in lower for word in row["any"])) \
                and (not row.get("also") or any(word in lower for word in row["also"])):
            # the line's own words where the row says which (with the message's values: "CUDA 9.1.props")
            shown = re.search(row["shown"], line, re.IGNORECASE) if row.get("shown") else None
            out.append(Event(row["kind"], row["code"], shown.group(0) if shown else row["text"], row["meaning"],
                             row["fix"], row["source"], where, index))
    if ".version" in lower:
        for match in itertools.islice(_PTX.finditer(line), 2):
            out.append(_ptx_event(index, lower, match.group(1), match.group(2)))
    if "unsupported" in lower and "version" in lower:
        host = _HOST_COMPILER.search(line)
        if host is not None:
            out.append(_host_compiler_event(index, host.group(1), host.group(2)))
    if "visual studio" in lower and "supported version" in lower:
        studio = _HOST_VISUAL_STUDIO.search(line)
        if studio is not None:
            out.append(_visual_studio_event(index, studio.group(1), studio.group(2)))
    return out


def _ptx_event(index: int, lower: str, ptx: str, known: str) -> Event:
    needs = ptx_isa_toolkits().get(ptx)
    has = ptx_isa_toolkits().get(known)
    values = (("ptx_isa", ptx), ("known_isa", known)) + ((("needs_cuda", needs),) if needs else ()) \
        + ((("has_cuda", has),) if has else ())
    needs_text = f" (CUDA {needs} or newer)" if needs else ""
    has_text = f", that of CUDA {has}" if has else ""
    if "ptx input" in lower:  # "ptxas application ptx input": the driver's JIT compiler, not a toolkit's ptxas
        return Event("ptx", "CD103", f"PTX ISA {ptx}, driver JIT knows {known}",
                     f"the driver's PTX JIT knows PTX ISA up to {known}{has_text}, older than the PTX ISA {ptx}{needs_text} "
                     "the program was built with: the driver is older than the CUDA that compiled the code",
                     f"Update the NVIDIA driver to one that supports CUDA {needs or 'of the PTX'} or newer (`nvidia-smi` "
                     "shows the CUDA version the driver supports), or use a build of the program compiled with a CUDA "
                     "the driver supports.", ptx_isa_source(), values, index)
    return Event("ptx", "CD207", f"PTX ISA {ptx}, ptxas knows {known}",
                 f"this ptxas knows PTX ISA up to {known}{has_text}; the PTX it was given is ISA {ptx}, written by a "
                 f"newer compiler{needs_text}", f"Use a ptxas from CUDA {needs or 'as new as the PTX'} or newer: put "
                 "that toolkit's bin/ first on PATH (or `pip install nvidia-cuda-nvcc-cu12` where the framework looks "
                 "for it), or have the compiler that writes the PTX target an older ISA; `ptxas --version` shows "
                 "which one runs.", ptx_isa_source(), values, index)


HOST_COMPILER_SOURCE = ("NVIDIA CUDA toolkit include/crt/host_config.h ('#error -- unsupported GNU version! gcc versions "
                        "later than N are not supported!'); CUDA Installation Guide for Linux, host compiler support "
                        "https://docs.nvidia.com/cuda/cuda-installation-guide-linux/#host-compiler-support-policy")


def _visual_studio_event(index: int, oldest: str | None, newest: str | None) -> Event:
    """nvcc on Windows found no Visual Studio of the range its release supports (OLDEST to NEWEST where it says)."""
    span = f"Visual Studio {oldest} to {newest}" if oldest and newest else "the Visual Studio versions it lists"
    values = (("host_compiler", "Visual Studio"),) + ((("oldest", oldest), ("newest", newest)) if oldest and newest else ())
    return Event("host-compiler", "CD209", "no supported Microsoft Visual Studio",
                 f"nvcc refuses the host compiler: this CUDA toolkit supports {span} only, and it found none of them "
                 "(the installed one is older or newer, or not the one selected)",
                 f"Install {span} (or its Build Tools, with 'Desktop development with C++') and build from its x64 Native "
                 "Tools prompt (MATLAB: select it with `mex -setup C++`), or install a CUDA toolkit that supports the "
                 "Visual Studio you have. `-allow-unsupported-compiler` skips the check at your own risk.",
                 HOST_COMPILER_SOURCE + "; nvcc's own check on Windows ('nvcc cannot find a supported version of Microsoft "
                 "Visual Studio. Only the versions between 2017 and 2019 (inclusive) are supported!'); CUDA Installation "
                 "Guide for Microsoft Windows, supported compilers https://docs.nvidia.com/cuda/cuda-installation-guide-"
                 "microsoft-windows/", values, index)


def _host_compiler_event(index: int, compiler: str, newest: str | None) -> Event:
    name = {"gnu": "gcc", "clang": "clang"}.get(compiler.lower(), "Visual Studio")
    limit = f" newer than {name} {newest}" if newest else ""
    values = (("host_compiler", name),) + ((("newest", newest),) if newest else ())
    use = f"{name} {newest}" if newest else f"a {name} it supports"
    return Event("host-compiler", "CD209", f"unsupported {compiler} version",
                 f"nvcc refuses the host compiler: this CUDA toolkit does not support {name}{limit}",
                 f"Build with {use}: install it beside the newer one and pass it to nvcc (`-ccbin g++-{newest}` for gcc, "
                 f"CC/CXX or CUDAHOSTCXX=/usr/bin/g++-{newest} for CMake and PyTorch extensions), or install a newer CUDA "
                 "toolkit that supports this compiler. `-allow-unsupported-compiler` skips the check at your own risk."
                 if name == "gcc" and newest else
                 f"Build with {use} (CUDAHOSTCXX for CMake, -ccbin for nvcc), or install a newer CUDA toolkit that "
                 "supports this compiler.", HOST_COMPILER_SOURCE, values, index)


# ------------------------------------------------------------------ kernel modules (issue 41, round nine)

# a module's name in the module loader's and DKMS's own words (lower case)
_MODULE_NAMED = re.compile(
    r"could not insert (?:module )?'?(?P<a>[a-z0-9_.+-]{2,60}?)(?:\.ko)?'?(?::|\s|$)"
    r"|\bmodule (?P<b>[a-z0-9_+-]{2,60}) not found"
    r"|^(?:\[[^\]\n]{0,40}\]\s{0,3})?(?P<c>[a-z0-9_-]{2,40}): (?:unknown symbol|disagrees about version of symbol)"
    r"|/var/lib/dkms/(?P<d>[a-z0-9_.+-]{2,60})/"
    r"|for module (?P<e>[a-z0-9_.+-]{2,60})/\d"
    r"|\bdkms (?:install|build|add|autoinstall)\b[^\n]{0,80}?\s(?P<f>[a-z][a-z0-9_.+-]{1,60})/\d"
    r"|\bfailed for (?P<g>[a-z0-9_.+-]{2,60})\(\d{1,3}\)"
    r"|error processing package (?P<h>[a-z0-9_.+-]{2,80}?-dkms)\b"
    r"|(?P<i>[a-z0-9_.+-]{2,80}?-dkms) package post-installation"
    r"|\bdkms module '(?P<j>[a-z0-9_.+-]{2,60})'"
    # the kernel's own build refusing a module that uses what its licence may not (Linux scripts/mod/modpost.c:
    # "GPL-incompatible module %s.ko uses GPL-only symbol '%s'"): a driver release older than the kernel's symbols
    r"|\bmodule (?P<k>[a-z0-9_-]{2,60})\.ko uses gpl-only symbol"
    # a module loader's words outside kmod: Go's and Talos' "load nvidia failed: key was rejected by service", the NVIDIA
    # installer's "Unable to load the kernel module 'nvidia.ko'"
    r"|\bload (?P<loader>[a-z][a-z0-9_-]{1,40}) failed\b"
    r"|\bunable to load the kernel module '(?P<installer>[a-z][a-z0-9_-]{1,40})(?:\.ko)?'"
    # DKMS's progress line as xbps/Void and other distributions' hooks print it: "Building DKMS module: nvidia-570.133.07...
    # FAILED!" (the module's name, then its version)
    r"|\bbuilding dkms module:? (?P<l>[a-z][a-z0-9_+]{1,40}(?:-[a-z][a-z0-9_+]{0,20}){0,3})-\d"
    # RPM Fusion's akmods (Fedora, RHEL), which builds a kmod package per kernel (rpmfusion/akmods@d918f33:akmods:
    # "Building and installing ${kmodname}-kmod", "Building rpms failed; see /var/cache/akmods/${kmodname}/...failed.log",
    # "Ignoring ${kmodname}-kmod as it failed earlier", the source package /usr/src/akmods/${kmodname}-kmod.latest)
    r"|\bbuilding and installing (?P<m>[a-z0-9_.+-]{2,60}?)-kmod\b"
    r"|/var/cache/akmods/(?P<n>[a-z0-9_.+-]{2,60})/"
    r"|\bignoring (?P<o>[a-z0-9_.+-]{2,60}?)-kmod as it failed"
    r"|/usr/src/akmods/(?P<p>[a-z0-9_.+-]{2,60}?)-kmod\.latest")


@functools.cache
def _module_tables() -> tuple[dict[str, Any], tuple[dict[str, Any], ...]]:
    errors = load("errors")
    return errors.get("module_words", {}), tuple(errors.get("kernel_module", []))


def module_row(name: str) -> dict[str, Any] | None:
    """The [[kernel_module]] row of a module or DKMS package NAME (exact names first, then prefixes), or None: a
    module that is not NVIDIA's."""
    plain = name.strip("'\"").removesuffix(".ko").replace("_", "-").removesuffix("-dkms")
    _, rows = _module_tables()
    exact = next((row for row in rows if plain in row.get("names", ())), None)
    return exact or next((row for row in rows if any(plain.startswith(p) for p in row.get("prefixes", ()))), None)


def kernel_modules(index: int, lowers: list[str]) -> list[Event]:
    """An NVIDIA kernel module that could not be built or loaded, named on line INDEX in the module loader's or
    DKMS's words, with a failure word on that line or within [module_words] window lines of it."""
    lower = lowers[index]
    if not any(word in lower for word in ("insert", "module", "dkms", "symbol", "akmods", "-kmod")):
        return []
    words, _ = _module_tables()
    if not words:
        return []
    window = int(words.get("window", 4))
    for match in itertools.islice(_MODULE_NAMED.finditer(lower), 4):
        name = next(value for value in match.groupdict().values() if value)
        row = module_row(name)
        if row is None:
            continue
        near = lowers[max(0, index - window):index + window + 1]
        if not any(word in line for line in near for word in words["failures"]):
            continue
        module = name.strip("'\"").removesuffix(".ko").removesuffix("-dkms")
        return [Event("module", row["code"], match.group(0).replace("'", "").replace('"', "").strip().rstrip(": "), row["meaning"].replace("{module}", module),
                      row["fix"], f"{row['source']}; {words['source']}", (("module", module),), index)]
    return []


# ------------------------------------------------- NVIDIA's host components (issue 41, round nine)

@functools.cache
def _component_tables() -> tuple[tuple[str, ...], tuple[dict[str, Any], ...], tuple[str, ...]]:
    errors = load("errors")
    words = errors.get("component_words", {})
    return tuple(words.get("failures", ())), tuple(errors.get("component", [])), tuple(words.get("others", ()))


_DRIVER_RELEASE = re.compile(r"(?<![\d.])\d{3}\.\d{2,3}(?:\.\d{2,3})?(?!\.?\d)")


def components(index: int, lowers: list[str]) -> list[Event]:
    """An NVIDIA host component (compat/errors.toml [[component]]) named on line INDEX (or within its row's window
    above) that the line, or the next one, says failed."""
    failures, rows, others = _component_tables()
    lower = lowers[index]
    wrapped = lower + " " + lowers[index + 1] if index + 1 < len(lowers) else lower
    if not any(word in wrapped for word in failures) or any(word in lower for word in others):
        return []
    for row in rows:
        window = int(row.get("window", 0))
        near = lowers[max(0, index - window):index + 1]
        # a name counts as a word of its own: "vgpu" inside "cutlass.cute.nvgpu" (CUTLASS's module) is not the vGPU
        name = next((n for n in row["names"] for line in near if n in line and _word_in(n, line)), None)
        if name is None:
            continue
        # the driver releases the line names (the Fabric Manager's and the driver's) reach the answer
        releases = list(dict.fromkeys(itertools.islice(_DRIVER_RELEASE.findall(wrapped), 4)))
        meaning = row["meaning"] + (f"; the message names driver release{'s' if len(releases) > 1 else ''} "
                                    f"{' and '.join(releases)}" if releases else "")
        values = (("component", row["id"]),) + ((("driver_version", releases[-1]),) if releases else ())
        return [Event("component", row["code"], name.strip(), meaning, row["fix"], row["source"], values, index)]
    return []


def _word_in(name: str, line: str) -> bool:
    """Is NAME in LINE with no letter or digit right before or after it?"""
    at = line.find(name)
    while at >= 0:
        before = line[at - 1:at]
        after = line[at + len(name):at + len(name) + 1]
        if not (before.isalnum() or after.isalnum()):
            return True
        at = line.find(name, at + 1)
    return False


# ------------------------------------------------ a framework's own CUDA extension (issue 41, round nine)

_EXT_WORD = re.compile(r"[a-z_][a-z0-9_.]{0,60}")
_EXT_CLAUSE = re.compile(r"[;:!?]\s|\.\s|\n")
_NO_MODULE = re.compile(r"no module named '?([a-z0-9_.]{2,80})'?")
# the endings of a compiled module's own name (not a setting's: "use_gpu not available" is a program's option)
MODULE_ENDINGS = ("_kernels", "_cuda", "_cudnn", "_cuda_ext")
_MARKED_ABSENT = re.compile(r"(?<![\w.])([a-z0-9_]{2,60}) (?:is |are |was |were )?not (?:installed|built|compiled|available|found)\b")


def extensions(index: int, lower: str) -> list[Event]:
    """A framework's or library's own CUDA extension said absent (compat/libraries.toml [extension_words]): a GPU word
    right before an extension noun with an absence word in the clause, or an extension's module Python cannot
    import."""
    words = load("libraries").get("extension_words")
    if not words:
        return []
    found = None
    # a compiled module of the package's own, named by its mark ("exllama_kernels not installed", AutoGPTQ's words for
    # its CUDA kernels' module), said absent: the GPU word is in the module's name
    if any(mark in lower for mark in words["module_marks"]):
        found = next((m.group(0) for m in itertools.islice(_MARKED_ABSENT.finditer(lower), 8)
                      if m.group(1).endswith(MODULE_ENDINGS)), None)
    if found is None and not any(word in lower for word in words["gpu"]):
        return []
    named = _NO_MODULE.search(lower) if found is None else None
    if named and any(mark in named.group(1).rsplit(".", 1)[-1] for mark in words["module_marks"]):
        found = named.group(0)
    for clause in itertools.islice(_EXT_CLAUSE.split(lower, 16), 16) if found is None else ():
        if not any(absent in clause for absent in words["absent"]):
            continue
        tokens = list(itertools.islice(_EXT_WORD.findall(clause), 200))
        gap = int(words.get("gap", 2))
        hit = next((f"{token} {tokens[at + step]}" for at, token in enumerate(tokens) if token in words["gpu"]
                    for step in range(1, gap + 2) if at + step < len(tokens) and tokens[at + step] in words["nouns"]),
                   None)
        if hit is not None:
            found = hit
            break
    if found is None:
        return []
    return [Event("extension", "CD409", found, "the package's own compiled CUDA part (its extension, ops or kernels) is "
                  "not in the build installed: it was installed or built without it (a Python-only build, a wheel for "
                  "another CUDA or PyTorch, a CUDA compile that was skipped), so the code that needs it cannot run on "
                  "the GPU", words["fix"], words["source"], (), index)]


# ------------------------------------------------- a newer CUDA toolkit required (issue 41, round nine)

@functools.cache
def _requirement_pattern() -> tuple[re.Pattern[str] | None, str]:
    words = load("libraries").get("cuda_requirement")
    if not words:
        return None, ""

    def alternatives(key: str) -> str:
        return "|".join(re.escape(word) for word in sorted(words[key], key=len, reverse=True))

    # "only supported on CUDA 11.6 and above", "requires CUDA >= 11.8", "needs the CUDA toolkit 12.1 or newer"
    pattern = re.compile(rf"\b(?:{alternatives('verbs')})\s(?:{alternatives('subjects')})\s(?:version\s)?(?:>=\s?|v)?"
                         rf"(\d{{1,2}}\.\d{{1,2}})(?:\.\d{{1,3}})?(?:\s?(?:{alternatives('after')})|(?=\s|$|[.,;)]))"
                         # "CUDA >= 12.1 is required", "CUDA version >= 11.8 is needed"
                         rf"|\b(?:{alternatives('subjects')})\s?(?:version\s?)?>=\s?(\d{{1,2}}\.\d{{1,2}})(?:\.\d{{1,3}})?"
                         rf"\s(?:is|are)\s(?:required|needed)"
                         # "CUDA 12.8 or higher is required for compute capability 12.0." (vLLM's setup.py and its heirs)
                         rf"|\b(?:{alternatives('subjects')})\s(?:version\s)?(\d{{1,2}}\.\d{{1,2}})(?:\.\d{{1,3}})?\s?"
                         rf"(?:{alternatives('after')})\s(?:is|are)\s(?:required|needed)")
    return pattern, str(words["source"])


def requirements(index: int, lower: str) -> list[Event]:
    """A program's words that it needs a CUDA toolkit of at least a version (compat/libraries.toml [cuda_requirement])."""
    if "cuda" not in lower and "nvcc" not in lower or "driver" in lower:
        return []
    pattern, source = _requirement_pattern()
    found = pattern.search(lower) if pattern is not None else None
    if found is None:
        return []
    version = found.group(1) or found.group(2) or found.group(3)
    return [Event("requirement", "CD220", found.group(0).strip(), f"the program needs CUDA {version} or newer (its "
                  "toolkit: nvcc, the CUDA headers and libraries it builds or runs with) and found or was given an "
                  "older one", f"Install CUDA {version} or newer and point the build at it (CUDA_HOME, PATH for nvcc: "
                  "`nvcc --version` shows which runs), or use a release of the program that supports the CUDA you "
                  "have.", source, (("spec", f"CUDA {version} or newer"), ("needs_cuda", version)), index)]


# ------------------------------------------------- a package's own check of a GPU-stack package's release (e30)


@functools.cache
def _version_gates() -> tuple[tuple[re.Pattern[str], ...], re.Pattern[str] | None, str, str]:
    """compat/libraries.toml [version_gate]: its patterns, the GPU stack's package names, its source and fix."""
    from cudnn_doctor.knowledge.gpu_distributions import gpu_package_pattern

    table = load("libraries").get("version_gate")
    if not table:
        return (), None, "", ""
    # (ASCII: a version is written in the digits 0-9 by every program that checks one; '\d' of Python's re takes any
    # script's digits, '٢' among them, which int() and version_tuple() would read as another version or refuse)
    return (tuple(re.compile(pattern, re.ASCII) for pattern in table["patterns"]),
            re.compile(f"(?:{gpu_package_pattern()})"), str(table["source"]), str(table["fix"]))


def version_gates(index: int, line: str, lower: str) -> list[Event]:
    """A package's own check that a GPU-stack package is of a release it does not take ("MMCV==2.2.0 is used but
    incompatible", "... is not compatible with nunchaku 0.3.2", "Torch = 2.6.0+cu124 too new!")."""
    if "compatible" not in lower and " too " not in lower:
        return []
    patterns, gpu, source, fix = _version_gates()
    for pattern in patterns:
        found = pattern.search(lower)
        if found is None or gpu is None or not gpu.fullmatch(found.group("package")):
            continue
        # the whole sentence where the line is short (it names the package that checked), else the words read
        text = line.strip() if len(line.strip()) <= 200 else line[found.start():found.end()] if len(line) == len(lower) \
            else found.group(0)
        package, version = found.group("package"), found.group("version").rstrip(".")
        return [Event("version-gate", "CD410", text.strip(), f"a package checked {package} and refuses its release "
                      f"{version}: the two are not releases made for each other", fix, source,
                      (("package", package), ("version", version)), index)]
    return []


# ------------------------------------------------- a package of another release than its importer (e22, round sixteen)

_NAME_FROM = re.compile(r"cannot import name '?([a-z0-9_]{1,80})'? from '?([a-z0-9_]{2,60})((?:\.\s?[a-z0-9_]{1,60}){0,6})'?")
_SUBMODULE = re.compile(r"no module named '?([a-z0-9_]{2,60})\.\s?([a-z0-9_]{1,60}(?:\.[a-z0-9_]{1,60}){0,5})'?")
_IMPORTING = re.compile(r"dll load failed while importing ([a-z0-9_.]{1,80})\s{0,2}:")


def release_skews(index: int, line: str, lower: str) -> list[Event]:
    """A GPU-stack package of another release than the code that imports it (compat/libraries.toml [release_skew]):
    Python finds the package but not a name or submodule the importer expects, or Windows' loader finds a compiled
    extension module but not an entry point it imports (ERROR_PROC_NOT_FOUND)."""
    table = load("libraries").get("release_skew")
    if not table or ("import" not in lower and "module" not in lower):
        return []
    packages = frozenset(table["packages"])

    def written(match: re.Match[str], group: int = 0) -> str:  # as the message writes it (lower only finds it)
        return line[match.start(group):match.end(group)] if len(line) == len(lower) else match.group(group)

    found = None
    named = _NAME_FROM.search(lower)
    if named and named.group(2) in packages:
        module = written(named, 2) + written(named, 3).replace(" ", "") if named.group(3) else written(named, 2)
        found = (written(named), f"{module} is installed, but the name {written(named, 1)} is not in it")
    sub = _SUBMODULE.search(lower) if found is None else None
    if sub and sub.group(1) in packages:
        found = (written(sub), f"{written(sub, 1)} is installed, but the submodule {written(sub, 1)}."
                 f"{written(sub, 2)} is not in it")
    importing = _IMPORTING.search(lower) if found is None else None
    if importing and any(words in lower for words in table["entry_point"]):
        module = importing.group(1)
        if module.rsplit(".", 1)[-1].endswith(tuple(table["module_endings"])) or module.split(".")[0] in packages:
            found = (written(importing).rstrip(" :"), f"the compiled module {written(importing, 1)} is there, but "
                     "Windows finds no entry point it imports in the DLL it was linked against")
    if found is None:
        return []
    text, what = found
    return [Event("release-skew", "CD410", text, f"{what}: it is another release than the code that imports it was "
                  "built or written for", table["fix"], table["source"], (), index)]


# ------------------------------------------------- a build system's list of releases, and one outside it (e22)

_SUPPORTED = re.compile(r"the supported ([a-z]{3,10}) versions are \[([^\]\n]{0,3000})\]")
_ASKED = re.compile(r"\b([a-z]{3,10})(?: major)? version=(\d{1,3}(?:\.\d{1,4}){0,3})\b")


def supported_lists(index: int, lower: str) -> list[Event]:
    """A build system's list of the releases it can fetch and the release it was asked for outside it
    (compat/libraries.toml [supported_list]: XLA's hermetic CUDA rules)."""
    table = load("libraries").get("supported_list")
    listed = _SUPPORTED.search(lower) if table and "supported" in lower else None
    if table is None or listed is None:
        return []
    asked = [m for m in itertools.islice(_ASKED.finditer(lower, listed.end()), 4)]
    if not asked:
        return []
    part, version = asked[-1].group(1), asked[-1].group(2)
    releases = [r.strip(" '\"") for r in listed.group(2).split(",") if r.strip(" '\"")]
    code = table["codes"].get(part)
    if code is None or version in releases:
        return []
    shown = f"{releases[0]} … {releases[-1]}" if len(releases) > 2 else ", ".join(releases)
    name = {"cudnn": "cuDNN", "cuda": "CUDA"}.get(part, part.upper())
    fix = table["fix"].format(part=part.upper(), listed=shown, version=version)
    return [Event("supported-list", code, f"the supported {name} versions are [{shown}] … {name} version={version}",
                  f"the build fetches only the {name} releases it lists; {version} is not among them", fix,
                  table["source"], (("version", version), ("listed", shown)), index)]
