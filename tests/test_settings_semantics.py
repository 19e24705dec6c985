"""Settings that the framework takes but that make ordinary programs raise or run slower (compat/process_env.toml,
round nine's rows): JAX_NUMPY_RANK_PROMOTION=raise and JAX_NUMPY_DTYPE_PROMOTION=strict are values JAX accepts, and
with them common numerical code raises (the real jax 0.4.38 on the CPU is the judge); a warning that says so and
whose line unsets them. TORCH_DISTRIBUTED_DEBUG takes OFF, INFO or DETAIL in any case; another value is refused
where torch.distributed is imported."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import Machine
from tests.test_environment_settings import check, closed_loop, real_jax_site, settings_findings  # noqa: F401
from tests.test_process_env import finding
from tests.test_settings_round9 import jax_says, jax_site, torch_machine  # noqa: F401 (fixture)


@pytest.mark.parametrize(("variable", "value", "program", "said"), [
    ("JAX_NUMPY_RANK_PROMOTION", "raise", "import jax.numpy as j; print(j.ones((2, 3)) + j.ones(3))", "rank"),
    ("JAX_NUMPY_DTYPE_PROMOTION", "strict",
     "import jax.numpy as j; print(j.ones(3, j.float32) + j.ones(3, j.int32))", "TypePromotionError"),
])
def test_a_value_jax_takes_that_makes_common_code_raise_is_a_warning_with_its_line(
        machine: Machine, jax_site: Path, variable: str, value: str, program: str, said: str) -> None:  # noqa: F811
    judged = jax_says({variable: value}, program)
    assert judged.returncode != 0 and said in judged.stderr, judged.stderr[-600:]
    assert jax_says({}, program).returncode == 0
    machine.env[variable] = value
    report = check(machine)
    warned = finding(report, "CD411")
    assert warned["subject"] == variable and warned["severity"] == "warning", warned
    closed_loop(machine, "CD411", variable)


@pytest.mark.parametrize("value", ["allow", "warn"])
def test_rank_promotion_values_that_change_nothing_are_no_finding(machine: Machine, jax_site: Path,  # noqa: F811
                                                                   value: str) -> None:
    machine.env["JAX_NUMPY_RANK_PROMOTION"] = value
    assert not settings_findings(check(machine), "JAX_NUMPY_RANK_PROMOTION")


def test_torch_distributed_debug_in_any_case_is_taken_and_another_word_is_said(machine: Machine,
                                                                              tmp_path: Path) -> None:
    torch_machine(machine, tmp_path)
    machine.env["TORCH_DISTRIBUTED_DEBUG"] = "info"
    assert not settings_findings(check(machine), "TORCH_DISTRIBUTED_DEBUG")
    machine.env["TORCH_DISTRIBUTED_DEBUG"] = "1"
    said = [f for f in settings_findings(check(machine), "TORCH_DISTRIBUTED_DEBUG")]
    # torch 2.11's import refused it on an H100 (round nine; the data's source): the rule, an error
    assert said and said[0]["code"] == "CD411" and said[0]["severity"] == "error", said
    assert "OFF, INFO, or DETAIL" in said[0]["detail"], said
    closed_loop(machine, said[0]["code"], "TORCH_DISTRIBUTED_DEBUG")
