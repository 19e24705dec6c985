"""The command line, read by the standard library's argparse, the one parser of every command (pipx's model):
parse, call the command's module under commands/, exit. How a command runs (its guard, its exit, its errors'
JSON) is command.py's; a usage error's words are usage_errors.py's; shell completion is argcomplete's
(completion.py), imported only when a shell asks.

A command's options are declared when that command is chosen (_Commands): a check builds check's parser
only. Help of the whole tool, and completion, declare every command."""

from __future__ import annotations

import argparse
import functools
import os
import sys
from collections.abc import Callable, Sequence
from typing import Any, NoReturn

from cudnn_doctor import __version__, command, completion
from cudnn_doctor.command import guarded, json_wanted, write_error_json
from cudnn_doctor.knowledge.inputs import ascii_decimal, ascii_integer

PROG = "cudnn-doctor"
SUMMARY = "Find, check, install and benchmark CUDA and cuDNN."


class UsageError(Exception):
    """A command line the parser cannot read: PARSER, the (sub)command's parser that found it; MESSAGE, argparse's
    words; WORDS, what was left over (unknown options, extra arguments). usage_errors.py says it in the tool's style."""

    def __init__(self, parser: argparse.ArgumentParser, message: str, words: Sequence[str] = ()) -> None:
        super().__init__(message)
        self.parser, self.message, self.words = parser, message, list(words)


class _HelpFormatter(argparse.HelpFormatter):
    """argparse's help with a paragraph break kept in a description, words never split at a hyphen
    (`cudnn-doctor`), and headings capitalised as the rest of the tool's words are (`Usage:`, `Options:`).
    The terminal's width is asked once: argparse makes a formatter for every option it declares (to check its
    metavar), and each one of its own asks the terminal again."""

    def __init__(self, prog: str, indent_increment: int = 2, max_help_position: int = 24,
                 width: int | None = None) -> None:
        if width is None:
            width = _terminal_width(os.environ.get("COLUMNS"))
        super().__init__(prog, indent_increment, max_help_position, width)

    def add_usage(self, usage: Any, actions: Any, groups: Any, prefix: str | None = None) -> None:
        super().add_usage(usage, actions, groups, "Usage: " if prefix is None else prefix)

    def start_section(self, heading: str | None) -> None:
        super().start_section(heading[:1].upper() + heading[1:] if heading else heading)

    def _split_lines(self, text: str, width: int) -> list[str]:
        import textwrap

        return textwrap.wrap(" ".join(text.split()), width, break_on_hyphens=False, break_long_words=False)

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        import textwrap

        return "\n\n".join(textwrap.fill(" ".join(paragraph.split()), width, initial_indent=indent,
                                          subsequent_indent=indent, break_on_hyphens=False)
                            for paragraph in text.split("\n\n"))

    def _format_action(self, action: argparse.Action) -> str:
        if isinstance(action, argparse._SubParsersAction):  # each command on its line, without a COMMAND line above
            return "".join(self._format_action(command) for command in action._get_subactions())
        return super()._format_action(action)


@functools.cache
def _terminal_width(columns: str | None) -> int:
    """What argparse's formatter would take: the terminal's columns (COLUMNS, the cache's key, first), less two."""
    import shutil

    return shutil.get_terminal_size().columns - 2


class Parser(argparse.ArgumentParser):
    """The tool's parser: no abbreviated options (`--jso` is not `--json`), and a usage error raised as
    UsageError for cli.main to say in one line (exit 2, JSON with --json), never argparse's usage and exit."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", _HelpFormatter)
        kwargs.setdefault("allow_abbrev", False)
        kwargs.setdefault("exit_on_error", False)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        raise UsageError(self, message)

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


def _flag(parser: argparse.ArgumentParser, *names: str, help: str, dest: str | None = None) -> None:  # noqa: A002
    if dest is None:
        parser.add_argument(*names, action="store_true", help=help)
    else:
        parser.add_argument(*names, action="store_true", dest=dest, help=help)


def _json(parser: argparse.ArgumentParser, schema: str, more: str = "") -> None:
    _flag(parser, "--json", dest="json_output", help=f"Print one JSON object ({schema}){more}.")


def _completes(action: argparse.Action, completer: Callable[..., list[str]]) -> argparse.Action:
    action.completer = completer  # type: ignore[attr-defined] # argcomplete's attribute
    return action


# ------------------------------------------------------------------------------------------------ check and fix
def _targets(parser: argparse.ArgumentParser) -> None:
    """The options that choose what a check looks at and judges: declared once here, taken by `check` and by
    `fix` (the same targets), resolved by commands/check.py's check_settings() and check_options()."""
    parser.add_argument("--require", action="append", metavar="SPEC",
                        help="Fail (exit 1) unless met: 'cudnn>=9.1', 'cuda>=12.4', 'driver>=550', 'gpu', 'torch>=2.4'. "
                             "Repeatable; also [tool.cudnn-doctor] require, CUDNN_DOCTOR_REQUIRE (';' between specs).")
    parser.add_argument("--select", action="append", metavar="CODE|PREFIX",
                        help="Only these findings count (CD306, or a prefix: CD3). Repeatable; also [tool.cudnn-doctor] "
                             "select in pyproject.toml, CUDNN_DOCTOR_SELECT.")
    parser.add_argument("--ignore", action="append", metavar="CODE|PREFIX",
                        help="These findings do not count: not shown, not in the exit code or CI formats, listed as "
                             "ignored in the JSON. Repeatable; also [tool.cudnn-doctor] ignore, CUDNN_DOCTOR_IGNORE.")
    parser.add_argument("--search-path", action="append", metavar="DIR",
                        help="Another folder to look for cuDNN in. Repeatable.")
    parser.add_argument("--framework", action="append", metavar="NAME[==VER]",
                        help="Check a framework that is not installed, e.g. tensorflow==2.15.0.")
    parser.add_argument("--project", metavar="DIR|FILE",
                        help="Maven/Gradle project to read DL4J backends from: its folder, its pom.xml or build.gradle, "
                             "or a folder of projects (default: the working folder; its subfolders too at a repository's "
                             "top).")
    parser.add_argument("--python", metavar="ENV|PATH",
                        help="Inspect this Python environment's packages (a folder like .venv, or its bin/python) "
                             "instead of the environments around; for fix, the environment treated (its pip installs).")


def _declare_check(parser: argparse.ArgumentParser) -> None:
    from cudnn_doctor.render import formats

    _json(parser, "schema cudnn-doctor/report/1", "; the same as --format json")
    _completes(parser.add_argument(
        "--format", dest="output_format", metavar="FORMAT",  # the formats are named in the help
        help=formats.option_help() + " Also [tool.cudnn-doctor] format, CUDNN_DOCTOR_FORMAT."), completion.complete_format)
    parser.add_argument("-o", "--output", metavar="FILE",
                        help=f"Write the {formats.words(formats.documents())} output to FILE, atomically (a temporary "
                             "file beside it, then a rename), instead of stdout.")
    parser.add_argument("--junit-xml", metavar="FILE", help="Also write JUnit XML (one test case per area) to FILE.")
    parser.add_argument("--strict", action=argparse.BooleanOptionalAction, default=None,
                        help="Warnings fail too (exit 1); also [tool.cudnn-doctor] strict, CUDNN_DOCTOR_STRICT.")
    _targets(parser)
    _flag(parser, "--deep", help="Also import each framework in a child process to confirm which cuDNN it really "
                                 "loads (slow).")
    _flag(parser, "-q", "--quiet", help="Print only errors and warnings (nothing when healthy).")
    _flag(parser, "-v", "--verbose", help="Show every detail.")
    parser.set_defaults(_run=check)


def check(**options: Any) -> None:
    from cudnn_doctor.commands.check import check as body

    body(**options)


def _declare_fix(parser: argparse.ArgumentParser) -> None:
    _flag(parser, "-y", "--yes", help="Apply the steps the doctor can run, then check again.")
    _json(parser, "schema cudnn-doctor/plan/1")
    parser.add_argument("--shell", default="bash", metavar="bash|zsh|fish|powershell|cmd|user",
                        help="The shell the environment lines are written for.")
    _targets(parser)
    _flag(parser, "-v", "--verbose", help="Show every detail.")
    parser.set_defaults(_run=fix)


@guarded
def fix(yes: bool, json_output: bool, shell: str, require: list[str] | None, select: list[str] | None,
        ignore: list[str] | None, search_path: list[str] | None, framework: list[str] | None, project: str | None,
        python: str | None, verbose: bool) -> None:
    from cudnn_doctor.commands.fix import main as body

    body(yes, json_output, shell, require or [], select or [], ignore or [], search_path or [], framework or [],
         project, python, verbose, ask=confirm)


# ------------------------------------------------------------------------------------------ compat, explain, image
def _declare_compat(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("framework", nargs="?", metavar="FRAMEWORK[==VERSION]",
                        help="e.g. tensorflow==2.15.0, torch==2.5.1+cu124, jax==0.9.2, onnxruntime-gpu==1.23.2, "
                             "cudnn==9.19.0")
    parser.add_argument("--cuda", help="CUDA version to judge, e.g. 12.2 (12: any 12.x).")
    parser.add_argument("--cudnn", help="cuDNN version to judge, e.g. 8.9.7 (9: any 9.x).")
    parser.add_argument("--driver", help="Driver version to judge, e.g. 535.54.03.")
    parser.add_argument("--compute-capability", help="GPU compute capability, e.g. 8.6 or sm_86.")
    _completes(parser.add_argument("--os", dest="os_name", default="linux", help="linux, windows or macos."),
               completion.complete_os)
    parser.add_argument("--artifact", help="DL4J backend, e.g. nd4j-cuda-10.2.")
    _completes(parser.add_argument("--list", dest="list_table", metavar="TABLE",
                                   help="Print a whole table: a framework's (tensorflow, pytorch, ...: each of "
                                        "compat/rules.toml), cudnn or cuda."), completion.complete_table)
    _json(parser, "schema cudnn-doctor/compat/1")
    _flag(parser, "-v", "--verbose", help="Show the source of every row.")
    parser.set_defaults(_run=compat)


@guarded
def compat(framework: str | None, cuda: str | None, cudnn: str | None, driver: str | None,
           compute_capability: str | None, os_name: str, artifact: str | None, list_table: str | None,
           json_output: bool, verbose: bool) -> None:
    from cudnn_doctor.commands.compat import main as body

    body(framework, cuda, cudnn, driver, compute_capability, os_name, artifact, list_table, json_output, verbose)


def _declare_explain(parser: argparse.ArgumentParser) -> None:
    _completes(parser.add_argument("query", nargs="?", metavar="CODE_OR_MESSAGE",
                                   help="A finding code (CD301) or an error message; - reads standard input."),
               completion.complete_code)
    parser.add_argument("--from-file", metavar="LOG", help="Read the message from a file.")
    _flag(parser, "--list", dest="list_codes",
          help="List the finding codes (those starting with CODE_OR_MESSAGE, if given: CD3).")
    _flag(parser, "--offline-only", help="Only the catalog: do not probe this machine.")
    _json(parser, "schema cudnn-doctor/explain/1")
    _flag(parser, "-v", "--verbose", help="Show every related finding.")
    parser.set_defaults(_run=explain)


@guarded
def explain(query: str | None, from_file: str | None, list_codes: bool, offline_only: bool, json_output: bool,
            verbose: bool) -> None:
    from cudnn_doctor.commands.explain import main as body

    body(query, from_file, offline_only, json_output, verbose, list_codes)


def _declare_image(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("ref", metavar="IMAGE",
                        help="A `docker save` archive, an OCI layout folder (or its tar), or a registry reference "
                             "as docker reads it: nvidia/cuda:TAG, docker.io/..., HOST[:PORT]/NAME[:TAG][@DIGEST].")
    parser.add_argument("--platform", metavar="OS/ARCH", default=None,
                        help="Which image of a multi-platform one: linux/amd64, linux/arm64 (default: this machine's).")
    _flag(parser, "--strict", help="Warnings fail too (exit 1).")
    _json(parser, "schema cudnn-doctor/image/1")
    _flag(parser, "-v", "--verbose", help="Show the image's variables and labels.")
    parser.set_defaults(_run=image)


@guarded
def image(ref: str, strict: bool, json_output: bool, verbose: bool, platform: str | None = None) -> None:
    from cudnn_doctor.commands.image import main as body

    body(ref, strict, json_output, verbose, platform)


# --------------------------------------------------------------------------------------------------------- fleet
def _declare_fleet(parser: argparse.ArgumentParser) -> None:
    commands = _commands(parser, "_fleet_command")
    commands.add_command("merge", _declare_fleet_merge, "What differs between nodes: per field, the majority value "
                                                        "and the nodes that differ; failed nodes.")
    commands.add_command("run", _declare_fleet_run, "Run `check --json` on every node of an allocation or partition "
                                                    "and merge the answers.",
                         "Run `check --json` on every node of an allocation or partition and merge the answers.\n\n"
                         "Everything after the options goes to srun, e.g. "
                         "`fleet run --slurm -- --partition=gpu --nodes=8`.")


def _declare_fleet_merge(parser: argparse.ArgumentParser) -> None:
    parser.usage = "%(prog)s [-h] [--json] REPORT.json... | DIR"  # argparse would write the metavar twice
    parser.add_argument("reports", nargs="+", metavar="REPORT.json... | DIR",
                        help="Nodes' `check --json` reports, or folders of *.json reports.")
    _json(parser, "schema cudnn-doctor/fleet/1")
    parser.set_defaults(_run=fleet_merge, _extra="reports")


@guarded
def fleet_merge(reports: list[str], json_output: bool) -> None:
    from cudnn_doctor.commands.fleet import main_merge

    main_merge(reports, json_output)


def _declare_fleet_run(parser: argparse.ArgumentParser) -> None:
    _flag(parser, "--slurm", help="Run through srun, once per node (the only engine for now).")
    parser.add_argument("--command", dest="command_line", metavar="CMD",
                        help="How a node runs the check (default: this Python, `-m cudnn_doctor check --json`).")
    parser.add_argument("--deadline", type=_number(ascii_decimal), default=600.0, metavar="SECONDS",
                        help="Stop waiting for nodes after this.")
    parser.add_argument("--keep", metavar="DIR", help="Keep every node's report in DIR.")
    _json(parser, "schema cudnn-doctor/fleet/1")
    parser.set_defaults(_run=fleet_run, _extra="srun_options", srun_options=[])


@guarded
def fleet_run(slurm: bool, command_line: str | None, deadline: float, keep: str | None, json_output: bool,
              srun_options: list[str]) -> None:
    from cudnn_doctor.commands.fleet import main_run

    main_run(slurm, list(srun_options), command_line, deadline, keep, json_output)


# --------------------------------------------------------------------------------------------------------- bench
def _declare_bench(parser: argparse.ArgumentParser) -> None:
    _completes(parser.add_argument("--workload", default="all", metavar="conv|lstm|all",
                                   help="Convolution (forward, backward-data, backward-filter), LSTM, or both."),
               completion.complete_workload)
    _completes(parser.add_argument("--dtype", default="fp32", metavar="fp32|tf32|fp16|bf16",
                                   help="Data type; tf32 is float32 data on TF32 tensor cores."), completion.complete_dtype)
    _completes(parser.add_argument("--layout", default="nchw", metavar="nchw|nhwc", help="Convolution tensor layout."),
               completion.complete_layout)
    _completes(parser.add_argument("--size", default="medium", metavar="tiny|small|medium|large",
                                   help="tiny: a smoke test; small: CIFAR-10 layer, LSTM 512; medium: ResNet 3x3 layer "
                                        "32x64x56x56, LSTM 512 (seq 100, batch 64); large: ResNet conv4 layer, LSTM 1024."),
               completion.complete_size)
    parser.add_argument("--workspace-limit", type=_number(ascii_decimal), metavar="MB",
                        help="Largest cuDNN workspace to allow; 0 picks only algorithms that need none (NO_WORKSPACE).")
    parser.add_argument("--device", default="0", metavar="N|all", help="Which GPU, or all of them in turn.")
    _flag(parser, "--no-cpu", help="Skip the CPU baseline (results are still checked, on a slice of the output).")
    parser.add_argument("--cudnn", metavar="PATH", help="Use this libcudnn.so.")
    parser.add_argument("--cudart", metavar="PATH", help="Use this libcudart.so.")
    _completes(parser.add_argument("--api", default="auto", metavar="auto|graph|legacy",
                                   help="Convolution API: graph (cuDNN's backend API, autotuned, as PyTorch), legacy "
                                        "(cudnnFind*, as TensorFlow and cuDNN 7), or auto: graph where it works."),
               completion.complete_api)
    parser.add_argument("--repeats", type=_number(ascii_integer), default=20, metavar="N",
                        help="Timed samples per workload (median).")
    _json(parser, "schema cudnn-doctor/bench/1")
    _flag(parser, "-v", "--verbose", help="Show every detail.")
    parser.set_defaults(_run=bench)


@guarded
def bench(workload: str, dtype: str, layout: str, size: str, workspace_limit: float | None, device: str,
          no_cpu: bool, cudnn: str | None, cudart: str | None, api: str, repeats: int, json_output: bool,
          verbose: bool) -> None:
    from cudnn_doctor.commands.bench import main as body

    body(workload, dtype, layout, size, workspace_limit, device, no_cpu, cudnn, cudart, api, repeats, json_output,
         verbose)


# ------------------------------------------------------------------------------------------- install, uninstall
def _declare_install(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--from", dest="location", metavar="PATH_OR_URL",
                        help="A cuDNN archive (.tar.xz, .tgz, .zip) or wheel (.whl), as a local path or a URL.")
    parser.add_argument("--version", metavar="X.Y.Z", help="A cuDNN release from NVIDIA's redistributable manifest.")
    parser.add_argument("--cuda", type=_number(ascii_integer), metavar="MAJOR",
                        help="The CUDA major of the build (default: the toolkit's, else the driver's, else the newest).")
    parser.add_argument("--mirror", metavar="URL",
                        help="Base URL, or a local folder, that replaces NVIDIA's redist site (air-gapped sites).")
    parser.add_argument("--sha256", metavar="HEX", help="Refuse the archive unless it has this sha256.")
    _flag(parser, "--no-verify", help="Install an archive whose manifest entry lists no sha256 or size (unchecked; "
                                      "a warning says so).")
    parser.add_argument("--prefix", metavar="DIR", help="Where to install (default: the CUDA toolkit check picks).")
    _completes(parser.add_argument("--os", dest="os_name", metavar="linux|windows|macos",
                                   help="Plan for another OS's layout (plan only)."), completion.complete_os)
    _flag(parser, "--dry-run", help="Show the plan and stop.")
    _flag(parser, "-y", "--yes", help="Do not ask before changing anything.")
    _flag(parser, "--replace", dest="replace_majors",
          help="Replace another cuDNN major in the prefix whole (backed up; uninstall restores it) instead of refusing.")
    _flag(parser, "--force", help="Install a cuDNN built for another CUDA major than the prefix's toolkit (check will "
                                  "call it CD306).")
    _json(parser, "cudnn-doctor/install/1")
    _flag(parser, "-v", "--verbose", help="List every file of the plan.")
    parser.set_defaults(_run=install)


@guarded
def install(location: str | None, version: str | None, cuda: int | None, mirror: str | None, sha256: str | None,
            no_verify: bool, prefix: str | None, os_name: str | None, dry_run: bool, yes: bool, replace_majors: bool,
            force: bool, json_output: bool, verbose: bool) -> None:
    from cudnn_doctor.commands.install import InstallOptions, run_install, run_transaction

    options = InstallOptions(location=location, version=version, cuda_major=cuda, mirror=mirror, sha256=sha256,
                             prefix=prefix, os_name=os_name, dry_run=dry_run, yes=yes, no_verify=no_verify,
                             replace_majors=replace_majors, force=force)
    run_transaction("install", lambda ui: run_install(options, ui), json_output, verbose, _ask_on_stderr)


def _declare_uninstall(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--prefix", required=True, metavar="DIR", help="The prefix an install was made into.")
    _flag(parser, "--dry-run", help="Show the plan and stop.")
    _flag(parser, "-y", "--yes", help="Do not ask before changing anything.")
    _flag(parser, "--force", help="Remove installed files even if changed since.")
    _json(parser, "cudnn-doctor/install/1")
    _flag(parser, "-v", "--verbose", help="Show every detail.")
    parser.set_defaults(_run=uninstall)


@guarded
def uninstall(prefix: str, dry_run: bool, yes: bool, force: bool, json_output: bool, verbose: bool) -> None:
    from cudnn_doctor.commands.install import run_transaction
    from cudnn_doctor.commands.uninstall import run_uninstall

    run_transaction("uninstall", lambda ui: run_uninstall(prefix, dry_run, yes, force, ui), json_output, verbose,
                    _ask_on_stderr)


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
COMMANDS: tuple[tuple[str, Callable[[argparse.ArgumentParser], None], str], ...] = (
    ("check", _declare_check, "Diagnose the GPUs, driver, CUDA toolkits, cuDNN copies and frameworks."),
    ("compat", _declare_compat, "What a framework release needs, and whether a CUDA/cuDNN/driver/GPU combination works."),
    ("explain", _declare_explain, "What a finding code or a framework's error message means, and the fix on this machine."),
    ("fleet", _declare_fleet, "Many nodes: merge their reports, or run check on each through Slurm."),
    ("image", _declare_image, "An image judged before it runs: its CUDA, cuDNN and frameworks against this node's driver "
                              "and GPUs."),
    ("bench", _declare_bench, "Run cuDNN convolution and LSTM through its C API: time them, check them against NumPy."),
    ("fix", _declare_fix, "The one treatment that makes `check` clean here; --yes applies it and checks again."),
    ("install", _declare_install, "Install cuDNN into a prefix: plan first, then all or nothing, with a backup and a "
                                  "manifest."),
    ("uninstall", _declare_uninstall, "Remove exactly what the last install into PREFIX wrote, and restore what it "
                                      "replaced."),
)


def build_parser(every_command: bool = False) -> Parser:
    """The tool's parser; each command's options are declared when that command is chosen, or all of them now
    (EVERY_COMMAND: for completion)."""
    parser = Parser(prog=PROG, description=SUMMARY, add_help=False)
    parser.add_argument("-h", "--help", action="help", help="Show this message and exit.")
    parser.add_argument("--version", action="version", version=f"{PROG} {__version__}", help="Print the version and exit.")
    parser.add_argument("--install-completion", nargs="?", const="", metavar="SHELL",
                        help="Install completion for SHELL (bash, zsh, fish or powershell; default: the running shell).")
    parser.add_argument("--show-completion", nargs="?", const="", metavar="SHELL",
                        help="Show completion for SHELL (default: the running shell), to copy it or customize the "
                             "installation.")
    commands = _commands(parser, "_command")
    for name, declare, summary in COMMANDS:
        commands.add_command(name, declare, summary)
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


def _invoke_app(args: list[str]) -> None:
    """Parse ARGS and run the command; ends with SystemExit(status), as a command's body does."""
    root = build_parser()
    try:
        namespace, extra = root.parse_known_args(args)
        where = _innermost(namespace, root)
        if namespace.show_completion is not None or namespace.install_completion is not None:
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
        run = getattr(namespace, "_run", None)
        if run is None:  # a bare `cudnn-doctor` (or `fleet`): its help is the answer
            where.print_help()
            raise SystemExit(2)
    except UsageError as error:
        raise SystemExit(_usage_error(error, args)) from None
    run(**options)


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

    def write(exit_code: int, message: str, fix: str) -> None:
        write_error_json(exit_code, message, fix, command=name)

    return report_usage_error(error.parser, error.message, error.words, json_wanted(name, params), write)


def _explain_options() -> dict[str, bool]:
    """explain's options as its parser declares them, each with whether it takes a value."""
    parser = Parser(prog=f"{PROG} explain", add_help=False)
    parser.add_argument("-h", "--help", action="help")
    _declare_explain(parser)
    return {name: action.nargs != 0 for action in parser._actions for name in action.option_strings}


def main(args: list[str] | None = None) -> None:
    """Run the command line ARGS (the process's own by default) to its end: SystemExit with its status."""
    if "_ARGCOMPLETE" in os.environ:  # the shell asks for completions (argcomplete's protocol): nothing else runs
        completion.complete(build_parser(every_command=True))
    args = sys.argv[1:] if args is None else list(args)
    if args[:1] == ["explain"]:  # `explain "-x"`: any text is the message
        from cudnn_doctor.explain.arguments import message_first

        args = message_first(args, _explain_options())
    command.run(lambda: command.call(_invoke_app, args=args), lambda: _wants_json(args))


def _wants_json(args: list[str]) -> bool:
    from cudnn_doctor.usage_errors import read_anyway

    return json_wanted(*read_anyway(build_parser(every_command=True), args))


if __name__ == "__main__":
    main()
