"""CD3xx: the cuDNN installs."""

from __future__ import annotations

import os
from dataclasses import replace

from cudnn_doctor.codes import finding
from cudnn_doctor.cudnn_files import library_file
from cudnn_doctor.knowledge import query
from cudnn_doctor.knowledge.data import load
from cudnn_doctor.model import CudnnInstall, Finding, Report, Toolkit
from cudnn_doctor.versions import major, major_minor, version_tuple


def prefix_of(install: CudnnInstall) -> str:
    """The prefix an install's library folder sits in (/usr/local/cuda for /usr/local/cuda/lib64)."""
    folder = install.path.rstrip("/")
    parent = os.path.dirname(folder)
    return os.path.dirname(parent) if os.path.basename(parent) == "lib" else parent


def _visible_to_loader(report: Report, install: CudnnInstall) -> bool:
    return install.real_path in report.loader_path_real or "ld.so" in install.loaded_by


def _primary_cuda_major(report: Report) -> int | None:
    if report.toolkits and major(report.toolkits[0].version):
        return major(report.toolkits[0].version)
    return major(report.driver.cuda_driver_version)


def no_cudnn(report: Report) -> list[Finding]:
    if report.cudnn:
        return []
    cuda_major = _primary_cuda_major(report) or int(load("rules").get("default_cuda_major", {}).get("major", 12))
    newest = query.newest_cudnn_for_cuda(cuda_major)
    return [finding("CD301", cuda_major=cuda_major, version=newest or f"<a 9.x release for CUDA {cuda_major}>")]


def several_versions_on_loader_path(report: Report) -> list[Finding]:
    visible = [i for i in report.cudnn if _visible_to_loader(report, i) and i.version]
    # libcudnn.so.8 and libcudnn.so.9 are different sonames: a program asks for one, and gets that one; only
    # several versions of one major compete for the same name
    by_major: dict[int | None, set[str]] = {}
    for install in visible:
        by_major.setdefault(install.major or major(install.version), set()).add(str(install.version))
    competing = {m for m, versions in by_major.items() if len(versions) > 1}
    visible = [i for i in visible if (i.major or major(i.version)) in competing]
    if not visible:
        return []
    picked = [i for i in visible if "ld.so" in i.loaded_by]
    others = [i for i in visible if i not in picked]
    listing = ", ".join(f"{i.version} ({i.library})" for i in visible)
    return [finding("CD302", versions=listing, others=", ".join(i.library for i in others) or "the copies you do not use")]


def header_mismatch(report: Report) -> list[Finding]:
    return [
        finding("CD303", subject=i.library, header_path=i.header_path, header_version=i.header_version,
                library=i.library, version=i.version, prefix=prefix_of(i))
        for i in report.cudnn
        if i.header_version and i.version and version_tuple(i.header_version) != version_tuple(i.version)
    ]


def _judged_as_loaded(report: Report, install: CudnnInstall) -> str | None:
    """"loaded": a framework loads INSTALL in this environment, so rules/process_env.py judges what the loader
    really opens for it; "unused": nothing loads it (a problem there breaks nothing now: CD318); None: no view
    of the process environment (the files alone decide)."""
    view = report.process
    if view is None:
        return None
    real = install.real_library or install.library
    if any(loaded.real_library in (real, install.library) or loaded.library == install.library
           for loaded in view.cudnn):
        return "loaded"
    # a copy the user named (--search-path) is one they mean to use: its files decide, as before
    if install.loaded_by or install.source == "search-path":
        return None
    if install.file_error and install.file_error.startswith("a dangling link"):
        return "unused"  # a dangling link: the loader skips it and searches on
    on_path = {os.path.normpath(f) for f in report.loader_path} | set(report.loader_path_real)
    if os.path.normpath(install.path) in on_path or (install.real_path and install.real_path in on_path):
        return None  # the loader opens what it finds there first (a FIFO, a truncated file): as before
    return "unused"


def _unused_copy(install: CudnnInstall, problem: str) -> Finding:
    return finding("CD318", subject=install.library, library=install.library,
                   version=install.version or (f"{install.major}.x" if install.major else "unknown"), problem=problem)


def sublibraries(report: Report) -> list[Finding]:
    findings = []
    for install in report.cudnn:
        # named by the files a program asks for: libcudnn_ops.so.9's names on Linux, cudnn_ops64_9.dll on Windows
        missing = [_file_name(name, install) for name, present in install.sublibraries.items() if not present]
        version = install.version or (f"{install.major}.x" if install.major else "unknown")
        judged = _judged_as_loaded(report, install)
        if judged == "loaded":
            continue
        if judged == "unused":
            expected = version_tuple(install.version)
            stale = [f"{name} ({found})" for name, found in install.sublibrary_versions.items()
                     if found and expected and version_tuple(found) != expected]
            problems = ([f"its sub-libraries {', '.join(missing)} are missing"] if missing else []) + (
                [f"{', '.join(stale)} are of another release"] if stale else [])
            if problems:
                findings.append(_unused_copy(install, "; ".join(problems)))
            continue
        if missing:
            findings.append(finding("CD304", subject=install.library, library=install.library, version=version,
                                    missing=", ".join(missing), path=install.path, prefix=prefix_of(install)))
        expected = version_tuple(install.version)
        mismatched = [f"{_file_name(name, install)} ({found})" for name, found in install.sublibrary_versions.items()
                      if found and expected and version_tuple(found) != expected]
        if mismatched:
            findings.append(finding("CD305", subject=install.library, library=install.library, version=version,
                                    mismatched=", ".join(mismatched), path=install.path))
    return findings


def _file_name(name: str, install: CudnnInstall) -> str:
    """A sub-library as the report names it: its DLL's file name beside a cudnn64_N.dll, else its library name."""
    return library_file(name, install.major, "windows") if install.library.lower().endswith(".dll") else name


def _toolkit_for(report: Report, install: CudnnInstall) -> Toolkit | None:
    real = install.real_path or install.path
    for toolkit in report.toolkits:  # a toolkit's path is recorded resolved
        if real.startswith(toolkit.path + os.sep):
            return toolkit
    if install.source.startswith("pip:"):
        site = real.split(os.sep + "nvidia" + os.sep)[0]
        return next((t for t in report.toolkits if t.source == "pip" and t.path.startswith(site)), None)
    if _visible_to_loader(report, install) and report.toolkits:
        return report.toolkits[0]
    return None


def cuda_major_mismatch(report: Report) -> list[Finding]:
    findings = []
    for install in report.cudnn:
        toolkit = _toolkit_for(report, install)
        if toolkit is None or install.cuda_version is None or toolkit.version is None:
            continue
        if major(install.cuda_version) != major(toolkit.version):
            toolkit_major = major(toolkit.version)
            findings.append(finding("CD306", subject=install.library, library=install.library, version=install.version,
                                    cudnn_cuda=install.cuda_version, toolkit_path=toolkit.path,
                                    toolkit_version=toolkit.version, toolkit_major=toolkit_major,
                                    build=_build_for(report, install, toolkit_major)))
    return findings


def _build_for(report: Report, install: CudnnInstall, cuda_major: int | None) -> str | None:
    """The cuDNN release to take for CUDA CUDA_MAJOR instead of INSTALL: its own release where NVIDIA built it for
    that major, else the newest of its cuDNN major, else the newest there is (compat/cudnn.toml [[wheel]])."""
    if cuda_major is None:
        return None
    builds = [b.version for b in query.cudnn_builds_for(cuda_major, report.host.os, report.host.arch)]
    if install.version in builds:
        return install.version
    own = [v for v in builds if major(v) == install.major]
    return (own or builds)[-1] if builds else None


def _refused_below(report: Report, install: CudnnInstall) -> bool:
    """Did a child loading INSTALL as a program does see one of its sub-libraries fail, the loader refusing its file,
    finding none, or dying of it (a cut-short file in a folder first on LD_LIBRARY_PATH)? That sub-library's
    finding names the file and the cause of the copy's crash. (The paths as the probes resolved them.)"""
    names = {install.library, install.real_library}
    return report.process is not None and any(
        {copy.library, copy.real_library} & names and sub.seen and (sub.problem or "").startswith(
            ("not loadable: ", "missing", "broken", "truncated"))
        for copy in report.process.cudnn for sub in copy.sublibraries)


def _refused_by_name(report: Report, install: CudnnInstall) -> bool:
    """Did the child that opens libcudnn by name, as a program does, see the loader refuse INSTALL's front library
    (its words name the file)? Then rules/process_env.observed_loads says so, an error only where no framework here
    loads a copy of its own: the same refusal is not a second error here."""
    names = [name for name in (install.library, install.real_library) if name]
    return report.process is not None and any(
        seen.user == "ld.so" and any(step.step == "open" and not step.ok and any(name in step.said for name in names)
                                     for step in seen.steps)
        for seen in report.process.loads)


def load_failures(report: Report) -> list[Finding]:
    findings = []
    for install in report.cudnn:
        unused = _judged_as_loaded(report, install) == "unused"
        if install.file_error and unused:
            findings.append(_unused_copy(install, f"it is not a loadable library ({install.file_error})"))
        elif unused and (install.crashed or install.timed_out or install.changed_process or install.load_error):
            # the doctor's own child loaded it by its full path; no program here does: nothing fails for it now
            how = install.load_error or ("loading it timed out" if install.timed_out else "loading it crashed"
                                         if install.crashed else "; ".join(install.changed_process))
            findings.append(_unused_copy(install, f"it does not load as it is ({how})"))
        elif install.file_error:
            findings.append(finding("CD308", subject=install.library, library=install.library, arch=report.host.arch,
                                    error=install.file_error, version_hint=f"{install.major or 9}"))
        elif (install.crashed or install.timed_out) and _refused_below(report, install):
            continue  # a sub-library the loader refused, found nowhere or died of is why: said there, with its fix
        elif install.crashed or install.timed_out:
            how = install.load_error or ("timed out" if install.timed_out else "crashed")
            findings.append(finding("CD309", subject=install.library, library=install.library, how=how))
        elif install.changed_process:  # seen in the child that loaded it: every program that loads it loses as much
            how = f"took from that process what every program that loads it loses ({'; '.join(install.changed_process)})"
            findings.append(finding("CD309", subject=install.library, library=install.library, how=how,
                                    proof=f"a child that loaded {install.library} saw it: "
                                          + "; ".join(install.changed_process)))
        elif install.load_error and _refused_by_name(report, install):
            continue  # the child that opens cuDNN by name met this refusal: said there, for whom it fails
        elif install.load_error:
            findings.append(finding("CD307", subject=install.library, library=install.library, error=install.load_error))
        elif install.version is None:
            findings.append(finding("CD314", subject=install.library, library=install.library,
                                    error="did not answer (the symbol is missing or returned 0)"))
    return findings


def not_on_loader_path(report: Report) -> list[Finding]:
    usable = [i for i in report.cudnn if i.version]
    if not usable or any(_visible_to_loader(report, i) for i in usable):
        return []
    first = usable[0]
    return [finding("CD310", subject=first.path, version=first.version, path=first.path)]


def newer_than_driver(report: Report) -> list[Finding]:
    driver_cuda = major_minor(report.driver.cuda_driver_version)
    if driver_cuda is None:
        return []
    findings = []
    for install in report.cudnn:
        built = major_minor(install.cuda_version)
        if built is None or built[0] <= driver_cuda[0]:
            continue
        made = finding("CD312", subject=install.library, library=install.library, version=install.version,
                       cudnn_cuda=install.cuda_version, driver_cuda=report.driver.cuda_driver_version,
                       driver_major=driver_cuda[0])
        if _judged_as_loaded(report, install) == "unused":  # true of the copy, and no program here loads it
            made = replace(made, severity="warning", evidence="read", proof=(
                "no framework and no program started here loads this copy (the loader skips it or finds another "
                "first), so nothing fails because of it now"))
        findings.append(made)
    return findings


def gpu_not_supported(report: Report) -> list[Finding]:
    findings = []
    for install in report.cudnn:
        if not install.loaded_by and not _visible_to_loader(report, install):
            continue
        rows = query.cudnn_variant(install.version, install.cuda_version)
        if rows is None:
            continue
        release, variant = rows
        low = version_tuple(variant.get("min_compute_capability"))
        for gpu in report.gpus:
            cc = version_tuple(gpu.compute_capability)
            if low and cc and cc < low:
                findings.append(finding(
                    "CD311", subject=install.library, refs=(variant.get("source") or release.get("source", ""),),
                    gpu=f"{gpu.index} ({gpu.name})", cc=gpu.compute_capability, version=install.version,
                    supported=f"compute capability {variant['min_compute_capability']} and newer",
                    suggestion="an older cuDNN release; see `cudnn-doctor compat --list cudnn`"))
    return findings


def missing_dlls(report: Report) -> list[Finding]:
    """CD330: a DLL that a Windows copy's files import, found nowhere the loader looks (read from the PE files)."""
    return [finding("CD330", subject=i.library, library=i.library, version=i.version or "unknown",
                    missing=", ".join(i.missing_dlls), path=i.path)
            for i in report.cudnn if i.missing_dlls]


def search_errors(report: Report) -> list[Finding]:
    return [finding("CD313", subject=path, path=path, error=why) for path, why in report.search_errors]


RULES = (no_cudnn, several_versions_on_loader_path, header_mismatch, sublibraries, cuda_major_mismatch,
         load_failures, not_on_loader_path, newer_than_driver, gpu_not_supported, missing_dlls, search_errors)
