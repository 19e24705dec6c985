"""The treatments of what fails at a framework's first compilation or first library use (rules/first_use.py):
the nvidia-cuda-nvcc wheel (ptxas and libdevice where JAX looks first) into JAX's own Python, CUDA_ROOT unset where
it points JAX at a folder without them, an LD_LIBRARY_PATH folder whose NVRTC builtins a framework's NVRTC takes
first out of that variable. No GPU compiler runs without a GPU: a step that installs is not verified here."""

from __future__ import annotations

from typing import Any

from cudnn_doctor.knowledge.data import load
from cudnn_doctor.model import Finding, Framework, Report
from cudnn_doctor.plan.actions import ENV, MANUAL, PIP, Action, EnvChange
from cudnn_doctor.quoting import code_span, command_line, in_prose

LOADER_SOURCE = "ld.so(8): LD_LIBRARY_PATH is searched before a library's RUNPATH"


def _jax(report: Report) -> Framework | None:
    return next((f for f in report.frameworks if f.name == "jax" and not f.details.get("cpu_only")
                 and not f.details.get("assumed")), None)


def nvcc_wheel(framework: Framework) -> str:
    """The requirement that brings ptxas and libdevice for FRAMEWORK: its own metadata's (JAX's plugin names the
    wheel in its with-cuda extra), else compat/first_use.toml's wheel for its CUDA major."""
    pinned = framework.details.get("nvidia_requirements")
    if isinstance(pinned, dict):
        for name, spec in pinned.items():
            if str(name).startswith("nvidia-cuda-nvcc"):
                return f"{name}{spec}"
    wheels = load("first_use")["xla_ptxas"]["wheels"]
    major = str(framework.cuda_built_for or "12").split(".")[0]
    return str(wheels.get(major) or wheels["12"])


def treat(work: Any) -> None:
    """Each first-use finding that has a treatment here."""
    report: Report = work.report
    for finding in work.with_code("CD208", "CD206"):
        kind = finding.values.get("kind")
        if kind in ("ptxas", "libdevice", "ptxas-target") and finding.values.get("framework") == "jax":
            _compiler(work, finding, report, str(kind))
        elif kind == "nvlink":
            flag = load("first_use")["xla_ptxas"]["parallel_flag"]
            work.take([finding], Action(MANUAL, (), "XLA links parallel compilation with nvlink", load("first_use")[
                "xla_ptxas"]["source"], text=f"take --{flag} out of XLA_FLAGS, or put a CUDA toolkit's bin/ (which "
                                             "holds nvlink beside ptxas) on PATH"))
    for finding in work.with_code("CD203"):
        if finding.values.get("kind") != "nvrtc-builtins":
            continue
        folder = str(finding.values.get("folder") or "")
        if folder:
            work.take([finding], Action(ENV, (), f"{in_prose(folder)} out of LD_LIBRARY_PATH: NVRTC then opens the builtins "
                                                 "beside it (its RUNPATH, $ORIGIN)", LOADER_SOURCE,
                                        env=(EnvChange("LD_LIBRARY_PATH", "remove", folder),)))
        else:
            work.take([finding], Action(MANUAL, (), "NVRTC needs its builtins of the same release beside it",
                                        load("first_use")["nvrtc"]["source"],
                                        text=f"reinstall the wheel or toolkit that holds {in_prose(finding.subject or '')}, so that "
                                             "libnvrtc and its libnvrtc-builtins come from the same release"))


def _compiler(work: Any, finding: Finding, report: Report, kind: str) -> None:
    framework = _jax(report)
    xla = report.first_use.xla if report.first_use else None
    if framework is None or xla is None:
        return
    row = load("first_use")
    first = xla.ptxas[0] if xla.ptxas else None
    if kind == "ptxas" and first is not None and first.verdict == "not executable" and \
            first.how == "xla_gpu_cuda_data_dir":
        # the wheel's own ptxas, installed without the execute bit for this user (pip run as root keeps the
        # wheel's 0744): installing it again changes nothing
        work.take([finding], Action(MANUAL, (), f"{in_prose(first.path)} is the ptxas XLA looks at first, and this user may "
                                                "not run it", row["xla_ptxas"]["source"], text=_chmod(first.path)))
        return
    if xla.data_dir_from == "CUDA_ROOT":
        work.take([finding], Action(ENV, (), "CUDA_ROOT names the folder JAX gives XLA first; without it JAX takes "
                                             "its nvidia-cuda-nvcc wheel's, and XLA then searches PATH and its CUDA roots",
                                    row["jax_cuda_path"]["source"], env=(EnvChange("CUDA_ROOT", "unset", ""),)))
        return
    spec = nvcc_wheel(framework)
    python = work.setting.python or framework.details.get("python")
    why = (f"{spec} puts bin/ptxas and nvvm/libdevice/libdevice.10.bc in the folder JAX gives XLA first "
           f"(nvidia/cu13 or nvidia/cuda_nvcc of its Python)")
    source = f"{row['jax_cuda_path']['source']}; {row['xla_ptxas']['wheels_source']}"
    argv = ("-m", "pip", "install", "-U", spec) if kind == "ptxas-target" else ("-m", "pip", "install", spec)
    if python:
        work.take([finding], Action(PIP, (), why, source, argv=(str(python), *argv)))
    else:
        work.take([finding], Action(MANUAL, (), why, source, text=f"install {spec} into the Python environment of "
                                                                   f"{framework.location} with its own pip"))


def _chmod(path: str) -> str:
    """The step that gives PATH the execute bit: one command where PATH is one single-quoted word that bash, zsh,
    fish and PowerShell all read as itself (printable, UTF-8, no quote and no backslash, which fish and PowerShell
    escape otherwise), else the same in words: a manual step is shown for every shell alike."""
    if all(char.isprintable() and char not in "'\\" and not 0xD800 <= ord(char) <= 0xDFFF for char in path):
        return f"{code_span(command_line(('chmod', 'a+x', path)))} (as the user who installed it)"
    return (f"as the user who installed it, give {in_prose(path)} the execute bit (chmod a+x on that file: its name "
            "holds characters that bash, zsh, fish and PowerShell do not write alike in one line)")
