"""Issue 41, round six, second pass: the part of the stack each cause lives in, and more stacks' own words.

A framework built against one cuDNN that loads another names cuDNN's family (the cuDNN on the path is what the
framework's own words tell the user to change); Triton's LLVM that does not know the GPU is a compiler older than the
GPU, as its ptxas is; cuDNN's own allocation failures are cuDNN's; CUDA_ERROR_NOT_FOUND at initialisation is the
driver's. And OpenCV's DNN module, RAPIDS (cuda-python, NVIDIA's placeholder packages), llama.cpp's buffers and
Apptainer in their words; near misses (another vendor's GPU, a CPU buffer, OpenCV's and NumPy's own errors) are not
claimed. Every message is quoted from the public thread named beside it."""

from __future__ import annotations

import pytest

from cudnn_doctor.commands.explain import explain_text

# (source, the first answer's code, the message as the thread prints it)
CASES = [
    # a cuDNN of another release than the framework's build: cuDNN's family (CD321)
    ("tensorflow/tensorflow#60913", "CD321", "E0000 00:00:1738697930.202924    7665 cuda_dnn.cc:522] Loaded runtime "
     "CuDNN library: 9.1.0 but source was compiled with: 9.3.0.  CuDNN library needs to have matching major version "
     "and equal or higher minor version. If using a binary install, upgrade your CuDNN library."),
    ("endernewton/tf-faster-rcnn#436", "CD321", "E tensorflow/stream_executor/cuda/cuda_dnn.cc:378] Loaded runtime "
     "CuDNN library: 7201 (compatibility version 7200) but source was compiled with 7004 (compatibility version 7000)."),
    ("carpedm20/DCGAN-tensorflow#242", "CD321", "E tensorflow/stream_executor/cuda/cuda_dnn.cc:352] Loaded runtime "
     "CuDNN library: 5005 (compatibility version 5000) but source was compiled with 5110 (compatibility version 5100)."),
    ("VisionLearningGroup/DA_Detection#19", "CD321",
     "RuntimeError: cuDNN version mismatch: PyTorch was compiled against 7102 but linked against 7600"),
    # Triton's bundled LLVM older than the GPU: the toolkit's family (CD206), as its ptxas
    ("triton-lang/triton#5950", "CD206", "'sm_120' is not a recognized processor for this target (ignoring processor)"),
    ("RLinf/RLinf#92", "CD206", "(SGLangWorker pid=38141) 'sm_120' is not a recognized processor for this target "
     "(ignoring processor)"),
    # XLA's and LLVM's words for a compiler older than the GPU: the toolkit's family
    ("openxla/xla#5932", "CD206", "W external/xla/xla/stream_executor/gpu/redzone_allocator.cc:322] UNIMPLEMENTED: "
     "ptxas ptxas too old. Falling back to the driver to compile.\nRelying on driver to perform ptx compilation."),
    ("openxla/xla#47978", "CD206", "LLVM ERROR: ptx87 is required for target sm_120"),
    # cuDNN's own allocation: cuDNN's family
    ("microsoft/CNTK#220", "CD316", "cuDNN failure 2: CUDNN_STATUS_ALLOC_FAILED ; GPU=0 ; hostname=PTNUWCL5099642 ; "
     "expr=finder(calgo, algoPerf)"),
    ("torch/torch7#780", "CD316", "/home/usrname/torch/install/share/lua/5.1/cudnn/init.lua:118: Error in CuDNN: "
     "CUDNN_STATUS_ALLOC_FAILED (cudnnFindConvolutionForwardAlgorithm)"),
    # the handle could not allocate: the memory's (round thirteen, e19: explain/routing.py's memory_first)
    ("kbardool/Keras-frcnn#97", "CD109", "Could not create cudnn handle: CUDNN_STATUS_ALLOC_FAILED"),
    # CUDA_ERROR_NOT_FOUND (500) while CUDA initialises: the driver's
    ("YanWenKun/ComfyUI-Docker#74", "CD110", "RuntimeError: Unexpected error from cudaGetDeviceCount(). Did you run some "
     "cuda functions before calling NumCudaDevices() that might have already set an error? Error 500: named symbol not "
     "found"),
    ("ollama/ollama#6961", "CD110", "cuda driver library init failure: 500"),
    # OpenCV's DNN module asked for CUDA on its own backend
    ("opencv/opencv#16439", "CD406", "cv2.error: OpenCV(4.2.0) /home/dlinano/Downloads/opencv/modules/dnn/src/dnn.cpp:"
     "1304: error: (-215:Assertion failed) preferableBackend != DNN_BACKEND_OPENCV || preferableTarget == "
     "DNN_TARGET_CPU || preferableTarget == DNN_TARGET_OPENCL || preferableTarget == DNN_TARGET_OPENCL_FP16 in "
     "function 'setUpNet'"),
    # RAPIDS: modules built against another cuda-python; NVIDIA's placeholder source packages
    ("rapidsai/rmm#1068", "CD521", "C function cuda.ccudart.cudaStreamSynchronize has wrong signature (expected "
     "__pyx_t_4cuda_7ccudart_cudaError_t (__pyx_t_4cuda_7ccudart_cudaStream_t), got cudaError_t (cudaStream_t))"),
    ("NVIDIA/cudf#14532", "CD522", '        File "/tmp/pip-install-3l8mb_ei/cudf-cu11_88ea668e9bea44d1a0a1d01a7a305d3f/'
     'setup.py", line 137, in <module>\n          raise RuntimeError(open("ERROR.txt", "r").read())\n      '
     "RuntimeError:"),
    # llama.cpp's buffers on the GPU
    ("ggml-org/llama.cpp#20431", "CD109", "alloc_tensor_range: failed to allocate CUDA0 buffer of size 151851674624\n"
     "llama_model_load: error loading model: unable to allocate CUDA0 buffer"),
    ("ikawrakow/ik_llama.cpp#749", "CD109", "ggml_gallocr_reserve_n: failed to allocate CUDA0 buffer of size "
     "292926534144"),
    # a build without cuDNN's headers: cuDNN's family
    ("AlexeyAB/darknet#5141", "CD301", "include/darknet.h:46:10: fatal error: cudnn.h: No such file or directory\n"
     " #include <cudnn.h>"),
    ("pjreddie/darknet#2356", "CD301", "/usr/local/cuda/include/cudnn.h:60:10: fatal error: cudnn_version.h: No such "
     "file or directory"),
    ("CMU-Perceptual-Computing-Lab/openpose#50", "CD301", "fatal error C1083: Cannot open file included: “cudnn.h”: "
     "No such file or directory"),
    ("BVLC/caffe#1572", "CD301", "./include/caffe/util/cudnn.hpp:5:10: fatal error: 'cudnn.h' file not found"),
    # PyCUDA's words before NVIDIA's short text: cuInit failing in the driver
    ("inducer/pycuda#276", "CD110", "cuda.init()\npycuda._driver.Error: cuInit failed: unknown error"),
    ("ratt-ru/PyMORESANE#22", "CD110", '  File "/usr/lib/python2.7/dist-packages/pycuda/autoinit.py", line 5, in '
     "<module>\n    cuda.init()\nError: cuInit failed: unknown error"),
    # Apptainer/Singularity --nv on a host whose driver files it cannot find
    ("apptainer/singularity#5837", "CD108", "INFO:    Could not find any nv files on this host!"),
    ("sylabs/singularity#2805", "CD108", "INFO: Starting Singularity container from image robotour_arm64.simg.\n"
     "INFO: Could not find any nv files on this host!"),
]

UNRELATED = [
    # a buffer in the computer's memory, not the GPU's
    ("ollama/ollama#12634 (CPU buffer)", "ggml_backend_cpu_buffer_type_alloc_buffer: failed to allocate buffer of size "
     "437944320\nalloc_tensor_range: failed to allocate CPU buffer of size 437944320\nllama_model_load: error loading "
     "model: unable to allocate CPU buffer"),
    # another vendor's GPU
    ("ROCm/TheRock#1054", "torch.OutOfMemoryError: HIP out of memory. Tried to allocate 16.00 GiB. GPU 0 has a total "
     "capacity of 15.24 GiB of which 15.09 GiB is free. Of the allocated memory 0 bytes is allocated by PyTorch, and 0 "
     "bytes is reserved by PyTorch but unallocated."),
    ("pytorch/pytorch MPSAllocator.mm", "RuntimeError: MPS backend out of memory (MPS allocated: 8.00 GB, other "
     "allocations: 1.00 GB, max allowed: 9.07 GB). Tried to allocate 256.00 MB on private pool."),
    # OpenCV's and NumPy's own errors
    ("opencv/opencv imgproc resize.cpp", "cv2.error: OpenCV(4.8.0) /io/opencv/modules/imgproc/src/resize.cpp:4062: "
     "error: (-215:Assertion failed) !ssize.empty() in function 'resize'"),
    ("numpy binary incompatibility", "ValueError: numpy.ndarray size changed, may indicate binary incompatibility. "
     "Expected 96 from C header, got 88 from PyObject"),
]


@pytest.mark.parametrize(("source", "code", "message"), CASES, ids=[row[0] for row in CASES])
def test_the_cause_is_in_its_part_of_the_stack(source: str, code: str, message: str) -> None:
    matches = explain_text(message, None)["matches"]
    assert matches and matches[0]["code"] == code, (source, [(m["code"], m["id"]) for m in matches])
    assert matches[0]["source"] and matches[0]["fix"]


@pytest.mark.parametrize(("source", "message"), UNRELATED, ids=[row[0] for row in UNRELATED])
def test_a_near_miss_is_not_claimed(source: str, message: str) -> None:
    assert explain_text(message, None)["matches"] == [], source


def test_the_cudnn_pair_reaches_the_answer() -> None:
    """TensorFlow's pair: the release it was built with is in the fix, the one loaded in the cause."""
    first = explain_text(CASES[0][2], None)["matches"][0]
    assert "9.3.0" in first["fix"] and "9.1.0" in first["cause"] + first["fix"]


def test_a_named_symbol_at_a_kernel_launch_stays_the_builds() -> None:
    """CUDA_ERROR_NOT_FOUND when a kernel is launched (no initialisation in sight) is a binary without that kernel
    for this GPU (compat/status_codes.toml), not the driver's initialisation."""
    first = explain_text("RuntimeError: CUDA error: named symbol not found\nCUDA kernel errors might be asynchronously "
                         "reported at some other API call", None)["matches"][0]
    assert first["code"] == "CD404"


def test_the_llvm_answer_points_at_triton() -> None:
    """Triton's LLVM, even where the message does not name Triton: the fix is a Triton whose LLVM knows the GPU."""
    first = explain_text(CASES[4][2], None)["matches"][0]
    assert "triton" in first["fix"].lower() and "12.0" in first["cause"]


def test_another_vendors_gpu_is_said_aside() -> None:
    aside = explain_text(UNRELATED[1][1], None)["set_aside"]
    assert [row["kind"] for row in aside] == ["other-gpu"]


def test_a_phrase_wrapped_over_two_lines_is_read_across_the_break() -> None:
    """jax-ml/jax#788 as a terminal wrapped it: XLA's out-of-memory words split after 'Out'."""
    wrapped = ("[1] 2019-06-13 01:17:08.886805: E external/org_tensorflow/tensorflow/compiler/xla/python/local_client.cc:"
               "672] Execution of replica 0 failed: Resource exhausted: Out \nof memory while trying to allocate "
               "5520758552 bytes.")
    assert explain_text(wrapped, None)["matches"][0]["code"] == "CD109"
