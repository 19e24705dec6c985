"""What a framework's own Python finds as the framework is imported, asked of it (issue 45): where each package the
framework imports at start is taken from, and the plugins it loads.

- Modules: Python's finder decides which copy of torch, jaxlib, numpy or typing_extensions a program imports: a
  folder or zip file on PYTHONPATH, the user's site (~/.local), a sourceless .pyc, the working folder, all before
  site-packages. Modelling that is guesswork; `importlib.util.find_spec` answers it without importing anything, and
  a copy found anywhere but where the framework was installed is named. A cached .pyc that Python uses without
  checking its source (PEP 552's unchecked hash) but that was compiled from another source is named too:
  `importlib.util.source_hash` says so.
- Plugins: torch 2.5 and later load every entry point of the group "torch.backends" at the end of `import torch`
  (unless TORCH_DEVICE_BACKEND_AUTOLOAD says otherwise) and raise "Failed to load the backend extension" for any that
  does not load. The group, the switch and the failure are rows of compat/python_plugins.toml, each confirmed in the
  installed framework's own file before it is used; Python is asked what the framework will ask
  (`importlib.metadata.entry_points(group=...)`, its own words where it raises) and where each plugin's module is.

The framework's interpreter is started with the user's environment, as a program is (its site code, .pth files and
sitecustomize, runs as in every program), only where something can make a difference (a PYTHONPATH entry that is a
zip file or holds such a package, a user site holding one, a distribution naming a plugin group or with an
entry_points.txt that is not UTF-8, cached bytecode that is not checked); nothing is started otherwise. This module
says what to ask and what the answers mean (FinderQuestion); probes/framework_python.py asks it in the one start of
that Python that every question shares (_python_child.py's `found`)."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from cudnn_doctor.model import Framework
from cudnn_doctor.probes.python_start import user_site

if TYPE_CHECKING:
    from cudnn_doctor.probes.framework_python import PythonAnswer

MAX_METADATA_BYTES = 1 << 20
MAX_DISTRIBUTIONS = 2000


def plugin_rows() -> list[dict[str, object]]:
    from cudnn_doctor.knowledge.data import load

    return list(load("python_plugins").get("group", []))


def _autoload_on(row: dict[str, object], env: dict[str, str]) -> bool:
    """Whether the framework loads the group's plugins with ENV (its switch as it reads it)."""
    variable = str(row.get("switch") or "")
    if not variable or variable not in env:
        return bool(row.get("default_on", True))
    return env[variable] in [str(v) for v in row.get("on_values", [])]  # type: ignore[attr-defined]


def _confirmed(row: dict[str, object], site: str) -> bool:
    """The installed framework's own file (the row's read_by) names the group and the failure: asked, not assumed (a
    torch older than the autoload has neither)."""
    from cudnn_doctor.user_files import UnreadableFile, read_user_file

    try:
        text = read_user_file(os.path.join(site, str(row["read_by"])), 4 << 20)
    except (UnreadableFile, KeyError):
        return False
    return all(str(word).encode() in text for word in (row["group"], *row.get("confirm", [])))  # type: ignore[misc]


def metadata_folders(env: dict[str, str], sites: list[str]) -> list[str]:
    """The folders whose distributions a framework's Python reads: its site-packages, PYTHONPATH's folders and the
    user's site of that Python's version."""
    folders = list(sites) + [entry for entry in env.get("PYTHONPATH", "").split(os.pathsep) if entry]
    folders += [user_site(env, site) for site in sites]
    return [folder for folder in dict.fromkeys(folders) if folder]


def names_plugin_group(folders: list[str], groups: list[str], malformed: bool = False) -> bool:
    """Whether a distribution in FOLDERS names one of GROUPS in its entry_points.txt, or has one that is not UTF-8
    (importlib.metadata then raises for every group). MALFORMED: or one with a line importlib.metadata cannot parse
    (in a section, neither blank, a comment nor `name = value`): Python raises on it for every group a framework
    reads, as it parses every distribution's file (round nine: torch and JAX stopped at import on a TypeError from
    there). One pass over the files; it only says that Python is worth asking."""
    from cudnn_doctor.user_files import UnreadableFile, read_user_file

    if not groups:
        return False
    headers = [re.compile(rb"^[ \t]*\[[ \t]*" + re.escape(group.encode()) + rb"[ \t]*\]", re.MULTILINE)
               for group in groups]
    seen = 0
    for folder in folders:
        try:
            names = [n for n in os.listdir(folder) if n.endswith((".dist-info", ".egg-info"))]
        except (OSError, ValueError):
            continue
        for name in names:
            seen += 1
            if seen > MAX_DISTRIBUTIONS:
                return True  # more than a site holds: let Python itself read them
            try:
                text = read_user_file(os.path.join(folder, name, "entry_points.txt"), MAX_METADATA_BYTES)
            except UnreadableFile:  # none, or one no Python should be sent to (a FIFO would hold it until cut off)
                continue
            try:
                words = text.decode("utf-8")
            except UnicodeDecodeError:
                return True
            if any(header.search(text) for header in headers) or malformed and _unparsable(words):
                return True
    return False


def _unparsable(text: str) -> bool:
    """Whether an entry_points.txt (TEXT) has a line in a section that is neither blank, a comment nor `name = value`."""
    section = False
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith(("#", ";")):
            continue
        if line.startswith("["):
            section = True
        elif section and "=" not in line:
            return True
    return False


def _holds_any(folder: str, modules: tuple[str, ...]) -> bool:
    """Whether FOLDER holds a module or package of one of those names (any form Python imports: a folder, .py, a
    sourceless .pyc, an extension, or a zip file on the path)."""
    try:
        names = os.listdir(folder)[:20000]
    except (OSError, ValueError):
        return False
    return any(name.split(".")[0] in modules for name in names)


def _unchecked_bytecode(site: str, modules: tuple[str, ...]) -> bool:
    """Whether a cached .pyc of one of MODULES in SITE is hash-based and unchecked (PEP 552: Python never compares it
    with its source): the header's flags say it, in 16 bytes."""
    listed: dict[str, list[str]] = {}
    for module in modules:
        for folder, start in ((os.path.join(site, "__pycache__"), f"{module}."),
                              (os.path.join(site, module, "__pycache__"), "__init__.")):
            for cached in _cached_files(folder, start, listed)[:4]:
                try:
                    with open(cached, "rb") as handle:
                        head = handle.read(8)
                except OSError:
                    continue
                flags = int.from_bytes(head[4:8], "little") if len(head) == 8 else 0
                if flags & 1 and not flags & 2:
                    return True
    return False


def _cached_files(folder: str, start: str, listed: dict[str, list[str]]) -> list[str]:
    """The files of FOLDER glob's START*.pyc names (START ends with a dot, which the name's own `.pyc` cannot be), in
    the folder's order: one listing per folder (LISTED), no pattern compiled per module (36 globs, 1.4 ms a check)."""
    if folder not in listed:
        try:
            listed[folder] = os.listdir(folder)
        except (OSError, ValueError):
            listed[folder] = []
    return [os.path.join(folder, name) for name in listed[folder]
            if name.startswith(start) and name.endswith(".pyc") and len(name) >= len(start) + 4]


class FinderQuestion:
    """What the frameworks' Pythons find: asked (probes/framework_python.py) only where something can make a
    difference; plugins() and shadows() read the answers."""

    def __init__(self, frameworks: list[Framework], env: dict[str, str]) -> None:
        from cudnn_doctor.probes.context import interpreter_for
        from cudnn_doctor.probes.process_env import IMPORTED, SHADOWED

        self.asked: list[tuple[str, str, str, list[dict[str, object]], tuple[str, ...]]] = []
        self.pythons: list[str] = []
        # the interpreter runs its site code (.pth files, sitecustomize) as a program's does: asked only where a
        # PYTHONPATH entry is a zip file or holds one of the packages asked about, a user site holds one, bytecode is
        # unchecked or a plugin group is named
        entries = [e for e in env.get("PYTHONPATH", "").split(os.pathsep) if e]
        worth = False
        for framework in frameworks:
            site = str(framework.details.get("site_packages") or "")
            if framework.name not in SHADOWED or not site or framework.details.get("assumed"):
                continue
            python = interpreter_for(site)
            if python is None:
                continue
            rows = [row for row in plugin_rows() if row.get("framework") == framework.name
                    and _autoload_on(row, env) and _confirmed(row, site)]
            modules = (*SHADOWED[framework.name], *IMPORTED.get(framework.name, ()))
            self.asked.append((framework.name, python, site, rows, modules))
            groups = [str(row["group"]) for row in rows]
            mine = user_site(env, site)
            worth = worth or any(entry.endswith(".zip") or _holds_any(entry, modules) for entry in entries) or \
                bool(mine and _holds_any(mine, modules)) or _unchecked_bytecode(site, modules) or \
                names_plugin_group(metadata_folders(env, [site]), groups, malformed=True)
        if not worth:
            self.asked = []
            return
        self._wanted: dict[str, tuple[set[str], set[str]]] = {}
        for _, python, _, rows, modules in self.asked:
            wanted_groups, wanted_names = self._wanted.setdefault(python, (set(), set()))
            wanted_groups.update(str(row["group"]) for row in rows)
            wanted_names.update(modules)
        self.pythons = list(self._wanted)

    def request(self, python: str) -> dict[str, object]:
        """Its part of PYTHON's request: the plugin groups its frameworks load and the modules they import at start."""
        groups, names = self._wanted[python]
        return {"groups": sorted(groups), "modules": sorted(names)}

    def trials(self, answers: Mapping[str, PythonAnswer]) -> list[tuple[str, str]]:
        return []  # what it finds is the answer: nothing is unset to find a cause

    def trial_request(self) -> dict[str, object]:
        return {}

    @staticmethod
    def _said(answers: Mapping[str, PythonAnswer], python: str) -> dict[str, Any]:
        """PYTHON's answer to this question ({} where it did not start: probes/python_start.py names why)."""
        answer = answers.get(python)
        return answer.finder if answer is not None else {}

    def plugins(self, answers: Mapping[str, PythonAnswer]) -> tuple[tuple[str, ...], ...]:
        """(framework, group, plugin or "", its module or "", what Python said, the distribution's folder, the
        variable that turns the group off or "") for each plugin the framework's import will fail on."""
        if not self.asked:
            return ()
        out: list[tuple[str, ...]] = []
        for name, python, _, rows, _ in self.asked:
            groups = self._said(answers, python).get("groups")
            for row in rows:
                group = str(row["group"])
                answer = groups.get(group) if isinstance(groups, dict) else None
                if not isinstance(answer, dict):
                    continue
                switch = str(row.get("switch") or "")
                if answer.get("raised"):
                    out.append((name, group, "", "", str(answer["raised"]), "", switch))
                for entry in _items(answer.get("entries")):
                    if isinstance(entry, dict) and entry.get("missing"):
                        out.append((name, group, str(entry.get("name") or ""), str(entry.get("module") or ""),
                                    str(entry.get("said") or ""), str(entry.get("dist") or ""), switch))
        return tuple(out[:16])

    def shadows(self, answers: Mapping[str, PythonAnswer], env: dict[str, str], cwd: str | None
                ) -> tuple[tuple[str, ...], ...]:
        """(the sys.path entry it comes from, package, framework, how, "seen") for each package the framework imports at
        start that its Python takes from somewhere other than where the framework was installed: how is
        "PYTHONPATH", "user site", "working folder", "sys.path" (a .pth file's folder and the like) or "stale
        bytecode" (an unchecked .pyc compiled from another source: the entry is that file). Where every compiled
        module of that copy is tagged for another Python or platform than this one imports, two more: those tags and
        the interpreter's own suffixes (importlib.machinery.EXTENSION_SUFFIXES), space-separated."""
        if not self.asked:
            return ()
        out: list[tuple[str, ...]] = []
        pythonpath = {os.path.realpath(e) for e in env.get("PYTHONPATH", "").split(os.pathsep) if e}
        for name, python, site, _, modules in self.asked:
            said = self._said(answers, python)
            found = said.get("modules")
            path = [str(p) for p in said.get("path") or []] if isinstance(said.get("path"), list) else []
            if not isinstance(found, dict):
                continue
            home = os.path.realpath(site)
            mine = os.path.realpath(user_site(env, site)) if user_site(env, site) else ""
            for module in modules:
                answer = found.get(module)
                if not isinstance(answer, dict) or answer.get("error"):
                    continue
                if answer.get("stale"):
                    out.append((str(answer["stale"]), module, name, "stale bytecode", "seen"))
                    continue
                places = [str(answer.get("origin") or ""), *[p for p in _items(answer.get("locations")) if isinstance(p, str)]]
                places = [p for p in places if p and p not in ("built-in", "frozen", "namespace")]
                if not places or any(os.path.realpath(p).startswith(home + os.sep) for p in places):
                    continue  # where it was installed (a namespace package merges: one portion there is enough)
                if not _holds_any(site, (module,)):
                    continue  # no copy installed with the framework: the one found is the only one, shadowing none
                entry = _entry_of(places[0], path)
                stdlib = said.get("stdlib") if isinstance(said.get("stdlib"), list) else []
                if not entry or _is_standard_library(entry, [str(p) for p in stdlib or [] if p]):
                    continue
                real = os.path.realpath(entry or ".")
                how = ("PYTHONPATH" if real in pythonpath else "user site" if mine and real == mine else
                       "working folder" if entry in ("", ".") or (cwd and real == os.path.realpath(cwd)) else "sys.path")
                foreign = [tag for tag in _items(answer.get("foreign")) if isinstance(tag, str)][:4]
                listed = said.get("suffixes")
                suffixes: list[Any] = listed if isinstance(listed, list) else []
                out.append((cwd or "." if how == "working folder" else entry, module, name, how, "seen",
                            *((" ".join(foreign), " ".join(str(x) for x in suffixes[:8])) if foreign else ())))
        return tuple(out[:32])


def _entry_of(place: str, path: list[str]) -> str:
    """The sys.path entry PLACE was found under (the longest that holds it; a zip file on the path included)."""
    real = os.path.realpath(place)
    best = ""
    for entry in path:
        folder = os.path.realpath(entry or ".")
        if (real == folder or real.startswith(folder.rstrip(os.sep) + os.sep)) and len(folder) > len(best):
            best = entry if entry else "."
    return best


def _is_standard_library(entry: str, stdlib: list[str]) -> bool:
    """Whether ENTRY is one of Python's own folders (STDLIB: its lib/pythonX.Y and platform folder, lib-dynload under
    it) or the zip of its library beside them."""
    real = os.path.realpath(entry)
    for folder in (os.path.realpath(f) for f in stdlib):
        if real == folder or real.startswith(folder + os.sep):
            return True
        if real.endswith(".zip") and os.path.dirname(real) == os.path.dirname(folder):
            return True
    return False


def _items(value: object) -> list[Any]:
    """VALUE where the answer gave a list, else none: an answer is read, never trusted for its types (a start-up hook
    of the user's may write on the answer channel before the child does; its first line for a question is taken)."""
    return value[:256] if isinstance(value, list) else []
