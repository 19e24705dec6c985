"""Find every CUDA toolkit on the machine and read its version.

Each way of finding one is a small function `(ctx) -> [(path, source)]`; the
search order is the tuple TOOLKIT_SEARCH_STEPS. Versions come from files first
(version.json, version.txt, the wheels' dist-info, libcudart's file name) and
only then from running nvcc; libcudart itself is asked in a child process.
"""

from __future__ import annotations

import glob
import os
import re
from collections.abc import Callable

from cudnn_doctor import json_values
from cudnn_doctor.model import LibraryProbe, Toolkit
from cudnn_doctor.probes.context import SearchContext
from cudnn_doctor.user_files import UnreadableFile, read_text_or_empty, read_user_head
from cudnn_doctor.versions import clean_version, decode_cuda

Candidate = tuple[str, str]  # (folder, how it was found)


def _from_variable(name: str) -> Callable[[SearchContext], list[Candidate]]:
    def step(ctx: SearchContext) -> list[Candidate]:
        value = ctx.env.get(name)
        return [(value, name)] if value else []

    step.__name__ = f"from_{name}"
    return step


def from_versioned_variables(ctx: SearchContext) -> list[Candidate]:
    """CUDA_PATH_V12_4 and its kind: the Windows installer sets one for each toolkit it installs."""
    prefix = ctx.layout.toolkit_variable_prefix
    if prefix is None:
        return []
    return [(value, name) for name, value in sorted(ctx.env.items())
            if name.upper().startswith(prefix) and re.fullmatch(r"\d+_\d+", name[len(prefix):]) and value]


def from_nvcc_on_path(ctx: SearchContext) -> list[Candidate]:
    for folder in ctx.env_paths("PATH"):
        nvcc = os.path.join(folder, ctx.layout.nvcc)
        if os.path.isfile(nvcc):
            root = toolkit_root_of_nvcc(nvcc)
            return [(root, "PATH")] if root else []
    return []


def toolkit_root_of_nvcc(nvcc: str) -> str | None:
    """The toolkit an nvcc belongs to, seeing through symlinks and `exec .../bin/nvcc` wrappers."""
    real = os.path.realpath(nvcc)
    try:
        head = read_user_head(real, 4096)
    except UnreadableFile:
        return None
    if head.startswith(b"#!"):  # a wrapper script: `exec /usr/local/cuda-13.0/bin/nvcc "$@"`
        match = re.search(r"(/[^\s\"']+)/bin/nvcc\b", os.fsdecode(head))
        return match.group(1) if match and looks_like_toolkit(match.group(1)) else None
    root = os.path.dirname(os.path.dirname(real))  # real is absolute and normal: realpath's answer
    return root if looks_like_toolkit(root) else None


def from_system_folders(ctx: SearchContext) -> list[Candidate]:
    return [(path, source) for pattern, source in ctx.toolkit_folder_patterns() for path in sorted(glob.glob(pattern))]


def from_pip_wheels(ctx: SearchContext) -> list[Candidate]:
    found = []
    for site in ctx.site_packages_dirs():
        # CUDA 12 wheels: nvidia/cuda_runtime; CUDA 13 wheels: nvidia/cu13
        for folder in sorted(glob.glob(os.path.join(site, "nvidia", "cuda_runtime")) +
                             glob.glob(os.path.join(site, "nvidia", "cu[0-9]*"))):
            if find_cudart(folder):
                found.append((folder, "pip"))
    return found


def from_conda(ctx: SearchContext) -> list[Candidate]:
    return [(env, "conda") for env in ctx.conda_environments()
            if glob.glob(os.path.join(env, "lib", "libcudart.so*"))]


TOOLKIT_SEARCH_STEPS: tuple[Callable[[SearchContext], list[Candidate]], ...] = (
    _from_variable("CUDA_HOME"),
    _from_variable("CUDA_PATH"),
    from_versioned_variables,
    from_nvcc_on_path,
    from_system_folders,
    from_pip_wheels,
    from_conda,
)


def looks_like_toolkit(path: str) -> bool:
    return any(os.path.exists(os.path.join(path, marker)) for marker in (
        "include/cuda_runtime.h", "version.json", "version.txt")) or find_cudart(path) is not None


def find_cudart(path: str) -> str | None:
    """The versioned libcudart (libcudart.so.12) in a toolkit folder, or None."""
    for pattern in ("lib64/libcudart.so.[0-9]*", "lib/libcudart.so.[0-9]*",
                    "targets/*/lib/libcudart.so.[0-9]*", "bin/cudart64_*.dll", "lib/libcudart.*.dylib"):
        matches = sorted(glob.glob(os.path.join(path, pattern)), key=len)
        if matches:
            return matches[0]
    return None


def lib_dirs_of(path: str) -> list[str]:
    """A toolkit's library folders, in the order its own loader links search them."""
    dirs = [os.path.join(path, d) for d in ("lib64", "lib", "lib/x64", "bin")]
    dirs += sorted(glob.glob(os.path.join(path, "targets", "*", "lib")))
    unique: list[str] = []
    for folder in dirs:
        if os.path.isdir(folder) and os.path.realpath(folder) not in {os.path.realpath(d) for d in unique}:
            unique.append(folder)
    return unique


def discover_toolkits(ctx: SearchContext) -> tuple[list[Toolkit], list[tuple[str, str]]]:
    """Toolkits found (versions from files only) and (variable, path) pairs that point nowhere."""
    by_real: dict[str, Toolkit] = {}
    dangling: list[tuple[str, str]] = []
    for step in TOOLKIT_SEARCH_STEPS:
        for path, source in step(ctx):
            if not looks_like_toolkit(path):
                if source in ("CUDA_HOME", "CUDA_PATH") or source.startswith("CUDA_PATH_V"):
                    dangling.append((source, path))
                continue
            real = os.path.realpath(path)
            known = by_real.get(real)
            if known is not None:
                if path != real and path not in known.links:
                    by_real[real] = _with_links(known, path)
                continue
            version, version_from = read_version_from_files(real)
            by_real[real] = Toolkit(
                path=real,
                version=version,
                nvcc=_nvcc_in(real),
                source=source,
                cudart=find_cudart(real),
                version_from=version_from,
                compat_libcuda=_compat_libcuda(real),
                links=(path,) if path != real else (),
            )
    return list(by_real.values()), dangling


def _with_links(toolkit: Toolkit, link: str) -> Toolkit:
    from dataclasses import replace

    return replace(toolkit, links=toolkit.links + (link,))


def _nvcc_in(path: str) -> str | None:
    for name in ("bin/nvcc", "bin/nvcc.exe"):
        if os.path.isfile(os.path.join(path, name)):
            return os.path.join(path, name)
    return None


def _compat_libcuda(path: str) -> str | None:
    matches = sorted(glob.glob(os.path.join(path, "compat", "libcuda.so.*")), key=len, reverse=True)
    return matches[0] if matches else None


def read_version_from_files(path: str) -> tuple[str | None, str | None]:
    """(version, where it was read) from the files of a toolkit folder, without running anything.
    Files that are FIFOs, huge, not UTF-8 or malformed are passed over, as is a version that is not
    a plausible dotted number."""
    version = _version_json(os.path.join(path, "version.json"))
    if version:
        return version, "version.json"
    match = re.search(r"CUDA Version\s+([\d.]+)", read_text_or_empty(os.path.join(path, "version.txt")))
    if match and clean_version(match.group(1)):
        return match.group(1), "version.txt"
    for pattern in ("dist-info/nvidia_cuda_runtime*-*.dist-info", "../../nvidia_cuda_runtime*-*.dist-info"):
        for info in sorted(glob.glob(os.path.join(path, pattern))):
            match = re.search(r"-(\d+\.\d+(?:\.\d+)*)\.dist-info$", info)
            if match and clean_version(match.group(1)):
                return match.group(1), "dist-info"
    cudart = find_cudart(path)
    if cudart:
        match = re.search(r"libcudart\.so\.(\d+\.\d+(?:\.\d+)*)$", os.path.realpath(cudart))
        if match and clean_version(match.group(1)):
            return match.group(1), "libcudart file name"
    return None, None


def _version_json(path: str) -> str | None:
    """{"cuda": {"version": "12.4.1"}} (or "cuda_cudart"); anything else, numbers and deep nesting
    included, is no version."""
    text = read_text_or_empty(path)
    if not text:
        return None
    try:
        data = json_values.loads(text)
    except (ValueError, RecursionError):
        return None
    if not isinstance(data, dict):
        return None
    for component in ("cuda", "cuda_cudart"):
        entry = data.get(component)
        version = clean_version(entry.get("version")) if isinstance(entry, dict) else None
        if version:
            return version
    return None


def nvcc_version_in(text: str) -> str | None:
    """The version in `nvcc --version`'s output: "release 12.4, V12.4.131" -> "12.4.131"."""
    match = re.search(r"release [\d.]+, V([\d.]+)", text) or re.search(r"release ([\d.]+)", text)
    return clean_version(match.group(1)) if match else None


def runtime_version(probe: LibraryProbe) -> str | None:
    """cudaRuntimeGetVersion's 12040 as "12.4"."""
    return decode_cuda(probe.values.get("cudaRuntimeGetVersion")) if probe.loaded else None
