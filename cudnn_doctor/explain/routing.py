"""Which layer of the stack a recognised message's cause is in, where the message names several.

A message often names the layer that reports an error and, inside it, the layer that caused it: a framework wraps
the toolkit's error, cuDNN reports the driver library it could not open. The principles that pick the cause's layer
live here, one function each, and the catalog's and the facts' answers pass through them:

- the innermost failure decides: where a loader line says library A could not be loaded because library B is
  missing ("Could not load library A. Error: B: cannot open shared object file"), B's part of the stack is the
  cause, and the answer is B's finding (classify.library_code), whatever A's catalog entry names;
- the framework's own words outrank a general phrase: where all the facts show is a phrase that names no library,
  status or version ("Unable to load CUDA"), the catalog's entry of the framework that printed the message (its
  build against the CUDA it finds) comes first, the phrase after it;
- the memory that ran out outranks the library that reports it: cuDNN's handle failing (CD315) in a message that
  says the device's memory ran out (CUDA_ERROR_OUT_OF_MEMORY, CUDNN_STATUS_ALLOC_FAILED: CD109) is the memory's;
- a build that holds no code for the GPU explains the GPU work that fails under it: where a framework's banner names
  the CUDA its build was made with and that CUDA cannot hold code for the GPU (classify's answer of kind "build",
  CD404), the statuses of kernels and libraries that failed after it (CUDNN_STATUS_EXECUTION_FAILED, CD316) follow it;
- the installer's action before the build's refusal: where an installer's own line shows it put in a framework's
  build without CUDA (classify's CD520 of kind "installed": "Successfully installed torch-2.3.0+cpu") and the message
  shows that build refusing the GPU (CD406, "Torch not compiled with CUDA enabled"), both are named and the
  installer's comes first: reinstalling from the CUDA index is what the user does first, the refusal only follows;
- what failed inside a wrapper decides: a catalog entry marked `wrapper` (compat/errors.toml: a message that only
  says a plugin or an engine failed to start, the lines under it naming why) yields to the status, library or event
  those lines name (JAX's CUDA plugin failing on cuInit's CUDA_ERROR_NO_DEVICE is the device's, CD102).
"""

from __future__ import annotations

from typing import Any

from cudnn_doctor.explain.catalog import Match
from cudnn_doctor.explain.classify import Cause, library_code
from cudnn_doctor.explain.facts import Facts, Library


def innermost_library(outer: str, matched: str, facts: Facts) -> Library | None:
    """The failed library that MATCHED (a catalog entry's text about library OUTER) names after OUTER: the one whose
    absence made OUTER fail. None where the text names no other failed library of the GPU stack."""
    lower = matched.lower()
    start = lower.find(outer.lower())
    if not outer or start < 0:
        return None
    after = start + len(outer)
    inner: tuple[int, Library] | None = None
    for library in facts.libraries:
        if not library.failure or not library.gpu or library.file.lower() == outer.lower():
            continue
        at = lower.find(library.file.lower(), after)
        if at >= 0 and (inner is None or at > inner[0]):
            inner = (at, library)
    return inner[1] if inner else None


def cause_code(code: str, values: dict[str, str], matched: str, facts: Facts) -> str:
    """CODE, a catalog entry's finding for MATCHED, or the finding of the layer that caused it."""
    inner = innermost_library(values.get("library", ""), matched, facts)
    if inner is None or inner.part == "framework":
        return code
    return library_code(inner)


def framework_words_first(causes: list[Cause], summaries: list[Match], facts: Facts) -> bool:
    """Do the catalog's words of the framework that printed the message outrank what the facts show? Where the
    facts are only general phrases ("Unable to load CUDA", "CUDA wasn't able to be loaded": no library, status or
    version named), the framework that reports them knows its own build: its entry names the cause's layer."""
    if not causes or not summaries or any(cause.kind != "phrase" for cause in causes):
        return False
    return any(summary.framework in facts.frameworks for summary in summaries)


# the findings whose failure the device's memory running out explains: cuDNN could not create its handle or
# initialise (codes.py's CD315: "almost always the GPU had too little free memory at that moment"). An algorithm
# search that asks for too large a workspace (CD316) is cuDNN's own, and stays first.
MEMORY_EXPLAINS = ("CD315",)
OUT_OF_MEMORY = "CD109"


def memory_first(matches: list[dict[str, Any]]) -> None:
    """Where the message says the GPU's memory ran out (an out-of-memory status or phrase read from it: CD109) and
    the first answer is a library's failure that running out of memory explains (cuDNN's handle), the memory's
    answer goes first: the library only reports it."""
    if not matches or matches[0]["code"] not in MEMORY_EXPLAINS:
        return
    memory = next((index for index, match in enumerate(matches) if match["code"] == OUT_OF_MEMORY), None)
    if memory is not None:
        matches.insert(0, matches.pop(memory))


# the answers of facts that name what failed (a host compiler nvcc refused, under CMake's summary of its failed test: e26)
INNER_KINDS = ("status-", "library-", "event-", "symbol-", "host-compiler-")


def inner_first(matches: list[dict[str, Any]], wrappers: frozenset[str]) -> None:
    """Where the first answer is a wrapper's (an entry of WRAPPERS: "the plugin failed to initialise") and the
    message names what failed inside it (a status, a library, an event with its own finding), that answer goes
    first: the wrapper only reports it."""
    if not matches or matches[0].get("id") not in wrappers:
        return
    inner = next((index for index, match in enumerate(matches)
                  if str(match.get("id", "")).startswith(INNER_KINDS)), None)
    if inner is not None:
        matches.insert(0, matches.pop(inner))


BUILD_ANSWER = "build-cd404"  # classify's CD404 of kind "build": the banner's CUDA cannot hold code for the GPU


def build_first(matches: list[dict[str, Any]]) -> None:
    """Where the message's banner shows a build whose CUDA holds no code for the GPU, that answer goes before the
    statuses of the GPU work that failed under it (answers read from a status: ids "status-..."): the kernels failed
    because the build has none for this GPU."""
    build = next((index for index, match in enumerate(matches) if match.get("id") == BUILD_ANSWER), None)
    if build is None or build == 0:
        return
    if all(str(match.get("id", "")).startswith("status-") for match in matches[:build]):
        matches.insert(0, matches.pop(build))


INSTALLED_ANSWER = "installed-cd520"  # classify's CD520 of kind "installed": an installer put in a build without CUDA
REFUSAL = "CD406"


def installer_first(matches: list[dict[str, Any]]) -> None:
    """Where an installer's own line shows it put in a build without CUDA, that answer goes before the build's refusal
    of the GPU (CD406): the install is what the user acts on first."""
    installed = next((index for index, match in enumerate(matches) if match.get("id") == INSTALLED_ANSWER), None)
    refusal = next((index for index, match in enumerate(matches) if match.get("code") == REFUSAL), None)
    if installed is not None and refusal is not None and refusal < installed:
        matches.insert(refusal, matches.pop(installed))
