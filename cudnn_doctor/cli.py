"""The command line, read by the standard library's argparse, the one parser of every command (pipx's model):
parse, call the command's module under commands/, exit. How a command runs (its guard, its exit, its errors'
JSON) is runner.py's; a usage error's words are usage_errors.py's; shell completion is argcomplete's
(completion.py), imported only when a shell asks.

A command's options are declared when that command is chosen (_Commands): a check builds check's parser
only. Help of the whole tool, and completion, declare every command."""

from __future__ import annotations

import argparse
import functools
import io
import os
import sys
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple, NoReturn

from cudnn_doctor import __version__, completion, options, runner
from cudnn_doctor.knowledge.inputs import ascii_decimal, ascii_integer
from cudnn_doctor.options import ARGUMENT, FLAG, GENERAL, REPEATED, REQUIRED, SWITCH, Option, option_words
from cudnn_doctor.runner import guarded, json_wanted, write_error_json

PROG = "cudnn-doctor"
SUMMARY = "Find, check, install and benchmark CUDA and cuDNN."


class UsageError(Exception):
    """A command line the parser cannot read: PARSER, the (sub)command's parser that found it; MESSAGE, argparse's
    words; WORDS, what was left over (unknown options, extra arguments). usage_errors.py says it in the tool's style."""

    def __init__(self, parser: argparse.ArgumentParser, message: str, words: Sequence[str] = ()) -> None:
        super().__init__(message)
        self.parser, self.message, self.words = parser, message, list(words)


class _Formatter(argparse.HelpFormatter):
    """argparse's formatter while a command line is read (argparse makes one for every option it declares, to check
    its metavar): the terminal's width asked once, not once per option. Help itself is rich-argparse's
    (_rich_help_formatter), imported only when help is printed."""

    def __init__(self, prog: str, indent_increment: int = 2, max_help_position: int = 24,
                 width: int | None = None) -> None:
        if width is None:
            width = _terminal_width(os.environ.get("COLUMNS"))
        super().__init__(prog, indent_increment, max_help_position, width)


@functools.cache
def _rich_help_formatter() -> type[argparse.HelpFormatter]:
    """rich-argparse's formatter, with the tool's ways: help text never read as markup, a description's paragraphs
    kept, headings as written (`What is checked and judged`), each command on its line without a COMMAND line."""
    from rich_argparse import RichHelpFormatter

    class RichHelp(RichHelpFormatter):
        help_markup = False
        text_markup = False
        group_name_formatter = staticmethod(lambda heading: heading[:1].upper() + heading[1:])  # type: ignore[assignment]

        def __init__(self, prog: str, indent_increment: int = 2, max_help_position: int = 24,
                     width: int | None = None, **kwargs: Any) -> None:
            if width is None:
                width = _terminal_width(os.environ.get("COLUMNS"))
            super().__init__(prog, indent_increment, max_help_position, width, **kwargs)

        def _rich_fill_text(self, text: Any, width: int, indent: Any) -> Any:
            import re

            from rich.text import Text

            cuts = [at for found in re.finditer("\n\n", text.plain) for at in (found.start(), found.end())]
            if not cuts:
                return super()._rich_fill_text(text, width, indent)
            filled = []
            for paragraph in text.divide(cuts)[::2]:  # every other piece: the "\n\n" between them left out
                filled.append(super()._rich_fill_text(paragraph, width, indent))
            return Text("").join(filled)

        def _rich_format_action(self, action: argparse.Action) -> Any:
            if isinstance(action, argparse._SubParsersAction):  # each command on its line, no COMMAND line above
                for command in action._get_subactions():
                    yield from super()._rich_format_action(command)
                return
            yield from super()._rich_format_action(action)

    return RichHelp


@functools.cache
def _terminal_width(columns: str | None) -> int:
    """What argparse's formatter would take: the terminal's columns (COLUMNS, the cache's key, first), less two.
    shutil.get_terminal_size's rule, without importing shutil on every command's path (it imports zlib, bz2 and lzma,
    whose libraries a hostile LD_LIBRARY_PATH can replace in the doctor's own process)."""
    import os
    import sys

    from cudnn_doctor.versions import ascii_digits

    width = int(columns) if columns and ascii_digits(columns) and int(columns) > 0 else 0
    if not width:
        try:
            width = os.get_terminal_size(sys.__stdout__.fileno()).columns if sys.__stdout__ is not None else 0
        except (AttributeError, ValueError, OSError):
            width = 0
    return (width or 80) - 2


class Parser(argparse.ArgumentParser):
    """The tool's parser: no abbreviated options (`--jso` is not `--json`), and a usage error raised as
    UsageError for cli.main to say in one line (exit 2, JSON with --json), never argparse's usage and exit."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", _Formatter)
        kwargs.setdefault("allow_abbrev", False)
        kwargs.setdefault("exit_on_error", False)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        raise UsageError(self, message)

    def format_help(self) -> str:
        """The help, written by rich-argparse (imported now, never for a command that runs): colour on a terminal,
        NO_COLOR and FORCE_COLOR as rich reads them."""
        self.formatter_class = _rich_help_formatter()
        return super().format_help()

    def parse_known_args(self, args: Any = None, namespace: Any = None) -> Any:
        try:
            return super().parse_known_args(args, namespace)
        except argparse.ArgumentError as error:  # exit_on_error=False: found by this parser (or a command's)
            raise UsageError(self, str(error)) from None


class _Commands(argparse._SubParsersAction):  # type: ignore[type-arg]
    """argparse's subcommands, each command's options declared when the command is chosen (argparse calls this
    action with the command's name and the rest of the line) or when help or completion needs every command."""

    declare: dict[str, Callable[[argparse.ArgumentParser], None]]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.declare = {}

    def add_command(self, name: str, declare: Callable[[argparse.ArgumentParser], None], summary: str,
                    description: str | None = None) -> argparse.ArgumentParser:
        parser = self.add_parser(name, help=summary, description=description or summary, add_help=False)
        self.declare[name] = declare
        return parser

    def declared(self, name: str) -> argparse.ArgumentParser:
        """Command NAME's parser, its options declared."""
        parser = self._name_parser_map[name]
        declare = self.declare.pop(name, None)
        if declare is not None:
            parser.add_argument("-h", "--help", action="help", help="Show this message and exit.")
            declare(parser)
        return parser

    def declare_all(self) -> None:
        for name in list(self.declare):
            self.declared(name)

    def __call__(self, parser: Any, namespace: Any, values: Any, option_string: Any = None) -> None:
        self.declared(values[0])
        super().__call__(parser, namespace, values, option_string)


def _commands(parser: argparse.ArgumentParser, dest: str) -> _Commands:
    """PARSER's subcommands, the chosen one's name kept in DEST."""
    commands = parser.add_subparsers(dest=dest, metavar="COMMAND", title="Commands", action=_Commands,
                                     parser_class=Parser)
    assert isinstance(commands, _Commands)
    return commands


def _number(convert: Callable[[str], Any]) -> Callable[[str], Any]:
    """A converter of knowledge/inputs.py as argparse takes one: its own words when it refuses a value."""

    def read(value: str) -> Any:
        try:
            return convert(value)
        except ValueError as error:
            raise argparse.ArgumentTypeError(str(error)) from None

    return read


# ----------------------------------------------------------------------------- options.py's tables as argparse's
_ACTIONS = {FLAG: "store_true", REPEATED: "append", SWITCH: argparse.BooleanOptionalAction}
_CONVERTERS = {"integer": ascii_integer, "decimal": ascii_decimal}


def _help_of(option: Option) -> str:
    """OPTION's help as shown: its words (check's formats named), then its default and its variable, as Typer
    shows them."""
    text = option.help
    if "{" in text:
        from cudnn_doctor.render import formats

        text = text.format(formats=formats.option_help(), documents=formats.words(formats.documents()))
    if option.show_default and option.default is not None:
        text += f" [default: {option.default}]"
    also = [f"env var: {option.env}"] if option.env else []
    if option.config:
        also.append(f"pyproject.toml: [tool.cudnn-doctor] {option.config}")
    return text + (f" [{'; '.join(also)}]" if also else "")


def _declare(command: str, options: tuple[Option, ...], parser: argparse.ArgumentParser) -> None:
    """Command COMMAND's OPTIONS (options.py) declared on PARSER, each in its help group."""
    groups: dict[str, Any] = {GENERAL: parser}
    for option in options:
        where = groups.get(option.group)
        if where is None:
            where = groups[option.group] = parser.add_argument_group(option.group)
        settings: dict[str, Any] = {"help": _help_of(option)}
        if option.metavar is not None:
            settings["metavar"] = option.metavar
        if option.positional:
            settings["nargs"] = "?" if option.takes == ARGUMENT else "+"
            action = where.add_argument(option.dest, **settings)
        else:
            settings["dest"] = option.dest
            if option.takes in _ACTIONS:
                settings["action"] = _ACTIONS[option.takes]
            if option.default is not None:
                settings["default"] = option.default
            if option.convert is not None:
                settings["type"] = _number(_CONVERTERS[option.convert])
            if (command, option.dest) in REQUIRED:
                settings["required"] = True
            action = where.add_argument(*option.names, **settings)
        if option.complete is not None:
            action.completer = getattr(completion, f"complete_{option.complete}")  # type: ignore[attr-defined,union-attr]


class Command(NamedTuple):
    """One command: its name, its options' table, its summary (and a longer description), and its body: the
    function FUNCTION of commands/MODULE.py, called with the options by their dest (and ASK, where it asks)."""

    name: str
    options: tuple[Option, ...]
    summary: str
    module: str
    function: str = "main"
    asks: Callable[[str], bool] | None = None
    description: str | None = None
    extra: str | None = None  # the option that takes the words argparse leaves over


def confirm(question: str, err: bool = False) -> bool:
    """QUESTION answered on the terminal: y or yes, else no (the default); the end of the input ends the command."""
    stream = sys.stderr if err else sys.stdout
    while True:
        stream.write(f"{question} [y/N]: ")
        stream.flush()
        answer = sys.stdin.readline()
        if not answer:  # the end of the input: nobody to answer
            stream.write("\n")
            from cudnn_doctor.streams import say

            say("Aborted!")
            raise SystemExit(1)
        answer = answer.strip().lower()
        if answer in ("y", "yes"):
            return True
        if answer in ("", "n", "no"):
            return False
        stream.write("Error: invalid input\n")


def _ask_on_stderr(question: str) -> bool:
    return confirm(question, err=True)


# ------------------------------------------------------------------------------------------------ the whole tool
COMMANDS: tuple[Command, ...] = (
    Command("check", options.CHECK, "Diagnose the GPUs, driver, CUDA toolkits, cuDNN copies and frameworks.",
            "check", "check"),
    Command("compat", options.COMPAT, "What a framework release needs, and whether a CUDA/cuDNN/driver/GPU "
                                      "combination works.", "compat"),
    Command("explain", options.EXPLAIN, "What a finding code or a framework's error message means, and the fix on "
                                        "this machine.", "explain"),
    Command("fleet", (), "Many nodes: merge their reports, or run check on each through Slurm.", ""),
    Command("image", options.IMAGE, "An image judged before it runs: its CUDA, cuDNN and frameworks against this "
                                    "node's driver and GPUs.", "image"),
    Command("bench", options.BENCH, "Run cuDNN convolution and LSTM through its C API: time them, check them against "
                                    "NumPy.", "bench"),
    Command("fix", options.FIX, "The one treatment that makes `check` clean here; --yes applies it and checks again.",
            "fix", asks=confirm),
    Command("install", options.INSTALL, "Install cuDNN into a prefix: plan first, then all or nothing, with a backup "
                                        "and a manifest.", "install", asks=_ask_on_stderr),
    Command("uninstall", options.UNINSTALL, "Remove exactly what the last install into PREFIX wrote, and restore what "
                                            "it replaced.", "uninstall", asks=_ask_on_stderr),
)
FLEET_COMMANDS: tuple[Command, ...] = (
    Command("merge", options.FLEET_MERGE, "What differs between nodes: per field, the majority value and the nodes "
                                          "that differ; failed nodes.", "fleet", "main_merge", extra="reports"),
    Command("run", options.FLEET_RUN, "Run `check --json` on every node of an allocation or partition and merge the "
                                      "answers.", "fleet", "main_run", extra="srun_options",
            description="Run `check --json` on every node of an allocation or partition and merge the answers.\n\n"
                        "Everything after the options goes to srun, e.g. "
                        "`fleet run --slurm -- --partition=gpu --nodes=8`."),
)


def _declare_command(command: Command, parser: argparse.ArgumentParser) -> None:
    if command.name == "fleet":
        commands = _commands(parser, "_fleet_command")
        for sub in FLEET_COMMANDS:
            commands.add_command(sub.name, functools.partial(_declare_command, sub), sub.summary, sub.description)
        return
    _declare(command.name, command.options, parser)
    if command.name == "merge":
        parser.usage = "%(prog)s [-h] [--json] [-q] [-v] REPORT.json... | DIR"  # argparse would write the metavar twice
    parser.set_defaults(_run=command, _extra=command.extra, **({command.extra: []} if command.extra == "srun_options"
                                                                else {}))


def _run(command: Command, given: dict[str, Any]) -> None:
    """COMMAND's body called with the options GIVEN (those it takes), guarded (runner.py); -q where the body has
    no quiet of its own: its standard output kept back, and shown only where the command fails."""
    # __import__, not importlib.import_module: -X importtime (benchmarks/import_cost.py) sees only the former
    body = getattr(__import__(f"cudnn_doctor.commands.{command.module}", fromlist=[command.function]),
                   command.function)
    code = body.__code__
    takes = set(code.co_varnames[:code.co_argcount + code.co_kwonlyargcount])
    if command.asks is not None:
        given["ask"] = _ask_on_stderr if given.get("quiet") else command.asks
    quiet = bool(given.get("quiet")) and "quiet" not in takes and not json_wanted(command.name, given)

    name = "fleet" if command.module == "fleet" else command.name
    run = guarded(body, name, given)
    taken = {key: value for key, value in given.items() if key in takes}
    if not quiet:
        run(**taken)
        return
    held, sys.stdout = sys.stdout, io.StringIO()
    status: Any = 0
    try:
        run(**taken)
    except SystemExit as end:
        status = end.code
    finally:
        kept, sys.stdout = sys.stdout, held
    if status not in (0, None):
        assert isinstance(kept, io.StringIO)
        sys.stdout.write(kept.getvalue())
    raise SystemExit(status)


def build_parser(every_command: bool = False) -> Parser:
    """The tool's parser; each command's options are declared when that command is chosen, or all of them now
    (EVERY_COMMAND: for completion)."""
    parser = Parser(prog=PROG, description=SUMMARY, add_help=False)
    parser.add_argument("-h", "--help", action="help", help="Show this message and exit.")
    parser.add_argument("-V", "--version", action="version", version=f"{PROG} {__version__}",
                        help="Print the version and exit.")
    parser.add_argument("--install-completion", nargs="?", const="", metavar="SHELL",
                        help="Install completion for SHELL (bash, zsh, fish or powershell; default: the running shell).")
    parser.add_argument("--show-completion", nargs="?", const="", metavar="SHELL",
                        help="Show completion for SHELL (default: the running shell), to copy it or customize the "
                             "installation.")
    commands = _commands(parser, "_command")
    for one in COMMANDS:
        commands.add_command(one.name, functools.partial(_declare_command, one), one.summary, one.description)
    if every_command:
        declare_every_command(parser)
    return parser


def declare_every_command(parser: argparse.ArgumentParser) -> None:
    for action in parser._actions:
        if isinstance(action, _Commands):
            action.declare_all()
            for sub in action.choices.values():
                declare_every_command(sub)


def _innermost(namespace: argparse.Namespace, root: Parser) -> argparse.ArgumentParser:
    """The parser of the command NAMESPACE was read for (`fleet merge`'s), ROOT where no command was chosen."""
    parser: argparse.ArgumentParser = root
    while True:
        commands = next((action for action in parser._actions if isinstance(action, _Commands)), None)
        name = getattr(namespace, commands.dest, None) if commands is not None else None
        if commands is None or name is None:
            return parser
        parser = commands.choices[name]


# argparse's time grows with the square of a command line's options (each option looks through every option's place:
# 20,000 took 31 s, 50,000 never ended within a CI step's patience); past this many, one usage error at once
MAX_OPTION_WORDS = 10_000


def _before_double_dash(args: list[str]) -> list[str]:
    return args[:args.index("--")] if "--" in args else args


def _too_many_options(args: list[str]) -> int | None:
    """The usage error's exit status where ARGS holds more than MAX_OPTION_WORDS options (before any `--`), said in
    one line (one JSON object with --json) without parsing them; None otherwise."""
    words = _before_double_dash(args)
    count = sum(1 for word in words if word[:1] == "-")
    if count <= MAX_OPTION_WORDS:
        return None
    from cudnn_doctor.codes import CODES
    from cudnn_doctor.streams import say

    name = args[0] if args and args[0] in {one.name for one in COMMANDS} else None
    text = f"the command line has {count:,} options; at most {MAX_OPTION_WORDS:,} are read"
    fix = "give each value once (a repeated --ignore or --select CD3 once covers every CD3xx code)"
    say(f"cudnn-doctor: error: {text} (fix: {fix})")
    if "--json" in words:
        write_error_json(2, text, fix, CODES["CD001"].title, "CD001", command=name)
    return 2


def _invoke_app(args: list[str]) -> None:
    """Parse ARGS and run the command; ends with SystemExit(status), as a command's body does."""
    too_many = _too_many_options(args)
    if too_many is not None:
        raise SystemExit(too_many)
    root = build_parser()
    try:
        namespace, extra = root.parse_known_args(args)
        where = _innermost(namespace, root)
        if namespace.show_completion is not None or namespace.install_completion is not None:
            if extra:  # `--install-completion bash --json`: words it does not take (--json too) are a usage error,
                raise UsageError(where, "", extra)  # one JSON object with --json, never text that ignored it
            raise SystemExit(completion_request(namespace.show_completion, namespace.install_completion))
        options = {key: value for key, value in vars(namespace).items()
                   if not key.startswith("_") and key not in ("show_completion", "install_completion")}
        takes = getattr(namespace, "_extra", None)  # the command that takes the words argparse leaves over
        if extra and takes == "srun_options":  # fleet run: everything else goes to srun
            options["srun_options"] = extra[1:] if extra[0] == "--" else extra
        elif extra and takes == "reports" and not any(word.startswith("-") for word in extra):
            options["reports"] = [*options["reports"], *extra]  # `fleet merge a.json --json b.json`
        elif extra:
            raise UsageError(where, "", extra)
        chosen = getattr(namespace, "_run", None)
        if chosen is None:  # a bare `cudnn-doctor` (or `fleet`): its help is the answer
            where.print_help()
            raise SystemExit(2)
    except UsageError as error:
        raise SystemExit(_usage_error(error, args)) from None
    _run(chosen, options)


@guarded
def completion_request(show_completion: str | None, install_completion: str | None) -> int:
    """`--show-completion [SHELL]`, `--install-completion [SHELL]`: the script argcomplete writes for that shell."""
    if show_completion is not None:
        return completion.show_script(show_completion)
    return completion.install_script(install_completion or "")


def _usage_error(error: UsageError, args: list[str]) -> int:
    """A usage error found by the parser: one line, exit 2, one JSON object with --json (usage_errors.py)."""
    from cudnn_doctor.usage_errors import read_anyway, report_usage_error

    name, params = read_anyway(build_parser(every_command=True), args)

    def write(exit_code: int, message: str, fix: str, code: str) -> None:
        from cudnn_doctor.codes import CODES

        write_error_json(exit_code, message, fix, CODES[code].title, code, command=name)

    # no command read (`cudnn-doctor --install-completion bash --json`), or not its options (`fleet chek --json`,
    # `--json check`): --json among the words before any `--` still asks for JSON
    want_json = json_wanted(name, params) or "--json" in (args[:args.index("--")] if "--" in args else args)
    return report_usage_error(error.parser, error.message, error.words, want_json, write)


def _explain_options() -> dict[str, bool]:
    """explain's options as options.py declares them, each with whether it takes a value."""
    return {"-h": False, "--help": False,
            **{name: option.takes not in (FLAG, SWITCH) for name, option in option_words(options.EXPLAIN).items()}}


def main(args: list[str] | None = None) -> None:
    """Run the command line ARGS (the process's own by default) to its end: SystemExit with its status."""
    if "_ARGCOMPLETE" in os.environ:  # the shell asks for completions (argcomplete's protocol): nothing else runs
        completion.complete(build_parser(every_command=True))
    args = sys.argv[1:] if args is None else list(args)
    if args[:1] == ["explain"]:  # `explain "-x"`: any text is the message
        from cudnn_doctor.explain.arguments import message_first

        args = message_first(args, _explain_options())
    runner.run(functools.partial(runner.call, _invoke_app, args=args), functools.partial(_wants_json, args))


def _wants_json(args: list[str]) -> bool:
    from cudnn_doctor.usage_errors import read_anyway

    words = _before_double_dash(args)
    if sum(1 for word in words if word[:1] == "-") > MAX_OPTION_WORDS:  # never parsed (_too_many_options)
        return "--json" in words

    return json_wanted(*read_anyway(build_parser(every_command=True), args))


if __name__ == "__main__":
    main()
