"""One chain, one error (issue 45, round twenty): where the loader refused a cuDNN file and what followed from the
refusal was judged too (cuDNN took another file under another of its names, another release answered its version, the
engines were missing from the folder of the copy it took), the refusal is the error and the rest say they follow
from it; a refusal nothing followed from is a warning (cuDNN went on). Pure: the report's process view and the
findings the other rules made."""

from __future__ import annotations

import os
import re
from dataclasses import replace

from cudnn_doctor.codes import finding
from cudnn_doctor.knowledge import loader_words
from cudnn_doctor.model import Finding, LoadedCudnn, Report
from cudnn_doctor.versions import version_tuple

# what a cuDNN copy's findings say of it, which a refusal of one of its files can lead to
CHAIN_CODES = ("CD303", "CD304", "CD305", "CD307", "CD308", "CD319", "CD321", "CD408")
# of those, the ones about the copy's release: they follow from the refusal only where another release came in by it
# (the copy answers a release its own sub-libraries are not of); a copy wholly of another release is a cause of its own
RELEASE_CODES = ("CD303", "CD305", "CD321", "CD408")
FOLLOWS = "follows"  # a finding's value: "CODE FILE" of the refusal it follows from


def first_refusal(report: Report, findings: list[Finding]) -> list[Finding]:
    """FINDINGS with each chain's refusal as its one error: for every cuDNN copy a program loads whose loading met a
    file the loader refused as no library for this machine (its words: compat/libraries.toml [[failure]] broken or
    wrong-arch), that refusal is a finding (CD308, seen), an error where a finding of the same copy was one, and
    the copy's other findings follow from it (warnings that say so, treated by the refusal's plan step)."""
    view = report.process
    if view is None:
        return findings
    out = list(findings)
    done: set[str] = set()
    for loaded in view.cudnn:
        refusal = _refusal(loaded)
        if refusal is None or refusal[0] in done:
            continue
        file, words = refusal
        done.add(file)
        at = next((i for i, f in enumerate(out) if f.code == "CD308" and file in files_of(f)), None)
        # another file the loader refused (CD308) is a chain of its own, not a consequence of this one
        mixed = _another_release_came_in(loaded)
        followers = [i for i, f in enumerate(out) if i != at and f.code in CHAIN_CODES and f.code != "CD308"
                     and (mixed or f.code not in RELEASE_CODES) and _of_copy(f, loaded) and not f.values.get(FOLLOWS)]
        # a step that failed on the refusal is an error already; one that went on is as grave as what followed
        error = (at is not None and out[at].severity == "error") or any(out[i].severity == "error" for i in followers)
        root = out[at] if at is not None else _root(loaded, file, words)
        root = replace(root, severity="error" if error else "warning", evidence="seen", proof=root.proof or words)
        if not error:
            root = replace(root, detail=root.detail + " cuDNN went on with another file of that name, and nothing "
                                                      "that follows from the refusal was seen failing.")
        if at is None:
            out.append(root)
        else:
            out[at] = root
        for i in followers:
            out[i] = _following(out[i], file)
    return out


def _refusal(loaded: LoadedCudnn) -> tuple[str, str] | None:
    """The first file the loader refused loading this copy, as no library for this machine, and its words: one it
    found first under a sub-library's name before cuDNN took another, or one a sub-library's refusal names as its
    own dependency's."""
    for sub in loaded.sublibraries:
        if sub.refused_first and sub.refused_first_file and \
                loader_words.failure_kind(sub.refused_first) in loader_words.NOT_A_LIBRARY:
            return sub.refused_first_file, sub.refused_first
    for sub in loaded.sublibraries:
        said = sub.seen or ""
        if not (sub.problem or "").startswith("not loadable: "):
            continue
        # each file the words name, with the words after it (a lookahead: one file's words hold the next file)
        for named in re.finditer(r"(/[^\s:]*libcudnn[^\s:/]*\.so[^\s:/]*)(?=: ([^;()]+))", said):
            if named.group(1) != sub.path and \
                    loader_words.failure_kind(named.group(2)) in loader_words.NOT_A_LIBRARY:
                return named.group(1), said
    return None


def _another_release_came_in(loaded: LoadedCudnn) -> bool:
    """Whether the copy answers a release that a sub-library of its own is not of (cuDNN went on with another
    release's file after the refusal), both releases known."""
    found = (version_tuple(loaded.version or "") or ())[:3]
    return bool(found) and any(sub.version and (version_tuple(sub.version) or ())[:3] != found
                               for sub in loaded.sublibraries)


def _root(loaded: LoadedCudnn, file: str, words: str) -> Finding:
    folder = os.path.dirname(loaded.library)
    return finding("CD308", subject=loaded.library, library=file, arch="this machine", error=words,
                   version_hint=(loaded.version or "9").split(".")[0], sublibrary_file=file, evidence="seen",
                   proof=words, version=loaded.version or "unknown", path=folder, folder=folder, via=loaded.via,
                   loaded_library=loaded.library)


def files_of(made: Finding) -> set[str]:
    return {str(value) for value in (made.subject, made.values.get("library"), made.values.get("sublibrary_file"))
            if value}


def _of_copy(made: Finding, loaded: LoadedCudnn) -> bool:
    """Whether MADE is about the copy LOADED (its front library, as the finding names it)."""
    copy = {loaded.library, loaded.real_library or loaded.library}
    return bool(copy & {str(made.subject), str(made.values.get("loaded_library") or ""),
                        str(made.values.get("library") or "")})


def _following(made: Finding, file: str, code: str = "CD308", how: str = "the loader's refusal of") -> Finding:
    return replace(made, severity="warning" if made.severity == "error" else made.severity,
                   detail=f"Follows from {how} {file} ({code}): {made.detail}",
                   values={**made.values, FOLLOWS: f"{code} {file}"})


# what a cuDNN sub-library preloaded into every program can lead to: its own copy's files judged, the copy each
# framework loads answering or mixing its release (a preload is loaded before anything: ld.so(8))
PRELOAD_CODES = ("CD304", "CD305", "CD307", "CD319", "CD321", "CD408")


def first_preload(report: Report, findings: list[Finding]) -> list[Finding]:
    """FINDINGS with each cuDNN sub-library preloaded into every program (LD_PRELOAD, CD317: a rule, the framework
    needs another release) as the one error of what it leads to: the findings that name the preloaded file (its
    copy's missing files, the sub-library of another release every copy then gets) or the release it brought in
    (the framework's refusal of that release) follow from it (warnings that say so, treated by its plan step, which
    takes the entry out of LD_PRELOAD). Round fifteen's and seventeen's GPU sets (the system's 9.14 adv or graph
    library preloaded beside torch's 9.19): CD305 and CD408 were errors beside CD317, and the plan's step for CD305
    reinstalled a wheel that was whole."""
    view = report.process
    if view is None or not view.preloaded_cudnn_parts:
        return findings
    out = list(findings)
    for entry, folder, _ in view.preloaded_cudnn_parts:
        root = next((f for f in out if f.code == "CD317" and f.subject == entry and f.severity == "error"), None)
        if root is None:
            continue
        stem = os.path.basename(entry).split(".so")[0] + ".so"
        named = tuple(dict.fromkeys((os.path.join(folder, stem), os.path.join(os.path.dirname(entry), stem), entry)))
        release = str(root.values.get("version") or "")
        for i, f in enumerate(out):
            if f is root or f.code not in PRELOAD_CODES or f.values.get(FOLLOWS):
                continue
            said = " ".join(str(x) for x in (f.subject, f.detail, *f.values.values()))
            brought = f.code in ("CD321", "CD408") and release and _names_release(str(f.values.get("found", "")),
                                                                                  release)
            if any(name in said for name in named) or brought:
                out[i] = _following(f, entry, "CD317", "LD_PRELOAD's")
    return out


def _names_release(text: str, release: str) -> bool:
    """Whether TEXT names the cuDNN release RELEASE (its first three numbers) as a word of its own."""
    wanted = ".".join(release.split(".")[:3])
    return re.search(r"(?<![\d.])" + re.escape(wanted) + r"(?![\d])", text) is not None
