"""The doctor's own Python under the variables a CI runner or a user sets for their programs (issue 43): a seeded
generated family. tests/test_python_env.py runs a sample of it, benchmarks/python_env.py as many as asked.

A case is (settings, command): one to three of SETTINGS together, and a command of tests/damaged_data.COMMANDS.
It holds when the command answers as it does without them (the same exit and standard output, timings aside),
prints no warning and no traceback on standard error, and never waits: standard input is a pipe held open, so a
Python left at an interactive prompt (PYTHONINSPECT) would be a hang. Python's own refusals at start (an encoding it
does not know in PYTHONIOENCODING: "Fatal Python error", before any code of the doctor runs) are not the doctor's
to answer and are not among SETTINGS; README.md says so.
"""

from __future__ import annotations

import random
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from tests.damaged_data import COMMANDS, Outcome, comparable, machine_env, prepare_work

ROOT = Path(__file__).resolve().parents[1]

STARTUP = "print('PYTHONSTARTUP ran'); raise SystemExit(7)\n"  # read by an interactive Python only: never by ours

SETTINGS: tuple[tuple[str, str], ...] = (
    ("PYTHONWARNINGS", "error"),
    ("PYTHONWARNINGS", "error::DeprecationWarning"),
    ("PYTHONWARNINGS", "error::ResourceWarning"),
    ("PYTHONWARNINGS", "error::EncodingWarning"),
    ("PYTHONWARNINGS", "always"),
    ("PYTHONWARNDEFAULTENCODING", "1"),
    ("PYTHONDEVMODE", "1"),
    ("PYTHONOPTIMIZE", "1"),
    ("PYTHONOPTIMIZE", "2"),
    ("PYTHONHASHSEED", "0"),
    ("PYTHONHASHSEED", "4294967295"),
    ("PYTHONHASHSEED", "random"),
    ("PYTHONUTF8", "0"),
    ("PYTHONUTF8", "1"),
    ("PYTHONIOENCODING", "ascii"),
    ("PYTHONIOENCODING", "latin-1:strict"),
    ("PYTHONIOENCODING", "utf-16"),
    ("PYTHONIOENCODING", ":replace"),
    ("PYTHONIOENCODING", "cp1252:ignore"),
    ("PYTHONMALLOC", "debug"),
    ("PYTHONMALLOC", "malloc"),
    ("PYTHONTRACEMALLOC", "1"),
    ("PYTHONTRACEMALLOC", "25"),
    ("PYTHONNODEBUGRANGES", "1"),
    ("PYTHONSAFEPATH", "1"),
    ("PYTHONNOUSERSITE", "1"),
    ("PYTHONDONTWRITEBYTECODE", "1"),
    ("PYTHONINSPECT", "1"),
    ("PYTHONSTARTUP", "{work}/startup.py"),
    ("PYTHONFAULTHANDLER", "1"),
    ("PYTHONASYNCIODEBUG", "1"),
    ("PYTHONINTMAXSTRDIGITS", "640"),
    ("PYTHONBREAKPOINT", "0"),
    ("PYTHONCOERCECLOCALE", "0"),
    ("PYTHONPYCACHEPREFIX", "/proc/no-such-folder"),
    ("PYTHONUNBUFFERED", "1"),
    ("PYTHONPROFILEIMPORTTIME", "1"),
    ("PYTHONVERBOSE", "1"),
)


@dataclass(frozen=True)
class Case:
    settings: tuple[tuple[str, str], ...]
    command: str

    @property
    def name(self) -> str:
        words = "+".join(f"{name}={value}" for name, value in self.settings)
        return re.sub(r"[^A-Za-z0-9=+:.-]", "_", f"{words}-{self.command}")


def single_cases() -> list[Case]:
    return [Case((setting,), command) for setting in SETTINGS for command in COMMANDS]


def sample(seed: int, count: int) -> list[Case]:
    """COUNT cases of one to three settings (one variable at most once) and a command, drawn with SEED."""
    rng = random.Random(seed)
    cases: list[Case] = []
    while len(cases) < count:
        chosen: dict[str, str] = {}
        for _ in range(rng.randint(1, 3)):
            name, value = rng.choice(SETTINGS)
            chosen.setdefault(name, value)
        cases.append(Case(tuple(sorted(chosen.items())), rng.choice(sorted(COMMANDS))))
    return cases


def run(work: Path, command: str, settings: tuple[tuple[str, str], ...] = (), timeout: float = 60) -> Outcome:
    args = [word.replace("{work}", str(work)) for word in COMMANDS[command]]
    env = machine_env(work, ROOT, work / "cache")
    env.update({name: value.replace("{work}", str(work)) for name, value in settings})
    # standard input a pipe held open: a Python left at an interactive prompt would wait on it, a hang seen as one
    with subprocess.Popen([sys.executable, "-m", "cudnn_doctor", *args], stdin=subprocess.PIPE,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=work) as process:
        try:
            out, err = _wait(process, timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.communicate()
            return Outcome(-1, "", "", timed_out=True)
    return Outcome(process.returncode, _text(out, settings), _text(err, settings))


def _text(raw: bytes, settings: tuple[tuple[str, str], ...]) -> str:
    """RAW as text: UTF-8 where it is (the doctor writes its output so whatever the encoding asked: utf-16 output
    would be unreadable to the terminal and to the JSON reader alike), else in the encoding the settings ask."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        encoding = dict(settings).get("PYTHONIOENCODING", "").split(":")[0] or "utf-8"
        return raw.decode(encoding, "replace")


def _wait(process: subprocess.Popen[bytes], timeout: float) -> tuple[bytes, bytes]:
    """The output of PROCESS once it ends, its standard input left open (communicate() would close it)."""
    import threading

    chunks: dict[str, list[bytes]] = {"out": [], "err": []}

    def drain(stream: object, key: str) -> None:
        chunks[key].append(stream.read())  # type: ignore[attr-defined]

    readers = [threading.Thread(target=drain, args=(process.stdout, "out"), daemon=True),
               threading.Thread(target=drain, args=(process.stderr, "err"), daemon=True)]
    for reader in readers:
        reader.start()
    process.wait(timeout=timeout)
    for reader in readers:
        reader.join(timeout=10)
    return b"".join(chunks["out"]), b"".join(chunks["err"])


class Family:
    def __init__(self, work: Path) -> None:
        self.work = work
        prepare_work(work)
        (work / "startup.py").write_text(STARTUP)
        node = run(work, "check-json")
        (work / "node.json").write_text(node.stdout)
        self.baselines: dict[str, Outcome] = {}

    def baseline(self, command: str) -> Outcome:
        if command not in self.baselines:
            self.baselines[command] = run(self.work, command)
        return self.baselines[command]

    def run_case(self, case: Case) -> list[str]:
        outcome = run(self.work, case.command, case.settings)
        found: list[str] = []
        if outcome.timed_out:
            return ["no answer within the deadline (a hang: an interactive prompt, a child waiting)"]
        if "Traceback" in outcome.stderr or outcome.exit_code == 3:
            found.append(f"exit {outcome.exit_code}: {outcome.stderr.strip()[-700:]!r}")
        if re.search(r"\w+Warning\b", outcome.stderr):
            found.append(f"a warning on standard error: {outcome.stderr.strip()[-500:]!r}")
        if "PYTHONSTARTUP ran" in outcome.stdout + outcome.stderr:
            found.append("PYTHONSTARTUP's file was run")
        mine, usual = comparable(outcome), comparable(self.baseline(case.command))
        # check and fix judge the environment programs start in: a variable their answer names (a setting of the
        # report, a finding such as CD412 slow or CD417 a path unusable) is part of the machine, so there the answer
        # may differ by it, the exit not
        if case.command.startswith(("check", "fix")) and any(name in mine[1] for name, _ in case.settings):
            if mine[0] != usual[0]:
                found.append(f"exit {mine[0]} where it is {usual[0]} without the settings")
            return found
        if mine != usual and not _same_but_encoded(mine, usual, case.settings):
            found.append(f"another answer than without the settings: exit {mine[0]} (usually {usual[0]}), "
                         f"{_first_difference(mine[1], usual[1])}; stderr {outcome.stderr.strip()[-300:]!r}")
        return found


def _same_but_encoded(mine: tuple[int, str], usual: tuple[int, str], settings: tuple[tuple[str, str], ...]) -> bool:
    """The same answer written in an encoding that cannot hold every character (ascii, latin-1): each character it
    cannot write is replaced or escaped, nothing else differs."""
    encoding = dict(settings).get("PYTHONIOENCODING", "")
    if not encoding or mine[0] != usual[0]:
        return False
    # a character the encoding cannot hold, written as Python's backslashreplace writes it, as ? or dropped
    escaped = re.compile(r"\\(u[0-9a-fA-F]{4}|U[0-9a-fA-F]{8}|x[0-9a-fA-F]{2})|[^\x00-\x7f]|\?")
    return escaped.sub("", mine[1]) == escaped.sub("", usual[1])


def _first_difference(mine: str, usual: str) -> str:
    for index, (a, b) in enumerate(zip(mine, usual, strict=False)):
        if a != b:
            return f"at {index}: {mine[max(0, index - 60):index + 80]!r} vs {usual[max(0, index - 60):index + 80]!r}"
    return f"lengths {len(mine)} and {len(usual)}"
