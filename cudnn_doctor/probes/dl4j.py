"""Deeplearning4j in a Maven or Gradle project: the ND4J backend each module uses, and how it reaches cuDNN.

The project is read as its build tool would (cudnn_doctor.probes.maven, .gradle), then each module's
dependencies are sorted into what matters for CUDA and cuDNN (compat/dl4j.toml says which artifact
brings cuDNN in which release):
- the ND4J backend: `nd4j-native[-platform]` (CPU), `nd4j-cuda-X.Y[-platform]` (CUDA X.Y; `nd4j-jcublas-X.Y`
  before 0.4), with its classifiers (`linux-x86_64-cudnn` brings cuDNN from 1.0.0-M1);
- the cuDNN helpers `org.deeplearning4j:deeplearning4j-cuda-X.Y` (0.9.x to 1.0.0-M1.1);
- JavaCPP's `cuda-platform-redist` (CUDA and cuDNN bundled);
- in the Java/Kotlin sources of a module on a CUDA backend: `GravesLSTM` layers (no cuDNN) and
  `allowMultiGPU(true)`.
Modules that use the same backend the same way are one Framework record with every module named.
Nothing is judged here: the rules (cudnn_doctor.rules.dl4j) decide what is wrong.
"""

from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cudnn_doctor.model import Framework
from cudnn_doctor.probes.context import SearchContext, absolute_path, working_folder
from cudnn_doctor.probes.gradle import has_gradle_build, read_gradle_project
from cudnn_doctor.probes.jvm_build import (
    MAX_SCRIPT_FILE,
    BuildModule,
    BuildProject,
    Dependency,
    Profile,
    UnreadableFile,
    decode_text,
    read_project_file,
    tokens,
)
from cudnn_doctor.probes.maven import read_maven_project
from cudnn_doctor.probes.project_folders import SUBPROJECT_COUNT, SUBPROJECT_FOLDERS, find_subprojects, has_build_file

CUDA_BACKEND = re.compile(r"^nd4j-(?:cuda|jcublas)-(\d+\.\d+)(?:-platform|-preset)?$")
CPU_BACKEND = re.compile(r"^nd4j-(?:native|x86)(?:-platform)?$")
CUDNN_HELPER = re.compile(r"^deeplearning4j-cuda-(\d+\.\d+)$")
REDIST_VERSION = re.compile(r"^(\d+\.\d+)(?:\.\d+)?-(\d+(?:\.\d+)*)-")
DL4J_GROUPS = ("org.deeplearning4j", "org.nd4j", "org.datavec", "org.eclipse.deeplearning4j")
MAX_SOURCE_FILES = 4000
SOURCE_SUFFIXES = (".java", ".kt")


@dataclass(frozen=True)
class _Backend:
    kind: str  # "cuda" | "cpu"
    artifact: str
    version: str | None
    cuda: str | None
    classifiers: tuple[str, ...]




BUILD_FILE_NAMES = ("pom.xml", "build.gradle", "build.gradle.kts")
MAX_BACKEND_LINES = 4


def backend_lines(files: list[str], artifact: str) -> list[dict[str, Any]]:
    """Where ARTIFACT (nd4j-native-platform) is written as a value in FILES, outside comments: the lines a switch
    of the backend edits ({file, line, text}); the project's own files, read bounded."""
    from cudnn_doctor.user_files import UnreadableFile, read_user_file

    value = re.compile(r"(>\s*|['\":])" + re.escape(artifact) + r"(\s*<|['\":])")
    found: list[dict[str, Any]] = []
    for path in dict.fromkeys(files):
        try:  # its very bytes (a diff of the line must match them: ISO-8859-1, CRLF), a byte not UTF-8 kept as a surrogate
            text = read_user_file(path, 1 << 20).decode("utf-8", "surrogateescape")
        except UnreadableFile:
            continue
        in_comment = False
        lines = text.split("\n")
        for number, line in enumerate(lines, 1):  # as patch counts lines: at LF only (a CR-only file is one line)
            visible, in_comment = _outside_comments(line, in_comment)
            if value.search(visible):
                last = number == len(lines)  # no LF after it: "\\ No newline at end of file" in the diff
                eol = ("\r" if line.endswith("\r") else "") + ("" if last else "\n")
                # "real": where the bytes are, which the diff names (patch refuses to patch through a symbolic link)
                found.append({"file": path, "real": os.path.realpath(path), "line": number,
                              "text": line.removesuffix("\r"), "eol": eol})
                if len(found) >= MAX_BACKEND_LINES:
                    return found
    return found


def _outside_comments(line: str, in_comment: bool) -> tuple[str, bool]:
    """LINE without its XML (<!-- -->) and // comments, and whether a comment goes on past it."""
    out, rest = "", line
    while rest:
        if in_comment:
            end = rest.find("-->")
            if end < 0:
                return out, True
            rest, in_comment = rest[end + 3:], False
        else:
            start = rest.find("<!--")
            if start < 0:
                out += rest.split("//")[0] if "://" not in rest else rest
                break
            out, rest, in_comment = out + rest[:start], rest[start + 4:], True
    return out, in_comment


def detect_dl4j(ctx: SearchContext, project_dir: str | None) -> list[Framework]:
    """DL4J in the project at PROJECT_DIR (default: the working folder), else the backends in ~/.m2.

    A PROJECT_DIR given (--project) without a build file of its own is a folder of projects: those found in
    its subfolders are read, within bounds, and the ones left unread are named (CD430)."""
    root = absolute_path(project_dir, ctx.cwd or working_folder(), "--project") if project_dir is not None \
        else working_folder()
    roots = [root] if root is not None else []
    found: list[Framework] = []
    if root is not None and project_dir is not None and not has_build_file(root):
        roots, beyond, cut = find_subprojects(root)
        if beyond or cut:
            found.append(_unread_projects(root, beyond, cut))
    projects: list[BuildProject] = []
    for folder in roots:
        if os.path.lexists(os.path.join(folder, "pom.xml")):
            projects.append(read_maven_project(folder, ctx.env))
        if has_gradle_build(folder):
            projects.append(read_gradle_project(folder, ctx.env))
    for project in projects:
        found += _project_frameworks(project, ctx)
    if not projects:
        found += _local_maven_repository(Path(ctx.env.get("HOME", "")) / ".m2" / "repository" / "org" / "nd4j")
    return found


def _unread_projects(root: str, beyond: list[str], cut: bool) -> Framework:
    """The projects under ROOT that were found but not read, as a problem that the rules turn into CD430."""
    shown = ", ".join(os.path.relpath(path, root) for path in beyond[:5]) + (" ..." if len(beyond) > 5 else "")
    why = (f"{len(beyond)} more project(s) found in its subfolders than the {SUBPROJECT_COUNT} read ({shown})"
           if beyond else "")
    if cut:
        why += ("; " if why else "") + (f"more than {SUBPROJECT_FOLDERS} subfolders: the search for projects stopped "
                                        "there, so some may not have been seen")
    problem = {"path": root, "why": why, "kind": "subprojects"}
    return Framework(name="dl4j", version=None, cuda_built_for=None, cudnn_expected=None, cudnn_used=None,
                     found_via="subfolders", location=root,
                     details={"backend": "unknown", "artifact": None, "project": root, "tool": None, "modules": [],
                              "problems": [problem], "unread": True, "projects_not_read": beyond})


def _backends(dependencies: tuple[Dependency, ...] | list[Dependency]) -> list[_Backend]:
    """The ND4J backends among DEPENDENCIES, in classpath order; classifier jars join their backend."""
    found: dict[tuple[str, str | None], _Backend] = {}
    for dependency in dependencies:
        if dependency.group not in ("org.nd4j", ""):
            continue
        cuda = CUDA_BACKEND.match(dependency.artifact)
        cpu = CPU_BACKEND.match(dependency.artifact)
        if not cuda and not cpu:
            continue
        key = ("cuda", cuda.group(1)) if cuda else ("cpu", None)
        classifiers = (dependency.classifier,) if dependency.classifier else ()
        if key in found:
            old = found[key]
            found[key] = _Backend(old.kind, old.artifact, old.version or dependency.version, old.cuda,
                                  old.classifiers + tuple(c for c in classifiers if c not in old.classifiers))
        else:
            found[key] = _Backend(key[0], dependency.artifact, dependency.version, key[1], classifiers)
    return list(found.values())


def _redist(dependencies: tuple[Dependency, ...]) -> str | None:
    for dependency in dependencies:
        if dependency.group == "org.bytedeco" and (dependency.artifact == "cuda-platform-redist" or (
                dependency.artifact.startswith("cuda") and "redist" in (dependency.classifier or ""))):
            return dependency.version
    return None


def _module_records(module: BuildModule) -> list[dict[str, Any]]:
    """One record per backend the module uses (and per backend only an inactive profile adds)."""
    records: list[dict[str, Any]] = []
    helpers = sorted({m.group(1) for d in module.dependencies if (m := CUDNN_HELPER.match(d.artifact))})
    dl4j = [d for d in module.dependencies if d.group in DL4J_GROUPS]
    backends = _backends(module.dependencies)
    order = [b.artifact for b in backends]
    redist = _redist(module.dependencies)
    for backend in backends:
        records.append(_record(backend, module, helpers, redist, order, module.profile, True))
    by_profile: dict[str, list[Dependency]] = {}
    profiles: dict[str, Profile] = {}
    for profile, dependency in module.profile_dependencies:
        by_profile.setdefault(profile.id, []).append(dependency)
        profiles[profile.id] = profile
    for profile_id, extra in by_profile.items():
        for backend in _backends(extra):
            if backend.artifact not in order:
                records.append(_record(backend, module, helpers, redist, order + [backend.artifact],
                                       profiles[profile_id], False))
    uses_nd4j = [d for d in dl4j if not d.artifact.startswith("datavec-")]  # DataVec alone needs no backend
    if not backends and uses_nd4j and module.packaging != "pom":
        version = next((d.version for d in dl4j if d.version and "${" not in d.version), None)
        records.append({"version": version, "cuda": None, "artifact": None, "backend": "none",
                        "dl4j_artifacts": sorted({d.artifact for d in uses_nd4j})[:8], "classifiers": [],
                        "cudnn_helpers": helpers, "redist": redist, "module_backends": [],
                        "profile": _profile(module.profile), "module": module})
    return records


def _record(backend: _Backend, module: BuildModule, helpers: list[str], redist: str | None, order: list[str],
            profile: Profile | None, declared: bool) -> dict[str, Any]:
    version = backend.version if backend.version and "${" not in backend.version else None
    return {"version": version, "version_text": backend.version, "cuda": backend.cuda, "artifact": backend.artifact, "backend": backend.kind,
            "classifiers": list(backend.classifiers), "cudnn_helpers": helpers, "redist": redist,
            "module_backends": order, "profile": _profile(profile), "only_in_profile": not declared,
            "module": module}


def _profile(profile: Profile | None) -> dict[str, Any] | None:
    return {"id": profile.id, "activation": profile.activation, "active": profile.active} if profile else None


def _project_frameworks(project: BuildProject, ctx: SearchContext) -> list[Framework]:
    groups: dict[str, list[dict[str, Any]]] = {}
    for module in project.modules:
        for row in _module_records(module):
            key = repr({k: v for k, v in row.items() if k != "module"})
            groups.setdefault(key, []).append(row)
    problems = [{"path": p.path, "why": p.why, "kind": p.kind} for p in project.all_problems()]
    frameworks = []
    cache: dict[str, list[str]] | None = None
    budget = [MAX_SOURCE_FILES, 0]  # source files left to read; 1 once one more was left unread
    for records in groups.values():
        first = records[0]
        modules = [r["module"] for r in records]
        details: dict[str, Any] = {k: v for k, v in first.items() if k not in ("module", "version", "cuda")}
        details.update({"project": project.root, "tool": project.tool,
                        "modules": [m.name for m in modules], "problems": problems})
        expected = None
        used = None
        if first["backend"] == "cuda":
            details["graves_lstm"], details["allow_multi_gpu"] = _scan_sources(modules, budget)
            expected = _expected_cudnn(first["version"], first["artifact"])
            if expected and (first["cudnn_helpers"] or any(c.endswith("-cudnn") for c in first["classifiers"])):
                if cache is None:
                    from cudnn_doctor.probes.loader import ldconfig_cache

                    cache = ldconfig_cache(ctx)
                used = _javacpp_cudnn(expected, first["cuda"], ctx, cache)
        if first.get("artifact"):
            files = [m.build_file for m in modules] + [os.path.join(project.root, n) for n in BUILD_FILE_NAMES]
            details["backend_lines"] = backend_lines(files, str(first["artifact"]))
        frameworks.append(Framework(
            name="dl4j", version=first["version"], cuda_built_for=first["cuda"], cudnn_expected=expected,
            cudnn_used=used, found_via=os.path.basename(modules[0].build_file), location=modules[0].build_file,
            details=details))
    if budget[1]:  # the same list is in every framework's details
        problems.append({"path": project.root, "kind": "limit",
                         "why": f"its modules' source folders hold more than {MAX_SOURCE_FILES} source files; the doctor "
                                "read the first of them for GravesLSTM layers and allowMultiGPU"})
    if not frameworks and problems:  # nothing could be read: the problems still reach the report
        frameworks.append(Framework(
            name="dl4j", version=None, cuda_built_for=None, cudnn_expected=None, cudnn_used=None,
            found_via="pom.xml" if project.tool == "maven" else "build.gradle", location=problems[0]["path"],
            details={"backend": "unknown", "artifact": None, "project": project.root, "tool": project.tool,
                     "modules": [], "problems": problems, "unread": True}))
    return frameworks


def _expected_cudnn(version: str | None, artifact: str | None) -> str | None:
    """The cuDNN that compat/dl4j.toml gives for this release and backend, if it gives one."""
    if not version or not artifact:
        return None
    from cudnn_doctor.knowledge.frameworks import needs

    rows = needs("dl4j", version, artifact=artifact).rows
    cudnn = str(rows[0].get("cudnn", "unknown")) if rows else "unknown"
    return None if cudnn == "unknown" else cudnn


def _javacpp_cudnn(expected: str, cuda: str | None, ctx: SearchContext, cache: dict[str, list[str]]) -> str | None:
    """The libcudnn.so.N that JavaCPP's loader would open: the loader's own search, and the CUDA folders
    the DL4J docs tell users to put cuDNN in (/usr/local/cuda/lib64)."""
    from cudnn_doctor.probes.loader import resolve_like_loader

    major = expected.split(".")[0]
    folders = [ctx.system(f"/usr/local/cuda-{cuda}/lib64"), ctx.system("/usr/local/cuda/lib64")] if cuda else []
    return resolve_like_loader(f"libcudnn.so.{major}", folders, ctx, cache)


def _scan_sources(modules: list[BuildModule], budget: list[int]) -> tuple[list[str], list[str]]:
    """Where the sources build a GravesLSTM layer, and where they call allowMultiGPU(true)."""
    graves: list[str] = []
    multi_gpu: list[str] = []
    for module in modules:
        for folder in module.source_dirs:
            for path in _source_files(folder, budget):
                try:
                    data = read_project_file(path, MAX_SCRIPT_FILE)
                    if b"GravesLSTM" not in data and b"GravesBidirectionalLSTM" not in data and \
                            b"allowMultiGPU" not in data:
                        continue  # most sources: no need to tokenize them
                    found = tokens(decode_text(data))
                except UnreadableFile:
                    continue
                for i, token in enumerate(found[:-2]):
                    if token.kind != "name":
                        continue
                    after, then = found[i + 1].value, found[i + 2].value
                    if token.value in ("GravesLSTM", "GravesBidirectionalLSTM") and (
                            (after == "." and then == "Builder") or (i > 0 and found[i - 1].value == "new")):
                        graves.append(f"{path}:{token.line}")
                    elif token.value == "allowMultiGPU" and after == "(" and then == "true":
                        multi_gpu.append(f"{path}:{token.line}")
    return graves[:20], multi_gpu[:20]


def _source_files(folder: str, budget: list[int]) -> list[str]:
    files: list[str] = []
    for directory, subfolders, names in os.walk(folder, followlinks=False):
        subfolders.sort()
        for name in sorted(names):
            if not name.endswith(SOURCE_SUFFIXES):
                continue
            path = os.path.join(directory, name)
            try:
                if not stat.S_ISREG(os.lstat(path).st_mode):
                    continue
            except OSError:
                continue
            if budget[0] <= 0:
                budget[1] = 1
                return files
            budget[0] -= 1
            files.append(path)
    return files


# --- no project: what ~/.m2 holds ---------------------------------------------------------------

def _local_maven_repository(nd4j: Path) -> list[Framework]:
    """nd4j-cuda-X.Y backends downloaded into ~/.m2; an unreadable folder is simply not looked into."""
    found = []
    try:
        for folder in sorted(nd4j.glob("nd4j-cuda-*")):
            match = CUDA_BACKEND.match(folder.name)
            if match:
                for version_dir in sorted(p for p in folder.iterdir() if p.is_dir()):
                    found.append(Framework(
                        name="dl4j", version=version_dir.name, cuda_built_for=match.group(1), cudnn_expected=None,
                        cudnn_used=None, found_via="~/.m2", location=str(version_dir),
                        details={"artifact": folder.name, "backend": "cuda", "downloaded_only": True}))
    except OSError:
        pass
    return found
