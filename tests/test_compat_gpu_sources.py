"""`compat` judges GPUs, package names, platforms and drivers the way its sources do (issue 13, second round).

Each test runs the CLI as a user would and names, in its docstring, the source of the rule or rows it exercises;
the same source is cited on the rows in compat/.
"""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

from tests.conftest import ROOT, Machine
from tests.test_compat_rules import compat, reason


def verdict(machine: Machine, *args: str) -> str:
    return str(compat(machine, *args)[1]["verdict"])


def test_a_build_without_a_recorded_architecture_list_is_unknown_on_any_gpu(machine: Machine) -> None:
    """compat/rules.toml gpu_rule = "build" (NVIDIA CUDA C++ Programming Guide, Binary Compatibility): a binary runs
    only on the GPUs its cubins or PTX were built for. torch 1.4.0+cu100's list is not in the data (2.7.1+cu118, this
    test's first example, now takes its series' list: a patch release builds for what its series built for), so even
    a GPU cuDNN supports is "unknown", never "compatible" (the cuDNN matrix is the library, not the build)."""
    code, data = compat(machine, "torch==1.4.0+cu100", "--compute-capability", "8.6")
    assert data["verdict"] == "unknown" and code == 0
    assert "does not record which GPU architectures" in reason(data, "compute_capability")["why"]


def test_torch_architecture_lists_read_from_the_wheels_and_build_scripts(machine: Machine) -> None:
    """torch==2.9.0 / 2.11.0 PyPI wheels (libtorch_python arch flags, libtorch_cuda fatbin): cu128 is sm_70..sm_120,
    cu130 sm_75..sm_120; pytorch/pytorch PR #164471 (RELEASE.md, 'For Release 2.9'): cu126 keeps Maxwell(5.0) and
    Pascal(6.0). sm_60 SASS runs on a 6.1 GPU."""
    _, data = compat(machine, "torch==2.9.0+cu128", "--compute-capability", "6.1")
    assert data["verdict"] == "incompatible" and "sm_70 to sm_120" in reason(data, "compute_capability")["why"]
    _, data = compat(machine, "torch==2.9.0+cu126", "--compute-capability", "6.1")
    assert data["verdict"] == "compatible" and "#164471" in reason(data, "compute_capability")["source"]
    _, data = compat(machine, "torch==2.11.0+cu130", "--compute-capability", "12.0")
    assert data["verdict"] == "compatible" and "sm_120" in reason(data, "compute_capability")["why"]
    assert verdict(machine, "torch==2.8.0+cu129", "--compute-capability", "12.0") == "compatible"
    assert verdict(machine, "torch==2.12.0", "--compute-capability", "7.0") == "incompatible"


def test_torch_cuda13_builds_on_a_r580_driver(machine: Machine) -> None:
    """NVIDIA CUDA 13.2 Update 2 release notes, Table 2/3 (compat/cuda.toml): CUDA 13.x runs on >= 580.65.06 through
    minor-version compatibility; torch==2.14.0 (PyPI default: CUDA 13.0) on 575 is too old."""
    _, data = compat(machine, "torch==2.14.0+cu132", "--driver", "580.65.06")
    assert data["verdict"] == "compatible" and reason(data, "driver")["warning"] is True
    assert verdict(machine, "torch==2.14.0+cu130", "--driver", "580.65.06") == "compatible"
    assert verdict(machine, "torch==2.14.0", "--driver", "575.57.08") == "incompatible"
    # Table 2 names a branch (13.x: driver_branch_range ">=580" in compat/cuda.toml): a bare "580" is judged by it
    _, data = compat(machine, "torch==2.15.0", "--driver", "580")
    assert data["verdict"] == "compatible" and "branch >= 580" in reason(data, "driver")["why"]
    assert verdict(machine, "torch==2.14.1", "--driver", "575") == "incompatible"


def test_the_cupy_package_name_fixes_the_cuda(machine: Machine) -> None:
    """https://pypi.org/project/cupy-cuda11x/13.0.0/ ('package for CUDA 11.2 ~ 11.x'), cupy-cuda12x metadata (12.x),
    https://pypi.org/project/cupy-cuda111/ ('for CUDA 11.1 ... install CUDA Toolkit 11.1'); CuPy v14 install guide
    (CUDA 12.0 to 13.x only): compat/rules.toml [[package_cuda]]."""
    assert verdict(machine, "cupy-cuda11x==13.3.0", "--cuda", "11.8") == "compatible"
    _, data = compat(machine, "cupy-cuda11x==13.3.0", "--cuda", "11.1")
    assert data["verdict"] == "incompatible" and "11.2 or newer" in reason(data, "cuda")["why"]
    assert verdict(machine, "cupy-cuda11x==13.3.0", "--cuda", "12.2") == "incompatible"
    assert verdict(machine, "cupy-cuda12x==13.3.0", "--cuda", "12.8") == "compatible"
    assert verdict(machine, "cupy-cuda12x==13.3.0", "--cuda", "11.8") == "incompatible"
    assert verdict(machine, "cupy-cuda102==9.6.0", "--cuda", "10.1") == "incompatible"
    assert verdict(machine, "cupy-cuda102==9.6.0", "--cuda", "10.2") == "compatible"
    _, data = compat(machine, "cupy-cuda11x==14.0.0", "--cuda", "11.8")
    assert data["verdict"] == "incompatible" and reason(data, "build")["verdict"] == "incompatible"


def test_cupy_gpu_floor_per_cuda_major(machine: Machine) -> None:
    """CuPy install guide (compute capability 3.0 or larger) bounded by the CUDA it loads: CUDA 12.0 dropped Kepler
    (CUDA 12.0 release notes), CUDA 13 drops Maxwell/Pascal/Volta (CUDA 12.x release notes, Deprecated
    Architectures, quoted in pytorch/pytorch#157517)."""
    assert verdict(machine, "cupy-cuda13x==14.2.0", "--compute-capability", "6.1") == "incompatible"
    assert verdict(machine, "cupy-cuda12x==13.3.0", "--compute-capability", "3.7") == "incompatible"
    assert verdict(machine, "cupy-cuda12x==13.3.0", "--compute-capability", "6.1") == "compatible"


def test_jax_has_no_native_windows_gpu_and_a_gpu_floor(machine: Machine) -> None:
    """jax-ml/jax docs/installation.md @ 00528b9858a0 ('Supported platforms': NVIDIA GPU on Windows x86_64 'no';
    'SM version 5.2 (Maxwell) or newer'); docs.jax.dev installation ('On CUDA 13 ... SM version 7.5 or newer')."""
    code, data = compat(machine, "jax==0.4.30", "--os", "windows", "--cuda", "12.4")
    assert data["verdict"] == "incompatible" and code == 1 and "WSL2" in reason(data, "build")["why"]
    assert data["requires"] == []
    assert verdict(machine, "jax==0.4.30", "--compute-capability", "3.7") == "incompatible"
    assert verdict(machine, "jax==0.9.2", "--cuda", "13.0", "--compute-capability", "6.1") == "incompatible"
    _, data = compat(machine, "jax==0.9.2", "--compute-capability", "6.1")
    assert data["verdict"] == "compatible" and "(CUDA 12)" in reason(data, "compute_capability")["why"]


def test_tensorrt_gpu_floors_and_cuda_majors(machine: Machine) -> None:
    """NVIDIA TensorRT 10.1.0 support matrix ('compiled to support all NVIDIA hardware with capability SM 7.0 or
    higher'); TensorRT 8.x matrix ('SM 5.0 or higher'); TensorRT 10.13.2 release notes ('dropped support for CUDA
    11.X'): tensorrt-cu11 ends before 10.13.2."""
    assert verdict(machine, "tensorrt==10.0.1", "--compute-capability", "6.1") == "incompatible"
    assert verdict(machine, "tensorrt==8.6.0", "--compute-capability", "6.1") == "compatible"
    assert verdict(machine, "tensorrt==8.6.0", "--compute-capability", "3.5") == "incompatible"
    assert verdict(machine, "tensorrt-cu11==10.14.1.48", "--cuda", "11.8") == "incompatible"
    assert verdict(machine, "tensorrt-cu12==10.5.0", "--cuda", "11.8") == "incompatible"


def test_onnxruntime_before_1_11_from_the_requirements_table(machine: Machine) -> None:
    """microsoft/onnxruntime docs/execution-providers/CUDA-ExecutionProvider.md @ 03cecf844a12: 1.2-1.4 CUDA 10.1 /
    cuDNN 7.6.5, 1.5-1.6 CUDA 10.2 / cuDNN 8.0.3, 1.7-1.8 CUDA 11.0.3 / cuDNN 8.0.4 (any 11.x by minor-version
    compatibility), 1.10 CUDA 11.4."""
    assert verdict(machine, "onnxruntime-gpu==1.4.0", "--cuda", "10.1", "--cudnn", "7.6.5") == "compatible"
    assert verdict(machine, "onnxruntime-gpu==1.4.0", "--cuda", "10.2") == "incompatible"
    assert verdict(machine, "onnxruntime-gpu==1.8.1", "--cuda", "11.4", "--cudnn", "8.2.4") == "compatible"
    assert verdict(machine, "onnxruntime-gpu==1.6.0", "--cudnn", "7.6.5") == "incompatible"
    _, data = compat(machine, "onnxruntime-gpu==1.10.0", "--cuda", "12.2")
    assert data["verdict"] == "incompatible" and "03cecf844a12" in reason(data, "cuda")["source"]


def test_cudnn_matrix_rows_per_cuda_toolkit(machine: Machine) -> None:
    """NVIDIA cuDNN support matrix 9.10.2: CUDA 12.8/12.9 with driver >= 570.26 up to Blackwell (12.0), 12.0-12.9
    with >= 525.60.13 up to 9.0; 8.2.2 matrix: the CUDA 11 archive needs r470 for 11.4, r450 for 11.2; 7.6.0 matrix:
    the CUDA 9.2 build lists no Turing."""
    args = ("cudnn==9.10.2", "--cuda", "12.8", "--compute-capability", "12.0")
    _, data = compat(machine, *args, "--driver", "560.35.03")
    assert data["verdict"] == "incompatible" and "570.26" in reason(data, "driver")["why"]
    assert verdict(machine, *args, "--driver", "575.51.03") == "compatible"
    assert verdict(machine, "cudnn==9.10.2", "--cuda", "12.8", "--driver", "560.35.03") == "compatible"
    assert verdict(machine, "cudnn==9.10.2", "--cuda", "12.6", "--compute-capability", "12.0") == "incompatible"
    # compat/rules.toml [cudnn_driver]: cuDNN's driver need is its CUDA runtime's; r470 beside 11.4 is what NVIDIA
    # tested, and the 11.4 runtime runs on 460 through minor-version compatibility: compatible, with a warning
    _, data = compat(machine, "cudnn==8.2.2", "--cuda", "11.4", "--driver", "460.32.03")
    assert data["verdict"] == "compatible" and reason(data, "driver")["warning"] is True
    assert "470" in reason(data, "driver")["why"] and "runtime" in reason(data, "driver")["why"]
    assert verdict(machine, "cudnn==8.2.2", "--cuda", "11.4", "--driver", "440.33.01") == "incompatible"
    assert verdict(machine, "cudnn==8.2.2", "--cuda", "11.2", "--driver", "460.32.03") == "compatible"
    assert verdict(machine, "cudnn==7.6.0", "--cuda", "9.2", "--compute-capability", "7.5") == "incompatible"
    # matrix row not read: the CUDA 11.1 runtime's own floor (compat/cuda.toml, CUDA release notes Table 2/3) decides
    assert verdict(machine, "cudnn==8.0.5", "--cuda", "11.1", "--driver", "440.33.01") == "incompatible"
    assert verdict(machine, "cudnn==8.0.5", "--cuda", "11.1", "--driver", "460.32.03") == "compatible"
    # compat/rules.toml [architectures] (CUDA C++ Programming Guide): 12.1 is Blackwell like the listed 12.0
    _, data = compat(machine, "cudnn==9.10.2", "--cuda", "12.8", "--compute-capability", "12.1")
    assert data["verdict"] == "unknown" and "same architecture" in reason(data, "compute_capability")["why"]


def test_theano_and_dl4j_gpu_floors(machine: Machine) -> None:
    """Theano/Theano theano/gpuarray/dnn.py at rel-1.0.0 (d395439aec5a): 'if int(ctx.bin_id[-2:]) < 30:
    dnn_available.msg = "Device not supported"' (Fermi cannot use cuDNN); DL4J's nd4j-cuda-10.2 inherits its cuDNN
    7.6's floor (NVIDIA cuDNN 7.6.3-7.6.5 matrices: Kepler 3.x and newer)."""
    assert verdict(machine, "theano==1.0.4", "--cudnn", "7.1.4", "--compute-capability", "6.1") == "compatible"
    _, data = compat(machine, "theano==1.0.4", "--cudnn", "7.1.4", "--compute-capability", "2.1")
    assert data["verdict"] == "incompatible" and "Device not supported" in reason(data, "compute_capability")["why"]
    dl4j = ("dl4j==1.0.0-beta7", "--artifact", "nd4j-cuda-10.2", "--compute-capability")
    # DL4J's own docs ask for CC >= 3.5 (KonduitAI/deeplearning4j-gitbook-sync@cfcb79c45808
    # config/backends/README.md: 'no CUDA capable (CC >= 3.5) GPU ... the CPU Backend should be used instead')
    assert verdict(machine, *dl4j, "3.5") == "compatible"
    assert verdict(machine, *dl4j, "3.0") == "incompatible"
    assert verdict(machine, *dl4j, "2.0") == "incompatible"


def _fatbin(*entries: tuple[int, int]) -> bytes:
    """A fat binary as nvcc embeds it: header (magic 0xBA55ED50, version, header size 16, payload size), then
    one 64-byte entry header per (kind, sm) with an empty payload (kind 1 = PTX, 2 = ELF cubin)."""
    import struct

    body = b"".join(struct.pack("<HHIQ", kind, 1, 64, 0) + bytes(12) + struct.pack("<I", sm) + bytes(32)
                    for kind, sm in entries)
    return struct.pack("<IHHQ", 0xBA55ED50, 1, 16, len(body)) + body


def test_refresh_reads_a_torch_wheels_architectures(tmp_path: Path) -> None:
    """maintenance/refresh_compat.py --torch-wheel: the arch flags string torch.cuda.get_arch_list() reports (in
    libtorch_python.so) and the fatbin entries of libtorch_cuda.so, compared with compat/pytorch.toml (torch 2.11.0
    CUDA 13.0: sm_75 to sm_120, read from the real PyPI wheel)."""
    wheel = tmp_path / "torch-2.11.0-cp312-cp312-manylinux_2_28_x86_64.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr("torch/version.py", "__version__ = '2.11.0+cu130'\ncuda: Optional[str] = '13.0'\n")
        archive.writestr("torch/lib/libtorch_python.so", b"\x7fELF\x00junk\x00sm_80 sm_90\x00more")
        archive.writestr("torch/lib/libtorch_cuda.so", b"\x00" * 40 + _fatbin((2, 80), (2, 90), (1, 90)) + b"\x00" * 8)
    result = subprocess.run([sys.executable, str(ROOT / "maintenance" / "refresh_compat.py"), "--torch-wheel",
                             str(wheel)], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert "arch flags 8.0 9.0; libtorch_cuda SASS 8.0 9.0; PTX 9.0" in result.stdout
    assert "differs from the wheel's ['8.0', '9.0']" in result.stdout
    broken = tmp_path / "broken.whl"
    broken.write_bytes(b"not a zip")
    result = subprocess.run([sys.executable, str(ROOT / "maintenance" / "refresh_compat.py"), "--torch-wheel",
                             str(broken)], capture_output=True, text=True, timeout=60)
    assert result.returncode == 2 and "cannot read it as a torch wheel" in result.stderr
    assert "Traceback" not in result.stderr
