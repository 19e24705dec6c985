"""Usage errors the option parser finds (an unknown command or option, a bad or missing value, words left over) in
the tool's one style: `cudnn-doctor: error: ... (fix: ...)` on one line, exit 2, and one JSON object with --json.

argparse finds them before any command runs; cli.py hands each one here with the parser of the command it belongs
to. Imported only on that path."""

from __future__ import annotations

import argparse
import ast
import difflib
import re
from collections.abc import Callable, Sequence
from typing import Any

USAGE_EXIT = 2
TOOL = "cudnn-doctor"


def _closest(word: str, choices: list[str]) -> str | None:
    found = difflib.get_close_matches(word, choices, n=1, cutoff=0.7)
    return found[0] if found else None


def _where(parser: argparse.ArgumentParser) -> str:
    """`check`, `fleet merge`: the command path without the tool's own name ('' at the top)."""
    return parser.prog.split(" ", 1)[1] if " " in parser.prog else ""


def _help_line(parser: argparse.ArgumentParser) -> str:
    return f"see `{parser.prog} --help`"


def _option_names(parser: argparse.ArgumentParser) -> list[str]:
    return [name for action in parser._actions for name in action.option_strings if name.startswith("--")]


def _commands(parser: argparse.ArgumentParser) -> argparse._SubParsersAction | None:  # type: ignore[type-arg]
    return next((action for action in parser._actions if isinstance(action, argparse._SubParsersAction)), None)


def _action(parser: argparse.ArgumentParser, name: str) -> argparse.Action | None:
    """The action argparse named NAME in a message: `--cuda`, `--strict/--no-strict`, `REPORT.json... | DIR`."""
    for part in name.split("/"):
        if part in parser._option_string_actions:
            return parser._option_string_actions[part]
    return next((action for action in parser._actions
                 if not action.option_strings and name in (action.metavar, action.dest)), None)


def _words(action: argparse.Action | None, name: str) -> tuple[str, str | None]:
    """An argument's name as the user types it (--cuda, REPORT.json...) and what it takes (MAJOR), if known."""
    if action is None:
        return name, None
    if not action.option_strings:
        return str(action.metavar or action.dest.upper()), None
    longs = [option for option in action.option_strings if option.startswith("--")] or action.option_strings
    return longs[0], action.metavar if isinstance(action.metavar, str) else None


def _unknown_words(parser: argparse.ArgumentParser, words: list[str]) -> tuple[str, str]:
    where = _where(parser)
    prefix = f"{where}: " if where else ""
    first = next((word for word in words if word != "--"), words[0])
    if not first.startswith("-") or first == "-":
        plural = "s" if len(words) > 1 else ""
        return f"{prefix}unexpected argument{plural} {' '.join(map(repr, words))}", _help_line(parser)
    name = first.split("=", 1)[0]
    if where and name in _option_names(parser):  # `cudnn-doctor --json check`: the command's option, before it
        return f"{name} is an option of {where}, and goes after it", f"cudnn-doctor {where} {name}; {_help_line(parser)}"
    guess = _closest(name, _option_names(parser))
    fix = f"did you mean {guess}? {_help_line(parser)}" if guess else _help_line(parser)
    return f"{prefix}no such option {name}", fix


def describe(parser: argparse.ArgumentParser, message: str, words: Sequence[str] = ()) -> tuple[str, str]:
    """The one-line message and fix for a usage error argparse found in PARSER's part of the command line: its
    MESSAGE, or WORDS it could not place (an unknown option, an extra argument)."""
    if words:
        return _unknown_words(parser, list(words))
    where = _where(parser)
    prefix = f"{where}: " if where else ""
    required = re.fullmatch(r"the following arguments are required: (.+)", message, re.DOTALL)
    if required:
        first = required.group(1).split(", ")[0]
        name, metavar = _words(_action(parser, first), first)
        takes = f" {metavar}" if metavar else ""
        return f"{prefix}{name} is missing", f"give {name}{takes}; {_help_line(parser)}"
    found = re.fullmatch(r"argument (.+?): (.*)", message, re.DOTALL)
    if not found:
        text = message.strip().rstrip(".")
        return f"{prefix}{text[:1].lower()}{text[1:]}", _help_line(parser)
    action = _action(parser, found.group(1))
    text = found.group(2).strip().rstrip(".")
    commands = _commands(parser)
    if action is not None and action is commands and text.startswith("invalid choice:"):
        quoted = re.match(r"invalid choice: ('(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\")", text)
        value = ast.literal_eval(quoted.group(1)) if quoted else text.split(":", 1)[1].split()[0]
        choices = list(commands.choices)
        guess = _closest(value, choices)
        fix = f"did you mean `{parser.prog} {guess}`?" if guess else f"the commands are {', '.join(choices)}"
        # quoted here, escaped on the way out (streams.say): a name that is not UTF-8 shows its bytes, \xff
        return f"{prefix}no such command '{value}'", fix
    name, metavar = _words(action, found.group(1))
    if text == "expected one argument":
        return f"{prefix}{name} needs a value", f"write {name} {metavar or 'VALUE'}; {_help_line(parser)}"
    if text.startswith("ignored explicit argument"):
        return f"{prefix}option {name!r} does not take a value", _help_line(parser)
    if len(text) > 200:
        text = text[:120] + f"… ({len(text)} characters)"
    takes = f"{name} takes {metavar}" if metavar else f"see what {name} takes"
    return f"{prefix}{name}: {text}", f"{takes}; {_help_line(parser)}"


def report_usage_error(parser: argparse.ArgumentParser, message: str, words: Sequence[str], want_json: bool,
                       write_json: Callable[[int, str, str, str], None] | None = None) -> int:
    """Print the usage error as one line on standard error and, when WANT_JSON, hand it to WRITE_JSON (the command
    line's one `cudnn-doctor/error/1` object); the exit code."""
    from cudnn_doctor.streams import bounded, say, unquoted

    text, fix = describe(parser, message, words)
    # the registry's class: CD011 a word no part of the command line takes (an unknown command or option, an argument
    # too many), CD003 what the command works on not given, CD001 an option or argument given a value it does not
    # take (none, or one not among its choices)
    code = "CD011" if words or text.startswith(f"{_where(parser)}: no such command ".lstrip(": ")) else \
        "CD003" if message.startswith("the following arguments are required") else "CD001"
    text, fix = bounded(text), bounded(fix)  # an option's name or value of 100 kB quoted whole: cut
    say(f"cudnn-doctor: error: {text} (fix: {unquoted(fix)})")
    if want_json and write_json is not None:
        write_json(USAGE_EXIT, text, fix, code)
    return USAGE_EXIT


class _Lenient(argparse.ArgumentParser):
    def error(self, message: str) -> Any:
        raise ValueError(message)


def _lenient(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """PARSER's options, each taking a value or none and no value refused, and its command with the rest of the
    line: what a command line that failed to parse still says (whether it asked for JSON)."""
    lenient = _Lenient(add_help=False, allow_abbrev=False, exit_on_error=False)
    for action in parser._actions:
        if action.option_strings:
            lenient.add_argument(*action.option_strings, dest=action.dest, nargs="?", const=True, default=None)
        elif isinstance(action, argparse._SubParsersAction):
            lenient.add_argument("_rest", nargs=argparse.REMAINDER)
    return lenient


def read_anyway(root: argparse.ArgumentParser, args: list[str]) -> tuple[str | None, dict[str, Any]]:
    """The command and the options that can be read from ARGS despite what is wrong with them (an unknown option, a
    bad or missing value): whether a failed command line asked for JSON is read by the tool's own declarations.
    ROOT: the tool's parser, every command declared. A misspelt command is read as the one it is closest to."""
    parser, words, name = root, list(args), None
    try:
        while True:
            params, _ = _lenient(parser).parse_known_args(words)
            rest = getattr(params, "_rest", None)
            commands = _commands(parser)
            if not rest or commands is None:
                return name, {key: value for key, value in vars(params).items() if not key.startswith("_")}
            chosen = rest[0] if rest[0] in commands.choices else _closest(rest[0], list(commands.choices))
            if chosen is None:
                return name, {}
            name = name or rest[0]
            parser, words = commands.choices[chosen], rest[1:]
    except Exception:  # noqa: BLE001 - nothing readable: no JSON asked for
        return None, {}
