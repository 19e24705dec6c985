#!/usr/bin/env python3
# ruff: noqa  (an evaluation set: its harness is kept as the helper wrote it apart from the code)
"""Round eight red-team over issue 43's surfaces and every other surface of the CLI (sealed: builders never read it).

    python3 redteam.py --tree CHECKOUT [--jobs 2] [--only SUBSTRINGS] [--list-failures] [--python PY]

Each case runs in a process of its own (this file with --run-case), in a scratch folder under /var/tmp, against the
doctor of CHECKOUT started as `PYTHONPATH=CHECKOUT PY -m cudnn_doctor ...` in a pretend machine
(CUDNN_DOCTOR_SYSTEM_PREFIX, HOME, CUDNN_DOCTOR_CACHE_DIR of its own), under hostile conditions: hostile values in
every variable the doctor reads, hostile /proc-like files, files changing under it, signals at seeded instants, full
or read-only disks in a mount namespace, closed/full/odd standard streams, odd terminals and locales, every kind of
ulimit, a hostile PATH, an odd umask, symlink loops, hostile images, registries, prefixes, shells, homes, caches.
A case holds when a user would agree: no traceback or internal error, the exit code README documents, one JSON object
with --json, nothing of the user's lost or half-written, bounded time, no printed line that runs a command the user
did not ask for. A case past its limit fails as a hang.
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
import zlib
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

HERE = Path(__file__).resolve().parent
PY = os.environ.get("REDTEAM_PYTHON") or sys.executable
FAKES_DEFAULT = "/var/tmp/cudnn-doctor-fakes8"
CASES: dict[str, tuple[str, Callable, int]] = {}
CLASSES = {
    "envval": "every variable the doctor reads: NUL-free binary, 100 KB, /proc-like text, a link loop, a FIFO",
    "procfs": "the pretend system's /proc, /sys and /etc files hostile (binary, FIFO, loop, /dev/zero, folder, huge)",
    "race": "files changing under the doctor while it reads them (truncated, replaced, swapped) at seeded instants",
    "signals": "signals at seeded instants: spurious ones (WINCH, CHLD, CONT, TSTP then CONT) and HUP/TERM/INT",
    "disk": "full and inode-less disks, read-only /tmp, read-only or absent /dev/shm (mount namespaces)",
    "stdio": "standard streams: closed, /dev/full, read-only, reader gone, non-blocking full, FIFOs, tty-less terminals",
    "term": "odd TERM, COLUMNS, LINES, NO_COLOR/FORCE_COLOR, LANG/LC_ALL, also on a pseudo-terminal",
    "limits": "ulimits of kinds not tried before (-d soft, -s unlimited/hard 1 MiB, -n soft=hard, hard -n 24, -x/-q 0, -i 1, hard -v)",
    "path": "a hostile PATH shadowing helper programs (ldconfig, nvidia-smi, gcc, nvcc, pwsh, srun, python3, sh, powershell.exe)",
    "umask": "odd umasks, as an unprivileged user",
    "loops": "symlink loops, links to / and deleted or deep working folders in every path the doctor takes",
    "image": "image: hostile tars (cut at seeded points, odd members) and registries on 127.0.0.1",
    "install": "install/uninstall: hostile prefixes, hostile --from, kills and stops at seeded instants",
    "fix": "fix --shell for every shell with hostile folder names",
    "completion": "--install-completion into hostile homes and rc files",
    "explain": "explain with hostile standard input kinds",
    "fleet": "fleet merge and fleet run with hostile inputs",
    "bench": "bench with hostile cache folders and a hostile C compiler",
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


BUILD = Path(os.environ.get("REDTEAM8_BUILD", "/var/tmp/redteam8-43-build"))


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


PROC_TEXT = ("7f3a1c000000-7f3a1c021000 rw-p 00000000 00:00 0 \n"
             "55d4c0a00000-55d4c0a01000 r-xp 00000000 fd:01 1234   /usr/lib/x86_64-linux-gnu/libcudnn.so.9.19.0 (deleted)\n"
             "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.95.05  Release Build  "
             "(dvs-builder@U16-I1-N07-12-3)  Thu Sep 11 2025\n"
             "GCC version:  gcc version 12.2.0 (Debian 12.2.0-14)\n"
             "36 25 0:32 / /sys/fs/cgroup ro,nosuid,nodev,noexec,relatime shared:9 - cgroup2 cgroup2 rw\n"
             "cpu  10132153 290696 3084719 46828483 16683 0 25195 0 0 0\n")


def hostile_value(m: M, kind: str, seed: int) -> str:
    if kind == "binary":
        return binary_value(seed)
    if kind == "long":
        return (str(m.base) + "/x" * 50000)[:100000]
    if kind == "proc_text":
        return PROC_TEXT
    if kind == "loop":
        p = m.base / "loopvar"
        if not p.is_symlink():
            p.symlink_to("loopvar")
        return str(p / "sub")
    if kind == "fifo":
        p = m.base / "fifovar"
        if not p.exists():
            os.mkfifo(p)
        return str(p)
    raise ValueError(kind)


# ====================================================================================================================
# envval: every variable the doctor reads, hostile

# variable -> (surface, settings: whether exit 2 naming it is an answer README allows, extra words an error may name)
ENV_VARS: dict[str, tuple[str, bool]] = {
    "CUDNN_DOCTOR_IGNORE": ("check", True), "CUDNN_DOCTOR_SELECT": ("check", True),
    "CUDNN_DOCTOR_STRICT": ("check", True), "CUDNN_DOCTOR_REQUIRE": ("check", True),
    "CUDNN_DOCTOR_FORMAT": ("check_text", True), "CUDNN_DOCTOR_PROBE_TIMEOUT": ("check", True),
    "CUDNN_DOCTOR_HELPER_TIMEOUT": ("check", True), "CUDNN_DOCTOR_CACHE_DIR": ("check", True),
    "CUDNN_DOCTOR_DEEP_TIMEOUT": ("deep", True), "CUDNN_DOCTOR_ALLREDUCE_TIMEOUT": ("deep", True),
    "CUDNN_DOCTOR_IMAGE_TIMEOUT": ("image", True), "CUDNN_DOCTOR_IMAGE_MAX_LAYER_BYTES": ("image", True),
    "CUDNN_DOCTOR_REGISTRY_MIRROR": ("image_hub", True), "CUDNN_DOCTOR_READ_TIMEOUT": ("explain_stdin", True),
    "CUDNN_DOCTOR_BENCH_TIMEOUT": ("bench", True), "CUDNN_DOCTOR_CPU_BASELINE": ("bench", True),
    "CUDNN_DOCTOR_MIRROR": ("install_version", True), "CUDNN_DOCTOR_DOWNLOAD_DEADLINE": ("install", True),
    "CUDNN_DOCTOR_RETRY_BACKOFF": ("install", True), "DOCKER_CONFIG": ("image", True),
    "XDG_CACHE_HOME": ("check_nocache", True), "HOME": ("check", True),
    "LD_LIBRARY_PATH": ("check", False), "LD_PRELOAD": ("check", False), "PATH": ("check", False),
    "CUDA_VISIBLE_DEVICES": ("fix", False), "CUDA_HOME": ("check", False), "CUDNN_PATH": ("check", False), "CUDA_MODULE_LOADING": ("check", False),
    "PYTORCH_CUDA_ALLOC_CONF": ("fix_text", False), "NCCL_DEBUG": ("check", False),
    "NVIDIA_VISIBLE_DEVICES": ("check", False),
    "WSL_DISTRO_NAME": ("check_text", False), "CONDA_PREFIX": ("check", False), "XLA_FLAGS": ("deep", False), "TMPDIR": ("deep", False), "SHELL": ("completion", True),
    "ZDOTDIR": ("completion_zsh", True), "XDG_CONFIG_HOME": ("completion_fish", True),
    "GITHUB_STEP_SUMMARY": ("github", True), "SLURM_JOB_NODELIST": ("fleet_run", True),
}
ENV_KINDS = ("binary", "long", "proc_text", "loop")
PATHISH = {"CUDNN_DOCTOR_CACHE_DIR", "DOCKER_CONFIG", "XDG_CACHE_HOME", "HOME", "LD_LIBRARY_PATH", "LD_PRELOAD",
           "CUDA_HOME", "CUDNN_PATH", "TMPDIR", "ZDOTDIR", "XDG_CONFIG_HOME", "GITHUB_STEP_SUMMARY",
           "CUDNN_DOCTOR_MIRROR", "CONDA_PREFIX", "CUDA_CACHE_PATH"}


def envval_case(ctx: Ctx, arg: tuple[str, str, int]) -> None:
    var, kind, seed = arg
    where, setting = ENV_VARS[var]
    m = healthy(ctx)
    value = hostile_value(m, kind, seed)
    env = {var: value, "CUDNN_DOCTOR_HELPER_TIMEOUT": "5", "CUDNN_DOCTOR_IMAGE_TIMEOUT": "5",
           "CUDNN_DOCTOR_READ_TIMEOUT": "3", "CUDNN_DOCTOR_DOWNLOAD_DEADLINE": "5"}
    env[var] = value
    stdin = None
    extra: tuple = ()
    if where == "image_hub":
        argv, want_json, rcs = ["image", "nvidia/cuda:12.8.0-base-ubuntu24.04", "--json"], True, (0, 1, 2)
    elif where == "explain_stdin":
        argv, want_json, rcs = ["explain", "-", "--json"], True, (0, 1)
        stdin = b"cuDNN error: CUDNN_STATUS_NOT_INITIALIZED\n"
    elif where == "install_version":
        argv, want_json, rcs = ["install", "--version", "9.19.0", "--prefix", str(m.base / "pfx"), "--dry-run",
                                "--json"], True, (0, 1, 2)
    elif where == "check_nocache":
        m.env.pop("CUDNN_DOCTOR_CACHE_DIR", None)
        argv, want_json, rcs = ["check", "--json"], True, (0, 1)
    elif where in ("completion", "completion_zsh", "completion_fish"):
        shell = {"completion": [], "completion_zsh": ["zsh"], "completion_fish": ["fish"]}[where]
        argv, want_json, rcs = ["--install-completion", *shell], False, (0,)
    elif where == "github":
        argv, want_json, rcs = ["check", "--format", "github"], False, (0, 1)
    elif where == "fleet_run":
        bin_ = m.base / "bin"
        bin_.mkdir(exist_ok=True)
        (bin_ / "srun").write_text("#!/bin/sh\nexit 0\n")
        (bin_ / "srun").chmod(0o755)
        env["PATH"] = f"{bin_}:{m.env['PATH']}"
        argv, want_json, rcs = ["fleet", "run", "--slurm", "--json", "--deadline", "5"], True, (0, 1, 2)
    else:
        argv, want_json, rcs = surface(ctx, m, where)
        if where in ("image", "bench", "install"):
            rcs = (0, 1, 2) if where != "bench" else (0, 1)
    if var == "HOME" and kind in ("long", "loop"):  # the cache under that home, as a user without the variable has it
        m.env.pop("CUDNN_DOCTOR_CACHE_DIR", None)
    if setting:
        extra = (2,)
    r = without_ld_so(m.run(*argv, env=env, stdin=stdin, timeout=50))
    reap(m.base)
    judge_surface(r, want_json, rcs, secs=35, extra_rcs=extra)
    if r.rc == 2 and setting and var.startswith("CUDNN_DOCTOR_"):
        expect(var in error_text(r), f"exit 2 without naming {var}: {r.err[-300:]!r}")
    if where.startswith("completion") or var == "HOME":
        _sourced_scripts_exist(m, m.home / ".bashrc")
        _sourced_scripts_exist(m, m.home / ".zshrc")
    if kind == "binary" and want_json and where in ("check", "fix"):
        t = without_ld_so(m.run(argv[0], env=env, timeout=50))
        judge_surface(t, False, rcs, secs=35, extra_rcs=extra)


PROC_TEXT_VARS = ("LD_LIBRARY_PATH", "LD_PRELOAD", "PATH", "CUDA_VISIBLE_DEVICES", "CUDNN_DOCTOR_REQUIRE",
                  "CUDNN_DOCTOR_IGNORE", "PYTORCH_CUDA_ALLOC_CONF", "XLA_FLAGS", "SLURM_JOB_NODELIST", "SHELL",
                  "CUDNN_DOCTOR_REGISTRY_MIRROR", "NVIDIA_VISIBLE_DEVICES")
LONG_VARS = ("PATH", "CUDA_VISIBLE_DEVICES", "CUDNN_DOCTOR_REQUIRE", "CUDNN_DOCTOR_IGNORE", "PYTORCH_CUDA_ALLOC_CONF",
             "XLA_FLAGS", "SHELL", "CUDNN_DOCTOR_FORMAT", "CUDNN_DOCTOR_PROBE_TIMEOUT", "CUDNN_DOCTOR_REGISTRY_MIRROR",
             "SLURM_JOB_NODELIST", "CUDA_MODULE_LOADING")
FIFO_VARS = ("CUDNN_DOCTOR_CACHE_DIR", "DOCKER_CONFIG", "GITHUB_STEP_SUMMARY", "CUDNN_PATH", "ZDOTDIR",
             "XDG_CONFIG_HOME", "CUDNN_DOCTOR_MIRROR")
family("envval", "var", {f"{v}-{k}": (v, k, i * 7 + j) for i, v in enumerate(ENV_VARS) for j, k in enumerate(ENV_KINDS)
                         if k == "binary" or (k == "long" and (v in PATHISH or v in LONG_VARS))
                         or (k == "proc_text" and v in PROC_TEXT_VARS)
                         or (k == "loop" and v in PATHISH)}, envval_case, limit=90)
family("envval", "var", {f"{v}-fifo": (v, "fifo", 0) for v in FIFO_VARS}, envval_case, limit=90)


# ====================================================================================================================
# procfs: the pretend system's files

PROC_FILES = {
    "nvidia_version": "proc/driver/nvidia/version", "device_tree_model": "proc/device-tree/model",
    "tegra_release": "etc/nv_tegra_release", 
    "os_release": "etc/os-release",
    "cudnn_header": "usr/include/cudnn_version.h", "cuda_version_json": "usr/local/cuda/version.json",
}
PROC_KINDS = ("binary", "fifo", "loop", "dev_zero", "folder", "huge_line")


def place_proc(path: Path, kind: str, seed: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.is_symlink() or path.is_file():
        path.unlink()
    elif path.is_dir():
        shutil.rmtree(path)
    if kind == "binary":
        path.write_bytes(os.fsencode(binary_value(seed, 65536)))
    elif kind == "huge_line":
        with open(path, "wb") as f:
            f.write(b"NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.95.05 " + b"\x1b[2J" * 10 + b"9" * (6 << 20))
    elif kind == "folder":
        path.mkdir()
        (path / "x").write_text("x")
    else:
        hostile_file(path, {"fifo": "fifo", "loop": "loop", "dev_zero": "dev_zero"}[kind])


def procfs_case(ctx: Ctx, arg: tuple[str, str, int]) -> None:
    key, kind, seed = arg
    m = healthy(ctx)
    if key == "dxg":
        m.env.update({"WSL_DISTRO_NAME": "Ubuntu", "WSL_INTEROP": "/run/WSL/1_interop"})
    if key == "device_tree_model":
        (m.root / "etc" / "nv_tegra_release").write_text("# R36 (release), REVISION: 4.0\n")
    place_proc(m.root / PROC_FILES[key], kind, seed)
    r = m.run("check", "--json", timeout=50)
    judge(r, (0, 1), secs=35)
    if kind in ("binary", "huge_line"):
        t = m.run("check", "--format", "markdown", timeout=50)
        judge_surface(t, False, (0, 1), secs=35)


family("procfs", "file", {f"{k}-{kind}": (k, kind, i) for i, k in enumerate(PROC_FILES) for kind in PROC_KINDS},
       procfs_case, limit=90)


# ====================================================================================================================
# race: files changing under the doctor

class Mutator:
    """Changes PATH over and over (seeded pauses) until stopped: ACTION truncate | half | fifo | folder."""

    def __init__(self, path: Path, action: str, seed: int) -> None:
        self.path, self.action, self.rng = path, action, random.Random(seed)
        self.original = path.read_bytes() if path.is_file() else b""
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.loop, daemon=True)

    def put_back(self) -> None:
        p = self.path
        try:
            if p.is_dir() and not p.is_symlink():
                shutil.rmtree(p)
            elif p.exists() or p.is_symlink():
                p.unlink()
            tmp = p.with_name(p.name + ".rt8")
            tmp.write_bytes(self.original)
            os.replace(tmp, p)
        except OSError:
            pass

    def loop(self) -> None:
        while not self.stop.is_set():
            time.sleep(self.rng.uniform(0.0, 0.03))
            p = self.path
            try:
                if self.action == "truncate":
                    with open(p, "r+b") as f:
                        f.truncate(0)
                    time.sleep(self.rng.uniform(0.0, 0.02))
                    with open(p, "r+b") as f:
                        f.write(self.original)
                elif self.action == "half":
                    with open(p, "r+b") as f:
                        f.truncate(len(self.original) // 2)
                    time.sleep(self.rng.uniform(0.0, 0.02))
                    with open(p, "r+b") as f:
                        f.write(self.original)
                elif self.action == "fifo":
                    p.unlink()
                    os.mkfifo(p)
                    time.sleep(self.rng.uniform(0.0, 0.02))
                    self.put_back()
                elif self.action == "folder":
                    p.unlink()
                    p.mkdir()
                    time.sleep(self.rng.uniform(0.0, 0.02))
                    self.put_back()
            except OSError:
                self.put_back()

    def __enter__(self) -> "Mutator":
        self.thread.start()
        return self

    def __exit__(self, *a: object) -> None:
        self.stop.set()
        self.thread.join(5)
        self.put_back()


def race_case(ctx: Ctx, arg: tuple[str, str, int]) -> None:
    target, action, seed = arg
    m = healthy(ctx)
    rcs: tuple = (0, 1)
    want_json = True
    if target == "cudnn_lib":
        path = m.base / "cudnn" / "lib" / "libcudnn.so.9.19.0"
        argv = ["check", "--json"]
    elif target == "cudnn_header":
        path = m.root / "usr" / "include" / "cudnn_version.h"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("#define CUDNN_MAJOR 9\n#define CUDNN_MINOR 19\n#define CUDNN_PATCHLEVEL 0\n" * 20)
        argv = ["check", "--json"]
    elif target == "nvidia_version":
        path = m.root / "proc" / "driver" / "nvidia" / "version"
        argv = ["check", "--json"]
    elif target == "pyproject":
        path = m.cwd / "pyproject.toml"
        path.write_text('[project]\nname = "x"\n\n[tool.cudnn-doctor]\nstrict = false\nignore = ["CD999"]\n')
        argv, rcs = ["check", "--json"], (0, 1, 2)
    elif target == "explain_file":
        path = m.base / "train.log"
        path.write_text("epoch 1\n" * 500 + "RuntimeError: cuDNN error: CUDNN_STATUS_NOT_INITIALIZED\n" + "x\n" * 500)
        argv, rcs = ["explain", "--from-file", str(path), "--json"], (0, 1, 2)
    elif target == "image_layer":
        folder = raw_oci(ctx)
        blobs = sorted((folder / "blobs" / "sha256").iterdir(), key=lambda p: -p.stat().st_size)
        path = blobs[0]
        argv, rcs = ["image", str(folder), "--json"], (0, 1, 2)
    elif target == "image_index":
        folder = raw_oci(ctx)
        path = folder / "index.json"
        argv, rcs = ["image", str(folder), "--json"], (0, 1, 2)
    elif target == "merge_report":
        d = reports_dir(m)
        path = d / "node1.json"
        argv, rcs = ["fleet", "merge", str(d), "--json"], (0, 1, 2)
    elif target == "install_archive":
        path = m.base / "a.tar.xz"
        shutil.copyfile(archive(ctx), path)
        argv, rcs = ["install", "--from", str(path), "--prefix", str(m.base / "pfx"), "--yes", "--json"], (0, 1, 2)
    elif target == "bashrc":
        path = m.home / ".bashrc"
        path.write_text("# the user's\nalias ll='ls -l'\n" * 200)
        argv, rcs, want_json = ["--install-completion", "bash"], (0, 2), False
    elif target == "cuda_version_json":
        path = m.root / "usr" / "local" / "cuda-12.8" / "version.json"
        path.parent.mkdir(parents=True)
        path.write_text(json.dumps({"cuda": {"name": "CUDA SDK", "version": "12.8.1"}}))
        (m.root / "usr" / "local" / "cuda").symlink_to("cuda-12.8")
        argv = ["check", "--json"]
    elif target == "cache_files":
        m.run("check", "--json", timeout=40)
        files = [p for p in Path(m.env["CUDNN_DOCTOR_CACHE_DIR"]).rglob("*") if p.is_file()]
        if not files:
            raise Skip("the first check left nothing in the cache")
        path = sorted(files, key=lambda p: -p.stat().st_size)[0]
        argv = ["check", "--json"]
    elif target == "docker_save":
        i = img()
        config, layers = _good_parts()
        path = i.docker_archive(m.base / "app.tar", config, layers)
        argv, rcs = ["image", str(path), "--json"], (0, 1, 2)
    else:
        raise ValueError(target)
    with Mutator(path, action, seed):
        r = m.run(*argv, timeout=50)
    reap(m.base)
    judge(r, rcs, want_json=want_json, secs=35)
    if target == "install_archive" and r.rc == 0:
        expect(installed_as_recorded(ctx, m.base / "pfx") == [], "an install said done left files unlike its manifest")
    if target == "bashrc":
        _sourced_scripts_exist(m, path)


RACE_TARGETS = ("cudnn_lib", "cudnn_header", "nvidia_version", "pyproject", "explain_file", "image_layer", "image_index",
                "merge_report", "install_archive", "bashrc", "cache_files", "docker_save")
family("race", "changing", {f"{t}-{a}": (t, a, i * 4 + j) for i, t in enumerate(RACE_TARGETS)
                            for j, a in enumerate(("truncate", "half", "fifo"))}, race_case, limit=90)
family("race", "changing", {f"{t}-folder": (t, "folder", 100 + i) for i, t in enumerate(RACE_TARGETS)
                            if t in ("pyproject", "explain_file", "bashrc", "merge_report")}, race_case, limit=90)

# ====================================================================================================================
# signals at seeded instants

SIG_CMDS = ("check", "deep", "fix", "explain", "image", "merge", "install", "bench")
SPURIOUS = {"WINCH": [signal.SIGWINCH], "CHLD": [signal.SIGCHLD], "CONT": [signal.SIGCONT],
            "TSTP_CONT": [signal.SIGTSTP, signal.SIGCONT]}
ENDING = {"HUP": signal.SIGHUP, "TERM": signal.SIGTERM, "INT": signal.SIGINT}


def signal_case(ctx: Ctx, arg: tuple[str, str, int]) -> None:
    which, sig, seed = arg
    m = healthy(ctx)
    argv, want_json, rcs = surface(ctx, m, which)
    base = m.run(*argv, timeout=50)
    judge_surface(base, want_json, rcs, secs=35)
    rng = random.Random(seed)
    at = rng.uniform(0.25, max(0.3, base.secs * 0.95))  # after the interpreter's own start, in the doctor's run
    proc = subprocess.Popen(m.argv(*argv), env=m.env, cwd=str(m.cwd), stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    out_chunks: list[bytes] = []
    err_chunks: list[bytes] = []
    t_out = threading.Thread(target=lambda: out_chunks.append(proc.stdout.read()), daemon=True)
    t_err = threading.Thread(target=lambda: err_chunks.append(proc.stderr.read()), daemon=True)
    t_out.start()
    t_err.start()
    start = time.monotonic()
    time.sleep(at)
    sent = time.monotonic()
    try:
        if sig in SPURIOUS:
            for k, s in enumerate(SPURIOUS[sig]):
                if k:
                    time.sleep(0.3)
                os.kill(proc.pid, s)
        else:
            os.kill(proc.pid, ENDING[sig])
    except ProcessLookupError:
        pass
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        kill_group(proc.pid)
        raise Fail(f"hang: still running 30 s after SIG{sig} at {at:.2f} s") from None
    t_out.join(5)
    t_err.join(5)
    ended = time.monotonic()
    left = leftovers_of(m.base)
    kill_group(proc.pid)
    reap(m.base)
    r = R(proc.returncode, b"".join(out_chunks), b"".join(err_chunks), ended - start)
    for word in BAD_WORDS:
        expect(word not in r.err and word not in r.out, f"{word!r} after SIG{sig} at {at:.2f} s: {r!r}")
    if sig in SPURIOUS:
        expect(r.rc == base.rc, f"SIG{sig} at {at:.2f} s (ignored by default) changed the exit {base.rc} -> {r.rc}: {r!r}")
        if want_json:
            judge(r, (base.rc,), secs=40)
        return
    n = int(ENDING[sig])
    expect(r.rc in (base.rc, 128 + n, -n), f"SIG{sig} at {at:.2f} s: exit {r.rc}, README: {128 + n}: {r!r}")
    expect(ended - sent < 8, f"SIG{sig}: stopped {ended - sent:.1f} s after the signal")
    expect(not left, f"processes left after SIG{sig}: {left[:3]}")
    if want_json and r.rc in (base.rc, 128 + n) and r.out.strip():
        data = one_json(r)
        if r.rc == 128 + n:
            expect("Interrupted" in r.out, f"the JSON object of an interrupted run does not say so: {r.out[:300]!r}")
        del data


family("signals", "at", {f"{c}-{s}": (c, s, i * 13 + j) for i, c in enumerate(SIG_CMDS)
                         for j, s in enumerate(list(SPURIOUS) + list(ENDING))}, signal_case, limit=90)


# ====================================================================================================================
# disk: full and inode-less file systems, read-only /tmp, unusable /dev/shm (private mount namespaces)

DISK_SETUPS = {
    "tmp_ro": "mount -t tmpfs -o ro,size=64k none /tmp",
    "tmp_no_inodes": "mount -t tmpfs -o nr_inodes=2 none /tmp; : > /tmp/a 2>/dev/null || true",
    "shm_ro": "mount -t tmpfs -o ro,size=4k none /dev/shm",
    "no_dev_shm": "d=$RT8_DEV; mkdir -p $d; mount -t tmpfs none $d; for n in null zero full random urandom tty; do "
                  ": > $d/$n; mount --bind /dev/$n $d/$n; done; ln -s /proc/self/fd $d/fd; ln -s /proc/self/fd/0 "
                  "$d/stdin; ln -s /proc/self/fd/1 $d/stdout; ln -s /proc/self/fd/2 $d/stderr; mkdir $d/pts; "
                  "mount --rbind /dev/pts $d/pts 2>/dev/null || true; mount --move $d /dev; test ! -e /dev/shm",
}
def ns_run8(m: M, setup: str, args: list[str], timeout: float = 50, env: dict | None = None) -> R:
    """The doctor in a private mount namespace after SETUP; a setup that failed is the harness's failure."""
    if shutil.which("unshare") is None or os.geteuid() != 0:
        raise Skip("needs root and unshare")
    script = f"set -e; {setup}; echo RT8-SETUP-OK >&2; exec {shlex.join(m.argv(*args))}"
    r = run_proc(["unshare", "-m", "--propagation", "private", "sh", "-c", script], {**m.env, **(env or {})},
                 m.cwd, timeout)
    if b"RT8-SETUP-OK\n" not in r.errb:
        raise Fail(f"harness: the namespace's set-up failed: {r!r}")
    return R(r.rc, r.outb, r.errb.replace(b"RT8-SETUP-OK\n", b"", 1), r.secs)


DISK_CMDS = ("check", "deep", "fix", "image", "merge", "install_yes", "bench")


def disk_case(ctx: Ctx, arg: tuple[str, str]) -> None:
    setup, which = arg
    m = healthy(ctx)
    m.env.pop("TMPDIR", None)
    argv, want_json, rcs = surface(ctx, m, which)
    r = ns_run8(m, DISK_SETUPS[setup], argv, timeout=50, env={"RT8_DEV": str(m.base / "newdev")})
    reap(m.base)
    data = judge_surface(r, want_json, rcs, secs=35, extra_rcs=(2,))
    if r.rc == 2:
        text = error_text(r).lower()
        expect(any(w in text for w in ("/tmp", "space", "read-only", "/dev/shm", "tmpdir", "temporary", "write")),
               f"exit 2 without saying the disk stopped it: {r.err[-300:]!r}")
    if which == "install_yes" and r.rc == 0:
        expect(installed_as_recorded(ctx, m.base / "pfx") == [], "the install said done but is not whole")
    del data


family("disk", "ns", {f"{s}-{c}": (s, c) for s in DISK_SETUPS for c in DISK_CMDS}, disk_case, limit=90)


def _full_mount(path: Path, size: str = "16k", inodes: str | None = None, fill: bool = True) -> str:
    opts = f"size={size}" + (f",nr_inodes={inodes}" if inodes else "")
    q = shlex.quote(str(path))
    line = f"mkdir -p {q}; mount -t tmpfs -o {opts} none {q}"
    if fill:
        line += f"; head -c 100000000 /dev/zero > {q}/.fill 2>/dev/null || true"
    return line


def disk_target_case(ctx: Ctx, which: str) -> None:
    m = healthy(ctx)
    mnt = m.base / "mnt"
    old = b'{"old": "the user\'s file"}\n'
    if which.startswith("out_"):
        fmt = which.split("_", 1)[1]
        setup = _full_mount(mnt, fill=False) + f"; printf '%s' {shlex.quote(old.decode())} > {mnt}/out; " \
            f"head -c 100000000 /dev/zero > {mnt}/.fill 2>/dev/null || true"
        argv = ["check", "--format", fmt, "-o", str(mnt / "out")]
        script = f"set -e; {setup}; {shlex.join(m.argv(*argv))}; rc=$?; echo; echo RT8-OUT; base64 -w0 {mnt}/out; " \
                 f"echo; ls -a {mnt}; exit $rc"
        r = run_proc(["unshare", "-m", "--propagation", "private", "sh", "-c", script.replace("set -e; ", "")],
                     m.env, m.cwd, 50)
        expect(r.rc in (0, 1, 2, 74), f"exit {r.rc}: {r!r}")
        for word in BAD_WORDS:
            expect(word not in r.err, f"{word!r}: {r!r}")
        tail = r.out.split("RT8-OUT\n", 1)[-1].splitlines()
        import base64
        content = base64.b64decode(tail[0]) if tail and tail[0] else b""
        expect(content == old or r.rc in (0, 1), f"the user's file is neither kept nor replaced whole: {content[:80]!r}")
        if r.rc not in (0, 1):
            expect(content == old, f"a failed write changed the user's file: {content[:80]!r}")
            expect(len(err_lines(r)) == 1, f"one line on stderr, got {err_lines(r)}")
        leftover = [x for x in (tail[1].split() if len(tail) > 1 else []) if x not in (".", "..", "out", ".fill")]
        expect(not leftover, f"temporary files left beside the output: {leftover}")
        return
    if which == "junit_full":
        setup = _full_mount(mnt)
        argv, rcs, want_json = ["check", "--json", "--junit-xml", str(mnt / "j.xml")], (0, 1, 2, 74), True
    elif which == "summary_full":
        setup = _full_mount(mnt)
        m.env["GITHUB_STEP_SUMMARY"] = str(mnt / "summary.md")
        argv, rcs, want_json = ["check", "--format", "github"], (0, 1, 2), False
    elif which in ("cache_full", "cache_no_inodes"):
        cache = m.base / "cachemnt"
        m.env["CUDNN_DOCTOR_CACHE_DIR"] = str(cache)
        setup = _full_mount(cache, inodes="3" if which == "cache_no_inodes" else None,
                            fill=which == "cache_full")
        argv, rcs, want_json = ["check", "--json"], (0, 1, 2), True
    elif which in ("bench_cache_full", "bench_cache_no_inodes"):
        cache = m.base / "cachemnt"
        m.env["CUDNN_DOCTOR_CACHE_DIR"] = str(cache)
        setup = _full_mount(cache, inodes="3" if "inodes" in which else None, fill="full" in which)
        argv, rcs, want_json = ["bench", "--json", "--size", "tiny", "--repeats", "1"], (0, 1, 2), True
    elif which in ("prefix_full", "prefix_no_inodes"):
        prefix = m.base / "pfx"
        setup = _full_mount(prefix, size="200k", inodes="12" if "inodes" in which else None, fill=False) + \
            f"; mkdir -p {prefix}/include; echo mine > {prefix}/include/mine.h"
        if "full" in which:
            setup += f"; head -c 150000 /dev/zero > {prefix}/.fill"
        argv = ["install", "--from", str(archive(ctx)), "--prefix", str(prefix), "--yes", "--json"]
        script = f"{setup}; {shlex.join(m.argv(*argv))}; rc=$?; echo RT8-LS; " \
                 f"(cd {prefix} && find . | sort); cat {prefix}/include/mine.h; exit $rc"
        r = run_proc(["unshare", "-m", "--propagation", "private", "sh", "-c", script], m.env, m.cwd, 60)
        expect(r.rc in (0, 1, 2), f"exit {r.rc}: {r!r}")
        for word in BAD_WORDS:
            expect(word not in r.err and word not in r.out, f"{word!r}: {r!r}")
        listing = r.out.split("RT8-LS\n", 1)[-1]
        expect("mine\n" in listing, "the user's own file in the prefix was lost")
        if r.rc != 0:
            files = [x for x in listing.splitlines() if "libcudnn" in x]
            expect(not files, f"a failed install left cuDNN files in the prefix: {files[:3]}")
        return
    elif which == "home_full_completion":
        setup = _full_mount(m.home, size="16k", fill=False) + \
            f"; printf '# mine\\n' > {m.home}/.bashrc; head -c 100000000 /dev/zero > {m.home}/.fill 2>/dev/null || true"
        argv = ["--install-completion", "bash"]
        script = f"{setup}; {shlex.join(m.argv(*argv))}; rc=$?; echo RT8-RC; cat {m.home}/.bashrc; echo RT8-FILES; " \
                 f"grep -ho '/[^ \"]*cudnn-doctor[^ \"]*' {m.home}/.bashrc | while read f; do test -s \"$f\" || " \
                 f"echo MISSING \"$f\"; done; exit $rc"
        r = run_proc(["unshare", "-m", "--propagation", "private", "sh", "-c", script], m.env, m.cwd, 50)
        expect(r.rc in (0, 2), f"exit {r.rc}: {r!r}")
        for word in BAD_WORDS:
            expect(word not in r.err, f"{word!r}: {r!r}")
        rc_text = r.out.split("RT8-RC\n", 1)[-1]
        expect(rc_text.startswith("# mine\n"), f"the user's .bashrc lost its bytes: {rc_text[:80]!r}")
        expect("MISSING" not in rc_text, f".bashrc sources a script that is not whole: {rc_text[-200:]!r}")
        if r.rc == 2:
            one_line(r)
        return
    elif which == "keep_full_fleet":
        setup = _full_mount(mnt)
        bin_ = m.base / "bin"
        bin_.mkdir()
        (bin_ / "srun").write_text(FAKE_SRUN)
        (bin_ / "srun").chmod(0o755)
        g = m.base / "good.json"
        g.write_bytes(m.run("check", "--json", timeout=40).outb)
        (m.base / "nodes.sh").write_text(f"cp {g} \"$1/0.json\" 2>/dev/null; cp {g} \"$1/1.json\" 2>/dev/null; exit 0")
        m.env.update({"PATH": f"{bin_}:{m.env['PATH']}", "REDTEAM_NODES": str(m.base / "nodes.sh")})
        argv, rcs, want_json = ["fleet", "run", "--slurm", "--json", "--deadline", "5", "--keep", str(mnt / "k")], \
            (0, 1, 2), True
    else:
        raise ValueError(which)
    r = ns_run8(m, setup, argv, timeout=50)
    reap(m.base)
    judge_surface(r, want_json, rcs, secs=35)


family("disk", "target", {k: k for k in ("out_json", "out_junit", "out_prometheus", "out_markdown", "junit_full",
                                         "summary_full", "cache_full", "cache_no_inodes", "bench_cache_full",
                                         "bench_cache_no_inodes", "prefix_full", "prefix_no_inodes",
                                         "home_full_completion", "keep_full_fleet")}, disk_target_case, limit=90)


# ====================================================================================================================
# stdio: standard output, input and error of odd kinds

STDOUT_KINDS = ("closed", "dev_full", "read_only", "reader_gone", "reader_gone_sigpipe_ignored", "first_byte_then_gone",
                "nonblocking_full", "tty_less_terminal")
STDIO_CMDS = ("check", "check_text", "explain_text", "compat", "fix_text", "help", "show_completion")


def spawn(m: M, argv: list[str], stdin=None, stdout=None, stderr=None, preexec=None, pass_fds=()) -> subprocess.Popen:  # type: ignore[no-untyped-def]
    return subprocess.Popen(m.argv(*argv), env=m.env, cwd=str(m.cwd), stdin=stdin if stdin is not None else subprocess.DEVNULL,
                            stdout=stdout, stderr=stderr if stderr is not None else subprocess.PIPE,
                            start_new_session=True, preexec_fn=preexec, pass_fds=pass_fds)


def finish(proc: subprocess.Popen, timeout: float = 40) -> tuple[int, bytes]:
    try:
        _, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        kill_group(proc.pid)
        raise Fail(f"hang: still running after {timeout} s") from None
    kill_group(proc.pid)
    return proc.returncode, err or b""


def stdout_case(ctx: Ctx, arg: tuple[str, str]) -> None:
    kind, which = arg
    m = healthy(ctx)
    argv, want_json, rcs = surface(ctx, m, which)
    out = b""
    start = time.monotonic()
    if kind == "closed":
        proc = spawn(m, argv, stdout=subprocess.DEVNULL, preexec=lambda: os.close(1))
        rc, err = finish(proc)
        want = (74,)
    elif kind == "dev_full":
        with open("/dev/full", "wb") as full:
            proc = spawn(m, argv, stdout=full)
        rc, err = finish(proc)
        want = (74,)
    elif kind == "read_only":
        p = m.base / "ro-out"
        p.write_bytes(b"")
        with open(p, "rb") as ro:
            proc = spawn(m, argv, stdout=ro)
        rc, err = finish(proc)
        want = (74,)
    elif kind in ("reader_gone", "reader_gone_sigpipe_ignored"):
        rd, wr = os.pipe()
        os.close(rd)
        pre = (lambda: signal.signal(signal.SIGPIPE, signal.SIG_IGN)) if "ignored" in kind else None
        proc = spawn(m, argv, stdout=wr, preexec=pre)
        os.close(wr)
        rc, err = finish(proc)
        want = (141,)
    elif kind == "first_byte_then_gone":
        rd, wr = os.pipe()
        proc = spawn(m, argv, stdout=wr)
        os.close(wr)
        out = os.read(rd, 1)
        os.close(rd)
        rc, err = finish(proc)
        want = (141,) + rcs
    elif kind == "nonblocking_full":
        rd, wr = os.pipe()
        fcntl.fcntl(wr, fcntl.F_SETFL, fcntl.fcntl(wr, fcntl.F_GETFL) | os.O_NONBLOCK)
        filled = 0
        try:
            while True:
                filled += os.write(wr, b"x" * 4096)
        except BlockingIOError:
            pass
        proc = spawn(m, argv, stdout=wr)
        os.close(wr)
        time.sleep(1.0)
        chunks = []
        while True:
            b = os.read(rd, 65536)
            if not b:
                break
            chunks.append(b)
        os.close(rd)
        rc, err = finish(proc)
        out = b"".join(chunks)[filled:]
        want = rcs
    elif kind == "tty_less_terminal":
        master, slave = pty.openpty()
        proc = spawn(m, argv, stdout=slave)
        os.close(slave)
        chunks = []
        while True:
            try:
                b = os.read(master, 65536)
            except OSError:
                break
            if not b:
                break
            chunks.append(b)
        os.close(master)
        rc, err = finish(proc)
        out = b"".join(chunks).replace(b"\r\n", b"\n")
        want = rcs
    else:
        raise ValueError(kind)
    secs = time.monotonic() - start
    reap(m.base)
    r = R(rc, out, err, secs)
    for word in BAD_WORDS:
        expect(word not in r.err, f"{word!r}: {r!r}")
    expect(rc in want, f"stdout {kind}: exit {rc}, README documents {want}: {r!r}")
    expect(secs < 35, f"took {secs:.1f} s")
    if rc == 74:
        expect(len(err_lines(r)) == 1, f"EX_IOERR is one line on stderr, got {err_lines(r)}")
    if rc == 141:
        expect(not err_lines(r), f"a reader gone is a quiet stop, got stderr {r.err[-300:]!r}")
    if kind in ("nonblocking_full", "tty_less_terminal"):
        expect(out.strip(), "nothing reached the output")
        if want_json:
            one_json(R(rc, out, err, secs))
        else:
            no_raw_controls(strip_sgr(r.out), "the text output")


family("stdio", "stdout", {f"{k}-{c}": (k, c) for k in STDOUT_KINDS for c in STDIO_CMDS}, stdout_case, limit=60)


def stderr_case(ctx: Ctx, arg: tuple[str, str]) -> None:
    kind, which = arg
    m = healthy(ctx)
    argv = {"usage": ["check", "--jsn"], "usage_json": ["check", "--json", "--require", "cudnn>>9"],
            "check": ["check", "--json"], "explain_stdin_closed": ["explain", "-", "--json"]}[which]
    rcs = {"usage": (2,), "usage_json": (2,), "check": (0, 1), "explain_stdin_closed": (2,)}[which]
    pre = None
    if kind == "closed":
        pre = (lambda: (os.close(2), os.close(0))) if which == "explain_stdin_closed" else (lambda: os.close(2))
        proc = spawn(m, argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, preexec=pre)
    else:
        full = open("/dev/full", "wb")
        pre = (lambda: os.close(0)) if which == "explain_stdin_closed" else None
        proc = spawn(m, argv, stdout=subprocess.PIPE, stderr=full, preexec=pre)
        full.close()
    try:
        out, _ = proc.communicate(timeout=40)
    except subprocess.TimeoutExpired:
        kill_group(proc.pid)
        raise Fail("hang") from None
    r = R(proc.returncode, out, b"", 0)
    expect(r.rc in rcs, f"stderr {kind}: exit {r.rc}, README: {rcs} (a closed or full stderr changes nothing): {r!r}")
    for word in BAD_WORDS:
        expect(word not in r.out, f"{word!r}: {r!r}")
    if "--json" in argv:
        one_json(r)


family("stdio", "stderr", {f"{k}-{c}": (k, c) for k in ("closed", "dev_full")
                           for c in ("usage", "usage_json", "check", "explain_stdin_closed")}, stderr_case, limit=60)


# ====================================================================================================================
# term: TERM, COLUMNS, LINES, colours, locales

TERM_ENVS = {
    "columns_0": {"COLUMNS": "0"}, "columns_1": {"COLUMNS": "1"}, "columns_2": {"COLUMNS": "2"},
    "columns_negative": {"COLUMNS": "-5"}, "columns_huge": {"COLUMNS": "99999999999999999999"},
    "columns_arabic": {"COLUMNS": "\u0663\u0660"}, "lines_0_columns_1": {"LINES": "0", "COLUMNS": "1"},
    "term_dumb": {"TERM": "dumb"}, "no_color": {"NO_COLOR": "1"},
    "lang_bogus": {"LANG": "xx_XX.BOGUS", "LC_ALL": ""}, "lc_all_turkish": {"LC_ALL": "tr_TR.UTF-8"},
}
TERM_CMDS = {"check": (("check",), (0, 1)), "help": (("check", "--help"), (0,)), "top_help": (("--help",), (0,)),
             "explain": (("explain", "CD301"), (0, 1)), "fix": (("fix",), (0, 1)),
             "compat": (("compat", "torch==2.5.1"), (0, 1)), "fleet_help": (("fleet", "--help"), (0,)),
             "usage": (("chek",), (2,))}
COLOUR_PARAMS = set(range(30, 50)) | set(range(90, 98)) | set(range(100, 108))


def colour_codes(text: str) -> list[str]:
    """The SGR sequences in TEXT that set a colour (bold, dim and reset are styles, not colour)."""
    found = []
    for params in re.findall(r"\x1b\[([0-9;]*)m", text):
        if any(p.isdigit() and int(p) in COLOUR_PARAMS for p in params.split(";")):
            found.append(params)
    return found


def term_case(ctx: Ctx, arg: tuple[str, str]) -> None:
    key, which = arg
    m = healthy(ctx)
    argv, rcs = TERM_CMDS[which]
    env = dict(TERM_ENVS[key])
    r = m.run(*argv, env=env, timeout=50)
    judge(r, rcs, want_json=False, secs=35)
    expect(r.out.strip() or r.err.strip(), "nothing was printed")
    if env.get("NO_COLOR") and "FORCE_COLOR" not in env:
        expect(not colour_codes(r.out + r.err), "NO_COLOR is set and colour escapes were printed")
    text = strip_sgr(r.out + r.err) if env.get("FORCE_COLOR") else r.out + r.err
    no_raw_controls(text, "the output (on a pipe, no colour unless FORCE_COLOR)")


family("term", "env", {f"{k}-{c}": (k, c) for k in TERM_ENVS for c in TERM_CMDS
                       if not (c == "usage" and not k.startswith(("columns_0", "lang", "lc")))},
       term_case, limit=60)


def pty_case(ctx: Ctx, arg: tuple[str, str]) -> None:
    key, which = arg
    if shutil.which("script") is None:
        raise Skip("needs util-linux script")
    m = healthy(ctx)
    argv, rcs = TERM_CMDS[which]
    env = dict(TERM_ENVS[key])
    cmd = shlex.join(m.argv(*argv))
    r = run_proc(["script", "-qefc", cmd, "/dev/null"], {**m.env, **env}, m.cwd, 50)
    out = r.out.replace("\r\n", "\n")
    for word in BAD_WORDS:
        expect(word not in out, f"{word!r}: {out[-400:]!r}")
    expect(r.rc in rcs, f"exit {r.rc} on a terminal, README: {rcs}: {out[-300:]!r}")
    expect(out.strip(), "nothing was printed on the terminal")
    if env.get("NO_COLOR") and "FORCE_COLOR" not in env:
        expect(not colour_codes(out), f"NO_COLOR is set and colour reached the terminal: {out[:200]!r}")
    no_raw_controls(strip_sgr(out), "what reached the terminal", allow="\n")


family("term", "pty", {f"{k}-{c}": (k, c) for k, cs in (
    ("no_color", ("check", "top_help", "explain", "fix", "compat")), ("term_dumb", ("check", "top_help")),
    ("columns_0", ("check", "explain")), ("columns_1", ("top_help",)), ("lang_bogus", ("check",)))
    for c in cs}, pty_case, limit=60)

# ====================================================================================================================
# limits: the kinds of ulimit earlier rounds did not try

LIMITS = {
    "data_40m": "ulimit -S -d 40000", "data_90m": "ulimit -S -d 90000",
    "stack_unlimited": "ulimit -s unlimited", "nofile_soft_to_hard": "ulimit -S -n $(ulimit -H -n)",
    "nofile_hard_24": "ulimit -n 24", "locks_0_msgqueue_0": "ulimit -x 0 && ulimit -q 0",
    "as_hard_130m": "ulimit -v 130000",
    "stack_hard_1m": "ulimit -s 1024",
}
LIMIT_CMDS = ("check", "fix", "explain", "image", "install")


def limit_case(ctx: Ctx, arg: tuple[str, str]) -> None:
    key, which = arg
    m = healthy(ctx)
    argv, want_json, rcs = surface(ctx, m, which)
    r = run_proc(["bash", "-c", f"{LIMITS[key]} && exec {shlex.join(m.argv(*argv))}"], m.env, m.cwd, 50)
    reap(m.base)
    judge_surface(r, want_json, rcs, secs=35, extra_rcs=(2,))
    if r.rc == 2:
        text = error_text(r)
        expect("ulimit" in text or "limit" in text.lower(), f"exit 2 without naming the limit: {r.err[-300:]!r}")


family("limits", "ulimit", {f"{k}-{c}": (k, c) for k in LIMITS for c in LIMIT_CMDS}, limit_case, limit=90)


# ====================================================================================================================
# path: a hostile PATH shadowing the helper programs

PATH_PROGRAMS = {
    "ldconfig": "check", "nvidia-smi": "check", "gcc": "bench", "nvcc": "check", "pwsh": "completion_pwsh",
    "srun": "fleet_run", "python3": "fix", "sh": "check", "powershell.exe": "wsl",
}
BEHAVIOURS = {
    "hangs": "#!/bin/sh\nexec sleep 600\n",
    "garbage": "#!/bin/sh\nhead -c 2000000 /dev/urandom\nhead -c 200000 /dev/urandom >&2\nexit 0\n",
    "crashes": "#!/bin/sh\nprintf 'half a line'\nkill -SEGV $$\n",
    "daemon_holds_stdout": "#!/bin/sh\nsetsid sleep 40 &\necho 1.0\nexit 0\n",
    "escapes_exit_127": "#!/bin/sh\nprintf '\\033]0;owned\\007\\033[2J\\033[31mcommand not found\\n' >&2\nexit 127\n",
}


def path_case(ctx: Ctx, arg: tuple[str, str]) -> None:
    prog, how = arg
    where = PATH_PROGRAMS[prog]
    bench_argv: list[str] = []
    if where == "bench":  # a bench that reaches its CPU baseline, which the C compiler builds
        m, bench_argv = bench_machine(ctx)
        m.env["CUDNN_DOCTOR_BENCH_TIMEOUT"] = "10"
    else:
        m = healthy(ctx)
    bin_ = m.base / "shadow"
    bin_.mkdir()
    target = bin_ / prog
    target.write_text(BEHAVIOURS[how])
    target.chmod(0o755)
    if prog == "gcc":  # the C compiler by either of its names
        os.link(target, bin_ / "cc")
    m.env["PATH"] = f"{bin_}:{m.env['PATH']}"
    m.env["CUDNN_DOCTOR_HELPER_TIMEOUT"] = "3"
    rcs: tuple = (0, 1)
    if where == "completion_pwsh":
        argv, want_json, rcs = ["--install-completion", "powershell"], False, (0, 2)
    elif where == "fleet_run":
        argv, want_json, rcs = ["fleet", "run", "--slurm", "--json", "--deadline", "4"], True, (0, 1, 2)
    elif where == "wsl":
        (m.root / "dev" / "dxg").write_text("")
        m.env.update({"WSL_DISTRO_NAME": "Ubuntu", "WSL_INTEROP": "/run/WSL/1_interop"})
        argv, want_json = ["check", "--json"], True
    elif where == "bench":
        argv, want_json, rcs = bench_argv, True, (0, 1)
    else:
        argv, want_json, rcs = surface(ctx, m, where)
    r = m.run(*argv, timeout=50)
    reap(m.base)
    judge_surface(r, want_json, rcs, secs=30)


family("path", "shadow", {f"{p}-{h}": (p, h) for p in PATH_PROGRAMS for h in BEHAVIOURS}, path_case, limit=90)


# ====================================================================================================================
# umask, as an unprivileged user

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


def umask_case(ctx: Ctx, arg: tuple[str, str]) -> None:
    mask, op = arg
    m = healthy(ctx)
    doc = lambda *a: shlex.join(m.argv(*a))  # noqa: E731
    if op == "output":
        out = m.base / "o" / "report.json"
        out.parent.mkdir()
        r = as_nobody(m, f"umask {mask}; {doc('check', '--format', 'json', '-o', str(out))}")
        judge(r, (0, 1, 2), want_json=False, secs=35)
        if r.rc in (0, 1):
            one_json(R(0, out.read_bytes(), b"", 0))
    elif op == "cache_twice":
        r1 = as_nobody(m, f"umask {mask}; {doc('check', '--json')}")
        d1 = judge(r1, (0, 1, 2), secs=35)
        r2 = as_nobody(m, f"umask {mask}; {doc('check', '--json')}")
        d2 = judge(r2, (0, 1, 2), secs=35)
        expect(r1.rc == r2.rc, f"a second check under umask {mask} answers {r2.rc}, the first {r1.rc}")
        del d1, d2
    elif op == "completion":
        (m.home / ".bashrc").write_text("# mine\n")
        r = as_nobody(m, f"umask {mask}; {doc('--install-completion', 'bash')}")
        judge(r, (0, 2), want_json=False, secs=35)
        expect((m.home / ".bashrc").read_text().startswith("# mine\n"), "the user's .bashrc lost its bytes")
        _sourced_scripts_exist(m, m.home / ".bashrc")
    elif op == "install":
        pfx = m.base / "pfx"
        r = as_nobody(m, f"umask {mask}; {doc('install', '--from', str(archive(ctx)), '--prefix', str(pfx), '--yes', '--json')}")
        judge(r, (0, 1, 2), secs=50)
        if r.rc == 0:
            expect(installed_as_recorded(ctx, pfx) == [], "the install said done but is not whole")
            u = as_nobody(m, f"umask {mask}; {doc('uninstall', '--prefix', str(pfx), '--yes', '--json')}")
            judge(u, (0, 1, 2), secs=50)
    elif op == "bench":
        r = as_nobody(m, f"umask {mask}; {doc('bench', '--json', '--size', 'tiny', '--repeats', '1')}")
        judge(r, (0, 1, 2), secs=60)


family("umask", "as_nobody", {f"{k}-{op}": (v, op) for k, v in (("0777", "0777"), ("0277", "0277"), ("0000", "0000"))
                              for op in ("output", "cache_twice", "completion", "install", "bench")},
       umask_case, limit=120)


# ====================================================================================================================
# loops: symlink loops, links to /, deleted and deep working folders

def _loop(m: M, name: str = "loop") -> Path:
    p = m.base / name
    p.symlink_to(name)
    return p


def loops_case(ctx: Ctx, key: str) -> None:
    m = healthy(ctx)
    env: dict = {}
    rcs: tuple = (0, 1)
    want_json = True
    argv: list[str]
    untouched: Path | None = None
    if key == "home_loop":
        env["HOME"] = str(_loop(m))
        argv = ["check", "--json"]
    elif key == "home_loop_completion":
        env["HOME"] = str(_loop(m))
        argv, rcs, want_json = ["--install-completion", "bash"], (0, 2), False
    elif key == "xdg_cache_loop":
        m.env.pop("CUDNN_DOCTOR_CACHE_DIR")
        env["XDG_CACHE_HOME"] = str(_loop(m))
        argv, rcs = ["check", "--json"], (0, 1, 2)
    elif key in ("cuda_home_loop", "cuda_path_loop", "cudnn_path_loop"):
        env[{"cuda_home_loop": "CUDA_HOME", "cuda_path_loop": "CUDA_PATH", "cudnn_path_loop": "CUDNN_PATH"}[key]] = \
            str(_loop(m))
        argv = ["check", "--json"]
    elif key == "search_path_loop":
        argv, rcs = ["check", "--json", "--search-path", str(_loop(m))], (0, 1, 2)
    elif key == "search_path_link_to_root":
        d = m.base / "sp"
        d.mkdir()
        (d / "up").symlink_to("/")
        argv = ["check", "--json", "--search-path", str(d)]
    elif key == "search_path_cycle":
        d = m.base / "sp" / "a"
        d.mkdir(parents=True)
        (d / "cyc").symlink_to("..")
        (d / "self").symlink_to(".")
        argv = ["check", "--json", "--search-path", str(m.base / "sp")]
    elif key == "ld_library_path_cycle":
        d = m.base / "ll"
        d.mkdir()
        (d / "cyc").symlink_to(".")
        (d / "up").symlink_to("/")
        m.add_lib(d)
        m.add_lib(d / "cyc" / "cyc" / "cyc")
        argv = ["check", "--json"]
    elif key == "project_loop":
        argv, rcs = ["check", "--json", "--project", str(_loop(m))], (0, 1, 2)
    elif key == "project_link_to_root":
        d = m.base / "proj"
        d.mkdir()
        (d / ".git").mkdir()
        (d / "up").symlink_to("/")
        (d / "cyc").symlink_to(".")
        argv, rcs = ["check", "--json", "--project", str(d)], (0, 1, 2)
    elif key == "python_loop":
        argv, rcs = ["check", "--json", "--python", str(_loop(m))], (0, 1, 2)
    elif key in ("output_loop", "junit_loop"):
        lp = _loop(m)
        untouched = lp
        argv = ["check", "--format", "json", "-o", str(lp)] if key == "output_loop" else \
            ["check", "--json", "--junit-xml", str(lp)]
        rcs, want_json = (0, 1, 2), key == "junit_loop"
    elif key == "summary_loop":
        env["GITHUB_STEP_SUMMARY"] = str(_loop(m))
        argv, rcs, want_json = ["check", "--format", "github"], (0, 1, 2), False
    elif key in ("prefix_loop", "uninstall_prefix_loop"):
        lp = _loop(m)
        argv = ["install", "--from", str(archive(ctx)), "--prefix", str(lp), "--yes", "--json"] \
            if key == "prefix_loop" else ["uninstall", "--prefix", str(lp), "--yes", "--json"]
        rcs = (1, 2)
    elif key == "from_loop":
        argv, rcs = ["install", "--from", str(_loop(m)), "--prefix", str(m.base / "pfx"), "--yes", "--json"], (1, 2)
    elif key == "merge_dir_cycle":
        d = reports_dir(m)
        (d / "cyc").symlink_to("..")
        (d / "loop.json").symlink_to("loop.json")
        argv, rcs = ["fleet", "merge", str(d), "--json"], (0, 1, 2)
    elif key == "merge_dir_link_to_root":
        d = reports_dir(m)
        (d / "up").symlink_to("/")
        (d / "up.json").symlink_to("/")
        argv, rcs = ["fleet", "merge", str(d), "--json"], (0, 1, 2)
    elif key == "keep_loop":
        bin_ = m.base / "bin"
        bin_.mkdir()
        (bin_ / "srun").write_text("#!/bin/sh\nexit 0\n")
        (bin_ / "srun").chmod(0o755)
        env["PATH"] = f"{bin_}:{m.env['PATH']}"
        argv, rcs = ["fleet", "run", "--slurm", "--json", "--deadline", "4", "--keep", str(_loop(m))], (1, 2)
    elif key == "docker_config_loop":
        env["DOCKER_CONFIG"] = str(_loop(m))
        reg = Reg()
        try:
            r = m.run("image", reg.ref, "--json", env=env, timeout=50)
        finally:
            reg.close()
        judge(r, (0, 1, 2), secs=35)
        return
    elif key in ("xdg_config_loop_fish", "zdotdir_loop_zsh"):
        var, shell = ("XDG_CONFIG_HOME", "fish") if "fish" in key else ("ZDOTDIR", "zsh")
        env[var] = str(_loop(m))
        argv, rcs, want_json = ["--install-completion", shell], (0, 2), False
    elif key in ("tmpdir_loop_deep", "tmpdir_loop_bench", "tmpdir_loop_fix"):
        env["TMPDIR"] = str(_loop(m))
        argv = {"tmpdir_loop_deep": ["check", "--deep", "--json"], "tmpdir_loop_fix": ["fix", "--json"],
                "tmpdir_loop_bench": ["bench", "--json", "--size", "tiny", "--repeats", "1"]}[key]
    elif key == "toolkit_cycle":
        tk = m.root / "usr" / "local" / "cuda-12.8"
        (tk / "lib64").mkdir(parents=True)
        (tk / "version.json").write_text(json.dumps({"cuda": {"version": "12.8.1"}}))
        (tk / "lib64" / "up").symlink_to("../..")
        (tk / "lib64" / "root").symlink_to("/")
        (m.root / "usr" / "local" / "cuda").symlink_to("cuda-12.8")
        argv = ["check", "--json"]
    elif key == "usr_local_cuda_self_loop":
        (m.root / "usr" / "local").mkdir(parents=True)
        (m.root / "usr" / "local" / "cuda").symlink_to("cuda")
        (m.root / "usr" / "local" / "cuda-13.0").symlink_to("cuda")
        argv = ["check", "--json"]
    elif key == "site_packages_cycle":
        site = torch_machine(ctx, m)
        (site / "cyc").symlink_to("..")
        (site / "up").symlink_to("/")
        argv = ["check", "--json"]
    elif key == "oci_blobs_cycle":
        folder = raw_oci(ctx)
        (folder / "blobs" / "sha256" / "cyc").symlink_to("..")
        (folder / "blobs" / "up").symlink_to("/")
        argv, rcs = ["image", str(folder), "--json"], (0, 1, 2)
    elif key == "explain_file_dir_cycle":
        d = m.base / "logs"
        d.mkdir()
        (d / "cyc").symlink_to(".")
        argv, rcs = ["explain", "--from-file", str(d / "cyc" / "cyc"), "--json"], (2,)
    elif key == "cwd_deleted":
        d = m.base / "gone"
        d.mkdir()
        m.cwd = d
        proc = subprocess.Popen(["sh", "-c", f"cd {shlex.quote(str(d))} && rmdir {shlex.quote(str(d))} && exec "
                                 f"{shlex.join(m.argv('check', '--json'))}"], env=m.env, cwd=str(m.base),
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
        try:
            out, err = proc.communicate(timeout=50)
        except subprocess.TimeoutExpired:
            kill_group(proc.pid)
            raise Fail("hang") from None
        judge(R(proc.returncode, out, err, 0), (0, 1), secs=40)
        return
    elif key == "cwd_deep":
        d = m.base
        for _ in range(25):
            d = d / ("d" * 200)
        script = "; ".join(f"mkdir {'d' * 200} && cd {'d' * 200}" for _ in range(25))
        r = run_proc(["bash", "-c", f"{script} && exec {shlex.join(m.argv('check', '--json'))}"], m.env, m.base, 50)
        judge(r, (0, 1), secs=35)
        return
    elif key == "cwd_unreadable":
        d = m.base / "locked"
        d.mkdir()
        r = as_nobody(m, f"cd {shlex.quote(str(d))} && chmod 0 . && exec {shlex.join(m.argv('check', '--json'))}")
        judge(r, (0, 1), secs=35)
        return
    else:
        raise ValueError(key)
    r = m.run(*argv, env=env, timeout=50)
    reap(m.base)
    judge_surface(r, want_json, rcs, secs=35)
    if untouched is not None:
        expect(untouched.is_symlink() and os.readlink(untouched) == untouched.name, "the user's link was replaced")


LOOP_KEYS = ("home_loop", "home_loop_completion", "xdg_cache_loop", "cuda_home_loop", "cudnn_path_loop",
             "search_path_loop", "search_path_link_to_root", "search_path_cycle", "ld_library_path_cycle", "project_loop",
             "project_link_to_root", "python_loop", "output_loop", "junit_loop", "summary_loop", "prefix_loop",
             "uninstall_prefix_loop", "from_loop", "merge_dir_cycle", "merge_dir_link_to_root", "keep_loop",
             "docker_config_loop", "xdg_config_loop_fish", "zdotdir_loop_zsh", "tmpdir_loop_deep", "tmpdir_loop_bench",
             "toolkit_cycle", "usr_local_cuda_self_loop", "site_packages_cycle", "oci_blobs_cycle",
             "explain_file_dir_cycle", "cwd_deleted", "cwd_deep", "cwd_unreadable")
family("loops", "path", {k: k for k in LOOP_KEYS}, loops_case, limit=90)

# ====================================================================================================================
# image: hostile tars and registries (inputs none of rounds 5-7 used)

def _gz(data: bytes) -> bytes:
    return gzip.compress(data, 1)


def _raw_layer(members: list[tuple[bytes, int, bytes, bytes]], end: bool = True) -> bytes:
    """A tar of (name, size claimed, typeflag, body) written by hand."""
    out = b""
    for name, size, typ, body in members:
        out += img().tar_header(name, size, typ) + body + _pad(len(body))
    return out + (b"\0" * 1024 if end else b"")


def _ver() -> bytes:
    return json.dumps({"cuda": {"version": "12.8.1"}}).encode()


def _hdr_with(name: bytes, size: int, typ: bytes, patch: Callable[[bytearray], None]) -> bytes:
    h = bytearray(img().tar_header(name, size, typ))
    patch(h)
    h[148:156] = b" " * 8
    h[148:156] = b"%06o\0 " % sum(h)
    return bytes(h)


def tar_layer(kind: str) -> bytes:
    v = _ver()
    vn = b"usr/local/cuda-12.8/version.json"
    if kind == "all_zeros":
        return b"\0" * 10240
    if kind == "one_header_claims_1mb":
        return img().tar_header(vn, 1 << 20)
    if kind == "bad_checksum_first":
        h = bytearray(img().tar_header(vn, len(v)))
        h[148:156] = b"0000001\0"
        return bytes(h) + v + _pad(len(v)) + b"\0" * 1024
    if kind in ("typeflag_V", "typeflag_M", "typeflag_7", "typeflag_K_alone", "typeflag_x_garbage"):
        t = {"typeflag_V": b"V", "typeflag_M": b"M", "typeflag_7": b"7", "typeflag_K_alone": b"K",
             "typeflag_x_garbage": b"x"}[kind]
        body = b"30 path=\x1b]0;x\x07/etc/passwd\n" if t == b"x" else b"label\0" * 10
        return _raw_layer([(b"member", len(body), t, body), (vn, len(v), b"0", v)])
    if kind == "char_device_libcudnn":
        return _raw_layer([(b"usr/lib/x86_64-linux-gnu/libcudnn.so.9", 0, b"3", b""), (vn, len(v), b"0", v)])
    if kind == "fifo_version_json":
        return _raw_layer([(vn, 0, b"6", b"")])
    if kind == "hardlink_cycle":
        a = _hdr_with(b"usr/lib/a.so", 0, b"1", lambda h: h.__setitem__(slice(157, 169), b"usr/lib/b.so".ljust(12, b"\0")))
        b = _hdr_with(b"usr/lib/b.so", 0, b"1", lambda h: h.__setitem__(slice(157, 169), b"usr/lib/a.so".ljust(12, b"\0")))
        return a + b + img().tar_header(vn, len(v)) + v + _pad(len(v)) + b"\0" * 1024
    if kind == "binary_name":
        return _raw_layer([(os.fsencode(binary_value(5, 99)).replace(b"/", b"_"), len(v), b"0", v),
                           (vn, len(v), b"0", v)])
    if kind == "path_3000_deep":
        ti = tarfile.TarInfo("a/" * 3000 + "version.json")
        ti.size = len(v)
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as t:
            t.addfile(ti, io.BytesIO(v))
        return buf.getvalue()
    if kind == "mtime_base256_uid_negative":
        def patch(h: bytearray) -> None:
            h[136:148] = b"\xff" * 12
            h[108:116] = b"\xff" * 8
        return _hdr_with(vn, len(v), b"0", patch) + v + _pad(len(v)) + b"\0" * 1024
    if kind == "size_field_garbage":
        return _hdr_with(vn, 0, b"0", lambda h: h.__setitem__(slice(124, 136), b"\x1b[2J;rm -rf")) + v + _pad(len(v))
    if kind == "member_is_tar_of_tars":
        inner = _raw_layer([(vn, len(v), b"0", v)])
        inner2 = _raw_layer([(b"inner.tar", len(inner), b"0", inner)])
        return _raw_layer([(b"outer.tar", len(inner2), b"0", inner2)])
    raise ValueError(kind)


TAR_KINDS = ("all_zeros", "one_header_claims_1mb", "bad_checksum_first", "typeflag_V",
             "typeflag_K_alone", "typeflag_x_garbage", "char_device_libcudnn", "fifo_version_json", "hardlink_cycle",
             "binary_name", "path_3000_deep", "mtime_base256_uid_negative", "size_field_garbage", "member_is_tar_of_tars")


def tar_case(ctx: Ctx, kind: str) -> None:
    i = img()
    layer = tar_layer(kind)
    folder = raw_oci(ctx, layers=[(_gz(layer), i.LAYER_GZIP)])
    judge_image(ctx, str(folder), seconds=30)
    folder2 = raw_oci(ctx, layers=[(layer, i.LAYER_TAR)], name="oci-plain")
    judge_image(ctx, str(folder2), seconds=30, text_too=False)


family("image", "tar", {k: k for k in TAR_KINDS}, tar_case, limit=90)


def compression_case(ctx: Ctx, kind: str) -> None:
    import bz2
    import lzma
    i = img()
    plain = _raw_layer([(b"usr/local/cuda-12.8/version.json", len(_ver()), b"0", _ver())])
    blob, media = {
        "xz_as_gzip": (lzma.compress(plain), i.LAYER_GZIP), "bzip2_as_gzip": (bz2.compress(plain), i.LAYER_GZIP),
        "double_gzip": (_gz(_gz(plain)), i.LAYER_GZIP), "gzip_as_plain": (_gz(plain), i.LAYER_TAR),
        "gzip_trailing_garbage": (_gz(plain) + os.fsencode(binary_value(9, 5000)), i.LAYER_GZIP),
        "gzip_members_1000": (b"".join(_gz(plain[k:k + 11]) for k in range(0, len(plain), 11)), i.LAYER_GZIP),
    }[kind]
    folder = raw_oci(ctx, layers=[(blob, media)])
    judge_image(ctx, str(folder), seconds=30)


family("image", "compression", {k: k for k in ("xz_as_gzip", "bzip2_as_gzip", "double_gzip", "gzip_as_plain",
                                                "gzip_trailing_garbage", "gzip_members_1000")},
       compression_case, limit=90)


def layout_case(ctx: Ctx, kind: str) -> None:
    i = img()
    if kind == "index_no_manifests":
        folder = raw_oci(ctx, idx=lambda o: o.__setitem__("manifests", []))
    elif kind == "index_only_windows_arm":
        def f(o: dict) -> None:
            m0 = o["manifests"][0]
            o["manifests"] = [{**m0, "platform": {"os": "windows", "architecture": "amd64"}},
                              {**m0, "platform": {"os": "linux", "architecture": "arm64", "variant": "v8"}}]
        folder = raw_oci(ctx, idx=f)
    elif kind == "config_media_type_garbage":
        folder = raw_oci(ctx, man=lambda o: o["config"].__setitem__("mediaType", "\x1b]0;x\x07text/html"))
    elif kind == "index_zero_bytes":
        folder = raw_oci(ctx, idx=b"")
    elif kind == "layout_version_99":
        folder = raw_oci(ctx)
        (folder / "oci-layout").write_text('{"imageLayoutVersion": "99.0.0"}')
    elif kind == "index_json_lines":
        folder = raw_oci(ctx)
        text = (folder / "index.json").read_bytes()
        (folder / "index.json").write_bytes(text + b"\n" + text)
    else:
        i2 = img()
        config, layers = _good_parts()
        path = i2.docker_archive(ctx.work / "app.tar", config, layers)
        with tarfile.open(path) as t:
            members = {x.name: (x, t.extractfile(x).read() if x.isfile() else None) for x in t.getmembers()}
        man = json.loads(members["manifest.json"][1])
        if kind == "docker_layers_name_folder":
            man[0]["Layers"] = ["somedir"]
        elif kind == "docker_repositories_binary":
            pass
        elif kind == "docker_config_missing":
            man[0]["Config"] = "nothere.json"
        elif kind == "docker_layers_empty_string":
            man[0]["Layers"] = [""]
        out = ctx.work / "app2.tar"
        with tarfile.open(out, "w") as t:
            for name, (info, data) in members.items():
                if name == "manifest.json":
                    data = json.dumps(man).encode()
                    info.size = len(data)
                t.addfile(info, io.BytesIO(data) if data is not None else None)
            if kind == "docker_layers_name_folder":
                d = tarfile.TarInfo("somedir")
                d.type = tarfile.DIRTYPE
                t.addfile(d)
            if kind == "docker_repositories_binary":
                b = os.fsencode(binary_value(3, 4000))
                ti = tarfile.TarInfo("repositories")
                ti.size = len(b)
                t.addfile(ti, io.BytesIO(b))
        judge_image(ctx, str(out), seconds=30)
        return
    judge_image(ctx, str(folder), seconds=30)
    del i


family("image", "layout", {k: k for k in ("index_no_manifests", "index_only_windows_arm", "config_media_type_garbage",
                                          "index_zero_bytes", "layout_version_99", "index_json_lines",
                                          "docker_layers_name_folder", "docker_repositories_binary",
                                          "docker_config_missing", "docker_layers_empty_string")},
       layout_case, limit=90)


def cut_case(ctx: Ctx, arg: tuple[str, int]) -> None:
    form, seed = arg
    i = img()
    config, layers = _good_parts()
    if form == "docker_save":
        path = i.docker_archive(ctx.work / "app.tar", config, layers)
    else:
        folder = i.oci_layout(ctx.work / "oci-full", config, layers)
        path = ctx.work / "oci.tar"
        with tarfile.open(path, "w") as t:
            t.add(folder, arcname=".")
    data = path.read_bytes()
    cut = random.Random(seed).randrange(1, len(data) - 1)
    path.write_bytes(data[:cut])
    judge_image(ctx, str(path), seconds=30)


family("image", "cut", {f"{f}-seed{s}": (f, s) for f in ("docker_save", "oci_archive") for s in range(3)},
       cut_case, limit=90)


def _raw(h: http.server.BaseHTTPRequestHandler, data: bytes, close: bool = True) -> bool:
    h.wfile.write(data)
    h.wfile.flush()
    if close:
        h.close_connection = True
    return True


def reg8_behave(how: str) -> Callable:
    def behave(h: http.server.BaseHTTPRequestHandler, reg: Reg) -> bool:
        i = img()
        path = h.path
        man = "/manifests/" in path
        if how == "continue_100" and man:
            h.wfile.write(b"HTTP/1.1 100 Continue\r\n\r\n")
            return False
        if how == "http10_close_delimited" and man:
            return _raw(h, b"HTTP/1.0 200 OK\r\nContent-Type: " + i.MANIFEST.encode() + b"\r\n\r\n" + reg.manifest)
        if how == "gzip_encoding_garbage" and man:
            return reg.send(h, b"\x1f\x8b\x08\x00garbage" * 50, i.MANIFEST, extra={"Content-Encoding": "gzip"})
        if how == "index_empty" and man:
            return reg.send(h, json.dumps({"schemaVersion": 2, "mediaType": i.INDEX, "manifests": []}).encode(), i.INDEX)
        if how == "schema1_signed" and man:
            body = json.dumps({"schemaVersion": 1, "name": "team/app", "tag": "1", "architecture": "amd64",
                               "fsLayers": [{"blobSum": i.digest(reg.layer)}],
                               "history": [{"v1Compatibility": "{\"id\": \"\\u001b[2J\"}"}],
                               "signatures": [{"protected": "x"}]}).encode()
            return reg.send(h, body, "application/vnd.docker.distribution.manifest.v1+prettyjws")
        if how == "unauthorized_no_challenge":
            return reg.send(h, b'{"errors":[{"code":"UNAUTHORIZED"}]}', code=401)
        if how == "realm_file_url" and "Authorization" not in h.headers:
            return reg.send(h, b"{}", code=401, extra={"WWW-Authenticate": 'Bearer realm="file:///etc/passwd",service="x"'})
        if how == "realm_refused" and "Authorization" not in h.headers:
            return reg.send(h, b"{}", code=401, extra={"WWW-Authenticate": 'Bearer realm="http://127.0.0.1:1/token"'})
        if how == "realm_no_quotes_binary" and "Authorization" not in h.headers:
            return reg.send(h, b"{}", code=401, extra={"WWW-Authenticate": "Bearer realm=\u00ff\u00fe,,,=,service"})
        if how == "redirect_no_location" and man:
            return reg.send(h, b"", code=302)
        if how == "redirect_to_itself" and man:
            return reg.send(h, b"", code=307, extra={"Location": path})
        if how == "redirect_https_to_plain_server" and man:
            return reg.send(h, b"", code=308, extra={"Location": f"https://127.0.0.1:{reg.port}{path}"})
        if how == "header_line_without_colon" and man:
            return _raw(h, b"HTTP/1.1 200 OK\r\nthis is not a header\r\nContent-Length: 2\r\n\r\n{}")
        if how == "header_100kb" and man:
            return _raw(h, b"HTTP/1.1 200 OK\r\nX-Big: " + b"a" * 100000 + b"\r\nContent-Length: 2\r\n\r\n{}")
        if how == "chunked_and_length" and man:
            body = reg.manifest
            return _raw(h, b"HTTP/1.1 200 OK\r\nContent-Type: " + i.MANIFEST.encode() + b"\r\nContent-Length: 5\r\n"
                        b"Transfer-Encoding: chunked\r\n\r\n" + b"%x\r\n" % len(body) + body + b"\r\n0\r\n\r\n")
        if how == "html_content_type" and man:
            return reg.send(h, b"<html><body>\x1b[2Jlogin</body></html>", "text/html")
        if how == "blob_416" and "/blobs/" in path:
            return reg.send(h, b"", code=416)
        if how == "digest_header_mismatch" and man:
            return reg.send(h, reg.manifest, i.MANIFEST, extra={"Docker-Content-Digest": "sha256:" + "0" * 64})
        if how == "status_line_binary" and man:
            return _raw(h, b"HTTP/1.1 2\xff\xfe OK\x1b[2J\r\n\r\n")
        if how == "reset_after_headers" and "/blobs/" in path:
            h.wfile.write(b"HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\nabc")
            h.wfile.flush()
            h.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
            h.connection.close()
            return True
        return False
    return behave


REG8 = ("continue_100", "http10_close_delimited", "gzip_encoding_garbage", "index_empty", "schema1_signed",
        "unauthorized_no_challenge", "realm_file_url", "realm_refused", "realm_no_quotes_binary", "redirect_no_location",
        "redirect_to_itself", "redirect_https_to_plain_server", "header_line_without_colon", "header_100kb",
        "chunked_and_length", "html_content_type", "blob_416", "digest_header_mismatch", "status_line_binary",
        "reset_after_headers")


def reg8_case(ctx: Ctx, how: str) -> None:
    reg = Reg(reg8_behave(how))
    try:
        m = ctx.machine("reg")
        env = {"CUDNN_DOCTOR_IMAGE_TIMEOUT": "8"}
        r = m.run("image", reg.ref, "--json", timeout=50, env=env)
        judge(r, (0, 1, 2), secs=30)
        expect("root:x:0:0" not in r.out + r.err, "a local file reached the output")
        t = m.run("image", reg.ref, timeout=50, env=env)
        judge(t, (0, 1, 2), want_json=False, secs=30)
        no_raw_controls(t.out + t.err, "image's text")
    finally:
        reg.close()


family("image", "registry", {k: k for k in REG8}, reg8_case, limit=90)


# ====================================================================================================================
# install / uninstall: hostile prefixes, hostile --from, kills and stops at seeded instants

def _snapshot_user(prefix: Path) -> dict:
    return user_view(snapshot_tree(prefix)) if prefix.exists() else {}


def install_prefix8_case(ctx: Ctx, key: str) -> None:
    m = ctx.machine()
    a = str(archive(ctx))
    decoy = m.base / "decoy.txt"
    decoy.write_text("the user's unrelated file\n")
    dry = False
    rcs: tuple = (0, 1, 2)
    if key == "root_dry_run":
        prefix, dry = "/", True
    elif key == "proc_self":
        prefix, rcs = "/proc/self", (1, 2)
    elif key == "dev_null":
        prefix, rcs = "/dev/null", (1, 2)
    elif key == "sys_dry_run":
        prefix, dry = "/sys/kernel", True
    elif key == "path_4000":
        p = m.base
        for _ in range(19):
            p = p / ("p" * 200)
        prefix = str(p)
    elif key == "trailing_newline":
        prefix = str(m.base / "pfx\n")
    elif key == "dash":
        prefix = "-"
    elif key == "is_a_file":
        (m.base / "f").write_text("x")
        prefix, rcs = str(m.base / "f"), (1, 2)
    elif key == "lib64_loop":
        pf = m.base / "pfx"
        pf.mkdir()
        (pf / "lib64").symlink_to("lib64")
        prefix, rcs = str(pf), (1, 2)
    elif key == "target_links_to_decoy":
        pf = m.base / "pfx"
        (pf / "lib64").mkdir(parents=True)
        for name in ("libcudnn.so.9.19.0", "libcudnn.so.9", "libcudnn_graph.so.9.19.0", "libcudnn.so"):
            (pf / "lib64" / name).symlink_to(decoy)
        prefix = str(pf)
    elif key == "include_fifo":
        pf = m.base / "pfx"
        (pf / "include").mkdir(parents=True)
        os.mkfifo(pf / "include" / "cudnn.h")
        os.mkfifo(pf / "include" / "cudnn_version.h")
        prefix = str(pf)
    elif key == "lib64_is_file":
        pf = m.base / "pfx"
        pf.mkdir()
        (pf / "lib64").write_text("the user's")
        prefix, rcs = str(pf), (1, 2)
    elif key == "ro_bind":
        pf = m.base / "pfx"
        (pf / "include").mkdir(parents=True)
        (pf / "include" / "mine.h").write_text("mine\n")
        q = shlex.quote(str(pf))
        r = ns_run8(m, f"mount --bind {q} {q} && mount -o remount,ro,bind {q}",
                   ["install", "--from", a, "--prefix", str(pf), "--yes", "--json"], timeout=50)
        judge(r, (1, 2), secs=40)
        return
    else:
        raise ValueError(key)
    before = _snapshot_user(Path(prefix)) if prefix not in ("/", "/sys/kernel", "/proc/self", "/dev/null", "-") else None
    args = ["install", "--from", a, "--prefix", prefix, "--json"] + (["--dry-run"] if dry else ["--yes"])
    r = m.run(*args, timeout=60)
    judge(r, rcs if not dry else (0, 1, 2), secs=50)
    expect(decoy.read_text() == "the user's unrelated file\n", "a file outside the prefix was written through a link")
    if dry:
        return
    pfx = m.cwd / prefix if not os.path.isabs(prefix) else Path(prefix)
    if r.rc == 0 and pfx.is_dir():
        expect(installed_as_recorded(ctx, pfx) == [], "the install said done but is not whole")
    elif before is not None and r.rc != 0:
        expect(_snapshot_user(Path(prefix)) == before, "a failed install changed the prefix")


family("install", "prefix", {k: k for k in ("root_dry_run", "proc_self", "dev_null", "sys_dry_run", "path_4000",
                                            "trailing_newline", "dash", "is_a_file", "lib64_loop",
                                            "target_links_to_decoy", "include_fifo", "lib64_is_file", "ro_bind")},
       install_prefix8_case, limit=120)


def install_from_case(ctx: Ctx, key: str) -> None:
    m = ctx.machine()
    pf = m.base / "pfx"
    a = archive(ctx)
    stdin = None
    rcs: tuple = (1, 2)
    extra: list[str] = []
    if key == "fifo":
        src = m.base / "a.tar.xz"
        os.mkfifo(src)
    elif key == "folder":
        src = m.base / "dir.tar.xz"
        src.mkdir()
    elif key == "dev_zero":
        src = Path("/dev/zero")
    elif key == "dev_stdin_archive":
        src, stdin, rcs = Path("/dev/stdin"), a.read_bytes(), (0, 1, 2)
    elif key == "sparse_2g_named_txz":
        src = m.base / "cudnn-linux-x86_64-9.19.0.7_cuda13-archive.tar.xz"
        with open(src, "wb") as f:
            f.truncate(2 << 30)
    elif key in ("sha_upper", "sha_arabic", "sha_63", "sha_newline"):
        digest = hashlib.sha256(a.read_bytes()).hexdigest()
        val = {"sha_upper": digest.upper(), "sha_arabic": "\u0663" * 64, "sha_63": digest[:63],
               "sha_newline": digest + "\n"}[key]
        src, extra, rcs = a, ["--sha256", val], (0, 1, 2) if key == "sha_upper" else (2,)
    elif key == "mirror_loop":
        lp = m.base / "mloop"
        lp.symlink_to("mloop")
        r = m.run("install", "--version", "9.19.0", "--mirror", str(lp), "--prefix", str(pf), "--yes", "--json",
                  timeout=50)
        judge(r, (1, 2), secs=30)
        return
    elif key == "mirror_fifo_manifest":
        d = m.base / "mirror"
        d.mkdir()
        os.mkfifo(d / "redistrib_9.19.0.json")
        r = m.run("install", "--version", "9.19.0", "--mirror", str(d), "--prefix", str(pf), "--yes", "--json",
                  timeout=50)
        judge(r, (1, 2), secs=30)
        return
    else:
        raise ValueError(key)
    r = m.run("install", "--from", str(src), "--prefix", str(pf), "--yes", "--json", *extra, stdin=stdin, timeout=60)
    judge(r, rcs, secs=40)
    if r.rc == 0:
        expect(installed_as_recorded(ctx, pf) == [], "the install said done but is not whole")
    else:
        expect(not pf.exists() or not [p for p in pf.rglob("libcudnn*")], "a refused install left cuDNN files")


family("install", "from", {k: k for k in ("fifo", "folder", "dev_zero", "dev_stdin_archive", "sparse_2g_named_txz",
                                          "sha_upper", "sha_arabic", "sha_63", "sha_newline", "mirror_loop",
                                          "mirror_fifo_manifest")}, install_from_case, limit=90)


def uninstall_kill_case(ctx: Ctx, seed: int) -> None:
    """Install over a prefix with the user's old copy, then uninstall SIGKILLed at a seeded instant; the next
    uninstall leaves the prefix as it was before the install."""
    m = ctx.machine()
    prefix = prefix_with_old(ctx)
    before = _snapshot_user(prefix)
    r = m.run("install", "--from", str(archive(ctx)), "--prefix", str(prefix), "--yes", "--replace", "--json",
              timeout=60)
    judge(r, (0,), secs=50)
    t0 = time.monotonic()
    probe = m.run("uninstall", "--prefix", str(prefix), "--dry-run", "--json", timeout=40)
    judge(probe, (0, 1), secs=30)
    span = max(0.2, (time.monotonic() - t0) * 1.2)
    at = random.Random(seed).uniform(0.05, span)
    proc = subprocess.Popen(m.argv("uninstall", "--prefix", str(prefix), "--yes", "--json"), env=m.env, cwd=str(m.cwd),
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            start_new_session=True)
    time.sleep(at)
    kill_group(proc.pid)
    proc.communicate()
    again = m.run("uninstall", "--prefix", str(prefix), "--yes", "--json", timeout=60)
    judge(again, (0, 1, 2), secs=50)
    after = _snapshot_user(prefix)
    expect(after == before, f"after an uninstall killed at {at:.2f} s and run again, the prefix is not as before the "
                            f"install: {sorted(set(after.items()) ^ set(before.items()))[:4]}")


family("install", "uninstall_killed", {f"seed{s}": s for s in range(8)}, uninstall_kill_case, limit=150)


def install_stop_case(ctx: Ctx, arg: tuple[str, int]) -> None:
    how, seed = arg
    m = ctx.machine()
    prefix = prefix_with_old(ctx)
    before = _snapshot_user(prefix)
    argv = m.argv("install", "--from", str(archive(ctx)), "--prefix", str(prefix), "--yes", "--replace", "--json")
    at = random.Random(seed).uniform(0.1, 1.2)
    proc = subprocess.Popen(argv, env=m.env, cwd=str(m.cwd), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, start_new_session=True)
    time.sleep(at)
    try:
        if how == "stop_cont":
            os.kill(proc.pid, signal.SIGSTOP)
            time.sleep(2)
            os.kill(proc.pid, signal.SIGCONT)
        elif how == "int_then_term":
            os.kill(proc.pid, signal.SIGINT)
            time.sleep(0.05)
            os.kill(proc.pid, signal.SIGTERM)
        elif how == "hup_then_kill":
            os.kill(proc.pid, signal.SIGHUP)
            time.sleep(0.2)
            os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    try:
        out, err = proc.communicate(timeout=50)
    except subprocess.TimeoutExpired:
        kill_group(proc.pid)
        raise Fail("hang after the signals") from None
    r = R(proc.returncode, out, err, 0)
    for word in BAD_WORDS:
        expect(word not in r.out + r.err, f"{word!r}: {r!r}")
    if how == "stop_cont":
        expect(r.rc == 0, f"an install stopped and continued did not finish: {r!r}")
    if how == "hup_then_kill":
        nxt = m.run("install", "--from", str(archive(ctx)), "--prefix", str(prefix), "--yes", "--replace", "--json",
                    timeout=60)
        judge(nxt, (0,), secs=50)
        expect(installed_as_recorded(ctx, prefix) == [], "the next install after a kill is not whole")
        return
    wrong = installed_as_recorded(ctx, prefix)
    now = _snapshot_user(prefix)
    said_as_was = "as it was" in (r.out + r.err)
    whole = wrong == [] and r.rc == 0
    expect(whole or now == before or "recover" in (r.out + r.err).lower() or "journal" in (r.out + r.err).lower(),
           f"after {how} at {at:.2f} s the prefix is neither whole nor as it was: rc={r.rc} wrong={wrong}")
    if said_as_was:
        expect(now == before, "'as it was' was said and the prefix is not")


family("install", "signals", {f"{h}-seed{s}": (h, s) for h in ("stop_cont", "int_then_term", "hup_then_kill")
                              for s in range(3)}, install_stop_case, limit=150)

# ====================================================================================================================
# fix --shell: every shell, hostile folder names none of rounds 5-7 used

FIX_NAMES = {
    "fullwidth_semicolon": "a\uff1btouch P", "path_2000": "/".join(["L" * 200] * 10),
    "trailing_backslash": "tb\\", "hash_start": "#h x", "percent_alone": "50%", "tab_in_name": "t\tb",
    "colon": "c:d", "semicolon_cmd": "s;touch P", "nfd_accent": "e\u0301t\u00e9",
}
ALL_SHELLS = ("bash", "zsh", "fish", "powershell", "cmd", "user")


def fix_case(ctx: Ctx, arg: tuple[str, str]) -> None:
    shell, key = arg
    name = FIX_NAMES[key]
    m, folder = _cudnn_off_path(ctx, name)
    r = m.run("fix", "--shell", shell, "--search-path", folder, timeout=40)
    judge(r, (0, 1), want_json=False, secs=30)
    no_raw_controls(r.out, f"fix --shell {shell}")
    plan = judge(m.run("fix", "--json", "--shell", shell, "--search-path", folder, timeout=40), (0, 1), secs=30) or {}
    lines = _env_lines(plan, shell)
    if shell in JUDGES:
        lines += source_lines(r.out)
        for line in lines:
            JUDGES[shell](line, "LD_LIBRARY_PATH", folder)
    else:
        lead = "#"
        exact = [x for x in lines if not x.lstrip().startswith(lead)]
        if ":" in name:
            expect(not exact or all("LD_LIBRARY_PATH" not in x for x in exact),
                   f"a {shell} line puts a folder with ':' on LD_LIBRARY_PATH (the loader splits it): {exact}")
        elif exact:
            for line in exact:
                expect(line.isprintable(), f"a {shell} line the terminal does not show as the shell reads it: {line!r}")
            env = {"PATH": "/usr/bin:/bin", "HOME": str(m.base), "LANG": "C.UTF-8", "LD_LIBRARY_PATH": "/old/lib"}
            got = run_in_shell(shell, exact, m.base, env).get(b"LD_LIBRARY_PATH")
            expect(got == os.fsencode(folder) + b":/old/lib", f"{shell} set LD_LIBRARY_PATH={got!r}")
        else:
            expect(lines or "LD_LIBRARY_PATH" in r.out, f"neither a {shell} line nor a comment for the folder")
    expect(not (m.base / "P").exists() and not (m.cwd / "P").exists(), "a command in the folder name ran")


family("fix", "shell", {f"{s}-{k}": (s, k) for s in ALL_SHELLS for k in FIX_NAMES}, fix_case, limit=60)


# ====================================================================================================================
# completion: hostile homes and rc files

def completion8_case(ctx: Ctx, key: str) -> None:
    m = ctx.machine()
    rc = m.home / ".bashrc"
    shell = "bash"
    env: dict = {}
    keep: bytes | None = None
    if key in ("bashrc_link_char_null", "bashrc_link_char_full"):
        dev = m.base / ("devnull" if "null" in key else "devfull")
        os.mknod(dev, 0o666 | stat.S_IFCHR, os.makedev(1, 3 if "null" in key else 7))
        rc.symlink_to(dev)
    elif key == "bashrc_link_proc_fd1":
        rc.symlink_to("/proc/self/fd/1")
    elif key == "bashrc_socket":
        s = socket.socket(socket.AF_UNIX)
        s.bind(str(rc))
        s.close()
    elif key == "bashrc_nul_bytes":
        keep = b"# mine\0\0\xff\xfe\nalias x=y\n"
        rc.write_bytes(keep)
    elif key == "bashrc_one_100kb_line":
        keep = b"export X=" + b"y" * 100000
        rc.write_bytes(keep)
    elif key in ("arg_upper", "arg_trailing_space", "arg_path", "arg_newline", "arg_empty", "arg_ksh", "arg_binary"):
        shell = {"arg_upper": "BASH", "arg_trailing_space": "bash ", "arg_path": "/bin/bash", "arg_newline": "zsh\n",
                 "arg_empty": "", "arg_ksh": "ksh", "arg_binary": binary_value(4, 40)}[key]
    elif key == "zdotdir_file":
        (m.base / "zd").write_text("x")
        env["ZDOTDIR"] = str(m.base / "zd")
        shell = "zsh"
    elif key == "fish_completions_fifo":
        d = m.home / ".config" / "fish"
        d.mkdir(parents=True)
        os.mkfifo(d / "completions")
        shell = "fish"
    elif key == "xdg_config_binary":
        env["XDG_CONFIG_HOME"] = binary_value(6, 50)
        shell = "fish"
    elif key == "home_many_slashes":
        env["HOME"] = "//" + str(m.home).lstrip("/") + "///"
    elif key.startswith("pwsh_"):
        bin_ = m.base / "bin"
        bin_.mkdir()
        target = {"pwsh_fifo_profile": str(m.base / "fifo.ps1"), "pwsh_loop_profile": str(m.base / "loop.ps1"),
                  "pwsh_char_device_profile": str(m.base / "devnull.ps1"),
                  "pwsh_binary_profile": "/" + binary_value(8, 30).replace("/", "_").replace("\n", "_"),
                  "pwsh_newline_profile": str(m.base / "a\nb.ps1")}[key]
        if key == "pwsh_fifo_profile":
            os.mkfifo(target)
        elif key == "pwsh_loop_profile":
            Path(target).symlink_to("loop.ps1")
        elif key == "pwsh_char_device_profile":
            os.mknod(target, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
        (bin_ / "pwsh").write_bytes(b"#!/bin/sh\nprintf '%s\\n' " + shlex.quote(target).encode("utf-8", "surrogateescape")
                                    + b"\n")
        (bin_ / "pwsh").chmod(0o755)
        env["PATH"] = f"{bin_}:{m.env['PATH']}"
        shell = "powershell"
    elif key in ("nobody_bashrc_mode_000", "nobody_home_read_only", "nobody_home_tilde"):
        if key == "nobody_bashrc_mode_000":
            rc.write_text("# mine\n")
            keep = b"# mine\n"
        script = ("chmod 0 " + shlex.quote(str(rc)) + "; " if key == "nobody_bashrc_mode_000" else
                  "chmod 555 " + shlex.quote(str(m.home)) + "; " if key == "nobody_home_read_only" else "")
        envx = {"HOME": "~"} if key == "nobody_home_tilde" else {}
        r = as_nobody(m, script + shlex.join(m.argv("--install-completion", "bash")), env=envx)
        judge(r, (0, 2), want_json=False, secs=30)
        if keep is not None:
            expect(rc.read_bytes() == keep, "the user's unreadable .bashrc was changed")
        return
    else:
        raise ValueError(key)
    r = m.run("--install-completion", shell, env=env, timeout=40)
    judge(r, (0, 2), want_json=False, secs=25)
    no_raw_controls(r.out + r.err, "the completion's messages")
    if keep is not None:
        expect(rc.read_bytes().startswith(keep), "the user's .bashrc lost its bytes")
    if key in ("bashrc_link_char_null", "bashrc_link_char_full"):
        dev = m.base / ("devnull" if "null" in key else "devfull")
        expect(stat.S_ISCHR(os.lstat(dev).st_mode), "the device the .bashrc link named was replaced")
    _sourced_scripts_exist(m, rc if rc.is_file() and not rc.is_symlink() else m.base / "none")
    if key.startswith("pwsh_"):
        expect(not (m.base / "fifo.ps1").exists() or stat.S_ISFIFO(os.lstat(m.base / "fifo.ps1").st_mode),
               "the FIFO the profile named was replaced")


family("completion", "home", {k: k for k in (
    "bashrc_link_char_null", "bashrc_link_char_full", "bashrc_link_proc_fd1", "bashrc_socket", "bashrc_nul_bytes",
    "bashrc_one_100kb_line", "arg_upper", "arg_trailing_space", "arg_path", "arg_newline", "arg_empty", "arg_ksh",
    "arg_binary", "zdotdir_file", "fish_completions_fifo", "xdg_config_binary", "home_many_slashes",
    "pwsh_fifo_profile", "pwsh_loop_profile", "pwsh_char_device_profile", "pwsh_binary_profile", "pwsh_newline_profile",
    "nobody_bashrc_mode_000", "nobody_home_read_only", "nobody_home_tilde")}, completion8_case, limit=60)


# ====================================================================================================================
# explain: hostile standard input kinds

STDIN_KINDS = ("fifo_no_writer", "fifo_silent_writer", "fifo_trickle", "tty_less_terminal", "closed",
               "write_only", "socket_silent", "dev_zero", "sparse_2g", "nonblocking_empty")
MSG = b"RuntimeError: cuDNN error: CUDNN_STATUS_NOT_INITIALIZED\n"


def explain_stdin_case(ctx: Ctx, arg: tuple[str, str]) -> None:
    kind, form = arg
    m = healthy(ctx)
    m.env["CUDNN_DOCTOR_READ_TIMEOUT"] = "2"
    argv = {"dash": ["explain", "-"], "dash_json": ["explain", "-", "--json"],
            "dev_stdin": ["explain", "--from-file", "/dev/stdin", "--json"]}[form]
    want_json = "--json" in argv
    keep: list = []
    pre = None
    stdin_obj: object = None
    rcs: tuple = (0, 1, 2)
    if kind == "fifo_no_writer":
        p = m.base / "in.fifo"
        os.mkfifo(p)
        fd = os.open(p, os.O_RDONLY | os.O_NONBLOCK)
        fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) & ~os.O_NONBLOCK)
        stdin_obj, rcs = fd, (2,)
    elif kind in ("fifo_silent_writer", "fifo_trickle"):
        p = m.base / "in.fifo"
        os.mkfifo(p)
        fd = os.open(p, os.O_RDONLY | os.O_NONBLOCK)
        fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) & ~os.O_NONBLOCK)
        w = os.open(p, os.O_WRONLY)
        keep.append(w)
        stdin_obj = fd
        if kind == "fifo_trickle":
            def trickle() -> None:
                try:
                    for b in MSG:
                        os.write(w, bytes([b]))
                        time.sleep(0.03)
                except OSError:
                    pass
            threading.Thread(target=trickle, daemon=True).start()
            rcs = (0, 1)
        else:
            rcs = (2,)
    elif kind == "tty_less_terminal":
        master, slave = pty.openpty()
        keep.append(master)
        stdin_obj, rcs = slave, (0, 1)

        def typist() -> None:
            time.sleep(0.5)
            try:
                os.write(master, MSG + b"\x04")
            except OSError:
                pass
        threading.Thread(target=typist, daemon=True).start()
    elif kind == "closed":
        pre, rcs = (lambda: os.close(0)), (2,)
    elif kind == "directory":
        stdin_obj, rcs = os.open(str(m.base), os.O_RDONLY), (2,)
    elif kind == "write_only":
        stdin_obj, rcs = os.open(str(m.base / "wo"), os.O_WRONLY | os.O_CREAT), (2,)
    elif kind == "socket_silent":
        a, b = socket.socketpair()
        keep.append(b)
        stdin_obj, rcs = a.detach(), (2,)
    elif kind == "dev_zero":
        stdin_obj = os.open("/dev/zero", os.O_RDONLY)
    elif kind == "sparse_2g":
        p = m.base / "big.log"
        with open(p, "wb") as f:
            f.truncate(2 << 30)
            f.seek((2 << 30) - len(MSG))
            f.write(MSG)
        stdin_obj = os.open(str(p), os.O_RDONLY)
    elif kind == "nonblocking_empty":
        rd, wr = os.pipe()
        keep.append(wr)
        fcntl.fcntl(rd, fcntl.F_SETFL, fcntl.fcntl(rd, fcntl.F_GETFL) | os.O_NONBLOCK)
        stdin_obj, rcs = rd, (2,)
    start = time.monotonic()
    proc = subprocess.Popen(m.argv(*argv), env=m.env, cwd=str(m.cwd),
                            stdin=stdin_obj if stdin_obj is not None else subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, start_new_session=True, preexec_fn=pre)
    if isinstance(stdin_obj, int):
        os.close(stdin_obj)
    try:
        out, err = proc.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        kill_group(proc.pid)
        raise Fail(f"hang: explain with stdin {kind} still running after 30 s (READ_TIMEOUT=2)") from None
    finally:
        for k in keep:
            try:
                k.close() if hasattr(k, "close") else os.close(k)
            except OSError:
                pass
    # a notice that the doctor waits for its input to end is progress, not a second line of the error
    err = b"\n".join(x for x in err.split(b"\n") if not x.startswith(b"cudnn-doctor: waiting for standard input"))
    r = R(proc.returncode, out, err, time.monotonic() - start)
    judge(r, rcs, want_json=want_json, secs=20)
    if not want_json:
        no_raw_controls(r.out + r.err, "explain's text")


family("explain", "stdin", {f"{k}-{f}": (k, f) for k in STDIN_KINDS for f in ("dash", "dev_stdin")},
       explain_stdin_case, limit=60)


# ====================================================================================================================
# fleet: merge and run with hostile inputs

def fleet8_case(ctx: Ctx, key: str) -> None:
    m = ctx.machine()
    d = m.base / "reports"
    d.mkdir()
    good_b = m.run("check", "--json", timeout=40).outb
    good = json.loads(good_b)
    args: list[str] = [str(d)]
    if key == "number_1e400":
        (d / "a.json").write_bytes(good_b.replace(b'"schema"', b'"x": 1e400, "schema"', 1))
    elif key == "duplicate_keys":
        (d / "a.json").write_bytes(good_b.replace(b'"schema"', b'"schema": "cudnn-doctor/report/1", "schema"', 1))
    elif key == "nan_infinity":
        (d / "a.json").write_bytes(good_b.replace(b'"schema"', b'"n": NaN, "i": -Infinity, "schema"', 1))
    elif key == "utf16":
        (d / "a.json").write_bytes(good_b.decode().encode("utf-16"))
    elif key == "bom":
        (d / "a.json").write_bytes(b"\xef\xbb\xbf" + good_b)
    elif key == "future_schema":
        (d / "a.json").write_text(json.dumps({**good, "schema": "cudnn-doctor/report/2"}))
    elif key == "findings_dict":
        (d / "a.json").write_text(json.dumps({**good, "findings": {"CD301": "x"}}))
    elif key == "twenty_thousand_one_byte":
        for i in range(20000):
            (d / f"{i}.json").write_bytes(b"{")
    elif key == "link_to_sparse_4g":
        big = m.base / "big"
        with open(big, "wb") as f:
            f.truncate(4 << 30)
        (d / "a.json").symlink_to(big)
    elif key == "socket_file":
        s = socket.socket(socket.AF_UNIX)
        s.bind(str(d / "a.json"))
        s.close()
        (d / "b.json").write_bytes(good_b)
    elif key == "single_file_arg":
        (d / "a.json").write_bytes(good_b)
        args = [str(d / "a.json")]
    elif key == "dash_arg":
        args = ["-"]
    elif key == "empty_arg":
        args = [""]
    elif key == "three_hundred_args":
        for i in range(300):
            (d / f"{i}.json").write_bytes(good_b)
        args = [str(d / f"{i}.json") for i in range(300)]
    elif key == "gzip_named_json":
        (d / "a.json").write_bytes(gzip.compress(good_b))
    elif key == "two_objects_concatenated":
        (d / "a.json").write_bytes(good_b + good_b)
    elif key == "crlf_trailing_garbage":
        (d / "a.json").write_bytes(good_b.replace(b"\n", b"\r\n") + b"\x1b[2J garbage")
    elif key == "deep_valid_array":
        (d / "a.json").write_bytes(good_b.replace(b'"schema"', b'"extra": ' + b"[" * 5000 + b"]" * 5000 + b', "schema"', 1))
    else:
        raise ValueError(key)
    for js in (True, False):
        r = m.run("fleet", "merge", *args, *(["--json"] if js else []), timeout=60)
        judge(r, (0, 1, 2), want_json=js, secs=40)
        if not js:
            no_raw_controls(r.out + r.err, "merge's text")
            expect(not any(x.startswith("::") for x in r.out.splitlines()), "a line of merge's text is a workflow command")


family("fleet", "merge", {k: k for k in (
    "number_1e400", "duplicate_keys", "nan_infinity", "utf16", "bom", "future_schema", "findings_dict",
    "twenty_thousand_one_byte", "link_to_sparse_4g", "socket_file", "single_file_arg", "dash_arg", "empty_arg",
    "three_hundred_args", "gzip_named_json", "two_objects_concatenated", "crlf_trailing_garbage",
    "deep_valid_array")}, fleet8_case, limit=120)


def srun8_case(ctx: Ctx, how: str) -> None:
    m = ctx.machine()
    bin_ = m.base / "bin"
    bin_.mkdir()
    body = {"stdout_binary": "head -c 3000000 /dev/urandom; exit 0",
            "kills_itself": "kill -KILL $$",
            "stdout_100mb": "head -c 100000000 /dev/zero; exit 0",
            "writes_after_exit": "(sleep 1; for i in 1 2 3; do echo x > \"$(pwd)/late.$i\"; done) & exit 0",
            "ignores_term": "trap '' TERM INT HUP; sleep 30",
            "stops_itself": "kill -STOP $$"}[how]
    (bin_ / "srun").write_text(f"#!/bin/sh\n{body}\n")
    (bin_ / "srun").chmod(0o755)
    r = m.run("fleet", "run", "--slurm", "--json", "--deadline", "4", env={"PATH": f"{bin_}:{m.env['PATH']}"},
              timeout=50)
    left = leftovers_of(m.base)
    reap(m.base)
    judge(r, (0, 1, 2), secs=20)
    expect(not [x for x in left if "srun" in x or "sleep 30" in x], f"srun left running: {left[:2]}")


family("fleet", "srun", {k: k for k in ("stdout_binary", "kills_itself", "stdout_100mb", "writes_after_exit",
                                        "ignores_term", "stops_itself")}, srun8_case, limit=90)


# ====================================================================================================================
# bench: hostile cache folders and a hostile C compiler

def bench_machine(ctx: Ctx) -> tuple[M, list[str]]:
    from tests.fakes.build import compile_library
    m = ctx.machine()
    gpu_machine(ctx, m, gpus=1)
    rt = compile_library("fake_bench_cudart.c", "libcudart.so.13", {}, soname="libcudart.so.13")
    lib = compile_library("fake_bench_cudnn.c", "libcudnn.so.9", {}, soname="libcudnn.so.9")
    m.env.pop("CUDNN_DOCTOR_CPU_BASELINE", None)
    return m, ["bench", "--json", "--size", "tiny", "--repeats", "1", "--cudnn", str(lib), "--cudart", str(rt)]


BENCH_CACHE = ("kernels_fifo", "kernels_file", "kernels_loop", "kernels_link_to_dev_null", "so_exit_in_ctor",
               "so_loops_in_ctor", "so_floods_stdout_stderr", "so_segfaults", "so_truncated", "so_empty", "so_text",
               "so_folder", "so_fifo", "gcc_hangs", "gcc_garbage_so", "gcc_hostile_so", "no_compiler")


def bench_cache_case(ctx: Ctx, kind: str) -> None:
    m, argv = bench_machine(ctx)
    cache = Path(m.env["CUDNN_DOCTOR_CACHE_DIR"])
    kdir = cache / "cpu-kernels"
    if kind.startswith("kernels_"):
        cache.mkdir(parents=True, exist_ok=True)
        if kind == "kernels_fifo":
            os.mkfifo(kdir)
        elif kind == "kernels_file":
            kdir.write_text("not a folder")
        elif kind == "kernels_loop":
            kdir.symlink_to("cpu-kernels")
        else:
            kdir.symlink_to("/dev/null")
    elif kind.startswith("so_"):
        first = m.run(*argv, timeout=90)
        judge(first, (0, 1), secs=80)
        sos = list(kdir.glob("*.so")) if kdir.is_dir() else []
        if not sos:
            raise Skip("the first bench compiled no CPU kernels into the cache")
        so = sos[0]
        so.unlink()
        k = kind[3:]
        if k in ELF_MODES:
            shutil.copyfile(hostile_elf(ELF_MODES[k], "cpu_kernels.so", only_children=False), so)
        elif k == "truncated":
            shutil.copyfile(hostile_elf(1, "cpu_kernels.so"), so)
            with open(so, "r+b") as f:
                f.truncate(3000)
        elif k == "empty":
            so.write_bytes(b"")
        elif k == "text":
            so.write_text("int main;\n")
        elif k == "folder":
            so.mkdir()
        elif k == "fifo":
            os.mkfifo(so)
    elif kind.startswith("gcc_") or kind == "no_compiler":
        bin_ = m.base / "cc-bin"
        bin_.mkdir()
        script = {"gcc_hangs": "#!/bin/sh\nexec sleep 600\n",
                  "gcc_garbage_so": "#!/bin/sh\nwhile [ $# -gt 0 ]; do if [ \"$1\" = -o ]; then shift; "
                                    "head -c 50000 /dev/urandom > \"$1\"; fi; shift; done; exit 0\n",
                  "gcc_hostile_so": "#!/bin/sh\nwhile [ $# -gt 0 ]; do if [ \"$1\" = -o ]; then shift; "
                                    f"cp {hostile_elf(ELF_MODES['loops_in_ctor'], 'cpu_kernels.so')} \"$1\"; fi; shift; "
                                    "done; exit 0\n",
                  "no_compiler": None}[kind]
        for prog in ("gcc", "cc", "clang", "c99", "x86_64-linux-gnu-gcc"):
            if script is None:
                continue
            (bin_ / prog).write_text(script)
            (bin_ / prog).chmod(0o755)
        m.env["PATH"] = f"{bin_}" if script is None else f"{bin_}:{m.env['PATH']}"
        if script is None:
            for tool in ("sh", "env", "uname", "ldconfig"):
                w = shutil.which(tool)
                if w:
                    (bin_ / tool).symlink_to(w)
    m.env["CUDNN_DOCTOR_BENCH_TIMEOUT"] = "20"
    m.env["CUDNN_DOCTOR_HELPER_TIMEOUT"] = "5"
    r = m.run(*argv, timeout=90)
    reap(m.base)
    judge(r, (0, 1, 2), secs=60)
    if r.rc == 2 and kind.startswith(("kernels_", "so_")):
        expect("cache" in error_text(r).lower() or "cpu-kernels" in error_text(r), f"exit 2 without naming the cache: "
                                                                                   f"{r.err[-300:]!r}")


family("bench", "cache", {k: k for k in BENCH_CACHE}, bench_cache_case, limit=150)

# --------------------------------------------------------------------------------------------------------------------
# the runner

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
    scratch = Path(tempfile.mkdtemp(prefix="redteam8-43-", dir="/var/tmp"))
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
