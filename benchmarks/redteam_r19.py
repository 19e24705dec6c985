"""Round fourteen's red-team (issue 43, helper r19) as a figure: what r19 built (a `--version` whose program leaves a
daemon holding its output, the one ask of PATH's ptxas, NCCL's own readers for its settings, numbers past Python's
4,300-digit int() limit, answers nested past any depth, the loading child's fields, CD180's plan) and surfaces r17
and r18 did not attack (other programs check asks `--version`, the other readers of a child's JSON, fleet's reports,
the preload given as a bare soname). Each case is a pretend machine built as the tests build them and one command run
as a user would, or one value judged by the doctor's own reader against what the real program's code makes of it.
The table is fixed; the one random choice (the digits of the long numbers) is seeded.

Usage: python benchmarks/redteam_r19.py [--package DIR] [--only NAME]
  --package DIR: the checkout whose cudnn_doctor is judged (the tree before: an archive of main as r19 started);
  by default this one. Prints each broken case, then `N cases, B broken, T s`.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.conftest import Machine  # noqa: E402
from tests.fakes.build import fake_nccl  # noqa: E402
from tests.test_first_use import jax_cu12  # noqa: E402
from tests.test_first_use_hostile import hostile_ptxas  # noqa: E402
from tests.test_frameworks import FAKE_TORCH, install_torch, python_env, real_python_sees  # noqa: E402
from tests.test_multi_gpu import _gpus, _interfaces, _torch_with_nccl  # noqa: E402
from tests.test_process_env import gpu_machine  # noqa: E402

PACKAGE: Path | None = None
RANDOM = random.Random(19)
LONG = "".join(RANDOM.choice("123456789") for _ in range(5000))  # past int()'s 4,300 digits
VERSION = "echo 'Cuda compilation tools, release 12.6, V12.6.85'\n"
SLOW_S = 8.0  # with CUDNN_DOCTOR_HELPER_TIMEOUT=0.5, a check longer than this waited on what a child left


def run(machine: Machine, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[bytes]:
    environment = dict(env if env is not None else machine.env)
    environment["PYTHONPATH"] = str(PACKAGE or Path(__file__).resolve().parents[1])
    return subprocess.run([sys.executable, "-m", "cudnn_doctor", *args], env=environment, cwd=machine.cwd,
                          capture_output=True, timeout=120, stdin=subprocess.DEVNULL)


def report_of(done: subprocess.CompletedProcess[bytes]) -> dict:
    if done.returncode == 3 or b"Traceback" in done.stderr:
        raise AssertionError(f"internal error: {done.stderr.decode(errors='replace').strip().splitlines()[-1:]}")
    text = done.stdout.decode("utf-8", "surrogateescape")
    return json.JSONDecoder().raw_decode(text, max(text.find("{\n"), 0))[0]


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stream:
            return stream.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


# --- A. a --version whose program leaves something behind -----------------------------------------------------------

def ptxas_case(body: str, want: str, runs: int | None = None) -> Callable[[Path], str | None]:
    """A ptxas first on PATH (JAX's CUDA 12 plugin installed): XLA's verdict of it WANT; what it left is gone after;
    RUNS: how often the file may run (once: one ask for both readers)."""
    def case(tmp: Path) -> str | None:
        machine = Machine(tmp)
        jax_cu12(machine, tmp, nvcc=False)
        pids, count = tmp / "pids", tmp / "runs"
        script = hostile_ptxas(tmp / "x", f"echo run >> {count}\n" + body.format(pids=pids))
        machine.env["PATH"] = f"{script.parent}:{machine.env['PATH']}"
        machine.env["CUDNN_DOCTOR_HELPER_TIMEOUT"] = "0.5"
        started = time.monotonic()
        report = report_of(run(machine, "check", "--json"))
        took = time.monotonic() - started
        [first, *_] = report["first_use"]["xla"]["ptxas"]
        left = [pid for pid in map(int, pids.read_text().split()) if _alive(pid)] if pids.exists() else []
        if left:
            return f"left running: {left}"
        if first["verdict"] != want:
            return f"taken as {first['verdict']!r} ({first['said'][:90]}), where XLA: {want!r}"
        if want == "hangs" and not any(f["code"] == "CD208" and f["subject"] == first["path"] for f in
                                       report["findings"]):
            return "no finding names the ptxas XLA hangs at"
        if took > SLOW_S:
            return f"{took:.1f} s under CUDNN_DOCTOR_HELPER_TIMEOUT=0.5"
        if runs is not None and count.exists() and len(count.read_text().split()) != runs:
            return f"run {len(count.read_text().split())} times, where {runs} ask serves every reader"
        return None
    return case


def shebangless(tmp: Path) -> str | None:
    """A ptxas with no '#!' and no ELF header: XLA's posix_spawnp gets ENOEXEC (no /bin/sh), so XLA passes it over."""
    machine = Machine(tmp)
    jax_cu12(machine, tmp, nvcc=False)
    (tmp / "x").mkdir()
    (tmp / "x" / "ptxas").write_text(VERSION)
    (tmp / "x" / "ptxas").chmod(0o755)
    machine.env["PATH"] = f"{tmp / 'x'}:{machine.env['PATH']}"
    [first, *_] = report_of(run(machine, "check", "--json"))["first_use"]["xla"]["ptxas"]
    return None if first["verdict"] == "did not run" else f"taken as {first['verdict']!r}, where XLA cannot start it"


def nvcc_daemon(tmp: Path) -> str | None:
    """The toolkit's nvcc (no version.json, so check asks `nvcc --version`) leaves a daemon holding its stdout:
    check answers within its time and the daemon is gone after."""
    machine = Machine(tmp)
    gpu_machine(machine, tmp, gpus=1)
    nvcc = machine.root / "usr" / "local" / "cuda" / "bin" / "nvcc"
    nvcc.parent.mkdir(parents=True)
    pids = tmp / "pids"
    nvcc.write_text(f"#!/bin/sh\nsetsid sleep 30 & echo $! >> {pids}\n"
                    "echo 'Cuda compilation tools, release 12.6, V12.6.85'\n")
    nvcc.chmod(0o755)
    (machine.root / "usr" / "local" / "cuda" / "include").mkdir()
    (machine.root / "usr" / "local" / "cuda" / "include" / "cuda.h").write_text("#define CUDA_VERSION 12060\n")
    machine.env["CUDNN_DOCTOR_HELPER_TIMEOUT"] = "0.5"
    started = time.monotonic()
    report_of(run(machine, "check", "--json"))
    left = [pid for pid in map(int, pids.read_text().split()) if _alive(pid)] if pids.exists() else []
    took = time.monotonic() - started
    return f"left running: {left}" if left else f"{took:.1f} s" if took > 30 else None


# --- B. NCCL's settings, judged against NCCL's own readers (NVIDIA/nccl@5067397) -----------------------------------

NCCL_CASES = [  # variable, value, what NCCL makes of it: "ok", "slow" (taken, and slower), or words the warning holds
    ("NCCL_P2P_LEVEL", "PXN", "ok"),
    ("NCCL_P2P_LEVEL", "Loc", "exactly as written"),  # strcmp: case kept
    ("NCCL_P2P_LEVEL", "-1", "nor a number"),  # its first character is no digit: ignored
    ("NCCL_P2P_LEVEL", "5abc", "stops at"),  # strtol: 5, the rest ignored: taken as SYS, not as written
    ("NCCL_P2P_LEVEL", "07", "ok"),  # octal 7, above 5: SYS
    ("NCCL_NET_GDR_LEVEL", "C2C", "ok"),  # every name up to SYS
    ("NCCL_P2P_DISABLE", "1", "slow"),
    ("NCCL_P2P_DISABLE", "0x1", "slow"),
    ("NCCL_IB_DISABLE", " 1", "slow"),  # strtoll skips leading blanks
    ("NCCL_NVLS_ENABLE", "0x2", "ok"),
    ("NCCL_NTHREADS", "0200", "ok"),  # octal 128
    ("NCCL_NTHREADS", "1.5e2", "stops at"),  # strtoll: 1
    ("NCCL_CROSS_NIC", "zero", "reads it as 0"),
    ("NCCL_PROTO", "^LL128", "ok"),
    ("NCCL_PROTO", "AllReduce:simple;Broadcast:LL", "ok"),
    ("NCCL_PROTO", "LL;Simple", "must have a prefix"),  # parseList: every entry but the first has a prefix
    ("NCCL_PROTO", ";LL", "must have a prefix"),  # strtok_r skips the empty entry, but its token is not the first
    ("NCCL_PROTO", "0", "no number"),
    ("NCCL_ALGO", "Tree,Ring", "ok"),
    ("NCCL_ALGO", "allgather:pat;reducescatter:PAT", "ok"),
    ("NCCL_ALGO", "Fast", "not one of"),
    ("NCCL_ALGO", "AllToAll:Ring", "not a prefix"),
]


def nccl_case(variable: str, value: str, want: str) -> Callable[[Path], str | None]:
    def case(tmp: Path) -> str | None:
        machine = Machine(tmp)
        _gpus(machine, tmp, 2)
        _interfaces(machine, "eth0", "lo")
        machine.env[variable] = value
        report = report_of(run(machine, "check", "--json"))
        said = [f for f in report["findings"] if f["subject"] == variable]
        warned = [f for f in said if f["code"] == "CD176" or f["severity"] in ("warning", "error")]
        if want == "ok":
            return f"said {[(f['code'], f['detail'][:100]) for f in said]} of a value NCCL takes" if said else None
        if want == "slow":
            return None if [f for f in said if f["code"] == "CD181"] and not warned else \
                f"said {[(f['code'], f['detail'][:100]) for f in said]}, where NCCL takes it (and it is slower)"
        if not warned:
            return f"nothing said, where NCCL: {want}"
        return None if any(want in f["detail"] for f in warned) else \
            f"said {warned[0]['detail'][:140]!r}, where NCCL: {want}"
    return case


# --- C. numbers past int()'s 4,300 digits, from every source -------------------------------------------------------

def long_file(where: str, text: str) -> Callable[[Path], str | None]:
    """A file the doctor reads whose number has 5,000 digits: check and fix end without an internal error."""
    def case(tmp: Path) -> str | None:
        machine = Machine(tmp)
        gpu_machine(machine, tmp, gpus=1)
        path = machine.root / where
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text.format(long=LONG))
        for command in (("check", "--json"), ("fix", "--json")):
            report_of(run(machine, *command))
        return None
    return case


def long_env(variable: str, value: str) -> Callable[[Path], str | None]:
    def case(tmp: Path) -> str | None:
        machine = Machine(tmp)
        gpu_machine(machine, tmp, gpus=2)
        machine.env[variable] = value.format(long=LONG)
        for command in (("check", "--json"), ("fix", "--json"), ("check", "--format", "markdown")):
            done = run(machine, *command)
            if done.returncode == 3 or b"Traceback" in done.stderr:
                return f"{' '.join(command)}: internal error"
        return None
    return case


def deep_torch(replace: dict[str, str], want: Callable[[dict], str | None]) -> Callable[[Path], str | None]:
    """A torch whose --deep answers are hostile (REPLACE edits its fake module): the answer kept, judged by WANT."""
    def case(tmp: Path) -> str | None:
        machine = Machine(tmp)
        site = python_env(machine, tmp)
        install_torch(site)
        text = FAKE_TORCH
        for old, new in replace.items():
            text = text.replace(old, new)
        (site / "torch" / "__init__.py").write_text(text)
        real_python_sees(site, tmp)
        report = report_of(run(machine, "check", "--deep", "--json"))
        [torch] = report["frameworks"]
        return want(torch["details"].get("deep") or {})
    return case


def not_crashed(deep: dict) -> str | None:
    error = str(deep.get("error") or "")
    return f"read as torch's failure: {error[:120]!r}" if "crashed" in error or "without an answer" in error else None


def fleet_long(tmp: Path) -> str | None:
    """fleet merges the reports of other machines: one holds an integer of 5,000 digits."""
    machine = Machine(tmp)
    gpu_machine(machine, tmp, gpus=1)
    done = run(machine, "check", "--json")
    text = done.stdout.decode()
    report = json.loads(text)
    report["tool"]["extra"] = 0
    forged = json.dumps(report).replace('"extra": 0', f'"extra": {LONG}')
    reports = tmp / "reports"
    reports.mkdir()
    (reports / "a.json").write_text(text)
    (reports / "b.json").write_text(forged)
    done = run(machine, "fleet", "merge", str(reports / "a.json"), str(reports / "b.json"), "--json")
    if done.returncode == 3 or b"Traceback" in done.stderr:
        return f"internal error: {done.stderr.decode(errors='replace').strip().splitlines()[-1:]}"
    return None


# --- D. the loading child's fields and what a framework raises -----------------------------------------------------

def loading_words(words: str) -> Callable[[Path], str | None]:
    """The loading child's say() given a framework's words: the answer read back whole, the child alive."""
    def case(tmp: Path) -> str | None:
        code = ("import sys; sys.path.insert(0, sys.argv[1]); from cudnn_doctor import _load_jobs as c\n"
                "class Odd(Exception):\n    def __str__(self): raise RuntimeError('none')\n"
                f"c.say('start', 'ld.so'); c.say('recipe', {words})\n")
        package = str(PACKAGE or Path(__file__).resolve().parents[1])
        done = subprocess.run([sys.executable, "-c", code, package], capture_output=True, timeout=60)
        if done.returncode != 0:
            return f"the child died: {done.stderr.decode(errors='replace').strip().splitlines()[-1][:120]}"
        env = {**os.environ, "PYTHONPATH": package}
        reader = ("import sys; from cudnn_doctor.probes.loading import parse_answer\n"
                  "seen = parse_answer('ld.so', None, sys.stdin.buffer.read(), 0, False, None)\n"
                  "print(len([s for s in seen.steps if s.step == 'recipe']))")
        read = subprocess.run([sys.executable, "-c", reader], input=done.stdout, capture_output=True, env=env,
                              timeout=60, cwd=tempfile.gettempdir())
        return None if read.stdout.strip() == b"1" else f"read back as {read.stdout.strip()!r} {read.stderr[-200:]!r}"
    return case


# --- E. CD180's plan, sourced in a real bash, then check -------------------------------------------------------------

def cd180_loop(preload: Callable[[Path], str], on_path: bool, other: bool = False) -> Callable[[Path], str | None]:
    def case(tmp: Path) -> str | None:
        machine = Machine(tmp)
        _gpus(machine, tmp, 2)
        _torch_with_nccl(machine, tmp)
        old = fake_nccl(tmp / "old", version=21803)
        if on_path:
            machine.add_library_path(old.parent)
        value = preload(old)
        if other:
            kept = shutil.copy("/bin/true", tmp / "libkept.so")  # any other entry: kept as written
            value = f"{kept} {value}"
        machine.env["LD_PRELOAD"] = value
        before = report_of(run(machine, "check", "--json"))
        if not [f for f in before["findings"] if f["code"] == "CD180"]:
            return "the preloaded older NCCL is not seen (no CD180)"
        plan = report_of(run(machine, "fix", "--json"))
        lines = [line for action in plan["actions"] if action["kind"] == "env" for line in action["env"]["bash"]]
        script = "; ".join([*lines, 'printf "%s\\0" "${LD_PRELOAD-}"', " ".join(
            [sys.executable, "-m", "cudnn_doctor", "check", "--json"])])
        env = {**machine.env, "PYTHONPATH": str(PACKAGE or Path(__file__).resolve().parents[1])}
        done = subprocess.run(["bash", "-c", script], capture_output=True, env=env, cwd=machine.cwd, timeout=120)
        preload_after, _, rest = done.stdout.partition(b"\0")
        after = json.loads(rest)
        if [f for f in after["findings"] if f["code"] == "CD180"]:
            return f"CD180 stays after the plan's lines {lines}"
        if other and b"libkept.so" not in preload_after:
            return f"the other preloaded library was dropped too: LD_PRELOAD={preload_after!r}"
        return None
    return case


def cases() -> dict[str, Callable[[Path], str | None]]:
    found: dict[str, Callable[[Path], str | None]] = {
        "ptxas leaves a daemon (setsid) on stdout": ptxas_case(f"setsid sleep 30 & echo $! >> {{pids}}\n{VERSION}",
                                                               "hangs"),
        "ptxas leaves a daemon that ignores SIGTERM": ptxas_case(
            f"sh -c 'trap \"\" TERM; exec sleep 30' & echo $! >> {{pids}}\n{VERSION}", "hangs"),
        "ptxas leaves a nohup'd child on stdout": ptxas_case(f"nohup sleep 30 & echo $! >> {{pids}}\n{VERSION}",
                                                             "hangs"),
        "ptxas's daemon holds stderr only": ptxas_case(f"setsid sleep 30 >/dev/null & echo $! >> {{pids}}\n{VERSION}",
                                                       "used"),
        "ptxas's daemon closes every descriptor": ptxas_case(
            f"setsid sh -c 'exec >/dev/null 2>&1 </dev/null; exec sleep 30' & echo $! >> {{pids}}\n{VERSION}", "used"),
        "ptxas's child holds stdout 0.2 s": ptxas_case(f"sleep 0.2 &\n{VERSION}", "used"),
        "ptxas prints its version, then never ends": ptxas_case(f"{VERSION}exec sleep 30\n", "hangs"),
        "PATH's ptxas run once for both readers": ptxas_case(VERSION, "used", runs=1),
        "ptxas without '#!'": shebangless,
        "nvcc --version leaves a daemon": nvcc_daemon,
    }
    found.update({f"NCCL {v}={value!r}": nccl_case(v, value, want) for v, value, want in NCCL_CASES})
    found.update({
        "5,000 digits: cuda version.json": long_file("usr/local/cuda/version.json",
                                                     '{{"cuda": {{"name": "CUDA SDK", "version": {long}}}}}'),
        "5,000 digits: cudnn_version.h": long_file("usr/include/cudnn_version.h",
                                                   "#define CUDNN_MAJOR {long}\n#define CUDNN_MINOR 1\n"),
        "5,000 digits: /proc/driver/nvidia/version": long_file(
            "proc/driver/nvidia/version", "NVRM version: NVIDIA UNIX x86_64 Kernel Module  {long}.1  Release Build\n"),
        "5,000 digits: CUDA_VISIBLE_DEVICES": long_env("CUDA_VISIBLE_DEVICES", "{long}"),
        "5,000 digits: NCCL_BUFFSIZE": long_env("NCCL_BUFFSIZE", "{long}"),
        "5,000 digits: NCCL_P2P_LEVEL": long_env("NCCL_P2P_LEVEL", "{long}"),
        "5,000 digits: PYTORCH_CUDA_ALLOC_CONF": long_env("PYTORCH_CUDA_ALLOC_CONF", "max_split_size_mb:{long}"),
        "5,000 digits: --deep's torch.version.cuda": deep_torch({'cuda = "12.4"': "cuda = 10**5000"}, not_crashed),
        "--deep's cudnn version nested 500 deep": deep_torch(
            {"return int(_cudnn.cudnnGetVersion())": "x = 1\n            for _ in range(500):\n                x = [x]\n            return x"},
            not_crashed),
        "--deep's version whose str() raises": deep_torch(
            {'__version__ = "2.5.1+cu124"': "class _V:\n    def __str__(self): raise RuntimeError('no')\n"
                                            "    __repr__ = __str__\n__version__ = _V()"}, not_crashed),
        "--deep's answer of 200,000 items": deep_torch(
            {"return int(_cudnn.cudnnGetVersion())": "return list(range(200000))"}, not_crashed),
        "fleet merge: a report with 5,000 digits": fleet_long,
        "loading child: a NUL in a framework's words": loading_words("'RuntimeError: a\\x00b'"),
        "loading child: a lone surrogate": loading_words("'RuntimeError: \\ud800'"),
        "loading child: a __str__ that raises": loading_words("Odd()"),
        "loading child: 1 MB of words with tabs": loading_words("'a\\tb\\\\t' * 200000"),
        "CD180: preloaded, its folder on LD_LIBRARY_PATH": cd180_loop(str, on_path=True),
        "CD180: preloaded only": cd180_loop(str, on_path=False),
        "CD180: preloaded by its bare soname": cd180_loop(lambda old: "libnccl.so.2", on_path=True),
        "CD180: beside another preloaded library": cd180_loop(str, on_path=True, other=True),
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
