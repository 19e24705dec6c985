"""Round twenty's reliability classes (issue 43; found by benchmarks/redteam_r24.py over the doctor's own start in a
hostile environment and the surfaces of session fifteen, each a test that failed before its fix), and a sample of that
red-team in CI."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests import redteam_sample
from tests.conftest import ROOT, Machine

linux_only = pytest.mark.skipif(sys.platform != "linux", reason="the loader of Linux, memory files")


def _redteam():  # type: ignore[no-untyped-def]
    return redteam_sample.load("redteam_r24")


def _started(machine: Machine, *args: str) -> subprocess.CompletedProcess[bytes]:
    """The doctor as its console script starts it (python -P -m), with the machine's environment as a program
    has it (not buffered otherwise than Python buffers a pipe)."""
    env = {k: v for k, v in machine.env.items() if k != "PYTHONUNBUFFERED"}
    return subprocess.run([sys.executable, "-P", "-m", "cudnn_doctor", *args], env=env, cwd=machine.cwd,
                          capture_output=True, timeout=60, stdin=subprocess.DEVNULL)


# --- the doctor's own start: what a start-up hook printed ---------------------------------------------------------------

@linux_only
@pytest.mark.parametrize("printed", [b"hello from a hook\n", b"\x1b[2J\x1b]0;title\x07\xff\xfe no newline"])
def test_what_a_start_up_hook_printed_is_said_and_escaped(machine: Machine, tmp_path: Path, printed: bytes) -> None:
    """A sitecustomize on PYTHONPATH that prints as Python starts prints in every Python program: its text (which the
    doctor takes out of its own output, so that the JSON stays one object) is said on standard error, escaped (a
    hook's terminal escapes drive no terminal), with one line naming the hook. Before, the text went to standard
    error raw, escapes and all, and nothing said where it came from."""
    hooks = tmp_path / "hooks"
    hooks.mkdir()
    (hooks / "sitecustomize.py").write_text(f"import sys\nsys.stdout.buffer.write({printed!r})\n")
    machine.env["PYTHONPATH"] = f"{hooks}{os.pathsep}{machine.env['PYTHONPATH']}"
    done = _started(machine, "check", "--json")
    assert done.returncode in (0, 1), done.stderr[-400:]
    json.loads(done.stdout)  # one object, the hook's text not in it
    said = done.stderr.decode("utf-8", "replace")
    assert "\x1b" not in said and "\ufffd" not in said, said
    assert f"loaded here: {hooks / 'sitecustomize.py'}) printed {len(printed)} bytes" in said, said
    assert ("\\x1b[2J" if b"\x1b" in printed else "hello from a hook") in said, said


@linux_only
def test_a_hook_that_printed_nothing_is_not_said(machine: Machine, tmp_path: Path) -> None:
    hooks = tmp_path / "hooks"
    hooks.mkdir()
    (hooks / "sitecustomize.py").write_text("import os\n")
    machine.env["PYTHONPATH"] = f"{hooks}{os.pathsep}{machine.env['PYTHONPATH']}"
    done = _started(machine, "check", "--json")
    assert b"start-up hook" not in done.stderr and done.stdout.startswith(b"{"), done.stderr[-400:]


# --- the loader's variables: an entry it cannot load ------------------------------------------------------------------

@linux_only
@pytest.mark.parametrize(("variable", "entry", "words"), [
    ("LD_PRELOAD", "/nonexistent/libmissing.so", "cannot open shared object file"),
    ("LD_PRELOAD", "{tmp}", "cannot read file data"),  # a folder
    ("LD_AUDIT", "/nonexistent/libaudit.so", "cannot open shared object file"),
])
def test_a_preload_the_loader_refuses_is_seen_and_taken_out(machine: Machine, tmp_path: Path, variable: str,
                                                              entry: str, words: str) -> None:
    """An LD_PRELOAD (or LD_AUDIT) entry the loader cannot load: every program started here prints ld.so's 'ERROR:
    ld.so: object ... ignored.' on its standard error and runs without it. The bare start the doctor asks about a
    preload no row knows (probes/start_cost.py) answers in the loader's words: CD116, seen, a warning naming the entry;
    the plan takes it out. Before, nothing was said (the start cost the same, and took nothing)."""
    entry = entry.format(tmp=tmp_path)
    machine.env[variable] = entry
    report = machine.check_json()
    [said] = [f for f in report["findings"] if f["code"] == "CD116"]
    assert said["severity"] == "warning" and said["evidence"] == "seen" and said["subject"] == entry, said
    assert words in said["proof"] and "ERROR: ld.so: object" in said["detail"], said
    assert f"unset {variable}" in said["fix"], said["fix"]


def test_only_the_entries_asked_about_are_taken_from_the_loaders_words() -> None:
    """A preload that prints ld.so's refusal itself, naming another file, names nothing: only the entries the bare start
    was asked about are taken from the words on its standard error."""
    from cudnn_doctor.probes.start_cost import loader_refused

    forged = ("ERROR: ld.so: object '/etc/passwd' from LD_PRELOAD cannot be preloaded (forged): ignored.\n"
              "ERROR: ld.so: object '/opt/a.so' from LD_PRELOAD cannot be preloaded (invalid ELF header): ignored.\n")
    [said] = loader_refused(forged, ("/opt/a.so",))
    assert "invalid ELF header" in said and "'/opt/a.so'" in said and "passwd" not in said, said
    assert loader_refused(forged, ("/opt/b.so",)) == ()


# --- variables by the thousand ------------------------------------------------------------------------------------------

@linux_only
def test_a_refused_context_among_thousands_of_cuda_variables_is_named_and_few_are_spelled(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """CUDA's first context refused among 6,000 CUDA variables no row knows (a machine's, not a person's): the one that
    refuses it is still named by halving, and only the first MAX_SPELLED unknown names are matched with difflib for a
    misspelling of a documented one. Before, every one was (60,000 took check past a minute), and each halving's child
    environment searched the names left out as a list (20,000: 17 s)."""
    import difflib

    from cudnn_doctor.rules.process_env import MAX_SPELLED
    from tests.test_process_env import gpu_machine

    machine = Machine(tmp_path, in_process=True)
    gpu_machine(machine, tmp_path, gpus=1)
    machine.env.update({f"CUDA_R24_{n}": "1" for n in range(6000)})
    machine.env["CUDA_FAKE_CONTEXT_LIMIT"] = "500"
    asked = []
    matcher = difflib.get_close_matches
    monkeypatch.setattr(difflib, "get_close_matches", lambda word, *args, **kw: (asked.append(word),
                                                                                 matcher(word, *args, **kw))[1])
    report = machine.check_json()
    assert report["process"]["context_blamed"] == ["CUDA_FAKE_CONTEXT_LIMIT"], report["process"]["context_blamed"]
    assert 0 < len(asked) <= MAX_SPELLED, len(asked)


@linux_only
def test_thousands_of_cudnn_variables_no_row_knows_are_one_finding(machine: Machine, tmp_path: Path) -> None:
    """Variables of cuDNN's family that no row knows are each a warning (the reader named, --deep proves it) up to
    MAX_UNASKED_SAID; more are one warning that counts them and names the first few, and no plan step each: 30,000 a
    machine set were 30,000 findings (80 MB of JSON, a text report past five minutes)."""
    from cudnn_doctor.rules.process_env import MAX_UNASKED_SAID
    from tests.test_settings_read_files import torch_here

    torch_here(machine, tmp_path)
    machine.env.update({f"CUDNN_R24_{n}": "1" for n in range(3 * MAX_UNASKED_SAID)})
    report = machine.check_json()
    [said] = [f for f in report["findings"] if f["code"] == "CD416"]
    assert said["severity"] == "warning" and f"{3 * MAX_UNASKED_SAID} variables CUDNN_*" in said["detail"], said
    assert said["subject"].endswith(f"and {2 * MAX_UNASKED_SAID} more") and "--deep" in said["fix"], said
    assert len(said["values"]["unasked_variables"]) == 3 * MAX_UNASKED_SAID
    for n in range(MAX_UNASKED_SAID, 3 * MAX_UNASKED_SAID):
        del machine.env[f"CUDNN_R24_{n}"]
    report = machine.check_json()
    assert sorted(f["subject"] for f in report["findings"] if f["code"] == "CD416") == sorted(
        f"CUDNN_R24_{n}" for n in range(MAX_UNASKED_SAID))


@linux_only
def test_thousands_of_xla_flags_naming_files_are_one_finding(machine: Machine, tmp_path: Path) -> None:
    """XLA flags no row knows that name regular files: each a warning up to MAX_UNASKED_SAID, more one warning that
    counts them and keeps the one fix (XLA_FLAGS without them all, the known flags kept). 5,000 were 5,000 findings
    (11 MB of JSON, 3.8 MB of text), each with the same fix."""
    from cudnn_doctor.rules.process_env import MAX_UNASKED_SAID
    from tests.test_settings_read_files import torch_here

    torch_here(machine, tmp_path)
    flags = []
    for n in range(3 * MAX_UNASKED_SAID):
        (tmp_path / f"f{n}").write_text("x")
        flags.append(f"--xla_r24_{n}={tmp_path / f'f{n}'}")
    machine.env["XLA_FLAGS"] = " ".join([*flags, "--xla_gpu_autotune_level=2"])
    report = machine.check_json()
    [said] = [f for f in report["findings"] if f["code"] == "CD411"]
    assert said["severity"] == "warning" and f"{3 * MAX_UNASKED_SAID} flags no row" in said["detail"], said
    assert said["values"]["fix_value"] == "--xla_gpu_autotune_level=2", said["values"]
    assert len(said["values"]["unknown_file_flags"]) == 3 * MAX_UNASKED_SAID


def test_the_misspelling_index_holds_every_name_difflib_could_match() -> None:
    """The documented names indexed by the lengths a misspelling of them may have: the same as asking difflib's bound
    (2 * the shorter length / both lengths, at least MISSPELT) of every name, the boundary included (11 and 9)."""
    from cudnn_doctor.knowledge import environment
    from cudnn_doctor.rules.process_env import MISSPELT, _documented

    index = _documented("CUDA_")
    for known in (name for name in environment.rows() if name.startswith("CUDA_")):
        for length in range(1, 80):
            reachable = 2 * min(length, len(known)) / (length + len(known)) >= MISSPELT
            assert (known in index.get(length, ())) == reachable, (known, length)


# --- where no Python starts: README's one line --------------------------------------------------------------------------

NO_START = [("PYTHONHOME", "/nonexistent/python-home"), ("PYTHONIOENCODING", "bogus"), ("PYTHONUTF8", "2"),
            ("PYTHONMALLOC", "bogus"), ("PYTHONINTMAXSTRDIGITS", "1"), ("PYTHONHASHSEED", "bogus"),
            ("PYTHONPLATLIBDIR", "no-such-lib"), ("LD_TRACE_LOADED_OBJECTS", "1"), ("LD_DEBUG", "help")]


@linux_only
@pytest.mark.parametrize(("variable", "value"), NO_START)
def test_where_no_python_starts_readme_gives_the_line_to_run_instead(machine: Machine, variable: str,
                                                                     value: str) -> None:
    """Settings that stop every Python program (or every program the loader starts) before its first line: the doctor's
    own process cannot start, so no code of it can say why. Python (or ld.so) is asked that it indeed does not start;
    README names the setting with what the user sees and the one line to run instead, and that line answers."""
    env = {**machine.env, variable: value}
    bare = subprocess.run([sys.executable, "-c", "import os; os.write(1, b'STARTED')"], env=env,
                          capture_output=True, timeout=30)
    assert bare.stdout != b"STARTED", bare  # no program starts: the doctor's own process cannot
    line = f"env -u {variable} cudnn-doctor check"
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    row = next((r for r in text.splitlines() if r.startswith("| ") and f"`{line}`" in r), None)
    assert row is not None, f"README has no row giving `{line}`"
    assert variable in row.split("|")[1], row
    assert machine.check_json() is not None  # the line's environment: the variable left out


@linux_only
def test_with_a_python_variable_the_doctor_started_by_python_e_names_it_and_fix_unsets_it(machine: Machine,
                                                                                         tmp_path: Path) -> None:
    """README's other way: the doctor started by an interpreter that reads no PYTHON* variable (`python3 -E`) sees
    the variable; where a framework's Python stops with it, check names it (CD411) and fix's shell lines unset it."""
    from tests.test_settings_read_files import torch_here

    torch_here(machine, tmp_path)
    env = {**machine.env, "PYTHONHASHSEED": "bogus"}
    done = subprocess.run([sys.executable, "-E", "-m", "cudnn_doctor", "check", "--json"], env=env, cwd=ROOT,
                          capture_output=True, timeout=60)
    [said] = [f for f in json.loads(done.stdout)["findings"] if f["code"] == "CD411"]
    assert said["subject"] == "PYTHONHASHSEED" and said["severity"] == "error", said
    for shell, line in (("bash", "unset PYTHONHASHSEED"), ("fish", "set -e PYTHONHASHSEED")):
        done = subprocess.run([sys.executable, "-E", "-m", "cudnn_doctor", "fix", "--shell", shell], env=env, cwd=ROOT,
                              capture_output=True, timeout=60)
        assert line in done.stdout.decode(), done.stdout[-600:]


# --- a sample of the red-team in CI -------------------------------------------------------------------------------------

SAMPLED = ("Python's variables", "start-up hooks", "loader variables", "locale", "install state", "unknown settings")
SLOW = ("sleeps", "daemon", "30,000", "5,000", "2,000", "120 KB", "PYTHONPATH hiding")  # left to the whole run: seconds each


def quick(name: str, case: tuple) -> bool:  # type: ignore[type-arg]
    """The red-team's quick classes (a second or two each)."""
    return case[0] in SAMPLED and not any(word in name for word in SLOW)


@linux_only
@pytest.mark.integration
def test_a_seeded_sample_of_the_red_team_holds() -> None:
    """Four cases of benchmarks/redteam_r24.py (the classes of a second or two each), a seed of their own each day:
    over time the sample covers the table."""
    redteam_sample.assert_holds("redteam_r24", quick, 4)
