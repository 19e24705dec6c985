"""The `cudnn-doctor` command (and `python -m cudnn_doctor`): signals handled from the first instant, then
the command line read by argparse (cli.py). Nothing runs before the command line is read but, for `check`, NVML's
child (probes/loader.start_nvml_early: taken by check where its options leave the context the same, else stopped)."""

from __future__ import annotations

import sys


def _json_string(text: str) -> str:
    """TEXT as a JSON string, without importing json (there may be no file or memory left to load it): a character
    beyond U+FFFF as its surrogate pair (a \\u escape holds four digits), a path's byte that is not UTF-8 (a lone
    surrogate, which a strict reader refuses) as the text \\xNN."""
    def one(c: str) -> str:
        code = ord(c)
        if c.isascii() and c.isprintable() and c not in '"\\':
            return c
        if 0xD800 <= code <= 0xDFFF:
            return f"\\\\x{code & 0xFF:02x}"
        if code > 0xFFFF:
            code -= 0x10000
            return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"
        return f"\\u{code:04x}"

    return '"' + "".join(one(c) for c in text) + '"'


def _stopped(stopped: tuple[str, str]) -> None:
    """A limit of the process stopped the doctor: one line on stderr, one JSON object with --json; exit 2."""
    sys.stderr.write(f"cudnn-doctor: error: {stopped[0]} (fix: {stopped[1]})\n")
    json_out = sys.modules.get("cudnn_doctor.render.json_out")
    already = bool(getattr(json_out, "written", False))  # never a second JSON object
    if not already and ("--json" in sys.argv or "json" in sys.argv):  # the parser never ran: its words
        sys.stdout.write('{"schema": "cudnn-doctor/error/1", "error": {"code": "CD010", "title": "A limit of the '
                         f'process stopped it", "message": {_json_string(stopped[0])}, "fix": '
                         f'{_json_string(stopped[1])}}}, "exit_code": 2}}\n')
    sys.exit(2)


STARTED_IN: str | None = None  # the working folder's name as the command started (None: it was deleted already)


def _working_folder_off_sys_path() -> None:
    """The working folder out of the command's own sys.path, unless the package itself was found there (`python -m
    cudnn_doctor` in a checkout), and PYTHONPATH's folders after Python's own library: started as `python -c ...`
    from a folder that holds a `json.py`, `typing.py` or `subprocess.py` (a user's project), or with such a file in a
    PYTHONPATH folder, the doctor would import those in place of Python's own and stop with a traceback before saying
    anything; the console script never has the working folder on its path."""
    import os

    global STARTED_IN
    try:
        STARTED_IN = os.getcwd()
        here = os.path.realpath(STARTED_IN)
    except OSError:  # the working folder was removed: "" names nothing Python can list
        here = None
    package = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
    # each entry's real path asked once (one that names nothing is only itself made absolute: it shadows nothing),
    # and sets where lists were searched: a PYTHONPATH of 8,000 entries, started 3,900 characters deep, took 37 s here
    # (five realpath calls an entry, each an lstat a folder of the path, and a list searched for each entry)
    def real_path(entry: str) -> str:
        return os.path.realpath(entry) if os.path.exists(entry) else os.path.abspath(entry)

    real = {entry: real_path(entry) for entry in dict.fromkeys(sys.path)}
    if here != package:
        sys.path[:] = [entry for entry in sys.path if entry not in ("", ".") and (here is None or real[entry] != here)]
    # PYTHONPATH's folders after Python's own library (a `json.py` or `typing.py` there is a user's, not Python's),
    # still before site-packages (a dependency installed there is found as before); the package's own folder stays
    user = {real.get(p) or real_path(p) for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p}
    user -= {package}
    stdlib = os.path.dirname(os.__file__)
    python_own = (stdlib, os.path.realpath(os.path.join(stdlib, "lib-dynload")))
    own = {e for e in sys.path if e.endswith(".zip") or real[e] in python_own}
    if user and own:
        moved = [e for e in sys.path if real[e] in user and e not in own]
        taken = set(moved)
        rest = [e for e in sys.path if e not in taken]
        at = max(index for index, e in enumerate(rest) if e in own) + 1
        sys.path[:] = rest[:at] + moved + rest[at:]


LEAK_CHECKERS = ("libasan.so", "libclang_rt.asan", "liblsan.so", "libclang_rt.lsan")


def _before_a_leak_checker(done: SystemExit) -> None:
    """Where LD_PRELOAD gave this process a sanitizer's run-time that checks for leaks at exit (AddressSanitizer's
    LeakSanitizer: it reports every allocation Python never frees and ends the process with its own status, 1 or 23),
    the doctor ends as it would have, its answer and exit status kept: Python's own exit handlers run, the output is
    flushed, and the process leaves before the C run-time's (os._exit). Nothing is read unless LD_PRELOAD is set."""
    import os

    if not os.environ.get("LD_PRELOAD") or os.name == "nt":
        return
    try:
        with open("/proc/self/maps", "rb") as maps:
            mapped = maps.read(1 << 22)
    except OSError:
        return
    if not any(name.encode() in mapped for name in LEAK_CHECKERS):
        return
    _end_now(done)


def _not_traced() -> None:
    """PYTHONTRACEMALLOC (or -X tracemalloc), set to trace the user's own programs, makes every allocation of this
    process record its frames: 25 of them made `explain` 40 times slower (40 s). The doctor's own process is not the
    program being traced; its children that run as the user's program does (--deep) keep the setting."""
    try:
        import _tracemalloc
    except ImportError:  # a Python built without it
        return
    if _tracemalloc.is_tracing():
        _tracemalloc.stop()


def _not_at_a_prompt(done: SystemExit) -> None:
    """PYTHONINSPECT (or -i), set for the user's own programs, would leave this process at Python's interactive
    prompt once the command ends (after a traceback of its SystemExit), waiting on a terminal or a CI step's
    standard input: the doctor ends as it would have, its answer and exit status kept."""
    import os

    if sys.flags.inspect or os.environ.get("PYTHONINSPECT") and not sys.flags.ignore_environment:
        _end_now(done)


def _end_now(done: SystemExit) -> None:
    """End the process with DONE's status now: Python's exit handlers run and the output is flushed, then the
    process leaves (os._exit) before anything at the interpreter's or the C run-time's exit can change it."""
    import atexit
    import os

    code = done.code if isinstance(done.code, int) else (0 if done.code is None else 1)
    if done.code is not None and not isinstance(done.code, int):
        print(done.code, file=sys.stderr)
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(code)


def main() -> None:
    try:
        _main()
    except KeyboardInterrupt:  # a SIGINT before signals.install(): Python's own handler, in the first imports
        sys.exit(130)  # as every command ends on SIGINT, without a traceback of the imports it cut
    except SystemExit as done:
        _not_at_a_prompt(done)
        raise


def command() -> None:
    """The `cudnn-doctor` console script and `python -m cudnn_doctor`: main(), then the process leaves as soon as its
    answer is out. Python's own exit would join its threads, run the exit handlers and flush the standard streams (all
    done here, in that order), then tear down every module and object the command made (~31,000, nearly all alive to
    the end: 5-6 ms of the command's CPU after its last byte, benchmarks/README.md round twenty-two), which nothing
    outside the process sees. Where a stream cannot be flushed (a closed pipe) or the status is not a number, Python's
    own exit says it as before. A program that calls main() itself keeps Python's exit."""
    try:
        main()
    except SystemExit as done:
        _leave(done)
        raise


def _leave(done: SystemExit) -> None:
    """End the process with DONE's status now, where nothing is left that Python's exit would still say or keep:
    returns (the caller re-raises) where the status is not a number or a stream does not flush."""
    code = 0 if done.code is None else done.code
    if not isinstance(code, int) or isinstance(code, bool) or not -(1 << 31) <= code < 1 << 31:
        return  # Python's exit prints it, or says it cannot be a status
    threading = sys.modules.get("threading")
    if threading is not None:
        threading._shutdown()  # type: ignore[attr-defined]  # the threads Python's exit joins (none daemonic here)
    import atexit
    import os

    atexit._run_exitfuncs()  # cleared once run: where the flush below fails, Python's exit does not run them twice
    # the streams Python's exit flushes, and the original ones (where replaced) that its teardown would have flushed
    for stream in dict.fromkeys((sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__)):
        try:
            if stream is not None and not stream.closed:
                stream.flush()
        except (OSError, ValueError, AttributeError):  # a closed pipe, a full disk: Python's exit says it as before
            return
    os._exit(code)


# The command's own process collects cyclic garbage every this many new objects, not Python's 700: a plain check makes
# about 31,000 (its modules, classes and records, nearly all alive to the end), so its collector ran 45 times for 6 ms
# of CPU and found 189 objects to free; now it does not run at all, and a command that makes more still collects.
COMMAND_GC_THRESHOLD = 100_000


def _main() -> None:
    import gc

    gc.set_threshold(COMMAND_GC_THRESHOLD, *gc.get_threshold()[1:])  # here, not in cli.main: see COMMAND_GC_THRESHOLD
    _not_traced()
    _working_folder_off_sys_path()
    import cudnn_doctor
    from cudnn_doctor import signals

    cudnn_doctor.COMMAND_PROCESS = True
    _terminal_size_as_a_terminal_could_have_it()

    signals.install()  # a SIGTERM while the modules load unwinds as anywhere else
    try:
        from cudnn_doctor import limits  # loaded first: a limit may leave no file to load it later

        limits.record_inherited()  # the descriptors a program started here holds, before the doctor opens any
        limits.make_room()  # those that leave the doctor too few free: its own copies closed (the record stays)
        from cudnn_doctor import streams

        streams.reopen_closed()  # a standard stream closed at start on /dev/null now: no later descriptor takes it
        floor = limits.below_floor()  # less than the doctor needs at all: said now, not wherever it bites
        if floor is not None:
            _stopped(_with_frameworks(floor))
        limits.size_thread_stacks()  # its own threads' stacks whatever ulimit -s says (glibc gives each that much)
        from cudnn_doctor.operating_system import CURRENT, keep_working_folder_named

        CURRENT.owns_process = True  # the command's own process: it may adopt what its children leave behind
        keep_working_folder_named(STARTED_IN)  # a working folder deleted under it is no internal error
        if sys.argv[1:2] == ["check"]:  # NVML's child, check's longest wait on a GPU machine, before the imports
            from cudnn_doctor.probes.loader import start_nvml_early

            start_nvml_early()
        from cudnn_doctor.cli import main as run

        try:
            run()
        except SystemExit as done:
            _before_a_leak_checker(done)
            raise
    except KeyboardInterrupt as error:  # before runner.run's own handling began
        signals.hold()
        sys.exit(signals.exit_code(error))
    except (MemoryError, OSError, RuntimeError) as error:  # a limit reached while the modules load
        loaded = sys.modules.get("cudnn_doctor.limits")
        stopped = loaded.limit_stopped(error) if loaded is not None else None
        if stopped is None:
            raise
        _stopped(stopped)
    except SystemExit:
        # The process ends with this exception. The interpreter's last collections need not walk every
        # object the command made: each is still freed, and atexit runs (10 ms of a check on 2 cores).
        # Here, not in cli.main: a program that calls cli.main in-process keeps its collector as it was.
        import gc

        gc.freeze()
        raise


MIN_COLUMNS = 10  # rich prints nothing at all in 0, 1 or 2 columns (help, check): no terminal is that narrow


def _terminal_size_as_a_terminal_could_have_it() -> None:
    """COLUMNS or LINES set to a size no terminal has (0, 1: a shell or CI that exports them empty-handed) is left out
    of this process's environment, so the output takes the terminal's own size (80 columns where there is none)
    instead of printing nothing. They are the doctor's own: no GPU program reads them."""
    import os

    for name in ("COLUMNS", "LINES"):
        value = os.environ.get(name, "")
        if value.strip().isascii() and value.strip().isdigit() and int(value) < MIN_COLUMNS:
            del os.environ[name]
    # a terminal that says it is that narrow itself (a pty of 1 column, a split pane dragged shut): the output at
    # the width used where there is no terminal, wrapped by the terminal, rather than nothing at all
    if "COLUMNS" not in os.environ:
        try:
            columns = os.get_terminal_size(sys.stdout.fileno()).columns
        except (OSError, ValueError, AttributeError):  # not a terminal, no stdout, or one without a descriptor
            return
        if columns < MIN_COLUMNS:
            os.environ["COLUMNS"] = "80"


def _with_frameworks(floor: tuple[str, str]) -> tuple[str, str]:
    """FLOOR's words, with what the frameworks were seen to need where the stack is what stopped the doctor."""
    import re

    found = re.search(r"ulimit -s is (\d+) KiB", floor[0])
    return (floor[0] + _frameworks_stack(int(found.group(1))), floor[1]) if found else floor


def _frameworks_stack(kib: int) -> str:
    """What the frameworks were seen to need of the stack (compat/process_env.toml's RLIMIT_STACK row), where KIB is
    below it; read only on this path, and nothing where the data cannot be read."""
    try:
        from cudnn_doctor.knowledge.data import load

        row = next(r for r in load("process_env").get("limit", []) if r.get("resource") == "RLIMIT_STACK")
        needs = [f"{name} {int(row[key])} KiB" for name, key in (("PyTorch", "torch_minimum"), ("JAX", "jax_minimum"))
                 if key in row and kib < int(row[key])]
    except Exception:  # noqa: BLE001 - a limit may leave nothing to read it with: the line stands without it
        return ""
    return f" (seen on an H100, below this a framework dies at its first GPU work: {', '.join(needs)})" if needs else ""
