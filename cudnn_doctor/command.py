"""How every command runs, whichever parser read its command line: the guard around a command's body
(one line and exit 2 for a DoctorError, exit 3 for our bug, 128 + N for a signal), the one JSON object of
a failed command, the end of a command whose reader went away, and the process around it all.

typer is not imported here: `check` with a plain command line (cudnn_doctor/check_line.py) runs without
it. A command that ends by raising typer.Exit or typer.Abort went through typer, so typer is looked up
in sys.modules when one passes the guard."""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Callable
from typing import Any, NoReturn, TypeVar

from cudnn_doctor import __version__
from cudnn_doctor.errors import DoctorError
from cudnn_doctor.streams import OUTPUT_LOST_EXIT, OutputLost, say

ISSUES_URL = "https://github.com/cudnn-doctor/cudnn-doctor/issues"
ERROR_SCHEMA = "cudnn-doctor/error/1"
CLOSED_PIPE_EXIT = 141  # 128 + SIGPIPE: what the shell reports for a tool whose reader went away
F = TypeVar("F", bound=Callable[..., Any])


def console(stderr: bool = False):  # type: ignore[no-untyped-def]
    from rich.console import Console

    class DoctorConsole(Console):
        def on_broken_pipe(self) -> None:  # rich's own exits with 1; ours ends as every command does
            stdout_closed()

    console = DoctorConsole(stderr=stderr, highlight=False)
    console.soft_wrap = not console.is_terminal  # piped output: one line per line, no wrapping at 80
    return console


def json_requested(args: list[str] | None = None) -> bool:
    """Whether the command line asks for JSON, whatever else is wrong with it: `--json`, `--format json` in any
    case and either spelling; for check, with no format on the command line, CUDNN_DOCTOR_FORMAT=json (CI) or
    `format = "json"` in the project's [tool.cudnn-doctor], as the report itself would be chosen."""
    args = sys.argv[1:] if args is None else args
    if "--" in args:
        args = args[:args.index("--")]
    named = None
    for index, arg in enumerate(args):
        if arg == "--json":
            return True
        if arg.startswith("--format="):
            named = arg.split("=", 1)[1]
        elif arg == "--format" and index + 1 < len(args):
            named = args[index + 1]
    if named is not None:
        return named.strip().lower() == "json"
    if _command_name(args) != "check":
        return False
    variable = os.environ.get("CUDNN_DOCTOR_FORMAT", "")
    if variable.strip():
        return variable.strip().lower() == "json"
    try:
        from cudnn_doctor.settings import find_project_config

        found = find_project_config()
    except Exception:  # a project file that cannot be read is the error itself, not a reason to fail again
        return False
    return found is not None and str(found[1].get("format", "")).strip().lower() == "json"


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
    raise SystemExit(CLOSED_PIPE_EXIT)


def interrupted(error: BaseException, want_json: bool) -> int:
    """A signal ended the command: every process it started is killed first, then one line (and the
    JSON object with --json); returns the exit status, 128 + the signal's number."""
    from cudnn_doctor import child, signals

    child.stop_all()
    exit_code = signals.exit_code(error)
    say(f"cudnn-doctor: interrupted ({str(error) or 'SIGINT'})")
    if want_json:
        try:
            write_error_json(exit_code, f"interrupted by {str(error) or 'SIGINT'}", title="Interrupted")
        except (OutputLost, BrokenPipeError):
            pass
    return exit_code


def guarded(function: F) -> F:
    """Turn DoctorError into one line and exit 2; anything else is our bug: exit 3.

    With --json on the command line the failure is also one JSON object on standard output."""

    @functools.wraps(function)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        verbose = bool(kwargs.get("verbose"))
        want_json = json_requested()
        try:
            from cudnn_doctor.variables import check_all

            check_all()  # a CUDNN_DOCTOR_* variable set to what it does not take: exit 2 before anything runs
            return function(*args, **kwargs)
        except BrokenPipeError:
            stdout_closed()
        except DoctorError as error:
            message = f"cudnn-doctor: error: {error.message}"
            if error.fix:
                message += f" (fix: {error.fix})"
            say(message)
            if want_json:
                found = error.finding
                write_error_json(error.exit_code, error.message, error.fix, found.title if found else None,
                                 found.code if found else None)
            raise SystemExit(error.exit_code) from None
        except (SystemExit, OutputLost):
            raise
        except KeyboardInterrupt as error:  # Ctrl-C, SIGTERM, SIGHUP (signals.py)
            raise SystemExit(interrupted(error, want_json)) from None
        except Exception as error:  # a bug in the doctor, not a problem of the machine
            if _parser_exit(error):  # typer.Exit, typer.Abort: the command's end, through typer
                raise
            if verbose:
                import traceback

                traceback.print_exc()
            report = f"this is a bug in cudnn-doctor {__version__}: please report it at {ISSUES_URL}"
            say(f"cudnn-doctor: internal error: {type(error).__name__}: {error} ({report}; -v shows the traceback)")
            if want_json:
                write_error_json(3, f"{type(error).__name__}: {error}", report, title="Internal error")
            raise SystemExit(3) from None

    return wrapper  # type: ignore[return-value]


def _parser_exit(error: Exception) -> bool:
    typer = sys.modules.get("typer")  # whatever raised typer's exceptions imported typer
    return typer is not None and isinstance(error, (typer.Exit, typer.Abort))


def call(function: Callable[..., Any], **options: Any) -> int:
    """Run a command's body (guarded) to its exit status, its output flushed."""
    try:
        function(**options)
        exit_code: Any = 0
    except SystemExit as end:
        exit_code = end.code
    except BrokenPipeError:
        exit_code = CLOSED_PIPE_EXIT
    except OutputLost:
        return OUTPUT_LOST_EXIT
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        exit_code = CLOSED_PIPE_EXIT
    except OutputLost:
        exit_code = OUTPUT_LOST_EXIT
    return exit_code if isinstance(exit_code, int) else 0


def run(body: Callable[[], int]) -> NoReturn:
    """The process around a command: standard streams and signals prepared, BODY run to its exit status,
    a signal or a lost output turned into theirs, then exit."""
    from cudnn_doctor import signals, streams

    streams.prepare()  # closed or full standard streams: one clean outcome each (streams.py)
    signals.install()  # SIGTERM and SIGHUP unwind the command as Ctrl-C does (signals.py)
    try:
        try:
            exit_code = body()
        except OutputLost:  # while a usage error's JSON object was written
            exit_code = OUTPUT_LOST_EXIT
        except BrokenPipeError:
            exit_code = CLOSED_PIPE_EXIT
        lost = streams.output_lost()
        if lost is not None and signals.received() is None:
            say(f"cudnn-doctor: error: {lost}: the output was not written")
            exit_code = OUTPUT_LOST_EXIT
    except KeyboardInterrupt as error:  # a signal outside a command's body (parsing, the last flush)
        exit_code = interrupted(error, json_requested())
    signals.hold()  # the outcome is settled: a signal from now on changes nothing and raises nothing
    if signals.received() is not None:
        exit_code = signals.exit_code()
    if exit_code == CLOSED_PIPE_EXIT:
        try:
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        except (OSError, ValueError):
            pass
    exit_now(exit_code)


def exit_now(exit_code: int) -> NoReturn:
    """End the process with EXIT_CODE as the interpreter would, without freeing every object first.

    What Python's own exit does that matters is done, in its order: threads that are not daemons are
    waited for, the atexit handlers run (child.py's kills whatever the command started), the standard
    streams are flushed. What is left out is the teardown of every module: freeing, one by one, the
    objects the compat tables and the imports made, 5 ms of a 60 ms check (benchmarks/README.md)."""
    import atexit
    import threading

    run_handlers = getattr(atexit, "_run_exitfuncs", None)
    if run_handlers is None:  # not CPython: its own exit
        sys.exit(exit_code)
    for thread in threading.enumerate():
        if thread is not threading.main_thread() and not thread.daemon:
            thread.join()
    run_handlers()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError, OutputLost):  # a reader gone, a stream closed: as the interpreter's last flush
            pass
    os._exit(exit_code)
