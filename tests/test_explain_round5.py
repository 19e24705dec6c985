"""Issue 41's families, read from messages of public threads that no catalog example is taken from: NCCL and
NVSwitch/NVLS, cuBLAS/cuBLASLt and FP8, the build tools a framework compiles with, other stacks' words for a driver
too old, and "this GPU's architecture is not supported" in every library's words, judged against the data."""

from __future__ import annotations

import pytest

from cudnn_doctor.commands.explain import explain_text

CASES = [
    # NCCL and NVSwitch/NVLS: a CUDA call NCCL made that CUDA refused is CUDA's family (CD212); NVLS and links CD119
    ("TheAtticusProject/cuad#9", "CD212", "what(): NCCL Error 1: unhandled cuda error"),
    ("NVIDIA/nccl-tests#183", "CD212", "Test NCCL failure common.cu:954 'unhandled cuda error'"),
    ("meta-pytorch/torchtune#2556", "CD212",
     "2025-04-04T16:57:57.7153695Z [2025-04-04 16:57:39] ip-10-0-9-191:95209:95228 [0] init.cc:416 NCCL WARN Cuda "
     "failure 'operation not supported'\n2025-04-04T16:57:57.7153889Z ip-10-0-9-191:95209:95228 [0] NCCL INFO "
     "init.cc:1397 -> 1"),
    ("pie-project/pie#500", "CD119",
     "[pie-driver-cuda] fatal: NCCL async error at driver/cuda/src/distributed.cpp:100\n    "
     "(ncclCommInitRankConfig(&comm_, world_size, uid, rank, &config)): unhandled cuda error\n"
     "transport/nvls.cc:251 NCCL WARN Cuda failure 1 'invalid argument'\ntransport/nvls.cc:401 -> 1"),
    ("pytorch/pytorch#177472", "CD119",
     "ncclUnhandledCudaError: Call to CUDA function failed.\nLast error:\nFailed to bind NVLink SHARP (NVLS) Multicast "
     "memory of size 2097152 : CUDA error 401 'the operation cannot be performed in the present state'."),
    ("NVIDIA/nccl#210", "CD119", "include/socket.h:344 WARN Socket creation failed : Address family not supported by "
     "protocol"),
    ("NVIDIA/nccl#799", "CD119", "72bf7b08:76786:77145 [3] misc/ibvwrap.cc:284 NCCL WARN Call to ibv_modify_qp failed "
     "with error No such device"),
    # cuBLAS / cuBLASLt, FP8 on GPUs without it
    ("pytorch/pytorch#192707", "CD211", "# RuntimeError: CUDA error: CUBLAS_STATUS_NOT_SUPPORTED when calling\n"
     "#   cublasLtMatmulAlgoGetHeuristic(...)"),
    ("flashrt-project/FlashRT#21", "CD211",
     "RuntimeError: cuBLAS error at /pub/data/wangzb/FlashRT/csrc/gemm/gemm_runner.cu:125 code=15"),
    ("oobabooga/textgen#379", "CD211", "cuBLAS API failed with status 15\nA: torch.Size([16, 2048]), B: "
     "torch.Size([2048, 2048])"),
    ("Facico/Chinese-Vicuna#3", "CD211", "  File \"/root/miniconda3/lib/python3.8/site-packages/bitsandbytes/functional.py"
     "\", line 1410, in igemmlt\n    raise Exception('cublasLt ran into an error!')"),
    ("kijai/ComfyUI-HunyuanVideoWrapper#98", "CD211",
     "torch._scaled_mm is only supported on CUDA devices with compute capability >= 9.0 or 8.9, or ROCm MI300+"),
    # the build tools a framework compiles with
    ("jingyaogong/minimind#48", "CD201", "CUDA_HOME does not exist, unable to compile CUDA op(s)"),
    ("thinhlpg/vixtts-demo#12", "CD201",
     "    raise MissingCUDAException(\"CUDA_HOME does not exist, unable to compile CUDA op(s)\")\n"
     "deepspeed.ops.op_builder.builder.MissingCUDAException: CUDA_HOME does not exist, unable to compile CUDA op(s)"),
    ("intel/intel-xpu-backend-for-triton#7156", "CD208", "RuntimeError: Cannot find ptxas-blackwell.exe"),
    ("aim-uofa/AdelaiDet#345", "CD203", "RuntimeError: nvrtc: error: failed to load builtins for compute_75.\n"
     "nvrtc compilation failed:"),
    # other stacks' words for a driver too old
    ("jax-ml/jax#22534", "CD106",
     "2024-07-19 09:58:22.022601: W external/xla/xla/service/gpu/nvptx_compiler.cc:765] The NVIDIA driver's CUDA "
     "version is 12.4 which is older than the ptxas CUDA version (12.5.82). Because the driver is older than the ptxas "
     "version, XLA is disabling parallel compilation, which may slow down compilation. You should update your NVIDIA "
     "driver or use the NVIDIA-provided CUDA forward compatibility packages."),
    ("JuliaGPU/CUDA.jl#2231", "CD103", "Error: CUDA driver 8.0.0 is not compatible with any supported CUDA toolkit "
     "(11.4.4, 11.5.2, 11.6.2, 11.7.1, 11.8.0, 12.0.1, 12.1.1, 12.2.2 or 12.3.1)"),
    ("fauxpilot/fauxpilot#248", "CD404",
     "triton-1         | WARNING: Detected NVIDIA NVIDIA GeForce RTX 4060 GPU, which is not yet supported in this "
     "version of the container\ntriton-1         | ERROR: No supported GPU(s) detected to run this container"),
    ("jayleicn/ClipBERT#16", "CD108", "NVIDIA modifications are covered by the license terms that apply to the "
     "underlying project or file.\nERROR: No supported GPU(s) detected to run this container\n\nNOTE: Detected MOFED "
     "driver 5.0-0; version automatically updated."),
    ("NVIDIA/k8s-device-plugin#303", "CD108",
     "2022/05/13 23:09:23 Loading NVML\n2022/05/13 23:09:23 Failed to initialize NVML: could not load NVML library.\n"
     "2022/05/13 23:09:23 If this is a GPU node, did you set the docker default runtime to 'nvidia'?"),
    # the driver refusing an operation of a newer runtime, or a vGPU profile
    ("RobotecAI/RobotecGPULidar#322", "CD103", "[22:13:56][info]: Running on GPU: NVIDIA H100-20C\nunrecoverable "
     "error: cuda error: operation not supported (code=801)"),
    # Triton's kernels under a driver older than its ptxas; a bitsandbytes without a binary for PyTorch's CUDA
    ("triton-lang/triton#1323", "CD103", "RuntimeError: Triton Error [CUDA]: device kernel image is invalid"),
    ("bitsandbytes-foundation/bitsandbytes#1848", "CD409",
     "[bitsandbytes.cextension|ERROR]bitsandbytes library load error: Configured CUDA binary not found at "
     "/usr/local/lib/python3.12/dist-packages/bitsandbytes/libbitsandbytes_cuda131.so"),
    # "this GPU's architecture is not supported"
    ("vllm-project/vllm#1157", "CD404", "ValueError: Bfloat16 is only supported on GPUs with compute capability of at "
     "least 8.0. Your Tesla T4 GPU has compute capability 7.5."),
    ("triton-lang/triton#8539", "CD206", "triton.runtime.errors.PTXASError: PTXAS error: Internal Triton PTX codegen "
     "error\n`ptxas` stderr:\nptxas fatal   : Value 'sm_121a' is not defined for option 'gpu-name'"),
    ("NVIDIA/TensorRT#1428", "CD404", "[E] [TRT] C:\\source\\rtSafe\\cuda\\caskUtils.cpp (80) - Assertion Error in "
     "nvinfer1::rt::task::trtSmToCask: 0 (Unsupported SM.)"),
    ("ShufflePerson/AimAhead#3", "CD404", "target gpu sm 61 is not supported by this tensorrt release"),
    ("PaddlePaddle/PaddleSeg#3910", "CD404",
     "W0520 15:27:38.243607 60927 gpu_resources.cc:106] The GPU compute capability in your current machine is 120, "
     "which is not supported by Paddle, it is recommended to install the corresponding wheel package according to the "
     "installation information on the official Paddle website."),
    ("sgl-project/sglang#34827", "CD404", "RuntimeError: fp8_fp4_mega_moe (deep_gemm): Unsupported architecture"),
]


@pytest.mark.parametrize(("source", "code", "message"), CASES, ids=[case[0] for case in CASES])
def test_the_family_in_its_own_words(source: str, code: str, message: str) -> None:
    data = explain_text(message, None)
    assert data["matches"], source
    assert data["matches"][0]["code"] == code, (source, [m["code"] for m in data["matches"]])


@pytest.mark.parametrize(("message", "compute_capability", "judged"), [
    # TensorRT's "SM 61" and "0x601" are compute capability 6.1: TensorRT 10 dropped Pascal (compat/gpu_support.toml)
    ("target gpu sm 61 is not supported by this tensorrt release", "6.1", "TensorRT dropped Pascal"),
    ("[TRT] [E] 1: [caskUtils.cpp::nvinfer1::rt::task::trtSmToCask::193] Error Code 1: Internal Error "
     "(Unsupported SM: 0x601)", "6.1", "TensorRT dropped Pascal"),
    # Blackwell under TensorRT: supported from 10.8, and code for it needs CUDA 12.8
    ("Error Code 9: API Usage Error (Target GPU SM 120 is not supported by this TensorRT release.)", "12.0",
     "TensorRT supports Blackwell (compute capability 12.0) from 10.8"),
    # PyTorch's own warning: the first build that lists sm_120 (compat/pytorch.toml)
    ("NVIDIA GeForce RTX 5090 with CUDA capability sm_120 is not compatible with the current PyTorch installation.\n"
     "The current PyTorch install supports CUDA capabilities sm_50 sm_60 sm_70 sm_75 sm_80 sm_86 sm_90.",
     "12.0", "the first PyTorch release with a build that lists sm_120 is 2.7.0"),
])
def test_the_architecture_is_read_and_judged_against_the_data(message: str, compute_capability: str,
                                                              judged: str) -> None:
    first = explain_text(message, None)["matches"][0]
    assert first["code"] == "CD404"
    assert first["values"]["compute_capability"] == compute_capability
    assert judged in first["cause"], first["cause"]


@pytest.mark.parametrize("message", [
    # NCCL's start-up notes: no network plugin, no InfiniBand device (it then uses sockets)
    "noodle-4090-0:1896106:1896106 [0] NCCL INFO NET/Plugin: Plugin load returned 2 : libnccl-net.so: cannot open "
    "shared object file: No such file or directory : when loading libnccl-net.so",
    "<cluster_name>:924:924 [5] NCCL INFO NET/IB : No device found.",
    # a CPU architecture no GPU library is named beside
    "error: Unsupported architecture: s390x",
])
def test_what_is_not_the_gpu_stack_is_not_claimed(message: str) -> None:
    assert explain_text(message, None)["exit_code"] == 1


@pytest.mark.parametrize(("source", "code", "message"), [
    # Rust's cudarc names the library bare, in quotes: the driver's (CD1) or cuDNN (CD3)
    ("chelsea0x3b/cudarc#255", "CD101", "thread 'main' panicked at /home/u/.cargo/registry/src/index.crates.io-6f17d22b"
     "ba15001f/cudarc-0.11.5/src/driver/sys/mod.rs:61:9:\nUnable to find cuda lib under the names [\"cuda\", \"nvcuda\"]. "
     "Please open GitHub issue."),
    ("EricLBuehler/mistral.rs#1005", "CD301", "Unable to dynamically load the \"cudnn\" shared library - "
     "searched for library names: [\"cudnn\", \"cudnn64\"]."),
    # a kernel launch that finds no code for this GPU
    ("NVIDIA/stdexec#888", "CD404", "CUDA error cudaErrorSymbolNotFound [include/nvexec/stream/bulk.cuh"
     ":239]: named symbol not found"),
    # cuda-python's pathfinder (CuPy 14, numba-cuda): a library it did not find
    ("cupy/cupy#9719", "CD203", "cuBLAS Version               : ImportError('Failure finding \"libcublasLt.so\": No "
     "such file: libcublasLt.so*, No such file: /usr/local/cuda/lib64/libcublasLt.so')"),
    # a CUDA image started without the GPUs
    ("NVlabs/FoundationPose#47", "CD108", "2024-04-11 12:54:19 WARNING: The NVIDIA Driver was not detected.  GPU "
     "functionality will not be available.\n2024-04-11 12:54:19    Use the NVIDIA Container Toolkit to start this "
     "container with GPU support; see"),
    # FFmpeg's NVENC: the driver's encoder libraries not mounted, or a driver older than the build's NVENC API
    ("Huanshere/VideoLingo#406", "CD108", "[h264_nvenc @ 0x55bd94c6bb40] Cannot load libnvidia-encode.so.1\n"
     "[h264_nvenc @ 0x55bd94c6bb40] The minimum required Nvidia driver for nvenc is 435.21 or newer"),
    ("HandBrake/HandBrake#5641", "CD103", "[h264_nvenc @ 000001aedcf7e740] Driver does not support the required nvenc "
     "API version. Required: 12.1 Found: 12.0\n[h264_nvenc @ 000001aedcf7e740] The minimum required Nvidia driver for "
     "nvenc is (unknown) or newer"),
    # hashcat without the toolkit's NVRTC; Blender's PTX newer than the driver
    ("hashcat/hashcat#2722", "CD201", "* Device #1: CUDA SDK Toolkit installation NOT detected.\n             CUDA SDK "
     "Toolkit installation required for proper device support and utilization\n             Falling back to OpenCL "
     "Runtime"),
    ("allenai/objaverse-rendering#5", "CD103", "Failed to load CUDA kernel from '/comp_robot/blender-3.2.2-linux-x64/3.2/"
     "scripts/addons/cycles/lib/kernel_compute_75.ptx' (Unsupported PTX version)"),
    # builds: the linker naming a library by its flag (the library's own family), CMake finding no toolkit
    ("ggml-org/llama.cpp#7508", "CD101", "/usr/bin/ld: cannot find -lcuda: No such file or directory collect2: error: "
     "ld returned 1 exit status make: *** [Makefile:763: main] Error 1"),
    ("open-mmlab/denseflow#46", "CD201", "CMake Error at /usr/local/share/cmake-3.13/Modules/FindCUDA.cmake:696 "
     "(message):\n  Specify CUDA_TOOLKIT_ROOT_DIR\nCall Stack (most recent call first):"),
    ("microsoft/vcpkg#36418", "CD201", "CMake Error at C:/dev/vcpkg/downloads/tools/cmake-3.27.1-windows/share/cmake-3.27/"
     "Modules/CMakeDetermineCUDACompiler.cmake:180 (message):\n  Failed to find nvcc.\n\n  Compiler requires the CUDA "
     "toolkit.  Please set the CUDAToolkit_ROOT\n  variable."),
    # CTranslate2's compute types on a GPU without them (or without its CUDA backend)
    ("meizhong986/WhisperJAV#109", "CD404", "2026-01-03 09:35:42 - whisperjav - ERROR - Failed to load Faster-Whisper "
     "model: Requested int8_float16 compute type, but the target device or backend do not support efficient "
     "int8_float16 computation."),
    # a Jetson whose memory manager the process cannot reach
    ("anduril/jetpack-nixos#118", "CD108", "gdm-x-session[1085]: NvRmMemInitNvmap failed with Permission denied\n"
     "gdm-x-session[1085]: 549: Memory Manager Not supported\ngdm-x-session[1085]: ****NvRmMemInit failed**** error "
     "type: 196626"),
    # XLA's words for a GPU out of memory; Kubernetes finding no node with a GPU
    ("jax-ml/jax#788", "CD109", "E external/org_tensorflow/tensorflow/compiler/xla/python/local_client.cc:672] Execution "
     "of replica 0 failed: Resource exhausted: Out of memory while trying to allocate 5520758552 bytes."),
    ("NVIDIA/k8s-device-plugin#165", "CD108", "Warning  FailedScheduling  default-scheduler  0/3 nodes are available: 3 "
     "Insufficient nvidia.com/gpu."),
])
def test_other_stacks_words(source: str, code: str, message: str) -> None:
    first = explain_text(message, None)["matches"][0]
    assert first["code"] == code, (source, first)


def test_a_quoted_name_counts_only_after_a_loader_that_quotes() -> None:
    assert explain_text('she said "cudnn" is fast; no such file or directory', None)["exit_code"] == 1
    assert explain_text("/usr/bin/ld: cannot find -lpng: No such file or directory", None)["exit_code"] == 1
