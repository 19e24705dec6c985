"""Shell completion through argcomplete (pipx's model): the values options take (--format, --dtype, --size, --list,
...), and `--show-completion [SHELL]` / `--install-completion [SHELL]` for bash, zsh, fish or PowerShell.

argcomplete is imported only when a shell asks (`_ARGCOMPLETE` set), and each value list only when the shell asks
for that option's values, so a plain start costs nothing more."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NoReturn

if TYPE_CHECKING:
    from pathlib import Path

SHELLS = ("bash", "zsh", "fish", "powershell", "pwsh")
PROG_NAME = "cudnn-doctor"


def _starting_with(values: Callable[[], tuple[str, ...] | list[str]]) -> Callable[..., list[str]]:
    def complete(prefix: str = "", **_: Any) -> list[str]:  # argcomplete passes action, parser, parsed_args too
        return [value for value in values() if value.startswith(prefix.lower())]

    return complete


def _formats() -> tuple[str, ...]:
    from cudnn_doctor.render.formats import NAMES

    return NAMES


def _bench(name: str) -> Callable[[], tuple[str, ...]]:
    def values() -> tuple[str, ...]:
        from cudnn_doctor.bench import workloads

        return tuple(getattr(workloads, name))

    return values


def _tables() -> list[str]:
    from cudnn_doctor.commands.compat import list_columns

    return list(list_columns())


complete_format = _starting_with(_formats)
complete_dtype = _starting_with(_bench("DTYPES"))
complete_size = _starting_with(_bench("SIZES"))
complete_layout = _starting_with(_bench("LAYOUTS"))
complete_workload = _starting_with(_bench("WORKLOADS"))
complete_api = _starting_with(_bench("APIS"))
complete_table = _starting_with(_tables)
complete_os = _starting_with(lambda: ("linux", "windows", "macos"))


def _shells() -> tuple[str, ...]:
    from cudnn_doctor.plan.shell import SHELL_NAMES

    return tuple(SHELL_NAMES)


complete_shell = _starting_with(_shells)


def complete_code(prefix: str = "", **_: Any) -> list[str]:
    """explain's CODE_OR_MESSAGE: the finding codes (CD3 completes to CD301, CD302, ...)."""
    from cudnn_doctor.codes import CODES

    return [code for code, entry in CODES.items() if not entry.retired and code.startswith(prefix.upper())]


def complete(parser: Any) -> NoReturn:
    """Answer the shell that asks for completions (argcomplete's protocol: `_ARGCOMPLETE`, `COMP_LINE`, `COMP_POINT`;
    the answers on descriptor 8) and end."""
    import argcomplete

    argcomplete.autocomplete(parser, exit_method=sys.exit)
    sys.exit(0)  # argcomplete found nothing to complete


def script(shell: str) -> str:
    """The completion script of SHELL for cudnn-doctor, as argcomplete writes it."""
    from argcomplete import shellcode

    return shellcode([PROG_NAME], shell="powershell" if shell == "pwsh" else shell)


def _shell(named: str, option: str) -> str:
    """The shell NAMED, or the running one when none is named (the parent process, else $SHELL)."""
    from cudnn_doctor.errors import DoctorError

    fix = f"name one of {', '.join(SHELLS)}, or none for the running shell"
    if named:
        if named.lower() not in SHELLS:
            raise DoctorError(f"{option} {named}: not a shell it completes", fix=fix, code="CD001")
        return named.lower()
    from pathlib import Path

    candidates = []
    try:
        candidates.append(Path(f"/proc/{os.getppid()}/comm").read_text().strip())
    except OSError:
        pass
    candidates.append(os.path.basename(os.environ.get("SHELL", "")))
    for candidate in candidates:
        name = candidate.lower().removeprefix("-").removesuffix(".exe")
        if name in SHELLS:
            return name
    raise DoctorError(f"{option}: the running shell is not one it completes ({candidates[0] or 'unknown'})", fix=fix, code="CD008")


def show_script(named: str) -> int:
    """`--show-completion [SHELL]`: the script printed."""
    print(script(_shell(named, "--show-completion")))
    return 0


def install_script(named: str) -> int:
    """`--install-completion [SHELL]`: the script written where that shell reads completions (its start-up file told
    to read it where it needs that), and where it went."""
    from pathlib import Path

    shell = _shell(named, "--install-completion")
    home = Path.home()
    if shell == "bash":
        path = home / ".bash_completions" / f"{PROG_NAME}.sh"
        from cudnn_doctor.quoting import quote

        _add_line(home / ".bashrc", f"source {quote(str(path), 'bash')}")  # a quote or $ in HOME stays a path
    elif shell == "zsh":
        path = home / ".zfunc" / f"_{PROG_NAME}"
        _add_line(home / ".zshrc", "fpath+=~/.zfunc; autoload -Uz compinit; compinit")
    elif shell == "fish":
        path = home / ".config" / "fish" / "completions" / f"{PROG_NAME}.fish"
    else:
        path = _powershell_profile(shell)
    path.parent.mkdir(parents=True, exist_ok=True)
    text = script(shell)
    if shell in ("powershell", "pwsh"):  # the profile is the user's own file: the script is added to it, once
        _add_line(path, text)
    else:
        path.write_text(text, encoding="utf-8")
    print(f"{shell} completion installed in {path}; it takes effect in a new shell")
    return 0


RC_LIMIT = 16 << 20


def _add_line(rc_file: Path, line: str) -> None:
    """LINE (one or more lines) at the end of the user's start-up file RC_FILE, unless it is there already. Only ever
    appended, in one write: what the user had is never rewritten, so a kill at any instant leaves it whole. The file
    is read as bytes without blocking (any encoding; a FIFO or a huge file is not read, and the line is said
    instead of written)."""
    from cudnn_doctor.errors import DoctorError
    from cudnn_doctor.user_files import UnreadableFile, read_user_file

    wanted = line.encode("utf-8", "surrogateescape")
    try:
        have = read_user_file(str(rc_file), RC_LIMIT) if os.path.lexists(rc_file) else b""
    except UnreadableFile as why:
        raise DoctorError(f"--install-completion: {rc_file} was not read ({why})",
                          fix=f"add this to it yourself: {line.splitlines()[0]}", code="CD005") from None
    if wanted in have:
        return
    rc_file.parent.mkdir(parents=True, exist_ok=True)
    with open(rc_file, "ab") as handle:
        handle.write((b"\n" if have and not have.endswith(b"\n") else b"") + wanted + b"\n")


def _powershell_profile(shell: str) -> Path:
    import subprocess
    from pathlib import Path

    from cudnn_doctor.errors import DoctorError

    program = "pwsh" if shell == "pwsh" else "powershell"
    try:
        answer = subprocess.run([program, "-NoProfile", "-Command", "echo", "$profile"], capture_output=True,
                                text=True, timeout=60, check=True)
    except (OSError, subprocess.SubprocessError) as error:
        raise DoctorError(f"--install-completion {shell}: cannot ask {program} for its profile ({error})",
                          fix=f"cudnn-doctor --show-completion {shell} >> $PROFILE, in {program}", code="CD009") from None
    return Path(answer.stdout.strip())
