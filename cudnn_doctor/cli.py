"""The command line: parse, call a command module, render, exit. Nothing else lives here."""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from typing import Any, Optional, TypeVar

import typer

from cudnn_doctor import __version__
from cudnn_doctor.errors import DoctorError

app = typer.Typer(
    name="cudnn-doctor",
    help="Find, check, install and benchmark CUDA and cuDNN.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)
ISSUES_URL = "https://github.com/cudnn-doctor/cudnn-doctor/issues"
F = TypeVar("F", bound=Callable[..., Any])


def _console(stderr: bool = False):  # type: ignore[no-untyped-def]
    from rich.console import Console

    console = Console(stderr=stderr, highlight=False)
    console.soft_wrap = not console.is_terminal  # piped output: one line per line, no wrapping at 80
    return console


def guarded(function: F) -> F:
    """Turn DoctorError into one line and exit 2; anything else is our bug: exit 3."""

    @functools.wraps(function)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        verbose = bool(kwargs.get("verbose"))
        try:
            return function(*args, **kwargs)
        except DoctorError as error:
            message = f"cudnn-doctor: error: {error.message}"
            if error.fix:
                message += f" (fix: {error.fix})"
            sys.stderr.write(message + "\n")
            raise typer.Exit(error.exit_code) from None
        except (typer.Exit, typer.Abort, SystemExit):
            raise
        except KeyboardInterrupt:
            sys.stderr.write("cudnn-doctor: interrupted\n")
            raise typer.Exit(130) from None
        except Exception as error:  # a bug in the doctor, not a problem of the machine
            if verbose:
                import traceback

                traceback.print_exc()
            sys.stderr.write(f"cudnn-doctor: internal error: {type(error).__name__}: {error} "
                             f"(this is a bug in cudnn-doctor {__version__}: please report it at {ISSUES_URL}; "
                             "-v shows the traceback)\n")
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


@app.command()
@guarded
def check(
    json_output: bool = typer.Option(False, "--json", help="Print one JSON object (schema cudnn-doctor/report/1)."),
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
    deep: bool = typer.Option(False, "--deep", help="Also import each framework in a child process to confirm "
                                                    "which cuDNN it really loads (slow)."),
    verbose: bool = typer.Option(False, "-v", "--verbose", help="Show every detail."),
) -> None:
    """Diagnose the GPUs, driver, CUDA toolkits, cuDNN copies and frameworks."""
    from cudnn_doctor.commands.check import CheckOptions, run_check

    report = run_check(CheckOptions(require=require, strict=strict, search_paths=search_path,
                                    project_dir=project, deep=deep, frameworks=framework))
    if json_output:
        from cudnn_doctor.model import report_to_json
        from cudnn_doctor.render.json_out import write_json

        write_json(report_to_json(report))
    else:
        from cudnn_doctor.render.text import render_check

        render_check(report, _console(), verbose)
    raise typer.Exit(report.summary.exit_code if report.summary else 3)


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

    text = _read_query(query, from_file)
    code = command.CODE.match(text)
    if code:
        data = command.explain_code(code.group(1))
    else:
        report = None
        if not offline_only:
            from cudnn_doctor.commands.check import CheckOptions, run_check

            report = run_check(CheckOptions())
        data = command.explain_text(text, report)
    if json_output:
        from cudnn_doctor.render.json_out import write_json

        write_json(data)
    else:
        from cudnn_doctor.render.explain_text import render_explain

        render_explain(data, _console(), verbose)
    raise typer.Exit(data["exit_code"])


def _read_query(query: Optional[str], from_file: Optional[str]) -> str:
    if from_file is not None:
        try:
            with open(from_file, encoding="utf-8", errors="replace") as handle:
                return handle.read()
        except OSError as error:
            raise DoctorError(f"--from-file {from_file}: {error.strerror or error}",
                              fix="give the path of a readable log file") from None
    if query == "-" or (query is None and not sys.stdin.isatty()):
        return sys.stdin.read()
    if not query or not query.strip():
        raise DoctorError("nothing to explain", fix="cudnn-doctor explain CD301, explain \"<message>\", "
                                                    "or: python train.py 2>&1 | cudnn-doctor explain -")
    return query


def _register_commands() -> None:
    """install/uninstall and bench live in their own modules; each imports only typer at load time."""
    from cudnn_doctor import cli_bench, cli_install

    cli_install.register(app)
    cli_bench.register(app)


_register_commands()


def main() -> None:
    app()


if __name__ == "__main__":
    main()
