"""`compat` for issue 41, round seven: each test runs the CLI as a user would and names, in its docstring, the source
of the rows it exercises; the same source is cited on the rows in compat/."""

from __future__ import annotations

from tests.conftest import Machine
from tests.test_compat_rules import compat, reason


def test_cudnn_releases_nvidia_named_with_two_numbers(machine: Machine) -> None:
    """NVIDIA named cuDNN 5.1 and 6.0 with two numbers (spack's cudnn package.py @ 0097fdfedab8: URLs
    cudnn-8.0-linux-x64-v5.1.tgz, cudnn-8.0-linux-x64-v6.0.tgz; easybuild's cuDNN-6.0.21-CUDA-8.0.44.eb): cudnn==5.1
    is that release, not a range of releases, and so is the library's own three-part number (5.1.10)."""
    _, data = compat(machine, "cudnn==5.1", "--cuda", "8.0")
    assert data["verdict"] == "compatible" and "cudnn-8.0-linux-x64-v5.1.tgz" in reason(data, "cuda")["source"]
    assert compat(machine, "cudnn==5.1.10", "--cuda", "8.0")[1]["verdict"] == "compatible"
    assert compat(machine, "cudnn==6.0", "--cuda", "8.0")[1]["verdict"] == "compatible"
    # cuDNN 5.1 had no build for CUDA 9 (CUDA 9 came with cuDNN 7)
    assert compat(machine, "cudnn==5.1", "--cuda", "9.0")[1]["verdict"] == "incompatible"
    # from cuDNN 7 on, two numbers are a series: a release is needed, and the answer says so
    assert compat(machine, "cudnn==7.1", "--cuda", "9.0")[1]["verdict"] == "unknown"


def test_cudnn_7_4_1_builds_from_nvidias_package_index(machine: Machine) -> None:
    """NVIDIA's redistributable index developer.download.nvidia.com/compute/redist/cudnn/v7.4.1/RHEL7_3-x64 holds
    libcudnn7-7.4.1.5 for CUDA 9.0, 9.2 and 10.0 (nvidia/container-images cuda 2f900088: 'Update to latest cuDNN v7
    (7.4.1.5) for CUDA 9.0, 9.2, and 10.0'): none for 10.1, which came with cuDNN 7.5."""
    _, data = compat(machine, "cudnn==7.4.1", "--cuda", "9.2")
    assert data["verdict"] == "compatible" and "v7.4.1/RHEL7_3-x64" in reason(data, "cuda")["source"]
    assert compat(machine, "cudnn==7.4.1", "--cuda", "10.1")[1]["verdict"] == "incompatible"


def test_paddle_2_6_1_post120_is_a_cuda_12_0_build(machine: Machine) -> None:
    """PaddleX's installation guide: 'paddlepaddle-gpu==2.6.1.post120 -f .../stable.html', for machines with CUDA 12;
    Paddle's own 2.6.1 image is paddle:2.6.1-gpu-cuda12.0-cudnn8.9-trt8.6."""
    assert compat(machine, "paddlepaddle-gpu==2.6.1.post120", "--cuda", "12.0")[1]["verdict"] == "compatible"
    assert compat(machine, "paddlepaddle-gpu==2.6.1.post120", "--cuda", "11.7")[1]["verdict"] == "incompatible"
