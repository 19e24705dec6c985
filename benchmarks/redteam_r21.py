"""Round seventeen's red-team (issue 43, helper r21) as a figure, over the surfaces the published sets tried least:

1. readers: every reader of a user's file (the project's pyproject.toml, the cache's entries and folder, install's
   journal, lock, manifest and prefix, an image archive and an OCI layout's index, fleet's reports, the shell start-up
   files --install-completion touches) given a FIFO, a link loop, a folder, a sparse 64 GiB file, bytes not UTF-8
   with NULs, and a file another process rewrites while it is read;
2. writers killed: install --yes, uninstall --yes, --install-completion and the cache's writer, SIGKILL between two
   system calls chosen (seeded) among those of a traced run (strace -e inject=NAME:signal=KILL:when=N, the main
   thread), then the next runs must hold: install and uninstall again leave the prefix as it was before, the shell
   file sources cleanly, the cache answers as before;
3. printed strings: hostile machine values (a GPU's name, the driver's version, a cuDNN folder, CUDA_VISIBLE_DEVICES,
   PYTORCH_CUDA_ALLOC_CONF) through every output (text, --json, markdown, junit, github, prometheus, fix --shell for
   each shell), each read by a real parser or sourced in the real shell (bash, zsh, fish; PowerShell's and cmd's
   lines must not hold a raw control character or the hostile command).

Each case has a ceiling (seconds); going past it is broken. Seeded: the kill points and the rewriting file's bytes.

Usage: python benchmarks/redteam_r21.py [--package DIR] [--only TEXT] [--kills N]
  --package DIR: the checkout whose cudnn_doctor is judged (the tree before: an archive of main as r21 started);
  by default this one. Prints each broken case, then a line per class `CLASS: H/T held` and `N cases, B broken, T s`.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from xml.parsers import expat

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.conftest import Machine  # noqa: E402
from tests.fakes.build import fake_cudnn, fake_nvml  # noqa: E402
from tests.images import config_of, docker_archive, layer, oci_layout  # noqa: E402
from tests.install_helpers import clean_env, cudnn7_archive, cudnn7_prefix  # noqa: E402

PACKAGE: Path | None = None
SEED = 21
CEILING_S = 60.0  # a reader's case: one command
KILLS = 12  # kill points per writer


def package() -> str:
    return str(PACKAGE or Path(__file__).resolve().parents[1])


class Broken(Exception):
    """What a case saw go wrong, in words."""


def doctor(args: list[str], env: dict[str, str], cwd: Path, ceiling: float = CEILING_S,
           prefix: list[str] | None = None) -> subprocess.CompletedProcess[bytes]:
    environment = dict(env)
    environment["PYTHONPATH"] = package()
    try:
        return subprocess.run([*(prefix or []), sys.executable, "-m", "cudnn_doctor", *args], env=environment,
                              cwd=cwd, capture_output=True, timeout=ceiling, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        raise Broken(f"{' '.join(args[:2])}: did not end within {ceiling:.0f} s") from None


def held(done: subprocess.CompletedProcess[bytes], json_out: bool, codes: tuple[int, ...] = (0, 1, 2)) -> dict:
    """The command ended as the contract says: no internal error, an exit code of CODES, one JSON object (its
    exit_code the process's) where JSON_OUT, else at most a few lines on stderr."""
    err = done.stderr.decode("utf-8", "replace")
    if done.returncode == 3 or "Traceback" in err:
        raise Broken(f"internal error (exit {done.returncode}): {err.strip().splitlines()[-1:]}")
    if done.returncode not in codes:
        raise Broken(f"exit {done.returncode}: {err.strip()[-200:]}")
    if not json_out:
        if done.returncode and not (err.strip() or done.stdout.strip()):
            raise Broken(f"exit {done.returncode} with nothing said")
        return {}
    try:
        data = json.loads(done.stdout)
    except ValueError:
        raise Broken(f"not one JSON object: {done.stdout[:120]!r} {err.strip()[-160:]}") from None
    if not isinstance(data, dict):
        raise Broken("not one JSON object")
    if data.get("exit_code", data.get("summary", {}).get("exit_code")) not in (done.returncode, None):
        raise Broken(f"exit_code {data.get('exit_code')} but exit {done.returncode}")
    return data


# --- 1. readers --------------------------------------------------------------------------------------------------

class Rewriter:
    """A process of the user's rewriting PATH while it is read: whole, cut short, seeded garbage, 1 MiB, empty."""

    def __init__(self, path: Path, good: bytes, seed: str) -> None:
        self.path, self.good, self.random = path, good, random.Random(seed)
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self.stop.is_set():
            choice = self.random.randrange(5)
            data = (self.good, self.good[:self.random.randrange(len(self.good) + 1)],
                    bytes(self.random.randrange(256) for _ in range(64)), b"x" * (1 << 20), b"")[choice]
            try:
                with open(self.path, "wb") as stream:
                    stream.write(data)
            except OSError:
                pass
            time.sleep(0.001)

    def __enter__(self) -> Rewriter:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join()


def _remove(path: Path) -> None:
    if path.is_symlink() or path.is_file() or path.is_fifo():
        path.unlink()
    elif path.is_dir():
        shutil.rmtree(path)


def spoil(path: Path, kind: str) -> None:
    _remove(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    if kind == "a FIFO":
        os.mkfifo(path)
    elif kind == "a link loop":
        path.symlink_to(path.name)
    elif kind == "a folder":
        path.mkdir()
        (path / "inside").write_text("x")
    elif kind == "a sparse 64 GiB file":
        with open(path, "wb") as stream:
            stream.truncate(64 << 30)
    elif kind == "bytes not UTF-8 and NULs":
        path.write_bytes(b"\xff\xfe\x00[tool.cudnn-doctor]\x00\n{\"a\x00\xc3\x28\": \xe2\x82}\n" * 40)
    else:
        raise ValueError(kind)


REWRITING: list[Path] = []  # the file a Rewriter is rewriting now
SPOILS = ("a FIFO", "a link loop", "a folder", "a sparse 64 GiB file", "bytes not UTF-8 and NULs",
          "rewritten while read")

# each reader: (set up in TMP -> (the file to spoil, the good bytes it held, a check run after the spoil))
Reader = Callable[[Path], tuple[Path, bytes, Callable[[], None]]]


def config_reader(tmp: Path) -> tuple[Path, bytes, Callable[[], None]]:
    machine = Machine(tmp)
    good = b'[tool.cudnn-doctor]\nignore = ["CD101"]\nstrict = false\n'
    path = machine.cwd / "pyproject.toml"

    def check() -> None:
        held(doctor(["check", "--json"], machine.env, machine.cwd), True)
    return path, good, check


def _cache_machine(tmp: Path) -> tuple[Machine, dict]:
    machine = Machine(tmp)
    machine.env["CUDNN_DOCTOR_CACHE_DIR"] = str(tmp / "cache")
    first = held(doctor(["compat", "torch==2.5.1", "--json"], machine.env, machine.cwd), True)
    return machine, first


def cache_entry_reader(tmp: Path) -> tuple[Path, bytes, Callable[[], None]]:
    machine, first = _cache_machine(tmp)
    entries = sorted((tmp / "cache" / "compat").glob("*.json"), key=lambda p: p.stat().st_size)
    path = entries[-1]
    good = path.read_bytes()

    def check() -> None:
        again = held(doctor(["compat", "torch==2.5.1", "--json"], machine.env, machine.cwd), True)
        if again != first:
            raise Broken("compat's answer changed with the cache entry spoiled")
    return path, good, check


def cache_folder_reader(tmp: Path) -> tuple[Path, bytes, Callable[[], None]]:
    machine, first = _cache_machine(tmp)
    path = tmp / "cache" / "compat"

    def check() -> None:
        again = held(doctor(["compat", "torch==2.5.1", "--json"], machine.env, machine.cwd), True)
        if again != first:
            raise Broken("compat's answer changed with the cache folder spoiled")
    return path, b"", check


def _installed(tmp: Path) -> tuple[Path, Path, dict[str, str], dict[str, bytes]]:
    archive = cudnn7_archive(tmp / "archive")
    prefix = cudnn7_prefix(tmp / "cuda")
    env = clean_env(tmp)
    return archive, prefix, env, tree(prefix)


def tree(prefix: Path) -> dict[str, bytes]:
    """The user's files of PREFIX (the doctor's state folder left out): path -> content or link target."""
    found: dict[str, bytes] = {}
    for path in sorted(prefix.rglob("*")):
        relative = str(path.relative_to(prefix))
        if relative.startswith(".cudnn-doctor"):
            continue
        if path.is_symlink():
            found[relative] = b"-> " + os.readlink(path).encode()
        elif path.is_file():
            found[relative] = path.read_bytes()
        elif path.is_dir():
            found[relative] = b"<dir>"
    return found


def install_state_reader(name: str, installed_first: bool, command: str) -> Reader:
    def reader(tmp: Path) -> tuple[Path, bytes, Callable[[], None]]:
        archive, prefix, env, before = _installed(tmp)
        if installed_first:
            held(doctor(["install", "--from", str(archive), "--prefix", str(prefix), "--yes", "--json"], env, tmp),
                 True, (0,))
        state = prefix / ".cudnn-doctor"
        state.mkdir(exist_ok=True)
        path = next(iter(sorted(state.glob(name))), state / name)
        good = path.read_bytes() if path.is_file() else b'{"version": 2}'
        shown = tree(prefix)

        def check() -> None:
            args = ["install", "--from", str(archive)] if command == "install" else ["uninstall"]
            done = doctor([*args, "--prefix", str(prefix), "--yes", "--json"], env, tmp)
            held(done, True)
            if done.returncode != 0 and tree(prefix) != shown:
                raise Broken(f"{command} failed (exit {done.returncode}) and changed the prefix")
        return path, good, check
    return reader


def prefix_reader(tmp: Path) -> tuple[Path, bytes, Callable[[], None]]:
    archive, prefix, env, _before = _installed(tmp)
    path = tmp / "target"

    def check() -> None:
        for extra in (["--dry-run"], ["--yes"]):
            held(doctor(["install", "--from", str(archive), "--prefix", str(path), *extra, "--json"], env, tmp), True)
    return path, b"", check


def _image_files() -> tuple[bytes, list[tuple[bytes, str]]]:
    layers = [layer({"usr/local/cuda/version.json": b'{"cuda": {"version": "12.4.1"}}'})]
    return config_of({"CUDA_VERSION": "12.4.1"}, layers=layers), layers


def image_archive_reader(tmp: Path) -> tuple[Path, bytes, Callable[[], None]]:
    machine = Machine(tmp)
    config, layers = _image_files()
    path = docker_archive(tmp / "image.tar", config, layers)
    good = path.read_bytes()

    def check() -> None:
        held(doctor(["image", str(path), "--json"], machine.env, machine.cwd), True)
    return path, good, check


def oci_index_reader(tmp: Path) -> tuple[Path, bytes, Callable[[], None]]:
    machine = Machine(tmp)
    config, layers = _image_files()
    folder = oci_layout(tmp / "layout", config, layers)
    path = folder / "index.json"
    good = path.read_bytes()

    def check() -> None:
        held(doctor(["image", f"oci:{folder}", "--json"], machine.env, machine.cwd), True)
    return path, good, check


_REPORT: list[bytes] = []


def _a_report(machine: Machine) -> bytes:
    if not _REPORT:
        _REPORT.append(doctor(["check", "--json"], machine.env, machine.cwd).stdout)
    return _REPORT[0]


def fleet_reader(as_folder: bool) -> Reader:
    def reader(tmp: Path) -> tuple[Path, bytes, Callable[[], None]]:
        machine = Machine(tmp)
        good = _a_report(machine)
        folder = tmp / "reports"
        folder.mkdir()
        (folder / "a.json").write_bytes(good)
        path = folder / "b.json"

        def check() -> None:
            targets = [str(folder)] if as_folder else [str(folder / "a.json"), str(path)]
            held(doctor(["fleet", "merge", *targets, "--json"], machine.env, machine.cwd), True)
        return path, good, check
    return reader


def completion_reader(shell: str, where: str) -> Reader:
    """--install-completion SHELL with its start-up file (or the folder it writes into) spoiled: one line, no hang,
    and the user's file is of the kind it was."""
    def reader(tmp: Path) -> tuple[Path, bytes, Callable[[], None]]:
        machine = Machine(tmp)
        path = machine.home / where
        good = b"# the user's own lines\nexport EDITOR=vi\n"

        def check() -> None:
            kind = _kind(path)
            done = doctor(["--install-completion", shell], machine.env, machine.cwd)
            held(done, False)
            if _kind(path) != kind and kind in ("fifo", "link", "folder"):
                raise Broken(f"{where} was {kind}, is {_kind(path)}")
            if done.returncode == 0 and shell == "bash" and _kind(machine.home / ".bashrc") == "file" and \
                    not REWRITING:  # what the user's own rewriting left is theirs
                _sources_cleanly(machine)
        return path, good, check
    return reader


def _kind(path: Path) -> str:
    if path.is_symlink():
        return "link"
    if path.is_fifo():
        return "fifo"
    if path.is_dir():
        return "folder"
    return "file" if path.exists() else "none"


def _sources_cleanly(machine: Machine) -> None:
    done = subprocess.run(["bash", "-c", "source ~/.bashrc && complete -p cudnn-doctor"], capture_output=True,
                          timeout=30, env={"HOME": str(machine.home), "PATH": "/usr/bin:/bin"})
    if done.returncode != 0:
        raise Broken(f"~/.bashrc no longer sources cleanly: {done.stderr[-200:]!r}")


def archive_reader(tmp: Path) -> tuple[Path, bytes, Callable[[], None]]:
    archive, prefix, env, before = _installed(tmp)
    good = archive.read_bytes()

    def check() -> None:
        done = doctor(["install", "--from", str(archive), "--prefix", str(prefix), "--yes", "--json"], env, tmp)
        held(done, True)
        if done.returncode != 0 and tree(prefix) != before:
            raise Broken(f"install failed (exit {done.returncode}) and changed the prefix")
    return archive, good, check


def project_reader(tmp: Path) -> tuple[Path, bytes, Callable[[], None]]:
    machine = Machine(tmp)
    project = tmp / "project"
    project.mkdir()
    path = project / "pom.xml"
    good = (Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "dl4j").glob("*/pom.xml")
    first = next(iter(sorted(good)), None)
    data = first.read_bytes() if first else b"<project><dependencies/></project>"

    def check() -> None:
        for args in (["check", "--json", "--project", str(path)], ["check", "--json", "--project", str(project)],
                     ["fix", "--json", "--project", str(project)]):
            held(doctor(args, machine.env, machine.cwd), True)
    return path, data, check


def search_path_reader(name: str) -> Reader:
    """check --search-path DIR where DIR's NAME (a cuDNN's library, its header) is spoiled."""
    def reader(tmp: Path) -> tuple[Path, bytes, Callable[[], None]]:
        machine = Machine(tmp)
        folder = tmp / "found"
        fake_cudnn(folder / "lib", version=91900, cudart=12040)
        (folder / "include").mkdir(exist_ok=True)
        (folder / "include" / "cudnn_version.h").write_text(
            "#define CUDNN_MAJOR 9\n#define CUDNN_MINOR 1\n#define CUDNN_PATCHLEVEL 0\n")
        path = folder / name
        good = path.read_bytes() if path.is_file() else b"\x7fELF"

        def check() -> None:
            held(doctor(["check", "--json", "--search-path", str(folder)], machine.env, machine.cwd), True)
        return path, good, check
    return reader


def toolkit_reader(tmp: Path) -> tuple[Path, bytes, Callable[[], None]]:
    machine = Machine(tmp)
    toolkit = tmp / "cuda"
    (toolkit / "include").mkdir(parents=True)
    (toolkit / "include" / "cuda_runtime.h").write_text("/* fake */\n")
    path = toolkit / "version.json"
    good = b'{"cuda": {"name": "CUDA SDK", "version": "12.4.1"}}'
    path.write_bytes(good)
    machine.env["CUDA_HOME"] = str(toolkit)

    def check() -> None:
        held(doctor(["check", "--json"], machine.env, machine.cwd), True)
    return path, good, check


FAKE_SRUN = """#!/bin/bash
# srun as it leaves a node's answer: its report in --output, its standard error in --error (%n: the node's index)
for a in "$@"; do case "$a" in --output=*) out="${a#--output=}";; --error=*) err="${a#--error=}";; esac; done
out="${out//%n/0}"; err="${err//%n/0}"; out="${out//%%/%}"; err="${err//%%/%}"
cp REPORT "$out"
printf 'cudnn-doctor-node: n1\\nthe node said this\\n' > "$err"
SPOIL
"""


def srun_answer_reader(which: str) -> Reader:
    """fleet run --slurm through an srun that leaves the node's WHICH (report, stderr) spoiled: the doctor under a
    1.5 GB address-space limit (a node's flood is no reason to take the submit host's memory)."""
    def reader(tmp: Path) -> tuple[Path, bytes, Callable[[], None]]:
        machine = Machine(tmp)
        report = tmp / "report.json"
        report.write_bytes(_a_report(machine))
        bin_folder = tmp / "bin"
        bin_folder.mkdir()
        keep = tmp / "keep"
        path = keep / ("n1.err" if which == "stderr" else "0.json")
        good = b"cudnn-doctor-node: n1\nthe node said this\n" if which == "stderr" else report.read_bytes()
        env = {**machine.env, "PATH": f"{bin_folder}:{machine.env.get('PATH', '/usr/bin:/bin')}"}

        def srun(spoil_line: str) -> None:
            script = bin_folder / "srun"
            script.write_text(FAKE_SRUN.replace("REPORT", str(report)).replace("SPOIL", spoil_line))
            script.chmod(0o755)

        def check() -> None:
            kind = SPOILED.get("kind", "")
            target = '"$err"' if which == "stderr" else '"$out"'
            srun({"a sparse 64 GiB file": f"truncate -s 64G {target}",
                  "bytes not UTF-8 and NULs": f"printf '\\377\\000\\376' >> {target}",
                  "a FIFO": f"rm -f {target}; mkfifo {target}",
                  "a link loop": f"rm -f {target}; ln -s $(basename {target}) {target}",
                  "a folder": f"rm -f {target}; mkdir {target}",
                  "rewritten while read": f"(for i in $(seq 200); do head -c $((i * 997)) /dev/urandom > {target}; "
                                          "done) & sleep 0.2"}.get(kind, ""))
            done = doctor(["fleet", "run", "--slurm", "--keep", str(keep), "--deadline", "30", "--json"], env,
                          machine.cwd, prefix=["prlimit", f"--as={1500 << 20}"])
            data = held(done, True)
            if which == "stderr" and kind != "rewritten while read" and (data.get("nodes") != 1 or data.get("failed")):
                raise Broken(f"the node's report not merged: {json.dumps(data)[:200]}")
        return path, good, check
    return reader


SPOILED: dict[str, str] = {}  # the spoil a reader applies itself (through a program of its own)
SELF_SPOILED = ("fleet run: a node's report", "fleet run: a node's standard error")

def kernels_reader(tmp: Path) -> tuple[Path, bytes, Callable[[], None]]:
    """bench's compiled CPU baseline, its library in the cache spoiled: the baseline runs as it did (a fresh
    interpreter running bench's reference, as bench's child does)."""
    from tests.test_bench_compiled import PROBE

    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(tmp), "CUDNN_DOCTOR_CACHE_DIR": str(tmp / "c"),
           "PYTHONPATH": package()}

    def probe() -> str:
        try:
            done = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, env=env, cwd=tmp,
                                  timeout=CEILING_S)  # not this checkout's folder: -c puts the working folder first
        except subprocess.TimeoutExpired:
            raise Broken(f"bench's reference: did not end within {CEILING_S:.0f} s") from None
        if done.returncode != 0:
            raise Broken(f"bench's reference: exit {done.returncode}: {done.stderr.strip()[-160:]}")
        return done.stdout

    first = probe()
    [path] = list((tmp / "c" / "cpu-kernels").iterdir())
    good = path.read_bytes()

    def check() -> None:
        if probe() != first:
            raise Broken("bench's baseline is not the compiled one it was")
    return path, good, check


READERS: dict[str, Reader] = {
    "cache: CPU kernels library": kernels_reader,
    "fleet run: a node's report": srun_answer_reader("report"),
    "fleet run: a node's standard error": srun_answer_reader("stderr"),
    "install archive": archive_reader,
    "DL4J project pom.xml": project_reader,
    "search path: cuDNN's library": search_path_reader("lib/libcudnn.so.9"),
    "search path: cuDNN's header": search_path_reader("include/cudnn_version.h"),
    "CUDA_HOME version.json": toolkit_reader,
    "config pyproject.toml": config_reader,
    "cache entry": cache_entry_reader,
    "cache folder": cache_folder_reader,
    "install journal": install_state_reader("journal.json", False, "install"),
    "install lock": install_state_reader("lock", False, "install"),
    "uninstall lock": install_state_reader("lock", True, "uninstall"),
    "uninstall manifest": install_state_reader("manifest-*.json", True, "uninstall"),
    "install prefix": prefix_reader,
    "image archive": image_archive_reader,
    "OCI layout index.json": oci_index_reader,
    "fleet report": fleet_reader(False),
    "fleet folder's report": fleet_reader(True),
    "completion ~/.bashrc": completion_reader("bash", ".bashrc"),
    "completion ~/.zshrc": completion_reader("zsh", ".zshrc"),
    "completion fish folder": completion_reader("fish", ".config/fish/completions"),
    "completion bash script": completion_reader("bash", ".bash_completions/cudnn-doctor.sh"),
}


def reader_case(reader: Reader, kind: str, name: str) -> Callable[[Path], None]:
    def case(tmp: Path) -> None:
        path, good, check = reader(tmp)
        if name in SELF_SPOILED:
            SPOILED["kind"] = kind
            check()
            return
        if kind == "rewritten while read":
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path)
            REWRITING.append(path)
            try:
                with Rewriter(path, good or b"{}", f"{SEED}-{name}"):
                    check()
            finally:
                REWRITING.clear()
            return
        # a folder already: a file where it is expected
        spoil(path, "bytes not UTF-8 and NULs" if kind == "a folder" and path.is_dir() else kind)
        check()
    return case


# --- 2. writers killed ---------------------------------------------------------------------------------------------

def _syscalls(argv: list[str], env: dict[str, str], cwd: Path, near: str) -> list[tuple[str, int]]:
    """The main thread's system calls of one traced run of ARGV from the first that names NEAR: (name, its count so
    far), each a point at which a kill can be injected."""
    trace = cwd / "trace.txt"
    subprocess.run(["strace", "-qq", "-s", "256", "-o", str(trace), *argv], env=env, cwd=cwd, capture_output=True,
                   timeout=120, stdin=subprocess.DEVNULL, check=False)
    counts: dict[str, int] = {}
    points, started = [], False
    for line in trace.read_text(errors="replace").splitlines():
        found = re.match(r"([a-z_0-9]+)\(", line)
        if not found:
            continue
        name = found.group(1)
        counts[name] = counts.get(name, 0) + 1
        started = started or near in line
        if started and name not in ("exit_group", "rt_sigreturn"):
            points.append((name, counts[name]))
    trace.unlink()
    return points


def _killed(argv: list[str], env: dict[str, str], cwd: Path, point: tuple[str, int]) -> int:
    name, nth = point
    done = subprocess.run(["strace", "-qq", "-o", "/dev/null", "-e", f"inject={name}:signal=KILL:when={nth}", *argv],
                          env=env, cwd=cwd, capture_output=True, timeout=120, stdin=subprocess.DEVNULL, check=False)
    return done.returncode


def _points(argv: list[str], env: dict[str, str], cwd: Path, near: str, label: str) -> list[tuple[str, int]]:
    points = _syscalls(argv, env, cwd, near)
    if not points:
        raise Broken(f"no system call named {near}")
    chosen = random.Random(f"{SEED}-{label}").sample(range(len(points)), min(KILLS, len(points)))
    return [points[i] for i in sorted(chosen)]


def _python_env(env: dict[str, str]) -> dict[str, str]:
    return {**env, "PYTHONPATH": package()}


def install_kill_case(command: str) -> Callable[[Path], None]:
    """install --yes (or uninstall --yes after an install) killed at seeded system calls from the first that touches
    the prefix: the next install --yes then uninstall --yes must hold and leave the prefix as it was at the start."""
    def case(tmp: Path) -> None:
        archive, prefix, env, before = _installed(tmp)
        install = [sys.executable, "-m", "cudnn_doctor", "install", "--from", str(archive), "--prefix", str(prefix),
                   "--yes", "--json"]
        uninstall = [sys.executable, "-m", "cudnn_doctor", "uninstall", "--prefix", str(prefix), "--yes", "--json"]
        argv = install if command == "install" else uninstall
        if command == "uninstall":
            held(doctor(install[3:], env, tmp), True, (0,))
        points = _points(argv, _python_env(env), tmp, str(prefix), f"kill-{command}")
        if command == "install":
            held(doctor(uninstall[3:], env, tmp), True, (0,))
        broken = []
        for point in points:
            if command == "uninstall":
                held(doctor(install[3:], env, tmp), True, (0,))
            _killed(argv, _python_env(env), tmp, point)
            try:
                # any command next holds: a check that looks in the prefix, a dry run of either
                held(doctor(["check", "--json", "--search-path", str(prefix)], env, tmp), True, (0, 1))
                held(doctor([*uninstall[3:-2], "--dry-run", "--json"], env, tmp), True, (0, 1))
                held(doctor([*install[3:-2], "--dry-run", "--json"], env, tmp), True, (0, 1))
                for _ in range(2):  # the run after the kill may recover and ask to be run again
                    done = doctor(install[3:], env, tmp)
                    held(done, True)
                    if done.returncode == 0:
                        break
                else:
                    raise Broken(f"install after the kill: exit {done.returncode}: "
                                 f"{json.loads(done.stdout).get('error', '')!s:.160}")
                held(doctor(uninstall[3:], env, tmp), True, (0,))
                if tree(prefix) != before:
                    raise Broken("the prefix is not as it was after install and uninstall")
            except Broken as error:
                broken.append(f"{point[0]}#{point[1]}: {error}")
                shutil.rmtree(prefix)
                _installed_again(tmp)
        if broken:
            raise Broken(f"{len(broken)} of {len(points)} kill points: {broken[0]}")
    return case


def _installed_again(tmp: Path) -> None:
    cudnn7_prefix(tmp / "cuda")


RC_FILES = {"bash": ".bashrc", "zsh": ".zshrc", "fish": ".config/fish/config.fish"}


def completion_kill_case(shell: str) -> Callable[[Path], None]:
    """--install-completion SHELL killed at seeded system calls from the first that touches the home: the next run
    installs it, the start-up file holds the user's lines and at most one line of ours, and (bash) sources cleanly."""
    return lambda tmp: _completion_killed(tmp, shell)


def _completion_killed(tmp: Path, shell: str) -> None:
    machine = Machine(tmp)
    rc = machine.home / RC_FILES[shell]
    rc.parent.mkdir(parents=True, exist_ok=True)
    mine = b"# the user's own lines\nset -x EDITOR vi\n" if shell == "fish" else \
        b"# the user's own lines\nexport EDITOR=vi\n"
    rc.write_bytes(mine)
    env = _python_env(machine.env)
    argv = [sys.executable, "-m", "cudnn_doctor", "--install-completion", shell]
    points = _points(argv, env, machine.cwd, str(machine.home), f"kill-completion-{shell}")
    broken = []
    for point in points:
        for path in list(machine.home.iterdir()):
            _remove(path)
        rc.parent.mkdir(parents=True, exist_ok=True)
        rc.write_bytes(mine)
        _killed(argv, env, machine.cwd, point)
        try:
            held(doctor(["--install-completion", shell], machine.env, machine.cwd), False, (0,))
            text = rc.read_bytes() if rc.exists() else mine
            if not text.startswith(mine.rstrip(b"\n")) or text.count(b"cudnn-doctor") > 2:
                raise Broken(f"{RC_FILES[shell]} after: {text[-200:]!r}")
            if shell == "bash":
                _sources_cleanly(machine)
        except Broken as error:
            broken.append(f"{point[0]}#{point[1]}: {error}")
    if broken:
        raise Broken(f"{len(broken)} of {len(points)} kill points: {broken[0]}")


def cache_kill_case(tmp: Path) -> None:
    """compat --json writing its cache killed at seeded system calls from the first in the cache folder: the next
    runs answer as one that was never killed."""
    machine = Machine(tmp)
    cache = tmp / "cache"
    machine.env["CUDNN_DOCTOR_CACHE_DIR"] = str(cache)
    reference = held(doctor(["compat", "torch==2.5.1", "--json"], machine.env, machine.cwd), True)
    shutil.rmtree(cache)
    env = _python_env(machine.env)
    argv = [sys.executable, "-m", "cudnn_doctor", "compat", "torch==2.5.1", "--json"]
    points = _points(argv, env, machine.cwd, str(cache), "kill-cache")
    broken = []
    for point in points:
        shutil.rmtree(cache, ignore_errors=True)
        _killed(argv, env, machine.cwd, point)
        try:
            for _ in range(2):
                if held(doctor(argv[3:], machine.env, machine.cwd), True) != reference:
                    raise Broken("compat answered otherwise after the kill")
        except Broken as error:
            broken.append(f"{point[0]}#{point[1]}: {error}")
    if broken:
        raise Broken(f"{len(broken)} of {len(points)} kill points: {broken[0]}")


# --- 3. printed strings ----------------------------------------------------------------------------------------------

# what each value tries: a terminal's escape sequences (title, clear, a link), C1's CSI, XML's CDATA end and a comment,
# a GitHub workflow command smuggled by its %0A, a Prometheus line and label cut open, markdown's table and HTML
VALUES = {
    "terminal escapes": "H\x1b]0;pwned\x07\x1b[2J\x1b]8;;http://x\x07L",
    "C1 CSI and DEL": "a\u009b31mb\x7fc\u0085d",
    "XML CDATA end and comment": "a]]><!-- x -->&amp;<b>",
    "workflow command": "a%0A::error file=x::pwned%0D::add-mask::y",
    "Prometheus line": "a\"} 1\n# TYPE x counter\nx{y=\"",
    "markdown table and HTML": "a|b\n| c |<details><summary>x`y`",
    "shell command": "a$(touch P)`touch P`;touch P&touch P|touch P%PATH%!PATH!^",
}
FORMATS = ("text", "json", "markdown", "junit", "github", "prometheus")
SHELLS = ("bash", "zsh", "fish", "powershell", "cmd")
CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029]")
PROM = re.compile(
    r"# HELP [a-zA-Z_:][a-zA-Z0-9_:]* (?:[^\\\n]|\\[\\n])*|# TYPE [a-zA-Z_:][a-zA-Z0-9_:]* "
    r"(?:counter|gauge|histogram|summary|untyped)|[a-zA-Z_:][a-zA-Z0-9_:]*(?:\{(?:[a-zA-Z_][a-zA-Z0-9_]*="
    r"\"(?:[^\"\\\n]|\\[\\\"n])*\"(?:,[a-zA-Z_][a-zA-Z0-9_]*=\"(?:[^\"\\\n]|\\[\\\"n])*\")*,?)?\})? "
    r"(?:[+-]?(?:[0-9]+(?:\.[0-9]*)?(?:[eE][+-]?[0-9]+)?|Inf|NaN))(?: -?[0-9]+)?")


def _c_literal(text: str) -> str:
    data = text.encode("utf-8", "surrogateescape")
    return "".join(chr(b) if 32 <= b < 127 and chr(b) not in '"\\?' else f"\\{b:03o}" for b in data)


def value_machine(tmp: Path, where: str, text: str) -> Machine:
    machine = Machine(tmp)
    name, driver = "NVIDIA H100 80GB HBM3", "580.65.06"
    if where == "GPU name":
        name = _c_literal(text)
    if where == "driver version":
        driver = "580.65.06" + _c_literal(text)
    machine.add_library_path(fake_nvml(tmp / "nvml", name=name, driver=driver).parent)
    if where == "cuDNN folder":
        folder = tmp / "d" / re.sub("[/:;\0]", "_", text)  # a folder ld.so can search
        fake_cudnn(folder, version=91900, cudart=13000)
        machine.add_library_path(folder)
    if where == "torch's version":  # its METADATA and torch/version.py, as a hostile wheel would write them
        from tests.test_frameworks import install_torch, python_env

        site = python_env(machine, tmp)
        install_torch(site)
        version = "2.5.1+cu124" + text.replace("\n", " ").replace("\r", " ")
        info = next(site.glob("torch-*.dist-info"))
        metadata = info / "METADATA"
        metadata.write_text(metadata.read_text().replace("Version: 2.5.1+cu124", f"Version: {version}"))
        (site / "torch" / "version.py").write_text(f"__version__ = {version!r}\ncuda = '12.4'\n")
    if where in ("CUDA_VISIBLE_DEVICES", "PYTORCH_CUDA_ALLOC_CONF"):
        machine.env[where] = ("0," if where == "CUDA_VISIBLE_DEVICES" else "expandable_segments:True,") + text
    return machine


def output_case(where: str, text: str) -> Callable[[Path], None]:
    def case(tmp: Path) -> None:
        machine = value_machine(tmp, where, text)
        for form in FORMATS:
            done = doctor(["check", "--format", form], machine.env, machine.cwd)
            held(done, form == "json", (0, 1))
            read_as(form, done.stdout)
        for shell in SHELLS:
            done = doctor(["fix", "--shell", shell], machine.env, machine.cwd)
            held(done, False, (0, 1))
            sourced(shell, done.stdout, tmp)
        if (tmp / "P").exists() or (machine.cwd / "P").exists():
            raise Broken("a command in a machine value ran")
    return case


def read_as(form: str, out: bytes) -> None:
    try:
        text = out.decode("utf-8")
    except UnicodeDecodeError:
        raise Broken(f"{form}: bytes that are not UTF-8 written raw") from None
    if form == "json":
        json.loads(text)
    elif form == "junit":
        try:
            expat.ParserCreate().Parse(out, True)
        except expat.ExpatError as error:
            raise Broken(f"junit: {error}") from None
    elif form == "prometheus":
        bad = [line for line in text.rstrip("\n").split("\n") if not PROM.fullmatch(line)]
        if bad:
            raise Broken(f"prometheus: {bad[0][:120]!r}")
    elif form == "github":
        for line in text.split("\n"):
            if line.startswith("::") and re.match(r"::(error|warning|notice)", line) is None and \
                    not line.startswith(("::group::", "::endgroup::")):
                raise Broken(f"github: a workflow command not ours: {line[:120]!r}")
    found = CONTROL.search(text.replace("\t", " "))
    if found and form not in ("json", "prometheus"):  # Prometheus' grammar: any character but \\, " and newline
        raise Broken(f"{form}: a raw control character {found.group()!r}")
    if form == "markdown":
        rows = [line for line in text.split("\n") if line.startswith("|")]
        widths = {line.replace("\\|", "").count("|") for line in rows}
        if len(widths) > 1 and any("<details" in line for line in rows):
            raise Broken("markdown: a table row cut open")


SHELL_ARGV = {"bash": ["bash", "--norc", "--noprofile"], "zsh": ["zsh", "-f"], "fish": ["fish", "--no-config"]}


def source_lines(text: str) -> list[str]:
    """The lines of fix's text plan under its `source` steps (up to each step's why:)."""
    lines, inside = [], False
    for line in text.split("\n"):
        if re.match(r"  \d+\. ", line):
            inside = re.match(r"  \d+\. source\b", line) is not None
        elif line.strip().startswith("why:"):
            inside = False
        elif inside and line.strip():
            lines.append(line.strip())
    return lines


def sourced(shell: str, out: bytes, tmp: Path) -> None:
    """fix --shell SHELL's text plan: no raw control character, and its environment lines read as SHELL reads them
    (bash, zsh, fish: sourced in the real shell; PowerShell: tests/powershell_model.py, after PowerShell's own
    tokenizer; cmd: each a `rem` line or a `set` line) without running anything a machine value holds."""
    text = out.decode("utf-8", "surrogateescape")
    found = CONTROL.search(text.replace("\t", " "))
    if found:
        raise Broken(f"fix --shell {shell}: a raw control character {found.group()!r}")
    lines = source_lines(text)
    if shell in SHELL_ARGV:
        if shutil.which(shell) is None:
            return
        script = tmp / f"fix.{shell}"
        script.write_bytes("\n".join(lines).encode("utf-8", "surrogateescape") + b"\n")
        done = subprocess.run([*SHELL_ARGV[shell], "-c", f"source {script}; echo SOURCED"], cwd=tmp,
                              capture_output=True, timeout=30, env={"PATH": "/usr/bin:/bin", "HOME": str(tmp)})
        if done.stdout != b"SOURCED\n" or done.stderr:  # fish's set answers its substitution's status: not an error
            raise Broken(f"fix --shell {shell}: sourcing its lines failed: {done.stderr[-160:]!r}")
    elif shell == "powershell":
        from tests.powershell_model import source

        try:
            source(lines, {})
        except ValueError as error:
            raise Broken(f"fix --shell powershell: {error}: {lines}") from None
    else:
        for line in lines:
            if not re.match(r"(?i)(rem |set \")", line) or (line.lower().startswith("set") and "touch P" in line
                                                              and "^" not in line):
                raise Broken(f"fix --shell cmd: a line cmd would run otherwise: {line[:120]!r}")


def cases() -> dict[str, tuple[str, Callable[[Path], None]]]:
    found: dict[str, tuple[str, Callable[[Path], None]]] = {}
    for name, reader in READERS.items():
        for kind in SPOILS:
            found[f"{name}: {kind}"] = ("readers", reader_case(reader, kind, name))
    found["install killed"] = ("writers killed", install_kill_case("install"))
    found["uninstall killed"] = ("writers killed", install_kill_case("uninstall"))
    for shell in RC_FILES:
        found[f"--install-completion {shell} killed"] = ("writers killed", completion_kill_case(shell))
    found["cache writer killed"] = ("writers killed", cache_kill_case)
    for where in ("GPU name", "driver version", "cuDNN folder", "CUDA_VISIBLE_DEVICES", "PYTORCH_CUDA_ALLOC_CONF",
                  "torch's version"):
        for name, text in VALUES.items():
            if where == "cuDNN folder" and name == "Prometheus line":
                text = text.replace("\n", " ")
            found[f"{where}: {name}"] = ("printed strings", output_case(where, text))
    return found


def main() -> int:
    global PACKAGE, KILLS
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--package", type=Path, help="the checkout whose cudnn_doctor is judged")
    parser.add_argument("--only", help="run only the cases whose name holds this")
    parser.add_argument("--kills", type=int, default=KILLS, help="kill points per writer (seeded)")
    options = parser.parse_args()
    PACKAGE = options.package.resolve() if options.package else None
    KILLS = options.kills
    if shutil.which("strace") is None:
        print("strace is needed for the writers' kill points", file=sys.stderr)
    started = time.monotonic()
    chosen = {name: case for name, case in cases().items() if not options.only or options.only in name}
    tally: dict[str, list[int]] = {}
    for name, (group, case) in chosen.items():
        began = time.monotonic()
        with tempfile.TemporaryDirectory() as tmp:
            try:
                case(Path(tmp))
                said = None
            except Broken as error:
                said = str(error)
            except Exception as error:  # a case that cannot even be judged is broken
                said = f"{type(error).__name__}: {str(error)[:160]}"
        counts = tally.setdefault(group, [0, 0])
        counts[1] += 1
        if said:
            print(f"BROKEN {name}: {said} ({time.monotonic() - began:.1f} s)", flush=True)
        else:
            counts[0] += 1
    for group, (good, total) in tally.items():
        print(f"{group}: {good}/{total} held")
    broken = sum(total - good for good, total in tally.values())
    print(f"{len(chosen)} cases, {broken} broken, {time.monotonic() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
