"""Round twenty-two's reliability classes (issue 43; found by benchmarks/redteam_r27.py over the surfaces the last
rounds added: srun's options and variables under fleet run --slurm, the machine outputs, NCCL's interfaces, explain's
torch_cuda, the early children, maintenance/seal.sh), each a test that failed before its fix, and a sample of that
red-team in CI."""

from __future__ import annotations

import os
import random
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from cudnn_doctor.errors import DoctorError
from cudnn_doctor.explain.machine_values import machine_values
from cudnn_doctor.fleet import srun_options
from cudnn_doctor.fleet.slurm import check_options, srun_environment
from cudnn_doctor.model import Framework, Host, Report, Tool
from tests import redteam_sample
from tests.conftest import ROOT, Machine

linux_only = pytest.mark.skipif(sys.platform != "linux", reason="bash, openssl, FIFOs")


def _redteam():  # type: ignore[no-untyped-def]
    return redteam_sample.load("redteam_r27")


# --- srun's options: where the user's end, the doctor's begin ---------------------------------------------------------

@pytest.mark.parametrize(("options", "said"), [
    (["--nodes=1", "--comment"], "--comment takes a value and is the last word"),
    (["--nodes=1", "-J"], "-J takes a value and is the last word"),
    (["-lN"], "-N takes a value and is the last word"),
    (["--nodes=1", "--"], "'--' ends srun's options"),
    (["--nodes=1", "--", "hostname"], "'--' ends srun's options"),
    (["hostname"], "'hostname' is not an option"),
    (["--nodes=1", ":", "--nodes=1"], "':' is not an option"),
    (["--job=x"], "--job is ambiguous"),
    (["--exact=1"], "--exact takes no value"),
    (["--nodes=1", "--no-such-option"], "have no --no-such-option"),
    (["-y"], "srun has no option -y"),
    (["--nodes=1", "--label"], "-l/--label"),
    (["-lN1"], "-l/--label"),
    (["--multi-prog", "--nodes=1"], "--multi-prog"),
])
def test_srun_options_that_would_take_the_doctors_words_are_a_usage_error(options: list[str], said: str) -> None:
    """fleet run puts its own --output, --error and command after the user's options: a last option without its
    value took the doctor's --output as it (`-J` named the job '--output=...', which was then never cancelled by the
    doctor's name), '--' or a word that is not an option made the doctor's words the command's, --label wrote each
    line of a node's report after '0: '. Before: srun was started with them (given() only stopped reading)."""
    with pytest.raises(DoctorError) as raised:
        check_options(tuple(options))
    assert said in str(raised.value) and raised.value.code == "CD001"


@pytest.mark.parametrize("options", [
    ["--nodes=1"], ["-J", "--output=x", "--nodes=1"], ["--job-n", "mine"], ["-Jx"], ["-D", "/x"],
    ["--no-such-option=1", "-J", "mine"], [os.fsdecode(b"--comment=\xff\xfe\x1b"), "-N1"], [],
])
def test_srun_options_that_end_where_srun_s_end_are_taken(options: list[str]) -> None:
    check_options(tuple(options))


def test_an_option_of_a_newer_srun_given_with_its_value_does_not_end_the_reading() -> None:
    """Before: an unknown long name ended the reading, so a job name after it went unseen and the doctor named the
    job itself, which srun then renamed."""
    assert srun_options.given(["--no-such-option=1", "-J", "mine"])["job-name"] == "mine"


@pytest.mark.parametrize("variable", ["SLURM_LABELIO", "SLURM_SRUN_MULTI"])
def test_srun_s_variables_for_label_and_multi_prog_are_left_out_of_its_environment(
        variable: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """srun reads SLURM_LABELIO as --label (a node's report written after '0: ', not JSON) and SLURM_SRUN_MULTI as
    --multi-prog (the doctor's /bin/sh read as a configuration file: 'Multi_prog config file /bin/sh is too large')."""
    monkeypatch.setenv(variable, "1")
    monkeypatch.setenv("SLURM_PARTITION", "gpu")
    env = srun_environment()
    assert env is not None and variable not in env and env["SLURM_PARTITION"] == "gpu"


def test_srun_s_working_folder_variable_is_its_chdir(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """SLURM_WORKING_DIR is srun's --chdir: the doctor no longer adds its own working folder over it."""
    from cudnn_doctor.fleet.slurm import SlurmRun, srun_argv

    fake = tmp_path / "srun"
    fake.write_text("#!/bin/sh\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path))
    run = SlurmRun(("--nodes=1",), ("true",))
    assert any(word.startswith("--chdir=") for word in srun_argv(run, tmp_path))
    monkeypatch.setenv("SLURM_WORKING_DIR", "/tmp")
    assert not any(word.startswith("--chdir=") for word in srun_argv(run, tmp_path))


# --- the machine outputs, explain's torch_cuda ----------------------------------------------------------------------

def test_prometheus_writes_every_control_and_line_breaking_character_as_an_escape() -> None:
    """Before: only backslash, quote and newline were escaped; an ESC, a CR, U+0085, U+2028 reached the file (and a
    terminal, on stdout) raw."""
    from cudnn_doctor.render.prometheus import _labels

    text = _labels({"subject": "/opt/x\x1b[31m\r\x0b\x85\u2028\u2029\u202e" + os.fsdecode(b"\xff") + '"\\\n'})
    assert text == '{subject="/opt/x\\\\x1b[31m\\\\r\\\\x0b\\\\x85\\\\u2028\\\\u2029\\\\u202e\\\\xff\\"\\\\\\\\n"}'
    assert all(char.isprintable() for char in text)


@pytest.mark.parametrize("cuda", ["\u0661\u0662.\u0664", "\uff11\uff12.4", "....", "1" * 1000])
def test_torch_s_cuda_in_other_digits_or_no_release_shape_is_not_read(cuda: str, machine: Machine,
                                                                     tmp_path: Path) -> None:
    """torch/version.py's cuda was read with Python's \\d and of any length, and explain filled it in: "PyTorch's
    CUDA: ١٢.٤". Now neither check's probe nor explain's machine values take it."""
    from tests.test_frameworks import install_torch, python_env

    site = python_env(machine, tmp_path)
    install_torch(site)
    (site / "torch" / "version.py").write_text(f"__version__ = '2.5.1'\ncuda = '{cuda}'\n")
    [torch] = machine.check_json()["frameworks"]
    assert torch["cuda_built_for"] is None
    report = Report(Tool("cudnn-doctor", "test"), Host("linux", "x86_64", "3.12", "node"))
    report.frameworks = [Framework("torch", "2.9.0", cuda, "9.10.2", None, "dist-info")]
    assert "torch_cuda" not in machine_values(report) and "cuda_major" not in machine_values(report)
    report.frameworks = [Framework("torch", "2.9.0", "12.8", "9.10.2", None, "dist-info")]
    assert machine_values(report)["torch_cuda"] == "12.8"


# --- maintenance/seal.sh: all or nothing ----------------------------------------------------------------------------

def _repository(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    repo = tmp_path / "repo"
    (repo / "maintenance").mkdir(parents=True)
    shutil.copy(ROOT / "maintenance" / "seal.sh", repo / "maintenance" / "seal.sh")
    (repo / ".sealed" / "round9").mkdir(parents=True)
    rng = random.Random(9)
    for index in range(40):
        (repo / ".sealed" / "round9" / f"case{index}.json").write_bytes(rng.randbytes(30_000).hex().encode())
    return repo, {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "SEAL_KEY": "right"}


def _seal(repo: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(["bash", str(repo / "maintenance" / "seal.sh"), *args], env=env, cwd=repo,
                          capture_output=True, timeout=60)


@linux_only
@pytest.mark.skipif(shutil.which("openssl") is None, reason="openssl")
def test_seal_unpacks_all_or_nothing(tmp_path: Path) -> None:
    """Before: an archive cut short left 24 of 40 files in .sealed/round9 (exit 2), and unpacking onto a folder that
    existed mixed a stale file into the set (exit 0)."""
    repo, env = _repository(tmp_path)
    assert _seal(repo, env, "pack", ".sealed/round9").returncode == 0
    whole = {p.name: p.read_bytes() for p in (repo / ".sealed" / "round9").iterdir()}
    shutil.rmtree(repo / ".sealed" / "round9")
    archive = repo / "benchmarks" / "sealed" / "round9.tar.gz.aes"
    data = archive.read_bytes()
    archive.write_bytes(data[:len(data) // 2])
    cut = _seal(repo, env, "unpack", "round9")
    assert cut.returncode != 0 and not (repo / ".sealed" / "round9").exists()
    assert [p.name for p in (repo / ".sealed").iterdir()] == []  # no temporary left either
    archive.write_bytes(data)
    assert _seal(repo, {**env, "SEAL_KEY": "wrong"}, "unpack", "round9").returncode != 0
    assert not (repo / ".sealed" / "round9").exists()
    (repo / ".sealed" / "round9").mkdir()
    (repo / ".sealed" / "round9" / "stale.json").write_text("{}")
    onto = _seal(repo, env, "unpack", "round9")
    assert onto.returncode != 0 and b"exists" in onto.stderr
    assert [p.name for p in (repo / ".sealed" / "round9").iterdir()] == ["stale.json"]
    shutil.rmtree(repo / ".sealed" / "round9")
    assert _seal(repo, env, "unpack", "round9").returncode == 0
    assert {p.name: p.read_bytes() for p in (repo / ".sealed" / "round9").iterdir()} == whole


@linux_only
@pytest.mark.skipif(shutil.which("openssl") is None, reason="openssl")
def test_seal_packs_a_set_or_nothing(tmp_path: Path) -> None:
    """Before: a link was packed as the link (exit 0, an archive of no set), a missing folder or a name ending in a
    newline (cut by $(basename)) left a .pack.* file in benchmarks/sealed; a folder above named with spaces and a
    newline is taken."""
    repo, env = _repository(tmp_path)
    (repo / ".sealed" / "link").symlink_to("round9")
    sealed = repo / "benchmarks" / "sealed"
    for args in (["pack", ".sealed/link"], ["pack", ".sealed/nothere"], ["pack", ".sealed/round9\n"]):
        assert _seal(repo, env, *args).returncode != 0, args
        assert not sealed.exists() or list(sealed.iterdir()) == [], args
    odd = tmp_path / "sets with spaces\nand a newline"
    odd.mkdir()
    shutil.copytree(repo / ".sealed" / "round9", odd / "round10")
    assert _seal(repo, env, "pack", str(odd / "round10")).returncode == 0
    assert [p.name for p in sealed.iterdir()] == ["round10.tar.gz.aes"]


# --- a sample of the red-team ----------------------------------------------------------------------------------------

SAMPLED = ("machine outputs", "explain torch_cuda", "seal.sh", "nccl")
SLOW = ("65,537", "50 MB")


def quick(name: str, case) -> bool:  # type: ignore[no-untyped-def]
    return case[0] in SAMPLED and not any(word in name for word in SLOW)


@linux_only
@pytest.mark.integration
def test_a_seeded_sample_of_the_red_team_holds() -> None:
    """Three cases of benchmarks/redteam_r27.py (the classes of a second or two each; the srun and early-children
    classes need a Slurm cluster or several seconds each, and are run whole by the red-team), a seed each day."""
    redteam_sample.assert_holds("redteam_r27", quick, 3)


def test_srun_s_refusal_of_an_option_is_what_the_doctor_says(tmp_path: Path) -> None:
    """glibc's getopt says 'PATH/srun: unrecognized option ...' with no 'error' in it, and srun's last line is only
    'Try "srun --help" ...': before, that last line was all the doctor said of why srun ran no check."""
    from cudnn_doctor.fleet.slurm import _run_srun

    srun = tmp_path / "srun"
    srun.write_text("#!/bin/sh\necho \"$0: unrecognized option '--no-such-option=1'\" >&2\n"
                    "echo 'Try \"srun --help\" for more information' >&2\nexit 255\n")
    srun.chmod(0o755)
    assert _run_srun([str(srun), "--no-such-option=1"], 20) == f"{srun}: unrecognized option '--no-such-option=1'"


def test_fleet_text_writes_bidi_controls_and_bytes_not_utf8_as_escapes() -> None:
    """fleet merge's text had its own set of characters to escape, without the bidi controls (a node named with
    U+202E reversed the rest of its line) or a lone surrogate."""
    from cudnn_doctor.render.fleet_text import escape

    assert escape("node1\u202e\u2066\u200f\u061c" + os.fsdecode(b"\xff") + "\n\x85") == \
        "node1\\u202e\\u2066\\u200f\\u061c\\xff\\n\\x85"


@linux_only
@pytest.mark.parametrize("ended", [True, False], ids=["the run ended", "the doctor killed"])
def test_the_janitor_does_what_a_killed_doctor_could_not(ended: bool, tmp_path: Path) -> None:
    """fleet run's srun is an external program: a doctor killed with SIGKILL left it running, with its job queued
    and its folder behind it (redteam_r27's 'fleet run --slurm queued: SIGKILL'). The janitor, in a session of its
    own, stops the srun whose command line holds the run's --output word and deletes the folder, unless the doctor
    said the run ended."""
    import time

    from cudnn_doctor.fleet.slurm import _end_janitor, _start_janitor

    folder = tmp_path / "cudnn-doctor-fleet-x"
    folder.mkdir()
    output = f"--output={folder}/%n.json"
    srun = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", output])
    janitor = _start_janitor(["srun", output, "/bin/sh"], folder)
    assert isinstance(janitor, subprocess.Popen) and janitor.stdin is not None
    if ended:
        _end_janitor(janitor)
        time.sleep(0.5)
        assert srun.poll() is None and folder.exists()
        srun.kill()
        srun.wait()
        return
    janitor.stdin.close()  # what the doctor's death does to the pipe
    janitor.wait(timeout=20)
    assert srun.wait(timeout=5) != 0 and not folder.exists()
