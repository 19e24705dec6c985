"""Issue 41, round sixteen, second pass (builder e24): no unrelated message claimed, each look-alike declined as a class
(what made a message of another vendor's device, or a program's harmless line, look like an NVIDIA fault), each beside
the related message of the same words that stays answered; then the weakest families of round sixteen's set (CD5
install, CD2 toolkit and runtime) as classes across stacks.

Look-alikes come from round sixteen's published development set (benchmarks/held_out/round16, named by case) and
the threads each rule cites; related messages from the development sets (named) or the rules' sources."""

from __future__ import annotations

import pytest

from cudnn_doctor.commands.explain import explain_text


def codes(message: str) -> list[str]:
    data = explain_text(message, None)
    return [str(match["code"]) for match in data["matches"]]


def declined(message: str) -> dict[str, object]:
    data = explain_text(message, None)
    assert data["exit_code"] == 1 and data["matches"] == [], (message, data["matches"])
    return data


# ------------------------------------------------------------------------ another vendor's device, by model number

@pytest.mark.parametrize("message", [
    # ZLUDA on an RX 580 (round16 unrel-zluda-rx580-cublas-not-supported; vosen/ZLUDA#371)
    "RX 580 RuntimeError: CUDA error: CUBLAS_STATUS_NOT_SUPPORTED when calling `cublasSgemm( handle, opa, opb, m, n, "
    "k, &alpha, a, lda, b, ldb, &beta, c, ldc)`",
    # the same class in other cards' words: an RX 7900 XTX, a gfx target, an Instinct board
    "GPU: AMD RX 7900 XTX\ntorch.AcceleratorError: CUDA error: device kernel image is invalid",
    "arch check : FAIL (0/2 gfx1201)\ntorch.AcceleratorError: CUDA error: out of memory",
    "Instinct MI250X: RuntimeError: CUDA error: invalid device function",
])
def test_an_amd_card_named_by_its_model_sets_every_answer_aside(message: str) -> None:
    data = declined(message)
    aside = data["set_aside"]
    assert any(row["kind"] == "other-platform" and "amd-gpu-only" in row["text"] for row in aside), aside  # type: ignore[attr-defined,index]
    # the same CUDA words without another vendor's card, or with an NVIDIA card beside it, stay answered
    assert codes("RuntimeError: CUDA error: CUBLAS_STATUS_NOT_SUPPORTED when calling `cublasSgemm( handle, opa, "
                 "opb, m, n, k, &alpha, a, lda, b, ldb, &beta, c, ldc)`")[0] == "CD211"
    assert codes("GPU 0: NVIDIA GeForce RTX 3090, GPU 1: AMD RX 580\nRuntimeError: CUDA error: "
                 "CUBLAS_STATUS_NOT_SUPPORTED when calling `cublasSgemm( handle, opa, opb, m, n, k)`") != []


@pytest.mark.parametrize("message", [
    # vLLM-Ascend on 910B cards (round16 unrel-vllm-ascend-910b-glm51-kv-cache; vllm-project/vllm-ascend#9099)
    "[Bug]: ValueError: No available memory for the cache blocks\n两台机器每台八张910B的卡，vllm是0.18，部署多节点GLM5.1",
    "Atlas 800I A2 (Ascend 910B3 x8)\nValueError: No available memory for the cache blocks. Try increasing "
    "`gpu_memory_utilization` when initializing the engine.",
    "310P: ValueError: No available memory for the cache blocks",
])
def test_an_ascend_npu_named_by_its_chip_sets_every_answer_aside(message: str) -> None:
    declined(message)
    # vLLM's own words on an NVIDIA GPU stay out of memory (cases_4 cd1-vllm-budget-cache-blocks-*)
    assert codes("ValueError: No available memory for the cache blocks. Try increasing `gpu_memory_utilization` "
                 "when initializing the engine.")[0] == "CD109"
    # a number that merely contains 910 or 310 is no chip (a port, a GeForce 910M)
    assert codes("GeForce 910M\nValueError: No available memory for the cache blocks. Try increasing "
                 "`gpu_memory_utilization` when initializing the engine.")[0] == "CD109"


# ------------------------------------------------------------------------ a program's probe that went on

def test_a_probe_for_nvenc_without_a_context_that_went_on_is_declined() -> None:
    # HandBrake at start-up on an Intel-graphics machine (round11 r11-u-handbrake-nvenc-probe-intel; HandBrake#1874):
    # nv-codec-headers' loader called with no context prints the bare line
    data = declined("➜  ~ HandBrakeCLI --version\nCannot load libnvidia-encode.so.1\nCannot load libnvidia-encode.so.1\n"
                    "[08:14:27] hb_init: starting libhb thread\n[08:14:27] thread 7fccdf103700 started (\"libhb\")\n"
                    "HandBrake 20190105185838-3c95342-master")
    assert any(row["kind"] == "harmless" for row in data["set_aside"])  # type: ignore[attr-defined,index]
    declined("Cannot load libnvcuvid.so.1\n[00:00:01] hb_init: starting libhb thread")
    # FFmpeg's encoder printing it with its context is the failure (Huanshere/VideoLingo#406): CD108
    assert codes("[h264_nvenc @ 0x55bd94c6bb40] Cannot load libnvidia-encode.so.1\n[h264_nvenc @ 0x55bd94c6bb40] "
                 "The minimum required Nvidia driver for nvenc is 418.30 or newer")[0][:3] == "CD1"
    # the bare line with FFmpeg's failure after it stays the driver's (round9 r9-jellyfin-docker-no-libcuda): CD1
    assert codes("Cannot load libcuda.so.1\n[AVHWDeviceContext @ 0x562894e1d340] Could not dynamically load CUDA\n"
                 "Device creation failed: -1313558101.")[0][:3] == "CD1"


def test_a_framework_warning_the_run_outlived_is_declined() -> None:
    # PyTorch's cuDNN v8 API tried one plan and fell back; the animation finished (round15
    # un-liveportrait-cudnn-plan-fallback-warning; KlingAIResearch/LivePortrait#47)
    warning = ("venv\\lib\\site-packages\\torch\\nn\\modules\\conv.py:605: UserWarning: Plan failed with a "
               "cudnnException:\nCUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR: cudnnFinalize Descriptor Failed\n"
               "cudnn_status: CUDNN_STATUS_NOT_SUPPORTED (Triggered internally at\n"
               "..\\aten\\src\\ATen\\native\\cudnn\\Conv_v8.cpp:919.)\n  return F.conv3d(\n")
    declined(warning + "Animating... ━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━ 100% 0:00:29")
    declined(warning + "100%|██████████| 50/50 [00:12<00:00,  4.01it/s]")
    # the warning alone stays read as the development sets label it (round13 r13-alphadou-cudnn-plan-failed): CD3
    assert codes(warning)[0][:3] == "CD3"
    # a failure after the bar is still the failure
    assert codes(warning + "100%|██████████| 50/50\nTraceback (most recent call last):\nRuntimeError: cuDNN error: "
                 "CUDNN_STATUS_EXECUTION_FAILED") != []


# ------------------------------------------------------------------------ CD5: the isolated build without torch

def _answer(message: str) -> dict[str, object]:
    data = explain_text(message, None)
    assert data["exit_code"] == 0, message
    return data["matches"][0]  # type: ignore[no-any-return]


def test_uvs_isolated_build_without_torch_is_the_installs_and_its_fix_is_uvs() -> None:
    # uv's build frontend and its hint (astral-sh/uv crates/uv-build-frontend/src/error.rs), xformers under vllm
    message = ("  × Failed to build `xformers==0.0.28.post1`\n  ├─▶ The build backend returned an error\n"
               "  ╰─▶ Call to `setuptools.build_meta:__legacy__.build_wheel` failed (exit status: 1)\n\n      [stderr]\n"
               "      Traceback (most recent call last):\n        File \"<string>\", line 24, in <module>\n"
               "      ModuleNotFoundError: No module named 'torch'\n\n      hint: This error likely indicates that "
               "`xformers@0.0.28.post1` depends on `torch`, but doesn't declare it as a build dependency.")
    answer = _answer(message)
    assert answer["code"] == "CD520", answer
    assert "uv pip install --no-build-isolation xformers" in str(answer["fix"]), answer["fix"]


def test_pip_25s_one_line_summary_of_the_same_build() -> None:
    # pip 25's summary after the setup's own words asking for torch
    message = ("      RuntimeError: This package needs Torch to build. No module named 'torch'\n      [end of output]\n"
               "  note: This error originates from a subprocess, and is likely not a problem with pip.\n"
               "ERROR: Failed to build 'file:///root/must3r/dust3r/croco/models/curope' when getting requirements to "
               "build wheel")
    answer = _answer(message)
    assert answer["code"] == "CD520" and "pip install --no-build-isolation curope" in str(answer["fix"]), answer


def test_a_cut_output_inside_the_requirements_hook_of_a_package_that_imports_torch() -> None:
    # uv's output cut inside the PEP 517 requirements hook, for a package whose setup.py imports torch first
    message = ("  × Failed to build `mamba-ssm==2.2.4`\n  ├─▶ The build backend returned an error\n"
               "  ╰─▶ Call to `setuptools.build_meta:__legacy__.build_wheel` failed (exit status: 1)\n      [stderr]\n"
               "      Traceback (most recent call last):\n        File \"<string>\", line 14, in <module>\n"
               "        File \"/root/.cache/uv/builds-v0/.tmpX/lib/python3.11/site-packages/setuptools/build_meta.py\", "
               "line 331, in get_requires_for_build_wheel")
    assert _answer(message)["code"] == "CD520"
    # the same cut output for a package whose setup imports nothing of the GPU stack stays unread
    declined(message.replace("mamba-ssm==2.2.4", "pyyaml==5.4.1"))
    # and pip's banner alone, no traceback of the setup (cases_3's unrelated-flash-attn-build-isolation-no-torch), too
    declined("$ pip install flash_attn\nCollecting flash_attn\n  Using cached flash_attn-2.8.3.tar.gz (8.4 MB)\n"
             "  Getting requirements to build wheel ... error\n  error: subprocess-exited-with-error\n\n"
             "  × Getting requirements to build wheel did not run successfully.\n  │ exit code: 1\n"
             "  ╰─> [20 lines of output]")


# ------------------------------------------------------------------------ CD2: the toolkit the build runs

@pytest.mark.parametrize(("message", "version"), [
    # vLLM's early setup.py check of nvcc's version and the setups adapted from it (SageAttention, HART)
    ("RuntimeError: CUDA 12.4 or higher is required for compute capability 8.9.", "12.4"),
    ("RuntimeError: CUDA 11.1 or higher is required for compute capability 8.6.", "11.1"),
    ("RuntimeError: CUDA 12.0 or higher is required to build the package.", "12.0"),
])
def test_a_setups_own_cuda_requirement_in_vllms_words(message: str, version: str) -> None:
    answer = _answer(message)
    assert answer["code"] == "CD220" and f"CUDA {version}" in str(answer["fix"]), answer
    # the driver's requirement in the same words stays the driver's reader's, not the toolkit's
    assert "CD220" not in codes("The NVIDIA driver 470 or higher is required for this container.")


def test_the_nvcc_a_build_runs_does_not_exist() -> None:
    # distutils' spawn (cpython Lib/distutils/spawn.py: 'unable to execute %r: %s'): a CUDA_HOME written as a list
    listed = _answer("unable to execute '/opt/cuda:/opt/cuda/bin/nvcc': No such file or directory\n"
                     "error: command '/opt/cuda:/opt/cuda/bin/nvcc' failed with exit status 1")
    assert listed["code"] == "CD204", listed
    assert "export CUDA_HOME=/opt/cuda" in str(listed["fix"]) and "/opt/cuda:/opt/cuda/bin/nvcc" in str(listed["cause"])
    # a path that is simply not there: no toolkit where the build looks
    assert _answer("'/usr/local/cuda-11.3/bin/nvcc': No such file or directory")["code"] == "CD201"
    # a project's own tool of another name stays unread
    declined("unable to execute '/opt/tools/bin/mycc': No such file or directory")


def test_nccls_headers_are_nccls_not_the_toolkits() -> None:
    # a build with NCCL (Horovod's nccl_operations, PyTorch's ProcessGroupNCCL) and no NCCL development headers
    answer = _answer("horovod/common/ops/nccl_operations.h:22:10: fatal error: nccl.h: No such file or directory")
    assert answer["code"] == "CD208" and "NCCL" in str(answer["cause"]) and "libnccl-dev" in str(answer["fix"])
    assert _answer("torch/csrc/distributed/c10d/NCCLUtils.hpp:9:10: fatal error: nccl.h: No such file or "
                   "directory")["code"] == "CD208"
    # a project's own header of another name stays unread
    declined("src/comm.cpp:3:10: fatal error: mynccl.h: No such file or directory")


def test_a_library_named_by_the_loaders_search_pattern() -> None:
    # cuda_pathfinder's search pattern for a versioned Windows DLL (numba-cuda, cuda.core on Windows)
    answer = _answer('cuda.pathfinder._dynamic_libs.load_dl_common.DynamicLibNotFoundError:\n'
                     'Failure finding "nvJitLink*.dll"')
    assert answer["code"] == "CD203" and "nvJitLink" in str(answer["cause"]), answer
    assert _answer('Failure finding "cublas64_*.dll": no such file')["code"] == "CD203"
    # a glob of a project's own library stays unread
    declined('Failure finding "myplugin*.dll"')


def test_nvccs_own_sentence_for_an_architecture_is_the_compilers() -> None:
    # nvcc's sentence without its "nvcc fatal   :" prefix (a CI log's line): the toolkit's refusal (CD2), as every
    # development set labels nvcc's "Unsupported gpu architecture 'compute_XX'"
    assert codes("Unsupported gpu architecture 'compute_70'")[0] == "CD206"
    assert codes("nvcc fatal   : Unsupported gpu architecture 'compute_120'")[0] == "CD206"


def test_a_kernel_the_module_lacks_by_name_is_not_the_architecture() -> None:
    # huggingface/candle#1168's look-alike (round9 r9-unrel-candle-ucopy64-typo): a kernel name with no type an
    # architecture can lack, absent from the library's own module
    declined('Error: Cuda(Load { cuda: DriverError(CUDA_ERROR_NOT_FOUND, "named symbol not found"), module_name: '
             '"ucopy_64" })')
    # a bf16 kernel missing on a GPU below sm_80 stays the architecture's (huggingface/candle#353)
    assert codes('Error: DriverError(CUDA_ERROR_NOT_FOUND, "named symbol not found") when loading cast_f32_bf16')[0] == "CD404"
    # and a status that names no kernel (NVIDIA/stdexec#888) too
    assert codes("CUDA error cudaErrorSymbolNotFound [include/nvexec/stream/bulk.cuh:239]: named symbol not found")[0] == "CD404"


def test_msvcs_linker_without_a_cuda_import_library() -> None:
    # MSVC's linker (LNK1181/LNK1104) naming an import library of the toolkit's lib\x64: Triton's launcher stub, a
    # PyTorch extension, a CMake project on Windows
    answer = _answer("cuda_utils.c\nLINK : fatal error LNK1181: cannot open input file 'cuda.lib'")
    assert answer["code"] == "CD201" and "cuda.lib" in str(answer["cause"]) and "CUDA_PATH" in str(answer["fix"])
    assert _answer("LINK : fatal error LNK1104: cannot open file 'C:\\Program Files\\NVIDIA GPU Computing Toolkit\\CUDA"
                   "\\v11.8\\lib\\x64\\cublas.lib'")["code"] == "CD201"
    # a stale object file of the build's own (round5 yolov5obb-582-link-unrelated's shape) stays unread
    declined("LINK : fatal error LNK1181: cannot open input file 'build\\temp.win-amd64-cpython-39\\Release\\src\\"
             "nms_rotated_cpu.obj'")


@pytest.mark.parametrize("wheel", ["torchao-0.7.0-cp313-cp313-linux_x86_64.whl",
                                   "auto_gptq-0.7.1-cp311-cp311-win_amd64.whl"])
def test_pip_refusing_a_wheel_of_another_gpu_package_for_another_python(wheel: str) -> None:
    # pip's refusal of a wheel whose tags name another Python (torchao's and AutoGPTQ's per-CUDA, per-Python wheels)
    answer = _answer(f"ERROR: {wheel} is not a supported wheel on this platform.")
    assert answer["code"] == "CD520" and wheel in str(answer["fix"]), answer
    # a wheel of a package outside the GPU stack stays unread
    declined("ERROR: pyyaml-6.0-cp313-cp313-linux_x86_64.whl is not a supported wheel on this platform.")


def test_pip_says_torch_is_installed_yet_a_torch_importing_build_has_no_torch() -> None:
    # pip's own line that torch is there, then the build of a package whose setup imports torch without it: the
    # isolated build environment (the same cause as the build's stage words, here cut from the report)
    answer = _answer("Requirement already satisfied: torch>=2.1.0 in ./venv/lib/python3.11/site-packages (2.5.1)\n"
                     "Collecting mamba_ssm\n  Using cached mamba_ssm-2.2.4.tar.gz (91 kB)\n"
                     "ModuleNotFoundError: No module named 'torch'")
    assert answer["code"] == "CD520" and "pip install --no-build-isolation mamba-ssm" in str(answer["fix"]), answer
    # torch installed for one Python and a script run by another: no build, no torch-importing package: unread
    declined("Requirement already satisfied: torch in /usr/lib/python3/dist-packages (2.5.1)\n$ python3.12 train.py\n"
             "ModuleNotFoundError: No module named 'torch'")
