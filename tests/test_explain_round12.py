"""Issue 41, round twelve: classes of messages read from their own structure, each in the words of the program that
prints it, whatever the project around it: RPM Fusion's akmods builds of the NVIDIA kmod, Numba's bracketed CUresult,
TensorRT's "<Library> Error in <function>: N", CuPy's generic "NVRTC_ERROR unknown (N)", NGC's driver banner, PyTorch's
own search of sys.path for its CUDA wheels, TensorRT's pip wrapper without its bindings, nvcc's Visual Studio check, a
CUDA extension's NameError, GNU ld's "undefined reference to" nvcc 9.2's launch ABI, uv's platform-tag report, and the
full-width colon of CJK locales. Each message is quoted from the public thread, page or source named beside it, or,
where the comment says "in ... wording", written in the exact format of the program's own source for a value of its
kind (none of them is an evaluation set's case)."""

from __future__ import annotations

import pytest

from cudnn_doctor.commands.explain import explain_text

CASES = [
    # a public note quoting `sudo akmods --force` on Fedora 37 (NVIDIA 520.56.06, kernel 6.3.5)
    ("akmods --force, Fedora 37", "CD101",
     "[logan@laptop ~]$ sudo akmods --force\n"
     "Checking kmods exist for 6.3.5-100.fc37.x86_64             [  OK  ]\n"
     "Building and installing nvidia-kmod                        [FAILED]\n"
     "Building rpms failed; see /var/cache/akmods/nvidia/520.56.06-1-for-6.3.5-100.fc37.x86_64.failed.log for details"),
    # NVIDIA/cuml#5624: Numba's CudaAPIError, the CUresult in brackets
    ("NVIDIA/cuml#5624", "CD102",
     "numba.cuda.cudadrv.driver.CudaAPIError: [100] Call to cuInit results in CUDA_ERROR_NO_DEVICE"),
    # hiyouga/LlamaFactory#5962: the NGC entry point's banner, as pasted (no space after "but")
    ("hiyouga/LlamaFactory#5962", "CD150",
     "This container was built for NVIDIA Driver Release 545.23 or later, butversion 535.104.05 was detected and "
     "compatibility mode is UNAVAILABLE"),
    # eugr/spark-vllm-docker#266: the same banner on a DGX Spark
    ("eugr/spark-vllm-docker#266", "CD150",
     "ERROR: This container was built for NVIDIA Driver Release 590.48 or later, but\n"
     "       version 580.159.03 was detected and compatibility mode is UNAVAILABLE."),
    # finic-ai/rag-stack#44: PyTorch's _preload_cuda_deps found no nvidia-cublas wheel on sys.path
    ("finic-ai/rag-stack#44", "CD523", "libcublas.so.*[0-9] not found in the system path"),
    # comfyanonymous/ComfyUI_TensorRT#18: the tensorrt wrapper without its bindings wheel
    ("comfyanonymous/ComfyUI_TensorRT#18", "CD520", "ModuleNotFoundError: No module named 'tensorrt_bindings'"),
    # pytorch/pytorch#17148: objects of one nvcc linked with an older CUDA runtime
    ("pytorch/pytorch#17148", "CD203",
     "/home/fanyixing/pytorch/build/lib/libcaffe2_gpu.so: undefined reference to `__cudaPushCallConfiguration'\n"
     "/home/pytorch/build/lib/libcaffe2_gpu.so: undefined reference to `__cudaPopCallConfiguration'\n"
     "collect2: error: ld returned 1 exit status"),
    # MzeroMiko/VMamba#147: the selective-scan extension never built, its import swallowed
    ("MzeroMiko/VMamba#147", "CD409",
     "NameError: name 'selective_scan_cuda_core' is not defined. Did you mean: 'selective_scan_flop_jit'?"),
    # NVIDIA/TensorRT#1390: TensorRT's check of a cuDNN call (the status by number and by name)
    ("NVIDIA/TensorRT#1390", "CD316",
     "[TensorRT] ERROR: ../rtSafe/cuda/cudaConvolutionRunner.cpp (483) - Cudnn Error in executeConv: 8 "
     "(CUDNN_STATUS_EXECUTION_FAILED)"),
    # nvcc's own check on Windows (CUDA 11.x): no Visual Studio of the supported range
    ("nvcc on Windows, CUDA 11.x", "CD209",
     "nvcc fatal   : nvcc cannot find a supported version of Microsoft Visual Studio. Only the versions between 2017 and "
     "2019 (inclusive) are supported!"),
    # in nvcc's (EDG) wording: device code compiled for a target below compute capability 7.0 as well
    ("cooperative_groups::labeled_partition below sm_70", "CD404",
     "kernels/sort.cu(88): error: namespace \"cooperative_groups\" has no member \"labeled_partition\""),
    # in the wording of the CHECK macro many CUDA projects copy (GPUMD's error.cuh): the status on a line of its own
    ("a CUDA Error block, code 209", "CD404",
     "CUDA Error:\n    File:       src/force.cu\n    Line:       120\n    Error code: 209"),
    # in uv's wording (astral-sh/uv#8746's report, ASCII glyphs): an NVIDIA wheel published for Linux only, asked on Windows
    ("uv: nvidia-nccl-cu12 on Windows", "CD520",
     "  x No solution found when resolving dependencies:\n"
     "  `-> Because nvidia-nccl-cu12==2.26.2 has no wheels with a matching platform tag (e.g., `win_amd64`) and you "
     "require nvidia-nccl-cu12==2.26.2, we can conclude that your requirements are unsatisfiable."),
]


@pytest.mark.parametrize(("source", "code", "message"), CASES, ids=[c[0] for c in CASES])
def test_each_class_answers_with_its_code(source: str, code: str, message: str) -> None:
    data = explain_text(message, None)
    assert data["matches"], source
    assert data["matches"][0]["code"] == code, (source, [m["code"] for m in data["matches"]])


UNRELATED = [
    # akmods building another kmod (xtables-addons), as posted to RPM Fusion's list
    ("akmods: xtables-addons", "2019/10/19 16:08:43 akmodsbuild: Bad exit status from\n/var/tmp/rpm-tmp.VEFn5t (%build)\n"
     "2019/10/19 16:08:43 akmods: Building rpms failed; see\n"
     "/var/cache/akmods/xtables-addons/3.3-3-for-5.3.6-200.fc30.x86_64.failed.log\nfor details"),
    # numba's ROC (HSA) driver prints the same words for AMD's runtime
    ("numba's HSA driver", "numba.roc.hsadrv.error.HsaApiError: [4096] Call to hsa_init results in HSA_STATUS_ERROR"),
    # astral-sh/uv#8746: torch for an Intel Mac, nothing of CUDA in the message
    ("astral-sh/uv#8746", "  × No solution found when resolving dependencies:\n  ╰─▶ Because torch==2.6.0 has no wheels "
     "with a matching platform tag (e.g., `macosx_15_0_x86_64`) and you require torch==2.6.0, we can conclude that your "
     "requirements are unsatisfiable.\n\n      hint: Wheels are available for `torch` (v2.6.0) on the following "
     "platforms: `manylinux_2_28_aarch64`, `manylinux1_x86_64`, `macosx_11_0_arm64`, `win_amd64`"),
    # a HIP link error: AMD's runtime, not NVIDIA's
    ("a HIP link error", "kernels.o: undefined reference to `hipLaunchKernel'\ncollect2: error: ld returned 1 exit status"),
    # a project's own namespace with the same member name, and cooperative_groups without a gated member
    ("another namespace's labeled_partition", 'src/a.cu(3): error: namespace "mylib" has no member "labeled_partition"'),
    ("an ungated cooperative_groups member", 'src/a.cu(3): error: namespace "cooperative_groups" has no member "frobnicate"'),
    # an error block that is not CUDA's
    ("a parser's error block", "Parse Error:\n    File:       input.xyz\n    Line:       3\n    Error code: 209"),
    # another module named in NameError
    ("a NameError of the program's own", "NameError: name 'selective_search' is not defined"),
]


@pytest.mark.parametrize(("source", "message"), UNRELATED, ids=[u[0] for u in UNRELATED])
def test_look_alikes_are_never_claimed(source: str, message: str) -> None:
    assert explain_text(message, None)["matches"] == [], source


def test_the_ngc_banner_names_the_driver_found() -> None:
    first = explain_text("ERROR: This container was built for NVIDIA Driver Release 450.51 or later, but\n"
                         "       version 440.33.01 was detected and compatibility mode is UNAVAILABLE.", None)["matches"][0]
    assert first["code"] == "CD150" and "440.33.01" in first["cause"] + first["fix"]


def test_visual_studios_range_reaches_the_answer() -> None:
    first = explain_text("nvcc fatal   : nvcc cannot find a supported version of Microsoft Visual Studio. Only the "
                         "versions between 2017 and 2022 (inclusive) are supported!", None)["matches"][0]
    assert "Visual Studio 2017 to 2022" in first["cause"] and "2017 to 2022" in first["fix"]


def test_a_full_width_colon_reads_as_a_colon() -> None:
    # in a Chinese-locale compiler's wording: gcc's "fatal error: <header>: No such file or directory" with full-width
    # colons where the compiler's own words have ": "
    data = explain_text("cc1plus: Fatal error\uff1a cuda_runtime.h\uff1aNo such file or directory", None)
    assert data["matches"] and data["matches"][0]["code"].startswith("CD2")


def test_cupys_generic_nvrtc_error_is_read_by_its_number() -> None:
    # CuPy's NVRTCError prints nvrtcGetErrorString(status) and the status; an NVRTC older than the status says
    # "NVRTC_ERROR unknown": 7 is NVRTC_ERROR_BUILTIN_OPERATION_FAILURE (the builtins library not loadable)
    data = explain_text("cupy.cuda.nvrtc.NVRTCError: NVRTC_ERROR unknown (7)", None)
    assert [s["name"] for s in data["facts"]["statuses"]] == ["NVRTC_ERROR_BUILTIN_OPERATION_FAILURE"]


def test_a_conda_conflict_is_read_from_the_requested_spec() -> None:
    # in conda's wording (its classic UnsatisfiableError block): each line starts with the spec the user asked for
    message = ("UnsatisfiableError: The following specifications were found to be incompatible with each other:\n\n"
               "Output in format: Requested package -> Available versions\n\n"
               "Package libgcc-ng conflicts for:\n"
               "cudatoolkit=11.3 -> libgcc-ng[version='>=9.3.0']\n"
               "python=3.6 -> libgcc-ng[version='>=7.3.0|>=7.5.0']")
    first = explain_text(message, None)["matches"][0]
    assert first["code"] == "CD521" and "cudatoolkit" in first["cause"]
