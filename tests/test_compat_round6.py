"""`compat` for issue 41's classes, round six: each test runs the CLI as a user would and names, in its docstring,
the source of the rule or rows it exercises; the same source is cited on the rows in compat/."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.conftest import ROOT, Machine
from tests.real_wheels import real_wheel
from tests.test_compat_rules import compat, reason


def verdict(machine: Machine, *args: str) -> str:
    return str(compat(machine, *args)[1]["verdict"])


# --- cuDNN's driver need is its CUDA runtime's (compat/rules.toml [cudnn_driver]) ------------------

def test_a_cudnn_build_runs_on_the_driver_its_cuda_runtime_accepts(machine: Machine) -> None:
    """NVIDIA cuDNN 8.4.0/8.5.0 support matrices: 'For the CUDA driver requirements for a given CUDA version, refer
    to the CUDA Compatibility documentation'; CUDA release notes Table 3: CUDA 9.0 >= 384.81, 9.2 (9.2.88) >= 396.26.
    The 7.6.5 matrix names r384.111 beside 9.0.176: what NVIDIA tested, above what the runtime accepts."""
    _, data = compat(machine, "cudnn==7.6.5", "--cuda", "9.0", "--driver", "384.81")
    driver = reason(data, "driver")
    assert data["verdict"] == "compatible" and driver["warning"] is True
    assert "384.111" in driver["why"] and "384.81" in driver["why"] and "CUDA Compatibility" in driver["source"]
    assert verdict(machine, "cudnn==7.6.5", "--cuda", "9.0", "--driver", "384.59") == "incompatible"
    # a matrix row not read: the runtime's floor decides both ways
    assert verdict(machine, "cudnn==7.4.2", "--cuda", "9.2", "--driver", "396.26") == "compatible"
    assert verdict(machine, "cudnn==7.4.2", "--cuda", "9.2", "--driver", "390.46") == "incompatible"


def test_cudnn_7_builds_from_nvidias_archive_names(machine: Machine) -> None:
    """NVIDIA's cuDNN redistributable archives (developer.download.nvidia.com/compute/redist/cudnn/v7.4.2/
    cudnn-9.2-linux-x64-v7.4.2.24.tgz and its siblings): 7.4.2 was built for CUDA 9.0, 9.2 and 10.0, not 10.1."""
    _, data = compat(machine, "cudnn==7.4.2", "--cuda", "9.2")
    assert data["verdict"] == "compatible" and "cudnn-9.2-linux-x64-v7.4.2.24.tgz" in reason(data, "cuda")["source"]
    assert verdict(machine, "cudnn==7.4.2", "--cuda", "10.1") == "incompatible"


# --- cuDNN's architectures, per class of releases (compat/gpu_support.toml [[support]]) -----------

@pytest.mark.parametrize(("args", "expected", "words"), [
    (("cudnn==9.14.0", "--cuda", "13.0", "--compute-capability", "7.5"), "compatible", "Turing to Hopper"),
    (("cudnn==8.6.0", "--cuda", "11.8", "--compute-capability", "8.9"), "compatible", "Turing to Hopper"),
    (("cudnn==9.1.0", "--cuda", "12.4", "--compute-capability", "5.0"), "compatible", "Maxwell, Pascal and Volta"),
    (("cudnn==8.2.4", "--cuda", "11.4", "--compute-capability", "8.6"), "compatible", "Kepler to Ampere"),
    (("cudnn==9.8.0", "--cuda", "12.8", "--compute-capability", "12.0"), "compatible", "Blackwell"),
    (("cudnn==9.0.0", "--cuda", "12.3", "--compute-capability", "12.0"), "incompatible", "arrives in 9.7.0"),
    (("cudnn==9.12.0", "--cuda", "13.0", "--compute-capability", "6.1"), "incompatible", "removed in 9.11.0"),
])
def test_cudnn_architectures_by_class_of_release(machine: Machine, args: tuple[str, ...], expected: str,
                                                 words: str) -> None:
    """NVIDIA cuDNN support matrices 8.1-8.5 ('SM 3.5 and later', Kepler to Ampere), 8.9.1, 8.9.6, 9.0.0, 9.5.1,
    9.10.2, 9.17.0 (9.0, 8.9, 8.6, 8.0, 7.5 in every package; 7.0-5.0 through 9.10; 12.0 and 10.0 from 9.7)."""
    _, data = compat(machine, *args)
    assert data["verdict"] == expected and words in reason(data, "compute_capability")["why"]


def test_a_cuda_major_or_toolkit_that_does_not_target_the_gpu(machine: Machine) -> None:
    """compat/gpu_support.toml [[cuda_floor]] (CUDA 12 starts at 5.0) and [[driver_floor]] first_cuda (Blackwell from
    CUDA 12.8; 12.1's SASS family from 12.0's first toolkit): a build for an older CUDA holds no kernels for it."""
    _, data = compat(machine, "cudnn==8.9.7", "--cuda", "12.2", "--compute-capability", "3.5")
    assert data["verdict"] == "incompatible" and "starts at compute capability 5.0" in \
        reason(data, "compute_capability")["why"]
    _, data = compat(machine, "cudnn==9.8.0", "--cuda", "12.4", "--compute-capability", "12.0")
    assert data["verdict"] == "incompatible" and "from CUDA 12.8 on" in reason(data, "compute_capability")["why"]
    # SASS for 12.0 runs on 12.1: a 12.8 build is not ruled out on a DGX Spark
    assert verdict(machine, "cudnn==9.10.2", "--cuda", "12.8", "--compute-capability", "12.1") == "unknown"


def test_cudnn_architectures_read_from_the_wheels_fat_binaries(machine: Machine) -> None:
    """nvidia-cudnn-cu13==9.19.0.56 and nvidia-cudnn-cu12==8.9.7.29 (maintenance/refresh_compat.py --cudnn-wheel):
    9.19.0 for CUDA 13 has SASS sm_75..sm_121 and PTX 12.1; 8.9.7 for CUDA 12 sm_50..sm_90."""
    _, data = compat(machine, "cudnn==9.19.0", "--cuda", "13.0", "--compute-capability", "12.1")
    part = reason(data, "compute_capability")
    assert data["verdict"] == "compatible" and "sm_121" in part["why"] and "nvidia-cudnn-cu13==9.19.0.56" in part["source"]
    # the aarch64 (sbsa) wheel of 9.19.0 adds Thor's sm_110; where only the x86_64 wheel was read (8.9.7), a GPU inside
    # the span without kernels is unknown: another platform's build may hold them
    _, data = compat(machine, "cudnn==9.19.0", "--cuda", "13.0", "--compute-capability", "11.0")
    assert data["verdict"] == "compatible" and "sm_110" in reason(data, "compute_capability")["why"]
    _, data = compat(machine, "cudnn==8.9.7", "--cuda", "12.2", "--compute-capability", "5.2")
    assert data["verdict"] == "compatible" and "sm_50" in reason(data, "compute_capability")["why"]
    assert verdict(machine, "cudnn==8.9.7", "--cuda", "12.2", "--compute-capability", "8.9") == "compatible"


def test_refresh_reads_a_cudnn_wheels_architectures() -> None:
    """The maintainer's reader prints the SASS of each library and the arch_list compat/cudnn.toml records."""
    wheel = real_wheel("9.19.0")
    out = subprocess.run([sys.executable, str(ROOT / "maintenance" / "refresh_compat.py"), "--cudnn-wheel", str(wheel)],
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    assert 'arch_list = ["7.5", "8.0", "9.0", "10.0", "12.0", "12.1"]  # ptx: 12.1' in out.stdout
    assert "libcudnn_engines_precompiled.so.9: SASS sm_70" in out.stdout


# --- TensorRT 7.x-8.4 (compat/tensorrt.toml, compat/gpu_support.toml) -----------------------------

def test_tensorrt_7_and_8_from_their_support_matrices(machine: Machine) -> None:
    """NVIDIA TensorRT support matrices 7.1.3 (CUDA 11.0 RC, 10.2), 8.0.3 (11.0u1-11.3u1, 10.2; cuDNN 8.2.1), 8.2.5
    (11.0u1-11.5u2, 10.2; cuDNN 8.2.1); 7.x packages per toolkit; Hopper from 8.5 (8.4 stops at CUDA 11.7)."""
    assert verdict(machine, "tensorrt==8.2.5", "--cuda", "11.4") == "compatible"
    assert verdict(machine, "tensorrt==8.0.3", "--cudnn", "8.2.1") == "compatible"
    assert verdict(machine, "tensorrt==8.0.3", "--cudnn", "7.6.5") == "incompatible"
    _, data = compat(machine, "tensorrt==8.2.5", "--cuda", "11.8")
    assert data["verdict"] == "unknown" and "11.0 to 11.5" in reason(data, "cuda")["why"]
    _, data = compat(machine, "tensorrt==7.1.3", "--cuda", "11.1")
    assert data["verdict"] == "incompatible" and "exactly CUDA 11.0" in reason(data, "cuda")["why"]
    assert verdict(machine, "tensorrt==7.2.1", "--cuda", "11.0") == "compatible"
    _, data = compat(machine, "tensorrt==8.4.3", "--compute-capability", "9.0")
    assert data["verdict"] == "incompatible" and "arrives in 8.5" in reason(data, "compute_capability")["why"]
    assert verdict(machine, "tensorrt==8.6.1", "--compute-capability", "9.0") == "compatible"


# --- PaddlePaddle's own index (compat/paddle.toml, rules.toml [[framework_arch_check]]) ----------

def test_paddle_post_builds_with_their_cudnn(machine: Machine) -> None:
    """PaddlePaddle/docs release/2.4 and release/2.5 docs/install/pip/linux-pip.md: 11.2 with cuDNN 8.2.1, 11.6 with
    8.4.0, 11.7 with 8.4.1, 12.0 with 8.9.1 (the postNNN wheels of Paddle's find-links page)."""
    _, data = compat(machine, "paddlepaddle-gpu==2.4.2.post116", "--cuda", "11.6", "--cudnn", "8.4.0")
    assert data["verdict"] == "compatible" and "release/2.4" in reason(data, "cudnn")["source"]
    assert verdict(machine, "paddlepaddle-gpu==2.4.2.post112", "--cudnn", "7.6.5") == "incompatible"
    assert verdict(machine, "paddlepaddle-gpu==2.5.2.post120", "--cuda", "12.0", "--cudnn", "8.9.1") == "compatible"


def test_paddle_refuses_gpus_its_build_cannot_have_been_compiled_for(machine: Machine) -> None:
    """PaddlePaddle/Paddle#72672, #76037, PaddleX#4285 ('Mismatched GPU Architecture ... your current GPU is 120'):
    Paddle checks the GPU against its compiled list; a CUDA 12.6 build cannot list 12.0 (first targeted by 12.8).
    #76037: the cu129 build of 3.2.0 runs on an RTX 5070 Ti."""
    _, data = compat(machine, "paddlepaddle-gpu==3.0.0", "--cuda", "12.6", "--compute-capability", "12.0")
    part = reason(data, "compute_capability")
    assert data["verdict"] == "incompatible" and "Mismatched GPU Architecture" in part["why"]
    _, data = compat(machine, "paddlepaddle-gpu==3.2.0", "--cuda", "12.9", "--compute-capability", "12.0")
    assert data["verdict"] == "compatible" and "#76037" in reason(data, "compute_capability")["source"]


# --- vLLM runs on the torch it pins (compat/vllm.toml, rules.toml runs_on_framework) --------------

def test_vllm_is_judged_on_the_pytorch_build_it_pins(machine: Machine) -> None:
    """vllm==0.11.0 PyPI metadata: Requires-Dist torch==2.8.0, whose PyPI build is CUDA 12.8 with cuDNN 9.10.2.21
    and sm_70..sm_120 (compat/pytorch.toml); vLLM docs: 'GPU: compute capability 7.0 or higher'."""
    _, data = compat(machine, "vllm==0.11.0", "--cuda", "12.8", "--cudnn", "9.10.2")
    assert data["verdict"] == "compatible" and "vllm==0.11.0 PyPI metadata" in reason(data, "cuda")["source"]
    assert [r["cuda"] for r in data["requires"]] == ["12.8"]
    assert verdict(machine, "vllm==0.11.0", "--cudnn", "8.9.7") == "incompatible"
    _, data = compat(machine, "vllm==0.11.0", "--compute-capability", "6.1")
    assert data["verdict"] == "incompatible" and "7.0 or higher" in reason(data, "compute_capability")["why"]
    # 0.10.1.1 pins torch 2.7.1, whose PyPI build is CUDA 12.6 (no Blackwell)
    assert verdict(machine, "vllm==0.10.1.1", "--compute-capability", "12.0") == "incompatible"
    assert verdict(machine, "vllm==0.14.1", "--compute-capability", "12.0") == "compatible"
    code, listing = compat(machine, "--list", "vllm")
    assert code == 0 and {"version": "0.11.0", "torch": "2.8.0"} in [
        {key: row[key] for key in ("version", "torch")} for row in listing["rows"]]


# --- JAX: a plugin's name fixes its CUDA; a cuDNN range whose newest release dropped the GPU --------

def test_jax_plugin_names_fix_the_cuda(machine: Machine) -> None:
    """compat/rules.toml [[package_cuda]] for jax-cuda13-plugin (from 0.7.2; 'On CUDA 13 ... SM version 7.5 or
    newer'), jax-cuda12-plugin (from 0.4.22) and jax-cuda11-plugin (0.4.22-0.4.25: jaxlib 0.4.26 'JAX now supports
    CUDA 12.1 or newer only')."""
    _, data = compat(machine, "jax-cuda13-plugin==0.8.0", "--compute-capability", "7.0")
    assert data["verdict"] == "incompatible" and "7.5 or higher" in reason(data, "compute_capability")["why"]
    _, data = compat(machine, "jax-cuda11-plugin==0.4.30", "--cuda", "11.8")
    assert data["verdict"] == "incompatible" and "0.4.22 to 0.4.25" in reason(data, "build")["why"]


def test_a_cudnn_range_whose_newest_release_dropped_the_gpu(machine: Machine) -> None:
    """jax-cuda12-plugin==0.8.0 METADATA: nvidia-cudnn-cu12>=9.8,<10; pip installs the newest nvidia-cudnn-cu12
    wheel in range (compat/cudnn.toml [[wheel]]), and cuDNN 9.11.0 removed Maxwell, Pascal and Volta
    (compat/gpu_support.toml): it runs only with cuDNN pinned below 9.11.0. Named, the cuDNN decides."""
    _, data = compat(machine, "jax-cuda12-plugin==0.8.0", "--compute-capability", "7.0")
    part = reason(data, "compute_capability")
    assert data["verdict"] == "compatible" and part["warning"] is True
    assert "'nvidia-cudnn-cu12<9.11.0'" in part["why"] and "removed in 9.11.0" in part["why"]
    _, data = compat(machine, "jax-cuda12-plugin==0.8.0", "--compute-capability", "8.6")
    assert data["verdict"] == "compatible" and reason(data, "compute_capability")["warning"] is False
    assert verdict(machine, "jax-cuda12-plugin==0.8.0", "--cudnn", "9.12.0", "--compute-capability", "7.0") == \
        "incompatible"


def test_jaxlib_local_versions_name_their_build(machine: Machine) -> None:
    """jax-ml/jax README/setup.py at jax-v0.4.10, -v0.4.13, -v0.4.16 and installation.md at -v0.4.19/-v0.4.21
    (compat/rules.toml [[local_version_build]]): +cuda11.cudnn86 is CUDA 11.8 with cuDNN 8.6 or newer of 8.x;
    +cuda12.cudnn89 needed CUDA 12.0 to 12.2 by release; a tag the sources do not name is not judged."""
    assert verdict(machine, "jaxlib==0.4.13+cuda11.cudnn86", "--cuda", "11.8", "--cudnn", "8.6.0") == "compatible"
    _, data = compat(machine, "jaxlib==0.4.13+cuda11.cudnn86", "--cuda", "11.2")
    assert data["verdict"] == "incompatible" and "11.8 or newer" in reason(data, "cuda")["why"]
    assert verdict(machine, "jaxlib==0.4.13+cuda11.cudnn86", "--cudnn", "8.2.4") == "incompatible"
    assert verdict(machine, "jaxlib==0.4.20+cuda12.cudnn89", "--cuda", "12.2") == "compatible"
    _, data = compat(machine, "jaxlib==0.4.20+cuda12.cudnn89", "--cuda", "12.1")
    assert data["verdict"] == "unknown" and "12.0 to 12.2" in reason(data, "cuda")["why"]
    _, data = compat(machine, "jaxlib==0.4.20+cuda12.cudnn80", "--cuda", "12.2")
    assert data["verdict"] == "unknown" and "not a build the data knows" in reason(data, "build")["why"]


def test_tensorrt_packages_per_toolkit_that_the_data_may_not_all_hold(machine: Machine) -> None:
    """TensorRT 7.0.0.11's packages for CUDA 10.0 and 10.2 (NVIDIA's tar names; builds_complete = false): another
    toolkit is unknown, not incompatible. The 8.5.3 and 8.4.1 support matrices list CUDA 10.2 packages."""
    assert verdict(machine, "tensorrt==7.0.0", "--cuda", "10.0") == "compatible"
    _, data = compat(machine, "tensorrt==7.0.0", "--cuda", "9.0")
    assert data["verdict"] == "unknown" and "packaged per CUDA toolkit" in reason(data, "cuda")["why"]
    # but it links cuDNN 7.6, which was never built for CUDA 11 (compat/cudnn.toml): no such package can exist
    _, data = compat(machine, "tensorrt==7.0.0", "--cuda", "11.0")
    assert data["verdict"] == "incompatible" and "never built for CUDA 11.0" in reason(data, "cuda")["why"]
    assert verdict(machine, "tensorrt==8.5.3", "--cuda", "10.2") == "compatible"
    assert verdict(machine, "tensorrt==8.4.1", "--cuda", "10.2") == "compatible"


def test_releases_between_two_readings_keep_what_the_later_one_still_holds(machine: Machine) -> None:
    """nvidia-cudnn-cu13==9.28.1.4's fat binaries (SASS sm_75..sm_120, PTX 12.0): an architecture it still holds was
    not removed by any release before it, so 9.18-9.28 keep Turing to Blackwell; 12.1 read from the CUDA 13 wheels
    only (9.19.0, 9.28.1) says nothing about a CUDA 12 build."""
    assert verdict(machine, "cudnn==9.20.0", "--cuda", "13.0", "--compute-capability", "9.0") == "compatible"
    assert verdict(machine, "cudnn==9.24.0", "--cuda", "13.0", "--compute-capability", "12.0") == "compatible"
    assert verdict(machine, "cudnn==9.22.0", "--cuda", "13.0", "--compute-capability", "12.1") == "compatible"
    assert verdict(machine, "cudnn==9.22.0", "--cuda", "12.9", "--compute-capability", "12.1") == "unknown"
    _, data = compat(machine, "cudnn==9.28.1", "--cuda", "13.0", "--compute-capability", "11.0")
    assert data["verdict"] == "unknown" and "other platforms' builds were not read" in \
        reason(data, "compute_capability")["why"]
    # 9.12.0, the first cuDNN for CUDA 13, already holds sm_120 SASS (which runs on 12.1): so does every release since
    assert verdict(machine, "cudnn==9.14.0", "--cuda", "13.0", "--compute-capability", "12.1") == "compatible"
