"""The verdicts on a framework release's needs (knowledge/frameworks.py): whether a CUDA, cuDNN, driver and GPU
combination works, part by part, each reason carrying the source of the row that decided it; and what the GPU
support tables (compat/gpu_support.toml, the cuDNN support matrix) say about a compute capability."""

from __future__ import annotations

from typing import Any

from cudnn_doctor.knowledge import gpu_support, query
from cudnn_doctor.knowledge.data import load
from cudnn_doctor.knowledge.frameworks import (
    COMPATIBLE,
    INCOMPATIBLE,
    UNKNOWN,
    Combination,
    Needs,
    Reason,
    accepted_cudnn,
    default_rows,
    display,
    is_range,
    known_cuda_rows,
    minor_version_compatibility_from,
    minor_version_compatibility_source,
    newer_than_data,
    over_range,
    profile,
    rows_for_cuda,
)
from cudnn_doctor.versions import major, major_minor, matches_prefix, version_tuple

# --- the verdict --------------------------------------------------------------------------------

def judge(need: Needs, combo: Combination) -> tuple[str, list[Reason]]:
    """The verdict for NEED under COMBO, with a reason per part."""
    if need.missing is not None:
        return need.missing.verdict, [need.missing]
    exact_cuda = combo.cuda if combo.cuda and not is_range("cuda", combo.cuda) else None
    rows = rows_for_cuda(need, exact_cuda)
    if need.build_cuda is None and exact_cuda is None and profile(need.framework).get("cuda_rule") == "bundled":
        rows = default_rows(need)  # no build named: the one `pip install` gets
    reasons: list[Reason] = []
    if combo.cuda:
        cuda = combo.cuda
        reasons.append(over_range("cuda", cuda, lambda v: _judge_cuda(need, rows_for_cuda(need, v), v)))
    if combo.cudnn:
        reasons.append(over_range("cudnn", combo.cudnn, lambda v: judge_cudnn(need, rows, v)))
    if combo.driver:
        reasons.append(_judge_driver(need, rows, combo.driver, combo.os))
        if combo.compute_capability:  # the GPU generation's own driver floor, which the CUDA floor does not imply
            reasons += gpu_driver_reasons(combo.driver, combo.compute_capability, combo.os)
    if combo.compute_capability:
        cc = combo.compute_capability
        if combo.cudnn:
            reasons.append(over_range("cudnn", combo.cudnn, lambda v: judge_compute_capability(need, rows, cc, v)))
        else:
            found = judge_compute_capability(need, rows, cc, None)
            reasons.append(_newest_cudnn_drops(need, rows, cc, found) if found.verdict == COMPATIBLE else found)
    return overall(reasons), reasons


def _newest_cudnn_drops(need: Needs, rows: list[dict[str, Any]], cc: str, found: Reason) -> Reason:
    """No cuDNN named and a build asks for a range of them (jax-cuda12-plugin: nvidia-cudnn-cu12>=9.8,<10): pip
    installs the newest wheel in range (compat/cudnn.toml [[wheel]]). Where that release dropped the GPU
    (compat/gpu_support.toml) but an older one in range has not, it runs only with cuDNN pinned below the drop; where
    every release in range of every such build dropped it, it does not run."""
    from cudnn_doctor.specifiers import InvalidSpecifier, Specifiers

    pins: list[Reason] = []
    none: list[Reason] = []
    have = _cc(cc) or ()
    for row in rows:
        package, requirement = str(row.get("cudnn_package") or ""), row.get("cudnn_requirement")
        if not package or not requirement or have < (_cc(str(row.get("min_compute_capability") or "")) or ()):
            continue  # no range, or a build that does not run this GPU anyway
        try:
            spec = Specifiers(str(requirement))
        except InvalidSpecifier:
            continue
        wheels = sorted((w for w in load("cudnn").get("wheel", []) if w.get("package") == package and
                         any(spec.contains(str(b), prereleases=True) for b in w.get("builds", []))),
                        key=lambda w: version_tuple(str(w["release"])) or ())
        if not wheels:
            continue
        judged = [(str(w["release"]), gpu_support.release_support("cudnn", str(w["release"]), cc,
                                                                  f"cuDNN {w['release']}", drops_only=True))
                  for w in wheels]
        dropped = [(release, d) for release, d in judged if d is not None and d[0] == INCOMPATIBLE]
        if not dropped or judged[-1][1] is None or judged[-1][1][0] != INCOMPATIBLE:
            return found  # the newest in range still runs the GPU
        newest, drop = judged[-1][0], judged[-1][1]
        kept = [release for release, d in judged if d is None or d[0] != INCOMPATIBLE]
        label = f"{display(need.framework)} {need.version} (CUDA {row.get('cuda')})"
        if not kept:
            none.append(Reason("compute_capability", INCOMPATIBLE, f"{label} requires {package}{spec}, and every release "
                                                                   f"of it ({judged[0][0]} to {newest}) dropped this GPU: "
                                                                   f"{drop[1]}", f"{row['source']}; {drop[2]}"))
            continue
        first_dropped = dropped[0][0]
        pins.append(Reason("compute_capability", COMPATIBLE,
                           f"warning: {found.why}; but {label} requires {package}{spec}, pip installs the newest "
                           f"({newest}), and {drop[1]}: pin '{package}<{first_dropped}' ({kept[0]} to {kept[-1]} "
                           "still run it)", f"{found.source}; {row['source']}; {drop[2]}", warning=True))
    if pins:
        return pins[0]
    return none[0] if none else found

def gpu_driver_reasons(driver: str, cc: str, os_name: str) -> list[Reason]:
    """compat/gpu_support.toml [[driver_floor]]: does DRIVER drive a GPU of compute capability CC at all?"""
    found = gpu_support.judge_driver_for_gpu(driver, cc, os_name)
    return [Reason("driver", *found)] if found else []


def overall(reasons: list[Reason]) -> str:
    verdicts = {reason.verdict for reason in reasons}
    if INCOMPATIBLE in verdicts:
        return INCOMPATIBLE
    return UNKNOWN if UNKNOWN in verdicts or not reasons else COMPATIBLE


def _cuda_list(rows: list[dict[str, Any]]) -> str:
    values = sorted({str(row.get("cuda")) for row in rows}, key=lambda v: version_tuple(v) or ())
    return ", ".join(values)


def _judge_cuda(need: Needs, rows: list[dict[str, Any]], cuda: str) -> Reason:
    newer = newer_than_data("cuda", cuda)
    name = f"{display(need.framework)} {need.version}"
    rule = profile(need.framework).get("cuda_rule", "same-major-min-minor")
    known = known_cuda_rows(rows)
    if not known:
        return Reason("cuda", UNKNOWN, f"the data does not say which CUDA {name} needs", rows[0]["source"])
    if rule == "bundled":
        row = next((r for r in known if major_minor(str(r["cuda"])) == major_minor(cuda)), None)
        if row is not None and need.build_cuda is None:
            return Reason("cuda", COMPATIBLE, f"{name} has a build for CUDA {row['cuda']}", row["source"])
        row = row or known[0]
        why = (f"the {name} build for CUDA {row['cuda']} carries its own CUDA runtime, so a local CUDA {cuda} toolkit is "
               f"not used (only the driver must support CUDA {row['cuda']})")
        return Reason("cuda", COMPATIBLE, why, f"{row['source']}; {profile(need.framework).get('source', '')}")
    if newer is not None:
        return newer
    has_toolkit = any(major_minor(str(row["cuda"])) == major_minor(cuda) for row in known)
    for row in known:
        if row.get("exact_cuda") and major_minor(str(row["cuda"])) != major_minor(cuda) and not has_toolkit:
            if any(r.get("builds_complete") is False for r in known):
                linked = _cudnn_never_built_for(row, cuda)
                if linked is not None:
                    return Reason("cuda", INCOMPATIBLE, f"{name} was packaged per CUDA toolkit with {linked[0]}; no "
                                                        f"package for CUDA {cuda} can exist", f"{row['source']}; "
                                                                                              f"{linked[1]}")
                return Reason("cuda", UNKNOWN, f"{name} was packaged per CUDA toolkit and the data holds only its "
                                               f"CUDA {_cuda_list(known)} packages, not whether one for {cuda} exists",
                              row["source"])
            return Reason("cuda", INCOMPATIBLE, f"{row.get('package') or name} needs exactly CUDA {row['cuda']}; "
                                                f"{cuda} is another toolkit", row["source"])
        if row.get("min_cuda") and major(str(row["cuda"])) == major(cuda) and \
                (major_minor(cuda) or (0, 0)) < (major_minor(str(row["min_cuda"])) or (0, 0)):
            return Reason("cuda", INCOMPATIBLE, f"{row.get('package') or name} needs CUDA {row['min_cuda']} or newer "
                                                f"of CUDA {row['cuda']}.x; {cuda} is older", row["source"])
        if row.get("min_cuda_upper") and major(str(row["cuda"])) == major(cuda) and \
                (major_minor(cuda) or (0, 0)) < (major_minor(str(row["min_cuda_upper"])) or (0, 0)):
            return Reason("cuda", UNKNOWN, f"{row.get('package') or name} releases of this build need CUDA "
                                           f"{row['min_cuda']} to {row['min_cuda_upper']} (by release); whether "
                                           f"{name} runs on {cuda} is not in the data", row["source"])
        if row.get("max_cuda") and major(str(row["cuda"])) == major(cuda) and \
                (major_minor(cuda) or (0, 0)) > (major_minor(str(row["max_cuda"])) or (0, 0)):
            return Reason("cuda", UNKNOWN, f"NVIDIA's support matrix for {name} lists CUDA {row.get('min_cuda') or row['cuda']} "
                                           f"to {row['max_cuda']}; {cuda} is newer: CUDA's minor-version compatibility may "
                                           "run it, but NVIDIA does not list it for this release", row["source"])
    for row in known:
        built = str(row["cuda"])
        if major_minor(built) == major_minor(cuda) or (built.count(".") == 0 and major(built) == major(cuda)
                                                     and rule != "exact"):
            return Reason("cuda", COMPATIBLE, f"{name} has a build for CUDA {built}", row["source"])
    same_major = [row for row in known if major(str(row["cuda"])) == major(cuda)]
    if not same_major:
        return Reason("cuda", INCOMPATIBLE, f"{name} is built for CUDA {_cuda_list(known)}, not {cuda}",
                      known[0]["source"])
    row = max(same_major, key=lambda r: version_tuple(str(r["cuda"])) or ())
    built = str(row["cuda"])
    if rule == "exact":
        return Reason("cuda", INCOMPATIBLE, f"{name} ({row.get('artifact') or 'this build'}) needs exactly CUDA {built}; "
                                            f"{cuda} is another toolkit",
                      f"{row['source']}; {profile(need.framework).get('source', '')}")
    if (major(built) or 0) < minor_version_compatibility_from():
        return Reason("cuda", INCOMPATIBLE, f"built for CUDA {built}; before CUDA {minor_version_compatibility_from()} there "
                                            f"is no minor-version compatibility, so CUDA {cuda} does not run it "
                                            f"(libcudart.so.{built} is its own soname)",
                      f"{row['source']}; {minor_version_compatibility_source()}")
    if rule == "same-major" or (major_minor(cuda) or (0, 0)) >= (major_minor(built) or (0, 0)):
        why = f"built for CUDA {built}; CUDA {cuda} is the same major, which CUDA's minor-version compatibility allows"
        return Reason("cuda", COMPATIBLE, why, f"{row['source']}; {minor_version_compatibility_source()}")
    why = f"built for CUDA {built}; CUDA {cuda} is older than that, so newer runtime symbols may be missing"
    return Reason("cuda", INCOMPATIBLE, why, row["source"])


def _cudnn_never_built_for(row: dict[str, Any], cuda: str) -> tuple[str, str] | None:
    """(why, source) when the cuDNN series a per-toolkit package links (TensorRT 7.0: cuDNN 7.6) has no build for CUDA
    in compat/cudnn.toml: a package of it for that CUDA cannot exist."""
    series = accepted_cudnn(row)
    if not series or (version_tuple(series[0]) or ())[:1] == ():
        return None
    releases = [r for r in load("cudnn").get("release", []) if matches_prefix(str(r.get("version")), series[0])]
    if not releases or any(query.cudnn_variant(str(r["version"]), cuda) for r in releases):
        return None
    built = sorted({str(v.get("cuda")) for r in releases for v in r.get("variant", [])}, key=lambda v: version_tuple(v) or ())
    return (f"cuDNN {series[0]}, which was never built for CUDA {cuda} (its builds: CUDA {', '.join(built)})",
            str(releases[-1].get("source", "compat/cudnn.toml")))


def judge_cudnn(need: Needs, rows: list[dict[str, Any]], cudnn: str) -> Reason:
    name = f"{display(need.framework)} {need.version}"
    if rows and all(row.get("cudnn") == "none" for row in rows):
        return Reason("cudnn", COMPATIBLE, f"{name} does not use cuDNN", rows[0]["source"])
    newer = newer_than_data("cudnn", cudnn)
    if newer is not None:
        return newer
    pinned = [row for row in rows if row.get("cudnn_requirement") and not accepted_cudnn(row)]
    if pinned:
        return _judge_requirement(name, pinned, cudnn)
    known = [row for row in rows if accepted_cudnn(row)]
    if not known:
        return Reason("cudnn", UNKNOWN, f"the data does not say which cuDNN {name} needs",
                      rows[0]["source"] if rows else "compat/")
    rule = profile(need.framework)
    extra = f"; {rule['source']}" if rule.get("source") else ""
    series = rule.get("cudnn_rule") == "series"
    for row in known:
        for built in accepted_cudnn(row):
            if cudnn_accepts(need.framework, built, cudnn):
                why = (f"accepts the cuDNN {built} series; {cudnn} is in it" if series else
                       f"built with cuDNN {built}; {cudnn} is accepted ({_rule_text(need.framework, built)})")
                return Reason("cudnn", COMPATIBLE, why, row["source"] + extra)
    for row in known:  # newer than the release tested: it warns and runs, a warning is not a refusal
        warns = [prefix for prefix in row.get("cudnn_warns", []) if matches_prefix(cudnn, str(prefix))]
        if warns:
            return Reason("cudnn", COMPATIBLE, f"warning: {name} was tested up to cuDNN {accepted_cudnn(row)[-1]}; {cudnn} "
                                               f"is newer: it loads with the warning \"Your cuDNN version is more recent "
                                               f"than Theano\" and runs (a warning, not a refusal)", row["source"] + extra,
                          warning=True)
    accepted = ", ".join(sorted({b for r in known for b in accepted_cudnn(r)}))
    why = (f"accepts cuDNN {accepted}; {cudnn} is not among them" if series else
           f"built with cuDNN {accepted}; {cudnn} is refused ({_rule_text(need.framework, accepted)})")
    return Reason("cudnn", INCOMPATIBLE, why, known[0]["source"] + extra)


def _judge_requirement(name: str, rows: list[dict[str, Any]], cudnn: str) -> Reason:
    from cudnn_doctor.specifiers import InvalidSpecifier, Specifiers

    refused: list[tuple[str, dict[str, Any]]] = []
    for row in rows:
        try:
            spec = Specifiers(str(row["cudnn_requirement"]))
        except InvalidSpecifier:
            continue
        package = row.get("cudnn_package", "nvidia-cudnn")
        if spec.contains(cudnn, prereleases=True) or _contains_series(spec, cudnn):
            return Reason("cudnn", COMPATIBLE, f"{name} (CUDA {row.get('cuda')}) requires {package}{spec}; {cudnn} is "
                                               "in it", row["source"])
        refused.append((f"{package}{spec}", row))
    if refused:
        pins = " or ".join(sorted({pin for pin, _ in refused}))
        return Reason("cudnn", INCOMPATIBLE, f"{name} requires {pins}; {cudnn} is outside it", refused[0][1]["source"])
    return Reason("cudnn", UNKNOWN, f"{name}: its cuDNN requirement could not be read", rows[0]["source"])


def _contains_series(spec: Any, cudnn: str) -> bool:
    """A pin's four-part floor (>=9.10.2.21) holds the three-part release 9.10.2 that cuDNN reports."""
    parts = version_tuple(cudnn) or ()
    return len(parts) == 3 and bool(spec.contains(f"{cudnn}.999999", prereleases=True))


def _rule_text(framework: str, built: str) -> str:
    rule = profile(framework)
    kind = rule.get("cudnn_rule")
    exact_below = rule.get("exact_minor_below_cudnn_major")
    if kind == "same-major-min-minor":
        if exact_below and (major(built) or 99) < int(exact_below):
            return f"before cuDNN {exact_below} {display(framework)} needs the same major and minor"
        return f"{display(framework)} needs the same major and a minor at least the compiled one"
    if kind == "same-major":
        return f"{display(framework)} loads libcudnn.so.N of the major it was built with"
    return "the release series it accepts"


def cudnn_accepts(framework: str, built: str, runtime: str) -> bool:
    """Does FRAMEWORK, built with cuDNN BUILT, accept RUNTIME (its rule from compat/rules.toml)?"""
    built_parts, runtime_parts = version_tuple(built), version_tuple(runtime)
    if not built_parts or not runtime_parts:
        return False
    rule = profile(framework)
    kind = rule.get("cudnn_rule", "series")
    if kind == "series":
        return matches_prefix(runtime, built)
    if built_parts[0] != runtime_parts[0]:
        return False
    if kind == "same-major" or len(built_parts) < 2:
        return True
    runtime_minor = runtime_parts[1] if len(runtime_parts) > 1 else 0
    exact_below = rule.get("exact_minor_below_cudnn_major")
    if exact_below is not None and built_parts[0] < int(exact_below):
        return runtime_minor == built_parts[1]
    return runtime_minor >= built_parts[1]


def _judge_driver(need: Needs, rows: list[dict[str, Any]], driver: str, os_name: str) -> Reason:
    cudas = [str(row["cuda"]) for row in known_cuda_rows(rows)]
    if not cudas:
        return Reason("driver", UNKNOWN, "the data does not say which CUDA this build uses",
                      rows[0]["source"] if rows else "compat/")
    lowest = min(cudas, key=lambda v: version_tuple(v) or ())
    return judge_driver_for_cuda(lowest, driver, os_name)


def judge_driver_for_cuda(cuda: str, driver: str, os_name: str) -> Reason:
    """Does DRIVER run code built with CUDA (its GA driver, or minor-version compatibility from CUDA 11)?"""
    newer = newer_than_data("cuda", cuda)
    if newer is not None:
        return Reason("driver", UNKNOWN, newer.why, newer.source)
    full = query.toolkit_min_driver(cuda, os_name) if cuda.count(".") else None
    minor = (query.minor_compat_min_driver(major(cuda) or 0, os_name)
             if (major(cuda) or 0) >= minor_version_compatibility_from() else None)
    if cuda.count(".") == 0 and minor is None:
        return _judge_driver_for_major(cuda, driver, os_name)
    if full and _at_least(driver, full.version) is True:
        return Reason("driver", COMPATIBLE, f"CUDA {cuda} needs driver >= {full.version}; {driver} is that or newer",
                      full.source)
    if minor and _at_least(driver, minor.version) is True:
        if full is None:
            why = (f"CUDA {major(cuda)}.x builds run on driver >= {minor.version} (minor-version compatibility); "
                   f"{driver} is that or newer")
        else:
            why = (f"CUDA {cuda} wants driver >= {full.version}, but {driver} runs it through CUDA {major(cuda)}.x "
                   f"minor-version compatibility (>= {minor.version}); PTX JIT of newer code may fail")
        return Reason("driver", COMPATIBLE, why, minor.source, warning=full is not None)
    if full is None and minor is None:
        return Reason("driver", UNKNOWN, f"no minimum driver known for CUDA {cuda}", "compat/cuda.toml")
    needed = minor or full
    assert needed is not None
    branch = query.minor_compat_branch(major(cuda) or 0) if minor else None
    have = version_tuple(driver) or ()
    if len(have) == 1 and branch is not None:
        # a bare branch ("580"): NVIDIA's Table 2 gives minor-version compatibility per branch (13.x: >= 580)
        if have[0] >= branch:
            return Reason("driver", COMPATIBLE, f"driver branch {driver} runs CUDA {major(cuda)}.x builds (CUDA "
                                                f"{major(cuda)}.x minor-version compatibility: branch >= {branch}); "
                                                f"CUDA {cuda} itself lists >= {full.version if full else needed.version}",
                          minor.source if minor else needed.source, warning=full is not None)
        return Reason("driver", INCOMPATIBLE, f"CUDA {cuda} needs driver branch >= {branch} (minor-version "
                                              f"compatibility); branch {driver} is older", needed.source)
    if _at_least(driver, needed.version) is None:
        return Reason("driver", UNKNOWN, f"driver {driver} names a branch; CUDA {cuda} needs >= {needed.version}: "
                                         "give the full driver version", needed.source)
    floor = f"driver >= {full.version}" if full else "a newer driver"
    if minor and minor is not full:
        floor += f" (>= {minor.version} with CUDA {major(cuda)}.x minor-version compatibility)"
    return Reason("driver", INCOMPATIBLE, f"CUDA {cuda} needs {floor}; {driver} is older", needed.source)


def _judge_driver_for_major(cuda: str, driver: str, os_name: str) -> Reason:
    """A CUDA major without its minor, before minor-version compatibility (CUDA 9, 10): below the lowest GA driver of
    its releases no 9.x runs; from the highest every one does; between them it depends on the minor."""
    span = query.major_driver_span(major(cuda) or 0, os_name)
    if span is None:
        return Reason("driver", UNKNOWN, f"no minimum driver known for CUDA {cuda}", "compat/cuda.toml")
    low, high = span
    if _at_least(driver, low.version) is False:
        return Reason("driver", INCOMPATIBLE, f"every CUDA {cuda}.x release needs driver >= {low.version} (the oldest "
                                              f"of them); {driver} is older", low.source)
    if _at_least(driver, high.version) is True:
        return Reason("driver", COMPATIBLE, f"driver {driver} runs every CUDA {cuda}.x release (the newest needs >= "
                                            f"{high.version})", high.source)
    return Reason("driver", UNKNOWN, f"CUDA {cuda}.x releases need drivers from {low.version} to {high.version}; "
                                     f"whether {driver} is enough depends on the minor: name it (e.g. --cuda "
                                     f"{cuda}.0)", low.source)


def _at_least(driver: str, floor: str) -> bool | None:
    """DRIVER >= FLOOR; None when DRIVER is a bare branch ("535") that holds both older and newer ones."""
    have, need = version_tuple(driver) or (), version_tuple(floor) or ()
    if len(have) == 1 and need and have[0] == need[0] and len(need) > 1:
        return None
    return have >= need


# --- GPUs ---------------------------------------------------------------------------------------

def _cc(text: str | None) -> tuple[int, ...] | None:
    return version_tuple(text) if text not in (None, "", "unknown") else None


def judge_compute_capability(need: Needs, rows: list[dict[str, Any]], cc: str, cudnn: str | None) -> Reason:
    """The GPU against the framework's rule, the build's compiled architectures and cuDNN's support matrix."""
    cudnn_version = cudnn or next((b for row in rows for b in accepted_cudnn(row)), None)
    have = _cc(cc)
    for rule in load("rules").get("gpu_floor", []):
        if rule.get("framework") == need.framework and cudnn_version and have and \
                (version_tuple(cudnn_version) or ()) >= (version_tuple(rule["cudnn_from"]) or ()) and \
                have < (_cc(rule["min_compute_capability"]) or ()):
            return Reason("compute_capability", INCOMPATIBLE,
                          f"{display(need.framework)} refuses cuDNN {cudnn_version} (>= {rule['cudnn_from']}) on GPUs of "
                          f"compute capability below {rule['min_compute_capability']}; this GPU is {cc}", rule["source"])
    for rule in load("rules").get("gpu_cudnn_floor", []):
        if rule.get("framework") == need.framework and cudnn_version and have and \
                (version_tuple(need.version) or ()) >= (version_tuple(rule["from_version"]) or ()) and \
                have >= (_cc(rule["from_compute_capability"]) or ()) and \
                (version_tuple(cudnn_version) or ()) < (version_tuple(rule["min_cudnn"]) or ()):
            return Reason("compute_capability", INCOMPATIBLE,
                          f"{display(need.framework)} {need.version} disables cuDNN below {rule['min_cudnn']} on GPUs of "
                          f"compute capability {rule['from_compute_capability']} and newer; this GPU is {cc} and the "
                          f"cuDNN is {cudnn_version}", rule["source"])
    own = _framework_floor(need, cc)
    if own is not None and own.verdict == INCOMPATIBLE:
        return own
    support = _release_support(need, cc)
    if support is not None and support.verdict != COMPATIBLE:
        return support
    if cudnn_version and not all(row.get("cudnn") == "none" for row in rows):
        dropped = gpu_support.release_support("cudnn", cudnn_version, cc, f"cuDNN {cudnn_version}", drops_only=True)
        if dropped is not None and dropped[0] == INCOMPATIBLE:  # a GPU the cuDNN it loads no longer supports
            return Reason("compute_capability", *dropped)
    build = build_architectures(need, rows, cc)
    if support is not None:
        return build if build is not None and build.verdict == INCOMPATIBLE else support
    if build is None or build.verdict == UNKNOWN:
        floor = _cuda_floor(need, rows, cc) or _arch_check(need, rows, cc)
        if floor is not None:
            return floor
    cuda = next((str(row["cuda"]) for row in known_cuda_rows(rows)), None)
    library = cudnn_support(cudnn_version, cuda, cc) if cudnn_version and cuda else None
    if library is None and cudnn_version and profile(need.framework).get("gpu_rule") == "toolkit":
        library = cudnn_series_support(cudnn_version, cuda, cc)
    if library is not None and library.verdict == INCOMPATIBLE:
        return library
    if build is not None:
        if build.verdict == COMPATIBLE and library is not None and library.verdict == COMPATIBLE:
            return Reason(build.part, COMPATIBLE, f"{build.why}; {library.why}", f"{build.source}; {library.source}",
                          build.warning or library.warning)
        return build
    rule = profile(need.framework)
    if rule.get("gpu_rule", "build") == "build":
        # the build's own kernels decide; a cuDNN that supports the GPU says nothing about them
        cuda_label = f" (CUDA {cuda})" if cuda else ""
        why = (f"the data does not record which GPU architectures {display(need.framework)} {need.version}{cuda_label} "
               f"was compiled for, so compute capability {cc} cannot be judged")
        if library is not None:
            why += f" ({library.why}, but that is the library, not the build)"
        return Reason("compute_capability", UNKNOWN, why,
                      f"{rows[0]['source'] if rows else 'compat/'}; {rule.get('gpu_rule_source', 'compat/rules.toml')}")
    if library is not None:
        if own is not None and library.verdict == COMPATIBLE:
            return Reason(library.part, COMPATIBLE, f"{own.why}; {library.why}", f"{own.source}; {library.source}")
        return library
    if own is not None:
        return own
    return Reason("compute_capability", UNKNOWN,
                  f"no compute-capability data for {display(need.framework)} {need.version} "
                  f"(cuDNN {cudnn_version or '?'}, CUDA {cuda or '?'})", "compat/cudnn.toml")


def _release_support(need: Needs, cc: str) -> Reason | None:
    """compat/gpu_support.toml [[support]] for a product whose releases add and drop GPU architectures (TensorRT)."""
    if not gpu_support.support_rows(need.framework):
        return None
    found = gpu_support.release_support(need.framework, need.version, cc, f"{display(need.framework)} {need.version}")
    return Reason("compute_capability", *found) if found else None


def _cuda_floor(need: Needs, rows: list[dict[str, Any]], cc: str) -> Reason | None:
    """compat/gpu_support.toml [[cuda_floor]]: every build in question is for a CUDA that no longer targets the GPU."""
    cudas = sorted({str(row["cuda"]) for row in known_cuda_rows(rows)})
    below = [gpu_support.below_cuda_floor(cuda, cc) for cuda in cudas]
    if not cudas or not all(below):
        return None
    why, source = below[0]  # type: ignore[misc]
    return Reason("compute_capability", INCOMPATIBLE, f"{display(need.framework)} {need.version} (CUDA "
                                                      f"{', '.join(cudas)}): {why}", source)


def _arch_check(need: Needs, rows: list[dict[str, Any]], cc: str) -> Reason | None:
    """compat/rules.toml [[framework_arch_check]]: a framework that refuses GPUs its build was not compiled for, and
    every build in question is for a CUDA too old to have been compiled for this GPU."""
    rule = next((r for r in load("rules").get("framework_arch_check", []) if r.get("framework") == need.framework), None)
    cudas = sorted({str(row["cuda"]) for row in known_cuda_rows(rows)})
    if rule is None or not cudas:
        return None
    too_old = [gpu_support.before_first_toolkit(cuda, cc) for cuda in cudas]
    if not all(too_old):
        return None
    why, source = too_old[0]  # type: ignore[misc]
    return Reason("compute_capability", INCOMPATIBLE, f"{display(need.framework)} {need.version} (CUDA {', '.join(cudas)}): "
                                                      f"{why}, and {rule['why']}", f"{source}; {rule['source']}")


def _framework_floor(need: Needs, cc: str) -> Reason | None:
    """compat/rules.toml [[framework_gpu_floor]]: the framework's own check of the GPU."""
    have = _cc(cc)
    for rule in load("rules").get("framework_gpu_floor", []):
        if rule.get("framework") != need.framework or have is None or \
                (version_tuple(need.version) or ()) < (version_tuple(str(rule["from_version"])) or ()):
            continue
        low = str(rule["min_compute_capability"])
        if have < (_cc(low) or ()):
            return Reason("compute_capability", INCOMPATIBLE, f"{rule['why']}; this GPU is {cc}", str(rule["source"]))
        return Reason("compute_capability", COMPATIBLE, f"{display(need.framework)} {need.version}'s own check accepts "
                                                        f"compute capability {low} and newer", str(rule["source"]))
    return None


def cudnn_series_support(cudnn: str, cuda: str | None, cc: str) -> Reason | None:
    """The GPU against every cuDNN release of a series (\"7.6\" or an exact 7.6.5) and, with no CUDA named, every
    CUDA build of it in NVIDIA's matrix: one verdict when all that the data holds agree, else None."""
    judged: list[Reason] = []
    for release in load("cudnn").get("release", []):
        version = str(release.get("version"))
        if not matches_prefix(version, cudnn):
            continue
        variants = list(release.get("variant", []))
        if cuda:
            found = query.cudnn_variant(version, cuda)
            variants = [found[1]] if found else []  # no build of this release for that CUDA
        for variant in variants:
            rows = query.toolkit_rows(variant, cuda) if cuda else [variant]
            judged += [r for r in (matrix_row(release, row, cc) for row in rows) if r is not None]
    verdicts = {reason.verdict for reason in judged}
    if len(verdicts) != 1:
        return None
    first = judged[0]
    if len(judged) == 1:
        return first
    return Reason(first.part, first.verdict, f"every cuDNN {cudnn} build in NVIDIA's matrix ({len(judged)} rows) agrees: "
                                             f"{first.why}", first.source)


def build_architectures(need: Needs, rows: list[dict[str, Any]], cc: str) -> Reason | None:
    """The GPU against the architectures the build was compiled for (SASS list, PTX or not, or a
    documented floor). Where several builds are in question (no CUDA named), the best one decides."""
    if _cc(cc) is None:
        return None
    judged = [reason for reason in (_one_build(need, row, cc) for row in rows) if reason is not None]
    if not judged or len(judged) < len(rows) and all(r.verdict != COMPATIBLE for r in judged):
        return None  # some build's architectures are not in the data, and none that is known runs the GPU
    for wanted in ((COMPATIBLE, False), (COMPATIBLE, True), (UNKNOWN, False)):
        for reason in judged:
            if (reason.verdict, reason.warning) == wanted:
                return reason
    return judged[0]


def _one_build(need: Needs, row: dict[str, Any], cc: str) -> Reason | None:
    label = f"{display(need.framework)} {need.version} (CUDA {row.get('cuda')})"
    if row.get("torch"):  # a framework that runs on the PyTorch build it pins (vLLM)
        label = f"{display(need.framework)} {need.version} (on PyTorch {row['torch']}'s CUDA {row.get('cuda')} build)"
    source = str(row.get("arch_source") or row["source"])
    if _cc(cc) in {_cc(str(c)) for c in row.get("runs_on", [])}:
        return Reason("compute_capability", COMPATIBLE, f"{label} is reported by its project to run on compute "
                                                        f"capability {cc}", str(row.get("runs_on_source") or source))
    if row.get("arch_list"):
        return covers(label, list(row["arch_list"]), str(row.get("ptx", "unknown")), cc, source)
    low = row.get("min_compute_capability")
    if not low or _cc(str(low)) is None:
        return None
    if (_cc(cc) or ()) < (_cc(str(low)) or ()):
        return Reason("compute_capability", INCOMPATIBLE, f"{label} needs compute capability {low} or higher; this "
                                                          f"GPU is {cc}", source)
    if row.get("floor_only"):
        # a floor read for another release (or for the whole CUDA major): GPUs below it are out for good, but
        # nothing read for this release says which GPUs above it it supports
        return Reason("compute_capability", UNKNOWN, f"{label}: the data holds only a floor (compute capability {low}, "
                                                     f"not read for this release), so whether it supports {cc} is not "
                                                     "known", source)
    return Reason("compute_capability", COMPATIBLE, f"{label} supports compute capability {low} and higher", source)


def covers(what: str, arch_list: list[str], ptx: str, cc: str, source: str) -> Reason:
    """Binary compatibility: SASS for X.y runs on X.z (z >= y); PTX for P is JIT-compiled on any GPU >= P."""
    have = _cc(cc) or ()
    archs = sorted((a for a in arch_list if _cc(a)), key=lambda a: _cc(a) or ())
    listing = f"sm_{archs[0].replace('.', '')} to sm_{archs[-1].replace('.', '')}"
    rule_source = load("rules").get("binary_compatibility", {}).get("source")
    source = f"{source}; {rule_source}" if rule_source else source
    sass = [a for a in archs if (_cc(a) or ())[0] == have[0] and (_cc(a) or ())[1:] <= have[1:]]
    if sass:
        return Reason("compute_capability", COMPATIBLE, f"{what} has kernels for sm_{sass[-1].replace('.', '')}, which "
                                                        f"runs on compute capability {cc}", source)
    if ptx not in ("none", "unknown", "") and have >= (_cc(ptx) or (99,)):
        return Reason("compute_capability", COMPATIBLE,
                      f"warning: {what} has no kernels for compute capability {cc} ({listing}), but ships PTX for "
                      f"{ptx}: the driver JIT-compiles it on first run (slow start)", source, warning=True)
    if have < (_cc(archs[0]) or ()):
        return Reason("compute_capability", INCOMPATIBLE, f"{what} is built for {listing}; a GPU of compute capability "
                                                          f"{cc} is older than its oldest architecture", source)
    if ptx == "unknown":
        return Reason("compute_capability", UNKNOWN, f"{what} is built for {listing}; compute capability {cc} is not "
                                                     "among them and whether it ships PTX is not known", source)
    if ptx not in ("none", ""):
        return Reason("compute_capability", INCOMPATIBLE, f"{what} is built for {listing}, with PTX for {ptx} only (PTX "
                                                          f"runs on that compute capability and newer); compute "
                                                          f"capability {cc} has no kernels in it", source)
    return Reason("compute_capability", INCOMPATIBLE, f"{what} is built for {listing} without PTX; compute capability "
                                                      f"{cc} has no kernels in it", source)


def cudnn_support(cudnn: str, cuda: str, cc: str) -> Reason | None:
    """The GPU against NVIDIA's cuDNN support matrix for that release's CUDA variant (None: no row)."""
    variant = query.cudnn_variant(cudnn, cuda)
    if variant is None:
        return None
    release, row = variant
    if row.get("arch_list"):  # the build's own kernels, read from its wheel
        return wheel_kernels(release, row, cc)
    judged = [r for r in (matrix_row(release, one, cc) for one in query.toolkit_rows(row, cuda)) if r is not None]
    if not judged:
        return None
    return next((r for r in judged if r.verdict == COMPATIBLE), next((r for r in judged if r.verdict == UNKNOWN),
                                                                      judged[0]))


def wheel_kernels(release: dict[str, Any], variant: dict[str, Any], cc: str) -> Reason:
    """A cuDNN build's GPU by the kernels read from its wheels (variant arch_list). Where only some platforms' wheels
    were read (arch_platforms), a GPU inside the listed span with no kernels is unknown, not incompatible: another
    platform's build may hold them (the aarch64 wheel of 9.19.0 adds Thor's sm_110)."""
    found = covers(f"cuDNN {release['version']} for CUDA {variant.get('cuda')}", list(variant["arch_list"]),
                   str(variant.get("ptx", "unknown")), cc, str(variant.get("arch_source") or release.get("source", "")))
    read = set(variant.get("arch_platforms", []))
    oldest = min((_cc(str(a)) or () for a in variant["arch_list"]), default=())
    if found.verdict == INCOMPATIBLE and len(read) < len(set(query.PLATFORMS.values())) and (_cc(cc) or ()) > oldest:
        return Reason(found.part, UNKNOWN, f"{found.why} in the {', '.join(sorted(read))} wheel read; other platforms' "
                                           "builds were not read", found.source)
    return found


def architecture(cc: str) -> str | None:
    """The GPU architecture of a compute capability (compat/rules.toml [architectures])."""
    have = _cc(cc)
    for name, members in load("rules").get("architectures", {}).items():
        if name != "source" and any(_cc(str(m)) == have for m in members):
            return str(name)
    return None


def matrix_row(release: dict[str, Any], row: dict[str, Any], cc: str) -> Reason | None:
    low, high = row.get("min_compute_capability"), row.get("max_compute_capability")
    source = row.get("source") or release.get("source", "")
    have = _cc(cc)
    if _cc(low) is None or have is None:
        return None
    label = f"cuDNN {release['version']} for CUDA {row.get('toolkit') or row.get('cuda')}"
    if row.get("toolkit") and row.get("linux_min_driver") not in (None, "unknown"):
        label += f" (with driver >= {row['linux_min_driver']})"
    if have < (_cc(low) or ()):
        return Reason("compute_capability", INCOMPATIBLE, f"{label} supports compute capability {low} and newer; "
                                                          f"this GPU is {cc}", source)
    top = _cc(high)
    if top is not None and have > top:
        # NVIDIA's matrix lists the GPUs each build supports; a newer one is not among them. Within the newest
        # listed major (12.1 after 12.0) its SASS may still run (binary compatibility), but NVIDIA does not say so.
        if architecture(cc) is not None and architecture(cc) == architecture(str(high)):
            return Reason("compute_capability", UNKNOWN, f"{label} lists compute capabilities up to {high}; {cc} is not "
                                                         "listed (same architecture: its kernels may run, NVIDIA does not say)",
                          source)
        return Reason("compute_capability", INCOMPATIBLE, f"{label} supports compute capabilities up to {high} "
                                                          f"(NVIDIA's support matrix); {cc} is newer", source)
    return Reason("compute_capability", COMPATIBLE, f"{label} supports {low}"
                                                    f"{' to ' + str(high) if _cc(high) else ' and newer'}", source)


