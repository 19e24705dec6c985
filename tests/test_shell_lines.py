"""The lines a user sources set exactly the folder meant and run nothing, in each real shell.

Each line is written to a file and sourced by the real bash, zsh and fish (Debian's packages, installed by
.ci/run) started fresh with the variable unset, set but empty, or set; the environment the shell then exports
(`env -0`) must hold exactly the intended bytes, and no command hidden in a folder's name may have run (it
would create the file P in the shell's working folder). PowerShell is not packaged for Debian: its lines are
read by tests/powershell_model.py, a model of PowerShell's own tokenizer (CharTraits.IsSingleQuote and
Tokenizer.ScanStringLiteral of PowerShell/PowerShell), which accepts only the line forms the doctor writes.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from cudnn_doctor.plan.actions import EnvChange
from cudnn_doctor.plan.shell import command_line, env_lines
from tests import powershell_model
from tests.conftest import Machine
from tests.fakes.build import fake_cudnn, fake_nvml

SHELL_ARGV = {"bash": ["bash", "--norc", "--noprofile"], "zsh": ["zsh", "-f"], "fish": ["fish", "--no-config"]}
VARIABLE = "LD_LIBRARY_PATH"
CUDNN9 = ["libcudnn_graph", "libcudnn_ops", "libcudnn_cnn", "libcudnn_adv", "libcudnn_engines_precompiled",
          "libcudnn_engines_runtime_compiled", "libcudnn_heuristic"]

# Folder names as bytes: every one was a way to run a command, or to set another value, in some shell.
HOSTILE = {
    "quotes and substitutions": b"x\\'$(touch P)\" #`touch P`",
    "backslash before a quote": b"a\\'& touch P & '",
    "trailing backslash": b"tail\\",
    "two backslashes": b"a\\\\b",
    "newline": b"new\ntouch P",
    "tab, CR, ESC, DEL": b"t\tc\re\x1b[31md\x7f",
    "invisible and bidi": "nb\u00a0zw\u200bls\u2028rlo\u202etxt".encode(),
    "typographic quotes": "ps\u2019&touch P|\u2018\u201a\u201b'".encode(),
    "expansions": b"$HOME ${X} !! !$ *? ~root {a,b} %PATH%",
    "not UTF-8": b"bad\xff\xfe\xc3",
    "leading dash": b"-dash",
}


def _shells() -> list[str]:
    missing = [name for name in SHELL_ARGV if shutil.which(name) is None]
    if missing:
        pytest.skip(f"{', '.join(missing)} not installed (.ci/run installs Debian's zsh and fish)")
    return list(SHELL_ARGV)


def source_in(shell: str, lines: list[str], start: bytes | None, workdir: Path) -> dict[bytes, bytes]:
    """The environment SHELL exports after sourcing LINES, started with VARIABLE=START (None: unset)."""
    script = workdir / f"lines.{shell}"
    script.write_bytes("\n".join(lines).encode("utf-8", "surrogateescape") + b"\n")
    env = {b"PATH": b"/usr/bin:/bin", b"HOME": str(workdir).encode(), b"LANG": b"C.UTF-8"}
    if start is not None:
        env[VARIABLE.encode()] = start
    result = subprocess.run([*SHELL_ARGV[shell], "-c", f"source {script}; exec /usr/bin/env -0"], env=env,
                            cwd=workdir, capture_output=True, timeout=30)
    assert result.returncode == 0, (shell, lines, result.stderr)
    assert not (workdir / "P").exists(), f"{shell} ran a command hidden in {lines}"
    return dict(entry.split(b"=", 1) for entry in result.stdout.split(b"\0") if b"=" in entry)


def _folder(tmp_path: Path, name: bytes) -> str:
    return os.fsdecode(str(tmp_path).encode() + b"/" + name + b"/lib")


@pytest.mark.parametrize("name", list(HOSTILE), ids=list(HOSTILE))
def test_a_prepend_sets_exactly_the_folder_in_every_shell(name: str, tmp_path: Path) -> None:
    folder = _folder(tmp_path, HOSTILE[name])
    want = os.fsencode(folder)
    for shell in _shells():
        lines = env_lines((EnvChange(VARIABLE, "prepend", folder),), [], shell)
        assert all(line.isprintable() for line in lines), lines  # the terminal shows what the shell reads
        for start, expected in ((None, want), (b"", want), (b"/old/lib", want + b":/old/lib")):
            assert source_in(shell, lines, start, tmp_path).get(VARIABLE.encode()) == expected, (shell, start, lines)
    [line] = env_lines((EnvChange(VARIABLE, "prepend", folder),), [], "powershell")
    if b"\xff" in HOSTILE[name]:
        assert line.startswith("# ") and "not UTF-8" in line
        return
    for start, expected in ((None, folder), ("", folder), ("/old/lib", folder + ":/old/lib")):
        assert powershell_model.source([line], {} if start is None else {VARIABLE: start}).get(VARIABLE) == expected


def test_a_removal_writes_the_exact_remaining_folders(tmp_path: Path) -> None:
    current = [_folder(tmp_path, name) for name in HOSTILE.values()] + ["/stray/lib"]
    change = (EnvChange(VARIABLE, "remove", "/stray/lib"),)
    want = b":".join(os.fsencode(f) for f in current[:-1])
    start = b":".join(os.fsencode(f) for f in current)
    for shell in _shells():
        lines = env_lines(change, current, shell)
        assert source_in(shell, lines, start, tmp_path)[VARIABLE.encode()] == want
    [line] = env_lines(change, [f for f in current if "\udcff" not in f], "powershell")
    assert powershell_model.source([line], {VARIABLE: "x"})[VARIABLE] == ":".join(
        f for f in current[:-1] if "\udcff" not in f)


def test_a_run_line_passes_exactly_its_arguments(tmp_path: Path) -> None:
    """`fix --shell SHELL` prints the steps it runs for SHELL: the real printf gets each argument whole."""
    arguments = [os.fsdecode(b) for b in HOSTILE.values()]
    out = tmp_path / "argv"
    for shell in _shells():
        line = command_line(("/usr/bin/printf", "%s\\0", *arguments), shell) + f" > {out}"
        source_in(shell, [line], None, tmp_path)
        assert out.read_bytes().split(b"\0")[:-1] == list(HOSTILE.values()), shell
    line = command_line(("printf", *[a for a in arguments if "\udcff" not in a]), "powershell")
    assert powershell_model.command([line]) == ["printf", *[a for a in arguments if "\udcff" not in a]]


@pytest.mark.parametrize("folder, why", [("/opt/a:b/lib", "a colon or a semicolon"), ("/opt/a;b/lib", "a colon"),
                                         ("/opt/$ORIGIN/lib", "expands"), ("cudnn/lib", "relative")])
def test_a_folder_the_loader_cannot_read_back_gets_a_comment_that_says_why(folder: str, why: str,
                                                                          tmp_path: Path) -> None:
    for shell in ("bash", "zsh", "fish", "powershell"):
        [line] = env_lines((EnvChange(VARIABLE, "prepend", folder),), [], shell)
        assert line.startswith("# cudnn-doctor wrote no") and why in line, line
        assert not set(line) & set("'\"`$;&|<>()\\"), line  # plain words: runs nothing where # is no comment
    for shell in _shells():
        [line] = env_lines((EnvChange(VARIABLE, "prepend", folder),), [], shell)
        assert VARIABLE.encode() not in source_in(shell, [line], None, tmp_path)


def _fix_json(machine: Machine, tmp_path: Path, name: bytes) -> tuple[str, dict]:
    fake_nvml(tmp_path / "driver", driver="580.65.06", cuda=13000)
    machine.add_library_path(tmp_path / "driver")
    found = Path(_folder(tmp_path, name))
    fake_cudnn(found, version=91900, cudart=13000, sublibraries=CUDNN9)
    result = machine.run("fix", "--json", "--search-path", str(found))
    data = json.loads(result.stdout)
    [action] = [a for a in data["actions"] if a["kind"] == "env"]
    return str(found), action


@pytest.mark.parametrize("name", ["quotes and substitutions", "tab, CR, ESC, DEL", "not UTF-8"])
def test_fix_prints_lines_each_real_shell_reads_back(name: str, machine: Machine, tmp_path: Path) -> None:
    """`fix --json` for a cuDNN in a hostile folder off the loader's path: each shell's line, sourced, puts
    exactly that folder first; `fix --shell fish` prints the fish line."""
    folder, action = _fix_json(machine, tmp_path, HOSTILE[name])
    for shell in _shells():
        exported = source_in(shell, action["env"][shell], b"/old/lib", tmp_path)
        assert exported[VARIABLE.encode()] == os.fsencode(folder) + b":/old/lib", shell
    fish = machine.run("fix", "--shell", "fish", "--search-path", folder)
    assert action["env"]["fish"][0] in fish.stdout
    if "\\udc" in ascii(folder):
        assert "not UTF-8" in action["env"]["powershell"][0]
    else:
        assert powershell_model.source(action["env"]["powershell"], {})[VARIABLE] == folder


def test_install_prints_a_line_that_sets_exactly_its_prefix(tmp_path: Path) -> None:
    """`install --prefix` into a hostile folder: the line it prints for the loader, sourced, sets that folder."""
    from tests.install_helpers import clean_env, make_archive, run_json

    archive = make_archive("txz", tmp_path)
    prefix = tmp_path / os.fsdecode(HOSTILE["quotes and substitutions"] + b"\t" + HOSTILE["not UTF-8"])
    code, plan, err = run_json(["install", "--from", str(archive), "--prefix", str(prefix), "--dry-run"],
                               clean_env(tmp_path))
    assert code == 0, err
    line = plan["plan"]["env_line"]
    for shell in [s for s in _shells() if s != "fish"]:  # install writes its line for POSIX shells
        exported = source_in(shell, [line], b"/old/lib", tmp_path)
        assert exported[VARIABLE.encode()] == os.fsencode(str(prefix / plan["plan"]["library_folder"].rsplit("/", 1)[1])) + b":/old/lib"
    code, plan, err = run_json(["install", "--from", str(make_archive("zip", tmp_path)), "--prefix",
                                str(tmp_path / "100%!x"), "--dry-run", "--os", "windows"], clean_env(tmp_path))
    assert plan["plan"]["env_line"].startswith("rem cudnn-doctor wrote no line: cmd expands percent")


@pytest.mark.parametrize("relative", ["cudnn/lib", "-dash/lib", "./x/../cudnn/lib"])
def test_a_relative_search_path_gives_a_plan_of_absolute_folders(relative: str, machine: Machine,
                                                                 tmp_path: Path) -> None:
    """`--search-path cudnn/lib` (or one with a leading dash), from the working folder: every folder the plan
    names is absolute, so that the line means the same folder in any program's working folder."""
    fake_nvml(tmp_path / "driver", driver="580.65.06", cuda=13000)
    machine.add_library_path(tmp_path / "driver")
    (tmp_path / "x").mkdir()
    fake_cudnn(tmp_path / relative, version=91900, cudart=13000, sublibraries=CUDNN9)
    data = json.loads(machine.run("fix", "--json", f"--search-path={relative}").stdout)
    [action] = [a for a in data["actions"] if a["kind"] == "env"]
    exported = source_in("bash", action["env"]["bash"], None, tmp_path / "x")
    assert exported[VARIABLE.encode()] == os.fsencode(os.path.join(tmp_path, relative))
    for argv in (a.get("argv") or [] for a in data["actions"]):
        assert all(word and (not word.startswith("-") or word.startswith("--")) for word in argv[1:]), argv
    done = json.loads(machine.run("fix", "--yes", "--json", f"--search-path={relative}").stdout)
    assert "CD310" in done["before"]["codes"] and done["after"]["codes"] == [c for c in done["before"]["codes"]
                                                                             if c != "CD310"], done["after"]


def test_every_command_in_a_reports_fixes_runs_with_the_folder_as_one_word(machine: Machine, tmp_path: Path) -> None:
    """The commands in backticks of `check`'s fixes (the plan's and the advice's: `ldd LIBRARY`, `cudnn-doctor
    install ... --prefix PREFIX`, `export ...`) for a cuDNN in a hostile folder: run by bash (with `ldd` and
    `cudnn-doctor` recording their arguments), each gets the folder as one word and runs nothing else."""
    import re

    name = b"x\\'$(touch P)\" #&|<>{a,b}*"
    folder = Path(_folder(tmp_path, name))
    fake_cudnn(folder, version=91900, cudart=13000, crash=True)
    report = machine.check_json("--search-path", str(folder))
    commands = [c for f in report["findings"] for c in re.findall(r"`([^`]+)`", f["fix"] or "")
                if c.startswith(("ldd ", "cudnn-doctor install", "export "))]
    assert any(c.startswith("ldd ") for c in commands) and any(c.startswith("cudnn-doctor install") for c in commands)
    record = tmp_path / "args"
    for command in commands:
        record.write_bytes(b"")
        shims = f"ldd() {{ printf '%s\\0' \"$@\" >> {record}; }}; cudnn-doctor() {{ printf '%s\\0' \"$@\" >> {record}; }}"
        exported = source_in("bash", [shims, command], None, tmp_path)
        words = record.read_bytes().split(b"\0") + exported.get(VARIABLE.encode(), b"").split(b":")
        assert any(os.fsencode(str(folder)).startswith(w) or w.startswith(os.fsencode(os.path.dirname(str(folder))))
                   for w in words if w), (command, words)


def test_a_whole_value_set_is_exactly_that_value(tmp_path: Path) -> None:
    """The plan's `set` of a variable (LD_PRELOAD without an entry, a framework's setting) holds any bytes exactly."""
    value = os.fsdecode(b" ".join(HOSTILE.values()))
    for shell in _shells():
        lines = env_lines((EnvChange("LD_PRELOAD", "set", value),), [], shell)
        assert source_in(shell, lines, None, tmp_path)[b"LD_PRELOAD"] == os.fsencode(value), shell
    printable_value = value.replace("\udcff", "").replace("\udcfe", "").replace("\udcc3", "")
    [line] = env_lines((EnvChange("LD_PRELOAD", "set", printable_value),), [], "powershell")
    assert powershell_model.source([line], {})["LD_PRELOAD"] == printable_value
