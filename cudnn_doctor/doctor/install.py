"""`cudnn-doctor install`: resolve, fetch, stage, plan, confirm, apply, verify, record."""

from __future__ import annotations

import errno
import os
import zipfile
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, TypeVar

from cudnn_doctor.codes import doctor_error
from cudnn_doctor.errors import DoctorError
from cudnn_doctor.install import sources
from cudnn_doctor.install.archive import ArchiveContents, read_archive
from cudnn_doctor.install.faults import step
from cudnn_doctor.install.ldconfig import loader_setup, run_ldconfig
from cudnn_doctor.install.manifest import BackedUpFile, InstallRecord, WrittenFile, now_text, write_record
from cudnn_doctor.install.outcome import Outcome, UninstallPlan
from cudnn_doctor.install.plan import ADD, REMOVE, REPLACE, InstallPlan, build_plan, first_blocked_folder
from cudnn_doctor.install.progress import Progress
from cudnn_doctor.install.safety import printable
from cudnn_doctor.install.transaction import STATE_DIR, Transaction, installed_records, pending, recover
from cudnn_doctor.knowledge.layout import OS_NAMES, Layout, layout_for
from cudnn_doctor.probes.context import SearchContext
from cudnn_doctor.variables import expand_user
from cudnn_doctor.versions import major


@dataclass(frozen=True)
class InstallOptions:
    location: str | None = None
    version: str | None = None
    cuda_major: int | None = None
    mirror: str | None = None
    sha256: str | None = None
    prefix: str | None = None
    os_name: str | None = None
    dry_run: bool = False
    yes: bool = False
    no_verify: bool = False
    replace_majors: bool = False  # --replace: another cuDNN major in the prefix goes, backed up
    force: bool = False  # --force: a cuDNN for another CUDA major than the prefix's toolkit goes in anyway


@dataclass(frozen=True)
class Ui:
    """How the command talks to the user; the CLI fills it in (text or JSON)."""

    show_plan: Callable[[InstallPlan | UninstallPlan], None]
    confirm: Callable[[str], bool]
    note: Callable[[str], None]
    progress: bool  # show progress bars
    can_ask: bool = True  # a terminal to ask on: without one, a run without --yes stops before any work


def run_install(options: InstallOptions, ui: Ui) -> Outcome:
    ctx = SearchContext.from_environment()
    os_name = options.os_name or ctx.os_name
    if os_name not in OS_NAMES:
        raise DoctorError(f"unknown --os {os_name!r}", f"use one of: {', '.join(OS_NAMES)}", exit_code=2, code="CD001")
    layout = layout_for(os_name, ctx.arch)
    if layout is None:
        raise DoctorError(f"NVIDIA ships no cuDNN for {os_name} on {ctx.arch}", exit_code=2, code="CD008")
    plan_only = layout.plan_only
    if plan_only is None and os_name != ctx.os_name:
        plan_only = f"planning for {os_name} on a {ctx.os_name} machine: nothing is installed"
    from cudnn_doctor.install.sources import is_url, readable_archive

    if options.location and not is_url(options.location) and not options.location.startswith("file://"):
        readable_archive(os.path.abspath(expand_user(options.location)), options.location)  # bad input first
    if not (options.yes or options.dry_run or plan_only or ui.can_ask):  # said now, not after unpacking 470 MB
        raise DoctorError("nothing was done: the install needs a yes, and there is no terminal to ask",
                          "add --yes (or --dry-run to only see the plan)", exit_code=2, code="CD002")
    prefix = _prefix(options, ctx, os_name)
    check_prefix(prefix, layout)
    report = _probe(ctx, prefix) if os_name == ctx.os_name else None
    default_cuda = _default_cuda(report, prefix)
    request = sources.Request(options.location, options.version, options.cuda_major, options.mirror, options.sha256,
                              options.no_verify)
    from cudnn_doctor.cache import cache_dir
    from cudnn_doctor.install.download import session

    source = sources.resolve(request, layout.platform, session, default_cuda)
    if not (options.dry_run or plan_only or pending(prefix)):
        already = _already_installed(prefix, source)  # before a download: the name says which archive it is
        if already is not None:
            return already
    if source.warning:
        ui.note(f"warning: {source.warning}")
    if source.url is not None and not source.url.startswith("file:"):
        with Progress(ui.progress) as bars:
            source = sources.fetch(source, session, cache_dir(), bars.task(f"download {source.name}", source.size))
    else:
        source = sources.fetch(source, session, cache_dir(), None)
    archive = source.path or ""
    notes = (plan_only,) if plan_only else ()
    if options.dry_run or plan_only:
        contents = _read(archive, layout, None, ui)
        plan = _plan(contents, prefix, layout, source, report, notes + (
            ("an interrupted install is pending: the next install or uninstall rolls it back first",)
            if pending(prefix) else ()), replace_majors=options.replace_majors)
        if not plan_only:
            plan = _fits_prefix(plan, contents, layout, report, options, None)
        ui.show_plan(plan)
        return Outcome("install", "planned", plan, notes=notes)
    recovered: tuple[str, ...] = ()
    if pending(prefix):  # finish an interrupted run first, so that the plan shows the prefix as it really is
        recovered = _changing(prefix, layout, ui, lambda: _recover(prefix))
        for note in recovered:
            ui.note(note)
        # the interrupted run undone may be an uninstall of this very archive: installed again, as it was
        already = _already_installed(prefix, source)
        if already is not None:
            return replace(already, notes=recovered + already.notes)
        report = _probe(ctx, prefix) if report is not None else None
    blocked = first_blocked_folder(prefix, [prefix / f for f in layout.folders.values()])
    if blocked:
        raise permission_error(blocked, prefix, layout)
    return _changing(prefix, layout, ui, lambda: _stage_and_apply(options, ui, ctx, layout, prefix, source, report,
                                                                  recovered))


def _stage_and_apply(options: InstallOptions, ui: Ui, ctx: SearchContext, layout: Layout, prefix: Path,
                     source: sources.Source, report, recovered: tuple[str, ...]) -> Outcome:  # type: ignore[no-untyped-def]
    """Read the archive once, into the transaction's private staging (every member checked, the
    first bad one refuses the whole and the staging goes); plan from what was staged, show it, and
    only on a yes move it into place. Nothing of the user's changes before the yes."""
    from cudnn_doctor.install.plan import free_bytes

    free_before = free_bytes(prefix)
    _refuse_from_name(prefix, layout, source, options, report)
    notes = list(recovered)
    records = installed_records(prefix)  # what the plan sees; another run's install since then is CD510
    if records:  # an earlier install's record unreadable (cut short, damaged): refused as uninstall refuses it, before
        from cudnn_doctor.install.manifest import read_records  # anything moves, where installing over it would
        read_records(prefix)  # back up that install's files under a record whose own backups nothing could restore
    shown = None
    if not options.yes and zipfile.is_zipfile(source.path or ""):
        # a wheel or zip is listed in a moment (its directory, each library's ELF header): the plan and the
        # question come before its 665 MB are unpacked, as --dry-run shows it; the unpacked plan is asked about
        # again only where it differs
        listed = _read(source.path or "", layout, None, ui)
        shown = replace(_plan(listed, prefix, layout, source, report, (), new_prefix=not os.path.lexists(prefix),
                              replace_majors=options.replace_majors), bytes_free=free_before)
        shown = _fits_prefix(shown, listed, layout, report, options, None)
        ui.show_plan(shown)
        if not ui.confirm("Install?"):
            return Outcome("install", "declined", shown, notes=tuple(notes), exit_code=1)
    with Transaction(prefix, "install", folders=sorted(set(layout.folders.values())), expect_records=records) as txn:
        if txn.recovered:
            notes.append(txn.recovered)
            ui.note(txn.recovered)
        contents = _read(source.path or "", layout, txn.staging_path, ui, SpaceBudget(prefix))
        plan = replace(_plan(contents, prefix, layout, source, report, (), new_prefix=txn.prefix_created,
                             replace_majors=options.replace_majors), bytes_free=free_before)
        plan = _fits_prefix(plan, contents, layout, report, options, txn)
        if shown is None or _changes(shown) != _changes(plan):
            ui.show_plan(plan)
            if not options.yes and not ui.confirm("Install?"):
                return Outcome("install", "declined", plan, notes=tuple(notes), exit_code=1)
        step("install.confirmed")
        return _apply(txn, ctx, prefix, plan, tuple(notes))


def _changes(plan: InstallPlan) -> list[tuple[str, str]]:
    return [(change.path, change.action) for change in plan.changes]


def _already_installed(prefix: Path, source: sources.Source) -> Outcome | None:
    """The same archive installed into PREFIX before, every file it wrote still there as written (its manifest's
    size and sha256): nothing to do, said as such, where a reinstall would rewrite every file."""
    import hashlib

    from cudnn_doctor.install.manifest import read_records

    try:
        records = read_records(prefix)
    except (OSError, ValueError, DoctorError):
        return None
    last = records[-1] if records else None
    if last is None or os.path.basename(last.archive) != source.name:
        return None
    for written in last.files:
        path = prefix / written.path
        if written.kind == "symlink":
            if not path.is_symlink() or os.readlink(path) != written.target:
                return None
            continue
        try:
            if path.is_symlink() or path.stat().st_size != written.size:
                return None
            digest = hashlib.sha256()
            with path.open("rb") as stream:
                for block in iter(lambda: stream.read(1 << 22), b""):  # noqa: B023 - read at once, in this loop
                    digest.update(block)
        except OSError:
            return None
        if written.sha256 and digest.hexdigest() != written.sha256:
            return None
    note = (f"cuDNN {last.version or ''} from {source.name} is already installed in {prefix} (installed "
            f"{last.installed_at}; every file it wrote is there unchanged): nothing was changed")
    return Outcome("install", "nothing-to-do", None, notes=(" ".join(note.split()),))


def _recover(prefix: Path) -> tuple[str, ...]:
    with Transaction(prefix, "install") as txn:
        return (txn.recovered,) if txn.recovered else ()


T = TypeVar("T")


def _changing(prefix: Path, layout: Layout, ui: Ui, change: Callable[[], T]) -> T:
    """Run CHANGE (which changes the prefix in a Transaction): its failures as one line each."""
    try:
        return change()
    except PermissionError as error:
        raise permission_error(os.path.dirname(error.filename or "") or str(prefix), prefix, layout) from None
    except OSError as error:
        if error.errno in (errno.ENOSPC, errno.EDQUOT):
            raise doctor_error("CD507", exit_code=1, path=str(prefix), free="too little",
                                 needed=f"more ({error.strerror} while writing {error.filename or 'a file'}; "
                                        "rolled back)") from None
        raise rolled_back(prefix, error) from None
    except KeyboardInterrupt:  # said as the transaction left it: the signal may come after its commit
        from cudnn_doctor.install.transaction import outcome_of

        outcome = outcome_of(prefix)
        if outcome == "committed":
            ui.note(f"interrupted after the install was recorded: {prefix} holds it whole "
                    "(cudnn-doctor uninstall undoes it)")
        else:
            ui.note(f"interrupted: the install was rolled back, {prefix} is as it was")
        raise


def _apply(txn: Transaction, ctx: SearchContext, prefix: Path, plan: InstallPlan, notes: tuple[str, ...]) -> Outcome:
    """Move the staged files into place (backing up what they replace), verify, record; in TXN."""
    operations = [txn.put(c.path, txn.staging_rel(c.path), c.action == REPLACE)
                  for c in plan.changes if c.action != REMOVE]
    operations += [txn.take(c.path) for c in plan.changes if c.action == REMOVE]
    txn.apply(operations, [f for f in plan.created_folders if f != "."])
    from cudnn_doctor.doctor.install_verify import probe, verify_installed

    installed = verify_installed(probe(ctx, str(prefix)), plan.library_folder, plan.version, plan.major)
    step("verify")
    saved = {op.dest: op.backup for op in operations}
    record = InstallRecord(
        id=txn.id, installed_at=now_text(), source=plan.source, archive=plan.archive, version=plan.version,
        platform=plan.platform, prefix=str(prefix),
        files=tuple(WrittenFile(c.path, c.kind, c.sha256, c.size, c.mode, c.target)
                    for c in plan.changes if c.action != REMOVE),
        backed_up=tuple(BackedUpFile(c.path, c.action, saved[c.path]) for c in plan.changes
                        if c.action in (REPLACE, REMOVE)),
        # "." when the install created the prefix itself
        created_folders=(".",) * txn.prefix_created + tuple(f for f in plan.created_folders if f != "."),
        areas=tuple(sorted(txn.areas.values())),
    )
    manifest_path: list[Path] = []
    txn.commit(lambda: manifest_path.append(write_record(prefix, record)))
    loader = run_ldconfig() if plan.loader == "ldconfig" else f"programs find it with: {plan.env_line}"
    return Outcome("install", "installed", plan, actions=tuple(txn.done), manifest=str(manifest_path[0]),
                   installed=installed, loader=loader, notes=notes)


def _forced_note(prefix: Path, source: sources.Source, options: InstallOptions) -> str | None:
    """Before anything is staged: CD519 when the archive's name says it is built for another CUDA major
    than the toolkit in the prefix (without --force); the plan's note with it."""
    from cudnn_doctor.doctor.install_fit import refuse_other_cuda, version_in_name

    return refuse_other_cuda(prefix, version_in_name(source.name), source.cuda_major, source.path or source.name,
                             options.force)


def _refuse_from_name(prefix: Path, layout: Layout, source: sources.Source, options: InstallOptions,
                      report) -> None:  # type: ignore[no-untyped-def]
    """What the archive's name already tells refuses it before a byte is decompressed (the staged
    files are judged again once read)."""
    from cudnn_doctor.doctor.install_fit import refuse_other_major, version_in_name

    _forced_note(prefix, source, options)
    version = version_in_name(source.name)
    if not options.replace_majors and version:
        refuse_other_major(prefix, layout, major(version), version,
                           _current_majors(report, str(prefix / layout.library_folder)))


def _fits_prefix(plan: InstallPlan, contents: ArchiveContents, layout: Layout, report,  # type: ignore[no-untyped-def]
                 options: InstallOptions, txn: Transaction | None) -> InstallPlan:
    """Refuse what would leave a state `check` calls an error: a cuDNN for another CUDA major than the
    toolkit in the prefix (CD519, unless --force), another cuDNN major beside it (CD518, unless --replace)."""
    from cudnn_doctor.doctor.install_fit import refuse_other_cuda, refuse_other_major, staged_cuda_major

    if plan.cuda_major is None and txn is not None:  # the name did not say: ask the staged library
        plan = replace(plan, cuda_major=staged_cuda_major(contents, txn.staging_path))
    forced = refuse_other_cuda(Path(plan.prefix), contents.version, plan.cuda_major, plan.archive, options.force)
    if not options.replace_majors:
        refuse_other_major(Path(plan.prefix), layout, plan.major, plan.version, _current_majors(report, plan.library_folder))
    return replace(plan, notes=plan.notes + ((forced,) if forced else ()))


def _current_majors(report, library_folder: str) -> dict[int, str]:  # type: ignore[no-untyped-def]
    from cudnn_doctor.doctor.install_verify import installs_in

    return {i.major: i.version for i in (installs_in(report, library_folder) if report else []) if i.major and i.version}


class SpaceBudget:
    """Refuses a staged file the moment the files staged on its filesystem add up to more than that
    filesystem had free when staging began (sizes from each member's header, before its bytes)."""

    def __init__(self, prefix: Path) -> None:
        self.prefix = prefix
        self.devices: dict[int, tuple[Path, int, int]] = {}  # device -> (a folder on it, free at start, staged)

    def __call__(self, folder: Path, size: int) -> None:
        import shutil

        device = os.stat(folder).st_dev
        if device not in self.devices:
            self.devices[device] = (folder, shutil.disk_usage(folder).free, 0)
        where, free, staged = self.devices[device]
        staged += size
        self.devices[device] = (where, free, staged)
        if staged > free:
            from cudnn_doctor.render.install_text import size_text

            shown = Path(str(where).split(f"{os.sep}.cudnn-doctor")[0])  # the user's folder, not our staging
            raise space_error(shown, size_text(free), f"at least {size_text(staged)} (nothing was changed)")


def space_error(path: Path, free: str, needed: str) -> DoctorError:
    return doctor_error("CD507", exit_code=1, path=str(path), free=free, needed=needed)


def _read(archive: str, layout: Layout, staging: Callable[[str], Path] | None, ui: Ui,
          reserve: Callable[[Path, int], None] | None = None) -> ArchiveContents:
    size = os.path.getsize(archive)
    step("archive.read")  # once per install: the archive is decompressed in one pass
    with Progress(ui.progress) as bars:
        return read_archive(archive, layout, staging, bars.task("extract" if staging else "read", size), reserve)


def _plan(contents: ArchiveContents, prefix: Path, layout: Layout, source: sources.Source, report,  # type: ignore[no-untyped-def]
          notes: tuple[str, ...], new_prefix: bool = False, replace_majors: bool = False) -> InstallPlan:
    from cudnn_doctor.doctor.install_verify import fit_findings, installs_in, unchecked

    library_folder = str(prefix / layout.library_folder)
    cuda_major = source.cuda_major
    plan = build_plan(contents, prefix, layout, source.description, cuda_major,
                      loader_setup(library_folder, layout), notes, new_prefix, replace_majors)
    if report is None:
        return plan
    current = tuple(f"{i.version or 'of unknown version'} ({os.path.relpath(i.library, prefix)})"
                    for i in installs_in(report, library_folder))
    from cudnn_doctor.plan.fixes import advised

    fits = advised(fit_findings(report, library_folder, contents.version, contents.major, cuda_major))
    return replace(plan, current=current, fits=tuple(fits), machine=_machine(report, prefix),
                   unchecked=tuple(unchecked(report)))


def _machine(report, prefix: Path) -> str:  # type: ignore[no-untyped-def]
    """One line: the driver, toolkit and GPUs the plan was judged against."""
    driver = (f"driver {report.driver.version} (CUDA {report.driver.cuda_driver_version})"
              if report.driver.cuda_driver_version else "no NVIDIA driver")
    real = os.path.realpath(prefix)
    toolkit = next((t for t in report.toolkits if os.path.realpath(t.path) == real), None)
    toolkit_text = (f"CUDA {toolkit.version} toolkit at the prefix" if toolkit else
                    f"CUDA {report.toolkits[0].version} toolkit at {report.toolkits[0].path}" if report.toolkits
                    else "no CUDA toolkit")
    gpus = ", ".join(f"{g.name} (compute {g.compute_capability})" for g in report.gpus) or "no GPU"
    return f"{driver}; {toolkit_text}; {gpus}"


def _prefix(options: InstallOptions, ctx: SearchContext, os_name: str) -> Path:
    if options.prefix is not None:
        return prefix_path(options.prefix)
    if os_name != ctx.os_name:
        raise DoctorError(f"--os {os_name} needs --prefix: the toolkit folder on that machine", exit_code=2, code="CD002")
    from cudnn_doctor.probes.toolkit import discover_toolkits

    toolkits, _ = discover_toolkits(ctx)
    if not toolkits:
        raise DoctorError("no CUDA toolkit found to install into (check finds none)",
                          "pass --prefix DIR, e.g. --prefix ~/.local/cudnn", exit_code=2, code="CD008")
    return Path(toolkits[0].path)


def prefix_path(text: str) -> Path:
    """--prefix as an absolute path; empty or blank (an unset shell variable) is a usage error."""
    if not text.strip() or "\0" in text:
        raise DoctorError(f"--prefix {text!r} is empty: give the folder to install into",
                          "for example --prefix ~/.local/cudnn (is a shell variable unset?)", exit_code=2, code="CD001")
    path = os.path.abspath(expand_user(text))
    if len(path.encode("utf-8", "surrogateescape")) > 3000 or any(
            len(part.encode("utf-8", "surrogateescape")) > 255 for part in path.split(os.sep)):
        raise DoctorError(f"--prefix {printable(text[:60])}...: a name in it is too long for a file system",
                          exit_code=2, code="CD001")
    return Path(path)


def check_prefix(prefix: Path, layout: Layout) -> None:
    """The prefix, its state folder and the layout's folders must be folders (or not exist yet)."""
    def unusable(path: Path, why: str, fix: str) -> DoctorError:
        return doctor_error("CD514", exit_code=2, path=str(path), why=why, fix=fix)

    existing = prefix
    while not os.path.lexists(existing) and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        raise unusable(existing, "it is a file, not a folder" if existing == prefix else
                       "a part of the path is a file, not a folder", "give a folder (or a path that does not "
                       "exist yet) to --prefix")
    state = prefix / STATE_DIR
    if state.is_symlink():  # its clean-up deletes what it does not recognise: never in someone else's folder
        raise unusable(state, f"it is a link (to {os.readlink(state)}), but cudnn-doctor's state folder must be a "
                       "folder of its own in the prefix", "remove the link")
    for rel in [STATE_DIR, *sorted(set(layout.folders.values()))]:
        parts = rel.split("/")
        for depth in range(1, len(parts) + 1):
            path = prefix.joinpath(*parts[:depth])
            if path.is_symlink() and not path.exists():
                raise unusable(path, f"it is a link to {os.readlink(path)}, which does not exist",
                               "create the folder it points to, or remove the link")
            if os.path.lexists(path) and not path.is_dir():
                what = "cudnn-doctor's state folder" if rel == STATE_DIR else "a folder the install writes to"
                raise unusable(path, f"it is a file, but it must be {what}", "move the file away")


def _probe(ctx: SearchContext, prefix: Path):  # type: ignore[no-untyped-def]
    from cudnn_doctor.doctor.install_verify import probe

    return probe(ctx, str(prefix))


def _default_cuda(report, prefix: Path) -> int | None:  # type: ignore[no-untyped-def]
    """The CUDA major to pick from a manifest: the toolkit's at the prefix, else the driver's."""
    if report is None:
        return None
    real = os.path.realpath(prefix)
    for toolkit in report.toolkits:
        if os.path.realpath(toolkit.path) == real and major(toolkit.version):
            return major(toolkit.version)
    return major(report.driver.cuda_driver_version)


def permission_error(folder: str, prefix: Path, layout: Layout, uninstall: bool = False) -> DoctorError:
    """FOLDER cannot be written: on a read-only file system (a container's image, a read-only mount: no user, root
    included, may write there, so sudo is no answer) that is said; otherwise permission (CD503: sudo, or a prefix in
    the home)."""
    if _read_only(folder):
        return DoctorError(f"{printable(folder)} is on a read-only file system; nothing was changed",
                           fix="remount it read-write to uninstall; sudo does not help" if uninstall else
                           "give --prefix a folder on a file system mounted read-write (a volume, your home), or "
                           "remount this one read-write; sudo does not help", exit_code=1, code="CD006")
    return doctor_error("CD503", exit_code=1, path=f"{folder} (nothing was changed)")


def _read_only(folder: str) -> bool:
    """Whether FOLDER (or the nearest folder of it that exists) is on a file system mounted read-only."""
    from cudnn_doctor.install.plan import nearest_existing

    try:
        return bool(os.statvfs(nearest_existing(Path(folder))).f_flag & os.ST_RDONLY)
    except (OSError, ValueError, AttributeError):
        return False


def rolled_back(prefix: Path, error: OSError) -> DoctorError:
    """Any other failure of the file system while the prefix changed: it was put back as it was."""
    from cudnn_doctor.limits import limit_stopped

    where = f" ({printable(str(error.filename))})" if error.filename else ""
    stopped = limit_stopped(error)  # a limit of the process (ulimit -f, -n): named, with the line that lifts it
    if stopped is not None:
        return doctor_error("CD504", exit_code=1, prefix=str(prefix), why=f"{error.strerror or error}{where}: "
                            f"{stopped[0].removeprefix('cudnn-doctor stopped: ')}", fix=stopped[1])
    return doctor_error("CD504", exit_code=1, prefix=str(prefix), why=f"{error.strerror or error}{where}",
                          fix="fix the cause above and run the command again")


__all__ = ["ADD", "InstallOptions", "Ui", "recover", "run_install"]


def run_transaction(command: str, action: Callable[[Ui], Any], json_output: bool, verbose: bool,
                    ask: Callable[[str], bool]) -> None:
    """install/uninstall: the plan shown (text) or kept (JSON), a question on a terminal (ASK), one outcome;
    ends with SystemExit(status)."""
    import sys

    from cudnn_doctor.install.outcome import UninstallPlan, failure_to_json, outcome_to_json
    from cudnn_doctor.render import install_text as render
    from cudnn_doctor.render.console import console as make_console
    from cudnn_doctor.render.json_out import write_json
    from cudnn_doctor.streams import log_line

    console = make_console(stderr=json_output)  # a closed stdout ends quietly, as in every command
    shown: list[Any] = []

    def show_plan(plan: Any) -> None:
        shown.append(plan)
        if json_output:
            return
        if isinstance(plan, UninstallPlan):
            render.render_uninstall_plan(plan, console)
        else:
            render.render_plan(plan, console, verbose)

    def confirm(question: str) -> bool:
        if not sys.stdin.isatty():
            raise DoctorError("nothing was changed: the plan needs a yes, and there is no terminal to ask",
                              "add --yes (or --dry-run to only see the plan)", exit_code=2, code="CD002")
        return ask(question)

    def note(text: str) -> None:
        make_console(stderr=True).print(log_line(f"cudnn-doctor: {text}"), markup=False)  # piped: one line

    ui = Ui(show_plan=show_plan, confirm=confirm, note=note, progress=not json_output and sys.stderr.isatty(),
            can_ask=sys.stdin.isatty())
    try:
        outcome = action(ui)
    except DoctorError as error:
        if json_output:
            write_json(failure_to_json(command, error, shown[-1] if shown else None))
        from cudnn_doctor.install.safety import printable

        # paths and names in the message are the user's or an archive's: no escape code reaches the terminal
        error.message, error.fix = printable(error.message), printable(error.fix) if error.fix else error.fix
        raise
    if json_output:
        write_json(outcome_to_json(outcome))
    else:
        render.render_outcome(outcome, console)
    raise SystemExit(outcome.exit_code)
