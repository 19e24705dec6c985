"""`compat` for issue 41, round eleven: a release candidate's driver floor is no build's, and JAX's own jaxlib CUDA
builds before the PyPI plugins (0.4.14-0.4.21, read from setup.py and the installation guide at each tag)."""

from __future__ import annotations

from tests.conftest import Machine
from tests.test_compat_rules import compat, reason


def test_a_cuda_11_0_build_needs_the_ga_driver_not_the_release_candidates(machine: Machine) -> None:
    """NVIDIA's Table 3 lists CUDA 11.0.1 RC at 450.36.06 and 11.0.2 GA at 450.51.05; builds ship with GA."""
    _, data = compat(machine, "torch==1.7.0+cu110", "--driver", "450.36.06")
    assert data["verdict"] == "incompatible" and "450.51.05" in reason(data, "driver")["why"]
    assert compat(machine, "torch==1.7.0+cu110", "--driver", "450.51.05")[1]["verdict"] == "compatible"


def test_jaxlib_builds_before_the_plugins(machine: Machine) -> None:
    """jax 0.4.16's setup.py: cuda11_pip installs jaxlib==0.4.16+cuda11.cudnn86, cuda12_pip +cuda12.cudnn89 (CUDA 12.0
    builds); from 0.4.17 the CUDA 12 wheels need CUDA 12.2."""
    _, data = compat(machine, "jax==0.4.16", "--cuda", "11.8")
    assert data["verdict"] == "compatible" and "jax-v0.4.16" in reason(data, "cuda")["source"]
    assert compat(machine, "jax==0.4.16", "--cuda", "12.0")[1]["verdict"] == "compatible"
    assert compat(machine, "jax==0.4.19", "--cuda", "12.0")[1]["verdict"] == "incompatible"
    assert compat(machine, "jax==0.4.19", "--cuda", "10.2")[1]["verdict"] == "incompatible"
