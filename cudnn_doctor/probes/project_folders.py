"""Maven and Gradle projects in a folder and its subfolders, found by their build files' names alone (no file is
read here, so a plain `check` looks without importing the Maven and Gradle readers)."""

from __future__ import annotations

import os

from cudnn_doctor.operating_system import kernel_getcwd

# Maven's, and Gradle's build and settings scripts (probes/gradle.py reads them)
BUILD_FILES = ("pom.xml", "build.gradle", "build.gradle.kts", "settings.gradle", "settings.gradle.kts")
REPOSITORY_MARKS = (".git", ".hg", ".svn")  # a working folder that is a repository's top
SUBPROJECT_DEPTH = 3  # --project at a folder without a build file: how far down its projects are looked for
SUBPROJECT_COUNT = 8  # and how many of them are read (the rest are named in a CD430 finding)
SUBPROJECT_FOLDERS = 2000  # folders looked at, at most
SKIPPED_FOLDERS = frozenset({"node_modules", "target", "build", "out", "__pycache__", "venv", "site-packages"})


def has_build_file(folder: str) -> bool:
    return any(os.path.lexists(os.path.join(folder, name)) for name in BUILD_FILES)


def find_subprojects(root: str) -> tuple[list[str], list[str], bool]:
    """The folders under ROOT (breadth first, at most SUBPROJECT_DEPTH levels down, links not followed, hidden
    and build-output folders skipped) that hold a pom.xml or a Gradle build: the first SUBPROJECT_COUNT to read,
    the others, and whether the folder budget ran out before the walk ended."""
    found: list[str] = []
    level = [root]
    looked = 0
    for _depth in range(SUBPROJECT_DEPTH):
        below: list[str] = []
        for folder in level:
            try:
                entries = sorted(os.scandir(folder), key=lambda entry: entry.name)
            except OSError:
                continue
            for entry in entries:
                if entry.name.startswith(".") or entry.name in SKIPPED_FOLDERS:
                    continue
                try:
                    if not entry.is_dir(follow_symlinks=False):
                        continue
                except OSError:
                    continue
                looked += 1
                if looked > SUBPROJECT_FOLDERS:
                    return found[:SUBPROJECT_COUNT], found[SUBPROJECT_COUNT:], True
                if has_build_file(entry.path):
                    found.append(entry.path)  # its modules are the build tool's to find, not ours
                else:
                    below.append(entry.path)
        level = below
    return found[:SUBPROJECT_COUNT], found[SUBPROJECT_COUNT:], False


def default_project_folder(env: dict[str, str]) -> str | None:
    """The project folder a `check` without --project reads: the working folder when it holds a build file, or
    when it is a repository (.git, .hg, .svn) whose projects are in its subfolders (a repository of services);
    else None. A folder that is no repository (the home folder, /tmp) is not searched: its subfolders are
    everything a user has, not one piece of work."""
    try:
        here = kernel_getcwd()
    except OSError:
        return None
    if has_build_file(here):
        return here
    real = os.path.realpath(here)
    home = env.get("HOME")
    if real == os.sep or (home and real == os.path.realpath(home)) or \
            not any(os.path.lexists(os.path.join(here, mark)) for mark in REPOSITORY_MARKS):
        return None
    read, beyond, _cut = find_subprojects(here)
    return here if read or beyond else None
