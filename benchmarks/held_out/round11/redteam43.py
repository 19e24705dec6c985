#!/usr/bin/env python3
# ruff: noqa  (an evaluation set: its harness is kept as the helper wrote it apart from the code)
"""Round eleven red-team over issue 43's surfaces and every other surface of the CLI (sealed: builders never read it).

    python3 redteam.py --tree CHECKOUT [--jobs 2] [--only SUBSTRINGS] [--list-failures] [--python PY]

Each case runs in a process of its own (this file with --run-case), in a scratch folder under /var/tmp, against the
doctor of CHECKOUT started as `PYTHONPATH=CHECKOUT PY -m cudnn_doctor ...` in a pretend machine
(CUDNN_DOCTOR_SYSTEM_PREFIX, HOME, CUDNN_DOCTOR_CACHE_DIR of its own). Round eleven's classes are new: the framework
failing under --deep in hostile ways (the child's traceback reading), explain fed real-looking tracebacks with hostile
frames, XLA_FLAGS asked of the real jaxlib (CPU) flag by flag, every file the doctor writes bind-mounted, read-only or
/dev/null (docker -v), folders on noexec/nosymfollow mounts, installs/uninstalls of one prefix at once, a user's
existing .bashrc/.zshrc, machine formats read under other locales, and explain's catalog edited under the package.
A case holds when a user would agree: no traceback or internal error, the exit code README documents, one JSON object
with --json, nothing of the user's lost or half-written, bounded time. A case past its limit fails as a hang.
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
FAKES_DEFAULT = "/var/tmp/cudnn-doctor-fakes11"
CASES: dict[str, tuple[str, Callable, int]] = {}
CLASSES = {
    "deeptb": "check --deep where torch's import fails in hostile ways (cycles, 3,000-deep chains, frames in /dev/zero or a FIFO) or scribbles on its answer channel",
    "explaintb": "explain fed tracebacks whose frames name FIFOs, devices, loops, 50k-frame and 20k-chain texts, 1 MB messages",
    "xlaflags": "XLA_FLAGS asked of the real jaxlib (CPU): 300 unknown, 100 asked alone, flag files binary/looping/a folder",
    "bindfile": "files the doctor writes bind-mounted (rw, ro, /dev/null over them); noexec/nosymfollow mounts",
    "concinst": "install/uninstall/dry-run/check of one prefix at once, at seeded offsets",
    "rcfiles": "--install-completion into existing .bashrc/.zshrc (CRLF, BOM, set -u, dotfiles link, 0600, owner); two at once; one killed",
    "locale": "JSON/prometheus/junit/github/text with a non-ASCII cuDNN folder under 9 locale settings, read by jq and strict parsers",
    "datafile": "explain's errors.toml edited under the package: ReDoS, invalid regex, unknown code, inf, escapes, 2,000 duplicates",
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
        quoted = os.environ.get("REDTEAM11_QUOTES_INPUT") == "1" and word == BAD_WORDS[0]
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


BUILD = Path(os.environ.get("REDTEAM11_BUILD", "/var/tmp/redteam11-43-build"))


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
# deeptb: check --deep, where the framework's import fails in hostile ways (the child's traceback reading)

FIFO_SLOT = "@FIFO@"
SPARSE_SLOT = "@SPARSE@"

DEEP_KINDS: dict[str, str] = {
    "msg_escapes": "raise RuntimeError('cuDNN error: \\x1b]52;c;cm0gLXJmIH4=\\x07\\x1b[2J\\rCUDNN_STATUS_OK\\x9b31m\\u202e\\u2028x')",
    "msg_2mb": "raise RuntimeError('CUDNN_STATUS_NOT_INITIALIZED ' + 'x' * 2_000_000)",
    "msg_lines_50k": "raise RuntimeError('cuDNN error:\\n' + '  File \"/x.py\", line 1, in f\\n' * 50_000)",
    "chain_cause_3000": "e = None\nfor i in range(3000):\n    try:\n        raise RuntimeError(f'CUDNN_STATUS_{i}') from e\n    except RuntimeError as x:\n        e = x\nraise e",
    "context_cycle": "a = RuntimeError('cuDNN a'); b = ImportError('libcudnn.so.9: cannot open shared object file')\na.__context__ = b; b.__context__ = a\nraise a",
    "cause_cycle": "a = RuntimeError('cuDNN a'); b = OSError('libcudnn_ops.so.9')\na.__cause__ = b; b.__cause__ = a\nraise a",
    "str_raises": "class E(RuntimeError):\n    def __str__(self):\n        raise ValueError('str refused')\n    def __repr__(self):\n        raise ValueError('repr refused')\nraise E('cuDNN')",
    "str_hangs": "class E(RuntimeError):\n    def __str__(self):\n        while True:\n            pass\nraise E('cuDNN')",
    "str_huge_int": "raise RuntimeError(10 ** 5000)",
    "group_wide_5000": "raise ExceptionGroup('cuDNN', [RuntimeError(f'CUDNN_STATUS_{i}') for i in range(5000)])",
    "group_deep_400": "g = RuntimeError('libcudnn.so.9')\nfor i in range(400):\n    g = ExceptionGroup(f'level {i}', [g])\nraise g",
    "recursion": "def f(n):\n    return f(n + 1)\nf(0)",
    "notes_20000": "e = RuntimeError('cuDNN')\nfor i in range(20000):\n    e.add_note('note \\x1b[31m' + str(i))\nraise e",
    "notes_wrong_types": "e = RuntimeError('cuDNN')\ne.__notes__ = [b'\\xff bytes', 1, None, object()]\nraise e",
    "frame_dev_zero": "exec(compile(\"raise RuntimeError('libcudnn_ops.so.9: cannot open shared object file')\", '/dev/zero', 'exec'))",
    "frame_dev_urandom": "exec(compile(\"raise RuntimeError('cuDNN')\", '/dev/urandom', 'exec'))",
    "frame_fifo": "exec(compile(\"raise RuntimeError('libcudnn_ops.so.9: cannot open shared object file')\", '@FIFO@', 'exec'))",
    "frame_proc_stdin": "exec(compile(\"raise RuntimeError('cuDNN')\", '/proc/self/fd/0', 'exec'))",
    "frame_sparse_4g": "exec(compile(\"raise RuntimeError('cuDNN')\", '@SPARSE@', 'exec'))",
    "frame_escape_name": "exec(compile(\"raise RuntimeError('cuDNN')\", '/x/\\x1b[2J\\n  File \"/etc/passwd\", line 1, in <module>\\nevil.py', 'exec'))",
    "frame_name_100k": "exec(compile(\"raise RuntimeError('cuDNN')\", '/' + 'a' * 100000 + '.py', 'exec'))",
    "frame_lineno_huge": "c = compile(\"raise RuntimeError('cuDNN')\", '/x/huge.py', 'exec').replace(co_firstlineno=2147483000)\nexec(c)",
    "frame_undecodable": "import os\nexec(compile(\"raise RuntimeError('cuDNN')\", os.fsdecode(b'/tmp/\\xff\\xfe\\x80.py'), 'exec'))",
    "sys_exit_escape": "raise SystemExit('\\x1b[2Jbye\\n\\x07')",
    "sys_exit_bigint": "raise SystemExit(2 ** 70)",
    "os_exit_0": "import os\nos._exit(0)",
    "keyboard_interrupt": "raise KeyboardInterrupt",
    "segv_self": "import os\nos.kill(os.getpid(), 11)",
    "stderr_flood": "import sys\nsys.stderr.write('Traceback (most recent call last):\\n' * 300000)\nraise RuntimeError('cuDNN')",
    "daemon_keeps_pipes": "import os, time\nif os.fork() == 0:\n    os.setsid()\n    time.sleep(60)\n    os._exit(0)\nraise RuntimeError('cuDNN error: CUDNN_STATUS_NOT_INITIALIZED')",
    "closes_stdio": "import os\nos.closerange(0, 3)\nraise RuntimeError('cuDNN')",
    "base_exception": "class Halt(BaseException):\n    pass\nraise Halt('cuDNN \\x1b[2J')",
    "hostile_class_names": "class E(Exception):\n    pass\nE.__module__ = '\\x1b[2J\\n'\nE.__qualname__ = 'a\\nTraceback (most recent call last):'\nraise E('cuDNN')",
    "import_error_fields": "raise ImportError('libcudnn.so.9: cannot open shared object file', name='\\x1b[2J', path='@FIFO@')",
    "oserror_fifo": "raise OSError(2, 'No such file or directory', '@FIFO@')",
}
DEEP_SURFACES = {"json": (["check", "--deep", "--json"], True), "text": (["check", "--deep"], False)}


def deeptb_case(ctx: Ctx, arg: tuple[str, str]) -> None:
    kind, surf = arg
    os.environ["REDTEAM11_QUOTES_INPUT"] = "1"
    m = ctx.machine()
    site = torch_machine(ctx, m)
    fifo = m.base / "frames" / "torch_ext.py"
    fifo.parent.mkdir()
    os.mkfifo(fifo)
    sparse = m.base / "frames" / "sparse.py"
    with open(sparse, "wb") as f:
        f.truncate(4 << 30)
    body = DEEP_KINDS[kind].replace(FIFO_SLOT, str(fifo)).replace(SPARSE_SLOT, str(sparse))
    (site / "torch" / "__init__.py").write_text(body + "\n")
    m.env["CUDNN_DOCTOR_DEEP_TIMEOUT"] = "8"
    args, want_json = DEEP_SURFACES[surf]
    marker = f"redteam11-{os.getpid()}"
    r = m.run(*args, timeout=70, env={"REDTEAM11_MARK": marker}, preexec=cap_as(4096))
    data = hold(r, want_json, (0, 1), secs=60)
    if surf == "markdown":
        md_tables_whole(r.out)
    if want_json and data is not None and kind not in ("os_exit_0",):
        # the pretend machine's own warnings (no CUDA toolkit, no cuDNN on the loader's path) aside, the failure is said
        fw = [f for f in problems(data) if f.get("code") not in ("CD201", "CD310")]
        expect(fw, f"the framework's failure under --deep is no finding: {sorted(codes(data))}")
    if kind == "daemon_keeps_pipes":
        expect(r.secs < 40, f"the doctor waited for the framework's daemon ({r.secs:.0f} s)")
    # nothing the doctor started is left (the daemon is the framework's own: killed here, not judged)
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                env = Path(f"/proc/{pid}/environ").read_bytes()
            except OSError:
                continue
            if marker.encode() in env:
                try:
                    os.kill(int(pid), signal.SIGKILL)
                except OSError:
                    pass


family("deeptb", "import", {f"{k}-{s}": (k, s) for k in DEEP_KINDS for s in DEEP_SURFACES}, deeptb_case, limit=100)


# ====================================================================================================================
# explaintb: explain fed real-looking tracebacks whose frames are hostile

TB_HEAD = "Traceback (most recent call last):\n"
TB_TAIL = "ImportError: libcudnn_ops.so.9: cannot open shared object file: No such file or directory\n"


def _frame(path: str, line: object = 12, func: str = "<module>", src: str = "import torch") -> str:
    return f'  File "{path}", line {line}, in {func}\n    {src}\n'


def _tb(frames: str, tail: str = TB_TAIL) -> str:
    return TB_HEAD + frames + _frame("/home/u/venv/lib/python3.12/site-packages/torch/__init__.py", 290,
                                     src="from torch._C import *") + tail


def explain_text(kind: str, work: Path) -> bytes:
    fifo = work / "tb" / "fifo.py"
    if not fifo.parent.exists():
        fifo.parent.mkdir()
        os.mkfifo(fifo)
        with open(work / "tb" / "sparse.py", "wb") as f:
            f.truncate(4 << 30)
        os.symlink("loop.py", work / "tb" / "loop.py")
        (work / "tb" / "folder.py").mkdir()
        pp = work / "tb" / "pp" / "torch"
        pp.mkdir(parents=True)
        os.mkfifo(pp / "__init__.py")
    P = {
        "fifo": str(fifo), "dev_zero": "/dev/zero", "dev_urandom": "/dev/urandom", "proc_stdin": "/proc/self/fd/0",
        "dev_stdin": "/dev/stdin", "sparse": str(work / "tb" / "sparse.py"), "loop": str(work / "tb" / "loop.py"),
        "folder": str(work / "tb" / "folder.py"), "proc_mem": "/proc/self/mem",
        "escape_name": "/x/\x1b]52;c;cm0=\x07\x1b[2J.py", "name_50k": "/" + "d" * 50000 + ".py",
        "undecodable": os.fsdecode(b"/home/u/\xff\xfe\x80/train.py"),
        "traversal": "/home/u/venv/lib/python3.12/site-packages/torch/../../../../../../etc/shadow",
        "unc": "\\\\127.0.0.1\\share\\train.py", "win_long": "\\\\?\\C:\\Users\\u\\" + "x\\" * 2000 + "train.py",
        "pythonpath_fifo_pkg": str(pp / "__init__.py"),
    }
    if kind.startswith("path_"):
        p = P[kind[5:]]
        return _tb(_frame(p) + _frame(p, 7, "load", "cudnn = ctypes.CDLL('libcudnn.so.9')")).encode("utf-8", "surrogateescape")
    if kind == "lineno_1e30":
        return _tb(_frame("/home/u/train.py", 10 ** 30)).encode()
    if kind == "lineno_negative":
        return _tb(_frame("/home/u/train.py", -1)).encode()
    if kind == "lineno_arabic":
        return _tb(_frame("/home/u/train.py", "١٢")).encode()
    if kind == "frames_50k":
        return _tb("".join(_frame(f"/home/u/m{i}.py", i, f"f{i}") for i in range(50000))).encode()
    if kind == "during_handling_20k":
        one = _tb(_frame("/home/u/train.py")) + "\nDuring handling of the above exception, another exception occurred:\n\n"
        return (one * 20000 + _tb(_frame("/home/u/train.py"))).encode()
    if kind == "direct_cause_20k":
        one = _tb(_frame("/home/u/train.py")) + "\nThe above exception was the direct cause of the following exception:\n\n"
        return (one * 20000 + _tb(_frame("/home/u/train.py"))).encode()
    if kind == "message_1mb":
        return _tb(_frame("/home/u/train.py"), "RuntimeError: cuDNN error: CUDNN_STATUS_NOT_INITIALIZED " + "y" * 1_000_000 + "\n").encode()
    if kind == "caret_100k":
        return (TB_HEAD + '  File "/home/u/train.py", line 3, in <module>\n    torch.randn(1).cuda()\n    ' + "^" * 100000
                + "\n" + TB_TAIL).encode()
    if kind == "group_art_500":
        s = "  + Exception Group Traceback (most recent call last):\n"
        for i in range(500):
            s += "  " + "| " * i + f'  File "/home/u/g{i}.py", line 1, in <module>\n' + "  " + "| " * i + f"ExceptionGroup: level {i} (1 sub-exception)\n" + "  " + "| " * i + "+-+---------------- 1 ----------------\n"
        return (s + "    " + "| " * 500 + TB_TAIL).encode()
    if kind == "crlf_mixed":
        return _tb(_frame("/home/u/train.py")).replace("\n", "\r\n").encode() + b"\r\r\n\x0b\x0c"
    if kind == "binary_frames":
        rng = random.Random(1101)
        junk = bytes(rng.randrange(1, 256) for _ in range(4000)).replace(b"\n", b" ")
        return TB_HEAD.encode() + b'  File "' + junk + b'", line 3, in <module>\n' + TB_TAIL.encode()
    if kind == "frozen_and_eggs":
        return _tb(_frame("<frozen importlib._bootstrap>", 1360, "_find_and_load", "")
                   + _frame("/usr/lib/python3/dist-packages/x.egg/torch/__init__.py", 1)
                   + _frame("/tmp/x.zip/torch/__init__.py", 1)).encode()
    if kind == "tail_missing":
        return (TB_HEAD + _frame("/home/u/train.py") * 3).encode()
    if kind == "nested_quotes":
        return _tb(_frame('/home/u/a" , line 9, in x\n  File "/etc/passwd')).encode()
    if kind == "size_64mib":
        frame = _frame("/home/u/venv/lib/python3.12/site-packages/torch/nn/modules/module.py", 1736, "_call_impl",
                       "return forward_call(*args, **kwargs)")
        n = (64 << 20) // len(frame)
        return (TB_HEAD + frame * n + TB_TAIL).encode()
    if kind == "ansi_colored":
        return ("\x1b[35mTraceback (most recent call last):\x1b[0m\n  File \x1b[35m\"/home/u/train.py\"\x1b[0m, line \x1b[35m3\x1b[0m\n"
                "\x1b[1;35mImportError\x1b[0m: \x1b[35mlibcudnn_ops.so.9: cannot open shared object file\x1b[0m\n").encode()
    raise ValueError(kind)


EXPLAIN_KINDS = [f"path_{k}" for k in ("fifo", "dev_zero", "dev_urandom", "proc_stdin", "dev_stdin", "sparse", "loop",
                                       "folder", "proc_mem", "escape_name", "name_50k", "undecodable", "traversal",
                                       "unc", "win_long", "pythonpath_fifo_pkg")] + [
    "lineno_1e30", "lineno_negative", "lineno_arabic", "frames_50k", "during_handling_20k", "direct_cause_20k",
    "message_1mb", "caret_100k", "group_art_500", "crlf_mixed", "binary_frames", "frozen_and_eggs", "tail_missing",
    "nested_quotes", "ansi_colored", "size_64mib"]
EXPLAIN_WAYS = ("file_json", "stdin_text", "stdin_json")


def explaintb_case(ctx: Ctx, arg: tuple[str, str]) -> None:
    kind, way = arg
    os.environ["REDTEAM11_QUOTES_INPUT"] = "1"
    m = healthy(ctx)
    text = explain_text(kind, m.base)
    log = m.base / "pasted.log"
    log.write_bytes(text)
    if way == "file_json":
        r = m.run("explain", "--from-file", str(log), "--json", timeout=40, preexec=cap_as(1536))
    elif way == "stdin_text":
        r = m.run("explain", "-", timeout=40, stdin=text, preexec=cap_as(1536))
    elif way == "stdin_json":
        r = m.run("explain", "-", "--json", timeout=40, stdin=text, preexec=cap_as(1536))
    else:
        r = m.run("explain", "--from-file", str(log), "-q", timeout=40, preexec=cap_as(1536))
    hold(r, way.endswith("json"), (0, 1, 2), secs=25)


family("explaintb", "tb", {f"{k}-{w}": (k, w) for k in EXPLAIN_KINDS for w in EXPLAIN_WAYS}, explaintb_case,
       limit=80)


# ====================================================================================================================
# xlaflags: XLA_FLAGS asked of the real jaxlib (CPU) in the doctor's children, one flag at a time where XLA names none

def jax_machine(ctx: Ctx, m: M) -> Path:
    from tests.real_wheels import real_jax_cpu  # type: ignore
    gpu_machine(ctx, m, gpus=1)
    site = m.base / "venv" / "lib" / "python3.12" / "site-packages"
    site.mkdir(parents=True)
    (m.base / "venv" / "bin").mkdir()
    for entry in real_jax_cpu().iterdir():
        if not entry.name.startswith("."):
            (site / entry.name).symlink_to(entry)
    scripted(m.base / "venv" / "bin" / "python3", f"#!/bin/sh\nPYTHONPATH={site} exec {PY} \"$@\"\n")
    m.env["PATH"] = f"{m.base / 'venv' / 'bin'}:{m.env['PATH']}"
    return site


def xla_value(kind: str, work: Path) -> str:
    if kind == "unknown_300":
        return " ".join(f"--xla_redteam_no_such_{i}=1" for i in range(300))
    if kind == "setter_refused_among_100":
        return " ".join(["--xla_cpu_enable_fast_math=false"] * 100 + ["--xla_step_marker_location=bogus"])
    if kind == "setter_refused_40_distinct":
        return " ".join(f"--xla_step_marker_location=bogus{i}" for i in range(40))
    if kind == "same_flag_1000":
        return " ".join(["--xla_gpu_autotune_level=2"] * 1000)
    if kind == "file_10000_flags":
        f = work / "flags.txt"
        f.write_text("\n".join(["--xla_gpu_autotune_level=2"] * 5000 + [f"--xla_redteam_no_{i}" for i in range(5000)]))
        return str(f)
    if kind == "file_binary":
        f = work / "flags.bin"
        rng = random.Random(1102)
        f.write_bytes(bytes(rng.randrange(1, 256) for _ in range(8000)))
        return str(f)
    if kind == "file_loop":
        os.symlink("loopflags", work / "loopflags")
        return str(work / "loopflags")
    if kind == "file_folder":
        (work / "flagdir").mkdir()
        return str(work / "flagdir")
    if kind == "file_name_newline":
        f = work / "fl\nags"
        f.write_text("--xla_gpu_autotune_level=high\n")
        return str(f)
    if kind == "file_proc_environ":
        return "/proc/self/environ"
    if kind == "value_escapes":
        return "--xla_dump_to=/tmp/\x1b]52;c;cm0=\x07\x1b[2J --xla_gpu_autotune_level=high"
    if kind == "value_100k":
        return "--xla_dump_to=/tmp/" + "a" * 100000 + " --xla_gpu_autotune_level=high"
    if kind == "dump_to_fifo_dir":
        os.mkfifo(work / "dumpfifo")
        return f"--xla_dump_to={work / 'dumpfifo'} --xla_dump_hlo_as_text=true --xla_gpu_autotune_level=high"
    if kind == "host_devices_100000":
        return "--xla_force_host_platform_device_count=100000 --xla_redteam_no_such=1"
    if kind == "dashes_only":
        return "-- --- --= -=1 --xla_gpu_autotune_level"
    if kind == "undecodable_unknown":
        return os.fsdecode(b"--xla_dump_to=/tmp/\xff\xfe --xla_redteam_no_such=1")
    if kind == "tab_newline_separated":
        return "--xla_cpu_enable_fast_math=false\t--xla_redteam_no_such=1\n--xla_gpu_autotune_level=high"
    if kind == "fullwidth_dashes":
        return "\uff0d\uff0dxla_gpu_autotune_level=2 --xla_gpu_autotune_l\u00e9vel=1"
    raise ValueError(kind)


XLA_KINDS = ("unknown_300", "setter_refused_among_100", "setter_refused_40_distinct", "same_flag_1000",
             "file_10000_flags", "file_binary", "file_loop", "file_folder", "file_name_newline", "file_proc_environ",
             "value_escapes", "value_100k", "dump_to_fifo_dir", "host_devices_100000", "dashes_only",
             "undecodable_unknown", "tab_newline_separated", "fullwidth_dashes")


XLA_FIX_KINDS = ("setter_refused_among_100", "value_escapes", "undecodable_unknown", "tab_newline_separated",
                 "file_name_newline", "fullwidth_dashes")


def xlaflags_case(ctx: Ctx, arg: tuple[str, str]) -> None:
    kind, surf = arg
    m = ctx.machine()
    jax_machine(ctx, m)
    m.env["XLA_FLAGS"] = xla_value(kind, m.base)
    args = {"check": ["check", "--json"], "fix": ["fix", "--json"], "text": ["check"]}[surf]
    r = m.run(*args, timeout=90, preexec=cap_as(6144))
    data = hold(r, surf != "text", (0, 1), secs=75)
    if surf == "fix" and data is not None:
        for a in data.get("actions", []):
            for line in (a.get("env") or {}).get("bash", []) if isinstance(a, dict) else []:
                no_raw_controls(line, "a bash line of the plan", allow="")


family("xlaflags", "flags", {f"{k}-{s}": (k, s) for k in XLA_KINDS for s in ("check", "fix")
                                if s == "check" or k in XLA_FIX_KINDS}, xlaflags_case,
       limit=120)


# ====================================================================================================================
# bindfile: every file the doctor writes, where it is a mount point (docker -v FILE), read-only, or /dev/null over it;
# folders the doctor writes or loads from on a noexec or nosymfollow mount

EARLIER = "the user's earlier content\n"


def _written_whole(fmt: str, text: str) -> None:
    if fmt == "json":
        strict_json(text)
    elif fmt == "prometheus":
        parse_prometheus(text)
    elif fmt in ("junit", "junitxml"):
        try:
            ET.fromstring(text)
        except ET.ParseError as e:
            raise Fail(f"the JUnit file is not XML: {e}") from None
    elif fmt == "markdown":
        expect(text.strip(), "an empty markdown report")
        md_tables_whole(text)


BIND_TARGETS = {  # name -> (file relative to the machine's base, argv, the format written or the shell)
    "o_json": ("out/report.json", ["check", "--format", "json", "-o", "@T@"], "json"),
    "o_prometheus": ("out/metrics.prom", ["check", "--format", "prometheus", "-o", "@T@"], "prometheus"),
    "o_markdown": ("out/report.md", ["check", "--format", "markdown", "-o", "@T@"], "markdown"),
    "junit_xml": ("out/junit.xml", ["check", "--junit-xml", "@T@"], "junitxml"),
    "step_summary": ("out/summary.md", ["check", "--format", "github"], "summary"),
    "bashrc": ("home/.bashrc", ["--install-completion", "bash"], "rc"),
    "zshrc": ("home/.zshrc", ["--install-completion", "zsh"], "rc"),
    "fish_completion": ("home/.config/fish/completions/cudnn-doctor.fish", ["--install-completion", "fish"], "rc"),
}
BIND_MODES = ("bind_rw", "bind_ro", "devnull_over")


def bindfile_case(ctx: Ctx, arg: tuple[str, str]) -> None:
    name, mode = arg
    rel, argv, fmt = BIND_TARGETS[name]
    m = healthy(ctx)
    target = m.base / rel
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(EARLIER)
    src = m.base / "bindsrc"
    src.write_text(EARLIER)
    q = shlex.quote
    if mode == "bind_rw":
        setup = f"mount --bind {q(str(src))} {q(str(target))}"
    elif mode == "bind_ro":
        setup = f"mount --bind {q(str(src))} {q(str(target))}; mount -o remount,ro,bind {q(str(target))}"
    else:
        setup = f"mount --bind /dev/null {q(str(target))}"
    env = {"GITHUB_STEP_SUMMARY": str(target), "GITHUB_ACTIONS": "true"} if fmt == "summary" else {}
    args = [a.replace("@T@", str(target)) for a in argv]
    r = ns_run(m, setup, args, timeout=45, env=env)
    hold(r, False, (0, 1, 2), secs=40)
    if r.rc == 2:
        one_line(r)
    if mode == "devnull_over":
        return
    got = src.read_bytes()
    expect(target.read_text() == EARLIER, "the file under the mount was changed")
    if mode == "bind_ro":
        expect(got.decode(errors="replace") == EARLIER, "a read-only file was changed")
        if fmt not in ("summary",):
            expect(r.rc == 2, f"the doctor wrote nothing into a read-only file and "
                   f"exit {r.rc} says it did (README: a file that cannot be written is exit 2, said): {r!r}")
        return
    text = utf8_strict(got, "the written file")
    if fmt == "summary":
        expect(text.startswith(EARLIER), "the earlier step's summary was lost")
        return
    if fmt == "rc":
        if r.rc == 0:
            expect(EARLIER in text, "the user's lines were lost")
            expect(text != EARLIER, "exit 0 but nothing was added to the bind-mounted file")
        else:
            expect(text == EARLIER, "a refused install changed the file")
        return
    if r.rc in (0, 1):
        expect(text != EARLIER, f"exit {r.rc} but the report was not written into the (bind-mounted) file")
        _written_whole(fmt, text)
    else:
        expect(text == EARLIER, "a refused write left the user's file changed")


family("bindfile", "target", {f"{n}-{mo}": (n, mo) for n in BIND_TARGETS for mo in BIND_MODES}, bindfile_case,
       limit=80)


NOEXEC = ("cache_bench", "tmpdir_check", "tmpdir_bench", "tmpdir_image", "tmpdir_install", "cudnn_check",
          "cudnn_fix", "cudnn_nosymfollow", "prefix_install", "prefix_nosymfollow", "home_completion", "cache_check")


def noexec_case(ctx: Ctx, which: str) -> None:
    q = shlex.quote
    opts = "nosymfollow" if "nosymfollow" in which else "noexec"
    if which.startswith("cudnn"):
        m = ctx.machine()
        gpu_machine(ctx, m, gpus=1)
        folder = m.base / "cudnn" / "lib"
        fakes().fake_cudnn(folder, version=91900, cudart=13000, sublibraries=CUDNN9)
        m.add_lib(folder)
        base = m.run("check", "--json", timeout=40).json()
        stash = m.base / "stash"
        shutil.copytree(folder, stash, symlinks=True)
        setup = (f"mount -t tmpfs -o {opts},size=64m none {q(str(folder))}; cp -a {q(str(stash))}/. {q(str(folder))}/")
        args = ["fix", "--json"] if which == "cudnn_fix" else ["check", "--json"]
        r = ns_run(m, setup, args, timeout=45)
        data = hold(r, True, (0, 1), secs=40)
        new = {f.get("code") for f in problems(data)} - {f.get("code") for f in problems(base)}
        if which != "cudnn_fix":
            expect(any(str(c).startswith("CD3") for c in new),
                   f"cuDNN on a {opts} mount cannot be loaded, and no new cuDNN finding says so: {sorted(new)}")
        return
    if which in ("cache_bench", "tmpdir_bench"):
        m, args = bench_machine(ctx)
    else:
        m = healthy(ctx)
        args = {"tmpdir_check": ["check", "--json"], "tmpdir_image": ["image", str(raw_oci(ctx, name="oci-nx")), "--json"],
                "cache_check": ["check", "--json"], "home_completion": ["--install-completion", "bash"]}.get(which, [])
    prefix = m.base / "pfx"
    if which in ("tmpdir_install", "prefix_install", "prefix_nosymfollow"):
        args = ["install", "--from", str(archive(ctx)), "--prefix", str(prefix), "--yes", "--json"]
        prefix.mkdir()
    mount_at = {"cache_bench": Path(m.env["CUDNN_DOCTOR_CACHE_DIR"]), "cache_check": Path(m.env["CUDNN_DOCTOR_CACHE_DIR"]),
                "home_completion": m.home, "prefix_install": prefix, "prefix_nosymfollow": prefix}.get(which, m.base / "tmp")
    mount_at.mkdir(parents=True, exist_ok=True)
    env = {"TMPDIR": str(m.base / "tmp")} if which.startswith("tmpdir") else {}
    r = ns_run(m, f"mount -t tmpfs -o {opts},size=256m none {q(str(mount_at))}", args, timeout=60, env=env)
    data = hold(r, args[-1] == "--json", (0, 1, 2), secs=55)
    if r.rc == 2 and args[-1] != "--json":
        one_line(r)


family("bindfile", "mountopt", {w: w for w in NOEXEC}, noexec_case, limit=100)


# ====================================================================================================================
# concinst: install / uninstall / dry runs of one prefix at once, at seeded offsets

CONC_PAIRS = {
    "install_vs_uninstall": (["install", "A"], ["uninstall"]),
    "uninstall_vs_uninstall": (["uninstall"], ["uninstall"]),
    "install_a_vs_install_b": (["install", "A"], ["install", "B"]),
    "install_vs_dryrun": (["install", "A"], ["dryrun", "B"]),
    "three_installs": (["install", "A"], ["install", "B"], ["install", "A"]),
    "install_vs_check_reading": (["install", "B"], ["check"]),
}


def concinst_case(ctx: Ctx, arg: tuple[str, int]) -> None:
    pair, seed = arg
    rng = random.Random(seed)
    env = install_env(ctx)
    prefix = prefix_with_old(ctx)
    a, b = archive(ctx, 91900), archive(ctx, 91000)
    first = run_proc(cli_argv("install", "--from", str(a), "--prefix", str(prefix), "--yes", "--json"), env, ctx.tree, 50)
    judge(first, (0,), want_json=True, secs=45)

    def argv(spec: list[str]) -> list[str]:
        if spec[0] == "install":
            return cli_argv("install", "--from", str(a if spec[1] == "A" else b), "--prefix", str(prefix), "--yes",
                            "--json")
        if spec[0] == "dryrun":
            return cli_argv("install", "--from", str(b), "--prefix", str(prefix), "--dry-run", "--json")
        if spec[0] == "uninstall":
            return cli_argv("uninstall", "--prefix", str(prefix), "--yes", "--json")
        return cli_argv("check", "--json", "--search-path", str(prefix / "lib"))

    procs = []
    for spec in CONC_PAIRS[pair]:
        procs.append(subprocess.Popen(argv(spec), env=env, cwd=str(ctx.tree), stdin=subprocess.DEVNULL,
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True))
        time.sleep(rng.choice((0, 0.02, 0.05, 0.1, 0.2, 0.4)))
    results = []
    for p in procs:
        try:
            out, err = p.communicate(timeout=50)
        except subprocess.TimeoutExpired:
            for q in procs:
                kill_group(q.pid)
            raise Fail("hang: runs at once on one prefix") from None
        results.append(R(p.returncode, out, err, 0))
    for r in results:
        judge(r, (0, 1, 2), want_json=True, secs=60)
    _user_files_kept(prefix)
    wrong = installed_as_recorded(ctx, prefix)
    expect(not wrong, f"the prefix differs from its manifest after runs at once: {wrong}")
    if wrong is None:
        libs = sorted(p.name for p in prefix.rglob("libcudnn*") if p.name not in ("libcudnn.so.9.1.0", "libcudnn.so.9"))
        expect(not libs, f"nothing is recorded but libraries are there: {libs[:5]}")
    left = [p.name for p in prefix.rglob("*") if re.search(r"\.(tmp|part|partial)$|staging", p.name)]
    expect(not left, f"scratch left in the prefix: {left[:5]}")


family("concinst", "same_prefix", {f"{p}-{s}": (p, 1100 + i * 10 + s) for i, p in enumerate(CONC_PAIRS)
                                    for s in range(4)}, concinst_case, limit=150)


# ====================================================================================================================
# rcfiles: --install-completion into a .bashrc / .zshrc the user already has, as users have them

RC_KINDS = {
    "crlf": b"alias ll='ls -l'\r\nexport REDTEAM_A=1\r\n",
    "no_newline": b"alias ll='ls -l'",
    "bom": "\ufeffalias ll='ls -l'\n".encode(),
    "latin1": b"# caf\xe9 cr\xe8me\nalias ll='ls -l'\n",
    "set_u": b"set -u\nalias ll='ls -l'\n",
    "set_e_pipefail": b"set -eo pipefail\nalias ll='ls -l'\n",
    "old_line_elsewhere": b"source /old/place/.bash_completions/cudnn-doctor.sh\nalias ll='ls -l'\n",
    "dup_line": b"@LINE@\n@LINE@\n",
    "trailing_backslash": b"alias ll='ls -l' \\",
    "unterminated_heredoc": b"cat <<EOF >/dev/null\nhello\n",
    "huge_1mb": b"# " + b"x" * 1000 + b"\n" * 1 + (b"# " + b"y" * 998 + b"\n") * 1000,
    "symlink_dotfiles": b"alias ll='ls -l'\n",
    "dangling_symlink": b"",
    "mode_0600": b"export SECRET_TOKEN=redteam\n",
    "owner_1234": b"alias ll='ls -l'\n",
}
RC_JUDGE_SOURCING = {"crlf", "no_newline", "bom", "latin1", "set_u", "set_e_pipefail", "old_line_elsewhere",
                     "dup_line", "trailing_backslash", "huge_1mb", "symlink_dotfiles", "mode_0600", "owner_1234"}


def _completion_registered(m: M, shell: str, rc: Path) -> bool:
    if shell == "bash":
        p = subprocess.run(["bash", "--norc", "--noprofile", "-c", f"source {shlex.quote(str(rc))} >/dev/null 2>&1; "
                            "complete -p cudnn-doctor"], env={"HOME": str(m.home), "PATH": "/usr/bin:/bin"},
                           capture_output=True, timeout=30)
        return p.returncode == 0 and b"cudnn-doctor" in p.stdout
    p = subprocess.run(["zsh", "-f", "-c", f"source {shlex.quote(str(rc))} >/dev/null 2>&1; "
                        "print -r -- ${_comps[cudnn-doctor]}"], env={"HOME": str(m.home), "PATH": "/usr/bin:/bin"},
                       capture_output=True, timeout=30)
    return p.returncode == 0 and bool(p.stdout.strip())


def rcfiles_case(ctx: Ctx, arg: tuple[str, str]) -> None:
    kind, shell = arg
    m = ctx.machine()
    rc = m.home / (".bashrc" if shell == "bash" else ".zshrc")
    body = RC_KINDS[kind]
    if kind == "dup_line":
        fresh = ctx.machine("fresh")
        fr = fresh.run("--install-completion", shell, timeout=30)
        hold(fr, False, (0,), secs=25)
        line = (fresh.home / rc.name).read_bytes().strip().replace(str(fresh.home).encode(), str(m.home).encode())
        # the same install made in this home first, its line written twice by the user's copy-paste
        m.run("--install-completion", shell, timeout=30)
        body = line + b"\n" + line + b"\n"
    real = rc
    if kind == "symlink_dotfiles":
        real = m.home / "dotfiles" / rc.name.lstrip(".")
        real.parent.mkdir()
        real.write_bytes(body)
        rc.symlink_to(f"dotfiles/{rc.name.lstrip('.')}")
    elif kind == "dangling_symlink":
        rc.symlink_to("dotfiles/missing")
    else:
        rc.write_bytes(body)
    if kind == "mode_0600":
        rc.chmod(0o600)
    if kind == "owner_1234":
        os.chown(rc, 1234, 1234)
    r = m.run("--install-completion", shell, timeout=30)
    hold(r, False, (0, 2), secs=25)
    if r.rc == 2:
        one_line(r)
        if kind != "dangling_symlink":
            expect(real.read_bytes() == body, "a refused install changed the user's file")
        return
    if kind == "dangling_symlink":
        expect(rc.is_symlink() or rc.is_file(), "the .bashrc is gone")
        return
    after = real.read_bytes()
    if kind == "dup_line":
        expect(after.count(body.split(b"\n")[0]) <= 2, "a third copy of the doctor's line was added")
        return
    expect(after.startswith(body.rstrip(b"\n") if kind in ("no_newline", "trailing_backslash") else body),
           f"the user's lines were not kept as they were: {after[:200]!r}")
    expect(after != body, "exit 0 but the file was not changed")
    if kind == "symlink_dotfiles":
        expect(rc.is_symlink(), "the user's .bashrc link into their dotfiles was replaced by a file")
    if kind == "mode_0600":
        expect(stat.S_IMODE(rc.stat().st_mode) == 0o600, f"the private file's mode became {oct(rc.stat().st_mode)}")
    if kind == "owner_1234":
        st = rc.stat()
        expect((st.st_uid, st.st_gid) == (1234, 1234), f"the file's owner became {st.st_uid}:{st.st_gid}")
    again = m.run("--install-completion", shell, timeout=30)
    hold(again, False, (0,), secs=25)
    expect(real.read_bytes() == after, "a second install changed the file again (not idempotent)")
    if kind in RC_JUDGE_SOURCING:
        expect(_completion_registered(m, shell, rc), f"{shell} sourcing the file does not get the completion")


family("rcfiles", "existing", {f"{k}-{s}": (k, s) for k in RC_KINDS for s in ("bash", "zsh")}, rcfiles_case,
       limit=80)


# ====================================================================================================================
# locale: machine formats read by consumers under other locales, with a non-ASCII cuDNN folder

LOCALES = {
    "lc_all_c": {"LC_ALL": "C"},
    "lang_posix": {"LANG": "POSIX", "LC_ALL": ""},
    "lc_ctype_tr_latin5": {"LANG": "C.UTF-8", "LC_CTYPE": "tr_TR.ISO-8859-9"},
    "lang_ja_eucjp": {"LANG": "ja_JP.eucJP"},
    "lc_all_gb18030": {"LC_ALL": "zh_CN.GB18030"},
    "lc_numeric_de": {"LANG": "C.UTF-8", "LC_NUMERIC": "de_DE.UTF-8"},
    "language_fr": {"LANGUAGE": "fr:de", "LC_MESSAGES": "fr_FR.UTF-8"},
    "lc_all_modifier": {"LC_ALL": "C.UTF-8@euro"},
    "all_empty": {"LANG": "", "LC_ALL": "", "LC_CTYPE": ""},
}
LOCALE_FORMATS = ("json", "fix_json", "explain_json", "prometheus", "junit", "github", "text", "markdown",
                  "step_summary")
NONASCII = "Zoë-İı-漢字-😀"


def locale_case(ctx: Ctx, arg: tuple[str, str]) -> None:
    loc, fmt = arg
    m = ctx.machine()
    gpu_machine(ctx, m, gpus=1)
    folder = m.base / NONASCII / "lib"
    fakes().fake_cudnn(folder, version=91900, cudart=13000, sublibraries=CUDNN9)
    env = dict(LOCALES[loc])
    sp = ["--search-path", str(folder)]
    if fmt == "json":
        r = m.run("check", "--json", *sp, env=env, timeout=45)
    elif fmt == "fix_json":
        r = m.run("fix", "--json", *sp, env=env, timeout=45)
    elif fmt == "explain_json":
        r = m.run("explain", f"OSError: {folder}/libcudnn_ops.so.9: cannot open shared object file: No such file or "
                  "directory", "--json", env=env, timeout=45)
    elif fmt == "prometheus":
        r = m.run("check", "--format", "prometheus", *sp, env=env, timeout=45)
    elif fmt == "junit":
        r = m.run("check", "--format", "junit", *sp, env=env, timeout=45)
    elif fmt == "github":
        r = m.run("check", "--format", "github", *sp, env=env, timeout=45)
    elif fmt == "markdown":
        r = m.run("check", "--format", "markdown", *sp, env=env, timeout=45)
    elif fmt == "step_summary":
        summary = m.base / "summary.md"
        summary.write_text("## an earlier step\n")
        r = m.run("check", "--format", "github", *sp, env={**env, "GITHUB_STEP_SUMMARY": str(summary),
                                                          "GITHUB_ACTIONS": "true"}, timeout=45)
        hold(r, False, (0, 1), secs=40)
        text = utf8_strict(summary.read_bytes(), f"the step summary under {env}")
        expect(text.startswith("## an earlier step\n"), "the earlier step's summary was lost")
        md_tables_whole(text)
        return
    else:
        r = m.run("check", *sp, env=env, timeout=45)
    hold(r, fmt.endswith("json"), (0, 1), secs=40)
    text = utf8_strict(r.outb, f"stdout ({fmt}) under {env}")
    if fmt.endswith("json"):
        data = strict_json(text)
        jq_ok(r.outb, {"LC_ALL": "C"})
        if fmt != "explain_json":
            whole = json.dumps(data, ensure_ascii=False)
            expect(NONASCII in whole, f"the folder's name does not come back whole from the JSON under {env}")
    elif fmt == "prometheus":
        parse_prometheus(text)
        for line in text.split("\n"):
            if line and not line.startswith("#"):
                expect(not re.search(r"\} -?[0-9]+,[0-9]", line), f"a decimal comma in a sample: {line[:120]!r}")
    elif fmt == "junit":
        try:
            ET.fromstring(r.outb)
        except ET.ParseError as e:
            raise Fail(f"the JUnit output is not XML under {env}: {e}") from None
    elif fmt == "markdown":
        md_tables_whole(text)
        expect(NONASCII in text, f"the markdown report lost the folder's name under {env}")
    elif fmt == "github":
        for line in text.split("\n"):
            if line.startswith("::"):
                expect(WF_LINE.match(line), f"not a workflow command: {line[:160]!r}")
    else:
        expect(NONASCII in text or "Zo" in text, f"the text report lost the folder's name under {env}")


family("locale", "consumer", {f"{lo}-{f}": (lo, f) for lo in LOCALES for f in LOCALE_FORMATS}, locale_case, limit=80)


# ====================================================================================================================
# datafile: errors.toml (explain's catalog) edited under the installed package

def _add_entry(text: str, **kv: str) -> str:
    entry = "\n[[error]]\n" + "".join(f"{k} = {v}\n" for k, v in kv.items())
    return text + entry


ERR_EDITS = {
    "redos_pattern": lambda t: _add_entry(t, id="'redteam-redos'", framework="'pytorch'", code="'CD301'",
                                          priority="30", pattern="'''(a+)+$'''", example="'''aaaa!'''",
                                          cause="'''x'''", fix="'''x'''", source="'''redteam'''"),
    "redos_nested_gaps": lambda t: _add_entry(t, id="'redteam-redos2'", framework="'pytorch'", code="'CD301'",
                                              priority="30", pattern="'''(.*a){30}x'''", example="'''ax'''",
                                              cause="'''x'''", fix="'''x'''", source="'''redteam'''"),
    "invalid_regex": lambda t: _add_entry(t, id="'redteam-bad'", framework="'pytorch'", code="'CD301'",
                                          priority="30", pattern="'''(unclosed[a-'''", example="'''x'''",
                                          cause="'''x'''", fix="'''x'''", source="'''redteam'''"),
    "unknown_group": lambda t: _add_entry(t, id="'redteam-group'", framework="'pytorch'", code="'CD301'",
                                          priority="30", pattern="'''(?P<evil>aaaa)'''", example="'''aaaa'''",
                                          cause="'''x'''", fix="'''x'''", source="'''redteam'''"),
    "unknown_code": lambda t: _add_entry(t, id="'redteam-code'", framework="'pytorch'", code="'CD999'",
                                         priority="30", pattern="'''aaaa'''", example="'''aaaa'''",
                                         cause="'''x'''", fix="'''x'''", source="'''redteam'''"),
    "priority_inf": lambda t: _add_entry(t, id="'redteam-inf'", framework="'pytorch'", code="'CD301'",
                                         priority="inf", pattern="'''aaaa'''", example="'''aaaa'''",
                                         cause="'''x'''", fix="'''x'''", source="'''redteam'''"),
    "fix_with_escapes": lambda t: _add_entry(t, id="'redteam-esc'", framework="'pytorch'", code="'CD301'",
                                             priority="30", pattern="'''aaaa'''", example="'''aaaa'''",
                                             cause='"\\u001b]52;c;cm0=\\u0007\\u001b[2J cause"',
                                             fix='"\\u001b[2J\\nrm -rf ~\\u0085 `reboot`"', source="'''redteam'''"),
    "match_everything": lambda t: _add_entry(t, id="'redteam-all'", framework="'pytorch'", code="'CD301'",
                                             priority="1000", pattern="'''[\\s\\S]*'''", example="'''a'''",
                                             cause="'''x'''", fix="'''x'''", source="'''redteam'''"),
    "duplicate_ids_x2000": lambda t: t + ("\n[[error]]\nid = 'dup'\nframework = 'pytorch'\ncode = 'CD301'\npriority = 1\n"
                                          "pattern = '''aaaa'''\nexample = '''aaaa'''\ncause = 'x'\nfix = 'x'\n"
                                          "source = 'redteam'\n") * 2000,
    "requires_wrong_type": lambda t: _add_entry(t, id="'redteam-req'", framework="'pytorch'", code="'CD301'",
                                                priority="30", pattern="'''aaaa'''", example="'''aaaa'''",
                                                requires="7", cause="'''x'''", fix="'''x'''", source="'''redteam'''"),
}
ERR_SURFACES = {"explain_json": True, "explain_text": False, "explain_stdin_json": True, "explain_code_json": True}


def datafile_case(ctx: Ctx, arg: tuple[str, str]) -> None:
    edit, surf = arg
    tree = copy_tree(ctx)
    p = tree / "compat" / "errors.toml"
    p.write_text(ERR_EDITS[edit](p.read_text()))
    m = healthy(ctx)
    m.env["PYTHONPATH"] = str(tree)
    msg = "a" * 40 + "!" + " RuntimeError: cuDNN error: CUDNN_STATUS_NOT_INITIALIZED"
    if surf == "explain_json":
        r = m.run("explain", msg, "--json", timeout=30, preexec=cap_as(1536))
    elif surf == "explain_text":
        r = m.run("explain", msg, timeout=30, preexec=cap_as(1536))
    elif surf == "explain_code_json":
        r = m.run("explain", "CD301", "--json", timeout=30, preexec=cap_as(1536))
    else:
        r = m.run("explain", "-", "--json", stdin=msg.encode(), timeout=30, preexec=cap_as(1536))
    hold(r, ERR_SURFACES[surf], (0, 1, 2), secs=20)
    if not ERR_SURFACES[surf]:
        expect("\nrm -rf ~" not in r.out, "a line of the damaged data printed as a command of its own")


family("datafile", "errors_toml", {f"{e}-{s}": (e, s) for e in ERR_EDITS for s in ERR_SURFACES}, datafile_case,
       limit=60)


# ====================================================================================================================
# deeptb (continued): the framework's import scribbles on the descriptors and files its doctor child answers through

ANSWER_KINDS = {
    "scribble_fds_small": "import os\nfor fd in range(3, 64):\n    try:\n        os.write(fd, b'\\x00garbage{\"schema\": [' * 40)\n    except OSError:\n        pass\nraise RuntimeError('cuDNN error: CUDNN_STATUS_NOT_INITIALIZED')",
    "scribble_fds_20mb": "import os\nfor fd in range(3, 64):\n    try:\n        os.set_blocking(fd, True)\n        os.write(fd, b'x' * (20 << 20))\n    except OSError:\n        pass\nraise RuntimeError('cuDNN error: CUDNN_STATUS_NOT_INITIALIZED')",
    "fake_answer_fds": "import os\nfor fd in range(3, 64):\n    try:\n        os.write(fd, b'{\"ok\": true, \"torch\": {\"cuda\": true, \"cudnn\": 91900}, \"schema\": \"cudnn-doctor/child/1\"}\\n')\n    except OSError:\n        pass\nraise RuntimeError('cuDNN error: CUDNN_STATUS_NOT_INITIALIZED')",
    "close_fds": "import os\nos.closerange(3, 4096)\nraise RuntimeError('cuDNN error: CUDNN_STATUS_NOT_INITIALIZED')",
    "dup_stdout_over_fds": "import os\nfor fd in range(3, 64):\n    try:\n        os.dup2(1, fd)\n    except OSError:\n        pass\nprint('{\"ok\": true}' * 1000)\nraise RuntimeError('cuDNN error: CUDNN_STATUS_NOT_INITIALIZED')",
    "answer_path_fifo": "import os\nfor k, v in list(os.environ.items()):\n    if k.startswith('CUDNN_DOCTOR_') and v.startswith('/') and k.endswith('PATH'):\n        try:\n            os.unlink(v)\n        except OSError:\n            pass\n        os.mkfifo(v)\nraise RuntimeError('cuDNN error: CUDNN_STATUS_NOT_INITIALIZED')",
    "answer_path_dev_zero": "import os\nfor k, v in list(os.environ.items()):\n    if k.startswith('CUDNN_DOCTOR_') and v.startswith('/') and k.endswith('PATH'):\n        try:\n            os.unlink(v)\n        except OSError:\n            pass\n        os.symlink('/dev/zero', v)\nraise RuntimeError('cuDNN error: CUDNN_STATUS_NOT_INITIALIZED')",
    "answer_path_sparse": "import os\nfor k, v in list(os.environ.items()):\n    if k.startswith('CUDNN_DOCTOR_') and v.startswith('/') and k.endswith('PATH'):\n        with open(v, 'ab') as f:\n            f.truncate(4 << 30)\nraise RuntimeError('cuDNN error: CUDNN_STATUS_NOT_INITIALIZED')",
}
DEEP_KINDS.update(ANSWER_KINDS)
family("deeptb", "answer", {f"{k}-{s}": (k, s) for k in ANSWER_KINDS for s in DEEP_SURFACES}, deeptb_case, limit=100)


# ====================================================================================================================
# rcrace / rckill: two completion installs into one home at once; one killed at a seeded instant

def _rc_and_line(m: M, shell: str) -> tuple[Path, bytes]:
    if shell == "bash":
        return m.home / ".bashrc", b"cudnn-doctor.sh"
    return m.home / ".zshrc", b".zfunc"


def rcrace_case(ctx: Ctx, arg: tuple[str, float, bool]) -> None:
    shell, offset, big = arg
    m = ctx.machine()
    rc, mark = _rc_and_line(m, shell)
    body = (b"# " + b"z" * 998 + b"\n") * (1000 if big else 1) + b"alias ll='ls -l'\n"
    rc.write_bytes(body)
    procs = []
    for _ in range(2):
        procs.append(subprocess.Popen(m.argv("--install-completion", shell), env=m.env, cwd=str(m.cwd),
                                      stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                      start_new_session=True))
        time.sleep(offset)
    for p in procs:
        try:
            out, err = p.communicate(timeout=40)
        except subprocess.TimeoutExpired:
            for q in procs:
                kill_group(q.pid)
            raise Fail("hang: two completion installs at once") from None
        r = R(p.returncode, out, err, 0)
        hold(r, False, (0, 2), secs=40)
        if r.rc == 2:
            one_line(r)
    after = rc.read_bytes()
    expect(after.startswith(body), "the user's lines were not kept as they were")
    added = after[len(body):]
    expect(added.count(mark) == 1, f"two installs at once left {added.count(mark)} of the doctor's lines: {added!r}")
    expect(_completion_registered(m, shell, rc), f"{shell} sourcing the file does not get the completion")


family("rcfiles", "race", {f"{s}-{o}-{'big' if b else 'small'}": (s, o, b) for s in ("bash", "zsh")
                           for o in (0.0, 0.01, 0.03, 0.08) for b in (False, True)}, rcrace_case, limit=90)


def rckill_case(ctx: Ctx, arg: tuple[str, int]) -> None:
    shell, seed = arg
    rng = random.Random(seed)
    m = ctx.machine()
    rc, mark = _rc_and_line(m, shell)
    body = (b"# " + b"k" * 998 + b"\n") * 2000 + b"alias ll='ls -l'\n"
    rc.write_bytes(body)
    p = subprocess.Popen(m.argv("--install-completion", shell), env=m.env, cwd=str(m.cwd), stdin=subprocess.DEVNULL,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    time.sleep(rng.uniform(0.0, 0.2))
    kill_group(p.pid)
    p.communicate(timeout=20)
    after = rc.read_bytes()
    expect(after == body or (after.startswith(body) and after[len(body):].count(mark) == 1),
           f"the rc file after a kill is neither the user's nor the user's plus one line ({len(after)} bytes, "
           f"{len(body)} before)")
    if after != body:
        expect(_completion_registered(m, shell, rc), "the line is there but the completion it sources is not whole")
    r = m.run("--install-completion", shell, timeout=30)
    hold(r, False, (0,), secs=25)
    final = rc.read_bytes()
    expect(final.startswith(body) and final[len(body):].count(mark) == 1, "the run after the kill did not end with one line")
    expect(_completion_registered(m, shell, rc), "after the kill and a new install, no completion")


family("rcfiles", "kill", {f"{s}-{k}": (s, 1150 + k) for s in ("bash", "zsh") for k in range(8)}, rckill_case,
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
    scratch = Path(tempfile.mkdtemp(prefix="redteam11-43-", dir="/var/tmp"))
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
