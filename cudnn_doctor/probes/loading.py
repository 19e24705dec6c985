"""cuDNN as each framework really loads it here, and as any program asking the loader by name gets it.

Not a model of the loader: for each installed framework with a [[loading]] row of compat/process_env.toml, a child
with the user's own environment runs the framework's own loading code from its installed files (torch's
_load_global_deps, JAX's _load_nvidia_libraries), opens the front library as the framework's libraries then find
it, lets cuDNN's version checks load each sub-library and opens the engines; one more child does the same for a
program that asks the loader by name ("ld.so"). Each child's steps come back as they happen (_load_child.py), so a
child that dies on a truncated library still says which one. Started beside the other probes; never judges.
"""

from __future__ import annotations

import dataclasses
import glob
import os
from typing import Any

from cudnn_doctor.child import ChildBatch, ChildRequest, deadline_in
from cudnn_doctor.knowledge.data import load
from cudnn_doctor.model import Framework, LoadStep, ObservedLoad
from cudnn_doctor.versions import ascii_digits, decode_cudnn

CHILD = os.path.join(os.path.dirname(os.path.dirname(os.path.realpath(__file__))), "_load_child.py")
MARK = b"\x1eCDL\t"
LOADER = "ld.so"


def _row_for(framework: Framework, site: str) -> dict[str, Any] | None:
    """The first [[loading]] row of FRAMEWORK whose file this install has, defining every function the row runs."""
    from cudnn_doctor.user_files import read_text_or_empty

    for row in load("process_env").get("loading", []):
        if row["framework"] != framework.name:
            continue
        for path in sorted(glob.glob(os.path.join(glob.escape(site), row["file"]))):
            text = read_text_or_empty(path, 4 << 20)
            if all(f"def {name}(" in text for name in row["functions"]):
                return {**row, "file": os.path.relpath(path, site)}
    return None


def _version_row(major: int) -> dict[str, Any] | None:
    return next((r for r in load("process_env").get("version_check", []) if int(r["major"]) == major), None)


def _major(framework: Framework) -> int:
    for text in (framework.cudnn_used, framework.cudnn_expected):
        name = os.path.basename(text or "")
        if ".so." in name:
            digits = name.split(".so.", 1)[1].split(".")[0]
            if ascii_digits(digits):
                return int(digits)
        if text and ascii_digits(text[:1]):
            return int(text.split(".")[0])
    return 9


class LoadChildren:
    """One child per framework that loads cuDNN with code of its own, and one for the loader by name, all started
    now; answers read later."""

    def __init__(self, frameworks: list[Framework], env: dict[str, str], timeout: float, loader_too: bool) -> None:
        from cudnn_doctor.probes.context import interpreter_for

        self.users: list[tuple[str, str | None]] = []
        requests: list[ChildRequest] = []
        majors: set[int] = set()
        for framework in frameworks:
            site = str(framework.details.get("site_packages") or "")
            if not site or framework.details.get("assumed") or framework.details.get("cpu_only"):
                continue
            row = _row_for(framework, site)
            python = interpreter_for(site) if row else None
            version = _version_row(_major(framework))
            if row is None or python is None or version is None:
                continue
            majors.add(int(version["major"]))
            self.users.append((framework.name, f"{row['file']}: {row['call']}"))
            requests.append(self._request(python, framework.name, site, row, version, env, timeout))
        if loader_too:
            from cudnn_doctor.child import python_argv

            for major in sorted(majors or {9}):
                version = _version_row(major)
                if version is not None:
                    self.users.append((LOADER, None))
                    requests.append(ChildRequest(python_argv(CHILD, *self._args(LOADER, "-", None, version)), env,
                                                 timeout, "the loading child", answer_channel=True))
        self.batch = ChildBatch(requests, deadline=deadline_in(timeout), parallel=max(1, len(requests)))

    @staticmethod
    def _args(user: str, site: str, row: dict[str, Any] | None, version: dict[str, Any]) -> tuple[str, ...]:
        major = int(version["major"])
        return (user, site, row["file"] if row else "-", row["call"] if row else "-",
                ",".join(row["functions"]) if row else "-", f"{version['front']}.so.{major}",
                ",".join(version["checks"]), ",".join(f"{name}.so.{major}" for name in version["later"]),
                repr(list(row["args"])) if row else "[]", ",".join(f"{name}.so.{major}" for name in version["loads"]))

    def _request(self, python: str, user: str, site: str, row: dict[str, Any], version: dict[str, Any],
                 env: dict[str, str], timeout: float) -> ChildRequest:
        return ChildRequest((python, "-I", "-S", CHILD, *self._args(user, site, row, version)), env, timeout,
                            f"loading cuDNN as {user} does", answer_channel=True)

    def results(self) -> tuple[ObservedLoad, ...]:
        answers = self.batch.answers()
        return tuple(parse_answer(user, recipe, answer.answer, answer.exit_code, answer.timed_out, answer.error)
                     for (user, recipe), answer in zip(self.users, answers, strict=True))


def _unescape(text: str) -> str:
    out, index = [], 0
    while index < len(text):
        char = text[index]
        if char == "\\" and index + 1 < len(text):
            out.append({"t": "\t", "n": "\n", "\\": "\\"}.get(text[index + 1], text[index + 1]))
            index += 2
            continue
        out.append(char)
        index += 1
    return "".join(out)


def parse_answer(user: str, recipe: str | None, stdout: str | bytes, exit_code: int | None, timed_out: bool,
                 error: str | None) -> ObservedLoad:
    """The child's lines (those behind its mark only: a preloaded library's own output is not an answer) as an
    ObservedLoad; a child that died says in which step."""
    data = stdout if isinstance(stdout, bytes) else stdout.encode("utf-8", "surrogateescape")
    from cudnn_doctor.child import file_names

    lines = [file_names(_unescape(line[len(MARK):].decode("utf-8", "surrogateescape"))) for line in data.split(b"\n")
             if line.startswith(MARK)]
    steps: list[LoadStep] = []
    mapped: list[str] = []
    front = version = None
    pending: tuple[str, str | None] | None = None
    done = False
    skipped = None
    refused: dict[str, tuple[str, str]] = {}  # sub-library -> the file the loader found and would not load, its words
    missing: dict[str, str] = {}  # sub-library -> where the loader looked and found no file of its name
    crashed: dict[str, str] = {}  # sub-library -> the file whose opening killed the forked copy that opened it
    taken: dict[str, str] = {}  # sub-library -> the file the loader takes for it (opened whole in a forked copy)
    for line in lines:
        key, _, value = line.partition("\t")
        if key == "asked":
            name, _, rest = value.partition("\t")
            path, _, words = rest.partition("\t")
            if words.startswith("opening it killed the process") and path != "-":  # mapped, then died: its file
                crashed[name] = path
            elif words == "ok" and path != "-":  # the file the loader takes: where cuDNN's own step fails, that one
                taken[name] = path
            elif words != "ok" and path != "-":
                refused[name] = (path, f"the loader refuses {path}: {words}")
            elif path == "-" and words.startswith("no such file as "):  # where the loader looks, and what is there
                missing[name] = words
        elif key == "mapped":
            mapped.append(value)
            if steps:
                steps[-1].mapped += (value,)
        elif key == "recipe":
            steps.append(LoadStep("recipe", value == "ok", value))
        elif key == "open-error":
            steps.append(LoadStep("open", False, value))
        elif key == "front":
            front = value or None
            steps.append(LoadStep("open", bool(value), "ok" if value else "nothing mapped"))
        elif key == "version":
            version = decode_cudnn(int(value)) if ascii_digits(value) else None
            pending = None
        elif key in ("no-recipe", "not-preloaded"):
            recipe = None  # its own code loads no cuDNN here: what its libraries' RUNPATH finds is the files' to say
            skipped = value
        elif key == "check-start":
            pending = (value, None)
        elif key == "check":
            name, status, said = (value.split("\t") + ["", ""])[:3]
            if said != "not exported":  # a front library without the checks (cuDNN 8's, a fake) says nothing here
                steps.append(LoadStep(name, status == "0", said or f"status {status}", _sublibrary_of(name)))
            pending = None
        elif key == "later-start":
            name, _, target = value.partition("\t")
            pending = (name, target)
        elif key == "later":
            name, _, said = value.partition("\t")
            file = said[len("the loader refuses "):].split(": ", 1)[0] if said.startswith("the loader refuses /") else None
            steps.append(LoadStep(name, said == "ok", said, name, refused=file))
            pending = None
        elif key == "later-died" and pending is not None:  # the grandchild that opened the engines died there
            died_at = f"{value} while loading {pending[0]}"
            steps.append(LoadStep(pending[0], False, died_at, pending[0]))
            pending = None
        elif key == "done":
            done = True
    died = None
    if not done:
        how = "did not finish in time" if timed_out else _how_it_died(exit_code, error)
        if pending is not None:
            library = pending[0] if pending[1] is not None else _sublibrary_of(pending[0])
            died = f"{how} while loading {library}" + (f" ({pending[1]})" if pending[1] else "")
            steps.append(LoadStep(pending[0], False, died, library))
        else:
            died = how
    steps = [_with_loader_words(step, refused, missing, crashed, taken) for step in steps]
    if skipped is not None or not lines:  # its own code loads no cuDNN here, or the child never got as far as a word
        return ObservedLoad(user, None, None, (), tuple(mapped), None, None)
    return ObservedLoad(user, front, version, tuple(steps), tuple(mapped), recipe, died)


def _with_loader_words(step: LoadStep, refused: dict[str, tuple[str, str]], missing: dict[str, str],
                       crashed: dict[str, str], taken: dict[str, str]) -> LoadStep:
    """A failed step whose sub-library's file the loader itself refused, in the loader's words (which name the cause:
    a dependency it cannot find, a C library too old) before cuDNN's status or how the child died; one whose
    sub-library no folder the loader searches holds, with those folders and the files there it never takes for it
    (cuDNN's front library ends the program with SIGABRT where that is its graph library: the cause is the file
    missing, not a file broken); one whose file killed the copy that opened it, with that file; one whose file the
    loader took, with that file."""
    if step.ok:
        return step
    found = refused.get(step.library or "")
    if found:
        return dataclasses.replace(step, said=f"{found[1]} ({step.said})", refused=found[0])
    died_on = crashed.get(step.library or "")
    if died_on:  # the loader mapped it and the process died of it (a cut-short file: SIGBUS): that file, broken
        return dataclasses.replace(step, said=f"{step.said} ({died_on})", refused=died_on)
    nowhere = missing.get(step.library or "")
    if nowhere:
        return dataclasses.replace(step, said=f"{nowhere} ({step.said})")
    loaded = taken.get(step.library or "")  # the loader took this file, and cuDNN's step with it failed: that file
    return dataclasses.replace(step, refused=loaded) if loaded and not step.refused else step


def _how_it_died(exit_code: int | None, error: str | None) -> str:
    import signal

    if exit_code is not None and exit_code < 0:
        try:
            return f"the process was killed by {signal.Signals(-exit_code).name}"
        except ValueError:
            return f"the process was killed by signal {-exit_code}"
    if exit_code is not None and exit_code > 128:
        try:
            return f"the process was killed by {signal.Signals(exit_code - 128).name}"
        except ValueError:
            pass
    return error or f"the process exited with status {exit_code}"


def _sublibrary_of(check: str) -> str | None:
    """cudnnOpsVersionCheck -> libcudnn_ops.so.9, from the [[version_check]] rows; cudnnGetVersion, the front
    library's first call, loads the first of them (cuDNN 9's front forwards every call to libcudnn_graph)."""
    for row in load("process_env").get("version_check", []):
        if check == "cudnnGetVersion" and row["loads"]:
            return f"{row['loads'][0]}.so.{row['major']}"
        if check in row["checks"]:
            return f"{row['loads'][row['checks'].index(check)]}.so.{row['major']}"
    return None
