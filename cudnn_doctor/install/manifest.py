"""The record of one install: `<prefix>/.cudnn-doctor/manifest-<id>.json`.

It lists every file written (path, sha256, mode, link target), every file backed up
(replaced or removed) and the folders created, so that `uninstall` removes exactly that
and restores the backup from `backup-<id>/`.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from cudnn_doctor.install.transaction import STATE_DIR, write_json_atomic

SCHEMA = "cudnn-doctor/install-manifest/1"


@dataclass(frozen=True)
class WrittenFile:
    path: str  # relative to the prefix
    kind: str  # file | symlink
    sha256: str | None
    size: int
    mode: int
    target: str | None


@dataclass(frozen=True)
class BackedUpFile:
    path: str  # relative to the prefix; its copy is backup-<id>/<path>
    reason: str  # replace | remove


@dataclass(frozen=True)
class InstallRecord:
    id: str
    installed_at: str
    source: str
    archive: str
    version: str | None
    platform: str
    prefix: str
    files: tuple[WrittenFile, ...]
    backed_up: tuple[BackedUpFile, ...]
    created_folders: tuple[str, ...]

    @property
    def backup_folder(self) -> str:
        return f"backup-{self.id}"

    @property
    def file_name(self) -> str:
        return f"manifest-{self.id}.json"


def write_record(prefix: Path, record: InstallRecord) -> Path:
    path = prefix / STATE_DIR / record.file_name
    write_json_atomic(path, {"schema": SCHEMA, **asdict(record)})
    return path


def read_records(prefix: Path) -> list[InstallRecord]:
    """Every install recorded in PREFIX, oldest first."""
    records = []
    for path in sorted((prefix / STATE_DIR).glob("manifest-*.json")):
        data: dict[str, Any] = json.loads(path.read_text())
        records.append(InstallRecord(
            id=data["id"], installed_at=data["installed_at"], source=data["source"], archive=data["archive"],
            version=data.get("version"), platform=data["platform"], prefix=data["prefix"],
            files=tuple(WrittenFile(**f) for f in data["files"]),
            backed_up=tuple(BackedUpFile(**b) for b in data["backed_up"]),
            created_folders=tuple(data.get("created_folders", ())),
        ))
    return records


def now_text() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
