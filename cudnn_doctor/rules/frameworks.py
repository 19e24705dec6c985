"""CD4xx: each framework found against the cuDNN it will load, the driver, the GPUs and the toolkits.

Verdicts come from cudnn_doctor.knowledge.frameworks, so `check` and `compat` never disagree;
every finding names the data row that decided it.
"""

from __future__ import annotations

import os
import re
from dataclasses import replace
from typing import TYPE_CHECKING

from cudnn_doctor.codes import finding
from cudnn_doctor.model import CudnnInstall, Finding, Framework, ObservedLoad, Report
from cudnn_doctor.rules.driver import driver_os
from cudnn_doctor.versions import ascii_digits, major_minor

if TYPE_CHECKING:
    from cudnn_doctor.knowledge import frameworks as knowledge

# Each rule imports the frameworks' knowledge (knowledge/frameworks.py, 1,000 lines and its records) only when
# the report holds a framework to judge: a machine without one never loads it.


def _install_used(report: Report, framework: Framework) -> CudnnInstall | None:
    if framework.cudnn_used is None:
        return None
    # the probes record the install's own path when the framework's copy is one of them
    return next((i for i in report.cudnn if framework.cudnn_used in (i.library, i.real_library)), None)


def _name(framework: Framework) -> str:
    from cudnn_doctor.knowledge import frameworks as knowledge

    return knowledge.display(knowledge.canonical_name(framework.name) or framework.name)


def cpu_only_builds(report: Report) -> list[Finding]:
    """CD406; the plan names the exact GPU build of the installed release. A framework whose CPU package is a common
    choice beside GPU work (compat/rules.toml `cpu_build_beside_gpu`: ONNX Runtime's `onnxruntime`, which other
    packages require) is information where its environment holds another framework's GPU build: that environment
    is set up for the GPU, and this build was chosen or pulled in for CPU work; nothing fails for it."""
    cpu_only = [f for f in report.frameworks if f.details.get("cpu_only")]
    if not cpu_only:
        return []
    from cudnn_doctor.knowledge import frameworks as knowledge

    findings = []
    for framework in cpu_only:
        name = knowledge.canonical_name(framework.name) or framework.name
        made = finding("CD406", subject=framework.location, framework=_name(framework),
                       framework_version=framework.version, name=name)
        beside = _gpu_build_beside(report, framework)
        if beside is not None and knowledge.profile(name).get("cpu_build_beside_gpu") == "info":
            made = replace(made, severity="info", refs=(str(knowledge.profile(name).get("cpu_build_source", "")),),
                           detail=f"{made.detail} Beside {_name(beside)} {beside.version} (a CUDA build) in the same "
                                  f"environment it is taken as chosen for CPU work; if {_name(framework)} should "
                                  f"use the GPU, its GPU build is the step (`cudnn-doctor compat "
                                  f"{name}=={framework.version}` lists it).")
        findings.append(made)
    return findings


def _gpu_build_beside(report: Report, framework: Framework) -> Framework | None:
    """Another framework of FRAMEWORK's site-packages (the folder of its dist-info) that is a CUDA build."""
    folder = os.path.dirname(framework.location or "")
    return next((f for f in report.frameworks if f is not framework and f.location and folder
                 and os.path.dirname(f.location) == folder and not f.details.get("cpu_only")
                 and not f.details.get("assumed") and f.cuda_built_for), None)


def built_for_newer_cuda_than_driver(report: Report) -> list[Finding]:
    driver_cuda = major_minor(report.driver.cuda_driver_version)
    if driver_cuda is None:
        return []
    findings = []
    for framework in report.frameworks:
        built = major_minor(framework.cuda_built_for)
        if built is None or framework.name == "dl4j" or built[0] <= driver_cuda[0]:
            continue  # same major: minor-version compatibility runs it
        from cudnn_doctor.knowledge import query

        need = query.toolkit_min_driver(framework.cuda_built_for or "", driver_os(report))
        findings.append(finding(
            "CD403", subject=framework.location, refs=(need.source,) if need else (),
            framework=_name(framework), framework_version=framework.version, cuda=framework.cuda_built_for,
            driver_cuda=report.driver.cuda_driver_version, min_driver=need.version if need else "a newer one"))
    return findings


def cudnn_of_each_framework(report: Report) -> list[Finding]:
    """Will each framework find a cuDNN, and one it accepts?"""
    if not report.frameworks:
        return []
    from cudnn_doctor.knowledge import frameworks as knowledge

    findings = []
    for framework in report.frameworks:
        if framework.details.get("cpu_only") or framework.name == "dl4j":
            continue
        if framework.name == "theano" and not _theano_uses_gpu(framework):
            continue
        if framework.details.get("uses_cudnn") is False:
            continue  # e.g. TensorRT 10, CuPy 14: compat/ says it loads no cuDNN
        used = _install_used(report, framework)
        if used is None:
            expected = framework.cudnn_expected or _expected_from_requirement(framework) or "a cuDNN"
            findings.append(finding("CD401", subject=framework.location, framework=_name(framework),
                                    framework_version=framework.version, expected=expected,
                                    name=knowledge.canonical_name(framework.name) or framework.name,
                                    found="no cuDNN that it loads was found (its pip wheel is missing and none is on "
                                          "the loader's path)"))
            continue
        load = _seen_load(report, framework)
        # the release the mapped copy answered in that child is the one the framework's own check meets
        answered = replace(used, version=load.version) if load is not None and load.version else used
        verdict = _judge_used_cudnn(framework, answered)
        if verdict is not None and verdict.verdict == knowledge.INCOMPATIBLE:
            findings.append(finding(
                "CD408", subject=used.library, refs=(verdict.source,), framework=_name(framework),
                evidence="rule" if load is not None else "read", proof=_mapping(framework, load),
                framework_version=framework.version, expected=framework.cudnn_expected or verdict.why,
                found=f"{answered.version} at {used.library}: {verdict.why}",
                name=knowledge.canonical_name(framework.name) or framework.name, used_path=used.path))
        system = next((i for i in report.cudnn if "ld.so" in i.loaded_by and i.major == used.major), None)
        if system is not None and system.library != used.library:
            findings.append(finding("CD402", subject=used.library, framework=_name(framework),
                                    framework_version=framework.version, used_version=used.version,
                                    used_path=used.path, system_version=system.version, system_path=system.path))
    return findings


def _seen_load(report: Report, framework: Framework) -> ObservedLoad | None:
    """The load that shows FRAMEWORK maps the copy its cuDNN findings name: a child with this environment that ran
    its own loading code mapped it (probes/collect.seen_frameworks made that copy its cudnn_used). None where the
    copy is the doctor's model of the loader (the files' search order, a framework no child runs): a rule about a
    copy only read to be the one it loads stands on read evidence (issue 45, round twenty-one's audit)."""
    view = report.process
    return next((load for load in view.loads if load.user == framework.name and load.front), None) \
        if view is not None else None


def _mapping(framework: Framework, load: ObservedLoad | None) -> str | None:
    if load is None:
        return None
    how = f" ({load.recipe})" if load.recipe else ""
    answered = f", which answered cuDNN {load.version}" if load.version else ""
    return f"a child started with this environment ran {_name(framework)}'s own loading code{how} and mapped " \
           f"{load.front}{answered}"


def _expected_from_requirement(framework: Framework) -> str | None:
    """"<10.0,>=9.8" -> "9.8 or a newer 9.x (it requires nvidia-cudnn-cu12<10.0,>=9.8)"."""
    requirement = str(framework.details.get("cudnn_requirement") or "")
    floor = re.search(r">=\s*(\d+(?:\.\d+)?)", requirement)
    if not floor:
        return None
    package = framework.details.get("cudnn_package") or "nvidia-cudnn"
    return f"{floor.group(1)} or a newer {floor.group(1).split('.')[0]}.x (it requires {package}{requirement})"


def _theano_uses_gpu(framework: Framework) -> bool:
    flags = framework.details.get("theano_flags") or {}
    device = str(flags.get("device", "")) if isinstance(flags, dict) else ""
    return device.startswith(("cuda", "gpu"))


def judge_cudnn_version(framework: Framework, version: str) -> knowledge.Reason | None:
    """FRAMEWORK's verdict on loading cuDNN VERSION (its own pin or compiled version, else its compat/ rows)."""
    return _judge_used_cudnn(framework, CudnnInstall(path="", library="", major=None, version=version,
                                                     header_version=None, header_path=None, cuda_version=None,
                                                     sublibraries={}, sublibrary_versions={}, source=""))


def _judge_used_cudnn(framework: Framework, used: CudnnInstall) -> knowledge.Reason | None:
    from cudnn_doctor.knowledge import frameworks as knowledge
    from cudnn_doctor.knowledge import verdicts

    if used.version is None:
        return None
    name = knowledge.canonical_name(framework.name)
    if name is None:
        return None
    where = f"{framework.location} (the cuDNN this build pins or was compiled with)"
    if framework.cudnn_expected and ascii_digits(framework.cudnn_expected[:1]):
        # built with (or pinned to exactly) this cuDNN: the framework's own runtime rule decides
        need = knowledge.Needs(name, framework.version or "?", [{"cudnn": framework.cudnn_expected,
                                                                "cuda": framework.cuda_built_for, "source": where}])
        return verdicts.judge_cudnn(need, need.rows, used.version)
    if framework.details.get("cudnn_requirement"):
        pinned = {"cudnn_requirement": framework.details["cudnn_requirement"], "cuda": framework.cuda_built_for,
                  "cudnn_package": framework.details.get("cudnn_package"), "source": where}
        if str(pinned["cudnn_requirement"])[:1] in "<>=!~":
            need = knowledge.Needs(name, framework.version or "?", [pinned])
            return verdicts.judge_cudnn(need, need.rows, used.version)
    if framework.version:
        need = knowledge.needs(name, framework.version)
        if need.rows and need.missing is None:
            return verdicts.judge_cudnn(need, knowledge.rows_for_cuda(need, framework.cuda_built_for), used.version)
    return None


def gpu_compute_capability(report: Report) -> list[Finding]:
    """Each GPU against the framework build's architectures, its GPU floor and cuDNN's support matrix."""
    if not report.frameworks:
        return []
    from cudnn_doctor.knowledge import frameworks as knowledge
    from cudnn_doctor.knowledge import verdicts

    findings = []
    for framework in report.frameworks:
        name = knowledge.canonical_name(framework.name)
        if name is None or name == "dl4j" or not framework.version or framework.details.get("cpu_only"):
            continue
        need = knowledge.needs(name, framework.version)
        if not need.rows or need.missing is not None:
            continue
        used = _install_used(report, framework)
        rows = knowledge.rows_for_cuda(need, framework.cuda_built_for)
        for gpu in report.gpus:
            if not gpu.compute_capability:
                continue
            reason = verdicts.judge_compute_capability(need, rows, gpu.compute_capability,
                                                      used.version if used else None)
            if reason.verdict == knowledge.INCOMPATIBLE:
                findings.append(finding(
                    "CD404", subject=framework.location, refs=(reason.source,), framework=_name(framework),
                    framework_version=framework.version, cuda=framework.cuda_built_for,
                    supported=_supported(rows, reason), gpu=f"{gpu.index} ({gpu.name})",
                    cc=gpu.compute_capability, name=name))
    return findings


def _supported(rows: list[dict[str, object]], reason: knowledge.Reason) -> str:
    """"sm_50 to sm_90 (no PTX)" from the build's architecture list, else the reason's own words."""
    arch = next((row for row in rows if row.get("arch_list")), None)
    if arch is None or "architecture" not in reason.why and "kernels" not in reason.why:
        return f"other than this GPU's ({reason.why})"
    archs = [str(a) for a in arch["arch_list"]]  # type: ignore[attr-defined]
    ptx = str(arch.get("ptx", "unknown"))
    tail = {"none": " (no PTX)", "unknown": ""}.get(ptx, f" (PTX for {ptx})")
    return f"sm_{archs[0].replace('.', '')} to sm_{archs[-1].replace('.', '')}{tail}"


def unknown_compatibility(report: Report) -> list[Finding]:
    if not report.frameworks:
        return []
    from cudnn_doctor.knowledge import frameworks as knowledge

    findings = []
    for framework in report.frameworks:
        name = knowledge.canonical_name(framework.name)
        if name is None or not framework.version or framework.details.get("cpu_only"):
            continue
        if name == "dl4j" or framework.details.get("cudnn_requirement"):
            continue  # DL4J is judged in rules/dl4j.py; a wheel's own cuDNN pin is judged as it is
        need = knowledge.needs(name, framework.version)
        if need.missing is not None and need.missing.part == "release":
            findings.append(finding("CD407", subject=framework.location, framework=_name(framework),
                                    framework_version=framework.version, why=need.missing.why))
    return findings


def unreadable_config_files(report: Report) -> list[Finding]:
    return [finding("CD440", subject=path, path=path, why=why) for path, why in report.unreadable_files]


def cuda_of_each_framework(report: Report) -> list[Finding]:
    """CD410: a framework that loads the machine's CUDA runtime (TensorFlow, not PyTorch's wheels, which carry
    their own) where no CUDA here is one its build runs on: the verdict `compat NAME==VER --cuda X` gives."""
    if not report.frameworks:
        return []
    from cudnn_doctor.knowledge import frameworks as knowledge
    from cudnn_doctor.knowledge import verdicts

    findings = []
    cudas = [t for t in report.toolkits if t.version]
    for framework in report.frameworks:
        name = knowledge.canonical_name(framework.name)
        if (name is None or framework.name == "dl4j" or framework.details.get("cpu_only") or not cudas
                or not framework.cuda_built_for or knowledge.profile(name).get("cuda_rule") == "bundled"):
            continue
        need = knowledge.needs(name, (framework.version or "").split("+")[0])
        if need.missing is not None or not need.rows:
            continue
        reasons = [verdicts.judge(need, knowledge.Combination(cuda=t.version, os=report.host.os))[1][0] for t in cudas]
        if any(v.verdict != knowledge.INCOMPATIBLE for v in reasons):
            continue
        found = ", ".join(f"CUDA {t.version} ({t.path})" for t in cudas)
        # which CUDA runtime it loads is the doctor's model (the toolkits found on disk, no child runs it): read
        findings.append(finding("CD410", subject=framework.location or framework.name, refs=(reasons[0].source,),
                                evidence="read",
                                what=f"{_name(framework)} {framework.version}", built=f"CUDA {framework.cuda_built_for}",
                                found=found, framework=_name(framework), framework_version=framework.version,
                                cuda=framework.cuda_built_for, why=reasons[0].why))
    return findings


RULES = (unreadable_config_files, cpu_only_builds, built_for_newer_cuda_than_driver, cudnn_of_each_framework,
         cuda_of_each_framework, gpu_compute_capability, unknown_compatibility)
