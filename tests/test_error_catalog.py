"""The catalog of real error messages behind `cudnn-doctor explain` (compat/errors.toml).

Every entry must be complete, cite its source, name a finding code that exists, and
its pattern must recognise its own example -- and win over every other entry for it.
Extra real-message variants (other versions, quoting, paths, line wraps), each read
in the public source named beside it, must resolve to the right entry as well.

Matching uses the product's own matcher (cudnn_doctor.commands.explain.match_message).
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib  # type: ignore[no-redef]

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from cudnn_doctor.codes import CODES  # noqa: E402
from cudnn_doctor.commands.explain import match_message  # noqa: E402
from cudnn_doctor.explain.catalog import compiled  # noqa: E402

CATALOG_PATH = ROOT / "compat" / "errors.toml"
FLAGS = re.IGNORECASE | re.DOTALL
REQUIRED = ("id", "framework", "code", "pattern", "example", "cause", "fix", "source")
OPTIONAL = ("priority", "requires", "stack_library", "triggers", "fix_without", "code_by_part", "wrapper")
FRAMEWORKS = {"tensorflow", "pytorch", "jax", "theano", "dl4j", "cuda", "nvml", "cudnn", "loader", "onnxruntime",
              "tensorrt", "cupy", "paddle", "container", "pip", "xformers", "djl", "conda",
              "msvc", "triton", "nvcc", "nvrtc", "apt", "dkms", "nccl", "cublas", "deepspeed", "julia", "kubernetes",
              "opencv", "rapids", "dnf", "pacman", "xgboost", "nix"}
# a named group is a value the answer fills: the version groups the reader normalises (explain/catalog.normalise),
# and every field compat/fixes.toml describes in words ([[field]]: image, tag, package, target, path, ...)
GROUPS = {
    "library",
    "cudnn_major",
    "runtime_version",
    "compiled_version",
    "cuda_version",
    "driver_version",
    "compute_capability",
} | {row["name"] for row in tomllib.loads((ROOT / "compat" / "fixes.toml").read_text()).get("field", [])}

with CATALOG_PATH.open("rb") as _f:
    CATALOG = tomllib.load(_f)
ENTRIES = CATALOG["error"]
BY_ID = {e["id"]: e for e in ENTRIES}
# the product's own compiled patterns and matcher (cudnn_doctor.explain.catalog), not a copy
COMPILED = {entry["id"]: pattern for entry, pattern in compiled()}


def matches(text: str) -> list[tuple[int, str]]:
    """(priority, id) of the entries `explain` reports for TEXT (those of the highest priority)."""
    return [(m.priority, m.id) for m in match_message(text)]


def resolve(text: str) -> str | None:
    """The id of the single entry `explain` reports for TEXT; None if nothing matches.

    Fails the calling test if two entries tie for the top, since `explain` could not
    choose between them.
    """
    found = match_message(text)
    if not found:
        return None
    assert len(found) == 1, f"ambiguous: {[m.id for m in found]} all match with priority {found[0].priority}"
    return found[0].id


def groups(entry_id: str, text: str) -> dict[str, str]:
    m = COMPILED[entry_id].search(text)
    assert m, f"{entry_id} does not match"
    return {k: v for k, v in m.groupdict().items() if v is not None}


def _ids(entries):
    return [e["id"] for e in entries]


# --------------------------------------------------------------------------- structure


def test_schema_and_size():
    assert CATALOG["schema"] == "cudnn-doctor/errors/1"
    assert len(ENTRIES) >= 45


def test_ids_unique():
    ids = [e["id"] for e in ENTRIES]
    assert len(ids) == len(set(ids)), sorted({i for i in ids if ids.count(i) > 1})


def test_every_framework_covered():
    present = {e["framework"] for e in ENTRIES}
    assert FRAMEWORKS <= present, FRAMEWORKS - present


@pytest.mark.parametrize("entry", ENTRIES, ids=_ids(ENTRIES))
def test_entry_fields(entry):
    for key in REQUIRED:
        assert isinstance(entry.get(key), str) and entry[key].strip(), f"{key} missing or empty"
    assert all(word.lower() in entry["example"].lower() for word in entry.get("requires", [])), "requires"
    unknown = set(entry) - set(REQUIRED) - set(OPTIONAL)
    assert not unknown, f"unknown keys {unknown}"
    assert re.fullmatch(r"[a-z0-9]+(?:-[a-z0-9]+)*", entry["id"]), "id must be kebab-case"
    assert entry["framework"] in FRAMEWORKS
    priority = entry.get("priority", 0)
    assert isinstance(priority, int) and not isinstance(priority, bool) and priority >= 0
    # a source is a repo#number, a repository path, or a named document
    assert re.search(r"[\w.-]+/[\w.-]+(?:#\d+)?|docs|Javadoc", entry["source"]), entry["source"]


@pytest.mark.parametrize("entry", ENTRIES, ids=_ids(ENTRIES))
def test_code_is_registered(entry):
    assert entry["code"] in CODES, f"{entry['code']} is not in cudnn_doctor/codes.py"


@pytest.mark.parametrize("entry", ENTRIES, ids=_ids(ENTRIES))
def test_pattern_compiles_with_known_groups(entry):
    compiled = re.compile(entry["pattern"], FLAGS)
    unknown = set(compiled.groupindex) - GROUPS
    assert not unknown, f"named groups {unknown} are not among {sorted(GROUPS)}"


@pytest.mark.parametrize("entry", ENTRIES, ids=_ids(ENTRIES))
def test_example_matches_own_pattern(entry):
    assert COMPILED[entry["id"]].search(entry["example"]), "pattern does not match its example"


@pytest.mark.parametrize("entry", ENTRIES, ids=_ids(ENTRIES))
def test_example_resolves_to_itself(entry):
    assert resolve(entry["example"]) == entry["id"], matches(entry["example"])


# --------------------------------------------------------------- groups from examples

EXAMPLE_GROUPS = [
    ("tf-dlopen-cudnn", {"library": "libcudnn.so.8", "cudnn_major": "8"}),
    ("tf-dlopen-cudnn-windows", {"library": "cudnn64_8.dll", "cudnn_major": "8"}),
    ("tf-dlopen-cudart", {"library": "libcudart.so.11.0", "cuda_version": "11.0"}),
    ("tf-dlopen-cudart-windows", {"library": "cudart64_110.dll", "cuda_version": "110"}),
    ("tf-dlopen-other", {"library": "libcusolver.so.11"}),
    ("tf-cudnn-version-mismatch", {"runtime_version": "9.1.0", "compiled_version": "9.3.0"}),
    ("tf-kernel-dso-version-mismatch", {"driver_version": "352.63.0"}),
    ("tf-gpu-compute-capability-too-low", {"compute_capability": "3.0"}),
    ("pt-cudnn-version-incompatibility", {"compiled_version": "8, 3, 2", "runtime_version": "8, 0, 3"}),
    ("pt-import-libcudnn-missing", {"library": "libcudnn.so.9", "cudnn_major": "9"}),
    ("pt-driver-too-old", {"cuda_version": "12080"}),
    ("pt-gpu-too-old", {"compute_capability": "2.1"}),
    ("pt-sm-not-compatible", {"compute_capability": "80"}),
    ("cudnn9-sublibrary-missing", {"library": "libcudnn_cnn.so.9.1.0", "cudnn_major": "9"}),
    ("cudnn8-sublibrary-missing", {"library": "libcudnn_ops_infer.so.8", "cudnn_major": "8"}),
    ("cudnn-windows-error-126", {"library": "cudnn_cnn_infer64_8.dll", "cudnn_major": "8"}),
    ("loader-cudnn-not-found", {"library": "libcudnn.so.8", "cudnn_major": "8"}),
    ("loader-wrong-elf-class", {"library": "libcuda.so"}),
    ("jax-cudnn-too-old", {"runtime_version": "8600", "compiled_version": "8906"}),
    ("jax-cuda-too-old", {"cuda_version": "12010"}),
    ("jax-outdated-cudnn", {"compiled_version": "8907", "runtime_version": "8907"}),
    ("jax-cudnn-version-mismatch", {"runtime_version": "9.10.1", "compiled_version": "9.13.1"}),
    ("theano-cudnn-too-old", {"compiled_version": "5", "runtime_version": "3007"}),
]


@pytest.mark.parametrize("entry_id,expected", EXAMPLE_GROUPS, ids=[e for e, _ in EXAMPLE_GROUPS])
def test_groups_from_examples(entry_id, expected):
    assert groups(entry_id, BY_ID[entry_id]["example"]) == expected


# ------------------------------------------------------------- real-message variants
# (text, id it must resolve to, groups it must yield); the source of each text is in
# the comment above it. Texts are copied verbatim (some are issue titles).

VARIANTS = [
    # tensorflow/tensorflow#60854 (issue title, truncated by GitHub)
    (
        "W tensorflow/stream_executor/platform/default/dso_loader.cc:64] Could not load dynamic "
        "library 'libcudnn.so.8'; dlerror: libcudnn.so.8: cannot open shared object file: No such "
        "file or directory; LD_LI",
        "tf-dlopen-cudnn",
        {"library": "libcudnn.so.8", "cudnn_major": "8"},
    ),
    # leylabmpi/resmico#26 (title; double quotes instead of single)
    (
        'Could not load dynamic library "libcudnn.so.8"',
        "tf-dlopen-cudnn",
        {"library": "libcudnn.so.8", "cudnn_major": "8"},
    ),
    # JdeRobot/BehaviorMetrics#385 (several loader warnings and the summary line together)
    (
        "tensorflow/stream_executor/platform/default/dso_loader.cc:64] Could not load dynamic library "
        "'libcusolver.so.11'; dlerror: libcusolver.so.11: cannot open shared object file: No such file "
        "or directory; LD_LIBRARY_PATH: /usr/local/lib/python3.7/dist-packages/cv2/../../lib64:/opt/ros/"
        "noetic/lib:/usr/local/nvidia/lib:/usr/local/nvidia/lib64:/usr/lib/x86_64-linux-gnu/gazebo-11/plugins\n"
        "2022-07-10 15:08:09.276131: W tensorflow/stream_executor/platform/default/dso_loader.cc:64] Could "
        "not load dynamic library 'libcudnn.so.8'; dlerror: libcudnn.so.8: cannot open shared object file: "
        "No such file or directory; LD_LIBRARY_PATH: /usr/local/lib/python3.7/dist-packages/cv2/../../lib64:"
        "/opt/ros/noetic/lib:/usr/local/nvidia/lib:/usr/local/nvidia/lib64:/usr/lib/x86_64-linux-gnu/gazebo-11/plugins\n"
        "2022-07-10 15:08:09.276917: W tensorflow/core/common_runtime/gpu/gpu_device.cc:1850] Cannot dlopen "
        "some GPU libraries. Please make sure the missing libraries mentioned above are installed properly "
        "if you would like to use GPU. Follow the guide at https://www.tensorflow.org/install/gpu for how to "
        "download and setup the required libraries for your platform.\nSkipping registering GPU devices...",
        "tf-dlopen-cudnn",
        {"library": "libcudnn.so.8", "cudnn_major": "8"},
    ),
    # tensorflow/tensorflow#38822 (CUDA 10.1 on Windows)
    (
        "2020-04-22 21:10:43.537143: W tensorflow/stream_executor/platform/default/dso_loader.cc:55] "
        "Could not load dynamic library 'cudart64_101.dll'; dlerror: cudart64_101.dll not found",
        "tf-dlopen-cudart-windows",
        {"library": "cudart64_101.dll", "cuda_version": "101"},
    ),
    # ali-vilab/dreamtalk#32 (TensorFlow log in a PyTorch project)
    (
        "2024-02-25 18:52:47.991396: W tensorflow/stream_executor/platform/default/dso_loader.cc:64] "
        "Could not load dynamic library 'libcudart.so.11.0'; dlerror: libcudart.so.11.0: cannot open shared "
        "object file: No such file or directory; LD_LIBRARY_PATH: /usr/local/lib/python3.10/dist-packages/"
        "cv2/../../lib64:/usr/lib64-nvidia",
        "tf-dlopen-cudart",
        {"library": "libcudart.so.11.0", "cuda_version": "11.0"},
    ),
    # tensorflow/tensorflow#46086 (markdown bold left in by the reporter)
    (
        "Could not load dynamic library 'cusparse64_11.dll'; **dlerror: cusparse64_11.dll not found**",
        "tf-dlopen-other",
        {"library": "cusparse64_11.dll"},
    ),
    # tensorflow/tensorflow#35376 (cuDNN 7 wording)
    (
        "E tensorflow/stream_executor/cuda/cuda_dnn.cc:319] Loaded runtime CuDNN library: 7.4.1 but source "
        "was compiled with: 7.6.0.  CuDNN library major and minor version needs to match or have higher "
        "minor version in case of CuDNN 7.0 or later version.",
        "tf-cudnn-version-mismatch",
        {"runtime_version": "7.4.1", "compiled_version": "7.6.0"},
    ),
    # balancap/SSD-Tensorflow#340 (TensorFlow 1.x wording with compatibility versions)
    (
        "Loaded runtime CuDNN library: 7301 (compatibility version 7300) but source was compiled with 7003 "
        "(compatibility version 7000).  If using a binary install, upgrade your CuDNN library to match.",
        "tf-cudnn-version-mismatch",
        {"runtime_version": "7301", "compiled_version": "7003"},
    ),
    # bmaltais/kohya_ss#2787 (TF >= 2.15 logs through its bundled XLA: external/local_xla)
    (
        "E external/local_xla/xla/stream_executor/cuda/cuda_dnn.cc:447] Loaded runtime CuDNN library: 8.7.0 "
        "but source was compiled with: 8.9.4.  CuDNN library needs to have matching major version and equal "
        "or higher minor version.",
        "tf-cudnn-version-mismatch",
        {"runtime_version": "8.7.0", "compiled_version": "8.9.4"},
    ),
    # tensorflow/tfjs#1667 (another status of the same handle failure)
    (
        "2020-01-03 12:18:19.194079: E tensorflow/stream_executor/cuda/cuda_dnn.cc:329] Could not create "
        "cudnn handle: CUDNN_STATUS_ALLOC_FAILED",
        "tf-cudnn-handle",
        {},
    ),
    # tensorflow/tensorflow#22525 (cuInit failure followed by the diagnosis)
    (
        "2018-09-26 16:20:01.273306: E tensorflow/stream_executor/cuda/cuda_driver.cc:406] failed call to "
        "cuInit: CUDA_ERROR_NO_DEVICE\n"
        "2018-09-26 16:20:01.273681: E tensorflow/stream_executor/cuda/cuda_diagnostics.cc:303] kernel "
        "version 384.130.0 does not match DSO version 375.66.0 -- cannot find",
        "tf-kernel-dso-version-mismatch",
        {"driver_version": "384.130.0"},
    ),
    # tensorflow/tensorflow#16860 (Windows build path in the log prefix)
    (
        r"2018-02-08 18:14:25.438352: E C:\tf_jenkins\workspace\rel-win\M\windows-gpu\PY\36\tensorflow"
        r"\stream_executor\cuda\cuda_driver.cc:406] failed call to cuInit: CUDA_ERROR_NO_DEVICE",
        "tf-cuinit-no-device",
        {},
    ),
    # fo40225/tensorflow-windows-wheel#63 (also contains the generic CUDA wording)
    (
        "2018-12-09 23:18:41.996479: E tensorflow/stream_executor/cuda/cuda_driver.cc:300] failed call to "
        "cuInit: CUDA_ERROR_NO_DEVICE: no CUDA-capable device is detected",
        "tf-cuinit-no-device",
        {},
    ),
    # tensorflow/tensorflow#112 (older wording: "Ignoring gpu device")
    (
        "tensorflow/core/common_runtime/gpu/gpu_device.cc:611\n Ignoring gpu device (device: 0, name: GRID "
        "K520, pci bus id: 0000:00:03.0) \n    with Cuda compute capability 3.0. The minimum required Cuda "
        "capability is 3.5.",
        "tf-gpu-compute-capability-too-low",
        {"compute_capability": "3.0"},
    ),
    # tensorflow/tensorflow#23385 (issue title)
    (
        "Ignoring visible gpu device (device: 0, name: GeForce GTX 1070, pci bus id: 0000:01:00.0, compute "
        "capability: 6.1) with Cuda compute capability 6.1. The minimum required Cuda capability is 7.0",
        "tf-gpu-compute-capability-too-low",
        {"compute_capability": "6.1"},
    ),
    # tensorflow/tensorflow#4827 (TensorFlow 0.10 on Linux)
    (
        "Couldn't open CUDA library libcudnn.so. LD_LIBRARY_PATH: :/usr/local/cuda-7.5/lib64",
        "tf-legacy-cudnn-dso",
        {"library": "libcudnn.so"},
    ),
    # rash1993/movie-asd#3 (TF 2.15 wording)
    (
        "2023-12-15 14:08:10.099963: W tensorflow/core/framework/op_kernel.cc:1839] OP_REQUIRES failed at "
        "conv_ops_impl.h:1199 : UNIMPLEMENTED: DNN library is not found.",
        "tf-dnn-library-not-found",
        {},
    ),
    # pytorch/functorch#926 ("linked against" wording of PyTorch 1.12)
    (
        "RuntimeError: cuDNN version incompatibility: PyTorch was compiled against (8, 3, 2) but linked "
        "against (8, 0, 3)",
        "pt-cudnn-version-incompatibility",
        {"compiled_version": "8, 3, 2", "runtime_version": "8, 0, 3"},
    ),
    # jwyang/faster-rcnn.pytorch#662 (PyTorch 0.4 wording, integer versions)
    (
        "RuntimeError: cuDNN version mismatch: PyTorch was compiled against 7102 but linked against 7600",
        "pt-cudnn-version-incompatibility",
        {"compiled_version": "7102", "runtime_version": "7600"},
    ),
    # m-bain/whisperX#1297 (cuDNN 9, two-digit minor)
    (
        "RuntimeError: cuDNN version incompatibility: PyTorch was compiled  against (9, 10, 2) but found "
        "runtime version (9, 1, 0). PyTorch already comes bundled with cuDNN. One option to resolving this "
        "error is to ensure PyTorch can find the bundled cuDNN. Looks like your LD_LIBRARY_PATH contains "
        "incompatible version of cudnn. Please either remove it from the path or install cudnn (9, 10, 2)",
        "pt-cudnn-version-incompatibility",
        {"compiled_version": "9, 10, 2", "runtime_version": "9, 1, 0"},
    ),
    # pytorch/pytorch#1171 (old wording without "cuDNN error:")
    ("RuntimeError: CUDNN_STATUS_NOT_INITIALIZED", "pt-cudnn-not-initialized", {}),
    # pytorch/pytorch#6306
    ("RuntimeError: CUDNN_STATUS_EXECUTION_FAILED", "pt-cudnn-execution-failed", {}),
    # pytorch/pytorch#11065 (wrapped by the terminal inside a word)
    (
        "RuntimeError: CuDNN error: CUDNN_STATUS_NOT_SUPPORTED. This error may appear if you passed in a n\n"
        "on-contiguous input.",
        "pt-cudnn-not-supported",
        {},
    ),
    # pytorch/pytorch#104259 (cuDNN 8 wheel)
    (
        "    from torch._C import *  # noqa: F403\n"
        "ImportError: libcudnn.so.8: cannot open shared object file: No such file or directory",
        "pt-import-libcudnn-missing",
        {"library": "libcudnn.so.8", "cudnn_major": "8"},
    ),
    # AUTOMATIC1111/stable-diffusion-webui#3003 (newer wording with the minimum)
    (
        "Found GPU0 NVIDIA GTX TITAN Black which is of cuda capability 3.5. PyTorch no longer supports this "
        "GPU because it is too old. The minimum cuda capability supported by this library is 3.7.",
        "pt-gpu-too-old",
        {"compute_capability": "3.5"},
    ),
    # meituan/YOLOv6#350
    (
        ".venv/lib/python3.7/site-packages/torch/cuda/__init__.py:146: UserWarning: \n"
        "NVIDIA GeForce RTX 3080 Laptop GPU with CUDA capability sm_86 is not compatible with the current "
        "PyTorch installation.\nThe current PyTorch install supports CUDA capabilities sm_37 sm_50 sm_60 sm_70.",
        "pt-sm-not-compatible",
        {"compute_capability": "86"},
    ),
    # pytorch/pytorch#150733 (issue title, Blackwell)
    (
        "GeForce RTX 5090 D with CUDA capability sm_120 is not compatible with the current PyTorch installation.",
        "pt-sm-not-compatible",
        {"compute_capability": "120"},
    ),
    # pytorch/pytorch#10002 (THC wording of PyTorch 0.4)
    (
        "THCudaCheck FAIL file=/home/mfuntowi/Workspace/pytorch/aten/src/THC/generic/THCTensorMath.cu "
        "line=244 error=48 : no kernel image is available for execution on the device",
        "pt-no-kernel-image",
        {},
    ),
    # ultralytics/yolov5#2389 (PyTorch 1.7 warning)
    (
        "UserWarning: CUDA initialization: The NVIDIA driver on your system is too old (found version 10010). "
        "Please update your GPU driver by downloading and installing a new version from the URL: "
        "http://www.nvidia.com/Download/index.aspx Alternatively, go to: https://pytorch.org to install a "
        "PyTorch version that has been compiled with your version of the CUDA driver. (Triggered internally "
        "at  /pytorch/c10/cuda/CUDAFunctions.cpp:100.)",
        "pt-driver-too-old",
        {"cuda_version": "10010"},
    ),
    # wuhuikai/FastFCN#37 (PyTorch 1.0 AssertionError, multi-line)
    (
        "AssertionError: \nThe NVIDIA driver on your system is too old (found version 9000).\n"
        "Please update your GPU driver by downloading and installing a new\nversion from the URL: "
        "http://www.nvidia.com/Download/index.aspx",
        "pt-driver-too-old",
        {"cuda_version": "9000"},
    ),
    # microsoft/human-pose-estimation.pytorch#23 (THCudaCheck line before the RuntimeError)
    (
        "THCudaCheck FAIL file=/pytorch/aten/src/THC/THCGeneral.cpp line=74 error=35 : CUDA driver version "
        "is insufficient for CUDA runtime version",
        "pt-thc-driver-insufficient",
        {},
    ),
    # nagadomi/nunif#702 (current PyTorch wording: plain CUDA error, no THC)
    (
        "RuntimeError: CUDA error: CUDA driver version is insufficient for CUDA runtime version",
        "cuda-driver-insufficient",
        {},
    ),
    # pytorch/pytorch#16417 (comment: PyTorch 2.x wording)
    (
        "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 22.00 MiB. GPU 0 has a total "
        "capacity of 23.65 GiB of which 11.06 MiB is free.",
        "pt-cuda-out-of-memory",
        {},
    ),
    # facebookresearch/detectron2#460
    (
        '  File "/home/xx/anaconda3/envs/tf-gpu/lib/python3.7/site-packages/torch/cuda/__init__.py", line 95, '
        'in _check_driver\n    raise AssertionError("Torch not compiled with CUDA enabled")\n'
        "AssertionError: Torch not compiled with CUDA enabled",
        "pt-not-compiled-with-cuda",
        {},
    ),
    # PaddlePaddle/Paddle#54767 (cuDNN 8 on Windows)
    (
        "Could not locate cudnn_ops_infer64_8.dll. Please make sure it is in your library path!",
        "cudnn-windows-sublibrary-missing",
        {"library": "cudnn_ops_infer64_8.dll", "cudnn_major": "8"},
    ),
    # MahmoudAshraf97/whisper-diarization#259 (another sub-library)
    (
        "Unable to load any of {libcudnn_ops.so.9.1.0, libcudnn_ops.so.9.1, libcudnn_ops.so.9, "
        "libcudnn_ops.so} Invalid handle. Cannot load symbol cudnnCreateTensorDescriptor",
        "cudnn9-sublibrary-missing",
        {"library": "libcudnn_ops.so.9.1.0", "cudnn_major": "9"},
    ),
    # daswer123/xtts-finetune-webui#31
    (
        "Could not load library libcudnn_ops_infer.so.8. Error: libcudnn_ops_infer.so.8: cannot open shared "
        "object file: No such file or directory\nAborted (core dumped)",
        "cudnn8-sublibrary-missing",
        {"library": "libcudnn_ops_infer.so.8", "cudnn_major": "8"},
    ),
    # AlexeyAB/darknet#8601 (a cuBLAS of another CUDA major is missing)
    (
        "Could not load library libcudnn_ops_infer.so.8. Error: libcublas.so.11: cannot open shared object "
        "file: No such file or directory",
        "cudnn8-sublibrary-dependency-missing",
        {"library": "libcudnn_ops_infer.so.8", "cudnn_major": "8"},
    ),
    # open-mmlab/mmdetection3d#2132 (issue title, one line)
    (
        "Could not load library libcudnn_cnn_infer.so.8. Error: libcuda.so: cannot open shared object file: "
        "No such file or directory Please make sure libcudnn_cnn_infer.so.8 is in your library path!",
        "cudnn8-needs-libcuda-so",
        {"library": "libcudnn_cnn_infer.so.8", "cudnn_major": "8"},
    ),
    # AlexeyAB/darknet#8239 (cuDNN 8.3 on Windows 11)
    (
        "Could not load library cudnn_cnn_infer64_8.dll. Error code 126\n"
        "Please make sure cudnn_cnn_infer64_8.dll is in your library path!",
        "cudnn-windows-error-126",
        {"library": "cudnn_cnn_infer64_8.dll", "cudnn_major": "8"},
    ),
    # rbgirshick/fast-rcnn#44 (Caffe on a Tesla M2090, cc 2.0)
    (
        "F0817 22:53:22.694056 24820 cudnn_conv_layer.cpp:32] Check failed: status == CUDNN_STATUS_SUCCESS "
        "(6 vs. 0)  CUDNN_STATUS_ARCH_MISMATCH",
        "cudnn-arch-mismatch",
        {},
    ),
    # BVLC/caffe#5550 (cuDNN 5)
    (
        "error while loading shared libraries: libcudnn.so.5: cannot open shared object file: No such file "
        "or directory",
        "loader-cudnn-not-found",
        {"library": "libcudnn.so.5", "cudnn_major": "5"},
    ),
    # andersbll/deeppy#28
    (
        "ImportError: libcudart.so.7.0: wrong ELF class: ELFCLASS32",
        "loader-wrong-elf-class",
        {"library": "libcudart.so.7.0"},
    ),
    # ollama/ollama#2226 (full path before the library)
    (
        "/usr/lib/libnvidia-ml.so.545.29.06: wrong ELF class: ELFCLASS32",
        "loader-wrong-elf-class",
        {"library": "libnvidia-ml.so.545.29.06"},
    ),
    # k2-fsa/k2#1045 (libstdc++ of a conda env)
    (
        "ImportError: /mntnfs/lee_data1/maduo/anaconda3/envs/k2-fsa1/lib/python3.8/site-packages/torch/lib/"
        "../../../../libstdc++.so.6: version `GLIBCXX_3.4.30' not found (required by /mntnfs/lee_data1/maduo/"
        "anaconda3/envs/k2-fsa1/lib/python3.8/site-packages/k2/lib/libk2context.so)",
        "loader-glibc-version-not-found",
        {},
    ),
    # davisking/dlib#885 (x86_64 cuDNN on a Jetson TX1)
    (
        "/usr/local/cuda-8.0/lib64/libcudnn.so: error adding symbols: File in wrong format",
        "loader-file-in-wrong-format",
        {"library": "libcudnn.so"},
    ),
    # jax-ml/jax#23145 (a blank line between the log prefix and the message)
    (
        "2024-08-20 16:26:58.037892: E external/xla/xla/stream_executor/cuda/cuda_dnn.cc:439] \n\n"
        "Could not create cudnn handle: CUDNN_STATUS_INTERNAL_ERROR\n"
        "2024-08-20 16:26:58.037952: E external/xla/xla/stream_executor/cuda/cuda_dnn.cc:443] Memory usage: "
        "46637514752 bytes free, 47587131392 bytes total.",
        "jax-cudnn-handle",
        {},
    ),
    # jax-ml/jax#17553 (NOT_INITIALIZED with the driver hint)
    (
        "2023-09-11 18:02:05.062414: E external/xla/xla/stream_executor/cuda/cuda_dnn.cc:439] Could not "
        "create cudnn handle: CUDNN_STATUS_NOT_INITIALIZED\n"
        "  2023-09-11 18:02:05.062650: E external/xla/xla/stream_executor/cuda/cuda_dnn.cc:453] Possibly "
        "insufficient driver version: 510.47.3",
        "jax-cudnn-handle",
        {},
    ),
    # hollowstrawberry/kohya-colab#94 (issue title)
    (
        "CUDA backend failed to initialize: Found CUDA version 12010, but JAX was built against version "
        "12020, which is newer.",
        "jax-cuda-too-old",
        {"cuda_version": "12010"},
    ),
    # Theano/Theano#4437 (Theano 0.8 wording: "CuDNN", "then")
    (
        r"\Anaconda2\lib\site-packages\theano\sandbox\cuda\__init__.py:600: UserWarning: Your CuDNN version "
        "is more recent then Theano. If you see problems, try updating Theano or downgrading CuDNN to version 4.",
        "theano-cudnn-too-new",
        {},
    ),
    # imatge-upc/activitynet-2016-cvprw#29
    (
        "Your cuDNN version is more recent than the one Theano officially supports. If you see any problems, "
        "try updating Theano or downgrading cuDNN to version 5.",
        "theano-cudnn-too-new",
        {},
    ),
    # Theano/Theano#6328 (Windows: bytes repr with escaped path and \r\n)
    (
        "Can not use cuDNN on context None: cannot compile with cuDNN. We got this error:\n"
        r"b'C:\\Users\\dines\\AppData\\Local\\Temp\\try_flags_f7vkrtdy.c:4:19: fatal error: cudnn.h: No such "
        r"file or directory\r\ncompilation terminated.\r\n'",
        "theano-cudnn-header-missing",
        {},
    ),
    # Theano/Theano#4905 (old back-end wording, Polish locale)
    (
        "Exception: (\"We can't determine the cudnn version as it is not available\", 'Can not compile with "
        "cuDNN. We got this error:\\n/tmp/try_flags_CkTbMY.c:5:19: fatal error: cudnn.h: Nie ma takiego pliku "
        "ani katalogu\\ncompilation terminated.\\n')",
        "theano-cudnn-header-missing",
        {},
    ),
    # Theano/Theano#6707 (conda cuDNN without the CUDA headers)
    (
        "Can not use cuDNN on context None: cannot compile with cuDNN. We got this \nerror:\n"
        "b'In file included from /tmp/try_flags_c3rotdub.c:4:0:\\n/data/home/me/.conda/envs/tf_gpu/include/"
        "cudnn.h:63:10: fatal error: driver_types.h: \nNo such file or directory",
        "theano-cuda-headers-missing",
        {},
    ),
    # deeplearning4j/deeplearning4j#2037 (DL4J 0.5.0)
    (
        "o.d.n.l.c.ConvolutionLayer - Could not load CudnnConvolutionHelper\n"
        "java.lang.UnsatisfiedLinkError: no jnicudnn in java.library.path",
        "dl4j-no-jnicudnn",
        {},
    ),
    # deeplearning4j/deeplearning4j#6086 (issue title)
    (
        "java.lang.ClassNotFoundException : org.deeplearning4j.nn.layers.convolution.CudnnConvolutionHelper",
        "dl4j-cudnn-not-found",
        {},
    ),
    # deeplearning4j/deeplearning4j#9376 (log line with logback prefix)
    (
        "11:53:14.271 [main] INFO org.deeplearning4j.nn.layers.convolution.ConvolutionLayer - cuDNN not "
        "found: use cuDNN for better GPU performance by including the deeplearning4j-cuda module. For more inf",
        "dl4j-cudnn-not-found",
        {},
    ),
    # deeplearning4j/deeplearning4j-examples#692 (with the backend hint)
    (
        "Caused by: java.lang.RuntimeException: org.nd4j.linalg.factory.Nd4jBackend$NoAvailableBackendException: "
        "Please ensure that you have an nd4j backend on your classpath. Please see: http://nd4j.org/getstarted.html",
        "dl4j-no-backend",
        {},
    ),
    # tensorflow/tensorflow#4349 (comment: TensorFlow's wording of error 804)
    (
        "2021-10-16 14:56:09.420644: E tensorflow/stream_executor/cuda/cuda_driver.cc:271] failed call to "
        "cuInit: CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE: forward compatibility was attempted on non "
        "supported HW",
        "cuda-forward-compat-unsupported",
        {},
    ),
    # lelechen63/ATVGnet#4 (old CUDA error number 38)
    (
        "RuntimeError: cuda runtime error (38) : no CUDA-capable device is detected at "
        "/pytorch/aten/src/THC/THCGeneral.cpp:74",
        "cuda-no-device",
        {},
    ),
    # microsoft/lisa#2823 (PyTorch's wording of error 802)
    (
        "UserWarning: CUDA initialization: Unexpected error from cudaGetDeviceCount(). Did you run some cuda "
        "functions before calling NumCudaDevices() that might have already set an error? Error 802: system "
        "not yet initialized (Triggered internally at  ../c10/cuda/CUDAFunctions.cpp:112.)",
        "cuda-system-not-ready",
        {},
    ),
    # intel/llvm#17614 (nvidia-smi also prints the library version)
    (
        "Failed to initialize NVML: Driver/library version mismatch\nNVML library version: 550.144",
        "nvml-driver-library-mismatch",
        {"driver_version": "550.144"},
    ),
    # qixuema/envs#4 (typographic apostrophe)
    (
        "NVIDIA-SMI has failed because it couldn‘t communicate with the NVIDIA driver.\n"
        "Make sure that the latest NVIDIA driver is installed and running.",
        "nvidia-smi-no-driver",
        {},
    ),
    # NVIDIA/TensorRT#2195 (the safe runtime's variant of the engine version check)
    (
        "[08/01/2022-15:41:44] [TRT] [E] 1: [stdArchiveReader.cpp::StdArchiveReader::35] Error Code 1: Serialization "
        "(Serialization assertion safeVersionRead == safeSerializationVersion failed.Version tag does not match. Note: "
        "Current Version: 0, Serialized Engine Version: 96)",
        "trt-engine-version-tag",
        {},
    ),
    # tensorflow/tensorrt#303 (TF-TRT loading an engine of TensorRT 7)
    (
        "2022-07-13 16:42:54.914735: E tensorflow/compiler/tf2tensorrt/utils/trt_logger.cc:42] DefaultLogger "
        "coreReadArchive.cpp (38) - Serialization Error in verifyHeader: 0 (Version tag does not match)",
        "trt-engine-version-tag",
        {},
    ),
    # yuvraj108c/ComfyUI-Dwpose-Tensorrt#5 (polygraphy's words after a failed deserialization)
    ("[!] Could not deserialize engine. See log for details.", "trt-engine-deserialization-failed", {}),
    # NVIDIA/gvdb-voxels#120 (inside a cuModuleLoad error report)
    (
        "GVDB CUDA ERROR:\n  Launch status: the provided PTX was compiled with an unsupported toolchain.\n"
        "  Kernel status: no error\n  Caller: VolumeGVDB::LoadFunction\n  Call:   cuModuleLoad",
        "cuda-unsupported-ptx-toolchain",
        {},
    ),
    # deepjavalibrary/djl#3617 (no architecture after the flavour)
    ("ai.djl.pytorch.jni.LibUtils   : No matching cuda flavor for win-x86_64 found: cu126.",
     "djl-no-matching-cuda-flavor", {}),
    # deepjavalibrary/djl#2775 (the title: flavour and architecture)
    ("No matching cuda flavor for win found: cu112mkl/sm_86.", "djl-no-matching-cuda-flavor",
     {"compute_capability": "86"}),
    # KevinMusgrave/pytorch-metric-learning#55 (Windows, with conda 4.8's second feature line)
    (
        "The following specifications were found to be incompatible with your CUDA driver:\n\n"
        "  - feature:/win-64::__cuda==10.2=0\n  - feature:|@/win-64::__cuda==10.2=0\n\nYour installed CUDA driver is: 10.2",
        "conda-cuda-virtual-package",
        {},
    ),
    # pytorch/pytorch#87075 (pip's older wording)
    (
        "ERROR: torchaudio 0.13.0.dev20221016+cu117 has requirement torch==1.14.0.dev20221016, but you'll have torch "
        "1.14.0.dev20221017+cu117 which is incompatible.",
        "pip-torch-companion-cuda-build",
        {},
    ),
    # libmamba's tree for a GPU build on a machine without a driver (quoted with stackoverflow.com/questions/74836151)
    (
        "      ├─ deepmd-kit 2.2.10 *gpu is not installable because it requires\n"
        "      │  └─ tensorflow 2.9.* cuda*, which requires\n      │     └─ __cuda, which is missing on the system;",
        "conda-cuda-virtual-package",
        {},
    ),
    # vllm-project/vllm#35608 (cublasGemmEx, solved by unset LD_LIBRARY_PATH)
    (
        "Encountered RuntimeError: CUDA error: CUBLAS_STATUS_INVALID_VALUE when calling `cublasGemmEx( handle, opa, opb, "
        "m, n, k, alpha_ptr, a, CUDA_R_16F, lda, b, CUDA_R_16F, ldb,",
        "cublas-invalid-value-mixed-libraries",
        {},
    ),
    # haoheliu/AudioLDM#49 (the error alone, RTX 4090 with a cu117 build)
    ("RuntimeError: cuFFT error: CUFFT_INTERNAL_ERROR", "cufft-internal-error-ada", {}),
]


@pytest.mark.parametrize(
    "text,expected_id,expected_groups", VARIANTS, ids=[f"{v[1]}-{n}" for n, v in enumerate(VARIANTS)]
)
def test_real_message_variants(text, expected_id, expected_groups):
    assert expected_id in BY_ID, f"unknown id {expected_id}"
    assert resolve(text) == expected_id, matches(text)
    assert groups(expected_id, text) == expected_groups


def test_enough_variants():
    assert len(VARIANTS) >= 8


# Lines that accompany the errors but are not errors: they must not be recognised.
HARMLESS = [
    # NVIDIA/tensorflow#110
    "2024-06-19 16:06:44.996120: I tensorflow/stream_executor/platform/default/dso_loader.cc:49] "
    "Successfully opened dynamic library libcudnn.so.8",
    # tensorflow/tensorflow#63702
    "I tensorflow/stream_executor/cuda/cuda_dnn.cc:384] Loaded cuDNN version 8600",
    # Theano/Theano#6690
    "Using cuDNN version 7402 on context None",
    # 2kpr/ComfyUI-PMRF#11: a torch companion out of step without any CUDA build named is pip's business alone
    "torchvision 0.19.1 requires torch==2.4.1, but you have torch 2.5.1 which is incompatible.",
    # wang-xinyu/tensorrtx#632: the engine's deserialization is the cause; the AttributeError alone says nothing
    "AttributeError: 'NoneType' object has no attribute 'create_execution_context'",
]


@pytest.mark.parametrize("text", HARMLESS)
def test_harmless_lines_not_recognised(text):
    assert resolve(text) is None, matches(text)
