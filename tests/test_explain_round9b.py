"""Issue 41, round nine (second part, after round eight's sets were published): classes read from a message's structure,
built from public sources; every message is quoted from the public thread or source beside it (none from an evaluation
set).

CUDA's own texts that only its runtime prints, standing alone after a program's error word, beside their number of any
numbering (compat/status_codes.toml alone/older_numbers); Ollama's 'cuda driver library ... %d' read as the CUresult
it is; a toolkit said not found beside the variable that names it ([toolkit_variable]); PowerShell's words for a
missing nvcc; modpost refusing an NVIDIA module; tiny-cuda-nn's architectures in brackets; NVRM's API mismatch in its
newer wording; pip taking NVIDIA's placeholder releases ([[placeholder]]); easy_install's and conda's words; a Mac,
where PyTorch publishes no CUDA build ([[no_cuda_platform]])."""

from __future__ import annotations

import pytest

from cudnn_doctor.commands.explain import explain_text
from cudnn_doctor.explain.reader import read


@pytest.mark.parametrize(("source", "code", "message"), [
    # cudaErrorInvalidDeviceFunction: 8 before CUDA 10.1, 98 since; the programs print it in their own words
    ("dhernandez0/sgm#17", "CD404", "Error: invalid device function 8"),
    ("mp3guy/ICPCUDA#16", "CD404", "GeForce GTX 1070\nSearching for the best thread/block configuration for your GPU...\n"
     "Best: 224 threads, 96 blocks (3.40282e+38ms)Error: invalid device function\t/home/francisco/git/ICPCUDA/src/Cuda/"
     "pyrdown.cu:90"),
    ("laugh12321/TensorRT-YOLO#74", "CD404", "CUDA Error:\n    File:       TensorRT-YOLO/source/deploy/vision/inference.cpp"
     "\n    Line:       558\n    Error code: 98\n    Error text: invalid device function"),
    # ollama/ollama gpu/gpu_info_nvcuda.c: the CUresult of cuCtxCreate_v3 runs into the next log field
    ("ollama/ollama#8271", "CD102", "Dec 31 01:21:28 FORGE ollama[555324]: cuda driver library failed to get device "
     "context 46time=2024-12-31T01:21:28.358-05:00 level=WARN source=gpu.go:449 msg=\"error looking up nvidia GPU memory\""),
    ("ollama/ollama#8647", "CD110", "ollama[2075]: cuda driver library failed to get device context 999time=2025-01-29T03:"
     "21:43.859+01:00 level=WARN source=gpu.go:449 msg=\"error looking up nvidia GPU memory\""),
])
def test_cudas_own_texts_and_numbers_in_a_programs_words(source: str, code: str, message: str) -> None:
    assert explain_text(message, None)["matches"][0]["code"] == code, source


@pytest.mark.parametrize("message", [
    "we fixed an invalid device function bug in the last release",  # prose, not an error's words
    "ERROR: invalid device function (error 77)",  # a number the code never had
    "cuda driver library failed to get device context 3.5",  # a version, not a CUresult
])
def test_the_same_words_in_prose_or_with_another_number_are_not_claimed(message: str) -> None:
    assert explain_text(message, None)["exit_code"] == 1


@pytest.mark.parametrize(("source", "code", "message"), [
    ("fbpic/fbpic#371 (CuPy's compiler.py)", "CD201", "RuntimeError: Failed to auto-detect CUDA root directory. Please "
     "specify `CUDA_PATH` environment variable if you are using CUDA v9.0, v9.1 or versions not yet supported by CuPy."),
    ("cupy/cupy cupy/_environment.py (its warning at import)", "CD201", "UserWarning: CUDA path could not be detected. "
     "Set CUDA_PATH environment variable if CuPy fails to load."),
    # PowerShell's own words for a command it cannot find
    ("PowerShell CommandNotFoundException", "CD201", "nvcc : The term 'nvcc' is not recognized as the name of a cmdlet, "
     "function, script file, or operable program."),
    ("zabbly/linux#43 (modpost, driver 575.57.08 on kernel 6.15)", "CD101", "ERROR: modpost: GPL-incompatible module "
     "nvidia.ko uses GPL-only symbol '__vma_start_write'\nERROR: modpost: GPL-incompatible module nvidia-drm.ko uses "
     "GPL-only symbol '__vma_start_write'"),
    ("ayaanzhaque/instruct-nerf2nerf#73 (tiny-cuda-nn modules.py)", "CD404", "UserWarning: tinycudann was built for lower "
     "compute capability (61) than the system's (86). Performance may be suboptimal."),
    ("NVIDIA/open-gpu-kernel-modules#829 (NVRM names the client first)", "CD110", "Apr 19 12:34:42 Kyrios kernel: NVRM: "
     "API mismatch: the client 'nvidia-powerd' (pid 849)\n                               NVRM: has the version 570.133.07, "
     "but this kernel module has\n                               NVRM: the version 575.51.02.  Please make sure that this"),
    ("Linaom1214/TensorRT-For-YOLO-Series#42 (pip took the placeholder)", "CD522", "Collecting nvidia-tensorrt\n  "
     "Downloading https://pypi.tuna.tsinghua.edu.cn/packages/b8/a3/3da2bd25b6243d7a19b6c08c0e92f7c04f9863e70d213fee3141d5"
     "74dccb/nvidia-tensorrt-0.0.1.dev5.tar.gz (7.9 kB)\n  Preparing metadata (setup.py) ... error"),
    ("cumulo-autumn/StreamDiffusion#160", "CD522", "Collecting nvidia-cudnn-cu116 (from nvidia-cudnn-cu11->tensorrt_libs=="
     "9.0.1.post11.dev4)\n        Downloading nvidia-cudnn-cu116-0.0.1.dev5.tar.gz (4.4 kB)"),
    ("AutoGPTQ's from_quantized warning, as a project README quotes it", "CD409", "WARNING - CUDA kernels for auto_gptq are "
     "not installed, this will result in very slow inference speed."),
    ("mindspore-ai/mindspore#105 (MindSpore's own check of the CUDA it found)", "CD220", "[WARNING] ME(39922:"
     "140551200737088,MainProcess):2021-01-23-15:05:55.109.91 [mindspore/_check_version.py:96] MindSpore version 1.1.0 "
     "and cuda version 9.0 does not match, reference to the match info on: https://www.mindspore.cn/install"),
    ("drmichaeldouglass/blenderGoogleGPU#5 (Blender asked for CUDA on a runtime with no GPU)", "CD102", "Found no "
     "Cycles device of the specified type"),
    ("InternLM/InternLM-XComposer#337 (AutoGPTQ's compiled module named by its mark)", "CD409", "2024-07-11 11:41:30 "
     "WARNING [auto_gptq.modeling._base] Exllamav2 kernel is not installed, reset disable_exllamav2 to True. This may "
     "because you installed auto_gptq using a pre-build wheel on Windows, in which exllama_kernels are not compiled."),
])
def test_toolkits_modules_architectures_and_packages_in_their_own_words(source: str, code: str, message: str) -> None:
    answer = explain_text(message, None)["matches"][0]
    assert answer["code"] == code, source


@pytest.mark.parametrize(("source", "header", "message"), [
    ("microsoft/TRELLIS#195", "cusparse.h", "/home/csnc/miniconda3/envs/trellis/lib/python3.10/site-packages/torch/include/"
     "ATen/cuda/CUDAContextLight.h:7:10: fatal error: cusparse.h: No such file or directory\n    7 | #include <cusparse.h>"),
    ("NVIDIA/cudf#13126", "curand.h", "$SRC_DIR/cpp/benchmarks/join/generate_input_tables.cuh:29:10: fatal error: curand.h: "
     "No such file or directory\n   29 | #include <curand.h>"),
    ("aws/studio-lab-examples#224 (CMake's FindCUDAToolkit)", "cublas_v2.h", "-- Unable to find cublas_v2.h in either "
     "\"/usr/local/cuda/include\" or \"/usr/math_libs/include\""),
    ("ShuangLI59/person_search#10 (a Thrust header under its folder)", "thrust/device_vector.h",
     "src/caffe/layers/cudnn_softmax_layer.cpp:3:10: fatal error: thrust/device_vector.h: No such file or directory"),
])
def test_a_toolkit_header_a_compiler_did_not_find(source: str, header: str, message: str) -> None:
    answer = explain_text(message, None)["matches"][0]
    assert answer["code"] == "CD201", source
    assert header in answer["cause"], source


@pytest.mark.parametrize("message", [
    "fatal error: Python.h: No such file or directory",  # Python's development headers: not the GPU stack's
    "src/x.cpp:5:10: fatal error: mylib/cuda.h: No such file or directory",  # a project's own header of that name
])
def test_other_headers_are_not_the_toolkits(message: str) -> None:
    assert all(m["code"] != "CD201" for m in explain_text(message, None)["matches"])


def test_a_placeholder_answer_names_the_index_and_the_release() -> None:
    """SkyworkAI/Matrix-Game#43: pip falls back to the PyPI placeholder when NVIDIA's index is not given."""
    answer = explain_text("Collecting nvidia-tensorrt (from -r requirements.txt (line 33))\n  Downloading nvidia-tensorrt-"
                          "0.0.1.dev5.tar.gz (7.9 kB)\n  Preparing metadata (setup.py) ... error", None)
    first = answer["matches"][0]
    assert first["code"] == "CD522"
    assert "nvidia-tensorrt 0.0.1.dev5" in first["cause"] and "https://pypi.ngc.nvidia.com" in first["fix"]
    # a real release of the same name is not a placeholder
    assert all(m["code"] != "CD522" for m in explain_text("Collecting nvidia-tensorrt==8.4.3.1", None)["matches"])


@pytest.mark.parametrize(("source", "message"), [
    ("NVIDIA/gdrcopy#254 (another vendor's module)", "ERROR: modpost: GPL-incompatible module gdrdrv.ko uses GPL-only "
     "symbol 'cc_mkdec'"),
    ("a program's own variable, not a toolkit's", "export CUDA_VISIBLE_DEVICES=0 is not set"),
    ("a wheel that names no CUDA build (frankmocap's detectron2 on Windows)", "ERROR: detectron2-0.3-cp37-cp37m-win_amd64"
     ".whl is not a supported wheel on this platform."),
])
def test_look_alikes_are_not_answered_as_the_stack(source: str, message: str) -> None:
    assert all(m["code"] not in ("CD101", "CD201", "CD520") for m in explain_text(message, None)["matches"]), source


def test_a_mac_sets_torch_without_cuda_aside() -> None:
    """zai-org/CodeGeeX2#183: PyTorch publishes no CUDA build for macOS, so 'install the GPU build' is no answer there;
    the same words from a Windows or Linux path still are (CD406)."""
    mac = explain_text('  File "/Users/zhangyukun33/anaconda3/envs/model-fine/lib/python3.8/site-packages/torch/cuda/'
                       '__init__.py", line 293, in _lazy_init\n    raise AssertionError("Torch not compiled with CUDA '
                       'enabled")\nAssertionError: Torch not compiled with CUDA enabled', None)
    assert mac["exit_code"] == 1 and mac["matches"] == []
    assert any("PyTorch publishes no CUDA build for macOS" in row["why"] for row in mac["set_aside"])
    windows = explain_text('  File "C:/Users/alice/venv/lib/site-packages/torch/cuda/__init__.py", line 284, in '
                           '_lazy_init\nAssertionError: Torch not compiled with CUDA enabled', None)
    assert windows["matches"][0]["code"] == "CD406"
    # a Linux cluster's lower-case /users/ home folders are not a Mac's /Users/
    cluster = explain_text('  File "/users/alice/venv/lib/python3.11/site-packages/torch/cuda/__init__.py", line 284, in '
                           '_lazy_init\nAssertionError: Torch not compiled with CUDA enabled', None)
    assert cluster["matches"][0]["code"] == "CD406"


@pytest.mark.parametrize(("source", "code", "message"), [
    ("setuptools' own words (package_index.py and easy_install.py: 'Couldn't find index page for %r', 'No local packages "
     "or working download links found for %s', 'Could not find suitable distribution for %r')", "CD520", "Searching for tensorrt>=8.0\nReading "
     "https://pypi.org/simple/tensorrt/\nNo local packages or working download links found for tensorrt>=8.0\nerror: Could "
     "not find suitable distribution for Requirement.parse('tensorrt>=8.0')"),
    ("facebookresearch/dinov2#481 (conda's libmamba tree: each line names its package first)", "CD521", "Could not solve "
     "for environment specs\nThe following packages are incompatible\n├─ pytorch-cuda 11.7.0*  is requested and can be "
     "installed;\n├─ pytorch 2.0.0*  is installable with the potential options\n│  ├─ pytorch 2.0.0 would require\n│  │  "
     "└─ pytorch-mutex 1.0 cpu, which can be installed;\n│  ├─ pytorch 2.0.0 would require\n│  │  └─ pytorch-mutex 1.0 "
     "cuda, which conflicts with any installable versions previously reported;"),
    ("hvoss-tech/AutoForge#8 (pip's 'does not provide the extra')", "CD520", "  Downloading jax-0.4.18-py3-none-any.whl."
     "metadata (23 kB)\nWARNING: jax 0.4.18 does not provide the extra 'cuda12'"),
    ("McGill-NLP/nano-aha-moment#3 (a flash-attn build for another Python)", "CD520", "ERROR: flash_attn-2.7.2.post1+cu12"
     "torch2.5cxx11abiFALSE-cp310-cp310-linux_x86_64.whl is not a supported wheel on this platform."),
    ("astral-sh/uv#10843 (the CUDA index has no wheel for Windows)", "CD520", "error: Distribution `torch==2.5.1 @ registry+"
     "https://download.pytorch.org/whl/cu124` can't be installed because it doesn't have a source distribution or wheel "
     "for the current platform"),
])
def test_installers_words_for_the_gpu_stacks_packages(source: str, code: str, message: str) -> None:
    assert explain_text(message, None)["matches"][0]["code"] == code, source


def test_the_read_facts_carry_the_values() -> None:
    """The status read from 'invalid device function 8' is cudaErrorInvalidDeviceFunction; the architecture read from
    tiny-cuda-nn's warning is the GPU's, the second number."""
    assert [s.name for s in read("Error: invalid device function 8").statuses] == ["cudaErrorInvalidDeviceFunction"]
    facts = read("UserWarning: tinycudann was built for lower compute capability (75) than the system's (89).")
    assert [a.compute_capability for a in facts.archs] == ["7.5", "8.9"]
    answer = explain_text("UserWarning: tinycudann was built for lower compute capability (75) than the system's (89).",
                          None)["matches"][0]
    assert answer["values"]["compute_capability"] == "8.9"


def test_a_frameworks_cuda_build_asked_for_where_none_exists() -> None:
    """xai-org/grok-1#199: `jax[cuda12_pip]` on native Windows; compat/rules.toml [[no_gpu_build]] (JAX's installation
    guide: its CUDA wheels are Linux-only) says no such build exists there, so the answer is WSL2 or Linux, not an
    index. The same request on Linux is not claimed by this rule."""
    message = ("PS F:\\grok-1> pip install -r requirements.txt\nDefaulting to user installation because normal site-packages "
               "is not writeable\nRequirement already satisfied: jax==0.4.25 in c:\\users\\cetin.dogu\\appdata\\roaming\\"
               "python\\python310\\site-packages (from jax[cuda12_pip]==0.4.25->-r requirements.txt (line 2)) (0.4.25)\n"
               "Collecting sentencepiece==0.2.0 (from -r requirements.txt (line 4))\n  Using cached sentencepiece-0.2.0-cp310-"
               "cp310-win_amd64.whl.metadata (8.3 kB)")
    first = explain_text(message, None)["matches"][0]
    assert first["code"] == "CD520"
    assert "jax[cuda12_pip]" in first["cause"] and "WSL2" in first["fix"] and "no_gpu_build" in first["source"]
    linux = explain_text("$ pip install -r requirements.txt\nCollecting jax[cuda12_pip]==0.4.25 (from -r requirements.txt "
                         "(line 2))", None)
    assert all("Windows" not in m["cause"] for m in linux["matches"])

