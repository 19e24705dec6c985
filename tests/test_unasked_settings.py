"""A variable of cuDNN's own family that no row of the data knows (issue 45, round nineteen). cuDNN keeps its settings
inside its own libraries and its frontend, compiled into torch and XLA, where no cheap question reaches them; CUDA's
own family is asked instead (a first context is made), the frameworks' families are asked of their installed files,
and cuBLAS's are left alone (its emulation and debugging switches, read only where used). Round eighteen's cuDNN errata sheet (`CUDNN_ERRATA_JSON_FILE`, then
without a row) failed torch and JAX while plain check said nothing. Now such a variable is a warning that names its
reader and says `--deep` proves it (CD416's class, as --deep's cure would name it); a known one keeps its row's
finding, one a letter off a documented name keeps CD418, and the build tools' location variables nothing."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.conftest import Machine


def _about(report: dict, variable: str) -> list[dict]:
    return [f for f in report["findings"] if f["subject"] == variable]


@pytest.mark.parametrize("variable", ["CUDNN_SOMETHING_NEW", "CUDNN_FRONTEND_SOMETHING_NEW"])
def test_an_unknown_variable_of_cudnns_family_is_a_warning_deep_proves(machine: Machine, variable: str) -> None:
    machine.env[variable] = "1"
    report = machine.check_json()
    [made] = _about(report, variable)
    assert made["code"] == "CD416" and made["severity"] == "warning" and made["evidence"] == "read", made
    assert "cuDNN reads its settings inside" in made["detail"] and "check --deep" in made["detail"], made["detail"]
    assert f"unset {variable}" in made["fix"], made["fix"]


@pytest.mark.parametrize(("variable", "code"), [("CUDNN_LOGINFO_DBG", "CD412"), ("CUDNN_LOGINFO_DGB", "CD418"),
                                                ("CUDNN_PATH", None), ("CUBLAS_SOMETHING_NEW", None)])
def test_known_misspelt_and_location_variables_keep_their_own_answer(machine: Machine, variable: str,
                                                                     code: str | None) -> None:
    machine.env[variable] = "1"
    codes = [f["code"] for f in _about(machine.check_json(), variable)]
    assert codes == ([code] if code else []), codes


# --- a file XLA opens that no row knows: the reader, the thing, and that --deep proves it ------------------------------

def test_an_xla_flag_no_row_knows_naming_a_file_is_said_with_its_reader(tmp_path: Path) -> None:
    """Round fifteen's `--xla_gpu_target_config_filename` naming a garbage file and round eighteen's kernel cache file
    (each without a row then) failed JAX while plain check said nothing: a flag no row knows that names a regular file
    is said; a folder, a FIFO (never opened), a missing file and a relative name are not; a flag with a row keeps its
    own reading."""
    from cudnn_doctor.probes.settings import xla_path_problems

    garbage = tmp_path / "target.txt"
    garbage.write_text("garbage {\n")
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    [(flag, why)] = xla_path_problems(f"--xla_gpu_target_config_filename={garbage} --xla_gpu_autotune_level=0")
    assert flag == "xla_gpu_target_config_filename" and str(garbage) in why and "check --deep" in why, why
    for value in (tmp_path, fifo, tmp_path / "missing.txt", "target.txt"):
        assert xla_path_problems(f"--xla_gpu_target_config_filename={value}") == [], value
    known = xla_path_problems(f"--xla_gpu_load_autotune_results_from={garbage}")
    assert [f for f, _ in known] == ["xla_gpu_load_autotune_results_from"]
    assert all("no row of the data knows" not in w for _, w in known), known


def test_check_says_the_unread_file_and_keeps_the_other_flags(machine: Machine, tmp_path: Path) -> None:
    from tests.test_settings_when_used import one_gpu_with_frameworks

    one_gpu_with_frameworks(machine, tmp_path)
    garbage = tmp_path / "kernel.ptx"
    garbage.write_text("not ptx\n")
    machine.env["XLA_FLAGS"] = f"--xla_gpu_autotune_level=0 --xla_gpu_ptx_file={garbage}"
    made = [f for f in machine.check_json()["findings"] if f["subject"] == "XLA_FLAGS"]
    [said] = [f for f in made if "no row of the data knows that flag's file" in f["detail"]]
    assert said["code"] == "CD411" and said["severity"] == "warning" and said["evidence"] == "read", said
    assert "--xla_gpu_autotune_level=0" in said["fix"] and "xla_gpu_ptx_file" not in said["fix"], said["fix"]
