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
"""

from __future__ import annotations

import os
import re

from cudnn_doctor.probes.jvm_build import (
    MAX_SCRIPT_FILE,
    BuildModule,
    BuildProject,
    Dependency,
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
MAX_VALUE = 4096
REFERENCE = re.compile(r"\$\{([^{}]*)\}|\$([A-Za-z_][\w.]*)")
QUOTED_KEY = re.compile(r"""["']([\w.-]{1,100})["']""")
RUN_TIME = re.compile(r"^(?:[a-z]\w*?)?(?:[Ii]mplementation|[Aa]pi|[Cc]ompile|[Rr]untimeOnly|[Rr]untime)$")
NOT_RUN_TIME = re.compile(r"^(?:test|androidTest|testFixtures)|[Cc]ompileOnly$|[Aa]nnotationProcessor$|^kapt")


def has_gradle_build(folder: str) -> bool:
    return any(os.path.lexists(os.path.join(folder, name)) for name in (*BUILD_FILES, *SETTINGS_FILES))


def _script_tokens(path: str, problems: list[ProjectProblem]) -> list[Token] | None:
    try:
        return tokens(decode_text(read_project_file(path, MAX_SCRIPT_FILE)))
    except UnreadableFile as error:
        problems.append(ProjectProblem(path, str(error)))
        return None


def read_properties_file(path: str, problems: list[ProjectProblem]) -> dict[str, str]:
    """gradle.properties: `key=value` or `key: value` lines."""
    if not os.path.lexists(path):
        return {}
    try:
        text = decode_text(read_project_file(path, MAX_SCRIPT_FILE))
    except UnreadableFile as error:
        problems.append(ProjectProblem(path, str(error)))
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


def expand(text: str, values: dict[str, str]) -> str:
    """`$v`, `${v}`, `${project.v}`, `${rootProject.ext.v}` replaced from VALUES; others kept; bounded."""
    for _ in range(8):
        def one(match: re.Match[str]) -> str:
            expression = (match.group(1) or match.group(2) or "").strip()
            quoted = QUOTED_KEY.search(expression)  # ${property("v")}, ${rootProject.extra["v"]}
            name = quoted.group(1) if quoted else expression.rsplit(".", 1)[-1]
            return values.get(expression, values.get(name, match.group(0)))

        new = REFERENCE.sub(one, text)
        if new == text or len(new) > MAX_VALUE:
            break
        text = new
    return text


def _value(found: list[Token], i: int, values: dict[str, str]) -> tuple[str | None, int]:
    """The value at I: a string, or a variable (a.b.c reads c); and the index after it."""
    if i >= len(found):
        return None, i
    token = found[i]
    if token.kind == "text":
        return expand(token.value, values), i + 1
    if token.kind == "name":
        j = i
        while j + 2 < len(found) and found[j + 1].value == "." and found[j + 2].kind == "name":
            j += 2
        name = found[j].value
        if j + 3 < len(found) and found[j + 1].value == "[" and found[j + 2].kind == "text" and found[j + 3].value == "]":
            name, j = found[j + 2].value, j + 3  # rootProject.extra["v"], ext["v"]
        return values.get(name, f"${{{name}}}"), j + 1
    return None, i + 1


def dependencies(found: list[Token], values: dict[str, str]) -> list[Dependency]:
    """The run-time dependencies the script declares."""
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
            parts = expand(found[j].value, values).split("@")[0].split(":")
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
    folders = ["."]
    for name in SETTINGS_FILES:
        settings = os.path.join(root, name)
        if os.path.lexists(settings):
            found = _script_tokens(settings, problems)
            for included in _includes(found or []):
                folder = os.path.normpath(included.strip(":").replace(":", "/")) if included.strip(":") else "."
                if folder not in folders and not folder.startswith(".."):
                    folders.append(folder)
    root_values: dict[str, str] = dict(shared)
    for folder in folders[:MAX_PROJECTS]:
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
        project.modules.append(BuildModule(
            name=folder, build_file=script, tool="gradle", dependencies=tuple(dependencies(found, values)),
            source_dirs=(os.path.join(base, "src", "main", "java"), os.path.join(base, "src", "main", "kotlin"))))
    return project
