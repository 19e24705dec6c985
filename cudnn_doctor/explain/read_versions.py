"""Pairs of versions (what a program was built for against what it found), GPU architectures with the words
that say a build does not fit them, the phrases of status_codes.toml, the framework that printed a message, and a
CUDA compiler's words for an architecture it does not know."""

from __future__ import annotations

import functools
import itertools
import re
from typing import Any

from cudnn_doctor.explain.facts import Arch, Compiler, Phrase, VersionPair
from cudnn_doctor.explain.message_text import FRAMEWORK_WINDOW, PER_LINE
from cudnn_doctor.knowledge.data import load
from cudnn_doctor.versions import ascii_digits

_VERSION = re.compile(r"\(\s{0,2}\d{1,2},\s{0,2}\d{1,2},\s{0,2}\d{1,3}\s{0,2}\)|\b\d{1,2}(?:\.\d{1,4}){1,3}\b|\b\d{4,5}\b")
_ARCH = re.compile(r"(?i)\b(?:sm|compute)[_-](\d{2,3})[a-z]?\b"
                   # "capability 8.6", "capability of 7.5", "compute capability >= 8.9", "capability of at least 8.0"
                   r"|(?:capability\W{1,4}(?:of\s|is\s|sm_)?(?:at least\s)?|cuda arch\s{0,2}\(\s{0,2})(\d{1,2})\.(\d)\b"
                   r"|capability\W{1,3}\((\d{1,2}), (\d)\)|\bcompute (\d{1,2})\.(\d)\b"
                   # TensorRT's "Target GPU SM 120", "sm120"; its "Unsupported SM: 0x809" (major, then minor in hex);
                   # Paddle's "compute capability in your current machine is 120"
                   # (not "SM 12.x" or "SM 10.3": a compute capability written after SM, FlashInfer's words)
                   r"|\bsm ?(\d{2,3})[a-z]?\b(?!\.[0-9x])|\bunsupported sm:? {0,2}0x([0-9a-f]{3,4})\b"
                   # "... your current GPU is 120" (Paddle's wheel check), "for compute capability 87" (tiny-cuda-nn)
                   # vLLM's "Minimum capability: 80. Current capability: 75." (the GPU's is the current one)
                   r"|(?:capability (?:in your current machine )?is|current gpu is|compute capability|current capability:)"
                   r" (\d{2,3})\b(?!\.\d)"
                   # tiny-cuda-nn's "built for lower compute capability (86) than the system's (89)" (bindings/torch/
                   # tinycudann/modules.py): both numbers in brackets, the GPU's last
                   r"|(?:compute capability|system's) \((\d{2,3})\)"
                   # the NVIDIA HPC SDK's target keywords (nvc++ -gpu=cc89, the deprecated -ta=tesla:cc70), and its
                   # "Switch -ta with unknown keyword cc89"
                   r"|(?:-gpu=|tesla:|keyword )cc(\d{2,3})\b"
                   # a minimum, then the GPU's own after "found" (Blender Cycles' device_cuda: "CUDA device supported only
                   # with compute capability 3.0 or up, found 2.1."): the GPU's is read last, so it is the one judged
                   r"|\bor (?:up|higher|newer|above|later|greater),?\s{0,3}(?:but\s{1,3})?found (\d{1,2})\.(\d)\b"
                   # an architecture as one number, in either of CUDA's encodings (arch_number): ggml's "no device code
                   # compatible with CUDA arch 520" and "not compiled with any CUDA arch <= 750" (__CUDA_ARCH__),
                   # a miner's "architecture (103) is not supported" and "not compiled for the gpu architecture 21",
                   # ACEMD's "cannot find image for module ... for device version 610"
                   r"|(?:cuda arch|gpu architecture|device version)\s{0,2}(?:<=?\s{0,2})?\(?(\d{2,4})\)?(?!\d|\.\d)"
                   r"|\barchitecture\s{0,2}\((\d{2,4})\)"
                   # a shader model with its dot (nheqminer's "Only CUDA devices with SM 5.0 and higher are supported")
                   r"|\bsm ?(\d{1,2})\.(\d)\b"
                   # Paddle's older banner "Please NOTE: device: 0, CUDA Capability: 75, Driver API Version: 10.1"
                   r"|\bcuda capability:\s{0,2}(\d{2,3})\b(?!\.\d)")

ARCH_CUES = ("no kernel image", "not compatible", "incompatible", "not supported", "unsupported", "no longer supports",
             "too old", "not a recognized processor", "only supports", "minimum", "requires", "kernel binaries",
             "arch_mismatch", "is not compatible", "does not support", "not defined", "unknown", "not recognized",
             "unrecognized", "only supported on", "only applicable on", "not found", "mismatched gpu architecture", "could not find compatible",
             "kernel is not available", "don't include", "do not include", "does not include",
             "built for lower compute capability", "supported only", "no device code", "not compiled with",
             "not compiled for", "cannot find image", "and higher are supported", "or higher are supported",
             "but got")
BUILT_WORDS = ("compile", "built", "build", "link", "source", "header", "expect", "requir", "need", "minimum", "at least",
               "was made", "supports up to")
FOUND_WORDS = ("found", "loaded", "runtime", "library is", "installed", "you have", "got", "detected", "current",
               "while the library", "local installation", "your", "is older", "older than", "driver version")



# -------------------------------------------------------------------------------------- versions and arch


def _normalise_version(text: str, subject: str) -> str:
    text = text.strip("() ")
    if "," in text:
        return ".".join(part.strip() for part in text.split(","))
    if ascii_digits(text):
        number = int(text)
        if subject.startswith("cudnn"):
            if number >= 90000:
                return f"{number // 10000}.{(number % 10000) // 100}.{number % 100}"
            return f"{number // 1000}.{(number % 1000) // 100}.{number % 100}"
        if subject in ("cuda", "driver", "framework") and number >= 1000:  # 11040 -> 11.4, 1201 -> 12.1
            if number >= 10000:
                return f"{number // 1000}.{(number % 1000) // 10}"
            return f"{number // 100}.{number % 100}"
    return text


def _subject(lower: str) -> str | None:
    if "dnn" in lower:
        return "cudnn-header" if "header" in lower else "cudnn"
    if "tensorrt" in lower or "trt" in lower:
        return "tensorrt"
    if "cuda" in lower and ("driver" in lower or "ptxas" in lower):
        return "driver"
    if "cuda" in lower:
        return "cuda"
    if any(word in lower for word in ("pytorch", "torch", "xformers", "flash", "jaxlib", "tensorflow")):
        return "framework"
    return None


def _role(lower: str, position: int) -> str | None:
    window = lower[max(0, position - 60):position]
    best: tuple[int, str] | None = None
    for words, role in ((BUILT_WORDS, "built"), (FOUND_WORDS, "found")):
        for word in words:
            at = window.rfind(word)
            if at >= 0 and (best is None or at > best[0]):
                # where the line also says what it was compiled against, what it is linked against is what it
                # found at run time ("linked-against version 8101 != compiled-against version 8100")
                best = (at, "found" if word == "link" and "compile" in lower else role)
    return best[1] if best else None


MISMATCH_WORDS = ("not compatible", "incompatible", "mismatch", "does not match", "do not match", "not supported")


# a package manager's words for one package's requirement of another: the versions on such a line are pins of a
# resolver's conflict (CD521), not what a build was made for and what it found; so are the versions of its progress
# and resolution lines (pip's "Using cached X-11.7.99-py3-none-win_amd64.whl", "9.0.0 Requires-Python >=3.11",
# "(from versions: ...)"): a package's releases, never a build's pair
PIN_WORDS = ("which is incompatible", "depends on", "you require", "but you'll have", "has requirement",
             "requires-python", "(from versions:", ".whl", "using cached ")


def versions(index: int, line: str, lower: str) -> list[VersionPair]:
    if any(word in lower for word in PIN_WORDS):
        return []
    subject = _subject(lower)
    if subject is None or not any(word in lower for word in ("version", "compiled", "built", "found", "loaded", "have")):
        return []
    if subject == "framework" and not any(word in lower for word in ("built", "compiled", "linked")):
        return []  # "torchvision requires torch==2.0.1, but you have 2.1.0" is pip's conflict, not a build's
    built: list[str] = []
    found: list[str] = []
    unplaced: list[str] = []  # versions no word before them places ("CUDA version 12.3 is not compatible")
    for match in itertools.islice(_VERSION.finditer(line), PER_LINE):
        text = match.group(0)
        near = lower[max(0, match.start() - 12):match.start()]
        if ascii_digits(text) and "version" not in lower[max(0, match.start() - 30):match.start()] \
                and "cuda" not in near and "against" not in near and not near.endswith(("compiled (", "runtime (")):
            continue  # a bare number is a version only right after the word (or "compiled/linked against 7102")
        if line[max(0, match.start() - 1):match.start()] in (":", "/") and text.count(".") == 0:
            continue
        if line[max(0, match.start() - 2):match.start()] in ("==", ">=", "<=", "~=", "!="):
            continue  # a requirement's pin ("depends on cuda-toolkit==13.0.2"): the resolver's words, not a build's
        role = _role(lower, match.start())
        value = _normalise_version(text, subject)
        if role == "built":
            built.append(value)
        elif role == "found":
            found.append(value)
        else:
            unplaced.append(value)
    # a line that says the two do not agree and places one of them as what was required: the other is what is here
    # ("CUDA version 12.3 is not compatible with TensorRT-LLM models. Required version: 12.4")
    if built and not found and len(unplaced) == 1 and any(word in lower for word in MISMATCH_WORDS):
        found = unplaced
    pairs = []
    for b in built[:2]:
        for f in found[:2]:
            if b != f:
                pairs.append(VersionPair(subject=subject, built=b, found=f, line=index))
    return pairs[:2]


def arch_number(digits: str) -> str:
    """A compute capability written as one number, in CUDA's two encodings: sm_XY's (21, 61, 103, 120: major, then one
    digit of minor) or __CUDA_ARCH__'s (520, 750, 1200: major*100 + minor*10). Three digits of 200 and more that end in
    0 are __CUDA_ARCH__'s (no GPU has a major of 20 and more); 100-199 are sm_'s (10.0-12.1)."""
    number = int(digits)
    if len(digits) == 4 or len(digits) == 3 and number >= 200 and digits.endswith("0"):
        return f"{number // 100}.{(number % 100) // 10}"
    return f"{digits[:-1]}.{digits[-1]}"


def archs(index: int, line: str, lower: str) -> list[Arch]:
    if "sm" not in lower and "compute" not in lower and "capability" not in lower and "current gpu is" not in lower \
            and "cuda arch" not in lower and "cc" not in lower and "architecture" not in lower \
            and "device version" not in lower:
        return []
    out = []
    cue = next((c for c in ARCH_CUES if c in lower), None)
    for match in itertools.islice(_ARCH.finditer(line), PER_LINE):
        if match.group(1):
            digits = match.group(1)
            value = f"{digits[:-1]}.{digits[-1]}"
        elif match.group(2):
            value = f"{match.group(2)}.{match.group(3)}"
        elif match.group(4):
            value = f"{match.group(4)}.{match.group(5)}"
        elif match.group(6):
            value = f"{match.group(6)}.{match.group(7)}"
        elif match.group(9):
            number = int(match.group(9), 16)
            value = f"{number >> 8}.{number & 0xFF}"
        elif match.group(13):
            value = f"{match.group(13)}.{match.group(14)}"
        elif match.group(15):
            value = arch_number(match.group(15))
        elif match.group(16) or match.group(17):
            # "architecture (103)" and "SM 5.0" are CUDA's only where the line speaks of CUDA or the GPU (a game's
            # "Shader Model 5.0 (SM 5.0)" is Direct3D's)
            if not any(word in lower for word in ("cuda", "gpu", "nvidia")):
                continue
            value = arch_number(match.group(16)) if match.group(16) else f"{match.group(17)}.{match.group(18)}"
        elif match.group(19):
            value = arch_number(match.group(19))
        else:
            digits = match.group(8) or match.group(10) or match.group(11) or match.group(12)
            value = f"{digits[:-1]}.{digits[-1]}"
        out.append(Arch(compute_capability=value, cue=cue, line=index))
    return out


# ----------------------------------------------------------------------------------- phrases, frameworks


@functools.cache
def _phrase_table() -> tuple[dict[str, Any], ...]:
    return tuple(load("status_codes").get("phrase", []))


def phrases(index: int, lower: str) -> list[Phrase]:
    out = []
    for row in _phrase_table():
        if row["text"] in lower and (not row.get("any") or any(word in lower for word in row["any"])):
            out.append(Phrase(text=row["text"], finding=row["finding"], meaning=row["meaning"], source=row["source"],
                              line=index, fix=row.get("fix", "")))
    if not out:
        out.extend(_no_gpu_answer(index, lower))
    if not out:
        out.extend(_sentences(index, lower, any(anchor in lower for anchor in SENTENCE_ANCHORS)))
    return out


@functools.cache
def _no_gpu_table() -> tuple[tuple[dict[str, Any], re.Pattern[str] | None], ...]:
    """compat/status_codes.toml [[no_gpu]], each row with one pattern for its availability probes answered with no GPU."""
    out = []
    for row in load("status_codes").get("no_gpu", []):
        pattern = None
        if row["probes"] and row["answers"]:
            probes = "|".join(re.escape(probe) for probe in row["probes"])
            answers = "|".join(re.escape(answer) for answer in row["answers"])
            # the probe, its call's brackets, then the words that give its answer and the answer: "is_available() is
            # False", "torch.cuda.device_count(): 0", "assert torch.cuda.is_available()" (an assertion that failed)
            pattern = re.compile(rf"(?:{probes})\s{{0,2}}(?:\((?:['\"]?gpu['\"]?)?\)\)?)?\s{{0,3}}"
                                 rf"(?:is|==|=|:|->|returns?|returned|gives)?\s{{0,3}}(?:{answers})(?![a-z0-9_])"
                                 rf"|assert\s{{1,3}}[a-z_.]{{0,40}}(?:{probes})")
        out.append((row, pattern))
    return tuple(out)


def _no_gpu_answer(index: int, lower: str) -> list[Phrase]:
    """A framework's own answer that it has no GPU to use: its availability probe said so (is_available() False,
    device_count() 0) or its words for it ("CUDA unavailable", "GPU is not accessible")."""
    for row, pattern in _no_gpu_table():
        said = next((words for words in row["sentences"] if words in lower), None)
        # a probe of CUDA's or a GPU's (torch.backends.mps.is_available() and xpu.device_count() are other devices')
        if said is None and pattern is not None and ("cuda" in lower or "gpu" in lower) \
                and any(probe in lower for probe in row["probes"]):
            match = pattern.search(lower)
            said = match.group(0) if match else None
        if said is not None:
            return [Phrase(text=said, finding=row["finding"], meaning=row["meaning"], source=row["source"], line=index)]
    return []


def _alternatives(words: list[str]) -> str:
    return "|".join(re.escape(word) for word in sorted(words, key=len, reverse=True))


def _sentence_pattern(kind: str, words: dict[str, list[str]]) -> re.Pattern[str]:
    """The orders a sentence of KIND takes, over its word lists (compat/status_codes.toml [[sentence]])."""
    if kind == "cuda-start":
        fail, start, objects = (_alternatives(words[key]) for key in ("fail", "start", "objects"))
        cuda = rf"cuda(?:\s(?:{objects}))?"
        return re.compile(rf"\b(?:{fail})\s(?:the\s)?(?:{start})\s(?:the\s)?{cuda}\b"  # failed to initialize the CUDA device
                          rf"|\b{cuda}\s(?:{start})\s(?:{fail})\b"  # CUDA (device) initialization failure
                          rf"|\bcuda\s(?:{fail})\s(?:to\s)?(?:{start})\b")  # CUDA failed to initialize
    if kind == "gpu-absent-any":  # no GPU at all, in a program's words without a vendor's ("no GPU is detected")
        nouns, found, search, fail, qualifiers = (_alternatives(words[key])
                                                  for key in ("nouns", "found", "search", "fail", "qualifiers"))
        gpu = rf"(?:(?:{qualifiers})\s)?(?:{nouns})"
        return re.compile(rf"\bno\s{gpu}\s(?:(?:was|were|is|are|has been|have been|could be)\s)?(?:{found})\b"
                          rf"|\b(?:{fail})\s(?:{search})\s(?:any\s|a\s|an\s|the\s)?{gpu}\b")
    if kind == "gpu-absent":
        makers, nouns, found, search, fail = (_alternatives(words[key])
                                              for key in ("makers", "nouns", "found", "search", "fail"))
        gpu = rf"(?:{makers})\s(?:{nouns})"
        return re.compile(rf"\bno\s(?:usable\s|supported\s|compatible\s)?{gpu}\s(?:(?:was|were|is|are)\s)?(?:{found})\b"
                          rf"|\b(?:{fail})\s(?:{search})\s(?:any\s|a\s|an\s|the\s)?{gpu}\b"
                          rf"|\b{gpu}\s(?:(?:was|were|is|are)\s)?not\s(?:{found})\b")
    subjects, old, advice = (_alternatives(words[key]) for key in ("subjects", "old", "advice"))
    # the advice may name the drivers in the plural ("Please update your Nvidia drivers")
    return re.compile(rf"\b(?:{subjects})(?:\s\S{{1,30}}){{0,3}}?\s(?:{old})\b|\b(?:{advice})")


@functools.cache
def _sentence_table() -> tuple[tuple[dict[str, Any], re.Pattern[str]], ...]:
    return tuple((row, _sentence_pattern(row["kind"], row["words"])) for row in load("status_codes").get("sentence", []))


SENTENCE_ANCHORS = ("cuda", "nvidia")  # a sentence counts on a line that names CUDA or NVIDIA ("graphics driver" alone is any)


def _names_other(lower: str, others: tuple[str, ...]) -> bool:
    """Does LOWER name one of OTHERS as a word of its own ("hip", not the "hip" of "chip")?"""
    return any(re.search(rf"(?<![a-z0-9]){re.escape(word)}(?![a-z0-9])", lower) for word in others if word in lower)


def _sentences(index: int, lower: str, anchored: bool = True) -> list[Phrase]:
    """A program's own sentence for a fault of the stack ("Failed to initialize CUDA device", "No NVIDIA GPU
    detected", "Your NVIDIA driver is too old"). Where the line names neither CUDA nor NVIDIA (not ANCHORED), only the
    rows that need no anchor are read, and not on a line that names another vendor's device."""
    for row, pattern in _sentence_table():
        if not anchored and (not row.get("unanchored") or _names_other(lower, tuple(row["words"].get("others", ())))):
            continue
        match = pattern.search(lower)
        if match:
            return [Phrase(text=match.group(0), finding=row["finding"], meaning=row["meaning"], source=row["source"],
                           line=index)]
    return []


def frameworks(lowers: list[str]) -> tuple[str, ...]:
    """Frameworks by how often their markers occur in the last FRAMEWORK_WINDOW characters, most first."""
    text = "\n".join(lowers)[-FRAMEWORK_WINDOW:]
    counts: dict[str, int] = {}
    for name, plain, words in _framework_markers():
        hits = sum(text.count(marker) for marker in plain) + sum(len(word.findall(text)) for word in words)
        if hits:
            counts[name] = hits
    return tuple(sorted(counts, key=lambda name: -counts[name]))


@functools.cache
def _framework_markers() -> tuple[tuple[str, tuple[str, ...], tuple[re.Pattern[str], ...]], ...]:
    """Each framework's markers: counted wherever they are, except a short word ("ort ", three letters or fewer),
    which counts only where a word starts (ONNX Runtime's "ort ", not the end of "support ")."""
    def short(marker: str) -> bool:
        return marker[:1].isalnum() and len(marker.strip()) <= 3

    return tuple((row["name"], tuple(m for m in row["markers"] if not short(m)),
                  tuple(re.compile(rf"(?<![a-z0-9]){re.escape(m)}") for m in row["markers"] if short(m)))
                 for row in load("libraries").get("framework", []))


# ---------------------------------------------------------------------------------------------- compilers


@functools.cache
def _compiler_table() -> tuple[dict[str, Any], ...]:
    return tuple(load("libraries").get("compiler", []))


@functools.cache
def _compiler_markers() -> tuple[str, ...]:
    return tuple(marker for row in _compiler_table() for marker in row["markers"])


def version_key(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.split(".") if ascii_digits(part))


def compilers(index: int, lower: str, whole: str) -> list[Compiler]:
    """The CUDA compilers' own words that they do not know the GPU architecture asked of them."""
    if not any(marker in lower for marker in _compiler_markers()):
        return []
    out = []
    for row in _compiler_table():
        if not any(marker in lower for marker in row["markers"]):
            continue
        cue = next((c for c in row["cues"] if c in lower), None)
        if cue is None:
            continue
        named = [arch.compute_capability for arch in archs(index, lower, lower)]
        if named and "oldest" in row and all(version_key(cc) < version_key(row["oldest"]) for cc in named):
            continue  # an architecture a newer toolkit dropped ('sm_30' with CUDA 11), not a GPU newer than it
        bundled = next((name for name in row.get("bundled_by", []) if name in whole), row.get("bundled_default"))
        out.append(Compiler(name=row["name"], cue=cue, bundled_by=bundled, line=index, source=row["source"],
                            path_variable=row.get("path_variable", "") if bundled else "", fix=row.get("fix", "")))
    return out
