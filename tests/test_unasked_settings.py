"""A variable of cuDNN's own family that no row of the data knows (issue 45, round nineteen). cuDNN keeps its settings
inside its own libraries and its frontend, compiled into torch and XLA, where no cheap question reaches them; CUDA's
own family is asked instead (a first context is made), the frameworks' families are asked of their installed files,
and cuBLAS's are left alone (its emulation and debugging switches, read only where used). Round eighteen's cuDNN errata sheet (`CUDNN_ERRATA_JSON_FILE`, then
without a row) failed torch and JAX while plain check said nothing. Now such a variable is a warning that names its
reader and says `--deep` proves it (CD416's class, as --deep's cure would name it); a known one keeps its row's
finding, one a letter off a documented name keeps CD418, and the build tools' location variables nothing."""

from __future__ import annotations

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
