"""Whether a pip step of a plan did what it was for, asked of the environment it was meant for.

pip exits 0 when it installed somewhere: into ~/.local when the environment's site-packages cannot be written
("Defaulting to user installation"), into --target or --prefix a configuration file names. A step is done when
the interpreter it ran for resolves each package it installs (the first copy on its sys.path, as an import finds
it) at a version its requirement allows, and not from its user site; and resolves none it uninstalls.
"""

from __future__ import annotations

import os
import time
from typing import Any

from cudnn_doctor import json_values
from cudnn_doctor.child import run_child, with_stdio

# Run by the environment's own interpreter: for each name, the distribution it resolves (the first on its sys.path,
# as an import would find it) and where; its own site-packages and its user site.
_ASK = r"""
import json, os, site, sys, sysconfig
from importlib import metadata
seen = {}
for dist in metadata.distributions():
    name = (dist.metadata["Name"] or "").lower().replace("_", "-").replace(".", "-")
    if name not in seen:
        seen[name] = {"version": dist.version, "where": os.path.realpath(str(dist.locate_file("")))}
user = site.getusersitepackages() if hasattr(site, "getusersitepackages") else ""
answer = json.dumps({"paths": [p for p in (sysconfig.get_path("purelib"), sysconfig.get_path("platlib")) if p],
                     "user_site": os.path.realpath(user) if user else "", "found": seen})
data = answer.encode()
fd = _stdio["answer_fd"]()
while data:
    data = data[os.write(fd, data):]
"""

_TAKES_VALUE = {"-i", "--index-url", "--extra-index-url", "-f", "--find-links", "-c", "--constraint", "-r",
                "--requirement", "-t", "--target", "--prefix", "--root", "--python"}
VERIFY_TIMEOUT_S = 120.0


def _normal(name: str) -> str:
    import re

    return re.sub(r"[-_.]+", "-", name).lower()


def requirements_of(argv: tuple[str, ...]) -> tuple[str, list[str]]:
    """("install" | "uninstall" | "", the requirements or names) of `PYTHON -m pip ...` ARGV."""
    words = list(argv[3:]) if argv[1:3] == ("-m", "pip") else []
    verb = next((w for w in words if not w.startswith("-")), "")
    out: list[str] = []
    skip = False
    for word in words[words.index(verb) + 1:] if verb else []:
        if skip:
            skip = False
        elif word in _TAKES_VALUE:
            skip = True
        elif not word.startswith("-"):
            out.append(word)
    return verb, out


def unverified(argv: tuple[str, ...], env: dict[str, str]) -> str | None:
    """Why the pip step ARGV, which exited 0, did not take effect in its interpreter's environment; None when it did."""
    from packaging.requirements import InvalidRequirement, Requirement

    verb, wanted = requirements_of(argv)
    if verb not in ("install", "uninstall") or not wanted:
        return None
    answer = run_child((argv[0], "-c", with_stdio(_ASK)), env, time.monotonic() + VERIFY_TIMEOUT_S, what=argv[0],
                       answer_channel=True)
    try:
        seen: dict[str, Any] = json_values.loads(answer.answer)
    except (ValueError, RecursionError):
        return f"pip exited 0, but {argv[0]} could not be asked what it holds ({answer.error or 'no answer'})"
    where = " and ".join(dict.fromkeys(seen.get("paths", []))) or "its site-packages"
    user_site = str(seen.get("user_site") or "")
    for text in wanted:
        try:
            requirement = Requirement(text)
        except InvalidRequirement:
            continue
        found = seen.get("found", {}).get(_normal(requirement.name))
        if verb == "uninstall":
            if found is not None:
                return f"pip exited 0, but {argv[0]} still has {requirement.name} {found['version']} ({found['where']})"
            continue
        if found is None:
            return f"pip exited 0, but {argv[0]} finds no {requirement.name} (it is not in {where})"
        if user_site and (found["where"] + os.sep).startswith(user_site + os.sep):
            return (f"pip exited 0, but {requirement.name} is not in {where}: pip put it in the user site "
                    f"{user_site} (a user install, as pip does where site-packages cannot be written)")
        if requirement.specifier and not requirement.specifier.contains(found["version"], prereleases=True):
            return (f"pip exited 0, but {argv[0]} finds {requirement.name} {found['version']} ({found['where']}), "
                    f"not {requirement.specifier}")
    return None
