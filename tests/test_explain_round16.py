"""Issue 41, round sixteen (builder e22): classes of the families that transfer worst to sets nobody prepared (CD1
driver and device, CD4 framework build, CD5 install), read by their structure and answered with the message's values,
each beside a look-alike in the same words that stays unclaimed. Messages come from the threads the rules cite (their
`source` in compat/libraries.toml) or, where a class has one real message only, from a published development set
(named); none is a message of benchmarks/explain_eval/cases_11.toml, the round's development cases.

- an installer's own line that put in a build without CUDA is the install's (CD520), named before the build's refusal
  (CD406) that follows from it, both in the answer;
- installers finding no build: conda's one-'=' pins of a framework beside NVIDIA's channel, libmamba's "requires
  python" for a CUDA build, pip's fall-back to a GPU package's source archive, a library of another operating system;
- a package of the GPU stack of another release than the framework importing it (CD410): a name or submodule missing
  from Triton, a Windows extension module's missing entry point, a demangled libtorch symbol;
- the driver's and the device's words in other stacks' shapes: CuTe DSL's "CUDAError InsufficientDriver", a miner's
  "CUDA error DRIVER: '999'", Thrust's exception whose what() carries the CUDA runtime's text;
- a build system's own list of the releases it fetches and the one asked outside it (XLA's hermetic CUDA rules)."""

from __future__ import annotations

import pytest

from cudnn_doctor.commands.explain import explain_text
from tests.test_explain_filled import holes


def answers(message: str) -> list[dict[str, object]]:
    data = explain_text(message, None)
    assert data["exit_code"] == 0, message
    return data["matches"]  # type: ignore[no-any-return]


def unclaimed(message: str) -> bool:
    return explain_text(message, None)["exit_code"] == 1


def codes(message: str) -> list[str]:
    data = explain_text(message, None)
    return [str(match["code"]) for match in data["matches"]]


# ------------------------------------------------------------------------------------------------ CD5: installers

def test_an_installers_cpu_build_comes_before_the_builds_refusal_and_both_are_named() -> None:
    # pip's own summary line (pypa/pip install.py 'Successfully installed %s') naming PyTorch's CPU wheel, then torch's
    # refusal (pytorch/pytorch#30944's words)
    message = ("Successfully installed torch-2.3.0+cpu torchvision-0.18.0+cpu\n"
               "AssertionError: Torch not compiled with CUDA enabled")
    found = answers(message)
    assert [m["code"] for m in found[:2]] == ["CD520", "CD406"], found
    assert "torch-2.3.0+cpu" in str(found[0]["cause"]) and holes(found[0]) == [], found[0]
    assert "download.pytorch.org/whl/" in str(found[0]["fix"]) and "cu128" in str(found[0]["fix"])
    # the refusal alone stays the build's (CD406 first, as every development set labels it)
    assert codes("AssertionError: Torch not compiled with CUDA enabled")[0] == "CD406"


def test_uvs_torch_backend_that_installed_the_cpu_wheel() -> None:
    # the development case cd5-uv-torch-backend-auto-cpu-gtx1650-2025 of benchmarks/held_out/round15, the one real
    # message of its kind: uv's --torch-backend picks the accelerator's index, and what it put in is +cpu
    message = ('Ran command `uv pip install "torch" --torch-backend=auto`\n\nFor both cases, this is the output I get. '
               "Note that the PyTorch wheel for 2.9.1+cpu has been installed.")
    found = answers(message)
    assert [m["code"] for m in found[:2]] == ["CD520", "CD406"], found
    assert "uv installed torch 2.9.1+cpu" in str(found[0]["cause"]), found[0]["cause"]
    assert "--torch-backend=cu128" in str(found[0]["fix"]) and holes(found[0]) == []
    # the same installer words on an Ascend machine (torch_npu: round ten's look-alikes), and a +cpu wheel named with no
    # installer verb and no refusal, are not the NVIDIA stack's
    assert "CD520" not in codes("Successfully installed torch-2.6.0+cpu torch-npu-2.6.0\n"
                                "RuntimeError: npu not available on this Ascend host")
    assert unclaimed("pip list shows torch 2.4.0+cpu in this environment")


def test_condas_one_equals_pin_of_a_framework_beside_nvidias_channel() -> None:
    # conda's PackagesNotFoundError lists match specs with one '=' (pytorch/builder#1385's 'pytorch-cuda=12.1'): PyTorch
    # stopped publishing to its conda channel after 2.5
    message = ("PackagesNotFoundError: The following packages are not available from current channels:\n\n"
               "  - pytorch=2.6*\n\nCurrent channels:\n\n  - https://conda.anaconda.org/pytorch\n"
               "  - https://conda.anaconda.org/nvidia")
    first = answers(message)[0]
    assert first["code"] == "CD520" and "pytorch=2.6*" in str(first["cause"]), first
    # the same spec with nothing of CUDA around it (a plain package pin) stays unclaimed
    assert unclaimed("PackagesNotFoundError: The following packages are not available from current channels:\n\n"
                     "  - numpy=2.6*\n\nCurrent channels:\n\n  - https://conda.anaconda.org/conda-forge")


def test_libmambas_requires_python_for_a_cuda_build() -> None:
    # libmamba's problem explanation (mamba-org/mamba): the package's builds exist only for another Python
    message = ("LibMambaUnsatisfiableError: Encountered problems while solving:\n"
               "  - package cytnx_cuda-0.5.6a-py36hf484d3e_0 requires python >=3.6,<3.7.0a0, but none of the "
               "providers can be installed")
    first = answers(message)[0]
    assert first["code"] == "CD520" and "cytnx_cuda" in str(first["cause"]), first
    assert unclaimed(message.replace("cytnx_cuda-0.5.6a-py36hf484d3e_0", "scikit-image-0.16.2-py36hb3f55d8_0"))


def test_pips_fall_back_to_a_gpu_packages_source_archive() -> None:
    # cupy-wheel (CuPy's installation guide): no binary for this CUDA or Python, pip builds the archive, which fails
    message = ("Collecting cupy-wheel\n  Using cached cupy-wheel-12.3.0.tar.gz (2.9 kB)\n"
               "  error: subprocess-exited-with-error\n  Getting requirements to build wheel did not run successfully.\n"
               "  exit code: 1")
    first = answers(message)[0]
    assert first["code"] == "CD520" and "cupy-wheel-12.3.0.tar.gz" in str(first["cause"]), first
    # numpy's archive on a Python it has no wheel for (numpy/numpy#31613's shape), and flash-attn, which PyPI publishes
    # as source only (cases_3's look-alike: a source build is its normal path)
    assert unclaimed(message.replace("cupy-wheel-12.3.0.tar.gz", "numpy-1.22.0.zip").replace("cupy-wheel", "numpy"))
    assert unclaimed(message.replace("cupy-wheel-12.3.0.tar.gz", "flash_attn-2.8.3.tar.gz")
                     .replace("cupy-wheel", "flash_attn"))


def test_a_library_of_another_operating_system() -> None:
    # an old bitsandbytes (Linux .so files only; Windows wheels from 0.43.0) loading its CUDA library on Windows: the
    # development case cd5-bnb-old-windows-so-windowspath-2025 of benchmarks/held_out/round15
    message = ("CUDA SETUP: Loading binary C:\\Users\\Dusti\\AppData\\Local\\Packages\\Python311\\site-packages\\"
               "bitsandbytes\\libbitsandbytes_cuda121.so...\nargument of type 'WindowsPath' is not iterable")
    first = answers(message)[0]
    assert first["code"] == "CD520" and "libbitsandbytes_cuda121.so" in str(first["cause"]), first
    # its CPU library there is the build without GPU support, as every set labels it (CD406), not a platform's
    assert codes("bin D:\\ProgramData\\Anaconda3\\envs\\x\\lib\\site-packages\\bitsandbytes\\libbitsandbytes_cpu.so\n"
                 "UserWarning: The installed version of bitsandbytes was compiled without GPU support.")[0] == "CD406"


# ------------------------------------------------------------------------------------------------ CD4: release skew

@pytest.mark.parametrize(("source", "message", "named"), [
    ("pytorch/pytorch#127271", "LoweringException: ImportError: cannot import name 'triton_key' from "
     "'triton.compiler.compiler' (/home/u/anaconda3/envs/sam/lib/python3.10/site-packages/triton/compiler/compiler.py)",
     "triton_key"),
    ("triton-lang/triton#4250", "ModuleNotFoundError: No module named 'triton.common'", "triton.common"),
    ("facebookresearch/pytorch3d#1872", "ImportError: DLL load failed while importing _C: The specified procedure "
     "could not be found.", "_C"),
])
def test_a_package_of_another_release_than_the_framework_importing_it(source: str, message: str, named: str) -> None:
    first = answers(message)[0]
    assert first["code"] == "CD410", (source, first)
    assert named in str(first["cause"]) and holes(first) == [], (source, first)
    # an application's import of a removed API (BasicSR's of a torchvision module removed in 0.17), transformers' API,
    # Python's own _ssl, Triton absent: none is a skew of the GPU stack's releases
    assert unclaimed("from torchvision.transforms.functional_tensor import rgb_to_grayscale\n"
                     "ModuleNotFoundError: No module named 'torchvision.transforms.functional_tensor'")
    assert unclaimed("ImportError: cannot import name 'AutoModel' from 'transformers'")
    assert unclaimed("ImportError: DLL load failed while importing _ssl: The specified procedure could not be found.")
    assert "CD410" not in codes("ModuleNotFoundError: No module named 'triton'")


def test_a_symbol_whose_name_touches_the_loaders_colon() -> None:
    # the development case r9-torchrec-sm100-tbe-index-select of benchmarks/held_out/round9 (FBGEMM_GPU built against
    # another torch): "undefined symbol:_ZN5torch..." with no space after the colon
    first = answers("Could not load the library 'fbgemm_gpu_tbe_index_select.so': undefined "
                    "symbol:_ZN5torch8autograd15AutogradContextC1ERNS_6dynamo8autograd10PackedArgsE")[0]
    assert first["code"] == "CD410" and "_ZN5torch8autograd" in str(first["cause"]), first
    assert unclaimed("gcc: warning: undefined symbol:none here in the linker map of my own program")


def test_a_demangled_libtorch_symbol_is_read_by_its_namespace() -> None:
    # the loader's (or c++filt's) demangled name of the symbol an extension built against another torch lacks
    first = answers("ImportError: common_ops.abi3.so: undefined symbol: c10::MessageLogger::stream[abi:cxx11]()")[0]
    assert first["code"] == "CD410" and "c10::MessageLogger::stream" in str(first["cause"]), first
    assert unclaimed("undefined symbol: std::__cxx11::basic_string foo")


# ------------------------------------------------------------------------------------------------ CD1: other stacks

def test_cute_dsls_exception_class_before_the_status_name() -> None:
    first = answers("I find the error CUDAError InsufficientDriver. My CUDA driver is 570.133.20.")[0]
    assert first["code"] == "CD103", first


def test_a_driver_error_number_after_the_apis_name() -> None:
    first = answers("CUDA error DRIVER: '999' in func 'run_single_stream' line 978")[0]
    assert first["code"] == "CD110", first


@pytest.mark.parametrize("exception", ["thrust::system::system_error",
                                       "thrust::THRUST_300200_SM_90_NVHPC_NS::system::system_error"])
def test_thrusts_exception_carries_the_cuda_runtimes_text(exception: str) -> None:
    # NVIDIA/cccl thrust throw_on_error: "<algorithm> failed: " then cudaGetErrorString's text
    first = answers(f"terminate called after throwing an instance of '{exception}'\n"
                    "  what():  parallel_for failed: out of memory")[0]
    assert first["code"] == "CD109", first
    # the same what() under another exception type (a program's own) names nothing of CUDA
    assert unclaimed("terminate called after throwing an instance of 'std::runtime_error'\n"
                     "  what():  parallel_for failed: out of memory")


# ------------------------------------------------------------------------------------------------ a build's own list

def test_a_build_systems_list_of_releases_and_one_outside_it() -> None:
    # XLA's hermetic CUDA rules (google-ml-infra/rules_ml_toolchain, openxla/xla third_party/gpus/cuda/hermetic)
    message = ('Error in fail: The supported CUDNN versions are ["8.9.4.25", "8.9.6", "9.7.1", "9.8.0"]. Please provide '
               'a supported version in ["HERMETIC_CUDNN_VERSION", "TF_CUDNN_VERSION"] environment variable(s) or add '
               "JSON URL for CUDNN version=9.11.0.")
    first = answers(message)[0]
    assert first["code"] == "CD320", first
    assert "9.11.0" in str(first["fix"]) and "HERMETIC_CUDNN_VERSION" in str(first["fix"]) and holes(first) == []
    cuda = answers(message.replace("CUDNN", "CUDA").replace("9.11.0", "12.9.0"))[0]
    assert cuda["code"] == "CD220", cuda
    # a release the list holds is no fault of the list
    assert unclaimed(message.replace("9.11.0", "9.8.0"))


# ------------------------------------------------------------------------------------------------ CD3: cuDNN's headers

def test_a_cudnn_header_not_found_in_other_languages_words() -> None:
    # cuDNN 9's split headers (the nvidia-cudnn-cu13 wheel's include folder), said not found in Chinese compiler output
    first = answers("error: 找不到 <cudnn_ops.h>，编译失败")[0]
    assert first["code"] == "CD301" and "cudnn_ops.h" in str(first["cause"]), first
    # a project's own header in the same words is the project's
    assert unclaimed("error: 找不到 <mylib_config.h>，编译失败")


# ------------------------------------------------------------------------------------------------ CD1: Vulkan's device

def test_nvidias_renderer_finding_no_usable_vulkan_device() -> None:
    # Omniverse Kit's own words (the development case cd1-isaaclab-no-device-could-be-created of
    # benchmarks/held_out/round14) and Vulkan's result on the Kit's plugin line (r9-navrl-a100-vulkan-incompatible)
    kit = answers("2025-03-12 14:26:34 [423ms] [Error] [gpu.foundation.plugin] No device could be created. Some known "
                  "system issues:\n- The driver is not installed properly and requires a clean re-install.")[0]
    assert kit["code"] == "CD102" and "vulkaninfo" in str(kit["fix"]) and holes(kit) == [], kit
    vulkan = answers("[Error] [carb.graphics-vulkan.plugin] VkResult: ERROR_INCOMPATIBLE_DRIVER")[0]
    assert vulkan["code"] == "CD102", vulkan
    # the same Vulkan result from a game on macOS's MoltenVK (round ten's look-alike) names no NVIDIA part
    assert unclaimed("Sys_Error: Vulkan: instance creation failed with VK_ERROR_INCOMPATIBLE_DRIVER")
