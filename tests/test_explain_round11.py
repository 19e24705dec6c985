"""Issue 41, round eleven: classes read from a message's structure and judged against compat/ data.

A claim over the frameworks' pins needs NVIDIA evidence (a CUDA variant index, +cuNNN, CUDA/cuDNN/NVIDIA named): a
+cpu, ROCm or torch-npu build is none ([framework_swap] other_accelerators). The solvers' own words (conda's classic
'conflicts for:', libmamba's and resolvo's 'no viable options', poetry's 'Unable to find installation candidates');
a CUDA extension's setup.py that guessed its prebuilt wheel's URL ([prebuilt_wheel]); the NVIDIA HPC SDK's target
keywords and toolkit choice; PyTorch's ninja, CMake's library root, NVRTC's missing header. Every message is quoted
from the public thread or page beside it (none of them in an evaluation set)."""

from __future__ import annotations

import pytest

from cudnn_doctor.commands.explain import explain_text
from cudnn_doctor.knowledge import query

CASES = [
    # libmamba's tree (a blog post quoting LibMambaUnsatisfiableError for pytorch 2.3.1 with pytorch-cuda 12.1)
    ("libmamba: pytorch-cuda 12.1 against a cuda11.8 pytorch", "CD521",
     "The following packages are incompatible\n"
     "\u251c\u2500 pytorch-cuda 12.1**  is not installable because it requires\n"
     "\u2502  \u2514\u2500 cuda-cudart >=12.1,<12.2 , which does not exist (perhaps a missing channel);\n"
     "\u2514\u2500 pytorch ==2.3.1 py3.12_cuda11.8_cudnn8_0 is not installable because it requires\n"
     "   \u2514\u2500 pytorch-cuda >=11.8,<11.9  but there are no viable options\n"
     "      \u251c\u2500 pytorch-cuda 11.8 would require\n"
     "      \u2502  \u2514\u2500 cuda-cudart >=11.8,<12.0 , which does not exist (perhaps a missing channel);"),
    # libmamba's tree for torchtext, whose pytorch builds need a cudatoolkit the channels lack
    ("libmamba: torchtext's pytorch needs cudatoolkit 11.1", "CD521",
     "\u2514\u2500 torchtext is not installable because there are no viable options\n"
     "   \u251c\u2500 torchtext 0.10.0 would require\n"
     "   \u2502  \u2514\u2500 pytorch 1.9.0  but there are no viable options\n"
     "   \u2502     \u251c\u2500 pytorch [1.10.0|1.10.1|...|1.9.1] would require\n"
     "   \u2502     \u2502  \u2514\u2500 cudatoolkit >=11.1,<11.2 , which does not exist (perhaps a missing channel);"),
    # cvxgrp/pymde#73: poetry on a machine without a wheel of NVIDIA's cuDNN
    ("cvxgrp/pymde#73", "CD520", " Unable to find installation candidates for nvidia-cudnn-cu11"),
    # a flash-attn install note: the prebuilt wheel's download cut off by DNS
    ("flash-attn install note (Name or service not known)", "CD511",
     "      torch.__version__  = 2.2.0+cu121\n      \n      running bdist_wheel\n"
     "      Guessing wheel URL:  https://github.com/Dao-AILab/flash-attention/releases/download/v2.5.3/"
     "flash_attn-2.5.3+cu122torch2.2cxx11abiFALSE-cp311-cp311-linux_x86_64.whl\n"
     "      error: <urlopen error [Errno -2] Name or service not known>\n      [end of output]"),
    # Tanveer81/ReVisionLLM#4: no prebuilt wheel of flash-attn 2.5.6 for torch 2.7
    ("Tanveer81/ReVisionLLM#4", "CD520",
     "      running bdist_wheel\n      Guessing wheel URL:  https://github.com/Dao-AILab/flash-attention/releases/download/"
     "v2.5.6/flash_attn-2.5.6+cu122torch2.7cxx11abiTRUE-cp310-cp310-linux_x86_64.whl\n"
     "      Precompiled wheel not found. Building from source...\n      running build"),
    # a VASP build note: nvfortran 25.1 does not know Blackwell's cc120
    ("VASP nvhpc build note (nvfortran 25.1, cc120)", "CD206",
     "nvfortran-Error-Switch -gpu with unknown keyword cc120"),
    # a toolchain note: nvc++ 24.11 on a machine without a driver, before NVHPC_CUDA_HOME was set
    ("nvc++ 24.11 toolchain note", "CD201",
     "nvc++-Error-A CUDA toolkit matching the current driver version (0) or a supported older version (11.8) was not "
     "installed with this HPC SDK.\nnvc++ rc=1"),
    # unlimblue/KNN_CUDA#14
    ("unlimblue/KNN_CUDA#14", "CD208",
     ">   File \"/home/liy0r/anaconda3/envs/pt/lib/python3.7/site-packages/torch/utils/cpp_extension.py\", line 1430, in "
     "verify_ninja_availability\n>     raise RuntimeError(\"Ninja is required to load C++ extensions\")\n"
     "> RuntimeError: Ninja is required to load C++ extensions"),
    # vllm-project/vllm#6134
    ("vllm-project/vllm#6134", "CD208", "[Installation]: Couldn't find CUDA library root."),
    # PaddlePaddle/Paddle#74894: two exact pins of NVIDIA's CUDA runtime wheel (the resolver's header left off)
    ("PaddlePaddle/Paddle#74894", "CD521",
     "    torch 2.5.1 depends on nvidia-cuda-runtime-cu12==12.4.127; platform_system == \"Linux\" and platform_machine == "
     "\"x86_64\"\n    paddlepaddle-gpu 3.1.0 depends on nvidia-cuda-runtime-cu12==12.3.101; platform_system == \"Linux\" "
     "and platform_machine == \"x86_64\""),
    # young-geng/EasyLM#92: a lower bound against an exact pin below it
    ("young-geng/EasyLM#92", "CD521",
     "    jax[cuda11-pip] 0.4.14 depends on nvidia-cuda-runtime-cu11>=11.8; extra == \"cuda11_pip\"\n"
     "    torch 2.0.1 depends on nvidia-cuda-runtime-cu11==11.7.99; platform_system == \"Linux\" and platform_machine == "
     "\"x86_64\""),
    # Vision-CAIR/MiniGPT4-video#45: the user's pin of NCCL against torch's
    ("Vision-CAIR/MiniGPT4-video#45", "CD521",
     "    The user requested nvidia-nccl-cu12==2.18.1\n    torch 2.2.2 depends on nvidia-nccl-cu12==2.19.3; "
     "platform_system == \"Linux\" and platform_machine == \"x86_64\""),
    # a Keras CuDNNLSTM on a tensorflow-gpu environment that registered no GPU (a public notebook's traceback)
    ("Keras CuDNNLSTM, Registered devices: [CPU]", "CD406",
     "InvalidArgumentError: No OpKernel was registered to support Op 'CudnnRNN' used by node cu_dnnlstm_1/CudnnRNN "
     "(defined at D:\\anaconda3\\envs\\tensorflow-gpu\\lib\\site-packages\\keras\\layers\\cudnn_recurrent.py:517) "
     "with these attrs: [is_training=true, T=DT_FLOAT, rnn_mode=\"lstm\"]\nRegistered devices: [CPU]\n"
     "Registered kernels:\n  device='GPU'; T in [DT_HALF]\n  device='GPU'; T in [DT_FLOAT]\n  device='GPU'; T in [DT_DOUBLE]"),
    # a TRL/transformers run on a Turing GPU (a Kaggle notebook's note quoting the error)
    ("SFTConfig bf16=True on a Kaggle T4", "CD404", "ValueError: Your setup doesn't support bf16/gpu."),
    # a kernel compiled with NVRTC, which searches no toolkit include folder by itself
    ("an NVRTC matmul kernel (cuda_bf16.h)", "CD201",
     "E           RuntimeError: Kernel compilation failed:\nE           matmul_kernel.cu(2): catastrophic error: cannot "
     "open source file \"cuda_bf16.h\"\nE             #include <cuda_bf16.h>"),
]


@pytest.mark.parametrize(("source", "code", "message"), CASES, ids=[c[0] for c in CASES])
def test_each_class_answers_with_its_code(source: str, code: str, message: str) -> None:
    data = explain_text(message, None)
    assert data["matches"], source
    assert data["matches"][0]["code"] == code, (source, [m["code"] for m in data["matches"]])


UNRELATED = [
    # an Ascend machine: torch-npu pins a +cpu torch (a public build note quoting pip 24's resolver)
    ("torch-npu's +cpu torch", "  ERROR: Cannot install torch-npu==2.7.1 and torch==2.7.1 because these package "
     "versions have conflicting dependencies.\n\n  The conflict is caused by:\n      The user requested torch==2.7.1\n"
     "      torch-npu 2.7.1 depends on torch==2.7.1+cpu\n\n  Additionally, some packages in these conflicts have no "
     "matching distributions available for your environment:\n      torch\n"),
    # drmingler/docling-api#10: poetry finds no torch for Python 3.13, nothing of CUDA in it
    ("drmingler/docling-api#10", "  RuntimeError\n\n  Unable to find installation candidates for torch (2.5.1)\n\n"
     "  at ~/.local/pipx/venvs/poetry/lib/python3.13/site-packages/poetry/installation/chooser.py:74 in choose_for"),
    # a project's own header, not the toolkit's
    ("a project's own header", "kern.cu(4): catastrophic error: cannot open source file \"my_kernel_utils.h\""),
    # two requirements of one NVIDIA wheel that one release meets (nccl 2.20.5 is >=2.20): no clash
    ("pins that overlap", "mypkg 1.0 requires nvidia-nccl-cu12>=2.20\ntorch 2.3.1 requires nvidia-nccl-cu12==2.20.5"),
    # TensorFlow on iOS: an op with no kernel at all, no GPU in sight
    ("TensorFlow on iOS", "Invalid argument: No OpKernel was registered to support Op 'Equal' with these attrs.  "
     "Registered devices: [CPU], Registered kernels:\n  <no registered kernels>"),
    # a CPU wheel's URL guessed by a setup.py: no CUDA build named
    ("a setup.py guessing a CPU wheel", "Guessing wheel URL:  https://example.org/releases/mypkg-1.0-cp311-cp311-"
     "linux_x86_64.whl\nerror: <urlopen error [Errno 104] Connection reset by peer>"),
]


@pytest.mark.parametrize(("source", "message"), UNRELATED, ids=[u[0] for u in UNRELATED])
def test_look_alikes_are_never_claimed(source: str, message: str) -> None:
    assert explain_text(message, None)["matches"] == [], source


def test_the_guessed_url_and_the_network_error_reach_the_fix() -> None:
    url = ("https://github.com/state-spaces/mamba/releases/download/v2.2.2/mamba_ssm-2.2.2+cu122torch2.3cxx11abiFALSE-"
           "cp310-cp310-linux_x86_64.whl")
    message = (f"      Guessing wheel URL:  {url}\n      error: <urlopen error [SSL: CERTIFICATE_VERIFY_FAILED] certificate "
               "verify failed: self-signed certificate in certificate chain (_ssl.c:1006)>")
    first = explain_text(message, None)["matches"][0]
    assert first["code"] == "CD511"
    assert f"pip install {url}" in first["fix"] and "CERTIFICATE_VERIFY_FAILED" in first["fix"]
    assert "mamba-ssm" in first["fix"]


def test_a_url_with_shell_words_is_not_put_in_a_command() -> None:
    message = ("Guessing wheel URL:  https://example.org/$(touch x)/flash_attn-2.5.3+cu122torch2.2cxx11abiFALSE-cp311-"
               "cp311-linux_x86_64.whl\nerror: <urlopen error timed out>")
    assert all("$(" not in match["fix"] for match in explain_text(message, None)["matches"])


def test_the_hpc_sdk_target_names_the_gpu_and_the_option() -> None:
    first = explain_text("nvc++-Error-Switch -ta with unknown keyword cc89", None)["matches"][0]
    assert first["code"] == "CD206"
    assert "-gpu=cc89" in first["fix"] and "8.9" in first["fix"]


def test_a_release_candidates_driver_is_no_builds_floor() -> None:
    floor = query.toolkit_min_driver("11.0", "linux")
    assert floor is not None and floor.version == "450.51.05"  # CUDA 11.0.2 GA, not 11.0.1 RC's 450.36.06


def test_a_phrase_with_its_own_fix_answers_with_it() -> None:
    first = explain_text("ValueError: Your setup doesn't support bf16/gpu.", None)["matches"][0]
    assert "fp16=True" in first["fix"] and "get_device_capability" in first["fix"]
    assert first["framework"] != "onnxruntime"  # "support " is no ONNX Runtime marker ("ort ")


def test_prefix_and_bound_clauses_are_compared_as_intervals() -> None:
    from cudnn_doctor.explain.read_packages import _below, _interval

    prefix, floor = _interval("==", (13, 1), True), _interval(">=", (13, 3, 0, 5), False)
    assert _below(prefix[1], floor[0])  # 13.1.* is below 13.3.0.5
    compatible = _interval("~=", (2, 20), False)
    assert not _below(compatible[1], _interval("==", (2, 21, 5), False)[0])  # ~=2.20 allows 2.21.5


def test_a_conda_solvers_conflict_is_answered_in_condas_terms() -> None:
    message = CASES[0][2]  # the libmamba tree above
    first = explain_text(message, None)["matches"][0]
    assert first["code"] == "CD521" and "cuda-version" in first["fix"] and "pip install" not in first["fix"]
