"""Environment changes as the lines that make them, in each shell the user may source them from."""

from __future__ import annotations

import base64
import functools
import os
import re
from collections.abc import Mapping
from typing import Any, Union

from cudnn_doctor import quoting
from cudnn_doctor.plan.actions import EDIT, ENV, EnvChange, Plan
from cudnn_doctor.versions import ascii_digits

SHELLS = ("bash", "zsh", "fish", "powershell")
# Windows: the session's PATH in PowerShell and cmd, and the user's own PATH for every program started after
# (the registry's HKCU\Environment, as System Properties > Environment Variables edits it)
WINDOWS_SHELLS = ("powershell", "cmd", "user")
SHELL_NAMES = tuple(dict.fromkeys(SHELLS + WINDOWS_SHELLS))


def command_line(argv: tuple[str, ...], shell: str = "bash") -> str:
    return quoting.command_line(argv, shell)


def folders_after(changes: tuple[EnvChange, ...], current: list[str], variable: str = "LD_LIBRARY_PATH") -> list[str]:
    """VARIABLE's folders once CHANGES are made to CURRENT (its folders now)."""
    folders = list(current)
    for change in changes:
        if change.variable != variable:
            continue
        same = _same_windows_folder if change.system == "windows" else _same_folder
        if change.op == "remove":
            folders = [f for f in folders if not same(f, change.folder)]
        elif change.op == "prepend":
            folders = [change.folder] + [f for f in folders if not same(f, change.folder)]
    return folders


def _same_folder(a: str, b: str) -> bool:
    return a.rstrip("/") == b.rstrip("/")


def _same_windows_folder(a: str, b: str) -> bool:
    """Windows' folder names: either slash, any case."""
    return a.replace("/", "\\").rstrip("\\").lower() == b.replace("/", "\\").rstrip("\\").lower()


Folders = Union[list[str], Mapping[str, list[str]]]  # the loader's folders, or each list variable's (Report's)


def _folders_of(current: Folders, variable: str) -> list[str] | None:
    """VARIABLE's folders now: from CURRENT where it names each variable's (None where it does not name this one);
    a plain list is the loader's path variable's."""
    if isinstance(current, Mapping):
        found = current.get(variable)
        return list(found) if found is not None else None
    return list(current)


def folders_of(report: Any) -> Folders:
    """What REPORT read of each list variable (its variable_folders); a report without them (one built by hand):
    its loader path's folders, as every line was written before."""
    found = getattr(report, "variable_folders", None)
    return found if found else list(getattr(report, "ld_library_path", None) or [])


def env_lines(changes: tuple[EnvChange, ...], current: Folders, shell: str = "bash") -> list[str]:
    """The lines that make CHANGES in SHELL. A removal writes the exact new value (read from this machine's
    variable: CURRENT, the report's variable_folders); a plain prepend keeps whatever the variable holds when the
    line runs. Where SHELL cannot hold a folder's name exactly, or the variable cannot (a ':' in it), or the
    variable's value here is not known, the line is a comment that says why."""
    if changes and changes[0].system == "windows":
        folders = _folders_of(current, changes[0].variable)
        return windows_env_lines(changes, folders or [], shell if shell in WINDOWS_SHELLS else "powershell")
    if shell in ("cmd", "user"):  # Windows' own: they set nothing a Linux program reads
        where = "cmd" if shell == "cmd" else "the Windows environment of the user"
        return [quoting.comment(shell, f"cudnn-doctor wrote no {shell} line for {variable}: {where} does not set the "
                                "environment of a Linux program, use --shell bash, zsh, fish or powershell")
                for variable in dict.fromkeys(c.variable for c in changes)]
    lines = []
    for variable in dict.fromkeys(c.variable for c in changes):
        mine = tuple(c for c in changes if c.variable == variable)
        if mine[-1].op not in ("limit", "shell") and not shell_name_pattern().fullmatch(variable):
            # a name from a program's environment (APP-MODE, a.b) that no shell's unset or export can hold: bash's
            # `unset APP-MODE` says nothing and leaves it set, zsh and fish refuse it
            lines.append(quoting.comment(shell, f"cudnn-doctor wrote no {shell} line for a variable whose name no "
                                                "shell can hold (only letters, digits and _): start the program "
                                                "with env -u and its name"))
            continue
        try:
            if mine[-1].op in WHOLE_VALUE_OPS:  # the last word on a variable that is set, unset or a limit
                lines.append(_whole_value_line(shell, mine[-1]))
                continue
            for change in mine:
                if change.op == "prepend":
                    quoting.check_list_entry(change.folder)
            if all(c.op == "prepend" for c in mine):
                front = ":".join(c.folder for c in reversed(mine))
                lines.append(_prepend(shell, variable, front))
                continue
            now = _folders_of(current, variable)
            if now is None:  # never another variable's value in its place (PATH written as LD_LIBRARY_PATH was)
                lines.append(quoting.comment(shell, f"cudnn-doctor wrote no {shell} line for {variable}: its value "
                                                    "on the machine checked is not known here"))
                continue
            folders = folders_after(mine, now, variable)
            lines.append(_assign(shell, variable, ":".join(folders)) if folders else _unset(shell, variable))
        except quoting.CannotQuote as refusal:
            lines.append(quoting.comment(shell, f"cudnn-doctor wrote no {shell} line for {variable}: {refusal}, "
                                                "rename the folder"))
    return lines


@functools.cache
def shell_name_pattern() -> re.Pattern[str]:
    # a name every shell's export, unset and set -e take
    return re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


WHOLE_VALUE_OPS = ("set", "unset", "limit", "shell")  # EnvChange.folder holds the value for "set" and "limit"
# "shell": a shell's own command (EnvChange.variable, "umask" or "trap") and its words (EnvChange.folder, "022" or
# "- CHLD"): what a shell gives the programs it starts besides its variables (compat/process_start.toml)
SHELL_COMMANDS = ("umask", "trap", "close")


def _whole_value_line(shell: str, change: EnvChange) -> str:
    if change.op == "set":
        return _assign(shell, change.variable, change.folder)
    if change.op == "unset":
        return _unset(shell, change.variable)
    if change.op == "shell" and change.variable == "close":  # descriptors the shell holds: "3-983 990"
        runs = change.folder.split()
        if not runs or not all(ascii_digits(r.replace("-", "", 1)) and not r.startswith("-") for r in runs):
            return quoting.comment(shell, "cudnn-doctor wrote no line for the shell's descriptors")
        if shell not in ("bash", "zsh"):
            return quoting.comment(shell, "in the bash or zsh that starts the program, close the descriptors "
                                          f"{change.folder} (exec N>&- for each)")
        listed = " ".join(f"$(seq {r.replace('-', ' ')})" if "-" in r else r for r in runs)
        return f"for fd in {listed}; do exec {{fd}}>&-; done"  # {fd}>&-: the number fd holds (bash 4.1, zsh)
    if change.op == "shell":
        words = change.folder.split()
        if change.variable not in SHELL_COMMANDS or not all(w.isascii() and (w.isalnum() or w == "-") for w in words):
            return quoting.comment(shell, f"cudnn-doctor wrote no line for the shell's {change.variable}")
        if shell == "powershell":
            return quoting.comment(shell, f"PowerShell starts programs with no such setting: in the Linux shell that "
                                          f"starts the program, {change.variable} {change.folder}")
        return f"{change.variable} {change.folder}"
    option = change.variable.split()[-1]  # "ulimit -v"
    if shell == "powershell":
        return quoting.comment(shell, "PowerShell sets no process limits: in the Linux shell that starts the program, "
                                      f"ulimit -S {option} {change.folder}")
    return f"ulimit -S {option} {change.folder}"


def apply_changes(changes: tuple[EnvChange, ...], env: dict[str, str]) -> dict[str, str]:
    """ENV as a shell that sourced the lines of CHANGES would have it (limits are raised in this process,
    which its children inherit)."""
    env = dict(env)
    listed = tuple(c for c in changes if c.op not in WHOLE_VALUE_OPS)
    if listed:
        for variable in dict.fromkeys(c.variable for c in listed):
            value = env.get(variable, "")  # an empty entry is the working folder to ld.so and the shells: "."
            windows = any(c.system == "windows" for c in listed if c.variable == variable)
            entries = [f for f in value.split(os.pathsep) if f] if windows else \
                [f or "." for f in value.split(os.pathsep)] if value else []
            folders = folders_after(listed, entries, variable)
            if folders:
                env[variable] = os.pathsep.join(folders)  # ':'; ';' on Windows
            else:
                env.pop(variable, None)
    for change in changes:
        if change.op == "set":
            env[change.variable] = change.folder
        elif change.op == "unset":
            env.pop(change.variable, None)
        elif change.op == "limit":
            _raise_soft_limit(change.variable.split()[-1], change.folder)
    return env


def apply_shell_settings(changes: tuple[EnvChange, ...]) -> None:
    """The "shell" changes of CHANGES (umask 022, trap - CHLD) set in this process, as a shell that sourced their
    lines would have them for the programs it starts next (`fix --yes`'s check after, a child of this process)."""
    import signal

    for change in changes:
        if change.op != "shell":
            continue
        if change.variable == "umask" and ascii_digits(change.folder):
            os.umask(int(change.folder, 8))
        elif change.variable == "close":  # the programs started next hold them no more
            from cudnn_doctor.limits import forget

            forget(change.folder)
        elif change.variable == "trap" and change.folder.split()[:1] == ["-"]:
            for name in change.folder.split()[1:]:
                number = getattr(signal, "SIG" + name, None)
                if isinstance(number, signal.Signals):
                    signal.signal(number, signal.SIG_DFL)


def _raise_soft_limit(option: str, value: str) -> None:
    try:
        import resource
    except ImportError:
        return
    names = {"-v": "RLIMIT_AS", "-n": "RLIMIT_NOFILE", "-s": "RLIMIT_STACK", "-t": "RLIMIT_CPU", "-u": "RLIMIT_NPROC",
             "-d": "RLIMIT_DATA"}
    number = getattr(resource, names.get(option, ""), None)
    if number is None:
        return
    soft, hard = resource.getrlimit(number)
    wanted = resource.RLIM_INFINITY if value == "unlimited" else int(value) * (1024 if option in ("-v", "-s", "-d")
                                                                              else 1)
    try:
        resource.setrlimit(number, (wanted, hard))
    except (OSError, ValueError):
        pass


def windows_env_lines(changes: tuple[EnvChange, ...], current: list[str], shell: str) -> list[str]:
    """CHANGES as Windows writes them: folders joined with ';', in PowerShell, cmd or the user's environment. Where
    the shell cannot hold a folder exactly, or a folder would split the list (a ';'), the line is a comment."""
    lines = []
    for variable in dict.fromkeys(c.variable for c in changes):
        mine = tuple(c for c in changes if c.variable == variable)
        if mine[-1].op not in ("limit", "shell") and not shell_name_pattern().fullmatch(variable):
            # a name from a program's environment (APP-MODE, a.b) that no shell's unset or export can hold: bash's
            # `unset APP-MODE` says nothing and leaves it set, zsh and fish refuse it
            lines.append(quoting.comment(shell, f"cudnn-doctor wrote no {shell} line for a variable whose name no "
                                                "shell can hold (only letters, digits and _): start the program "
                                                "with env -u and its name"))
            continue
        try:
            lines.append(_windows_line(shell, variable, mine, current))
        except quoting.CannotQuote as refusal:
            lines.append(quoting.comment(shell, f"cudnn-doctor wrote no {shell} line for {variable}: {refusal}, "
                                                "rename the folder"))
    return lines


def _windows_line(shell: str, variable: str, mine: tuple[EnvChange, ...], current: list[str]) -> str:
    for change in mine:
        if change.op == "prepend" and (";" in change.folder or not change.folder):
            raise quoting.CannotQuote("the folder name holds a semicolon, which splits a list of folders")
    if all(c.op == "prepend" for c in mine):
        front = ";".join(c.folder for c in reversed(mine))
        if shell == "cmd":
            quoting.check_cmd_text(front)
            return f'set "{variable}={front};%{variable}%"'
        if shell == "user":
            return (f"[Environment]::SetEnvironmentVariable({_ps(variable)}, {_ps(front + ';')} + "
                    f"[Environment]::GetEnvironmentVariable({_ps(variable)}, 'User'), 'User')")
        return f"$env:{variable} = {_ps(front + ';')} + $env:{variable}"
    value = ";".join(folders_after(mine, current, variable))
    if shell == "cmd":
        quoting.check_cmd_text(value)
        return f'set "{variable}={value}"' if value else f'set "{variable}="'
    if shell == "user":
        return f"[Environment]::SetEnvironmentVariable({_ps(variable)}, {_ps(value)}, 'User')"
    return f"$env:{variable} = {_ps(value)}"


def _ps(text: str) -> str:
    return quoting.quote(text, "powershell")


def _prepend(shell: str, variable: str, front: str) -> str:
    if shell == "fish":  # its *PATH variables are lists: an empty entry of a set-but-empty one is dropped
        return f"set -gx {variable} {quoting.quote(front, shell)} (string split -n : -- \"${variable}\")"
    if shell == "powershell":
        return f"$env:{variable} = {quoting.quote(front, shell)} + $(if ($env:{variable}) {{ ':' + $env:{variable} }})"
    return f"export {variable}={quoting.quote(front, shell)}${{{variable}:+:${variable}}}"


def _assign(shell: str, variable: str, value: str) -> str:
    if shell == "fish":
        return f"set -gx {variable} {quoting.quote(value, shell)}"
    if shell == "powershell":
        return f"$env:{variable} = {quoting.quote(value, shell)}"
    return f"export {variable}={quoting.quote(value, shell)}"


def _unset(shell: str, variable: str) -> str:
    if shell == "fish":
        return f"set -e {variable}"
    if shell == "powershell":
        return f"Remove-Item Env:{variable} -ErrorAction SilentlyContinue"
    return f"unset {variable}"


def plan_json(plan: Plan, current: Folders) -> dict[str, Any]:
    """The plan's part of `cudnn-doctor/plan/1` (and of the report's `plan`)."""
    actions = []
    for index, action in enumerate(plan.actions, 1):
        entry: dict[str, Any] = {"step": index, "kind": action.kind, "resolves": list(action.resolves),
                                 "why": action.why, "source": action.source}
        if action.argv:
            entry["argv"] = list(action.argv)
        elif action.kind == ENV:
            entry["text"] = "; ".join(env_lines(action.env, current))
            windows = bool(action.env) and action.env[0].system == "windows"
            entry["env"] = {shell: env_lines(action.env, current, shell) for shell in (WINDOWS_SHELLS if windows else SHELLS)}
        else:
            entry["text"] = action.text or ""
            if action.kind == EDIT and action.text:  # JSON text cannot hold a byte that is not UTF-8: these can
                entry["diff_base64"] = base64.b64encode(action.text.encode("utf-8", "surrogateescape")).decode()
        if action.verified is not None:
            entry["verified"] = action.verified
        actions.append(entry)
    data: dict[str, Any] = {"targets": list(plan.targets), "actions": actions}
    if plan.tried is not None:
        data["tried"] = plan.tried
    return data
