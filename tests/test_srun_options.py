"""fleet run --slurm reads the options a user gives srun as srun reads them (issue 43, round twenty-one's red-team
class: where the user named no job, words that only look like -J made the doctor leave its own name out, so the job
was neither named cudnn-doctor-fleet-... nor cancelled by that name when srun was stopped). srun's option table is
compat/slurm.toml, from Slurm's own src/common/slurm_opt.c; getopt_long's rules are glibc's."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from cudnn_doctor.fleet import srun_options
from cudnn_doctor.fleet.slurm import JOB_NAME_PREFIX, SlurmRun, srun_argv
from cudnn_doctor.knowledge.data import load


@pytest.mark.parametrize(("options", "name"), [
    (["-J", "mine"], "mine"),
    (["-Jmine"], "mine"),
    (["--job-name=mine"], "mine"),
    (["--job-name", "mine"], "mine"),
    (["--job-n=mine"], "mine"),  # a prefix only job-name has
    (["-lJmine"], "mine"),  # -l takes nothing, J the rest of the word
    (["-l", "-J", "-x"], "-x"),  # a required argument is the next word whatever it holds
    (["-J", "first", "--job-name=last"], "last"),  # the last one wins
])
def test_a_job_name_srun_reads(options: list[str], name: str) -> None:
    assert srun_options.given(options)["job-name"] == name


@pytest.mark.parametrize("options", [
    ["--comment", "-J"],  # the comment is "-J"
    ["--comment", "-Jx"],
    ["-p", "-J"],  # a partition named -J
    ["--partition=gpu", "--", "-J", "x"],  # after --, words are the command's
    ["hostname", "-J", "x"],  # srun stops at the first word that is not an option ('+')
    ["--job=x"],  # job-name or jobid: srun refuses it, and reads nothing after
    ["--comment=-J"],
    ["--exclusive", "-J"],  # a last -J without its argument: srun refuses it
    ["-I-J"],  # -I's optional argument is the rest of the word
])
def test_words_that_only_look_like_a_job_name(options: list[str]) -> None:
    assert "job-name" not in srun_options.given(options)


@pytest.mark.parametrize(("options", "key"), [
    (["--jobid=12"], "jobid"), (["--jobi", "12"], "jobid"), (["-D", "/x"], "chdir"), (["-D/x"], "chdir"),
    (["--chd=/x"], "chdir"),
])
def test_the_other_options_the_doctor_reads(options: list[str], key: str) -> None:
    assert key in srun_options.given(options)


def test_the_table_is_srun_s_own() -> None:
    """Slurm's job-name is J with a required argument, --jobid has no letter, -I's argument is optional."""
    srun = next(row for row in load("slurm")["command"] if row["name"] == "srun")
    assert srun["short"]["J"] == "job-name" and "job-name" in srun["required"]
    assert "jobid" in srun["required"] and "jobid" not in srun["short"].values()
    assert srun["short"]["I"] == "immediate" and "immediate" in srun["optional"]
    assert not set(srun["required"]) & set(srun["optional"]) | set(srun["required"]) & set(srun["none"])


@pytest.fixture
def srun_on_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    srun = bin_dir / "srun"
    srun.write_text("#!/bin/sh\nexit 0\n")
    srun.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}")
    return tmp_path


@pytest.mark.parametrize(("options", "ours"), [
    (("--comment", "-J"), True),
    (("-p", "-Jx"), True),
    (("--", "-J", "x"), True),
    (("-J", "mine"), False),
    (("--job-n=mine",), False),
    (("--jobid=12",), False),
])
def test_the_doctor_names_the_job_exactly_where_the_user_did_not(srun_on_path: Path, options: tuple[str, ...],
                                                                   ours: bool) -> None:
    folder = srun_on_path / "cudnn-doctor-fleet-abc123"
    folder.mkdir()
    argv = srun_argv(SlurmRun(options, ("cudnn-doctor", "check", "--json")), folder)
    assert any(word.startswith(f"--job-name={JOB_NAME_PREFIX}") for word in argv) is ours


def test_a_chdir_given_keeps_the_users_and_none_given_adds_ours(srun_on_path: Path) -> None:
    folder = srun_on_path / "cudnn-doctor-fleet-abc123"
    folder.mkdir()
    given = srun_argv(SlurmRun(("-D/scratch",), ("cudnn-doctor",)), folder)
    looks_like = srun_argv(SlurmRun(("--comment", "-D"), ("cudnn-doctor",)), folder)
    assert not any(word.startswith("--chdir=") for word in given)
    assert any(word.startswith("--chdir=") for word in looks_like)
