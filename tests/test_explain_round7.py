"""Issue 41, round seven: failures read by their structure, whatever stack prints them.

NVIDIA's short texts for a CUDA code stand for it wherever a CUDA call or a CUDA source file is on the line (glog's
"im2col.cu:54] Check failed: error == cudaSuccess (8 vs. 0) invalid device function", hashcat's "cuInit(): unknown
error", XGBoost's "updater_gpu.cu: 841: initialization error"), the text deciding over a number of an older CUDA's
numbering; NCCL's result texts in any wrapper (PyTorch, OneFlow, XGBoost) and its socket failures; the GPU's
out-of-memory in PyTorch's allocators' words, CuPy's and Paddle's; a build without the GPU in ONNX Runtime's words;
TensorRT's loader. Another vendor's look-alikes (HIP, an NPU's or XPU's copy of PyTorch's allocator report, a GCU's
copy of its asynchronous allocator, ZLUDA) and everyday errors with the same words are never claimed. Every message is
quoted from the public thread or source file named beside it."""

from __future__ import annotations

import pytest

from cudnn_doctor.commands.explain import explain_text

# (source, the first answer's code, the message as the thread prints it)
CASES = [
    # a CUDA short text after a CUDA source location or call: the build lacks the GPU's architecture (CD404)
    ("BVLC/caffe#869", "CD404", "F0806 12:02:26.552108 4388 im2col.cu:54] Check failed: error == cudaSuccess (8 vs. 0) "
     "invalid device function \n**\\* Check failure stack trace: ***"),
    ("BVLC/caffe#138", "CD404", "F0221 16:54:21.855986 11564 im2col.cu:49] Cuda kernel failed. Error: invalid device "
     "function "),
    ("weiliu89/caffe#336", "CD404", "F0301 12:35:45.320708 14370 pooling_layer.cu:212] Check failed: error == "
     "cudaSuccess (8 vs. 0)  invalid device function"),
    # the driver cannot start (CD110), in hashcat's words for a driver API call
    ("hashcat/hashcat#2605", "CD110", "cuInit(): unknown error"),
    # NCCL's result texts in the words of the program that called it; its own socket warnings
    ("Oneflow-Inc/oneflow#3586", "CD119", "F0917 19:46:10.424812 101542 collective_boxing_executor.cpp] NCCL Check "
     "failed: ncclGroupEnd() : unhandled system error"),
    ("pytorch/pytorch#38702", "CD119", "RuntimeError: NCCL error in: /pytorch/torch/lib/c10d/ProcessGroupNCCL.cpp:410, "
     "unhandled system error, NCCL version 2.4.8"),
    ("rapidsai/dask-cuda#639", "CD119", "XGBoostError('[09:20:12] /workspace/xgboost/src/tree/updater_gpu_hist.cu:794: "
     "Exception in gpu_hist: NCCL failure :unhandled system error /workspace/xgboost/src/common/device_helpers.cu(67)"),
    ("Oneflow-Inc/oneflow#3586", "CD119", "worker:101542:101934 [0] NCCL INFO Call to connect returned Connection timed "
     "out, retrying"),
    # PyTorch's asynchronous allocator and its caching allocator report; CuPy's pool
    ("Comfy-Org/ComfyUI#4852", "CD109", "# ComfyUI Error Report\n## Error Details\n- **Node Type:** KSampler\n"
     "- **Exception Type:** torch.OutOfMemoryError\n- **Exception Message:** Allocation on device \n## Stack Trace"),
    ("Comfy-Org/ComfyUI#4934", "CD109", "2024-09-15 22:50:34,519 - root - ERROR - !!! Exception during processing !!! "
     "Allocation on device \n2024-09-15 22:50:34,520 - root - ERROR - Traceback (most recent call last):"),
    ("pytorch/pytorch CUDACachingAllocator.cpp, PyTorch 1.x", "CD109", "Tried to allocate 164.50 GiB (GPU 2; 10.92 GiB "
     "total capacity; 19.66 MiB already allocated; 10.40 GiB free; 14.34 MiB cached)"),
    ("cupy/cupy cupy/cuda/memory.pyx", "CD109", "cupy.cuda.memory.OutOfMemoryError: Out of memory allocating "
     "1,073,741,824 bytes (allocated so far: 3,221,225,472 bytes)."),
    # ONNX Runtime's CPU packages
    ("microsoft/onnxruntime#13542", "CD406", "[ErrorCode:Fail] CUDA execution provider is not enabled in this build"),
    ("pykeio/ort#456", "CD406", 'Error { code: GenericFailure, msg: "CUDA execution provider is not enabled in this '
     'build." }'),
    ("microsoft/onnxruntime#9438", "CD406", "System.EntryPointNotFoundException: Unable to find an entry point named "
     "'OrtSessionOptionsAppendExecutionProvider_CUDA' in shared library 'onnxruntime'"),
    # OBS's encoder needs a newer driver
    ("obsproject/obs-studio plugins/obs-nvenc", "CD103", "[jim-nvenc] Current driver version does not support this "
     "NVENC version, please upgrade your driver"),
    # FlashInfer's JIT: no architecture it can build for this GPU
    ("flashinfer-ai/flashinfer compilation_context.py", "CD404", "RuntimeError: No supported CUDA architectures found "
     "for major versions [12]."),
]


@pytest.mark.parametrize(("source", "code", "message"), CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_the_failure_is_read_by_its_structure(source: str, code: str, message: str) -> None:
    answer = explain_text(message, None)
    assert answer["exit_code"] == 0, source
    assert answer["matches"][0]["code"] == code, (source, [m["code"] for m in answer["matches"]])


def test_tensorrt_names_the_library_its_loader_could_not_find() -> None:
    """trtexec: 'Unable to open library: X due to Y: cannot open shared object file': Y is missing, and it is a CUDA
    library, so the answer is the toolkit's (CD203) before TensorRT's own (CD409)."""
    answer = explain_text("[11/18/2023-17:14:14] [E] Uncaught exception detected: Unable to open library: "
                          "libnvinfer_plugin.so.8 due to libcublas.so.12: cannot open shared object file: No such file "
                          "or directory", None)
    assert [m["code"] for m in answer["matches"]][:2] == ["CD203", "CD409"]
    assert answer["matches"][0]["values"]["library"] == "libcublas.so.12"


def test_the_text_decides_over_a_number_of_an_older_numbering() -> None:
    """CUDA 10.0 and older numbered cudaErrorInvalidDeviceFunction 8 (now 98; 8 is cudaErrorProfilerAlreadyStopped):
    glog's "(8 vs. 0)" with the text beside it reads as the text's code only."""
    answer = explain_text("Check failed: error == cudaSuccess (8 vs. 0)  invalid device function", None)
    assert [s["name"] for s in answer["facts"]["statuses"]] == ["cudaErrorInvalidDeviceFunction"]


# look-alikes: another vendor's GPU stack in the same words, and everyday errors that share a phrase
LOOK_ALIKES = [
    "RuntimeError: HIP error: invalid device function\nHIP kernel errors might be asynchronously reported at some "
    "other API call, so the stacktrace below might be incorrect.",
    "hipErrorNoBinaryForGpu: Unable to find code object for all current devices!",
    "torch.OutOfMemoryError: HIP out of memory. Tried to allocate 2.00 GiB (GPU 0; 15.98 GiB total capacity; "
    "13.10 GiB already allocated; 1.20 GiB free)",
    "[rank7]:[E615 22:00:29.320155898 compiler_depend.ts:444] NPU out of memory. NPUWorkspaceAllocator tried to "
    "allocate 1.89 GiB(NPU 7; 60.96 GiB total capacity; 1.82 GiB free).",
    "torch.OutOfMemoryError: XPU out of memory. Tried to allocate 1.00 GiB (GPU 0; 15.11 GiB total capacity; "
    "14.00 GiB already allocated)",
    "RuntimeError: Allocation on device 0 would exceed allowed memory. (out of memory)\n  File "
    '"/usr/lib/python3/dist-packages/torch_gcu/core/memory.py", line 12',
    "ZLUDA: cuInit(): unknown error",
    "hipMalloc failed: out of memory",
    "RuntimeError: MPS backend out of memory (MPS allocated: 17.00 GB, other allocations: 1.53 GB, max allowed: "
    "18.13 GB). Tried to allocate 256.00 MB on private pool.",
    'Exception in thread "main" java.lang.OutOfMemoryError: Java heap space',
    "ggml_vulkan: Device memory allocation of size 1073741824 failed.\nggml_vulkan: vk::Device::allocateMemory: "
    "ErrorOutOfDeviceMemory",
    "clBuildProgram failed: CL_OUT_OF_RESOURCES\nOpenCL error: out of memory",
    "MemoryError: Unable to allocate 3.46 GiB for an array with shape (31000, 30000) and data type float32",
    "OSError: [Errno 111] Connection refused",
    "torch.distributed.DistNetworkError: Connection refused: connect to 10.0.0.2:29500 failed",
    "_ncs.error.Error: system call failed (24): Failed to connect to ConfD: Connection refused",
    "AttributeError: module 'cudnn' has no attribute 'Handle'",
    "ModuleNotFoundError: No module named 'cudnn_frontend'",
    "KeyError: 'unknown error'",
    "RuntimeError: CUDA error: device-side assert triggered",
    "clCreateContext(): CL_UNKNOWN_ERROR",
]


@pytest.mark.parametrize("message", LOOK_ALIKES, ids=[m[:40] for m in LOOK_ALIKES])
def test_a_look_alike_is_not_claimed(message: str) -> None:
    answer = explain_text(message, None)
    assert answer["exit_code"] == 1, [m["code"] for m in answer["matches"]]


def test_a_version_no_word_places_is_what_is_here_when_the_other_is_required() -> None:
    """janhq/cortex.cpp#1019: '× CUDA version 12.3 is not compatible with TensorRT-LLM models. Required version: 12.4':
    12.4 is what the build requires, so 12.3, which no word places, is what this machine has."""
    answer = explain_text("× CUDA version 12.3 is not compatible with TensorRT-LLM models. Required version: 12.4", None)
    assert answer["matches"][0]["code"] == "CD410"
    assert answer["facts"]["versions"][0]["built"] == "12.4" and answer["facts"]["versions"][0]["found"] == "12.3"


def test_nccl_ipc_with_a_number_of_the_old_numbering_before_the_text() -> None:
    """horovod/horovod#1634 (NCCL 2.1 under CUDA 10.0): 'transport/p2p.cu:431 WARN failed to open CUDA IPC handle : 30
    unknown error': 30 was cudaErrorUnknown's number up to CUDA 10.0; the text names it whatever the number."""
    answer = explain_text("node205:10645:10653 [0] transport/p2p.cu:431 WARN failed to open CUDA IPC handle : 30 unknown "
                          "error", None)
    assert [s["name"] for s in answer["facts"]["statuses"]] == ["cudaErrorUnknown"]


@pytest.mark.parametrize("message", [
    "bash: nvcc: command not found",  # bash
    "/bin/sh: 1: nvcc: not found",  # dash, as pip's build of an extension runs it
    "'nvcc' is not recognized as an internal or external command,",  # cmd.exe
    "ERROR (theano.sandbox.cuda): nvcc compiler not found on $PATH. Check your nvcc installation and try again.",
    "error: [Errno 2] No such file or directory: '/usr/local/cuda/bin/nvcc'",  # a build calling it by path
    "ERROR: InitError: AssertionError: isfile(__nvdisasm[])",  # CUDAnative.jl's toolkit discovery
    "which: no nvcc in (/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin)",  # GNU which
])
def test_a_toolkit_program_said_missing_in_any_words(message: str) -> None:
    """compat/errors.toml [missing_tool]: a CUDA toolkit program (nvcc, ptxas, nvdisasm ...) that the shell, the OS or
    a program says is not there is a toolkit that is not installed or not on PATH (CD201)."""
    answer = explain_text(message, None)
    assert answer["matches"][0]["code"] == "CD201", [m["code"] for m in answer["matches"]]


@pytest.mark.parametrize("message", [
    "nvcc fatal   : Cannot find compiler 'cl.exe' in PATH",  # nvcc is there; its host compiler is not (CD208)
    "ptxas info    : 0 bytes gmem",
    "nvcc fatal : Value 'sm_120' is not defined for option 'gpu-architecture'",
])
def test_a_toolkit_program_that_ran_is_not_said_missing(message: str) -> None:
    answer = explain_text(message, None)
    assert all(m["id"] != "toolchain-cd201" for m in answer["matches"])


@pytest.mark.parametrize(("source", "code", "message"), [
    ("inducer/pycuda#231", "CD110", "pycuda._driver.LogicError: cuModuleLoadDataEx failed: initialization error -"),
    ("davisking/dlib#617", "CD110", "RuntimeError: Error while calling cudaGetDevice(&the_device_id) in file "
     "/home/ubuntu/src/dlib-19.4/dlib/dnn/gpu_data.cpp:178. code: 3, reason: initialization error"),
    ("davisking/dlib#2749", "CD404", "RuntimeError: Error while calling cudaOccupancyMaxPotentialBlockSize(&num_blocks,"
     "&num_threads,K) in file /x/dlib/cuda/cuda_utils.h:164. code: 98, reason: invalid device function"),
])
def test_a_wrapper_that_names_the_call_and_prints_the_text(source: str, code: str, message: str) -> None:
    """PyCUDA ('<call> failed: <text> -') and dlib ('Error while calling <call> ... reason: <text>') name the CUDA call
    and print NVIDIA's text for the code after it."""
    assert explain_text(message, None)["matches"][0]["code"] == code, source


def test_a_library_that_loaded_borrows_no_failure_from_the_line_before() -> None:
    """TensorFlow's dso_loader logs each library it opened ('Successfully opened dynamic library libcublas.so.11')
    beside the one it could not: only the missing one is a fact of failure."""
    from cudnn_doctor.explain import reader

    facts = reader.read("I dso_loader.cc:53] Could not load dynamic library 'libcudnn.so.8'; dlerror: libcudnn.so.8: "
                        "cannot open shared object file: No such file or directory\n"
                        "I dso_loader.cc:49] Successfully opened dynamic library libcublas.so.11")
    assert {(lib.file, lib.failure) for lib in facts.libraries} == {("libcudnn.so.8", "missing"),
                                                                    ("libcublas.so.11", None)}


def test_onnx_runtime_windows_error_code_in_its_own_words() -> None:
    """ONNX Runtime's provider log on Windows ('Failed to load onnxruntime_providers_cuda.dll, error code: 1114',
    then 'cudart64_12.dll loaded successfully'): its CUDA provider failed to initialise (CD409), the runtime loaded."""
    answer = explain_text("[10540] Failed to load onnxruntime_providers_cuda.dll, error code: 1114\n"
                          "[10540] cudart64_12.dll loaded successfully\n"
                          "[10540] CUDA not available (missing: provider), using CPU", None)
    assert answer["matches"][0]["code"] == "CD409"


@pytest.mark.parametrize(("code", "message"), [
    ("CD301", "-- CUDNN_INCLUDE_DIR: CUDNN_INCLUDE_DIR-NOTFOUND\n-- CUDNN_LIBRARY: CUDNN_LIBRARY-NOTFOUND"),
    ("CD201", "CMake Error: The following variables are used in this project, but they are set to NOTFOUND.\n"
              "Please set them or make sure they are set and tested correctly in the CMake files:\n"
              "CUDA_cublas_LIBRARY (ADVANCED)"),
    ("CD409", "-- TENSORRT_LIBRARY_INFER: TENSORRT_LIBRARY_INFER-NOTFOUND"),
])
def test_a_cmake_variable_set_to_notfound_names_the_part_missing(code: str, message: str) -> None:
    """CMake's find_library/find_path leave '<VAR>-NOTFOUND' (and list such variables as '(ADVANCED)'): the variable's
    name says which part of the stack the build did not find (compat/errors.toml [[cmake_notfound]])."""
    assert explain_text(message, None)["matches"][0]["code"] == code


@pytest.mark.parametrize("message", ["OpenCV_DIR-NOTFOUND", "ZLIB_LIBRARY (ADVANCED)", "Boost_INCLUDE_DIR-NOTFOUND"])
def test_a_cmake_variable_of_another_library_is_not_claimed(message: str) -> None:
    assert explain_text(message, None)["exit_code"] == 1


@pytest.mark.parametrize(("code", "message"), [
    ("CD102", "cuInit returned 100"),  # CUDA_ERROR_NO_DEVICE
    ("CD101", "nvmlInit failed: 9"),  # NVML_ERROR_DRIVER_NOT_LOADED
    ("CD109", "cuMemAlloc failed: 2"),  # CUDA_ERROR_OUT_OF_MEMORY
    ("CD404", "GPUassert: invalid device function kernel.cu 57"),  # the gpuErrchk macro hand-written CUDA code copies
])
def test_a_number_or_text_after_the_call_that_returned_it(code: str, message: str) -> None:
    """A CUDA driver, runtime or NVML call named on the line gives the number after it ('returned', 'failed:') its
    own numbering; 'GPUassert:' (the widely copied gpuErrchk macro) is a program's words before NVIDIA's text."""
    assert explain_text(message, None)["matches"][0]["code"] == code


@pytest.mark.parametrize("message", ["the cuda kernel returned 3 rows", "cudaMemcpy failed with 3 retries left"])
def test_a_number_that_is_no_code_is_not_claimed(message: str) -> None:
    assert explain_text(message, None)["exit_code"] == 1
