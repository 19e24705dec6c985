"""`explain` reads five more families by their structure, each shown with real messages from public threads:
builds without GPU support in any framework's words (CD406), the CUDA compilers' own words for a GPU they do
not know (CD206, a framework's bundled compiler CD404), other runtimes loading the driver (CD1), cuDNN's
statuses and version checks as other languages' wrappers print them, and installers that found no build of a
package whose name carries a CUDA tag (CD520) or a resolver whose pins are not a build's versions (CD521)."""

from __future__ import annotations

import pytest

from cudnn_doctor.commands.explain import explain_text
from cudnn_doctor.explain.read_packages import _CUDA_TAG
from cudnn_doctor.explain.reader import read
from tests.conftest import Machine


def _codes(message: str) -> list[str]:
    return [match["code"] for match in explain_text(message, None)["matches"]]


# (source, message, the framework whose own marker it is, or None where the grammar reads it)
CPU_BUILDS = [
    ("apache/mxnet#3739", "src/storage/storage.cc:78: Compile with USE_CUDA=1 to enable GPU usage", None),
    ("apache/mxnet#1288", "src/storage/storage.cc:44: Please compile with CUDA enabled", None),
    ("bitsandbytes-foundation/bitsandbytes#26",
     "The installed version of bitsandbytes was compiled without GPU support. 8-bit optimizers and GPU quantization "
     "are unavailable.", None),
    ("bitsandbytes-foundation/bitsandbytes#680",
     "bin /opt/conda/envs/py31/lib/python3.10/site-packages/bitsandbytes/libbitsandbytes_cpu.so", "bitsandbytes"),
    ("shimat/opencvsharp#892", "[ WARN:0] global C:\\lib\\opencv2\\modules\\dnn\\src\\dnn.cpp (1363) "
     "cv::dnn::dnn4_v20191202::Net::Impl::setUpNet DNN module was not built with CUDA backend; switching to CPU", "opencv"),
    ("facebookresearch/detectron2#460", 'raise AssertionError("Torch not compiled with CUDA enabled")', None),
    ("PaddlePaddle/Paddle#24581", '    "Not compiled with CUDA"\nAssertionError: Not compiled with CUDA', None),
    ("lucasjinreal/DCNv2_latest#82", "RuntimeError: Not compiled with GPU support", None),
    ("microsoft/onnxruntime#26994", "UserWarning: Specified provider 'CUDAExecutionProvider' is not in available "
     "provider names.Available providers: 'CPUExecutionProvider'", "onnxruntime"),
    ("LaurentMazare/tch-rs#201", 'TorchError { c_error: "Cannot initialize CUDA without ATen_cuda library. PyTorch '
     'splits its backend into two shared libraries', "libtorch"),
]


@pytest.mark.parametrize(("source", "message", "framework"), CPU_BUILDS, ids=[c[0] for c in CPU_BUILDS])
def test_a_build_without_gpu_support_in_any_frameworks_words(source: str, message: str, framework: str | None) -> None:
    facts = read(message)
    assert [build.framework for build in facts.cpu_builds] == [framework], source
    assert _codes(message)[0] == "CD406", source


NOT_CPU_BUILDS = [
    # an architecture the build lacks kernels for (tensorflow/tensorflow#46093-style warning): CD404
    ("TensorFlow was not built with CUDA kernel binaries compatible with compute capability 8.6. CUDA kernels will be "
     "jit-compiled from PTX, which could take 30 minutes or longer.", "CD404"),
    # a GPU build that sees no GPU in a container (PaddlePaddle/models#4486: the GPU was not mapped into it)
    ("W0522 07:23:12.288138  7096 init.cc:128] Compiled with WITH_GPU, but no GPU found in runtime.", None),
    # a CUDA build that was built for another torch (facebookresearch/xformers#800): CD410
    ("WARNING[XFORMERS]: xFormers can't load C++/CUDA extensions. xFormers was built for:\n    PyTorch 2.1.0+cu121 "
     "with CUDA 1201 (you have 2.1.0+cu118)", "CD410"),
    # PyTorch's advice for a machine without a GPU (pytorch/pytorch torch/serialization.py)
    ("RuntimeError: Attempting to deserialize object on a CUDA device but torch.cuda.is_available() is False. If you "
     "are running on a CPU-only machine, please use torch.load with map_location=torch.device('cpu')", None),
]


@pytest.mark.parametrize(("message", "code"), NOT_CPU_BUILDS)
def test_near_misses_are_not_a_cpu_build(message: str, code: str | None) -> None:
    assert not read(message).cpu_builds
    codes = _codes(message)
    assert "CD406" not in codes and (codes[:1] == [code] if code else True), codes


def test_the_compilers_own_words_are_the_toolkit_not_the_framework() -> None:
    # CMU-Perceptual-Computing-Lab/openpose#2053 (CUDA 11.0 on an RTX 30xx)
    nvcc = read("nvcc fatal   : Unsupported gpu architecture 'compute_86'")
    assert [(c.name, c.bundled_by) for c in nvcc.compilers] == [("nvcc", None)]
    data = explain_text("nvcc fatal   : Unsupported gpu architecture 'compute_86'", None)
    assert data["matches"][0]["code"] == "CD206" and "8.6" in data["matches"][0]["cause"]
    # YINYIPENG-EN/handpose_and_yolo#1: torch 1.11+cu113's NVRTC on an RTX 4060 Ti; no architecture is named
    assert _codes("RuntimeError: nvrtc: error: invalid value for --gpu-architecture (-arch)")[0] == "CD206"
    # kijai/ComfyUI-WanVideoWrapper#63: Triton's own ptxas is a CUDA toolkit's compiler older than the GPU (issue 41):
    # TRITON_PTXAS_PATH at a newer toolkit's ptxas, or a newer Triton, is the fix (CD206)
    triton = "RuntimeError: Internal Triton PTX codegen error\n`ptxas` stderr:\nptxas fatal  : Value 'sm_120' is not " \
             "defined for option 'gpu-name'"
    assert [c.bundled_by for c in read(triton).compilers] == ["triton"]
    first = explain_text(triton, None)["matches"][0]
    assert first["code"] == "CD206" and "TRITON_PTXAS_PATH" in first["fix"] and "CUDA 12.8" in first["fix"]
    # a framework's "no kernel image" is its build, not a compiler (pytorch/pytorch#6515)
    kernel = "RuntimeError: CUDA error: no kernel image is available for execution on the device"
    assert not read(kernel).compilers and "CD206" not in _codes(kernel)
    # HazyResearch/butterfly#23: 'sm_30' with CUDA 11.2 is an architecture the newer toolkit dropped, not a GPU
    # newer than the compiler
    dropped = "nvcc fatal   : Value 'sm_30' is not defined for option 'gpu-architecture'"
    assert not read(dropped).compilers and "CD206" not in _codes(dropped)
    # nvcc given a host compiler's flag (tensor-compiler/taco#301) is not about the GPU
    assert _codes("nvcc fatal   : Unknown option 'fopenmp'") == []


@pytest.mark.parametrize("name", ["mxnet-cu112", "mxnet-cu80", "cupy-cuda91", "cupy-cuda12x", "paddlepaddle-gpu==2.4.2.post117",
                                  "torch==2.1.0+cu121", "jaxlib==0.4.7+cuda11.cudnn86", "jax[cuda12]", "tensorflow-gpu==1.15"])
def test_a_cuda_tag_in_a_package_name(name: str) -> None:
    assert _CUDA_TAG.search(name), name


@pytest.mark.parametrize("name", ["gpustat", "numpy==1.12.1=py36_0", "mxnet==1.8.0", "cucumber", "torch==2.1.0", "cupy"])
def test_no_cuda_tag_in_other_names(name: str) -> None:
    assert not _CUDA_TAG.search(name), name


def test_installers_that_found_no_cuda_build() -> None:
    # apache/mxnet#20118 (no Windows wheels of mxnet-cu110)
    pip = read("ERROR: Could not find a version that satisfies the requirement mxnet-cu110\n"
               "ERROR: No matching distribution found for mxnet-cu110")
    assert [(n.tool, n.packages) for n in pip.not_found] == [("pip", ("mxnet-cu110",)), ("pip", ("mxnet-cu110",))]
    # espnet/espnet#1847: conda lists what it did not find on the lines after its words
    conda = read("PackagesNotFoundError: The following packages are not available from current channels:\n\n"
                 "  - cudatoolkit=8.0\n\nCurrent channels:\n\n  - https://conda.anaconda.org/pytorch/linux-64")
    assert [n.packages for n in conda.not_found] == [("cudatoolkit=8.0",)]
    assert _codes("PackagesNotFoundError: The following packages are not available from current channels:\n\n"
                  "  - cudatoolkit=8.0\n")[0] == "CD520"
    # sameerkhurana10/DSOL_rv0.2#11: numpy is not the GPU stack, cudnn is
    both = read("PackagesNotFoundError: The following packages are not available from current channels:\n\n"
                "  - numpy==1.12.1=py36_0\n  - cudnn==5.1=0\n")
    assert [n.packages for n in both.not_found] == [("cudnn==5.1=0",)]
    # apache/mxnet#11277: a CPU package without a wheel for this Python is not the GPU stack's
    assert not read("ERROR: No matching distribution found for mxnet==1.9.1").not_found


def test_a_resolvers_pins_are_not_a_builds_versions() -> None:
    # VisoMasterFusion/VisoMaster-Fusion#261: uv, a CUDA build of torch pinning cuda-toolkit against the user's pin
    message = ("  × No solution found when resolving dependencies:\n  ╰─▶ Because torch==2.11.0+cu130 depends on "
               "cuda-toolkit[cublas]==13.0.2 and you require cuda-toolkit==13.2.1, we can conclude\n      that your "
               "requirements and torch==2.11.0+cu130 are incompatible.")
    assert read(message).versions == ()
    assert _codes(message)[0] == "CD521"


def test_cudnn_version_checks_and_statuses_in_other_wordings() -> None:
    # apache/mxnet's check (src/common/cuda/utils.cc): linked-against is what it found, compiled-against what it was built for
    pair = read("[08:32:10] ../src/base.cc:80: cuDNN lib mismatch: linked-against version 8200 != compiled-against "
                "version 8100.  Set MXNET_CUDNN_LIB_CHECKING=0 to quiet this warning.").versions
    assert [(p.subject, p.built, p.found) for p in pair] == [("cudnn", "8.1.0", "8.2.0")]
    # VisionLearningGroup/DA_Detection#19: PyTorch's words, the same roles
    pair = read("RuntimeError: cuDNN version mismatch: PyTorch was compiled against 7102 but linked against 7600").versions
    assert [(p.built, p.found) for p in pair] == [("7.1.2", "7.6.0")]
    assert _codes("RuntimeError: cuDNN version mismatch: PyTorch was compiled against 7102 but linked against 7600")[0] \
        == "CD321"  # the cuDNN on the path is the cause (PyTorch's own words: LD_LIBRARY_PATH holds another cuDNN)
    # hannes-brt/cudnn-python-wrappers#11 (CamelCase) and pluskid/Mocha.jl#57 (the name's words)
    assert [s.name for s in read("libcudnn.cudnnStatusArchMismatch").statuses] == ["CUDNN_STATUS_ARCH_MISMATCH"]
    assert [s.name for s in read("INFO:root:Initializing CuDNN backend...\nERROR: Arch mismatch").statuses] == \
        ["CUDNN_STATUS_ARCH_MISMATCH"]
    # the words alone, with no cuDNN in sight, are not a status
    assert not read("ERROR: Arch mismatch").statuses


def test_other_runtimes_loading_the_driver() -> None:
    # numba/numba#6777, numba cudadrv/driver.py DRIVER_NOT_FOUND_MSG, yuk7/ArchWSL#248, NVIDIA/k8s-device-plugin#23
    for message in ("CudaSupportError: Error at driver init: [100] Call to cuInit results in CUDA_ERROR_NO_DEVICE:",
                    "numba.cuda.cudadrv.error.CudaSupportError: CUDA driver library cannot be found. If you are sure "
                    "that a CUDA driver is installed, try setting environment variable NUMBA_CUDA_DRIVER",
                    "ldconfig: /usr/lib/wsl/lib/libcuda.so.1 is not a symbolic link",
                    "Failed to start nvml with error:  could not load NVML library"):
        assert _codes(message)[0].startswith("CD1"), message


def test_the_cli_explains_a_cpu_build(machine: Machine) -> None:
    result = machine.run("explain", "mxnet.base.MXNetError: [11:28:30] src/storage/storage.cc:78: Compile with "
                         "USE_CUDA=1 to enable GPU usage", "--offline-only", "--json")
    assert result.exit_code == 0
    first = result.json["matches"][0]
    assert first["code"] == "CD406" and "GPU build" in first["fix"] and "compile with" in first["cause"].lower()


def test_the_machine_view_names_the_toolkits_that_know_the_gpu(machine: Machine) -> None:
    from tests.test_check import make_toolkit

    # inducer/pycuda#440: CUDA 11.6's nvcc and an RTX 40xx (sm_89 needs CUDA 11.8)
    message = "nvcc fatal   : Value 'sm_89' is not defined for option 'gpu-architecture'"
    make_toolkit(machine.root, "11.6.2", runtime=11060)
    data = machine.run("explain", message, "--json").json
    assert data["matches"][0]["code"] == "CD206" and "needs CUDA 11.8" in data["matches"][0]["cause"]
    summary = " ".join(data["machine"]["summary"])
    assert "no toolkit here is that new" in summary and "11.6.2" in summary, summary
    make_toolkit(machine.root, "12.4.1", runtime=12040)
    summary = " ".join(machine.run("explain", message, "--json").json["machine"]["summary"])
    assert "these toolkits here know it: 12.4.1" in summary, summary
