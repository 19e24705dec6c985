"""Issue 41, round ten: classes read from a message's structure and judged against compat/ data.

A compiler's diagnostic read for the names it gives (EDG/nvcc, GCC, Clang) and judged against what CUDA's headers removed
release against release (compat/errors.toml [[removed_api]]), a cuDNN function or type the compiler refuses
([cudnn_api_words]), the host's glibc headers against an older nvcc's ([[host_header]]); pip's own lines for a
companion package that replaces the framework ([framework_swap]) and for its isolated build ([build_isolation]); a
framework asked of its variant index; a library named for one torch release ([framework_named_library]); a build
whose only missing part is cuDNN; a container without nvidia-smi; Kokkos's architecture check. Every message is
quoted from the public thread beside it (none of them in an evaluation set)."""

from __future__ import annotations

import pytest

from cudnn_doctor.commands.explain import explain_text
from cudnn_doctor.explain.read_compile import compile_errors

# (source, the first answer's code, the message as the thread prints it)
CASES = [
    # what CUDA 13.0 and 12.0 removed, in EDG's and GCC's words
    ("e-ago/bitcracker#77", "CD220", "main.cu(72): error: class \"cudaDeviceProp\" has no member \"clockRate\"\n"
     "   printf(\"Clock rate: %d\\n\", prop.clockRate );\n                                   ^"),
    ("icl-utk-edu/magma#61", "CD220", "/builder/magma/magma-cuda130/magma-2.6.1/interface_cuda/interface.cpp:444:22: "
     "error: \u2018struct cudaDeviceProp\u2019 has no member named \u2018clockRate\u2019\n  444 |                 "
     "prop.clockRate / 1000.,"),
    ("ahay/src#294", "CD220", "build/user/cuda/ktmig.cu(56): error: texture is not a template\n"
     "  texture<float2, 1, cudaReadModeElementType> t_sxy;\n  ^"),
    ("ajameson/dedisp#4", "CD220", "/usr/local/cuda-12.0/bin/nvcc  -c -Xcompiler \"-fPIC -Wall\" -O3 -g -arch=sm_75 "
     "-Isrc -o obj/dedisp.o src/dedisp.cu\nsrc/kernels.cuh(360): error: identifier \"cudaBindTexture\" is undefined"),
    # a signature CUDA 13.0 changed, in NVC++'s (EDG) and GCC's words
    ("NVIDIA/stdexec#1619", "CD220", "\"/proj/cuda/stdexec/main/include/nvexec/stream/schedule_from.cuh\", line 97: "
     "error: no suitable constructor exists to convert from \"int\" to \"cudaMemLocation\""),
    ("heterodb/pg-strom#931", "CD220", "/usr/local/cuda/include/cuda.h:14434:85: note: expected \u2018CUmemLocation\u2019 "
     "{aka \u2018struct CUmemLocation_st\u2019} but argument is of type \u2018CUdevice\u2019 {aka \u2018int\u2019}\n"
     "/usr/local/cuda/include/cuda.h:450:30: error: passing argument 4 of \u2018cuMemPrefetchAsync_v2\u2019 makes integer "
     "from pointer without a cast [-Wint-conversion]"),
    # a cuDNN function or type the compiler refuses
    ("haanjack/mnist-cudnn#6", "CD320", "convolution.cu(82): error: identifier \"cudnnGetConvolutionForwardAlgorithm\" "
     "is undefined\n\n6 errors detected in the compilation of \"convolution.cu\"."),
    ("NVIDIA/caffe#171", "CD320", "error: \u2018cudnnFindConvolutionForwardAlgorithmEx\u2019 was not declared in this "
     "scope workspace.size()));"),
    # the host's glibc headers against CUDA's
    ("LostRuins/koboldcpp#1521 (CUDA 12.9, glibc 2.41)", "CD209", "/usr/include/bits/mathcalls.h(79): error: exception "
     "specification is incompatible with that of previous function \"cospi\" (declared at line 2601 of "
     "/usr/local/cuda/include/crt/math_functions.h)"),
    ("1CatAI/1Cat-vLLM#215 (GCC's words)", "CD209", "error: declaration of 'void sincospi(double, double*, double*)' "
     "has a different exception specifier\n  /usr/local/cuda-12.8/targets/x86_64-linux/include/crt/math_functions.h:5994"),
    ("Xpra-org/xpra#3293 (CUDA 11.4, glibc 2.34)", "CD209", "Error: failed to compile CUDA kernel BGRA_to_YUV444\n "
     "using command: ['/opt/cuda-11.4/bin/nvcc', '-fatbin', '-c', 'fs/share/xpra/cuda/ARGB_to_NV12.cu']\n"
     "/usr/include/stdio.h(183): error: attribute \"__malloc__\" does not take arguments"),
    ("I2PC/xmipp3#722 (CUDA 11.4, g++-11)", "CD209", " /usr/local/cuda-11.4/bin/nvcc -c -w --x cu -ccbin "
     "/usr/bin/g++-11 xmipp_cuda_test.cpp -o xmipp_cuda_test.o\n/usr/include/stdio.h(189): error: attribute \"malloc\" "
     "does not take arguments"),
    # pip replacing the framework for a companion; pip's isolated build without torch
    ("Dao-AILab/flash-attention#1421", "CD520", "$ pip install flash-attn\nCollecting flash-attn\n  Installing build "
     "dependencies ... done\n  Getting requirements to build wheel ... error\n  error: subprocess-exited-with-error\n\n"
     "  \u00d7 Getting requirements to build wheel did not run successfully.\n  \u2502 exit code: 1\n  \u2570\u2500> "
     "[17 lines of output]\n      ModuleNotFoundError: No module named 'torch'"),
    # a library named for one torch release
    ("dmlc/dgl#7873", "CD520", "FileNotFoundError: Cannot find DGL C++ sparse library at D:\\Anaconda3\\envs\\pytorch\\"
     "Lib\\site-packages\\dgl-2.5-py3.12-win-amd64.egg\\dgl\\dgl_sparse\\dgl_sparse_pytorch_2.4.0.dll"),
    ("dmlc/dgl#7835", "CD520", "FileNotFoundError: Cannot find DGL C++ graphbolt library at /Users/bristi/Desktop/"
     ".venv/lib/python3.11/site-packages/dgl/graphbolt/libgraphbolt_pytorch_2.5.1.dylib"),
    # Kokkos's architecture check (kokkos/kokkos core/src/Cuda/Kokkos_Cuda_Instance.cpp)
    ("kokkos/kokkos Kokkos_Cuda_Instance.cpp", "CD404", "Kokkos::Cuda::initialize ERROR: likely mismatch of "
     "architecture\n[node01:2201] *** Process received signal ***"),
]


@pytest.mark.parametrize(("source", "code", "message"), CASES, ids=[c[0] for c in CASES])
def test_each_class_answers_with_its_code(source: str, code: str, message: str) -> None:
    data = explain_text(message, None)
    assert data["matches"], source
    assert data["matches"][0]["code"] == code, (source, [m["code"] for m in data["matches"]])


UNRELATED = [
    # CHIP-SPV/chipStar#1325: HIP on SPIR-V with glibc 2.41, no CUDA header in it
    ("CHIP-SPV/chipStar#1325", "In file included from /usr/include/math.h:467:\n/usr/include/x86_64-linux-gnu/bits/"
     "mathcalls.h:83:1: error: exception specification in declaration does not match previous declaration\n"
     "   83 | __MATHCALL_VEC (cospi,, (_Mdouble_ __x));"),
    # a HIP struct's member, not CUDA's
    ("a HIP port", "src/device.cpp(12): error: class \"hipDeviceProp_t\" has no member \"clockInstructionRate\""),
    # a project's own member and identifier
    ("a project's own code", "foo.cu(3): error: class \"Config\" has no member \"clockRate\"\n"
     "bar.cpp:9:3: error: 'my_helper' was not declared in this scope"),
    # pip upgrading torch because the command asked for it
    ("pip asked for torch", "pip install -U torch\nCollecting torch\n  Attempting uninstall: torch\n    Found existing "
     "installation: torch 2.4.1\n    Successfully uninstalled torch-2.4.1"),
    # an isolated build that lacks numpy, not torch
    ("pip without numpy", "  \u00d7 Getting requirements to build wheel did not run successfully.\n  \u2502 exit code: "
     "1\n      ModuleNotFoundError: No module named 'numpy'"),
    # Folding@home's CUDA probe on an AMD-only machine
    ("an AMD-only machine's GPU list", "  GPUs: 1\n        GPU 0: Bus:1 Slot:0 Func:0 AMD:5 Navi 21 [Radeon RX 6800]\n"
     "         CUDA: Not detected: Failed to open dynamic library 'nvcuda.dll': The specified module could not be found."),
]


@pytest.mark.parametrize(("source", "message"), UNRELATED, ids=[u[0] for u in UNRELATED])
def test_look_alikes_are_never_claimed(source: str, message: str) -> None:
    assert explain_text(message, None)["matches"] == [], source


def test_the_removed_name_and_release_reach_the_answer() -> None:
    answer = explain_text(CASES[0][2], None)["matches"][0]
    assert "cudaDeviceProp::clockRate" in answer["cause"] and "13.0" in answer["cause"]
    assert "CUDA 12.x" in answer["fix"] and "{" not in answer["fix"]
    texture = explain_text(CASES[3][2], None)["matches"][0]
    assert "cudaBindTexture" in texture["cause"] and "12.0" in texture["cause"] and "CUDA 11.x" in texture["fix"]


def test_owner_and_member_are_judged_together() -> None:
    """A removed member counts only on its own struct; a removed function only without an owner."""
    said = "x.cu(1): error: class \"cudaDeviceProp\" has no member \"clockRate\""
    assert compile_errors(0, said, said.lower())[0].code == "CD220"
    other = "x.cu(1): error: class \"cudaPointerAttributes\" has no member \"clockRate\""
    assert compile_errors(0, other, other.lower()) == []
    member = "x.cu(1): error: class \"Stream\" has no member \"cudaThreadSynchronize\""
    assert compile_errors(0, member, member.lower()) == []


def test_the_cuda_release_of_the_path_reaches_the_glibc_answer() -> None:
    answer = explain_text(CASES[9][2], None)["matches"][0]
    assert "12.8" in answer["cause"] and "sincospi" in answer["cause"]


def test_the_companion_and_the_torch_to_keep_reach_the_fix() -> None:
    """pip's own line forms (pypa/pip: 'Collecting %s (from %s)', 'Attempting uninstall: %s', 'Found existing
    installation: %s'), a companion pinning another torch than the CUDA build installed."""
    message = ("pip install xformers==0.0.22\nCollecting torch==2.1.0 (from xformers==0.0.22)\nAttempting uninstall: "
               "torch\n    Found existing installation: torch 2.0.1+cu118\n")
    answer = explain_text(message, None)["matches"][0]
    assert answer["code"] == "CD521"
    assert "xformers" in answer["fix"] and "--no-deps" in answer["fix"]
    assert "torch==2.0.1+cu118 --index-url https://download.pytorch.org/whl/cu118" in answer["fix"]


def test_the_package_to_build_reaches_the_isolation_fix() -> None:
    answer = explain_text(CASES[12][2], None)["matches"][0]
    assert "pip install --no-build-isolation flash-attn" in answer["fix"]


def test_a_framework_from_its_variant_index_is_a_build_of_the_stack() -> None:
    """astral-sh/uv's words for a distribution with no wheel for this platform: from PyTorch's CUDA index it is the GPU
    stack's build (CD520); from its CPU index it is not (round eleven: a +cpu build is no NVIDIA evidence)."""
    words = ("can't be installed because it doesn't have a source distribution or wheel for the current platform")
    cuda = f"error: distribution torchaudio==2.5.1+cu124 @ registry+https://download.pytorch.org/whl/cu124 {words}"
    assert explain_text(cuda, None)["matches"][0]["code"] == "CD520"
    cpu = f"error: distribution torchaudio==2.5.1+cpu @ registry+https://download.pytorch.org/whl/cpu {words}"
    assert explain_text(cpu, None)["matches"] == []


def test_a_build_without_only_cudnn_is_a_cudnn_answer() -> None:
    """chainer/chainer backends/cuda.py ('cuDNN is not enabled.'), CuPy without its cudnn module."""
    for message in ("chainer/backends/cuda.py:143: UserWarning: cuDNN is not enabled.\nPlease reinstall CuPy after you "
                    "install cudnn", ">>> import cupy.cudnn\nModuleNotFoundError: No module named 'cupy.cudnn'"):
        assert explain_text(message, None)["matches"][0]["code"] == "CD301", message
    assert explain_text("AssertionError: Torch not compiled with CUDA enabled", None)["matches"][0]["code"] == "CD406"


def test_conda_planning_another_cuda_than_asked() -> None:
    message = ("CONDA_OVERRIDE_CUDA=12.4 conda install pytorch\nThe following NEW packages will be INSTALLED:\n\n"
               "  cuda-version       conda-forge/noarch::cuda-version-11.8-h70ddcb2_3\n")
    answer = explain_text(message, None)["matches"][0]
    assert answer["code"] == "CD520" and "11.8" in answer["fix"] and "cuda-version=12" in answer["fix"]
    same = message.replace("cuda-version-11.8", "cuda-version-12.6")
    assert all(m["code"] != "CD520" for m in explain_text(same, None)["matches"])


@pytest.mark.parametrize("message", [
    # pip's resolver: a companion pins another torch than the one asked for (pypa/pip's ResolutionImpossible report)
    "ERROR: Cannot install torch==2.1.0 and torchvision==0.17.0 because these package versions have conflicting "
    "dependencies.\n\nThe conflict is caused by:\n    The user requested torch==2.1.0\n    torchvision 0.17.0 depends "
    "on torch==2.2.0\n\nERROR: ResolutionImpossible: for help visit https://pip.pypa.io/en/latest/topics/"
    "dependency-resolution/#dealing-with-dependency-conflicts",
    # pip found no build of the framework on its CUDA variant's index (pypa/pip's words with the versions it saw)
    "Looking in indexes: https://download.pytorch.org/whl/cu118\nERROR: Could not find a version that satisfies the "
    "requirement torch==1.13.1 (from versions: 2.2.0, 2.2.1, 2.3.0)\nERROR: No matching distribution found for "
    "torch==1.13.1",
])
def test_a_framework_pin_is_the_stacks_package(message: str) -> None:
    assert explain_text(message, None)["matches"][0]["code"] in ("CD520", "CD521")


def test_a_framework_pinned_older_than_every_release_offered_is_no_build_for_this_python() -> None:
    """pip finding no torch 1.13.1 for this Python while it offers 2.2.0 and later: no build of that release for this
    interpreter, CD520 ("No package build for this CUDA, Python or platform"), as rounds eleven, eighteen and nineteen
    label it (round five's set called it a Python pin, unrelated; the registry's own title says otherwise)."""
    message = ("ERROR: Could not find a version that satisfies the requirement torch==1.13.1 (from versions: 2.2.0, "
               "2.2.1, 2.3.0)\nERROR: No matching distribution found for torch==1.13.1")
    said = explain_text(message, None)["matches"][0]
    assert said["code"] == "CD520" and "2.2.0" in str(said["fix"]), said


def test_a_companion_that_wants_numpy_is_not_the_stacks_conflict() -> None:
    message = ("ERROR: pip's dependency resolver does not currently take into account all the packages that are "
               "installed.\ntorch 2.3.0 requires sympy, which is not installed.\ntensorflow 2.15.0 requires "
               "numpy<2.0.0,>=1.23.5, but you have numpy 2.1.0 which is incompatible.")
    assert explain_text(message, None)["matches"] == []


def test_a_refused_wheel_names_its_python_and_platform() -> None:
    """pypa/pip's 'X is not a supported wheel on this platform', the file's tags read as PEP 427 names them."""
    answer = explain_text("ERROR: torch-2.0.0+cu118-cp310-cp310-win_amd64.whl is not a supported wheel on this "
                          "platform.", None)["matches"][0]
    assert answer["code"] == "CD520"
    assert "CPython 3.10" in answer["fix"] and "win_amd64" in answer["fix"] and "torch 2.0.0+cu118" in answer["fix"]


def test_a_const_member_of_torch_is_pytorchs_symbol() -> None:
    """pytorch/FBGEMM's fbgemm_gpu_py.so looking for torch::autograd::Node::name() const of another torch release."""
    message = ("OSError: /usr/local/lib/python3.10/dist-packages/fbgemm_gpu/fbgemm_gpu_py.so: undefined symbol: "
               "_ZNK5torch8autograd4Node4nameEv")
    assert explain_text(message, None)["matches"][0]["code"] == "CD410"


@pytest.mark.parametrize(("source", "message", "wanted"), [
    # CCCL 3.0 (CUDA 13) removed thrust::unary_function: EDG's "has no member class"
    ("ajameson/dedisp#6 (CUDA 13.2)", "src/kernels.cuh(481): error: namespace \"thrust\" has no member class "
     "\"unary_function\"\n   : public thrust::unary_function<unsigned int,WordType> {", "13.0"),
    # a name Thrust still has, from a header the file no longer gets for free
    ("flatironinstitute/cufinufft#155", "src/precision_independent.cu(92): error: namespace \"thrust\" has no member "
     "\"max_element\"\n   int *maxptsinbin = thrust::max_element(thrust::seq,", "thrust/extrema.h"),
    ("BNLNPPS/simphony#235 (CUDA 13.2)", "/workspaces/eic-opticks/sysrap/iexpand.h(92): error: namespace \"thrust\" "
     "has no member \"distance\"", "thrust/distance.h"),
])
def test_thrust_removed_and_not_included(source: str, message: str, wanted: str) -> None:
    answer = explain_text(message, None)["matches"][0]
    assert answer["code"] == "CD220", source
    assert wanted in answer["cause"] + answer["fix"], source


def test_a_name_thrust_never_had_is_not_claimed() -> None:
    assert explain_text("x.cu(3): error: namespace \"thrust\" has no member \"frobnicate\"", None)["matches"] == []


def test_an_add_ons_pin_on_the_framework_is_the_stacks_only_where_the_message_speaks_of_its_gpu_builds() -> None:
    """pip's report of a package's version clash with torch (its words, pypa/pip's 'X requires Y, but you have Z
    which is incompatible'): from torchvision (built per torch release, from the same CUDA variant's index) it is the
    GPU stack's; from another add-on it is that add-on's pin, claimed only where the message names a CUDA build or
    index, as 'no matching distribution' for the framework is."""
    plain = ("ERROR: pip's dependency resolver does not currently take into account all the packages that are "
             "installed. This behaviour is the source of the following dependency conflicts.\n"
             "torchmetrics 1.3.0 requires torch>=1.10.0, but you have torch 1.9.0 which is incompatible.")
    assert not [m for m in explain_text(plain, None)["matches"] if m["code"] in ("CD520", "CD521")]
    cuda = plain.replace("torch 1.9.0", "torch 1.9.0+cu111")
    assert explain_text(cuda, None)["matches"][0]["code"] in ("CD520", "CD521")
    companion = plain.replace("torchmetrics 1.3.0 requires torch>=1.10.0", "torchvision 0.11.1 requires torch==1.10.0")
    assert explain_text(companion, None)["matches"][0]["code"] in ("CD520", "CD521")
