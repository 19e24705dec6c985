"""Find every copy of cuDNN, then describe each from its files and a child's answers.

Discovery is a tuple of small search steps `(ctx, toolkits, cache) -> [(folder, source)]`;
the folders are then scanned for `libcudnn.so.N` (cudnn64_N.dll, libcudnn.N.dylib).
Copies reached through symlinks are one install, listed once.
"""

from __future__ import annotations

import glob
import os
import re
from collections.abc import Callable

from cudnn_doctor.cudnn_files import SONAME, header_version, library_file, major_of
from cudnn_doctor.elf import ElfError, read_elf
from cudnn_doctor.model import CudnnInstall, LibraryProbe, Toolkit
from cudnn_doctor.probes.context import SearchContext
from cudnn_doctor.probes.library_jobs import changed_process
from cudnn_doctor.probes.toolkit import lib_dirs_of
from cudnn_doctor.user_files import SOURCE_LIMIT, UnreadableFile, is_regular_file, read_user_text
from cudnn_doctor.versions import clean_version, decode_cuda, decode_cudnn

Folder = tuple[str, str]  # (folder, source)
MAIN_LIBRARY = SONAME
NAME_STARTS = ("libcudnn.", "cudnn64_")  # how every name MAIN_LIBRARY matches begins
SEARCH_PATH_SUBDIRS = ("", "lib64", "lib", "lib/x64", "bin", "nvidia/cudnn/lib", "nvidia/cudnn/bin",
                       "cuda/lib64", "cuda/lib", "cuda/bin")


def from_ld_library_path(ctx: SearchContext, toolkits: list[Toolkit], cache: dict[str, list[str]]) -> list[Folder]:
    return [(folder, "env") for folder in ctx.searched_library_path()]


def from_ldconfig_cache(ctx: SearchContext, toolkits: list[Toolkit], cache: dict[str, list[str]]) -> list[Folder]:
    return [(os.path.dirname(path), "system") for soname, paths in cache.items()
            if soname.startswith("libcudnn.so") for path in paths]


def from_system_folders(ctx: SearchContext, toolkits: list[Toolkit], cache: dict[str, list[str]]) -> list[Folder]:
    return [(folder, "system") for folder in ctx.default_lib_dirs()]


def from_toolkits(ctx: SearchContext, toolkits: list[Toolkit], cache: dict[str, list[str]]) -> list[Folder]:
    return [(folder, "toolkit") for toolkit in toolkits for folder in lib_dirs_of(toolkit.path)]


def from_pip_wheels(ctx: SearchContext, toolkits: list[Toolkit], cache: dict[str, list[str]]) -> list[Folder]:
    found = []
    for site in ctx.site_packages_dirs():
        for folder in (os.path.join(site, "nvidia", "cudnn", "lib"), os.path.join(site, "nvidia", "cudnn", "bin")):
            if os.path.isdir(folder):
                found.append((folder, "pip:" + (owning_distribution(site, "cudnn") or "unknown")))
        torch_lib = os.path.join(site, "torch", "lib")
        if glob.glob(os.path.join(torch_lib, "libcudnn*")) or glob.glob(os.path.join(torch_lib, "cudnn*64_*.dll")):
            found.append((torch_lib, "pip:torch"))
    return found


def from_theano_flags(ctx: SearchContext, toolkits: list[Toolkit], cache: dict[str, list[str]]) -> list[Folder]:
    from cudnn_doctor.probes.frameworks import theano_flags

    folder = theano_flags(ctx).get("dnn.library_path")
    return [(folder, "theano-flags")] if folder else []


def from_conda(ctx: SearchContext, toolkits: list[Toolkit], cache: dict[str, list[str]]) -> list[Folder]:
    return [(os.path.join(env, "lib"), "conda") for env in ctx.conda_environments()]


def from_search_paths(ctx: SearchContext, toolkits: list[Toolkit], cache: dict[str, list[str]]) -> list[Folder]:
    return [(os.path.join(root, sub) if sub else root, "search-path")
            for root in ctx.search_paths for sub in SEARCH_PATH_SUBDIRS
            if os.path.isdir(os.path.join(root, sub) if sub else root)]


def from_cudnn_path(ctx: SearchContext, toolkits: list[Toolkit], cache: dict[str, list[str]]) -> list[Folder]:
    """CUDNN_PATH: the cuDNN root that TensorRT and many build scripts read (its lib64, lib, bin...)."""
    root = ctx.env.get("CUDNN_PATH", "").strip()
    return [(os.path.join(root, sub) if sub else root, "CUDNN_PATH")
            for sub in SEARCH_PATH_SUBDIRS if root and os.path.isdir(os.path.join(root, sub) if sub else root)]


def from_python_path(ctx: SearchContext, toolkits: list[Toolkit], cache: dict[str, list[str]]) -> list[Folder]:
    """PYTHONPATH's folders that hold the pip wheels' layout (nvidia/cudnn/lib): torch and JAX search sys.path for
    their cuDNN, and a program's PYTHONPATH comes before site-packages, so such a copy is one they may load."""
    entries = [entry for entry in ctx.env.get("PYTHONPATH", "").split(os.pathsep) if entry][:64]
    return [(os.path.join(entry, "nvidia", "cudnn", "lib"), "PYTHONPATH") for entry in entries
            if os.path.isdir(os.path.join(entry, "nvidia", "cudnn", "lib"))]


CUDNN_SEARCH_STEPS: tuple[Callable[[SearchContext, list[Toolkit], dict[str, list[str]]], list[Folder]], ...] = (
    from_search_paths,
    from_cudnn_path,
    from_ld_library_path,
    from_ldconfig_cache,
    from_system_folders,
    from_toolkits,
    from_pip_wheels,
    from_python_path,
    from_conda,
    from_theano_flags,
)


def owning_distribution(site: str, component: str) -> str | None:
    """The pip distribution (nvidia-cudnn-cu12, ...) that installed site/nvidia/COMPONENT."""
    for info in sorted(glob.glob(os.path.join(site, f"nvidia_{component}*.dist-info"))):
        name = re.sub(r"-[^-]+\.dist-info$", "", os.path.basename(info))
        return name.replace("_", "-")
    return None


def discover_cudnn_libraries(ctx: SearchContext, toolkits: list[Toolkit],
                             cache: dict[str, list[str]]) -> list[tuple[str, str, list[str]]]:
    """(library path, source, other paths to the same file) for every distinct copy of cuDNN."""
    by_real: dict[str, tuple[str, str, list[str]]] = {}
    seen_folders: set[str] = set()
    for step in CUDNN_SEARCH_STEPS:
        for folder, source in step(ctx, toolkits, cache):
            real_folder = os.path.realpath(folder)
            if real_folder in seen_folders or not os.path.isdir(folder):
                continue
            seen_folders.add(real_folder)
            try:
                # one listing, not a glob per pattern; a system folder's thousand names are not sorted
                names = sorted(entry.name for entry in os.scandir(folder) if entry.name.startswith(NAME_STARTS))
            except OSError:
                continue
            for name in names:
                if not MAIN_LIBRARY.match(name):
                    continue  # libcudnn.so.9.1.0 is reached through libcudnn.so.9
                library = os.path.join(folder, name)
                real = os.path.realpath(library)
                if real in by_real:
                    by_real[real][2].append(library)
                else:
                    by_real[real] = (library, source, [])
    return list(by_real.values())


def library_major(library: str) -> int | None:
    return major_of(os.path.basename(library))


def probe_target(library: str) -> bool:
    """Is LIBRARY worth a child's dlopen? Not a FIFO (the loader would wait on it) or a device."""
    return is_regular_file(library)


def read_header_version(header: str) -> str | None:
    """The version a cudnn_version.h (or a cuDNN <= 7 cudnn.h) declares; None for a header that
    cannot be read (a FIFO, too big) or declares none."""
    try:
        text = read_user_text(header, SOURCE_LIMIT)
    except UnreadableFile:
        return None
    return header_version(text)


def find_header(folder: str, ctx: SearchContext) -> str | None:
    """The cudnn_version.h that belongs with the libraries in FOLDER, if any."""
    parent = os.path.dirname(os.path.normpath(folder))
    include_dirs = [os.path.join(parent, "include"), os.path.join(os.path.dirname(parent), "include")]
    if "default-lib-dirs-real" not in ctx._found:  # once per run, not once per copy
        ctx._found["default-lib-dirs-real"] = [os.path.realpath(d) for d in ctx.default_lib_dirs()]
    if os.path.realpath(folder) in ctx._found["default-lib-dirs-real"]:
        include_dirs += [ctx.system("/usr/include"), ctx.system(f"/usr/include/{ctx.triplet}")]
    for include in include_dirs:
        for name in ("cudnn_version.h", "cudnn.h"):
            candidate = os.path.join(include, name)
            if is_regular_file(candidate) and read_header_version(candidate):
                return candidate
    return None


def sublibrary_status(folder: str, major: int | None, names: list[str],
                      os_name: str = "linux") -> tuple[dict[str, bool], dict[str, str | None]]:
    """For each expected sub-library: is libX.so.MAJOR beside the main one, and its version
    as far as the real file's name tells (libcudnn_ops.so.9.1.0 -> 9.1.0)."""
    present: dict[str, bool] = {}
    versions: dict[str, str | None] = {}
    for name in names:
        candidates = [os.path.join(folder, library_file(name, major, os_name))]
        path = next((c for c in candidates if os.path.exists(c)), None)
        present[name] = path is not None
        versions[name] = version_in_file_name(path) if path else None
    return present, versions


def version_in_file_name(path: str) -> str | None:
    """The version in the name of the file PATH leads to (libcudnn_ops.so.9 -> libcudnn_ops.so.9.1.0 -> 9.1.0);
    a DLL's names hold only the major: its version resource says the rest (cudnn_ops64_9.dll -> 9.28.1)."""
    if path.lower().endswith(".dll"):
        return _release_of(dll_file_version(path))
    real = os.path.realpath(path) if os.path.islink(path) else path  # only the last name matters
    match = re.search(r"\.so\.([0-9]+\.[0-9]+\.[0-9]+)$", real)
    return clean_version(match.group(1)) if match else None


def dll_file_version(path: str) -> str | None:
    """The version resource of the DLL PATH ("9.28.1.4"), None where it has none or is no PE image."""
    from cudnn_doctor.probes.pe import PeError, read_pe  # Windows' files: not on a Linux check's path

    try:
        return read_pe(path).file_version
    except PeError:
        return None


def _release_of(file_version: str | None) -> str | None:
    """cuDNN's release in a DLL's four-part file version: 9.28.1.4 -> 9.28.1."""
    return clean_version(".".join(file_version.split(".")[:3])) if file_version else None


def build_install(library: str, source: str, aliases: list[str], probe: LibraryProbe | None,
                  ctx: SearchContext, sublibraries: dict[int, list[str]]) -> CudnnInstall:
    """Put together one CudnnInstall from the files and the child's answer."""
    folder = os.path.dirname(library)
    major = library_major(library)
    arch = file_error = file_version = None
    if os.path.islink(library) and not os.path.exists(library):
        file_error = f"a dangling link (to {os.readlink(library)}, No such file), which the loader skips"
    elif not is_regular_file(library):
        file_error = "not a regular file (a FIFO, device or folder), so it was not loaded"
    elif library.lower().endswith(".dll"):
        from cudnn_doctor.probes.pe import PeError, read_pe

        try:
            pe = read_pe(library)
            arch, file_version = pe.arch, pe.file_version
            if pe.arch != ctx.arch:
                file_error = f"built for {pe.arch}, this machine is {ctx.arch}"
        except PeError as error:
            file_error = str(error)
    elif library.endswith(".so." + str(major)):
        try:
            info = read_elf(library)
            arch = info.arch
            if info.arch != ctx.arch:
                file_error = f"built for {info.arch}, this machine is {ctx.arch}"
        except ElfError as error:
            file_error = str(error)
    values = probe.values if probe is not None and probe.loaded else {}
    header = find_header(folder, ctx)
    present, versions = sublibrary_status(folder, major, sublibraries.get(major or 0, []), ctx.os_name)
    missing_dlls: tuple[str, ...] = ()
    if library.lower().endswith(".dll") and file_error is None:
        files = [library] + [os.path.join(folder, library_file(name, major, "windows"))
                             for name, found in present.items() if found]
        missing_dlls = dlls_not_found(files, ctx)
    return CudnnInstall(
        path=folder,
        library=library,
        major=major,
        # what the library answers; a DLL that does not load still has its version resource
        version=decode_cudnn(values.get("cudnnGetVersion")) or _release_of(file_version),
        header_version=read_header_version(header) if header else None,
        header_path=header,
        cuda_version=decode_cuda(values.get("cudnnGetCudartVersion")),
        sublibraries=present,
        sublibrary_versions=versions,
        source=source,
        load_error=None if probe is None or probe.loaded else probe.error,
        crashed=bool(probe and probe.crashed),
        timed_out=bool(probe and probe.timed_out),
        arch=arch,
        file_error=file_error,
        same_file_as=tuple(aliases),
        real_library=os.path.realpath(library),
        real_path=os.path.realpath(folder),
        file_version=file_version,
        missing_dlls=missing_dlls,
        changed_process=changed_process(values),
    )


def dlls_not_found(files: list[str], ctx: SearchContext) -> tuple[str, ...]:
    """The DLLs that FILES import (their PE import tables) and that are in none of the folders Windows looks in
    for them: the files' own folder (on PATH when a program loads them by name), System32, the Windows folder,
    PATH. API sets (api-ms-win-*, ext-ms-*) are names the loader maps itself, not files."""
    from cudnn_doctor.probes.loader import search_order
    from cudnn_doctor.probes.pe import PeError, read_pe

    folders = [os.path.dirname(files[0])] + search_order(ctx, [], {})
    wanted: dict[str, str] = {}
    for path in files:
        try:
            imports = read_pe(path).imports
        except PeError:
            continue
        for name in imports:
            if not name.lower().startswith(("api-ms-", "ext-ms-")):
                wanted.setdefault(name.lower(), name)
    listings = [set(_names_in(folder, ctx)) for folder in folders]
    return tuple(name for key, name in wanted.items() if not any(key in names for names in listings))


def _names_in(folder: str, ctx: SearchContext) -> list[str]:
    """The lower-cased names of FOLDER's files (Windows' names ignore case), listed once per run."""
    key = "dll-folder:" + folder
    if key not in ctx._found:
        try:
            ctx._found[key] = sorted({entry.name.lower() for entry in os.scandir(folder)})
        except OSError:
            ctx._found[key] = []
    return ctx._found[key]
