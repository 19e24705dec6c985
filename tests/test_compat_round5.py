"""Issue 41's compat knowledge: TensorFlow 1.x links an exact CUDA runtime, the driver floors of CUDA 9 and 10 named by
major, TensorRT 7.0-8.4, cuDNN on Blackwell per release, and Paddle's builds named by their own pip version. Each
test's docstring names the source its rows cite (compat/tensorflow.toml, tensorrt.toml, gpu_support.toml,
paddle.toml)."""

from __future__ import annotations

import pytest

from cudnn_doctor.knowledge.verdicts import judge_driver_for_cuda
from tests.conftest import Machine
from tests.test_compat_rules import compat, whys


@pytest.fixture
def machine(machine_in_process: Machine) -> Machine:
    return machine_in_process


@pytest.mark.parametrize(("args", "verdict", "said"), [
    # tensorflow/docs gpu.md @ e89b2567 'TensorFlow supports CUDA 9.0'; tensorflow/tensorflow#15604: the 9.0 sonames
    (("tensorflow==1.12.0", "--cuda", "9.2"), "incompatible", "libcudart.so.9.0"),
    (("tensorflow==1.12.0", "--cuda", "9.0"), "compatible", "CUDA 9.0"),
    (("tensorflow==1.5.0", "--cuda", "9.1"), "incompatible", "built for CUDA 9.0"),
    # tensorflow/tensorflow#5343: 0.11 and later (to 1.4) built for CUDA 8.0
    (("tensorflow==1.4.0", "--cuda", "8.0"), "compatible", "CUDA 8.0"),
    # tensorflow/docs gpu.md: 'CUDA 9.0 requires 384.x or higher'; NVIDIA's table: 9.0.176 needs 384.81
    (("tensorflow==1.12.0", "--driver", "375.26"), "incompatible", "384.81"),
    (("tensorflow==1.12.0", "--driver", "390.48"), "compatible", "384.81"),
])
def test_tensorflow_1_links_one_cuda_runtime(machine: Machine, args: tuple[str, ...], verdict: str, said: str) -> None:
    _, data = compat(machine, *args)
    assert data["verdict"] == verdict
    assert said in " | ".join(r["why"] for r in data["reasons"])


@pytest.mark.parametrize(("cuda", "driver", "verdict"), [
    # NVIDIA CUDA release notes, Table 3: 9.0.176 >= 384.81 ... 9.2.148 >= 396.37; 10.0.130 >= 410.48 ... 10.2 >= 440.33
    ("9", "375.26", "incompatible"),
    ("9", "396.37", "compatible"),
    ("9", "390.46", "unknown"),
    ("10", "418.39", "unknown"),
    ("10", "440.33", "compatible"),
    ("10", "396.26", "incompatible"),
])
def test_a_cuda_major_before_minor_version_compatibility_has_a_floor_and_a_ceiling(cuda: str, driver: str,
                                                                                   verdict: str) -> None:
    assert judge_driver_for_cuda(cuda, driver, "linux").verdict == verdict


@pytest.mark.parametrize(("args", "verdict", "said"), [
    # NVIDIA/TensorRT#800: 7.1.3.4 on an RTX 3080 'Unsupported SM'; Tencent/TNN#1339: 7.2.3.4 on an A10 (8.6)
    (("tensorrt==7.1.3.4", "--compute-capability", "8.6"), "incompatible", "arrives in 7.2"),
    (("tensorrt==7.2.3.4", "--cuda", "11.1", "--compute-capability", "8.6"), "compatible", "Ampere GA10x"),
    # NVIDIA/TensorRT#2727: 8.4.1.5 'Unsupported SM: 0x809' on an RTX 4080; 8.5.1.7 runs it
    (("tensorrt==8.4.1.5", "--compute-capability", "8.9"), "incompatible", "arrives in 8.5"),
    (("tensorrt==8.5.1.7", "--compute-capability", "8.9"), "compatible", "Ada"),
    # TensorRT 8.4.3 support matrix: CUDA 10.2 and 11.0-11.7, cuDNN 8.4.1
    (("tensorrt==8.4.3", "--cuda", "11.7"), "compatible", "CUDA 11"),
    (("tensorrt==8.4.3", "--cudnn", "9.1.0"), "incompatible", ""),
    # NVIDIA/TensorRT#2332: 7.0.0.11 with CUDA 10.2 and cuDNN 7.6.5
    (("tensorrt==7.0.0.11", "--cuda", "10.2"), "compatible", "CUDA 10.2"),
])
def test_tensorrt_7_to_8_4(machine: Machine, args: tuple[str, ...], verdict: str, said: str) -> None:
    _, data = compat(machine, *args)
    assert data["verdict"] == verdict, data["reasons"]
    assert said in " | ".join(r["why"] for r in data["reasons"])


@pytest.mark.parametrize(("version", "verdict"), [
    # NVIDIA/TransformerEngine#2775 (Blackwell from cuDNN 9.7); torch 2.7.0's CUDA 12.8 build ships cuDNN 9.7.1
    ("9.6.0", "incompatible"), ("8.9.7", "incompatible"), ("9.7.0", "compatible"),
])
def test_cudnn_on_blackwell_per_release(machine: Machine, version: str, verdict: str) -> None:
    _, data = compat(machine, f"cudnn=={version}", "--compute-capability", "12.0")
    assert data["verdict"] == verdict, data["reasons"]
    assert "Blackwell" in whys(data, "compute_capability")


def test_a_paddle_build_named_by_its_own_pip_version(machine: Machine) -> None:
    """PaddlePaddle's v2.5 install commands (paddlepaddle-gpu==2.5.2.post116 -f https://www.paddlepaddle.org.cn/whl/
    linux/mkl/avx/stable.html): the post116 build is CUDA 11.6, on Paddle's own index, not PyPI."""
    _, data = compat(machine, "paddlepaddle-gpu==2.5.2.post116", "--cuda", "11.6")
    assert data["verdict"] == "compatible"
    _, data = compat(machine, "paddlepaddle-gpu==2.5.2.post116", "--cuda", "12.0")
    assert data["verdict"] == "incompatible" and "11.6" in whys(data, "cuda")
