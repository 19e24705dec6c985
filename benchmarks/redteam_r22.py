"""Round eighteen's red-team (issue 43, helper r22) as a figure, over the surfaces added in the last three rounds,
each broken on purpose as a user's machine or a hostile file would break it:

1. wheel RECORD: the nvidia-* wheels' RECORD files (whose sizes say a framework's own copy was replaced) huge, not
   UTF-8, a FIFO, a link loop, a folder, with hostile CSV quoting, paths climbing out of the site, sizes that are no
   numbers; a wheel folder that is a link loop; the wheel's library itself a FIFO, a device, a sparse file;
2. loading child: torch's own preloading code (which the loading child runs and announces file by file) printing
   garbage or forged answer lines, killed at any instant, exiting early, hanging, leaving a daemon, closing every
   descriptor, flooding its standard error;
3. job child: _job_child.py started without its arguments or with hostile ones;
4. preload paths: LD_PRELOAD's and LD_LIBRARY_PATH's relative entries (made absolute for the children) 120 KB long,
   thousands of entries (naming nothing),
   with newlines and tabs, climbing out (../../etc/passwd), a folder, $ORIGIN; with the working folder deleted under
   the doctor (a FIFO there is left out: ld.so opens it before the doctor's own Python starts, as for any program);
5. working folder: modules shadowed there that are FIFOs, devices, link loops; thousands of files; names that are not
   UTF-8 or hold a newline; the folder deleted before or while the doctor runs (plain check and --deep);
6. bisect: --deep's search over every variable among thousands of variables, values of 120 KB (the most one
   variable can hold: the kernel's MAX_ARG_STRLEN is 128 KiB), values with newlines and shell syntax, a culprit whose
   name no shell can unset;
7. NVML release: the release read from the file the loader maps through a chain of links, a name with a newline or
   other digits, the kernel module's version file a FIFO, huge or not UTF-8;
8. explain by resemblance: 1 MB messages, 100,000 lines, one token of 1 MB, 50,000 distinct words, bytes that are
   not UTF-8, on the command line and on standard input;
9. limits: check on a machine whose loading child runs, under a few descriptors, a small address space, a small
   stack or data segment, a second of CPU, files of 4 KiB (a limit of processes is left out: this machine's kernel
   does not enforce RLIMIT_NPROC, a limit of 1 still forks);
10. compat data added: the temporary-folder rows (TMPDIR, TMP, TEST_TMPDIR naming a FIFO, a link loop, a file, a
    120 KB path, a path with a newline) and JAX_PLATFORMS hostile, with JAX installed.

A case holds when each command it runs ends within its ceiling of time (60 s unless said) and of memory (1 GiB of
resident memory, the largest process of its tree), with no internal error (exit 3, a traceback), an exit code of
those its contract gives, one JSON object (its exit_code the process's) where --json, a clear line where not, no
false error about a file that is whole, no child of the doctor's that could not be started ('Argument list too long':
what a program started here does not meet), and nothing written into the user's folders (the case's folder is compared
before and after, the doctor's cache and Python's own bytecode caches left out).

Usage: python benchmarks/redteam_r22.py [--package DIR] [--only TEXT] [--list]
  Prints each broken case, then a line per class `CLASS: H/T held` and `N cases, B broken, T s`.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from tests.conftest import Machine  # noqa: E402

PACKAGE: Path | None = None
SEED = 22
CEILING_S = 60.0
CEILING_RSS_KIB = 1 << 20  # 1 GiB


def package() -> str:
    return str(PACKAGE or Path(__file__).resolve().parents[1])


# what a case saw go wrong, and the contract every command's end is judged by: round seventeen's red-team's (r21)
from redteam_r21 import Broken, held, source_lines  # noqa: E402


class Done:
    def __init__(self, returncode: int, stdout: bytes, stderr: bytes, rss_kib: int, seconds: float) -> None:
        self.returncode, self.stdout, self.stderr, self.rss_kib, self.seconds = \
            returncode, stdout, stderr, rss_kib, seconds


def run(argv: list[str], env: dict[str, str], cwd: Path | str, ceiling: float = CEILING_S,
        stdin: bytes | None = None, during: Callable[[], None] | None = None) -> Done:
    """ARGV with ENV in CWD, its output in files, waited for with wait4 (the largest resident set of its tree);
    killed, with its group, past CEILING seconds. DURING runs in a thread once it started."""
    out = tempfile.TemporaryFile()
    err = tempfile.TemporaryFile()
    began = time.monotonic()
    process = subprocess.Popen(argv, env=env, cwd=cwd, stdout=out, stderr=err,
                               stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
                               start_new_session=True)
    if stdin is not None:
        def feed() -> None:
            try:
                assert process.stdin is not None
                process.stdin.write(stdin)
                process.stdin.close()
            except OSError:
                pass
        threading.Thread(target=feed, daemon=True).start()
    if during is not None:
        threading.Thread(target=during, daemon=True).start()
    while True:
        pid, status, usage = os.wait4(process.pid, os.WNOHANG)
        if pid:
            break
        if time.monotonic() - began > ceiling:
            try:
                os.killpg(process.pid, signal.SIGKILL)
            except OSError:
                pass
            os.wait4(process.pid, 0)
            raise Broken(f"{' '.join(a for a in argv if not a.startswith('/'))[:80]}: did not end within "
                         f"{ceiling:.0f} s")
        time.sleep(0.02)
    process.returncode = os.waitstatus_to_exitcode(status)
    try:
        os.killpg(process.pid, signal.SIGKILL)  # what it left behind in its group
    except OSError:
        pass
    out.seek(0)
    err.seek(0)
    return Done(process.returncode, out.read(), err.read(), usage.ru_maxrss, time.monotonic() - began)


def doctor(args: list[str], env: dict[str, str], cwd: Path | str, ceiling: float = CEILING_S,
           prefix: list[str] | None = None, stdin: bytes | None = None,
           during: Callable[[], None] | None = None) -> Done:
    """The doctor as its console script starts it (no working folder on sys.path: python -P)."""
    environment = dict(env)
    environment["PYTHONPATH"] = package()
    done = run([*(prefix or []), sys.executable, "-P", "-m", "cudnn_doctor", *args], environment, cwd, ceiling,
               stdin, during)
    if done.rss_kib > CEILING_RSS_KIB:
        raise Broken(f"{' '.join(args[:2])}: {done.rss_kib >> 10} MiB resident, over {CEILING_RSS_KIB >> 10} MiB")
    return done


def errors(report: dict) -> list[dict]:
    return [f for f in report.get("findings", []) if f.get("severity") == "error"]


def no_error_naming(report: dict, text: str, why: str) -> None:
    named = [f for f in report.get("findings", []) if f.get("severity") in ("error", "warning") and
             text in f"{f.get('subject')} {f.get('detail')}"]
    if named:
        raise Broken(f"{why}: {named[0]['code']} {named[0].get('subject')!s:.100}")


# --- the user's folders, compared before and after --------------------------------------------------------------

LEFT_OUT = ("cache", "__pycache__")


def files_of(folder: Path) -> set[str]:
    found: set[str] = set()
    for top, dirs, names in os.walk(folder, followlinks=False):
        dirs[:] = [d for d in dirs if d not in LEFT_OUT]
        for name in (*dirs, *names):
            found.add(os.path.relpath(os.path.join(top, name), folder))
    return found


# --- machines ---------------------------------------------------------------------------------------------------

def torch_machine(tmp: Path, sizes: bool = True) -> tuple[Machine, Path]:
    """torch 2.11+cu130 with its cu13 wheels (fakes) and the real cuDNN 9.19; each RECORD as pip writes it (path,
    hash, size) where SIZES."""
    from tests.test_cuda_libraries import torch_cu13
    from tests.test_evidence_round17 import records_with_sizes

    machine = Machine(tmp)
    site = torch_cu13(machine, tmp)
    if sizes:
        records_with_sizes(site)
    return machine, site


def cut_in_half(path: Path) -> None:
    data = path.read_bytes()
    path.unlink()
    path.write_bytes(data[: len(data) // 2])


def check_case(setup: Callable[[Path], tuple[Machine, Callable[[dict], None] | None]], *args: str,
               ceiling: float = CEILING_S, codes: tuple[int, ...] = (0, 1, 2),
               during: Callable[[Path], Callable[[], None]] | None = None) -> Callable[[Path], None]:
    """check --json ARGS on the machine SETUP makes; the report judged by what SETUP returns."""
    def case(tmp: Path) -> None:
        machine, judge = setup(tmp)
        before = files_of(tmp)
        done = doctor(["check", "--json", *args], machine.env, machine.cwd, ceiling,
                      during=during(tmp) if during else None)
        report = held(done, True, codes)
        if "Argument list too long" in json.dumps(report):  # what a program started here would not meet
            raise Broken("the doctor's children could not be started: 'Argument list too long'")
        if judge is not None:
            judge(report)
        if os.path.isdir(tmp):
            new = sorted(files_of(tmp) - before)
            if new:
                raise Broken(f"written into the user's folders: {new[:3]}")
    return case


# --- 1. wheel RECORD --------------------------------------------------------------------------------------------

CUBLAS_RECORD = "nvidia_cublas-13.1.0.3.dist-info/RECORD"
LT = "nvidia/cu13/lib/libcublasLt.so.13"


def record_case(spoil: Callable[[Path, Path], None], whole: bool = True) -> Callable[[Path], None]:
    """The cuBLAS wheel's RECORD (or its files) spoiled by SPOIL(site, record); where WHOLE, every library still reads
    whole, so no error or warning may name libcublasLt."""
    def setup(tmp: Path) -> tuple[Machine, Callable[[dict], None] | None]:
        machine, site = torch_machine(tmp)
        spoil(site, site / CUBLAS_RECORD)

        def judge(report: dict) -> None:
            if whole:
                no_error_naming(report, "libcublasLt", "a whole library said broken")
        return machine, judge
    return check_case(setup)


def _replace(record: Path, data: bytes) -> None:
    record.unlink()
    record.write_bytes(data)


def _lines(site: Path, record: Path) -> list[str]:
    return record.read_text().splitlines()


def _size(site: Path) -> int:
    return (site / LT).stat().st_size


RECORD_SPOILS: dict[str, Callable[[Path, Path], None]] = {
    "a FIFO": lambda site, record: (record.unlink(), os.mkfifo(record)),  # type: ignore[func-returns-value]
    "a link loop": lambda site, record: (record.unlink(), record.symlink_to("RECORD")),  # type: ignore
    "a folder": lambda site, record: (record.unlink(), record.mkdir()),  # type: ignore[func-returns-value]
    "a sparse 64 GiB file": lambda site, record: os.truncate(record, 64 << 30),
    "link to /dev/zero": lambda site, record: (record.unlink(), record.symlink_to("/dev/zero")),  # type: ignore
    "link to /dev/urandom": lambda site, record: (record.unlink(), record.symlink_to("/dev/urandom")),  # type: ignore
    "60 MB of lines": lambda site, record: _replace(record, (f"{LT},sha256=x,{_size(site)}\n" +
                                                            "nvidia/cu13/lib/other.so,,1\n" * 2_000_000).encode()),
    "bytes not UTF-8 around its lines": lambda site, record: _replace(
        record, b"\xff\xfe\x00\xc3(\n" + record.read_bytes() + b"\xe2\x82\n\x80\x80,\xff,\xfe\n"),
    "hostile CSV quoting (a quoted hash holding commas)": lambda site, record: _replace(
        record, f'{LT},"sha256=a,5,",{_size(site)}\n'.encode()),
    "hostile CSV quoting (the path quoted)": lambda site, record: _replace(
        record, f'"{LT}",sha256=a,1\n{LT},sha256=a,{_size(site)}\n'.encode()),
    "a path climbing out (nvidia/../lib)": lambda site, record: _replace(
        record, record.read_bytes() + b"nvidia/../lib/libcublasLt.so.13,,5\n"),
    "a path climbing out (../../etc/passwd)": lambda site, record: _replace(
        record, b"../../../../../../etc/passwd,,1\nnvidia/../../../../../../lib/libcudart.so.13,,1\n" +
        record.read_bytes()),
    "an absolute path": lambda site, record: _replace(
        record, b"/etc/nvidia/x/lib/libcudart.so.13,,1\n" + record.read_bytes()),
    "a listed file that is another wheel's folder": lambda site, record: _replace(
        record, record.read_bytes() + b"nvidia/cu13/lib/libcufft.so.12/..,,1\n"),
    "sizes that are no numbers": lambda site, record: _replace(record, "".join(
        f"{LT},,{size}\n" for size in ("1e9", "-1", "0x10", "\u0663\u0664", "  ", "nan", "9" * 400, "+12",
                                       "1_000")).encode()),
    "the size of another file (a path listed twice)": lambda site, record: _replace(
        record, f"{LT},,{_size(site)}\n{LT},,7\n".encode()),
    "a path listed twice, the wrong size first": lambda site, record: _replace(
        record, f"{LT},,7\n{LT},,{_size(site)}\n".encode()),
    "a NUL in a line": lambda site, record: _replace(record, f"{LT}\x00,,7\n{LT},,{_size(site)}\n".encode()),
    "CR line ends": lambda site, record: _replace(record, record.read_bytes().replace(b"\n", b"\r\n")),
    "one line of 4 MiB": lambda site, record: _replace(record, b"nvidia/" + b"x" * (4 << 20) + b",,1\n" +
                                                       record.read_bytes()),
}


def _wheel_folder_loop(site: Path, record: Path) -> None:
    (site / "nvidia" / "loop").symlink_to("loop")
    (site / "nvidia" / "up").mkdir()
    (site / "nvidia" / "up" / "lib").symlink_to("..")
    record.write_text(record.read_text() + "nvidia/loop/lib/libcudart.so.13,,5\nnvidia/up/lib/libnccl.so.2,,5\n")


def _dist_info_loop(site: Path, record: Path) -> None:
    (site / "nvidia_loop-1.0.dist-info").symlink_to("nvidia_loop-1.0.dist-info")
    (site / "nvidia_other-1.0.dist-info").mkdir()
    (site / "nvidia_other-1.0.dist-info" / "RECORD").symlink_to(site / "nvidia_other-1.0.dist-info")


def _many_dist_infos(site: Path, record: Path) -> None:
    for n in range(3000):
        info = site / f"nvidia_x{n}-1.0.dist-info"
        info.mkdir()
        (info / "RECORD").write_text(f"nvidia/x{n}/lib/libcudart.so.13,,5\n")


def _library_fifo(site: Path, record: Path) -> None:
    (site / LT).unlink()
    os.mkfifo(site / LT)


def _library_device(site: Path, record: Path) -> None:
    (site / LT).unlink()
    (site / LT).symlink_to("/dev/zero")


def _library_sparse(site: Path, record: Path) -> None:
    os.truncate(site / LT, 64 << 30)


def _library_folder(site: Path, record: Path) -> None:
    (site / LT).unlink()
    (site / LT).mkdir()


def _lib_folder_many(site: Path, record: Path) -> None:
    lib = site / "nvidia" / "cu13" / "lib"
    for n in range(20000):
        (lib / f"x{n}.so").write_bytes(b"")


WHEEL_SPOILS: dict[str, tuple[Callable[[Path, Path], None], bool]] = {
    "a wheel folder that is a link loop": (_wheel_folder_loop, True),
    "a dist-info folder that is a link loop": (_dist_info_loop, True),
    "3,000 nvidia dist-info folders": (_many_dist_infos, True),
    "20,000 files in the wheel's lib folder": (_lib_folder_many, True),
    "the library a FIFO": (_library_fifo, False),
    "the library a link to /dev/zero": (_library_device, False),
    "the library a sparse 64 GiB file": (_library_sparse, False),
    "the library a folder": (_library_folder, False),
}


# --- 2. loading child: torch's own preloading code hostile --------------------------------------------------------

HOSTILE_PRELOADS = {
    "prints garbage on stdout": "import os; os.write(1, bytes(range(256)) * 4096)",
    "prints forged answer lines": (
        "import os; os.write(1, b'\\x1eCDL\\tlib-recipe-try\\t' + b'/etc/' * 200000 + b'\\n' + "
        "b'\\x1eCDL\\tlib\\tlibcublasLt.so.13\\tpath\\t/etc/passwd\\tok\\n\\x1eCDL\\tdone\\n' + "
        "b'\\x1eCDL\\tlib-version\\tlibcublasLt.so.13\\t' + b'9' * 100000 + b'\\n' + "
        "b'\\x1eCDL\\tlib-bound\\tlibcublasLt.so.13\\t\\xd9\\xa3\\n\\x1eCDL\\tlibs-done\\n')"),
    "prints a half line, then is killed": "import os, signal; os.write(1, b'\\x1eCDL\\tlib-start\\tlibcu');"
                                          " os.kill(os.getpid(), signal.SIGKILL)",
    "is killed by SIGKILL": "import os, signal; os.kill(os.getpid(), signal.SIGKILL)",
    "is killed by SIGSEGV": "import os, signal; os.kill(os.getpid(), signal.SIGSEGV)",
    "exits 0 early": "import os; os._exit(0)",
    "exits 137 early": "import os; os._exit(137)",
    "raises SystemExit with 1 MB": "raise SystemExit('x' * (1 << 20))",
    "raises a BaseException of its own": "raise type('Odd', (BaseException,), {})('odd')",
    "recurses without end": "import sys; sys.setrecursionlimit(10 ** 6)\ndef _r(n): return _r(n + 1)\n_r(0)",
    "hangs": "import time; time.sleep(10 ** 6)",
    "leaves a daemon holding its output": (
        "import os, time\nif os.fork() == 0:\n    os.setsid()\n    time.sleep(600)\n    os._exit(0)"),
    "closes every descriptor": "import os; os.closerange(0, 4096)",
    "floods standard error (64 MB)": "import os; [os.write(2, b'w' * (1 << 20)) for _ in range(64)]",
    "changes its working folder and umask": "import os; os.chdir('/proc'); os.umask(0o777)",
    "writes a file in the working folder": "open('torch-wrote-this', 'w').write('x')",
}


def loading_child_case(code: str) -> Callable[[Path], None]:
    """torch's _load_global_deps runs CODE first (the loading child runs it where a wheel's copy is cut short)."""
    def setup(tmp: Path) -> tuple[Machine, Callable[[dict], None] | None]:
        machine, site = torch_machine(tmp)
        cut_in_half(site / LT)
        init = site / "torch" / "__init__.py"
        body = "\n".join("    " + line for line in code.split("\n"))
        init.write_text(init.read_text().replace("def _load_global_deps():\n",
                                                 "def _load_global_deps():\n" + body + "\n", 1))
        return machine, None
    return check_case(setup)


def killed_at(seed: int) -> str:
    """torch's preloading code killed by SIGKILL at a seeded instant of the loading child's work (0 to 400 ms)."""
    delay = random.Random(f"{SEED}-kill-{seed}").uniform(0.0, 0.4)
    return (f"import os, signal, threading\nthreading.Timer({delay:.3f}, os.kill, (os.getpid(), signal.SIGKILL))"
            ".start()")


for _seed in range(6):
    HOSTILE_PRELOADS[f"is killed at a seeded instant ({_seed})"] = killed_at(_seed)


def _module_file(relative: str, make: Callable[[Path], None]) -> Callable[[Path], None]:
    def spoil(site: Path) -> None:
        path = site / relative
        if path.exists() or path.is_symlink():
            path.unlink()
        make(path)
    return spoil


def _deep_expression(path: Path) -> None:
    path.write_text("cuda = " + "+".join(["1"] * 200000) + "\ndebug = " + "-" * 300000 + "1\n")


def _nested(path: Path) -> None:
    path.write_text("cuda = " + "[" * 100 + "]" * 100 + "\n" + "x = ((((" * 60 + "\n")


MODULE_FILES: dict[str, Callable[[Path], None]] = {
    "torch/version.py a FIFO": _module_file("torch/version.py", os.mkfifo),
    "torch/version.py a link to /dev/urandom": _module_file("torch/version.py",
                                                              lambda p: p.symlink_to("/dev/urandom")),
    "torch/version.py an expression 200,000 terms deep": _module_file("torch/version.py", _deep_expression),
    "torch/version.py nested past the parser's limit": _module_file("torch/version.py", _nested),
    "torch/version.py bytes not UTF-8": _module_file("torch/version.py",
                                                     lambda p: p.write_bytes(b"cuda = '\xff\xfe'\n\x00\x80")),
    "torch/__init__.py a FIFO": _module_file("torch/__init__.py", os.mkfifo),
    "torch/__init__.py an expression 200,000 terms deep": _module_file(
        "torch/__init__.py", lambda p: p.write_text("def _load_global_deps():\n    x = " + "+".join(["1"] * 200000) +
                                                    "\ndef _preload_cuda_deps(): pass\n")),
    "torch/__init__.py 16 MB": _module_file("torch/__init__.py", lambda p: p.write_text("#" * (16 << 20))),
    "torch/lib/libtorch_global_deps.so a FIFO": _module_file("torch/lib/libtorch_global_deps.so", os.mkfifo),
}


def module_file_case(spoil: Callable[[Path], None]) -> Callable[[Path], None]:
    """A framework's own module file spoiled where the loading child reads or runs it (a wheel's copy cut short so
    that it runs)."""
    def setup(tmp: Path) -> tuple[Machine, Callable[[dict], None] | None]:
        machine, site = torch_machine(tmp)
        cut_in_half(site / LT)
        spoil(site)
        return machine, None
    return check_case(setup)


SHELL_NAMES = {"shell syntax": "13.1.0.3;touch P;$(touch P)`touch P`", "a newline": "13.1.0.3\ntouch P",
               "a quote": "13.1.0.3'\"touch P"}


def dist_info_case(version: str) -> Callable[[Path], None]:
    """The cut library's wheel's dist-info folder named with VERSION (a hostile wheel's): the plan's reinstall line
    names it; the lines fix prints for bash run nothing a name holds."""
    def case(tmp: Path) -> None:
        machine, site = torch_machine(tmp)
        cut_in_half(site / LT)
        info = site / "nvidia_cublas-13.1.0.3.dist-info"
        info.rename(site / f"nvidia_cublas-{version}.dist-info")
        held(doctor(["check", "--json"], machine.env, machine.cwd), True, (0, 1))
        done = doctor(["fix"], machine.env, machine.cwd)
        held(done, False, (0, 1))
        text = done.stdout.decode("utf-8", "surrogateescape")
        for line in text.split("\n"):
            if "touch" not in line or line.strip().startswith(("why:", "#", "tried:")):
                continue
            # the line as bash reads it, its first word made harmless: a name that is not quoted runs touch
            subprocess.run(["bash", "--norc", "-c", "args() { :; }; args " + line.strip()], cwd=tmp,
                           capture_output=True, timeout=30, env={"PATH": "/usr/bin:/bin"})
        if (tmp / "P").exists():
            said = [line for line in text.split("\n") if "touch" in line][:1]
            raise Broken(f"a line of fix runs a command a wheel's name holds: {said}")
    return case


# the C both red-teams' preloaded libraries begin with: whether this process is one of the doctor's job children
JOB_CHILD_C = r"""
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
static int is_job_child(void) {
    char buffer[8192];
    int fd = open("/proc/self/cmdline", O_RDONLY);
    if (fd < 0) return 0;
    ssize_t got = read(fd, buffer, sizeof buffer - 1);
    close(fd);
    for (ssize_t i = 0; i + 13 <= got; i++)
        if (memcmp(buffer + i, "_job_child.py", 13) == 0) return 1;
    return 0;
}
"""

HOSTILE_CHILD_C = JOB_CHILD_C + r"""static void garbage(void) {
    static char junk[1 << 16];
    for (unsigned i = 0; i < sizeof junk; i++) junk[i] = (char)(i * 131 + 7);
    for (int n = 0; n < 16; n++) { (void)!write(1, junk, sizeof junk); (void)!write(2, junk, sizeof junk); }
}
__attribute__((destructor)) static void at_exit(void) {
    if (is_job_child() && getenv("R22_GARBAGE")) garbage();
}
__attribute__((constructor)) static void at_load(void) {
    if (!is_job_child()) return;
    const char *after = getenv("R22_KILL_US");
    if (after) {
        signal(SIGALRM, SIG_DFL);
        ualarm((useconds_t)atoi(after), 0);
    }
    if (getenv("R22_GARBAGE")) garbage();
}
"""


def hostile_child_library(folder: Path) -> Path:
    """A library preloaded into every process, that acts only in the doctor's job children: killed by SIGALRM
    R22_KILL_US microseconds after it loads; 2 MiB of garbage on stdout and stderr at load and at exit
    (R22_GARBAGE)."""
    folder.mkdir(parents=True, exist_ok=True)
    source = folder / "hostile_child.c"
    source.write_text(HOSTILE_CHILD_C)
    library = folder / "libhostile_child.so"
    subprocess.run(["gcc", "-shared", "-fPIC", "-O1", "-o", str(library), str(source)], check=True,
                   capture_output=True, timeout=120)
    return library


def job_children_case(variables: dict[str, str]) -> Callable[[Path], None]:
    """check --json where every job child (the probes' and the loading child) preloads the hostile library (a wheel's
    copy cut short, so the loading child runs)."""
    def setup(tmp: Path) -> tuple[Machine, Callable[[dict], None] | None]:
        machine, site = torch_machine(tmp)
        cut_in_half(site / LT)
        machine.env["LD_PRELOAD"] = str(hostile_child_library(tmp / "hostile"))
        machine.env.update(variables)
        return machine, None
    return check_case(setup)


def mount_case(where: str) -> Callable[[Path], None]:
    """A folder bind-mounted into itself (a mount loop of one level: what a container's volumes make), inside the
    case's own folder only, unmounted after."""
    def case(tmp: Path) -> None:
        machine, site = torch_machine(tmp)
        cut_in_half(site / LT)
        work = tmp / "work"
        (work / "nvidia" / "cu13" / "lib").mkdir(parents=True)
        source, target = {"the working folder into its nvidia/cu13/lib": (work, work / "nvidia" / "cu13" / "lib"),
                          "site-packages into a wheel's lib folder": (site, site / "nvidia" / "cu13" / "lib" / "s")
                          }[where]
        target.mkdir(parents=True, exist_ok=True)
        if subprocess.run(["mount", "--bind", str(source), str(target)], capture_output=True).returncode != 0:
            raise Broken("cannot bind-mount here (not judged)")
        try:
            held(doctor(["check", "--json"], machine.env, work), True)
            held(doctor(["check", "--json", "--deep"], machine.env, work, 150), True)
        finally:
            subprocess.run(["umount", "-l", str(target)], capture_output=True)
    return case


JAX_MODULES: dict[str, Callable[[Path], None]] = {
    "a FIFO": os.mkfifo,
    "a link to /dev/urandom": lambda path: path.symlink_to("/dev/urandom"),
    "killing its process": lambda path: path.write_text("import os, signal\nos.kill(os.getpid(), signal.SIGKILL)\n"),
    "hanging": lambda path: path.write_text("import time\ntime.sleep(10 ** 6)\n"),
    "printing garbage and closing every descriptor": lambda path: path.write_text(
        "import os\nos.write(1, bytes(range(256)) * 4096)\nos.closerange(0, 4096)\n"),
    "raising SystemExit": lambda path: path.write_text("raise SystemExit(3)\n"),
}


def jax_module_case(make: Callable[[Path], None]) -> Callable[[Path], None]:
    """JAX's CUDA plugin, its wheel's copy of cuBLASLt cut short (so that its loading child runs the plugin's
    _load_nvidia_libraries), and nvidia/cu13/__init__.py, which that code imports (importlib), made by MAKE."""
    def setup(tmp: Path) -> tuple[Machine, Callable[[dict], None] | None]:
        from tests.test_cuda_libraries import jax_cu13

        machine = Machine(tmp)
        site = jax_cu13(machine, tmp)
        cut_in_half(site / LT)
        module = site / "nvidia" / "cu13" / "__init__.py"
        module.unlink()
        make(module)
        return machine, None
    return check_case(setup)


def hostile_site_case(tmp: Path) -> None:
    """The whole environment in a folder named with a newline, a tab, a backslash, a terminal escape and $(...): the
    loading child's answer (its fields escaped) names the cut library as it is, and fix's lines, read by bash, run
    nothing the name holds."""
    folder = tmp / "we\nird\tdir\\x \x1b[2J $(touch P)"
    folder.mkdir()
    machine, site = torch_machine(folder)
    cut_in_half(site / LT)
    wrapper = folder / "venv" / "bin" / "python3"  # the environment's python3 a program (a sh script of the
    wrapper.write_text(f"#!{sys.executable} -S\nimport os, sys\nos.environ['PYTHONPATH'] = {str(site)!r}\n"  # tests'
                       f"os.execv({sys.executable!r}, [{sys.executable!r}, *sys.argv[1:]])\n")  # cannot hold it)
    report = held(doctor(["check", "--json"], machine.env, machine.cwd), True, (0, 1))
    if not [f for f in report["findings"] if f.get("subject") == str(site / LT)]:
        raise Broken("the cut library in a folder of that name was not named as it is")
    done = doctor(["fix"], machine.env, machine.cwd)
    held(done, False, (0, 1))
    for line in done.stdout.decode("utf-8", "surrogateescape").split("\n"):
        if "touch" in line and not line.strip().startswith(("why:", "#", "tried:", "Plan for", "Not cured")):
            subprocess.run(["bash", "--norc", "-c", "args() { :; }; args " + line.strip()], cwd=tmp,
                           capture_output=True, timeout=30, env={"PATH": "/usr/bin:/bin"})
    if (tmp / "P").exists() or (folder / "P").exists():
        raise Broken("a line of fix ran a command the folder's name holds")


# --- 3. the job child ----------------------------------------------------------------------------------------------

JOB_ARGS = {
    "no arguments": [],
    "its jobs module alone (_probe_jobs)": ["_probe_jobs"],
    "its jobs module alone (_load_jobs)": ["_load_jobs"],
    "a module climbing out": ["../../etc/passwd"],
    "a probe of /dev/zero": ["_probe_jobs", "cuda", "/dev/zero"],
    "the loading jobs with arguments that are no Python": ["_load_jobs", "torch", "/", "x", "x", "x", "x", "x", "x",
                                                           "not python", "x", "(((("],
}


def job_child_case(args: list[str]) -> Callable[[Path], None]:
    def case(tmp: Path) -> None:
        script = Path(package()) / "cudnn_doctor" / "_job_child.py"
        done = run([sys.executable, "-I", "-S", str(script), *args], {"PATH": "/usr/bin:/bin"}, "/", 30)
        err = done.stderr.decode("utf-8", "replace")
        if "Traceback" in err:
            raise Broken(f"a traceback: {err.strip().splitlines()[-1:]}")
        if done.returncode == 0 and not done.stdout.strip():
            raise Broken("exit 0 with nothing answered")
        if done.returncode != 0 and len(err.strip().splitlines()) != 1 and not done.stdout.strip():
            raise Broken(f"exit {done.returncode}: {err.strip()[-200:]!r}")
    return case


# --- 4. LD_PRELOAD's relative entries -------------------------------------------------------------------------------

def plain_machine(tmp: Path) -> Machine:
    from tests.test_process_env import gpu_machine

    machine = Machine(tmp)
    gpu_machine(machine, tmp, gpus=1)
    machine.cwd = tmp / "work"
    machine.cwd.mkdir()
    return machine


def preload_case(value: Callable[[Path], str], deleted: bool = False) -> Callable[[Path], None]:
    def setup(tmp: Path) -> tuple[Machine, Callable[[dict], None] | None]:
        machine = plain_machine(tmp)
        machine.env["LD_PRELOAD"] = value(machine.cwd)
        if deleted:
            gone = tmp / "gone"
            gone.mkdir()
            machine.cwd = gone  # removed once the doctor started in it (below)
        return machine, None
    case = check_case(setup, codes=(0, 1, 2))
    if not deleted:
        return case

    def in_deleted(tmp: Path) -> None:
        machine, _ = setup(tmp)
        done = doctor(["check", "--json"], machine.env, machine.cwd,
                      during=lambda: (time.sleep(0.05), shutil.rmtree(tmp / "gone", ignore_errors=True)))
        held(done, True)
    return in_deleted


PRELOADS: dict[str, Callable[[Path], str]] = {
    "120 KB of relative entries (one variable's most)": lambda cwd: "lib/x.so " * 13000,
    "8,000 entries": lambda cwd: ":".join(f"d{n}/libx.so" for n in range(8000)),
    "an entry with a newline and a tab": lambda cwd: "lib/a\nb.so lib/c\td.so",
    "climbing out (../../etc/passwd)": lambda cwd: "../../../../../../../etc/passwd",
    "a relative folder": lambda cwd: "lib/",
    "the working folder itself": lambda cwd: "./",
    "$ORIGIN and $LIB": lambda cwd: "$ORIGIN/../x.so ${LIB}/y.so $PLATFORM/z.so",
    "an entry of 8 KiB": lambda cwd: "d/" + "x" * 8192 + ".so",
    "bytes not UTF-8": lambda cwd: os.fsdecode(b"lib/\xff\xfe.so"),
    "colons and spaces only": lambda cwd: " : :: ",
    "3,000 relative entries naming nothing": lambda cwd: " ".join(f"x{n}/lib/libnothing.so" for n in range(3000)),
}


def relative_folders_case(count: int) -> Callable[[Path], None]:
    """COUNT relative LD_LIBRARY_PATH entries that name no folder (a program starts with them)."""
    def setup(tmp: Path) -> tuple[Machine, Callable[[dict], None] | None]:
        machine = plain_machine(tmp)
        machine.env["LD_LIBRARY_PATH"] += ":" + ":".join(f"rel{n}/lib" for n in range(count))
        return machine, None
    return check_case(setup)


def long_folder_case(tmp: Path) -> None:
    """A working folder 3,900 characters deep, relative LD_PRELOAD and LD_LIBRARY_PATH entries: made absolute, they
    pass PATH_MAX (4,096); 8,000 relative LD_LIBRARY_PATH entries; a PYTHONPATH of 8,000 entries."""
    machine = plain_machine(tmp)
    folder = machine.cwd
    while len(str(folder)) < 3900:
        folder = folder / ("d" * 200)
    folder.mkdir(parents=True)
    machine.env["LD_PRELOAD"] = "lib/" + "x" * 200 + ".so"
    machine.env["LD_LIBRARY_PATH"] += ":" + ":".join(f"rel{n}/lib" for n in range(8000))
    env = {**machine.env, "PYTHONPATH": package() + ":" + ":".join(f"p{n}" for n in range(8000))}
    held(run([sys.executable, "-P", "-m", "cudnn_doctor", "check", "--json"], env, folder), True)


# --- 5. the working folder ------------------------------------------------------------------------------------------

def _fifo(path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    os.mkfifo(path)


WORKING_FOLDERS: dict[str, Callable[[Path], None]] = {
    "torch.py a FIFO": lambda cwd: _fifo(cwd / "torch.py"),
    "typing.py a FIFO": lambda cwd: _fifo(cwd / "typing.py"),
    "numpy/__init__.py a FIFO": lambda cwd: _fifo(cwd / "numpy" / "__init__.py"),
    "torch/__init__.py a link loop": lambda cwd: ((cwd / "torch").mkdir(),
                                                  (cwd / "torch" / "__init__.py").symlink_to("__init__.py")),
    "typing.py a link to /dev/zero": lambda cwd: (cwd / "typing.py").symlink_to("/dev/zero"),
    "json.py a link to /dev/urandom": lambda cwd: (cwd / "json.py").symlink_to("/dev/urandom"),
    "20,000 .py files": lambda cwd: [(cwd / f"m{n}.py").write_text("") for n in range(20000)],
    "a module named with bytes not UTF-8": lambda cwd: Path(os.fsdecode(bytes(cwd) + b"/\xff\xfe.py")).write_text(""),
    "a module named with a newline": lambda cwd: (cwd / "typing\n.py").write_text(""),
    "an nvidia folder that is a link loop": lambda cwd: (cwd / "nvidia").symlink_to("nvidia"),
    "nvidia/cu13/lib a link to /": lambda cwd: ((cwd / "nvidia" / "cu13").mkdir(parents=True),
                                                 (cwd / "nvidia" / "cu13" / "lib").symlink_to("/")),
    "nvidia/cu13/lib/libcublasLt.so.13 a FIFO": lambda cwd: _fifo(cwd / "nvidia" / "cu13" / "lib" /
                                                                  "libcublasLt.so.13"),
}


def working_folder_case(make: Callable[[Path], None], deep: bool = False) -> Callable[[Path], None]:
    def setup(tmp: Path) -> tuple[Machine, Callable[[dict], None] | None]:
        machine, site = torch_machine(tmp)
        machine.cwd = tmp / "work"
        machine.cwd.mkdir()
        make(machine.cwd)
        return machine, None
    return check_case(setup, *(["--deep"] if deep else []), ceiling=120 if deep else CEILING_S)


def deleted_folder_case(when: str, deep: bool = False) -> Callable[[Path], None]:
    """The doctor's working folder removed before it starts (a shell left in a deleted folder) or while it runs."""
    def case(tmp: Path) -> None:
        machine, site = torch_machine(tmp)
        cut_in_half(site / LT)  # so that the loading child runs, from a working folder that is gone
        work = tmp / "work"
        work.mkdir()
        (work / "nvidia").mkdir()
        machine.env["LD_LIBRARY_PATH"] += ":relative/lib:"
        if when == "before":
            # a shell whose folder was removed: started there, the doctor finds no working folder at all
            shell = f"cd {work} && rmdir {work}/nvidia {work} && exec \"$@\""
            done = doctor(["check", "--json", *(["--deep"] if deep else [])], machine.env, tmp, 120,
                          prefix=["sh", "-c", shell, "sh"])
        else:
            done = doctor(["check", "--json", *(["--deep"] if deep else [])], machine.env, work, 120,
                          during=lambda: (time.sleep(0.3), shutil.rmtree(work, ignore_errors=True)))
        held(done, True)
    return case


NO_DAC = ["setpriv", "--inh-caps=-dac_override,-dac_read_search", "--bounding-set=-dac_override,-dac_read_search"]


def unreadable_case(where: str) -> Callable[[Path], None]:
    """WHERE made mode 000, the doctor run as root without the capabilities that pass over a file's mode (as any
    user meets a folder of another's): the loading child runs (a wheel's copy cut short)."""
    def case(tmp: Path) -> None:
        machine, site = torch_machine(tmp)
        cut_in_half(site / LT)
        cwd = tmp / "work"
        cwd.mkdir()
        (cwd / "nvidia").mkdir()
        target = {"the working folder": cwd, "the wheel's RECORD": site / CUBLAS_RECORD,
                  "the wheel's lib folder": site / "nvidia" / "cu13" / "lib",
                  "torch/__init__.py": site / "torch" / "__init__.py", "torch/version.py": site / "torch" / "version.py",
                  "site-packages": site}[where]
        os.chmod(target, 0)
        try:
            done = doctor(["check", "--json"], machine.env, cwd, prefix=NO_DAC)
        finally:
            os.chmod(target, 0o755)
        held(done, True)
    return case


UNREADABLE = ("the working folder", "the wheel's RECORD", "the wheel's lib folder", "torch/__init__.py",
              "torch/version.py", "site-packages")


# --- 6. bisect: the search over every variable --------------------------------------------------------------------

FAILING_TORCH_TAIL = """
def randn(*shape, device=None):
    import os
    if any(name.startswith("APP") and "BAD" in value for name, value in os.environ.items()):
        raise RuntimeError("CUDA error: an illegal memory access was encountered")
    return _randn(*shape, device=device)
"""


def bisect_machine(tmp: Path, variables: dict[str, str]) -> Machine:
    from tests.test_loading import LOADING_TORCH, torch_with_real_cudnn

    machine = Machine(tmp)
    site = torch_with_real_cudnn(machine, tmp)
    (site / "torch" / "__init__.py").write_text(LOADING_TORCH.replace("def randn(", "def _randn(") +
                                                FAILING_TORCH_TAIL)
    machine.env.update(variables)
    # the environment's python3 a program of its own, not sh (dash leaves out variables no shell can name)
    wrapper = tmp / "venv" / "bin" / "python3"
    wrapper.write_text(f"#!{sys.executable} -S\nimport os, sys\nos.environ['PYTHONPATH'] = {str(site)!r}\n"
                       f"os.execv({sys.executable!r}, [{sys.executable!r}, *sys.argv[1:]])\n")
    return machine


def bisect_case(variables: Callable[[], dict[str, str]], culprit: str | None) -> Callable[[Path], None]:
    """--deep on a torch that fails while a variable APP*=...BAD... is set among VARIABLES; then fix --shell bash:
    its lines source cleanly in bash and run nothing a value holds."""
    def case(tmp: Path) -> None:
        machine = bisect_machine(tmp, variables())
        report = held(doctor(["check", "--json", "--deep"], machine.env, machine.cwd, 150), True, (0, 1))
        cure = (report.get("process") or {}).get("cured_by") or {}
        if culprit is not None and culprit not in json.dumps(cure):
            raise Broken(f"the search did not find {culprit[:40]!r}: {json.dumps(cure)[:200]}")
        done = doctor(["fix", "--shell", "bash"], machine.env, machine.cwd, 150)
        held(done, False, (0, 1))
        lines = source_lines(done.stdout.decode("utf-8", "surrogateescape"))
        script = tmp / "fix.bash"
        script.write_bytes("\n".join(lines).encode("utf-8", "surrogateescape") + b"\n")
        kept = {name: value for name, value in variables().items() if culprit is None or name == culprit}
        sourced = subprocess.run(["bash", "--norc", "--noprofile", "-c", f"source {script}; echo SOURCED; env"],
                                 cwd=tmp, capture_output=True, timeout=30, env={"PATH": "/usr/bin:/bin", **kept})
        if not sourced.stdout.startswith(b"SOURCED\n") or sourced.stderr:
            raise Broken(f"fix's bash lines do not source cleanly: {sourced.stderr[-200:]!r} {lines[:3]}")
        if culprit is not None and any(culprit in line for line in lines if not line.startswith("#")) and \
                f"\n{culprit}=".encode() in sourced.stdout:
            raise Broken(f"fix's bash line for {culprit} leaves it set: {[line for line in lines if culprit in line][:1]}")
        if (tmp / "P").exists() or (machine.cwd / "P").exists():
            raise Broken("a command in a variable's value ran")
    return case


BISECTS: dict[str, tuple[Callable[[], dict[str, str]], str | None]] = {
    "5,000 variables, one the culprit": (lambda: {**{f"V{n:04d}": "x" * 64 for n in range(5000)},
                                                  "APP_MODE": "BAD"}, "APP_MODE"),
    "a 120 KB value beside the culprit": (lambda: {"BIG": "y" * 120000, "APP_MODE": "BAD"}, "APP_MODE"),
    "the culprit's value 120 KB": (lambda: {"APP_MODE": "BAD" + "z" * 120000}, "APP_MODE"),
    "values with newlines and shell syntax": (lambda: {"NL": "a\nb\rc", "SUB": "$(touch P)`touch P`", "Q": "'\"",
                                                       "APP_MODE": "BAD\n$(touch P)"}, "APP_MODE"),
    "a culprit whose name no shell can unset": (lambda: {"APP.MODE": "BAD"}, "APP.MODE"),
    "a culprit named with a dash": (lambda: {"APP-MODE": "BAD"}, "APP-MODE"),
    "a culprit named with bytes not UTF-8": (lambda: {os.fsdecode(b"APP\xff"): "BAD"}, None),
}


# --- 7. NVML's release from the file the loader maps --------------------------------------------------------------

def nvml_case(spoil: str) -> Callable[[Path], None]:
    """The driver's own NVML answering late (its release in the name of the file a link chain leads to), with the
    name or the kernel module's version file spoiled: no internal error, no hang; the driver's own file (release
    equal to the kernel module's) is never 'another NVML'."""
    def setup(tmp: Path) -> tuple[Machine, Callable[[dict], None] | None]:
        from tests.fakes.build import fake_libcuda, fake_nvml

        machine = Machine(tmp)
        kernel = "580.159.04"
        version = machine.root / "proc" / "driver" / "nvidia" / "version"
        version.parent.mkdir(parents=True)
        version.write_text(f"NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  {kernel}  Release Build\n")
        driver = tmp / "driver"
        built = fake_nvml(driver, driver=kernel, cuda=13000, init_sleep_ms=120000)
        name = {"a newline in its name": f"libnvidia-ml.so.{kernel}\n",
                "other digits in its name": "libnvidia-ml.so.\uff15\uff18\uff10.159.04"}.get(spoil,
                                                                                       f"libnvidia-ml.so.{kernel}")
        built.rename(driver / name)
        if spoil == "a chain of 30 links":
            previous = name
            for n in range(30):
                (driver / f"hop{n}").symlink_to(previous)
                previous = f"hop{n}"
            built.symlink_to(previous)
        else:
            built.symlink_to(name)
        fake_libcuda(driver, driver_cuda=13000, devices=1, file_name=f"libcuda.so.{kernel}")
        machine.add_library_path(driver)
        machine.env["CUDNN_DOCTOR_PROBE_TIMEOUT"] = "3"
        if spoil == "the kernel's version file a FIFO":
            version.unlink()
            os.mkfifo(version)
        elif spoil == "the kernel's version file 64 MB":
            version.write_bytes(b"NVRM version: NVIDIA UNIX " + b"x" * (64 << 20))
        elif spoil == "the kernel's version file not UTF-8":
            version.write_bytes(b"NVRM version: \xff\xfe  " + kernel.encode() + b"\x00  Release Build\n")

        def judge(report: dict) -> None:
            if spoil == "a chain of 30 links" and any(f.get("code") == "CD118" for f in report["findings"]):
                raise Broken("the driver's own NVML, through links, called another NVML")
        return machine, judge
    return check_case(setup)


NVML_SPOILS = ("a chain of 30 links", "a newline in its name", "other digits in its name",
               "the kernel's version file a FIFO", "the kernel's version file 64 MB",
               "the kernel's version file not UTF-8")


# --- 8. explain by resemblance ---------------------------------------------------------------------------------------

def _words(n: int) -> str:
    rng = random.Random(f"{SEED}-words")
    return " ".join("".join(rng.choice("abcdefghijklmnopqrstuvwxyz_") for _ in range(rng.randrange(3, 12)))
                    for _ in range(n))


MESSAGES: dict[str, Callable[[], bytes]] = {
    "1 MB of words": lambda: (_words(20000) + " ") .encode() * 8,
    "100,000 lines": lambda: b"RuntimeError: CUDA error\n" * 100000,
    "one token of 1 MB": lambda: b"cudnn" + b"x" * (1 << 20),
    "50,000 distinct words": lambda: _words(50000).encode(),
    "bytes not UTF-8 and NULs": lambda: bytes(random.Random(SEED).randrange(256) for _ in range(200000)),
    "a traceback repeated 5,000 times": lambda: (
        b"Traceback (most recent call last):\n  File \"x.py\", line 1, in <module>\n"
        b"RuntimeError: cuDNN error: CUDNN_STATUS_NOT_INITIALIZED\n") * 5000,
    "terminal escapes and C1 controls": lambda: "\x1b]0;t\x07\x1b[2J\u009b31m\u0085 CUDNN_STATUS_BAD_PARAM".encode()
    * 20000,
}


def explain_case(message: Callable[[], bytes], how: str) -> Callable[[Path], None]:
    def case(tmp: Path) -> None:
        machine = Machine(tmp)
        text = message()
        if how == "stdin":
            done = doctor(["explain", "-", "--json", "--offline-only", "--by-resemblance"], machine.env, machine.cwd, 60, stdin=text)
        elif how == "argument":
            if b"\x00" in text or len(text) > 100000:  # one argument: no NUL, under the kernel's 128 KiB a string
                text = text.replace(b"\x00", b" ")[:100000]
            done = doctor(["explain", os.fsdecode(text), "--json", "--offline-only", "--by-resemblance"], machine.env, machine.cwd, 60)
        else:  # a file holding it
            path = tmp / "log.txt"
            path.write_bytes(text)
            done = doctor(["explain", "--json", "--offline-only", "--by-resemblance", "--from-file", str(path)], machine.env, machine.cwd, 60)
        held(done, True, (0, 1, 2))
    return case


# --- 9. limits on the doctor itself -----------------------------------------------------------------------------------

def limits_case(limit: list[str]) -> Callable[[Path], None]:
    """check --json on a machine whose loading child runs (a wheel's copy cut short), under LIMIT (prlimit's
    options)."""
    def case(tmp: Path) -> None:
        machine, site = torch_machine(tmp)
        cut_in_half(site / LT)
        prefix = ["prlimit", *limit]
        done = doctor(["check", "--json"], machine.env, machine.cwd, 90, prefix=prefix)
        if done.returncode == 74 and "--fsize=4096" in limit and b"File too large" in done.stderr:
            return  # its standard output a file it may not grow: README's exit 74, one line saying so
        report = held(done, True, (0, 1, 2))
        if done.returncode == 2 and "limit" not in json.dumps(report).lower():
            raise Broken(f"exit 2 without naming a limit: {json.dumps(report)[:200]}")
    return case


LIMITS: dict[str, list[str]] = {
    "12 descriptors": ["--nofile=12"],
    "20 descriptors": ["--nofile=20"],
    "40 descriptors": ["--nofile=40"],
    "64 MB of address space": ["--as=67108864"],
    "160 MB of address space": ["--as=167772160"],
    "400 MB of address space": ["--as=419430400"],
    "a stack of 64 KiB": ["--stack=65536"],
    "a data segment of 100 MB": ["--data=104857600"],
    "1 s of CPU": ["--cpu=1"],
    "files of 4 KiB at most (its output too: exit 74, documented)": ["--fsize=4096"],
}


# --- 10. compat data added: temporary folders and JAX_PLATFORMS -------------------------------------------------------

def tmp_case(variable: str, value: Callable[[Path], str]) -> Callable[[Path], None]:
    def setup(tmp: Path) -> tuple[Machine, Callable[[dict], None] | None]:
        from tests.test_cuda_libraries import jax_cu13

        machine = Machine(tmp)
        jax_cu13(machine, tmp)
        machine.env[variable] = value(tmp)
        return machine, None
    return check_case(setup)


def _a_fifo(tmp: Path) -> str:
    os.mkfifo(tmp / "tmp-fifo")
    return str(tmp / "tmp-fifo")


def _a_loop(tmp: Path) -> str:
    (tmp / "tmp-loop").symlink_to("tmp-loop")
    return str(tmp / "tmp-loop")


TMP_VALUES: dict[str, Callable[[Path], str]] = {
    "a FIFO": _a_fifo,
    "a link loop": _a_loop,
    "a 120 KB path": lambda tmp: "/" + "t" * 120000,
    "a path with a newline": lambda tmp: str(tmp) + "/a\nb",
    "bytes not UTF-8": lambda tmp: os.fsdecode(bytes(tmp) + b"/\xff"),
    "/dev/null": lambda tmp: "/dev/null",
    "a relative folder": lambda tmp: "relative/tmp",
}


def cases() -> dict[str, tuple[str, Callable[[Path], None]]]:
    found: dict[str, tuple[str, Callable[[Path], None]]] = {}
    for name, spoil in RECORD_SPOILS.items():
        found[f"RECORD: {name}"] = ("wheel RECORD", record_case(spoil))
    for name, (spoil, whole) in WHEEL_SPOILS.items():
        found[f"wheel: {name}"] = ("wheel RECORD", record_case(spoil, whole))
    for name, code in HOSTILE_PRELOADS.items():
        found[f"torch's preloading code {name}"] = ("loading child", loading_child_case(code))
    for name, args in JOB_ARGS.items():
        found[f"_job_child.py: {name}"] = ("job child", job_child_case(args))
    for name, spoil in MODULE_FILES.items():
        found[f"module file: {name}"] = ("loading child", module_file_case(spoil))
    for name, make in JAX_MODULES.items():
        found[f"JAX's nvidia/cu13/__init__.py {name}"] = ("loading child", jax_module_case(make))
    found["the environment in a folder named with a newline, a tab, an escape and $(...)"] = (
        "loading child", hostile_site_case)
    for name, version in SHELL_NAMES.items():
        found[f"a wheel's dist-info named with {name}"] = ("loading child", dist_info_case(version))
    found["working folder 3,900 characters deep, 8,000 relative entries"] = ("preload paths", long_folder_case)
    for where in UNREADABLE:
        found[f"unreadable: {where}"] = ("working folder", unreadable_case(where))
    for seed in range(6):
        after = random.Random(f"{SEED}-child-{seed}").randrange(200, 400000)
        found[f"every job child killed {after} us after it loads"] = (
            "job child", job_children_case({"R22_KILL_US": str(after)}))
    found["every job child printing 2 MiB of garbage at load and at exit"] = (
        "job child", job_children_case({"R22_GARBAGE": "1"}))
    for where in ("the working folder into its nvidia/cu13/lib", "site-packages into a wheel's lib folder"):
        found[f"a bind mount of {where}"] = ("working folder", mount_case(where))
    for name, value in PRELOADS.items():
        found[f"LD_PRELOAD: {name}"] = ("preload paths", preload_case(value))
    for count in (2000, 6000):
        found[f"LD_LIBRARY_PATH: {count:,} relative entries naming nothing"] = (
            "preload paths", relative_folders_case(count))
    found["LD_PRELOAD relative, the working folder deleted"] = (
        "preload paths", preload_case(lambda cwd: "lib/libx.so ./y.so", deleted=True))
    for name, make in WORKING_FOLDERS.items():
        found[f"working folder: {name}"] = ("working folder", working_folder_case(make))
    for name in ("typing.py a FIFO", "torch/__init__.py a link loop", "nvidia/cu13/lib/libcublasLt.so.13 a FIFO"):
        found[f"working folder --deep: {name}"] = ("working folder", working_folder_case(WORKING_FOLDERS[name], True))
    for when in ("before", "while"):
        found[f"working folder deleted {when} it runs"] = ("working folder", deleted_folder_case(when))
    found["working folder deleted while --deep runs"] = ("working folder", deleted_folder_case("while", True))
    for name, (variables, culprit) in BISECTS.items():
        found[f"bisect: {name}"] = ("bisect", bisect_case(variables, culprit))
    for spoil in NVML_SPOILS:
        found[f"NVML release: {spoil}"] = ("NVML release", nvml_case(spoil))
    for name, message in MESSAGES.items():
        for how in ("stdin", "argument", "file"):
            found[f"explain {how}: {name}"] = ("explain", explain_case(message, how))
    for name, limit in LIMITS.items():
        found[f"limits: {name}"] = ("limits", limits_case(limit))
    for variable in ("TMPDIR", "TMP", "TEST_TMPDIR"):
        for name, value in TMP_VALUES.items():
            found[f"{variable}: {name}"] = ("compat data", tmp_case(variable, value))
    for name, value in {"120 KB": "cuda," * 24000, "a newline": "cuda\ncpu", "bytes not UTF-8":
                        os.fsdecode(b"cu\xffda"), "only commas": ",,,"}.items():
        found[f"JAX_PLATFORMS: {name}"] = ("compat data", tmp_case("JAX_PLATFORMS", lambda tmp, v=value: v))
    return found


def run_cases(chosen: dict[str, tuple[str, Callable[[Path], None]]], out=sys.stdout) -> dict[str, list]:
    tally: dict[str, list] = {}
    for name, (group, case) in chosen.items():
        began = time.monotonic()
        with tempfile.TemporaryDirectory() as tmp:
            try:
                case(Path(tmp))
                said = None
            except Broken as error:
                said = str(error)
            except Exception as error:  # a case that cannot even be judged is broken
                said = f"{type(error).__name__}: {str(error)[:160]}"
            finally:
                for top, dirs, _names in os.walk(tmp):  # a FIFO or a folder made unreadable: removable again
                    for d in dirs:
                        try:
                            os.chmod(os.path.join(top, d), 0o755)
                        except OSError:
                            pass
        counts = tally.setdefault(group, [0, 0, []])
        counts[1] += 1
        if said:
            counts[2].append(name)
            print(f"BROKEN {name}: {said} ({time.monotonic() - began:.1f} s)", file=out, flush=True)
        else:
            counts[0] += 1
    return tally


def main(table: Callable[[], dict[str, tuple[str, Callable[[Path], None]]]] | None = None, doc: str | None = None) -> int:
    """The command line of this red-team, or of a later one that runs its TABLE of cases through run_cases (DOC:
    its own description)."""
    global PACKAGE
    parser = argparse.ArgumentParser(description=(doc or __doc__ or "").splitlines()[0])
    parser.add_argument("--package", type=Path, help="the checkout whose cudnn_doctor is judged")
    parser.add_argument("--only", help="run only the cases whose name holds this")
    parser.add_argument("--list", action="store_true", help="list the cases")
    options = parser.parse_args()
    PACKAGE = options.package.resolve() if options.package else None
    chosen = {name: case for name, case in (table or cases)().items() if not options.only or options.only in name}
    if options.list:
        for name, (group, _) in chosen.items():
            print(f"{group}: {name}")
        return 0
    started = time.monotonic()
    tally = run_cases(chosen)
    for group, (good, total, _) in tally.items():
        print(f"{group}: {good}/{total} held")
    broken = sum(total - good for good, total, _ in tally.values())
    print(f"{len(chosen)} cases, {broken} broken, {time.monotonic() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
