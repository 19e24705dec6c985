"""Issue 35: GPU support as a class (compat/gpu_support.toml), Theano's warnings, PaddlePaddle 3.0.0's builds.

Each rule's data row is named with the source it was read from; `compat` runs as a user would and the verdict and
the reason's source are checked."""

from __future__ import annotations

import pytest
import tomllib

from cudnn_doctor.knowledge import gpu_support
from tests.conftest import ROOT, Machine
from tests.test_compat_rules import compat, reason

DATA = tomllib.loads((ROOT / "compat" / "gpu_support.toml").read_text())


def support_row(product: str, architecture: str) -> dict:
    return next(r for r in DATA["support"] if r["product"] == product and r["architecture"] == architecture)


def test_every_row_is_cited_and_every_driver_floor_resolves() -> None:
    """Each [[support]], [[cuda_floor]] and [[driver_floor]] row names its source; a driver floor's first CUDA has a
    driver in compat/cuda.toml (the floor is read from there, not copied)."""
    for table in ("support", "cuda_floor", "driver_floor"):
        assert DATA[table] and all(len(row["source"]) > 20 for row in DATA[table])
    for row in DATA["driver_floor"]:
        found = gpu_support.driver_floor(row["compute_capabilities"][0])
        assert found is not None and found[1] == row["first_cuda"] and found[2][:3].isdigit()


@pytest.mark.parametrize(("args", "verdict", "row", "evidence"), [
    # Volta removed in 10.5 and not brought back later (10.5.0 release notes)
    (("tensorrt==10.6.0", "--compute-capability", "7.0"), "incompatible", ("tensorrt", "Volta"), "removed in 10.5"),
    (("tensorrt==11.4.0", "--compute-capability", "7.0"), "incompatible", ("tensorrt", "Volta"), "removed in 10.5"),
    (("tensorrt==10.4.0", "--compute-capability", "7.0"), "compatible", ("tensorrt", "Volta"), "deprecated"),
    # Blackwell from 10.8 (10.8.0 release notes)
    (("tensorrt==10.7.0", "--compute-capability", "12.0"), "incompatible", ("tensorrt", "Blackwell"), "arrives in 10.8"),
    (("tensorrt==10.9.0", "--compute-capability", "12.0"), "compatible", ("tensorrt", "Blackwell"), "since 10.8"),
    # DGX Spark's 12.1 from 11.1: an earlier release's sm_120 kernels may run, NVIDIA does not say
    (("tensorrt==11.0.0", "--compute-capability", "12.1"), "unknown", ("tensorrt", "Blackwell (DGX Spark)"), "11.1"),
    (("tensorrt==11.3.0", "--compute-capability", "10.7"), "compatible", ("tensorrt", "Rubin"), "since 11.3"),
    # Maxwell dropped in 9.0, Pascal in 10.0
    (("tensorrt==8.6.1", "--compute-capability", "5.2"), "compatible", ("tensorrt", "Maxwell"), "Maxwell"),
    (("tensorrt==10.2.0", "--compute-capability", "6.1"), "incompatible", ("tensorrt", "Pascal"), "removed in 10.0"),
])
def test_tensorrt_architectures_per_release(machine: Machine, args: tuple[str, ...], verdict: str,
                                            row: tuple[str, str] | None, evidence: str) -> None:
    _, data = compat(machine, *args)
    part = reason(data, "compute_capability")
    assert data["verdict"] == verdict and evidence in part["why"] + part["source"]
    if row:
        assert support_row(*row)["source"][:60] in part["source"]


def test_tensorrt_8_5_on_kepler_is_unknown_citing_both_sources(machine: Machine) -> None:
    """The 8.5.2 release notes keep Kepler in 8.5, the 8.x support matrix starts at SM 5.0: sources contradict."""
    _, data = compat(machine, "tensorrt==8.5.3", "--compute-capability", "3.5")
    part = reason(data, "compute_capability")
    assert data["verdict"] == "unknown" and "contradict" in part["why"]
    assert "8.5.2 Release Notes" in part["source"] and "Support Matrix" in part["source"]


def test_cudnn_releases_after_9_11_inherit_its_dropped_architectures(machine: Machine) -> None:
    """cuDNN 9.11 removed Maxwell, Pascal and Volta (AUR cudnn9.10 'Maxwell/Pascal/Volta support'); 9.22 has no
    matrix in compat/ and still must not fall to unknown."""
    code, data = compat(machine, "cudnn==9.22.0", "--cuda", "12.9", "--compute-capability", "6.1")
    part = reason(data, "compute_capability")
    assert code == 1 and data["verdict"] == "incompatible" and "removed in 9.11.0" in part["why"]
    assert "aur.archlinux.org/packages/cudnn9.10-cuda12.9" in part["source"]
    _, data = compat(machine, "cudnn==8.9.7", "--cuda", "11.8", "--compute-capability", "8.9")
    assert data["verdict"] == "compatible" and "cudnn-896/support-matrix" in reason(data, "compute_capability")["source"]


def test_cuda_13_builds_start_at_7_5_for_onnx_runtime_too(machine: Machine) -> None:
    """[[cuda_floor]] cuda_major 13: CUDA 13 no longer targets Maxwell, Pascal and Volta, whatever the product."""
    _, data = compat(machine, "onnxruntime-gpu==1.28.0", "--compute-capability", "7.0")
    part = reason(data, "compute_capability")
    assert data["verdict"] == "incompatible" and "CUDA 13 starts at compute capability 7.5" in part["why"].replace(
        "a build for CUDA 13 starts", "CUDA 13 starts")
    assert "pytorch/pytorch/issues/157517" in part["source"]
    _, data = compat(machine, "onnxruntime-gpu==1.26.0", "--compute-capability", "6.1")  # a CUDA 12 build: not read
    assert data["verdict"] == "unknown"


@pytest.mark.parametrize(("args", "verdict", "evidence"), [
    # CUDA 12.8 code runs on 535 (minor-version compatibility) but a Blackwell GPU needs CUDA 12.8's driver
    (("torch==2.7.0+cu128", "--driver", "535.54.03", "--compute-capability", "12.0"), "incompatible", "570.26"),
    (("torch==2.7.0+cu128", "--driver", "535.54.03", "--compute-capability", "8.6"), "compatible", None),
    (("cudnn==8.9.7", "--cuda", "11.8", "--driver", "515.65.01", "--compute-capability", "8.9"), "incompatible",
     "520.61.05"),
    # [[driver_ceiling]]: R590 no longer drives Pascal (legacy branch R580)
    (("torch==2.7.0+cu126", "--driver", "590.48.01", "--compute-capability", "6.1"), "incompatible", "up to R580"),
])
def test_driver_floor_per_gpu_generation_with_the_cuda_floor(machine: Machine, args: tuple[str, ...], verdict: str,
                                                             evidence: str | None) -> None:
    _, data = compat(machine, *args)
    assert data["verdict"] == verdict
    drivers = [r for r in data["reasons"] if r["part"] == "driver"]
    if evidence:
        gpu = next(r for r in drivers if r["verdict"] == "incompatible")
        assert evidence in gpu["why"]
        assert "cnblogs.com/JayChen1996" in gpu["source"] or "wiki.nixos.org" in gpu["source"]
    else:
        assert all(r["verdict"] == "compatible" for r in drivers)


def test_theano_newer_than_tested_is_a_warning_not_a_refusal(machine: Machine) -> None:
    """Theano 1.0's _dnn_check_version: 'if v >= 7200: warnings.warn(...)' then accepts (compat/theano.toml
    cudnn_warns); older than its minimum is still refused."""
    code, data = compat(machine, "theano==1.0.5", "--cudnn", "7.6.5")
    part = reason(data, "cudnn")
    assert code == 0 and data["verdict"] == "compatible" and part["warning"] and "more recent than Theano" in part["why"]
    _, data = compat(machine, "theano==1.0.5", "--cudnn", "4.0.7")
    assert data["verdict"] == "incompatible"


def test_paddle_3_0_0_builds_from_the_paddlex_install_page(machine: Machine) -> None:
    """PaddleX 3.0 install page: paddle:3.0.0-gpu-cuda11.8-cudnn8.9 and paddle:3.0.0-gpu-cuda12.6-cudnn9.5."""
    _, data = compat(machine, "paddlepaddle-gpu==3.0.0", "--cuda", "12.6", "--cudnn", "8.9.7")
    assert data["verdict"] == "incompatible" and "PaddleX" in reason(data, "cudnn")["source"]
    _, data = compat(machine, "paddlepaddle-gpu==3.0.0", "--cuda", "11.8", "--cudnn", "8.9.7")
    assert data["verdict"] == "compatible"
