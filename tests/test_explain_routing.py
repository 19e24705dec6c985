"""Issue 41, round thirteen (e19): the layer of the stack a message's cause is in, where the message names several
(cudnn_doctor/explain/routing.py). Each principle is shown on real messages of several stacks, with their threads.

- the innermost failure decides: cuDNN's "Could not load library A. Error: B: cannot open shared object file" is
  B's layer (the driver's libcuda.so, the toolkit's libnvrtc.so), not cuDNN's; where B is A itself, cuDNN's;
- the framework's own words outrank general phrases: where the facts are only a phrase ("Unable to load CUDA",
  "CUDA wasnt able to be loaded": no library, status or version named), the catalog's entry of the framework that
  printed it names the layer (its build against the CUDA it finds), and the phrase follows; a library named keeps
  its own layer first;
- the memory that ran out outranks the library that reports it: cuDNN's handle failing in a message that says the
  device's memory ran out (CUDNN_STATUS_ALLOC_FAILED, CUDA_ERROR_OUT_OF_MEMORY) is the memory's (CD109), the handle
  after it; the handle alone stays cuDNN's (CD315);
- a package manager's lines name a package's releases, never a build's pair: pip's "Using cached X-11.7.99-...whl"
  then "9.0.0 Requires-Python >=3.11" is no "CUDA 9.0.0 built, 11.7.99 found" (CD410); the resolver's failure
  (CD520) is the answer;
- a quote escaped by what carried the message ("option 'gpu-name\\'", GitHub's Markdown, a Python repr) is read as
  the quote, so ptxas' refusal of an architecture is the toolkit's (CD206), not the framework's build (CD404).
"""

from __future__ import annotations

import pytest

from cudnn_doctor.commands.explain import explain_text

INNERMOST = [
    # cuDNN 8 from pip under nougat on WSL 2: the driver's unversioned libcuda.so is what is missing
    ("facebookresearch/nougat#115", "CD101",
     "  0%|          | 0/1 [00:00<?, ?it/s]Could not load library libcudnn_cnn_infer.so.8. Error: libcuda.so: cannot "
     "open shared object file: No such file or directory\nAborted"),
    # the same under SadTalker, with cuDNN's own second line
    ("OpenTalker/SadTalker#323", "CD101",
     "Could not load library libcudnn_cnn_infer.so.8. Error: libcuda.so: cannot open shared object file: No such file "
     "or directory\nPlease make sure libcudnn_cnn_infer.so.8 is in your library path!"),
    # stable-diffusion-webui's torch: cuDNN 8 JIT-compiles with NVRTC, the toolkit's library
    ("AUTOMATIC1111/stable-diffusion-webui#10230", "CD203",
     "Could not load library libcudnn_cnn_infer.so.8. Error: libnvrtc.so: cannot open shared object file: No such "
     "file or directory"),
]

OUTER_ITSELF = [
    # Whisper-WebUI (faster-whisper): the cuDNN sub-library itself is missing: cuDNN's layer
    ("jhj0517/Whisper-WebUI#294", "CD3",
     "Could not load library libcudnn_ops_infer.so.8. Error: libcudnn_ops_infer.so.8: cannot open shared object "
     "file: No such file or directory\nPlease make sure libcudnn_ops_infer.so.8 is in your library path!"),
]

ESCAPED_QUOTES = [
    # GPUStack on a DGX Spark (GB10), the Markdown escaping the last quote
    ("gpustack/gpustack#4372", "CD206", "ptxas fatal : Value 'sm_121a' is not defined for option 'gpu-name\\'"),
    # the same words unescaped (kijai/ComfyUI-WanVideoWrapper#63, Triton's bundled ptxas on an RTX 50xx)
    ("kijai/ComfyUI-WanVideoWrapper#63", "CD206", "ptxas fatal : Value 'sm_120' is not defined for option 'gpu-name'"),
]


@pytest.mark.parametrize(("source", "code", "message"), INNERMOST, ids=[case[0] for case in INNERMOST])
def test_the_innermost_missing_library_names_the_layer(source: str, code: str, message: str) -> None:
    answer = explain_text(message, None)
    first = answer["matches"][0]
    assert first["code"] == code, (source, [m["code"] for m in answer["matches"]])
    assert first["id"].startswith("cudnn8-"), first["id"]  # the catalog's explanation, with the cause's code


@pytest.mark.parametrize(("source", "family", "message"), OUTER_ITSELF, ids=[case[0] for case in OUTER_ITSELF])
def test_a_library_missing_itself_stays_in_its_own_layer(source: str, family: str, message: str) -> None:
    answer = explain_text(message, None)
    assert answer["matches"][0]["code"].startswith(family), (source, answer["matches"][0])


@pytest.mark.parametrize(("source", "code", "message"), ESCAPED_QUOTES, ids=[case[0] for case in ESCAPED_QUOTES])
def test_an_escaped_quote_reads_as_the_quote(source: str, code: str, message: str) -> None:
    answer = explain_text(message, None)
    assert answer["matches"][0]["code"] == code, (source, [m["code"] for m in answer["matches"]])
    assert answer["facts"]["compute_capabilities"], answer["facts"]


FRAMEWORK_WORDS = [
    # ONNX Runtime's CUDA 11.8 build on a machine with CUDA 12.4 (Windows)
    ("microsoft/onnxruntime#21049", "CD409",
     "EP Error C:\\a\\_work\\1\\s\\onnxruntime\\python\\onnxruntime_pybind_state.cc:866 "
     "onnxruntime::python::CreateExecutionProviderInstance CUDA_PATH is set but CUDA wasnt able to be loaded. Please "
     "install the correct version of CUDA andcuDNN as mentioned in the GPU requirements page  "
     "(https://onnxruntime.ai/docs/execution-providers/CUDA-ExecutionProvider.html#requirements),  make sure they're in "
     "the PATH, and that your GPU is supported.\n when using ['CUDAExecutionProvider']\nFalling back to "
     "['CUDAExecutionProvider', 'CPUExecutionProvider'] and retrying."),
    # jax[cuda11_local] on a CUDA 12 Colab: JAX's backend could not load its CUDA
    ("magenta/mt3#145", "CD407",
     "WARNING:jax._src.xla_bridge:CUDA backend failed to initialize: Unable to load CUDA. (Set TF_CPP_MIN_LOG_LEVEL=0 "
     "and rerun for more info.)"),
]

LIBRARY_NAMED = [
    # ONNX Runtime's provider naming the toolkit library it could not open: the toolkit's layer stays first
    ("PaddlePaddle/PaddleNLP#8195", "CD203",
     "2024-03-27 06:33:23.219728338 [E:onnxruntime:Default, provider_bridge_ort.cc:1548 TryGetProviderInfo_CUDA] "
     "/onnxruntime_src/onnxruntime/core/session/provider_bridge_ort.cc:1209 onnxruntime::Provider& "
     "onnxruntime::ProviderLibrary::Get() [ONNXRuntimeError] : 1 : FAIL : Failed to load library "
     "libonnxruntime_providers_cuda.so with error: libcublasLt.so.11: cannot open shared object file: No such file or "
     "directory\n\n2024-03-27 06:33:23.219759101 [W:onnxruntime:Default, onnxruntime_pybind_state.cc:861 "
     "CreateExecutionProviderInstance] Failed to create CUDAExecutionProvider. Please reference "
     "https://onnxruntime.ai/docs/execution-providers/CUDA-ExecutionProvider.html#requirementsto ensure all "
     "dependencies are met."),
]


@pytest.mark.parametrize(("source", "code", "message"), FRAMEWORK_WORDS, ids=[case[0] for case in FRAMEWORK_WORDS])
def test_the_framework_words_outrank_a_general_phrase(source: str, code: str, message: str) -> None:
    answer = explain_text(message, None)
    codes = [m["code"] for m in answer["matches"]]
    assert codes[0] == code, (source, codes)
    assert "CD203" in codes[1:], codes  # the phrase's reading follows


@pytest.mark.parametrize(("source", "code", "message"), LIBRARY_NAMED, ids=[case[0] for case in LIBRARY_NAMED])
def test_a_named_library_keeps_its_layer_first(source: str, code: str, message: str) -> None:
    answer = explain_text(message, None)
    assert answer["matches"][0]["code"] == code, (source, [m["code"] for m in answer["matches"]])


MEMORY = [
    # Keras (keras-frcnn on TensorFlow): cuDNN's handle could not allocate
    ("kbardool/Keras-frcnn#97", "Could not create cudnn handle: CUDNN_STATUS_ALLOC_FAILED"),
    # DeepLabCut's TensorFlow on Windows, the same words
    ("DeepLabCut/DeepLabCut#981", "Could not create cudnn handle: CUDNN_STATUS_ALLOC_FAILED"),
    # distributed TensorFlow: the handle's INTERNAL_ERROR, the device's CUDA_ERROR_OUT_OF_MEMORY on the same server
    ("tensorflow/tensorflow#2726",
     "\tE tensorflow/stream_executor/cuda/cuda_dnn.cc:289] could not create cudnn handle: CUDNN_STATUS_INTERNAL_ERROR\n"
     "\tE tensorflow/stream_executor/cuda/cuda_dnn.cc:278] could not destroy cudnn handle: CUDNN_STATUS_BAD_PARAM\n"
     "\tW tensorflow/stream_executor/stream.cc:301] attempting to perform DNN operation using StreamExecutor without DNN "
     "support\n"
     "\tE tensorflow/stream_executor/cuda/cuda_driver.cc:932] failed to allocate 11.27G (12103048448 bytes) from device: "
     "CUDA_ERROR_OUT_OF_MEMORY"),
]

HANDLE_ALONE = [
    # Faster-RCNN_TF on TensorFlow 0.12: no word of memory, cuDNN's own layer
    ("smallcorgi/Faster-RCNN_TF#124",
     "E tensorflow/stream_executor/cuda/cuda_dnn.cc:397] could not create cudnn handle: CUDNN_STATUS_INTERNAL_ERROR\n"
     "E tensorflow/stream_executor/cuda/cuda_dnn.cc:364] could not destroy cudnn handle: CUDNN_STATUS_BAD_PARAM\n"
     "F tensorflow/core/kernels/conv_ops.cc:605] Check failed: stream->parent()->GetConvolveAlgorithms(&algorithms)"),
]


@pytest.mark.parametrize(("source", "message"), MEMORY, ids=[case[0] for case in MEMORY])
def test_the_memory_that_ran_out_outranks_the_handle(source: str, message: str) -> None:
    codes = [m["code"] for m in explain_text(message, None)["matches"]]
    assert codes[:2] == ["CD109", "CD315"], (source, codes)


@pytest.mark.parametrize(("source", "message"), HANDLE_ALONE, ids=[case[0] for case in HANDLE_ALONE])
def test_the_handle_alone_stays_cudnn(source: str, message: str) -> None:
    codes = [m["code"] for m in explain_text(message, None)["matches"]]
    assert codes[0] == "CD315" and "CD109" not in codes, (source, codes)


PACKAGE_MANAGER = [
    # pip on Windows: nvidia-cudnn-cu11==8.5.0.96 has no Windows wheel (KG_RAG's requirements)
    ("BaranziniLab/KG_RAG#45",
     "Collecting nvidia-cuda-runtime-cu11==11.7.99\n"
     "  Using cached nvidia_cuda_runtime_cu11-11.7.99-py3-none-win_amd64.whl (991 kB)\n"
     "ERROR: Ignored the following versions that require a different python version: 9.0.0 Requires-Python >=3.11; "
     "9.0.0b1 Requires-Python >=3.11; 9.0.0b2 Requires-Python >=3.11; 9.0.1 Requires-Python >=3.11\n"
     "ERROR: Could not find a version that satisfies the requirement nvidia-cudnn-cu11==8.5.0.96 (from versions: "
     "0.0.1.dev5, 8.9.4.19, 8.9.4.25, 8.9.5.29, 9.0.0.312, 9.1.0.70, 9.1.1.17, 9.2.0.82, 9.2.1.18, 9.3.0.75, "
     "9.4.0.58, 9.5.0.50, 9.5.1.17, 9.6.0.74, 9.7.0.66, 9.7.1.26, 9.8.0.87)\n"
     "ERROR: No matching distribution found for nvidia-cudnn-cu11==8.5.0.96"),
    # pip with PyTorch's index: the pinned torch build is not on it (ChatRWKV on Windows)
    ("BlinkDL/ChatRWKV#99",
     "PS E:\\repo\\ChatRWKV> pip install torch==1.13.1+cu117 torchvision==0.14.1+cu117 torchaudio==0.13.1 "
     "--extra-index-url https://download.pytorch.org/whl/cu117\n"
     "Looking in indexes: https://mirrors.cloud.tencent.com/pypi/simple, https://download.pytorch.org/whl/cu117\n"
     "ERROR: Could not find a version that satisfies the requirement torch==1.13.1+cu117 (from versions: 2.0.0, "
     "2.0.0+cu117)\nERROR: No matching distribution found for torch==1.13.1+cu117"),
]


@pytest.mark.parametrize(("source", "message"), PACKAGE_MANAGER, ids=[case[0] for case in PACKAGE_MANAGER])
def test_a_package_managers_versions_are_no_build_pair(source: str, message: str) -> None:
    answer = explain_text(message, None)
    assert answer["facts"]["versions"] == [], (source, answer["facts"]["versions"])
    assert answer["matches"][0]["code"] == "CD520", (source, [m["code"] for m in answer["matches"]])
