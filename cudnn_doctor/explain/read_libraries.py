"""Library file names in a message (libcudnn_cnn_infer.so.8, cudnn64_9.dll, cublasLt64_12.dll), how loading each
failed, the product names that stand for them, and the undefined symbols a loader names with their owner."""

from __future__ import annotations

import functools
import itertools
import re
from typing import Any

from cudnn_doctor.explain.facts import Library, Symbol
from cudnn_doctor.explain.message_text import PER_LINE
from cudnn_doctor.knowledge.data import load
from cudnn_doctor.knowledge.loader_words import failure_texts

TOKEN = re.compile(r"[A-Za-z0-9_.+\-]{1,300}")
_DLL_NAME = re.compile(r"([a-z][a-z0-9_+\-]{0,80}?)(?:64)?((?:_[0-9][0-9.]{0,12}){0,3})")
# the loader's "undefined symbol: X", Windows' "procedure entry point X", and GNU ld's "undefined reference to `X'" at link time
# a loader's words for a symbol it could not find; "symbol lookup for X failed" is a program's own dlsym check (Ollama's
# discover/gpu_info_*.c: 'symbol lookup for %s failed: %s'), 'Function "X" not found' a binding's (Numba's driver
# wrapper, numba/cuda/cudadrv/driver.py: 'Function "%s" not found'; read only on a line that says "not found")
# (the loader's colon may touch the name: "undefined symbol:_ZN5torch8autograd...")
_SYMBOL = re.compile(r"(?i)(?:undefined symbol:(?=[A-Za-z_?@*])|(?:undefined symbol:?|procedure entry point|undefined reference to"
                     r"|symbol lookup for|function(?=\s{1,3}[`'\"\u2018]?\w{1,200}[`'\"\u2019]?\s{1,3}not found))\s{1,3})"
                     r"[`'\"\u2018]?"
                     # (a demangled name keeps its namespaces: "c10::MessageLogger::stream[abi:cxx11]()")
                     # (a mangled name pasted into Markdown loses its underscores to emphasis: "*ZNK3c1017Symbolic...")
                     r"((?:\*(?=Z[NK]{0,2}\d))?[A-Za-z_?@][A-Za-z0-9_@?$]{0,200}(?:::[A-Za-z_~][A-Za-z0-9_]{0,120}){0,8})")

# ----------------------------------------------------------------------------------------------- libraries


@functools.cache
def _library_table() -> tuple[dict[str, dict[str, Any]], list[tuple[str, dict[str, Any]]]]:
    exact: dict[str, dict[str, Any]] = {}
    prefixes: list[tuple[str, dict[str, Any]]] = []
    for row in load("libraries").get("library", []):
        if row["name"].endswith("*"):
            prefixes.append((row["name"][:-1], row))
        else:
            exact[row["name"]] = row
    return exact, prefixes


@functools.cache
def _quoted_texts() -> tuple[str, ...]:
    """compat/libraries.toml [[failure]] rows whose loader names a library bare, in quotes (`quoted = true`)."""
    return tuple(row["text"] for row in load("libraries").get("failure", []) if row.get("quoted"))


def parse_library(token: str) -> tuple[dict[str, Any], str, str | None] | None:
    """(row, file, version digits from the name) for a library file name, or None for any other token."""
    file = token.strip(".:-+'\"")
    lower = file.lower()
    version: str | None = None
    if lower.endswith(".dll"):
        match = _DLL_NAME.fullmatch(lower[:-4])
        if not match:
            return None
        base, suffix = match.group(1), match.group(2)
        version = suffix.lstrip("_").split("_")[0] if suffix else None
    else:
        for extension in (".so", ".dylib"):
            at = lower.find(extension)
            if at > 0 and (len(lower) == at + len(extension) or lower[at + len(extension)] == "."):
                base = lower[:at]
                rest = lower[at + len(extension):].lstrip(".")
                version = rest or None
                break
        else:
            # a bare name, as Java prints it: "no jnicudnn in java.library.path"; on Windows System.loadLibrary's name is
            # the DLL's without ".dll" ("no cudart64_110 in java.library.path"): its version read as the DLL's
            bare = _DLL_NAME.fullmatch(lower)
            if bare and bare.group(2):
                base, version = bare.group(1), bare.group(2).lstrip("_").split("_")[0]
            else:
                base = lower
        base = base.removeprefix("lib")
    if len(base) > 9 and base[-9] == "-" and all(c in "0123456789abcdef" for c in base[-8:]):
        base = base[:-9]  # a wheel's bundled copy: libcudart-6d56b25a.so.12
    row = _lookup(base)
    if row is None:
        return None
    if version and not re.fullmatch(r"\d{1,4}(?:\.\d{1,4}){0,3}", version):
        version = None
    return row, file, version


def _lookup(base: str) -> dict[str, Any] | None:
    exact, prefixes = _library_table()
    for candidate in (base, base.removeprefix("jni")):
        if candidate in exact:
            return exact[candidate]
    for prefix, row in prefixes:
        if base.startswith(prefix):
            return row
    return None


def _majors(row: dict[str, Any], version: str | None, dll: bool) -> dict[str, str | None]:
    majors: dict[str, str | None] = {"cuda_major": None, "cudnn_major": None, "cuda_version": None}
    if not version:
        return majors
    first = version.split(".")[0]
    if row["major"] == "cuda":
        if dll and "." not in version and len(first) >= 3:  # cudart64_110.dll, nvrtc64_112_0.dll
            majors["cuda_version"] = f"{first[:-1]}.{first[-1]}"
            majors["cuda_major"] = first[:-1]
        elif len(first) <= 2:
            majors["cuda_major"] = first
            majors["cuda_version"] = version if "." in version else None
    elif row["major"] == "cudnn" and len(first) <= 2:
        majors["cudnn_major"] = first
    elif row["major"] == "own":
        majors["cuda_major"] = row.get("cuda_by_major", {}).get(first)
    return majors


# a loader's search pattern in place of the file's version, read as the library it searches for: NVIDIA/cuda-python's
# cuda_pathfinder (find_nvidia_dynamic_lib: DynamicLibNotFoundError 'Failure finding "{lib_searched_for}"', the
# searched name "nvJitLink*.dll" on Windows, used by numba-cuda and cuda.core), a "cublas64_*.dll" glob
_GLOB = re.compile(r"([A-Za-z0-9])_?\*(?=\.(?:so|dll|dylib)\b)")


def libraries(index: int, line: str, lower: str, lowers: list[str]) -> list[Library]:
    if "*" in line:
        line = _GLOB.sub(r"\1", line)
        lower = line.lower()
    java = "java.library.path" in lower
    # loaders that name a library by its bare name in quotes (Rust's cudarc: 'Unable to dynamically load the "cudnn"
    # shared library'): only a quoted name counts there
    quoted = any(text in lower for text in _quoted_texts())
    linker = "cannot find -l" in lower  # the linker names a library by its flag: "ld: cannot find -lcudart"
    if not java and not quoted and not linker and ".so" not in lower and ".dll" not in lower and ".dylib" not in lower:
        return []
    found: list[tuple[int, dict[str, Any], str, str | None]] = []
    for token in TOKEN.finditer(line):
        if len(found) >= PER_LINE:
            break
        text = token.group(0)
        low = text.lower()
        # Java names the library it could not find before "java.library.path", then lists that path's folders
        in_quotes = quoted and line[token.start() - 1:token.start()] == '"' and line[token.end():token.end() + 1] == '"'
        flag = linker and low.startswith("-l") and lower[:token.start()].endswith("cannot find ")
        if ".so" not in low and ".dll" not in low and ".dylib" not in low and not in_quotes and not flag \
                and not (java and token.start() < lower.find("java.library.path")):
            continue
        parsed = parse_library(text[2:] if flag else text)
        if parsed is not None:
            found.append((token.start(), *parsed))
    if not found:
        return []
    if any(text in near for near in lowers[max(0, index - 1):index + 2] for text, _ in outside_texts()):
        return []  # the loader failed for a reason outside the GPU stack (the paging file is too small)
    markers = _markers(lower)[:PER_LINE]
    if not markers and not any(word in lower for word in LOADED_WORDS):
        # "Error loading X" on one line and the loader's words on the next; a line that says its library loaded
        # ("Successfully opened dynamic library libcublas.so.11") borrows no failure from the lines around it
        for near in (index + 1, index - 1):
            if 0 <= near < len(lowers):
                markers = [(-1 if near < index else len(lower) + 1, kind, rank)
                           for _, kind, rank in _markers(lowers[near])][:1]
                if markers:
                    break
    out = []
    for position, row, file, version in found:
        failure = None
        if markers and len(found) == 1:  # one library: the most specific of the loader's words
            failure = min(markers, key=lambda m: m[2])[1]
        elif markers:  # "A: ... B: cannot open ...": each library takes the words nearest to it
            failure = min(markers, key=lambda m: abs(m[0] - position))[1]
        majors = _majors(row, version, file.lower().endswith(".dll") or "64_" in file.lower())
        out.append(Library(file=file, name=row["name"], part=row["part"], component=row["component"], failure=failure,
                           framework=row.get("framework"), finding=row.get("finding"), line=index,
                           source=row["source"], gpu=row.get("gpu", True), refused_finding=row.get("refused_finding"),
                           **majors))
    return out


# a loader's or a program's words for a library that did load (TensorFlow's dso_loader, ONNX Runtime's provider log)
LOADED_WORDS = ("successfully opened", "successfully loaded", "loaded successfully", "opened successfully")


def _markers(lower: str) -> list[tuple[int, str, int]]:
    """(position, kind, rank in the table) of every loader failure text in LOWER; a text inside a longer one
    counts once."""
    out: list[tuple[int, str, int]] = []
    taken: list[tuple[int, int]] = []
    for rank, (text, kind) in enumerate(failure_texts()):
        start = lower.find(text)
        while start >= 0:
            end = start + len(text)
            if not any(s <= start and end <= e for s, e in taken):
                taken.append((start, end))
                out.append((start, kind, rank))
            if len(out) >= PER_LINE:
                return out
            start = lower.find(text, end)
    return out


@functools.cache
def _alias_table() -> tuple[tuple[str, dict[str, Any]], ...]:
    return tuple((alias, row) for row in load("libraries").get("library", []) for alias in row.get("aliases", []))


@functools.cache
def _absent_texts() -> tuple[tuple[str, str], ...]:
    return tuple((row["text"], row["where"]) for row in load("libraries").get("absent", []))


AFTER_WINDOW = 40  # characters after a product name in which the words that say it is missing may start
BEFORE_WINDOW = 24  # characters before it in which they may end


def _word_at(lower: str, start: int, end: int) -> bool:
    """LOWER[start:end] is a whole word: not part of a package, file or identifier (nvidia-cudnn-cu12, libcudnn,
    cudnn_ops, cudnn.h, torch/cudnn)."""
    if lower[max(0, start - 3):start] == "lib":  # libcudnn, libcublas named without a file suffix
        start -= 3
    before = lower[start - 1] if start > 0 else " "
    after = lower[end] if end < len(lower) else " "
    if before.isalnum() or before in "_-/\\." or after.isalnum() or after in "_-/\\":
        return False
    return not (after == "." and end + 1 < len(lower) and lower[end + 1].isalnum())


def products(index: int, lower: str) -> list[Library]:
    """Libraries named by their product name ("The cuSPARSE library was not found", "Could not find cuBLAS",
    "Unable to load cuDNN DSO") with the words that say they are missing."""
    if not any(alias in lower for alias, _ in _alias_table()):
        return []
    if any(word in lower for word in load("libraries").get("installer_words", {}).get("words", ())):
        return []  # an installer's words about a distribution: the product named is a package, not a library
    out: list[Library] = []
    for alias, row in _alias_table():
        start = lower.find(alias)
        while start >= 0 and len(out) < PER_LINE:
            end = start + len(alias)
            if _word_at(lower, start, end) and _absent_near(lower, start, end):
                out.append(Library(file=alias if alias != "cuda runtime" else "CUDA runtime", name=row["name"],
                                   part=row["part"], component=row["component"], failure="missing",
                                   framework=row.get("framework"), finding=row.get("finding"), line=index,
                                   source=row["source"], gpu=row.get("gpu", True)))
                break
            start = lower.find(alias, end)
    return out


def _absent_near(lower: str, start: int, end: int) -> bool:
    after = lower[end:end + AFTER_WINDOW + 30]
    before = lower[max(0, start - BEFORE_WINDOW - 30):start]
    for text, where in _absent_texts():
        if where == "after":
            at = after.find(text)
            if 0 <= at <= AFTER_WINDOW and not any(stop in after[:at] for stop in STOPS):
                return True
        else:
            at = before.rfind(text)
            if at >= 0 and len(before) - (at + len(text)) <= BEFORE_WINDOW \
                    and not any(stop in before[at + len(text):] for stop in STOPS):
                return True
    return False


STOPS = (". ", ": ", "; ", ", ", "(")  # a clause ends: the words beyond it are about something else


@functools.cache
def _symbol_table() -> tuple[dict[str, Any], ...]:
    rows = load("libraries").get("symbol", [])
    return tuple(sorted(rows, key=lambda row: -len(row["prefix"])))  # the most specific prefix first


@functools.cache
def _lookup_words() -> tuple[tuple[str, ...], re.Pattern[str] | None]:
    """compat/libraries.toml [[symbol_lookup]]: a program's own words for a function its dlsym did not find, and the
    pattern that reads the symbol after them."""
    texts = tuple(row["text"] for row in load("libraries").get("symbol_lookup", []))
    if not texts:
        return (), None
    words = "|".join(re.escape(text).replace(r"\ ", r"\s{1,3}") for text in texts)
    return texts, re.compile(rf"(?i:{words})\s{{1,3}}[`'\"\u2018]?([A-Za-z_][A-Za-z0-9_]{{1,200}})")


def looked_up(index: int, line: str, lower: str) -> list[Symbol]:
    """A function a program looked up by name in a library it loads at run time and did not find, in the program's
    own words ("Invalid handle. Cannot load symbol cublasLtCreate", "Unable to find symbol cudnnBackendCreateDescriptor"),
    where the symbol is a GPU library's ([[symbol]]): the library loaded is not the release the program needs."""
    texts, pattern = _lookup_words()
    if pattern is None or not any(text in lower for text in texts):
        return []
    out = []
    for match in itertools.islice(pattern.finditer(line), PER_LINE):
        row = _symbol_owner(match.group(1))
        if row is not None:
            out.append(Symbol(name=match.group(1), owner=row["owner"], finding=row["finding"], line=index,
                              source=f"{row['source']}; the program's lookup words: compat/libraries.toml [[symbol_lookup]]"))
    return out


def symbols(index: int, line: str, lower: str, lines: list[str] | tuple[str, ...] = ()) -> list[Symbol]:
    found = looked_up(index, line, lower)  # a program's own lookup words; the loader's own, read below, come first
    if "undefined symbol" not in lower and "entry point" not in lower and "undefined reference" not in lower \
            and "symbol lookup for" not in lower and not lower.rstrip().endswith("undefined") \
            and not ("function" in lower and "not found" in lower):
        return found
    text = line
    if _SYMBOL.search(line) is None and lines:  # "...so: undefined" / "symbol:" / "_ZN2at..." on lines of their own
        text = " ".join(part.strip() for part in lines[index:index + 3])
    out = []
    for match in itertools.islice(_SYMBOL.finditer(text), PER_LINE):
        name = match.group(1)
        row = _symbol_owner(name)
        if row is not None:
            out.append(Symbol(name=name, owner=row["owner"], finding=row["finding"], line=index, source=row["source"]))
    return out or found


def _symbol_owner(name: str) -> dict[str, Any] | None:
    """The [[symbol]] row whose namespace NAME belongs to: by its prefix (_ZN2at...), or, for a function of
    the extension's own that takes a framework's type (_Z24silu_and_mulRN2at6TensorE), by that namespace
    nested in its mangled parameters."""
    if name.startswith("*Z"):  # Markdown's emphasis took the mangled name's underscores: "*ZNK3c10..." is "_ZNK3c10..."
        name = "_" + name[1:]
    if "::" in name:  # demangled (c++filt's, or the loader's own on some systems): its namespace, mangled, is the prefix
        namespace = name.split("::", 1)[0]
        name = f"_ZN{len(namespace)}{namespace}{name.split('::', 2)[1]}"
    for row in _symbol_table():
        prefix = row["prefix"]
        if name.startswith(prefix) and (not row.get("upper") or name[len(prefix):len(prefix) + 1].isupper()):
            return row
    if name.startswith("_Z"):
        for row in _symbol_table():
            prefix = row["prefix"]
            if prefix.startswith("_ZN") and len(prefix) > 4 and prefix[2:] in name[3:]:
                return row
    return None


@functools.cache
def outside_texts() -> tuple[tuple[str, str], ...]:
    """(text, why) of compat/errors.toml [[outside]]: words that put a loader's failure outside the GPU stack."""
    return tuple((row["text"], row["why"]) for row in load("errors").get("outside", []))
