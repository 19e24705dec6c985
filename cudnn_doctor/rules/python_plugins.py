"""The plugins a framework's import loads, as its own Python answered (probes/python_finder.py): a plugin whose module
Python does not find, or package metadata Python refuses to read, stops the framework's import where the data's row
says the framework raises on it (compat/python_plugins.toml). Both are seen: Python's own finder and metadata reader
answered in a child with this environment."""

from __future__ import annotations

import os
from dataclasses import replace

from cudnn_doctor.codes import finding
from cudnn_doctor.knowledge.data import load
from cudnn_doctor.model import Finding, Report
from cudnn_doctor.rules.process_env import _display


def _row(framework: str, group: str) -> dict[str, object]:
    return next((row for row in load("python_plugins").get("group", [])
                 if row.get("framework") == framework and row.get("group") == group), {})


def unloadable_plugins(report: Report) -> list[Finding]:
    """CD421 for each plugin (or unreadable metadata) the framework's import will stop on."""
    view = report.process
    if view is None:
        return []
    out = []
    for framework, group, plugin, module, said, dist, switch in view.python_plugins:
        row = _row(framework, group)
        if row.get("failure") != "raises":
            continue
        name = _display(framework)
        words = str(row.get("said") or "").replace("{name}", plugin or "...")
        off = f" ({switch}=0 turns the loading of every such plugin off)" if switch else ""
        if plugin:
            where = os.path.dirname(dist) if dist else ""
            made = finding("CD421", subject=f"{group}: {plugin}", refs=(str(row.get("source", "")),), evidence="seen",
                           proof=f"{framework}'s Python, started in a child with this environment, lists the "
                                 f"'{group}' entry point {plugin} (from {dist or 'a distribution'}) and finds no module "
                                 f"{module}: {said}", framework=name, library=plugin, error=said,
                           plugin=plugin, group=group, switch=switch, dist=dist, entry=where)
            detail = (f"{name} loads every '{group}' entry point as it is imported, and raises where one does not load "
                      f"(its own words: \"{words}\"). The plugin {plugin} is declared by {dist or 'a distribution'} but "
                      f"its module {module} is not there for this Python, so `import {framework}` stops on it{off}. "
                      "Remove the distribution that declares it (a package left behind by an uninstall, or one on "
                      "PYTHONPATH), or reinstall the plugin whole.")
        else:
            made = finding("CD421", subject=f"{group}: package metadata", refs=(str(row.get("source", "")),),
                           evidence="seen", proof=f"{framework}'s Python, started in a child with this environment, "
                                                  f"raised reading the '{group}' entry points: {said}",
                           framework=name, library="the package metadata", error=said, plugin="", group=group,
                           switch=switch, dist="", entry="")
            detail = (f"{name} reads every distribution's entry points as it is imported (the '{group}' group), and "
                      f"Python raised reading them here: {said}. `import {framework}` stops with that error{off}. "
                      "The file it names (an entry_points.txt that is not UTF-8 or not in its format) belongs to a "
                      "broken or hand-edited package: reinstall or remove that package.")
        out.append(replace(made, detail=detail))
    return out


RULES = (unloadable_plugins,)
