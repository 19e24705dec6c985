#!/usr/bin/env python3
"""Red-team suite over issue 43's surfaces (sealed: builders never read it).

    python redteam.py --tree CHECKOUT [--jobs 2] [--only SUBSTRING] [--list-failures] [--results FILE]

Each case runs in a process of its own (this file with --run-case), in a scratch folder, against the doctor of
CHECKOUT started as `PYTHONPATH=CHECKOUT python -m cudnn_doctor ...` in a pretend machine (tests/conftest.py's
Machine: CUDNN_DOCTOR_SYSTEM_PREFIX, HOME, CUDNN_DOCTOR_CACHE_DIR). A case passes when a user would agree: no
traceback or internal error, the exit code README documents, one JSON object with --json, nothing lost from the
user's files, bounded time and memory, no command the user did not ask for in a printed line. A case that runs
past its limit (at most 60 s) fails as a hang.
"""

from __future__ import annotations

import argparse
import base64
import gzip
import hashlib
import http.server
import io
import json
import os
import random
import re
import resource
import shutil
import signal
import socket
import socketserver
import stat
import subprocess
import sys
import tarfile
import threading
import time
import traceback
import zlib
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

HERE = Path(__file__).resolve().parent
PY = sys.executable
CASES: dict[str, tuple[str, Callable, int]] = {}
CLASSES = {
    "home": "1 --install-completion writes into the user's home",
    "shell": "2 fix --shell lines (cmd, user, powershell, bash, zsh, fish) for hostile folder names",
    "probe": "3 probes vs preloaded libraries, LD_PRELOAD splitting, CUDA probe crash/hang",
    "envval": "4 environment values: CUDA_VISIBLE_DEVICES, backticks, control characters in outputs",
    "limits": "5 ulimit -n / -v / -f on the doctor itself",
    "image": "6 image: hostile JSON, tars, sizes, members, whiteouts, sparse blobs",
    "registry": "6b image: hostile registry on 127.0.0.1",
    "install": "7 install/uninstall: concurrency and signals",
    "fleet": "7b fleet run --slurm: Ctrl-C and --deadline",
    "dl4j": "8 DL4J edits applied with patch",
    "wsl": "9 WSL 2 with a fake libcuda",
}


class Fail(Exception):
    pass


class Skip(Exception):
    pass


def case(cls: str, limit: int = 60):  # type: ignore[no-untyped-def]
    def register(func: Callable) -> Callable:
        CASES[f"{cls}.{func.__name__}"] = (cls, func, limit)
        return func
    return register


def family(cls: str, name: str, params: dict, func: Callable, limit: int = 60) -> None:
    for key, value in params.items():
        CASES[f"{cls}.{name}[{key}]"] = (cls, (lambda ctx, v=value: func(ctx, v)), limit)


# --------------------------------------------------------------------------------------------------------------------
# the pretend machine

class R:
    def __init__(self, rc: int, out: bytes, err: bytes, secs: float) -> None:
        self.rc, self.outb, self.errb, self.secs = rc, out, err, secs
        self.out = out.decode("utf-8", "surrogateescape")
        self.err = err.decode("utf-8", "surrogateescape")

    def __repr__(self) -> str:
        return f"rc={self.rc} t={self.secs:.1f}s out={self.out[-300:]!r} err={self.err[-400:]!r}"

    def json(self) -> dict:
        return one_json(self)


def one_json(r: R, lenient: bool = False) -> dict:
    text = r.out.strip()
    if lenient:  # what a library preloaded into the doctor itself printed around the object is not the doctor's
        text = text[text.find("{\n"): text.rfind("\n}") + 2] if "{\n" in text else text
    try:
        data = json.loads(text)
    except ValueError:
        raise Fail(f"stdout is not one JSON object: {r!r}") from None
    if not isinstance(data, dict):
        raise Fail(f"stdout JSON is not an object: {r!r}")
    return data


def run_proc(argv: list[str], env: dict, cwd: Path, timeout: float, stdin: bytes | None = None,
             preexec: Callable | None = None, cleanup: bool = True) -> R:
    start = time.monotonic()
    proc = subprocess.Popen(argv, env=env, cwd=str(cwd), stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True, preexec_fn=preexec)
    try:
        out, err = proc.communicate(stdin, timeout=timeout)
    except subprocess.TimeoutExpired:
        kill_group(proc.pid)
        try:
            out, err = proc.communicate(timeout=5)
        except subprocess.TimeoutExpired:
            out, err = b"", b""
        raise Fail(f"hang: {' '.join(argv[2:6])} still running after {timeout:.0f} s; "
                   f"out={out[-200:]!r} err={err[-300:]!r}") from None
    if cleanup:
        kill_group(proc.pid)
    return R(proc.returncode, out, err, time.monotonic() - start)


def alive(pid: str) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except (OSError, IndexError):
        return False


def kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except OSError:
        pass


class M:
    """A pretend machine, as tests/conftest.py's Machine builds it."""

    def __init__(self, ctx: Ctx, name: str = "m") -> None:
        self.ctx = ctx
        base = ctx.work / name
        self.base = base
        self.root, self.home = base / "root", base / "home"
        for folder in (self.root / "etc", self.home):
            folder.mkdir(parents=True, exist_ok=True)
        self.env = {"PATH": "/usr/bin:/bin:/usr/sbin:/sbin", "HOME": str(self.home),
                    "CUDNN_DOCTOR_SYSTEM_PREFIX": str(self.root), "CUDNN_DOCTOR_CACHE_DIR": str(base / "cache"),
                    "CUDNN_DOCTOR_PROBE_TIMEOUT": "10", "LANG": "C.UTF-8", "COLUMNS": "200",
                    "CUDNN_DOCTOR_RETRY_BACKOFF": "0", "NO_PROXY": "*", "PYTHONPATH": str(ctx.tree),
                    "CUDNN_DOCTOR_FAKES_DIR": os.environ.get("CUDNN_DOCTOR_FAKES_DIR", "/tmp/cudnn-doctor-fakes")}
        self.cwd = base

    def add_lib(self, folder: Path | str) -> None:
        cur = self.env.get("LD_LIBRARY_PATH")
        self.env["LD_LIBRARY_PATH"] = f"{folder}:{cur}" if cur else str(folder)

    def argv(self, *args: str) -> list[str]:
        return [PY, "-m", "cudnn_doctor", *args]

    def run(self, *args: str, timeout: float = 45, env: dict | None = None, stdin: bytes | None = None,
            preexec: Callable | None = None) -> R:
        return run_proc(self.argv(*args), {**self.env, **(env or {})}, self.cwd, timeout, stdin, preexec)

    def bash(self, script: str, timeout: float = 45, env: dict | None = None) -> R:
        return run_proc(["bash", "-c", script], {**self.env, **(env or {})}, self.cwd, timeout)

    def doctor_line(self, *args: str) -> str:
        import shlex
        return shlex.join(self.argv(*args))


class Ctx:
    def __init__(self, tree: Path, work: Path) -> None:
        self.tree, self.work = tree, work

    def machine(self, name: str = "m") -> M:
        return M(self, name)


BAD_WORDS = ("Traceback (most recent call last)", "internal error", "this is a bug in cudnn-doctor")


def sane(r: R, rcs: tuple[int, ...] | set[int], want_json: bool = False, lenient: bool = False) -> dict | None:
    for word in BAD_WORDS:
        if word in r.err or word in r.out:
            raise Fail(f"{word!r}: {r!r}")
    if r.rc not in rcs:
        raise Fail(f"exit {r.rc}, README documents {sorted(rcs)} here: {r!r}")
    if want_json:
        return one_json(r, lenient)
    return None


def expect(cond: object, why: str) -> None:
    if not cond:
        raise Fail(why)


def codes(report: dict) -> set[str]:
    return {f.get("code") for f in report.get("findings", []) if isinstance(f, dict)}


def all_fix_text(report: dict) -> str:
    return "\n".join(str(f.get("fix") or "") for f in report.get("findings", []) if isinstance(f, dict))


# --------------------------------------------------------------------------------------------------------------------
# fakes (the tree's own, plus a few gcc-built libraries of ours)

def fakes():  # type: ignore[no-untyped-def]
    from tests.fakes import build
    return build


BUILD = Path(os.environ.get("REDTEAM43_BUILD", "/tmp/redteam43-build"))


def cc(name: str, source: str, extra: list[str] | None = None) -> Path:
    key = hashlib.sha256((source + repr(extra)).encode()).hexdigest()[:16]
    out = BUILD / key / name
    if not out.exists():
        out.parent.mkdir(parents=True, exist_ok=True)
        src = out.parent / (name + ".c")
        src.write_text(source)
        tmp = out.parent / f"{name}.{os.getpid()}.tmp"
        subprocess.run(["gcc", "-shared", "-fPIC", "-O1", "-o", str(tmp), str(src), *(extra or [])], check=True,
                       capture_output=True)
        os.replace(tmp, out)
    return out


KERNEL = "580.159.04"


def gpu_machine(ctx: Ctx, m: M, gpus: int = 2, libcuda_status: int = 0, libcuda_path: Path | None = None) -> Path:
    b = fakes()
    (m.root / "proc" / "driver" / "nvidia").mkdir(parents=True, exist_ok=True)
    (m.root / "proc" / "driver" / "nvidia" / "version").write_text(
        f"NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  {KERNEL}  Release Build\n")
    (m.root / "dev").mkdir(exist_ok=True)
    (m.root / "dev" / "nvidia-uvm").write_text("")
    driver = m.base / "driver"
    b.fake_nvml(driver, driver=KERNEL, gpus=gpus)
    if libcuda_path is None:
        b.fake_libcuda(driver, driver_cuda=13000, devices=gpus, file_name=f"libcuda.so.{KERNEL}",
                       status=libcuda_status)
    else:
        shutil.copyfile(libcuda_path, driver / f"libcuda.so.{KERNEL}")
        link = driver / "libcuda.so.1"
        if link.exists() or link.is_symlink():
            link.unlink()
        link.symlink_to(f"libcuda.so.{KERNEL}")
    m.add_lib(driver)
    return driver


CUDNN9 = ["libcudnn_graph", "libcudnn_ops", "libcudnn_cnn", "libcudnn_adv", "libcudnn_engines_precompiled",
          "libcudnn_engines_runtime_compiled", "libcudnn_heuristic"]


# --------------------------------------------------------------------------------------------------------------------
# 1. --install-completion into the user's home

def _no_line_for_missing_script(m: M) -> None:
    rc = m.home / ".bashrc"
    if rc.is_file() and not rc.is_symlink():
        text = rc.read_bytes()
        for line in text.splitlines():
            if b"cudnn-doctor" in line and line.strip().startswith(b"source"):
                target = m.home / ".bash_completions" / "cudnn-doctor.sh"
                if not (target.is_file() and target.stat().st_size > 0):
                    raise Fail(f".bashrc sources {target}, which was never written: {line!r}")


def _completion(ctx: Ctx, setup: Callable[[M], None], shell: str = "bash", rcs: tuple[int, ...] = (0, 2),
                timeout: float = 20) -> tuple[M, R]:
    m = ctx.machine()
    setup(m)
    r = m.run("--install-completion", shell, timeout=timeout)
    sane(r, rcs)
    if r.rc != 0:
        lines = [line for line in r.err.splitlines() if line.strip()]
        expect(len(lines) == 1, f"an error is one line: {r!r}")
    _no_line_for_missing_script(m)
    return m, r


@case("home", limit=40)
def fifo_where_the_completion_file_goes(ctx: Ctx) -> None:
    def setup(m: M) -> None:
        (m.home / ".bash_completions").mkdir()
        os.mkfifo(m.home / ".bash_completions" / "cudnn-doctor.sh")
    m, r = _completion(ctx, setup)
    expect(stat.S_ISFIFO((m.home / ".bash_completions" / "cudnn-doctor.sh").lstat().st_mode) or r.rc == 0,
           "the FIFO was replaced without saying so")


@case("home")
def folder_where_the_completion_file_goes(ctx: Ctx) -> None:
    _completion(ctx, lambda m: (m.home / ".bash_completions" / "cudnn-doctor.sh").mkdir(parents=True))


@case("home")
def file_where_the_completions_folder_goes(ctx: Ctx) -> None:
    m, r = _completion(ctx, lambda m: (m.home / ".bash_completions").write_text("mine\n"))
    expect((m.home / ".bash_completions").read_text() == "mine\n", "the user's file .bash_completions was changed")


@case("home")
def file_where_fish_config_folder_goes(ctx: Ctx) -> None:
    def setup(m: M) -> None:
        (m.home / ".config").mkdir()
        (m.home / ".config" / "fish").write_text("x\n")
    m, _ = _completion(ctx, setup, shell="fish")
    expect((m.home / ".config" / "fish").read_text() == "x\n", "the user's file was changed")


@case("home", limit=40)
def fish_config_is_a_fifo(ctx: Ctx) -> None:
    def setup(m: M) -> None:
        (m.home / ".config").mkdir()
        os.mkfifo(m.home / ".config" / "fish")
    _completion(ctx, setup, shell="fish")


@case("home", limit=40)
def bashrc_is_a_fifo(ctx: Ctx) -> None:
    m, r = _completion(ctx, lambda m: os.mkfifo(m.home / ".bashrc"))
    expect(stat.S_ISFIFO((m.home / ".bashrc").lstat().st_mode), "the FIFO .bashrc was replaced")
    if r.rc == 0:
        expect("source" in r.out + r.err, "the line to add was neither written nor said")


def _in_readonly_ns(m: M, target: Path, args: list[str], timeout: float = 20) -> R:
    """The doctor in a private mount namespace where TARGET is bound read-only (root ignores file modes)."""
    import shlex
    if shutil.which("unshare") is None or os.geteuid() != 0:
        raise Skip("needs root and unshare for a read-only bind mount")
    script = (f"mount --bind {shlex.quote(str(target))} {shlex.quote(str(target))} && "
              f"mount -o remount,bind,ro {shlex.quote(str(target))} && exec {shlex.join(m.argv(*args))}")
    return run_proc(["unshare", "-m", "--propagation", "private", "sh", "-c", script], m.env, m.cwd, timeout)


@case("home")
def readonly_bashrc(ctx: Ctx) -> None:
    m = ctx.machine()
    (m.home / ".bashrc").write_text("# mine\n")
    r = _in_readonly_ns(m, m.home / ".bashrc", ["--install-completion", "bash"])
    sane(r, (2,))
    expect((m.home / ".bashrc").read_text() == "# mine\n", ".bashrc changed")
    expect(len([x for x in r.err.splitlines() if x.strip()]) == 1, f"one line: {r!r}")
    expect(not (m.home / ".bash_completions" / "cudnn-doctor.sh").exists() or True, "")


@case("home")
def readonly_home(ctx: Ctx) -> None:
    m = ctx.machine()
    (m.home / ".bashrc").write_text("# mine\n")
    r = _in_readonly_ns(m, m.home, ["--install-completion", "zsh"])
    sane(r, (2,))
    expect(len([x for x in r.err.splitlines() if x.strip()]) == 1, f"one line: {r!r}")


@case("home")
def empty_home_is_refused_not_slash(ctx: Ctx) -> None:
    m = ctx.machine()
    if shutil.which("unshare") is None or os.geteuid() != 0:
        raise Skip("needs root and unshare")
    existed = os.path.lexists("/.bashrc")
    # / itself is made read-only in a private namespace: nothing can reach the real /.bashrc
    script = f"mount --bind / / && mount -o remount,bind,ro / && exec {m.doctor_line('--install-completion', 'bash')}"
    r = run_proc(["unshare", "-m", "--propagation", "private", "sh", "-c", script], {**m.env, "HOME": ""}, m.cwd, 20)
    expect(os.path.lexists("/.bashrc") == existed, "/.bashrc appeared")
    sane(r, (2,))
    expect("HOME" in r.err, f"the error names HOME: {r!r}")


@case("home")
def bashrc_symlink_of_a_dotfiles_manager_kept(ctx: Ctx) -> None:
    m = ctx.machine()
    dot = m.base / "dotfiles"
    dot.mkdir()
    (dot / "bashrc").write_bytes(b"# mine \xff\xfe no newline at end")
    (m.home / ".bashrc").symlink_to(dot / "bashrc")
    r = m.run("--install-completion", "bash", timeout=20)
    sane(r, (0,))
    expect((m.home / ".bashrc").is_symlink(), "the .bashrc link was replaced by a file")
    data = (dot / "bashrc").read_bytes()
    expect(data.startswith(b"# mine \xff\xfe no newline at end\n"), f"the user's bytes changed: {data[:80]!r}")
    r2 = m.run("--install-completion", "bash", timeout=20)
    sane(r2, (0,))
    expect((dot / "bashrc").read_bytes() == data, "a second install added the line again")


@case("home")
def hostile_home_name_bash_reads_the_completion(ctx: Ctx) -> None:
    m = ctx.machine()
    home = m.base / "h $(touch P) `touch P` 'q\" \\ x"
    home.mkdir()
    m.env["HOME"] = str(home)
    r = m.run("--install-completion", "bash", timeout=20)
    sane(r, (0,))
    b = run_proc(["bash", "--norc", "--noprofile", "-c", 'source "$HOME/.bashrc"; complete -p cudnn-doctor'],
                 {"PATH": "/usr/bin:/bin", "HOME": str(home), "LANG": "C.UTF-8"}, m.base, 20)
    expect(not (m.base / "P").exists(), "a command hidden in HOME ran")
    expect(b.rc == 0 and "cudnn-doctor" in b.out, f"bash does not complete cudnn-doctor after sourcing: {b!r}")


@case("home", limit=40)
def powershell_profile_lookup_leaves_no_children(ctx: Ctx) -> None:
    m = ctx.machine()
    fake = m.base / "bin"
    fake.mkdir()
    pids = m.base / "pids"
    (fake / "pwsh").write_text("#!/bin/sh\n"
                               f"(sleep 300 </dev/null >/dev/null 2>&1 & echo $! >> '{pids}')\n"
                               f"echo '{m.home}/Documents/PowerShell/profile.ps1'\n")
    (fake / "pwsh").chmod(0o755)
    m.env["PATH"] = f"{fake}:{m.env['PATH']}"
    try:
        r = run_proc(m.argv("--install-completion", "pwsh"), m.env, m.cwd, 30, cleanup=False)
        sane(r, (0, 2))
        time.sleep(0.5)
        left = [p for p in (pids.read_text().split() if pids.exists() else []) if alive(p)]
        expect(not left, f"the profile lookup left its children running: {left}")
    finally:
        for p in (pids.read_text().split() if pids.exists() else []):
            try:
                os.kill(int(p), signal.SIGKILL)
            except OSError:
                pass


@case("home", limit=40)
def powershell_that_hangs_is_bounded(ctx: Ctx) -> None:
    m = ctx.machine()
    fake = m.base / "bin"
    fake.mkdir()
    (fake / "pwsh").write_text("#!/bin/sh\nexec sleep 300\n")
    (fake / "pwsh").chmod(0o755)
    m.env["PATH"] = f"{fake}:{m.env['PATH']}"
    r = m.run("--install-completion", "pwsh", timeout=35)
    sane(r, (2,))


@case("home")
def show_completion_with_stdout_closed(ctx: Ctx) -> None:
    m = ctx.machine()
    r = m.bash(f"exec {m.doctor_line('--show-completion', 'bash')} >&-", timeout=20)
    sane(r, (74,))


@case("home")
def relative_home_writes_nothing_outside(ctx: Ctx) -> None:
    m = ctx.machine()
    m.env["HOME"] = "relhome"
    elsewhere = m.base / "cwd"
    elsewhere.mkdir()
    m.cwd = elsewhere
    r = m.run("--install-completion", "bash", timeout=20)
    sane(r, (0, 2))
    if r.rc == 0:
        expect("relhome" not in r.out or os.path.isabs(r.out.split(" in ", 1)[-1].split(";")[0].strip()),
               f"a relative HOME was used as a path relative to the working folder: {r.out!r}")


@case("home")
def zfunc_dangling_symlink(ctx: Ctx) -> None:
    m, r = _completion(ctx, lambda m: (m.home / ".zfunc").symlink_to(m.base / "nowhere"), shell="zsh")
    if r.rc == 0:
        expect((m.home / ".zfunc" / "_cudnn-doctor").is_file(), "said installed, but the file is not there")


# --------------------------------------------------------------------------------------------------------------------
# 2. fix --shell lines

HOSTILE_NAMES = {
    "percent": "100%USERPROFILE%x",
    "newline_cmd": "a\n& touch P & rem",
    "dquote_amp": 'q"& touch P &"x',
    "caret_bang": "a^b!PATH!c",
    "subst": "x\\'$(touch P)\" #`touch P`",
    "ps_quotes": "ps\u2019&touch P|\u2018\u201a\u201b'",
    "tab_esc": "t\tc\re\x1b[31md\x7f",
    "dash": "-dash",
    "not_utf8": "bad\udcff\udcfe\udcc3",
}


def _hostile_fix(ctx: Ctx, name: str) -> tuple[M, str]:
    m = ctx.machine()
    b = fakes()
    b.fake_nvml(m.base / "driver", driver="580.65.06", cuda=13000)
    m.add_lib(m.base / "driver")
    folder = m.base / name / "lib"
    b.fake_cudnn(folder, version=91900, cudart=13000, sublibraries=CUDNN9)
    return m, str(folder)


def ps_value(text: str, pos: int) -> tuple[str, int]:
    """A literal, or a parenthesized sum of literals and [char]0xNNNN, at TEXT[pos]: (value, end)."""
    if text[pos:pos + 1] != "(":
        return ps_literal(text, pos)
    i, out = pos + 1, []
    while True:
        mt = re.compile(r"\[char\]0x([0-9A-Fa-f]{1,6})").match(text, i)
        if mt:
            out.append(chr(int(mt.group(1), 16)))
            i = mt.end()
        else:
            v, i = ps_literal(text, i)
            out.append(v)
        if text.startswith(" + ", i):
            i += 3
            continue
        if text.startswith(")", i):
            return "".join(out), i + 1
        raise Fail(f"unexpected PowerShell code at {i}: {text!r}")


def ps_literal(text: str, pos: int) -> tuple[str, int]:
    """A PowerShell single-quoted string at TEXT[pos] (any of its five quote characters): (value, end)."""
    quotes = "'\u2018\u2019\u201a\u201b"
    if pos >= len(text) or text[pos] not in quotes:
        raise Fail(f"no PowerShell literal at {pos}: {text!r}")
    i, out = pos + 1, []
    while True:
        if i >= len(text):
            raise Fail(f"unterminated PowerShell literal: {text!r}")
        ch = text[i]
        if ch in quotes:
            if i + 1 < len(text) and text[i + 1] in quotes:
                out.append(text[i + 1])
                i += 2
                continue
            return "".join(out), i + 1
        out.append(ch)
        i += 1


def source_lines(text: str) -> list[str]:
    """The lines a printed plan gives to source (under each `N. source` header, before its `why:`)."""
    out, inside = [], False
    for line in text.split("\n"):
        if re.match(r"^\s+\d+\. source\b", line):
            inside = True
            continue
        if inside:
            stripped = line.lstrip(" ")
            if stripped.startswith("why:") or re.match(r"^\s+\d+\. ", line) or not stripped:
                inside = False
                continue
            out.append(stripped)
    return out


def comment_in_words(line: str, lead: str) -> bool:
    return line.startswith(lead) and line.isprintable() and not set(line[len(lead):]) & set("%&|<>\"^`$;'()")


def check_cmd_line(line: str, folder: str) -> None:
    if comment_in_words(line, "rem "):
        return
    expect(line.isprintable(), f"cmd line with control characters: {line!r}")
    mt = re.fullmatch(r'set "([A-Za-z_]+)=(.*)"', line)
    expect(mt, f"cmd line neither an exact set nor a rem comment in words: {line!r}")
    name, value = mt.group(1), mt.group(2)
    expect('"' not in value, f"a double quote inside set \"...\" turns & | < > live: {line!r}")
    rest = value
    if rest.endswith(f";%{name}%"):
        rest = rest[: -len(f";%{name}%")]
    expect("%" not in rest, f"cmd expands % in {line!r}")
    expect(rest == folder or rest.split(";")[0] == folder, f"cmd sets {rest!r}, not the folder {folder!r}")


def check_user_line(line: str, folder: str) -> None:
    if comment_in_words(line, "# "):
        return
    expect(line.isprintable(), f"user line with control characters: {line!r}")
    head = "[Environment]::SetEnvironmentVariable("
    expect(line.startswith(head), f"user line neither exact nor a comment: {line!r}")
    name, i = ps_literal(line, len(head))
    expect(line[i:i + 2] == ", ", f"unexpected form: {line!r}")
    value, j = ps_value(line, i + 2)
    expect(value.split(";")[0] == folder, f"user line sets {value!r}, not {folder!r}")
    tail = line[j:]
    expect(re.fullmatch(r"( \+ \[Environment\]::GetEnvironmentVariable\('\w+', 'User'\))?, 'User'\)", tail),
           f"unexpected code after the literal: {tail!r}")


def check_ps_line(line: str, folder: str) -> None:
    if comment_in_words(line, "# "):
        return
    expect(line.isprintable(), f"PowerShell line with control characters: {line!r}")
    mt = re.match(r"\$env:(\w+) = ", line)
    expect(mt, f"PowerShell line neither exact nor a comment: {line!r}")
    value, j = ps_value(line, mt.end())
    expect(value.rstrip(":;").split(":")[0].split(";")[0] == folder, f"PowerShell sets {value!r}, not {folder!r}")
    tail = line[j:]
    expect(re.fullmatch(r"( \+ \$\(if \(\$env:\w+\) \{ '[:;]' \+ \$env:\w+ \}\)| \+ \$env:\w+)?", tail),
           f"unexpected code after the literal: {tail!r}")


def windows_shell_case(ctx: Ctx, arg: tuple[str, str]) -> None:
    shell, key = arg
    name = HOSTILE_NAMES[key]
    m, folder = _hostile_fix(ctx, name)
    r = m.run("fix", "--shell", shell, "--search-path", folder, timeout=40)
    sane(r, (0, 1))
    rj = m.run("fix", "--json", "--shell", shell, "--search-path", folder, timeout=40)
    data = sane(rj, (0, 1), want_json=True) or {}
    envs = [a for a in data.get("actions", []) if a.get("kind") == "env"]
    expect(envs, f"no env action for a cuDNN off the loader's path: {rj!r}")
    printed = source_lines(r.out)
    expect(printed, f"fix --shell {shell} printed no line to source: {r.out[-600:]!r}")
    checker = {"cmd": check_cmd_line, "user": check_user_line, "powershell": check_ps_line}[shell]
    for line in printed:
        checker(line, folder)
    for line in [x for a in envs for x in (a.get("env", {}).get(shell) or [])]:
        checker(line, folder)
    expect(not (m.cwd / "P").exists(), "a command ran")


family("shell", "windows_line", {f"{s}-{k}": (s, k) for s, k in [
    ("cmd", "percent"), ("cmd", "newline_cmd"), ("cmd", "dquote_amp"), ("cmd", "caret_bang"),
    ("user", "percent"), ("user", "ps_quotes"), ("user", "newline_cmd"),
    ("powershell", "ps_quotes"), ("powershell", "tab_esc"), ("powershell", "not_utf8"), ("cmd", "not_utf8"),
    ("user", "tab_esc")]}, windows_shell_case)

SHELL_ARGV = {"bash": ["bash", "--norc", "--noprofile"], "zsh": ["zsh", "-f"], "fish": ["fish", "--no-config"]}


def posix_shell_case(ctx: Ctx, arg: tuple[str, str]) -> None:
    shell, key = arg
    if shutil.which(shell) is None:
        raise Skip(f"{shell} not installed")
    name = HOSTILE_NAMES[key]
    m, folder = _hostile_fix(ctx, name)
    r = m.run("fix", "--shell", shell, "--search-path", folder, timeout=40)
    sane(r, (0, 1))
    data = sane(m.run("fix", "--json", "--search-path", folder, timeout=40), (0, 1), want_json=True) or {}
    lines = [x for a in data.get("actions", []) if a.get("kind") == "env" for x in a.get("env", {}).get(shell, [])]
    expect(lines, "no env line")
    for line in lines:
        expect(line.isprintable(), f"a line the terminal does not show as the shell reads it: {line!r}")
        expect(line in r.out.splitlines() or line in [x.strip() for x in r.out.splitlines()],
               f"fix --shell {shell} does not print the line whole: {line!r}")
    script = m.base / f"lines.{shell}"
    script.write_bytes("\n".join(lines).encode("utf-8", "surrogateescape") + b"\n")
    env = {"PATH": "/usr/bin:/bin", "HOME": str(m.base), "LANG": "C.UTF-8", "LD_LIBRARY_PATH": "/old/lib"}
    s = run_proc([*SHELL_ARGV[shell], "-c", f"source {script}; exec /usr/bin/env -0"], env, m.base, 20)
    expect(s.rc == 0, f"{shell} failed sourcing the lines: {s!r}")
    expect(not (m.base / "P").exists(), f"{shell} ran a command hidden in the folder name")
    got = dict(e.split(b"=", 1) for e in s.outb.split(b"\0") if b"=" in e).get(b"LD_LIBRARY_PATH")
    expect(got == os.fsencode(folder) + b":/old/lib", f"{shell} set {got!r}")


family("shell", "posix_line", {f"{s}-{k}": (s, k) for s, k in [
    ("bash", "subst"), ("zsh", "tab_esc"), ("fish", "subst"), ("fish", "ps_quotes"), ("zsh", "dash")]},
    posix_shell_case)


@case("shell")
def shell_option_bogus_is_usage(ctx: Ctx) -> None:
    m = ctx.machine()
    r = m.run("fix", "--json", "--shell", "tcsh\n", timeout=20)
    sane(r, (2,), want_json=True)


# --------------------------------------------------------------------------------------------------------------------
# 3. the probes' answers vs what the user's environment loads

PRINTER_C = r"""
#include <stdio.h>
#include <string.h>
#include <unistd.h>
static void say(const char *t) { fputs(t, stdout); fflush(stdout); }
__attribute__((constructor)) static void at_load(void) {
#ifdef AT_LOAD
    say(AT_LOAD);
#endif
#ifdef BIG
    static char b[65536]; memset(b, 'x', sizeof b - 1); for (int i = 0; i < 32; i++) fputs(b, stdout); fflush(stdout);
#endif
#ifdef RAW_WRITE
    write(1, "{\"raw\": 1}\n", 11);
#endif
}
__attribute__((destructor)) static void at_exit_(void) {
#ifdef AT_EXIT
    say(AT_EXIT);
#endif
}
"""


def printer(ctx: Ctx, **defs: str) -> Path:
    extra = []
    for k, v in defs.items():
        extra.append(f"-D{k}={v}" if v is not True else f"-D{k}")
    return cc("libprinter.so", PRINTER_C, extra)


def _baseline_and_preloaded(ctx: Ctx, preload: str) -> tuple[dict, dict]:
    m = ctx.machine()
    gpu_machine(ctx, m)
    base = sane(m.run("check", "--json", timeout=40), (0, 1), want_json=True) or {}
    pre = sane(m.run("check", "--json", timeout=40, env={"LD_PRELOAD": preload}), (0, 1), want_json=True,
               lenient=True) or {}
    return base, pre


def preload_case(ctx: Ctx, defs: dict) -> None:
    lib = printer(ctx, **defs)
    base, pre = _baseline_and_preloaded(ctx, str(lib))
    expect("CD104" not in codes(pre), f"a preloaded library that prints made the probe 'garbage': "
                                      f"{[f for f in pre['findings'] if f['code'] == 'CD104']}")
    expect(not re.search(r"\breboot\b", all_fix_text(pre)) or re.search(r"\breboot\b", all_fix_text(base)),
           "advice to reboot for a library that prints")
    lost = {c for c in codes(base) - codes(pre) if c}
    extra = {c for c in codes(pre) - codes(base) if c and c.startswith("CD1")}
    expect(not lost and not extra - {"CD117", "CD118", "CD119"},
           f"the preloaded printer changed the findings: lost {lost}, new {extra}")
    expect(pre["summary"]["exit_code"] == base["summary"]["exit_code"], "exit code changed")


family("probe", "preloaded_printer", {
    "at_load_line": {"AT_LOAD": '"hello from preload\\n"'},
    "at_exit_line": {"AT_EXIT": '"bye from preload\\n"'},
    "at_load_no_newline": {"AT_LOAD": '"partial"'},
    "at_load_json_lookalike": {"AT_LOAD": '"{\\"version\\": 1}\\n"', "RAW_WRITE": True},
    "two_megabytes_at_load": {"BIG": True},
    "at_load_and_exit": {"AT_LOAD": '"a\\n"', "AT_EXIT": '"b\\n"'},
}, preload_case)


@case("probe")
def fix_yes_after_with_printing_preload(ctx: Ctx) -> None:
    lib = printer(ctx, AT_LOAD='"hi\\n"', AT_EXIT='"bye\\n"')
    m, folder = _hostile_fix(ctx, "plain")
    gpu_machine(ctx, m)
    m.env["LD_PRELOAD"] = str(lib)
    r = m.run("fix", "--yes", "--json", "--search-path", folder, timeout=50)
    data = sane(r, (0, 1), want_json=True, lenient=True) or {}
    expect("error" not in (data.get("after") or {}), f"the check after fix --yes failed: {data.get('after')}")
    after = data.get("after") or {}
    expect("CD104" not in (after.get("codes") or []) and "CD104" not in (data.get("before", {}).get("codes") or []),
           f"CD104 from a printing preload: before {data.get('before')}, after {after}")


def _stub(ctx: Ctx) -> Path:
    b = fakes()
    return b.fake_libcuda(ctx.work / "stubs", status=34, file_name="libcuda.so")


@case("probe")
def ld_preload_tab_is_part_of_a_name(ctx: Ctx) -> None:
    """ld.so splits LD_PRELOAD at spaces and colons only: 'A<TAB>STUB' is one (missing) name; the stub is not
    loaded, so the stub finding (CD111) must not be blamed on LD_PRELOAD."""
    stub = _stub(ctx).resolve()
    m = ctx.machine()
    gpu_machine(ctx, m)
    other = printer(ctx)
    rep = sane(m.run("check", "--json", env={"LD_PRELOAD": f"{other}\t{stub}"}), (0, 1), want_json=True) or {}
    bad = [f for f in rep["findings"] if f["code"] == "CD111" and "LD_PRELOAD" in (f.get("detail") or "")]
    expect(not bad, f"a tab split LD_PRELOAD as ld.so does not: {bad}")


@case("probe")
def ld_preload_space_and_colon_split(ctx: Ctx) -> None:
    stub = _stub(ctx).resolve()
    m = ctx.machine()
    gpu_machine(ctx, m)
    other = printer(ctx)
    for sep in (" ", ":", " : "):
        rep = sane(m.run("check", "--json", env={"LD_PRELOAD": f"{other}{sep}{stub}"}), (0, 1), want_json=True) or {}
        hit = [f for f in rep["findings"] if f["code"] == "CD111" and "LD_PRELOAD" in (f.get("detail") or "")]
        expect(hit, f"the stub preloaded after {sep!r} was not named: {sorted(codes(rep))}")
        lines = [x for a in (rep.get("plan") or {}).get("actions", []) if a.get("kind") == "env"
                 for x in a.get("env", {}).get("bash", [])]
        s = run_proc(["bash", "--norc", "-c", "; ".join(lines) + "; printf %s \"${LD_PRELOAD-UNSET}\""],
                     {"PATH": "/usr/bin:/bin", "LD_PRELOAD": f"{other}{sep}{stub}"}, m.base, 20)
        expect(str(stub) not in s.out and (str(other) in s.out or s.out == "UNSET"),
               f"the plan's lines leave LD_PRELOAD {s.out!r} (sep {sep!r})")


@case("probe")
def ld_preload_newline_in_name(ctx: Ctx) -> None:
    m = ctx.machine()
    gpu_machine(ctx, m)
    weird = m.base / "odd\nname"
    weird.mkdir()
    lib = weird / "libx.so"
    shutil.copyfile(printer(ctx), lib)
    rep = sane(m.run("check", "--json", env={"LD_PRELOAD": str(lib)}), (0, 1), want_json=True) or {}
    for f in rep["findings"]:
        expect("CD104" != f["code"], f"garbage probe from a preload path with a newline: {f}")


CRASH_CUDA = r"""
#include <stdlib.h>
#include <unistd.h>
#include <signal.h>
#define cuInit fake_real_cuInit
#include "%(src)s"
#undef cuInit
int cuInit(unsigned int flags) {
#if MODE == 1
    abort();
#elif MODE == 2
    _exit(0);
#elif MODE == 3
    for (;;) pause();
#elif MODE == 4
    raise(SIGSEGV);
#endif
    return fake_real_cuInit(flags);
}
"""


def cuda_probe_case(ctx: Ctx, mode: int) -> None:
    src = ctx.tree / "tests" / "fakes" / "fake_libcuda.c"
    lib = cc("libcuda.so.1", CRASH_CUDA % {"src": src},
             [f"-DMODE={mode}", "-DFAKE_DRIVER_CUDA=13000", "-DFAKE_CUDA_DEVICES=2", '-DFAKE_CUDA_NAME="GPU"',
              "-DFAKE_CC_MAJOR=9", "-DFAKE_CC_MINOR=0", "-DFAKE_CUDA_STATUS=0", "-DFAKE_CUDA_REVERSED=0",
              "-Wl,-soname,libcuda.so.1"])
    m = ctx.machine()
    gpu_machine(ctx, m, libcuda_path=lib)
    m.env["CUDNN_DOCTOR_PROBE_TIMEOUT"] = "5"
    r = m.run("check", "--json", "--deep", timeout=45)
    rep = sane(r, (0, 1), want_json=True) or {}
    driverish = [f for f in rep["findings"] if str(f.get("code", "")).startswith("CD1")
                 and f.get("severity") in ("error", "warning")]
    expect(driverish, f"a CUDA probe that {['', 'aborts', 'exits early', 'hangs', 'segfaults'][mode]} "
                      f"is no finding: {sorted(codes(rep))}")


family("probe", "cuda_probe", {"abort": 1, "exit_early": 2, "hang": 3, "segv": 4}, cuda_probe_case)


@case("probe")
def cuda_probe_control_healthy(ctx: Ctx) -> None:
    """The same fake driver answering normally: no driver finding (proves the four above are fair)."""
    try:
        cuda_probe_case(ctx, 0)
    except Fail as f:
        if "is no finding" in str(f):
            return
        raise
    raise Fail("a healthy CUDA probe gave a driver finding")


# --------------------------------------------------------------------------------------------------------------------
# 4. values from the environment

def cvd_case(ctx: Ctx, value: str) -> None:
    m = ctx.machine()
    gpu_machine(ctx, m)
    m.env["CUDA_VISIBLE_DEVICES"] = value
    rep = sane(m.run("check", "--json"), (0, 1), want_json=True) or {}
    plan = sane(m.run("fix", "--json"), (0, 1), want_json=True) or {}
    lines = [x for a in plan.get("actions", []) if a.get("kind") == "env" for x in a.get("env", {}).get("bash", [])]
    for line in lines:
        if "CUDA_VISIBLE_DEVICES" in line:
            expect(line.isascii(), f"the treatment writes a non-ASCII value back: {line!r}")
    done = sane(m.run("fix", "--yes", "--json", timeout=50), (0, 1), want_json=True) or {}
    after = set((done.get("after") or {}).get("codes") or [])
    expect(not after & {"CD113", "CD114"}, f"the CUDA_VISIBLE_DEVICES finding survives fix --yes: {after}, "
                                           f"before {sorted(codes(rep))}, lines {lines}")


family("envval", "cuda_visible_devices", {
    "superscript_two": "\u00b2", "arabic_one": "\u0661", "zero_then_arabic": "0,\u0661",
    "fullwidth_zero": "\uff10", "math_bold_zero": "\U0001d7ce", "devanagari_zero_one": "\u0966,1",
    "space_inside": "0 1", "plus_zero": "+0", "long_list": ",".join(["0"] * 5000), "control": "0,\x1b[31m1",
}, cvd_case)


def _torch_machine(ctx: Ctx, m: M) -> Path:
    from tests.test_frameworks import install_torch  # type: ignore
    site = m.base / "venv" / "lib" / "python3.12" / "site-packages"
    site.mkdir(parents=True)
    (m.base / "venv" / "bin").mkdir()
    (m.base / "venv" / "bin" / "python3").write_text("#!/bin/sh\n")
    m.env["PATH"] = f"{m.base / 'venv' / 'bin'}:{m.env['PATH']}"
    install_torch(site)
    return site


@case("envval")
def backtick_in_allocator_setting(ctx: Ctx) -> None:
    m = ctx.machine()
    gpu_machine(ctx, m, gpus=1)
    _torch_machine(ctx, m)
    m.env["PYTORCH_CUDA_ALLOC_CONF"] = "max_split_mb:128,garbage`touch P`x,max_split_size_mb:256"
    t = m.run("check")
    sane(t, (0, 1))
    md = m.run("check", "--format", "markdown")
    sane(md, (0, 1))
    fx = m.run("fix")
    sane(fx, (0, 1))
    # every `why:` is one line, and no line of the plan is a command the user did not ask for
    outl = fx.out.splitlines()
    for i, line in enumerate(outl):
        if line.strip().startswith("why:"):
            nxt = outl[i + 1].strip() if i + 1 < len(outl) else ""
            expect(not nxt.startswith(("touch", "`", "garbage")) and "touch P" not in nxt,
                   f"the why: text put a command on a line of its own: {line!r} / {nxt!r}")
    for out in (t.out, fx.out):
        for line in out.splitlines():
            s = line.strip()
            expect(not s.startswith("touch P") and not re.match(r"^x,max_split", s),
                   f"a backtick cut a printed fix in two: {line!r}")
    plan = sane(m.run("fix", "--json"), (0, 1), want_json=True) or {}
    lines = [x for a in plan.get("actions", []) if a.get("kind") == "env" for x in a.get("env", {}).get("bash", [])]
    for line in lines:
        expect(line in fx.out, f"the env line is not printed whole: {line!r}")
    # markdown: the value's backtick must not close a code span early (parsed by markdown-it, CommonMark)
    try:
        from markdown_it import MarkdownIt
    except ImportError:
        return
    tokens = MarkdownIt("commonmark").enable("table").parse(md.out)
    codes_inline = []
    for tok in tokens:
        for child in tok.children or []:
            if child.type == "code_inline":
                codes_inline.append(child.content)
    for c in codes_inline:
        expect(not c.rstrip().endswith("garbage"), f"a code span ends at the value's backtick: {c!r}")
    expect(not (m.cwd / "P").exists(), "a command ran")


def _cudnn_in(ctx: Ctx, name: str) -> tuple[M, str]:
    m = ctx.machine()
    b = fakes()
    b.fake_nvml(m.base / "driver", driver="580.65.06", cuda=13000)
    m.add_lib(m.base / "driver")
    folder = m.base / name / "lib"
    b.fake_cudnn(folder, version=91900, cudart=13000, sublibraries=CUDNN9, crash=True)
    return m, str(folder)


CTRL_NAME = "a|b\x1b[31m\rc\x01d\x7fe`f"


@case("envval")
def markdown_table_cells_no_raw_control_chars(ctx: Ctx) -> None:
    m, folder = _cudnn_in(ctx, CTRL_NAME)
    r = m.run("check", "--format", "markdown", "--search-path", folder)
    sane(r, (0, 1))
    bad = [c for c in r.out if (ord(c) < 32 and c != "\n") or ord(c) == 127 or 0xD800 <= ord(c) < 0xE000]
    expect(not bad, f"raw control characters in markdown: {sorted(set(map(repr, bad)))}")
    rows = [ln for ln in r.out.splitlines() if ln.startswith("|")]
    widths = {len(re.split(r"(?<!\\)\|", ln)) for ln in rows if "cudnn" in ln.lower() or "libcudnn" in ln}
    head = None
    for ln in r.out.splitlines():
        if ln.startswith("|") and head is None:
            head = ln
    if rows:
        table_widths = {}
        cur = None
        for ln in r.out.splitlines():
            if ln.startswith("|"):
                n = len(re.split(r"(?<!\\)\|", ln.replace("\\\\", "")))
                if cur is None:
                    cur = n
                expect(n == cur, f"a table row with another number of cells (a '|' in a value): {ln!r}")
            else:
                cur = None
        del table_widths, widths


def backtick_folder_case(ctx: Ctx, arg: tuple[str, str]) -> None:
    """A cuDNN that crashes in a folder whose name holds a backtick: each printed `ldd ...` line, run by bash with
    ldd recording its arguments, gets the library's path whole (the backtick cut no line in two)."""
    command, name = arg
    m, folder = _cudnn_in(ctx, name)
    args = [command] + (["--format", "markdown"] if command == "markdown" else []) + ["--search-path", folder]
    if command == "markdown":
        args[0] = "check"
    r = m.run(*args)
    sane(r, (0, 1))
    lines = [ln.strip() for ln in r.out.splitlines() if ln.strip().startswith("ldd ") and str(m.base) in ln]
    expect(lines, f"no ldd line printed: {r.out[-800:]!r}")
    record = m.base / "args"
    for line in lines:
        record.write_bytes(b"")
        b = run_proc(["bash", "--norc", "-c", f"ldd() {{ printf '%s\\0' \"$@\" >> {record}; }}; {line}"],
                     {"PATH": "/usr/bin:/bin"}, m.base, 20)
        got = record.read_bytes().split(b"\0")[:-1]
        want = os.fsencode(folder + "/libcudnn.so.9")
        expect(b.rc == 0 and want in got, f"the printed line does not pass the library whole: {line!r} -> {got!r}")
        expect(not (m.base / "P").exists(), "a command ran")


family("envval", "backtick_in_folder", {"text": ("check", "bt`x"), "markdown": ("markdown", "bt`x"),
                                         "fix": ("fix", "a`touch P`b")}, backtick_folder_case)


@case("envval")
def github_annotations_cannot_inject_commands(ctx: Ctx) -> None:
    m, folder = _cudnn_in(ctx, "x\n::add-mask::secret\n::set-env name=A::b%0A%25")
    r = m.run("check", "--format", "github", "--search-path", folder)
    sane(r, (0, 1))
    for line in r.out.splitlines():
        if line.startswith("::"):
            expect(re.match(r"::(error|warning|notice|group|endgroup|debug)\b", line),
                   f"a value started a workflow command: {line!r}")
            expect(not re.search(r"[\x00-\x1f\x7f]", line), f"a control character in an annotation: {line!r}")


@case("envval")
def junit_is_xml_with_control_characters(ctx: Ctx) -> None:
    import xml.etree.ElementTree as ET
    m, folder = _cudnn_in(ctx, CTRL_NAME + "]]>&<x/>")
    r = m.run("check", "--format", "junit", "--search-path", folder)
    sane(r, (0, 1))
    try:
        ET.fromstring(r.outb)
    except ET.ParseError as e:
        raise Fail(f"junit output is not XML: {e}") from None
    out = m.base / "j.xml"
    r2 = m.run("check", "--junit-xml", str(out), "--json", "--search-path", folder)
    sane(r2, (0, 1), want_json=True)
    try:
        ET.parse(out)
    except (ET.ParseError, OSError) as e:
        raise Fail(f"--junit-xml is not XML: {e}") from None


@case("envval")
def prometheus_labels_stay_one_line(ctx: Ctx) -> None:
    m, folder = _cudnn_in(ctx, 'q"u\\o\nte{x="1"} 9')
    out = m.base / "d.prom"
    r = m.run("check", "--format", "prometheus", "--output", str(out), "--search-path", folder)
    sane(r, (0, 1))
    text = out.read_text()
    metric = re.compile(r'^[a-zA-Z_:][a-zA-Z0-9_:]*(\{([a-zA-Z_][a-zA-Z0-9_]*="(\\.|[^"\\\n])*",?)*\})? '
                        r'[-+0-9.eEnaNInf]+( \d+)?$')
    for line in text.splitlines():
        if line and not line.startswith("#"):
            expect(metric.match(line), f"a line node_exporter refuses: {line!r}")


@case("envval")
def text_report_escapes_terminal_controls(ctx: Ctx) -> None:
    m, folder = _cudnn_in(ctx, "t\x1b]0;pwned\x07\x1b[2J")
    r = m.run("check", "--search-path", folder)
    sane(r, (0, 1))
    expect("\x1b]0;" not in r.out and "\x1b[2J" not in r.out, "a terminal escape from a folder name reached the text")


# --------------------------------------------------------------------------------------------------------------------
# 5. limits on the doctor itself

def limit_case(ctx: Ctx, arg: tuple[str, str, tuple]) -> None:
    flag, value, args = arg
    m = ctx.machine()
    gpu_machine(ctx, m)
    r = m.bash(f"ulimit -S {flag} {value} && exec {m.doctor_line(*args)}", timeout=40)
    json_wanted = "--json" in args
    for word in BAD_WORDS:
        expect(word not in r.err and word not in r.out, f"{word!r} under ulimit {flag} {value}: {r!r}")
    expect(r.rc in (0, 1, 2), f"exit {r.rc} under ulimit {flag} {value} (README: 3 is a bug): {r!r}")
    if json_wanted:
        d = one_json(r)
        if r.rc == 2:
            msg = json.dumps(d).lower()
            expect(any(w in msg for w in ("limit", "ulimit", "open files", "memory", "descriptor")),
                   f"exit 2 without naming the limit: {msg[:300]}")
    elif r.rc == 2:
        expect(any(w in r.err.lower() for w in ("limit", "ulimit", "open files", "memory", "descriptor")),
               f"exit 2 without naming the limit: {r!r}")


family("limits", "ulimit", {
    "n10_check_json": ("-n", "10", ("check", "--json")),
    "n12_check_json": ("-n", "12", ("check", "--json")),
    "n14_check_text": ("-n", "14", ("check",)),
    "n16_fix_json": ("-n", "16", ("fix", "--json")),
    "n11_explain": ("-n", "11", ("explain", "--json", "CUDNN_STATUS_NOT_INITIALIZED")),
    "v24M_check_json": ("-v", "24000", ("check", "--json")),
    "v32M_check_json": ("-v", "32000", ("check", "--json")),
    "v40M_check_text": ("-v", "40000", ("check",)),
    "v46M_check_json": ("-v", "46000", ("check", "--json")),
    "v80M_check_json": ("-v", "80000", ("check", "--json")),
    "n12_compat_json": ("-n", "12", ("compat", "torch==2.5.1", "--cuda", "12.4", "--json")),
    "n13_fix_yes_json": ("-n", "13", ("fix", "--yes", "--json")),
    "v36M_fix_json": ("-v", "36000", ("fix", "--json")),
}, limit_case)


@case("limits")
def file_size_limit_leaves_output_as_it_was(ctx: Ctx) -> None:
    m = ctx.machine()
    out = m.base / "d.prom"
    out.write_text("# the previous report\ncudnn_doctor_exit_code 0\n")
    r = m.bash(f"ulimit -S -f 0 && exec {m.doctor_line('check', '--format', 'prometheus', '--output', str(out))}",
               timeout=40)
    for word in BAD_WORDS:
        expect(word not in r.err, f"{word!r}: {r!r}")
    expect(out.read_text() == "# the previous report\ncudnn_doctor_exit_code 0\n", "the report file was cut")


# --------------------------------------------------------------------------------------------------------------------
# 6. images

def img():  # type: ignore[no-untyped-def]
    from tests import images
    return images


def _good_parts():  # type: ignore[no-untyped-def]
    i = img()
    layers = [i.layer({"usr/local/cuda-12.8/version.json": json.dumps({"cuda": {"version": "12.8.1"}})})]
    config = i.config_of({"CUDA_VERSION": "12.8.1"}, layers=layers)
    return config, layers


def _image_json(ctx: Ctx, target: str, timeout: float = 40, rcs: tuple[int, ...] = (2,),
                env: dict | None = None) -> tuple[R, dict]:
    m = ctx.machine("img")
    r = m.run("image", target, "--json", timeout=timeout, env=env)
    d = sane(r, rcs, want_json=True) or {}
    return r, d


def oci_with(ctx: Ctx, mutate: Callable[[dict, dict, dict], None]) -> Path:
    """An OCI layout whose index/manifest/config JSON MUTATE changes (digests recomputed)."""
    i = img()
    config, layers = _good_parts()
    cfg = json.loads(config)
    man = json.loads(i.manifest_of(config, layers))
    idx = {"schemaVersion": 2, "mediaType": i.INDEX, "manifests": []}
    mutate(idx, man, cfg)
    cfg_b = json.dumps(cfg).encode()
    if isinstance(man, dict) and isinstance(man.get("config"), dict) and "digest" in man["config"] \
            and man["config"].get("digest", "").startswith("sha256:"):
        man["config"]["digest"], man["config"]["size"] = i.digest(cfg_b), len(cfg_b)
    man_b = json.dumps(man).encode()
    folder = ctx.work / "oci"
    blobs = folder / "blobs" / "sha256"
    blobs.mkdir(parents=True)
    for blob in [cfg_b, man_b, *(b for b, _ in layers)]:
        (blobs / i.digest(blob).split(":")[1]).write_bytes(blob)
    (folder / "oci-layout").write_text('{"imageLayoutVersion": "1.0.0"}')
    if not idx["manifests"] and idx.get("_keep") is None:
        idx["manifests"] = [{"mediaType": i.MANIFEST, "digest": i.digest(man_b), "size": len(man_b)}]
    idx.pop("_keep", None)
    (folder / "index.json").write_text(json.dumps(idx))
    return folder


def _set(path: list, value: object) -> Callable[[dict, dict, dict], None]:
    def mutate(idx: dict, man: dict, cfg: dict) -> None:
        target = {"idx": idx, "man": man, "cfg": cfg}[path[0]]
        if path[0] == "idx":
            idx["_keep"] = True
        for key in path[1:-1]:
            target = target[key]
        target[path[-1]] = value
    return mutate


def wrong_json_case(ctx: Ctx, arg: tuple[list, object]) -> None:
    folder = oci_with(ctx, _set(*arg))
    _image_json(ctx, str(folder), rcs=(0, 1, 2))


family("image", "wrong_json_type", {
    "index_manifests_object": (["idx", "manifests"], {"a": 1}),
    "index_manifests_string": (["idx", "manifests"], "sha256:x"),
    "index_entry_number": (["idx", "manifests"], [7]),
    "manifest_layers_string": (["man", "layers"], "layer"),
    "manifest_layer_size_string": (["man", "layers"], [{"mediaType": "x", "digest": "sha256:" + "0" * 64,
                                                         "size": "big"}]),
    "manifest_config_list": (["man", "config"], [1, 2]),
    "config_env_string": (["cfg", "config", "Env"], "CUDA_VERSION=12.8"),
    "config_env_numbers": (["cfg", "config", "Env"], [1, None, {"a": 2}]),
    "config_labels_list": (["cfg", "config", "Labels"], ["a"]),
    "config_diff_ids_number": (["cfg", "rootfs", "diff_ids"], 5),
    "config_architecture_object": (["cfg", "architecture"], {"x": 1}),
}, wrong_json_case)


def docker_manifest_case(ctx: Ctx, manifest: object) -> None:
    path = ctx.work / "save.tar"
    with tarfile.open(path, "w") as archive:
        data = json.dumps(manifest).encode()
        info = tarfile.TarInfo("manifest.json")
        info.size = len(data)
        archive.addfile(info, io.BytesIO(data))
    _image_json(ctx, str(path), rcs=(2,))


family("image", "docker_manifest_json", {
    "object": {"Config": "x.json"}, "layers_number": [{"Config": "x.json", "RepoTags": ["a:1"], "Layers": 5}],
    "config_number": [{"Config": 7, "Layers": []}], "nested_deep": [[[[[[[[[[[]]]]]]]]]]],
}, docker_manifest_case)


@case("image")
def truncated_docker_save(ctx: Ctx) -> None:
    i = img()
    config, layers = _good_parts()
    full = i.docker_archive(ctx.work / "full.tar", config, layers)
    data = full.read_bytes()
    for cut in (len(data) // 2, len(data) - 700, 1000):
        p = ctx.work / f"cut{cut}.tar"
        p.write_bytes(data[:cut])
        _image_json(ctx, str(p), rcs=(2,))


@case("image")
def truncated_oci_archive(ctx: Ctx) -> None:
    folder = oci_with(ctx, lambda a, b, c: None)
    tar_path = ctx.work / "oci.tar"
    with tarfile.open(tar_path, "w") as t:
        t.add(folder, arcname=".")
    data = tar_path.read_bytes()
    p = ctx.work / "oci-cut.tar"
    p.write_bytes(data[: len(data) * 2 // 3])
    _image_json(ctx, str(p), rcs=(2,))


def _ustar(name: bytes, size: int, typeflag: bytes = b"0") -> bytes:
    h = bytearray(512)
    h[0:len(name[:100])] = name[:100]
    h[100:108] = b"0000644\0"
    h[108:116] = b"0000000\0"
    h[116:124] = b"0000000\0"
    h[124:136] = f"{size:011o}\0".encode()
    h[136:148] = b"14533634000\0"
    h[148:156] = b"        "
    h[156:157] = typeflag
    h[257:263] = b"ustar\0"
    h[263:265] = b"00"
    h[148:156] = f"{sum(h):06o}\0 ".encode()
    return bytes(h)


def _pad(n: int) -> bytes:
    return b"\0" * ((512 - n % 512) % 512)


def _layer_stream_gz(path: Path, chunks) -> None:  # type: ignore[no-untyped-def]
    co = zlib.compressobj(1, zlib.DEFLATED, 31)
    with open(path, "wb") as f:
        for chunk in chunks:
            f.write(co.compress(chunk))
        f.write(co.compress(b"\0" * 1024))
        f.write(co.flush())


def _cached_layer(ctx: Ctx, key: str, make: Callable[[Path], None]) -> Path:
    """A generated layer kept in the build folder (made once), hard-linked (or copied) into this case."""
    cached = BUILD / "layers" / f"{key}.tar.gz"
    if not cached.exists():
        cached.parent.mkdir(parents=True, exist_ok=True)
        tmp = cached.with_name(f"{key}.{os.getpid()}.tmp")
        make(tmp)
        os.replace(tmp, cached)
    local = ctx.work / f"{key}.layer"
    try:
        os.link(cached, local)
    except OSError:
        shutil.copyfile(cached, local)
    return local


def _oci_from_layer_file(ctx: Ctx, layer_path: Path, media: str, diff_id: str | None = None,
                         declared_size: int | None = None) -> Path:
    i = img()
    h = hashlib.sha256()
    with open(layer_path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    layer_digest = "sha256:" + h.hexdigest()
    cfg = json.dumps({"architecture": "amd64", "os": "linux", "config": {"Env": []},
                      "rootfs": {"type": "layers", "diff_ids": [diff_id or layer_digest]}}).encode()
    man = json.dumps({"schemaVersion": 2, "mediaType": i.MANIFEST,
                      "config": {"mediaType": i.CONFIG, "digest": i.digest(cfg), "size": len(cfg)},
                      "layers": [{"mediaType": media, "digest": layer_digest,
                                  "size": declared_size if declared_size is not None else layer_path.stat().st_size}]}
                     ).encode()
    folder = ctx.work / "oci-big"
    blobs = folder / "blobs" / "sha256"
    blobs.mkdir(parents=True)
    for blob in (cfg, man):
        (blobs / i.digest(blob).split(":")[1]).write_bytes(blob)
    os.replace(layer_path, blobs / layer_digest.split(":")[1])
    (folder / "oci-layout").write_text('{"imageLayoutVersion": "1.0.0"}')
    (folder / "index.json").write_text(json.dumps({"schemaVersion": 2, "manifests": [
        {"mediaType": i.MANIFEST, "digest": i.digest(man), "size": len(man)}]}))
    return folder


def _bounded_image(ctx: Ctx, folder: Path, seconds: float, mem_mb: int) -> None:
    m = ctx.machine("img")
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    r = m.run("image", str(folder), "--json", timeout=55)
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    sane(r, (0, 1, 2), want_json=True)
    expect(r.secs < seconds, f"took {r.secs:.1f} s (bound {seconds} s)")
    if peak > before:
        expect(peak / 1024 < mem_mb, f"peak memory {peak / 1024:.0f} MB (bound {mem_mb} MB)")


SIZE_CLAIM = 256 << 20


@case("image")
def gnu_long_name_256mb(ctx: Ctx) -> None:
    def chunks():  # type: ignore[no-untyped-def]
        yield _ustar(b"././@LongLink", SIZE_CLAIM, b"L")
        block = b"a" * (1 << 20)
        for _ in range(SIZE_CLAIM >> 20):
            yield block
        yield _ustar(b"x", 0)
    lp = _cached_layer(ctx, "gnu-longname-256m", lambda path: _layer_stream_gz(path, chunks()))
    _bounded_image(ctx, _oci_from_layer_file(ctx, lp, img().LAYER_GZIP, diff_id="sha256:" + "0" * 64), 30, 300)


@case("image")
def pax_path_256mb(ctx: Ctx) -> None:
    body_len = SIZE_CLAIM
    prefix_len = len(str(body_len)) + 1 + len("path=") + 1
    # record: "<len> path=<value>\n", len counts the whole record
    value_len = body_len - prefix_len

    def chunks():  # type: ignore[no-untyped-def]
        yield _ustar(b"./PaxHeaders/x", body_len, b"x")
        yield f"{body_len} path=".encode()
        left = value_len
        block = b"p" * (1 << 20)
        while left > 0:
            n = min(left, len(block))
            yield block[:n]
            left -= n
        yield b"\n"
        yield _pad(body_len)
        yield _ustar(b"x", 0)
    lp = _cached_layer(ctx, "pax-path-256m", lambda path: _layer_stream_gz(path, chunks()))
    _bounded_image(ctx, _oci_from_layer_file(ctx, lp, img().LAYER_GZIP, diff_id="sha256:" + "0" * 64), 30, 300)


@case("image")
def six_hundred_thousand_empty_members(ctx: Ctx) -> None:
    template = _ustar(b"d/f0000000", 0)
    base = sum(template[:148]) + sum(template[156:]) + 8 * 32 - 7 * 48
    head, mid = template[:3], template[10:148]
    tail = template[156:]

    def chunks():  # type: ignore[no-untyped-def]
        batch = []
        for n in range(600_000):
            digits = b"%07d" % n
            check = base + sum(digits)
            batch.append(head + digits + mid + b"%06o\0 " % check + tail)
            if len(batch) == 8192:
                yield b"".join(batch)
                batch = []
        yield b"".join(batch)
    lp = _cached_layer(ctx, "members-600k", lambda path: _layer_stream_gz(path, chunks()))
    _bounded_image(ctx, _oci_from_layer_file(ctx, lp, img().LAYER_GZIP, diff_id="sha256:" + "0" * 64), 40, 250)


@case("image")
def thirty_thousand_whiteouts(ctx: Ctx) -> None:
    i = img()
    n = 30_000
    raw1 = b"".join(_ustar(f"usr/share/x/f{k:06d}".encode(), 0) for k in range(n)) + b"\0" * 1024
    raw2 = b"".join(_ustar(f"usr/share/x/.wh.f{k:06d}".encode(), 0) for k in range(n)) + b"\0" * 1024
    layers = [(gzip.compress(raw1, 1), i.LAYER_GZIP), (gzip.compress(raw2, 1), i.LAYER_GZIP)]
    config = i.config_of({"CUDA_VERSION": "12.8.1"}, layers=layers)
    folder = i.oci_layout(ctx.work / "wh", config, layers)
    _bounded_image(ctx, folder, 20, 400)


@case("image", limit=60)
def sparse_100gib_blob_declared_10kib(ctx: Ctx) -> None:
    lp = ctx.work / "sparse.tar"
    with open(lp, "wb") as f:
        f.truncate(100 << 30)
    i = img()
    folder = ctx.work / "oci-sparse"
    blobs = folder / "blobs" / "sha256"
    blobs.mkdir(parents=True)
    fake_digest = "sha256:" + "ab" * 32
    os.replace(lp, blobs / fake_digest.split(":")[1])
    cfg = json.dumps({"architecture": "amd64", "os": "linux", "config": {"Env": []},
                      "rootfs": {"type": "layers", "diff_ids": [fake_digest]}}).encode()
    man = json.dumps({"schemaVersion": 2, "mediaType": i.MANIFEST,
                      "config": {"mediaType": i.CONFIG, "digest": i.digest(cfg), "size": len(cfg)},
                      "layers": [{"mediaType": i.LAYER_TAR, "digest": fake_digest, "size": 10240}]}).encode()
    for blob in (cfg, man):
        (blobs / i.digest(blob).split(":")[1]).write_bytes(blob)
    (folder / "oci-layout").write_text('{"imageLayoutVersion": "1.0.0"}')
    (folder / "index.json").write_text(json.dumps({"schemaVersion": 2, "manifests": [
        {"mediaType": i.MANIFEST, "digest": i.digest(man), "size": len(man)}]}))
    m = ctx.machine("img")
    r = m.run("image", str(folder), "--json", timeout=50)
    sane(r, (2,), want_json=True)
    expect(r.secs < 20, f"read the sparse blob for {r.secs:.0f} s")


@case("image")
def member_claiming_8gib_in_a_short_layer(ctx: Ctx) -> None:
    lp = ctx.work / "layer.tar"
    lp.write_bytes(_ustar(b"usr/lib/x86_64-linux-gnu/libcudnn.so.9.1.0", 8 << 30) + b"\x7fELF" + b"\0" * 2000)
    folder = _oci_from_layer_file(ctx, lp, img().LAYER_TAR)
    m = ctx.machine("img")
    r = m.run("image", str(folder), "--json", timeout=40)
    sane(r, (2,), want_json=True)


@case("image")
def index_json_is_a_fifo(ctx: Ctx) -> None:
    folder = oci_with(ctx, lambda a, b, c: None)
    (folder / "index.json").unlink()
    os.mkfifo(folder / "index.json")
    m = ctx.machine("img")
    r = m.run("image", str(folder), "--json", timeout=30)
    sane(r, (2,), want_json=True)


@case("image")
def manifest_blob_is_a_symlink_out(ctx: Ctx) -> None:
    i = img()
    folder = oci_with(ctx, lambda a, b, c: None)
    idx = json.loads((folder / "index.json").read_text())
    dig = idx["manifests"][0]["digest"].split(":")[1]
    p = folder / "blobs" / "sha256" / dig
    p.unlink()
    p.symlink_to("/etc/shadow" if os.path.exists("/etc/shadow") else "/etc/passwd")
    m = ctx.machine("img")
    r = m.run("image", str(folder), "--json", timeout=30)
    d = sane(r, (2,), want_json=True) or {}
    expect("root:" not in json.dumps(d), "the content of a file outside the image reached the output")
    del i


# --------------------------------------------------------------------------------------------------------------------
# 6b. a hostile registry on 127.0.0.1

class Registry:
    """A registry (HTTP API v2) on 127.0.0.1 serving one image, whose blob answer BEHAVIOUR spoils."""

    def __init__(self, behaviour: str, redirect_to: str | None = None, host: str = "127.0.0.1") -> None:
        i = img()
        config, layers = _good_parts()
        self.config, self.layer = config, layers[0][0]
        self.manifest = i.manifest_of(config, layers)
        self.behaviour, self.redirect_to = behaviour, redirect_to
        self.hits: list[str] = []
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a: object) -> None:
                pass

            def do_GET(self) -> None:  # noqa: N802
                outer.hits.append(self.path)
                outer.handle(self)

            do_HEAD = do_GET

        class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
            daemon_threads = True
            allow_reuse_address = True

        self.server = Server((host, 0), Handler)
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def send(self, h: http.server.BaseHTTPRequestHandler, body: bytes, ctype: str, code: int = 200,
             length: int | None = None, extra: dict | None = None) -> None:
        h.send_response(code)
        h.send_header("Content-Type", ctype)
        h.send_header("Content-Length", str(len(body) if length is None else length))
        h.send_header("Docker-Content-Digest", "sha256:" + hashlib.sha256(body).hexdigest())
        for k, v in (extra or {}).items():
            h.send_header(k, v)
        h.end_headers()
        if h.command != "HEAD":
            h.wfile.write(body)

    def handle(self, h: http.server.BaseHTTPRequestHandler) -> None:
        i = img()
        path, b = h.path, self.behaviour
        if path.rstrip("/") == "/v2":
            return self.send(h, b"{}", "application/json")
        if b == "unauthorized":
            h.send_response(401)
            h.send_header("WWW-Authenticate", 'Bearer realm="http://127.0.0.1:1/token",service="x"')
            h.send_header("Content-Length", "0")
            h.end_headers()
            return None
        if "/manifests/" in path:
            if b == "redirect_manifest":
                return self.send(h, b"", "text/plain", 307, extra={"Location": self.redirect_to or ""})
            if b == "redirect_loop":
                return self.send(h, b"", "text/plain", 307, extra={"Location": path})
            if b == "html_manifest":
                return self.send(h, b"<html>hello</html>", "text/html")
            if b == "huge_manifest":
                h.send_response(200)
                h.send_header("Content-Type", i.MANIFEST)
                h.send_header("Content-Length", str(1 << 30))
                h.end_headers()
                try:
                    chunk = b" " * (1 << 20)
                    for _ in range(1024):
                        h.wfile.write(chunk)
                except OSError:
                    pass
                return None
            return self.send(h, self.manifest, i.MANIFEST)
        if "/blobs/" in path:
            digest = path.rsplit("/", 1)[1]
            if digest == i.digest(self.config):
                if b == "stall_config":
                    return self._stall(h, self.config)
                return self.send(h, self.config, "application/octet-stream")
            body = self.layer
            if b == "cut":
                h.send_response(200)
                h.send_header("Content-Length", str(len(body)))
                h.end_headers()
                h.wfile.write(body[: len(body) // 2])
                h.wfile.flush()
                h.close_connection = True
                h.connection.shutdown(socket.SHUT_RDWR)
                return None
            if b == "reset":
                h.send_response(200)
                h.send_header("Content-Length", str(len(body)))
                h.end_headers()
                h.wfile.write(body[:10])
                h.wfile.flush()
                h.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\0\0\0\0\0\0\0")
                h.connection.close()
                h.close_connection = True
                return None
            if b == "stall":
                return self._stall(h, body)
            if b == "drip":
                h.send_response(200)
                h.send_header("Content-Length", str(len(body)))
                h.end_headers()
                try:
                    for k in range(len(body)):
                        h.wfile.write(body[k:k + 1])
                        h.wfile.flush()
                        time.sleep(1)
                except OSError:
                    pass
                return None
            if b == "redirect_blob":
                return self.send(h, b"", "text/plain", 307, extra={"Location": self.redirect_to or ""})
            return self.send(h, body, "application/octet-stream")
        return self.send(h, b'{"errors":[{"code":"NAME_UNKNOWN"}]}', "application/json", 404)

    def _stall(self, h: http.server.BaseHTTPRequestHandler, body: bytes) -> None:
        h.send_response(200)
        h.send_header("Content-Length", str(len(body)))
        h.end_headers()
        h.wfile.write(body[:5])
        h.wfile.flush()
        time.sleep(120)


def registry_case(ctx: Ctx, arg: tuple[str, float, dict, tuple]) -> None:
    behaviour, bound, env, rcs = arg
    elsewhere = None
    if behaviour.startswith("redirect_") and behaviour != "redirect_loop":
        elsewhere = Registry("ok", host="127.0.0.2")
    reg = Registry(behaviour, redirect_to=(f"http://127.0.0.2:{elsewhere.port}/v2/team/app/"
                                           + ("manifests/1" if behaviour == "redirect_manifest" else
                                              "blobs/" + img().digest(_good_parts()[1][0][0]))) if elsewhere else None)
    try:
        m = ctx.machine("reg")
        r = m.run("image", f"127.0.0.1:{reg.port}/team/app:1", "--json", timeout=min(bound + 5, 55), env=env)
        if elsewhere is not None:
            expect(not elsewhere.hits, f"followed a redirect from 127.0.0.1 to plain HTTP at another host "
                                       f"(127.0.0.2): {elsewhere.hits}")
        d = sane(r, rcs, want_json=True) or {}
        expect(r.secs < bound, f"took {r.secs:.1f} s (bound {bound} s)")
        message = json.dumps(d.get("error", {}))
        expect("KeyError" not in message, f"refused for another reason than the registry's: {message[:300]}")
        if behaviour in ("stall", "drip", "stall_config"):
            expect(re.search(r"time|stall|slow|second|deadline", message, re.I),
                   f"the error does not say the registry was too slow: {message[:300]}")
        if behaviour == "unauthorized":
            expect("docker pull" in message, f"no docker pull + docker save advice: {message[:300]}")
    finally:
        reg.close()
        if elsewhere:
            elsewhere.close()


family("registry", "hostile", {
    "body_cut_short": ("cut", 40, {}, (2,)),
    "connection_reset": ("reset", 40, {}, (2,)),
    "stall_with_timeout_3": ("stall", 25, {"CUDNN_DOCTOR_IMAGE_TIMEOUT": "3"}, (2,)),
    "stall_default_timeout": ("stall", 50, {}, (2,)),
    "drip_one_byte_per_second": ("drip", 50, {}, (2,)),
    "stalled_config_timeout_3": ("stall_config", 25, {"CUDNN_DOCTOR_IMAGE_TIMEOUT": "3"}, (2,)),
    "redirect_manifest_to_plain_http_elsewhere": ("redirect_manifest", 30, {}, (2,)),
    "redirect_blob_to_plain_http_elsewhere": ("redirect_blob", 30, {}, (2,)),
    "redirect_loop": ("redirect_loop", 30, {}, (2,)),
    "html_for_manifest": ("html_manifest", 30, {}, (2,)),
    "manifest_of_1gib": ("huge_manifest", 30, {}, (2,)),
    "unauthorized_says_docker_pull": ("unauthorized", 30, {}, (2,)),
}, registry_case)


@case("registry")
def image_timeout_set_keeps_a_working_registry_working(ctx: Ctx) -> None:
    reg = Registry("ok")
    try:
        m = ctx.machine("reg")
        for value in ("5", "30", "0.5"):
            r = m.run("image", f"127.0.0.1:{reg.port}/team/app:1", "--json", timeout=30,
                      env={"CUDNN_DOCTOR_IMAGE_TIMEOUT": value})
            sane(r, (0, 1), want_json=True)
    finally:
        reg.close()


@case("registry")
def image_timeout_garbage_is_usage(ctx: Ctx) -> None:
    m = ctx.machine("reg")
    for value in ("abc", "nan", "-1", "inf"):
        r = m.run("image", "127.0.0.1:1/team/app:1", "--json", timeout=30,
                  env={"CUDNN_DOCTOR_IMAGE_TIMEOUT": value})
        d = sane(r, (2,), want_json=True) or {}
        expect("CUDNN_DOCTOR_IMAGE_TIMEOUT" in json.dumps(d), f"the error does not name the variable ({value}): {d}")


# --------------------------------------------------------------------------------------------------------------------
# 7. install and uninstall under concurrency and signals

def inst():  # type: ignore[no-untyped-def]
    from tests import install_helpers
    return install_helpers


ARCHIVES: dict[str, Path] = {}


def archive(ctx: Ctx, version: int = 91900) -> Path:
    key = f"txz-{version}"
    shared = BUILD / "archives" / key
    done = shared / "done"
    if not done.exists():
        shared.mkdir(parents=True, exist_ok=True)
        tmp = Path(str(shared) + f".{os.getpid()}")
        tmp.mkdir(parents=True, exist_ok=True)
        a = inst().make_archive("txz", tmp, version=version)
        os.replace(a, shared / a.name)
        done.write_text(a.name)
        shutil.rmtree(tmp, ignore_errors=True)
    return shared / done.read_text()


def prefix_with_old(ctx: Ctx) -> Path:
    prefix = ctx.work / "cuda"
    (prefix / "lib64").mkdir(parents=True)
    (prefix / "lib64" / "libcudnn.so.9.1.0").write_bytes(b"an old copy of the user's")
    os.symlink("libcudnn.so.9.1.0", prefix / "lib64" / "libcudnn.so.9")
    (prefix / "include").mkdir()
    (prefix / "include" / "mine.h").write_text("/* the user's own header */\n")
    return prefix


def installed_as_recorded(ctx: Ctx, prefix: Path) -> list[str] | None:
    from cudnn_doctor.install.manifest import read_records
    try:
        records = read_records(prefix)
    except Exception as e:  # noqa: BLE001
        return [f"manifest unreadable: {e}"]
    if not records:
        return None
    wrong = []
    for written in records[-1].files:
        path = prefix / written.path
        if written.kind == "symlink":
            ok = path.is_symlink() and os.readlink(path) == written.target
        else:
            ok = not path.is_symlink() and path.is_file() and \
                hashlib.sha256(path.read_bytes()).hexdigest() == written.sha256
        if not ok:
            wrong.append(written.path)
    return wrong


def install_env(ctx: Ctx) -> dict:
    env = inst().clean_env(ctx.work)
    env["PYTHONPATH"] = str(ctx.tree)
    return env


def cli_argv(*args: str) -> list[str]:
    return [PY, "-c", inst().CLI, *args]


def _user_files_kept(prefix: Path) -> None:
    expect((prefix / "include" / "mine.h").read_text() == "/* the user's own header */\n",
           "the user's own header was lost")


def user_view(snap: dict) -> dict:
    """A snapshot without the doctor's own scratch (journal, staging, lock): what the user's files look like."""
    return {k: v for k, v in snap.items() if not re.match(r"^\.cudnn-doctor(/(staging|journal|lock|tmp|\.)|$)", k)}


def _steps(ctx: Ctx, argv: list[str], env: dict, prefix: Path, restore: Callable[[], None]) -> list[str]:
    """Every step boundary one run of ARGV passes (the prefix put back after)."""
    log = ctx.work / "steps.log"
    log.unlink(missing_ok=True)
    run_proc(argv, {**env, "CUDNN_DOCTOR_TEST_STEP_LOG": str(log)}, ctx.tree, 50)
    restore()
    return log.read_text().split() if log.exists() else []


def signal_install_case(ctx: Ctx, arg: tuple[int, str]) -> None:
    """SIGTERM or SIGINT at a seeded random moment of install or uninstall: a step boundary the doctor names
    (inside the journal's window), a random time from outside, or a second Ctrl-C during the rollback."""
    seed, what = arg
    rnd = random.Random(seed * 7919 + sum(map(ord, what)))
    env = install_env(ctx)
    a = archive(ctx)
    prefix = prefix_with_old(ctx)
    pristine = ctx.work / "pristine"
    shutil.copytree(prefix, pristine, symlinks=True)

    def restore() -> None:
        shutil.rmtree(prefix)
        shutil.copytree(pristine, prefix, symlinks=True)
        if what == "uninstall":
            sane(run_proc(cli_argv("install", "--from", str(a), "--prefix", str(prefix), "--yes"), env, ctx.tree, 50),
                 (0,))

    if what == "uninstall":
        restore()
        argv = cli_argv("uninstall", "--prefix", str(prefix), "--yes")
    else:
        argv = cli_argv("install", "--from", str(a), "--prefix", str(prefix), "--yes")
    before = inst().snapshot_content(prefix)
    signame = rnd.choice(["TERM", "INT"])
    extra: dict = {}
    delay = 0.0
    if what in ("install", "uninstall", "double_int"):
        steps = _steps(ctx, argv, env, prefix, restore)
        before = inst().snapshot_content(prefix)
        pool = [x for x in steps if x.startswith(("apply.", "commit.", "staging.", "extract."))] or steps
        expect(pool, "no step boundaries logged (CUDNN_DOCTOR_TEST_STEP_LOG)")
        point = rnd.choice([x for x in pool if x.startswith("apply.")] or pool) if what == "double_int" \
            else rnd.choice(pool)
        if what == "double_int":
            signame = "INT"
        extra = {"CUDNN_DOCTOR_TEST_KILL_AT": f"{point}:{signame}"}
        where = point
    else:
        delay = rnd.uniform(0.2, 1.5)
        where = f"{delay:.2f} s"
    signum = getattr(signal, f"SIG{signame}")
    log = ctx.work / "run.log"
    log.unlink(missing_ok=True)
    if what == "double_int":
        extra["CUDNN_DOCTOR_TEST_STEP_LOG"] = str(log)
    proc = subprocess.Popen(argv, env={**env, **extra}, cwd=str(ctx.tree), stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    if what == "external":
        time.sleep(delay)
        proc.send_signal(signum)
    elif what == "double_int":
        wait_until = time.monotonic() + 30
        lag = rnd.uniform(0.0, 0.02)
        while proc.poll() is None and time.monotonic() < wait_until:
            if log.exists() and "rollback." in log.read_text():
                time.sleep(lag)
                try:
                    proc.send_signal(signal.SIGINT)
                except OSError:
                    pass
                where += f" + a second Ctrl-C {lag * 1000:.0f} ms into the rollback"
                break
            time.sleep(0.001)
    try:
        out, err = proc.communicate(timeout=40)
    except subprocess.TimeoutExpired:
        kill_group(proc.pid)
        raise Fail(f"hang after SIG{signame} at {where}") from None
    kill_group(proc.pid)
    r = R(proc.returncode, out, err, 0)
    sane(r, (0, 1, 128 + signum, -signum))
    after = user_view(inst().snapshot_content(prefix))
    before = user_view(before)
    complete = installed_as_recorded(ctx, prefix)
    as_before = after == before
    if what == "uninstall":
        state_ok = as_before or complete is None
    else:
        state_ok = as_before or complete == []
    if "as it was" in r.err:
        diff = sorted(k for k in set(after) | set(before) if after.get(k) != before.get(k))
        expect(as_before, f"said 'as it was' but the prefix differs (SIG{signame} at {where}): {diff[:6]}")
    if not state_ok:
        expect(re.search(r"journal|roll|recover|next run|interrupted", r.err, re.I),
               f"a mixed prefix left without saying so (SIG{signame} at {where}): {r!r}")
        nxt = run_proc(argv, env, ctx.tree, 50)
        sane(nxt, (0, 1))
        c2 = installed_as_recorded(ctx, prefix)
        expect(c2 in (None, []) or user_view(inst().snapshot_content(prefix)) == before,
               f"the next run did not recover the prefix after SIG{signame} at {where}: {c2}")
    elif what != "uninstall" and any((prefix / ".cudnn-doctor").glob("journal*")):
        nxt = run_proc(argv, env, ctx.tree, 50)
        sane(nxt, (0,))
        expect(installed_as_recorded(ctx, prefix) == [], f"after SIG{signame} at {where}, the next install left "
                                                         f"the prefix incomplete")
    _user_files_kept(prefix)


family("install", "signal", {f"{w}-seed{s}": (s, w) for w, seeds in
                              [("install", range(1, 9)), ("uninstall", range(1, 5)), ("external", range(1, 5)),
                               ("double_int", range(1, 7))]
                              for s in seeds}, signal_install_case)


def _both(ctx: Ctx, argvs: list[list[str]], env: dict) -> list[R]:
    procs = [subprocess.Popen(a, env=env, cwd=str(ctx.tree), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, start_new_session=True) for a in argvs]
    results = []
    for p in procs:
        try:
            out, err = p.communicate(timeout=50)
        except subprocess.TimeoutExpired:
            for q in procs:
                kill_group(q.pid)
            raise Fail("hang: two runs at once") from None
        results.append(R(p.returncode, out, err, 0))
    return results


@case("install")
def two_installs_one_prefix_at_once(ctx: Ctx) -> None:
    env = install_env(ctx)
    a, b = archive(ctx, 91900), archive(ctx, 91800)
    for k in range(2):
        prefix = ctx.work / f"p{k}"
        rs = _both(ctx, [cli_argv("install", "--from", str(x), "--prefix", str(prefix), "--yes") for x in (a, b)],
                   env)
        for r in rs:
            sane(r, (0, 1))
        expect(0 in [r.rc for r in rs], f"neither install succeeded: {rs}")
        for r in rs:
            if r.rc != 0:
                expect(re.search(r"CD510|another|in progress|changing", r.err, re.I),
                       f"the loser does not say another install is changing the prefix: {r!r}")
        expect(installed_as_recorded(ctx, prefix) == [], "the prefix is not one complete install")


@case("install")
def install_and_uninstall_at_once(ctx: Ctx) -> None:
    env = install_env(ctx)
    a, b = archive(ctx, 91900), archive(ctx, 91800)
    prefix = prefix_with_old(ctx)
    sane(run_proc(cli_argv("install", "--from", str(a), "--prefix", str(prefix), "--yes"), env, ctx.tree, 50), (0,))
    rs = _both(ctx, [cli_argv("uninstall", "--prefix", str(prefix), "--yes"),
                     cli_argv("install", "--from", str(b), "--prefix", str(prefix), "--yes", "--replace")], env)
    for r in rs:
        sane(r, (0, 1, 2))
    expect(installed_as_recorded(ctx, prefix) in (None, []), "a half state after install and uninstall at once")
    _user_files_kept(prefix)


@case("install")
def hostile_journal_left_behind(ctx: Ctx) -> None:
    env = install_env(ctx)
    a = archive(ctx)
    prefix = prefix_with_old(ctx)
    state = prefix / ".cudnn-doctor"
    state.mkdir()
    (state / "journal.json").write_bytes(b'{"files": [{"path": "../../../etc/passwd", "backup": 5}]\xff')
    r = run_proc(cli_argv("install", "--from", str(a), "--prefix", str(prefix), "--yes"), env, ctx.tree, 50)
    sane(r, (0, 1, 2))
    _user_files_kept(prefix)


@case("install")
def sighup_during_install_restores(ctx: Ctx) -> None:
    env = install_env(ctx)
    a = archive(ctx)
    prefix = prefix_with_old(ctx)
    before = inst().snapshot_content(prefix)
    r = run_proc(cli_argv("install", "--from", str(a), "--prefix", str(prefix), "--yes"),
                 {**env, "CUDNN_DOCTOR_TEST_KILL_AT": "apply.put:5:HUP"}, ctx.tree, 50)
    sane(r, (129,))
    expect(inst().snapshot_content(prefix) == before, "SIGHUP left the prefix changed")


# --------------------------------------------------------------------------------------------------------------------
# 7b. fleet run --slurm

def _slurm(ctx: Ctx):  # type: ignore[no-untyped-def]
    from tests import slurm_cluster
    missing = slurm_cluster.missing_tools()
    if missing:
        raise Skip(f"Slurm not installed here: {', '.join(missing)}")
    return slurm_cluster.slurm_cluster(ctx.work / "cluster")


def _cmdline(pid: str) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


@case("fleet", limit=60)
def slurm_ctrl_c_leaves_no_srun_or_job(ctx: Ctx) -> None:
    with _slurm(ctx) as slurm:
        m = ctx.machine()
        m.env.update(slurm)
        started = ctx.work / "task-pid"
        task = f"{PY} -c 'import os, time; open(\"{started}\", \"w\").write(str(os.getpid())); time.sleep(600)'"
        proc = subprocess.Popen(m.argv("fleet", "run", "--slurm", "--json", "--command", task, "--deadline", "300",
                                       "--", "--nodes=1"), env=m.env, cwd=str(m.cwd), stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, start_new_session=True)
        try:
            deadline = time.monotonic() + 25
            while not (started.exists() and started.read_text()):
                expect(proc.poll() is None and time.monotonic() < deadline, "the task never started")
                time.sleep(0.1)
            proc.send_signal(signal.SIGINT)
            out, err = proc.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            raise Fail("fleet run did not end within 20 s of Ctrl-C") from None
        finally:
            if proc.poll() is None:
                kill_group(proc.pid)
        r = R(proc.returncode, out, err, 0)
        sane(r, (130,), want_json=True)
        time.sleep(3)
        left = [p for p in os.listdir("/proc") if p.isdigit() and str(started) in _cmdline(p)]
        q = subprocess.run(["squeue", "-h", "-o", "%i %T"], env={**os.environ, **slurm}, capture_output=True,
                           text=True, timeout=20)
        for p in left:
            try:
                os.kill(int(p), signal.SIGKILL)
            except OSError:
                pass
        expect(not left, f"srun or its task still running after Ctrl-C: {[_cmdline(p)[:80] for p in left]}")
        expect(q.stdout.strip() in ("",) or "COMPLETING" in q.stdout, f"a job left in the queue: {q.stdout!r}")


@case("fleet", limit=60)
def slurm_deadline_two_seconds(ctx: Ctx) -> None:
    with _slurm(ctx) as slurm:
        m = ctx.machine()
        m.env.update(slurm)
        r = m.run("fleet", "run", "--slurm", "--json", "--deadline", "2", "--command", "sleep 300", "--",
                  "--nodes=1", timeout=40)
        sane(r, (1, 2), want_json=True)
        expect(r.secs < 8, f"--deadline 2 took {r.secs:.1f} s")


@case("fleet", limit=60)
def slurm_sigterm_ends_143_and_cancels(ctx: Ctx) -> None:
    with _slurm(ctx) as slurm:
        m = ctx.machine()
        m.env.update(slurm)
        started = ctx.work / "task-pid"
        task = f"{PY} -c 'import os, time; open(\"{started}\", \"w\").write(str(os.getpid())); time.sleep(600)'"
        proc = subprocess.Popen(m.argv("fleet", "run", "--slurm", "--command", task, "--deadline", "300", "--",
                                       "--nodes=1"), env=m.env, cwd=str(m.cwd), stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, start_new_session=True)
        try:
            deadline = time.monotonic() + 25
            while not (started.exists() and started.read_text()):
                expect(proc.poll() is None and time.monotonic() < deadline, "the task never started")
                time.sleep(0.1)
            proc.send_signal(signal.SIGTERM)
            out, err = proc.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            raise Fail("fleet run did not end within 20 s of SIGTERM") from None
        finally:
            if proc.poll() is None:
                kill_group(proc.pid)
        sane(R(proc.returncode, out, err, 0), (143, -15))
        time.sleep(3)
        left = [p for p in os.listdir("/proc") if p.isdigit() and str(started) in _cmdline(p)]
        for p in left:
            try:
                os.kill(int(p), signal.SIGKILL)
            except OSError:
                pass
        expect(not left, "srun or its task still running after SIGTERM")


@case("fleet", limit=60)
def slurm_deadline_with_a_queued_job(ctx: Ctx) -> None:
    with _slurm(ctx) as slurm:
        m = ctx.machine()
        m.env.update(slurm)
        r = m.run("fleet", "run", "--slurm", "--json", "--deadline", "2", "--", "--nodes=1", "--begin=now+1hour",
                  timeout=40)
        sane(r, (1, 2), want_json=True)
        expect(r.secs < 8, f"--deadline 2 with a queued job took {r.secs:.1f} s")
        q = subprocess.run(["squeue", "-h", "-o", "%i %T"], env={**os.environ, **slurm}, capture_output=True,
                           text=True, timeout=20)
        expect(q.stdout.strip() == "", f"a job left in the queue: {q.stdout!r}")


@case("fleet")
def fleet_deadline_values_are_usage(ctx: Ctx) -> None:
    m = ctx.machine()
    for value in ("0", "-1", "nan", "inf", "1e400", "\u0661"):
        r = m.run("fleet", "run", "--slurm", "--json", "--deadline", value, "--", "--nodes=1", timeout=20)
        sane(r, (2,), want_json=True)


# --------------------------------------------------------------------------------------------------------------------
# 8. DL4J edits

OLD = b"<nd4j.backend>nd4j-native</nd4j.backend>"
NEW = b"<nd4j.backend>nd4j-cuda-11.6</nd4j.backend>"


def dl4j_case(ctx: Ctx, arg: tuple[str, Callable[[bytes], bytes], bool]) -> None:
    folder_name, transform, exact = arg
    if shutil.which("patch") is None:
        raise Skip("no patch program")
    from tests.test_check import make_toolkit  # type: ignore
    m = ctx.machine()
    b = fakes()
    b.fake_nvml(m.base / "driver", driver="580.65.06", cuda=12040)
    m.add_lib(m.base / "driver")
    make_toolkit(m.root, "11.6.2", 11060)
    project = m.base / folder_name
    project.mkdir()
    fixture = ctx.tree / "tests" / "fixtures" / "dl4j" / "m2-cpu-only" / "pom.xml"
    pom = transform(fixture.read_bytes())
    (project / "pom.xml").write_bytes(pom)
    r = m.run("fix", "--json", "--project", str(project))
    data = sane(r, (0, 1), want_json=True) or {}
    edits = [a for a in data.get("actions", []) if a.get("kind") == "edit"]
    if not exact and not edits:
        expect((project / "pom.xml").read_bytes() == pom, "the pom changed")
        return
    expect(len(edits) == 1, f"no single edit action: {[a.get('kind') for a in data.get('actions', [])]}")
    diff = base64.b64decode(edits[0]["diff_base64"])
    applied = subprocess.run(["patch", "-p0"], input=diff, capture_output=True, cwd="/", timeout=20)
    expect(applied.returncode == 0, f"patch cannot apply the diff: {applied.stdout[-300:]!r} {applied.stderr[-200:]!r}")
    got = (project / "pom.xml").read_bytes()
    if exact:
        want = pom.replace(OLD, NEW)
        expect(got == want, "the file after patch is not the one line changed with its bytes kept")
    else:
        expect(len(got) >= len(pom) - 64, "patch cut the file")


def _latin1(p: bytes) -> bytes:
    return p.replace(b'encoding="UTF-8"', b'encoding="ISO-8859-1"').replace(OLD, OLD + b" <!-- r\xe9seau -->")


def _latin1_before(p: bytes) -> bytes:
    return p.replace(b'encoding="UTF-8"', b'encoding="ISO-8859-1"').replace(OLD, b"<!-- \xe9 -->" + OLD)


family("dl4j", "patch_applies", {
    "latin1_on_the_backend_line": ("latin1", _latin1, True),
    "latin1_before_the_element": ("latin1b", _latin1_before, True),
    "latin1_crlf": ("crlf", lambda p: _latin1(p).replace(b"\n", b"\r\n"), True),
    "cp1252_smart_quotes": ("cp1252", lambda p: p.replace(b'encoding="UTF-8"', b'encoding="windows-1252"')
                            .replace(OLD, OLD + b" <!-- \x93q\x94 \x80 -->"), True),
    "latin1_in_a_hostile_folder": ("proj \xe9 \"q\" $x `y` \\ -- ++", _latin1, True),
    "utf8_bom": ("bom", lambda p: b"\xef\xbb\xbf" + p, True),
    "tab_indented_no_final_newline": ("tabs", lambda p: _latin1(p).replace(b"    ", b"\t").rstrip(b"\n"), True),
    "mixed_line_endings": ("mixed", lambda p: _latin1(p).replace(OLD + b" <!-- r\xe9seau -->\n",
                                                                 OLD + b" <!-- r\xe9seau -->\r\n"), True),
    "non_utf8_folder_bytes": ("proj\udce9\udcff x", _latin1, True),
    "cr_only_line_endings": ("cronly", lambda p: _latin1(p).replace(b"\n", b"\r"), False),
    "backend_line_with_nul_elsewhere": ("nul", lambda p: _latin1(p).replace(b"</project>", b"<!-- \0 --></project>"),
                                        False),
    "utf16_pom": ("utf16", lambda p: p.decode("latin-1").replace('encoding="UTF-8"', 'encoding="UTF-16"')
                  .encode("utf-16"), False),
}, dl4j_case)


# --------------------------------------------------------------------------------------------------------------------
# 9. WSL 2

WSL_KERNEL = ("Linux version 5.15.167.4-microsoft-standard-WSL2 (root@f9c826d3017f) (gcc (GCC) 11.2.0, GNU ld "
              "(GNU Binutils) 2.37) #1 SMP Tue Nov 5 00:21:55 UTC 2024\n")
LINUX_ADVICE = re.compile(r"\breboot\b|reload the nvidia|modprobe|rmmod|apt(-get)? install nvidia-driver|"
                          r"nvidia-smi -r|systemctl", re.I)


def wsl_machine(ctx: Ctx, status: int) -> M:
    b = fakes()
    m = ctx.machine()
    (m.root / "proc").mkdir(parents=True, exist_ok=True)
    (m.root / "proc" / "version").write_text(WSL_KERNEL)
    wsl = m.root / "usr" / "lib" / "wsl" / "lib"
    b.fake_nvml(wsl, driver="551.78", cuda=12040, name="NVIDIA GeForce RTX 4070", compute_capability="8.9")
    built = b.fake_libcuda(m.base / "libcuda-build", driver_cuda=12040, devices=1, name="NVIDIA GeForce RTX 4070",
                           status=status)
    for name in ("libcuda.so.1.1", "libcuda.so.1", "libcuda.so"):
        shutil.copyfile(built, wsl / name)
    (m.root / "dev").mkdir(exist_ok=True)
    (m.root / "dev" / "dxg").write_text("")
    m.env.update(WSL_DISTRO_NAME="Ubuntu-24.04", WSL_INTEROP="/run/WSL/1_interop")
    m.add_lib(wsl)
    return m


def wsl_case(ctx: Ctx, status: int) -> None:
    m = wsl_machine(ctx, status)
    rep = sane(m.run("check", "--json"), (0, 1), want_json=True) or {}
    expect(rep.get("host", {}).get("platform", {}).get("kind") == "wsl2", "not recognised as WSL 2")
    text = all_fix_text(rep)
    bad = LINUX_ADVICE.search(text)
    expect(not bad, f"Linux-only advice on WSL 2 for cuInit {status}: {bad.group(0) if bad else ''!r}")
    errs = [f for f in rep["findings"] if f.get("severity") == "error" and str(f.get("code", "")).startswith("CD1")]
    expect(errs, f"cuInit {status} on WSL 2 is no error: {sorted(codes(rep))}")
    expect(re.search(r"wsl --shutdown|Windows", text), "the fix names neither Windows nor wsl --shutdown")
    plan = sane(m.run("fix", "--json"), (0, 1), want_json=True) or {}
    ptext = json.dumps(plan)
    bad = LINUX_ADVICE.search(ptext)
    expect(not bad, f"the plan gives Linux-only advice on WSL 2: {bad.group(0) if bad else ''!r}")


family("wsl", "cuinit", {"803_system_driver_mismatch": 803, "804_compat_not_supported": 804,
                         "999_unknown": 999, "3_not_initialized": 3}, wsl_case)


@case("wsl")
def linux_libcuda_803_first_on_the_path(ctx: Ctx) -> None:
    """A Linux driver's libcuda installed inside WSL, first on LD_LIBRARY_PATH, answering 803."""
    m = wsl_machine(ctx, 0)
    linux = m.root / "usr" / "lib" / "x86_64-linux-gnu"
    fakes().fake_libcuda(linux, driver_cuda=13000, devices=1, status=803, file_name="libcuda.so.580.95.05")
    m.add_lib(linux)
    for args in (("check", "--json"), ("check", "--json", "--deep")):
        rep = sane(m.run(*args), (0, 1), want_json=True) or {}
        bad = LINUX_ADVICE.search(all_fix_text(rep))
        expect(not bad, f"Linux-only advice on WSL 2 for a Linux libcuda answering 803: {bad.group(0) if bad else ''!r}")
        expect(rep["summary"]["exit_code"] == 1, f"a libcuda that answers 803 first on the path is no error ({args})")


@case("wsl")
def explain_803_on_wsl(ctx: Ctx) -> None:
    m = wsl_machine(ctx, 803)
    r = m.run("explain", "--json", "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH: system has unsupported display driver / "
                                   "cuda driver combination")
    d = sane(r, (0, 1), want_json=True) or {}
    bad = LINUX_ADVICE.search(json.dumps(d.get("matches", d)))
    expect(not bad, f"explain on WSL 2 gives Linux-only advice: {bad.group(0) if bad else ''!r}")


# --------------------------------------------------------------------------------------------------------------------
# the runner

def run_one(tree: Path, case_id: str, work: Path) -> dict:
    sys.path.insert(0, str(tree))
    os.environ["PYTHONPATH"] = str(tree)
    os.environ.setdefault("CUDNN_DOCTOR_FAKES_DIR", "/tmp/cudnn-doctor-fakes")
    cls, func, limit = CASES[case_id]
    ctx = Ctx(tree, work)
    start = time.monotonic()
    try:
        func(ctx)
        status, why = "pass", ""
    except Skip as s:
        status, why = "skip", str(s)
    except Fail as f:
        status, why = "fail", str(f)
    except Exception:  # noqa: BLE001 -- a harness error is a failure of the case, said whole
        status, why = "fail", "harness: " + traceback.format_exc()[-1500:]
    return {"id": case_id, "class": cls, "status": status, "why": why[:3000], "secs": round(time.monotonic() - start, 1)}


def print_failures(results: list[dict]) -> None:
    print("\nfailing cases:")
    for res in sorted(results, key=lambda r: r["id"]):
        if res["status"] == "fail":
            print(f"  {res['id']}")


def report(results: list[dict], commit: str, elapsed: float, list_failures: bool) -> None:
    by_class: dict[str, list[dict]] = {}
    for res in results:
        by_class.setdefault(res["class"], []).append(res)
    print(f"\ncommit {commit}; {len(results)} cases in {elapsed:.0f} s")
    print(f"{'class':10s} {'passed/total':>12s}  skipped  what")
    total_pass = total = 0
    for cls in CLASSES:
        rs = by_class.get(cls, [])
        if not rs:
            continue
        passed = sum(r["status"] == "pass" for r in rs)
        skipped = sum(r["status"] == "skip" for r in rs)
        counted = len(rs) - skipped
        total_pass += passed
        total += counted
        print(f"{cls:10s} {passed:5d}/{counted:<6d}  {skipped:7d}  {CLASSES[cls]}")
    print(f"{'overall':10s} {total_pass:5d}/{total:<6d}")
    if list_failures:
        print_failures(results)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tree", required=True, type=Path)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--only", default="")
    parser.add_argument("--list-failures", action="store_true")
    parser.add_argument("--list", action="store_true", help="list the case ids and stop")
    parser.add_argument("--results", type=Path, default=None, help="where the results go (JSON)")
    parser.add_argument("--from-results", type=Path, default=None, help="print the totals of a saved run")
    parser.add_argument("--run-case", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--work", type=Path, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    tree = args.tree.resolve()
    if args.run_case:
        result = run_one(tree, args.run_case, args.work)
        sys.stdout.write("\nREDTEAM-RESULT " + json.dumps(result) + "\n")
        return
    ids = [c for c in CASES if any(o in c for o in args.only.split(","))]
    if args.from_results:
        saved = json.loads(args.from_results.read_text())
        report(saved["results"], saved["commit"], saved.get("elapsed_s", 0), args.list_failures)
        return
    if args.list:
        for c in ids:
            print(c)
        return
    if args.jobs > 2:
        parser.error("--jobs: at most 2 processes at once (the machine is shared)")
    import tempfile
    scratch = Path(tempfile.mkdtemp(prefix="redteam43-"))
    try:
        commit = subprocess.run(["git", "-C", str(tree), "rev-parse", "HEAD"], capture_output=True, text=True
                                ).stdout.strip() or "unknown"
    except OSError:
        commit = "unknown"
    results: list[dict] = []
    lock = threading.Lock()
    started = time.monotonic()

    def one(case_id: str) -> dict:
        cls, _, limit = CASES[case_id]
        work = scratch / re.sub(r"[^A-Za-z0-9_.-]", "_", case_id)
        work.mkdir(parents=True)
        t0 = time.monotonic()
        proc = subprocess.Popen([PY, str(Path(__file__).resolve()), "--tree", str(tree), "--run-case", case_id,
                                 "--work", str(work)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                start_new_session=True, cwd=str(work))
        try:
            out, _ = proc.communicate(timeout=limit)
            text = out.decode("utf-8", "replace")
            mark = text.rfind("REDTEAM-RESULT ")
            if mark < 0:
                res = {"id": case_id, "class": cls, "status": "fail", "why": "no result: " + text[-800:]}
            else:
                res = json.loads(text[mark + len("REDTEAM-RESULT "):].splitlines()[0])
        except subprocess.TimeoutExpired:
            res = {"id": case_id, "class": cls, "status": "fail", "why": f"hang: the case ran past {limit} s"}
        finally:
            kill_group(proc.pid)
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass
        res["secs"] = round(time.monotonic() - t0, 1)
        shutil.rmtree(work, ignore_errors=True)
        with lock:
            results.append(res)
            print(f"[{len(results):3d}/{len(ids)}] {res['status']:4s} {res['secs']:5.1f}s {case_id}", flush=True)
        return res

    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        list(pool.map(one, ids))
    shutil.rmtree(scratch, ignore_errors=True)
    elapsed = time.monotonic() - started
    report(results, commit, elapsed, False)
    out_file = args.results or (HERE / f"results-{commit[:12]}.json")
    try:
        out_file.write_text(json.dumps({"commit": commit, "elapsed_s": round(elapsed), "results": sorted(
            results, key=lambda r: r["id"])}, indent=1))
    except OSError:
        pass
    if args.list_failures:
        print_failures(results)


if __name__ == "__main__":
    main()
