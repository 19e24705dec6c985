"""What a framework release needs, and whether a CUDA / cuDNN / driver / GPU combination works.

Each part of a verdict (cuda, cudnn, driver, compute capability) is judged on its own
from one row of compat/ data and carries that row's source. A part the data says
nothing about is "unknown", never "compatible".
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from cudnn_doctor.compat import query
from cudnn_doctor.compat.data import load
from cudnn_doctor.versions import major, major_minor, matches_prefix, version_tuple

COMPATIBLE, INCOMPATIBLE, UNKNOWN = "compatible", "incompatible", "unknown"
ALIASES = {
    "torch": "pytorch", "pytorch": "pytorch", "tensorflow": "tensorflow", "tf": "tensorflow",
    "tensorflow-gpu": "tensorflow", "tensorflow_gpu": "tensorflow", "theano": "theano", "dl4j": "dl4j",
    "deeplearning4j": "dl4j", "nd4j": "dl4j", "jax": "jax",
}
ROW_TABLE = {"pytorch": "build", "tensorflow": "build", "theano": "release", "dl4j": "backend"}


@dataclass(frozen=True)
class Reason:
    part: str  # "cuda" | "cudnn" | "driver" | "compute_capability" | "release"
    verdict: str
    why: str
    source: str


@dataclass(frozen=True)
class Combination:
    cuda: str | None = None
    cudnn: str | None = None
    driver: str | None = None
    compute_capability: str | None = None
    os: str = "linux"


@dataclass
class Needs:
    framework: str
    version: str
    rows: list[dict[str, Any]]
    build_cuda: str | None = None  # the CUDA build asked for (torch 2.5.0+cu124 -> 12.4)
    notes: list[str] = field(default_factory=list)


def canonical_name(name: str) -> str | None:
    return ALIASES.get(name.strip().lower())


def split_spec(text: str) -> tuple[str, str | None]:
    """"tensorflow==2.15.0" -> ("tensorflow", "2.15.0"); "torch" -> ("torch", None)."""
    match = re.match(r"^\s*([A-Za-z0-9_.-]+?)\s*(?:==\s*([^\s,;]+))?\s*$", text)
    if not match:
        return text, None
    return match.group(1), match.group(2)


def all_rows(framework: str) -> list[dict[str, Any]]:
    table = ROW_TABLE.get(framework)
    return list(load(framework).get(table, [])) if table else []


def rules(framework: str) -> dict[str, Any]:
    return dict(load(framework).get("rules", {}))


def needs(framework: str, version: str, os_name: str = "linux", artifact: str | None = None) -> Needs:
    """The data rows that describe FRAMEWORK at VERSION (e.g. every CUDA build of a torch release)."""
    base, _, local = version.partition("+")
    build_cuda = None
    if framework == "pytorch" and local.startswith("cu") and local[2:].isdigit():
        digits = local[2:]
        build_cuda = f"{digits[:-1]}.{digits[-1]}"
    rows = [row for row in all_rows(framework) if _same_release(row.get("version", ""), base)]
    if framework == "tensorflow":
        rows = [row for row in rows if row.get("os", "linux") == os_name] or rows
    if framework == "dl4j" and artifact:
        wanted = artifact.removesuffix("-platform")
        rows = [row for row in rows if row.get("artifact") == wanted]
    return Needs(framework, base, rows, build_cuda)


def _same_release(row_version: str, wanted: str) -> bool:
    if row_version == wanted:
        return True
    have, want = version_tuple(row_version), version_tuple(wanted)
    # "2.15" asked for: any 2.15.x row; DL4J's "1.0.0-beta7" compares as text above
    return bool(have and want and len(want) < 3 and have[: len(want)] == want and "-" not in wanted)


def judge(need: Needs, combo: Combination) -> tuple[str, list[Reason]]:
    """The verdict for NEED under COMBO, with a reason per part."""
    if not need.rows:
        return UNKNOWN, [Reason("release", UNKNOWN, f"no data for {need.framework} {need.version} in compat/",
                                f"compat/{need.framework}.toml")]
    rows = rows_for_cuda(need, combo.cuda)
    reasons: list[Reason] = []
    if combo.cuda:
        reasons.append(_judge_cuda(need, rows, combo.cuda))
    if combo.cudnn:
        reasons.append(judge_cudnn(need, rows, combo.cudnn))
    if combo.driver:
        reasons.append(_judge_driver(need, rows, combo.driver, combo.os))
    if combo.compute_capability:
        reasons.append(judge_compute_capability(need, rows, combo.compute_capability, combo.cudnn))
    verdicts = {reason.verdict for reason in reasons}
    overall = INCOMPATIBLE if INCOMPATIBLE in verdicts else UNKNOWN if UNKNOWN in verdicts or not reasons else COMPATIBLE
    return overall, reasons


def rows_for_cuda(need: Needs, cuda: str | None) -> list[dict[str, Any]]:
    wanted = need.build_cuda or cuda
    if wanted is None:
        return need.rows
    exact = [row for row in need.rows if major_minor(row.get("cuda")) == major_minor(wanted)]
    same_major = [row for row in need.rows if major(row.get("cuda")) == major(wanted)]
    return exact or same_major or need.rows


def _cuda_list(rows: list[dict[str, Any]]) -> str:
    values = sorted({str(row.get("cuda")) for row in rows}, key=lambda v: version_tuple(v) or ())
    return ", ".join(values)


def _judge_cuda(need: Needs, rows: list[dict[str, Any]], cuda: str) -> Reason:
    for row in rows:
        built = row.get("cuda")
        if built in (None, "unknown"):
            continue
        if major_minor(built) == major_minor(cuda) or (need.framework == "tensorflow" and matches_prefix(cuda, built)):
            return Reason("cuda", COMPATIBLE, f"{need.framework} {need.version} has a build for CUDA {built}", row["source"])
    same_major = [row for row in rows if major(row.get("cuda")) == major(cuda)]
    if same_major:
        row = max(same_major, key=lambda r: version_tuple(r.get("cuda")) or ())
        built = row["cuda"]
        if need.framework == "pytorch":
            why = (f"no cu{built.replace('.', '')} build matches CUDA {cuda} exactly, but torch's pip wheels bring "
                   f"their own CUDA {built} runtime; only the driver must support it")
            return Reason("cuda", COMPATIBLE, why, row["source"])
        if (major_minor(cuda) or (0, 0)) >= (major_minor(built) or (0, 0)):
            why = (f"built for CUDA {built}; CUDA {cuda} is the same major and newer, which CUDA's minor-version "
                   "compatibility allows")
            return Reason("cuda", COMPATIBLE, why, row["source"])
        why = f"built for CUDA {built}; CUDA {cuda} is older than that, so newer runtime symbols may be missing"
        return Reason("cuda", INCOMPATIBLE, why, row["source"])
    known = [row for row in rows if row.get("cuda") not in (None, "unknown")]
    if not known:
        return Reason("cuda", UNKNOWN, f"the data does not say which CUDA {need.framework} {need.version} needs",
                      rows[0]["source"])
    return Reason("cuda", INCOMPATIBLE, f"{need.framework} {need.version} is built for CUDA {_cuda_list(known)}, "
                                        f"not {cuda}", known[0]["source"])


def _accepted_cudnn(row: dict[str, Any]) -> list[str]:
    value = row.get("cudnn")
    values = value if isinstance(value, list) else [value]
    return [str(v) for v in values if v not in (None, "", "unknown")]


def judge_cudnn(need: Needs, rows: list[dict[str, Any]], cudnn: str) -> Reason:
    known = [row for row in rows if _accepted_cudnn(row)]
    if not known:
        return Reason("cudnn", UNKNOWN, f"the data does not say which cuDNN {need.framework} {need.version} needs",
                      rows[0]["source"])
    rule = rules(need.framework)
    for row in known:
        for built in _accepted_cudnn(row):
            if _cudnn_accepts(need.framework, built, cudnn):
                how = {"pytorch": "same major, minor at least the compiled one (torch.backends.cudnn)",
                       "tensorflow": "same major, minor at least the compiled one (TensorFlow's runtime check)"}
                if need.framework in how:
                    why = f"built with cuDNN {built}; {cudnn} is accepted ({how[need.framework]})"
                else:
                    why = f"accepts cuDNN {built}.x; {cudnn} is in that series"
                source = row["source"] + ("; " + rule["cudnn_runtime_source"] if "cudnn_runtime_source" in rule else "")
                return Reason("cudnn", COMPATIBLE, why, source)
    row = known[0]
    accepted = ", ".join(sorted({b for r in known for b in _accepted_cudnn(r)}))
    if need.framework in ("pytorch", "tensorflow"):
        why = f"built with cuDNN {accepted}; {cudnn} has another major or an older minor, which it refuses at run time"
    else:
        why = f"accepts cuDNN {accepted}; {cudnn} is not among them"
    return Reason("cudnn", INCOMPATIBLE, why, row["source"])


def _cudnn_accepts(framework: str, built: str, runtime: str) -> bool:
    built_parts, runtime_parts = version_tuple(built), version_tuple(runtime)
    if not built_parts or not runtime_parts:
        return False
    if framework in ("pytorch", "tensorflow"):
        if built_parts[0] != runtime_parts[0]:
            return False
        if len(built_parts) < 2:
            return True
        runtime_minor = runtime_parts[1] if len(runtime_parts) > 1 else 0
        if framework == "pytorch" and built_parts[0] < 7:
            return runtime_minor == built_parts[1]
        return runtime_minor >= built_parts[1]
    return matches_prefix(runtime, built)


def _judge_driver(need: Needs, rows: list[dict[str, Any]], driver: str, os_name: str) -> Reason:
    cudas = [row["cuda"] for row in rows if row.get("cuda") not in (None, "unknown")]
    if not cudas:
        return Reason("driver", UNKNOWN, "the data does not say which CUDA this build uses", rows[0]["source"])
    lowest = min(cudas, key=lambda v: version_tuple(v) or ())
    full = query.toolkit_min_driver(lowest, os_name)
    minor = query.minor_compat_min_driver(major(lowest) or 0, os_name)
    have = version_tuple(driver)
    if full and have and have >= (version_tuple(full.version) or ()):
        return Reason("driver", COMPATIBLE, f"CUDA {lowest} needs driver >= {full.version}; {driver} is newer",
                      full.source)
    if minor and have and have >= (version_tuple(minor.version) or ()):
        why = (f"CUDA {lowest} wants driver >= {full.version if full else 'its GA driver'}, but {driver} runs it "
               f"through CUDA {major(lowest)}.x minor-version compatibility (>= {minor.version}); PTX JIT of newer "
               "code may fail")
        return Reason("driver", COMPATIBLE, why, minor.source)
    if full is None and minor is None:
        return Reason("driver", UNKNOWN, f"no minimum driver known for CUDA {lowest}", "compat/cuda.toml")
    needed = minor or full
    assert needed is not None
    floor = f"driver >= {full.version}" if full else "a newer driver"
    if minor:
        floor += f" (>= {minor.version} with CUDA {major(lowest)}.x minor-version compatibility)"
    return Reason("driver", INCOMPATIBLE, f"CUDA {lowest} needs {floor}; {driver} is older", needed.source)


def judge_compute_capability(need: Needs, rows: list[dict[str, Any]], cc: str, cudnn: str | None) -> Reason:
    rule = rules(need.framework)
    cudnn_version = cudnn or next((b for row in rows for b in _accepted_cudnn(row)), None)
    have = version_tuple(cc)
    if need.framework == "pytorch" and cudnn_version and (version_tuple(cudnn_version) or ()) >= (9, 11) \
            and have and have < (7, 5):
        return Reason("compute_capability", INCOMPATIBLE,
                      f"PyTorch refuses cuDNN {cudnn_version} (>= 9.11) on GPUs of compute capability below 7.5",
                      rule.get("cudnn_runtime_source", "compat/pytorch.toml"))
    cuda = next((row.get("cuda") for row in rows if row.get("cuda") not in (None, "unknown")), None)
    variant = query.cudnn_variant(cudnn_version, cuda) if cudnn_version and cuda else None
    if variant is None:
        return Reason("compute_capability", UNKNOWN,
                      f"no compute-capability data for cuDNN {cudnn_version or '?'} with CUDA {cuda or '?'}",
                      "compat/cudnn.toml")
    release, row = variant
    low, high = row.get("min_compute_capability"), row.get("max_compute_capability")
    source = row.get("source") or release.get("source", "")
    if low in (None, "unknown"):
        return Reason("compute_capability", UNKNOWN,
                      f"cuDNN {release['version']} for CUDA {row.get('cuda')}: supported compute capabilities unknown",
                      source)
    if have and have < (version_tuple(low) or ()):
        return Reason("compute_capability", INCOMPATIBLE,
                      f"cuDNN {release['version']} (CUDA {row.get('cuda')}) supports compute capability {low} and "
                      f"newer; this GPU is {cc}", source)
    if high not in (None, "unknown") and have and have > (version_tuple(high) or ()):
        return Reason("compute_capability", UNKNOWN,
                      f"cuDNN {release['version']} lists compute capabilities up to {high}; {cc} is newer and "
                      "relies on PTX JIT", source)
    return Reason("compute_capability", COMPATIBLE,
                  f"cuDNN {release['version']} (CUDA {row.get('cuda')}) supports {low}"
                  f"{' to ' + high if high not in (None, 'unknown') else ' and newer'}", source)


def assumed_framework(spec: str, installs: list[Any], os_name: str = "linux") -> Any:
    """A Framework record for `check --framework NAME==VERSION`: as if that release were installed
    (its PyPI default build), loading the cuDNN the dynamic loader picks."""
    from cudnn_doctor.errors import DoctorError
    from cudnn_doctor.model import Framework

    name, version = split_spec(spec)
    canonical = canonical_name(name)
    if canonical is None or canonical not in ROW_TABLE:
        raise DoctorError(f"--framework {spec!r}: unknown framework",
                          fix="use one of tensorflow, torch, theano, dl4j, e.g. --framework tensorflow==2.15.0")
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
    internal = {"pytorch": "torch"}.get(canonical, canonical)
    return Framework(name=internal, version=version, cuda_built_for=row.get("cuda") if row.get("cuda") != "unknown"
                     else None, cudnn_expected=expected[0] if expected else None,
                     cudnn_used=used.library if used else None, found_via="--framework", location=None,
                     details={"assumed": True, "artifact": row.get("artifact"), "row_source": row.get("source")})
