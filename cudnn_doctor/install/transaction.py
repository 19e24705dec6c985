"""Change a prefix all at once or not at all, like pipx's transaction, safe to kill at any point.

Everything lives in `<prefix>/.cudnn-doctor/`: a staging folder the archive is extracted into,
a backup folder for every file replaced or removed, and `journal.json`. A folder of the
install on another filesystem (`lib64` a link to another disk, a mount point) gets its own
hidden area, `<folder>/.cudnn-doctor-<id>/`, so that every move is a rename on one filesystem.

The journal is written (atomically) before anything is created and says which phase the run
is in; every step is a rename that the next run can see happened or not:

- `staging`: extracting; nothing of the user's has moved. Recovery deletes the staging.
- `applying`: the moves. Recovery plays them backwards, each only where the file it would
  move is really there (a file put into the prefix is known by its inode).
- `rolled-back`: every move is undone; only our own folders are left to delete.
- `committed`: the manifest is written (or, for an uninstall, deleted); only our own folders
  are left to delete.

The journal is rewritten for `rolled-back`/`committed` before anything it names is deleted,
and removed last. On any exception, KeyboardInterrupt or SIGTERM the run rolls back at once;
if the process is killed outright, the next install or uninstall finishes the job.
`faults.step` marks every boundary (tests kill the process at each one).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import stat
import time
import uuid
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from cudnn_doctor.codes import doctor_error
from cudnn_doctor.install.faults import step
from cudnn_doctor.operating_system import CURRENT
from cudnn_doctor.user_files import UnreadableFile, read_user_file

STATE_DIR = ".cudnn-doctor"
JOURNAL = "journal.json"
AREA_PREFIX = ".cudnn-doctor-"  # <folder>/.cudnn-doctor-<id>/ on a folder's own filesystem
PUT, TAKE = "put", "take"
JOURNAL_VERSION = 2
# prefix -> how this process's last transaction on it ended ("committed" | "rolled back"): what a command says of
# the prefix when a signal stops it after the transaction is what the transaction did (outcome_of)
OUTCOMES: dict[str, str] = {}


def outcome_of(prefix: Path) -> str | None:
    """How this process's last transaction on PREFIX ended; None: none ran to its end."""
    return OUTCOMES.get(str(prefix))


@dataclass(frozen=True)
class Operation:
    kind: str  # put: move SOURCE to DEST (backing DEST up if it exists); take: move DEST to the backup
    dest: str  # relative to the prefix
    source: str | None = None  # put only: relative to the prefix
    existed: bool = False  # put only: DEST existed when the plan was made
    backup: str = ""  # relative to the prefix: where DEST's old copy goes
    inode: int | None = None  # put only: SOURCE's inode, to know the file once it is at DEST


def new_id() -> str:
    """Sortable by time (to the microsecond), unique: the newest install sorts last."""
    now = time.time()
    return time.strftime("%Y%m%dT%H%M%S", time.gmtime(now)) + f"{int(now % 1 * 1e6):06d}-" + uuid.uuid4().hex[:6]


class Transaction:
    """`with Transaction(prefix, "install", folders=[...]) as txn: ...; txn.apply(ops); txn.commit(finish)`."""

    def __init__(self, prefix: Path, kind: str, manifest: str | None = None, folders: Iterable[str] = (),
                 on_commit_remove: Iterable[str] = (), expect_records: tuple[str, ...] | None = None) -> None:
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
        self.folders = sorted(set(folders))  # the folders (relative) files are put into or taken from
        self.on_commit_remove = list(on_commit_remove)  # uninstall: the install's backup, once restored
        # the installs recorded when the plan was made: another run that installed or uninstalled since
        # (between the plan and this lock) makes the plan stale, and this run CD510
        self.expect_records = expect_records
        self.areas: dict[str, str] = {}  # folder -> its own area (relative), where it is on another filesystem
        self.recovered: str | None = None
        self.journal: dict[str, Any] = {}
        self.done: list[str] = []  # what was moved, in order (for the report)
        self._lock_fd: int | None = None
        self._committed = False
        self._prefix_created = False
        self._old_signals: dict[int, Any] = {}

    @property
    def prefix_created(self) -> bool:
        """Whether this transaction (or the interrupted one it recovered) created the prefix folder."""
        return self._prefix_created

    # --- entering and leaving ----------------------------------------------------------
    def __enter__(self) -> Transaction:
        OUTCOMES.pop(str(self.prefix), None)
        self._prefix_created = not self.prefix.exists()
        state_created = not self.state.exists()
        self.state.mkdir(parents=True, exist_ok=True)
        lock_created = not (self.state / "lock").exists()
        self._lock()
        try:
            self.recovered, created_before = recover(self.prefix)
            self._prefix_created = self._prefix_created or created_before
            if self.expect_records is not None and installed_records(self.prefix) != self.expect_records:
                raise doctor_error("CD510", exit_code=1, prefix=str(self.prefix))
            self.areas = self._find_areas()
            self.journal = {
                "version": JOURNAL_VERSION, "kind": self.kind, "id": self.id, "pid": os.getpid(),
                "started": time.time(), "phase": "staging", "manifest": self.manifest,
                "backup": f"{STATE_DIR}/{self.backup_name}", "staging": f"{STATE_DIR}/{self.staging.name}",
                "areas": sorted(self.areas.values()), "prefix_created": self._prefix_created,
                "keep_backup": self.keep_backup, "on_commit_remove": self.on_commit_remove,
                "created_folders": [], "operations": [],
            }
            write_json_atomic(self.state / JOURNAL, self.journal)
            step("staging.journal")
            self.staging.mkdir()
            for area in self.areas.values():
                (self.prefix / area).mkdir()
            step("staging.folders")
        except BaseException:
            try:  # the lock file goes while it is still locked: no one else can hold a lock on it meanwhile
                if self.journal:  # a signal after the journal was written: its staging goes now, not next run
                    blocked = _block_signals()
                    try:
                        _to_the_end(rollback, self.prefix, self.journal)
                    except KeyboardInterrupt:
                        pass  # the first signal is the one already going up
                    finally:
                        _unblock_signals(blocked)
                if lock_created:
                    (self.state / "lock").unlink(missing_ok=True)
                if state_created:
                    tidy_state(self.prefix, self._prefix_created)
            finally:
                self._unlock()
            raise
        for signum in (getattr(signal, "SIGTERM", None), getattr(signal, "SIGHUP", None)):
            if signum is not None:
                self._old_signals[signum] = signal.signal(signum, _interrupt)
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: object) -> None:
        blocked = _block_signals()
        try:
            if self.journal:  # finished here, as the next run's recovery would finish it: never left for it
                self._committed = self._committed or _recorded(self.prefix, self.journal)
                _to_the_end(finish_committed if self._committed else rollback, self.prefix, self.journal)
        finally:
            OUTCOMES[str(self.prefix)] = "committed" if self._committed else "rolled back"
            try:
                for signum, old in self._old_signals.items():
                    signal.signal(signum, old)
                try:  # tidied while still locked (see _lock)
                    tidy_state(self.prefix, self._prefix_created)
                finally:
                    self._unlock()
            finally:
                _unblock_signals(blocked)  # a Ctrl-C held off during the rollback arrives now

    def _lock(self) -> None:
        """Take the prefix's lock, or CD510. A run that ends removes the lock file (with the state folder)
        while it still holds the lock, so a lock won on a file that is no longer at its path is no lock:
        take the one that is there now."""
        path = self.state / "lock"
        for _attempt in range(100):
            try:  # never through a link: one left there (dangling or not) would make or lock a file elsewhere
                fd = os.open(path, os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0) | CURRENT.binary, 0o644)
            except OSError as error:
                what = "a link" if os.path.islink(path) else "not a file cudnn-doctor can open"
                raise doctor_error("CD514", exit_code=2, path=str(path), why=f"it is {what} ({error.strerror}), but "
                                   "it must be cudnn-doctor's own lock file", fix="move it away") from None
            if not stat.S_ISREG(os.fstat(fd).st_mode):  # a FIFO or a device opened without waiting: not a lock
                os.close(fd)
                raise doctor_error("CD514", exit_code=2, path=str(path), why="it is not a regular file, but it must "
                                   "be cudnn-doctor's own lock file", fix="move it away")
            try:
                CURRENT.lock(fd)  # flock; msvcrt.locking on Windows
                held = os.fstat(fd)
                try:
                    there = os.stat(path)
                except FileNotFoundError:
                    there = None
            except OSError:
                os.close(fd)
                raise doctor_error("CD510", exit_code=1, prefix=str(self.prefix)) from None
            if there is not None and _same(held, there):
                self._lock_fd = fd
                return
            os.close(fd)
            self.state.mkdir(parents=True, exist_ok=True)
        raise doctor_error("CD510", exit_code=1, prefix=str(self.prefix))

    def _unlock(self) -> None:
        if self._lock_fd is not None:
            os.close(self._lock_fd)
            self._lock_fd = None

    def _find_areas(self) -> dict[str, str]:
        """The folders that a rename from the state folder cannot reach (another filesystem or
        mount), each with the area on its own filesystem where its files are staged and backed up."""
        areas: dict[str, str] = {}
        state_dev = os.stat(self.state).st_dev
        real_prefix = os.path.realpath(self.prefix)
        for folder in self.folders:
            existing = _nearest_existing(self.prefix / folder)
            real = os.path.realpath(existing)
            inside = real.startswith(real_prefix + os.sep)
            if existing == self.prefix:
                mounted = False  # the state folder is in the prefix: only a link can put it elsewhere
            else:
                mounted = any(os.path.ismount(p) for p in _between(real, real_prefix)) if inside else True
            if os.stat(existing).st_dev != state_dev or mounted:
                rel = os.path.relpath(existing, self.prefix).replace(os.sep, "/")
                areas[folder] = f"{AREA_PREFIX}{self.id}" if rel == "." else f"{rel}/{AREA_PREFIX}{self.id}"
        return areas

    # --- where things go -----------------------------------------------------------------
    def staging_path(self, dest: str) -> Path:
        """Where DEST (relative to the prefix) is extracted to before it is put in place."""
        return self.prefix / self.staging_rel(dest)

    def staging_rel(self, dest: str) -> str:
        area, inner = self._area_of(dest)
        return f"{area}/staging/{inner}" if area else f"{STATE_DIR}/{self.staging.name}/{dest}"

    def backup_rel(self, dest: str) -> str:
        area, inner = self._area_of(dest)
        where = "backup" if self.keep_backup else "trash"
        return f"{area}/{where}/{inner}" if area else f"{STATE_DIR}/{self.backup_name}/{dest}"

    def _area_of(self, dest: str) -> tuple[str | None, str]:
        """The area of DEST's nearest folder that has one (a file staged before its plan is known may
        lie in a folder under one of the transaction's folders), and DEST's path inside that folder."""
        folder = os.path.dirname(dest)
        while folder:
            if folder in self.areas:
                return self.areas[folder], dest[len(folder) + 1:]
            folder = os.path.dirname(folder)
        return None, dest

    def put(self, dest: str, source: str, existed: bool) -> Operation:
        """An operation that moves SOURCE (relative to the prefix) to DEST."""
        inode = os.lstat(self.prefix / source).st_ino
        return Operation(PUT, dest, source, existed, self.backup_rel(dest), inode)

    def take(self, dest: str) -> Operation:
        return Operation(TAKE, dest, backup=self.backup_rel(dest))

    # --- the moves -----------------------------------------------------------------------
    def apply(self, operations: list[Operation], created_folders: list[str]) -> None:
        """Write the journal, then make every move; any failure rolls all of them back (in __exit__)."""
        self.journal = {**self.journal, "phase": "applying", "created_folders": created_folders,
                        "operations": [asdict(op) for op in operations]}
        write_json_atomic(self.state / JOURNAL, self.journal)
        step("apply.journal")
        for folder in created_folders:
            (self.prefix / folder).mkdir(exist_ok=True)
            step("apply.folder")
        for op in operations:
            dest, backup = self.prefix / op.dest, self.prefix / op.backup
            if op.kind == PUT:
                if os.path.lexists(dest):
                    _keep_copy(dest, backup)
                    step("apply.backup")
                _move(self.prefix / (op.source or ""), dest)
                step("apply.put")
            else:
                _move(dest, backup)
                step("apply.take")
            self.done.append(f"{op.kind} {op.dest}")

    def commit(self, finish: Callable[[], None]) -> None:
        """Record the result (FINISH writes or deletes the manifest), then forget the journal."""
        finish()
        step("commit.manifest")
        self._committed = True
        finish_committed(self.prefix, self.journal)


def _recorded(prefix: Path, journal: dict[str, Any]) -> bool:
    """Whether JOURNAL's run got as far as its record (an install's manifest written, an uninstall's deleted): then
    it is finished, not undone, as recover() decides for a run that was killed."""
    exists = (prefix / STATE_DIR / str(journal.get("manifest", ""))).is_file() if journal.get("manifest") else False
    return exists if journal.get("kind") == "install" else not exists


def _to_the_end(action: Callable[[Path, dict[str, Any]], None], prefix: Path, journal: dict[str, Any]) -> None:
    """ACTION (the rollback, or the commit's clean-up), done whole even when a signal lands inside it: one that
    reached the process before the mask took hold still raises here (Python runs its handler later, in this
    thread). Each step checks what is there before it moves or deletes anything, so it is begun again from the
    journal until it is done; then the signal goes on up, and whatever says "as it was" (or that the prefix holds
    the install) says so of a prefix that is, with no journal left for the next run."""
    interruption: BaseException | None = None
    for _attempt in range(100):
        try:
            action(prefix, journal)
            break
        except KeyboardInterrupt as error:  # Ctrl-C, SIGTERM, SIGHUP (signals.Interrupted): finish first
            interruption = interruption or error
    if interruption is not None:
        raise interruption


def _interrupt(signum: int, frame: object) -> None:
    """SIGTERM or SIGHUP during a transaction: the doctor's own signal handling (signals.py), so that the rollback
    runs and the command still ends with 128 + that signal's number (143 for SIGTERM), not a plain Ctrl-C's 130."""
    from cudnn_doctor import signals

    signals.raise_once(signum, None)


def _block_signals() -> set[signal.Signals]:
    """Hold off Ctrl-C and SIGTERM while a rollback runs (they arrive once it is done)."""
    if not hasattr(signal, "pthread_sigmask"):
        return set()
    wanted = {signal.SIGINT, signal.SIGTERM}
    already = set(signal.pthread_sigmask(signal.SIG_BLOCK, wanted))
    return wanted - already


def _unblock_signals(blocked: set[signal.Signals]) -> None:
    if blocked and hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_UNBLOCK, blocked)


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
    """Rename SOURCE to DEST (replacing it): always within one filesystem (see the areas)."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    os.replace(source, dest)


def _restore(saved: Path, dest: Path) -> None:
    """Put the backup SAVED back at DEST, unless DEST already is that very file."""
    if not os.path.lexists(saved):
        return
    if os.path.lexists(dest) and _same(os.lstat(saved), os.lstat(dest)):
        os.unlink(saved)  # DEST never left (its backup was a hard link)
    else:
        _move(saved, dest)


def _same(a: os.stat_result, b: os.stat_result) -> bool:
    return (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino)


def write_json_atomic(path: Path, data: dict[str, Any]) -> None:
    """DATA as the whole of PATH (written beside it, synced, renamed over it); where that fails (a full disk), the
    file beside it is taken away again, not left for the next run to find."""
    temporary = path.with_name(path.name + ".tmp")
    try:
        with open(temporary, "w", encoding="utf-8") as handle:
            json.dump(data, handle, indent=1)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, path)
    except BaseException:
        try:
            os.unlink(temporary)
        except OSError:
            pass
        raise


def _nearest_existing(path: Path) -> Path:
    while not os.path.lexists(path) and path != path.parent:
        path = path.parent
    return path


def _between(real: str, top: str) -> list[str]:
    """REAL and its parents up to (not including) TOP."""
    found = []
    while real != top and real.startswith(top + os.sep):
        found.append(real)
        real = os.path.dirname(real)
    return found


# --- undoing and finishing --------------------------------------------------------------------
def leaves_prefix(rel: Any) -> bool:
    """Whether REL, a path a state file (journal, manifest) names relative to the prefix, is no such path: not a
    string, empty, holding NUL, absolute, or with a '..' part. Such a file was not written by a run of ours, and
    nothing it names is moved or removed."""
    return (not isinstance(rel, str) or not rel or "\0" in rel or os.path.isabs(rel) or rel.startswith(("/", "\\"))
            or any(part == ".." for part in rel.replace("\\", "/").split("/")))


def _within(rel: Any, what: str) -> str:
    """REL, a path the journal names, where it stays inside the prefix; else ValueError (its moves are not made)."""
    if leaves_prefix(rel):
        raise ValueError(f"its {what} {str(rel)[:120]!r} is not a path inside the prefix")
    return rel


def _checked(journal: dict[str, Any]) -> None:
    """Every path JOURNAL names (its moves, its folders, its areas) inside the prefix, or ValueError."""
    for key in ("staging", "backup", "manifest"):
        if key in journal:
            _within(journal[key], key)
    for key in ("created_folders", "areas", "on_commit_remove"):
        for rel in journal.get(key) or []:
            _within(rel, key.replace("_", " "))


def _operations(journal: dict[str, Any]) -> list[Operation]:
    _checked(journal)
    ops = []
    for raw in journal.get("operations", []):
        op = Operation(**raw)
        _within(op.dest, "destination")
        if op.source:
            _within(op.source, "source")
        if op.backup:
            _within(op.backup, "backup")
        if journal.get("version", 1) < 2:  # the first journals: paths relative to the state folder
            backup = f"{STATE_DIR}/{journal['backup']}/{op.dest}"
            source = f"{STATE_DIR}/{op.source}" if op.source else None
            op = Operation(op.kind, op.dest, source, op.existed, backup, None)
        ops.append(op)
    return ops


def rollback(prefix: Path, journal: dict[str, Any]) -> None:
    """Play JOURNAL's operations backwards, then delete what the run made. Safe to repeat from
    any point: each move happens only where what it moves is really there."""
    state = prefix / STATE_DIR
    if journal.get("phase") in ("applying", None):
        for op in reversed(_operations(journal)):
            dest, saved = prefix / op.dest, prefix / op.backup
            if op.kind == PUT:
                source = prefix / (op.source or "")
                if not os.path.lexists(source) and os.path.lexists(dest) and _is_ours(dest, op):
                    _move(dest, source)  # it was put: back where it came from
                    step("rollback.unput")
            if os.path.lexists(saved):
                _restore(saved, dest)  # the original comes back
                step("rollback.restore")
        for folder in reversed(journal.get("created_folders", [])):
            try:
                (prefix / folder).rmdir()
            except OSError:
                pass
        step("rollback.folders")
        journal = {**journal, "phase": "rolled-back"}
        write_json_atomic(state / JOURNAL, journal)  # nothing the moves need is deleted before this
        step("rollback.journal")
    _delete_own(prefix, journal, backup=True)
    step("rollback.cleanup")
    (state / JOURNAL).unlink(missing_ok=True)
    step("rollback.done")


def _is_ours(dest: Path, op: Operation) -> bool:
    """Whether DEST is the file OP put there (and not the original, which never left)."""
    if op.inode is None:  # a first-version journal: trust the presence checks
        return True
    return os.lstat(dest).st_ino == op.inode


def finish_committed(prefix: Path, journal: dict[str, Any]) -> None:
    """After the manifest is written (install) or deleted (uninstall): delete our own folders."""
    state = prefix / STATE_DIR
    if journal.get("phase") != "committed":
        journal = {**journal, "phase": "committed"}
        write_json_atomic(state / JOURNAL, journal)
        step("commit.journal")
    _delete_own(prefix, journal, backup=not journal.get("keep_backup", journal.get("kind") == "install"))
    for rel in journal.get("on_commit_remove", []):
        shutil.rmtree(prefix / rel, ignore_errors=True)
    step("commit.cleanup")
    (state / JOURNAL).unlink(missing_ok=True)
    step("commit.done")


def _delete_own(prefix: Path, journal: dict[str, Any], backup: bool) -> None:
    """Delete the staging folder, the areas' staging (and, with BACKUP, the backup or trash)."""
    shutil.rmtree(prefix / journal["staging"] if "/" in journal["staging"]
                  else prefix / STATE_DIR / journal["staging"], ignore_errors=True)
    if backup:
        shutil.rmtree(prefix / journal["backup"] if "/" in journal["backup"]
                      else prefix / STATE_DIR / journal["backup"], ignore_errors=True)
    for area in journal.get("areas", []):
        shutil.rmtree(prefix / area / "staging", ignore_errors=True)
        if backup:
            shutil.rmtree(prefix / area, ignore_errors=True)
        else:
            _remove_if_empty(prefix / area / "backup")
            _remove_if_empty(prefix / area)


def _remove_if_empty(folder: Path) -> None:
    try:
        folder.rmdir()
    except OSError:
        pass


STATE_FILE_LIMIT = 64 << 20  # a journal or manifest lists one line per file of an install: kilobytes in real life


def read_state_json(path: Path) -> Any:
    """The JSON of a state file (journal, manifest), read as a user's file is: a FIFO, a device or a folder where
    it should be is refused at once (ValueError), never waited on or read without end; so is one too big."""
    from cudnn_doctor.json_values import loads

    try:
        data = read_user_file(str(path), STATE_FILE_LIMIT)
    except UnreadableFile as error:
        raise ValueError(str(error)) from None
    import json

    try:  # the one reader of what another program wrote: 5,000 digits kept, depth cut
        return loads(data.decode("utf-8"))
    except RecursionError:  # nested past what the parser goes: no state file a run of ours wrote
        raise ValueError("nested deeper than a JSON reader goes") from None
    except UnicodeDecodeError as error:
        if error.end >= len(data):  # a character cut in two at the file's end
            raise ValueError(f"it ends in the middle of a character after {len(data)} bytes: {CUT_SHORT}") from None
        raise
    except json.JSONDecodeError as error:
        if _ends_early(error):
            raise ValueError(f"its JSON ends before it is whole, after {len(data)} bytes: {CUT_SHORT} "
                             f"({error.msg})") from None
        raise


# a state file our runs write whole (written beside, then renamed), found ended early
CUT_SHORT = ("cut short, as a copy that was interrupted, a disk that filled or a file system that lost its last "
             "writes leaves a file; no run of cudnn-doctor writes one so")


def _ends_early(error: Any) -> bool:
    """Whether the JSON parser stopped because the text ended (it wanted more), not at a wrong character."""
    rest = error.doc[error.pos:].strip()
    return not rest or (error.msg.startswith("Unterminated string") and '"' not in rest[1:]) or \
        any(word.startswith(rest) for word in ("true", "false", "null"))  # a word cut within


def recover(prefix: Path) -> tuple[str | None, bool]:
    """Finish what a killed run left: roll it back, or finish its commit. (A sentence when a
    change was undone, whether that run created the prefix.)"""
    state = prefix / STATE_DIR
    path = state / JOURNAL
    note = None
    created = False
    if path.exists():
        try:
            journal = read_state_json(path)
            if not isinstance(journal, dict) or not isinstance(journal.get("operations", []), list):
                raise ValueError("not a journal")
            _operations(journal)
        except (ValueError, TypeError, KeyError, OSError) as error:
            raise doctor_error("CD509", exit_code=2, file=str(path),
                                 why=f"the journal of an interrupted run: {str(error)[:200]}") from None
        created = bool(journal.get("prefix_created"))
        manifest_exists = (state / journal.get("manifest", "")).is_file()
        phase = journal.get("phase")
        finished = manifest_exists if journal.get("kind") == "install" else not manifest_exists
        if phase == "committed" or (phase in ("applying", None) and finished):
            finish_committed(prefix, journal)
        else:
            moved = phase in ("applying", None)
            rollback(prefix, journal)
            if moved:
                started = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(journal.get("started", 0)))
                note = (f"rolled back an interrupted {journal.get('kind')} (process {journal.get('pid')}, "
                        f"started {started}): {prefix} is as it was before it")
    for leftover in [*state.glob("staging-*"), *state.glob("trash-*"), *state.glob("*.tmp")]:
        if leftover.is_dir():
            shutil.rmtree(leftover, ignore_errors=True)
        else:
            leftover.unlink(missing_ok=True)
    # a backup whose install's record (its manifest) is gone holds the user's files as they were before that install:
    # never deleted here (nothing the user had is lost), said instead
    orphans = orphan_backups(prefix)
    if orphans:
        kept = orphan_note(prefix, orphans)
        note = f"{note}. {kept}" if note else kept
    return note, created


def orphan_backups(prefix: Path) -> list[Path]:
    """The backup folders in PREFIX's state folder whose install has no record (manifest-ID.json) any more."""
    state = prefix / STATE_DIR
    try:
        manifests = {p.stem.removeprefix("manifest-") for p in state.glob("manifest-*.json")}
        return sorted(b for b in state.glob("backup-*") if b.is_dir() and not b.is_symlink()
                      and b.name.removeprefix("backup-") not in manifests)
    except OSError:
        return []


def orphan_note(prefix: Path, orphans: list[Path]) -> str:
    """What a user is told of ORPHANS (orphan_backups): kept, what they hold, and how to put them back."""
    first = orphans[0]
    more = f" (and {len(orphans) - 1} more)" if len(orphans) > 1 else ""
    return (f"the backup {first}{more} holds the files an earlier install into {prefix} replaced, and that "
            f"install's record (its manifest) is missing, so `uninstall` cannot restore them: kept as it is; put "
            f"them back by copying its contents over {prefix} (cp -a {first}/. {prefix}/), or delete it once "
            f"you no longer need them")


def installed_records(prefix: Path) -> tuple[str, ...]:
    """The manifests of the installs recorded in PREFIX (their file names, sorted): what a plan is made from."""
    try:
        return tuple(sorted(name for name in os.listdir(prefix / STATE_DIR)
                            if name.startswith("manifest-") and name.endswith(".json")))
    except OSError:
        return ()


def pending(prefix: Path) -> bool:
    """Whether an interrupted run left a journal that the next install or uninstall finishes."""
    return (prefix / STATE_DIR / JOURNAL).exists()


def tidy_state(prefix: Path, prefix_created: bool) -> None:
    """Remove the state folder when it records nothing (no install, no journal), and the
    prefix when this run (or the run it recovered) created it and left it empty."""
    state = prefix / STATE_DIR
    if state.is_dir() and not any(state.glob("manifest-*.json")) and not (state / JOURNAL).exists() \
            and not orphan_backups(prefix):  # a backup without its record holds the user's files: kept
        shutil.rmtree(state, ignore_errors=True)
    if prefix_created:
        _remove_if_empty(prefix)
