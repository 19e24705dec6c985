"""Shell completion: the values options take (--format, --dtype, --size, --list, ...), and
`--show-completion SHELL` / `--install-completion SHELL` for a shell other than the one running.

Each value list is imported only when the shell asks for it, so a plain start stays as fast as before."""

from __future__ import annotations

from collections.abc import Callable

SHELLS = ("bash", "zsh", "fish", "powershell", "pwsh")
PROG_NAME = "cudnn-doctor"
COMPLETE_VAR = "_CUDNN_DOCTOR_COMPLETE"


def _starting_with(values: Callable[[], tuple[str, ...] | list[str]]) -> Callable[[str], list[str]]:
    def complete(incomplete: str) -> list[str]:
        return [value for value in values() if value.startswith(incomplete.lower())]

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


def complete_code(incomplete: str) -> list[str]:
    """explain's CODE_OR_MESSAGE: the finding codes (CD3 completes to CD301, CD302, ...)."""
    from cudnn_doctor.codes import CODES

    return [code for code, entry in CODES.items() if not entry.retired and code.startswith(incomplete.upper())]


def named_shell_request(args: list[str]) -> int | None:
    """`--show-completion zsh` / `--install-completion fish`: typer's own options take no value (they follow the
    running shell), so a shell named after them is honoured here. None: the command line is not such a request."""
    if len(args) != 2 or args[0] not in ("--show-completion", "--install-completion"):
        return None
    shell = args[1].lower()
    if shell not in SHELLS:
        from cudnn_doctor.streams import say

        say(f"cudnn-doctor: error: {args[0]} {args[1]}: not a shell it completes "
            f"(fix: name one of {', '.join(SHELLS)}, or none for the running shell)")
        return 2
    from typer._completion_classes import completion_init
    from typer._completion_shared import get_completion_script, install

    completion_init()
    if args[0] == "--show-completion":
        print(get_completion_script(prog_name=PROG_NAME, complete_var=COMPLETE_VAR, shell=shell))
        return 0
    installed_shell, path = install(shell=shell, prog_name=PROG_NAME, complete_var=COMPLETE_VAR)
    print(f"{installed_shell} completion installed in {path}; it takes effect in a new shell")
    return 0
