"""Usage errors the option parser finds (an unknown command or option, a bad or missing value) in the tool's
one style: `cudnn-doctor: error: ... (fix: ...)` on one line, exit 2, and one JSON object with --json.

click raises them before any command runs; cli.main hands each one here. Imported only on that path."""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable
from typing import Any

USAGE_EXIT = 2


def _closest(word: str, choices: list[str]) -> str | None:
    found = difflib.get_close_matches(word, choices, n=1, cutoff=0.7)
    return found[0] if found else None


def _where(context: Any) -> str:
    """`check`, `fleet merge`: the command path without the tool's own name ('' at the top)."""
    path = getattr(context, "command_path", "") or ""
    return path.split(" ", 1)[1] if " " in path else ""


def _help_line(context: Any) -> str:
    path = getattr(context, "command_path", "") or "cudnn-doctor"
    return f"see `{path} --help`"


class _Where:
    """The command a usage error belongs to, found from the command line when click's context is the root's
    (a missing option value is found before the subcommand's context exists)."""

    def __init__(self, command: Any, command_path: str) -> None:
        self.command, self.command_path = command, command_path


def _subcommand_context(context: Any, args: list[str], root: Any) -> Any:
    if context is None and root is not None:
        context = _Where(root, "cudnn-doctor")
    command = getattr(context, "command", None)
    path = getattr(context, "command_path", "") or "cudnn-doctor"
    if command is None or not hasattr(command, "get_command"):
        return context
    found = None
    for word in args:
        if word.startswith("-") or not hasattr(command, "get_command"):
            continue
        sub = command.get_command(None, word)
        if sub is None:
            break
        command, path, found = sub, f"{path} {word}", True
    return _Where(command, path) if found else context


def _option_names(context: Any) -> list[str]:
    command = getattr(context, "command", None)
    names: list[str] = []
    for param in getattr(command, "params", []):
        names += [*getattr(param, "opts", []), *getattr(param, "secondary_opts", [])]
    return [name for name in names if name.startswith("--")]


def _param_words(param: Any) -> tuple[str, str | None]:
    """A parameter's name as the user typed it (--cuda, REPORT.json...) and what it takes (MAJOR), if known."""
    if param is None:
        return "a value", None
    opts = [name for name in getattr(param, "opts", []) if name.startswith("--")] or list(getattr(param, "opts", []))
    metavar = getattr(param, "metavar", None)
    if getattr(param, "param_type_name", "") == "argument":
        return (metavar or (getattr(param, "name", "") or "argument").upper()), None
    return (opts[0] if opts else getattr(param, "name", "option")), metavar


def describe(error: Exception, args: list[str], root: Any = None) -> tuple[str, str]:
    """The one-line message and fix for a usage error of click's (or typer's copy of click); ARGS, the
    command line, and ROOT, the tool's click command, name the subcommand where click gives no context."""
    context = _subcommand_context(getattr(error, "ctx", None), args, root)
    where = _where(context)
    prefix = f"{where}: " if where else ""
    kind = type(error).__name__
    if kind == "NoSuchOption":
        name = str(getattr(error, "option_name", "") or "")
        if where and context is not getattr(error, "ctx", None) and name in _option_names(context):
            # `cudnn-doctor --json check`: the command's own option, written before the command
            return (f"{name} is an option of {where}, and goes after it",
                    f"cudnn-doctor {where} {name}; {_help_line(context)}")
        guess = _closest(name, _option_names(context))
        fix = f"did you mean {guess}? {_help_line(context)}" if guess else _help_line(context)
        return f"{prefix}no such option {name}", fix
    if kind == "BadOptionUsage":
        name = str(getattr(error, "option_name", "") or "")
        text = getattr(error, "message", str(error)).rstrip(".")
        if text.endswith("requires an argument"):
            param = next((p for p in getattr(getattr(context, "command", None), "params", [])
                          if name in getattr(p, "opts", [])), None)
            _, metavar = _param_words(param)
            return f"{prefix}{name} needs a value", f"write {name} {metavar or 'VALUE'}; {_help_line(context)}"
        return f"{prefix}{text[:1].lower()}{text[1:]}", _help_line(context)
    if kind in ("BadParameter", "BadArgumentUsage") or kind == "MissingParameter":
        param = getattr(error, "param", None)
        name, metavar = _param_words(param)
        if kind == "MissingParameter":
            takes = f" {metavar}" if metavar else ""
            return f"{prefix}{name} is missing", f"give {name}{takes}; {_help_line(context)}"
        text = str(getattr(error, "message", "") or error).rstrip(".")
        func = getattr(getattr(param, "type", None), "func", None)
        if callable(func):  # click says only the value a converter refused: ask the converter for its words
            try:
                func(text)
            except ValueError as refused:
                text = str(refused).rstrip(".")
            except Exception:  # noqa: BLE001 - its words are a courtesy; the value alone still says what was wrong
                pass
        if len(text) > 200:
            text = text[:120] + f"… ({len(text)} characters)"
        text = re.sub(r"is not a valid int(eger)?$", "is not a whole number", text)
        text = re.sub(r"is not a valid float$", "is not a number", text)
        takes = f"{name} takes {metavar}" if metavar else f"see what {name} takes"
        return f"{prefix}{name}: {text}", f"{takes}; {_help_line(context)}"
    text = getattr(error, "message", None) or str(error)
    unknown = re.fullmatch(r"No such command '(.+?)'\..*", text, re.DOTALL)
    if unknown:
        command = getattr(context, "command", None)
        choices = list(command.list_commands(None)) if command is not None and hasattr(command, "list_commands") else []
        guess = _closest(unknown.group(1), choices)
        fix = f"did you mean `{getattr(context, 'command_path', 'cudnn-doctor')} {guess}`?" if guess else \
            f"the commands are {', '.join(choices)}" if choices else _help_line(context)
        return f"{prefix}no such command {unknown.group(1)!r}", fix
    text = text.strip().rstrip(".")
    return f"{prefix}{text[:1].lower()}{text[1:]}", _help_line(context)


def report_usage_error(error: Exception, want_json: bool, root: Any, args: list[str],
                       write_json: Callable[[int, str, str], None] | None = None) -> int:
    """Print ERROR as one line on standard error and, when WANT_JSON, hand it to WRITE_JSON (the command line's
    one `cudnn-doctor/error/1` object); the exit code."""
    from cudnn_doctor.streams import say, unquoted

    if type(error).__name__ in ("NoArgsIsHelp", "NoArgsIsHelpError"):  # a bare `cudnn-doctor`: its help is the answer
        return USAGE_EXIT
    message, fix = describe(error, args, root)
    say(f"cudnn-doctor: error: {message} (fix: {unquoted(fix)})")
    if want_json and write_json is not None:
        write_json(USAGE_EXIT, message, fix)
    return USAGE_EXIT
