"""`cudnn-doctor explain`: a finding code, or a pasted error message, turned into its cause and fix.

Messages are matched against the cited catalog compat/errors.toml; the machine part runs
the `check` probes and says what on this machine bears on the message (the cuDNN major
it names, the versions it compares, the driver it blames).
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from typing import Any

from cudnn_doctor.codes import CODES
from cudnn_doctor.compat.data import load
from cudnn_doctor.model import Report
from cudnn_doctor.versions import version_tuple

SCHEMA = "cudnn-doctor/explain/1"
CODE = re.compile(r"^\s*(CD\d{3})\s*$", re.IGNORECASE)
MAX_TEXT = 2_000_000  # a pasted log longer than this is read from its end, where the error usually is


@dataclass(frozen=True)
class Match:
    id: str
    code: str
    framework: str
    cause: str
    fix: str
    source: str
    priority: int
    matched: str  # the text the pattern matched
    values: dict[str, str]  # named groups, normalised


def _compiled() -> list[tuple[dict[str, Any], re.Pattern[str]]]:
    entries = load("errors").get("error", [])
    return [(entry, re.compile(entry["pattern"], re.IGNORECASE | re.DOTALL)) for entry in entries]


def match_message(text: str) -> list[Match]:
    """Catalog entries matching TEXT, best first; only those of the highest priority that matched,
    so a summary line never outranks the specific message under it."""
    text = text[-MAX_TEXT:]
    found: list[Match] = []
    for entry, pattern in _compiled():
        hit = pattern.search(text)
        if hit is None:
            continue
        values = {key: normalise(key, value) for key, value in hit.groupdict().items() if value}
        found.append(Match(entry["id"], entry["code"], entry["framework"], entry["cause"].strip(),
                           entry["fix"].strip(), entry["source"].strip(), int(entry.get("priority", 0)),
                           " ".join(hit.group(0).split())[:300], values))
    if not found:
        return []
    top = max(m.priority for m in found)
    return sorted((m for m in found if m.priority == top), key=lambda m: m.id)


def normalise(key: str, value: str) -> str:
    """Versions as the catalog captured them -> dotted form ("8100" -> "8.1.0", "86" -> "8.6")."""
    value = value.strip().strip("'\"()")
    if key in ("runtime_version", "compiled_version"):
        if re.fullmatch(r"\d+,\s*\d+,\s*\d+", value):  # PyTorch prints (8, 3, 2)
            return ".".join(part.strip() for part in value.split(","))
        if value.isdigit():
            number = int(value)
            if number >= 90000:
                return f"{number // 10000}.{(number % 10000) // 100}.{number % 100}"
            return f"{number // 1000}.{(number % 1000) // 100}.{number % 100}"
    if key == "cuda_version" and value.isdigit():
        number = int(value)
        if number >= 1000:  # driver-API encoding: 12080 -> 12.8
            return f"{number // 1000}.{(number % 1000) // 10}"
        return f"{value[:-1]}.{value[-1]}"  # cudart64_110.dll -> 11.0
    if key == "compute_capability" and value.isdigit():
        return f"{value[:-1]}.{value[-1]}"
    return value


def explain_code(code: str) -> dict[str, Any]:
    entry = CODES.get(code.upper())
    if entry is None:
        return {"schema": SCHEMA, "query": code, "code": None, "matches": [], "machine": None, "exit_code": 1}
    text = {key: _placeholders(value) if isinstance(value, str) else value for key, value in asdict(entry).items()}
    return {"schema": SCHEMA, "query": code, "code": text, "matches": _catalog_for_code(entry.code), "machine": None,
            "exit_code": 0}


def _placeholders(template: str) -> str:
    """The registry's "{library}" as "<library>", "{{" as "{": how a template reads without a machine."""
    return re.sub(r"(?<!\{)\{(\w+)\}(?!\})", r"<\1>", template).replace("{{", "{").replace("}}", "}")


def _catalog_for_code(code: str) -> list[dict[str, Any]]:
    return [{"id": e["id"], "code": e["code"], "framework": e["framework"], "cause": e["cause"].strip(),
             "fix": e["fix"].strip(), "source": e["source"].strip(), "example": e["example"].strip()[:300]}
            for e in load("errors").get("error", []) if e["code"] == code]


def explain_text(text: str, report: Report | None) -> dict[str, Any]:
    matches = match_message(text)
    machine = machine_view(matches, report) if report is not None else None
    query = " ".join(text.split())
    return {
        "schema": SCHEMA,
        "query": query if len(query) <= 500 else query[:250] + " … " + query[-250:],
        "matches": [{k: v for k, v in asdict(m).items() if k != "priority"} for m in matches],
        "machine": machine,
        "exit_code": 0 if matches else 1,
    }


def machine_view(matches: list[Match], report: Report) -> dict[str, Any]:
    """What `check` sees that bears on the matched message, as sentences and the relevant findings."""
    said: list[str] = []
    values: dict[str, str] = {}
    for match in matches:
        values.update(match.values)
    installs = [i for i in report.cudnn if i.version]
    listing = ", ".join(f"{i.version} ({i.library})" for i in installs) or "none"
    wanted_major = values.get("cudnn_major") or _major_from_library(values.get("library", ""))
    if wanted_major and values.get("library", "libcudnn").lower().startswith(("libcudnn", "cudnn")):
        same = [i for i in installs if str(i.major) == wanted_major]
        visible = [i for i in same if "ld.so" in i.loaded_by or i.source == "env"]
        if not same:
            said.append(f"The message asks for cuDNN {wanted_major} ({values.get('library', 'libcudnn')}); this machine "
                        f"has no cuDNN {wanted_major} at all. cuDNN found: {listing}.")
        elif not visible:
            said.append(f"cuDNN {wanted_major} is installed ({', '.join(i.library for i in same)}) but not on the "
                        "dynamic loader's path, so a program that dlopens it by name cannot find it.")
        else:
            said.append(f"cuDNN {wanted_major} is on the loader's path here: {', '.join(i.library for i in visible)}; "
                        "the program that failed probably runs with another LD_LIBRARY_PATH (a service, a container).")
    for key, label in (("runtime_version", "the loaded"), ("compiled_version", "the compiled-for")):
        if key in values:
            have = [i for i in installs if version_tuple(i.version) == version_tuple(values[key])]
            where = ", ".join(i.library for i in have) or "no copy of that version on this machine"
            said.append(f"{label.capitalize()} cuDNN in the message is {values[key]}: {where}.")
    if "driver_version" in values or "cuda_version" in values or any(m.code.startswith("CD1") for m in matches):
        if report.driver.source == "none":
            said.append("This machine has no working NVIDIA driver (NVML and libcuda.so.1 cannot be loaded).")
        else:
            said.append(f"This machine's driver is {report.driver.version or 'of unknown version'} and supports "
                        f"CUDA {report.driver.cuda_driver_version or 'unknown'}.")
    if "compute_capability" in values and report.gpus:
        gpus = ", ".join(f"GPU {g.index} {g.name} (compute capability {g.compute_capability})" for g in report.gpus)
        said.append(f"This machine has {gpus}.")
    if not said:
        said.append(f"cuDNN found here: {listing}. Driver: {report.driver.version or 'none'}.")
    prefixes = {m.code[:3] for m in matches}
    related = [asdict(f) for f in report.findings if f.code[:3] in prefixes or f.severity == "error"]
    return {"summary": said, "findings": related,
            "cudnn": [{"version": i.version, "library": i.library, "loaded_by": list(i.loaded_by)} for i in installs],
            "driver": asdict(report.driver)}


def _major_from_library(library: str) -> str | None:
    match = re.search(r"(?:\.so\.|64_)(\d+)", library)
    return match.group(1) if match else None
