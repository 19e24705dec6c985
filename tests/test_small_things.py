"""Smaller things users trip on (issue 23, item 9): completion for the shell named and for option values, a typed
package with its Python versions, export lines without a trailing ':', `compat --list` whole when piped, every
variable documented, and the cache where the README says, cleared by the README's line."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import tomllib

from tests.conftest import ROOT, Machine
from tests.fakes.build import fake_cudnn
from tests.install_helpers import clean_env, make_archive, run_json
from tests.test_check import CUDNN9_SUBLIBS, make_toolkit, write_header

README = (ROOT / "README.md").read_text()


@pytest.mark.parametrize(("shell", "words"), [("zsh", "#compdef cudnn-doctor"), ("fish", "complete --command cudnn-doctor"),
                                              ("bash", "-F _python_argcomplete cudnn-doctor"),
                                              ("powershell", "Register-ArgumentCompleter")])
def test_show_completion_prints_the_script_of_the_shell_named(machine: Machine, shell: str, words: str) -> None:
    result = machine.run("--show-completion", shell)
    assert result.exit_code == 0 and words in result.stdout, result.stdout[:300]


def test_install_completion_for_a_named_shell_and_an_unknown_shell(machine: Machine) -> None:
    result = machine.run("--install-completion", "zsh")
    assert result.exit_code == 0 and "zsh completion installed in" in result.stdout
    assert "compinit" in (machine.home / ".zshrc").read_text()
    unknown = machine.run("--show-completion", "tcsh")
    assert unknown.exit_code == 2 and unknown.stderr.startswith("cudnn-doctor: error: --show-completion tcsh: not a shell")


def test_install_completion_keeps_the_users_bashrc_and_quotes_the_path(machine: Machine, tmp_path: Path) -> None:
    """A HOME with a quote in its name and a .bashrc that is not UTF-8: the line is appended once, as one word
    bash reads back (real bash sources it), and nothing the user had changes; a FIFO there is refused, not waited on."""
    import os

    home = tmp_path / "it's me"
    home.mkdir()
    had = b"alias ll='ls -l'\n# caf\xe9, in Latin-1"
    (home / ".bashrc").write_bytes(had)
    machine.env["HOME"] = str(home)
    for _ in range(2):
        assert machine.run("--install-completion", "bash").exit_code == 0
    after = (home / ".bashrc").read_bytes()
    assert after.startswith(had + b"\n") and after.count(b"cudnn-doctor.sh") == 1, after
    shown = subprocess.run(["bash", "-c", "source ~/.bashrc && complete -p cudnn-doctor"], capture_output=True,
                           text=True, env={**machine.env, "HOME": str(home)}, timeout=60)
    assert "_python_argcomplete cudnn-doctor" in shown.stdout, shown.stderr
    fifo_home = tmp_path / "fifo"
    fifo_home.mkdir()
    os.mkfifo(fifo_home / ".bashrc")
    machine.env["HOME"] = str(fifo_home)
    refused = machine.run("--install-completion", "bash")
    assert refused.exit_code == 2 and "was not read" in refused.stderr and "source " in refused.stderr
    huge_home = tmp_path / "huge"
    huge_home.mkdir()
    with open(huge_home / ".bashrc", "wb") as handle:  # sparse: over the 16 MiB the tool reads, untouched by it
        handle.truncate((16 << 20) + 1)
    machine.env["HOME"] = str(huge_home)
    too_big = machine.run("--install-completion", "bash")
    assert too_big.exit_code == 2 and "larger than" in too_big.stderr
    assert (huge_home / ".bashrc").stat().st_size == (16 << 20) + 1


@pytest.mark.parametrize(("words", "expected"), [
    ("check --format ", ["text", "json", "github", "junit", "prometheus", "markdown"]),
    ("check --format p", ["prometheus"]),
    ("bench --dtype ", ["fp32", "tf32", "fp16", "bf16"]),
    ("bench --size ", ["tiny", "small", "medium", "large"]),
    ("compat --list cu", ["cupy", "cudnn", "cuda"]),
])
def test_option_values_complete(machine: Machine, words: str, expected: list[str]) -> None:
    assert machine.complete(f"cudnn-doctor {words}") == expected


def test_the_package_is_typed_and_names_its_python_versions() -> None:
    assert (ROOT / "cudnn_doctor" / "py.typed").is_file()
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    lowest = int(project["requires-python"].removeprefix(">=3."))
    versions = {int(c.rsplit(".", 1)[1]) for c in project["classifiers"] if re.fullmatch(r"Programming Language :: Python :: 3\.\d+", c)}
    assert versions == set(range(lowest, max(versions) + 1)) and sys.version_info.minor in versions
    assert "Typing :: Typed" in project["classifiers"]


def _exported(line: str, before: str | None) -> str:
    """What LD_LIBRARY_PATH is after LINE runs in sh, with LD_LIBRARY_PATH unset or set to BEFORE."""
    setup = "unset LD_LIBRARY_PATH" if before is None else f"export LD_LIBRARY_PATH={before}"
    return subprocess.run(["/bin/sh", "-c", f'{setup}; {line}; printf %s "$LD_LIBRARY_PATH"'], capture_output=True,
                          text=True, check=True).stdout


def test_export_lines_leave_no_empty_entry_when_the_variable_was_unset(machine: Machine, tmp_path: Path) -> None:
    toolkit = make_toolkit(machine.root, "12.4.1", 12040)
    fake_cudnn(toolkit / "lib64", version=90100, cudart=12040, sublibraries=CUDNN9_SUBLIBS)
    write_header(toolkit / "include", "9.1.0")
    [not_on_path] = [f for f in machine.check_json()["findings"] if f["code"] == "CD310"]
    lines = re.findall(r"`(export LD_LIBRARY_PATH=[^`]+)`", not_on_path["fix"])
    archive = make_archive("txz", tmp_path)
    code, plan, err = run_json(["install", "--from", str(archive), "--prefix", str(tmp_path / "p"), "--dry-run"],
                               clean_env(tmp_path))
    assert code == 0, err
    lines.append(plan["plan"]["env_line"])
    for line, folder in zip(lines, (toolkit / "lib64", tmp_path / "p" / "lib64"), strict=True):
        assert _exported(line, None) == str(folder)  # not "folder:", which would add the working folder
        assert _exported(line, "/opt/other") == f"{folder}:/opt/other"
    for line in re.findall(r"export LD_LIBRARY_PATH=\S+", README):
        if "$" not in line:
            continue  # a removal writes the exact new value: no empty entry either
        assert line.endswith("${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}") or line.endswith("${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH})`."), line


def test_compat_list_piped_is_whole_not_cut_to_80_columns(machine: Machine) -> None:
    del machine.env["COLUMNS"]  # a pipe: rich would take 80 columns
    result = machine.run("compat", "--list", "cudnn")
    assert result.exit_code == 0
    assert "…" not in result.stdout and "min_compute_capability" in result.stdout
    assert max(len(line) for line in result.stdout.splitlines()) > 80


def test_every_variable_is_documented() -> None:
    used = set()
    for folder in ("cudnn_doctor", "maintenance", "tests"):
        for path in (ROOT / folder).rglob("*.py"):
            used |= set(re.findall(r"CUDNN_DOCTOR_[A-Z_]*[A-Z]", path.read_text()))
    missing = sorted(name for name in used if f"`{name}`" not in README)
    assert not missing, missing


def test_the_cache_is_where_the_readme_says_and_its_line_clears_it(machine: Machine, tmp_path: Path) -> None:
    [clear] = [line for block in re.findall(r"```bash\n(.*?)\n```", README, re.DOTALL) for line in block.splitlines()
               if line.startswith("rm -rf ") and "cudnn-doctor" in line]
    cache_home = tmp_path / "xdg-cache"
    env = {key: value for key, value in clean_env(tmp_path).items() if key != "CUDNN_DOCTOR_CACHE_DIR"}
    env["XDG_CACHE_HOME"] = str(cache_home)
    archive = make_archive("txz", tmp_path)
    code, _, err = run_json(["install", "--from", archive.as_uri(), "--prefix", str(tmp_path / "p"), "--yes"], env)
    assert code == 0, err
    result = subprocess.run([sys.executable, "-m", "cudnn_doctor", "compat", "cudnn==9.19.0"], env=env,
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert (cache_home / "cudnn-doctor" / "compat").is_dir()
    subprocess.run(["/bin/sh", "-c", clear], env=env, check=True)
    assert not (cache_home / "cudnn-doctor").exists()
    again = subprocess.run([sys.executable, "-m", "cudnn_doctor", "compat", "cudnn==9.19.0"], env=env,
                           capture_output=True, text=True, timeout=60)
    assert again.returncode == 0 and again.stdout == result.stdout  # made again when needed


def test_the_systems_own_ldconfig_is_run_before_one_first_on_path(tmp_path: Path) -> None:
    """A `ldconfig` first on PATH (a stale copy, a wrapper, a hostile one: install runs ldconfig as root) is not the
    one asked or run: the system's own is, found in one place (operating_system's system_tool) for check's cache and
    install's registration alike."""
    import shutil

    from cudnn_doctor.operating_system import CURRENT

    hostile = tmp_path / "ldconfig"
    hostile.write_text("#!/bin/sh\ntouch \"$0.ran\"\n")
    hostile.chmod(0o755)
    system = shutil.which("ldconfig", path="/sbin:/usr/sbin")
    if system is None:
        pytest.skip("this system keeps no ldconfig in /sbin or /usr/sbin")
    assert CURRENT.system_tool("ldconfig", f"{tmp_path}:/usr/bin:/bin") == os.path.abspath(system)
    assert CURRENT.system_tool("ldconfig-of-nobody", str(tmp_path)) is None
    package = Path(__file__).resolve().parents[1] / "cudnn_doctor"
    others = [str(p.relative_to(package)) for p in package.rglob("*.py")
              if 'which("ldconfig"' in p.read_text(encoding="utf-8")]
    assert others == [], others  # no second way to find it


def test_every_process_the_doctor_starts_goes_through_the_one_child_runner() -> None:
    """subprocess is called in child.py (the runner) and operating_system.py (how it starts and kills) alone, and in
    the child scripts that run in a child of the runner's (a grandchild of theirs dies with them): a compiler on
    PATH, ldconfig, any helper started elsewhere would escape its deadline and its kill on a signal."""
    package = Path(__file__).resolve().parents[1] / "cudnn_doctor"
    allowed = {"child.py", "operating_system.py", "_load_jobs.py", "_allreduce_child.py"}
    found = sorted(str(p.relative_to(package)) for p in package.rglob("*.py")
                   if re.search(r"subprocess\.(run|Popen|call|check_call|check_output)\(", p.read_text(encoding="utf-8"))
                   and str(p.relative_to(package)) not in allowed)
    assert found == [], found


def patterns_a_check_compiles(machine: Machine) -> list[str]:
    """The regular expressions one `check --json` of MACHINE compiles (re._compile watched in its process), after
    checking that it saw the cuDNN 9.19.0 copy the callers put on its library path."""
    code = ("import atexit, json, re, sys; seen = []; compile = re._compile\n"
            "def _compile(pattern, flags):\n    seen.append(str(pattern)); return compile(pattern, flags)\n"
            "re._compile = _compile\n"
            "atexit.register(lambda: sys.stderr.write('COMPILED ' + json.dumps(seen) + '\\n'))\n"
            "sys.argv = ['cudnn-doctor', 'check', '--json']\nfrom cudnn_doctor.entry import main\nmain()\n")
    done = subprocess.run([sys.executable, "-c", code], env=machine.env, cwd=machine.cwd, capture_output=True,
                          text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert '"version": "9.19.0"' in done.stdout, done.stderr[-2000:]
    return list(json.loads(next(line for line in done.stderr.splitlines() if line.startswith("COMPILED "))[9:]))


def test_check_compiles_no_pattern_only_install_reads(machine: Machine, tmp_path: Path) -> None:
    """The archive members' name pattern (cudnn_files.ANY_NAME: 1 ms to compile) is compiled where install reads an
    archive, never by a check, which finds its copies by their sonames; install still reads every form of it."""
    from cudnn_doctor.cudnn_files import ANY_NAME
    from cudnn_doctor.install.archive import library_major

    assert [library_major(name) for name in ("libcudnn.so.9.19.0", "libcudnn.so.8", "cudnn64_9.dll",
                                             "libcudnn.9.1.0.dylib", "libcudnn_ops.so.9", "libcudnn.so")] == \
        [9, 8, 9, 9, None, None]
    machine.add_library_path(fake_cudnn(tmp_path / "copy", version=91900).parent)
    compiled = patterns_a_check_compiles(machine)
    assert len(compiled) > 20 and getattr(ANY_NAME, "pattern", ANY_NAME) not in compiled


# patterns of readers a plain check on a machine without those settings or files never runs (of the 40 made lazy: the
# cache's file names and the shell's variable names are read by this machine's check), each compiled where it is
# first used (a functools.cache'd accessor), not at import: 4 ms of the check's main thread (benchmarks/README.md,
# round nineteen)
LAZY_PATTERNS = (("cudnn_doctor.knowledge.environment", "_stod_pattern"),
                 ("cudnn_doctor.knowledge.environment", "decimal_pattern"),
                 ("cudnn_doctor.knowledge.inputs", "framework_spec_pattern"),
                 ("cudnn_doctor.knowledge.platforms", "constraint_pattern"),
                 ("cudnn_doctor.probes.frameworks", "requires_cuda_pattern"),
                 ("cudnn_doctor.probes.platform", "l4t_line_pattern"),
                 ("cudnn_doctor.probes.process_env", "plain_entry_pattern"),
                 ("cudnn_doctor.probes.settings", "_compared_pattern"), ("cudnn_doctor.probes.settings", "_top_def_pattern"),
                 ("cudnn_doctor.probes.topology", "bus_id_pattern"), ("cudnn_doctor.probes.xla_flags", "bad_value_pattern"),
                 ("cudnn_doctor.quoting", "_userinfo_pattern"), ("cudnn_doctor.quoting", "code_span_pattern"),
                 ("cudnn_doctor.rules.process_env", "_variable_pattern"), ("cudnn_doctor.rules.requirements", "spec_pattern"),
                 ("cudnn_doctor.selection", "code_prefix_pattern"))


def test_check_compiles_no_pattern_of_a_reader_it_does_not_run(machine: Machine, tmp_path: Path) -> None:
    """A plain check (its parsed data cached) compiles none of LAZY_PATTERNS: each is compiled by its reader's first
    use, once (the accessor keeps it), and means what it meant."""
    import importlib

    texts = {}
    for module, name in LAZY_PATTERNS:
        accessor = getattr(importlib.import_module(module), name)
        assert accessor() is accessor()  # compiled once
        texts[accessor().pattern] = f"{module}.{name}"
    from cudnn_doctor.rules.requirements import parse_requirement
    from cudnn_doctor.selection import parse_codes

    assert parse_requirement("cudnn>=9.1").subject == "cudnn" and parse_codes(["CD3,CD402"], "--select") == ("CD3", "CD402")
    machine.add_library_path(fake_cudnn(tmp_path / "copy", version=91900).parent)
    machine.check_json()  # the parsed data cached, as every later check finds it
    compiled = patterns_a_check_compiles(machine)
    assert len(compiled) > 20 and sorted(texts[text] for text in set(compiled) & set(texts)) == []


def test_the_commands_own_process_does_not_collect_garbage_during_a_plain_check(machine: Machine, tmp_path: Path,
                                                                                machine_in_process: Machine) -> None:
    """A plain check makes about 31,000 objects, nearly all alive to its end: Python's collector ran 45 times in it (6 ms
    of CPU, 189 objects freed). The command's own process collects every entry.COMMAND_GC_THRESHOLD new objects, so a
    check collects none; a program that calls the doctor in-process keeps its collector as it was."""
    import gc

    from cudnn_doctor.entry import COMMAND_GC_THRESHOLD

    machine.add_library_path(fake_cudnn(tmp_path / "copy", version=91900).parent)
    code = ("import atexit, gc, sys; runs = []\n"
            "gc.callbacks.append(lambda phase, info: runs.append(info['generation']) if phase == 'start' else None)\n"
            "atexit.register(lambda: sys.stderr.write(f'COLLECTED {len(runs)} {gc.get_threshold()[0]}\\n'))\n"
            "sys.argv = ['cudnn-doctor', 'check', '--json']\nfrom cudnn_doctor.entry import main\nmain()\n")
    done = subprocess.run([sys.executable, "-c", code], env=machine.env, cwd=machine.cwd, capture_output=True,
                          text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert '"version": "9.19.0"' in done.stdout, done.stderr[-2000:]
    assert f"COLLECTED 0 {COMMAND_GC_THRESHOLD}" in done.stderr, done.stderr[-2000:]
    threshold = gc.get_threshold()
    machine_in_process.run("check", "--json")
    assert gc.get_threshold() == threshold
