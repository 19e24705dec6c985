"""CD401, CD405-CD408, CD430-CD439: Deeplearning4j projects against this machine's CUDA, cuDNN and GPUs.

Pure functions of the report and compat/dl4j.toml. A module can hold several ND4J backends; ND4J
loads one (compat/dl4j.toml rules.backend_selection), so only that one is judged for CUDA and cuDNN.
"""

from __future__ import annotations

from typing import Any

from cudnn_doctor.codes import finding
from cudnn_doctor.knowledge.data import load
from cudnn_doctor.model import Finding, Framework, Report
from cudnn_doctor.quoting import code_span, command_line
from cudnn_doctor.versions import major, major_minor, matches_prefix, version_tuple

NAME = "Deeplearning4j"


def _dl4j(report: Report) -> list[Framework]:
    return [f for f in report.frameworks if f.name == "dl4j" and f.details.get("project")]


def _rule(key: str) -> tuple[str, tuple[str, ...]]:
    from cudnn_doctor.knowledge import frameworks as knowledge

    rules = knowledge.rules("dl4j")
    source = rules.get(f"{key}_source")
    return str(rules.get(key, "")), (str(source),) if source else ()


def _where(framework: Framework) -> str:
    modules = [m for m in framework.details.get("modules", []) if m]
    root = str(framework.details.get("project", ""))
    if not modules or modules == ["."]:
        return f"the project at {root}"
    named = ", ".join(m if m != "." else "(root)" for m in modules[:3])
    more = f" and {len(modules) - 3} more" if len(modules) > 3 else ""
    return f"{'module' if len(modules) == 1 else 'modules'} {named}{more} of {root}"


def _in_use(framework: Framework) -> bool:
    profile = framework.details.get("profile")
    if framework.details.get("only_in_profile"):
        return False
    return not (isinstance(profile, dict) and not profile.get("active"))


def _toolkits_for(report: Report, cuda: str | None) -> list[str]:
    return [t.path for t in report.toolkits if cuda and major_minor(t.version) == major_minor(cuda)]


def winners(report: Report) -> tuple[list[Framework], list[Finding]]:
    """The backend ND4J loads in each module, and a CD435 where a module has several."""
    chosen: list[Framework] = []
    findings: list[Finding] = []
    groups: dict[tuple[Any, ...], list[Framework]] = {}
    for framework in _dl4j(report):
        if not _in_use(framework) or framework.details.get("backend") not in ("cuda", "cpu"):
            continue
        key = (framework.details.get("project"), tuple(framework.details.get("modules", [])),
               tuple(framework.details.get("module_backends", [])))
        groups.setdefault(key, []).append(framework)
    if not groups:
        return chosen, findings
    text, source = _rule("backend_selection")
    for (_project, _modules, order), members in groups.items():
        if len(members) == 1:
            chosen.append(members[0])
            continue
        ranked = sorted(members, key=lambda f: (f.details.get("backend") != "cuda", order.index(
            f.details.get("artifact")) if f.details.get("artifact") in order else len(order)))
        loadable = [f for f in ranked if f.details.get("backend") == "cpu" or _toolkits_for(report, f.cuda_built_for)]
        if loadable:
            winner = loadable[0]
            skipped = [f for f in ranked[: ranked.index(winner)]]
            why = (f"{winner.details.get('artifact')}" + (
                f", because CUDA {', '.join(str(f.cuda_built_for) for f in skipped)} is not installed here"
                if skipped else " (CUDA before CPU, then classpath order)"))
        else:
            winner = ranked[0]
            why = (f"none of the CUDA backends can load (no CUDA {', '.join(str(f.cuda_built_for) for f in ranked)}"
                   f" toolkit here), so ND4J fails to start")
        chosen.append(winner)
        findings.append(finding("CD435", subject=winner.location, refs=source, where=_where(winner),
                                backends=", ".join(order), winner=why))
    return chosen, findings


def several_backends(report: Report) -> list[Finding]:
    return winners(report)[1]


def project_problems(report: Report) -> list[Finding]:
    findings: list[Finding] = []
    seen: set[tuple[str, str]] = set()
    for framework in _dl4j(report):
        for problem in framework.details.get("problems", []):
            key = (problem["path"], problem["why"])
            if key in seen:
                continue
            seen.add(key)
            if problem["kind"] in ("property", "parent", "limit"):
                code = {"property": "CD431", "parent": "CD438", "limit": "CD439"}[problem["kind"]]
                findings.append(finding(code, subject=problem["path"], path=problem["path"], why=problem["why"]))
                continue
            fix = ("Point --project at each of them (cudnn-doctor check --project FOLDER), or at a folder that holds "
                   "fewer projects." if problem["kind"] == "subprojects" else
                   "Remove the DOCTYPE and entity declarations: a pom needs none, and the doctor does not expand them."
                   if problem["kind"] == "refused" else
                   "Restore the module's folder, or take it out of <modules>; Maven stops on it too."
                   if problem["kind"] == "missing-module" else

                   "Make it a regular, readable file; a pom must be well-formed XML in the encoding its XML "
                   "declaration names (UTF-8 when it names none).")
            findings.append(finding("CD430", subject=problem["path"], path=problem["path"], why=problem["why"], fix=fix))
    return findings


def _cuda_artifacts_here(report: Report, version: str | None) -> list[str]:
    """The nd4j-cuda-X.Y of VERSION that match an installed toolkit (else every one of VERSION)."""
    from cudnn_doctor.knowledge import frameworks as knowledge

    rows = knowledge.needs("dl4j", version or "").rows
    artifacts = [str(r["artifact"]) for r in rows if r.get("artifact", "unknown") != "unknown"]
    here = [a for a in artifacts if any(major_minor(t.version) == major_minor(a.rsplit("-", 1)[-1])
                                        for t in report.toolkits)]
    return here or artifacts


def _cudnn_fix(cudnn: str, cuda: str) -> str:
    """Where the cuDNN series CUDNN for CUDA CUDA comes from: `cudnn-doctor install` of the newest release of that series
    in compat/ where NVIDIA's redistributable manifests have it (8.3.1 on), else NVIDIA's archive page."""
    from cudnn_doctor.knowledge.releases import existing_release

    release = existing_release(cudnn)
    where = (f"`cudnn-doctor install --version {release} --cuda {major(cuda)} --prefix /usr/local/cuda`"
             if (version_tuple(release) or ()) >= (8, 3, 1) else
             f"download cuDNN {release} for CUDA {cuda} from NVIDIA's cuDNN archive (https://developer.nvidia.com/"
             "cudnn-archive) and install it with `cudnn-doctor install --prefix /usr/local/cuda --from` and that file")
    return (f"Install cuDNN {release} for CUDA {cuda} next to the CUDA libraries (/usr/local/cuda/lib64), as the DL4J "
            f"docs say: {where}; or add org.bytedeco:cuda-platform-redist, which bundles it")


def cpu_backend(report: Report) -> list[Finding]:
    cpu = [f for f in _dl4j(report) if f.details.get("backend") == "cpu" and _in_use(f)]
    if not cpu:
        return []
    fix, refs = _rule("cpu_backend_fix")
    findings = []
    for framework in cpu:
        artifacts = _cuda_artifacts_here(report, framework.version)
        suggestion = f" For DL4J {framework.version}: {', '.join(a + '-platform' for a in artifacts)}." if artifacts else ""
        findings.append(finding(
            "CD406", subject=framework.location, refs=refs, framework=NAME,
            framework_version=f"{framework.version or '(version unread)'} (CPU backend "
                              f"{framework.details.get('artifact')}: will not use the GPU or cuDNN; {_where(framework)})",
            fix=fix + suggestion))
    return findings


def no_backend(report: Report) -> list[Finding]:
    findings = []
    for framework in _dl4j(report):
        if framework.details.get("backend") != "none":
            continue
        toolkits = [t for t in report.toolkits if t.version]
        suggestion = (f"nd4j-cuda-{'.'.join(str(toolkits[0].version).split('.')[:2])}-platform" if toolkits
                      else "nd4j-native-platform")
        findings.append(finding("CD437", subject=framework.location, where=_where(framework),
                                artifacts=", ".join(framework.details.get("dl4j_artifacts", [])),
                                version=framework.version or "", suggestion=suggestion))
    return findings


def profile_modules(report: Report) -> list[Finding]:
    findings = []
    for framework in _dl4j(report):
        profile = framework.details.get("profile")
        if not isinstance(profile, dict):
            continue
        active = bool(profile.get("active"))
        fix = (f"Nothing to do if that is intended; {code_span(command_line(('mvn', '-P', '!' + str(profile['id']))))}"
               " leaves it out." if active else
               f"Build with {code_span(command_line(('mvn', '-P', str(profile['id']))))} to use it.")
        findings.append(finding("CD436", subject=framework.location, where=_where(framework), profile=profile["id"],
                                activation=profile.get("activation"), state="active" if active else "not active",
                                backend=framework.details.get("artifact") or "(none)", fix=fix))
    return findings


def _route(version: str | None) -> dict[str, Any] | None:
    base = (version or "").removesuffix("-SNAPSHOT")
    rows = list(load("dl4j").get("cudnn_route", []))
    return next((row for row in rows if base in row.get("releases", [])), None)


def _os_classifier(report: Report) -> str:
    system = {"linux": "linux", "windows": "windows", "darwin": "macosx"}.get(report.host.os, report.host.os)
    arch = {"aarch64": "arm64", "amd64": "x86_64", "ppc64le": "ppc64le"}.get(report.host.arch.lower(),
                                                                           report.host.arch.lower())
    return f"{system}-{arch}"


def _uses_cudnn(framework: Framework) -> tuple[bool, str]:
    """Whether the module has the artifact that makes DL4J call cuDNN, and if not, what is missing."""
    cuda = framework.cuda_built_for
    helpers = [str(h) for h in framework.details.get("cudnn_helpers", [])]
    classifiers = [str(c) for c in framework.details.get("classifiers", [])]
    if cuda in helpers or any(c.endswith("-cudnn") for c in classifiers):
        return True, ""
    route = _route(framework.version)
    wanted = []
    if route is None or route.get("helper"):
        wanted.append(f"org.deeplearning4j:deeplearning4j-cuda-{cuda}")
    if route is None or route.get("classifier"):
        wanted.append(f"the {framework.details.get('artifact')} classifier <os>-cudnn")
    missing = f"it has no {' nor '.join(wanted)}"
    if helpers:
        missing += f" (its deeplearning4j-cuda-{', '.join(helpers)} is for another CUDA than the backend's)"
    return False, missing


def cudnn_of_backend(report: Report) -> list[Finding]:
    """The chosen CUDA backend: does it use cuDNN, which does it need, and does this machine have it."""
    findings: list[Finding] = []
    chosen = winners(report)[0]
    if not chosen:
        return findings
    # the frameworks' knowledge is loaded only where a project has a backend to judge
    from cudnn_doctor.knowledge import frameworks as knowledge

    for framework in chosen:
        if framework.details.get("backend") != "cuda":
            continue
        artifact = str(framework.details.get("artifact"))
        version = framework.version
        cuda = framework.cuda_built_for
        need = knowledge.needs("dl4j", version or "", artifact=artifact)
        row = need.rows[0] if need.rows else None
        refs = (str(row["source"]),) if row else ()
        cudnn = framework.cudnn_expected
        if not _toolkits_for(report, cuda):
            have = ", ".join(f"{t.version} ({t.path})" for t in report.toolkits) or "no CUDA toolkit was found"
            releases = [str(r["artifact"]) for r in knowledge.needs("dl4j", version or "").rows
                        if r.get("artifact", "unknown") != "unknown"]
            matching = [a for a in releases if any(major_minor(t.version) == major_minor(a.rsplit("-", 1)[-1])
                                                   for t in report.toolkits)]
            installed = ", ".join(sorted({".".join(str(t.version).split(".")[:2]) for t in report.toolkits
                                          if t.version})) or "none"
            suggestion = (", ".join(matching) if matching else
                          f"DL4J {version} has {', '.join(releases)}; none is for the CUDA installed here ({installed})"
                          if releases else "see `cudnn-doctor compat --list dl4j`")
            # a Java project's backend: which CUDA and cuDNN its JavaCPP presets load is the doctor's model of the
            # loader (no child runs the JVM), read evidence: a warning (round twenty-one's audit)
            findings.append(finding("CD405", subject=framework.location, refs=refs, artifact=artifact, evidence="read",
                                    framework_version=version, cuda=cuda,
                                    cudnn_part=f" and cuDNN {cudnn}" if cudnn else "",
                                    found=f"this machine has {have}", suggestion=suggestion))
        if row is None:
            why = (f"no row for {artifact} {version} in compat/dl4j.toml, so its cuDNN is not known" if version
                   else f"{artifact} has no version in {framework.location}: neither the dependency nor a "
                        f"<dependencyManagement> entry for it gives one (Maven stops on that too)")
            findings.append(finding("CD407", subject=framework.location, framework=NAME, framework_version=version,
                                    why=why))
            continue
        uses, missing = _uses_cudnn(framework)
        if not uses:
            route = _route(version)
            adds = []
            if route is None or route.get("classifier"):
                adds.append(f"org.nd4j:{artifact.removesuffix('-platform')}:{version} once more, with "
                            f"<classifier>{_os_classifier(report)}-cudnn</classifier>")
            if route is None or route.get("helper"):
                adds.append(f"org.deeplearning4j:deeplearning4j-cuda-{cuda}:{version}")
            fix = " or ".join(adds) + (f" (and install cuDNN {cudnn} for CUDA {cuda})" if cudnn else "")
            route_refs = (str(route["source"]),) if route else ()
            findings.append(finding("CD432", subject=framework.location, refs=route_refs, where=_where(framework),
                                    backend=artifact, version=version, cuda=cuda, missing=missing, fix=fix))
            continue
        if cudnn is None:
            findings.append(finding("CD407", subject=framework.location, framework=NAME,
                                    framework_version=f"{version} ({artifact})",
                                    why="compat/dl4j.toml does not say which cuDNN this backend needs"))
            continue
        if framework.details.get("redist"):
            continue  # JavaCPP's cuda-platform-redist brings its own cuDNN
        fix = _cudnn_fix(str(cudnn), str(cuda))
        if framework.cudnn_used is None:
            others = ", ".join(sorted({f"{i.version} ({i.library})" for i in report.cudnn if i.version}))
            findings.append(finding(
                "CD401", subject=framework.location, refs=refs, framework=NAME,
                framework_version=f"{version} ({artifact}, {_where(framework)})", expected=cudnn,
                found=f"no libcudnn.so.{str(cudnn).split('.')[0]} is on the loader's path or in /usr/local/cuda/lib64"
                      + (f"; this machine has cuDNN {others}" if others else ""),
                fix=fix))
            continue
        used = next((i for i in report.cudnn if framework.cudnn_used in (i.library, i.real_library)), None)
        if used is not None and used.version and not matches_prefix(used.version, str(cudnn)):
            findings.append(finding(
                "CD408", subject=framework.location, refs=refs, framework=NAME, evidence="read",
                framework_version=f"{version} ({artifact})", expected=cudnn,
                found=f"{used.version} at {used.library}", fix=fix))
    return findings


def graves_lstm(report: Report) -> list[Finding]:
    chosen = winners(report)[0]
    if not chosen:
        return []
    _text, refs = _rule("graves_lstm")
    findings = []
    for framework in chosen:
        places = framework.details.get("graves_lstm") or []
        if framework.details.get("backend") != "cuda" or not places:
            continue
        where = str(places[0]) + (f" (and {len(places) - 1} more places)" if len(places) > 1 else "")
        findings.append(finding("CD433", subject=str(places[0]), refs=refs, where=where,
                                backend=framework.details.get("artifact")))
    return findings


def multi_gpu(report: Report) -> list[Finding]:
    if len(report.gpus) < 2:
        return []
    alone = [f for f in winners(report)[0] if f.details.get("backend") == "cuda" and not f.details.get("allow_multi_gpu")]
    if not alone:
        return []
    _text, refs = _rule("multi_gpu")
    return [finding("CD434", subject=f.location, refs=refs, count=len(report.gpus), where=_where(f),
                    backend=f.details.get("artifact")) for f in alone]


RULES = (project_problems, cpu_backend, no_backend, profile_modules, several_backends, cudnn_of_backend,
         graves_lstm, multi_gpu)
