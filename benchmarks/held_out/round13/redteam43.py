#!/usr/bin/env python3
# ruff: noqa  (an evaluation set: its harness is kept as the helper wrote it apart from the code)
"""Round thirteen red-team over issue 43's surfaces (sealed: builders never read it).

    python3 redteam.py --tree CHECKOUT [--jobs 2] [--only=SUBSTRINGS] [--list-failures] [--python PY]

Each case runs in a process of its own (this file with --run-case), in a scratch folder under /var/tmp, against the
doctor of CHECKOUT started as `PYTHONPATH=CHECKOUT PY -m cudnn_doctor ...` in a pretend machine
(CUDNN_DOCTOR_SYSTEM_PREFIX, HOME, CUDNN_DOCTOR_CACHE_DIR of its own). The runner and common judges are round
eleven's; the classes are new: ELF files that lie first on LD_LIBRARY_PATH (the real loader as the oracle), the
frameworks' settings reaching fix's shell lines, every machine output fed each Unicode class, hostile --deep answers,
signals at seeded instants and SIGPIPE, runs at once on one cache and a damaged cache, ulimit -f/-u/-v/-n, odd
TMPDIR/HOME/XDG_*. A case holds when a user would agree (README.md). A case past its limit fails as a hang.
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
FAKES_DEFAULT = "/var/tmp/cudnn-doctor-fakes13"
CASES: dict[str, tuple[str, Callable, int]] = {}
CLASSES = {
    "elfhdr": "a CUDA library first on LD_LIBRARY_PATH whose ELF header, dynamic section, version tables or hash lie; other CUDA libraries as FIFO/sparse 8 GB/loop/device",
    "fwenv": "framework settings (PYTORCH_*, NCCL_*, XLA_*, JAX_*, TF_*, CUDA_*, CUBLAS_*, TORCH_*) with hostile values, through check, markdown and fix's shell lines",
    "fmtuni": "every machine output (JSON, text, markdown, GitHub, JUnit, Prometheus, step summary) fed each Unicode class",
    "deepans": "check --deep where torch answers hostile values (2^80, NaN, 1 MB, nesting, raising objects) or its import prints forever",
    "signals": "SIGTERM, SIGHUP, SIGINT twice at seeded instants during check/--deep/fix/install/-o/completion; SIGPIPE",
    "cacheconc": "doctors sharing one cache folder at once at seeded offsets; the cache's entries damaged",
    "rlim": "RLIMIT_FSIZE on what the doctor writes, RLIMIT_NPROC as a user, address space and files under --deep",
    "tmphome": "TMPDIR odd, /tmp read-only, HOME and XDG_* odd values",
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
        # where the doctor's input is itself a traceback (explain, --deep quoting the framework's), stdout quotes it
        quoted = os.environ.get("REDTEAM13_QUOTES_INPUT") == "1" and word == BAD_WORDS[0]
        if word in r.err or (word in r.out and not quoted):
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


BUILD = Path(os.environ.get("REDTEAM13_BUILD", "/var/tmp/redteam13-43-build"))


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



# ====================================================================================================================
# round eleven: common pieces

def cap_as(mb: int) -> Callable:
    """Address space capped (soft and hard) for the doctor and every child it starts (the machine is shared)."""
    def pre() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (mb << 20, mb << 20))
    return pre


def utf8_strict(b: bytes, where: str) -> str:
    try:
        return b.decode("utf-8")
    except UnicodeDecodeError as e:
        raise Fail(f"{where} is not UTF-8 ({e})") from None


def jq_ok(b: bytes, env_extra: dict | None = None) -> None:
    if shutil.which("jq") is None:
        raise Skip("needs jq")
    env = {"PATH": "/usr/bin:/bin", **(env_extra or {})}
    p = subprocess.run(["jq", "-e", ".schema"], input=b, capture_output=True, env=env, timeout=30)
    expect(p.returncode == 0, f"jq -e .schema refused the JSON (rc {p.returncode}): {p.stderr[-300:]!r}")


def problems(report: dict) -> list[dict]:
    return [f for f in report.get("findings", []) if isinstance(f, dict) and f.get("severity") in ("error", "warning")]


# ====================================================================================================================
# round thirteen: common pieces

BIDI = "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"


def no_raw_controls13(text: str, where: str) -> None:
    """Round eleven's raw controls, and every explicit bidi embedding/override/isolate (Trojan Source's characters)."""
    no_raw_controls(text, where)
    bad = sorted({f"U+{ord(c):04X}" for c in text if c in BIDI})
    expect(not bad, f"raw bidi controls in {where}: {bad}")


def hold13(r: R, want_json: bool, rcs: tuple = (0, 1), secs: float = 40) -> dict | None:
    data = judge(r, rcs, want_json=want_json, secs=secs)
    if want_json:
        strict_json(utf8_strict(r.outb, "stdout"))
    else:
        no_raw_controls13(strip_sgr(utf8_strict(r.outb, "stdout")) + strip_sgr(r.err), "the text output")
    return data


def new_problems(report: dict, baseline: tuple = ("CD201", "CD310")) -> list[str]:
    return [str(f.get("code")) for f in problems(report) if f.get("code") not in baseline]


# ====================================================================================================================
# elfhdr: a CUDA library first on LD_LIBRARY_PATH whose ELF header or dynamic section lies

import struct

DT = {"NULL": 0, "NEEDED": 1, "STRTAB": 5, "SYMTAB": 6, "STRSZ": 10, "SONAME": 14, "RUNPATH": 29,
      "GNU_HASH": 0x6FFFFEF5, "VERDEF": 0x6FFFFFFC, "VERNEED": 0x6FFFFFFE, "VERNEEDNUM": 0x6FFFFFFF}
OOB = 0x7FFFFFF0


class Elf:
    def __init__(self, data: bytes) -> None:
        self.b = bytearray(data)
        (self.phoff, self.shoff) = struct.unpack_from("<QQ", self.b, 32)
        (self.phentsize, self.phnum, self.shentsize, self.shnum, self.shstrndx) = struct.unpack_from("<HHHHH", self.b, 54)
        self.ph = [struct.unpack_from("<IIQQQQQQ", self.b, self.phoff + i * 56) for i in range(self.phnum)]

    def v2o(self, vaddr: int) -> int:
        for p in self.ph:
            if p[0] == 1 and p[3] <= vaddr < p[3] + p[5]:
                return vaddr - p[3] + p[2]
        raise Skip(f"vaddr {vaddr:#x} not in a PT_LOAD")

    def phdr_index(self, ptype: int) -> int:
        for i, p in enumerate(self.ph):
            if p[0] == ptype:
                return i
        raise Skip(f"no program header of type {ptype}")

    def dyn(self) -> list[tuple[int, int, int]]:
        p = self.ph[self.phdr_index(2)]
        out = []
        for off in range(p[2], p[2] + p[4], 16):
            tag, val = struct.unpack_from("<qQ", self.b, off)
            out.append((off, tag, val))
            if tag == 0:
                break
        return out

    def dyn_off(self, tag: str) -> tuple[int, int]:
        for off, t, v in self.dyn():
            if t == DT[tag]:
                return off, v
        raise Skip(f"no DT_{tag}")

    def set_dyn(self, tag: str, value: int) -> None:
        off, _ = self.dyn_off(tag)
        struct.pack_into("<Q", self.b, off + 8, value)

    def strtab(self) -> int:
        return self.v2o(self.dyn_off("STRTAB")[1])

    def string_at(self, stroff: int) -> tuple[int, bytes]:
        start = self.strtab() + stroff
        end = self.b.index(b"\0", start)
        return start, bytes(self.b[start:end])

    def overwrite_string(self, stroff: int, new: bytes) -> None:
        start, old = self.string_at(stroff)
        new = (new * (len(old) // max(1, len(new)) + 1))[:len(old)]
        self.b[start:start + len(old)] = new

    def verneed(self) -> int:
        return self.v2o(self.dyn_off("VERNEED")[1])

    def sections(self) -> list[tuple]:
        return [struct.unpack_from("<IIQQQQIIQQ", self.b, self.shoff + i * 64) for i in range(self.shnum)]

    def section_named_type(self, sh_type: int) -> int:
        for i, s in enumerate(self.sections()):
            if s[1] == sh_type:
                return self.shoff + i * 64
        raise Skip(f"no section of type {sh_type}")

    def dynsym_offset_of(self, name: bytes) -> int:
        symoff = self.v2o(self.dyn_off("SYMTAB")[1])
        strtab = self.strtab()
        for i in range(1, 4000):
            off = symoff + i * 24
            st_name = struct.unpack_from("<I", self.b, off)[0]
            if st_name > 10 ** 6:
                break
            s = strtab + st_name
            if self.b[s:s + len(name) + 1] == name + b"\0":
                return off
        raise Skip(f"no dynamic symbol {name!r}")


NONUTF8 = b"\xff\xfe\x1b[2J\x80\x9b\xc3\x07\xed\xa0\x80"


def _p_phoff(e: Elf, sym: bytes) -> None:
    struct.pack_into("<Q", e.b, 32, 1 << 40)


def _p_phnum(e: Elf, sym: bytes) -> None:
    struct.pack_into("<H", e.b, 56, 0xFFFF)


def _p_phentsize(e: Elf, sym: bytes) -> None:
    struct.pack_into("<H", e.b, 54, 7)


def _p_shoff(e: Elf, sym: bytes) -> None:
    struct.pack_into("<Q", e.b, 40, 1 << 44)


def _p_shnum(e: Elf, sym: bytes) -> None:
    struct.pack_into("<HH", e.b, 60, 0xFFF0, 0xFFEE)


def _p_class32(e: Elf, sym: bytes) -> None:
    e.b[4] = 1


def _p_bigendian(e: Elf, sym: bytes) -> None:
    e.b[5] = 2


def _p_aarch64(e: Elf, sym: bytes) -> None:
    struct.pack_into("<H", e.b, 18, 183)


def _p_dynamic_oob(e: Elf, sym: bytes) -> None:
    off = e.phoff + e.phdr_index(2) * 56
    struct.pack_into("<QQ", e.b, off + 8, 1 << 40, 1 << 40)


def _p_dynamic_size_huge(e: Elf, sym: bytes) -> None:
    off = e.phoff + e.phdr_index(2) * 56
    struct.pack_into("<QQ", e.b, off + 32, 1 << 40, 1 << 40)


def _p_needed_oob(e: Elf, sym: bytes) -> None:
    e.set_dyn("NEEDED", OOB)


def _p_runpath_oob(e: Elf, sym: bytes) -> None:
    e.set_dyn("RUNPATH", OOB)


def _p_soname_oob(e: Elf, sym: bytes) -> None:
    e.set_dyn("SONAME", OOB)


def _p_strsz_huge(e: Elf, sym: bytes) -> None:
    e.set_dyn("STRSZ", 1 << 62)


def _p_strtab_oob(e: Elf, sym: bytes) -> None:
    e.set_dyn("STRTAB", 1 << 40)


def _p_verneed_cnt_huge(e: Elf, sym: bytes) -> None:
    off = e.verneed()
    struct.pack_into("<H", e.b, off + 2, 0xFFFF)
    e.set_dyn("VERNEEDNUM", 0xFFFFFFFF)


def _p_verneed_next_oob(e: Elf, sym: bytes) -> None:
    off = e.verneed()
    struct.pack_into("<I", e.b, off + 12, OOB)


def _p_vernaux_name_oob(e: Elf, sym: bytes) -> None:
    off = e.verneed()
    aux = struct.unpack_from("<I", e.b, off + 8)[0]
    struct.pack_into("<I", e.b, off + aux + 8, OOB)


def _p_vername_nonutf8(e: Elf, sym: bytes) -> None:
    off = e.verneed()
    aux = struct.unpack_from("<I", e.b, off + 8)[0]
    name = struct.unpack_from("<I", e.b, off + aux + 8)[0]
    e.overwrite_string(name, b"GLIBC_" + NONUTF8)


def _p_verneed_file_nonutf8(e: Elf, sym: bytes) -> None:
    off = e.verneed()
    name = struct.unpack_from("<I", e.b, off + 4)[0]
    e.overwrite_string(name, NONUTF8)


def _p_verdef_nonutf8(e: Elf, sym: bytes) -> None:
    off = e.v2o(e.dyn_off("VERDEF")[1])
    nxt = struct.unpack_from("<I", e.b, off + 16)[0]  # the second entry: the node (the first is the file's own)
    entry = off + nxt if nxt else off
    aux = struct.unpack_from("<I", e.b, entry + 12)[0]
    name = struct.unpack_from("<I", e.b, entry + aux)[0]
    e.overwrite_string(name, NONUTF8)


def _p_soname_escapes(e: Elf, sym: bytes) -> None:
    e.overwrite_string(e.dyn_off("SONAME")[1], b"\x1b]0;pwned\x07\x1b[2J\xff\n")


def _p_runpath_escapes(e: Elf, sym: bytes) -> None:
    e.overwrite_string(e.dyn_off("RUNPATH")[1], b"/x\n\x1b[2J:\xff$(id):")


def _p_dynsym_name_oob(e: Elf, sym: bytes) -> None:
    struct.pack_into("<I", e.b, e.dynsym_offset_of(sym), OOB)


def _p_gnu_hash_zero(e: Elf, sym: bytes) -> None:
    off = e.v2o(e.dyn_off("GNU_HASH")[1])
    struct.pack_into("<I", e.b, off, 0)


def _p_gnu_hash_bloom_huge(e: Elf, sym: bytes) -> None:
    off = e.v2o(e.dyn_off("GNU_HASH")[1])
    struct.pack_into("<I", e.b, off + 8, 0x7FFFFFFF)


def _p_dynsym_section_huge(e: Elf, sym: bytes) -> None:
    off = e.section_named_type(11)  # SHT_DYNSYM
    struct.pack_into("<Q", e.b, off + 32, 1 << 60)


def _p_note_huge(e: Elf, sym: bytes) -> None:
    off = e.phoff + e.phdr_index(4) * 56
    struct.pack_into("<QQ", e.b, off + 32, 1 << 40, 1 << 40)


def _p_truncated_4k(e: Elf, sym: bytes) -> None:
    del e.b[4096:]


def _p_truncated_half(e: Elf, sym: bytes) -> None:
    del e.b[len(e.b) // 2:]


ELF_LIES: dict[str, Callable] = {
    "phoff_oob": _p_phoff, "phnum_ffff": _p_phnum, "phentsize_7": _p_phentsize, "shoff_oob": _p_shoff,
    "shnum_shstrndx_oob": _p_shnum, "class32": _p_class32, "bigendian": _p_bigendian, "machine_aarch64": _p_aarch64,
    "dynamic_oob": _p_dynamic_oob, "dynamic_size_huge": _p_dynamic_size_huge, "needed_oob": _p_needed_oob,
    "runpath_oob": _p_runpath_oob, "soname_oob": _p_soname_oob, "strsz_huge": _p_strsz_huge,
    "strtab_oob": _p_strtab_oob, "verneed_cnt_huge": _p_verneed_cnt_huge, "verneed_next_oob": _p_verneed_next_oob,
    "vernaux_name_oob": _p_vernaux_name_oob, "vername_nonutf8": _p_vername_nonutf8,
    "verneed_file_nonutf8": _p_verneed_file_nonutf8, "verdef_nonutf8": _p_verdef_nonutf8,
    "soname_escapes": _p_soname_escapes, "runpath_escapes": _p_runpath_escapes, "dynsym_name_oob": _p_dynsym_name_oob,
    "gnu_hash_zero_buckets": _p_gnu_hash_zero, "gnu_hash_bloom_huge": _p_gnu_hash_bloom_huge,
    "dynsym_section_huge": _p_dynsym_section_huge, "note_huge": _p_note_huge, "truncated_4k": _p_truncated_4k,
    "truncated_half": _p_truncated_half,
}
# the driver's libraries are built without DT_RUNPATH or a version node of their own: the lies that need them are left out
DRIVER_LIES = [k for k in ELF_LIES if k not in ("runpath_oob", "runpath_escapes", "verdef_nonutf8")]
CUDNN_TEXT_LIES = ("phoff_oob", "shnum_shstrndx_oob", "class32", "dynamic_oob", "needed_oob", "runpath_oob",
                   "strtab_oob", "vername_nonutf8", "verdef_nonutf8", "soname_escapes", "runpath_escapes",
                   "dynsym_name_oob", "gnu_hash_zero_buckets", "truncated_half")

ELF_LIBS = {  # which library: (file name on the path, the symbol the user's program calls, its call, what it answers)
    "cudnn": ("libcudnn.so.9", b"cudnnGetVersion", "cudnnGetVersion()", "91900"),
    "libcuda": ("libcuda.so.1", b"cuInit", "cuInit(0)", "0"),
    "nvml": ("libnvidia-ml.so.1", b"nvmlInit_v2", "nvmlInit_v2()", "0"),
}


def _lib_base(ctx: Ctx, m: M, which: str, driver: Path) -> bytes:
    if which == "cudnn":
        from tests.fakes.build import compile_library
        built = compile_library("fake_cudnn.c", "libcudnn.so", {"FAKE_VERSION": 91900, "FAKE_CUDART": 13000},
                                soname="libcudnn.so.9", runpath="$ORIGIN/../rt13dep", version_node="RT13_CUDNN_9")
        return built.read_bytes()
    return (driver / ELF_LIBS[which][0]).resolve().read_bytes()


def user_program_loads(m: M, which: str) -> tuple[bool, str]:
    """The oracle: what a user's program (ctypes, as the frameworks load them) gets from the loader on this path."""
    name, sym, call, want = ELF_LIBS[which]
    code = f"import ctypes; lib = ctypes.CDLL({name!r}); print(lib.{call})"
    try:
        p = subprocess.run([PY, "-I", "-S", "-c", code], env={**m.env}, capture_output=True, timeout=15,
                           cwd=str(m.base), start_new_session=True)
    except subprocess.TimeoutExpired:
        return False, "the loader hung"
    ok = p.returncode == 0 and p.stdout.strip().decode(errors="replace") == want
    return ok, f"rc {p.returncode} {p.stdout[-100:]!r} {p.stderr[-200:]!r}"


def elfhdr_case(ctx: Ctx, arg: tuple[str, str, str]) -> None:
    which, lie, surf = arg
    m = ctx.machine()
    driver = gpu_machine(ctx, m, gpus=1)
    good = m.base / "cudnn" / "lib"
    fakes().fake_cudnn(good, version=91900, cudart=13000, sublibraries=CUDNN9)
    m.add_lib(good)
    base = _lib_base(ctx, m, which, driver)
    e = Elf(base)
    ELF_LIES[lie](e, ELF_LIBS[which][1])
    evil = m.base / "first" / "lib"
    evil.mkdir(parents=True)
    (evil / ELF_LIBS[which][0]).write_bytes(bytes(e.b))
    if which == "cudnn":
        (m.base / "first" / "rt13dep").mkdir()
    m.add_lib(evil)
    loads, how = user_program_loads(m, which)
    if surf == "json":
        r = m.run("check", "--json", timeout=45, preexec=cap_as(4096))
        d = hold13(r, True, (0, 1), secs=40) or {}
        if not loads:
            expect(new_problems(d), f"a user's program cannot use the {ELF_LIBS[which][0]} first on the path ({how}), "
                                    f"and check --json reports no problem of it: {sorted(codes(d))}")
    else:
        r = m.run("check", timeout=45, preexec=cap_as(4096))
        hold13(r, False, (0, 1), secs=40)
        if not loads:
            expect(r.rc == 1 or "!" in strip_sgr(r.out).replace("! Doctor", ""),
                   f"a user's program cannot use the {ELF_LIBS[which][0]} first on the path ({how}); the text report "
                   f"shows no problem: {r.out[-600:]!r}")


family("elfhdr", "cudnn-json", {k: ("cudnn", k, "json") for k in ELF_LIES}, elfhdr_case, limit=70)
family("elfhdr", "cudnn-text", {k: ("cudnn", k, "text") for k in CUDNN_TEXT_LIES}, elfhdr_case, limit=70)
family("elfhdr", "libcuda-json", {k: ("libcuda", k, "json") for k in DRIVER_LIES}, elfhdr_case, limit=70)
family("elfhdr", "nvml-json", {k: ("nvml", k, "json") for k in DRIVER_LIES[::2]}, elfhdr_case, limit=70)


OTHER_LIBS = ("libcudart.so.13", "libcublas.so.13", "libnccl.so.2", "libnvrtc.so.13")
OTHER_KINDS = ("fifo", "sparse_8g", "loop", "dev_zero")


def otherlib_case(ctx: Ctx, arg: tuple[str, str]) -> None:
    name, kind = arg
    m = healthy(ctx)
    evil = m.base / "first" / "lib"
    evil.mkdir(parents=True)
    p = evil / name
    if kind == "sparse_8g":
        with open(p, "wb") as f:
            f.write(b"\x7fELF\x02\x01\x01")
            f.truncate(8 << 30)
    else:
        hostile_file(p, kind)
    m.add_lib(evil)
    r = m.run("check", "--json", timeout=45, preexec=cap_as(4096))
    hold13(r, True, (0, 1), secs=40)


family("elfhdr", "otherlib", {f"{n}-{k}": (n, k) for n in OTHER_LIBS for k in OTHER_KINDS}, otherlib_case, limit=70)


# ====================================================================================================================
# fwenv: the frameworks' settings read from the environment, hostile values, and the fix lines printed for them

FW_VARS = ("PYTORCH_CUDA_ALLOC_CONF", "NCCL_SOCKET_IFNAME", "NCCL_DEBUG", "NCCL_IB_HCA", "XLA_PYTHON_CLIENT_MEM_FRACTION",
           "XLA_PYTHON_CLIENT_PREALLOCATE", "JAX_PLATFORMS", "JAX_COMPILATION_CACHE_DIR", "TF_FORCE_UNIFIED_MEMORY",
           "TF_CPP_MIN_LOG_LEVEL", "CUDA_CACHE_PATH", "CUDA_HOME", "CUDNN_PATH", "CUBLAS_WORKSPACE_CONFIG",
           "TORCH_CUDA_ARCH_LIST")
FW_VALUES = {
    "subst": "$(touch @P@)",
    "backtick": "`touch @P@`",
    "semicolon": "1; touch @P@",
    "newline_cmd": "1\ntouch @P@",
    "squote_break": "1' ; touch @P@ ; '",
    "dquote_break": '1" ; touch @P@ ; "',
    "fish_subst": "(touch @P@)",
    "ps_subst": "$(New-Item -Path @P@)",
    "huge": "9" * 120_000,
    "nonutf8": "@BIN@",
    "controls": "1\x1b]52;c;cm0gLXJmIH4=\x07\x1b[2J\r\x08\x7f\x85\x9b31m",
    "bidi": "1\u202e\u2066;touch @P@\u2069",
    "u2028": "1\u2028touch @P@\u2029",
    "good_then_subst": "@GOOD@,$(touch @P@)",
    "good_then_backtick": "@GOOD@:`touch @P@`",
    "spaces_glob_tilde": "  * ~root -e  ",
}
FW_GOOD = {"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True", "NCCL_SOCKET_IFNAME": "eth0", "NCCL_DEBUG": "WARN",
           "NCCL_IB_HCA": "mlx5_0", "XLA_PYTHON_CLIENT_MEM_FRACTION": ".75", "XLA_PYTHON_CLIENT_PREALLOCATE": "false",
           "JAX_PLATFORMS": "cuda", "JAX_COMPILATION_CACHE_DIR": "/tmp/jaxcache", "TF_FORCE_UNIFIED_MEMORY": "1",
           "TF_CPP_MIN_LOG_LEVEL": "2", "CUDA_CACHE_PATH": "/tmp/cc", "CUDA_HOME": "/usr/local/cuda",
           "CUDNN_PATH": "/usr/lib", "CUBLAS_WORKSPACE_CONFIG": ":4096:8", "TORCH_CUDA_ARCH_LIST": "9.0"}


def _fw_value(kind: str, var: str, marker: Path, seed: int) -> str:
    v = FW_VALUES[kind].replace("@P@", str(marker)).replace("@GOOD@", FW_GOOD[var])
    if v == "@BIN@":
        v = FW_GOOD[var] + binary_value(seed, 120).replace("\n", "x")
    return v


def fwenv_case(ctx: Ctx, arg: tuple[str, str, int]) -> None:
    var, kind, seed = arg
    m = healthy(ctx)
    marker = m.base / "PWNED"
    env = {var: _fw_value(kind, var, marker, seed)}
    r = m.run("check", timeout=45, env=env)
    hold13(r, False, (0, 1), secs=40)
    r = m.run("check", "--json", timeout=45, env=env)
    hold13(r, True, (0, 1), secs=40)
    jq_ok(r.outb, {"LC_ALL": "C"})
    r = m.run("fix", "--json", timeout=45, env=env)
    plan = hold13(r, True, (0, 1), secs=40) or {}
    expect(not marker.exists(), "the doctor itself ran the value's command")
    for shell in ("bash", "zsh", "fish"):
        lines = _env_lines(plan, shell)
        if not lines or shutil.which(SHELLS[shell][0]) is None:
            continue
        for line in lines:
            no_raw_controls13(line, f"the {shell} line")
        sandbox = m.base / f"sh-{shell}"
        sandbox.mkdir()
        run_in_shell(shell, lines, sandbox, {**m.env, **env, "HOME": str(sandbox)})
        expect(not marker.exists(), f"the plan's {shell} lines ran the value's command: {lines[:4]!r}")
    for line in _env_lines(plan, "powershell"):
        no_raw_controls13(line, "the PowerShell line")
        expect("New-Item" not in line or line.lstrip().startswith("#"),
               f"the PowerShell line carries the value's command: {line[:200]!r}")
    r = m.run("check", "--format", "markdown", timeout=45, env=env)
    hold13(r, False, (0, 1), secs=40)
    md_tables_whole(r.out)


_fw_params = {}
for i, var in enumerate(FW_VARS):
    kinds = list(FW_VALUES)
    for j in range(4):
        kind = kinds[(i * 4 + j * 3) % len(kinds)]
        _fw_params[f"{var}-{kind}"] = (var, kind, 1300 + i * 10 + j)
family("fwenv", "value", _fw_params, fwenv_case, limit=90)


# ====================================================================================================================
# fmtuni: every machine output fed each Unicode class (through CUDA_HOME, which CD204 quotes, and an allocator setting,
# which CD414 quotes)

UNI = {
    "c0": "a\x01\x02\x07\x08\x0b\x0c\x0e\x1b[31m\x1f\tb",
    "cr_lf": "a\r\nb\rc\n::error::x",
    "del": "a\x7fb",
    "c1": "a\x80\x85\x8d\x90\x9b31m\x9d0;t\x9c\x9fb",
    "u2028_2029": "a\u2028b\u2029c",
    "bidi": "a\u202a\u202b\u202c\u202d\u202eb\u2066\u2067\u2068\u2069c",
    "lone_surrogates": "a" + os.fsdecode(b"\xed\xa0\x80\xff\xfe\x80") + "b",
    "nul_like_overlong": "a" + os.fsdecode(b"\xc0\x80\xe0\x80\x80") + "b",
    "noncharacters": "a\ufffe\uffff\U0001ffff\U0010ffffb",
    "bom_zero_width": "\ufeffa\u200b\u200c\u200d\u2060b",
    "combining_500": "a" + "\u0301" * 500 + "b",
    "tags_variation": "a\U000e0001\U000e0041\ufe0f\U000e007fb",
    "xml_special": "a]]><x a=\"&amp;\"/><!--b",
    "prom_gh_md_special": 'a"}\\n%0A::warning::x|b`c`,d:e',
}
UNI_FORMATS = ("json", "text", "markdown", "github", "junit", "prometheus", "step_summary")


def fmtuni_case(ctx: Ctx, arg: tuple[str, str]) -> None:
    kind, fmt = arg
    m = healthy(ctx)
    s = UNI[kind]
    env = {"CUDA_HOME": "/opt/cuda-" + s, "PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:" + s}
    if fmt == "json":
        r = m.run("check", "--json", env=env, timeout=45)
        hold13(r, True, (0, 1), secs=40)
        jq_ok(r.outb, {"LC_ALL": "C"})
        return
    if fmt == "junit":
        target = m.base / "junit.xml"
        r = m.run("check", "--junit-xml", str(target), env=env, timeout=45)
        hold13(r, False, (0, 1), secs=40)
        expect(target.exists(), "no JUnit file written")
        b = target.read_bytes()
        text = utf8_strict(b, "the JUnit file")
        bad = XML_ILLEGAL.findall(text)
        expect(not bad, f"characters XML 1.0 forbids in the JUnit file: {sorted(set(map(repr, bad)))}")
        try:
            ET.fromstring(b)
        except ET.ParseError as e:
            raise Fail(f"the JUnit file is not XML: {e}") from None
        return
    if fmt == "step_summary":
        summary = m.base / "summary.md"
        summary.write_text("## an earlier step\n")
        r = m.run("check", "--format", "github", env={**env, "GITHUB_STEP_SUMMARY": str(summary),
                                                      "GITHUB_ACTIONS": "true"}, timeout=45)
        judge(r, (0, 1), want_json=False, secs=40)
        text = utf8_strict(summary.read_bytes(), "the step summary")
        expect(text.startswith("## an earlier step\n"), "the earlier step's summary was lost")
        md_tables_whole(text)
        no_raw_controls13(text, "the step summary")
        return
    args = {"text": ["check"], "markdown": ["check", "--format", "markdown"],
            "github": ["check", "--format", "github"], "prometheus": ["check", "--format", "prometheus"]}[fmt]
    r = m.run(*args, env=env, timeout=45)
    judge(r, (0, 1), want_json=False, secs=40)
    text = utf8_strict(r.outb, f"stdout ({fmt})")
    if fmt == "prometheus":
        parse_prometheus(text)  # the exposition format: any UTF-8 in a label value, \\, \" and \n escaped
        return
    no_raw_controls13(strip_sgr(text) + strip_sgr(r.err), f"the {fmt} output")
    if fmt == "markdown":
        md_tables_whole(text)
    if fmt == "github":
        for line in text.split("\n"):
            if line.startswith("::"):
                expect(WF_LINE.match(line), f"not a workflow command: {line[:160]!r}")
            expect(not re.match(r"^\s*::(error|warning|notice)\b", line) or line.startswith("::"),
                   f"a workflow command started mid-line: {line[:160]!r}")
        injected = [x for x in text.split("\n") if x.startswith("::") and x.endswith("::x")]
        expect(not injected, f"the value made a workflow command of its own: {injected[:2]!r}")


family("fmtuni", "out", {f"{k}-{f}": (k, f) for k in UNI for f in UNI_FORMATS}, fmtuni_case, limit=70)


# ====================================================================================================================
# deepans: --deep where the framework answers hostile values, or its import prints to fd 1/2 forever

def _torch_with(replace: dict[str, str], prefix: str = "", suffix: str = "") -> str:
    src = GOOD_TORCH
    for a, b in replace.items():
        expect(a in src, f"harness: {a!r} not in the fake torch")
        src = src.replace(a, b)
    return prefix + src + suffix


RET = "        return 91900"
DEEP_ANS = {
    "cudnn_2p80": {RET: "        return 2 ** 80"},
    "cudnn_neg": {RET: "        return -91900"},
    "cudnn_nan": {RET: "        return float('nan')"},
    "cudnn_inf": {RET: "        return float('inf')"},
    "cudnn_str_1mb": {RET: "        return '9' * 1_000_000"},
    "cudnn_nested": {RET: "        x = []\n        for _ in range(200_000):\n            x = [x]\n        return x"},
    "cudnn_bool": {RET: "        return True"},
    "cudnn_none": {RET: "        return None"},
    "cudnn_raising_obj": {RET: "        class X:\n            def __getattribute__(self, n):\n                raise RuntimeError('\\x1b[2J')\n        return X()"},
    "cudnn_int_subclass": {RET: "        class I(int):\n            def __str__(self):\n                return '\\x1b]52;c;cm0=\\x07'\n            __repr__ = __str__\n        return I(91900)"},
    "cudnn_dict_dupes": {RET: "        return {'major': 9, 'major ': 8, 'minor': float('nan')}"},
    "torch_version_1mb": {'__version__ = "2.11.0+cu130"': '__version__ = "2.11.0+" + "x" * 1_000_000'},
    "torch_version_escapes": {'__version__ = "2.11.0+cu130"': '__version__ = "2.11.0\\x1b]52;c;cm0=\\x07\\u202e\\u2028\\x9b"'},
    "torch_version_float": {'__version__ = "2.11.0+cu130"': '__version__ = 2.11'},
    "torch_version_surrogate": {'__version__ = "2.11.0+cu130"': '__version__ = "2.11.0\\udcff\\ud800"'},
    "cuda_version_cmd": {'    cuda = "13.0"': '    cuda = "13.0\\n$(touch /tmp/rt13-never)"'},
    "cuda_version_huge": {'    cuda = "13.0"': '    cuda = "9" * 5000 + ".0"'},
    "cuda_version_float_nan": {'    cuda = "13.0"': '    cuda = float("nan")'},
    "device_count_2p64": {"        return 1\n    @staticmethod\n    def synchronize": "        return 2 ** 64\n    @staticmethod\n    def synchronize"},
    "device_count_neg": {"        return 1\n    @staticmethod\n    def synchronize": "        return -3\n    @staticmethod\n    def synchronize"},
    "is_available_str": {"        return True": "        return 'yes\\x1b[2J'"},
    "module_getattr_any": {},
}
DEEP_FLOOD = {
    "fd1_forever": "import os\nwhile True:\n    os.write(1, b'x' * 65536)\n",
    "fd2_forever": "import os\nwhile True:\n    os.write(2, b'Traceback (most recent call last):\\n' * 1000)\n",
    "both_forever_no_newline": "import os\nwhile True:\n    os.write(1, b'{' * 4096)\n    os.write(2, b'\\x1b[2J' * 1024)\n",
    "thread_floods_then_answers": "import os, threading\ndef _f():\n    while True:\n        os.write(1, b'{\"schema\": 1}\\n' * 512)\nthreading.Thread(target=_f, daemon=True).start()\n",
    "answer_fd_nan_dupes": "import os\nfd = int(os.environ.get('CUDNN_DOCTOR_ANSWER_FD', '3'))\ntry:\n    os.write(fd, b'{\"a\": NaN, \"a\": Infinity, \"n\": 123456789012345678901234567890, \"d\": ' + b'[' * 100000 + b']' * 100000 + b'}\\n')\nexcept OSError:\n    pass\n",
    "answer_fd_then_exit": "import os\nfd = int(os.environ.get('CUDNN_DOCTOR_ANSWER_FD', '3'))\ntry:\n    os.write(fd, b'{\"ok\": true, \"ok\": false, \"cudnn\": 1e400, \"version\": -0}\\n')\nexcept OSError:\n    pass\nos._exit(0)\n",
}
MODULE_GETATTR = '''
class _Any:
    def __call__(self, *a, **k):
        return self
    def __getattr__(self, n):
        return self
    def __int__(self):
        raise RuntimeError("no")
    def __index__(self):
        raise RuntimeError("no")
    def __str__(self):
        return "\\x1b[2J" * 1000
    __repr__ = __str__
    def __bool__(self):
        raise RuntimeError("no")
    def __iter__(self):
        while True:
            yield self
def __getattr__(name):
    return _Any()
'''


def deep_machine(ctx: Ctx, kind: str) -> M:
    m = ctx.machine()
    if kind in DEEP_FLOOD:
        init = DEEP_FLOOD[kind] + GOOD_TORCH
    elif kind == "module_getattr_any":
        init = MODULE_GETATTR
    else:
        init = _torch_with(DEEP_ANS[kind])
    torch_machine(ctx, m, init=init)
    folder = m.base / "cudnn" / "lib"
    fakes().fake_cudnn(folder, version=91900, cudart=13000, sublibraries=CUDNN9)
    m.add_lib(folder)
    m.env["CUDNN_DOCTOR_DEEP_TIMEOUT"] = "8"
    return m


def deepans_case(ctx: Ctx, arg: tuple[str, str]) -> None:
    kind, surf = arg
    m = deep_machine(ctx, kind)
    os.environ["REDTEAM13_QUOTES_INPUT"] = "1"
    if surf == "json":
        r = m.run("check", "--deep", "--json", timeout=60, preexec=cap_as(4096))
        d = hold13(r, True, (0, 1), secs=55) or {}
        if kind in DEEP_FLOOD and not kind.startswith("answer_fd") and kind != "thread_floods_then_answers":
            expect(new_problems(d), f"torch's import never ends (it prints forever); --deep reports no problem: "
                                    f"{sorted(codes(d))}")
    else:
        r = m.run("check", "--deep", timeout=60, preexec=cap_as(4096))
        hold13(r, False, (0, 1), secs=55)
    expect(not Path("/tmp/rt13-never").exists(), "a value of torch's ran as a command")
    time.sleep(0.5)
    left = leftovers_of(m.base)
    reap(m.base)
    expect(not left, f"processes left running: {left[:3]}")


_deep_kinds = list(DEEP_ANS) + list(DEEP_FLOOD)
family("deepans", "json", {k: (k, "json") for k in _deep_kinds}, deepans_case, limit=80)
family("deepans", "text", {k: (k, "text") for k in _deep_kinds[::2]}, deepans_case, limit=80)


# ====================================================================================================================
# signals: SIGTERM, SIGHUP and SIGINT twice at seeded instants during check, --deep, fix, install, -o, completion;
# SIGPIPE from a reader that goes away

SLOW_TORCH = "import time\ntime.sleep(4)\n" + GOOD_TORCH
SIGS = {"term": [signal.SIGTERM], "hup": [signal.SIGHUP], "int2": [signal.SIGINT, signal.SIGINT],
        # as a terminal sends them: to the whole foreground process group, the doctor's children included
        "pg_int": [-signal.SIGINT], "pg_int2": [-signal.SIGINT, -signal.SIGINT], "pg_hup": [-signal.SIGHUP]}
SIG_SCENES = ("check_json", "deep_json", "deep_text", "fix_json", "install_json", "output_file", "completion_bash")


def _sig_setup(ctx: Ctx, scene: str) -> tuple[M, list[str], bool, Callable[[M], None], tuple[float, float]]:
    nothing: Callable[[M], None] = lambda m: None
    if scene in ("deep_json", "deep_text"):
        m = ctx.machine()
        torch_machine(ctx, m, init=SLOW_TORCH)
        folder = m.base / "cudnn" / "lib"
        fakes().fake_cudnn(folder, version=91900, cudart=13000, sublibraries=CUDNN9)
        m.add_lib(folder)
        return m, ["check", "--deep"] + (["--json"] if scene == "deep_json" else []), scene == "deep_json", \
            nothing, (0.5, 4.0)
    m = healthy(ctx)
    if scene == "check_json":
        return m, ["check", "--json"], True, nothing, (0.3, 1.0)
    if scene == "fix_json":
        return m, ["fix", "--json"], True, nothing, (0.3, 1.0)
    if scene == "install_json":
        pfx = m.base / "pfx"
        (pfx / "include").mkdir(parents=True)
        (pfx / "include" / "mine.h").write_text("/* the user's own header */\n")
        before = snapshot_tree(pfx)

        def after(m: M) -> None:
            if installed_as_recorded(ctx, pfx) is None:
                now = snapshot_tree(pfx)
                kept = {k: v for k, v in now.items() if not k.startswith(".")}
                expect(kept == before or all(k in now for k in before),
                       f"the prefix is neither as it was nor as its manifest says: {sorted(now)[:12]}")
            expect((pfx / "include" / "mine.h").read_text() == "/* the user's own header */\n",
                   "the user's own header changed")
        return m, ["install", "--from", str(archive(ctx)), "--prefix", str(pfx), "--yes", "--json"], True, after, \
            (0.3, 2.0)
    if scene == "output_file":
        out = m.base / "report.json"
        out.write_text("the user's earlier content\n")

        def after(m: M) -> None:
            text = out.read_text(errors="replace")
            if text != "the user's earlier content\n":
                strict_json(text)
        return m, ["check", "--json", "-o", str(out)], False, after, (0.3, 1.0)
    if scene == "completion_bash":
        rc = m.home / ".bashrc"
        user = b"# the user's own\nexport A=1\n" + b"alias ll='ls -l'\n" * 2000
        rc.write_bytes(user)

        def after(m: M) -> None:
            now = rc.read_bytes()
            expect(now.startswith(user), "the user's .bashrc lost bytes")
            extra = now[len(user):].decode(errors="replace")
            expect(extra.count("\n") <= 2, f"more than one line added: {extra[:300]!r}")
            _sourced_scripts_exist(m, rc)
        return m, ["--install-completion", "bash"], False, after, (0.08, 0.35)
    raise ValueError(scene)


def signals_case(ctx: Ctx, arg: tuple[str, str, int]) -> None:
    scene, sig, seed = arg
    m, argv, want_json, after, (lo, hi) = _sig_setup(ctx, scene)
    rng = random.Random(seed)
    at = rng.uniform(lo, hi)
    proc = subprocess.Popen(m.argv(*argv), env=m.env, cwd=str(m.cwd), stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    outs: dict[str, bytes] = {}

    def drain(name: str, stream) -> None:  # type: ignore[no-untyped-def]
        outs[name] = stream.read()
    threads = [threading.Thread(target=drain, args=(n, s), daemon=True) for n, s in (("out", proc.stdout),
                                                                                      ("err", proc.stderr))]
    for t in threads:
        t.start()
    start = time.monotonic()
    time.sleep(at)
    sent = None
    for k, s in enumerate(SIGS[sig]):
        if proc.poll() is not None:
            break
        if k:
            time.sleep(0.15)
        try:
            if s < 0:
                os.killpg(proc.pid, -s)
            else:
                os.kill(proc.pid, s)
            sent = abs(s)
        except OSError:
            pass
    t_sig = time.monotonic()
    try:
        proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        kill_group(proc.pid)
        reap(m.base)
        raise Fail(f"still running 15 s after {sig} at {at:.2f} s") from None
    for t in threads:
        t.join(5)
    r = R(proc.returncode, outs.get("out", b""), outs.get("err", b""), time.monotonic() - start)
    rc = 128 - r.rc if r.rc < 0 else r.rc
    os.environ["REDTEAM13_QUOTES_INPUT"] = "1" if scene.startswith("deep") else "0"
    if sent is None or rc in (0, 1):
        judge(r, (0, 1), want_json=want_json, secs=60)
    else:
        want = 128 + int(sent)
        expect(rc == want, f"{sig} at {at:.2f} s: exit {r.rc}, README says {want}: {r!r}")
        for word in BAD_WORDS[1:] + ((BAD_WORDS[0],) if not scene.startswith("deep") else ()):
            expect(word not in r.err and word not in r.out, f"{word!r} after {sig}: {r!r}")
        expect(time.monotonic() - t_sig < 12, "took more than 12 s to stop")
        if want_json:
            d = one_json(r)
            expect("interrupt" in json.dumps(d).lower(), f"the JSON after {sig} does not say Interrupted: {r.out[:300]!r}")
    time.sleep(0.5)
    left = leftovers_of(m.base)
    reap(m.base)
    expect(not left, f"processes left running after {sig}: {left[:3]}")
    after(m)


_sig_params = {}
for i, scene in enumerate(SIG_SCENES):
    for sig in SIGS:
        for k in range(2):
            _sig_params[f"{scene}-{sig}-{k}"] = (scene, sig, 1300 + 100 * i + 10 * list(SIGS).index(sig) + k)
family("signals", "at", _sig_params, signals_case, limit=80)

PIPE_SURFACES = {"check": ["check"], "check_json": ["check", "--json"], "deep": ["check", "--deep"],
                 "markdown": ["check", "--format", "markdown"], "explain": ["explain", "CD301"],
                 "compat_list": ["compat", "--list", "cudnn"], "fix": ["fix"], "show_completion": ["--show-completion", "bash"]}
PIPE_READERS = {"head_c10": "head -c 10 >/dev/null", "true": "true"}


def sigpipe_case(ctx: Ctx, arg: tuple[str, str]) -> None:
    surf, reader = arg
    if surf == "deep":
        m = ctx.machine()
        torch_machine(ctx, m)
        folder = m.base / "cudnn" / "lib"
        fakes().fake_cudnn(folder, version=91900, cudart=13000, sublibraries=CUDNN9)
        m.add_lib(folder)
    else:
        m = healthy(ctx)
    line = f"{m.doctor_line(*PIPE_SURFACES[surf])} | {PIPE_READERS[reader]}; echo \"RT13RC=${{PIPESTATUS[0]}}\" >&2"
    r = m.bash(line, timeout=45)
    mm = re.search(r"RT13RC=(\d+)", r.err)
    expect(mm, f"no exit status: {r!r}")
    rc = int(mm.group(1))
    err = r.err.replace(mm.group(0), "")
    os.environ["REDTEAM13_QUOTES_INPUT"] = "0"
    for word in BAD_WORDS + ("BrokenPipeError", "Broken pipe", "Exception ignored"):
        expect(word not in err, f"{word!r} on stderr when the reader went away: {err[-400:]!r}")
    expect(rc in (0, 1, 141), f"exit {rc} when the reader went away (README: 141, or 0/1 had it written all)")
    expect(r.secs < 40, f"took {r.secs:.1f} s")
    left = leftovers_of(m.base)
    reap(m.base)
    expect(not left, f"processes left running: {left[:3]}")


family("signals", "pipe", {f"{s}-{rd}": (s, rd) for s in PIPE_SURFACES for rd in PIPE_READERS}, sigpipe_case, limit=60)


# ====================================================================================================================
# cacheconc: doctors sharing one cache folder at once; the cache's own entries damaged

CONC_MIXES = {
    "four_checks": [["check", "--json"]] * 4,
    "check_explain_compat_fix": [["check", "--json"], ["explain", "CD301", "--json"], ["compat", "torch==2.5.1", "--json"],
                                 ["fix", "--json"]],
    "compat_three_explain_one": [["compat", "torch==2.5.1", "--json"]] * 3 + [["explain", "CUDNN_STATUS_NOT_INITIALIZED", "--json"]],
    "six_mixed": [["check", "--json"], ["compat", "torch==2.5.1", "--json"], ["explain", "CD301", "--json"]] * 2,
}


def _verdict(d: dict) -> tuple:
    return (d.get("exit_code"), tuple(sorted(codes(d))), json.dumps(d.get("verdict", d.get("summary", {}).get("status")),
                                                                       sort_keys=True))


def cacheconc_case(ctx: Ctx, arg: tuple[str, int]) -> None:
    mix, seed = arg
    m = healthy(ctx)
    argvs = CONC_MIXES[mix]
    solo = ctx.machine("solo")
    solo.env = {**m.env, "CUDNN_DOCTOR_CACHE_DIR": str(ctx.work / "solo-cache")}
    base = {}
    for a in {tuple(x) for x in argvs}:
        r = solo.run(*a, timeout=45)
        base[a] = (r.rc, _verdict(judge(r, (0, 1), secs=40) or {}))
    rng = random.Random(seed)
    offsets = [rng.uniform(0, 0.3) for _ in argvs]
    results: list[R | Exception] = [Exception("not run")] * len(argvs)

    def go(i: int) -> None:
        time.sleep(offsets[i])
        try:
            results[i] = m.run(*argvs[i], timeout=50)
        except Fail as f:
            results[i] = f
    ts = [threading.Thread(target=go, args=(i,)) for i in range(len(argvs))]
    for t in ts:
        t.start()
    for t in ts:
        t.join(70)
    for a, r in zip(argvs, results):
        if isinstance(r, Exception):
            raise Fail(f"{' '.join(a)}: {r}")
        d = judge(r, (0, 1), secs=50) or {}
        expect((r.rc, _verdict(d)) == base[tuple(a)],
               f"{' '.join(a)} run with others on one cache answered {(r.rc, _verdict(d))}, alone {base[tuple(a)]}")
    for a in {tuple(x) for x in argvs}:
        r = m.run(*a, timeout=45)
        d = judge(r, (0, 1), secs=40) or {}
        expect((r.rc, _verdict(d)) == base[a], f"after the runs at once, {' '.join(a)} answers {(r.rc, _verdict(d))}")


family("cacheconc", "atonce", {f"{mx}-{k}": (mx, 1300 + 7 * i + k) for i, mx in enumerate(CONC_MIXES) for k in range(3)},
       cacheconc_case, limit=120)

CACHE_DAMAGE = ("truncate_half", "flip_bytes", "fifo", "loop", "dev_zero", "sparse_8g", "folder", "nan_json")


def _damage(p: Path, kind: str, seed: int) -> None:
    rng = random.Random(seed)
    if kind == "truncate_half":
        b = p.read_bytes()
        p.write_bytes(b[:len(b) // 2])
    elif kind == "flip_bytes":
        b = bytearray(p.read_bytes())
        for _ in range(max(1, len(b) // 50)):
            if b:
                b[rng.randrange(len(b))] ^= 0xFF
        p.write_bytes(bytes(b))
    elif kind == "sparse_8g":
        with open(p, "r+b") as f:
            f.truncate(8 << 30)
    elif kind == "nan_json":
        p.write_bytes(b'{"schema": NaN, "rows": [' + b"1e999," * 1000 + b'Infinity], "rows": null}')
    else:
        hostile_file(p, {"fifo": "fifo", "loop": "loop", "dev_zero": "dev_zero", "folder": "folder"}[kind])


def cachedmg_case(ctx: Ctx, arg: tuple[str, str]) -> None:
    kind, surf = arg
    m = healthy(ctx)
    argv = {"compat": ["compat", "torch==2.5.1", "--json"], "explain": ["explain", "CUDNN_STATUS_NOT_INITIALIZED", "--json"],
            "check": ["check", "--json"]}[surf]
    r = m.run(*argv, timeout=45)
    want = (r.rc, _verdict(judge(r, (0, 1), secs=40) or {}))
    cache = Path(m.env["CUDNN_DOCTOR_CACHE_DIR"])
    entries = sorted(p for p in cache.rglob("*") if p.is_file() and not p.is_symlink())
    if not entries:
        raise Skip("the cache holds no file after a run")
    for i, p in enumerate(entries):
        _damage(p, kind, 1300 + i)
    r = m.run(*argv, timeout=45, preexec=cap_as(2048))
    d = judge(r, (0, 1), secs=40) or {}
    expect((r.rc, _verdict(d)) == want, f"with its cache damaged ({kind}) the answer changed: {(r.rc, _verdict(d))} "
                                        f"vs {want}")
    r = m.run(*argv, timeout=45, preexec=cap_as(2048))
    d = judge(r, (0, 1), secs=40) or {}
    expect((r.rc, _verdict(d)) == want, f"the run after the damaged one answers {(r.rc, _verdict(d))} vs {want}")


family("cacheconc", "damaged", {f"{k}-{s}": (k, s) for k in CACHE_DAMAGE for s in ("compat", "explain")},
       cachedmg_case, limit=70)


# ====================================================================================================================
# rlim: RLIMIT_FSIZE on what the doctor writes; RLIMIT_NPROC (a user, not root); address space and files under --deep

def _fsize(nbytes: int) -> Callable:
    def pre() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (nbytes, nbytes))
        signal.signal(signal.SIGXFSZ, signal.SIG_DFL)
    return pre


FSIZE_TARGETS = ("output_json", "junit", "step_summary", "completion_bash", "install")


def fsize_case(ctx: Ctx, arg: tuple[str, int]) -> None:
    target, limit = arg
    m = healthy(ctx)
    earlier = b"the user's earlier content\n"
    if target == "output_json":
        f = m.base / "r.json"
        f.write_bytes(earlier)
        argv, kind = ["check", "--json", "-o", str(f)], "json"
    elif target == "junit":
        f = m.base / "j.xml"
        f.write_bytes(earlier)
        argv, kind = ["check", "--junit-xml", str(f)], "xml"
    elif target == "step_summary":
        f = m.base / "summary.md"
        f.write_bytes(b"## an earlier step\n")
        argv, kind = ["check", "--format", "github"], "summary"
    elif target == "completion_bash":
        f = m.home / ".bashrc"
        f.write_bytes(b"# mine\n" * (limit // 8 + 5))
        argv, kind = ["--install-completion", "bash"], "rc"
    else:
        f = m.base / "pfx"
        (f / "include").mkdir(parents=True)
        (f / "include" / "mine.h").write_text("/* mine */\n")
        argv, kind = ["install", "--from", str(archive(ctx)), "--prefix", str(f), "--yes", "--json"], "install"
    before = f.read_bytes() if f.is_file() else None
    env = {"GITHUB_STEP_SUMMARY": str(f), "GITHUB_ACTIONS": "true"} if kind == "summary" else {}
    r = m.run(*argv, timeout=60, env=env, preexec=_fsize(limit))
    rc = 128 - r.rc if r.rc < 0 else r.rc
    expect(rc != 153, f"killed by SIGXFSZ (exit {r.rc}): README names the limit in one line instead")
    judge(r, (0, 1, 2), want_json=kind == "install", secs=55)
    if r.rc == 2:
        named_in_error(r, ("ulimit", "file size", "RLIMIT_FSIZE", "too large", "size limit"), "stopped by ulimit -f")
    if kind == "json":
        now = f.read_bytes()
        expect(now == before or (r.rc in (0, 1) and strict_json(now.decode())), "the -o file is cut short or mixed")
        if r.rc == 2:
            expect(now == before, "the limit stopped it but the -o file changed")
    elif kind == "xml":
        now = f.read_bytes()
        if now != before:
            try:
                ET.fromstring(now)
            except ET.ParseError as e:
                raise Fail(f"the JUnit file was left cut short: {e}") from None
    elif kind == "summary":
        now = f.read_bytes()
        expect(now.startswith(b"## an earlier step\n"), "the earlier step's summary was lost")
        md_tables_whole(now.decode(errors="replace"))
        expect(now == before or now.endswith(b"\n"), "the step summary was cut mid-line")
    elif kind == "rc":
        now = f.read_bytes()
        expect(now.startswith(before or b""), "the user's .bashrc lost bytes")
        _sourced_scripts_exist(m, f)
    else:
        if r.rc == 0:
            expect(installed_as_recorded(ctx, f) is not None, "install said done; the prefix disagrees with its manifest")
        elif installed_as_recorded(ctx, f) is None:
            libs = [n for n in snapshot_tree(f) if n.split("/")[0] in ("lib", "lib64")]
            expect(not libs, f"the install stopped, and the prefix holds a part of it: {libs[:8]}")
        expect((f / "include" / "mine.h").read_text() == "/* mine */\n", "the user's header changed")


family("rlim", "fsize", {f"{t}-{n}": (t, n) for t in FSIZE_TARGETS for n in (1024, 16384, 200_000)}, fsize_case,
       limit=80)


def fsize_cache_case(ctx: Ctx, arg: tuple[str, int]) -> None:
    """A fresh cache filled under ulimit -f (its entries may be cut at the limit), then read by runs without it."""
    surf, limit = arg
    m = healthy(ctx)
    argv = {"compat": ["compat", "torch==2.5.1", "--json"], "explain": ["explain", "CUDNN_STATUS_NOT_INITIALIZED", "--json"],
            "check": ["check", "--json"]}[surf]
    solo = ctx.machine("solo")
    solo.env = {**m.env, "CUDNN_DOCTOR_CACHE_DIR": str(ctx.work / "solo-cache")}
    r = solo.run(*argv, timeout=45)
    want = (r.rc, _verdict(judge(r, (0, 1), secs=40) or {}))
    r = m.run(*argv, timeout=45, preexec=_fsize(limit))
    d = judge(r, (0, 1, 2), secs=40) or {}
    if r.rc == 2:
        named_in_error(r, ("ulimit", "file size", "size limit"), "stopped by ulimit -f")
    else:
        expect((r.rc, _verdict(d)) == want, f"under ulimit -f {limit} the answer changed: {(r.rc, _verdict(d))} vs {want}")
    for _ in range(2):
        r = m.run(*argv, timeout=45)
        d = judge(r, (0, 1), secs=40) or {}
        expect((r.rc, _verdict(d)) == want, f"after a run under ulimit -f {limit}, the cache gives "
                                            f"{(r.rc, _verdict(d))} vs {want}")


family("rlim", "fsize_cache", {f"{s}-{n}": (s, n) for s in ("compat", "explain", "check") for n in (2048, 65536)},
       fsize_cache_case, limit=80)


def nproc_case(ctx: Ctx, arg: tuple[str, int]) -> None:
    surf, n = arg
    if surf == "deep":
        m = ctx.machine()
        torch_machine(ctx, m)
        folder = m.base / "cudnn" / "lib"
        fakes().fake_cudnn(folder, version=91900, cudart=13000, sublibraries=CUDNN9)
        m.add_lib(folder)
        args = ["check", "--deep", "--json"]
    else:
        m = healthy(ctx)
        args = {"check": ["check", "--json"], "fix": ["fix", "--json"]}[surf]
    uid = 4300 + n
    if shutil.which("setpriv") is None or os.geteuid() != 0:
        raise Skip("needs root and setpriv")
    subprocess.run(["chown", "-R", f"{uid}:{uid}", str(m.base)], check=True)
    p = m.base
    while p != Path("/") and p != p.parent:
        if str(p).startswith("/var/tmp/"):
            os.chmod(p, os.stat(p).st_mode | 0o011)
        p = p.parent
    sites = sorted(Path(PY).parent.parent.glob("lib/python3*/site-packages"))
    env = {**m.env, "PYTHONPATH": m.env["PYTHONPATH"] + "".join(f":{s}" for s in sites)}
    if surf == "deep":
        (m.base / "venv" / "bin" / "python3").write_text(
            f"#!/bin/sh\nPYTHONPATH={m.base / 'venv' / 'lib' / 'python3.12' / 'site-packages'} exec {NOBODY_PY} \"$@\"\n")
    argv = ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "prlimit", f"--nproc={n}:{n}", "--",
            NOBODY_PY, "-m", "cudnn_doctor", *args]
    os.environ["REDTEAM13_QUOTES_INPUT"] = "1" if surf == "deep" else "0"
    r = run_proc(argv, env, m.cwd, 60)
    judge(r, (0, 1, 2), want_json=True, secs=55)
    if r.rc == 2:
        named_in_error(r, ("ulimit -S -u", "ulimit -u", "process", "thread"), "stopped by ulimit -u")


family("rlim", "nproc", {f"{s}-{n}": (s, n) for s in ("check", "fix", "deep") for n in (1, 3, 8)}, nproc_case, limit=80)


def deeplim_case(ctx: Ctx, arg: tuple[str, int]) -> None:
    which, n = arg
    m = ctx.machine()
    torch_machine(ctx, m)
    folder = m.base / "cudnn" / "lib"
    fakes().fake_cudnn(folder, version=91900, cudart=13000, sublibraries=CUDNN9)
    m.add_lib(folder)
    os.environ["REDTEAM13_QUOTES_INPUT"] = "1"
    if which == "as":
        pre = cap_as(n)
    else:
        def pre() -> None:
            resource.setrlimit(resource.RLIMIT_NOFILE, (n, n))
    r = m.run("check", "--deep", "--json", timeout=60, preexec=pre)
    judge(r, (0, 1, 2), want_json=True, secs=55)
    if r.rc == 2:
        named_in_error(r, ("ulimit",), "stopped by a limit")
    time.sleep(0.3)
    left = leftovers_of(m.base)
    reap(m.base)
    expect(not left, f"processes left running: {left[:3]}")


family("rlim", "deep", {f"{w}-{n}": (w, n) for w, ns in (("as", (160, 300, 700)), ("nofile", (20, 28, 40)))
                        for n in ns}, deeplim_case, limit=80)


# ====================================================================================================================
# tmphome: TMPDIR a file/FIFO/device/too long/with a newline; /tmp read-only; HOME and XDG_* odd

TMP_KINDS = ("file", "fifo", "dev_null", "missing", "newline_name", "long_5000", "relative", "nonutf8_missing")
TMP_SURFACES = {"check": (["check", "--json"], True), "deep": (["check", "--deep", "--json"], True),
                "explain_stdin": (["explain", "-", "--json"], True), "install": (None, True)}


def _odd_path(m: M, kind: str) -> str:
    p = m.base / "odd"
    if kind == "file":
        p.write_text("a file\n")
    elif kind == "fifo":
        os.mkfifo(p)
    elif kind == "dev_null":
        return "/dev/null"
    elif kind == "missing":
        return str(m.base / "no" / "such")
    elif kind == "newline_name":
        q = m.base / "a\nb\x1b[2J"
        q.mkdir()
        return str(q)
    elif kind == "long_5000":
        return str(m.base) + "/" + "/".join(["d" * 200] * 25)
    elif kind == "relative":
        return "relative/tmp"
    elif kind == "nonutf8_missing":
        return str(m.base) + "/" + os.fsdecode(b"\xff\xfe\x80")
    return str(p)


def tmpdir_case(ctx: Ctx, arg: tuple[str, str]) -> None:
    kind, surf = arg
    if surf == "deep":
        m = ctx.machine()
        torch_machine(ctx, m)
        folder = m.base / "cudnn" / "lib"
        fakes().fake_cudnn(folder, version=91900, cudart=13000, sublibraries=CUDNN9)
        m.add_lib(folder)
    else:
        m = healthy(ctx)
    argv, want_json = TMP_SURFACES[surf]
    if argv is None:
        argv = ["install", "--from", str(archive(ctx)), "--prefix", str(m.base / "pfx"), "--yes", "--json"]
    env = {"TMPDIR": _odd_path(m, kind)}
    stdin = b"RuntimeError: cuDNN error: CUDNN_STATUS_NOT_INITIALIZED\n" if surf == "explain_stdin" else None
    os.environ["REDTEAM13_QUOTES_INPUT"] = "1" if surf in ("deep", "explain_stdin") else "0"
    r = m.run(*argv, env=env, timeout=60, stdin=stdin)
    d = judge(r, (0, 1, 2), want_json=want_json, secs=55) or {}
    strict_json(utf8_strict(r.outb, "stdout"))
    if r.rc == 2:
        named_in_error(r, ("TMPDIR",), "a TMPDIR refused")
    if surf == "install" and r.rc == 0:
        expect(installed_as_recorded(ctx, m.base / "pfx") is not None, "install said done; the prefix disagrees")
    if kind in ("file", "fifo"):
        p = m.base / "odd"
        expect(p.exists() and not p.is_dir(), "the TMPDIR file was replaced")


family("tmphome", "tmpdir", {f"{k}-{s}": (k, s) for k in TMP_KINDS for s in TMP_SURFACES}, tmpdir_case, limit=80)


def rotmp_case(ctx: Ctx, surf: str) -> None:
    m = healthy(ctx)
    argv = {"check": ["check", "--json"], "explain_stdin": ["explain", "-", "--json"], "fix": ["fix", "--json"],
            "install": ["install", "--from", str(archive(ctx)), "--prefix", str(m.base / "pfx"), "--yes", "--json"],
            "bench": None}[surf]
    if argv is None:
        m, argv = bench_machine(ctx, m)
    m.env.pop("TMPDIR", None)
    setup = "mount -t tmpfs -o ro,size=1m tmpfs /tmp"
    if surf == "explain_stdin":
        setup += f"; exec <{shlex.quote(str(m.base / 'in.txt'))}"
        (m.base / "in.txt").write_text("RuntimeError: cuDNN error: CUDNN_STATUS_NOT_INITIALIZED\n")
    r = ns_run(m, setup, argv, timeout=90)
    d = judge(r, (0, 1, 2), want_json=True, secs=85) or {}
    if r.rc == 2:
        named_in_error(r, ("/tmp", "TMPDIR", "temporary"), "a read-only /tmp")


family("tmphome", "ro_tmp", {s: s for s in ("check", "explain_stdin", "fix", "install", "bench")}, rotmp_case, limit=100)

HOME_KINDS = ("proc_self", "dev_null", "file", "fifo", "missing", "tilde", "dash_rf", "newline_escape", "long_5000",
              "nonutf8")


def home_case(ctx: Ctx, arg: tuple[str, str]) -> None:
    kind, which = arg
    m = healthy(ctx)
    if kind == "proc_self":
        value = "/proc/self"
    elif kind == "tilde":
        value = "~"
    elif kind == "dash_rf":
        value = "-rf"
    else:
        value = _odd_path(m, {"newline_escape": "newline_name", "nonutf8": "nonutf8_missing"}.get(kind, kind))
    if which == "home":
        env = {"HOME": value}
        m.env.pop("CUDNN_DOCTOR_CACHE_DIR")
    elif which == "xdg_cache":
        env = {"XDG_CACHE_HOME": value}
        m.env.pop("CUDNN_DOCTOR_CACHE_DIR")
    else:
        env = {"XDG_CONFIG_HOME": value, "XDG_DATA_HOME": value}
    before_root = set(os.listdir("/"))
    if which == "home":  # a user id without a password entry: a relative HOME never falls back to root's real home
        r = as_uid(m, 4399, ["check", "--json"], timeout=45, env=env)
        r2 = as_uid(m, 4399, ["compat", "torch==2.5.1", "--json"], timeout=45, env=env)
    else:
        r = m.run("check", "--json", env=env, timeout=45)
        r2 = m.run("compat", "torch==2.5.1", "--json", env=env, timeout=45)
    d = judge(r, (0, 1, 2), want_json=True, secs=40) or {}
    strict_json(utf8_strict(r.outb, "stdout"))
    if r.rc == 2:
        named_in_error(r, ("HOME", "XDG_", "cache"), "a home refused")
    judge(r2, (0, 1, 2), want_json=True, secs=40)
    expect(set(os.listdir("/")) <= before_root | {"relative"}, "something was made in /")
    expect(not (Path(m.cwd) / "~").exists() and not (Path(m.cwd) / "-rf").exists() and
           not (Path(m.cwd) / ".cache").exists(), "a cache made in the working folder")
    if kind in ("file", "fifo"):
        p = m.base / "odd"
        expect(p.exists() and not p.is_dir(), "the file named by the variable was replaced")


family("tmphome", "home", {f"{k}-{w}": (k, w) for k in HOME_KINDS for w in ("home", "xdg_cache", "xdg_config")},
       home_case, limit=70)


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
    scratch = Path(tempfile.mkdtemp(prefix="redteam13-43-", dir="/var/tmp"))
    try:
        commit = (subprocess.run(["git", "-C", str(tree), "rev-parse", "HEAD"], capture_output=True, text=True
                                 ).stdout.strip() if (tree / ".git").exists() else "") or "unknown"
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
