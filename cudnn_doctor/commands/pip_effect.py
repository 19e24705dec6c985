"""Whether a pip step of a plan did what it was for, asked of the environment it was meant for.

pip exits 0 when it installed somewhere: into ~/.local when the environment's site-packages cannot be written
("Defaulting to user installation"), into --target or --prefix a configuration file names. A step is done when
each package it installs is in that interpreter's own site-packages (sysconfig's purelib and platlib) at a
version its requirement allows, and each package it uninstalls is gone from there.
"""

from __future__ import annotations

import json
import time
from typing import Any

from cudnn_doctor.child import run_child

# Run by the environment's own interpreter: its site-packages, and the distributions found there only.
_ASK = r"""
import json, sys, sysconfig
from importlib import metadata
paths = list(dict.fromkeys(p for p in (sysconfig.get_path("purelib"), sysconfig.get_path("platlib")) if p))
found = {}
for dist in metadata.distributions(path=paths):
    name = (dist.metadata["Name"] or "").lower().replace("_", "-").replace(".", "-")
    found.setdefault(name, dist.version)
everywhere = {}
for dist in metadata.distributions():
    name = (dist.metadata["Name"] or "").lower().replace("_", "-").replace(".", "-")
    everywhere.setdefault(name, str(dist.locate_file("")))
print(json.dumps({"paths": paths, "found": found, "elsewhere": everywhere}))
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
    answer = run_child((argv[0], "-c", _ASK), env, time.monotonic() + VERIFY_TIMEOUT_S, what=argv[0])
    try:
        seen: dict[str, Any] = json.loads(answer.stdout)
    except (ValueError, RecursionError):
        return f"pip exited 0, but {argv[0]} could not be asked what it holds ({answer.error or 'no answer'})"
    where = " and ".join(seen.get("paths", [])) or "its site-packages"
    for text in wanted:
        try:
            requirement = Requirement(text)
        except InvalidRequirement:
            continue
        name = _normal(requirement.name)
        version = seen.get("found", {}).get(name)
        if verb == "uninstall":
            if version is not None:
                return f"pip exited 0, but {requirement.name} {version} is still in {where}"
            continue
        if version is None:
            other = seen.get("elsewhere", {}).get(name)
            return (f"pip exited 0, but {requirement.name} is not in {where}"
                    + (f" (pip put it in {other}: a user or --target install this environment does not use)"
                       if other else ""))
        if requirement.specifier and not requirement.specifier.contains(version, prereleases=True):
            return f"pip exited 0, but {requirement.name} in {where} is {version}, not {requirement.specifier}"
    return None
