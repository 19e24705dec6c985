"""`compat` for issue 41, round nine (second part): reasoning that carries knowledge the data holds to the releases it
does not (each verdict's source says from which), and builds read from NVIDIA's cuDNN archive."""

from __future__ import annotations

from tests.conftest import Machine
from tests.test_compat_rules import compat, reason


def test_a_gpu_an_earlier_cudnn_matrix_dropped_stays_dropped(machine: Machine) -> None:
    """NVIDIA's cuDNN 9.0.0 support matrix starts at compute capability 5.0 for both CUDA majors; a later release the
    data has no matrix for (9.2.0) does not bring Kepler back. A GPU the nearest earlier matrix supports is not ruled out
    by it (the other rules of the data decide)."""
    _, data = compat(machine, "cudnn==9.2.0", "--compute-capability", "3.5")
    assert data["verdict"] == "incompatible"
    why = reason(data, "compute_capability")
    assert "9.0.0" in why["why"] and "v9.0.0/reference/support-matrix" in why["source"]
    assert compat(machine, "cudnn==9.2.0", "--compute-capability", "6.1")[1]["verdict"] != "incompatible"
    # cuDNN 8.7.0: the nearest earlier matrix the data holds (8.5.0) still lists SM 3.5 and later
    assert compat(machine, "cudnn==8.7.0", "--compute-capability", "3.7")[1]["verdict"] == "unknown"


def test_cudnn_builds_for_cuda_10_2_from_nvidias_archive(machine: Machine) -> None:
    """GoogleCloudDataproc/initialization-actions gpu/README.md tabulates NVIDIA's cuDNN archive: 8.4.1.50 for CUDA
    10.2 and 11.6; 8.2.4.15 for 10.2 and 11.4."""
    _, data = compat(machine, "cudnn==8.4.1", "--cuda", "10.2")
    assert data["verdict"] == "compatible" and "initialization-actions" in reason(data, "cuda")["source"]
    assert compat(machine, "cudnn==8.2.4", "--cuda", "11.4")[1]["verdict"] == "compatible"
    assert compat(machine, "cudnn==8.4.1", "--cuda", "10.1")[1]["verdict"] == "incompatible"


def test_a_paddle_post_build_pairs_its_cuda_with_its_series_cudnn(machine: Machine) -> None:
    """PaddlePaddle/docs release/2.5 linux-pip.md: CUDA 11.6 with cuDNN v8.4.0; the data's 2.5.2.post116 says so, and
    2.5.1.post116 (not in the data) takes it: cuDNN 7 is refused, 8.4 accepted."""
    _, data = compat(machine, "paddlepaddle-gpu==2.5.1.post116", "--cudnn", "7.6.5")
    assert data["verdict"] == "incompatible" and "8.4.0" in reason(data, "cudnn")["why"]
    assert compat(machine, "paddlepaddle-gpu==2.5.1.post116", "--cudnn", "8.4.0")[1]["verdict"] == "compatible"
    # a series whose builds of that CUDA the data does not hold stays unknown
    assert compat(machine, "paddlepaddle-gpu==2.2.2.post112", "--cudnn", "7.6.5")[1]["verdict"] == "unknown"
    # release/2.3's page pairs CUDA 11.2 with cuDNN 8.1.1 (the data's 2.3.2.post112): 2.3.1.post112 takes it
    assert compat(machine, "paddlepaddle-gpu==2.3.1.post112", "--cudnn", "7.6.5")[1]["verdict"] == "incompatible"


def test_a_patch_release_takes_its_series_architectures_for_the_same_cuda(machine: Machine) -> None:
    """PyTorch builds a release branch's wheels with one TORCH_CUDA_ARCH_LIST per CUDA (pytorch/pytorch
    .ci/manywheel/build_cuda.sh): 2.7.1 for CUDA 12.8 has 2.7.0's list for CUDA 12.8 (sm_75 ... sm_120)."""
    _, data = compat(machine, "torch==2.7.1+cu128", "--compute-capability", "10.0")
    assert data["verdict"] == "compatible"
    assert "built by its release branch's build script as 2.7.0" in reason(data, "compute_capability")["source"]
    assert compat(machine, "torch==2.7.1+cu128", "--compute-capability", "6.1")[1]["verdict"] == "incompatible"


def test_round_ten_rows_and_rules(machine: Machine) -> None:
    """cuDNN 8.1's one CUDA 11 binary covers 11.0-11.2 (NVIDIA's forum answer); a cuDNN release between two matrices
    that support a GPU supports it; a patch release keeps its series' builds per platform; Paddle 2.3.2's post101 is
    the CUDA 10.1 / cuDNN 7 build (PaddlePaddle/docs release/2.3); vLLM has no Windows build."""
    assert compat(machine, "cudnn==8.1.1", "--cuda", "11.1")[1]["verdict"] == "compatible"
    assert compat(machine, "cudnn==8.1.1", "--cuda", "11.3")[1]["verdict"] == "incompatible"
    _, data = compat(machine, "cudnn==9.4.0", "--compute-capability", "5.2")
    assert data["verdict"] == "compatible" and "9.0.0" in reason(data, "compute_capability")["why"]
    assert compat(machine, "cudnn==9.4.0", "--compute-capability", "10.0")[1]["verdict"] == "incompatible"
    assert compat(machine, "tensorflow==1.13.2", "--cuda", "10.0")[1]["verdict"] == "compatible"
    assert compat(machine, "paddlepaddle-gpu==2.3.2.post101", "--cudnn", "8.1.1")[1]["verdict"] == "incompatible"
    assert compat(machine, "paddlepaddle-gpu==2.3.2.post112", "--cudnn", "8.1.1")[1]["verdict"] == "compatible"
    assert compat(machine, "vllm==0.8.5", "--os", "windows")[1]["verdict"] == "incompatible"
