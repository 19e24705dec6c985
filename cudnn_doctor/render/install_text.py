"""The install and uninstall plans and results as text (rich). The only place they are formatted."""

from __future__ import annotations

from rich.console import Console

from cudnn_doctor.install.outcome import Outcome, UninstallPlan
from cudnn_doctor.install.plan import ADD, REMOVE, REPLACE, InstallPlan
from cudnn_doctor.quoting import code_span, command_line
from cudnn_doctor.render.safe import escape
from cudnn_doctor.render.text import fits_one_line, print_command, print_with_commands, print_wrapped

SEVERITY_MARKS = {"error": "[red]✗[/]", "warning": "[yellow]![/]", "info": "[blue]i[/]"}

ACTION_MARKS = {ADD: "[green]+[/]", REPLACE: "[yellow]~[/]", REMOVE: "[red]-[/]", "restore": "[cyan]<[/]"}


def size_text(count: int | None) -> str:
    if count is None:
        return "unknown"
    value = float(count)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{count} B"


def render_plan(plan: InstallPlan, console: Console, verbose: bool = False) -> None:
    p = console.print
    p(f"[bold]Plan[/]: cuDNN {escape(plan.version or '(version unknown)')}"
      f"{f' for CUDA {escape(plan.cuda_major)}' if plan.cuda_major else ''} ({escape(plan.platform)}) into {escape(plan.prefix)}")
    p(f"  from {escape(plan.source)}")
    for line in plan.current:
        p(f"  now in the prefix: cuDNN {escape(line)}")
    if plan.plan_only:
        p(f"  [yellow]![/] {escape(plan.plan_only)}")
    counts = ", ".join(f"{plan.count(a)} {word}" for a, word in ((ADD, "new"), (REPLACE, "replaced"),
                                                                  (REMOVE, "removed")))
    p(f"  files: {counts}; space needed {size_text(plan.bytes_needed)}, free {size_text(plan.bytes_free)}")
    for folder in plan.created_folders:
        p(f"    [green]+[/] {escape(folder if folder != '.' else plan.prefix)}/ (new folder)")
    shown = [c for c in plan.changes if verbose or c.action != ADD or c.kind == "file"]
    for change in shown:
        link = f" -> {escape(change.target)}" if change.target else ""
        size = f"  ({size_text(change.size)})" if change.kind == "file" and change.size else ""
        p(f"    {ACTION_MARKS[change.action]} {escape(change.path)}{link}{size}")
    hidden = len(plan.changes) - len(shown)
    if hidden:
        p(f"    ... and {hidden} new links (-v lists them)")
    for replaced in plan.replaced_majors:
        p(f"    [red]-[/] cuDNN {replaced}: every file of it is replaced (--replace); uninstall brings it back")
    for other in plan.other_majors:
        p(f"    = {escape(other)} stays (another cuDNN major; programs built for it still need it)")
    if plan.count(REPLACE) or plan.count(REMOVE):
        print_with_commands(console, "", "every replaced or removed file is backed up; this restores them: "
                                         + code_span(command_line(("cudnn-doctor", "uninstall", "--prefix",
                                                                 plan.prefix))), 2)
    if plan.loader == "ldconfig":
        p(f"  loader: {escape(plan.library_folder)} is a system folder: ldconfig runs after the install")
    else:
        say = "  loader: not a system folder; programs find it with:"
        if fits_one_line(console, f"{say} {plan.env_line}"):
            p(f"{say} [bold]{escape(plan.env_line)}[/]")
        else:  # a narrow terminal: the command on its own line, unbroken
            p(say)
            print_command(console, plan.env_line, 6)
    for finding in plan.fits:
        print_wrapped(console, f"{SEVERITY_MARKS.get(finding.severity, '!')} {finding.code} {escape(finding.title)}: "
                               f"{escape(finding.detail)}", 2, 6)
        print_with_commands(console, "[bold]Fix:[/] ", finding.fix, 6)
    if plan.machine:
        p(f"  this machine: {escape(plan.machine)}")
        checked = [what for what, missing in (("driver", "driver"), ("toolkit", "toolkit"), ("GPU", "GPU"))
                   if not any(missing in u for u in plan.unchecked)]
        if not plan.fits and plan.version and checked:
            p(f"  [green]✓[/] fits this machine's {', '.join(checked)} (as check judges "
              f"{'it' if len(checked) == 1 else 'them'})")
        if plan.unchecked:
            p(f"  [yellow]?[/] not checked: {', '.join(escape(u) for u in plan.unchecked)}")
    if plan.blocked_folder:
        p(f"  [red]✗[/] {escape(plan.blocked_folder)} is not writable by you: run with sudo, or choose "
          "--prefix ~/.local/cudnn")
    for note in plan.notes:
        p(f"  [blue]i[/] {escape(note)}")


def render_uninstall_plan(plan: UninstallPlan, console: Console) -> None:
    p = console.print
    p(f"[bold]Plan[/]: uninstall cuDNN {escape(plan.version or '?')} (installed {escape(plan.installed_at)}) from "
      f"{escape(plan.prefix)}")
    for change in plan.changes:
        p(f"    {ACTION_MARKS.get(change.action, ' ')} {escape(change.path)}"
          f"{' (restored from the backup)' if change.action == 'restore' else ''}")
    for path in plan.changed_since:
        p(f"    [yellow]![/] {escape(path)} changed since the install")
    for folder in plan.folders_removed:
        shown = plan.prefix if folder == "." else folder
        p(f"    [red]-[/] {escape(shown)}/ (folder the install created, if empty)")


def render_outcome(outcome: Outcome, console: Console) -> None:
    p = console.print
    for note in outcome.notes:
        p(f"[blue]i[/] {escape(note)}")
    if outcome.status == "planned":
        p("[bold]Dry run[/]: nothing was changed.")
    elif outcome.status == "declined":
        p("Nothing was changed.")
    elif outcome.status == "nothing-to-do":
        if outcome.command == "install":
            return  # its note said it all: already installed, nothing changed
        p("Nothing to uninstall: no install is recorded in this prefix.")
    elif outcome.status == "installed" and outcome.installed is not None:
        installed = outcome.installed
        p(f"[green]✓[/] installed cuDNN {escape(installed.version)} (built for CUDA {escape(installed.cuda_version)}) in "
          f"{escape(installed.path)}: check loads it, and each sub-library loads")
        p(f"  manifest: {escape(outcome.manifest or '')}")
        if outcome.loader:
            said, colon, command = outcome.loader.partition(": export ")
            if colon and not fits_one_line(console, f"  {outcome.loader}"):  # the command whole, on its own line
                print_wrapped(console, escape(said + ":"), 2)
                print_command(console, "export " + command, 6)
            else:
                print_wrapped(console, escape(outcome.loader), 2)
    elif outcome.status == "uninstalled":
        p(f"[green]✓[/] uninstalled; {len(outcome.actions)} files removed or restored")
