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
from dataclasses import field
from typing import Any

from cudnn_doctor.knowledge.data import load
from cudnn_doctor.records import record
from cudnn_doctor.versions import ascii_digits, major, major_minor, matches_prefix, version_tuple

COMPATIBLE, INCOMPATIBLE, UNKNOWN = "compatible", "incompatible", "unknown"
ROW_TABLE_OVERRIDES = {"theano": "release", "dl4j": "backend"}


@record(frozen=True)
class Reason:
    """One part of a compatibility verdict and why."""

    part: str  # "release" | "build" | "cuda" | "cudnn" | "driver" | "compute_capability"
    verdict: str
    why: str
    source: str
    warning: bool = False  # compatible, with a cost the user should know (PTX JIT on first run)


@record(frozen=True)
class Combination:
    """The CUDA, cuDNN, driver and GPU a compat question names."""

    cuda: str | None = None
    cudnn: str | None = None
    driver: str | None = None
    compute_capability: str | None = None
    os: str = "linux"


@record
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
    if profile(framework).get("cuda_rule") == "bundled" and local.startswith("cu") and ascii_digits(local[2:]) \
            and len(local) >= 4:
        digits = local[2:]
        build_cuda = f"{digits[:-1]}.{digits[-1]}"
    release_rows = [row for row in all_rows(framework) if _same_release(str(row.get("version", "")), base)]
    named = _local_version_build(framework, base, local)
    if named is not None and named.get("unknown_build"):
        need = Needs(framework, base, [], build_cuda)
        need.missing = Reason("build", UNKNOWN, f"{display(framework)} {base}+{local} is not a build the data knows "
                                                f"(its sources name: {', '.join(_local_tags(framework))})",
                              str(named["source"]))
        return need
    if named is not None:  # jaxlib==0.4.13+cuda11.cudnn86: the name says which build
        release_rows = [named]
    # a build named by its own pip version (Paddle's 2.5.2.post116 from Paddle's index): that build, of its release
    by_pip = [row for row in all_rows(framework) if str(row.get("pip_version", "")) == base]
    if by_pip:
        release_rows, base = by_pip, str(by_pip[0].get("version", base))
    elif (indexed := _pip_version_build(framework, base)) is not None:  # Paddle's 2.1.0.post101: 2.1.0 for CUDA 10.1
        release_rows, base = [indexed], str(indexed["version"])
        by_pip = release_rows
    if release_rows and profile(framework).get("runs_on_framework"):
        release_rows = _on_framework(framework, release_rows)
    if not release_rows and named is None and not by_pip:
        release_rows = _series_rows(framework, base)
        if release_rows and profile(framework).get("runs_on_framework"):
            release_rows = _on_framework(framework, release_rows)
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
    need.rows = [_series_arches(framework, row) for row in need.rows]
    return need


_ARCH_FIELDS = ("arch_list", "ptx")


def _series_arches(framework: str, row: dict[str, Any]) -> dict[str, Any]:
    """ROW, a build whose compiled architectures the data lacks (PyTorch 2.7.1 for CUDA 12.8), with those of the same
    CUDA's build of the other releases of its series the data holds (2.7.0 for CUDA 12.8), where they all agree: a
    patch release is built by its release branch's build script, the same architecture list for the same CUDA. Its
    arch_source says so."""
    have = version_tuple(str(row.get("version", ""))) or ()
    if row.get("arch_list") or len(have) < 3 or not row.get("cuda") or str(row.get("cuda")) == "unknown":
        return row
    siblings = [other for other in all_rows(framework) if other.get("arch_list") and str(other.get("cuda")) == str(row["cuda"])
                and (version_tuple(str(other.get("version"))) or ())[:2] == have[:2]
                and str(other.get("version")) != str(row.get("version")) and other.get("os") == row.get("os")]
    if not siblings or len({tuple((key, repr(other.get(key))) for key in _ARCH_FIELDS) for other in siblings}) != 1:
        return row
    names = ", ".join(sorted({str(other["version"]) for other in siblings}, key=lambda v: version_tuple(v) or ()))
    return {**row, "arch_list": list(siblings[0]["arch_list"]), "ptx": siblings[0].get("ptx", "unknown"),
            "arch_source": f"{display(framework)} {row.get('version')} (CUDA {row['cuda']}) is built by its release "
                           f"branch's build script as {names} (CUDA {row['cuda']}) is, whose architectures the data "
                           f"holds: {siblings[0].get('arch_source') or siblings[0].get('source')}"}


def _on_framework(framework: str, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A framework whose wheel runs on another's release (vLLM on the torch it pins, compat/rules.toml
    runs_on_framework): each row becomes that release's PyPI build (its CUDA, cuDNN and architectures), named for
    the framework and citing both. A pinned release the data does not hold leaves a row whose CUDA is unknown."""
    rule = profile(framework)
    host = str(rule["runs_on_framework"])
    merged: list[dict[str, Any]] = []
    for row in rows:
        pinned = str(row.get("torch", ""))
        builds = [r for r in all_rows(host) if str(r.get("version")) == pinned]
        default = [r for r in builds if r.get("pypi_default") is True] or builds[:1] if len(builds) == 1 else \
            [r for r in builds if r.get("pypi_default") is True]
        if not default:
            merged.append({**row, "cuda": "unknown", "note": f"{display(host)} {pinned}'s PyPI build is not in compat/"})
            continue
        build = default[0]
        keep = {key: value for key, value in build.items() if key not in ("version", "pypi_default", "note", "source")}
        merged.append({**keep, "version": row["version"], "torch": pinned, "pypi_default": True,
                       "arch_source": f"{build.get('arch_source') or build['source']} (the {display(host)} {pinned} "
                                      "build it runs on)",
                       "source": f"{row['source']}; {display(host)} {pinned}'s PyPI build (CUDA {build.get('cuda')}): "
                                 f"{build['source']}; {rule.get('runs_on_framework_source', '')}"})
    return merged


def _local_version_build(framework: str, base: str, local: str) -> dict[str, Any] | None:
    """compat/rules.toml [[local_version_build]]: a local version that names its build's CUDA major and cuDNN
    (jaxlib's +cuda11.cudnn86), as a row of its own; the CUDA minor it needs where the rule's sources give it."""
    if not local:
        return None
    for rule in load("rules").get("local_version_build", []):
        match = re.fullmatch(str(rule["pattern"]), local) if rule.get("framework") == framework else None
        if match is None:
            continue
        cuda, cudnn = match.group("cuda"), f"{match.group('cudnn_major')}.{match.group('cudnn_minor')}"
        row: dict[str, Any] = {"version": base, "cuda": cuda, "cudnn": cudnn, "package": rule.get("package"),
                               "source": f"{rule['source']} ({rule['why']})"}
        minimum = dict(rule.get("min_cuda", {})).get(local)
        if not minimum:  # a tag the sources do not name: no build of ours to judge
            row["unknown_build"] = True
            return row
        low, _, high = str(minimum).partition("..")  # "12.0..12.2": the releases with this tag need 12.0 to 12.2
        row["min_cuda"] = low
        if high:
            row["min_cuda_upper"] = high
        return row
    return None


def _local_tags(framework: str) -> list[str]:
    return [str(tag) for rule in load("rules").get("local_version_build", []) if rule.get("framework") == framework
            for tag in dict(rule.get("min_cuda", {}))]


def _same_release(row_version: str, wanted: str) -> bool:
    if row_version == wanted:
        return True
    have, want = version_tuple(row_version), version_tuple(wanted)
    # "2.15" asked for: any 2.15.x row; "10.13.2" for TensorRT's "10.13.2.6" (NVIDIA's four-part versions);
    # DL4J's "1.0.0-beta7" compares as text above
    return bool(have and want and len(want) < max(3, len(have)) and have[: len(want)] == want
                and "-" not in wanted and not re.search(r"[A-Za-z]", wanted))


def _pip_version_build(framework: str, version: str) -> dict[str, Any] | None:
    """compat/rules.toml [[pip_version_build]]: a version under which the framework's own index publishes a release's
    build for a CUDA (Paddle's X.Y.Z.postNNN) as a row of that release for that CUDA, the fields of the build the data
    does not hold unknown."""
    for rule in load("rules").get("pip_version_build", []):
        match = re.fullmatch(str(rule["pattern"]), version) if rule.get("framework") == framework else None
        if match is None:
            continue
        digits = match.group("cuda")
        cuda = f"{digits[:-1]}.{digits[-1]}"
        base = match.group("base")
        known = [row for row in all_rows(framework) if str(row.get("version")) == base]
        row = {"version": base, "pip_version": version, "cuda": cuda, "cudnn": "unknown",
               "note": f"{display(framework)} {version}: the {base} build for CUDA {cuda} from its own index; its cuDNN and "
                       "the architectures it was compiled for are not in the data",
               "source": f"{rule['source']} ({rule['why']})"
                         + (f"; the release {base}: {known[0]['source']}" if known else "")}
        # the same index's builds for this CUDA of the other releases of the series (2.5.2.post112 for 2.5.1.post112):
        # where the data holds them and they agree, this build pairs its CUDA with their cuDNN
        have = version_tuple(base) or ()
        series = [r for r in all_rows(framework) if r.get("pip_version") and str(r.get("cuda")) == cuda
                  and (version_tuple(str(r.get("version"))) or ())[:2] == have[:2] and r.get("cudnn") not in (None, "unknown")]
        if series and len({str(r["cudnn"]) for r in series}) == 1:
            pairs = ", ".join(sorted(str(r["pip_version"]) for r in series))
            row["cudnn"] = str(series[0]["cudnn"])
            row["note"] = (f"{display(framework)} {version}: the {base} build for CUDA {cuda} from its own index; its cuDNN "
                           f"{row['cudnn']} is the one every build for CUDA {cuda} of its series in the data pairs with it "
                           f"({pairs}); the architectures it was compiled for are not in the data")
            row["source"] += f"; {series[0]['source']}"
        return row
    return None


# what a row says about a build, as opposed to where it was read or which release it is
_NOT_BUILD = ("version", "pip_version", "date", "released")


def _series_rows(framework: str, version: str) -> list[dict[str, Any]]:
    """The rows of a patch release the data does not hold (TensorFlow 2.4.1, ONNX Runtime 1.20.1), from the releases of
    its series (2.4.x) the data does hold, where every one of them has the same builds: a framework's patch releases
    keep their series' CUDA, cuDNN, driver and architectures, and the data's own rows show it for this series (where
    they differ within the series, nothing is inferred). Each row says so in its source."""
    have = version_tuple(version)
    if not have or len(have) < 3 or re.search(r"[A-Za-z+-]", version):
        return []
    series = [v for v in known_releases(framework) if (version_tuple(v) or ())[:2] == have[:2]]
    if not series:
        return []

    def builds(release: str, os_name: object) -> list[tuple[tuple[str, str], ...]]:
        rows = [row for row in all_rows(framework) if str(row.get("version")) == release and row.get("os") == os_name]
        return sorted(tuple(sorted((key, repr(value)) for key, value in row.items()
                                   if key not in _NOT_BUILD and "source" not in key and "note" not in key))
                      for row in rows)

    # per platform: the data may hold a series' Windows builds from one release and its Linux builds from another
    # (TensorFlow 1.13.0 on Windows, 1.13.1 on Linux); on each, every release that has builds there must agree
    out: list[dict[str, Any]] = []
    platforms = list(dict.fromkeys(row.get("os") for row in all_rows(framework) if str(row.get("version")) in series))
    for os_name in platforms:
        holders = [release for release in series if builds(release, os_name)]
        first = builds(holders[0], os_name)
        if any(builds(other, os_name) != first for other in holders[1:]):
            return []
        label = f"{display(framework)} {version} is not in the data; every release of its series it holds " \
                f"({', '.join(holders)}) has these builds, which a patch release keeps"
        out += [{**row, "version": version, "source": f"{label}: {row.get('source', '')}"}
                for row in all_rows(framework) if str(row.get("version")) == holders[0] and row.get("os") == os_name]
    return out


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
    known = known_cuda_rows(need.rows)
    exact = [row for row in known if major_minor(str(row.get("cuda"))) == major_minor(wanted)]
    same_major = [row for row in known if major(str(row.get("cuda"))) == major(wanted)]
    return exact or same_major or need.rows


def default_rows(need: Needs) -> list[dict[str, Any]]:
    """The build a plain `pip install` gets, where the data says; otherwise every build."""
    default = [row for row in need.rows if row.get("pypi_default") is True]
    return default or need.rows


# --- which builds of a release exist (for the planner) ------------------------------------------

@record(frozen=True)
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
    accepted = accepted_cudnn(row)
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


# --- rows read for a verdict (knowledge/verdicts.py) ---------------------------------------------

def known_cuda_rows(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rows that name one CUDA version (Theano's ["unknown"] and other lists name none)."""
    return [row for row in rows if isinstance(row.get("cuda"), str) and row["cuda"] not in ("", "unknown")]


def accepted_cudnn(row: dict[str, Any]) -> list[str]:
    value = row.get("cudnn")
    values = value if isinstance(value, list) else [value]
    return [str(v) for v in values if v not in (None, "", "unknown", "none")]


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
                          fix=f"use one of {', '.join(sorted(profiles()))}, e.g. --framework tensorflow==2.15.0", code="CD001")
    if version is None:
        raise DoctorError(f"--framework {spec!r}: which version?", fix=f"write it as {name}==VERSION", code="CD001")
    need = needs(canonical, version, os_name)
    if not need.rows:
        raise DoctorError(f"--framework {spec!r}: no data for {canonical} {version} in compat/",
                          fix=f"see the known releases with `cudnn-doctor compat --list {canonical}`", code="CD001")
    row = next((r for r in need.rows if r.get("pypi_default") is True), need.rows[-1])
    expected = accepted_cudnn(row)
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
