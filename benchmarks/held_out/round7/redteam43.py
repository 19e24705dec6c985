#!/usr/bin/env python3
# ruff: noqa  (an evaluation set: its harness is kept as the helper wrote it apart from the code)
"""Round seven red-team over issue 43's surfaces, the newest first (sealed: builders never read it).

    python3 redteam.py --tree CHECKOUT [--jobs 2] [--only SUBSTRING] [--list-failures] [--python PY]

Each case runs in a process of its own (this file with --run-case), in a scratch folder, against the doctor of
CHECKOUT started as `PYTHONPATH=CHECKOUT PY -m cudnn_doctor ...` in a pretend machine (CUDNN_DOCTOR_SYSTEM_PREFIX,
HOME, CUDNN_DOCTOR_CACHE_DIR of its own). A case holds when a user would agree: no traceback or internal error, the
exit code README documents, one JSON object with --json, nothing of the user's lost or half-written, bounded time
and memory, no printed line that runs a command the user did not ask for. A case past its limit fails as a hang.
"""

from __future__ import annotations

import argparse


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
    "loader": "hostile libcudnn*/libcuda.so.1/libnvidia-ml.so.1 on the loader's path (files and ELF constructors)",
    "deep": "check --deep and fix's children: hostile LD_PRELOAD, LD_LIBRARY_PATH, PATH, PYTHONPATH, limits, ptxas",
    "xla": "the XLA_FLAGS probe and hostile jax installs",
    "framework": "hostile framework installs (torch/jax/tensorflow files, dist-info METADATA/RECORD)",
    "explain": "hostile messages for explain (argv, stdin, files): huge, binary, controls, escapes, JSON-breaking",
    "signals": "every command killed at any instant (SIGKILL/SIGTERM/SIGINT mid-write): user files whole",
    "quoting": "printed paths and lines that reach a shell or a parser",
    "config": "configuration files, state and cache files, CUDNN_DOCTOR_* variables",
    "env": "limits, no /proc, read-only HOME, full disks, non-UTF-8 locales and paths",
    "completion": "completion scripts and --install-completion/--show-completion",
    "image": "image: hostile tars, OCI layouts and registries on 127.0.0.1",
    "fleet": "fleet run/merge inputs (a fake srun's nodes, Slurm variables, reports)",
    "bench": "bench options, variables and hostile libraries",
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


BUILD = Path(os.environ.get("REDTEAM7_BUILD", "/tmp/redteam7-43-build"))


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

LOADER_NAMES = {"cudnn": ("libcudnn.so.9", "CD3"), "cuda": ("libcuda.so.1", "CD1"),
                "nvml": ("libnvidia-ml.so.1", "CD1")}
# ld.so skips a dangling link or a link loop on its path and goes on to the next folder: those two do not break
BREAKS = (set(FILE_KINDS) - {"dangling", "loop"}) | {
    "exit_in_ctor", "loops_in_ctor", "closes_every_fd", "stops_itself", "kills_its_group",
                            "aborts", "clears_environ", "prints_and_exits_zero", "segfaults", "every_fd_to_dev_null",
                            "open_files_limit_3"}


def loader_case(ctx: Ctx, arg: tuple[str, str, tuple[str, ...]]) -> None:
    which, kind, command = arg
    name, family_code = LOADER_NAMES[which]
    m = ctx.machine()
    gpu_machine(ctx, m, gpus=1)
    if which == "cudnn":
        fakes().fake_cudnn(m.base / "good-cudnn", version=91900, cudart=13000, sublibraries=CUDNN9)
        m.add_lib(m.base / "good-cudnn")
    hostile = m.base / "hostile lib"
    place_hostile(hostile / name, kind, name)
    before = fingerprint(hostile / name)
    m.add_lib(hostile)
    m.env["CUDNN_DOCTOR_PROBE_TIMEOUT"] = "4"
    r = m.run(*command, "--json", timeout=50)
    try:
        data = judge(r, (0, 1), secs=45)
    finally:
        reap(m.base)
    expect(fingerprint(hostile / name) == before, f"the hostile {name} was changed by the doctor")
    assert data is not None
    if kind in BREAKS and command[0] == "check":
        text = json.dumps(data.get("findings", []))
        near = [f for f in data.get("findings", []) if str(f.get("code", "")).startswith(family_code)
                and str(hostile) in json.dumps(f)]
        expect(near, f"no {family_code}xx finding names the unusable {hostile / name} ({kind}); codes "
                     f"{sorted(codes(data))}; findings {text[:600]}")
    if kind not in BREAKS:
        expect("CD104" not in codes(data) or which == "nvml",
               f"what a library printed was read as NVML's answer (CD104): {sorted(codes(data))}")


LOADER_KINDS = list(FILE_KINDS) + list(ELF_MODES)
family("loader", "check", {f"{w}-{k}": (w, k, ("check",)) for w in LOADER_NAMES for k in LOADER_KINDS},
       loader_case, limit=90)
family("loader", "deep", {f"{w}-{k}": (w, k, ("check", "--deep")) for w in LOADER_NAMES for k in (
    "fifo", "sparse_4g", "loops_in_ctor", "stops_itself", "kills_its_group", "closes_every_fd",
    "fake_json_and_escapes", "grandchild_keeps_printing")}, loader_case, limit=90)
family("loader", "fix", {f"{w}-{k}": (w, k, ("fix",)) for w in LOADER_NAMES for k in (
    "dev_zero", "loop", "exit_in_ctor", "every_fd_to_dev_null", "clears_environ")}, loader_case, limit=90)


def tty_case(ctx: Ctx, arg: tuple[str, int]) -> None:
    """The doctor on a terminal (a pty of `script`), a library on the loader's path that writes to /dev/tty or reads
    its standard input: nothing it writes reaches the user's terminal, and no child waits on the user's keyboard."""
    which, mode = arg
    if shutil.which("script") is None:
        raise Skip("script (util-linux) is not installed")
    name, _ = LOADER_NAMES[which]
    m = ctx.machine()
    gpu_machine(ctx, m, gpus=1)
    hostile = m.base / "hostile"
    hostile.mkdir()
    shutil.copyfile(hostile_elf(mode, name), hostile / name)
    m.add_lib(hostile)
    m.env["CUDNN_DOCTOR_PROBE_TIMEOUT"] = "8"
    import shlex
    report = m.base / "report.json"
    m.env["REDTEAM_LOADED_MARK"] = str(m.base / "loaded")
    line = shlex.join(m.argv("check", "--json", "-o", str(report)))
    start = time.monotonic()
    proc = subprocess.Popen(["script", "-qec", line, "/dev/null"], env={**m.env, "TERM": "xterm"}, cwd=str(m.cwd),
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            start_new_session=True)  # its standard input stays open and silent: a user who types nothing
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(proc.stdout.read()), daemon=True)
    reader.start()
    reader.join(60)
    if reader.is_alive():
        kill_group(proc.pid)
        reap(m.base)
        raise Fail("hang: check on a terminal still running after 60 s")
    proc.wait(5)
    proc.stdin.close()
    reap(m.base)
    r = R(proc.returncode, got[0] if got else b"", b"", time.monotonic() - start)
    expect(b"REDTEAM-TTY" not in r.outb and b"\x1b]52" not in r.outb,
           f"a child of the doctor wrote on the user's terminal: {r.outb[-300:]!r}")
    data = json.loads(report.read_bytes()) if report.exists() else None
    expect(data is not None, f"no report was written: {r!r}")
    if not (m.base / "loaded").exists():
        raise Skip(f"no child of the doctor loaded {name} (nothing to judge)")
    expect(r.secs < 7, f"took {r.secs:.1f} s: a child waited on the terminal's input until its 8 s were up")
    for word in BAD_WORDS:
        expect(word not in r.out, f"{word!r} on the terminal")


family("loader", "terminal", {f"{w}-{k}": (w, mode) for w in LOADER_NAMES
                              for k, mode in (("writes_dev_tty", 19), ("reads_stdin", 20))}, tty_case, limit=90)


@case("loader", limit=90)
def cudnn_sublibraries_all_hostile_kinds_at_once(ctx: Ctx) -> None:
    """Every sub-library of one copy a different hostile kind: one report, each problem said, in bounded time."""
    m = ctx.machine()
    gpu_machine(ctx, m, gpus=1)
    folder = m.base / "mixed"
    fakes().fake_cudnn(folder, version=91900, cudart=13000, versioned_files=False)
    kinds = ["fifo", "loops_in_ctor", "sparse_4g", "stops_itself", "dev_zero", "segfaults", "loop"]
    for sub, kind in zip(CUDNN9, kinds):
        place_hostile(folder / f"{sub}.so.9", kind, f"{sub}.so.9")
    m.add_lib(folder)
    m.env["CUDNN_DOCTOR_PROBE_TIMEOUT"] = "4"
    r = m.run("check", "--deep", "--json", timeout=80)
    try:
        data = judge(r, (0, 1), secs=60)
    finally:
        reap(m.base)
    assert data is not None
    expect(codes(data) & {"CD304", "CD305", "CD307", "CD308", "CD309", "CD318", "CD319"},
           f"no sub-library finding for a copy whose sub-libraries are all broken: {sorted(codes(data))}")


@case("loader", limit=90)
def search_path_of_every_hostile_kind(ctx: Ctx) -> None:
    m = ctx.machine()
    gpu_machine(ctx, m, gpus=1)
    args = ["check", "--json"]
    for i, kind in enumerate(("fifo", "dev_zero", "sparse_4g", "loops_in_ctor", "closes_every_fd", "folder")):
        folder = m.base / f"sp{i}"
        place_hostile(folder / "libcudnn.so.9", kind, "libcudnn.so.9")
        args += ["--search-path", str(folder)]
    m.env["CUDNN_DOCTOR_PROBE_TIMEOUT"] = "4"
    r = m.run(*args, timeout=80)
    try:
        judge(r, (0, 1), secs=60)
    finally:
        reap(m.base)


@case("loader", limit=60)
def cudnn_path_variable_names_a_fifo_tree(ctx: Ctx) -> None:
    m = ctx.machine()
    gpu_machine(ctx, m, gpus=1)
    root = m.base / "cudnnroot"
    (root / "include").mkdir(parents=True)
    os.mkfifo(root / "include" / "cudnn_version.h")
    os.mkfifo(root / "include" / "cudnn.h")
    place_hostile(root / "lib" / "libcudnn.so.9", "fifo", "libcudnn.so.9")
    r = m.run("check", "--json", env={"CUDNN_PATH": str(root)}, timeout=50)
    judge(r, (0, 1), secs=30)


# ====================================================================================================================
# deep: check --deep and fix's children, and their bisection of a hostile environment

SITECUSTOM = {
    "prints": "import os, sys\nif os.environ.get('CUDNN_DOCTOR_CHILD_TOKEN'):\n    print('{\"schema\": 1}')\n"
              "    sys.stdout.flush()\n",
    "hangs": "import os, time\nif os.environ.get('CUDNN_DOCTOR_CHILD_TOKEN'):\n    time.sleep(600)\n",
    "exits": "import os\nif os.environ.get('CUDNN_DOCTOR_CHILD_TOKEN'):\n    os._exit(0)\n",
    "closes_fds": "import os\nif os.environ.get('CUDNN_DOCTOR_CHILD_TOKEN'):\n    os.closerange(0, 256)\n",
    "raises": "import os\nif os.environ.get('CUDNN_DOCTOR_CHILD_TOKEN'):\n    raise SystemExit('\\x1b[2J' + 'x' * 100000)\n",
    "daemon": "import os, time\nif os.environ.get('CUDNN_DOCTOR_CHILD_TOKEN') and os.fork() == 0:\n    os.setsid()\n"
              "    time.sleep(120)\n    os._exit(0)\n",
}


def deep_env(ctx: Ctx, how: str, m: M) -> tuple[dict, Callable[[M], None] | None, str | None]:
    """The environment part HOW made hostile; returns (env, extra setup, a shell prefix for limits)."""
    env: dict = {}
    if how == "path_5000_entries":
        env["PATH"] = ":".join(f"/p{i}" for i in range(5000)) + ":" + m.env["PATH"]
    elif how == "path_fifo_ptxas":
        (m.base / "fifobin").mkdir()
        os.mkfifo(m.base / "fifobin" / "ptxas")
        env["PATH"] = f"{m.base / 'fifobin'}:{m.env['PATH']}"
    elif how.startswith("ptxas_"):
        body = {"ptxas_hangs": "sleep 600", "ptxas_10mb": "head -c 10000000 /dev/zero | tr '\\0' 'x'",
                "ptxas_garbage": "printf 'ptxas: NVIDIA (R) Ptx optimizing assembler\\nCuda compilation tools, "
                                 "release \\033[2J99999999999999999999.1, V\\xff\\n'",
                "ptxas_segv": "kill -SEGV $$", "ptxas_daemon": "(setsid sleep 120 &) ; echo 'release 11.8, V11.8.89'",
                "ptxas_reads_stdin": "cat; echo 'release 12.8, V12.8.93'",
                "ptxas_not_executable": None, "ptxas_folder": None}[how]
        b = m.base / "ptxbin"
        b.mkdir()
        if how == "ptxas_folder":
            (b / "ptxas").mkdir()
        else:
            (b / "ptxas").write_text(f"#!/bin/sh\n{body}\n" if body else "#!/bin/sh\necho release 12.8\n")
            (b / "ptxas").chmod(0o644 if body is None else 0o755)
        env["PATH"] = f"{b}:{m.env['PATH']}"
    elif how.startswith("pythonpath_"):
        d = m.base / "pp"
        d.mkdir()
        (d / "sitecustomize.py").write_text(SITECUSTOM[how.removeprefix("pythonpath_")])
        env["PYTHONPATH"] = f"{m.env['PYTHONPATH']}:{d}"
    elif how == "llp_3000_entries":
        env["LD_LIBRARY_PATH"] = ":".join(f"/l{i}" for i in range(3000)) + ":" + m.env["LD_LIBRARY_PATH"]
    elif how == "llp_fifo_folder_entry":
        os.mkfifo(m.base / "fifo-entry")
        env["LD_LIBRARY_PATH"] = f"{m.base / 'fifo-entry'}:{m.env['LD_LIBRARY_PATH']}"
    elif how == "two_thousand_cuda_variables":
        env.update({f"CUDA_REDTEAM_{i}": "1" for i in range(700)})
        env.update({f"NCCL_REDTEAM_{i}": "1" for i in range(700)})
        env.update({f"CUDNN_REDTEAM_{i}": "1" for i in range(600)})
    elif how == "variable_of_120kb":
        env["CUDA_CACHE_PATH"] = "/tmp/" + "y" * 120000
    elif how == "preload_missing_and_garbage":
        (m.base / "junk.so").write_bytes(b"not an elf at all")
        env["LD_PRELOAD"] = f"{m.base / 'nope.so'} {m.base / 'junk.so'}"
    elif how == "preload_only_children_exit":
        env["LD_PRELOAD"] = str(hostile_elf(1, "libredteam_exit.so", only_children=True))
    elif how == "preload_only_children_loop":
        env["LD_PRELOAD"] = str(hostile_elf(2, "libredteam_loop.so", only_children=True))
    elif how == "preload_only_children_closes":
        env["LD_PRELOAD"] = str(hostile_elf(4, "libredteam_close.so", only_children=True))
    elif how == "preload_only_children_fd_limit":
        env["LD_PRELOAD"] = str(hostile_elf(14, "libredteam_nofile.so", only_children=True))
    else:
        raise ValueError(how)
    return env, None, None


DEEP_HOW = ["path_5000_entries", "path_fifo_ptxas", "ptxas_hangs", "ptxas_10mb", "ptxas_garbage", "ptxas_segv",
            "ptxas_daemon", "ptxas_reads_stdin", "ptxas_not_executable", "ptxas_folder", "pythonpath_prints",
            "pythonpath_hangs", "pythonpath_exits", "pythonpath_closes_fds", "pythonpath_raises", "pythonpath_daemon",
            "llp_3000_entries", "llp_fifo_folder_entry", "two_thousand_cuda_variables", "variable_of_120kb",
            "preload_missing_and_garbage", "preload_only_children_exit", "preload_only_children_loop",
            "preload_only_children_closes", "preload_only_children_fd_limit"]


def deep_case(ctx: Ctx, arg: tuple[str, str]) -> None:
    how, command = arg
    m = ctx.machine()
    site = torch_machine(ctx, m)
    env, _, _ = deep_env(ctx, how, m)
    env.setdefault("CUDNN_DOCTOR_DEEP_TIMEOUT", "8")
    env.setdefault("CUDNN_DOCTOR_PROBE_TIMEOUT", "5")
    args = ["check", "--deep", "--json"] if command == "deep" else ["fix", "--json"]
    r = m.run(*args, env=env, timeout=80)
    left = leftovers_of(m.base)
    reap(m.base)
    data = judge(r, (0, 1), secs=70, lenient=how == "preload_missing_and_garbage")
    assert data is not None
    expect(not [x for x in left if "sleep 120" not in x and "python" in x],
           f"processes the doctor started are still running after it: {left[:3]}")
    expect((site / "torch" / "__init__.py").read_text() == GOOD_TORCH, "the framework's files changed")
    if command == "deep" and not how.startswith(("pythonpath_", "preload_only")):
        text = json.dumps(data)
        expect("CD415" not in codes(data), f"a working framework was reported failing (CD415): {text[:600]}")


family("deep", "env", {f"{h}-{c}": (h, c) for h in DEEP_HOW for c in ("deep", "fix")}, deep_case, limit=130)


def cure_case(ctx: Ctx, arg: tuple[str, str, dict]) -> None:
    """A framework that fails only while VARIABLE is set, among hostile other parts: the cure found is VARIABLE."""
    variable, value, extra = arg
    m = ctx.machine()
    torch_machine(ctx, m)
    env = {"REDTEAM_TORCH_FAILS_WHEN": variable, variable: value, "CUDNN_DOCTOR_DEEP_TIMEOUT": "8", **extra}
    r = m.run("fix", "--json", env=env, timeout=80)
    reap(m.base)
    data = judge(r, (0, 1), secs=70)
    assert data is not None
    lines = json.dumps(data.get("actions", []))
    expect(variable in lines, f"the plan does not touch {variable}, the part whose change cures: {lines[:800]}")
    bash = [x for a in data.get("actions", []) if isinstance(a.get("env"), dict) for x in a["env"].get("bash", [])]
    expect(bash, f"no bash line in the plan changes {variable}: {lines[:800]}")
    got = run_proc(["bash", "--norc", "--noprofile", "-c", "\n".join(bash) + f'\nprintf %s "${{{variable}-UNSET}}"'],
                   {**m.env, **env}, m.cwd, 15)
    expect(got.outb != os.fsencode(value), f"the plan's bash lines leave {variable} as it was: {bash}")
    expect(not (m.cwd / "pwned").exists(), f"the plan's bash lines ran a command in the value: {bash}")


CURES = {
    "preload_spaces_newline": ("LD_PRELOAD", "/nonexistent/a b.so\n/x.so", {}),
    "preload_dollar_paren": ("LD_PRELOAD", "/tmp/$(touch pwned).so", {}),
    "cache_path_backtick": ("CUDA_CACHE_PATH", "/tmp/`touch pwned`/x", {}),
    "cuda_var_escape": ("CUDA_MODULE_LOADING", "\x1b]0;owned\x07LAZY", {}),
    "cuda_var_huge": ("CUDA_MODULE_LOADING", "L" * 120000, {}),
    "nccl_var_among_2000": ("NCCL_P2P_DISABLE", "1", {f"NCCL_REDTEAM_{i}": "1" for i in range(2000)}),
    "cudnn_var_non_utf8_sibling": ("CUDNN_LOGINFO_DBG", "1", {"CUDNN_LOGDEST_DBG": "/tmp/\udcff\udcfe"}),
    "nccl_debug_quotes": ("NCCL_DEBUG", "INFO'\"$(touch pwned)`touch pwned`", {}),
}
family("deep", "cure", CURES, cure_case, limit=130)


@case("deep", limit=90)
def deep_timeout_bounds_a_framework_that_hangs_at_import(ctx: Ctx) -> None:
    m = ctx.machine()
    torch_machine(ctx, m, init="import time\ntime.sleep(600)\n")
    r = m.run("check", "--deep", "--json", env={"CUDNN_DOCTOR_DEEP_TIMEOUT": "3"}, timeout=80)
    left = leftovers_of(m.base)
    reap(m.base)
    data = judge(r, (0, 1), secs=40)
    assert data is not None
    expect(not left, f"the hung import is still running after the doctor: {left[:2]}")
    expect(codes(data) & {"CD415", "CD409", "CD309", "CD110"}, f"a hung framework is no finding: {sorted(codes(data))}")


FRAMEWORK_SAYS = {
    "ten_megabytes": "raise RuntimeError('CUDNN_STATUS_NOT_INITIALIZED ' + 'x' * 10_000_000)",
    "escapes": "raise RuntimeError('\\x1b]52;c;cm0gLXJmIH4=\\x07\\x1b[2J\\rCUDNN_STATUS_NOT_INITIALIZED\\x9b31m')",
    "json_breaking": "raise RuntimeError('\"}, {\"code\": \"CD000\"}\\n{\\\\u0000')",
    "non_utf8": "import sys, os\nos.write(2, b'\\xff\\xfe CUDNN_STATUS_NOT_INITIALIZED \\xc3\\x28')\nos._exit(1)",
    "prints_50mb": "import sys\nsys.stdout.write('y' * 50_000_000)\nraise RuntimeError('no')",
    "fork_daemon": "import os, time\nif os.fork() == 0:\n    os.setsid()\n    time.sleep(120)\n    os._exit(0)\n"
                   "raise RuntimeError('CUDNN_STATUS_NOT_INITIALIZED')",
    "kills_parent_group": "import os, signal\nos.killpg(os.getpgrp(), signal.SIGTERM)",
    "stops_itself": "import os, signal\nos.kill(os.getpid(), signal.SIGSTOP)",
}


def framework_says_case(ctx: Ctx, key: str) -> None:
    m = ctx.machine()
    torch_machine(ctx, m, init=FRAMEWORK_SAYS[key] + "\n")
    for args in (("check", "--deep"), ("check", "--deep", "--json"), ("fix", "--json")):
        r = m.run(*args, env={"CUDNN_DOCTOR_DEEP_TIMEOUT": "6"}, timeout=80)
        reap(m.base)
        data = judge(r, (0, 1), want_json="--json" in args, secs=70)
        if "--json" not in args:
            no_raw_controls(r.out, f"{' '.join(args)}'s text")
            expect(len(r.out) < 2_000_000, f"{' '.join(args)} printed {len(r.out)} characters")
        else:
            assert data is not None
            expect(len(r.out) < 2_000_000, f"the JSON object is {len(r.out)} characters")


family("deep", "framework_says", {k: k for k in FRAMEWORK_SAYS}, framework_says_case, limit=200)


def limit_deep_case(ctx: Ctx, arg: tuple[str, str, bool]) -> None:
    flag, value, nobody = arg
    m = ctx.machine()
    torch_machine(ctx, m, init=GOOD_TORCH)
    import shlex
    line = f"ulimit -S {flag} {value} && ulimit -H {flag} {value} && exec {shlex.join(m.argv('fix', '--json'))}"
    del nobody
    argv = ["bash", "--norc", "--noprofile", "-c", line]
    r = run_proc(argv, {**m.env, "REDTEAM_TORCH_FAILS_WHEN": "LD_PRELOAD",
                        "LD_PRELOAD": str(hostile_elf(0, "libredteam_noop.so")),
                        "CUDNN_DOCTOR_DEEP_TIMEOUT": "8"}, m.cwd, 80)
    reap(m.base)
    data = judge(r, (0, 1, 2), secs=70)
    assert data is not None
    if r.rc == 2:
        expect(re.search(r"limit|ulimit", json.dumps(data.get("error", {}))), f"exit 2 names no limit: {r!r}")


family("deep", "hard_limit", {
    "nofile_40": ("-n", "40", False), "nofile_100": ("-n", "100", False), "stack_300k": ("-s", "300", False),
    "cpu_8": ("-t", "8", False), "memlock_0": ("-l", "0", False), "as_600m": ("-v", "600000", False),
    "fsize_0": ("-f", "0", False)}, limit_deep_case, limit=130)


# ====================================================================================================================
# xla: the XLA_FLAGS probe and hostile jax installs

def jax_machine(ctx: Ctx, m: M, jaxlib_kind: str | None = None, init: str | None = None) -> Path:
    site = torch_machine(ctx, m)
    info = site / "jax_cuda13_plugin-0.11.2.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: jax-cuda13-plugin\nVersion: 0.11.2\n"
                                   "Requires-Dist: nvidia-cudnn-cu13<10.0,>=9.8\n")
    for name, ver in (("jax", "0.11.2"), ("jaxlib", "0.11.2")):
        d = site / f"{name}-{ver}.dist-info"
        d.mkdir()
        (d / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {ver}\n")
    (site / "jax").mkdir()
    (site / "jax" / "__init__.py").write_text(init or "__version__ = '0.11.2'\n")
    (site / "jax" / "version.py").write_text("_version = '0.11.2'\n")
    (site / "jaxlib").mkdir()
    (site / "jaxlib" / "version.py").write_text("_version = '0.11.2'\n")
    if jaxlib_kind:
        place_hostile(site / "jaxlib" / "xla_extension.so", jaxlib_kind, "xla_extension.so")
        place_hostile(site / "jaxlib" / "libjax_common.so", jaxlib_kind, "libjax_common.so")
    return site


def xla_case(ctx: Ctx, arg: tuple[str | None, str, str | None]) -> None:
    kind, flags, init = arg
    m = ctx.machine()
    jax_machine(ctx, m, kind, init)
    marker = m.base / "pwned"
    flags = flags.replace("MARKER", str(marker))
    for args in (("check", "--json"), ("check",), ("fix", "--json")):
        r = m.run(*args, env={"XLA_FLAGS": flags, "CUDNN_DOCTOR_DEEP_TIMEOUT": "6", "CUDNN_DOCTOR_PROBE_TIMEOUT": "6"},
                  timeout=45)
        reap(m.base)
        judge(r, (0, 1), want_json="--json" in args, secs=35)
        if "--json" not in args:
            no_raw_controls(r.out, "check's text")
        expect(not marker.exists(), "a command in XLA_FLAGS ran")


XLA = {
    "megabyte_of_flags": (None, "--xla_gpu_autotune_level=4 " * 3500, None),
    "escape_in_flag": (None, "--xla_\x1b[2Jgpu_autotune_level=\x1b]0;x\x07high", None),
    "newline_command": (None, "--xla_gpu_autotune_level=1\n$(touch MARKER)\n`touch MARKER`", None),
    "dump_to_fifo": (None, "--xla_dump_to=/dev/stdout --xla_dump_hlo_as_text", None),
    "unknown_flag_quote": (None, "--xla_'unknown\"=\\", None),
    "non_utf8_flag": (None, "--xla_gpu_autotune_level=\udcff\udcfe", None),
    "jaxlib_fifo": ("fifo", "--xla_unknown_redteam=1", None),
    "jaxlib_sparse": ("sparse_4g", "--xla_unknown_redteam=1", None),
    "jaxlib_dev_zero": ("dev_zero", "--xla_unknown_redteam=1", None),
    "jaxlib_loops_in_ctor": ("loops_in_ctor", "--xla_unknown_redteam=1", None),
    "jaxlib_loop_link": ("loop", "--xla_unknown_redteam=1", None),
    "jax_import_hangs": (None, "--xla_unknown_redteam=1", "import time\ntime.sleep(600)\n"),
    "jax_import_prints": (None, "--xla_unknown_redteam=1", "print('{\"schema\": 0}')\n__version__='0.11.2'\n"),
    "jax_import_exits": (None, "--xla_unknown_redteam=1", "import os\nos._exit(0)\n"),
}
family("xla", "flags", XLA, xla_case, limit=250)


# ====================================================================================================================
# framework: hostile framework files

def framework_file_case(ctx: Ctx, arg: tuple[str, str]) -> None:
    where, kind = arg
    m = ctx.machine()
    site = torch_machine(ctx, m)
    target = {"torch_version": site / "torch" / "version.py",
              "torch_metadata": site / "torch-2.11.0+cu130.dist-info" / "METADATA",
              "torch_record": site / "torch-2.11.0+cu130.dist-info" / "RECORD",
              "cudnn_dist_info": site / "nvidia_cudnn_cu12-9.1.0.70.dist-info" / "METADATA",
              "torch_lib_linking": site / "torch" / "lib" / "libtorch_cuda.so",
              "cudnn_lib_folder": site / "nvidia" / "cudnn" / "lib",
              "tf_build_info": site / "tensorflow" / "python" / "platform" / "build_info.py",
              "pth_file": site / "redteam.pth",
              "torch_package": site / "torch"}[where]
    if where == "tf_build_info":
        d = site / "tensorflow-2.15.0.dist-info"
        d.mkdir()
        (d / "METADATA").write_text("Metadata-Version: 2.1\nName: tensorflow\nVersion: 2.15.0\n")
    target.parent.mkdir(parents=True, exist_ok=True)
    if kind == "hundred_thousand_requires":
        target.write_text("Metadata-Version: 2.1\nName: torch\nVersion: 2.11.0+cu130\n" +
                          "".join(f"Requires-Dist: nvidia-pkg-{i}==1.{i}\n" for i in range(100000)))
    elif kind == "latin1_escapes":
        target.write_bytes(b"Metadata-Version: 2.1\nName: torch\xe9\x1b[2J\nVersion: 2.11.0\xff+cu130\n"
                           b"Requires-Dist: nvidia-cudnn-cu13==9.19.0.56\x1b]0;x\x07\n")
    elif kind == "python_hostile":
        target.write_text("__version__ = '2.11.0\\x1b[2J+cu130'\ncuda = '13.0\\n$(touch /tmp/x)'\n"
                          "import os; os.system('touch " + str(m.base / "pwned") + "')\n")
    else:
        if target.is_dir() and not target.is_symlink():
            shutil.rmtree(target)
        place_hostile(target, kind, target.name)
    for args in (("check", "--json"), ("check",), ("fix", "--json")):
        r = m.run(*args, env={"CUDNN_DOCTOR_PROBE_TIMEOUT": "5"}, timeout=40)
        reap(m.base)
        judge(r, (0, 1), want_json="--json" in args, secs=30)
        if "--json" not in args:
            no_raw_controls(r.out, "check's text")
    expect(not (m.base / "pwned").exists(), "check ran code of a framework's file without --deep")


FRAMEWORK_FILES = {}
for _where, _kinds in {
    "torch_version": ("fifo", "sparse_4g", "dev_zero", "folder", "loop", "text_nul", "python_hostile"),
    "torch_metadata": ("fifo", "sparse_4g", "dev_urandom", "folder", "hundred_thousand_requires", "latin1_escapes"),
    "torch_record": ("fifo", "sparse_4g", "loop"),
    "cudnn_dist_info": ("fifo", "folder"),
    "torch_lib_linking": ("fifo", "sparse_4g", "elf_header_only", "loops_in_ctor"),
    "cudnn_lib_folder": ("fifo", "loop", "dev_zero"),
    "tf_build_info": ("fifo", "sparse_4g", "text_nul", "python_hostile"),
    "pth_file": ("fifo", "sparse_4g"),
    "torch_package": ("loop", "fifo"),
}.items():
    for _k in _kinds:
        FRAMEWORK_FILES[f"{_where}-{_k}"] = (_where, _k)
family("framework", "file", FRAMEWORK_FILES, framework_file_case, limit=150)


@case("framework", limit=90)
def dist_info_names_with_newline_and_command(ctx: Ctx) -> None:
    m = ctx.machine()
    site = torch_machine(ctx, m)
    marker = m.base / "pwned"
    d = site / "torch-2.11.0+cu130$(touch pwned)\n;.dist-info"
    d.mkdir()
    (d / "METADATA").write_text("Metadata-Version: 2.1\nName: torch\nVersion: 9.9.9\n")
    r = m.run("fix", "--json", timeout=60)
    data = judge(r, (0, 1), secs=40)
    for a in (data or {}).get("actions", []):
        if a.get("argv"):
            expect(not any("$(" in x and "touch" in x and x.startswith(("sh", "bash")) for x in a["argv"]),
                   f"an argv runs a shell on a hostile name: {a['argv']}")
    r2 = m.run("fix", timeout=60)
    judge(r2, (0, 1), want_json=False, secs=40)
    for line in r2.out.splitlines():
        if line.strip().startswith(("export ", "pip ", "cudnn-doctor ", str(PY))):
            run_proc(["bash", "-c", f"pip() {{ :; }}; cudnn-doctor() {{ :; }}; {line}"], m.env, m.cwd, 10)
    expect(not marker.exists(), "a printed line ran the command in a package's folder name")


@case("framework", limit=90)
def site_packages_with_twenty_thousand_dist_infos(ctx: Ctx) -> None:
    m = ctx.machine()
    site = torch_machine(ctx, m)
    for i in range(20000):
        (site / f"pkg{i}-1.0.dist-info").mkdir()
    r = m.run("check", "--json", timeout=60)
    judge(r, (0, 1), secs=30)


# ====================================================================================================================
# explain: hostile messages

def explain_text_judge(r: R, rcs: tuple = (0, 1, 2), secs: float = 30) -> None:
    judge(r, rcs, want_json=False, secs=secs)
    no_raw_controls(r.out, "explain's text")
    no_raw_controls(r.err, "explain's error", allow="\n")
    expect(len(r.out) < 1_000_000, f"explain echoed {len(r.out)} characters")


EXPLAIN_ARGV = {
    "osc52_clipboard": "CUDNN_STATUS_NOT_INITIALIZED \x1b]52;c;cm0gLXJmIH4=\x07",
    "csi_erase_and_cr": "\x1b[2J\x1b[HRuntimeError: cuDNN error\rCUDNN_STATUS_EXECUTION_FAILED",
    "c1_controls": "CUDNN_STATUS_BAD_PARAM \x9b31m\x9d0;t\x9c \x85 next",
    "bidi_override": "libcudnn.so.9: cannot open shared object file \u202e8.9 \u2066x\u2069",
    "json_breaking": '"}], "exit_code": 0, "x": [{"', 
    "lone_surrogate_bytes": "CUDNN_STATUS_\udcff\udcfe_FAILED",
    "two_hundred_kb": "Could not load library libcudnn_cnn_infer.so.8. " * 2500,
    "nested_parens": "(" * 50000 + "CUDNN" + ")" * 50000,
    "regex_bait_spaces": "CUDA error: " + " " * 60000 + "x",
    "percent_and_braces": "{0} {cudnn} %s %(x)s %n %% $HOME ${PATH} `id`",
    "code_with_arabic_digits": "CD\u0663\u0660\u0661",
    "code_with_newline": "CD301\nCD302",
    "tab_vt_ff": "CUDNN_STATUS_INTERNAL_ERROR\t\x0b\x0c\x7f",
    "zero_width": "CUDNN\u200b_STATUS\u200d_NOT_SUPPORTED\ufeff",
}


def explain_argv_case(ctx: Ctx, msg: str) -> None:
    m = ctx.machine()
    explain_text_judge(m.run("explain", msg, "--offline-only", timeout=45))
    r = m.run("explain", msg, "--offline-only", "--json", timeout=45)
    judge(r, (0, 1, 2), secs=30)
    r = m.run("explain", msg, timeout=45)
    explain_text_judge(r)


family("explain", "argv", EXPLAIN_ARGV, explain_argv_case, limit=150)


def _stdin_payload(key: str) -> bytes:
    return {
        "twenty_mb_of_lines": b"E0000 cuDNN error: CUDNN_STATUS_NOT_INITIALIZED\n" * 420000,
        "one_line_8mb": b"x" * 8_000_000,
        "binary_random": random.Random(7).randbytes(3_000_000),
        "utf16_bom": "\ufeffRuntimeError: CUDNN_STATUS_BAD_PARAM\r\n".encode("utf-16"),
        "escapes_each_line": b"".join(b"\x1b[%dA\x1b]8;;file:///etc/passwd\x07err %d\x1b]8;;\x07\n" % (i, i)
                                      for i in range(20000)),
        "nul_separated": b"CUDNN_STATUS_NOT_INITIALIZED\0" * 100000,
        "crlf_and_lone_cr": b"Trace (most recent call last):\r\n  File \"x\"\r\rRuntimeError: CUDNN\r\n" * 5000,
        "invalid_utf8_mix": b"\xc3\x28\xa0\xa1\xe2\x28\xa1CUDNN_STATUS_ARCH_MISMATCH\xf0\x28\x8c\xbc\n" * 5000,
        "json_in_log": b'{"error": "CUDNN_STATUS_NOT_INITIALIZED\\u0000\\ud800"}\n' * 1000,
        "empty": b"",
    }[key]


def explain_stdin_case(ctx: Ctx, key: str) -> None:
    m = ctx.machine()
    payload = _stdin_payload(key)
    for json_flag in ((), ("--json",)):
        r = m.run("explain", "-", "--offline-only", *json_flag, stdin=payload, timeout=60)
        if json_flag:
            judge(r, (0, 1, 2), secs=40)
        else:
            explain_text_judge(r, secs=40)
    f = m.base / "log.txt"
    f.write_bytes(payload)
    explain_text_judge(m.run("explain", "--from-file", str(f), timeout=60), secs=40)


family("explain", "stdin", {k: k for k in ("twenty_mb_of_lines", "one_line_8mb", "binary_random", "utf16_bom",
                                          "escapes_each_line", "nul_separated", "crlf_and_lone_cr",
                                          "invalid_utf8_mix", "json_in_log", "empty")},
       explain_stdin_case, limit=200)


def explain_file_case(ctx: Ctx, kind: str) -> None:
    m = ctx.machine()
    f = m.base / "log"
    if kind == "slow_writer_fifo":
        os.mkfifo(f)
        writer = subprocess.Popen(["sh", "-c", f"exec 3>'{f}'; printf 'CUDNN_STATUS_' >&3; sleep 30"],
                                  start_new_session=True)
        try:
            r = m.run("explain", "--from-file", str(f), env={"CUDNN_DOCTOR_READ_TIMEOUT": "2"}, timeout=40)
        finally:
            kill_group(writer.pid)
        explain_text_judge(r, secs=15)
        return
    if kind == "fifo_path_has_escapes":
        f = m.base / "log\x1b[2J\n"
        f.write_text("CUDNN_STATUS_NOT_INITIALIZED\n")
        explain_text_judge(m.run("explain", "--from-file", str(f), timeout=40))
        explain_text_judge(m.run("explain", "--from-file", str(m.base / "missing\x1b]0;x\x07"), timeout=40), (2,))
        return
    place_hostile(f, kind, "log")
    explain_text_judge(m.run("explain", "--from-file", str(f), env={"CUDNN_DOCTOR_READ_TIMEOUT": "2"}, timeout=40),
                       secs=20)
    judge(m.run("explain", "--from-file", str(f), "--json", env={"CUDNN_DOCTOR_READ_TIMEOUT": "2"}, timeout=40),
          (0, 1, 2), secs=20)


family("explain", "file", {k: k for k in ("slow_writer_fifo", "fifo_path_has_escapes", "dev_urandom", "loop",
                                         "dangling", "proc_fd0", "sparse_4g", "text_nul")},
       explain_file_case, limit=120)


# ====================================================================================================================
# signals: every process killed at any instant; nothing the user had is lost or half-written

def slow_machine(ctx: Ctx, m: M) -> None:
    """A machine whose check takes a few seconds (a libcuda that hangs in its constructor, probes bounded at 3 s)."""
    gpu_machine(ctx, m, gpus=1)
    place_hostile(m.base / "slow" / "libcuda.so.1", "loops_in_ctor", "libcuda.so.1")
    m.add_lib(m.base / "slow")
    m.env["CUDNN_DOCTOR_PROBE_TIMEOUT"] = "3"


def _kill_at(m: M, args: list[str], sig: int, at: float, timeout: float = 40) -> R:
    start = time.monotonic()
    proc = subprocess.Popen(m.argv(*args), env=m.env, cwd=str(m.cwd), stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    timer = threading.Timer(at, lambda: os.kill(proc.pid, sig) if proc.poll() is None else None)
    timer.start()
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        kill_group(proc.pid)
        raise Fail(f"hang: {' '.join(args)} after signal {sig} at {at:.2f} s") from None
    finally:
        timer.cancel()
    return R(proc.returncode, out, err, time.monotonic() - start)


SIG_RC = {signal.SIGKILL: (-9, 137), signal.SIGTERM: (143, -15), signal.SIGINT: (130, -2)}


def output_file_case(ctx: Ctx, arg: tuple[str, int, int]) -> None:
    """--output/-o or --junit-xml FILE that holds the user's earlier report: after a signal at a seeded instant, FILE is
    the old bytes or a whole new file of its format, and no stray temporary is left beside it."""
    how, sig, seed = arg
    m = ctx.machine()
    slow_machine(ctx, m)
    out = m.base / "reports" / "report.out"
    out.parent.mkdir()
    old = b"the user's earlier report\n" * 100
    out.write_bytes(old)
    args = {"json": ["check", "--json", "-o", str(out)], "junit": ["check", "--junit-xml", str(out)],
            "prometheus": ["check", "--format", "prometheus", "-o", str(out)],
            "markdown": ["check", "--format", "markdown", "-o", str(out)]}[how]
    probe = out.with_name("probe.out")
    t0 = time.monotonic()
    m.run(*[probe.as_posix() if a == str(out) else a for a in args], timeout=40)
    dur = time.monotonic() - t0
    probe.unlink(missing_ok=True)
    at = dur * random.Random(seed * 7919 + sig).uniform(0.5 if seed % 2 else 0.85, 1.0)
    r = _kill_at(m, args, sig, at)
    reap(m.base)
    expect(r.rc in (0, 1) + SIG_RC[sig], f"exit {r.rc} after signal {sig} at {at:.2f} s: {r!r}")
    for word in BAD_WORDS:
        expect(word not in r.err, f"{word!r} after signal {sig} at {at:.2f} s: {r!r}")
    now = out.read_bytes()
    if now != old:
        if how == "json":
            try:
                json.loads(now)
            except ValueError:
                raise Fail(f"{out.name} is half-written after signal {sig} at {at:.2f} s: {now[-200:]!r}") from None
        elif how == "junit":
            try:
                ET.fromstring(now)
            except ET.ParseError:
                raise Fail(f"{out.name} is half-written after signal {sig} at {at:.2f} s: {now[-200:]!r}") from None
        else:
            expect(now.endswith(b"\n") and len(now) > 40, f"{out.name} looks cut at {at:.2f} s: {now[-200:]!r}")
    stray = [p.name for p in out.parent.iterdir() if p.name != out.name]
    expect(not stray, f"left beside the report after signal {sig} at {at:.2f} s: {stray}")


family("signals", "output", {f"{how}-{signal.Signals(sig).name}-{seed}": (how, sig, seed)
                             for how in ("json", "junit", "prometheus", "markdown")
                             for sig in (signal.SIGKILL, signal.SIGTERM, signal.SIGINT) for seed in (1, 2)},
       output_file_case, limit=70)


def json_interrupted_case(ctx: Ctx, arg: tuple[int, int]) -> None:
    """check --json stopped by SIGTERM/SIGINT mid-run: one JSON object (title Interrupted), exit 143/130."""
    sig, seed = arg
    m = ctx.machine()
    slow_machine(ctx, m)
    at = random.Random(seed).uniform(1.0, 2.5)
    r = _kill_at(m, ["check", "--json"], sig, at)
    reap(m.base)
    expect(r.rc == SIG_RC[sig][0], f"exit {r.rc}, README: {SIG_RC[sig][0]} (signal at {at:.2f} s): {r!r}")
    data = one_json(r)
    expect("Interrupted" in json.dumps(data), f"the JSON object does not say Interrupted: {r.out[:300]!r}")
    expect(r.secs < at + 6, f"took {r.secs - at:.1f} s to stop after the signal")
    expect(not leftovers_of(m.base), f"children left running: {leftovers_of(m.base)[:2]}")


family("signals", "json_interrupted", {f"{signal.Signals(s).name}-{seed}": (s, seed)
                                       for s in (signal.SIGTERM, signal.SIGINT) for seed in (3, 4, 5)},
       json_interrupted_case, limit=60)


def completion_kill_case(ctx: Ctx, arg: tuple[str, int]) -> None:
    """--install-completion SIGKILLed at a seeded instant: the rc file is the user's bytes, or those plus one line
    that sources a whole script."""
    shell, seed = arg
    m = ctx.machine()
    rc = m.home / {"bash": ".bashrc", "zsh": ".zshrc"}[shell]
    old = ("# the user's own\n" + "alias ll='ls -l'\n" * 2000).encode()
    rc.write_bytes(old)
    t0 = time.monotonic()
    m.run("--install-completion", shell, timeout=30)
    dur = time.monotonic() - t0
    rc.write_bytes(old)
    for p in list(m.home.rglob("*")):
        if p != rc and p.is_file():
            p.unlink()
    at = dur * random.Random(seed).uniform(0.6, 1.0)
    r = _kill_at(m, ["--install-completion", shell], signal.SIGKILL, at)
    now = rc.read_bytes()
    expect(now.startswith(old), f"{rc.name} lost the user's bytes (SIGKILL at {at:.2f} s)")
    added = now[len(old):]
    expect(added.count(b"\n") <= 3, f"{rc.name} got {added.count(b'n')} lines: {added[:300]!r}")
    _sourced_scripts_exist(m, rc)
    if shell == "zsh":
        for line in added.splitlines():
            for cand in re.findall(rb"(/[^'\"\s]*cudnn[^'\"\s]*)", line):
                p = Path(os.fsdecode(cand))
                expect(not p.exists() or p.stat().st_size > 0, f"{rc.name} names an empty {p}")
    expect(r.rc in (0, -9, 137), f"exit {r.rc}")


family("signals", "completion_kill", {f"{sh}-{s}": (sh, s) for sh in ("bash", "zsh") for s in range(1, 6)},
       completion_kill_case, limit=40)


def cache_kill_case(ctx: Ctx, seed: int) -> None:
    """A first check SIGKILLed while it fills an empty cache; the next check is whole and says the same."""
    m = ctx.machine()
    gpu_machine(ctx, m, gpus=1)
    good = m.run("check", "--json", timeout=40)
    base = judge(good, (0, 1), secs=30)
    shutil.rmtree(m.base / "cache", ignore_errors=True)
    at = random.Random(seed).uniform(0.05, max(0.1, good.secs * 0.9))
    _kill_at(m, ["check", "--json"], signal.SIGKILL, at)
    r = m.run("check", "--json", timeout=40)
    after = judge(r, (0, 1), secs=30)
    assert base is not None and after is not None
    expect(codes(after) == codes(base), f"after a run killed at {at:.2f} s the cache changed the verdict: "
                                        f"{sorted(codes(base))} -> {sorted(codes(after))}")


family("signals", "cache_kill", {str(s): s for s in range(1, 7)}, cache_kill_case, limit=60)


def install_kill_case(ctx: Ctx, arg: tuple[int, int]) -> None:
    """install SIGKILLed at a seeded instant (not a step boundary: a time), then uninstall --dry-run, install again:
    the prefix is the user's or one whole install, and the user's own files are kept."""
    sig, seed = arg
    env = install_env(ctx)
    prefix = prefix_with_old(ctx)
    a = archive(ctx)
    argv = cli_argv("install", "--from", str(a), "--prefix", str(prefix), "--yes", "--replace")
    t0 = time.monotonic()
    run_proc(argv, env, ctx.work, 60)
    full = time.monotonic() - t0
    run_proc(cli_argv("uninstall", "--prefix", str(prefix), "--yes"), env, ctx.work, 60)
    before = user_view(snapshot_tree(prefix))
    at = random.Random(seed).uniform(0.1, full)
    proc = subprocess.Popen(argv, env=env, cwd=str(ctx.work), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            start_new_session=True)
    time.sleep(at)
    try:
        os.kill(proc.pid, sig)
    except OSError:
        pass
    out, err = proc.communicate(timeout=40)
    _user_files_kept(prefix)
    r = run_proc(cli_argv("install", "--from", str(a), "--prefix", str(prefix), "--yes", "--replace"), env,
                 ctx.work, 60)
    sane(r, (0, 1, 2))
    wrong = installed_as_recorded(ctx, prefix)
    expect(wrong == [], f"after a kill at {at:.2f} s and a second install the prefix is not whole: {wrong} {r!r}")
    _user_files_kept(prefix)
    del before


family("signals", "install_kill", {f"{signal.Signals(s).name}-{seed}": (s, seed)
                                   for s in (signal.SIGKILL, signal.SIGTERM) for seed in (11, 12, 13)},
       install_kill_case, limit=150)


# ====================================================================================================================
# quoting: printed paths and lines that reach a shell or a parser

HOSTILE_NAMES = {
    "dollar_paren": "d$(touch MARKER)x",
    "backticks": "b`touch MARKER`x",
    "single_quote": "it's'$(touch MARKER)'",
    "double_quote_semicolon": 'q";touch MARKER;"',
    "newline_command": "n\ntouch MARKER\n",
    "leading_dash": "-rf touch MARKER",
    "pipe_amp": "p|touch MARKER&x",
    "glob_brace_tilde": "~g*{a,b}?[x]",
    "history_bang": "h!!$(touch MARKER)",
    "non_utf8": "u\udcff\udcfe$(touch MARKER)",
    "escape_sequence": "e\x1b]0;$(touch MARKER)\x07x",
    "dollar_brace": "v${IFS}$(touch${IFS}MARKER)",
}


def _name(key: str, marker: Path) -> str:
    """The hostile name; its command touches MARKER's name in the working folder (a name without a slash)."""
    return HOSTILE_NAMES[key].replace("MARKER", marker.name)


def _stubbed_bash(m: M, line: str) -> R:
    """LINE run by bash with the doctor, pip and the loaders' commands stubbed, so only what the line itself
    expands runs."""
    stubs = ("cudnn-doctor() { :; }; pip() { :; }; pip3() { :; }; conda() { :; }; sudo() { :; }; "
             "python() { :; }; python3() { :; }; nvidia-smi() { :; }; apt-get() { :; }; ")
    return run_proc(["bash", "--norc", "--noprofile", "-c", stubs + line], m.env, m.cwd, 10)


def printed_lines_case(ctx: Ctx, key: str) -> None:
    """The install prefix under a hostile home: every line check, fix and install print that reads as a command
    (export ..., cudnn-doctor ..., pip ...) runs, in bash, nothing hidden in the name."""
    m = ctx.machine()
    marker = m.base / "pwned"
    home = m.base / _name(key, marker)
    home.mkdir(parents=True)
    m.env["HOME"] = str(home)
    gpu_machine(ctx, m, gpus=1)
    outs = []
    for args in (("check",), ("fix",), ("fix", "--shell", "bash")):
        r = m.run(*args, timeout=40)
        judge(r, (0, 1), want_json=False, secs=30)
        outs.append(r.out)
    lines = [x.strip() for o in outs for x in o.splitlines()
             if x.strip().startswith(("export ", "cudnn-doctor ", "pip ", "unset ", "ulimit "))]
    expect(lines, "no command line was printed to judge")
    for line in lines:
        _stubbed_bash(m, line)
    expect(not marker.exists(), f"a printed line ran the command in the folder name: {lines[:4]}")


family("quoting", "printed_lines", {k: k for k in HOSTILE_NAMES}, printed_lines_case, limit=90)


def install_prefix_case(ctx: Ctx, key: str) -> None:
    """install --prefix HOSTILE: the printed `export LD_LIBRARY_PATH=...` line, run by bash, sets exactly the folder
    and runs nothing."""
    env = install_env(ctx)
    marker = ctx.work / "pwned"
    prefix = ctx.work / "pfx" / _name(key, marker)
    prefix.parent.mkdir(parents=True)
    r = run_proc(cli_argv("install", "--from", str(archive(ctx)), "--prefix", str(prefix), "--yes"), env, ctx.work, 90)
    sane(r, (0, 1, 2))
    exports = [x.split("with: ", 1)[-1].strip() for x in (r.out + r.err).splitlines() if "export LD_LIBRARY_PATH" in x]
    exports = [x for x in exports if not x.startswith("#")]
    if r.rc != 0:
        if r.rc == 2:
            one_line(r)
        return
    name = prefix.name
    expect(exports or ":" in name or ";" in name, f"no export line was printed: {r.out[-500:]!r}")
    for line in exports:
        line = line[line.index("export"):]
        got = run_proc(["bash", "--norc", "-c", f"unset LD_LIBRARY_PATH; {line}; printf %s \"$LD_LIBRARY_PATH\""],
                       {**env, "LC_ALL": "C"}, ctx.work, 10)
        expect(not marker.exists(), f"the export line ran a command: {line!r}")
        expect(got.outb == os.fsencode(str(prefix / "lib64")), f"the line sets {got.outb!r}, not the prefix's lib64")


family("quoting", "install_prefix", {k: k for k in ("dollar_paren", "backticks", "single_quote", "newline_command",
                                                   "non_utf8", "escape_sequence", "dollar_brace")},
       install_prefix_case, limit=120)


def _cudnn_in(m: M, folder: Path) -> None:
    fakes().fake_cudnn(folder, version=90100, cudart=12040, sublibraries=CUDNN9)


def formats_case(ctx: Ctx, key: str) -> None:
    """A cuDNN copy in a hostile folder: github annotations stay one line each, junit parses with the path whole,
    prometheus lines match the exposition format, markdown holds no raw HTML, JSON is one object with the path."""
    m = ctx.machine()
    marker = m.base / "pwned"
    folder = m.base / _name(key, marker) / "lib"
    _cudnn_in(m, folder)
    m.add_lib(folder)
    gpu_machine(ctx, m, gpus=1)
    j = m.run("check", "--json", timeout=40)
    data = judge(j, (0, 1), secs=30)
    expect(str(folder).encode("utf-8", "surrogateescape").decode("utf-8", "replace").split("\x1b")[0][:20]
           in json.dumps(data, ensure_ascii=False) or "\udcff" in HOSTILE_NAMES[key], "the JSON lost the folder")
    g = m.run("check", "--format", "github", timeout=40)
    judge(g, (0, 1), want_json=False, secs=30)
    for line in g.out.splitlines():
        if line.startswith("::"):
            expect(re.match(r"^::(error|warning|notice)( [^:]*)?::", line), f"a broken annotation: {line[:200]!r}")
    expect(not any(x.startswith("::") and not re.match(r"^::(error|warning|notice)", x) for x in g.out.splitlines()),
           "a line of the output is a workflow command of another kind")
    ju = m.run("check", "--format", "junit", timeout=40)
    judge(ju, (0, 1), want_json=False, secs=30)
    try:
        ET.fromstring(ju.outb)
    except ET.ParseError as e:
        raise Fail(f"junit does not parse: {e}") from None
    pr = m.run("check", "--format", "prometheus", timeout=40)
    judge(pr, (0, 1), want_json=False, secs=30)
    sample = re.compile(r'^[a-zA-Z_:][a-zA-Z0-9_:]*(\{([a-zA-Z_][a-zA-Z0-9_]*="([^"\\\n]|\\[\\"n])*",?)*\})? '
                        r'[-+0-9.eEnaNIif]+( [0-9]+)?$')
    for line in pr.out.splitlines():
        if line and not line.startswith("#"):
            expect(sample.match(line), f"not a prometheus sample line: {line[:200]!r}")
    md = m.run("check", "--format", "markdown", timeout=40)
    judge(md, (0, 1), want_json=False, secs=30)
    no_raw_controls(md.out, "markdown")
    expect(not re.search(r"<(script|img|details|!--|iframe)", md.out, re.I), "raw HTML in markdown")
    t = m.run("check", timeout=40)
    no_raw_controls(t.out, "text")
    expect(not marker.exists(), "a command in the folder name ran")


family("quoting", "formats", {k: k for k in ("dollar_paren", "newline_command", "escape_sequence", "non_utf8",
                                            "double_quote_semicolon", "pipe_amp")}, formats_case, limit=150)


def cdata_and_label_names(ctx: Ctx, name: str) -> None:
    """A cuDNN copy missing its sub-libraries in a folder whose name breaks XML: --junit-xml parses, and holds the
    name wherever the JSON report does."""
    m = ctx.machine()
    folder = m.base / name / "lib"
    fakes().fake_cudnn(folder, version=91900, cudart=13000)
    m.add_lib(folder)
    j = judge(m.run("check", "--json", timeout=40), (0, 1), secs=30)
    expect(name in json.dumps(j, ensure_ascii=False), "the report does not name the broken copy's folder")
    out = m.base / "j.xml"
    r = m.run("check", "--junit-xml", str(out), timeout=40)
    judge(r, (0, 1), want_json=False, secs=30)
    try:
        tree = ET.parse(out)
    except ET.ParseError as e:
        raise Fail(f"--junit-xml does not parse: {e}") from None
    values = [el.text or "" for el in tree.iter()] + [v for el in tree.iter() for v in el.attrib.values()]
    expect(any(name in v for v in values), "the folder name is not whole in the JUnit XML")


family("quoting", "junit_names", {"cdata_end": "x]]>y<z", "xml_entity": "a&amp b&#0 &lt", "comment": "c<!--x-->",
                                  "pi": "p<?xml x?>"}, cdata_and_label_names, limit=60)


def json_one_object_case(ctx: Ctx, args: tuple[str, ...]) -> None:
    """Every command with --json under a hostile setting: one JSON object, whatever else failed."""
    m = ctx.machine()
    env = {"CUDNN_DOCTOR_FORMAT": "github", "COLUMNS": "3", "TERM": "dumb\x1b", "NO_COLOR": "1", "FORCE_COLOR": "1"}
    r = m.run(*args, env=env, timeout=40)
    judge(r, (0, 1, 2), secs=30)


family("quoting", "json_one_object", {
    "check_format_env": ("check", "--json"), "fix_format_env": ("fix", "--json"),
    "compat_bad": ("compat", "--json", "torch==\x1b[2J"),
    "explain_list": ("explain", "--list", "--json"), "bench_none": ("bench", "--json", "--repeats", "1"),
    "image_missing": ("image", "/nonexistent/\x1b]0;x\x07", "--json"),
    "fleet_merge_missing": ("fleet", "merge", "--json", "/nonexistent\n"),
    "install_nothing": ("install", "--json"), "uninstall_nowhere": ("uninstall", "--json", "--prefix", "/nonexistent"),
    "check_two_formats": ("check", "--json", "--format", "junit"),
}, json_one_object_case, limit=60)


# ====================================================================================================================
# config: configuration files, state and cache files, CUDNN_DOCTOR_* variables

PYPROJECT_BODIES = {
    "invalid_toml": b"[tool.cudnn-doctor\nignore = [\n",
    "non_utf8": b"[tool.cudnn-doctor]\nignore = [\"CD2\xff\xfe\"]\n",
    "ignore_number": b"[tool.cudnn-doctor]\nignore = 5\n",
    "strict_string": b"[tool.cudnn-doctor]\nstrict = \"yes\"\n",
    "require_numbers": b"[tool.cudnn-doctor]\nrequire = [1, 2]\n",
    "format_table": b"[tool.cudnn-doctor]\nformat = {a = 1}\n",
    "select_escape": b"[tool.cudnn-doctor]\nselect = [\"CD1\\u001b[2J\"]\n",
    "unknown_key": b"[tool.cudnn-doctor]\nstrikt = true\n",
    "deep_nesting": b"[tool.cudnn-doctor]\nignore = " + b"[" * 50000 + b"]" * 50000 + b"\n",
    "huge_array": b"[tool.cudnn-doctor]\nignore = [" + b"\"CD201\"," * 400000 + b"]\n",
    "table_is_array": b"[[tool.cudnn-doctor]]\nstrict = true\n",
    "require_injection": b"[tool.cudnn-doctor]\nrequire = [\"cudnn>=9;$(touch pwned)\"]\n",
    "bom_crlf": b"\xef\xbb\xbf[tool.cudnn-doctor]\r\nstrict = true\r\n",
}
PYPROJECT_KINDS = ("fifo", "sparse_4g", "dev_zero", "folder", "loop", "dangling", "dev_urandom")


def pyproject_case(ctx: Ctx, arg: tuple[str, str]) -> None:
    where, key = arg
    m = ctx.machine()
    proj = m.base / "proj"
    sub = proj / "src" / "pkg"
    sub.mkdir(parents=True)
    target = (proj if where == "parent" else sub) / "pyproject.toml"
    if key in PYPROJECT_BODIES:
        target.write_bytes(PYPROJECT_BODIES[key])
    else:
        place_hostile(target, key, "pyproject.toml")
    m.cwd = sub
    for args in (("check", "--json"), ("check",), ("fix", "--json"), ("check", "--format", "github")):
        r = m.run(*args, timeout=40)
        data = judge(r, (0, 1, 2), want_json="--json" in args, secs=25)
        if r.rc == 2:
            msg = json.dumps(data) if data else r.err
            expect("pyproject" in msg, f"exit 2 does not name pyproject.toml: {msg[:400]}")
    expect(not (sub / "pwned").exists(), "a requirement in pyproject.toml ran a command")


family("config", "pyproject", {f"{w}-{k}": (w, k) for w in ("here", "parent")
                               for k in list(PYPROJECT_BODIES) + list(PYPROJECT_KINDS)
                               if w == "here" or k in ("invalid_toml", "fifo", "non_utf8", "deep_nesting",
                                                       "loop", "ignore_number")},
       pyproject_case, limit=150)


def cache_dir_case(ctx: Ctx, kind: str) -> None:
    """CUDNN_DOCTOR_CACHE_DIR that is hostile: check and fix still answer, or say the cache in one line (exit 2)."""
    m = ctx.machine()
    gpu_machine(ctx, m, gpus=1)
    cache = m.base / "cache"
    if kind == "compat_garbage":
        cache.mkdir()
        (cache / "compat").mkdir()
        for name in ("data.pickle", "compat.json", "index", "cache.db"):
            (cache / "compat" / name).write_bytes(b"\x80\x04garbage" + os.urandom(4096))
        for p in Path(m.env["PYTHONPATH"]).joinpath("compat").glob("*.toml"):
            (cache / "compat" / (p.name + ".cache")).write_bytes(b"\0" * 100)
    elif kind == "compat_fifos":
        (cache / "compat").mkdir(parents=True)
        good = m.run("check", "--json", timeout=40)
        judge(good, (0, 1), secs=30)
        for p in (cache / "compat").rglob("*"):
            if p.is_file():
                p.unlink()
                os.mkfifo(p)
    elif kind == "compat_truncated":
        good = m.run("check", "--json", timeout=40)
        judge(good, (0, 1), secs=30)
        files = [p for p in cache.rglob("*") if p.is_file()]
        expect(files, "the cache holds no file after a check (nothing to damage)")
        for p in files:
            data = p.read_bytes()
            p.write_bytes(data[: len(data) // 2])
    elif kind == "compat_is_a_file":
        cache.mkdir()
        (cache / "compat").write_text("not a folder")
    elif kind == "relative":
        m.env["CUDNN_DOCTOR_CACHE_DIR"] = "rel/cache"
    elif kind == "xdg_relative":
        del m.env["CUDNN_DOCTOR_CACHE_DIR"]
        m.env["XDG_CACHE_HOME"] = "relative-xdg"
    else:
        place_hostile(cache, kind, "cache")
    for args in (("check", "--json"), ("fix", "--json"), ("compat", "--json", "torch==2.5.1")):
        r = m.run(*args, timeout=40)
        data = judge(r, (0, 1, 2), secs=30)
        if r.rc == 2:
            expect("cache" in json.dumps(data).lower(), f"exit 2 does not name the cache: {r.out[:400]}")
    if kind == "xdg_relative":
        expect(not (m.cwd / "relative-xdg").exists(), "a relative XDG_CACHE_HOME was written under the working folder "
                                                       "(the XDG spec: relative paths are invalid and ignored)")


family("config", "cache_dir", {k: k for k in ("fifo", "dev_zero", "loop", "dangling", "empty", "compat_garbage",
                                             "compat_fifos", "compat_truncated", "compat_is_a_file", "relative",
                                             "xdg_relative")}, cache_dir_case, limit=120)


VARIABLES = ["CUDNN_DOCTOR_PROBE_TIMEOUT", "CUDNN_DOCTOR_DEEP_TIMEOUT", "CUDNN_DOCTOR_HELPER_TIMEOUT",
             "CUDNN_DOCTOR_READ_TIMEOUT", "CUDNN_DOCTOR_ALLREDUCE_TIMEOUT", "CUDNN_DOCTOR_BENCH_TIMEOUT",
             "CUDNN_DOCTOR_DOWNLOAD_DEADLINE", "CUDNN_DOCTOR_RETRY_BACKOFF", "CUDNN_DOCTOR_IMAGE_MAX_LAYER_BYTES",
             "CUDNN_DOCTOR_IMAGE_TIMEOUT"]
BAD_VALUES = {"1e309": "1e309", "hex": "0x10", "inf_plus": "+inf", "nan_space": " nan ", "underscore": "1_0",
              "exponent_huge": "1e999999"}


def variable_case(ctx: Ctx, arg: tuple[str, str]) -> None:
    """A numeric variable set to what it does not take: every command says so, naming it (exit 2, one JSON
    object with --json; one line without)."""
    variable, value = arg
    m = ctx.machine()
    for args in (("check", "--json"), ("explain", "CD301", "--json"), ("check",)):
        r = m.run(*args, env={variable: value}, timeout=40)
        data = judge(r, (2,), want_json="--json" in args, secs=30)
        msg = json.dumps(data) if data else r.err
        expect(variable in msg, f"the error does not name {variable}: {msg[:300]}")


family("config", "variable", {f"{v.removeprefix('CUDNN_DOCTOR_')}-{k}": (v, val) for v in VARIABLES
                              for k, val in BAD_VALUES.items()
                              if k in ("1e309", "hex", "underscore") or v in ("CUDNN_DOCTOR_PROBE_TIMEOUT",
                                                                             "CUDNN_DOCTOR_IMAGE_MAX_LAYER_BYTES")},
       variable_case, limit=90)


def word_variable_case(ctx: Ctx, arg: tuple[str, str]) -> None:
    variable, value = arg
    m = ctx.machine()
    cmd = ("image", "nvidia/cuda:12.8.1-base-ubuntu24.04") if "REGISTRY" in variable else ("check",)
    r = m.run(*cmd, "--json", env={variable: value}, timeout=40)
    data = judge(r, (2,), secs=30)
    expect(variable in json.dumps(data), f"the error does not name {variable}")
    r = m.run(*cmd, env={variable: value}, timeout=40)
    judge(r, (2,), want_json=False, secs=30)
    no_raw_controls(r.err, "the error")


family("config", "word_variable", {
    "format_newline": ("CUDNN_DOCTOR_FORMAT", "json\ngithub"), "format_escape": ("CUDNN_DOCTOR_FORMAT", "\x1b[2Jjson"),
    "strict_two": ("CUDNN_DOCTOR_STRICT", "2"), "strict_escape": ("CUDNN_DOCTOR_STRICT", "1\x1b"),
    "baseline_word": ("CUDNN_DOCTOR_CPU_BASELINE", "numpy;rm"),
    "require_empty_parts": ("CUDNN_DOCTOR_REQUIRE", "cudnn>=9;;;driver>=$(touch pwned)"),
    "select_garbage": ("CUDNN_DOCTOR_SELECT", "CD3,\x1b]0;x\x07,!!"),
    "ignore_huge": ("CUDNN_DOCTOR_IGNORE", "CDX," * 30000),
    "mirror_file_url": ("CUDNN_DOCTOR_REGISTRY_MIRROR", "file:///etc/passwd"),
    "registry_mirror_plain_elsewhere": ("CUDNN_DOCTOR_REGISTRY_MIRROR", "http://10.250.0.1:5000"),
}, word_variable_case, limit=60)


def theano_case(ctx: Ctx, kind: str) -> None:
    m = ctx.machine()
    rc = m.home / ".theanorc"
    if kind == "flags_hostile":
        env = {"THEANO_FLAGS": "device=cuda,dnn.library_path=/tmp/$(touch pwned)\n,dnn.include_path=\x1b[2J" + ",x" * 50000}
    else:
        env = {}
        place_hostile(rc, kind, ".theanorc")
    r = m.run("check", "--json", env=env, timeout=40)
    judge(r, (0, 1, 2), secs=25)
    t = m.run("check", env=env, timeout=40)
    judge(t, (0, 1, 2), want_json=False, secs=25)
    no_raw_controls(t.out, "check's text")
    expect(not (m.cwd / "pwned").exists(), "a command in THEANO_FLAGS ran")


family("config", "theano", {k: k for k in ("fifo", "sparse_4g", "dev_zero", "loop", "text_nul", "flags_hostile")},
       theano_case, limit=90)


def docker_config_case(ctx: Ctx, kind: str) -> None:
    """DOCKER_CONFIG's config.json hostile, for an image from a registry on 127.0.0.1 that needs no credentials:
    the image is read, or the config is named in one error."""
    m = ctx.machine()

    def basic(h: http.server.BaseHTTPRequestHandler, reg: Reg) -> bool:
        if h.headers.get("Authorization"):
            return False
        return reg.send(h, b'{"errors": [{"code": "UNAUTHORIZED"}]}', code=401,
                        extra={"WWW-Authenticate": 'Basic realm="redteam"'})
    reg = Reg(basic)
    try:
        dc = m.base / "docker"
        dc.mkdir()
        cfg = dc / "config.json"
        helper_dir = m.base / "helpers"
        helper_dir.mkdir()
        if kind.startswith("helper_") and kind != "helper_climbs":
            body = {"helper_hangs": "sleep 600", "helper_garbage": "head -c 5000000 /dev/urandom",
                    "helper_escape": "printf '{\"Username\": \"\\033]0;x\\007\", \"Secret\": \"s\\nX-Evil: 1\"}'",
                    "helper_daemon": "(setsid sleep 120 &); echo '{}'"}[kind]
            h = helper_dir / "docker-credential-redteam"
            h.write_text(f"#!/bin/sh\n{body}\n")
            h.chmod(0o755)
            cfg.write_text(json.dumps({"credHelpers": {f"127.0.0.1:{reg.port}": "redteam"}}))
        elif kind == "helper_climbs":
            cfg.write_text(json.dumps({"credsStore": "../../../bin/sh -c touch pwned"}))
        elif kind == "auth_not_base64":
            cfg.write_text(json.dumps({"auths": {f"127.0.0.1:{reg.port}": {"auth": "\x1b!!!not base64"}}}))
        elif kind == "wrong_types":
            cfg.write_text(json.dumps({"auths": [1, 2], "credHelpers": "x", "credsStore": 5}))
        else:
            place_hostile(cfg, kind, "config.json")
        env = {"DOCKER_CONFIG": str(dc), "PATH": f"{helper_dir}:{m.env['PATH']}", "CUDNN_DOCTOR_HELPER_TIMEOUT": "3"}
        r = m.run("image", reg.ref, "--json", env=env, timeout=50)
        left = leftovers_of(m.base)
        reap(m.base)
        data = judge(r, (0, 1, 2), secs=25)
        expect(not [x for x in left if "sleep 600" in x], f"a helper is still running: {left[:2]}")
        if r.rc == 2:
            expect(re.search(r"config|credential|helper|docker", json.dumps(data.get("error", {})), re.I),
                   f"exit 2 without naming docker's config: {r.out[:400]}")
        expect(not (m.cwd / "pwned").exists(), "credsStore ran a command")
    finally:
        reg.close()


family("config", "docker_config", {k: k for k in ("fifo", "sparse_4g", "dev_zero", "loop", "text_nul", "helper_hangs",
                                                 "helper_garbage", "helper_escape", "helper_daemon", "helper_climbs",
                                                 "auth_not_base64", "wrong_types")},
       docker_config_case, limit=90)


def m2_case(ctx: Ctx, kind: str) -> None:
    m = ctx.machine()
    m2 = m.home / ".m2" / "repository" / "org" / "nd4j" / "nd4j-cuda-12.3" / "1.0.0-M2.1"
    if kind == "settings_fifo":
        (m.home / ".m2").mkdir()
        os.mkfifo(m.home / ".m2" / "settings.xml")
    elif kind == "repository_loop":
        (m.home / ".m2").mkdir()
        (m.home / ".m2" / "repository").symlink_to("repository")
    elif kind == "pom_fifo":
        m2.mkdir(parents=True)
        os.mkfifo(m2 / "nd4j-cuda-12.3-1.0.0-M2.1.pom")
    elif kind == "jar_sparse":
        m2.mkdir(parents=True)
        with open(m2 / "nd4j-cuda-12.3-1.0.0-M2.1.jar", "wb") as f:
            f.truncate(4 << 30)
    elif kind == "deep_tree":
        p = m.home / ".m2" / "repository"
        for i in range(300):
            p = p / f"d{i}"
        p.mkdir(parents=True)
    r = m.run("check", "--json", timeout=40)
    judge(r, (0, 1), secs=25)


family("config", "m2", {k: k for k in ("settings_fifo", "repository_loop", "pom_fifo", "jar_sparse", "deep_tree")},
       m2_case, limit=60)


# ====================================================================================================================
# env: limits, no /proc, read-only HOME, full disks, locales, non-UTF-8 paths

ENV_COMMANDS = {"check": ("check", "--json"), "deep": ("check", "--deep", "--json"), "fix": ("fix", "--json"),
                "explain": ("explain", "CUDNN_STATUS_NOT_INITIALIZED", "--json"),
                "compat": ("compat", "--json", "torch==2.5.1"), "bench": ("bench", "--json"),
                "merge": ("fleet", "merge", "--json", "REPORTS")}


def _reports(m: M) -> Path:
    d = m.base / "reports"
    d.mkdir(exist_ok=True)
    r = m.run("check", "--json", timeout=40)
    for i in range(3):
        (d / f"n{i}.json").write_bytes(r.outb)
    return d


def ns_case(ctx: Ctx, arg: tuple[str, str]) -> None:
    setup_key, cmd = arg
    m = ctx.machine()
    torch_machine(ctx, m)
    args = [str(_reports(m)) if a == "REPORTS" else a for a in ENV_COMMANDS[cmd]]
    home = m.home
    setup = {
        "no_proc": "mount -t tmpfs none /proc",
        "proc_empty_ro": "mount -t tmpfs -o ro none /proc",
        "readonly_home": f"mount --bind '{home}' '{home}' && mount -o remount,bind,ro '{home}' && "
                         f"mount --bind '{m.base}/cache' '{m.base}/cache' && "
                         f"mount -o remount,bind,ro '{m.base}/cache'",
        "full_home_and_cache": f"mount -t tmpfs -o size=64k none '{home}' && "
                               f"mount -t tmpfs -o size=16k none '{m.base}/cache' && "
                               f"{{ dd if=/dev/zero of='{m.base}/cache/fill' bs=1k count=64 2>/dev/null || true; }} && "
                               f"{{ dd if=/dev/zero of='{home}/fill' bs=1k count=128 2>/dev/null || true; }}",
        "full_tmp": f"mount -t tmpfs -o size=32k none '{m.base}/t' && "
                    f"{{ dd if=/dev/zero of='{m.base}/t/fill' bs=1k count=64 2>/dev/null || true; }}",
        "readonly_tmp": f"mount -t tmpfs -o ro none '{m.base}/t'",
    }[setup_key]
    (m.base / "cache").mkdir(exist_ok=True)
    (m.base / "t").mkdir(exist_ok=True)
    env = {"TMPDIR": str(m.base / "t")} if setup_key in ("full_tmp", "readonly_tmp") else {}
    r = ns_run(m, setup, args, timeout=60, env=env)
    reap(m.base)
    data = judge(r, (0, 1, 2), secs=45)
    if r.rc == 2 and data is not None:
        expect(re.search(r"/proc|read-only|space|disk|cache|tmp|write|full", json.dumps(data.get("error", {})), re.I),
               f"exit 2 does not say what stopped it: {json.dumps(data.get('error', {}))[:300]}")


family("env", "namespace", {f"{s}-{c}": (s, c) for s in ("no_proc", "proc_empty_ro", "readonly_home",
                                                          "full_home_and_cache", "full_tmp", "readonly_tmp")
                            for c in ENV_COMMANDS if not (s.endswith("tmp") and c in ("compat", "merge"))},
       ns_case, limit=90)


LOCALES = {"c": {"LANG": "C", "LC_ALL": "C"}, "posix_ascii_io": {"LC_ALL": "POSIX", "PYTHONIOENCODING": "ascii"},
           "missing_locale": {"LC_ALL": "tr_TR.ISO-8859-9", "LANG": "tr_TR.ISO-8859-9"},
           "latin1_strict_io": {"PYTHONIOENCODING": "latin-1:strict", "LC_ALL": "C"},
           "utf8_off": {"PYTHONUTF8": "0", "LC_ALL": "C", "PYTHONCOERCECLOCALE": "0"},
           "ascii_surrogate_off": {"PYTHONIOENCODING": "ascii:strict", "PYTHONUTF8": "0", "LC_ALL": "C",
                                   "PYTHONCOERCECLOCALE": "0"}}


def locale_case(ctx: Ctx, arg: tuple[str, str]) -> None:
    """A locale that is not UTF-8 and paths that are not ASCII (é, CJK, undecodable bytes): no encoding error."""
    loc, cmd = arg
    m = ctx.machine()
    folder = m.base / "bibliothèque\udcff 図書館" / "lib"
    fakes().fake_cudnn(folder, version=90100, cudart=12040, sublibraries=CUDNN9)
    m.add_lib(folder)
    gpu_machine(ctx, m, gpus=1)
    m.env.pop("LANG", None)
    m.env.update(LOCALES[loc])
    args = {"check_text": ("check",), "check_json": ("check", "--json"), "fix_text": ("fix",),
            "fix_bash": ("fix", "--shell", "bash"), "markdown": ("check", "--format", "markdown"),
            "explain": ("explain", "libcudnn.so.9: cannot open shared object file \u00e9\u56f3"),
            "help": ("check", "--help"), "github": ("check", "--format", "github")}[cmd]
    r = m.run(*args, timeout=40)
    judge(r, (0, 1), want_json="--json" in args, secs=25)
    expect("UnicodeEncodeError" not in r.err and "UnicodeDecodeError" not in r.err, f"an encoding error: {r.err[-300:]}")
    expect(r.out.strip(), "nothing printed")


family("env", "locale", {f"{l}-{c}": (l, c) for l in LOCALES for c in ("check_text", "check_json", "fix_text",
                                                                       "fix_bash", "markdown", "explain", "help",
                                                                       "github")
                         if l in ("c", "ascii_surrogate_off", "latin1_strict_io") or c in ("check_text", "fix_bash")},
       locale_case, limit=60)


def bytes_path_case(ctx: Ctx, which: str) -> None:
    """HOME, the cache, the working folder or --output named with bytes that are not UTF-8."""
    import shlex
    m = ctx.machine()
    gpu_machine(ctx, m, gpus=1)
    odd = m.base / "caf\udce9-\udcff\udcfe"
    odd.mkdir()
    args = ["check", "--json"]
    if which == "home":
        m.env["HOME"] = str(odd)
        args = ["fix", "--json"]
    elif which == "cache":
        m.env["CUDNN_DOCTOR_CACHE_DIR"] = str(odd / "cache")
    elif which == "cwd":
        m.cwd = odd
        (odd / "pyproject.toml").write_text("[tool.cudnn-doctor]\nstrict = true\n")
    elif which == "output":
        args = ["check", "--json", "-o", str(odd / "r\udcff.json")]
    elif which == "completion":
        m.env["HOME"] = str(odd)
        r = m.run("--install-completion", "bash", timeout=30)
        judge(r, (0, 2), want_json=False, secs=20)
        expect(r.rc != 0 or (odd / ".bashrc").exists(), "exit 0 and no .bashrc in the home")
        if r.rc == 0:
            t = run_proc(["bash", "--norc", "--noprofile", "-i", "-c",
                          f"source {shlex.quote(str(odd / '.bashrc'))} </dev/null; complete -p cudnn-doctor"],
                         {**m.env, "PS1": ""}, m.cwd, 20)
            expect("cudnn-doctor" in t.out, f"sourcing the new .bashrc does not register the completion: {t!r}")
        return
    r = m.run(*args, timeout=40)
    if which == "output":
        judge(r, (0, 1), want_json=False, secs=25)
        json.loads((odd / "r\udcff.json").read_bytes())
    else:
        judge(r, (0, 1), secs=25)


family("env", "bytes_path", {k: k for k in ("home", "cache", "cwd", "output", "completion")}, bytes_path_case,
       limit=60)


def tiny_limit_case(ctx: Ctx, arg: tuple[str, str, tuple[str, ...]]) -> None:
    flag, value, args = arg
    m = ctx.machine()
    gpu_machine(ctx, m, gpus=1)
    import shlex
    r = run_proc(["bash", "--norc", "--noprofile", "-c", f"ulimit -S {flag} {value} && exec {shlex.join(m.argv(*args))}"],
                 {**m.env, "PYTHONSAFEPATH": "1"}, m.cwd, 40)
    data = judge(r, (0, 1, 2), want_json="--json" in args, secs=30)
    if r.rc == 2:
        msg = json.dumps(data) if data else r.err
        expect(re.search(r"limit|ulimit", msg), f"exit 2 does not name the limit: {msg[:300]}")


family("env", "tiny_limit", {
    "nofile_6_check": ("-n", "6", ("check", "--json")), "nofile_6_explain": ("-n", "6", ("explain", "CD301", "--json")),
    "nofile_9_fix": ("-n", "9", ("fix", "--json")), "stack_90k_check": ("-s", "90", ("check", "--json")),
    "stack_90k_text": ("-s", "90", ("check",)), "pending_signals_0": ("-i", "0", ("check", "--deep", "--json")),
    "memlock_0_deep": ("-l", "0", ("check", "--deep", "--json")), "as_80m_fix": ("-v", "80000", ("fix", "--json")),
    "as_120m_deep": ("-v", "120000", ("check", "--deep", "--json")), "fsize_1_compat": ("-f", "1", ("compat", "--json", "torch==2.5.1")),
    "cpu_1_explain_list": ("-t", "1", ("explain", "--list", "--json")), "nofile_12_image": ("-n", "12", ("image", "--json",
                                                                                                        "/nonexistent")),
}, tiny_limit_case, limit=60)


# ====================================================================================================================
# completion: the scripts, the argcomplete protocol, --install-completion in new situations

def show_sourced_case(ctx: Ctx, arg: tuple[str, str]) -> None:
    """--show-completion SHELL's script sourced by the real shell under the user's strict options: no error, and the
    completion is registered."""
    shell, opts = arg
    m = ctx.machine()
    r = m.run("--show-completion", shell, timeout=30)
    judge(r, (0,), want_json=False, secs=20)
    script = m.base / f"completion.{shell}"
    script.write_bytes(r.outb)
    if shell == "bash":
        t = run_proc(["bash", "--norc", "--noprofile", "-c", f"{opts}\nsource '{script}'\ncomplete -p cudnn-doctor"],
                     m.env, m.cwd, 20)
        expect(t.rc == 0 and "cudnn-doctor" in t.out, f"bash ({opts}) cannot source it: {t!r}")
    elif shell == "zsh":
        t = run_proc(["zsh", "-f", "-c", f"autoload -U compinit; compinit -u -D; {opts}\nsource '{script}'"],
                     m.env, m.cwd, 20)
        expect(t.rc == 0 and not t.err.strip(), f"zsh ({opts}) cannot source it: {t!r}")
    else:
        t = run_proc(["fish", "--no-config", "-c", f"source '{script}'; complete -c cudnn-doctor"], m.env, m.cwd, 20)
        expect(t.rc == 0 and not t.err.strip(), f"fish cannot source it: {t!r}")


family("completion", "sourced", {
    "bash-nounset": ("bash", "set -u"), "bash-errexit-pipefail": ("bash", "set -euo pipefail"),
    "bash-failglob": ("bash", "shopt -s failglob nullglob extglob"), "bash-posix": ("bash", "set -o posix"),
    "bash-ifs": ("bash", "IFS=$'\\n'"), "zsh-nounset": ("zsh", "setopt NO_UNSET"),
    "zsh-ksharrays": ("zsh", "setopt KSH_ARRAYS SH_WORD_SPLIT"), "zsh-errexit": ("zsh", "setopt ERR_EXIT"),
    "fish-plain": ("fish", ""),
}, show_sourced_case, limit=40)


def protocol_case(ctx: Ctx, arg: tuple[str, str]) -> None:
    """The shell asking for completions (argcomplete's protocol) with a hostile COMP_LINE/COMP_POINT: exit 0 in a few
    seconds, no traceback, answers (if any) on descriptor 8 only."""
    line, point = arg
    m = ctx.machine()
    answers = m.base / "answers"
    fd = os.open(answers, os.O_WRONLY | os.O_CREAT, 0o644)
    env = {**m.env, "_ARGCOMPLETE": "1", "_ARGCOMPLETE_SHELL": "bash", "COMP_LINE": line, "COMP_POINT": point,
           "COMP_TYPE": "9", "_ARGCOMPLETE_IFS": "\013"}

    def give_fd8() -> None:
        os.dup2(fd, 8)
    start = time.monotonic()
    proc = subprocess.Popen(m.argv(), env=env, cwd=str(m.cwd), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, start_new_session=True, preexec_fn=give_fd8, pass_fds=(fd,))
    try:
        out, err = proc.communicate(timeout=20)
    except subprocess.TimeoutExpired:
        kill_group(proc.pid)
        raise Fail("hang: completion") from None
    finally:
        os.close(fd)
    r = R(proc.returncode, out, err, time.monotonic() - start)
    judge(r, (0, 1), want_json=False, secs=15)
    expect(not r.out.strip(), f"completion wrote to stdout (the user's terminal): {r.out[:200]!r}")


family("completion", "protocol", {
    "point_past_end": ("cudnn-doctor ch", "9999"), "point_negative": ("cudnn-doctor ch", "-5"),
    "point_arabic_digits": ("cudnn-doctor ch", "\u0661\u0665"), "unbalanced_quote": ("cudnn-doctor check --project 'a", "31"),
    "escape_in_line": ("cudnn-doctor \x1b]0;x\x07check --sel", "30"), "ten_kb_line": ("cudnn-doctor " + "x " * 5000, "10012"),
    "non_utf8_line": ("cudnn-doctor check --project \udcff\udcfe", "30"),
    "select_prefix": ("cudnn-doctor check --select CD", "30"),
}, protocol_case, limit=40)


def rcfile_case(ctx: Ctx, kind: str) -> None:
    m = ctx.machine()
    rc = m.home / ".bashrc"
    mine = b"# mine\nexport A=1"
    if kind == "no_final_newline":
        rc.write_bytes(mine)
    elif kind == "crlf":
        rc.write_bytes(b"# mine\r\nexport A=1\r\n")
    elif kind == "hard_link":
        other = m.base / "dotfiles-bashrc"
        other.write_bytes(mine + b"\n")
        os.link(other, rc)
    elif kind == "symlink_into_dotfiles":
        (m.base / "dotfiles").mkdir()
        (m.base / "dotfiles" / "bashrc").write_bytes(mine + b"\n")
        rc.symlink_to(m.base / "dotfiles" / "bashrc")
    elif kind == "twice":
        rc.write_bytes(mine + b"\n")
    elif kind == "heredoc_open":
        rc.write_bytes(b"cat <<EOF\nunclosed heredoc\n")
    elif kind == "ends_in_backslash":
        rc.write_bytes(b"export A=1 \\")
    before = rc.read_bytes()
    runs = 2 if kind == "twice" else 1
    for _ in range(runs):
        r = m.run("--install-completion", "bash", timeout=30)
        judge(r, (0, 2), want_json=False, secs=20)
    if r.rc != 0:
        expect(rc.read_bytes() == before, "exit 2 and .bashrc changed")
        return
    now = rc.read_bytes()
    expect(now.replace(b"\r\n", b"\n").startswith(before.replace(b"\r\n", b"\n")) or kind == "no_final_newline" and
           now.startswith(before), f".bashrc lost the user's bytes: {now[:200]!r}")
    if kind == "symlink_into_dotfiles":
        expect(rc.is_symlink(), "the .bashrc link was replaced by a file")
    if kind == "hard_link":
        expect(os.stat(rc).st_nlink == 2, "the hard link to the user's dotfiles was broken")
    added = now[len(before):]
    expect(added.count(b"cudnn-doctor") >= 1, f"no line was added: {added!r}")
    if kind == "twice":
        expect(now.count(b"cudnn-doctor") == before.count(b"cudnn-doctor") + added.count(b"cudnn-doctor") and
               added.count(b"\n") <= 3, f"two installs added the line twice: {added!r}")
    t = run_proc(["bash", "--norc", "--noprofile", "-i", "-c", f"source '{rc}' </dev/null; complete -p cudnn-doctor"],
                 {**m.env, "PS1": ""}, m.cwd, 20)
    expect("cudnn-doctor" in t.out, f"sourcing .bashrc does not register the completion: {t!r}")


family("completion", "rcfile", {k: k for k in ("no_final_newline", "crlf", "hard_link", "symlink_into_dotfiles",
                                              "twice", "heredoc_open", "ends_in_backslash")}, rcfile_case, limit=60)


def default_shell_case(ctx: Ctx, shell_env: str) -> None:
    """--install-completion without a shell named, under a hostile SHELL: a usage error in one line or a real shell."""
    m = ctx.machine()
    m.env["SHELL"] = shell_env
    r = m.run("--install-completion", timeout=30)
    judge(r, (0, 2), want_json=False, secs=20)
    no_raw_controls(r.err + r.out, "the answer")
    expect(not (m.cwd / "pwned").exists(), "SHELL ran a command")


family("completion", "default_shell", {"space": "/bin/ba sh", "escape": "/bin/\x1b]0;x\x07bash",
                                       "command": "/bin/bash;touch pwned", "empty": "", "dotdot": "../../bin/zsh",
                                       "newline": "/usr/bin/fish\n/bin/bash"}, default_shell_case, limit=40)


# ====================================================================================================================
# image: hostile tars, OCI layouts and registries on 127.0.0.1

def image_path_case(ctx: Ctx, kind: str) -> None:
    target = ctx.work / "thing.tar"
    if kind in FILE_KINDS:
        place_hostile(target, kind, "thing.tar")
    elif kind.startswith("oci_"):
        folder = raw_oci(ctx)
        part = {"oci_index_fifo": folder / "index.json", "oci_layout_fifo": folder / "oci-layout",
                "oci_blobs_fifo": folder / "blobs" / "sha256", "oci_layer_fifo": None,
                "oci_index_sparse": folder / "index.json", "oci_layer_loop": None,
                "oci_blobs_loop": folder / "blobs"}[kind]
        if part is None:
            layer = max((p for p in (folder / "blobs" / "sha256").iterdir()), key=lambda p: p.stat().st_size)
            part = layer
        place_hostile(part, {"oci_index_sparse": "sparse_4g", "oci_layer_loop": "loop",
                             "oci_blobs_loop": "loop"}.get(kind, "fifo"), part.name)
        target = folder
    judge_image(ctx, str(target), rcs=(0, 1, 2), seconds=20)


family("image", "path", {k: k for k in ("fifo", "dev_zero", "sparse_4g", "dev_urandom", "loop", "proc_fd0",
                                       "folder", "text_nul", "oci_index_fifo", "oci_layout_fifo", "oci_blobs_fifo",
                                       "oci_layer_fifo", "oci_index_sparse", "oci_layer_loop", "oci_blobs_loop")},
       image_path_case, limit=90)


def _layer_with(members: list[tuple[tarfile.TarInfo, bytes | None]]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as t:
        for info, data in members:
            t.addfile(info, io.BytesIO(data) if data is not None else None)
    return gzip.compress(buf.getvalue())


def _ti(name: str, typ: bytes = tarfile.REGTYPE, size: int = 0, link: str = "", dev: tuple = (0, 0)) -> tarfile.TarInfo:
    t = tarfile.TarInfo(name)
    t.type, t.size, t.linkname = typ, size, link
    t.devmajor, t.devminor = dev
    return t


def layer_member_case(ctx: Ctx, kind: str) -> None:
    v = "usr/local/cuda-12.8/version.json"
    good = json.dumps({"cuda": {"version": "12.8.1"}}).encode()
    members = {
        "version_json_fifo": [(_ti(v, tarfile.FIFOTYPE), None)],
        "version_json_char_device_zero": [(_ti(v, tarfile.CHRTYPE, dev=(1, 5)), None)],
        "version_json_links_to_shadow": [(_ti(v, tarfile.SYMTYPE, link="/etc/shadow"), None)],
        "version_json_link_chain_loop": [(_ti(v, tarfile.SYMTYPE, link="v2.json"), None),
                                         (_ti("usr/local/cuda-12.8/v2.json", tarfile.SYMTYPE, link="version.json"), None)],
        "version_json_hardlink_to_later": [(_ti(v, tarfile.LNKTYPE, link="usr/local/cuda-12.8/real.json"), None),
                                           (_ti("usr/local/cuda-12.8/real.json", size=len(good)), good)],
        "cudnn_header_links_up": [(_ti("usr/include/cudnn_version.h", tarfile.SYMTYPE,
                                       link="../../../../../../proc/self/environ"), None)],
        "libcudnn_name_escape": [(_ti("usr/lib/x86_64-linux-gnu/libcudnn.so.9\x1b]0;x\x07", size=4), b"\x7fELF")],
        "dist_info_metadata_huge_line": [(_ti("usr/lib/python3/dist-packages/torch-2.5.1.dist-info/METADATA",
                                              size=3_000_000), b"Name: torch\nVersion: " + b"9" * 2_999_979 + b"\n")],
        "folder_over_file": [(_ti("usr/local/cuda-12.8", size=3), b"abc"),
                             (_ti(v, size=len(good)), good)],
        "version_json_twice_second_garbage": [(_ti(v, size=len(good)), good),
                                              (_ti(v, size=7), b"\xff\xfe{[[[[")],
    }[kind]
    i = img()
    layer = _layer_with(members)
    folder = raw_oci(ctx, layers=[(layer, i.LAYER_GZIP if hasattr(i, "LAYER_GZIP") else
                                   "application/vnd.oci.image.layer.v1.tar+gzip")])
    d = judge_image(ctx, str(folder), rcs=(0, 1, 2), seconds=20)
    text = json.dumps(d)
    expect("root:" not in text and "PATH=" not in text, "a file outside the image reached the report")


family("image", "member", {k: k for k in ("version_json_fifo", "version_json_char_device_zero",
                                         "version_json_links_to_shadow", "version_json_link_chain_loop",
                                         "version_json_hardlink_to_later", "cudnn_header_links_up",
                                         "libcudnn_name_escape", "dist_info_metadata_huge_line", "folder_over_file",
                                         "version_json_twice_second_garbage")}, layer_member_case, limit=90)


def image_ref_case(ctx: Ctx, ref: str) -> None:
    m = ctx.machine()
    r = m.run("image", ref, "--json", env={"CUDNN_DOCTOR_IMAGE_TIMEOUT": "3"}, timeout=40)
    judge(r, (2,), secs=20)
    t = m.run("image", ref, env={"CUDNN_DOCTOR_IMAGE_TIMEOUT": "3"}, timeout=40)
    judge(t, (2,), want_json=False, secs=20)
    no_raw_controls(t.err, "the error")
    expect(not (m.cwd / "pwned").exists(), "a command in the reference ran")


family("image", "ref", {"dotdot": "127.0.0.1:1/a/../../b:1", "five_thousand": "127.0.0.1:1/" + "a" * 5000 + ":t",
                        "escape": "127.0.0.1:1/a\x1b]0;x\x07:t", "newline": "127.0.0.1:1/a\nb:t",
                        "dash": "-rf", "short_digest": "127.0.0.1:1/a@sha256:abc",
                        "command": "127.0.0.1:1/$(touch pwned):t", "port_huge": "127.0.0.1:99999999999/a:t",
                        "file_scheme": "file:///etc/passwd", "empty_parts": "127.0.0.1://:"}, image_ref_case, limit=60)


def registry_case(ctx: Ctx, how: str) -> None:
    big = b"{" + b" " * (200 << 20)

    def behave(h: http.server.BaseHTTPRequestHandler, reg: Reg) -> bool:
        path = h.path
        if how == "auth_realm_newline" and path.rstrip("/") != "/v2" and "token" not in path:
            return reg.send(h, b"{}", code=401, extra={
                "WWW-Authenticate": f'Bearer realm="http://127.0.0.1:{reg.port}/token\\r\\nX: 1",service="x"'})
        if how == "auth_realm_huge" and "token" not in path:
            return reg.send(h, b"{}", code=401, extra={
                "WWW-Authenticate": 'Bearer realm="http://127.0.0.1:1/' + "a" * 60000 + '"'})
        if how == "auth_realm_unanswering" and "token" not in path:
            return reg.send(h, b"{}", code=401, extra={"WWW-Authenticate": 'Bearer realm="http://127.0.0.1:9/t"'})
        if how == "gzip_bomb_manifest" and "/manifests/" in path:
            return reg.send(h, gzip.compress(b" " * (300 << 20)), reg_manifest_type(),
                            extra={"Content-Encoding": "gzip"})
        if how == "html_200" and "/manifests/" in path:
            return reg.send(h, b"<html><body>\x1b[2J login </body></html>", "text/html")
        if how == "index_cycle" and "/manifests/" in path:
            i = img()
            idx = {"schemaVersion": 2, "mediaType": i.INDEX, "manifests": [
                {"mediaType": i.INDEX, "digest": "sha256:" + "a" * 64, "size": 100,
                 "platform": {"architecture": "amd64", "os": "linux"}}]}
            return reg.send(h, json.dumps(idx).encode(), i.INDEX)
        if how == "garbage_status_line":
            h.wfile.write(b"HTTP/1.1 2OO OK\x1b]0;x\x07\r\nContent-Length: -5\r\n\r\n")
            return True
        if how == "chunked_bad_sizes" and "/manifests/" in path:
            h.send_response(200)
            h.send_header("Transfer-Encoding", "chunked")
            h.end_headers()
            h.wfile.write(b"ffffffffffffffffffff\r\n{}\r\n0\r\n\r\n")
            return True
        if how == "content_length_200mb_json" and "/manifests/" in path:
            return reg.send(h, big, reg_manifest_type())
        if how == "error_json_hostile" and "/manifests/" in path:
            body = json.dumps({"errors": [{"code": "DENIED\x1b[2J", "message": "\u202e" + "m" * 100000,
                                           "detail": {"x": [1] * 1000}}]}).encode()
            return reg.send(h, body, code=403)
        return False

    reg = Reg(behave)
    try:
        env = {"CUDNN_DOCTOR_IMAGE_TIMEOUT": "4"}
        d = reg_judge(ctx, reg, 30, rcs=(1, 2), env=env, mem_mb=600)
        m = ctx.machine("reg2")
        t = m.run("image", reg.ref, env=env, timeout=40)
        sane(t, (1, 2))
        no_raw_controls(t.out + t.err, "image's text")
        del d
    finally:
        reg.close()


def reg_manifest_type() -> str:
    return img().MANIFEST


family("image", "registry", {k: k for k in ("auth_realm_newline", "auth_realm_huge", "auth_realm_unanswering",
                                           "gzip_bomb_manifest", "html_200", "index_cycle", "garbage_status_line",
                                           "chunked_bad_sizes", "content_length_200mb_json", "error_json_hostile")},
       registry_case, limit=90)


# ====================================================================================================================
# fleet: a fake srun's nodes, Slurm variables, reports

FAKE_SRUN = r"""#!/bin/sh
# a fake srun: writes what REDTEAM_NODES says into --output's pattern, one file per node
out=""
for a in "$@"; do case "$a" in --output=*) out="${a#--output=}";; --error=*) err="${a#--error=}";; esac; done
dir=$(dirname "$out")
printf '%s\n' "$@" > "$dir/../srun-argv" 2>/dev/null
sh "$REDTEAM_NODES" "$dir"
"""


def fleet_case(ctx: Ctx, how: str) -> None:
    m = ctx.machine()
    good = m.run("check", "--json", timeout=40).outb
    (m.base / "good.json").write_bytes(good)
    bin_ = m.base / "bin"
    bin_.mkdir()
    (bin_ / "srun").write_text(FAKE_SRUN)
    (bin_ / "srun").chmod(0o755)
    (bin_ / "scancel").write_text("#!/bin/sh\nexit 0\n")
    (bin_ / "scancel").chmod(0o755)
    g = m.base / "good.json"
    nodes = {
        "escapes_in_node_name": f"cp {g} \"$1/0.json\"; printf 'cudnn-doctor-node: n\\033]0;x\\007\\n' > \"$1/0.err\"",
        "node_file_links_passwd": "ln -s /etc/passwd \"$1/0.json\"",
        "node_file_fifo": "mkfifo \"$1/0.json\"",
        "thousand_nodes": f"i=0; while [ $i -lt 1000 ]; do cp {g} \"$1/$i.json\"; i=$((i+1)); done",
        "node_50mb_stderr": f"cp {g} \"$1/0.json\"; head -c 50000000 /dev/zero > \"$1/0.err\"",
        "srun_hangs": "sleep 600",
        "srun_fails_loudly": "head -c 2000000 /dev/urandom >&2; exit 1",
        "node_name_dotdot": f"cp {g} \"$1/0.json\"; printf 'cudnn-doctor-node: ../../escape\\n' > \"$1/0.err\"",
        "node_json_nan": "printf '{\"schema\": \"cudnn-doctor/report/1\", \"gpus\": [{\"memory_mib\": NaN, "
                         "\"name\": \"\\\\u001b[2J\"}], \"findings\": 5}' > \"$1/0.json\"",
        "same_name_twice": f"cp {g} \"$1/0.json\"; cp {g} \"$1/1.json\"; echo 'cudnn-doctor-node: n1' > \"$1/0.err\"; "
                           "echo 'cudnn-doctor-node: n1' > \"$1/1.err\"",
        "daemon_left": f"cp {g} \"$1/0.json\"; (setsid sleep 120 &)",
    }[how]
    (m.base / "nodes.sh").write_text(nodes)
    keep = m.base / "keep"
    env = {"PATH": f"{bin_}:{m.env['PATH']}", "REDTEAM_NODES": str(m.base / "nodes.sh")}
    r = m.run("fleet", "run", "--slurm", "--json", "--deadline", "6", "--keep", str(keep), env=env, timeout=50)
    left = leftovers_of(m.base)
    reap(m.base)
    data = judge(r, (0, 1, 2), secs=25)
    expect("root:x:0:0" not in r.out, "/etc/passwd reached the output")
    expect(not (m.base / "escape.json").exists() and not (m.base / "escape.err").exists(),
           "a node name climbed out of --keep")
    expect(not [x for x in left if "sleep 600" in x], f"srun left running: {left[:2]}")
    t = m.run("fleet", "merge", str(keep), timeout=40) if keep.is_dir() else None
    if t is not None:
        judge(t, (0, 1, 2), want_json=False, secs=25)
        no_raw_controls(t.out, "merge's text")
    del data


family("fleet", "srun", {k: k for k in ("escapes_in_node_name", "node_file_links_passwd", "node_file_fifo",
                                       "thousand_nodes", "node_50mb_stderr", "srun_hangs", "srun_fails_loudly",
                                       "node_name_dotdot", "node_json_nan", "same_name_twice", "daemon_left")},
       fleet_case, limit=90)


def fleet_option_case(ctx: Ctx, arg: tuple[str, ...]) -> None:
    m = ctx.machine()
    bin_ = m.base / "bin"
    bin_.mkdir()
    (bin_ / "srun").write_text("#!/bin/sh\nprintf '%s\\n' \"$@\" > \"$REDTEAM_ARGV\"\n")
    (bin_ / "srun").chmod(0o755)
    env = {"PATH": f"{bin_}:{m.env['PATH']}", "REDTEAM_ARGV": str(m.base / "argv")}
    r = m.run("fleet", "run", "--slurm", "--json", *arg, env=env, timeout=40)
    judge(r, (0, 1, 2), secs=20)
    expect(not (m.cwd / "pwned").exists(), "an option's value ran a command here")


family("fleet", "options", {
    "command_injection": ("--command", "true; touch pwned"), "command_empty": ("--command", ""),
    "command_escape": ("--command", "\x1b]0;x\x07"), "deadline_huge": ("--deadline", "1e308"),
    "deadline_arabic": ("--deadline", "\u0663"), "keep_escape": ("--keep", "k\x1b[2J"),
    "keep_percent": ("--keep", "%n%j%%x"), "srun_option_injection": ("--deadline", "3", "--", "--output=/etc/x"),
}, fleet_option_case, limit=60)


def slurm_env_case(ctx: Ctx, arg: tuple[str, str]) -> None:
    var, value = arg
    m = ctx.machine()
    bin_ = m.base / "bin"
    bin_.mkdir()
    (bin_ / "srun").write_text("#!/bin/sh\nexit 0\n")
    (bin_ / "srun").chmod(0o755)
    r = m.run("fleet", "run", "--slurm", "--json", "--deadline", "5",
              env={"PATH": f"{bin_}:{m.env['PATH']}", var: value}, timeout=40)
    judge(r, (0, 1, 2), secs=20)
    c = m.run("check", "--json", env={var: value}, timeout=40)
    judge(c, (0, 1), secs=20)


family("fleet", "slurm_env", {
    "nodelist_huge_range": ("SLURM_JOB_NODELIST", "n[1-99999999]"), "nodelist_command": ("SLURM_JOB_NODELIST", "n$(touch pwned)"),
    "nodelist_brackets": ("SLURM_JOB_NODELIST", "n[[[1-2]"), "job_id_escape": ("SLURM_JOB_ID", "1\x1b]0;x\x07"),
    "localid_huge": ("SLURM_LOCALID", "9" * 500), "step_gpus": ("SLURM_STEP_GPUS", "0,\u0661,GPU-\n"),
}, slurm_env_case, limit=60)


def merge_case(ctx: Ctx, how: str) -> None:
    m = ctx.machine()
    d = m.base / "reports"
    d.mkdir()
    good = json.loads(m.run("check", "--json", timeout=40).outb)
    if how == "gpu_names_escapes":
        g = dict(good)
        g["gpus"] = [{"name": "\x1b]52;c;cm0=\x07H100\u202e", "memory_mib": 1e308, "index": -1}]
        (d / "a.json").write_text(json.dumps(g))
        (d / "b.json").write_text(json.dumps(good))
    elif how == "two_thousand_empty":
        for i in range(2000):
            (d / f"{i}.json").write_bytes(b"")
    elif how == "name_newline":
        (d / "node\n::error::x.json").write_text(json.dumps(good))
    elif how == "other_schema":
        (d / "a.json").write_text(json.dumps({**good, "schema": "cudnn-doctor/report/999"}))
    elif how == "findings_huge":
        (d / "a.json").write_text(json.dumps({**good, "findings": [{"code": f"CD{i % 999}", "detail": "x" * 100}
                                                                     for i in range(200000)]}))
    elif how == "hostname_50k":
        (d / "a.json").write_text(json.dumps({**good, "host": {"hostname": "h" * 50000}, "hostname": "h" * 50000}))
    for args in (("fleet", "merge", str(d), "--json"), ("fleet", "merge", str(d))):
        r = m.run(*args, timeout=50)
        judge(r, (0, 1, 2), want_json="--json" in args, secs=30)
        if "--json" not in args:
            no_raw_controls(r.out, "merge's text")
            expect(not any(x.startswith("::") for x in r.out.splitlines()), "a line of merge's text is a workflow command")


family("fleet", "merge", {k: k for k in ("gpu_names_escapes", "two_thousand_empty", "name_newline", "other_schema",
                                        "findings_huge", "hostname_50k")}, merge_case, limit=90)


# ====================================================================================================================
# bench

def bench_lib_case(ctx: Ctx, arg: tuple[str, str]) -> None:
    which, kind = arg
    m = ctx.machine()
    gpu_machine(ctx, m, gpus=1)
    lib = m.base / "b" / ("libcudnn.so.9" if which == "cudnn" else "libcudart.so.13")
    place_hostile(lib, kind, lib.name)
    r = m.run("bench", "--json", f"--{which}", str(lib), "--repeats", "1", "--size", "tiny",
              env={"CUDNN_DOCTOR_BENCH_TIMEOUT": "5"}, timeout=60)
    reap(m.base)
    data = judge(r, (1, 2), secs=40)
    expect(r.rc == 2 or (data or {}).get("findings"), "bench of an unusable library found nothing")


family("bench", "library", {f"{w}-{k}": (w, k) for w in ("cudnn", "cudart")
                            for k in ("fifo", "dev_zero", "sparse_4g", "loop", "folder", "loops_in_ctor", "exit_in_ctor",
                                      "closes_every_fd")}, bench_lib_case, limit=90)


def bench_option_case(ctx: Ctx, arg: tuple[str, ...]) -> None:
    m = ctx.machine()
    gpu_machine(ctx, m, gpus=1)
    rcs = (1, 2) if arg[0] == "--cudnn" else (2,)  # a library that is not there may be a finding of bench's
    r = m.run("bench", "--json", *arg, env={"CUDNN_DOCTOR_BENCH_TIMEOUT": "5"}, timeout=60)
    judge(r, rcs, secs=30)
    t = m.run("bench", *arg, timeout=60)
    judge(t, rcs, want_json=False, secs=30)
    no_raw_controls(t.err, "the error")


family("bench", "option", {
    "repeats_zero": ("--repeats", "0"), "repeats_negative": ("--repeats", "-3"), "repeats_1e9": ("--repeats", "1e9"),
    "repeats_bengali": ("--repeats", "\u09e9"), "device_99": ("--device", "99x"), "device_escape": ("--device", "\x1b[2J"),
    "workspace_negative": ("--workspace-limit", "-5"), "workspace_1e400": ("--workspace-limit", "1e400"),
    "cudnn_missing_escape": ("--cudnn", "/nonexistent/\x1b]0;x\x07libcudnn.so"),
}, bench_option_case, limit=60)
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
    scratch = Path(tempfile.mkdtemp(prefix="redteam7-43-"))
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
