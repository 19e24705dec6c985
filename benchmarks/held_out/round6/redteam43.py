#!/usr/bin/env python3
"""Round six red-team over issue 43's surfaces and their neighbours (sealed: builders never read it).

    python3 redteam.py --tree CHECKOUT [--jobs 2] [--only SUBSTRING] [--list-failures] [--python PY]

Each case runs in a process of its own (this file with --run-case), in a scratch folder, against the doctor of
CHECKOUT started as `PYTHONPATH=CHECKOUT PY -m cudnn_doctor ...` in a pretend machine (CUDNN_DOCTOR_SYSTEM_PREFIX,
HOME, CUDNN_DOCTOR_CACHE_DIR of its own). A case holds when a user would agree: no traceback or internal error, the
exit code README documents, one JSON object with --json, nothing of the user's lost or half-written, bounded time
and memory, no printed line that runs a command the user did not ask for. A case past its limit fails as a hang.
"""

from __future__ import annotations

import argparse
import base64
import ctypes
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
import xml.etree.ElementTree as ET
import zlib
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

HERE = Path(__file__).resolve().parent
PY = os.environ.get("REDTEAM_PYTHON") or "/work/main/.venv-ci/bin/python"
CASES: dict[str, tuple[str, Callable, int]] = {}
CLASSES = {
    "home": "1 --install-completion writes into the user's home",
    "shell": "2 fix --shell lines for bash, zsh, fish, powershell, cmd, user",
    "probe": "3 probes vs preloads that print, LD_PRELOAD splitting, crashing/hanging CUDA probes",
    "envval": "4 environment values (Unicode digits, backticks, controls) in every output format",
    "limits": "5 ulimit -n -v -s -u -f -t on the doctor itself",
    "image": "6 image: hostile OCI/docker JSON, tars, sizes, members, blobs",
    "registry": "6b image: hostile registry (127.0.0.1, and a namespace of the case's own)",
    "install": "7 install/uninstall under concurrency, signals, full and read-only disks",
    "fleet": "7b fleet run --slurm under signals and deadlines",
    "dl4j": "8 DL4J pom edits with odd encodings, applied with patch",
    "wsl": "9 WSL 2 cuInit advice",
    "jsonall": "x --json of every command under every failure",
    "explain": "x explain fed FIFOs, devices, sparse files, NULs, invalid UTF-8",
    "compat": "x compat with absurd versions",
    "merge": "x fleet merge with hostile inventories",
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


BUILD = Path(os.environ.get("REDTEAM6_BUILD", "/tmp/redteam6-43-build"))


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



# ------------------------------------------------------------------------------------------------ shared helpers
def img():  # type: ignore[no-untyped-def]
    from tests import images
    return images


def _good_parts():  # type: ignore[no-untyped-def]
    i = img()
    layers = [i.layer({"usr/local/cuda-12.8/version.json": json.dumps({"cuda": {"version": "12.8.1"}})})]
    config = i.config_of({"CUDA_VERSION": "12.8.1"}, layers=layers)
    return config, layers


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




# ====================================================================================================================
# common judgements

def err_lines(r: R) -> list[str]:
    return [x for x in r.err.splitlines() if x.strip()]


def one_line(r: R) -> None:
    lines = err_lines(r)
    expect(len(lines) == 1, f"an error is one line on stderr, got {len(lines)}: {r!r}")


def no_raw_controls(text: str, where: str, allow: str = "\n") -> None:
    bad = sorted({repr(c) for c in text if (ord(c) < 32 and c not in allow) or 127 <= ord(c) < 160
                  or 0xD800 <= ord(c) < 0xE000 or c in "\u2028\u2029\u202e"})
    expect(not bad, f"raw control characters in {where}: {bad}")


def ns_run(m: M, setup: str, args: list[str], timeout: float = 30, env: dict | None = None) -> R:
    """The doctor in a private mount namespace after the shell lines SETUP (root, unshare)."""
    import shlex
    if shutil.which("unshare") is None or os.geteuid() != 0:
        raise Skip("needs root and unshare")
    script = f"set -e; {setup}; exec {shlex.join(m.argv(*args))}"
    return run_proc(["unshare", "-m", "--propagation", "private", "sh", "-c", script], {**m.env, **(env or {})},
                    m.cwd, timeout)


def snapshot_tree(folder: Path) -> dict:
    out = {}
    for root, dirs, files in os.walk(folder):
        for name in dirs + files:
            p = Path(root) / name
            st = p.lstat()
            if stat.S_ISREG(st.st_mode):
                out[str(p.relative_to(folder))] = ("f", hashlib.sha256(p.read_bytes()).hexdigest())
            elif stat.S_ISLNK(st.st_mode):
                out[str(p.relative_to(folder))] = ("l", os.readlink(p))
            else:
                out[str(p.relative_to(folder))] = ("o", stat.S_IFMT(st.st_mode))
    return out


# ====================================================================================================================
# 1. --install-completion into the user's home

def _sourced_scripts_exist(m: M, rcfile: Path) -> None:
    """Every line of RCFILE that mentions cudnn-doctor and sources a file names a file that exists and is whole."""
    if not rcfile.is_file():
        return
    for line in rcfile.read_bytes().splitlines():
        if b"cudnn-doctor" in line and re.match(rb"\s*(source|\.)\s", line):
            for cand in re.findall(rb"['\"]?(/[^'\"]+cudnn-doctor[^'\"\s]*)", line):
                p = Path(os.fsdecode(cand))
                expect(p.is_file() and p.stat().st_size > 0, f"{rcfile.name} sources {p}, which is not there")


def home_case(ctx: Ctx, setup: Callable[[M], None], shell: str = "bash", rcs: tuple = (0, 2),
              keep: Callable[[M], None] | None = None, timeout: float = 25) -> tuple[M, R]:
    m = ctx.machine()
    setup(m)
    r = m.run("--install-completion", shell, timeout=timeout)
    sane(r, rcs)
    if r.rc != 0:
        one_line(r)
    no_raw_controls(r.err, "the error")
    _sourced_scripts_exist(m, m.home / ".bashrc")
    if keep:
        keep(m)
    return m, r


def _mk(path: Path, kind: str, text: str = "mine\n") -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if kind == "dir":
        path.mkdir()
    elif kind == "fifo":
        os.mkfifo(path)
    else:
        path.write_text(text)


@case("home", limit=45)
def zshrc_is_a_folder(ctx: Ctx) -> None:
    home_case(ctx, lambda m: _mk(m.home / ".zshrc", "dir"), "zsh",
              keep=lambda m: expect((m.home / ".zshrc").is_dir(), "the folder .zshrc was replaced"))


@case("home", limit=45)
def fish_completions_folder_is_a_file(ctx: Ctx) -> None:
    home_case(ctx, lambda m: _mk(m.home / ".config" / "fish" / "completions", "file"), "fish",
              keep=lambda m: expect((m.home / ".config/fish/completions").read_text() == "mine\n", "changed"))


@case("home", limit=45)
def fish_completion_file_is_a_fifo(ctx: Ctx) -> None:
    home_case(ctx, lambda m: _mk(m.home / ".config/fish/completions/cudnn-doctor.fish", "fifo"), "fish")


@case("home", limit=45)
def zfunc_is_a_fifo(ctx: Ctx) -> None:
    home_case(ctx, lambda m: _mk(m.home / ".zfunc", "fifo"), "zsh")


@case("home", limit=45)
def zshrc_is_a_fifo(ctx: Ctx) -> None:
    home_case(ctx, lambda m: _mk(m.home / ".zshrc", "fifo"), "zsh",
              keep=lambda m: expect(stat.S_ISFIFO((m.home / ".zshrc").lstat().st_mode), "the FIFO was replaced"))


@case("home")
def bashrc_dangling_symlink_kept(ctx: Ctx) -> None:
    def setup(m: M) -> None:
        (m.base / "dotfiles").mkdir()
        (m.home / ".bashrc").symlink_to(m.base / "dotfiles" / "bashrc-not-yet")

    home_case(ctx, setup, keep=lambda m: expect((m.home / ".bashrc").is_symlink(),
                                                "the user's .bashrc link was replaced by a file"))


@case("home")
def bashrc_thirty_megabytes_kept(ctx: Ctx) -> None:
    blob = (b"# " + b"y" * 998 + b"\n") * 30000 + b"alias ll='ls -l'"

    def setup(m: M) -> None:
        (m.home / ".bashrc").write_bytes(blob)

    def keep(m: M) -> None:
        data = (m.home / ".bashrc").read_bytes()
        expect(data.startswith(blob), "the user's 30 MB .bashrc lost bytes")
        expect(data.count(b"cudnn-doctor") <= 2, "lines added more than once")
    m, r = home_case(ctx, setup, keep=keep, timeout=40)
    expect(r.secs < 20, f"took {r.secs:.0f} s")


@case("home")
def home_on_a_full_disk(ctx: Ctx) -> None:
    import shlex
    m = ctx.machine()
    o = m.base / "o"
    (o / "copy").mkdir(parents=True)
    h, oq = shlex.quote(str(m.home)), shlex.quote(str(o))
    script = (f"set -e; mount -t tmpfs -o size=64k tmpfs {h}; printf '# mine\\n' > {h}/.bashrc; "
              f"dd if=/dev/zero of={h}/fill bs=4k count=100 2>/dev/null || true; set +e; "
              f"{shlex.join(m.argv('--install-completion', 'bash'))} >{oq}/out 2>{oq}/err; echo $? >{oq}/rc; "
              f"cp -a {h}/. {oq}/copy/ 2>/dev/null; rm -f {oq}/copy/fill; true")
    if os.geteuid() != 0:
        raise Skip("needs root")
    run_proc(["unshare", "-m", "--propagation", "private", "sh", "-c", script], m.env, m.cwd, 30)
    r = R(int((o / "rc").read_text() or 99), (o / "out").read_bytes(), (o / "err").read_bytes(), 0)
    sane(r, (0, 2))
    if r.rc != 0:
        one_line(r)
    text = (o / "copy" / ".bashrc").read_text(errors="replace")
    expect(text.startswith("# mine\n"), f".bashrc lost the user's line on a full disk: {text[:80]!r}")
    full = m.run("--show-completion", "bash", timeout=20).outb
    script_file = o / "copy" / ".bash_completions" / "cudnn-doctor.sh"
    if "cudnn-doctor" in text:
        expect(script_file.is_file() and script_file.stat().st_size >= len(full) - 64,
               f".bashrc names a completion script cut short on a full disk: {r!r}")


@case("home")
def file_size_limit_zero(ctx: Ctx) -> None:
    m = ctx.machine()
    (m.home / ".bashrc").write_text("# mine\n")
    r = m.bash(f"ulimit -S -f 0 && exec {m.doctor_line('--install-completion', 'bash')}", timeout=25)
    sane(r, (0, 2))
    if r.rc != 0:
        one_line(r)
    expect((m.home / ".bashrc").read_text().startswith("# mine\n"), ".bashrc lost the user's line")
    _sourced_scripts_exist(m, m.home / ".bashrc")


@case("home")
def installs_at_once_one_line(ctx: Ctx) -> None:
    """Four installs at once into a fresh home, eight rounds (a race shows in some round): one line in .bashrc."""
    for k in range(8):
        m = ctx.machine(f"m{k}")
        (m.home / ".bashrc").write_text("# mine\n")
        procs = [subprocess.Popen(m.argv("--install-completion", "bash"), env=m.env, cwd=str(m.cwd),
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
                 for _ in range(4)]
        for p in procs:
            out, err = p.communicate(timeout=30)
            sane(R(p.returncode, out, err, 0), (0, 2))
        text = (m.home / ".bashrc").read_text()
        expect(text.startswith("# mine\n"), "the user's line lost")
        n = sum(1 for line in text.splitlines() if "cudnn-doctor" in line and not line.lstrip().startswith("#"))
        expect(n == 1, f"four installs at once (round {k + 1}) left {n} lines for cudnn-doctor in .bashrc: {text!r}")
        _sourced_scripts_exist(m, m.home / ".bashrc")


@case("home")
def home_that_does_not_exist(ctx: Ctx) -> None:
    m = ctx.machine()
    m.env["HOME"] = str(m.base / "gone" / "home")
    r = m.run("--install-completion", "zsh", timeout=20)
    sane(r, (0, 2))
    if r.rc != 0:
        one_line(r)


@case("home")
def home_with_newline_and_quotes(ctx: Ctx) -> None:
    m = ctx.machine()
    home = m.base / "h\n;touch P;'\"x $USER"
    home.mkdir()
    m.env["HOME"] = str(home)
    r = m.run("--install-completion", "bash", timeout=20)
    sane(r, (0, 2))
    if r.rc != 0:
        one_line(r)
        return
    b = run_proc(["bash", "--norc", "--noprofile", "-c", 'source "$HOME/.bashrc"; complete -p cudnn-doctor'],
                 {"PATH": "/usr/bin:/bin", "HOME": str(home), "LANG": "C.UTF-8"}, m.base, 20)
    expect(not (m.base / "P").exists() and not (home / "P").exists(), "a command hidden in HOME ran")
    expect(b.rc == 0 and "cudnn-doctor" in b.out, f"said installed, bash does not complete after sourcing: {b!r}")


@case("home")
def shell_name_with_terminal_escape(ctx: Ctx) -> None:
    m = ctx.machine()
    r = m.run("--install-completion", "bash\x1b[2J\x1b]0;x\x07", timeout=20)
    sane(r, (2,))
    one_line(r)
    no_raw_controls(r.err, "the usage error")


@case("home")
def unknown_login_shell_no_argument(ctx: Ctx) -> None:
    m = ctx.machine()
    m.env["SHELL"] = "/usr/bin/xonsh\n"
    r = m.run("--install-completion", timeout=20)
    sane(r, (0, 2))
    if r.rc != 0:
        one_line(r)
        no_raw_controls(r.err, "the error")


def _fake_pwsh(m: M, body: bytes) -> None:
    fake = m.base / "bin"
    fake.mkdir(exist_ok=True)
    (fake / "pwsh").write_bytes(b"#!/bin/sh\n" + body)
    (fake / "pwsh").chmod(0o755)
    m.env["PATH"] = f"{fake}:{m.env['PATH']}"


def pwsh_case(ctx: Ctx, body: bytes) -> None:
    m = ctx.machine()
    _fake_pwsh(m, body)
    before = set(os.listdir(m.cwd))
    r = m.run("--install-completion", "powershell", timeout=30)
    sane(r, (0, 2))
    if r.rc != 0:
        one_line(r)
    no_raw_controls(r.err + r.out, "the output")
    new = set(os.listdir(m.cwd)) - before
    expect(not new, f"files written outside the home, in the working folder: {sorted(new)}")


family("home", "pwsh_answers", {
    "binary_garbage": b"printf '\\377\\376\\000garbage\\033[2J'\n",
    "exit_1_with_words": b"echo 'pwsh: cannot start' >&2; exit 1\n",
    "relative_path": b"echo 'profile.ps1'\n",
    "ten_megabytes": b"head -c 10000000 /dev/zero | tr '\\0' 'a'\n",
    "two_lines": b"echo \"$HOME/Documents/PowerShell/a.ps1\"; echo '/etc/cron.d/zz'\n",
}, pwsh_case)


@case("home")
def show_completion_to_a_full_disk(ctx: Ctx) -> None:
    m = ctx.machine()
    r = m.bash(f"exec {m.doctor_line('--show-completion', 'zsh')} >/dev/full", timeout=20)
    sane(r, (74,))
    one_line(r)


@case("home")
def refused_bashrc_fix_line_in_hostile_home_runs_nothing(ctx: Ctx) -> None:
    m = ctx.machine()
    home = m.base / "h $(touch P) `touch P` ;touch P"
    home.mkdir()
    os.mkfifo(home / ".bashrc")
    m.env["HOME"] = str(home)
    r = m.run("--install-completion", "bash", timeout=25)
    sane(r, (0, 2))
    text = r.err + r.out
    mt = re.search(r"yourself: (.*?)\)?$", text.strip(), re.M)
    if not mt:
        return
    line = mt.group(1)
    b = run_proc(["bash", "--norc", "--noprofile", "-c", line], {"PATH": "/usr/bin:/bin", "HOME": str(home)},
                 m.base, 20)
    expect(not (m.base / "P").exists() and not (home / "P").exists(),
           f"the line the user is told to add runs a command hidden in HOME: {line!r}")
    del b


def xdg_case(ctx: Ctx, arg: tuple[str, str, str]) -> None:
    shell, var, value = arg
    m = ctx.machine()
    cwd = m.base / "cwd"
    cwd.mkdir()
    m.cwd = cwd
    if value == "{FIFO}":
        (m.base / "zd").mkdir()
        os.mkfifo(m.base / "zd" / ".zshrc")
        value = str(m.base / "zd")
    elif value == "{FILE}":
        (m.base / "cfgfile").write_text("mine\n")
        value = str(m.base / "cfgfile")
    m.env[var] = value
    r = m.run("--install-completion", shell, timeout=25)
    sane(r, (0, 2))
    if r.rc != 0:
        one_line(r)
    no_raw_controls(r.err, "the error")
    expect(not any(cwd.iterdir()), f"files written relative to the working folder: {sorted(os.listdir(cwd))}")
    if (m.base / "cfgfile").exists():
        expect((m.base / "cfgfile").read_text() == "mine\n", "the user's file was changed")


family("home", "config_dir", {
    "fish_xdg_relative": ("fish", "XDG_CONFIG_HOME", "cfg"),
    "fish_xdg_is_a_file": ("fish", "XDG_CONFIG_HOME", "{FILE}"),
    "fish_xdg_with_newline": ("fish", "XDG_CONFIG_HOME", "/tmp/x\n/y"),
    "zsh_zdotdir_relative": ("zsh", "ZDOTDIR", "zd"),
    "zsh_zdotdir_fifo_zshrc": ("zsh", "ZDOTDIR", "{FIFO}"),
}, xdg_case)


@case("home")
def zsh_installs_at_once_one_line(ctx: Ctx) -> None:
    """As above for zsh's .zshrc (four at once, eight rounds)."""
    for k in range(8):
        m = ctx.machine(f"z{k}")
        (m.home / ".zshrc").write_text("# mine\n")
        procs = [subprocess.Popen(m.argv("--install-completion", "zsh"), env=m.env, cwd=str(m.cwd),
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
                 for _ in range(4)]
        for p in procs:
            out, err = p.communicate(timeout=30)
            sane(R(p.returncode, out, err, 0), (0, 2))
        text = (m.home / ".zshrc").read_text()
        expect(text.startswith("# mine\n"), "the user's line lost")
        lines = [ln for ln in text.splitlines()[1:] if ln.strip() and not ln.lstrip().startswith("#")]
        expect(len(lines) == len(set(lines)), f"four installs at once (round {k + 1}) repeated a line: {text!r}")


# ====================================================================================================================
# 2. fix --shell lines

def _cudnn_off_path(ctx: Ctx, name: str) -> tuple[M, str]:
    m = ctx.machine()
    b = fakes()
    b.fake_nvml(m.base / "driver", driver="580.65.06", cuda=13000)
    m.add_lib(m.base / "driver")
    folder = m.base / name / "lib64"
    b.fake_cudnn(folder, version=91900, cudart=13000, sublibraries=CUDNN9)
    return m, str(folder)


def ps_literal(text: str, pos: int) -> tuple[str, int]:
    quotes = "'\u2018\u2019\u201a\u201b"
    expect(pos < len(text) and text[pos] in quotes, f"no PowerShell literal at {pos}: {text!r}")
    i, out = pos + 1, []
    while True:
        expect(i < len(text), f"unterminated PowerShell literal: {text!r}")
        ch = text[i]
        if ch in quotes:
            if i + 1 < len(text) and text[i + 1] in quotes:
                out.append(text[i + 1])
                i += 2
                continue
            return "".join(out), i + 1
        out.append(ch)
        i += 1


def ps_value(text: str, pos: int) -> tuple[str, int]:
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
        expect(text.startswith(")", i), f"unexpected PowerShell code at {i}: {text!r}")
        return "".join(out), i + 1


def is_comment(line: str, lead: str) -> bool:
    """A comment in words: one printable line; for cmd, nothing that cmd expands inside a rem (%) or continues (^)."""
    if not line.startswith(lead) or not line.isprintable():
        return False
    if lead == "rem " and ("%" in line or line.rstrip().endswith("^") or "\u202e" in line):
        return False
    return True


def judge_cmd(line: str, name: str, value: str) -> None:
    if is_comment(line, "rem "):
        return
    expect(line.isprintable(), f"cmd line with control characters: {line!r}")
    mt = re.fullmatch(r'set "([A-Za-z_]+)=(.*)"', line)
    expect(mt, f"cmd line neither an exact set nor a rem comment in words: {line!r}")
    got = mt.group(2)
    expect('"' not in got and "%" not in got.replace(f"%{mt.group(1)}%", ""), f"cmd would expand or end early: {line!r}")
    expect(got.split(";")[0] == value, f"cmd sets {got!r}, not {value!r}")


def judge_user(line: str, name: str, value: str) -> None:
    if is_comment(line, "# "):
        return
    expect(line.isprintable(), f"user line with control characters: {line!r}")
    head = "[Environment]::SetEnvironmentVariable("
    expect(line.startswith(head), f"user line neither exact nor a comment: {line!r}")
    _, i = ps_literal(line, len(head))
    got, j = ps_value(line, i + 2)
    expect(got.split(";")[0] == value, f"user line sets {got!r}, not {value!r}")
    expect(re.fullmatch(r"( \+ \[Environment\]::GetEnvironmentVariable\('\w+', 'User'\))?, 'User'\)", line[j:]),
           f"code after the literal: {line[j:]!r}")


def judge_ps(line: str, name: str, value: str) -> None:
    if is_comment(line, "# "):
        return
    expect(line.isprintable(), f"PowerShell line with control characters: {line!r}")
    if re.fullmatch(r"Remove-Item (Env:|env:)\w+( -ErrorAction SilentlyContinue)?", line):
        return
    mt = re.match(r"\$env:(\w+) = ", line)
    expect(mt, f"PowerShell line neither exact nor a comment: {line!r}")
    got, j = ps_value(line, mt.end())
    expect(got.split(":")[0].split(";")[0] == value, f"PowerShell sets {got!r}, not {value!r}")
    expect(re.fullmatch(r"( \+ \$\(if \(\$env:\w+\) \{ '[:;]' \+ \$env:\w+ \}\)| \+ \$env:\w+)?", line[j:]),
           f"code after the literal: {line[j:]!r}")


JUDGES = {"cmd": judge_cmd, "user": judge_user, "powershell": judge_ps}


def _env_lines(plan: dict, shell: str) -> list[str]:
    return [x for a in plan.get("actions", []) if a.get("kind") == "env" for x in (a.get("env", {}).get(shell) or [])]


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


def windows_case(ctx: Ctx, arg: tuple[str, str]) -> None:
    shell, name = arg
    m, folder = _cudnn_off_path(ctx, name)
    r = m.run("fix", "--shell", shell, "--search-path", folder, timeout=40)
    sane(r, (0, 1))
    plan = sane(m.run("fix", "--json", "--shell", shell, "--search-path", folder, timeout=40), (0, 1),
                want_json=True) or {}
    lines = _env_lines(plan, shell) + source_lines(r.out)
    expect(lines, f"neither a {shell} line nor a comment for a cuDNN off the loader's path: {r.out[-500:]!r}")
    for line in lines:
        JUDGES[shell](line, "LD_LIBRARY_PATH", folder)
    for line in r.out.splitlines():
        s = line.strip()
        expect(not s.startswith(("touch", "calc", "&", "|")), f"a printed line runs a command: {line!r}")
    no_raw_controls(r.out, f"fix --shell {shell}")
    expect(not (m.cwd / "P").exists(), "a command ran")


WIN_NAMES = {
    "parens_amp": "C (x86)&calc", "double_percent": "%%PATH%%x", "caret_amp": "a^&b", "bang_cd": "x!CD!y",
    "cr_in_name": "cr\rset x=1", "rtl_override": "rtl\u202egnp.exe", "trailing_caret": "trail^",
    "ps_env": "ps$env:USERNAME", "ps_subexpr": "bt`$(calc)$(calc)", "ps_braces": "d${x}@(1)",
}
family("shell", "windows", {f"{s}-{k}": (s, WIN_NAMES[k]) for s, k in [
    ("cmd", "parens_amp"), ("cmd", "double_percent"), ("cmd", "caret_amp"), ("cmd", "bang_cd"),
    ("cmd", "cr_in_name"), ("cmd", "trailing_caret"), ("user", "rtl_override"), ("user", "ps_env"),
    ("powershell", "ps_subexpr"), ("powershell", "ps_braces"), ("powershell", "cr_in_name"),
    ("user", "double_percent")]}, windows_case)

SHELLS = {"bash": ["bash", "--norc", "--noprofile"], "zsh": ["zsh", "-f"], "fish": ["fish", "--no-config"]}


def run_in_shell(shell: str, lines: list[str], base: Path, env: dict) -> dict:
    script = base / f"lines.{shell}"
    script.write_bytes("\n".join(lines).encode("utf-8", "surrogateescape") + b"\n")
    s = run_proc([*SHELLS[shell], "-c", f"source {script}; exec /usr/bin/env -0"], env, base, 20)
    expect(s.rc == 0, f"{shell} failed sourcing the lines: {s!r}")
    return dict(e.split(b"=", 1) for e in s.outb.split(b"\0") if b"=" in e)


def posix_case(ctx: Ctx, arg: tuple[str, str]) -> None:
    shell, name = arg
    m, folder = _cudnn_off_path(ctx, name)
    r = m.run("fix", "--shell", shell, "--search-path", folder, timeout=40)
    sane(r, (0, 1))
    plan = sane(m.run("fix", "--json", "--shell", shell, "--search-path", folder, timeout=40), (0, 1),
                want_json=True) or {}
    lines = _env_lines(plan, shell)
    expect(lines, "no env line")
    for line in lines:
        expect(line.isprintable(), f"a line the terminal does not show as the shell reads it: {line!r}")
        expect(line in [x.strip() for x in r.out.splitlines()], f"fix --shell {shell} does not print it whole: {line!r}")
    env = {"PATH": "/usr/bin:/bin", "HOME": str(m.base), "LANG": "C.UTF-8", "LD_LIBRARY_PATH": "/old/lib"}
    got = run_in_shell(shell, lines, m.base, env).get(b"LD_LIBRARY_PATH")
    expect(not (m.base / "P").exists() and not (m.cwd / "P").exists(), f"{shell} ran a command in the folder name")
    expect(got == os.fsencode(folder) + b":/old/lib", f"{shell} set LD_LIBRARY_PATH={got!r}")


POSIX_NAMES = {"tilde": "~root", "glob": "g*[a]?", "brace": "b{a,c}d", "fish_paren": "f(touch P)x",
               "quotes": "sq'dq\"$(touch P)", "history": "x!!y!$", "dollar": "d$HOME${PATH}",
               "line_sep": "u\u00e9\u2028v", "bad_utf8": "z\udcff\udc80", "backslash_n": "a\\nb\\"}
family("shell", "posix", {f"{s}-{k}": (s, POSIX_NAMES[k]) for s, k in [
    ("bash", "tilde"), ("zsh", "glob"), ("fish", "brace"), ("fish", "fish_paren"), ("zsh", "quotes"),
    ("bash", "history"), ("fish", "dollar"), ("bash", "line_sep"), ("zsh", "bad_utf8"), ("fish", "backslash_n")]},
    posix_case)


def _stub(ctx: Ctx) -> Path:
    return fakes().fake_libcuda(ctx.work / "stubs", status=34, file_name="libcuda.so").resolve()


def preload_removal_case(ctx: Ctx, shell: str) -> None:
    """A link stub preloaded between two hostile neighbours: the plan's line removes the stub, keeps the others."""
    stub = _stub(ctx)
    m = ctx.machine()
    gpu_machine(ctx, m)
    odd = m.base / "o'q$(touch P)`touch P`"
    odd.mkdir()
    shutil.copyfile(cc("libnoop.so", "void rt_noop(void) {}\n"), odd / "libnoop.so")
    value = f"{odd}/libnoop.so:{stub} {odd}/libnoop.so"
    plan = sane(m.run("fix", "--json", "--shell", shell, env={"LD_PRELOAD": value}), (0, 1), want_json=True) or {}
    lines = _env_lines(plan, shell)
    expect(lines, f"no {shell} line for a link stub in LD_PRELOAD: {[a.get('kind') for a in plan.get('actions', [])]}")
    if shell in JUDGES:
        for line in lines:
            expect(line.isprintable() and not re.search(r"touch P(?![^']*')", line) or is_comment(line, "# "),
                   f"{shell} line: {line!r}")
        return
    env = {"PATH": "/usr/bin:/bin", "HOME": str(m.base), "LANG": "C.UTF-8", "LD_PRELOAD": value}
    got = run_in_shell(shell, lines, m.base, env).get(b"LD_PRELOAD", b"")
    expect(not (m.base / "P").exists(), "a command ran")
    expect(os.fsencode(str(stub)) not in got, f"{shell}: the stub is still preloaded: {got!r}")
    expect(got.count(b"libnoop.so") == 2, f"{shell}: the user's other preloads were lost: {got!r}")


family("shell", "preload_stub_removed", {s: s for s in ("bash", "zsh", "fish", "powershell")}, preload_removal_case)


def cvd_lines_case(ctx: Ctx, shell: str) -> None:
    m = ctx.machine()
    gpu_machine(ctx, m)
    m.env["CUDA_VISIBLE_DEVICES"] = "1,9,\u0660"
    r = m.run("fix", "--shell", shell)
    sane(r, (0, 1))
    no_raw_controls(r.out, "the plan")
    plan = sane(m.run("fix", "--json", "--shell", shell), (0, 1), want_json=True) or {}
    lines = _env_lines(plan, shell) + ([] if shell == "fish" else source_lines(r.out))
    for line in lines:
        if shell in JUDGES:
            expect(line.isascii() and line.isprintable(), f"{shell} line: {line!r}")
            if shell == "cmd":
                expect(is_comment(line, "rem ") or re.fullmatch(r'set "CUDA_VISIBLE_DEVICES=[0-9,]*"', line),
                       f"cmd line neither exact nor a comment: {line!r}")
    if shell not in JUDGES:
        env = {"PATH": "/usr/bin:/bin", "HOME": str(m.base), "LANG": "C.UTF-8", "CUDA_VISIBLE_DEVICES": "1,9,\u0660"}
        got = run_in_shell(shell, lines, m.base, env).get(b"CUDA_VISIBLE_DEVICES")
        expect(got is None or re.fullmatch(rb"[0-9,]*", got), f"{shell} leaves CUDA_VISIBLE_DEVICES={got!r}")


family("shell", "cuda_visible_devices_line", {s: s for s in ("fish", "cmd", "user")}, cvd_lines_case)


def printed_commands_case(ctx: Ctx, args: tuple) -> None:
    """Every printed line that reads as a command, run by bash with the programs it names recorded, not run:
    nothing the user typed into a value runs."""
    m = ctx.machine()
    gpu_machine(ctx, m)
    r = m.run(*args, timeout=40)
    sane(r, (0, 1, 2))
    rec = m.base / "ran"
    stubs = "; ".join(f"{n}() {{ :; }}" for n in ("cudnn-doctor", "pip", "pip3", "ldd", "docker", "python", "python3",
                                                   "conda", "nvidia-smi", "sudo", "apt-get", "apt", "ulimit",
                                                   "wsl", "export_", "unset_"))
    for line in (r.out + "\n" + r.err).splitlines():
        s = line.strip()
        for lead in ("Fix:", "fix:", "$", "(fix:"):
            if s.startswith(lead):
                s = s[len(lead):].strip()
        if not re.match(r"(cudnn-doctor|pip3? |ldd |docker |python3? |export |unset |conda )", s):
            continue
        b = run_proc(["bash", "--norc", "-c", f"{stubs}; {s}"], {"PATH": "/usr/bin:/bin", "HOME": str(m.base)},
                     m.base, 15)
        expect(not (m.base / "P").exists() and not (m.cwd / "P").exists() and not rec.exists(),
               f"a printed line runs a command the user did not ask for: {s!r}")
        del b


family("shell", "printed_commands", {
    "explain_unknown_message": ("explain", "--offline-only", "weird error $(touch P) `touch P`; touch P"),
    "compat_unknown_framework": ("compat", "torchx$(touch P)==1.0"),
    "check_framework_hostile": ("check", "--framework", "tensorflow==2.15.0;touch P"),
    "install_version_hostile": ("install", "--version", "9.19.0$(touch P)", "--dry-run"),
    "image_reference_hostile": ("image", "127.0.0.1:1/a$(touch P):b`touch P`"),
    "require_hostile": ("check", "--require", "cudnn>=9.1$(touch P)"),
}, printed_commands_case)


# ====================================================================================================================
# 3. the probes' answers vs what the user's environment loads

NOISY_C = r"""
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <pthread.h>
#include <fcntl.h>
static void big(int fd, size_t n) { char b[4096]; memset(b, 'z', sizeof b); while (n) { size_t k = n < sizeof b ? n : sizeof b; if (write(fd, b, k) <= 0) return; n -= k; } }
#ifdef ATFORK
static void in_child(void) { fputs("child says hi\n", stdout); fflush(stdout); }
#endif
__attribute__((constructor)) static void at_load(void) {
    /* the doctor's own children only (CUDNN_DOCTOR_CHILD_TOKEN marks them): the doctor itself keeps its stdout */
    if (!getenv("CUDNN_DOCTOR_CHILD_TOKEN")) return;
#ifdef STDERR_ONLY
    fputs("preload: hello on stderr\n", stderr);
#endif
#ifdef CLOSE_STDOUT
    close(1);
#endif
#ifdef DUP_STDERR
    dup2(2, 1); puts("now stdout is stderr");
#endif
#ifdef BAD_UTF8
    fputs("\xff\xfe\xc3(\x80 {\"not\": json}\n", stdout); fflush(stdout);
#endif
#ifdef DAEMON
    if (fork() == 0) { setsid(); sleep(45); _exit(0); }
#endif
#ifdef ANSWER_FD
    const char *fd = getenv("CUDNN_DOCTOR_ANSWER_FD");
    if (fd) { dprintf(atoi(fd), "{\"garbage\": true}\n"); }
#endif
#ifdef ATFORK
    pthread_atfork(NULL, NULL, in_child);
#endif
#ifdef NONBLOCK
    fcntl(1, F_SETFL, fcntl(1, F_GETFL) | O_NONBLOCK); big(1, 200000);
#endif
}
__attribute__((destructor)) static void at_exit_(void) {
    if (!getenv("CUDNN_DOCTOR_CHILD_TOKEN")) return;
#ifdef BIG_AT_EXIT
    big(1, 1 << 20);
#endif
}
"""


def noisy(ctx: Ctx, *flags: str) -> Path:
    return cc("libnoisy.so", NOISY_C, [f"-D{f}" for f in flags] + ["-lpthread"])


def _check_pair(ctx: Ctx, preload: str, deep: bool = False) -> tuple[dict, dict, R]:
    m = ctx.machine()
    gpu_machine(ctx, m)
    args = ["check", "--json"] + (["--deep"] if deep else [])
    base = sane(m.run(*args, timeout=45), (0, 1), want_json=True) or {}
    r = m.run(*args, timeout=45, env={"LD_PRELOAD": preload})
    pre = sane(r, (0, 1), want_json=True, lenient=True) or {}
    return base, pre, r


def same_verdict(base: dict, pre: dict, what: str) -> None:
    expect("CD104" not in codes(pre) or "CD104" in codes(base), f"{what} made a healthy NVML probe 'garbage' (CD104)")
    expect(not re.search(r"\breboot\b", all_fix_text(pre), re.I) or re.search(r"\breboot\b", all_fix_text(base), re.I),
           f"advice to reboot because of {what}")
    lost = {c for c in codes(base) - codes(pre) if c}
    new = {c for c in codes(pre) - codes(base) if c and c.startswith(("CD1", "CD9"))}
    expect(not lost and not new - {"CD117", "CD118", "CD119"}, f"{what} changed the findings: lost {lost}, new {new}")
    expect(pre["summary"]["exit_code"] == base["summary"]["exit_code"], f"{what} changed the exit code")


def noisy_case(ctx: Ctx, flags: tuple[str, ...]) -> None:
    lib = noisy(ctx, *flags)
    base, pre, r = _check_pair(ctx, str(lib))
    same_verdict(base, pre, f"a preload ({', '.join(flags)})")
    expect(r.secs < 30, f"took {r.secs:.0f} s with the preload")


family("probe", "preload", {
    "stderr_only": ("STDERR_ONLY",), "closes_stdout": ("CLOSE_STDOUT",), "stdout_is_stderr": ("DUP_STDERR",),
    "invalid_utf8_lookalike": ("BAD_UTF8",), "daemon_holds_pipes": ("DAEMON",), "megabyte_at_exit": ("BIG_AT_EXIT",),
    "prints_in_every_fork_child": ("ATFORK",), "nonblocking_flood": ("NONBLOCK",),
}, noisy_case)


@case("probe")
def preload_writes_on_the_answer_descriptor(ctx: Ctx) -> None:
    lib = noisy(ctx, "ANSWER_FD")
    base, pre, r = _check_pair(ctx, str(lib))
    expect(not re.search(r"\breboot\b", all_fix_text(pre), re.I), "advice to reboot for a preload's garbage")
    expect(pre["summary"]["exit_code"] in (0, 1), "bad exit code")


@case("probe")
def fix_yes_with_daemon_preload(ctx: Ctx) -> None:
    lib = noisy(ctx, "DAEMON", "BAD_UTF8")
    m = ctx.machine()
    gpu_machine(ctx, m)
    b = fakes()
    folder = m.base / "cud" / "lib"
    b.fake_cudnn(folder, version=91900, cudart=13000, sublibraries=CUDNN9)
    r = m.run("fix", "--yes", "--json", "--search-path", str(folder), timeout=55, env={"LD_PRELOAD": str(lib)})
    data = sane(r, (0, 1), want_json=True, lenient=True) or {}
    after = data.get("after") or {}
    expect("error" not in after, f"the check after fix --yes failed: {str(after)[:300]}")
    expect("CD104" not in (after.get("codes") or []), "CD104 after fix --yes from a noisy preload")
    expect(r.secs < 45, f"fix --yes took {r.secs:.0f} s")


def split_case(ctx: Ctx, arg: tuple[str, bool]) -> None:
    """ld.so splits LD_PRELOAD at spaces and colons only. TEMPLATE puts the stub S and a harmless library O."""
    template, loaded = arg
    stub = _stub(ctx)
    m = ctx.machine()
    gpu_machine(ctx, m)
    other = noisy(ctx, "STDERR_ONLY")
    if "{D}" in template:
        odd = m.base / "x:y"
        odd.mkdir()
        shutil.copyfile(stub, odd / "libcuda.so")
    value = template.replace("{S}", str(stub)).replace("{O}", str(other)).replace("{D}", str(m.base / "x:y"))
    rep = sane(m.run("check", "--json", env={"LD_PRELOAD": value}), (0, 1), want_json=True, lenient=True) or {}
    hit = [f for f in rep["findings"] if f["code"] == "CD111" and "LD_PRELOAD" in json.dumps(f)]
    if loaded:
        expect(hit, f"the stub ld.so loads from LD_PRELOAD={value!r} was not named: {sorted(codes(rep))}")
    else:
        expect(not hit, f"blamed LD_PRELOAD for a stub ld.so does not load from {value!r}")


family("probe", "ld_preload_split", {
    "leading_trailing_colons": ("::{S}::", True), "many_spaces": ("   {O}    {S}   ", True),
    "missing_entry_first": ("/nonexistent/libnothere.so {S}", True), "colon_inside_folder": ("{D}/libcuda.so", False),
    "newline_joins_names": ("{O}\n{S}", False), "vertical_tab_joins": ("{O}\x0b{S}", False),
}, split_case)

CUDA_WRAP = r"""
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <signal.h>
#define cuInit real_cuInit
#define cuDeviceGetCount real_cuDeviceGetCount
#define cuDeviceGetName real_cuDeviceGetName
#define cuDriverGetVersion real_cuDriverGetVersion
#include "%(src)s"
#undef cuInit
#undef cuDeviceGetCount
#undef cuDeviceGetName
#undef cuDriverGetVersion
int cuInit(unsigned int flags) {
#if MODE == 1
    for (int fd = 3; fd < 1024; fd++) close(fd);
#elif MODE == 2
    if (fork() == 0) { sleep(60); _exit(0); }
#elif MODE == 3
    printf("cuInit: {\"ok\": false}\n"); fflush(stdout);
#elif MODE == 4
    sleep(2);
#elif MODE == 5
    raise(SIGKILL);
#elif MODE == 8
    exit(3);
#endif
    return real_cuInit(flags);
}
int cuDeviceGetCount(int *count) {
#if MODE == 6
    raise(SIGSEGV);
#endif
    return real_cuDeviceGetCount(count);
}
int cuDeviceGetName(char *name, int length, int device) {
#if MODE == 7
    for (;;) pause();
#endif
    return real_cuDeviceGetName(name, length, device);
}
int cuDriverGetVersion(int *v) {
#if MODE == 9
    abort();
#endif
    return real_cuDriverGetVersion(v);
}
"""
CUDA_MODES = {"closes_every_descriptor": (1, True), "forks_a_child_holding_pipes": (2, False),
              "prints_on_stdout_then_works": (3, False), "slow_two_seconds_then_works": (4, False),
              "sigkill_itself": (5, True), "count_segfaults": (6, True), "name_hangs": (7, True),
              "exit_3_in_cuinit": (8, True), "driver_version_aborts": (9, True)}


def cuda_case(ctx: Ctx, arg: tuple[int, bool]) -> None:
    mode, broken = arg
    src = ctx.tree / "tests" / "fakes" / "fake_libcuda.c"
    lib = cc("libcuda.so.1", CUDA_WRAP % {"src": src},
             [f"-DMODE={mode}", "-DFAKE_DRIVER_CUDA=13000", "-DFAKE_CUDA_DEVICES=2", '-DFAKE_CUDA_NAME="GPU"',
              "-DFAKE_CC_MAJOR=9", "-DFAKE_CC_MINOR=0", "-DFAKE_CUDA_STATUS=0", "-DFAKE_CUDA_REVERSED=0",
              "-Wl,-soname,libcuda.so.1"])
    m = ctx.machine()
    gpu_machine(ctx, m, libcuda_path=lib)
    m.env["CUDNN_DOCTOR_PROBE_TIMEOUT"] = "6"
    r = m.run("check", "--json", "--deep", timeout=50)
    rep = sane(r, (0, 1), want_json=True) or {}
    expect(r.secs < 40, f"took {r.secs:.0f} s (probe timeout 6 s)")
    driverish = [f for f in rep["findings"] if str(f.get("code", "")).startswith("CD1")
                 and f.get("severity") in ("error", "warning")]
    if broken:
        expect(driverish, f"a CUDA driver that misbehaves ({mode}) is no finding: {sorted(codes(rep))}")
    else:
        expect(not driverish, f"a working CUDA driver ({mode}) got a driver finding: "
                              f"{[(f['code'], f['title']) for f in driverish]}")


family("probe", "cuda_driver", CUDA_MODES, cuda_case, limit=60)


NOISY2_C = r"""
#include <stdlib.h>
#include <unistd.h>
#include <fcntl.h>
__attribute__((constructor)) static void at_load(void) {
    if (!getenv("CUDNN_DOCTOR_CHILD_TOKEN")) return;
#ifdef STDOUT_FULL
    int fd = open("/dev/full", O_WRONLY); if (fd >= 0) dup2(fd, 1);
#endif
#ifdef CLOSE_STDERR
    close(2);
#endif
#ifdef CLOSE_STDIN
    close(0);
#endif
#ifdef CHDIR_GONE
    chdir("/proc/self/fdinfo");
#endif
#ifdef UMASK_ALL
    umask(0777);
#endif
}
"""
family("probe", "preload_fds", {
    "stdout_is_dev_full": ("STDOUT_FULL",), "stderr_closed": ("CLOSE_STDERR",), "stdin_closed": ("CLOSE_STDIN",),
    "chdir_elsewhere": ("CHDIR_GONE",), "umask_everything": ("UMASK_ALL",),
}, lambda ctx, flags: (lambda lib: (lambda res: same_verdict(res[0], res[1], f"a preload ({flags[0]})"))(
    _check_pair(ctx, str(lib))))(cc("libnoisy2.so", NOISY2_C, [f"-D{f}" for f in flags])))


NOISY3_C = r"""
#include <stdlib.h>
#include <unistd.h>
#include <fcntl.h>
__attribute__((constructor)) static void at_load(void) {
    if (!getenv("CUDNN_DOCTOR_CHILD_TOKEN")) return;
#ifdef STDOUT_READ_ONLY
    int fd = open("/dev/null", O_RDONLY); if (fd >= 0) dup2(fd, 1);
#endif
#ifdef CLOSE_BOTH
    close(1); close(2);
#endif
}
"""
family("probe", "preload_stdio", {"stdout_read_only": ("STDOUT_READ_ONLY",), "stdout_and_stderr_closed": ("CLOSE_BOTH",)},
       lambda ctx, flags: (lambda lib: (lambda res: same_verdict(res[0], res[1], f"a preload ({flags[0]})"))(
           _check_pair(ctx, str(lib))))(cc("libnoisy3.so", NOISY3_C, [f"-D{f}" for f in flags])))


# ====================================================================================================================
# 4. values from the environment, in every output format

def cvd_case(ctx: Ctx, value: str) -> None:
    m = ctx.machine()
    gpu_machine(ctx, m)
    m.env["CUDA_VISIBLE_DEVICES"] = value
    rep = sane(m.run("check", "--json"), (0, 1), want_json=True) or {}
    t = m.run("check")
    sane(t, (0, 1))
    no_raw_controls(t.out, "the text report")
    plan = sane(m.run("fix", "--json"), (0, 1), want_json=True) or {}
    for line in _env_lines(plan, "bash"):
        if "CUDA_VISIBLE_DEVICES" in line:
            expect(line.isascii() and line.isprintable(), f"the treatment writes a value CUDA does not read: {line!r}")
    done = sane(m.run("fix", "--yes", "--json", timeout=50), (0, 1), want_json=True) or {}
    after = set((done.get("after") or {}).get("codes") or [])
    expect(not after & {"CD113", "CD114"}, f"the CUDA_VISIBLE_DEVICES finding survives fix --yes: {after}, "
                                           f"before {sorted(codes(rep))}")


family("envval", "cvd", {
    "arabic_zero": "\u0660", "uuid_superscript": "GPU-\u00b2", "mig_arabic": "MIG-\u0661", "empty_entry": "0,,1",
    "repeated": "1,0,1", "out_of_range": "2", "nbsp_inside": "0\u00a01", "hex": "0x1", "combining_mark": "1\u0301",
    "double_struck_one": "\U0001d7d9", "newline_inside": "1\n0", "thai_digits": "\u0e51,\u0e50",
}, cvd_case)


def _torch_env(ctx: Ctx, m: M) -> None:
    from tests.test_frameworks import install_torch  # type: ignore
    site = m.base / "venv" / "lib" / "python3.12" / "site-packages"
    site.mkdir(parents=True)
    (m.base / "venv" / "bin").mkdir()
    (m.base / "venv" / "bin" / "python3").write_text("#!/bin/sh\n")
    m.env["PATH"] = f"{m.base / 'venv' / 'bin'}:{m.env['PATH']}"
    install_torch(site)


def alloc_case(ctx: Ctx, value: str) -> None:
    m = ctx.machine()
    gpu_machine(ctx, m, gpus=1)
    _torch_env(ctx, m)
    m.env["PYTORCH_CUDA_ALLOC_CONF"] = value
    outs = []
    for args in (("check",), ("check", "--format", "markdown"), ("fix",), ("check", "--format", "github")):
        r = m.run(*args)
        sane(r, (0, 1))
        no_raw_controls(r.out, " ".join(args))
        outs.append(r.out)
        lines = r.out.splitlines()
        for i, line in enumerate(lines):
            s = line.strip().lstrip("`$ ")
            expect(not re.match(r"(touch|id\b|rm -rf|curl)", s), f"a printed line runs a command ({args}): {line!r}")
            if s.startswith("why:") and i + 1 < len(lines):
                nxt = lines[i + 1].strip()
                expect(not re.match(r"`?(touch|id|rm|curl)", nxt), f"why: put a command on a line of its own: {nxt!r}")
    plan = sane(m.run("fix", "--json"), (0, 1), want_json=True) or {}
    for line in _env_lines(plan, "bash"):
        expect(line in outs[2], f"the env line is not printed whole: {line!r}")
        b = run_proc(["bash", "--norc", "-c", line + "; printf %s \"${PYTORCH_CUDA_ALLOC_CONF-UNSET}\""],
                     {"PATH": "/usr/bin:/bin"}, m.base, 20)
        expect(b.rc == 0 and not (m.base / "P").exists(), f"the env line ran something: {line!r}")
    from markdown_it import MarkdownIt
    tokens = MarkdownIt("commonmark").enable("table").parse(outs[1])
    for tok in tokens:
        for child in [tok, *(tok.children or [])]:
            if child.type == "code_inline":
                expect(not re.search(r"(touch P|\bid)\s*$", child.content) or "`" not in value,
                       f"a code span ends at the value's backtick: {child.content!r}")
            expect(child.type not in ("html_inline", "html_block") or "<!--" not in value,
                   f"the value made HTML in the markdown: {child.content!r}")
    expect(not (m.cwd / "P").exists(), "a command ran")


family("envval", "allocator", {
    "double_backticks": "expandable_segments:True,``touch P``,max_split_size_mb:64",
    "backtick_in_brackets": "roundup_power2_divisions:[256:1,`touch P`],garbage_collection_threshold:0.6",
    "newline_then_command": "max_split_size_mb:128\n`id`\ntouch P",
    "html_comment": "bogus_key:1<!--,max_split_size_mb:64",
    "cr_overwrite": "bogus:1\r[\u2713] everything fine",
}, alloc_case)


def _crashing_cudnn(ctx: Ctx, name: str) -> tuple[M, str]:
    m = ctx.machine()
    b = fakes()
    b.fake_nvml(m.base / "driver", driver="580.65.06", cuda=13000)
    m.add_lib(m.base / "driver")
    folder = m.base / name / "lib"
    b.fake_cudnn(folder, version=91900, cudart=13000, sublibraries=CUDNN9, crash=True)
    return m, str(folder)


@case("envval")
def text_cursor_and_c1_controls(ctx: Ctx) -> None:
    m, folder = _crashing_cudnn(ctx, "a\rb\x1b[1A\x9b2Jc\x08d")
    for args in (("check",), ("check", "-q"), ("fix",), ("explain", "CD305")):
        r = m.run(*args, "--search-path", folder) if args[0] != "explain" else m.run(*args)
        sane(r, (0, 1))
        no_raw_controls(r.out + r.err, " ".join(args))


@case("envval")
def markdown_html_comment_and_pipes(ctx: Ctx) -> None:
    m, folder = _crashing_cudnn(ctx, "x<!--y|z-->w <b>q")
    r = m.run("check", "--format", "markdown", "--search-path", folder)
    sane(r, (0, 1))
    from markdown_it import MarkdownIt
    for tok in MarkdownIt("commonmark").enable("table").parse(r.out):
        for child in [tok, *(tok.children or [])]:
            expect(child.type not in ("html_inline", "html_block"), f"a folder name made HTML: {child.content[:80]!r}")
    cur = None
    for ln in r.out.splitlines():
        if ln.startswith("|"):
            n = len(re.split(r"(?<!\\)\|", ln.replace("\\\\", "")))
            cur = cur or n
            expect(n == cur, f"a '|' in a value split a table cell: {ln!r}")
        else:
            cur = None


@case("envval")
def github_percent_encoded_newline(ctx: Ctx) -> None:
    m, folder = _crashing_cudnn(ctx, "p%0A::error::pwned%0D%25 r\r::warning::x,y:z")
    r = m.run("check", "--format", "github", "--search-path", folder)
    sane(r, (0, 1))
    for line in r.out.split("\n"):
        if "::" in line:
            expect(not re.search(r"[\x00-\x1f\x7f\x85\u2028\u2029]", line),
                   f"a raw line break or control in an annotation line: {line!r}")
        if line.startswith("::"):
            expect(re.match(r"::(error|warning|notice|group|endgroup|debug)\b", line), f"a value began a command: {line!r}")
            expect("pwned%0D" not in line and "p%0A::" not in line,
                   f"a '%' of the value is not escaped (%25): the runner decodes it: {line!r}")


@case("envval")
def junit_invalid_xml_characters(ctx: Ctx) -> None:
    m, folder = _crashing_cudnn(ctx, "v\x0bf\x0c\ufffe\udcff]]>")
    r = m.run("check", "--format", "junit", "--search-path", folder)
    sane(r, (0, 1))
    try:
        ET.fromstring(r.outb)
    except ET.ParseError as e:
        raise Fail(f"junit output is not XML: {e}") from None
    out = m.base / "j.xml"
    r2 = m.run("check", "--junit-xml", str(out), "--format", "markdown", "--search-path", folder)
    sane(r2, (0, 1))
    try:
        ET.parse(out)
    except (ET.ParseError, OSError) as e:
        raise Fail(f"--junit-xml is not XML: {e}") from None


@case("envval")
def prometheus_invalid_utf8_label(ctx: Ctx) -> None:
    m, folder = _crashing_cudnn(ctx, "l\udcff\u2028\\\"}x")
    out = m.base / "d.prom"
    r = m.run("check", "--format", "prometheus", "-o", str(out), "--search-path", folder)
    sane(r, (0, 1))
    data = out.read_bytes()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise Fail("the prometheus file is not UTF-8 (node_exporter drops it)") from None
    metric = re.compile(r'^[a-zA-Z_:][a-zA-Z0-9_:]*(\{([a-zA-Z_][a-zA-Z0-9_]*="(\\[\\"n]|[^"\\\n])*",?)*\})? '
                        r'[-+0-9.eEnaNInf]+( \d+)?$')
    for line in text.split("\n"):
        if line and not line.startswith("#"):
            expect(metric.match(line), f"a line node_exporter refuses: {line!r}")


@case("envval")
def json_stays_utf8_with_undecodable_names(ctx: Ctx) -> None:
    m, folder = _crashing_cudnn(ctx, "j\udcff\udcfe\u2028\x1f")
    for args in (("check", "--json"), ("fix", "--json"), ("explain", "--json", "CD309")):
        r = m.run(*args, "--search-path", folder) if args[0] != "explain" else m.run(*args)
        sane(r, (0, 1))
        try:
            json.loads(r.outb.decode("utf-8"))
        except (UnicodeDecodeError, ValueError) as e:
            raise Fail(f"{' '.join(args)}: not one strict UTF-8 JSON object: {e}") from None


def usage_format_case(ctx: Ctx, fmt: str) -> None:
    m = ctx.machine()
    r = m.run("check", "--format", fmt, "--require", "cudnn>=9\x1b[2J\u202e\r::error::x")
    sane(r, (2,), want_json=fmt == "json")
    if fmt != "json":
        one_line(r)
    no_raw_controls(r.err + r.out, f"a usage error with --format {fmt}")


family("envval", "usage_error_controls", {f: f for f in ("text", "json", "markdown", "github", "junit",
                                                          "prometheus")}, usage_format_case)


def unicode_setting_case(ctx: Ctx, arg: tuple[tuple, dict]) -> None:
    """A setting written with digits other than 0-9 is a usage error that names it (the house's rule for --cuda,
    --require and versions), never read as another number, never an internal error."""
    args, env = arg
    m = ctx.machine()
    gpu_machine(ctx, m)
    r = m.run(*args, timeout=30, env=env)
    d = sane(r, (2,), want_json="--json" in args) or {}
    text = json.dumps(d) + r.err
    no_raw_controls(r.err, "the usage error")
    expect(re.search(r"digit|0-9|not a|number|version|specifier|takes", text, re.I), f"the error does not say why: {text[:300]}")


family("envval", "unicode_digits", {
    "require_arabic_nine": (("check", "--json", "--require", "cudnn>=\u0669"), {}),
    "require_fullwidth_driver": (("check", "--json", "--require", "driver>=\uff15\uff15\uff10"), {}),
    "select_fullwidth_code": (("check", "--json", "--select", "CD\uff11"), {}),
    "ignore_env_arabic": (("check", "--json"), {"CUDNN_DOCTOR_IGNORE": "CD3\u0660\u0661"}),
    "probe_timeout_devanagari": (("check", "--json"), {"CUDNN_DOCTOR_PROBE_TIMEOUT": "\u0967\u0966"}),
    "install_cuda_superscript": (("install", "--json", "--version", "9.19.0", "--cuda", "\u00b9\u00b2", "--dry-run"), {}),
    "bench_repeats_thai": (("bench", "--json", "--repeats", "\u0e55"), {}),
}, unicode_setting_case)


# ====================================================================================================================
# 5. limits on the doctor itself

LIMIT_WORDS = ("limit", "ulimit", "open files", "memory", "descriptor", "address space", "stack", "process",
               "thread", "cpu time", "file size")


def _small_oci(ctx: Ctx) -> Path:
    i = img()
    config, layers = _good_parts()
    return i.oci_layout(ctx.work / "small-oci", config, layers)


def limit_case(ctx: Ctx, arg: tuple[str, str, tuple, bool]) -> None:
    import shlex
    flag, value, args, as_nobody = arg
    m = ctx.machine()
    gpu_machine(ctx, m)
    args = tuple(str(_small_oci(ctx)) if a == "{OCI}" else a for a in args)
    line = f"ulimit -S {flag} {value} && exec {m.doctor_line(*args)}"
    if as_nobody:
        if shutil.which("runuser") is None or os.geteuid() != 0:
            raise Skip("needs root and runuser")
        p = ctx.work
        while p != Path("/"):
            os.chmod(p, os.stat(p).st_mode | 0o755) if p.is_dir() else None
            p = p.parent
        subprocess.run(["chmod", "-R", "a+rwX", str(ctx.work)], check=False)
        # root never meets RLIMIT_NPROC: run as nobody, in a mount namespace where /root (0700 here) is a tmpfs
        # with the interpreter's folder bound back into it
        pyhome = Path(os.path.realpath(PY)).parents[2]
        ns = (f"set -e; mkdir -p {ctx.work}/py; mount --bind /root {ctx.work}/py; "
              f"mount -t tmpfs -o mode=755 tmpfs /root; "
              f"mkdir -p {pyhome}; mount --bind {ctx.work}/py/{pyhome.relative_to('/root')} {pyhome}; "
              f"exec runuser -u nobody -- bash -c {shlex.quote(line)}")
        r = run_proc(["unshare", "-m", "--propagation", "private", "sh", "-c", ns], m.env, m.cwd, 45)
    else:
        r = m.bash(line, timeout=45)
    for word in BAD_WORDS:
        expect(word not in r.err and word not in r.out, f"{word!r} under ulimit {flag} {value}: {r!r}")
    expect(r.rc in (0, 1, 2), f"exit {r.rc} under ulimit {flag} {value} (README: 2 names the limit; 3 is a bug): {r!r}")
    if "--json" in args:
        d = one_json(r)
        msg = json.dumps(d).lower()
    else:
        msg = r.err.lower()
        if r.rc == 2:
            one_line(r)
    if r.rc == 2:
        expect(any(w in msg for w in LIMIT_WORDS), f"exit 2 without naming the limit: {msg[:300]}")


family("limits", "ulimit", {
    "n8_check_json": ("-n", "8", ("check", "--json"), False),
    "n9_fix_text": ("-n", "9", ("fix",), False),
    "n17_check_deep_json": ("-n", "17", ("check", "--deep", "--json"), False),
    "n20_explain_json": ("-n", "20", ("explain", "--json", "CUDNN_STATUS_EXECUTION_FAILED"), False),
    "n10_image_json": ("-n", "10", ("image", "{OCI}", "--json"), False),
    "n11_compat_json": ("-n", "11", ("compat", "jax==0.4.30", "--cuda", "12.3", "--json"), False),
    "v16M_check_json": ("-v", "16000", ("check", "--json"), False),
    "v50M_fix_text": ("-v", "50000", ("fix",), False),
    "v64M_check_deep_json": ("-v", "64000", ("check", "--deep", "--json"), False),
    "v100M_image_json": ("-v", "100000", ("image", "{OCI}", "--json"), False),
    "v28M_explain_json": ("-v", "28000", ("explain", "--json", "CD301"), False),
    "s128_check_json": ("-s", "128", ("check", "--json"), False),
    "s256_fix_json": ("-s", "256", ("fix", "--json"), False),
    "u1_nobody_check_json": ("-u", "1", ("check", "--json"), True),
    "u4_nobody_check_deep_json": ("-u", "4", ("check", "--deep", "--json"), True),
    "u2_nobody_fix_text": ("-u", "2", ("fix",), True),
    "t1_check_deep_json": ("-t", "1", ("check", "--deep", "--json"), False),
    "n9_nobody_check_json": ("-n", "9", ("check", "--json"), True),
}, limit_case)


def fsize_case(ctx: Ctx, arg: tuple[str, str]) -> None:
    fmt, blocks = arg
    m = ctx.machine()
    gpu_machine(ctx, m)
    out = m.base / f"report.{fmt}"
    old = b"the previous report, whole\n" * 3
    out.write_bytes(old)
    opt = ["--junit-xml", str(out), "--json"] if fmt == "xml" else ["--format", fmt, "-o", str(out)]
    r = m.bash(f"ulimit -S -f {blocks} && exec {m.doctor_line('check', *opt)}", timeout=40)
    for word in BAD_WORDS:
        expect(word not in r.err, f"{word!r}: {r!r}")
    expect(r.rc in (0, 1, 2, 74), f"exit {r.rc}: {r!r}")
    data = out.read_bytes()
    if data != old:
        if fmt in ("json",):
            try:
                json.loads(data)
            except ValueError:
                raise Fail(f"the report file was cut short under ulimit -f {blocks}") from None
        elif fmt in ("junit", "xml"):
            try:
                ET.fromstring(data)
            except ET.ParseError:
                raise Fail(f"the report file was cut short under ulimit -f {blocks}") from None
        else:
            expect(data.endswith(b"\n"), f"the report file was cut short under ulimit -f {blocks}")
    if r.rc == 2 or data == old:
        expect(r.rc != 0 and any(w in r.err.lower() for w in LIMIT_WORDS + ("written",)),
               f"the report was not written and nothing says why: {r!r}")


family("limits", "file_size", {"json_1": ("json", "1"), "junit_2": ("junit", "2"), "markdown_1": ("markdown", "1"),
                               "xml_0": ("xml", "0")}, fsize_case)


def limit_install_case(ctx: Ctx, arg: tuple[str, str]) -> None:
    import shlex
    flag, value = arg
    env, a, prefix, argv = _prepared(ctx, False)
    before = inst().snapshot_content(prefix)
    argv = argv + ["--json"]
    r = run_proc(["bash", "-c", f"ulimit -S {flag} {value} && exec {shlex.join(argv)}"], env, ctx.tree, 50)
    for word in BAD_WORDS:
        expect(word not in r.err and word not in r.out, f"{word!r} under ulimit {flag} {value}: {r!r}")
    expect(r.rc in (0, 1, 2), f"exit {r.rc} under ulimit {flag} {value}: {r!r}")
    d = one_json(r)
    if r.rc != 0:
        expect(user_view(inst().snapshot_content(prefix)) == user_view(before), "the prefix changed")
        expect(any(w in json.dumps(d).lower() for w in LIMIT_WORDS), f"the limit is not named: {json.dumps(d)[:300]}")
    else:
        expect(installed_as_recorded(ctx, prefix) == [], "exit 0 but not one whole install")


family("limits", "install", {"n12": ("-n", "12"), "n16": ("-n", "16"), "v60M": ("-v", "60000"),
                             "v150M": ("-v", "150000")}, limit_install_case)


@case("limits")
def open_files_for_fleet_merge_of_300_reports(ctx: Ctx) -> None:
    m = ctx.machine()
    inv = m.base / "inv"
    inv.mkdir()
    good = _report(ctx)
    for k in range(300):
        (inv / f"n{k:03d}.json").write_bytes(good)
    r = m.bash(f"ulimit -S -n 16 && exec {m.doctor_line('fleet', 'merge', '--json', str(inv))}", timeout=40)
    for word in BAD_WORDS:
        expect(word not in r.err and word not in r.out, f"{word!r}: {r!r}")
    expect(r.rc in (0, 1, 2), f"exit {r.rc}: {r!r}")
    one_json(r)


# ====================================================================================================================
# 6. image against hostile images

def raw_oci(ctx: Ctx, layers: list[tuple[bytes, str]] | None = None, cfg: object = None, man: object = None,
            idx: object = None, extra_blobs: list[bytes] | None = None, name: str = "oci") -> Path:
    """An OCI layout from parts: CFG/MAN/IDX default to good ones around LAYERS; a callable part mutates it."""
    i = img()
    layers = layers if layers is not None else _good_parts()[1]
    try:
        cfg_obj = json.loads(i.config_of({"CUDA_VERSION": "12.8.1"}, layers=layers))
    except (EOFError, OSError, zlib.error):
        cfg_obj = json.loads(i.config_of({"CUDA_VERSION": "12.8.1"}, layers=[]))
    if callable(cfg):
        cfg(cfg_obj)
    cfg_b = cfg if isinstance(cfg, bytes) else json.dumps(cfg_obj).encode()
    man_obj = {"schemaVersion": 2, "mediaType": i.MANIFEST,
               "config": {"mediaType": i.CONFIG, "digest": i.digest(cfg_b), "size": len(cfg_b)},
               "layers": [{"mediaType": t, "digest": i.digest(b), "size": len(b)} for b, t in layers]}
    if callable(man):
        man(man_obj)
    man_b = man if isinstance(man, bytes) else json.dumps(man_obj).encode()
    idx_obj = {"schemaVersion": 2, "mediaType": i.INDEX,
               "manifests": [{"mediaType": i.MANIFEST, "digest": i.digest(man_b), "size": len(man_b)}]}
    if callable(idx):
        idx(idx_obj)
    idx_b = idx if isinstance(idx, bytes) else json.dumps(idx_obj).encode()
    folder = ctx.work / name
    blobs = folder / "blobs" / "sha256"
    blobs.mkdir(parents=True, exist_ok=True)
    for blob in [cfg_b, man_b, *(b for b, _ in layers), *(extra_blobs or [])]:
        (blobs / i.digest(blob).split(":")[1]).write_bytes(blob)
    (folder / "oci-layout").write_text('{"imageLayoutVersion": "1.0.0"}')
    (folder / "index.json").write_bytes(idx_b)
    return folder


def judge_image(ctx: Ctx, target: str, rcs: tuple = (0, 1, 2), seconds: float = 30, mem_mb: int = 400,
                env: dict | None = None, text_too: bool = True) -> dict:
    m = ctx.machine("img")
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    r = m.run("image", target, "--json", timeout=55, env=env)
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    d = sane(r, rcs, want_json=True) or {}
    expect(r.secs < seconds, f"took {r.secs:.1f} s (bound {seconds} s)")
    if peak > before:
        expect(peak / 1024 < mem_mb, f"peak memory {peak / 1024:.0f} MB (bound {mem_mb} MB)")
    expect("root:x:0:0" not in r.out and "root:x:0:0" not in r.err, "a file outside the image reached the output")
    if text_too:
        t = m.run("image", target, timeout=55, env=env)
        sane(t, rcs)
        no_raw_controls(t.out + t.err, "image's text")
        if t.rc == 2:
            one_line(t)
    return d


def _set_path(obj: dict, path: list, value: object) -> None:
    for k in path[:-1]:
        obj = obj[k]
    obj[path[-1]] = value


def json_case(ctx: Ctx, arg: tuple[str, list, object]) -> None:
    part, path, value = arg
    kw = {part: (lambda o: _set_path(o, path, value))}
    judge_image(ctx, str(raw_oci(ctx, **kw)))


family("image", "wrong_json", {
    "index_digest_number": ("idx", ["manifests", 0, "digest"], 12345),
    "index_platform_string": ("idx", ["manifests", 0, "platform"], "linux/amd64"),
    "index_media_type_list": ("idx", ["manifests", 0, "mediaType"], ["a"]),
    "index_size_float": ("idx", ["manifests", 0, "size"], 1.5e300),
    "manifest_schema_string": ("man", ["schemaVersion"], "two"),
    "manifest_layer_null": ("man", ["layers", 0], None),
    "manifest_layer_size_negative": ("man", ["layers", 0, "size"], -1),
    "config_rootfs_string": ("cfg", ["rootfs"], "layers"),
    "config_config_null_env_object": ("cfg", ["config", "Env"], {"CUDA_VERSION": "12.8"}),
    "config_os_number": ("cfg", ["os"], 0),
    "config_labels_nested": ("cfg", ["config", "Labels"], {"com.nvidia.cudnn.version": {"x": [1]}}),
}, json_case)


@case("image")
def config_nested_two_hundred_thousand_deep(ctx: Ctx) -> None:
    deep = b'{"architecture": "amd64", "os": "linux", "config": {"Labels": {"a": ' + b"[" * 200000 + b"]" * 200000 \
        + b'}}, "rootfs": {"type": "layers", "diff_ids": []}}'
    judge_image(ctx, str(raw_oci(ctx, layers=[], cfg=deep)))


@case("image")
def index_json_with_bom_and_nan(ctx: Ctx) -> None:
    i = img()
    folder = raw_oci(ctx)
    idx = json.loads((folder / "index.json").read_text())
    idx["manifests"][0]["size"] = float("nan")
    (folder / "index.json").write_bytes(b"\xef\xbb\xbf" + json.dumps(idx).encode())
    judge_image(ctx, str(folder))
    del i


@case("image")
def manifest_with_duplicate_layers_key(ctx: Ctx) -> None:
    i = img()
    layers = _good_parts()[1]
    config = i.config_of({"CUDA_VERSION": "12.8.1"}, layers=layers)
    good = json.loads(i.manifest_of(config, layers))
    text = json.dumps(good)[:-1] + ', "layers": "sha256:nothing"}'
    judge_image(ctx, str(raw_oci(ctx, layers=layers, cfg=config, man=text.encode())))


@case("image")
def index_nine_mebibytes_of_whitespace(ctx: Ctx) -> None:
    folder = raw_oci(ctx)
    data = (folder / "index.json").read_bytes()
    (folder / "index.json").write_bytes(data[:1] + b" " * (9 << 20) + data[1:])
    judge_image(ctx, str(folder), seconds=20)


@case("image")
def index_thirty_thousand_foreign_platforms(ctx: Ctx) -> None:
    i = img()
    folder = raw_oci(ctx)
    idx = json.loads((folder / "index.json").read_text())
    own = idx["manifests"][0]
    idx["manifests"] = [{"mediaType": i.MANIFEST, "digest": "sha256:" + f"{k:064x}", "size": 100,
                         "platform": {"architecture": "riscv64", "os": "linux"}} for k in range(30000)] + [
        {**own, "platform": {"architecture": "amd64", "os": "linux"}}]
    (folder / "index.json").write_text(json.dumps(idx))
    judge_image(ctx, str(folder), seconds=20)


@case("image")
def nested_indexes_fan_out(ctx: Ctx) -> None:
    """Indexes six deep, each naming the next fifty times, the leaf a manifest of another platform: 50^6 paths."""
    i = img()
    folder = raw_oci(ctx)
    idx = json.loads((folder / "index.json").read_text())
    desc = {**idx["manifests"][0], "platform": {"architecture": "riscv64", "os": "linux"}}
    blobs = folder / "blobs" / "sha256"
    for _ in range(6):
        blob = json.dumps({"schemaVersion": 2, "mediaType": i.INDEX, "manifests": [desc] * 50}).encode()
        (blobs / i.digest(blob).split(":")[1]).write_bytes(blob)
        desc = {"mediaType": i.INDEX, "digest": i.digest(blob), "size": len(blob)}
    idx["manifests"] = [desc]
    (folder / "index.json").write_text(json.dumps(idx))
    judge_image(ctx, str(folder), rcs=(2,), seconds=20)


@case("image")
def config_digest_climbs_out_of_blobs(ctx: Ctx) -> None:
    i = img()
    passwd = Path("/etc/passwd").read_bytes()

    def man(o: dict) -> None:
        o["config"] = {"mediaType": i.CONFIG, "digest": "sha256:../../../../../../../../etc/passwd",
                       "size": len(passwd)}
    judge_image(ctx, str(raw_oci(ctx, man=man)), rcs=(2,))


@case("image")
def layer_digest_sha512_unknown_length(ctx: Ctx) -> None:
    def man(o: dict) -> None:
        o["layers"][0]["digest"] = "sha512:" + "ab" * 64
    judge_image(ctx, str(raw_oci(ctx, man=man)), rcs=(2,))


@case("image")
def config_blob_is_a_folder(ctx: Ctx) -> None:
    i = img()
    folder = raw_oci(ctx)
    idx = json.loads((folder / "index.json").read_text())
    man = json.loads((folder / "blobs" / "sha256" / idx["manifests"][0]["digest"].split(":")[1]).read_bytes())
    p = folder / "blobs" / "sha256" / man["config"]["digest"].split(":")[1]
    p.unlink()
    p.mkdir()
    judge_image(ctx, str(folder), rcs=(2,))
    del i


@case("image")
def layer_blob_links_to_dev_urandom(ctx: Ctx) -> None:
    folder = raw_oci(ctx)
    layers = _good_parts()[1]
    p = folder / "blobs" / "sha256" / img().digest(layers[0][0]).split(":")[1]
    p.unlink()
    p.symlink_to("/dev/urandom")
    judge_image(ctx, str(folder), rcs=(2,), seconds=15)


@case("image")
def two_thousand_layers_of_one_blob(ctx: Ctx) -> None:
    def man(o: dict) -> None:
        o["layers"] = o["layers"] * 2000

    def cfg(o: dict) -> None:
        o["rootfs"]["diff_ids"] = o["rootfs"]["diff_ids"] * 2000
    judge_image(ctx, str(raw_oci(ctx, man=man, cfg=cfg)), rcs=(2,), seconds=20)


@case("image")
def layout_version_ninety_nine_and_no_index_media(ctx: Ctx) -> None:
    folder = raw_oci(ctx)
    (folder / "oci-layout").write_text('{"imageLayoutVersion": 99}')
    judge_image(ctx, str(folder))


def _docker_tar(ctx: Ctx, members: list[tuple[str, bytes | tuple]]) -> Path:
    path = ctx.work / "save.tar"
    with tarfile.open(path, "w") as t:
        for name, data in members:
            info = tarfile.TarInfo(name)
            if isinstance(data, tuple):
                info.type, info.linkname = (tarfile.SYMTYPE if data[0] == "sym" else tarfile.LNKTYPE), data[1]
                t.addfile(info)
            else:
                info.size = len(data)
                t.addfile(info, io.BytesIO(data))
    return path


@case("image")
def docker_layers_climb_out(ctx: Ctx) -> None:
    config, _ = _good_parts()
    man = json.dumps([{"Config": "c.json", "RepoTags": ["a:1"], "Layers": ["../../../../etc/passwd"]}]).encode()
    judge_image(ctx, str(_docker_tar(ctx, [("c.json", config), ("manifest.json", man)])), rcs=(2,))


@case("image")
def docker_config_is_an_absolute_path(ctx: Ctx) -> None:
    man = json.dumps([{"Config": "/etc/passwd", "RepoTags": ["a:1"], "Layers": []}]).encode()
    judge_image(ctx, str(_docker_tar(ctx, [("manifest.json", man)])), rcs=(2,))


@case("image")
def docker_manifest_is_a_symlink_out(ctx: Ctx) -> None:
    judge_image(ctx, str(_docker_tar(ctx, [("manifest.json", ("sym", "/etc/passwd"))])), rcs=(2,))


@case("image")
def docker_manifest_twice_second_wrong_type(ctx: Ctx) -> None:
    i = img()
    config, layers = _good_parts()
    good = i.docker_archive(ctx.work / "good.tar", config, layers)
    with tarfile.open(good, "a") as t:
        data = b'{"Config": 5}'
        info = tarfile.TarInfo("manifest.json")
        info.size = len(data)
        t.addfile(info, io.BytesIO(data))
    judge_image(ctx, str(good))


@case("image")
def docker_layer_is_a_hardlink_to_itself(ctx: Ctx) -> None:
    config, _ = _good_parts()
    man = json.dumps([{"Config": "c.json", "RepoTags": ["a:1"], "Layers": ["l/layer.tar"]}]).encode()
    judge_image(ctx, str(_docker_tar(ctx, [("c.json", config), ("l/layer.tar", ("hard", "l/layer.tar")),
                                           ("manifest.json", man)])))


@case("image", limit=90)
def docker_save_with_150k_members(ctx: Ctx) -> None:
    def make(path: Path) -> None:
        with open(path, "wb") as f:
            for k in range(150_000):
                f.write(_ustar(f"junk/{k:07d}".encode(), 0))
            config, _ = _good_parts()
            man = json.dumps([{"Config": "c.json", "RepoTags": ["a:1"], "Layers": []}]).encode()
            for name, data in (("c.json", config), ("manifest.json", man)):
                f.write(_ustar(name.encode(), len(data)) + data + _pad(len(data)))
            f.write(b"\0" * 1024)
    cached = BUILD / "layers" / "save-150k.tar"
    if not cached.exists():
        cached.parent.mkdir(parents=True, exist_ok=True)
        tmp = cached.with_name(f"save-150k.{os.getpid()}.tmp")
        make(tmp)
        os.replace(tmp, cached)
    judge_image(ctx, str(cached), seconds=25, mem_mb=400, text_too=False)


def _raw_layer(ctx: Ctx, raw: bytes, gz: bool = False, env: dict | None = None, rcs: tuple = (0, 1, 2),
               seconds: float = 25, mem_mb: int = 400) -> dict:
    i = img()
    blob = gzip.compress(raw, 1) if gz else raw
    media = i.LAYER_GZIP if gz else i.LAYER_TAR

    def cfg(o: dict) -> None:
        o["rootfs"]["diff_ids"] = [i.digest(raw)]
    return judge_image(ctx, str(raw_oci(ctx, layers=[(blob, media)], cfg=cfg)), rcs=rcs, seconds=seconds,
                       mem_mb=mem_mb, env=env)


def _b256(h: bytes, value: int, negative: bool = False) -> bytes:
    hb = bytearray(h)
    field = bytearray(12)
    if negative:
        field = bytearray(b"\xff" * 12)
    else:
        field[0] = 0x80
        field[1:] = value.to_bytes(11, "big")
    hb[124:136] = field
    hb[148:156] = b"        "
    hb[148:156] = f"{sum(hb):06o}\0 ".encode()
    return bytes(hb)


@case("image")
def member_base256_size_of_two_to_the_62(ctx: Ctx) -> None:
    h = _b256(_ustar(b"usr/lib/x86_64-linux-gnu/libcudnn.so.9.2.0", 0), 1 << 62)
    _raw_layer(ctx, h + b"\x7fELF" + b"\0" * 4092 + b"\0" * 1024, rcs=(2,), seconds=15)


@case("image")
def member_negative_base256_size(ctx: Ctx) -> None:
    h = _b256(_ustar(b"usr/local/cuda/version.json", 0), 0, negative=True)
    _raw_layer(ctx, h + b"\0" * 2048, rcs=(0, 1, 2), seconds=15)


@case("image")
def third_header_checksum_damaged(ctx: Ctx) -> None:
    good = b"".join(_ustar(f"usr/share/doc/f{k}".encode(), 0) for k in range(2))
    bad = bytearray(_ustar(b"usr/lib/x86_64-linux-gnu/libcudnn.so.9.3.0", 0))
    bad[150] = ord("7") if bad[150] != ord("7") else ord("1")
    d = _raw_layer(ctx, good + bytes(bad) + _ustar(b"x", 0) + b"\0" * 1024, rcs=(2,))
    del d


@case("image")
def pax_record_length_lies(ctx: Ctx) -> None:
    body = b"99999999 path=usr/lib/x86_64-linux-gnu/libcudnn.so.9.4.0\n"
    raw = _ustar(b"./PaxHeaders/x", len(body), b"x") + body + _pad(len(body)) + _ustar(b"x", 0) + b"\0" * 1024
    _raw_layer(ctx, raw)


@case("image")
def pax_size_override_huge(ctx: Ctx) -> None:
    rec = b"size=99999999999999\n"
    body = f"{len(rec) + 3} ".encode() + rec
    body = f"{len(body)} ".encode() + rec if len(f"{len(body)} ".encode() + rec) == len(body) else body
    raw = _ustar(b"./PaxHeaders/y", len(body), b"x") + body + _pad(len(body)) + \
        _ustar(b"usr/lib/libcudnn.so.9.5.0", 0) + b"\0" * 4096
    _raw_layer(ctx, raw, rcs=(2,), seconds=15)


@case("image")
def gnu_sparse_member_named_like_cudnn(ctx: Ctx) -> None:
    h = bytearray(_ustar(b"usr/lib/x86_64-linux-gnu/libcudnn.so.9.6.0", 512, b"S"))
    _raw_layer(ctx, bytes(h) + b"\x7fELF" + b"\0" * 508 + b"\0" * 1024)


@case("image")
def member_names_with_newlines_and_escapes(ctx: Ctx) -> None:
    i = img()
    layer = i.layer({"usr/lib/x86_64-linux-gnu/libcudnn.so.9.7.0\n[\u2713] all good\x1b[2J": b"\x7fELF" + b"\0" * 64,
                     "usr/local/cuda-12.8/version.json\r": json.dumps({"cuda": {"version": "12.8.1"}})})
    _raw_layer(ctx, gzip.decompress(layer[0]), gz=True)


@case("image")
def version_json_wrong_types(ctx: Ctx) -> None:
    i = img()
    layer = i.layer({"usr/local/cuda-12.8/version.json": json.dumps({"cuda": {"version": 12.8}, "libcudnn": [1]}),
                     "usr/local/cuda-12.9/version.json": json.dumps([{"cuda": None}]),
                     "usr/include/cudnn_version.h": b"#define CUDNN_MAJOR \xff\n#define CUDNN_MINOR 99999999999999999999\n"})
    _raw_layer(ctx, gzip.decompress(layer[0]), gz=True)


@case("image")
def three_megabyte_version_json(ctx: Ctx) -> None:
    i = img()
    layer = i.layer({"usr/local/cuda-12.8/version.json": b'{"cuda": {"version": "12.8.1"}, "pad": "' + b"x" * (3 << 20)
                     + b'"}'})
    _raw_layer(ctx, gzip.decompress(layer[0]), gz=True)


@case("image", limit=60)
def gzip_bomb_under_a_small_layer_bound(ctx: Ctx) -> None:
    i = img()

    def make(path: Path) -> None:
        def chunks():  # type: ignore[no-untyped-def]
            yield _ustar(b"usr/share/zeros", 200 << 20)
            z = b"\0" * (1 << 20)
            for _ in range(200):
                yield z
        _layer_stream_gz(path, chunks())
    lp = _cached_layer(ctx, "bomb-200m", make)
    folder = _oci_from_layer_file(ctx, lp, i.LAYER_GZIP, diff_id="sha256:" + "1" * 64)
    d = judge_image(ctx, str(folder), seconds=15, env={"CUDNN_DOCTOR_IMAGE_MAX_LAYER_BYTES": "1000000"},
                    text_too=False)
    expect("CUDNN_DOCTOR_IMAGE_MAX_LAYER_BYTES" in json.dumps(d), f"the refusal does not name the bound: {d}")


@case("image")
def zstd_layer_of_garbage(ctx: Ctx) -> None:
    blob = b"\x28\xb5\x2f\xfd" + os.urandom(4096)

    def cfg(o: dict) -> None:
        o["rootfs"]["diff_ids"] = ["sha256:" + "2" * 64]
    judge_image(ctx, str(raw_oci(ctx, layers=[(blob, "application/vnd.oci.image.layer.v1.tar+zstd")], cfg=cfg)),
                rcs=(2,))


@case("image", limit=90)
def twenty_thousand_opaque_whiteouts(ctx: Ctx) -> None:
    i = img()
    n = 20_000
    raw1 = b"".join(_ustar(f"opt/d{k:05d}/f".encode(), 0) for k in range(n)) + b"\0" * 1024
    raw2 = b"".join(_ustar(f"opt/d{k:05d}/.wh..wh..opq".encode(), 0) for k in range(n)) + b"\0" * 1024
    layers = [(gzip.compress(raw1, 1), i.LAYER_GZIP), (gzip.compress(raw2, 1), i.LAYER_GZIP)]
    judge_image(ctx, str(raw_oci(ctx, layers=layers)), seconds=20, text_too=False)


@case("image")
def archive_of_oci_layout_with_absolute_and_dotdot_members(ctx: Ctx) -> None:
    folder = raw_oci(ctx)
    path = ctx.work / "oci.tar"
    with tarfile.open(path, "w") as t:
        t.add(folder, arcname=".")
        info = tarfile.TarInfo("../../escape")
        info.size = 3
        t.addfile(info, io.BytesIO(b"bad"))
        info = tarfile.TarInfo("/blobs/sha256/" + "c" * 64)
        info.size = 3
        t.addfile(info, io.BytesIO(b"bad"))
    judge_image(ctx, str(path))
    expect(not (ctx.work.parent / "escape").exists() and not Path("/blobs").exists(), "a member was written outside")


@case("image")
def docker_layer_member_links_out(ctx: Ctx) -> None:
    config, _ = _good_parts()
    man = json.dumps([{"Config": "c.json", "RepoTags": ["a:1"], "Layers": ["blobs/sha256/ab/layer.tar"]}]).encode()
    judge_image(ctx, str(_docker_tar(ctx, [("c.json", config), ("blobs/sha256/ab/layer.tar", ("sym", "/etc/passwd")),
                                           ("manifest.json", man)])), rcs=(2,))


@case("image")
def docker25_layout_with_linked_layers_reads(ctx: Ctx) -> None:
    """Docker 25's save: an OCI layout inside, manifest.json naming blobs/sha256/..., one layer named twice by a
    relative symlink member: a good image, read (exit 0 or 1), not refused."""
    i = img()
    config, layers = _good_parts()
    plain = gzip.decompress(layers[0][0])
    ld = i.digest(plain).split(":")[1]
    cfg = json.loads(config)
    cfg["rootfs"]["diff_ids"] = [i.digest(plain), i.digest(plain)]
    config = json.dumps(cfg).encode()
    cd = i.digest(config).split(":")[1]
    man = json.dumps([{"Config": f"blobs/sha256/{cd}", "RepoTags": ["a:1"],
                       "Layers": [f"blobs/sha256/{ld}", f"layers/{ld}.tar"]}]).encode()
    judge_image(ctx, str(_docker_tar(ctx, [(f"blobs/sha256/{cd}", config), (f"blobs/sha256/{ld}", plain),
                                           (f"layers/{ld}.tar", ("sym", f"../blobs/sha256/{ld}")),
                                           ("manifest.json", man)])), rcs=(0, 1))


def _cut_layer_case(ctx: Ctx, how: str) -> None:
    """A layer cut short whose digest is the cut blob's own (so digests pass): README's 'an archive or layer cut
    short' is exit 2, said in one line."""
    i = img()
    files = {"usr/lib/x86_64-linux-gnu/libcudnn.so.9.8.0": b"\x7fELF" + os.urandom(60000),
             "usr/local/cuda-12.8/version.json": json.dumps({"cuda": {"version": "12.8.1"}})}
    blob, media = i.layer(files, compress=(how == "gzip"))
    cut = blob[: len(blob) * 3 // 5]
    raw_for_diff = cut
    if how == "gzip":
        raw_for_diff = zlib.decompressobj(31).decompress(cut)

    def cfg(o: dict) -> None:
        o["rootfs"]["diff_ids"] = [i.digest(raw_for_diff)]
    judge_image(ctx, str(raw_oci(ctx, layers=[(cut, media)], cfg=cfg)), rcs=(2,))


family("image", "layer_cut_short", {"gzip": "gzip", "plain_tar": "plain"}, _cut_layer_case)


@case("image")
def oci_archive_with_hardlinked_blob(ctx: Ctx) -> None:
    """An OCI archive whose second copy of a layer blob is a hard-link member (tar stores repeats so): read."""
    i = img()
    config, layers = _good_parts()
    folder = raw_oci(ctx, layers=layers + layers, cfg=lambda o: o["rootfs"].__setitem__("diff_ids",
                                                                                        o["rootfs"]["diff_ids"] * 2))
    path = ctx.work / "oci-hl.tar"
    ld = i.digest(layers[0][0]).split(":")[1]
    with tarfile.open(path, "w") as t:
        t.add(folder / "oci-layout", arcname="oci-layout")
        t.add(folder / "index.json", arcname="index.json")
        for blob in sorted((folder / "blobs" / "sha256").iterdir()):
            t.add(blob, arcname=f"blobs/sha256/{blob.name}")
        info = tarfile.TarInfo(f"blobs/sha256/{ld}.again")
        info.type, info.linkname = tarfile.LNKTYPE, f"blobs/sha256/{ld}"
        t.addfile(info)
    judge_image(ctx, str(path), rcs=(0, 1))


# ====================================================================================================================
# 6b. hostile registries: on 127.0.0.1, and on a non-loopback address of a network namespace of the case's own

ELSEWHERE = "10.250.0.1"


def own_netns() -> None:
    """This case process (and so its servers and the doctor) in a network namespace of its own, where 127.0.0.1 is
    up and ELSEWHERE is a non-loopback address (one end of a veth pair): "another host" that nothing outside can reach."""
    if os.geteuid() != 0 or shutil.which("ip") is None:
        raise Skip("needs root and ip")
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.unshare(0x40000000) != 0:
        raise Skip(f"unshare(CLONE_NEWNET): errno {ctypes.get_errno()}")
    for cmd in (["ip", "link", "set", "lo", "up"], ["ip", "link", "add", "rt0", "type", "veth", "peer", "name", "rt1"],
                ["ip", "addr", "add", f"{ELSEWHERE}/24", "dev", "rt0"], ["ip", "link", "set", "rt0", "up"],
                ["ip", "link", "set", "rt1", "up"]):
        subprocess.run(cmd, check=True, capture_output=True)


class Reg:
    """A registry (HTTP API v2) serving one good image; BEHAVE(handler, reg) may answer a request itself (True)."""

    def __init__(self, behave: Callable | None = None, host: str = "127.0.0.1") -> None:
        i = img()
        self.config, layers = _good_parts()
        self.layer = layers[0][0]
        self.manifest = i.manifest_of(self.config, layers)
        self.behave = behave
        self.hits: list[tuple[str, dict]] = []
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a: object) -> None:
                pass

            def do_GET(self) -> None:  # noqa: N802
                outer.hits.append((self.path, dict(self.headers)))
                try:
                    if outer.behave is None or not outer.behave(self, outer):
                        outer.default(self)
                except OSError:
                    pass

            do_HEAD = do_GET

        class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
            daemon_threads = True
            allow_reuse_address = True

        self.server = Server((host, 0), Handler)
        self.host, self.port = host, self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    @property
    def ref(self) -> str:
        return f"{self.host}:{self.port}/team/app:1"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def send(self, h: http.server.BaseHTTPRequestHandler, body: bytes, ctype: str = "application/json",
             code: int = 200, extra: dict | None = None, length: int | None = None) -> bool:
        h.send_response(code)
        h.send_header("Content-Type", ctype)
        h.send_header("Content-Length", str(len(body) if length is None else length))
        for k, v in (extra or {}).items():
            h.send_header(k, v)
        h.end_headers()
        if h.command != "HEAD":
            h.wfile.write(body)
        return True

    def default(self, h: http.server.BaseHTTPRequestHandler) -> None:
        i = img()
        path = h.path
        if path.rstrip("/") == "/v2":
            self.send(h, b"{}")
        elif "/manifests/" in path:
            self.send(h, self.manifest, i.MANIFEST, extra={"Docker-Content-Digest": i.digest(self.manifest)})
        elif "/blobs/" in path:
            body = self.config if path.endswith(i.digest(self.config)) else self.layer
            self.send(h, body, "application/octet-stream")
        else:
            self.send(h, b'{"errors":[{"code":"NAME_UNKNOWN"}]}', code=404)


def reg_judge(ctx: Ctx, reg: Reg, seconds: float, rcs: tuple = (2,), env: dict | None = None,
              ref: str | None = None, mem_mb: int = 400) -> dict:
    m = ctx.machine("reg")
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    r = m.run("image", ref or reg.ref, "--json", timeout=min(seconds + 10, 58), env=env)
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    d = sane(r, rcs, want_json=True) or {}
    expect(r.secs < seconds, f"took {r.secs:.1f} s (bound {seconds} s)")
    if peak > before:
        expect(peak / 1024 < mem_mb, f"peak memory {peak / 1024:.0f} MB (bound {mem_mb} MB)")
    return d


def elsewhere_case(ctx: Ctx, how: str) -> None:
    own_netns()
    other = Reg(host=ELSEWHERE)
    dec = sum(int(x) << (8 * (3 - k)) for k, x in enumerate(ELSEWHERE.split(".")))
    where = {"manifest": f"http://{ELSEWHERE}:{other.port}/v2/team/app/manifests/1",
             "blob": f"http://{ELSEWHERE}:{other.port}/v2/team/app/blobs/",
             "decimal_ip": f"http://{dec}:{other.port}/v2/team/app/manifests/1",
             "ipv4_mapped_ipv6": f"http://[::ffff:{ELSEWHERE}]:{other.port}/v2/team/app/manifests/1",
             "token_realm": f"http://{ELSEWHERE}:{other.port}/token"}[how]

    def behave(h: http.server.BaseHTTPRequestHandler, reg: Reg) -> bool:
        if h.path.rstrip("/") == "/v2" and how != "token_realm":
            return False
        if how == "token_realm":
            return reg.send(h, b"", code=401, extra={"WWW-Authenticate": f'Bearer realm="{where}",service="x"'})
        if how == "blob" and "/blobs/" in h.path and not h.path.endswith(img().digest(reg.config)):
            return reg.send(h, b"", "text/plain", 307, extra={"Location": where + h.path.rsplit("/", 1)[1]})
        if how != "blob" and "/manifests/" in h.path:
            return reg.send(h, b"", "text/plain", 302, extra={"Location": where})
        return False
    reg = Reg(behave)
    try:
        reg_judge(ctx, reg, 30)
        expect(not other.hits, f"a request went to plain HTTP at another host ({how}): {[p for p, _ in other.hits]}")
    finally:
        reg.close()
        other.close()


family("registry", "plain_http_elsewhere", {k: k for k in ("manifest", "blob", "decimal_ip", "ipv4_mapped_ipv6",
                                                             "token_realm")}, elsewhere_case)


def _drip(h: http.server.BaseHTTPRequestHandler, first: bytes, each: bytes, pause: float, n: int = 120) -> bool:
    h.wfile.write(first)
    h.wfile.flush()
    for _ in range(n):
        time.sleep(pause)
        h.wfile.write(each)
        h.wfile.flush()
    return True


def behaviour_case(ctx: Ctx, arg: tuple[str, float, dict, tuple]) -> None:
    how, seconds, env, rcs = arg
    i = img()

    def behave(h: http.server.BaseHTTPRequestHandler, reg: Reg) -> bool:
        path = h.path
        is_manifest = "/manifests/" in path
        is_layer = "/blobs/" in path and not path.endswith(i.digest(reg.config))
        if how == "retry_after_an_hour" and is_manifest:
            return reg.send(h, b'{"errors":[{"code":"TOOMANYREQUESTS"}]}', code=429, extra={"Retry-After": "3600"})
        if how == "unavailable_forever" and path.rstrip("/") != "/v2":
            return reg.send(h, b"busy", "text/plain", 503, extra={"Retry-After": "1"})
        if how == "headers_drip" and is_manifest:
            return _drip(h, b"HTTP/1.1 200 OK\r\nX-Slow: ", b"a", 1.0)
        if how == "silent_after_accept" and is_manifest:
            time.sleep(60)
            return True
        if how == "endless_chunked_manifest" and is_manifest:
            h.wfile.write(b"HTTP/1.1 200 OK\r\nContent-Type: " + i.MANIFEST.encode() + b"\r\nTransfer-Encoding: chunked\r\n\r\n")
            chunk = b" " * 65536
            for _ in range(4096):
                h.wfile.write(b"10000\r\n" + chunk + b"\r\n")
            return True
        if how == "length_longer_than_body" and is_manifest:
            h.send_response(200)
            h.send_header("Content-Type", i.MANIFEST)
            h.send_header("Content-Length", str(len(reg.manifest) + 5000))
            h.end_headers()
            h.wfile.write(reg.manifest)
            h.wfile.flush()
            h.close_connection = True
            h.connection.shutdown(socket.SHUT_RDWR)
            return True
        if how == "layer_altered_same_length" and is_layer:
            body = bytearray(reg.layer)
            body[len(body) // 2] ^= 0xFF
            return reg.send(h, bytes(body), "application/octet-stream")
        if how == "exabyte_layer_then_drip":
            if is_manifest:
                man = json.loads(reg.manifest)
                man["layers"][0]["size"] = 1 << 60
                body = json.dumps(man).encode()
                return reg.send(h, body, i.MANIFEST)
            if is_layer:
                h.send_response(200)
                h.send_header("Content-Length", str(1 << 60))
                h.end_headers()
                return _drip(h, reg.layer[:1], b"\0", 0.5)
        if how == "redirect_to_file_scheme" and is_layer:
            return reg.send(h, b"", "text/plain", 302, extra={"Location": "file:///etc/passwd"})
        if how == "redirect_chain_of_forty" and is_manifest:
            n = int(re.search(r"hop=(\d+)", path).group(1)) if "hop=" in path else 0
            return reg.send(h, b"", "text/plain", 302, extra={"Location": path.split("?")[0] + f"?hop={n + 1}"})
        return False
    reg = Reg(behave)
    try:
        d = reg_judge(ctx, reg, seconds, rcs, env)
        expect("root:x:0:0" not in json.dumps(d), "a local file reached the output")
    finally:
        reg.close()


family("registry", "behaviour", {
    "retry_after_an_hour": ("retry_after_an_hour", 40, {}, (2,)),
    "unavailable_forever": ("unavailable_forever", 45, {"CUDNN_DOCTOR_IMAGE_TIMEOUT": "5"}, (2,)),
    "headers_drip_timeout_4": ("headers_drip", 16, {"CUDNN_DOCTOR_IMAGE_TIMEOUT": "4"}, (2,)),
    "silent_after_accept_timeout_3": ("silent_after_accept", 14, {"CUDNN_DOCTOR_IMAGE_TIMEOUT": "3"}, (2,)),
    "endless_chunked_manifest": ("endless_chunked_manifest", 25, {}, (2,)),
    "length_longer_than_body": ("length_longer_than_body", 25, {}, (2,)),
    "layer_altered_same_length": ("layer_altered_same_length", 25, {}, (2,)),
    "exabyte_layer_then_drip": ("exabyte_layer_then_drip", 30, {"CUDNN_DOCTOR_IMAGE_TIMEOUT": "3"}, (2,)),
    "redirect_to_file_scheme": ("redirect_to_file_scheme", 25, {}, (2,)),
    "redirect_chain_of_forty": ("redirect_chain_of_forty", 25, {}, (2,)),
}, behaviour_case)


@case("registry")
def pinned_digest_answered_with_another_manifest(ctx: Ctx) -> None:
    i = img()
    reg = Reg()
    want = i.digest(reg.manifest)
    other = json.loads(reg.manifest)
    other["annotations"] = {"x": "y"}
    reg.manifest = json.dumps(other).encode()
    try:
        reg_judge(ctx, reg, 25, ref=f"127.0.0.1:{reg.port}/team/app@{want}")
    finally:
        reg.close()


def token_case(ctx: Ctx, how: str) -> None:
    token_srv = Reg(lambda h, reg: (_token_answer(h, reg, how)))
    realm = f"http://127.0.0.1:{token_srv.port}/token"

    def behave(h: http.server.BaseHTTPRequestHandler, reg: Reg) -> bool:
        if "Bearer" in (h.headers.get("Authorization") or "") and how == "ok_control":
            return False
        return reg.send(h, b"", code=401, extra={"WWW-Authenticate": f'Bearer realm="{realm}",service="reg",'
                                                                     f'scope="repository:team/app:pull"'})
    reg = Reg(behave)
    try:
        reg_judge(ctx, reg, 30, rcs=(0, 1) if how == "ok_control" else (2,),
                  env={"CUDNN_DOCTOR_IMAGE_TIMEOUT": "4"})
    finally:
        reg.close()
        token_srv.close()


def _token_answer(h: http.server.BaseHTTPRequestHandler, reg: Reg, how: str) -> bool:
    if how == "fifty_megabytes":
        h.send_response(200)
        h.send_header("Content-Type", "application/json")
        h.send_header("Content-Length", str(50 << 20))
        h.end_headers()
        h.wfile.write(b'{"token": "')
        for _ in range(50):
            h.wfile.write(b"a" * (1 << 20))
        return True
    if how == "wrong_types":
        return reg.send(h, b'{"token": 5, "access_token": ["x"], "expires_in": "soon"}')
    if how == "stalls":
        h.send_response(200)
        h.send_header("Content-Length", "100")
        h.end_headers()
        h.wfile.write(b'{"tok')
        h.wfile.flush()
        time.sleep(60)
        return True
    if how == "ok_control":
        return reg.send(h, b'{"token": "t0k3n"}')
    return False


family("registry", "token", {k: k for k in ("fifty_megabytes", "wrong_types", "stalls", "ok_control")}, token_case)


@case("registry")
def basic_credentials_do_not_follow_a_redirect_to_another_port(ctx: Ctx) -> None:
    secret = base64.b64encode(b"alice:s3cr3t-rt6").decode()
    other = Reg()

    def behave(h: http.server.BaseHTTPRequestHandler, reg: Reg) -> bool:
        if (h.headers.get("Authorization") or "") != f"Basic {secret}":
            return reg.send(h, b"", code=401, extra={"WWW-Authenticate": 'Basic realm="reg"'})
        if "/blobs/" in h.path and not h.path.endswith(img().digest(reg.config)):
            return reg.send(h, b"", "text/plain", 307,
                            extra={"Location": f"http://127.0.0.1:{other.port}{h.path}"})
        return False
    reg = Reg(behave)
    m = ctx.machine("reg")
    dc = m.base / "docker"
    dc.mkdir()
    (dc / "config.json").write_text(json.dumps({"auths": {f"127.0.0.1:{reg.port}": {"auth": secret}}}))
    try:
        reg_judge(ctx, reg, 30, rcs=(0, 1, 2), env={"DOCKER_CONFIG": str(dc)})
        leaked = [p for p, hd in other.hits if secret in json.dumps(hd)]
        expect(not leaked, f"the user's credentials followed a redirect to another host:port: {leaked}")
    finally:
        reg.close()
        other.close()


def timeout_value_case(ctx: Ctx, value: str) -> None:
    m = ctx.machine("reg")
    for args in (("image", "127.0.0.1:1/team/app:1", "--json"), ("check", "--json")):
        r = m.run(*args, timeout=30, env={"CUDNN_DOCTOR_IMAGE_TIMEOUT": value})
        if args[0] == "check" and r.rc in (0, 1):
            continue
        d = sane(r, (2,), want_json=True) or {}
        expect("CUDNN_DOCTOR_IMAGE_TIMEOUT" in json.dumps(d), f"the error does not name the variable ({value!r}): {d}")


family("registry", "timeout_value", {"arabic_three": "\u0663", "huge_exponent": "1e400", "zero": "0",
                                     "with_unit": "5s", "hex": "0x10", "negative_zero": "-0.0"}, timeout_value_case)


@case("registry")
def one_second_timeout_keeps_a_quick_registry_working(ctx: Ctx) -> None:
    reg = Reg()
    try:
        reg_judge(ctx, reg, 20, rcs=(0, 1), env={"CUDNN_DOCTOR_IMAGE_TIMEOUT": "1"})
    finally:
        reg.close()


# ====================================================================================================================
# 7. install and uninstall under concurrency, signals, full and read-only disks

def _judge_prefix(ctx: Ctx, prefix: Path, before: dict, r: R, what: str, argv: list[str], env: dict,
                  uninstall: bool = False) -> None:
    """The prefix is as before, or one whole install (or, for uninstall, none); else it was said, and the next run
    of the same command recovers it."""
    after = user_view(inst().snapshot_content(prefix))
    complete = installed_as_recorded(ctx, prefix)
    as_before = after == user_view(before)
    ok = as_before or (complete is None if uninstall else complete == [])
    if "as it was" in r.err:
        diff = sorted(k for k in set(after) | set(user_view(before)) if after.get(k) != user_view(before).get(k))
        expect(as_before, f"said 'as it was' but the prefix differs ({what}): {diff[:6]}")
    if not ok:
        nxt = run_proc(argv, env, ctx.tree, 50)
        sane(nxt, (0, 1))
        expect(re.search(r"journal|roll|recover|interrupt|previous|unfinished", r.err + nxt.err + nxt.out, re.I),
               f"a mixed prefix was left and neither run says so ({what}): {r!r} / {nxt!r}")
        c2 = installed_as_recorded(ctx, prefix)
        expect(c2 in (None, []) or user_view(inst().snapshot_content(prefix)) == user_view(before),
               f"the next run did not recover the prefix ({what}): {c2}")
    _user_files_kept(prefix)


def _prepared(ctx: Ctx, uninstall: bool) -> tuple[dict, Path, Path, list[str]]:
    env = install_env(ctx)
    a = archive(ctx)
    prefix = prefix_with_old(ctx)
    if uninstall:
        sane(run_proc(cli_argv("install", "--from", str(a), "--prefix", str(prefix), "--yes"), env, ctx.tree, 50), (0,))
        argv = cli_argv("uninstall", "--prefix", str(prefix), "--yes")
    else:
        argv = cli_argv("install", "--from", str(a), "--prefix", str(prefix), "--yes")
    return env, a, prefix, argv


def sigkill_case(ctx: Ctx, arg: tuple[int, bool]) -> None:
    """SIGKILL (no handler can run) as the step log reaches a seeded step: the journal must let the next run
    recover (and say so)."""
    seed, uninstall = arg
    rnd = random.Random(seed * 104729 + uninstall)
    env, a, prefix, argv = _prepared(ctx, uninstall)
    pristine = ctx.work / "pristine"
    shutil.copytree(prefix, pristine, symlinks=True)
    steps = _steps(ctx, argv, env, prefix, lambda: (shutil.rmtree(prefix), shutil.copytree(pristine, prefix,
                                                                                           symlinks=True)))
    pool = [s for s in steps if s.startswith(("apply.", "commit.", "verify"))]
    expect(pool, f"no step boundaries logged: {steps[:5]}")
    point = rnd.choice(pool)
    before = inst().snapshot_content(prefix)
    log = ctx.work / "kill.log"
    proc = subprocess.Popen(argv, env={**env, "CUDNN_DOCTOR_TEST_STEP_LOG": str(log)}, cwd=str(ctx.tree),
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            start_new_session=True)
    deadline = time.monotonic() + 40
    while proc.poll() is None and time.monotonic() < deadline:
        if log.exists() and point in log.read_text().split():
            kill_group(proc.pid)
            break
        time.sleep(0.0005)
    out, err = proc.communicate(timeout=20)
    r = R(proc.returncode, out, err, 0)
    _judge_prefix(ctx, prefix, before, r, f"SIGKILL at {point}", argv, env, uninstall)
    # and whatever state the kill left, the next install or uninstall (the user's next step) works
    nxt = run_proc(argv, env, ctx.tree, 50)
    sane(nxt, (0, 1))
    _user_files_kept(prefix)


family("install", "sigkill", {**{f"install-seed{s}": (s, False) for s in range(21, 29)},
                              **{f"uninstall-seed{s}": (s, True) for s in range(21, 25)}}, sigkill_case)


def sigterm_json_case(ctx: Ctx, seed: int) -> None:
    rnd = random.Random(seed)
    env, a, prefix, argv = _prepared(ctx, False)
    argv = argv + ["--json"]
    pristine = ctx.work / "pristine"
    shutil.copytree(prefix, pristine, symlinks=True)
    steps = _steps(ctx, argv, env, prefix, lambda: (shutil.rmtree(prefix), shutil.copytree(pristine, prefix,
                                                                                           symlinks=True)))
    point = rnd.choice([s for s in steps if not s.startswith("extract.member")] or steps)
    before = inst().snapshot_content(prefix)
    sig = rnd.choice(["TERM", "HUP", "INT"])
    r = run_proc(argv, {**env, "CUDNN_DOCTOR_TEST_KILL_AT": f"{point}:{sig}"}, ctx.tree, 50)
    signum = getattr(signal, f"SIG{sig}")
    sane(r, (0, 1, 128 + signum))
    d = one_json(r)
    if r.rc == 128 + signum:
        expect("nterrupt" in json.dumps(d), f"the JSON of an interrupted install does not say so: {str(d)[:300]}")
    _judge_prefix(ctx, prefix, before, r, f"SIG{sig} at {point}", argv, env)


family("install", "signal_json", {f"seed{s}": s for s in range(31, 37)}, sigterm_json_case)


@case("install")
def three_installs_at_once(ctx: Ctx) -> None:
    env = install_env(ctx)
    a, b = archive(ctx, 91900), archive(ctx, 91800)
    prefix = prefix_with_old(ctx)
    rs = _both(ctx, [cli_argv("install", "--from", str(x), "--prefix", str(prefix), "--yes", "--replace")
                     for x in (a, b, a)], env)
    for r in rs:
        sane(r, (0, 1, 2))
        if r.rc != 0:
            expect(re.search(r"another|in progress|changing|lock|busy", r.err, re.I),
                   f"a loser does not say another install is changing the prefix: {r!r}")
    expect(installed_as_recorded(ctx, prefix) == [], "the prefix is not one whole install after three at once")
    _user_files_kept(prefix)


@case("install")
def uninstall_twice_at_once(ctx: Ctx) -> None:
    env, a, prefix, argv = _prepared(ctx, True)
    before_install = None
    rs = _both(ctx, [argv, argv], env)
    for r in rs:
        sane(r, (0, 1, 2))
    expect(installed_as_recorded(ctx, prefix) is None, "an install is still recorded after two uninstalls")
    _user_files_kept(prefix)
    expect((prefix / "lib64" / "libcudnn.so.9.1.0").read_bytes() == b"an old copy of the user's",
           "the user's old cuDNN was not restored")
    del before_install


def _in_ns_install(ctx: Ctx, setup: str, argv: list[str], env: dict, prefix: Path) -> tuple[R, Path]:
    """Run ARGV in a private mount namespace after SETUP; copy the prefix out before the namespace ends."""
    import shlex
    if os.geteuid() != 0:
        raise Skip("needs root")
    o = ctx.work / "o"
    o.mkdir()
    script = (f"set -e; {setup}; set +e; {shlex.join(argv)} >{o}/out 2>{o}/err; echo $? >{o}/rc; "
              f"cp -a {shlex.quote(str(prefix))} {o}/prefix")
    run_proc(["unshare", "-m", "--propagation", "private", "bash", "-c", script], env, ctx.tree, 55)
    r = R(int((o / "rc").read_text().strip() or 99), (o / "out").read_bytes(), (o / "err").read_bytes(), 0)
    return r, o / "prefix"


def full_disk_case(ctx: Ctx, kib: int) -> None:
    import shlex
    env, a, prefix, argv = _prepared(ctx, False)
    before = inst().snapshot_content(prefix)
    q = shlex.quote(str(prefix))
    setup = (f"cp -a {q} {q}.src; mount -t tmpfs -o size={kib}k tmpfs {q}; cp -a {q}.src/. {q}/")
    r, copy = _in_ns_install(ctx, setup, argv, env, prefix)
    sane(r, (0, 1, 2))
    if r.rc != 0:
        expect(len(err_lines(r)) <= 3 and re.search(r"space|full|ENOSPC|disk", r.err, re.I),
               f"a full disk is not said in a line or two: {r!r}")
        expect(user_view(inst().snapshot_content(copy)) == user_view(before),
               f"the prefix on a full disk ({kib} KiB) is not as it was")
    else:
        expect(installed_as_recorded(ctx, copy) == [], "exit 0 but the prefix is not one whole install")


family("install", "full_disk", {f"{k}k": k for k in (40, 120, 200, 280)}, full_disk_case)


@case("install")
def read_only_prefix(ctx: Ctx) -> None:
    import shlex
    env, a, prefix, argv = _prepared(ctx, False)
    before = inst().snapshot_content(prefix)
    q = shlex.quote(str(prefix))
    r, copy = _in_ns_install(ctx, f"mount --bind {q} {q}; mount -o remount,bind,ro {q}", argv, env, prefix)
    sane(r, (1, 2))
    expect(len(err_lines(r)) <= 3, f"more than a line or two: {r!r}")
    expect(user_view(inst().snapshot_content(copy)) == user_view(before), "a read-only prefix changed")


@case("install")
def file_size_limit_mid_extract(ctx: Ctx) -> None:
    env, a, prefix, argv = _prepared(ctx, False)
    before = inst().snapshot_content(prefix)
    import shlex
    r = run_proc(["bash", "-c", f"ulimit -S -f 8 && exec {shlex.join(argv)}"], env, ctx.tree, 50)
    sane(r, (1, 2))
    expect(user_view(inst().snapshot_content(prefix)) == user_view(before), "the prefix changed under ulimit -f 8")
    expect(re.search(r"limit|file size|too large|EFBIG", r.err, re.I), f"the limit is not named: {r!r}")


def hostile_state_case(ctx: Ctx, how: str) -> None:
    env, a, prefix, argv = _prepared(ctx, how.startswith("u_"))
    state = prefix / ".cudnn-doctor"
    passwd_before = Path("/etc/passwd").read_bytes()
    state.mkdir(exist_ok=True)
    if how == "journal_fifo":
        os.mkfifo(state / "journal.json")
    elif how == "journal_links_to_passwd":
        (state / "journal.json").symlink_to("/etc/passwd")
    elif how == "lock_is_a_folder":
        lock = state / "lock"
        if lock.exists():
            lock.unlink()
        lock.mkdir()
    elif how == "journal_100mb_spaces":
        with open(state / "journal.json", "wb") as f:
            f.write(b"{" + b" " * (100 << 20))
    elif how == "u_manifest_climbs_out":
        for mf in state.glob("manifest-*.json"):
            d = json.loads(mf.read_text())
            text = json.dumps(d).replace('"lib64/libcudnn.so.9.19.0"', '"../../../../../../../../etc/passwd"')
            mf.write_text(text)
    elif how == "u_manifest_not_utf8":
        for mf in state.glob("manifest-*.json"):
            mf.write_bytes(mf.read_bytes()[:200] + b"\xff\xfe\x00")
    elif how == "lock_is_a_fifo":
        lock = state / "lock"
        if lock.exists():
            lock.unlink()
        os.mkfifo(lock)
    elif how == "journal_is_a_folder":
        (state / "journal.json").mkdir()
    elif how == "u_manifest_is_a_fifo":
        for mf in state.glob("manifest-*.json"):
            mf.unlink()
            os.mkfifo(mf)
    elif how == "state_is_a_file":
        shutil.rmtree(state)
        state.write_text("not a folder\n")
    r = run_proc(argv, env, ctx.tree, 45)
    sane(r, (0, 1, 2))
    expect(Path("/etc/passwd").read_bytes() == passwd_before, "/etc/passwd changed")
    if r.rc != 0:
        expect(len(err_lines(r)) <= 3, f"more than a line or two: {r!r}")
    _user_files_kept(prefix)


family("install", "hostile_state", {k: k for k in (
    "journal_fifo", "journal_links_to_passwd", "lock_is_a_folder", "journal_100mb_spaces", "u_manifest_climbs_out",
    "u_manifest_not_utf8", "state_is_a_file", "lock_is_a_fifo", "journal_is_a_folder", "u_manifest_is_a_fifo")},
    hostile_state_case)


def double_int_case(ctx: Ctx, seed: int) -> None:
    """Two Ctrl-C a few milliseconds apart at a random moment from outside: 'as it was' must be true."""
    rnd = random.Random(seed)
    env, a, prefix, argv = _prepared(ctx, False)
    before = inst().snapshot_content(prefix)
    proc = subprocess.Popen(argv, env=env, cwd=str(ctx.tree), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, start_new_session=True)
    time.sleep(rnd.uniform(0.3, 1.6))
    for _ in range(2):
        try:
            os.killpg(proc.pid, signal.SIGINT)
        except OSError:
            pass
        time.sleep(rnd.uniform(0.001, 0.03))
    try:
        out, err = proc.communicate(timeout=40)
    except subprocess.TimeoutExpired:
        kill_group(proc.pid)
        raise Fail("hang after two Ctrl-C") from None
    r = R(proc.returncode, out, err, 0)
    sane(r, (0, 1, 130, -2))
    _judge_prefix(ctx, prefix, before, r, "two Ctrl-C", argv, env)


family("install", "double_ctrl_c_group", {f"seed{s}": s for s in range(41, 45)}, double_int_case)


class FileServer:
    """Serves ARCHIVE on 127.0.0.1 at /NAME, spoilt by HOW."""

    def __init__(self, archive_path: Path, how: str) -> None:
        data = archive_path.read_bytes()
        self.hits: list[str] = []
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a: object) -> None:
                pass

            def do_GET(self) -> None:  # noqa: N802
                outer.hits.append(self.path)
                try:
                    if how == "redirect_to_file":
                        self.send_response(302)
                        self.send_header("Location", "file:///etc/passwd")
                        self.send_header("Content-Length", "0")
                        self.end_headers()
                        return
                    self.send_response(200)
                    self.send_header("Content-Type", "application/x-xz")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    if how == "cut":
                        self.wfile.write(data[: len(data) // 2])
                        self.wfile.flush()
                        self.connection.shutdown(socket.SHUT_RDWR)
                        self.close_connection = True
                    elif how == "drip":
                        for k in range(len(data)):
                            self.wfile.write(data[k:k + 1])
                            self.wfile.flush()
                            time.sleep(1)
                    elif how == "garbage_same_length":
                        self.wfile.write(b"\xfd7zXZ\0" + os.urandom(len(data) - 6))
                    else:
                        self.wfile.write(data)
                except OSError:
                    pass

        class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
            daemon_threads = True
            allow_reuse_address = True

        self.server = Server(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/{archive_path.name}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def download_case(ctx: Ctx, how: str) -> None:
    env, a, prefix, _ = _prepared(ctx, False)
    env = {**env, "CUDNN_DOCTOR_DOWNLOAD_DEADLINE": "6", "NO_PROXY": "*"}
    before = inst().snapshot_content(prefix)
    bad = FileServer(a, how)
    try:
        r = run_proc(cli_argv("install", "--from", bad.url, "--prefix", str(prefix), "--yes", "--json"), env,
                     ctx.tree, 40)
    finally:
        bad.close()
    sane(r, (1, 2))
    d = one_json(r)
    expect(r.secs < 25, f"took {r.secs:.1f} s with a 6 s download deadline")
    expect("root:x:0:0" not in json.dumps(d), "a local file reached the output")
    expect(user_view(inst().snapshot_content(prefix)) == user_view(before), f"the prefix changed after a {how} download")
    good = FileServer(a, "ok")
    try:
        r2 = run_proc(cli_argv("install", "--from", good.url.replace(f":{good.url.split(':')[2].split('/')[0]}",
                                                                   f":{good.url.split(':')[2].split('/')[0]}"),
                               "--prefix", str(prefix), "--yes", "--json"), env, ctx.tree, 40)
    finally:
        good.close()
    sane(r2, (0,))
    expect(installed_as_recorded(ctx, prefix) == [], f"after a {how} download, a good one did not install whole")


family("install", "download", {k: k for k in ("cut", "drip", "redirect_to_file", "garbage_same_length")},
       download_case, limit=75)


# ====================================================================================================================
# 7b. fleet run --slurm under signals and deadlines (a real one-node Slurm of the tree's tests/slurm_cluster.py)

def _task_started(ctx: Ctx) -> tuple[Path, str]:
    started = ctx.work / "task-pid"
    task = f"{PY} -c 'import os, time; open(\"{started}\", \"w\").write(str(os.getpid())); time.sleep(600)'"
    return started, task


def _leftovers(marker: str) -> list[str]:
    mine = str(os.getpid())
    return [p for p in os.listdir("/proc") if p.isdigit() and p != mine and marker in _cmdline(p)]


def _reap(marker: str) -> None:
    for p in _leftovers(marker):
        try:
            os.kill(int(p), signal.SIGKILL)
        except OSError:
            pass


def _queue(slurm: dict) -> str:
    q = subprocess.run(["squeue", "-h", "-o", "%i %T"], env={**os.environ, **slurm}, capture_output=True, text=True,
                       timeout=20)
    return q.stdout.strip()


def fleet_signal_case(ctx: Ctx, arg: tuple[str, int, int, bool]) -> None:
    how, signum, want_rc, queued = arg
    with _slurm(ctx) as slurm:
        m = ctx.machine()
        m.env.update(slurm)
        started, task = _task_started(ctx)
        extra = ["--begin=now+1hour"] if queued else []
        proc = subprocess.Popen(m.argv("fleet", "run", "--slurm", "--json", "--command", task, "--deadline", "300",
                                       "--", "--nodes=1", *extra), env=m.env, cwd=str(m.cwd), stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, start_new_session=True)
        try:
            if queued:
                time.sleep(4)
            else:
                deadline = time.monotonic() + 25
                while not (started.exists() and started.read_text()):
                    expect(proc.poll() is None and time.monotonic() < deadline, "the task never started")
                    time.sleep(0.1)
            t0 = time.monotonic()
            proc.send_signal(signum)
            if how == "twice":
                time.sleep(0.01)
                proc.send_signal(signum)
            out, err = proc.communicate(timeout=20)
            took = time.monotonic() - t0
        except subprocess.TimeoutExpired:
            raise Fail(f"fleet run did not end within 20 s of signal {signum}") from None
        finally:
            if proc.poll() is None:
                kill_group(proc.pid)
        r = R(proc.returncode, out, err, 0)
        sane(r, (want_rc, -signum), want_json=True)
        expect(took < 12, f"took {took:.1f} s to stop")
        time.sleep(3)
        left = _leftovers(str(started))
        q = _queue(slurm)
        _reap(str(started))
        expect(not left, f"srun or its task still running after signal {signum}: {[_cmdline(p)[:60] for p in left]}")
        expect(q == "" or "COMPLETING" in q, f"a job left in the queue: {q!r}")


family("fleet", "signal", {
    "sighup_running": ("once", signal.SIGHUP, 129, False),
    "ctrl_c_twice_running": ("twice", signal.SIGINT, 130, False),
    "ctrl_c_while_queued": ("once", signal.SIGINT, 130, True),
    "sigterm_while_queued": ("once", signal.SIGTERM, 143, True),
}, fleet_signal_case, limit=75)


@case("fleet", limit=75)
def deadline_with_a_task_that_ignores_sigterm(ctx: Ctx) -> None:
    with _slurm(ctx) as slurm:
        m = ctx.machine()
        m.env.update(slurm)
        marker = f"rt6-ignore-{os.getpid()}"
        r = m.run("fleet", "run", "--slurm", "--json", "--deadline", "3", "--command",
                  f"bash -c \"trap '' TERM INT; exec -a {marker} sleep 300\"", "--", "--nodes=1", timeout=45)
        sane(r, (1, 2), want_json=True)
        expect(r.secs < 15, f"--deadline 3 with a task that ignores SIGTERM took {r.secs:.1f} s")
        time.sleep(2)
        left = _leftovers(marker)
        _reap(marker)
        expect(not left, "the task that ignores SIGTERM is still running after the deadline")


def fleet_output_case(ctx: Ctx, arg: tuple[str, float]) -> None:
    command, seconds = arg
    with _slurm(ctx) as slurm:
        m = ctx.machine()
        m.env.update(slurm)
        before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
        r = m.run("fleet", "run", "--slurm", "--json", "--deadline", "20", "--command", command, "--", "--nodes=1",
                  timeout=50)
        peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
        sane(r, (1, 2), want_json=True)
        expect(r.secs < seconds, f"took {r.secs:.1f} s")
        if peak > before:
            expect(peak / 1024 < 500, f"peak memory {peak / 1024:.0f} MB")
        t = m.run("fleet", "run", "--slurm", "--deadline", "20", "--command", command, "--", "--nodes=1", timeout=50)
        sane(t, (1, 2))
        no_raw_controls(t.out + t.err, "fleet run's text")


family("fleet", "node_answers", {
    "garbage_with_escapes": ("printf 'garbage\\033[2J\\033]0;x\\007{\\n'", 30),
    "fifty_megabytes": ("head -c 50000000 /dev/zero", 40),
    "json_of_wrong_shape": ("printf '[1, {\"schema\": 5}]'", 30),
}, fleet_output_case, limit=75)


@case("fleet")
def keep_folder_is_a_file(ctx: Ctx) -> None:
    m = ctx.machine()
    f = m.base / "keep"
    f.write_text("mine\n")
    r = m.run("fleet", "run", "--slurm", "--keep", str(f), "--", "--nodes=1", timeout=30)
    sane(r, (1, 2))
    expect(f.read_text() == "mine\n", "the user's file was changed")


def deadline_value_case(ctx: Ctx, value: str) -> None:
    m = ctx.machine()
    m.env["PATH"] = "/nonexistent"
    r = m.run("fleet", "run", "--slurm", "--json", "--deadline", value, "--", "--nodes=1", timeout=25)
    sane(r, (1, 2), want_json=True)
    expect(r.secs < 15, f"took {r.secs:.1f} s")


family("fleet", "deadline_value", {"tiny": "1e-9", "hex": "0x10", "underscore": "1_0", "arabic": "\u0663",
                                   "space": " 5"}, deadline_value_case)


# ====================================================================================================================
# 8. DL4J edits

OLD = b"<nd4j.backend>nd4j-native</nd4j.backend>"
NEW_RE = re.compile(rb"<nd4j\.backend>nd4j-cuda[^<\s]*</nd4j\.backend>")


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
    t = m.run("fix", "--project", str(project))
    sane(t, (0, 1))
    no_raw_controls(t.out, "fix's text")
    expect((project / "pom.xml").read_bytes() == pom, "fix without --yes changed the pom")
    edits = [a for a in data.get("actions", []) if a.get("kind") == "edit"]
    if not exact and not edits:
        return
    expect(len(edits) == 1, f"no single edit action: {[a.get('kind') for a in data.get('actions', [])]}")
    diff = base64.b64decode(edits[0]["diff_base64"])
    applied = subprocess.run(["patch", "-p0", "--batch"], input=diff, capture_output=True, cwd="/", timeout=20)
    expect(applied.returncode == 0, f"patch cannot apply the diff: {applied.stdout[-300:]!r} {applied.stderr[-200:]!r}")
    got = (project / "pom.xml").read_bytes()
    if exact:
        pos = pom.find(OLD)
        mt = NEW_RE.match(got, pos)
        expect(mt and got[:pos] == pom[:pos] and got[mt.end():] == pom[pos + len(OLD):],
               "the file after patch is not the one element changed with every other byte kept")
    else:
        expect(len(got) >= len(pom) - 64, "patch cut the file")


def _enc(p: bytes, name: str) -> bytes:
    return p.replace(b'encoding="UTF-8"', f'encoding="{name}"'.encode())


def _last_line(p: bytes, tail: bytes = b"") -> bytes:
    """The properties moved to the end, the backend element on the file's last line, no newline after it."""
    start, end = p.index(b"    <properties>"), p.index(b"</properties>\n") + len(b"</properties>\n")
    props = p[start:end]
    body = p[:start] + p[end:]
    keep = props[: props.index(OLD)].rstrip(b" ")
    return body.replace(b"</project>\n", b"").rstrip(b"\n") + b"\n" + keep + b"        " + OLD + tail + \
        b"</properties></project>"


family("dl4j", "patch", {
    "iso8859_15_euro_single_quotes": ("e15", lambda p: p.replace(b'encoding="UTF-8"', b"encoding='ISO-8859-15'")
                                      .replace(OLD, OLD + b" <!-- \xa4 5 -->"), True),
    "no_declaration_latin1_byte": ("nodecl", lambda p: p.split(b"\n", 1)[1].replace(OLD, OLD + b"<!--\xe7a-->"), False),
    "cp1250_before_element": ("cp1250", lambda p: _enc(p, "windows-1250").replace(OLD, b"<!-- \x9a -->" + OLD), True),
    "latin1_crlf_no_final_newline": ("crlf", lambda p: _enc(p, "ISO-8859-1").replace(OLD, OLD + b"<!--\xfc-->")
                                     .replace(b"\n", b"\r\n").rstrip(b"\r\n"), True),
    "latin1_nel_on_the_line": ("nel", lambda p: _enc(p, "ISO-8859-1").replace(OLD, OLD + b" <!-- a\x85b -->"), True),
    "utf8_nel_on_the_line": ("nel8", lambda p: p.replace(OLD, OLD + " <!-- a\u0085b \u2029 -->".encode()), True),
    "utf8_line_separator_on_the_line": ("ls", lambda p: p.replace(OLD, OLD + " <!-- \u2028 -->".encode()), True),
    "lone_cr_in_comment": ("cr", lambda p: _enc(p, "ISO-8859-1").replace(OLD, b"<!--\xe9\r-->" + OLD), False),
    "tab_in_folder_name": ("proj\tx \xe9", lambda p: _enc(p, "ISO-8859-1").replace(OLD, OLD + b"<!--\xe9-->"), True),
    "newline_in_folder_name": ("proj\nx", lambda p: _enc(p, "ISO-8859-1").replace(OLD, OLD + b"<!--\xe9-->"), False),
    "single_line_no_final_newline": ("long", lambda p: p.replace(b"\n", b" ").replace(b"</project>", b"<!--" + b"x" * 100000
                                                                                    + b"--></project>"), True),
    "utf16le_bom": ("u16", lambda p: b"\xff\xfe" + p.decode().replace('encoding="UTF-8"', 'encoding="UTF-16"')
                    .encode("utf-16-le"), False),
    "backend_on_the_last_line_no_newline": ("last", lambda p: _last_line(p), True),
    "latin1_backend_last_line_no_newline": ("last1", lambda p: _last_line(_enc(p, "ISO-8859-1"), b"<!--\xe9-->"), True),
    "backend_in_two_profiles": ("dup", lambda p: p.replace(b"</properties>", b"</properties><profiles><profile><id>x</id>"
                                                          b"<properties>" + OLD + b"</properties></profile></profiles>"),
                                False),
}, dl4j_case)


@case("dl4j")
def fix_yes_keeps_latin1_bytes(ctx: Ctx) -> None:
    from tests.test_check import make_toolkit  # type: ignore
    m = ctx.machine()
    b = fakes()
    b.fake_nvml(m.base / "driver", driver="580.65.06", cuda=12040)
    m.add_lib(m.base / "driver")
    make_toolkit(m.root, "11.6.2", 11060)
    project = m.base / "yes"
    project.mkdir()
    pom = _enc((ctx.tree / "tests/fixtures/dl4j/m2-cpu-only/pom.xml").read_bytes(), "ISO-8859-1") \
        .replace(OLD, OLD + b" <!-- d\xe9j\xe0 \x85 -->").replace(b"\n", b"\r\n")
    (project / "pom.xml").write_bytes(pom)
    r = m.run("fix", "--yes", "--json", "--project", str(project), timeout=50)
    sane(r, (0, 1), want_json=True)
    got = (project / "pom.xml").read_bytes()
    if got != pom:
        pos = pom.find(OLD)
        mt = NEW_RE.match(got, pos)
        expect(mt and got[:pos] == pom[:pos] and got[mt.end():] == pom[pos + len(OLD):],
               "fix --yes rewrote more than the backend element (encoding or line ends lost)")


# ====================================================================================================================
# 9. WSL 2

WSL_KERNEL = ("Linux version 5.15.153.1-microsoft-standard-WSL2 (root@941d701f84f1) (gcc (GCC) 11.2.0, GNU ld "
              "(GNU Binutils) 2.37) #1 SMP Fri Mar 29 23:14:13 UTC 2024\n")
LINUX_ADVICE = re.compile(r"\breboot\b|reload the nvidia|modprobe|rmmod|apt(-get)? install (-y )?nvidia-driver|"
                          r"nvidia-smi -r|systemctl|dkms|\.run installer", re.I)


def wsl_machine(ctx: Ctx, status: int, devices: int = 1) -> M:
    b = fakes()
    m = ctx.machine()
    (m.root / "proc").mkdir(parents=True, exist_ok=True)
    (m.root / "proc" / "version").write_text(WSL_KERNEL)
    wsl = m.root / "usr" / "lib" / "wsl" / "lib"
    b.fake_nvml(wsl, driver="566.36", cuda=12070, name="NVIDIA GeForce RTX 3080", compute_capability="8.6")
    built = b.fake_libcuda(m.base / "libcuda-build", driver_cuda=12070, devices=devices,
                           name="NVIDIA GeForce RTX 3080", compute_capability="8.6", status=status)
    for name in ("libcuda.so.1.1", "libcuda.so.1", "libcuda.so"):
        shutil.copyfile(built, wsl / name)
    (m.root / "dev").mkdir(exist_ok=True)
    (m.root / "dev" / "dxg").write_text("")
    m.env.update(WSL_DISTRO_NAME="Debian", WSL_INTEROP="/run/WSL/8_interop")
    m.add_lib(wsl)
    return m


def wsl_case(ctx: Ctx, arg: tuple[int, tuple, bool]) -> None:
    status, args, need_windows = arg
    m = wsl_machine(ctx, status)
    r = m.run(*args, timeout=45)
    sane(r, (0, 1), want_json="--json" in args)
    text = r.out
    if "--json" in args:
        d = one_json(r)
        text = json.dumps(d.get("findings", d.get("actions", d)))
    bad = LINUX_ADVICE.search(text)
    expect(not bad, f"Linux-only advice on WSL 2 (cuInit {status}, {' '.join(args)}): {bad.group(0) if bad else ''!r}")
    if need_windows:
        expect(re.search(r"wsl --shutdown|Windows", text), f"neither the Windows driver nor wsl --shutdown named: "
                                                          f"{text[-600:]!r}")


family("wsl", "advice", {
    "803_deep_json": (803, ("check", "--deep", "--json"), True),
    "803_text": (803, ("check",), True),
    "803_markdown": (803, ("check", "--format", "markdown"), True),
    "803_fix_text": (803, ("fix",), True),
    "100_no_device_json": (100, ("check", "--json"), False),
    "35_insufficient_driver_json": (35, ("check", "--json"), False),
    "46_devices_unavailable_json": (46, ("check", "--json"), False),
    "803_explain_runtime_name": (803, ("explain", "--json", "cudaErrorSystemDriverMismatch"), True),
    "803_explain_code": (803, ("explain", "CD112"), False),
    "999_fix_text": (999, ("fix",), False),
    "304_os_call_failed_json": (304, ("check", "--json"), False),
}, wsl_case)


# ====================================================================================================================
# x. --json of every command under every failure

def jsonall_case(ctx: Ctx, arg: tuple[tuple, tuple, dict]) -> None:
    args, rcs, env = arg
    m = ctx.machine()
    p = m.base / "p"
    empty = m.base / "empty"
    empty.mkdir()
    args = tuple(a.replace("{P}", str(p)).replace("{E}", str(empty)) for a in args)
    r = m.run(*args, timeout=40, env=env)
    d = sane(r, rcs, want_json=True) or {}
    expect(str(d.get("schema", "")).startswith("cudnn-doctor/"), f"no schema: {str(d)[:200]}")
    expect(d.get("exit_code", r.rc) == r.rc, f"exit_code {d.get('exit_code')} in the object, {r.rc} in fact")
    expect(len(err_lines(r)) <= 1, f"more than one line on stderr: {r.err[-400:]!r}")


family("jsonall", "failure", {
    "check_bad_require": (("check", "--json", "--require", "cudnn>>9"), (2,), {}),
    "check_quiet_and_verbose": (("check", "--json", "-q", "-v"), (2,), {}),
    "check_probe_timeout_garbage": (("check", "--json"), (2,), {"CUDNN_DOCTOR_PROBE_TIMEOUT": "soon"}),
    "check_format_env_and_json": (("check", "--json"), (0, 1), {"CUDNN_DOCTOR_FORMAT": "junit"}),
    "fix_bad_shell": (("fix", "--json", "--shell", "tcsh"), (2,), {}),
    "compat_nothing": (("compat", "--json"), (2,), {}),
    "compat_bad_cuda": (("compat", "--json", "torch==2.5.1", "--cuda", "abc"), (2,), {}),
    "explain_missing_file": (("explain", "--json", "--from-file", "{P}/nothere.log"), (2,), {}),
    "image_missing_tar": (("image", "--json", "./nothere.tar"), (2,), {}),
    "install_missing_archive": (("install", "--json", "--from", "{P}/x.tar.xz", "--prefix", "{P}", "--yes"), (2,), {}),
    "install_empty_mirror": (("install", "--json", "--version", "9.19.0", "--cuda", "12", "--mirror", "{E}",
                              "--prefix", "{P}", "--yes"), (1, 2), {}),
    "uninstall_nothing_there": (("uninstall", "--json", "--prefix", "{P}", "--yes"), (1, 2), {}),
    "fleet_merge_missing": (("fleet", "merge", "--json", "{P}/x.json"), (2,), {}),
    "fleet_run_without_engine": (("fleet", "run", "--json"), (2,), {}),
    "bench_no_gpu": (("bench", "--json", "--size", "tiny"), (1, 2), {}),
    "bench_cudnn_is_passwd": (("bench", "--json", "--cudnn", "/etc/passwd"), (1, 2), {}),
    "unknown_command_json": (("chek", "--json"), (2,), {}),
    "strict_env_garbage": (("check", "--json"), (2,), {"CUDNN_DOCTOR_STRICT": "maybe"}),
    "require_env_control": (("check", "--json"), (2,), {"CUDNN_DOCTOR_REQUIRE": "cudnn>=9;\x1b[2J"}),
    "helper_timeout_arabic": (("check", "--json"), (2,), {"CUDNN_DOCTOR_HELPER_TIMEOUT": "\u0665"}),
}, jsonall_case)


@case("jsonall")
def reader_gone_every_command(ctx: Ctx) -> None:
    m = ctx.machine()
    gpu_machine(ctx, m)
    for args in (("check", "--json"), ("explain", "--list"), ("compat", "--list", "cudnn"), ("fix",)):
        r = m.bash(f"{m.doctor_line(*args)} | head -c 1 >/dev/null; echo \"rc=${{PIPESTATUS[0]}}\" >&2", timeout=30)
        expect("Traceback" not in r.err and "internal error" not in r.err, f"{args}: {r.err[-300:]!r}")
        mt = re.search(r"rc=(\d+)", r.err)
        expect(mt and mt.group(1) in ("0", "1", "141"), f"{args}: exit {mt.group(1) if mt else '?'} when the reader left")


# ====================================================================================================================
# x. explain fed FIFOs, devices, sparse files, NULs, invalid UTF-8

def explain_case(ctx: Ctx, arg: tuple[str, float]) -> None:
    how, seconds = arg
    m = ctx.machine()
    env = {"CUDNN_DOCTOR_READ_TIMEOUT": "3"}
    f = m.base / "in.log"
    stdin = None
    args: list[str] = ["explain", "--json", "--offline-only", "--from-file", str(f)]
    holder = None
    if how == "fifo_no_writer":
        os.mkfifo(f)
    elif how == "fifo_silent_writer":
        os.mkfifo(f)
        holder = subprocess.Popen(["sh", "-c", f"exec sleep 40 > '{f}'"], start_new_session=True)
    elif how == "dev_zero":
        args[-1] = "/dev/zero"
    elif how == "dev_urandom":
        args[-1] = "/dev/urandom"
    elif how == "sparse_2gb":
        with open(f, "wb") as h:
            h.truncate(2 << 30)
            h.seek(1 << 30)
            h.write(b"CUDNN_STATUS_NOT_INITIALIZED")
    elif how == "nul_bytes":
        f.write_bytes(b"RuntimeError: CUDNN_STATUS_\x00NOT_INITIALIZED\x00\x00 cuDNN error\n")
    elif how == "invalid_utf8":
        f.write_bytes(b"\xff\xfe RuntimeError: cuDNN error: CUDNN_STATUS_BAD_PARAM \xc3( \xed\xa0\x80\n")
    elif how == "folder":
        f.mkdir()
    elif how == "proc_self_mem":
        args[-1] = "/proc/self/mem"
    elif how == "ten_mb_one_line":
        f.write_bytes(b"Could not load library libcudnn_cnn_infer.so.8. " * 210000)
    elif how == "backtracking_bait":
        f.write_bytes(b"Could not load library " + b"libcudnn" * 50000 + b"." * 50000 + b" error" + b"a" * 200000)
    elif how == "stdin_dev_zero":
        args = ["explain", "--json", "--offline-only", "-"]
        stdin = None
    elif how == "stdin_nul_and_escapes":
        args = ["explain", "--offline-only", "-"]
        stdin = b"\x1b]0;owned\x07\x1b[2J CUDNN_STATUS_EXECUTION_FAILED\x00\r\n"
    elif how == "code_ten_thousand_digits":
        args = ["explain", "--json", "CD" + "9" * 10000]
    elif how == "terminal_escapes_in_message":
        args = ["explain", "--offline-only", "\x1b]8;;http://x\x07CUDNN_STATUS_ARCH_MISMATCH\x1b]8;;\x07\x9b2J"]
    try:
        if how == "stdin_dev_zero":
            with open("/dev/zero", "rb") as z:
                start = time.monotonic()
                proc = subprocess.Popen(m.argv(*args), env={**m.env, **env}, cwd=str(m.cwd), stdin=z,
                                        stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
                try:
                    out, err = proc.communicate(timeout=seconds + 10)
                except subprocess.TimeoutExpired:
                    kill_group(proc.pid)
                    raise Fail("hang reading /dev/zero on stdin") from None
                r = R(proc.returncode, out, err, time.monotonic() - start)
        else:
            before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
            r = run_proc(m.argv(*args), {**m.env, **env}, m.cwd, seconds + 10, stdin)
            peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
            if peak > before:
                expect(peak / 1024 < 400, f"peak memory {peak / 1024:.0f} MB")
    finally:
        if holder:
            kill_group(holder.pid)
    sane(r, (0, 1, 2), want_json="--json" in args)
    expect(r.secs < seconds, f"took {r.secs:.1f} s (bound {seconds} s)")
    no_raw_controls(r.out + r.err, "explain's output")
    if r.rc == 2 and "--json" not in args:
        one_line(r)


family("explain", "input", {
    "fifo_no_writer": ("fifo_no_writer", 15), "fifo_silent_writer": ("fifo_silent_writer", 15),
    "dev_zero": ("dev_zero", 15), "dev_urandom": ("dev_urandom", 15), "sparse_2gb": ("sparse_2gb", 20),
    "nul_bytes": ("nul_bytes", 15), "invalid_utf8": ("invalid_utf8", 15), "folder": ("folder", 10),
    "proc_self_mem": ("proc_self_mem", 10), "ten_mb_one_line": ("ten_mb_one_line", 20),
    "backtracking_bait": ("backtracking_bait", 20), "stdin_dev_zero": ("stdin_dev_zero", 15),
    "stdin_nul_and_escapes": ("stdin_nul_and_escapes", 15), "code_ten_thousand_digits": ("code_ten_thousand_digits", 10),
    "terminal_escapes_in_message": ("terminal_escapes_in_message", 10),
}, explain_case)


# ====================================================================================================================
# x. compat with absurd versions

def compat_case(ctx: Ctx, args: tuple) -> None:
    m = ctx.machine()
    r = m.run("compat", "--json", *args, timeout=30)
    sane(r, (0, 1, 2), want_json=True)
    expect(r.secs < 20, f"took {r.secs:.1f} s")
    t = m.run("compat", *args, timeout=30)
    sane(t, (0, 1, 2))
    no_raw_controls(t.out + t.err, "compat's text")
    if t.rc == 2:
        one_line(t)


family("compat", "absurd", {
    "version_23_digits": ("torch==99999999999999999999999",),
    "cuda_1e400": ("torch==2.5.1", "--cuda", "1e400"),
    "cuda_arabic_digit": ("torch==2.5.1", "--cuda", "12.\u0664"),
    "driver_twelve_digits": ("torch==2.5.1", "--driver", "999999999999.1"),
    "cc_sm_huge": ("tensorflow==2.15.0", "--compute-capability", "sm_9999999"),
    "cudnn_negative": ("cudnn==9.19.0", "--cudnn", "-1"),
    "name_with_newline": ("tensorflow==2.15.0\n[\u2713] compatible",),
    "os_with_escape": ("torch==2.5.1", "--os", "linux\x1b[2J"),
    "triple_equals": ("torch===2.5",),
    "local_version_cut": ("torch==2.5.1+cu",),
    "list_unknown_table": ("--list", "nope\x07"),
    "artifact_huge": ("--artifact", "nd4j-cuda-99999.9-platform"),
    "name_100k_chars": ("t" * 100000 + "==1",),
    "driver_zero": ("jax==0.4.30", "--cuda", "12", "--cudnn", "9", "--driver", "0"),
    "cc_zero": ("torch==2.5.1", "--compute-capability", "0.0"),
    "cuda_many_parts": ("torch==2.5.1", "--cuda", "12.4.99999999999999999999999999.1.2.3"),
}, compat_case)


# ====================================================================================================================
# x. fleet merge with hostile inventories

def _report(ctx: Ctx) -> bytes:
    cached = BUILD / "report.json"
    if not cached.exists():
        m = ctx.machine("rep")
        gpu_machine(ctx, m)
        r = m.run("check", "--json")
        cached.parent.mkdir(parents=True, exist_ok=True)
        tmp = cached.with_name(f"report.{os.getpid()}.tmp")
        tmp.write_bytes(r.outb)
        os.replace(tmp, cached)
    return cached.read_bytes()


def merge_case(ctx: Ctx, how: str) -> None:
    m = ctx.machine()
    inv = m.base / "inv"
    inv.mkdir()
    good = _report(ctx)
    (inv / "good.json").write_bytes(good)
    holder = None
    seconds = 20.0
    if how == "fifo":
        os.mkfifo(inv / "node2.json")
    elif how == "dev_zero_link":
        (inv / "node2.json").symlink_to("/dev/zero")
    elif how == "empty":
        (inv / "node2.json").write_bytes(b"")
    elif how == "array":
        (inv / "node2.json").write_text("[1, 2, 3]")
    elif how == "deep":
        (inv / "node2.json").write_bytes(b"[" * 100000 + b"]" * 100000)
    elif how == "sparse_2gb":
        with open(inv / "node2.json", "wb") as h:
            h.truncate(2 << 30)
    elif how == "five_thousand":
        for k in range(5000):
            (inv / f"n{k:04d}.json").write_bytes(good.replace(b'"hostname": "', f'"hostname": "n{k}-'.encode(), 1))
        seconds = 40
    elif how == "wrong_types":
        (inv / "node2.json").write_text(json.dumps({"schema": "cudnn-doctor/report/1", "gpus": "x", "host": 5,
                                                    "findings": {"a": 1}, "summary": [], "driver": None}))
    elif how == "nul_and_invalid_utf8":
        (inv / "node2.json").write_bytes(good[:200] + b"\x00\xff\xfe" + good[200:])
    elif how == "symlink_loop":
        (inv / "loop").symlink_to(inv)
    elif how == "hostile_name":
        (inv / "n\n\x1b[2J[\u2713] ok.json").write_bytes(good)
    elif how == "hostile_hostname":
        (inv / "node2.json").write_bytes(good.replace(b'"hostname": "', b'"hostname": "\\u001b]0;x\\u0007\\n::error::', 1))
    elif how == "same_hostname_twice":
        (inv / "node2.json").write_bytes(good)
    try:
        before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
        r = m.run("fleet", "merge", "--json", str(inv), timeout=seconds + 10)
        peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
        sane(r, (0, 1, 2), want_json=True)
        expect(r.secs < seconds, f"took {r.secs:.1f} s")
        if peak > before:
            expect(peak / 1024 < 500, f"peak memory {peak / 1024:.0f} MB")
        t = m.run("fleet", "merge", str(inv), timeout=seconds + 10)
        sane(t, (0, 1, 2))
        no_raw_controls(t.out + t.err, "fleet merge's text")
        for line in t.out.split("\n"):
            expect(not line.startswith("::"), f"a node's value began a workflow command line: {line!r}")
    finally:
        if holder:
            kill_group(holder.pid)


family("merge", "inventory", {k: k for k in (
    "fifo", "dev_zero_link", "empty", "array", "deep", "sparse_2gb", "five_thousand", "wrong_types",
    "nul_and_invalid_utf8", "symlink_loop", "hostile_name", "hostile_hostname", "same_hostname_twice")}, merge_case)
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
    print(f"{'class':10s} {'held':>14s}  skipped  what")
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
        print(f"{cls:10s} held {passed:3d} of {counted:<3d}  {skipped:7d}  {CLASSES[cls]}")
    print(f"{'total':10s} held {total_pass:3d} of {total:<3d}")
    if list_failures:
        print_failures(results)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tree", required=True, type=Path)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--python", default=None, help="the interpreter that runs the doctor (default: the CI venv)")
    parser.add_argument("--only", default="")
    parser.add_argument("--list-failures", action="store_true")
    parser.add_argument("--list", action="store_true", help="list the case ids and stop")
    parser.add_argument("--results", type=Path, default=None, help="where the results go (JSON)")
    parser.add_argument("--from-results", type=Path, default=None, help="print the totals of a saved run")
    parser.add_argument("--run-case", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--work", type=Path, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    tree = args.tree.resolve()
    if args.python:
        os.environ["REDTEAM_PYTHON"] = args.python
        global PY
        PY = args.python
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
    scratch = Path(tempfile.mkdtemp(prefix="redteam6-43-"))
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
