"""Issue 41, round thirteen (builder e18): install-time classes (CD5) read by their structure, from threads of 2023-2026
(benchmarks/explain_eval/cases_8.toml holds the development cases with their URLs): a retired tag of NVIDIA's CUDA base
image, a pull that NVIDIA's NGC registry refused, and uv's "no wheels with a matching platform tag" for a package of the
GPU stack. The same words about images and packages outside the GPU stack stay unclaimed."""

from __future__ import annotations

import pytest

from cudnn_doctor.commands.explain import explain_text
from tests.test_explain_filled import holes

CASES = [
    # Docker's words for a tag NVIDIA removed from Docker Hub (NVIDIA/nvidia-docker#1735)
    ("NVIDIA/nvidia-docker#1735", "CD522",
     "Unable to find image 'nvidia/cuda:11.0-base-ubuntu20.04' locally\ndocker: Error response from daemon: manifest for "
     "nvidia/cuda:11.0-base-ubuntu20.04 not found: manifest unknown: manifest unknown.\nSee 'docker run --help'."),
    # ... in a Dockerfile's FROM line through the legacy builder (mateuszbuda/brain-segmentation-pytorch#47)
    ("mateuszbuda/brain-segmentation-pytorch#47", "CD522",
     "manifest for nvidia/cuda:10.0-cudnn7-devel-ubuntu18.04 not found: manifest unknown: manifest unknown"),
    # the NGC registry without a login (NVIDIA/semantic-segmentation#7) and behind its licence gate (NVIDIA/Model-Optimizer)
    ("NVIDIA/semantic-segmentation#7", "CD511",
     "Get https://nvcr.io/v2/nvidia/pytorch/manifests/19.05-py3: unauthorized: authentication required"),
    ("NVIDIA/Model-Optimizer#1559", "CD511",
     'Error response from daemon: Head "https://nvcr.io/v2/nvidia/nemo/manifests/26.04":\n'
     "denied: Please accept license on the browser to be able to download"),
    # uv's resolver: a GPU-stack release without a wheel for this platform, pinned or as a range
    ("vllm-project/vllm#23350", "CD520",
     "  × No solution found when resolving dependencies:\n  ╰─▶ Because vllm==0.10.1+gptoss has no wheels with a matching "
     "platform tag (e.g., `manylinux_2_31_aarch64`) and you require vllm==0.10.1+gptoss, we can conclude that your "
     "requirements are unsatisfiable.\n\n      hint: Wheels are available for `vllm` (v0.10.1+gptoss) on the following "
     "platform: `linux_x86_64`"),
    # CMake's CUDA language without the target's architectures (ICLDisco/parsec#555)
    ("ICLDisco/parsec#555", "CD208",
     "CMake Error in build/_deps/parsec-src/tests/dsl/dtd/CMakeLists.txt:\n"
     '  CUDA_ARCHITECTURES is empty for target "dtd_test_new_tile".'),
    # CuPy's NVRTC compile of its own kernel (cupy/cupy#8466: the fp16 headers of CUDA 12.2+ need the runtime's)
    ("cupy/cupy#8466", "CD208",
     '  File "cupy_backends/cuda/libs/nvrtc.pyx", line 53, in cupy_backends.cuda.libs.nvrtc.check_status\n'
     "    raise NVRTCError(status)\ncupy_backends.cuda.libs.nvrtc.NVRTCError: NVRTC_ERROR_COMPILATION (6)"),
    # uv's other words: a locked file of another platform (pytorch/vision#9249, a nightly cu128 torchvision with only an
    # aarch64 wheel)
    ("pytorch/vision#9249", "CD520",
     "error: Distribution `torchvision==0.25.0.dev20251012 @ registry+https://download.pytorch.org/whl/nightly/cu128` "
     "can't be installed because it doesn't have a source distribution or wheel for the current platform\n\nhint: "
     "You're on Linux (`manylinux_2_35_x86_64`), but `torchvision` (v0.25.0.dev20251012) only has wheels for the "
     "following platform: `manylinux_2_28_aarch64`;"),
    # nvcc of CUDA 11.5 on GCC 11's functional header (NVIDIA/nccl#650), and CMake given an nvcc path that is not there
    ("NVIDIA/nccl#650", "CD209",
     "    /usr/include/c++/11/bits/std_function.h:530:146: error: parameter packs not expanded with ‘...’:\n"
     "      530 |         operator=(_Functor&& __f)"),
    ("jetsonhacks/buildLibrealsense2TX#13", "CD204",
     "CMake Error at CMakeLists.txt:5 (project):\n  The CMAKE_CUDA_COMPILER:\n\n    /usr/local/cuda/bin/nvcc\n\n  is not "
     "a full path to an existing compiler tool."),
    ("uv torch range on Windows", "CD520",
     "      and torch>=2.0.0,<=2.0.1 has no wheels with a matching platform tag (e.g., `win_amd64`), we can conclude "
     "that torch>=2.0.0,<=2.0.1 cannot be used."),
]


@pytest.mark.parametrize(("source", "code", "message"), CASES)
def test_the_class_is_answered_with_its_code_and_every_value_filled(source: str, code: str, message: str) -> None:
    data = explain_text(message, None)
    assert data["exit_code"] == 0, source
    first = data["matches"][0]
    assert first["code"] == code, (source, [m["code"] for m in data["matches"]])
    assert holes(first) == [], (source, first)


def test_the_retired_tag_reaches_the_answer() -> None:
    first = explain_text(CASES[0][2], None)["matches"][0]
    assert first["values"] == {"image": "nvidia/cuda", "tag": "11.0-base-ubuntu20.04"}
    assert "nvidia/cuda:11.0-base-ubuntu20.04" in first["cause"]


def test_the_ngc_image_is_named_and_the_login_is_the_fix() -> None:
    first = explain_text(CASES[2][2], None)["matches"][0]
    assert first["values"]["image"].startswith("v2/nvidia/pytorch")
    assert "docker login nvcr.io" in first["fix"] and "$oauthtoken" in first["fix"]


def test_the_locked_distribution_and_this_platform_reach_the_answer() -> None:
    first = explain_text(CASES[7][2], None)["matches"][0]
    assert first["values"] == {"package": "torchvision", "version": "0.25.0.dev20251012",
                               "platform": "manylinux_2_35_x86_64"}
    assert "uv lock --upgrade-package torchvision" in first["fix"]


def test_the_compiler_path_cmake_was_given_reaches_the_answer() -> None:
    first = explain_text(CASES[9][2], None)["matches"][0]
    assert first["values"]["path"] == "/usr/local/cuda/bin/nvcc"
    assert "/usr/local/cuda/bin/nvcc does not exist" in first["cause"]


def test_the_cmake_target_reaches_the_answer() -> None:
    first = explain_text(CASES[5][2], None)["matches"][0]
    assert first["values"]["target"] == "dtd_test_new_tile"
    assert "CMAKE_CUDA_ARCHITECTURES" in first["fix"] and "dtd_test_new_tile" in first["fix"]


def test_the_package_its_version_and_the_platform_reach_the_answer() -> None:
    first = explain_text(CASES[4][2], None)["matches"][0]
    assert first["values"]["package"] == "vllm"
    assert first["values"]["platform"] == "manylinux_2_31_aarch64"
    assert "vllm==0.10.1+gptoss" in first["cause"] and "manylinux_2_31_aarch64" in first["cause"]


@pytest.mark.parametrize("message", [
    # another project's image, tag or registry: not the GPU stack's (docker-library/docs#1950, Yeraze/meshmonitor#601)
    "Error response from daemon: manifest for postgres:13.3-alpine not found: manifest unknown: manifest unknown",
    "docker pull ghcr.io/yeraze/meshmonitor:v2.17.8\nError response from daemon: manifest unknown",
    'Error response from daemon: Head "https://ghcr.io/v2/someorg/private/manifests/1.0": unauthorized',
    # packages outside the GPU stack without a wheel for the platform (uv's words; onnxruntime's CPU build, MLX, a text
    # library of TensorFlow's family)
    "╰─▶ Because onnxruntime==1.20.1 has no wheels with a matching platform tag (e.g., `macosx_12_0_x86_64`) and you "
    "require onnxruntime==1.20.1, we can conclude that your requirements are unsatisfiable.",
    "╰─▶ Because mlx==0.31.2 has no wheels with a matching platform tag (e.g., `macosx_26_0_x86_64`) and you require mlx",
    "And because tensorflow-text==2.18.1 has no wheels with a matching platform tag (e.g., `win_amd64`) and you require "
    "tensorflow-text, we can conclude that your requirements are unsatisfiable.",
    # an explicit CPU build without a wheel for an Ascend NPU machine's aarch64 (ByteDance-Seed/VeOmni#147), in both of
    # uv's phrasings
    "error: Distribution `torchaudio==2.6.0+cpu @ registry+https:/download.pytorch.org/whl/` can't be installed because "
    "it doesn't have a source distribution or wheel for the current platform\n\nhint: You're on Linux "
    "(`manylinux_2_38_aarch64`), but `torchaudio` (v2.6.0+cpu) only has wheels for the following platforms: "
    "`linux_x86_64`, `win_amd64`",
    "Because torchaudio==2.6.0+cpu has no wheels with a matching platform tag (e.g., `manylinux_2_38_aarch64`) and you "
    "require torchaudio==2.6.0+cpu, we can conclude that your requirements are unsatisfiable.",
    # CMake's words about a C compiler that is not there (opentibiabr/remeres-map-editor#67)
    "CMake Error at C:\\Users\\Luan\\remeres-map-editor\\CMakeLists.txt:3 (project):\n  The CMAKE_C_COMPILER:\n\n    "
    "C:/Program Files/Microsoft Visual Studio/2022/Community/VC/Tools/MSVC/14.37.32822/bin/Hostx64/x64/cl.exe\n\n  is "
    "not a full path to an existing compiler tool.",
    # uv's words about a locked distribution outside the GPU stack (decord, a video reader)
    "error: Distribution `decord==0.6.0 @ registry+https://pypi.org/simple` can't be installed because it doesn't have a "
    "source distribution or wheel for the current platform",
    # CMake's warning of the same words (a developer warning, not the failure), and a C++ project without a compiler
    "CMake Warning (dev) in src/CMakeLists.txt:\n  Policy CMP0104 is not set: CMAKE_CUDA_ARCHITECTURES now detected for "
    "NVCC,\n  empty CUDA_ARCHITECTURES not allowed.\n\n  CUDA_ARCHITECTURES is empty for target \"objxgboost\".",
    "CMake Error at CMakeLists.txt:23 (project):\n  No CMAKE_C_COMPILER could be found.",
])
def test_the_same_words_outside_the_gpu_stack_stay_unclaimed(message: str) -> None:
    assert explain_text(message, None)["exit_code"] == 1, explain_text(message, None)["matches"][:1]
