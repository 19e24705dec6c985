"""The command line, read by typer, the one parser of every command: parse, call the command's module
under commands/, exit. How a command runs (its guard, its exit, its errors' JSON) is command.py's.

No `from __future__ import annotations` here: typer reads every command's signature at each start, and
annotations already evaluated cost it less than strings it must evaluate (8 ms of a check on 2 cores)."""

import sys
from collections.abc import Callable
from typing import Annotated, Any, Optional

import typer
from typer.core import TyperGroup

from cudnn_doctor import __version__, command, completion
from cudnn_doctor.command import guarded, json_wanted, write_error_json
from cudnn_doctor.knowledge.inputs import ascii_decimal, ascii_integer
from cudnn_doctor.render import formats
from cudnn_doctor.streams import say


class _Commands(TyperGroup):
    """The tool's group, its commands built from their declarations when click asks for one (click's own
    pattern for lazily loaded subcommands): typer reads a command's whole signature to build it, and a
    check needs only check's (10 ms of its start on 2 cores). Help and completion ask for all of them."""

    declared: dict[str, Any] = {}  # noqa: RUF012 - set once, on the one instance root() makes

    def list_commands(self, ctx: Any) -> list[str]:
        return list(self.declared)

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        if cmd_name not in self.commands and cmd_name in self.declared:
            self.commands[cmd_name] = self.declared[cmd_name]()
        return self.commands.get(cmd_name)


app = typer.Typer(
    name="cudnn-doctor",
    cls=_Commands,
    help="Find, check, install and benchmark CUDA and cuDNN.",
    no_args_is_help=True,
    add_completion=True,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _version_callback(value: bool) -> None:
    if value:
        typer.echo(f"cudnn-doctor {__version__}")
        raise typer.Exit(0)


@app.callback()
def main_options(
    version: bool = typer.Option(False, "--version", callback=_version_callback, is_eager=True,
                                 help="Print the version and exit."),
) -> None:
    """Find, check, install and benchmark CUDA and cuDNN."""



# The options that choose what a check looks at, judges and how it answers: declared once here, taken by
# `check` and by `fix` (the same targets), resolved by commands/check.py's check_settings() and check_options().
SelectOption = Annotated[list[str], typer.Option(
    "--select", metavar="CODE|PREFIX",
    help="Only these findings count (CD306, or a prefix: CD3). Repeatable; also \\[tool.cudnn-doctor] select "
         "in pyproject.toml, CUDNN_DOCTOR_SELECT.")]
IgnoreOption = Annotated[list[str], typer.Option(
    "--ignore", metavar="CODE|PREFIX",
    help="These findings do not count: not shown, not in the exit code or CI formats, listed as ignored in the "
         "JSON. Repeatable; also \\[tool.cudnn-doctor] ignore, CUDNN_DOCTOR_IGNORE.")]
StrictOption = Annotated[Optional[bool], typer.Option(
    "--strict/--no-strict", help="Warnings fail too (exit 1); also \\[tool.cudnn-doctor] strict, CUDNN_DOCTOR_STRICT.")]
RequireOption = Annotated[list[str], typer.Option(
    "--require", metavar="SPEC",
    help="Fail (exit 1) unless met: 'cudnn>=9.1', 'cuda>=12.4', 'driver>=550', 'gpu', 'torch>=2.4'. Repeatable; "
         "also \\[tool.cudnn-doctor] require, CUDNN_DOCTOR_REQUIRE (';' between specs).")]
FormatOption = Annotated[Optional[str], typer.Option(
    "--format", metavar="FORMAT",  # the formats are named in the help: a metavar this long splits its words
    autocompletion=completion.complete_format, help=formats.option_help() + " Also \\[tool.cudnn-doctor] format, "
                                                                          "CUDNN_DOCTOR_FORMAT.")]
SearchPathOption = Annotated[list[str], typer.Option(
    "--search-path", metavar="DIR", help="Another folder to look for cuDNN in. Repeatable.")]
FrameworkOption = Annotated[list[str], typer.Option(
    "--framework", metavar="NAME[==VER]", help="Check a framework that is not installed, e.g. tensorflow==2.15.0.")]
ProjectOption = Annotated[Optional[str], typer.Option(
    "--project", metavar="DIR|FILE",
    help="Maven/Gradle project to read DL4J backends from: its folder, its pom.xml or build.gradle, or a folder "
         "of projects (default: the working folder; its subfolders too at a repository's top).")]
PythonOption = Annotated[Optional[str], typer.Option(
    "--python", metavar="ENV|PATH",
    help="Inspect this Python environment's packages (a folder like .venv, or its bin/python) instead of the "
         "environments around; for fix, the environment treated (its pip installs).")]


@app.command()
def check(
    json_output: bool = typer.Option(False, "--json", help="Print one JSON object (schema cudnn-doctor/report/1); "
                                                          "the same as --format json."),
    output_format: FormatOption = None,
    output: Optional[str] = typer.Option(None, "--output", "-o", metavar="FILE",
                                         help=f"Write the {formats.words(formats.documents())} output to FILE, atomically "
                                              "(a temporary file beside it, then a rename), instead of stdout."),
    junit_xml: Optional[str] = typer.Option(None, "--junit-xml", metavar="FILE",
                                            help="Also write JUnit XML (one test case per area) to FILE."),
    require: RequireOption = [],  # noqa: B006 - typer copies its defaults
    strict: StrictOption = None,
    select: SelectOption = [],  # noqa: B006
    ignore: IgnoreOption = [],  # noqa: B006
    search_path: SearchPathOption = [],  # noqa: B006
    framework: FrameworkOption = [],  # noqa: B006
    project: ProjectOption = None,
    python: PythonOption = None,
    deep: bool = typer.Option(False, "--deep", help="Also import each framework in a child process to confirm "
                                                    "which cuDNN it really loads (slow)."),
    quiet: bool = typer.Option(False, "-q", "--quiet", help="Print only errors and warnings (nothing when healthy)."),
    verbose: bool = typer.Option(False, "-v", "--verbose", help="Show every detail."),
) -> None:
    """Diagnose the GPUs, driver, CUDA toolkits, cuDNN copies and frameworks."""
    from cudnn_doctor.commands.check import check as body

    body(json_output=json_output, output_format=output_format, output=output, junit_xml=junit_xml,
         require=require, strict=strict, select=select, ignore=ignore, search_path=search_path,
         framework=framework, project=project, python=python, deep=deep, quiet=quiet, verbose=verbose)


@app.command()
@guarded
def compat(
    framework: Optional[str] = typer.Argument(None, metavar="FRAMEWORK[==VERSION]",
                                              help="e.g. tensorflow==2.15.0, torch==2.5.1+cu124, jax==0.9.2, "
                                                   "onnxruntime-gpu==1.23.2, cudnn==9.19.0"),
    cuda: Optional[str] = typer.Option(None, "--cuda", help="CUDA version to judge, e.g. 12.2 (12: any 12.x)."),
    cudnn: Optional[str] = typer.Option(None, "--cudnn", help="cuDNN version to judge, e.g. 8.9.7 (9: any 9.x)."),
    driver: Optional[str] = typer.Option(None, "--driver", help="Driver version to judge, e.g. 535.54.03."),
    compute_capability: Optional[str] = typer.Option(None, "--compute-capability",
                                                     help="GPU compute capability, e.g. 8.6 or sm_86."),
    os_name: str = typer.Option("linux", "--os", help="linux, windows or macos.", autocompletion=completion.complete_os),
    artifact: Optional[str] = typer.Option(None, "--artifact", help="DL4J backend, e.g. nd4j-cuda-10.2."),
    list_table: Optional[str] = typer.Option(None, "--list", metavar="TABLE", autocompletion=completion.complete_table,
                                             help="Print a whole table: a framework's (tensorflow, pytorch, ...: each of "
                                                  "compat/rules.toml), cudnn or cuda."),
    json_output: bool = typer.Option(False, "--json", help="Print one JSON object (schema cudnn-doctor/compat/1)."),
    verbose: bool = typer.Option(False, "-v", "--verbose", help="Show the source of every row."),
) -> None:
    """What a framework release needs, and whether a CUDA/cuDNN/driver/GPU combination works."""
    from cudnn_doctor.commands.compat import main as body

    body(framework, cuda, cudnn, driver, compute_capability, os_name, artifact, list_table, json_output, verbose)


@app.command()
@guarded
def explain(
    query: Optional[str] = typer.Argument(None, metavar="CODE_OR_MESSAGE", autocompletion=completion.complete_code,
                                          help="A finding code (CD301) or an error message; - reads standard input."),
    from_file: Optional[str] = typer.Option(None, "--from-file", metavar="LOG", help="Read the message from a file."),
    list_codes: bool = typer.Option(False, "--list", help="List the finding codes (those starting with "
                                                          "CODE_OR_MESSAGE, if given: CD3)."),
    offline_only: bool = typer.Option(False, "--offline-only", help="Only the catalog: do not probe this machine."),
    json_output: bool = typer.Option(False, "--json", help="Print one JSON object (schema cudnn-doctor/explain/1)."),
    verbose: bool = typer.Option(False, "-v", "--verbose", help="Show every related finding."),
) -> None:
    """What a finding code or a framework's error message means, and the fix on this machine."""
    from cudnn_doctor.commands.explain import main as body

    body(query, from_file, offline_only, json_output, verbose, list_codes)


fleet_app = typer.Typer(name="fleet", help="Many nodes: merge their reports, or run check on each through Slurm.",
                        no_args_is_help=True, add_completion=False)
app.add_typer(fleet_app, name="fleet")


@fleet_app.command("merge")
@guarded
def fleet_merge(
    reports: list[str] = typer.Argument(..., metavar="REPORT.json... | DIR",
                                        help="Nodes' `check --json` reports, or folders of *.json reports."),
    json_output: bool = typer.Option(False, "--json", help="Print one JSON object (schema cudnn-doctor/fleet/1)."),
) -> None:
    """What differs between nodes: per field, the majority value and the nodes that differ; failed nodes."""
    from cudnn_doctor.commands.fleet import main_merge

    main_merge(reports, json_output)


@fleet_app.command("run", context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
@guarded
def fleet_run(
    context: typer.Context,
    slurm: bool = typer.Option(False, "--slurm", help="Run through srun, once per node (the only engine for now)."),
    command_line: Optional[str] = typer.Option(None, "--command", metavar="CMD",
                                               help="How a node runs the check (default: this Python, "
                                                    "`-m cudnn_doctor check --json`)."),
    deadline: float = typer.Option(600.0, "--deadline", metavar="SECONDS", help="Stop waiting for nodes after this.",
                                   parser=ascii_decimal),
    keep: Optional[str] = typer.Option(None, "--keep", metavar="DIR", help="Keep every node's report in DIR."),
    json_output: bool = typer.Option(False, "--json", help="Print one JSON object (schema cudnn-doctor/fleet/1)."),
) -> None:
    """Run `check --json` on every node of an allocation or partition and merge the answers.

    Everything after the options goes to srun, e.g. `fleet run --slurm -- --partition=gpu --nodes=8`.
    """
    from cudnn_doctor.commands.fleet import main_run

    main_run(slurm, list(context.args), command_line, deadline, keep, json_output)


@app.command("image")
@guarded
def image(
    ref: str = typer.Argument(..., metavar="IMAGE",
                              help="A `docker save` archive, an OCI layout folder (or its tar), or a registry "
                                   "reference HOST[:PORT]/NAME[:TAG][@DIGEST]."),
    strict: bool = typer.Option(False, "--strict", help="Warnings fail too (exit 1)."),
    json_output: bool = typer.Option(False, "--json", help="Print one JSON object (schema cudnn-doctor/image/1)."),
    verbose: bool = typer.Option(False, "-v", "--verbose", help="Show the image's variables and labels."),
) -> None:
    """An image judged before it runs: its CUDA, cuDNN and frameworks against this node's driver and GPUs."""
    from cudnn_doctor.commands.image import main as body

    body(ref, strict, json_output, verbose)


@app.command("bench")
@guarded
def bench(
    workload: str = typer.Option("all", "--workload", metavar="conv|lstm|all", autocompletion=completion.complete_workload,
                                 help="Convolution (forward, backward-data, backward-filter), LSTM, or both."),
    dtype: str = typer.Option("fp32", "--dtype", metavar="fp32|tf32|fp16|bf16", autocompletion=completion.complete_dtype,
                              help="Data type; tf32 is float32 data on TF32 tensor cores."),
    layout: str = typer.Option("nchw", "--layout", metavar="nchw|nhwc", help="Convolution tensor layout.",
                               autocompletion=completion.complete_layout),
    size: str = typer.Option("medium", "--size", metavar="tiny|small|medium|large", autocompletion=completion.complete_size,
                             help="tiny: a smoke test; small: CIFAR-10 layer, LSTM 512; medium: ResNet 3x3 layer 32x64x56x56, "
                                  "LSTM 512 (seq 100, batch 64); large: ResNet conv4 layer, LSTM 1024."),
    workspace_limit: Optional[float] = typer.Option(
        None, "--workspace-limit", metavar="MB", parser=ascii_decimal,
        help="Largest cuDNN workspace to allow; 0 picks only algorithms that need none (NO_WORKSPACE)."),
    device: str = typer.Option("0", "--device", metavar="N|all", help="Which GPU, or all of them in turn."),
    no_cpu: bool = typer.Option(False, "--no-cpu", help="Skip the CPU baseline (results are still checked, "
                                                       "on a slice of the output)."),
    cudnn: Optional[str] = typer.Option(None, "--cudnn", metavar="PATH", help="Use this libcudnn.so."),
    cudart: Optional[str] = typer.Option(None, "--cudart", metavar="PATH", help="Use this libcudart.so."),
    api: str = typer.Option("auto", "--api", metavar="auto|graph|legacy", autocompletion=completion.complete_api,
                            help="Convolution API: graph (cuDNN's backend API, autotuned, as PyTorch), legacy "
                                 "(cudnnFind*, as TensorFlow and cuDNN 7), or auto: graph where it works."),
    repeats: int = typer.Option(20, "--repeats", metavar="N", help="Timed samples per workload (median).",
                                parser=ascii_integer),
    json_output: bool = typer.Option(False, "--json", help="Print one JSON object (schema cudnn-doctor/bench/1)."),
    verbose: bool = typer.Option(False, "-v", "--verbose", help="Show every detail."),
) -> None:
    """Run cuDNN convolution and LSTM through its C API: time them, check them against NumPy."""
    from cudnn_doctor.commands.bench import main as body

    body(workload, dtype, layout, size, workspace_limit, device, no_cpu, cudnn, cudart, api, repeats, json_output,
         verbose)


@app.command("fix")
@guarded
def fix(
    yes: bool = typer.Option(False, "--yes", "-y", help="Apply the steps the doctor can run, then check again."),
    json_output: bool = typer.Option(False, "--json", help="Print one JSON object (schema cudnn-doctor/plan/1)."),
    shell: str = typer.Option("bash", "--shell", metavar="bash|zsh|fish|powershell|cmd|user",
                              help="The shell the environment lines are written for."),
    require: RequireOption = [],  # noqa: B006 - typer copies its defaults
    select: SelectOption = [],  # noqa: B006
    ignore: IgnoreOption = [],  # noqa: B006
    search_path: SearchPathOption = [],  # noqa: B006
    framework: FrameworkOption = [],  # noqa: B006
    project: ProjectOption = None,
    python: PythonOption = None,
    verbose: bool = typer.Option(False, "-v", "--verbose", help="Show every detail."),
) -> None:
    """The one treatment that makes `check` clean here; --yes applies it and checks again."""
    from cudnn_doctor.commands.fix import main as body

    body(yes, json_output, shell, require, select, ignore, search_path, framework, project, python, verbose,
         ask=lambda question: typer.confirm(question, default=False))


@app.command("install")
@guarded
def install(
    location: Optional[str] = typer.Option(None, "--from", metavar="PATH_OR_URL",
                                           help="A cuDNN archive (.tar.xz, .tgz, .zip) or wheel (.whl), "
                                                "as a local path or a URL."),
    version: Optional[str] = typer.Option(None, "--version", metavar="X.Y.Z",
                                          help="A cuDNN release from NVIDIA's redistributable manifest."),
    cuda: Optional[int] = typer.Option(None, "--cuda", metavar="MAJOR", parser=ascii_integer,
                                       help="The CUDA major of the build (default: the toolkit's, else the "
                                            "driver's, else the newest)."),
    mirror: Optional[str] = typer.Option(None, "--mirror", metavar="URL",
                                         help="Base URL, or a local folder, that replaces NVIDIA's redist site (air-gapped sites)."),
    sha256: Optional[str] = typer.Option(None, "--sha256", metavar="HEX",
                                         help="Refuse the archive unless it has this sha256."),
    no_verify: bool = typer.Option(False, "--no-verify",
                                   help="Install an archive whose manifest entry lists no sha256 or size "
                                        "(unchecked; a warning says so)."),
    prefix: Optional[str] = typer.Option(None, "--prefix", metavar="DIR",
                                         help="Where to install (default: the CUDA toolkit check picks)."),
    os_name: Optional[str] = typer.Option(None, "--os", metavar="linux|windows|macos", autocompletion=completion.complete_os,
                                          help="Plan for another OS's layout (plan only)."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Show the plan and stop."),
    yes: bool = typer.Option(False, "--yes", "-y", help="Do not ask before changing anything."),
    replace_majors: bool = typer.Option(False, "--replace",
                                        help="Replace another cuDNN major in the prefix whole (backed up; "
                                             "uninstall restores it) instead of refusing."),
    force: bool = typer.Option(False, "--force", help="Install a cuDNN built for another CUDA major than the "
                                                      "prefix's toolkit (check will call it CD306)."),
    json_output: bool = typer.Option(False, "--json", help="Print one JSON object (cudnn-doctor/install/1)."),
    verbose: bool = typer.Option(False, "-v", "--verbose", help="List every file of the plan."),
) -> None:
    """Install cuDNN into a prefix: plan first, then all or nothing, with a backup and a manifest."""
    from cudnn_doctor.commands.install import InstallOptions, run_install, run_transaction

    options = InstallOptions(location=location, version=version, cuda_major=cuda, mirror=mirror, sha256=sha256,
                             prefix=prefix, os_name=os_name, dry_run=dry_run, yes=yes, no_verify=no_verify,
                             replace_majors=replace_majors, force=force)
    run_transaction("install", lambda ui: run_install(options, ui), json_output, verbose, _ask_on_stderr)


@app.command("uninstall")
@guarded
def uninstall(
    prefix: str = typer.Option(..., "--prefix", metavar="DIR", help="The prefix an install was made into."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Show the plan and stop."),
    yes: bool = typer.Option(False, "--yes", "-y", help="Do not ask before changing anything."),
    force: bool = typer.Option(False, "--force", help="Remove installed files even if changed since."),
    json_output: bool = typer.Option(False, "--json", help="Print one JSON object (cudnn-doctor/install/1)."),
    verbose: bool = typer.Option(False, "-v", "--verbose", help="Show every detail."),
) -> None:
    """Remove exactly what the last install into PREFIX wrote, and restore what it replaced."""
    from cudnn_doctor.commands.install import run_transaction
    from cudnn_doctor.commands.uninstall import run_uninstall

    run_transaction("uninstall", lambda ui: run_uninstall(prefix, dry_run, yes, force, ui), json_output, verbose,
                    _ask_on_stderr)


def _ask_on_stderr(question: str) -> bool:
    return typer.confirm(question, default=False, err=True)


def _usage_error(error: Exception, args: list[str]) -> int:
    """A usage error found by the option parser: one line, exit 2, one JSON object with --json (usage_errors.py)."""
    from cudnn_doctor.usage_errors import report_usage_error

    root = click_root()
    name, params = read_anyway(root, args)
    def write(exit_code: int, message: str, fix: str) -> None:
        write_error_json(exit_code, message, fix, command=name)

    return report_usage_error(error, json_wanted(name, params), root, args, write)


def read_anyway(root, args: list[str]) -> tuple[str | None, dict[str, Any]]:  # type: ignore[no-untyped-def]
    """The command and the options the parser can read from ARGS despite what is wrong with them (an unknown
    option, a bad value): whether a failed command line asked for JSON is the parser's answer too."""
    try:
        context = root.make_context("cudnn-doctor", list(args), resilient_parsing=True)
        rest = [*_protected(context), *context.args]
        command: Any = root
        name = None
        while rest and hasattr(command, "get_command"):
            sub = command.get_command(context, rest[0])
            if sub is None:  # a misspelt command: its options read as the one it is closest to would read them
                import difflib

                closest = difflib.get_close_matches(rest[0], list(command.list_commands(context)), n=1, cutoff=0.7)
                sub = command.get_command(context, closest[0]) if closest else None
            if sub is None:
                break
            name = name or rest[0]
            context = sub.make_context(rest[0], rest[1:], parent=context, resilient_parsing=True,
                                       ignore_unknown_options=True)
            command, rest = sub, [*_protected(context), *context.args]
        return name, dict(context.params)
    except Exception:  # noqa: BLE001 - nothing readable: no JSON asked for
        return None, {}


def _protected(context: Any) -> list[str]:
    """A group's subcommand and what follows it, as click keeps them (renamed in click 8.2)."""
    return list(getattr(context, "_protected_args", None) or getattr(context, "protected_args", None) or [])


def main(args: list[str] | None = None) -> None:
    """Run the command line ARGS (the process's own by default) to its end: SystemExit with its status."""
    from cudnn_doctor.completion import named_shell_request

    args = sys.argv[1:] if args is None else list(args)
    shell_script = named_shell_request(args)  # `--show-completion zsh`: typer's option takes no shell
    if shell_script is not None:
        sys.exit(shell_script)
    from cudnn_doctor.explain.arguments import message_first

    if args[:1] == ["explain"]:  # `explain "--- pasted log"`: any text is the message
        args = message_first(args, _options_of("explain"))
    command.run(lambda: command.call(_invoke_app, args=args), lambda: json_wanted(*read_anyway(click_root(), args)))


def _options_of(name: str) -> dict[str, bool] | None:
    """The options command NAME declares (each with whether it takes a value), as its parser reads them."""
    command = click_root().get_command(None, name)  # type: ignore[arg-type]
    if command is None:
        return None
    options = {"-h": False, "--help": False}
    for param in command.params:
        if param.param_type_name == "option":  # click's Option (typer's own copy of click)
            for flag in (*param.opts, *param.secondary_opts):
                options[flag] = not getattr(param, "is_flag", False) and not getattr(param, "count", False)
    return options


def click_root() -> _Commands:
    """The click group typer makes of app: its own options now, each command when click asks for it."""
    import copy

    from typer.main import get_command, get_command_from_info

    bare = copy.copy(app)  # the callback, its options and settings; no command built yet
    bare.registered_commands, bare.registered_groups = [], []
    root = get_command(bare)
    assert isinstance(root, _Commands)

    def build(info: Any) -> Callable[[], Any]:
        return lambda: get_command_from_info(info, pretty_exceptions_short=app.pretty_exceptions_short,
                                             rich_markup_mode=app.rich_markup_mode)

    declared: dict[str, Callable[[], Any]] = {}
    for info in app.registered_commands:
        declared[info.name or info.callback.__name__.replace("_", "-")] = build(info)  # type: ignore[union-attr]
    for group in app.registered_groups:
        declared[group.name] = lambda typer_app=group.typer_instance: get_command(typer_app)  # type: ignore[index,misc]
    root.declared = declared
    return root


def _invoke_app(args: list[str]) -> None:
    """Parse ARGS with typer and run the command; ends with SystemExit(status), as a command's body does."""
    # click's ClickException (click itself, or the copy newer typers carry), found through what typer exports
    usage_errors: tuple[type[Exception], ...] = tuple(
        c for c in typer.BadParameter.__mro__ if c.__name__ == "ClickException")
    try:
        exit_code = click_root().main(args=args, prog_name="cudnn-doctor", standalone_mode=False)
    except usage_errors as error:
        raise SystemExit(_usage_error(error, args)) from None
    except typer.Abort:
        from cudnn_doctor import signals

        if signals.received() is None:  # not a signal: click's prompt met the end of its input
            say("Aborted!")
            raise SystemExit(1) from None
        raise SystemExit(signals.exit_code()) from None
    raise SystemExit(exit_code)


if __name__ == "__main__":
    main()
