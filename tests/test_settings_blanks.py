"""Values with characters the user cannot see (issue 45, round eight): a CRLF env file leaves '\\r' at the end of
each value, docker --env-file keeps spaces. Each reader is taken as it splits and compares: JAX splits JAX_PLATFORMS
at each ',' and strips nothing, and its options' truth words are compared whole, so 'cuda\\r' is a backend of that
name, unknown: refused at its first array (proven here with the real JAX on the CPU). The finding shows the character
in words; fix unsets the variable (the line sourced in bash, check again clean)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import Machine, codes
from tests.jax_programs import BASE_PATH, run_jax_program
from tests.real_wheels import real_jax_cpu
from tests.test_frameworks import python_env
from tests.test_process_env import check_after, finding, gpu_machine, jax_install, plan_lines


@pytest.mark.parametrize(("value", "words"), [
    ("cuda\r", "a carriage return"),
    ("cpu, cuda", "a space"),
    ("CUDA", "'CUDA' is not a JAX backend"),  # names compared as written (an H100 with JAX 0.11.2 raised)
    ("cuda,", "an empty name"),  # a trailing comma: the backend ''
])
def test_jax_platforms_with_a_blank_jax_keeps_is_refused(machine: Machine, tmp_path: Path, value: str,
                                                          words: str) -> None:
    gpu_machine(machine, tmp_path, gpus=1)
    jax_install(python_env(machine, tmp_path))
    machine.env["JAX_PLATFORMS"] = value
    refused = finding(machine.check_json(), "CD411")
    assert refused["severity"] == "error" and refused["evidence"] == "rule", refused
    assert words in refused["detail"], refused["detail"]
    lines = plan_lines(machine)
    assert "unset JAX_PLATFORMS" in lines
    assert "CD411" not in codes(check_after(machine, lines))


def test_jax_platforms_clean_is_no_error(machine: Machine, tmp_path: Path) -> None:
    gpu_machine(machine, tmp_path, gpus=1)
    jax_install(python_env(machine, tmp_path))
    machine.env["JAX_PLATFORMS"] = "cuda,cpu"
    assert not [f for f in machine.check_json()["findings"] if f["severity"] == "error" and f["code"] == "CD411"]


@pytest.mark.integration
@pytest.mark.parametrize("value", ["cpu\r", "cpu ,cpu", "CPU", "cpu,"])
def test_the_real_jax_refuses_a_platform_name_with_a_blank(value: str) -> None:
    """The rule's proof: the real JAX (CPU build) with such a JAX_PLATFORMS raises at its first array, naming the
    backend with its blank ('cpu\\r' is not in the list of known backends). Each program forked from the worker's
    Python that has jaxlib loaded (tests/jax_programs.py: jax reads JAX_PLATFORMS at its own import), not a new
    Python each (two real JAX starts a value, 3.5 CPU s)."""
    env = {"PATH": BASE_PATH, "PYTHONPATH": str(real_jax_cpu()), "JAX_PLATFORMS": value}
    done = run_jax_program(env, "import jax; jax.numpy.zeros(1)")
    assert done.returncode != 0 and "is not in the list of known backends" in done.stderr, done.stderr[-2000:]
    clean = run_jax_program({**env, "JAX_PLATFORMS": "cpu"}, "import jax; jax.numpy.zeros(1)")
    assert clean.returncode == 0, clean.stderr[-2000:]


@pytest.mark.integration
def test_the_real_jax_refuses_a_default_device_that_is_not_cpu_gpu_or_tpu() -> None:
    """compat's JAX_DEFAULT_DEVICE row, proven on the real JAX (CPU build): torch's 'cuda:0' raises at import's
    first use of the setting; 'cpu' runs."""
    env = {"PATH": BASE_PATH, "PYTHONPATH": str(real_jax_cpu()), "JAX_PLATFORMS": "cpu"}
    program = "import jax; jax.numpy.zeros(1).block_until_ready()"
    done = run_jax_program({**env, "JAX_DEFAULT_DEVICE": "cuda:0"}, program)
    assert done.returncode != 0 and "jax.default_device must be passed" in done.stderr, done.stderr[-2000:]
    clean = run_jax_program({**env, "JAX_DEFAULT_DEVICE": "cpu"}, program)
    assert clean.returncode == 0, clean.stderr[-2000:]
