"""Round nineteen's red-team (issue 43, helper r23) as a figure, over the surfaces added in the last two rounds
(`git log --since "2026-12-07 09:00"` on main), each broken on purpose as a user's machine or a hostile file would:

1. JAX cache entries: JAX's persistent cache read back as JAX reads it (JAX_RAISE_PERSISTENT_CACHE_ERRORS on) with a
   million entries, entries that are FIFOs, sockets, links to devices, link loops, sparse files declaring 64 GiB,
   zlib bombs (a few MiB inflating to tens of GiB), names not UTF-8 or holding a newline or a terminal escape (cut
   short, so that they are named); the cache folder itself a FIFO, a file, a device, a link loop, unreadable, 120 KB;
2. XLA path flags: the kernel-cache file and the autotune results XLA loads (a FIFO, a device, a link loop, a sparse
   64 GiB file, braces 10^6 deep, a version of 10^6 digits, 10 MB without a newline, bytes not UTF-8), the AOT flag
   beside a cache of a million entries or a FIFO, XLA_FLAGS of 120 KB and a flag 10,000 times;
3. errata: the cuDNN frontend's errata sheet nested 10^5 deep, 16 MB, 10^6 rules, duplicate keys, NaN and Infinity,
   numbers of 10^6 digits, terminal escapes and newlines in its strings, UTF-16, not UTF-8, a FIFO, /dev/zero, a
   socket, sparse;
4. first context: the first-context probe (a CUDA variable no row vouches for; the context refused and made again in
   a child without it) whose second child hangs, leaves a daemon holding its pipe, prints megabytes of garbage or a
   forged answer, dies by SIGSEGV or by SIGKILL at a seeded instant; thousands of unknown CUDA variables, values of
   120 KB, names and values with newlines, escapes and bytes not UTF-8; the core-dump pipe read at context
   (CUDA_ENABLE_USER_TRIGGERED_COREDUMP) with CUDA_COREDUMP_PIPE hostile;
5. device files: where the loader looks for a cuDNN library, a link to /dev/zero, /dev/urandom, /dev/null, /dev/full,
   a character device made here, a socket, a link loop, a folder (CD308's reading of device files);
6. stdlib shadows: Python's own extension module (`_ctypes<suffix>`) in the working folder a FIFO, a device, a link
   loop, a folder, a socket, among 20,000 others, named with a newline or bytes not UTF-8 (CD419's finder);
7. working folder: the path settings made absolute for every child (TMPDIR, CUDA_CACHE_PATH, JAX's cache, XLA's dump
   folder relative) with the working folder deleted before or while the doctor runs, or unreadable; 3,000 relative
   path settings;
8. explain stdin: `explain -` reading /dev/zero, /dev/urandom, a folder, a closed or write-only descriptor, a
   non-blocking pipe written slowly, a terminal that sends 4 MiB then hangs up, escapes and bytes not UTF-8;
9. limits: check on a machine that exercises these readers (the context made again, a cache read, an errata sheet)
   under a few descriptors, a small address space, a second of CPU, files of 4 KiB.

A case holds when each command it runs ends within its ceiling (60 s unless said) and 1 GiB of resident memory (the
largest process of its tree), with no internal error (exit 3, a traceback), an exit code its contract gives, one JSON
object (its exit_code the process's) where --json, a clear line where not, no byte in its output that drives a
terminal (an escape, a C1 control, another C0 control than tab and newline), nothing new in the user's folders, and
nothing of its children left running after it ended.

Usage: python benchmarks/redteam_r23.py [--package DIR] [--only TEXT] [--list]
  Prints each broken case, then a line per class `CLASS: H/T held` and `N cases, B broken, T s`.
"""

from __future__ import annotations

import json
import os
import random
import re
import shutil
import socket
import subprocess
import sys
import time
import zlib
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import redteam_r22 as r22  # noqa: E402
from redteam_r22 import Broken, doctor, files_of, held  # noqa: E402

from tests.conftest import Machine  # noqa: E402

SEED = 23
CEILING_S = 60.0
# a byte that drives a terminal: ESC, CSI/OSC as C1 (U+009B, U+009D as UTF-8), BEL, backspace, carriage return, ...
DRIVING = re.compile(rb"[\x00-\x08\x0b-\x1f\x7f]|\xc2[\x80-\x9f]")


def no_driving_bytes(done: r22.Done, what: str) -> None:
    for name, data in (("stdout", done.stdout), ("stderr", done.stderr)):
        found = DRIVING.search(data)
        if found:
            at = found.start()
            raise Broken(f"{what}: a byte that drives a terminal on {name}: {data[max(0, at - 40):at + 10]!r}")


def no_bug_finding(done: r22.Done, what: str) -> None:
    """No probe or rule of the doctor's raised (CD901, CD902: 'a bug in cudnn-doctor', the report's internal error)."""
    for data in (done.stdout, done.stderr):
        text = data.decode("utf-8", "replace")
        found = re.search(r"The (probe|rule) \S+ raised [^:]*", text)
        if found or "CD901" in text or "CD902" in text:
            raise Broken(f"{what}: a bug finding: {found.group() if found else 'CD901/CD902'}")


def no_child_left(marker: str) -> None:
    """No process whose command line or environment holds MARKER (the case's own folder) is still running."""
    time.sleep(0.2)
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        try:
            with open(f"/proc/{pid}/environ", "rb") as stream:
                environ = stream.read()
            with open(f"/proc/{pid}/cmdline", "rb") as stream:
                cmdline = stream.read()
        except OSError:
            continue
        if marker.encode() in environ or marker.encode() in cmdline:
            try:
                os.kill(int(pid), 9)
            except OSError:
                pass
            raise Broken(f"a process of the doctor's left running: {cmdline[:100]!r}")


def check_case(setup: Callable[[Path], Machine], *args: str, ceiling: float = CEILING_S, text: bool = True,
               codes: tuple[int, ...] = (0, 1, 2), during: Callable[[Path], Callable[[], None]] | None = None,
               cwd: Callable[[Path, Machine], Path] | None = None,
               judge: Callable[[dict], None] | None = None) -> Callable[[Path], None]:
    """check --json ARGS (and, where TEXT, plain check) on the machine SETUP makes: held, no driving bytes, nothing
    new in the case's folder, no process left; the report judged by JUDGE."""
    def case(tmp: Path) -> None:
        machine = setup(tmp)
        before = files_of(tmp)
        where = cwd(tmp, machine) if cwd else machine.cwd
        done = doctor(["check", "--json", *args], machine.env, where, ceiling,
                      during=during(tmp) if during else None)
        report = held(done, True, codes)
        no_driving_bytes(done, "check --json")
        no_bug_finding(done, "check --json")
        if "Argument list too long" in json.dumps(report):  # what a program started here would not meet
            raise Broken("the doctor's children could not be started: 'Argument list too long'")
        if judge is not None:
            judge(report)
        if text:
            done = doctor(["check", *args], machine.env, where, ceiling, during=during(tmp) if during else None)
            held(done, False, codes)
            no_driving_bytes(done, "check")
            no_bug_finding(done, "check")
        no_child_left(str(tmp))
        if os.path.isdir(tmp):
            new = sorted(files_of(tmp) - before)
            if new:
                raise Broken(f"written into the user's folders: {new[:3]}")
    return case


# --- machines ---------------------------------------------------------------------------------------------------

def jax_machine(tmp: Path) -> Machine:
    from tests.test_cuda_libraries import jax_cu13

    machine = Machine(tmp)
    jax_cu13(machine, tmp)
    return machine


def torch_machine(tmp: Path) -> Machine:
    from tests.test_settings_read_files import torch_here

    machine = Machine(tmp)
    torch_here(machine, tmp)
    return machine


def gpu_machine(tmp: Path, **libcuda: object) -> Machine:
    from tests.test_process_env import gpu_machine as make

    machine = Machine(tmp)
    make(machine, tmp, gpus=1, **libcuda)
    return machine


# --- 1. JAX's persistent cache read back ----------------------------------------------------------------------------

def bomb(output: int) -> bytes:
    """A whole zlib stream inflating to OUTPUT bytes of zeros (OUTPUT a multiple of 1 MiB), built from one
    independent block repeated (a full flush makes each byte-aligned and free of what came before)."""
    packer = zlib.compressobj(9)
    block = packer.compress(b"\0" * (1 << 20)) + packer.flush(zlib.Z_FULL_FLUSH)
    head = block[:2]
    block = block[2:]
    end = zlib.compressobj(9).flush()[2:-4]  # an empty final block
    adler = ((output % 65521) << 16) | 1  # adler32 of OUTPUT zeros: A stays 1, B adds 1 a byte
    return head + block * (output >> 20) + end + adler.to_bytes(4, "big")


def sparse(path: Path, size: int) -> None:
    """PATH made a sparse file declaring SIZE bytes (none written)."""
    path.touch()
    os.truncate(path, size)


def cut_entry(path: Path) -> None:
    data = zlib.compress(os.urandom(4096))
    path.write_bytes(data[: len(data) // 2])


def _sock(path: Path) -> None:
    server = socket.socket(socket.AF_UNIX)
    server.bind(os.fsencode(path))
    server.close()


def _million(cache: Path) -> None:
    for n in range(1_000_000):
        os.close(os.open(cache / f"{n:07d}-cache", os.O_CREAT | os.O_WRONLY, 0o644))


CACHE_ENTRIES: dict[str, Callable[[Path], None]] = {
    "a million empty entries": _million,
    "600 FIFOs": lambda cache: [os.mkfifo(cache / f"k{n}-cache") for n in range(600)],
    "sockets": lambda cache: [_sock(cache / f"s{n}-cache") for n in range(20)],
    "links to devices": lambda cache: [(cache / f"d{n}-cache").symlink_to(d) for n, d in enumerate(
        ("/dev/zero", "/dev/urandom", "/dev/null", "/dev/full", "/dev/tty", "/dev/stdin"))],
    "link loops": lambda cache: [(cache / f"l{n}-cache").symlink_to(f"l{n}-cache") for n in range(50)],
    "a sparse entry of 64 GiB": lambda cache: sparse(cache / "big-cache", 64 << 30),
    "a sparse entry of 60 MiB after a zlib header": lambda cache: (
        (cache / "z-cache").write_bytes(b"\x78\x9c"), os.truncate(cache / "z-cache", 60 << 20)),
    "a zlib bomb of 60 MiB (60 GiB inflated)": lambda cache: (cache / "bomb-cache").write_bytes(bomb(60 << 30)),
    "500 zlib bombs of 120 KiB (60 GiB inflated)": lambda cache: [
        (cache / f"b{n:03d}-cache").write_bytes(data) for data in [bomb(120 << 20)] for n in range(500)],
    "names cut short with a newline and terminal escapes": lambda cache: [
        cut_entry(cache / name) for name in ("a\nb-cache", "\x1b[2J\x1b]0;pwned\x07-cache", "\x9b31m-cache",
                                             "\r\x08\x7f-cache")],
    "names cut short not UTF-8": lambda cache: [cut_entry(Path(os.fsdecode(bytes(cache) + b"/\xff\xfe" + bytes([n]) +
                                                                            b"-cache"))) for n in range(65, 70)],
    "a 16 KiB name of escapes": lambda cache: cut_entry(cache / ("\x1b[31m" * 40 + "-cache")),
    "entries a writer keeps cutting": lambda cache: [cut_entry(cache / f"w{n}-cache") for n in range(512)],
}


def cache_case(fill: Callable[[Path], None]) -> Callable[[Path], None]:
    def setup(tmp: Path) -> Machine:
        machine = jax_machine(tmp)
        cache = tmp / "jax-cache"
        cache.mkdir()
        fill(cache)
        machine.env.update({"JAX_COMPILATION_CACHE_DIR": str(cache), "JAX_RAISE_PERSISTENT_CACHE_ERRORS": "true"})
        return machine
    return check_case(setup)


def _cache_fifo(tmp: Path) -> str:
    os.mkfifo(tmp / "cache-fifo")
    return str(tmp / "cache-fifo")


def _cache_loop(tmp: Path) -> str:
    (tmp / "cache-loop").symlink_to("cache-loop")
    return str(tmp / "cache-loop")


def _cache_file(tmp: Path) -> str:
    cut_entry(tmp / "cache-file")
    return str(tmp / "cache-file")


CACHE_FOLDERS: dict[str, Callable[[Path], str]] = {
    "a FIFO": _cache_fifo,
    "a link loop": _cache_loop,
    "a file": _cache_file,
    "/dev/zero": lambda tmp: "/dev/zero",
    "/proc/self/fd": lambda tmp: "/proc/self/fd",
    "/proc": lambda tmp: "/proc",
    "a 120 KB path": lambda tmp: "/" + "c" * 120000,
    "a path with a newline and an escape": lambda tmp: str(tmp / "a\n\x1b[2Jb"),
    "a relative path": lambda tmp: "rel/cache",
}


def cache_folder_case(value: Callable[[Path], str]) -> Callable[[Path], None]:
    def setup(tmp: Path) -> Machine:
        machine = jax_machine(tmp)
        machine.env.update({"JAX_COMPILATION_CACHE_DIR": value(tmp), "JAX_RAISE_PERSISTENT_CACHE_ERRORS": "1"})
        return machine
    return check_case(setup)


def unreadable_cache_case(tmp: Path) -> None:
    machine = jax_machine(tmp)
    cache = tmp / "jax-cache"
    cache.mkdir()
    cut_entry(cache / "x-cache")
    (cache / "y-cache").write_bytes(zlib.compress(b"y"))
    os.chmod(cache / "y-cache", 0)
    os.chmod(cache, 0o300)  # listable no, enterable yes
    machine.env.update({"JAX_COMPILATION_CACHE_DIR": str(cache), "JAX_RAISE_PERSISTENT_CACHE_ERRORS": "true"})
    try:
        done = doctor(["check", "--json"], machine.env, machine.cwd, prefix=r22.NO_DAC)
    finally:
        os.chmod(cache, 0o755)
    held(done, True)
    no_bug_finding(done, "check --json")


# --- 2. XLA's path flags ----------------------------------------------------------------------------------------------

def _file(name: str, make: Callable[[Path], None]) -> Callable[[Path], str]:
    def build(tmp: Path) -> str:
        path = tmp / name
        make(path)
        return str(path)
    return build


FLAG_FILES: dict[str, Callable[[Path], str]] = {
    "a FIFO": _file("f.txt", os.mkfifo),
    "a link to /dev/zero": _file("z.txt", lambda p: p.symlink_to("/dev/zero")),
    "a link to /dev/urandom": _file("u.txt", lambda p: p.symlink_to("/dev/urandom")),
    "a link loop": _file("l.txt", lambda p: p.symlink_to(p.name)),
    "a socket": _file("s.txt", _sock),
    "a sparse 64 GiB file": _file("sp.txt", lambda p: sparse(p, 64 << 30)),
    "braces 10^6 deep": _file("b.txt", lambda p: p.write_bytes(b"results {\n" * 1_000_000)),
    "a version of 10^6 digits": _file("v.txt", lambda p: p.write_bytes(b"version: " + b"9" * 1_000_000 + b"\n")),
    "10 MB without a newline": _file("n.txt", lambda p: p.write_bytes(b"v" * (10 << 20))),
    "bytes not UTF-8 and escapes": _file("x.txt", lambda p: p.write_bytes(b"\xff\xfe\x1b[2J version: 3\n\x9b")),
    "a Git LFS pointer named with escapes": _file("\x1b[2J\x1b]0;t\x07.txt", lambda p: p.write_text(
        "version https://git-lfs.github.com/spec/v1\noid sha256:0\nsize 1\n")),
    "a folder": _file("d.txt", lambda p: p.mkdir()),
}


def flag_case(flag: str, value: Callable[[Path], str]) -> Callable[[Path], None]:
    def setup(tmp: Path) -> Machine:
        machine = jax_machine(tmp)
        machine.env["XLA_FLAGS"] = f"--{flag}={value(tmp)}"
        return machine
    return check_case(setup)


def aot_case(cache: Callable[[Path], str]) -> Callable[[Path], None]:
    def setup(tmp: Path) -> Machine:
        machine = jax_machine(tmp)
        machine.env.update({"XLA_FLAGS": "--xla_gpu_require_complete_aot_autotune_results=true",
                            "JAX_COMPILATION_CACHE_DIR": cache(tmp)})
        return machine
    return check_case(setup)


def _million_folder(tmp: Path) -> str:
    (tmp / "big").mkdir()
    _million(tmp / "big")
    return str(tmp / "big")


XLA_VALUES: dict[str, Callable[[Path], str]] = {
    "120 KB of flags": lambda tmp: " ".join(f"--xla_gpu_kernel_cache_file={tmp}/k{n}" for n in range(2400)),
    "one flag 2,500 times (120 KB)": lambda tmp: " ".join(["--xla_gpu_require_complete_aot_autotune_results"] * 2500),
    "a flag's value with a newline and escapes": lambda tmp: f"--xla_gpu_load_autotune_results_from={tmp}/a\n\x1b[2J.txt",
    "a flag's value not UTF-8": lambda tmp: os.fsdecode(b"--xla_gpu_kernel_cache_file=/tmp/\xff\xfe"),
    "quotes never closed": lambda tmp: "--xla_gpu_kernel_cache_file=\"" + "x" * 50000,
}


def xla_value_case(value: Callable[[Path], str]) -> Callable[[Path], None]:
    def setup(tmp: Path) -> Machine:
        machine = jax_machine(tmp)
        machine.env["XLA_FLAGS"] = value(tmp)
        return machine
    return check_case(setup)


# --- 3. the cuDNN frontend's errata sheet -----------------------------------------------------------------------------

def _nested(depth: int) -> bytes:
    return b'{"version": 1, "rules": ' + b"[" * depth + b"]" * depth + b"}"


ERRATA: dict[str, Callable[[Path], None]] = {
    "nested 10^5 deep": lambda p: p.write_bytes(_nested(100000)),
    "a rule nested 10^5 deep": lambda p: p.write_bytes(b'{"rules": [{"operation": "ConvFwd", "engine": 1, "knob": ' +
                                                       b"[" * 100000 + b"]" * 100000 + b"}]}"),
    "objects nested 10^5 deep": lambda p: p.write_bytes(b'{"a":' * 100000 + b"1" + b"}" * 100000),
    "16 MB of brackets, never all closed": lambda p: p.write_bytes(b'{"rules": ' + b"[" * (8 << 20) +
                                                                   b"]" * ((8 << 20) - 100) + b"}"),
    "16 MB of one string": lambda p: p.write_bytes(b'{"rules": [], "x": "' + b"s" * (16 << 20) + b'"}'),
    "120,000 rules": lambda p: p.write_bytes(b'{"rules": [' + b",".join(
        [b'{"operation":"ConvFwd","engine":1,"knob":[],"cudnn_version_start":8000,"cudnn_version_end":-1}'] *
        120000) + b"]}"),
    "duplicate keys": lambda p: p.write_bytes(b'{"rules": [{"operation": 5, "operation": "ConvFwd", "engine": "1", '
                                              b'"engine": 1}], "rules": []}'),
    "NaN and Infinity": lambda p: p.write_bytes(b'{"rules": [{"operation": "ConvFwd", "engine": NaN}], "x": Infinity}'),
    "an engine of 10^6 digits": lambda p: p.write_bytes(b'{"rules": [{"operation": "ConvFwd", "engine": ' +
                                                        b"9" * 1_000_000 + b"}]}"),
    "an operation of 10^6 digits": lambda p: p.write_bytes(b'{"rules": [{"operation": ' + b"7" * 1_000_000 +
                                                           b', "engine": 1}]}'),
    "a float of 10^6 digits": lambda p: p.write_bytes(b'{"rules": [{"operation": "ConvFwd", "engine": 1.' +
                                                      b"5" * 1_000_000 + b"e99999}]}"),
    "escapes and newlines in its strings": lambda p: p.write_text(json.dumps(
        {"rules": [{"operation": "\x1b[2J\x1b]0;pwned\x07\n\u009b31m", "engine": "\x1b[31m12\r"}]})),
    "escapes in a rule of the wrong type": lambda p: p.write_text(json.dumps({"rules": ["\x1b[2J\n\u009b" * 100]})),
    "UTF-16": lambda p: p.write_bytes(json.dumps({"rules": []}).encode("utf-16")),
    "bytes not UTF-8": lambda p: p.write_bytes(b'{"rules": [{"operation": "\xff\xfe", "engine": 1}]}'),
    "a FIFO": os.mkfifo,
    "a link to /dev/zero": lambda p: p.symlink_to("/dev/zero"),
    "a link to /dev/urandom": lambda p: p.symlink_to("/dev/urandom"),
    "a socket": _sock,
    "a sparse 64 GiB file": lambda p: sparse(p, 64 << 30),
    "a link loop": lambda p: p.symlink_to(p.name),
}


PARSED = ("duplicate keys", "an engine of 10^6 digits", "an operation of 10^6 digits", "a float of 10^6 digits",
          "nested 10^5 deep", "a rule nested 10^5 deep", "objects nested 10^5 deep")  # JSON to nlohmann::json


def errata_case(name: str, make: Callable[[Path], None]) -> Callable[[Path], None]:
    """CUDNN_ERRATA_JSON_FILE naming what MAKE makes; a sheet nlohmann::json parses (PARSED: any depth, duplicate keys
    the last kept, an integer past 64 bits strtod's float) is never said to be no JSON."""
    def setup(tmp: Path) -> Machine:
        machine = torch_machine(tmp)
        path = tmp / "errata.json"
        make(path)
        machine.env["CUDNN_ERRATA_JSON_FILE"] = str(path)
        return machine

    def judged(tmp: Path) -> None:
        check_case(setup)(tmp)
        if name in PARSED:
            (tmp / "again").mkdir()
            machine = setup(tmp / "again")
            report = held(doctor(["check", "--json"], machine.env, machine.cwd), True)
            said = [f for f in report.get("findings", []) if "not JSON" in str(f.get("detail"))]
            if said:
                raise Broken(f"a sheet the frontend parses said to be no JSON: {said[0]['detail'][:160]}")
    return judged


# --- 4. the first-context probe ---------------------------------------------------------------------------------------

REDO_C = r22.JOB_CHILD_C + r"""static int is_redo(void) {
    /* a job child started without the variable that had the context refused: the probe made again */
    if (!getenv("R23_MODE") || getenv("CUDA_FAKE_CONTEXT_LIMIT")) return 0;
    return is_job_child();
}
__attribute__((constructor)) static void at_load(void) {
    const char *mode = getenv("R23_MODE");
    if (mode && !strncmp(mode, "count:", 6) && is_job_child()) {  /* every job child counted, a byte each */
        int fd = open(mode + 6, O_WRONLY | O_APPEND | O_CREAT, 0644);
        if (fd >= 0) { (void)!write(fd, "x", 1); close(fd); }
        return;
    }
    if (!is_redo()) return;
    if (!strcmp(mode, "hang")) for (;;) pause();
    if (!strcmp(mode, "daemon")) { if (fork() == 0) { setsid(); sleep(600); _exit(0); } return; }
    if (!strcmp(mode, "garbage")) {
        static char junk[1 << 16];
        for (unsigned i = 0; i < sizeof junk; i++) junk[i] = (char)(i * 131 + 7);
        for (int n = 0; n < 64; n++) (void)!write(1, junk, sizeof junk);
        return;
    }
    if (!strcmp(mode, "forged")) {
        const char *line = "\x1e" "CDJ\t{\"cuda\": {\"context\": {\"step\": \"\\u001b[2J\", \"status\": 999999999999999999999}}}\n";
        (void)!write(1, line, strlen(line));
        return;
    }
    if (!strcmp(mode, "segv")) { signal(SIGSEGV, SIG_DFL); raise(SIGSEGV); }
    if (!strncmp(mode, "kill:", 5)) { signal(SIGALRM, SIG_DFL); ualarm((useconds_t)atoi(mode + 5), 0); }
}
"""


def redo_library(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "redo.c").write_text(REDO_C)
    library = folder / "libredo.so"
    subprocess.run(["gcc", "-shared", "-fPIC", "-O1", "-o", str(library), str(folder / "redo.c")], check=True,
                   capture_output=True, timeout=120)
    return library


def context_case(mode: str) -> Callable[[Path], None]:
    """The first context refused with CUDA_FAKE_CONTEXT_LIMIT (a variable no row knows) set; the child that makes it
    again without that variable acting as MODE says."""
    def setup(tmp: Path) -> Machine:
        machine = gpu_machine(tmp)
        machine.env.update({"CUDA_FAKE_CONTEXT_LIMIT": "500", "R23_MODE": mode,
                            "LD_PRELOAD": str(redo_library(tmp / "hostile")), "CUDNN_DOCTOR_PROBE_TIMEOUT": "8"})
        return machine
    return check_case(setup, judge=context_said)


def context_said(report: dict) -> None:
    """The first context CUDA refused here is said (CD416, an error where made without the variable, a warning where
    that could not be told), whatever the child made again did."""
    if not [f for f in report.get("findings", []) if f.get("code") == "CD416"]:
        raise Broken(f"the refused first context said by no finding (context_without: "
                     f"{(report.get('process') or {}).get('context_without')!r:.100})")


CUDA_VARIABLES: dict[str, Callable[[], dict[str, str]]] = {
    "3,000 unknown CUDA variables": lambda: {f"CUDA_X{n}": "1" for n in range(3000)},
    "a value of 120 KB": lambda: {"CUDA_FAKE_CONTEXT_LIMIT": "500" + "0" * 120000},
    "a value with a newline and escapes": lambda: {"CUDA_FAKE_CONTEXT_LIMIT": "500\n\x1b[2J\x1b]0;t\x07\u009b"},
    "a name with an escape": lambda: {"CUDA_\x1b[2J": "1", "CUDA_FAKE_CONTEXT_LIMIT": "500"},
    "a name and value not UTF-8": lambda: {os.fsdecode(b"CUDA_\xff\xfe"): os.fsdecode(b"\xff"),
                                           "CUDA_FAKE_CONTEXT_LIMIT": "500"},
    "2,000 unknown CUDA variables with the refused one": lambda: {**{f"CUDA_Y{n}": "v" * 40 for n in range(2000)},
                                                                 "CUDA_FAKE_CONTEXT_LIMIT": "500"},
}


def cuda_variables_case(variables: Callable[[], dict[str, str]]) -> Callable[[Path], None]:
    def setup(tmp: Path) -> Machine:
        machine = gpu_machine(tmp)
        machine.env.update(variables())
        return machine
    return check_case(setup)


COREDUMP_PIPES: dict[str, Callable[[Path], str]] = {
    "a FIFO already there": _file("pipe", os.mkfifo),
    "in a folder that is missing": lambda tmp: str(tmp / "missing" / "pipe"),
    "a 120 KB path": lambda tmp: "/" + "p" * 120000,
    "a path with a newline and an escape": lambda tmp: str(tmp / "a\n\x1b[2J"),
    "/dev/zero": lambda tmp: "/dev/zero",
    "a link loop": _file("loop", lambda p: p.symlink_to(p.name)),
    "%p and %h patterns": lambda tmp: str(tmp / "pipe.%p.%h.%t"),
}


def coredump_case(pipe: Callable[[Path], str]) -> Callable[[Path], None]:
    def setup(tmp: Path) -> Machine:
        machine = gpu_machine(tmp)
        machine.env.update({"CUDA_ENABLE_USER_TRIGGERED_COREDUMP": "1", "CUDA_COREDUMP_PIPE": pipe(tmp)})
        return machine
    return check_case(setup)


# --- 5. device files where the loader looks for cuDNN -------------------------------------------------------------

def _chardev(path: Path) -> None:
    os.mknod(path, 0o644 | 0o020000, os.makedev(1, 3))  # /dev/null's numbers


DEVICES: dict[str, Callable[[Path], None]] = {
    "/dev/zero": lambda p: p.symlink_to("/dev/zero"),
    "/dev/urandom": lambda p: p.symlink_to("/dev/urandom"),
    "/dev/null": lambda p: p.symlink_to("/dev/null"),
    "/dev/full": lambda p: p.symlink_to("/dev/full"),
    "a character device made here": _chardev,
    "a socket": _sock,
    "a link loop": lambda p: p.symlink_to(p.name),
    "a folder": lambda p: p.mkdir(),
    "a FIFO": os.mkfifo,
}


def device_case(make: Callable[[Path], None], name: str = "libcudnn_graph.so.9") -> Callable[[Path], None]:
    def setup(tmp: Path) -> Machine:
        from tests.test_loading import torch_with_real_cudnn

        machine = Machine(tmp)
        torch_with_real_cudnn(machine, tmp)
        folder = tmp / "device"
        folder.mkdir()
        make(folder / name)
        machine.add_library_path(folder)
        return machine
    return check_case(setup)


# --- 6. Python's own extension module shadowed ----------------------------------------------------------------------

def _suffix() -> str:
    import importlib.machinery

    return importlib.machinery.EXTENSION_SUFFIXES[0]


SHADOWS: dict[str, Callable[[Path], None]] = {
    "a FIFO": lambda cwd: os.mkfifo(cwd / f"_ctypes{_suffix()}"),
    "a link to /dev/zero": lambda cwd: (cwd / f"_ctypes{_suffix()}").symlink_to("/dev/zero"),
    "a link loop": lambda cwd: (cwd / f"_ctypes{_suffix()}").symlink_to(f"_ctypes{_suffix()}"),
    "a folder": lambda cwd: (cwd / f"_ctypes{_suffix()}").mkdir(),
    "a socket": lambda cwd: _sock(cwd / f"_ctypes{_suffix()}"),
    "among 20,000 other extension files": lambda cwd: [
        (cwd / f"_m{n}{_suffix()}").write_bytes(b"") for n in range(20000)] + [
        (cwd / f"_ctypes{_suffix()}").write_text("version https://git-lfs.github.com/spec/v1\n")],
    "among 40,000 other files, made first": lambda cwd: [
        (cwd / f"_ctypes{_suffix()}").write_text("version https://git-lfs.github.com/spec/v1\n")] + [
        (cwd / f"zz{n}.txt").write_bytes(b"") for n in range(40000)],
    "named with a newline": lambda cwd: (cwd / f"_ctypes\n{_suffix()}").write_text("x"),
    "named with bytes not UTF-8": lambda cwd: Path(os.fsdecode(bytes(cwd) + b"/_ct\xffypes" +
                                                               _suffix().encode())).write_text("x"),
    "a Git LFS pointer named with escapes": lambda cwd: (cwd / f"\x1b[2J_json{_suffix()}").write_text("x"),
}


SHADOWS_NAMED = ("among 20,000 other extension files", "among 40,000 other files, made first")


def shadow_case(make: Callable[[Path], None], named: bool = False) -> Callable[[Path], None]:
    """Python's own compiled module in the working folder as MAKE makes it; where NAMED (a file the finder takes:
    ctypes then fails to import), CD419 names it."""
    def setup(tmp: Path) -> Machine:
        from tests.test_python_start import _real_venv_torch

        machine = Machine(tmp)
        _real_venv_torch(machine, tmp)
        make(Path(machine.cwd))
        return machine

    def judge(report: dict) -> None:
        if named and not [f for f in report.get("findings", []) if f.get("code") == "CD419" and
                          str(f.get("subject", "")).endswith("/_ctypes")]:
            raise Broken("_ctypes shadowed in the working folder named by no CD419")
    return check_case(setup, judge=judge)


# --- 7. the working folder under the children's absolute paths -------------------------------------------------------

RELATIVE_SETTINGS = {"TMPDIR": "rel/tmp", "CUDA_CACHE_PATH": "rel/nv", "JAX_COMPILATION_CACHE_DIR": "rel/jax",
                     "XLA_FLAGS": "--xla_dump_to=rel/dump --xla_gpu_kernel_cache_file=rel/k.bin",
                     "CUDNN_ERRATA_JSON_FILE": "rel/errata.json", "TEST_TMPDIR": "rel/t",
                     "JAX_RAISE_PERSISTENT_CACHE_ERRORS": "1", "CUDA_COREDUMP_PIPE": "rel/pipe",
                     "CUDA_ENABLE_USER_TRIGGERED_COREDUMP": "1"}


def working_case(when: str) -> Callable[[Path], None]:
    def case(tmp: Path) -> None:
        machine = jax_machine(tmp)
        machine.env.update(RELATIVE_SETTINGS)
        if when == "3,000 relative settings":
            machine.env.update({f"CUDA_CACHE_PATH_{n}": f"rel/{n}" for n in range(3000)})
            machine.env.update({f"TMP{n}": f"rel/{n}" for n in range(10)})
        work = tmp / "work"
        (work / "rel" / "jax").mkdir(parents=True)
        cut_entry(work / "rel" / "jax" / "x-cache")
        (work / "rel" / "errata.json").write_text('{"rules": [{"operation": 1, "engine": 1}]}')
        if when == "deleted before":
            shell = f"cd {work} && rm -rf {work} && exec \"$@\""
            done = doctor(["check", "--json"], machine.env, tmp, prefix=["sh", "-c", shell, "sh"])
        elif when == "deleted while":
            done = doctor(["check", "--json"], machine.env, work,
                          during=lambda: (time.sleep(0.3), shutil.rmtree(work, ignore_errors=True)))
        elif when == "unreadable":
            os.chmod(work, 0o100)
            try:
                done = doctor(["check", "--json"], machine.env, work, prefix=r22.NO_DAC)
            finally:
                os.chmod(work, 0o755)
        else:
            done = doctor(["check", "--json"], machine.env, work)
        held(done, True)
        no_driving_bytes(done, "check --json")
        no_bug_finding(done, "check --json")
        no_child_left(str(tmp))
    return case


def long_relative_case(variables: Callable[[], dict[str, str]]) -> Callable[[Path], None]:
    """Path settings whose relative values, made absolute for the children, pass what exec takes for one variable
    (128 KiB): a program started here starts with them as written."""
    def setup(tmp: Path) -> Machine:
        machine = jax_machine(tmp)
        machine.cwd = tmp / ("w" * 200)
        machine.cwd.mkdir()
        machine.env.update(variables())
        return machine
    return check_case(setup, text=False)


LONG_RELATIVES: dict[str, Callable[[], dict[str, str]]] = {
    "XLA_FLAGS of 6,000 relative dump folders (113 KB)": lambda: {
        "XLA_FLAGS": " ".join(f"--xla_dump_to=d{n}" for n in range(6000))},
    "TMPDIR relative, 128 KiB less a little": lambda: {"TMPDIR": "t/" * 65000},
    "CUDA_CACHE_PATH relative, 128 KiB less a little": lambda: {"CUDA_CACHE_PATH": "c" * 131000},
    "PYTHONPYCACHEPREFIX and TMPDIR relative, 100 KB each": lambda: {"TMPDIR": "t" * 100000,
                                                                     "PYTHONPYCACHEPREFIX": "p" * 100000},
}


# --- 8. explain's standard input ---------------------------------------------------------------------------------

def explain_stdin(tmp: Path, prefix: list[str], stdin: bytes | None = None, ceiling: float = CEILING_S) -> None:
    machine = Machine(tmp)
    done = doctor(["explain", "-", "--json", "--offline-only"], machine.env, machine.cwd, ceiling, prefix=prefix,
                  stdin=stdin)
    held(done, True, (0, 1, 2))
    no_driving_bytes(done, "explain -")
    no_child_left(str(tmp))


def shell_stdin(redirect: str) -> Callable[[Path], None]:
    """explain - started by sh with REDIRECT (its standard input)."""
    return lambda tmp: explain_stdin(tmp, ["sh", "-c", f'exec "$@" {redirect}', "sh"])


PTY_CHILD = r"""
import os, pty, sys, threading, time
pid, fd = pty.fork()
mode = os.environ["R23_PTY"]
if pid == 0:
    if mode.endswith("nohup"):  # as nohup starts it: a hang-up is no signal, its reads answer EIO
        import signal
        signal.signal(signal.SIGHUP, signal.SIG_IGN)
    os.execvp(sys.argv[1], sys.argv[1:])
out = bytearray()
def drain():  # the terminal's output (and its echo) read as it comes, so no write of either side blocks
    while True:
        try:
            chunk = os.read(fd, 65536)
        except OSError:
            return
        if not chunk:
            return
        out.extend(chunk)
reader = threading.Thread(target=drain, daemon=True)
if not mode.startswith("hangup"):  # a read blocked in another thread would keep the terminal's side open
    reader.start()
time.sleep(0.5)
try:
    if mode == "flood":  # 4 MiB typed (lines past the terminal's 4,096 a line), then Ctrl-D
        for _ in range(64):
            os.write(fd, b"CUDNN_STATUS_NOT_INITIALIZED " * 2000 + b"\n")
        os.write(fd, b"\n\x04")
    elif mode == "escapes":
        os.write(fd, b"\x1b[2J\x1b]0;t\x07\xff\xfe CUDNN_STATUS_BAD_PARAM\n" * 50 + b"\n\x04")
    elif mode.startswith("hangup"):  # the terminal closed before anything is typed
        os.close(fd)
    elif mode == "ctrl-c":
        os.write(fd, b"CUDNN_STATUS_BAD_PARAM\n\x03")
    elif mode == "eof":
        os.write(fd, b"CUDNN_STATUS_BAD_PARAM\n\x04")
except OSError:
    pass
end, status = time.monotonic() + 40, None
while time.monotonic() < end:
    got, status = os.waitpid(pid, os.WNOHANG)
    if got:
        break
    status = None
    time.sleep(0.1)
if status is None:
    sys.stdout.buffer.write(b"R23: still running after 40 s\n")
    os.kill(pid, 9)
    sys.exit(99)
if not mode.startswith("hangup"):
    reader.join(2)
sys.stdout.buffer.write(bytes(out))
sys.exit(os.waitstatus_to_exitcode(status))
"""


def pty_case(mode: str) -> Callable[[Path], None]:
    """explain - on a terminal (a pty) whose other end does MODE; its output is the terminal's (no JSON judged: one
    line or object, no traceback, no hang)."""
    def case(tmp: Path) -> None:
        machine = Machine(tmp)
        script = tmp / "pty_child.py"
        script.write_text(PTY_CHILD)
        env = {**machine.env, "PYTHONPATH": r22.package(), "R23_PTY": mode}
        done = r22.run([sys.executable, str(script), sys.executable, "-P", "-m", "cudnn_doctor", "explain", "-",
                        "--offline-only"], env, machine.cwd, CEILING_S)
        said = done.stdout.decode("utf-8", "replace")
        if "Traceback" in said or done.returncode == 3 or "internal error" in said:
            raise Broken(f"explain - on a terminal that {mode}: {said.strip()[-200:]!r}")
        if done.returncode not in (0, 1, 2, 130, *((74, 129) if mode.startswith("hangup") else ())):
            # 74: its answer unwritable on a terminal gone; 129: SIGHUP, what a hang-up does to any program
            raise Broken(f"explain - on a terminal that {mode}: exit {done.returncode}: {said.strip()[-200:]!r}")
        no_child_left(str(tmp))
    return case


NONBLOCKING_WRITER = r"""
import fcntl, os, sys, time
read, write = os.pipe()
flags = fcntl.fcntl(read, fcntl.F_GETFL)
fcntl.fcntl(read, fcntl.F_SETFL, flags | os.O_NONBLOCK)
pid = os.fork()
if pid == 0:
    os.close(write)
    os.dup2(read, 0)
    os.execvp(sys.argv[1], sys.argv[1:])
os.close(read)
for n in range(5):
    time.sleep(0.3)
    os.write(write, b"CUDNN_STATUS_NOT_INITIALIZED\n")
os.close(write)
_, status = os.waitpid(pid, 0)
sys.exit(os.waitstatus_to_exitcode(status))
"""


def nonblocking_case(tmp: Path) -> None:
    script = tmp / "writer.py"
    script.write_text(NONBLOCKING_WRITER)
    explain_stdin(tmp, [sys.executable, str(script)])


STDINS: dict[str, Callable[[Path], None]] = {
    "/dev/zero": shell_stdin("</dev/zero"),
    "/dev/urandom": shell_stdin("</dev/urandom"),
    "closed": shell_stdin("<&-"),
    "write-only": shell_stdin("0>/dev/null"),
    "/dev/full": shell_stdin("</dev/full"),
    "a sparse 64 GiB file": lambda tmp: (sparse(tmp / "sparse", 64 << 30),
                                         shell_stdin(f"<{tmp / 'sparse'}")(tmp)),  # type: ignore[func-returns-value]
    "a non-blocking pipe written slowly": nonblocking_case,
}


# --- 9. limits ---------------------------------------------------------------------------------------------------

def limits_case(limit: list[str]) -> Callable[[Path], None]:
    """check --json on a machine whose new readers all run (a context refused and made again, JAX's cache read back,
    an errata sheet), under LIMIT (prlimit's options)."""
    def case(tmp: Path) -> None:
        machine = jax_machine(tmp)
        cache = tmp / "jax-cache"
        cache.mkdir()
        for n in range(40):
            cut_entry(cache / f"e{n}-cache")
        (tmp / "errata.json").write_text('{"rules": [{"operation": "ConvFwd", "engine": "12"}]}')
        machine.env.update({"JAX_COMPILATION_CACHE_DIR": str(cache), "JAX_RAISE_PERSISTENT_CACHE_ERRORS": "true",
                            "CUDNN_ERRATA_JSON_FILE": str(tmp / "errata.json"), "CUDA_FAKE_CONTEXT_LIMIT": "500",
                            "XLA_FLAGS": f"--xla_gpu_kernel_cache_file={tmp / 'errata.json'}"})
        done = doctor(["check", "--json"], machine.env, machine.cwd, 90, prefix=["prlimit", *limit])
        if done.returncode == 74 and "--fsize=4096" in limit and b"File too large" in done.stderr:
            return
        report = held(done, True, (0, 1, 2))
        if done.returncode == 2 and "limit" not in json.dumps(report).lower():
            raise Broken(f"exit 2 without naming a limit: {json.dumps(report)[:200]}")
        no_bug_finding(done, "check --json")
        no_child_left(str(tmp))
    return case


LIMITS: dict[str, list[str]] = {
    "12 descriptors": ["--nofile=12"],
    "24 descriptors": ["--nofile=24"],
    "64 MB of address space": ["--as=67108864"],
    "200 MB of address space": ["--as=209715200"],
    "1 s of CPU": ["--cpu=1"],
    "files of 4 KiB at most": ["--fsize=4096"],
    "a stack of 64 KiB": ["--stack=65536"],
}


# --- 10. --deep over these surfaces (its bisect, its downgrade of CD416) -----------------------------------------------

def deep_torch(tmp: Path) -> Machine:
    """torch with the real cuDNN whose GPU work --deep runs (round eighteen's bisect machine: a torch that fails only
    while a variable APP*=...BAD... is set)."""
    return r22.bisect_machine(tmp, {})


def deep_case(variables: Callable[[Path], dict[str, str]], machine_of: Callable[[Path], Machine] = deep_torch
              ) -> Callable[[Path], None]:
    def setup(tmp: Path) -> Machine:
        machine = machine_of(tmp)
        machine.env.update(variables(tmp))
        return machine
    return check_case(setup, "--deep", ceiling=150, text=False)


DEEPS: dict[str, Callable[[Path], dict[str, str]]] = {
    "a refused context, the child made without it hanging": lambda tmp: {
        "CUDA_FAKE_CONTEXT_LIMIT": "500", "R23_MODE": "hang", "CUDNN_DOCTOR_PROBE_TIMEOUT": "8",
        "LD_PRELOAD": str(redo_library(tmp / "hostile"))},
    "a refused context among 2,000 unknown CUDA variables": lambda tmp: {
        **{f"CUDA_Z{n}": "1" for n in range(2000)}, "CUDA_FAKE_CONTEXT_LIMIT": "500"},
    "an errata sheet nested 10^5 deep": lambda tmp: (
        (tmp / "e.json").write_bytes(_nested(100000)), {"CUDNN_ERRATA_JSON_FILE": str(tmp / "e.json")})[1],
}


# --- the table ----------------------------------------------------------------------------------------------------

def cases() -> dict[str, tuple[str, Callable[[Path], None]]]:
    found: dict[str, tuple[str, Callable[[Path], None]]] = {}
    for name, fill in CACHE_ENTRIES.items():
        found[f"JAX cache: {name}"] = ("JAX cache entries", cache_case(fill))
    for name, value in CACHE_FOLDERS.items():
        found[f"JAX cache folder: {name}"] = ("JAX cache entries", cache_folder_case(value))
    found["JAX cache folder: not listable, an entry unreadable"] = ("JAX cache entries", unreadable_cache_case)
    for flag in ("xla_gpu_kernel_cache_file", "xla_gpu_load_autotune_results_from"):
        for name, value in FLAG_FILES.items():
            found[f"--{flag}: {name}"] = ("XLA path flags", flag_case(flag, value))
    for name, value in {"a FIFO": _cache_fifo, "a million entries": _million_folder, "a link loop": _cache_loop,
                        "a 120 KB path": lambda tmp: "/" + "a" * 120000}.items():
        found[f"AOT results required, the cache {name}"] = ("XLA path flags", aot_case(value))
    for name, value in XLA_VALUES.items():
        found[f"XLA_FLAGS: {name}"] = ("XLA path flags", xla_value_case(value))
    for name, make in ERRATA.items():
        found[f"errata: {name}"] = ("errata", errata_case(name, make))
    for mode in ("hang", "daemon", "garbage", "forged", "segv"):
        found[f"context made again: the child {mode}"] = ("first context", context_case(mode))
    for seed in range(5):
        after = random.Random(f"{SEED}-redo-{seed}").randrange(200, 300000)
        found[f"context made again: the child killed {after} us after it loads"] = (
            "first context", context_case(f"kill:{after}"))
    for name, variables in CUDA_VARIABLES.items():
        found[f"CUDA variables: {name}"] = ("first context", cuda_variables_case(variables))
    for name, pipe in COREDUMP_PIPES.items():
        found[f"core-dump pipe: {name}"] = ("first context", coredump_case(pipe))
    for name, make in DEVICES.items():
        found[f"cuDNN's graph library: {name}"] = ("device files", device_case(make))
    found["cuDNN's main library: /dev/zero"] = ("device files", device_case(DEVICES["/dev/zero"], "libcudnn.so.9"))
    for name, make in SHADOWS.items():
        found[f"_ctypes in the working folder: {name}"] = ("stdlib shadows", shadow_case(make, name in SHADOWS_NAMED))
    for when in ("deleted before", "deleted while", "unreadable", "3,000 relative settings"):
        found[f"relative path settings, the working folder {when}"] = ("working folder", working_case(when))
    for name, variables in LONG_RELATIVES.items():
        found[f"relative path settings: {name}"] = ("working folder", long_relative_case(variables))
    for name, make in STDINS.items():
        found[f"explain - from {name}"] = ("explain stdin", make)
    for mode in ("flood", "escapes", "hangup", "hangup under nohup", "ctrl-c", "eof"):
        found[f"explain - on a terminal: {mode}"] = ("explain stdin", pty_case(mode))
    for name, limit in LIMITS.items():
        found[f"limits: {name}"] = ("limits", limits_case(limit))
    for name, variables in DEEPS.items():
        found[f"--deep: {name}"] = ("--deep", deep_case(variables))
    found["--deep: JAX's cache of 500 zlib bombs"] = ("--deep", deep_case(lambda tmp: (
        (tmp / "c").mkdir(), CACHE_ENTRIES["500 zlib bombs of 120 KiB (60 GiB inflated)"](tmp / "c"),
        {"JAX_COMPILATION_CACHE_DIR": str(tmp / "c"), "JAX_RAISE_PERSISTENT_CACHE_ERRORS": "1"})[2], jax_machine))
    return found


def run_cases(chosen: dict[str, tuple[str, Callable[[Path], None]]], out=sys.stdout) -> dict[str, list]:
    return r22.run_cases(chosen, out=out)


def main() -> int:
    return r22.main(cases, __doc__)


if __name__ == "__main__":
    sys.exit(main())
