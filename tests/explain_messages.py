"""Real messages copied from public threads, each with its source and the finding family the thread's
cause belongs to (CD1 driver/GPU/container, CD2 CUDA toolkit, CD3 cuDNN, CD4 framework, CD5 install).
Unrelated errors must never be claimed. None of these is an example of compat/errors.toml."""

FAMILIES = [
    # loader failures, every form
    ("microsoft/onnxruntime#20049", "CD4",
     '[E:onnxruntime:Default, provider_bridge_ort.cc:1745 onnxruntime::TryGetProviderInfo_CUDA] D:\\a\\_work\\1\\s\\onnxruntime\\core\\session\\provider_bridge_ort.cc:1426 onnxruntime::ProviderLibrary::Get [ONNXRuntimeError] : 1 : FAIL : LoadLibrary failed with error 126 "" when trying to load "C:\\sd.webui\\system\\python\\lib\\site-packages\\onnxruntime\\capi\\onnxruntime_providers_cuda.dll"'),
    ("cupy/cupy#8317", "CD2",
     "RuntimeError: CuPy failed to load libnvrtc.so.12: OSError: libnvrtc.so.12: cannot open shared object file: No such file or directory"),
    ("kijai/ComfyUI-GIMM-VFI#17", "CD2",
     "RuntimeError: CuPy failed to load nvrtc64_120_0.dll: FileNotFoundError: Could not find module 'nvrtc64_120_0.dll' (or one of its dependencies). Try using the full path with constructor syntax."),
    ("PaddlePaddle/PaddleNLP#2980", "CD2",
     "RuntimeError: (PreconditionNotMet) The third-party dynamic library (libcublas.so) that Paddle depends on is not configured correctly. (error code is libcublas.so: cannot open shared object file: No such file or directory)"),
    ("PaddlePaddle/PaddleOCR#1081", "CD3",
     "PreconditionNotMetError: The third-party dynamic library (cudnn64_7.dll) that Paddle depends on is not configured correctly. (error code is 126)"),
    ("PaddlePaddle/Paddle#43197", "CD2",
     "RuntimeError: (PreconditionNotMet) The third-party dynamic library (cublas64_102.dll;cublas64_10.dll) that Paddle depends on is not configured correctly. (error code is 126)"),
    ("PaddlePaddle/Paddle#78917", "CD1",
     "W0508 21:40:15.979074  1551 dynamic_loader.cc:412] The third-party dynamic library (libcuda.so) that Paddle depends on is not configured correctly. (error code is libcuda.so: cannot open shared object file: No such file or directory)"),
    ("NVIDIA/cuml#7314", "CD2",
     "    self._handle = _dlopen(self._name, mode)\n                   ^^^^^^^^^^^^^^^^^^^^^^^^^\nOSError: libnvrtc.so.12: cannot open shared object file: No such file or directory"),
    ("NVIDIA/cutile-python#57", "CD2", "[BUG]: Error loading nvrtc-builtins64_131.dll"),
    ("deeplearning4j/deeplearning4j-examples#561", "CD2",
     "libjnicuda.so: libcudart.so.8.0: cannot open shared object file: No such file or directory"),
    ("deepjavalibrary/djl#2067", "CD3",
     "Caused by: java.lang.UnsatisfiedLinkError djl.ai/pytorch/1.12.1-Cu116-Linux-x86_64/Libtorch_cuda_cpp.so:Libcudnn.so.8:"
     "cannotopen:sharedobjectfile:Nosuchfileordirectory"),
    ("tensorflow/java#598", "CD2",
     "Debug: Failed to load for cudart@.11.0: java.lang.UnsatisfiedLinkError: no cudart in java.library.path: "
     "/layers/paketo-buildpacks_bellsoft-liberica/jre/lib:/usr/java/packages/lib:/usr/lib64:/lib64:/lib:/usr/lib"),
    ("zai-org/ChatGLM3#69", "CD3",
     'OSError: [WinError 126] 找不到指定的模块。 Error loading "D:\\python\\lib\\site-packages\\torch\\lib\\cudnn_cnn_infer64_8.dll" '
     "or one of its dependencies."),
    # status codes by name, number, or the library's own words
    ("tensorflow/models#7983", "CD3",
     "2018-05-28 23:08:09.915921: E tensorflow/stream_executor/cuda/cuda_dnn.cc:385] could not create cudnn handle: CUDNN_STATUS_INTERNAL_ERROR"),
    ("pytorch/pytorch#185512", "CD3", "RuntimeError: CUDNN_STATUS_SUBLIBRARY_VERSION_MISMATCH in F.conv2d on PyTorch nightly (cu130)"),
    ("mav-rik/facerestore_cf#27", "CD3", "CropFace\ncuDNN error: CUDNN_STATUS_SUBLIBRARY_VERSION_MISMATCH"),
    ("PKU-YuanGroup/Video-LLaVA#22", "CD1",
     "UserWarning: CUDA initialization: Unexpected error from cudaGetDeviceCount(). Did you run some cuda functions before calling NumCudaDevices() that might have already set an error? Error 804: forward compatibility was attempted on non supported HW (Triggered internally at ../c10/cuda/CUDAFunctions.cpp:109.)"),
    ("gpustack/gpustack#1254", "CD1",
     "RuntimeError: Unexpected error from cudaGetDeviceCount(). Did you run some cuda functions before calling NumCudaDevices() that might have already set an error? Error 802: system not yet initialized"),
    ("microsoft/onnxruntime#21435", "CD1", "CUDA failure 804: forward compatibility was attempted on non supported HW ; GPU=0 ; hostname=x ; file=/onnxruntime_src/onnxruntime/core/providers/cuda/cuda_call.cc ; line=123"),
    ("pytorch/pytorch#6515", "CD4",
     "THCudaCheck FAIL file = / pytorch / torch / lib / THC / generic / THCTensorMathPairwise.cu line = 40 error = 48: no kernel image is available for execution on the device"),
    # versions
    ("facebookresearch/xformers#800", "CD4",
     "WARNING[XFORMERS]: xFormers can't load C++/CUDA extensions. xFormers was built for:\n    PyTorch 2.1.0+cu121 with CUDA 1201 (you have 2.1.0+cu118)\n    Python  3.8.18 (you have 3.8.5)"),
    ("NVIDIA/TensorRT#2983", "CD4",
     "[05/18/2023-05:54:47] [TRT] [E] 6: The engine plan file is not compatible with this version of TensorRT, expecting library version 8.6.1 got 8.5.3, please rebuild."),
    ("wang-xinyu/tensorrtx#664", "CD4",
     "ERROR: 6: The engine plan file is not compatible with this version of TensorRT, expecting library version 8.0.0 got 8.0.1, please rebuild."),
    ("icip-cas/AutoAlign#25", "CD4",
     "RuntimeError:\n      The detected CUDA version (11.8) mismatches the version that was used to compile\n"
     "      PyTorch (12.4). Please make sure to use the same CUDA versions."),
    # architectures
    ("jiangyzy/GOAE#16", "CD4",
     "UserWarning:\nNVIDIA RTX A6000 with CUDA capability sm_86 is not compatible with the current PyTorch installation.\nThe current PyTorch install supports CUDA capabilities sm_37 sm_50 sm_60 sm_70."),
    ("NVIDIA/TensorRT#2176", "CD4",
     "The engine plan file is generated on an incompatible device, expecting compute 8.6 got compute 7.5, please rebuild.4: [runtime.cpp::deserializeCudaEngine::50] Error Code 4: Internal Error (Engine deserialization failed.)"),
    ("DepthAnything/Depth-Anything-V2#274", "CD4",
     "`fa3F@0.0.0` is not supported because:\n    requires device with capability > (9, 0) but your GPU has capability (8, 9) (too old)"),
    ("woct0rdho/triton-windows#93", "CD4", "'sm_120' is not a recognized processor for this target (ignoring processor)"),
    ("kijai/ComfyUI-WanVideoWrapper#63", "CD4",
     "RuntimeError: Internal Triton PTX codegen error\n`ptxas` stderr:\nptxas fatal  : Value 'sm_120' is not defined for option 'gpu-name'"),
    # containers and driver plumbing
    ("NVIDIA/nvidia-docker#1352", "CD1",
     "docker: Error response from daemon: could not select device driver \"\" with capabilities: [[gpu]]."),
    ("xerrors/Yuxi#237", "CD1", "Error response from daemon: could not select device driver \"nvidia\" with capabilities: [[gpu]]"),
    ("NVIDIA/nvidia-docker#1671", "CD1", "root@098b49afe624:/# nvidia-smi\nFailed to initialize NVML: Unknown Error"),
    ("jiaw-z/CoR-GS#23", "CD1",
     '    torch._C._cuda_init()\nRuntimeError: No CUDA GPUs are available'),
    # install time and silent fallbacks
    ("sanchit-gandhi/whisper-jax#211", "CD4",
     "WARNING:2025-06-15 17:04:55,449:jax._src.xla_bridge:791: An NVIDIA GPU may be present on this machine, but a CUDA-enabled jaxlib is not installed. Falling back to cpu."),
    ("gladiaio/gladia#927", "CD4",
     "2022-11-30 12:50:08,211 - jax._src.lib.xla_bridge - WARNING - No GPU/TPU found, falling back to CPU. (Set TF_CPP_MIN_LOG_LEVEL=0 and rerun for more info.)"),
    ("open-mmlab/PIA#30", "CD4",
     "WARNING[XFORMERS]: xFormers can't load C++/CUDA extensions. xFormers was built for:\n    PyTorch 2.1.2+cu121 with CUDA 1201 (you have 2.1.2+cpu)"),
    ("facebookresearch/xformers#800 (comment)", "CD4", "Error: xFormers wasn't build with CUDA support"),
]

UNRELATED = [
    # torch's CPU library fbgemm.dll needs the OpenMP runtime libomp140.x86_64.dll (kohya-ss/sd-scripts#1597,
    # chenwei-zhao/captcha-recognizer#2): not a GPU-stack problem, whatever the language of the loader's words
    ("vladmandic/sdnext#3375",
     'OSError: [WinError 126] Não foi possível encontrar o módulo especificado. Error loading '
     '"E:\\ia\\automatic\\venv\\lib\\site-packages\\torch\\lib\\fbgemm.dll" or one of its dependencies.'),
    ("numpy broadcasting (a user's shape bug)", "ValueError: operands could not be broadcast together with shapes (3,4) (5,)"),
    ("pytorch shape mismatch", "RuntimeError: mat1 and mat2 shapes cannot be multiplied (64x512 and 256x10)"),
    ("missing Python package", "ModuleNotFoundError: No module named 'pandas'"),
    ("a dict key", "Traceback (most recent call last):\n  File \"train.py\", line 12, in <module>\n    lr = config['learning_rate']\nKeyError: 'learning_rate'"),
    ("a file path", "FileNotFoundError: [Errno 2] No such file or directory: 'data/train.csv'"),
    ("onnxruntime model path (microsoft/onnxruntime#24691)",
     "onnxruntime.capi.onnxruntime_pybind11_state.NoSuchFile: [ONNXRuntimeError] : 3 : NO_SUCHFILE : Load model from model.onnx failed:Load model model.onnx failed. File doesn't exist"),
    ("tensor dtype", "RuntimeError: expected scalar type Float but found Double"),
    ("a system library, not the GPU stack", "ImportError: libGL.so.1: cannot open shared object file: No such file or directory"),
    ("an index error", "IndexError: index 10 is out of bounds for dimension 0 with size 10"),
    ("git", "fatal: not a git repository (or any of the parent directories): .git"),
    ("pip's resolver on two packages' versions, not a build skew",
     "ERROR: pip's dependency resolver does not currently take into account all the packages that are installed. "
     "torchvision 0.15.2 requires torch==2.0.1, but you have torch 2.1.0 which is incompatible."),
]
