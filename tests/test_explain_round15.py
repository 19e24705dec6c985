"""Issue 41, round fifteen (builder e21): classes of families CD4 and CD5 read by their structure, from threads other
than the ones of benchmarks/explain_eval/cases_10.toml (the development cases, with their URLs): a build that lacks the
GPU's architecture in its own words, the architecture written as one number in either of CUDA's encodings; a
framework's banner naming the CUDA runtime its build was made with beside the GPU's capability, judged against the
first toolkit that knows the GPU and the one that dropped it; a CUDA extension's compiled module Windows cannot load;
ONNX Runtime's Windows loader naming the missing dependency; and installers refusing a CUDA extension's wheel (pip,
uv's URL dependency, libmamba's conflict). Each test pairs the class with the same words outside the GPU stack, or
naming no fault, which stay unclaimed."""

from __future__ import annotations

import pytest

from cudnn_doctor.commands.explain import explain_text
from tests.test_explain_filled import holes


def first_match(message: str) -> dict[str, object]:
    data = explain_text(message, None)
    assert data["exit_code"] == 0, message
    return data["matches"][0]  # type: ignore[no-any-return]


def unclaimed(message: str) -> bool:
    return explain_text(message, None)["exit_code"] == 1


def test_an_architecture_written_as_one_number_is_read_in_both_encodings() -> None:
    # sm_XY's (a miner's "architecture (103)", "gpu architecture 21") and __CUDA_ARCH__'s (ggml's "CUDA arch 520", 1200)
    from cudnn_doctor.explain.read_versions import arch_number

    assert [arch_number(n) for n in ("21", "30", "61", "103", "120", "121", "520", "750", "860", "1200")] == \
        ["2.1", "3.0", "6.1", "10.3", "12.0", "12.1", "5.2", "7.5", "8.6", "12.0"]


@pytest.mark.parametrize(("source", "message", "capability"), [
    # ggml's own check of its compiled architectures (ggml-org/llama.cpp#15589)
    ("ggml-org/llama.cpp#15589", "/root/llama.cpp/ggml/src/ggml-cuda/../ggml-cuda/common.cuh:112: ggml was not "
     "compiled with any CUDA arch <= 750", "7.5"),
    # a miner built without the GPU's architecture (fireice-uk/xmr-stak#258)
    ("fireice-uk/xmr-stak#258", "`WARNING: NVIDIA GPU 0: miner not compiled for the gpu architecture 21.`", "2.1"),
    # ACEMD's module without an image for the device (the development case acemd2016-gtx1070-noimage of
    # benchmarks/held_out/round6, the one real message of its kind)
    ("Acellera/acemd_issues#13", "cannot find image for module [.src/force/nonbonded.cu.] for device version 610", "6.1"),
])
def test_a_build_without_the_gpus_architecture_in_its_own_words(source: str, message: str, capability: str) -> None:
    first = first_match(message)
    assert first["code"] == "CD404", (source, first)
    assert capability in f"{first['cause']} {first['fix']}", (source, first["cause"])
    assert holes(first) == [], (source, first)
    # the same numbers where nothing says a build lacks them: a JVM's word size (JCuda's report), a CPU's architecture
    assert unclaimed("Operating system name: Linux\nArchitecture         : amd64\nArchitecture bit size: 64")
    # Direct3D's shader model, not a CUDA architecture (doitsujin/dxvk#4383, its title)
    assert unclaimed("Error A D3D11-Compatible GPU (shader model 5.0, directx 11.0) is required to run the engine")


def test_a_banner_whose_cuda_runtime_predates_the_gpu_is_the_frameworks_build() -> None:
    # PaddlePaddle/Paddle#35008: paddlepaddle-gpu's CUDA 10.2 build on an RTX 3090 (compute capability 8.6, CUDA 11.1+)
    banner = ("W0818 20:19:31.132983 607266 device_context.cc:362] Please NOTE: device: 0, GPU Compute Capability: 8.6, "
              "Driver API Version: 11.4, Runtime API Version: 10.2\nW0818 20:19:31.135051 607266 device_context.cc:372] "
              "device: 0, cuDNN Version: 8.2.")
    first = first_match(banner)
    assert first["code"] == "CD404" and "10.2" in str(first["cause"]) and "11.1" in str(first["cause"]), first
    assert "CUDA 11.1 or newer" in str(first["fix"]) and "CUDA 10.2" in str(first["fix"]), first["fix"]
    assert holes(first) == [], first
    # the same banner of a build whose runtime knows the GPU names no fault: PaddlePaddle/PaddleOCR#1046 (7.5 on 10.0),
    # PaddlePaddle/PaddleOCR#10863 (6.1 on 10.2)
    assert unclaimed("W1028 18:11:05.836931 11559 device_context.cc:237] Please NOTE: device: 0, CUDA Capability: 75, "
                     "Driver API Version: 11.1, Runtime API Version: 10.0")
    assert unclaimed("W0910 21:18:56.955332 3317990 gpu_resources.cc:61] Please NOTE: device: 0, GPU Compute Capability:"
                     " 6.1, Driver API Version: 12.0, Runtime API Version: 10.2")


def test_a_banner_whose_cuda_runtime_dropped_the_gpu_is_the_frameworks_build() -> None:
    # PaddlePaddle/Paddle#22749: Paddle built with CUDA 9.0 on a Fermi GPU (compute capability 2.1, dropped in CUDA 9.0)
    banner = ("W0225 20:29:53.582741 16840 device_context.cc:237] Please NOTE: device: 0, CUDA Capability: 21, Driver API "
              "Version: 9.0, Runtime API Version: 9.0\nW0225 20:29:54.531765 16840 device_context.cc:245] device: 0, "
              "cuDNN Version: 7.6.")
    first = first_match(banner)
    assert first["code"] == "CD404" and "2.1" in str(first["cause"]) and "9.0" in str(first["cause"]), first
    assert "starts at 3.0" in str(first["fix"]) and holes(first) == [], first
    # a Kepler 3.5 under a CUDA 8.0 build (PaddlePaddle/models#3100's banner) is within both bounds
    assert unclaimed("CUDA Capability: 35, Driver API Version: 9.0, Runtime API Version: 8.0")


def test_a_cuda_extensions_own_module_windows_cannot_load() -> None:
    # kijai/ComfyUI-HunyuanVideoWrapper#323: SageAttention's compiled _qattn
    first = first_match("!!! Exception during processing !!! Can't import SageAttention: DLL load failed while importing "
                        "_qattn: 找不到指定的模块。")
    assert first["code"] == "CD409", first
    # Triton's libtriton failing its DLL initialisation (the MSVC runtime beside python.exe, woct0rdho/triton-windows#27)
    # is not the GPU stack's, even under SageAttention's words (woct0rdho/triton-windows#71)
    assert unclaimed("ImportError: DLL load failed while importing libtriton: Eine DLL-Initialisierungsroutine ist "
                     "fehlgeschlagen.")
    assert unclaimed("Can't import SageAttention: DLL load failed while importing libtriton: 动态链接库(DLL)初始化例程失败。")


def test_onnx_runtimes_windows_loader_names_the_missing_dependency() -> None:
    # Gourieff/ComfyUI-ReActor#195 (the development case cd4-reactor-ort-cuda-provider-cublaslt12-cuda13 of
    # benchmarks/held_out/round14, the one clean fragment of the class): the provider's CUDA 12 cuBLASLt is missing
    first = first_match('onnxruntime_providers_cuda.dll" which depends on "cublasLt64_12.dll" which is missing')
    assert first["code"] == "CD203" and "cublasLt64_12.dll" in str(first["cause"]), first
    assert holes(first) == [], first


def test_onnx_runtimes_cpu_package_words_broken_over_two_lines() -> None:
    # s9roll7/animatediff-cli-prompt-travel#206 (the development case cd5-animatediff-ort-cpu-and-gpu-packages of
    # benchmarks/held_out/round14): the terminal broke the warning inside its words
    first = first_match("onnxruntime_inference_collection.py:69: UserWarning: Specified provider 'CUDAExecutionProvider' "
                        "is not in available provider\nnames.Available providers: 'AzureExecutionProvider, "
                        "CPUExecutionProvider'")
    assert first["code"] == "CD406", first


def test_pip_refusing_a_cuda_extensions_wheel() -> None:
    # Dao-AILab/flash-attention#1242 (a hand-converted wheel's tags), McGill-NLP/nano-aha-moment#3 (a cp310 wheel)
    for message, wheel in [
        ("ERROR: flash_attn-2.6.3-py311-cp311-win_amd64.whl is not a supported wheel on this platform.",
         "flash_attn-2.6.3-py311-cp311-win_amd64.whl"),
        ("ERROR: flash_attn-2.7.2.post1+cu12torch2.5cxx11abiFALSE-cp310-cp310-linux_x86_64.whl is not a supported wheel "
         "on this platform.", "flash_attn-2.7.2.post1+cu12torch2.5cxx11abifalse-cp310-cp310-linux_x86_64.whl"),
    ]:
        first = first_match(message)
        assert first["code"] == "CD520" and wheel in str(first["cause"]).lower(), first
        assert holes(first) == [], first
    # a wheel outside the GPU stack (python/cpython#89893)
    assert unclaimed("ERROR: PyYAML-6.0-cp39-cp39-manylinux_2_5_x86_64.manylinux1_x86_64.manylinux_2_12_x86_64."
                     "manylinux2010_x86_64.whl is not a supported wheel on this platform")


def test_uv_refusing_a_url_dependency_reads_the_urls_wheel() -> None:
    # PozzettiAndrea/ComfyUI-TRELLIS2#77 (the development case of benchmarks/held_out/round14, the source of the row):
    # a flash-attn CUDA wheel for Linux on Windows, its '+' quoted in the URL
    message = ("error: Failed to determine installation plan\n  Caused by: A URL dependency is incompatible with the "
               "current platform: https://github.com/Dao-AILab/flash-attention/releases/download/v2.8.3/flash_attn-2.8.3"
               "%2Bcu12torch2.8cxx11abiTRUE-cp312-cp312-linux_x86_64.whl\n\nhint: The wheel is compatible with Linux "
               "(`linux_x86_64`), but you're on Windows (`win_amd64`)")
    first = first_match(message)
    assert first["code"] == "CD520" and "flash_attn-2.8.3+cu12torch2.8" in str(first["cause"]), first
    assert holes(first) == [], first
    # a path dependency outside the GPU stack (astral-sh/uv#4088, its title)
    assert unclaimed("error: Failed to determine installation plan Caused by: A path dependency is incompatible with the "
                     "current platform")


def test_libmambas_leaf_that_conflicts_with_every_installable_version() -> None:
    # CSU-JPG/VCode#3: pytorch's CUDA builds each requiring a cudatoolkit no installable version meets
    message = ("   │     ├─ pytorch [1.0.1|1.1.0] would require\n"
               "   │     │  └─ cudatoolkit >=9.0,<9.1.0a0 *, which conflicts with any installable versions previously "
               "reported;")
    first = first_match(message)
    assert first["code"] == "CD521" and "cudatoolkit" in str(first["cause"]), first
    # the same leaf over a pin of Python alone names nothing of the GPU stack (mamba-org/mamba#2737)
    assert unclaimed("├─ pin-1 is not installable because there are no viable options\n│  ├─ pin-1 1 would require\n"
                     "│  │  └─ python 2.7.* , which conflicts with any installable versions previously reported;")


def test_an_architecture_list_and_the_gpu_it_got() -> None:
    # vllm-project/vllm#40082: CuTe DSL's MMA op admits one architecture list and names the GPU's after "but got"; the
    # module path cutlass/cute/nvgpu is CUTLASS's, not an NVIDIA vGPU's
    message = ('(EngineCore pid=87)   File "/usr/local/lib/python3.12/dist-packages/nvidia_cutlass_dsl/python_packages/'
               'cutlass/cute/nvgpu/warp/mma.py", line 139, in __post_init__\n(EngineCore pid=87)     raise OpError(\n'
               "(EngineCore pid=87) cutlass.cute.nvgpu.common.OpError: OpError: expects arch to be one of ['sm_120a'], "
               "but got Arch.sm_121a")
    first = first_match(message)
    assert first["code"] == "CD404" and "12.1" in str(first["cause"]), first
    assert all(match["code"] != "CD102" for match in explain_text(message, None)["matches"])  # type: ignore[union-attr]


def test_a_framework_pinned_past_its_last_release_for_the_platform() -> None:
    # pytorch/pytorch#131766: an Intel Mac, whose releases end at torch 2.2.2 (the last with macOS x86_64 wheels)
    message = ("ERROR: Could not find a version that satisfies the requirement torch==2.4 (from versions: 1.11.0, 1.12.0, "
               "1.12.1, 1.13.0, 1.13.1, 2.0.0, 2.0.1, 2.1.0, 2.1.1, 2.1.2, 2.2.0, 2.2.1, 2.2.2)\n"
               "ERROR: No matching distribution found for torch==2.4")
    first = first_match(message)
    assert first["code"] == "CD520" and "2.2.2" in str(first["fix"]) and "torch==2.4" in str(first["fix"]), first
    assert holes(first) == [], first
    # a pin older than every release this Python has (a Python too new for it) says nothing of the platform, and is
    # no build of that release for this Python (CD520, round nineteen: round five labelled its one such case
    # unrelated, rounds eleven, eighteen and nineteen CD5): the first release offered named, not the platform's last
    older = explain_text("ERROR: Could not find a version that satisfies the requirement torch==1.8.1 (from versions: "
                         "1.13.0, 1.13.1, 2.0.0, 2.0.1, 2.1.0, 2.1.1, 2.1.2, 2.2.0, 2.2.1, 2.2.2, 2.3.0, 2.3.1, 2.4.0, "
                         "2.4.1, 2.5.0, 2.5.1, 2.6.0, 2.7.0, 2.7.1, 2.8.0)\nERROR: No matching distribution found for "
                         "torch==1.8.1", None)["matches"][0]
    assert older["code"] == "CD520" and "1.13.0 and later" in str(older["fix"]) and "macOS" not in str(older["fix"])


def test_a_build_without_code_for_the_gpu_explains_the_kernels_that_fail_under_it() -> None:
    # PaddlePaddle/Paddle#15140: Paddle 1.2's CUDA 9.0 build on an RTX 2070 (compute capability 7.5, CUDA 10.0+): the
    # cuDNN convolution that fails after the banner is the build's missing code, not cuDNN's
    message = ("W0102 15:54:15.308672  4412 device_context.cc:203] Please NOTE: device: 0, CUDA Capability: 75, Driver "
               "Version: 10.0, Runtime Version: 9.0\nW0102 15:54:15.308725  4412 device_context.cc:210] device: 0, cuDNN "
               "Version: 7.0.\nTraceback (most recent call last):\n  File \"train.py\", line 66, in <module>\n    "
               "fetch_list=[avg_cost, accuracy, param_name])\n  File \"/usr/local/lib/python3.5/dist-packages/paddle/"
               "fluid/executor.py\", line 472, in run\n    self.executor.run(program.desc, scope, 0, True, True)\n"
               "paddle.fluid.core.EnforceNotMet: CUDNN_STATUS_EXECUTION_FAILED at [/paddle/paddle/fluid/operators/"
               "conv_cudnn_op.cu.cc:230]")
    codes = [match["code"] for match in explain_text(message, None)["matches"]]  # type: ignore[union-attr]
    assert codes[0] == "CD404" and "CD316" in codes[1:], codes
    # the same status under a build that fits the GPU stays cuDNN's (the banner of PaddlePaddle/PaddleOCR#5089)
    fits = message.replace("CUDA Capability: 75", "CUDA Capability: 70").replace("Runtime Version: 9.0",
                                                                                  "Runtime Version: 10.1")
    assert explain_text(fits, None)["matches"][0]["code"] == "CD316"  # type: ignore[index]


def test_mmcvs_ops_without_their_cuda_implementation() -> None:
    # open-mmlab/mmdetection#7788: `pip install mmcv` installed MMCV without CUDA ops; its registry finds no CUDA
    # implementation of the op
    first = first_match("RuntimeError: nms_impl: implementation for device cuda:0 not found.")
    assert first["code"] == "CD406" and "mmcv" in str(first["cause"]).lower() and "mim install mmcv" in str(first["fix"])
    assert holes(first) == [], first


def test_a_visual_studio_project_that_imports_another_cudas_msbuild_rules() -> None:
    # AlexeyAB/darknet#603: the project's CUDA 9.1 rules are not in this Visual Studio (CUDA 9.1 not installed)
    message = ('D:\\darknet-master\\darknet-master\\build\\darknet\\darknet.vcxproj(55,5): The imported project "C:\\Program '
               'Files (x86)\\MSBuild\\Microsoft.Cpp\\v4.0\\V140\\BuildCustomizations\\CUDA 9.1.props" was not found. Confirm '
               "that the path in the <Import> declaration is correct, and that the file exists on disk.")
    first = first_match(message)
    assert first["code"] == "CD208" and "CUDA 9.1.props" in str(first["cause"]), first
    assert holes(first) == [], first
    # the same MSBuild words for another build customisation name nothing of CUDA (ashmind/SharpLab#464: MASM's rules)
    assert unclaimed('C:\\Projects\\OpenSource\\SharpLab\\source\\Native.Profiler\\Native.Profiler.vcxproj(30,5): '
                     'error MSB4019: The imported project "C:\\BuildCustomizations\\masm.props" was not found.')


def test_opencvs_dnn_backend_on_a_gpu_its_build_has_no_code_for() -> None:
    # opencv/opencv#25744 (its title): OpenCV's CUDA DNN backend checks the GPU against the build's CUDA_ARCH_BIN/PTX
    message = ("error: (-216:No CUDA support) OpenCV was not built to work with the selected device. Please check "
               "CUDA_ARCH_PTX or CUDA_ARCH_BIN in your build configuration. in function 'initCUDABackend'a support")
    first = first_match(message)
    assert first["code"] == "CD404" and "CUDA_ARCH_BIN" in str(first["fix"]), first
    assert holes(first) == [], first
