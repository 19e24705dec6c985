"""`cudnn-doctor explain`: a finding code, or a pasted error message, turned into its cause and fix.

A message is read for facts that do not depend on its wording (cudnn_doctor.explain.reader), the facts
are turned into causes (explain.classify), and the cited catalog compat/errors.toml gives the specific
explanation where one is known (explain.catalog). The machine part sets the libraries and versions the
message names against what `check` sees here: the loader's cuDNN copies, the toolkits, each framework.
"""

from __future__ import annotations

import functools
import os
import re
import stat
from collections.abc import Callable
from dataclasses import asdict
from typing import Any

from cudnn_doctor.codes import CODES
from cudnn_doctor.errors import DoctorError
from cudnn_doctor.explain import catalog, classify, reader, routing
from cudnn_doctor.explain.catalog import Match, normalise
from cudnn_doctor.explain.message_text import done_after_warning, no_cuda_platform, probe_without_failure
from cudnn_doctor.knowledge.data import load
from cudnn_doctor.model import Platform, Report
from cudnn_doctor.operating_system import CURRENT
from cudnn_doctor.versions import version_tuple

SCHEMA = "cudnn-doctor/explain/1"
CODE = re.compile(r"^\s{0,100}(CD\d{3})\s{0,100}$", re.IGNORECASE)
MAX_TEXT = reader.MAX_BYTES

__all__ = ["CODE", "SCHEMA", "Match", "explain_code", "explain_text", "match_message", "normalise"]


def match_message(text: str | bytes) -> list[Match]:
    """The catalog entries for TEXT (only the catalog; explain_text adds what the facts show)."""
    return catalog.match_lines(reader.candidate_lines(reader.to_text(text)))


def explain_code(code: str, platform: Platform | None = None) -> dict[str, Any]:
    """CODE's registry text and its fix; on a PLATFORM that treats it its own way (WSL 2's driver is the Windows
    one) the platform's explanation and fix, as `check` gives them there."""
    entry = CODES.get(code.upper())
    if entry is None:
        return {"schema": SCHEMA, "query": code, "code": None, "matches": [], "machine": None, "exit_code": 1}
    from cudnn_doctor.codes import explanation
    from cudnn_doctor.knowledge.advice import advice
    from cudnn_doctor.plan.platform import platform_remedy

    kind = platform.kind if platform is not None else None
    # the fix without a machine's values: commands that need none, and in words what to look up for the others
    text = {key: _placeholders(value) if isinstance(value, str) else value for key, value in asdict(entry).items()}
    text["explanation"] = _placeholders(explanation(entry.code, kind))
    text["fix"] = platform_remedy(entry.code, platform) or advice(entry.code, {})
    matches = _catalog_for_code(entry.code)
    for match in matches:  # the messages of CODE, each with the platform's fix where it has its own
        match["fix"] = platform_remedy(str(match["code"]), platform) or match["fix"]
    return {"schema": SCHEMA, "query": code, "code": text, "matches": matches, "machine": None, "exit_code": 0}


def _placeholders(template: str) -> str:
    """The registry's "{library}" as "<library>", "{{" as "{": how a template reads without a machine."""
    return re.sub(r"(?<!\{)\{(\w{1,40})\}(?!\})", r"<\1>", template).replace("{{", "{").replace("}}", "}")


def _catalog_for_code(code: str) -> list[dict[str, Any]]:
    errors = load("errors")
    catalog = [{"id": e["id"], "code": e["code"], "framework": e["framework"], "cause": e["cause"].strip(),
                "fix": e["fix"].strip(), "source": e["source"].strip(), "example": e["example"].strip()[:300]}
               for e in errors.get("error", []) if e["code"] == code]
    events = [{"id": e["id"], "code": e["code"], "framework": e["kind"], "cause": e["meaning"].strip(),
               "fix": e["fix"].strip(), "source": e["source"].strip(), "example": e["text"]}
              for e in errors.get("event", []) if e["code"] == code]
    xids = [{"id": f"xid-{x['number']}", "code": x["code"], "framework": "kernel", "cause": x["meaning"].strip(),
             "fix": x["action"].strip() + ".", "source": x["source"].strip(), "example": f"NVRM: Xid (PCI:…): {x['number']}, "
             f"{x['name']}"} for x in errors.get("xid", []) if x["code"] == code]
    return catalog + events + xids


def explain_text(text: str | bytes, report: Report | None, by_resemblance: bool = False) -> dict[str, Any]:
    """TEXT's causes (the catalog, then what its facts show); where no rule recognises it and BY_RESEMBLANCE, the
    code of the known reports it resembles (explain.resemblance), marked so."""
    from cudnn_doctor.explain.machine_values import machine_values

    facts = reader.read(text)
    machine = machine_values(report)  # what a value the message lacks is on this machine
    specific = catalog.match_lines(facts.lines, any(library.gpu for library in facts.libraries))
    from cudnn_doctor.explain.read_traceback import frame_causes

    causes = [*frame_causes(reader.to_text(text)), *classify.classify(facts)]  # what raised it, then what it says
    # the catalog's specific entries first, then what the facts show, then the catalog's summary lines (priority 0)
    summaries = [m for m in specific if m.priority == 0 and causes]
    matches: list[dict[str, Any]] = []
    covered: set[str] = set()
    parts = {library.file: library.part for library in facts.libraries}
    for match in specific:  # one answer per finding code
        # an entry about the loader answers with the code of the part of the stack its library belongs to
        code = dict(match.code_by_part).get(parts.get(match.values.get("library", ""), ""), match.code)
        code = routing.cause_code(code, match.values, match.matched, facts)  # the layer that caused it, not the reporter
        if match not in summaries and code not in covered:
            covered.add(code)
            matches.append(_filled({k: v for k, v in asdict(match).items() if k not in ("priority", "code_by_part")}
                                   | {"code": code}, machine))

    def add_causes() -> None:
        for cause in causes:
            if cause.code not in covered:
                covered.add(cause.code)
                line = facts.lines[cause.line] if 0 <= cause.line < len(facts.lines) else cause.fact
                matches.append(_from_cause(cause, facts.framework, line, machine))

    def add_summaries() -> None:
        for summary in summaries:
            if summary.code not in covered:
                covered.add(summary.code)
                matches.append(_filled({k: v for k, v in asdict(summary).items() if k not in ("priority", "code_by_part")},
                                       machine))

    if routing.framework_words_first(causes, summaries, facts):  # general phrases after the framework's own words
        add_summaries()
        add_causes()
    else:
        add_causes()
        add_summaries()
    # a GPU the message's own list of supported hardware holds is no fault of the build (judged against the text)
    matches[:] = [m for m in matches if m["code"] not in classify.ARCH_CODES
                  or not classify.listed_as_supported(facts, str((m.get("values") or {}).get("compute_capability", "")))]
    whole = reader.to_text(text)
    platform_row = no_cuda_platform(whole)
    dropped = False
    if platform_row is not None:  # no GPU build of the framework exists there: nothing to install, the program's to change
        kept = [m for m in matches if "*" not in platform_row["codes"] and m["code"] not in platform_row["codes"]]
        dropped = len(kept) < len(matches)
        matches[:] = kept
    probe = probe_without_failure(whole) or done_after_warning(whole)
    if probe is not None and matches:  # a program probed for NVIDIA's library, or warned, and went on: no fault
        matches.clear()
        dropped = True
    if not matches and not dropped and by_resemblance:
        matches += _by_resemblance(reader.to_text(text))
    _compiler_first(matches, whole)
    routing.memory_first(matches)
    routing.build_first(matches)
    routing.installer_first(matches)
    routing.inner_first(matches, catalog.wrappers())
    _judge_architecture(matches, facts)
    for answer in matches:
        _name_the_values(answer)
    if report is not None:
        _platform_remedies(matches, report)
    flat = " ".join(whole[-2000:].split())
    cut = reader.skipped(whole)
    aside = [{"text": row["text"], "kind": row["kind"], "why": row["why"].strip(), "source": row["source"].strip()}
             for row in reader.set_aside(whole)]
    if platform_row is not None and dropped:
        aside.append({"text": f"{platform_row['id']} ({platform_row['text'].strip()})", "kind": "other-platform", "why": platform_row["why"].strip(),
                      "source": platform_row["source"].strip()})
    if probe is not None and dropped:
        aside.append({"text": probe["text"], "kind": "harmless", "why": probe["why"].strip(), "source": probe["source"].strip()})
    if report is not None:
        for row in aside:
            if row["kind"] == "program":  # the program's GPU index against the GPUs this machine has
                row["why"] += "; " + _visible_gpus(report)
    return {
        "schema": SCHEMA,
        "query": flat if len(flat) <= 500 else flat[:250] + " … " + flat[-250:],
        "matches": matches,
        "facts": _facts_json(facts),
        "input": {"skipped": cut, "note": None if cut is None else (
            f"The input is longer than {reader.MAX_BYTES // 1_000_000} MB: its first {cut['start']} bytes and its "
            f"last ones were read; {cut['bytes']} bytes in the middle (from byte {cut['start']} to byte "
            f"{cut['end']}) were skipped.")},
        "machine": machine_view(matches, facts, report) if report is not None else None,
        "set_aside": aside,
        "exit_code": 0 if matches else 1,
    }


def _by_resemblance(text: str) -> list[dict[str, Any]]:
    """The answer of the known reports TEXT resembles (compat/resemblance.toml, read only here), or none: the
    code they were answered with, its general fix (no value of theirs is this message's), their threads; the
    platform's own fix is put in after, as for every answer (_platform_remedies)."""
    from cudnn_doctor.explain.resemblance import decide, shipped_index

    found = decide(shipped_index(), text)
    return [] if found is None else [resemblance_answer(found)]


def resemblance_answer(found: dict[str, Any]) -> dict[str, Any]:
    """The answer of FOUND (explain.resemblance.decide's): marked by_resemblance, its neighbours' threads named."""
    from cudnn_doctor.knowledge.advice import advice

    code = found["code"]
    sources = [neighbour["source"] for neighbour in found["neighbours"]]
    return {"id": f"resemblance-{code.lower()}", "code": code, "framework": "unknown",
            "matched": f"by resemblance to known reports: {' '.join(sources)}",
            "cause": f"{CODES[code].title} (no rule of cudnn-doctor reads this message; it resembles known reports "
                     f"of this cause, the nearest: {found['neighbours'][0]['cause']})",
            "fix": advice(code, {}), "source": sources[0], "values": {},
            "by_resemblance": True,
            "resemblance": {"similarity": found["similarity"], "neighbours": found["neighbours"]}}


def _filled(match: dict[str, Any], machine: dict[str, str] | None = None) -> dict[str, Any]:
    """A catalog answer with the values read from the message, then this MACHINE's, in its fix and cause
    (knowledge.advice.catalog_text)."""
    from cudnn_doctor.knowledge.advice import catalog_text

    values = (machine or {}) | dict(match.get("values") or {})
    answer = {key: value for key, value in match.items() if key != "fix_without"}
    answer["fix"] = catalog_text(match.get("fix", ""), values, match.get("fix_without", ""))
    if "cause" in match:
        answer["cause"] = catalog_text(match["cause"], values)
    return answer


# how a value read from the message is named in an answer whose own words do not use it
VALUE_WORDS = {"compute_capability": "compute capability {}", "cuda_version": "CUDA {}", "driver_version": "driver {}",
               "cudnn_major": "cuDNN {}", "compiled_version": "{} as the version it was built against",
               "runtime_version": "{} as the version found"}


def _name_the_values(match: dict[str, Any]) -> None:
    """Every version, architecture and driver the message gave reaches its answer: those the cause and fix do not
    already name are said at the end of the cause."""
    values = match.get("values") or {}
    text = f"{match.get('cause', '')} {match.get('fix', '')}"
    missing = [words.format(values[key]) for key, words in VALUE_WORDS.items()
               if isinstance(values.get(key), str) and values[key].strip() and values[key] not in text]
    if missing:
        match["cause"] = f"{match['cause'].rstrip()} The message names {'; '.join(missing)}."


# nvcc's own sentence for a virtual architecture it does not know, whatever precedes it ("nvcc fatal   : " or nothing)
FACT_TAIL = 20_000  # the message's end, where a compiler's refusal is (bounded on a long log)
_NVCC_ARCH = re.compile(r"unsupported gpu architecture '?compute_\d{2,3}[a-z]?'?", re.IGNORECASE)


def _compiler_first(matches: list[dict[str, Any]], text: str) -> None:
    """A CUDA compiler's own refusal of the GPU's architecture (nvcc, ptxas, NVRTC, a framework's bundled ptxas) is
    the toolkit's answer: it goes before the answers that say a build lacks kernels for the GPU, which follow from it.
    nvcc's sentence alone ("Unsupported gpu architecture 'compute_70'") is the compiler's too (e24)."""
    ids = ("compiler-cd206", "phrase-cd206") if _NVCC_ARCH.search(text[-FACT_TAIL:]) else ("compiler-cd206",)
    at = next((i for i, m in enumerate(matches) if m["id"] in ids), None)
    first_arch = next((i for i, m in enumerate(matches) if m["code"] in classify.ARCH_CODES), None)
    if at is not None and first_arch is not None and first_arch < at:
        matches.insert(first_arch, matches.pop(at))


def _platform_remedies(matches: list[dict[str, Any]], report: Report) -> None:
    """Each match whose code this machine's platform treats its own way (a driver on WSL 2 is the Windows driver's)
    gets the platform's fix, as `check` and `fix` give it (plan/platform.py, the one author of those texts)."""
    from cudnn_doctor.plan.platform import platform_remedy

    for match in matches:
        remedy = platform_remedy(str(match.get("code")), report.host.platform)
        if remedy:
            match["fix"] = remedy


def _judge_architecture(matches: list[dict[str, Any]], facts: reader.Facts) -> None:
    """The first architecture answer gets the GPU the message names, judged against the data (knowledge.advice)."""
    match = next((m for m in matches if m["code"] in classify.ARCH_CODES), None)
    # the GPU a catalog pattern captured is the GPU's by the pattern's design; else the one the facts judge
    arch = ((match or {}).get("values") or {}).get("compute_capability") or classify.judged_architecture(facts)
    if arch is None or match is None or "." not in arch:
        return
    from cudnn_doctor.knowledge.advice import architecture_note

    cause, fix = architecture_note(arch, facts.framework)
    match["values"] = {"compute_capability": arch} | dict(match.get("values") or {})
    match["cause"] = " ".join(part for part in (match["cause"], cause[:1].upper() + cause[1:]) if part)
    match["fix"] = " ".join(part for part in (fix, match["fix"]) if part)


class _Known(dict):  # type: ignore[type-arg]
    def __missing__(self, key: str) -> str:
        return f"<{key}>"


READER_FRAMEWORK = {"library": "loader", "symbol": "loader", "status": "cuda", "module": "kernel", "component": "driver",
                    "nccl": "nccl", "requirement": "cuda"}


def _from_cause(cause: classify.Cause, framework: str | None, line: str,
                machine: dict[str, str] | None = None) -> dict[str, Any]:
    entry = CODES[cause.code]
    values = (machine or {}) | dict(cause.values)  # the message's values first, then this machine's
    known = _Known(values)
    known.setdefault("detail", cause.fact)
    known.setdefault("error", cause.fact)
    if "compute_capability" in cause.values:
        known["cc"] = cause.values["compute_capability"]
    # its row's own fix (or a banner's, with its values), not its code's general one
    if cause.kind in ("phrase", "no-gpu-device", "build") and cause.values.get("fix"):
        fix = _filled({"fix": str(cause.values["fix"]), "values": values})["fix"]
    elif cause.code in _fixes():  # the registry's fix is "{fix}", filled by the rule that finds it: the table's
        fix = _filled({"fix": _fixes()[cause.code], "values": values})["fix"]
    else:
        from cudnn_doctor.explain.classify import general_advice_fits
        from cudnn_doctor.knowledge.advice import advice

        fix = (_filled({"fix": str(cause.values["fix"]), "values": values})["fix"]
               if cause.values.get("fix") and not general_advice_fits(cause.code, cause.values)
               else advice(cause.code, dict(known)))
    return {"id": f"{cause.kind}-{cause.code.lower()}", "code": cause.code,
            "framework": framework or READER_FRAMEWORK.get(cause.kind, "unknown"),
            "cause": f"{entry.title}: {cause.fact.rstrip('.')}.", "fix": fix, "source": cause.source,
            "matched": " ".join(line.split())[:300], "values": dict(cause.values)}


@functools.cache
def _fixes() -> dict[str, str]:
    return {row["code"]: row["fix"] for row in load("status_codes").get("fix", [])}


def _facts_json(facts: reader.Facts) -> dict[str, Any]:
    return {
        "libraries": [{"file": lib.file, "part": lib.part, "component": lib.component, "failure": lib.failure,
                       "cuda_major": lib.cuda_major, "cudnn_major": lib.cudnn_major} for lib in facts.libraries[:20]],
        "statuses": [{"api": s.api, "name": s.name, "number": s.number, "meaning": s.meaning} for s in facts.statuses[:20]],
        "versions": [asdict(v) for v in facts.versions[:10]],
        "compute_capabilities": sorted({a.compute_capability for a in facts.archs})[:10],
        "frameworks": list(facts.frameworks[:5]),
    }


def machine_view(matches: list[dict[str, Any]], facts: reader.Facts, report: Report) -> dict[str, Any]:
    """What `check` sees that bears on the message: the libraries and versions it names set against the
    loader's cuDNN copies, the toolkits, the driver and each framework here."""
    said: list[str] = []
    values: dict[str, str] = {}
    for match in matches:
        values.update({k: v for k, v in match["values"].items() if k not in values})
    installs = [i for i in report.cudnn if i.version]
    listing = ", ".join(f"{i.version} ({i.library}, loaded by {', '.join(i.loaded_by) or 'no program found'})"
                        for i in installs) or "none"
    cudnn_libs = [lib for lib in facts.libraries if lib.part == "cudnn" and lib.cudnn_major]
    wanted_major = values.get("cudnn_major") or (cudnn_libs[0].cudnn_major if cudnn_libs else None) \
        or _major_from_library(values.get("library", ""))
    library = values.get("library") or (cudnn_libs[0].file if cudnn_libs else "libcudnn")
    if wanted_major and library.lower().startswith(("libcudnn", "cudnn")):
        same = [i for i in installs if str(i.major) == wanted_major]
        visible = [i for i in same if "ld.so" in i.loaded_by or i.source == "env"]
        if not same:
            said.append(f"The message asks for cuDNN {wanted_major} ({library}); this machine has no cuDNN "
                        f"{wanted_major} at all. cuDNN found: {listing}.")
        elif not visible:
            said.append(f"cuDNN {wanted_major} is installed ({', '.join(i.library for i in same)}) but not on the "
                        "dynamic loader's path, so a program that dlopens it by name cannot find it.")
        else:
            said.append(f"cuDNN {wanted_major} is on the loader's path here: {', '.join(i.library for i in visible)}; "
                        "the program that failed probably runs with another LD_LIBRARY_PATH (a service, a container).")
    for key, label in (("runtime_version", "the loaded"), ("compiled_version", "the compiled-for")):
        if key in values and (values[key].startswith(("7.", "8.", "9.")) or "cudnn" in str(values.get("status", ""))):
            have = [i for i in installs if version_tuple(i.version) == version_tuple(values[key])]
            where = ", ".join(i.library for i in have) or "no copy of that version on this machine"
            said.append(f"{label.capitalize()} cuDNN in the message is {values[key]}: {where}.")
    cuda_majors = sorted({lib.cuda_major for lib in facts.libraries if lib.part == "cuda" and lib.cuda_major})
    for major in cuda_majors:
        toolkits = [t for t in report.toolkits if t.version and t.version.split(".")[0] == major]
        others = ", ".join(f"{t.version} ({t.path})" for t in report.toolkits if t.version) or "none"
        if toolkits:
            said.append(f"The message names CUDA {major} libraries; CUDA {major} is here: "
                        f"{', '.join(f'{t.version} at {t.path}' for t in toolkits)}. A program that cannot load them "
                        "runs without that folder's lib64 (bin on Windows) on its library path.")
        else:
            said.append(f"The message names CUDA {major} libraries; this machine has no CUDA {major} toolkit "
                        f"(toolkits found: {others}).")
    for framework in report.frameworks:
        if framework.details.get("cpu_only"):
            said.append(f"{framework.name} {framework.version or ''} here is a CPU-only build: it uses neither CUDA "
                        "nor cuDNN.".replace("  ", " "))
        elif framework.details.get("uses_cudnn") is False:
            said.append(f"{framework.name} {framework.version or ''} here is built for CUDA "
                        f"{framework.cuda_built_for or 'unknown'} and uses no cuDNN.".replace("  ", " "))
        elif framework.cuda_built_for or framework.cudnn_expected or framework.cudnn_used:
            said.append(f"{framework.name} {framework.version or ''} here is built for CUDA "
                        f"{framework.cuda_built_for or 'unknown'} and cuDNN {framework.cudnn_expected or 'unknown'}; "
                        f"it loads cuDNN from {framework.cudnn_used or 'the loader path'}.".replace("  ", " "))
    codes = [m["code"] for m in matches]
    if "driver_version" in values or "cuda_version" in values or any(c.startswith("CD1") for c in codes):
        if report.driver.source == "none":
            said.append("This machine has no working NVIDIA driver (NVML and libcuda.so.1 cannot be loaded).")
        else:
            said.append(f"This machine's driver is {report.driver.version or 'of unknown version'} and supports "
                        f"CUDA {report.driver.cuda_driver_version or 'unknown'}.")
    if "needs_cuda" in values:  # a compiler older than the GPU: which toolkit here knows it
        needed = version_tuple(values["needs_cuda"]) or (0,)
        known = [t for t in report.toolkits if t.version and (version_tuple(t.version) or (0,)) >= needed]
        older = [t for t in report.toolkits if t.version and (version_tuple(t.version) or (0,)) < needed]
        if known:
            said.append(f"Compute capability {values.get('compute_capability')} needs CUDA {values['needs_cuda']} or "
                        f"newer; these toolkits here know it: {', '.join(f'{t.version} at {t.path}' for t in known)}. "
                        "Point CUDA_HOME and PATH at one of them.")
        else:
            said.append(f"Compute capability {values.get('compute_capability')} needs CUDA {values['needs_cuda']} or "
                        "newer; no toolkit here is that new (toolkits found: "
                        f"{', '.join(f'{t.version} ({t.path})' for t in older) or 'none'}).")
    if set(codes) & HARDWARE_CODES:  # a fault of the GPU itself: what check's health probes read of each GPU
        said.extend(_health_summary(report))
    if ("compute_capability" in values or facts.archs) and report.gpus:
        gpus = ", ".join(f"GPU {g.index} {g.name} (compute capability {g.compute_capability})" for g in report.gpus)
        said.append(f"This machine has {gpus}.")
    if not said:
        said.append(f"cuDNN found here: {listing}. Driver: {report.driver.version or 'none'}.")
    prefixes = {c[:3] for c in codes}
    related = [asdict(f) for f in report.findings if f.code[:3] in prefixes or f.severity == "error"]
    return {"summary": said, "findings": related,
            "cudnn": [{"version": i.version, "library": i.library, "loaded_by": list(i.loaded_by)} for i in installs],
            "driver": asdict(report.driver)}


HARDWARE_CODES = {"CD130", "CD131", "CD132", "CD141", "CD142", "CD143"}


def _health_summary(report: Report) -> list[str]:
    """One sentence per GPU with the readings of check's health probes (ECC, row remapping, PCIe link) that
    bear on a hardware fault; a GPU that fell off the bus is missing from them."""
    said = []
    for gpu in report.gpus:
        health = gpu.health
        if health is None:
            said.append(f"GPU {gpu.index} {gpu.name}: no health readings (NVML gave none).")
            continue
        readings = []
        if health.ecc_errors_uncorrected_volatile is not None:
            readings.append(f"{health.ecc_errors_uncorrected_volatile} uncorrectable ECC error(s) since the driver "
                            f"loaded ({health.ecc_errors_uncorrected_aggregate} over its life)")
        elif health.ecc_enabled is False:
            readings.append("ECC off")
        for flag, words in ((health.retired_pages_pending, "page retirement pending"),
                            (health.remapped_rows_pending, "row remapping pending"),
                            (health.remapped_rows_failed, "row remapping failed")):
            if flag:
                readings.append(words)
        if health.pcie_link_width and health.pcie_link_width_max:
            readings.append(f"PCIe link x{health.pcie_link_width} of x{health.pcie_link_width_max}, generation "
                            f"{health.pcie_link_generation} of {health.pcie_link_generation_max}")
        said.append(f"GPU {gpu.index} {gpu.name} ({gpu.uuid or 'no UUID'}), as check's health probes read it "
                    f"(CD130-CD134): {'; '.join(readings) or 'no readings supported'}.")
    if not report.gpus:
        said.append("The driver lists no GPU now: one that fell off the bus is gone until a reboot.")
    return said


def _visible_gpus(report: Report) -> str:
    """The GPUs this machine has, by the index a CUDA program numbers them with."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if not report.gpus:
        return "this machine shows no GPU to the driver, so no index is valid here"
    indexes = ", ".join(f"{gpu.index} ({gpu.name})" for gpu in report.gpus)
    where = f" (CUDA_VISIBLE_DEVICES={visible}: a program numbers the visible ones from 0)" if visible is not None else ""
    return (f"this machine has {len(report.gpus)} GPU{'s' if len(report.gpus) != 1 else ''}: {indexes}{where}; use an "
            "index below that count (cuda:0 on a one-GPU machine)")


def _major_from_library(library: str) -> str | None:
    match = re.search(r"(?:\.so\.|64_)(\d{1,3})", library)
    return match.group(1) if match else None


def list_codes(prefix: str | None = None) -> dict[str, Any]:
    """`explain --list [PREFIX]`: every finding code that is in use (those starting with PREFIX, CD3 for cuDNN's),
    with its severity and title, as the README's table lists them."""
    from cudnn_doctor.codes import CODES

    wanted = (prefix or "").strip().upper()
    codes = [{"code": c.code, "severity": c.severity, "title": c.title} for c in CODES.values()
             if not c.retired and c.code.startswith(wanted)]
    if not codes:
        raise DoctorError(f"--list {prefix}: no finding code starts so",
                          fix="cudnn-doctor explain --list, or a prefix such as CD3 (cuDNN) or CD4 (frameworks)", code="CD001")
    return {"schema": SCHEMA, "query": f"--list {wanted}".strip(), "code": None, "codes": codes, "matches": [],
            "machine": None, "exit_code": 0}


def run(message: bytes, offline_only: bool, by_resemblance: bool = False) -> dict[str, Any]:
    """`explain`: a finding code's registry text, or a message's causes with what this machine says."""
    code = CODE.match(message[:200].decode("utf-8", "replace")) if len(message) < 200 else None
    if code:
        platform = None
        if not offline_only:  # the platform decides some codes' causes and fixes (WSL 2's driver is Windows')
            from cudnn_doctor.probes.platform import platform_here

            platform = platform_here()
        return explain_code(code.group(1), platform)
    report = None
    if not offline_only:
        from cudnn_doctor.doctor.diagnosis import CheckOptions, diagnose

        report = diagnose(CheckOptions()).report
    return explain_text(message, report, by_resemblance)


_NOTHING = "nothing to explain"
_NOTHING_FIX = 'cudnn-doctor explain CD301, explain "<message>", or: python train.py 2>&1 | cudnn-doctor explain -'


def read_message(query: str | None, from_file: str | None, stdin: Any) -> bytes:
    """The message as bytes: the argument, --from-file (any file type, read without blocking on a FIFO that has
    no writer) or standard input; of an input longer than 2 MB its head and its tail, with a line that says
    which bytes were skipped between them (reader.head_and_tail). Nothing to read is a usage error. A stream
    (a pipe, a FIFO) whose writer keeps it open but sends nothing for CUDNN_DOCTOR_READ_TIMEOUT seconds is
    read no further: what came is explained, with a line saying so; nothing at all is a usage error."""
    from cudnn_doctor.explain.reader import HEAD_BYTES, MAX_BYTES, TAIL_BYTES, defang, skip_line

    where = "standard input"
    if from_file is not None:
        where = f"--from-file {from_file}"
        try:
            fd = os.open(from_file, os.O_RDONLY | CURRENT.open_flags)
        except OSError as error:
            raise DoctorError(f"--from-file {from_file}: {error.strerror or error}",
                              fix="give the path of a readable log file", code="CD005") from None
        try:
            info = os.fstat(fd)
            if stat.S_ISDIR(info.st_mode):
                raise DoctorError(f"--from-file {from_file}: is a folder", fix="give the path of a log file", code="CD005")
            if stat.S_ISREG(info.st_mode) and info.st_size > MAX_BYTES:  # the head, then the tail, of a long file
                head = _first(lambda: os.read(fd, HEAD_BYTES), HEAD_BYTES)
                os.lseek(fd, info.st_size - TAIL_BYTES, os.SEEK_SET)
                data = defang(head) + skip_line(len(head), info.st_size - TAIL_BYTES) + \
                    _head_and_tail(lambda: os.read(fd, 1 << 20), TAIL_BYTES)
            elif stat.S_ISREG(info.st_mode):
                data = _head_and_tail(lambda: os.read(fd, 1 << 20), MAX_BYTES)
            else:  # a FIFO, a socket, a device: read what its writer sends, to the end or a silence
                data = _head_and_tail(_waiting_reader(fd, where), MAX_BYTES)
        except OSError as error:
            raise DoctorError(f"--from-file {from_file}: {error.strerror or error}",
                              fix="give the path of a readable log file", code="CD005") from None
        finally:
            os.close(fd)
    elif query == "-" and stdin.isatty():
        # a terminal: say what it waits for, and stop at the first end of input (one Ctrl-D), where a buffered
        # read would wait for a second one
        from cudnn_doctor.streams import say

        say("Paste the message, then press Ctrl-D on a line of its own (Ctrl-C cancels):")
        try:
            data = _head_and_tail(_terminal_reader(stdin.fileno()), MAX_BYTES)
        except OSError as error:  # a terminal the system refuses to read for another reason: said, not a traceback
            raise DoctorError(f"standard input cannot be read: {error.strerror or error}",
                              fix="pipe the message in (cudnn-doctor explain - < LOG) or give it with --from-file LOG",
                              code="CD005") from None
    elif query == "-" or (query is None and not stdin.isatty()):
        try:
            try:
                fd = stdin.fileno()
            except (AttributeError, OSError, ValueError):
                data = _head_and_tail(lambda: stdin.buffer.read(1 << 20), MAX_BYTES)
            else:
                data = _head_and_tail(_waiting_reader(fd, where), MAX_BYTES)
        except OSError as error:  # opened for writing only, a closed or broken descriptor: the system's refusal
            raise DoctorError(f"standard input cannot be read: {error.strerror or error}",
                              fix="pipe the message in (cudnn-doctor explain - < LOG) or give it with --from-file LOG",
                              code="CD005") from None
    else:
        data = defang((query or "").encode("utf-8", "surrogateescape"))
    if not data.strip():
        if _silent_after:
            raise DoctorError(f"nothing arrived on {where} in {_silent_after[0]:g} s: its writer keeps it open "
                              "but sends nothing", fix="give a finished log (cudnn-doctor explain --from-file LOG), "
                              "or wait longer with CUDNN_DOCTOR_READ_TIMEOUT=SECONDS", code="CD003")
        raise DoctorError(_NOTHING if from_file is None else f"--from-file {from_file} is empty", fix=_NOTHING_FIX, code="CD003")
    return data


_silent_after: list[float] = []  # the silence (seconds) that ended the reading of a stream, if one did


def _terminal_reader(fd: int) -> Callable[[], bytes]:
    """os.read of the terminal FD as a person types: a hung-up terminal (its other side closed: the read answers EIO)
    ends the input with what came, as Ctrl-D does; a terminal set non-blocking by another program (the read answers
    EAGAIN) is waited on with select until the person types, never read in a busy loop nor taken for a full system.
    FD's own flags are left alone (the terminal is shared)."""
    import errno
    import select

    def read() -> bytes:
        while True:
            try:
                return os.read(fd, 1 << 16)
            except BlockingIOError:
                select.select([fd], [], [], 1.0)
            except OSError as error:
                if error.errno == errno.EIO:
                    return b""
                raise

    return read


def _waiting_reader(fd: int, where: str) -> Callable[[], bytes]:
    """os.read of FD that waits at most CUDNN_DOCTOR_READ_TIMEOUT seconds for each piece: a silence that long
    ends the input (b"", with a line on standard error saying so), as a writer that closed it would."""
    import select
    import time

    from cudnn_doctor.streams import say
    from cudnn_doctor.variables import number

    limit = number("CUDNN_DOCTOR_READ_TIMEOUT", READ_TIMEOUT_S)  # FD's own flags left alone (a shared terminal)
    told = [False]
    got = [0]

    def read() -> bytes:
        started = time.monotonic()
        if not os.get_blocking(fd):  # our own FIFO description: a read says at once "no writer" (b"") or "wait"
            try:
                chunk = os.read(fd, 1 << 20)
                got[0] += len(chunk)
                return chunk
            except BlockingIOError:
                pass
        while True:
            waited = time.monotonic() - started
            if waited >= limit:
                _silent_after[:] = [limit]
                if got[0]:
                    say(f"cudnn-doctor: stopped reading {where}: nothing more arrived in {limit:g} s and its writer "
                        "has not closed it; explaining what came")
                return b""
            ready, _, _ = select.select([fd], [], [], min(limit - waited, 1.0))
            if not ready:
                if not told[0] and time.monotonic() - started >= 1.0:
                    told[0] = True
                    say(f"cudnn-doctor: waiting for {where} to end (at most {limit:g} s of silence)")
                continue
            try:
                chunk = os.read(fd, 1 << 20)
            except BlockingIOError:
                continue
            got[0] += len(chunk)
            return chunk

    return read


READ_TIMEOUT_S = 60.0  # the longest silence of a stream being explained before what came is explained


_MAX_STREAM = 512 << 20  # a stream (stdin, a FIFO, /dev/zero) is read this far at most


def _first(read: Callable[[], bytes], limit: int) -> bytes:
    """The first LIMIT bytes READ returns."""
    kept = bytearray()
    while len(kept) < limit and (chunk := read()):
        kept += chunk
    return bytes(kept[:limit])


def _head_and_tail(read: Callable[[], bytes], limit: int) -> bytes:
    """What READ returns until it returns nothing (or _MAX_STREAM bytes): all of it if it is at most LIMIT bytes,
    else its first HEAD_BYTES and last LIMIT - HEAD_BYTES with the skip line between them."""
    from cudnn_doctor.explain.reader import HEAD_BYTES, skip_line

    head = bytearray()
    kept = bytearray()
    total = 0
    tail_limit = max(0, limit - HEAD_BYTES)
    while total < _MAX_STREAM and (chunk := read()):
        total += len(chunk)
        if len(head) < HEAD_BYTES:
            take = HEAD_BYTES - len(head)
            head += chunk[:take]
            chunk = chunk[take:]
        kept += chunk
        if len(kept) > 2 * max(tail_limit, 1):
            del kept[:-tail_limit or None]
    from cudnn_doctor.explain.reader import defang

    if total <= limit:
        return defang(bytes(head + kept))
    tail = bytes(kept[-tail_limit:]) if tail_limit else b""
    return defang(bytes(head)) + skip_line(len(head), total - len(tail)) + defang(tail)


def main(query: str | None, from_file: str | None, offline_only: bool, json_output: bool, verbose: bool,
         list_all: bool = False, by_resemblance: bool = False) -> None:
    """The command: the message read (an argument, a file or standard input), explained, rendered; or with
    --list (LIST_ALL) the finding codes; ends with SystemExit(status)."""
    import sys

    data = list_codes(query) if list_all else run(read_message(query, from_file, sys.stdin), offline_only,
                                                         by_resemblance)
    if json_output:
        from cudnn_doctor.render.json_out import write_json

        write_json(data)
    else:
        from cudnn_doctor.render.console import console
        from cudnn_doctor.render.explain_text import render_explain

        render_explain(data, console(), verbose)
    raise SystemExit(data["exit_code"])
