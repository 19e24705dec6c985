"""Install and uninstall under signals and races, at random instants (issue 43, class 7).

Each trial takes a fresh prefix holding a hand-copied cuDNN 7.6.0, and does one of:

- `signal`: an install gets SIGINT, SIGTERM or SIGHUP at a random instant of its run;
- `double`: an install gets Ctrl-C, then a second Ctrl-C a moment later (inside its rollback, often);
- `kill`: an install is SIGKILLed at a random instant; the next command must finish the job;
- `race`: two installs of two releases into the one prefix, started a random moment apart.

and then holds these, whatever the instant:

- a run that says the prefix is "as it was" leaves it byte for byte as it was (checked the moment it ends);
- a run that ends 0 leaves one complete install, every file as its manifest records;
- the loser of a race changes nothing and says another install is changing the prefix (CD510);
- after the uninstalls that follow (each install recorded undone, newest first), the prefix is as it was
  before the trial, its contents byte for byte (a journal left by a kill included: recovered, and said).

The instants come from a seeded random generator, spread over the measured length of one install: the same
seed tries the same instants (the machine's speed moves them a little). Run:

    python benchmarks/install_stress.py --trials 300 --seed 43 --out RESULTS_FOLDER

It prints one line per failed trial and a summary, and writes RESULTS_FOLDER/install_stress.json. The test
suite runs a small sample of it (tests/test_install_stress.py)."""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.install_helpers import CLI, clean_env, cudnn7_archive, cudnn7_prefix, snapshot_content  # noqa: E402

KINDS = ("signal", "double", "kill", "race")
SIGNALS = {"INT": signal.SIGINT, "TERM": signal.SIGTERM, "HUP": signal.SIGHUP}


@dataclass
class Trial:
    number: int
    kind: str
    delay_s: float
    how: str = ""
    exits: list[int] = field(default_factory=list)
    failure: str | None = None


def _start(args: list[str], env: dict[str, str]) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-c", CLI, *args], env=env, cwd=str(REPO), stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _without_state(snapshot: dict[str, tuple]) -> dict[str, tuple]:  # type: ignore[type-arg]
    return {k: v for k, v in snapshot.items() if not k.startswith(".cudnn-doctor")}


def _complete_as_recorded(prefix: Path) -> str | None:
    """Why PREFIX is not one complete install as its newest manifest records, or None."""
    from cudnn_doctor.install.manifest import read_records

    records = read_records(prefix)
    if not records:
        return "no manifest"
    for written in records[-1].files:
        path = prefix / written.path
        if written.kind == "symlink":
            ok = path.is_symlink() and os.readlink(path) == written.target
        else:
            ok = not path.is_symlink() and path.is_file() and \
                hashlib.sha256(path.read_bytes()).hexdigest() == written.sha256
        if not ok:
            return f"{written.path} is not as recorded"
    return None


def _uninstall_all(prefix: Path, env: dict[str, str]) -> str | None:
    """Every install recorded undone, newest first; why not, or None. A journal left behind (a kill) is recovered
    by the first uninstall, which says so."""
    journal = prefix / ".cudnn-doctor" / "journal.json"
    try:  # a run killed while it moved the user's files: the next one must say it put them back
        left = json.loads(journal.read_text()).get("phase") == "applying"
    except (OSError, ValueError):
        left = False
    for _ in range(4):
        done = subprocess.run([sys.executable, "-c", CLI, "uninstall", "--prefix", str(prefix), "--yes", "--json"],
                              env=env, cwd=str(REPO), stdin=subprocess.DEVNULL, capture_output=True, text=True,
                              timeout=120)
        if done.returncode != 0:
            return f"uninstall exited {done.returncode}: {done.stderr.strip()[-300:]}"
        result = json.loads(done.stdout)["result"]
        if left and not any("interrupted" in note for note in result.get("notes", [])):
            return f"the uninstall after a kill did not say it finished an interrupted run: {result.get('notes')}"
        left = False
        if result["status"] == "nothing-to-do":
            return None
    return "uninstall never reached nothing-to-do"


def _judge_one(process: subprocess.Popen[str], prefix: Path, before: dict[str, tuple]) -> str | None:  # type: ignore[type-arg]
    """What a run that ended said against what it left, the moment it ended."""
    _out, err = process.communicate(timeout=120)
    now = snapshot_content(prefix)
    if process.returncode in (1, -signal.SIGINT) and "KeyboardInterrupt" in err and "cudnn-doctor:" not in err:
        # the signal came while the interpreter started and loaded the doctor's first module, before the doctor's
        # handlers were in place (its first statement installs them): Python's own message; nothing has changed
        return None if _without_state(now) == before else "signalled before it began, yet the prefix changed"
    if "Traceback" in err or "internal error" in err:
        return f"exit {process.returncode}: {err.strip()[-300:]}"
    if process.returncode == 0:
        return _complete_as_recorded(prefix)
    if process.returncode in (128 + signal.SIGINT, 128 + signal.SIGTERM, 128 + signal.SIGHUP) and \
            (prefix / ".cudnn-doctor" / "journal.json").exists():
        return "a run stopped by a signal left its journal: it must roll back at once"
    if "as it was" in err and _without_state(now) != before:
        changed = sorted(set(_without_state(now).items()) ^ set(before.items()))[:3]
        return f"said 'as it was' but the prefix differs: {changed}"
    if process.returncode == 1 and "CD510" in err:
        return None if _without_state(now) == before else "a CD510 loser changed the prefix"
    return None


def run_trial(number: int, rng: random.Random, work: Path, archives: tuple[Path, Path], length_s: float) -> Trial:
    kind = rng.choice(KINDS)
    trial = Trial(number, kind, round(rng.uniform(0.0, length_s), 3))
    root = work / f"t{number}"
    root.mkdir()
    prefix = cudnn7_prefix(root / "cuda")
    env = clean_env(root)
    before = snapshot_content(prefix)
    install = ["install", "--prefix", str(prefix), "--yes"]
    try:
        if kind == "race":
            first = _start([*install, "--from", str(archives[0])], env)
            time.sleep(trial.delay_s / 4)
            second = _start([*install, "--from", str(archives[1])], env)
            outcomes = []
            for process in (first, second):
                _out, err = process.communicate(timeout=120)
                outcomes.append((process.returncode, err))
            trial.exits = [code for code, _ in outcomes]
            if 0 not in trial.exits:
                trial.failure = f"neither install of the race finished: {[e[-200:] for _, e in outcomes]}"
            for code, err in outcomes:
                if code not in (0,) and not (code == 1 and "CD510" in err and "changing" in err):
                    trial.failure = f"a loser exited {code} without saying another install is changing it: {err[-300:]}"
            if trial.failure is None:
                trial.failure = _complete_as_recorded(prefix)
        else:
            process = _start([*install, "--from", str(archives[0])], env)
            time.sleep(trial.delay_s)
            if kind == "kill":
                trial.how = "KILL"
                process.send_signal(signal.SIGKILL)
                process.communicate(timeout=120)
            elif kind == "double":
                trial.how = "INT,INT"
                process.send_signal(signal.SIGINT)
                time.sleep(rng.uniform(0.0, 0.3))
                if process.poll() is None:
                    process.send_signal(signal.SIGINT)
                trial.failure = _judge_one(process, prefix, before)
            else:
                trial.how = rng.choice(list(SIGNALS))
                process.send_signal(SIGNALS[trial.how])
                trial.failure = _judge_one(process, prefix, before)
            trial.exits = [process.returncode]
        if trial.failure is None:
            trial.failure = _uninstall_all(prefix, env)
        if trial.failure is None and _without_state(snapshot_content(prefix)) != before:
            trial.failure = "after the uninstalls the prefix is not as it was"
        if trial.failure is None and (prefix / ".cudnn-doctor" / "journal.json").exists():
            trial.failure = "a journal is left after the uninstalls"
    except subprocess.TimeoutExpired:
        trial.failure = "a run did not end within 120 s"
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return trial


def measure_install(work: Path, archive: Path) -> float:
    root = work / "measure"
    root.mkdir()
    prefix = cudnn7_prefix(root / "cuda")
    started = time.monotonic()
    subprocess.run([sys.executable, "-c", CLI, "install", "--from", str(archive), "--prefix", str(prefix), "--yes"],
                   env=clean_env(root), cwd=str(REPO), stdin=subprocess.DEVNULL, capture_output=True, timeout=120)
    shutil.rmtree(root, ignore_errors=True)
    return time.monotonic() - started


def run(trials: int, seed: int, work: Path) -> dict[str, object]:
    """TRIALS trials from SEED in the folder WORK: the summary, with each failed trial."""
    (work / "a").mkdir(parents=True, exist_ok=True)
    (work / "b").mkdir(parents=True, exist_ok=True)
    archives = (cudnn7_archive(work / "a", 7605), cudnn7_archive(work / "b", 7603))
    length = measure_install(work, archives[0])
    rng = random.Random(seed)
    done = [run_trial(number, rng, work, archives, length) for number in range(trials)]
    failed = [asdict(t) for t in done if t.failure]
    return {"seed": seed, "trials": trials, "install_s": round(length, 3), "failed": len(failed),
            "by_kind": {kind: sum(1 for t in done if t.kind == kind) for kind in KINDS}, "failures": failed}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trials", type=int, default=300)
    parser.add_argument("--seed", type=int, default=43)
    parser.add_argument("--out", type=Path, required=True, help="folder for install_stress.json")
    options = parser.parse_args()
    options.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="cudnn-doctor-stress-") as work:
        summary = run(options.trials, options.seed, Path(work))
    for failure in summary["failures"]:  # type: ignore[attr-defined]
        print(f"trial {failure['number']} ({failure['kind']} {failure['how']} at {failure['delay_s']} s): "
              f"{failure['failure']}")
    print(f"{summary['trials']} trials (seed {summary['seed']}, one install {summary['install_s']} s), "
          f"{summary['failed']} failed; by kind {summary['by_kind']}")
    (options.out / "install_stress.json").write_text(json.dumps(summary, indent=2) + "\n")
    sys.exit(1 if summary["failed"] else 0)


if __name__ == "__main__":
    main()
