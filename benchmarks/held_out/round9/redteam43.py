#!/usr/bin/env python3
# ruff: noqa  (an evaluation set: its harness is kept as the helper wrote it apart from the code)
"""Round nine red-team over issue 43's surfaces and every other surface of the CLI (sealed: builders never read it).

    python3 redteam.py --tree CHECKOUT [--jobs 2] [--only SUBSTRINGS] [--list-failures] [--python PY]

Each case runs in a process of its own (this file with --run-case), in a scratch folder under /var/tmp, against the
doctor of CHECKOUT started as `PYTHONPATH=CHECKOUT PY -m cudnn_doctor ...` in a pretend machine
(CUDNN_DOCTOR_SYSTEM_PREFIX, HOME, CUDNN_DOCTOR_CACHE_DIR of its own). Round nine's classes are new: every option
with extreme values, the command line's own shape, machine outputs read by jq and strict parsers under odd I/O
encodings, two or more doctors at once, what CI runners, containers, Slurm, WSL 2 and Jetsons put around the doctor,
hostile --python interpreters, hostile wheels for install, a Windows or WSL user's paths, and the pretend system's
files well formed but absurd. A case holds when a user would agree: no traceback or internal error, the exit code
README documents, one JSON object with --json, nothing of the user's lost or half-written, bounded time, no printed
line that runs a command the user did not ask for. A case past its limit fails as a hang.
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
FAKES_DEFAULT = "/var/tmp/cudnn-doctor-fakes9"
CASES: dict[str, tuple[str, Callable, int]] = {}
CLASSES = {
    "optvals": "every option that takes a value, given empty, blank, option-like, multi-line, escaped, 100 KB, binary and odd numeric values",
    "argv": "the command line's shape: abbreviations, look-alike dashes and letters, repeats, conflicts, 120 KB and 50,000-option command lines, undecodable words",
    "encoding": "--json, -o, JUnit, Prometheus, GitHub outputs with non-ASCII content under odd PYTHONIOENCODING/locales, read by jq and strict parsers",
    "concur": "two or more doctors at once: one -o/JUnit/summary file, one cache (also wiped), installs, completions, benches, merges",
    "ci": "containers without a passwd entry or home, CI/container/Slurm/NVIDIA variables, Slurm node lists, Jetson files",
    "pyexe": "--python naming a Windows .exe, another architecture, CRLF or broken scripts, hanging or flooding programs, broken venvs/conda",
    "wheel": "install --from hostile wheels: zip slip, links, bombs, 20,000 members, set-uid, devices, lies in the central directory, cut",
    "windows": "a Windows/WSL 2 user's paths and shells: Program Files (x86), backslashes, CRLF/UTF-16 logs, WSL's PATH and libcuda",
    "sysvals": "the pretend system's files well formed but absurd: driver, headers, version.json, os-release, ld.so.conf, CDI, PCI, cpuinfo",
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


BUILD = Path(os.environ.get("REDTEAM9_BUILD", "/var/tmp/redteam9-43-build"))


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



def bench_machine(ctx: Ctx) -> tuple[M, list[str]]:
    from tests.fakes.build import compile_library
    m = ctx.machine()
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
# optvals: every option that takes a value, with extreme values

VALUES = {
    "empty": "", "spaces": "   ", "option_like": "--json", "newline": "1\n2", "osc_escape": "\x1b]0;owned\x07x",
    "long_100k": "9" * 100000, "binary": None, "minus_zero": "-0", "hex": "0x10", "underscores": "1_000",
    "plus": "+5", "minus_inf": "-inf", "nbsp_digits": "\u00a012\u00a0", "dots": "...", "equals": "=json",
}


def optval_specs(ctx: Ctx, m: M, opt: str) -> tuple[list[str], list[str], bool, tuple]:
    """(argv before the value, argv after, JSON?, exit codes README allows) for option key OPT."""
    cmd, _, flag = opt.partition(" ")
    j, rc = True, (0, 1, 2)
    if cmd == "check":
        if flag == "--format":
            return ["check", "--format"], [], False, rc
        if flag in ("-o", "--junit-xml"):
            return ["check", "--format", "json", flag] if flag == "-o" else ["check", "--json", flag], [], \
                flag != "-o", (0, 1, 2, 74)
        return ["check", "--json", flag], [], j, rc
    if cmd == "fix":
        return ["fix", "--json", flag], [], j, rc
    if cmd == "compat":
        extra = [] if flag == "--list" else ["torch==2.5.1"]
        return ["compat", *extra, "--json", flag], [], j, rc
    if cmd == "explain":
        return ["explain", "--json", flag], [], j, rc
    if cmd == "install":
        arch = str(archive(ctx))
        pfx = str(m.base / "pfx")
        if flag == "--from":
            return ["install", "--prefix", pfx, "--dry-run", "--json", "--from"], [], j, rc
        if flag == "--prefix":
            return ["install", "--from", arch, "--dry-run", "--json", "--prefix"], [], j, rc
        if flag in ("--version", "--mirror"):
            mirror = m.base / "mirror"
            mirror.mkdir(exist_ok=True)
            base = ["install", "--prefix", pfx, "--dry-run", "--json"]
            return (base + ["--mirror", str(mirror), "--version"], [], j, rc) if flag == "--version" else \
                (base + ["--version", "9.19.0", "--mirror"], [], j, rc)
        return ["install", "--from", arch, "--prefix", pfx, "--dry-run", "--json", flag], [], j, rc
    if cmd == "uninstall":
        return ["uninstall", "--dry-run", "--json", "--prefix"], [], j, rc
    if cmd == "bench":
        bm, base = bench_machine(ctx)
        m.env.update({k: v for k, v in bm.env.items() if k in ("LD_LIBRARY_PATH",)})
        return base + ["--no-cpu", flag], [], j, rc
    if cmd == "image":
        return ["image", str(raw_oci(ctx)), "--json", "--platform"], [], j, rc
    if cmd == "fleet":
        return ["fleet", "run", "--slurm", "--json", flag], ([] if flag == "--deadline" else ["--deadline", "4"]), j, rc
    if cmd == "top":
        return [flag], [], False, (0, 2)
    raise ValueError(opt)


OPTIONS = ("check --format", "check -o", "check --junit-xml", "check --require", "check --select", "check --ignore",
           "check --search-path", "check --framework", "check --project", "check --python", "fix --shell",
           "fix --require", "fix --framework", "compat --os", "compat --artifact", "compat --list",
           "explain --from-file", "install --from", "install --prefix", "install --version", "install --mirror",
           "install --cuda", "install --sha256", "install --os", "uninstall --prefix", "bench --workload",
           "bench --dtype", "bench --layout", "bench --size", "bench --api", "image --platform", "fleet --command",
           "fleet --deadline", "fleet --keep", "top --install-completion", "top --show-completion")
CHEAP = {"compat --os", "compat --artifact", "compat --list", "explain --from-file", "top --show-completion",
         "fix --shell", "check --format"}


def optval_case(ctx: Ctx, arg: tuple[str, str, int]) -> None:
    opt, kind, seed = arg
    m = ctx.machine()
    if opt.startswith("fleet"):
        bin_ = m.base / "bin"
        scripted(bin_ / "srun", "#!/bin/sh\nexit 0\n")
        m.env["PATH"] = f"{bin_}:{m.env['PATH']}"
    before, after, want_json, rcs = optval_specs(ctx, m, opt)
    value = argbin(seed) if kind == "binary" else VALUES[kind]
    if opt == "top --install-completion":
        value = value if kind != "long_100k" else "b" * 100000
    r = m.run(*before, value, *after, timeout=50)
    hold(r, want_json, rcs, secs=40)
    if opt in ("check -o", "check --junit-xml") and r.rc in (0, 1):
        target = m.cwd / value if value and not value.startswith("-") else None
        if target is not None and target.is_file() and opt == "check -o":
            try:
                json.loads(target.read_bytes())
            except ValueError:
                raise Fail(f"-o {kind}: the file written is not one JSON object") from None


def _optval_params() -> dict:
    out = {}
    kinds = list(VALUES)
    for i, opt in enumerate(OPTIONS):
        chosen = random.Random(9000 + i).sample(kinds, 10 if opt in CHEAP else 5)
        for kind in chosen:
            out[f"{opt.replace(' ', '')}-{kind}"] = (opt, kind, 900 + i)
    return out


family("optvals", "value", _optval_params(), optval_case, limit=90)


# ====================================================================================================================
# argv: the shape of the command line itself

def argv_cases(ctx: Ctx, m: M) -> dict:
    msg = "CUDNN_STATUS_NOT_INITIALIZED"
    return {
        "abbrev_json": (["check", "--js"], None, (0, 1, 2)),
        "abbrev_format": (["check", "--form", "json"], None, (0, 1, 2)),
        "abbrev_ambiguous": (["install", "--d"], False, (2,)),
        "em_dash_json": (["check", "\u2014json"], False, (2,)),
        "en_dash_json": (["compat", "torch==2.5.1", "\u2013json"], False, (0, 1, 2)),
        "fullwidth_dashes": (["check", "\uff0d\uff0djson"], False, (2,)),
        "cyrillic_command": (["\u0441heck"], False, (2,)),
        "upper_command": (["CHECK"], False, (2,)),
        "nbsp_command": (["check\u00a0"], False, (2,)),
        "empty_command": ([""], False, (2,)),
        "dash_command": (["-"], False, (2,)),
        "json_1000_times": (["check"] + ["--json"] * 1000, True, (0, 1, 2)),
        "format_twice": (["check", "--format", "json", "--format", "junit"], False, (0, 1, 2)),
        "json_and_junit": (["check", "--json", "--format", "junit"], True, (0, 1, 2)),
        "o_twice": (["check", "--format", "json", "-o", "a.json", "-o", "b.json"], False, (0, 1, 2)),
        "double_dash_json": (["check", "--", "--json"], False, (2,)),
        "explain_double_dash": (["explain", "--json", "--", "--from-file"], True, (0, 1, 2)),
        "ignore_50000": (["check", "--json"] + ["--ignore", "CD1"] * 50000, True, (0, 1, 2)),
        "search_path_5000": (["check", "--json"] + [f"--search-path=/nonexistent/{i}" for i in range(5000)], True,
                             (0, 1, 2)),
        "format_equals_empty": (["check", "--format="], False, (2,)),
        "format_double_equals": (["check", "--format==json"], False, (2,)),
        "o_attached": (["check", "--format", "json", "-ojson.out"], False, (0, 1, 2)),
        "qv_combined": (["check", "-qv"], False, (0, 1, 2)),
        "q_and_v": (["explain", "CD301", "-q", "-v"], False, (0, 1, 2)),
        "options_after_positional": (["compat", "torch==2.5.1", "--json", "--os", "linux"], True, (0, 1, 2)),
        "help_with_garbage": (["check", "--help", "\x1b[2J", "--nope"], False, (0, 2)),
        "version_extra": (["-V", "extra"], False, (0, 2)),
        "help_command": (["help", "check"], False, (0, 2)),
        "explain_binary_arg": (["explain", argbin(31), "--json"], True, (0, 1, 2)),
        "image_binary_arg": (["image", argbin(32), "--json"], True, (2,)),
        "compat_binary_arg": (["compat", argbin(33), "--json"], True, (0, 1, 2)),
        "merge_binary_arg": (["fleet", "merge", argbin(34), "--json"], True, (2,)),
        "explain_200_words": (["explain", *([msg] * 200), "--json"], True, (0, 1, 2)),
        "explain_empty_words": (["explain", "", "", "--json"], True, (0, 1, 2)),
        "fleet_no_sub": (["fleet"], False, (0, 2)),
        "fleet_unknown_sub": (["fleet", "\x1b[31mrun"], False, (2,)),
        "unknown_option_json": (["check", "--json", "--nope"], True, (2,)),
        "unknown_option_binary": (["check", "--" + argbin(35, 40)], False, (2,)),
        "argv_120k": (["explain", "x" * 120000, "--json"], True, (0, 1, 2)),
        "completion_and_command": (["--show-completion", "bash", "check"], False, (0, 2)),
        "install_completion_and_json": (["--install-completion", "bash", "--json"], False, (0, 2)),
        "require_repeated_conflicting": (["check", "--json", "--require", "cudnn>=9", "--require", "cudnn<9"], True,
                                         (0, 1, 2)),
        "select_and_ignore_same": (["check", "--json", "--select", "CD3", "--ignore", "CD3"], True, (0, 1, 2)),
        "strict_no_strict": (["check", "--json", "--strict", "--no-strict", "--strict"], True, (0, 1, 2)),
        "uninstall_no_prefix_json": (["uninstall", "--json"], True, (2,)),
    }


ARGV_KEYS = ("abbrev_json", "abbrev_format", "abbrev_ambiguous", "em_dash_json", "en_dash_json", "fullwidth_dashes",
             "cyrillic_command", "upper_command", "nbsp_command", "empty_command", "dash_command", "json_1000_times",
             "format_twice", "json_and_junit", "o_twice", "double_dash_json", "explain_double_dash", "ignore_50000",
             "search_path_5000", "format_equals_empty", "format_double_equals", "o_attached", "qv_combined",
             "q_and_v", "options_after_positional", "help_with_garbage", "version_extra", "help_command",
             "explain_binary_arg", "image_binary_arg", "compat_binary_arg", "merge_binary_arg", "explain_200_words",
             "explain_empty_words", "fleet_no_sub", "fleet_unknown_sub", "unknown_option_json",
             "unknown_option_binary", "argv_120k", "completion_and_command", "install_completion_and_json",
             "require_repeated_conflicting", "select_and_ignore_same", "strict_no_strict", "uninstall_no_prefix_json")


def argv_case(ctx: Ctx, key: str) -> None:
    m = ctx.machine()
    args, want_json, rcs = argv_cases(ctx, m)[key]
    r = m.run(*args, timeout=50)
    if want_json is None:  # an abbreviation: taken as the option (one JSON object) or refused (one line)
        want_json = r.out.lstrip().startswith("{")
    if key == "fleet_no_sub" and r.rc == 2 and not r.err.strip() and r.out.startswith("Usage:"):
        r = R(0, r.outb, b"", r.secs)  # a bare command group is taken as a request for its usage
    if want_json and r.rc == 2 and not r.out.strip():
        raise Fail(f"--json was given, yet the error is not one JSON object: {r!r}")
    hold(r, want_json, rcs, secs=40)
    rc_home = m.home / ".bashrc"
    if key == "install_completion_and_json" and r.rc == 2:
        expect(not rc_home.exists(), "refused, yet .bashrc was written")


family("argv", "shape", {k: k for k in ARGV_KEYS}, argv_case, limit=90)


# ====================================================================================================================
# encoding: machine outputs read by jq and strict parsers, whatever the I/O encoding of the doctor's interpreter

ENCODINGS = {"utf16": {"PYTHONIOENCODING": "utf-16"}, "utf8sig": {"PYTHONIOENCODING": "utf-8-sig"},
             "cp1252": {"PYTHONIOENCODING": "cp1252"}, "ascii_bsr": {"PYTHONIOENCODING": "ascii:backslashreplace"},
             "utf32": {"PYTHONIOENCODING": "utf-32"},
             "c_locale_utf8_off": {"LANG": "C", "LC_ALL": "C", "PYTHONUTF8": "0", "PYTHONIOENCODING": "cp437"}}
ENC_SURFACES = ("check", "fix", "explain_msg", "compat", "merge", "image", "junit", "prometheus", "github",
                "o_json")
ODD_FOLDER = "Zo\u00eb\u2014\u5e93 \U0001f600"


def parse_prometheus(text: str) -> None:
    metric = re.compile(r'^[a-zA-Z_:][a-zA-Z0-9_:]*(\{([a-zA-Z_][a-zA-Z0-9_]*="([^"\\\n]|\\["\\n])*",?)*\})? '
                        r'[-+]?([0-9.eE+-]+|NaN|[+-]?Inf)( -?[0-9]+)?$')
    for line in text.split("\n"):
        if not line or line.startswith("#"):
            continue
        expect(metric.match(line), f"not a Prometheus sample line: {line[:200]!r}")


def encoding_case(ctx: Ctx, arg: tuple[str, str]) -> None:
    enc, surf = arg
    m = healthy(ctx)
    odd = m.base / ODD_FOLDER
    fakes().fake_cudnn(odd, version=90100, cudart=12040, sublibraries=CUDNN9[:2])
    env = dict(ENCODINGS[enc])
    sp = ["--search-path", str(odd)]
    argv = {"check": ["check", "--json", *sp], "fix": ["fix", "--json", *sp],
            "explain_msg": ["explain", f"OSError: {odd}/libcudnn.so.9: cannot open shared object file", "--json"],
            "compat": ["compat", "torch==2.5.1", "--json"],
            "merge": ["fleet", "merge", str(reports_dir(m)), "--json"] if surf == "merge" else [],
            "image": ["image", str(raw_oci(ctx)), "--json"] if surf == "image" else [],
            "junit": ["check", "--format", "junit", *sp], "prometheus": ["check", "--format", "prometheus", *sp],
            "github": ["check", "--format", "github", *sp],
            "o_json": ["check", "--format", "json", "-o", str(m.base / "out.json"), *sp]}[surf]
    if surf == "merge":
        rep = json.loads((m.base / "reports" / "node1.json").read_bytes())
        rep["host"] = ODD_FOLDER
        (m.base / "reports" / "node1.json").write_text(json.dumps(rep, ensure_ascii=False), encoding="utf-8")
    r = m.run(*argv, timeout=50, env=env)
    sane(r, (0, 1))
    expect(r.secs < 40, f"took {r.secs:.1f} s")
    if surf == "o_json":
        data = (m.base / "out.json").read_bytes()
    else:
        data = r.outb
    if surf in ("junit",):
        try:
            ET.fromstring(data)
        except ET.ParseError as e:
            raise Fail(f"JUnit XML does not parse ({e}): {data[:200]!r}") from None
        return
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise Fail(f"{surf}: the output is not UTF-8 ({e}); a parser reading it as UTF-8 fails: {data[:120]!r}") \
            from None
    if surf == "prometheus":
        parse_prometheus(text)
        return
    if surf == "github":
        no_raw_controls(strip_sgr(text), "github output")
        return
    jq = subprocess.run(["jq", "-e", ".schema"], input=data, capture_output=True, timeout=20)
    expect(jq.returncode == 0, f"jq cannot read the JSON ({jq.stderr[:200]!r}): {data[:120]!r}")


family("encoding", "io", {f"{e}-{s}": (e, s) for e in ENCODINGS for s in ENC_SURFACES}, encoding_case, limit=90)


# ====================================================================================================================
# concur: two (or more) doctor processes at once

def _spawn_many(m: M, argvs: list[list[str]], envs: list[dict] | None = None, delays: list[float] | None = None,
                timeout: float = 60) -> list[R]:
    procs = []
    starts = []
    for i, a in enumerate(argvs):
        if delays:
            time.sleep(delays[i])
        env = {**m.env, **((envs or [{}] * len(argvs))[i])}
        starts.append(time.monotonic())
        procs.append(subprocess.Popen(m.argv(*a), env=env, cwd=str(m.cwd), stdin=subprocess.DEVNULL,
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True))
    out = []
    deadline = time.monotonic() + timeout
    for p, t0 in zip(procs, starts):
        try:
            o, e = p.communicate(timeout=max(1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            for q in procs:
                kill_group(q.pid)
            raise Fail(f"hang: {len(argvs)} doctors at once still running after {timeout} s") from None
        out.append(R(p.returncode, o, e, time.monotonic() - t0))
    for p in procs:
        kill_group(p.pid)
    return out


CONCUR = ("same_o_json", "same_o_prometheus", "same_junit", "same_step_summary", "shared_empty_cache",
          "cache_wiped_meanwhile", "two_benches_one_cache", "completion_fish_twice", "completion_three_shells",
          "check_while_install", "check_while_uninstall", "two_images_one_cache", "merge_while_written",
          "eight_checks", "fix_yes_twice", "install_dry_and_yes")


def concur_case(ctx: Ctx, arg: tuple[str, int]) -> None:
    key, seed = arg
    rng = random.Random(seed)
    d = [0.0, rng.uniform(0, 0.8)]
    if key.startswith("two_benches"):
        m, base = bench_machine(ctx)
    else:
        m = healthy(ctx)
    if key in ("same_o_json", "same_o_prometheus", "same_junit"):
        target = m.base / "out.x"
        target.write_text("the user's earlier file\n")
        fmt = {"same_o_json": ["--format", "json", "-o", str(target)],
               "same_o_prometheus": ["--format", "prometheus", "-o", str(target)],
               "same_junit": ["--junit-xml", str(target)]}[key]
        rs = _spawn_many(m, [["check", *fmt]] * 2, delays=d)
        for r in rs:
            hold(r, False)
        body = target.read_bytes()
        if key == "same_o_json":
            try:
                json.loads(body)
            except ValueError:
                raise Fail(f"two checks writing one -o file left it unparseable: {body[:200]!r}") from None
        elif key == "same_junit":
            try:
                ET.fromstring(body)
            except ET.ParseError:
                raise Fail(f"two checks writing one JUnit file left it unparseable: {body[:200]!r}") from None
        else:
            parse_prometheus(body.decode("utf-8", "replace"))
        expect(not [p.name for p in m.base.iterdir() if p.name.startswith("out.x") and p.name != "out.x"],
               "a temporary file was left beside the output")
        return
    if key == "same_step_summary":
        summary = m.base / "summary.md"
        summary.write_text("# earlier step\n")
        solo = m.run("check", "--format", "github", env={"GITHUB_STEP_SUMMARY": str(m.base / "solo.md")}, timeout=50)
        hold(solo, False)
        one = (m.base / "solo.md").read_bytes() if (m.base / "solo.md").exists() else b""
        rs = _spawn_many(m, [["check", "--format", "github"]] * 2, envs=[{"GITHUB_STEP_SUMMARY": str(summary)}] * 2,
                         delays=d)
        for r in rs:
            hold(r, False)
        body = summary.read_bytes()
        expect(body.startswith(b"# earlier step\n"), "the earlier step's summary was lost")
        if one:
            first = one.split(b"\n", 1)[0]
            expect(body.count(first) == 2, f"two sections expected in the summary, found {body.count(first)}")
            expect(abs(len(body) - len(b"# earlier step\n") - 2 * len(one)) <= max(64, len(one) // 5),
                   f"the summary's two sections are not whole ({len(body)} bytes for 2 x {len(one)})")
        return
    if key in ("shared_empty_cache", "cache_wiped_meanwhile", "eight_checks"):
        solo_m = healthy(ctx, "solo")
        solo = solo_m.run("check", "--json", timeout=50)
        want = hold(solo, True) or {}
        n = 8 if key == "eight_checks" else 2
        if key == "cache_wiped_meanwhile":
            cache = m.env["CUDNN_DOCTOR_CACHE_DIR"]
            wiper = subprocess.Popen(["sh", "-c", f"while :; do rm -rf '{cache}'; sleep 0.0{rng.randrange(1, 9)}; done"],
                                     start_new_session=True)
        try:
            rs = _spawn_many(m, [["check", "--json"]] * n, delays=[0.0] + [rng.uniform(0, 0.5) for _ in range(n - 1)],
                             timeout=90)
        finally:
            if key == "cache_wiped_meanwhile":
                kill_group(wiper.pid)
                wiper.wait()
        for r in rs:
            got = hold(r, True, secs=80) or {}
            expect(r.rc == solo.rc, f"exit {r.rc} with others at once, {solo.rc} alone")
            expect(codes(got) == codes(want), f"findings {sorted(codes(got) ^ codes(want))} differ from a run alone")
        return
    if key == "two_benches_one_cache":
        rs = _spawn_many(m, [base, base], delays=d, timeout=120)
        for r in rs:
            hold(r, True, secs=110)
        return
    if key in ("completion_fish_twice", "completion_three_shells"):
        (m.home / ".bashrc").write_text("# the user's bashrc\nexport A=1\n")
        (m.home / ".zshrc").write_text("# the user's zshrc\n")
        shells = ["fish", "fish"] if key == "completion_fish_twice" else ["bash", "zsh", "fish"]
        rs = _spawn_many(m, [["--install-completion", s] for s in shells], delays=[0.0] + [rng.uniform(0, 0.3)
                                                                                          for _ in shells[1:]])
        for r in rs:
            hold(r, False, (0, 2), secs=30)
            if r.rc == 2:
                one_line(r)
        expect((m.home / ".bashrc").read_text().startswith("# the user's bashrc\nexport A=1\n"), ".bashrc lost bytes")
        _sourced_scripts_exist(m, m.home / ".bashrc")
        _sourced_scripts_exist(m, m.home / ".zshrc")
        for f in (m.home / ".config" / "fish").rglob("*"):
            if f.is_file():
                expect(f.stat().st_size > 0, f"{f.name} is empty")
                s = run_proc(["fish", "--no-config", "-n", str(f)], {"PATH": "/usr/bin:/bin", "HOME": str(m.home)},
                             m.base, 20)
                expect(s.rc == 0, f"fish cannot parse {f.name}: {s!r}")
        return
    if key in ("check_while_install", "check_while_uninstall"):
        pfx = m.base / "pfx"
        env = {"CUDNN_DOCTOR_FAKES_DIR": m.env["CUDNN_DOCTOR_FAKES_DIR"]}
        if key == "check_while_uninstall":
            r0 = m.run("install", "--from", str(archive(ctx)), "--prefix", str(pfx), "--yes", "--json", timeout=60)
            hold(r0, True)
            first = ["uninstall", "--prefix", str(pfx), "--yes", "--json"]
        else:
            first = ["install", "--from", str(archive(ctx)), "--prefix", str(pfx), "--yes", "--json"]
        rs = _spawn_many(m, [first, ["check", "--json", "--search-path", str(pfx / "lib")],
                             ["check", "--json", "--search-path", str(pfx / "lib")]],
                         delays=[0.0, rng.uniform(0, 1.0), rng.uniform(0, 0.6)], envs=[env, {}, {}], timeout=90)
        for r in rs:
            hold(r, True, secs=80)
        return
    if key == "two_images_one_cache":
        oci = raw_oci(ctx)
        rs = _spawn_many(m, [["image", str(oci), "--json"]] * 2, delays=d)
        got = [hold(r, True) or {} for r in rs]
        expect(rs[0].rc == rs[1].rc and codes(got[0]) == codes(got[1]), "two runs on one image differ")
        return
    if key == "merge_while_written":
        folder = reports_dir(m)
        writer = subprocess.Popen(
            ["sh", "-c", f"i=0; while :; do i=$((i+1)); cp '{folder}/node1.json' '{folder}/n$i.json.tmp'; "
                         f"mv '{folder}/n$i.json.tmp' '{folder}/n$i.json'; rm -f '{folder}/n$((i-3)).json'; done"],
            start_new_session=True)
        try:
            time.sleep(rng.uniform(0.05, 0.4))
            rs = _spawn_many(m, [["fleet", "merge", str(folder), "--json"]] * 2, delays=d)
        finally:
            kill_group(writer.pid)
            writer.wait()
        for r in rs:
            hold(r, True, (0, 1, 2))
        return
    if key == "fix_yes_twice":
        m.env["CUDA_VISIBLE_DEVICES"] = "0,\u0661"
        rs = _spawn_many(m, [["fix", "--yes", "--json"]] * 2, delays=d, timeout=90)
        for r in rs:
            hold(r, True, (0, 1), secs=80)
        return
    if key == "install_dry_and_yes":
        pfx = m.base / "pfx"
        a = str(archive(ctx))
        rs = _spawn_many(m, [["install", "--from", a, "--prefix", str(pfx), "--yes", "--json"],
                             ["install", "--from", a, "--prefix", str(pfx), "--dry-run", "--json"]], delays=d)
        for r in rs:
            hold(r, True, (0, 1, 2))
        wrong = installed_as_recorded(ctx, pfx)
        if rs[0].rc == 0:
            expect(wrong == [], f"an install said done is not whole: {wrong}")
        return
    raise ValueError(key)


_CONCUR_SEEDS = {"same_o_json": 4, "same_o_prometheus": 3, "same_junit": 3, "same_step_summary": 3,
                 "shared_empty_cache": 3, "cache_wiped_meanwhile": 3, "two_benches_one_cache": 2,
                 "completion_fish_twice": 3, "completion_three_shells": 3, "check_while_install": 3,
                 "check_while_uninstall": 3, "two_images_one_cache": 2, "merge_while_written": 3, "eight_checks": 1,
                 "fix_yes_twice": 2, "install_dry_and_yes": 3}
family("concur", "pair", {f"{k}-seed{s}": (k, 90 + i * 10 + s) for i, k in enumerate(CONCUR)
                          for s in range(_CONCUR_SEEDS[k])}, concur_case, limit=150)


# ====================================================================================================================
# ci: what CI runners, containers, Slurm jobs, WSL and Jetsons put in the environment

UID_CMDS = {"check": (["check", "--json"], True, (0, 1)), "check_text": (["check"], False, (0, 1)),
            "fix": (["fix", "--json"], True, (0, 1)), "explain": (["explain", "CD301", "--json"], True, (0, 1)),
            "completion": (["--install-completion", "bash"], False, (0, 2)),
            "compat": (["compat", "torch==2.5.1", "--json"], True, (0, 1)),
            "install_dry": (None, True, (0, 1, 2)), "image": (None, True, (0, 1)),
            "merge": (None, True, (0, 1)), "github": (["check", "--format", "github"], False, (0, 1))}


def uid_case(ctx: Ctx, arg: tuple[str, str]) -> None:
    how, cmd = arg
    m = healthy(ctx)
    args, want_json, rcs = UID_CMDS[cmd]
    if cmd == "install_dry":
        args = ["install", "--from", str(archive(ctx)), "--prefix", str(m.base / "pfx"), "--dry-run", "--json"]
    elif cmd == "image":
        args = ["image", str(raw_oci(ctx)), "--json"]
    elif cmd == "merge":
        args = ["fleet", "merge", str(reports_dir(m)), "--json"]
    drop = ("HOME", "CUDNN_DOCTOR_CACHE_DIR") if how == "no_home" else ("CUDNN_DOCTOR_CACHE_DIR",)
    env = {"HOME": "/nonexistent"} if how == "home_nonexistent" else ({"HOME": "/"} if how == "home_root" else {})
    cwd_before = set(os.listdir(m.cwd))
    root_before = set(os.listdir("/"))
    r = as_uid(m, 4242 + len(how), args, env=env, drop=drop)
    hold(r, want_json, rcs)
    if r.rc == 2 and not want_json:
        one_line(r)
    new = (set(os.listdir(m.cwd)) - cwd_before) | {f"/{x}" for x in set(os.listdir("/")) - root_before}
    expect(not [x for x in new if x.strip("/").startswith("~") or x.strip("/").startswith(".cache")],
           f"wrote where no home is: {sorted(new)}")


family("ci", "uid", {f"{h}-{c}": (h, c) for h in ("no_home", "home_nonexistent", "home_root") for c in UID_CMDS
                     if not (h == "home_root" and c in ("image", "merge", "install_dry", "compat"))},
       uid_case, limit=90)

CI_ENV = {
    "container_docker": {"container": "docker"}, "container_escape": {"container": "\x1b]0;x\x07\x1b[2J"},
    "container_binary": {"container": None}, "kube_binary": {"KUBERNETES_SERVICE_HOST": None},
    "kube_empty": {"KUBERNETES_SERVICE_HOST": ""},
    "require_cuda_99": {"NVIDIA_REQUIRE_CUDA": "cuda>=99.0"},
    "require_cuda_brand": {"NVIDIA_REQUIRE_CUDA": "cuda>=12.0 brand=tesla,driver>=470,driver<471 brand=unknown"},
    "require_cuda_long": {"NVIDIA_REQUIRE_CUDA": "cuda>=12.0 " + "brand=x,driver>=1 " * 6000},
    "require_cuda_arabic": {"NVIDIA_REQUIRE_CUDA": "cuda>=\u0661\u0662.\u0660"},
    "nv_cudnn_future": {"NV_CUDNN_VERSION": "99999999999999999999.1.0.70-1"},
    "nv_cudnn_newline": {"NV_CUDNN_VERSION": "9.1.0\nCD999 error"},
    "nv_cudnn_binary": {"NV_CUDNN_VERSION": None}, "nv_cudnn_empty": {"NV_CUDNN_VERSION": ""},
    "cuda_version_words": {"CUDA_VERSION": "twelve point four"}, "cuda_version_huge": {"CUDA_VERSION": "1" * 5000},
    "cuda_version_escape": {"CUDA_VERSION": "12.4\x1b[2J\x07"},
    "device_order_bad": {"CUDA_DEVICE_ORDER": "FASTEST\x1b[31m"},
    "nvidia_visible_void": {"NVIDIA_VISIBLE_DEVICES": "void"},
    "nvidia_visible_none": {"NVIDIA_VISIBLE_DEVICES": "none"},
    "nvidia_visible_uuid": {"NVIDIA_VISIBLE_DEVICES": "GPU-00000000-0000-0000-0000-000000000000"},
    "nvidia_visible_mig": {"NVIDIA_VISIBLE_DEVICES": "MIG-GPU-x/1/0,all"},
    "cvd_nodevfiles": {"CUDA_VISIBLE_DEVICES": "NoDevFiles"},
    "cvd_uuid": {"CUDA_VISIBLE_DEVICES": "GPU-deadbeef-0000-0000-0000-000000000000"},
    "cvd_mig": {"CUDA_VISIBLE_DEVICES": "MIG-1c2d3e4f-0000-0000-0000-000000000000"},
    "cvd_empty_items": {"CUDA_VISIBLE_DEVICES": "0,,1,"},
    "slurm_gpus_mismatch": {"SLURM_JOB_ID": "1", "SLURM_STEP_GPUS": "0,1,2,3", "SLURM_JOB_GPUS": "7",
                            "CUDA_VISIBLE_DEVICES": "5"},
    "slurm_binary": {"SLURM_JOB_ID": None, "SLURM_LOCALID": None, "SLURM_PROCID": "-1"},
    "lscratch_fifo": {"LSCRATCH": "@fifo"}, "lscratch_dev_null": {"LSCRATCH": "/dev/null"},
    "glibc_tunables_check": {"GLIBC_TUNABLES": "glibc.malloc.check=3:glibc.malloc.perturb=165"},
    "glibc_tunables_garbage": {"GLIBC_TUNABLES": None},
    "glibc_tunables_long": {"GLIBC_TUNABLES": "glibc.rtld.optional_static_tls=" + "9" * 4000},
    "pythonuserbase_fifo": {"PYTHONUSERBASE": "@fifo"}, "pythonuserbase_binary": {"PYTHONUSERBASE": None},
    "temp_file": {"TEMP": "@file", "TMP": "@file", "TMPDIR": "@file"},
    "tmp_dev_null": {"TMP": "/dev/null", "TEMP": "/dev/null"},
    "user_binary": {"USER": None, "LOGNAME": None}, "user_traversal": {"USER": "../../root", "LOGNAME": "../.."},
    "windows_vars_on_linux": {"SYSTEMROOT": "C:\\Windows", "WINDIR": "C:\\Windows", "COMPUTERNAME": "\x1b[2JPC",
                              "PROCESSOR_ARCHITECTURE": "ARM64"},
    "theano_flags_escape": {"THEANO_FLAGS": "device=cuda,\x1b]52;c;cm0gLXJmIH4=\x07floatX=float32"},
    "theano_flags_long": {"THEANO_FLAGS": "device=cuda," * 9000}, "theanorc_fifo": {"THEANORC": "@fifo"},
    "ci_everything": {"CI": "true", "GITHUB_ACTIONS": "true", "GITLAB_CI": "true", "TF_BUILD": "True",
                      "BUILDKITE": "true", "JENKINS_URL": "http://127.0.0.1:1/", "TERM": "dumb"},
    "step_summary_empty": {"GITHUB_STEP_SUMMARY": ""}, "step_summary_relative": {"GITHUB_STEP_SUMMARY": "s/u.md"},
    "step_summary_folder": {"GITHUB_STEP_SUMMARY": "@folder"},
    "step_summary_dev_stdout": {"GITHUB_STEP_SUMMARY": "/dev/stdout"},
    "conda_prefix_file": {"CONDA_PREFIX": "@file"}, "cc_hangs": {"CC": "@hang"},
    "rank_world_garbage": {"RANK": "x", "WORLD_SIZE": "-9", "LOCAL_RANK": "\u0661"},
}


def ci_value(m: M, v: str | None, seed: int) -> str:
    if v is None:
        return binary_value(seed)
    if v == "@fifo":
        p = m.base / f"fifo{seed}"
        os.mkfifo(p)
        return str(p)
    if v == "@file":
        p = m.base / "a-file"
        p.write_text("not a folder\n")
        return str(p)
    if v == "@folder":
        p = m.base / "a-folder"
        p.mkdir(exist_ok=True)
        return str(p)
    if v == "@hang":
        return str(scripted(m.base / "bin" / "cc", "#!/bin/sh\nsleep 300\n"))
    return v


def ci_env_case(ctx: Ctx, arg: tuple[str, int]) -> None:
    key, seed = arg
    m = healthy(ctx)
    env = {k: ci_value(m, v, seed + i) for i, (k, v) in enumerate(CI_ENV[key].items())}
    if key == "step_summary_relative":
        (m.cwd / "s").mkdir(exist_ok=True)
    if key.startswith("step_summary") or key == "ci_everything":
        r = m.run("check", "--format", "github", env=env, timeout=50)
        hold(r, False, (0, 1, 2))
    elif key == "cc_hangs":
        bm, base = bench_machine(ctx)
        bm.env.update({"CC": env["CC"], "CUDNN_DOCTOR_HELPER_TIMEOUT": "3", "CUDNN_DOCTOR_BENCH_TIMEOUT": "20"})
        r = bm.run(*base, timeout=60)
        hold(r, True, (0, 1, 2), secs=50)
        return
    else:
        r = m.run("check", "--json", env=env, timeout=50)
        hold(r, True)
        t = m.run("fix", env=env, timeout=50)
        hold(t, False)
        text = strip_sgr(t.out)
        for line in text.split("\n"):
            expect(not re.match(r"^\s*(CD999|rm |curl |sudo rm)", line), f"a line of a hostile value stands alone: {line!r}")
    if key.startswith("slurm") or key.startswith("cvd") or key.startswith("nvidia_visible"):
        f = m.run("fleet", "merge", str(reports_dir(m)), "--json", env=env, timeout=50)
        hold(f, True, (0, 1, 2))


family("ci", "env", {k: (k, 700 + i * 3) for i, k in enumerate(CI_ENV)}, ci_env_case, limit=120)

NODELISTS = {"range_huge": "n[0-99999999]", "range_open": "n[1-3,", "nested": "n[[1]]", "reversed": "n[9-1]",
             "many_ranges": "n[" + ",".join(f"{i}-{i}" for i in range(9000)) + "]", "escape": "n\x1b[2J[1-2]",
             "zero_pad_huge": "n[0000000000000000000001-0000000000000000000003]"}


def nodelist_case(ctx: Ctx, key: str) -> None:
    m = ctx.machine()
    bin_ = m.base / "bin"
    scripted(bin_ / "srun", "#!/bin/sh\nexit 0\n")
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    r = m.run("fleet", "run", "--slurm", "--json", "--deadline", "4", timeout=50,
              env={"PATH": f"{bin_}:{m.env['PATH']}", "SLURM_JOB_NODELIST": NODELISTS[key], "SLURM_JOB_ID": "7",
                   "SLURM_NNODES": "3"})
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    hold(r, True, (0, 1, 2), secs=25)
    if peak > before:
        expect(peak / 1024 < 400, f"peak memory {peak / 1024:.0f} MB")


family("ci", "nodelist", {k: k for k in NODELISTS}, nodelist_case, limit=90)


def jetson_machine(ctx: Ctx, model: bytes, release: bytes) -> M:
    m = ctx.machine()
    (m.root / "proc" / "device-tree").mkdir(parents=True, exist_ok=True)
    (m.root / "proc" / "device-tree" / "model").write_bytes(model)
    (m.root / "etc" / "nv_tegra_release").write_bytes(release)
    folder = m.base / "cudnn" / "lib"
    fakes().fake_cudnn(folder, version=90300, cudart=12060, sublibraries=CUDNN9)
    m.add_lib(folder)
    return m


JETSONS = {
    "orin_real": (b"NVIDIA Jetson AGX Orin Developer Kit\0",
                  b"# R36 (release), REVISION: 4.3, GCID: 38968081, BOARD: generic, EABI: aarch64, DATE: Wed Jan  8\n"),
    "release_99": (b"NVIDIA Jetson Orin Nano\0", b"# R99 (release), REVISION: 99.99, BOARD: t186ref\n"),
    "revision_words": (b"NVIDIA Jetson Xavier NX\0", b"# R35 (release), REVISION: four, EABI: aarch64\n"),
    "no_fields": (b"NVIDIA Jetson\0", b"# \n"),
    "long_line": (b"NVIDIA Jetson AGX Orin\0", b"# R36 (release), REVISION: 4.3, " + b"X" * 200000 + b"\n"),
    "model_many_nuls": (b"NVIDIA\0Jetson\0\0\0\x1b[2J\0", b"# R36 (release), REVISION: 4.3\n"),
    "model_escape": (b"NVIDIA Jetson \x1b]0;owned\x07 Orin", b"# R36 (release), REVISION: 4.3\n"),
    "release_crlf_latin1": (b"NVIDIA Jetson AGX Orin\0", b"# R36 (release), REVISION: 4.3, BOARD: caf\xe9\r\n"),
}


def jetson_case(ctx: Ctx, arg: tuple[str, str]) -> None:
    key, surf = arg
    m = jetson_machine(ctx, *JETSONS[key])
    if surf == "json":
        hold(m.run("check", "--json", timeout=50), True)
    elif surf == "fix":
        hold(m.run("fix", timeout=50), False)
    else:
        hold(m.run("check", "--format", "markdown", timeout=50), False)


family("ci", "jetson", {f"{k}-{s}": (k, s) for k in JETSONS for s in ("json", "fix", "markdown")}, jetson_case,
       limit=90)


# ====================================================================================================================
# pyexe: --python pointing at hostile interpreters (a WSL user's python.exe, another architecture, CRLF scripts)

ELF_AARCH64 = (b"\x7fELF\x02\x01\x01\x00" + b"\0" * 8 + b"\x02\x00\xb7\x00\x01\x00\x00\x00" + b"\0" * 40)
PYEXES = {
    "windows_pe": ("bytes", b"MZ\x90\x00" + b"\0" * 56 + b"PE\0\0" + b"\x64\x86" + b"\0" * 200),
    "aarch64_elf": ("bytes", ELF_AARCH64),
    "crlf_shebang": ("script", "#!/bin/sh\r\necho 'Python 3.12.0'\r\n"),
    "no_shebang": ("script", "echo 'Python 3.12.0'\nexit 0\n"),
    "shebang_missing": ("script", "#!/nonexistent/python3.12\nprint(1)\n"),
    "prints_garbage": ("script", "#!/bin/sh\nhead -c 200000 /dev/urandom\nexit 0\n"),
    "prints_fake_json": ("script", '#!/bin/sh\necho \'{"packages": {"torch": "\x1b[2J9.9"}, "x": NaN}\'\nexit 0\n'),
    "hangs": ("script", "#!/bin/sh\nsleep 300\n"),
    "closes_stdout_sleeps": ("script", "#!/bin/sh\nexec >&-\nsleep 300\n"),
    "daemon_holds_stdout": ("script", "#!/bin/sh\n(setsid sleep 40 &)\necho '{}'\nexit 0\n"),
    "python2_stub": ("script", "#!/bin/sh\necho 'Python 2.7.18' >&2\nexit 1\n"),
    "floods_50mb": ("script", "#!/bin/sh\nhead -c 50000000 /dev/zero | tr '\\0' 'x'\nexit 0\n"),
    "reads_stdin": ("script", "#!/bin/sh\ncat\n"),
    "segfaults": ("script", "#!/bin/sh\nkill -SEGV $$\n"),
    "fifo": ("fifo", None), "dev_zero": ("link", "/dev/zero"), "proc_self_exe_loop": ("link", "/proc/self/exe"),
    "venv_dangling": ("venv", "dangling"), "venv_cfg_binary": ("venv", "cfg_binary"),
    "venv_cfg_home_loop": ("venv", "cfg_loop"), "conda_meta_fifo": ("conda", "fifo"),
    "conda_meta_garbage": ("conda", "garbage"),
}


def make_pyexe(m: M, key: str) -> Path:
    kind, body = PYEXES[key]
    base = m.base / "py"
    base.mkdir(exist_ok=True)
    if kind == "bytes":
        p = base / ("python.exe" if key == "windows_pe" else "python3")
        p.write_bytes(body)
        p.chmod(0o755)
        return p
    if kind == "script":
        return scripted(base / "python3", body)
    if kind == "fifo":
        os.mkfifo(base / "python3")
        return base / "python3"
    if kind == "link":
        (base / "python3").symlink_to(body)
        return base / "python3"
    if kind == "venv":
        env = base / "venv"
        (env / "bin").mkdir(parents=True)
        (env / "lib" / "python3.12" / "site-packages").mkdir(parents=True)
        if body == "dangling":
            (env / "bin" / "python").symlink_to("/nonexistent/python3.12")
            (env / "pyvenv.cfg").write_text("home = /nonexistent\nversion = 3.12.0\n")
        elif body == "cfg_binary":
            (env / "bin" / "python").symlink_to(sys.executable)
            (env / "pyvenv.cfg").write_bytes(os.urandom(4096).replace(b"\0", b"\1"))
        else:
            (env / "bin" / "python").symlink_to(sys.executable)
            (env / "loop").symlink_to(env / "loop")
            (env / "pyvenv.cfg").write_text(f"home = {env / 'loop'}\nversion = 3.12.0\n" + "x = y\n" * 50000)
        return env
    if kind == "conda":
        env = base / "conda"
        (env / "conda-meta").mkdir(parents=True)
        (env / "bin").mkdir()
        (env / "bin" / "python").symlink_to(sys.executable)
        if body == "fifo":
            os.mkfifo(env / "conda-meta" / "history")
            os.mkfifo(env / "conda-meta" / "cudnn-9.1.0-0.json")
        else:
            (env / "conda-meta" / "cudnn-9.1.0-0.json").write_text('{"name": ["cudnn"], "version": 9.1, "files": 7}')
            (env / "conda-meta" / "history").write_bytes(b"\xff\xfe" + b"==> \x1b[2J <==\n" * 10000)
        return env
    raise ValueError(key)


def pyexe_case(ctx: Ctx, arg: tuple[str, str]) -> None:
    key, cmd = arg
    m = healthy(ctx)
    target = make_pyexe(m, key)
    m.env["CUDNN_DOCTOR_HELPER_TIMEOUT"] = "5"
    if cmd == "check":
        r = m.run("check", "--json", "--python", str(target), timeout=60)
        hold(r, True, (0, 1, 2), secs=45)
    else:
        r = m.run("fix", "--python", str(target), timeout=60)
        hold(r, False, (0, 1, 2), secs=45)
    left = [x for x in leftovers_of(m.base) if "sleep 300" in x or "python3" in x and str(m.base) in x]
    reap(m.base)
    expect(not left, f"a child of --python left running: {left[:2]}")


family("pyexe", "python", {**{f"{k}-check": (k, "check") for k in PYEXES},
                           **{f"{k}-fix": (k, "fix") for k in ("windows_pe", "crlf_shebang", "hangs",
                                                               "prints_fake_json", "venv_dangling",
                                                               "conda_meta_garbage")}}, pyexe_case, limit=100)


# ====================================================================================================================
# wheel: install --from a hostile wheel (zip) into a prefix holding the user's files

def good_wheel(ctx: Ctx) -> Path:
    shared = BUILD / "wheels" / "good"
    done = shared / "done"
    if not done.exists():
        tmp = Path(str(shared) + f".{os.getpid()}")
        tmp.mkdir(parents=True, exist_ok=True)
        w = inst().make_archive("wheel", tmp, version=91900, cudart=13000, cuda=13)
        shared.mkdir(parents=True, exist_ok=True)
        os.replace(w, shared / w.name)
        done.write_text(w.name)
        shutil.rmtree(tmp, ignore_errors=True)
    return shared / done.read_text()


def _members(w: Path) -> list[tuple[zipfile.ZipInfo, bytes]]:
    with zipfile.ZipFile(w) as z:
        return [(i, z.read(i)) for i in z.infolist()]


def _lib_name(members: list) -> str:
    return next(i.filename for i, _ in members if re.search(r"/libcudnn\.so(\.\d+)?$", i.filename))


def _info(name: str, mode: int = 0o100644) -> zipfile.ZipInfo:
    i = zipfile.ZipInfo(name)
    i.external_attr = mode << 16
    i.create_system = 3
    return i


def hostile_wheel(ctx: Ctx, kind: str, seed: int) -> Path:
    src = good_wheel(ctx)
    members = _members(src)
    lib = _lib_name(members)
    out = ctx.work / src.name
    if kind == "tar_named_whl":
        shutil.copyfile(archive(ctx), out)
        return out
    if kind.startswith("cut"):
        data = src.read_bytes()
        rng = random.Random(seed)
        out.write_bytes(data[: rng.randrange(len(data) // 4, len(data) - 22)])
        return out
    if kind == "comment_64k":
        shutil.copyfile(src, out)
        with zipfile.ZipFile(out, "a") as z:
            z.comment = b"\x1b[2J" * 16000
        return out
    if kind == "central_dir_lies":
        data = bytearray(src.read_bytes())
        eocd = data.rfind(b"PK\x05\x06")
        data[eocd + 12: eocd + 16] = (0x7FFFFFFF).to_bytes(4, "little")
        out.write_bytes(bytes(data))
        return out
    if kind == "encrypted_flag":
        data = bytearray(src.read_bytes())
        pos = 0
        while True:
            pos = data.find(b"PK\x03\x04", pos)
            if pos < 0:
                break
            data[pos + 6] |= 1
            pos += 4
        pos = 0
        while True:
            pos = data.find(b"PK\x01\x02", pos)
            if pos < 0:
                break
            data[pos + 8] |= 1
            pos += 4
        out.write_bytes(bytes(data))
        return out
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
        for i, body in members:
            if kind == "dir_as_lib" and i.filename == lib:
                z.writestr(_info(lib + "/", 0o40755), b"")
                z.writestr(_info(lib + "/x"), b"x")
                continue
            if kind == "setuid_lib" and i.filename == lib:
                z.writestr(_info(lib, 0o104755), body)
                continue
            if kind == "device_lib" and i.filename == lib:
                z.writestr(_info(lib, 0o020644), b"")
                continue
            if kind == "metadata_binary" and i.filename.endswith("METADATA"):
                z.writestr(i, os.urandom(3000))
                continue
            if kind == "metadata_version_other" and i.filename.endswith("METADATA"):
                z.writestr(i, b"Version: 8.0.0.1\n")
                continue
            z.writestr(i, body)
        if kind == "zip_slip":
            z.writestr(_info("nvidia/cudnn/lib/../../../../outside/evil.so"), b"evil")
        elif kind == "absolute_member":
            z.writestr(_info(str(ctx.work / "outside" / "abs.so")), b"evil")
        elif kind == "symlink_member":
            z.writestr(_info("nvidia/cudnn/lib/libcudnn_evil.so.9", 0o120777), str(ctx.work / "outside" / "target"))
            z.writestr(_info("nvidia/cudnn/lib/libcudnn_evil.so.9/through"), b"written through a link")
        elif kind == "zip_bomb":
            z.writestr(_info("nvidia/cudnn/lib/libcudnn_huge.so.9"), b"\0" * (300 << 20), zipfile.ZIP_DEFLATED)
        elif kind == "members_20000":
            for n in range(20000):
                z.writestr(_info(f"nvidia/cudnn/lib/x/{n}"), b"")
        elif kind == "duplicate_lib":
            z.writestr(_info(lib), b"a second, different copy")
        elif kind == "control_member_name":
            z.writestr(_info("nvidia/cudnn/lib/\x1b]0;owned\x07\x1b[2J\u202e\x7f\x01.so"), b"x")
        elif kind == "backslash_member":
            z.writestr(_info("nvidia\\cudnn\\lib\\..\\..\\..\\..\\outside\\bs.so"), b"evil")
        elif kind == "record_lies":
            z.writestr(_info("nvidia_cudnn_cu13-9.19.0.7.dist-info/RECORD"),
                       f"{lib},sha256=AAAA,1\n../../outside/r.so,,\n".encode())
    return out


WHEEL_KINDS = ("zip_slip", "absolute_member", "symlink_member", "zip_bomb", "members_20000", "duplicate_lib",
               "control_member_name", "backslash_member", "record_lies", "dir_as_lib", "setuid_lib", "device_lib",
               "metadata_binary", "metadata_version_other", "tar_named_whl", "comment_64k", "central_dir_lies",
               "encrypted_flag", "cut1", "cut2", "cut3")


def wheel_case(ctx: Ctx, arg: tuple[str, int]) -> None:
    kind, seed = arg
    w = hostile_wheel(ctx, kind, seed)
    outside = ctx.work / "outside"
    outside.mkdir(exist_ok=True)
    (outside / "target").write_text("the user's file outside\n")
    before_out = snapshot_tree(outside)
    prefix = prefix_with_old(ctx)
    m = ctx.machine()
    m.cwd = prefix
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    r = m.run("install", "--from", str(w), "--prefix", str(prefix), "--yes", "--force", "--json", timeout=80)
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    hold(r, True, (0, 1, 2), secs=60)
    if peak > before:
        expect(peak / 1024 < 500, f"peak memory {peak / 1024:.0f} MB")
    expect(snapshot_tree(outside) == before_out, f"a file outside the prefix changed: "
                                                 f"{sorted(set(snapshot_tree(outside)) ^ set(before_out))}")
    _user_files_kept(prefix)
    for p in prefix.rglob("*"):
        if p.is_file() and not p.is_symlink():
            expect(not p.stat().st_mode & (stat.S_ISUID | stat.S_ISGID), f"{p.name} installed setuid")
            expect(not stat.S_ISCHR(p.stat().st_mode), f"{p.name} installed as a device")
    if r.rc == 0:
        wrong = installed_as_recorded(ctx, prefix)
        expect(not wrong, f"an install said done is not whole: {wrong}")
    else:
        expect(os.readlink(prefix / "lib64" / "libcudnn.so.9") == "libcudnn.so.9.1.0",
               "a refused install changed the user's libcudnn.so.9")
    t = m.run("install", "--from", str(w), "--prefix", str(m.base / "p2"), "--dry-run", timeout=80)
    hold(t, False, (0, 1, 2), secs=60)


family("wheel", "install", {k: (k, 300 + i) for i, k in enumerate(WHEEL_KINDS)}, wheel_case, limit=150)


# ====================================================================================================================
# windows: what a Windows or WSL 2 user types and has

ALL_SHELLS = ("bash", "zsh", "fish", "powershell", "cmd", "user")
WIN_NAMES = {"program_files_x86": "Program Files (x86)/NVIDIA/CUDNN/v9.1/bin",
             "backslashes": "C:\\tools\\cudnn\\bin", "user_with_accent": "Users/Zo\u00eb O'Brien/cudnn",
             "dollar_home_literal": "$HOME/cudnn ${PATH}"}


def win_fix_case(ctx: Ctx, arg: tuple[str, str]) -> None:
    shell, key = arg
    name = WIN_NAMES[key]
    m, folder = _cudnn_off_path(ctx, "mnt/c/" + name)
    r = m.run("fix", "--shell", shell, "--search-path", folder, timeout=40)
    hold(r, False, (0, 1), secs=30)
    plan = judge(m.run("fix", "--json", "--shell", shell, "--search-path", folder, timeout=40), (0, 1), secs=30) or {}
    lines = _env_lines(plan, shell)
    if shell in JUDGES:
        lines += source_lines(r.out)
        for line in lines:
            JUDGES[shell](line, "LD_LIBRARY_PATH", folder)
        return
    exact = [x for x in lines if not x.lstrip().startswith("#")]
    for line in exact:
        expect(line.isprintable(), f"a {shell} line the terminal does not show as the shell reads it: {line!r}")
    if exact:
        env = {"PATH": "/usr/bin:/bin", "HOME": str(m.base), "LANG": "C.UTF-8", "LD_LIBRARY_PATH": "/old/lib"}
        got = run_in_shell(shell, exact, m.base, env).get(b"LD_LIBRARY_PATH")
        expect(got == os.fsencode(folder) + b":/old/lib", f"{shell} set LD_LIBRARY_PATH={got!r}")
    else:
        expect(lines or "LD_LIBRARY_PATH" in r.out, f"neither a {shell} line nor a comment for the folder")


family("windows", "fix", {f"{s}-{k}": (s, k) for s in ALL_SHELLS for k in WIN_NAMES}, win_fix_case, limit=60)

WSL_PATH = ("/mnt/c/Program Files (x86)/NVIDIA Corporation/PhysX/Common:/mnt/c/WINDOWS/system32:/mnt/c/WINDOWS:"
            "/mnt/c/Program Files/NVIDIA GPU Computing Toolkit/CUDA/v12.4/bin:/mnt/c/Users/Zo\u00eb/AppData/Local/"
            "Microsoft/WindowsApps:/mnt/c/Program Files/dotnet/")


def wsl_machine(ctx: Ctx, lib_kind: str = "good") -> M:
    m = healthy(ctx)
    (m.root / "dev").mkdir(exist_ok=True)
    (m.root / "dev" / "dxg").write_text("")
    wsl = m.root / "usr" / "lib" / "wsl" / "lib"
    wsl.mkdir(parents=True)
    if lib_kind == "good":
        fakes().fake_libcuda(wsl, driver_cuda=13000, devices=1, status=0)
    elif lib_kind == "fifo":
        os.mkfifo(wsl / "libcuda.so.1")
    elif lib_kind == "loop":
        (wsl / "libcuda.so.1").symlink_to("libcuda.so.1")
    m.env.update({"WSL_DISTRO_NAME": "Ubuntu-24.04", "WSL_INTEROP": "/run/WSL/1_interop",
                  "PATH": m.env["PATH"] + ":" + WSL_PATH})
    return m


WIN_MISC = ("o_backslash_path", "junit_backslash_path", "prefix_drive_letter", "search_path_windows",
            "project_windows", "python_windows_exe_path", "home_backslashes", "explain_crlf_log",
            "explain_utf16_log", "compat_os_windows", "install_os_windows_txz", "install_zip_on_linux",
            "pwsh_windows_profile", "wsl_path_check", "wsl_path_fix_bash", "wsl_libcuda_fifo", "wsl_libcuda_loop",
            "wsl_interop_binary", "wsl_deep")


def win_misc_case(ctx: Ctx, key: str) -> None:
    if key.startswith("wsl"):
        m = wsl_machine(ctx, {"wsl_libcuda_fifo": "fifo", "wsl_libcuda_loop": "loop"}.get(key, "good"))
        if key == "wsl_interop_binary":
            m.env["WSL_INTEROP"] = binary_value(41)
            m.env["WSL_DISTRO_NAME"] = binary_value(42, 60)
        if key == "wsl_deep":
            hold(m.run("check", "--deep", "--json", timeout=60), True, secs=50)
        elif key == "wsl_path_fix_bash":
            r = m.run("fix", "--shell", "bash", timeout=50)
            hold(r, False)
            for line in source_lines(r.out):
                if line.lstrip().startswith("#"):
                    continue
                s = run_proc(["bash", "--norc", "--noprofile", "-c", line + "\nexec /usr/bin/env -0"],
                             {"PATH": m.env["PATH"], "HOME": str(m.base)}, m.base, 20)
                expect(s.rc == 0, f"bash failed on a printed line {line!r}: {s!r}")
                env = dict(e.split(b"=", 1) for e in s.outb.split(b"\0") if b"=" in e)
                expect(os.fsencode(WSL_PATH) in env.get(b"PATH", os.fsencode(WSL_PATH)),
                       "a printed line changed the Windows entries of PATH")
        else:
            hold(m.run("check", "--json", timeout=50), True)
            hold(m.run("check", timeout=50), False)
        return
    m = healthy(ctx)
    if key == "o_backslash_path":
        r = m.run("check", "--format", "json", "-o", "C:\\Users\\me\\report.json", timeout=50)
        hold(r, False, (0, 1, 2, 74))
    elif key == "junit_backslash_path":
        r = m.run("check", "--json", "--junit-xml", "D:\\ci\\junit.xml", timeout=50)
        hold(r, True, (0, 1, 2, 74))
    elif key == "prefix_drive_letter":
        r = m.run("install", "--from", str(archive(ctx)), "--prefix", "C:\\Program Files\\NVIDIA\\CUDNN\\v9.19",
                  "--dry-run", "--json", timeout=50)
        hold(r, True, (0, 1, 2))
    elif key == "search_path_windows":
        r = m.run("check", "--json", "--search-path", "C:\\Program Files\\NVIDIA\\CUDNN\\v9.1\\bin", timeout=50)
        hold(r, True, (0, 1, 2))
    elif key == "project_windows":
        r = m.run("check", "--json", "--project", "C:\\Users\\me\\dl4j-app\\pom.xml", timeout=50)
        hold(r, True, (0, 1, 2))
    elif key == "python_windows_exe_path":
        r = m.run("check", "--json", "--python", "C:\\Python312\\python.exe", timeout=50)
        hold(r, True, (0, 1, 2))
    elif key == "home_backslashes":
        r = m.run("check", "--json", env={"HOME": "C:\\Users\\me", "USERPROFILE": "C:\\Users\\me"}, timeout=50)
        hold(r, True, (0, 1))
        c = m.run("--install-completion", "bash", env={"HOME": "C:\\Users\\me"}, timeout=50)
        hold(c, False, (0, 2))
        if c.rc == 2:
            one_line(c)
    elif key in ("explain_crlf_log", "explain_utf16_log"):
        log = m.base / "train.log"
        text = ("Epoch 1\r\n  File \"C:\\train.py\", line 3, in <module>\r\n"
                "RuntimeError: cuDNN error: CUDNN_STATUS_NOT_INITIALIZED\r\n")
        log.write_bytes(text.encode("utf-16") if key.endswith("utf16_log") else text.encode())
        r = m.run("explain", "--from-file", str(log), "--json", timeout=50)
        hold(r, True, (0, 1, 2))
        t = m.run("explain", "--from-file", str(log), timeout=50)
        hold(t, False, (0, 1, 2))
    elif key == "compat_os_windows":
        hold(m.run("compat", "torch==2.5.1", "--os", "windows", "--json", timeout=50), True, (0, 1, 2))
        hold(m.run("compat", "tensorflow==2.10.0", "--os", "windows", timeout=50), False, (0, 1, 2))
    elif key == "install_os_windows_txz":
        r = m.run("install", "--from", str(archive(ctx)), "--os", "windows", "--prefix", str(m.base / "p"),
                  "--dry-run", "--json", timeout=50)
        hold(r, True, (0, 1, 2))
    elif key == "install_zip_on_linux":
        shared = BUILD / "wheels" / "zip"
        if not (shared / "done").exists():
            tmp = Path(str(shared) + f".{os.getpid()}")
            tmp.mkdir(parents=True, exist_ok=True)
            z = inst().make_archive("zip", tmp)
            shared.mkdir(parents=True, exist_ok=True)
            os.replace(z, shared / z.name)
            (shared / "done").write_text(z.name)
        z = shared / (shared / "done").read_text()
        pfx = m.base / "p"
        r = m.run("install", "--from", str(z), "--prefix", str(pfx), "--yes", "--json", timeout=50)
        hold(r, True, (0, 1, 2))
        if r.rc != 0:
            expect(not list(pfx.rglob("*cudnn*")), "a refused install left cuDNN files")
    elif key == "pwsh_windows_profile":
        bin_ = m.base / "bin"
        scripted(bin_ / "pwsh", "#!/bin/sh\nprintf '%s\\r\\n' 'C:\\Users\\me\\Documents\\PowerShell\\"
                                "Microsoft.PowerShell_profile.ps1'\n")
        r = m.run("--install-completion", "powershell", env={"PATH": f"{bin_}:{m.env['PATH']}"}, timeout=50)
        hold(r, False, (0, 2), secs=30)
        if r.rc == 2:
            one_line(r)
        made = [p.name for p in m.cwd.iterdir() if "\\" in p.name]
        expect(not made, f"a file named with a Windows path was written in the working folder: {made}")
    else:
        raise ValueError(key)


family("windows", "misc", {k: k for k in WIN_MISC}, win_misc_case, limit=90)


# ====================================================================================================================
# sysvals: the pretend system's files well formed but absurd (and files of the system not tried before)

def _deep_json(n: int) -> bytes:
    return b"[" * n + b"]" * n


SYSVALS: dict[str, tuple[str, object]] = {
    "driver_999": ("proc/driver/nvidia/version", b"NVRM version: NVIDIA UNIX x86_64 Kernel Module  999.999.999  Rel\n"),
    "driver_0_0": ("proc/driver/nvidia/version", b"NVRM version: NVIDIA UNIX x86_64 Kernel Module  0.0  Release\n"),
    "driver_six_parts": ("proc/driver/nvidia/version", b"NVRM version: NVIDIA UNIX Kernel Module  580.159.04.1.2.3  R\n"),
    "driver_two_lines": ("proc/driver/nvidia/version",
                         b"NVRM version: NVIDIA UNIX Kernel Module  580.159.04  R\nNVRM version: NVIDIA  470.1.2  R\n"),
    "driver_10000_digits": ("proc/driver/nvidia/version", b"NVRM version: NVIDIA Module  " + b"5" * 10000 + b".1\n"),
    "driver_arabic": ("proc/driver/nvidia/version", "NVRM version: NVIDIA Module  \u0665\u0668\u0660.1.2  R\n".encode()),
    "header_major_huge": ("usr/include/cudnn_version.h",
                          b"#define CUDNN_MAJOR 99999999999999999999999\n#define CUDNN_MINOR 1\n#define CUDNN_PATCHLEVEL 0\n"),
    "header_twice": ("usr/include/cudnn_version.h", b"#define CUDNN_MAJOR 9\n#define CUDNN_MINOR 1\n"
                     b"#define CUDNN_PATCHLEVEL 0\n#undef CUDNN_MAJOR\n#define CUDNN_MAJOR 8\n"),
    "header_parens_hex": ("usr/include/cudnn_version.h",
                          b"#define CUDNN_MAJOR (9)\n#define CUDNN_MINOR 0x1\n#define CUDNN_PATCHLEVEL 0U\n"),
    "header_if0": ("usr/include/cudnn_version.h", b"#if 0\n#define CUDNN_MAJOR 7\n#define CUDNN_MINOR 6\n#endif\n"
                   b"/* #define CUDNN_MAJOR 6 */\n// #define CUDNN_MAJOR 5\n#define CUDNN_MAJOR 9\n#define CUDNN_MINOR 1\n"
                   b"#define CUDNN_PATCHLEVEL 0\n"),
    "header_negative": ("usr/include/cudnn_version.h",
                        b"#define CUDNN_MAJOR -9\n#define CUDNN_MINOR -1\n#define CUDNN_PATCHLEVEL -0\n"),
    "header_minor_missing": ("usr/include/cudnn_version.h", b"#define CUDNN_MAJOR 9\n"),
    "header_macro_chain": ("usr/include/cudnn_version.h", b"#define A B\n#define B A\n#define CUDNN_MAJOR A\n"
                           b"#define CUDNN_MINOR CUDNN_MINOR\n#define CUDNN_PATCHLEVEL (CUDNN_MAJOR*1000)\n"),
    "header_continuations": ("usr/include/cudnn_version.h", b"#define CUDNN_MAJOR \\\n 9\n#define CUDNN_MINOR \\\n"
                             * 5000 + b"1\n"),
    "versionjson_number": ("usr/local/cuda/version.json", b'{"cuda": {"name": "CUDA SDK", "version": 13.0}}'),
    "versionjson_null": ("usr/local/cuda/version.json", b'{"cuda": null, "cuda_cudart": {"version": null}}'),
    "versionjson_list": ("usr/local/cuda/version.json", b'[{"cuda": {"version": "13.0.1"}}]'),
    "versionjson_parts": ("usr/local/cuda/version.json",
                          b'{"cuda": {"version": "' + b".".join([b"13"] * 20000) + b'"}}'),
    "versionjson_deep": ("usr/local/cuda/version.json", b'{"cuda": ' + _deep_json(100000) + b"}"),
    "versionjson_dupkeys": ("usr/local/cuda/version.json",
                            b'{"cuda": {"version": "13.0.1"}, "cuda": {"version": "\\u001b[2J11.0"}}'),
    "osrelease_escapes": ("etc/os-release", b'ID="ubu\\"ntu\x1b[2J"\nVERSION_ID="22.04\\\n"\nPRETTY_NAME=$(reboot)\n'),
    "osrelease_arabic": ("etc/os-release", "ID=ubuntu\nVERSION_ID=\"\u0662\u0662.\u0660\u0664\"\n".encode()),
    "osrelease_dupkeys": ("etc/os-release", b"ID=ubuntu\nID=rhel\nID=\nVERSION_ID=22.04\nVERSION_ID=8\n"),
    "osrelease_1mb_value": ("etc/os-release", b"ID=ubuntu\nVERSION_ID=" + b"9" * 1000000 + b"\n"),
    "osrelease_nul": ("etc/os-release", b"ID=ubu\0ntu\nVERSION_ID=22.04\0"),
    "ldconf_self_include": ("etc/ld.so.conf", b"include /etc/ld.so.conf\ninclude ld.so.conf\n/usr/lib/x\n"),
    "ldconf_mutual": ("etc/ld.so.conf", "@mutual"),
    "ldconf_glob_10k": ("etc/ld.so.conf", "@glob10k"),
    "ldconf_dev_zero": ("etc/ld.so.conf", b"include /dev/zero\ninclude /proc/self/fd/0\n"),
    "ldconf_1mb_line": ("etc/ld.so.conf", b"/" + b"a" * 1000000 + b"\n"),
    "ldconf_hwcap": ("etc/ld.so.conf", b"hwcap 0 nosegneg\n/usr/lib/\x1b[2J\n\n\t\n#x\ninclude\n"),
    "cdi_wrong_types": ("etc/cdi/nvidia.json", b'{"cdiVersion": 7, "kind": ["nvidia.com/gpu"], "devices": "all"}'),
    "cdi_10k_devices": ("etc/cdi/nvidia.json", "@cdi10k"),
    "cdi_deep": ("etc/cdi/nvidia.json", _deep_json(100000)),
    "cdi_binary": ("etc/cdi/nvidia.yaml", "@binary"),
    "cdi_fifo": ("var/run/cdi/nvidia.yaml", "@fifo"),
    "cdi_yaml_bomb": ("etc/cdi/nvidia.yaml", b"a: &a [x,x,x,x,x,x,x,x,x]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\n"
                      b"c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]\nd: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]\n"
                      b"e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]\nf: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]\n"
                      b"g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]\nh: [*g,*g,*g,*g,*g,*g,*g,*g,*g]\n"),
    "pci_class_garbage": ("sys/bus/pci/devices", "@pci_garbage"),
    "pci_5000": ("sys/bus/pci/devices", "@pci5000"),
    "pci_vendor_fifo": ("sys/bus/pci/devices", "@pci_fifo"),
    "cpuinfo_binary": ("proc/cpuinfo", "@binary"),
    "cpuinfo_5mb": ("proc/cpuinfo", b"processor\t: 0\nflags\t\t: " + b"avx " * 1300000 + b"\n"),
    "cpuinfo_no_fields": ("proc/cpuinfo", b"\n\n\n:\n::\n"),
    "loadavg_nan": ("proc/loadavg", b"nan inf -1 1/0 -5\n"),
    "loadavg_binary": ("proc/loadavg", "@binary"),
    "containerenv_binary": ("run/.containerenv", "@binary"),
    "containerenv_fifo": ("run/.containerenv", "@fifo"),
    "containerenv_1mb": ("run/.containerenv", b'engine="podman-4"\nname="' + b"x" * 1000000 + b'"\n'),
    "dxg_fifo": ("dev/dxg", "@fifo"),
    "iommu_2000_groups": ("sys/kernel/iommu_groups", "@iommu10k"),
    "net_binary_names": ("sys/class/net", "@net_binary"),
}


def place_sysval(m: M, rel: str, what: object, seed: int) -> None:
    path = m.root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(what, bytes):
        path.write_bytes(what)
        return
    if what == "@binary":
        path.write_bytes(random.Random(seed).randbytes(65536))
    elif what == "@fifo":
        os.mkfifo(path)
    elif what == "@mutual":
        d = m.root / "etc" / "ld.so.conf.d"
        d.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"include /etc/ld.so.conf.d/*.conf\n")
        (d / "a.conf").write_bytes(b"include /etc/ld.so.conf\ninclude /etc/ld.so.conf.d/*.conf\n")
    elif what == "@glob10k":
        d = m.root / "etc" / "ld.so.conf.d"
        d.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"include /etc/ld.so.conf.d/*.conf\n")
        for i in range(10000):
            (d / f"{i}.conf").write_bytes(f"/usr/lib/x{i}\n".encode())
    elif what == "@cdi10k":
        devs = [{"name": str(i), "containerEdits": {"deviceNodes": [{"path": f"/dev/nvidia{i}"}]}} for i in range(10000)]
        path.write_text(json.dumps({"cdiVersion": "0.5.0", "kind": "nvidia.com/gpu", "devices": devs}))
    elif what in ("@pci_garbage", "@pci5000", "@pci_fifo"):
        n = 5000 if what == "@pci5000" else 2
        for i in range(n):
            d = path / f"0000:{i // 256:02x}:{i % 256:02x}.0"
            d.mkdir(parents=True, exist_ok=True)
            if what == "@pci_fifo":
                os.mkfifo(d / "vendor")
                os.mkfifo(d / "class")
            else:
                (d / "vendor").write_bytes(b"0x10de\n")
                (d / "class").write_bytes(b"\x1b[2Jgarbage\xff\n" if what == "@pci_garbage" else b"0x030200\n")
                (d / "device").write_bytes(b"0x2330\n")
    elif what == "@iommu10k":
        for i in range(2000):
            (path / str(i) / "devices").mkdir(parents=True, exist_ok=True)
    elif what == "@net_binary":
        path.mkdir(parents=True, exist_ok=True)
        for i in range(3):
            (path / os.fsdecode(bytes([0xff, 0x1b, 0x5b, 0x32, 0x4a, 0x41 + i]))).mkdir()
    else:
        raise ValueError(what)


def sysval_case(ctx: Ctx, arg: tuple[str, int]) -> None:
    key, seed = arg
    m = healthy(ctx)
    rel, what = SYSVALS[key]
    place_sysval(m, rel, what, seed)
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    r = m.run("check", "--json", timeout=50)
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    hold(r, True, secs=35)
    if peak > before:
        expect(peak / 1024 < 400, f"peak memory {peak / 1024:.0f} MB")
    t = m.run("check", "--format", "markdown", timeout=50)
    hold(t, False, secs=35)


family("sysvals", "file", {k: (k, 500 + i) for i, k in enumerate(SYSVALS)}, sysval_case, limit=120)


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
    scratch = Path(tempfile.mkdtemp(prefix="redteam9-43-", dir="/var/tmp"))
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
