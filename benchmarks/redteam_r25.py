"""Round twenty's red-team (issue 43, helper r25): a signal that lands while the doctor is writing its answer.

A user's Ctrl-C, a CI runner's SIGTERM at its timeout, SIGHUP from a closed terminal, SIGPIPE from `| head`, and
SIGQUIT, SIGUSR1, SIGUSR2 and SIGALRM from a wrapper, each delivered at an instant the harness controls (seeded),
never at a wall-clock guess:

1. full pipe: the answer's reader stops reading. Standard output is a pipe of 4 KiB that the harness filled but for a
   seeded number of bytes, so the doctor's write stalls at that byte of its answer (or before its first, where the
   answer is written in one piece that does not fit); once the doctor sleeps in pipe_write the signal is sent, and
   the pipe is not read for the case's ceiling. Over check --json and every document format, check's text, compat
   --json, explain (text and --json), fleet merge (text and --json), fix (--shell bash, --shell fish, --json) and
   install --json's final record;
2. slow reader: a reader that reads a byte a second; the signal after a seeded number of bytes read;
3. reader gone: the pipe full but for a seeded number of bytes, its reader closes its end while the doctor waits on
   it (SIGPIPE, EPIPE: 141);
4. files: the signal at the instant the doctor syncs or renames the file the user named (`--output`,
   `--junit-xml`; strace injects it as the doctor enters fsync or rename);
5. terminal: check's coloured text on a terminal (a pty), the signal as the doctor enters its Nth write (seeded);
6. rendered (added after the fixes): a --json answer rendered, not yet written, the pipe full; the signal sent by the
   doctor's own process at that instant (its json_text made to send it first).

A case holds when the doctor ends within its ceiling (5 s after the signal; 60 s in all) and 1 GiB, with no
traceback and no internal error; with either the whole answer (its exit code the answer's) or an incomplete one that
a JSON parser refuses (never a smaller valid object, never two objects) with the exit code of the signal (128 + N,
or killed by N as a shell reports it; 141 for a reader gone); the file the user named either as it was or whole and
new, and no temporary of the doctor's left beside it; and on a terminal, its settings as they were and no colour
left on (an SGR that sets a colour is followed by a reset before the end).

Usage: python benchmarks/redteam_r25.py [--package DIR] [--only TEXT] [--list]
  Prints each broken case, then a line per class `CLASS: H/T held` and `N cases, B broken, T s`.
"""

from __future__ import annotations

import fcntl
import json
import os
import pty
import random
import re
import signal
import subprocess
import sys
import tempfile
import termios
import threading
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import redteam_r22 as r22  # noqa: E402
from redteam_r22 import Broken  # noqa: E402

SEED = 25
CEILING_S = 60.0
AFTER_SIGNAL_S = 5.0  # how long a doctor may take to end once signalled while its reader does not read
PIPE_SIZE = 4096
F_SETPIPE_SZ = 1031
SIGNALS = ("SIGINT", "SIGTERM", "SIGHUP", "SIGQUIT", "SIGUSR1", "SIGUSR2", "SIGALRM")
TRACEBACK = re.compile(rb"Traceback \(most recent call last\)|internal error")


class Ended:
    def __init__(self, returncode: int, stdout: bytes, stderr: bytes) -> None:
        self.returncode, self.stdout, self.stderr = returncode, stdout, stderr



WRAPPER_SIGNALS = ("SIGHUP", "SIGINT", "SIGQUIT", "SIGTERM", "SIGUSR1", "SIGUSR2", "SIGALRM", "SIGPIPE")


def signals_at_default() -> None:
    """The doctor started as from a terminal: every signal a case sends at its default, whatever this run inherited
    (a harness started by `nohup` ignores SIGHUP, one started in the background of a shell SIGINT and SIGQUIT, and the
    doctor keeps a disposition it was started with)."""
    for name in WRAPPER_SIGNALS:
        signal.signal(getattr(signal, name), signal.SIG_DFL)

def environment(tmp: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CUDNN_DOCTOR", "PYTHON", "NO_COLOR", "FORCE_"))}
    env.update(HOME=str(tmp / "home"), PYTHONPATH=r22.package(), CUDNN_DOCTOR_CACHE_DIR=str(tmp / "cache"))
    (tmp / "home").mkdir(exist_ok=True)
    return env


def argv(args: list[str]) -> list[str]:
    return [sys.executable, "-P", "-m", "cudnn_doctor", *args]


def wchan(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/wchan").read_text()
    except OSError:
        return ""


def wait_ended(process: subprocess.Popen, seconds: float) -> int | None:
    """The exit status (as returncode) once PROCESS ended within SECONDS, else None; its peak memory judged."""
    until = time.monotonic() + seconds
    while time.monotonic() < until:
        pid, status, usage = os.wait4(process.pid, os.WNOHANG)
        if pid:
            if usage.ru_maxrss > r22.CEILING_RSS_KIB:
                raise Broken(f"{usage.ru_maxrss >> 10} MiB resident")
            process.returncode = os.waitstatus_to_exitcode(status)
            return process.returncode
        time.sleep(0.01)
    return None


def kill_group(process: subprocess.Popen) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except OSError:
        pass


def drain(fd: int) -> bytes:
    os.set_blocking(fd, False)
    got = []
    while True:
        try:
            chunk = os.read(fd, 65536)
        except BlockingIOError:
            break
        if not chunk:
            break
        got.append(chunk)
    return b"".join(got)


def piped(args: list[str], tmp: Path, signame: str, mode: str, at: int) -> Ended:
    """ARGS with standard output on a pipe, signalled (SIGNAME) at the instant MODE and AT choose."""
    read_end, write_end = os.pipe()
    fcntl.fcntl(write_end, F_SETPIPE_SZ, PIPE_SIZE)
    filler = b""
    if mode in ("full", "gone"):
        filler = b"#" * (PIPE_SIZE - at)
        os.write(write_end, filler)
    err = tempfile.TemporaryFile()
    process = subprocess.Popen(argv(args), env=environment(tmp), cwd=tmp, stdout=write_end, stderr=err,
                               stdin=subprocess.DEVNULL, start_new_session=True,
                               preexec_fn=signals_at_default)
    os.close(write_end)
    try:
        got = b""
        if mode in ("full", "gone"):  # the doctor asleep in a write to the pipe, or ended
            began = time.monotonic()
            while "pipe_write" not in wchan(process.pid):
                if process.poll() is not None or time.monotonic() - began > CEILING_S:  # the harness's own failure
                    raise Broken(f"never blocked on its full pipe (exit {process.returncode}): the case judges nothing")
                time.sleep(0.005)
            if mode == "gone":  # the reader goes away while the doctor waits on it (`| head -c N`)
                os.close(read_end)
                read_end = -1
                code = wait_ended(process, AFTER_SIGNAL_S)
                if code is None:
                    raise Broken(f"its reader gone: still running {AFTER_SIGNAL_S:.0f} s after")
                err.seek(0)
                return Ended(code, b"", err.read())
            os.kill(process.pid, getattr(signal, signame))
            code = wait_ended(process, AFTER_SIGNAL_S)
            if code is None:
                err.seek(0)
                raise Broken(f"{signame} while its reader did not read: still running {AFTER_SIGNAL_S:.0f} s after "
                             f"(in {wchan(process.pid) or '?'}; stderr {err.read()[-200:]!r})")
            got = drain(read_end)[len(filler):]
        elif mode == "drip":
            began = time.monotonic()
            while len(got) < at:  # a byte a second
                chunk = os.read(read_end, 1)
                if not chunk:
                    break
                got += chunk
                time.sleep(1.0 if len(got) > 1 else 0)
                if time.monotonic() - began > CEILING_S:
                    raise Broken("the answer's first bytes never came")
            os.kill(process.pid, getattr(signal, signame))
            reader_stop = threading.Event()
            more: list[bytes] = []

            def dribble() -> None:  # the slow reader goes on reading a byte a second
                while read_end >= 0 and not reader_stop.is_set():
                    try:
                        chunk = os.read(read_end, 1)
                    except OSError:
                        return
                    if not chunk:
                        return
                    more.append(chunk)
                    time.sleep(1.0)
            threading.Thread(target=dribble, daemon=True).start()
            code = wait_ended(process, AFTER_SIGNAL_S)
            reader_stop.set()
            if code is None:
                raise Broken(f"{signame} with a slow reader: still running {AFTER_SIGNAL_S:.0f} s after")
            if read_end >= 0:
                time.sleep(0.05)
                got += b"".join(more) + drain(read_end)
        err.seek(0)
        return Ended(code, got, err.read())
    finally:
        kill_group(process)
        if read_end >= 0:
            os.close(read_end)


def strace_signalled(args: list[str], tmp: Path, signame: str, calls: str, when: int = 1) -> Ended:
    """ARGS under strace, which delivers SIGNAME as the doctor enters its WHEN-th call of CALLS (fsync, rename)."""
    done = r22.run(["strace", "-f", "-qq", "-o", "/dev/null", "-e", f"trace={calls}", "-e",
                    f"inject={calls}:signal={signame}:when={when}", *argv(args)], environment(tmp), tmp, CEILING_S)
    return Ended(done.returncode, done.stdout, done.stderr)


# --- the judge ----------------------------------------------------------------------------------------------------

def signal_codes(signame: str) -> tuple[int, ...]:
    number = int(getattr(signal, signame))
    return 128 + number, -number


def judge(ended: Ended, signame: str, is_json: bool, answer_codes: tuple[int, ...] = (0, 1, 2)) -> None:
    """Whole answer with the answer's code, or an incomplete one with the signal's; no traceback."""
    if TRACEBACK.search(ended.stderr) or TRACEBACK.search(ended.stdout):
        found = TRACEBACK.search(ended.stderr) or TRACEBACK.search(ended.stdout)
        assert found is not None
        raise Broken(f"a traceback or internal error (exit {ended.returncode}): "
                     f"{(ended.stderr or ended.stdout)[max(0, found.start() - 60):found.start() + 200]!r}")
    stopped = signal_codes(signame)
    if signame == "SIGPIPE":
        if ended.returncode not in (141, -13):
            raise Broken(f"its reader gone: exit {ended.returncode}, not 141")
        return
    if not is_json:
        if ended.returncode not in (*stopped, *answer_codes):
            raise Broken(f"{signame}: exit {ended.returncode}")
        return
    text = ended.stdout.decode("utf-8", "replace")
    try:
        whole = json.loads(text)
    except ValueError:
        whole = None
    if whole is not None:
        if not isinstance(whole, dict):
            raise Broken("the answer parses as JSON that is not one object")
        title = whole.get("title") or whole.get("error", {}).get("title") if isinstance(whole.get("error"), dict) \
            else whole.get("title")
        if ended.returncode in stopped:
            if title != "Interrupted":
                raise Broken(f"{signame}: exit {ended.returncode} beside a whole answer that does not say so")
        elif ended.returncode not in answer_codes:
            raise Broken(f"{signame}: a whole answer, exit {ended.returncode}")
        elif "exit_code" in whole and whole["exit_code"] != ended.returncode:
            raise Broken(f"a whole answer whose exit_code {whole['exit_code']} is not the exit {ended.returncode}")
        return
    if not text:
        if ended.returncode not in stopped:
            raise Broken(f"{signame}: no answer at all, exit {ended.returncode}")
        return
    decoder = json.JSONDecoder()
    try:
        _first, end = decoder.raw_decode(text)
        raise Broken(f"{signame}: a JSON object then more: {text[end:end + 80]!r}")
    except ValueError:
        pass
    if '"title": "Interrupted"' in text:
        raise Broken(f"{signame}: the Interrupted object written after part of the answer: two objects in one")
    if ended.returncode not in stopped:
        raise Broken(f"{signame}: an incomplete answer ({len(text)} bytes), exit {ended.returncode}")


# --- the machines and commands -----------------------------------------------------------------------------------

def reports(tmp: Path) -> list[str]:
    """Two nodes' check --json reports for fleet merge (one differing in a field)."""
    done = r22.run(argv(["check", "--json"]), environment(tmp), tmp, CEILING_S)
    names = []
    for node in ("node-a", "node-b"):
        data = json.loads(done.stdout)
        if node == "node-b" and isinstance(data.get("host"), dict):
            data["host"]["hostname"] = node
        path = tmp / f"{node}.json"
        path.write_text(json.dumps(data))
        names.append(str(path))
    return names


def install_args(tmp: Path) -> list[str]:
    from tests.install_helpers import make_archive

    archive = make_archive("txz", tmp)
    return ["install", "--from", str(archive), "--prefix", str(tmp / "prefix"), "--yes", "--json"]


# each command: (its arguments made in the case's folder, whether its answer is JSON)
COMMANDS: dict[str, tuple[Callable[[Path], list[str]], bool]] = {
    "check --json": (lambda tmp: ["check", "--json"], True),
    "check --format junit": (lambda tmp: ["check", "--format", "junit"], False),
    "check --format markdown": (lambda tmp: ["check", "--format", "markdown"], False),
    "check --format github": (lambda tmp: ["check", "--format", "github"], False),
    "check --format prometheus": (lambda tmp: ["check", "--format", "prometheus"], False),
    "check (text)": (lambda tmp: ["check"], False),
    "compat --json": (lambda tmp: ["compat", "--json", "torch==2.5.1"], True),
    "explain": (lambda tmp: ["explain", "-v", "CUDNN_STATUS_NOT_SUPPORTED"], False),
    "explain --json": (lambda tmp: ["explain", "--json", "CUDNN_STATUS_NOT_SUPPORTED"], True),
    "fleet merge": (lambda tmp: ["fleet", "merge", *reports(tmp)], False),
    "fleet merge --json": (lambda tmp: ["fleet", "merge", "--json", *reports(tmp)], True),
    "fix --shell bash": (lambda tmp: ["fix", "--shell", "bash"], False),
    "fix --shell fish": (lambda tmp: ["fix", "--shell", "fish"], False),
    "fix --json": (lambda tmp: ["fix", "--json"], True),
    "install --json": (install_args, True),
}


def pipe_case(command: str, signame: str, mode: str, at: int) -> Callable[[Path], None]:
    make, is_json = COMMANDS[command]

    def case(tmp: Path) -> None:
        ended = piped(make(tmp), tmp, signame, mode, at)
        judge(ended, signame, is_json)
    return case


def file_case(args: list[str], option_file: str, signame: str, calls: str, is_json: bool = False,
              parses: Callable[[bytes], object] | None = None) -> Callable[[Path], None]:
    def case(tmp: Path) -> None:
        target = tmp / option_file
        target.write_bytes(b"the file as it was\n")
        ended = strace_signalled([a.replace("TARGET", str(target)) for a in args], tmp, signame, calls)
        judge(Ended(ended.returncode, b"" if not is_json else ended.stdout, ended.stderr), signame, is_json)
        left = [p.name for p in tmp.iterdir() if p.name.startswith(".cudnn-doctor-")]
        if left:
            raise Broken(f"{signame} at {calls}: a temporary left beside the user's file: {left[0]}")
        data = target.read_bytes()
        if data != b"the file as it was\n":
            try:
                if parses is not None:
                    parses(data)
            except Exception as error:  # noqa: BLE001 - a file half written
                raise Broken(f"{signame} at {calls}: the user's file half written ({error})") from None
            if ended.returncode in signal_codes(signame) and calls == "fsync":
                raise Broken(f"{signame} at fsync: the file replaced although the command stopped")
    return case


def _prometheus(data: bytes) -> None:
    if not data.endswith(b"\n") or b"cudnn_doctor" not in data:
        raise ValueError("not a whole Prometheus text")


def _xml(data: bytes) -> None:
    import xml.etree.ElementTree as ElementTree

    ElementTree.fromstring(data)


SGR = re.compile(rb"\x1b\[([0-9;]*)m")


def terminal_case(args: list[str], signame: str, when: int) -> Callable[[Path], None]:
    """ARGS on a pty (colours on), SIGNAME as the doctor enters its WHEN-th write."""
    def case(tmp: Path) -> None:
        master, slave = pty.openpty()
        before = termios.tcgetattr(slave)
        env = environment(tmp)
        env.update(TERM="xterm-256color", COLUMNS="100")
        process = subprocess.Popen(["strace", "-f", "-qq", "-o", "/dev/null", "-e", "trace=write", "-e",
                                    f"inject=write:signal={signame}:when={when}", *argv(args)],
                                   env=env, cwd=tmp, stdin=slave, stdout=slave, stderr=slave, start_new_session=True,
                               preexec_fn=signals_at_default)
        got = b""
        try:
            began = time.monotonic()
            code = None
            while code is None and time.monotonic() - began < CEILING_S:
                got += _read_some(master)
                code = wait_ended(process, 0.02)
            if code is None:
                raise Broken(f"{signame} at write {when}: did not end")
            got += _read_some(master)
            after = termios.tcgetattr(slave)
        finally:
            kill_group(process)
            os.close(master)
            os.close(slave)
        if TRACEBACK.search(got):
            raise Broken(f"{signame} at write {when}: a traceback on the terminal")
        if after != before:
            raise Broken(f"{signame} at write {when}: the terminal's settings changed")
        colour = False
        for found in SGR.finditer(got):
            codes = found.group(1)
            colour = codes not in (b"", b"0")
        if colour:
            raise Broken(f"{signame} at write {when}: a colour left on (exit {code}): ...{got[-80:]!r}")
        if code not in (*signal_codes(signame), 0, 1, 2):
            raise Broken(f"{signame} at write {when}: exit {code}")
    return case


def _read_some(fd: int) -> bytes:
    import select

    got = b""
    while select.select([fd], [], [], 0)[0]:
        try:
            chunk = os.read(fd, 65536)
        except OSError:
            break
        if not chunk:
            break
        got += chunk
    return got


RENDERED = """
import os, runpy, signal, sys
from cudnn_doctor.render import json_out
real, signum = json_out.json_text, int(sys.argv[1])
def rendered(data):
    if not json_out.written:  # the answer rendered, not yet written: the signal lands here
        json_out.json_text = real
        os.kill(os.getpid(), signum)
    return real(data)
json_out.json_text = rendered
sys.argv = ["cudnn-doctor", *sys.argv[2:]]
runpy.run_module("cudnn_doctor", run_name="__main__")
"""
RENDERED_CEILING_S = 20.0


def rendered_case(command: str, signame: str) -> Callable[[Path], None]:
    """COMMAND's JSON answer rendered, the pipe full (no room): SIGNAME sent by the doctor's own process as it
    renders (added after the fixes: the Interrupted object written to a reader that takes nothing)."""
    make, _ = COMMANDS[command]

    def case(tmp: Path) -> None:
        read_end, write_end = os.pipe()
        fcntl.fcntl(write_end, F_SETPIPE_SZ, PIPE_SIZE)
        os.write(write_end, b"#" * PIPE_SIZE)
        err = tempfile.TemporaryFile()
        process = subprocess.Popen([sys.executable, "-c", RENDERED, str(int(getattr(signal, signame))), *make(tmp)],
                                   env=environment(tmp), cwd=tmp, stdout=write_end, stderr=err,
                                   stdin=subprocess.DEVNULL, start_new_session=True,
                               preexec_fn=signals_at_default)
        os.close(write_end)
        try:
            code = wait_ended(process, RENDERED_CEILING_S)
            if code is None:
                raise Broken(f"{signame} as the answer was rendered, its reader taking nothing: still running "
                             f"{RENDERED_CEILING_S:.0f} s after its start (in {wchan(process.pid) or '?'})")
            got = drain(read_end)[PIPE_SIZE:]
        finally:
            kill_group(process)
            os.close(read_end)
        err.seek(0)
        stderr = err.read()
        judge(Ended(code, got, stderr), signame, True)
        if stderr.count(b"interrupted (") != 1:
            raise Broken(f"{signame}: 'interrupted' said {stderr.count(b'interrupted (')} times")
    return case


# --- the table ----------------------------------------------------------------------------------------------------

def cases() -> dict[str, tuple[str, Callable[[Path], None]]]:
    found: dict[str, tuple[str, Callable[[Path], None]]] = {}
    rng = random.Random(SEED)
    for command in COMMANDS:
        signals = SIGNALS if command == "check --json" else ("SIGINT", "SIGTERM", "SIGHUP", "SIGUSR1")
        for signame in signals:
            at = rng.randrange(1, 60)  # within the shortest answer (fix's 83 bytes here)
            found[f"full pipe: {command}, {signame} at byte {at}"] = ("full pipe", pipe_case(command, signame, "full", at))
    for command in ("check --json", "compat --json", "check (text)", "fix --shell bash"):
        for signame in ("SIGINT", "SIGTERM", "SIGHUP"):
            at = rng.randrange(2, 5)
            found[f"slow reader: {command}, {signame} after {at} bytes"] = (
                "slow reader", pipe_case(command, signame, "drip", at))
    for command in ("check --json", "check (text)", "compat --json", "explain", "fleet merge --json",
                    "fix --shell bash", "check --format junit"):
        at = rng.randrange(1, 60)
        found[f"reader gone: {command}, after {at} bytes"] = ("reader gone", pipe_case(command, "SIGPIPE", "gone", at))
    for signame in SIGNALS:
        for calls in ("fsync", "rename"):
            found[f"--output prometheus: {signame} at {calls}"] = ("files", file_case(
                ["check", "--format", "prometheus", "--output", "TARGET"], "node.prom", signame, calls,
                parses=_prometheus))
            found[f"--junit-xml: {signame} at {calls}"] = ("files", file_case(
                ["check", "--json", "--junit-xml", "TARGET"], "junit.xml", signame, calls, is_json=True, parses=_xml))
        found[f"--output junit: {signame} at fsync"] = ("files", file_case(
            ["check", "--format", "junit", "--output", "TARGET"], "out.xml", signame, "fsync", parses=_xml))
    for signame in ("SIGINT", "SIGTERM", "SIGHUP", "SIGQUIT"):
        for _ in range(2):
            when = rng.randrange(1, 12)
            found[f"terminal: check, {signame} at write {when}"] = ("terminal", terminal_case(["check"], signame, when))
        when = rng.randrange(1, 6)
        found[f"terminal: explain, {signame} at write {when}"] = ("terminal", terminal_case(
            ["explain", "CUDNN_STATUS_NOT_SUPPORTED"], signame, when))
    for command in ("compat --json", "explain --json"):  # added after the fixes (said in benchmarks/README.md)
        for signame in ("SIGINT", "SIGTERM", "SIGHUP", "SIGUSR2"):
            found[f"rendered: {command}, {signame} as its answer is rendered, the pipe full"] = (
                "rendered", rendered_case(command, signame))
    return found


def run_cases(chosen: dict[str, tuple[str, Callable[[Path], None]]], out=sys.stdout) -> dict[str, list]:
    return r22.run_cases(chosen, out=out)


def main() -> int:
    return r22.main(cases, __doc__)


if __name__ == "__main__":
    sys.exit(main())
