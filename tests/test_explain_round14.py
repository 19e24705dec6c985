"""Issue 41, round fourteen (builder e20): classes read by their structure, from threads other than the ones of
benchmarks/explain_eval/cases_9.toml (the development cases, with their URLs): the toolkit's tools named with their
failure verb (nvcc refusing one of its own options or a C++ standard, a program nvcc runs crashing on Windows, XLA
finding no ptxas, Triton's ptxas failing and Triton misreading CUDA 12.8, CMake's identification of the CUDA compiler,
Numba's NVVM), JAX's checks of its CUDA components and of its plugin against jax/jaxlib, builds without the GPU, and
PyTorch's range of capabilities judged against the GPU. Also the reader (an exception printed as its format and
arguments, a URL GitHub's Markdown made a link) and the routing (what failed inside a plugin decides). The same words
outside the GPU stack, or naming no fault, stay unclaimed."""

from __future__ import annotations

import pytest

from cudnn_doctor.commands.explain import explain_text
from cudnn_doctor.explain.message_text import to_text
from tests.test_explain_filled import holes

CASES = [
    # nvcc older than the option an extension build passes (mapillary/inplace_abn#205)
    ("mapillary/inplace_abn#205", "CD208", "nvcc fatal   : Unknown option '-generate-dependencies-with-compile'"),
    # nvcc older than the C++ standard asked (NVIDIA/thrust#1356)
    ("NVIDIA/thrust#1356", "CD208",
     "nvcc -std=c++17 -I libthrust main.cpp src/nectar.cpp -lpthread -o main\n\n"
     "nvcc fatal   : Value 'c++17' is not defined for option 'std'"),
    # XLA finding no ptxas (google/trax#249)
    ("google/trax#249", "CD208",
     "2020-01-19 09:33:13.557530: W external/org_tensorflow/tensorflow/compiler/xla/service/gpu/nvptx_compiler.cc:73] "
     "Can't find ptxas binary in ${CUDA_DIR}/bin.  Will back to the GPU driver for PTX -> sass compilation.  This is OK "
     "so long as you don't see a warning below about an out-of-date driver version."),
    # Triton's ptxas failing on Windows (kijai/ComfyUI-HunyuanVideoWrapper#48)
    ("kijai/ComfyUI-HunyuanVideoWrapper#48", "CD208",
     'File "C:\\ComfyUI_windows_portable\\python_embeded\\Lib\\site-packages\\triton\\backends\\nvidia\\compiler.py", '
     "line 312, in make_cubin\n    raise RuntimeError(f'`ptxas` failed with error code {e.returncode}: \\n{log}')\n"
     "RuntimeError: `ptxas` failed with error code 4294967295:"),
    # Triton misreading CUDA 12.8 (woct0rdho/triton-windows#49)
    ("woct0rdho/triton-windows#49", "CD208",
     "RuntimeError: Triton only support CUDA 10.0 or higher, but got CUDA version: 12.8"),
    # CMake's CUDA compiler identification failing with Ubuntu's nvcc (NVlabs/tiny-cuda-nn#383)
    ("NVlabs/tiny-cuda-nn#383", "CD209",
     "CMake Error at /home/pgnerf23/anaconda3/lib/python3.11/site-packages/cmake/data/share/cmake-3.27/Modules/"
     "CMakeDetermineCompilerId.cmake:753 (message):\n  Compiling the CUDA compiler identification source file\n"
     '  "CMakeCUDACompilerId.cu" failed.\n\n  Compiler: /usr/bin/nvcc\n\n  Build flags:\n\n  Id flags: --keep;--keep-dir;tmp -v'),
    # a program nvcc runs crashing on Windows (owensgroup/GpuBTree#21)
    ("owensgroup/GpuBTree#21", "CD209", "nvcc error   : 'cl.exe' died with status 0xC0000005 (ACCESS_VIOLATION)"),
    # Numba's NVVM listing no architecture (zhangyp15/MonoFlex#52)
    ("zhangyp15/MonoFlex#52", "CD208",
     "numba.cuda.cudadrv.error.NvvmSupportError: No supported GPU compute capabilities found. Please check your "
     "cudatoolkit version matches your CUDA version."),
    # JAX's version check: a CUDA library older than jaxlib's build (jax-ml/jax#19121), the CUDA library failing
    # (conda-forge/jaxlib-feedstock#285)
    ("jax-ml/jax#19121", "CD203",
     "CUDA backend failed to initialize: Found cuBLAS version 120103, but JAX was built against version 120205, which "
     "is newer. The copy of cuBLAS that is installed must be at least as new as the version against which JAX was "
     "built. (Set TF_CPP_MIN_LOG_LEVEL=0 and rerun for more info.)"),
    ("conda-forge/jaxlib-feedstock#285", "CD203",
     "RuntimeError: Unable to use CUDA because of the following issues with CUDA components:\nUnable to load cuFFT. Is "
     "it installed?\nTraceback (most recent call last):\n  File \"/home/fferretti-iit.local/miniforge3/envs/jaxtest/lib/"
     "python3.12/site-packages/jax/_src/xla_bridge.py\", line 339, in _version_check\n    version = get_version()\n"
     "RuntimeError: jaxlib/cuda/versions_helpers.cc:54: operation cufftGetVersion(&version) failed: cuFFT internal error"),
    # the CUDA plugin and jax/jaxlib of different releases (jax-ml/jax#24901)
    ("jax-ml/jax#24901", "CD521",
     "RuntimeError: Unable to initialize backend 'cuda': INVALID_ARGUMENT: Mismatched PJRT plugin PJRT API version "
     "(0.54) and framework PJRT API version 0.51). (you may need to uninstall the failing plugin package, or set "
     "JAX_PLATFORMS=cpu to skip this backend.)"),
    # a build without the GPU part (OpenNMT/CTranslate2#1076, lightgbm-org/LightGBM#5928)
    ("OpenNMT/CTranslate2#1076", "CD406",
     "Conv1D on GPU currently requires the cuDNN library which is not integrated in this build"),
    ("lightgbm-org/LightGBM#5928", "CD406",
     "LightGBMError: GPU Tree Learner was not enabled in this build.\nPlease recompile with CMake option -DUSE_GPU=1"),
    # LightGBM's imperative to rebuild with a CMake option (lightgbm-org/LightGBM#6205, the development case
    # r13-lightgbm-cudap-typo: the option misspelt, still a CMake definition of the GPU build)
    ("lightgbm-org/LightGBM#6205", "CD406", '"Please recompile with CMake option -DUSE_CUDAP=1"'),
    # newer cuDNN frontends' words for no plan (YanWenKun/ComfyUI-Docker#140, the development case
    # r13-comfyui-docker-cu130-no-valid-plans)
    ("YanWenKun/ComfyUI-Docker#140", "CD316",
     "KSamplerAdvanced - cuDNN Frontend error: [cudnn_frontend] Error: No valid execution plans built."),
    # xformers' Hopper-only FlashAttention-3 on another GPU (kijai/ComfyUI-DepthAnythingV2#29)
    ("kijai/ComfyUI-DepthAnythingV2#29", "CD404",
     "using MLP layer as FFN\nCUDA error (C:/a/xformers/xformers/third_party/flash-attention/hopper\\"
     "flash_fwd_launch_template.h:188): invalid argument"),
    # Triton without any wheel for this platform (Drexubery/ViewCrafter#7, a Windows install of its requirements)
    ("Drexubery/ViewCrafter#7", "CD520",
     "ERROR: Could not find a version that satisfies the requirement triton (from versions: none)\n"
     "ERROR: No matching distribution found for triton"),
    # PyTorch's range of capabilities, the GPU below it (Kaggle/docker-python#1546: a P100 under a cu128 wheel; the
    # development case r13-kaggle-p100-cu128-sm60 of benchmarks/held_out/round13, the one real message of the class)
    ("Kaggle/docker-python#1546", "CD404",
     "/usr/local/lib/python3.12/dist-packages/torch/cuda/__init__.py:435: UserWarning: \n    Found GPU0 Tesla "
     "P100-PCIE-16GB which is of cuda capability 6.0.\n    Minimum and Maximum cuda capability supported by this version "
     "of PyTorch is\n    (7.0) - (12.0)\n    \n  queued_call()"),
]


@pytest.mark.parametrize(("source", "code", "message"), CASES, ids=[case[0] for case in CASES])
def test_the_class_is_answered_with_its_code_and_every_value_filled(source: str, code: str, message: str) -> None:
    data = explain_text(message, None)
    assert data["exit_code"] == 0, source
    first = data["matches"][0]
    assert first["code"] == code, (source, [m["code"] for m in data["matches"]])
    assert holes(first) == [], (source, first)


@pytest.mark.parametrize(("index", "value"), [
    (0, "generate-dependencies-with-compile"), (1, "c++17"), (3, "4294967295"), (4, "12.8"), (6, "cl.exe"),
    (9, "cufftGetVersion"),
])
def test_the_value_in_the_message_reaches_the_answer(index: int, value: str) -> None:
    first = explain_text(CASES[index][2], None)["matches"][0]
    assert value in f"{first['cause']} {first['fix']}", (CASES[index][0], first["cause"])


def test_what_failed_inside_the_plugin_decides() -> None:
    # PlasmaControl/DESC#1996: JAX's CUDA plugin failing on cuInit's CUDA_ERROR_NO_DEVICE is the device's (CD1), the
    # plugin's own answer after it
    message = ("ERROR:2025-10-29 22:18:42,187:jax._src.xla_bridge:444: Jax plugin configuration error: Exception when "
               "calling jax_plugins.xla_cuda12.initialize()\nTraceback (most recent call last):\n  File \"/home/xiao/"
               "miniconda3/envs/desc/lib/python3.12/site-packages/jax_plugins/xla_cuda12/__init__.py\", line 281, in "
               "_check_cuda_versions\n    local_device_count = cuda_versions.cuda_device_count()\nRuntimeError: "
               "jaxlib/cuda/versions_helpers.cc:113: operation cuInit(0) failed: CUDA_ERROR_NO_DEVICE")
    codes = [m["code"] for m in explain_text(message, None)["matches"]]
    assert codes[0] == "CD102" and "CD409" in codes[1:], codes
    # the plugin's failure alone (no status under it) stays the plugin's
    alone = "ERROR:2025-05-28 18:06:26,600:jax._src.xla_bridge:444: Jax plugin configuration error: Exception when " \
            "calling jax_plugins.xla_cuda12.initialize()"
    assert explain_text(alone, None)["matches"][0]["code"] == "CD409"


def test_the_plugin_calling_an_api_its_jax_lacks_is_two_releases() -> None:
    # prs-eth/thera#7 (importlib's frames cut): the plugin's import of a name this jax lacks
    message = ("Jax plugin configuration error: Plugin module %s could not be loaded\nTraceback (most recent call last):\n"
               "  File \"/usr/local/lib/python3.11/dist-packages/jax_plugins/xla_cuda12/__init__.py\", line 21, in "
               "<module>\n    from jax._src.lib import triton\nImportError: cannot import name 'triton' from "
               "'jax._src.lib' (/usr/local/lib/python3.11/dist-packages/jax/_src/lib/__init__.py)")
    assert explain_text(message, None)["matches"][0]["code"] == "CD521"


def test_an_exception_printed_as_its_format_and_arguments_is_read_as_the_message() -> None:
    # torch.utils.cpp_extension raises RuntimeError(CUDA_MISMATCH_MESSAGE, a, b) and pip's build output prints the tuple
    # (nerfstudio-project/gsplat#904, the development case r13-gsplat-build-isolation-torch-cu128)
    tuple_form = ("      RuntimeError: ('The detected CUDA version (%s) mismatches the version that was used to "
                  "compilePyTorch (%s). Please make sure to use the same CUDA versions.', '11.8', '12.8')")
    assert "The detected CUDA version (11.8) mismatches the version that was used to compilePyTorch (12.8)." \
        in to_text(tuple_form)
    first = explain_text(tuple_form, None)["matches"][0]
    assert first["code"].startswith("CD4") and "11.8" in first["cause"] and "12.8" in first["cause"]
    # a tuple whose count of %s is not its count of arguments is left as it is
    assert to_text("('a %s b %s', 'x')") == "('a %s b %s', 'x')"


def test_a_url_markdown_made_a_link_is_read_as_printed() -> None:
    # ThalesGroup/scio#9 as GitHub rendered it (the development case r13-scio-uv-lowest-torch-win)
    linked = ("error: Distribution `torch==2.5.0 @ registry+[https://pypi.org/simple`](https://pypi.org/simple%60) can't "
              "be installed because it doesn't have a source distribution or wheel for the current platform")
    assert "registry+https://pypi.org/simple` can't" in to_text(linked)
    assert explain_text(linked, None)["matches"][0]["code"] == "CD520"


@pytest.mark.parametrize("message", [
    # a host compiler's flag handed to nvcc: the project's build line (NVIDIA/l2fwd-nv#2), and CMake's gnu++ spelling
    # (openPMD/openPMD-api#1102)
    "[ 27%] Building CUDA object CMakeFiles/l2fwdnv.dir/src/kernel.cu.o\nnvcc fatal   : Unknown option '-march=native'",
    "nvcc fatal   : Value 'gnu++17' is not defined for option 'std'",
    # CMake identifying a C++ compiler that is not installed (taosdata/TDengine#46)
    'Compiling the CXX compiler identification source file "CMakeCXXCompilerId.cpp" failed.\nCompiler: '
    "CMAKE_CXX_COMPILER-NOTFOUND \nBuild flags: \nId flags:  \n\nThe output was:\nNo such file or directory",
    # another vendor's PJRT plugin (intel/intel-extension-for-openxla#18)
    "jaxlib.xla_extension.XlaRuntimeError: INVALID_ARGUMENT: Mismatched PJRT plugin PJRT API version (0.2) and "
    "framework PJRT API version 0.38).",
    # a GPU inside the build's range by binary compatibility (eugr/spark-vllm-docker#15: "you can safely ignore it")
    "Found GPU0 NVIDIA GB10 which is of cuda capability 12.1. Minimum and Maximum cuda capability supported by this "
    "version of PyTorch is (8.0) - (12.0)",
    # FlashAttention-3 called directly on a Hopper GPU, its own "invalid argument" (Dao-AILab/flash-attention#1208): no
    # xformers dispatch, nothing of the installation named
    "CUDA error (flash-attention/hopper/flash_fwd_launch_template.h:111): invalid argument",
    # a host compiler crashing outside nvcc (zrax/pycdc#216)
    "[main] cc1plus 1002 (0) exception: code 0xC0000005 at 0x419603\n"
    "[main] cc1plus 1002 (0) exception: ax 0xA bx 0x1 cx 0x0 dx 0x61061104\n"
    "[main] cc1plus 1002 (0) exception: si 0x10F02E10 di 0x0 bp 0x45DF1B8 sp 0x45DF19C\n"
    "[main] cc1plus 1002 (0) exception: exception is: STATUS_ACCESS_VIOLATION",
])
def test_the_same_words_outside_the_gpu_stack_stay_unclaimed(message: str) -> None:
    assert explain_text(message, None)["exit_code"] == 1, explain_text(message, None)["matches"][:1]


def test_the_rewrites_of_a_crafted_input_are_bounded() -> None:
    # a hostile input of many tuples or links costs a bounded number of rewrites (REWRITES), the rest read as they are
    from cudnn_doctor.explain.message_text import REWRITES

    text = to_text("('a %s', 'b')\n" * (REWRITES + 44))
    assert text.count("a b") == REWRITES and text.count("('a %s', 'b')") == 44
    links = to_text("[x](http://a) " * (REWRITES + 3))
    assert links.count("[x](http://a)") == 3


@pytest.mark.parametrize("message", [
    "RuntimeError: cuDNN Frontend error: No valid engine configs for Matmul_MUL_Reduction_SUB_EXP_Reduction_LOG_ADD_"
    "DIV_Matmul_",
    "[E:onnxruntime:Default, cudnn_fe_call.cc:33 CudaErrString<cudnn_frontend::error_object>] No valid engine configs "
    "for ConvFwd_",
])
def test_the_frontends_heuristics_finding_no_engine_is_the_no_plan_class(message: str) -> None:
    """cuDNN's frontend refusing a graph one step before building plans (its heuristics return no engine
    configuration: 'No valid engine configs for ' + the graph's tag, cudnn-frontend plans.h) is the class of 'No valid
    execution plans built' (CD316), in PyTorch's SDPA and ONNX Runtime's convolutions alike."""
    first = explain_text(message, None)["matches"][0]
    assert first["code"] == "CD316", first


def test_a_symbol_of_torch_distributed_an_extension_lacks_is_another_torch_build() -> None:
    """An extension built against another PyTorch's torch.distributed (namespace c10d, its headers installed for
    extensions since 1.13) fails to load with a c10d symbol undefined, as with c10's (CD410, the owner named)."""
    message = ("ImportError: /opt/pyenv/lib/python3.12/site-packages/nvfuser/_C.cpython-312-x86_64-linux-gnu.so: "
               "undefined symbol: _ZN4c10d8TCPStoreC1ESsRKNS_15TCPStoreOptionsE")
    first = explain_text(message, None)["matches"][0]
    assert first["code"] == "CD410" and "c10d" in first["cause"], first
