"""`--install-completion` writing into a hostile home (issue 43, class 1): every thing that can stand where a file or
folder of ours goes (a FIFO, a folder, a file, a link to nothing), for every shell and every place it writes, is one
line that names it and exit 2; never a hang, never a traceback, and the user's start-up file is never left naming a
script that was not written. An empty or relative HOME is refused; PowerShell is asked for its profile through the
one child runner, so nothing it starts outlives the question."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest

from tests.conftest import Machine

# where each shell's script goes, and the start-up file that names it (None: fish reads its folder itself)
PLACES = {
    "bash": (".bash_completions/cudnn-doctor.sh", ".bashrc"),
    "zsh": (".zfunc/_cudnn-doctor", ".zshrc"),
    "fish": (".config/fish/completions/cudnn-doctor.fish", None),
}


def _obstacle(path: Path, kind: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "folder":
        path.mkdir()
    elif kind == "file":
        path.write_text("not a folder\n")
    elif kind == "dangling link":
        path.symlink_to(path.parent / "nowhere" / "at all")


def _cases() -> list[tuple[str, str, str]]:
    """(shell, the relative path blocked, what blocks it): the script's own path, each folder above it, the
    start-up file."""
    cases = []
    for shell, (script, rc_file) in PLACES.items():
        parts = Path(script).parts
        for depth in range(1, len(parts) + 1):
            blocked = str(Path(*parts[:depth]))
            kinds = ("fifo", "folder") if depth == len(parts) else ("fifo", "file", "dangling link")
            cases += [(shell, blocked, kind) for kind in kinds]
        if rc_file:
            cases += [(shell, rc_file, kind) for kind in ("fifo", "folder")]
    return cases


@pytest.mark.parametrize(("shell", "blocked", "kind"), _cases())
def test_what_stands_in_the_way_is_named_and_nothing_is_half_done(machine: Machine, shell: str, blocked: str,
                                                                  kind: str) -> None:
    had = b"alias ll='ls -l'\n"
    script, rc_file = PLACES[shell]
    if rc_file and rc_file != blocked:
        (machine.home / rc_file).write_bytes(had)
    _obstacle(machine.home / blocked, kind)
    result = machine.run("--install-completion", shell, timeout=20)
    assert result.exit_code == 2, (result.exit_code, result.stdout, result.stderr)
    assert "Traceback" not in result.stderr and result.stderr.startswith("cudnn-doctor: error: --install-completion")
    assert "nothing was changed" in result.stderr
    if rc_file and rc_file != blocked:  # the start-up file never names a script that is not there
        assert (machine.home / rc_file).read_bytes() == had


@pytest.mark.parametrize("shell", ["bash", "zsh"])
def test_a_refused_install_takes_back_the_folders_and_empty_start_up_file_it_made(machine: Machine,
                                                                                shell: str) -> None:
    """'nothing was changed' holds: the start-up file it opened (created empty) and the folders it made for it
    (ZDOTDIR's, several deep) before the script could not be written (a FIFO in the script's place, as a full disk
    refuses it) are taken away again; the home holds what it held."""
    script, rc_file = PLACES[shell]
    machine.env["ZDOTDIR"] = str(machine.home / "zdot" / "deep")
    _obstacle(machine.home / script, "fifo")
    before = sorted(str(p.relative_to(machine.home)) for p in machine.home.rglob("*"))
    result = machine.run("--install-completion", shell, timeout=20)
    assert result.exit_code == 2 and "nothing was changed" in result.stderr, result.stderr
    assert sorted(str(p.relative_to(machine.home)) for p in machine.home.rglob("*")) == before


def test_home_empty_or_relative_is_refused_not_taken_as_root(machine: Machine) -> None:
    for home in ("", "relative/home"):
        machine.env["HOME"] = home
        result = machine.run("--install-completion", "bash", timeout=20)
        assert result.exit_code == 2 and "HOME is" in result.stderr and "Traceback" not in result.stderr, result.stderr
    assert not Path("/.bash_completions/cudnn-doctor.sh").exists()


def test_a_completion_file_written_again_replaces_ours_and_keeps_a_link(machine: Machine) -> None:
    target = machine.home / "dotfiles" / "cudnn-doctor.fish"
    target.parent.mkdir()
    target.write_text("old\n")
    link = machine.home / ".config" / "fish" / "completions" / "cudnn-doctor.fish"
    link.parent.mkdir(parents=True)
    link.symlink_to(target)
    assert machine.run("--install-completion", "fish").exit_code == 0
    assert link.is_symlink() and "complete --command cudnn-doctor" in target.read_text()


def test_a_home_it_may_not_write_is_said_in_one_line(tmp_path: Path, nobody) -> None:  # type: ignore[no-untyped-def]
    """As user nobody: a home it may not write, and a .bashrc it may not write in a home it may."""
    import shutil
    import tempfile

    base = Path(tempfile.mkdtemp(prefix="cudnn-doctor-home-"))  # pytest's tmp folders are 0700
    try:
        base.chmod(0o755)
        machine = Machine(tmp_path)
        locked = base / "locked"
        locked.mkdir(mode=0o755)
        writable = base / "writable"
        writable.mkdir()
        (writable / ".bashrc").write_text("# mine\n")
        os.chmod(writable / ".bashrc", 0o444)
        os.chown(writable, 65534, 65534)
        for home, shell in ((locked, "zsh"), (writable, "bash")):
            env = nobody.env({**machine.env, "HOME": str(home), "CUDNN_DOCTOR_CACHE_DIR": str(base / "cache")})
            result = subprocess.run([*nobody.argv, "-m", "cudnn_doctor", "--install-completion", shell], env=env,
                                    cwd="/", capture_output=True, text=True, timeout=60)
            assert result.returncode == 2 and "Permission denied" in result.stderr, result.stderr
            assert "Traceback" not in result.stderr and len(result.stderr.strip().splitlines()) == 1
            # nothing was written, the script neither: a fix naming only the start-up file's line would have it
            # source a file that is not there (a read-only .bashrc, round ten's own red-team)
            assert f"--show-completion {shell} > " in result.stderr, result.stderr
        assert (writable / ".bashrc").read_text() == "# mine\n"
        assert not (writable / ".bash_completions").exists()
    finally:
        shutil.rmtree(base, ignore_errors=True)


def test_powershell_is_asked_through_the_child_runner_and_leaves_nothing_behind(machine: Machine) -> None:
    """A pwsh that answers its profile and leaves a child of its own in another session: the answer is used, and the
    child does not outlive the question (the one child runner kills all it started)."""
    bin_dir = machine.home / "bin"
    bin_dir.mkdir()
    marker = f"cudnn-doctor-test-{os.getpid()}-{time.monotonic_ns()}"
    profile = machine.home / "Documents" / "PowerShell" / "profile.ps1"
    pwsh = bin_dir / "pwsh"
    pwsh.write_text(f"#!/bin/sh\nsetsid sh -c 'exec -a {marker} sleep 300' </dev/null >/dev/null 2>&1 &\n"
                    f"echo '{profile}'\n")
    pwsh.chmod(0o755)
    machine.env["PATH"] = f"{bin_dir}:{machine.env['PATH']}"
    result = machine.run("--install-completion", "pwsh", timeout=60)
    assert result.exit_code == 0, result.stderr
    assert "Register-ArgumentCompleter" in profile.read_text()
    time.sleep(0.2)
    left = subprocess.run(["pgrep", "-f", marker], capture_output=True, text=True)
    if left.stdout.strip():
        subprocess.run(["kill", *left.stdout.split()], check=False)
    assert left.stdout.strip() == "", "pwsh's child outlived the profile lookup"


def test_powershell_not_on_path_or_answering_garbage_is_one_line(machine: Machine) -> None:
    result = machine.run("--install-completion", "powershell")
    assert result.exit_code == 2 and "cannot ask powershell" in result.stderr, result.stderr
    bin_dir = machine.home / "bin"
    bin_dir.mkdir()
    (bin_dir / "pwsh").write_text("#!/bin/sh\necho 'WARNING: something'\necho relative.ps1\n")
    (bin_dir / "pwsh").chmod(0o755)
    machine.env["PATH"] = f"{bin_dir}:{machine.env['PATH']}"
    garbage = machine.run("--install-completion", "pwsh")
    assert garbage.exit_code == 2 and "cannot ask pwsh" in garbage.stderr and "Traceback" not in garbage.stderr


def test_powershell_that_hangs_is_cut_at_the_helper_timeout(machine: Machine) -> None:
    """Issue 43, class 1: a pwsh that never answers its profile is a helper program like any other: asked under
    CUDNN_DOCTOR_HELPER_TIMEOUT (10 s), then a one-line refusal that names the variable, not a minute's wait."""
    bin_dir = machine.root / "hung-bin"
    bin_dir.mkdir()
    (bin_dir / "pwsh").write_text("#!/bin/sh\nexec sleep 300\n")
    (bin_dir / "pwsh").chmod(0o755)
    machine.env["PATH"] = f"{bin_dir}:{machine.env['PATH']}"
    machine.env["CUDNN_DOCTOR_HELPER_TIMEOUT"] = "1"
    started = time.monotonic()
    result = machine.run("--install-completion", "pwsh", timeout=60)
    assert time.monotonic() - started < 15
    assert result.exit_code == 2 and "CUDNN_DOCTOR_HELPER_TIMEOUT" in result.stderr, result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr


def test_a_home_named_with_a_newline_or_an_escape_is_said_on_one_line(machine: Machine, tmp_path: Path) -> None:
    """The success line names the script's path escaped, as errors are: one line, no terminal escape."""
    home = tmp_path / "h\x1b[31mx\ny"
    home.mkdir()
    machine.env["HOME"] = str(home)
    result = machine.run("--install-completion", "bash")
    assert result.exit_code == 0, result.stderr
    assert len(result.stdout.strip().splitlines()) == 1 and "\x1b" not in result.stdout, result.stdout
    assert (home / ".bash_completions" / "cudnn-doctor.sh").is_file()


@pytest.mark.parametrize("words", [("--install-completion", "bash", "--json"), ("--show-completion", "bash", "--json"),
                                   ("--install-completion", "bash", "extra"), ("--json",)])
def test_completion_with_words_it_does_not_take_is_one_usage_error(machine: Machine, tmp_path: Path,
                                                                    words: tuple[str, ...]) -> None:
    """`--install-completion bash --json` wrote the script and printed text, ignoring --json: a usage error now, one
    JSON object where --json is among the words, and nothing written into the home."""
    machine.env["HOME"] = str(tmp_path)
    result = machine.run(*words)
    assert result.exit_code == 2 and len(result.stderr.strip().splitlines()) == 1, result.stderr
    if "--json" in words:
        assert result.json["exit_code"] == 2, result.stdout
    assert not (tmp_path / ".bashrc").exists()


@pytest.mark.parametrize("shell, rc_file", [("bash", ".bashrc"), ("zsh", ".zshrc")])
def test_installs_at_the_same_instant_name_the_script_once(machine: Machine, tmp_path: Path, shell: str,
                                                           rc_file: str) -> None:
    """Issue 43, class 1: four `--install-completion` started together into one home each read the start-up file
    before any wrote it; the one writer locks it and reads it again, so the line is there once, and the user's own
    last line (no newline after it) is kept whole."""
    import sys

    for round_number in range(3):
        home = tmp_path / f"home{round_number}"
        home.mkdir()
        (home / rc_file).write_bytes(b"alias ll='ls -l'")  # no newline at its end
        env = {**machine.env, "HOME": str(home)}
        racers = [subprocess.Popen([sys.executable, "-m", "cudnn_doctor", "--install-completion", shell], env=env,
                                   cwd=machine.cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
                  for _ in range(4)]
        for racer in racers:
            racer.communicate(timeout=60)
            assert racer.returncode == 0
        text = (home / rc_file).read_bytes()
        assert text.startswith(b"alias ll='ls -l'\n"), text
        name = b"cudnn-doctor.sh" if shell == "bash" else b"compinit"
        assert text.count(name) == (1 if shell == "bash" else 2), text  # zsh's line names compinit twice


@pytest.mark.parametrize("last", [b"export EDITOR=vi \\", b"export EDITOR=vi \\\n"])
def test_a_start_up_file_whose_last_line_continues_still_runs_the_line(machine: Machine, tmp_path: Path,
                                                                       last: bytes) -> None:
    """A .bashrc whose last line ends in a backslash continues into whatever is appended: the line is kept apart by
    an empty line, so bash still runs it (found by round seven's red-team)."""
    import sys

    home = tmp_path / "rc-home"
    home.mkdir()
    (home / ".bashrc").write_bytes(last)
    env = {**machine.env, "HOME": str(home)}
    done = subprocess.run([sys.executable, "-m", "cudnn_doctor", "--install-completion", "bash"], env=env,
                          cwd=machine.cwd, capture_output=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert (home / ".bashrc").read_bytes().startswith(last)
    sourced = subprocess.run(["bash", "-c", "source ~/.bashrc && complete -p cudnn-doctor"], env=env,
                             capture_output=True, text=True, timeout=60)
    assert sourced.returncode == 0 and "cudnn-doctor" in sourced.stdout, sourced.stderr


@pytest.mark.parametrize("shell, variable", [("zsh", "ZDOTDIR"), ("fish", "XDG_CONFIG_HOME")])
@pytest.mark.parametrize("kind", ["50,000 folders deep", "one name of 300 bytes"])
def test_a_folder_no_path_can_reach_is_refused_at_once(machine: Machine, tmp_path: Path, shell: str, variable: str,
                                                       kind: str) -> None:
    """A ZDOTDIR or XDG_CONFIG_HOME of 100 KB (50,000 folders deep) took over 50 s walking its parents (round eight's
    red-team): a path the kernel cannot take (over PATH_MAX, a name over NAME_MAX) is refused in one line at once,
    nothing made; a deep path it can take is still written."""
    value = (str(tmp_path) + "/x" * 50_000)[:100_000] if kind.startswith("50") else str(tmp_path / ("n" * 300))
    machine.env[variable] = value
    before = sorted(os.listdir(tmp_path))
    started = time.monotonic()
    result = machine.run("--install-completion", shell, timeout=20)
    assert result.exit_code == 2 and len(result.stderr.strip().splitlines()) == 1, result.stderr[-500:]
    assert "more than the" in result.stderr and len(result.stderr) < 1000, result.stderr[-500:]
    assert time.monotonic() - started < 10
    assert sorted(os.listdir(tmp_path)) == before
    machine.env[variable] = str(tmp_path / "/".join(["d"] * 200))
    assert machine.run("--install-completion", shell).exit_code == 0
