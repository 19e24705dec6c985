"""Issue 41, round six: the families read in other stacks' words, from public threads that no evaluation set uses.
NVIDIA's short error texts after a program's own prefix (CTranslate2, ggml, Ollama), architectures in Paddle's, NGC's,
SGLang's, FramePack's, xFormers' and tiny-cuda-nn's words (judged against the data: a GPU within a build's range by
binary compatibility is no fault), ptxas and Triton's bundled copy, NCCL's network and peers, packages without their
compiled CUDA extension, CUDA.jl's driver words; and near misses that are not the GPU stack's business."""

from __future__ import annotations

import pytest

from cudnn_doctor.commands.explain import explain_text

# (source, the first answer's code, the message as the thread prints it)
CASES = [
    # NVIDIA's short texts after a program's prefix
    ("SYSTRAN/faster-whisper#708", "CD110", "RuntimeError: CUDA failed with error unknown error"),
    ("ollama/ollama#1083", "CD110", "CUDA error 3 at /go/src/github.com/jmorganca/ollama/llm/llama.cpp/gguf/ggml-cuda.cu:"
     "5661: initialization error\ncurrent device: 0"),
    ("ggml-org/llama.cpp ggml-cuda.cu", "CD109", "ggml_backend_cuda_buffer_type_alloc_buffer: allocating 2206.07 MiB on "
     "device 0: cudaMalloc failed: out of memory"),
    # Ollama's discovery: cuInit failing in the driver
    ("ollama/ollama#11593", "CD110", 'time=2025-08-02T22:42:20.643Z level=INFO source=gpu.go:612 msg="Unable to load '
     'cudart library /usr/lib/x86_64-linux-gnu/libcuda.so.575.57.08: cuda driver library init failure: 3"'),
    ("ollama/ollama#5453", "CD110", 'time=2024-07-03T13:26:05.135+08:00 level=DEBUG source=gpu.go:517 msg="Unable to '
     'load nvcuda" library=/usr/lib/x86_64-linux-gnu/libcuda.so.535.183.01 error="nvcuda init failure: 999"'),
    # the architecture in each library's words
    ("PaddlePaddle/Paddle#73687", "CD404", "E0628 11:38:05.609311 27896 gpu_resources.cc:98] Mismatched GPU "
     "Architecture: The installed PaddlePaddle package was compiled for 75 80 86 89 ,but your current GPU is 120 "
     "Solution: Install the correct wheel package built for your GPU from the official PaddlePaddle website"),
    ("PaddlePaddle/Paddle#54713", "CD404", "W1015 15:39:09.441613 65444 gpu_resources.cc:96] The GPU architecture in "
     "your current machine is Pascal, which is not compatible with Paddle installation with arch: 70 75 80 86 , it is "
     "recommended to install the corresponding wheel package according to the installation information on the official "
     "Paddle website."),
    ("fauxpilot/fauxpilot#69", "CD404", "ERROR: Detected NVIDIA Tesla K40m GPU, which is not supported by this container"),
    ("opendatalab/MinerU#3416", "CD404", "SGlang only supports sm 75 and above"),
    ("lllyasviel/FramePack#394", "CD404", "Error during generation: ValueError: Unsupported CUDA architecture: sm75"),
    ("sgl-project/sglang#24302", "CD404", "RuntimeError: GemmaRMSNorm failed with error code no kernel image is "
     "available for execution on the device"),
    ("nerfstudio-project/gsplat#1053", "CD404", "CUDA error: no kernel image is available for execution on RTX 5090"),
    ("Comfy-Org/ComfyUI#11602", "CD404", "`fa3F@2.8.3-133-gde1584b` is not supported because:\n    requires device "
     "with capability <= (9, 0) but your GPU has capability (12, 0) (too new)"),
    ("pytorch/pytorch#182250", "CD404", "UserWarning: Found GPU0 Tesla V100-PCIE-32GB which is of compute capability "
     "(CC) 7.0.\nThe following list shows the CCs this version of PyTorch was built for and the hardware CCs it "
     "supports:\n- 7.5 which supports hardware CC >=7.5,<8.0\n- 8.0 which supports hardware CC >=8.0,<9.0 except {8.7}"
     "\n- 9.0 which supports hardware CC >=9.0,<10.0"),
    ("vllm-project/vllm quantization check", "CD404", "ValueError: The quantization method awq_marlin is not supported "
     "for the current GPU. Minimum capability: 80. Current capability: 75."),
    ("woct0rdho/triton-windows#93", "CD206", "'sm_120' is not a recognized processor for this target (ignoring processor)"),
    # NCCL: the network between the ranks, a peer that went away
    ("NVIDIA/nccl-tests#166", "CD119", "ubuntu:39964:40075 [0] misc/socket.cc:483 NCCL WARN socketStartConnect: Connect "
     "to 10.0.0.2<45763> failed : Software caused connection abort\nubuntu:39964:40075 [0] NCCL INFO misc/socket.cc:564 "
     "-> 2"),
    ("NVIDIA/nccl#905", "CD119", "NCCL WARN NET/IB : Got async event : port error"),
    ("NVIDIA/nccl#2076", "CD119", "torch.distributed.DistBackendError: NCCL error in: /pytorch/torch/csrc/distributed/"
     "c10d/NCCLUtils.hpp:268, remote process exited or there was a network error, NCCL version 2.21.5\n"
     "ncclRemoteError: A call failed possibly due to a network error or a remote process exiting prematurely."),
    # the platform refusing an operation of the runtime (memory pools on vGPU or WSL), in TensorRT-LLM's words
    ("triton-inference-server/tensorrtllm_backend#363", "CD103", "UNAVAILABLE: Internal: unexpected error when creating "
     "modelInstanceState: [TensorRT-LLM][ERROR] CUDA runtime error in cudaDeviceGetDefaultMemPool(&memPool, device): "
     "operation not supported (/app/tensorrt_llm/cpp/tensorrt_llm/runtime/bufferManager.cpp:170)"),
    # cuBLAS refusing in ggml's words
    ("ollama/ollama#7409", "CD211", "Error: an unknown error was encountered while running the model CUDA error: "
     "CUBLAS_STATUS_NOT_SUPPORTED\n  current device: 0, in function ggml_cuda_mul_mat_batched_cublas"),
    # a package without its compiled CUDA extension
    ("open-mmlab/mmcv#2059", "CD409", '  File "/myenv/lib/python3.8/importlib/__init__.py", line 127, in import_module\n'
     "ModuleNotFoundError: No module named 'mmcv._ext'"),
    ("Dao-AILab/flash-attention#933", "CD409", '  File "/home/xxx/githubRepo/flash-attention/flash_attn/'
     'flash_attn_interface.py", line 10, in <module>\n    import flash_attn_2_cuda as flash_attn_cuda\n'
     "ModuleNotFoundError: No module named 'flash_attn_2_cuda'"),
    # build tools: headers, CMake's toolkit search
    ("open-mmlab/mmdetection#71", "CD201", "In file included from <command-line>:0:0:\n/usr/include/stdc-predef.h:59:1: "
     "fatal error: cuda_runtime.h: No such file or directory\ncompilation terminated.\nerror: command 'nvcc' failed with "
     "exit status 1"),
    ("Kitware CMake FindCUDAToolkit.cmake", "CD201", "CMake Error at /usr/share/cmake-3.28/Modules/"
     "FindPackageHandleStandardArgs.cmake:230 (message):\n  Could NOT find CUDAToolkit (missing: CUDA_CUDART) (found "
     "version \"12.0.140\")"),
    # the driver and the kernel module, containers and Kubernetes
    ("NVIDIA/open-gpu-kernel-modules nv.c", "CD102", "NVRM: The NVIDIA GPU 0000:01:00.0 (PCI ID: 10de:2684)\nNVRM: "
     "installed in this system is not supported by the\nNVRM: NVIDIA 470.223.02 driver release."),
    ("NVIDIA/k8s-device-plugin rm factory", "CD108", "E factory.go:87] Incompatible strategy detected auto\nerror "
     "starting plugins: error getting plugins: unable to create plugins: failed to construct resource managers: invalid "
     "device discovery strategy"),
    ("NVIDIA/go-nvml in the device plugin", "CD108", "I0513 23:09:23.123 main.go:199] Failed to initialize NVML: "
     "ERROR_LIBRARY_NOT_FOUND"),
    ("containerd CRI plugin", "CD108", "Warning  FailedCreatePodSandBox  kubelet  Failed to create pod sandbox: rpc "
     "error: code = Unknown desc = failed to get sandbox runtime: no runtime for \"nvidia\" is configured"),
    # a framework's own GPU library: bitsandbytes, torch.compile's Triton, ONNX Runtime's CPU package
    ("bitsandbytes-foundation/bitsandbytes#1614", "CD409", "Could not find the bitsandbytes CUDA binary at PosixPath("
     "'/data1/prd/bitsandbytes/bitsandbytes/libbitsandbytes_cuda121.so')\nCUDA Setup failed despite CUDA being "
     "available. Please run the following command to get more information:"),
    ("pytorch/pytorch torch/utils/_triton.py", "CD404", "torch._inductor.exc.InductorError: RuntimeError: Found NVIDIA "
     "GeForce GTX 1080 Ti which is too old to be supported by the triton GPU compiler, which is used as the backend."),
    ("bytedance/LatentSync#225", "CD406", ">>> import onnxruntime\n>>> onnxruntime.get_available_providers()\n"
     "['AzureExecutionProvider', 'CPUExecutionProvider']"),
    # a library of the wrong word size: the driver's libcuda is the driver's family, not cuDNN's
    ("ollama/ollama#5453 (ELF class)", "CD110", 'level=DEBUG source=gpu.go:517 msg="Unable to load nvcuda" library='
     '/usr/lib/i386-linux-gnu/libcuda.so.535.183.01 error="Unable to load /usr/lib/i386-linux-gnu/libcuda.so.535.183.01 '
     'library to query for Nvidia GPUs: /usr/lib/i386-linux-gnu/libcuda.so.535.183.01: wrong ELF class: ELFCLASS32"'),
    # XLA's newer words for a driver older than its PTX compiler, and for CUDA libraries it cannot load
    ("openxla/xla nvptx_compiler.cc", "CD106", "W external/xla/xla/service/gpu/nvptx_compiler.cc:836] The NVIDIA "
     "driver's CUDA version is 12.2 which is older than the PTX compiler version 12.6.77. Because the driver is older "
     "than the PTX compiler version, XLA is disabling parallel compilation, which may slow down compilation. You should "
     "update your NVIDIA driver or use the NVIDIA-provided CUDA forward compatibility packages."),
    ("openxla/xla cuda_executor.cc", "CD203", "E0000 cuda_executor.cc:1228] INTERNAL: CUDA Runtime error: Failed call "
     "to cudaGetRuntimeVersion: Error loading CUDA libraries. GPU will not be used.: Error loading CUDA libraries. GPU "
     "will not be used."),
    # nvidia-smi's own words for an NVML or libcuda of another release
    ("Bruce-Lee-LY/cuda_hook#15", "CD118", "Mismatch in versions between nvidia-smi and NVML.\nAre you sure you are "
     "using nvidia-smi provided with the driver?"),
    ("microsoft/WSL#11589", "CD112", "| NVIDIA-SMI 545.46                 Driver Version: 546.80       CUDA Version: "
     "ERR!     |"),
    # an extension of PyTorch built for another CUDA than it (PyG's, torchaudio's words)
    ("rusty1s/pytorch_scatter", "CD410", "RuntimeError: Detected that PyTorch and torch_scatter were compiled with "
     "different CUDA versions. PyTorch has CUDA version 12.1 and torch_scatter has CUDA version 11.8. Please reinstall "
     "the torch_scatter that matches your PyTorch install."),
    # CUDA.jl's words for a driver older, or newer, than it supports
    ("JuliaGPU/CUDA.jl#1001", "CD106", "┌ Warning: The NVIDIA driver on this system only supports up to CUDA 11.0.0.\n"
     "│ For performance reasons, it is recommended to upgrade to a driver that supports CUDA 11.2 or higher."),
    ("JuliaGPU/CUDA.jl#2896", "CD410", "┌ Error: This version of CUDA.jl only supports NVIDIA drivers for CUDA 11.x or "
     "12.x (yours is for CUDA 13.0.0)"),
]

# near misses: GPU words that name no fault of the GPU stack (source, message)
UNRELATED = [
    # a build for (8.0) - (12.0) runs on 12.1 by binary compatibility: the maintainers say to ignore it
    ("pytorch/pytorch#172629", "UserWarning:\n    Found GPU0 NVIDIA GB10 which is of cuda capability 12.1.\n    Minimum "
     "and Maximum cuda capability supported by this version of PyTorch is\n    (8.0) - (12.0)"),
    # a GPU the build's own list holds (>=12.0,<13.0 holds 12.1): nothing to fix
    ("pytorch/pytorch#172629 (list)", "UserWarning: Found GPU0 NVIDIA GB10 which is of compute capability (CC) 12.1.\n"
     "The following list shows the CCs this version of PyTorch was built for and the hardware CCs it supports:\n- 8.0 "
     "which supports hardware CC >=8.0,<9.0 except {8.7}\n- 12.0 which supports hardware CC >=12.0,<13.0"),
    ("vllm-project/vllm kv_cache_utils.py", "ValueError: The model's max seq len (131072) is larger than the maximum "
     "number of tokens that can be stored in KV cache (39024). Try increasing `gpu_memory_utilization` or decreasing "
     "`max_model_len` when initializing the engine."),
    ("pytorch/pytorch device mismatch", "RuntimeError: Expected all tensors to be on the same device, but found at least "
     "two devices, cuda:0 and cpu!"),
    ("open-mmlab/mmcv not installed", "ModuleNotFoundError: No module named 'mmcv'"),
    ("Dao-AILab/flash-attention not installed", "ModuleNotFoundError: No module named 'flash_attn'"),
    ("NVIDIA/nccl#952", "<cluster_name>:919:1150 [0] NCCL INFO NET/IB : No device found.\n<cluster_name>:919:1150 [0] "
     "NCCL INFO NET/Socket : Using [0]eth0:10.0.0.1<0>"),
    ("Comfy-Org/ComfyUI start-up", "Total VRAM 24564 MB, total RAM 65372 MB\npytorch version: 2.7.0+cu128\nSet vram state "
     "to: NORMAL_VRAM\nDevice: cuda:0 NVIDIA GeForce RTX 4090 : cudaMallocAsync"),
    ("an unknown error of another program", "Error: unknown error\nThe server returned: initialization error"),
    ("pytorch/pytorch device-side assert", "RuntimeError: CUDA error: device-side assert triggered\nCompile with "
     "`TORCH_USE_CUDA_DSA` to enable device-side assertions."),
]


@pytest.mark.parametrize(("source", "code", "message"), CASES, ids=[case[0] for case in CASES])
def test_the_family_in_the_stacks_words(source: str, code: str, message: str) -> None:
    matches = explain_text(message, None)["matches"]
    assert matches and matches[0]["code"] == code, (source, [(m["code"], m["id"]) for m in matches])
    assert matches[0]["source"]


@pytest.mark.parametrize(("source", "message"), UNRELATED, ids=[row[0] for row in UNRELATED])
def test_a_near_miss_is_not_claimed(source: str, message: str) -> None:
    assert explain_text(message, None)["matches"] == [], source


def test_the_architecture_read_from_the_words_is_judged() -> None:
    """Paddle's "your current GPU is 120" is compute capability 12.0, judged against the first CUDA that targets it."""
    first = explain_text(next(case[2] for case in CASES if case[0] == "PaddlePaddle/Paddle#73687"), None)["matches"][0]
    assert first["values"]["compute_capability"] == "12.0"
    assert "12.0" in first["cause"] and "CUDA 12.8" in first["cause"]


def test_a_compilers_refusal_is_the_toolkits_family() -> None:
    """ptxas's own words, without its name, and Triton's bundled copy failing for sm_120a: the toolkit's compiler
    (CD206) comes first, with the variable that points Triton at a newer ptxas."""
    message = ("subprocess.CalledProcessError: Command '['/usr/lib/python3/site-packages/triton/backends/nvidia/bin/"
               "ptxas', '-lineinfo', '-v', '--gpu-name=sm_120a', '/tmp/t.ptx', '-o', '/tmp/t.ptx.o']' returned "
               "non-zero exit status 255.")
    first = explain_text(message, None)["matches"][0]
    assert first["code"] == "CD206" and "TRITON_PTXAS_PATH" in first["fix"] and "CUDA 12.8" in first["fix"]
    bare = explain_text("Value 'sm_110a' is not defined for option 'gpu-name'", None)["matches"][0]
    assert bare["code"] == "CD206" and "13.0" in bare["cause"] + bare["fix"]


def test_a_value_of_the_message_is_named_where_the_answer_does_not_use_it() -> None:
    """PyTorch's cuDNN pair: the answer names the release it was compiled against in its fix; the one found is said
    at the end of the cause."""
    first = explain_text("RuntimeError: cuDNN version incompatibility: PyTorch was compiled against 7401 but linked "
                         "against 7301", None)["matches"][0]
    assert "7.3.1" in first["cause"] and "7.4.1" in first["fix"]


def test_cuda_jl_reads_the_drivers_cuda() -> None:
    first = explain_text(next(case[2] for case in CASES if case[0] == "JuliaGPU/CUDA.jl#1001"), None)["matches"][0]
    assert first["values"]["cuda_version"] == "11.0" and 'v"11.0"' in first["fix"]


def test_the_gpu_a_pattern_captured_is_the_one_judged() -> None:
    """TensorFlow names the GPU's capability and the minimum beside it: the answer is about the GPU's (3.0)."""
    first = explain_text("Ignoring visible gpu device (device: 0, name: GeForce GTX 660, pci bus id: 0000:01:00.0, "
                         "compute capability: 3.0) with Cuda compute capability 3.0. The minimum required Cuda "
                         "capability is 3.5.", None)["matches"][0]
    assert first["values"]["compute_capability"] == "3.0" and "sm_30" in first["cause"] and "3.0" in first["fix"]


def test_the_current_capability_is_the_gpus() -> None:
    """vLLM names the minimum and the GPU's: the answer judges the GPU's (7.5), not the minimum (8.0)."""
    first = explain_text("ValueError: The quantization method fp8 is not supported for the current GPU. Minimum "
                         "capability: 89. Current capability: 86.", None)["matches"][0]
    assert first["code"] == "CD404" and first["values"]["compute_capability"] == "8.6"
