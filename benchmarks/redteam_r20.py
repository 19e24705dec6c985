"""Round fifteen's red-team (issue 43, helper r20) as a figure: what r20 built (every helper program asked through
the one runner and what it did said; NCCL's and torch's settings read by their own readers; the outputs machines read
under hostile machine values; a libdevice that is no file) and surfaces r17-r19 did not attack (XLA's stub-table
names read from a hostile plugin library, install over a lock or journal of the wrong kind, fleet reports whose
sections are of the wrong type). Each case is a pretend machine built as the tests build them and one command run as
a user would. The table is fixed; the one random choice (the bytes of the flooding nvcc) is seeded.

Usage: python benchmarks/redteam_r20.py [--package DIR] [--only NAME]
  --package DIR: the checkout whose cudnn_doctor is judged (the tree before: an archive of main as r20 started);
  by default this one. Prints each broken case, then `N cases, B broken, T s`.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from xml.parsers import expat

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.conftest import Machine  # noqa: E402
from tests.fakes.build import compile_library, fake_cuda_math, fake_nvml  # noqa: E402
from tests.install_helpers import clean_env, cudnn7_archive, cudnn7_prefix  # noqa: E402
from tests.test_cuda_libraries import jax_cu13, libraries_of  # noqa: E402
from tests.test_first_use import jax_cu12  # noqa: E402
from tests.test_multi_gpu import _gpus, _interfaces  # noqa: E402
from tests.test_process_env import gpu_machine  # noqa: E402

PACKAGE: Path | None = None
RANDOM = random.Random(20)
FLOOD = "".join(RANDOM.choice("abcdefghij") for _ in range(64))
BANNER = "echo 'Cuda compilation tools, release 12.6, V12.6.85'\n"
HELPER_S = "0.5"
SLOW_S = 20.0  # a check under CUDNN_DOCTOR_HELPER_TIMEOUT=0.5 that takes longer waited on what a child left


def package() -> str:
    return str(PACKAGE or Path(__file__).resolve().parents[1])


def run(machine: Machine, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[bytes]:
    environment = dict(env if env is not None else machine.env)
    environment["PYTHONPATH"] = package()
    return subprocess.run([sys.executable, "-m", "cudnn_doctor", *args], env=environment, cwd=machine.cwd,
                          capture_output=True, timeout=180, stdin=subprocess.DEVNULL)


def internal(done: subprocess.CompletedProcess[bytes]) -> str | None:
    if done.returncode == 3 or b"Traceback" in done.stderr:
        return f"internal error: {done.stderr.decode(errors='replace').strip().splitlines()[-1:]}"
    return None


def report_of(done: subprocess.CompletedProcess[bytes]) -> dict:
    said = internal(done)
    if said:
        raise AssertionError(said)
    text = done.stdout.decode("utf-8", "surrogateescape")
    return json.JSONDecoder().raw_decode(text, max(text.find("{\n"), 0))[0]


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stream:
            return stream.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _left(pids: Path) -> list[int]:
    return [pid for pid in map(int, pids.read_text().split()) if _alive(pid)] if pids.exists() else []


# --- A. every helper program through the one runner ----------------------------------------------------------------

def nvcc_case(body: str, want: str | None) -> Callable[[Path], str | None]:
    """A toolkit whose files name no version, so check asks its nvcc `--version` (BODY): check ends in time, what it
    started is gone, and a CD213 names the nvcc and holds WANT (None: nothing said, the version taken)."""
    def case(tmp: Path) -> str | None:
        machine = Machine(tmp)
        gpu_machine(machine, tmp, gpus=1)
        toolkit = tmp / "cuda-nvcc"
        (toolkit / "include").mkdir(parents=True)
        (toolkit / "include" / "cuda_runtime.h").write_text("/* fake */\n")
        (toolkit / "bin").mkdir()
        nvcc = toolkit / "bin" / "nvcc"
        pids = tmp / "pids"
        nvcc.write_text("#!/bin/sh\n" + body.format(pids=pids, flood=FLOOD))
        nvcc.chmod(0o755)
        machine.env["CUDA_HOME"] = str(toolkit)
        machine.env["CUDNN_DOCTOR_HELPER_TIMEOUT"] = HELPER_S
        started = time.monotonic()
        report = report_of(run(machine, "check", "--json"))
        took = time.monotonic() - started
        if _left(pids):
            return f"left running: {_left(pids)}"
        if took > SLOW_S:
            return f"{took:.1f} s under CUDNN_DOCTOR_HELPER_TIMEOUT={HELPER_S}"
        said = [f for f in report["findings"] if f["code"] == "CD213" or str(nvcc) in str(f.get("subject"))
                and f["code"] != "CD202"]
        if want is None:
            version = {t["path"]: t["version"] for t in report["toolkits"]}.get(str(toolkit))
            if said:
                return f"said {[f['detail'][:100] for f in said]} of an nvcc that answered and ended"
            return None if version == "12.6.85" else f"its version taken as {version!r}"
        if not said:
            return f"nothing said, where a build reading its output meets: {want}"
        return None if any(want in f["detail"] for f in said) else f"said {said[0]['detail'][:140]!r}"
    return case


def compiler_case(body: str, want: str) -> Callable[[Path], str | None]:
    """gcc first on PATH whose `--version` is BODY: `check --format markdown` names it, and its row holds WANT."""
    def case(tmp: Path) -> str | None:
        machine = Machine(tmp)
        gpu_machine(machine, tmp, gpus=1)
        folder = tmp / "bin"
        folder.mkdir()
        pids = tmp / "pids"
        gcc = folder / "gcc"
        gcc.write_text("#!/bin/sh\n" + body.format(pids=pids))
        gcc.chmod(0o755)
        machine.env["PATH"] = f"{folder}:{machine.env['PATH']}"
        machine.env["CUDNN_DOCTOR_HELPER_TIMEOUT"] = HELPER_S
        done = run(machine, "check", "--format", "markdown")
        said = internal(done)
        if said:
            return said
        if _left(pids):
            return f"left running: {_left(pids)}"
        rows = [line for line in done.stdout.decode(errors="replace").splitlines() if str(gcc) in line]
        if not rows:
            return "no row names the compiler"
        return None if want in rows[0] else f"its row: {rows[0][:160]!r}"
    return case


# --- B. NCCL's and torch's settings, judged against their readers' own code ---------------------------------------

SETTING_CASES = [  # variable, value, "ok" (taken; info at most), "slow" (taken, CD181), or words the warning holds
    ("NCCL_DEBUG", " info", "slow"),  # ncclParamOneOf: trimmed, any case
    ("NCCL_DEBUG", "abort", "ok"),  # ABORT is one of its levels
    ("NCCL_DEBUG", "WARN\n", "ok"),
    ("NCCL_DEBUG", "verbose", "keeps its default"),
    ("NCCL_DEBUG_SUBSYS", "INIT,P2P", "ok"),  # P2P: a digit in a name
    ("NCCL_DEBUG_SUBSYS", "^alloc_host", "ok"),
    ("NCCL_DEBUG_SUBSYS", " init , net ", "ok"),  # each entry trimmed
    ("NCCL_DEBUG_SUBSYS", "INIT,^NET", "first character"),  # '^' only first
    ("NCCL_DEBUG_SUBSYS", "INIT;COLL", "not one of"),  # ',' is the separator
    ("NCCL_CUMEM_ENABLE", "2", "ok"),  # param >= 0 ? param: on
    ("NCCL_CUMEM_ENABLE", "-1", "ok"),  # off, without a word from NCCL
    ("NCCL_CUMEM_ENABLE", "-2", "ok"),  # the default: auto
    ("NCCL_COMM_BLOCKING", "0x0", "ok"),
    ("NCCL_COMM_BLOCKING", "2", "not one of"),  # envConfigOverride takes 0 or 1 alone
    ("NCCL_SOCKET_IFNAME", "e", "picks its interfaces by itself"),  # strlen(env) > 1 only: NCCL's own choice
    ("NCCL_SOCKET_IFNAME", "^,", "CD175"),  # '^' with no entry leaves nothing
    ("NCCL_SOCKET_IFNAME", "=eth0,lo", "ok"),  # '=' for the whole list
    ("NCCL_SOCKET_IFNAME", "eth0,=lo", "ok"),  # '=lo' a literal prefix; eth0 left
    ("NCCL_SOCKET_IFNAME", "=lo0,=eth0", "CD175"),
    ("NCCL_SOCKET_IFNAME", "^eth0,lo:1", "CD175"),  # the ':port' cut off: lo excluded too
    ("TORCH_NCCL_BLOCKING_WAIT", "yes", "ok"),  # getCvarBool: y, yes, t, true, 1 ...
    ("TORCH_NCCL_BLOCKING_WAIT", "F", "ok"),
    ("TORCH_NCCL_BLOCKING_WAIT", "2", "raises"),  # TORCH_CHECK(false, 'Invalid value ...')
    ("NCCL_BLOCKING_WAIT", "t", "ok"),
]


def setting_case(variable: str, value: str, want: str) -> Callable[[Path], str | None]:
    def case(tmp: Path) -> str | None:
        machine = Machine(tmp)
        _gpus(machine, tmp, 2)
        _interfaces(machine, "eth0", "lo")
        machine.env[variable] = value
        report = report_of(run(machine, "check", "--json"))
        said = [f for f in report["findings"] if f["subject"] == variable]
        warned = [f for f in said if f["code"] in ("CD175", "CD176") or f["severity"] in ("warning", "error")]
        if want == "ok":
            return f"said {[(f['code'], f['detail'][:100]) for f in warned]} of a value its reader takes" \
                if warned else None
        if want == "slow":
            return None if [f for f in said if f["code"] == "CD181"] and not warned else \
                f"said {[(f['code'], f['detail'][:100]) for f in said]}, where NCCL takes it (and prints much)"
        if want.startswith("CD"):
            return None if [f for f in said if f["code"] == want] else f"no {want}: {[f['code'] for f in said]}"
        if not warned:
            return f"nothing said, where its reader: {want}"
        return None if any(want in f["detail"] for f in warned) else \
            f"said {warned[0]['detail'][:140]!r}, where its reader: {want}"
    return case


# --- C. the outputs machines read, under hostile machine values -----------------------------------------------------

HOSTILE = {
    "tab and CR": "a\tb\rc",
    "U+2028 and U+2029": "a\u2028b\u2029c",
    "bidi controls": "a\u202eb\u2066c\u200f",
    "10,000 characters": "L" * 10_000,
    "bytes not UTF-8": "a\udcff\udcfeb",
    "markup and shell specials": "a|b`c<&>e\"f'g%h\\i$(j)",
}
PROM = re.compile(
    r"# HELP [a-zA-Z_:][a-zA-Z0-9_:]* (?:[^\\\n]|\\[\\n])*|# TYPE [a-zA-Z_:][a-zA-Z0-9_:]* "
    r"(?:counter|gauge|histogram|summary|untyped)|[a-zA-Z_:][a-zA-Z0-9_:]*(?:\{(?:[a-zA-Z_][a-zA-Z0-9_]*="
    r"\"(?:[^\"\\\n]|\\[\\\"n])*\"(?:,[a-zA-Z_][a-zA-Z0-9_]*=\"(?:[^\"\\\n]|\\[\\\"n])*\")*,?)?\})? "
    r"(?:[+-]?(?:[0-9]+(?:\.[0-9]*)?(?:[eE][+-]?[0-9]+)?|Inf|NaN))(?: -?[0-9]+)?")


def _c_literal(text: str) -> str:
    data = text.encode("utf-8", "surrogateescape")
    return "".join(chr(b) if 32 <= b < 127 and chr(b) not in '"\\?' else f"\\{b:03o}" for b in data)


def outputs_case(text: str) -> Callable[[Path], str | None]:
    """A GPU named TEXT (NVML) and CUDA_HOME pointing nowhere through TEXT, a version.json and os-release holding a
    NUL and bytes that are not UTF-8: each machine output one document for its parser."""
    def case(tmp: Path) -> str | None:
        machine = Machine(tmp)
        machine.add_library_path(fake_nvml(tmp / "nvml", name=_c_literal(text)).parent)
        machine.env["CUDA_HOME"] = f"/nowhere/{text}"
        toolkit = tmp / "cuda-files"
        (toolkit / "include").mkdir(parents=True)
        (toolkit / "include" / "cuda_runtime.h").write_text("/* fake */\n")
        (toolkit / "version.json").write_bytes(b'{"cuda": {"version": "12.4.\\u0000\xff' +
                                               text.encode("utf-8", "surrogateescape")[:200] + b'"}}')
        machine.env["CUDA_PATH"] = str(toolkit)
        (machine.root / "etc" / "os-release").write_bytes(b'PRETTY_NAME="L\x00\xff\r\xe2\x80\xa8' +
                                                          text.encode("utf-8", "surrogateescape")[:200] + b'"\n')
        for form in ("json", "junit", "prometheus", "markdown", "github"):
            done = run(machine, "check", "--format", form)
            said = internal(done)
            if said:
                return f"{form}: {said}"
            out = done.stdout.decode("utf-8", "surrogateescape")
            try:
                out.encode("utf-8")
            except UnicodeEncodeError:
                return f"{form}: bytes that are not UTF-8 written raw"
            if form == "json":
                data = json.loads(out)
                if not isinstance(data, dict):
                    return "json: not one object"
            elif form == "junit":
                try:
                    expat.ParserCreate().Parse(out.encode("utf-8"), True)
                except expat.ExpatError as error:
                    return f"junit: {error}"
            elif form == "prometheus":
                bad = [line for line in out.rstrip("\n").split("\n") if not PROM.fullmatch(line)]
                if bad or "\0" in out:
                    return f"prometheus: {bad[0][:120]!r}" if bad else "prometheus: a NUL"
            elif form == "markdown":
                if any(c in out for c in "\r\0\u2028\u2029"):
                    return "markdown: a raw line break or NUL"
            elif any(c in line for line in out.split("\n") if line.startswith("::") for c in "\r\u2028\u2029"):
                return "github: a workflow command cut by a raw line break"
        return None
    return case


def shell_case(text: str) -> Callable[[Path], str | None]:
    """fix's lines for a cuDNN in a folder named TEXT, sourced in the real bash, zsh and fish: that folder, exactly,
    first on LD_LIBRARY_PATH."""
    def case(tmp: Path) -> str | None:
        from tests.fakes.build import fake_cudnn
        from tests.test_shell_lines import CUDNN9, VARIABLE, _shells, source_in

        machine = Machine(tmp)
        fake_nvml(tmp / "driver", driver="580.65.06", cuda=13000)
        machine.add_library_path(tmp / "driver")
        found = tmp / "d" / text
        found.mkdir(parents=True)
        fake_cudnn(found, version=91900, cudart=13000, sublibraries=CUDNN9)
        data = report_of(run(machine, "fix", "--json", "--search-path", str(found)))
        actions = [a for a in data["actions"] if a["kind"] == "env"]
        if not actions:
            return "no environment line"
        for shell in _shells():
            exported = source_in(shell, actions[0]["env"][shell], b"/old/lib", tmp)
            if exported.get(VARIABLE.encode()) != os.fsencode(str(found)) + b":/old/lib":
                return f"{shell}: {exported.get(VARIABLE.encode())!r}"
        return None
    return case


# --- D. round fourteen's readers against hostile files --------------------------------------------------------------

def plugin_case(spoil: Callable[[Path], None]) -> Callable[[Path], str | None]:
    """JAX's CUDA 13 plugin whose xla_cuda_plugin.so (the stub table's names, read from its .rodata) is spoiled by
    SPOIL, a cuBLASLt lacking one function first on LD_LIBRARY_PATH: check ends in time without an internal error,
    and JAX's loading is still read (the copy it maps named)."""
    def case(tmp: Path) -> str | None:
        machine = Machine(tmp)
        site = jax_cu13(machine, tmp)
        names = ["cublasLtCreate", "cublasLtMatmul", "cublasLtMatmulDescDestroy"]
        built = compile_library("fake_xla_stub_table.c", "xla_cuda_plugin.so",
                                {"NAMES": ",".join(f'"{name}"' for name in names)})
        plugin = site / "jax_plugins" / "xla_cuda13" / "xla_cuda_plugin.so"
        shutil.copy(built, plugin)
        spoil(plugin)
        other = tmp / "cuda-13.1" / "lib64"
        other.mkdir(parents=True)
        shutil.copyfile(fake_cuda_math("libcublasLt.so.13", "cublasLt", 13, 1, 0), other / "libcublasLt.so.13")
        machine.add_library_path(other)
        started = time.monotonic()
        report = report_of(run(machine, "check", "--json"))
        if time.monotonic() - started > 60:
            return f"{time.monotonic() - started:.0f} s"
        seen = libraries_of(report, "jax").get("libcublasLt.so.13") or {}
        return None if seen.get("path") == str(other / "libcublasLt.so.13") else f"JAX's loading lost: {seen}"
    return case


def _fifo(path: Path) -> None:
    path.unlink()
    os.mkfifo(path)


def _truncated(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[:len(data) // 3])


def _headers_past_end(path: Path) -> None:
    data = bytearray(path.read_bytes())
    struct.pack_into("<Q", data, 0x28, len(data) + (1 << 40))  # e_shoff far past the end
    path.write_bytes(bytes(data))


def _rodata_huge(path: Path) -> None:
    """Every section's size made 2**62: .rodata's end past the file."""
    data = bytearray(path.read_bytes())
    shoff, = struct.unpack_from("<Q", data, 0x28)
    count, = struct.unpack_from("<H", data, 0x3C)
    for i in range(count):
        struct.pack_into("<Q", data, shoff + i * 64 + 32, 1 << 62)
    path.write_bytes(bytes(data))


def _sparse(path: Path) -> None:
    with open(path, "r+b") as stream:
        stream.truncate(3 << 30)  # 3 GiB, nearly all holes


def _loop(path: Path) -> None:
    path.unlink()
    path.symlink_to(path)


def libdevice_case(what: str, want: str) -> Callable[[Path], str | None]:
    def case(tmp: Path) -> str | None:
        machine = Machine(tmp)
        jax_cu12(machine, tmp)
        partial = tmp / "cuda-partial"
        folder = partial / "nvvm" / "libdevice"
        folder.mkdir(parents=True)
        target = folder / "libdevice.10.bc"
        if what == "fifo":
            os.mkfifo(target)
        elif what == "folder":
            target.mkdir()
        elif what == "empty":
            target.write_bytes(b"")
        elif what == "html":
            target.write_bytes(b"<html><body>403 Forbidden</body></html>\n")
        else:
            target.symlink_to(target)
        machine.env["CUDA_ROOT"] = str(partial)
        report = report_of(run(machine, "check", "--json"))
        said = [f for f in report["findings"] if f["code"] == "CD208" and (f.get("values") or {}).get("kind") ==
                "libdevice"]
        if not said:
            return "nothing said of the libdevice XLA meets"
        return None if want in said[0]["detail"] else f"said {said[0]['detail'][-160:]!r}, where XLA: {want}"
    return case


def install_case(spoil: Callable[[Path], None]) -> Callable[[Path], str | None]:
    """`install --yes` into a prefix whose state folder SPOIL damaged: one JSON object, exit 1 or 2, in time, and the
    user's cuDNN as it was."""
    def case(tmp: Path) -> str | None:
        archive = cudnn7_archive(tmp / "archive")
        prefix = cudnn7_prefix(tmp / "cuda")
        env = clean_env(tmp)
        env["PYTHONPATH"] = package()
        before = (prefix / "lib64" / "libcudnn.so.7.6.0").read_bytes() if \
            (prefix / "lib64" / "libcudnn.so.7.6.0").exists() else None
        state = prefix / ".cudnn-doctor"
        state.mkdir()
        spoil(state)
        try:
            done = subprocess.run([sys.executable, "-m", "cudnn_doctor", "install", "--from", str(archive), "--prefix",
                                   str(prefix), "--yes", "--json"], env=env, capture_output=True, timeout=60, cwd=tmp,
                                  stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            return "did not end within 60 s"
        said = internal(done)
        if said:
            return said
        try:
            data = json.loads(done.stdout)
        except ValueError:
            return f"not one JSON object: {done.stdout[:120]!r}"
        if done.returncode not in (0, 1, 2) or not isinstance(data, dict):
            return f"exit {done.returncode}"
        after = (prefix / "lib64" / "libcudnn.so.7.6.0").read_bytes() if \
            (prefix / "lib64" / "libcudnn.so.7.6.0").exists() else None
        if done.returncode != 0 and after != before:
            return "refused, yet the user's cuDNN changed"
        return None
    return case


def orphan_case(spoil: Callable[[Path, Path], None], command: str) -> Callable[[Path], str | None]:
    """An install whose record (manifest) is gone, its backup then spoiled by SPOIL(backup, outside): COMMAND
    (`uninstall --yes`, or `install --yes` again) ends in one JSON object, exit 0-2, and nothing outside the prefix
    (a folder of the user's a link points at) is changed or removed."""
    def case(tmp: Path) -> str | None:
        archive = cudnn7_archive(tmp / "archive")
        prefix = cudnn7_prefix(tmp / "cuda")
        env = clean_env(tmp)
        env["PYTHONPATH"] = package()

        def doctor(*args: str) -> subprocess.CompletedProcess[bytes]:
            return subprocess.run([sys.executable, "-m", "cudnn_doctor", *args, "--prefix", str(prefix), "--yes",
                                   "--json"], env=env, capture_output=True, timeout=60, cwd=tmp,
                                  stdin=subprocess.DEVNULL)

        first = doctor("install", "--from", str(archive))
        if first.returncode != 0:
            return f"the first install failed: {first.stdout[-200:]!r}"
        state = prefix / ".cudnn-doctor"
        for manifest in state.glob("manifest-*.json"):
            manifest.unlink()
        outside = tmp / "outside"
        outside.mkdir()
        (outside / "keep.txt").write_text("the user's own\n")
        for backup in state.glob("backup-*"):
            spoil(backup, outside)
        done = doctor(*(("install", "--from", str(archive)) if command == "install" else ("uninstall",)))
        said = internal(done)
        if said:
            return said
        try:
            json.loads(done.stdout)
        except ValueError:
            return f"not one JSON object: {done.stdout[:120]!r}"
        if done.returncode not in (0, 1, 2):
            return f"exit {done.returncode}"
        if sorted(p.name for p in outside.iterdir()) != ["keep.txt"] or \
                (outside / "keep.txt").read_text() != "the user's own\n":
            return f"changed outside the prefix: {sorted(p.name for p in outside.iterdir())}"
        return None
    return case


def _backup_link_out(backup: Path, outside: Path) -> None:
    shutil.rmtree(backup)
    backup.symlink_to(outside)


def _backup_fifo(backup: Path, outside: Path) -> None:
    shutil.rmtree(backup)
    os.mkfifo(backup)


def _backup_inner_link(backup: Path, outside: Path) -> None:
    for found in list(backup.rglob("libcudnn*")):
        if found.is_file() and not found.is_symlink():
            found.unlink()
            found.symlink_to(outside / "keep.txt")


def _backup_loop(backup: Path, outside: Path) -> None:
    (backup / "lib64").mkdir(parents=True, exist_ok=True)
    loop = backup / "lib64" / "libcudnn.so.7.6.9"
    loop.symlink_to(loop)


def fleet_case(edit: Callable[[dict], object]) -> Callable[[Path], str | None]:
    """fleet merge of a healthy report and one whose section EDIT made of the wrong type: no internal error, and
    the hostile node is a failed node, never a healthy one."""
    def case(tmp: Path) -> str | None:
        machine = Machine(tmp)
        gpu_machine(machine, tmp, gpus=1)
        text = run(machine, "check", "--json").stdout.decode()
        hostile = edit(json.loads(text))
        reports = tmp / "reports"
        reports.mkdir()
        (reports / "a.json").write_text(text)
        (reports / "b.json").write_text(json.dumps(hostile))
        done = run(machine, "fleet", "merge", str(reports / "a.json"), str(reports / "b.json"), "--json")
        said = internal(done)
        if said:
            return said
        data = json.loads(done.stdout)
        failed = [node.get("source") for node in data.get("failed", [])]
        return None if any("b.json" in str(source) for source in failed) else \
            f"the hostile report taken as a healthy node (exit {done.returncode})"
    return case


def _with(key: str, value: object) -> Callable[[dict], object]:
    def edit(report: dict) -> object:
        report[key] = value
        return report
    return edit


def cases() -> dict[str, Callable[[Path], str | None]]:
    found: dict[str, Callable[[Path], str | None]] = {
        "nvcc --version leaves a daemon (setsid)": nvcc_case(f"setsid sleep 30 & echo $! >> {{pids}}\n{BANNER}",
                                                             "holding its output"),
        "nvcc --version leaves a daemon with no environment": nvcc_case(
            f"env -i setsid sleep 30 & echo $! >> {{pids}}\n{BANNER}", "holding its output"),
        "nvcc --version leaves a nohup'd child": nvcc_case(f"nohup sleep 30 >&1 & echo $! >> {{pids}}\n{BANNER}",
                                                           "holding its output"),
        "nvcc --version's daemon ignores SIGTERM": nvcc_case(
            f"sh -c 'trap \"\" TERM; exec sleep 30' & echo $! >> {{pids}}\n{BANNER}", "holding its output"),
        "nvcc --version never ends": nvcc_case(f"{BANNER}exec sleep 30\n", "did not end"),
        "nvcc --version killed by SIGSEGV": nvcc_case(f"{BANNER}kill -SEGV $$\n", "SIGSEGV"),
        "nvcc --version killed by SIGKILL": nvcc_case(f"{BANNER}kill -KILL $$\n", "SIGKILL"),
        "nvcc --version floods its output": nvcc_case("yes '{flood}'\n", "MiB"),
        "nvcc --version prints bytes not UTF-8, then ends": nvcc_case(f"printf '\\377\\376\\n'\n{BANNER}", None),
        "nvcc --version floods stderr only, then ends": nvcc_case(f"head -c 3000000 /dev/zero >&2\n{BANNER}", None),
        "gcc --version leaves a daemon (markdown row)": compiler_case(
            "setsid sleep 30 & echo $! >> {pids}\necho 'gcc (Debian 12.2.0-14) 12.2.0'\n", "holding its output"),
        "gcc --version killed by a signal (markdown row)": compiler_case(
            "echo 'gcc (Debian 12.2.0-14) 12.2.0'; kill -ABRT $$\n", "SIGABRT"),
    }
    found.update({f"setting {v}={value!r}": setting_case(v, value, want) for v, value, want in SETTING_CASES})
    found.update({f"outputs: {name}": outputs_case(text) for name, text in HOSTILE.items()})
    found.update({
        "fix lines in bash/zsh/fish: U+2028 folder": shell_case("a\u2028b"),
        "fix lines in bash/zsh/fish: bidi folder": shell_case("a\u202eb\u2066c"),
        "fix lines in bash/zsh/fish: 3,000-character folder": shell_case("/".join(["L" * 250] * 12)),
        "stub table: plugin a FIFO": plugin_case(_fifo),
        "stub table: plugin truncated": plugin_case(_truncated),
        "stub table: section headers past the end": plugin_case(_headers_past_end),
        "stub table: sections of 2**62 bytes": plugin_case(_rodata_huge),
        "stub table: plugin a sparse 3 GiB file": plugin_case(_sparse),
        "stub table: plugin a link loop": plugin_case(_loop),
        "libdevice a FIFO": libdevice_case("fifo", "hangs"),
        "libdevice a folder": libdevice_case("folder", "cannot take libdevice's functions"),
        "libdevice a link loop": libdevice_case("loop", "not found"),
        "libdevice an empty file": libdevice_case("empty", "not LLVM bitcode"),
        "libdevice a proxy's error page": libdevice_case("html", "not LLVM bitcode"),
        "install: lock a FIFO": install_case(lambda state: os.mkfifo(state / "lock")),
        "install: journal a FIFO": install_case(lambda state: os.mkfifo(state / "journal.json")),
        "install: journal a JSON list": install_case(lambda state: (state / "journal.json").write_text("[1, 2]")),
        "install: journal's operations an object": install_case(lambda state: (state / "journal.json").write_text(
            json.dumps({"version": 2, "kind": "install", "phase": "applying", "operations": {"a": 1}}))),
        "install: journal of 5,000 nested lists": install_case(lambda state: (state / "journal.json").write_text(
            "[" * 5000 + "]" * 5000)),
        "orphan backup a link out of the prefix: uninstall": orphan_case(_backup_link_out, "uninstall"),
        "orphan backup a link out of the prefix: install": orphan_case(_backup_link_out, "install"),
        "orphan backup a FIFO: uninstall": orphan_case(_backup_fifo, "uninstall"),
        "orphan backup holding a link out: uninstall": orphan_case(_backup_inner_link, "uninstall"),
        "orphan backup holding a link out: install": orphan_case(_backup_inner_link, "install"),
        "orphan backup holding a link loop: uninstall": orphan_case(_backup_loop, "uninstall"),
        "fleet: gpus a string": fleet_case(_with("gpus", "8x H100")),
        "fleet: summary a list": fleet_case(_with("summary", [1, 2])),
        "fleet: driver a number": fleet_case(_with("driver", 580)),
        "fleet: toolkits holding null": fleet_case(_with("toolkits", [None])),
        "fleet: the report a list": fleet_case(lambda report: [report]),
        "fleet: a finding's code a number": fleet_case(_with("findings", [{"code": 5, "severity": "error"}])),
        "fleet: a GPU's name a list": fleet_case(_with("gpus", [{"name": ["H100"], "compute_capability": 9}])),
        "fleet: summary's status a number": fleet_case(_with("summary", {"status": 5, "exit_code": "one"})),
        "fleet: cudnn installs of strings": fleet_case(_with("cudnn", ["9.1"])),
    })
    return found


def main() -> int:
    global PACKAGE
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--package", type=Path, help="the checkout whose cudnn_doctor is judged")
    parser.add_argument("--only", help="run only the cases whose name holds this")
    options = parser.parse_args()
    PACKAGE = options.package.resolve() if options.package else None
    started, broken = time.monotonic(), 0
    chosen = {name: case for name, case in cases().items() if not options.only or options.only in name}
    for name, case in chosen.items():
        with tempfile.TemporaryDirectory() as tmp:
            try:
                said = case(Path(tmp))
            except Exception as error:  # a case that cannot even be judged is broken
                said = f"{type(error).__name__}: {str(error)[:160]}"
        if said:
            broken += 1
            print(f"BROKEN {name}: {said}", flush=True)
    print(f"{len(chosen)} cases, {broken} broken, {time.monotonic() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
