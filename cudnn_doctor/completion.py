"""Shell completion through argcomplete (pipx's model): the values options take (--format, --dtype, --size, --list,
...), and `--show-completion [SHELL]` / `--install-completion [SHELL]` for bash, zsh, fish or PowerShell.

argcomplete is imported only when a shell asks (`_ARGCOMPLETE` set), and each value list only when the shell asks
for that option's values, so a plain start costs nothing more."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NoReturn

if TYPE_CHECKING:
    from pathlib import Path

SHELLS = ("bash", "zsh", "fish", "powershell", "pwsh")
PROG_NAME = "cudnn-doctor"


def _starting_with(values: Callable[[], tuple[str, ...] | list[str]]) -> Callable[..., list[str]]:
    def complete(prefix: str = "", **_: Any) -> list[str]:  # argcomplete passes action, parser, parsed_args too
        return [value for value in values() if value.startswith(prefix.lower())]

    return complete


def _formats() -> tuple[str, ...]:
    from cudnn_doctor.render.formats import NAMES

    return NAMES


def _bench(name: str) -> Callable[[], tuple[str, ...]]:
    def values() -> tuple[str, ...]:
        from cudnn_doctor.bench import workloads

        return tuple(getattr(workloads, name))

    return values


def _tables() -> list[str]:
    from cudnn_doctor.commands.compat import list_columns

    return list(list_columns())


complete_format = _starting_with(_formats)
complete_dtype = _starting_with(_bench("DTYPES"))
complete_size = _starting_with(_bench("SIZES"))
complete_layout = _starting_with(_bench("LAYOUTS"))
complete_workload = _starting_with(_bench("WORKLOADS"))
complete_api = _starting_with(_bench("APIS"))
complete_table = _starting_with(_tables)
complete_os = _starting_with(lambda: ("linux", "windows", "macos"))


def _shells() -> tuple[str, ...]:
    from cudnn_doctor.plan.shell import SHELL_NAMES

    return tuple(SHELL_NAMES)


complete_shell = _starting_with(_shells)


def complete_code(prefix: str = "", **_: Any) -> list[str]:
    """explain's CODE_OR_MESSAGE: the finding codes (CD3 completes to CD301, CD302, ...)."""
    from cudnn_doctor.codes import CODES

    return [code for code, entry in CODES.items() if not entry.retired and code.startswith(prefix.upper())]


def complete(parser: Any) -> NoReturn:
    """Answer the shell that asks for completions (argcomplete's protocol: `_ARGCOMPLETE`, `COMP_LINE`, `COMP_POINT`;
    the answers on descriptor 8) and end. Whatever the line holds (an unclosed quote ending in a backslash, a file
    name that is not UTF-8) or the variables say (a COMP_POINT that is no number, or past the line's end), the shell
    gets completions or none, exit 1: never a traceback, which the shell would print over the line being typed."""
    line = os.environ.get("COMP_LINE")
    if line is None:
        sys.exit(1)
    point = os.environ.get("COMP_POINT", "").strip()
    # the cursor where the shell says it is, on the line: a number of ASCII digits, else the line's end
    from cudnn_doctor.versions import ascii_digits

    os.environ["COMP_POINT"] = str(min(int(point), len(line)) if ascii_digits(point) else len(line))
    start = os.environ.get("_ARGCOMPLETE", "")
    os.environ["_ARGCOMPLETE"] = start if start in ("1", "2", "3") else "1"  # where the words start (argcomplete's)
    try:
        import argcomplete

        argcomplete.autocomplete(parser, exit_method=sys.exit, default_completer=complete_path)  # type: ignore[arg-type]
    except Exception:  # noqa: BLE001 - a line argcomplete cannot split, an answer it cannot write: no completions
        sys.exit(1)
    sys.exit(0)  # argcomplete found nothing to complete


def complete_path(prefix: str = "", **_: Any) -> list[str]:
    """The files and folders (a folder with a '/') whose path starts with PREFIX, as bash's `compgen -A file` lists
    them (a name starting with '.' only when PREFIX's last part does; '~/' read as the home folder, kept as typed),
    read here rather than by a bash started per Tab. A name that is not UTF-8 cannot be written back to the shell
    exactly, so it is left out (it never stops the others)."""
    folder, slash, start = prefix.rpartition("/")
    typed = folder + slash
    where = os.path.expanduser(typed) if typed.startswith("~") else typed
    found: list[str] = []
    try:
        entries = list(os.scandir(where or "."))
    except (OSError, ValueError):
        return found
    for entry in entries:
        name = entry.name
        if not name.startswith(start) or (name.startswith(".") and not start.startswith(".")):
            continue
        try:
            name.encode("utf-8")
            is_folder = entry.is_dir()
        except (UnicodeEncodeError, OSError):
            continue
        found.append(typed + name + ("/" if is_folder else ""))
    return sorted(found)


def script(shell: str) -> str:
    """The completion script of SHELL for cudnn-doctor, as argcomplete writes it."""
    from argcomplete import shellcode

    return shellcode([PROG_NAME], shell="powershell" if shell == "pwsh" else shell)


def _shell(named: str, option: str) -> str:
    """The shell NAMED, or the running one when none is named (the parent process, else $SHELL)."""
    from cudnn_doctor.errors import DoctorError

    fix = f"name one of {', '.join(SHELLS)}, or none for the running shell"
    if named:
        if named.lower() not in SHELLS:
            raise DoctorError(f"{option} {named}: not a shell it completes", fix=fix, code="CD001")
        return named.lower()
    from pathlib import Path

    candidates = []
    try:
        candidates.append(Path(f"/proc/{os.getppid()}/comm").read_text().strip())
    except OSError:
        pass
    candidates.append(os.path.basename(os.environ.get("SHELL", "")))
    for candidate in candidates:
        name = candidate.lower().removeprefix("-").removesuffix(".exe")
        if name in SHELLS:
            return name
    raise DoctorError(f"{option}: the running shell is not one it completes ({candidates[0] or 'unknown'})", fix=fix, code="CD008")


def show_script(named: str) -> int:
    """`--show-completion [SHELL]`: the script printed."""
    print(script(_shell(named, "--show-completion")))
    return 0


def install_script(named: str) -> int:
    """`--install-completion [SHELL]`: the script written where that shell reads completions (its start-up file told
    to read it where it needs that), and where it went. The script is written before the start-up file names it, so
    a start-up file never sources a script that is not there; anything in the way (a FIFO, a folder where a file
    goes, a file where a folder goes, a file or home it may not write, no HOME) is a one-line error that says what to
    do instead, and nothing of the user's is left half changed."""
    shell = _shell(named, "--install-completion")
    text = script(shell)
    _MADE.clear()
    if shell in ("powershell", "pwsh"):  # the profile is the user's own file: the script is added to it, once
        path = _powershell_profile(shell)
        prepared = _prepare_line(path, text, shell)
        if prepared is not None:
            _append(*prepared)
    else:
        home = _home(shell)
        rc_line: tuple[int, bytes] | None = None
        if shell == "bash":
            from cudnn_doctor.quoting import quote

            path = home / ".bash_completions" / f"{PROG_NAME}.sh"  # a quote or $ in HOME stays a path:
            rc_line = _prepare_line(home / ".bashrc", f"source {quote(str(path), 'bash')}", shell, path)
        elif shell == "zsh":
            path = home / ".zfunc" / f"_{PROG_NAME}"
            rc_line = _prepare_line(_absolute_folder("ZDOTDIR", home) / ".zshrc",  # zsh reads $ZDOTDIR/.zshrc
                                    "fpath+=~/.zfunc; autoload -Uz compinit; compinit", shell, path)
        else:  # fish's __fish_config_dir: $XDG_CONFIG_HOME/fish, else ~/.config/fish
            path = _absolute_folder("XDG_CONFIG_HOME", home / ".config") / "fish" / "completions" / f"{PROG_NAME}.fish"
        try:  # the start-up file is open to append before the script is written, and named only once it is
            _write_whole(path, text, shell)
        except BaseException:
            if rc_line is not None:
                os.close(rc_line[0])
            _undo_made()  # the folders and the empty start-up file made for it: the refusal says nothing changed
            raise
        if rc_line is not None:
            _append(*rc_line)
    from cudnn_doctor.streams import log_line
    from cudnn_doctor.user_files import escaped

    # one line whatever the home's name holds (a newline, a terminal escape): written escaped, as errors are
    print(log_line(f"{shell} completion installed in {escaped(str(path))}; it takes effect in a new shell"))
    return 0


RC_LIMIT = 16 << 20


def _by_hand(shell: str) -> str:
    return f"cudnn-doctor --show-completion {shell} prints the script: save it where {shell} reads completions"


def _home(shell: str) -> Path:
    """The user's home from HOME (the folder every shell reads its start-up files from): an absolute path to a
    folder. An empty or relative HOME is refused, not taken as / or the current folder."""
    from pathlib import Path

    from cudnn_doctor.errors import DoctorError
    from cudnn_doctor.user_files import escaped

    home = os.environ.get("HOME")
    if home is None:
        try:
            home = str(Path.home())
        except (RuntimeError, KeyError):
            home = ""
    if not home or not os.path.isabs(home):
        raise DoctorError(f"--install-completion {shell}: HOME is {'empty' if not home else repr(escaped(home))}, "
                          "not the absolute path of a folder, so there is no home to write into",
                          fix=f"set HOME to your home folder, or {_by_hand(shell)}", code="CD007")
    if not os.path.isdir(home):
        raise DoctorError(f"--install-completion {shell}: HOME ({escaped(home)}) is not a folder",
                          fix=f"set HOME to your home folder, or {_by_hand(shell)}", code="CD005")
    return Path(home)


def _absolute_folder(variable: str, default: Path) -> Path:
    """The folder VARIABLE names (ZDOTDIR, where zsh reads .zshrc; XDG_CONFIG_HOME, where fish keeps its folder) where
    it is an absolute path, else DEFAULT: the shell reads its files there, not where HOME alone would put them. A
    relative one is ignored, as the XDG base directory specification says."""
    from pathlib import Path

    value = os.environ.get(variable, "")
    return Path(value) if value.strip() and os.path.isabs(value) else default


def _refused(shell: str, path: object, why: str, fix: str) -> Exception:
    from cudnn_doctor.errors import DoctorError
    from cudnn_doctor.user_files import escaped

    return DoctorError(f"--install-completion {shell}: {escaped(str(path))}: {why}; nothing was changed", fix=fix,
                       code="CD006")


def _os_why(error: OSError) -> str:
    return error.strerror or str(error)


_MADE: list[str] = []  # the folders and files this install made (in order), taken away again where it is refused


def _undo_made() -> None:
    """What this install made before it was refused, taken away again where it is as it was made: an empty start-up
    file, an empty folder (a full disk or a FIFO in the way leaves the home as it was)."""
    for made in reversed(_MADE):
        try:
            if os.path.isdir(made) and not os.path.islink(made):
                os.rmdir(made)
            elif os.path.getsize(made) == 0:
                os.unlink(made)
        except OSError:
            pass
    _MADE.clear()


def _make_folder(folder: Path, shell: str, fix: str) -> None:
    """FOLDER and its parents made; a file, FIFO or link to nothing where a folder goes, or a folder it may not
    write, is a refusal that names the part in the way."""
    _within_limits(folder, shell, fix)
    missing = [str(part) for part in (*reversed(folder.parents), folder) if not os.path.lexists(part)]
    try:
        folder.mkdir(parents=True, exist_ok=True)
        _MADE.extend(missing)
    except OSError as error:
        for part in (*reversed(folder.parents), folder):
            if os.path.lexists(part) and not os.path.isdir(part):
                raise _refused(shell, part, "is in the way: it is not a folder", fix) from None
        raise _refused(shell, folder, _os_why(error), fix) from None


PATH_MAX = 4096  # bytes of a path the kernel takes (Linux's PATH_MAX, the terminating NUL included)
NAME_MAX = 255  # bytes of one name in it


def _within_limits(folder: Path, shell: str, fix: str) -> None:
    """A folder whose path the kernel cannot take (over PATH_MAX bytes, or a name over NAME_MAX) is refused before
    its parts are looked at: a shell could not read its start-up file there either, and walking 50,000 parents of a
    100 KB path (ZDOTDIR, XDG_CONFIG_HOME) took minutes."""
    name = os.fsencode(folder)
    longest = max(map(len, name.split(b"/")))
    if len(name) >= PATH_MAX - len(f"/{PROG_NAME}.fish") or longest > NAME_MAX:
        why = (f"its path is {len(name):,} bytes, more than the {PATH_MAX:,} the system takes" if longest <= NAME_MAX
               else f"one name in its path is {longest:,} bytes, more than the {NAME_MAX} the system takes")
        shown = os.fsdecode(name[:200]) + ("..." if len(name) > 200 else "")
        raise _refused(shell, shown, f"{why} (a shell could not read a file there either)", fix)


def _write_whole(path: Path, text: str, shell: str) -> None:
    """TEXT as the whole of the file PATH (ours: the completion script), written beside it and renamed over it, so a
    kill leaves the old file or the new one. What stands there and is not a regular file (a FIFO, a folder, a
    device) is refused, never opened: opening a FIFO to write waits for a reader forever."""
    import stat
    import tempfile

    fix = _by_hand(shell)
    _make_folder(path.parent, shell, fix)
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        mode = None
    except OSError as error:
        raise _refused(shell, path, _os_why(error), fix) from None
    if mode is not None and not stat.S_ISREG(mode):
        raise _refused(shell, path, "is in the way: it is not a regular file (a FIFO, folder or device)",
                       f"remove it, then run this again; or {fix}")
    target = os.path.realpath(path)  # a link the user made to the script keeps pointing at it
    temporary = None
    try:
        handle, temporary = tempfile.mkstemp(prefix=f".{PROG_NAME}.", dir=os.path.dirname(target))
        with open(handle, "wb") as out:
            out.write(text.encode("utf-8"))
            out.flush()
            os.fsync(out.fileno())
        os.chmod(temporary, 0o644)
        os.replace(temporary, target)
        temporary = None
    except OSError as error:
        raise _refused(shell, path, _os_why(error), fix) from None
    finally:
        if temporary is not None:
            try:
                os.unlink(temporary)
            except OSError:
                pass


def _prepare_line(rc_file: Path, line: str, shell: str, script: Path | None = None) -> tuple[int, bytes] | None:
    """The user's start-up file RC_FILE open to append LINE (one or more lines), and the bytes to append; None when
    the line is there already. Only ever appended, in one write: what the user had is never rewritten, so a kill at
    any instant leaves it whole. The file is read as bytes without blocking (any encoding; a FIFO or a huge file is
    not read, and the line is said instead of written); one it may not write, or a folder in its place, is said
    the same way. SCRIPT: the completion script LINE reads, not yet written when this is refused (nothing is changed
    then): the fix says to save it first, so the line it gives never sources a file that is not there."""
    import stat

    from cudnn_doctor.user_files import UnreadableFile, read_user_file

    wanted = line.encode("utf-8", "surrogateescape")
    fix = f"add this to it yourself: {line.splitlines()[0]}"
    if script is not None:
        from cudnn_doctor.quoting import quote

        fix = (f"save the script first, `mkdir -p {quote(str(script.parent), 'bash')} && cudnn-doctor "
               f"--show-completion {shell} > {quote(str(script), 'bash')}`, then {fix}")
    try:
        have = read_user_file(str(rc_file), RC_LIMIT) if os.path.lexists(rc_file) else b""
    except UnreadableFile as why:
        raise _refused(shell, rc_file, f"was not read ({why})", fix) from None
    if wanted in have:
        return None
    _make_folder(rc_file.parent, shell, fix)
    flags = os.O_RDWR | os.O_APPEND | os.O_CREAT | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)
    existed = os.path.lexists(rc_file)
    try:
        descriptor = os.open(rc_file, flags, 0o644)
    except OSError as error:
        raise _refused(shell, rc_file, _os_why(error), fix) from None
    if not existed:
        _MADE.append(str(rc_file))
    try:
        if not stat.S_ISREG(os.fstat(descriptor).st_mode):  # swapped for a FIFO since it was read
            raise _refused(shell, rc_file, "is not a regular file", fix)
    except BaseException:
        os.close(descriptor)
        raise
    return descriptor, _lead(have) + wanted + b"\n"


def _lead(have: bytes) -> bytes:
    """What goes before a line appended to a start-up file that holds HAVE: a last line without its newline is ended,
    and one ending in a backslash (it continues into the next line, in every shell) is ended by an empty line."""
    lead = b"\n" if have and not have.endswith(b"\n") else b""
    joined = have + lead
    if joined.rstrip(b"\n").endswith(b"\\") and not joined.endswith(b"\n\n"):
        lead += b"\n"
    return lead


def _append(descriptor: int, data: bytes) -> None:
    """DATA written to the open start-up file DESCRIPTOR in one write, and the file closed. The file is locked
    and read again first: two installs at the same instant append the line once, not twice."""
    from cudnn_doctor.errors import DoctorError

    try:
        try:
            import fcntl
        except ImportError:  # Windows: no advisory locks; the line was looked for when the file was opened
            fcntl = None  # type: ignore[assignment]
        if fcntl is not None and _locked(descriptor, fcntl):  # released when the descriptor is closed
            now = _read_all(descriptor)
            line = data.lstrip(b"\n")
            if line in now:
                return
            data = _lead(now) + line
        os.write(descriptor, data)
    except OSError as error:
        raise DoctorError(f"--install-completion: the start-up file was not written ({_os_why(error)})",
                          fix=f"add this to it yourself: {data.decode('utf-8', 'replace').strip().splitlines()[0]}",
                          code="CD006") from None
    finally:
        os.close(descriptor)


def _locked(descriptor: int, fcntl: Any) -> bool:
    """DESCRIPTOR locked for this process, waiting at most 5 s for another install that holds it; False where the
    file system has no locks (or another holds it longer): the line is then appended as read when opened."""
    import time

    for _ in range(50):
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            time.sleep(0.1)
        except OSError:
            return False
    return False


def _read_all(descriptor: int) -> bytes:
    """The open start-up file's bytes as they are now (at most RC_LIMIT), read from its start."""
    chunks, at = [], 0
    while at <= RC_LIMIT:
        chunk = os.pread(descriptor, 1 << 20, at)
        if not chunk:
            break
        chunks.append(chunk)
        at += len(chunk)
    return b"".join(chunks)


def _powershell_profile(shell: str) -> Path:
    """The profile PowerShell reads, as it says itself: asked through the one child runner (one deadline, and
    nothing it starts outlives the question)."""
    import shutil
    from pathlib import Path

    from cudnn_doctor.child import deadline_in, run_child, timeout_from_env
    from cudnn_doctor.errors import DoctorError

    program = "pwsh" if shell == "pwsh" else "powershell"
    fix = f"cudnn-doctor --show-completion {shell} >> $PROFILE, in {program}"
    found = shutil.which(program)
    if found is None:
        raise DoctorError(f"--install-completion {shell}: cannot ask {program} for its profile ({program} is not "
                          "on PATH)", fix=fix, code="CD009")
    seconds = timeout_from_env("CUDNN_DOCTOR_HELPER_TIMEOUT", 10.0)  # a helper program, as ldconfig and nvcc are
    answer = run_child([found, "-NoProfile", "-NonInteractive", "-Command", "echo", "$profile"], None,
                       deadline_in(seconds), what=program)
    lines = [text.strip() for text in answer.stdout.splitlines() if text.strip()]
    if answer.error or answer.exit_code != 0 or len(lines) != 1 or not os.path.isabs(lines[0]):
        why = answer.error or (f"it answered {lines[0][:200]!r}" if lines else "it answered nothing")
        if answer.timed_out:
            why += " (CUDNN_DOCTOR_HELPER_TIMEOUT gives it more)"
        raise DoctorError(f"--install-completion {shell}: cannot ask {program} for its profile ({why})", fix=fix,
                          code="CD009")
    return Path(lines[0])
