"""`explain` reads the structure of a message, not its phrasing: real messages of every family
(tests/explain_messages.py, each with its public source) get a cause of the right family, unrelated
errors are never claimed, and the data tables behind the reader are whole."""

from __future__ import annotations

import pytest

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib  # type: ignore[no-redef]

from cudnn_doctor.codes import CODES
from cudnn_doctor.commands.explain import explain_text
from cudnn_doctor.explain.read_libraries import parse_library
from cudnn_doctor.explain.reader import read
from cudnn_doctor.knowledge.data import compat_dir
from tests.conftest import Machine
from tests.explain_messages import FAMILIES, UNRELATED


@pytest.fixture
def machine(machine_in_process: Machine) -> Machine:
    """The CLI runs in the test's own process (conftest.run_in_process): nothing here needs a process of its own."""
    return machine_in_process


@pytest.mark.parametrize(("source", "family", "message"), FAMILIES, ids=[f[0] for f in FAMILIES])
def test_a_real_message_gets_a_cause_of_its_family(source: str, family: str, message: str) -> None:
    data = explain_text(message, None)
    assert data["exit_code"] == 0, source
    first = data["matches"][0]
    assert first["code"].startswith(family), (source, [m["code"] for m in data["matches"]])
    assert not any(m["code"].startswith("CD6") for m in data["matches"])  # the bench's codes never answer
    assert first["cause"] and first["fix"] and first["source"]
    assert all("{" not in match["fix"] and "<fix>" not in match["fix"] for match in data["matches"])


@pytest.mark.parametrize(("what", "message"), UNRELATED, ids=[u[0] for u in UNRELATED])
def test_an_unrelated_error_is_never_claimed(what: str, message: str) -> None:
    assert explain_text(message, None)["matches"] == [], what


def test_library_names_in_every_form() -> None:
    cases = {
        "libcudnn_cnn_infer.so.8": ("cudnn", "cudnn_major", "8"), "cudnn64_9.dll": ("cudnn", "cudnn_major", "9"),
        "cudnn_ops_infer64_8.dll": ("cudnn", "cudnn_major", "8"), "libcudnn_engines_tensor_ir.so.9": ("cudnn", "cudnn_major", "9"),
        "cudart64_110.dll": ("cuda", "cuda_major", "11"), "libcublasLt.so.12": ("cuda", "cuda_major", "12"),
        "nvrtc64_120_0.dll": ("cuda", "cuda_major", "12"), "libnvJitLink.so.13": ("cuda", "cuda_major", "13"),
        "cufft64_10.dll": ("cuda", "cuda_major", "11"), "libcuda.so.1": ("driver", None, None), "nvcuda.dll": ("driver", None, None),
        "libnvidia-ml.so.1": ("driver", None, None), "libnvinfer.so.10": ("framework", None, None),
        "onnxruntime_providers_cuda.dll": ("framework", None, None), "libtorch_cuda.so": ("framework", None, None),
        "c10_cuda.dll": ("framework", None, None), "libjnind4jcuda.so": ("framework", None, None),
    }
    for file, (part, key, value) in cases.items():
        facts = read(f"OSError: {file}: cannot open shared object file: No such file or directory")
        assert [lib.part for lib in facts.libraries] == [part], file
        if key:
            assert getattr(facts.libraries[0], key) == value, file
    for other in ("libGL.so.1", "libstdc++.so.6", "kernel32.dll", "python311.dll"):
        assert parse_library(other) is None, other


def test_status_codes_by_name_number_and_text() -> None:
    assert [s.name for s in read("CUDNN failure 4: CUDNN_STATUS_INTERNAL_ERROR ; GPU=0").statuses] == ["CUDNN_STATUS_INTERNAL_ERROR"]
    assert [s.name for s in read("RuntimeError: (PreconditionNotMet) CUDNN error(1002), xx").statuses] == \
        ["CUDNN_STATUS_SUBLIBRARY_VERSION_MISMATCH"]
    assert [s.name for s in read("CUDA failure 100: something ; GPU=0").statuses] == ["cudaErrorNoDevice"]
    assert [s.name for s in read("failed call to cuInit: CUDA_ERROR_UNKNOWN: unknown error").statuses] == ["CUDA_ERROR_UNKNOWN"]
    assert [s.name for s in read("RuntimeError: CUDA error: no kernel image is available for execution on the device").statuses] \
        == ["cudaErrorNoKernelImageForDevice"]


def test_versions_and_architectures_in_any_wording() -> None:
    pair = read("Mixed dnn version. The header is version 8.9.2 while the library is version 8.6.0").versions[0]
    assert (pair.subject, pair.built, pair.found) == ("cudnn-header", "8.9.2", "8.6.0")
    pair = read("RuntimeError: The detected CUDA version (12.1) mismatches the version that was used to compile "
                "PyTorch (11.8). Please make sure to use the same CUDA versions.").versions
    assert pair and pair[0].subject == "cuda"
    arch = read("NVIDIA GeForce RTX 5090 with CUDA capability sm_120 is not compatible with the current PyTorch installation.")
    assert [(a.compute_capability, bool(a.cue)) for a in arch.archs] == [("12.0", True)]
    assert read("nvcc -gencode arch=compute_86,code=sm_86 -O3 kernel.cu").archs[0].cue is None  # a build line, no complaint


def test_every_code_the_tables_name_is_registered() -> None:
    for subject, table in (("status_codes", "status"), ("status_codes", "phrase")):
        rows = tomllib.loads((compat_dir() / f"{subject}.toml").read_text())[table]
        for row in rows:
            assert not row["finding"] or row["finding"] in CODES, row
            assert not row["finding"].startswith("CD6"), row


def test_the_cli_reads_a_message_and_says_what_it_read(machine: Machine) -> None:
    message = "OSError: libcublasLt.so.12: cannot open shared object file: No such file or directory"
    result = machine.run("explain", message, "--offline-only", "--json")
    assert result.exit_code == 0
    assert result.json["matches"][0]["code"] == "CD203"
    assert result.json["facts"]["libraries"][0]["cuda_major"] == "12"
    text = machine.run("explain", message, "--offline-only", "-v")
    assert "CD203" in text.stdout and "libcublasLt.so.12 (cuda, missing)" in text.stdout


def test_the_machine_view_sets_the_cuda_major_named_against_the_toolkits_here(machine: Machine, tmp_path) -> None:
    from tests.test_check import make_toolkit

    make_toolkit(machine.root, "12.4.1", runtime=12040)
    # cupy/cupy#8317 names the CUDA 12 NVRTC; a CUDA 11 library is named as well to see both answers
    for major, expect in (("12", "CUDA 12 is here"), ("11", "this machine has no CUDA 11 toolkit")):
        message = f"RuntimeError: CuPy failed to load libnvrtc.so.{major}: OSError: libnvrtc.so.{major}: cannot open " \
                  "shared object file: No such file or directory"
        data = machine.run("explain", message, "--json").json
        assert data["matches"][0]["code"] == "CD203"
        summary = " ".join(data["machine"]["summary"])
        assert expect in summary and "12.4.1" in summary, summary


HEALTHY = [
    # NVIDIA/tensorflow#110 (a log line of a working TensorFlow)
    "2024-06-19 16:06:44.996120: I tensorflow/stream_executor/platform/default/dso_loader.cc:49] "
    "Successfully opened dynamic library libcudnn.so.8",
    # tensorflow/tensorflow#63702
    "I tensorflow/stream_executor/cuda/cuda_dnn.cc:384] Loaded cuDNN version 8600",
    # Theano/Theano#6690
    "Using cuDNN version 7402 on context None",
    # nvidia-smi's header on a working machine (e.g. PKU-YuanGroup/Video-LLaVA#22)
    "| NVIDIA-SMI 535.154.05             Driver Version: 535.154.05   CUDA Version: 12.3     |",
    # TensorFlow creating its GPU device (tensorflow/tensorflow issue logs)
    "I tensorflow/core/common_runtime/gpu/gpu_device.cc:1616] Created device /job:localhost/replica:0/task:0/device:GPU:0 "
    "with 9653 MB memory:  -> device: 0, name: NVIDIA GeForce RTX 3080 Ti, pci bus id: 0000:01:00.0, compute capability: 8.6",
    # a build line
    "nvcc -gencode arch=compute_86,code=sm_86 -O3 -c kernel.cu -o kernel.o",
]


@pytest.mark.parametrize("line", HEALTHY)
def test_lines_of_a_working_stack_are_not_claimed(line: str) -> None:
    assert explain_text(line, None)["matches"] == []


def test_the_bench_codes_never_answer_a_message() -> None:
    rows = tomllib.loads((compat_dir() / "errors.toml").read_text())["error"]
    assert not [row["id"] for row in rows if row["code"].startswith("CD6")]


# The loader's general words (a too old glibc/libstdc++, a wrong ELF class) are the doctor's business only
# where a library of the GPU stack is involved; the same words about another program are not claimed.
@pytest.mark.parametrize(("source", "message", "claimed"), [
    ("pyg-team/pyg-lib#548 (a torch extension built on a newer glibc)",
     "OSError: /lib/x86_64-linux-gnu/libc.so.6: version `GLIBC_2.33' not found (required by "
     "/home/ee615/anaconda3/envs/qcnet/lib/python3.10/site-packages/libpyg.so)", False),
    ("apache/mxnet#12837 (a C++ example built with a newer gcc)",
     "./alexnet: /usr/lib/x86_64-linux-gnu/libstdc++.so.6: version `GLIBCXX_3.4.23' not found (required by ./alexnet)",
     False),
    ("MotrixLab/SMPLer-X#37 (a 32-bit libcuda first on the path)",
     "Could not load library libcudnn_cnn_infer.so.8. Error: libcuda.so: wrong ELF class: ELFCLASS32", True),
])
def test_general_loader_words_are_claimed_only_for_the_gpu_stack(source: str, message: str, claimed: bool) -> None:
    data = explain_text(message, None)
    assert (data["exit_code"] == 0) is claimed, source


# ------------------------------------------------------------------ libraries named by their product name


@pytest.mark.parametrize(("message", "name", "part"), [
    ("The cuSPARSE library was not found", "cusparse", "cuda"),  # the product-name form the held-back scoring named
    ("cuDNN library not found", "cudnn", "cudnn"),
    ("Could not find cuBLAS", "cublas", "cuda"),
    ("CMake Error at cmake/cudnn.cmake:31 (message):\n  Can not find CuDNN Library", "cudnn", "cudnn"),  # YOLOX#650
    ("Unable to find cudart library.", "cudart", "cuda"),  # li-plus/chatglm.cpp#89
    ("NVML library not found", "nvidia-ml", "driver"),
])
def test_a_library_named_by_its_product_is_a_missing_library(message: str, name: str, part: str) -> None:
    libraries = read(message).libraries
    assert [(lib.name, lib.part, lib.failure) for lib in libraries] == [(name, part, "missing")], message


@pytest.mark.parametrize("message", [
    "Successfully installed nvidia-cudnn-cu12-9.1.0.70 nvidia-cublas-cu12-12.4.5.8",  # a package, not the library
    "I tensorflow/stream_executor/cuda/cuda_dnn.cc:384] Loaded cuDNN version 8600",
    "torch.backends.cudnn.enabled = True; cudnn_ops_infer64_8.dll found",
    "cuDNN: 8.0.4, GPU count: 1. OpenCV version: 4.5.0 not found in cache",  # the words of another clause
    "cuBLAS error: CUBLAS_STATUS_NOT_SUPPORTED",
    "fatal error: cudnn.h: No such file or directory not found",
])
def test_product_names_in_other_roles_are_not_missing_libraries(message: str) -> None:
    assert not [lib for lib in read(message).libraries if lib.failure == "missing" and "." not in lib.file], message


def test_every_product_alias_is_a_whole_word_of_one_library() -> None:
    rows = tomllib.loads((compat_dir() / "libraries.toml").read_text())["library"]
    aliases = [alias for row in rows for alias in row.get("aliases", [])]
    assert len(aliases) == len(set(aliases))
    assert {"cudnn", "cublas", "cusparse", "cufft", "curand", "cusolver", "nvrtc", "nvml"} <= set(aliases)


# ------------------------------------------------------------------------------- resolver conflicts (CD521)


def test_a_resolver_conflict_names_which_package_pins_which_version() -> None:
    # astral-sh/uv#10604: uv could not find nvidia-cudnn-cu12==9.1.0.70, which torch==2.4.1 pins
    message = next(m for s, _, m in FAMILIES if s == "astral-sh/uv#10604")
    conflict = read(message).conflicts[-1]
    assert conflict.tool == "uv" and any(p.startswith("nvidia-cudnn-cu12") for p in conflict.packages)
    assert any("depends on nvidia-cudnn-cu12" in pin for pin in conflict.pins)
    first = explain_text(message, None)["matches"][0]
    assert first["code"] == "CD521" and "nvidia-cudnn-cu12" in first["cause"] and "pip install torch" in first["fix"]


def test_a_conflict_between_other_packages_is_not_the_gpu_stacks() -> None:
    # a log that printed a CUDA build of torch, then an unrelated shape error that says "incompatible"
    log = "torch 2.1.0+cu121\nnumpy 1.26.4\nValueError: Shapes (None, 10) and (None, 1) are incompatible"
    assert read(log).conflicts == () and explain_text(log, None)["matches"] == []


def test_the_cli_explains_a_conda_cuda_conflict_with_its_fix(machine: Machine) -> None:
    message = next(m for s, _, m in FAMILIES if s == "KevinMusgrave/pytorch-metric-learning#55")
    result = machine.run("explain", message, "--offline-only", "--json")
    assert result.exit_code == 0
    first = result.json["matches"][0]
    assert first["code"] == "CD520" and "CONDA_OVERRIDE_CUDA" in first["fix"] and "driver" in first["fix"]


# ------------------------------------------------------------------- status codes of the CUDA math libraries


@pytest.mark.parametrize(("text", "name", "claimed"), [
    ("RuntimeError: cusolver error: CUSOLVER_STATUS_EXECUTION_FAILED, when calling cusolverDnSgetrf",
     "CUSOLVER_STATUS_EXECUTION_FAILED", False),
    ("RuntimeError: CUDA error: CUBLAS_STATUS_EXECUTION_FAILED when calling `cublasSgemm( handle, opa, opb, m, n, k, "
     "&alpha, a, lda, b, ldb, &beta, c, ldc)`", "CUBLAS_STATUS_EXECUTION_FAILED", False),  # KaiyangZhou/deep-person-reid#570
    ("RuntimeError: cuSPARSE error: CUSPARSE_STATUS_ALLOC_FAILED", "CUSPARSE_STATUS_ALLOC_FAILED", True),
    ("curandCreateGenerator failed: CURAND_STATUS_INITIALIZATION_FAILED", "CURAND_STATUS_INITIALIZATION_FAILED", True),
    ("nvrtcCompileProgram returned NVRTC_ERROR_BUILTIN_OPERATION_FAILURE", "NVRTC_ERROR_BUILTIN_OPERATION_FAILURE", True),
    ("RuntimeError: cuFFT error: CUFFT_INVALID_SIZE", "CUFFT_INVALID_SIZE", False),
])
def test_math_library_status_codes_are_read_and_claimed_only_with_a_cause(text: str, name: str, claimed: bool) -> None:
    data = explain_text(text, None)
    assert name in [s["name"] for s in data["facts"]["statuses"]], text
    assert bool(data["matches"]) is claimed, [m["code"] for m in data["matches"]]


def test_nvidias_error_strings_map_to_their_code_without_name_or_number() -> None:
    statuses = read("the provided PTX was compiled with an unsupported toolchain.").statuses
    assert [s.name for s in statuses] == ["cudaErrorUnsupportedPtxVersion"]
    assert explain_text("the provided PTX was compiled with an unsupported toolchain.", None)["matches"][0]["code"] == "CD103"


def test_the_math_library_tables_are_whole() -> None:
    rows = tomllib.loads((compat_dir() / "status_codes.toml").read_text())["status"]
    numbers: dict[str, set[int]] = {}
    for row in rows:
        numbers.setdefault(row["api"], set()).add(row["number"])
    # every non-success value of the enums in CUDA 12.6's cufft.h, curand.h, cusparse.h and nvrtc.h
    assert numbers["cufft"] == set(range(1, 17))
    assert numbers["curand"] == {100, 101, 102, 103, 104, 105, 106, 201, 202, 203, 204, 999}
    assert numbers["cusparse"] == set(range(1, 12))
    assert numbers["nvrtc"] == set(range(1, 13))
    assert set(range(1, 17)) | {20, 21, 22, 23, 25, 26, 30, 31} == numbers["cusolver"]


# ----------------------------------------------------------------------- engines and engine flavours (CD4)


def test_an_engine_of_another_tensorrt_says_rebuild_it() -> None:
    message = next(m for s, _, m in FAMILIES if s == "wang-xinyu/tensorrtx#632")
    first = explain_text(message, None)["matches"][0]
    assert (first["code"], first["id"]) == ("CD410", "trt-engine-version-tag") and "Rebuild the engine" in first["fix"]


@pytest.mark.parametrize(("file", "name", "part"), [
    ("libnvrtc-builtins.alt.so.12.8", "nvrtc-builtins*", "cuda"),  # nanoporetech/dorado#1319
    ("libnccl.so.2", "nccl", "cuda"), ("libcusparseLt.so.0", "cusparselt", "cuda"), ("libcufile.so.0", "cufile", "cuda"),
    ("libnvfatbin.so.12", "nvfatbin", "cuda"), ("libnvvm.so.4", "nvvm", "cuda"), ("nppc64_12.dll", "npp*", "cuda"),
    ("nvJitLink_120_0.dll", "nvjitlink", "cuda"), ("libnvinfer_lean.so.10", "nvinfer_*", "framework"),
    ("libnvidia-nvvm.so.4", "nvidia-nvvm", "driver"), ("libnvidia-gpucomp.so.550.54.14", "nvidia-gpucomp", "driver"),
])
def test_companion_libraries_belong_to_their_part(file: str, name: str, part: str) -> None:
    parsed = parse_library(file)
    assert parsed is not None and (parsed[0]["name"], parsed[0]["part"]) == (name, part), file
    facts = read(f"ImportError: {file}: cannot open shared object file: No such file or directory")
    assert [(lib.part, lib.failure) for lib in facts.libraries] == [(part, "missing")], file
