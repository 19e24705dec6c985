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
    # Triton's bundled ptxas or LLVM older than the GPU: a CUDA toolkit's compiler (issue 41 puts it in the toolkit's family)
    ("woct0rdho/triton-windows#93", "CD2", "'sm_120' is not a recognized processor for this target (ignoring processor)"),
    ("kijai/ComfyUI-WanVideoWrapper#63", "CD2",
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
    # a library named by its product name, not its file name
    ("li-plus/chatglm.cpp#89", "CD2", "CMake Warning at third_party/ggml/src/CMakeLists.txt:236 (message):\n  cuBLAS not found"),
    ("uxlfoundation/oneMath#72", "CD2",
     "CMake Error at /usr/share/cmake-3.16/Modules/FindPackageHandleStandardArgs.cmake:146 (message):\n"
     "  Could NOT find cuBLAS (missing: CUBLAS_INCLUDE_DIR)"),
    ("Megvii-BaseDetection/YOLOX#650", "CD3", "CMake Error at cmake/cudnn.cmake:31 (message):\n  Can not find CuDNN Library"),
    ("tensorflow/tensorflow#4168", "CD3",
     "I tensorflow/stream_executor/cuda/cuda_dnn.cc:3304] Unable to load cuDNN DSO"),
    ("davisking/dlib#2359", "CD2",
     "-- Found CUDA, but CMake was unable to find the cuBLAS libraries that should be part of every basic CUDA install. "
     "Your CUDA install is somehow broken or incomplete."),
    # companion libraries and the loaders' other words
    ("WisconsinAIVision/yolact_edge#186", "CD2",
     "RuntimeError: nvrtc: error: failed to open libnvrtc-builtins.so.11.1.\n"
     "  Make sure that libnvrtc-builtins.so.11.1 is installed correctly.\nnvrtc compilation failed: "),
    ("chainer/chainer#4813", "CD2",
     "Exception in main training loop: nvrtc: error: failed to open libnvrtc-builtins.so.\n"
     "  Make sure that libnvrtc-builtins.so is installed correctly."),
    ("flashlight/flashlight#124", "CD2",
     "  what():  ArrayFire Exception (Internal error:998):\nNVRTC Error(7): NVRTC_ERROR_BUILTIN_OPERATION_FAILURE\nLog: "),
    ("NVIDIA/numba-cuda#196", "CD2",
     "numba.cuda.cudadrv.error.NvrtcError:\n  Failed to call nvrtcCompileProgram: NVRTC_ERROR_BUILTIN_OPERATION_FAILURE"),
    ("billwuhao/ComfyUI_gemmax#2", "CD2", "Library cublas64_11.dll is not found or cannot be loaded"),
    ("qupath/qupath-extension-djl#46", "CD2", "cublas64_12.dll: Can't find dependent libraries"),
    # package managers' conflicts about the GPU stack's own packages
    ("astral-sh/uv#10604", "CD5",
     "  × No solution found when resolving dependencies:\n  ╰─▶ Because there is no version of "
     "nvidia-cudnn-cu12{platform_machine == 'x86_64' and sys_platform == 'linux'}==9.1.0.70 and torch==2.4.1 depends on "
     "nvidia-cudnn-cu12{platform_machine == 'x86_64' and sys_platform ==\n      'linux'}==9.1.0.70, we can conclude that "
     "torch==2.4.1 cannot be used.\n      And because you require torch==2.4.1, we can conclude that your requirements "
     "are unsatisfiable."),
    ("xming521/WeClone#197", "CD5",
     "      and torch==2.7.1+cu126 depends on system:cuda==12.6, we can conclude that torch{sys_platform == 'linux'}==2.7.1 "
     "depends on system:cuda==12.6.\n      And because triton==3.3.1 depends on system:cuda==12.9, we can conclude that "
     "torch{sys_platform == 'linux'}==2.7.1 and triton{sys_platform == 'linux'}==3.3.1 are incompatible."),
    ("facefusion/facefusion-colab#16", "CD5",
     "ERROR: pip's dependency resolver does not currently take into account all the packages that are installed. This "
     "behaviour is the source of the following dependency conflicts.\ntorch 2.2.1+cu121 requires "
     "nvidia-cublas-cu12==12.1.3.1; platform_system == \"Linux\" and platform_machine == \"x86_64\", which is not installed."),
    # a companion's exact pin on the framework (torchvision's wheels pin one torch release): no build skew (CD410), but
    # the GPU stack's packages in conflict (issue 41, round ten: framework pins without a +cuXXX tag are CD5)
    ("pip's resolver on torchvision's torch pin", "CD5",
     "ERROR: pip's dependency resolver does not currently take into account all the packages that are installed. "
     "torchvision 0.15.2 requires torch==2.0.1, but you have torch 2.1.0 which is incompatible."),
    ("pytorch/pytorch#87075", "CD5",
     "ERROR: torchaudio 0.13.0.dev20221016+cu117 has requirement torch==1.14.0.dev20221016, but you'll have torch "
     "1.14.0.dev20221017+cu117 which is incompatible."),
    ("KevinMusgrave/pytorch-metric-learning#55", "CD5",
     "UnsatisfiableError: The following specifications were found to be incompatible with each other:\n\nOutput in "
     "format: Requested package -> Available versionsThe following specifications were found to be incompatible with "
     "your CUDA driver:\n\n  - feature:/linux-64::__cuda==10.1=0\n  - feature:|@/linux-64::__cuda==10.1=0\n\n"
     "Your installed CUDA driver is: 10.1"),
    # serialized engines of another TensorRT
    ("wang-xinyu/tensorrtx#632", "CD4",
     "[TensorRT] ERROR: 1: [stdArchiveReader.cpp::StdArchiveReader::34] Error Code 1: Serialization (Serialization "
     "assertion safeVersionRead == safeSerializationVersion failed.Version tag does not match. Note: Current Version: 43, "
     "Serialized Engine Version: 89)\n[TensorRT] ERROR: 4: [runtime.cpp::deserializeCudaEngine::76] Error Code 4: "
     "Internal Error (Engine deserialization failed.)\nTraceback (most recent call last):\n  File \"yolov5_trt.py\", "
     "line 88, in __init__\n    context = engine.create_execution_context()\n"
     "AttributeError: 'NoneType' object has no attribute 'create_execution_context'"),
    ("GeekAlexis/FastMOT#127", "CD4",
     "[TensorRT] ERROR: coreReadArchive.cpp (41) - Serialization Error in verifyHeader: 0 (Version tag does not match. "
     "Note: Current Version: 96, Serialized Engine Version: 97)"),
    ("mingj2021/segment-anything-tensorrt#2", "CD4",
     "4: [runtime.cpp::nvinfer1::Runtime::deserializeCudaEngine::50] Error Code 4: Internal Error (Engine deserialization "
     "failed.)"),
    # PTX from a newer compiler than the driver
    ("ComputationalRadiationPhysics/cuda_memtest#31", "CD1",
     "[05/23/2021 18:30:06][computer][0]:ERROR: CUDA error: the provided PTX was compiled with an unsupported toolchain., "
     "line 148, file /var/tmp/pamac-build-user/cuda_memtest/src/cuda_memtest/cuda_memtest.cu"),
    ("wilicc/gpu-burn#145", "CD1",
     "Couldn't init a GPU test: Error in load module (gpu_burn-drv.cpp:243): the provided PTX was compiled with an "
     "unsupported toolchain."),
    ("mit-han-lab/inter-operator-scheduler#4", "CD1",
     "Cuda failure: 222 the provided PTX was compiled with an unsupported toolchain.\n"
     "/home/ubuntu/ios/src/ios/ios_runtime.cu:1332\nAborting..."),
    # cuFFT without kernels for the GPU (PyTorch cu116/cu117 on RTX 40xx)
    ("microsoft/NOTSOFAR1-Challenge#40", "CD4", "RuntimeError: cuFFT error: CUFFT_INTERNAL_ERROR"),
    ("haoheliu/AudioLDM-training-finetuning#54", "CD4",
     "RuntimeError: cuFFT error: CUFFT_INTERNAL_ERROR (An issue related to RTX4090)"),
    # cuBLAS rejecting a plain GEMM: two CUDA releases' libraries mixed (maintainer: multiple CUDA versions installed)
    ("bitsandbytes-foundation/bitsandbytes#205", "CD2",
     "RuntimeError: CUDA error: CUBLAS_STATUS_INVALID_VALUE when calling `cublasGemmEx( handle, opa, opb, m, n, k, "
     "&falpha, a, CUDA_R_16F, lda, b, CUDA_R_16F, ldb, &fbeta, c, CUDA_R_16F, ldc, CUDA_R_32F, CUBLAS_GEMM_DFALT_TENSOR_OP)`"),
    # Java engines without a build for this CUDA
    ("deepjavalibrary/djl#3617", "CD4", "ai.djl.pytorch.jni.LibUtils   : No matching cuda flavor for win-x86_64 found: cu126."),
    ("qupath/qupath-extension-djl#46 (log)", "CD4", "    No matching cuda flavor for win-x86_64 found: cu065"),
    # builds without GPU support, in each framework's words (CD406)
    ("apache/mxnet#3739", "CD4",
     "mxnet.base.MXNetError: [11:28:30] src/storage/storage.cc:78: Compile with USE_CUDA=1 to enable GPU usage"),
    ("apache/mxnet#260", "CD4",
     "mxnet.base.MXNetError: [16:53:11] src/storage/storage.cc:43: Please compile with CUDA enabled"),
    ("apache/mxnet#1694", "CD4",
     "[12:31:43] /home/piggy/mxnet/dmlc-core/include/dmlc/logging.h:241: [12:31:43] src/resource.cc:70: GPU is not enabled"),
    ("bitsandbytes-foundation/bitsandbytes#719", "CD4",
     "bin E:\\Anaconda\\envs\\llama_etuning\\lib\\site-packages\\bitsandbytes\\libbitsandbytes_cpu.dll\n"
     "E:\\Anaconda\\envs\\llama_etuning\\lib\\site-packages\\bitsandbytes\\cextension.py:34: UserWarning: The installed "
     "version of bitsandbytes was compiled without GPU support. 8-bit optimizers, 8-bit multiplication, and GPU "
     "quantization are unavailable."),
    ("opencv/opencv#15858", "CD4",
     "dnn.cpp (1314) cv::dnn::dnn4_v20191024::Net::Impl::setUpNet DNN module was not built with CUDA backend; switching to CPU"),
    ("marco-ardi/Telegram-Image-Upscaler-Bot#1", "CD4",
     "[ WARN:0@72.901] global /io/opencv/modules/dnn/src/net_impl.cpp (179) setUpNet DNN module was not built with CUDA "
     "backend; switching to CPU"),
    ("PaddlePaddle/Paddle#25866", "CD4",
     '    "Not compiled with CUDA"\nAssertionError: Not compiled with CUDA'),
    ("PaddlePaddle/ERNIE#69", "CD4",
     "paddle.fluid.core.EnforceNotMet: Cannot use CUDAPlace in CPU only version at [/paddle/paddle/fluid/pybind/pybind.cc:731]"),
    ("baidu/Senta#69", "CD4",
     "Cannot use GPU because you have installed CPU version PaddlePaddle.\nIf you want to use GPU, please try to install "
     "GPU version PaddlePaddle by: pip install paddlepaddle-gpu"),
    ("Naozumi520/g2pW-Cantonese#1", "CD4",
     "UserWarning: Specified provider 'CUDAExecutionProvider' is not in available provider names.Available providers: "
     "'AzureExecutionProvider, CPUExecutionProvider'"),
    ("LaurentMazare/tch-rs#177", "CD4",
     "thread 'main' panicked at 'called `Result::unwrap()` on an `Err` value: TorchError { c_error: \"Cannot initialize "
     "CUDA without ATen_cuda library. PyTorch splits its backend into two shared libraries: a CPU library and a CUDA "
     "library"),
    # the CUDA compilers' own words: the toolkit or NVRTC is older than the GPU (CD206), not a framework build (CD404)
    ("CMU-Perceptual-Computing-Lab/openpose#2053", "CD2",
     "[  6%] Building NVCC (Device) object src/caffe/CMakeFiles/cuda_compile_1.dir/layers/cuda_compile_1_generated_batch_norm_layer.cu.o\n"
     "nvcc fatal   : Unsupported gpu architecture 'compute_86'"),
    ("GeekAlexis/FastMOT#264", "CD2",
     "nvcc -ccbin g++ -I\"/usr/local/cuda/include\" -gencode arch=compute_86,code=[sm_86,compute_86] -Xcompiler -fPIC -c "
     "-o yolo_layer.o yolo_layer.cu\nnvcc fatal   : Unsupported gpu architecture 'compute_86'\nMakefile:37: recipe for "
     "target 'yolo_layer.o' failed"),
    ("YINYIPENG-EN/handpose_and_yolo#1", "CD2",
     "RuntimeError: nvrtc: error: invalid value for --gpu-architecture (-arch)"),
    ("PRBonn/MaskPLS#18", "CD2",
     "RuntimeError: nvrtc: error: invalid value for --gpu-architecture (-arch)\n\nnvrtc compilation failed: \n\n"
     "#define NAN __int_as_float(0x7fffffff)"),
    ("inducer/pycuda#440", "CD2",
     "pycuda.driver.CompileError: nvcc compilation of C:\\Users\\mypath\\AppData\\Local\\Temp\\tmpy1bccsgl\\kernel.cu "
     "failed\n[command: nvcc --cubin -arch sm_89 -m64 kernel.cu]\n[stdout:\nnvcc fatal   : Value 'sm_89' is not "
     "defined for option 'gpu-architecture'"),
    ("AccelerateHS/accelerate#540", "CD2",
     "ptxas - -o /home/handdara/.cache/accelerate/sm89/rel/morp8b775bb9.sass -arch=sm_89 (exit 255)\nptxas fatal   : "
     "Value 'sm_89' is not defined for option 'gpu-name'"),
    ("traveller59/second.pytorch#42", "CD2",
     "nvcc -std=c++11 -c -o ../cc/nms/nms_kernel.cu.o ../cc/nms/nms_kernel.cu.cc -I/usr/local/cuda/include -x cu "
     "-Xcompiler -fPIC -arch=sm_75 --expt-relaxed-constexpr\n\nnvcc fatal : Value 'sm_75' is not defined for option "
     "'gpu-architecture'"),
    # other runtimes loading the driver (CD1)
    ("NVIDIA/cudf#13388", "CD1",
     "numba.cuda.cudadrv.error.CudaSupportError: Error at driver init: Call to cuInit results in CUDA_ERROR_NO_DEVICE (100)"),
    ("ContinuumIO/numbapro-examples#10", "CD1",
     "CudaSupportError: Error at driver init: \n[3] Call to cuInit results in CUDA_ERROR_NOT_INITIALIZED:"),
    ("numba/numba#8395", "CD1",
     "Warning (cuda): CUDA device initialisation problem. Message:Error at driver init: Call to cuInit results in "
     "UNKNOWN_CUDA_ERROR (-1)\nException class: <class 'numba.cuda.cudadrv.error.CudaSupportError'>"),
    ("microsoft/WSL#11229", "CD1", "ldconfig: /usr/lib/wsl/lib/libcuda.so.1 is not a symbolic link"),
    ("NVIDIA/k8s-device-plugin#1371", "CD1",
     "W0819 07:02:54.757556       1 rm.go:109] NVML not detected: could not load NVML library: libnvidia-ml.so.1: "
     "cannot open shared object file: No such file or directory"),
    ("NVIDIA/k8s-device-plugin#23", "CD1", "loading NVML\nFailed to start nvml with error:  could not load NVML library"),
    ("JuliaGPU/CUDA.jl#415", "CD1",
     "┌ Error: Could not initialize CUDA\n│   exception =\n│    could not load library \"libcuda\"\n│    libcuda.so: "
     "cannot open shared object file: No such file or directory"),
    ("GenieFramework/Stipple.jl#191", "CD1",
     "┌ Debug: No system CUDA driver found\n└ @ CUDA_Driver_jll ~/.julia/packages/CUDA_Driver_jll/9E4Mc/src/wrappers/"
     "x86_64-linux-gnu.jl:54\nERROR: LoadError: UndefVarError: libcuda not defined"),
    # version checks and loaders of older frameworks
    ("apache/mxnet#21179 (log quoted in a public write-up)", "CD3",  # the cuDNN loaded is another release
     "[08:32:10] ../src/base.cc:80: cuDNN lib mismatch: linked-against version 8200 != compiled-against version 8100.  "
     "Set MXNET_CUDNN_LIB_CHECKING=0 to quiet this warning."),
    ("yajiedesign/mxnet#5", "CD3",
     "python.exe - System Error\nThe program can't start because cudnn64_5.dll is missing from your computer. Try "
     "re-installing the program to fix this problem."),
    ("apache/mxnet#7567", "CD3",
     "    self._handle = _dlopen(self._name, mode)\nOSError: libcudnn.so.5: cannot open shared object file: No such file or directory"),
    # cuDNN statuses as other languages' wrappers spell them
    ("pluskid/Mocha.jl#57", "CD3",
     "16-Mar 23:11:13:INFO:root:Initializing CuDNN backend...\nERROR: Arch mismatch\n in create at "
     "/home/b/.julia/v0.3/Mocha/src/cuda/cudnn.jl:43\n in init at /home/b/.julia/v0.3/Mocha/src/cuda/backend.jl:139"),
    ("hannes-brt/cudnn-python-wrappers#11", "CD3",
     "  File \"C:\\Anaconda\\lib\\site-packages\\libcudnn.py\", line 246, in cudnnCheckStatus\n    raise "
     "cudnnExceptions[status]\nlibcudnn.cudnnStatusArchMismatch"),
    # a check macro's comparison, the status as a number only
    ("HsinYingLee/OPN#2", "CD3",
     "F1011 13:25:12.899116  7866 cudnn.hpp:122] Check failed: status == CUDNN_STATUS_SUCCESS (3 vs. 0)\n*** Check "
     "failure stack trace: ***\n    @     0x7f0158b6c8f3  caffe::CuDNNConvolutionLayer<>::Reshape()"),
    ("PaddlePaddle/Paddle#1468", "CD1",
     "F0227 21:38:54.077792  2661 hl_cuda_device.cc:566] Check failed: cudaSuccess == cudaStat (0 vs. 38) Cuda Error: "
     "no CUDA-capable device is detected"),
    ("nagadomi/waifu2x#176", "CD3",
     "/home/zhixin/torch/install/share/lua/5.1/cudnn/init.lua:145: Error in CuDNN: CUDNN_STATUS_ARCH_MISMATCH"),
    ("lltcggie/waifu2x-caffe#62", "CD3", "Calling cuDNN failed, cannot find 「cudnn64_5.dll」"),
    ("CorentinJ/Real-Time-Voice-Cloning#231", "CD3",
     "ImportError: Could not find 'cudnn64_7.dll'. TensorFlow requires that this DLL be installed in a directory that "
     "is named in your %PATH% environment variable."),
    # installers that found no build of a CUDA-tagged package (CD520)
    ("apache/mxnet#19599", "CD5",
     "Looking in indexes: https://pypi.tuna.tsinghua.edu.cn/simple/\nERROR: Could not find a version that satisfies the "
     "requirement mxnet-cu111 (from versions: none)\nERROR: No matching distribution found for mxnet-cu111"),
    ("apache/mxnet#6023", "CD5",
     "Collecting mxnet-cu80\n  Could not find a version that satisfies the requirement mxnet-cu80 (from versions: )\n"
     "No matching distribution found for mxnet-cu80"),
    ("apache/mxnet#20336", "CD5", "pip install mxnet-cu112\nERROR: No matching distribution found for mxnet-cu112"),
    ("myshell-ai/OpenVoice#83", "CD5",
     "PackagesNotFoundError: The following packages are not available from current channels:\n\n  - cudatoolkit=11.7\n\n"
     "Current channels:\n\n  - https://conda.anaconda.org/pytorch/win-64"),
    ("nagadit/DeepFaceLab_Linux#28", "CD5",
     "PackagesNotFoundError: The following packages are not available from current channels:\n\n  - cudnn=7.6.5\n"
     "  - cudatoolkit=10.1.243\n\nCurrent channels:\n\n  - https://conda.anaconda.org/main/osx-64"),
    ("JHLew/MoMo#4", "CD5",
     "pip install nvidia-cudnn-cu12==8.9.2.26\nERROR: Could not find a version that satisfies the requirement "
     "nvidia-cudnn-cu12==8.9.2.26 (from versions: 0.0.1.dev5, 8.9.4.25, 8.9.5.29, 8.9.6.50, 8.9.7.29, 9.0.0.312, "
     "9.1.0.70, 9.1.1.17)\nERROR: No matching distribution found for nvidia-cudnn-cu12==8.9.2.26"),
    ("HuangCongQing/Python#14", "CD5", "NoPackagesFoundError: Package missing in current win-64 channels: \n  - cudatoolkit 7.5 2"),
    ("VisoMasterFusion/VisoMaster-Fusion#261", "CD5",
     "  × No solution found when resolving dependencies:\n  ╰─▶ Because torch==2.11.0+cu130 depends on "
     "cuda-toolkit[cublas]==13.0.2 and you require cuda-toolkit==13.2.1, we can conclude\n      that your requirements "
     "and torch==2.11.0+cu130 are incompatible."),
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
    # pip's conflicts between packages that are not the GPU stack (microsoft/vscode#286865)
    ("pip conflicts between non-GPU packages (microsoft/vscode#286865)",
     "ERROR: pip's dependency resolver does not currently take into account all the packages that are installed. This "
     "behaviour is the source of the following dependency conflicts.\nhuggingface-hub 0.34.0 requires "
     "hf-xet<2.0.0,>=1.1.3; platform_machine == \"x86_64\" or platform_machine == \"amd64\" or platform_machine == "
     "\"arm64\" or platform_machine == \"aarch64\", which is not installed.\noutlines 1.2.9 requires genson, which is not "
     "installed."),
    # a GPU package asking for a newer numpy is not a conflict of the GPU stack (MicrosoftDocs/pytorchfundamentals#23)
    ("tensorflow-gpu wants numpy (MicrosoftDocs/pytorchfundamentals#23)",
     "ERROR: tensorflow-gpu 2.8.0 has requirement numpy>=1.20, but you'll have numpy 1.18.5 which is incompatible."),
    # TensorRT's ONNX parser has no importer for a custom operator (onnx/onnx-tensorrt#465: Mish is a custom op)
    ("TensorRT ONNX parser, custom op (onnx/onnx-tensorrt#465)",
     "While parsing node number 2 [Mish -> \"001_convolutional_mish\"]:\nERROR: /home/ashing/onnx-tensorrt/"
     "ModelImporter.cpp:134 In function parseGraph:\n[8] No importer registered for op: Mish"),
    # cuBLAS failing after an index out of bounds in the user's data (EvolvingLMMs-Lab/Otter#218)
    ("cuBLAS after an indexing bug (EvolvingLMMs-Lab/Otter#218)",
     "../aten/src/ATen/native/cuda/IndexKernel.cu:92: operator(): block: [19,0,0], thread: [107,0,0] Assertion `index >= "
     "-sizes[i] && index < sizes[i] && \"index out of bounds\"` failed.\nRuntimeError: CUDA error: "
     "CUBLAS_STATUS_EXECUTION_FAILED when calling `cublasGemmStridedBatchedExFix( handle, opa, opb, m, n, k, "
     "(void*)(&falpha), a, CUDA_R_16BF, lda, stridea, b, CUDA_R_16BF, ldb, strideb, (void*)(&fbeta), c, CUDA_R_16BF, ldc, "
     "stridec, num_batches, CUDA_R_32F, CUBLAS_GEMM_DEFAULT_TENSOR_OP)`"),
    # an embedding fed an index past its size (huggingface/transfer-learning-conv-ai#23: 'This is my mistake')
    ("cuBLAS after an embedding index past its size (huggingface/transfer-learning-conv-ai#23)",
     "cublas runtime error : resource allocation failed at "
     "/opt/conda/conda-bld/pytorch_1556653099582/work/aten/src/THC/THCGeneral.cpp:228"),
    # near the families above, but no problem of the GPU stack: an nvcc flag the host compiler needed
    # (tensor-compiler/taco#301: fixed in taco's command line), a model's shapes (apache/mxnet#15077), a CPU package
    # that has no wheel for this Windows Python (apache/mxnet#11277: 'mxnet hasn't made a wheel for Windows since 2019')
    ("nvcc given a host compiler's flag (tensor-compiler/taco#301)",
     "nvcc fatal   : Unknown option 'fopenmp'\nError at /taco/taco-gpu/taco/src/codegen/module.cpp:154 in compile:\n "
     "Compilation command failed:"),
    ("MXNet shape error (apache/mxnet#15077)",
     "mxnet.base.MXNetError: Shape inconsistent, Provided = [4096,25088], inferred shape=(4096,2048)"),
    ("no wheel of a CPU package for this Python (apache/mxnet#11277)",
     "ERROR: Could not find a version that satisfies the requirement mxnet==1.8.0 (from versions: 0.11.0, 0.12.0, 0.12.1, "
     "1.0.0, 1.0.0.post1, 1.7.0.post1, 1.7.0.post2)\nERROR: No matching distribution found for mxnet==1.8.0"),
]
