"""Round twenty-one's red-team (issue 43, helper r26): the surfaces this round added, as a hostile user, machine or
message would meet them.

1. explain's new readers (compat/status_codes.toml [[library_spelling]], compat/libraries.toml [[symbol_lookup]] and
   [version_gate], the symbol namespace reader's Markdown-mangled names): messages of 2 MB built to make each new
   pattern backtrack (runs of 40 package characters before '=' and 30 version characters, capitals split by '_' and
   ' ', lookup words before 200-character names), one line of 10 MB, a mangled name of 100 KB, nested Markdown
   emphasis, NUL, bytes not UTF-8, escapes and bidi controls beside what the readers answer, a status's number or a
   gated version in another script's digits (Arabic-Indic, fullwidth: '\\d' of Python's re takes them, int() reads
   them); through `explain -`, `--from-file` and `--json`;
2. the loading child started where a framework's cuDNN copy is of another release than it was built with
   (probes/collect.another_release_than_built): torch 2.5.1 built with cuDNN 9.1 beside a 9.0 copy, whose copy is a
   FIFO, a link to /dev/zero, a link loop, a sparse 8 GiB file, whose version.py is a FIFO, whose pin is in other
   digits, with an escape or a bidi control, 300 digits long, whose own preloading code (which the child runs) prints
   garbage or forged answers, is killed, exits early, hangs, leaves a daemon, closes its descriptors, floods stderr
   (round eighteen's hostile codes); under `check` (JSON and text), `check --deep`, `fix`; and under 32-64
   descriptors or 196-300 MB of address space, just above the floors limits.py starts under (each batch's first
   children now start in its constructor: a limit is met earlier);
2b. the first-preload chain (rules/chains.first_preload): LD_PRELOAD of another release's cuDNN sub-library, its
   folder named with a newline and $(...), an escape and a bidi control, a backtick, quotes and ';', bytes not UTF-8,
   whose path every finding that follows from it now quotes; check's text, JSON, markdown and github formats, fix
   --json and fix --shell bash (its lines sourced in bash, nothing in the name run);
3. records (cudnn_doctor/records.py, the shared __init__ and frozen __setattr__): every record of the package pickled
   (protocols 0 and 5), copied, deep-copied and replaced equal to itself and still frozen where it was; a class that
   dataclass refuses (a frozen record made from plain ones, a plain one from frozen ones) refused, one it makes (a
   frozen record from a frozen one) made; a keyword-only field given by position refused, an InitVar handed to
   __post_init__;
4. compat patterns: every regular expression of compat/*.toml (304) compiled as its reader compiles it: none matches
   the empty string, none nests an unbounded repeat inside another unless each turn of the outer begins with a
   character the inner cannot take (steps counted by the pattern's structure, nothing timed).

A case holds when each command ends within its ceiling (explain: 10 s on a 2 MB message, what README's "at most 2 MB
of it is read" bounds; check: 60 s) and 1 GiB, with no traceback or internal error, an exit code of its contract, one
JSON object where --json, and no raw control character or bidi control in what it prints (escaped as the
output's own format escapes it).

Usage: python benchmarks/redteam_r26.py [--package DIR] [--only TEXT] [--list]
  Prints each broken case, then a line per class `CLASS: H/T held` and `N cases, B broken, T s`.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import redteam_r21 as r21  # noqa: E402
import redteam_r22 as r22  # noqa: E402
from redteam_r22 import Broken, held  # noqa: E402

from tests.conftest import Machine  # noqa: E402

EXPLAIN_CEILING_S = 10.0
LINE = 4096
RAW = re.compile(rb"[\x00-\x08\x0b-\x1f\x7f]|\xe2\x80[\xaa-\xae]|\xe2\x81[\xa6-\xa9]|\xe2\x80\x8f|\xe2\x80\x8e")


def _lines(unit: str, tail: str, total: int = 2_000_000) -> bytes:
    line = (unit * (LINE // len(unit) + 1))[:LINE - len(tail) - 1] + tail
    return ("\n".join([line] * (total // LINE)) + "\n").encode()


HOSTILE = "\x1b]0;pwn\x07 \x1b[31m \u202e\u2066 \x00 `id` $(id) | <b>"
MESSAGES: dict[str, Callable[[], bytes]] = {
    "version gate: 40 package characters, '==', 30 version characters, over and over": lambda: _lines(
        "a" * 40 + "==" + "1" * 30 + " ", " not compatible with"),
    "version gate: the same before ' too new' with '='": lambda: _lines("a" * 40 + "=" + "1" * 30 + " ", " too new"),
    "version gate: 'is not compatible with' and 40 package characters, over and over": lambda: _lines(
        "is not compatible with " + "a" * 40 + " v", " x"),
    "version gate answered beside escapes, bidi, NUL and shell syntax": lambda: (
        f"Torch = 2.6.0+cu124 too new! {HOSTILE}\n").encode() + b"\xff\xfe\n",
    "version gate: a 10 MB line": lambda: b"Torch = 2.6.0 too new! " + b"a" * 10_000_000 + b"\n",
    "library spelling: status words in capitals split by '_' and ' ', over and over": lambda: _lines(
        "CUBLAS_STATUS_NOT_SUPPORTED_", " cublasLtMatmul"),
    "library spelling: capitals of 21 characters each": lambda: _lines("A" * 21 + " ", " cublas"),
    "library spelling: a status's number after 'cudnn_status', 10^5 times": lambda: b"cudnn_status: 3 " * 100_000,
    "library spelling answered beside escapes, bidi, NUL and shell syntax": lambda: (
        f"cublasLtMatmul failed: CUBLAS STATUS NOT SUPPORTED {HOSTILE}\n").encode(),
    "symbol lookup: lookup words before 200-character names, over and over": lambda: _lines(
        "cannot load symbol cudnn" + "a" * 200 + " ", " x"),
    "symbol lookup: the words 10^5 times, spaces between": lambda: b"Unable  to   find symbol " * 100_000,
    "symbol lookup answered beside escapes, bidi, NUL and shell syntax": lambda: (
        f"Invalid handle. Cannot load symbol cublasLtCreate{HOSTILE}\n").encode() + b"\xc3\x28\n",
    "mangled name of 100 KB after Markdown's emphasis": lambda: (
        b"undefined symbol: *ZNK3c10" + b"17SymbolicShapeMeta" * 5300 + b"\n"),
    "nested Markdown emphasis, 10^5 turns": lambda: b"undefined symbol: " + b"***_" * 100_000 + b"*ZNK3c10Foo\n",
    "mangled names after '*', 10^5 of them": lambda: b"undefined symbol: *ZNK3c10x " * 100_000,
    "bytes not UTF-8 and NUL around every new reader's words": lambda: (
        b"\xff\xfeTorch = 2.6\x00 too new \xc0\xafcannot load symbol cudnnCreate\x00 CUDNN_STATUS\xffBAD_PARAM\n" * 20000),
}
# a number or version in another script's digits ('٣', fullwidth '３'): no program prints one, so nothing is read of it
# (the answer, text or JSON, never names what an ASCII digit there would give)
ODD_DIGITS: dict[str, tuple[bytes, str]] = {
    "a cuDNN status's number in Arabic-Indic digits": (
        "CUDNN error: cudnn_status: \u0663 in cudnnConvolutionForward\n".encode(), "CD316"),
    "a cuBLAS status's number in fullwidth digits": ("cublasLtMatmul: cublas_status: \uff11\uff15\n".encode(), "CD211"),
    "a version gate's version in Arabic-Indic digits": (
        "xformers 0.1 is not compatible with torch \u0662.\u0666\n".encode(), "CD410"),
    "a version gate's version in fullwidth digits": ("Torch = \uff12.6.0 too new!\n".encode(), "CD410"),
}
WAYS = {"--from-file": ["--from-file"], "-": ["-"], "--json": ["--json", "--from-file"]}


def explain_case(message: Callable[[], bytes], way: str, unsaid: str | None = None) -> Callable[[Path], None]:
    """explain (WAY) of MESSAGE; where UNSAID, a finding the answer must not name."""
    def case(tmp: Path) -> None:
        data = message()
        path = tmp / "message.log"
        path.write_bytes(data)
        args = ["explain", "--offline-only", *WAYS[way]]
        if way != "-":
            args.append(str(path))
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(tmp), "LANG": "C.UTF-8"}
        done = r22.doctor(args, env, tmp, EXPLAIN_CEILING_S, stdin=data if way == "-" else None)
        held(done, way == "--json")
        found = RAW.search(done.stdout)
        if found:
            raise Broken(f"a raw control or bidi character {found.group()!r} in what it printed")
        if unsaid and unsaid.encode() in done.stdout:
            raise Broken(f"{unsaid} read from digits no program prints: {done.stdout[:160]!r}")
    return case


# --- 2. the loading child started for a copy of another release than built ---------------------------------------

def _fifo(path: Path) -> None:
    path.unlink()
    os.mkfifo(path)


def _link(target: str) -> Callable[[Path], None]:
    def spoil(path: Path) -> None:
        path.unlink()
        path.symlink_to(target)
    return spoil


def _loop(path: Path) -> None:
    path.unlink()
    path.symlink_to(path.name + ".other")
    (path.parent / (path.name + ".other")).symlink_to(path.name)


def _sparse(path: Path) -> None:
    with open(path, "r+b") as file:
        file.truncate(8 << 30)


COPY_SPOILS: dict[str, Callable[[Path], None]] = {
    "a FIFO": _fifo, "a link to /dev/zero": _link("/dev/zero"), "a link loop": _loop, "a sparse 8 GiB file": _sparse,
}
PINS = {
    "in Arabic-Indic digits": "nvidia-cudnn-cu12==9.\u0661.0.70",
    "with an escape": "nvidia-cudnn-cu12==9.1\x1b[31m.0.70",
    "300 digits long": "nvidia-cudnn-cu12==9." + "1" * 300,
    "in superscript digits": "nvidia-cudnn-cu12==\u00b9.1.0",
    "with a bidi control": "nvidia-cudnn-cu12==9.1\u202e.0.70",
}
COMMANDS = {"check": ["check", "--json"], "check (text)": ["check"], "check --deep": ["check", "--deep", "--json"], "fix": ["fix", "--json"]}


def skew_case(command: str, spoil: Callable[[Path], None] | None = None, pin: str | None = None,
              version_fifo: bool = False, preload: str | None = None,
              limit: list[str] | None = None) -> Callable[[Path], None]:
    """COMMAND on a machine whose torch 2.5.1 (built with cuDNN 9.1) finds a cuDNN 9.0 in its wheel folder (the
    loading child then runs in plain check too), spoiled by SPOIL (the copy), PIN, a FIFO for version.py, or torch's
    own preloading code running PRELOAD first (round eighteen's hostile preloading codes, benchmarks/redteam_r22.py)."""
    def case(tmp: Path) -> None:
        from tests.test_frameworks import install_torch, python_env, real_python_sees
        from tests.test_loading import TORCH_INIT
        from tests.test_process_env import gpu_machine

        machine = Machine(tmp)
        gpu_machine(machine, tmp, gpus=1)
        site = python_env(machine, tmp)
        install_torch(site, cudnn=90000, **({"pin": pin} if pin else {}))
        head = "def _preload_cuda_lib(lib_folder, lib_name, required=True):\n"
        body = "".join(f"    {line}\n" for line in (preload or "").split("\n") if line)
        (site / "torch" / "__init__.py").write_text(TORCH_INIT.replace(head, head + body, 1))
        real_python_sees(site, tmp)
        if spoil is not None:
            spoil(site / "nvidia" / "cudnn" / "lib" / "libcudnn.so.9")
        if version_fifo:
            _fifo(site / "torch" / "version.py")
        done = r22.doctor(COMMANDS[command], machine.env, machine.cwd, r22.CEILING_S,
                          prefix=["prlimit", *limit] if limit else None)
        report = held(done, command != "check (text)", (0, 1, 2))
        if limit and done.returncode == 2 and "limit" not in (json.dumps(report) + done.stderr.decode(
                "utf-8", "replace")).lower():
            raise Broken(f"exit 2 under {limit} without naming a limit: {done.stderr[-200:]!r}")
        found = RAW.search(done.stdout)
        if found:
            raise Broken(f"a raw control or bidi character {found.group()!r} in what it printed")
    return case


# --- 2b. the first-preload chain (rules/chains.first_preload): the preloaded entry's path in every output ------------

PRELOAD_FOLDERS = {
    "a newline and $(...)": "cudnn-90000\n$(touch${IFS}PWNED)",
    "an escape and a bidi control": "cudnn-90000\x1b[31m\u202e",
    "a backtick, quotes and a semicolon": "cudnn-90000`touch${IFS}PWNED`';\"x",
    "bytes not UTF-8": b"cudnn-90000\xff\xfe",
}
CHAIN_COMMANDS = {"check": ["check"], "check --json": ["check", "--json"],
                  "check --format markdown": ["check", "--format", "markdown"],
                  "check --format github": ["check", "--format", "github"], "fix --json": ["fix", "--json"],
                  "fix --shell bash": ["fix", "--shell", "bash"]}


def preload_chain_case(folder: str | bytes, command: str) -> Callable[[Path], None]:
    """LD_PRELOAD of another release's libcudnn_adv.so.9 beside torch's 9.1 (CD317 the one error, what follows from
    it said to follow from that entry: its path in the detail of each), the folder named with FOLDER."""
    def case(tmp: Path) -> None:
        from tests.fakes.build import fake_cudnn
        from tests.test_frameworks import CUDNN9, install_torch, python_env
        from tests.test_process_env import gpu_machine

        machine = Machine(tmp)
        gpu_machine(machine, tmp, gpus=1)
        install_torch(python_env(machine, tmp))
        name = os.fsdecode(folder) if isinstance(folder, bytes) else folder
        other = tmp / name
        fake_cudnn(other, version=90000, sublibraries=CUDNN9)
        machine.env["LD_PRELOAD"] = str(other / "libcudnn_adv.so.9")
        done = r22.doctor(CHAIN_COMMANDS[command], machine.env, machine.cwd, r22.CEILING_S)
        held(done, "--json" in command, (0, 1, 2))
        found = RAW.search(done.stdout)
        if found:
            raise Broken(f"a raw control or bidi character {found.group()!r} in what it printed")
        if command == "fix --shell bash":
            r21.sourced("bash", done.stdout, tmp)
        if any(path.name == "PWNED" for path in tmp.rglob("PWNED")):
            raise Broken("a command in the folder's name ran")
    return case


# --- 3. records, 4. compat patterns: run in the judged package's own Python ---------------------------------------

RECORDS = r'''
import copy, dataclasses, importlib, inspect, pickle, sys
from cudnn_doctor.records import record
bad, made = [], 0
for name in ("cudnn_doctor.model", "cudnn_doctor.child", "cudnn_doctor.probes.library_jobs", "cudnn_doctor.probes.context"):
    module = importlib.import_module(name)
    for cls in [c for c in vars(module).values() if inspect.isclass(c) and dataclasses.is_dataclass(c)
                and c.__module__ == name]:
        values = {f.name: None for f in dataclasses.fields(cls) if f.init and f.default is dataclasses.MISSING
                  and f.default_factory is dataclasses.MISSING}
        try:
            one = cls(**values)
        except Exception:
            continue
        made += 1
        for how, again in (("pickle 0", lambda o: pickle.loads(pickle.dumps(o, 0))),
                           ("pickle 5", lambda o: pickle.loads(pickle.dumps(o, 5))), ("copy", copy.copy),
                           ("deepcopy", copy.deepcopy), ("replace", dataclasses.replace)):
            other = again(one)
            if type(other) is not cls or other != one:
                bad.append(f"{cls.__name__}: {how} not equal")
            if cls.__dataclass_params__.frozen:
                try:
                    setattr(other, dataclasses.fields(cls)[0].name, 1)
                    bad.append(f"{cls.__name__}: {how} no longer frozen")
                except dataclasses.FrozenInstanceError:
                    pass
for frozen_base, frozen in ((False, True), (True, False)):
    @record(frozen=frozen_base)
    class Base:
        x: int
    try:
        record(frozen=frozen)(type("Sub", (Base,), {"__annotations__": {"y": "int"}}))
        bad.append(f"a {'frozen' if frozen else 'plain'} record made from a {'frozen' if frozen_base else 'plain'} one")
    except TypeError:
        pass
@record(frozen=True)
class Root:
    x: int
try:  # what dataclass makes: a frozen record from a frozen one, frozen
    child = record(frozen=True)(type("Child", (Root,), {"__annotations__": {"y": "int"}}))(1, 2)
    try:
        child.y = 3
        bad.append("a frozen record made from a frozen one not frozen")
    except dataclasses.FrozenInstanceError:
        pass
except TypeError as error:
    bad.append(f"a frozen record made from a frozen one refused: {error}")
@record
class Keyword:
    x: int
    _: dataclasses.KW_ONLY
    y: int = 0
try:
    Keyword(1, 2)
    bad.append("a keyword-only field taken by position")
except TypeError:
    pass
@record
class Handed:
    x: int
    z: dataclasses.InitVar[int] = 5
    def __post_init__(self, z):
        self.w = z
try:
    if Handed(1, 9).w != 9:
        bad.append("an InitVar not handed to __post_init__")
except TypeError as error:
    bad.append(f"an InitVar refused: {error}")
print(made, bad)
sys.exit(1 if bad or not made else 0)
'''

PATTERNS = r'''
import pathlib, re, sys, tomllib
from re import _compiler as compiler, _constants as constants, _parser as parser
from cudnn_doctor.explain.catalog import expand
KEYS = {"pattern", "patterns", "kernels", "version_pattern", "shown"}
REPEATS = {constants.MAX_REPEAT, constants.MIN_REPEAT} | ({constants.POSSESSIVE_REPEAT}
                                                         if hasattr(constants, "POSSESSIVE_REPEAT") else set())
def patterns(node, file):
    if isinstance(node, dict):
        for key, value in node.items():
            if key in KEYS:
                yield from ((file, p) for p in ([value] if isinstance(value, str) else value) if isinstance(p, str))
            else:
                yield from patterns(value, file)
    elif isinstance(node, list):
        for value in node:
            yield from patterns(value, file)
def repeats(items):
    for op, av in items:
        if op in REPEATS:
            yield op, av
            yield from repeats(av[2])
        elif op == constants.SUBPATTERN:
            yield from repeats(av[-1])
        elif op == constants.BRANCH:
            for branch in av[1]:
                yield from repeats(branch)
def first_literal(items):
    for op, av in items:
        return chr(av) if op == constants.LITERAL else first_literal(av[-1]) if op == constants.SUBPATTERN else None
def nested(tree):
    for _op, (_low, high, body) in repeats(tree.data):
        inner = [(op, av) for op, av in repeats(body) if av[1] == constants.MAXREPEAT]
        if high != constants.MAXREPEAT or not inner:
            continue
        start = first_literal(body)
        takes = [compiler.compile(parser.SubPattern(tree.state, [node])).search(start or "") for node in inner]
        if start is None or any(found and found.group() for found in takes):
            yield "an unbounded repeat inside an unbounded repeat whose turns can overlap"
bad, count = [], 0
for path in sorted(pathlib.Path("compat").glob("*.toml")):
    for file, pattern in patterns(tomllib.loads(path.read_text()), path.name):
        count += 1
        text = expand(pattern) if file == "errors.toml" else pattern
        compiled = re.compile(text, re.I | re.S if file == "errors.toml" else 0)
        if compiled.fullmatch("") is not None or any(m.start() == m.end() for m in compiled.finditer("zz zz")):
            bad.append(f"{file}: {pattern[:60]!r} matches the empty string")
        bad += [f"{file}: {pattern[:60]!r}: {why}" for why in nested(parser.parse(text))]
print(count, bad)
sys.exit(1 if bad or not count else 0)
'''


def python_case(code: str) -> Callable[[Path], None]:
    def case(tmp: Path) -> None:
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(tmp), "PYTHONPATH": r22.package()}
        done = subprocess.run([sys.executable, "-c", code], env=env, cwd=r22.package(), capture_output=True,
                              timeout=120)
        if done.returncode:
            said = (done.stdout + done.stderr).decode("utf-8", "replace").strip().splitlines()
            raise Broken(said[-1][:400] if said else f"exit {done.returncode}")
    return case


def cases() -> dict[str, tuple[str, Callable[[Path], None]]]:
    found: dict[str, tuple[str, Callable[[Path], None]]] = {}
    for name, message in MESSAGES.items():
        for way in WAYS:
            found[f"explain {way}: {name}"] = ("explain readers", explain_case(message, way))
    for name, (data, unsaid) in ODD_DIGITS.items():
        for way in WAYS:
            found[f"explain {way}: {name}"] = ("explain readers", explain_case(lambda data=data: data, way, unsaid))
    for command in COMMANDS:
        found[f"{command}: a framework's copy of another release than built"] = ("loading-child trigger",
                                                                                 skew_case(command))
        for name, spoil in COPY_SPOILS.items():
            found[f"{command}: that copy {name}"] = ("loading-child trigger", skew_case(command, spoil))
        found[f"{command}: torch/version.py a FIFO"] = ("loading-child trigger", skew_case(command, version_fifo=True))
    for name, pin in PINS.items():
        found[f"check: the pin {name}"] = ("loading-child trigger", skew_case("check", pin=pin))
    for name, code in r22.HOSTILE_PRELOADS.items():
        found[f"check: torch's preloading code {name}"] = ("loading-child trigger", skew_case("check", preload=code))
    # s25 starts each batch's first children in its constructor (wait_launched): a limit met there is met earlier
    # (limits.py refuses to start under 32 descriptors or 200,000 KiB: just above those floors, where children fail)
    for files in (32, 33, 34, 35, 36, 38, 40, 44, 48, 64):
        for command in ("check", "check --deep"):
            found[f"{command} under {files} descriptors"] = ("loading-child trigger",
                                                            skew_case(command, limit=[f"--nofile={files}"]))
    for megabytes in (196, 200, 205, 215, 230, 260, 300):
        found[f"check under {megabytes} MB of address space"] = (
            "loading-child trigger", skew_case("check", limit=[f"--as={megabytes << 20}"]))
    for name, folder in PRELOAD_FOLDERS.items():
        for command in CHAIN_COMMANDS:
            found[f"{command}: a preloaded sub-library of another release, its folder named with {name}"] = (
                "first-preload chain", preload_chain_case(folder, command))
    found["every record pickled, copied, replaced; refused classes refused"] = ("records", python_case(RECORDS))
    found["every compat pattern: no empty match, no overlapping nested repeat"] = ("compat patterns",
                                                                                  python_case(PATTERNS))
    return found


run_cases = r22.run_cases

if __name__ == "__main__":
    sys.exit(r22.main(cases, __doc__))
