"""`cudnn-doctor compat`: what a framework release needs, and whether a combination works."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from cudnn_doctor.errors import DoctorError
from cudnn_doctor.knowledge import frameworks as knowledge
from cudnn_doctor.knowledge import gpu_support, inputs, query, verdicts
from cudnn_doctor.knowledge.data import load
from cudnn_doctor.versions import ascii_digits, version_tuple

SCHEMA = "cudnn-doctor/compat/1"
# the tables that are no framework's; each framework's columns are its compat/rules.toml row's list_columns
STACK_COLUMNS = {
    "cudnn": ("version", "build", "cuda", "cuda_toolkits", "min_compute_capability", "max_compute_capability",
              "linux_min_driver"),
    "cuda": ("version", "linux_min_driver", "windows_min_driver"),
}


def list_columns() -> dict[str, tuple[str, ...]]:
    """Every table `compat --list` prints, and its columns: the frameworks' (compat/rules.toml), then cuDNN's and CUDA's."""
    tables = {str(row["table"]): tuple(row["list_columns"]) for row in knowledge.profiles().values()}
    return {**tables, **STACK_COLUMNS}


def list_rows(subject: str, cuda: str | None = None) -> dict[str, Any]:
    """Every row of one compat table, newest first, as {"columns": [...], "rows": [...]}; with CUDA, the rows of
    builds for that CUDA (its major.minor; a row that names only a major, for that major)."""
    name = knowledge.canonical_name(subject) or subject.lower()
    tables = list_columns()
    if name not in tables:
        raise DoctorError(f"--list {inputs.shown(subject)}: no such table", fix=f"use one of {', '.join(tables)}", code="CD001")
    if name == "cudnn":
        rows = [{**release, **variant, "version": release["version"], "build": variant.get("build", release.get("build")),
                 "source": variant.get("source") or release.get("source")}
                for release in load("cudnn").get("release", []) for variant in release.get("variant", [{}])]
    elif name == "cuda":
        rows = list(load("cuda").get("toolkit", []))
    else:
        rows = knowledge.all_rows(name)
    rows.sort(key=lambda row: version_tuple(str(row.get("version"))) or (), reverse=True)
    columns = tables[name]
    data: dict[str, Any] = {"schema": SCHEMA, "table": name, "columns": [*columns, "source"]}
    if cuda is not None:
        wanted = inputs.version_option("cuda", cuda)
        assert wanted is not None
        column = "version" if name == "cuda" else "cuda"
        rows = [row for row in rows if _for_cuda(row.get(column), wanted.text)]
        data["cuda"] = wanted.text
    data["rows"] = [{column: row.get(column) for column in (*columns, "source")} for row in rows]
    data["exit_code"] = 0
    return data


def _for_cuda(value: object, cuda: str) -> bool:
    """Is a row's CUDA (a version, a list of them, a major alone) a build for CUDA (major.minor)?"""
    from cudnn_doctor.versions import major_minor

    values = value if isinstance(value, list) else [value]
    wanted = major_minor(cuda)
    for item in values:
        text = str(item).removesuffix(".x")
        found = major_minor(text)
        if found is not None and wanted is not None and (found == wanted or (text.isascii() and text.isdecimal() and found[0] == wanted[0])):
            return True
    return False


def combination(cuda: str | None, cudnn: str | None, driver: str | None, compute_capability: str | None,
                os_name: str) -> knowledge.Combination:
    """The options, checked: a bad value is a usage error before anything is judged."""
    checked = {option: inputs.version_option(option, value)
               for option, value in (("cuda", cuda), ("cudnn", cudnn), ("driver", driver))}
    return knowledge.Combination(
        cuda=checked["cuda"].text if checked["cuda"] else None,
        cudnn=checked["cudnn"].text if checked["cudnn"] else None,
        driver=checked["driver"].text if checked["driver"] else None,
        compute_capability=inputs.compute_capability(compute_capability), os=inputs.os_name(os_name))


def answer(spec: str, combo: knowledge.Combination, artifact: str | None = None) -> dict[str, Any]:
    """The compat/1 answer for SPEC ("tensorflow==2.15.0"), with a verdict when COMBO names anything."""
    name, version = inputs.framework_spec("", spec)
    if artifact is not None:
        inputs.plain_text("--artifact", artifact, inputs.MAX_SPEC_LENGTH)  # nd4j-cuda-10.2: its version too
    if name.lower() in ("cudnn", "nvidia-cudnn", "nvidia-cudnn-cu12", "nvidia-cudnn-cu13", "nvidia-cudnn-cu11"):
        return _cudnn_answer(name, version, combo)
    canonical = knowledge.canonical_name(name)
    if canonical is None:
        raise DoctorError(f"unknown framework {inputs.shown(name)}",
                          fix=f"use one of {', '.join(sorted(knowledge.profiles()))} or cudnn==X.Y.Z", code="CD001")
    if version is None:
        raise DoctorError(f"which {canonical} release? {inputs.shown(spec)} names no version",
                          fix=f"write it as {name}==VERSION; `cudnn-doctor compat --list {canonical}` lists them", code="CD001")
    version = inputs.release_version(name, version)
    need = knowledge.needs(canonical, version, combo.os, artifact, package=name)
    requires = [_requirement_of(row) for row in need.rows]
    data: dict[str, Any] = {"schema": SCHEMA, "framework": canonical, "version": version, "requires": requires}
    if need.build_cuda:
        data["build"] = f"CUDA {need.build_cuda}"
    data["builds"] = [asdict(build) for build in knowledge.builds_of(need, combo.os)]
    if knowledge.rules(canonical):
        data["rules"] = knowledge.rules(canonical)
    if any((combo.cuda, combo.cudnn, combo.driver, combo.compute_capability)) or need.missing:
        verdict, reasons = verdicts.judge(need, combo)
        data["given"] = {key: value for key, value in asdict(combo).items() if value is not None}
        data["verdict"] = verdict
        data["reasons"] = [asdict(reason) for reason in reasons]
    data["exit_code"] = 1 if data.get("verdict") == knowledge.INCOMPATIBLE else 0
    return data


def _cudnn_answer(name: str, version: str | None, combo: knowledge.Combination) -> dict[str, Any]:
    """cudnn==X.Y.Z: NVIDIA's support matrix for that release against the driver, CUDA and GPU given."""
    if version is None:
        raise DoctorError(f"which cuDNN release? {inputs.shown(name)} names no version", fix="write it as cudnn==9.19.0", code="CD001")
    checked = inputs.version_option("cudnn", version)
    assert checked is not None
    # "5.1" is a range of 9.x's kind, but cuDNN 5.0, 5.1 and 6.0 were releases NVIDIA named with two numbers
    named = version_tuple(checked.text)
    release = query.cudnn_release(checked.text) if not checked.is_range or (named is not None and len(named) == 2
                                                                             and named[0] <= 6) else None
    requires = [{"cuda": variant.get("cuda"), "cuda_toolkits": variant.get("cuda_toolkits"),
                 "compute_capability": _cc_range(variant), "driver": f">={variant['linux_min_driver']}"
                 if variant.get("linux_min_driver") not in (None, "unknown") else None,
                 "source": variant.get("source") or (release or {}).get("source")}
                for variant in (release or {}).get("variant", [])]
    data: dict[str, Any] = {"schema": SCHEMA, "framework": "cudnn", "version": checked.text, "requires": requires}
    if release is not None:  # where NVIDIA's wheels of it exist, per CUDA major and platform
        data["builds"] = [asdict(build) for build in query.cudnn_published(checked.text)]
    reasons: list[knowledge.Reason] = []
    if release is None:
        newer = knowledge.newer_than_data("cudnn", checked.text)
        reasons.append(knowledge.Reason("release", knowledge.UNKNOWN, newer.why if newer else
                                     f"cuDNN {checked.text} is not a release in compat/cudnn.toml (an exact x.y.z is "
                                     "needed here)", "compat/cudnn.toml"))
    elif any((combo.cuda, combo.driver, combo.compute_capability)):
        reasons += _judge_cudnn_release(release, combo)
    if reasons:
        data["given"] = {key: value for key, value in asdict(combo).items() if value is not None}
        data["verdict"] = verdicts.overall(reasons)
        data["reasons"] = [asdict(reason) for reason in reasons]
    data["exit_code"] = 1 if data.get("verdict") == knowledge.INCOMPATIBLE else 0
    return data


def _cc_range(variant: dict[str, Any]) -> str | None:
    low, high = variant.get("min_compute_capability"), variant.get("max_compute_capability")
    if low in (None, "unknown"):
        return None
    return f"{low}-{high}" if high not in (None, "unknown") else f">={low}"


def _judge_cudnn_release(release: dict[str, Any], combo: knowledge.Combination) -> list[knowledge.Reason]:
    version = str(release["version"])
    variants = list(release.get("variant", []))
    source = release.get("source", "compat/cudnn.toml")
    reasons = []
    chosen = variants
    if combo.cuda:
        found = query.cudnn_variant(version, combo.cuda)
        newer = knowledge.newer_than_data("cuda", combo.cuda)
        if newer:
            reasons.append(newer)
        elif found is None:
            built = ", ".join(str(v.get("cuda")) for v in variants)
            reasons.append(knowledge.Reason("cuda", knowledge.INCOMPATIBLE, f"cuDNN {version} has no build for CUDA "
                                                                      f"{combo.cuda} (its builds: CUDA {built})", source))
            chosen = []
        else:
            chosen = query.toolkit_rows(found[1], combo.cuda)
            reasons.append(knowledge.Reason("cuda", knowledge.COMPATIBLE, f"cuDNN {version} has a build for CUDA "
                                                                    f"{found[1].get('cuda')}",
                                         found[1].get("source") or source))
    if combo.driver and chosen:
        fitting = chosen  # with a GPU named, only the matrix rows that list it
        if combo.compute_capability:
            fitting = [v for v in chosen if (r := verdicts.matrix_row(release, v, combo.compute_capability)) is None
                       or r.verdict == knowledge.COMPATIBLE] or chosen
        judged = [_variant_driver(version, v, combo.driver, source) for v in fitting]
        reasons.append(next((r for r in judged if r.verdict == knowledge.COMPATIBLE), judged[0]))
    if combo.compute_capability and chosen:
        reasons.append(_cudnn_gpu(release, chosen, combo.compute_capability, source, combo.cuda))
    if combo.driver and combo.compute_capability:  # the GPU generation's own driver floor
        reasons += verdicts.gpu_driver_reasons(combo.driver, combo.compute_capability, combo.os)
    return reasons


def _cudnn_gpu(release: dict[str, Any], chosen: list[dict[str, Any]], cc: str, source: str,
               cuda: str | None = None) -> knowledge.Reason:
    """A GPU against the cuDNN builds in question: a CUDA major that no longer targets it (compat/gpu_support.toml
    [[cuda_floor]]) rules a build out; then NVIDIA's matrix row of the build; then the architectures the releases add
    and drop ([[support]]), which also overrule a matrix row's open "SM 3.5 and later" for a GPU that came after it."""
    version = str(release["version"])
    judged: list[knowledge.Reason | None] = []
    for variant in chosen:
        built = str(variant.get("toolkit") or variant.get("cuda"))
        below = gpu_support.below_cuda_floor(built, cc) or gpu_support.before_first_toolkit(cuda or built, cc)
        if below is not None:
            judged.append(knowledge.Reason("compute_capability", knowledge.INCOMPATIBLE,
                                           f"cuDNN {version} for CUDA {cuda or variant.get('cuda')}: {below[0]}",
                                           below[1]))
            continue
        if variant.get("arch_list"):  # the build's own fat binaries, read from its wheels
            judged.append(verdicts.wheel_kernels(release, variant, cc))
            continue
        judged.append(verdicts.matrix_row(release, variant, cc))
    majors = {str(v.get("cuda")).split(".")[0] for v in chosen}
    support = gpu_support.release_support("cudnn", version, cc, f"cuDNN {version}", read_only=True,
                                          cuda_majors=majors)
    if support is not None and support[0] == knowledge.INCOMPATIBLE:
        return knowledge.Reason("compute_capability", *support)
    known = [r for r in judged if r is not None]
    fits = [r for r in known if r.verdict == knowledge.COMPATIBLE]
    if fits:
        return fits[0]
    if len(known) == len(judged) and known:  # every build in question is judged, none runs the GPU
        return known[0]
    if support is not None:
        return knowledge.Reason("compute_capability", *support)
    if known and known[0].verdict == knowledge.INCOMPATIBLE and len(chosen) == 1:
        return known[0]
    dropped = _dropped_before(version, majors, cc)
    if dropped is not None:
        return dropped
    bracketed = _bracketed(version, majors, cc)
    if bracketed is not None:
        return bracketed
    return knowledge.Reason("compute_capability", knowledge.UNKNOWN,
                            f"NVIDIA's support matrix for cuDNN {version} is not in the data", source)


def _dropped_before(version: str, majors: set[str], cc: str) -> knowledge.Reason | None:
    """A GPU older than what an earlier cuDNN release's matrix supports, for every CUDA major in question: the nearest
    earlier release (or this one) whose matrix rows of those majors are all in the data names its oldest supported
    compute capability; a later release does not bring back an architecture a matrix dropped (compat/gpu_support.toml
    [[support]]: a drop holds for every later release), so this one lacks it too."""
    have, release = verdicts._cc(cc), version_tuple(version)
    if have is None or release is None or not majors:
        return None
    earlier = sorted((r for r in load("cudnn").get("release", []) if (version_tuple(str(r["version"])) or ()) <= release),
                     key=lambda r: version_tuple(str(r["version"])) or (), reverse=True)
    for row in earlier:
        rows = [v for v in row.get("variant", []) if str(v.get("cuda")).split(".")[0] in majors]
        lows = [verdicts._cc(str(v.get("min_compute_capability"))) for v in rows]
        if not rows or {str(v.get("cuda")).split(".")[0] for v in rows} != majors or any(low is None for low in lows):
            continue
        oldest = min(low for low in lows if low is not None)
        if have >= oldest:
            return None  # the nearest matrix the data holds supports it: this release's own matrix decides
        low_text = ".".join(map(str, oldest))
        return knowledge.Reason("compute_capability", knowledge.INCOMPATIBLE,
                                f"cuDNN {row['version']}'s support matrix starts at compute capability {low_text}, and "
                                f"a later release does not bring back a GPU a matrix dropped: cuDNN {version} does not "
                                f"support compute capability {cc}",
                                str(rows[0].get("source") or row.get("source", "")))
    return None


def _matrix_range(row: dict[str, Any], majors: set[str]) -> tuple[tuple[int, ...], tuple[int, ...], str] | None:
    """(oldest, newest, source) of compute capabilities a release's matrix rows of MAJORS all support, or None where
    a row of those majors is not in the data."""
    rows = [v for v in row.get("variant", []) if str(v.get("cuda")).split(".")[0] in majors]
    if not rows or {str(v.get("cuda")).split(".")[0] for v in rows} != majors:
        return None
    lows = [verdicts._cc(str(v.get("min_compute_capability"))) for v in rows]
    highs = [verdicts._cc(str(v.get("max_compute_capability"))) for v in rows]
    if any(low is None for low in lows) or any(high is None for high in highs):
        return None
    return (max(low for low in lows if low is not None), min(high for high in highs if high is not None),
            str(rows[0].get("source") or row.get("source", "")))


def _bracketed(version: str, majors: set[str], cc: str) -> knowledge.Reason | None:
    """A release whose own matrix is not in the data, between two releases whose matrices (for every CUDA major in
    question) both support the GPU: cuDNN adds an architecture once and drops it for good (compat/gpu_support.toml
    [[support]]; _dropped_before), so every release between two that support it supports it too."""
    have, release = verdicts._cc(cc), version_tuple(version)
    if have is None or release is None or not majors:
        return None
    ordered = sorted(load("cudnn").get("release", []), key=lambda r: version_tuple(str(r["version"])) or ())
    before = [r for r in ordered if (version_tuple(str(r["version"])) or ()) < release]
    after = [r for r in ordered if (version_tuple(str(r["version"])) or ()) > release]
    older = next(((r, found) for r in reversed(before) if (found := _matrix_range(r, majors)) is not None), None)
    newer = next(((r, found) for r in after if (found := _matrix_range(r, majors)) is not None), None)
    if older is None or newer is None:
        return None
    if not all(low <= have <= high for low, high, _ in (older[1], newer[1])):
        return None
    return knowledge.Reason("compute_capability", knowledge.COMPATIBLE,
                            f"cuDNN {older[0]['version']}'s and {newer[0]['version']}'s support matrices both include "
                            f"compute capability {cc}, and cuDNN adds an architecture once and drops it for good: "
                            f"cuDNN {version}, between them, supports it",
                            f"{older[1][2]}; {newer[1][2]}")


def _variant_driver(version: str, variant: dict[str, Any], driver: str, source: str) -> knowledge.Reason:
    """DRIVER against one cuDNN build: its CUDA runtime's floor decides (compat/rules.toml [cudnn_driver]); a newer
    driver named in NVIDIA's matrix row is what NVIDIA tested with, a warning when the driver is below it."""
    floor = variant.get("linux_min_driver")
    label = f"cuDNN {version} for CUDA {variant.get('toolkit') or variant.get('cuda')}"
    cuda = str(variant.get("toolkit") or variant.get("cuda"))
    rule = load("rules").get("cudnn_driver", {})
    runtime = verdicts.judge_driver_for_cuda(cuda, driver, "linux")
    if runtime.verdict == knowledge.INCOMPATIBLE:
        return knowledge.Reason("driver", knowledge.INCOMPATIBLE, f"{label} runs on the CUDA {cuda} runtime: "
                                                            f"{runtime.why}", runtime.source)
    matrix_source = variant.get("source") or source
    if floor not in (None, "unknown"):
        have, need = version_tuple(driver) or (), version_tuple(str(floor)) or ()
        if have >= need:
            return knowledge.Reason("driver", knowledge.COMPATIBLE, f"{label} needs driver >= {floor}; {driver} is "
                                                              "that or newer", matrix_source)
        if runtime.verdict == knowledge.COMPATIBLE and rule.get("rule") == "cuda-runtime":
            return knowledge.Reason("driver", knowledge.COMPATIBLE,
                                    f"warning: NVIDIA's matrix lists driver {floor} for {label}, but cuDNN's driver "
                                    f"need is its CUDA runtime's, and {runtime.why}: it loads and runs; NVIDIA "
                                    f"tested it with {floor}", f"{matrix_source}; {runtime.source}; {rule['source']}",
                                    warning=True)
        return knowledge.Reason("driver", knowledge.INCOMPATIBLE if runtime.verdict != knowledge.UNKNOWN else
                                knowledge.UNKNOWN, f"{label} needs driver >= {floor}; {driver} is older",
                                matrix_source)
    if runtime.verdict == knowledge.COMPATIBLE and rule.get("rule") == "cuda-runtime":
        return knowledge.Reason("driver", knowledge.COMPATIBLE, f"{label}: cuDNN's driver need is its CUDA runtime's; "
                                                          f"{runtime.why}", f"{runtime.source}; {rule['source']}",
                                warning=runtime.warning)
    return knowledge.Reason("driver", knowledge.UNKNOWN, f"{label}: minimum driver unknown", source)


def _requirement_of(row: dict[str, Any]) -> dict[str, Any]:
    keep = ("version", "cuda", "cudnn", "cudnn_requirement", "os", "artifact", "package", "python", "cudnn_package",
            "pypi_default", "arch_list", "ptx", "min_compute_capability", "min_cuda", "max_cuda", "note")
    requirement = {key: row[key] for key in keep if row.get(key) not in (None, "")}

    cuda = row.get("cuda")
    if isinstance(cuda, str) and cuda != "unknown":
        minimum = query.toolkit_min_driver(cuda, row.get("os", "linux")) if "." in cuda else None
        minimum = minimum or (query.minor_compat_min_driver(int(cuda.split(".")[0]), row.get("os", "linux"))
                              if ascii_digits(cuda.split(".")[0]) and int(cuda.split(".")[0]) >= 11 else None)
        if minimum:
            requirement["driver"] = f">={minimum.version}"
            requirement["driver_source"] = minimum.source
    requirement["source"] = row.get("source")
    return requirement


def main(framework: str | None, cuda: str | None, cudnn: str | None, driver: str | None,
         compute_capability: str | None, os_name: str, artifact: str | None, list_table: str | None,
         json_output: bool, verbose: bool) -> None:
    """The command: the answer (or a whole table) rendered; ends with SystemExit(status)."""
    if list_table is None and framework is None:
        raise DoctorError("name a framework or a table", fix="cudnn-doctor compat tensorflow==2.15.0, or --list cudnn", code="CD003")
    if list_table is None and framework is not None and cuda is not None and not (cudnn or driver or
                                                                                   compute_capability or artifact):
        name, version = inputs.framework_spec("", framework)
        if version is None and knowledge.canonical_name(name):  # which builds of it are for my CUDA?
            list_table = knowledge.canonical_name(name)
    if list_table is not None:
        data = list_rows(list_table, cuda)
    else:
        data = answer(framework or "", combination(cuda, cudnn, driver, compute_capability, os_name), artifact)
    if json_output:
        from cudnn_doctor.render.json_out import write_json

        write_json(data)
    else:
        from cudnn_doctor.render import compat_text
        from cudnn_doctor.render.console import console

        (compat_text.render_list if list_table else compat_text.render_answer)(data, console(), verbose)
    raise SystemExit(data.get("exit_code", 0))
