"""The command line: parse, call a command module, render, exit. Nothing else lives here."""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Callable
from typing import Any, NoReturn, Optional, TypeVar

import typer

from cudnn_doctor import __version__
from cudnn_doctor.errors import DoctorError

app = typer.Typer(
    name="cudnn-doctor",
    help="Find, check, install and benchmark CUDA and cuDNN.",
    no_args_is_help=True,
    add_completion=True,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)
ISSUES_URL = "https://github.com/cudnn-doctor/cudnn-doctor/issues"
ERROR_SCHEMA = "cudnn-doctor/error/1"
CLOSED_PIPE_EXIT = 141  # 128 + SIGPIPE: what the shell reports for a tool whose reader went away
F = TypeVar("F", bound=Callable[..., Any])


def _console(stderr: bool = False):  # type: ignore[no-untyped-def]
    from rich.console import Console

    class DoctorConsole(Console):
        def on_broken_pipe(self) -> None:  # rich's own exits with 1; ours ends as every command does
            stdout_closed()

    console = DoctorConsole(stderr=stderr, highlight=False)
    console.soft_wrap = not console.is_terminal  # piped output: one line per line, no wrapping at 80
    return console


def json_requested(args: list[str] | None = None) -> bool:
    """Whether the command line asks for JSON (`--json`, `--format json`), whatever else is wrong with it."""
    args = sys.argv[1:] if args is None else args
    if "--" in args:
        args = args[:args.index("--")]
    for index, arg in enumerate(args):
        if arg == "--json" or arg == "--format=json" or (arg == "--format" and args[index + 1:index + 2] == ["json"]):
            return True
    return False


def _command_name(args: list[str] | None = None) -> str | None:
    args = sys.argv[1:] if args is None else args
    return next((arg for arg in args if not arg.startswith("-")), None)


def write_error_json(exit_code: int, message: str, fix: str | None = None, title: str | None = None,
                     code: str | None = None) -> None:
    """The one JSON object of a failed command (`cudnn-doctor/error/1`), unless the command already printed its own."""
    from cudnn_doctor.render import json_out

    if json_out.written:
        return
    json_out.write_json({
        "schema": ERROR_SCHEMA,
        "tool": {"name": "cudnn-doctor", "version": __version__},
        "command": _command_name(),
        "error": {"code": code, "title": title or ("Usage error" if exit_code == 2 else "Error"),
                  "message": message, "fix": fix},
        "exit_code": exit_code,
    })


def stdout_closed() -> NoReturn:
    """The reader of our output went away (`... | head -1`): end quietly, as a Unix tool killed by SIGPIPE would."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())  # the interpreter's last flush goes nowhere, without a complaint
    except (OSError, ValueError):
        pass
    raise typer.Exit(CLOSED_PIPE_EXIT)


def guarded(function: F) -> F:
    """Turn DoctorError into one line and exit 2; anything else is our bug: exit 3.

    With --json on the command line the failure is also one JSON object on standard output."""

    @functools.wraps(function)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        verbose = bool(kwargs.get("verbose"))
        want_json = json_requested()
        try:
            return function(*args, **kwargs)
        except BrokenPipeError:
            stdout_closed()
        except DoctorError as error:
            message = f"cudnn-doctor: error: {error.message}"
            if error.fix:
                message += f" (fix: {error.fix})"
            sys.stderr.write(message + "\n")
            if want_json:
                found = error.finding
                write_error_json(error.exit_code, error.message, error.fix, found.title if found else None,
                                 found.code if found else None)
            raise typer.Exit(error.exit_code) from None
        except (typer.Exit, typer.Abort, SystemExit):
            raise
        except KeyboardInterrupt:
            sys.stderr.write("cudnn-doctor: interrupted\n")
            if want_json:
                write_error_json(130, "interrupted", title="Interrupted")
            raise typer.Exit(130) from None
        except Exception as error:  # a bug in the doctor, not a problem of the machine
            if verbose:
                import traceback

                traceback.print_exc()
            report = f"this is a bug in cudnn-doctor {__version__}: please report it at {ISSUES_URL}"
            sys.stderr.write(f"cudnn-doctor: internal error: {type(error).__name__}: {error} "
                             f"({report}; -v shows the traceback)\n")
            if want_json:
                write_error_json(3, f"{type(error).__name__}: {error}", report, title="Internal error")
            raise typer.Exit(3) from None

    return wrapper  # type: ignore[return-value]


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


CHECK_FORMATS = ("text", "json", "github", "junit", "prometheus")


@app.command()
@guarded
def check(
    json_output: bool = typer.Option(False, "--json", help="Print one JSON object (schema cudnn-doctor/report/1); "
                                                          "the same as --format json."),
    output_format: Optional[str] = typer.Option(None, "--format", metavar="text|json|github|junit|prometheus",
                                                help="text (default); json; github: the report plus GitHub Actions "
                                                     "annotations and a job summary ($GITHUB_STEP_SUMMARY); "
                                                     "junit: JUnit XML, one test case per area; prometheus: "
                                                     "metrics for node_exporter's textfile collector."),
    output: Optional[str] = typer.Option(None, "--output", "-o", metavar="FILE",
                                         help="Write the json, junit or prometheus output to FILE, atomically "
                                              "(a temporary file beside it, then a rename), instead of stdout."),
    junit_xml: Optional[str] = typer.Option(None, "--junit-xml", metavar="FILE",
                                            help="Also write JUnit XML (one test case per area) to FILE."),
    require: list[str] = typer.Option([], "--require", metavar="SPEC",
                                      help="Fail (exit 1) unless met: 'cudnn>=9.1', 'cuda>=12.4', 'driver>=550', "
                                           "'gpu', 'torch>=2.4'. Repeatable."),
    strict: bool = typer.Option(False, "--strict", help="Warnings fail too (exit 1)."),
    search_path: list[str] = typer.Option([], "--search-path", metavar="DIR",
                                          help="Another folder to look for cuDNN in. Repeatable."),
    framework: list[str] = typer.Option([], "--framework", metavar="NAME[==VER]",
                                        help="Check a framework that is not installed, e.g. tensorflow==2.15.0."),
    project: Optional[str] = typer.Option(None, "--project", metavar="DIR",
                                          help="Maven/Gradle project to read DL4J backends from (default: .)."),
    python: Optional[str] = typer.Option(None, "--python", metavar="PATH",
                                         help="Inspect this Python interpreter's packages (a venv's bin/python) "
                                              "instead of the environments around."),
    deep: bool = typer.Option(False, "--deep", help="Also import each framework in a child process to confirm "
                                                    "which cuDNN it really loads (slow)."),
    quiet: bool = typer.Option(False, "-q", "--quiet", help="Print only errors and warnings (nothing when healthy)."),
    verbose: bool = typer.Option(False, "-v", "--verbose", help="Show every detail."),
) -> None:
    """Diagnose the GPUs, driver, CUDA toolkits, cuDNN copies and frameworks."""
    chosen = _check_format(output_format, json_output)
    if output is not None:
        _check_output_path(output, chosen)
    if junit_xml is not None:
        from cudnn_doctor.render.output_file import check_target

        check_target(junit_xml, "--junit-xml")
    from cudnn_doctor.commands.check import CheckOptions, run_check

    report = run_check(CheckOptions(require=require, strict=strict, search_paths=search_path,
                                    project_dir=project, deep=deep, frameworks=framework, python=python))
    if junit_xml is not None:
        from cudnn_doctor.render.junit import write_junit

        write_junit(report, junit_xml, strict)
    if chosen in ("json", "junit", "prometheus"):
        _write_machine_output(report, chosen, strict, output)
    else:
        from cudnn_doctor.render.text import render_check

        render_check(report, _console(), verbose, quiet)
        if chosen == "github":
            from cudnn_doctor.render.github import render_github

            render_github(report, sys.stdout, os.environ.get("GITHUB_STEP_SUMMARY"), verbose)
    raise typer.Exit(report.summary.exit_code if report.summary else 3)


def _check_output_path(output: str, chosen: str) -> None:
    """--output FILE: only for a machine-readable format, a file that may be renamed over (checked before probing)."""
    if chosen not in ("json", "junit", "prometheus"):
        raise DoctorError(f"--output goes with --format json, junit or prometheus, not {chosen}",
                          fix="cudnn-doctor check --format prometheus --output /var/lib/node_exporter/cudnn_doctor.prom")
    from cudnn_doctor.render.output_file import check_target

    check_target(output, "--output")


def _write_machine_output(report, chosen: str, strict: bool, output: Optional[str]) -> None:  # type: ignore[no-untyped-def]
    if chosen == "json":
        from cudnn_doctor.model import report_to_json

        if output is None:
            from cudnn_doctor.render.json_out import write_json

            write_json(report_to_json(report))
            return
        import json

        text = json.dumps(report_to_json(report), indent=2) + "\n"
    elif chosen == "junit":
        from cudnn_doctor.render.junit import junit_xml_text

        text = junit_xml_text(report, strict)
    else:
        import time

        from cudnn_doctor.model import report_to_json
        from cudnn_doctor.render.prometheus import render_prometheus

        text = render_prometheus(report_to_json(report), now=time.time())
    if output is None:
        sys.stdout.write(text)
        sys.stdout.flush()
        return
    from cudnn_doctor.render.output_file import write_atomically

    try:
        write_atomically(output, text)
    except OSError as error:
        raise DoctorError(f"--output {output}: {error.strerror or error}",
                          fix="give a file in a folder you can write to") from None


def _check_format(output_format: Optional[str], json_output: bool) -> str:
    if output_format is None:
        return "json" if json_output else "text"
    chosen = output_format.strip().lower()
    if chosen not in CHECK_FORMATS:
        raise DoctorError(f"--format {output_format}: not a format I know", fix="--format text, json, github, junit or prometheus")
    if json_output and chosen != "json":
        raise DoctorError(f"--json and --format {chosen} ask for two formats", fix="give one of them")
    return chosen


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
    os_name: str = typer.Option("linux", "--os", help="linux, windows or macos."),
    artifact: Optional[str] = typer.Option(None, "--artifact", help="DL4J backend, e.g. nd4j-cuda-10.2."),
    list_table: Optional[str] = typer.Option(None, "--list", metavar="TABLE",
                                             help="Print a whole table: tensorflow, pytorch, jax, theano, dl4j, onnxruntime, "
                                                  "cupy, tensorrt, paddle, cudnn, cuda."),
    json_output: bool = typer.Option(False, "--json", help="Print one JSON object (schema cudnn-doctor/compat/1)."),
    verbose: bool = typer.Option(False, "-v", "--verbose", help="Show the source of every row."),
) -> None:
    """What a framework release needs, and whether a CUDA/cuDNN/driver/GPU combination works."""
    from cudnn_doctor.commands import compat as command

    if list_table is None and framework is None:
        raise DoctorError("name a framework or a table", fix="cudnn-doctor compat tensorflow==2.15.0, or --list cudnn")
    if list_table is not None:
        data = command.list_rows(list_table)
    else:
        combo = command.combination(cuda, cudnn, driver, compute_capability, os_name)
        data = command.answer(framework or "", combo, artifact)
    if json_output:
        from cudnn_doctor.render.json_out import write_json

        write_json(data)
    else:
        from cudnn_doctor.render import compat_text

        (compat_text.render_list if list_table else compat_text.render_answer)(data, _console(), verbose)
    raise typer.Exit(data.get("exit_code", 0))


@app.command()
@guarded
def explain(
    query: Optional[str] = typer.Argument(None, metavar="CODE_OR_MESSAGE",
                                          help="A finding code (CD301) or an error message; - reads standard input."),
    from_file: Optional[str] = typer.Option(None, "--from-file", metavar="LOG", help="Read the message from a file."),
    offline_only: bool = typer.Option(False, "--offline-only", help="Only the catalog: do not probe this machine."),
    json_output: bool = typer.Option(False, "--json", help="Print one JSON object (schema cudnn-doctor/explain/1)."),
    verbose: bool = typer.Option(False, "-v", "--verbose", help="Show every related finding."),
) -> None:
    """What a finding code or a framework's error message means, and the fix on this machine."""
    from cudnn_doctor.commands import explain as command

    data = command.run(command.read_message(query, from_file, sys.stdin), offline_only)
    if json_output:
        from cudnn_doctor.render.json_out import write_json

        write_json(data)
    else:
        from cudnn_doctor.render.explain_text import render_explain

        render_explain(data, _console(), verbose)
    raise typer.Exit(data["exit_code"])


fleet_app = typer.Typer(help="Many nodes: merge their reports, or run check on each through Slurm.",
                        no_args_is_help=True)
app.add_typer(fleet_app, name="fleet")


@fleet_app.command("merge")
@guarded
def fleet_merge(
    reports: list[str] = typer.Argument(..., metavar="REPORT.json... | DIR",
                                        help="Nodes' `check --json` reports, or folders of *.json reports."),
    json_output: bool = typer.Option(False, "--json", help="Print one JSON object (schema cudnn-doctor/fleet/1)."),
) -> None:
    """What differs between nodes: per field, the majority value and the nodes that differ; failed nodes."""
    from cudnn_doctor.commands import fleet as command

    _show_fleet(command.run_merge(reports), json_output)


@fleet_app.command("run", context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
@guarded
def fleet_run(
    context: typer.Context,
    slurm: bool = typer.Option(False, "--slurm", help="Run through srun, once per node (the only engine for now)."),
    command_line: Optional[str] = typer.Option(None, "--command", metavar="CMD",
                                               help="How a node runs the check (default: this Python, "
                                                    "`-m cudnn_doctor check --json`)."),
    deadline: float = typer.Option(600.0, "--deadline", metavar="SECONDS", help="Stop waiting for nodes after this."),
    keep: Optional[str] = typer.Option(None, "--keep", metavar="DIR", help="Keep every node's report in DIR."),
    json_output: bool = typer.Option(False, "--json", help="Print one JSON object (schema cudnn-doctor/fleet/1)."),
) -> None:
    """Run `check --json` on every node of an allocation or partition and merge the answers.

    Everything after the options goes to srun, e.g. `fleet run --slurm -- --partition=gpu --nodes=8`.
    """
    from cudnn_doctor.commands import fleet as command

    if not slurm:
        raise DoctorError("name the engine", fix="cudnn-doctor fleet run --slurm -- --partition=gpu --nodes=8; "
                                                 "for Kubernetes, see README's Fleets section and use fleet merge")
    _show_fleet(command.run_slurm(list(context.args), command_line, deadline, keep), json_output)


def _show_fleet(data: dict, json_output: bool) -> None:  # type: ignore[type-arg]
    if json_output:
        from cudnn_doctor.render.json_out import write_json

        write_json(data)
    else:
        from cudnn_doctor.render.fleet_text import render_fleet

        render_fleet(data, _console())
    raise typer.Exit(data["exit_code"])


@app.command("bench")
@guarded
def bench(
    workload: str = typer.Option("all", "--workload", metavar="conv|lstm|all",
                                 help="Convolution (forward, backward-data, backward-filter), LSTM, or both."),
    dtype: str = typer.Option("fp32", "--dtype", metavar="fp32|tf32|fp16|bf16",
                              help="Data type; tf32 is float32 data on TF32 tensor cores."),
    layout: str = typer.Option("nchw", "--layout", metavar="nchw|nhwc", help="Convolution tensor layout."),
    size: str = typer.Option("medium", "--size", metavar="tiny|small|medium|large",
                             help="tiny: a smoke test; small: CIFAR-10 layer, LSTM 512; medium: ResNet 3x3 layer 32x64x56x56, "
                                  "LSTM 512 (seq 100, batch 64); large: ResNet conv4 layer, LSTM 1024."),
    workspace_limit: Optional[float] = typer.Option(
        None, "--workspace-limit", metavar="MB",
        help="Largest cuDNN workspace to allow; 0 picks only algorithms that need none (NO_WORKSPACE)."),
    device: str = typer.Option("0", "--device", metavar="N|all", help="Which GPU, or all of them in turn."),
    no_cpu: bool = typer.Option(False, "--no-cpu", help="Skip the CPU baseline (results are still checked, "
                                                       "on a slice of the output)."),
    cudnn: Optional[str] = typer.Option(None, "--cudnn", metavar="PATH", help="Use this libcudnn.so."),
    cudart: Optional[str] = typer.Option(None, "--cudart", metavar="PATH", help="Use this libcudart.so."),
    api: str = typer.Option("auto", "--api", metavar="auto|graph|legacy",
                            help="Convolution API: graph (cuDNN's backend API, autotuned, as PyTorch), legacy "
                                 "(cudnnFind*, as TensorFlow and cuDNN 7), or auto: graph where it works."),
    repeats: int = typer.Option(20, "--repeats", metavar="N", help="Timed samples per workload (median)."),
    json_output: bool = typer.Option(False, "--json", help="Print one JSON object (schema cudnn-doctor/bench/1)."),
    verbose: bool = typer.Option(False, "-v", "--verbose", help="Show every detail."),
) -> None:
    """Run cuDNN convolution and LSTM through its C API: time them, check them against NumPy."""
    from cudnn_doctor.bench.workloads import BenchOptions, validate_options

    options = validate_options(BenchOptions(
        workload=workload.lower(), dtype=dtype.lower(), layout=layout.lower(), size=size.lower(),
        workspace_limit_mb=workspace_limit, devices=device.lower(), cpu=not no_cpu, repeats=repeats,
        api=api.lower()))
    from cudnn_doctor.commands.bench import BenchCommandOptions, require_numpy, run, selected_workloads

    require_numpy()  # before any GPU work: the child needs it for inputs and the reference
    from cudnn_doctor.bench.model import bench_to_json

    command = BenchCommandOptions(options, cudnn_path=cudnn, cudart_path=cudart)
    if json_output or not (sys.stdout.isatty() and sys.stderr.isatty()):
        report = run(command)
    else:
        from cudnn_doctor.render.bench_progress import WorkloadProgress

        with WorkloadProgress(len(selected_workloads(options.workload)), device) as shown:
            report = run(command, progress=shown.update)
    if json_output:
        from cudnn_doctor.render.json_out import write_json

        write_json(bench_to_json(report))
    else:
        from cudnn_doctor.render.bench_text import render_bench

        render_bench(report, _console(), verbose)
    raise typer.Exit(report.summary.exit_code if report.summary else 3)


@app.command("install")
@guarded
def install(
    location: Optional[str] = typer.Option(None, "--from", metavar="PATH_OR_URL",
                                           help="A cuDNN archive (.tar.xz, .tgz, .zip) or wheel (.whl), "
                                                "as a local path or a URL."),
    version: Optional[str] = typer.Option(None, "--version", metavar="X.Y.Z",
                                          help="A cuDNN release from NVIDIA's redistributable manifest."),
    cuda: Optional[int] = typer.Option(None, "--cuda", metavar="MAJOR",
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
    os_name: Optional[str] = typer.Option(None, "--os", metavar="linux|windows|macos",
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
    from cudnn_doctor.commands.install import InstallOptions, run_install

    options = InstallOptions(location=location, version=version, cuda_major=cuda, mirror=mirror, sha256=sha256,
                             prefix=prefix, os_name=os_name, dry_run=dry_run, yes=yes, no_verify=no_verify,
                             replace_majors=replace_majors, force=force)
    _run_transaction("install", lambda ui: run_install(options, ui), json_output, verbose)

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
    from cudnn_doctor.commands.uninstall import run_uninstall

    _run_transaction("uninstall", lambda ui: run_uninstall(prefix, dry_run, yes, force, ui), json_output, verbose)


def _run_transaction(command: str, action: Any, json_output: bool, verbose: bool) -> None:
    """install/uninstall: the plan shown (text) or kept (JSON), a question on a terminal, one outcome."""
    from rich.console import Console

    from cudnn_doctor.commands.install import Ui
    from cudnn_doctor.install.outcome import UninstallPlan, failure_to_json, outcome_to_json
    from cudnn_doctor.render import install_text as render
    from cudnn_doctor.render.json_out import write_json

    console = _console(stderr=json_output)  # a closed stdout ends quietly, as in every command
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
                              "add --yes (or --dry-run to only see the plan)", exit_code=2)
        return typer.confirm(question, default=False, err=True)

    def note(text: str) -> None:
        Console(stderr=True, highlight=False).print(f"cudnn-doctor: {text}", markup=False)

    ui = Ui(show_plan=show_plan, confirm=confirm, note=note,
            progress=not json_output and sys.stderr.isatty())
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
    raise typer.Exit(outcome.exit_code)


def _usage_error(error: Exception) -> NoReturn:
    """A usage error found by the option parser: shown as typer shows it, and as JSON when --json was asked for."""
    exit_code = int(getattr(error, "exit_code", 2))
    try:
        from typer import rich_utils

        rich_utils.rich_format_error(error)  # type: ignore[arg-type]
    except Exception:  # noqa: BLE001 - an older typer without rich: click's own way
        error.show()  # type: ignore[attr-defined]
    if json_requested():
        context = getattr(error, "ctx", None)
        where = context.command_path if context is not None else "cudnn-doctor"
        message = error.format_message() if hasattr(error, "format_message") else str(error)
        write_error_json(exit_code, message, f"see `{where} --help`")
    sys.exit(exit_code)


def main() -> None:
    from cudnn_doctor.user_files import escape_output

    escape_output()  # a path's bytes that are not UTF-8 print as \xNN, never a UnicodeEncodeError
    # click's ClickException (click itself, or the copy newer typers carry), found through what typer exports
    usage_errors: tuple[type[Exception], ...] = tuple(
        c for c in typer.BadParameter.__mro__ if c.__name__ == "ClickException")
    try:
        exit_code = app(prog_name="cudnn-doctor", standalone_mode=False)
    except usage_errors as error:
        _usage_error(error)
    except typer.Abort:
        sys.stderr.write("Aborted!\n")
        sys.exit(1)
    except BrokenPipeError:
        exit_code = CLOSED_PIPE_EXIT
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        exit_code = CLOSED_PIPE_EXIT
    if exit_code == CLOSED_PIPE_EXIT:
        try:
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        except (OSError, ValueError):
            pass
    sys.exit(exit_code if isinstance(exit_code, int) else 0)


if __name__ == "__main__":
    main()
