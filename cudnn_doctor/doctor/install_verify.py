"""install's checks, before and after: what the machine has (driver, toolkit, GPUs, the cuDNN already in the
prefix), whether the new cuDNN fits it, and whether the installed result really is the cuDNN the archive held
(loaded in a child process, as `check` does). They probe and judge, so they sit on the use-case floor, above
probes/ and rules/; install/ itself only plans and applies."""

from __future__ import annotations

import os
from dataclasses import replace

from cudnn_doctor.codes import doctor_error
from cudnn_doctor.cudnn_files import library_file
from cudnn_doctor.errors import DoctorError
from cudnn_doctor.model import CudnnInstall, Finding, Report
from cudnn_doctor.probes.context import SearchContext


def probe(ctx: SearchContext, prefix: str) -> Report:
    """The check report, with PREFIX as an extra place to look."""
    from cudnn_doctor.knowledge.data import sublibrary_names
    from cudnn_doctor.probes.collect import collect_report

    return collect_report(replace(ctx, search_paths=[prefix]), sublibrary_names())


def installs_in(report: Report, library_folder: str) -> list[CudnnInstall]:
    real = os.path.realpath(library_folder)
    return [i for i in report.cudnn if os.path.realpath(os.path.dirname(i.library)) == real
            or os.path.realpath(i.path) == real]


def fit_findings(report: Report, library_folder: str, version: str | None, major: int | None,
                 cuda_major: int | None) -> list[Finding]:
    """What `check` would say about the new cuDNN on this machine: CUDA major against the
    toolkit (CD306) and the driver (CD312), compute capability against the GPUs (CD311)."""
    from cudnn_doctor.rules import cudnn as cudnn_rules

    if version is None and cuda_major is None:
        return []
    library = os.path.join(library_folder, library_file("libcudnn", major or 9, report.host.os))
    planned = CudnnInstall(path=library_folder, library=library, major=major, version=version, header_version=version,
                           header_path=None, cuda_version=str(cuda_major) if cuda_major else None, sublibraries={},
                           sublibrary_versions={}, source="toolkit", loaded_by=("ld.so",),
                           real_library=os.path.realpath(library), real_path=os.path.realpath(library_folder))
    hypothetical = replace(report, cudnn=[planned], findings=[])
    findings: list[Finding] = []
    for rule in (cudnn_rules.cuda_major_mismatch, cudnn_rules.newer_than_driver, cudnn_rules.gpu_not_supported):
        findings += rule(hypothetical)
    return findings  # with the registry's severity: what `check` would say once it is installed


def unchecked(report: Report) -> list[str]:
    """What the fit could not be judged against on this machine (no driver, no GPU, no toolkit)."""
    missing = []
    if not report.driver.cuda_driver_version:
        missing.append("the driver (none found)")
    if not report.gpus:
        missing.append("the GPU's compute capability (no GPU found)")
    if not report.toolkits:
        missing.append("the CUDA toolkit (none found)")
    return missing


def verify_installed(report: Report, library_folder: str, version: str | None, major: int | None) -> CudnnInstall:
    """The install check finds in LIBRARY_FOLDER; raise CD505 unless it loads, is VERSION and is complete."""
    found = [i for i in installs_in(report, library_folder) if major is None or i.major == major]
    if not found:
        raise verification_error(f"check finds no cuDNN in {library_folder} after the install")
    install = found[0]
    problem = None
    if install.file_error:
        problem = f"{install.library}: {install.file_error}"
    elif install.load_error or install.crashed or install.timed_out:
        problem = f"{install.library} does not load: {install.load_error or 'crashed'}"
    elif version and install.version != version:
        problem = f"{install.library} reports cuDNN {install.version}, the archive's headers say {version}"
    else:
        missing = [name for name, present in install.sublibraries.items() if not present]
        if missing:
            problem = f"{install.library} is missing its sub-libraries {', '.join(missing)}"
        else:
            problem = sublibrary_problem(install)
    if problem:
        raise verification_error(problem)
    return install


def sublibrary_problem(install: CudnnInstall) -> str | None:
    """Load every sub-library in a child of its own, as a program's first cuDNN call would (the
    folder on the loader's path: cuDNN 8's sub-libraries find each other only so); what fails."""
    from cudnn_doctor.probes.library_jobs import Job, run_jobs

    folder = install.path
    system = SearchContext.from_environment()
    paths = [os.path.join(folder, library_file(name, install.major, system.os_name))
             for name, present in install.sublibraries.items() if present]
    if not paths:
        return None
    variable = system.layout.library_path_variable
    saved = os.environ.get(variable)
    os.environ[variable] = folder + (os.pathsep + saved if saved else "")
    try:
        answers = run_jobs([Job("cudnn", path) for path in paths])
    finally:
        if saved is None:
            os.environ.pop(variable, None)
        else:
            os.environ[variable] = saved
    failed = [f"{os.path.basename(job.target)} ({answer.error or 'crashed'})"
              for job, answer in answers.items() if not answer.loaded]
    return f"sub-libraries do not load: {'; '.join(failed)}" if failed else None


def verification_error(why: str) -> DoctorError:
    return doctor_error("CD505", exit_code=1, why=f"{why}; the install was rolled back")
