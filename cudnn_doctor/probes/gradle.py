"""A Gradle build, Groovy or Kotlin DSL, read for its dependencies without running Gradle.

The scripts are tokenized (comments dropped, strings kept whole), never searched with patterns
that backtrack, then read for what a build really declares:
- variables: `def v = '1.0'`, `val v = "1.0"`, `val v: String = "1.0"`, `ext.v = ...`, `ext { v = ... }`,
  `extra["v"] = ...`, `set("v", ...)`, `val v by extra("...")`, and `gradle.properties`;
- dependencies in the configurations used at run time (`implementation`, `api`, `compile`, `runtimeOnly`,
  and their variant-prefixed forms; not test, compile-only or annotation-processor ones), in string
  notation `'group:name:version[:classifier]'` or map notation `group: ..., name: ..., version: ...`
  (Kotlin: `group = ..., name = ...`), with `$v` / `${v}` expanded;
- subprojects from `include` in `settings.gradle(.kts)`.
Every step is linear in the script, and bounded: at most MAX_PROJECTS subprojects, and a string
template that would expand past MAX_VALUE characters (`$a$a...` of values that do the same) is left
as written; each bound reached is a ProjectProblem of kind "limit" (CD439).
"""

from __future__ import annotations

import os
import re

from cudnn_doctor.probes.jvm_build import (
    MAX_SCRIPT_FILE,
    BuildModule,
    BuildProject,
    Dependency,
    Problems,
    ProjectProblem,
    Token,
    UnreadableFile,
    decode_text,
    read_project_file,
    tokens,
)

BUILD_FILES = ("build.gradle", "build.gradle.kts")
SETTINGS_FILES = ("settings.gradle", "settings.gradle.kts")
MAX_PROJECTS = 400
MAX_VALUE = 4096  # characters of one expanded string; a dependency notation is a few dozen
MAX_ROUNDS = 8  # a value that refers to a value that refers to ...
REFERENCE = re.compile(r"\$\{([^{}]*)\}|\$([A-Za-z_][\w.]*)")
QUOTED_KEY = re.compile(r"""["']([\w.-]{1,100})["']""")
RUN_TIME = re.compile(r"^(?:[a-z]\w*?)?(?:[Ii]mplementation|[Aa]pi|[Cc]ompile|[Rr]untimeOnly|[Rr]untime)$")
NOT_RUN_TIME = re.compile(r"^(?:test|androidTest|testFixtures)|[Cc]ompileOnly$|[Aa]nnotationProcessor$|^kapt")


def has_gradle_build(folder: str) -> bool:
    return any(os.path.lexists(os.path.join(folder, name)) for name in (*BUILD_FILES, *SETTINGS_FILES))


def _script_tokens(path: str, problems: Problems) -> list[Token] | None:
    try:
        return tokens(decode_text(read_project_file(path, MAX_SCRIPT_FILE)))
    except UnreadableFile as error:
        problems.add(ProjectProblem(path, str(error)))
        return None


def read_properties_file(path: str, problems: Problems) -> dict[str, str]:
    """gradle.properties: `key=value` or `key: value` lines."""
    if not os.path.lexists(path):
        return {}
    try:
        text = decode_text(read_project_file(path, MAX_SCRIPT_FILE))
    except UnreadableFile as error:
        problems.add(ProjectProblem(path, str(error)))
        return {}
    values = {}
    for line in text.splitlines():
        line = line.strip()
        if not line or line[0] in "#!":
            continue
        key, _, value = line.partition("=") if "=" in line else line.partition(":")
        values[key.strip()] = value.strip()
    return values


def variables(found: list[Token]) -> dict[str, str]:
    """Every `name = "text"` the script sets, in the forms of both DSLs."""
    values: dict[str, str] = {}
    count = len(found)
    for i, token in enumerate(found):
        if token.kind == "name" and i + 2 < count:
            after = found[i + 1]
            if after.value == "=" and found[i + 2].kind == "text":  # def v = '1', ext.v = '1', ext { v = '1' }
                values[token.value] = found[i + 2].value
            elif after.value == ":" and i + 4 < count and found[i + 3].value == "=" and found[i + 4].kind == "text":
                values[token.value] = found[i + 4].value  # val v: String = "1"
            elif (after.value == "[" and found[i + 2].kind == "text" and i + 5 < count
                  and found[i + 3].value == "]" and found[i + 4].value == "=" and found[i + 5].kind == "text"):
                values[found[i + 2].value] = found[i + 5].value  # extra["v"] = "1"
            elif (token.value == "set" and after.value == "(" and found[i + 2].kind == "text" and i + 4 < count
                  and found[i + 3].value == "," and found[i + 4].kind == "text"):
                values[found[i + 2].value] = found[i + 4].value  # set("v", "1")
            elif (after.value == "by" and i + 4 < count and found[i + 2].value == "extra"
                  and found[i + 3].value == "(" and found[i + 4].kind == "text"):
                values[token.value] = found[i + 4].value  # val v by extra("1")
    return values


class Expander:
    """`$v`, `${v}`, `${project.v}`, `${rootProject.ext.v}` replaced from VALUES; others kept. Bounded: a
    string whose expansion would pass MAX_VALUE characters is left as written, and kept in `too_long`;
    each text is expanded once."""

    def __init__(self, values: dict[str, str]) -> None:
        self.values = values
        self.too_long: list[str] = []
        self._done: dict[str, str] = {}

    def __call__(self, text: str) -> str:
        if "$" not in text:
            return text
        if text not in self._done:
            self._done[text] = self._expand(text)
        return self._done[text]

    def _expand(self, text: str) -> str:
        for _ in range(MAX_ROUNDS):
            new = self._substitute(text)
            if new is None:
                self.too_long.append(text)
                return text
            if new == text:
                break
            text = new
        return text

    def _substitute(self, text: str) -> str | None:
        """One round of replacements, built piece by piece: None as soon as it passes MAX_VALUE characters,
        so `$a` repeated a hundred thousand times is never built at all."""
        pieces: list[str] = []
        size = last = 0
        for match in REFERENCE.finditer(text):
            expression = (match.group(1) or match.group(2) or "").strip()
            quoted = QUOTED_KEY.search(expression)  # ${property("v")}, ${rootProject.extra["v"]}
            name = quoted.group(1) if quoted else expression.rsplit(".", 1)[-1]
            replacement = self.values.get(expression, self.values.get(name, match.group(0)))
            size += match.start() - last + len(replacement)
            if size > MAX_VALUE:
                return None
            pieces += (text[last:match.start()], replacement)
            last = match.end()
        if size + len(text) - last > MAX_VALUE:
            return None
        pieces.append(text[last:])
        return "".join(pieces)


def expand(text: str, values: dict[str, str]) -> str:
    """TEXT with its references replaced from VALUES (see Expander), bounded."""
    return Expander(values)(text)


def _value(found: list[Token], i: int, values: Expander) -> tuple[str | None, int]:
    """The value at I: a string, or a variable (a.b.c reads c); and the index after it."""
    if i >= len(found):
        return None, i
    token = found[i]
    if token.kind == "text":
        return values(token.value), i + 1
    if token.kind == "name":
        j = i
        while j + 2 < len(found) and found[j + 1].value == "." and found[j + 2].kind == "name":
            j += 2
        name = found[j].value
        if j + 3 < len(found) and found[j + 1].value == "[" and found[j + 2].kind == "text" and found[j + 3].value == "]":
            name, j = found[j + 2].value, j + 3  # rootProject.extra["v"], ext["v"]
        return values.values.get(name, f"${{{name}}}"), j + 1
    return None, i + 1


def dependencies(found: list[Token], values: dict[str, str] | Expander) -> list[Dependency]:
    """The run-time dependencies the script declares (VALUES: the variables, or an Expander of them)."""
    if not isinstance(values, Expander):
        values = Expander(values)
    declared: list[Dependency] = []
    count = len(found)
    for i, token in enumerate(found):
        if token.kind != "name" or not RUN_TIME.match(token.value) or NOT_RUN_TIME.search(token.value):
            continue
        if i > 0 and found[i - 1].value == ".":
            continue  # configurations.implementation, not a declaration
        j = i + 1
        if j < count and found[j].value == "(":
            j += 1
        if j >= count:
            continue
        if found[j].kind == "text":
            parts = values(found[j].value).split("@")[0].split(":")
            if len(parts) >= 2:
                declared.append(Dependency(parts[0], parts[1], parts[2] if len(parts) > 2 else None,
                                           parts[3] if len(parts) > 3 else None, token.value))
            continue
        fields: dict[str, str | None] = {}
        while j + 1 < count and found[j].kind == "name" and found[j + 1].value in (":", "="):
            key = found[j].value
            value, j = _value(found, j + 2, values)
            fields[key] = value
            if j + 1 < count and found[j].value == "as" and found[j + 1].kind == "name":
                j += 2  # Kotlin's `... as String`
            if j < count and found[j].value == ",":
                j += 1
            else:
                break
        if fields.get("name"):
            declared.append(Dependency(fields.get("group") or "", fields["name"] or "", fields.get("version"),
                                       fields.get("classifier"), token.value))
    return declared


def _includes(found: list[Token]) -> list[str]:
    included = []
    for i, token in enumerate(found):
        if token.kind != "name" or token.value != "include" or (i > 0 and found[i - 1].value == "."):
            continue
        j = i + 1
        while j < len(found) and (found[j].kind == "text" or found[j].value in ("(", ",", ")")):
            if found[j].kind == "text":
                included.append(found[j].value)
            if found[j].value == ")":
                break
            j += 1
    return included


def read_gradle_project(root: str, env: dict[str, str]) -> BuildProject:
    """The root build script and every included subproject's, with the dependencies each declares."""
    project = BuildProject(root=root, tool="gradle")
    problems = project.problems
    shared = read_properties_file(os.path.join(root, "gradle.properties"), problems)
    folders = {".": None}  # each once, in the order included (a dict: a set that keeps the order)
    for name in SETTINGS_FILES:
        settings = os.path.join(root, name)
        if os.path.lexists(settings):
            found = _script_tokens(settings, problems)
            for included in _includes(found or []):
                folder = os.path.normpath(included.strip(":").replace(":", "/")) if included.strip(":") else "."
                if not folder.startswith(".."):
                    folders.setdefault(folder)
            if len(folders) > MAX_PROJECTS:
                problems.add(ProjectProblem(settings, f"it includes {len(folders) - 1} subprojects; the doctor read "
                                                      f"the first {MAX_PROJECTS - 1}", "limit"))
    root_values: dict[str, str] = dict(shared)
    for folder in list(folders)[:MAX_PROJECTS]:
        base = os.path.normpath(os.path.join(root, folder))
        script = next((os.path.join(base, n) for n in BUILD_FILES if os.path.lexists(os.path.join(base, n))), None)
        if script is None:
            continue
        found = _script_tokens(script, problems)
        if found is None:
            continue
        own = read_properties_file(os.path.join(base, "gradle.properties"), problems) if folder != "." else {}
        values = {**root_values, **own, **variables(found)}
        if folder == ".":
            root_values = values
        expander = Expander(values)
        declared = dependencies(found, expander)
        if expander.too_long:
            shown = expander.too_long[0][:60] + ("..." if len(expander.too_long[0]) > 60 else "")
            problems.add(ProjectProblem(script, f"the string {shown!r} expands to more than {MAX_VALUE} characters, "
                                                "so it was left as written", "limit"))
        project.modules.append(BuildModule(
            name=folder, build_file=script, tool="gradle", dependencies=tuple(declared),
            source_dirs=(os.path.join(base, "src", "main", "java"), os.path.join(base, "src", "main", "kotlin"))))
    return project
