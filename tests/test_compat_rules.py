"""`compat` and `check` reason like their sources: inputs checked first, ranges, data limits, builds that never
existed, the rules of compat/rules.toml, GPUs, and the frameworks beyond the four.

Each test's docstring names the source of the rule or row it exercises; the same source is cited in compat/.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT, Machine, codes
from tests.fakes.build import fake_cudnn, fake_framework_library, fake_nvml
from tests.test_frameworks import python_env


@pytest.fixture
def machine(machine_in_process: Machine) -> Machine:
    """The CLI runs in the test's own process (conftest.run_in_process): nothing here needs a process of its own."""
    return machine_in_process

CUDNN9 = ["libcudnn_graph", "libcudnn_ops", "libcudnn_cnn", "libcudnn_adv", "libcudnn_engines_precompiled",
          "libcudnn_engines_runtime_compiled", "libcudnn_heuristic"]


def compat(machine: Machine, *args: str) -> tuple[int, dict]:
    result = machine.run("compat", *args, "--json")
    assert "Traceback" not in result.stderr, result.stderr
    data = result.json
    assert data["exit_code"] == result.exit_code
    return result.exit_code, data


def reason(data: dict, part: str) -> dict:
    return next(r for r in data["reasons"] if r["part"] == part)


def whys(data: dict, part: str) -> str:
    """Every reason of PART, joined: a build's own architecture list and its cuDNN's (compat/gpu_support.toml) both
    speak about a GPU."""
    return " | ".join(r["why"] for r in data["reasons"] if r["part"] == part)


# --- inputs are checked before they are judged ----------------------------------------------------

@pytest.mark.parametrize("args", [
    ("torch==2.5.1", "--cuda", "banana"), ("torch==2.5.1", "--driver", "abc"),
    ("torch==2.5.1", "--compute-capability", "x"), ("torch==2.5.1", "--cudnn", "9..1"),
    ("torch==2.5.1", "--os", "beos"), ("torch==2.5.1", "--cudnn", "9" * 5000), ("torch==2.5.1", "--cuda", "12.4.1.7"),
    ("torch==abc",), ("torch==" + "1" * 5000,), ("cudnn==9..1",), ("torch==2.5.1", "--compute-capability", "86"),
])
def test_bad_values_are_one_line_and_exit_2(machine: Machine, args: tuple[str, ...]) -> None:
    """Issue 16 item 4: --cuda banana, --driver abc, --compute-capability x, --cudnn 9..1, --os beos and a
    5,000-digit version are usage errors (one line, exit 2), never a verdict."""
    for extra in ((), ("--json",)):
        result = machine.run("compat", *args, *extra)
        assert result.exit_code == 2, (args, result.stdout, result.stderr)
        assert "Traceback" not in result.stderr
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("cudnn-doctor: error:") and len(lines[0]) < 400, lines


def test_compute_capability_may_be_written_as_an_sm_name(machine: Machine) -> None:
    """nvcc's names: sm_86 is compute capability 8.6, sm_90a is 9.0."""
    _, data = compat(machine, "torch==2.5.1+cu124", "--compute-capability", "sm_90a")
    assert data["given"]["compute_capability"] == "9.0"


def test_a_bare_major_is_a_range_not_x_0(machine: Machine) -> None:
    """Issue 16 item 4: `--cudnn 9` is any 9.x, not 9.0. torch 2.5 is built with cuDNN 9.1.0.70 (pytorch/pytorch
    RELEASE.md matrix) and torch/backends/cudnn/__init__.py accepts a loaded minor >= 9.1 only: 9.0.0 is refused,
    9.1.0 and newer accepted, so the range has no single answer."""
    code, data = compat(machine, "torch==2.5.1", "--cudnn", "9")
    part = reason(data, "cudnn")
    assert data["verdict"] == "unknown" and code == 0
    assert "range" in part["why"] and "9.0.0" in part["why"] and "9.1.0" in part["why"]
    code, data = compat(machine, "torch==2.5.1", "--cudnn", "8")  # no 8.x is accepted by a cuDNN 9 build
    assert data["verdict"] == "incompatible" and "every cuDNN 8 release" in reason(data, "cudnn")["why"]
    _, data = compat(machine, "torch==2.5.1", "--cudnn", "9.x")
    assert data["given"]["cudnn"] == "9"


# --- the limits of the data ---------------------------------------------------------------------

def test_a_release_newer_than_the_data_says_so(machine: Machine) -> None:
    """Issue 13: 'unknown: newer than this data (last known: X); update cudnn-doctor', never a guess. The newest
    torch in compat/ is 2.15.0 (torch==2.15.0 PyPI wheel METADATA)."""
    code, data = compat(machine, "torch==2.16.0", "--cudnn", "9.26.0")
    assert data["verdict"] == "unknown" and code == 0
    assert reason(data, "release")["why"] == ("unknown: newer than this data (last known: PyTorch 2.15.0); "
                                              "update cudnn-doctor")
    _, data = compat(machine, "torch==2.15.0", "--cudnn", "9.40.0")
    assert "newer than this data (last known: cuDNN 9.28.1)" in reason(data, "cudnn")["why"]
    _, data = compat(machine, "tensorflow==2.21.0", "--cuda", "13.9")
    assert "newer than this data (last known: CUDA 13.5)" in reason(data, "cuda")["why"]


def test_the_newest_releases_are_in_the_data(machine: Machine) -> None:
    """PyPI, 2026-11-23: torch 2.15.0 (METADATA: cuda-toolkit==13.2.2, nvidia-cudnn-cu13==9.26.0.51);
    nvidia-cudnn-cu13 9.24.1.1, 9.25.1.1, 9.26.1.1, 9.28.0.42, 9.28.1.4; cuda-toolkit 13.5.0; jax-cuda13-plugin
    0.12.0.1."""
    _, data = compat(machine, "torch==2.15.0")
    assert [(r["cuda"], r["cudnn"]) for r in data["requires"]] == [("13.2", "9.26.0.51")]
    versions = {row["version"] for row in compat(machine, "--list", "cudnn")[1]["rows"]}
    assert {"9.24.1", "9.25.1", "9.26.1", "9.28.0", "9.28.1"} <= versions
    assert "13.5.0" in {row["version"] for row in compat(machine, "--list", "cuda")[1]["rows"]}
    assert "0.12.0.1" in {row["version"] for row in compat(machine, "--list", "jax")[1]["rows"]}


def test_the_wheel_wins_over_the_document(machine: Machine) -> None:
    """torch-2.11.0 manylinux wheel METADATA pins nvidia-cudnn-cu13==9.19.0.56 (and torch reports 9.19.0 on a GPU),
    where the RELEASE.md matrix says 9.17.1.4: the wheel is what users get."""
    code, data = compat(machine, "torch==2.11.0+cu130", "--cudnn", "9.17.1")
    assert [r["cudnn"] for r in data["requires"]] == ["9.19.0.56"]
    assert "PyPI metadata" in data["requires"][0]["source"]
    assert data["verdict"] == "incompatible" and code == 1


# --- builds that never existed -------------------------------------------------------------------

def test_a_torch_build_never_published_borrows_no_verdict(machine: Machine) -> None:
    """pytorch/pytorch RELEASE.md matrix: 2.5 was built for CUDA 11.8, 12.1 and 12.4 only. torch==2.5.1+cu130 never
    existed: incompatible, and no other build's cuDNN row is used."""
    code, data = compat(machine, "torch==2.5.1+cu130", "--cudnn", "9.1.0")
    assert data["verdict"] == "incompatible" and code == 1
    assert [r["part"] for r in data["reasons"]] == ["build"]
    assert "never published" in data["reasons"][0]["why"] and "cu124" in data["reasons"][0]["why"]


def test_a_build_the_data_may_lack_is_unknown(machine: Machine) -> None:
    """torch==2.15.0: only the PyPI wheel (CUDA 13.2) was read (builds_complete = false), so +cu126 is not claimed
    to be missing."""
    code, data = compat(machine, "torch==2.15.0+cu126")
    assert data["verdict"] == "unknown" and code == 0 and "not in the data" in data["reasons"][0]["why"]


def test_tensorflow_has_no_native_windows_gpu_after_2_10(machine: Machine) -> None:
    """tensorflow/docs site/en/install/pip.md: 'TensorFlow 2.10 was the last TensorFlow release that supported GPU on
    native-Windows'. 2.15 on Windows is incompatible, not judged with the Linux row."""
    code, data = compat(machine, "tensorflow==2.15.0", "--os", "windows", "--cudnn", "8.9.7")
    assert data["verdict"] == "incompatible" and code == 1
    assert data["requires"] == [] and "WSL2" in data["reasons"][0]["why"]
    assert "pip.md" in data["reasons"][0]["source"]


# --- rules as data (compat/rules.toml) -------------------------------------------------------------

def test_minor_version_compatibility_starts_with_cuda_11(machine: Machine) -> None:
    """NVIDIA CUDA Compatibility guide, Minor Version Compatibility: from CUDA 11 only. TF 1.13.1 (built for CUDA 10.0,
    tensorflow/docs source.md) does not run on CUDA 10.1; TF 2.5.0 (built for 11.2) runs on 11.4."""
    code, data = compat(machine, "tensorflow==1.13.1", "--cuda", "10.1")
    assert data["verdict"] == "incompatible" and code == 1
    assert "before CUDA 11" in reason(data, "cuda")["why"]
    assert compat(machine, "tensorflow==2.5.0", "--cuda", "11.4")[1]["verdict"] == "compatible"


def test_theano_names_no_cuda_so_cuda_is_unknown(machine: Machine) -> None:
    """compat/theano.toml: Theano's code and install docs name no CUDA range (cuda = ["unknown"]): any --cuda is
    unknown, never incompatible."""
    code, data = compat(machine, "theano==1.0.4", "--cuda", "9.0")
    assert reason(data, "cuda")["verdict"] == "unknown" and code == 0


def test_dl4j_backend_needs_exactly_its_cuda(machine: Machine) -> None:
    """eclipse/deeplearning4j-docs cudnn.md: one nd4j-cuda-X.Y backend per CUDA X.Y. nd4j-cuda-10.1 on CUDA 10.2 is
    incompatible although 10.2 is newer."""
    code, data = compat(machine, "dl4j==1.0.0-beta7", "--artifact", "nd4j-cuda-10.1", "--cuda", "10.2")
    assert data["verdict"] == "incompatible" and code == 1 and "exactly CUDA 10.1" in reason(data, "cuda")["why"]
    assert compat(machine, "dl4j==1.0.0-beta7", "--artifact", "nd4j-cuda-10.1", "--cuda", "10.1")[1]["verdict"] \
        == "compatible"


def test_torch_wheels_bring_their_own_cuda_runtime(machine: Machine) -> None:
    """pytorch/pytorch .ci/manywheel/build_cuda.sh: wheels bundle libcudart or RPATH the nvidia-* wheels. A local
    CUDA 11.8 toolkit does not matter to torch 2.5.1+cu124; the driver does (CUDA 12.4 GA: >= 550.54.14, 12.x
    minor-version compatibility: >= 525.60.13)."""
    code, data = compat(machine, "torch==2.5.1+cu124", "--cuda", "11.8")
    assert data["verdict"] == "compatible" and "carries its own CUDA runtime" in reason(data, "cuda")["why"]
    code, data = compat(machine, "torch==2.5.1+cu124", "--cuda", "11.8", "--driver", "470.57.02")
    assert data["verdict"] == "incompatible" and code == 1 and reason(data, "driver")["verdict"] == "incompatible"


def test_pytorch_refuses_new_cudnn_below_sm_75(machine: Machine) -> None:
    """pytorch/pytorch torch/backends/cudnn/__init__.py: a loaded cuDNN >= 9.11 on a device with SM < 7.5 raises."""
    code, data = compat(machine, "torch==2.9.0", "--cudnn", "9.13.0", "--compute-capability", "7.0")
    assert data["verdict"] == "incompatible" and "7.5" in reason(data, "compute_capability")["why"]
    _, data = compat(machine, "torch==2.9.0", "--cudnn", "9.10.2", "--compute-capability", "7.0")
    assert "9.11" not in reason(data, "compute_capability")["why"]


@pytest.mark.parametrize(("pin", "loaded", "refused"), [("6.0.21", 6121, True), ("7.0.5", 7104, False)])
def test_exact_minor_before_cudnn_7(machine: Machine, tmp_path: Path, pin: str, loaded: int, refused: bool) -> None:
    """torch/backends/cudnn/__init__.py: below cuDNN 7 the loaded minor must equal the compiled one (6.0 built,
    6.1 loaded: refused); from 7 a newer minor is accepted (7.0 built, 7.1 loaded)."""
    site = python_env(machine, tmp_path)
    major = int(pin[0])
    install_wheel(site, "torch", "2.14.1+cu130", f"nvidia-cudnn-cu12=={pin}")
    (site / "torch").mkdir()
    (site / "torch" / "version.py").write_text("__version__ = '2.14.1+cu130'\ncuda = '13.0'\n")
    fake_framework_library(site / "torch" / "lib" / "libtorch_cuda.so", site, "$ORIGIN/../../nvidia/cudnn/lib",
                           cudnn_major=major)
    fake_cudnn(site / "nvidia" / "cudnn" / "lib", version=loaded, major=major, versioned_files=False)
    report = machine.check_json()
    assert ("CD408" in codes(report)) is refused


def test_default_cuda_major_when_nothing_says(machine: Machine) -> None:
    """compat/rules.toml [default_cuda_major] (CUDA 12 runs on drivers from 525.60.13, CUDA 13 needs 580.65.06: NVIDIA
    CUDA release notes table 2): with no toolkit and no driver, CD301 suggests cuDNN for CUDA 12, the newest such
    release in compat/cudnn.toml (9.28.0: nvidia-cudnn-cu12 has no 9.28.1)."""
    report = machine.check_json()
    fix = next(f for f in report["findings"] if f["code"] == "CD301")["fix"]
    assert "--version 9.28.0 --cuda 12" in fix


# --- GPUs ------------------------------------------------------------------------------------------

def test_theano_wants_cudnn_7_0_2_on_volta(machine: Machine) -> None:
    """Theano/Theano theano/gpuarray/dnn.py at rel-1.0.0..rel-1.0.5: 'Use cuDNN 7.0.2 or higher for Volta.'
    (cuDNN < 7002 on SM >= 7.0 disables cuDNN). 7.0.1 is in Theano 1.0.4's accepted 7.0 series, yet not on a V100."""
    code, data = compat(machine, "theano==1.0.4", "--cudnn", "7.0.1", "--compute-capability", "7.0")
    assert reason(data, "cudnn")["verdict"] == "compatible"
    assert data["verdict"] == "incompatible" and code == 1 and "7.0.2" in reason(data, "compute_capability")["why"]
    _, data = compat(machine, "theano==1.0.4", "--cudnn", "7.0.5", "--compute-capability", "7.0")
    assert reason(data, "compute_capability")["verdict"] != "incompatible"


def test_gpu_below_the_oldest_architecture_of_a_build(machine: Machine) -> None:
    """pytorch/builder manywheel/build_cuda.sh on branch release/2.5 (aec5fb5de238): the pip wheels of 2.5 for
    CUDA 12.4 have TORCH_CUDA_ARCH_LIST 5.0..9.0, for CUDA 11.8 also 3.7, no +PTX. A Kepler K80 (3.7) is
    incompatible with cu124, compatible with cu118; a Blackwell GPU (12.0) has no kernels and no PTX in cu124."""
    code, data = compat(machine, "torch==2.5.1+cu124", "--compute-capability", "3.7")
    assert data["verdict"] == "incompatible" and code == 1 and "oldest" in reason(data, "compute_capability")["why"]
    assert compat(machine, "torch==2.5.1+cu118", "--compute-capability", "3.7")[1]["verdict"] == "compatible"
    _, data = compat(machine, "torch==2.5.1+cu124", "--compute-capability", "12.0")
    assert data["verdict"] == "incompatible" and "without PTX" in whys(data, "compute_capability")


def test_gpu_above_the_newest_architecture(machine: Machine) -> None:
    """table.md @ 6bbfa99e99cd: torch 2.7.0 CUDA 12.8 ships sm_120 (Blackwell): compatible; CUDA 12.6 stops at sm_90
    and whether PTX ships is not recorded, and its cuDNN 9.5.1 lists compute capabilities up to 9.0 (NVIDIA cuDNN
    9.5.1 support matrix): incompatible, never compatible. SASS of X.y runs on X.z, z >= y (CUDA C++ Programming
    Guide, Binary Compatibility): sm_60 covers a 6.1 GPU."""
    assert compat(machine, "torch==2.7.0+cu128", "--compute-capability", "12.0")[1]["verdict"] == "compatible"
    _, data = compat(machine, "torch==2.7.0+cu126", "--compute-capability", "12.0")
    assert data["verdict"] == "incompatible" and "up to 9.0" in whys(data, "compute_capability")
    _, data = compat(machine, "torch==2.7.0+cu126", "--compute-capability", "6.1")
    assert data["verdict"] == "compatible" and "sm_60" in reason(data, "compute_capability")["why"]


def test_tensorflow_pip_floor_and_ptx_for_newer_gpus(machine: Machine) -> None:
    """tensorflow/docs site/en/install/gpu.md @ 430fe3be (2020-12, TF 2.4) to pip.md @ 7c3650212740 (TF 2.21): pip
    packages support CUDA architectures 3.5, 5.0, 6.0, 7.0, 7.5, 8.0 and ship PTX only for the latest: a 3.0 GPU is
    incompatible, a 9.0 GPU runs through PTX JIT (compatible, with a warning). gpu.md @ e89b2567 (2018-08) to
    1298fe74 (2020-08): binaries need compute capability 3.5 or higher (TF 1.11-2.3). That sentence is a floor, not
    a list: tensorflow==2.3.0's wheel (build_info.py) has no sm_50, so for a release whose wheel records no list
    (1.15) a GPU above the floor is unknown, below it incompatible."""
    code, data = compat(machine, "tensorflow==2.13.0", "--compute-capability", "3.0")
    assert data["verdict"] == "incompatible" and code == 1
    _, data = compat(machine, "tensorflow==2.13.0", "--compute-capability", "9.0")
    part = reason(data, "compute_capability")
    assert part["verdict"] == "compatible" and part["warning"] is True and "JIT" in part["why"]
    assert compat(machine, "tensorflow==1.15.0", "--compute-capability", "3.0")[1]["verdict"] == "incompatible"
    assert compat(machine, "tensorflow==1.15.0", "--compute-capability", "7.5")[1]["verdict"] == "unknown"


def test_check_flags_a_gpu_the_build_has_no_kernels_for(machine: Machine, tmp_path: Path) -> None:
    """The same architecture list read by `check`: torch 2.5.1+cu124 on a 3.7 GPU (fake NVML) is CD404."""
    site = python_env(machine, tmp_path)
    install_wheel(site, "torch", "2.5.1+cu124", "nvidia-cudnn-cu12==9.1.0.70")
    (site / "torch").mkdir()
    (site / "torch" / "version.py").write_text("__version__ = '2.5.1+cu124'\ncuda = '12.4'\n")
    fake_framework_library(site / "torch" / "lib" / "libtorch_cuda.so", site, "$ORIGIN/../../nvidia/cudnn/lib")
    fake_cudnn(site / "nvidia" / "cudnn" / "lib", version=90100, sublibraries=CUDNN9, versioned_files=False)
    fake_nvml(tmp_path / "driver", driver="470.256.02", cuda=11040, name="Tesla K80", compute_capability="3.7")
    machine.add_library_path(tmp_path / "driver")
    report = machine.check_json()
    finding = next(f for f in report["findings"] if f["code"] == "CD404")
    assert "sm_50 to sm_90 (no PTX)" in finding["detail"] and "3.7" in finding["detail"]
    assert any("pytorch/builder" in ref for ref in finding["refs"])


def test_cudnn_release_against_its_support_matrix(machine: Machine) -> None:
    """NVIDIA cuDNN Support Matrix 9.0.0: for CUDA 12.x compute capability 5.0-9.0, driver >= 525.60.13.
    nvidia-cudnn-cu13==9.19.0.56: CUDA 13 builds need driver >= 580.65.06 (CUDA 13.x minor-version compatibility)."""
    code, data = compat(machine, "cudnn==9.0.0", "--cuda", "12.4", "--compute-capability", "3.7")
    assert data["verdict"] == "incompatible" and code == 1 and "5.0" in reason(data, "compute_capability")["why"]
    code, data = compat(machine, "cudnn==9.19.0", "--cuda", "13.0", "--driver", "570.86.10")
    assert data["verdict"] == "incompatible" and "580.65.06" in reason(data, "driver")["why"]
    assert compat(machine, "cudnn==9.19.0", "--cuda", "12.8", "--driver", "570.86.10")[1]["verdict"] == "compatible"


# --- JAX and the frameworks beyond the four --------------------------------------------------------

def test_jax_cudnn_floor_from_its_plugin_wheel(machine: Machine) -> None:
    """jax-cuda12-plugin==0.9.2 METADATA: nvidia-cudnn-cu12<10.0,>=9.8 (extra with-cuda); jax-cuda13-plugin==0.9.2:
    nvidia-cudnn-cu13<10.0,>=9.12.0.46."""
    assert compat(machine, "jax==0.9.2", "--cuda", "12.8", "--cudnn", "9.8.0")[1]["verdict"] == "compatible"
    code, data = compat(machine, "jax==0.9.2", "--cuda", "13.0", "--cudnn", "9.10.2")
    assert data["verdict"] == "incompatible" and code == 1 and ">=9.12.0.46" in reason(data, "cudnn")["why"]
    assert compat(machine, "jax==0.9.2", "--cudnn", "8.9.7")[1]["verdict"] == "incompatible"
    # jax==0.4.28 METADATA: extra cuda12 pins nvidia-cudnn-cu12<9.0,>=8.9.2.26 (jaxlib +cuda12.cudnn89)
    assert compat(machine, "jax==0.4.28", "--cudnn", "9.1.0")[1]["verdict"] == "incompatible"
    assert compat(machine, "jax==0.4.28", "--cudnn", "8.9.7")[1]["verdict"] == "compatible"


def test_onnxruntime_cudnn_major_per_release(machine: Machine) -> None:
    """microsoft/onnxruntime CUDA-ExecutionProvider.md @ d0ea319e: 1.16 is built with CUDA 11.8 / cuDNN 8;
    onnxruntime-gpu==1.22.0 METADATA: nvidia-cudnn-cu12~=9.0 (extra cudnn). cuDNN 8 and 9 builds do not mix."""
    assert compat(machine, "onnxruntime-gpu==1.16.3", "--cudnn", "9.1.0")[1]["verdict"] == "incompatible"
    assert compat(machine, "onnxruntime-gpu==1.16.3", "--cudnn", "8.9.7")[1]["verdict"] == "compatible"
    assert compat(machine, "onnxruntime==1.22.0", "--cuda", "12.4", "--cudnn", "9.1.0")[1]["verdict"] == "compatible"
    assert compat(machine, "onnxruntime-gpu==1.22.0", "--cuda", "11.8")[1]["verdict"] == "incompatible"


def test_cupy_tensorrt_and_paddle(machine: Machine) -> None:
    """cupy/cupy v14.0.0rc1 release notes: cuDNN removed from CuPy; CuPy v13 upgrade guide: cuDNN 8.7 and older
    dropped. tensorrt==8.5.3.1 METADATA requires nvidia-cudnn-cu11 (cuDNN 8); tensorrt-cu12 10.x wheels require no
    cuDNN. paddlepaddle-gpu==2.6.1's paddle/version/__init__.py: cuda_version 11.8, cudnn_version 8.6.0, and Paddle's
    gpu_resources.cc only warns on an older minor, so any cuDNN 8 loads and a cuDNN 9 does not."""
    assert "does not use cuDNN" in reason(compat(machine, "cupy-cuda12x==14.0.0", "--cudnn", "9.1.0")[1], "cudnn")["why"]
    assert compat(machine, "cupy-cuda12x==13.3.0", "--cudnn", "8.7.0")[1]["verdict"] == "incompatible"
    assert compat(machine, "tensorrt==8.5.3.1", "--cudnn", "9.1.0")[1]["verdict"] == "incompatible"
    assert compat(machine, "tensorrt==10.3.0", "--cudnn", "8.9.7")[1]["verdict"] == "compatible"
    assert compat(machine, "paddlepaddle-gpu==2.6.1", "--cudnn", "8.9.7", "--cuda", "11.8")[1]["verdict"] == "compatible"
    assert compat(machine, "paddlepaddle-gpu==2.6.1", "--cudnn", "9.1.0")[1]["verdict"] == "incompatible"


def test_lists_of_the_new_tables(machine: Machine) -> None:
    for table in ("jax", "onnxruntime", "cupy", "tensorrt", "paddle"):
        code, data = compat(machine, "--list", table)
        # PyPI metadata or PyPI's file list, or (ONNX Runtime's builds off PyPI and before 1.11, whose wheels name
        # no CUDA) its docs' requirements tables
        assert code == 0 and data["rows"] and all("PyPI metadata" in row["source"] or
                                                  "on PyPI (https://pypi.org/pypi/" in row["source"] or
                                                  "CUDA-ExecutionProvider.md @ 03cecf844a12" in row["source"] or
                                                  "ONNX Runtime CUDA Execution Provider, Requirements" in row["source"] or
                                                  "wheel on PyPI" in row["source"] or
                                                  # Paddle's builds on its own pages: its maintainers' words and docs
                                                  "PaddlePaddle/" in row["source"] or
                                                  "PaddlePaddle's v2.5 install commands" in row["source"] or
                                                  # TensorRT 7.0-8.4: packages per CUDA version, not wheels (issue 41)
                                                  "NVIDIA TensorRT 8.4." in row["source"] or
                                                  "NVIDIA/TensorRT#" in row["source"] or
                                                  "NVIDIA TensorRT 7." in row["source"] or
                                                  "NVIDIA TensorRT 8.0.3 Support" in row["source"] or
                                                  "NVIDIA TensorRT 8.2.5 Support" in row["source"] or
                                                  "NVIDIA TensorRT 8.5.3 Support" in row["source"] or
                                                  "NVIDIA's TensorRT 7." in row["source"] or
                                                  # jaxlib's own CUDA builds before the PyPI plugins (round eleven):
                                                  # setup.py's extras at the release's tag
                                                  "jax-ml/jax setup.py @ " in row["source"]
                                                  for row in data["rows"])


# --- check: the frameworks beyond the four, from their dist-info ------------------------------------

def install_wheel(site: Path, name: str, version: str, *requires: str) -> Path:
    info = site / f"{name.replace('-', '_')}-{version}.dist-info"
    info.mkdir(parents=True)
    lines = ["Metadata-Version: 2.1", f"Name: {name}", f"Version: {version}"]
    lines += [f"Requires-Dist: {r}" for r in requires]
    (info / "METADATA").write_text("\n".join(lines) + "\n")
    return info


def test_check_names_onnxruntime_and_cupy_with_the_cudnn_they_load(machine: Machine, tmp_path: Path) -> None:
    """onnxruntime-gpu's CUDA provider (onnxruntime/capi/libonnxruntime_providers_cuda.so) links libcudnn.so.9;
    CuPy 13's cudnn module links libcudnn.so.8 (compat/rules.toml [[framework]] libraries). Each is found from its
    dist-info and resolved to the copy the loader would give it."""
    site = python_env(machine, tmp_path)
    install_wheel(site, "onnxruntime-gpu", "1.22.0", 'nvidia-cudnn-cu12~=9.0; extra == "cudnn"',
                  'nvidia-cuda-runtime-cu12~=12.0; extra == "cuda"')
    fake_framework_library(site / "onnxruntime" / "capi" / "libonnxruntime_providers_cuda.so", site,
                           "$ORIGIN/../../nvidia/cudnn/lib")
    fake_cudnn(site / "nvidia" / "cudnn" / "lib", version=91000, sublibraries=CUDNN9, versioned_files=False)
    install_wheel(site, "cupy-cuda12x", "13.3.0")
    fake_framework_library(site / "cupy_backends" / "cuda" / "libs" / "cudnn.cpython-312-x86_64-linux-gnu.so", site,
                           str(tmp_path / "cudnn8"), cudnn_major=8)
    fake_cudnn(tmp_path / "cudnn8", version=8907)
    report = machine.check_json("--search-path", str(tmp_path / "cudnn8"))
    found = {f["name"]: f for f in report["frameworks"]}
    assert found["onnxruntime"]["version"] == "1.22.0" and found["onnxruntime"]["cuda_built_for"] == "12"
    assert found["onnxruntime"]["cudnn_used"] == str(site / "nvidia" / "cudnn" / "lib" / "libcudnn.so.9")
    assert found["cupy"]["cuda_built_for"] == "12"
    assert found["cupy"]["cudnn_used"] == str(tmp_path / "cudnn8" / "libcudnn.so.8")
    loaded = {i["version"]: i["loaded_by"] for i in report["cudnn"]}
    assert "onnxruntime" in loaded["9.10.0"] and "cupy" in loaded["8.9.7"], loaded
    assert not codes(report) & {"CD401", "CD407", "CD408"}
    text = machine.run("check", "--search-path", str(tmp_path / "cudnn8"))
    assert "onnxruntime 1.22.0" in text.stdout and "cupy 13.3.0" in text.stdout


def test_check_flags_onnxruntime_loading_the_wrong_cudnn_major(machine: Machine, tmp_path: Path) -> None:
    """onnxruntime-gpu 1.16 is a cuDNN 8 build (CUDA-ExecutionProvider.md): a cuDNN 9 first on LD_LIBRARY_PATH is not
    what it loads (it asks for libcudnn.so.8); with none, CD401 names the cuDNN it needs."""
    site = python_env(machine, tmp_path)
    install_wheel(site, "onnxruntime-gpu", "1.16.3")
    fake_cudnn(tmp_path / "stray", version=91000, sublibraries=CUDNN9)
    machine.add_library_path(tmp_path / "stray")
    report = machine.check_json()
    [ort] = report["frameworks"]
    assert ort["cudnn_expected"] == "8" and ort["cudnn_used"] is None
    assert "CD401" in codes(report)


def test_check_knows_tensorrt_10_uses_no_cudnn(machine: Machine, tmp_path: Path) -> None:
    """tensorrt-cu12 10.x wheels require no cuDNN (cuDNN tactics off by default since 8.6, TensorRT 8.5.2 notes):
    no CD401 although there is no cuDNN at all."""
    site = python_env(machine, tmp_path)
    install_wheel(site, "tensorrt_cu12_libs", "10.3.0")
    report = machine.check_json()
    [trt] = report["frameworks"]
    assert trt["name"] == "tensorrt" and trt["cuda_built_for"] == "12"
    assert "CD401" not in codes(report) and "CD407" not in codes(report)


# --- the maintainer's refresh -------------------------------------------------------------------

def test_refresh_says_in_one_line_when_a_source_cannot_be_reached(tmp_path: Path) -> None:
    """maintenance/refresh_compat.py: PyPI or NVIDIA's redistrib index out of reach is one clear line each, exit 2."""
    env = {**os.environ, "CUDNN_DOCTOR_PYPI": "http://127.0.0.1:9/pypi",
           "CUDNN_DOCTOR_NVIDIA_REDIST": "http://127.0.0.1:9/redist/"}
    result = subprocess.run([sys.executable, str(ROOT / "maintenance" / "refresh_compat.py")], capture_output=True,
                            text=True, env=env, timeout=60)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert lines[0].startswith("PyPI could not be reached") and lines[1].startswith("NVIDIA's cuDNN redistrib index")


def test_check_framework_option_for_the_new_tables(machine: Machine) -> None:
    """`check --framework NAME==VERSION` as if installed: jax-cuda12-plugin==0.9.2's wheel pin is the cuDNN it
    needs (CD401 names it and the pip fix); tensorrt 10.3.0 wheels require no cuDNN (no CD401)."""
    report = machine.check_json("--framework", "jax==0.9.2")
    finding = next(f for f in report["findings"] if f["code"] == "CD401")
    assert "9.8 or a newer 9.x" in finding["detail"]
    # checked as if installed, it loads the loader's cuDNN: the plan puts one it accepts there (9.x for CUDA 12)
    install = re.search(r"`cudnn-doctor install --version (9)\.(\d+)\.\d+ --cuda 12 --prefix [^`]+`", finding["fix"])
    assert install and int(install.group(2)) >= 8, finding["fix"]
    report = machine.check_json("--framework", "tensorrt==10.3.0")
    assert [f["name"] for f in report["frameworks"]] == ["tensorrt"] and "CD401" not in codes(report)


def test_check_reads_paddles_own_build_record(machine: Machine, tmp_path: Path) -> None:
    """paddlepaddle-gpu wheels carry paddle/version/__init__.py (generated by its setup.py) with cuda_version and
    cudnn_version: check reports them as what the build expects, and a cuDNN 9 on the loader's path is not its."""
    site = python_env(machine, tmp_path)
    install_wheel(site, "paddlepaddle-gpu", "2.6.1")
    (site / "paddle" / "version").mkdir(parents=True)
    (site / "paddle" / "version" / "__init__.py").write_text("full_version = '2.6.1'\ncuda_version = '11.8'\n"
                                                             "cudnn_version = '8.6.0'\n")
    fake_cudnn(tmp_path / "cudnn8", version=8907)
    machine.add_library_path(tmp_path / "cudnn8")
    report = machine.check_json()
    [paddle] = report["frameworks"]
    assert (paddle["name"], paddle["cuda_built_for"], paddle["cudnn_expected"]) == ("paddle", "11.8", "8.6.0")
    assert paddle["cudnn_used"] and paddle["cudnn_used"].endswith("libcudnn.so.8")
    assert not codes(report) & {"CD401", "CD408"}


@pytest.mark.parametrize("subject", ["cuda", "cudnn", "pytorch", "tensorflow", "theano", "rules", "jax", "onnxruntime",
                                     "cupy", "tensorrt", "paddle"])
def test_every_source_is_one_a_user_can_open(subject: str) -> None:
    """Issue 13: every `source` names a public document (repository@commit and path, a URL and title, or a
    package==version's metadata); nothing cites a private index entry or a file on this machine."""
    import tomllib

    text = (ROOT / "compat" / f"{subject}.toml").read_text()
    data = tomllib.loads(text)
    sources = [str(row.get(key)) for rows in data.values() if isinstance(rows, list) for row in rows
               for key in ("source", "arch_source") if row.get(key)]
    sources += [str(value) for table in data.values() if isinstance(table, dict)
                for key, value in table.items() if key.endswith("source")]
    assert sources and "/work/" not in text and "file id" not in text
    for source in sources:
        assert not any(private in source for private in ("/work/", "file id", "code index", "stored index", "seed ")), \
            source[:200]
