"""The record of one install: `<prefix>/.cudnn-doctor/manifest-<id>.json`.

It lists every file written (path, sha256, mode, link target), every file backed up
(replaced or removed) and the folders created, so that `uninstall` removes exactly that
and restores the backup from `backup-<id>/`.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from cudnn_doctor.install.transaction import STATE_DIR, leaves_prefix, read_state_json, write_json_atomic

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
    saved: str | None = None  # relative to the prefix: where the copy is (None: backup-<id>/<path>)


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
    areas: tuple[str, ...] = ()  # relative: folders on another filesystem's own backup areas

    @property
    def backup_folder(self) -> str:
        return f"backup-{self.id}"

    @property
    def file_name(self) -> str:
        return f"manifest-{self.id}.json"

    def saved_path(self, backed: BackedUpFile) -> str:
        """Where BACKED's copy is, relative to the prefix."""
        return backed.saved or f"{STATE_DIR}/{self.backup_folder}/{backed.path}"

def write_record(prefix: Path, record: InstallRecord) -> Path:
    path = prefix / STATE_DIR / record.file_name
    write_json_atomic(path, {"schema": SCHEMA, **asdict(record)})
    return path


def read_records(prefix: Path) -> list[InstallRecord]:
    """Every install recorded in PREFIX, oldest first."""
    records = []
    for path in sorted((prefix / STATE_DIR).glob("manifest-*.json")):
        try:
            data: dict[str, Any] = read_state_json(path)
            record = InstallRecord(
                id=str(data["id"]), installed_at=str(data["installed_at"]), source=str(data["source"]),
                archive=str(data["archive"]), version=data.get("version"), platform=str(data["platform"]),
                prefix=str(data["prefix"]), files=tuple(WrittenFile(**f) for f in data["files"]),
                backed_up=tuple(BackedUpFile(**b) for b in data["backed_up"]),
                created_folders=tuple(data.get("created_folders", ())), areas=tuple(data.get("areas", ())),
            )
            for rel in [*(f.path for f in record.files), *(b.path for b in record.backed_up),
                        *(record.saved_path(b) for b in record.backed_up), *record.areas]:
                if leaves_prefix(rel):
                    raise ValueError(f"path {rel!r} leaves the prefix")
        except (OSError, ValueError, TypeError, KeyError, AttributeError) as error:
            from cudnn_doctor.codes import doctor_error

            raise doctor_error("CD509", exit_code=2, file=str(path), why=str(error)[:200]) from None
        records.append(record)
    return records


def now_text() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
