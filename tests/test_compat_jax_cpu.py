"""Issue 21: a CPU-only JAX (jax + jaxlib from PyPI, no CUDA plugin) is listed by `check` as installed without GPU
support (CD406), with its version; a CUDA plugin, or a monolithic CUDA jaxlib, makes it a GPU build.

Sources: jax-ml/jax CHANGELOG.md, 'jax 0.4.30': 'You can install a CPU-only jax with `pip install jax`, no extras
required' and 'jaxlib 0.4.30': 'Support for monolithic CUDA jaxlibs has been dropped. You must use the plugin-based
installation (`pip install jax[cuda12]` ...)'; docs/installation.md @ tag jax-v0.4.25 (jaxlib==0.3.25+cuda11.cudnn82
style local versions of the monolithic CUDA wheels)."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import Machine, codes
from tests.test_compat_rules import install_wheel, python_env


def jax_of(report: dict) -> dict:
    [jax] = [f for f in report["frameworks"] if f["name"] == "jax"]
    return jax


def test_jax_and_jaxlib_without_a_plugin_is_a_cpu_only_install(machine: Machine, tmp_path: Path) -> None:
    site = python_env(machine, tmp_path)
    install_wheel(site, "jax", "0.7.1", "jaxlib<=0.7.1,>=0.7.1", "ml_dtypes>=0.5.0")
    install_wheel(site, "jaxlib", "0.7.1", "scipy>=1.12")
    report = machine.check_json()
    jax = jax_of(report)
    assert jax["version"] == "0.7.1" and jax["details"]["cpu_only"] is True and jax["details"]["jaxlib"] == "0.7.1"
    assert jax["cuda_built_for"] is None and jax["cudnn_expected"] is None
    cpu = [f for f in report["findings"] if f["code"] == "CD406"]
    assert len(cpu) == 1 and "0.7.1" in cpu[0]["detail"] + cpu[0]["title"] + str(cpu[0].get("subject"))
    assert "CD401" not in codes(report)


def test_a_cuda_plugin_makes_it_a_gpu_build(machine: Machine, tmp_path: Path) -> None:
    site = python_env(machine, tmp_path)
    install_wheel(site, "jax", "0.7.1", "jaxlib<=0.7.1,>=0.7.1")
    install_wheel(site, "jaxlib", "0.7.1")
    install_wheel(site, "jax-cuda12-plugin", "0.7.1", 'nvidia-cudnn-cu12<10.0,>=9.8; extra == "with-cuda"')
    report = machine.check_json()
    jax = jax_of(report)
    assert jax["cuda_built_for"] == "12" and not jax["details"].get("cpu_only")
    assert "CD406" not in codes(report)


def test_a_monolithic_cuda_jaxlib_is_a_gpu_build(machine: Machine, tmp_path: Path) -> None:
    site = python_env(machine, tmp_path)
    install_wheel(site, "jax", "0.4.25")
    install_wheel(site, "jaxlib", "0.4.25+cuda12.cudnn89")
    jax = jax_of(machine.check_json())
    assert jax["details"]["cpu_only"] is False and jax["cuda_built_for"] == "12" and jax["cudnn_expected"] == "8.9"
    assert jax["details"]["jaxlib"] == "0.4.25+cuda12.cudnn89"
