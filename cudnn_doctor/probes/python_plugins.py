"""The plugins a framework loads as it is imported, asked of its own Python (issue 45): torch 2.5 and later load every
entry point of the group "torch.backends" at the end of `import torch` (unless TORCH_DEVICE_BACKEND_AUTOLOAD says
otherwise) and raise "Failed to load the backend extension" for any that does not load; the group, the switch and
the failure are rows of compat/python_plugins.toml, each confirmed in the installed framework's own file before it
is used.

Where a package file could bring such an entry point (an entry_points.txt naming the group, or one that is not UTF-8,
in the framework's site-packages, on PYTHONPATH or in the user's site), the framework's interpreter is started with
the user's environment, as a program is, and asked what the framework will ask: `importlib.metadata.entry_points(
group=...)` (its own words where it raises: metadata it cannot read stops the framework's import there), then where
each entry point's module is found (`importlib.util.find_spec`, which finds without importing). A module Python does
not find, or metadata it refuses, is seen: the framework's import stops on it. Nothing is started otherwise."""

from __future__ import annotations

import json
import os
import re

from cudnn_doctor.model import Framework

TIMEOUT_S = 10.0
MARK = "\x1eCDP\t"
MAX_METADATA_BYTES = 1 << 20
MAX_DISTRIBUTIONS = 2000
# the program's first line: the framework's own call, then the finder for each entry point's top module; written with
# os.write (a start-up hook may have replaced stdout), after a mark a hook's own output cannot forge
CODE = f"""import json, os, sys
out = {{}}
for group in json.loads(sys.argv[1]):
    try:
        from importlib.metadata import entry_points
        import importlib.util
        found = list(entry_points(group=group))
    except Exception as error:
        out[group] = {{"raised": (type(error).__name__ + ": " + str(error))[:400]}}
        continue
    entries = []
    for point in found[:64]:
        module = point.value.split(":")[0].strip()
        top = module.split(".")[0]
        try:
            spec = importlib.util.find_spec(top) if top else None
            where = "" if spec is None else (spec.origin or ",".join(spec.submodule_search_locations or ()))
            missing = spec is None
            said = "No module named " + repr(top) if missing else ""
        except Exception as error:
            where, missing, said = "", True, (type(error).__name__ + ": " + str(error))[:400]
        dist = getattr(point, "dist", None)
        entries.append({{"name": point.name, "value": point.value, "module": top, "missing": missing, "said": said,
                        "where": where, "dist": str(getattr(dist, "_path", "") or "")}})
    out[group] = {{"entries": entries}}
os.write(1, {MARK.encode()!r} + json.dumps(out).encode())
"""


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
    user's site of that Python's version (unless PYTHONNOUSERSITE)."""
    folders = list(sites) + [entry for entry in env.get("PYTHONPATH", "").split(os.pathsep) if entry]
    base = env.get("PYTHONUSERBASE") or (os.path.join(env["HOME"], ".local") if env.get("HOME") else "")
    if base and "PYTHONNOUSERSITE" not in env:
        versions = sorted({os.path.basename(os.path.dirname(site)) for site in sites
                           if os.path.basename(os.path.dirname(site)).startswith("python")})
        folders += [os.path.join(base, "lib", version, "site-packages") for version in versions]
    return list(dict.fromkeys(folders))


def worth_asking(folders: list[str], groups: list[str]) -> bool:
    """Whether a distribution in FOLDERS names one of GROUPS in its entry_points.txt, or has one that is not UTF-8
    (importlib.metadata then raises for every group): only then is a Python started."""
    from cudnn_doctor.user_files import UnreadableFile, read_user_file

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
            path = os.path.join(folder, name, "entry_points.txt")
            try:
                text = read_user_file(path, MAX_METADATA_BYTES)
            except UnreadableFile:  # none, or one no Python should be sent to (a FIFO would hold it until cut off)
                continue
            try:
                text.decode("utf-8")
            except UnicodeDecodeError:
                return True
            if any(header.search(text) for header in headers):
                return True
    return False


class PluginChild:
    """The frameworks' Pythons asked about the plugins they load at import, started now; result() reads them."""

    def __init__(self, frameworks: list[Framework], env: dict[str, str]) -> None:
        from cudnn_doctor.probes.context import interpreter_for

        self.asked: list[tuple[str, str, list[dict[str, object]]]] = []  # (framework, python, its rows)
        by_python: dict[str, list[dict[str, object]]] = {}
        sites: list[str] = []
        for framework in frameworks:
            site = str(framework.details.get("site_packages") or "")
            if not site or framework.details.get("assumed"):
                continue
            rows = [row for row in plugin_rows() if row.get("framework") == framework.name
                    and _autoload_on(row, env) and _confirmed(row, site)]
            python = interpreter_for(site) if rows else None
            if python is None:
                continue
            self.asked.append((framework.name, python, rows))
            by_python.setdefault(python, []).extend(rows)
            sites.append(site)
        groups = sorted({str(row["group"]) for _, _, rows in self.asked for row in rows})
        if not groups or not worth_asking(metadata_folders(env, sites), groups):
            self.asked = []
            return
        from cudnn_doctor.child import ChildBatch, ChildRequest, deadline_in

        self.pythons = list(by_python)
        self.batch = ChildBatch([ChildRequest((python, "-c", CODE, json.dumps(sorted({str(r["group"]) for r in
                                                                                      by_python[python]}))),
                                              env, TIMEOUT_S, f"{python} asked for its plugins")
                                 for python in self.pythons], deadline=deadline_in(TIMEOUT_S))

    def result(self) -> tuple[tuple[str, ...], ...]:
        """(framework, group, plugin or "", its module or "", what Python said, the distribution's folder, the
        variable that turns the group off or "") for each plugin the framework's import will fail on."""
        if not self.asked:
            return ()
        answers = dict(zip(self.pythons, self.batch.answers(), strict=True))
        out: list[tuple[str, ...]] = []
        for name, python, rows in self.asked:
            text = answers[python].stdout or ""
            if MARK not in text:
                continue  # the Python did not start: probes/python_start.py names why
            try:
                said = json.loads(text.rsplit(MARK, 1)[1].strip() or "{}")
            except ValueError:
                continue
            for row in rows:
                group = str(row["group"])
                answer = said.get(group) if isinstance(said, dict) else None
                if not isinstance(answer, dict):
                    continue
                switch = str(row.get("switch") or "")
                if answer.get("raised"):
                    out.append((name, group, "", "", str(answer["raised"]), "", switch))
                for entry in answer.get("entries") or []:
                    if isinstance(entry, dict) and entry.get("missing"):
                        out.append((name, group, str(entry.get("name") or ""), str(entry.get("module") or ""),
                                    str(entry.get("said") or ""), str(entry.get("dist") or ""), switch))
        return tuple(out[:16])
