"""Round twenty's red-team (issue 43, helper r24) as a figure: the doctor's own start in a hostile environment, and
the surfaces added in session fifteen (`git log --since "2026-12-07 17:00"` on main), each broken on purpose as a
user's machine or a hostile file would:

1. Python's variables: every PYTHON* variable Python reads before a program's first line, with values it refuses
   (PYTHONHOME wrong, PYTHONIOENCODING unknown, PYTHONUTF8=2, PYTHONMALLOC unknown, PYTHONINTMAXSTRDIGITS=1,
   PYTHONHASHSEED a word) and values it takes (PYTHONWARNINGS=error, PYTHONINSPECT, PYTHONDEVMODE, PYTHONMALLOC=debug,
   PYTHONSTARTUP a FIFO), PYTHONPATH folders that hide the standard library's modules (json, typing, subprocess, or
   encodings itself);
2. start-up hooks: a sitecustomize or .pth on PYTHONPATH that raises, prints a line or 4 MiB, sleeps, exits, raises
   KeyboardInterrupt, closes standard output, forks a daemon holding it;
3. loader variables: LD_PRELOAD of a library that cannot be loaded (missing, not ELF, a folder), LD_TRACE_LOADED_OBJECTS,
   LD_BIND_NOW, LD_DEBUG to a file, to standard error, LD_DEBUG=help;
4. standard streams: standard output closed, /dev/full, a pipe closed early; standard error closed or /dev/full;
   standard input closed; all three closed;
5. working folder: inside an installed package (site-packages/torch), deleted, unreadable, named with escapes;
6. locale: LANG and LC_ALL naming a missing locale, C, POSIX without coercion, Turkish, a newline;
7. first context: CUDA's refused first context made again among 10,000 variables, its child killed by SIGKILL,
   SIGTERM, SIGABRT or SIGBUS at seeded instants;
8. nvlink: each nvlink XLA would find asked --version, hanging, forking a daemon that keeps the pipe, printing 64 MB or
   a version of 10^5 digits or escapes, dying by a signal, a FIFO, a folder, a link loop, 200 of them;
9. gzip layers: an image layer of 10^4 gzip members, of 10^5 members of zero bytes, a gzip bomb, garbage after a
   member, a member cut short after thousands;
10. install state: the last install's record, and the journal an install killed in its window leaves, cut short at
    seeded offsets (uninstall, install over it);
11. preload start cost: a preload no row knows whose constructor, in the bare start only, hangs, forks a daemon
    holding its output, prints 4 MiB or a forged answer, closes every descriptor, dies by a signal; 1,000 entries;
    LD_AUDIT naming a missing library;
12. unknown settings: 5,000 CUDNN_* variables no row knows, names with escapes and bytes not UTF-8; XLA file flags
    naming a FIFO, /dev/zero, a 120 KB path, 2,000 regular files.

A case holds where each command ends within its ceiling (60 s unless said) and 1 GiB of resident memory, with no
internal error (exit 3, a traceback of the doctor's), an exit code its contract gives, one JSON object (its exit_code
the process's) where --json, no byte that drives a terminal, nothing of its children left running after it, and the
case's own judge: where no Python program can start at all (the bare interpreter refuses: the doctor's process
itself cannot), README.md must say so with the one line to run instead, `env -u VAR cudnn-doctor check`, and that
line must answer; a setting every program would meet is said (a finding or one line).

Usage: python benchmarks/redteam_r24.py [--package DIR] [--only TEXT] [--list]
  Prints each broken case, then a line per class `CLASS: H/T held` and `N cases, B broken, T s`.
"""

from __future__ import annotations

import gzip
import json
import os
import random
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import redteam_r22 as r22  # noqa: E402
import redteam_r23 as r23  # noqa: E402
from redteam_r22 import Broken, doctor, held  # noqa: E402
from redteam_r23 import check_case, gpu_machine, no_bug_finding, no_child_left, no_driving_bytes  # noqa: E402

from tests.conftest import Machine  # noqa: E402

SEED = 24
CEILING_S = 60.0
Case = Callable[[Path], None]


def readme() -> str:
    return (Path(r22.package()) / "README.md").read_text(encoding="utf-8")


# --- whether any Python program starts in an environment ---------------------------------------------------------

def program_starts(env: dict[str, str], cwd: Path, clean_output: bool = False) -> bool:
    """A bare program of the doctor's Python (as a program is started: site and every variable read) reaches its
    first line and ends cleanly in ENV (its output in files: a daemon a hook left holding a pipe is not waited for);
    where CLEAN_OUTPUT, its standard output is also only what it wrote (the loader wrote nothing there)."""
    import tempfile

    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        try:
            code = subprocess.run([sys.executable, "-c", "import os\ntry:\n    os.write(1, b'R24-STARTED')\n"
                                   "except OSError:\n    pass\n"], env=env, cwd=cwd, stdout=out, stderr=err,
                                  timeout=20, stdin=subprocess.DEVNULL).returncode
        except subprocess.TimeoutExpired:
            return False
        out.seek(0)
        err.seek(0)
        said, complained = out.read(), err.read()
    if code != 0 or b"Fatal Python error" in complained:  # a hook's traceback Python goes on after is no stop
        return False
    return said == b"R24-STARTED" if clean_output else True


def no_start_said(variable: str, machine: Machine, cwd: Path) -> None:
    """Where no Python program starts: README says what to run instead, and that line answers."""
    line = f"env -u {variable} cudnn-doctor check"
    if line not in readme():
        raise Broken(f"no Python starts with {variable} set, and README does not give `{line}`")
    env = {k: v for k, v in machine.env.items() if k != variable}
    if variable == "PYTHONPATH":
        env["PYTHONPATH"] = r22.package()
        done = r22.run([sys.executable, "-P", "-m", "cudnn_doctor", "check", "--json"], env, cwd)
    else:
        done = doctor(["check", "--json"], env, cwd)
    held(done, True)


def start_case(setup: Callable[[Path], tuple[Machine, dict[str, str]]], variable: str,
               judge: Callable[[dict, r22.Done], None] | None = None, *, text: bool = True,
               prefix_path: bool = False, clean_output: bool = False, codes: tuple[int, ...] = (0, 1, 2),
               own_daemon: bool = False) -> Case:
    """The doctor started with the variables SETUP gives (PYTHONPATH's folders before the package's, where
    PREFIX_PATH). Where no program starts there, README's line for VARIABLE; else check as every case, JUDGE on
    the report and the process's output."""
    def case(tmp: Path) -> None:
        machine, variables = setup(tmp)
        env = dict(machine.env)
        env.update(variables)
        probe_env = dict(env)
        if not program_starts(probe_env, machine.cwd, clean_output):
            no_start_said(variable, machine, machine.cwd)
            return
        env["PYTHONPATH"] = (f"{variables['PYTHONPATH']}{os.pathsep}" if prefix_path else "") + r22.package()
        argv = [sys.executable, "-P", "-m", "cudnn_doctor", "check", "--json"]
        done = _without_site_words(r22.run(argv, env, machine.cwd, CEILING_S))
        if done.rss_kib > r22.CEILING_RSS_KIB:
            raise Broken(f"{done.rss_kib >> 10} MiB resident")
        if done.returncode == 74 and 74 in codes:  # its output closed under it: one line says so
            if b"standard output" not in done.stderr:
                raise Broken(f"exit 74 without saying standard output: {done.stderr[-200:]!r}")
            no_child_left(str(tmp))
            return
        report = held(_last_json(done), True, codes)
        no_bug_finding(done, "check --json")
        if judge is not None:
            judge(report, done)
        if text:
            plain = _without_site_words(r22.run(argv[:-1], env, machine.cwd, CEILING_S))
            held(plain, False, codes)
        if own_daemon:  # the user's hook's own daemon, forked in every Python program: not the doctor's to end
            no_child_left_but(str(tmp))
        else:
            no_child_left(str(tmp))
    return case


def _without_site_words(done: r22.Done) -> r22.Done:
    """DONE with what Python's site printed of a .pth file's failure taken off its standard error (its traceback ends
    'Remainder of file ignored'): every program prints it before its first line; it is no traceback of the doctor's."""
    if b"Remainder of file ignored" not in done.stderr:
        return done
    return r22.Done(done.returncode, done.stdout, done.stderr.rsplit(b"Remainder of file ignored", 1)[1], done.rss_kib,
                    done.seconds)


def no_child_left_but(marker: str) -> None:
    """Every process holding MARKER ended (those a user's hook forked in every program's own process, the doctor's
    included, are killed here, not judged)."""
    try:
        no_child_left(marker)
    except Broken:
        pass


def _last_json(done: r22.Done) -> r22.Done:
    """DONE as judged where a user's start-up hook printed before the doctor's first line: its JSON object is what
    follows the first line start from which the rest parses."""
    data = done.stdout
    starts = [0] + [at + 1 for at in range(len(data)) if data[at:at + 2] == b"\n{"] if b"\n{" in data else [0]
    for start in starts:
        try:
            json.loads(data[start:])
        except ValueError:
            continue
        return r22.Done(done.returncode, data[start:], done.stderr, done.rss_kib, done.seconds)
    return done


def plain(tmp: Path) -> Machine:
    return r22.plain_machine(tmp)


def torch_machine(tmp: Path) -> Machine:
    machine = r23.torch_machine(tmp)
    machine.cwd = tmp / "work"
    machine.cwd.mkdir(exist_ok=True)
    return machine


# --- 1. Python's variables ---------------------------------------------------------------------------------------

def _fifo_file(name: str) -> Callable[[Path], str]:
    def make(tmp: Path) -> str:
        os.mkfifo(tmp / name)
        return str(tmp / name)
    return make


def _file_of(name: str, text: str) -> Callable[[Path], str]:
    def make(tmp: Path) -> str:
        (tmp / name).write_text(text)
        return str(tmp / name)
    return make


PYTHON_VALUES: dict[str, tuple[str, str | Callable[[Path], str]]] = {
    "PYTHONHOME a missing folder": ("PYTHONHOME", "/nonexistent/python-home"),
    "PYTHONHOME an empty folder": ("PYTHONHOME", lambda tmp: (os.makedirs(tmp / "home-empty"), str(tmp / "home-empty"))[1]),
    "PYTHONIOENCODING unknown": ("PYTHONIOENCODING", "bogus"),
    "PYTHONIOENCODING utf-16": ("PYTHONIOENCODING", "utf-16"),
    "PYTHONIOENCODING ascii:strict": ("PYTHONIOENCODING", "ascii:strict"),
    "PYTHONIOENCODING :bogus-handler": ("PYTHONIOENCODING", ":bogus"),
    "PYTHONUTF8=2": ("PYTHONUTF8", "2"),
    "PYTHONUTF8=0": ("PYTHONUTF8", "0"),
    "PYTHONWARNINGS=error": ("PYTHONWARNINGS", "error"),
    "PYTHONWARNINGS not a filter": ("PYTHONWARNINGS", "error:::x:y:z,\x1b[2J"),
    "PYTHONINSPECT=1": ("PYTHONINSPECT", "1"),
    "PYTHONDEVMODE=1": ("PYTHONDEVMODE", "1"),
    "PYTHONMALLOC=debug": ("PYTHONMALLOC", "debug"),
    "PYTHONMALLOC unknown": ("PYTHONMALLOC", "bogus"),
    "PYTHONINTMAXSTRDIGITS=1": ("PYTHONINTMAXSTRDIGITS", "1"),
    "PYTHONINTMAXSTRDIGITS=640": ("PYTHONINTMAXSTRDIGITS", "640"),
    "PYTHONINTMAXSTRDIGITS of 30 digits": ("PYTHONINTMAXSTRDIGITS", "9" * 30),
    "PYTHONHASHSEED a word": ("PYTHONHASHSEED", "bogus"),
    "PYTHONHASHSEED=0": ("PYTHONHASHSEED", "0"),
    "PYTHONSTARTUP a FIFO": ("PYTHONSTARTUP", _fifo_file("startup-fifo")),
    "PYTHONSTARTUP that raises": ("PYTHONSTARTUP", _file_of("startup.py", "raise SystemExit(7)\n")),
    "PYTHONPLATLIBDIR missing": ("PYTHONPLATLIBDIR", "no-such-lib"),
}


def python_value_case(variable: str, value: str | Callable[[Path], str]) -> Case:
    def setup(tmp: Path) -> tuple[Machine, dict[str, str]]:
        machine = plain(tmp)
        return machine, {variable: value(tmp) if callable(value) else value}
    return start_case(setup, variable)


STDLIB_SHADOWS: dict[str, tuple[str, ...]] = {
    "json, typing, subprocess, dataclasses, argparse": ("json", "typing", "subprocess", "dataclasses", "argparse"),
    "enum, re, signal, threading": ("enum", "re", "signal", "threading"),
    "encodings (a package)": ("encodings/__init__",),
    "io, abc, codecs": ("io", "abc", "codecs"),
    "ctypes, struct, zlib": ("ctypes/__init__", "struct", "zlib"),
}


def shadow_named(folder: str, modules: tuple[str, ...], cwd: Path) -> Callable[[dict, r22.Done], None]:
    """CD419 names FOLDER where a program's import of MODULES gets the user's files (a module Python loads before
    PYTHONPATH applies, io or abc, is never shadowed: nothing to say then)."""
    def judge(report: dict, done: r22.Done) -> None:
        names = ", ".join(module.split("/")[0] for module in modules)
        env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": folder}
        shadowed = subprocess.run([sys.executable, "-c", f"import {names}"], env=env, cwd=cwd, capture_output=True,
                                  timeout=20).returncode != 0
        said = [f for f in report.get("findings", []) if f.get("code") == "CD419" and folder in json.dumps(f)]
        if shadowed and not said:
            raise Broken(f"a PYTHONPATH folder hiding the standard library's modules named by no CD419 "
                         f"({[f.get('code') for f in report.get('findings', [])]})")
    return judge


def stdlib_shadow_case(modules: tuple[str, ...]) -> Case:
    def setup(tmp: Path) -> tuple[Machine, dict[str, str]]:
        machine = torch_machine(tmp)
        folder = tmp / "shadows"
        for module in modules:
            path = folder / f"{module}.py"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(f"raise SystemExit('the user\\'s {module}')\n")
        return machine, {"PYTHONPATH": str(folder)}

    def judged(tmp: Path) -> None:
        start_case(setup, "PYTHONPATH", shadow_named(str(tmp / "shadows"), modules, tmp), prefix_path=True)(tmp)
    return judged


# --- 2. start-up hooks -------------------------------------------------------------------------------------------

HOOKS: dict[str, str] = {
    "raises": "raise RuntimeError('the hook failed')\n",
    "prints a line": "print('hello from a start-up hook')\n",
    "prints 4 MiB": "import sys\nsys.stdout.write('x' * (4 << 20))\n",
    "prints escapes and bytes not UTF-8": "import sys\nsys.stdout.buffer.write(b'\\x1b[2J\\x1b]0;t\\x07\\xff\\xfe')\n",
    "sleeps 3 s": "import time\ntime.sleep(3)\n",
    "exits 9": "raise SystemExit(9)\n",
    "raises KeyboardInterrupt": "raise KeyboardInterrupt\n",
    "closes standard output": "import os\nos.close(1)\n",
    "forks a daemon holding standard output": (
        "import os\nif os.fork() == 0:\n    os.setsid()\n    import time\n    time.sleep(30)\n    os._exit(0)\n"),
}


def hook_said(report: dict, done: r22.Done) -> None:
    said = done.stderr.decode("utf-8", "replace") + json.dumps(report)
    if "start-up hook" not in said and "sitecustomize" not in said:
        raise Broken("a start-up hook printed on standard output, and nothing says so")


def hook_case(name: str, kind: str) -> Case:
    code = HOOKS[name]

    def setup(tmp: Path) -> tuple[Machine, dict[str, str]]:
        machine = plain(tmp)
        folder = tmp / "hooks"
        folder.mkdir()
        if kind == "sitecustomize":
            (folder / "sitecustomize.py").write_text(code)
        else:  # a .pth file site reads from a folder it is handed (site.addsitedir, as a venv's .pth files are read)
            (folder / "sitecustomize.py").write_text("import os, site\nsite.addsitedir(os.path.dirname(__file__))\n")
            (folder / "hostile.pth").write_text("import os; exec(" + repr(code) + ")\n")
        return machine, {"PYTHONPATH": str(folder)}
    return start_case(setup, "PYTHONPATH", hook_said if name.startswith("prints") else None, prefix_path=True,
                      codes=(74,) if "closes" in name else (0, 1, 2), own_daemon="daemon" in name)


# --- 3. the loader's variables -----------------------------------------------------------------------------------

def _not_elf(tmp: Path) -> str:
    (tmp / "libnot.so").write_bytes(b"garbage" * 100)
    return str(tmp / "libnot.so")


LOADER: dict[str, tuple[str, str | Callable[[Path], str], dict[str, str]]] = {
    "LD_PRELOAD a missing library": ("LD_PRELOAD", "/nonexistent/libmissing.so", {}),
    "LD_PRELOAD not ELF": ("LD_PRELOAD", _not_elf, {}),
    "LD_PRELOAD a folder": ("LD_PRELOAD", lambda tmp: str(tmp), {}),
    "LD_TRACE_LOADED_OBJECTS=1": ("LD_TRACE_LOADED_OBJECTS", "1", {}),
    "LD_BIND_NOW=1": ("LD_BIND_NOW", "1", {}),
    "LD_DEBUG=all to a file": ("LD_DEBUG", "all", {"LD_DEBUG_OUTPUT": "{tmp}/ld-debug"}),
    "LD_DEBUG=libs to standard error": ("LD_DEBUG", "libs", {}),
    "LD_DEBUG=help": ("LD_DEBUG", "help", {}),
    "LD_DEBUG_OUTPUT in a missing folder": ("LD_DEBUG", "files", {"LD_DEBUG_OUTPUT": "/nonexistent/dir/out"}),
}


def preload_failure_said(entry: str) -> Callable[[dict, r22.Done], None]:
    def judge(report: dict, done: r22.Done) -> None:
        if not [f for f in report.get("findings", []) if f.get("severity") in ("warning", "error", "info")
                and "LD_PRELOAD" in json.dumps(f) and entry in json.dumps(f)]:
            raise Broken(f"LD_PRELOAD's {entry}, which the loader cannot load in any program, named by no finding")
    return judge


def loader_case(variable: str, value: str | Callable[[Path], str], others: dict[str, str]) -> Case:
    def judged(tmp: Path) -> None:
        written = value(tmp) if callable(value) else value

        def setup(tmp: Path) -> tuple[Machine, dict[str, str]]:
            return plain(tmp), {variable: written, **{k: v.format(tmp=tmp) for k, v in others.items()}}
        judge = preload_failure_said(written) if variable == "LD_PRELOAD" else None
        start_case(setup, variable, judge, clean_output=True)(tmp)
    return judged


# --- 4. standard streams -----------------------------------------------------------------------------------------

STREAMS: dict[str, tuple[str, tuple[int, ...]]] = {
    "standard output closed": ('exec "$@" >&-', (74,)),
    "standard output /dev/full": ('exec "$@" >/dev/full', (74,)),
    "standard output a pipe closed early": ('"$@" | head -c 10 >/dev/null; exit "${PIPESTATUS[0]}"', (0, 1, 141)),
    "standard error closed": ('exec "$@" 2>&-', (0, 1, 2)),
    "standard error /dev/full": ('exec "$@" 2>/dev/full', (0, 1, 2)),
    "standard input closed": ('exec "$@" <&-', (0, 1, 2)),
    "all three closed": ('exec "$@" <&- >&- 2>&-', (74,)),
    "standard output a file opened for appending": ('exec "$@" >>"$OUT"', (0, 1, 2)),
}


def stream_case(redirect: str, codes: tuple[int, ...]) -> Case:
    def case(tmp: Path) -> None:
        machine = plain(tmp)
        env = {**machine.env, "PYTHONPATH": r22.package(), "OUT": str(tmp / "out.json")}
        for args in (["check", "--json"], ["check"]):
            done = r22.run(["bash", "-c", redirect, "bash", sys.executable, "-P", "-m", "cudnn_doctor", *args], env,
                           machine.cwd)
            err = done.stderr.decode("utf-8", "replace")
            if done.returncode == 3 or "Traceback" in err:
                raise Broken(f"{' '.join(args)}: internal error (exit {done.returncode}): {err.strip()[-200:]}")
            if done.returncode not in codes:
                raise Broken(f"{' '.join(args)}: exit {done.returncode}, not {codes}: {err.strip()[-200:]}")
            no_driving_bytes(done, " ".join(args))
        no_child_left(str(tmp))
    return case


# --- 5. the working folder ---------------------------------------------------------------------------------------

def working_case(where: str) -> Case:
    def case(tmp: Path) -> None:
        machine = torch_machine(tmp)
        site = next(tmp.rglob("site-packages"))
        prefix: list[str] = []
        if where == "inside torch":
            cwd = site / "torch"
            (cwd / "__future__.py").write_text("raise SystemExit('torch\\'s own __future__')\n")
            (cwd / "typing.py").write_text("raise SystemExit('a typing of its own')\n")
        elif where == "deleted":
            gone = tmp / "gone"
            prefix = ["bash", "-c", f'mkdir -p "{gone}" && cd "{gone}" && rmdir "{gone}" && exec "$@"', "bash"]
            cwd = tmp
        elif where == "unreadable":
            cwd = tmp / "closed"
            cwd.mkdir()
            cwd.chmod(0o100)
            prefix = r22.NO_DAC
        else:  # named with a newline and escapes
            cwd = tmp / "a\nb\x1b[2J\x9bc"
            cwd.mkdir()
        env = {**machine.env, "PYTHONPATH": r22.package()}
        done = r22.run([*prefix, sys.executable, "-P", "-m", "cudnn_doctor", "check", "--json"], env, cwd)
        held(done, True)
        no_driving_bytes(done, "check --json")
        no_bug_finding(done, "check --json")
        done = r22.run([*prefix, sys.executable, "-m", "cudnn_doctor", "check"], env, cwd)  # as python -m puts it first
        held(done, False)
        no_driving_bytes(done, "check")
        no_child_left(str(tmp))
    return case


# --- 6. locale ---------------------------------------------------------------------------------------------------

LOCALES: dict[str, dict[str, str]] = {
    "LANG a missing locale": {"LANG": "xx_YY.UTF-8"},
    "LC_ALL a missing locale": {"LC_ALL": "xx_YY.UTF-8", "LANG": "xx_YY.UTF-8"},
    "LC_ALL=C": {"LC_ALL": "C", "LANG": "C"},
    "POSIX without coercion": {"LC_ALL": "POSIX", "PYTHONCOERCECLOCALE": "0", "LANG": ""},
    "Turkish": {"LC_ALL": "tr_TR.UTF-8", "LANG": "tr_TR.UTF-8"},
    "ISO-8859-1 missing": {"LC_ALL": "en_US.ISO-8859-1"},
    "a newline and an escape": {"LC_ALL": "en_US.UTF-8\n\x1b[2J", "LANG": "\x1b]0;t\x07"},
    "LANGUAGE and LC_MESSAGES hostile": {"LANGUAGE": "xx:yy:\x1b[2J", "LC_MESSAGES": "zz_ZZ"},
}


def locale_case(variables: dict[str, str]) -> Case:
    def setup(tmp: Path) -> Machine:
        machine = plain(tmp)
        machine.env.update(variables)
        return machine
    return check_case(setup)


# --- 7. the first context made again -----------------------------------------------------------------------------

SIGNAL_C = r22.JOB_CHILD_C + r"""#include <sys/time.h>
static int SIGNUM;
static void fire(int s) { (void)s; signal(SIGNUM, SIG_DFL); raise(SIGNUM); }
__attribute__((constructor)) static void at_load(void) {
    const char *mode = getenv("R24_SIGNAL");
    if (!mode || getenv("CUDA_FAKE_CONTEXT_LIMIT") || !is_job_child()) return;
    SIGNUM = atoi(mode);
    const char *at = strchr(mode, ':');
    signal(SIGALRM, fire);
    ualarm((useconds_t)(at ? atoi(at + 1) : 1000), 0);
}
"""


def compiled(folder: Path, source: str, name: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{name}.c").write_text(source)
    library = folder / f"lib{name}.so"
    subprocess.run(["gcc", "-shared", "-fPIC", "-O1", "-o", str(library), str(folder / f"{name}.c")], check=True,
                   capture_output=True, timeout=120)
    return library


def signal_context_case(signum: int, after_us: int) -> Case:
    def setup(tmp: Path) -> Machine:
        machine = gpu_machine(tmp)
        machine.env.update({"CUDA_FAKE_CONTEXT_LIMIT": "500", "R24_SIGNAL": f"{signum}:{after_us}",
                            "LD_PRELOAD": str(compiled(tmp / "hostile", SIGNAL_C, "signal")),
                            "CUDNN_DOCTOR_PROBE_TIMEOUT": "8"})
        return machine
    return check_case(setup, judge=r23.context_said)


def many_variables_case(count: int) -> Case:
    def setup(tmp: Path) -> Machine:
        machine = gpu_machine(tmp)
        machine.env.update({f"CUDA_R24_{n}": "\x1b[2J" if n % 7 == 0 else "1" for n in range(count)})
        machine.env["CUDA_FAKE_CONTEXT_LIMIT"] = "500"
        return machine
    return check_case(setup, judge=r23.context_said, text=False)


# --- 8. nvlink asked --version -------------------------------------------------------------------------------------

NVLINKS: dict[str, str] = {
    "hangs": "#!/bin/sh\nexec sleep 600\n",
    "forks a daemon keeping the pipe": "#!/bin/sh\n(sleep 600 &)\necho 'Cuda compilation tools, release 12.6, V12.6.85'\n",
    "prints 64 MB": "#!/bin/sh\nhead -c 67108864 /dev/zero | tr '\\0' 'x'\n",
    "a version of 10^5 digits": "#!/bin/sh\nprintf 'Cuda compilation tools, release 12.6, V'\nhead -c 100000 /dev/zero"
                                " | tr '\\0' '9'\necho\n",
    "escapes and bytes not UTF-8": "#!/bin/sh\nprintf '\\033[2J\\033]0;t\\007\\377\\376 release 12.6, V12.6.85\\n'\n",
    "dies by SIGSEGV": "#!/bin/sh\nkill -SEGV $$\n",
    "dies by SIGKILL halfway": "#!/bin/sh\necho 'Cuda compilation'\nkill -KILL $$\n",
    "closes its output and hangs": "#!/bin/sh\nexec >&- 2>&-\nexec sleep 600\n",
    "leaves a new session holding the pipe, ignoring signals": (
        "#!/bin/sh\nsetsid sh -c \"trap '' TERM INT HUP; sleep 600\" &\n"
        "echo 'Cuda compilation tools, release 12.6, V12.6.85'\n"),
    "ignores SIGTERM and hangs": "#!/bin/sh\ntrap '' TERM INT HUP\nwhile :; do sleep 1; done\n",
}


def nvlink_machine(tmp: Path, make: Callable[[Path], None]) -> Machine:
    from tests.test_first_use import jax_cu12

    machine = Machine(tmp)
    jax_cu12(machine, tmp, nvcc=False)
    tools = tmp / "tools"
    tools.mkdir()
    make(tools)
    machine.env["PATH"] = f"{tools}{os.pathsep}{machine.env['PATH']}"
    machine.env["XLA_FLAGS"] = "--xla_gpu_enable_llvm_module_compilation_parallelism=true"
    machine.env["CUDNN_DOCTOR_HELPER_TIMEOUT"] = "5"
    return machine


def nvlink_script(script: str) -> Callable[[Path], None]:
    def make(tools: Path) -> None:
        (tools / "nvlink").write_text(script)
        (tools / "nvlink").chmod(0o755)
    return make


def _many_nvlinks(tools: Path) -> None:
    for n in range(200):
        folder = tools / f"t{n}"
        folder.mkdir()
        (folder / "nvlink").write_text(NVLINKS["hangs"])
        (folder / "nvlink").chmod(0o755)
    (tools / "nvlink").symlink_to(tools / "t0" / "nvlink")


NVLINK_FILES: dict[str, Callable[[Path], None]] = {
    "a FIFO": lambda tools: os.mkfifo(tools / "nvlink"),
    "a folder": lambda tools: (tools / "nvlink").mkdir(),
    "a link loop": lambda tools: (tools / "nvlink").symlink_to("nvlink"),
    "a link to /dev/zero": lambda tools: (tools / "nvlink").symlink_to("/dev/zero"),
}


def nvlink_case(make: Callable[[Path], None], many: bool = False) -> Case:
    def setup(tmp: Path) -> Machine:
        machine = nvlink_machine(tmp, make)
        if many:
            machine.env["PATH"] = os.pathsep.join([*(str(tmp / "tools" / f"t{n}") for n in range(200)),
                                                   machine.env["PATH"]])
        return machine
    return check_case(setup)


# --- 9. gzip layers ----------------------------------------------------------------------------------------------

def _members(tar: bytes, count: int) -> bytes:
    step = max(1, len(tar) // count)
    parts = [tar[at:at + step] for at in range(0, len(tar), step)]
    return b"".join(gzip.compress(part, mtime=0, compresslevel=1) for part in parts)


def _bomb(size_mib: int) -> bytes:
    return r23.bomb(size_mib << 20)


GZIPS: dict[str, Callable[[bytes], bytes]] = {
    "10^4 members": lambda tar: _members(tar, 10_000),
    "10^5 members of zero bytes, then the layer": lambda tar: gzip.compress(b"", mtime=0) * 100_000 + gzip.compress(
        tar, mtime=0),
    "10^6 members of zero bytes, then the layer": lambda tar: gzip.compress(b"", mtime=0) * 1_000_000 + gzip.compress(
        tar, mtime=0),
    "the layer as 10^5 members of a byte each": lambda tar: _members(tar, len(tar) if len(tar) <= 100_000 else 100_000),
    "a zero-byte member between every 512 bytes": lambda tar: b"".join(
        gzip.compress(tar[at:at + 512], mtime=0) + gzip.compress(b"", mtime=0) for at in range(0, len(tar), 512)),
    "a gzip bomb (8 GiB of zeros) after the layer": lambda tar: gzip.compress(tar, mtime=0) + b"\x1f\x8b\x08\0\0\0\0\0"
    b"\0\xff" + _bomb(8192)[2:-4] + b"\0" * 8,
    "garbage after a member": lambda tar: gzip.compress(tar, mtime=0) + os.urandom(4096),
    "a member cut short after 5,000": lambda tar: _members(tar, 5000)[:-7],
    "a gzip magic and nothing": lambda tar: gzip.compress(tar, mtime=0) + b"\x1f\x8b",
}


def gzip_case(spoil: Callable[[bytes], bytes]) -> Case:
    def case(tmp: Path) -> None:
        from tests.images import config_of, oci_layout
        from tests.test_image import ENV, cuda_image_layers

        machine = Machine(tmp)
        from tests.fakes.build import fake_nvml

        fake_nvml(tmp / "driver", driver="550.54.15", gpus=1)
        machine.add_library_path(tmp / "driver")
        [base, *rest] = cuda_image_layers()
        layers = [(spoil(gzip.decompress(base[0])), base[1]), *rest]
        # the config's diff_ids are the whole layers' (never the spoiled blob inflated here: a bomb would take this
        # process's memory, and every child it forks after reports that as its own largest resident set)
        folder = oci_layout(tmp / "oci", config_of(ENV, layers=[base, *rest]), layers)
        done = doctor(["image", str(folder), "--json"], machine.env, tmp, CEILING_S)
        held(done, True)
        no_driving_bytes(done, "image --json")
        no_child_left(str(tmp))
    return case


# --- 10. install state -------------------------------------------------------------------------------------------

def record_cut_case(command: str, seed: int) -> Case:
    def case(tmp: Path) -> None:
        from tests.install_helpers import clean_env, cudnn7_archive, cudnn7_prefix

        archive = cudnn7_archive(tmp / "archive")
        prefix = cudnn7_prefix(tmp / "cuda")
        env = clean_env(tmp)
        held(doctor(["install", "--from", str(archive), "--prefix", str(prefix), "--yes", "--json"], env, tmp), True,
             (0,))
        [manifest] = (prefix / ".cudnn-doctor").glob("manifest-*.json")
        whole = manifest.read_bytes()
        offset = random.Random(f"{SEED}-record-{seed}").randrange(0, len(whole))
        manifest.write_bytes(whole[:offset])
        before = r22.files_of(prefix)
        args = ["install", "--from", str(archive)] if command == "install" else ["uninstall"]
        done = doctor([*args, "--prefix", str(prefix), "--yes", "--json"], env, tmp)
        report = held(done, True)
        if done.returncode != 2 or "CD509" not in json.dumps(report):
            raise Broken(f"{command} over a record cut at {offset} of {len(whole)}: exit {done.returncode}, "
                         f"{json.dumps(report)[:200]}")
        if r22.files_of(prefix) != before:
            raise Broken(f"{command} over a record cut at {offset}: the prefix changed")
    return case


def journal_cut_case(command: str, seed: int) -> Case:
    """An install killed inside its window (SIGKILL at its second file put) leaves its journal; the journal then cut
    at a seeded offset (a disk that filled as it was written); COMMAND runs over it. It holds where it ends as its
    contract says and the user's own file (the cudnn.h the install backed up) is still there, in place or kept."""
    def case(tmp: Path) -> None:
        from tests.install_helpers import clean_env, cudnn7_archive, cudnn7_prefix

        archive = cudnn7_archive(tmp / "archive")
        prefix = cudnn7_prefix(tmp / "cuda")
        env = clean_env(tmp)
        own = {path: path.read_bytes() for path in prefix.rglob("*") if path.is_file() and ".cudnn-doctor" not in
               path.parts}
        killed = doctor(["install", "--from", str(archive), "--prefix", str(prefix), "--yes", "--json"],
                        {**env, "CUDNN_DOCTOR_TEST_KILL_AT": "apply.put:2"}, tmp)
        journal = prefix / ".cudnn-doctor" / "journal.json"
        if killed.returncode != -9 or not journal.is_file():
            raise Broken(f"no journal left by an install killed in its window (exit {killed.returncode})")
        whole = journal.read_bytes()
        offset = random.Random(f"{SEED}-journal-{seed}").randrange(0, len(whole))
        journal.write_bytes(whole[:offset])
        args = ["install", "--from", str(archive)] if command == "install" else [command]
        done = doctor([*args, "--prefix", str(prefix), "--yes", "--json"], env, tmp)
        held(done, True)
        kept = {path.read_bytes() for path in prefix.rglob("*") if path.is_file()}
        lost = [str(path.relative_to(prefix)) for path, data in own.items() if data not in kept]
        if lost:
            raise Broken(f"{command} over a journal cut at {offset} of {len(whole)}: the user's {lost[:2]} gone")
    return case


# --- 11. the preload's start cost --------------------------------------------------------------------------------

BARE_C = r"""#define _GNU_SOURCE
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
static int bare_start(void) {  /* the doctor's bare start: python -I -S -c STATE */
    char buffer[4096];
    int fd = open("/proc/self/cmdline", O_RDONLY);
    if (fd < 0) return 0;
    ssize_t got = read(fd, buffer, sizeof buffer - 1);
    close(fd);
    if (got <= 0) return 0;
    buffer[got] = 0;
    for (ssize_t at = 0; at < got; at += strlen(buffer + at) + 1)
        if (!strcmp(buffer + at, "-S")) return 1;
    return 0;
}
static int SIGNUM;
static void fire(int s) { (void)s; signal(SIGNUM, SIG_DFL); raise(SIGNUM); }
__attribute__((constructor)) static void at_load(void) {
    const char *mode = getenv("R24_BARE");
    if (!mode || !bare_start()) return;
    if (!strcmp(mode, "hang")) for (;;) pause();
    if (!strcmp(mode, "daemon")) { if (fork() == 0) { setsid(); sleep(600); _exit(0); } return; }
    if (!strcmp(mode, "flood")) { static char junk[1 << 16]; memset(junk, 'x', sizeof junk);
        for (int n = 0; n < 64; n++) (void)!write(1, junk, sizeof junk); return; }
    if (!strcmp(mode, "forged")) { const char *line = "\n{\"environ\": [\"\\u001b[2J\"], \"cwd\": 7}\n";
        (void)!write(1, line, strlen(line)); _exit(0); }
    if (!strcmp(mode, "close")) { for (int fd = 0; fd < 1024; fd++) close(fd); return; }
    if (!strncmp(mode, "sig:", 4)) { SIGNUM = atoi(mode + 4); const char *at = strchr(mode + 4, ':');
        signal(SIGALRM, fire); ualarm((useconds_t)(at ? atoi(at + 1) : 1000), 0); }
}
"""


def preload_cost_case(mode: str, entries: int = 1) -> Case:
    def setup(tmp: Path) -> Machine:
        machine = gpu_machine(tmp)
        library = compiled(tmp / "hostile", BARE_C, "bare")
        machine.env.update({"R24_BARE": mode, "LD_PRELOAD": " ".join([str(library)] * entries),
                            "CUDNN_DOCTOR_PROBE_TIMEOUT": "8"})
        return machine
    return check_case(setup)


def audit_case(value: Callable[[Path], str]) -> Case:
    def setup(tmp: Path) -> Machine:
        machine = gpu_machine(tmp)
        machine.env["LD_AUDIT"] = value(tmp)
        return machine
    return check_case(setup)


# --- 12. unknown CUDNN_* variables and XLA file flags --------------------------------------------------------------

def unknown_case(variables: Callable[[Path], dict[str, str]]) -> Case:
    def setup(tmp: Path) -> Machine:
        machine = r23.torch_machine(tmp)
        machine.env.update(variables(tmp))
        return machine
    return check_case(setup, text=True)


def _regular_files(tmp: Path, count: int) -> str:
    flags = []
    for n in range(count):
        (tmp / f"f{n}").write_text("x")
        flags.append(f"--xla_r24_unknown_{n}={tmp / f'f{n}'}")
    return " ".join(flags)


def _short_files(count: int) -> str:
    """COUNT flags naming files of a short path (/tmp/r24x/N), so that XLA_FLAGS stays within exec's 128 KiB."""
    folder = Path("/tmp/r24x")
    folder.mkdir(exist_ok=True)
    for n in range(count):
        (folder / str(n)).write_text("x")
    return " ".join(f"--xla_q{n}={folder / str(n)}" for n in range(count))


UNKNOWNS: dict[str, Callable[[Path], dict[str, str]]] = {
    "5,000 CUDNN_* variables": lambda tmp: {f"CUDNN_R24_{n}": "1" for n in range(5000)},
    "30,000 CUDNN_* variables": lambda tmp: {f"CUDNN_R24_{n}": "1" for n in range(30000)},
    "30,000 TORCH_* and JAX_* variables": lambda tmp: {f"{family}_R24_{n}": "1" for n in range(15000)
                                                       for family in ("TORCH", "JAX")},
    "CUDNN_* names with escapes and bytes not UTF-8": lambda tmp: {
        "CUDNN_\x1b[2J": "\x1b]0;t\x07", os.fsdecode(b"CUDNN_\xff\xfe"): os.fsdecode(b"\xff\n"),
        "CUDNN_\u009b31m": "1"},
    "CUDNN_* of 120 KB": lambda tmp: {"CUDNN_R24_LONG": "v" * 120_000},
    "an XLA file flag naming a FIFO": lambda tmp: (os.mkfifo(tmp / "fifo"), {
        "XLA_FLAGS": f"--xla_r24_unknown_file={tmp / 'fifo'}"})[1],
    "an XLA file flag naming /dev/zero": lambda tmp: {"XLA_FLAGS": "--xla_r24_unknown_file=/dev/zero"},
    "an XLA file flag of 120 KB": lambda tmp: {"XLA_FLAGS": "--xla_r24_unknown_file=/" + "a" * 120_000},
    "2,000 XLA flags naming regular files": lambda tmp: {"XLA_FLAGS": _regular_files(tmp, 2000)},
    "4,500 XLA flags naming regular files (about as many as exec takes)": lambda tmp: {"XLA_FLAGS": _short_files(4500)},
    "an XLA file flag named with escapes": lambda tmp: ((tmp / "e\x1b[2J\nx").write_text("x"), {
        "XLA_FLAGS": f"--xla_r24_unknown_file={tmp / 'e'}\x1b[2J\nx"})[1],
}


# --- the table ----------------------------------------------------------------------------------------------------

def cases() -> dict[str, tuple[str, Case]]:
    found: dict[str, tuple[str, Case]] = {}
    for name, (variable, value) in PYTHON_VALUES.items():
        found[f"Python's variables: {name}"] = ("Python's variables", python_value_case(variable, value))
    for name, modules in STDLIB_SHADOWS.items():
        found[f"PYTHONPATH hiding {name}"] = ("Python's variables", stdlib_shadow_case(modules))
    for kind in ("sitecustomize", ".pth"):
        for name in HOOKS:
            found[f"a {kind} that {name}"] = ("start-up hooks", hook_case(name, kind))
    for name, (variable, value, others) in LOADER.items():
        found[f"loader: {name}"] = ("loader variables", loader_case(variable, value, others))
    for name, (redirect, codes) in STREAMS.items():
        found[f"streams: {name}"] = ("standard streams", stream_case(redirect, codes))
    for where in ("inside torch", "deleted", "unreadable", "named with a newline and escapes"):
        found[f"working folder {where}"] = ("working folder", working_case(where))
    for name, variables in LOCALES.items():
        found[f"locale: {name}"] = ("locale", locale_case(variables))
    for signum, name in ((9, "SIGKILL"), (15, "SIGTERM"), (6, "SIGABRT"), (7, "SIGBUS")):
        for seed in range(2):
            after = random.Random(f"{SEED}-{name}-{seed}").randrange(200, 200000)
            found[f"context made again: killed by {name} {after} us after it loads"] = (
                "first context", signal_context_case(signum, after))
    found["context made again among 10,000 CUDA variables"] = ("first context", many_variables_case(10_000))
    found["context made again among 60,000 CUDA variables"] = ("first context", many_variables_case(60_000))
    for name, script in NVLINKS.items():
        found[f"nvlink that {name}"] = ("nvlink", nvlink_case(nvlink_script(script)))
    for name, make in NVLINK_FILES.items():
        found[f"nvlink {name}"] = ("nvlink", nvlink_case(make))
    found["nvlink: 200 that hang"] = ("nvlink", nvlink_case(_many_nvlinks, many=True))
    for name, spoil in GZIPS.items():
        found[f"gzip layer: {name}"] = ("gzip layers", gzip_case(spoil))
    for command in ("uninstall", "install"):
        for seed in range(6):
            found[f"{command} over a record cut short (seed {seed})"] = ("install state", record_cut_case(command, seed))
    for command in ("install", "uninstall"):
        for seed in range(4):
            found[f"{command} over a journal cut short (seed {seed})"] = ("install state", journal_cut_case(command, seed))
    for mode in ("hang", "daemon", "flood", "forged", "close"):
        found[f"preload start: the bare start {mode}"] = ("preload start cost", preload_cost_case(mode))
    for signum, name in ((9, "SIGKILL"), (11, "SIGSEGV"), (15, "SIGTERM")):
        after = random.Random(f"{SEED}-bare-{name}").randrange(200, 50000)
        found[f"preload start: the bare start killed by {name} after {after} us"] = (
            "preload start cost", preload_cost_case(f"sig:{signum}:{after}"))
    found["preload start: 1,000 entries"] = ("preload start cost", preload_cost_case("none", 1000))
    found["LD_AUDIT a missing library"] = ("preload start cost", audit_case(lambda tmp: "/nonexistent/libaudit.so"))
    found["LD_AUDIT a library that is no auditor"] = ("preload start cost", audit_case(
        lambda tmp: str(compiled(tmp / "hostile", BARE_C, "bare"))))
    for name, variables in UNKNOWNS.items():
        found[f"unknown settings: {name}"] = ("unknown settings", unknown_case(variables))
    return found


def run_cases(chosen: dict[str, tuple[str, Case]], out=sys.stdout) -> dict[str, list]:
    return r22.run_cases(chosen, out=out)


def main() -> int:
    return r22.main(cases, __doc__)


if __name__ == "__main__":
    sys.exit(main())
