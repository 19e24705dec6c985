"""What Maven and Gradle projects have in common for the doctor: modules, their dependencies, their problems.

A project file is a user's file: it may be a FIFO, huge, in any encoding, or malformed. It is read
through `read_project_file` only (regular files, bounded size, never blocking), and whatever cannot
be read becomes a `ProjectProblem`, which the rules turn into a finding.
"""

from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass, field

from cudnn_doctor.user_files import UnreadableFile, read_user_file

MAX_BUILD_FILE = 4 * 1024 * 1024  # a pom or build.gradle bigger than this is not a build file
MAX_SCRIPT_FILE = 1024 * 1024  # a build.gradle or a source file: tokenized in Python, so kept smaller
MAX_TOKENS = 300_000
MAX_PROBLEMS = 200  # findings about one project's files; the rest are counted in one more


@dataclass(frozen=True)
class ProjectProblem:
    path: str
    why: str
    kind: str = "unreadable"  # "unreadable" | "refused" | "property" | "parent" | "missing-module" | "limit"


class Problems(list[ProjectProblem]):
    """A project's problems, each once (in constant time: 20,000 missing modules are 20,000 look-ups,
    not 20,000 scans of the list), and at most MAX_PROBLEMS of them: a count of the rest after that."""

    def __init__(self) -> None:
        super().__init__()
        self._seen: set[ProjectProblem] = set()
        self.dropped = 0

    def add(self, problem: ProjectProblem) -> None:
        if problem in self._seen:
            return
        self._seen.add(problem)
        if len(self) < MAX_PROBLEMS or problem.kind == "limit":  # a bound reached is always said
            self.append(problem)
        else:
            self.dropped += 1


@dataclass(frozen=True)
class Dependency:
    group: str
    artifact: str
    version: str | None
    classifier: str | None = None
    scope: str = "compile"  # Maven scope, or the Gradle configuration
    via: str | None = None  # the reactor module it comes through, when not declared here


@dataclass(frozen=True)
class Profile:
    id: str
    activation: str  # in words: "active by default", "on OS linux", "with -Dcuda", "only with -P cuda"
    active: bool  # active on this machine, with no -P given


@dataclass(frozen=True)
class BuildModule:
    """One module of a project, with the dependencies its build really uses."""

    name: str  # relative to the project root, "." for the root itself
    build_file: str
    tool: str  # "maven" | "gradle"
    dependencies: tuple[Dependency, ...]
    profile: Profile | None = None  # the profile that lists this module, when only a profile does
    profile_dependencies: tuple[tuple[Profile, Dependency], ...] = ()  # used only when that profile is active
    source_dirs: tuple[str, ...] = ()
    packaging: str = "jar"  # Maven's <packaging>: a "pom" module only aggregates or is a parent; it never runs


@dataclass
class BuildProject:
    root: str
    tool: str
    modules: list[BuildModule] = field(default_factory=list)
    problems: Problems = field(default_factory=Problems)

    def all_problems(self) -> list[ProjectProblem]:
        """The problems, and one that says how many more there were, when there were too many to list."""
        if not self.problems.dropped:
            return list(self.problems)
        return [*self.problems, ProjectProblem(self.root, f"it has {self.problems.dropped} more problems than the "
                                                          f"{MAX_PROBLEMS} listed", "limit")]


def read_project_file(path: str, limit: int = MAX_BUILD_FILE) -> bytes:
    """The bytes of a regular file of at most LIMIT bytes; a FIFO, device, folder or bigger file is refused
    (UnreadableFile, the one reader of the user's files)."""
    return read_user_file(path, limit)


def is_regular_file(path: str) -> bool:
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except OSError:
        return False


def exists(path: str) -> bool:
    try:
        os.stat(path)
    except OSError:
        return False
    return True


# --- tokens of Groovy, Kotlin and Java source --------------------------------------------------
# Every alternative either matches or is never tried again at the same place, and the ones that
# could run on (comments, strings) end at the end of their line or of the text when unclosed, so
# tokenizing is linear in the input: no backtracking on long runs of blanks or an unclosed comment.
TOKEN = re.compile(
    r"""(?P<comment>//[^\n]*|/\*(?:[^*]|\*(?!/))*(?:\*/|\Z))"""
    r'''|(?P<text>"""(?:[^"]|"(?!""))*(?:"""|\Z)|\'\'\'(?:[^']|'(?!''))*(?:\'\'\'|\Z)'''
    r"""|"(?:[^"\\\n$]|\\[^\n]?|\$\{[^}\n]{0,200}\}|\$)*(?:"|$)|'(?:[^'\\\n]|\\[^\n]?)*(?:'|$))"""
    r"""|(?P<blank>[ \t\r\f\v]+)|(?P<name>[A-Za-z_$][\w$]*)|(?P<number>\d[\w.]*)|(?P<newline>\n)|(?P<mark>[^\s\w])""",
    re.MULTILINE,
)


@dataclass(frozen=True)
class Token:
    kind: str  # "text" | "name" | "number" | "mark"
    value: str  # a string's content without its quotes
    line: int


def tokens(source: str) -> list[Token]:
    """The tokens of SOURCE, comments dropped, strings unquoted; UnreadableFile past MAX_TOKENS."""
    found: list[Token] = []
    line = 1
    for match in TOKEN.finditer(source):
        kind = match.lastgroup or "mark"
        value = match.group()
        if kind == "blank":
            continue
        if kind == "newline":
            line += 1
            continue
        if kind == "comment":
            line += value.count("\n")
            continue
        if kind == "text":
            quote = value[:3] if value[:3] in ('"""', "'''") else value[:1]
            inner = value[len(quote):]
            if inner.endswith(quote):
                inner = inner[: -len(quote)]
            found.append(Token("text", inner, line))
            line += value.count("\n")
            continue
        found.append(Token(kind, value, line))
        if len(found) > MAX_TOKENS:
            raise UnreadableFile(f"more than {MAX_TOKENS} tokens, more than a build script or source file has")
    return found


def decode_text(data: bytes) -> str:
    """A Groovy/Kotlin/Java file's text: UTF-8 (with or without BOM), else Latin-1, which never fails."""
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return data.decode("latin-1")
