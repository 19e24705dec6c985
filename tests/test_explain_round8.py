"""Issue 41, round eight: the driver's and the device's failures (CD1) and a framework's own "no GPU", in the words of
every layer that meets them.

NVML's and the CUDA driver's codes as the bindings spell them (pynvml's NVMLError_DriverNotLoaded, go-nvml's
ERROR_LIBRARY_NOT_FOUND, Rust's NvmlError::GpuLost, CUDA.jl's ERROR_NO_DEVICE) and nvmlErrorString's words on a line
that names NVML; the installer's, the module loader's and the kernel module's lines; Windows' Code 43 and the
Windows installer; WSL 2's dxg bridge; the device files; CDI, the container hook and the Kubernetes device plugin;
NVENC's refusals; a framework's availability probe answered with no GPU (the GPU not seen, CD102: the answer does not
say whether the build or the driver is why; CD406 where the words name a CPU build). Look-alikes that share the words (a database
driver not loaded, a USB device's Code 43, another module's DKMS build, Apple's MPS, Intel's XPU, Windows' own
ERROR_ names) are never claimed. Every message is quoted from the public thread or source named beside it."""

from __future__ import annotations

import pytest

from cudnn_doctor.commands.explain import explain_text
from cudnn_doctor.explain.reader import read

# (source, the first answer's family, the message as the thread prints it)
CASES = [
    # NVML's codes in bindings' spellings, and its texts after a program's words for NVML
    ("wookayin/gpustat#110", "CD1", "  File \"/usr/lib/python3/dist-packages/pynvml.py\", line 310, in _nvmlCheckReturn\n"
     "    raise NVMLError(ret)\npynvml.NVMLError_DriverNotLoaded: Driver Not Loaded"),
    ("damomine/aleominer#14", "CD1", "thread 'main' panicked at 'Failed to initialize nvml: DriverNotLoaded', "
     "src/environment/mod.rs:37:31"),
    ("ngi644/datadog_nvml#12", "CD1", "      NVMLError_NoPermission: Insufficient Permissions"),
    ("containerd/containerd#6042", "CD1", "initialization error: nvml error: insufficient permissions: unknown"),
    ("NVIDIA/nvidia-container-toolkit#210", "CD1", "podman run --rm --device nvidia.com/gpu=all ubuntu nvidia-smi -L\n"
     "Failed to initialize NVML: Insufficient Permissions"),
    ("coraxx/netdata_nv_plugin#1", "CD1", "2016-12-14 10:19:34: python.d ERROR: nv pynvml could not be initialized "
     "Insufficient Permissions"),
    ("NVIDIA/k8s-device-plugin#207", "CD1", "WSL2/CUDA: Failed to initialize NVML: could not load NVML library."),
    ("develsoftware/GMinerRelease#106", "CD1", "Failed to initialize NVML"),
    ("NVIDIA/nvidia-container-toolkit#1269", "CD1", "nvidia-container-cli: initialization error: nvml error: driver not "
     "loaded"),
    # NVIDIA's installer and the kernel's module loader
    ("NVIDIA/gpu-driver-container#44", "CD1", "ERROR: Unable to load the kernel module 'nvidia.ko'.  This happens most "
     "frequently when this kernel module was built against the wrong or improperly configured kernel sources"),
    ("clearlinux/distribution#1994", "CD1", "ERROR: Unable to load the 'nvidia-drm' kernel module."),
    ("nvidia-installer (public install notes)", "CD1", "ERROR: An NVIDIA kernel module 'nvidia-drm' appears to already "
     "be loaded in your kernel.  This may be because it is in use (for example, by an X server, a CUDA program, or the "
     "NVIDIA Persistence Daemon)"),
    ("nvidia-installer (public install notes)", "CD1", "ERROR: The Nouveau kernel driver is currently in use by your "
     "system.  This driver is incompatible with the NVIDIA driver, and must be disabled before proceeding."),
    ("NVIDIA/open-gpu-kernel-modules kernel-open/nvidia/nv.c", "CD1", "[ 4241.435066] NVRM: No NVIDIA devices probed."),
    # WSL 2, device files, containers, Kubernetes
    ("microsoft/WSL#13734", "CD1", "[    4.005108] misc dxg: dxgk: dxgkio_query_adapter_info: Ioctl failed: -22"),
    ("NixOS/nixpkgs#420638", "CD1", "› podman run --rm -it --device=nvidia.com/gpu=all ubuntu:latest nvidia-smi\n"
     "Error: setting up CDI devices: unresolvable CDI devices nvidia.com/gpu=all"),
    # the CUDA driver's codes in other bindings' and programs' words
    ("ggml-org/llama.cpp#11841", "CD1", "CUDA error: CUDA-capable device(s) is/are busy or unavailable\n  current "
     "device: 0, in function ggml_cuda_set_device at ggml/src/ggml-cuda/ggml-cuda.cu:86\n  cudaSetDevice(device)"),
    ("microsoft/WSL#5548", "CD1", "CUDA error at bodysystemcuda_impl.h:159 code=46(cudaErrorDevicesUnavailable) "
     "\"cudaEventCreate(&m_deviceData[0].event)\""),
    ("jax-ml/jax#24866", "CD1", "E external/xla/xla/stream_executor/cuda/cuda_driver.cc:152] failed call to cuInit: "
     "INTERNAL: CUDA error: Failed call to cuInit: CUDA_ERROR_SYSTEM_NOT_READY: system not yet initialized"),
    # NVIDIA's text with its own number (the NGC entry point), a status number after a CUDA sentence, NVIDIA's own
    # description of a code, a CUDA runtime that loaded and could not start
    ("triton-inference-server/server#6945", "CD1", "ERROR: The NVIDIA Driver is present, but CUDA failed to initialize.  "
     "GPU functionality will not be available.\n   [[ Unknown error (error 999) ]]"),
    ("triton-inference-server/server#4050", "CD1", "WARNING: [Torch-TensorRT] - Unable to read CUDA capable devices. "
     "Return status: 999"),
    ("jina-ai/serve#2514", "CD1", "[Advise: The API call failed because the CUDA driver and runtime could not be "
     "initialized. ]"),
    ("ollama/ollama#12352", "CD1", "time=2025-09-20T07:16:49.300Z level=INFO source=gpu.go:612 msg=\"Unable to load "
     "cudart library /usr/lib/ollama/cuda_v12/libcudart.so.12.8.90: cuda driver library init failure: 205\""),
    # the driver's own libraries beyond CUDA's: NVENC's, and Jetson's that libcuda needs; Slurm's GPU requests
    ("FFmpeg libavcodec/nvenc.c (the driver's encoder library)", "CD1", "[hevc_nvenc @ 0x55ca461fa380] Cannot load "
     "libnvidia-encode.so.1"),
    ("OE4T/meta-tegra#1456", "CD1", "E0116 15:56:51.763612 1363 driver.c:196] could not start driver service: load "
     "library failed: libcuda.so.1: cannot open shared object file: no such file or directory"),
    ("SchedMD/slurm src/common/gres.c", "CD1", "srun: error: Unable to allocate resources: Invalid generic resource "
     "(gres) specification"),
    # a program's own sentence that CUDA could not start, in any order of its words
    ("CESNET/GPUJPEG#54", "CD1", "[GPUJPEG] [Error] Failed to initialize CUDA device.\nterminate called after throwing "
     "an instance of 'std::runtime_error'"),
    ("rapidsai/dask-cuda#583", "CD1", "    Unable to start CUDA Context\nTraceback (most recent call last):"),
    # an NVIDIA GPU not found, and the advice to update NVIDIA's driver, in a program's own sentence
    ("a serving launcher's hardware check (public source)", "CD1", "ValueError: No NVIDIA GPU detected. Check GPU "
     "availability before starting."),
    ("MultiPoolMiner miner scripts", "CD1", "WARN: Miner (CcminerTpruvot) requires CUDA version 10.0.0 or above "
     "(installed version is 9.2.148). Please update your Nvidia drivers."),
    # nvidia-smi -q's report of memory repairs that failed (NVIDIA's row remapping guide)
    ("NVIDIA GPU Memory Error Management (nvidia-smi -q)", "CD1", "    Remapped Rows\n        Correctable Error       "
     "          : 0\n        Uncorrectable Error               : 3\n        Pending                           : No\n"
     "        Remapping Failure Occurred        : Yes"),
    # NVENC's refusals as FFmpeg prints them (libavcodec/nvenc.c)
    ("FFmpeg libavcodec/nvenc.c", "CD1", "[h264_nvenc @ 0000027d] OpenEncodeSessionEx failed: no encode device (1)"),
    # a framework's extension of another build: torchvision's operators for another torch, DGL's CPU build
    ("pytorch/vision (torch and torchvision of different releases)", "CD4", "RuntimeError: operator torchvision::nms "
     "does not exist"),
    ("dmlc/dgl src/runtime/c_runtime_api.cc", "CD4", "dgl._ffi.base.DGLError: [10:00:00] /opt/dgl/src/runtime/"
     "c_runtime_api.cc:82: Check failed: allow_missing: Device API cuda is not enabled. Please install the cuda version "
     "of dgl."),
    # a framework's own answer that it has no GPU
    ("AUTOMATIC1111/stable-diffusion-webui#9402", "CD1", "AssertionError: Torch is not able to use GPU; add "
     "--skip-torch-cuda-test to COMMANDLINE_ARGS variable to disable this check"),
    ("pytorch/pytorch torch/serialization.py", "CD1", "RuntimeError: Attempting to deserialize object on a CUDA device "
     "but torch.cuda.is_available() is False. If you are running on a CPU-only machine, please use torch.load with "
     "map_location=torch.device('cpu') to map your storages to the CPU."),
]

# look-alikes: the same words about a database, a printer, a USB device, another kernel module, another vendor's device
UNRELATED = [
    ("Qt's SQL driver", "QSqlDatabase: QMYSQL driver not loaded\nQSqlDatabase: available drivers: QSQLITE QODBC"),
    ("ODBC", "pyodbc.InterfaceError: ('IM002', '[IM002] [Microsoft][ODBC Driver Manager] Data source name not found and "
     "no default driver specified (0) (SQLDriverConnect)')"),
    ("a USB device's Code 43", "USB\\VID_046D&PID_C52B: Windows has stopped this device because it has reported "
     "problems. (Code 43)"),
    ("VirtualBox's module", "vboxdrv.sh: failed: modprobe vboxdrv failed. Please use 'dmesg' to find out why.\nERROR: "
     "Unable to load the kernel module 'vboxdrv'."),
    ("VirtualBox's DKMS build", "Building DKMS module 'virtualbox-6.1.38' for kernel-5.19.0... FAILED!\nError! Bad "
     "return status for module build on kernel: 5.19.0-41-generic (x86_64)"),
    ("a disk", "mount: /mnt/data: cannot mount /dev/sdb1 read-only. Permission denied"),
    ("a serial device", "java.nio.file.AccessDeniedException: /dev/ttyUSB0: Permission denied"),
    ("Apple's MPS", ">>> torch.backends.mps.is_available()\nFalse\nRuntimeError: MPS backend is not available"),
    ("Intel's XPU", "torch.xpu.device_count(): 0\nRuntimeError: XPU device not found"),
    ("Windows' own error names", "Current process failed: GetLastError() returned ERROR_FILE_NOT_FOUND (2); the "
     "document could not be opened"),
    ("a JDBC driver", "java.sql.SQLException: No suitable driver found for jdbc:postgresql://localhost:5432/mydb"),
    ("a port in use", "docker: Error response from daemon: driver failed programming external connectivity on endpoint "
     "web (abc): Bind for 0.0.0.0:80 failed: port is already allocated."),
    ("permissions of an application", "Error: Insufficient Permissions to access the requested resource (user: bob)"),
    ("another module refused by Secure Boot", "modprobe: ERROR: could not insert 'wl': Required key not available"),
    ("a busy mount", "umount: /media/usb: target is busy."),
    ("a game's driver advice without NVIDIA's name", "Your graphics driver is out of date. Please update your graphics "
     "driver to the latest version."),
    ("an NVIDIA Shield device", "adb: no NVIDIA Shield devices found over USB"),
    ("a healthy GPU's remapping report", "    Remapped Rows\n        Remapping Failure Occurred        : No"),
    ("Vulkan's device", "vkCreateInstance failed: Failed to initialize Vulkan device (VK_ERROR_INCOMPATIBLE_DRIVER)"),
    ("OpenGL's context", "Failed to initialize GPU context: OpenGL 3.3 not supported by the graphics driver"),
    ("Slurm's request of nodes, not of GPUs", "srun: error: Unable to allocate resources: Requested node configuration "
     "is not available"),
    # NVIDIA's short texts with a small number are any library's (the self-confirming number starts at 30)
    ("numpy's memory", "MemoryError: out of memory (2) while allocating 1024 bytes in numpy"),
    ("SDL's audio", "SDL_Init failed: initialization error (3) - no audio device"),
    ("another program's unknown error", "Request failed: unknown error (error 42)"),
]


@pytest.mark.parametrize(("source", "family", "message"), CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_a_layer_s_own_words_get_their_family(source: str, family: str, message: str) -> None:
    data = explain_text(message, None)
    assert data["exit_code"] == 0, source
    assert data["matches"][0]["code"].startswith(family), (source, [m["code"] for m in data["matches"]])
    assert all(m["fix"] and "{" not in m["fix"] for m in data["matches"])


@pytest.mark.parametrize(("what", "message"), UNRELATED, ids=[u[0] for u in UNRELATED])
def test_a_look_alike_is_never_claimed(what: str, message: str) -> None:
    assert explain_text(message, None)["matches"] == [], what


@pytest.mark.parametrize(("line", "name"), [
    ("pynvml.NVMLError_LibraryNotFound: NVML Shared Library Not Found", "NVML_ERROR_LIBRARY_NOT_FOUND"),
    ("E0512 failed to initialize NVML: ERROR_DRIVER_NOT_LOADED", "NVML_ERROR_DRIVER_NOT_LOADED"),
    ("Error: NvmlError(GpuLost)", "NVML_ERROR_GPU_IS_LOST"),  # Rust's variant has no 'Is'
    ("ERROR: CUDA driver not functional: CuError(ERROR_NO_DEVICE)", "CUDA_ERROR_NO_DEVICE"),
    ("nvml error: insufficient permissions: unknown", "NVML_ERROR_NO_PERMISSION"),
])
def test_a_binding_s_spelling_names_its_code(line: str, name: str) -> None:
    assert name in [status.name for status in read(line).statuses]


def test_nvml_words_are_nvml_s_only_on_a_line_that_names_nvml() -> None:
    assert read("QSqlDatabase: QMYSQL driver not loaded").statuses == ()
    assert [s.name for s in read("Failed to initialize NVML: Driver Not Loaded").statuses] == \
        ["NVML_ERROR_DRIVER_NOT_LOADED"]


def test_an_availability_probe_of_another_device_says_nothing_of_cuda() -> None:
    assert read("torch.backends.mps.is_available() False").phrases == ()
    said = read(">>> torch.cuda.is_available()\nFalse").phrases
    assert said and said[0].finding == "CD102"
