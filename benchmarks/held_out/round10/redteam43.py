#!/usr/bin/env python3
# ruff: noqa  (an evaluation set: its harness is kept as the helper wrote it apart from the code)
"""Round ten red-team over issue 43's surfaces and every other surface of the CLI (sealed: builders never read it).

    python3 redteam.py --tree CHECKOUT [--jobs 2] [--only SUBSTRINGS] [--list-failures] [--python PY]

Each case runs in a process of its own (this file with --run-case), in a scratch folder under /var/tmp, against the
doctor of CHECKOUT started as `PYTHONPATH=CHECKOUT PY -m cudnn_doctor ...` in a pretend machine
(CUDNN_DOCTOR_SYSTEM_PREFIX, HOME, CUDNN_DOCTOR_CACHE_DIR of its own). Round ten's classes are new: the doctor's
settings given values README's list of refused values does not name, the doctor's interpreter under Python's own
environment variables (as CI jobs set them), the compat/ data changed under the installed package, `install` through a
hostile NVIDIA redist mirror on 127.0.0.1, descriptors and internal variables a caller or a parent doctor leaves,
and values each machine format must escape, read by strict parsers. A case holds when a user would agree: no
traceback or internal error, the exit code README documents, one JSON object with --json, nothing of the user's lost
or half-written, bounded time. A case past its limit fails as a hang.
"""

from __future__ import annotations

import argparse
import fcntl
import gzip
import hashlib
import http.server
import io
import json
import os
import pty
import random
import re
import resource
import shlex
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
import zipfile
import zlib
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

HERE = Path(__file__).resolve().parent
PY = os.environ.get("REDTEAM_PYTHON") or sys.executable
FAKES_DEFAULT = "/var/tmp/cudnn-doctor-fakes10"
CASES: dict[str, tuple[str, Callable, int]] = {}
CLASSES = {
    "envnum": "every CUDNN_DOCTOR_* setting given 1e400, 1e-320, fullwidth/superscript digits, 30 digits, '20\\n', words in odd case/width",
    "pyflags": "the doctor's interpreter under PYTHONWARNINGS=error, -X dev, PYTHONOPTIMIZE=2, malloc_debug, int-digit limits, UTF-8 mode",
    "compatdata": "compat/ files of the installed package changed: invalid, empty, binary, UTF-16, sourceless, wrong types, FIFO, loop",
    "mirror": "install --version through a hostile redist mirror on 127.0.0.1: manifests, paths, sizes, drips, resets, redirects",
    "fds": "1,100 inherited descriptors, a caller's capture pipe, sockets, appended/offset stdout, a parent doctor's variables",
    "parsers": "values each format must escape (C0, NEL, LSEP, BOM, quotes, %0A, ::, </failure>, |) read by strict parsers",
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
                    "CUDNN_DOCTOR_FAKES_DIR": os.environ.get("CUDNN_DOCTOR_FAKES_DIR", FAKES_DEFAULT)}
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


BUILD = Path(os.environ.get("REDTEAM10_BUILD", "/var/tmp/redteam10-43-build"))


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
# helpers taken over from the round-six harness (the pretend machine's images, installs, registry)


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



def _sourced_scripts_exist(m: M, rcfile: Path) -> None:
    """Every line of RCFILE that mentions cudnn-doctor and sources a file names a file that exists and is whole."""
    if not rcfile.is_file():
        return
    for line in rcfile.read_bytes().splitlines():
        if b"cudnn-doctor" in line and re.match(rb"\s*(source|\.)\s", line):
            for cand in re.findall(rb"['\"]?(/[^'\"]+cudnn-doctor[^'\"\s]*)", line):
                p = Path(os.fsdecode(cand))
                expect(p.is_file() and p.stat().st_size > 0, f"{rcfile.name} sources {p}, which is not there")


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
    r = m.run("image", target, "--json", timeout=seconds + 10, env=env)
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    d = sane(r, rcs, want_json=True) or {}
    expect(r.secs < seconds, f"took {r.secs:.1f} s (bound {seconds} s)")
    if peak > before:
        expect(peak / 1024 < mem_mb, f"peak memory {peak / 1024:.0f} MB (bound {mem_mb} MB)")
    expect("root:x:0:0" not in r.out and "root:x:0:0" not in r.err, "a file outside the image reached the output")
    if text_too:
        t = m.run("image", target, timeout=seconds + 10, env=env)
        sane(t, rcs)
        no_raw_controls(t.out + t.err, "image's text")
        if t.rc == 2:
            one_line(t)
    return d


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



# ====================================================================================================================
# common pieces of round seven

def judge(r: R, rcs: tuple[int, ...] = (0, 1), want_json: bool = True, secs: float = 40,
          lenient: bool = False) -> dict | None:
    """No traceback or internal error, an exit code README documents, one JSON object with --json, within SECS,
    and an error (exit 2) one line on stderr when no JSON was asked for."""
    data = sane(r, rcs, want_json=want_json, lenient=lenient)
    expect(r.secs < secs, f"took {r.secs:.1f} s (bound {secs} s): {r!r}")
    if r.rc == 2 and not want_json:
        one_line(r)
    if want_json and data is not None:
        expect("schema" in data, f"the JSON object has no schema: {r.out[:300]!r}")
        bugs = codes(data) & {"CD901", "CD902"}
        expect(not bugs, f"a bug of the doctor's own reported as {sorted(bugs)}: "
                         f"{[f.get('detail', '')[:300] for f in data.get('findings', []) if f.get('code') in bugs]}")
    return data


HOSTILE_C = r"""
#define _GNU_SOURCE
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>
static void out(int fd, const char *s) { ssize_t r = write(fd, s, strlen(s)); (void)r; }
__attribute__((constructor)) static void hostile_ctor(void) {
#ifdef ONLY_CHILDREN
    if (!getenv("CUDNN_DOCTOR_CHILD_TOKEN")) return;
#endif
    int mode = MODE;
    const char *mark = getenv("REDTEAM_LOADED_MARK");
    if (mark) { int fd = open(mark, O_WRONLY | O_CREAT | O_APPEND, 0666); if (fd >= 0) { out(fd, "loaded\n");
        close(fd); } }
    if (mode == 1) exit(0);
    if (mode == 2) { for (;;) sleep(1); }
    if (mode == 3) { static char buf[65536]; memset(buf, 'x', sizeof buf); for (int i = 0; i < 16; i++) {
        ssize_t r = write(1, buf, sizeof buf); r = write(2, buf, sizeof buf); (void)r; } }
    if (mode == 4) { for (int fd = 0; fd < 1024; fd++) close(fd); }
    if (mode == 5) raise(SIGSTOP);
    if (mode == 6) kill(0, SIGTERM);
    if (mode == 7) { if (fork() == 0) { setsid(); sleep(60); _exit(0); } }
    if (mode == 8) abort();
    if (mode == 9) { out(1, "\033]0;owned\007\033[2J{\"schema\": \"cudnn-doctor/report/1\", \"findings\": []}\n");
                      out(2, "\033[31mFAKE\033[0m\n"); }
    if (mode == 10) { int fd = open("/dev/full", O_WRONLY); dup2(fd, 1); dup2(fd, 2); }
    if (mode == 11) clearenv();
    if (mode == 12) { out(1, "{\"answer\": 1}\n"); _exit(0); }
    if (mode == 13) alarm(1);
    if (mode == 14) { struct rlimit l = {3, 3}; setrlimit(RLIMIT_NOFILE, &l); }
    if (mode == 15) { if (fork() == 0) { if (fork() == 0) { for (int i = 0; i < 200; i++) {
        out(1, "noise\n"); usleep(100000); } _exit(0); } _exit(0); } }
    if (mode == 16) { raise(SIGSEGV); }
    if (mode == 17) { int fd = open("/dev/null", O_RDONLY); dup2(fd, 1); dup2(fd, 2); for (int f = 3; f < 64; f++)
        dup2(fd, f); }
    if (mode == 18) { chdir("/"); umask(0777); }
    if (mode == 19) { int fd = open("/dev/tty", O_WRONLY); if (fd >= 0) { out(fd, "\033]52;c;cm0gLXJmIH4=\007"
        "REDTEAM-TTY\n"); close(fd); } }
    if (mode == 20) { char c; ssize_t r = read(0, &c, 1); (void)r; }
}
int cudnnGetVersion(void) { return 91900; }
int cuInit(unsigned f) { (void)f; return 0; }
int nvmlInit_v2(void) { return 0; }
"""

ELF_MODES = {"exit_in_ctor": 1, "loops_in_ctor": 2, "floods_stdout_stderr": 3, "closes_every_fd": 4,
             "stops_itself": 5, "kills_its_group": 6, "forks_a_daemon": 7, "aborts": 8, "fake_json_and_escapes": 9,
             "stdout_to_dev_full": 10, "clears_environ": 11, "prints_and_exits_zero": 12, "arms_alarm": 13,
             "open_files_limit_3": 14, "grandchild_keeps_printing": 15, "segfaults": 16,
             "every_fd_to_dev_null": 17, "chdir_and_umask": 18}


def hostile_elf(mode: int, soname: str, only_children: bool = False) -> Path:
    extra = [f"-DMODE={mode}", f"-Wl,-soname,{soname}"] + (["-DONLY_CHILDREN"] if only_children else [])
    return cc(soname.replace("/", "_"), HOSTILE_C, extra)


FILE_KINDS = ("fifo", "dev_zero", "sparse_4g", "linker_script", "elf_header_only", "folder", "dangling", "loop",
              "empty", "dev_urandom", "proc_fd0", "text_nul")


def hostile_file(path: Path, kind: str) -> None:
    """PATH made into a hostile kind of file (not an ELF library)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.is_symlink() or path.exists():
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        else:
            path.unlink()
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "dev_zero":
        path.symlink_to("/dev/zero")
    elif kind == "dev_urandom":
        path.symlink_to("/dev/urandom")
    elif kind == "proc_fd0":
        path.symlink_to("/proc/self/fd/0")
    elif kind == "sparse_4g":
        with open(path, "wb") as f:
            f.truncate(4 << 30)
    elif kind == "linker_script":
        path.write_text("/* GNU ld script */\nINPUT(libc.so.6 -lm)\n")
    elif kind == "elf_header_only":
        path.write_bytes(b"\x7fELF\x02\x01\x01" + b"\0" * 57)
    elif kind == "folder":
        path.mkdir()
        (path / "inside").write_text("x")
    elif kind == "dangling":
        path.symlink_to(path.parent / "nowhere" / "libnothing.so")
    elif kind == "loop":
        path.symlink_to(path.name)
    elif kind == "empty":
        path.write_bytes(b"")
    elif kind == "text_nul":
        path.write_bytes(b"\0\xff\xfe garbage \x1b[2J" * 1000)
    else:
        raise ValueError(kind)


def place_hostile(path: Path, kind: str, soname: str, only_children: bool = False) -> None:
    if kind in ELF_MODES:
        path.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(hostile_elf(ELF_MODES[kind], soname, only_children), path)
    else:
        hostile_file(path, kind)


def fingerprint(path: Path) -> tuple:
    st = path.lstat()
    return (stat.S_IFMT(st.st_mode), st.st_size if stat.S_ISREG(st.st_mode) else 0,
            os.readlink(path) if stat.S_ISLNK(st.st_mode) else "")


def leftovers_of(marker_dir: Path) -> list[str]:
    """Processes whose working folder or command line names MARKER_DIR (what a case left running)."""
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        try:
            cwd = os.readlink(f"/proc/{pid}/cwd")
        except OSError:
            cwd = ""
        if str(marker_dir) in cwd or str(marker_dir) in _cmdline(pid):
            if alive(pid):
                found.append(f"{pid}: {_cmdline(pid)[:120]}")
    return found


def reap(marker_dir: Path) -> None:
    for line in leftovers_of(marker_dir):
        try:
            os.kill(int(line.split(":")[0]), signal.SIGKILL)
        except OSError:
            pass


GOOD_TORCH = '''
import os
__version__ = "2.11.0+cu130"
class version:
    cuda = "13.0"
class _Cudnn:
    @staticmethod
    def version():
        return 91900
class backends:
    cudnn = _Cudnn
def _work(*a, **k):
    why = os.environ.get("REDTEAM_TORCH_FAILS_WHEN")
    if why and os.environ.get(why):
        raise RuntimeError("cuDNN error: CUDNN_STATUS_NOT_INITIALIZED")
    return _T()
class _T:
    def cuda(self):
        return self
    def __call__(self, *a, **k):
        return _work()
class cuda:
    @staticmethod
    def is_available():
        return True
    @staticmethod
    def device_count():
        return 1
    @staticmethod
    def synchronize():
        return None
randn = _work
class nn:
    class functional:
        conv2d = staticmethod(_work)
    class LSTM(_T):
        def __init__(self, *a, **k):
            pass
'''


def torch_machine(ctx: Ctx, m: M, init: str = GOOD_TORCH, gpus: int = 1) -> Path:
    """A GPU machine with a python3 on PATH whose site-packages holds a (fake) torch that --deep imports."""
    from tests.test_frameworks import install_torch  # type: ignore
    gpu_machine(ctx, m, gpus=gpus)
    site = m.base / "venv" / "lib" / "python3.12" / "site-packages"
    site.mkdir(parents=True)
    (m.base / "venv" / "bin").mkdir()
    py = m.base / "venv" / "bin" / "python3"
    py.write_text(f"#!/bin/sh\nPYTHONPATH={site} exec {PY} \"$@\"\n")
    py.chmod(0o755)
    m.env["PATH"] = f"{m.base / 'venv' / 'bin'}:{m.env['PATH']}"
    install_torch(site, version="2.11.0+cu130", cuda="13.0", cudnn=91900, pin="nvidia-cudnn-cu13==9.19.0.56")
    (site / "torch" / "__init__.py").write_text(init)
    return site


def _cmdline(pid: str) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


# ====================================================================================================================
# loader: a hostile libcudnn / libcuda.so.1 / libnvidia-ml.so.1 first on the loader's path


# round six's judges of shell lines (taken over)
FAKE_SRUN = r"""#!/bin/sh
# a fake srun: writes what REDTEAM_NODES says into --output's pattern, one file per node
out=""
for a in "$@"; do case "$a" in --output=*) out="${a#--output=}";; --error=*) err="${a#--error=}";; esac; done
dir=$(dirname "$out")
printf '%s\n' "$@" > "$dir/../srun-argv" 2>/dev/null
sh "$REDTEAM_NODES" "$dir"
"""

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


SHELLS = {"bash": ["bash", "--norc", "--noprofile"], "zsh": ["zsh", "-f"], "fish": ["fish", "--no-config"]}


def run_in_shell(shell: str, lines: list[str], base: Path, env: dict) -> dict:
    script = base / f"lines.{shell}"
    script.write_bytes("\n".join(lines).encode("utf-8", "surrogateescape") + b"\n")
    s = run_proc([*SHELLS[shell], "-c", f"source {script}; exec /usr/bin/env -0"], env, base, 20)
    expect(s.rc == 0, f"{shell} failed sourcing the lines: {s!r}")
    return dict(e.split(b"=", 1) for e in s.outb.split(b"\0") if b"=" in e)



# ====================================================================================================================
# round eight: common pieces

def healthy(ctx: Ctx, name: str = "m") -> M:
    """A pretend GPU machine (fake NVML, libcuda with one GPU) with a fake cuDNN 9.19 on LD_LIBRARY_PATH."""
    m = ctx.machine(name)
    gpu_machine(ctx, m, gpus=1)
    folder = m.base / "cudnn" / "lib"
    fakes().fake_cudnn(folder, version=91900, cudart=13000, sublibraries=CUDNN9)
    m.add_lib(folder)
    return m


def reports_dir(m: M) -> Path:
    d = m.base / "reports"
    d.mkdir(exist_ok=True)
    r = m.run("check", "--json", timeout=40)
    good = r.outb if r.outb.strip().startswith(b"{") else json.dumps(
        {"schema": "cudnn-doctor/report/1", "findings": []}).encode()
    (d / "node1.json").write_bytes(good)
    (d / "node2.json").write_bytes(good)
    return d


def surface(ctx: Ctx, m: M, which: str) -> tuple[list[str], bool, tuple[int, ...]]:
    """The argv of one surface of the CLI on machine M, whether it prints JSON, and the exit codes README allows."""
    if which == "check":
        return ["check", "--json"], True, (0, 1)
    if which == "check_text":
        return ["check"], False, (0, 1)
    if which == "markdown":
        return ["check", "--format", "markdown"], False, (0, 1)
    if which == "deep":
        return ["check", "--deep", "--json"], True, (0, 1)
    if which == "fix":
        return ["fix", "--json"], True, (0, 1)
    if which == "fix_text":
        return ["fix"], False, (0, 1)
    if which == "explain":
        return ["explain", "CD301", "--json"], True, (0, 1)
    if which == "explain_text":
        return ["explain", "CD301"], False, (0, 1)
    if which == "explain_msg":
        return ["explain", "Could not load library libcudnn_ops.so.9. Error: libcudnn_ops.so.9: cannot open shared "
                "object file: No such file or directory", "--json"], True, (0, 1)
    if which == "compat":
        return ["compat", "torch==2.5.1", "--json"], True, (0, 1)
    if which == "compat_list":
        return ["compat", "--list", "cudnn"], False, (0, 1)
    if which == "image":
        return ["image", str(raw_oci(ctx, name=f"oci-{m.base.name}")), "--json"], True, (0, 1)
    if which == "merge":
        return ["fleet", "merge", str(reports_dir(m)), "--json"], True, (0, 1)
    if which == "merge_text":
        return ["fleet", "merge", str(reports_dir(m))], False, (0, 1)
    if which == "install":
        return ["install", "--from", str(archive(ctx)), "--prefix", str(m.base / "pfx"), "--dry-run", "--json"], \
            True, (0, 1)
    if which == "install_yes":
        return ["install", "--from", str(archive(ctx)), "--prefix", str(m.base / "pfx"), "--yes", "--json"], \
            True, (0, 1)
    if which == "bench":
        return ["bench", "--json", "--size", "tiny", "--repeats", "1"], True, (0, 1)
    if which == "help":
        return ["check", "--help"], False, (0,)
    if which == "version":
        return ["-V"], False, (0,)
    if which == "show_completion":
        return ["--show-completion", "bash"], False, (0,)
    raise ValueError(which)


def judge_surface(r: R, want_json: bool, rcs: tuple[int, ...], secs: float = 40, extra_rcs: tuple = ()) -> dict | None:
    data = judge(r, tuple(rcs) + tuple(extra_rcs), want_json=want_json, secs=secs)
    if not want_json:
        no_raw_controls(strip_sgr(r.out) + strip_sgr(r.err), "the text output")
    return data


SGR = re.compile(r"\x1b\[[0-9;]*m")


def strip_sgr(text: str) -> str:
    return SGR.sub("", text)


def error_text(r: R) -> str:
    text = r.err
    try:
        data = json.loads(r.out)
        if isinstance(data, dict):
            text += json.dumps(data.get("error", ""), ensure_ascii=False)
    except ValueError:
        pass
    return text


def without_ld_so(r: R) -> R:
    """R without the lines ld.so itself writes to the doctor's stderr about LD_PRELOAD (not the doctor's words)."""
    keep = b"\n".join(x for x in r.errb.split(b"\n") if not x.startswith(b"ERROR: ld.so: "))
    return R(r.rc, r.outb, keep, r.secs)


def binary_value(seed: int, n: int = 300) -> str:
    rng = random.Random(seed)
    return os.fsdecode(bytes(rng.randrange(1, 256) for _ in range(n)))


NOBODY_PY = os.environ.get("REDTEAM_NOBODY_PYTHON") or "/usr/bin/python3"


def as_nobody(m: M, script: str, timeout: float = 50, env: dict | None = None) -> R:
    if shutil.which("setpriv") is None or os.geteuid() != 0:
        raise Skip("needs root and setpriv")
    subprocess.run(["chown", "-R", "65534:65534", str(m.base)], check=True)
    p = m.base
    while p != Path("/") and p != p.parent:
        if str(p).startswith("/var/tmp/"):
            os.chmod(p, os.stat(p).st_mode | 0o011)
        p = p.parent
    # the CI venv's interpreter lives under root's pyenv, which nobody cannot enter: the system's python3 of the same
    # minor version runs the doctor, with the venv's site-packages (readable by all) after the tree
    script = script.replace(PY, NOBODY_PY)
    sites = sorted(Path(PY).parent.parent.glob("lib/python3*/site-packages"))
    pp = m.env["PYTHONPATH"] + "".join(f":{s}" for s in sites)
    return run_proc(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "bash", "-c", script],
                    {**m.env, "PYTHONPATH": pp, **(env or {})}, m.cwd, timeout)



def _raw(h: http.server.BaseHTTPRequestHandler, data: bytes, close: bool = True) -> bool:
    h.wfile.write(data)
    h.wfile.flush()
    if close:
        h.close_connection = True
    return True



def bench_machine(ctx: Ctx, m: M | None = None) -> tuple[M, list[str]]:
    from tests.fakes.build import compile_library
    m = m or ctx.machine()
    gpu_machine(ctx, m, gpus=1)
    rt = compile_library("fake_bench_cudart.c", "libcudart.so.13", {}, soname="libcudart.so.13")
    lib = compile_library("fake_bench_cudnn.c", "libcudnn.so.9", {}, soname="libcudnn.so.9")
    m.env.pop("CUDNN_DOCTOR_CPU_BASELINE", None)
    return m, ["bench", "--json", "--size", "tiny", "--repeats", "1", "--cudnn", str(lib), "--cudart", str(rt)]


# ====================================================================================================================
# round nine: common pieces

def hold(r: R, want_json: bool, rcs: tuple = (0, 1), secs: float = 40) -> dict | None:
    """The common bounds, and text without raw controls."""
    data = judge(r, rcs, want_json=want_json, secs=secs)
    if not want_json:
        no_raw_controls(strip_sgr(r.out) + strip_sgr(r.err), "the text output")
    return data


def argbin(seed: int, n: int = 200) -> str:
    """NUL-free binary as an argument (undecodable bytes travel as surrogate escapes)."""
    return binary_value(seed, n)


def scripted(path: Path, body: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(body)
    path.chmod(0o755)
    return path


def as_uid(m: M, uid: int, args: list[str], timeout: float = 50, env: dict | None = None,
           drop: tuple = ()) -> R:
    """The doctor as a user id with no entry in the password database (a container started with --user UID)."""
    if shutil.which("setpriv") is None or os.geteuid() != 0:
        raise Skip("needs root and setpriv")
    subprocess.run(["chown", "-R", f"{uid}:{uid}", str(m.base)], check=True)
    p = m.base
    while p != Path("/") and p != p.parent:
        if str(p).startswith("/var/tmp/"):
            os.chmod(p, os.stat(p).st_mode | 0o011)
        p = p.parent
    sites = sorted(Path(PY).parent.parent.glob("lib/python3*/site-packages"))
    full = {**m.env, "PYTHONPATH": m.env["PYTHONPATH"] + "".join(f":{s}" for s in sites), **(env or {})}
    for k in drop:
        full.pop(k, None)
    argv = ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", NOBODY_PY, "-m", "cudnn_doctor", *args]
    return run_proc(argv, full, m.cwd, timeout)


def machine_fast(ctx: Ctx, name: str = "m") -> M:
    """A pretend machine with a GPU and cuDNN (the healthy one of round eight)."""
    return healthy(ctx, name)



# ====================================================================================================================
# round ten: common pieces

def m_env_argv(m: M, args: list[str], env: dict | None = None, timeout: float = 45, stdin: bytes | None = None) -> R:
    return m.run(*args, env=env, timeout=timeout, stdin=stdin)


def named_in_error(r: R, names: tuple[str, ...], why: str) -> None:
    text = error_text(r)
    expect(any(n in text for n in names), f"{why}: the error does not name {names[0]}: {r!r}")


def judge_refusal_or_report(r: R, want_json: bool, rcs: tuple = (0, 1), secs: float = 40,
                            names: tuple[str, ...] = ()) -> dict | None:
    """exit 0/1 (a report), or 2 in one line / one JSON object naming what was refused."""
    data = hold(r, want_json, tuple(rcs) + (2,), secs)
    if r.rc == 2 and names:
        named_in_error(r, names, "a usage error caused by a setting")
    return data


# ====================================================================================================================
# envnum: each CUDNN_DOCTOR_* setting with values README's list of refused values does not name

NUM_POOL = {
    "zero": "0", "minus_one": "-1", "overflow_1e400": "1e400", "denormal": "1e-320", "tiny": "0.000001",
    "fullwidth": "\uff12\uff10", "newline_after": "20\n", "inner_space": "2 0", "plus": "+20", "digits_30": "9" * 30,
    "exp": "2e1", "trailing_dot": "20.", "leading_dot": ".5", "minus_zero_float": "-0.0", "superscript": "\u00b2",
    "thin_space": "20\u2009", "e_only": "e", "comma_decimal": "0,5",
}
WORD_POOL = {
    "upper_true": "TRUE", "yes": "yes", "on": "on", "blank_one": " 1", "one_nl": "1\n", "JSON": "JSON",
    "json_space": "json ", "fullwidth_json": "\uff4a\uff53\uff4f\uff4e", "two_formats": "github,json", "empty": "",
    "double_comma": "CD1,,CD2", "tabs": "CD1 CD2\tCD3", "lower": "cd201", "bare_cd": "CD",
    "cd_huge": "CD" + "9" * 25, "semis": "cudnn>=9;;", "semi": ";", "arabic_req": "cudnn>=\u0669",
    "spaced_req": "cudnn >= 9.1 , < 10", "nul_free_ctl": "json\x1b[2J", "dash_json": "--json",
}
NUM_VARS = {  # variable -> surface
    "CUDNN_DOCTOR_PROBE_TIMEOUT": "check", "CUDNN_DOCTOR_HELPER_TIMEOUT": "check",
    "CUDNN_DOCTOR_DEEP_TIMEOUT": "deep", "CUDNN_DOCTOR_ALLREDUCE_TIMEOUT": "deep",
    "CUDNN_DOCTOR_READ_TIMEOUT": "explain_stdin", "CUDNN_DOCTOR_IMAGE_TIMEOUT": "image",
    "CUDNN_DOCTOR_IMAGE_MAX_LAYER_BYTES": "image", "CUDNN_DOCTOR_BENCH_TIMEOUT": "bench",
    "CUDNN_DOCTOR_DOWNLOAD_DEADLINE": "install_http", "CUDNN_DOCTOR_RETRY_BACKOFF": "install_http",
    "CUDNN_DOCTOR_PROBE_TIMEOUT@fix": "fix_text", "CUDNN_DOCTOR_HELPER_TIMEOUT@completion": "completion",
}
WORD_VARS = {
    "CUDNN_DOCTOR_STRICT": "check", "CUDNN_DOCTOR_FORMAT": "check_plain", "CUDNN_DOCTOR_IGNORE": "check",
    "CUDNN_DOCTOR_SELECT": "check", "CUDNN_DOCTOR_REQUIRE": "check", "CUDNN_DOCTOR_CPU_BASELINE": "bench",
    "CUDNN_DOCTOR_FORMAT@text": "check_text_plain", "CUDNN_DOCTOR_REQUIRE@fix": "fix_text",
}


def http_mirror(ctx: Ctx, behave: Callable | None = None) -> tuple[Reg, str, dict]:
    """A mirror of NVIDIA's redist folder (cuDNN 9.19.0 for CUDA 13) on 127.0.0.1; BEHAVE may answer a request."""
    a13 = ctx.work / "a13"
    a13.mkdir(exist_ok=True)
    arc = _mirror_archive()
    data = arc.read_bytes()
    entry = {"relative_path": f"cudnn/linux-x86_64/{arc.name}", "sha256": hashlib.sha256(data).hexdigest(),
             "md5": hashlib.md5(data).hexdigest(), "size": str(len(data))}
    man = {"release_date": "2026-01-01", "release_label": "9.19.0.7", "release_product": "cudnn",
           "cudnn": {"name": "NVIDIA CUDA Deep Neural Network library", "license": "cudnn", "version": "9.19.0.7",
                     "cuda_variant": ["13"], "linux-x86_64": {"cuda13": entry}}}
    state = {"archive": data, "name": arc.name, "manifest": man, "entry": entry}

    def default(h: http.server.BaseHTTPRequestHandler, reg: Reg) -> bool:
        if behave is not None and behave(h, reg, state):
            return True
        path = h.path.split("?")[0]
        if path == "/redist/redistrib_9.19.0.json":
            return reg.send(h, json.dumps(state["manifest"]).encode())
        if path == f"/redist/cudnn/linux-x86_64/{state['name']}":
            return reg.send(h, state["archive"], "application/x-xz")
        if path == "/redist/":
            return reg.send(h, b'<html><a href="redistrib_9.19.0.json">redistrib_9.19.0.json</a></html>',
                            "text/html")
        return reg.send(h, b"not found", "text/plain", code=404)

    reg = Reg(default)
    return reg, f"http://127.0.0.1:{reg.port}/redist/", state


def _mirror_archive() -> Path:
    key = "txz13-91900"
    shared = BUILD / "archives" / key
    done = shared / "done"
    if not done.exists():
        shared.mkdir(parents=True, exist_ok=True)
        tmp = Path(str(shared) + f".{os.getpid()}")
        tmp.mkdir(parents=True, exist_ok=True)
        a = inst().make_archive("txz", tmp, version=91900, cudart=13010, cuda=13)
        os.replace(a, shared / a.name)
        done.write_text(a.name)
        shutil.rmtree(tmp, ignore_errors=True)
    return shared / done.read_text()


def envnum_surface(ctx: Ctx, m: M, which: str) -> tuple[list[str], bool, dict, bytes | None, Callable | None]:
    env: dict = {}
    if which == "check":
        return ["check", "--json"], True, env, None, None
    if which == "check_plain":
        return ["check"], False, env, None, None
    if which == "check_text_plain":
        return ["check"], False, {"NO_COLOR": "1"}, None, None
    if which == "deep":
        return ["check", "--deep", "--json"], True, env, None, None
    if which == "explain_stdin":
        return ["explain", "-", "--json"], True, env, b"RuntimeError: cuDNN error: CUDNN_STATUS_NOT_INITIALIZED\n", None
    if which == "image":
        return ["image", str(raw_oci(ctx, name="oci-envnum")), "--json"], True, env, None, None
    if which == "bench":
        _, args = bench_machine(ctx, m)
        return args, True, {"CUDNN_DOCTOR_BENCH_TIMEOUT": "20"}, None, None
    if which == "install_http":
        reg, url, _ = http_mirror(ctx)
        return (["install", "--version", "9.19.0", "--cuda", "13", "--mirror", url, "--prefix",
                 str(m.base / "pfx"), "--yes", "--json"], True, env, None, reg.close)
    if which == "fix_text":
        return ["fix"], False, env, None, None
    if which == "completion":
        return ["--install-completion", "bash"], False, env, None, None
    raise ValueError(which)


def envnum_case(ctx: Ctx, arg: tuple[str, str, str]) -> None:
    var_key, value, kind = arg
    var = var_key.split("@")[0]
    which = NUM_VARS.get(var_key) or WORD_VARS[var_key]
    m = ctx.machine() if which == "bench" else healthy(ctx)
    args, want_json, env, stdin, closer = envnum_surface(ctx, m, NUM_VARS.get(var_key) or WORD_VARS[var_key])
    env = {**env, var: value} if not (var == "CUDNN_DOCTOR_BENCH_TIMEOUT") else {var: value}
    try:
        r = m.run(*args, env=env, timeout=60, stdin=stdin)
    finally:
        if closer:
            closer()
    if var == "CUDNN_DOCTOR_FORMAT" and r.rc in (0, 1):
        # the format the variable chose, or the text report: either whole
        no_raw_controls(strip_sgr(r.out) + strip_sgr(r.err), "the output")
        if r.out.lstrip().startswith("{"):
            one_json(r)
    if var == "CUDNN_DOCTOR_FORMAT" and r.out.lstrip().startswith("{"):
        want_json = True
    judge_refusal_or_report(r, want_json, secs=50, names=(var,))
    if want_json and var == "CUDNN_DOCTOR_STRICT" and r.rc in (0, 1):
        pass


def _envnum_params() -> dict:
    params = {}
    for i, var in enumerate(NUM_VARS):
        rng = random.Random(1000 + i)
        for k in rng.sample(sorted(NUM_POOL), 8):
            params[f"{var.replace('CUDNN_DOCTOR_', '')}-{k}"] = (var, NUM_POOL[k], k)
    for i, var in enumerate(WORD_VARS):
        rng = random.Random(2000 + i)
        for k in rng.sample(sorted(WORD_POOL), 8):
            params[f"{var.replace('CUDNN_DOCTOR_', '')}-{k}"] = (var, WORD_POOL[k], k)
    return params


family("envnum", "setting", _envnum_params(), envnum_case, limit=90)


# ====================================================================================================================
# pyflags: the doctor's own interpreter (and its children) under Python's own environment variables, as CI sets them

PYFLAGS = {
    "warnings_error": {"PYTHONWARNINGS": "error"},
    "warnings_always": {"PYTHONWARNINGS": "always"},
    "devmode": {"PYTHONDEVMODE": "1"},
    "dev_resource_error": {"PYTHONDEVMODE": "1", "PYTHONWARNINGS": "error::ResourceWarning"},
    "deprecation_error": {"PYTHONWARNINGS": "error::DeprecationWarning,error::PendingDeprecationWarning"},
    "optimize_2": {"PYTHONOPTIMIZE": "2"},
    "malloc_debug": {"PYTHONMALLOC": "malloc_debug"},
    "hashseed_max": {"PYTHONHASHSEED": "4294967295"},
    "int_digits_640": {"PYTHONINTMAXSTRDIGITS": "640"},
    "utf8_mode_c_locale": {"PYTHONUTF8": "1", "LANG": "C", "LC_ALL": "C"},
    "faulthandler_tracemalloc": {"PYTHONFAULTHANDLER": "1", "PYTHONTRACEMALLOC": "1"},
    "pycache_unwritable": {"PYTHONPYCACHEPREFIX": "/proc/1/redteam-pycache"},
    "safe_path_no_user_site": {"PYTHONSAFEPATH": "1", "PYTHONNOUSERSITE": "1", "PYTHONNODEBUGRANGES": "1"},
    "unbuffered_hash0": {"PYTHONUNBUFFERED": "1", "PYTHONHASHSEED": "0"},
}
PYFLAG_SURFACES = ("check", "check_text", "fix_text", "explain", "compat", "install", "image", "merge", "help",
                   "markdown")


def pyflags_case(ctx: Ctx, arg: tuple[str, str]) -> None:
    key, which = arg
    m = healthy(ctx)
    args, want_json, rcs = surface(ctx, m, which)
    r = m.run(*args, env=PYFLAGS[key], timeout=60)
    hold(r, want_json, rcs, secs=50)
    if not want_json and r.rc in (0, 1) and which != "help":
        expect(r.out.strip(), f"nothing printed: {r!r}")


family("pyflags", "env", {f"{k}-{s}": (k, s) for k in PYFLAGS for s in PYFLAG_SURFACES}, pyflags_case, limit=90)


# ====================================================================================================================
# compatdata: the compat/ data a user (or a broken install) changed under the installed package

COMPAT_FILES = ("rules.toml", "pytorch.toml", "process_env.toml", "errors.toml", "schema")
COMPAT_KINDS = ("invalid_toml", "empty", "binary", "utf16", "row_without_source", "wrong_types", "fifo", "loop",
                "folder", "deleted", "huge_comments", "dev_zero")


def copy_tree(ctx: Ctx) -> Path:
    dst = ctx.work / "pkgtree"
    dst.mkdir()
    shutil.copytree(ctx.tree / "cudnn_doctor", dst / "cudnn_doctor",
                    ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(ctx.tree / "compat", dst / "compat")
    return dst


def spoil(path: Path, kind: str, seed: int) -> None:
    rng = random.Random(seed)
    is_dir = path.is_dir()
    if kind in ("fifo", "loop", "folder", "deleted", "dev_zero"):
        if is_dir:
            shutil.rmtree(path)
        else:
            path.unlink()
        if kind == "fifo":
            os.mkfifo(path)
        elif kind == "loop":
            os.symlink(path.name, path)
        elif kind == "folder":
            path.mkdir()
            (path / "x.toml").write_text("a = 1\n")
        elif kind == "dev_zero":
            os.symlink("/dev/zero", path)
        return
    if is_dir:  # the schema folder: spoil every schema in it
        for p in sorted(path.glob("*.json")):
            spoil(p, kind, seed)
        return
    text = path.read_bytes()
    if kind == "invalid_toml":
        cut = rng.randrange(len(text) // 4, len(text))
        path.write_bytes(text[:cut] + b"\n[[[ = \"\n")
    elif kind == "empty":
        path.write_bytes(b"")
    elif kind == "binary":
        path.write_bytes(bytes(rng.randrange(1, 256) for _ in range(4096)))
    elif kind == "utf16":
        path.write_bytes(text.decode("utf-8", "replace").encode("utf-16"))
    elif kind == "row_without_source":
        if path.suffix == ".json":
            path.write_bytes(b'{"type": "object", "required": ["nothing"]}')
        else:
            path.write_bytes(re.sub(rb"(?m)^source\s*=.*$", b"", text))
    elif kind == "wrong_types":
        if path.suffix == ".json":
            path.write_bytes(b'[1, 2, {"$ref": "#/nowhere"}]')
        else:
            path.write_bytes(re.sub(rb'(?m)^(\w+)\s*=\s*"[^"\n]*"', rb"\1 = [1979-05-27T07:32:00Z, inf, nan]",
                                    text, count=40))
    elif kind == "huge_comments":
        with open(path, "ab") as f:
            line = b"# " + b"x" * 1000 + b"\n"
            for _ in range(20000):
                f.write(line)
    else:
        raise ValueError(kind)


def _mem_cap(mb: int) -> Callable:
    def pre() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (mb << 20, mb << 20))
    return pre


def compatdata_case(ctx: Ctx, arg: tuple[str, str, int]) -> None:
    name, kind, seed = arg
    tree = copy_tree(ctx)
    spoil(tree / "compat" / name, kind, seed)
    m = healthy(ctx)
    m.env["PYTHONPATH"] = str(tree)
    for args, want_json in ((["compat", "torch==2.5.1", "--json"], True), (["check", "--json"], True),
                            (["compat", "torch==2.5.1"], False)):
        r = m.run(*args, timeout=25, preexec=_mem_cap(1536))
        hold(r, want_json, (0, 1, 2), secs=20)
        if r.rc == 2 and not want_json:
            one_line(r)


family("compatdata", "file", {f"{n}-{k}": (n, k, 4000 + i * 20 + j) for i, n in enumerate(COMPAT_FILES)
                              for j, k in enumerate(COMPAT_KINDS)}, compatdata_case, limit=120)


# ====================================================================================================================
# mirror: install --version through a hostile NVIDIA redist mirror on 127.0.0.1

def _man_mut(f: Callable[[dict, dict], None]) -> Callable:
    def behave(h, reg, state):  # type: ignore[no-untyped-def]
        if h.path.split("?")[0] == "/redist/redistrib_9.19.0.json":
            man = json.loads(json.dumps(state["manifest"]))
            body = f(man, state)
            return reg.send(h, body if isinstance(body, bytes) else json.dumps(man).encode())
        return False
    return behave


def _arc(f: Callable) -> Callable:
    def behave(h, reg, state):  # type: ignore[no-untyped-def]
        if h.path.split("?")[0].endswith(state["name"]):
            return f(h, reg, state) is not False
        return False
    return behave


def _drip(h, data: bytes, per: float, length: int | None = None) -> bool:  # type: ignore[no-untyped-def]
    h.send_response(200)
    h.send_header("Content-Length", str(len(data) if length is None else length))
    h.end_headers()
    for i in range(0, len(data)):
        h.wfile.write(data[i:i + 1])
        h.wfile.flush()
        time.sleep(per)
    return True


def _setentry(**kv: object) -> Callable:
    def f(man: dict, state: dict) -> None:
        man["cudnn"]["linux-x86_64"]["cuda13"].update(kv)
    return f


def _deep(man: dict, state: dict) -> bytes:
    return b'{"cudnn": ' + b"[" * 100000 + b"]" * 100000 + b"}"


def _huge_manifest(man: dict, state: dict) -> bytes:
    man["padding"] = ["x" * 1000] * 30000
    return json.dumps(man).encode()


def _reset_mid(h, reg, state):  # type: ignore[no-untyped-def]
    h.send_response(200)
    h.send_header("Content-Length", str(len(state["archive"])))
    h.end_headers()
    h.wfile.write(state["archive"][: len(state["archive"]) // 2])
    h.wfile.flush()
    h.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
    h.connection.close()
    return True


def _forever(h, reg, state):  # type: ignore[no-untyped-def]
    h.send_response(200)
    h.send_header("Content-Type", "application/x-xz")
    h.end_headers()
    h.close_connection = True
    end = time.monotonic() + 60
    while time.monotonic() < end:
        h.wfile.write(b"\0" * 65536)
    return True


def _flip(state: dict) -> bytes:
    data = bytearray(state["archive"])
    data[len(data) // 2] ^= 0xFF
    return bytes(data)


MIRROR_KINDS: dict[str, tuple[Callable | None, dict, bool]] = {
    # name: (behave, env, may it install)
    "good": (None, {}, True),
    "manifest_500": (lambda h, r, s: h.path.endswith(".json") and r.send(h, b"oops", "text/plain", 500), {}, False),
    "manifest_html": (lambda h, r, s: h.path.endswith(".json") and r.send(h, b"<html><body>Login</body></html>",
                                                                           "text/html"), {}, False),
    "manifest_deep": (_man_mut(_deep), {}, False),
    "manifest_30mb": (_man_mut(_huge_manifest), {}, True),
    "manifest_bom": (_man_mut(lambda m, s: b"\xef\xbb\xbf" + json.dumps(m).encode()), {}, True),
    "manifest_nan": (_man_mut(lambda m, s: json.dumps(m).replace('"size": "', '"size": NaN, "x": "').encode()), {},
                     False),
    "manifest_dup_keys": (_man_mut(lambda m, s: json.dumps(m).replace('"cudnn": {', '"cudnn": 1, "cudnn": {', 1
                                                                       ).encode()), {}, True),
    "manifest_gzip_encoded": (lambda h, r, s: h.path.endswith(".json") and r.send(
        h, gzip.compress(json.dumps(s["manifest"]).encode()), extra={"Content-Encoding": "gzip"}), {}, True),
    "manifest_redirect_loop": (lambda h, r, s: h.path.endswith(".json") and r.send(
        h, b"", code=301, extra={"Location": h.path}), {}, False),
    "manifest_redirect_file": (lambda h, r, s: h.path.endswith(".json") and r.send(
        h, b"", code=302, extra={"Location": "file:///etc/passwd"}), {}, False),
    "manifest_redirect_https_self": (lambda h, r, s: h.path.endswith(".json") and r.send(
        h, b"", code=302, extra={"Location": f"https://127.0.0.1:{r.port}{h.path}"}), {}, False),
    "path_traversal": (_man_mut(_setentry(relative_path="../../../../../../etc/passwd")), {}, False),
    "path_absolute_file": (_man_mut(_setentry(relative_path="file:///etc/shadow")), {}, False),
    "path_absolute_elsewhere": (_man_mut(_setentry(relative_path="http://127.0.0.1:9/x.tar.xz")), {}, False),
    "path_encoded_dots": (_man_mut(_setentry(relative_path="cudnn/%2e%2e/%2e%2e/%2e%2e/etc/passwd")), {}, False),
    "path_newline": (_man_mut(_setentry(relative_path="cudnn/x\r\nX-Evil: 1.tar.xz")), {}, False),
    "path_query": (_man_mut(lambda m, s: m["cudnn"]["linux-x86_64"]["cuda13"].update(
        relative_path=m["cudnn"]["linux-x86_64"]["cuda13"]["relative_path"] + "?a=1#frag")), {}, True),
    "path_nul": (_man_mut(_setentry(relative_path="cudnn/x\u0000.tar.xz")), {}, False),
    "path_escape": (_man_mut(_setentry(relative_path="cudnn/\u001b]0;owned\u0007.tar.xz")), {}, False),
    "size_negative": (_man_mut(_setentry(size="-1")), {}, False),
    "size_1e12": (_man_mut(_setentry(size="1000000000000")), {}, False),
    "size_int": (_man_mut(lambda m, s: m["cudnn"]["linux-x86_64"]["cuda13"].update(
        size=int(m["cudnn"]["linux-x86_64"]["cuda13"]["size"]))), {}, True),
    "sha_upper": (_man_mut(lambda m, s: m["cudnn"]["linux-x86_64"]["cuda13"].update(
        sha256=m["cudnn"]["linux-x86_64"]["cuda13"]["sha256"].upper())), {}, True),
    "sha_missing_md5_only": (_man_mut(lambda m, s: m["cudnn"]["linux-x86_64"]["cuda13"].pop("sha256")), {}, False),
    "variants_list": (_man_mut(lambda m, s: m["cudnn"].update({"linux-x86_64": [m["cudnn"]["linux-x86_64"]]})), {},
                      False),
    "archive_drip": (_arc(lambda h, r, s: _drip(h, s["archive"], 0.5)), {"CUDNN_DOCTOR_DOWNLOAD_DEADLINE": "6"}, False),
    "archive_reset_mid": (_arc(_reset_mid), {}, False),
    "archive_short_length": (_arc(lambda h, r, s: r.send(h, s["archive"][:-100], length=len(s["archive"]))), {},
                             False),
    "archive_longer_body": (_arc(lambda h, r, s: r.send(h, s["archive"] + b"\0" * 5000, length=len(s["archive"]))),
                            {}, True),
    "archive_flipped_byte": (_arc(lambda h, r, s: r.send(h, _flip(s), "application/x-xz")), {}, False),
    "archive_206_unasked": (_arc(lambda h, r, s: r.send(h, s["archive"][1000:], code=206, extra={
        "Content-Range": f"bytes 1000-{len(s['archive']) - 1}/{len(s['archive'])}"})), {}, False),
    "archive_416": (_arc(lambda h, r, s: r.send(h, b"", code=416)), {}, False),
    "archive_retry_after_huge": (_arc(lambda h, r, s: r.send(h, b"busy", "text/plain", 503,
                                                             extra={"Retry-After": "999999999"})), {}, False),
    "archive_retry_after_date": (_arc(lambda h, r, s: r.send(h, b"busy", "text/plain", 429, extra={
        "Retry-After": "Fri, 31 Dec 9999 23:59:59 GMT"})), {}, False),
    "archive_gzip_encoded": (_arc(lambda h, r, s: r.send(h, gzip.compress(s["archive"]), "application/x-xz",
                                                         extra={"Content-Encoding": "gzip"})), {}, True),
    "archive_forever": (_arc(_forever), {"CUDNN_DOCTOR_DOWNLOAD_DEADLINE": "6"}, False),
    "archive_html": (_arc(lambda h, r, s: r.send(h, b"<html>captive portal</html>" * 100, "text/html")), {}, False),
    "listing_hostile": (lambda h, r, s: h.path == "/redist/" and r.send(h, (
        "<html>" + "".join(f'<a href="redistrib_9.19.{i}{"9" * 30}.json">x</a>' for i in range(3000))
        + '<a href="javascript:alert(1)">redistrib_9.19.7.json</a><a href="../../redistrib_9.19.9.json">y</a>'
        "</html>").encode(), "text/html"), {"partial": "1"}, True),
    "listing_binary": (lambda h, r, s: h.path == "/redist/" and r.send(h, os.urandom(20000), "text/html"),
                       {"partial": "1"}, False),
}


def mirror_case(ctx: Ctx, key: str) -> None:
    behave, env, may_install = MIRROR_KINDS[key]
    env = {"CUDNN_DOCTOR_DOWNLOAD_DEADLINE": "10", **env}
    partial = env.pop("partial", None)
    m = healthy(ctx)
    sentinel = ctx.work / "outside.txt"
    sentinel.write_text("the user's\n")
    reg, url, state = http_mirror(ctx, (lambda h, r, s: behave(h, r, s)) if behave else None)
    prefix = m.base / "pfx"
    try:
        r = m.run("install", "--version", "9.19" if partial else "9.19.0", "--cuda", "13", "--mirror", url,
                  "--prefix", str(prefix), "--yes", "--json", env=env, timeout=60)
    finally:
        reg.close()
    data = hold(r, True, (0, 1, 2), secs=45) or {}
    expect(sentinel.read_text() == "the user's\n", "a file outside the prefix changed")
    if r.rc == 0:
        expect(may_install, f"an archive the mirror spoiled was installed: {r.out[:400]!r}")
        wrong = installed_as_recorded(ctx, prefix)
        expect(wrong is not None and not wrong, f"an install said done is not whole: {wrong}")
    else:
        libs = [p for p in prefix.rglob("libcudnn*")] if prefix.exists() else []
        expect(not libs, f"a refused install left cuDNN files: {[str(p) for p in libs[:5]]}")
    for word in ("root:x:0:0", "/bin/bash\n"):
        expect(word not in r.out + r.err, "a local file's contents in the output")


family("mirror", "install", {k: k for k in MIRROR_KINDS}, mirror_case, limit=120)


# ====================================================================================================================
# fds: the descriptors and internal variables a caller leaves the doctor (CI captures, nested doctors)

FD_SURFACES = ("check", "deep", "fix_text", "explain", "image", "compat")


def _raise_nofile(n: int) -> Callable:
    def pre() -> None:
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(max(n, soft), hard), hard))
        fd = os.open("/dev/null", os.O_RDONLY)
        for i in range(3, n - 16):
            if i != fd:
                try:
                    os.dup2(fd, i, inheritable=True)
                except OSError:
                    break
    return pre


def fds_many_case(ctx: Ctx, which: str) -> None:
    """1,100 descriptors inherited: every pipe the doctor makes is numbered above FD_SETSIZE (1024)."""
    m = healthy(ctx)
    args, want_json, rcs = surface(ctx, m, which)
    r = m.run(*args, timeout=60, preexec=_raise_nofile(1200))
    hold(r, want_json, rcs, secs=50)


family("fds", "inherited_1100", {s: s for s in FD_SURFACES}, fds_many_case, limit=90)


EOF_SURFACES = ("check", "deep", "fix_text", "image", "install_yes", "merge", "bench", "completion_ps")


def fds_eof_case(ctx: Ctx, which: str) -> None:
    """A caller's pipe as stdout (a CI step's capture): it ends when the doctor does (nothing of it keeps it open)."""
    m = ctx.machine() if which == "bench" else healthy(ctx)
    if which == "bench":
        _, args = bench_machine(ctx, m)
        env = {"CUDNN_DOCTOR_BENCH_TIMEOUT": "20"}
        want_json, rcs = True, (0, 1)
    elif which == "completion_ps":
        pw = scripted(m.base / "bin" / "pwsh", f"#!/bin/sh\necho {m.home}/.config/powershell/profile.ps1\n")
        m.env["PATH"] = f"{pw.parent}:{m.env['PATH']}"
        args, env, want_json, rcs = ["--install-completion", "powershell"], {}, False, (0, 2)
    else:
        args, want_json, rcs = surface(ctx, m, which)
        env = {}
    r_fd, w_fd = os.pipe()
    proc = subprocess.Popen(m.argv(*args), env={**m.env, **env}, cwd=str(m.cwd), stdin=subprocess.DEVNULL,
                            stdout=w_fd, stderr=subprocess.PIPE, start_new_session=True)
    os.close(w_fd)
    chunks = []
    start = time.monotonic()
    deadline = start + 60
    exited_at = None
    os.set_blocking(r_fd, False)
    while True:
        if exited_at is None and proc.poll() is not None:
            exited_at = time.monotonic()
        try:
            b = os.read(r_fd, 65536)
            if b == b"":
                break
            chunks.append(b)
        except BlockingIOError:
            time.sleep(0.05)
        now = time.monotonic()
        if exited_at is not None and now - exited_at > 5:
            kill_group(proc.pid)
            os.close(r_fd)
            raise Fail(f"the caller's pipe was still open 5 s after the doctor exited ({proc.returncode}): "
                       "something the doctor started holds it")
        if now > deadline:
            kill_group(proc.pid)
            os.close(r_fd)
            raise Fail("hang: the doctor ran past 60 s")
    os.close(r_fd)
    proc.wait(timeout=10)
    err = proc.stderr.read() if proc.stderr else b""
    kill_group(proc.pid)
    hold(R(proc.returncode, b"".join(chunks), err, time.monotonic() - start), want_json, rcs, secs=50)


family("fds", "caller_pipe_eof", {s: s for s in EOF_SURFACES}, fds_eof_case, limit=90)


def fds_sock_case(ctx: Ctx, arg: tuple[str, str]) -> None:
    where, which = arg
    m = healthy(ctx)
    args, want_json, rcs = surface(ctx, m, which)
    a, b = socket.socketpair()
    try:
        kw: dict = {"stdin": subprocess.DEVNULL, "stdout": subprocess.PIPE}
        if where == "stdout":
            kw["stdout"] = a.fileno()
        else:
            kw["stdin"] = a.fileno()
        proc = subprocess.Popen(m.argv(*args), env=m.env, cwd=str(m.cwd), stderr=subprocess.PIPE,
                                start_new_session=True, **kw)
        a.close()
        start = time.monotonic()
        if where == "stdout":
            b.settimeout(60)
            chunks = []
            while True:
                try:
                    c = b.recv(65536)
                except socket.timeout:
                    kill_group(proc.pid)
                    raise Fail("hang: no end of output on the socket in 60 s") from None
                if not c:
                    break
                chunks.append(c)
            out = b"".join(chunks)
            proc.wait(timeout=20)
        else:
            try:
                out, err = proc.communicate(timeout=60)
            except subprocess.TimeoutExpired:
                kill_group(proc.pid)
                raise Fail("hang: stdin a silent socket") from None
        if where == "stdout":
            err = proc.stderr.read() if proc.stderr else b""
    finally:
        b.close()
    hold(R(proc.returncode, out, err, time.monotonic() - start), want_json, rcs, secs=50)


family("fds", "socket", {f"{w}-{s}": (w, s) for w in ("stdout", "stdin") for s in ("check", "explain", "fix_text")},
       fds_sock_case, limit=90)


def fds_append_case(ctx: Ctx, arg: tuple[str, str]) -> None:
    how, which = arg
    m = healthy(ctx)
    args, want_json, rcs = surface(ctx, m, which)
    out = ctx.work / "out.log"
    before = b"earlier lines of the CI log\n"
    if how == "append":
        out.write_bytes(before)
        fd = os.open(out, os.O_WRONLY | os.O_APPEND)
    else:  # a file whose offset is past 4 GiB (a long log, sparse)
        fd = os.open(out, os.O_WRONLY | os.O_CREAT)
        os.lseek(fd, 4 << 30, os.SEEK_SET)
    start = time.monotonic()
    proc = subprocess.Popen(m.argv(*args), env=m.env, cwd=str(m.cwd), stdin=subprocess.DEVNULL, stdout=fd,
                            stderr=subprocess.PIPE, start_new_session=True)
    os.close(fd)
    try:
        _, err = proc.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        kill_group(proc.pid)
        raise Fail("hang") from None
    with open(out, "rb") as f:
        if how == "append":
            data = f.read()
            expect(data.startswith(before), "the earlier lines of the file were lost")
            data = data[len(before):]
        else:
            f.seek(4 << 30)
            data = f.read()
    hold(R(proc.returncode, data, err, time.monotonic() - start), want_json, rcs, secs=50)


family("fds", "stdout_file", {f"{h}-{s}": (h, s) for h in ("append", "offset_4g") for s in ("check", "explain",
                                                                                              "fix_text")},
       fds_append_case, limit=90)


NESTED = {
    "child_token": {"CUDNN_DOCTOR_CHILD_TOKEN": "0123456789abcdef"},
    "answer_fd_1": {"CUDNN_DOCTOR_ANSWER_FD": "1"},
    "answer_fd_closed": {"CUDNN_DOCTOR_ANSWER_FD": "97"},
    "answer_path_user_file": {"CUDNN_DOCTOR_ANSWER_PATH": "@SENTINEL@"},
    "pid_of_init": {"CUDNN_DOCTOR_PID": "1"},
    "pid_gone": {"CUDNN_DOCTOR_PID": "4194303"},
    "all_of_a_parent": {"CUDNN_DOCTOR_CHILD_TOKEN": "feedface", "CUDNN_DOCTOR_ANSWER_FD": "1",
                        "CUDNN_DOCTOR_ANSWER_PATH": "@SENTINEL@", "CUDNN_DOCTOR_PID": "1"},
}


def nested_case(ctx: Ctx, arg: tuple[str, str]) -> None:
    key, which = arg
    m = healthy(ctx)
    sentinel = ctx.work / "user-file.txt"
    sentinel.write_text("the user's\n")
    env = {k: v.replace("@SENTINEL@", str(sentinel)) for k, v in NESTED[key].items()}
    args, want_json, rcs = surface(ctx, m, which)
    plain = m.run(*args, timeout=60)
    r = m.run(*args, env=env, timeout=60)
    data = hold(r, want_json, rcs, secs=50)
    expect(sentinel.read_text() == "the user's\n", "a file the inherited variables named was written")
    if want_json and data is not None and plain.rc in (0, 1):
        try:
            pd = json.loads(plain.out)
            expect(codes(pd) == codes(data), f"the report changed under inherited internal variables: "
                                             f"{sorted(codes(pd))} -> {sorted(codes(data))}")
        except ValueError:
            pass


family("fds", "nested", {f"{k}-{s}": (k, s) for k in NESTED for s in ("check", "deep", "fix_text")}, nested_case,
       limit=120)


# ====================================================================================================================
# parsers: a value a format must escape, through every machine format, read by a strict parser

PARSER_VALUES = {
    "ctl01": "a\x01b", "quote_backslash": 'a"b\\c', "percent_nl": "a%0Ab%25c", "workflow_cmd": "::error::x",
    "xml_close": "</failure>]]>&amp;<x", "bom": "\ufeffx", "nel": "a\u0085b", "lsep": "a\u2028b",
    "label_brace": 'x{a="1"} 5', "help_line": "# HELP x", "table_pipe": "|x|y|", "backtick": "`x`",
    "invalid_utf8": "a\udcffb", "newline": "a\nb", "cr": "a\rb", "del": "a\x7fb",
}
PARSER_FORMATS = ("json_strict", "junit", "prometheus", "github", "markdown", "fix_json", "step_summary")


def md_tables_whole(text: str) -> None:
    rows: list[list[str]] = []
    for line in text.split("\n") + [""]:
        if line.startswith("|") and line.rstrip().endswith("|"):
            rows.append(re.split(r"(?<!\\)\|", line.strip())[1:-1])
        elif rows:
            widths = {len(cells) for cells in rows}
            expect(len(widths) == 1, f"a markdown table whose rows have {sorted(widths)} cells")
            rows = []


def strict_json(text: str) -> dict:
    def pairs(items: list) -> dict:
        keys = [k for k, _ in items]
        expect(len(keys) == len(set(keys)), f"duplicate keys in the JSON: {keys}")
        return dict(items)

    def const(name: str) -> None:
        raise Fail(f"{name} in the JSON (strict parsers refuse it)")

    try:
        data = json.loads(text, object_pairs_hook=pairs, parse_constant=const)
    except ValueError as e:
        raise Fail(f"not JSON: {e}") from None

    def walk(x: object) -> None:
        if isinstance(x, str):
            expect(not any(0xD800 <= ord(c) < 0xE000 for c in x), f"a lone surrogate in a JSON string: {x[:80]!r}")
        elif isinstance(x, bool):
            pass
        elif isinstance(x, int):
            expect(abs(x) <= 2 ** 53, f"an integer beyond 2^53 (JavaScript readers lose it): {x}")
        elif isinstance(x, dict):
            for v in x.values():
                walk(v)
        elif isinstance(x, list):
            for v in x:
                walk(v)
    walk(data)
    expect(isinstance(data, dict), "not an object")
    return data


def parse_prometheus(text: str) -> None:
    """Each sample line against the text format's grammar (label values: any UTF-8, with \\, \" and \\n escaped)."""
    metric = re.compile(r'^[a-zA-Z_:][a-zA-Z0-9_:]*(\{([a-zA-Z_][a-zA-Z0-9_]*="([^"\\\n]|\\["\\n])*",?)*\})? '
                        r'[-+]?([0-9.eE+-]+|NaN|[+-]?Inf)( -?[0-9]+)?$')
    for line in text.split("\n"):
        if not line or line.startswith("#"):
            continue
        expect(metric.match(line), f"not a Prometheus sample line: {line[:200]!r}")


XML_ILLEGAL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")
WF_LINE = re.compile(r"^::(error|warning|notice|debug|group|endgroup|add-mask|stop-commands)( [^:\r\n]*)?::[^\r\n]*$")


def parsers_case(ctx: Ctx, arg: tuple[str, str]) -> None:
    key, fmt = arg
    value = PARSER_VALUES[key]
    m, folder = _cudnn_off_path(ctx, f"cudnn {value} x")
    if ":" not in folder:  # the loader's path splits at colons: that value comes through --search-path alone
        m.add_lib(folder)
    out = ctx.work / f"report.{fmt}"
    if fmt == "json_strict":
        r = m.run("check", "--search-path", folder, "--json", timeout=45)
        hold(r, True, (0, 1), secs=40)
        try:
            strict_json(r.outb.decode("utf-8", "strict"))
        except UnicodeDecodeError:
            raise Fail("the JSON is not UTF-8") from None
        jq = subprocess.run(["jq", "-e", ".schema"], input=r.outb, capture_output=True, timeout=20)
        expect(jq.returncode == 0, f"jq refused the JSON: {jq.stderr[:200]!r}")
        return
    if fmt == "junit":
        r = m.run("check", "--search-path", folder, "--format", "junit", "-o", str(out), timeout=45)
        judge(r, (0, 1), want_json=False, secs=40)
        try:
            text = out.read_bytes().decode("utf-8")
        except (OSError, UnicodeDecodeError) as e:
            raise Fail(f"the JUnit file is not UTF-8 or missing: {e}") from None
        bad = XML_ILLEGAL.findall(text)
        expect(not bad, f"characters XML 1.0 forbids in the JUnit file: {sorted(set(map(repr, bad)))}")
        refs = re.findall(r"&#x?([0-9a-fA-F]+);", text)
        for ref in refs:
            try:
                n = int(ref, 16) if ref.lower().startswith("x") else int(ref)
            except ValueError:
                continue
            expect(n in (9, 10, 13) or n >= 32, f"a character reference XML 1.0 forbids: &#{ref};")
        try:
            ET.fromstring(out.read_bytes())
        except ET.ParseError as e:
            raise Fail(f"the JUnit file does not parse: {e}") from None
        return
    if fmt == "prometheus":
        r = m.run("check", "--search-path", folder, "--format", "prometheus", timeout=45)
        judge(r, (0, 1), want_json=False, secs=40)
        try:
            text = r.outb.decode("utf-8")
        except UnicodeDecodeError:
            raise Fail("Prometheus output is not UTF-8") from None
        parse_prometheus(text)
        return
    if fmt == "github":
        r = m.run("check", "--search-path", folder, "--format", "github", timeout=45)
        hold(r, False, (0, 1), secs=40)
        for line in r.out.split("\n"):
            if line.startswith("::"):
                expect(WF_LINE.match(line), f"a malformed workflow command: {line[:200]!r}")
                expect(not line.startswith("::error::x") or key != "workflow_cmd",
                       "the value started a workflow command of its own")
        expect("\r" not in r.out, "a raw carriage return in workflow commands")
        return
    if fmt == "fix_json":
        r = m.run("fix", "--search-path", folder, "--json", timeout=45)
        hold(r, True, (0, 1), secs=40)
        try:
            strict_json(r.outb.decode("utf-8", "strict"))
        except UnicodeDecodeError:
            raise Fail("the JSON is not UTF-8") from None
        return
    if fmt == "step_summary":
        summary = ctx.work / "step_summary.md"
        summary.write_text("## an earlier step\n")
        r = m.run("check", "--search-path", folder, "--format", "github", timeout=45, env={"GITHUB_STEP_SUMMARY": str(summary),
                                                                 "GITHUB_ACTIONS": "true"})
        hold(r, False, (0, 1), secs=40)
        try:
            text = summary.read_bytes().decode("utf-8")
        except UnicodeDecodeError:
            raise Fail("the step summary is not UTF-8") from None
        expect(text.startswith("## an earlier step\n"), "the earlier step's summary was lost")
        no_raw_controls(text, "the step summary")
        md_tables_whole(text)
        return
    if fmt == "markdown":
        r = m.run("check", "--search-path", folder, "--format", "markdown", timeout=45)
        hold(r, False, (0, 1), secs=40)
        rows: list[list[str]] = []
        for line in r.out.split("\n"):
            if line.startswith("|") and line.rstrip().endswith("|"):
                cells = re.split(r"(?<!\\)\|", line.strip())[1:-1]
                rows.append(cells)
            elif rows and line.strip() and not line.startswith("|"):
                widths = {len(c) for c in rows}
                expect(len(widths) == 1, f"a markdown table whose rows have {sorted(widths)} cells")
                rows = []
        if rows:
            widths = {len(c) for c in rows}
            expect(len(widths) == 1, f"a markdown table whose rows have {sorted(widths)} cells")
        return
    raise ValueError(fmt)


family("parsers", "value", {f"{k}-{f}": (k, f) for k in PARSER_VALUES for f in PARSER_FORMATS}, parsers_case,
       limit=90)



def run_one(tree: Path, case_id: str, work: Path) -> dict:
    sys.path.insert(0, str(tree))
    os.environ["PYTHONPATH"] = str(tree)
    os.environ.setdefault("CUDNN_DOCTOR_FAKES_DIR", FAKES_DEFAULT)
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
    Path("/var/tmp").mkdir(exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix="redteam10-43-", dir="/var/tmp"))
    try:
        commit = subprocess.run(["git", "-C", str(tree), "rev-parse", "HEAD"], capture_output=True, text=True
                                ).stdout.strip() or "unknown"
    except OSError:
        commit = "unknown"
    if commit == "unknown":  # a copy without .git: the tree's name and a hash of its package's sources
        h = hashlib.sha256()
        for p in sorted((tree / "cudnn_doctor").rglob("*.py")):
            h.update(str(p.relative_to(tree)).encode() + b"\0" + p.read_bytes())
        commit = f"{tree.name}-{h.hexdigest()[:12]}"
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
    out_file = args.results or (HERE / f"results-{commit[:24]}.json")
    try:
        out_file.write_text(json.dumps({"commit": commit, "elapsed_s": round(elapsed), "results": sorted(
            results, key=lambda r: r["id"])}, indent=1))
    except OSError:
        pass
    if args.list_failures:
        print_failures(results)


if __name__ == "__main__":
    main()
