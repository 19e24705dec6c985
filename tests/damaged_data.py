"""The doctor's own installed data damaged, one file at a time: a seeded generated family of cases (issue 43, the
doctor's own data). tests/test_damaged_data.py runs a sample of it; benchmarks/damaged_data.py runs as many as asked.

A case is (layout, file, damage, command). The layout is an installed wheel (the package with its data in
cudnn_doctor/_data/compat and a dist-info RECORD of every file's sha256, as pip writes it) or a source checkout
(compat/ beside the package, no RECORD). The file is one of compat/*.toml or compat/schema/*.schema.json; the
damage one of DAMAGES; the command one of COMMANDS. Each case runs the command once with the file damaged and
once more after the file is put back, both with the same (fresh) cache folder. It holds when:

- the damaged run ends in one line (one JSON object with --json) that names the damaged file and says to reinstall,
  exit 2 (code CD012), or answers exactly as the undamaged package does (a file that command does not need);
- never exit 3, never a traceback, never a hang (each run has a deadline);
- the run after the repair answers exactly as the undamaged package does (no poisoned cache).
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import random
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
COMPAT = ROOT / "compat"
HUGE = 17 << 20  # past the reader's 16 MiB

DAMAGES = ("invalid_syntax", "empty", "binary", "utf16", "latin1", "truncated", "fifo", "folder", "dangling_link",
           "link_loop", "mode_000", "huge", "wrong_type", "missing_key", "table_as_string")
# damages that leave bytes a reader could take for whole data where no RECORD holds the file (a source checkout):
# a file cut at a row's end is valid TOML that holds its schema; only the installed layout's RECORD tells
INSTALLED_ONLY = frozenset({"truncated"})

EXPLAIN_MESSAGE = "RuntimeError: cuDNN error: CUDNN_STATUS_NOT_INITIALIZED"
COMMANDS: dict[str, tuple[str, ...]] = {
    "check": ("check",),
    "check-json": ("check", "--json"),
    "check-deep": ("check", "--deep", "--json"),
    "compat": ("compat", "pytorch==2.5.0"),
    "compat-json": ("compat", "cudnn==9.1.0", "--json"),
    "explain": ("explain", EXPLAIN_MESSAGE),
    "explain-json": ("explain", EXPLAIN_MESSAGE, "--json"),
    "fix": ("fix",),
    "install-dry-run": ("install", "--dry-run", "--version", "9.19.0", "--cuda", "13", "--prefix", "{work}/prefix"),
    "fleet-merge": ("fleet", "merge", "{work}/node.json", "--json"),
    "bench-help": ("bench", "--help"),
    "image-help": ("image", "--help"),
}


def data_files() -> list[str]:
    """Every file of the data, relative to compat/."""
    return sorted([p.name for p in COMPAT.glob("*.toml")] + [f"schema/{p.name}" for p in COMPAT.glob("schema/*.json")])


@dataclass(frozen=True)
class Case:
    layout: str  # "installed" or "source"
    file: str  # relative to compat/
    damage: str
    command: str

    @property
    def name(self) -> str:
        return f"{self.layout}-{self.file.replace('/', '-')}-{self.damage}-{self.command}"


def every_case() -> list[Case]:
    return [Case(layout, file, damage, command) for layout in ("installed", "source") for file in data_files()
            for damage in DAMAGES for command in COMMANDS
            if layout == "installed" or damage not in INSTALLED_ONLY]


def sample(seed: int, count: int) -> list[Case]:
    cases = every_case()
    return random.Random(seed).sample(cases, min(count, len(cases)))


def _record_line(site: Path, path: Path) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(path.read_bytes()).digest()).rstrip(b"=").decode()
    return f"{path.relative_to(site).as_posix()},sha256={digest},{path.stat().st_size}"


def make_layout(where: Path, layout: str) -> Path:
    """A copy of the package in WHERE laid out as LAYOUT; returns its compat folder (the one the doctor reads)."""
    import compileall

    where.mkdir(parents=True, exist_ok=True)
    shutil.copytree(ROOT / "cudnn_doctor", where / "cudnn_doctor", ignore=shutil.ignore_patterns("__pycache__"))
    # compiled once here: every run is started with PYTHONDONTWRITEBYTECODE (the copy is left as made), so without
    # this each of the family's runs compiled the modules it imports again (about 0.25 CPU s a run)
    compileall.compile_dir(where / "cudnn_doctor", quiet=2, workers=1)
    if layout == "source":
        shutil.copytree(COMPAT, where / "compat")
        return where / "compat"
    data = where / "cudnn_doctor" / "_data" / "compat"
    shutil.copytree(COMPAT, data, ignore=shutil.ignore_patterns("*.md"))
    info = where / "cudnn_doctor-0.1.0.dist-info"
    info.mkdir()
    lines = [_record_line(where, path) for path in sorted(data.rglob("*")) if path.is_file()]
    (info / "RECORD").write_text("\n".join([*lines, f"{info.name}/RECORD,,"]) + "\n")
    return data


def _mutate_toml(text: str, damage: str, rng: random.Random) -> str:
    lines = text.splitlines(keepends=True)
    if damage == "wrong_type":  # a string value where the schema wants one: a number now
        places = [i for i, line in enumerate(lines) if re.match(r'^[a-z_]+ = "', line)]
        index = rng.choice(places)
        lines[index] = re.sub(r'= ".*', "= 7", lines[index].rstrip("\n"), count=1) + "\n"
        return "".join(lines)
    if damage == "missing_key":  # a row without its source (every row must cite one)
        places = [i for i, line in enumerate(lines) if re.match(r'^source = ".*"\s*$', line)]
        if not places:
            places = [i for i, line in enumerate(lines) if re.match(r'^[a-z_]+ = ".*"\s*$', line)]
        del lines[rng.choice(places)]
        return "".join(lines)
    # table_as_string: the rows of one array of tables renamed, its own name a string at the top
    names = sorted(set(re.findall(r"^\[\[([a-z_]+)\]\]", text, re.MULTILINE)))
    name = rng.choice(names)
    body = re.sub(rf"^\[\[{name}\]\]", f"[[{name}_renamed]]", text, flags=re.MULTILINE)
    first = re.search(r"^\[", body, re.MULTILINE)
    at = first.start() if first else len(body)
    return f'{body[:at]}{name} = "a string where a table is"\n{body[at:]}'


def _mutate_json(text: str, damage: str, rng: random.Random) -> str:
    if damage == "wrong_type":
        places = [m.start() for m in re.finditer(r'"type": "(object|array|string)"', text)]
        at = rng.choice(places)
        return text[:at] + '"type": 7' + text[text.index('"', text.index(":", at) + 3) + 1:]
    if damage == "missing_key":  # the schema's own "type" keyword of its top gone: valid JSON, a laxer schema
        return text.replace('"type": "object",', "", 1)
    at = text.index('"properties": {')
    return text[:at] + '"properties": "a string where a table is", "x": {' + text[at + len('"properties": {'):]


def damage_file(path: Path, damage: str, rng: random.Random) -> None:
    """PATH damaged as DAMAGE says (seeded by RNG)."""
    raw = path.read_bytes()
    if damage in ("fifo", "folder", "dangling_link", "link_loop"):
        path.unlink()
        if damage == "fifo":
            os.mkfifo(path)
        elif damage == "folder":
            path.mkdir()
        elif damage == "dangling_link":
            path.symlink_to(path.with_name(path.name + ".gone"))
        else:
            path.symlink_to(path.name)
        return
    if damage == "mode_000":
        path.chmod(0)
        return
    text = raw.decode("utf-8")
    new: bytes
    if damage == "invalid_syntax":
        new = raw + (b"\n[[[ not valid\n" if path.suffix == ".toml" else b"\n}{\n")
    elif damage == "empty":
        new = b""
    elif damage == "binary":
        new = rng.randbytes(4096)
    elif damage == "utf16":
        new = text.encode("utf-16")
    elif damage == "latin1":
        new = (text + ("# caf\u00e9\n" if path.suffix == ".toml" else "")).encode("latin-1", "replace")
        if path.suffix == ".json":
            new = new.replace(b'"title": "', b'"title": "caf\xe9 ', 1)
    elif damage == "truncated":
        new = raw[:rng.randrange(1, len(raw))]
    elif damage == "huge":
        new = raw + (b"#" if path.suffix == ".toml" else b" ") * HUGE
    else:
        new = (_mutate_toml(text, damage, rng) if path.suffix == ".toml" else _mutate_json(text, damage, rng)).encode()
    path.write_bytes(new)


def repair_file(path: Path, pristine: bytes) -> None:
    if path.is_symlink() or path.exists() and not path.is_dir():
        path.unlink()
    elif path.is_dir():
        path.rmdir()
    path.write_bytes(pristine)


@dataclass
class Outcome:
    exit_code: int
    stdout: str
    stderr: str
    timed_out: bool = False


def run(package: Path, work: Path, command: str, cache: Path, timeout: float = 60, as_user: Any = None) -> Outcome:
    """COMMAND of the package copy in PACKAGE, on the pretend machine WORK; AS_USER: a NobodyPython
    (tests/as_nobody.py) that runs it as user nobody."""
    args = [word.replace("{work}", str(work)) for word in COMMANDS[command]]
    env = {**machine_env(work, package, cache), "PYTHONDONTWRITEBYTECODE": "1"}
    argv = [sys.executable]
    if as_user is not None:
        argv = as_user.argv
        env["PYTHONPATH"] = os.pathsep.join([str(package), *as_user.pythonpath])
    try:
        done = subprocess.run([*argv, "-m", "cudnn_doctor", *args], capture_output=True,
                              text=True, env=env, cwd=work, timeout=timeout, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        return Outcome(-1, "", "", timed_out=True)
    return Outcome(done.returncode, done.stdout, done.stderr)


def _canonical(value: Any, key: str = "") -> Any:
    """VALUE with what differs between two runs of one package left out: timings, and the order of the libraries
    a child found mapped (the order of its address space, which ASLR changes each run)."""
    if isinstance(value, dict):
        return {k: _canonical(v, k) for k, v in value.items() if k != "timings_ms" and not k.endswith("_ms")}
    if isinstance(value, list):
        items = [_canonical(item) for item in value]
        return sorted(items, key=json.dumps) if key == "mapped" else items
    return value


def comparable(outcome: Outcome) -> tuple[int, str]:
    """The exit status and output, without what differs between two runs of the same package (timings)."""
    try:
        return outcome.exit_code, json.dumps(_canonical(json.loads(outcome.stdout)), sort_keys=True, indent=1)
    except ValueError:
        pass
    text = re.sub(r'"(total|probes|scan|frameworks|slowest_library_child|nvml_child|[a-z_]+_ms)": [0-9.]+', "T",
                  outcome.stdout)
    return outcome.exit_code, text


def prepare_work(work: Path) -> None:
    """The pretend machine every run of a case uses: an empty system root, a home, and an H100 behind gcc-built fakes
    of NVML, the CUDA driver and cuDNN 9.19 (tests/fakes) on LD_LIBRARY_PATH, so that check reads most tables."""
    from tests.fakes.build import fake_cudnn, fake_libcuda, fake_nvml

    for folder in (work / "root" / "etc", work / "home"):
        folder.mkdir(parents=True, exist_ok=True)
    if not (work / "driver").exists():
        fake_nvml(work / "driver", gpus=1)
        fake_libcuda(work / "driver", driver_cuda=13000, devices=1, compute_capability="9.0")
        fake_cudnn(work / "cudnn", version=91900, cudart=13000)


def machine_env(work: Path, package: Path, cache: Path) -> dict[str, str]:
    """The environment of every run on the pretend machine WORK."""
    return {"PATH": "/usr/bin:/bin:/usr/sbin:/sbin", "HOME": str(work / "home"), "LANG": "C.UTF-8",
            "COLUMNS": "200", "CUDNN_DOCTOR_SYSTEM_PREFIX": str(work / "root"), "CUDNN_DOCTOR_CACHE_DIR": str(cache),
            "CUDNN_DOCTOR_PROBE_TIMEOUT": "10", "PYTHONPATH": str(package),
            "LD_LIBRARY_PATH": f"{work / 'driver'}:{work / 'cudnn'}"}


def problems(case: Case, compat: Path, damaged: Outcome, repaired: Outcome, baseline: Outcome) -> list[str]:
    """What is wrong with a case's outcomes, in words: empty where it holds."""
    found: list[str] = []
    path = str(compat / case.file)
    for label, outcome in (("damaged", damaged), ("repaired", repaired)):
        if outcome.timed_out:
            found.append(f"{label}: no answer within the deadline (a hang)")
        if outcome.exit_code == 3 or "Traceback" in outcome.stderr:
            found.append(f"{label}: exit {outcome.exit_code}, {outcome.stderr.strip()[-600:]!r}")
    if comparable(repaired) != comparable(baseline):
        found.append(f"after the repair the answer differs from the undamaged package's (exit {repaired.exit_code},"
                     f" {repaired.stderr.strip()[-300:]!r})")
    if damaged.timed_out or comparable(damaged) == comparable(baseline):
        return found
    if damaged.exit_code != 2:
        found.append(f"damaged: exit {damaged.exit_code}, neither CD012 nor the usual answer: "
                     f"{damaged.stderr.strip()[-300:]!r}")
        return found
    lines = [line for line in damaged.stderr.splitlines() if line.strip()]
    if len(lines) != 1 or path not in lines[0] or "reinstall" not in lines[0]:
        found.append(f"damaged: not one line naming {path} with the reinstall: {damaged.stderr.strip()[-600:]!r}")
    if "--json" in COMMANDS[case.command]:
        try:
            answer = json.loads(damaged.stdout)
        except ValueError:
            found.append(f"damaged: --json printed no one JSON object: {damaged.stdout[:300]!r}")
        else:
            if answer.get("error", {}).get("code") != "CD012" or path not in answer["error"].get("message", ""):
                found.append(f"damaged: the JSON object is not CD012 naming the file: {damaged.stdout[:400]!r}")
    elif damaged.stdout.strip():
        found.append(f"damaged: printed on stdout besides the error: {damaged.stdout[:300]!r}")
    return found


class Family:
    """The packages (one per layout), their baselines per command, and a runner of cases, under WORK."""

    def __init__(self, work: Path) -> None:
        self.work = work
        prepare_work(work)
        self.compat = {layout: make_layout(work / layout, layout) for layout in ("installed", "source")}
        self.baselines: dict[tuple[str, str], Outcome] = {}
        self.count = 0

    def node_report(self) -> None:
        """WORK/node.json, the report `fleet merge` reads: one `check --json` of the undamaged package, run the first
        time a case of that command needs it (the suite's sample may hold none: a doctor's start saved)."""
        if not (self.work / "node.json").exists():
            node = run(self.work / "installed", self.work, "check-json", self.work / "cache-node")
            (self.work / "node.json").write_text(node.stdout)

    def baseline(self, layout: str, command: str) -> Outcome:
        if command == "fleet-merge":
            self.node_report()
        key = (layout, command)
        if key not in self.baselines:
            self.baselines[key] = run(self.work / layout, self.work, command, self.work / f"cache-base-{layout}")
        return self.baselines[key]

    def run_case(self, case: Case, seed: int) -> list[str]:
        compat = self.compat[case.layout]
        path = compat / case.file
        pristine = path.read_bytes()
        baseline = self.baseline(case.layout, case.command)
        self.count += 1
        cache = self.work / f"cache-{self.count}"
        try:
            damage_file(path, case.damage, random.Random(f"{seed}-{case.name}"))
            damaged = run(self.work / case.layout, self.work, case.command, cache)
        finally:
            repair_file(path, pristine)
        repaired = run(self.work / case.layout, self.work, case.command, cache)
        shutil.rmtree(cache, ignore_errors=True)
        return problems(case, compat, damaged, repaired, baseline)
