"""How every command runs: the guard around a command's body (one line and exit 2 for a DoctorError, exit 3
for our bug, 128 + N for a signal), the one JSON object of a failed command, the end of a command whose
reader went away, and the process around it all, which ends through sys.exit.

Whether a failure is told in JSON is read from the command's options as the parser read them (cli.py)."""

from __future__ import annotations

import functools
import os
import signal
import sys
from collections.abc import Callable
from typing import Any, NoReturn, TypeVar

from cudnn_doctor import __version__
from cudnn_doctor.codes import ISSUES_URL
from cudnn_doctor.errors import DoctorError
from cudnn_doctor.limits import limit_stopped
from cudnn_doctor.streams import CLOSED_PIPE_EXIT, OUTPUT_LOST_EXIT, OutputLost, bounded, say, stdout_closed, unquoted

ERROR_SCHEMA = "cudnn-doctor/error/1"
LIMIT_TITLE = "A limit of the process stopped it"  # CD010's title (codes.py), written where the registry may not load
__all__ = ["ISSUES_URL", "guarded", "json_wanted", "write_error_json"]
F = TypeVar("F", bound=Callable[..., Any])


def json_wanted(command: str | None, params: dict[str, Any]) -> bool:
    """Whether a command's options, as the parser read them (PARAMS), ask for JSON (`--json`, `--format json`)."""
    output_format = params.get("output_format")
    if params.get("json_output") or (isinstance(output_format, str) and output_format.strip().lower() == "json"):
        return True
    if command != "check" or isinstance(output_format, str):
        return False
    # CUDNN_DOCTOR_FORMAT=json (CI), or format = "json" in the project's [tool.cudnn-doctor], makes check answer in
    # JSON, its failures included (as the report itself would be chosen)
    variable = os.environ.get("CUDNN_DOCTOR_FORMAT", "")
    if variable.strip():
        return variable.strip().lower() == "json"
    try:
        from cudnn_doctor.settings import find_project_config

        found = find_project_config()
    except Exception:  # a project file that cannot be read is the error itself, not a reason to fail again
        return False
    return found is not None and str(found[1].get("format", "")).strip().lower() == "json"


def write_error_json(exit_code: int, message: str, fix: str | None = None, title: str | None = None,
                     code: str | None = None, command: str | None = None) -> None:
    """The one JSON object of a failed command (`cudnn-doctor/error/1`), unless the command already printed its own."""
    from cudnn_doctor.render import json_out

    if json_out.written:
        return
    json_out.write_json({
        "schema": ERROR_SCHEMA,
        "tool": {"name": "cudnn-doctor", "version": __version__},
        "command": command,
        "error": {"code": code, "title": title or ("Usage error" if exit_code == 2 else "Error"),
                  "message": message, "fix": fix},
        "exit_code": exit_code,
    })


def interrupted(error: BaseException, want_json: bool, command: str | None = None) -> int:
    """A signal ended the command: every process it started is killed first, then one line (and the
    JSON object with --json); returns the exit status, 128 + the signal's number."""
    from cudnn_doctor import child, signals

    child.stop_all()
    exit_code = signals.exit_code(error)
    if exit_code == 128 + getattr(signal, "SIGXCPU", -200):  # not a request to stop: a limit of the process
        from cudnn_doctor.limits import cpu_time_stopped

        message, fix = cpu_time_stopped()
        say(f"cudnn-doctor: error: {message} (fix: {fix})")
        if want_json:
            try:
                write_error_json(2, message, fix, title=LIMIT_TITLE, code="CD010", command=command)
            except (OutputLost, BrokenPipeError):
                pass
        return 2
    say(f"cudnn-doctor: interrupted ({str(error) or 'SIGINT'})")
    if want_json:
        try:
            write_error_json(exit_code, f"interrupted by {str(error) or 'SIGINT'}", title="Interrupted",
                             command=command)
        except (OutputLost, BrokenPipeError):
            pass
        except KeyboardInterrupt:  # its reader takes nothing (streams.STALL_S): the object is not written, and the
            pass  # signal it would have told of is this one (it was said once, above, not again by runner.run)
    return exit_code


def _damage() -> DoctorError | None:
    """The damage of the doctor's own data found in this process (knowledge/data.py), or None: it is what a command
    ends with, whatever a caller made of it (a DoctorError or a bug that followed from data half read)."""
    data = sys.modules.get("cudnn_doctor.knowledge.data")
    return data.damage() if data is not None else None  # type: ignore[no-any-return]


def guarded(function: F, command: str | None = None, given: dict[str, Any] | None = None) -> F:
    """Turn DoctorError into one line and exit 2; anything else is our bug: exit 3.

    With --json on the command line the failure is also one JSON object on standard output. COMMAND names the
    command in that object (by default the function's name up to its first _: fleet_merge, `fleet`); GIVEN, the
    options as the parser read them, tells -v and --json where the function is not called with them all."""

    name = command or function.__name__.split("_")[0]

    @functools.wraps(function)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        options = kwargs if given is None else given
        verbose = bool(options.get("verbose"))
        want_json = json_wanted(name, options)
        if want_json:  # what a failure's JSON needs, loaded now: under a limit there may be no file left to load it
            from cudnn_doctor import user_files  # noqa: F401
            from cudnn_doctor.render import json_out  # noqa: F401
        try:
            from cudnn_doctor.knowledge.environment import working_folder_paths
            from cudnn_doctor.variables import check_all, read_paths_from

            check_all()  # a CUDNN_DOCTOR_* variable set to what it does not take: exit 2 before anything runs
            read_paths_from(working_folder_paths)  # the data's path settings, made absolute in every child
            return function(*args, **kwargs)
        except BrokenPipeError:
            stdout_closed()
        except DoctorError as caught:
            error = _damage() or caught
            error.message, error.fix = bounded(error.message), error.fix and bounded(error.fix)
            message = f"cudnn-doctor: error: {error.message}"
            if error.fix:
                message += f" (fix: {unquoted(error.fix)})"
            say(message)
            if want_json:
                from cudnn_doctor.codes import lookup

                entry = lookup(error.code) if error.code else None
                write_error_json(error.exit_code, error.message, error.fix, entry.title if entry else None,
                                 error.code, command=name)
            raise SystemExit(error.exit_code) from None
        except (SystemExit, OutputLost):
            raise
        except KeyboardInterrupt as error:  # Ctrl-C, SIGTERM, SIGHUP (signals.py)
            raise SystemExit(interrupted(error, want_json, name)) from None
        except Exception as caught:  # a bug in the doctor, not a problem of the machine, unless a limit stopped it
            stopped = limit_stopped(caught)
            damage = _damage() if stopped is None else None
            if damage is not None:  # what followed from data half read is the damage, not a bug
                say(f"cudnn-doctor: error: {bounded(damage.message)} (fix: {damage.fix})")
                if want_json:
                    write_error_json(damage.exit_code, bounded(damage.message), damage.fix,
                                     "The doctor's own data is damaged", damage.code, command=name)
                raise SystemExit(damage.exit_code) from None
            if stopped is not None:
                import threading

                from cudnn_doctor import child

                # the one line is all it says: what fails after it for the same limit (a destructor, a thread, an
                # exit handler) stays quiet
                sys.unraisablehook = lambda _unraisable: None
                threading.excepthook = lambda _args: None
                child.stop_all()
                say(f"cudnn-doctor: error: {stopped[0]} (fix: {stopped[1]})")
                if want_json:
                    write_error_json(2, stopped[0], stopped[1], title=LIMIT_TITLE, code="CD010", command=name)
                raise SystemExit(2) from None
            placed = _placed_elsewhere(caught)
            if placed is not None:  # a dependency lost with this Python's own site-packages: the environment's doing
                say(f"cudnn-doctor: error: {placed[0]} (fix: {placed[1]})")
                if want_json:
                    write_error_json(2, placed[0], placed[1], title="The doctor's own Python cannot import what it "
                                     "needs", command=name)
                raise SystemExit(2) from None
            if verbose:
                import traceback

                traceback.print_exc()
            report = f"this is a bug in cudnn-doctor {__version__}: please report it at {ISSUES_URL}"
            say(f"cudnn-doctor: internal error: {type(caught).__name__}: {caught} ({report}; -v shows the traceback)")
            if want_json:
                write_error_json(3, f"{type(caught).__name__}: {caught}", report, title="Internal error", command=name)
            raise SystemExit(3) from None

    return wrapper  # type: ignore[return-value]


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


def run(body: Callable[[], int], want_json: Callable[[], bool] = lambda: False) -> NoReturn:
    """The process around a command: standard streams and signals prepared, BODY run to its exit status,
    a signal or a lost output turned into theirs, then sys.exit. WANT_JSON tells whether the command line
    asked for JSON, for a signal that comes outside the command's body."""
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
        exit_code = interrupted(error, want_json())
    signals.hold()  # the outcome is settled: a signal from now on changes nothing and raises nothing
    if signals.received() not in (None, getattr(signal, "SIGXCPU", None)) and not signals.settled():
        exit_code = signals.exit_code()  # (a CPU-time limit exits 2, said above; an answer written whole is settled)
    if exit_code == CLOSED_PIPE_EXIT:  # nothing more reaches the reader that went away
        try:
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        except (OSError, ValueError):
            pass
    _flush_or_drop()
    sys.exit(exit_code)


def _flush_or_drop() -> None:
    """Flush the standard streams now; one whose reader went away (or that cannot be written) is pointed
    at /dev/null, so that the interpreter's own last flush at exit neither complains nor changes the
    exit status."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError, OutputLost):
            try:
                os.dup2(os.open(os.devnull, os.O_WRONLY), stream.fileno())
            except (OSError, ValueError):
                pass


def _placed_elsewhere(caught: BaseException) -> tuple[str, str] | None:
    """(message, fix) where CAUGHT is a module the doctor needs that its Python did not find while a variable that
    places Python is set (compat/process_env.toml rows with places_python: PYTHONEXECUTABLE outside the doctor's
    venv starts it as another Python, without the venv's site-packages); None otherwise."""
    if not isinstance(caught, ModuleNotFoundError):
        return None
    try:
        from cudnn_doctor.probes.python_start import placing

        names = sorted(name for name in placing() if os.environ.get(name))
    except Exception:  # the data unreadable: the one answer is the internal error's
        return None
    if not names:
        return None
    shown = ", ".join(f"{name}={os.environ[name]!r}"[:200] for name in names)
    return (f"cudnn-doctor's own Python cannot import {caught.name or 'a module it needs'} ({caught}): {shown} makes "
            f"this Python start as another one (sys.prefix {sys.prefix!r}), without the site-packages the doctor was "
            "installed in; a framework installed there is lost the same way to its programs",
            f"unset {' '.join(names)}, or run the doctor from another Python (pipx run cudnn-doctor check)")
