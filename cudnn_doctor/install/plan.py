"""The plan: what an install will write, replace and remove, the space it needs, and how the
loader will find the result. Built from the archive's contents and the prefix as it is now."""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from cudnn_doctor.codes import doctor_error
from cudnn_doctor.install.archive import ArchiveContents
from cudnn_doctor.install.safety import FILE, SYMLINK
from cudnn_doctor.knowledge.layout import Layout
from cudnn_doctor.model import Finding

ADD, REPLACE, REMOVE = "add", "replace", "remove"


@dataclass(frozen=True)
class FileChange:
    path: str  # relative to the prefix
    action: str  # add | replace | remove
    kind: str  # file | symlink
    size: int = 0
    target: str | None = None
    sha256: str | None = None
    mode: int = 0o644


@dataclass(frozen=True)
class InstallPlan:
    source: str
    archive: str
    version: str | None
    major: int | None
    cuda_major: int | None
    platform: str
    prefix: str
    changes: tuple[FileChange, ...]
    created_folders: tuple[str, ...]  # relative to the prefix ("." for the prefix itself), outermost first
    other_majors: tuple[str, ...]  # cuDNN files of other majors that stay (relative)
    bytes_needed: int
    bytes_free: int | None
    library_folder: str  # absolute
    loader: str  # "ldconfig" | "environment"
    env_line: str
    blocked_folder: str | None  # the first folder this user cannot write to
    current: tuple[str, ...] = ()  # cuDNN already in the prefix, as check sees it ("9.1.0 at lib64")
    machine: str | None = None  # what the fit was judged against: driver, toolkit, GPUs
    fits: tuple[Finding, ...] = ()
    unchecked: tuple[str, ...] = ()  # what the fit could not be judged against (no driver, no GPU)
    notes: tuple[str, ...] = ()
    plan_only: str | None = None
    skipped: tuple[str, ...] = field(default_factory=tuple)
    replaced_majors: tuple[int, ...] = ()  # other cuDNN majors whose files are all removed (--replace)

    def count(self, action: str) -> int:
        return sum(1 for change in self.changes if change.action == action)


def build_plan(contents: ArchiveContents, prefix: Path, layout: Layout, source: str, cuda_major: int | None,
               loader: tuple[str, str], notes: tuple[str, ...] = (), new_prefix: bool = False,
               replace_majors: bool = False) -> InstallPlan:
    """Compare what the archive holds with what is in PREFIX now (NEW_PREFIX: the prefix folder did not
    exist before this install's staging made it; REPLACE_MAJORS: the files of other cuDNN majors go too)."""
    new = {f.dest: f for f in contents.files}
    changes: list[FileChange] = []
    for staged in sorted(contents.files, key=lambda f: (f.kind != FILE, f.dest)):
        path = prefix / staged.dest
        if path.is_dir() and not path.is_symlink():
            raise doctor_error("CD514", exit_code=2, path=str(path), why=f"the archive brings the file "
                                 f"{staged.dest}, and this is a folder", fix="move that folder away")
        action = REPLACE if os.path.lexists(path) else ADD
        changes.append(FileChange(staged.dest, action, staged.kind, staged.size, staged.target, staged.sha256,
                                  staged.mode))
    stale, others, replaced = _older_copies(prefix, layout, contents, set(new), replace_majors)
    changes += [FileChange(rel, REMOVE, SYMLINK if (prefix / rel).is_symlink() else FILE,
                           _size(prefix / rel)) for rel in stale]
    folders = sorted({os.path.dirname(f.dest) for f in contents.files})
    created = _missing_folders(prefix, folders, new_prefix)
    library_folder = str(prefix / layout.library_folder)
    return InstallPlan(
        source=source, archive=contents.archive, version=contents.version, major=contents.major,
        cuda_major=cuda_major, platform=layout.platform, prefix=str(prefix), changes=tuple(changes),
        created_folders=tuple(created), other_majors=tuple(others), bytes_needed=contents.total_bytes,
        bytes_free=free_bytes(prefix), library_folder=library_folder, loader=loader[0], env_line=loader[1],
        blocked_folder=first_blocked_folder(prefix, [prefix / f for f in folders]),
        notes=notes, plan_only=layout.plan_only, skipped=contents.skipped, replaced_majors=tuple(replaced),
    )


def _older_copies(prefix: Path, layout: Layout, contents: ArchiveContents, new: set[str],
                  replace_majors: bool = False) -> tuple[list[str], list[str], list[int]]:
    """Files a cuDNN release of the same major installed (or its headers, which only one cuDNN
    can own) that the new files do not replace: they are removed. Files of other majors stay, and
    are listed (with REPLACE_MAJORS they are removed too: every file of those majors, and the
    majors are returned); files no cuDNN release installs (cudnn_frontend.h, a user's
    libcudnn_myplugin.so.9) are never touched."""
    stale: list[str] = []
    others: list[str] = []
    replaced: set[int] = set()
    categories = {f.category for f in contents.files}
    for category in sorted(categories):
        folder = layout.folder(category)
        if folder is None or not (prefix / folder).is_dir():
            continue
        same = layout.same_major_pattern(category, contents.major or 0)
        exclusive = layout.exclusive_pattern(category)
        any_pattern = layout.any_major_pattern(category)
        entries = sorted(os.scandir(prefix / folder), key=lambda e: e.name)
        majors_here = {int(m.group(1)) for e in entries if any_pattern and (m := any_pattern.match(e.name))}
        majors_here.discard(contents.major or 0)
        other_patterns = [(m, layout.same_major_pattern(category, m)) for m in sorted(majors_here)]
        for entry in entries:
            rel = f"{folder}/{entry.name}"
            if rel in new or (entry.is_dir() and not entry.is_symlink()):
                continue
            if (same and same.match(entry.name)) or (exclusive and exclusive.match(entry.name)):
                stale.append(rel)
                continue
            other = next((m for m, pattern in other_patterns if pattern and pattern.match(entry.name)), None)
            if other is not None and replace_majors:
                stale.append(rel)
                replaced.add(other)
            elif other is not None or (any_pattern and any_pattern.match(entry.name)):
                others.append(rel)
    return stale, others, sorted(replaced)


def _missing_folders(prefix: Path, folders: list[str], new_prefix: bool = False) -> list[str]:
    missing: list[str] = []
    if new_prefix or not prefix.exists():
        missing.append(".")
    for folder in folders:
        parts = folder.split("/")
        for depth in range(1, len(parts) + 1):
            rel = "/".join(parts[:depth])
            if not (prefix / rel).exists() and rel not in missing:
                missing.append(rel)
    return missing


def nearest_existing(path: Path) -> Path:
    while not path.exists() and path != path.parent:
        path = path.parent
    return path


def first_blocked_folder(prefix: Path, folders: list[Path]) -> str | None:
    """The first folder the install must write to and cannot (None when all are writable)."""
    for folder in [prefix, *folders]:
        existing = nearest_existing(folder)
        if not os.access(existing, os.W_OK | os.X_OK):
            return str(existing)
    return None


def free_bytes(prefix: Path) -> int | None:
    try:
        return shutil.disk_usage(nearest_existing(prefix)).free
    except OSError:
        return None


def _size(path: Path) -> int:
    try:
        return 0 if path.is_symlink() else path.stat().st_size
    except OSError:
        return 0
