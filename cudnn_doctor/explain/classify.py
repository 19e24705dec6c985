"""Facts -> causes: one cause per finding code, each with the fact that shows it.

The catalog (compat/errors.toml) gives a specific explanation where a message needs one; these rules
give the family-level cause for every message whose facts are known, whatever its wording.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from typing import Any

from cudnn_doctor.explain.facts import Arch, Event, Facts, Library
from cudnn_doctor.knowledge.data import load
from cudnn_doctor.knowledge.query import toolkit_min_driver
from cudnn_doctor.versions import ascii_digits

CONTEXT_CODES = {"CD108"}
ARCH_CODES = ("CD404", "CD311", "CD206")  # the answers that are about a GPU architecture a build or tool lacks
PART_ORDER = {"driver": 0, "cuda": 1, "cudnn": 2, "framework": 3}


@dataclass(frozen=True)
class Cause:
    code: str
    fact: str  # one sentence: what in the message shows it
    source: str  # where the knowledge behind it comes from
    values: dict[str, str] = field(default_factory=dict)
    kind: str = ""  # library | symbol | status | version | arch | phrase
    line: int = -1  # the line of Facts.lines it was read from


def general_advice_fits(code: str, values: dict[str, Any]) -> bool:
    """Does the advice of CODE (compat/fixes.toml) name values, all of which this message gave?"""
    from cudnn_doctor.knowledge.advice import fields_of

    wanted = set(fields_of(code)) - {"fix", "detail"}
    return bool(wanted) and wanted <= set(values)


def classify(facts: Facts) -> list[Cause]:
    """The causes FACTS show, strongest first, one per code."""
    causes: list[Cause] = []
    # a language binding's natives are a weaker fact than what the loader says beneath them (libcuda.so.1 missing)
    # (and a framework's own CUDA extension said absent is weaker than a status or library failure on the same lines)
    weak = ("binding", "extension", "component", "requirement", "toolkit-variable")
    bindings = tuple(e for e in facts.events if e.kind in weak)
    causes.extend(_from_events(tuple(e for e in facts.events if e.kind not in weak)))
    causes.extend(_from_libraries(facts.libraries))
    causes.extend(Cause(symbol.finding, f"the loader could not find {symbol.name}, a symbol of {symbol.owner}: the "
                        "library that needs it was built against another version than the one loaded",
                        f"compat/libraries.toml: {symbol.source}", {"symbol": symbol.name}, kind="symbol",
                        line=symbol.line)
                  for symbol in facts.symbols)
    causes.extend(_from_statuses(facts))
    causes.extend(_from_versions(facts))
    causes.extend(_from_compilers(facts))
    causes.extend(_from_cpu_builds(facts))
    causes.extend(_from_archs(facts))
    causes.extend(Cause(p.finding, f"the message says “{p.text}”: {p.meaning.rstrip('.')}", f"compat/status_codes.toml: {p.source}",
                        {"fix": p.fix} if p.fix else {}, kind="phrase", line=p.line) for p in facts.phrases)
    causes.extend(_from_conflicts(facts))
    causes.extend(_from_not_found(facts))
    causes.extend(_from_events(bindings))
    # a container that was started without the GPU explains every failure inside it
    causes.sort(key=lambda cause: cause.code not in CONTEXT_CODES)
    seen: set[str] = set()
    unique = []
    for cause in causes:
        if cause.code not in seen:
            seen.add(cause.code)
            unique.append(cause)
    return unique


def library_code(library: Library) -> str:
    """The finding of LIBRARY's failure, by the part of the stack it belongs to."""
    failure = library.failure or "load-failed"
    if library.finding:
        return library.finding
    if library.refused_finding and failure in ("wrong-arch", "broken"):  # the file itself refused: its kind's code
        return library.refused_finding
    if library.part == "driver":
        return "CD101" if failure == "missing" else "CD110"
    if library.part == "cuda":
        # the CUDA runtime found and loaded, whose start failed (its first call asks the driver): the driver's
        return "CD110" if failure == "init" and library.name == "cudart" else "CD203"
    if library.part == "cudnn":
        if failure in ("wrong-arch", "broken"):
            return "CD308"
        if failure in ("symbol", "version"):
            return "CD305" if library.name != "cudnn" else "CD307"
        if failure == "missing":
            return "CD301" if library.name == "cudnn" else "CD304"
        return "CD307"
    return "CD409"


def _from_libraries(libraries: tuple[Library, ...]) -> list[Cause]:
    failed = [library for library in libraries if library.failure and library.gpu]
    if not failed:
        return []
    # the library a loader could not find is named last on its line ("X: ... Y: cannot open"); the stack's own
    # libraries come before the framework's layer that needed them
    by_line: dict[int, list[Library]] = {}
    for library in failed:
        by_line.setdefault(library.line, []).append(library)
    ordered: list[Library] = []
    for line in sorted(by_line, reverse=True):
        ordered.extend(sorted(reversed(by_line[line]), key=lambda lib: PART_ORDER.get(lib.part, 9)))
    causes = []
    for library in ordered:
        values = {"library": library.file}
        if library.cudnn_major:
            values["cudnn_major"] = library.cudnn_major
            values["version"] = library.cudnn_major
        if library.cuda_major:
            values["cuda_major"] = library.cuda_major
        if library.cuda_version:
            values["cuda_version"] = library.cuda_version
        what = {"missing": "could not be found", "symbol": "lacks a symbol another library needs",
                "version": "is of another version than the one asked for", "wrong-arch": "is built for another machine",
                "broken": "is not a loadable library", "init": "failed to initialise",
                "load-failed": "failed to load"}[library.failure or "load-failed"]
        majors = "".join(f", {label} {values[key]}" for key, label in (("cudnn_major", "cuDNN"), ("cuda_major", "CUDA"))
                         if key in values)
        causes.append(Cause(library_code(library), f"{library.file} ({library.component}{majors}) {what}",
                            f"compat/libraries.toml: {library.source}", values, kind="library", line=library.line))
    return causes


def _from_statuses(facts: Facts) -> list[Cause]:
    causes = []
    handle = any(word in line.lower() for line in facts.lines for word in ("handle", "initializ", "cudnncreate"))
    for status in facts.statuses:
        if not status.finding:
            continue
        code = status.finding
        if status.name.startswith("CUDNN_STATUS_INTERNAL_ERROR") and handle:
            code = "CD315"  # cudnnCreate failing with INTERNAL_ERROR: cuDNN could not initialise
        causes.append(Cause(code, f"{status.name} ({status.number}): {status.meaning.rstrip('.')}",
                            f"compat/status_codes.toml: {status.source}", {"status": status.name}, kind="status",
                            line=status.line))
    return causes


def _from_versions(facts: Facts) -> list[Cause]:
    causes = []
    for pair in facts.versions:
        code = {"cudnn": "CD321", "cudnn-header": "CD303", "driver": "CD103", "cuda": "CD410", "tensorrt": "CD410",
                "framework": "CD410"}[pair.subject]
        label = {"cudnn": "cuDNN", "cudnn-header": "cuDNN header", "driver": "CUDA (driver)", "cuda": "CUDA",
                 "tensorrt": "TensorRT", "framework": "the framework"}[pair.subject]
        values = {"compiled_version": pair.built, "runtime_version": pair.found}
        causes.append(Cause(code, f"{label} {pair.built} was built against or required, {pair.found} was found",
                            "the versions the message names", values, kind="version", line=pair.line))
    return causes


# a build's range of compute capabilities as PyTorch prints it: "... supported by this version of PyTorch is (8.0) - (12.0)"
_RANGE = re.compile(r"\((\d{1,2})\.(\d)\)\s{0,3}-\s{0,3}\((\d{1,2})\.(\d)\)")


def runs_within(compute_capability: str, low: tuple[int, int], high: tuple[int, int]) -> bool:
    """Does code built for the range LOW..HIGH run on a GPU of COMPUTE_CAPABILITY by NVIDIA's binary compatibility
    (compat/libraries.toml binary_compatibility): inside the range, or of HIGH's major and a newer minor?"""
    rule = load("libraries").get("binary_compatibility", {})
    major, _, minor = compute_capability.partition(".")
    if not (ascii_digits(major) and ascii_digits(minor)):
        return False
    cc = (int(major), int(minor))
    same_major = bool(rule.get("same_major_newer_minor")) and cc[0] == high[0] and cc[1] >= high[1]
    return low <= cc <= high or same_major


# PyTorch's list of what a build runs on: "- 8.0 which supports hardware CC >=8.0,<9.0 except {8.7}"
_LISTED = re.compile(r"supports hardware cc >=(\d{1,2})\.(\d{1,2}),\s?<(\d{1,2})\.(\d{1,2})(?: except \{([\d., ]{1,60})\})?")


def listed_as_supported(facts: Facts, compute_capability: str) -> bool:
    """Does the message's own list of the hardware a build supports (PyTorch's "supports hardware CC >=A,<B") hold
    COMPUTE_CAPABILITY? Then the build runs on that GPU and the message names no fault."""
    major, _, minor = compute_capability.partition(".")
    if not (ascii_digits(major) and ascii_digits(minor)):
        return False
    cc = (int(major), int(minor))
    for line in facts.lines:
        lower = line.lower()
        if "supports hardware cc" not in lower:
            continue
        for match in _LISTED.finditer(lower):
            low, high = (int(match.group(1)), int(match.group(2))), (int(match.group(3)), int(match.group(4)))
            excepted = {part.strip() for part in (match.group(5) or "").split(",")}
            if low <= cc < high and compute_capability not in excepted:
                return True
    return False


# a sentence that says a build lacks the GPU's architecture without naming it ("ggml-cuda was compiled without support
# for the current GPU architecture"): the GPU is the one the message names elsewhere, where it names one only
_ARCH_SENTENCE = re.compile(r"(?:without support for|not (?:compiled|built) for|no support for|does not support|doesn't "
                            r"support)\s(?:the\s|this\s|your\s)?(?:current\s)?(?:gpu|device|cuda|gpu's)\s(?:compute\s)?"
                            r"(?:architecture|arch|capability)")


def _from_archs(facts: Facts) -> list[Cause]:
    cued = [arch for arch in facts.archs if arch.cue]
    named = {arch.compute_capability for arch in facts.archs}
    if not cued and len(named) == 1:
        sentence = next(((index, match.group(0)) for index, line in enumerate(facts.lines)
                         if (match := _ARCH_SENTENCE.search(line.lower()))), None)
        if sentence is not None:
            cued = [Arch(compute_capability=named.pop(), cue=sentence[1], line=sentence[0])]
    if not cued and len(named) == 1:  # the GPU's capability, then the build's range on the lines after it (PyTorch)
        cued = _outside_range(facts, next(iter(named)))
    if not cued and len(named) == 1:  # the GPU's capability beside the CUDA runtime the build was made with (Paddle)
        cued = _older_runtime(facts, next(iter(named)))
    if not cued:
        return []
    arch = cued[-1]
    for line in facts.lines[arch.line:arch.line + 3] if 0 <= arch.line < len(facts.lines) else ():
        bounds = _RANGE.search(line)
        if bounds:  # the GPU runs this build's code after all: the warning names no fault
            low, high = (int(bounds.group(1)), int(bounds.group(2))), (int(bounds.group(3)), int(bounds.group(4)))
            if runs_within(arch.compute_capability, low, high):
                return []
            break
    cudnn = any(status.name.endswith("ARCH_MISMATCH") for status in facts.statuses)
    cue_line = facts.lines[arch.line].lower() if 0 <= arch.line < len(facts.lines) else ""
    subject = load("libraries").get("arch_subject", {})
    if not cudnn and any(word in cue_line for word in subject.get("toolkit", ())):  # the toolkit lacks the GPU
        needs = first_toolkit(arch.compute_capability)
        values = {"compute_capability": arch.compute_capability} | ({"needs_cuda": needs} if needs else {})
        return [Cause("CD206", f"compute capability {arch.compute_capability} with “{arch.cue}”: the CUDA toolkit in use "
                      "does not know this GPU" + (f" (CUDA {needs} or newer does)" if needs else ""),
                      f"compat/libraries.toml: {subject.get('source', '')}", values, kind="arch", line=arch.line)]
    # a build whose CUDA cannot hold code for the GPU (its banner's runtime judged) is kind "build": the routing puts it
    # before the GPU work that failed under it (routing.build_first)
    banner = banner_misfit(facts, arch.compute_capability) if arch.cue and arch.cue.startswith(BUILD_CUE) else None
    values = {"compute_capability": arch.compute_capability} | (
        {"fix": banner_fix(banner[1], banner[2], banner[3], arch.compute_capability)} if banner else {})
    return [Cause("CD311" if cudnn else "CD404",
                  f"compute capability {arch.compute_capability} with “{arch.cue}”: the build has no kernels for this GPU",
                  "the architecture the message names", values, kind="build" if banner else "arch", line=arch.line)]


def _outside_range(facts: Facts, compute_capability: str) -> list[Arch]:
    """The GPU of COMPUTE_CAPABILITY as a cued architecture where the lines right after the one naming it give the
    build's range of capabilities ("Minimum and Maximum cuda capability supported by this version of PyTorch is
    (7.0) - (12.0)") and the GPU does not run that range's code; none where it does, or no range follows."""
    arch = next((a for a in facts.archs if a.compute_capability == compute_capability), None)
    if arch is None or not 0 <= arch.line < len(facts.lines):
        return []
    for line in facts.lines[arch.line + 1:arch.line + 4]:
        bounds = _RANGE.search(line)
        if bounds:
            low, high = (int(bounds.group(1)), int(bounds.group(2))), (int(bounds.group(3)), int(bounds.group(4)))
            if runs_within(compute_capability, low, high):
                return []
            return [Arch(compute_capability=compute_capability, cue=f"outside the build's range {bounds.group(0)}",
                         line=arch.line)]
    return []


BUILD_CUE = "a build made with CUDA "

# a CUDA version as a banner prints it: "10.2", or the runtime's integer 11020 (major*1000 + minor*10)
_RUNTIME = re.compile(r"\W{0,4}(\d{1,2})\.(\d{1,2})\b|\W{0,4}(\d{1,2})0(\d)0\b")


def _older_runtime(facts: Facts, compute_capability: str) -> list[Arch]:
    """The GPU of COMPUTE_CAPABILITY as a cued architecture where the line naming it, or one of the next lines
    (compat/libraries.toml [build_runtime]), names the CUDA runtime the build was made with and that CUDA is older than
    the first toolkit that knows the GPU ([[arch_toolkit]]) or of a major that no longer targets it (compat/
    gpu_support.toml [[cuda_floor]]): the build holds no code for it."""
    misfit = banner_misfit(facts, compute_capability)
    if misfit is None:
        return []
    arch, built, needs, floor = misfit
    if needs:
        cue = f"{BUILD_CUE}{built}, older than CUDA {needs}, the first that knows compute capability {compute_capability}"
    else:
        cue = f"{BUILD_CUE}{built}, whose major targets compute capability {floor} and newer, not {compute_capability}"
    return [Arch(compute_capability=compute_capability, cue=cue, line=arch.line)]


def banner_misfit(facts: Facts, compute_capability: str) -> tuple[Arch, str, str, str] | None:
    """(the GPU's architecture as named, the CUDA the build was made with, the first CUDA that knows the GPU where the
    build's is older, else the oldest capability the build's CUDA major targets) where a banner's runtime cannot hold
    code for the GPU of COMPUTE_CAPABILITY; None where it can, or no banner names the build's CUDA."""
    from cudnn_doctor.knowledge.gpu_support import below_cuda_floor, cuda_floor

    arch = next((a for a in facts.archs if a.compute_capability == compute_capability), None)
    needs = first_toolkit(compute_capability)
    table = load("libraries").get("build_runtime", {})
    if arch is None or not 0 <= arch.line < len(facts.lines):
        return None
    for line in facts.lines[arch.line:arch.line + 1 + int(table.get("lines", 0))]:
        lower = line.lower()
        word = next((w for w in table.get("words", ()) if w in lower), None)
        found = _RUNTIME.match(lower, lower.find(word) + len(word)) if word else None
        if found is None:
            continue
        major, minor = (found.group(1), found.group(2)) if found.group(1) else (found.group(3), found.group(4))
        built = f"{int(major)}.{int(minor)}"
        if needs is not None and _version_tuple(built) < _version_tuple(needs):
            return arch, built, needs, ""
        floor = cuda_floor(built, compute_capability) if below_cuda_floor(built, compute_capability) else None
        return (arch, built, "", floor[0]) if floor else None
    return None


def banner_fix(built: str, needs: str, floor: str, compute_capability: str) -> str:
    """The fix for a framework build whose CUDA (BUILT) cannot hold code for the GPU, with every value filled."""
    if needs:
        return (f"Install the framework's build made with CUDA {needs} or newer (this one was made with CUDA {built}, "
                f"older than compute capability {compute_capability}): Paddle's paddlepaddle-gpu wheel for that CUDA "
                "from its index (https://www.paddlepaddle.org.cn/install/quick lists one per CUDA), PyTorch's from "
                "https://pytorch.org/get-started/locally/; the driver must support that CUDA (`nvidia-smi` names the "
                "newest it does).")
    return (f"Install the framework's build made with a CUDA whose major still targets compute capability "
            f"{compute_capability} (this one was made with CUDA {built}, whose major starts at {floor}): an older "
            "release of the framework or its build for an older CUDA (Paddle's index lists one per CUDA; PyTorch's "
            "https://pytorch.org/get-started/previous-versions/), or run it on a newer GPU.")


def _version_tuple(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.split("."))


def judged_architecture(facts: Facts) -> str | None:
    """The compute capability the message says does not fit (the last one named with a cue), or the only one it
    names at all: the GPU an architecture answer is about."""
    cued = [arch.compute_capability for arch in facts.archs if arch.cue]
    named = {arch.compute_capability for arch in facts.archs}
    return cued[-1] if cued else (named.pop() if len(named) == 1 else None)


# a conda or pixi solver's conflict over the GPU stack: conda's channels and pins decide which CUDA build exists
CONDA_CONFLICT_FIX = ("Let the solver pick one CUDA for every package: name the CUDA once (`cuda-version` on conda-forge, "
                      "`pytorch-cuda` with the pytorch and nvidia channels), drop your other pins of cudatoolkit and cuda-* "
                      "packages and of the framework's build string, and list the channels the packages' install pages name "
                      "(RAPIDS: rapidsai, conda-forge, nvidia), in that order. The packages' build lists (conda search "
                      "--info with a package's name) show each build's CUDA and Python; a Python the GPU build was never "
                      "made for needs another Python. On a Jetson, a build that asks for arm-variant sbsa is a server's (SBSA) "
                      "build: install one made for Jetson (NVIDIA's JetPack wheels) instead.")


def _from_conflicts(facts: Facts) -> list[Cause]:
    causes = []
    for conflict in facts.conflicts[-1:]:  # the last one is the resolver's final word
        named = ", ".join(conflict.packages[:6])
        pins = "; ".join(conflict.pins[:3])
        detail = f"{named}: {pins}" if pins else named
        if conflict.fix:  # a companion package that makes pip replace the framework: the reading names the fix
            causes.append(Cause("CD521", f"{pins}: the companion's release pins another {conflict.packages[0].split()[0]} "
                                "than the environment's, and the framework's build (its CUDA variant) is replaced with it",
                                f"compat/libraries.toml: {conflict.source}", {"detail": detail[:400], "fix": conflict.fix},
                                kind="conflict", line=conflict.line))
            continue
        values = {"detail": detail[:400]}
        if conflict.tool in ("conda", "pixi"):  # a conda solver's conflict: conda's channels and pins, not pip's index
            values["fix"] = CONDA_CONFLICT_FIX
        causes.append(Cause("CD521", f"{conflict.tool} reports a conflict that names the GPU stack's packages ({named})"
                            + (f": {pins}" if pins else ""),
                            f"compat/libraries.toml: {conflict.source}", values, kind="conflict",
                            line=conflict.line))
    return causes


def _from_cpu_builds(facts: Facts) -> list[Cause]:
    causes = []
    for build in facts.cpu_builds[-1:]:
        if build.part == "cudnn":  # a GPU build without its cuDNN part: cuDNN was absent when it was built or loaded
            causes.append(Cause("CD301", f"the message's words “{build.text}” say the GPU package in use has no cuDNN "
                                "support: cuDNN was not found when it was built (or is not found where it loads it)",
                                f"compat/libraries.toml: {build.source}",
                                {"fix": "Install cuDNN for the package's CUDA major (`pip install nvidia-cudnn-cu12` or "
                                        "-cu13, or NVIDIA's archive), then reinstall the package without pip's cache "
                                        "(`pip install --no-cache-dir --force-reinstall` with its name) so its build "
                                        "finds cuDNN; `cudnn-doctor check` shows the cuDNN each framework loads."},
                                kind="cpu-build", line=build.line))
            continue
        who = f"{build.framework}'s" if build.framework else "the message's"
        causes.append(Cause("CD406", f"{who} words “{build.text}” say the build in use has no GPU support",
                            f"compat/libraries.toml: {build.source}",
                            ({"framework": build.framework} if build.framework else {}) | {"fix": "Install the framework's GPU build (the -gpu/-cuXXX/[cuda] package or the CUDA "
                                    "wheel from its index) in place of the CPU one, and remove the CPU package so it "
                                    "does not shadow it; `pip list` shows which is installed."},
                            kind="cpu-build", line=build.line))
    return causes


def _from_compilers(facts: Facts) -> list[Cause]:
    causes = []
    for compiler in facts.compilers[-1:]:
        arch = next((a.compute_capability for a in reversed(facts.archs) if a.line == compiler.line), None)
        needs = first_toolkit(arch) if arch else None
        detail = f"{compiler.name}: “{compiler.cue}”" + (f" for compute capability {arch}" if arch else "") \
            + (f", which needs CUDA {needs} or newer" if needs else "")
        if compiler.bundled_by:  # the copy of the toolkit's compiler a framework ships is older than the GPU
            toolkit = f"CUDA {needs} or newer" if needs else "a CUDA toolkit that knows this GPU"
            newer = f"install a newer {compiler.bundled_by} whose bundled {compiler.name} knows this GPU"
            fix = (f"Point {compiler.path_variable} at the {compiler.name} of {toolkit} (e.g. /usr/local/cuda/bin/"
                   f"{compiler.name}), or {newer}." if compiler.path_variable else newer[:1].upper() + newer[1:] + ".")
            causes.append(Cause("CD206", f"{detail}; {compiler.bundled_by} ships this {compiler.name}, a "
                                "compiler older than the GPU", f"compat/libraries.toml: {compiler.source}",
                                ({"compute_capability": arch} if arch else {}) | ({"needs_cuda": needs} if needs else {})
                                | {"detail": detail, "fix": fix}, kind="compiler", line=compiler.line))
        else:
            values = {"detail": detail} | ({"compute_capability": arch} if arch else {}) \
                | ({"needs_cuda": needs} if needs else {})
            if compiler.fix and arch:  # the compiler's own fix (the HPC SDK's target options), with the GPU's values
                values["fix"] = compiler.fix.format(cc=arch, cc_digits=arch.replace(".", "")) \
                    + (f" (CUDA {needs} or newer knows it.)" if needs else "")
            causes.append(Cause("CD206", f"{detail}: the CUDA toolkit or NVRTC is older than the GPU",
                                f"compat/libraries.toml: {compiler.source}", values, kind="compiler", line=compiler.line))
    return causes


@functools.cache
def _arch_toolkits() -> dict[str, str]:
    return {row["compute_capability"]: row["cuda"] for row in load("libraries").get("arch_toolkit", [])}


def first_toolkit(compute_capability: str) -> str | None:
    """The first CUDA toolkit whose compilers know COMPUTE_CAPABILITY (compat/libraries.toml [[arch_toolkit]])."""
    return _arch_toolkits().get(compute_capability)


def _from_not_found(facts: Facts) -> list[Cause]:
    causes = []
    for missing in facts.not_found[-1:]:
        named = ", ".join(missing.packages[:6])
        if missing.tool.endswith("(installed a CPU build)"):  # the installer's action first, the build's refusal after it
            installer = missing.tool.split(" (")[0]
            fact = f"{installer} installed {named}, a build without CUDA"
            causes.append(Cause("CD520", f"{fact}: the framework's CUDA build was not what the installer put in",
                                f"compat/libraries.toml [installed_variant]: {missing.source}",
                                {"detail": f"{installer}: {named}", "fix": missing.fix}, kind="installed",
                                line=missing.line))
            if not facts.cpu_builds:
                causes.append(Cause("CD406", f"{fact}: it never uses the GPU",
                                    f"compat/libraries.toml [installed_variant]: {missing.source}",
                                    {"fix": missing.fix}, kind="installed", line=missing.line))
            continue
        if missing.fix and (missing.tool.endswith("'s loader") or missing.tool == "conda" and "CONDA_OVERRIDE_CUDA" in named):
            causes.append(Cause("CD520", f"{missing.tool}: no build of {missing.packages[0]}" if missing.tool.endswith(
                                "'s loader") else f"conda: {named}: the plan's CUDA is not the one asked for",
                                missing.source, {"detail": f"{missing.tool}: {named}", "fix": missing.fix},
                                kind="not-found", line=missing.line))
            continue
        if missing.fix and missing.tool.endswith("'s setup.py (download)"):  # a prebuilt CUDA wheel's download failed
            causes.append(Cause("CD511", f"{missing.tool.split(' (')[0]} guessed the URL of its prebuilt CUDA wheel "
                                f"{named} and the download failed", missing.source,
                                {"url": named, "why": "the download did not complete", "detail": f"{missing.tool}: {named}",
                                 "fix": missing.fix}, kind="not-found", line=missing.line))
            continue
        if missing.fix and missing.tool.endswith("'s setup.py (no wheel)"):  # no prebuilt wheel for this combination
            causes.append(Cause("CD520", f"{missing.tool.split(' (')[0]} has no prebuilt wheel {named} for this torch, "
                                "CUDA and Python", missing.source, {"detail": f"{missing.tool}: {named}",
                                                                  "fix": missing.fix}, kind="not-found",
                                line=missing.line))
            continue
        if missing.fix and missing.tool.endswith("(a library of another system)"):
            causes.append(Cause("CD520", f"{named} is a library built for another operating system than this one's "
                                "folders it is loaded from: the package installed is a build for another platform",
                                f"compat/libraries.toml [foreign_binary]: {missing.source}",
                                {"detail": f"{named} loaded on another system", "fix": missing.fix}, kind="not-found",
                                line=missing.line))
            continue
        if missing.fix and missing.tool == "pip (no wheel: built from source)":  # the sdist's build failing follows
            causes.append(Cause("CD520", f"pip found no wheel of {named} for this Python, platform or CUDA and built "
                                "its source distribution, which failed", f"compat/libraries.toml [source_build]: "
                                f"{missing.source}", {"detail": f"pip: {named} built from source", "fix": missing.fix},
                                kind="not-found", line=missing.line))
            continue
        if missing.fix and missing.tool == "pip (isolated build)":
            causes.append(Cause("CD520", f"pip built a package from source in an isolated environment without "
                                f"{named}, which the package's build needs", missing.source,
                                {"detail": f"{missing.tool}: {named} absent", "fix": missing.fix}, kind="not-found",
                                line=missing.line))
            continue
        if missing.fix and missing.tool == "pip" and missing.packages[0].endswith(".whl"):  # a wheel's tags, named
            causes.append(Cause("CD520", f"pip refuses the wheel {named}: its tags name another Python or platform",
                                f"compat/libraries.toml: {missing.source}", {"detail": f"{missing.tool}: {named}",
                                                                             "fix": missing.fix},
                                kind="not-found", line=missing.line))
            continue
        if missing.fix:  # no such build exists for this platform (compat/rules.toml [[no_gpu_build]])
            causes.append(Cause("CD520", f"{missing.tool}: {named} asks for a build that does not exist for this "
                                "platform", missing.source, {"detail": f"{missing.tool}: {named}", "fix": missing.fix},
                                kind="not-found", line=missing.line))
            continue
        causes.append(Cause("CD520", f"{missing.tool} found no build of {named}: a package of the GPU stack or one "
                            "built for a CUDA version", f"compat/libraries.toml: {missing.source}",
                            {"detail": f"{missing.tool}: {named}"}, kind="not-found", line=missing.line))
    return causes


# the hardware's own report of a fault is the root of what a program saw after it; among the driver's events the
# one that names the fault ranks before the ones that follow from it (Xid 45 "caused by previous Xid 149")
EVENT_RANK = ("CD141", "CD130", "CD132", "CD131", "CD143", "CD142", "CD144", "CD102", "CD101")
HEALTH = {"CD130": "ECC", "CD131": "row remapping", "CD132": "row remapping", "CD141": "PCIe link",
          "CD143": "PCIe link"}


def _from_events(events: tuple[Event, ...]) -> list[Cause]:
    if not events:
        return []
    xids = [e for e in events if e.kind == "xid"]
    followers = [e for e in xids if dict(e.values).get("xid") == "45"]
    ordered = sorted(events, key=lambda e: (EVENT_RANK.index(e.code) if e.code in EVENT_RANK else len(EVENT_RANK),
                                            e in followers and len(xids) > len(followers), -e.line))
    causes = []
    for event in ordered:
        values = dict(event.values)
        where = f" on the GPU at PCI {values['pci']}" if "pci" in values else ""
        detail = f"{event.text}{where}: {event.meaning}"
        values.update({"detail": detail, "fix": event.fix})
        if event.code in HEALTH:  # the same fault as check's health probe reads it
            values["gpu"] = values.get("pci", "that reported it")
            values["health"] = HEALTH[event.code]
        if event.code == "CD103" and "needs_cuda" in values:  # a driver older than the CUDA that compiled the code
            floor = toolkit_min_driver(values["needs_cuda"], "linux")
            values["driver_cuda"] = values.get("has_cuda", values["known_isa"])
            values["min_driver"] = f"{floor.version} (Linux; see NVIDIA's table for Windows)" if floor else \
                f"one that supports CUDA {values['needs_cuda']}"
        fact = detail
        if general_advice_fits(event.code, values):  # the code's advice, filled, is the fix: the event's goes with its cause
            fact = f"{detail}. For this message: {event.fix.rstrip('.')}"
        causes.append(Cause(event.code, fact, event.source, values, kind=event.kind, line=event.line))
    return causes

