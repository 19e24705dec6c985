"""`cudnn-doctor uninstall`: remove exactly what the last install into a prefix wrote, restore what it
replaced, all or nothing (the same transaction as install)."""

from __future__ import annotations

import os
from pathlib import Path

from cudnn_doctor.codes import doctor_error
from cudnn_doctor.doctor.install import Ui, permission_error, prefix_path, rolled_back
from cudnn_doctor.errors import DoctorError
from cudnn_doctor.install.manifest import WrittenFile, read_records
from cudnn_doctor.install.outcome import Outcome, UninstallPlan
from cudnn_doctor.install.plan import REMOVE, FileChange, first_blocked_folder
from cudnn_doctor.install.safety import SYMLINK
from cudnn_doctor.install.transaction import (
    STATE_DIR,
    Transaction,
    installed_records,
    orphan_backups,
    pending,
)


def run_uninstall(prefix_text: str, dry_run: bool, yes: bool, force: bool, ui: Ui) -> Outcome:
    prefix = prefix_path(prefix_text)
    if not prefix.is_dir():
        raise DoctorError(f"no such folder: {prefix}", exit_code=2, code="CD004")
    state = prefix / STATE_DIR
    if state.is_symlink() or (os.path.lexists(state) and not state.is_dir()):
        raise doctor_error("CD514", exit_code=2, path=str(state), why="it is a file or a link, but it must be "
                             "cudnn-doctor's own state folder", fix="move it away")
    if dry_run:
        plan = _uninstall_plan(prefix)
        if plan is None:
            return Outcome("uninstall", "nothing-to-do", None)
        ui.show_plan(plan)
        return Outcome("uninstall", "planned", plan)
    if first_blocked_folder(prefix, []):
        from cudnn_doctor.knowledge.layout import LAYOUTS

        raise permission_error(str(prefix), prefix, LAYOUTS["linux-x86_64"], uninstall=True)
    try:
        return _apply_uninstall(prefix, yes, force, ui)
    except PermissionError as error:
        from cudnn_doctor.knowledge.layout import LAYOUTS

        raise permission_error(os.path.dirname(error.filename or "") or str(prefix), prefix,
                               LAYOUTS["linux-x86_64"], uninstall=True) from None
    except OSError as error:
        raise rolled_back(prefix, error) from None


def _apply_uninstall(prefix: Path, yes: bool, force: bool, ui: Ui) -> Outcome:
    notes: list[str] = []
    state = prefix / STATE_DIR
    if state.is_dir() and (pending(prefix) or not any(state.glob("manifest-*.json"))):
        # finish an interrupted run (or clear what a killed one left) before reading the records
        with Transaction(prefix, "uninstall") as txn:
            if txn.recovered:
                notes.append(txn.recovered)
    expected = installed_records(prefix)  # an install or uninstall by another run since is CD510
    records = read_records(prefix) if state.is_dir() else []
    if not records:
        # files of the user's that no record can put back (the recovery above said where they are and how to put them
        # back): not a clean "nothing to do"
        return Outcome("uninstall", "nothing-to-do", None, notes=tuple(notes),
                       exit_code=1 if orphan_backups(prefix) else 0)
    record = records[-1]
    folders = {os.path.dirname(f.path) for f in record.files} | {os.path.dirname(b.path) for b in record.backed_up}
    with Transaction(prefix, "uninstall", record.file_name, folders=folders,
                     on_commit_remove=[f"{STATE_DIR}/{record.backup_folder}", *record.areas],
                     expect_records=expected) as txn:
        plan = _uninstall_plan(prefix)
        if plan is None:
            return Outcome("uninstall", "nothing-to-do", None, notes=tuple(notes))
        ui.show_plan(plan)
        if plan.changed_since and not force:
            raise doctor_error("CD508", exit_code=1, count=len(plan.changed_since), prefix=str(prefix),
                                 files=", ".join(plan.changed_since[:3]))
        if not yes and not ui.confirm("Uninstall?"):
            return Outcome("uninstall", "declined", plan, notes=tuple(notes), exit_code=1)
        saved = {b.path: record.saved_path(b) for b in record.backed_up}
        operations = [txn.take(c.path) for c in plan.changes if c.action == REMOVE]
        operations += [txn.put(c.path, saved[c.path], os.path.lexists(prefix / c.path))
                       for c in plan.changes if c.action == "restore"]
        txn.apply(operations, [])

        def finish() -> None:
            (prefix / STATE_DIR / record.file_name).unlink()

        txn.commit(finish)
        for folder in reversed(plan.folders_removed):
            if folder != ".":
                _remove_if_empty(prefix / folder)
    if "." in plan.folders_removed:
        _remove_if_empty(prefix)  # after the state folder went (Transaction's exit)
    return Outcome("uninstall", "uninstalled", plan, actions=tuple(txn.done), notes=tuple(notes))


def _remove_if_empty(folder: Path) -> None:
    try:
        folder.rmdir()
    except OSError:
        pass


def _uninstall_plan(prefix: Path) -> UninstallPlan | None:
    records = read_records(prefix) if (prefix / STATE_DIR).is_dir() else []
    if not records:
        return None
    record = records[-1]
    restored = {b.path for b in record.backed_up}
    changes: list[FileChange] = []
    changed: list[str] = []
    for written in record.files:
        path = prefix / written.path
        if not os.path.lexists(path):
            continue
        if path.is_dir() and not path.is_symlink():  # a folder took its place: never removed, even with --force
            changed.append(written.path)
            continue
        if _changed(path, written):
            changed.append(written.path)
        if written.path not in restored:
            changes.append(FileChange(written.path, REMOVE, written.kind, written.size, written.target))
    for backed in record.backed_up:
        saved = prefix / record.saved_path(backed)
        if os.path.lexists(saved):
            changes.append(FileChange(backed.path, "restore", SYMLINK if saved.is_symlink() else "file"))
    return UninstallPlan(str(prefix), record.id, record.version, record.installed_at, tuple(changes), tuple(changed),
                         record.created_folders)


def _changed(path: Path, written: WrittenFile) -> bool:
    if written.kind == SYMLINK:
        return not path.is_symlink() or os.readlink(path) != written.target
    if path.is_symlink() or not path.is_file():
        return True
    if path.stat().st_size != written.size:
        return True
    from cudnn_doctor.install.download import sha256_of

    return written.sha256 is not None and sha256_of(path) != written.sha256
