"""What package managers and builds say: a resolver's conflict between the GPU stack's packages, a build of a
framework without GPU support, and an installer that found no build of a package."""

from __future__ import annotations

import functools
import itertools
import re
import urllib.parse
from typing import Any

from cudnn_doctor.explain.facts import Conflict, CpuBuild, NotFound
from cudnn_doctor.explain.message_text import FACT_WINDOW, PER_LINE
from cudnn_doctor.explain.read_libraries import TOKEN
from cudnn_doctor.knowledge.data import load

# ------------------------------------------------------------------------------------- resolver conflicts


@functools.cache
def _resolver_tables() -> tuple[tuple[tuple[str, str, str], ...], tuple[str, ...]]:
    data = load("libraries")
    texts = tuple((row["text"], row["tool"], row["source"]) for row in data.get("resolver", []))
    return texts, tuple(row["prefix"] for row in data.get("package", []))


# a line of a resolver's explanation says which package requires which: only there a GPU package counts
DEPENDENCY_WORDS = ("depends on", "requires", "requested", "==", ">=", "<=", "incompatible", "conflict", "cannot install",
                    "provides", "needed by", "->", "pins", "but you have", "would require", "cannot be installed")
FRAMEWORK_CORE = ("torch", "jax", "jaxlib", "tensorflow", "paddlepaddle", "onnxruntime")
# a build of a CUDA release: a wheel's local version (+cu121) or a conda build string (cuda112py38h3d13190_1,
# cuda118_py310h..., conda-forge's cudaXYZ builds)
_LOCAL_CUDA = re.compile(r"\+cu\d{2,3}\b|(?<![a-z])cuda\d{2,3}_?py\d{2,3}h[0-9a-f]{6,8}_\d{1,3}")
# the glyphs of conda's libmamba explanation tree ("├─ cuda-version 12.4** is requested", "└─ pytorch-cuda 11.8** is not
# installable because it requires"): each line names its package first
TREE_GLYPHS = ("├", "└", "│")
BLOCK_BEFORE, BLOCK_AFTER = 8, 12  # lines around a resolver's words that explain its conflict


def _gpu_context(lowers: list[str]) -> bool:
    """Does the message speak of the frameworks' NVIDIA GPU builds: a CUDA variant index (compat/libraries.toml
    [framework_swap] variant_context), a CUDA local version, CUDA, cuDNN or NVIDIA named?"""
    words = tuple(load("libraries").get("framework_swap", {}).get("variant_context", ()))
    return any(word in lower for lower in lowers[-400:] for word in words)


def _other_accelerator(lowers: list[str]) -> bool:
    """Does the message name another accelerator's or the CPU's build of a framework (torch-npu, +rocm, +cpu: compat/
    libraries.toml [framework_swap] other_accelerators)? Without NVIDIA evidence beside it, a clash over the
    frameworks' pins is not the NVIDIA stack's."""
    words = tuple(load("libraries").get("framework_swap", {}).get("other_accelerators", ()))
    return any(word in lower for lower in lowers[-400:] for word in words)


@functools.cache
def _framework_names() -> frozenset[str]:
    """The frameworks whose releases are built per CUDA (compat/libraries.toml [framework_swap] frameworks), and
    conda's name for PyTorch."""
    return frozenset(load("libraries").get("framework_swap", {}).get("frameworks", ())) | {"pytorch"}


def _gpu_packages(line: str, lower: str, gpu_context: bool = True, other_accelerator: bool = False) -> list[str]:
    """The GPU stack's packages a resolver line names on its requirement side: after its first dependency word
    ("torch 2.2.1+cu121 requires nvidia-cublas-cu12==12.1.3.1"), so that "tensorflow-gpu 2.8.0 has requirement
    numpy>=1.20" (a GPU package wanting numpy) is not a conflict of the GPU stack."""
    _, prefixes = _resolver_tables()
    hits = [(at, word) for at, word in ((lower.find(word), word) for word in DEPENDENCY_WORDS) if at >= 0]
    verb, word = min(hits) if hits else (len(lower), "")
    if lower.lstrip().startswith(TREE_GLYPHS):  # libmamba's tree: the line's package comes first ("└─ pytorch-cuda 11.8")
        verb, word = 0, ""
    elif word == "->" and not lower.lstrip().startswith(("->", "`->", "|")):  # (uv's ASCII tree starts "`-> Because")
        # conda's "Requested package -> Available versions": the spec the user asked for comes first ("Package
        # libstdcxx-ng conflicts for:" then "cudatoolkit=10.2 -> libstdcxx-ng[version=...]")
        verb, word = 0, ""
    # who asks: a framework's companion built per framework release (torchvision 0.17.0 depends on torch==2.2.0) makes
    # a framework pin the GPU stack's; another package's pin on the framework needs the message's GPU context
    asker = [token.strip(".,:;'\"").lower() for token in TOKEN.findall(line[max(0, verb - 80):verb])[-3:]]
    # (a companion counts unless the message is about another accelerator's or the CPU's build, with no NVIDIA word)
    # (the framework itself asking, "Because torch==2.6.0 has no wheels ...", is no companion: its own pin needs the context)
    companion = any(name in _framework_names() and name not in (*FRAMEWORK_CORE, "pytorch") for name in asker) \
        and (gpu_context or not other_accelerator)
    required = TOKEN.search(lower, verb + len(word)) if hits else None
    if required is not None and required.group(0).strip(".") in FRAMEWORK_CORE:
        verb = 0  # "torchvision 0.16.0+cu118 depends on torch==2.1.0": a CUDA build of a companion wants another torch
    found = []
    frameworks = _framework_names()
    for token in itertools.islice(TOKEN.finditer(line, verb), 200):
        text = token.group(0).strip(".,:;'\"")
        low = text.lower()
        # a framework itself on the requirement side ("torchvision 0.17.0 depends on torch==2.2.0", "The user requested
        # torch==2.1.0"): its releases are built per CUDA, so a conflict over its pins is the GPU stack's where the
        # message speaks of its GPU builds (GPU_CONTEXT: a variant index, a CUDA word); a plain version clash of an
        # add-on with torch, with nothing of CUDA in it, is the add-on's pin, as not_found holds for "no matching"
        if low.replace("_", "-").startswith(prefixes) or _LOCAL_CUDA.search(low) or low in frameworks and (gpu_context or companion):
            found.append(text)
            if len(found) >= PER_LINE:
                break
    return found


def conflicts(lines: list[str], lowers: list[str]) -> list[Conflict]:
    """The package manager's conflicts that name the GPU stack's own packages: nvidia-*-cuNN wheels, cuda-toolkit,
    builds with a +cuXXX local version. Read from the end, within FACT_WINDOW characters."""
    texts, _ = _resolver_tables()
    out: list[Conflict] = []
    budget = FACT_WINDOW
    seen: set[int] = set()
    named_on: dict[int, list[str]] = {}  # each line is read for packages once, however many blocks it is in
    gpu_context: bool | None = None  # each asked of the message once, when a line first needs it (each reads its
    other_accelerator: bool | None = None  # last 400 lines: per line, a resolver-heavy log took 6 s of 2 MB's 7)
    for index in range(len(lines) - 1, -1, -1):
        budget -= len(lines[index]) + 1
        if budget < 0 or len(out) >= 4:
            break
        hit = next(((tool, source) for text, tool, source in texts if text in lowers[index]), None)
        if hit is None:
            continue
        packages: list[str] = []
        pins: list[str] = []
        for near in range(max(0, index - BLOCK_BEFORE), min(len(lines), index + BLOCK_AFTER + 1)):
            lower = lowers[near]
            if not any(word in lower for word in DEPENDENCY_WORDS):
                continue
            if near not in named_on:
                if gpu_context is None or other_accelerator is None:
                    gpu_context, other_accelerator = _gpu_context(lowers), _other_accelerator(lowers)
                named_on[near] = _gpu_packages(lines[near], lower, gpu_context, other_accelerator)
            named = named_on[near]
            if named:
                packages.extend(name for name in named if name not in packages)
                if near not in seen:
                    seen.add(near)
                    pins.append(" ".join(lines[near].split())[:200])
        if packages:
            out.append(Conflict(tool=hit[0], packages=tuple(packages[:PER_LINE]), pins=tuple(pins[:4]), line=index,
                                source=hit[1]))
    out.reverse()
    return out

# ------------------------------------------------------------------------------------------ CPU-only builds


@functools.cache
def _cpu_tables() -> tuple[dict[str, Any], tuple[dict[str, Any], ...]]:
    data = load("libraries")
    return data["cpu_words"], tuple(data.get("cpu_build", []))


_WORD = re.compile(r"[a-z_][a-z0-9_'=\-]{0,40}")
# a GPU package's own cuDNN module that Python cannot import: the package was built without cuDNN
_CUDNN_MODULE = re.compile(r"no module named '?[a-z0-9_]{2,40}(?:\.[a-z0-9_]{1,40}){0,3}\.cudnn'?"
                           r"|has no attribute '?cudnn\b")
_CLAUSE = re.compile(r"[.;:!?]\s|\n")
CPU_AHEAD = 6  # a GPU word this many words after the build verb belongs to it ("not compiled with CUDA enabled")


def cpu_builds(index: int, lower: str, wrapped: str = "") -> list[CpuBuild]:
    """A build without GPU support, in any framework's words: its own markers ([[cpu_build]]; read across a line break
    too, WRAPPED being the line with the next one after it: "is not in available provider\nnames") or the grammar of
    [cpu_words]: a negated build verb with a GPU word after it, an imperative to build with the GPU, or the CPU
    variant named beside a GPU word."""
    words, markers = _cpu_tables()
    marked = wrapped or lower
    out = [CpuBuild(framework=row["framework"], text=row["text"], line=index, source=row["source"]) for row in markers
           if row["text"] in marked and (not row.get("any") or any(word in marked for word in row["any"]))]
    if out or not any(word in lower for word in words["gpu"]):
        return out
    module = _CUDNN_MODULE.search(lower) if "cudnn" in lower else None
    if module is not None:  # a GPU package's own cuDNN module absent ("No module named 'cupy.cudnn'")
        return [CpuBuild(framework=None, text=module.group(0), line=index, source=words["cudnn_source"], part="cudnn")]
    for clause in itertools.islice(_CLAUSE.split(lower, 16), 16):
        if not any(word in clause for word in words["gpu"]) or any(word in clause for word in words["architecture"]):
            continue
        tokens = [t.strip("'=-") for t in itertools.islice(_WORD.findall(clause), 200)]
        said = (_negated_build(tokens, words) or next((v for v in words["variants"] if v in clause), None)
                or _absent_from_build(clause, words))
        if said:
            # only cuDNN named ("cuDNN is not enabled", "not compiled with cuDNN"): a GPU build without its cuDNN part
            only_cudnn = {word for word in words["gpu"] if word in clause} == {"cudnn"}
            out.append(CpuBuild(framework=None, text=said, line=index, source=words["cudnn_source"] if only_cudnn
                                else words["source"], part="cudnn" if only_cudnn else "gpu"))
            break
    return out


def _absent_from_build(clause: str, words: dict[str, Any]) -> str | None:
    """A GPU word, then words that say this build lacks it ("CUDA execution provider is not enabled in this build")."""
    for absent in words.get("absent", []):
        at = clause.find(absent)
        if at > 0 and any(word in clause[:at] for word in words["gpu"]):
            return absent
    return None


def _negated_build(tokens: list[str], words: dict[str, Any]) -> str | None:
    gpu = tuple(words["gpu"])
    for at, token in enumerate(tokens):
        if token not in words["build"] and token not in words["imperative"]:
            continue
        ahead = tokens[at + 1:at + 1 + CPU_AHEAD]
        # a GPU word, or a CMake definition of one ("-DUSE_CUDA=1" read as "duse_cuda=1")
        if not any(t.startswith(gpu) or (t[:1] == "d" and t[1:].startswith(gpu)) for t in ahead):
            continue
        before = tokens[max(0, at - 3):at]
        negated = any(t in words["negations"] for t in before) or (ahead and ahead[0] == "without")
        # "Please compile with CUDA enabled", "Compile with USE_CUDA=1 to enable GPU usage", "Please recompile with
        # CMake option -DUSE_CUDA=1" (LightGBM): the build lacks it
        imperative = (token in words["imperative"] and ahead[:1] == ["with"]
                      and (at == 0 or tokens[at - 1] in ("please", "must"))
                      # "recompile"/"rebuild" with a build option, not with another CUDA ("recompile with CUDA 12.4")
                      and (token == "compile" or any("=" in t and t.lstrip("d").startswith(gpu) for t in ahead)))
        if negated or imperative:
            return " ".join(tokens[max(0, at - 2):at + 1 + min(len(ahead), 3)])
    return None


# ------------------------------------------------------------------------------------- installers: no build


# a CUDA tag in a package's name or version: mxnet-cu112, cupy-cuda91, paddlepaddle-gpu, torch==2.1.0+cu121,
# jaxlib==0.4.7+cuda11.cudnn86, nvidia-cudnn-cu12
_CUDA_TAG = re.compile(r"(?:^|[-_+.\[])(?:cu\d{2,3}x?|cuda\d{0,3}x?|gpu)(?=$|[-_+.=<>\],;]|torch\d)")
_PACKAGE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.+\-]{0,80}(?:\[[a-z0-9_,\-]{1,40}\])?(?:[=<>!~]{1,2}[A-Za-z0-9_.+*\-]{1,40}){0,3}")
# a URL (or a file: URL), as a resolver names a direct requirement; its last part may be a wheel's file
_URL = re.compile(r"(?:https?|file)://[^\s`'\"]{1,600}")


def _url_files(piece: str) -> str:
    """PIECE with each of its first URLs that name a wheel's file replaced by that file's name, unquoted
    ("https://.../flash_attn-2.8.3%2Bcu12torch2.8-...whl" -> "flash_attn-2.8.3+cu12torch2.8-...whl")."""
    out, last = [], 0
    for url in itertools.islice(_URL.finditer(piece), PER_LINE):
        name = url.group(0).rstrip("/.,;:)").rsplit("/", 1)[-1]
        if name.endswith(".whl"):
            out += [piece[last:url.start()], " ", urllib.parse.unquote(name)]
            last = url.end()
    return "".join(out) + piece[last:] if out else piece


NOT_FOUND_AFTER = 8  # conda lists the packages it did not find on the lines after its words


@functools.cache
def _not_found_table() -> tuple[tuple[str, str, str], ...]:
    return tuple((row["text"], row["tool"], row["source"]) for row in load("libraries").get("not_found", []))


@functools.cache
def _named_table(where: str) -> frozenset[str]:
    return frozenset(row["text"] for row in load("libraries").get("not_found", []) if row.get("named") == where)


def _indented_below(lowers: list[str], index: int) -> list[str]:
    """The indented lines right after INDEX, up to the first line that is not (pip lists packages so)."""
    out: list[str] = []
    for line in lowers[index + 1:index + 1 + NOT_FOUND_AFTER]:
        if not line.strip() or not line[:1].isspace() and out:
            break
        out.append(line.strip())
    return out


def not_found(lines: list[str], lowers: list[str]) -> list[NotFound]:
    """A package manager found no package for a request that names the GPU stack's packages or a CUDA build."""
    _, prefixes = _resolver_tables()
    out: list[NotFound] = []
    budget = FACT_WINDOW
    for index in range(len(lines) - 1, -1, -1):
        budget -= len(lines[index]) + 1
        if budget < 0 or len(out) >= 2:
            break
        hit = next(((text, tool, source) for text, tool, source in _not_found_table() if text in lowers[index]), None)
        if hit is None:
            continue
        text, tool, source = hit
        at = lowers[index].find(text)
        start = at + len(text)
        pieces = [lowers[index][start:]] + [line for line in lowers[index + 1:index + 1 + NOT_FOUND_AFTER]
                                             if tool == "conda" and line.lstrip().startswith("-") and "://" not in line]
        if text in _named_table("before"):  # the wheel or distribution is named before the words ("X.whl is not a supported ...")
            pieces = [lowers[index][:at]]
        elif text in _named_table("below"):  # pip's "...available for your environment:" then one package a line
            pieces = [lowers[index][start:]] + _indented_below(lowers, index)
        packages: list[str] = []
        for piece in pieces:
            # a requirement given by its URL names its wheel file last, quoted ("flash_attn-2.8.3%2Bcu12torch2.8-...whl")
            piece = _url_files(piece)
            for match in itertools.islice(_PACKAGE.finditer(piece), 12):
                name = match.group(0)
                pin = _PIN.match(name)
                # a wheel's file is named by its distribution first (torch-2.0.0-cp310-cp310-win_amd64.whl)
                wheel = name.split("-")[0].replace("_", "-") if name.endswith(".whl") else None
                # a framework itself: no build of it for this Python, platform or CUDA variant is the GPU stack's
                framework = pin is not None and pin.group(1) in _framework_names() or wheel in _framework_names()
                # a framework counts where the message is about its GPU builds (a variant index, a CUDA word): pip
                # finding no torch for this Python alone is a Python pin, not the GPU stack's
                # (a local version counts where it is a CUDA build's, +cu121: a +cpu or +rocm build is no NVIDIA evidence)
                variant = _LOCAL_VARIANT.search(name)
                # no release at all for this Python and platform ("(from versions: none)"): the framework has no
                # build here whatever the CUDA, the platform's class (every set labels it so: CD520)
                nothing = any("(from versions: none)" in lowers[at] for at in range(max(0, index - 2), index + 1))
                if name.replace("_", "-").startswith(prefixes) or _CUDA_TAG.search(name) or variant and variant.group(1).startswith("cu") \
                        or framework and (_gpu_context(lowers) or nothing):
                    packages.append(name)
            if tool != "conda" and text not in _named_table("below"):
                break  # pip names one requirement, right after its words
        if packages:
            out.append(NotFound(tool=tool, packages=tuple(packages[:PER_LINE]), line=index, source=source,
                                fix=_wheel_fix(packages[0])))
        elif tool == "pip":
            out.extend(_past_last_release(lowers[index], index))
    out.reverse()
    return out


# pip's requirement pinned to one release, then the releases it found: "the requirement torch==2.4.1 (from versions:
# 1.11.0, ..., 2.2.2)"
_PINNED_FROM = re.compile(r"requirement ([a-z0-9][a-z0-9_.\-]{0,60})==(\d{1,4}(?:\.\d{1,4}){0,3})\b[^(\n]{0,80}"
                          r"\(from versions: ([0-9a-z.,+ ]{1,2000})\)")


def _past_last_release(lower: str, index: int) -> list[NotFound]:
    """pip found no release of a framework pinned past the last one built for a platform the framework dropped, and
    the releases it lists end at that one (compat/libraries.toml [[platform_last_release]]): no build of the pinned
    release exists on that platform."""
    from cudnn_doctor.explain.read_versions import version_key

    found = _PINNED_FROM.search(lower)
    if found is None:
        return []
    name, pinned, listed = found.group(1), found.group(2), found.group(3)
    releases = [part.strip() for part in listed.split(",") if part.strip()[:1].isdigit()]
    last = max(releases, key=version_key, default="")
    for row in load("libraries").get("platform_last_release", []):
        if row["name"] == name and last == row["version"] and version_key(pinned) > version_key(last):
            fix = (f"{name} {last} is the last release with wheels for {row['platform']}; {name}=={pinned} has none "
                   f"there. Pin {name}<={last} (and its companions of that release) on this machine, or install on "
                   "another platform (Apple silicon, Linux or Windows) where the newer release is built.")
            return [NotFound(tool="pip", packages=(f"{name}=={pinned}",), line=index,
                             source=f"compat/libraries.toml: {row['source']}", fix=fix)]
    if name in _framework_names() and releases and all(version_key(r) > version_key(pinned) for r in releases):
        # a framework pinned older than every release its index offers this Python and platform: that release was
        # built for older Pythons only (TensorFlow 2.13 for 3.8-3.11 while Colab's Python is 3.12; a release
        # candidate gone once the release came): no build of it here, CD520's class (round nineteen's published
        # explain set, not blind)
        first = min(releases, key=version_key)
        fix = (f"{name}=={pinned} has no wheel for this Python and platform: the index offers {name} {first} and "
               f"later here ({len(releases)} releases). Use a Python that {name} {pinned} was built for (its page on "
               f"the index lists its wheels' Python tags), or pin {name}=={first} or a later listed release.")
        return [NotFound(tool="pip", packages=(f"{name}=={pinned}",), line=index,
                         source="pypa/pip resolver ('Could not find a version that satisfies the requirement %s (from "
                                "versions: %s)': the releases with a file for this interpreter and platform)", fix=fix)]
    return []


# a wheel's file name (PEP 427): {distribution}-{version}(-{build})?-{python tag}-{abi tag}-{platform tag}.whl
_WHEEL_TAGS = re.compile(r"^([a-z0-9_.]+)-([0-9][a-z0-9_.+!]*)(?:-\d[a-z0-9_.]*)?-([a-z0-9_.]+)-([a-z0-9_.]+)-([a-z0-9_.]+)\.whl$")
_PYTHON_TAG = re.compile(r"^cp(\d)(\d{1,2})$")


def _wheel_fix(name: str) -> str:
    """For a wheel file pip refused: the Python and platform its tags name (PEP 427/425), and what to do."""
    found = _WHEEL_TAGS.match(name.lower())
    if found is None:
        return ""
    distribution, version, python, _, platform = found.groups()
    tag = _PYTHON_TAG.match(python)
    python_text = f"CPython {tag.group(1)}.{tag.group(2)}" if tag else f"Python tag {python}"
    return (f"The wheel {name} is {distribution.replace('_', '-')} {version} built for {python_text} on {platform}; pip "
            "refuses it on any other Python or platform. Use the wheel whose tags match this interpreter (`python -c "
            "\"import sys, sysconfig; print(sys.version_info[:2], sysconfig.get_platform())\"` names them), or a Python "
            f"{python_text.split()[-1]} environment on {platform}, or install {distribution.replace('_', '-')} from its "
            "index and let pip choose the wheel.")


# ------------------------------------------------------------- a framework's CUDA build asked for where none exists

# a framework's CUDA build asked of pip by its extra ("jax[cuda12_pip]", "tensorflow[and-cuda]"): the framework's pip name
_CUDA_EXTRA = re.compile(r"(?<![\w.-])(jax|tensorflow)\[([a-z0-9_,\-]{0,40}cuda[a-z0-9_,\-]{0,40})\]")
# a Windows machine in a pasted log: a drive letter's path or prompt, a Windows wheel tag
_WINDOWS = re.compile(r"(?<![a-z0-9])[a-z]:\\[^\s]|\bwin_amd64\b|\bwin32\b")
PIP_FRAMEWORK = {"jax": "jax", "tensorflow": "tensorflow"}


def platform_requests(lines: list[str], lowers: list[str]) -> list[NotFound]:
    """pip asked for a framework's CUDA build (its CUDA extra) on an OS for which the framework publishes none
    (compat/rules.toml [[no_gpu_build]]: JAX's CUDA plugins are Linux-only; TensorFlow's native-Windows GPU builds ended
    with 2.10): no build exists for this platform, whatever the index holds."""
    asked = next(((index, match) for index in range(len(lowers) - 1, -1, -1)
                  for match in itertools.islice(_CUDA_EXTRA.finditer(lowers[index]), 1)), None)
    if asked is None or not any(_WINDOWS.search(lower) for lower in lowers[-400:]):
        return []
    index, match = asked
    framework = PIP_FRAMEWORK[match.group(1)]
    rule = next((row for row in load("rules").get("no_gpu_build", [])
                 if row.get("framework") == framework and row.get("os") == "windows"), None)
    if rule is None or (framework == "tensorflow" and str(rule.get("from_version")) != "0.0" and "and-cuda" not in match.group(2)):
        return []  # TensorFlow's [and-cuda] extra came after its last Windows GPU build: only that extra says so
    why = str(rule["why"]).replace(" (--os linux)", "")  # compat's option, not the user's words
    return [NotFound(tool="pip on Windows", packages=(match.group(0),), line=index,
                     source=f"compat/rules.toml [[no_gpu_build]]: {rule['why']}; {rule['source']}",
                     fix=f"{why[:1].upper()}{why[1:]}: install {match.group(0)} inside WSL2 (Ubuntu, with "
                         "the Windows NVIDIA driver, which WSL2 uses) or on Linux; on native Windows only the CPU "
                         f"build of {framework} installs.")]



# ------------------------------------------- a companion package that makes pip replace the framework (round ten)


@functools.cache
def _swap_table() -> dict[str, Any]:
    return dict(load("libraries").get("framework_swap", {}))


# pip's own lines: "Collecting torch==2.0.0 (from xformers==0.0.19)", "Collecting nvidia-curand-cu11==10.2.10.91 (from
# torch==2.0.0->xformers==0.0.19)", "Found existing installation: torch 2.4.1", "Downloading torch-2.7.0-cp310-...whl",
# "Successfully installed ... torch-2.0.0 ..."; a pip command line
_FROM = re.compile(r"\(from ([^()\n]{1,300})\)")
# (conda's match spec pins with one '=': "pytorch=2.6*", "cudatoolkit=11.8")
_PIN = re.compile(r"^([a-z0-9][a-z0-9_.\-]{0,80}?)(?:\[[a-z0-9_,\-]{1,40}\])?\s{0,2}(?:(==|>=|<=|~=|<|>|!=|=)\s{0,2}([a-z0-9_.+*!\-]{1,40}))?"
                  r"(?:,[<>=!~]{1,2}[a-z0-9_.+*\-]{1,40}){0,3}$")
_EXISTING = re.compile(r"found existing installation: ([a-z0-9][a-z0-9_.\-]{0,80}) ([0-9][a-z0-9_.+!\-]{0,40})")
_WHEEL_FILE = re.compile(r"(?:downloading|collecting|using cached) ([a-z0-9][a-z0-9_.]{0,80})-([0-9][a-z0-9_.+!]{0,40})-(?:cp|py)\d")
_COMMAND = re.compile(r"(?:^|[\s$>#])(?:pip3?|python3? -m pip|uv pip) install\b([^\n]{0,600})")
_LOCAL_VARIANT = re.compile(r"\+(cu\d{2,3}|cpu|rocm[\d.]{1,8})\b")


def _requested(lowers: list[str]) -> set[str] | None:
    """The packages the pip command lines in the text name (None: no command line), by name."""
    names: set[str] = set()
    seen = False
    for lower in lowers[-400:]:
        for match in itertools.islice(_COMMAND.finditer(lower), 2):
            seen = True
            for word in match.group(1).split():
                if word.startswith("-") or "://" in word and "#egg=" not in word:
                    continue
                word = word.split("#egg=")[-1] if "#egg=" in word else word
                pin = _PIN.match(word.strip("'\""))
                if pin is not None:
                    names.add(pin.group(1).replace("_", "-"))
    return names if seen else None


def framework_swaps(lines: list[str], lowers: list[str]) -> list[Conflict]:
    """pip replacing the framework the environment has with another release because a companion package asks for it
    (compat/libraries.toml [framework_swap]): its "(from X)" chains, its uninstall of the framework, or a framework
    wheel downloaded that no command line asked for. The companion's release pins another framework than the one
    installed; the framework's CUDA build is lost with it."""
    table = _swap_table()
    if not table or not any(word in lower for lower in lowers[-400:] for word in ("collecting", "installation:", "downloading")):
        return []
    frameworks = tuple(table["frameworks"])
    requested = _requested(lowers)
    pulled: dict[str, tuple[str, str, int]] = {}  # framework -> (version, the package that asks for it, line)
    existing: dict[str, tuple[str, int]] = {}
    for index, lower in enumerate(lowers[-400:], start=max(0, len(lowers) - 400)):
        for match in itertools.islice(_FROM.finditer(lower), 2):
            chain = [part.strip() for part in match.group(1).split("->")]
            head = lower[:match.start()].split()
            parts = ([head[-1]] if head else []) + chain
            for at, part in enumerate(parts[:-1]):
                pin = _PIN.match(part)
                by = _PIN.match(parts[at + 1])
                if pin is None or by is None or pin.group(1) not in frameworks or by.group(1) in frameworks \
                        or parts[at + 1].startswith("-r"):
                    continue
                pulled.setdefault(pin.group(1), (pin.group(3) or "", by.group(0), index))
        found = _EXISTING.search(lower)
        if found and found.group(1) in frameworks:
            existing[found.group(1)] = (found.group(2), index)
        wheel = _WHEEL_FILE.search(lower)
        if wheel and wheel.group(1).replace("_", "-") in frameworks and requested is not None \
                and wheel.group(1) not in requested and requested:
            named = next(iter(sorted(requested - set(frameworks))), "")
            if named:
                pulled.setdefault(wheel.group(1), (wheel.group(2), named, index))
    if not pulled and existing and requested:  # pip uninstalls the framework though the command named only others
        for name, (_version, index) in existing.items():
            others = sorted(requested - set(frameworks))
            if name not in requested and others:
                pulled[name] = ("", others[0], index)
    out = []
    for name, (version, asker, index) in list(pulled.items())[:1]:
        had = existing.get(name, ("", -1))[0]
        out.append(_swap(name, version, asker, had, index, table))
    return out


def _swap(name: str, version: str, asker: str, had: str, index: int, table: dict[str, Any]) -> Conflict:
    takes = f"{name} {version}" if version else f"another {name}"
    was = f" in place of the installed {name} {had}" if had else ""
    variant = _LOCAL_VARIANT.search(had) if had else None
    index_url = f"https://download.pytorch.org/whl/{variant.group(1)}" if variant and name in table["pytorch_index"] else ""
    keep = (f"`pip install {name}=={had} --index-url {index_url}`" if index_url
            else f"`pip install {name}=={had}` from the index it came from" if had else
            f"the {name} you had, from the index it came from (its CUDA build's: https://download.pytorch.org/whl/cuXYZ for torch)")
    fix = (f"Install the release of {asker.split('==')[0]} built for your {name} (its release notes or requirements pin the "
           f"{name} each release needs), or install it with `--no-deps` so pip keeps your {name}; if pip already replaced "
           f"it, reinstall {keep}. Then `pip check` lists what each package requires.")
    pins = (f"{asker} requires {takes}: pip installs it{was}",)
    return Conflict(tool="pip", packages=(f"{name} {version}".strip(), asker), pins=pins, line=index,
                    source=table["source"], fix=fix)


# ------------------------------------------------- pip's isolated build environment without the framework (round ten)

@functools.cache
def _isolation_table() -> dict[str, Any]:
    return dict(load("libraries").get("build_isolation", {}))


def build_isolation(lines: list[str], lowers: list[str]) -> list[NotFound]:
    """pip building a package from source in its isolated build environment (compat/libraries.toml [build_isolation]),
    where the framework the package compiles against is absent: "Getting requirements to build wheel did not run
    successfully" with "No module named 'torch'" (or the package's own words asking for torch) in its output."""
    table = _isolation_table()
    if not table:
        return []
    stage = next((index for index in range(len(lowers) - 1, max(-1, len(lowers) - 400), -1)
                  if any(word in lowers[index] for word in table["stages"])), None)
    if stage is None:
        return _installed_yet_absent(lowers, table)
    window = lowers[max(0, stage - 4):stage + 40]
    framework = next((name for name in table["frameworks"] for lower in window
                      if any(word.replace("{name}", name) in lower for word in table["absent"])), None)
    built = _built_package(lowers[max(0, stage - 40):stage + 40])
    # the step's own name and the traceback opening in pip's hook runner: the setup raised in that step, its last
    # line cut ([build_isolation] hook_runner)
    hook_step = any(word in lowers[stage] for word in table.get("hook_step_words", ())) and \
        any(word in lower for lower in window for word in table.get("hook_runner", ()))
    if framework is None and built is not None and (hook_step or any(word in lower for lower in window
                                                                     for word in table.get("requirement_steps", ()))):
        # the output cut before its last line, but the step that failed is the one that runs the package's setup
        # before any compiling, and that setup imports the framework first ([build_isolation] imports_framework)
        framework = next((name for name, packages in table.get("imports_framework", {}).items() if built in packages), None)
    if framework is None:
        return []
    package = built or next(iter(sorted((_requested(lowers) or set()) - {framework, "torch"})), None)
    installer = "uv pip" if any(word in lower for lower in window for word in table.get("uv_words", ())) else "pip"
    build = (f"`{installer} install --no-build-isolation {package}`" if package else
             f"`{installer} install --no-build-isolation` with the package's name")
    fix = (f"{installer} built the package in an isolated environment that has no {framework}: install {framework} first (its "
           f"CUDA build), then build against it with {build} (with a CUDA toolkit on PATH for its extension), or "
           f"install a prebuilt wheel of the package for your {framework}, CUDA and Python.")
    return [NotFound(tool=f"{installer} (isolated build)", packages=(framework,), line=stage, source=f"compat/libraries.toml "
                     f"[build_isolation]: {table['source']}", fix=fix)]


_SATISFIED = re.compile(r"requirement already satisfied: ([a-z0-9_.-]{1,60})")


def _installed_yet_absent(lowers: list[str], table: dict[str, Any]) -> list[NotFound]:
    """pip's own line that the framework is installed ("Requirement already satisfied: torch>=2.4.0 in ..."), then
    "No module named 'torch'" while a package whose setup imports it is installed ([build_isolation]
    imports_framework, named in the text): the framework is there, so what lacked it is pip's isolated build."""
    tail = lowers[-400:]
    installed = {hit.group(1) for lower in tail if (hit := _SATISFIED.search(lower))}
    for framework, packages in table.get("imports_framework", {}).items():
        if framework not in installed:
            continue
        absent = next((i for i, lower in enumerate(tail) if f"no module named '{framework}'" in lower), None)
        words = set(re.findall(r"[a-z0-9][a-z0-9_-]{1,60}", " ".join(tail).replace("_", "-")))
        package = next((name for name in packages if name in words), None)
        if absent is None or package is None:
            continue
        fix = (f"pip built {package} in an isolated environment that has no {framework}, though {framework} is installed "
               f"here: build it against the installed {framework} with `pip install --no-build-isolation {package}` "
               f"(with a CUDA toolkit on PATH for its extension), or install a prebuilt wheel of {package} for your "
               f"{framework}, CUDA and Python.")
        return [NotFound(tool="pip (isolated build)", packages=(framework,), line=len(lowers) - len(tail) + absent,
                         source=f"compat/libraries.toml [build_isolation]: {table['source']}", fix=fix)]
    return []


# the package an installer says it failed to build: uv's "Failed to build `flash-attn==2.8.2`" and its hint "indicates
# that `flash-attn@2.8.1` depends on", pip's "Failed to build 'file:///root/Wan2GP/SageAttention'" (the folder's name)
_BUILT = re.compile(r"(?:failed to build|indicates that) [`'\"]?(?:file:///(?:[^`'\"\s]*/)?)?([a-z][a-z0-9_.-]{0,80}?)"
                    r"(?:==|@|[`'\"\s]|$)")


# and where it is not said, the package the installer was fetching: pip's "Collecting flash_attn", "Using cached
# flash_attn-2.7.4.post1.tar.gz", "Obtaining file:///.../SageAttention", a launcher's own "Installing SageAttention"
_FETCHED = re.compile(r"^\s*(?:collecting|installing) ([a-z][a-z0-9_.-]{0,80}?)(?:[<>=!~\[;\s]|$)|using cached "
                      r"([a-z][a-z0-9_]{0,80}?)-\d|obtaining file:///(?:[^\s'\"]*/)?([a-z][a-z0-9_.-]{0,80})"
                      # old pip's "cwd: /tmp/pip-install-_op0fkvy/flash-attn_32ecdb534ca149cebac1b8d1956665eb"
                      r"|cwd: \S{0,200}?pip-install-[^/\\\s]{1,40}[/\\]{1,2}([a-z][a-z0-9_.-]{0,80}?)_[0-9a-f]{32}")


def _built_package(window: list[str]) -> str | None:
    for lower in window:
        hit = _BUILT.search(lower)
        if hit is not None and hit.group(1) not in ("the", "a", "wheel", "wheels"):
            return hit.group(1).replace("_", "-")
    for lower in window:
        fetched = _FETCHED.search(lower)
        if fetched is not None:
            return next(name for name in fetched.groups() if name).replace("_", "-").rstrip(".")
    return None


# -------------------------------- a package's library named for one framework release, absent (round ten)

# "libdgl_sparse_pytorch_2.0.0.so", "graphbolt_pytorch_2.4.0.post301.dll": a package that ships one library per
# framework release, named by torch.__version__, and has none for the one installed
_FRAMEWORK_NAMED = re.compile(r"(?:lib)?([a-z][a-z0-9_]{1,60}?)_(pytorch|torch)_(\d{1,2}\.\d{1,3}(?:\.\d{1,3})?(?:\.post\d{1,4})?"
                              r"(?:\+[a-z0-9.]{1,20})?)\.(?:so|dylib|dll)\b")
_ABSENT_WORDS = ("cannot find", "could not find", "can't find", "no such file", "not found", "does not exist",
                 "filenotfounderror", "cannot load", "could not load")
_SITE_PACKAGE = re.compile(r"(?:site|dist)-packages[/\\]([a-z0-9_]{1,60})[/\\]")


def framework_named_libraries(lines: list[str], lowers: list[str]) -> list[NotFound]:
    """A package's library named for one framework release (compat/libraries.toml [framework_named_library]) said
    absent: the package installed has no build for the framework release installed."""
    row = load("libraries").get("framework_named_library")
    if not row:
        return []
    for index in range(len(lowers) - 1, max(-1, len(lowers) - 200), -1):
        lower = lowers[index]
        if "torch_" not in lower or not any(word in lower for word in _ABSENT_WORDS):
            continue
        found = _FRAMEWORK_NAMED.search(lower)
        if found is None:
            continue
        site = _SITE_PACKAGE.search(lower)
        package = site.group(1) if site else found.group(1).split("_")[0]
        version = found.group(3)
        fix = (f"{package} ships one library per PyTorch release and has none for torch {version}, the one installed: "
               f"install the {package} build made for torch {version} and its CUDA (the package's install page names "
               f"the index or channel per torch and CUDA release), or install the torch release this {package} was "
               f"built for; install both from one channel or index so the solver keeps them together.")
        return [NotFound(tool=f"{package}'s loader", packages=(f"{package} for torch {version}",), line=index,
                         source=f"compat/libraries.toml [framework_named_library]: {row['source']}", fix=fix)]
    return []


# ------------------------------------------ conda's plan against the CUDA the user asked for (round ten)

_OVERRIDE = re.compile(r"conda_override_cuda=[\"']?(\d{1,2}(?:\.\d{1,2})?)")
_PLANNED_CUDA = re.compile(r"(?:::|\s)(?:cuda-version|cudatoolkit)-(\d{1,2}\.\d{1,2})[.\-]")


def conda_cuda_fallback(lines: list[str], lowers: list[str]) -> list[NotFound]:
    """CONDA_OVERRIDE_CUDA=N given, and conda's plan installs the CUDA of another major (cuda-version-11.8 for N=12):
    the channel has no build of the requested packages for CUDA N (for this Python or platform), and the solver fell
    back to another CUDA's build without a word."""
    window = lowers[-400:]
    asked = next((m for lower in window if "conda_override_cuda" in lower for m in [_OVERRIDE.search(lower)] if m), None)
    if asked is None:
        return []
    for index in range(len(lowers) - 1, max(-1, len(lowers) - 400), -1):
        planned = _PLANNED_CUDA.search(lowers[index])
        if planned is None:
            continue
        want, got = asked.group(1), planned.group(1)
        if want.split(".")[0] == got.split(".")[0]:
            return []
        row = load("libraries").get("conda_cuda_fallback", {})
        fix = (f"conda planned CUDA {got} though CONDA_OVERRIDE_CUDA={want} asked for CUDA {want.split('.')[0]}: the "
               f"channel has no CUDA {want.split('.')[0]} build of the requested packages for this Python or platform. "
               f"Ask for the CUDA build explicitly (e.g. `conda install pytorch \"cuda-version={want.split('.')[0]}\"` "
               "on conda-forge) and let conda say what conflicts, or use a Python release for which the channel publishes "
               "that CUDA build (the channel's file list shows each build's Python).")
        return [NotFound(tool="conda", packages=(f"cuda-version {got}", f"CONDA_OVERRIDE_CUDA={want}"), line=index,
                         source=f"compat/libraries.toml [conda_cuda_fallback]: {row.get('source', '')}", fix=fix)]
    return []


# ---------------------------------- a CUDA extension's setup.py fetching its prebuilt wheel (round eleven)

# the wheel a setup.py guessed: a URL ending in a wheel file whose version carries a CUDA build's tag (+cu118torch2.1...);
# only a URL's plain characters, so that the command printed with it is one word to any shell
_GUESSED_WHEEL = re.compile(r"(https?://[a-z0-9._~:/%+=,@-]{1,300}?/(([a-z0-9_]{1,60})-[0-9][a-z0-9_.]{0,40}\+cu(\d{2,3})[a-z0-9_.]{0,60}-cp\d{2,3}"
                            r"-[a-z0-9_]{1,20}-[a-z0-9_]{1,60}\.whl))", re.IGNORECASE)


def prebuilt_wheels(lines: list[str], lowers: list[str]) -> list[NotFound]:
    """A CUDA extension's setup.py that guessed the URL of its prebuilt CUDA wheel (compat/libraries.toml
    [prebuilt_wheel]) and could not download it (a network error after the guess) or found none for this torch, CUDA
    and Python (the fallback's words)."""
    row = load("libraries").get("prebuilt_wheel")
    if not row:
        return []
    for index in range(len(lowers) - 1, max(-1, len(lowers) - 400), -1):
        if row["marker"] not in lowers[index]:
            continue
        guessed = _GUESSED_WHEEL.search(lines[index])
        if guessed is None:
            return []  # no CUDA build's wheel named: no NVIDIA evidence
        url, wheel, package = guessed.group(1), guessed.group(2), guessed.group(3).lower().replace("_", "-")
        after = range(index + 1, min(len(lines), index + 12))
        why = next((" ".join(lines[at].split())[:200] for at in after if any(w in lowers[at] for w in row["network"])), None)
        absent = why is None and any(w in lowers[at] for at in after for w in row["absent"])
        if why is None and not absent:
            return []
        source = f"compat/libraries.toml [prebuilt_wheel]: {row['source']}"
        if why is not None:
            fix = (f"{package}'s setup.py could not download its prebuilt wheel ({why}). Install the same file with pip, "
                   f"which uses your proxy and certificate settings: `pip install {url}` (or download it with a browser "
                   f"or curl and `pip install ./{wheel}`). That wheel is {package} built for this torch, CUDA and Python, so nothing "
                   "is left to build; or retry where the release page is reachable. "
                   "Building from source instead needs a CUDA toolkit (nvcc) of torch's CUDA major and takes long.")
            return [NotFound(tool=f"{package}'s setup.py (download)", packages=(wheel,), line=index, source=source,
                             fix=fix)]
        fix = (f"{package} publishes no prebuilt wheel {wheel} for this torch, CUDA, C++ ABI and Python, so its setup.py "
               "builds from source (with nvcc, a long build). Install a torch and Python for which the package's release "
               f"page lists a wheel (the wheel names say +cu<NN>torch<X.Y>, cp<NN>), or a {package} release that has one "
               "for yours; or let it build, with a CUDA toolkit of torch's CUDA major on PATH.")
        return [NotFound(tool=f"{package}'s setup.py (no wheel)", packages=(wheel,), line=index, source=source, fix=fix)]
    return []


# ------------------------------------------- two requirements of one NVIDIA package that no release meets (round eleven)

# a requirement of a GPU stack's package as resolvers print it: "nvidia-cublas>=13.3.0.5", "nvidia-cublas==13.1.x",
# "nvidia-cudnn-cu12 ==9.1.0.70", "cuda-toolkit<13"
_PIN_SPEC = re.compile(r"(?<![\w.-])([a-z][a-z0-9_.\-]{2,60}?)\s?(==|>=|<=|~=|<|>)\s?(\d{1,4}(?:\.\d{1,6}){0,4})((?:\.(?:x|\*))?)(?![\w.])")
_REQUIRE_WORDS = ("require", "requested", "depends on", "depend on")
Bound = tuple[tuple[int, ...], bool]  # a version and whether it is included


def _interval(operator: str, version: tuple[int, ...], wildcard: bool) -> tuple[Bound | None, Bound | None]:
    """The versions a PEP 440 clause allows, as (lowest, highest); None is unbounded."""
    if operator == "==" and wildcard or operator == "~=":
        upper = version[:-1] + (version[-1] + 1,) if operator == "==" else version[:-2] + (version[-2] + 1,) \
            if len(version) > 1 else (version[0] + 1,)
        return (version, True), (upper, False)
    if operator == "==":
        return (version, True), (version, True)
    if operator in (">=", ">"):
        return (version, operator == ">="), None
    return None, (version, operator == "<=")


def _below(high: Bound | None, low: Bound | None) -> bool:
    """Is every version up to HIGH below every version from LOW (no version in both)?"""
    if high is None or low is None:
        return False
    width = max(len(high[0]), len(low[0]))
    top, bottom = high[0] + (0,) * (width - len(high[0])), low[0] + (0,) * (width - len(low[0]))
    return top < bottom or top == bottom and not (high[1] and low[1])


def pin_clashes(lines: list[str], lowers: list[str]) -> list[Conflict]:
    """Two requirements of one GPU stack's package (compat/libraries.toml [[package]] prefixes) that no release meets
    at once, read from the resolver's own requirement lines ("simpletuner[cuda13] requires nvidia-cublas>=13.3.0.5",
    "torch==2.11.0+cu130 ... require nvidia-cublas==13.1.x"), whatever its header says or whether it was pasted."""
    _, prefixes = _resolver_tables()
    seen: dict[str, tuple[str, tuple[Bound | None, Bound | None], int]] = {}
    for index in range(max(0, len(lowers) - 200), len(lowers)):
        lower = lowers[index]
        if not any(word in lower for word in _REQUIRE_WORDS) or not any(prefix in lower for prefix in prefixes):
            continue
        for match in itertools.islice(_PIN_SPEC.finditer(lower), PER_LINE):
            name = match.group(1)
            if not name.startswith(prefixes):
                continue
            version = tuple(int(part) for part in match.group(3).split("."))
            span = _interval(match.group(2), version, bool(match.group(4)))
            said = " ".join(lines[index].split())[:200]
            if name in seen and seen[name][0] != said:
                first, other, at = seen[name]
                if _below(other[1], span[0]) or _below(span[1], other[0]):
                    row = load("libraries").get("pin_clash", {})
                    return [Conflict(tool="resolver", packages=(name,), pins=(first, said), line=index,
                                     source=row.get("source", ""))]
            seen.setdefault(name, (said, span, index))
    return []


# ------------------------------------------------------------------------------------- installers: a build without CUDA


@functools.cache
def _installed_variant() -> dict[str, Any]:
    return dict(load("libraries").get("installed_variant", {}))


_VARIANT_TOKEN = re.compile(r"[a-z][a-z0-9_.\-]{0,60}(?:==|-)[0-9][0-9a-z_.]{0,30}\+cpu\b|[0-9][0-9.]{0,20}\+cpu\b"
                            r"|[a-z0-9_\-]{0,40}_cpu_0\b|cpuonly|pytorch-mutex-1\.0-cpu|whl/cpu")


def installed_variants(lines: list[str], lowers: list[str], refused: bool) -> list[NotFound]:
    """An installer's own line saying it put in a framework's build without CUDA (compat/libraries.toml
    [installed_variant]: pip's "Successfully installed torch-2.3.0+cpu", uv's "+ torch==2.9.1+cpu", conda's "cpuonly"),
    where the message speaks of NVIDIA's stack or the build refused the GPU (REFUSED) and names no other accelerator."""
    table = _installed_variant()
    if not table:
        return []
    context = any(word in lower for lower in lowers[-400:] for word in table["context"])
    others = [word for word in load("libraries").get("framework_swap", {}).get("other_accelerators", ())
              if "cpu" not in word]
    if not (context or refused) or any(word in lower for lower in lowers[-400:] for word in others):
        return []
    budget = FACT_WINDOW
    for index in range(len(lines) - 1, -1, -1):
        lower = lowers[index]
        budget -= len(lower) + 1
        if budget < 0:
            break
        if not any(marker in lower for marker in table["markers"]) or not any(verb in lower for verb in table["verbs"]):
            continue
        token = _VARIANT_TOKEN.search(lower)
        named = token.group(0).strip() if token else next(marker for marker in table["markers"] if marker in lower)
        if named[:1].isdigit():  # a bare local version: "+cpu" is PyTorch's scheme
            named = f"torch {named}"
        said = "\n".join(lowers[-400:])
        tool = "uv" if any(word in said for word in ("uv pip", "uv add", "uv sync", "torch-backend")) else \
            "conda" if "conda" in said or "cpuonly" in said else "pip"
        return [NotFound(tool=f"{tool} (installed a CPU build)", packages=(named,), line=index, source=table["source"],
                         fix=table["fix"])]
    return []


# ------------------------------------------------------------------------------------- installers: a source build

_SDIST = re.compile(r"([a-z0-9][a-z0-9_.\-]{0,80}?)-(\d[a-z0-9_.+!]{0,40})\.(?:tar\.gz|zip)\b")


def source_builds(lines: list[str], lowers: list[str]) -> list[NotFound]:
    """pip fell back to a GPU-stack package's source distribution (compat/libraries.toml [source_build]: "Using cached
    cupy-wheel-12.3.0.tar.gz") and a build step failed after it: no wheel fits this Python, platform or CUDA."""
    table = load("libraries").get("source_build")
    if not table:
        return []
    _, prefixes = _resolver_tables()
    failed_at = next((index for index in range(len(lowers) - 1, -1, -1)
                      if any(words in lowers[index] for words in table["failed"])), None)
    if failed_at is None:
        return []
    for index in range(failed_at, max(-1, failed_at - 40), -1):
        lower = lowers[index]
        if not any(words in lower for words in table["fetched"]):
            continue
        sdist = _SDIST.search(lower)
        # a build that names its own cause ("No module named 'torch'" in pip's isolated build environment) is that
        # cause's, not a missing wheel's (build_isolation reads it)
        own_cause = any("no module named" in line for line in lowers[index:])
        if sdist and sdist.group(1).replace("_", "-").startswith(prefixes) and not own_cause \
                and sdist.group(1) not in table.get("sdist_only", ()):
            return [NotFound(tool="pip (no wheel: built from source)", packages=(sdist.group(0),), line=index,
                             source=table["source"], fix=table["fix"])]
    return []


# ------------------------------------------------------------------------------------- a library of another system

_LINUX_LIBRARY_ON_WINDOWS = re.compile(r"(?<![a-z0-9])[a-z]:\\{1,2}(?:[^\s\\'\"]{1,120}\\{1,2}){0,30}(lib[a-z0-9_.+\-]{1,80}\.so(?:\.\d{1,4}){0,3})\b")
_WINDOWS_LIBRARY_ON_LINUX = re.compile(r"(?:^|[\s'\"(=])/(?:[^\s/'\"]{1,120}/){1,30}([a-z0-9_.+\-]{1,80}\.dll)\b")


def foreign_binaries(lines: list[str], lowers: list[str]) -> list[NotFound]:
    """A GPU library built for another operating system loaded from this one's folders (compat/libraries.toml
    [foreign_binary]): "Loading binary C:\\...\\bitsandbytes\\libbitsandbytes_cuda121.so"."""
    table = load("libraries").get("foreign_binary")
    if not table:
        return []
    budget = FACT_WINDOW
    for index in range(len(lines) - 1, -1, -1):
        lower = lowers[index]
        budget -= len(lower) + 1
        if budget < 0:
            break
        if ".so" not in lower and ".dll" not in lower:
            continue
        found = _LINUX_LIBRARY_ON_WINDOWS.search(lower) or _WINDOWS_LIBRARY_ON_LINUX.search(lower)
        if found and any(word in found.group(1) for word in table["gpu_words"]):
            return [NotFound(tool="the package's loader (a library of another system)", packages=(found.group(1),),
                             line=index, source=table["source"], fix=table["fix"])]
    return []
