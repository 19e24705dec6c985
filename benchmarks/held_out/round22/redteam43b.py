#!/usr/bin/env python3
# ruff: noqa  (an evaluation set: its harness is kept as the helper wrote it apart from the code)
"""Round twenty-one red-team over issue 43's surfaces (sealed: builders never read it). Round twenty's harness
(benchmarks/held_out/round20/redteam43.py) taken over whole, its classes dropped with CASES.clear(); the classes
after "ROUND TWENTY-ONE" below are new (see README.md beside this file).

    /work/main/.venv-ci/bin/python redteam.py --tree CHECKOUT --jobs 2 [--list-failures] [--only=SUBSTRINGS]
        [--results FILE] [--list] [--from-results FILE] [--python PY]

Each case runs in a process of its own (this file with --run-case), in a scratch folder under /var/tmp, against the
doctor of CHECKOUT started as `PYTHONPATH=CHECKOUT PY -m cudnn_doctor ...` in a pretend machine
(CUDNN_DOCTOR_SYSTEM_PREFIX, HOME, CUDNN_DOCTOR_CACHE_DIR of its own). A case holds when a user would agree
(README.md). A case past its limit fails as a hang.
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
FAKES_DEFAULT = "/var/tmp/cudnn-doctor-fakes22b"
CASES: dict[str, tuple[str, Callable, int]] = {}
CLASSES = {
    "probes": "check's first-use probes: ptxas that forks, dies by signals, prints odd versions, is no program; libdevice folders that are FIFOs or loops; NVRTC libraries that misbehave",
    "explainin": "explain - fed 1e6 lines, 20 MB, deep nesting, binary, UTF-16/32, terminal escapes (text and JSON)",
    "compatarg": "compat's FRAMEWORK[==VERSION] huge, binary, nested, escaped, odd digits (text and JSON)",
    "fixshell": "fix --shell for six shells, a cuDNN folder named with each shell's specials beside a hostile LD_LIBRARY_PATH entry",
    "instdmg": "install over a journal cut at seeded offsets, a lock that is no file, a prefix on a full or read-only tmpfs",
    "uninst": "uninstall of an install half there (files, backups, manifests damaged or moved)",
    "imagearc": "docker save archives and OCI layouts with hostile members, manifests, configs, nesting",
    "fleetans": "fleet run (fake srun) and merge with hostile node answers: huge, foreign, hanging, broken",
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


BUILD = Path(os.environ.get("REDTEAM22B_BUILD", "/var/tmp/redteam22b-43-build"))


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
# round fourteen: common pieces

def hold14(r: R, want_json: bool, rcs: tuple = (0, 1), secs: float = 40, out_max: int | None = None,
           err_max: int | None = None) -> dict | None:
    """Round thirteen's hold13, and (where given) output bounded: what the doctor prints about a hostile input is
    not the input again at full size."""
    data = hold13(r, want_json, rcs, secs)
    if want_json:
        data = strict_json(r.out)
    if out_max is not None:
        expect(len(r.outb) <= out_max, f"stdout of {len(r.outb)} bytes (bound {out_max})")
    if err_max is not None:
        expect(len(r.errb) <= err_max, f"stderr of {len(r.errb)} bytes (bound {err_max})")
    return data


def precious(ctx: Ctx) -> tuple[Path, str]:
    """A file of the user's outside anything the doctor was pointed at, and its hash."""
    p = ctx.work / "precious" / "keep.txt"
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text("the user's own file, outside the prefix\n")
    return p, hashlib.sha256(p.read_bytes()).hexdigest()


def kept(p: Path, h: str) -> None:
    expect(p.is_file() and not p.is_symlink() and hashlib.sha256(p.read_bytes()).hexdigest() == h,
           f"a file outside the doctor's reach was changed: {p}")


# ====================================================================================================================
# probes: check's first-use probes (ptxas, libdevice, NVRTC) fed hostile programs, versions and folders

def jax_machine(ctx: Ctx, name: str = "m") -> tuple[M, Path]:
    m = ctx.machine(name)
    gpu_machine(ctx, m, gpus=1)
    venv = m.base / "venv"
    site = venv / "lib" / "python3.12" / "site-packages"
    site.mkdir(parents=True)
    scripted(venv / "bin" / "python3", "#!/bin/sh\n")
    m.env["PATH"] = f"{venv / 'bin'}:{m.env['PATH']}"
    info = site / "jax_cuda12_plugin-0.6.2.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: jax-cuda12-plugin\nVersion: 0.6.2\n"
                                   "Requires-Dist: nvidia-cudnn-cu12<10.0,>=9.8; extra == \"with-cuda\"\n"
                                   "Requires-Dist: nvidia-cuda-nvcc-cu12>=12.6.85; extra == \"with-cuda\"\n")
    (site / "jax_plugins" / "xla_cuda12").mkdir(parents=True)
    m.env["CUDNN_DOCTOR_HELPER_TIMEOUT"] = "1"
    m.env["CUDNN_DOCTOR_PROBE_TIMEOUT"] = "2"
    return m, site


PTX_HEAD = "echo 'ptxas: NVIDIA (R) Ptx optimizing assembler'\n"
PTX_OK = PTX_HEAD + "echo 'Cuda compilation tools, release 12.6, V12.6.85'\n"
PTX_BEHAVE = {
    "daemon_holds_stdout": "(setsid sleep 59.71 &)\n" + PTX_OK,
    "daemon_holds_stderr": "(setsid sleep 59.72 >/dev/null &)\n" + PTX_OK,
    "background_child_holds_pipe": "sleep 59.73 &\n" + PTX_OK,
    "late_grandchild_prints": "(sleep 3; echo 'Cuda compilation tools, release 12.6, V12.6.85') &\nexit 0\n",
    "sigkill": "kill -KILL $$\n", "sigabrt": "kill -ABRT $$\n", "sigpipe": "kill -PIPE $$\n",
    "sigterm": "kill -TERM $$\n", "sigbus": "kill -BUS $$\n", "sigxcpu": "kill -XCPU $$\n",
    "stops_itself": PTX_HEAD + "kill -STOP $$\n" + PTX_OK,
    "closes_stdio_and_sleeps": "exec >&- 2>&-\nsleep 59.74\n",
    "unlinks_itself": 'rm -f "$0"\n' + PTX_OK,
    "becomes_a_fifo": 'rm -f "$0"; mkfifo "$0"\n' + PTX_OK,
    "forks_200_daemons": "i=0; while [ $i -lt 200 ]; do (setsid sleep 59.75 </dev/null >/dev/null 2>&1 &); "
                         "i=$((i+1)); done\n" + PTX_OK,
}
PTX_VERSIONS = {  # (what it prints after the banner, whether XLA's RE2 `V(\d+)\.(\d+)\.(\d+)` finds a version)
    "nonutf8": ("printf 'Cuda compilation tools, release 12.6, V12.6.\\377\\376\\n'\n", False),
    "fullwidth_digits": ("echo 'Cuda compilation tools, release 12.6, V\uff11\uff12.\uff16.\uff18\uff15'\n", False),
    "devanagari_digits": ("echo 'Cuda compilation tools, release 12.6, V\u0967\u0968.\u096c.\u096e\u096b'\n", False),
    "superscript_digits": ("echo 'Cuda compilation tools, release 12.6, V\u00b9\u00b2.\u2076.\u2078\u2075'\n", False),
    "huge_major": ("echo 'Cuda compilation tools, release 12.6, V99999999999999999999999.6.85'\n", None),
    "nine_parts": ("echo 'Cuda compilation tools, release 12.6, V12.6.85.1.2.3.4.5.6'\n", None),
    "negative": ("echo 'Cuda compilation tools, release 12.6, V-12.6.85'\n", False),
    "leading_zeros": ("echo 'Cuda compilation tools, release 12.6, V0012.0006.0085'\n", None),
    "bare_v": ("echo 'Cuda compilation tools, release 12.6, V'\n", False),
    "cr_overwrite": ("printf 'Cuda compilation tools, release 11.0, V11.0.194\\rV12.6.85\\n'\n", None),
    "nul_inside": ("printf 'Cuda compilation tools, release 12.6, V12.6\\00085\\n'\n", None),
    "after_3mb_on_one_line": ("head -c 3000000 /dev/zero | tr '\\0' 7; echo ' V12.6.85'\n", None),
    "two_versions": ("echo 'V11.0.194'; echo 'Cuda compilation tools, release 12.6, V12.6.85'\n", None),
    "sgr_inside": ("printf 'Cuda compilation tools, release 12.6, V\\033[31m12.6.85\\033[0m\\n'\n", None),
    "bidi_override": ("echo 'Cuda compilation tools, release 12.6, V12.6.85\u202e58.6.21'\n", None),
}
PTX_FILES = ("devzero_link", "empty_exec", "crlf_shebang", "missing_interpreter", "shebang_self_loop",
             "aarch64_elf", "no_exec_bit", "exec_only")


def _ptxas_file(folder: Path, kind: str) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    p = folder / "ptxas"
    if kind == "devzero_link":
        p.symlink_to("/dev/zero")
    elif kind == "empty_exec":
        scripted(p, "")
    elif kind == "crlf_shebang":
        scripted(p, "#!/bin/sh\r\n" + PTX_OK.replace("\n", "\r\n"))
    elif kind == "missing_interpreter":
        scripted(p, "#!/nonexistent/interpreter\n" + PTX_OK)
    elif kind == "shebang_self_loop":
        scripted(p, f"#!{p}\n" + PTX_OK)
    elif kind == "aarch64_elf":
        hdr = bytearray(64)
        hdr[0:4] = b"\x7fELF"
        hdr[4], hdr[5], hdr[6] = 2, 1, 1
        hdr[16:18] = (2).to_bytes(2, "little")
        hdr[18:20] = (183).to_bytes(2, "little")
        p.write_bytes(bytes(hdr) + b"\0" * 4096)
        p.chmod(0o755)
    elif kind == "no_exec_bit":
        p.write_text("#!/bin/sh\n" + PTX_OK)
        p.chmod(0o644)
    elif kind == "exec_only":
        p.write_text("#!/bin/sh\n" + PTX_OK)
        p.chmod(0o111)


def _xla_of(d: dict) -> dict:
    fu = d.get("first_use") or {}
    return (fu.get("xla") or {}) if isinstance(fu, dict) else {}


def _probe_judge(m: M, text_too: bool, not_used: bool = False) -> None:
    r = m.run("check", "--json", timeout=45)
    left = leftovers_of(m.base)
    reap(m.base)
    d = hold14(r, True, (0, 1), secs=30) or {}
    expect(not left, f"processes left after check: {left[:3]}")
    ptx = [c for c in (_xla_of(d).get("ptxas") or []) if isinstance(c, dict)]
    for c in ptx:
        v = c.get("version")
        if c.get("verdict") == "used" and v is not None:
            expect(isinstance(v, str) and re.fullmatch(r"[0-9]+(\.[0-9]+)*", v), f"a used ptxas of version {v!r}")
    if not_used:
        first = [c for c in ptx if str(c.get("path", "")).startswith(str(m.base / "x"))]
        expect(not [c for c in first if c.get("verdict") == "used"],
               f"a ptxas that prints no version XLA reads is taken as used: {first[:1]}")
    if text_too:
        t = m.run("check", timeout=45)
        reap(m.base)
        hold14(t, False, (0, 1), secs=30)


def ptx_behave_case(ctx: Ctx, key: str) -> None:
    m, _ = jax_machine(ctx)
    scripted(m.base / "x" / "ptxas", "#!/bin/sh\n" + PTX_BEHAVE[key])
    m.env["PATH"] = f"{m.base / 'x'}:{m.env['PATH']}"
    _probe_judge(m, text_too=False)


def ptx_version_case(ctx: Ctx, key: str) -> None:
    m, _ = jax_machine(ctx)
    body, found = PTX_VERSIONS[key]
    scripted(m.base / "x" / "ptxas", "#!/bin/sh\n" + PTX_HEAD + body)
    m.env["PATH"] = f"{m.base / 'x'}:{m.env['PATH']}"
    _probe_judge(m, text_too=True, not_used=found is False)


def ptx_file_case(ctx: Ctx, kind: str) -> None:
    m, _ = jax_machine(ctx)
    _ptxas_file(m.base / "x", kind)
    m.env["PATH"] = f"{m.base / 'x'}:{m.env['PATH']}"
    _probe_judge(m, text_too=False, not_used=kind in ("devzero_link", "empty_exec", "missing_interpreter",
                                                      "shebang_self_loop", "aarch64_elf", "no_exec_bit"))


LIBDEVICE_KINDS = {
    "nvvm_libdevice_fifo": ("nvvm/libdevice", "fifo"), "nvvm_libdevice_loop": ("nvvm/libdevice", "loop"),
    "nvvm_libdevice_file": ("nvvm/libdevice", "file"), "nvvm_libdevice_devzero": ("nvvm/libdevice", "devzero"),
    "bc_fifo": ("nvvm/libdevice/libdevice.10.bc", "fifo"), "bc_loop": ("nvvm/libdevice/libdevice.10.bc", "loop"),
    "bc_sparse_8g": ("nvvm/libdevice/libdevice.10.bc", "sparse"),
    "bc_devzero": ("nvvm/libdevice/libdevice.10.bc", "devzero"), "bc_folder": ("nvvm/libdevice/libdevice.10.bc", "dir"),
    "data_dir_fifo": ("", "fifo"), "data_dir_loop": ("", "loop"), "data_dir_proc_fd0": ("", "fd0"),
}


def libdevice_case(ctx: Ctx, key: str) -> None:
    m, _ = jax_machine(ctx)
    rel, kind = LIBDEVICE_KINDS[key]
    data = m.base / "cuda data"
    if rel:
        scripted(data / "bin" / "ptxas", "#!/bin/sh\n" + PTX_OK)
    target = data / rel if rel else data
    target.parent.mkdir(parents=True, exist_ok=True)
    if kind == "fifo":
        os.mkfifo(target)
    elif kind == "loop":
        target.symlink_to(target.name)
    elif kind == "file":
        target.write_text("not a folder\n")
    elif kind == "devzero":
        target.symlink_to("/dev/zero")
    elif kind == "sparse":
        with open(target, "wb") as f:
            f.truncate(8 << 30)
    elif kind == "dir":
        target.mkdir()
    elif kind == "fd0":
        target.symlink_to("/proc/self/fd/0")
    m.env["XLA_FLAGS"] = f'--xla_gpu_cuda_data_dir="{data}"'
    r = m.run("check", "--json", timeout=45)
    reap(m.base)
    hold14(r, True, (0, 1), secs=30)
    t = m.run("check", timeout=45)
    reap(m.base)
    hold14(t, False, (0, 1), secs=30)


NVRTC_MODES = ("forks_a_daemon", "stops_itself", "kills_its_group", "closes_every_fd", "grandchild_keeps_printing",
               "fake_json_and_escapes", "every_fd_to_dev_null", "arms_alarm", "clears_environ", "stdout_to_dev_full")


def nvrtc_case(ctx: Ctx, mode: str) -> None:
    m, site = jax_machine(ctx)
    lib = site / "nvidia" / "cuda_nvrtc" / "lib"
    lib.mkdir(parents=True)
    shutil.copyfile(hostile_elf(ELF_MODES[mode], "libnvrtc.so.12"), lib / "libnvrtc.so.12")
    info = site / "nvidia_cuda_nvrtc_cu12-12.6.85.dist-info"
    info.mkdir()
    (info / "RECORD").write_text("nvidia/cuda_nvrtc/lib/libnvrtc.so.12,,\n")
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: nvidia-cuda-nvrtc-cu12\nVersion: 12.6.85\n")
    r = m.run("check", "--json", timeout=50)
    time.sleep(0.3)
    left = leftovers_of(m.base)
    reap(m.base)
    hold14(r, True, (0, 1), secs=35)
    expect(not left, f"processes left after check: {left[:3]}")


family("probes", "ptxas_behaves", {k: k for k in PTX_BEHAVE}, ptx_behave_case, limit=70)
family("probes", "ptxas_version", {k: k for k in PTX_VERSIONS}, ptx_version_case, limit=90)
family("probes", "ptxas_file", {k: k for k in PTX_FILES}, ptx_file_case, limit=70)
family("probes", "libdevice", {k: k for k in LIBDEVICE_KINDS}, libdevice_case, limit=90)
family("probes", "nvrtc_lib", {k: k for k in NVRTC_MODES}, nvrtc_case, limit=70)


# ====================================================================================================================
# explainin: explain fed hostile standard input (huge, binary, nested, escapes) as text and JSON

MSG = b"RuntimeError: cuDNN error: CUDNN_STATUS_NOT_INITIALIZED"


def _bin(seed: int, n: int) -> bytes:
    rng = random.Random(seed)
    return bytes(rng.randrange(1, 256) for _ in range(n))


EXPLAIN_INPUTS: dict[str, Callable[[], bytes]] = {
    "lines_1e6": lambda: b"x\n" * 1_000_000,
    "message_200k_times": lambda: (MSG + b"\n") * 200_000,
    "crlf_1e6": lambda: b"a\r\n" * 1_000_000 + MSG,
    "cr_only_1e6": lambda: b"a\r" * 1_000_000 + MSG,
    "nel_300k": lambda: ("a\u0085" * 300_000).encode() + MSG,
    "one_line_20mb": lambda: b"y" * 20_000_000 + MSG,
    "brackets_200k": lambda: b"[" * 200_000 + MSG,
    "json_100k_deep": lambda: b'{"a":' * 100_000 + b"1" + b"}" * 100_000,
    "parens_100k_unclosed": lambda: b"(" * 100_000 + b"CUDNN_STATUS_BAD_PARAM" + b")" * 3,
    "binary_seed1401": lambda: _bin(1401, 200_000),
    "binary_seed1402": lambda: _bin(1402, 200_000),
    "binary_seed1403_with_message": lambda: _bin(1403, 100_000) + b"\n" + MSG + b"\n" + _bin(1404, 100_000),
    "utf16_bom": lambda: ("\ufeff" + MSG.decode()).encode("utf-16"),
    "utf32": lambda: MSG.decode().encode("utf-32"),
    "osc8_hyperlink": lambda: b"\x1b]8;;http://example.invalid/\x07" + MSG + b"\x1b]8;;\x07",
    "osc52_clipboard": lambda: b"\x1b]52;c;cm0gLXJmIH4=\x07" + MSG,
    "csi_clear_and_hide": lambda: b"\x1b[2J\x1b[H" + MSG + b"\x1b[8m hidden \x1b[0m",
    "dcs_apc_pm": lambda: b"\x1bP1$r\x1b\\\x1b_apc\x1b\\\x1b^pm\x1b\\" + MSG,
    "c1_raw_and_encoded": lambda: b"\x9b31m" + "\u009b2J\u009d0;t\u009c".encode() + MSG,
    "cr_overstrike": lambda: MSG + b"\rcudnn-doctor: all good, nothing to fix\n",
    "backspaces": lambda: b"CUDNN" + b"\x08" * 5 + MSG,
    "zero_width_between_letters": lambda: "\u200b".join(MSG.decode()).encode(),
    "homoglyphs": lambda: MSG.decode().replace("C", "\u0421").encode(),
    "base64_5mb_then_message": lambda: __import__("base64").b64encode(_bin(1405, 3_700_000)) + b"\n" + MSG,
    "keyword_100k_times": lambda: b"CUDNN_STATUS_" * 100_000,
    "error_lines_200k": lambda: b"error: x\n" * 200_000 + MSG,
    "tabs_5mb": lambda: b"\t" * 5_000_000 + MSG,
    "emoji_zwj_50k": lambda: ("\U0001F469\u200d\U0001F469\u200d\U0001F467" * 50_000).encode() + MSG,
    "bidi_isolates": lambda: ("\u202e" + MSG.decode() + "\u2066x\u2069\u2067y").encode(),
    "cesu_and_overlong": lambda: b"\xed\xa0\x80\xed\xb0\x80\xc0\xaf\xe0\x80\xaf" + MSG,
}


def explain_case(ctx: Ctx, arg: tuple[str, bool]) -> None:
    key, as_json = arg
    m = ctx.machine()
    data = EXPLAIN_INPUTS[key]()
    args = ["explain", "-"] + (["--json"] if as_json else [])
    r = run_proc(m.argv(*args), m.env, m.cwd, 45, stdin=data, preexec=cap_as(2048))
    hold14(r, as_json, (0, 1, 2), secs=30, out_max=1 << 20, err_max=16 << 10)
    if r.rc == 2 and not as_json:
        one_line(r)


family("explainin", "stdin", {f"{k}-{'json' if j else 'text'}": (k, j) for k in EXPLAIN_INPUTS for j in (True, False)},
       explain_case, limit=70)


# ====================================================================================================================
# compatarg: compat's FRAMEWORK[==VERSION] argument hostile

COMPAT_ARGS: dict[str, Callable[[], str]] = {
    "name_120kb": lambda: "torch" + "x" * 120_000,
    "version_120kb_digits": lambda: "torch==" + "9" * 120_000,
    "version_40000_parts": lambda: "torch==" + ".".join(["1"] * 40_000),
    "ansi_in_name": lambda: "torch\x1b]52;c;cm0gLXJm\x07\x1b[2J",
    "bidi_in_version": lambda: "torch==2.5.1\u202e1.5.2",
    "binary_seed1410": lambda: argbin(1410, 2000),
    "extras_30000_deep": lambda: "torch" + "[" * 30_000 + "]" * 30_000 + "==2.5.1",
    "eqeq_40000": lambda: "torch" + "==" * 40_000,
    "specifiers_5000": lambda: "torch" + ",".join([">=1.0"] * 5_000),
    "environment_marker": lambda: 'torch==2.5.1; python_version < "3" and os_name == "nt"',
    "url_requirement": lambda: "torch @ file:///etc/passwd",
    "local_label_60kb": lambda: "torch==2.5.1+" + "a." * 30_000 + "b",
    "nan_version": lambda: "torch==NaN",
    "overflow_version": lambda: "torch==1e999",
    "newline_workflow_command": lambda: "torch==2.5.1\n::error::made by the argument",
    "fullwidth_digits": lambda: "torch==\uff12.\uff15.\uff11",
    "negative_cudnn": lambda: "cudnn==-9.1.0",
    "cudnn_20000_parts": lambda: "cudnn==" + "9." * 20_000 + "1",
    "stars": lambda: "torch==*.*.*",
    "fullwidth_equals": lambda: "torch\uff1d\uff1d2.5.1",
    "combining_500": lambda: "torch==2.5.1" + "\u0301" * 500,
    "nul_free_controls": lambda: "tensorflow==2.15.0\x01\x02\x7f\x85\u2028",
}


def compat_case(ctx: Ctx, arg: tuple[str, bool]) -> None:
    key, as_json = arg
    m = ctx.machine()
    value = COMPAT_ARGS[key]()
    args = ["compat", value] + (["--json"] if as_json else [])
    r = run_proc(m.argv(*args), m.env, m.cwd, 40, preexec=cap_as(2048))
    hold14(r, as_json, (0, 1, 2), secs=25, out_max=512 << 10, err_max=16 << 10)
    if r.rc == 2 and not as_json:
        one_line(r)
    if not as_json:
        expect(not re.search(r"^::(error|warning|notice)", r.out + r.err, re.M), "a workflow command made by the argument")


family("compatarg", "arg", {f"{k}-{'json' if j else 'text'}": (k, j) for k in COMPAT_ARGS for j in (True, False)},
       compat_case, limit=60)


# ====================================================================================================================
# fixshell: `fix --shell` for every shell, a cuDNN folder named with each shell's specials, beside a hostile
# LD_LIBRARY_PATH entry the user already has

FIX_VALUES = {
    "percent_var": "c%PATH%x", "carets": "a^&b^", "bangs": "x!PATH!y", "ps_env": "$env:USERPROFILE",
    "ps_backtick": "a`$(id)`n", "nested_subst": "$($(id))", "c1_nel_csi": "a\x85b\x9bc",
    "line_separator": "a\u2028b", "nonutf8": os.fsdecode(b"c\xfe\xff"),
}
OLD_ENTRY = "/opt/old lib$(touch {mark})`touch {mark}`"


def fixshell_case(ctx: Ctx, arg: tuple[str, str]) -> None:
    key, shell = arg
    value = FIX_VALUES[key]
    m, folder = _cudnn_off_path(ctx, value)
    mark = ctx.work / "MARK"
    old = OLD_ENTRY.format(mark=mark)
    m.env["LD_LIBRARY_PATH"] = f"{m.env['LD_LIBRARY_PATH']}:{old}"
    r = m.run("fix", "--json", "--search-path", folder, timeout=45)
    d = hold14(r, True, (0, 1), secs=30) or {}
    t = m.run("fix", "--shell", shell, "--search-path", folder, timeout=45)
    hold14(t, False, (0, 1), secs=30)
    expect(not mark.exists(), "the marker was made by the doctor")
    lines = _env_lines(d.get("plan") or d, shell)
    if shell in SHELLS:
        printed = source_lines(t.out)
        for line in lines + printed:
            no_raw_controls13(line, f"a {shell} line")
        if not lines and not printed:
            return
        env = {k: v for k, v in m.env.items()}
        got = run_in_shell(shell, printed or lines, ctx.work, env)
        expect(not mark.exists(), f"sourcing the {shell} lines ran a command of the folder's or the old entry's name")
        llp = got.get(b"LD_LIBRARY_PATH", b"")
        parts = llp.split(b":")
        if all(x.lstrip().startswith("#") for x in (printed or lines)):
            return
        expect(os.fsencode(folder) in parts, f"{shell}: LD_LIBRARY_PATH after the lines lacks the folder: {llp[:300]!r}")
        expect(os.fsencode(old) in parts, f"{shell}: the user's earlier entry was changed: {llp[:300]!r}")
    else:
        for line in lines + source_lines(t.out):
            JUDGES[shell](line, "LD_LIBRARY_PATH", folder)


family("fixshell", "folder", {f"{k}-{s}": (k, s) for k in FIX_VALUES
                              for s in ("bash", "zsh", "fish", "powershell", "cmd", "user")},
       fixshell_case, limit=80)


# ====================================================================================================================
# instdmg: install over a damaged prefix: the journal cut at seeded offsets, a lock that is not a file, a prefix on
# a full or read-only tmpfs (a private mount namespace)

def _killed_install(ctx: Ctx) -> tuple[dict, Path, list[str], dict]:
    env = install_env(ctx)
    a = archive(ctx)
    prefix = prefix_with_old(ctx)
    argv = cli_argv("install", "--from", str(a), "--prefix", str(prefix), "--yes")
    before = inst().snapshot_content(prefix)
    r = run_proc(argv, {**env, "CUDNN_DOCTOR_TEST_KILL_AT": "apply.put:14:KILL"}, ctx.tree, 50)
    expect((prefix / ".cudnn-doctor" / "journal.json").is_file(), f"harness: no journal after the kill: {r!r}")
    return env, prefix, argv, before


def _judge_after(ctx: Ctx, r: R, prefix: Path, before: dict, what: str) -> None:
    d = hold14(r, True, (0, 1, 2), secs=35) or {}
    _user_files_kept(prefix)
    complete = installed_as_recorded(ctx, prefix)
    if r.rc == 0:
        expect(complete == [], f"{what}: exit 0 but the prefix is not the recorded install: {complete}")
    else:
        as_before = user_view(inst().snapshot_content(prefix)) == user_view(before)
        expect(as_before or complete == [] or re.search(r"journal|roll|interrupt|unfinished|damaged|recover",
                                                        json.dumps(d), re.I),
               f"{what}: exit {r.rc}, a mixed prefix, and nothing said of it: {json.dumps(d)[:400]}")


def journal_cut_case(ctx: Ctx, k: int) -> None:
    env, prefix, argv, before = _killed_install(ctx)
    j = prefix / ".cudnn-doctor" / "journal.json"
    data = j.read_bytes()
    offs = sorted(set([0, len(data) - 1] + random.Random(1414).sample(range(1, len(data) - 1), 24)))
    off = offs[k % len(offs)] if k < len(offs) else int(len(data) * k / 40)
    j.write_bytes(data[:off])
    r = run_proc(argv + ["--json"], env, ctx.tree, 50)
    _judge_after(ctx, r, prefix, before, f"journal cut at {off} of {len(data)}")


LOCK_KINDS = ("fifo", "folder", "loop", "devzero", "link_to_user_file", "dangling_outside", "sparse_8g", "socket",
              "hardlink_to_user_file", "link_to_outside_folder", "link_to_proc_stdout")


def lock_case(ctx: Ctx, kind: str) -> None:
    env = install_env(ctx)
    a = archive(ctx)
    prefix = prefix_with_old(ctx)
    argv = cli_argv("install", "--from", str(a), "--prefix", str(prefix), "--yes", "--json")
    sane(run_proc(argv, env, ctx.tree, 50), (0,))
    un = cli_argv("uninstall", "--prefix", str(prefix), "--yes", "--json")
    sane(run_proc(un, env, ctx.tree, 50), (0,))
    before = inst().snapshot_content(prefix)
    lock = prefix / ".cudnn-doctor" / "lock"
    lock.parent.mkdir(exist_ok=True)
    if lock.exists() or lock.is_symlink():
        lock.unlink()
    pf, ph = precious(ctx)
    outside = ctx.work / "outside" / "made-by-lock"
    if kind == "fifo":
        os.mkfifo(lock)
    elif kind == "folder":
        lock.mkdir()
    elif kind == "loop":
        lock.symlink_to("lock")
    elif kind == "devzero":
        lock.symlink_to("/dev/zero")
    elif kind == "link_to_user_file":
        lock.symlink_to(pf)
    elif kind == "dangling_outside":
        outside.parent.mkdir(parents=True)
        lock.symlink_to(outside)
    elif kind == "sparse_8g":
        with open(lock, "wb") as f:
            f.truncate(8 << 30)
    elif kind == "socket":
        s = socket.socket(socket.AF_UNIX)
        s.bind(str(lock))
        s.close()
    elif kind == "hardlink_to_user_file":
        os.link(pf, lock)
    elif kind == "link_to_outside_folder":
        outside.parent.mkdir(parents=True)
        lock.symlink_to(outside.parent)
    elif kind == "link_to_proc_stdout":
        lock.symlink_to("/proc/self/fd/1")
    r = run_proc(argv, env, ctx.tree, 45)
    st = os.lstat(lock) if lock.exists() or lock.is_symlink() else None
    if st is not None and not stat.S_ISREG(st.st_mode) and not stat.S_ISLNK(st.st_mode) and not stat.S_ISDIR(st.st_mode):
        lock.unlink()  # the doctor's own scratch (user_view leaves it out): a socket or FIFO is not read by the snapshot
    if (lock.is_symlink() and kind in ("devzero", "link_to_proc_stdout", "loop")) or kind == "link_to_outside_folder":
        lock.unlink() if lock.is_symlink() else None
    kept(pf, ph)
    expect(not outside.exists() and not [x for x in outside.parent.iterdir()] if outside.parent.is_dir() else True,
           "a file was made outside the prefix through the lock's link")
    _judge_after(ctx, r, prefix, before, f"lock a {kind}")


STATE_LINKS = ("journal_symlink_user_file", "journal_hardlink_user_file", "manifest_symlink_user_file_uninstall")


def state_link_case(ctx: Ctx, kind: str) -> None:
    """A file of the doctor's state in the prefix that is a link to a file of the user's outside it."""
    env = install_env(ctx)
    a = archive(ctx)
    prefix = prefix_with_old(ctx)
    pf, ph = precious(ctx)
    argv = cli_argv("install", "--from", str(a), "--prefix", str(prefix), "--yes", "--json")
    dot = prefix / ".cudnn-doctor"
    if kind.startswith("manifest"):
        sane(run_proc(argv, env, ctx.tree, 50), (0,))
        man = sorted(dot.glob("manifest-*.json"))[-1]
        shutil.copyfile(man, pf)
        ph = hashlib.sha256(pf.read_bytes()).hexdigest()
        man.unlink()
        man.symlink_to(pf)
        argv = cli_argv("uninstall", "--prefix", str(prefix), "--yes", "--json")
    else:
        dot.mkdir()
        j = dot / "journal.json"
        if "symlink" in kind:
            j.symlink_to(pf)
        else:
            os.link(pf, j)
    before = inst().snapshot_content(prefix)
    r = run_proc(argv, env, ctx.tree, 45)
    kept(pf, ph)
    d = hold14(r, True, (0, 1, 2), secs=35) or {}
    _user_files_kept(prefix)
    del d, before


TMPFS = {  # size of the tmpfs, bytes left free by a filler, whether it is remounted read-only, nr_inodes
    "full_64k_free0": ("64k", 0, False, None), "full_256k_free4k": ("256k", 4096, False, None),
    "full_1m_free50k": ("1m", 50_000, False, None), "full_4m_free300k": ("4m", 300_000, False, None),
    "full_16m_free_2m": ("16m", 2_000_000, False, None), "inodes_6": ("16m", None, False, 6),
    "inodes_12": ("16m", None, False, 12), "inodes_30": ("16m", None, False, 30),
    "readonly_empty": ("16m", None, True, None), "readonly_with_old": ("16m", None, True, None),
    "readonly_installed_reinstall": ("16m", None, True, None), "readonly_installed_uninstall": ("16m", None, True, None),
    "full_after_install_uninstall": ("16m", 0, False, None), "full_after_install_reinstall_replace": ("16m", 0, False, None),
}


def tmpfs_case(ctx: Ctx, key: str) -> None:
    if shutil.which("unshare") is None or os.geteuid() != 0:
        raise Skip("needs root and unshare")
    size, free, ro, inodes = TMPFS[key]
    env = install_env(ctx)
    a = archive(ctx)
    a91 = archive(ctx, 91800) if key.endswith("replace") else a
    prefix = ctx.work / "cuda"
    prefix.mkdir()
    before_dir, after_dir = ctx.work / "before", ctx.work / "after"
    q = shlex.quote
    inst_l = shlex.join(cli_argv("install", "--from", str(a), "--prefix", str(prefix), "--yes", "--json"))
    inst2 = shlex.join(cli_argv("install", "--from", str(a91), "--prefix", str(prefix), "--yes", "--json", "--replace"))
    unin = shlex.join(cli_argv("uninstall", "--prefix", str(prefix), "--yes", "--json"))
    opts = f"size={size}" + (f",nr_inodes={inodes}" if inodes else "")
    setup = [f"mount -t tmpfs -o {opts} tmpfs {q(str(prefix))}", f"mkdir -p {q(str(prefix))}/include",
             f"echo '/* the user'\"'\"'s own header */' > {q(str(prefix))}/include/mine.h"]
    if "with_old" in key or "installed" in key or key.startswith("full_after"):
        setup += [f"mkdir -p {q(str(prefix))}/lib64", f"printf \"an old copy of the user's\" > {q(str(prefix))}/lib64/libcudnn.so.9.1.0",
                  f"ln -s libcudnn.so.9.1.0 {q(str(prefix))}/lib64/libcudnn.so.9"]
    if "installed" in key or key.startswith("full_after"):
        setup.append(f"{inst_l} >/dev/null 2>&1 || true")
    if free is not None:
        setup.append(f"avail=$(( $(stat -f -c '%a*%S' {q(str(prefix))}) - {free} )); "
                     f"[ $avail -gt 0 ] && head -c $avail /dev/zero > {q(str(prefix))}/filler 2>/dev/null || true")
    if ro:
        setup.append(f"mount -o remount,ro {q(str(prefix))}")
    run_l = unin if key.endswith("uninstall") else (inst2 if key.endswith("replace") else inst_l)
    script = "; ".join(setup) + f"; mkdir -p {q(str(before_dir))}; cp -a {q(str(prefix))}/. {q(str(before_dir))}/; " \
             f"{run_l}; rc=$?; mkdir -p {q(str(after_dir))}; cp -a {q(str(prefix))}/. {q(str(after_dir))}/; exit $rc"
    r = run_proc(["unshare", "-m", "--propagation", "private", "sh", "-c", script], env, ctx.tree, 55)
    d = hold14(r, True, (0, 1, 2), secs=40) or {}
    expect(after_dir.is_dir(), "harness: the prefix was not copied out")
    expect((after_dir / "include" / "mine.h").is_file(), "the user's own header was lost")
    complete = installed_as_recorded(ctx, after_dir)
    if r.rc == 0 and not key.endswith("uninstall"):
        expect(complete == [], f"exit 0 but not the recorded install: {complete}")
    if r.rc != 0:
        same = user_view(snapshot_tree(before_dir)) == user_view(snapshot_tree(after_dir))
        expect(same or complete == [], f"exit {r.rc} and the prefix changed: {json.dumps(d)[:300]}")


family("instdmg", "journal_cut", {f"k{k:02d}": k for k in range(26)}, journal_cut_case, limit=70)
family("instdmg", "lock", {k: k for k in LOCK_KINDS}, lock_case, limit=70)
family("instdmg", "state_link", {k: k for k in STATE_LINKS}, state_link_case, limit=70)


JOURNAL_TAMPER = ("dest_dotdot", "dest_absolute", "created_folder_dotdot", "backup_dotdot", "source_absolute",
                  "dest_through_link")


def journal_tamper_case(ctx: Ctx, kind: str) -> None:
    """The journal of a killed install edited (a damaged disk, a hand): its paths name a file of the user's outside
    the prefix. The next run's roll-back must stay inside the prefix."""
    env, prefix, argv, before = _killed_install(ctx)
    pf, ph = precious(ctx)
    j = prefix / ".cudnn-doctor" / "journal.json"
    data = json.loads(j.read_text())
    ops = data.get("operations") or []
    rel = os.path.relpath(pf, prefix)
    if kind == "dest_dotdot" and ops:
        ops[0]["dest"] = rel
        ops[0]["existed"] = False
    elif kind == "dest_absolute" and ops:
        ops[0]["dest"] = str(pf)
        ops[0]["existed"] = False
    elif kind == "created_folder_dotdot":
        data["created_folders"] = [os.path.relpath(pf.parent, prefix)] + list(data.get("created_folders") or [])
    elif kind == "backup_dotdot" and ops:
        ops[0]["existed"] = True
        ops[0]["backup"] = rel
    elif kind == "source_absolute" and ops:
        ops[-1]["source"] = str(pf)
    elif kind == "dest_through_link" and ops:
        (prefix / "lib64" / "outlink").symlink_to(pf.parent)
        ops[0]["dest"] = "lib64/outlink/keep.txt"
        ops[0]["existed"] = False
    j.write_text(json.dumps(data, indent=1))
    r = run_proc(argv + ["--json"], env, ctx.tree, 50)
    kept(pf, ph)
    expect(pf.parent.is_dir(), "a folder outside the prefix was removed")
    hold14(r, True, (0, 1, 2), secs=35)
    _user_files_kept(prefix)


family("instdmg", "journal_tamper", {k: k for k in JOURNAL_TAMPER}, journal_tamper_case, limit=70)
family("instdmg", "tmpfs", {k: k for k in TMPFS}, tmpfs_case, limit=80)


# ====================================================================================================================
# uninst: uninstall of an install that is half there

UNINST = ("lib_deleted", "lib_now_folder", "lib_now_fifo", "lib_now_loop", "lib_link_to_user_file",
          "header_changed", "header_changed_force", "backup_folder_deleted", "backup_of_old_deleted",
          "backup_of_old_cut", "manifest_cut_half", "manifest_deleted", "manifest_fifo", "manifest_devzero",
          "two_manifests", "lib64_link_outside", "dot_folder_link_outside", "lib64_deleted", "user_file_added",
          "soname_link_retargeted", "twice", "dry_run_then_real", "prefix_via_symlink", "manifest_nan",
          "manifest_path_dotdot", "manifest_path_absolute", "manifest_created_folder_dotdot",
          "manifest_path_inner_dotdot")


def uninst_case(ctx: Ctx, kind: str) -> None:
    env = install_env(ctx)
    a = archive(ctx)
    prefix = prefix_with_old(ctx)
    sane(run_proc(cli_argv("install", "--from", str(a), "--prefix", str(prefix), "--yes"), env, ctx.tree, 50), (0,))
    dot = prefix / ".cudnn-doctor"
    manifests = sorted(dot.glob("manifest-*.json"))
    expect(manifests, "harness: no manifest after the install")
    man = manifests[-1]
    backups = sorted(dot.glob("backup-*"))
    lib = prefix / "lib64" / "libcudnn.so.9.19.0"
    pf, ph = precious(ctx)
    outdir = ctx.work / "outside-dir"
    outdir.mkdir()
    (outdir / "libcudnn.so.9.19.0").write_text("the user's unrelated file of that name\n")
    oh = hashlib.sha256((outdir / "libcudnn.so.9.19.0").read_bytes()).hexdigest()
    user_added = prefix / "lib64" / "my_plugin.so"
    target = str(prefix)
    force = []
    if kind == "lib_deleted":
        lib.unlink()
    elif kind == "lib_now_folder":
        lib.unlink(); lib.mkdir(); (lib / "inside").write_text("x")
    elif kind == "lib_now_fifo":
        lib.unlink(); os.mkfifo(lib)
    elif kind == "lib_now_loop":
        lib.unlink(); lib.symlink_to(lib.name)
    elif kind == "lib_link_to_user_file":
        lib.unlink(); lib.symlink_to(pf)
    elif kind in ("header_changed", "header_changed_force"):
        (prefix / "include" / "cudnn.h").write_text("/* the user edited this */\n")
        force = ["--force"] if kind.endswith("force") else []
    elif kind == "backup_folder_deleted":
        for b in backups:
            shutil.rmtree(b)
    elif kind in ("backup_of_old_deleted", "backup_of_old_cut"):
        for b in backups:
            for f in b.rglob("libcudnn.so.9.1.0"):
                if kind.endswith("deleted"):
                    f.unlink()
                else:
                    f.write_bytes(f.read_bytes()[:5])
    elif kind == "manifest_cut_half":
        man.write_bytes(man.read_bytes()[: man.stat().st_size // 2])
    elif kind == "manifest_deleted":
        man.unlink()
    elif kind == "manifest_fifo":
        man.unlink(); os.mkfifo(man)
    elif kind == "manifest_devzero":
        man.unlink(); man.symlink_to("/dev/zero")
    elif kind == "manifest_nan":
        man.write_text(man.read_text().replace('"version"', '"size_nan": NaN, "version"', 1))
    elif kind == "two_manifests":
        shutil.copyfile(man, dot / man.name.replace("manifest-2", "manifest-3"))
    elif kind == "lib64_link_outside":
        shutil.rmtree(prefix / "lib64"); (prefix / "lib64").symlink_to(outdir)
    elif kind == "dot_folder_link_outside":
        moved = ctx.work / "moved-dot"
        shutil.move(str(dot), moved); dot.symlink_to(moved)
    elif kind == "lib64_deleted":
        shutil.rmtree(prefix / "lib64")
    elif kind == "user_file_added":
        user_added.write_text("the user's plugin\n")
    elif kind == "soname_link_retargeted":
        link = prefix / "lib64" / "libcudnn.so.9"
        link.unlink(); link.symlink_to(pf)
    elif kind.startswith("manifest_") and kind in ("manifest_path_dotdot", "manifest_path_absolute",
                                                   "manifest_created_folder_dotdot", "manifest_path_inner_dotdot"):
        md = json.loads(man.read_text())
        entry = {"path": os.path.relpath(pf, prefix), "kind": "file", "sha256": ph, "size": pf.stat().st_size,
                 "mode": 420, "target": None}
        if kind == "manifest_path_absolute":
            entry["path"] = str(pf)
        elif kind == "manifest_path_inner_dotdot":
            entry["path"] = "lib64/../" + os.path.relpath(pf, prefix)
        if kind == "manifest_created_folder_dotdot":
            md["created_folders"] = [os.path.relpath(pf.parent, prefix)] + list(md.get("created_folders") or [])
        else:
            md["files"].append(entry)
        man.write_text(json.dumps(md, indent=1))
    elif kind == "prefix_via_symlink":
        alias = ctx.work / "alias"
        alias.symlink_to(prefix)
        target = str(alias)
    un = cli_argv("uninstall", "--prefix", target, "--yes", "--json", *force)
    if kind == "twice":
        sane(run_proc(un, env, ctx.tree, 45), (0, 1, 2))
    if kind == "dry_run_then_real":
        sane(run_proc(cli_argv("uninstall", "--prefix", target, "--dry-run", "--json"), env, ctx.tree, 45), (0, 1, 2))
    r = run_proc(un, env, ctx.tree, 45)
    d = hold14(r, True, (0, 1, 2), secs=35) or {}
    kept(pf, ph)
    expect(pf.parent.is_dir(), "a folder outside the prefix was removed")
    expect((outdir / "libcudnn.so.9.19.0").is_file() and hashlib.sha256(
        (outdir / "libcudnn.so.9.19.0").read_bytes()).hexdigest() == oh, "a file outside the prefix was removed or changed")
    if prefix.is_dir() and (prefix / "include").is_dir():
        _user_files_kept(prefix)
    if kind == "user_file_added":
        expect(user_added.is_file(), "the user's own file in lib64 was removed")
    if kind == "header_changed":
        expect((prefix / "include" / "cudnn.h").is_file() and "edited" in (prefix / "include" / "cudnn.h").read_text(),
               "a file the user changed since was removed without --force")
    old = prefix / "lib64" / "libcudnn.so.9.1.0"
    restored = old.is_file() and not old.is_symlink() and old.read_bytes() == b"an old copy of the user's"
    if r.rc == 0 and kind not in ("twice",):
        expect(restored or re.search(r"backup|restor|missing|not there", json.dumps(d), re.I),
               f"exit 0, the user's old cuDNN not restored, and nothing said: {json.dumps(d)[:300]}")


family("uninst", "half", {k: k for k in UNINST}, uninst_case, limit=70)


# ====================================================================================================================
# imagearc: hostile `docker save` archives and OCI layouts not tried before

def _docker_tar(path: Path, members: list) -> Path:
    """MEMBERS: (name, bytes) or (name, TarInfo-mutator, bytes)."""
    with tarfile.open(path, "w", format=tarfile.PAX_FORMAT) as t:
        for mem in members:
            name, data = mem[0], mem[-1]
            info = tarfile.TarInfo(name)
            info.size = len(data) if data is not None else 0
            if len(mem) == 3:
                mem[1](info)
            t.addfile(info, io.BytesIO(data) if data is not None and info.isfile() else None)
    return path


def _docker_parts() -> tuple[list, str, str, bytes]:
    i = img()
    config, layers = _good_parts()
    blob, media = layers[0]
    plain = gzip.decompress(blob) if media == i.LAYER_GZIP else blob
    lid = hashlib.sha256(plain).hexdigest()
    cname = hashlib.sha256(config).hexdigest() + ".json"
    members = [(f"{lid}/layer.tar", plain), (f"{lid}/VERSION", b"1.0"), (cname, config)]
    return members, cname, f"{lid}/layer.tar", plain


def _man(cname: str, layer: str, **over: object) -> bytes:
    m = {"Config": cname, "RepoTags": ["app:1"], "Layers": [layer]}
    m.update(over)
    return json.dumps([m]).encode()


def _sym(target: str) -> Callable:
    def f(info: tarfile.TarInfo) -> None:
        info.type, info.linkname, info.size = tarfile.SYMTYPE, target, 0
    return f


def _hard(target: str) -> Callable:
    def f(info: tarfile.TarInfo) -> None:
        info.type, info.linkname, info.size = tarfile.LNKTYPE, target, 0
    return f


def _dirent(info: tarfile.TarInfo) -> None:
    info.type, info.size = tarfile.DIRTYPE, 0


def image_arc_case(ctx: Ctx, kind: str) -> None:
    members, cname, lname, plain = _docker_parts()
    p = ctx.work / "image.tar"
    good_man = _man(cname, lname)
    if kind == "layers_dotdot":
        _docker_tar(p, members + [("manifest.json", _man(cname, "../../../../etc/passwd"))])
    elif kind == "layers_absolute":
        _docker_tar(p, members + [("manifest.json", _man(cname, "/etc/passwd"))])
    elif kind == "config_dotdot":
        _docker_tar(p, members + [("manifest.json", _man("../../../etc/passwd", lname))])
    elif kind == "manifest_symlink_passwd":
        _docker_tar(p, members + [("manifest.json", _sym("/etc/passwd"), None)])
    elif kind == "manifest_hardlink_passwd":
        _docker_tar(p, members + [("manifest.json", _hard("/etc/passwd"), None)])
    elif kind == "config_symlink_passwd":
        _docker_tar(p, [m for m in members if m[0] != cname] + [(cname, _sym("/etc/passwd"), None),
                                                                ("manifest.json", good_man)])
    elif kind == "layer_symlink_loop":
        _docker_tar(p, [m for m in members if m[0] != lname] + [(lname, _sym("layer.tar"), None),
                                                                ("manifest.json", good_man)])
    elif kind == "layer_hardlink_to_later_member":
        _docker_tar(p, [m for m in members if m[0] != lname] + [(lname, _hard("zzz/later.tar"), None),
                                                                ("manifest.json", good_man), ("zzz/later.tar", plain)])
    elif kind == "two_manifests":
        _docker_tar(p, members + [("manifest.json", good_man), ("manifest.json", _man(cname, "nowhere/layer.tar"))])
    elif kind == "manifest_100k_entries":
        _docker_tar(p, members + [("manifest.json", json.dumps(
            [{"Config": cname, "RepoTags": [f"app:{n}"], "Layers": [lname]} for n in range(100_000)]).encode())])
    elif kind == "manifest_50k_deep":
        _docker_tar(p, members + [("manifest.json", b"[" * 50_000 + b"]" * 50_000)])
    elif kind == "repotags_escapes":
        _docker_tar(p, members + [("manifest.json", _man(cname, lname, RepoTags=[
            "app\x1b]0;owned\x07:1\n::error::made by the tag\u202e"]))])
    elif kind == "repotags_10mb":
        _docker_tar(p, members + [("manifest.json", _man(cname, lname, RepoTags=["a" * 10_000_000 + ":1"]))])
    elif kind == "manifest_object":
        _docker_tar(p, members + [("manifest.json", b'{"Config": "x"}')])
    elif kind == "manifest_empty_list":
        _docker_tar(p, members + [("manifest.json", b"[]")])
    elif kind == "manifest_nonutf8":
        _docker_tar(p, members + [("manifest.json", b'[{"Config": "\xff\xfe.json", "RepoTags": ["\xc0\xaf"], "Layers": []}]')])
    elif kind == "manifest_utf16":
        _docker_tar(p, members + [("manifest.json", good_man.decode().encode("utf-16"))])
    elif kind in ("gzip_whole", "gzip_twice"):
        raw = _docker_tar(ctx.work / "plain.tar", members + [("manifest.json", good_man)]).read_bytes()
        data = gzip.compress(raw, 1)
        if kind == "gzip_twice":
            data = gzip.compress(data, 1)
        p.write_bytes(data)
    elif kind == "tar_in_tar":
        raw = _docker_tar(ctx.work / "plain.tar", members + [("manifest.json", good_man)]).read_bytes()
        _docker_tar(p, [("image.tar", raw)])
    elif kind == "layer_nonutf8_pax_path":
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as t:
            info = tarfile.TarInfo("usr/lib/x")
            info.pax_headers = {"path": "usr/\udcff\udcfe/libcudnn.so.9"}
            data = b"x" * 10
            info.size = len(data)
            t.addfile(info, io.BytesIO(data))
        ms = [m for m in members if m[0] != lname] + [(lname, buf.getvalue()), ("manifest.json", good_man)]
        _docker_tar(p, ms)
    elif kind == "layer_root_whiteouts":
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w") as t:
            for n in (".wh..wh..opq", "../.wh.etc", "usr/local/cuda/.wh.version.json", ".wh.usr"):
                info = tarfile.TarInfo(n)
                t.addfile(info, io.BytesIO(b""))
        _docker_tar(p, [m for m in members if m[0] != lname] + [(lname, buf.getvalue()), ("manifest.json", good_man)])
    elif kind in ("config_env_100k", "config_env_escapes", "labels_5mb"):
        cfg = json.loads([m for m in members if m[0] == cname][0][1])
        if kind == "config_env_100k":
            cfg["config"]["Env"] = [f"V{n}=x" for n in range(100_000)] + ["CUDA_VERSION=12.8.1"]
        elif kind == "config_env_escapes":
            cfg["config"]["Env"] = ["CUDA_VERSION=12.8\x1b[2J\n::error::x\u202e", "LD_LIBRARY_PATH=$(id)`id`\x85",
                                    "CUDNN_VERSION=\udcff9.1"]
        else:
            cfg["config"]["Labels"] = {"big": "l" * 5_000_000, "esc\x1b]0;x\x07": "v\u2028"}
        cb = json.dumps(cfg).encode()  # a lone surrogate travels as a JSON escape (valid JSON text)
        cn2 = hashlib.sha256(cb).hexdigest() + ".json"
        _docker_tar(p, [m for m in members if m[0] != cname] + [(cn2, cb), ("manifest.json", _man(cn2, lname))])
    elif kind == "repositories_garbage":
        _docker_tar(p, members + [("repositories", _bin(1420, 1_000_000)), ("manifest.json", good_man)])
    elif kind == "member_path_4000":
        _docker_tar(p, members + [("d/" * 2000 + "x", b"x"), ("manifest.json", good_man)])
    elif kind == "layer_member_missing":
        _docker_tar(p, [m for m in members if m[0] != lname] + [("manifest.json", good_man)])
    elif kind == "config_is_folder":
        _docker_tar(p, [m for m in members if m[0] != cname] + [(cname, _dirent, None), ("manifest.json", good_man)])
    elif kind == "oci_index_chain_200":
        i = img()
        config, layers = _good_parts()
        man = i.manifest_of(config, layers)
        blobs = [config, man, *(b for b, _ in layers)]
        ref = {"mediaType": i.MANIFEST, "digest": i.digest(man), "size": len(man)}
        for _ in range(200):
            nested = json.dumps({"schemaVersion": 2, "mediaType": i.INDEX, "manifests": [ref]}).encode()
            blobs.append(nested)
            ref = {"mediaType": i.INDEX, "digest": i.digest(nested), "size": len(nested)}
        folder = ctx.work / "oci"
        (folder / "blobs" / "sha256").mkdir(parents=True)
        for b in blobs:
            (folder / "blobs" / "sha256" / i.digest(b).split(":")[1]).write_bytes(b)
        (folder / "oci-layout").write_text('{"imageLayoutVersion": "1.0.0"}')
        (folder / "index.json").write_text(json.dumps({"schemaVersion": 2, "mediaType": i.INDEX, "manifests": [ref]}))
        p = folder
    elif kind == "oci_index_10000_platforms":
        i = img()
        def idx(o: dict) -> None:
            first = o["manifests"][0]
            o["manifests"] = [{**first, "platform": {"architecture": f"arch{n}", "os": "linux"}} for n in range(10_000)]
        p = raw_oci(ctx, idx=idx)
    judge_image(ctx, str(p), (0, 1, 2), seconds=30, mem_mb=600)


IMAGE_KINDS = ("layers_dotdot", "layers_absolute", "config_dotdot", "manifest_symlink_passwd",
               "manifest_hardlink_passwd", "config_symlink_passwd", "layer_symlink_loop",
               "layer_hardlink_to_later_member", "two_manifests", "manifest_100k_entries", "manifest_50k_deep",
               "repotags_escapes", "repotags_10mb", "manifest_object", "manifest_empty_list", "manifest_nonutf8",
               "manifest_utf16", "gzip_whole", "gzip_twice", "tar_in_tar", "layer_nonutf8_pax_path",
               "layer_root_whiteouts", "config_env_100k", "config_env_escapes", "labels_5mb",
               "repositories_garbage", "member_path_4000", "layer_member_missing", "config_is_folder",
               "oci_index_chain_200", "oci_index_10000_platforms")
family("imagearc", "docker", {k: k for k in IMAGE_KINDS}, image_arc_case, limit=80)


# ====================================================================================================================
# fleetans: `fleet run --slurm` (a fake srun) and `fleet merge` of nodes whose answers are hostile

FLEET_SRUN = r"""#!/bin/sh
out=""
for a in "$@"; do case "$a" in --output=*) out="${a#--output=}";; esac; done
dir=$(dirname "$out")
exec sh "$REDTEAM_NODES" "$dir"
"""


def _good_report(m: M) -> dict:
    r = m.run("check", "--json", timeout=40)
    try:
        return json.loads(r.out)
    except ValueError:
        return {"schema": "cudnn-doctor/report/1", "findings": [], "status": "ok"}


FLEET_KINDS = {  # kind: (good nodes, bad content maker or None, whether the bad node must be named failed)
    "huge_30mb": "ok", "nonutf8_values": "either", "one_node_hangs": "failed", "one_node_trickles": "failed",
    "same_host_50": "ok", "schema_report_2": "failed", "schema_report_0": "failed", "tool_99_types_changed": "failed",
    "error_object": "failed", "plan_object": "failed", "findings_strings": "failed", "two_objects": "failed",
    "trailing_garbage": "failed", "leading_noise": "either", "truncated_half": "failed", "whitespace_only": "failed",
    "deep_100k": "failed", "int_2_64": "either", "hostname_10mb": "either", "ansi_hostname": "ok",
    "top_level_array": "failed", "json_null": "failed", "crlf_pretty": "ok", "gpus_100k": "either",
    "exit_code_lies": "either", "status_nan_string": "either", "duplicate_keys_conflict": "either",
    "bidi_driver": "ok", "surrogate_escape_strings": "either", "nested_findings_1000": "either",
    "srun_ignores_sigint": "either", "daemon_holds_srun_output": "ok",
}


def fleet_case(ctx: Ctx, kind: str) -> None:
    m = healthy(ctx)
    good = _good_report(m)
    gb = json.dumps(good, indent=2).encode()
    bad: bytes | None = None
    script_extra = ""
    g2 = json.loads(json.dumps(good))
    if kind == "huge_30mb":
        g2.setdefault("findings", [])
        g2["padding"] = ["p" * 1000] * 30_000
        bad = json.dumps(g2).encode()
    elif kind == "nonutf8_values":
        bad = gb.replace(b'"schema"', b'"odd": "\xff\xfe\xc0\xaf", "schema"', 1)
    elif kind == "one_node_hangs":
        script_extra = 'printf \'{"schema": "cudnn-doctor/report/1", \' > "$1/n3.json"; sleep 600\n'
    elif kind == "srun_ignores_sigint":
        script_extra = "trap '' INT TERM; sleep 600; sleep 600\n"
    elif kind == "daemon_holds_srun_output":
        script_extra = "(setsid sleep 600 &)\n"
    elif kind == "one_node_trickles":
        script_extra = 'while :; do printf " " >> "$1/n3.json"; sleep 0.3; done\n'
    elif kind == "same_host_50":
        script_extra = "i=0; while [ $i -lt 50 ]; do cp \"$1/n1.json\" \"$1/d$i.json\"; i=$((i+1)); done\n"
    elif kind == "schema_report_2":
        g2["schema"] = "cudnn-doctor/report/2"
        bad = json.dumps(g2).encode()
    elif kind == "schema_report_0":
        g2["schema"] = "cudnn-doctor/report/0"
        bad = json.dumps(g2).encode()
    elif kind == "tool_99_types_changed":
        g2["tool"] = {"name": "cudnn-doctor", "version": "99.0.0"}
        for k in list(g2):
            if k not in ("schema", "tool"):
                g2[k] = {"v": 1} if isinstance(g2[k], list) else [g2[k]]
        bad = json.dumps(g2).encode()
    elif kind == "error_object":
        bad = json.dumps({"schema": "cudnn-doctor/error/1", "command": "check", "error": {
            "code": "CD009", "title": "x", "message": "ulimit", "fix": "y"}, "exit_code": 2}).encode()
    elif kind == "plan_object":
        bad = json.dumps({"schema": "cudnn-doctor/plan/1", "actions": [], "findings": []}).encode()
    elif kind == "findings_strings":
        g2["findings"] = ["CD301", "CD302"]
        bad = json.dumps(g2).encode()
    elif kind == "two_objects":
        bad = gb + b"\n" + gb
    elif kind == "trailing_garbage":
        bad = gb + b"\n\x1b[2Jgarbage \xff"
    elif kind == "leading_noise":
        bad = b"a library says hello\n" + gb
    elif kind == "truncated_half":
        bad = gb[: len(gb) // 2]
    elif kind == "whitespace_only":
        bad = b" \n\t\n" * 100
    elif kind == "deep_100k":
        bad = b'{"schema": "cudnn-doctor/report/1", "x": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    elif kind == "int_2_64":
        bad = gb.replace(b'"schema"', b'"big": 18446744073709551617, "schema"', 1)
    elif kind == "hostname_10mb":
        g2["host"] = "h" * 10_000_000
        bad = json.dumps(g2).encode()
    elif kind == "ansi_hostname":
        g2["host"] = "node\x1b]0;owned\x07\x1b[2J\n::error::x"
        bad = json.dumps(g2).encode()
    elif kind == "top_level_array":
        bad = b"[" + gb + b"]"
    elif kind == "json_null":
        bad = b"null"
    elif kind == "crlf_pretty":
        bad = gb.replace(b"\n", b"\r\n")
    elif kind == "gpus_100k":
        g2["gpus"] = [{"index": n, "name": f"GPU {n}"} for n in range(100_000)]
        bad = json.dumps(g2).encode()
    elif kind == "exit_code_lies":
        g2["exit_code"] = -7
        g2["status"] = "\u202eok"
        bad = json.dumps(g2).encode()
    elif kind == "status_nan_string":
        g2["status"] = "NaN"
        bad = json.dumps(g2).replace('"NaN"', "NaN").encode()
    elif kind == "duplicate_keys_conflict":
        bad = gb.replace(b'"schema"', b'"findings": 7, "schema": "cudnn-doctor/plan/1", "schema"', 1)
    elif kind == "bidi_driver":
        g2["driver"] = {"version": "580.159.04\u202e\u2066x"} if not isinstance(g2.get("driver"), dict) else \
            {**g2["driver"], "version": "580.159.04\u202e\u2066x"}
        bad = json.dumps(g2).encode()
    elif kind == "surrogate_escape_strings":
        bad = gb.replace(b'"schema"', b'"odd": "\\udcff\\ud800x", "schema"', 1)
    elif kind == "nested_findings_1000":
        g2["findings"] = ["@NESTED@"]
        nested = '{"code": "CD301", "detail": ' * 1000 + '{"code": "CD301"}' + "}" * 1000
        bad = json.dumps(g2).replace('"@NESTED@"', nested).encode()
    (m.base / "good.json").write_bytes(gb)
    if bad is not None:
        (m.base / "bad.json").write_bytes(bad)
    nodes = 'cp "$REDTEAM_GOOD" "$1/n1.json"; cp "$REDTEAM_GOOD" "$1/n2.json"\n'
    if bad is not None:
        nodes += 'cp "$REDTEAM_BAD" "$1/n3.json"\n'
    nodes += script_extra
    (m.base / "nodes.sh").write_text(nodes)
    bin_ = m.base / "bin"
    scripted(bin_ / "srun", FLEET_SRUN)
    scripted(bin_ / "scancel", "#!/bin/sh\nexit 0\n")
    keep = m.base / "keep"
    env = {"PATH": f"{bin_}:{m.env['PATH']}", "REDTEAM_NODES": str(m.base / "nodes.sh"),
           "REDTEAM_GOOD": str(m.base / "good.json"), "REDTEAM_BAD": str(m.base / "bad.json")}
    r = run_proc(m.argv("fleet", "run", "--slurm", "--json", "--deadline", "6", "--keep", str(keep)),
                 {**m.env, **env}, m.cwd, 50, preexec=cap_as(3072))
    left = [x for x in leftovers_of(m.base) if "sleep" in x or "sh " in x]
    reap(m.base)
    d = hold14(r, True, (0, 1, 2), secs=25, out_max=2 << 20) or {}
    expect(not left, f"srun or its nodes left running: {left[:2]}")
    want = FLEET_KINDS[kind]
    if r.rc != 2:
        failed = d.get("failed") or []
        read_codes = kind == "findings_strings" and "CD301" in json.dumps(
            [o for x in d.get("drift") or [] if x.get("field") == "findings" for o in x.get("outliers") or []])
        if want == "failed" and not read_codes:
            expect(failed and r.rc == 1, f"a node that gave no usable report is not named failed: "
                                         f"failed={json.dumps(failed)[:300]} exit {r.rc}")
    t = run_proc(m.argv("fleet", "merge", str(keep if keep.is_dir() else m.base / "good.json"),
                        *( [str(m.base / "bad.json")] if bad is not None and not keep.is_dir() else [])),
                 m.env, m.cwd, 45, preexec=cap_as(3072))
    hold14(t, False, (0, 1, 2), secs=30, out_max=2 << 20)
    expect(not re.search(r"^::(error|warning)", t.out, re.M), "a workflow command made by a node's answer")


family("fleetans", "node", {k: k for k in FLEET_KINDS}, fleet_case, limit=80)





# ####################################################################################################################
# ROUND FIFTEEN: round fourteen's classes above are dropped (their helpers stay); the eight classes below are new.
CASES.clear()
CLASSES.clear()
CLASSES.update({
    "mirrordir": "install --version --mirror FOLDER (the air-gapped layout) whose archive, entry or manifest is hostile",
    "fleetdup": "fleet merge of nodes whose identities collide or are no name (case, NFD, zero-width, types, paths)",
    "shelldet": "--show-completion/--install-completion without a shell: hostile SHELL values and parent programs",
    "project": "check/fix --project: hostile Maven poms (entities, XXE, depth, modules) and Gradle builds",
    "compatopt": "compat --cuda/--cudnn/--driver/--compute-capability in shapes of real-world version strings",
    "explainlist": "explain --list PREFIX and explain CODE --offline-only with hostile code shapes",
    "ptyterm": "commands on a real terminal (pty) of absurd sizes, and NO_COLOR",
    "signals2": "SIGINT/SIGTERM/SIGHUP at seeded instants during commands round thirteen did not signal",
})
R15_PROBLEMS = ("CD201", "CD310")


def hold15(r: R, want_json: bool, rcs: tuple = (0, 1), secs: float = 40, out_max: int | None = None,
           err_max: int | None = None) -> dict | None:
    return hold14(r, want_json, rcs, secs, out_max, err_max)


def no_passwd(r: R) -> None:
    expect("root:x:0:0" not in r.out + r.err, "a line of /etc/passwd in the output")


def no_workflow(text: str) -> None:
    expect(not re.search(r"^::(error|warning|notice|add-mask|stop-commands)", text, re.M),
           "a workflow command made by a hostile value")


# ==================================================================================================================== mirrordir
def _mirror_base(ctx: Ctx) -> tuple[Path, Path, dict]:
    a = archive(ctx)
    folder = ctx.work / "mirror"
    (folder / "cudnn" / "linux-x86_64").mkdir(parents=True)
    shutil.copyfile(a, folder / "cudnn" / "linux-x86_64" / a.name)
    entry = {"relative_path": f"cudnn/linux-x86_64/{a.name}", "sha256": hashlib.sha256(a.read_bytes()).hexdigest(),
             "size": str(a.stat().st_size)}
    man = {"release_label": "9.19.0", "release_product": "cudnn",
           "cudnn": {"name": "NVIDIA CUDA Deep Neural Network library", "version": "9.19.0.56", "cuda_variant": ["12"],
                     "linux-x86_64": {"cuda12": entry}}}
    return folder, folder / "cudnn" / "linux-x86_64" / a.name, man


MIRROR_KINDS = (
    # the archive the entry names
    "archive_link_to_users_file", "archive_fifo", "archive_dev_zero", "archive_dev_zero_size_1t", "archive_sparse_2g",
    "archive_folder", "archive_loop", "archive_dangling", "archive_cut_half", "archive_proc_fd0",
    # the entry's relative_path
    "rel_dotdot_users_file", "rel_absolute_passwd", "rel_file_url", "rel_escapes", "rel_empty", "rel_dot",
    "rel_folder_slash", "rel_backslashes", "rel_1mb", "rel_dotdot_real_archive", "rel_proc_environ",
    # the manifest file
    "man_dev_zero", "man_urandom", "man_sparse_4g", "man_folder", "man_utf16", "man_bom", "man_deep_100k",
    "man_size_5000_digits", "man_dup_keys", "man_nan_size", "man_version_escapes", "man_name_escapes",
    "man_version_newline_workflow", "man_version_1mb", "man_version_number", "man_cuda_variant_escapes",
    "man_label_mismatch", "man_version_other_major", "mirror_name_escapes",
    # the folder given
    "mirror_is_file", "mirror_is_fifo", "mirror_dev_null", "mirror_relative", "mirror_trailing_newline",
    "mirror_file_url", "mirror_file_url_other_host",
    # a partial version against a listing
    "partial_fifo_listed", "partial_5000_listed",
)


def mirror_case(ctx: Ctx, kind: str) -> None:
    folder, arch, man = _mirror_base(ctx)
    m = ctx.machine()
    pfile, phash = precious(ctx)
    entry = man["cudnn"]["linux-x86_64"]["cuda12"]
    served_real = True
    mirror_arg, version = str(folder), "9.19.0"
    man_bytes: bytes | None = None
    mpath = folder / "redistrib_9.19.0.json"
    if kind.startswith("archive_"):
        served_real = False
        k = kind[len("archive_"):]
        if k == "link_to_users_file":
            arch.unlink(); arch.symlink_to(pfile)
        elif k == "fifo":
            arch.unlink(); os.mkfifo(arch)
        elif k in ("dev_zero", "dev_zero_size_1t"):
            arch.unlink(); arch.symlink_to("/dev/zero")
            if k == "dev_zero_size_1t":
                entry["size"] = str(1 << 40)
        elif k == "sparse_2g":  # the entry keeps the real archive's size and sha256
            arch.unlink()
            with open(arch, "wb") as f:
                f.truncate(2 << 30)
        elif k == "folder":
            arch.unlink(); arch.mkdir(); (arch / "x").write_text("x")
        elif k == "loop":
            arch.unlink(); arch.symlink_to(arch.name)
        elif k == "dangling":
            arch.unlink(); arch.symlink_to(ctx.work / "nowhere.tar.xz")
        elif k == "cut_half":
            data = arch.read_bytes(); arch.write_bytes(data[: len(data) // 2])
        elif k == "proc_fd0":
            arch.unlink(); arch.symlink_to("/proc/self/fd/0")
    elif kind.startswith("rel_"):
        k = kind[len("rel_"):]
        served_real = k == "dotdot_real_archive"
        rel = {"dotdot_users_file": os.path.relpath(pfile, folder), "absolute_passwd": "/etc/passwd",
               "file_url": "file:///etc/passwd", "escapes": "cudnn/\x1b]52;c;Zm9v\x07\x1b[2J\nlinux/\u202ea.tar.xz",
               "empty": "", "dot": ".", "folder_slash": "cudnn/linux-x86_64/",
               "backslashes": "cudnn\\linux-x86_64\\" + arch.name, "1mb": "cudnn/" + "a" * (1 << 20) + ".tar.xz",
               "proc_environ": "../" * 40 + "proc/self/environ"}.get(k)
        if k == "dotdot_real_archive":
            outside = ctx.work / "elsewhere"
            outside.mkdir()
            shutil.copyfile(arch, outside / arch.name)
            rel = os.path.relpath(outside / arch.name, folder)
        entry["relative_path"] = rel
    elif kind.startswith("man_"):
        served_real = False
        k = kind[len("man_"):]
        if k in ("dev_zero", "urandom", "sparse_4g", "folder"):
            hostile_file(mpath, {"dev_zero": "dev_zero", "urandom": "dev_urandom", "sparse_4g": "sparse_4g",
                                 "folder": "folder"}[k])
            man_bytes = b""
        elif k == "utf16":
            man_bytes = json.dumps(man).encode("utf-16")
        elif k == "bom":
            man_bytes = b"\xef\xbb\xbf" + json.dumps(man).encode()
            served_real = True
        elif k == "deep_100k":
            man_bytes = json.dumps(man).replace('"release_label"', '"x": ' + "[" * 100000 + "]" * 100000
                                                + ', "release_label"', 1).encode()
        elif k == "size_5000_digits":
            entry["size"] = "9" * 5000
        elif k == "dup_keys":  # the real entry is the last of the two (json's last one wins): exit 0 may be right
            served_real = True
            txt = json.dumps(man)
            man_bytes = txt.replace('"linux-x86_64": {', '"linux-x86_64": {"cuda12": {"relative_path": '
                                    '"../../../../etc/passwd", "sha256": "' + "0" * 64 + '", "size": "10"}, ', 1).encode()
        elif k in ("version_escapes", "name_escapes", "version_newline_workflow", "version_1mb", "version_number",
                   "cuda_variant_escapes", "label_mismatch", "version_other_major"):
            # the entry still names the real archive: exit 0 is allowed (what is judged is the output), but for a
            # release other than the one asked for (8.9.7.29 in redistrib_9.19.0.json for --version 9.19.0)
            served_real = k != "version_other_major"
            c = man["cudnn"]
            if k == "version_escapes":
                c["version"] = "9.19.0.56\x1b]52;c;Zm9v\x07\x1b[2J\u202e\x9b31m"
            elif k == "name_escapes":
                c["name"] = "cuDNN\x1b[2J\r[ok] all good\n::error::owned"
            elif k == "version_newline_workflow":
                c["version"] = "9.19.0.56\n::error::owned\n$(touch MARK)"
            elif k == "version_1mb":
                c["version"] = "9.19.0." + "5" * (1 << 20)
            elif k == "version_number":
                c["version"] = 9.19
            elif k == "cuda_variant_escapes":
                c["cuda_variant"] = ["12\x1b[2J", "13\n::error::owned"]
            elif k == "label_mismatch":
                man["release_label"] = "9.18.0"
            elif k == "version_other_major":
                c["version"] = "8.9.7.29"
        elif k == "nan_size":
            man_bytes = json.dumps(man).replace(f'"size": "{entry["size"]}"', '"size": NaN').encode()
    elif kind.startswith("mirror_"):
        k = kind[len("mirror_"):]
        served_real = k in ("relative", "file_url", "trailing_newline", "name_escapes")
        if k == "is_file":
            mirror_arg = str(arch)
        elif k == "is_fifo":
            f = ctx.work / "mirror-fifo"
            os.mkfifo(f)
            mirror_arg = str(f)
        elif k == "dev_null":
            mirror_arg = "/dev/null"
        elif k == "relative":
            mirror_arg = "mirror"
            m.cwd = ctx.work
        elif k == "trailing_newline":
            mirror_arg = str(folder) + "\n"
        elif k == "file_url":
            mirror_arg = "file://" + str(folder) + "/"
        elif k == "name_escapes":
            odd = ctx.work / "mirror\x1b[2J\nnext\u202e"
            folder.rename(odd)
            mirror_arg = str(odd)
            mpath = odd / "redistrib_9.19.0.json"
        elif k == "file_url_other_host":
            mirror_arg = "file://otherhost" + str(folder) + "/"
    elif kind.startswith("partial_"):
        version = "9.19"
        if kind == "partial_fifo_listed":
            os.mkfifo(folder / "redistrib_9.19.1.json")
        else:
            for n in range(5000):
                (folder / f"redistrib_9.19.{n + 100}{'9' * (n % 40)}.json").write_text("{}")
    if man_bytes is None:
        man_bytes = json.dumps(man).encode()
    if not (mpath.exists() or mpath.is_symlink()):
        mpath.write_bytes(man_bytes)
    elif man_bytes and mpath.is_file() and not mpath.is_symlink():
        mpath.write_bytes(man_bytes)
    pfx = ctx.work / "pfx"
    (pfx / "include").mkdir(parents=True)
    (pfx / "include" / "mine.h").write_text("/* the user's own header */\n")
    args = ["install", "--version", version, "--cuda", "12", "--mirror", mirror_arg, "--prefix", str(pfx), "--yes"]
    r = m.run(*args, "--json", timeout=45, preexec=cap_as(2048))
    reap(ctx.work)
    data = hold15(r, True, (0, 1, 2), secs=40, out_max=1 << 20) or {}
    no_passwd(r)
    kept(pfile, phash)
    _user_files_kept(pfx)
    libs = sorted(p.name for p in (pfx / "lib64").glob("libcudnn*")) if (pfx / "lib64").is_dir() else []
    if r.rc == 0:
        expect(kind != "mirror_file_url_other_host", "a file:// URL naming another host was read as a local folder "
               "(curl and Python's urllib refuse it: the file is on that host)")
        expect(kind != "man_version_other_major", "exit 0 installing what the manifest calls 8.9.7.29 where "
               "--version 9.19.0 was asked for")
        expect(served_real, f"exit 0 where the mirror served no real archive ({kind}): {json.dumps(data)[:300]}")
        wrong = installed_as_recorded(ctx, pfx)
        expect(wrong == [], f"exit 0 but the prefix is not the recorded install: {wrong}")
    else:
        expect(not libs or installed_as_recorded(ctx, pfx) == [],
               f"a refused install left cuDNN files in the prefix: {libs[:4]}")
    expect(not (ctx.work / "MARK").exists(), "a value of the manifest ran a command")
    if kind in ("rel_escapes", "man_dup_keys", "rel_proc_environ", "man_version_escapes", "man_name_escapes",
                "man_version_newline_workflow", "man_cuda_variant_escapes", "mirror_name_escapes"):
        t = m.run(*args, "--dry-run", timeout=45, preexec=cap_as(2048))
        hold15(t, False, (0, 1, 2), secs=40, out_max=1 << 20)
        no_passwd(t)
        no_workflow(t.out + t.err)


family("mirrordir", "mirror", {k: k for k in MIRROR_KINDS}, mirror_case, limit=75)


# ==================================================================================================================== fleetdup
def _report(ctx: Ctx) -> dict:
    cache = BUILD / f"report-{hashlib.sha256(str(ctx.tree).encode()).hexdigest()[:10]}.json"
    if cache.exists():
        try:
            return json.loads(cache.read_text())
        except ValueError:
            pass
    m = healthy(ctx, "reportmaker")
    d = _good_report(m)
    cache.parent.mkdir(parents=True, exist_ok=True)
    tmp = cache.with_suffix(f".{os.getpid()}")
    tmp.write_text(json.dumps(d))
    os.replace(tmp, cache)
    return d


def _set_host(d: dict, value: object) -> dict:
    d = json.loads(json.dumps(d))
    d.setdefault("host", {})["hostname"] = value
    return d


def _set_driver(d: dict, version: str) -> dict:
    d = json.loads(json.dumps(d))
    drv = d.get("driver")
    if isinstance(drv, dict):
        drv["version"] = version
    else:
        d["driver"] = {"version": version}
    return d


HOSTNAMES = {  # the third node's host name (its driver differs from the two others', named gpu-01 and gpu-02)
    "case_GPU-01": "GPU-01", "trailing_dot": "gpu-01.", "nfd_vs_nfc": "gpu\u0308-01", "fullwidth": "ｇｐｕ-01",
    "zero_width": "gpu\u200b-01", "empty": "", "null": None, "number": 12345, "list": ["gpu-01"],
    "object": {"name": "gpu-01"}, "bool": True, "dotdot_path": "../../etc/passwd", "slash": "rack1/gpu-01",
    "newline_workflow": "gpu-01\n::error::owned", "dash_json": "--json", "star": "*", "cmd_subst": "$(touch MARK)",
    "space_only": "   ", "nul_escape": "gpu\u0000-01", "u2028": "gpu\u2028-01", "long_64k": "g" * 65536,
    "same_as_file_of_other": "n1.json",
}


def fleetdup_host_case(ctx: Ctx, key: str) -> None:
    good = _report(ctx)
    d = ctx.work / "reports"
    d.mkdir()
    (d / "n1.json").write_text(json.dumps(_set_host(good, "gpu-01"), indent=1))
    (d / "n2.json").write_text(json.dumps(_set_host(good, "gpu-02"), indent=1))
    (d / "n3.json").write_text(json.dumps(_set_driver(_set_host(good, HOSTNAMES[key]), "570.86.15"), indent=1))
    m = ctx.machine()
    m.cwd = ctx.work
    r = m.run("fleet", "merge", str(d), "--json", timeout=30, preexec=cap_as(2048))
    data = hold15(r, True, (0, 1), secs=20, out_max=2 << 20) or {}
    expect(not (ctx.work / "MARK").exists(), "a host name ran a command")
    nodes = data.get("nodes")
    expect(nodes == 3, f"three reports, {nodes!r} nodes (README: two reports of one host name stay two nodes)")
    named = [o.get("node") for x in data.get("drift") or [] for o in x.get("outliers") or [] if isinstance(o, dict)]
    named += [f.get("node") for f in data.get("failed") or [] if isinstance(f, dict)]
    expect(named, f"the third node's other driver is neither drift nor a failure: {r.out[:400]!r}")
    t = m.run("fleet", "merge", str(d), timeout=30, preexec=cap_as(2048))
    hold15(t, False, (0, 1), secs=20, out_max=2 << 20)
    no_workflow(t.out)
    expect(re.search(r"^3 node", t.out, re.M), f"the text does not count three nodes: {t.out[:200]!r}")


family("fleetdup", "host", {k: k for k in HOSTNAMES}, fleetdup_host_case, limit=60)


FILE_DUPS = (
    "same_file_twice", "dir_and_file_in_it", "symlink_to_sibling", "hardlink_to_sibling", "case_names",
    "trailing_space_name", "three_same_host_one_differs", "five_same_host_two_differ", "same_host_1000",
    "link_to_dir_twice", "report_tool_other_name", "report_without_tool", "fleet_object_as_report",
    "report_host_missing", "report_host_10000_keys", "nested_dir_same_names", "dot_json_dir", "json_named_dash",
    "unicode_names_nfc_nfd", "empty_named_json",
)


def fleetdup_files_case(ctx: Ctx, key: str) -> None:
    good = _report(ctx)
    d = ctx.work / "reports"
    d.mkdir()
    args: list[str] = [str(d)]
    want: int | None = None
    differ_file: str | None = None

    def put(name: str, host: str, driver: str | None = None) -> Path:
        rep = _set_host(good, host)
        if driver:
            rep = _set_driver(rep, driver)
        p = d / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(json.dumps(rep, indent=1))
        return p

    a = put("a.json", "gpu-01")
    put("b.json", "gpu-02")
    if key == "same_file_twice":
        args = [str(a), str(a), str(d / "b.json")]
    elif key == "dir_and_file_in_it":
        args = [str(d), str(a)]
    elif key == "symlink_to_sibling":
        (d / "c.json").symlink_to("a.json")
    elif key == "hardlink_to_sibling":
        os.link(a, d / "c.json")
        want = 3
    elif key == "case_names":
        put("A.JSON", "gpu-01", "570.86.15")
        put("A.json", "gpu-01", "570.86.15")
    elif key == "trailing_space_name":
        put("a .json", "gpu-01", "570.86.15")
        put("c.json", "gpu-03")
        want, differ_file = 4, "a .json"
    elif key == "three_same_host_one_differs":
        put("c.json", "gpu-01")
        put("d.json", "gpu-01", "570.86.15")
        want, differ_file = 4, "d.json"
    elif key == "five_same_host_two_differ":
        for n in "cdefg":
            put(f"{n}.json", "gpu-01", "570.86.15" if n in "fg" else None)
        want = 7
    elif key == "same_host_1000":
        for n in range(1000):
            put(f"r{n:04d}.json", "gpu-01", "570.86.15" if n == 777 else None)
        want, differ_file = 1002, "r0777.json"
    elif key == "link_to_dir_twice":
        (ctx.work / "alias").symlink_to(d)
        args = [str(d), str(ctx.work / "alias")]
    elif key == "report_tool_other_name":
        rep = dict(good); rep["tool"] = {"name": "other-doctor", "version": "0.1.0"}
        (d / "c.json").write_text(json.dumps(rep))
    elif key == "report_without_tool":
        rep = dict(good); rep.pop("tool", None)
        (d / "c.json").write_text(json.dumps(rep))
    elif key == "fleet_object_as_report":
        (d / "c.json").write_text(json.dumps({"schema": "cudnn-doctor/fleet/1", "nodes": 2, "failed": [], "drift": [],
                                               "exit_code": 0}))
        want = 3
    elif key == "report_host_missing":
        rep = dict(good); rep.pop("host", None)
        (d / "c.json").write_text(json.dumps(rep))
        want = 3
    elif key == "report_host_10000_keys":
        rep = json.loads(json.dumps(good))
        rep.setdefault("host", {}).update({f"k{n}": n for n in range(10000)})
        rep["host"]["hostname"] = "gpu-03"
        (d / "c.json").write_text(json.dumps(rep))
        want = 3
    elif key == "nested_dir_same_names":
        put("x/a.json", "gpu-01", "570.86.15")
        args = [str(d), str(d / "x")]
        want = 3
    elif key == "dot_json_dir":
        (d / "c.json").mkdir()
        put("c.json/inner.json", "gpu-09")
    elif key == "json_named_dash":
        put("-.json", "gpu-03")
        put("--json.json", "gpu-04")
        want = 4
    elif key == "unicode_names_nfc_nfd":
        put("gpü.json", "gpu-01", "570.86.15")
        put("gpu\u0308.json", "gpu-01", "570.86.15")
        want = 4
    elif key == "empty_named_json":
        put(".json", "gpu-03")
    m = ctx.machine()
    m.cwd = ctx.work
    r = m.run("fleet", "merge", *args, "--json", timeout=40, preexec=cap_as(2048))
    data = hold15(r, True, (0, 1), secs=30, out_max=2 << 20) or {}
    if want is not None:
        expect(data.get("nodes") == want, f"{want} reports, {data.get('nodes')!r} nodes")
    if differ_file is not None:
        outl = [o for x in data.get("drift") or [] for o in x.get("outliers") or [] if isinstance(o, dict)]
        stem = differ_file[: -len(".json")]
        expect(any(stem in json.dumps(o.get("node"), ensure_ascii=False) for o in outl),
               f"the node that differs is not told apart from the others of its host name: {json.dumps(outl)[:300]}")
    t = m.run("fleet", "merge", *args, timeout=40, preexec=cap_as(2048))
    hold15(t, False, (0, 1), secs=30, out_max=2 << 20)
    no_workflow(t.out)


family("fleetdup", "files", {k: k for k in FILE_DUPS}, fleetdup_files_case, limit=90)


# ==================================================================================================================== shelldet
SHELL_VALUES = {
    "unset": None, "empty": "", "ksh": "/bin/ksh", "nushell": "/usr/bin/nu", "relative_bash": "bash",
    "newline": "/bin/bash\n", "escape": "/bin/ba\x1b[2J\x1b]52;c;Zm9v\x07sh", "long_100k": "/bin/" + "b" * 100000,
    "binary": "@BINARY@", "pwsh_absent": "/usr/bin/pwsh", "nix_zsh": "/nix/store/0a1b-zsh-5.9/bin/zsh",
    "semicolon_cmd": "/bin/fish;touch MARK", "subst_cmd": "$(touch MARK)/zsh", "login_dash": "-bash",
    "proc_self_exe": "/proc/self/exe", "fifo_named_zsh": "@FIFO@", "dash": "/bin/sh", "windows_cmd":
    "C:\\Windows\\System32\\cmd.exe", "with_args": "/bin/zsh -l", "tcsh": "/bin/tcsh", "bidi": "/bin/\u202ehsab",
    "powershell_exe": "powershell.exe",
}
PARENTS = {  # a copy of bash named so (its comm), or argv[0] changed by exec -a, runs the doctor with SHELL unset
    "copy_named_fish": ("fish", None), "copy_named_zsh": ("zsh", None), "copy_named_pwsh": ("pwsh", None),
    "copy_named_nu": ("nu", None), "copy_named_escape": ("ba\x1b[2Jsh", None), "argv0_login_zsh": ("bash", "-zsh"),
    "copy_named_newline": ("fi\nsh", None), "copy_named_tmux": ("tmux: server", None),
}


def _shell_env(ctx: Ctx, m: M, value: str | None) -> dict:
    env = dict(m.env)
    env.pop("SHELL", None)
    if value == "@BINARY@":
        value = "/bin/" + argbin(1501, 120)
    elif value == "@FIFO@":
        f = ctx.work / "fifo" / "zsh"
        f.parent.mkdir()
        os.mkfifo(f)
        value = str(f)
    if value is not None:
        env["SHELL"] = value
    return env


def _judge_show(r: R) -> None:
    hold15(r, False, (0, 2), secs=25, out_max=1 << 20)
    if r.rc == 0:
        expect(r.out.strip(), "exit 0 and no completion script")
        expect(any(w in r.out for w in ("complete", "compdef", "Register-ArgumentCompleter")),
               f"exit 0 but stdout is no completion script: {r.out[:200]!r}")


def _judge_install(ctx: Ctx, m: M, r: R, rc_before: dict) -> None:
    hold15(r, False, (0, 2), secs=25, out_max=1 << 20)
    for name, before in rc_before.items():
        p = m.home / name
        if p.exists():
            expect(p.read_bytes().startswith(before), f"~/{name}: the user's lines were not kept")
        else:
            raise Fail(f"~/{name} removed")
    for name in (".bashrc", ".zshrc"):
        _sourced_scripts_exist(m, m.home / name)
    stray = [p.name for p in ctx.work.iterdir() if p.name not in ("m", "fifo", "bin", "MARK")]
    expect(not stray, f"files written outside the home: {stray}")
    for p in (m.home / ".config" / "fish").rglob("*.fish") if (m.home / ".config" / "fish").is_dir() else []:
        f = subprocess.run(["fish", "--no-config", "-n", str(p)], capture_output=True, timeout=20)
        expect(f.returncode == 0, f"{p.name} written is no fish script: {f.stderr[-200:]!r}")


def _rc_files(m: M) -> dict:
    out = {}
    for name in (".bashrc", ".zshrc"):
        b = f"# the user's own {name}\nexport KEEP=1\n".encode()
        (m.home / name).write_bytes(b)
        out[name] = b
    return out


def shell_value_case(ctx: Ctx, arg: tuple) -> None:
    key, what = arg
    m = ctx.machine()
    m.cwd = ctx.work
    env = _shell_env(ctx, m, SHELL_VALUES[key])
    if what == "show":
        r = run_proc(m.argv("--show-completion"), env, m.cwd, 30)
        _judge_show(r)
    else:
        before = _rc_files(m)
        r = run_proc(m.argv("--install-completion"), env, m.cwd, 30)
        _judge_install(ctx, m, r, before)
    expect(not (ctx.work / "MARK").exists() and not (m.cwd / "MARK").exists(), "SHELL's value ran a command")


def shell_parent_case(ctx: Ctx, arg: tuple) -> None:
    key, what = arg
    comm, argv0 = PARENTS[key]
    m = ctx.machine()
    m.cwd = ctx.work
    b = ctx.work / "bin"
    b.mkdir()
    shell = b / comm
    shutil.copyfile("/bin/bash", shell)
    shell.chmod(0o755)
    env = _shell_env(ctx, m, None)
    line = shlex.join(m.argv("--show-completion" if what == "show" else "--install-completion"))
    argv = [str(shell), "-c", f"{line}; exit $?"]
    if argv0:
        argv = ["bash", "-c", f'exec -a {shlex.quote(argv0)} {shlex.quote(str(shell))} -c {shlex.quote(line + "; exit $?")}']
    if what == "show":
        r = run_proc(argv, env, m.cwd, 30)
        _judge_show(r)
    else:
        before = _rc_files(m)
        r = run_proc(argv, env, m.cwd, 30)
        _judge_install(ctx, m, r, before)


family("shelldet", "shell", {f"{k}-{w}": (k, w) for k in SHELL_VALUES for w in ("show", "install")},
       shell_value_case, limit=50)
family("shelldet", "parent", {f"{k}-{w}": (k, w) for k in PARENTS for w in ("show", "install")},
       shell_parent_case, limit=50)


# ==================================================================================================================== project
POM_HEAD = '<?xml version="1.0" encoding="UTF-8"?>\n'


def _pom(props: str = "<nd4j.backend>nd4j-cuda-12.3-platform</nd4j.backend>", doctype: str = "",
         extra: str = "", head: str = POM_HEAD) -> str:
    return (head + doctype + '<project xmlns="http://maven.apache.org/POM/4.0.0">\n<modelVersion>4.0.0</modelVersion>\n'
            "<groupId>org.example</groupId><artifactId>x</artifactId><version>1.0</version>\n"
            f"<properties><dl4j.version>1.0.0-M2.1</dl4j.version>{props}</properties>\n{extra}"
            "<dependencies><dependency><groupId>org.nd4j</groupId><artifactId>${nd4j.backend}</artifactId>"
            "<version>${dl4j.version}</version></dependency></dependencies>\n</project>\n")


GRADLE_OK = ("plugins { id 'java' }\ndependencies {\n    implementation \"org.nd4j:nd4j-cuda-12.3-platform:1.0.0-M2.1\"\n"
             "@EXTRA@}\n")

PROJECT_KINDS = (
    "billion_laughs", "quadratic_blowup", "xxe_passwd", "xxe_parameter_entity", "external_dtd_http",
    "external_dtd_fifo", "deep_100k", "comments_50mb", "modules_10k", "module_self_and_parent", "module_link_loop",
    "pom_fifo", "pom_dev_zero", "utf16_declared_utf8", "property_cycle", "property_doubling_40", "backend_escapes",
    "backend_newline_command", "gradle_1mb_line", "gradle_100k_deps", "gradle_unclosed_comment_5mb",
    "settings_include_10k", "gradle_fifo", "kts_escapes", "repo_3000_projects", "repo_link_to_root",
)


def _make_project(ctx: Ctx, kind: str) -> Path:
    p = ctx.work / "proj"
    p.mkdir()
    pom = p / "pom.xml"
    if kind == "billion_laughs":
        ents = '<!ENTITY l0 "lol">' + "".join(f'<!ENTITY l{i} "{("&l" + str(i - 1) + ";") * 10}">' for i in range(1, 10))
        pom.write_text(_pom(props="<nd4j.backend>nd4j-cuda-12.3-platform&l9;</nd4j.backend>",
                            doctype=f"<!DOCTYPE project [{ents}]>\n"))
    elif kind == "quadratic_blowup":
        pom.write_text(_pom(props="<nd4j.backend>" + "&a;" * 10000 + "</nd4j.backend>",
                            doctype=f'<!DOCTYPE project [<!ENTITY a "{"x" * 100000}">]>\n'))
    elif kind == "xxe_passwd":
        pom.write_text(_pom(props="<nd4j.backend>nd4j-cuda-12.3-platform&x;</nd4j.backend>",
                            doctype='<!DOCTYPE project [<!ENTITY x SYSTEM "file:///etc/passwd">]>\n'))
    elif kind == "xxe_parameter_entity":
        pom.write_text(_pom(doctype='<!DOCTYPE project [<!ENTITY % p SYSTEM "file:///etc/passwd"> %p;]>\n'))
    elif kind == "external_dtd_http":
        pom.write_text(_pom(doctype='<!DOCTYPE project SYSTEM "http://127.0.0.1:9/evil.dtd">\n'))
    elif kind == "external_dtd_fifo":
        os.mkfifo(p / "evil.dtd")
        pom.write_text(_pom(doctype=f'<!DOCTYPE project SYSTEM "file://{p}/evil.dtd">\n'))
    elif kind == "deep_100k":
        pom.write_text(_pom(extra="<a>" * 100000 + "</a>" * 100000 + "\n"))
    elif kind == "comments_50mb":
        with open(pom, "w") as f:
            f.write(POM_HEAD)
            chunk = "<!-- " + "nd4j-cuda-12.3 " * 6000 + " -->\n"
            for _ in range(50 * (1 << 20) // len(chunk)):
                f.write(chunk)
            f.write(_pom(head=""))
    elif kind == "modules_10k":
        pom.write_text(_pom(extra="<modules>" + "".join(f"<module>m{i}</module>" for i in range(10000)) + "</modules>\n"))
    elif kind == "module_self_and_parent":
        pom.write_text(_pom(extra="<modules><module>.</module><module>../proj</module><module>..</module>"
                                  "<module>/</module></modules>\n"))
    elif kind == "module_link_loop":
        pom.write_text(_pom(extra="<modules><module>sub</module></modules>\n"))
        (p / "sub").symlink_to(p)
    elif kind == "pom_fifo":
        os.mkfifo(pom)
    elif kind == "pom_dev_zero":
        pom.symlink_to("/dev/zero")
    elif kind == "utf16_declared_utf8":
        pom.write_bytes(_pom().encode("utf-16"))
    elif kind == "property_cycle":
        pom.write_text(_pom(props="<nd4j.backend>${a}</nd4j.backend><a>${b}</a><b>${nd4j.backend}</b>"))
    elif kind == "property_doubling_40":
        props = "<p0>nd4j-cuda-12.3</p0>" + "".join(f"<p{i}>${{p{i - 1}}}${{p{i - 1}}}</p{i}>" for i in range(1, 41))
        pom.write_text(_pom(props=props + "<nd4j.backend>${p40}</nd4j.backend>"))
    elif kind == "backend_escapes":
        pom.write_bytes(_pom(props="<nd4j.backend>nd4j-cuda-12.3\x1b]52;c;Zm9v\x07\x1b[2J\u202e-platform</nd4j.backend>")
                        .encode())
    elif kind == "backend_newline_command":
        pom.write_text(_pom(props="<nd4j.backend>nd4j-cuda-12.3\n$(touch MARK)`touch MARK`\n::error::x</nd4j.backend>"))
    elif kind.startswith(("gradle", "settings", "kts")):
        g = p / ("build.gradle.kts" if kind == "kts_escapes" else "build.gradle")
        if kind == "gradle_1mb_line":
            g.write_text(GRADLE_OK.replace("@EXTRA@", "    // " + "x" * (1 << 20) + "\n"))
        elif kind == "gradle_100k_deps":
            g.write_text(GRADLE_OK.replace("@EXTRA@", "".join(f"    implementation 'org.x:a{i}:1.0'\n"
                                                                for i in range(100000))))
        elif kind == "gradle_unclosed_comment_5mb":
            g.write_text(GRADLE_OK.replace("@EXTRA@", "/* " + "nd4j-cuda-12.3 '\" " * 300000))
        elif kind == "settings_include_10k":
            g.write_text(GRADLE_OK.replace("@EXTRA@", ""))
            (p / "settings.gradle").write_text("".join(f"include ':m{i}'\n" for i in range(10000)) +
                                               "include ':..:..:..:etc'\n")
        elif kind == "gradle_fifo":
            os.mkfifo(g)
        elif kind == "kts_escapes":
            g.write_bytes(('plugins { java }\ndependencies {\n  implementation("org.nd4j:nd4j-cuda-12.3\x1b]52;c;Zm9v\x07'
                           '\u202e-platform:1.0.0-M2.1\\u0000")\n}\n').encode())
    elif kind == "repo_3000_projects":
        (p / ".git").mkdir()
        for i in range(3000):
            (p / f"p{i}").mkdir()
            (p / f"p{i}" / "pom.xml").write_text(_pom())
    elif kind == "repo_link_to_root":
        (p / ".git").mkdir()
        (p / "a").mkdir()
        (p / "a" / "pom.xml").write_text(_pom())
        (p / "root").symlink_to("/")
        (p / "a" / "up").symlink_to("..")
    return p


def project_case(ctx: Ctx, arg: tuple) -> None:
    kind, surface_ = arg
    m = healthy(ctx)
    p = _make_project(ctx, kind)
    m.cwd = ctx.work
    before = {q.name: fingerprint(q) for q in p.iterdir()}
    if surface_ == "check":
        r = m.run("check", "--project", str(p), "--json", timeout=45, preexec=cap_as(2048))
        reap(ctx.work)
        hold15(r, True, (0, 1, 2), secs=35, out_max=4 << 20)
    else:
        r = m.run("fix", "--project", str(p), timeout=45, preexec=cap_as(2048))
        reap(ctx.work)
        hold15(r, False, (0, 1, 2), secs=35, out_max=4 << 20)
        no_workflow(r.out)
    no_passwd(r)
    expect(not (ctx.work / "MARK").exists() and not (p / "MARK").exists(), "a value of the project ran a command")
    after = {q.name: fingerprint(q) for q in p.iterdir()}
    expect(before == after, "the project changed without --yes")


family("project", "proj", {f"{k}-{s}": (k, s) for k in PROJECT_KINDS for s in ("check", "fix")}, project_case,
       limit=70)


# ==================================================================================================================== compatopt
COMPAT_VALUES = {
    "--compute-capability": ["sm_90a", "10.0f", "compute_89", "8.6.1", "86", "sm_", "9.0+PTX", "sm_90,sm_80",
                             "sm_9" + "0" * 5000, "9.0\x1b[31m", "-8.6", "8.6 9.0", "12.1\u2028"],
    "--cuda": ["12.4.1.2", "12.x", "cu124", "12.4-1", "V12.4.131", "12.4\n::error::x", "12.4.0rc1", "12..4", "0x0c",
               "12.4\u200b", "99999999999999999999999.1", "12.4;touch MARK", "12.4" + ".4" * 30000],
    "--cudnn": ["9.1.0.70", "v9", "9.*", "8.9.7.29.1.2", "9_1_0", "9.1.0+cu12", "9.1.0.70\r", "8.9.7\x1b]52;c;Zm9v\x07",
                "9.1e3", "9.1.0" + ".0" * 20000, "cudnn9", "9.1.0.70-1", "9.1.0\u202e"],
    "--driver": ["535.54.03.1", "R535", "535.54.03-1ubuntu1", "535.", ".535", "535.54.03\u2028", "535 54 03",
                 "535.54.03\x7f", "0535.054.03", "4294967296.0.0", "535.54.03::error::x", "535," , "R535.54"],
}


def compatopt_case(ctx: Ctx, arg: tuple) -> None:
    opt, i = arg
    value = COMPAT_VALUES[opt][i]
    m = ctx.machine()
    m.cwd = ctx.work
    for args, want_json in ((["compat", "torch==2.5.1", opt, value, "--json"], True),
                            (["compat", "torch==2.5.1", opt, value], False),
                            (["compat", opt, value, "--json"], True)):
        r = m.run(*args, timeout=30, preexec=cap_as(2048))
        hold15(r, want_json, (0, 1, 2), secs=25, out_max=512 << 10, err_max=16 << 10)
        if not want_json:
            no_workflow(r.out + r.err)
    expect(not (ctx.work / "MARK").exists(), "a value ran a command")


family("compatopt", "opt", {f"{o.strip('-')}#{i}": (o, i) for o in COMPAT_VALUES for i in range(len(COMPAT_VALUES[o]))},
       compatopt_case, limit=60)


# ==================================================================================================================== explainlist
CODE_SHAPES = ["cd301", "CD301 ", " CD301", "CD0301", "CD3O1", "CD301\u200b", "CD", "C", "CD" + "9" * 5000, "CD-1",
               "CD3*", "CD3.*", "CD[3]", "CD3|CD1", "(CD3)+", "(" * 10000, "%s%n%x", "{0}{1!r}", "CD301,CD302",
               "CD301\x1b[2J\x1b]52;c;Zm9v\x07", "\u202eCD301", "CD30\uff11"]


def explainlist_case(ctx: Ctx, arg: tuple) -> None:
    i, how = arg
    value = CODE_SHAPES[i]
    m = ctx.machine()
    m.cwd = ctx.work
    base = ["explain", "--list", value] if how == "list" else ["explain", value, "--offline-only"]
    for extra, want_json in ((["--json"], True), ([], False), (["-v"], False)):
        r = m.run(*base, *extra, timeout=30, preexec=cap_as(2048))
        hold15(r, want_json, (0, 1, 2), secs=25, out_max=1 << 20, err_max=16 << 10)


family("explainlist", "code", {f"{i}-{h}": (i, h) for i in range(len(CODE_SHAPES)) for h in ("list", "code")},
       explainlist_case, limit=60)


# ==================================================================================================================== ptyterm
def run_pty(argv: list[str], env: dict, cwd: Path, rows: int, cols: int, timeout: float = 40) -> R:
    import termios
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, __import__("struct").pack("HHHH", rows, cols, 0, 0))
    start = time.monotonic()
    proc = subprocess.Popen(argv, env=env, cwd=str(cwd), stdin=subprocess.DEVNULL, stdout=slave, stderr=slave,
                            start_new_session=True)
    os.close(slave)
    chunks = []
    import select
    deadline = start + timeout
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            kill_group(proc.pid)
            os.close(master)
            raise Fail(f"hang on a terminal {rows}x{cols}: {' '.join(argv[3:6])}")
        ready, _, _ = select.select([master], [], [], min(left, 1.0))
        if ready:
            try:
                b = os.read(master, 65536)
            except OSError:
                break
            if not b:
                break
            chunks.append(b)
            if sum(map(len, chunks)) > (16 << 20):
                kill_group(proc.pid)
                os.close(master)
                raise Fail("more than 16 MB printed on a terminal")
        elif proc.poll() is not None:
            break
    try:
        rc = proc.wait(timeout=max(1.0, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        kill_group(proc.pid)
        raise Fail("hang after the output ended") from None
    os.close(master)
    kill_group(proc.pid)
    out = b"".join(chunks)
    return R(rc, out, b"", time.monotonic() - start)


PTY_COMMANDS = {
    "check": (["check"], (0, 1)), "fix": (["fix"], (0, 1)), "explain": (["explain", "CD301"], (0, 1)),
    "compat": (["compat", "torch==2.5.1"], (0, 1)), "compat_list": (["compat", "--list", "cudnn"], (0, 1)),
    "merge": (["fleet", "merge", "@REPORTS@"], (0, 1)), "help": (["check", "--help"], (0,)),
    "markdown": (["check", "--format", "markdown"], (0, 1)),
    "show_completion": (["--show-completion", "bash"], (0,)),
    "install_dry": (["install", "--from", "@ARCHIVE@", "--prefix", "@PFX@", "--dry-run"], (0, 1)),
    "usage_error": (["check", "--jsn"], (2,)),
}
PTY_SIZES = {"0x0": (0, 0, {}), "1x1": (1, 1, {}), "rows1_cols65535": (1, 65535, {}),
             "rows65535_cols1": (65535, 1, {}), "no_color": (40, 120, {"NO_COLOR": "1", "TERM": "xterm-256color"}),
             "env_columns_1": (40, 120, {"COLUMNS": "1"}), "env_columns_20_digits": (40, 120, {"COLUMNS": "9" * 20}),
             "env_columns_neg_lines_0": (40, 120, {"COLUMNS": "-5", "LINES": "0"})}


def _colour_sgr(params: str) -> bool:
    ps = [int(x) if x.isdigit() else 0 for x in params.split(";")] if params else [0]
    return any(30 <= x <= 49 or 90 <= x <= 97 or 100 <= x <= 107 for x in ps)


def ptyterm_case(ctx: Ctx, arg: tuple) -> None:
    cmd, size = arg
    m = healthy(ctx)
    args, rcs = PTY_COMMANDS[cmd]
    if "@REPORTS@" in args:
        rep = _report(ctx)
        d = ctx.work / "reports"
        d.mkdir()
        (d / "a.json").write_text(json.dumps(_set_host(rep, "gpu-01")))
        (d / "b.json").write_text(json.dumps(_set_driver(_set_host(rep, "gpu-02"), "570.86.15")))
        args = [str(d) if a == "@REPORTS@" else a for a in args]
    args = [str(archive(ctx)) if a == "@ARCHIVE@" else str(ctx.work / "pfx") if a == "@PFX@" else a for a in args]
    rows, cols, extra = PTY_SIZES[size]
    env = {**m.env, "TERM": "xterm-256color"}
    env.pop("COLUMNS", None)
    env.update(extra)
    r = run_pty(m.argv(*args), env, m.cwd, rows, cols)
    sane(r, rcs)
    expect(r.secs < 35, f"took {r.secs:.1f} s on a terminal {size}")
    text = utf8_strict(r.outb, "the terminal output")
    expect(len(r.outb) < (4 << 20), f"{len(r.outb)} bytes printed on a terminal {size}")
    # a progress line on a terminal (rich's): CR, erase-line and cursor hide/show are the terminal's own business
    plain = re.sub(r"\x1b\[(\?25[lh]|[0-2]?K|[0-9]*[AG])", "", strip_sgr(text).replace("\r\n", "\n")).replace("\r", "")
    no_raw_controls13(plain, f"the terminal output ({size})")
    if size == "no_color":
        colours = [c for c in re.findall(r"\x1b\[([0-9;]*)m", text) if _colour_sgr(c)]
        expect(not colours, f"colour (SGR {sorted(set(colours))[:4]}) printed under NO_COLOR (README: NO_COLOR turns "
               "colour off; bold and dim are no colours)")
    expect(plain.strip(), "nothing printed on the terminal")


family("ptyterm", "tty", {f"{c}-{s}": (c, s) for c in PTY_COMMANDS for s in PTY_SIZES}, ptyterm_case, limit=60)


# ==================================================================================================================== signals2
SIG_NUM = {"INT": signal.SIGINT, "TERM": signal.SIGTERM, "HUP": signal.SIGHUP}
SIG_COMMANDS = ("explain_stdin", "image_archive", "merge_3000", "uninstall", "install_mirror", "compat_list",
                "completion_fish")


def _group_left(pgid: int) -> list[str]:
    left = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            st = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(st[2]) == pgid and st[0] not in ("Z", "X"):
            left.append(f"{pid}: {_cmdline(pid)[:100]}")
    return left


def _default_signals() -> None:
    """The doctor starts with the dispositions a terminal's shell gives a command (a harness run under nohup, or as a
    background job of a shell without job control, would hand it SIGHUP or SIGINT ignored, which it keeps)."""
    for s in (signal.SIGHUP, signal.SIGINT, signal.SIGTERM):
        signal.signal(s, signal.SIG_DFL)


def signals2_case(ctx: Ctx, arg: tuple) -> None:
    cmd, sig, n = arg
    rng = random.Random(f"1515-{cmd}-{sig}-{n}")
    frac = rng.uniform(0.08, 0.95)  # of the command's own unsignalled time, measured just before (start-up included)
    m = ctx.machine()
    m.cwd = ctx.work
    env = dict(m.env)
    stdin_data: bytes | None = None
    keep_stdin_open = False
    check_after: Callable[[], None] = lambda: None
    want_json = True
    if cmd == "explain_stdin":
        args = ["explain", "-", "--json"]
        env["CUDNN_DOCTOR_READ_TIMEOUT"] = "20"
        keep_stdin_open = True
    elif cmd == "image_archive":
        args = ["image", str(raw_oci(ctx, name="oci")), "--json"]
    elif cmd == "merge_3000":
        rep = json.dumps(_report(ctx)).encode()
        d = ctx.work / "reports"
        d.mkdir()
        for i in range(3000):
            (d / f"n{i:04d}.json").write_bytes(rep)
        args = ["fleet", "merge", str(d), "--json"]
    elif cmd in ("uninstall", "install_mirror"):
        folder, _, man = _mirror_base(ctx)
        (folder / "redistrib_9.19.0.json").write_text(json.dumps(man))
        pfx = prefix_with_old(ctx)
        before = user_view(snapshot_tree(pfx))
        if cmd == "uninstall":
            pre = m.run("install", "--version", "9.19.0", "--cuda", "12", "--mirror", str(folder), "--prefix",
                        str(pfx), "--yes", "--replace", "--json", timeout=45)
            expect(pre.rc == 0, f"the install before the uninstall failed: {pre!r}")
            installed = user_view(snapshot_tree(pfx))
            args = ["uninstall", "--prefix", str(pfx), "--yes", "--json"]
        else:
            installed = None
            args = ["install", "--version", "9.19.0", "--cuda", "12", "--mirror", str(folder), "--prefix", str(pfx),
                    "--yes", "--replace", "--json"]

        def check_after() -> None:
            _user_files_kept(pfx)
            now = user_view(snapshot_tree(pfx))
            if now == before or (installed is not None and now == installed):
                return
            wrong = installed_as_recorded(ctx, pfx)
            if wrong == []:
                return
            again = m.run("uninstall" if cmd == "uninstall" else "install", *args[1:], timeout=45)
            hold15(again, True, (0, 1, 2), secs=40)
            now2 = user_view(snapshot_tree(pfx))
            expect(now2 == before or installed_as_recorded(ctx, pfx) == [] or (installed and now2 == installed),
                   f"after the signal and a second run the prefix is neither as before nor whole: {wrong[:3]}")
    elif cmd == "compat_list":
        args = ["compat", "--list", "cudnn", "--json"]
    elif cmd == "completion_fish":
        args = ["--install-completion", "fish"]
        want_json = False

        def check_after() -> None:
            for p in (m.home / ".config" / "fish").rglob("*") if (m.home / ".config").exists() else []:
                if p.is_file() and p.suffix == ".fish":
                    f = subprocess.run(["fish", "--no-config", "-n", str(p)], capture_output=True, timeout=20)
                    expect(f.returncode == 0 and p.stat().st_size > 0, f"{p.name} left cut by the signal")
                expect(not re.search(r"\.tmp|~$|\.part", p.name), f"a temporary file left: {p.name}")
    else:
        raise ValueError(cmd)
    base_env, base_args = dict(env), list(args)
    if cmd == "explain_stdin":
        base = 2.0
    else:
        if cmd == "completion_fish":
            other = ctx.work / "basehome"
            other.mkdir()
            base_env["HOME"] = str(other)
        elif cmd in ("install_mirror", "uninstall"):
            other = ctx.work / "basepfx"
            other.mkdir()
            i = base_args.index("--prefix")
            base_args[i + 1] = str(other)
            if cmd == "uninstall":
                run_proc(m.argv("install", "--version", "9.19.0", "--cuda", "12", "--mirror", str(ctx.work / "mirror"),
                                "--prefix", str(other), "--yes", "--json"), env, m.cwd, 45, preexec=_default_signals)
        b = run_proc(m.argv(*base_args), base_env, m.cwd, 45, preexec=_default_signals)
        base = b.secs
    at = frac * base
    start = time.monotonic()
    proc = subprocess.Popen(m.argv(*args), env=env, cwd=str(m.cwd),
                            stdin=subprocess.PIPE if keep_stdin_open else subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
                            preexec_fn=_default_signals)
    if keep_stdin_open:
        proc.stdin.write(b"RuntimeError: cuDNN error: CUDNN_STATUS_NOT_INITIALIZED\n")
        proc.stdin.flush()
    outs: list[bytes] = []
    errs: list[bytes] = []
    t_out = threading.Thread(target=lambda: outs.append(proc.stdout.read()))
    t_err = threading.Thread(target=lambda: errs.append(proc.stderr.read()))
    t_out.start(); t_err.start()
    time.sleep(max(0.0, at - (time.monotonic() - start)))
    sent = proc.poll() is None
    if sent:
        try:
            os.kill(proc.pid, SIG_NUM[sig])
        except OSError:
            sent = False
    sent_at = time.monotonic()
    try:
        rc = proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        kill_group(proc.pid)
        raise Fail(f"still running 15 s after SIG{sig}") from None
    took = time.monotonic() - sent_at
    time.sleep(0.4)
    left = _group_left(proc.pid)
    kill_group(proc.pid)
    if keep_stdin_open:
        try:
            proc.stdin.close()
        except OSError:
            pass
    t_out.join(10); t_err.join(10)
    r = R(rc, b"".join(outs), b"".join(errs), took)
    try:
        with open(BUILD / "signals-sent.log", "a") as f:
            f.write(f"{cmd}-{sig}-{n} at={at:.2f} sent={sent} rc={rc}\n")
    except OSError:
        pass
    expect(not left, f"processes left after SIG{sig}: {left[:2]}")
    ended_by_signal = rc in (128 + SIG_NUM[sig], -SIG_NUM[sig])
    if (sent and sig == "INT" and b"Traceback (most recent call last)" in r.errb and b"cudnn_doctor" not in r.errb
            and r.errb.rstrip().endswith(b"KeyboardInterrupt") and not r.outb.strip()):
        return  # Ctrl-C inside the interpreter's own start-up (runpy, site, zipimport): Python's exit, not the doctor's
    if ended_by_signal:
        expect(sent, "ended by a signal it was not sent")
        errb = r.errb
        if b"Traceback (most recent call last)" in errb:
            # a signal inside the interpreter's own start-up, before any code of the doctor's ran, is Python's
            # traceback, not the doctor's; one with a frame of the doctor's code on its stack is the doctor's
            expect(b"cudnn_doctor" not in errb, f"a traceback on SIG{sig} {at:.2f} s in, with the doctor's own frames "
                                                f"on the stack: {r.err[-500:]!r}")
            errb = b""
        r2 = R(128 + SIG_NUM[sig], r.outb, errb, took)
        # with --json: one JSON object that says Interrupted, or nothing at all (ended before it could print)
        data = sane(r2, (128 + SIG_NUM[sig],), want_json=want_json and bool(r.outb.strip()))
        if want_json and r.outb.strip():
            strict_json(utf8_strict(r.outb, "stdout"))
            expect("Interrupted" in json.dumps(data), f"the JSON does not say Interrupted: {r.out[:300]!r}")
        expect(took < 12, f"took {took:.1f} s to stop after SIG{sig}")
    else:
        hold15(r, want_json, (0, 1, 2) if cmd != "completion_fish" else (0, 2), secs=60)
        if sent and took > 0.5:
            raise Fail(f"SIG{sig} at {at:.2f} s while running; exit {rc}, not {128 + SIG_NUM[sig]}: {r!r}")
    check_after()


family("signals2", "sig", {f"{c}-{s}-{n}": (c, s, n) for c in SIG_COMMANDS for s in SIG_NUM for n in (0, 1, 2)},
       signals2_case, limit=80)
# ####################################################################################################################
# ROUND SIXTEEN: the classes scored this round. Round fifteen's classes are dropped (their helpers stay above).
# ####################################################################################################################
CASES.clear()
CLASSES.clear()
CLASSES.update({
    "fixshell3": "fix --shell for six shells, a cuDNN folder named with each shell's own expansions (fish (), {}, $X[1], globs, ~, quotes, tab/CR)",
    "compatos": "compat --os, --artifact and --list with hostile values (case, homoglyphs, escapes, huge, paths), text and JSON",
    "fleetfield": "fleet merge where a node's report holds hostile field names and values (escapes, 10,000 keys, 1 MB, 2^53+1, deep)",
    "explainprobe": "explain CODE/message (it probes this machine) with a libcuda/NVML/cuDNN whose constructor misbehaves in children",
    "concur": "runs at once: --install-completion into one home, -o/--junit-xml to one file, four commands on one fresh cache",
    "signals3": "SIGINT/SIGTERM/SIGHUP at seeded instants during commands no earlier round signalled",
    "devread": "files that are kernel devices or the doctor's own pipes (/dev/kmsg, /dev/ptmx, /proc/self/fd/1, pagemap, mem, a socket)",
    "fromname": "install --from with hostile names and URLs (credentials, schemes, CRLF, escapes, wrong extensions); a password in --mirror, proxies",
    "ocitar": "image of an OCI layout as a tar (podman's oci-archive) with hostile digests, layouts, indexes and members",
})
R16_MARKS = ("MARK",)


def hold16(r: R, want_json: bool, rcs: tuple = (0, 1), secs: float = 40, out_max: int | None = None,
           err_max: int | None = None) -> dict | None:
    # warnings said on lines of their own before an error are not the error (round 13's judge counted every line
    # of stderr as the error's); they are still judged for raw controls and the bound on stderr
    kept_lines = [x for x in r.errb.split(b"\n") if not x.startswith(b"cudnn-doctor: warning:")]
    r2 = R(r.rc, r.outb, b"\n".join(kept_lines), r.secs)
    data = hold14(r2, want_json, rcs, secs, out_max, None)
    if err_max is not None:
        expect(len(r.errb) <= err_max, f"stderr of {len(r.errb)} bytes (bound {err_max})")
    no_raw_controls13(strip_sgr(utf8_strict(r.errb, "stderr")), "stderr")
    for word in BAD_WORDS:
        expect(word not in r.err, f"{word!r} on stderr: {r!r}")
    return data


def one_error_line(r: R) -> None:
    """An error is one line on stderr; warnings said before it, each a line of its own, are not the error."""
    lines = [x for x in err_lines(r) if not x.startswith("cudnn-doctor: warning:")]
    expect(len(lines) == 1, f"an error is one line on stderr, got {len(lines)}: {r!r}")


def no_marks(root: Path) -> None:
    made = [str(p) for p in root.rglob("MARK")]
    expect(not made, f"a command was run: {made[:2]}")


# ==================================================================================================================== fixshell3
FIX3_VALUES = {
    "fish_cmdsub": "a(touch MARK)b", "fish_brace": "x{a,b}y", "fish_index": "$PATH[1]", "glob": "lib*?[ab]",
    "tilde": "~root", "colon": "a:b", "shell_ops": "a;b&c|d>e<f", "single_quote": "it's",
    "dq_backslash": 'a\\"b\\', "tab_cr": "a\tb\rc", "brace_var": "${HOME}x", "hash_space": "a #b",
    "ps_subexpr": "@(touch MARK)", "cmd_quote_amp": 'a"&echo MARK>MARK&"',
}
FIX_VALUES.update({f"r16_{k}": v for k, v in FIX3_VALUES.items()})


def fixshell3_case(ctx: Ctx, arg: tuple[str, str]) -> None:
    key, shell = arg
    try:
        fixshell_case(ctx, (f"r16_{key}", shell))
    finally:
        reap(ctx.work)
    no_marks(ctx.work)


family("fixshell3", "folder", {f"{k}-{s}": (k, s) for k in FIX3_VALUES
                               for s in ("bash", "zsh", "fish", "powershell", "cmd", "user")},
       fixshell3_case, limit=80)


# ==================================================================================================================== compatos
OS_VALUES = {"Linux": "Linux", "WINDOWS": "WINDOWS", "win32": "win32", "darwin": "darwin",
             "newline_workflow": "linux\n::error::owned", "csi": "linux\x1b[2J", "cyrillic_i": "l\u0456nux",
             "zero_width": "linux\u200b", "huge": "x" * 100000, "empty": "", "dotdot": "macos/../linux",
             "bidi": "linux\u202e"}
ARTIFACT_VALUES = {"platform": "nd4j-cuda-12.3-platform", "future": "nd4j-cuda-99.9", "bare": "nd4j-cuda-",
                   "exp": "nd4j-cuda-1e999", "digits_5000": "nd4j-cuda-" + "9" * 5000,
                   "gav": "org.nd4j:nd4j-cuda-11.6:1.0.0-M2.1", "classifier": "nd4j-cuda-11.6:linux-x86_64",
                   "fullwidth": "nd4j-cuda-\uff11\uff11.\uff16", "newline_workflow": "nd4j-cuda-11.6\n::error::owned",
                   "osc52": "nd4j-cuda-11.6\x1b]52;c;Zm9v\x07", "passwd": "../../etc/passwd",
                   "parts_20000": "nd4j-cuda-" + "11.6." * 20000}
LIST_VALUES = {"TensorFlow": "TensorFlow", "PYTORCH": "PYTORCH", "torch": "torch", "trailing_space": "cudnn ",
               "dotdot_rules": "../rules", "rules_toml": "rules.toml", "proto": "__proto__", "star": "*", "empty": "",
               "sgr": "cuda\x1b[31m", "constructor": "constructor", "huge": "x" * 100000,
               "newline_workflow": "cudnn\n::error::owned", "fullwidth": "\uff43\uff55\uff44\uff4e\uff4e"}


def compatos_case(ctx: Ctx, arg: tuple) -> None:
    opt, key, want_json = arg
    m = ctx.machine()
    m.cwd = ctx.work
    if opt == "os":
        args = ["compat", "torch==2.5.1", "--os", OS_VALUES[key]]
    elif opt == "artifact":
        args = ["compat", "dl4j==1.0.0-M2.1", "--artifact", ARTIFACT_VALUES[key]]
    else:
        args = ["compat", "--list", LIST_VALUES[key]]
    if want_json:
        args.append("--json")
    r = m.run(*args, timeout=35, preexec=cap_as(2048))
    hold16(r, want_json, (0, 1, 2), secs=25, out_max=512 << 10, err_max=16 << 10)
    no_passwd(r)
    no_workflow(r.out + r.err)
    if r.rc == 2 and not want_json:
        one_error_line(r)
    no_marks(ctx.work)


family("compatos", "opt", {**{f"os-{k}-{'json' if j else 'text'}": ("os", k, j) for k in OS_VALUES for j in (True, False)},
                           **{f"artifact-{k}-{'json' if j else 'text'}": ("artifact", k, j) for k in ARTIFACT_VALUES
                              for j in (True, False)},
                           **{f"list-{k}-{'json' if j else 'text'}": ("list", k, j) for k in LIST_VALUES
                              for j in (True, False)}},
       compatos_case, limit=50)


# ==================================================================================================================== fleetfield
def _deep_text(n: int) -> str:
    return "[" * n + "]" * n


FIELD_KINDS = {  # the third node's report is the good one with this change (as JSON text, where a dict cannot say it)
    "key_escape": lambda d: d.update({"\x1b[2Jdrv\u202e": "x"}),
    "key_newline_workflow": lambda d: d.update({"a\n::error::owned": "x"}),
    "key_empty": lambda d: d.update({"": 1}),
    "key_dotted": lambda d: d.update({"driver.version": "999.1.1"}),
    "key_proto": lambda d: d.update({"__proto__": {"polluted": 1}}),
    "keys_10000": lambda d: d.update({f"k{i}": i for i in range(10000)}),
    "value_1mb": lambda d: _set_driver_into(d, "5" * (1 << 20)),
    "value_2_53_plus_1": lambda d: _set_driver_into(d, 2 ** 53 + 1),
    "value_1e308": lambda d: _set_driver_into(d, 1e308),
    "value_neg_zero": lambda d: _set_driver_into(d, -0.0),
    "value_true": lambda d: _set_driver_into(d, True),
    "value_nfd": lambda d: _set_driver_into(d, "570.86.15-e\u0301"),
    "value_blank": lambda d: _set_driver_into(d, "   "),
    "value_nul": lambda d: _set_driver_into(d, "570\u0000.86"),
    "value_bidi": lambda d: _set_driver_into(d, "570\u202e.86.15"),
    "value_u2028": lambda d: _set_driver_into(d, "570\u2028.86.15"),
    "value_osc8": lambda d: _set_driver_into(d, "\x1b]8;;http://x/\x07570.86.15\x1b]8;;\x07"),
    "value_workflow": lambda d: _set_driver_into(d, "570.86.15\n::error::owned"),
    "value_deep": None,
    "gpus_100k": lambda d: d.update({"gpus": [{"index": i, "name": "G", "uuid": f"GPU-{i}"} for i in range(100000)]}),
    "findings_50k": lambda d: d.update({"findings": [{"code": "CD201", "severity": "warning", "title": "t",
                                                      "detail": f"d{i}"} for i in range(50000)]}),
    "finding_code_escape": lambda d: d.update({"findings": [{"code": "CD301\x1b[2J\u202e", "severity": "error",
                                                             "title": "x" * 200000, "detail": "\x9b2J"}]}),
}


def _set_driver_into(d: dict, value: object) -> None:
    drv = d.get("driver")
    if isinstance(drv, dict):
        drv["version"] = value
    else:
        d["driver"] = {"version": value}


def fleetfield_case(ctx: Ctx, arg: tuple) -> None:
    kind, want_json = arg
    good = _report(ctx)
    d = ctx.work / "reports"
    d.mkdir()
    (d / "n1.json").write_text(json.dumps(_set_host(good, "gpu-01"), indent=1))
    (d / "n2.json").write_text(json.dumps(_set_host(good, "gpu-02"), indent=1))
    third = _set_host(good, "gpu-03")
    if kind == "value_deep":
        text = json.dumps(third)
        marker = '"__DEEP__"'
        _set_driver_into(third, "__DEEP__")
        text = json.dumps(third).replace(marker, _deep_text(5000))
    else:
        FIELD_KINDS[kind](third)
        text = json.dumps(third, indent=1)
    (d / "n3.json").write_text(text)
    m = ctx.machine()
    m.cwd = ctx.work
    args = ["fleet", "merge", str(d)] + (["--json"] if want_json else [])
    r = m.run(*args, timeout=40, preexec=cap_as(2048))
    data = hold16(r, want_json, (0, 1), secs=30, out_max=2 << 20, err_max=64 << 10) or {}
    no_marks(ctx.work)
    if want_json:
        expect(data.get("nodes") == 3, f"three reports, {data.get('nodes')!r} nodes")
    else:
        no_workflow(r.out)
        expect(re.search(r"^3 node", r.out, re.M), f"the text does not count three nodes: {r.out[:200]!r}")


family("fleetfield", "field", {f"{k}-{'json' if j else 'text'}": (k, j) for k in FIELD_KINDS for j in (True, False)},
       fleetfield_case, limit=70)


# ==================================================================================================================== explainprobe
PROBE_MODES = ("exit_in_ctor", "loops_in_ctor", "floods_stdout_stderr", "closes_every_fd", "stops_itself",
               "kills_its_group", "forks_a_daemon", "aborts", "grandchild_keeps_printing", "stdout_to_dev_full",
               "arms_alarm", "segfaults", "fake_json_and_escapes", "clears_environ", "prints_and_exits_zero",
               "open_files_limit_3", "every_fd_to_dev_null", "chdir_and_umask")
PROBE_LIBS = {"libcuda": "libcuda.so.1", "nvml": "libnvidia-ml.so.1", "cudnn": "libcudnn.so.9"}


def explainprobe_case(ctx: Ctx, arg: tuple) -> None:
    mode, lib, i = arg
    m = healthy(ctx)
    folder = m.base / "hostile"
    soname = PROBE_LIBS[lib]
    place_hostile(folder / soname, mode, soname, only_children=True)
    if lib == "cudnn":
        place_hostile(folder / "libcudnn_graph.so.9", mode, "libcudnn_graph.so.9", only_children=True)
    m.add_lib(folder)
    m.env["CUDNN_DOCTOR_HELPER_TIMEOUT"] = "3"
    m.env["CUDNN_DOCTOR_PROBE_TIMEOUT"] = "3"
    if i % 2 == 0:
        args, want_json = ["explain", "CD301", "--json"], True
    else:
        args, want_json = ["explain", "RuntimeError: cuDNN error: CUDNN_STATUS_NOT_INITIALIZED"], False
    try:
        r = m.run(*args, timeout=45)
        time.sleep(0.3)
        left = leftovers_of(m.base)
    finally:
        reap(ctx.work)
    hold16(r, want_json, (0, 1, 2), secs=30, out_max=1 << 20, err_max=64 << 10)
    expect(not left, f"processes of the machine left after explain: {left[:2]}")


family("explainprobe", "lib", {f"{mode}-{lib}": (mode, lib, n) for n, (mode, lib) in
                               enumerate((md, lb) for md in PROBE_MODES for lb in PROBE_LIBS)},
       explainprobe_case, limit=70)


# ==================================================================================================================== concur
USER_BASHRC = "# the user's own\nexport EDITOR=vi\nalias ll='ls -l'\n"
USER_ZSHRC = "# the user's own zsh\nsetopt autocd\n"


def _start_all(m: M, argvs: list[list[str]], delays: list[float], env: dict | None = None) -> list[R]:
    procs = []
    t0 = time.monotonic()
    order = sorted(range(len(argvs)), key=lambda i: delays[i])
    for argv, delay in ((argvs[i], delays[i]) for i in order):
        time.sleep(max(0.0, delay - (time.monotonic() - t0)))
        p = subprocess.Popen(m.argv(*argv), env={**m.env, **(env or {})}, cwd=str(m.cwd), stdin=subprocess.DEVNULL,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
        procs.append((p, time.monotonic()))
    out = []
    for p, started in procs:
        try:
            o, e = p.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            kill_group(p.pid)
            raise Fail(f"hang: one of the runs at once still running after 60 s: {p.args[3:6]}") from None
        kill_group(p.pid)
        out.append(R(p.returncode, o, e, time.monotonic() - started))
    back: list = [None] * len(argvs)
    for i, r in zip(order, out):
        back[i] = r
    return back


def _no_temp(folder: Path) -> None:
    bad = [str(p.relative_to(folder)) for p in folder.rglob("*")
           if re.search(r"\.tmp|~$|\.part|\.new$|^\.#|\.swp$", p.name)]
    expect(not bad, f"temporary files left: {bad[:3]}")


def concur_case(ctx: Ctx, arg: tuple) -> None:
    what, n, seed = arg
    rng = random.Random(f"1616-{what}-{n}-{seed}")
    delays = [rng.uniform(0, 0.25) for _ in range(n)]
    m = healthy(ctx)
    m.cwd = ctx.work
    if what.startswith("completion_"):
        shell = what.split("_", 1)[1]
        (m.home / ".bashrc").write_text(USER_BASHRC)
        (m.home / ".zshrc").write_text(USER_ZSHRC)
        rs = _start_all(m, [["--install-completion", shell]] * n, delays, {"SHELL": f"/bin/{shell}"})
        for r in rs:
            hold16(r, False, (0, 2), secs=40)
            if r.rc == 2:
                one_error_line(r)
        expect(any(r.rc == 0 for r in rs), f"none of {n} installs at once succeeded: {rs[0]!r}")
        expect((m.home / ".bashrc").read_text().startswith(USER_BASHRC), "the user's .bashrc lines were lost")
        expect((m.home / ".zshrc").read_text().startswith(USER_ZSHRC), "the user's .zshrc lines were lost")
        for rc in (m.home / ".bashrc", m.home / ".zshrc"):
            _sourced_scripts_exist(m, rc)
        for p in m.home.rglob("*"):
            if not p.is_file():
                continue
            checker = {".fish": ["fish", "--no-config", "-n"], ".bash": ["bash", "-n"], ".zsh": ["zsh", "-n"]}.get(p.suffix)
            if p.name in (".bashrc",):
                checker = ["bash", "-n"]
            if p.name in (".zshrc",):
                checker = ["zsh", "-n"]
            if checker:
                c = subprocess.run([*checker, str(p)], capture_output=True, timeout=20)
                expect(c.returncode == 0, f"{p.relative_to(m.home)} does not parse after {n} installs at once: "
                                          f"{c.stderr[-200:]!r}")
        _no_temp(m.home)
        again = m.run("--install-completion", shell, timeout=40, env={"SHELL": f"/bin/{shell}"})
        hold16(again, False, (0,), secs=30)
    elif what.startswith("out_"):
        fmt = what.split("_", 1)[1]
        target = ctx.work / "out" / "report.file"
        target.parent.mkdir()
        if fmt == "junitxml":
            argv = ["check", "--json", "--junit-xml", str(target)]
        else:
            argv = ["check", "--format", fmt, "-o", str(target)]
        rs = _start_all(m, [argv] * n, delays)
        for r in rs:
            hold16(r, fmt == "junitxml", (0, 1), secs=40)
        expect(target.is_file(), "no file after the runs at once")
        body = target.read_bytes()
        if fmt == "json":
            strict_json(utf8_strict(body, "the file"))
        elif fmt in ("junit", "junitxml"):
            try:
                ET.fromstring(body)
            except ET.ParseError as e:
                raise Fail(f"the XML file is not whole after {n} writers at once: {e}") from None
        elif fmt == "prometheus":
            parse_prometheus(utf8_strict(body, "the file"))
        else:
            md_tables_whole(utf8_strict(body, "the file"))
        others = [p.name for p in target.parent.iterdir() if p.name != target.name]
        expect(not others, f"files left beside the output: {others[:3]}")
    elif what in ("uninstall_uninstall", "install_uninstall", "install_install_replace"):
        pfx = prefix_with_old(ctx)
        before = user_view(snapshot_tree(pfx))
        a = archive(ctx)
        inst_args = ["install", "--from", str(a), "--prefix", str(pfx), "--yes", "--replace", "--json"]
        uninst_args = ["uninstall", "--prefix", str(pfx), "--yes", "--json"]
        installed = None
        if what != "install_install_replace":
            pre = m.run(*inst_args, timeout=45)
            expect(pre.rc == 0, f"the install before failed: {pre!r}")
            installed = user_view(snapshot_tree(pfx))
        argvs = {"uninstall_uninstall": [uninst_args, uninst_args], "install_uninstall": [inst_args, uninst_args],
                 "install_install_replace": [inst_args, inst_args]}[what]
        rs = _start_all(m, argvs, delays)
        for r in rs:
            hold16(r, True, (0, 1, 2), secs=45)
        _user_files_kept(pfx)
        now = user_view(snapshot_tree(pfx))
        whole = installed_as_recorded(ctx, pfx) == []
        expect(now == before or now == installed or whole,
               f"after {what.replace('_', ' and ')} at once the prefix is neither as before nor whole as its manifest says")
        if what == "uninstall_uninstall":
            expect(sum(r.rc == 0 for r in rs) >= 1, "neither uninstall succeeded")
            expect(now == before, "after two uninstalls at once the user's old copy is not back as it was")
        if what == "install_install_replace":
            expect(sum(r.rc == 0 for r in rs) >= 1, "neither install succeeded")
        for r in rs:
            if r.rc == 2:
                expect(re.search(r"another|in progress|locked|busy|at once|running|nothing|no install|not installed|no record|manifest|already", r.out + r.err, re.I),
                       f"a refused run says neither that another is changing the prefix nor that nothing is left "
                       f"to do: {r.out[:300]!r}")
    else:  # mixed commands on one fresh cache
        cmds = [["check", "--json"], ["fix", "--json"], ["explain", "CD301", "--json"],
                ["compat", "torch==2.5.1", "--json"], ["check", "--json", "--deep"], ["check", "--format", "prometheus"]]
        argvs = [cmds[(seed + i) % len(cmds)] for i in range(n)]
        rs = _start_all(m, argvs, delays)
        for a, r in zip(argvs, rs):
            hold16(r, "--json" in a, (0, 1), secs=45)
        after = m.run("check", "--json", timeout=45)
        hold16(after, True, (0, 1), secs=30)
        _no_temp(Path(m.env["CUDNN_DOCTOR_CACHE_DIR"])) if Path(m.env["CUDNN_DOCTOR_CACHE_DIR"]).exists() else None


CONCUR = {}
for _sh in ("bash", "zsh", "fish"):  # powershell: no pwsh here, so its install is refused (README), not raced
    for _n in (2, 4, 8):
        for _s in (0, 1, 2):
            CONCUR[f"completion_{_sh}-{_n}-{_s}"] = (f"completion_{_sh}", _n, _s)
for _f in ("json", "junit", "prometheus", "markdown", "junitxml"):
    for _s in (0, 1):
        CONCUR[f"out_{_f}-4-{_s}"] = (f"out_{_f}", 4, _s)
for _s in range(6):
    CONCUR[f"cache-4-{_s}"] = ("cache", 4, _s)
for _w in ("uninstall_uninstall", "install_uninstall", "install_install_replace"):
    for _s in range(3):
        CONCUR[f"{_w}-2-{_s}"] = (_w, 2, _s)
family("concur", "at_once", CONCUR, concur_case, limit=90)


# ==================================================================================================================== signals3
SIG3_COMMANDS = ("project_repo", "explain_probe", "install_dry", "fix_fish", "compat_combo", "show_completion")


def signals3_case(ctx: Ctx, arg: tuple) -> None:
    cmd, sig, n = arg
    rng = random.Random(f"1616-{cmd}-{sig}-{n}")
    frac = rng.uniform(0.08, 0.95)
    m = healthy(ctx)
    m.cwd = ctx.work
    want_json = True
    check_after: Callable[[], None] = lambda: None
    if cmd == "project_repo":
        p = ctx.work / "repo"
        (p / ".git").mkdir(parents=True)
        for i in range(300):
            (p / f"p{i}").mkdir()
            (p / f"p{i}" / "pom.xml").write_text(_pom())
        before = {q.name: fingerprint(q / "pom.xml") for q in p.iterdir() if q.name != ".git"}
        args = ["check", "--project", str(p), "--json"]

        def check_after() -> None:
            now = {q.name: fingerprint(q / "pom.xml") for q in p.iterdir() if q.name != ".git"}
            expect(now == before, "a pom changed under check")
    elif cmd == "explain_probe":
        args = ["explain", "CD301", "--json"]
    elif cmd == "install_dry":
        pfx = prefix_with_old(ctx)
        snap = snapshot_tree(pfx)
        args = ["install", "--from", str(archive(ctx)), "--prefix", str(pfx), "--dry-run", "--json"]

        def check_after() -> None:
            expect(snapshot_tree(pfx) == snap, "a --dry-run changed the prefix")
    elif cmd == "fix_fish":
        args = ["fix", "--shell", "fish"]
        want_json = False
    elif cmd == "compat_combo":
        args = ["compat", "torch==2.5.1", "--cuda", "12.4", "--cudnn", "9.1", "--driver", "550.54.15",
                "--compute-capability", "8.6", "--json"]
    elif cmd == "show_completion":
        args = ["--show-completion", "zsh"]
        want_json = False
    else:
        raise ValueError(cmd)
    b = run_proc(m.argv(*args), m.env, m.cwd, 45, preexec=_default_signals)
    base = b.secs
    at = frac * base
    start = time.monotonic()
    proc = subprocess.Popen(m.argv(*args), env=m.env, cwd=str(m.cwd), stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
                            preexec_fn=_default_signals)
    outs: list[bytes] = []
    errs: list[bytes] = []
    t_out = threading.Thread(target=lambda: outs.append(proc.stdout.read()))
    t_err = threading.Thread(target=lambda: errs.append(proc.stderr.read()))
    t_out.start(); t_err.start()
    time.sleep(max(0.0, at - (time.monotonic() - start)))
    sent = proc.poll() is None
    if sent:
        try:
            os.kill(proc.pid, SIG_NUM[sig])
        except OSError:
            sent = False
    sent_at = time.monotonic()
    try:
        rc = proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        kill_group(proc.pid)
        raise Fail(f"still running 15 s after SIG{sig}") from None
    took = time.monotonic() - sent_at
    time.sleep(0.4)
    left = _group_left(proc.pid)
    kill_group(proc.pid)
    reap(ctx.work)
    t_out.join(10); t_err.join(10)
    r = R(rc, b"".join(outs), b"".join(errs), took)
    try:
        with open(BUILD / "signals-sent.log", "a") as f:
            f.write(f"r16 {cmd}-{sig}-{n} base={base:.2f} at={at:.2f} sent={sent} rc={rc}\n")
    except OSError:
        pass
    expect(not left, f"processes left after SIG{sig}: {left[:2]}")
    ended_by_signal = rc in (128 + SIG_NUM[sig], -SIG_NUM[sig])
    if (sent and sig == "INT" and b"Traceback (most recent call last)" in r.errb and b"cudnn_doctor" not in r.errb
            and r.errb.rstrip().endswith(b"KeyboardInterrupt") and not r.outb.strip()):
        check_after()
        return  # Ctrl-C inside the interpreter's own start-up: Python's exit, not the doctor's (round 15's call)
    if ended_by_signal:
        expect(sent, "ended by a signal it was not sent")
        errb = r.errb
        if b"Traceback (most recent call last)" in errb:
            expect(b"cudnn_doctor" not in errb, f"a traceback on SIG{sig} {at:.2f} s in, with the doctor's own frames "
                                                f"on the stack: {r.err[-500:]!r}")
            errb = b""
        r2 = R(128 + SIG_NUM[sig], r.outb, errb, took)
        data = sane(r2, (128 + SIG_NUM[sig],), want_json=want_json and bool(r.outb.strip()))
        if want_json and r.outb.strip():
            strict_json(utf8_strict(r.outb, "stdout"))
            expect("Interrupted" in json.dumps(data), f"the JSON does not say Interrupted: {r.out[:300]!r}")
        expect(took < 12, f"took {took:.1f} s to stop after SIG{sig}")
    else:
        hold16(r, want_json, (0, 1, 2), secs=60)
        if sent and took > 0.5:
            raise Fail(f"SIG{sig} at {at:.2f} s while running; exit {rc}, not {128 + SIG_NUM[sig]}: {r!r}")
    check_after()


family("signals3", "sig", {f"{c}-{s}-{n}": (c, s, n) for c in SIG3_COMMANDS for s in SIG_NUM for n in (0, 1, 2)},
       signals3_case, limit=80)


# ==================================================================================================================== devread
DEV_SOURCES = {"kmsg": "/dev/kmsg", "ptmx": "/dev/ptmx", "tty": "/dev/tty", "self_stdout": "/proc/self/fd/1",
               "self_stderr": "/proc/self/fd/2", "pagemap": "/proc/self/pagemap", "mem": "/proc/self/mem",
               "socket": None, "full": "/dev/full", "self_cwd": "/proc/self/cwd", "fd_3": "/proc/self/fd/3",
               "init_mem": "/proc/1/mem"}
DEV_COMMANDS = ("explain_from_file", "image", "fleet_merge", "project_pom", "install_from")


def _dev_at(path: Path, src: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if DEV_SOURCES[src] is None:
        s = socket.socket(socket.AF_UNIX)
        here = os.getcwd()
        os.chdir(path.parent)  # a socket's path is at most 107 bytes: bound by its name in its folder
        try:
            s.bind(path.name)
        finally:
            os.chdir(here)
        s.close()
    else:
        if not os.path.exists(DEV_SOURCES[src].replace("self", "1")) and not DEV_SOURCES[src].startswith("/proc/self"):
            raise Skip(f"{DEV_SOURCES[src]} is not on this machine")
        path.symlink_to(DEV_SOURCES[src])


def devread_case(ctx: Ctx, arg: tuple) -> None:
    src, cmd = arg
    m = ctx.machine()
    m.cwd = ctx.work
    want_json, rcs = True, (0, 1, 2)
    prec, h = precious(ctx)
    if cmd == "explain_from_file":
        f = ctx.work / "in" / "error.log"
        _dev_at(f, src)
        args = ["explain", "--from-file", str(f), "--json"]
    elif cmd == "image":
        f = ctx.work / "in" / "image.tar"
        _dev_at(f, src)
        args = ["image", str(f), "--json"]
    elif cmd == "fleet_merge":
        good = _report(ctx)
        d = ctx.work / "reports"
        d.mkdir()
        (d / "n1.json").write_text(json.dumps(_set_host(good, "gpu-01")))
        (d / "n2.json").write_text(json.dumps(_set_host(good, "gpu-02")))
        _dev_at(d / "n3.json", src)
        args = ["fleet", "merge", str(d), "--json"]
    elif cmd == "project_pom":
        p = ctx.work / "proj"
        _dev_at(p / "pom.xml", src)
        args = ["check", "--project", str(p), "--json"]
    else:
        f = ctx.work / "in" / "cudnn-linux-x86_64-9.19.0.56_cuda12-archive.tar.xz"
        _dev_at(f, src)
        pfx = prefix_with_old(ctx)
        args = ["install", "--from", str(f), "--prefix", str(pfx), "--yes", "--json"]
    # a user may shorten explain's wait on a source that sends nothing (README: CUDNN_DOCTOR_READ_TIMEOUT, 60 s)
    r = m.run(*args, timeout=40, preexec=cap_as(2048), env={"CUDNN_DOCTOR_READ_TIMEOUT": "5"})
    reap(ctx.work)
    hold16(r, want_json, rcs, secs=25, out_max=1 << 20, err_max=64 << 10)
    kept(prec, h)
    if cmd == "install_from":
        _user_files_kept(ctx.work / "cuda")
        expect(r.rc != 0 or installed_as_recorded(ctx, ctx.work / "cuda") == [], "exit 0 with no install made")
    if cmd == "fleet_merge" and r.rc in (0, 1):
        d = one_json(r)
        expect(d.get("nodes") in (3, 2) or d.get("failed"), f"the node of a device is neither counted nor failed")


family("devread", "src", {f"{s}-{c}": (s, c) for s in DEV_SOURCES for c in DEV_COMMANDS}, devread_case, limit=70)


# ==================================================================================================================== fromname
SECRET = "s3cretPW"
FROM_URLS = {
    "http_userinfo": f"http://alice:{SECRET}@127.0.0.1:9/cudnn-linux-x86_64-9.19.0.56_cuda12-archive.tar.xz",
    "https_userinfo": f"https://alice:{SECRET}@127.0.0.1:9/cudnn.tar.xz",
    "userinfo_only_user": f"http://{SECRET}@127.0.0.1:9/cudnn.tar.xz",
    "ftp": "ftp://127.0.0.1:9/cudnn.tar.xz",
    "data_url": "data:application/x-xz;base64,/Td6WFoAAAFpIt42AgAhARwAAAAQz1jMAQAAEHN0aW5rAAAAAA==",
    "javascript": "javascript:alert(1)",
    "ipv6": "http://[::1]:9/cudnn.tar.xz",
    "bad_port": "http://127.0.0.1:99999/cudnn.tar.xz",
    "pct_nul": "http://127.0.0.1:9/%00.tar.xz",
    "space_host": "http://exa mple/cudnn.tar.xz",
    "crlf_header": "http://127.0.0.1:9/x.tar.xz\r\nX-Injected: 1",
    "url_100k": "http://127.0.0.1:9/" + "a" * 100000 + ".tar.xz",
    "fragment_csi": "http://127.0.0.1:9/x.tar.xz#\x1b[2J\x1b]0;owned\x07",
    "bidi_path": "http://127.0.0.1:9/\u202ezx.rat.tar.xz",
    "upper_scheme": "HTTP://127.0.0.1:9/cudnn.tar.xz",
    "octal_hex_ip": "http://0x7f.0.0.01:9/cudnn.tar.xz",
    "no_file_name": "http://127.0.0.1:9/",
    "unix_socket": "unix:///var/run/docker.sock",
    "userinfo_confusion": f"http://localhost:9@127.0.0.1:9/{SECRET}x/../cudnn.tar.xz".replace(f"{SECRET}x/../", ""),
    "pct_userinfo": f"http://alice:{SECRET}%40x@127.0.0.1:9/cudnn.tar.xz",
}
CRED_ELSEWHERE = ("mirror_userinfo", "mirror_env_userinfo", "proxy_userinfo_from", "proxy_userinfo_image",
                  "verbose_userinfo")
FROM_FILES = ("file_localhost", "file_single_slash", "file_upper_scheme", "file_fragment", "name_newline_workflow",
              "name_csi", "name_dash", "upper_ext", "no_ext", "tarxz_named_zip", "tarxz_named_whl", "zip_named_tarxz")


def fromname_case(ctx: Ctx, arg: tuple) -> None:
    key, mode = arg
    m = ctx.machine()
    m.cwd = ctx.work
    pfx = prefix_with_old(ctx)
    prec, h = precious(ctx)
    real = archive(ctx)
    served_real = False
    env: dict = {}
    if key in CRED_ELSEWHERE:
        # the password sits in a mirror URL, the mirror variable, a proxy variable, or a -v run's URL
        url = f"http://alice:{SECRET}@127.0.0.1:9/redist/"
        j = ["--json"] if mode == "json" else []
        if key == "mirror_userinfo":
            args = ["install", "--version", "9.19.0", "--cuda", "12", "--mirror", url, "--prefix", str(pfx), "--yes", *j]
        elif key == "mirror_env_userinfo":
            env = {"CUDNN_DOCTOR_MIRROR": url}
            args = ["install", "--version", "9.19.0", "--cuda", "12", "--prefix", str(pfx), "--yes", *j]
        elif key == "proxy_userinfo_from":
            env = {"NO_PROXY": "", "no_proxy": "", "HTTPS_PROXY": f"http://alice:{SECRET}@127.0.0.1:9",
                   "https_proxy": f"http://alice:{SECRET}@127.0.0.1:9", "HTTP_PROXY": f"http://alice:{SECRET}@127.0.0.1:9",
                   "http_proxy": f"http://alice:{SECRET}@127.0.0.1:9"}
            args = ["install", "--from", "https://developer.download.nvidia.com/compute/cudnn/redist/cudnn/x.tar.xz",
                    "--prefix", str(pfx), "--yes", *j]
        elif key == "proxy_userinfo_image":
            env = {"NO_PROXY": "", "no_proxy": "", "HTTPS_PROXY": f"http://alice:{SECRET}@127.0.0.1:9",
                   "https_proxy": f"http://alice:{SECRET}@127.0.0.1:9"}
            args = ["image", "registry.example.com/team/app:1", *j]
        else:
            args = ["install", "--from", url + "cudnn.tar.xz", "--prefix", str(pfx), "--yes", "-v", *j]
        before = user_view(snapshot_tree(pfx))
        r = m.run(*args, timeout=45, preexec=cap_as(2048), env=env)
        reap(ctx.work)
        hold16(r, mode == "json", (0, 1, 2), secs=30, out_max=1 << 20, err_max=16 << 10)
        expect(SECRET not in r.out + r.err, "the password of the URL was printed")
        kept(prec, h)
        _user_files_kept(pfx)
        expect(r.rc != 0 and user_view(snapshot_tree(pfx)) == before, "an install with no reachable source changed "
                                                                     "the prefix or exited 0")
        return
    if key in FROM_URLS:
        src = FROM_URLS[key]
    else:
        d = ctx.work / "dl"
        d.mkdir()
        name = {"file_localhost": real.name, "file_single_slash": real.name, "file_upper_scheme": real.name,
                "file_fragment": real.name, "name_newline_workflow": "cudnn\n::error::owned.tar.xz",
                "name_csi": "cudnn\x1b[2J\u202e.tar.xz", "name_dash": "-rf.tar.xz", "upper_ext": "CUDNN.TAR.XZ",
                "no_ext": "cudnn", "tarxz_named_zip": "cudnn.zip", "tarxz_named_whl": "cudnn-9.19.0-py3-none-any.whl",
                "zip_named_tarxz": "cudnn.tar.xz"}[key]
        f = d / name
        if key == "zip_named_tarxz":
            with zipfile.ZipFile(f, "w") as z:
                z.writestr("include/cudnn_version.h", "#define CUDNN_MAJOR 9\n")
        else:
            shutil.copyfile(real, f)
            served_real = True  # the real archive under another name: read by its content, it may be installed
        src = {"file_localhost": f"file://localhost{f}", "file_single_slash": f"file:{f}",
               "file_upper_scheme": f"FILE://{f}", "file_fragment": f"file://{f}#frag"}.get(key, str(f))
    if mode == "json":
        args = ["install", f"--from={src}", "--prefix", str(pfx), "--yes", "--replace", "--json"]
    else:
        args = ["install", f"--from={src}", "--prefix", str(pfx), "--dry-run"]
    before = user_view(snapshot_tree(pfx))
    r = m.run(*args, timeout=45, preexec=cap_as(2048))
    reap(ctx.work)
    hold16(r, mode == "json", (0, 1, 2), secs=30, out_max=1 << 20, err_max=16 << 10)
    expect(SECRET not in r.out + r.err, "the password of the URL was printed")
    no_workflow(r.out + r.err)
    kept(prec, h)
    _user_files_kept(pfx)
    no_marks(ctx.work)
    if mode == "text":
        expect(user_view(snapshot_tree(pfx)) == before, "--dry-run changed the prefix")
    elif r.rc == 0:
        expect(served_real, "exit 0 for an archive that is not the real one")
        expect(installed_as_recorded(ctx, pfx) == [], "exit 0 without the recorded install in the prefix")
    else:
        now = user_view(snapshot_tree(pfx))
        expect(now == before, "a refused install changed the prefix")


family("fromname", "src", {f"{k}-{md}": (k, md) for k in list(FROM_URLS) + list(FROM_FILES) + list(CRED_ELSEWHERE)
                           for md in ("json", "text")},
       fromname_case, limit=70)



# ==================================================================================================================== ocitar
def _tar_folder(folder: Path, out: Path, arc_prefix: str = "", skip: tuple = (),
                extra: list[tuple[tarfile.TarInfo, bytes | None]] | None = None, gz: bool = False) -> Path:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as t:
        for p in sorted(folder.rglob("*")):
            rel = str(p.relative_to(folder))
            if rel in skip:
                continue
            info = t.gettarinfo(str(p), arcname=arc_prefix + rel)
            info.uid = info.gid = 0
            info.uname = info.gname = ""
            if p.is_file():
                with open(p, "rb") as f:
                    t.addfile(info, f)
            else:
                t.addfile(info)
        for info, data in extra or []:
            t.addfile(info, io.BytesIO(data) if data is not None else None)
    body = buf.getvalue()
    out.write_bytes(gzip.compress(body) if gz else body)
    return out


def _ti16(name: str, typ: bytes = tarfile.REGTYPE, size: int = 0, link: str = "") -> tarfile.TarInfo:
    t = tarfile.TarInfo(name)
    t.type, t.size, t.linkname, t.mode = typ, size, link, 0o644
    return t


OCI_KINDS = ("layout_version_999", "layout_missing", "digest_sha512", "digest_upper", "digest_dotdot",
             "digest_algo_dotdot", "config_is_layer", "zstd_type_gzip_data", "nondistributable_urls", "index_nested_3",
             "index_1000_same", "annotations_5mb", "ref_name_escape", "size_negative", "size_2_64", "tar_gz",
             "tar_dot_prefix", "tar_in_subfolder", "member_symlink_index_passwd", "member_hardlink_blob_passwd",
             "blobs_symlink_root", "index_twice", "index_char_device", "pax_path_dotdot")


def ocitar_case(ctx: Ctx, arg: tuple) -> None:
    kind, want_json = arg
    i = img()
    prec, h = precious(ctx)
    man = idx = None
    layout_text = '{"imageLayoutVersion": "1.0.0"}'
    skip: tuple = ()
    extra: list = []
    arc_prefix = ""
    gz = False
    extra_blobs: list[bytes] = []
    post: Callable[[Path], None] = lambda folder: None
    if kind == "layout_version_999":
        layout_text = '{"imageLayoutVersion": "9.9.9"}'
    elif kind == "layout_missing":
        skip = ("oci-layout",)
    elif kind == "digest_sha512":
        def post(folder: Path) -> None:
            man_b = json.loads((folder / "index.json").read_text())["manifests"][0]["digest"].split(":")[1]
            mb = (folder / "blobs" / "sha256" / man_b).read_bytes()
            mobj = json.loads(mb)
            (folder / "blobs" / "sha512").mkdir()
            for layer in mobj["layers"]:
                data = (folder / "blobs" / "sha256" / layer["digest"].split(":")[1]).read_bytes()
                d512 = hashlib.sha512(data).hexdigest()
                (folder / "blobs" / "sha512" / d512).write_bytes(data)
                layer["digest"] = "sha512:" + d512
            nb = json.dumps(mobj).encode()
            (folder / "blobs" / "sha256" / hashlib.sha256(nb).hexdigest()).write_bytes(nb)
            (folder / "index.json").write_text(json.dumps({"schemaVersion": 2, "manifests": [
                {"mediaType": i.MANIFEST, "digest": i.digest(nb), "size": len(nb)}]}))
    elif kind == "digest_upper":
        def post(folder: Path) -> None:
            ix = json.loads((folder / "index.json").read_text())
            d = ix["manifests"][0]["digest"].split(":")[1]
            os.rename(folder / "blobs" / "sha256" / d, folder / "blobs" / "sha256" / d.upper())
            ix["manifests"][0]["digest"] = "sha256:" + d.upper()
            (folder / "index.json").write_text(json.dumps(ix))
    elif kind == "digest_dotdot":
        man = lambda o: o["config"].update({"digest": "sha256:../../../../../../../etc/passwd"})
    elif kind == "digest_algo_dotdot":
        man = lambda o: o["layers"][0].update({"digest": "../../../../../../etc:passwd"})
    elif kind == "config_is_layer":
        man = lambda o: o.update({"config": dict(o["layers"][0], mediaType=i.CONFIG)})
    elif kind == "zstd_type_gzip_data":
        man = lambda o: [x.update({"mediaType": "application/vnd.oci.image.layer.v1.tar+zstd"}) for x in o["layers"]]
    elif kind == "nondistributable_urls":
        def man(o: dict) -> None:
            o["layers"].append({"mediaType": "application/vnd.oci.image.layer.nondistributable.v1.tar+gzip",
                                "digest": "sha256:" + "ab" * 32, "size": 1 << 30, "urls": ["http://127.0.0.1:9/blob"]})
    elif kind == "index_nested_3":
        def post(folder: Path) -> None:
            ix = (folder / "index.json").read_bytes()
            for _ in range(3):
                (folder / "blobs" / "sha256" / hashlib.sha256(ix).hexdigest()).write_bytes(ix)
                ix = json.dumps({"schemaVersion": 2, "mediaType": i.INDEX, "manifests": [
                    {"mediaType": i.INDEX, "digest": i.digest(ix), "size": len(ix)}]}).encode()
            (folder / "index.json").write_bytes(ix)
    elif kind == "index_1000_same":
        idx = lambda o: o.update({"manifests": o["manifests"] * 1000})
    elif kind == "annotations_5mb":
        idx = lambda o: o.update({"annotations": {f"k{n}": "v\x1b[2J" * 100 for n in range(12000)}})
    elif kind == "ref_name_escape":
        idx = lambda o: o["manifests"][0].update({"annotations": {
            "org.opencontainers.image.ref.name": "\x1b[2J\n::error::owned\u202e"}})
    elif kind == "size_negative":
        man = lambda o: o["layers"][0].update({"size": -1})
    elif kind == "size_2_64":
        man = lambda o: o["layers"][0].update({"size": 2 ** 64})
    elif kind == "tar_gz":
        gz = True
    elif kind == "tar_dot_prefix":
        arc_prefix = "./"
    elif kind == "tar_in_subfolder":
        arc_prefix = "image-oci/"
    elif kind == "member_symlink_index_passwd":
        skip = ("index.json",)
        extra = [(_ti16("index.json", tarfile.SYMTYPE, link="/etc/passwd"), None)]
    elif kind == "member_hardlink_blob_passwd":
        extra = [(_ti16("blobs/sha256/" + "cd" * 32, tarfile.LNKTYPE, link="../../../../../etc/passwd"), None)]
        idx = lambda o: o["manifests"].insert(0, {"mediaType": i.MANIFEST, "digest": "sha256:" + "cd" * 32, "size": 100})
    elif kind == "blobs_symlink_root":
        extra = [(_ti16("blobs", tarfile.SYMTYPE, link="/"), None)]
    elif kind == "index_twice":
        garbage = b'{"schemaVersion": 2, "manifests": [{"mediaType": "x", "digest": "sha256:../../etc/passwd"}]}'
        extra = [(_ti16("index.json", size=len(garbage)), garbage)]
    elif kind == "index_char_device":
        skip = ("index.json",)
        t = _ti16("index.json", tarfile.CHRTYPE)
        t.devmajor, t.devminor = 1, 3
        extra = [(t, None)]
    elif kind == "pax_path_dotdot":
        t = _ti16("harmless", size=len(layout_text))
        t.pax_headers = {"path": "../../../../index.json"}
        extra = [(t, layout_text.encode())]
    folder = raw_oci(ctx, man=man, idx=idx, extra_blobs=extra_blobs, name="layout")
    (folder / "oci-layout").write_text(layout_text)
    post(folder)
    target = _tar_folder(folder, ctx.work / ("image.tar.gz" if gz else "image.tar"), arc_prefix, skip, extra, gz)
    shutil.rmtree(folder)
    m = ctx.machine("img")
    m.cwd = ctx.work
    args = ["image", str(target)] + (["--json"] if want_json else [])
    r = m.run(*args, timeout=45, preexec=cap_as(2048))
    reap(ctx.work)
    hold16(r, want_json, (0, 1, 2), secs=30, out_max=1 << 20, err_max=64 << 10)
    no_passwd(r)
    if not want_json:
        no_workflow(r.out + r.err)
    kept(prec, h)
    expect(not Path("/etc/passwd.cudnn-doctor").exists(), "a file was made beside /etc/passwd")


family("ocitar", "arc", {f"{k}-{'json' if j else 'text'}": (k, j) for k in OCI_KINDS for j in (True, False)},
       ocitar_case, limit=70)




# ####################################################################################################################
# ROUND SEVENTEEN: the classes scored this round. Round sixteen's classes are dropped (their helpers stay above).
# ####################################################################################################################
CASES.clear()
CLASSES.clear()
CLASSES.update({
    "fixshell4": "fix --shell for six shells, a cuDNN folder named with a newline and command, $'..', $((..)), fish $(..), !!, <(..), %%, ^+newline, curly quotes, \\+newline, Latin-1 with $(..), ${env:..}",
    "resemble": "explain --by-resemblance (never attacked) fed hostile messages: 200k unique words, 5 MB words, escapes, NULs, non-UTF-8, markdown links",
    "explainarg": "explain MESSAGE as a command-line word (probing this machine): 128 KiB, 12,000 lines, escapes, option-like words, JSON, codes in escapes",
    "journalflip": "install over a journal left by a killed install with one byte flipped, inserted or removed at seeded offsets (seed 1717)",
    "uninstman": "uninstall where the last manifest has wrong types or hostile values in files/backed_up/created_folders/schema",
    "installman": "install --replace (a newer cuDNN) and its --dry-run over a prefix whose last manifest is hostile (the same kinds)",
    "signals4": "SIGQUIT/SIGUSR1/SIGUSR2/SIGALRM (no handler a user installs) at seeded instants during check, explain CD301, install --yes, image",
    "dockerarc2": "docker-save archives not tried before: gzip layers with a lying CRC/ISIZE, odd compression magic, hostile config fields, version files and headers in layers; JSON+text and -v",
    "fleetrun2": "fleet run --slurm where nodes answer through files of the wrong kind (FIFO, link, device, folder, sparse), BOMs, UTF-16, floods, late writers",
})


def no_marks17(root: Path) -> None:
    made = [str(p) for p in root.rglob("MARK*")]
    expect(not made, f"a command was run: {made[:2]}")


# ==================================================================================================================== fixshell4
FIX4_VALUES = {
    "newline_touch": "a\ntouch MARK\nb", "ansi_c": "$'\\x41'", "arith": "$((6*7))",
    "fish_dollar_paren": "x$(touch MARK)y", "history_bang": "a!!b!$", "process_sub": "<(touch MARK)",
    "double_percent": "%%PATH%%", "caret_newline": "a^\nb", "curly_quotes": "a\u2019b\u201dc",
    "backslash_newline": "a\\\nb", "latin1_subst": os.fsdecode(b"caf\xe9$(touch MARK)"), "ps_var_brace": "${env:PATH}",
}
FIX_VALUES.update({f"r17_{k}": v for k, v in FIX4_VALUES.items()})


def fixshell4_case(ctx: Ctx, arg: tuple[str, str]) -> None:
    key, shell = arg
    try:
        fixshell_case(ctx, (f"r17_{key}", shell))
    finally:
        reap(ctx.work)
    no_marks17(ctx.work)


family("fixshell4", "folder", {f"{k}-{s}": (k, s) for k in FIX4_VALUES
                               for s in ("bash", "zsh", "fish", "powershell", "cmd", "user")},
       fixshell4_case, limit=80)


# ==================================================================================================================== resemble
def _words(seed: int, n: int, alphabet: str) -> str:
    rng = random.Random(seed)
    return " ".join("".join(rng.choice(alphabet) for _ in range(rng.randrange(2, 9))) for _ in range(n))


RESEMBLE_INPUTS: dict[str, Callable[[], bytes]] = {
    "baseline_message": lambda: MSG,
    "unique_words_200k": lambda: " ".join(f"w{i}x" for i in range(200_000)).encode() + b"\n" + MSG,
    "one_word_5mb": lambda: b"cudnn" * 1_000_000,
    "bigram_500k": lambda: b"cudnn error " * 500_000,
    "hex_addresses_100k": lambda: b"".join(b"  at 0x%012x in libcudnn.so.9\n" % (i * 7919) for i in range(100_000)) + MSG,
    "cjk_words_100k": lambda: _words(1701, 100_000, "\u4e00\u4e8c\u4e09\u56db\u4e94\u516d\u4e03\u516b").encode(),
    "punctuation_2mb": lambda: b"!?.,;:()[]{}" * 170_000,
    "digits_1e6": lambda: b"1 " * 1_000_000,
    "escape_every_word": lambda: b" ".join(b"\x1b[3%dm" % (i % 8) + w + b"\x1b]0;t\x07" for i, w in enumerate(MSG.split())),
    "osc52_then_message": lambda: b"\x1b]52;c;cm0gLXJmIH4=\x1b\\" + MSG,
    "workflow_lines": lambda: b"::error::made by the message\n::add-mask::x\n" + MSG + b"\n::stop-commands::t\n",
    "nonutf8_seed1702": lambda: bytes(random.Random(1702).randrange(0x80, 0x100) for _ in range(50_000)) + MSG,
    "empty": lambda: b"",
    "whitespace_only": lambda: b" \n\t\r\x0b\x0c" * 2000,
    "nuls_then_message": lambda: b"\0" * 5000 + MSG + b"\0",
    "url_500k": lambda: b"see https://" + b"a" * 500_000 + b".example/ " + MSG,
    "bidi_message": lambda: ("\u202e" + MSG.decode() + "\u2067\u2069\u202c").encode(),
    "markdown_link": lambda: b"[CUDNN_STATUS_NOT_INITIALIZED](javascript:alert(1)) ![x](http://127.0.0.1:9/p.png) " + MSG,
    "broken_surrogates": lambda: b"\xed\xa0\x80\xed\xbf\xbf" * 5000 + MSG,
    "combining_100k": lambda: ("e" + "\u0301" * 100_000).encode() + b" " + MSG,
    "emoji_words": lambda: ("\U0001F525 " * 100_000).encode() + MSG,
    "many_known_codes": lambda: b" ".join(b"CD%03d" % i for i in range(100, 1000)) * 50,
    "html_and_script": lambda: b"<script>alert(1)</script><!-- " + MSG + b" -->",
    "tokens_128k_arg": lambda: (b"a" * 130_000)[:130_000],
}


def resemble_case(ctx: Ctx, arg: tuple[str, bool]) -> None:
    key, as_json = arg
    m = ctx.machine()
    m.cwd = ctx.work
    data = RESEMBLE_INPUTS[key]()
    as_arg = len(data) <= 120_000 and b"\0" not in data and data != b""
    tail = ["--by-resemblance", "--offline-only"] + (["--json"] if as_json else [])
    if as_arg:
        r = run_proc(m.argv("explain", os.fsdecode(data), *tail), m.env, m.cwd, 45, preexec=cap_as(2048))
    else:
        r = run_proc(m.argv("explain", "-", *tail), m.env, m.cwd, 45, stdin=data, preexec=cap_as(2048))
    hold16(r, as_json, (0, 1, 2), secs=30, out_max=1 << 20, err_max=16 << 10)
    if not as_json:
        no_workflow(r.out + r.err)
        if r.rc == 2:
            one_error_line(r)
    no_marks17(ctx.work)


family("resemble", "msg", {f"{k}-{'json' if j else 'text'}": (k, j) for k in RESEMBLE_INPUTS for j in (True, False)},
       resemble_case, limit=70)


# ==================================================================================================================== explainarg
EXPLAIN_ARGS: dict[str, Callable[[], list[str]]] = {
    "arg_128k_minus_1": lambda: [("RuntimeError: cuDNN error: " + "x" * 131_000)[:131_071]],
    "lines_12000": lambda: ["\n".join(["CUDNN_STATUS_NOT_INITIALIZED"] + [f"f{i}" for i in range(12_000)])],
    "osc8_link_around": lambda: ["\x1b]8;;http://127.0.0.1:9/x\x1b\\" + MSG.decode() + "\x1b]8;;\x1b\\"],
    "dcs_sixel": lambda: ["\x1bPq#0;2;0;0;0#1!10~\x1b\\" + MSG.decode()],
    "cursor_moves": lambda: ["\x1b[10A\x1b[2K\x1b[1;1H" + MSG.decode() + "\x1b[?1049h"],
    "c1_utf8": lambda: ["\u009b2J\u0090x\u009c" + MSG.decode()],
    "nonutf8_word": lambda: [os.fsdecode(b"\xff\xfe" + MSG + b"\xc3\x28")],
    "after_dashdash_help": lambda: ["--", "--help"],
    "after_dashdash_json": lambda: ["--", "--json"],
    "after_dashdash_dash_message": lambda: ["--", "-" + MSG.decode()],
    "two_codes_newline": lambda: ["CD301\nCD302"],
    "code_in_sgr": lambda: ["\x1b[31mCD301\x1b[0m"],
    "report_json_as_message": lambda: [json.dumps({"schema": "cudnn-doctor/report/1", "findings": [
        {"code": "CD301", "title": "\x1b[2J::error::x"}]})],
    "traceback_5000_frames": lambda: ["Traceback (most recent call last):\n" + "".join(
        f'  File "/x/m{i}.py", line {i}, in f\n' for i in range(2500)) + MSG.decode()],
    "message_u2028_lines": lambda: ["\u2028".join([MSG.decode()] * 2000)],
    "only_controls": lambda: ["".join(chr(c) for c in range(1, 32) if c != 10) * 100],
}


def explainarg_case(ctx: Ctx, arg: tuple[str, bool]) -> None:
    key, as_json = arg
    m = healthy(ctx)
    m.cwd = ctx.work
    words = EXPLAIN_ARGS[key]()
    extra = ["--json"] if as_json else []
    argv = m.argv("explain", *extra, *words) if words[0] == "--" else m.argv("explain", *words, *extra)
    try:
        r = run_proc(argv, m.env, m.cwd, 45, preexec=cap_as(2048))
        time.sleep(0.2)
        left = leftovers_of(m.base)
    finally:
        reap(ctx.work)
    hold16(r, as_json, (0, 1, 2), secs=30, out_max=1 << 20, err_max=16 << 10)
    expect(not left, f"processes of the machine left after explain: {left[:2]}")
    if not as_json:
        no_workflow(r.out + r.err)
        if r.rc == 2:
            one_error_line(r)


family("explainarg", "word", {f"{k}-{'json' if j else 'text'}": (k, j) for k in EXPLAIN_ARGS for j in (True, False)},
       explainarg_case, limit=70)


# ==================================================================================================================== journalflip
def journalflip_case(ctx: Ctx, arg: tuple[str, int]) -> None:
    how, k = arg
    env, prefix, argv, before = _killed_install(ctx)
    j = prefix / ".cudnn-doctor" / "journal.json"
    data = bytearray(j.read_bytes())
    rng = random.Random(f"1717-{how}-{k}")
    off = rng.randrange(0, len(data))
    if how == "flip":
        data[off] ^= 1 << rng.randrange(0, 8)
    elif how == "insert":
        data[off:off] = bytes([rng.choice(b'"{}[],:\\0 \n\xff')])
    elif how == "remove":
        del data[off]
    elif how == "zero_run":
        n = rng.randrange(1, 64)
        data[off:off + n] = b"\0" * len(data[off:off + n])
    j.write_bytes(bytes(data))
    r = run_proc(argv + ["--json"], env, ctx.tree, 50)
    _judge_after(ctx, r, prefix, before, f"journal {how} at {off} of {len(data)}")
    # whatever the first run said, a second run after it must not leave the prefix mixed and silent
    r2 = run_proc(argv + ["--json"], env, ctx.tree, 50)
    _judge_after(ctx, r2, prefix, before, f"second run after journal {how} at {off}")


family("journalflip", "byte", {f"{h}-{k}": (h, k) for h in ("flip", "insert", "remove", "zero_run") for k in range(9)},
       journalflip_case, limit=90)


# ==================================================================================================================== uninstman
UNINSTMAN = ("files_null", "files_object", "files_string", "file_entry_list", "path_int", "path_null", "path_empty",
             "path_dot", "path_lib64_folder", "path_nul", "kind_device", "symlink_target_outside", "sha256_int",
             "size_negative", "mode_setuid", "created_folders_dot", "created_folders_outside", "backed_up_saved_outside",
             "backed_up_path_outside", "backed_up_string", "top_level_array", "schema_future", "version_escapes",
             "files_20000_missing")


def _mutate_manifest(md: dict, kind: str, pf: Path, prefix: Path) -> object:
    """The last manifest MD made hostile in the way KIND says (PF: a file of the user's outside the prefix)."""
    rel_pf = os.path.relpath(pf, prefix)
    f0 = md["files"][0]
    if kind == "files_null":
        md["files"] = None
    elif kind == "files_object":
        md["files"] = {"include/cudnn.h": f0}
    elif kind == "files_string":
        md["files"] = "include/cudnn.h"
    elif kind == "file_entry_list":
        md["files"][0] = list(f0.values())
    elif kind == "path_int":
        f0["path"] = 7
    elif kind == "path_null":
        f0["path"] = None
    elif kind == "path_empty":
        f0["path"] = ""
    elif kind == "path_dot":
        f0["path"] = "."
    elif kind == "path_lib64_folder":
        md["files"].append({**f0, "path": "lib64"})
    elif kind == "path_nul":
        f0["path"] = "include/cudnn.h\u0000x"
    elif kind == "kind_device":
        f0["kind"] = "chardev"
    elif kind == "symlink_target_outside":
        md["files"].append({"path": "lib64/libcudnn.so", "kind": "symlink", "sha256": None, "size": 0, "mode": 511,
                            "target": str(pf)})
    elif kind == "sha256_int":
        f0["sha256"] = 12345
    elif kind == "size_negative":
        f0["size"] = -1
    elif kind == "mode_setuid":
        f0["mode"] = 0o4777
    elif kind == "created_folders_dot":
        md["created_folders"] = [".", ""]
    elif kind == "created_folders_outside":
        md["created_folders"] = [os.path.relpath(pf.parent, prefix), str(pf.parent)]
    elif kind == "backed_up_saved_outside":
        for b in md.get("backed_up") or []:
            b["saved"] = rel_pf
    elif kind == "backed_up_path_outside":
        for b in md.get("backed_up") or []:
            b["path"] = rel_pf
    elif kind == "backed_up_string":
        md["backed_up"] = "lib64/libcudnn.so.9"
    elif kind == "top_level_array":
        md = [md]
    elif kind == "schema_future":
        md["schema"] = "cudnn-doctor/install-manifest/99"
        md["files"] = [{"p": x["path"]} for x in md["files"]]
    elif kind == "version_escapes":
        md["version"] = "9.19.0\x1b[2J\x1b]52;c;Zm9v\x07\n::error::owned\u202e"
        md["source"] = md["version"]
    elif kind == "files_20000_missing":
        md["files"] += [{**f0, "path": f"lib64/nothing{i}.so"} for i in range(20_000)]
    return md


def uninstman_case(ctx: Ctx, kind: str) -> None:
    env = install_env(ctx)
    a = archive(ctx)
    prefix = prefix_with_old(ctx)
    sane(run_proc(cli_argv("install", "--from", str(a), "--prefix", str(prefix), "--yes"), env, ctx.tree, 50), (0,))
    dot = prefix / ".cudnn-doctor"
    mans = sorted(dot.glob("manifest-*.json"))
    expect(mans, "harness: no manifest after the install")
    man = mans[-1]
    md = json.loads(man.read_text())
    pf, ph = precious(ctx)
    rel_pf = os.path.relpath(pf, prefix)
    snap_user = {p.name: p.read_bytes() for p in pf.parent.iterdir()}
    md = _mutate_manifest(md, kind, pf, prefix)
    man.write_text(json.dumps(md, indent=1))
    mode_before = {p.name: p.stat().st_mode for p in prefix.rglob("*") if p.is_file() and not p.is_symlink()}
    for as_json in (False, True):
        if as_json and not prefix.is_dir():
            break
        un = cli_argv("uninstall", "--prefix", str(prefix), "--yes", *(["--json"] if as_json else []))
        r = run_proc(un, env, ctx.tree, 45)
        hold16(r, as_json, (0, 1, 2), secs=35, out_max=1 << 20, err_max=64 << 10)
        if not as_json:
            no_workflow(r.out + r.err)
            if r.rc == 2:
                one_error_line(r)
        kept(pf, ph)
        expect(pf.parent.is_dir() and {p.name: p.read_bytes() for p in pf.parent.iterdir()} == snap_user,
               "the user's folder outside the prefix was changed")
        expect(not [p for p in prefix.rglob("*") if p.is_file() and not p.is_symlink()
                    and p.stat().st_mode & (stat.S_ISUID | stat.S_ISGID)], "a set-uid file was made in the prefix")
        expect(not (prefix / "lib64").is_symlink() and prefix.is_dir(), "the prefix itself was removed or replaced")
        mine = prefix / "include" / "mine.h"  # the user's, never the install's: no uninstall removes it
        expect(mine.is_file() and mine.read_text() == "/* the user's own header */\n", "the user's own header was lost")
    del mode_before


family("uninstman", "man", {k: k for k in UNINSTMAN}, uninstman_case, limit=90)



# ==================================================================================================================== installman
INSTALLMAN = tuple(k for k in UNINSTMAN if k not in ("files_20000_missing",)) + ("files_100000_missing",)


def installman_case(ctx: Ctx, kind: str) -> None:
    """A second install (a newer cuDNN, --replace) and `install --dry-run` over a prefix whose last manifest is
    hostile: the install reads what the earlier one recorded before it changes anything."""
    env = install_env(ctx)
    a = archive(ctx)
    b = archive(ctx, version=92000)
    prefix = prefix_with_old(ctx)
    sane(run_proc(cli_argv("install", "--from", str(a), "--prefix", str(prefix), "--yes"), env, ctx.tree, 50), (0,))
    dot = prefix / ".cudnn-doctor"
    mans = sorted(dot.glob("manifest-*.json"))
    expect(mans, "harness: no manifest after the install")
    man = mans[-1]
    md = json.loads(man.read_text())
    pf, ph = precious(ctx)
    snap_user = {p.name: p.read_bytes() for p in pf.parent.iterdir()}
    if kind == "files_100000_missing":
        md["files"] += [{**md["files"][0], "path": f"lib64/nothing{i}.so"} for i in range(100_000)]
    else:
        md = _mutate_manifest(md, kind, pf, prefix)
    man.write_text(json.dumps(md, indent=1))
    snap = snapshot_tree(prefix)
    dry = run_proc(cli_argv("install", "--from", str(b), "--prefix", str(prefix), "--replace", "--dry-run"),
                   env, ctx.tree, 45)
    hold16(dry, False, (0, 1, 2), secs=35, out_max=1 << 20, err_max=64 << 10)
    no_workflow(dry.out + dry.err)
    if dry.rc == 2:
        one_error_line(dry)
    expect(snapshot_tree(prefix) == snap, "a --dry-run changed the prefix")
    r = run_proc(cli_argv("install", "--from", str(b), "--prefix", str(prefix), "--replace", "--yes", "--json"),
                 env, ctx.tree, 50)
    hold16(r, True, (0, 1, 2), secs=35, out_max=1 << 20, err_max=64 << 10)
    kept(pf, ph)
    expect(pf.parent.is_dir() and {p.name: p.read_bytes() for p in pf.parent.iterdir()} == snap_user,
           "the user's folder outside the prefix was changed")
    expect(prefix.is_dir() and not (prefix / "lib64").is_symlink(), "the prefix itself was removed or replaced")
    mine = prefix / "include" / "mine.h"
    expect(mine.is_file() and mine.read_text() == "/* the user's own header */\n", "the user's own header was lost")
    expect(not [p for p in prefix.rglob("*") if p.is_file() and not p.is_symlink()
                and p.stat().st_mode & (stat.S_ISUID | stat.S_ISGID)], "a set-uid file was made in the prefix")
    if r.rc == 0:
        lib = prefix / "lib64" / "libcudnn.so.9.20.0"
        expect(lib.is_file() and not lib.is_symlink(), "exit 0, and the new cuDNN is not in the prefix")


family("installman", "man", {k: k for k in INSTALLMAN}, installman_case, limit=90)

# ==================================================================================================================== signals4
SIG4 = {"QUIT": signal.SIGQUIT, "USR1": signal.SIGUSR1, "USR2": signal.SIGUSR2, "ALRM": signal.SIGALRM}
SIG4_COMMANDS = ("check_json", "explain_probe", "install_yes", "image_archive")


def _default_signals4() -> None:
    for s in (signal.SIGHUP, signal.SIGINT, signal.SIGTERM, *SIG4.values()):
        signal.signal(s, signal.SIG_DFL)
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # a user's usual `ulimit -c 0`: SIGQUIT leaves no core file


def signals4_case(ctx: Ctx, arg: tuple) -> None:
    cmd, sig, n = arg
    rng = random.Random(f"1717-{cmd}-{sig}-{n}")
    frac = rng.uniform(0.08, 0.95)
    m = healthy(ctx)
    m.cwd = ctx.work
    want_json = True
    env = dict(m.env)
    argv_of: Callable[[], list[str]]
    after: Callable[[R], None] = lambda r: None
    if cmd == "check_json":
        argv_of = lambda: m.argv("check", "--json")
    elif cmd == "explain_probe":
        argv_of = lambda: m.argv("explain", "CD301", "--json")
    elif cmd == "image_archive":
        i = img()
        config, layers = _good_parts()
        p = i.docker_archive(ctx.work / "img.tar", config, layers)
        argv_of = lambda: m.argv("image", str(p), "--json")
    elif cmd == "install_yes":
        env = install_env(ctx)
        a = archive(ctx)
        pfx_holder: list[Path] = []
        before_holder: list[dict] = []

        def argv_of() -> list[str]:
            if pfx_holder:
                shutil.rmtree(pfx_holder[0], ignore_errors=True)
            pfx = prefix_with_old(ctx) if not (ctx.work / "cuda").exists() else None
            if pfx is None:
                shutil.rmtree(ctx.work / "cuda")
                pfx = prefix_with_old(ctx)
            pfx_holder[:] = [pfx]
            before_holder[:] = [inst().snapshot_content(pfx)]
            return cli_argv("install", "--from", str(a), "--prefix", str(pfx), "--yes", "--json")

        def after(r: R) -> None:
            pfx = pfx_holder[0]
            _user_files_kept(pfx)
            again = run_proc(cli_argv("install", "--from", str(a), "--prefix", str(pfx), "--yes", "--json"),
                             env, ctx.tree, 50)
            _judge_after(ctx, again, pfx, before_holder[0], f"the install after SIG{sig}")
    else:
        raise ValueError(cmd)
    cwd = ctx.tree if cmd == "install_yes" else m.cwd
    b = run_proc(argv_of(), env, cwd, 50, preexec=_default_signals4)
    base = b.secs
    at = frac * base
    argv = argv_of()
    start = time.monotonic()
    proc = subprocess.Popen(argv, env=env, cwd=str(cwd), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, start_new_session=True, preexec_fn=_default_signals4)
    outs: list[bytes] = []
    errs: list[bytes] = []
    t_out = threading.Thread(target=lambda: outs.append(proc.stdout.read()))
    t_err = threading.Thread(target=lambda: errs.append(proc.stderr.read()))
    t_out.start(); t_err.start()
    time.sleep(max(0.0, at - (time.monotonic() - start)))
    sent = proc.poll() is None
    if sent:
        try:
            os.kill(proc.pid, SIG4[sig])
        except OSError:
            sent = False
    sent_at = time.monotonic()
    try:
        rc = proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        kill_group(proc.pid)
        raise Fail(f"still running 15 s after SIG{sig}") from None
    took = time.monotonic() - sent_at
    time.sleep(0.4)
    left = _group_left(proc.pid) + leftovers_of(m.base)
    kill_group(proc.pid)
    reap(ctx.work)
    t_out.join(10); t_err.join(10)
    r = R(rc, b"".join(outs), b"".join(errs), took)
    try:
        with open(BUILD / "signals-sent.log", "a") as f:
            f.write(f"r17 {cmd}-{sig}-{n} base={base:.2f} at={at:.2f} sent={sent} rc={rc}\n")
    except OSError:
        pass
    expect(not left, f"processes left after SIG{sig}: {left[:2]}")
    ended_by_signal = rc in (128 + SIG4[sig], -SIG4[sig])
    if ended_by_signal:
        expect(sent, "ended by a signal it was not sent")
        expect(took < 12, f"took {took:.1f} s to stop after SIG{sig}")
        if r.outb.strip():  # whatever it printed before dying must not be a half object passed as whole
            try:
                json.loads(r.out)
                whole = True
            except ValueError:
                whole = False
            expect(not whole or "Interrupted" in r.out or rc < 0,
                   f"a whole answer and exit {rc}: two answers for a script")
    else:
        hold16(r, want_json, (0, 1, 2), secs=60)
        if sent and took > 0.5:
            raise Fail(f"SIG{sig} at {at:.2f} s while running was not acted on; exit {rc}: {r!r}")
    after(r)


family("signals4", "sig", {f"{c}-{s}-{n}": (c, s, n) for c in SIG4_COMMANDS for s in SIG4 for n in (0, 1, 2)},
       signals4_case, limit=90)


# ==================================================================================================================== dockerarc2
def _tar_bytes(files: list[tuple[str, bytes]], mutate: Callable | None = None) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as t:
        for name, data in files:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            if mutate:
                mutate(info)
            t.addfile(info, io.BytesIO(data) if info.isfile() else None)
    return buf.getvalue()


CUDA_VJ = ("usr/local/cuda-12.8/version.json", json.dumps({"cuda": {"version": "12.8.1"}}).encode())
DOCKER2_KINDS = ("layer_gzip_bad_crc", "layer_gzip_isize_lie", "layer_zstd_magic_garbage", "layer_gzip_trailing_garbage",
                 "layer_gzip_two_members", "layers_same_1000", "layers_50k_missing", "history_100k",
                 "diff_ids_mismatch", "arch_os_escapes", "cmd_1mb", "version_json_deep", "version_json_hostile_values",
                 "cudnn_header_hostile", "libcudnn_names_escapes", "torch_version_py_hostile",
                 "dist_info_metadata_hostile", "os_release_hostile", "manifest_bom", "manifest_dup_keys",
                 "layer_empty_file", "layer_zero_blocks", "layer_device_members", "env_ld_path_10000")


def _docker2(ctx: Ctx, kind: str) -> Path:
    members, cname, lname, plain = _docker_parts()
    p = ctx.work / "image.tar"
    good_man = _man(cname, lname)
    cfg = json.loads([x for x in members if x[0] == cname][0][1])

    def with_layer(data: bytes) -> None:
        _docker_tar(p, [x for x in members if x[0] != lname] + [(lname, data), ("manifest.json", good_man)])

    def with_cfg(c: dict) -> None:
        cb = json.dumps(c).encode()
        cn2 = hashlib.sha256(cb).hexdigest() + ".json"
        _docker_tar(p, [x for x in members if x[0] != cname] + [(cn2, cb), ("manifest.json", _man(cn2, lname))])

    def files_layer(files: list[tuple[str, bytes]], mutate: Callable | None = None) -> None:
        with_layer(_tar_bytes([CUDA_VJ] + files, mutate))

    if kind == "layer_gzip_bad_crc":
        z = bytearray(gzip.compress(plain))
        z[-8:-4] = bytes(b ^ 0xFF for b in z[-8:-4])  # the CRC-32 trailer no longer matches the data
        with_layer(bytes(z))
    elif kind == "layer_gzip_isize_lie":
        z = bytearray(gzip.compress(plain))
        z[-4:] = (0xFFFFFFFF).to_bytes(4, "little")  # ISIZE claims 4 GiB
        with_layer(bytes(z))
    elif kind == "layer_zstd_magic_garbage":
        with_layer(b"\x28\xb5\x2f\xfd" + _bin(1703, 50_000))
    elif kind == "layer_gzip_trailing_garbage":
        with_layer(gzip.compress(plain) + _bin(1704, 20_000))
    elif kind == "layer_gzip_two_members":
        with_layer(gzip.compress(plain) + gzip.compress(_tar_bytes([("etc/second", b"x")])))
    elif kind == "layers_same_1000":
        _docker_tar(p, members + [("manifest.json", _man(cname, lname, Layers=[lname] * 1000))])
    elif kind == "layers_50k_missing":
        _docker_tar(p, members + [("manifest.json", _man(cname, lname, Layers=[f"x{i}/layer.tar" for i in range(50_000)]))])
    elif kind == "history_100k":
        cfg["history"] = [{"created_by": f"/bin/sh -c step {i}\x1b[2J", "empty_layer": True} for i in range(100_000)]
        with_cfg(cfg)
    elif kind == "diff_ids_mismatch":
        cfg.setdefault("rootfs", {})["diff_ids"] = ["sha256:" + "0" * 64] * 7
        with_cfg(cfg)
    elif kind == "arch_os_escapes":
        cfg["architecture"] = "amd64\x1b[2J\u202e"
        cfg["os"] = "linux\n::error::made by the image"
        cfg["variant"] = "\x1b]52;c;Zm9v\x07"
        with_cfg(cfg)
    elif kind == "cmd_1mb":
        cfg.setdefault("config", {})["Cmd"] = ["x" * 1_000_000, "\x1b[2J"]
        cfg["config"]["Entrypoint"] = ["/bin/sh", "-c", "::error::x\n" * 1000]
        with_cfg(cfg)
    elif kind == "version_json_deep":
        files_layer([("usr/local/cuda/version.json", b'{"cuda": ' * 50_000 + b"1" + b"}" * 50_000)])
    elif kind == "version_json_hostile_values":
        files_layer([("usr/local/cuda/version.json", json.dumps({"cuda": {"version": "12.8\x1b[2J\n::error::x"},
                                                               "libcudnn": {"version": "9" * 5000},
                                                               "cuda_cudart": {"version": 1e308}}).encode())])
    elif kind == "cudnn_header_hostile":
        files_layer([("usr/include/cudnn_version.h",
                      b"#define CUDNN_MAJOR 99999999999999999999999\n#define CUDNN_MINOR -1\n"
                      b"#define CUDNN_PATCHLEVEL 0x1b\n#define CUDNN_MAJOR 8\n\x1b[2J::error::x\n" + b"/*" * 100_000)])
    elif kind == "libcudnn_names_escapes":
        files_layer([("usr/lib/x86_64-linux-gnu/libcudnn.so.9\x1b[2J", b"\x7fELF"),
                     ("usr/lib/x86_64-linux-gnu/libcudnn.so.9.1.0\n::error::owned", b"\x7fELF"),
                     ("usr/lib/x86_64-linux-gnu/libcudnn.so.\u202e0.1.9", b"\x7fELF")])
    elif kind == "torch_version_py_hostile":
        files_layer([("usr/local/lib/python3.12/dist-packages/torch/version.py",
                      ("__version__ = '2.5.1\x1b[2J'\ncuda = '12.4\n::error::x'\ngit_version = '" + "g" * 1_000_000
                       + f"'\nimport os; os.system('touch {ctx.work}/MARK17')\n").encode()),
                     ("usr/local/lib/python3.12/dist-packages/torch-2.5.1.dist-info/METADATA",
                      b"Metadata-Version: 2.1\nName: torch\nVersion: 2.5.1\x1b]0;x\x07\n")])
    elif kind == "dist_info_metadata_hostile":
        files_layer([("usr/local/lib/python3.12/dist-packages/nvidia_cudnn_cu12-9.1.0.70.dist-info/METADATA",
                      b"Metadata-Version: 2.1\nName: nvidia-cudnn-cu12\nVersion: 9.1.0.70\x1b[2J\n::error::x\n"
                      + b"Requires-Dist: x\n" * 100_000),
                     ("usr/local/lib/python3.12/dist-packages/nvidia_cudnn_cu12-9.1.0.70.dist-info/RECORD",
                      b"\xff\xfe" * 50_000)])
    elif kind == "os_release_hostile":
        files_layer([("etc/os-release", b'NAME="Ubuntu\x1b[2J"\nVERSION_ID="22.04\n::error::x"\nPRETTY_NAME="'
                      + b"p" * 1_000_000 + b'"\nID=ubuntu\xff\n')])
    elif kind == "manifest_bom":
        _docker_tar(p, members + [("manifest.json", b"\xef\xbb\xbf" + good_man)])
    elif kind == "manifest_dup_keys":
        _docker_tar(p, members + [("manifest.json", b'[{"Config": "nowhere.json", "Config": "%s", "RepoTags": ["a:1"],'
                                   b' "Layers": ["%s"], "Layers": 7}]' % (cname.encode(), lname.encode()))])
    elif kind == "layer_empty_file":
        with_layer(b"")
    elif kind == "layer_zero_blocks":
        with_layer(b"\0" * 1024)
    elif kind == "layer_device_members":
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w") as t:
            t.addfile(tarfile.TarInfo(CUDA_VJ[0]), None) if False else None
            info = tarfile.TarInfo(CUDA_VJ[0]); info.size = len(CUDA_VJ[1]); t.addfile(info, io.BytesIO(CUDA_VJ[1]))
            for name, typ in (("usr/local/cuda/version.json", tarfile.CHRTYPE), ("usr/include/cudnn_version.h",
                              tarfile.BLKTYPE), ("etc/os-release", tarfile.FIFOTYPE),
                              ("usr/lib/x86_64-linux-gnu/libcudnn.so.9", tarfile.CHRTYPE)):
                info = tarfile.TarInfo(name); info.type = typ; info.devmajor, info.devminor = 1, 5
                t.addfile(info)
        with_layer(buf.getvalue())
    elif kind == "env_ld_path_10000":
        cfg.setdefault("config", {})["Env"] = ["CUDA_VERSION=12.8.1", "LD_LIBRARY_PATH=" + ":".join(
            f"/opt/l{i}\x1b[2J" for i in range(10_000)), "NVIDIA_REQUIRE_CUDA=cuda>=12.8 " + "brand=x " * 20_000]
        with_cfg(cfg)
    else:
        raise ValueError(kind)
    return p


def dockerarc2_case(ctx: Ctx, arg: tuple[str, str]) -> None:
    kind, mode = arg
    p = _docker2(ctx, kind)
    if mode == "json_text":
        judge_image(ctx, str(p), (0, 1, 2), seconds=30, mem_mb=800)
    else:
        m = ctx.machine("img")
        r = m.run("image", str(p), "-v", timeout=40, preexec=cap_as(2048))
        hold16(r, False, (0, 1, 2), secs=30, out_max=2 << 20, err_max=64 << 10)
        no_passwd(r)
        no_workflow(r.out + r.err)
        if r.rc == 2:
            one_error_line(r)
    no_marks17(ctx.work)


family("dockerarc2", "arc", {f"{k}-{md}": (k, md) for k in DOCKER2_KINDS for md in ("json_text", "verbose")},
       dockerarc2_case, limit=80)


# ==================================================================================================================== fleetrun2
FLEET2 = {  # kind: what the third node's output file is; whether that node must be named failed ("failed"/"either")
    "answer_fifo": "failed", "answer_dir": "failed", "answer_link_passwd": "failed", "answer_link_devzero": "failed",
    "answer_sparse_4g": "failed", "answer_link_loop": "failed", "answer_bom": "either", "answer_utf16": "either",
    "answer_nul_padded": "either", "stderr_flood_20mb": "either", "late_writer_after_exit": "either",
    "node_files_3000": "either", "file_name_escapes": "either", "answer_appended_twice": "failed",
    "answer_written_slowly_then_fine": "either", "srun_exit_137_partial": "failed", "answer_link_to_n1": "either",
    "answer_proc_self_fd0": "failed", "srun_stdout_binary_flood": "either", "answer_readonly_000": "either",
}


def fleetrun2_case(ctx: Ctx, kind: str) -> None:
    m = healthy(ctx)
    good = _good_report(m)
    gb = json.dumps(good, indent=2).encode()
    (m.base / "good.json").write_bytes(gb)
    n3 = '"$1/n3.json"'
    extra = {
        "answer_fifo": f"mkfifo {n3}\n",
        "answer_dir": f"mkdir {n3}\n",
        "answer_link_passwd": f"ln -s /etc/passwd {n3}\n",
        "answer_link_devzero": f"ln -s /dev/zero {n3}\n",
        "answer_sparse_4g": f"truncate -s 4G {n3}\n",
        "answer_link_loop": f"ln -s n3.json {n3}\n",
        "answer_bom": f"printf '\\357\\273\\277' > {n3}; cat \"$REDTEAM_GOOD\" >> {n3}\n",
        "answer_utf16": f"iconv -f UTF-8 -t UTF-16 \"$REDTEAM_GOOD\" > {n3}\n",
        "answer_nul_padded": f"cat \"$REDTEAM_GOOD\" > {n3}; head -c 100000 /dev/zero >> {n3}\n",
        "stderr_flood_20mb": "head -c 20000000 /dev/zero | tr '\\0' e >&2\n",
        "late_writer_after_exit": f"(sleep 2; cat \"$REDTEAM_GOOD\" > \"$1/n4.json\") &\n",
        "node_files_3000": "i=0; while [ $i -lt 3000 ]; do ln \"$1/n1.json\" \"$1/x$i.json\" 2>/dev/null || "
                           "cp \"$1/n1.json\" \"$1/x$i.json\"; i=$((i+1)); done\n",
        "file_name_escapes": "cp \"$REDTEAM_GOOD\" \"$1/$(printf 'n\\033[2J\\n::error::x.json')\"\n",
        "answer_appended_twice": f"cat \"$REDTEAM_GOOD\" \"$REDTEAM_GOOD\" > {n3}\n",
        "answer_written_slowly_then_fine": f"head -c 100 \"$REDTEAM_GOOD\" > {n3}; sleep 1; cat \"$REDTEAM_GOOD\" > {n3}\n",
        "srun_exit_137_partial": f"head -c 200 \"$REDTEAM_GOOD\" > {n3}; kill -KILL $$\n",
        "answer_link_to_n1": f"ln -s n1.json {n3}\n",
        "answer_proc_self_fd0": f"ln -s /proc/self/fd/0 {n3}\n",
        "srun_stdout_binary_flood": "head -c 5000000 /dev/urandom\n",
        "answer_readonly_000": f"cp \"$REDTEAM_GOOD\" {n3}; chmod 000 {n3}\n",
    }[kind]
    nodes = 'cp "$REDTEAM_GOOD" "$1/n1.json"; cp "$REDTEAM_GOOD" "$1/n2.json"\n' + extra
    (m.base / "nodes.sh").write_text(nodes)
    bin_ = m.base / "bin"
    scripted(bin_ / "srun", FLEET_SRUN)
    scripted(bin_ / "scancel", "#!/bin/sh\nexit 0\n")
    keep = m.base / "keep"
    env = {"PATH": f"{bin_}:{m.env['PATH']}", "REDTEAM_NODES": str(m.base / "nodes.sh"),
           "REDTEAM_GOOD": str(m.base / "good.json")}
    for want_json in (True, False):
        shutil.rmtree(keep, ignore_errors=True)
        r = run_proc(m.argv("fleet", "run", "--slurm", *(["--json"] if want_json else []), "--deadline", "8",
                            "--keep", str(keep)), {**m.env, **env}, m.cwd, 50, preexec=cap_as(3072))
        time.sleep(0.2)
        left = [x for x in leftovers_of(m.base) if "sleep" in x or "sh " in x or "cat" in x]
        reap(m.base)
        d = hold16(r, want_json, (0, 1, 2), secs=30, out_max=2 << 20, err_max=64 << 10) or {}
        no_passwd(r)
        expect(not left, f"srun or its nodes left running: {left[:2]}")
        if want_json and r.rc != 2 and FLEET2[kind] == "failed":
            expect((d.get("failed") or []) and r.rc == 1,
                   f"a node that gave no usable report is not named failed: {json.dumps(d.get('failed'))[:300]} exit {r.rc}")
        if not want_json:
            no_workflow(r.out + r.err)
            if r.rc == 2:
                one_error_line(r)


family("fleetrun2", "node", {k: k for k in FLEET2}, fleetrun2_case, limit=90)



# ====================================================================================================================
# ROUND EIGHTEEN: round seventeen's classes are dropped (their helpers stay); eight new classes below
CASES.clear()
CLASSES.clear()
CLASSES.update({
    "ptxas3": "check's first-use probe of PATH's ptxas: programs that ignore SIGTERM, flood, loop forever in the background, die by SEGV/INT, print escapes; version shapes no round used",
    "stdinsrc": "explain - where standard input is a device, closed, write-only, a sparse file, a socket, a pty (typed, closed, non-blocking), an O_PATH fd, a FIFO, a trickling, lingering or 200 MB pipe, a growing file",
    "fixshell5": "fix --shell for six shells where the user's earlier LD_LIBRARY_PATH entries hold quotes, $(), backticks, newlines, %VAR%, ^, !, non-UTF-8, ${..:-..}, globs",
    "imageplat": "image --platform with hostile values, and OCI indexes with hostile platforms (types, 5,000 entries, 200 nested indexes, annotations)",
    "signals5": "SIGSTOP+SIGCONT, SIGTSTP+SIGCONT, SIGWINCH, SIGCHLD, SIGURG, SIGPWR, SIGVTALRM, SIGPROF at seeded instants of check, explain CD301, install --yes",
    "pathname": "path arguments naming no usable file (ELOOP, ENOTDIR, ENAMETOOLONG, dangling, closed /dev/fd) with hostile names, for explain --from-file, image, fleet merge, uninstall --prefix, check --project",
    "outfile": "check -o FILE (json, junit, prometheus) to /dev/stdout, /dev/stderr, /dev/full (in a namespace of its own), the --junit-xml file, folders, full or read-only tmpfs, odd names",
    "statedir": "install --yes, install --dry-run and uninstall --yes where the prefix's .cudnn-doctor is a file, FIFO, socket, link out, loop, dangling link, /dev/null, a sparse file",
})


def no_marks18(root: Path) -> None:
    made = [str(p) for p in root.rglob("MARK*")]
    expect(not made, f"a command was run: {made[:2]}")


def text_rules(r: R) -> None:
    no_workflow(r.out + r.err)
    if r.rc == 2:
        one_error_line(r)


# ==================================================================================================================== ptxas3
PTX3_BEHAVE = {
    "ignores_term_sleeps": "trap '' TERM HUP INT\n" + PTX_HEAD + "sleep 59.81\n",
    "child_ignores_term_holds_pipe": "(trap '' TERM HUP INT; sleep 59.82) &\n" + PTX_OK,
    "version_on_stderr_only": "echo 'ptxas: NVIDIA (R) Ptx optimizing assembler' >&2\n"
                              "echo 'Cuda compilation tools, release 12.6, V12.6.85' >&2\n",
    "stderr_20mb_then_version": "head -c 20000000 /dev/zero | tr '\\0' e >&2\n" + PTX_OK,
    "stdout_50mb_no_newline": "head -c 50000000 /dev/zero | tr '\\0' 7\n",
    "version_then_exit_1": PTX_OK + "exit 1\n",
    "exit_126_silent": "exit 126\n",
    "version_100k_times": "yes 'Cuda compilation tools, release 12.6, V12.6.85' | head -n 100000\n",
    "sleeps_past_timeout_then_version": "sleep 1.6\n" + PTX_OK,
    "background_prints_forever": "(while :; do echo 'V12.6.85'; done) &\n" + PTX_OK,
    "exec_setsid_floods": "exec setsid sh -c 'while :; do echo V12.6.85; done'\n",
    "segv_after_version": PTX_OK + "kill -SEGV $$\n",
    "sigint_itself": PTX_HEAD + "kill -INT $$\nsleep 1\n" + PTX_OK,
    "escapes_on_stderr": "printf '\\033]52;c;cm0gLXJm\\007\\033[2J\\033[?1049h::error::x\\n' >&2\n" + PTX_OK,
    "escapes_in_banner": "printf 'ptxas: \\033]0;pwn\\007\\033[2J\\233\\n'\n"
                         "echo 'Cuda compilation tools, release 12.6, V12.6.85'\n",
    "closes_stdout_floods_stderr": PTX_OK + "exec >&-\nwhile :; do echo e >&2; done\n",
}
PTX3_VERSIONS = {
    "math_bold_digits": ("echo 'Cuda compilation tools, release 12.6, V\U0001d7cf\U0001d7d0.\U0001d7d4.\U0001d7d6\U0001d7d3'\n", False),
    "arabic_indic": ("echo 'Cuda compilation tools, release 12.6, V\u0661\u0662.\u0666.\u0668\u0665'\n", False),
    "thai_digits": ("echo 'Cuda compilation tools, release 12.6, V\u0e51\u0e52.\u0e56.\u0e58\u0e55'\n", False),
    "one_dot_leader": ("echo 'Cuda compilation tools, release 12.6, V12\u20246\u202485'\n", None),
    "tab_separated": ("printf 'Cuda compilation tools, release 12.6, V12\\t6\\t85\\n'\n", None),
    "underscores": ("echo 'Cuda compilation tools, release 12.6, V12_6_85'\n", None),
    "v_5000_digits": ("echo 'Cuda compilation tools, release 12.6, V" + "1" * 5000 + ".6.85'\n", None),
    "dots_only": ("echo 'Cuda compilation tools, release 12.6, V...'\n", None),
    "rc_suffix": ("echo 'Cuda compilation tools, release 12.6, V12.6.85-rc1'\n", None),
    "plus_local": ("echo 'Cuda compilation tools, release 12.6, V12.6.85+local.\\033[2J'\n", None),
    "after_100k_lines": ("yes x | head -n 100000; echo 'Cuda compilation tools, release 12.6, V12.6.85'\n", None),
    "inside_osc_title": ("printf '\\033]0;Cuda compilation tools, release 12.6, V12.6.85\\007\\n'\n", None),
    "then_nul_flood": ("echo 'Cuda compilation tools, release 12.6, V12.6.85'; head -c 1000000 /dev/zero\n", None),
    "overflow_minor": ("echo 'Cuda compilation tools, release 12.6, V12.99999999999999999999999.85'\n", None),
    "zero_version": ("echo 'Cuda compilation tools, release 0.0, V0.0.0'\n", None),
    "utf16le": ("printf 'V\\0001\\0002\\000.\\0006\\000.\\0008\\0005\\000\\n\\000'\n", None),
}


def ptx3_behave_case(ctx: Ctx, key: str) -> None:
    m, _ = jax_machine(ctx)
    scripted(m.base / "x" / "ptxas", "#!/bin/sh\n" + PTX3_BEHAVE[key])
    m.env["PATH"] = f"{m.base / 'x'}:{m.env['PATH']}"
    try:
        _probe_judge(m, text_too=key.startswith("escapes"))
    finally:
        reap(ctx.work)


def ptx3_version_case(ctx: Ctx, key: str) -> None:
    m, _ = jax_machine(ctx)
    body, found = PTX3_VERSIONS[key]
    scripted(m.base / "x" / "ptxas", "#!/bin/sh\n" + PTX_HEAD + body)
    m.env["PATH"] = f"{m.base / 'x'}:{m.env['PATH']}"
    try:
        _probe_judge(m, text_too=True, not_used=found is False)
    finally:
        reap(ctx.work)


family("ptxas3", "behaves", {k: k for k in PTX3_BEHAVE}, ptx3_behave_case, limit=80)
family("ptxas3", "version", {k: k for k in PTX3_VERSIONS}, ptx3_version_case, limit=80)


# ==================================================================================================================== stdinsrc
STDIN_KINDS = ("dev_zero", "dev_urandom", "dev_null", "seqpacket_message", "closed", "write_only", "sparse_8g_zeros",
               "sparse_4g_then_message", "file_offset_at_end", "file_offset_mid_message", "socket_peer_closed",
               "socket_with_message", "pipe_trickle_3s", "pipe_200mb_then_message", "pipe_nonblocking_late",
               "pty_typed_then_eof", "pty_master_closed", "proc_self_mem", "fifo_message_then_eof",
               "deleted_file_message", "elf_binary", "o_path_file", "pipe_writer_lingers_3s", "file_growing_2s",
               "pty_partial_then_closed", "pty_nonblocking_typed_late", "pty_ctrl_d_only", "pty_long_line_8k")


def _stdin_source(ctx: Ctx, kind: str) -> tuple[int | None, Callable[[], None] | None, list]:
    """An fd for the doctor's standard input (None: closed), a writer to start after the doctor, what to close."""
    w = ctx.work
    keep: list = []
    if kind in ("dev_zero", "dev_urandom", "dev_null"):
        return os.open("/" + kind.replace("_", "/", 1), os.O_RDONLY), None, keep
    if kind == "seqpacket_message":
        a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        b.sendall(MSG + b"\n")
        b.close()
        keep.append(a)
        return a.fileno(), None, keep
    if kind == "closed":
        return None, None, keep
    if kind == "write_only":
        return os.open(w / "wo.txt", os.O_WRONLY | os.O_CREAT, 0o644), None, keep
    if kind in ("sparse_8g_zeros", "sparse_4g_then_message"):
        p = w / "sparse.log"
        with open(p, "wb") as f:
            if kind == "sparse_8g_zeros":
                f.truncate(8 << 30)
            else:
                f.seek(4 << 30)
                f.write(MSG + b"\n")
        return os.open(p, os.O_RDONLY), None, keep
    if kind in ("file_offset_at_end", "file_offset_mid_message", "deleted_file_message", "elf_binary"):
        p = w / "log.txt"
        p.write_bytes(b"line one\n" + MSG + b"\n")
        src = Path(os.path.realpath(PY)) if kind == "elf_binary" else p
        fd = os.open(src, os.O_RDONLY)
        if kind == "file_offset_at_end":
            os.lseek(fd, 0, os.SEEK_END)
        elif kind == "file_offset_mid_message":
            os.lseek(fd, 9 + len(MSG) // 2, os.SEEK_SET)
        elif kind == "deleted_file_message":
            p.unlink()
        return fd, None, keep
    if kind in ("socket_peer_closed", "socket_with_message"):
        a, b = socket.socketpair()
        if kind == "socket_with_message":
            b.sendall(MSG + b"\n")
        b.close()
        keep.append(a)
        return a.fileno(), None, keep
    if kind in ("pipe_trickle_3s", "pipe_200mb_then_message", "pipe_nonblocking_late"):
        r, wfd = os.pipe()

        def writer() -> None:
            try:
                if kind == "pipe_trickle_3s":
                    for ch in MSG:
                        os.write(wfd, bytes([ch]))
                        time.sleep(3 / len(MSG))
                elif kind == "pipe_200mb_then_message":
                    chunk = b"x" * (1 << 20)
                    for _ in range(200):
                        os.write(wfd, chunk)
                    os.write(wfd, b"\n" + MSG + b"\n")
                else:
                    time.sleep(1.0)
                    os.write(wfd, MSG + b"\n")
            except OSError:
                pass
            finally:
                os.close(wfd)
        if kind == "pipe_nonblocking_late":
            os.set_blocking(r, False)
        t = threading.Thread(target=writer, daemon=True)
        return r, t.start, keep
    if kind in ("pty_partial_then_closed", "pty_nonblocking_typed_late", "pty_ctrl_d_only", "pty_long_line_8k"):
        master, slave = pty.openpty()
        if kind == "pty_nonblocking_typed_late":
            os.set_blocking(slave, False)

        def typist2() -> None:
            try:
                time.sleep(1.0)
                if kind == "pty_partial_then_closed":
                    os.write(master, MSG[:20] + b"\n" + MSG[20:30])
                    time.sleep(1.0)
                    return
                if kind == "pty_nonblocking_typed_late":
                    os.write(master, MSG + b"\n\x04")
                elif kind == "pty_ctrl_d_only":
                    os.write(master, b"\x04")
                else:
                    os.write(master, b"x" * 8000 + b"\n" + MSG + b"\n\x04")
                time.sleep(8)
            except OSError:
                pass
            finally:
                os.close(master)
        return slave, threading.Thread(target=typist2, daemon=True).start, keep
    if kind in ("pty_typed_then_eof", "pty_master_closed"):
        master, slave = pty.openpty()

        def typist() -> None:
            try:
                time.sleep(0.5 if kind == "pty_typed_then_eof" else 2.0)
                if kind == "pty_typed_then_eof":
                    os.write(master, MSG + b"\n\x04")
                    time.sleep(8)
            except OSError:
                pass
            finally:
                os.close(master)
        return slave, threading.Thread(target=typist, daemon=True).start, keep
    if kind == "proc_self_mem":
        return os.open("/proc/self/mem", os.O_RDONLY), None, keep
    if kind == "fifo_message_then_eof":
        p = w / "in.fifo"
        os.mkfifo(p)
        r = os.open(p, os.O_RDONLY | os.O_NONBLOCK)
        wfd = os.open(p, os.O_WRONLY)
        os.write(wfd, MSG + b"\n")
        os.close(wfd)
        os.set_blocking(r, True)
        return r, None, keep
    if kind == "o_path_file":
        p = w / "log.txt"
        p.write_bytes(MSG + b"\n")
        return os.open(p, os.O_PATH), None, keep
    if kind == "pipe_writer_lingers_3s":
        r, wfd = os.pipe()

        def lingers() -> None:
            try:
                os.write(wfd, MSG + b"\n")
                time.sleep(3)
            finally:
                os.close(wfd)
        return r, threading.Thread(target=lingers, daemon=True).start, keep
    if kind == "file_growing_2s":
        p = w / "growing.log"
        p.write_bytes(MSG + b"\n")

        def grows() -> None:
            end = time.monotonic() + 2
            with open(p, "ab") as f:
                while time.monotonic() < end:
                    f.write(b"epoch 1 step 2 loss 0.5\n" * 1000)
                    f.flush()
                    time.sleep(0.01)
        return os.open(p, os.O_RDONLY), threading.Thread(target=grows, daemon=True).start, keep
    raise ValueError(kind)


def stdinsrc_case(ctx: Ctx, arg: tuple[str, bool]) -> None:
    kind, as_json = arg
    m = ctx.machine()
    m.cwd = ctx.work
    fd, start, keep = _stdin_source(ctx, kind)
    argv = m.argv("explain", "-", *(["--json"] if as_json else []))

    def pre() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (2048 << 20, 2048 << 20))
        if fd is None:
            os.close(0)
        else:
            os.dup2(fd, 0)
            os.set_inheritable(0, True)

    t0 = time.monotonic()
    proc = subprocess.Popen(argv, env=m.env, cwd=str(m.cwd), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, start_new_session=True, preexec_fn=pre)
    if fd is not None:
        try:
            os.close(fd)
        except OSError:
            pass
    if start:
        start()
    try:
        out, err = proc.communicate(timeout=45)
    except subprocess.TimeoutExpired:
        kill_group(proc.pid)
        proc.communicate()
        raise Fail(f"hang: explain - with standard input {kind} still running after 45 s")
    finally:
        kill_group(proc.pid)
        for k in keep:
            try:
                k.close()
            except OSError:
                pass
    if kind.startswith("pty_"):  # on a terminal the doctor asks for the paste first: a prompt, not the error
        prompt = b"Paste the message, then press Ctrl-D on a line of its own (Ctrl-C cancels):\n"
        err = err[len(prompt):] if err.startswith(prompt) else err
    r = R(proc.returncode, out, err, time.monotonic() - t0)
    hold16(r, as_json, (0, 1, 2), secs=30, out_max=1 << 20, err_max=16 << 10)
    if not as_json:
        text_rules(r)
    # README: at most 2 MB of a message is read, whatever its length, and the doctor needs about 100 MB of address
    # space: under 2 GiB, blaming the address-space limit is a wrong answer (its fix, ulimit -v, cures nothing)
    expect(not re.search(r"ran out of memory|address-space limit|\"CD010\"", r.out + r.err),
           "the answer blames the address-space limit (2 GiB here) for a small or bounded input")


family("stdinsrc", "stdin", {f"{k}-{'json' if j else 'text'}": (k, j) for k in STDIN_KINDS for j in (True, False)},
       stdinsrc_case, limit=70)


# ==================================================================================================================== fixshell5
OLD5 = {  # the user's earlier LD_LIBRARY_PATH entry ({mark}: a file no command of the case may make)
    "single_quote_subst": "/opt/it's $(touch {mark})",
    "double_quote_backtick": '/opt/"q" `touch {mark}`',
    "newline_command": "/opt/a\ntouch {mark}\n#",
    "fish_parens": "/opt/(touch {mark})x",
    "percent_caret_bang": "/opt/%PATH%^&!x!^",
    "nonutf8_subst": "/opt/\udcff\udcfe$(touch {mark})",
    "empty_entries": "",
    "tab_cr": "/opt/a\tb\rc",
    "globs_tilde": "~/lib*/[ab]?",
    "ps_subexpr": "/opt/$(Remove-Item {mark})${{env:HOME}}`n",
    "brace_default": "/opt/${{X:-$(touch {mark})}}",
    "semicolon_amp_pipe": "/opt/a;touch {mark}&b|c>{mark}",
}


def fixshell5_case(ctx: Ctx, arg: tuple[str, str]) -> None:
    key, shell = arg
    m, folder = _cudnn_off_path(ctx, "cudnn 9")
    mark = ctx.work / "MARK"
    old = OLD5[key].format(mark=mark)
    m.env["LD_LIBRARY_PATH"] = (f"{m.env['LD_LIBRARY_PATH']}::/opt/x:" if key == "empty_entries"
                                else f"{m.env['LD_LIBRARY_PATH']}:{old}")
    earlier = [e for e in m.env["LD_LIBRARY_PATH"].split(":") if e]
    try:
        r = m.run("fix", "--json", "--search-path", folder, timeout=45)
        d = hold16(r, True, (0, 1), secs=30) or {}
        t = m.run("fix", "--shell", shell, "--search-path", folder, timeout=45)
        hold16(t, False, (0, 1), secs=30)
        no_workflow(t.out + t.err)
        expect(not mark.exists(), "the marker was made by the doctor")
        lines = _env_lines(d.get("plan") or d, shell)
        printed = source_lines(t.out)
        if shell in SHELLS:
            for line in lines + printed:
                no_raw_controls13(line, f"a {shell} line")
            if not lines and not printed:
                return
            got = run_in_shell(shell, printed or lines, ctx.work, dict(m.env))
            expect(not mark.exists(), f"sourcing the {shell} lines ran a command of an earlier entry")
            if all(x.lstrip().startswith("#") for x in (printed or lines)):
                return
            parts = got.get(b"LD_LIBRARY_PATH", b"").split(b":")
            expect(os.fsencode(folder) in parts, f"{shell}: LD_LIBRARY_PATH after the lines lacks the folder")
            lost = [e for e in earlier if os.fsencode(e) not in parts]
            expect(not lost, f"{shell}: the user's earlier entries changed or lost: {lost[:2]!r}")
        else:
            for line in lines + printed:
                JUDGES[shell](line, "LD_LIBRARY_PATH", folder)
    finally:
        reap(ctx.work)
    no_marks18(ctx.work)


family("fixshell5", "earlier", {f"{k}-{s}": (k, s) for k in OLD5
                                for s in ("bash", "zsh", "fish", "powershell", "cmd", "user")},
       fixshell5_case, limit=80)


# ==================================================================================================================== imageplat
PLATFORM_VALUES = {
    "variant_v99": "linux/amd64/v99", "empty": "", "os_only": "linux", "slash": "/", "trailing_slash": "linux/",
    "arch_only": "/amd64", "newline_workflow": "linux/amd64\n::error::made by --platform", "huge_100k": "x" * 100_000,
    "windows": "windows/amd64", "upper": "LINUX/AMD64", "four_parts": "linux/arm64/v8/extra",
    "with_digest": "linux/amd64@sha256:" + "0" * 64, "csi_clear": "\x1b[2Jlinux/amd64", "bidi": "linux/\u202eamd64",
    "trailing_space": "linux/amd64 ", "double_slash": "linux//amd64", "list": "linux/amd64,linux/arm64",
    "dotdot": "../../etc/passwd", "fullwidth": "linux/\uff41md64", "option_like": "--json",
}
INDEX_KINDS = ("nested_200", "manifests_5000", "platform_wrong_types", "platform_string", "features_100k",
               "annotations_hostile", "entry_mediatype_unknown", "only_unknown_arches", "duplicate_amd64_one_missing",
               "variant_escapes", "platform_null_and_array", "entries_not_objects")


def _multi_oci(ctx: Ctx, kind: str | None) -> Path:
    i = img()

    def idx(o: dict) -> None:
        base = o["manifests"][0]
        amd = {**base, "platform": {"architecture": "amd64", "os": "linux"}}
        arm = {**base, "platform": {"architecture": "arm64", "os": "linux", "variant": "v8"}}
        o["manifests"] = [amd, arm]
        if kind is None:
            return
        if kind == "manifests_5000":
            o["manifests"] = [{**base, "platform": {"architecture": "amd64", "os": "linux", "variant": f"v{n}"}}
                              for n in range(5000)] + [amd]
        elif kind == "platform_wrong_types":
            o["manifests"] = [{**base, "platform": {"architecture": 7, "os": ["linux"], "variant": {"a": 1}}}, amd]
        elif kind == "platform_string":
            o["manifests"] = [{**base, "platform": "linux/amd64"}]
        elif kind == "features_100k":
            o["manifests"] = [{**base, "platform": {"architecture": "amd64", "os": "linux",
                                                    "os.features": ["f\x1b[2J"] * 100_000,
                                                    "os.version": "1" * 100_000}}]
        elif kind == "annotations_hostile":
            amd["annotations"] = {"org.opencontainers.image.ref.name": "\x1b[2J\n::error::x",
                                  "x\u202e": "v" * 1_000_000}
            o["annotations"] = {"\x1b]52;c;eA==\x07": "y"}
        elif kind == "entry_mediatype_unknown":
            o["manifests"] = [{**amd, "mediaType": "application/x-evil\x1b[2J"}]
        elif kind == "only_unknown_arches":
            o["manifests"] = [{**base, "platform": {"architecture": a, "os": "linux"}} for a in ("riscv64", "s390x")]
        elif kind == "duplicate_amd64_one_missing":
            o["manifests"] = [{**amd, "digest": "sha256:" + "1" * 64}, amd]
        elif kind == "variant_escapes":
            amd["platform"]["variant"] = "\x1b]52;c;cm0=\x07\n::error::x"
            o["manifests"] = [amd]
        elif kind == "platform_null_and_array":
            o["manifests"] = [{**base, "platform": None}, {**base, "platform": [1, 2]}, amd]
        elif kind == "entries_not_objects":
            o["manifests"] = ["linux/amd64", 7, None, amd]
    folder = raw_oci(ctx, idx=idx, name="oci")
    if kind == "nested_200":
        blobs = folder / "blobs" / "sha256"
        top = json.loads((folder / "index.json").read_text())
        inner = top
        for _ in range(200):
            b = json.dumps(inner).encode()
            (blobs / i.digest(b).split(":")[1]).write_bytes(b)
            inner = {"schemaVersion": 2, "mediaType": i.INDEX,
                     "manifests": [{"mediaType": i.INDEX, "digest": i.digest(b), "size": len(b)}]}
        (folder / "index.json").write_text(json.dumps(inner))
    return folder


def _image_runs(ctx: Ctx, args: list[str]) -> None:
    m = ctx.machine("img")
    m.cwd = ctx.work
    for want_json in (True, False):
        r = m.run("image", *args, *(["--json"] if want_json else []), timeout=45, preexec=cap_as(2048))
        hold16(r, want_json, (0, 1, 2), secs=30, out_max=2 << 20, err_max=64 << 10)
        no_passwd(r)
        if not want_json:
            text_rules(r)


def imageplat_value_case(ctx: Ctx, key: str) -> None:
    folder = _multi_oci(ctx, None)
    _image_runs(ctx, [str(folder), "--platform=" + PLATFORM_VALUES[key]])


def imageplat_index_case(ctx: Ctx, arg: tuple[str, str | None]) -> None:
    kind, plat = arg
    folder = _multi_oci(ctx, kind)
    _image_runs(ctx, [str(folder)] + ([f"--platform={plat}"] if plat else []))


family("imageplat", "value", {k: k for k in PLATFORM_VALUES}, imageplat_value_case, limit=80)
family("imageplat", "index", {f"{k}-{'arm64' if p else 'default'}": (k, p) for k in INDEX_KINDS
                              for p in (None, "linux/arm64")}, imageplat_index_case, limit=80)


# ==================================================================================================================== signals5
SIG5 = {  # name: (signal, its follow-up (SIGCONT 1.5 s later) or None, whether the default action ends the process)
    "STOPCONT": (signal.SIGSTOP, signal.SIGCONT, False), "TSTPCONT": (signal.SIGTSTP, signal.SIGCONT, False),
    "WINCH": (signal.SIGWINCH, None, False), "CHLD": (signal.SIGCHLD, None, False),
    "URG": (signal.SIGURG, None, False), "PWR": (signal.SIGPWR, None, True),
    "VTALRM": (signal.SIGVTALRM, None, True), "PROF": (signal.SIGPROF, None, True),
}
SIG5_COMMANDS = ("check_json", "explain_probe", "install_yes")


def _default_signals5() -> None:
    for s in (signal.SIGHUP, signal.SIGINT, signal.SIGTERM, signal.SIGPIPE, signal.SIGTSTP, signal.SIGWINCH,
              signal.SIGCHLD, signal.SIGURG, signal.SIGPWR, signal.SIGVTALRM, signal.SIGPROF):
        signal.signal(s, signal.SIG_DFL)
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def signals5_case(ctx: Ctx, arg: tuple) -> None:
    cmd, sig, n = arg
    signum, follow, ends = SIG5[sig]
    rng = random.Random(f"1818-{cmd}-{sig}-{n}")
    frac = rng.uniform(0.08, 0.92)
    m = healthy(ctx)
    m.cwd = ctx.work
    env = dict(m.env)
    after: Callable[[R], None] = lambda r: None
    a = archive(ctx) if cmd == "install_yes" else None
    pfx_holder: list[Path] = []
    before_holder: list[dict] = []
    if cmd == "check_json":
        argv_of: Callable[[], list[str]] = lambda: m.argv("check", "--json")
    elif cmd == "explain_probe":
        argv_of = lambda: m.argv("explain", "CD301", "--json")
    else:
        env = install_env(ctx)

        def argv_of() -> list[str]:
            shutil.rmtree(ctx.work / "cuda", ignore_errors=True)
            pfx = prefix_with_old(ctx)
            pfx_holder[:] = [pfx]
            before_holder[:] = [inst().snapshot_content(pfx)]
            return cli_argv("install", "--from", str(a), "--prefix", str(pfx), "--yes", "--json")

        def after(r: R) -> None:
            pfx = pfx_holder[0]
            _user_files_kept(pfx)
            if r.rc == 0:
                expect(installed_as_recorded(ctx, pfx) == [], f"exit 0 after SIG{sig} but the prefix is not the install")
            again = run_proc(cli_argv("install", "--from", str(a), "--prefix", str(pfx), "--yes", "--json"),
                             env, ctx.tree, 50)
            _judge_after(ctx, again, pfx, before_holder[0], f"the install after SIG{sig}")
    cwd = ctx.tree if cmd == "install_yes" else m.cwd
    b = run_proc(argv_of(), env, cwd, 50, preexec=_default_signals5)
    base_codes = codes(json.loads(b.out)) if b.out.strip().startswith("{") else None
    at = frac * b.secs
    argv = argv_of()
    start = time.monotonic()
    proc = subprocess.Popen(argv, env=env, cwd=str(cwd), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, start_new_session=True, preexec_fn=_default_signals5)
    outs: list[bytes] = []
    errs: list[bytes] = []
    t_out = threading.Thread(target=lambda: outs.append(proc.stdout.read()))
    t_err = threading.Thread(target=lambda: errs.append(proc.stderr.read()))
    t_out.start(); t_err.start()
    time.sleep(max(0.0, at - (time.monotonic() - start)))
    sent = proc.poll() is None
    if sent:
        try:
            os.kill(proc.pid, signum)
        except OSError:
            sent = False
    sent_at = time.monotonic()
    if follow is not None:
        time.sleep(1.5)
        try:
            os.kill(proc.pid, follow)
        except OSError:
            pass
    try:
        rc = proc.wait(timeout=25)
    except subprocess.TimeoutExpired:
        os.kill(proc.pid, signal.SIGCONT) if follow else None
        kill_group(proc.pid)
        raise Fail(f"still running 25 s after SIG{sig}") from None
    took = time.monotonic() - sent_at
    time.sleep(0.4)
    left = _group_left(proc.pid) + leftovers_of(m.base)
    kill_group(proc.pid)
    reap(ctx.work)
    t_out.join(10); t_err.join(10)
    r = R(rc, b"".join(outs), b"".join(errs), time.monotonic() - start)
    try:
        with open(BUILD / "signals-sent.log", "a") as f:
            f.write(f"r18 {cmd}-{sig}-{n} base={b.secs:.2f} at={at:.2f} sent={sent} rc={rc}\n")
    except OSError:
        pass
    expect(not left, f"processes left after SIG{sig}: {left[:2]}")
    if ends and rc in (128 + signum, -signum):
        expect(sent, "ended by a signal it was not sent")
        expect(took < 12, f"took {took:.1f} s to stop after SIG{sig}")
        if r.outb.strip():
            try:
                json.loads(r.out)
                whole = True
            except ValueError:
                whole = False
            expect(not whole or "Interrupted" in r.out or rc < 0, f"a whole answer and exit {rc}")
    elif ends:
        hold16(r, True, (0, 1, 2), secs=60)
        if sent and took > 0.5:
            raise Fail(f"SIG{sig} at {at:.2f} s while running was not acted on; exit {rc}")
    else:  # a signal whose default is to be ignored, or a stop and a continue: the run is the run without it
        d = hold16(r, True, (0, 1), secs=60) or {}
        expect(rc == b.rc, f"exit {rc} after SIG{sig} (a signal a program goes on through), {b.rc} without it")
        if base_codes is not None and cmd != "install_yes":
            expect(codes(d) == base_codes, f"findings {sorted(codes(d) ^ base_codes)} differ after SIG{sig}")
    after(r)


family("signals5", "sig", {f"{c}-{s}-{n}": (c, s, n) for c in SIG5_COMMANDS for s in SIG5 for n in (0, 1)},
       signals5_case, limit=100)


# ==================================================================================================================== pathname
PATH_KINDS = ("eloop_escape_name", "enotdir_workflow_name", "component_5000", "total_6000", "bidi_missing",
              "osc52_missing", "nonutf8_missing", "dev_fd_not_open", "trailing_slash_on_file",
              "dangling_link_escape_target")
PATH_COMMANDS = ("explain_from_file", "image", "fleet_merge", "uninstall_prefix", "check_project")


def _hostile_path(ctx: Ctx, kind: str) -> str:
    w = ctx.work / "p"
    w.mkdir(exist_ok=True)
    if kind == "eloop_escape_name":
        p = w / "loop\x1b[2J\x1b]0;t\x07"
        p.symlink_to(p.name)
        return str(p)
    if kind == "enotdir_workflow_name":
        f = w / "file\n::error::made by a path"
        f.write_text("x\n")
        return str(f / "child.json")
    if kind == "component_5000":
        return str(w / ("a" * 5000))
    if kind == "total_6000":
        return str(w) + ("/" + "d" * 200) * 30
    if kind == "bidi_missing":
        return str(w / "missing\u202enosj.json")
    if kind == "osc52_missing":
        return str(w / "\x1b]52;c;cm0gLXJmIH4=\x07x")
    if kind == "nonutf8_missing":
        return os.fsdecode(os.fsencode(str(w)) + b"/\xff\xfe\xc3(x")
    if kind == "dev_fd_not_open":
        return "/dev/fd/47"
    if kind == "trailing_slash_on_file":
        f = w / "plain.json"
        f.write_text('{"schema": "cudnn-doctor/report/1"}\n')
        return str(f) + "/"
    if kind == "dangling_link_escape_target":
        p = w / "dangling.json"
        p.symlink_to("\x1b[2J/nowhere/\n::error::x")
        return str(p)
    raise ValueError(kind)


def pathname_case(ctx: Ctx, arg: tuple[str, str]) -> None:
    kind, cmd = arg
    m = ctx.machine()
    m.cwd = ctx.work
    p = _hostile_path(ctx, kind)
    args = {"explain_from_file": ["explain", "--from-file", p], "image": ["image", p],
            "fleet_merge": ["fleet", "merge", p], "uninstall_prefix": ["uninstall", "--prefix", p, "--yes"],
            "check_project": ["check", "--project", p]}[cmd]
    for want_json in (True, False):
        r = m.run(*args, *(["--json"] if want_json else []), timeout=45, preexec=cap_as(2048))
        hold16(r, want_json, (0, 1, 2), secs=30, out_max=256 << 10, err_max=16 << 10)
        if not want_json:
            text_rules(r)


family("pathname", "path", {f"{k}-{c}": (k, c) for k in PATH_KINDS for c in PATH_COMMANDS}, pathname_case, limit=70)


# ==================================================================================================================== outfile
OUT_TARGETS = ("dev_stdout", "dev_stderr", "proc_self_fd1", "dev_full", "same_as_junit", "folder", "under_a_file",
               "name_300", "readonly_tmpfs", "full_tmpfs", "newline_name", "dash", "empty", "fifo_reader")
NS_DEV = ("mount -t tmpfs -o size=1m none /dev && mknod -m 666 /dev/null c 1 3 && mknod -m 666 /dev/full c 1 7 && "
          "mknod -m 666 /dev/zero c 1 5 && mknod -m 666 /dev/urandom c 1 9 && mknod -m 666 /dev/random c 1 8 && "
          "ln -s /proc/self/fd /dev/fd && ln -s /proc/self/fd/0 /dev/stdin && ln -s /proc/self/fd/1 /dev/stdout && "
          "ln -s /proc/self/fd/2 /dev/stderr && mkdir /dev/shm /dev/pts")


def _doc_ok(fmt: str, data: bytes, where: str) -> None:
    text = utf8_strict(data, where)
    if fmt == "json":
        strict_json(text)
    elif fmt == "junit":
        try:
            ET.fromstring(text)
        except ET.ParseError as e:
            raise Fail(f"{where}: not XML ({e})") from None
    else:
        parse_prometheus(text)


def outfile_case(ctx: Ctx, arg: tuple[str, str]) -> None:
    target, fmt = arg
    m = healthy(ctx)
    m.cwd = ctx.work
    out = ctx.work / "out"
    out.mkdir()
    old = b"the user's previous report\n"
    setup, post, path = "true", "", ""
    extra: list[str] = []
    rcs = (0, 1, 2, 74)
    if target in ("dev_stdout", "dev_stderr", "dev_full"):
        setup, path = NS_DEV, "/" + target.replace("_", "/", 1)
        post = (f"[ -L /dev/stdout ] && [ -L /dev/stderr ] && [ -c /dev/full ] && [ -c /dev/null ] "
                f"&& echo DEVS-KEPT > {out}/devs")
    elif target == "proc_self_fd1":
        path = "/proc/self/fd/1"
    elif target == "same_as_junit":
        path = str(out / "report.out")
        extra = ["--junit-xml", path]
    elif target == "folder":
        (out / "a-folder").mkdir()
        path = str(out / "a-folder")
    elif target == "under_a_file":
        (out / "plain").write_bytes(old)
        path = str(out / "plain" / "report")
    elif target == "name_300":
        path = str(out / ("r" * 300))
    elif target in ("readonly_tmpfs", "full_tmpfs"):
        mnt = out / "mnt"
        mnt.mkdir()
        path = str(mnt / "report.out")
        if target == "readonly_tmpfs":
            setup = (f"mount -t tmpfs -o size=1m none {shlex.quote(str(mnt))} && printf %s {shlex.quote(old.decode())}"
                     f" > {shlex.quote(path)} && mount -o remount,ro {shlex.quote(str(mnt))}")
        else:
            setup = (f"mount -t tmpfs -o size=64k none {shlex.quote(str(mnt))} && printf %s "
                     f"{shlex.quote(old.decode())} > {shlex.quote(path)} && "
                     f"(head -c 10000000 /dev/zero > {shlex.quote(str(mnt))}/filler 2>/dev/null || true)")
        post = f"cat {shlex.quote(path)} > {out}/after 2>/dev/null; ls -A {shlex.quote(str(mnt))} > {out}/listing"
    elif target == "newline_name":
        path = str(out / "rep\n::error::made by -o.out")
    elif target == "dash":
        path = "-"
    elif target == "empty":
        path = ""
    elif target == "fifo_reader":
        path = str(out / "report.fifo")
        os.mkfifo(path)
    fmt_args = ["--format", fmt]
    doctor = shlex.join(m.argv("check", *fmt_args, "-o", path, *extra))
    script = f"set -e; {setup}; set +e; {doctor}; rc=$?; {post or 'true'}; exit $rc"
    reader_data: list[bytes] = []
    rfd = None
    if target == "fifo_reader":
        rfd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)

        def reader() -> None:
            end = time.monotonic() + 40
            while time.monotonic() < end:
                try:
                    chunk = os.read(rfd, 65536)
                except BlockingIOError:
                    time.sleep(0.05)
                    continue
                except OSError:
                    return
                if chunk:
                    reader_data.append(chunk)
                else:
                    time.sleep(0.05)
        threading.Thread(target=reader, daemon=True).start()
    argv = (["unshare", "-m", "--propagation", "private", "sh", "-c", script] if setup != "true"
            else ["sh", "-c", script])
    try:
        r = run_proc(argv, m.env, m.cwd, 45)
    finally:
        reap(ctx.work)
    time.sleep(0.1)
    if rfd is not None:
        os.close(rfd)
    d_out = r.outb
    # --format json is --json: a refusal is then the one JSON object on stdout (README); a document sent to
    # /dev/stdout or /dev/stderr by -o is judged as that document below, not as the doctor's own output
    json_err = fmt == "json" and r.rc in (2, 74)
    outb = b"" if (target in ("dev_stdout", "proc_self_fd1") and r.rc in (0, 1)) else r.outb
    errb = b"" if (target == "dev_stderr" and r.rc in (0, 1)) else r.errb
    hold16(R(r.rc, outb, errb, r.secs), json_err, rcs, secs=30, err_max=None if target == "dev_stderr" else 16 << 10)
    if r.rc in (2, 74) and not json_err:
        one_error_line(r)
    no_workflow(r.out + r.err)
    if target in ("dev_stdout", "dev_stderr", "dev_full"):
        expect((out / "devs").exists(), f"-o {path} replaced or removed a device or link of /dev (exit {r.rc})")
    if target in ("dev_stdout", "proc_self_fd1") and r.rc in (0, 1):
        _doc_ok(fmt, d_out, f"standard output (-o {path})")
    if target == "dev_stderr" and r.rc in (0, 1):
        expect(len(r.errb) > 0, "-o /dev/stderr: nothing on standard error")
    if target == "dev_full":
        expect(r.rc in (2, 74), f"-o /dev/full: exit {r.rc}, the report was not written")
    if target == "same_as_junit" and r.rc in (0, 1):
        data = Path(path).read_bytes()
        try:
            _doc_ok(fmt, data, "the file given to -o and --junit-xml")
        except Fail:
            _doc_ok("junit", data, "the file given to -o and --junit-xml")
    if target in ("readonly_tmpfs", "full_tmpfs"):
        after = (out / "after").read_bytes() if (out / "after").exists() else b""
        if r.rc in (0, 1):
            _doc_ok(fmt, after, "-o's file")
        else:
            expect(after == old, f"a failed -o left the earlier file changed: {after[:80]!r}")
            listing = (out / "listing").read_text().split() if (out / "listing").exists() else []
            expect(set(listing) <= {"report.out", "filler"}, f"temporary files left beside -o's file: {listing}")
    if target in ("folder", "under_a_file", "name_300", "empty"):
        expect(r.rc in (2, 74), f"-o {target}: exit {r.rc}, README documents 2 (or 74) for an output not written")
    if target == "under_a_file":
        expect((out / "plain").read_bytes() == old, "the file in the way was changed")
    if target == "newline_name" and r.rc in (0, 1):
        _doc_ok(fmt, Path(path).read_bytes(), "-o's file")
    leftovers = [p.name for p in out.iterdir() if p.name not in (
        "devs", "after", "listing", "a-folder", "plain", "mnt", "report.out", "report.fifo",
        "rep\n::error::made by -o.out", "r" * 300)]
    expect(not leftovers, f"files left beside -o's: {leftovers[:3]!r}")


family("outfile", "target", {f"{t}-{f}": (t, f) for t in OUT_TARGETS for f in ("json", "junit", "prometheus")},
       outfile_case, limit=70)


# ==================================================================================================================== statedir
STATE_KINDS = ("file", "fifo", "socket", "link_outside", "loop", "dangling", "devnull", "sparse_file")
STATE_COMMANDS = ("install_yes", "install_dry_text", "uninstall_yes")


def _state_as(dot: Path, kind: str, outside: Path) -> list:
    keep: list = []
    if kind == "file":
        dot.write_text("not a folder\n")
    elif kind == "fifo":
        os.mkfifo(dot)
    elif kind == "socket":
        s = socket.socket(socket.AF_UNIX)
        s.bind(str(dot))
        keep.append(s)
    elif kind == "link_outside":
        dot.symlink_to(outside)
    elif kind == "loop":
        dot.symlink_to(dot.name)
    elif kind == "dangling":
        dot.symlink_to("/nonexistent/state")
    elif kind == "devnull":
        dot.symlink_to("/dev/null")
    elif kind == "sparse_file":
        with open(dot, "wb") as f:
            f.truncate(8 << 30)
    return keep


def _pfx_view(prefix: Path) -> dict:
    """The prefix's entries (kind, content hash or link target) but the doctor's own state folder (never read:
    it may be a sparse 8 GiB file or a FIFO)."""
    out = {}
    for entry in prefix.iterdir():
        if entry.name == ".cudnn-doctor":
            continue
        if entry.is_symlink() or not entry.is_dir():
            out[entry.name] = (("l", os.readlink(entry)) if entry.is_symlink()
                               else ("f", hashlib.sha256(entry.read_bytes()).hexdigest()))
        else:
            out.update({f"{entry.name}/{k}": v for k, v in snapshot_tree(entry).items()})
            out[entry.name] = ("d",)
    return out


def statedir_case(ctx: Ctx, arg: tuple[str, str]) -> None:
    kind, cmd = arg
    env = install_env(ctx)
    a = archive(ctx)
    prefix = prefix_with_old(ctx)
    outside = ctx.work / "users-folder"
    outside.mkdir()
    (outside / "notes.txt").write_text("the user's notes\n")
    (outside / "manifest-20990101T000000000000-aaaaaa.json").write_text("the user's own file of this name\n")
    out_before = snapshot_tree(outside)
    if cmd == "uninstall_yes":
        sane(run_proc(cli_argv("install", "--from", str(a), "--prefix", str(prefix), "--yes"), env, ctx.tree, 50), (0,))
        shutil.move(str(prefix / ".cudnn-doctor"), str(ctx.work / "moved-state"))
    dot = prefix / ".cudnn-doctor"
    keep = _state_as(dot, kind, outside)
    before = _pfx_view(prefix)
    try:
        if cmd == "install_yes":
            r = run_proc(cli_argv("install", "--from", str(a), "--prefix", str(prefix), "--yes", "--json"), env,
                         ctx.tree, 50)
            d = hold16(r, True, (0, 1, 2), secs=35, out_max=1 << 20, err_max=64 << 10) or {}
            _user_files_kept(prefix)
            if r.rc == 0:
                expect(installed_as_recorded(ctx, prefix) == [], "exit 0 but the prefix is not the recorded install")
        elif cmd == "install_dry_text":
            r = run_proc(cli_argv("install", "--from", str(a), "--prefix", str(prefix), "--dry-run"), env, ctx.tree, 50)
            hold16(r, False, (0, 1, 2), secs=35, out_max=1 << 20, err_max=64 << 10)
            text_rules(r)
            expect(_pfx_view(prefix) == before, "a dry run changed the prefix")
        else:
            r = run_proc(cli_argv("uninstall", "--prefix", str(prefix), "--yes", "--json"), env, ctx.tree, 50)
            hold16(r, True, (0, 1, 2), secs=35, out_max=1 << 20, err_max=64 << 10)
            _user_files_kept(prefix)
            if kind != "link_outside":
                expect(r.rc != 0, "uninstall said done with no manifest of the install in reach")
        now = snapshot_tree(outside)
        changed = [k for k, v in out_before.items() if now.get(k) != v]
        expect(not changed, f"the user's files outside the prefix changed: {changed[:2]}")
        if cmd != "uninstall_yes" and r.rc != 0:
            expect(_pfx_view(prefix) == before, f"exit {r.rc} and the prefix's files changed")
    finally:
        for k in keep:
            k.close()


family("statedir", "state", {f"{k}-{c}": (k, c) for k in STATE_KINDS for c in STATE_COMMANDS}, statedir_case,
       limit=90)



# ==================================================================================================================== askpty
CLASSES["askpty"] = ("install and uninstall without --yes asking on a terminal (a pty) answered hostilely: Ctrl-D, "
                     "the terminal gone, half an answer, escapes, 10,000 bytes, non-UTF-8, NUL, Ctrl-C as a byte, "
                     "a non-blocking terminal")
ASK_ANSWERS = {  # key: (what is typed, after how many seconds, close the terminal after, whether it is a yes)
    "yes": (b"y\n", 1.5, 4.0, True), "no": (b"n\n", 1.5, 4.0, False), "ctrl_d": (b"\x04", 1.5, 4.0, False),
    "gone_unanswered": (b"", 2.0, 0.0, False), "half_y_then_gone": (b"y", 1.5, 0.5, False),
    "escapes_then_y": (b"\x1b[2J\x1b]0;t\x07y\n", 1.5, 4.0, None), "long_10k": (b"y" * 10_000 + b"\n", 1.5, 4.0, None),
    "nonutf8": (b"\xff\xfe\xc3\n", 1.5, 4.0, False), "nul_then_y": (b"\x00y\n", 1.5, 4.0, None),
    "ctrl_c_byte": (b"\x03\n", 1.5, 4.0, False), "typeahead_no": (b"n\n", 0.0, 4.0, False),
    "nonblocking_yes_late": (b"y\n", 1.5, 4.0, None),
}
ASK_PROMPT = re.compile(rb"^[A-Z][A-Za-z ]*\? \[y/N\]: ")


def askpty_case(ctx: Ctx, arg: tuple[str, str]) -> None:
    key, cmd = arg
    typed, after, hold_open, is_yes = ASK_ANSWERS[key]
    env = install_env(ctx)
    a = archive(ctx)
    prefix = prefix_with_old(ctx)
    if cmd == "uninstall":
        sane(run_proc(cli_argv("install", "--from", str(a), "--prefix", str(prefix), "--yes"), env, ctx.tree, 50), (0,))
        argv = cli_argv("uninstall", "--prefix", str(prefix))
    else:
        argv = cli_argv("install", "--from", str(a), "--prefix", str(prefix))
    before = inst().snapshot_content(prefix)
    master, slave = pty.openpty()
    if key == "nonblocking_yes_late":
        os.set_blocking(slave, False)

    def typist() -> None:
        try:
            time.sleep(after)
            if typed:
                os.write(master, typed)
            time.sleep(hold_open)
        except OSError:
            pass
        finally:
            os.close(master)

    t0 = time.monotonic()
    proc = subprocess.Popen(argv, env=env, cwd=str(ctx.tree), stdin=slave, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, start_new_session=True)
    os.close(slave)
    threading.Thread(target=typist, daemon=True).start()
    try:
        out, err = proc.communicate(timeout=40)
    except subprocess.TimeoutExpired:
        kill_group(proc.pid)
        proc.communicate()
        raise Fail(f"hang: {cmd} asking on a terminal ({key}) still running after 40 s")
    finally:
        kill_group(proc.pid)
        reap(ctx.work)
    err = ASK_PROMPT.sub(b"", err)  # the question itself (no newline after it) is not the error
    r = R(proc.returncode, out, err, time.monotonic() - t0)
    hold16(r, False, (0, 1, 2), secs=30, out_max=1 << 20, err_max=64 << 10)
    text_rules(r)
    _user_files_kept(prefix)
    now = inst().snapshot_content(prefix)
    if is_yes is False:
        expect(user_view(now) == user_view(before), f"{cmd}: answered {key} (no yes) and the prefix changed (exit {r.rc})")
    if r.rc == 0 and cmd == "install":
        expect(installed_as_recorded(ctx, prefix) == [], "exit 0 but the prefix is not the recorded install")
    if r.rc != 0 and user_view(now) != user_view(before):
        expect(cmd == "install" and installed_as_recorded(ctx, prefix) == [],
               f"{cmd}: exit {r.rc} and the prefix half changed")
    if is_yes is True:
        expect(r.rc == 0, f"{cmd}: answered y on a terminal, exit {r.rc}")


family("askpty", "answer", {f"{k}-{c}": (k, c) for k in ASK_ANSWERS for c in ("install", "uninstall")}, askpty_case,
       limit=80)




# ====================================================================================================================
# ROUND NINETEEN: round eighteen's classes are dropped (their helpers stay); eight new classes below

CASES.clear()
CLASSES.clear()
CLASSES.update({
    "nvlink": "check's first-use look for XLA's nvlink (parallel compilation asked): programs that hang, fork, flood, die by signals, print no or odd versions, or are no program",
    "gzlayer": "image of an OCI layout whose layer is a gzip stream of an odd but valid shape (members, FEXTRA, FNAME, FCOMMENT, FHCRC, stored blocks) or a broken one (CRC, ISIZE, trailing bytes, reserved flags, zlib/raw deflate, gzip of gzip)",
    "p2pelf": "bench --p2p (JSON, text) where the CUDA runtime found is a library whose constructor exits, hangs, floods, closes descriptors, stops, kills its group, forks, aborts, forges JSON",
    "signals6": "SIGINT/SIGTERM/SIGHUP at seeded instants of --install-completion bash and zsh, check on a cold cache, image of an OCI layout",
    "ttyhostile": "explain, compat, image and fleet merge on a real terminal (pty) fed values holding OSC 52, OSC 8, DCS, 8-bit CSI, title, alternate screen, BEL, backspace and CR overwrites",
    "uninstcut": "uninstall --yes and install --yes over a prefix whose last manifest is cut at seeded byte offsets",
    "cachecut": "check, explain and compat over a cache whose compiled data files are cut at seeded byte offsets",
    "explainlog": "explain - and explain --from-file of log shapes: tqdm carriage returns, rich/ANSI tracebacks, JSON log lines, syslog prefixes, zero-width joiners, backspaces, HTML/markdown wrapping, huge minified lines",
})


def text_ok(r: R) -> None:
    """A text run: the common rules for text, no workflow command, a refusal one line."""
    no_workflow(r.out + r.err)
    if r.rc == 2:
        one_error_line(r)


# ==================================================================================================================== nvlink
# XLA's FindNvlinkExecutable (openxla/xla xla/stream_executor/cuda/subprocess_compilation.cc) is
# FindCudaExecutable("nvlink", preferred_cuda_dir, kMinimumNvlinkVersion{11, 8, 0}, {}): each candidate is run with
# --version and passed over unless it prints V<major>.<minor>.<patch> at least 11.8.0 -- as for ptxas.
NVL_HEAD = "echo 'nvlink: NVIDIA (R) Cuda linker'\necho 'Copyright (c) 2005-2024 NVIDIA Corporation'\n"
NVL_OK = NVL_HEAD + "echo 'Cuda compilation tools, release 12.6, V12.6.85'\n"
NVLINK_KINDS = {  # key: (script body or a file kind "@...", whether XLA takes it: True, False, or None (no judgement))
    "good_baseline": (NVL_OK, True),
    "hangs_ignoring_term": ("trap '' TERM HUP INT\n" + NVL_HEAD + "sleep 59.91\n", None),  # XLA would wait
    "sleeps_then_version": ("sleep 4.5\n" + NVL_OK, None),
    "daemon_holds_pipe": ("(setsid sleep 59.92 &)\n" + NVL_OK, None),
    "background_holds_pipe": ("sleep 59.93 &\n" + NVL_OK, None),
    "flood_stdout_30mb": ("head -c 30000000 /dev/zero | tr '\\0' 9\n", False),
    "flood_stderr_then_version": ("head -c 10000000 /dev/zero | tr '\\0' e >&2\n" + NVL_OK, None),
    "sigsegv_silent": ("kill -SEGV $$\n", False),
    "sigkill_silent": ("kill -KILL $$\n", False),
    "version_then_sigabrt": (NVL_OK + "kill -ABRT $$\n", None),
    "exit_1_silent": ("exit 1\n", False),
    "stops_itself": (NVL_HEAD + "kill -STOP $$\n" + NVL_OK, None),
    "forks_50_daemons": ("i=0; while [ $i -lt 50 ]; do (setsid sleep 59.94 </dev/null >/dev/null 2>&1 &); "
                         "i=$((i+1)); done\n" + NVL_OK, None),
    "reads_stdin_forever": ("cat >/dev/null\n" + NVL_OK, None),
    "closes_stdout_loops": ("exec >&-\nwhile :; do :; done\n", None),  # XLA would wait for its exit
    "escapes_banner": ("printf 'nvlink: \\033]52;c;cm0gLXJm\\007\\033[2J\\233\\n::error::x\\n'\n"
                       "echo 'Cuda compilation tools, release 12.6, V12.6.85'\n", None),
    "no_version_words": (NVL_HEAD + "echo 'Cuda compilation tools, release 12.6'\n", False),
    "version_11_7": (NVL_HEAD + "echo 'Cuda compilation tools, release 11.7, V11.7.99'\n", False),
    "version_10_2": (NVL_HEAD + "echo 'Cuda compilation tools, release 10.2, V10.2.89'\n", False),
    "version_11_8_0": (NVL_HEAD + "echo 'Cuda compilation tools, release 11.8, V11.8.0'\n", True),
    "arabic_digits": (NVL_HEAD + "echo 'Cuda compilation tools, release 12.6, V\u0661\u0662.\u0666.\u0668\u0665'\n", False),
    "fullwidth_digits": (NVL_HEAD + "echo 'Cuda compilation tools, release 12.6, V\uff11\uff12.\uff16.\uff18\uff15'\n", False),
    "nonutf8_version": (NVL_HEAD + "printf 'Cuda compilation tools, release 12.6, V12.6.\\377\\376\\n'\n", False),
    "two_parts_only": (NVL_HEAD + "echo 'Cuda compilation tools, release 12.6, V12.6'\n", False),
    "lowercase_v": (NVL_HEAD + "echo 'Cuda compilation tools, release 12.6, v12.6.85'\n", False),
    "word_glued": (NVL_HEAD + "echo 'Cuda compilation tools, release 12.6, XV12.6.85'\n", False),
    "huge_major": (NVL_HEAD + "echo 'V99999999999999999999999999.6.85'\n", None),
    "version_5000_digits": (NVL_HEAD + "echo 'V12." + "7" * 5000 + ".85'\n", None),
    "version_on_stderr_only": (NVL_HEAD.replace("'\n", "' >&2\n") + "echo 'V12.6.85' >&2\n", None),
    "utf16_version": ("printf 'V\\0001\\0002\\000.\\0006\\000.\\0008\\0005\\000\\n\\000'\n", False),
    "bidi_version": (NVL_HEAD + "echo 'V12.6.85\u202e58.6.21'\n", None),
    "after_200k_lines": ("yes n | head -n 200000\n" + NVL_OK, None),
    "crlf_script": ("@crlf", None),
    "fifo": ("@fifo", False), "folder": ("@folder", False), "socket": ("@socket", False),
    "no_exec_bit": ("@noexec", False), "dangling_link": ("@dangling", False), "link_loop": ("@loop", False),
    "link_dev_zero": ("@devzero", False), "empty_exec": ("@empty", False),
    "missing_interpreter": ("@nointerp", False), "aarch64_elf": ("@aarch64", False),
    "sparse_exec_4g": ("@sparse", False), "link_to_ptxas": ("@to_ptxas", None),
    "exec_only_mode_111": ("@exec_only", None), "setuid_script": ("@setuid", None),
    "name_with_newline_dir": ("@newline_dir", True),
}


def _nvlink_file(folder: Path, kind: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    p = folder / "nvlink"
    if kind == "@crlf":
        scripted(p, "#!/bin/sh\r\n" + NVL_OK.replace("\n", "\r\n"))
    elif kind == "@fifo":
        os.mkfifo(p)
    elif kind == "@folder":
        p.mkdir()
    elif kind == "@socket":
        s = socket.socket(socket.AF_UNIX)
        s.bind(str(p))
        s.close()
    elif kind == "@noexec":
        p.write_text("#!/bin/sh\n" + NVL_OK)
        p.chmod(0o644)
    elif kind == "@dangling":
        p.symlink_to(folder / "gone" / "nvlink")
    elif kind == "@loop":
        p.symlink_to("nvlink")
    elif kind == "@devzero":
        p.symlink_to("/dev/zero")
    elif kind == "@empty":
        scripted(p, "")
    elif kind == "@nointerp":
        scripted(p, "#!/nonexistent/sh\n" + NVL_OK)
    elif kind == "@aarch64":
        hdr = bytearray(64)
        hdr[0:4] = b"\x7fELF"
        hdr[4], hdr[5], hdr[6] = 2, 1, 1
        hdr[16:18] = (2).to_bytes(2, "little")
        hdr[18:20] = (183).to_bytes(2, "little")
        p.write_bytes(bytes(hdr) + b"\0" * 4096)
        p.chmod(0o755)
    elif kind == "@sparse":
        with open(p, "wb") as f:
            f.truncate(4 << 30)
        p.chmod(0o755)
    elif kind == "@to_ptxas":
        p.symlink_to("ptxas")
    elif kind == "@exec_only":
        p.write_text("#!/bin/sh\n" + NVL_OK)
        p.chmod(0o111)
    elif kind == "@setuid":
        p.write_text("#!/bin/sh\n" + NVL_OK)
        p.chmod(0o4755)
    else:
        scripted(p, "#!/bin/sh\n" + kind)
    return p


def nvlink_case(ctx: Ctx, key: str) -> None:
    body, taken = NVLINK_KINDS[key]
    m, _ = jax_machine(ctx)
    folder = m.base / ("x\nline" if body == "@newline_dir" else "x")
    scripted(folder / "ptxas", "#!/bin/sh\n" + PTX_OK)
    nv = _nvlink_file(folder, NVL_OK if body == "@newline_dir" else body)
    m.env["PATH"] = f"{folder}:{m.env['PATH']}"
    m.env["XLA_FLAGS"] = "--xla_gpu_enable_llvm_module_compilation_parallelism=true"
    try:
        r = m.run("check", "--json", timeout=45)
        time.sleep(0.3)
        left = leftovers_of(m.base)
        reap(m.base)
        d = hold16(r, True, (0, 1), secs=30, out_max=4 << 20, err_max=64 << 10) or {}
        expect(not left, f"processes left after check: {left[:3]}")
        xla = _xla_of(d)
        found = xla.get("nvlink")
        if taken is False:
            expect(found != str(nv), f"an nvlink XLA passes over (no V-version of at least 11.8.0 from --version, "
                                     f"or no program) is reported as the nvlink found: {str(found)[-80:]!r}")
        elif taken is True:
            expect(found == str(nv), f"the nvlink XLA takes is not reported: {str(found)[-80:]!r}")
        if key.startswith(("escapes", "bidi", "nonutf8", "arabic", "fullwidth", "name_with")) or taken is False:
            t = m.run("check", timeout=45)
            time.sleep(0.2)
            reap(m.base)
            hold16(t, False, (0, 1), secs=30, out_max=4 << 20, err_max=64 << 10)
            text_ok(t)
    finally:
        reap(ctx.work)


family("nvlink", "kind", {k: k for k in NVLINK_KINDS}, nvlink_case, limit=80)


# ==================================================================================================================== gzlayer
def _tar_of(files: list[tuple[str, bytes]]) -> bytes:
    bio = io.BytesIO()
    with tarfile.open(fileobj=bio, mode="w", format=tarfile.PAX_FORMAT) as t:
        for name, data in files:
            ti = tarfile.TarInfo(name)
            ti.size, ti.mode, ti.mtime = len(data), 0o644, 1700000000
            t.addfile(ti, io.BytesIO(data))
    return bio.getvalue()


def _gz_member(data: bytes, flags: int = 0, extra: bytes = b"", fname: bytes = b"", comment: bytes = b"",
               hcrc: bool = False, bad_hcrc: bool = False, level: int = 6, mtime: int = 0, os_b: int = 3,
               crc: int | None = None, isize: int | None = None, cm: int = 8, reserved: int = 0,
               full_flush_every: int = 0) -> bytes:
    flg = reserved
    if extra:
        flg |= 4
    if fname:
        flg |= 8
    if comment:
        flg |= 16
    if hcrc:
        flg |= 2
    head = bytes([0x1F, 0x8B, cm, flg]) + mtime.to_bytes(4, "little") + bytes([0, os_b])
    if extra:
        head += len(extra).to_bytes(2, "little") + extra
    if fname:
        head += fname + b"\0"
    if comment:
        head += comment + b"\0"
    if hcrc:
        c16 = zlib.crc32(head) & 0xFFFF
        head += (c16 ^ (0xFFFF if bad_hcrc else 0)).to_bytes(2, "little")
    co = zlib.compressobj(level, zlib.DEFLATED, -15)
    if full_flush_every:
        body = b"".join(co.compress(data[i:i + full_flush_every]) + co.flush(zlib.Z_FULL_FLUSH)
                        for i in range(0, len(data), full_flush_every)) + co.flush()
    else:
        body = co.compress(data) + co.flush()
    trailer = ((zlib.crc32(data) if crc is None else crc) & 0xFFFFFFFF).to_bytes(4, "little") + \
        ((len(data) if isize is None else isize) & 0xFFFFFFFF).to_bytes(4, "little")
    return head + body + trailer


GZ_VALID = ("multi_member_split", "multi_member_with_empty", "empty_members_500_first", "fextra_65535",
            "fname_100k", "fcomment_escapes_nonutf8", "fhcrc_right", "stored_level0", "full_flush_every_7",
            "mtime_max_os_255", "all_optional_fields")
GZ_BROKEN = ("bad_crc", "bad_isize", "trailing_zeros_1k", "trailing_garbage", "trailer_cut", "fhcrc_wrong",
             "reserved_flag_bit", "method_7", "gzip_of_gzip", "zlib_stream", "raw_deflate")


def _gz_layer(kind: str, raw: bytes) -> bytes:
    half = len(raw) // 2 + 77
    if kind == "multi_member_split":
        return _gz_member(raw[:half]) + _gz_member(raw[half:])
    if kind == "multi_member_with_empty":
        return _gz_member(raw[:half]) + _gz_member(b"") + _gz_member(b"") + _gz_member(raw[half:])
    if kind == "empty_members_500_first":
        return _gz_member(b"") * 500 + _gz_member(raw)
    if kind == "fextra_65535":
        return _gz_member(raw, extra=b"RT" + (65531).to_bytes(2, "little") + b"\x00" * 65531)
    if kind == "fname_100k":
        return _gz_member(raw, fname=b"n" * 100_000)
    if kind == "fcomment_escapes_nonutf8":
        return _gz_member(raw, comment=b"\x1b]52;c;cm0gLXJm\x07\x1b[2J\xff\xfe::error::x")
    if kind == "fhcrc_right":
        return _gz_member(raw, hcrc=True, fname=b"layer.tar")
    if kind == "stored_level0":
        return _gz_member(raw, level=0)
    if kind == "full_flush_every_7":
        return _gz_member(raw, full_flush_every=7)
    if kind == "mtime_max_os_255":
        return _gz_member(raw, mtime=0xFFFFFFFF, os_b=255)
    if kind == "all_optional_fields":
        return _gz_member(raw, extra=b"AB\x02\x00xy", fname=b"l.tar", comment=b"c", hcrc=True)
    if kind == "bad_crc":
        return _gz_member(raw, crc=zlib.crc32(raw) ^ 0x5A5A5A5A)
    if kind == "bad_isize":
        return _gz_member(raw, isize=len(raw) + 4096)
    if kind == "trailing_zeros_1k":
        return _gz_member(raw) + b"\0" * 1024
    if kind == "trailing_garbage":
        return _gz_member(raw) + bytes(random.Random(1919).randrange(256) for _ in range(777))
    if kind == "trailer_cut":
        return _gz_member(raw)[:-4]
    if kind == "fhcrc_wrong":
        return _gz_member(raw, hcrc=True, bad_hcrc=True)
    if kind == "reserved_flag_bit":
        return _gz_member(raw, reserved=0x20)
    if kind == "method_7":
        return _gz_member(raw, cm=7)
    if kind == "gzip_of_gzip":
        return _gz_member(_gz_member(raw))
    if kind == "zlib_stream":
        return zlib.compress(raw)
    if kind == "raw_deflate":
        co = zlib.compressobj(6, zlib.DEFLATED, -15)
        return co.compress(raw) + co.flush()
    raise ValueError(kind)


def gzlayer_case(ctx: Ctx, arg: tuple[str, str]) -> None:
    kind, label = arg
    i = img()
    raw = _tar_of([("usr/local/cuda-12.8/version.json", json.dumps({"cuda": {"version": "12.8.1"}}).encode()),
                   ("usr/share/doc/readme.txt", bytes(random.Random(19).randrange(256) for _ in range(9000)))])
    lp = ctx.work / "layer.bin"
    lp.write_bytes(_gz_layer(kind, raw))
    media = i.LAYER_GZIP if label == "gzip" else i.LAYER_TAR
    folder = _oci_from_layer_file(ctx, lp, media, diff_id="sha256:" + hashlib.sha256(raw).hexdigest())
    m = ctx.machine("img")
    r = m.run("image", str(folder), "--json", timeout=45, preexec=cap_as(2048))
    d = hold16(r, True, (0, 1, 2), secs=30, out_max=1 << 20, err_max=16 << 10) or {}
    no_passwd(r)
    if kind in GZ_VALID and label == "gzip":
        cuda = json.dumps((d.get("image") or {}).get("cuda"))
        expect(r.rc in (0, 1) and "12.8" in cuda,
               f"a valid gzip layer (RFC 1952: {kind}, as Go's compress/gzip reads it for docker and containerd) "
               f"is not read: exit {r.rc}, image.cuda={cuda[:200]}")
    t = m.run("image", str(folder), timeout=45, preexec=cap_as(2048))
    hold16(t, False, (0, 1, 2), secs=30, out_max=1 << 20, err_max=16 << 10)
    text_ok(t)


family("gzlayer", "gz", {f"{k}-{lab}": (k, lab) for k in GZ_VALID + GZ_BROKEN for lab in ("gzip", "tar")},
       gzlayer_case, limit=70)


# ==================================================================================================================== p2pelf
P2P_MODES = ("exit_in_ctor", "loops_in_ctor", "floods_stdout_stderr", "closes_every_fd", "stops_itself",
             "kills_its_group", "forks_a_daemon", "aborts", "fake_json_and_escapes", "stdout_to_dev_full",
             "clears_environ", "prints_and_exits_zero", "arms_alarm", "open_files_limit_3",
             "grandchild_keeps_printing", "segfaults", "every_fd_to_dev_null", "chdir_and_umask")


def p2pelf_case(ctx: Ctx, arg: tuple[str, bool]) -> None:
    mode, want_json = arg
    m = healthy(ctx)
    lib = m.base / "cudart" / "lib"
    lib.mkdir(parents=True)
    shutil.copyfile(hostile_elf(ELF_MODES[mode], "libcudart.so.13"), lib / "libcudart.so.13")
    m.add_lib(lib)
    m.env["CUDNN_DOCTOR_BENCH_TIMEOUT"] = "10"  # README: each bench child's bound (600 s unless set)
    try:
        args = ["bench", "--p2p", "--size", "tiny"] + (["--json"] if want_json else [])
        r = m.run(*args, timeout=60)
        time.sleep(0.3)
        left = leftovers_of(m.base)
        reap(m.base)
        d = hold16(r, want_json, (0, 1, 2), secs=45, out_max=1 << 20, err_max=64 << 10) or {}
        expect(not left, f"processes left after bench --p2p: {left[:3]}")
        if want_json:
            expect(d.get("schema") == "cudnn-doctor/p2p/1" or r.rc == 2,
                   f"bench --p2p --json printed schema {d.get('schema')!r} (README: cudnn-doctor/p2p/1)")
            expect(r.rc == 2 or isinstance(d.get("copies"), list), "copies is not a list")
            expect("REDTEAM" not in r.out and "owned" not in r.out, "what the library printed reached the answer")
        else:
            text_ok(r)
            expect("owned" not in r.out + r.err and "FAKE" not in r.out + r.err,
                   "what the library printed reached the doctor's output")
    finally:
        reap(ctx.work)


family("p2pelf", "lib", {f"{md}-{'json' if j else 'text'}": (md, j) for md in P2P_MODES for j in (True, False)},
       p2pelf_case, limit=90)


# ==================================================================================================================== signals6
SIG6 = {"INT": signal.SIGINT, "TERM": signal.SIGTERM, "HUP": signal.SIGHUP}
SIG6_COMMANDS = ("completion_bash", "completion_zsh", "check_cold_cache", "image_oci")


def _default_signals6() -> None:
    for s in (signal.SIGHUP, signal.SIGINT, signal.SIGTERM, signal.SIGPIPE):
        signal.signal(s, signal.SIG_DFL)
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def _rc_sources(m: M, shell: str) -> None:
    rc = m.home / (".bashrc" if shell == "bash" else ".zshrc")
    user = USER_BASHRC if shell == "bash" else USER_ZSHRC
    text = rc.read_text(errors="replace") if rc.exists() else ""
    expect(text.startswith(user), f"the user's {rc.name} lost its own lines: {text[:200]!r}")
    _sourced_scripts_exist(m, rc)
    argv = ["bash", "--norc", "--noprofile", "-c", f". {shlex.quote(str(rc))}"] if shell == "bash" else \
        ["zsh", "-f", "-c", f"autoload -Uz compinit; compinit -u -D; . {shlex.quote(str(rc))}"]
    s = run_proc(argv, {**m.env, "SHELL": f"/bin/{shell}"}, m.cwd, 30)
    expect(s.rc == 0 and not s.err.strip(), f"{rc.name} no longer sources cleanly: rc={s.rc} err={s.err[-300:]!r}")


def signals6_case(ctx: Ctx, arg: tuple) -> None:
    cmd, sig, n = arg
    signum = SIG6[sig]
    rng = random.Random(f"1919-{cmd}-{sig}-{n}")
    frac = rng.uniform(0.06, 0.94)
    m = healthy(ctx)
    m.cwd = ctx.work
    env = dict(m.env)
    shell = "bash" if cmd == "completion_bash" else "zsh"
    if cmd.startswith("completion"):
        env["SHELL"] = f"/bin/{shell}"

        def argv_of() -> list[str]:
            for p in (m.home / ".bashrc", m.home / ".zshrc"):
                p.unlink(missing_ok=True)
            for p in list(m.home.iterdir()):
                if p.is_dir():
                    shutil.rmtree(p, ignore_errors=True)
            (m.home / ".bashrc").write_text(USER_BASHRC)
            (m.home / ".zshrc").write_text(USER_ZSHRC)
            return m.argv("--install-completion", shell)
        rcs: tuple = (0,)
        want_json = False
    elif cmd == "check_cold_cache":
        def argv_of() -> list[str]:
            shutil.rmtree(m.base / "cache", ignore_errors=True)
            return m.argv("check", "--json")
        rcs, want_json = (0, 1), True
    else:
        oci = raw_oci(ctx)

        def argv_of() -> list[str]:
            return m.argv("image", str(oci), "--json")
        rcs, want_json = (0, 1), True
    b = run_proc(argv_of(), env, m.cwd, 50, preexec=_default_signals6)
    base_codes = codes(json.loads(b.out)) if b.out.strip().startswith("{") else None
    at = frac * b.secs
    argv = argv_of()
    start = time.monotonic()
    proc = subprocess.Popen(argv, env=env, cwd=str(m.cwd), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, start_new_session=True, preexec_fn=_default_signals6)
    outs: list[bytes] = []
    errs: list[bytes] = []
    t_out = threading.Thread(target=lambda: outs.append(proc.stdout.read()))
    t_err = threading.Thread(target=lambda: errs.append(proc.stderr.read()))
    t_out.start(); t_err.start()
    time.sleep(max(0.0, at - (time.monotonic() - start)))
    sent = proc.poll() is None
    if sent:
        try:
            os.kill(proc.pid, signum)
        except OSError:
            sent = False
    sent_at = time.monotonic()
    try:
        rc = proc.wait(timeout=25)
    except subprocess.TimeoutExpired:
        kill_group(proc.pid)
        raise Fail(f"still running 25 s after SIG{sig}") from None
    took = time.monotonic() - sent_at
    time.sleep(0.3)
    left = _group_left(proc.pid) + leftovers_of(m.base)
    kill_group(proc.pid)
    reap(ctx.work)
    t_out.join(10); t_err.join(10)
    r = R(rc, b"".join(outs), b"".join(errs), time.monotonic() - start)
    try:
        with open(BUILD / "signals-sent.log", "a") as f:
            f.write(f"r19 {cmd}-{sig}-{n} base={b.secs:.2f} at={at:.2f} sent={sent} rc={rc}\n")
    except OSError:
        pass
    expect(not left, f"processes left after SIG{sig}: {left[:2]}")
    if rc in (128 + signum, -signum):
        expect(sent, "ended by a signal it was not sent")
        expect(took < 12, f"took {took:.1f} s to stop after SIG{sig}")
        if want_json and r.outb.strip():
            try:
                json.loads(r.out)
                whole = True
            except ValueError:
                whole = False
            expect(not whole or "Interrupted" in r.out or rc < 0, f"a whole answer and exit {rc}")
        no_raw_controls13(strip_sgr(r.err), "stderr")
    else:
        hold16(r, want_json, rcs + (2,), secs=60)
        if sent and took > 0.5:
            raise Fail(f"SIG{sig} at {at:.2f} s while running was not acted on; exit {rc}")
    # what is left must be whole: the rc file sources, the next run holds with the same findings
    if cmd.startswith("completion"):
        _rc_sources(m, shell)
        again = m.run("--install-completion", shell, timeout=40, env={"SHELL": f"/bin/{shell}"})
        hold16(again, False, (0,), secs=30)
        _rc_sources(m, shell)
    else:
        again = run_proc(m.argv("check", "--json") if cmd == "check_cold_cache" else argv, env, m.cwd, 50)
        d = hold16(again, True, rcs, secs=40) or {}
        if base_codes is not None:
            expect(codes(d) == base_codes, f"the run after SIG{sig} finds {sorted(codes(d) ^ base_codes)} "
                                           "differently from a run never signalled")


family("signals6", "sig", {f"{c}-{s}-{n}": (c, s, n) for c in SIG6_COMMANDS for s in SIG6 for n in (0, 1, 2)},
       signals6_case, limit=110)


# ==================================================================================================================== ttyhostile
TTY_VALUES = {
    "osc52_clipboard": "\x1b]52;c;cm0gLXJmIH4=\x07",
    "osc8_hyperlink": "\x1b]8;;https://evil.example/\x1b\\click\x1b]8;;\x1b\\",
    "dcs_sixel": "\x1bPq#0;2;0;0;0#1!14~\x1b\\",
    "csi_8bit_c1": "\u009b2J\u009d0;t\u009c",
    "title_set": "\x1b]0;pwned\x07\x1b]2;pwned\x1b\\",
    "alt_screen_hide_cursor": "\x1b[?1049h\x1b[?25l",
    "bell_backspace_overwrite": "libcudnn\x08\x08\x08\x08\x08\x08\x08\x08rm -rf ~\x07",
    "cr_overwrite": "CUDNN_STATUS_SUCCESS\rCUDNN_STATUS_NOT_INITIALIZED",
    "mouse_and_keypad_modes": "\x1b[?1000h\x1b[?1006h\x1b=",
    "device_status_query": "\x1b[6n\x1b[c\x1b]11;?\x07",
}
TTY_COMMANDS = ("explain_arg", "compat_arg", "image_path", "merge_host")


def _tty_bad(text: str) -> list[str]:
    """Escape sequences and controls that reach the terminal raw (SGR colour and the line ends aside)."""
    plain = strip_sgr(text).replace("\r\n", "\n")
    bad = []
    for c in sorted(set(plain)):
        o = ord(c)
        if (o < 32 and c != "\n") or 127 <= o < 160 or c in BIDI or c in "\u2028\u2029":
            bad.append(f"U+{o:04X}")
    return bad


def ttyhostile_case(ctx: Ctx, arg: tuple[str, str]) -> None:
    cmd, key = arg
    value = TTY_VALUES[key]
    m = healthy(ctx)
    if cmd == "explain_arg":
        args, rcs = ["explain", f"RuntimeError: cuDNN error: {value} CUDNN_STATUS_NOT_INITIALIZED"], (0, 1)
    elif cmd == "compat_arg":
        args, rcs = ["compat", f"torch=={value}2.5.1"], (0, 1, 2)
    elif cmd == "image_path":
        folder = raw_oci(ctx, name="oci")
        odd = ctx.work / ("img" + value.replace("/", "_"))
        try:
            os.rename(folder, odd)
        except OSError:
            raise Skip("the file system refuses the name") from None
        args, rcs = ["image", str(odd) + "-missing"], (0, 1, 2)
    else:
        rep = _report(ctx)
        d = ctx.work / "reports"
        d.mkdir()
        (d / "a.json").write_text(json.dumps(_set_host(rep, "gpu-01")))
        (d / "b.json").write_text(json.dumps(_set_host(rep, "gpu-02")))
        (d / "c.json").write_text(json.dumps(_set_driver(_set_host(rep, f"gpu-03{value}"), "570.86.15")))
        args, rcs = ["fleet", "merge", str(d)], (0, 1)
    env = {**m.env, "TERM": "xterm-256color", "COLORTERM": "truecolor"}
    env.pop("COLUMNS", None)
    r = run_pty(m.argv(*args), env, m.cwd, 40, 120)
    sane(r, rcs)
    expect(r.secs < 30, f"took {r.secs:.1f} s on a terminal")
    text = utf8_strict(r.outb, "the terminal output")
    # the doctor's own progress line on a terminal (CR, erase line, cursor hide/show) is its own business
    own = re.sub(r"\x1b\[(\?25[lh]|[0-2]?K|[0-9]*[AG])", "", text)
    own = own.replace("\r\n", "\n")
    own = re.sub(r"\r(?!\n)", "", own) if key not in ("cr_overwrite",) else own
    bad = _tty_bad(own)
    expect(not bad, f"controls from a hostile value reach the terminal raw: {bad}")
    expect(text.strip(), "nothing printed on the terminal")


family("ttyhostile", "tty", {f"{c}-{k}": (c, k) for c in TTY_COMMANDS for k in TTY_VALUES}, ttyhostile_case,
       limit=60)


# ==================================================================================================================== uninstcut
def _installed(ctx: Ctx) -> tuple[dict, Path, Path, dict, dict, Path]:
    a = archive(ctx)
    env = install_env(ctx)
    pfx = prefix_with_old(ctx)
    before = inst().snapshot_content(pfx)
    r = run_proc(cli_argv("install", "--from", str(a), "--prefix", str(pfx), "--yes", "--json"), env, ctx.tree, 60)
    if r.rc != 0:
        raise Fail(f"the first install (before any damage) failed: {r!r}")
    mans = sorted((pfx / ".cudnn-doctor").glob("manifest-*.json"))
    if not mans:
        raise Fail("no manifest after an install (README: a backup and a manifest)")
    after = inst().snapshot_content(pfx)
    return env, pfx, a, before, after, mans[-1]


def _cut_at(path: Path, seed: str) -> int:
    data = path.read_bytes()
    rng = random.Random(seed)
    n = int(seed.rsplit("-", 1)[1])
    k = {0: 0, 1: 1, 2: len(data) - 1, 3: len(data) // 2}.get(n, rng.randrange(2, max(3, len(data) - 1)))
    path.write_bytes(data[:k])
    return k


def uninstcut_case(ctx: Ctx, arg: tuple[str, int]) -> None:
    what, n = arg
    env, pfx, a, before, after, man = _installed(ctx)
    k = _cut_at(man, f"1919-{what}-{n}")
    if what == "uninstall":
        r = run_proc(cli_argv("uninstall", "--prefix", str(pfx), "--yes", "--json"), env, ctx.tree, 50)
        d = hold16(r, True, (0, 1, 2), secs=35, out_max=1 << 20, err_max=16 << 10) or {}
        _user_files_kept(pfx)
        now = user_view(inst().snapshot_content(pfx))
        if r.rc == 0:
            expect(now == user_view(before) or {k2: v for k2, v in now.items() if not k2.startswith(".cudnn-doctor")}
                   == {k2: v for k2, v in user_view(before).items() if not k2.startswith(".cudnn-doctor")},
                   f"uninstall exit 0 over a manifest cut at byte {k}, but the prefix is not as before the install")
        else:
            same = {k2: v for k2, v in now.items() if not k2.startswith(".cudnn-doctor")} == \
                {k2: v for k2, v in user_view(after).items() if not k2.startswith(".cudnn-doctor")}
            expect(same, f"uninstall exit {r.rc} over a manifest cut at byte {k} left a half-changed prefix "
                         f"({json.dumps(d)[:300]})")
    else:
        r = run_proc(cli_argv("install", "--from", str(a), "--prefix", str(pfx), "--yes", "--json"), env, ctx.tree,
                     50)
        hold16(r, True, (0, 1, 2), secs=35, out_max=1 << 20, err_max=16 << 10)
        _user_files_kept(pfx)
        files = lambda snap: {k2: v for k2, v in user_view(snap).items() if not k2.startswith(".cudnn-doctor")}
        now = files(inst().snapshot_content(pfx))
        if r.rc == 0:
            expect(now == files(after), f"install exit 0 over a manifest cut at byte {k}, but the prefix's files are "
                                        "not the install's")
            # install names `cudnn-doctor uninstall --prefix P` as what restores what it replaced: it must
            u = run_proc(cli_argv("uninstall", "--prefix", str(pfx), "--yes", "--json"), env, ctx.tree, 50)
            ud = hold16(u, True, (0, 1, 2), secs=35, out_max=1 << 20, err_max=16 << 10) or {}
            _user_files_kept(pfx)
            expect(u.rc == 0 and files(inst().snapshot_content(pfx)) == files(before),
                   f"install exit 0 over a manifest cut at byte {k}; the uninstall it names then exits {u.rc} and "
                   f"the prefix is {'not ' if files(inst().snapshot_content(pfx)) != files(before) else ''}as before "
                   f"the first install ({json.dumps(ud)[:300]})")
        else:
            expect(now == files(after), f"install exit {r.rc} over a manifest cut at byte {k} changed the prefix's "
                                        "files")
    t = run_proc(cli_argv("uninstall", "--prefix", str(pfx), "--dry-run"), env, ctx.tree, 50)
    hold16(t, False, (0, 1, 2), secs=35, out_max=1 << 20, err_max=16 << 10)
    text_ok(t)


family("uninstcut", "cut", {f"{w}-{n}": (w, n) for w in ("uninstall", "install") for n in range(20)},
       uninstcut_case, limit=90)


# ==================================================================================================================== cachecut
CACHE_KINDS = ("cudnn", "first_use", "fixes", "multi_gpu", "platforms", "process_env", "rules")
CACHE_RUNS = {"check": (["check", "--json"], (0, 1)), "explain": (["explain", "CD301", "--json"], (0, 1)),
              "compat": (["compat", "torch==2.5.1", "--json"], (0, 1))}


def cachecut_case(ctx: Ctx, arg: tuple[str, int]) -> None:
    kind, n = arg
    m = healthy(ctx)
    run_name = ("check", "explain", "compat")[n % 3]
    args, rcs = CACHE_RUNS[run_name]
    b = m.run(*args, timeout=45)
    base = hold16(b, True, rcs, secs=35) or {}
    files = sorted((m.base / "cache").rglob(f"{kind}-*.json"))
    if not files:
        b2 = m.run("check", "--json", timeout=45)
        files = sorted((m.base / "cache").rglob(f"{kind}-*.json"))
        if not files:
            raise Skip(f"no cache file {kind}-*.json after a run (its name changed)")
    f = files[0]
    data = f.read_bytes()
    rng = random.Random(f"1919-{kind}-{n}")
    k = {0: 0, 1: len(data) - 1}.get(n, rng.randrange(1, max(2, len(data) - 1)))
    f.write_bytes(data[:k])
    r = m.run(*args, timeout=45)
    d = hold16(r, True, rcs, secs=35, out_max=4 << 20, err_max=16 << 10) or {}
    expect(r.rc == b.rc, f"exit {r.rc} over a cache file cut at byte {k} of {len(data)}, {b.rc} before")
    if run_name == "check":
        expect(codes(d) == codes(base), f"a cut cache changes the findings: {sorted(codes(d) ^ codes(base))}")
    elif run_name == "compat":
        strip = lambda x: json.dumps({k2: v for k2, v in x.items() if k2 not in ("timings_ms",)}, sort_keys=True)
        expect(strip(d) == strip(base), "a cut cache changes compat's answer")
    else:
        expect(json.dumps(d, sort_keys=True) == json.dumps(base, sort_keys=True) or
               codes(d) == codes(base), "a cut cache changes explain's answer")
    t = m.run(*[a for a in args if a != "--json"], timeout=45)
    hold16(t, False, rcs, secs=35, out_max=4 << 20, err_max=16 << 10)
    text_ok(t)


family("cachecut", "cut", {f"{k}-{n}": (k, n) for k in CACHE_KINDS for n in range(6)}, cachecut_case, limit=80)


# ==================================================================================================================== explainlog
LOG_MSG = "RuntimeError: cuDNN error: CUDNN_STATUS_NOT_INITIALIZED"


def _log(kind: str) -> tuple[bytes, bool]:
    """A log holding the message, and whether the message stands whole on a line of its own (explain must match it)."""
    rng = random.Random(f"1919-log-{kind}")
    msg = LOG_MSG.encode()
    if kind == "tqdm_200k_cr":
        bar = b"".join(b"\r%3d%%|%s| %d/200000 [00:01<00:00]" % (i // 2000, b"#" * (i // 20000), i)
                       for i in range(0, 200000, 7))
        return bar + b"\n" + msg + b"\n", True
    if kind == "msg_under_cr":
        return b"Epoch 1: 12%\rEpoch 1: 45%\r" + msg + b"\n", False
    if kind == "rich_traceback":
        box = "\u256d\u2500\u2500\u2500 Traceback (most recent call last) \u2500\u2500\u2500\u256e\n" \
              "\u2502 \x1b[33m/app/train.py\x1b[0m:\x1b[94m42\x1b[0m in \x1b[92mmain\x1b[0m \u2502\n" \
              "\u2570\u2500\u2500\u2500\u256f\n"
        return (box + "\x1b[1;31mRuntimeError: \x1b[0mcuDNN error: CUDNN_STATUS_NOT_INITIALIZED\n").encode(), False
    if kind == "sgr_whole_line":
        return b"\x1b[31m" + msg + b"\x1b[0m\n", False
    if kind == "json_log_lines":
        lines = [json.dumps({"ts": 1700000000 + i, "level": "info", "msg": f"step {i}"}) for i in range(5000)]
        lines.append(json.dumps({"ts": 1, "level": "error", "msg": LOG_MSG, "exc": "Traceback ...\\n" * 3}))
        return ("\n".join(lines) + "\n").encode(), False
    if kind == "syslog_prefix":
        return b"".join(b"Dec  7 18:00:%02d gpu-01 python[4242]: step %d ok\n" % (i % 60, i) for i in range(20000)) + \
            b"Dec  7 18:01:00 gpu-01 python[4242]: " + msg + b"\n", False
    if kind == "zero_width_joiners":
        return "\u200d".join(LOG_MSG).encode() + b"\n", False
    if kind == "backspace_spelled":
        return b"".join(bytes([c]) + b"_\x08" for c in msg) + b"\n", False
    if kind == "html_pre":
        return b"<html><body><pre class=\"err\">" + msg.replace(b":", b"&#58;") + b"</pre></body></html>\n", False
    if kind == "markdown_fence":
        return b"Here is my error:\n\n```\n" + msg + b"\n```\n\nPlease help!!! \xf0\x9f\x99\x8f\n", True
    if kind == "minified_1mb_line":
        blob = json.dumps({"k": ["v" * 50] * 18000, "error": LOG_MSG}).encode()
        return blob + b"\n", False
    if kind == "repeated_100k":
        return (msg + b"\n") * 100_000, True
    if kind == "chained_50":
        tb = "".join(f"Traceback (most recent call last):\n  File \"/a{i}.py\", line {i}, in f\n    g()\n"
                     f"ValueError: step {i}\n\nDuring handling of the above exception, another exception occurred:\n\n"
                     for i in range(50))
        return (tb + "Traceback (most recent call last):\n  File \"/t.py\", line 1, in <module>\n" + LOG_MSG +
                "\n").encode(), True
    if kind == "high_bytes_noise":
        noise = bytes(rng.randrange(0x80, 0x100) for _ in range(300_000))
        return noise + b"\n" + msg + b"\n" + noise + b"\n", True
    if kind == "pytest_captured":
        return (b"=" * 30 + b" FAILURES " + b"=" * 30 + b"\n_____ test_conv _____\n\n    def test_conv():\n>"
                b"       y = conv(x)\nE       " + msg + b"\n\ntest_a.py:7: RuntimeError\n"
                b"----- Captured stderr call -----\nwarn\n" + b"=" * 70 + b"\n"), False
    if kind == "crlf_windows_log":
        return b"C:\\train> python train.py\r\n" * 2000 + msg + b"\r\n", True
    if kind == "nul_free_c0_spray":
        spray = bytes(rng.choice([1, 2, 3, 4, 5, 6, 7, 8, 11, 12, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26,
                                  27, 28, 29, 30, 31, 127]) for _ in range(200_000))
        return spray + b"\n" + msg + b"\n", True
    if kind == "tabs_and_vt_indent":
        return b"\t\t\x0b\x0c" + msg + b"\n", False
    if kind == "one_line_per_char":
        return b"\n".join(bytes([c]) for c in msg) + b"\n", False
    if kind == "million_empty_lines":
        return b"\n" * 1_000_000 + msg + b"\n", True
    raise ValueError(kind)


LOG_KINDS = ("tqdm_200k_cr", "msg_under_cr", "rich_traceback", "sgr_whole_line", "json_log_lines", "syslog_prefix",
             "zero_width_joiners", "backspace_spelled", "html_pre", "markdown_fence", "minified_1mb_line",
             "repeated_100k", "chained_50", "high_bytes_noise", "pytest_captured", "crlf_windows_log",
             "nul_free_c0_spray", "tabs_and_vt_indent", "one_line_per_char", "million_empty_lines")


def explainlog_case(ctx: Ctx, arg: tuple[str, str]) -> None:
    kind, how = arg
    data, whole = _log(kind)
    os.environ["REDTEAM13_QUOTES_INPUT"] = "1"  # the log itself holds tracebacks, which explain may quote on stdout
    m = ctx.machine("e")
    if how == "stdin_json":
        r = m.run("explain", "-", "--json", stdin=data, timeout=45, preexec=cap_as(2048))
        d = hold16(r, True, (0, 1, 2), secs=30, out_max=1 << 20, err_max=16 << 10) or {}
        if whole:
            got = {x.get("code") for x in (d.get("matches") or []) if isinstance(x, dict)}
            expect("CD315" in got, f"the message, whole on a line of its own in the log, is not matched "
                                   f"(CD315 for it alone); got {sorted(map(str, got))[:6]}, exit {r.rc}")
    else:
        p = ctx.work / "train.log"
        p.write_bytes(data)
        r = m.run("explain", "--from-file", str(p), timeout=45, preexec=cap_as(2048))
        hold16(r, False, (0, 1, 2), secs=30, out_max=1 << 20, err_max=16 << 10)
        text_ok(r)
        if whole:
            expect("CD315" in r.out, f"the message, whole on a line of its own in the log, is not matched "
                                     f"(CD315 for it alone); exit {r.rc}: {r.out[:300]!r}")


family("explainlog", "log", {f"{k}-{h}": (k, h) for k in LOG_KINDS for h in ("stdin_json", "file_text")},
       explainlog_case, limit=70)
# ####################################################################################################################
# ROUND TWENTY: round nineteen's classes are dropped (their helpers stay above); eight new classes below
# ####################################################################################################################
CASES.clear()
CLASSES.clear()
CLASSES.update({
    "platfile": "check where the platform's own signal files (/proc/version, PID 1's cgroup and comm, mountinfo, /run/.containerenv, Apptainer's environment script) are FIFOs, loops, /dev/zero, sockets, sparse, 40 MB lines, 10^6 lines, binary with escapes",
    "cdispec": "check on a Docker host whose CDI specifications (/etc/cdi, /var/run/cdi) are YAML bombs, 10^5-deep, Python tags, 50 MB, 20,000 files, odd driver versions, wrong JSON types, no files, or named with shell specials (the printed fix line run in bash)",
    "platenvfmt": "check in an Apptainer/Docker container whose variables (APPTAINER_CONTAINER, container, NVIDIA_DRIVER_CAPABILITIES, ...) hold workflow commands, table and XML breakers, C1, bidi, bytes not UTF-8, through github, junit, markdown, prometheus and text",
    "selectfmt": "--require, --select, --ignore and CUDNN_DOCTOR_REQUIRE with values of odd grammar (operators, other digits, newlines, escapes, 5,000 digits) through json and the CI formats",
    "wslfix": "WSL 2 with a Linux driver shadowing WSL's from a folder named with shell specials: fix --shell bash/zsh/fish run in the real shell, CD152's dpkg line run in bash",
    "ldcache": "check on a Jetson whose loader cache (etc/ld.so.cache under the system prefix) is cut at seeded offsets, has lying counts and offsets, escapes in its paths, or is no file",
    "explainenc": "explain - --json and explain --from-file of a log in other encodings (UTF-16/32 with and without BOM, Latin-1, GB18030, Shift-JIS, EBCDIC, UTF-7, gzip, bzip2) and broken UTF-8 (overlong, CESU-8, beyond U+10FFFF)",
    "sigoutput": "SIGINT/SIGTERM/SIGHUP at seeded instants of check --format json/junit/prometheus/markdown -o FILE over an older report: the file whole (old or new), nothing left beside it",
})
MARKS20 = "MARK"
# a workflow command the hostile value itself would make: its own text at the start of a line (GitHub's runner
# reads stdout and stderr line by line; CR ends a line too)
INJECTED_WF = re.compile(r"^::(error|warning)( title=pwn)?::owned")


def no_injected_workflow(text: str) -> None:
    lines = re.split(r"\r\n|\r|\n", text)
    bad = [x for x in lines if INJECTED_WF.match(x)]
    expect(not bad, f"a workflow command made by a hostile value: {bad[:1]!r}")


def no_marks20(*roots: Path) -> None:
    for root in roots:
        made = [str(p) for p in root.rglob("MARK") if p.name == "MARK"]
        expect(not made, f"a command was run (a file it makes exists): {made[:2]}")


def run_capped(m: M, args: list[str], timeout: float = 45, env: dict | None = None, stdin: bytes | None = None,
               mb: int = 2048) -> R:
    return run_proc(m.argv(*args), {**m.env, **(env or {})}, m.cwd, timeout, stdin, preexec=cap_as(mb))


def _seeded_bytes(seed: str, n: int) -> bytes:
    rng = random.Random(seed)
    return bytes(rng.randrange(256) for _ in range(n))


def _hostile_text_bytes(seed: str, n: int = 65536) -> bytes:
    """Seeded bytes, not UTF-8, with terminal escapes, C1, bidi and workflow commands among them (no NUL)."""
    rng = random.Random(seed)
    pieces = [b"\x1b[2J", b"\x1b]0;title\x07", b"\x9b31m", "\u202e".encode(), b"\n::error::owned\n", b"\xff\xfe",
              b"\xc0\xaf", b"\r", b"\x08\x08"]
    out = bytearray()
    while len(out) < n:
        if rng.random() < 0.2:
            out += rng.choice(pieces)
        else:
            out += bytes(rng.randrange(1, 256) for _ in range(rng.randrange(1, 24)))
    return bytes(out[:n])


# ==================================================================================================================== platfile
WSL_KERNEL20 = ("Linux version 5.15.167.4-microsoft-standard-WSL2 (root@f9c826d3017f) (gcc (GCC) 11.2.0, GNU ld "
                "(GNU Binutils) 2.37) #1 SMP Tue Nov 5 00:21:55 UTC 2024\n")
PLAT_FILES = {  # key: (path under the root, a plausible line (for the huge and many-line kinds), set-up)
    "proc_version": ("proc/version", "Linux version 5.15.167.4-microsoft-standard-WSL2 ", "wsl"),
    "proc1_cgroup": ("proc/1/cgroup", "12:devices:/docker/3f1c2a9d0b7e", "docker"),
    "proc1_comm": ("proc/1/comm", "python3", "docker"),
    "self_mountinfo": ("proc/self/mountinfo",
                       "1205 1090 0:64 / / rw,relatime master:9 - overlay overlay rw,lowerdir=/var/lib/docker/l/AB",
                       "docker_v2"),
    "containerenv": ("run/.containerenv", 'engine="podman-4.3.1" name="gpu" image="nvcr.io/nvidia/pytorch"',
                     "podman"),
    "apptainer_env": (".singularity.d/env/90-environment.sh", "export APPTAINER_NAME=pytorch.sif", "apptainer"),
}
PLAT_KINDS = ("fifo", "loop", "dev_zero", "socket", "sparse_8g", "huge_line_40m", "million_lines", "binary_escapes")


def _plat_setup(m: M, how: str) -> None:
    if how == "wsl":
        m.env.update(WSL_DISTRO_NAME="Ubuntu-24.04", WSL_INTEROP="/run/WSL/1_interop")
        (m.root / "usr" / "lib" / "wsl" / "lib").mkdir(parents=True, exist_ok=True)
    elif how.startswith("docker"):
        (m.root / ".dockerenv").write_text("")
        (m.root / "proc" / "1").mkdir(parents=True, exist_ok=True)
        (m.root / "proc" / "1" / "cgroup").write_text("0::/\n" if how == "docker_v2" else
                                                      "12:devices:/docker/3f1c2a9d0b7e\n0::/\n")
        (m.root / "proc" / "1" / "comm").write_text("python3\n")
        m.env.update(NVIDIA_VISIBLE_DEVICES="all", NVIDIA_DRIVER_CAPABILITIES="compute,utility",
                     CUDA_VERSION="12.8.1", NV_CUDNN_VERSION="9.8.0.87")
    elif how == "podman":
        m.env["container"] = "podman"
    elif how == "apptainer":
        m.env.update(APPTAINER_CONTAINER="/home/me/pytorch.sif", APPTAINER_NAME="pytorch.sif")


def _plat_place(path: Path, kind: str, line: str, seed: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.exists() or path.is_symlink():
        path.unlink()
    if kind in ("fifo", "loop", "dev_zero"):
        hostile_file(path, kind)
    elif kind == "socket":  # bound by its name from its folder (a full path may pass AF_UNIX's 108 bytes)
        here = os.getcwd()
        os.chdir(path.parent)
        try:
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.bind(path.name)
            s.close()
        finally:
            os.chdir(here)
    elif kind == "sparse_8g":
        with open(path, "wb") as f:
            f.write(line.encode() + b"\n")
            f.truncate(8 << 30)
    elif kind == "huge_line_40m":
        with open(path, "wb") as f:
            f.write(line.encode() + b" \x1b[2J")
            chunk = b"A" * (1 << 20)
            for _ in range(40):
                f.write(chunk)
            f.write(b"\n")
    elif kind == "million_lines":
        with open(path, "wb") as f:
            f.write((line + "\n").encode() * 1_000_000)
    elif kind == "binary_escapes":
        path.write_bytes(line.encode() + b"\x1b]0;owned\x07\n" + _hostile_text_bytes(seed))
    else:
        raise ValueError(kind)


def platfile_case(ctx: Ctx, arg: tuple[str, str]) -> None:
    key, kind = arg
    rel, line, how = PLAT_FILES[key]
    m = healthy(ctx)
    _plat_setup(m, how)
    _plat_place(m.root / rel, kind, line, f"2020-platfile-{key}-{kind}")
    r = run_capped(m, ["check", "--json"], timeout=45)
    hold16(r, True, (0, 1), secs=30, out_max=4 << 20, err_max=64 << 10)
    if kind in ("huge_line_40m", "million_lines", "binary_escapes"):
        t = run_capped(m, ["check", "-v"], timeout=45)
        hold16(t, False, (0, 1), secs=30, out_max=1 << 20, err_max=64 << 10)
        text_ok(t)
    left = leftovers_of(m.base)
    reap(m.base)
    expect(not left, f"processes left: {left[:2]}")


family("platfile", "file", {f"{k}-{kind}": (k, kind) for k in PLAT_FILES for kind in PLAT_KINDS}, platfile_case,
       limit=100)


# ==================================================================================================================== cdispec
CDI_STALE = """cdiVersion: 0.5.0
kind: nvidia.com/gpu
devices:
- name: all
  containerEdits:
    deviceNodes:
    - path: /dev/nvidia0
containerEdits:
  mounts:
  - hostPath: {lib}
    containerPath: {lib}
  - hostPath: /usr/lib/x86_64-linux-gnu/libnvidia-ml.so.550.54.15
    containerPath: /usr/lib/x86_64-linux-gnu/libnvidia-ml.so.550.54.15
"""
LIB_OK = "/usr/lib/x86_64-linux-gnu/libcuda.so.550.54.15"


def _cdi_yaml(lib: str = LIB_OK) -> str:
    return CDI_STALE.replace("{lib}", lib)


def _cdi_json(edits: object = None) -> dict:
    if edits is None:
        edits = {"mounts": [{"hostPath": LIB_OK, "containerPath": LIB_OK}]}
    return {"cdiVersion": "0.5.0", "kind": "nvidia.com/gpu",
            "devices": [{"name": "all", "containerEdits": {"deviceNodes": [{"path": "/dev/nvidia0"}]}}],
            "containerEdits": edits}


def _alias_bomb() -> bytes:
    lines = ['a0: &a0 ["libcuda.so.550.54.15", "libcuda.so.550.54.15", "libcuda.so.550.54.15"]']
    for i in range(1, 10):
        prev = f"*a{i - 1}"
        lines.append(f"a{i}: &a{i} [{', '.join([prev] * 9)}]")
    return (_cdi_yaml() + "\n".join(lines) + "\nbomb: *a9\n").encode()


def _cdi_content(kind: str) -> tuple[str, bytes]:
    """(path under the root, bytes) of the spec of KIND."""
    y = "etc/cdi/nvidia.yaml"
    j = "var/run/cdi/nvidia.json"
    if kind == "baseline_yaml":
        return y, _cdi_yaml().encode()
    if kind == "alias_bomb":
        return y, _alias_bomb()
    if kind == "deep_flow_100k":
        return y, _cdi_yaml().encode() + b"extra: " + b"[" * 100_000 + b"]" * 100_000 + b"\n"
    if kind == "deep_block_3000":
        body = "".join(" " * i + f"k{i}:\n" for i in range(3000)) + " " * 3000 + "v\n"
        return y, (_cdi_yaml() + "deep:\n" + "".join(" " + x + "\n" for x in body.splitlines())).encode()
    if kind == "python_tag_apply":
        return y, (_cdi_yaml().replace("kind: nvidia.com/gpu",
                                       'kind: !!python/object/apply:os.system ["touch MARK"]')).encode()
    if kind == "python_name_tag":
        return y, (_cdi_yaml() + "hook: !!python/name:os.system\nrun: !!python/object/new:os.system [touch MARK]\n"
                   ).encode()
    if kind == "huge_scalar_50m":
        return y, _cdi_yaml().encode() + b"note: " + b"x" * (50 << 20) + b"\n"
    if kind == "mounts_200k":
        more = "".join(f"  - hostPath: /usr/lib/x86_64-linux-gnu/libcuda.so.550.54.{i}\n"
                       f"    containerPath: /usr/lib/x86_64-linux-gnu/libcuda.so.550.54.{i}\n" for i in range(200_000))
        return y, (_cdi_yaml() + more).encode()
    if kind == "docs_20000":
        return y, ("---\n" + _cdi_yaml()).encode() * 20_000
    if kind == "version_arabic":
        return y, _cdi_yaml("/usr/lib/x86_64-linux-gnu/libcuda.so.\u0665\u0665\u0660.\u0665\u0664.\u0661\u0665"
                            ).encode()
    if kind == "version_fullwidth":
        return y, _cdi_yaml("/usr/lib/x86_64-linux-gnu/libcuda.so.\uff15\uff15\uff10.54.15").encode()
    if kind == "version_5000_digits":
        return y, _cdi_yaml("/usr/lib/x86_64-linux-gnu/libcuda.so." + "9" * 5000 + ".54.15").encode()
    if kind == "version_escape":
        return y, _cdi_yaml('"/usr/lib/x86_64-linux-gnu/libcuda.so.550.54.15\\e]0;owned\\a\\e[2J\\x9b31m"').encode()
    if kind == "version_newline_workflow":
        return y, _cdi_yaml('"/usr/lib/x86_64-linux-gnu/libcuda.so.550.54.15\\n::error::owned\\n"').encode()
    if kind == "version_bidi":
        return y, _cdi_yaml("/usr/lib/x86_64-linux-gnu/libcuda.so.550.54.15\u202e51.45.055").encode()
    if kind == "version_nul":
        return y, _cdi_yaml('"/usr/lib/x86_64-linux-gnu/libcuda.so.550.54.15\\0.1"').encode()
    if kind == "version_dotdot":
        return y, _cdi_yaml("/usr/lib/x86_64-linux-gnu/libcuda.so.550.54.15/../../../../etc/passwd").encode()
    if kind == "utf16_bom":
        return y, _cdi_yaml().encode("utf-16")
    if kind == "utf8_bom_crlf":
        return y, b"\xef\xbb\xbf" + _cdi_yaml().replace("\n", "\r\n").encode()
    if kind == "non_utf8_path":
        return y, _cdi_yaml().encode().replace(b"x86_64-linux-gnu/libcuda", b"x86_64\xff\xfe\x1b[2J/libcuda")
    if kind == "tab_indent":
        return y, _cdi_yaml().replace("  ", "\t").encode()
    if kind == "merge_keys":
        return y, (_cdi_yaml() + "base: &b {hostPath: " + LIB_OK + "}\nmore:\n  - <<: *b\n  - <<: [*b, *b]\n").encode()
    if kind == "empty":
        return y, b""
    if kind == "comments_1m_lines":
        return y, _cdi_yaml().encode() + b"# " + b"libcuda.so.1.2.3\n# " * 1_000_000 + b"\n"
    if kind == "baseline_json":
        return j, json.dumps(_cdi_json()).encode()
    cur = "/usr/lib/x86_64-linux-gnu/libcuda.so.580.159.04"
    if kind == "sem_current_yaml":
        return y, _cdi_yaml(cur).replace("550.54.15", "580.159.04").encode()
    if kind == "sem_current_comment_old":
        return y, ("# made before the upgrade from /usr/lib/x86_64-linux-gnu/libcuda.so.550.54.15\n" +
                   _cdi_yaml(cur).replace("550.54.15", "580.159.04")).encode()
    if kind == "sem_stale_flow_style":
        return y, ("cdiVersion: 0.5.0\nkind: nvidia.com/gpu\ndevices: [{name: all, containerEdits: {deviceNodes: "
                   "[{path: /dev/nvidia0}]}}]\ncontainerEdits: {mounts: [{hostPath: " + LIB_OK + ", containerPath: " +
                   LIB_OK + "}]}\n").encode()
    if kind == "sem_stale_quoted":
        return y, _cdi_yaml(f"'{LIB_OK}'").encode()
    if kind == "sem_stale_pretty_json":
        return j, json.dumps(_cdi_json(), indent=2).encode()
    if kind == "sem_current_json":
        return j, json.dumps(_cdi_json({"mounts": [{"hostPath": cur, "containerPath": cur}]})).encode()
    if kind == "json_mounts_string":
        return j, json.dumps(_cdi_json({"mounts": "libcuda.so.550.54.15"})).encode()
    if kind == "json_hostpath_types":
        return j, json.dumps(_cdi_json({"mounts": [{"hostPath": 550.54}, {"hostPath": None}, {"hostPath": [LIB_OK]},
                                                   {"hostPath": {"p": LIB_OK}}, 7, None, "x"]})).encode()
    if kind == "json_nan_inf":
        return j, json.dumps(_cdi_json()).replace('"0.5.0"', "NaN").encode()[:-1] + b', "x": Infinity}'
    if kind == "json_duplicate_keys":
        good = json.dumps({"mounts": [{"hostPath": LIB_OK, "containerPath": LIB_OK}]})
        now = json.dumps({"mounts": [{"hostPath": "/usr/lib/x86_64-linux-gnu/libcuda.so.580.159.04"}]})
        return j, ('{"cdiVersion": "0.5.0", "kind": "nvidia.com/gpu", "containerEdits": ' + good +
                   ', "containerEdits": ' + now + "}").encode()
    if kind == "json_deep_100k":
        return j, b'{"cdiVersion": "0.5.0", "kind": "nvidia.com/gpu", "containerEdits": ' + b'{"a":' * 100_000 + \
            b"1" + b"}" * 100_000 + b"}"
    if kind == "json_huge_int":
        return j, json.dumps(_cdi_json()).replace('"0.5.0"', "1" + "0" * 100_000).encode()
    raise ValueError(kind)


CDI_CONTENT = ("baseline_yaml", "alias_bomb", "deep_flow_100k", "deep_block_3000", "python_tag_apply",
               "python_name_tag", "huge_scalar_50m", "mounts_200k", "docs_20000", "version_arabic", "version_fullwidth",
               "version_5000_digits", "version_escape", "version_newline_workflow", "version_bidi", "version_nul",
               "version_dotdot", "utf16_bom", "utf8_bom_crlf", "non_utf8_path", "tab_indent", "merge_keys", "empty",
               "comments_1m_lines", "baseline_json", "json_mounts_string", "json_hostpath_types", "json_nan_inf",
               "json_duplicate_keys", "json_deep_100k", "json_huge_int", "sem_current_yaml", "sem_current_comment_old",
               "sem_stale_flow_style", "sem_stale_quoted", "sem_stale_pretty_json", "sem_current_json")
CDI_FILES = ("fifo", "loop", "dev_zero", "folder", "sparse_8g", "files_20000")
CDI_NAMES = {"dollar_paren": "$(touch MARK).yaml", "backtick": "`touch MARK`.yaml", "quote_space": "it's here.yaml",
             "semicolon": "x;touch MARK;.yaml", "newline": "new\nline.yaml",
             "escape": "\x1b[2J\x1b]0;t\x07.yaml", "glob_dash": "-rf *.yaml"}
CDI_TEXT_TOO = {"version_escape", "version_newline_workflow", "version_bidi", "version_nul", "non_utf8_path",
                "version_arabic", "utf8_bom_crlf"}


def _docker_host(ctx: Ctx) -> M:
    m = healthy(ctx)
    for program in ("dockerd", "nvidia-ctk", "nvidia-container-runtime-hook"):
        p = m.root / "usr" / "bin" / program
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text("")
    return m


def _fix_line_runs(m: M, line: str, program: str, want: list[str]) -> None:
    """LINE pasted into bash with a stand-in for PROGRAM that records its arguments: exactly WANT, and no MARK."""
    fake = m.base / "fakebin"
    fake.mkdir(exist_ok=True)
    args_file = m.base / "args.bin"
    args_file.unlink(missing_ok=True)
    for name in ("sudo", program):
        scripted(fake / name, "#!/bin/sh\n" + (f'if [ "$(basename "$0")" = sudo ]; then exec "$@"; fi\n') +
                 f"printf '%s\\0' \"$@\" > {shlex.quote(str(args_file))}\n")
    run_dir = m.base / "paste"
    run_dir.mkdir(exist_ok=True)
    s = run_proc(["bash", "--norc", "--noprofile", "-c", line], {"PATH": f"{fake}:/usr/bin:/bin", "HOME": str(m.home)},
                 run_dir, 20)
    no_marks20(run_dir, m.base)
    expect(args_file.exists(), f"the printed line did not run {program}: {line!r} (rc {s.rc}, {s.err[-200:]!r})")
    got = [os.fsdecode(x) for x in args_file.read_bytes().split(b"\0")[:-1]]
    expect(got == want, f"the printed line gives {program} {got!r}, not {want!r}: {line!r}")


def pasted_commands(text: str, marker: str) -> list[str]:
    """The command lines of a text report that hold MARKER, as a user copies them: a line of its own (indented), or
    the span between backticks in a sentence."""
    out = []
    for line in text.split("\n"):
        if marker not in line or line.lstrip().startswith("#"):
            continue
        stripped = line.strip()
        if stripped.startswith(marker) or stripped.startswith("sudo " + marker):
            out.append(stripped)
        else:
            bt = re.search(r"`([^`]*" + re.escape(marker) + r"[^`]*)`", line)
            out.append(bt.group(1) if bt else stripped[stripped.find(marker):])
    return out


def cdispec_case(ctx: Ctx, arg: tuple[str, str]) -> None:
    group, kind = arg
    m = _docker_host(ctx)
    spec: Path | None = None
    if group == "content":
        rel, data = _cdi_content(kind)
        spec = m.root / rel
        spec.parent.mkdir(parents=True, exist_ok=True)
        spec.write_bytes(data)
    elif group == "file":
        spec = m.root / "etc" / "cdi" / "nvidia.yaml"
        if kind == "files_20000":
            spec.parent.mkdir(parents=True, exist_ok=True)
            data = _cdi_yaml().encode()
            for i in range(20_000):
                (spec.parent / f"nvidia-{i:05d}.yaml").write_bytes(data)
        elif kind == "sparse_8g":
            spec.parent.mkdir(parents=True, exist_ok=True)
            with open(spec, "wb") as f:
                f.write(_cdi_yaml().encode())
                f.truncate(8 << 30)
        else:
            hostile_file(spec, kind)
    else:
        spec = m.root / "etc" / "cdi" / CDI_NAMES[kind]
        spec.parent.mkdir(parents=True, exist_ok=True)
        spec.write_text(_cdi_yaml())
    r = run_capped(m, ["check", "--json"], timeout=45)
    d = hold16(r, True, (0, 1), secs=30, out_max=4 << 20, err_max=64 << 10) or {}
    no_marks20(m.base, ctx.work)
    no_passwd(r)
    if kind.startswith("sem_current"):
        expect("CD157" not in codes(d), f"a spec made for this very driver (580.159.04) is called stale (CD157): "
                                        f"{d.get('host', {}).get('platform', {}).get('cdi_specs')}")
    if kind.startswith("sem_stale"):
        expect("CD157" in codes(d), f"a spec made for driver 550.54.15 on a 580 node, written as valid YAML/JSON "
                                    f"of another shape, is not CD157: {sorted(codes(d))}")
    if kind in ("baseline_yaml", "baseline_json"):
        expect("CD157" in codes(d), f"a spec made for driver 550.54.15 on a 580 node is not CD157 (README): "
                                    f"{sorted(codes(d))}")
    if group == "content" and kind in CDI_TEXT_TOO or group == "name":
        t = run_capped(m, ["check"], timeout=45)
        hold16(t, False, (0, 1), secs=30, out_max=1 << 20, err_max=64 << 10)
        text_ok(t)
        no_marks20(m.base, ctx.work)
    if group == "name" and "CD157" in codes(d):
        for cmd in pasted_commands(t.out, "nvidia-ctk cdi generate"):
            _fix_line_runs(m, cmd, "nvidia-ctk", ["cdi", "generate", f"--output={spec}"])
    left = leftovers_of(m.base)
    reap(m.base)
    expect(not left, f"processes left: {left[:2]}")


family("cdispec", "spec", {**{f"content-{k}": ("content", k) for k in CDI_CONTENT},
                           **{f"file-{k}": ("file", k) for k in CDI_FILES},
                           **{f"name-{k}": ("name", k) for k in CDI_NAMES}}, cdispec_case, limit=100)


# ==================================================================================================================== platenvfmt
PLATENV_VALUES = {
    "wf_newline": "x\n::error title=pwn::owned",
    "wf_cr": "x\r::warning::owned\r",
    "md_table": "a|b\n| --- | --- |\n| x | y |",
    "xml_break": ']]></failure></testcase><testcase name="x"><error message="owned"/>&#0;&amp;',
    "c1_osc": "\u009b2J\u009d0;owned\u009c\u0085",
    "bidi": "pytorch\u202efis.\u2066x\u2069",
    "non_utf8": "img\udcff\udcfe\udc80.sif",
    "prom_break": 'a"} 1\nowned_metric{x="1"} 1\n# TYPE x counter',
}
PLATENV_FORMATS = ("github", "junit", "markdown", "prometheus", "text_v")


def platenvfmt_case(ctx: Ctx, arg: tuple[str, str]) -> None:
    key, fmt = arg
    value = PLATENV_VALUES[key]
    # an Apptainer container without --nv whose image asks for GPUs: the node's /dev bound in, no driver library
    # (CD108 names the container), a cuDNN of its own
    m = ctx.machine()
    folder = m.base / "cudnn" / "lib"
    fakes().fake_cudnn(folder, version=91900, cudart=13000, sublibraries=CUDNN9)
    m.add_lib(folder)
    (m.root / ".singularity.d" / "env").mkdir(parents=True, exist_ok=True)
    (m.root / ".singularity.d" / "env" / "90-environment.sh").write_text("#!/bin/sh\n")
    (m.root / "proc" / "1").mkdir(parents=True, exist_ok=True)
    (m.root / "proc" / "1" / "comm").write_text("appinit\n")
    (m.root / "dev").mkdir(exist_ok=True)
    for device in ("nvidiactl", "nvidia0", "nvidia-uvm"):
        (m.root / "dev" / device).write_text("")
    env = {"APPTAINER_CONTAINER": f"/home/me/{value}.sif", "APPTAINER_NAME": value,
           "SINGULARITY_CONTAINER": f"/home/me/{value}.sif", "SINGULARITY_NAME": value, "container": value,
           "NVIDIA_DRIVER_CAPABILITIES": value, "NVIDIA_VISIBLE_DEVICES": "all", "CUDA_VERSION": "12.8.1",
           "NV_CUDNN_VERSION": value, "NVIDIA_REQUIRE_CUDA": f"cuda>=12.8 brand={value}"}
    env = {k: v.encode("utf-8", "surrogateescape").decode("utf-8", "surrogateescape") for k, v in env.items()}
    summary = m.base / "summary.md"
    env["GITHUB_STEP_SUMMARY"] = str(summary)
    args = ["check", "-v"] if fmt == "text_v" else ["check", "--format", fmt]
    r = run_capped(m, args, timeout=45, env=env)
    hold16(r, False, (0, 1), secs=30, out_max=1 << 20, err_max=64 << 10)
    no_marks20(m.base)
    no_injected_workflow(r.out + "\n" + r.err)
    if fmt == "junit":
        expect(not XML_ILLEGAL.search(r.out), "a character XML 1.0 forbids in the JUnit XML")
        try:
            root = ET.fromstring(r.outb)
        except ET.ParseError as e:
            raise Fail(f"the JUnit XML does not parse: {e}") from None
        names = [tc.get("name") for tc in root.iter("testcase")]
        expect("x" not in names, f"a test case made by a hostile value: {names}")
        expect(not any(e.get("message") == "owned" for e in root.iter("error")), "an error element made by a value")
    elif fmt == "prometheus":
        parse_prometheus(r.out)
        expect(not re.search(r"^owned_metric", r.out, re.M), "a metric made by a hostile value")
    elif fmt == "markdown":
        md_tables_whole(r.out)
    elif fmt == "github":
        if summary.exists():
            s = summary.read_bytes().decode("utf-8", "surrogateescape")
            no_raw_controls13(strip_sgr(utf8_strict(summary.read_bytes(), "the job summary")), "the job summary")
            md_tables_whole(s)
    if fmt in ("markdown", "text_v"):
        text_ok(r)


family("platenvfmt", "value", {f"{k}-{f}": (k, f) for k in PLATENV_VALUES for f in PLATENV_FORMATS},
       platenvfmt_case, limit=80)


# ==================================================================================================================== selectfmt
SELECT_VALUES = {  # key: (options, environment)
    "require_empty_version": (["--require", "cudnn>="], {}),
    "require_semicolon_flag": (["--require", "cudnn>=9.1;cuda>=12.0"], {}),
    "require_arabic": (["--require", "cudnn>=\u0669.\u0661"], {}),
    "require_fullwidth": (["--require", "cudnn>=\uff19.\uff11"], {}),
    "require_newline_workflow": (["--require", "cudnn>=9.1\n::error::owned"], {}),
    "require_5000_digits": (["--require", "driver>=" + "9" * 5000], {}),
    "require_escape": (["--require", "cudnn>=9.1\x1b[2J\x1b]0;owned\x07"], {}),
    "require_compatible_op": (["--require", "cudnn~=9.1"], {}),
    "require_arbitrary_eq": (["--require", "cudnn===9.19.0"], {}),
    "require_gpu_version": (["--require", "gpu>=1"], {}),
    "require_upper_spaces": (["--require", " CUDNN >= 9.1 "], {}),
    "require_exponent": (["--require", "cudnn>=1e400"], {}),
    "require_wildcard_excl": (["--require", "torch>=2.4,<2.6,!=2.5.*"], {}),
    "require_env_12000": ([], {"CUDNN_DOCTOR_REQUIRE": "cudnn>=1;" * 12_000}),  # 108 KB: under MAX_ARG_STRLEN
    "select_newline_workflow": (["--select", "CD3\n::warning::owned"], {}),
    "select_arabic": (["--select", "CD\u0663\u0660\u0661"], {}),
    "select_zero_width": (["--select", "CD301\u200b"], {}),
    "ignore_star": (["--ignore", "CD*"], {}),
    "ignore_env_bidi": ([], {"CUDNN_DOCTOR_IGNORE": "CD3\u202e01"}),
    "select_env_escape": ([], {"CUDNN_DOCTOR_SELECT": "CD3\x1b[31m;CD1\x9b2J"}),
}
SELECT_FORMATS = ("github", "junit", "prometheus", "markdown")


# verdicts of --require specs the doctor may take or refuse (exit 2), read as PEP 440 reads them where taken: the
# machine has cuDNN 9.19.0 and driver 580.159.04 (release segments compared as numbers, zero-padded; ~= and .*)
REQUIRE_VERDICTS = {"cudnn>=9.2": True, "cudnn>=9.100": False, "cudnn==9.19": True, "cudnn==9.19.*": True,
                    "cudnn!=9.19.0": False, "driver>=580.159.4": True, "driver>580.159.04": False,
                    "cudnn<9.19.0rc1": False, "cudnn~=9.19": True, "cudnn~=9.20": False, "cudnn<=9.19.0.0": True,
                    "cudnn>9.19": False}


def require_verdict_case(ctx: Ctx, spec: str) -> None:
    m = healthy(ctx)
    base = run_capped(m, ["check", "--json"], timeout=45)
    bd = hold16(base, True, (0, 1), secs=30) or {}
    r = run_capped(m, ["check", "--json", "--require", spec], timeout=45)
    hold16(r, True, (0, 1, 2), secs=30, out_max=4 << 20, err_max=16 << 10)
    if r.rc == 2:
        return  # a spec it does not take, said as bad input
    met = REQUIRE_VERDICTS[spec]
    want = base.rc if met else 1
    expect(r.rc == want, f"--require {spec!r} on cuDNN 9.19.0 / driver 580.159.04 is "
                         f"{'met' if met else 'unmet'} (PEP 440), but exit {r.rc} (without it {base.rc}; "
                         f"{sorted(codes(bd))})")


def selectfmt_case(ctx: Ctx, arg: tuple[str, str]) -> None:
    key, fmt = arg
    opts, env = SELECT_VALUES[key]
    m = healthy(ctx)
    want_json = fmt == "json"
    r = run_capped(m, ["check", "--format", fmt, *opts], timeout=45, env=env)
    hold16(r, want_json, (0, 1, 2), secs=30, out_max=4 << 20, err_max=16 << 10)
    no_injected_workflow(r.out + "\n" + r.err)
    if fmt != "github":
        no_workflow(r.out + r.err)
    if r.rc == 2:
        if not want_json:
            one_error_line(r)
        return
    if fmt == "junit":
        expect(not XML_ILLEGAL.search(r.out), "a character XML 1.0 forbids in the JUnit XML")
        try:
            ET.fromstring(r.outb)
        except ET.ParseError as e:
            raise Fail(f"the JUnit XML does not parse: {e}") from None
    elif fmt == "prometheus":
        parse_prometheus(r.out)
    elif fmt == "markdown":
        md_tables_whole(r.out)


def _select_params() -> dict:
    out = {}
    for i, key in enumerate(SELECT_VALUES):
        out[f"{key}-json"] = (key, "json")
        out[f"{key}-{SELECT_FORMATS[i % 4]}"] = (key, SELECT_FORMATS[i % 4])
    return out


family("selectfmt", "opt", _select_params(), selectfmt_case, limit=80)
family("selectfmt", "verdict", {k: k for k in REQUIRE_VERDICTS}, require_verdict_case, limit=80)


# ==================================================================================================================== wslfix
WSL_VALUES = {
    "dollar_paren": "nv $(touch MARK)",
    "backtick": "nv `touch MARK`",
    "single_quote": "it's nv",
    "double_quote": 'say "nv"',
    "newline": "nv\ntouch MARK",
    "cmd_specials": "%PATH%^!&|<>nv",
    "non_utf8": "nv\udcff\udcfe",
    "and_or": "x&&touch MARK||",
    "glob_brace_tilde": "*?[a]{b,c}~nv",
    "fish_specials": "(touch MARK)$fish_pid\\",
}
WSL_SHELLS = ("bash", "zsh", "fish", "dpkg")


def _wsl_machine(ctx: Ctx, value: str) -> tuple[M, Path, Path]:
    b = fakes()
    m = ctx.machine()
    (m.root / "proc").mkdir(parents=True, exist_ok=True)
    (m.root / "proc" / "version").write_text(WSL_KERNEL20)
    wsl = m.root / "usr" / "lib" / "wsl" / "lib"
    b.fake_nvml(wsl, driver="572.61", cuda=12080, name="NVIDIA GeForce RTX 4070", compute_capability="8.9")
    built = b.fake_libcuda(m.base / "libcuda-build", driver_cuda=12080, devices=1, name="NVIDIA GeForce RTX 4070")
    for name in ("libcuda.so.1.1", "libcuda.so.1", "libcuda.so"):
        shutil.copyfile(built, wsl / name)
    (m.root / "dev").mkdir(exist_ok=True)
    (m.root / "dev" / "dxg").write_text("")
    m.env.update(WSL_DISTRO_NAME="Ubuntu-24.04", WSL_INTEROP="/run/WSL/1_interop")
    linux = m.root / "opt" / value
    b.fake_nvml(linux, driver="580.95.05", cuda=13000, init_error=9)
    m.env["LD_LIBRARY_PATH"] = f"{linux}:{wsl}"
    folder = m.base / "cudnn" / "lib"
    b.fake_cudnn(folder, version=91900, cudart=12080, sublibraries=CUDNN9)
    m.env["LD_LIBRARY_PATH"] += f":{folder}"
    return m, linux, wsl


def wslfix_case(ctx: Ctx, arg: tuple[str, str]) -> None:
    key, shell = arg
    value = WSL_VALUES[key]
    m, linux, wsl = _wsl_machine(ctx, value)
    if shell == "dpkg":
        r = run_capped(m, ["check", "--json"], timeout=45)
        d = hold16(r, True, (0, 1), secs=30, out_max=4 << 20, err_max=64 << 10) or {}
        no_marks20(m.base)
        shadow = [f for f in d.get("findings", []) if isinstance(f, dict) and f.get("code") == "CD152"]
        expect(shadow, f"a Linux driver shadowing WSL's from {value!r} is not named (CD152, README): "
                       f"{sorted(codes(d))}")
        t = run_capped(m, ["check"], timeout=45)
        hold16(t, False, (0, 1), secs=30, out_max=1 << 20, err_max=64 << 10)
        text_ok(t)
        no_marks20(m.base)
        for cmd in pasted_commands(t.out, "dpkg -S"):
            _fix_line_runs(m, cmd, "dpkg", ["-S", str(linux / "libnvidia-ml.so.1")])
        return
    r = run_capped(m, ["fix", "--shell", shell], timeout=45)
    hold16(r, False, (0, 1), secs=30, out_max=1 << 20, err_max=64 << 10)
    text_ok(r)
    no_marks20(m.base)
    lines = source_lines(r.out)
    if not lines or all(x.startswith("#") for x in lines):
        return  # said in words, nothing to paste
    run_dir = m.base / "paste"
    run_dir.mkdir(exist_ok=True)
    envs = run_in_shell(shell, lines, run_dir, {**m.env, "HOME": str(m.home)})
    no_marks20(run_dir, m.base)
    llp = envs.get(b"LD_LIBRARY_PATH", b"")
    parts = llp.split(b":")
    expect(os.fsencode(str(linux)) not in parts, f"{shell}: the Linux driver's folder is still in LD_LIBRARY_PATH "
                                                 f"after the printed lines: {llp[:300]!r}")
    expect(os.fsencode(str(wsl)) in parts, f"{shell}: WSL's folder is not in LD_LIBRARY_PATH after the printed "
                                           f"lines: {llp[:300]!r}")


family("wslfix", "shell", {f"{k}-{s}": (k, s) for k in WSL_VALUES for s in WSL_SHELLS}, wslfix_case, limit=90)


# ==================================================================================================================== ldcache
L4T_RELEASE20 = ("# R36 (release), REVISION: 4.3, GCID: 38968081, BOARD: generic, EABI: aarch64, DATE: Wed Jan  8 "
                 "01:49:37 UTC 2025\n# KERNEL_VARIANT: oot\nTARGET_USERSPACE_LIB_DIR=nvidia\n"
                 "TARGET_USERSPACE_LIB_DIR_PATH=usr/lib/aarch64-linux-gnu/nvidia\n")
LDC_MAGIC = b"glibc-ld.so.cache1.1"
LDC_KINDS = ("nlibs_huge", "nlibs_zero", "strings_len_huge", "key_offsets_past_end", "value_offsets_past_end",
             "value_offsets_zero", "strings_unterminated", "path_escape", "path_newline_workflow", "path_dotdot",
             "extension_offset_past_end", "flags_all_ff", "seeded_noise", "repeated_1000", "old_format_header",
             "magic_only", "fifo", "loop", "dev_zero", "sparse_8g")


def _jetson20(ctx: Ctx) -> tuple[M, Path]:
    b = fakes()
    m = ctx.machine()
    (m.root / "etc").mkdir(parents=True, exist_ok=True)
    (m.root / "etc" / "nv_tegra_release").write_text(L4T_RELEASE20)
    (m.root / "proc" / "device-tree").mkdir(parents=True, exist_ok=True)
    (m.root / "proc" / "device-tree" / "model").write_text("NVIDIA Jetson Orin Nano Developer Kit\0")
    l4t = m.root / "usr" / "lib" / "aarch64-linux-gnu" / "nvidia"
    b.fake_libcuda(l4t, driver_cuda=12060, devices=1, name="Orin", compute_capability="8.7")
    (m.root / "etc" / "ld.so.conf").write_text("include /etc/ld.so.conf.d/*.conf\n")
    (m.root / "etc" / "ld.so.conf.d").mkdir(exist_ok=True)
    (m.root / "etc" / "ld.so.conf.d" / "nvidia-tegra.conf").write_text("/usr/lib/aarch64-linux-gnu/nvidia\n")
    ldconfig = shutil.which("ldconfig", path="/usr/sbin:/sbin:/usr/bin:/bin")
    if ldconfig is None or os.geteuid() != 0:
        raise Skip("needs ldconfig and root")
    done = subprocess.run([ldconfig, "-r", str(m.root)], capture_output=True, text=True)
    cache = m.root / "etc" / "ld.so.cache"
    if done.returncode != 0 or not cache.is_file():
        raise Fail(f"harness: ldconfig -r failed: {done.stderr[-300:]}")
    return m, cache


def _ldc_mutate(data: bytes, kind: str, seed: str) -> bytes:
    import struct
    b = bytearray(data)
    start = data.find(LDC_MAGIC)
    expect(start >= 0, "harness: the loader cache has no new-format header")
    nlibs, slen = struct.unpack_from("<II", b, start + 20)
    entries = start + 48

    def each(fn: Callable[[int], None]) -> None:
        for i in range(nlibs):
            fn(entries + 24 * i)
    if kind == "nlibs_huge":
        struct.pack_into("<I", b, start + 20, 0x7FFFFFFF)
    elif kind == "nlibs_zero":
        struct.pack_into("<I", b, start + 20, 0)
    elif kind == "strings_len_huge":
        struct.pack_into("<I", b, start + 24, 0xFFFFFFF0)
    elif kind == "key_offsets_past_end":
        each(lambda o: struct.pack_into("<I", b, o + 4, 0xFFFFFFF0))
    elif kind == "value_offsets_past_end":
        each(lambda o: struct.pack_into("<I", b, o + 8, len(b) + 4096))
    elif kind == "value_offsets_zero":
        each(lambda o: struct.pack_into("<I", b, o + 8, 0))
    elif kind == "strings_unterminated":
        tail = entries + 24 * nlibs
        for i in range(tail, len(b)):
            if b[i] == 0:
                b[i] = 0x41
    elif kind in ("path_escape", "path_newline_workflow", "path_dotdot"):
        old = b"/usr/lib/aarch64-linux-gnu/nvidia/"
        new = {"path_escape": b"/usr/lib/aarch64-linux-gnu/\x1b[2J\x07x/",
               "path_newline_workflow": b"/usr/lib/aarch64-linux-gnu/\n::e::/",
               "path_dotdot": b"/../../../../../../../../../../etc/"}[kind]
        new = new[:len(old)].ljust(len(old), b"/")
        expect(old in b, "harness: the Jetson's folder is not in the loader cache")
        b = bytearray(bytes(b).replace(old, new))
    elif kind == "extension_offset_past_end":
        struct.pack_into("<I", b, start + 32, 0xFFFFFF00)
    elif kind == "flags_all_ff":
        each(lambda o: struct.pack_into("<i", b, o, -1))
    elif kind == "seeded_noise":
        noise = _seeded_bytes(seed, len(b) - entries)
        b[entries:] = noise
    elif kind == "repeated_1000":
        b = bytearray(bytes(b) * 1000)
    elif kind == "old_format_header":
        b = bytearray(b"ld.so-1.7.0" + struct.pack("<I", 0x7FFFFFFF) + bytes(b))
    elif kind == "magic_only":
        b = bytearray(LDC_MAGIC)
    else:
        raise ValueError(kind)
    return bytes(b)


def ldcache_case(ctx: Ctx, arg: tuple[str, object]) -> None:
    how, what = arg
    m, cache = _jetson20(ctx)
    data = cache.read_bytes()
    if how == "cut":
        n = int(what)  # type: ignore[arg-type]
        fixed = {0: 0, 1: 1, 2: len(data) - 1, 3: len(data) // 2}
        at = fixed[n] if n in fixed else random.Random(f"2020-ldcache-cut-{n}").randrange(1, len(data) - 1)
        cache.write_bytes(data[:at])
    elif what in ("fifo", "loop", "dev_zero"):
        hostile_file(cache, str(what))
    elif what == "sparse_8g":
        with open(cache, "r+b") as f:
            f.truncate(8 << 30)
    else:
        cache.write_bytes(_ldc_mutate(data, str(what), f"2020-ldcache-{what}"))
    r = run_capped(m, ["check", "--json"], timeout=45)
    hold16(r, True, (0, 1), secs=30, out_max=4 << 20, err_max=64 << 10)
    no_passwd(r)
    if what in ("path_escape", "path_newline_workflow", "seeded_noise", "strings_unterminated"):
        t = run_capped(m, ["check", "-v"], timeout=45)
        hold16(t, False, (0, 1), secs=30, out_max=1 << 20, err_max=64 << 10)
        text_ok(t)
        no_passwd(t)
    left = leftovers_of(m.base)
    reap(m.base)
    expect(not left, f"processes left: {left[:2]}")


family("ldcache", "cache", {**{f"cut-{n}": ("cut", n) for n in range(20)},
                            **{f"kind-{k}": ("kind", k) for k in LDC_KINDS}}, ldcache_case, limit=90)


# ==================================================================================================================== explainenc
ENC_MSG = "RuntimeError: cuDNN error: CUDNN_STATUS_NOT_INITIALIZED"
ENC_BEFORE = "Traceback-free log of a training run, epoch 3\n"
ENC_AFTER = "the job ended\n"


def _enc_log(kind: str) -> tuple[bytes, bool]:
    """The log's bytes, and whether the message stands whole, in ASCII bytes, on a line of its own."""
    text = ENC_BEFORE + ENC_MSG + "\n" + ENC_AFTER
    if kind == "utf16le_bom":
        return b"\xff\xfe" + text.encode("utf-16-le"), False
    if kind == "utf16be_bom":
        return b"\xfe\xff" + text.encode("utf-16-be"), False
    if kind == "utf16le_nobom":
        return text.encode("utf-16-le"), False
    if kind == "utf32le_bom":
        return text.encode("utf-32"), False
    if kind == "utf8_bom":
        return b"\xef\xbb\xbf" + text.encode(), True
    if kind == "latin1":
        return ("Fehler in der Schicht \u00fcber \u00e9t\u00e9\n" + text).encode("latin-1"), True
    if kind == "cp1252_quotes":
        return ("\u201cquoted\u201d \u2013 \u20ac\n" + text).encode("cp1252"), True
    if kind == "gb18030":
        return ("\u8bad\u7ec3\u5931\u8d25\uff1a\n" + text).encode("gb18030"), True
    if kind == "shift_jis":
        return ("\u5b66\u7fd2\u30a8\u30e9\u30fc\n" + text).encode("shift_jis"), True
    if kind == "euc_kr":
        return ("\ud559\uc2b5 \uc624\ub958\n" + text).encode("euc_kr"), True
    if kind == "ebcdic_cp500":
        return text.encode("cp500"), False
    if kind == "utf7":
        return ("+ACI-x+ACI- \u00e9\n" + text).encode("utf-7"), True
    if kind == "gzip":
        return gzip.compress(text.encode(), mtime=0), False
    if kind == "bzip2":
        import bz2
        return bz2.compress(text.encode()), False
    if kind == "overlong_utf8":
        return b"path \xc0\xaf\xe0\x80\xaf etc\xc1\xbf\n" + text.encode(), True
    if kind == "cesu8_surrogates":
        return b"emoji \xed\xa0\xbd\xed\xb8\x80 lone \xed\xb0\x80\n" + text.encode(), True
    if kind == "noncharacters":
        return "x\ufffe\uffff\U0001fffe\U0010ffff\n".encode("utf-8") + text.encode(), True
    if kind == "beyond_10ffff":
        return b"big \xf4\x90\x80\x80 \xf7\xbf\xbf\xbf \xf8\x88\x80\x80\x80\n" + text.encode(), True
    if kind == "bom_each_line":
        return b"".join(b"\xef\xbb\xbf" + x.encode() + b"\n" for x in text.splitlines()), False
    if kind == "utf8_then_utf16":
        return ENC_BEFORE.encode() + (ENC_MSG + "\n" + ENC_AFTER).encode("utf-16-le"), False
    raise ValueError(kind)


ENC_KINDS = ("utf16le_bom", "utf16be_bom", "utf16le_nobom", "utf32le_bom", "utf8_bom", "latin1", "cp1252_quotes",
             "gb18030", "shift_jis", "euc_kr", "ebcdic_cp500", "utf7", "gzip", "bzip2", "overlong_utf8",
             "cesu8_surrogates", "noncharacters", "beyond_10ffff", "bom_each_line", "utf8_then_utf16")


def explainenc_case(ctx: Ctx, arg: tuple[str, str]) -> None:
    kind, how = arg
    data, whole = _enc_log(kind)
    m = ctx.machine("e")
    if how == "stdin_json":
        r = run_capped(m, ["explain", "-", "--json"], timeout=45, stdin=data)
        d = hold16(r, True, (0, 1, 2), secs=30, out_max=1 << 20, err_max=16 << 10) or {}
        if whole:
            got = {x.get("code") for x in (d.get("matches") or []) if isinstance(x, dict)}
            expect("CD315" in got, f"the message, whole on a line of its own in the log, is not matched "
                                   f"(CD315 for it alone); got {sorted(map(str, got))[:6]}, exit {r.rc}")
    else:
        log = m.base / "train.log"
        log.write_bytes(data)
        r = run_capped(m, ["explain", "--from-file", str(log)], timeout=45)
        hold16(r, False, (0, 1, 2), secs=30, out_max=1 << 20, err_max=16 << 10)
        text_ok(r)
        if whole:
            expect("CD315" in r.out, f"the message, whole on a line of its own in the log, is not matched "
                                     f"(CD315 for it alone); exit {r.rc}: {r.out[:300]!r}")


family("explainenc", "log", {f"{k}-{h}": (k, h) for k in ENC_KINDS for h in ("stdin_json", "file_text")},
       explainenc_case, limit=80)


# ==================================================================================================================== sigoutput
SIGO = {"INT": signal.SIGINT, "TERM": signal.SIGTERM, "HUP": signal.SIGHUP}
SIGO_FORMATS = ("json", "junit", "prometheus", "markdown")


def _doc_whole(fmt: str, data: bytes, old: bytes) -> None:
    if data == old:
        return
    text = utf8_strict(data, f"the {fmt} file")
    if fmt == "json":
        strict_json(text)
    elif fmt == "junit":
        try:
            ET.fromstring(data)
        except ET.ParseError as e:
            raise Fail(f"the JUnit file is cut or broken: {e}") from None
    elif fmt == "prometheus":
        expect(text.endswith("\n"), "the Prometheus file does not end with a newline (cut)")
        parse_prometheus(text)
    else:
        expect(data.endswith(b"\n") and (not old or (data.split(b"\n", 1)[0] == old.split(b"\n", 1)[0]
                                                      and len(data) >= len(old) // 2)),
               f"the markdown file is neither the old one nor a whole new one ({len(data)} bytes, old {len(old)})")


def sigoutput_case(ctx: Ctx, arg: tuple) -> None:
    fmt, sig, n = arg
    signum = SIGO[sig]
    rng = random.Random(f"2020-sigoutput-{fmt}-{sig}-{n}")
    frac = rng.uniform(0.05, 0.95)
    m = healthy(ctx)
    outdir = m.base / "reports"
    outdir.mkdir()
    target = outdir / f"node.{fmt}"
    argv = m.argv("check", "--format", fmt, "-o", str(target))
    env = dict(m.env)
    b = run_proc(argv, env, m.cwd, 50, preexec=_default_signals6)
    hold16(b, False, (0, 1), secs=40)
    expect(target.is_file(), f"harness: -o wrote no file: {b!r}")
    old = target.read_bytes()
    _doc_whole(fmt, old, b"")  # the unsignalled file is whole
    at = frac * b.secs
    start = time.monotonic()
    proc = subprocess.Popen(argv, env=env, cwd=str(m.cwd), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, start_new_session=True, preexec_fn=_default_signals6)
    outs: list[bytes] = []
    errs: list[bytes] = []
    t_out = threading.Thread(target=lambda: outs.append(proc.stdout.read()))
    t_err = threading.Thread(target=lambda: errs.append(proc.stderr.read()))
    t_out.start(); t_err.start()
    time.sleep(max(0.0, at - (time.monotonic() - start)))
    sent = proc.poll() is None
    if sent:
        try:
            os.kill(proc.pid, signum)
        except OSError:
            sent = False
    sent_at = time.monotonic()
    try:
        rc = proc.wait(timeout=25)
    except subprocess.TimeoutExpired:
        kill_group(proc.pid)
        raise Fail(f"still running 25 s after SIG{sig}") from None
    took = time.monotonic() - sent_at
    time.sleep(0.3)
    left = _group_left(proc.pid) + leftovers_of(m.base)
    kill_group(proc.pid)
    reap(ctx.work)
    t_out.join(10); t_err.join(10)
    r = R(rc, b"".join(outs), b"".join(errs), time.monotonic() - start)
    try:
        with open(BUILD / "signals-sent.log", "a") as f:
            f.write(f"r20 {fmt}-{sig}-{n} base={b.secs:.2f} at={at:.2f} sent={sent} rc={rc}\n")
    except OSError:
        pass
    expect(not left, f"processes left after SIG{sig}: {left[:2]}")
    if rc in (128 + signum, -signum):
        expect(sent, "ended by a signal it was not sent")
        expect(took < 12, f"took {took:.1f} s to stop after SIG{sig}")
        no_raw_controls13(strip_sgr(r.err), "stderr")
    else:
        hold16(r, False, (0, 1, 2), secs=60)
        if sent and took > 0.5:
            raise Fail(f"SIG{sig} at {at:.2f} s while running was not acted on; exit {rc}")
    names = sorted(os.listdir(outdir))
    expect(names == [target.name], f"left beside the report: {names}")
    expect(target.is_file() and not target.is_symlink(), "the report is no longer a file")
    _doc_whole(fmt, target.read_bytes(), old)
    again = run_proc(argv, env, m.cwd, 50)
    hold16(again, False, (0, 1), secs=40)
    _doc_whole(fmt, target.read_bytes(), b"")
    expect(sorted(os.listdir(outdir)) == [target.name], f"left beside the report: {sorted(os.listdir(outdir))}")


family("sigoutput", "sig", {f"{f}-{s}-{n}": (f, s, n) for f in SIGO_FORMATS for s in SIGO for n in (0, 1, 2)},
       sigoutput_case, limit=110)


# ==================================================================================================================== xzarc
# install --from a cuDNN archive (NVIDIA's .tar.xz name) whose compressed stream has an odd but valid shape (the
# .xz file format 1.1.0 of tukaani.org: check types, many blocks, several streams, stream padding, BCJ and delta
# filters; README: "an archive's compression named by its first bytes (gzip, bzip2, xz, else plain tar)") -- which
# must install exactly as the plain archive does -- or a broken one, which must be refused with the prefix unchanged.
XZ_VALID = ("check_none", "check_crc32", "check_sha256", "blocks_4k", "threaded_sizes", "two_streams",
            "empty_stream_first", "padding_after", "padding_between", "bcj_x86", "delta_4", "preset_0", "extreme_9e",
            "bzip2_named_xz", "gzip_named_xz", "plain_tar_named_xz", "bzip2_two_streams", "gzip_two_members",
            "lzma2_uncompressed_chunks", "gzip_stored", "wheel_stored", "tgz_stored")
# broken: the stream cannot be decoded, or what it decodes to is not the archive's bytes (a library's byte changed
# inside a stored block / an uncompressed LZMA2 chunk: only the stream's own CRC tells) -- never to be installed
XZ_BROKEN = ("byte_flipped", "cut_half", "reserved_stream_flag", "block_header_size_lies", "second_stream_corrupt",
             "lzma_alone", "xz_of_xz", "bzip2_cut", "gzip_stored_flip", "gzip_stored_flip_header", "xz_stored_flip",
             "xz_stored_flip_last_chunk", "wheel_stored_flip", "tgz_stored_flip")
# either: the archive's bytes decode whole but the container around them is off (its tail cut, padding or bytes after
# it, an index CRC, a CRC that lies about intact data), or it asks for much memory: installed exactly, or refused
XZ_EITHER = ("dict_1536m", "unsupported_check", "padding_sparse_1g", "footer_magic_only", "index_crc_wrong",
             "cut_last_byte", "trailing_garbage", "padding_3", "xz_then_gzip", "gzip_crc_wrong",
             "wheel_crc_field_wrong")


def _base_tar(ctx: Ctx) -> tuple[bytes, str]:
    import lzma
    a = archive(ctx)
    return lzma.decompress(a.read_bytes()), a.name


def _xz(data: bytes, *flags: str) -> bytes:
    p = subprocess.run(["/usr/bin/xz", "-c", *flags], input=data, capture_output=True, check=True)
    return p.stdout


def _crc(b: bytes) -> bytes:
    return zlib.crc32(b).to_bytes(4, "little")


def _varint(n: int) -> bytes:
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _xz_stored(data: bytes) -> bytes:
    """DATA as one .xz stream (CRC32 check) whose one LZMA2 block is made only of uncompressed chunks (control 1,
    then 2; 64 KiB each; the .xz file format 1.1.0 and LZMA2's chunk headers), so that DATA stands in it verbatim."""
    flags = b"\x00\x01"
    head = b"\xfd7zXZ\x00" + flags + _crc(flags)
    chunks = bytearray()
    for i in range(0, len(data), 65536):
        piece = data[i:i + 65536]
        chunks += bytes([1 if i == 0 else 2]) + (len(piece) - 1).to_bytes(2, "big") + piece
    chunks += b"\x00"
    body = b"\x00\x21\x01\x16"  # block flags (one filter, no sizes), LZMA2, one property byte, 8 MiB dictionary
    total = 1 + len(body)
    pad = (-(total + 4)) % 4
    size_byte = (total + pad + 4) // 4 - 1
    bh = bytes([size_byte]) + body + b"\0" * pad
    bh += _crc(bh)
    check = _crc(data)
    block = bh + chunks + b"\0" * ((-len(chunks)) % 4) + check
    unpadded = len(bh) + len(chunks) + len(check)
    index = b"\x00" + _varint(1) + _varint(unpadded) + _varint(len(data))
    index += b"\0" * ((-len(index)) % 4)
    index += _crc(index)
    backward = (len(index) // 4 - 1).to_bytes(4, "little")
    foot = _crc(backward + flags) + backward + flags + b"YZ"
    return head + block + index + foot


def _flip_in(stream: bytes, tar: bytes, which: str) -> bytes:
    """STREAM (holding TAR's bytes verbatim) with one byte of a library's (or the header's) data flipped."""
    with tarfile.open(fileobj=io.BytesIO(tar)) as t:
        members = [x for x in t.getmembers() if x.isfile() and x.size > 64]
    if which == "header":
        pick = [x for x in members if x.name.endswith("cudnn_version.h")][0]
    elif which == "last":
        pick = [x for x in members if "libcudnn" in x.name][-1]
    else:
        pick = [x for x in members if "libcudnn" in x.name][0]
    def every(hay: bytes, needle: bytes) -> list[int]:
        out, i = [], hay.find(needle)
        while i >= 0:
            out.append(i)
            i = hay.find(needle, i + 1)
        return out
    pos = -1
    for o in range(pick.offset_data + pick.size // 2, pick.offset_data + pick.size - 12):
        window = tar[o - 12:o + 12]
        if len(set(window)) <= 4:
            continue
        in_tar, in_stream = every(tar, window), every(stream, window)
        if len(in_tar) == len(in_stream):  # verbatim and in order: the same occurrence in both
            pos = in_stream[in_tar.index(o - 12)]
            break
    expect(pos >= 0, "harness: no byte of the member stands verbatim in the stream")
    b = bytearray(stream)
    b[pos + 12] ^= 0x20
    return bytes(b)


def _xz_kind(kind: str, tar: bytes) -> bytes:
    import bz2
    import lzma
    half = random.Random(f"2020-xzarc-{kind}").randrange(1024, len(tar) - 1024)
    std = lzma.compress(tar, format=lzma.FORMAT_XZ)
    if kind == "check_none":
        return lzma.compress(tar, format=lzma.FORMAT_XZ, check=lzma.CHECK_NONE)
    if kind == "check_crc32":
        return lzma.compress(tar, format=lzma.FORMAT_XZ, check=lzma.CHECK_CRC32)
    if kind == "check_sha256":
        return lzma.compress(tar, format=lzma.FORMAT_XZ, check=lzma.CHECK_SHA256)
    if kind == "blocks_4k":
        return _xz(tar, "--block-size=4096")
    if kind == "threaded_sizes":
        return _xz(tar, "-T2", "--block-size=65536")
    if kind == "two_streams":
        return lzma.compress(tar[:half]) + lzma.compress(tar[half:])
    if kind == "empty_stream_first":
        return lzma.compress(b"") + std
    if kind == "padding_after":
        return std + b"\0" * 64
    if kind == "padding_between":
        return lzma.compress(tar[:half]) + b"\0" * 16 + lzma.compress(tar[half:])
    if kind == "bcj_x86":
        return lzma.compress(tar, format=lzma.FORMAT_XZ, filters=[{"id": lzma.FILTER_X86},
                                                                   {"id": lzma.FILTER_LZMA2, "preset": 6}])
    if kind == "delta_4":
        return lzma.compress(tar, format=lzma.FORMAT_XZ, filters=[{"id": lzma.FILTER_DELTA, "dist": 4},
                                                                   {"id": lzma.FILTER_LZMA2, "preset": 6}])
    if kind == "preset_0":
        return _xz(tar, "-0")
    if kind == "extreme_9e":
        return _xz(tar, "-9e")
    if kind == "bzip2_named_xz":
        return bz2.compress(tar)
    if kind == "gzip_named_xz":
        return gzip.compress(tar, mtime=0)
    if kind == "plain_tar_named_xz":
        return tar
    if kind == "bzip2_two_streams":
        return bz2.compress(tar[:half]) + bz2.compress(tar[half:])
    if kind == "gzip_two_members":
        return gzip.compress(tar[:half], mtime=0) + gzip.compress(tar[half:], mtime=0)
    if kind == "lzma2_uncompressed_chunks":
        return _xz_stored(tar)
    if kind == "gzip_stored":
        return gzip.compress(tar, compresslevel=0, mtime=0)
    if kind == "gzip_stored_flip":
        return _flip_in(gzip.compress(tar, compresslevel=0, mtime=0), tar, "first")
    if kind == "gzip_stored_flip_header":
        return _flip_in(gzip.compress(tar, compresslevel=0, mtime=0), tar, "header")
    if kind == "xz_stored_flip":
        return _flip_in(_xz_stored(tar), tar, "first")
    if kind == "xz_stored_flip_last_chunk":
        return _flip_in(_xz_stored(tar), tar, "last")
    b = bytearray(std)
    if kind == "byte_flipped":
        b[len(b) // 2] ^= 0x01
    elif kind == "index_crc_wrong":
        b[len(b) - 13] ^= 0xFF
    elif kind == "cut_half":
        b = b[:len(b) // 2]
    elif kind == "cut_last_byte":
        b = b[:-1]
    elif kind == "trailing_garbage":
        b += b"NVIDIA garbage after the stream\n"
    elif kind == "padding_3":
        b += b"\0" * 3
    elif kind == "reserved_stream_flag":
        b[6] |= 0x01
        b[8:12] = _crc(bytes(b[6:8]))
    elif kind == "block_header_size_lies":
        b[12] = min(255, b[12] + 3)
    elif kind == "second_stream_corrupt":
        second = bytearray(lzma.compress(tar[half:]))
        second[len(second) // 2] ^= 0x40
        b = bytearray(lzma.compress(tar[:half])) + second
    elif kind == "lzma_alone":
        return lzma.compress(tar, format=lzma.FORMAT_ALONE)
    elif kind == "xz_of_xz":
        return lzma.compress(std)
    elif kind == "gzip_crc_wrong":
        g = bytearray(gzip.compress(tar, mtime=0))
        g[-8] ^= 0xFF
        return bytes(g)
    elif kind == "bzip2_cut":
        return bz2.compress(tar)[:-40]
    elif kind == "xz_then_gzip":
        return std + gzip.compress(b"more", mtime=0)
    elif kind == "dict_1536m":  # the LZMA2 properties byte of the one block says a 1.5 GiB dictionary (37)
        hsize = (b[12] + 1) * 4
        expect(b[14] == 0x21 and b[15] == 0x01, "harness: the block's first filter is not LZMA2 with one byte")
        b[16] = 37
        b[12 + hsize - 4:12 + hsize] = _crc(bytes(b[12:12 + hsize - 4]))
    elif kind == "unsupported_check":
        b[7] = 0x0F
        b[8:12] = _crc(bytes(b[6:8]))
        b[-4] = 0x0F
        b[-12:-8] = _crc(bytes(b[-8:-2]))
    elif kind == "footer_magic_only":
        b = b + b"\0" * 8 + b"YZ"
    elif kind != "padding_sparse_1g":
        raise ValueError(kind)
    return bytes(b)


def _old_prefix(at: Path) -> Path:
    (at / "lib64").mkdir(parents=True)
    (at / "lib64" / "libcudnn.so.9.1.0").write_bytes(b"an old copy of the user's")
    os.symlink("libcudnn.so.9.1.0", at / "lib64" / "libcudnn.so.9")
    (at / "include").mkdir()
    (at / "include" / "mine.h").write_text("/* the user's own header */\n")
    return at


def _files(snap: dict) -> dict:
    return {k: v for k, v in user_view(snap).items() if not k.startswith(".cudnn-doctor")}


def _other_archive(ctx: Ctx, kind: str) -> Path:
    """A wheel (nvidia_cudnn_cu12) or a cuDNN <= 8.2-layout .tgz of the tests' helpers, cached like archive()."""
    shared = BUILD / "archives" / f"{kind}-91900"
    done = shared / "done"
    if not done.exists():
        shared.mkdir(parents=True, exist_ok=True)
        tmp = Path(str(shared) + f".{os.getpid()}")
        tmp.mkdir(parents=True, exist_ok=True)
        a = inst().make_archive(kind, tmp, version=91900)
        os.replace(a, shared / a.name)
        done.write_text(a.name)
        shutil.rmtree(tmp, ignore_errors=True)
    return shared / done.read_text()


def _stored_wheel(wheel: bytes) -> tuple[bytes, bytes]:
    """The wheel's members again, stored (no compression): (the bytes of the stored wheel, the concatenated data)."""
    out = io.BytesIO()
    whole = b""
    with zipfile.ZipFile(io.BytesIO(wheel)) as src, zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as dst:
        for info in src.infolist():
            data = src.read(info)
            new = zipfile.ZipInfo(info.filename, date_time=info.date_time)
            new.external_attr = info.external_attr
            new.create_system = info.create_system
            dst.writestr(new, data, zipfile.ZIP_STORED)
            whole += data
    return out.getvalue(), whole


def _flip_member(stream: bytes, member: bytes) -> bytes:
    """STREAM (holding MEMBER verbatim once) with a byte of MEMBER's second half flipped where it stands once."""
    for o in range(len(member) // 2, len(member) - 12):
        window = member[o - 12:o + 12]
        if len(set(window)) > 4 and stream.count(window) == 1:
            b = bytearray(stream)
            b[stream.find(window) + 12] ^= 0x20
            return bytes(b)
    raise Fail("harness: no byte of the member stands once in the archive")


def _zip_family(ctx: Ctx, kind: str, arc_dir: Path) -> tuple[Path, Path]:
    """(the hostile archive, the plain archive it is judged against) for the wheel and .tgz kinds."""
    if kind.startswith("wheel"):
        plain = _other_archive(ctx, "wheel")
        data = plain.read_bytes()
        if kind == "wheel_crc_field_wrong":  # the first library member's CRC-32 wrong in both headers; data intact
            with zipfile.ZipFile(io.BytesIO(data)) as z:
                info = [i for i in z.infolist() if "libcudnn" in i.filename][0]
            crc = info.CRC.to_bytes(4, "little")
            bad = (info.CRC ^ 0xFFFFFFFF).to_bytes(4, "little")
            expect(data.count(crc) >= 1, "harness: the CRC is not in the wheel")
            out = data.replace(crc, bad)
        else:
            stored, _ = _stored_wheel(data)
            out = stored
            if kind == "wheel_stored_flip":
                with zipfile.ZipFile(io.BytesIO(stored)) as z:
                    info = [i for i in z.infolist() if "libcudnn" in i.filename][0]
                h = info.header_offset
                n, e = int.from_bytes(stored[h + 26:h + 28], "little"), int.from_bytes(stored[h + 28:h + 30], "little")
                at = h + 30 + n + e + info.file_size // 2
                flipped = bytearray(stored)
                flipped[at] ^= 0x20
                out = bytes(flipped)
    else:
        import tarfile as _t
        plain = _other_archive(ctx, "tgz")
        tar = gzip.decompress(plain.read_bytes())
        out = gzip.compress(tar, compresslevel=0, mtime=0)
        if kind == "tgz_stored_flip":
            out = _flip_in(out, tar, "first")
    arc = arc_dir / plain.name
    arc.write_bytes(out)
    return arc, plain


def xzarc_case(ctx: Ctx, arg: tuple[str, str]) -> None:
    group, kind = arg
    tar, name = _base_tar(ctx)
    env = install_env(ctx)
    src = ctx.work / "src"
    src.mkdir()
    arc = src / name
    plain = archive(ctx)
    if kind.startswith(("wheel", "tgz")):
        arc, plain = _zip_family(ctx, kind, src)
    elif kind == "padding_sparse_1g":
        import lzma
        with open(arc, "wb") as f:
            f.write(lzma.compress(tar, format=lzma.FORMAT_XZ))
            f.truncate(f.tell() + (1 << 30))
    else:
        arc.write_bytes(_xz_kind(kind, tar))
    pfx = _old_prefix(ctx.work / "cuda")
    before = _files(inst().snapshot_content(pfx))
    r = run_proc(cli_argv("install", "--from", str(arc), "--prefix", str(pfx), "--yes", "--json"), env, ctx.tree, 60,
                 preexec=cap_as(2048))
    d = hold16(r, True, (0, 1, 2), secs=40, out_max=1 << 20, err_max=16 << 10) or {}
    _user_files_kept(pfx)
    now = _files(inst().snapshot_content(pfx))
    if r.rc != 0:
        expect(now == before, f"install exit {r.rc} ({kind}) changed the prefix's files")
        expect(group != "valid", f"a valid stream ({kind}) that README says is read was refused: "
                                 f"{json.dumps(d.get('error') or d)[:400]}")
        return
    expect(group != "broken", f"a broken stream ({kind}) was installed (exit 0)")
    ref_src = ctx.work / "ref"
    ref_src.mkdir()
    shutil.copyfile(plain, ref_src / plain.name)
    ref = _old_prefix(ctx.work / "ref-cuda")
    rr = run_proc(cli_argv("install", "--from", str(ref_src / plain.name), "--prefix", str(ref), "--yes", "--json"),
                  env, ctx.tree, 60)
    expect(rr.rc == 0, f"harness: the plain archive did not install: {rr!r}")
    expect(now == _files(inst().snapshot_content(ref)), f"install exit 0 ({kind}), but the prefix's files are not "
                                                        "those the plain archive installs")
    u = run_proc(cli_argv("uninstall", "--prefix", str(pfx), "--yes", "--json"), env, ctx.tree, 50)
    hold16(u, True, (0,), secs=35, out_max=1 << 20, err_max=16 << 10)
    expect(_files(inst().snapshot_content(pfx)) == before, f"uninstall after the install ({kind}) did not restore the "
                                                           "prefix")


family("xzarc", "stream", {**{f"valid-{k}": ("valid", k) for k in XZ_VALID},
                           **{f"broken-{k}": ("broken", k) for k in XZ_BROKEN},
                           **{f"either-{k}": ("either", k) for k in XZ_EITHER}}, xzarc_case, limit=100)
CLASSES["xzarc"] = ("install --from an archive whose compressed stream is odd but valid (xz check types, 4 KiB blocks, "
                    "several streams, padding, BCJ/delta filters, stored chunks; bzip2/gzip/plain under the .tar.xz "
                    "name; a stored wheel or .tgz) or broken (a library's byte flipped where only the stream's CRC "
                    "tells, cuts, reserved flags, LZMA-alone, xz of xz), or only its container off")

# ####################################################################################################################
# ROUND TWENTY-ONE: round twenty's classes are dropped (their helpers stay above); the classes below are new
# ####################################################################################################################
CASES.clear()
CLASSES.clear()
MARK21 = "MARK"


def no_marks21(*roots: Path) -> None:
    for root in roots:
        made = [str(p) for p in root.rglob("*") if p.name == MARK21]
        expect(not made, f"a command was run (a file it makes exists): {made[:2]}")


def report_codes(r: R) -> dict:
    """The findings of a strict JSON report: code -> severities."""
    d = strict_json(r.out)
    out: dict = {}
    for f in d.get("findings", []) if isinstance(d.get("findings"), list) else []:
        if isinstance(f, dict):
            out.setdefault(f.get("code"), set()).add(f.get("severity"))
    return out


def json_refusal(r: R) -> None:
    """exit 2 with --json: one JSON error object (schema cudnn-doctor/error/1) with a code."""
    d = strict_json(r.out)
    expect(str(d.get("schema", "")).startswith("cudnn-doctor/error/"), f"exit 2 without an error object: {r!r}")
    expect(isinstance(d.get("error"), dict) and d["error"].get("code"), f"an error object without a code: {r!r}")


def health_machine(ctx: Ctx, gpus: int = 1, health: dict | None = None, name: str = "m", nvml_extra: dict | None = None,
                   cudnn: bool = True) -> M:
    """healthy()'s machine (fake NVML, libcuda, cuDNN 9.19), its NVML built with the test fakes' FAKE_* readings."""
    b = fakes()
    m = ctx.machine(name)
    (m.root / "proc" / "driver" / "nvidia").mkdir(parents=True, exist_ok=True)
    (m.root / "proc" / "driver" / "nvidia" / "version").write_text(
        f"NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  {KERNEL}  Release Build\n")
    (m.root / "dev").mkdir(exist_ok=True)
    (m.root / "dev" / "nvidia-uvm").write_text("")
    driver = m.base / "driver"
    b.fake_nvml(driver, driver=KERNEL, gpus=gpus, health={**(health or {}), **(nvml_extra or {})})
    b.fake_libcuda(driver, driver_cuda=13000, devices=gpus, file_name=f"libcuda.so.{KERNEL}")
    m.add_lib(driver)
    if cudnn:
        folder = m.base / "cudnn" / "lib"
        b.fake_cudnn(folder, version=91900, cudart=13000, sublibraries=CUDNN9)
        m.add_lib(folder)
    return m


# ==================================================================================================================== healthreq
# README "GPU health": `--require gpu-healthy` fails on any health error or warning; `no-ecc-errors` on uncorrectable
# ECC errors or a memory repair waiting for a reset; `pcie>=GxW` on a GPU whose link can reach less than generation G
# or runs on fewer than W lanes now. Odd grammar of these three (refused in one line, or taken and judged), and
# verdicts on GPUs whose NVML readings (the test fakes' FAKE_* values) say each thing.
HREQ_GRAMMAR = {
    "pcie_space_inside": "pcie >= 5x16", "pcie_upper": "PCIE>=5x16", "pcie_times_sign": "pcie>=5\u00d716",
    "pcie_fullwidth": "pcie>=\uff15x\uff11\uff16", "pcie_gen_only": "pcie>=5", "pcie_width_only": "pcie>=x8",
    "pcie_zero": "pcie>=0x0", "pcie_neg": "pcie>=-1x16", "pcie_lt": "pcie<5x16", "pcie_ne": "pcie!=5x16",
    "pcie_tilde": "pcie~=5x16", "pcie_gen_v": "pcie>=gen5x16", "pcie_lanes_word": "pcie>=5x16lanes",
    "pcie_newline_wf": "pcie>=5x16\n::error title=pwn::owned", "pcie_cr_wf": "pcie>=5x16\r::warning::owned",
    "pcie_5000_digits": "pcie>=" + "9" * 5000 + "x16", "pcie_escape": "pcie>=5x16\x1b]0;owned\x07",
    "pcie_bidi": "pcie>=5x\u202e61", "pcie_comma_list": "pcie>=4x8,<6x16", "pcie_semicolon": "pcie>=4x8;gpu-healthy",
    "healthy_suffix": "gpu-healthy>=1", "healthy_underscore": "gpu_healthy", "healthy_zwsp": "gpu-\u200bhealthy",
    "healthy_trailing_space": "gpu-healthy ", "ecc_equals": "no-ecc-errors=true", "ecc_not": "!no-ecc-errors",
    "ecc_upper_wf": "NO-ECC-ERRORS\n::warning::owned", "empty": "", "only_space": "   ",
}
# key: (requirement, NVML readings of GPU FAKE_SICK_GPU, number of GPUs, whether PEP-less README says it is met, or
# None where the verdict is judged against the same run's health findings (gpu-healthy: unmet exactly when a
# CD130-CD140 error or warning is found))
HREQ_VERDICTS = {
    "pcie_met_exact": ("pcie>=5x16", {}, 1, True),
    "pcie_gen_max_low": ("pcie>=5x16", {"PCIE_GEN_MAX": 4, "PCIE_GEN": 4}, 1, False),
    "pcie_idle_gen_low_max_ok": ("pcie>=5x16", {"PCIE_GEN": 1}, 1, True),
    "pcie_width_now_low": ("pcie>=5x16", {"PCIE_WIDTH": 8}, 1, False),
    "pcie_width_max_low": ("pcie>=4x16", {"PCIE_WIDTH": 8, "PCIE_WIDTH_MAX": 8}, 1, False),
    "pcie_lower_asked": ("pcie>=3x8", {"PCIE_GEN": 1, "PCIE_GEN_MAX": 4, "PCIE_WIDTH": 8, "PCIE_WIDTH_MAX": 16}, 1, True),
    "pcie_gen6_asked": ("pcie>=6x16", {}, 1, False),
    "pcie_second_gpu_narrow": ("pcie>=5x16", {"SICK_GPU": 1, "PCIE_WIDTH": 4}, 2, False),
    "pcie_second_gpu_gen3": ("pcie>=4x1", {"SICK_GPU": 1, "PCIE_GEN_MAX": 3, "PCIE_GEN": 3}, 2, False),
    "pcie_x1_met": ("pcie>=1x1", {"PCIE_GEN": 1, "PCIE_WIDTH": 1}, 1, True),
    "pcie_width_32_asked": ("pcie>=5x32", {}, 1, False),
    "ecc_volatile": ("no-ecc-errors", {"ECC_VOLATILE": 3}, 1, False),
    "ecc_retired_pending": ("no-ecc-errors", {"RETIRED_PENDING": 1}, 1, False),
    "ecc_remap_pending": ("no-ecc-errors", {"REMAP_PENDING": 2}, 1, False),
    "ecc_second_gpu": ("no-ecc-errors", {"SICK_GPU": 1, "ECC_VOLATILE": 1}, 2, False),
    "ecc_clean_throttled": ("no-ecc-errors", {"THROTTLE": 0x40}, 1, True),
    "ecc_clean_persistence_off": ("no-ecc-errors", {"PERSISTENCE": 0}, 1, True),
    "ecc_clean_hot": ("no-ecc-errors", {"TEMP": 86}, 1, True),
    "healthy_ecc": ("gpu-healthy", {"ECC_VOLATILE": 1}, 1, None),
    "healthy_thermal": ("gpu-healthy", {"THROTTLE": 0x40}, 1, None),
    "healthy_hw_slowdown": ("gpu-healthy", {"THROTTLE": 0x8}, 1, None),
    "healthy_remap_failed": ("gpu-healthy", {"REMAP_FAILED": 1}, 1, None),
    "healthy_mig_pending": ("gpu-healthy", {"MIG_PENDING": 1}, 1, None),
    "healthy_prohibited": ("gpu-healthy", {"COMPUTE_MODE": 2}, 1, None),
    "healthy_hot": ("gpu-healthy", {"TEMP": 86}, 1, None),
    "healthy_second_gpu_narrow": ("gpu-healthy", {"SICK_GPU": 1, "PCIE_WIDTH": 4}, 2, None),
    "healthy_clean": ("gpu-healthy", {}, 1, None),
    "healthy_unsupported_all": ("gpu-healthy", {"NOT_SUPPORTED": 2047}, 1, None),
}
HREQ_MET_IF_TAKEN = {"pcie_space_inside", "pcie_upper", "pcie_times_sign", "pcie_fullwidth", "pcie_gen_only",
                     "pcie_width_only", "pcie_zero", "pcie_gen_v", "pcie_lanes_word", "healthy_suffix",
                     "healthy_underscore", "healthy_zwsp", "healthy_trailing_space", "ecc_equals"}
HEALTH_CODES = {f"CD{n}" for n in range(130, 141)}


def healthreq_grammar_case(ctx: Ctx, key: str) -> None:
    value = HREQ_GRAMMAR[key]
    m = healthy(ctx)
    base = run_capped(m, ["check", "--json"], timeout=45)
    base_rc = base.rc
    for args, want_json in ((["check", "--json", "--require", value], True),
                            (["check", "--format", "github", "--require", value], False)):
        r = run_capped(m, args, timeout=45)
        hold16(r, want_json, (0, 1, 2), secs=30, out_max=4 << 20, err_max=16 << 10)
        no_injected_workflow(r.out + r.err)
        if r.rc == 2:
            if want_json:
                json_refusal(r)
            else:
                one_error_line(r)
        elif key in HREQ_MET_IF_TAKEN:
            # taken: this machine's one GPU reads healthy (PCIe 5 x16 now and at most, no ECC errors, nothing
            # pending), so each of these asks no more than it has: met, the exit of the same check without it
            expect(r.rc == base_rc, f"--require {value!r} taken and judged unmet (exit {r.rc}, {base_rc} without it) "
                                    f"on a GPU that meets it: {r!r}")


def healthreq_verdict_case(ctx: Ctx, key: str) -> None:
    spec, health, gpus, met = HREQ_VERDICTS[key]
    m = health_machine(ctx, gpus=gpus, health=health)
    base = run_capped(m, ["check", "--json"], timeout=45)
    hold16(base, True, (0, 1), secs=30, out_max=4 << 20, err_max=64 << 10)
    found = report_codes(base)
    r = run_capped(m, ["check", "--json", "--require", spec], timeout=45)
    hold16(r, True, (0, 1), secs=30, out_max=4 << 20, err_max=64 << 10)
    if met is None:
        met = not any(c in HEALTH_CODES and ({"error", "warning"} & sev) for c, sev in found.items())
    want = base.rc if met else 1
    expect(r.rc == want, f"--require {spec} on GPUs reading {health}: exit {r.rc}, where README makes it "
                         f"{'met' if met else 'unmet'} (exit {want}; health findings without it: "
                         f"{sorted(c for c in found if c in HEALTH_CODES)})")
    t = run_capped(m, ["check", "--require", spec], timeout=45)
    hold16(t, False, (0, 1), secs=30, out_max=1 << 20, err_max=64 << 10)
    text_ok(t)
    expect(t.rc == r.rc, f"text and JSON disagree: text exit {t.rc}, JSON exit {r.rc}")


family("healthreq", "grammar", {k: k for k in HREQ_GRAMMAR}, healthreq_grammar_case, limit=110)
family("healthreq", "verdict", {k: k for k in HREQ_VERDICTS}, healthreq_verdict_case, limit=110)
CLASSES["healthreq"] = ("--require gpu-healthy / no-ecc-errors / pcie>=GxW: odd grammar (other digits, x and \u00d7, "
                        "operators, newlines with workflow commands, escapes, 5,000 digits) and verdicts on GPUs whose "
                        "NVML readings say ECC errors, repairs pending, links narrow or slow, on the first or second GPU")


# -------------------------------------------------------------------------------------------------- format judges
PROM_SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{.*\})? ')


def prom_whole(text: str) -> None:
    """The text format's grammar (parse_prometheus), each series once (node_exporter refuses a whole file with a
    duplicate: README "Every series is written once"), each metric's lines together and its TYPE once."""
    parse_prometheus(text)
    seen: set = set()
    families: list[str] = []
    types: set = set()
    for line in text.split("\n"):
        if line.startswith("# TYPE "):
            name = line.split()[2]
            expect(name not in types, f"TYPE of {name} twice")
            types.add(name)
            continue
        if not line or line.startswith("#"):
            continue
        mm = PROM_SAMPLE.match(line)
        if not mm:
            continue
        key = (mm.group(1), mm.group(2) or "")
        expect(key not in seen, f"a series written twice: {line[:160]!r}")
        seen.add(key)
        fam = re.sub(r"_(bucket|sum|count|total)$", "", mm.group(1))
        if not families or families[-1] != fam:
            expect(fam not in families, f"the lines of {fam} are not together")
            families.append(fam)


def junit_whole(data: bytes) -> None:
    text = utf8_strict(data, "the JUnit XML")
    expect(not XML_ILLEGAL.search(text), "a character XML 1.0 forbids in the JUnit XML")
    try:
        ET.fromstring(data)
    except ET.ParseError as e:
        raise Fail(f"the JUnit XML does not parse: {e}") from None


def formats_hold(m: M, base_args: list[str], timeout: float = 45, secs: float = 30, out_max: int = 4 << 20,
                 formats: tuple = ("json", "prometheus", "junit", "markdown", "text"), rcs: tuple = (0, 1),
                 env: dict | None = None) -> dict:
    """check (BASE_ARGS) in each format: the common rules, each document whole; returns the JSON report (or {})."""
    report: dict = {}
    for fmt in formats:
        args = [*base_args, "--json"] if fmt == "json" else [*base_args, "-v"] if fmt == "text" else \
            [*base_args, "--format", fmt]
        r = run_capped(m, args, timeout=timeout, env=env)
        hold16(r, fmt == "json", rcs, secs=secs, out_max=out_max, err_max=64 << 10)
        if r.rc == 2:
            if fmt == "json":
                json_refusal(r)
            else:
                one_error_line(r)
            continue
        if fmt == "json":
            report = strict_json(r.out)
        elif fmt == "prometheus":
            prom_whole(utf8_strict(r.outb, "the Prometheus text"))
        elif fmt == "junit":
            junit_whole(r.outb)
        elif fmt == "markdown":
            md_tables_whole(r.out)
            no_workflow(r.out + r.err)
        else:
            text_ok(r)
    return report


# ==================================================================================================================== nvmlvals
# GPU health readings (README "GPU health": gpus[].health; the Prometheus health series) whose NVML answers are
# absurd but representable: counts of 2^64-1, temperatures of 2^32-1, a link wider now than at most, every clock
# reason bit, modes NVML has no name for, thousands of processes, more memory used than there is.
U64 = "18446744073709551615ULL"
NVML_VALUES = {
    "ecc_volatile_u64max": {"ECC_VOLATILE": U64},
    "ecc_aggregate_2p53_plus1": {"ECC_AGGREGATE": "9007199254740993ULL"},
    "ecc_both_u64max": {"ECC_VOLATILE": U64, "ECC_AGGREGATE": U64},
    "ecc_mode_7": {"ECC": 7},
    "temp_u32max": {"TEMP": "4294967295U"},
    "temp_slowdown_zero": {"TEMP_SLOWDOWN": 0},
    "temp_slowdown_u32max": {"TEMP_SLOWDOWN": "4294967295U", "TEMP": "4294967294U"},
    "pcie_gen_u32max": {"PCIE_GEN": "4294967295U", "PCIE_GEN_MAX": "4294967295U"},
    "pcie_now_above_max": {"PCIE_GEN": 6, "PCIE_GEN_MAX": 3, "PCIE_WIDTH": 32, "PCIE_WIDTH_MAX": 8},
    "pcie_width_zero": {"PCIE_WIDTH": 0, "PCIE_WIDTH_MAX": 0, "PCIE_GEN": 0, "PCIE_GEN_MAX": 0},
    "throttle_all_bits": {"THROTTLE": U64},
    "throttle_unknown_high_bits": {"THROTTLE": "0xFFFF000000000000ULL"},
    "compute_mode_99": {"COMPUTE_MODE": 99},
    "compute_mode_neg": {"COMPUTE_MODE": -5},
    "persistence_7": {"PERSISTENCE": 7},
    "mig_5_pending_9": {"MIG": 5, "MIG_PENDING": 9},
    "procs_5000": {"PROCS": 5000},
    "procs_used_u64max": {"PROCS": 3, "MEMORY_USED": "18446744073709551614ULL"},
    "memory_used_above_total": {"MEMORY_USED": "100000000000000ULL"},
    "memory_zero": {"MEMORY": "0ULL"},
    "memory_u64max": {"MEMORY": U64},
    "util_u32max": {"UTIL": "4294967295U"},
    "sm_mhz_zero": {"SM_MHZ": 0},
    "remap_u32max": {"REMAP_PENDING": "4294967295U", "REMAP_FAILED": "4294967295U"},
    "retired_pending_7": {"RETIRED_PENDING": 7},
    "nvlinks_255": {"NVLINKS": 255, "GPUS2": 1},
    "nvlink_version_99": {"NVLINKS": 18, "NVSWITCH": 1, "NVLINK_VERSION": 99, "GPUS2": 1},
    "fabric_state_99": {"FABRIC_STATE": 99, "FABRIC_STATUS": 12345, "NVSWITCH": 1, "NVLINKS": 18, "GPUS2": 1},
    "everything_unsupported_but_hot": {"NOT_SUPPORTED": 1535, "TEMP": 200},
    "all_at_once": {"ECC_VOLATILE": U64, "TEMP": "4294967295U", "THROTTLE": U64, "PCIE_WIDTH": 0,
                    "COMPUTE_MODE": 99, "PROCS": 300, "REMAP_FAILED": 1, "MIG_PENDING": 1},
}


def nvmlvals_case(ctx: Ctx, key: str) -> None:
    vals = dict(NVML_VALUES[key])
    gpus = 2 if vals.pop("GPUS2", None) else 1
    m = health_machine(ctx, gpus=gpus, health=vals)
    turn = ("junit", "markdown")[list(NVML_VALUES).index(key) % 2]
    report = formats_hold(m, ["check"], formats=("json", "prometheus", turn, "text"))
    expect(isinstance(report.get("gpus"), list) and len(report["gpus"]) == gpus,
           f"the report does not list the {gpus} GPU(s) NVML counts: {str(report.get('gpus'))[:300]}")
    left = leftovers_of(m.base)
    reap(m.base)
    expect(not left, f"processes left: {left[:2]}")


family("nvmlvals", "reading", {k: k for k in NVML_VALUES}, nvmlvals_case, limit=110)
CLASSES["nvmlvals"] = ("check --json/prometheus/junit/markdown/-v where NVML's health readings are absurd but "
                       "representable (counts of 2^64-1, 2^32-1 degrees, links wider now than at most, every clock "
                       "reason bit, unnamed modes, 5,000 processes, more memory used than there is, 255 NVLinks)")


# ==================================================================================================================== manygpu
# README "Nodes with several GPUs": links, pairs, NVLinks, NUMA of every GPU, as data; the test fakes' NVML holds up
# to many GPUs. A node of 16 to 100 GPUs (NVSwitch systems, bridge pairs, links down on a far GPU) through every
# format: bounded, each document whole, every GPU listed once, no series twice, no false link finding.
MANY = {  # key: (GPUs, NVML readings, what a finding must say: "none" (no CD171-CD173), "down" (CD171 names GPU k))
    "nvswitch_16": (16, {"NVLINKS": 18, "NVSWITCH": 1, "PCI": 1, "FABRIC_STATE": 3, "FABRIC_STATUS": 0}, "none"),
    "nvswitch_32": (32, {"NVLINKS": 18, "NVSWITCH": 1, "PCI": 1}, "none"),
    "nvswitch_64": (64, {"NVLINKS": 18, "NVSWITCH": 1, "PCI": 1}, "none"),
    "nvswitch_100": (100, {"NVLINKS": 18, "NVSWITCH": 1, "PCI": 1}, "none"),
    "pcie_only_64": (64, {"PCI": 1}, "none"),
    "pcie_only_80": (80, {"PCI": 1}, "none"),
    "down_gpu_13_of_16": (16, {"NVLINKS": 18, "NVSWITCH": 1, "PCI": 1, "SICK_GPU": 13, "NVLINKS_DOWN": 4}, "down"),
    "down_gpu_47_of_64": (64, {"NVLINKS": 18, "NVSWITCH": 1, "PCI": 1, "SICK_GPU": 47, "NVLINKS_DOWN": 18}, "down"),
    "down_all_32": (32, {"NVLINKS": 18, "NVSWITCH": 1, "PCI": 1, "NVLINKS_DOWN": 6, "NVLINKS_DOWN_ALL": 1}, "down"),
    "sick_ecc_gpu_63_of_64": (64, {"PCI": 1, "SICK_GPU": 63, "ECC_VOLATILE": 2}, "ecc"),
    "no_pci_info_48": (48, {"NVLINKS": 18, "NVSWITCH": 1}, "any"),
}
MANY_FORMATS = {"json_text": ("json", "text"), "ci": ("prometheus", "junit", "markdown")}


def manygpu_case(ctx: Ctx, arg: tuple[str, str]) -> None:
    key, fk = arg
    n, vals, want = MANY[key]
    m = health_machine(ctx, gpus=n, health=vals)
    report = formats_hold(m, ["check"], timeout=60, secs=40, out_max=8 << 20, formats=MANY_FORMATS[fk])
    if report:
        gl = report.get("gpus")
        expect(isinstance(gl, list) and len(gl) == n, f"{n} GPUs on the node, the report lists "
                                                       f"{len(gl) if isinstance(gl, list) else gl!r}")
        idx = [g.get("index") for g in gl if isinstance(g, dict)]
        expect(len(set(map(str, idx))) == n, "GPUs listed twice or without their index")
        found = [f for f in report.get("findings", []) if isinstance(f, dict)]
        link = [f for f in found if f.get("code") in ("CD171", "CD172", "CD173")]
        if want == "none":
            expect(not link, f"a link finding on a node whose links are all up: "
                             f"{[(f.get('code'), str(f.get('detail'))[:120]) for f in link[:2]]}")
        elif want == "down":
            sick = vals.get("SICK_GPU", 0)
            c171 = [f for f in found if f.get("code") == "CD171"]
            expect(c171, "NVLinks down and no CD171")
            if not vals.get("NVLINKS_DOWN_ALL"):
                text = " ".join(str(f.get("detail", "")) + " " + str(f.get("subject", "")) for f in c171)
                expect(re.search(rf"GPU {sick}\b", text), f"CD171 does not name GPU {sick}: {text[:300]!r}")
                other = re.findall(r"GPU (\d+) \([^)]*\) has \d+ of", text)
                expect(all(int(x) == sick for x in other), f"CD171 names GPUs whose links are up: {other[:5]}")
        elif want == "ecc":
            c130 = [f for f in found if f.get("code") == "CD130"]
            expect(c130, "uncorrectable ECC errors on GPU 63 and no CD130")
    left = leftovers_of(m.base)
    reap(m.base)
    expect(not left, f"processes left: {left[:2]}")


family("manygpu", "node", {f"{k}-{f}": (k, f) for k in MANY for f in MANY_FORMATS}, manygpu_case, limit=120)
CLASSES["manygpu"] = ("check on a node of 16 to 100 GPUs (NVSwitch systems, PCIe only, links down on a far GPU, ECC "
                      "errors on the last) through json, text, prometheus, junit and markdown: bounded, whole, every "
                      "GPU once, no series twice, no false link finding")


# ==================================================================================================================== fleetjob
# README "Slurm": everything after `--` goes to srun; the job srun asks for is named `cudnn-doctor-fleet-...` unless
# `--jobid`, `--job-name` or `-J` is given, and, when srun was stopped or killed, is cancelled by that name with
# scancel, so no job is left waiting in the queue. srun's own options given in each form its parser (getopt_long,
# options first: the command ends them) reads a job name or job id in (attached, separate, an abbreviation, short
# flags run together), and look-alikes that are another option's value; a fake srun records its arguments and either
# answers for two nodes or ignores SIGINT (stopped at --deadline 3), a fake scancel records its arguments.
SRUN_ARG = {"--job-name", "--jobid", "--comment", "--export", "--partition", "--nodelist", "--nodes", "--time",
            "--account", "--output", "--error", "--chdir", "--ntasks-per-node", "--kill-on-bad-exit"}
SRUN_SHORT_ARG = set("JpwNtAoeDn")
FLEETJOB_ARGS = {
    "none": [],
    "name_eq": ["--job-name=train"],
    "name_sep": ["--job-name", "train"],
    "J_sep": ["-J", "train"],
    "J_attached": ["-Jtrain"],
    "name_abbrev_eq": ["--job-nam=train"],
    "name_abbrev_sep": ["--job-na", "train"],
    "jobid_eq": ["--jobid=4242"],
    "jobid_sep": ["--jobid", "4242"],
    "flags_run_together": ["-vJtrain"],
    "decoy_comment_eq": ["--comment=--job-name=x"],
    "decoy_comment_sep": ["--comment", "-J"],
    "decoy_partition_value": ["-p", "-Jgpu"],
    "decoy_export_jobid": ["--export=ALL,NAME=--jobid=7"],
    "name_shell_specials": ["--job-name=$(touch MARK);`touch MARK`|touch MARK"],
    "name_newline_wf": ["--job-name=a\n::error title=pwn::owned"],
    "nodes_and_spaced_name": ["-N", "2", "--job-name=x y"],
}
FLEET_FAKE_SRUN = r"""#!/bin/sh
printf '%s\0' "$@" > "$REDTEAM_LOG/srun.$$"
if [ "$REDTEAM_MODE" = stuck ]; then
  trap '' INT
  while :; do sleep 1; done
fi
out=""
for a in "$@"; do case "$a" in --output=*) out="${a#--output=}";; esac; done
dir=$(dirname "$out")
for n in gpu-01 gpu-02; do cp "$REDTEAM_GOOD" "$dir/$n.json"; done
exit 0
"""
FLEET_FAKE_SCANCEL = "#!/bin/sh\nprintf '%s\\0' \"$@\" > \"$REDTEAM_LOG/scancel.$$\"\nexit 0\n"


def srun_reads(argv: list[str]) -> tuple[str | None, str | None]:
    """(job name, job id) as srun's getopt_long reads ARGV: options until the first word that is none (the command),
    an option's value attached or the next word, a long option by any unambiguous prefix, the last one wins."""
    name = jobid = None
    i = 0
    while i < len(argv):
        a = argv[i]
        if a == "--":
            break
        if a.startswith("--"):
            opt, eq, val = a[2:].partition("=")
            full = [o for o in SRUN_ARG if o[2:] == opt] or [o for o in SRUN_ARG if o[2:].startswith(opt)]
            if len(full) == 1 and full[0] in SRUN_ARG:
                if not eq:
                    i += 1
                    val = argv[i] if i < len(argv) else ""
                if full[0] == "--job-name":
                    name = val
                elif full[0] == "--jobid":
                    jobid = val
            i += 1
            continue
        if a.startswith("-") and len(a) > 1:
            j = 1
            while j < len(a):
                c = a[j]
                if c in SRUN_SHORT_ARG:
                    val = a[j + 1:]
                    if not val:
                        i += 1
                        val = argv[i] if i < len(argv) else ""
                    if c == "J":
                        name = val
                    break
                j += 1
            i += 1
            continue
        break
    return name, jobid


def _fleet_machine(ctx: Ctx) -> tuple[M, Path, dict]:
    m = healthy(ctx)
    good = m.base / "good.json"
    good.write_text(json.dumps(_good_report(m)))
    bindir = m.base / "bin"
    bindir.mkdir()
    log = m.base / "log"
    log.mkdir()
    for name, body in (("srun", FLEET_FAKE_SRUN), ("scancel", FLEET_FAKE_SCANCEL)):
        (bindir / name).write_text(body)
        (bindir / name).chmod(0o755)
    m.env["PATH"] = f"{bindir}:{m.env['PATH']}"
    return m, log, {"REDTEAM_LOG": str(log), "REDTEAM_GOOD": str(good)}


def _logged(log: Path, prog: str) -> list[list[str]]:
    out = []
    for p in sorted(log.glob(f"{prog}.*")):
        parts = p.read_bytes().split(b"\0")
        out.append([x.decode("utf-8", "surrogateescape") for x in parts[:-1]])
    return out


def fleetjob_case(ctx: Ctx, arg: tuple[str, str]) -> None:
    key, mode = arg
    user = FLEETJOB_ARGS[key]
    m, log, env = _fleet_machine(ctx)
    env["REDTEAM_MODE"] = mode
    args = ["fleet", "run", "--slurm", "--json", "--deadline", "3" if mode == "stuck" else "30"]
    if user:
        args += ["--", *user]
    r = run_capped(m, args, timeout=40, env=env)
    hold16(r, True, (0, 1, 2) if mode == "stuck" else (0, 1), secs=3 + 10 + 6 if mode == "stuck" else 25,
           out_max=1 << 20, err_max=64 << 10)
    no_injected_workflow(r.out + r.err)
    no_marks21(m.base)
    left = leftovers_of(m.base)
    reap(m.base)
    expect(not left, f"srun or a node left running: {left[:2]}")
    sruns = _logged(log, "srun")
    expect(len(sruns) == 1, f"srun started {len(sruns)} times")
    got = sruns[0]
    n = len(user)
    expect(any(got[i:i + n] == user for i in range(len(got) - n + 1)),
           f"the options after -- did not reach srun whole and in order: {user!r} in {got!r}")
    user_name, user_jobid = srun_reads(user)
    eff_name, eff_jobid = srun_reads(got)
    if user_name is not None:
        expect(eff_name == user_name, f"the user named the job {user_name!r}; srun reads {eff_name!r} from {got!r}")
    elif user_jobid is None:
        expect(eff_name is not None and eff_name.startswith("cudnn-doctor-fleet-"),
               f"no job name or id given: srun must name the job cudnn-doctor-fleet-...; it reads {eff_name!r} "
               f"from {got!r}")
    cancels = _logged(log, "scancel")
    if mode == "good":
        expect(r.rc == 0 and strict_json(r.out).get("nodes") == 2, f"two good nodes, not merged as two: {r!r}")
        expect(not cancels, f"scancel run after srun ended by itself: {cancels!r}")
        return
    expect(r.rc != 0, f"srun never answered, yet exit 0: {r!r}")
    if user_name is None and user_jobid is None:
        def names(a: list[str]) -> list[str]:
            out = [x.split("=", 1)[1] for x in a if x.startswith(("--name=", "--jobname="))]
            out += [a[i + 1] for i, x in enumerate(a[:-1]) if x in ("--name", "-n", "--jobname")]
            return out
        expect(any(eff_name in names(c) for c in cancels),
               f"srun was stopped and the job it named {eff_name!r} was not cancelled by that name: scancel "
               f"runs {cancels!r}")
    for c in cancels:
        for x in c:
            expect(not (user_name and x != user_name and x in user_name.split()),
                   f"scancel got a piece of the user's job name: {c!r}")


family("fleetjob", "srun", {f"{k}-{mode}": (k, mode) for k in FLEETJOB_ARGS for mode in ("good", "stuck")},
       fleetjob_case, limit=70)
CLASSES["fleetjob"] = ("fleet run --slurm with srun options after -- naming the job or its id in every form srun "
                       "reads (attached, separate, abbreviated, flags run together) or look-alikes inside other "
                       "options' values: the job named and, when srun is stopped, cancelled by that name")


# ==================================================================================================================== ncclsys
# README "Nodes with several GPUs": NCCL_SOCKET_IFNAME against /sys/class/net (CD175, naming the node's interfaces)
# and NCCL_IB_HCA against /sys/class/infiniband (CD176), read from the thing itself (under the system prefix here).
# The node's interface and adapter names (what the kernel, udev rules or a container runtime named them) hostile:
# escapes, a newline and a workflow command, bidi, shell and table/XML/Prometheus breakers, 255 bytes, 20,000 of
# them; the folders (and entries) of the wrong kind. Through json, github (with its job summary), markdown,
# prometheus, junit and text.
NET_NAMES = {
    "osc_title": "eth0\x1b]0;owned\x07", "csi_erase": "eth0\x1b[2J\x1b[H", "newline_wf": "a\n::error title=pwn::owned",
    "cr_wf": "b\r::warning::owned", "bidi": "\u202eeth0\u2066", "shell": "$(touch MARK)`touch MARK`;touch MARK",
    "md_pipe": "x|y|z", "xml_breaker": "]]></failure><testcase name=\"x\">&#0;", "prom_breaker": "\"} 1\nowned_metric 1",
    "c1_nel": "eth\u0085\u009b31m", "name_255": "e" * 255, "u2028": "eth\u2028\u2029",
}
NET_FOLDERS = ("fifo", "file_binary", "loop", "dangling", "dev_zero_link", "entries_fifos", "entries_dangling_links",
               "entries_loops", "many_20000_missing", "many_20000_with_ib0")
NCCL_ENV = {"NCCL_SOCKET_IFNAME": "ib0", "NCCL_IB_HCA": "mlx5_9"}


def _ncclsys_machine(ctx: Ctx) -> M:
    m = health_machine(ctx, gpus=2, health={"PCI": 1})
    m.env.update(NCCL_ENV)
    return m


def _net_folder(root: Path, sub: str, kind: str) -> None:
    folder = root / "sys" / "class" / sub
    folder.parent.mkdir(parents=True, exist_ok=True)
    if kind in ("fifo", "loop"):
        hostile_file(folder, kind)
    elif kind == "file_binary":
        folder.write_bytes(_hostile_text_bytes(f"2021-ncclsys-{sub}"))
    elif kind == "dangling":
        folder.symlink_to(root / "nowhere" / sub)
    elif kind == "dev_zero_link":
        folder.symlink_to("/dev/zero")
    else:
        folder.mkdir()
        if kind.startswith("entries_"):
            for i in range(3):
                e = folder / (f"eth{i}" if sub == "net" else f"mlx5_{i}")
                if kind == "entries_fifos":
                    os.mkfifo(e)
                elif kind == "entries_dangling_links":
                    e.symlink_to(f"../../devices/virtual/{sub}/gone{i}")
                else:
                    e.symlink_to(e.name)
        else:
            for i in range(20000):  # Calico's pod interfaces (sorted before ib0), adapters of another scheme
                (folder / (f"cali{i:011x}" if sub == "net" else f"ibp{i}s0")).mkdir()
            if kind == "many_20000_with_ib0":
                (folder / ("ib0" if sub == "net" else "mlx5_9")).mkdir()
                if sub == "infiniband":
                    (folder / "mlx5_9" / "ports" / "1").mkdir(parents=True)


def _ncclsys_runs(m: M, verdict: bool | None, formats: tuple) -> None:
    summary = m.base / "step_summary.md"
    for fmt in formats:
        args = ["check", "--json"] if fmt == "json" else ["check", "-v"] if fmt == "text" else \
            ["check", "--format", fmt]
        env = {"GITHUB_STEP_SUMMARY": str(summary), "GITHUB_ACTIONS": "true"} if fmt == "github" else None
        r = run_capped(m, args, timeout=45, env=env)
        hold16(r, fmt == "json", (0, 1), secs=30, out_max=4 << 20 if fmt == "json" else 1 << 20, err_max=64 << 10)
        no_injected_workflow(r.out + r.err)
        if fmt == "json":
            report = strict_json(r.out)
            if verdict is not None:
                c175 = [f for f in report.get("findings", []) if isinstance(f, dict) and f.get("code") == "CD175"]
                expect(bool(c175) == (not verdict), f"NCCL_SOCKET_IFNAME=ib0 on a node whose /sys/class/net "
                                                    f"{'holds' if verdict else 'lacks'} ib0: CD175 "
                                                    f"{'said' if c175 else 'not said'}")
        elif fmt == "github":
            if summary.exists():
                st = utf8_strict(summary.read_bytes(), "the job summary")
                no_raw_controls13(strip_sgr(st), "the job summary")
                md_tables_whole(st)
        elif fmt == "markdown":
            md_tables_whole(r.out)
            no_raw_controls13(r.out, "the markdown")
        elif fmt == "prometheus":
            prom_whole(utf8_strict(r.outb, "the Prometheus text"))
            expect(not re.search(r"^owned_metric", r.out, re.M), "a Prometheus series made by an interface's name")
        elif fmt == "junit":
            junit_whole(r.outb)
            expect(b'<testcase name="x">' not in r.outb, "a JUnit test case made by an interface's name")
        else:
            text_ok(r)
    no_marks21(m.base)
    left = leftovers_of(m.base)
    reap(m.base)
    expect(not left, f"processes left: {left[:2]}")


def ncclsys_name_case(ctx: Ctx, arg: tuple[str, str]) -> None:
    sub, key = arg
    m = _ncclsys_machine(ctx)
    name = NET_NAMES[key]
    for s in ("net", "infiniband"):
        (m.root / "sys" / "class" / s).mkdir(parents=True, exist_ok=True)
    (m.root / "sys" / "class" / "net" / "lo").mkdir()
    (m.root / "sys" / "class" / "infiniband" / "mlx5_0" / "ports" / "1").mkdir(parents=True)
    target = m.root / "sys" / "class" / sub / name
    target.mkdir(parents=True)
    if sub == "infiniband":
        (target / "ports" / "1").mkdir(parents=True)
    extra = ("markdown", "prometheus", "junit")[list(NET_NAMES).index(key) % 3]
    if key in ("md_pipe", "xml_breaker", "prom_breaker", "newline_wf"):
        extra = ("markdown", "prometheus", "junit")
    _ncclsys_runs(m, False if sub == "net" else None, ("json", "github", "text", *([extra] if isinstance(extra, str)
                                                                                     else extra)))


def ncclsys_folder_case(ctx: Ctx, arg: tuple[str, str]) -> None:
    sub, kind = arg
    m = _ncclsys_machine(ctx)
    other = "infiniband" if sub == "net" else "net"
    (m.root / "sys" / "class" / other).mkdir(parents=True, exist_ok=True)
    _net_folder(m.root, sub, kind)
    verdict = None
    if sub == "net" and kind.startswith("many_"):
        verdict = kind == "many_20000_with_ib0"
    _ncclsys_runs(m, verdict, ("json", "text"))


family("ncclsys", "name", {f"{s}-{k}": (s, k) for s in ("net", "infiniband") for k in NET_NAMES}, ncclsys_name_case,
       limit=100)
family("ncclsys", "folder", {f"{s}-{k}": (s, k) for s in ("net", "infiniband") for k in NET_FOLDERS},
       ncclsys_folder_case, limit=120)
CLASSES["ncclsys"] = ("check on two GPUs with NCCL_SOCKET_IFNAME and NCCL_IB_HCA set, where /sys/class/net and "
                      "/sys/class/infiniband hold names with escapes, newlines and workflow commands, bidi, shell, "
                      "table, XML and Prometheus breakers, 255 bytes (json, github and its job summary, text, and "
                      "markdown, prometheus or junit), or 20,000 entries (ib0 among them or not), or are FIFOs, "
                      "loops, files, dangling (json, text)")


# ==================================================================================================================== imagewhole
# README "Images", the bounds table: an archive compressed as a whole (`docker save | gzip`, xz, bzip2) is named by
# its first bytes, read as gzip(1) and xz(1) read it (stream after stream, zero padding between and after skipped,
# anything else after a stream refused in one line), decompressed at most 64 times its size and 1 GiB in all, two
# passes, and an archive that changes while it is read is exit 2 ("the archive changed while it was read").
# A docker save of three layers (CUDA 12.8's version.json, a cuDNN 9.8 library and header, 1.5 MB of seeded bytes)
# compressed as a whole in odd but valid shapes (the verdict must be the plain archive's), broken ones (refused in one
# line), and bounds (a 1.5 GiB bomb, 256 MiB of padding, a sparse file of zeros, an archive still being written).
IW_VALID = ("gz_default", "gz_level1", "gz_stored", "gz_two_members", "gz_empty_member_first", "gz_padded_to_block",
            "gz_header_fields", "xz_default", "xz_check_none", "xz_check_sha256", "xz_blocks_4k", "xz_two_streams",
            "xz_empty_stream_first", "xz_padding_after", "xz_padding_between", "xz_bcj_x86", "xz_delta",
            "xz_stored_chunks", "xz_threaded", "bz2_default", "bz2_two_streams", "bz2_level1")
IW_BROKEN = ("gz_stored_flip", "gz_isize_wrong", "gz_cut_half", "gz_cut_trailer", "gz_trailing_garbage",
             "gz_then_xz", "gz_reserved_flag", "xz_cut_half", "xz_trailing_garbage", "xz_index_crc_wrong",
             "xz_stored_flip", "xz_then_gzip", "xz_of_xz", "bz2_cut_half", "bz2_stored_flip_crc", "lzma_alone",
             "gz_of_bz2")
IW_BOUNDS = ("gz_bomb_1500m", "bz2_bomb_1500m", "xz_padding_sparse_256m", "sparse_zeros_10g_named_xz",
             "gz_still_being_written", "xz_still_being_written")


def _iw_plain(ctx: Ctx) -> bytes:
    cached = BUILD / "imagewhole" / "plain.tar"
    if not cached.exists():
        i = img()
        rng = random.Random("2021-imagewhole-lib")
        lib = bytes(rng.randrange(256) for _ in range(600_000)) + b"\0" * 400_000 + bytes(
            rng.randrange(64) for _ in range(500_000))
        l1 = i.layer({"usr/local/cuda-12.8/version.json": json.dumps({"cuda": {"version": "12.8.1"}})})
        l2 = i.layer({"usr/lib/x86_64-linux-gnu/libcudnn.so.9.8.0": lib,
                      "usr/include/cudnn_version.h": "#define CUDNN_MAJOR 9\n#define CUDNN_MINOR 8\n"
                                                     "#define CUDNN_PATCHLEVEL 0\n"})
        l3 = i.layer({"opt/app/data.bin": bytes(rng.randrange(256) for _ in range(200_000))})
        config = i.config_of({"CUDA_VERSION": "12.8.1", "NVIDIA_REQUIRE_CUDA": "cuda>=12.8"}, layers=[l1, l2, l3])
        cached.parent.mkdir(parents=True, exist_ok=True)
        tmp = cached.parent / f"plain.{os.getpid()}.tar"
        i.docker_archive(tmp, config, [l1, l2, l3])
        os.replace(tmp, cached)
    return cached.read_bytes()


def _gz_raw(data: bytes, level: int = 6, flags: int = 0, extra: bytes = b"", fname: bytes = b"",
            comment: bytes = b"", hcrc: bool = False, crc: int | None = None, isize: int | None = None) -> bytes:
    co = zlib.compressobj(level, zlib.DEFLATED, -15)
    body = co.compress(data) + co.flush()
    flg = flags
    head = bytearray(b"\x1f\x8b\x08")
    opt = b""
    if extra:
        flg |= 4
        opt += len(extra).to_bytes(2, "little") + extra
    if fname:
        flg |= 8
        opt += fname + b"\0"
    if comment:
        flg |= 16
        opt += comment + b"\0"
    if hcrc:
        flg |= 2
    head += bytes([flg]) + b"\0\0\0\0" + b"\0\x03" + opt
    if hcrc:
        head += (zlib.crc32(bytes(head)) & 0xFFFF).to_bytes(2, "little")
    trailer = ((zlib.crc32(data) if crc is None else crc) & 0xFFFFFFFF).to_bytes(4, "little") + \
        ((len(data) if isize is None else isize) & 0xFFFFFFFF).to_bytes(4, "little")
    return bytes(head) + body + trailer


def _flip_verbatim(stream: bytes, plain: bytes, seed: str) -> bytes:
    """STREAM (holding PLAIN's bytes verbatim: stored blocks) with one byte of the cuDNN library's flipped."""
    at = plain.find(b"libcudnn.so.9.8.0")
    expect(at >= 0, "harness: no library in the archive")
    rng = random.Random(seed)
    for _ in range(2000):
        o = rng.randrange(at + 2000, min(len(plain) - 64, at + 900_000))
        window = plain[o - 16:o + 16]
        if len(set(window)) < 8:
            continue
        if plain.count(window) == 1 and stream.count(window) == 1:
            pos = stream.find(window)
            b = bytearray(stream)
            b[pos + 16] ^= 0x20
            return bytes(b)
    raise Fail("harness: no byte of the library stands verbatim in the stream")


def _iw_kind(kind: str, plain: bytes) -> bytes:
    import bz2
    import lzma
    cut = random.Random(f"2021-imagewhole-{kind}").randrange(4096, len(plain) - 4096)
    if kind == "gz_default":
        return gzip.compress(plain, mtime=0)
    if kind == "gz_level1":
        return gzip.compress(plain, 1, mtime=0)
    if kind in ("gz_stored", "gz_stored_flip"):
        s = _gz_raw(plain, level=0)
        return _flip_verbatim(s, plain, kind) if kind.endswith("flip") else s
    if kind == "gz_two_members":
        return _gz_raw(plain[:cut]) + _gz_raw(plain[cut:])
    if kind == "gz_empty_member_first":
        return _gz_raw(b"") + _gz_raw(plain)
    if kind == "gz_padded_to_block":
        s = _gz_raw(plain)
        return s + b"\0" * ((-len(s)) % 10240 or 10240)
    if kind == "gz_header_fields":
        return _gz_raw(plain, extra=b"AB\x04\x00data" + b"x" * 60000, fname=b"image.tar", comment=b"saved by docker",
                       hcrc=True)
    if kind == "gz_isize_wrong":
        return _gz_raw(plain, isize=len(plain) + 1)
    if kind == "gz_cut_half":
        return gzip.compress(plain, mtime=0)[:len(gzip.compress(plain, mtime=0)) // 2]
    if kind == "gz_cut_trailer":
        return gzip.compress(plain, mtime=0)[:-4]
    if kind == "gz_trailing_garbage":
        return gzip.compress(plain, mtime=0) + b"GARBAGE AFTER THE STREAM\n"
    if kind == "gz_then_xz":
        return gzip.compress(plain, mtime=0) + lzma.compress(b"more")
    if kind == "gz_reserved_flag":
        return _gz_raw(plain, flags=0x20)
    if kind == "gz_of_bz2":
        return gzip.compress(bz2.compress(plain), mtime=0)
    if kind == "xz_default":
        return lzma.compress(plain, format=lzma.FORMAT_XZ)
    if kind == "xz_check_none":
        return lzma.compress(plain, format=lzma.FORMAT_XZ, check=lzma.CHECK_NONE)
    if kind == "xz_check_sha256":
        return lzma.compress(plain, format=lzma.FORMAT_XZ, check=lzma.CHECK_SHA256)
    if kind == "xz_blocks_4k":
        return _xz(plain, "--block-size=4096")
    if kind == "xz_two_streams":
        return lzma.compress(plain[:cut]) + lzma.compress(plain[cut:])
    if kind == "xz_empty_stream_first":
        return lzma.compress(b"") + lzma.compress(plain)
    if kind == "xz_padding_after":
        return lzma.compress(plain) + b"\0" * 4096
    if kind == "xz_padding_between":
        return lzma.compress(plain[:cut]) + b"\0" * 64 + lzma.compress(plain[cut:])
    if kind == "xz_bcj_x86":
        return lzma.compress(plain, filters=[{"id": lzma.FILTER_X86}, {"id": lzma.FILTER_LZMA2, "preset": 6}])
    if kind == "xz_delta":
        return lzma.compress(plain, filters=[{"id": lzma.FILTER_DELTA, "dist": 4}, {"id": lzma.FILTER_LZMA2}])
    if kind in ("xz_stored_chunks", "xz_stored_flip"):
        s = _xz_stored(plain)
        return _flip_verbatim(s, plain, kind) if kind.endswith("flip") else s
    if kind == "xz_threaded":
        return _xz(plain, "-T2", "--block-size=262144")
    if kind == "xz_cut_half":
        s = lzma.compress(plain)
        return s[:len(s) // 2]
    if kind == "xz_trailing_garbage":
        return lzma.compress(plain) + b"GARBAGE AFTER THE STREAM\n"
    if kind == "xz_index_crc_wrong":
        s = bytearray(lzma.compress(plain))
        back = int.from_bytes(s[-8:-4], "little")
        index_end = len(s) - 12
        s[index_end - 1] ^= 0xFF  # the index's CRC32 (its last four bytes before the footer)
        _ = back
        return bytes(s)
    if kind == "xz_then_gzip":
        return lzma.compress(plain) + gzip.compress(b"more", mtime=0)
    if kind == "xz_of_xz":
        return lzma.compress(lzma.compress(plain))
    if kind == "bz2_default":
        return bz2.compress(plain)
    if kind == "bz2_two_streams":
        return bz2.compress(plain[:cut]) + bz2.compress(plain[cut:])
    if kind == "bz2_level1":
        return bz2.compress(plain, 1)
    if kind == "bz2_cut_half":
        s = bz2.compress(plain)
        return s[:len(s) // 2]
    if kind == "bz2_stored_flip_crc":
        s = bytearray(bz2.compress(plain))
        s[-5] ^= 0x01  # inside the stream's combined CRC (the end-of-stream marker's 32 bits, before padding)
        return bytes(s)
    if kind == "lzma_alone":
        return lzma.compress(plain, format=lzma.FORMAT_ALONE)
    raise ValueError(kind)


def _iw_bomb(kind: str) -> Path:
    """A docker save compressed as a whole whose one layer.tar is 1.5 GiB of zeros (cached)."""
    import bz2
    out = BUILD / "imagewhole" / f"{kind}.bin"
    if out.exists():
        return out
    out.parent.mkdir(parents=True, exist_ok=True)
    size = 1536 << 20
    head = _ustar(b"0" * 64 + b"/layer.tar", size)
    comp = zlib.compressobj(9, zlib.DEFLATED, 31) if kind.startswith("gz") else bz2.BZ2Compressor(9)
    tmp = out.parent / f"{kind}.{os.getpid()}.tmp"
    with open(tmp, "wb") as f:
        f.write(comp.compress(head))
        chunk = b"\0" * (8 << 20)
        for _ in range(size // len(chunk)):
            f.write(comp.compress(chunk))
        f.write(comp.compress(b"\0" * 1024))
        f.write(comp.flush())
    os.replace(tmp, out)
    return out


def _iw_norm(d: dict) -> dict:
    """An image report without what names the file it was read from."""
    def walk(x: object) -> object:
        if isinstance(x, dict):
            return {k: walk(v) for k, v in x.items() if k not in ("source", "path", "archive", "file", "size",
                                                                     "timings_ms", "notes", "note")}
        if isinstance(x, list):
            return [walk(v) for v in x]
        if isinstance(x, str):
            return re.sub(r"/var/tmp/redteam22b-43-[^ \"']*", "<path>", x)
        return x
    return walk(d)  # type: ignore[return-value]


def _iw_runs(m: M, target: Path, secs: float = 30) -> tuple[R, R]:
    j = run_capped(m, ["image", str(target), "--json"], timeout=60)
    hold16(j, True, (0, 1, 2), secs=secs, out_max=1 << 20, err_max=16 << 10)
    if j.rc == 2:
        json_refusal(j)
    t = run_capped(m, ["image", str(target)], timeout=60)
    hold16(t, False, (0, 1, 2), secs=secs, out_max=1 << 20, err_max=16 << 10)
    text_ok(t)
    if t.rc == 2:
        one_error_line(t)
    expect(t.rc == j.rc, f"text and JSON disagree: exit {t.rc} and {j.rc}")
    return j, t


def imagewhole_case(ctx: Ctx, arg: tuple[str, str]) -> None:
    group, kind = arg
    m = healthy(ctx)
    plain = _iw_plain(ctx)
    base_path = m.base / "app.tar"
    base_path.write_bytes(plain)
    h = hashlib.sha256()
    for p in sorted((ctx.tree / "cudnn_doctor").rglob("*.py")):
        h.update(p.read_bytes())
    saved = BUILD / "imagewhole" / f"base-{h.hexdigest()[:16]}.json"
    if saved.exists():
        base_rc, base_text = json.loads(saved.read_text())
    else:
        base = run_capped(m, ["image", str(base_path), "--json"], timeout=60)
        hold16(base, True, (0, 1), secs=30, out_max=1 << 20, err_max=16 << 10)
        base_rc, base_text = base.rc, base.out
        tmp = saved.parent / f"{saved.name}.{os.getpid()}"
        tmp.write_text(json.dumps([base_rc, base_text]))
        os.replace(tmp, saved)
    base = R(base_rc, base_text.encode(), b"", 0.0)
    want = _iw_norm(strict_json(base.out))
    ext = {"gz": ".tar.gz", "xz": ".tar.xz", "bz2": ".tar.bz2"}.get(kind.split("_")[0], ".tar.xz")
    target = m.base / f"app{ext}"
    if group in ("valid", "broken"):
        target.write_bytes(_iw_kind(kind, plain))
        j, _ = _iw_runs(m, target)
        if group == "valid":
            expect(j.rc == base.rc, f"a valid {kind} stream of the archive: exit {j.rc}, the plain archive "
                                    f"{base.rc}: {j!r}")
            got = _iw_norm(strict_json(j.out))
            diff = [k for k in set(want) | set(got) if want.get(k) != got.get(k)]
            expect(not diff, f"a valid {kind} stream of the archive judged otherwise than the plain archive: "
                             f"{[(k, str(want.get(k))[:150], str(got.get(k))[:150]) for k in diff[:3]]}")
        else:
            expect(j.rc == 2, f"a broken stream ({kind}) was not refused: exit {j.rc}")
    elif kind in ("gz_bomb_1500m", "bz2_bomb_1500m"):
        src = _iw_bomb(kind)
        os.symlink(src, target) if False else shutil.copyfile(src, target)
        j, _ = _iw_runs(m, target, secs=20)
        expect(j.rc == 2, f"a 1.5 GiB bomb in a {target.stat().st_size}-byte archive was not refused: exit {j.rc}")
    elif kind == "xz_padding_sparse_256m":
        import lzma
        with open(target, "wb") as f:
            s = lzma.compress(plain)
            f.write(s)
            f.truncate(len(s) + (256 << 20))
        j, _ = _iw_runs(m, target, secs=30)
        if j.rc != 2:
            expect(j.rc == base.rc and _iw_norm(strict_json(j.out)) == want,
                   f"stream padding of 256 MiB: a verdict other than the plain archive's: {j!r}")
    elif kind == "sparse_zeros_10g_named_xz":
        with open(target, "wb") as f:
            f.truncate(10 << 30)
        j, _ = _iw_runs(m, target, secs=10)
        expect(j.rc == 2, f"10 GB of zeros judged as an image: exit {j.rc}")
    else:  # still being written: half now, the rest 64 KiB each 0.25 s while the doctor reads
        data = gzip.compress(plain, 1, mtime=0) if kind.startswith("gz") else _xz(plain, "-0")
        half = len(data) // 3
        target.write_bytes(data[:half])
        stop = threading.Event()

        def writer() -> None:
            with open(target, "ab") as f:
                for o in range(half, len(data), 65536):
                    if stop.wait(0.25):
                        return
                    f.write(data[o:o + 65536])
                    f.flush()
        th = threading.Thread(target=writer, daemon=True)
        th.start()
        time.sleep(0.3)
        try:
            j = run_capped(m, ["image", str(target), "--json"], timeout=60)
            done_at_end = not th.is_alive()
        finally:
            stop.set()
            th.join()
        hold16(j, True, (0, 1, 2), secs=30, out_max=1 << 20, err_max=16 << 10)
        if j.rc == 2:
            json_refusal(j)
        else:
            expect(done_at_end and _iw_norm(strict_json(j.out)) == want,
                   f"a verdict (exit {j.rc}) on an archive still being written: {j!r}")
    left = leftovers_of(m.base)
    reap(m.base)
    expect(not left, f"processes left: {left[:2]}")


family("imagewhole", "archive", {**{f"valid-{k}": ("valid", k) for k in IW_VALID},
                                 **{f"broken-{k}": ("broken", k) for k in IW_BROKEN},
                                 **{f"bound-{k}": ("bound", k) for k in IW_BOUNDS}}, imagewhole_case, limit=120)
CLASSES["imagewhole"] = ("image of a docker save compressed as a whole: valid gzip/xz/bzip2 shapes (members, empty "
                         "first, padding, header fields, check types, 4 KiB blocks, filters, stored chunks) judged as "
                         "the plain archive; broken ones (CRC-only flips, cuts, trailing bytes, reserved flags, nested "
                         "compression) refused; a 1.5 GiB bomb, 256 MiB of padding, 10 GB of zeros, an archive still "
                         "being written")


# ==================================================================================================================== gpudata
# README "The doctor's own data": each compat/ table is read as a user's file is (a FIFO never waited on, at most 16
# MiB, parsed and checked against its schema where it is read); one that is missing, a folder, a loop, not UTF-8,
# not TOML, too big or of the wrong shape ends every command that needs it in one line (one JSON object with
# --json), exit 2, CD012; a command that does not need it works as usual. The tables no earlier round damaged
# (multi-GPU links, platforms, GPU support, status codes, libraries, first-use, cuDNN and CUDA releases, fixes,
# process start) in a copy of the package, under check (two GPUs, NCCL settings), JSON and text.
GPUDATA_FILES = ("multi_gpu.toml", "platforms.toml", "gpu_support.toml", "status_codes.toml", "libraries.toml",
                 "first_use.toml", "cudnn.toml", "cuda.toml", "fixes.toml", "process_start.toml")
GPUDATA_KINDS = ("binary", "utf16", "fifo", "wrong_types")
GPUDATA_EXTRA = {"multi_gpu.toml": ("invalid_toml", "huge_17m", "loop", "folder"),
                 "platforms.toml": ("huge_17m", "empty")}


def _gd_machine(ctx: Ctx, pkg: Path | None, name: str) -> M:
    m = health_machine(ctx, gpus=2, health={"PCI": 1, "NVLINKS": 18, "NVSWITCH": 1}, name=name)
    m.env["NCCL_SOCKET_IFNAME"] = "ib0"
    (m.root / "sys" / "class" / "net" / "eth0").mkdir(parents=True)
    if pkg is not None:
        m.env["PYTHONPATH"] = str(pkg)
    return m


def gpudata_case(ctx: Ctx, arg: tuple[str, str]) -> None:
    fname, kind = arg
    base_m = _gd_machine(ctx, None, "base")
    runs = (["check", "--json"],)
    before = []
    for args in runs:
        r = run_capped(base_m, args, timeout=45)
        hold16(r, True, (0, 1), secs=30, out_max=4 << 20, err_max=64 << 10)
        before.append((r.rc, report_codes(r) if args[0] == "check" else strict_json(r.out).get("verdict",
                                                                                                 r.rc)))
    pkg = copy_tree(ctx)
    path = pkg / "compat" / fname
    if kind == "huge_17m":
        with open(path, "ab") as f:
            line = b"# " + b"x" * 1000 + b"\n"
            for _ in range(17 * 1024):
                f.write(line)
    elif kind == "empty":
        path.write_bytes(b"")
    else:
        spoil(path, kind, 2021)
    m = _gd_machine(ctx, pkg, "m")
    for (args, (rc0, what0)) in zip(runs, before):
        r = run_capped(m, args, timeout=45)
        hold16(r, True, (0, 1, 2), secs=30, out_max=4 << 20, err_max=64 << 10)
        if r.rc == 2:
            d = strict_json(r.out)
            code = (d.get("error") or {}).get("code") if isinstance(d.get("error"), dict) else None
            expect(code == "CD012", f"{fname} damaged ({kind}): exit 2 with {code!r}, README says CD012: {r!r}")
        else:
            what = report_codes(r) if args[0] == "check" else strict_json(r.out).get("verdict", r.rc)
            expect(r.rc == rc0 and what == what0,
                   f"{fname} damaged ({kind}): {' '.join(args[:2])} neither refused (CD012) nor as before: exit "
                   f"{r.rc} (before {rc0}), {str(what)[:200]} (before {str(what0)[:200]})")
        t = run_capped(m, [a for a in args if a != "--json"], timeout=45)
        hold16(t, False, (0, 1, 2), secs=30, out_max=1 << 20, err_max=64 << 10)
        text_ok(t)
        expect(t.rc == r.rc, f"text and JSON disagree: exit {t.rc} and {r.rc}")
        if t.rc == 2:
            one_error_line(t)
    left = leftovers_of(m.base)
    reap(m.base)
    expect(not left, f"processes left: {left[:2]}")


family("gpudata", "table", {f"{f}-{k}": (f, k) for f in GPUDATA_FILES
                            for k in GPUDATA_KINDS + GPUDATA_EXTRA.get(f, ())}, gpudata_case, limit=120)
CLASSES["gpudata"] = ("check (two GPUs, NCCL set) where one compat/ table no round damaged (multi_gpu, "
                      "platforms, gpu_support, status_codes, libraries, first_use, cudnn, cuda, fixes, "
                      "process_start) is binary, UTF-16, a FIFO, of wrong types, invalid, 17 MiB, empty, a loop, a "
                      "folder: CD012 in one line, or the answer as before")


# ==================================================================================================================== fleettopo
# README "fleet merge compares each node's links (its pairs' paths, counted by kind), NVLinks up, maximum PCIe links
# and all-reduce bandwidth": three nodes' reports (two NVSwitch nodes of 2 H100 alike) where the third's multi_gpu
# section differs for real (links down, PCIe 4, no NVLink: named in the drift) or holds hostile values (escapes and
# workflow commands in a pair's path, 100,000 pairs, wrong types, numbers past 2^53, NaN, 10 MB strings).
def _deepl(n: int) -> object:
    x: object = 1
    for _ in range(n):
        x = [x]
    return x


TOPO_KINDS = {  # key: (the third node's NVML readings or None (the good node's), a change of its multi_gpu, verdict)
    "links_down_6": ({"NVLINKS_DOWN": 6}, None, "drift"),
    "pcie_gen4": ({"PCIE_GEN_MAX": 4, "PCIE_GEN": 4}, None, "drift"),
    "no_nvlink": ({"NVLINKS": 0, "NVSWITCH": 0}, None, "drift"),
    "same": (None, None, "same"),
    "path_newline_wf": (None, lambda mg: mg["pairs"][0].update(path="NV18\n::error title=pwn::owned"), "either"),
    "path_cr_wf": (None, lambda mg: mg["pairs"][0].update(path="NV18\r::warning::owned"), "either"),
    "path_escapes": (None, lambda mg: mg["pairs"][0].update(path="NV18\x1b]0;owned\x07\x1b[2J\x9b31m"), "either"),
    "path_bidi": (None, lambda mg: mg["pairs"][0].update(path="\u202e81VN\u2066"), "either"),
    "path_10mb": (None, lambda mg: mg["pairs"][0].update(path="NV" + "8" * (10 << 20)), "either"),
    "path_number": (None, lambda mg: mg["pairs"][0].update(path=18), "either"),
    "pairs_100k": (None, lambda mg: mg.update(pairs=mg["pairs"] * 100000), "either"),
    "pairs_object": (None, lambda mg: mg.update(pairs={"0-1": "NV18"}), "either"),
    "pairs_null": (None, lambda mg: mg.update(pairs=None), "either"),
    "pair_entry_string": (None, lambda mg: mg.update(pairs=["NV18"]), "either"),
    "pair_nvlinks_2p64": (None, lambda mg: mg["pairs"][0].update(nvlinks=2 ** 64), "either"),
    "pair_nvlinks_negative": (None, lambda mg: mg["pairs"][0].update(nvlinks=-18), "either"),
    "pair_peak_1e308": (None, lambda mg: mg["pairs"][0].update(peak_gbs=1e308), "either"),
    "gpu_nvlinks_active_2p63": (None, lambda mg: mg["gpus"][0].update(nvlinks_active=2 ** 63), "either"),
    "gpu_nvlinks_active_above": (None, lambda mg: mg["gpus"][0].update(nvlinks_active=40), "either"),
    "gpu_nvlinks_expected_zero": (None, lambda mg: mg["gpus"][0].update(nvlinks_expected=0), "either"),
    "gpu_nvlinks_active_string": (None, lambda mg: mg["gpus"][0].update(nvlinks_active="18 of 18"), "either"),
    "gpu_nvlinks_list_100k": (None, lambda mg: mg["gpus"][0].update(nvlinks=mg["gpus"][0]["nvlinks"] * 6000),
                              "either"),
    "gpu_pcie_width_string": (None, lambda mg: mg["gpus"][0].update(pcie_width_max="x16"), "either"),
    "gpu_pcie_gen_2p53_plus1": (None, lambda mg: mg["gpus"][0].update(pcie_generation_max=2 ** 53 + 1), "either"),
    "gpu_pcie_gen_bool": (None, lambda mg: mg["gpus"][0].update(pcie_generation_max=True), "either"),
    "gpus_50k": (None, lambda mg: mg.update(gpus=mg["gpus"] * 25000), "either"),
    "gpus_deep_10k": (None, lambda mg: mg.update(gpus="@@DEEP10K@@"), "either"),
    "multi_gpu_list": (None, lambda mg: (mg.clear(), mg.update(x=[1])), "either"),
    "allreduce_nan_text": (None, lambda mg: mg.update(allreduce={"ok": True, "bus_bandwidth_bytes_per_second": "NaN",
                                                                "world_size": 2}), "either"),
    "allreduce_huge": (None, lambda mg: mg.update(allreduce={"ok": True, "bus_bandwidth_bytes_per_second": 1e308,
                                                            "algbw_gbs": -1, "world_size": 2 ** 60}), "either"),
    "allreduce_escape_error": (None, lambda mg: mg.update(allreduce={"ok": False, "error": "x\n::error title=pwn::"
                                                                                          "owned\x1b[2J"}), "either"),
}


def _topo_report(ctx: Ctx, name: str, extra: dict | None) -> dict:
    m = health_machine(ctx, gpus=2, health={"PCI": 1, "NVLINKS": 18, "NVSWITCH": 1, **(extra or {})}, name=name)
    r = run_capped(m, ["check", "--json"], timeout=45)
    hold16(r, True, (0, 1), secs=30, out_max=4 << 20, err_max=64 << 10)
    return strict_json(r.out)


def fleettopo_case(ctx: Ctx, key: str) -> None:
    extra, change, verdict = TOPO_KINDS[key]
    good = _topo_report(ctx, "g", None)
    third = _topo_report(ctx, "t", extra) if extra is not None else json.loads(json.dumps(good))
    if change is not None:
        change(third["multi_gpu"])
    rd = ctx.work / "reports"
    rd.mkdir()
    for i, rep in enumerate((good, good, third)):
        rep = dict(rep)
        rep["host"] = {**rep.get("host", {}), "hostname": f"gpu-0{i + 1}"}
        # the cuDNN folders of the machines differ by name only: the same for each node
        text = json.dumps(rep).replace(str(ctx.work / "t"), str(ctx.work / "g"))
        text = text.replace('"@@DEEP10K@@"', "[" * 10000 + "1" + "]" * 10000)
        (rd / f"gpu-0{i + 1}.json").write_text(text)
    m = ctx.machine("fleet")
    j = run_capped(m, ["fleet", "merge", str(rd), "--json"], timeout=60)
    hold16(j, True, (0, 1), secs=30, out_max=4 << 20, err_max=64 << 10)
    d = strict_json(j.out)
    failed = d.get("failed") if isinstance(d.get("failed"), list) else []
    expect(d.get("nodes") == 3 or (d.get("nodes") == 2 and len(failed) == 1),
           f"three reports are not three nodes: nodes={d.get('nodes')!r}, failed={str(failed)[:200]}")
    t = run_capped(m, ["fleet", "merge", str(rd)], timeout=60)
    hold16(t, False, (0, 1), secs=30, out_max=1 << 20, err_max=64 << 10)
    text_ok(t)
    no_injected_workflow(t.out + t.err)
    drift = d.get("drift") if isinstance(d.get("drift"), list) else []
    topo = [x for x in drift if isinstance(x, dict) and str(x.get("field", "")).startswith("multi_gpu")]
    if verdict == "drift":
        named = [x for x in topo if any(isinstance(o, dict) and o.get("node") == "gpu-03"
                                        for o in x.get("outliers", []))]
        expect(named, f"the third node's links differ ({key}) and no multi_gpu drift names it: "
                      f"{[x.get('field') for x in drift]}")
        expect(j.rc == 1, f"a node differs and exit {j.rc}")
    elif verdict == "same":
        expect(not topo and not failed, f"three alike nodes: drift {str(topo)[:200]}, failed {str(failed)[:200]}")


family("fleettopo", "third", {k: k for k in TOPO_KINDS}, fleettopo_case, limit=100)
CLASSES["fleettopo"] = ("fleet merge of three 2-GPU NVSwitch nodes whose third differs in its links for real (NVLinks "
                        "down, PCIe 4, no NVLink: named in the drift) or holds hostile multi_gpu values (escapes and "
                        "workflow commands in a pair's path, 100,000 pairs, 50,000 GPUs, wrong types, 2^64, 1e308, "
                        "NaN text, 10 MB, 10,000 deep)")


# ==================================================================================================================== benchcc
# README "Benchmarking cuDNN": the CPU baseline is a small C file that bench builds once per machine with its C
# compiler (`cc`, `gcc`, `clang` or `$CC`) into the cache folder; without one NumPy computes it and the `CPU ms:` line
# says so and why; the compiler runs through the doctor's child runner within CUDNN_DOCTOR_BENCH_TIMEOUT. $CC hostile:
# shell syntax, flags, a newline and a workflow command, escapes, paths of the wrong kind, and programs that answer
# oddly (succeed without writing the library, print escapes and workflow commands, die by SIGSEGV, flood).
CC_VALUES = {
    "flags": "gcc -O2 -fno-strict-aliasing", "ccache": "ccache gcc", "semicolon": "gcc;touch MARK",
    "dollar_paren": "$(touch MARK)gcc", "backticks": "`touch MARK`", "pipe_and": "gcc && touch MARK || touch MARK",
    "newline_wf": "gcc\n::error title=pwn::owned", "escapes": "gcc\x1b]0;owned\x07\x1b[2J", "bidi": "\u202ecc",
    "empty": "", "spaces": "   ", "missing_abs": "/nonexistent/bin/cc", "relative": "tools/cc", "folder": "@folder",
    "fifo": "@fifo", "not_executable": "@noexec", "silent_success": "@silent", "noisy_fails": "@noisy",
    "dies_by_segv": "@segv", "floods": "@floods", "tilde": "~/bin/cc", "glob": "/usr/bin/gc?",
}


def _cc_value(m: M, key: str) -> str:
    v = CC_VALUES[key]
    if not v.startswith("@"):
        return v
    tools = m.base / "tools"
    tools.mkdir(exist_ok=True)
    p = tools / f"cc-{key}"
    if v == "@folder":
        p.mkdir()
    elif v == "@fifo":
        os.mkfifo(p)
    elif v == "@noexec":
        p.write_text("#!/bin/sh\nexec gcc \"$@\"\n")
        p.chmod(0o644)
    else:
        body = {"@silent": "exit 0\n",
                "@noisy": "printf '\\033]0;owned\\007\\n::error title=pwn::owned\\n\\033[2J\\302\\233x\\n' >&2\nexit 1\n",
                "@segv": "kill -SEGV $$\n",
                "@floods": "head -c 20000000 /dev/zero | tr '\\0' 'x' >&2\nexit 1\n"}[v]
        p.write_text("#!/bin/sh\n" + body)
        p.chmod(0o755)
    return str(p)


def _bench_view(d: dict) -> tuple:
    res = d.get("results") if isinstance(d.get("results"), list) else []
    return (tuple(sorted(str(f.get("code")) for f in d.get("findings", []) if isinstance(f, dict))),
            tuple((x.get("workload"), x.get("check") if not isinstance(x.get("check"), dict) else
                   x["check"].get("status", str(x["check"]))) for x in res if isinstance(x, dict)))


def benchcc_case(ctx: Ctx, key: str) -> None:
    m, args = bench_machine(ctx)
    m.env["CUDNN_DOCTOR_BENCH_TIMEOUT"] = "25"
    cache = Path(m.env["CUDNN_DOCTOR_CACHE_DIR"])
    h = hashlib.sha256()
    for p in sorted((ctx.tree / "cudnn_doctor").rglob("*.py")):
        h.update(p.read_bytes())
    saved = BUILD / "benchcc" / f"base-{h.hexdigest()[:16]}.json"
    if saved.exists():
        base_rc, base_view = json.loads(saved.read_text())
    else:
        b = run_capped(m, args, timeout=60)
        hold16(b, True, (0, 1), secs=40, out_max=1 << 20, err_max=64 << 10)
        base_rc, base_view = b.rc, _bench_view(strict_json(b.out))
        saved.parent.mkdir(parents=True, exist_ok=True)
        tmp = saved.parent / f"{saved.name}.{os.getpid()}"
        tmp.write_text(json.dumps([base_rc, base_view]))
        os.replace(tmp, saved)
        shutil.rmtree(cache, ignore_errors=True)
    base_view = json.loads(json.dumps(base_view))
    cc_env = {"CC": _cc_value(m, key)}
    r = run_capped(m, args, timeout=70, env=cc_env)
    hold16(r, True, (0, 1), secs=45, out_max=1 << 20, err_max=64 << 10)
    got = json.loads(json.dumps(_bench_view(strict_json(r.out))))
    expect(r.rc == base_rc and got == base_view,
           f"CC={cc_env['CC']!r}: the bench's answer differs from the one with the machine's own compiler: exit "
           f"{r.rc} (was {base_rc}), {str(got)[:300]} (was {str(base_view)[:300]})")
    shutil.rmtree(cache, ignore_errors=True)
    t = run_capped(m, [a for a in args if a != "--json"], timeout=70, env=cc_env)
    hold16(t, False, (0, 1), secs=45, out_max=1 << 20, err_max=64 << 10)
    text_ok(t)
    no_injected_workflow(t.out + t.err)
    expect(t.rc == r.rc, f"text and JSON disagree: exit {t.rc} and {r.rc}")
    expect(re.search(r"^\s*CPU ms:", t.out, re.M), "no CPU ms: line (README: it says how the baseline was made)")
    no_marks21(m.base)
    left = leftovers_of(m.base)
    reap(m.base)
    expect(not left, f"processes left: {left[:2]}")


family("benchcc", "cc", {k: k for k in CC_VALUES}, benchcc_case, limit=160)
CLASSES["benchcc"] = ("bench (tiny, one repeat, the tree's fake cuDNN and CUDA runtime) with $CC holding shell syntax, "
                      "flags, a newline and a workflow command, escapes, bidi, nothing, paths of the wrong kind, or "
                      "naming a compiler that succeeds without output, prints escapes, dies by SIGSEGV, floods")


# ==================================================================================================================== fleetkeep
# README "Slurm": `--keep DIR` keeps the reports, one NODE.json per node named as Slurm names the node, renamed into
# DIR at the end (srun writes into a new folder of the doctor's own, so nothing already in DIR, a FIFO say, can block
# it). DIR holding things of the wrong kind where a report goes (a FIFO, a folder, a link to a user's file or to
# nowhere outside), older reports beside a user's own file, DIR itself of the wrong kind; nodes named oddly by Slurm
# (a dash, a dot, a newline and a workflow command, escapes, bidi, a space, a glob); two runs at once into one DIR.
FLEETKEEP_SRUN = r"""#!/bin/sh
out=""
for a in "$@"; do case "$a" in --output=*) out="${a#--output=}";; esac; done
dir=$(dirname "$out")
exec "$REDTEAM_PY" -c '
import os, shutil, sys, time
d, good = sys.argv[1], sys.argv[2]
time.sleep(float(os.environ.get("REDTEAM_SRUN_SLEEP", "0")))
for n in os.environ["REDTEAM_NODE_NAMES"].split("\x1f"):
    shutil.copyfile(good, os.path.join(d, n + ".json"))
' "$dir" "$REDTEAM_GOOD"
"""
KEEP_CONTENT = ("fifo_named_node", "folder_named_node", "link_to_user_file", "link_dangling_outside",
                "older_reports_and_notes", "dir_is_file", "dir_is_fifo", "dir_dangling_link", "dir_parent_missing",
                "dir_link_to_folder", "socket_named_node", "hardlink_to_user_file")
KEEP_NAMES = {"dash": "-rf", "dot_hidden": ".hidden", "newline_wf": "a\n::error title=pwn::owned",
              "escapes": "n\x1b]0;owned\x07\x1b[2J", "bidi": "\u202egpu-01", "space": "gpu 01", "glob": "gpu-*",
              "dots": "..", "backslash": "gpu\\01"}
KEEP_CONCURRENT = ("together", "offset_02", "offset_05")


def _keep_machine(ctx: Ctx, names: list[str], sleep: float = 0.0) -> tuple[M, dict, Path, Path, str]:
    m = healthy(ctx)
    good = m.base / "good.json"
    good.write_text(json.dumps(_good_report(m)))
    bindir = m.base / "bin"
    bindir.mkdir()
    (bindir / "srun").write_text(FLEETKEEP_SRUN)
    (bindir / "srun").chmod(0o755)
    (bindir / "scancel").write_text("#!/bin/sh\nexit 0\n")
    (bindir / "scancel").chmod(0o755)
    m.env["PATH"] = f"{bindir}:{m.env['PATH']}"
    env = {"REDTEAM_GOOD": str(good), "REDTEAM_NODE_NAMES": "\x1f".join(names), "REDTEAM_PY": "/usr/bin/python3",
           "REDTEAM_SRUN_SLEEP": str(sleep)}
    outside = ctx.work / "outside"
    outside.mkdir()
    user = outside / "mine.json"
    user.write_text('{"the user": "own file"}\n')
    return m, env, outside, user, hashlib.sha256(user.read_bytes()).hexdigest()


def _keep_judge(r: R, want_nodes: int | None = 2) -> None:
    hold16(r, True, (0, 1, 2), secs=30, out_max=1 << 20, err_max=64 << 10)
    no_injected_workflow(r.out + r.err)
    if r.rc == 2:
        json_refusal(r)
    elif want_nodes is not None:
        d = strict_json(r.out)
        expect(d.get("nodes") == want_nodes, f"{want_nodes} nodes answered, the merge counts {d.get('nodes')!r}")


def _keep_dir_whole(keep: Path, user_files: dict) -> None:
    if not keep.is_dir():
        return
    for p in keep.iterdir():
        if p.name in user_files:
            continue
        st = p.lstat()
        expect(stat.S_ISREG(st.st_mode) or p.name in ("gpu-01.json",),
               f"something not a report left in --keep's folder: {p.name!r} ({stat.S_IFMT(st.st_mode):o})")
        if stat.S_ISREG(st.st_mode):
            expect(p.name.endswith(".json"), f"a file that is no NODE.json left in --keep's folder: {p.name!r}")
            strict_json(utf8_strict(p.read_bytes(), f"the kept report {p.name!r}"))
    for name, h in user_files.items():
        p = keep / name
        expect(p.is_file() and hashlib.sha256(p.read_bytes()).hexdigest() == h,
               f"the user's own file {name!r} in --keep's folder was changed")


def fleetkeep_content_case(ctx: Ctx, kind: str) -> None:
    m, env, outside, user, uh = _keep_machine(ctx, ["gpu-01", "gpu-02"])
    keep = m.base / "reports"
    user_files: dict = {}
    if kind.startswith("dir_"):
        if kind == "dir_is_file":
            keep.write_text("not a folder\n")
        elif kind == "dir_is_fifo":
            os.mkfifo(keep)
        elif kind == "dir_dangling_link":
            keep.symlink_to(outside / "nowhere")
        elif kind == "dir_parent_missing":
            keep = m.base / "no" / "such" / "reports"
        elif kind == "dir_link_to_folder":
            (outside / "kept").mkdir()
            keep.symlink_to(outside / "kept")
    else:
        keep.mkdir()
        spot = keep / "gpu-01.json"
        if kind == "fifo_named_node":
            os.mkfifo(spot)
        elif kind == "folder_named_node":
            spot.mkdir()
            (spot / "inside.txt").write_text("x\n")
        elif kind == "link_to_user_file":
            spot.symlink_to(user)
        elif kind == "link_dangling_outside":
            spot.symlink_to(outside / "made-through-link.json")
        elif kind == "hardlink_to_user_file":
            os.link(user, spot)
        elif kind == "socket_named_node":
            here = os.getcwd()
            os.chdir(keep)
            try:
                s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                s.bind(spot.name)
                s.close()
            finally:
                os.chdir(here)
        elif kind == "older_reports_and_notes":
            spot.write_text('{"schema": "cudnn-doctor/report/1", "old": true}\n')
            (keep / "notes.txt").write_text("the user's notes\n")
            user_files["notes.txt"] = hashlib.sha256(b"the user's notes\n").hexdigest()
    before_outside = sorted(p.name for p in outside.rglob("*"))
    r = run_capped(m, ["fleet", "run", "--slurm", "--json", "--deadline", "20", "--keep", str(keep)], timeout=45,
                   env=env)
    _keep_judge(r, 2 if not kind.startswith("dir_") else None)
    kept(user, uh)
    after_outside = sorted(p.name for p in outside.rglob("*"))
    if kind != "dir_link_to_folder":
        expect(after_outside == before_outside, f"files made outside --keep's folder: "
                                                f"{sorted(set(after_outside) - set(before_outside))[:3]}")
    if r.rc == 0 and not kind.startswith("dir_"):
        got = keep / "gpu-02.json"
        expect(got.is_file(), "exit 0 with --keep and gpu-02's report not kept")
    _keep_dir_whole(keep.resolve() if keep.is_symlink() and keep.exists() else keep, user_files)
    left = leftovers_of(m.base)
    reap(m.base)
    expect(not left, f"processes left: {left[:2]}")


def fleetkeep_name_case(ctx: Ctx, key: str) -> None:
    name = KEEP_NAMES[key]
    m, env, outside, user, uh = _keep_machine(ctx, ["gpu-02", name])
    keep = m.base / "reports"
    keep.mkdir()
    (keep / "notes.txt").write_text("the user's notes\n")
    r = run_capped(m, ["fleet", "run", "--slurm", "--json", "--deadline", "20", "--keep", str(keep)], timeout=45,
                   env=env)
    _keep_judge(r, 2)
    t_dir = m.base / "reports-text"
    t_dir.mkdir()
    t = run_capped(m, ["fleet", "run", "--slurm", "--deadline", "20", "--keep", str(t_dir)], timeout=45, env=env)
    hold16(t, False, (0, 1, 2), secs=30, out_max=1 << 20, err_max=64 << 10)
    text_ok(t)
    no_injected_workflow(t.out + t.err)
    kept(user, uh)
    expect(sorted(p.name for p in outside.iterdir()) == ["mine.json"], "a file made outside --keep's folder")
    _keep_dir_whole(keep, {"notes.txt": hashlib.sha256(b"the user's notes\n").hexdigest()})
    if r.rc == 0:
        expect(len([p for p in keep.iterdir() if p.name != "notes.txt"]) == 2,
               f"two nodes answered, --keep holds {sorted(p.name for p in keep.iterdir())!r}")
    left = leftovers_of(m.base)
    reap(m.base)
    expect(not left, f"processes left: {left[:2]}")


def fleetkeep_concurrent_case(ctx: Ctx, key: str) -> None:
    m, env, outside, user, uh = _keep_machine(ctx, ["gpu-01", "gpu-02", "gpu-03"], sleep=0.5)
    keep = m.base / "reports"
    keep.mkdir()
    (keep / "notes.txt").write_text("the user's notes\n")
    delay = {"together": 0.0, "offset_02": 0.2, "offset_05": 0.5}[key]
    argv = m.argv("fleet", "run", "--slurm", "--json", "--deadline", "20", "--keep", str(keep))
    procs = []
    for i in range(2):
        if i:
            time.sleep(delay)
        procs.append(subprocess.Popen(argv, env={**m.env, **env}, cwd=str(m.cwd), stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE, start_new_session=True, preexec_fn=cap_as(2048)))
    results = []
    t0 = time.monotonic()
    for p in procs:
        try:
            out, err = p.communicate(timeout=45)
        except subprocess.TimeoutExpired:
            kill_group(p.pid)
            raise Fail("hang: a fleet run with another into the same --keep folder") from None
        results.append(R(p.returncode, out, err, time.monotonic() - t0))
    for r in results:
        _keep_judge(r, 3)
    expect(any(r.rc == 0 for r in results), f"neither of two runs into one --keep folder succeeded: {results!r}")
    _keep_dir_whole(keep, {"notes.txt": hashlib.sha256(b"the user's notes\n").hexdigest()})
    names = sorted(p.name for p in keep.iterdir())
    expect(names == ["gpu-01.json", "gpu-02.json", "gpu-03.json", "notes.txt"],
           f"two runs of three nodes into one --keep folder left {names!r}")
    kept(user, uh)
    left = leftovers_of(m.base)
    reap(m.base)
    expect(not left, f"processes left: {left[:2]}")


family("fleetkeep", "content", {k: k for k in KEEP_CONTENT}, fleetkeep_content_case, limit=80)
family("fleetkeep", "node", {k: k for k in KEEP_NAMES}, fleetkeep_name_case, limit=80)
family("fleetkeep", "concurrent", {k: k for k in KEEP_CONCURRENT}, fleetkeep_concurrent_case, limit=80)
CLASSES["fleetkeep"] = ("fleet run --slurm --keep DIR where DIR holds a FIFO, folder, socket, link or hard link to a "
                        "user's file, or older reports beside the user's notes where a report goes, or is a file, "
                        "FIFO, dangling link; nodes Slurm names with a dash, dots, a newline and a workflow command, "
                        "escapes, bidi, a space, a glob; two runs at once into one DIR")

# ####################################################################################################################
# ROUND TWENTY-TWO (second sealed set, g43r22b): round twenty-one's classes are dropped (their helpers stay above);
# the classes below are new
# ####################################################################################################################
CASES.clear()
CLASSES.clear()


def _judge_doc(fmt: str, data: bytes, where: str) -> None:
    """A whole output of FMT (json, prometheus, junit, markdown) in DATA."""
    text = utf8_strict(data, where)
    if fmt == "json":
        strict_json(text)
    elif fmt == "prometheus":
        parse_prometheus(text)
    elif fmt == "junit":
        expect(not XML_ILLEGAL.search(text), f"{where}: a character XML 1.0 forbids")
        try:
            ET.fromstring(data)
        except ET.ParseError as e:
            raise Fail(f"{where}: the JUnit XML does not parse: {e}") from None
    elif fmt == "markdown":
        md_tables_whole(text)


def _no_leftovers(m: M) -> None:
    left = leftovers_of(m.base)
    reap(m.base)
    expect(not left, f"processes left: {left[:2]}")


# ==================================================================================================================== deepfiles
# check --deep where one file of the torch (or jax) install is of a hostile kind
DEEP_TARGETS = {
    "torch_init": "torch/__init__.py", "torch_version": "torch/version.py",
    "torch_metadata": "torch-2.11.0+cu130.dist-info/METADATA", "torch_libcuda": "torch/lib/libtorch_cuda.so",
    "cudnn_lib": "nvidia/cudnn/lib/libcudnn.so.9", "torch_folder": "torch", "jax_metadata": None,
}
DEEP_KINDS = ("fifo", "sparse_8g", "nonutf8", "utf16", "loop", "dangling", "devzero", "folder")


def _hostile_at(path: Path, kind: str, seed: int) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    elif path.exists() or path.is_symlink():
        path.unlink()
    path.parent.mkdir(parents=True, exist_ok=True)
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "sparse_8g":
        with open(path, "wb") as f:
            f.truncate(8 << 30)
    elif kind == "big_24m":
        rnd = random.Random(f"2022b-big-{seed}")
        line = ("__version__ = '2.11.0+cu130'  # " + "x" * 90 + "\n").encode()
        with open(path, "wb") as f:
            for _ in range((24 << 20) // len(line)):
                f.write(line)
            f.write(bytes(rnd.randrange(256) for _ in range(4096)))
    elif kind == "nonutf8":
        rnd = random.Random(f"2022b-bin-{seed}")
        path.write_bytes(b"__version__ = '2.11.0\xff\xfe+cu130'\n" + bytes(rnd.randrange(128, 256) for _ in range(3000)))
    elif kind == "utf16":
        path.write_bytes("__version__ = '2.11.0+cu130'\nName: torch\nVersion: 2.11.0+cu130\n".encode("utf-16"))
    elif kind == "loop":
        os.symlink(path.name, path)
    elif kind == "dangling":
        os.symlink("/nonexistent/redteam22b/missing", path)
    elif kind == "devzero":
        os.symlink("/dev/zero", path)
    elif kind == "folder":
        path.mkdir()
        (path / "inner").write_text("x")


def _deep_machine(ctx: Ctx) -> tuple[M, Path]:
    m = ctx.machine()
    site = torch_machine(ctx, m)
    info = site / "jax_cuda12_plugin-0.6.2.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: jax-cuda12-plugin\nVersion: 0.6.2\n"
                                   "Requires-Dist: nvidia-cudnn-cu12<10.0,>=9.8; extra == \"with-cuda\"\n")
    (site / "jax_plugins" / "xla_cuda12").mkdir(parents=True)
    m.env["CUDNN_DOCTOR_HELPER_TIMEOUT"] = "3"
    m.env["CUDNN_DOCTOR_DEEP_TIMEOUT"] = "5"
    return m, site


def _deep_judge(m: M, r: R, want_json: bool, secs: float = 40) -> None:
    d = hold16(r, want_json, (0, 1), secs=secs, out_max=4 << 20, err_max=64 << 10) or {}
    if want_json:
        expect(isinstance(d.get("gpus"), list) and len(d["gpus"]) == 1,
               f"the report lost its GPU: {json.dumps(d.get('gpus'))[:200]}")
    else:
        no_workflow(r.out)
        expect("NVIDIA driver" in r.out, f"the text lost the driver line: {r.out[:300]!r}")
    no_marks(m.base)
    _no_leftovers(m)


def deepfiles_case(ctx: Ctx, arg: tuple) -> None:
    target, kind, want_json = arg
    m, site = _deep_machine(ctx)
    rel = DEEP_TARGETS[target] or "jax_cuda12_plugin-0.6.2.dist-info/METADATA"
    _hostile_at(site / rel, kind, hash(target) & 0xffff)
    args = ["check", "--deep"] + (["--json"] if want_json else [])
    r = m.run(*args, timeout=60, preexec=cap_as(2048))
    _deep_judge(m, r, want_json)


family("deepfiles", "file", {f"{t}-{k}": (t, k, (i + j) % 2 == 0) for i, t in enumerate(DEEP_TARGETS)
                             for j, k in enumerate(DEEP_KINDS)}, deepfiles_case, limit=90)
CLASSES["deepfiles"] = ("check --deep where a file of the torch or jax install (torch/__init__.py, version.py, its "
                        "METADATA, libtorch_cuda.so, the cuDNN it loads, jax's METADATA, the torch folder) is a FIFO, "
                        "8 GiB sparse, not UTF-8, UTF-16, a link loop, dangling, /dev/zero, a folder")


# ==================================================================================================================== deepcode
# check --deep where importing torch (its __init__ or the version module it imports) misbehaves
DEEP_CODE = {
    "sleeps": "import time\ntime.sleep(600)\n",
    "spins": "while True:\n    pass\n",
    "ignores_term_sleeps": "import signal, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
                           "signal.signal(signal.SIGINT, signal.SIG_IGN)\ntime.sleep(600)\n",
    "prints_junk": "import sys\nprint('\\x1b]0;owned\\x07\\x1b[2J\\n::error title=pwn::owned\\n\\u202e{\"schema\": \"x\"}')\n"
                   "sys.stderr.write('::warning::owned\\n\\x9b2J')\n",
    "prints_json": "print('{\"schema\": \"cudnn-doctor/report/1\", \"findings\": []}')\n",
    "floods_stdout": "import sys\nsys.stdout.write('A' * (20 << 20))\n",
    "floods_stderr": "import sys\nsys.stderr.write('E' * (20 << 20))\n",
    "exit0": "import os\nos._exit(0)\n",
    "exit137": "import os\nos._exit(137)\n",
    "sigkill_self": "import os, signal\nos.kill(os.getpid(), signal.SIGKILL)\n",
    "segfault": "import ctypes\nctypes.string_at(0)\n",
    "daemon_keeps_stdout": "import os, time\nif os.fork() == 0:\n    os.setsid()\n    if os.fork() == 0:\n"
                           "        time.sleep(60)\n    os._exit(0)\n",
    "reads_stdin": "import sys\nsys.stdin.read()\n",
    "closes_fds": "import os\nfor fd in range(0, 64):\n    try:\n        os.close(fd)\n    except OSError:\n"
                  "        pass\n",
    "memory_4g": "x = bytearray(4 << 30)\n",
    "raises_systemexit_text": "raise SystemExit('::error title=pwn::owned\\x1b[2J')\n",
    "recursion": "import sys\nsys.setrecursionlimit(1000000)\ndef f(n):\n    return f(n + 1)\nf(0)\n",
    "stops_itself": "import os, signal\nos.kill(os.getpid(), signal.SIGSTOP)\n",
}


def deepcode_case(ctx: Ctx, arg: tuple) -> None:
    where, mode, want_json = arg
    m, site = _deep_machine(ctx)
    code = DEEP_CODE[mode]
    init = site / "torch" / "__init__.py"
    if where == "init":
        init.write_text(code + GOOD_TORCH)
    else:
        (site / "torch" / "version.py").write_text(code + "__version__ = '2.11.0+cu130'\ncuda = '13.0'\n")
        init.write_text("from .version import __version__\n" + GOOD_TORCH.replace('__version__ = "2.11.0+cu130"\n', ""))
    args = ["check", "--deep"] + (["--json"] if want_json else [])
    r = m.run(*args, timeout=60, preexec=cap_as(2048))
    _deep_judge(m, r, want_json, secs=45)


family("deepcode", "import", {f"{w}-{k}": (w, k, (i + j) % 2 == 0) for i, w in enumerate(("init", "version"))
                              for j, k in enumerate(DEEP_CODE)}, deepcode_case, limit=100)
CLASSES["deepcode"] = ("check --deep where importing torch (its __init__, or the version module it imports) sleeps, "
                       "spins, ignores SIGTERM, prints escapes/workflow commands/a report, floods, exits, dies by "
                       "signal, leaves a daemon on its stdout, reads stdin, closes its fds, asks 4 GiB, recurses, "
                       "stops itself")


# ==================================================================================================================== fixdeep
def fixdeep_case(ctx: Ctx, arg: tuple) -> None:
    what, shell = arg
    m, site = _deep_machine(ctx)
    if what in DEEP_CODE:
        (site / "torch" / "__init__.py").write_text(DEEP_CODE[what] + GOOD_TORCH)
    else:
        target, kind = what.split(":")
        _hostile_at(site / DEEP_TARGETS[target], kind, 7)
    before = snapshot_tree(m.root)
    home_before = snapshot_tree(m.home)
    args = ["fix", "--json"] if shell == "json" else ["fix", "--shell", shell]
    r = m.run(*args, timeout=60, preexec=cap_as(2048))
    d = hold16(r, shell == "json", (0, 1), secs=45, out_max=2 << 20, err_max=64 << 10) or {}
    if shell == "json":
        expect(str(d.get("schema", "")).startswith("cudnn-doctor/plan/"), f"not a plan: {str(d)[:200]}")
    else:
        no_workflow(r.out)
        no_raw_controls13(strip_sgr(r.out), "stdout")
    expect(snapshot_tree(m.root) == before, "fix without --yes changed the machine's files")
    expect(snapshot_tree(m.home) == home_before, "fix without --yes changed HOME")
    no_marks(m.base)
    _no_leftovers(m)


FIXDEEP = [f"{t}:{k}" for t in ("torch_metadata", "torch_version", "torch_init") for k in
           ("fifo", "sparse_8g", "nonutf8", "loop", "devzero", "folder")] + \
          ["sleeps", "ignores_term_sleeps", "prints_junk", "floods_stdout", "daemon_keeps_stdout", "segfault"]
family("fixdeep", "fix", {f"{w.replace(':', '-')}-{s}": (w, s) for i, w in enumerate(FIXDEEP)
                          for s in ((("json", "bash", "json", "fish", "json", "powershell")[i % 6],))},
       fixdeep_case, limit=90)
CLASSES["fixdeep"] = ("fix --json and fix --shell bash/fish/powershell where a torch file is a FIFO, 8 GiB sparse, "
                      "not UTF-8, a loop, /dev/zero, a folder, or importing torch sleeps, ignores SIGTERM, prints "
                      "junk, floods, leaves a daemon, dies by SIGSEGV")


# ==================================================================================================================== killinst
# install --yes of the tree's cuDNN archive over a prefix with the user's files, killed at a seeded instant; the next
# run (install again, or uninstall) must recover or say what happened; nothing half-written after it
KILL_SIGS = {"KILL": signal.SIGKILL, "TERM": signal.SIGTERM, "INT": signal.SIGINT}


def _run_killed(argv: list[str], env: dict, cwd: Path, delay: float, sig: int, timeout: float = 50) -> R:
    start = time.monotonic()
    proc = subprocess.Popen(argv, env=env, cwd=str(cwd), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, start_new_session=True)
    time.sleep(delay)
    try:
        os.killpg(proc.pid, sig) if sig != signal.SIGKILL else os.kill(proc.pid, sig)
    except OSError:
        pass
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        kill_group(proc.pid)
        out, err = proc.communicate(timeout=5)
        raise Fail(f"hang: the run signalled {sig} at {delay:.2f} s did not end in {timeout} s") from None
    kill_group(proc.pid)
    return R(proc.returncode, out, err, time.monotonic() - start)


def _duration(ctx: Ctx, kind: str) -> float:
    """How long one uninterrupted run of KIND takes here now (on a prefix of its own, as the case's): the seeded
    instants are fractions of it, so that they fall across the whole run whatever the machine's load."""
    sub = Ctx(ctx.tree, ctx.work / "timing")
    sub.work.mkdir(parents=True, exist_ok=True)
    env = install_env(sub)
    prefix = prefix_with_old(sub)
    a19 = archive(ctx)
    if kind == "install":
        r = run_proc(cli_argv("install", "--from", str(a19), "--prefix", str(prefix), "--yes"), env, ctx.tree, 60)
    else:
        first = archive(ctx, 91800) if kind == "replace" else a19
        run_proc(cli_argv("install", "--from", str(first), "--prefix", str(prefix), "--yes"), env, ctx.tree, 60)
        argv = cli_argv("install", "--from", str(a19), "--prefix", str(prefix), "--yes", "--replace") \
            if kind == "replace" else cli_argv("uninstall", "--prefix", str(prefix), "--yes")
        r = run_proc(argv, env, ctx.tree, 60)
    expect(r.rc == 0, f"harness: the timing run of {kind} failed: {r!r}")
    shutil.rmtree(sub.work, ignore_errors=True)
    return r.secs


def _judge_signalled(r: R, sig: int) -> None:
    # a run that ended by itself before the signal holds as any run; one signalled ends without a traceback
    for word in BAD_WORDS:
        expect(word not in r.err and word not in r.out, f"{word!r} after the signal: {r!r}")
    if sig != signal.SIGKILL:
        expect(r.rc in (0, 1, 2, 130, 143, -2, -15), f"exit {r.rc} after signal {sig}: {r!r}")


def killinst_case(ctx: Ctx, arg: tuple) -> None:
    signame, k, nxt = arg
    env = install_env(ctx)
    a = archive(ctx)
    prefix = prefix_with_old(ctx)
    before = inst().snapshot_content(prefix)
    argv = cli_argv("install", "--from", str(a), "--prefix", str(prefix), "--yes")
    delay = random.Random(f"2022b-killinst-{signame}-{k}").uniform(0.25, 1.0) * _duration(ctx, "install")
    r1 = _run_killed(argv, env, ctx.tree, delay, KILL_SIGS[signame])
    _judge_signalled(r1, KILL_SIGS[signame])
    _user_files_kept(prefix)
    if nxt == "install":
        r2 = run_proc(argv + ["--json"], env, ctx.tree, 60)
        _judge_after(ctx, r2, prefix, before, f"install killed ({signame}) at {delay:.2f} s, then install")
    else:
        r2 = run_proc(cli_argv("uninstall", "--prefix", str(prefix), "--yes", "--json"), env, ctx.tree, 60)
        d = hold16(r2, True, (0, 1, 2), secs=45) or {}
        _user_files_kept(prefix)
        now = user_view(inst().snapshot_content(prefix))
        same = now == user_view(before)
        complete = installed_as_recorded(ctx, prefix)
        if r2.rc == 0:
            expect(same, f"install killed ({signame}) at {delay:.2f} s, then uninstall exit 0, but the prefix is "
                         f"not as before the install: {sorted(set(now) ^ set(user_view(before)))[:5]}")
        else:
            expect(same or complete == [] or re.search(r"journal|roll|interrupt|unfinished|damaged|recover|nothing|"
                                                       r"no install", json.dumps(d), re.I),
                   f"uninstall after a killed install: exit {r2.rc}, a mixed prefix, nothing said: {json.dumps(d)[:300]}")
    # and a check of the prefix's own state after: a third run agrees
    r3 = run_proc(cli_argv("install", "--from", str(a), "--prefix", str(prefix), "--yes", "--json"), env, ctx.tree, 60)
    hold16(r3, True, (0, 1, 2), secs=45)
    _user_files_kept(prefix)
    if r3.rc == 0:
        expect(installed_as_recorded(ctx, prefix) == [], "a later install said done but the prefix is not it")


family("killinst", "at", {f"{s}-{k:02d}-then-{n}": (s, k, n) for s in KILL_SIGS for k in range(5)
                          for n in ("install", "uninstall")}, killinst_case, limit=150)
CLASSES["killinst"] = ("install --yes over a prefix with the user's files, killed (SIGKILL/SIGTERM/SIGINT) at seeded "
                       "instants (seeded fractions of an uninterrupted run timed in the case), then install or uninstall again, "
                       "then install: recovered or said, nothing mixed")


# ==================================================================================================================== killuninst
def killuninst_case(ctx: Ctx, arg: tuple) -> None:
    signame, k = arg
    env = install_env(ctx)
    a = archive(ctx)
    prefix = prefix_with_old(ctx)
    before = inst().snapshot_content(prefix)
    r0 = run_proc(cli_argv("install", "--from", str(a), "--prefix", str(prefix), "--yes", "--json"), env, ctx.tree, 60)
    expect(r0.rc == 0, f"harness: the install did not complete: {r0!r}")
    installed = inst().snapshot_content(prefix)
    delay = random.Random(f"2022b-killuninst-{signame}-{k}").uniform(0.25, 1.0) * _duration(ctx, "uninstall")
    r1 = _run_killed(cli_argv("uninstall", "--prefix", str(prefix), "--yes"), env, ctx.tree, delay, KILL_SIGS[signame])
    _judge_signalled(r1, KILL_SIGS[signame])
    _user_files_kept(prefix)
    r2 = run_proc(cli_argv("uninstall", "--prefix", str(prefix), "--yes", "--json"), env, ctx.tree, 60)
    d = hold16(r2, True, (0, 1, 2), secs=45) or {}
    _user_files_kept(prefix)
    now = user_view(inst().snapshot_content(prefix))
    same = now == user_view(before)
    if r2.rc == 0:
        expect(same, f"uninstall killed ({signame}) at {delay:.2f} s, uninstall again exit 0 but the prefix is not "
                     f"as before the install: {sorted(set(now) ^ set(user_view(before)))[:5]}")
    else:
        expect(same or now == user_view(installed) or re.search(
            r"journal|roll|interrupt|unfinished|damaged|recover|nothing|no install", json.dumps(d), re.I),
               f"uninstall again: exit {r2.rc}, a mixed prefix, nothing said: {json.dumps(d)[:300]}")
    expect((prefix / "lib64" / "libcudnn.so.9.1.0").exists() or not same,
           "the user's old library is gone although the prefix is said to be as before")


family("killuninst", "at", {f"{s}-{k:02d}": (s, k) for s in KILL_SIGS for k in range(5)}, killuninst_case, limit=150)
CLASSES["killuninst"] = ("uninstall --yes of a finished install, killed (SIGKILL/SIGTERM/SIGINT) at seeded instants, "
                         "then uninstall again: the user's files back, or what happened said")


# ==================================================================================================================== killwheel
REAL_WHEEL = Path("/root/.cache/cudnn-doctor-tests/wheels/nvidia_cudnn_cu13-9.19.0.56-py3-none-manylinux_2_27_x86_64.whl")


def killwheel_case(ctx: Ctx, arg: tuple) -> None:
    signame, k = arg
    if not REAL_WHEEL.is_file():
        raise Skip("the real cuDNN wheel is not cached here")
    env = install_env(ctx)
    prefix = prefix_with_old(ctx)
    before = inst().snapshot_content(prefix)
    argv = cli_argv("install", "--from", str(REAL_WHEEL), "--prefix", str(prefix), "--yes")
    delay = random.Random(f"2022b-killwheel-{signame}-{k}").uniform(1.0, 6.0)
    r1 = _run_killed(argv, env, ctx.tree, delay, KILL_SIGS[signame], timeout=90)
    _judge_signalled(r1, KILL_SIGS[signame])
    _user_files_kept(prefix)
    r2 = run_proc(cli_argv("uninstall", "--prefix", str(prefix), "--yes", "--json"), env, ctx.tree, 90)
    d = hold16(r2, True, (0, 1, 2), secs=80) or {}
    _user_files_kept(prefix)
    now = user_view(inst().snapshot_content(prefix))
    same = now == user_view(before)
    complete = installed_as_recorded(ctx, prefix)
    if r2.rc == 0:
        expect(same, f"the real wheel's install killed ({signame}) at {delay:.2f} s, then uninstall exit 0, but the "
                     f"prefix is not as before: {sorted(set(now) ^ set(user_view(before)))[:5]}")
    else:
        expect(same or complete == [] or re.search(r"journal|roll|interrupt|unfinished|damaged|recover|nothing|"
                                                   r"no install", json.dumps(d), re.I),
               f"uninstall after the real wheel's killed install: exit {r2.rc}, mixed, nothing said: "
               f"{json.dumps(d)[:300]}")
    left = [p.name for p in prefix.rglob("*") if re.search(r"\.(tmp|part|partial)$|^\.#", p.name)]
    expect(not left, f"temporary files left in the prefix: {left[:3]}")


family("killinst", "wheel", {f"{s}-{k}": (s, k) for s in KILL_SIGS for k in range(2)}, killwheel_case, limit=240)
CLASSES["killinst"] += ("; and of the real cuDNN 9.19 wheel (366 MB, between 1 and 6 s), then uninstall")


# ==================================================================================================================== fulldisk
# outputs and the cache on a size-limited tmpfs (an unshared mount namespace): full, 1 KiB or 8 KiB free, no inodes
FILLS = {"free0": ("4m", 0, None), "free1k": ("4m", 1024, None), "free8k": ("4m", 8192, None),
         "inodes": ("4m", None, 3)}
OUTS = {"json_o": (["--json", "-o", "OUT"], "json"), "prom_o": (["--format", "prometheus", "-o", "OUT"], "prometheus"),
        "junit_o": (["--format", "junit", "-o", "OUT"], "junit"), "md_o": (["--format", "markdown", "-o", "OUT"], "markdown"),
        "junit_xml": (["--json", "--junit-xml", "OUT"], "junit")}
OLD_REPORT = b"{\"the user's\": \"previous report\"}\n"


def _fill_lines(folder: Path, fill: str) -> list[str]:
    size, free, inodes = FILLS[fill]
    q = shlex.quote(str(folder))
    opts = f"size={size}" + (f",nr_inodes={inodes}" if inodes else "")
    lines = [f"mount -t tmpfs -o {opts} tmpfs {q}"]
    if free is not None:
        lines.append(f"avail=$(( $(stat -f -c '%a*%S' {q}) - {free} )); "
                     f"[ $avail -gt 0 ] && head -c $avail /dev/zero > {q}/filler 2>/dev/null || true")
    return lines


def fulldisk_out_case(ctx: Ctx, arg: tuple) -> None:
    out, fill, old = arg
    m = healthy(ctx)
    folder = m.base / "outdir"
    folder.mkdir()
    copy = m.base / "copied"
    flags, fmt = OUTS[out]
    target = folder / "report.out"
    q = shlex.quote
    setup = _fill_lines(folder, fill)
    if old:
        setup.insert(1, f"printf %s {q(OLD_REPORT.decode())} > {q(str(target))}")
    argv = m.argv("check", *[str(target) if f == "OUT" else f for f in flags])
    script = "; ".join(setup) + f"; {shlex.join(argv)}; rc=$?; mkdir -p {q(str(copy))}; " \
             f"cp -a {q(str(folder))}/. {q(str(copy))}/ 2>/dev/null; exit $rc"
    r = run_proc(["unshare", "-m", "--propagation", "private", "sh", "-c", script], m.env, m.cwd, 60)
    want_json = "--json" in flags
    if r.rc in (0, 1):
        # with -o the report goes to the file and stdout stays empty; with --junit-xml the JSON is still on stdout
        hold16(r, want_json and out == "junit_xml", (0, 1), secs=45, err_max=64 << 10)
        got = copy / "report.out"
        expect(got.is_file(), f"exit {r.rc} but {out} wrote no file on a {fill} disk")
        _judge_doc(fmt, got.read_bytes(), f"{out} on a {fill} disk")
    else:
        hold16(r, want_json, (2, 74), secs=45, err_max=64 << 10)
        if want_json:
            d = one_json(r)
            expect("error" in d or "code" in d, f"exit {r.rc} without an error object: {r.out[:300]}")
        else:
            one_error_line(r)
        got = copy / "report.out"
        if got.exists():
            data = got.read_bytes()
            if old and data == OLD_REPORT:
                pass
            else:
                try:
                    _judge_doc(fmt, data, "the file left")
                except Fail:
                    raise Fail(f"exit {r.rc} on a {fill} disk and {out}'s file half-written "
                               f"({len(data)} bytes; the user's earlier file {'lost' if old else 'absent'})") from None
    extra = [p.name for p in copy.iterdir() if p.name not in ("filler", "report.out")] if copy.is_dir() else []
    expect(not extra, f"files left beside the output on a full disk: {extra[:3]}")
    _no_leftovers(m)


def fulldisk_cache_case(ctx: Ctx, arg: tuple) -> None:
    cmd, fill = arg
    m = healthy(ctx)
    cache = m.base / "cache"
    cache.mkdir(exist_ok=True)
    argvs = {"check_json": ["check", "--json"], "check_text": ["check"], "compat_json": ["compat", "torch==2.5.1", "--json"],
             "explain_json": ["explain", "CD201", "--json"]}
    args = argvs[cmd]
    base = m.run(*args, timeout=60, env={"CUDNN_DOCTOR_CACHE_DIR": str(m.base / "cache2")})
    script = "; ".join(_fill_lines(cache, fill)) + f"; exec {shlex.join(m.argv(*args))}"
    r = run_proc(["unshare", "-m", "--propagation", "private", "sh", "-c", script], m.env, m.cwd, 60)
    want_json = args[-1] == "--json"
    hold16(r, want_json, (base.rc,), secs=45, err_max=64 << 10)
    if want_json:
        a, b = strict_json(base.out), strict_json(r.out)
        expect(codes(a) == codes(b), f"the cache on a {fill} disk changed the findings: {sorted(codes(a) ^ codes(b))}")
    _no_leftovers(m)


def fulldisk_summary_case(ctx: Ctx, fill: str) -> None:
    m = healthy(ctx)
    folder = m.base / "gh"
    folder.mkdir()
    summary = folder / "summary.md"
    q = shlex.quote
    copy = m.base / "copied"
    setup = _fill_lines(folder, fill)
    setup.insert(1, f"printf '# the job so far\\n' > {q(str(summary))}")
    script = "; ".join(setup) + f"; {shlex.join(m.argv('check', '--format', 'github'))}; rc=$?; " \
             f"mkdir -p {q(str(copy))}; cp -a {q(str(folder))}/. {q(str(copy))}/ 2>/dev/null; exit $rc"
    r = run_proc(["unshare", "-m", "--propagation", "private", "sh", "-c", script],
                 {**m.env, "GITHUB_STEP_SUMMARY": str(summary), "GITHUB_ACTIONS": "true"}, m.cwd, 60)
    hold16(r, False, (0, 1, 2, 74), secs=45, err_max=64 << 10)
    if r.rc in (2, 74):
        one_error_line(r)
    text = (copy / "summary.md").read_bytes()
    expect(text.startswith(b"# the job so far\n"), "the job summary written before was lost")
    md_tables_whole(utf8_strict(text, "the job summary"))
    _no_leftovers(m)


family("fulldisk", "out", {f"{o}-{f}-{'old' if old else 'new'}": (o, f, old) for o in OUTS for f in FILLS
                           for old in (False, True)}, fulldisk_out_case, limit=90)
family("fulldisk", "cache", {f"{c}-{f}": (c, f) for c in ("check_json", "check_text", "compat_json", "explain_json")
                             for f in FILLS}, fulldisk_cache_case, limit=90)
family("fulldisk", "summary", {f: f for f in FILLS}, fulldisk_summary_case, limit=90)
CLASSES["fulldisk"] = ("check -o FILE (json, prometheus, junit, markdown), --junit-xml, the cache folder and the GitHub "
                       "job summary on a tmpfs full, with 1 or 8 KiB free, or out of inodes, a user's older file there "
                       "or not")


# ==================================================================================================================== mergesect
# fleet merge of three reports whose third has a section of the wrong shape (sections no round changed)
def _f(**kw: object) -> dict:
    base = {"code": "CD201", "severity": "warning", "title": "t", "detail": "d", "fix": "f"}
    base.update(kw)
    return base


MERGE_SECTS = {
    "cudnn_object": ("cudnn", {"version": "9.1.0"}), "cudnn_strings": ("cudnn", ["9.1.0", "9.19.0"]),
    "cudnn_version_number": ("cudnn", [{"version": 9.1, "path": "/x"}]),
    "cudnn_version_list": ("cudnn", [{"version": ["9", "1"], "path": "/x"}]),
    "cudnn_20000": ("cudnn", [{"version": "9.1.0", "path": f"/lib{i}"} for i in range(20000)]),
    "frameworks_string": ("frameworks", "torch 2.5.1"),
    "frameworks_name_null": ("frameworks", [{"name": None, "version": 2}]),
    "frameworks_version_object": ("frameworks", [{"name": "torch", "version": {"v": "2.5"}}]),
    "toolkits_number": ("toolkits", 12),
    "toolkits_version_bool": ("toolkits", [{"version": True, "path": "/usr/local/cuda"}]),
    "gpus_strings": ("gpus", ["H100", "H100"]),
    "gpus_index_dup": ("gpus", [{"index": 0, "name": "H100"}, {"index": 0, "name": "A100"}]),
    "gpus_index_string": ("gpus", [{"index": "0; rm -rf /", "name": "H100"}]),
    "gpus_index_neg_huge": ("gpus", [{"index": -(2 ** 63), "name": "H100"}]),
    "gpus_name_escape": ("gpus", [{"index": 0, "name": "\x1b]0;owned\x07H100\n::error title=pwn::owned"}]),
    "tool_string": ("tool", "cudnn-doctor 99"), "tool_version_escape": ("tool", {"name": "cudnn-doctor",
                                                                                 "version": "\x1b[2J1.0\u202e"}),
    "summary_list": ("summary", [1, 2]), "summary_counts_strings": ("summary", {"errors": "many", "warnings": -1}),
    "process_string": ("process", "x"), "selection_number": ("selection", 7),
    "loader_path_object": ("loader_path", {"a": 1}), "loader_path_workflow": ("loader_path", ["/x\n::error::owned"]),
    "plan_list": ("plan", [1]), "timings_string": ("timings_ms", "fast"),
    "ignored_object": ("ignored", {"CD201": True}),
    "finding_code_number": ("findings", [_f(code=201)]), "finding_code_null": ("findings", [_f(code=None)]),
    "finding_code_list": ("findings", [_f(code=["CD201"])]),
    "finding_severity_odd": ("findings", [_f(severity="catastrophic")]),
    "finding_severity_number": ("findings", [_f(severity=3)]),
    "finding_fix_object": ("findings", [_f(fix={"cmd": "rm -rf /"})]),
    "finding_title_workflow": ("findings", [_f(title="x\r\n::error title=pwn::owned", detail="\u2028::warning::owned")]),
    "finding_dup_1000": ("findings", [_f() for _ in range(1000)]),
    "finding_detail_8mb": ("findings", [_f(detail="d" * (8 << 20))]),
    "findings_nested": ("findings", [[_f()]]),
    "host_list": ("host", ["gpu-03"]), "driver_list": ("driver", ["580.159.04"]),
}


def mergesect_case(ctx: Ctx, arg: tuple) -> None:
    kind, want_json = arg
    good = _report(ctx)
    d = ctx.work / "reports"
    d.mkdir()
    (d / "n1.json").write_text(json.dumps(_set_host(good, "gpu-01"), indent=1))
    (d / "n2.json").write_text(json.dumps(_set_host(good, "gpu-02"), indent=1))
    key, value = MERGE_SECTS[kind]
    third = _set_host(good, "gpu-03") if key != "host" else json.loads(json.dumps(good))
    third[key] = value
    (d / "n3.json").write_text(json.dumps(third, indent=1))
    m = ctx.machine()
    m.cwd = ctx.work
    args = ["fleet", "merge", str(d)] + (["--json"] if want_json else [])
    r = m.run(*args, timeout=45, preexec=cap_as(2048))
    data = hold16(r, want_json, (0, 1), secs=30, out_max=4 << 20, err_max=64 << 10) or {}
    no_marks(ctx.work)
    if want_json:
        failed = data.get("failed")
        nfail = len(failed) if isinstance(failed, (list, dict)) else 0
        expect(data.get("nodes") == 3 or (data.get("nodes") == 2 and nfail == 1),
               f"three reports: {data.get('nodes')!r} nodes, failed {json.dumps(failed)[:200]}")
    else:
        no_workflow(r.out)
        no_raw_controls13(strip_sgr(r.out), "stdout")
        expect(re.search(r"^[23] node", r.out, re.M), f"the text does not count the nodes: {r.out[:200]!r}")


family("mergesect", "sect", {f"{k}-{'json' if i % 2 == 0 else 'text'}": (k, i % 2 == 0)
                             for i, k in enumerate(MERGE_SECTS)}, mergesect_case, limit=70)
CLASSES["mergesect"] = ("fleet merge of three reports whose third has one section of the wrong shape: cudnn, "
                        "frameworks, toolkits, gpus (duplicate or hostile indexes, escaped names), tool, summary, "
                        "process, selection, loader_path, plan, timings, ignored, a finding's code/severity/fix/title "
                        "of wrong types or hostile text, 1,000 duplicate findings, an 8 MiB detail, host and driver "
                        "lists")


# ==================================================================================================================== fullinst
# install --yes of the tree's cuDNN archive where the cache, TMPDIR or HOME is on a full tmpfs, or the prefix's tmpfs
# has a seeded number of bytes free (between nothing and more than the archive's contents)
FULLINST_SCRATCH = {f"{w}-{f}": (w, f) for w in ("cache", "tmpdir", "home") for f in FILLS}
FULLINST_FREE = {f"prefix_free{k:02d}": k for k in range(14)}


def fullinst_case(ctx: Ctx, arg: object) -> None:
    env = install_env(ctx)
    a = archive(ctx)
    prefix = ctx.work / "cuda"
    prefix.mkdir()
    q = shlex.quote
    before_dir, after_dir = ctx.work / "before", ctx.work / "after"
    setup = []
    if isinstance(arg, tuple):
        where, fill = arg
        folder = ctx.work / f"full-{where}"
        folder.mkdir()
        setup += _fill_lines(folder, fill)
        if where == "cache":
            env["CUDNN_DOCTOR_CACHE_DIR"] = str(folder)
        elif where == "tmpdir":
            env["TMPDIR"] = str(folder)
        else:
            env["HOME"] = str(folder)
            env.pop("CUDNN_DOCTOR_CACHE_DIR", None)
            env.pop("XDG_CACHE_HOME", None)
        setup += [f"mkdir -p {q(str(prefix))}/lib64 {q(str(prefix))}/include"]
        what = f"{where} on a {fill} tmpfs"
    else:
        free = random.Random(f"2022b-fullinst-{arg}").randrange(0, 300_000)
        setup += [f"mount -t tmpfs -o size=8m tmpfs {q(str(prefix))}",
                  f"mkdir -p {q(str(prefix))}/lib64 {q(str(prefix))}/include"]
        what = f"the prefix with {free} bytes free"
    setup += [f"echo '/* the user'\"'\"'s own header */' > {q(str(prefix))}/include/mine.h",
              f"printf \"an old copy of the user's\" > {q(str(prefix))}/lib64/libcudnn.so.9.1.0",
              f"ln -s libcudnn.so.9.1.0 {q(str(prefix))}/lib64/libcudnn.so.9"]
    if not isinstance(arg, tuple):
        setup.append(f"avail=$(( $(stat -f -c '%a*%S' {q(str(prefix))}) - {free} )); "
                     f"[ $avail -gt 0 ] && head -c $avail /dev/zero > {q(str(prefix))}/filler 2>/dev/null || true")
    inst_l = shlex.join(cli_argv("install", "--from", str(a), "--prefix", str(prefix), "--yes", "--json"))
    script = "; ".join(setup) + f"; mkdir -p {q(str(before_dir))}; cp -a {q(str(prefix))}/. {q(str(before_dir))}/; " \
             f"{inst_l}; rc=$?; mkdir -p {q(str(after_dir))}; cp -a {q(str(prefix))}/. {q(str(after_dir))}/; exit $rc"
    r = run_proc(["unshare", "-m", "--propagation", "private", "sh", "-c", script], env, ctx.tree, 60)
    d = hold16(r, True, (0, 1, 2), secs=45, err_max=64 << 10) or {}
    expect(after_dir.is_dir(), "harness: the prefix was not copied out")
    expect((after_dir / "include" / "mine.h").is_file(), "the user's own header was lost")
    complete = installed_as_recorded(ctx, after_dir)
    if r.rc == 0:
        expect(complete == [], f"{what}: exit 0 but not the recorded install: {complete}")
    else:
        same = user_view(snapshot_tree(before_dir)) == user_view(snapshot_tree(after_dir))
        expect(same, f"{what}: exit {r.rc} and the prefix changed: {json.dumps(d)[:300]}")
        expect(re.search(r"space|full|ENOSPC|inode|disk|write", json.dumps(d), re.I),
               f"{what}: exit {r.rc} without saying the disk is full: {json.dumps(d)[:300]}")
    left = [str(p.relative_to(after_dir)) for p in after_dir.rglob("*")
            if re.search(r"\.(tmp|part|partial)$|^\.#|staging", p.name)]
    expect(not left, f"{what}: temporary files left in the prefix: {left[:3]}")


family("fullinst", "scratch", FULLINST_SCRATCH, fullinst_case, limit=90)
family("fullinst", "prefix", FULLINST_FREE, fullinst_case, limit=90)
CLASSES["fullinst"] = ("install --yes where the cache, TMPDIR or HOME is on a tmpfs full, with 1 or 8 KiB free or out of "
                       "inodes, or the prefix's tmpfs has a seeded number of bytes free (0-300 KB, the archive's "
                       "contents about 130 KB)")


# ==================================================================================================================== killreplace
# install --replace of cuDNN 9.19 over the doctor's own earlier install of 9.18 (itself over the user's old copy),
# signalled once or twice (a second Ctrl-C during the rollback; SIGTERM then SIGKILL) at seeded instants; then install
# --replace again: the prefix ends the recorded install, or the run says what happened; the user's files kept
def _signal_twice(argv: list[str], env: dict, cwd: Path, d1: float, d2: float, s1: int, s2: int) -> R:
    start = time.monotonic()
    proc = subprocess.Popen(argv, env=env, cwd=str(cwd), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, start_new_session=True)
    time.sleep(d1)
    for sig, wait in ((s1, d2), (s2, 0)):
        try:
            os.killpg(proc.pid, sig) if sig != signal.SIGKILL else os.kill(proc.pid, sig)
        except OSError:
            pass
        time.sleep(wait)
    try:
        out, err = proc.communicate(timeout=50)
    except subprocess.TimeoutExpired:
        kill_group(proc.pid)
        out, err = proc.communicate(timeout=5)
        raise Fail(f"hang: the run signalled at {d1:.2f} s and {d1 + d2:.2f} s did not end") from None
    kill_group(proc.pid)
    return R(proc.returncode, out, err, time.monotonic() - start)


REPLACE_WAYS = {"INT": (signal.SIGINT, None), "TERM": (signal.SIGTERM, None), "KILL": (signal.SIGKILL, None),
                "INT_INT": (signal.SIGINT, signal.SIGINT), "TERM_KILL": (signal.SIGTERM, signal.SIGKILL),
                "INT_TERM": (signal.SIGINT, signal.SIGTERM)}


def killreplace_case(ctx: Ctx, arg: tuple) -> None:
    way, k = arg
    env = install_env(ctx)
    a18, a19 = archive(ctx, 91800), archive(ctx)
    prefix = prefix_with_old(ctx)
    r0 = run_proc(cli_argv("install", "--from", str(a18), "--prefix", str(prefix), "--yes", "--json"), env, ctx.tree, 60)
    expect(r0.rc == 0, f"harness: the first install did not complete: {r0!r}")
    first = inst().snapshot_content(prefix)
    argv = cli_argv("install", "--from", str(a19), "--prefix", str(prefix), "--yes", "--replace")
    rnd = random.Random(f"2022b-killreplace-{way}-{k}")
    d1, d2 = rnd.uniform(0.25, 1.0) * _duration(ctx, "replace"), rnd.uniform(0.01, 0.25)
    s1, s2 = REPLACE_WAYS[way]
    r1 = _signal_twice(argv, env, ctx.tree, d1, d2, s1, s2) if s2 else _run_killed(argv, env, ctx.tree, d1, s1)
    _judge_signalled(r1, s2 or s1)
    _user_files_kept(prefix)
    if r1.rc not in (-9, 0) and s1 != signal.SIGKILL:
        # a signal it caught: it ended saying so, and the prefix is one install or the other, never a mix
        now = user_view(inst().snapshot_content(prefix))
        expect(now == user_view(first) or installed_as_recorded(ctx, prefix) == [] or
               re.search(r"journal|roll|interrupt|unfinished|recover|half|incomplete", r1.err, re.I),
               f"signalled ({way}) at {d1:.2f}/{d1 + d2:.2f} s: exit {r1.rc}, the prefix neither install and "
               f"nothing said: {r1.err[-300:]!r}")
    r2 = run_proc(argv + ["--json"], env, ctx.tree, 60)
    d = hold16(r2, True, (0, 1, 2), secs=45) or {}
    _user_files_kept(prefix)
    complete = installed_as_recorded(ctx, prefix)
    if r2.rc == 0:
        expect(complete == [], f"replace signalled ({way}) at {d1:.2f} s, then replace exit 0 but the prefix is "
                               f"not the recorded install: {complete}")
        lib = prefix / "lib64" / "libcudnn.so.9.1.0"
        expect(lib.is_file() or re.search(r"backup|replac", json.dumps(d), re.I) or
               (prefix / ".cudnn-doctor").is_dir(), "the user's old library is neither there nor kept")
    else:
        now = user_view(inst().snapshot_content(prefix))
        expect(now == user_view(first) or complete == [] or
               re.search(r"journal|roll|interrupt|unfinished|damaged|recover", json.dumps(d), re.I),
               f"replace again after a signal: exit {r2.rc}, a mixed prefix, nothing said: {json.dumps(d)[:300]}")
    r3 = run_proc(cli_argv("uninstall", "--prefix", str(prefix), "--yes", "--json"), env, ctx.tree, 60)
    hold16(r3, True, (0, 1, 2), secs=45)
    _user_files_kept(prefix)


family("killreplace", "at", {f"{w}-{k}": (w, k) for w in REPLACE_WAYS for k in range(2)}, killreplace_case, limit=150)
CLASSES["killreplace"] = ("install --replace of 9.19 over the doctor's own install of 9.18 (over the user's old copy), "
                          "signalled once (SIGINT/TERM/KILL) or twice (INT then INT, TERM then KILL, INT then TERM) at "
                          "seeded instants, then --replace again, then uninstall")


# ==================================================================================================================== sigdeep
# SIGINT/SIGTERM/SIGHUP at seeded instants (fractions of the same command's unsignalled time, measured in the case)
# of check --deep while torch's import is under way (it takes 2 s), of fix --json on that machine, and of bench
SIGDEEP_SIGS = {"INT": signal.SIGINT, "TERM": signal.SIGTERM, "HUP": signal.SIGHUP}
SLOW_TORCH = "import time\ntime.sleep(2)\n"


def sigdeep_case(ctx: Ctx, arg: tuple) -> None:
    cmd, signame, n = arg
    sig = SIGDEEP_SIGS[signame]
    frac = random.Random(f"2022b-sigdeep-{cmd}-{signame}-{n}").uniform(0.15, 0.95)
    if cmd == "bench_json":
        m, args = bench_machine(ctx)
        m.env["CUDNN_DOCTOR_BENCH_TIMEOUT"] = "25"
        want_json = True
    else:
        m, site = _deep_machine(ctx)
        (site / "torch" / "__init__.py").write_text(SLOW_TORCH + GOOD_TORCH)
        args = {"deep_json": ["check", "--deep", "--json"], "deep_text": ["check", "--deep"],
                "fix_json": ["fix", "--json"]}[cmd]
        want_json = "--json" in args
    base = m.run(*args, timeout=60)
    hold16(base, want_json, (0, 1), secs=45)
    delay = frac * base.secs
    start = time.monotonic()
    proc = subprocess.Popen(m.argv(*args), env=m.env, cwd=str(m.cwd), stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    time.sleep(delay)
    try:
        os.kill(proc.pid, sig)  # as `kill PID` does: the doctor alone, not its group
    except OSError:
        pass
    try:
        out, err = proc.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        kill_group(proc.pid)
        proc.communicate(timeout=5)
        raise Fail(f"hang: {cmd} signalled {signame} at {delay:.2f} s still running 30 s later")
    r = R(proc.returncode, out, err, time.monotonic() - start)
    time.sleep(1.0)
    left = leftovers_of(m.base)
    reap(m.base)
    kill_group(proc.pid)
    expect(not left, f"{cmd} signalled {signame} at {delay:.2f} s of {base.secs:.2f}: processes left: {left[:2]}")
    if r.rc in (0, 1):  # it finished before the signal, or handled it by finishing: a whole answer
        hold16(r, want_json, (0, 1), secs=45)
        return
    expect(r.rc in (128 + sig, -sig), f"{cmd} signalled {signame}: exit {r.rc}, not the signal's: {r!r}")
    for word in BAD_WORDS:
        expect(word not in r.err and word not in r.out, f"{word!r} after {signame}: {r!r}")
    lines = [x for x in r.err.splitlines() if x.strip() and not x.startswith("cudnn-doctor: warning:")]
    expect(len(lines) <= 1, f"{signame}: stderr of {len(lines)} lines: {r.err[-400:]!r}")
    no_raw_controls13(strip_sgr(utf8_strict(r.errb, "stderr")), "stderr")
    if want_json and r.out.strip():
        try:
            strict_json(r.out)
        except Fail:
            raise Fail(f"{signame} at {delay:.2f} s: stdout holds half a JSON object ({len(r.outb)} bytes)") from None


family("sigdeep", "sig", {f"{c}-{s}-{n}": (c, s, n) for c in ("deep_json", "fix_json", "bench_json")
                          for s in SIGDEEP_SIGS for n in range(2)}, sigdeep_case, limit=120)
CLASSES["sigdeep"] = ("SIGINT/SIGTERM/SIGHUP (to the doctor alone, as kill does) at seeded fractions of the run of "
                      "check --deep --json and fix --json while torch's import takes 2 s, and of bench --json")
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
    scratch = Path(tempfile.mkdtemp(prefix="redteam22b-43-", dir="/var/tmp"))
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
        # numbered: no case's folder is a prefix of another's (a case reaps what names its folder)
        work = scratch / (f"{ids.index(case_id):04d}-" + re.sub(r"[^A-Za-z0-9_.-]", "_", case_id))
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
