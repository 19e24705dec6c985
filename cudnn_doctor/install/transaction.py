"""Change a prefix all at once or not at all, like pipx's transaction.

Everything lives in `<prefix>/.cudnn-doctor/` (same filesystem, so moves are renames):
a staging folder the archive is extracted into, a backup folder for every file replaced
or removed, and `journal.json`, written before the first file moves. On any exception,
KeyboardInterrupt or SIGTERM, the journal is played backwards and the prefix is as it was;
if the process is killed outright, the next run finds the journal and does the same.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import signal
import sys
import time
import uuid
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from cudnn_doctor.errors import DoctorError

STATE_DIR = ".cudnn-doctor"
JOURNAL = "journal.json"
PUT, TAKE = "put", "take"
PAUSE_VARIABLE = "CUDNN_DOCTOR_TEST_PAUSE_AFTER_N_FILES"  # tests: stop mid-move, to be killed


@dataclass(frozen=True)
class Operation:
    kind: str  # put: move SOURCE to DEST (backing DEST up if it exists); take: move DEST to the backup
    dest: str  # relative to the prefix
    source: str | None = None  # put only: relative to the state folder
    existed: bool = False  # put only: DEST existed when the plan was made


def new_id() -> str:
    """Sortable by time (to the microsecond), unique: the newest install sorts last."""
    now = time.time()
    return time.strftime("%Y%m%dT%H%M%S", time.gmtime(now)) + f"{int(now % 1 * 1e6):06d}-" + uuid.uuid4().hex[:6]


class Transaction:
    """`with Transaction(prefix, "install") as txn: ...; txn.apply(ops); txn.commit(write_manifest)`."""

    def __init__(self, prefix: Path, kind: str, manifest: str | None = None) -> None:
        self.prefix = prefix
        self.state = prefix / STATE_DIR
        self.kind = kind  # install | uninstall
        self.id = new_id()
        # an install keeps its backup for `uninstall`; an uninstall's trash goes once it succeeds
        self.keep_backup = kind == "install"
        self.backup_name = f"backup-{self.id}" if self.keep_backup else f"trash-{self.id}"
        # the manifest this transaction writes (install) or deletes (uninstall)
        self.manifest = manifest or f"manifest-{self.id}.json"
        self.staging = self.state / f"staging-{self.id}"
        self.recovered: str | None = None
        self.journal: dict[str, Any] | None = None
        self.done: list[str] = []  # what was moved, in order (for the report)
        self._lock_fd: int | None = None
        self._committed = False
        self._prefix_created = False
        self._state_created = False
        self._old_sigterm: Any = None

    @property
    def prefix_created(self) -> bool:
        """Whether this transaction created the prefix folder itself."""
        return self._prefix_created

    # --- entering and leaving ----------------------------------------------------------
    def __enter__(self) -> Transaction:
        self._prefix_created = not self.prefix.exists()
        self._state_created = not self.state.exists()
        self.state.mkdir(parents=True, exist_ok=True)
        self._lock()
        self.recovered = recover(self.prefix)
        self.staging.mkdir()
        if hasattr(signal, "SIGTERM"):
            self._old_sigterm = signal.signal(signal.SIGTERM, _interrupt)
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: object) -> None:
        try:
            if not self._committed:
                if self.journal is not None:
                    rollback(self.prefix, self.journal)
                    (self.state / JOURNAL).unlink(missing_ok=True)
            shutil.rmtree(self.staging, ignore_errors=True)
        finally:
            if self._old_sigterm is not None:
                signal.signal(signal.SIGTERM, self._old_sigterm)
            self._unlock()
            tidy_state(self.prefix, self._prefix_created)

    def _lock(self) -> None:
        try:
            import fcntl
        except ImportError:  # Windows: one run at a time is the user's business
            return
        fd = os.open(self.state / "lock", os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            raise DoctorError(f"another cudnn-doctor install or uninstall is changing {self.prefix}",
                              "wait for it to finish", exit_code=1) from None
        self._lock_fd = fd

    def _unlock(self) -> None:
        if self._lock_fd is not None:
            os.close(self._lock_fd)
            self._lock_fd = None

    # --- the moves -----------------------------------------------------------------------
    def apply(self, operations: list[Operation], created_folders: list[str]) -> None:
        """Write the journal, then make every move; any failure rolls all of them back (in __exit__)."""
        self.journal = {
            "kind": self.kind, "id": self.id, "pid": os.getpid(), "started": time.time(),
            "manifest": self.manifest, "backup": self.backup_name, "staging": self.staging.name,
            "prefix_created": self._prefix_created, "created_folders": created_folders,
            "operations": [asdict(op) for op in operations],
        }
        write_json_atomic(self.state / JOURNAL, self.journal)
        for folder in created_folders:
            (self.prefix / folder).mkdir(exist_ok=True)
        backup = self.state / self.backup_name
        pause_after = int(os.environ.get(PAUSE_VARIABLE, "0") or 0)
        for index, op in enumerate(operations, start=1):
            dest = self.prefix / op.dest
            if op.kind == PUT:
                if op.existed or os.path.lexists(dest):
                    _keep_copy(dest, backup / op.dest)
                _move(self.state / (op.source or ""), dest)
            else:
                _move(dest, backup / op.dest)
            self.done.append(f"{op.kind} {op.dest}")
            if index == pause_after:
                sys.stderr.write(f"cudnn-doctor: paused after {index} files (test hook)\n")
                sys.stderr.flush()
                time.sleep(3600)

    def commit(self, finish: Callable[[], None]) -> None:
        """Record the result (FINISH writes or deletes the manifest), then forget the journal."""
        finish()
        self._committed = True
        (self.state / JOURNAL).unlink(missing_ok=True)
        if not self.keep_backup:
            shutil.rmtree(self.state / self.backup_name, ignore_errors=True)


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def _keep_copy(dest: Path, backup: Path) -> None:
    """Back DEST up: a hard link where possible, so DEST stays in place until its replacement
    arrives in one rename; otherwise a rename."""
    backup.parent.mkdir(parents=True, exist_ok=True)
    if os.path.lexists(backup):
        return  # already backed up by an earlier attempt
    try:
        os.link(dest, backup, follow_symlinks=False)
    except OSError:
        os.rename(dest, backup)


def _move(source: Path, dest: Path) -> None:
    """Rename SOURCE to DEST (replacing it); across filesystems, copy beside DEST and rename."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.replace(source, dest)
    except OSError as error:
        if error.errno != errno.EXDEV:
            raise
        temporary = dest.with_name(f".{dest.name}.cudnn-doctor-tmp")
        if source.is_symlink():
            os.symlink(os.readlink(source), temporary)
        else:
            shutil.copy2(source, temporary)
        os.replace(temporary, dest)
        os.unlink(source)


def write_json_atomic(path: Path, data: dict[str, Any]) -> None:
    temporary = path.with_name(path.name + ".tmp")
    with open(temporary, "w", encoding="utf-8") as handle:
        json.dump(data, handle, indent=1)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(temporary, path)


# --- undoing --------------------------------------------------------------------------------
def rollback(prefix: Path, journal: dict[str, Any]) -> None:
    """Play JOURNAL's operations backwards; safe to repeat, and safe at any point of apply."""
    state = prefix / STATE_DIR
    backup = state / journal["backup"]
    for raw in reversed(journal.get("operations", [])):
        op = Operation(**raw)
        dest, saved = prefix / op.dest, backup / op.dest
        if op.kind == PUT:
            source = state / (op.source or "")
            if not os.path.lexists(source) and os.path.lexists(dest):
                _move(dest, source)  # it was moved: back where it came from
            if os.path.lexists(saved):
                _move(saved, dest)  # the original comes back (a no-op where it never left)
        elif os.path.lexists(saved):
            _move(saved, dest)
    for folder in reversed(journal.get("created_folders", [])):
        try:
            (prefix / folder).rmdir()
        except OSError:
            pass
    shutil.rmtree(state / journal["staging"], ignore_errors=True)
    shutil.rmtree(backup, ignore_errors=True)  # an install's new backup, or an uninstall's trash


def recover(prefix: Path) -> str | None:
    """Finish what a killed run left: roll back its journal. A sentence when there was one."""
    state = prefix / STATE_DIR
    path = state / JOURNAL
    note = None
    if path.exists():
        try:
            journal = json.loads(path.read_text())
        except ValueError:
            journal = None
        if journal is not None:
            manifest_exists = (state / journal.get("manifest", "")).is_file()
            finished = manifest_exists if journal.get("kind") == "install" else not manifest_exists
            if finished:
                shutil.rmtree(state / journal["staging"], ignore_errors=True)
                if journal.get("kind") != "install":
                    shutil.rmtree(state / journal["backup"], ignore_errors=True)
            else:
                rollback(prefix, journal)
                started = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(journal.get("started", 0)))
                note = (f"rolled back an interrupted {journal.get('kind')} (process {journal.get('pid')}, "
                        f"started {started}): {prefix} is as it was before it")
        path.unlink(missing_ok=True)
    for leftover in list(state.glob("staging-*")) + list(state.glob("trash-*")):
        shutil.rmtree(leftover, ignore_errors=True)
    manifests = {p.stem.removeprefix("manifest-") for p in state.glob("manifest-*.json")}
    for backup in state.glob("backup-*"):
        if backup.name.removeprefix("backup-") not in manifests:
            shutil.rmtree(backup, ignore_errors=True)
    return note


def tidy_state(prefix: Path, prefix_created: bool) -> None:
    """Remove the state folder when it records nothing (no install, no journal), and the
    prefix when this run created it and left it empty."""
    state = prefix / STATE_DIR
    if state.is_dir() and not any(state.glob("manifest-*.json")) and not (state / JOURNAL).exists():
        shutil.rmtree(state, ignore_errors=True)
    if prefix_created:
        try:
            prefix.rmdir()
        except OSError:
            pass
