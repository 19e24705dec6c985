"""Issue 41, round eighteen (builder e27): the compilers frameworks run at run time, a framework's own words for a
build without CUDA, and the look-alikes beside them that are not the GPU stack's, each tested both ways.

Each shape is written as the tool's own source prints it (torch/_inductor/cpp_builder.py and exc.py,
triton/runtime/build.py, CMake's Modules/CMakeTestCUDACompiler.cmake, nvJitLink.h's versioned names, sgl-kernel's
load_utils.py, roop's --execution-provider choices, xgboost's src/context.cc, TensorFlow's op_kernel.cc: the commits
are in compat/errors.toml's rows); the development cases are benchmarks/explain_eval/cases_r18_e27.toml."""

from __future__ import annotations

import pytest

from tests.test_explain_installers import declined, first

# ----------------------------------------------------------------------- torch.compile's C++ compiler (inductor)

@pytest.mark.parametrize("message", [
    "torch._inductor.exc.InductorError: InvalidCxxCompiler: No working C++ compiler found in "
    "torch._inductor.config.cpp.cxx: (None, 'g++')",
    # torch 2.0-2.5: dynamo's wrapper names the backend, the class on a line of its own
    "torch._dynamo.exc.BackendCompilerFailed: backend='inductor' raised:\n"
    "InvalidCxxCompiler: No working C++ compiler found in torch._inductor.config.cpp.cxx: (None, 'g++')",
])
def test_inductor_without_a_cxx_compiler_is_a_missing_build_tool(message: str) -> None:
    answer = first(message)
    assert answer["code"] == "CD208", answer  # was unrecognised
    assert "CXX" in str(answer["fix"]) and "g++" in str(answer["fix"])
    # another program's search for a compiler, in its own words: not torch.compile's
    declined("RuntimeError: No working C++ compiler found in PATH. Set CXX or install clang++/g++.")


# ------------------------------------------------------------------- Triton's launcher and the running Python's headers

@pytest.mark.parametrize("message", [
    # gcc on Linux: Triton 2.x-3.0 compile main.c in a temporary folder
    "/tmp/tmps1rkq3y3/main.c:5:10: fatal error: Python.h: No such file or directory\n    5 | #include <Python.h>\n"
    "      |          ^~~~~~~~~~\ncompilation terminated.",
    # TinyCC of triton-windows: cuda_utils.c
    "C:/Users/me/AppData/Local/Temp/tmptw09ntof/cuda_utils.c:14: error: include file 'Python.h' not found",
    # MSVC: "cuda_utils.c(12): fatal error C1083" in any language
    "C:\\Users\\me\\AppData\\Local\\Temp\\tmp4v27vhss\\cuda_utils.c(12): fatal error C1083: Cannot open include file: "
    "'Python.h': No such file or directory",
])
def test_triton_launcher_without_python_headers_is_a_missing_build_tool(message: str) -> None:
    answer = first(message)
    assert answer["code"] == "CD208", answer  # was unrecognised
    assert "python3-dev" in str(answer["fix"])
    # the same words for a Python package of no GPU stack (psutil built by pip), and a program's own main.c outside
    # a temporary folder
    declined("  psutil/_psutil_common.c:9:10: fatal error: Python.h: No such file or directory\n   #include <Python.h>\n"
             "  compilation terminated.\n  error: command 'x86_64-linux-gnu-gcc' failed with exit status 1")
    declined("src/main.c:3:10: fatal error: Python.h: No such file or directory")


# ------------------------------------------------------------------------------- CMake's check of the CUDA compiler

CMAKE_CUDA = ('CMake Error at /usr/share/cmake/Modules/CMakeTestCUDACompiler.cmake:70 (message):\n  The CUDA compiler\n\n'
              '    "/opt/cuda/bin/nvcc"\n\n  is not able to compile a simple test program.')


def test_cmake_cuda_compiler_check_alone_is_a_build_tool_and_yields_to_the_error_under_it() -> None:
    assert first(CMAKE_CUDA)["code"] == "CD208"  # was unrecognised
    # the nvcc error CMake prints under it decides: a host compiler this CUDA refuses is CD209
    under = CMAKE_CUDA + ("\n\n  It fails with the following output:\n    /usr/include/crt/host_config.h:143:2: error: "
                          "#error -- unsupported GNU version! gcc versions later than 12 are not supported!")
    assert first(under)["code"] == "CD209"
    # CMake's check of the C compiler is the host's toolchain, not CUDA's
    declined('CMake Error at D:/cmake315/share/cmake-3.15/Modules/CMakeTestCCompiler.cmake:60 (message):\n'
             '  The C compiler\n\n    "D:/VS2015/VC/bin/cl.exe"\n\n  is not able to compile a simple test program.')


# -------------------------------------------------------------------------------------- nvJitLink's versioned names

@pytest.mark.parametrize(("message", "release", "wheel"), [
    ("libcugraph.so: undefined symbol: __nvJitLinkGetErrorLog_13_1, version libnvJitLink.so.13", "13.1",
     "nvidia-nvjitlink-cu13"),
    # one underscore, as a forum's markup leaves it, and no version tag
    ("undefined symbol: _nvJitLinkGetErrorLogSize_12_9", "12.9", "nvidia-nvjitlink-cu12"),
])
def test_nvjitlink_versioned_symbol_names_the_release_to_load(message: str, release: str, wheel: str) -> None:
    answer = first(message)
    assert answer["code"] == "CD203", answer  # the one-underscore form was unrecognised; both named no release
    text = f"{answer['cause']} {answer['fix']}"
    assert f"nvJitLink {release} or newer" in text and wheel in text
    # an unversioned name (nvJitLink 12.3 and newer export them) says no release: the general answer
    answer = first("OSError: /env/lib/libcufft.so.12: undefined symbol: nvJitLinkDestroy, version libnvJitLink.so.12")
    assert answer["code"] == "CD203" and answer["id"] != "nvjitlink-versioned-symbol-older"


# ------------------------------------------------------------------------------------- sgl-kernel's common_ops loader

SGL_HEAD = ("ImportError:\n[sgl_kernel] CRITICAL: Could not load any common_ops library!\n\nAttempted locations:\n"
            "1. Architecture-specific pattern: /v/sgl_kernel/sm100/common_ops.* - found files: []\n")


def test_sgl_kernel_without_common_ops_is_the_extension_and_yields_to_what_it_lists() -> None:
    assert first(SGL_HEAD)["code"] == "CD409"  # was unrecognised
    listed = SGL_HEAD + ("\nError details from previous import attempts:\n"
                         "- ImportError: libnvrtc.so.12: cannot open shared object file: No such file or directory\n")
    assert first(listed)["code"] == "CD203"  # the CUDA library it could not load


# ------------------------------------------------------------- a program's provider choices built from ONNX Runtime's

@pytest.mark.parametrize("message", [
    "run.py: error: argument --execution-provider: invalid choice: 'cuda' (choose from 'azure', 'cpu')",
    "run.py: error: argument --execution-providers: invalid choice: 'cuda' (choose from 'cpu')",
    "run.py: error: argument --execution-provider: invalid choice: 'cuda' (choose from 'dml', 'cpu')",
])
def test_execution_provider_choices_without_cuda_are_a_cpu_build_of_onnx_runtime(message: str) -> None:
    answer = first(message)
    assert answer["code"] == "CD406", answer  # was unrecognised
    assert "onnxruntime-gpu" in str(answer["fix"])
    # cuda among the choices (something else was mistyped), and another argument's choices
    declined("run.py: error: argument --execution-provider: invalid choice: 'cuda' (choose from 'cpu', 'cuda', "
             "'tensorrt')")
    declined("run.py: error: argument --video-encoder: invalid choice: 'h264_nvenc' (choose from 'libx264', 'libx265')")


# ------------------------------------------------------------------------------- XGBoost: CPU build or no GPU visible

def test_xgboost_moving_to_the_cpu_without_looking_for_gpus_is_its_cpu_build() -> None:
    message = ("/env/lib/python3.13/site-packages/xgboost/training.py:199: UserWarning: [13:55:49] WARNING: "
               "/workspace/src/context.cc:207: Device is changed from GPU to CPU as we couldn't find any available GPU "
               "on the system.")
    assert first(message)["code"] == "CD406"  # was CD102 (a GPU not visible): the wrong family
    # its CUDA build that finds no GPU says so first: no GPU visible
    message = ("WARNING: /workspace/src/context.cc:44: No visible GPU is found, setting device to CPU.\n"
               "WARNING: /workspace/src/context.cc:207: Device is changed from GPU to CPU as we couldn't find any "
               "available GPU on the system.")
    assert first(message)["code"] == "CD102"
    # XGBoost 2.x printed the same first line in its CPU builds, then said so: the CPU build it stays
    older = ("WARNING: /workspace/src/context.cc:43: No visible GPU is found, setting device to CPU.\n"
             "WARNING: /workspace/src/context.cc:196: XGBoost is not compiled with CUDA support.")
    assert first(older)["code"] == "CD406"


# ----------------------------------------------------------------- TensorFlow out of memory: the GPU's or the host's

def test_tensorflow_oom_on_the_cpu_device_is_not_claimed_and_on_the_gpu_it_is() -> None:
    declined("tensorflow.python.framework.errors_impl.ResourceExhaustedError: OOM when allocating tensor with "
             "shape[24,1,2304,1152,3] and type float on /job:localhost/replica:0/task:0/device:CPU:0 by allocator cpu")
    declined("OOM when allocating tensor with shape[8,512,512,64] and type float on "
             "/job:localhost/replica:0/task:0/device:CPU:0 by allocator mklcpu")
    gpu = first("ResourceExhaustedError: OOM when allocating tensor with shape[32,64,256,256] and type float on "
                "/job:localhost/replica:0/task:0/device:GPU:0 by allocator GPU_0_bfc")
    assert gpu["code"] == "CD109"


# -------------------------------------------------------------------- NVIDIA Apex's setup.py and XLA's ptxas subprocess

def test_apex_refusing_a_toolkit_of_another_release_than_torch_is_the_framework_build_pair() -> None:
    answer = first("RuntimeError: Cuda extensions are being compiled with a version of Cuda that does not match the "
                   "version used to compile Pytorch binaries.  Pytorch binaries were compiled with Cuda 12.1.")
    assert answer["code"] == "CD410", answer  # was unrecognised
    assert "CUDA 12.1" in str(answer["fix"])
    # the same setup.py's banner over a build that goes on is no failure
    declined("Compiling cuda extensions with\nnvcc: NVIDIA (R) Cuda compiler driver\n"
             "Cuda compilation tools, release 12.1, V12.1.105\nfrom /usr/local/cuda/bin")


def test_xla_that_could_not_start_ptxas_is_a_missing_build_tool() -> None:
    answer = first("jaxlib.xla_extension.XlaRuntimeError: INTERNAL: Failed to launch ptxas")
    assert answer["code"] == "CD208", answer  # was unrecognised
    assert "nvidia-cuda-nvcc" in str(answer["fix"])
    # ptxas that started and refused the PTX is another class (its own words decide), not this one
    other = first("jaxlib.xla_extension.XlaRuntimeError: INTERNAL: ptxas exited with non-zero error code 65280, "
                  "output: ptxas fatal   : Value 'sm_90a' is not defined for option 'gpu-name'")
    assert other["id"] != "xla-failed-to-launch-ptxas"


# ------------------------------------------------------------------- Triton's launcher compile that failed, as a wrapper

LAUNCHER = ("subprocess.CalledProcessError: Command '['/usr/bin/gcc', '/tmp/tmpy1gk3r1e/main.c', '-O3', '-shared', "
            "'-fPIC', '-o', '/tmp/tmpy1gk3r1e/cuda_utils.cpython-310-x86_64-linux-gnu.so', '-lcuda']' returned non-zero "
            "exit status 1.")


def test_triton_launcher_compile_is_a_build_tool_and_yields_to_the_compilers_error() -> None:
    assert first(LAUNCHER)["code"] == "CD208"  # was unrecognised
    windows = ("CalledProcessError: Command '['C:\\\\py\\\\Lib\\\\site-packages\\\\triton\\\\runtime\\\\tcc\\\\tcc.exe', "
               "'C:\\\\Users\\\\me\\\\AppData\\\\Local\\\\Temp\\\\tmpnkd30sx0\\\\cuda_utils.c', '-O3', '-shared', '-o', "
               "'C:\\\\Users\\\\me\\\\AppData\\\\Local\\\\Temp\\\\tmpnkd30sx0\\\\cuda_utils.cp310-win_amd64.pyd', '-lcuda']' "
               "returned non-zero exit status 1.")
    assert first(windows)["code"] == "CD208"
    # the compiler's own error above it decides: the linker without libcuda.so is the driver's link
    assert first("/usr/bin/ld: cannot find -lcuda: No such file or directory\n" + LAUNCHER)["code"] == "CD101"
    # the module built and then failed to load is another class (round nine labels it unrelated: a VC runtime)
    declined("backend='inductor' raised: ImportError: DLL load failed while importing __triton_launcher")


# ------------------------------------------------------------------------------ nvJitLink's own result codes and log

def test_nvjitlink_older_than_its_input_is_a_compiler_older_than_the_code() -> None:
    log = ("cuda.bindings.nvjitlink.nvJitLinkError: ERROR_INTERNAL (6)\nnvJitLink error log: ERROR 4 in "
           "nvvmAddNVVMContainerToProgram, may need newer version of nvJitLink library")
    assert first(log)["code"] == "CD207"  # was unrecognised (ERROR_INTERNAL alone names no cause)
    assert first("nvJitLinkError: ERROR_OUTDATED_LIBRARY (14)")["code"] == "CD207"
    assert first("NVJITLINK_ERROR_UNSUPPORTED_ARCH")["code"] == "CD206"
    # ERROR_INTERNAL alone names no cause, and stays unread
    declined("cuda.bindings.nvjitlink.nvJitLinkError: ERROR_INTERNAL (6)")


# ----------------------------------------------------------------------- Triton's FP8 types and the GPU's hardware

def test_triton_fp8_type_the_gpu_lacks_is_a_gpu_the_kernels_do_not_support() -> None:
    answer = first("triton.compiler.errors.CompilationError: at 1:0:\ndef _per_token_group_quant_fp8(\n^\n"
                   "ValueError(\"type fp8e4nv not supported in this architecture. The supported fp8 dtypes are "
                   "('fp8e4b15', 'fp8e5')\")")
    assert answer["code"] == "CD404", answer  # was unrecognised
    assert "fp8e4nv" in str(answer["cause"]) and "fp8_e5m2" in str(answer["fix"])
    # a list without the NVIDIA backend's fp8e4b15 is another backend's (AMD's gfx90a lists only fp8e5)
    declined("ValueError(\"type fp8e4nv not supported in this architecture. The supported fp8 dtypes are ('fp8e5',)\")")


# --------------------------------------------------------------------------------- clang as the CUDA compiler

def test_clang_without_a_cuda_installation_is_no_toolkit_not_a_cpu_build() -> None:
    answer = first("clang: error: cannot find CUDA installation; provide its path via '--cuda-path', or pass "
                   "'-nocudainc' to build without CUDA includes")
    assert answer["code"] == "CD201", answer  # was CD406: 'build without CUDA' read as a CPU-only build
    ranged = first("clang: error: GPU arch sm_35 is supported by CUDA versions between 7.0 and 11.8 (inclusive), but "
                   "installation at /usr/local/cuda is 12.2; use '--cuda-path' to specify a different CUDA install")
    assert ranged["code"] == "CD220" and "sm_35" in str(ranged["cause"]) and "11.8" in str(ranged["fix"])
