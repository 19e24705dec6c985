"""Issue 41, round seventeen (builder e25): answers by class, each read from the thing's own message shape (glibc's
dl-load refusals, a program's own report of a context-free probe, a ROCm build's own HIP names), each beside its
look-alike that stays declined and the related message of the same words that stays answered.

Messages come from the threads each rule cites, the new development set benchmarks/explain_eval/cases_12.toml, and
the published development sets (named by case)."""

from __future__ import annotations

import pytest

from cudnn_doctor.commands.explain import explain_text


def answer(message: str) -> dict[str, object]:
    data = explain_text(message, None)
    assert data["exit_code"] == 0 and data["matches"], (message, data)
    return data["matches"][0]  # type: ignore[index,no-any-return]


def declined(message: str) -> dict[str, object]:
    data = explain_text(message, None)
    assert data["exit_code"] == 1 and data["matches"] == [], (message, data["matches"])
    return data


# ------------------------------------------------- glibc 2.41's refusal of a library asking for an executable stack

EXECSTACK = "cannot enable executable stack as shared object requires: Invalid argument"


@pytest.mark.parametrize(("message", "code", "library"), [
    # CTranslate2's hashed library (OpenNMT/CTranslate2#1849; cases_12): the framework's own GPU library
    (f"ImportError: libctranslate2-bc15bf3f.so.4.5.0: {EXECSTACK}", "CD409", "libctranslate2-bc15bf3f.so.4.5.0"),
    # the driver's library (apache/mxnet#2836), a cuDNN 9 sub-library, TensorRT's builder resource in its loader's words
    (f"OSError: libcuda.so.1: {EXECSTACK}", "CD110", "libcuda.so.1"),
    (f"ImportError: /opt/venv/lib/python3.12/site-packages/nvidia/cudnn/lib/libcudnn_engines_precompiled.so.9: "
     f"{EXECSTACK}", "CD308", "libcudnn_engines_precompiled.so.9"),
    ("[TRT] [E] 6: [libLoader.cpp::Impl::293] Error Code 6: Internal Error (Unable to load library: "
     f"libnvinfer_builder_resource.so.10.7.0: libnvinfer_builder_resource.so.10.7.0: {EXECSTACK})", "CD409",
     "libnvinfer_builder_resource.so.10.7.0"),
])
def test_the_loaders_executable_stack_refusal_is_read_for_any_gpu_stack_library(message: str, code: str,
                                                                               library: str) -> None:
    match = answer(message)
    assert match["id"] == "loader-executable-stack-refused" and match["code"] == code
    fix = str(match["fix"])
    assert library in fix and "patchelf --clear-execstack" in fix and "glibc.rtld.execstack=2" in fix
    assert "<library>" not in fix and "{library}" not in fix
    # the same glibc words for libraries of no GPU stack stay declined (jsoftware/jsource#225, open-power/pdbg#111,
    # ValveSoftware/portal2#451)
    for look_alike in (f"Load library j9.6/bin/libj.so failed: j9.6/bin/libj.so: {EXECSTACK}",
                       f"libpdbg.so.6: {EXECSTACK}", f"dlopen failed: engine.so: {EXECSTACK}"):
        declined(look_alike)


# ------------------------------------- a program's own report of its context-free probe, then another subsystem's faults

SUNSHINE_AMD = ("[nv_rc] -- [auto]\nCannot load libcuda.so.1\n[2022:09:26:10:20:21]: Error: Couldn't load cuda: -1\n"
                "[2022:09:26:10:20:21]: Error: Environment variable WAYLAND_DISPLAY has not been defined")


def test_sunshines_own_report_of_its_cuda_probe_is_the_probe_not_a_failure() -> None:
    # round9 r9-unrel-sunshine-amd-no-cuda (LizardByte/Sunshine#379): an AMD host; Sunshine's start-up probes CUDA
    # with a null context on every Linux machine and reports it; what failed after is its own Wayland capture
    data = declined(SUNSHINE_AMD)
    assert "cannot load libcuda.so.1" in str(data["set_aside"]).lower()
    # the flatpak run's other capture faults (/dev/dri, CAP_SYS_ADMIN) are no NVIDIA failure either
    declined("Cannot load libcuda.so.1\n[2024:03:09:17:56:00]: Error: Couldn't load cuda: -1\n"
             "[2024:03:09:17:56:00]: Error: Failed to gain CAP_SYS_ADMIN\n"
             "[2024:03:09:17:56:00]: Error: Couldn't open: /dev/dri/card0: Permission denied\n"
             "[2024:03:09:17:56:00]: Error: Unable to initialize capture method")
    # a later line that fails in NVIDIA's words, or a crash, keeps the loader's line read
    for message, code in RELATED_AFTER_PROBE:
        assert str(answer(message)["code"]).startswith(code), message


RELATED_AFTER_PROBE = [
    # a later line that fails in NVIDIA's words keeps the loader's line read (round9 r9-jellyfin-docker-no-libcuda's shape)
    ("Cannot load libcuda.so.1\n[AVHWDeviceContext @ 0x55d] Could not dynamically load CUDA\n"
     "Device creation failed: -1.", "CD1"),
    # NixOS Sunshine's (round9 r9-nixos-sunshine-no-libcuda): the loader's line in FFmpeg's device context
    ("[2023:12:03:20:04:39]: Info: Trying encoder [nvenc]\n"
     "[2023:12:03:20:04:39]: Error: [AVHWDeviceContext @ 0x33f7240] Cannot load libcuda.so.1\n"
     "[2023:12:03:20:04:39]: Error: [AVHWDeviceContext @ 0x33f7240] Could not dynamically load CUDA\n"
     "[2023:12:03:20:04:39]: Error: Failed to create a CUDA device: Operation not permitted", "CD1"),
    # Sunshine's report followed by its cuInit failing in CUDA's words: a real fault
    ("Cannot load libcuda.so.1\nError: Couldn't load cuda: -1\nError: Couldn't initialize cuda: CUDA_ERROR_NO_DEVICE",
     "CD1"),
    # a crash after the probe is a failure whatever its words
    ("Cannot load libcuda.so.1\nError: Couldn't load cuda: -1\nSegmentation fault (core dumped)", "CD1"),
]


# ------------------------------------------------------ a ROCm build of PyTorch keeps "CUDA error" but names HIP

@pytest.mark.parametrize("message", [
    # ROCm/TheRock#6997: TheRock's PyTorch, the check's help naming the HIP status and ROCm's documentation
    "torch.AcceleratorError: CUDA error: device kernel image is invalid\nSearch for `hipErrorInvalidImage' in "
    "https://rocm.docs.amd.com/projects/HIP/en/latest/index.html for more information.\nCUDA kernel errors might be "
    "asynchronously reported at some other API call, so the stacktrace below might be incorrect.\nFor debugging "
    "consider passing AMD_SERIALIZE_KERNEL=3\nDevice-side assertion tracking was not enabled by user.",
    # the same suffix alone (PyTorch's ROCm check suffix names AMD_SERIALIZE_KERNEL where CUDA's names
    # CUDA_LAUNCH_BLOCKING)
    "torch.AcceleratorError: CUDA error: device kernel image is invalid\nCUDA kernel errors might be asynchronously "
    "reported at some other API call, so the stacktrace below might be incorrect.\nFor debugging consider passing "
    "AMD_SERIALIZE_KERNEL=3",
    # ggml's HIP build (ggml-org/llama.cpp#23934's words, out of memory)
    "ggml_cuda_compute_forward: MUL_MAT failed\nROCm error: out of memory\n  current device: 0, in function "
    "ggml_cuda_compute_forward at ggml/src/ggml-cuda/ggml-cuda.cu:2513",
])
def test_a_rocm_builds_own_names_set_the_cuda_words_aside(message: str) -> None:
    data = declined(message)
    assert any("amd-gpu-only" in str(row.get("text", "")) or "hip" in str(row.get("text", "")).lower()
               for row in data["set_aside"])  # type: ignore[attr-defined,union-attr]
    # the same status in the CUDA build's own words stays answered
    for cuda_message, code in CUDA_WORDS:
        assert str(answer(cuda_message)["code"]).startswith(code), cuda_message


CUDA_WORDS = [
    # the CUDA build's own suffix (CUDA_LAUNCH_BLOCKING) with the same status stays answered (cases_7's Ollama,
    # round6 cupy10-4080-invalid-source)
    ("torch.AcceleratorError: CUDA error: device kernel image is invalid\nCUDA kernel errors might be asynchronously "
     "reported at some other API call, so the stacktrace below might be incorrect.\nFor debugging consider passing "
     "CUDA_LAUNCH_BLOCKING=1", "CD"),
    ("CUDA_ERROR_INVALID_SOURCE: device kernel image is invalid", "CD404"),
    ("CUDA error: out of memory\n  current device: 0, in function ggml_cuda_compute_forward at "
     "ggml/src/ggml-cuda/ggml-cuda.cu:2513", "CD109"),
]


# ------------------------------------------- glibc cannot map a library's code (noexec mount, address-space limit)

@pytest.mark.parametrize(("message", "rule", "code", "fix_word"), [
    # Triton's launcher stubs built at run time into torch.compile's or Triton's cache (pytorch/pytorch#184362)
    ("ImportError: /tmp/torchinductor_root/triton/0/2d9a6a4b/cuda_utils.so: failed to map segment from shared object",
     "triton-cache-map-segment-failed", "CD409", "TRITON_CACHE_DIR"),
    ("ImportError: /home/u/.triton/cache/f3a1/__triton_launcher.so: failed to map segment from shared object",
     "triton-cache-map-segment-failed", "CD409", "TORCHINDUCTOR_CACHE_DIR"),
    # a cuDNN library of a pip wheel on a scratch folder mounted noexec
    ("OSError: /scratch/env/lib/python3.10/site-packages/nvidia/cudnn/lib/libcudnn_cnn_infer.so.8: failed to map "
     "segment from shared object", "loader-map-segment-failed", "CD307", "findmnt"),
])
def test_a_gpu_stack_library_that_cannot_be_mapped_names_the_mount(message: str, rule: str, code: str,
                                                                   fix_word: str) -> None:
    match = answer(message)
    assert match["id"] == rule and match["code"] == code
    assert "noexec" in str(match["cause"]) and fix_word in str(match["fix"]) and "ulimit -v" in str(match["fix"])
    # the same glibc words for libraries of no GPU stack stay declined (numactl/numactl#74, a Node.js module), and
    # Triton's stub that lacks a driver symbol stays the driver's (round13 r13-acceleritor-triton-cumodulegetfunction)
    assert answer("Error running sage attention: /var/home/u/.triton/cache/5DKV/cuda_utils.so: undefined symbol: "
                  "cuModuleGetFunction, using pytorch attention instead.")["code"] == "CD103"
    for look_alike in ("numactl: error while loading shared libraries: libnuma.so.1: failed to map segment from "
                       "shared object",
                       "Error: /home/ubuntu/src/app/node_modules/memwatch-next/build/Release/memwatch.node: failed to "
                       "map segment from shared object: Operation not permitted"):
        declined(look_alike)


# ------------------------------------------------------- PubGrub's "which doesn't match any versions" (Poetry)

@pytest.mark.parametrize("message", [
    "Because myproject depends on torch (2.1.0+cu121) which doesn't match any versions, version solving failed.",
    "Because myproject depends on nvidia-cudnn-cu12 (9.1.0.70) which doesn't match any versions, version solving "
    "failed.",
    "Because jax[cuda12] (0.4.30) depends on jax-cuda12-plugin (0.4.30) which doesn't match any versions, jax[cuda12] "
    "is forbidden.",
])
def test_poetrys_no_versions_sentence_for_a_gpu_stack_package_is_no_build(message: str) -> None:
    match = answer(message)
    assert match["code"] == "CD520"
    # the same sentence for a package of no GPU stack (Poetry's own test's foo; Dart pub's packages) stays unread, and
    # pip's words for the same request stay answered as before
    for look_alike in ("Because myapp depends on foo (^1.0) which doesn't match any versions, version solving failed.",
                       "Because superchat depends on socket_io_client ^2.0.6 which doesn't match any versions, version "
                       "solving failed.",
                       "Because myproject depends on numpy (2.5.0) which doesn't match any versions, version solving "
                       "failed."):
        declined(look_alike)
    assert answer("ERROR: No matching distribution found for torch==2.1.0+cu121")["code"] == "CD520"


# ---------------------------------------------- Bazel's CUDA configuration finding no toolkit (CMake's words: CD201)

@pytest.mark.parametrize(("message", "fix_word"), [
    # TensorFlow 1.x's cuda_configure.bzl under Bazel, and a copy of it that says CUDA in capitals (plaidml)
    ("ERROR: /home/u/tensorflow/WORKSPACE:3:1: no such package '@local_config_cuda//crosstool': Traceback (most "
     "recent call last):\n\tFile \"/home/u/tensorflow/third_party/gpus/cuda_configure.bzl\", line 1039\n"
     "Cuda Configuration Error: Cannot find cuda toolkit path.", "CUDA_TOOLKIT_PATH"),
    ("fail: Cannot find CUDA toolkit path.", "CUDA_TOOLKIT_PATH"),
    # find_cuda_config.py finding the toolkit's parts under two prefixes (a distribution's nvidia-cuda-toolkit)
    ("ERROR: An error occurred during the fetch of repository 'local_config_cuda':\nCuda Configuration Error: Failed "
     "to run find_cuda_config.py: Inconsistent CUDA toolkit path: /usr vs /usr/lib", "TF_CUDA_PATHS"),
])
def test_bazels_cuda_configuration_without_a_toolkit_is_the_toolkit_not_found(message: str, fix_word: str) -> None:
    match = answer(message)
    assert match["code"] == "CD201" and fix_word in str(match["fix"])
    # CMake's words for the same failure stay answered the same way
    assert answer("-- The CUDA compiler identification is unknown\nCMake Error at CMakeLists.txt:3 (project):\n"
                  "  No CMAKE_CUDA_COMPILER could be found.")["code"] == "CD201"


# ------------------------------------- TensorFlow's placer without a registered GPU device (the list it prints)

@pytest.mark.parametrize("message", [
    # TensorFlow 1.x's placer (tensorflow/tensorflow#8093's words): the process registered only a CPU
    "tensorflow.python.framework.errors_impl.InvalidArgumentError: Cannot assign a device to node 'gradients/ff_1/"
    "add_grad/BroadcastGradientArgs': Could not satisfy explicit device specification '/device:GPU:0' because no "
    "devices matching that specification are registered in this process; available devices: "
    "/job:localhost/replica:0/task:0/cpu:0",
    # 1.14 and later (LiyaoTang/contrastBoundary#16's words): XLA saw the GPUs, TensorFlow's GPU device did not come up
    "tensorflow.python.framework.errors_impl.InvalidArgumentError: Cannot assign a device for operation gpu_0/L2Loss: "
    "{{node gpu_0/L2Loss}}was explicitly assigned to /device:GPU:0 but available devices are [ /job:localhost/"
    "replica:0/task:0/device:CPU:0, /job:localhost/replica:0/task:0/device:XLA_CPU:0, /job:localhost/replica:0/task:0/"
    "device:XLA_GPU:0 ]. Make sure the device specification refers to a valid device.",
])
def test_tensorflows_placer_without_a_gpu_device_is_the_gpu_not_seen(message: str) -> None:
    match = answer(message)
    assert match["id"] == "tf-gpu-device-not-registered" and match["code"] == "CD102"
    assert "is_built_with_cuda" in str(match["fix"]) and "tensorflow[and-cuda]" in str(match["fix"])
    # a list that holds GPUs (another index asked for) names no fault of the stack and stays unread
    for look_alike in ("Cannot assign a device for operation x: node x was explicitly assigned to /device:GPU:2 but "
                       "available devices are [ /job:localhost/replica:0/task:0/device:CPU:0, /job:localhost/replica:0/"
                       "task:0/device:GPU:0, /job:localhost/replica:0/task:0/device:GPU:1 ]. Make sure the device "
                       "specification refers to a valid device.",
                       "Could not satisfy explicit device specification '/device:GPU:1' because no devices matching "
                       "that specification are registered in this process; available devices: /job:localhost/"
                       "replica:0/task:0/device:CPU:0, /job:localhost/replica:0/task:0/device:GPU:0"):
        declined(look_alike)


# --------------------------------------------- resolvo's (pixi's) words: its tree layout, its "no candidates"

def test_pixis_solver_report_is_read_through_its_tree_and_its_no_candidates_words() -> None:
    # the __cuda virtual package behind the tree's branch (conda's and libmamba's words for it were read before)
    match = answer("  × failed to solve the conda requirements of 'default' 'linux-64'\n  ╰─▶ Cannot solve the request "
                   "because of: pytorch-cuda * cannot be installed because there are no viable options:\n      └─ "
                   "pytorch-cuda 12.1 would require\n         └─ __cuda *, for which no candidates were found.")
    assert match["id"] == "conda-cuda-virtual-package" and match["code"] == "CD520"
    # a GPU build no channel has
    assert answer("Cannot solve the request because of: No candidates were found for jaxlib ==0.4.30 cuda12*.")[
        "code"] == "CD520"
    # the same words for a package of no GPU stack stay unread
    declined("Cannot solve the request because of: numpy ==9.9 cannot be installed because there are no viable "
             "options:\n└─ numpy 9.9, for which no candidates were found.")
    declined("Cannot solve the request because of: No candidates were found for requests ==99.0.")
