"""Issue 41, round thirteen: classes of message read by their structure, from threads of stacks the earlier sets barely
name (benchmarks/explain_eval/cases_7.toml holds them with their URLs): the driver too old in any stack's words, a
program's own dlsym check and a binding's "Function X not found" read as a missing driver symbol, a module loader's
"load nvidia failed" naming the module, and a start-up banner's versions on two lines that are no pair."""

from __future__ import annotations

import pytest

from cudnn_doctor.commands.explain import explain_text
from tests.test_explain_filled import holes

CASES = [
    # the driver too old, in Ollama's words (its cudart check) beside its dlsym check of the Windows driver's nvcuda.dll
    ("ollama/ollama#6604", "CD103",
     'time=2024-09-03T16:36:00.677+08:00 level=INFO source=gpu.go:568 msg="unable to load cuda driver library" '
     'library=C:\\WINDOWS\\system32\\nvcuda.dll error="symbol lookup for cuCtxCreate_v3 failed: \\r\\n"\n'
     'time=2024-09-03T16:36:00.853+08:00 level=DEBUG source=gpu.go:537 msg="Unable to load cudart" '
     'library=C:\\Users\\asus\\AppData\\Local\\Programs\\Ollama\\lib\\ollama\\cudart64_12.dll error="your nvidia driver '
     'is too old or missing.  If you have a CUDA GPU please upgrade to run ollama"'),
    # ... in LuisaCompute's (Genesis' renderer), which patches the PTX down and asks for a newer driver
    ("Genesis-Embodied-AI/genesis-world#641", "CD103",
     "[2025-01-26 15:52:43.471] [console] [warning] The PTX version is not supported by the installed CUDA driver. "
     "Trying to patch the PTX to make it compatible with the driver. This might cause unexpected behavior. Please "
     "consider upgrading your CUDA driver. [/home/sickopickle/Genesis/genesis/ext/LuisaRender/src/compute/src/backends/"
     "cuda/cuda_shader.cpp:13]"),
    # a binding's "Function X not found" of a driver API function (Numba on WSL 2 without the driver's libcuda)
    ("numba WSL 2 (held_out round10)", "CD103", 'RuntimeError: Function "cuDeviceGetCount" not found'),
    # the kernel refusing the NVIDIA module, in Talos' controller's words
    ("siderolabs/talos#7043", "CD101",
     "10.20.30.29: kern:  notice: [2023-04-02T08:28:32.591090611Z]: Loading of module with unavailable key is rejected\n"
     '10.20.30.29: user: warning: [2023-04-02T08:28:32.661330611Z]: [talos] controller failed {"component": '
     '"controller-runtime", "controller": "runtime.KernelModuleSpecController", "error": "error loading module '
     '\\"nvidia\\": load nvidia failed: key was rejected by service"}'),
    # Paddle's GPU check: the architecture, not a cuDNN "pair" made of its banner's two lines
    ("PaddlePaddle/Paddle#72746", "CD404",
     "The GPU compute capability in your current machine is 120, which is not supported by Paddle, it is recommended to "
     "install the corresponding wheel package according to the installation information on the official Paddle "
     "website.\nW0513 16:34:00.386127  4360 gpu_resources.cc:119] Please NOTE: device: 0, GPU Compute Capability: 12.0, "
     "Driver API Version: 12.9, Runtime API Version: 11.8\nW0513 16:34:00.390440  4360 gpu_resources.cc:164] device: 0, "
     "cuDNN Version: 8.9."),
]


@pytest.mark.parametrize(("source", "code", "message"), CASES, ids=[case[0] for case in CASES])
def test_the_class_is_answered_with_its_code_and_every_value_filled(source: str, code: str, message: str) -> None:
    data = explain_text(message, None)
    assert data["exit_code"] == 0, source
    first = data["matches"][0]
    assert first["code"] == code, (source, [m["code"] for m in data["matches"]])
    assert holes(first) == [], (source, first)


def test_a_banner_line_that_ends_with_its_own_version_starts_no_pair() -> None:
    """Paddle's "Runtime API Version: 11.8" then "cuDNN Version: 8.9." are two facts: no cuDNN 8.9-against-11.8 answer."""
    data = explain_text(CASES[-1][2], None)
    assert data["facts"]["versions"] == []
    assert "CD321" not in [m["code"] for m in data["matches"]]
    assert data["matches"][0]["values"]["compute_capability"] == "12.0"


def test_the_module_the_loader_names_reaches_the_answer() -> None:
    first = explain_text(CASES[3][2], None)["matches"][0]
    assert first["values"]["module"] == "nvidia"
    assert "Key was rejected by service" in first["fix"]


def test_the_driver_symbol_a_program_looked_up_is_named() -> None:
    data = explain_text('msg="unable to load cuda driver library" library=/usr/lib/libcuda.so.418.74 '
                        'error="symbol lookup for cuCtxCreate_v3 failed: undefined symbol"', None)
    assert "cuCtxCreate_v3" in [m["values"].get("symbol") for m in data["matches"]]


@pytest.mark.parametrize("message", [
    # a checkpoint of another model variant (ComfyUI threads of cases_7.toml): the program's, not the GPU stack's
    "Error(s) in loading state_dict for OpenAISignatureMMDITWrapper:\nsize mismatch for joint_blocks.0.x_block."
    "adaLN_modulation.1.weight: copying a param with shape torch.Size([13824, 1536]) from checkpoint, the shape in "
    "current model is torch.Size([9216, 1536]).",
    "UNETLoaderError(s) in loading state_dict for Flux:size mismatch for img_in.weight: copying a param with shape "
    "torch.Size([3072, 384]) from checkpoint, the shape in current model is torch.Size([3072, 64]).",
    # a function of the program's own that a script did not find, and a loader line about another vendor's driver
    'RuntimeError: Function "myHelper" not found',
    "Please update your AMD Radeon driver to the latest version.",
    # a line of a program's own that names a function and says "not found" about something else
    "in function ggml_cuda_compute_forward at ggml-cuda.cu:2326: key not found",
])
def test_what_is_not_the_gpu_stack_stays_unclaimed(message: str) -> None:
    assert explain_text(message, None)["exit_code"] == 1


@pytest.mark.parametrize(("message", "code", "library"), [
    # Java's loader names the library as System.loadLibrary was given it: the DLL's name without ".dll" (the JDK's
    # ClassLoader.loadLibrary format, with a CUDA runtime DLL's name): not found (CD2), its CUDA read from the name
    ("java.lang.UnsatisfiedLinkError: no cudart64_110 in java.library.path", "CD203", "cudart64_110"),
    ("java.lang.UnsatisfiedLinkError: no cudnn64_8 in java.library.path: C:\\Windows\\system32", "CD301", "cudnn64_8"),
    # Windows' error number in hexadecimal (GPT4All's loader prints GetLastError() so): 0x7e is 126, not found
    ("LoadLibraryExW C:\\Users\\me\\venv\\Lib\\site-packages\\torch\\lib\\cudnn_adv64_9.dll failed with error 0x7e",
     "CD304", "cudnn_adv64_9.dll"),
])
def test_a_loaders_own_phrasing_of_a_missing_library(message: str, code: str, library: str) -> None:
    first = explain_text(message, None)["matches"][0]
    assert (first["code"], first["values"]["library"]) == (code, library)
    assert holes(first) == []


def test_the_cuda_of_a_bare_dll_name_reaches_the_answer() -> None:
    first = explain_text("java.lang.UnsatisfiedLinkError: no cudart64_110 in java.library.path", None)["matches"][0]
    assert first["values"]["cuda_version"] == "11.0"


@pytest.mark.parametrize(("message", "code"), [
    # TensorFlow's XLA without the toolkit's ptxas (a log quoted in JAX/TensorFlow set-up notes)
    ("W tensorflow/stream_executor/gpu/asm_compiler.cc:80] Couldn't get ptxas version string: INTERNAL: Couldn't invoke "
     "ptxas --version", "CD208"),
    # nvcc refusing its host compiler (a GCC that crashed, MinGW's g++ or an MSVC too new for it)
    ("nvcc error   : 'gcc' died due to signal 4 (Illegal Instruction)\nnvcc error   : 'gcc' core dumped\n"
     "nvcc fatal   : Host compiler targets unsupported OS.", "CD209"),
])
def test_the_toolkits_tools_in_the_frameworks_and_nvccs_words(message: str, code: str) -> None:
    first = explain_text(message, None)["matches"][0]
    assert first["code"] == code
    assert holes(first) == []


@pytest.mark.parametrize("message", [
    # Java's loader about libraries of no GPU stack (OpenCV's and SWT's bindings)
    "Caused by: java.lang.UnsatisfiedLinkError: no opencv_java3410 in java.library.path\n"
    "    at java.lang.ClassLoader.loadLibrary(ClassLoader.java:1860) ~[na:1.8.0_251]",
    "java.lang.UnsatisfiedLinkError: no swt-win32 in java.library.path",
    # GPT4All's own CUDA backend DLL, which it tries and passes over when CUDA is absent
    "Failed to load llamamodel-mainline-cuda.dll: LoadLibraryExW failed with error 0x7e",
])
def test_a_loaders_words_about_a_library_outside_the_gpu_stack_stay_unclaimed(message: str) -> None:
    assert explain_text(message, None)["exit_code"] == 1


def test_a_cuda_tool_asking_for_the_gpu_driver_is_the_drivers_family() -> None:
    # cuda-gdb in a container that --nv left without the driver's libcudadebugger.so.1 (apptainer/apptainer#2261)
    first = explain_text("Could not find CUDA Debugger back-end. Please try upgrading/re-installing the GPU driver",
                         None)["matches"][0]
    assert first["code"] == "CD103"
    assert holes(first) == []


@pytest.mark.parametrize("message", [
    # another vendor's words for its own driver, with no CUDA in them
    "Your GPU driver is out of date. Please update your GPU driver: AMD Software: Adrenalin Edition 24.3.1 or newer.",
    "vkCreateInstance failed: VK_ERROR_INCOMPATIBLE_DRIVER. Please reinstall the graphics driver (Intel Arc A770).",
])
def test_a_gpu_driver_without_cuda_in_the_message_is_not_claimed(message: str) -> None:
    assert explain_text(message, None)["exit_code"] == 1


@pytest.mark.parametrize(("message", "compute_capability"), [
    # Blender Cycles' device check (intern/cycles/device/cuda: "CUDA device supported only with compute capability %d.%d
    # or up, found %d.%d."): the minimum first, the GPU's own after "found"; the GPU's is the one judged
    ("CUDA device supported only with compute capability 3.0 or up, found 2.1.", "2.1"),
    ("Cycles: CUDA device supported only with compute capability 2.0 or up, found 1.1.", "1.1"),
])
def test_a_minimum_then_the_gpus_own_capability_judges_the_gpu(message: str, compute_capability: str) -> None:
    first = explain_text(message, None)["matches"][0]
    assert (first["code"], first["values"]["compute_capability"]) == ("CD404", compute_capability)
    assert holes(first) == []


def test_the_driver_installer_without_the_kernels_headers_is_the_drivers_family() -> None:
    # nvidia-installer's words, as installation logs quote them (the line wrapped as the installer wraps it)
    data = explain_text("-> Performing CC version check with CC=\"cc\".\nERROR: Unable to find the kernel source tree for "
                        "the currently running kernel. \n       Please make sure you have installed the kernel source "
                        "files for your\n       kernel and that they are properly configured", None)
    first = data["matches"][0]
    assert first["code"] == "CD101"
    assert "linux-headers" in first["fix"] and holes(first) == []


def test_the_device_linker_older_than_its_input_names_the_inputs_cuda() -> None:
    # nvlink refusing NVSHMEM 3.x's device objects under CUDA 12.6 (a build's notes quote it so)
    first = explain_text("nvlink fatal: Input file 'libnvshmem.a:init.cu.o' newer than toolkit (129 vs 126)",
                         None)["matches"][0]
    assert (first["code"], first["values"]["cuda_version"]) == ("CD207", "12.9")
    assert "CUDA 12.9" in first["fix"] and holes(first) == []
