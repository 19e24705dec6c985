"""What a framework release needs, and whether a CUDA / cuDNN / driver / GPU combination works.

Each part of a verdict (cuda, cudnn, driver, compute capability) is judged on its own from one
row of compat/ data and carries that row's source; how a framework judges each part (its cuDNN
runtime check, whether it brings its own CUDA runtime) is read from compat/rules.toml. A part
the data says nothing about is "unknown", never "compatible"; a release or build the data does
not hold is never judged with another one's row.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from cudnn_doctor.knowledge import gpu_support, query
from cudnn_doctor.knowledge.data import load
from cudnn_doctor.versions import major, major_minor, matches_prefix, version_tuple

COMPATIBLE, INCOMPATIBLE, UNKNOWN = "compatible", "incompatible", "unknown"
ROW_TABLE_OVERRIDES = {"theano": "release", "dl4j": "backend"}


@dataclass(frozen=True)
class Reason:
    """One part of a compatibility verdict and why."""

    part: str  # "release" | "build" | "cuda" | "cudnn" | "driver" | "compute_capability"
    verdict: str
    why: str
    source: str
    warning: bool = False  # compatible, with a cost the user should know (PTX JIT on first run)


@dataclass(frozen=True)
class Combination:
    """The CUDA, cuDNN, driver and GPU a compat question names."""

    cuda: str | None = None
    cudnn: str | None = None
    driver: str | None = None
    compute_capability: str | None = None
    os: str = "linux"


@dataclass
class Needs:
    """What a framework release needs, from its compat rows."""

    framework: str
    version: str
    rows: list[dict[str, Any]]
    build_cuda: str | None = None  # the CUDA build asked for (torch 2.5.0+cu124 -> 12.4)
    notes: list[str] = field(default_factory=list)
    missing: Reason | None = None  # the release or build does not exist (in the data or at all)


# --- rules.toml ----------------------------------------------------------------------------------

def profiles() -> dict[str, dict[str, Any]]:
    """compat/rules.toml [[framework]] rows by name."""
    return {row["name"]: row for row in load("rules").get("framework", [])}


def profile(framework: str) -> dict[str, Any]:
    return profiles().get(framework, {})


def canonical_name(name: str) -> str | None:
    wanted = name.strip().lower().replace("_", "-")
    for row in profiles().values():
        if wanted in {alias.lower().replace("_", "-") for alias in row.get("aliases", [])}:
            return str(row["name"])
    for rule in load("rules").get("package_cuda", []):  # cupy-cuda102, tensorrt-cu11: names a rule knows
        if re.fullmatch(str(rule["pattern"]), wanted):
            return str(rule["framework"])
    return None


def row_table(framework: str) -> str | None:
    if framework not in profiles():
        return None
    return ROW_TABLE_OVERRIDES.get(framework, "build")


def display(framework: str) -> str:
    return str(profile(framework).get("display", framework))


def split_spec(text: str) -> tuple[str, str | None]:
    """"tensorflow==2.15.0" -> ("tensorflow", "2.15.0"); "torch" -> ("torch", None)."""
    match = re.match(r"^\s*([A-Za-z0-9_.-]+?)\s*(?:==\s*(\S+?))?\s*$", text)
    if not match:
        return text, None
    return match.group(1), match.group(2)


def all_rows(framework: str) -> list[dict[str, Any]]:
    table = row_table(framework)
    return list(load(profile(framework).get("table", framework)).get(table, [])) if table else []


def rules(framework: str) -> dict[str, Any]:
    """The per-file [rules] table of a framework's data (shown in the JSON answer)."""
    return dict(load(profile(framework).get("table", framework)).get("rules", {}))


def minor_version_compatibility_from() -> int:
    return int(load("rules").get("cuda_minor_version_compatibility", {}).get("from_cuda_major", 11))


def minor_version_compatibility_source() -> str:
    return str(load("rules").get("cuda_minor_version_compatibility", {}).get("source", "compat/rules.toml"))


# --- which rows describe a release ---------------------------------------------------------------

def needs(framework: str, version: str, os_name: str = "linux", artifact: str | None = None,
          package: str | None = None) -> Needs:
    """The data rows that describe FRAMEWORK at VERSION (e.g. every CUDA build of a torch release).
    PACKAGE is the distribution name asked for (cupy-cuda11x, tensorrt-cu12): where a [[package_cuda]]
    rule says the name fixes the CUDA, only that build is in question."""
    need = _needs(framework, version, os_name, artifact)
    rule = package_rule(framework, package) if package else None
    if rule is None or need.missing is not None and need.missing.part != "release":
        return need
    wanted = str(package).lower().replace("_", "-")
    known = [row for row in need.rows if str(row.get("package", "")).lower() == wanted]
    if known:
        need.rows = known
        return need
    if need.missing is not None and "newer than this data" in need.missing.why:
        return need
    have = version_tuple(need.version) or ()
    if rule.get("from_version") and have < (version_tuple(str(rule["from_version"])) or ()) or \
            rule.get("before_version") and have >= (version_tuple(str(rule["before_version"])) or ()):
        need.missing = Reason("build", INCOMPATIBLE, f"{display(framework)} {need.version} was never published as "
                                                     f"{wanted}: {rule['why_range']}", str(rule["source"]))
        need.rows = []
        return need
    need.missing = None
    need.rows = [{"version": need.version, "package": wanted, "cuda": rule["cuda"], "cudnn": "unknown",
                  "min_cuda": rule.get("min_cuda"), "exact_cuda": bool(rule.get("exact_cuda")),
                  "min_compute_capability": rule.get("min_compute_capability"),
                  "arch_source": rule.get("gpu_source"), "source": rule["source"]}]
    need.notes.append(f"{wanted} fixes the CUDA: {rule['why']}")
    return need


def package_rule(framework: str, package: str | None) -> dict[str, Any] | None:
    """compat/rules.toml [[package_cuda]]: the CUDA a distribution name fixes (cupy-cuda102 -> exactly 10.2)."""
    name = str(package or "").lower().replace("_", "-")
    for rule in load("rules").get("package_cuda", []):
        if rule.get("framework") != framework:
            continue
        match = re.fullmatch(str(rule["pattern"]), name)
        if match is None:
            continue
        found = dict(rule)
        if rule.get("cuda_from_name"):  # cupy-cuda102 -> 10.2, cupy-cuda92 -> 9.2
            digits = match.group(1)
            found["cuda"] = f"{digits[:-1]}.{digits[-1]}"
            found["exact_cuda"] = True
            found["why"] = str(rule["why"]).replace("{cuda}", found["cuda"])
        return found
    return None


def _needs(framework: str, version: str, os_name: str = "linux", artifact: str | None = None) -> Needs:
    base, _, local = version.partition("+")
    build_cuda = None  # torch's local version names its CUDA build: +cu124 -> 12.4, +cu80 -> 8.0
    if profile(framework).get("cuda_rule") == "bundled" and local.startswith("cu") and local[2:].isdigit() \
            and len(local) >= 4:
        digits = local[2:]
        build_cuda = f"{digits[:-1]}.{digits[-1]}"
    release_rows = [row for row in all_rows(framework) if _same_release(str(row.get("version", "")), base)]
    # a build named by its own pip version (Paddle's 2.5.2.post116 from Paddle's index): that build, of its release
    by_pip = [row for row in all_rows(framework) if str(row.get("pip_version", "")) == base]
    if by_pip:
        release_rows, base = by_pip, str(by_pip[0].get("version", base))
    need = Needs(framework, base, release_rows, build_cuda)
    if not release_rows:
        need.missing = release_unknown(framework, base)
        return need
    no_build = _no_gpu_build_rule(framework, base, os_name)
    if no_build is not None:
        need.missing, need.rows = no_build, []
        return need
    if any("os" in row for row in release_rows):
        on_os = [row for row in release_rows if row.get("os", "linux") == os_name]
        if not on_os:
            need.missing = _no_build_on_os(framework, base, os_name, release_rows)
        need.rows = on_os
    if framework == "dl4j" and artifact:
        wanted = artifact.removesuffix("-platform")
        need.rows = [row for row in need.rows if row.get("artifact") == wanted]
        if not need.rows and need.missing is None:
            artifacts = sorted({str(row.get("artifact")) for row in release_rows})
            need.missing = Reason("build", INCOMPATIBLE, f"Deeplearning4j {base} was never published as {wanted}; "
                                  f"its CUDA backends are {', '.join(artifacts)}", release_rows[0]["source"])
    if build_cuda and need.missing is None:
        exact = [row for row in need.rows if major_minor(str(row.get("cuda"))) == major_minor(build_cuda)]
        if not exact:
            builds = ", ".join(sorted({f"cu{str(r.get('cuda')).replace('.', '')}" for r in need.rows
                                       if r.get("cuda") not in (None, "unknown")}))
            if any(row.get("builds_complete") is False for row in need.rows):
                need.missing = Reason("build", UNKNOWN, f"{display(framework)} {base}+{local} is not in the data (it "
                                                        f"holds only {builds} of {base})", need.rows[0]["source"])
            else:
                need.missing = Reason("build", INCOMPATIBLE,
                                      f"{display(framework)} {base}+{local} was never published: the builds of {base} "
                                      f"are {builds or 'not known'}", need.rows[0]["source"])
        need.rows = exact or need.rows
    return need


def _same_release(row_version: str, wanted: str) -> bool:
    if row_version == wanted:
        return True
    have, want = version_tuple(row_version), version_tuple(wanted)
    # "2.15" asked for: any 2.15.x row; "10.13.2" for TensorRT's "10.13.2.6" (NVIDIA's four-part versions);
    # DL4J's "1.0.0-beta7" compares as text above
    return bool(have and want and len(want) < max(3, len(have)) and have[: len(want)] == want
                and "-" not in wanted and not re.search(r"[A-Za-z]", wanted))


def known_releases(framework: str) -> list[str]:
    versions = {str(row.get("version")) for row in all_rows(framework)}
    return sorted(versions, key=lambda v: version_tuple(v) or ())


def release_unknown(framework: str, version: str) -> Reason:
    """No row for this release: newer than the data, or a version the data does not hold."""
    table = profile(framework).get("table", framework)
    known = known_releases(framework)
    source = f"compat/{table}.toml"
    if not known:
        return Reason("release", UNKNOWN, f"compat/ has no table for {display(framework)}", source)
    newest = known[-1]
    have = version_tuple(version)
    if have is not None and have > (version_tuple(newest) or ()):
        return Reason("release", UNKNOWN, f"unknown: newer than this data (last known: {display(framework)} {newest}); "
                                          "update cudnn-doctor", source)
    series = [v for v in known if have and (version_tuple(v) or ())[:2] == have[:2]]
    hint = f" (known {'.'.join(map(str, have[:2]))}.x: {', '.join(series)})" if series and have else ""
    return Reason("release", UNKNOWN, f"{display(framework)} {version} is not a release in {source}{hint}", source)


def _no_gpu_build_rule(framework: str, version: str, os_name: str) -> Reason | None:
    """compat/rules.toml [[no_gpu_build]]: the sources say FRAMEWORK at VERSION has no GPU build on OS_NAME."""
    for rule in load("rules").get("no_gpu_build", []):
        if rule.get("framework") == framework and rule.get("os") == os_name and \
                (version_tuple(version) or ()) >= (version_tuple(rule.get("from_version")) or ()):
            return Reason("build", INCOMPATIBLE, str(rule["why"]), str(rule["source"]))
    return None


def _no_build_on_os(framework: str, version: str, os_name: str, rows: list[dict[str, Any]]) -> Reason:
    rule = _no_gpu_build_rule(framework, version, os_name)
    if rule is not None:
        return rule
    systems = ", ".join(sorted({str(row.get("os", "linux")) for row in rows}))
    return Reason("build", UNKNOWN, f"the data has no {os_name} GPU build of {display(framework)} {version} "
                                    f"(it has: {systems})", rows[0]["source"])


def rows_for_cuda(need: Needs, cuda: str | None) -> list[dict[str, Any]]:
    """The builds that matter for CUDA (the exact one, else its major); every build when none is named."""
    wanted = need.build_cuda or cuda
    if wanted is None:
        return need.rows
    known = _known_cuda(need.rows)
    exact = [row for row in known if major_minor(str(row.get("cuda"))) == major_minor(wanted)]
    same_major = [row for row in known if major(str(row.get("cuda"))) == major(wanted)]
    return exact or same_major or need.rows


def default_rows(need: Needs) -> list[dict[str, Any]]:
    """The build a plain `pip install` gets, where the data says; otherwise every build."""
    default = [row for row in need.rows if row.get("pypi_default") is True]
    return default or need.rows


# --- which builds of a release exist (for the planner) ------------------------------------------

@dataclass(frozen=True)
class Build:
    """One published build of a framework release: what to install and where the data says it exists."""

    framework: str  # canonical name ("pytorch")
    version: str
    cuda: str | None  # the CUDA it is built for ("12.6", "12"); None where the data does not say
    cudnn: str | None  # the cuDNN it was built with or requires ("9.10.2.21", "9", "~=9.0"); "none" if unused
    cudnn_package: str | None  # the pip package that brings that cuDNN ("nvidia-cudnn-cu12"), where one does
    installer: str  # "pip" | "conda" | "maven"
    requirement: str  # what to ask the installer for: "torch==2.13.0+cu126", "org.nd4j:nd4j-cuda-11.6:1.0.0-M2"
    index_url: str | None  # the pip index that serves it; None: the index the user configured (PyPI)
    default: bool | None  # the build a plain install of the release gets (None: the data does not say)
    os: str
    source: str
    index_note: str | None = None  # where a build is not on PyPI and no index URL is known: where it is


def builds(framework: str, version: str, os_name: str = "linux") -> list[Build]:
    """Every build of FRAMEWORK==VERSION on OS_NAME that compat/ records (e.g. torch 2.13.0: cu126, cu130 and
    cu132), each with the requirement and index that install it; [] when the data holds no such release."""
    canonical = canonical_name(framework) or framework
    if canonical not in profiles():
        return []
    return builds_of(needs(canonical, version, os_name), os_name)


def builds_of(need: Needs, os_name: str = "linux") -> list[Build]:
    """The builds behind NEED's rows ([] where the release or build does not exist)."""
    if need.missing is not None:
        return []
    rows = [row for row in need.rows if need.framework != "dl4j" or row.get("artifact") not in (None, "", "unknown")]
    return [_build(need.framework, need.version, row, os_name) for row in rows]


def _build(framework: str, version: str, row: dict[str, Any], os_name: str) -> Build:
    rule = profile(framework)
    cuda = row.get("cuda") if isinstance(row.get("cuda"), str) and row.get("cuda") not in ("", "unknown") else None
    accepted = _accepted_cudnn(row)
    cudnn = ("none" if row.get("cudnn") == "none" else accepted[0] if accepted else
             str(row["cudnn_requirement"]) if row.get("cudnn_requirement") else None)
    cudnn_package = row.get("cudnn_package") if row.get("cudnn_package") not in (None, "unknown", "bundled") else None
    default = row.get("pypi_default") if isinstance(row.get("pypi_default"), bool) else None
    source = str(row.get("source", ""))
    index_url = row.get("index_url")
    installer = "pip"
    if framework == "dl4j":
        return Build(framework, version, cuda, cudnn, None, "maven", f"org.nd4j:{row.get('artifact')}:{version}", None,
                     None, os_name, source)
    package = str(row.get("package") or rule.get("pip_package") or framework).replace("_", "-")
    requirement = f"{package}=={row.get('pip_version') or row.get('version', version)}"  # 2.4.2.post117
    if framework == "pytorch":
        published = row.get("published_as", ["pip"])
        if "pip" not in published:
            installer, requirement = "conda", f"pytorch=={version}"
        elif default is not True and cuda and rule.get("build_index") and index_url is None:
            digits = cuda.replace(".", "")
            requirement = f"{package}=={version}+cu{digits}"
            index_url = str(rule["build_index"]).replace("{cuda_digits}", digits)
            source = f"{source}; {rule.get('build_index_source', '')}"
    elif framework == "tensorflow" and os_name == "linux" and _and_cuda(version) is not None:
        requirement = f"tensorflow[and-cuda]=={version}"
        source = f"{source}; {_and_cuda(version)}"
    return Build(framework, version, cuda, cudnn, cudnn_package, installer, requirement,
                 str(index_url) if index_url else None, default, os_name, source,
                 str(row["index_note"]) if row.get("index_note") else None)


def _and_cuda(version: str) -> str | None:
    """The source of TensorFlow VERSION's `and-cuda` extra (compat/tensorflow.toml [[and_cuda]]), or None."""
    for row in load("tensorflow").get("and_cuda", []):
        if row.get("version") == version:
            return str(row["source"])
    return None


# --- ranges and data limits ---------------------------------------------------------------------

def is_range(kind: str, text: str) -> bool:
    return text.count(".") < (1 if kind == "cuda" else 2)


def known_versions(kind: str) -> list[str]:
    """Every cuDNN release (x.y.z) or CUDA toolkit (x.y) in compat/, oldest first."""
    if kind == "cudnn":
        values = {str(row.get("version")) for row in load("cudnn").get("release", [])}
    else:
        values = {".".join(map(str, major_minor(str(row.get("version"))) or ())) for row in load("cuda").get("toolkit", [])}
    values.discard("")
    return sorted(values, key=lambda v: version_tuple(v) or ())


def newer_than_data(kind: str, value: str) -> Reason | None:
    known = known_versions(kind)
    have = version_tuple(value)
    if not known or have is None:
        return None
    newest = known[-1]
    if kind == "cuda":
        have = have[:2]
    if have > (version_tuple(newest) or ()):
        label = "cuDNN" if kind == "cudnn" else "CUDA"
        return Reason(kind, UNKNOWN, f"unknown: {label} {value} is newer than this data (last known: {label} {newest}); "
                                     "update cudnn-doctor", f"compat/{kind}.toml")
    return None


def members(kind: str, text: str) -> list[str]:
    """A range ("9", "12", "9.1") as the releases of it in the data; an exact version as itself."""
    if not is_range(kind, text):
        return [text]
    found = [v for v in known_versions(kind) if matches_prefix(v, text)]
    return found or [text]


def over_range(kind: str, text: str, judge_one: Callable[[str], Reason]) -> Reason:
    """Judge every release a range holds; one verdict when they agree, "unknown" (and which) when not."""
    values = members(kind, text)
    judged = [(value, judge_one(value)) for value in values]
    if len(judged) == 1:
        return judged[0][1]
    verdicts = {reason.verdict for _, reason in judged}
    label = "cuDNN" if kind == "cudnn" else "CUDA"
    first = judged[0][1]
    span = f"{values[0]} to {values[-1]}"
    if len(verdicts) == 1:
        return Reason(first.part, first.verdict, f"every {label} {text} release in the data ({span}): {first.why}",
                      first.source, first.warning)
    by_verdict: dict[str, list[str]] = {}
    for value, reason in judged:
        by_verdict.setdefault(reason.verdict, []).append(value)
    listing = "; ".join(f"{verdict}: {_span(found)}" for verdict, found in by_verdict.items())
    bad = next((r for _, r in judged if r.verdict == INCOMPATIBLE), first)
    return Reason(first.part, UNKNOWN, f"{label} {text} is a range and the answer depends on the release ({listing}); "
                                       f"e.g. {bad.why}. Name the exact version", bad.source)


def _span(values: list[str]) -> str:
    return values[0] if len(values) == 1 else f"{values[0]} to {values[-1]} ({len(values)} releases)"


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
            reasons.append(judge_compute_capability(need, rows, cc, None))
    return overall(reasons), reasons


def gpu_driver_reasons(driver: str, cc: str, os_name: str) -> list[Reason]:
    """compat/gpu_support.toml [[driver_floor]]: does DRIVER drive a GPU of compute capability CC at all?"""
    found = gpu_support.judge_driver_for_gpu(driver, cc, os_name)
    return [Reason("driver", *found)] if found else []


def overall(reasons: list[Reason]) -> str:
    verdicts = {reason.verdict for reason in reasons}
    if INCOMPATIBLE in verdicts:
        return INCOMPATIBLE
    return UNKNOWN if UNKNOWN in verdicts or not reasons else COMPATIBLE


def _known_cuda(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rows that name one CUDA version (Theano's ["unknown"] and other lists name none)."""
    return [row for row in rows if isinstance(row.get("cuda"), str) and row["cuda"] not in ("", "unknown")]


def _cuda_list(rows: list[dict[str, Any]]) -> str:
    values = sorted({str(row.get("cuda")) for row in rows}, key=lambda v: version_tuple(v) or ())
    return ", ".join(values)


def _judge_cuda(need: Needs, rows: list[dict[str, Any]], cuda: str) -> Reason:
    newer = newer_than_data("cuda", cuda)
    name = f"{display(need.framework)} {need.version}"
    rule = profile(need.framework).get("cuda_rule", "same-major-min-minor")
    known = _known_cuda(rows)
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
    for row in known:
        if row.get("exact_cuda") and major_minor(str(row["cuda"])) != major_minor(cuda):
            return Reason("cuda", INCOMPATIBLE, f"{row.get('package') or name} needs exactly CUDA {row['cuda']}; "
                                                f"{cuda} is another toolkit", row["source"])
        if row.get("min_cuda") and major(str(row["cuda"])) == major(cuda) and \
                (major_minor(cuda) or (0, 0)) < (major_minor(str(row["min_cuda"])) or (0, 0)):
            return Reason("cuda", INCOMPATIBLE, f"{row.get('package') or name} needs CUDA {row['min_cuda']} or newer "
                                                f"of CUDA {row['cuda']}.x; {cuda} is older", row["source"])
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


def _accepted_cudnn(row: dict[str, Any]) -> list[str]:
    value = row.get("cudnn")
    values = value if isinstance(value, list) else [value]
    return [str(v) for v in values if v not in (None, "", "unknown", "none")]


def judge_cudnn(need: Needs, rows: list[dict[str, Any]], cudnn: str) -> Reason:
    name = f"{display(need.framework)} {need.version}"
    if rows and all(row.get("cudnn") == "none" for row in rows):
        return Reason("cudnn", COMPATIBLE, f"{name} does not use cuDNN", rows[0]["source"])
    newer = newer_than_data("cudnn", cudnn)
    if newer is not None:
        return newer
    pinned = [row for row in rows if row.get("cudnn_requirement") and not _accepted_cudnn(row)]
    if pinned:
        return _judge_requirement(name, pinned, cudnn)
    known = [row for row in rows if _accepted_cudnn(row)]
    if not known:
        return Reason("cudnn", UNKNOWN, f"the data does not say which cuDNN {name} needs",
                      rows[0]["source"] if rows else "compat/")
    rule = profile(need.framework)
    extra = f"; {rule['source']}" if rule.get("source") else ""
    series = rule.get("cudnn_rule") == "series"
    for row in known:
        for built in _accepted_cudnn(row):
            if cudnn_accepts(need.framework, built, cudnn):
                why = (f"accepts the cuDNN {built} series; {cudnn} is in it" if series else
                       f"built with cuDNN {built}; {cudnn} is accepted ({_rule_text(need.framework, built)})")
                return Reason("cudnn", COMPATIBLE, why, row["source"] + extra)
    for row in known:  # newer than the release tested: it warns and runs, a warning is not a refusal
        warns = [prefix for prefix in row.get("cudnn_warns", []) if matches_prefix(cudnn, str(prefix))]
        if warns:
            return Reason("cudnn", COMPATIBLE, f"warning: {name} was tested up to cuDNN {_accepted_cudnn(row)[-1]}; {cudnn} "
                                               f"is newer: it loads with the warning \"Your cuDNN version is more recent "
                                               f"than Theano\" and runs (a warning, not a refusal)", row["source"] + extra,
                          warning=True)
    accepted = ", ".join(sorted({b for r in known for b in _accepted_cudnn(r)}))
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
    cudas = [str(row["cuda"]) for row in _known_cuda(rows)]
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
    cudnn_version = cudnn or next((b for row in rows for b in _accepted_cudnn(row)), None)
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
        floor = _cuda_floor(need, rows, cc)
        if floor is not None:
            return floor
    cuda = next((str(row["cuda"]) for row in _known_cuda(rows)), None)
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
    cudas = sorted({str(row["cuda"]) for row in _known_cuda(rows)})
    below = [gpu_support.below_cuda_floor(cuda, cc) for cuda in cudas]
    if not cudas or not all(below):
        return None
    why, source = below[0]  # type: ignore[misc]
    return Reason("compute_capability", INCOMPATIBLE, f"{display(need.framework)} {need.version} (CUDA "
                                                      f"{', '.join(cudas)}): {why}", source)


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
    source = str(row.get("arch_source") or row["source"])
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
    return Reason("compute_capability", INCOMPATIBLE, f"{what} is built for {listing} without PTX; compute capability "
                                                      f"{cc} has no kernels in it", source)


def cudnn_support(cudnn: str, cuda: str, cc: str) -> Reason | None:
    """The GPU against NVIDIA's cuDNN support matrix for that release's CUDA variant (None: no row)."""
    variant = query.cudnn_variant(cudnn, cuda)
    if variant is None:
        return None
    release, row = variant
    judged = [r for r in (matrix_row(release, one, cc) for one in query.toolkit_rows(row, cuda)) if r is not None]
    if not judged:
        return None
    return next((r for r in judged if r.verdict == COMPATIBLE), next((r for r in judged if r.verdict == UNKNOWN),
                                                                      judged[0]))


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


# --- check --framework --------------------------------------------------------------------------

def assumed_framework(spec: str, installs: list[Any], os_name: str = "linux") -> Any:
    """A Framework record for `check --framework NAME==VERSION`: as if that release were installed
    (its PyPI default build), loading the cuDNN the dynamic loader picks."""
    from cudnn_doctor.errors import DoctorError
    from cudnn_doctor.model import Framework

    name, version = split_spec(spec)
    canonical = canonical_name(name)
    if canonical is None:
        raise DoctorError(f"--framework {spec!r}: unknown framework",
                          fix=f"use one of {', '.join(sorted(profiles()))}, e.g. --framework tensorflow==2.15.0")
    if version is None:
        raise DoctorError(f"--framework {spec!r}: which version?", fix=f"write it as {name}==VERSION")
    need = needs(canonical, version, os_name)
    if not need.rows:
        raise DoctorError(f"--framework {spec!r}: no data for {canonical} {version} in compat/",
                          fix=f"see the known releases with `cudnn-doctor compat --list {canonical}`")
    row = next((r for r in need.rows if r.get("pypi_default") is True), need.rows[-1])
    expected = _accepted_cudnn(row)
    cudnn_major = major(expected[0]) if expected else None
    used = next((i for i in installs if "ld.so" in i.loaded_by and (cudnn_major is None or i.major == cudnn_major)),
                None)
    internal = str(profile(canonical).get("report_name", canonical))
    details: dict[str, Any] = {"assumed": True, "artifact": row.get("artifact"), "row_source": row.get("source")}
    if row.get("cudnn") == "none":
        details["uses_cudnn"] = False
        used = None
    if row.get("cudnn_requirement"):
        details["cudnn_requirement"] = row["cudnn_requirement"]
        details["cudnn_package"] = row.get("cudnn_package")
    return Framework(name=internal, version=version, cuda_built_for=row.get("cuda") if row.get("cuda") != "unknown"
                     else None, cudnn_expected=expected[0] if expected else None,
                     cudnn_used=used.library if used else None, found_via="--framework", location=None,
                     details=details)
