"""Every fix the knowledge in compat/ can print is whole (issue 41, "every value filled in"): a command in it (the
text between backticks) elides no argument with `...`, and none but a row's template (`fix`, whose <fields> are
filled from the message; its fix_without is printed where one is missing) names a <placeholder>; what the user must
look up is said in words. Read from the data itself, so a row added later is held to it too."""

from __future__ import annotations

import re

import tomllib

from cudnn_doctor.knowledge.data import compat_dir

COMMAND = re.compile(r"`([^`\n]*)`")
ELIDED = re.compile(r"(?<![.\w])\.\.\.(?![.\w])")
ANGLED = re.compile(r"<[A-Za-z_][\w-]*>")
FIX_KEYS = ("fix", "fix_without", "text", "advice", "cure")


def _fixes(value: object, path: str):  # type: ignore[no-untyped-def]
    if isinstance(value, dict):
        for key, item in value.items():
            if key in FIX_KEYS and isinstance(item, str):
                yield f"{path}.{key}", item
            else:
                yield from _fixes(item, f"{path}.{key}")
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _fixes(item, f"{path}[{index}]")


def test_no_fix_in_the_data_prints_a_command_with_a_blank() -> None:
    found = []
    for path in sorted(compat_dir().glob("*.toml")):
        for where, text in _fixes(tomllib.loads(path.read_text(encoding="utf-8")), path.stem):
            # a row's `fix` may hold <fields> filled from the message (its fix_without is printed where one is
            # missing): a template, not a blank
            template = where.endswith(".fix")
            for command in COMMAND.findall(text):
                if ELIDED.search(command) or not template and ANGLED.search(command):
                    found.append(f"{where}: `{command}`")
    assert not found, "\n".join(found)


def test_the_patterns_see_a_blank() -> None:
    texts = {"fix_without": "run `docker run --gpus all ...` then `pip install nvidia-driver-<ver>`; `ok`, words ..."}
    assert [c for _, t in _fixes(texts, "x") for c in COMMAND.findall(t) if ELIDED.search(c) or ANGLED.search(c)] == [
        "docker run --gpus all ...", "pip install nvidia-driver-<ver>"]
