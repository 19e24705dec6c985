"""Round twenty-two's red-team (issue 43, helper r27): the surfaces the last rounds added, as a hostile user, machine,
cluster or message would meet them.

1. srun's options (fleet run --slurm, cudnn_doctor/fleet/srun_options.py over compat/slurm.toml), through a real
   Slurm cluster on 127.0.0.1 (tests/slurm_cluster.py, started once): a last option without its value ('--comment',
   '-J', '-p'), '--' in the options, a word that is not an option, ambiguous abbreviations ('--job', '--c'), '='
   forms of options without a value, options no srun knows (with and without '='), short clusters, 128 KB and
   non-UTF-8 words, --label and --multi-prog; srun's own variables (SLURM_LABELIO, SLURM_SRUN_MULTI,
   SLURM_WORKING_DIR, SLURM_JOB_NAME, SLURM_OPEN_MODE); a relative --keep with -D elsewhere; srun (a wrapper around
   the real one) that fails at once, is killed before or while the job runs, hangs ignoring SIGINT, floods its
   standard output; the doctor itself sent SIGKILL or SIGTERM at seeded instants, its job queued or running. A case
   holds when the command keeps its contract (one JSON object, exit 0-2), ends within its
   deadline and the stopping's grace, the one node's report is merged or a usage error names why (exit 2), and
   no job of the run is left in the queue, no srun of it running, no folder of its own left in --keep or TMPDIR;
2. the machine outputs (check's text, --json, markdown, github, JUnit, Prometheus on stdout and in a file; fleet
   merge's text and JSON) of a value holding each class of character (C0, DEL, C1 and U+0085, U+2028/2029, bidi
   controls, a byte not UTF-8): no raw one in what is printed or written, each output still parsed by its reader
   (JSON, expat, Prometheus' line grammar), no line a CI log takes for a command;
3. NCCL's interfaces and variables: /sys/class/net and /sys/class/infiniband entries named with each hostile class,
   255 bytes long, a FIFO, a file or a link loop where a folder is, the folders themselves a FIFO, a file, a loop;
   an adapter's ports named in other digits, 20 digits, with a newline; NCCL_SOCKET_IFNAME and NCCL_IB_HCA of
   128 KB, 30,000 entries, bytes not UTF-8, escapes, only '^=', ports in other digits or of 30 digits;
4. explain's torch_cuda (compat/fixes.toml [[field]], filled from the machine's torch): torch/version.py a FIFO, a
   link to /dev/zero, 50 MB, not UTF-8, a folder, its 'cuda' in Arabic-Indic or fullwidth digits, '....', 100,000
   digits, a '+cu' local version of 5,000 digits, escapes in __version__: the answer keeps its contract and never
   says PyTorch's CUDA is anything but a CUDA release in the digits 0-9;
5. the early children (s25: NVML's, the cuDNN copies' batch child waiting on its stdin, --deep's framework
   children, all started at the command's entry): the doctor (check --json, check --deep --json) sent SIGKILL,
   SIGTERM or SIGINT at seeded instants of its first second: no process of its tree left a second later, and
   standard output empty or one whole JSON object (no half answer);
6. maintenance/seal.sh: unpack with a wrong key, an archive cut at seeded lengths, onto a folder that exists, a
   name with '..' or a newline; pack of a link, a missing folder, a folder above named with spaces and a newline;
   each killed (SIGTERM, SIGKILL) at seeded instants: .sealed/NAME is absent or the whole set, never a part or a
   mix; no temporary left behind where the shell could remove it.

Usage: python benchmarks/redteam_r27.py [--package DIR] [--only TEXT] [--list]
  Prints each broken case, then a line per class `CLASS: H/T held` and `N cases, B broken, T s`.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from xml.parsers import expat

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import redteam_r22 as r22  # noqa: E402
from redteam_r22 import Broken, held  # noqa: E402

from tests.conftest import Machine  # noqa: E402

# raw in what is printed: C0 but tab and newline, DEL, C1 (UTF-8 \xc2\x80-\x9f, U+0085 among them), U+2028/2029,
# bidi controls, a lone byte that is not UTF-8 where the output is text
RAW = re.compile(rb"[\x00-\x08\x0b-\x1f\x7f]|\xc2[\x80-\x9f]|\xe2\x80[\xa8\xa9\xaa-\xae\x8e\x8f]|\xe2\x81[\xa6-\xa9]"
                 rb"|\xd8\x9c")
CLASSES: dict[str, str] = {
    "C0": "\x01\x07\x08\x0b\x0c\x0d\x1b[31m\x1f",
    "DEL": "\x7f",
    "C1 and U+0085": "\x80\x85\x9b\x9f",
    "U+2028 and U+2029": "\u2028\u2029",
    "bidi controls": "\u202a\u202e\u2066\u2069\u200e\u200f\u061c",
    "a byte not UTF-8": os.fsdecode(b"\xff\xfe"),
    "a newline and a command": "\n::error::injected\n$(touch${IFS}PWNED)",
}
FORMATS = {"text": ["check"], "json": ["check", "--json"], "markdown": ["check", "--format", "markdown"],
           "github": ["check", "--format", "github"], "prometheus": ["check", "--format", "prometheus"]}
PROMETHEUS_LINE = re.compile(r'(#.*|[a-zA-Z_:][a-zA-Z0-9_:]*(\{([a-zA-Z_][a-zA-Z0-9_]*="([^"\\\n]|\\["\\n])*",?)*\})?'
                             r" [-+0-9.eE]+(?:Inf|NaN)?( [0-9]+)?)")


def no_raw(data: bytes, where: str) -> None:
    found = RAW.search(data)
    if found:
        at = found.start()
        raise Broken(f"a raw {found.group()!r} in {where}: {data[max(0, at - 60):at + 20]!r}")


def parsed(kind: str, data: bytes) -> None:
    """DATA read by the reader of KIND's format, as strictly as that reader reads it."""
    text = data.decode("utf-8")  # a byte not UTF-8 fails here
    if kind == "json":
        json.loads(text)
    elif kind == "junit":
        expat.ParserCreate().Parse(data, True)
    elif kind == "prometheus":
        bad = [line for line in text.split("\n") if line and not PROMETHEUS_LINE.fullmatch(line)]
        if bad:
            raise Broken(f"a line Prometheus' grammar refuses: {bad[0][:160]!r}")
    elif kind == "github":
        commands = [line for line in text.split("\n") if line.startswith("::")]
        forged = [line for line in commands if "injected" in line.split("::", 2)[1][:40]]
        if forged:
            raise Broken(f"a line a CI log takes for a command of its own: {forged[0][:120]!r}")


# --- 2. the machine outputs ----------------------------------------------------------------------------------------

def output_case(chars: str, kind: str) -> Callable[[Path], None]:
    """check in format KIND on a machine whose CUDA_HOME (a finding's subject, detail and labels) holds CHARS."""
    def case(tmp: Path) -> None:
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(tmp), "LANG": "C.UTF-8",
               "CUDA_HOME": str(tmp / f"cuda{chars}home")}
        if kind in ("junit", "prometheus file"):
            out = tmp / ("report.xml" if kind == "junit" else "node.prom")
            args = ["check", "--junit-xml", str(out)] if kind == "junit" else \
                ["check", "--format", "prometheus", "--output", str(out)]
            done = r22.doctor(args, env, tmp)
            held(done, False, (0, 1, 2))
            data = out.read_bytes()
            no_raw(data, kind)
            parsed("junit" if kind == "junit" else "prometheus", data)
            return
        done = r22.doctor(FORMATS[kind], env, tmp)
        held(done, kind == "json", (0, 1, 2))
        no_raw(done.stdout, f"check {kind}'s output")
        no_raw(done.stderr, "standard error")
        parsed(kind, done.stdout)
        if (tmp / "PWNED").exists():
            raise Broken("a command in the value ran")
    return case


def fleet_merge_case(chars: str, json_out: bool) -> Callable[[Path], None]:
    """fleet merge of two nodes' reports whose host and driver hold CHARS (one node differs)."""
    def case(tmp: Path) -> None:
        for index, driver in enumerate(("580.1", f"580.2{chars}")):
            report = {"schema": "cudnn-doctor/report/1", "host": {"hostname": f"node{index}{chars}", "os": "linux",
                                                                   "arch": "x86_64", "python": "3.12"},
                      "driver": {"version": driver}, "findings": [], "summary": {"status": "ok", "exit_code": 0}}
            (tmp / f"n{index}.json").write_text(json.dumps(report))
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(tmp), "LANG": "C.UTF-8"}
        done = r22.doctor(["fleet", "merge", *(["--json"] if json_out else []), str(tmp)], env, tmp)
        held(done, json_out, (0, 1, 2))
        no_raw(done.stdout, "fleet merge's output")
    return case


# --- 3. NCCL's interfaces and variables ------------------------------------------------------------------------------

def _named(kind: str, name: str | bytes) -> Callable[[Path], None]:
    def make(root: Path) -> None:
        folder = root / "sys" / "class" / kind
        folder.mkdir(parents=True, exist_ok=True)
        path = os.path.join(os.fsencode(folder), name if isinstance(name, bytes) else os.fsencode(name))
        os.makedirs(os.path.join(path, b"ports", b"1") if kind == "infiniband" else path, exist_ok=True)
    return make


def _replaced(kind: str, how: str) -> Callable[[Path], None]:
    def make(root: Path) -> None:
        folder = root / "sys" / "class" / kind
        folder.parent.mkdir(parents=True, exist_ok=True)
        if how == "a FIFO":
            os.mkfifo(folder)
        elif how == "a file":
            folder.write_bytes(b"\x00" * 4096)
        elif how == "a link loop":
            folder.symlink_to(kind + ".loop")
            (folder.parent / (kind + ".loop")).symlink_to(kind)
        elif how == "a link to /proc/self/fd/0":
            folder.symlink_to("/proc/self/fd/0")
    return make


def _entries(kind: str, how: str) -> Callable[[Path], None]:
    def make(root: Path) -> None:
        folder = root / "sys" / "class" / kind
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "eth0").mkdir()
        if how == "a FIFO":
            os.mkfifo(folder / "ib0")
        elif how == "a file":
            (folder / "ib0").write_bytes(b"x")
        elif how == "a link loop":
            (folder / "ib0").symlink_to("ib1")
            (folder / "ib1").symlink_to("ib0")
        elif how == "65,537 names":
            for index in range(65_537):
                os.mkdir(folder / f"v{index:05d}")
    return make


def _ports(name: str | bytes, fifo: bool = False) -> Callable[[Path], None]:
    def make(root: Path) -> None:
        ports = root / "sys" / "class" / "infiniband" / "mlx5_0" / "ports"
        ports.parent.mkdir(parents=True, exist_ok=True)
        if fifo:
            os.mkfifo(ports)
            return
        ports.mkdir()
        os.mkdir(os.path.join(os.fsencode(ports), name if isinstance(name, bytes) else os.fsencode(name)))
    return make


NCCL_VALUES: dict[str, dict[str, str]] = {
    "NCCL_SOCKET_IFNAME of 128 KB": {"NCCL_SOCKET_IFNAME": "e" * 131_000},
    "NCCL_SOCKET_IFNAME of 30,000 entries": {"NCCL_SOCKET_IFNAME": ",".join(f"eth{i}" for i in range(30_000))[:131_000]},
    "NCCL_SOCKET_IFNAME with bytes not UTF-8": {"NCCL_SOCKET_IFNAME": os.fsdecode(b"eth\xff\xfe,^ib\x85")},
    "NCCL_SOCKET_IFNAME with escapes and U+2028": {"NCCL_SOCKET_IFNAME": "eth\x1b[31m\u2028\u202e,ib\x85"},
    "NCCL_SOCKET_IFNAME only '^='": {"NCCL_SOCKET_IFNAME": "^="},
    "NCCL_SOCKET_IFNAME of commas": {"NCCL_SOCKET_IFNAME": "," * 100_000},
    "NCCL_IB_HCA with a port in Arabic-Indic digits": {"NCCL_IB_HCA": "=mlx5_0:\u0661"},
    "NCCL_IB_HCA with a port of 30 digits": {"NCCL_IB_HCA": "mlx5_0:" + "9" * 30},
    "NCCL_IB_HCA of 128 KB of colons": {"NCCL_IB_HCA": "mlx5_0" + ":" * 131_000},
    "NCCL_IB_HCA with escapes and a newline": {"NCCL_IB_HCA": "mlx5\x1b]0;x\x07\n::error::injected:1"},
}
NCCL_MACHINES: dict[str, Callable[[Path], None]] = {
    **{f"an interface named with {name}": _named("net", f"e{chars}"[:15]) for name, chars in CLASSES.items()},
    **{f"an adapter named with {name}": _named("infiniband", f"m{chars}") for name, chars in CLASSES.items()},
    "an interface of 255 bytes": _named("net", "e" * 255),
    "an adapter named with bytes not UTF-8 only": _named("infiniband", b"\xff\xfe\xfd"),
    **{f"/sys/class/net {how}": _replaced("net", how) for how in ("a FIFO", "a file", "a link loop",
                                                                  "a link to /proc/self/fd/0")},
    **{f"/sys/class/infiniband {how}": _replaced("infiniband", how) for how in ("a FIFO", "a file", "a link loop")},
    **{f"an interface that is {how}": _entries("net", how) for how in ("a FIFO", "a file", "a link loop",
                                                                       "65,537 names")},
    "an adapter's ports a FIFO": _ports("1", fifo=True),
    "an adapter's port in Arabic-Indic digits": _ports("\u0661"),
    "an adapter's port of 20 digits": _ports("9" * 20),
    "an adapter's port with a newline": _ports("1\n2"),
}


def nccl_case(make: Callable[[Path], None], variables: dict[str, str], kind: str) -> Callable[[Path], None]:
    def case(tmp: Path) -> None:
        root = tmp / "root"
        root.mkdir()
        make(root)
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(tmp), "LANG": "C.UTF-8",
               "CUDNN_DOCTOR_SYSTEM_PREFIX": str(root), "CUDNN_DOCTOR_CACHE_DIR": str(tmp / "cache"),
               "NCCL_SOCKET_IFNAME": "eth", "NCCL_IB_HCA": "mlx5", **variables}
        if kind == "junit":
            done = r22.doctor(["check", "--junit-xml", str(tmp / "r.xml")], env, tmp)
            held(done, False, (0, 1, 2))
            data = (tmp / "r.xml").read_bytes()
            no_raw(data, "the JUnit report")
            parsed("junit", data)
            return
        done = r22.doctor(FORMATS[kind], env, tmp)
        report = held(done, kind == "json", (0, 1, 2))
        no_raw(done.stdout, f"check {kind}'s output")
        parsed(kind, done.stdout)
        if kind == "json" and len(json.dumps(report)) > 8 << 20:
            raise Broken(f"a report of {len(json.dumps(report)) >> 20} MB")
    return case


# --- 4. explain's torch_cuda under a hostile torch/version.py --------------------------------------------------------

def _version_text(text: str | bytes) -> Callable[[Path], None]:
    def spoil(path: Path) -> None:
        path.write_bytes(text if isinstance(text, bytes) else text.encode())
    return spoil


def _version_fifo(path: Path) -> None:
    path.unlink()
    os.mkfifo(path)


def _version_link(path: Path) -> None:
    path.unlink()
    path.symlink_to("/dev/zero")


def _version_folder(path: Path) -> None:
    path.unlink()
    path.mkdir()


def _version_big(path: Path) -> None:
    with open(path, "wb") as file:
        file.write(b"__version__ = '2.5.1'\ncuda = '12.4'\n" + b"#" * (50 << 20) + b"\n")


VERSION_FILES: dict[str, Callable[[Path], None]] = {
    "a FIFO": _version_fifo, "a link to /dev/zero": _version_link, "a folder": _version_folder, "50 MB": _version_big,
    "not UTF-8": _version_text(b"__version__ = '2.5.1'\ncuda = '12.\xff4'\n\xc0\xaf"),
    "its cuda in Arabic-Indic digits": _version_text("__version__ = '2.5.1'\ncuda = '\u0661\u0662.\u0664'\n"),
    "its cuda in fullwidth digits": _version_text("__version__ = '2.5.1'\ncuda = '\uff11\uff12.4'\n"),
    "its cuda '....'": _version_text("__version__ = '2.5.1'\ncuda = '....'\n"),
    "its cuda 100,000 digits": _version_text("__version__ = '2.5.1'\ncuda = '" + "1" * 100_000 + "'\n"),
    "a '+cu' of 5,000 digits": _version_text("__version__ = '2.5.1+cu" + "1" * 5000 + "'\ncuda = None\n"),
    "escapes in __version__": _version_text("__version__ = '2.5.1+cu124\x1b[31m\u2028\u202e$(id)'\ncuda = None\n"),
}
TORCH_CUDA_MESSAGES = {
    "torchvision's check": "RuntimeError: Detected that PyTorch and torchvision were compiled with different CUDA "
                           "major versions.\n",
    "Apex's check": "RuntimeError: Cuda extensions are being compiled with a version of Cuda that does not match the "
                    "version used to compile Pytorch binaries.\n",
}
CUDA_SAID = re.compile(r"PyTorch's CUDA: ([^)\s]*)")


def torch_cuda_case(spoil: Callable[[Path], None], message: str) -> Callable[[Path], None]:
    def case(tmp: Path) -> None:
        from tests.test_frameworks import install_torch, python_env

        machine = Machine(tmp)
        site = python_env(machine, tmp)
        install_torch(site)
        spoil(site / "torch" / "version.py")
        (tmp / "message.log").write_text(message)
        done = r22.doctor(["explain", "--json", "--from-file", str(tmp / "message.log")], machine.env, machine.cwd)
        answer = held(done, True, (0, 1, 2))
        no_raw(done.stdout, "explain's answer")
        for match in answer.get("matches", []):
            for said in CUDA_SAID.findall(f"{match.get('cause')} {match.get('fix')}"):
                # a release, or the words that say where to look it up ('the CUDA torch.version.cuda prints')
                if not re.fullmatch(r"[0-9]{1,3}(\.[0-9]{1,4}){0,2}|[A-Za-z].*", said):
                    raise Broken(f"PyTorch's CUDA said to be {said[:40]!r}")
    return case


# --- 5. the early children: the doctor stopped at seeded instants of its start ----------------------------------------

def _tree_left(marker: str) -> list[str]:
    """The processes whose environment holds MARKER (the doctor's and every child's that inherits it)."""
    left = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/environ", "rb") as file:
                if marker.encode() in file.read():
                    with open(f"/proc/{pid}/cmdline", "rb") as cmd:
                        said = cmd.read()[:120].replace(b"\0", b" ").decode("utf-8", "replace")
                        left.append(f"{pid} {said}")
        except OSError:
            continue
    return left


def stopped_case(command: list[str], signal_number: int, seed: int) -> Callable[[Path], None]:
    """COMMAND on r26's machine (torch 2.5.1 built with cuDNN 9.1 beside a 9.0 copy: NVML's, the batch child, the
    loading child, under --deep the framework's), sent SIGNAL at a seeded instant of its first second."""
    def case(tmp: Path) -> None:
        from tests.test_frameworks import install_torch, python_env, real_python_sees
        from tests.test_process_env import gpu_machine

        machine = Machine(tmp)
        gpu_machine(machine, tmp, gpus=1)
        site = python_env(machine, tmp)
        install_torch(site, cudnn=90000)
        real_python_sees(site, tmp)
        marker = f"R27_MARK_{uuid.uuid4().hex}"
        env = {**machine.env, marker: "1", "PYTHONPATH": r22.package()}
        delay = random.Random(seed).uniform(0.02, 1.0)
        process = subprocess.Popen([sys.executable, "-P", "-m", "cudnn_doctor", *command], env=env, cwd=machine.cwd,
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        time.sleep(delay)
        with contextlib.suppress(ProcessLookupError):
            process.send_signal(signal_number)
        try:
            out, err = process.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.communicate()
            raise Broken(f"still running 30 s after {signal.Signals(signal_number).name} at {delay:.2f} s") from None
        if "Traceback" in err.decode("utf-8", "replace"):
            raise Broken(f"a traceback after {signal.Signals(signal_number).name} at {delay:.2f} s")
        if out.strip():
            try:
                json.loads(out)
            except ValueError:
                raise Broken(f"half an answer after {signal.Signals(signal_number).name} at {delay:.2f} s: "
                             f"{out[-80:]!r}") from None
        deadline = time.monotonic() + 3.0
        while (left := _tree_left(marker)) and time.monotonic() < deadline:
            time.sleep(0.1)
        if left:
            for line in left:
                with contextlib.suppress(OSError):
                    os.kill(int(line.split()[0]), signal.SIGKILL)
            raise Broken(f"{len(left)} process(es) left 3 s after {signal.Signals(signal_number).name} at "
                         f"{delay:.2f} s: {left[0][:100]}")
    return case


# --- 6. maintenance/seal.sh ------------------------------------------------------------------------------------------

SET_FILES = 40


def _seal_repo(tmp: Path) -> tuple[Path, Path]:
    """A scratch repository holding the judged tree's seal.sh, and a set of SET_FILES files (its original copy)."""
    repo = tmp / "repo"
    (repo / "maintenance").mkdir(parents=True)
    shutil.copy(Path(r22.package()) / "maintenance" / "seal.sh", repo / "maintenance" / "seal.sh")
    original = tmp / "original" / "round9"
    original.mkdir(parents=True)
    rng = random.Random(9)
    for index in range(SET_FILES):
        (original / f"case{index}.json").write_bytes(rng.randbytes(30_000).hex().encode())
    return repo, original


def _seal(repo: Path, *args: str, key: str = "right", timeout: float = 60) -> subprocess.CompletedProcess[bytes]:
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "SEAL_KEY": key, "HOME": str(repo)}
    return subprocess.run(["bash", str(repo / "maintenance" / "seal.sh"), *args], env=env, cwd=repo,
                          capture_output=True, timeout=timeout)


def _same(one: Path, other: Path) -> bool:
    names = sorted(p.name for p in one.iterdir())
    return names == sorted(p.name for p in other.iterdir()) and all(
        (one / n).read_bytes() == (other / n).read_bytes() for n in names)


def _whole_or_absent(repo: Path, original: Path, name: str = "round9") -> None:
    target = repo / ".sealed" / name
    if (target.exists() or target.is_symlink()) and not (target.is_dir() and _same(target, original)):
        count = len(list(target.iterdir())) if target.is_dir() else 0
        raise Broken(f".sealed/{name} is neither absent nor the whole set ({count} of {SET_FILES} files)")


def _packed(tmp: Path) -> tuple[Path, Path]:
    repo, original = _seal_repo(tmp)
    (repo / ".sealed").mkdir()
    shutil.copytree(original, repo / ".sealed" / "round9")
    done = _seal(repo, "pack", ".sealed/round9")
    if done.returncode:
        raise Broken(f"pack failed: {done.stderr[-200:]!r}")
    shutil.rmtree(repo / ".sealed" / "round9")
    return repo, original


def unpack_case(how: str, seed: int = 0) -> Callable[[Path], None]:
    def case(tmp: Path) -> None:
        repo, original = _packed(tmp)
        archive = repo / "benchmarks" / "sealed" / "round9.tar.gz.aes"
        key = "right"
        if how == "a wrong key":
            key = "wrong"
        elif how == "an archive cut short":
            data = archive.read_bytes()
            archive.write_bytes(data[:random.Random(seed).randrange(64, len(data) - 1)])
        elif how == "onto a folder that exists":
            (repo / ".sealed" / "round9").mkdir()
            (repo / ".sealed" / "round9" / "stale.json").write_text("{}")
        done = _seal(repo, "unpack", "round9", key=key)
        if how == "onto a folder that exists":
            left = sorted(p.name for p in (repo / ".sealed" / "round9").iterdir())
            if left != ["stale.json"]:
                raise Broken(f"the set unpacked into a folder that existed (exit {done.returncode}): {len(left)} "
                             "files mixed")
            if done.returncode == 0:
                raise Broken("exit 0 where the set was not unpacked")
            return
        if how == "the right key":
            if done.returncode or not _same(repo / ".sealed" / "round9", original):
                raise Broken(f"not unpacked whole (exit {done.returncode}): {done.stderr[-160:]!r}")
            return
        if done.returncode == 0:
            raise Broken(f"exit 0 with {how}")
        _whole_or_absent(repo, original)
        if (repo / ".sealed").exists() and [p for p in (repo / ".sealed").iterdir() if p.name.startswith(".")]:
            raise Broken("a temporary left in .sealed")
    return case


def odd_name_case(args: Callable[[Path], list[str]], should_work: bool) -> Callable[[Path], None]:
    def case(tmp: Path) -> None:
        repo, original = _seal_repo(tmp)
        done = _seal(repo, *args(tmp))
        sealed = repo / "benchmarks" / "sealed"
        leftovers = [p.name for p in sealed.iterdir() if p.name.startswith(".")] if sealed.exists() else []
        if leftovers:
            raise Broken(f"a temporary left behind (exit {done.returncode}): {leftovers[0]}")
        if should_work:
            if done.returncode:
                raise Broken(f"refused (exit {done.returncode}): {done.stderr[-160:]!r}")
            shutil.rmtree(original)
            again = _seal(repo, "unpack", "round9")
            if again.returncode or not (repo / ".sealed" / "round9").is_dir():
                raise Broken(f"what it packed does not unpack: {again.stderr[-160:]!r}")
            return
        archives = list(sealed.glob("*.aes")) if sealed.exists() else []
        if done.returncode == 0 or archives:
            raise Broken(f"exit {done.returncode}, archives {[a.name for a in archives]}: an archive of no set")
    return case


def _in_odd_parent(tmp: Path) -> list[str]:
    parent = tmp / "sets with spaces\nand a newline"
    parent.mkdir()
    shutil.move(str(tmp / "original" / "round9"), parent / "round9")
    (tmp / "original").rmdir()
    (tmp / "original").symlink_to(parent)  # _seal_repo's original, for the check after
    return ["pack", str(parent / "round9")]


def _a_link(tmp: Path) -> list[str]:
    (tmp / "repo" / ".sealed").mkdir()
    (tmp / "repo" / ".sealed" / "round9").symlink_to(tmp / "original" / "round9")
    return ["pack", ".sealed/round9"]


def _trailing_newline(tmp: Path) -> list[str]:
    (tmp / "repo" / ".sealed").mkdir()
    shutil.copytree(tmp / "original" / "round9", tmp / "repo" / ".sealed" / "round9\n")
    return ["pack", ".sealed/round9\n"]


def killed_seal_case(step: str, signal_number: int, seed: int) -> Callable[[Path], None]:
    """seal.sh STEP (pack, unpack) sent SIGNAL (to its process group) at a seeded instant of its run."""
    def case(tmp: Path) -> None:
        repo, original = _packed(tmp) if step == "unpack" else _seal_repo(tmp)
        if step == "pack":
            (repo / ".sealed").mkdir()
            shutil.copytree(original, repo / ".sealed" / "round9")
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "SEAL_KEY": "right", "HOME": str(repo)}
        args = ["pack", ".sealed/round9"] if step == "pack" else ["unpack", "round9"]
        before = (repo / "benchmarks" / "sealed" / "round9.tar.gz.aes").read_bytes() if step == "unpack" else None
        process = subprocess.Popen(["bash", str(repo / "maintenance" / "seal.sh"), *args], env=env, cwd=repo,
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        delay = random.Random(seed).uniform(0.01, 0.5)
        time.sleep(delay)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal_number)
        process.wait(timeout=30)
        time.sleep(0.2)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        if step == "unpack":
            _whole_or_absent(repo, original)
            if (repo / "benchmarks" / "sealed" / "round9.tar.gz.aes").read_bytes() != before:
                raise Broken("the archive changed")
            left = [p.name for p in (repo / ".sealed").iterdir() if p.name.startswith(".")] \
                if (repo / ".sealed").exists() else []
        else:
            archive = repo / "benchmarks" / "sealed" / "round9.tar.gz.aes"
            if archive.exists():
                shutil.rmtree(repo / ".sealed" / "round9")
                again = _seal(repo, "unpack", "round9")
                if again.returncode or not _same(repo / ".sealed" / "round9", original):
                    raise Broken(f"an archive that is not the whole set, after {signal.Signals(signal_number).name} "
                                 f"at {delay:.2f} s")
            sealed = repo / "benchmarks" / "sealed"
            left = [p.name for p in sealed.iterdir() if p.name.startswith(".")] if sealed.exists() else []
        if left and signal_number != signal.SIGKILL:
            raise Broken(f"a temporary left after {signal.Signals(signal_number).name} at {delay:.2f} s: {left[0]}")
    return case


# --- 1. srun's options through a real Slurm cluster -------------------------------------------------------------------

_CLUSTER: dict[str, str] = {}
_STACK = contextlib.ExitStack()
atexit.register(_STACK.close)


def cluster() -> dict[str, str]:
    """The Slurm cluster every srun case shares (started at the first), its environment."""
    if not _CLUSTER:
        from tests.slurm_cluster import missing_tools, slurm_cluster

        missing = missing_tools()
        if missing:
            raise Broken(f"Slurm is not installed here ({', '.join(missing)})")
        folder = Path(f"/tmp/redteam-r27-slurm-{os.getpid()}")
        shutil.rmtree(folder, ignore_errors=True)
        _STACK.callback(shutil.rmtree, folder, True)
        _CLUSTER.update(_STACK.enter_context(slurm_cluster(folder / "cluster")))
    return _CLUSTER


def _queue(env: dict[str, str]) -> str:
    end = time.monotonic() + 30
    while True:
        queue = subprocess.run(["squeue", "-h", "-o", "%i %j %T"], env=env, capture_output=True, text=True,
                               timeout=30).stdout.strip()
        if "COMPLETING" not in queue or time.monotonic() > end:
            return queue
        time.sleep(0.2)


def _sruns_of(marker: str) -> list[str]:
    return [line for line in _tree_left(marker) if "srun" in line]


# what the node runs: a check's JSON at once (the doctor's own check takes seconds; the options are what is judged)
NODE_COMMAND = (f"{sys.executable} -I -c \"import json; print(json.dumps({{'schema': 'cudnn-doctor/report/1', "
                "'host': {'hostname': 'n'}, 'findings': [], 'summary': {'status': 'ok', 'exit_code': 0}}))\"")
# the options, and whether the run merges the node's report (True), cannot (False: not exit 0), or either (None: srun
# itself may refuse the value)
SRUN_OPTIONS: dict[str, tuple[list[str], bool | None]] = {
    "plain": (["--nodes=1"], True),
    "a last --comment without its value": (["--nodes=1", "--comment"], False),
    "a last -J without its value": (["--nodes=1", "-J"], False),
    "a last -p without its value": (["--nodes=1", "-p"], False),
    "a last cluster -lN without N's value": (["-N"], False),
    "'--' after the options": (["--nodes=1", "--"], False),
    "'--' and a command": (["--nodes=1", "--", "hostname"], False),
    "a word that is not an option": (["hostname"], False),
    "':' (a heterogeneous job's separator)": (["--nodes=1", ":", "--nodes=1"], False),
    "an ambiguous abbreviation --job": (["--job=x"], False),
    "an ambiguous abbreviation --c": (["--c", "1"], False),
    "a unique abbreviation --job-n": (["--job-n", "mine", "--nodes=1"], True),
    "--exact=1 (an option without a value given one)": (["--exact=1"], False),
    "an option no srun knows, with '='": (["--no-such-option=1", "--nodes=1"], False),
    "an option no srun knows, last, without '='": (["--nodes=1", "--no-such-option"], False),
    "-J's value '--output=x'": (["-J", "--output=x", "--nodes=1"], True),
    "--comment of 128 KB": (["--comment=" + "c" * 131_000, "--nodes=1"], None),
    "a comment not UTF-8": ([os.fsdecode(b"--comment=\xff\xfe\x1b[31m"), "--nodes=1"], True),
    "a job name with a newline and a command": (["--job-name=x\n$(touch PWNED)", "--nodes=1"], True),
    "--label": (["--nodes=1", "--label"], False),
    "-l in a cluster": (["-lN1"], False),
    "--multi-prog": (["--multi-prog", "--nodes=1"], False),
    "-D elsewhere": (["-D", "/tmp", "--nodes=1"], True),
}
SRUN_VARIABLES: dict[str, dict[str, str]] = {
    "SLURM_LABELIO=1": {"SLURM_LABELIO": "1"},
    "SLURM_SRUN_MULTI=1": {"SLURM_SRUN_MULTI": "1"},
    "SLURM_JOB_NAME with a newline": {"SLURM_JOB_NAME": "x\ny"},
    "SLURM_OPEN_MODE=append": {"SLURM_OPEN_MODE": "append"},
    "SLURM_WORKING_DIR=/tmp": {"SLURM_WORKING_DIR": "/tmp"},
    "SLURM_UNBUFFEREDIO=1": {"SLURM_UNBUFFEREDIO": "1"},
}
# a site's srun wrapper: BODY, with $REAL the real srun; whether a node's report can come back (None: it may)
SRUN_WRAPPERS: dict[str, tuple[str, bool | None]] = {
    "srun failing at once": ("echo 'srun: error: Unable to contact slurm controller' >&2; exit 1", False),
    "srun killed before the job starts": ("kill -9 $$", False),
    "srun killed while the job runs": ("\"$REAL\" \"$@\" & sleep 0.5; kill -9 $$", None),
    "srun hanging, ignoring SIGINT": ("trap '' INT; \"$REAL\" \"$@\" & sleep 600", None),
    "srun hanging before the job, ignoring SIGINT": ("trap '' INT; sleep 600", False),
    "srun flooding its standard output": ("head -c 50000000 /dev/zero | tr '\\0' 'x'; exec \"$REAL\" \"$@\"", None),
    "srun printing escapes and U+2028 on stderr": (
        "printf 'srun: error: \\033]0;x\\007\\342\\200\\250::error::x\\n' >&2; exit 1", False),
}


# a site's wrapper that ignores SIGINT and holds the real srun (which then never cancels its job): the doctor's own
# scancel, by the job's name, is what takes a waiting job out of the queue
IGNORING_SIGINT = "trap '' INT; \"$REAL\" \"$@\" &\nwait $!"


def srun_case(options: list[str], mergeable: bool | None, variables: dict[str, str] | None = None,
              wrapper: str | None = None, keep: str | None = None, queued: bool = False) -> Callable[[Path], None]:
    """fleet run --slurm -- OPTIONS (under VARIABLES, through WRAPPER, with --keep KEEP; where QUEUED, the job
    asked to begin in an hour, so that the deadline finds it waiting in the queue)."""
    def case(tmp: Path) -> None:
        env_cluster = cluster()
        marker = f"R27_MARK_{uuid.uuid4().hex}"
        path = env_cluster.get("PATH", os.environ.get("PATH", "/usr/bin:/bin"))
        if wrapper is not None:
            real = shutil.which("srun", path=path)
            (tmp / "bin").mkdir()
            (tmp / "bin" / "srun").write_text(f"#!/bin/bash\nREAL={real}\n{wrapper}\n")
            (tmp / "bin" / "srun").chmod(0o755)
            path = f"{tmp / 'bin'}:{path}"
        (tmp / "work").mkdir()
        (tmp / "tmp").mkdir()
        env = {**{k: v for k, v in os.environ.items() if not k.startswith("SLURM_")}, **env_cluster, "PATH": path,
               "HOME": str(tmp), "TMPDIR": str(tmp / "tmp"), marker: "1", **(variables or {})}
        deadline = 8 if wrapper else 4 if queued else 40
        options_given = ["--begin=now+3600", *options] if queued else options
        keep_args = ["--keep", keep] if keep else []
        done = r22.doctor(["fleet", "run", "--slurm", "--json", "--deadline", str(deadline), "--command", NODE_COMMAND,
                           *keep_args, "--", *options_given], env, tmp / "work", deadline + 15)
        data = held(done, True, (0, 1, 2))
        no_raw(done.stdout, "fleet run's output")
        if mergeable and not queued and (data.get("nodes") != 1 or data.get("failed")):
            raise Broken(f"the node's report not merged (exit {done.returncode}): {json.dumps(data)[:240]}")
        if mergeable is False and done.returncode == 0:
            raise Broken(f"exit 0 and {json.dumps(data)[:200]}")
        said = str(data.get("error", {}).get("message", ""))
        if mergeable is False and wrapper is None and data.get("error", {}).get("code") != "CD001" and not any(
                word in said for word in ("srun: error", "srun: fatal", "unrecognized", "ambiguous", "invalid")):
            raise Broken(f"neither a usage error nor srun's own refusal: {said[:160]!r}")
        queue = _queue(env)
        if "cudnn-doctor-fleet" in queue or "--output" in queue:
            with contextlib.suppress(OSError):
                subprocess.run(["scancel", "--user", os.environ.get("USER", "root")], env=env, timeout=30)
            raise Broken(f"a job left in the queue: {queue[:160]}")
        time.sleep(0.3)
        if _sruns_of(marker):
            for line in _sruns_of(marker):
                with contextlib.suppress(OSError):
                    os.kill(int(line.split()[0]), signal.SIGKILL)
            raise Broken("an srun left running")
        left = [p.name for p in (tmp / "tmp").iterdir()] + ([p.name for p in (tmp / "work" / keep).iterdir()
                                                             if p.name.startswith(".")] if keep and
                                                            (tmp / "work" / keep).is_dir() else [])
        if left:
            raise Broken(f"a folder of the run left: {left[0]}")
        if list(tmp.rglob("PWNED")):
            raise Broken("a command in a value ran")
    return case


def killed_fleet_case(signal_number: int, seed: int, queued: bool) -> Callable[[Path], None]:
    """fleet run --slurm (its job waiting in the queue where QUEUED, else running a node's check of 3 s) sent SIGNAL
    at a seeded instant: 5 s later no srun of it runs, no job of it is queued, no folder of its own is left."""
    def case(tmp: Path) -> None:
        env_cluster = cluster()
        marker = f"R27_MARK_{uuid.uuid4().hex}"
        (tmp / "tmp").mkdir()
        env = {**{k: v for k, v in os.environ.items() if not k.startswith("SLURM_")}, **env_cluster,
               "HOME": str(tmp), "TMPDIR": str(tmp / "tmp"), marker: "1", "PYTHONPATH": r22.package()}
        slow = f"{sys.executable} -I -c \"import time; time.sleep(3); print('{{}}')\""
        options = ["--begin=now+3600", "--nodes=1"] if queued else ["--nodes=1"]
        process = subprocess.Popen([sys.executable, "-P", "-m", "cudnn_doctor", "fleet", "run", "--slurm", "--json",
                                    "--deadline", "60", "--command", slow, "--", *options], env=env, cwd=tmp,
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        delay = random.Random(seed).uniform(0.5, 2.0)
        time.sleep(delay)
        with contextlib.suppress(ProcessLookupError):
            process.send_signal(signal_number)
        process.wait(timeout=30)
        time.sleep(5)
        queue = _queue(env)
        sruns = _sruns_of(marker)
        for line in sruns:
            with contextlib.suppress(OSError):
                os.kill(int(line.split()[0]), signal.SIGKILL)
        if queue:
            subprocess.run(["scancel", "--user", os.environ.get("USER", "root")], env=env, timeout=30)
        left = [p.name for p in (tmp / "tmp").iterdir()]
        said = f"{signal.Signals(signal_number).name} at {delay:.2f} s"
        if queue or sruns or left:
            raise Broken(f"after {said}: queue {queue[:80]!r}, {len(sruns)} srun running, left {left[:1]}")
    return case


def cases() -> dict[str, tuple[str, Callable[[Path], None]]]:
    found: dict[str, tuple[str, Callable[[Path], None]]] = {}
    for name, (options, mergeable) in SRUN_OPTIONS.items():
        found[f"fleet run --slurm: {name}"] = ("srun options", srun_case(options, mergeable))
    for name in ("a last -J without its value", "a last --comment without its value", "plain"):
        options, _ = SRUN_OPTIONS[name]
        found[f"fleet run --slurm: {name}, the job waiting in the queue at the deadline"] = (
            "srun options", srun_case(options, None, queued=True, wrapper=IGNORING_SIGINT))
    for name, variables in SRUN_VARIABLES.items():
        found[f"fleet run --slurm under {name}"] = ("srun options", srun_case(["--nodes=1"], True, variables))
    found["fleet run --slurm: a relative --keep and -D elsewhere"] = (
        "srun options", srun_case(["-D", "/tmp", "--nodes=1"], True, keep="kept"))
    found["fleet run --slurm: a relative --keep under SLURM_WORKING_DIR"] = (
        "srun options", srun_case(["--nodes=1"], True, {"SLURM_WORKING_DIR": "/tmp"}, keep="kept"))
    for number in (signal.SIGKILL, signal.SIGTERM):
        for queued in (True, False):
            for seed in range(2):
                found[f"fleet run --slurm {'queued' if queued else 'running'}: {number.name} at seeded instant "
                      f"{seed}"] = ("srun stopped", killed_fleet_case(number, seed, queued))
    for name, (body, comes) in SRUN_WRAPPERS.items():
        found[f"fleet run --slurm: {name}"] = ("srun stopped", srun_case(["--nodes=1"], comes, wrapper=body))
    for name, chars in CLASSES.items():
        for kind in (*FORMATS, "junit", "prometheus file"):
            found[f"check {kind}: a value with {name}"] = ("machine outputs", output_case(chars, kind))
        for json_out in (False, True):
            found[f"fleet merge{' --json' if json_out else ''}: host and driver with {name}"] = (
                "machine outputs", fleet_merge_case(chars, json_out))
    for name, make in NCCL_MACHINES.items():
        for kind in ("json", "text", "github", "junit"):
            found[f"check {kind}: {name}"] = ("nccl", nccl_case(make, {}, kind))
    for name, variables in NCCL_VALUES.items():
        for kind in ("json", "text", "junit"):
            found[f"check {kind}: {name}"] = ("nccl", nccl_case(_named("net", "eth0"), variables, kind))
    for name, spoil in VERSION_FILES.items():
        for said, message in TORCH_CUDA_MESSAGES.items():
            found[f"explain {said}: torch/version.py {name}"] = ("explain torch_cuda", torch_cuda_case(spoil, message))
    for command in (["check", "--json"], ["check", "--deep", "--json"]):
        for number in (signal.SIGKILL, signal.SIGTERM, signal.SIGINT):
            for seed in range(4):
                found[f"{' '.join(command)}: {number.name} at seeded instant {seed}"] = (
                    "early children", stopped_case(command, number, seed))
    for how in ("the right key", "a wrong key", "onto a folder that exists"):
        found[f"seal.sh unpack: {how}"] = ("seal.sh", unpack_case(how))
    for seed in range(4):
        found[f"seal.sh unpack: an archive cut short ({seed})"] = ("seal.sh", unpack_case("an archive cut short", seed))
    found["seal.sh unpack: a name with '..'"] = ("seal.sh", odd_name_case(lambda t: ["unpack", "../round9"], False))
    found["seal.sh pack: a folder above named with spaces and a newline"] = ("seal.sh",
                                                                             odd_name_case(_in_odd_parent, True))
    found["seal.sh pack: a link to the set"] = ("seal.sh", odd_name_case(_a_link, False))
    found["seal.sh pack: a missing folder"] = ("seal.sh", odd_name_case(lambda t: ["pack", ".sealed/nothere"], False))
    found["seal.sh pack: a name ending in a newline"] = ("seal.sh", odd_name_case(_trailing_newline, False))
    for step in ("pack", "unpack"):
        for number in (signal.SIGTERM, signal.SIGKILL):
            for seed in range(3):
                found[f"seal.sh {step}: {number.name} at seeded instant {seed}"] = (
                    "seal.sh", killed_seal_case(step, number, seed))
    return found


run_cases = r22.run_cases

if __name__ == "__main__":
    sys.exit(r22.main(cases, __doc__))
