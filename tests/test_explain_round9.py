"""Issue 41, round nine: classes read from a message's structure and judged against compat/ data, not whole sentences.

A kernel module that could not be built or loaded, named in the module loader's or DKMS's own words and judged by its
name (compat/errors.toml [[kernel_module]]: NVIDIA's driver modules CD101, GPUDirect's CD119; another module's never
claimed); NVIDIA's host components said to fail on a line that names them ([[component]]: Fabric Manager, DCGM, CDI
and the container toolkit, GPUDirect RDMA, ...); a framework's own CUDA extension said absent (compat/libraries.toml
[extension_words]); a status's C type before its number (cudaError_t 98); NCCL's result codes; NVIDIA's short text
after OpenCV's and TensorRT's error categories. Every message is quoted from the public thread or source beside it."""

from __future__ import annotations

import pytest

from cudnn_doctor.commands.explain import explain_text
from cudnn_doctor.explain.read_events import module_row

# (source, the first answer's code, the message as the thread prints it)
CASES = [
    # kernel modules, named by the module loader and DKMS
    ("Mellanox/nv_peer_memory#84", "CD119", "[root@n120 ~]# modprobe -v nv_peer_mem\n"
     "insmod /lib/modules/3.10.0-1127.19.1.el7.x86_64/extra/nv_peer_mem.ko\n"
     "modprobe: ERROR: could not insert 'nv_peer_mem': Unknown symbol in module, or unknown parameter (see dmesg)"),
    ("NVIDIA/gpu-operator#2868", "CD119", "DRIVER_ARCH is aarch64\nmodprobe: ERROR: could not insert 'nvidia_peermem': "
     "Invalid argument\nfailed to load nvidia-peermem module"),
    ("Mellanox/nv_peer_memory#84 (dmesg)", "CD119", "[Fri Feb 12 11:47:20 2021] nv_peer_mem: Unknown symbol "
     "ib_register_peer_memory_client (err 0)"),
    ("a public Ubuntu forum thread (2014, DKMS of nvidia-331-updates)", "CD101",
     "run-parts: executing /etc/kernel/postinst.d/dkms 3.16.4-focaltech-2+ /boot/vmlinuz-3.16.4-focaltech-2+\n"
     "Error! Bad return status for module build on kernel: 3.16.4-focaltech-2+ (x86_64)\n"
     "Consult /var/lib/dkms/nvidia-331-updates/331.38/build/make.log for more information."),
    ("an Arch Linux maintenance note (2026, dkms install of nvidia/580.95.05)", "CD101",
     "(3/9) Install DKMS modules\n==> dkms install --no-depmod nvidia/580.95.05 -k 7.1.10-arch1-1\n"
     "Error! Bad return status for module build on kernel: 7.1.10-arch1-1 (x86_64)\n"
     "Consult /var/lib/dkms/nvidia/580.95.05/build/make.log for more information.\nerror: command failed to execute "
     "correctly"),
    # NVIDIA's host components
    ("siderolabs/pkgs#720", "CD170", "fabric manager NVIDIA GPU driver interface version 525.85.12 don't match with "
     "driver version 530.41.03. Please update with matching NVIDIA driver package."),
    ("akash-network/website#632", "CD170", "Nov 05 13:55:26 node1 nv-fabricmanager[104230]: fabric manager NVIDIA GPU "
     "driver interface version 550.127.05 doesn't match with driver version 550.120. Please update with the matching "
     "NVIDIA driver package.\nNov 05 13:55:26 node1 systemd[1]: nvidia-fabricmanager.service: Control process exited, "
     "code=exited, status=1/FAILURE"),
    ("NVIDIA/gpu-operator#356", "CD170", "[root@test-rocky8-kvm63 ~]#  systemctl start nvidia-fabricmanager\nJob for "
     "nvidia-fabricmanager.service failed because the control process exited with error code."),
    ("NVIDIA/DCGM dcgm_structs.h (DCGM_ST_CONNECTION_NOT_VALID)", "CD104",
     "Error: Unable to connect to host engine. Host engine connection invalid/disconnected."),
    ("NVIDIA/nccl src/transport/net_ib.cc", "CD119", "NCCL INFO NET/IB : GPU Direct RDMA Disabled for HCA 0 'mlx5_0' "
     "(no module or not supported by GPU)"),
    # a framework's own CUDA extension
    ("NVIDIA/apex apex/optimizers/fused_adam.py", "CD409", "    raise RuntimeError('apex.optimizers.FusedAdam requires "
     "cuda extensions')\nRuntimeError: apex.optimizers.FusedAdam requires cuda extensions"),
    ("state-spaces/mamba (selective_scan_cuda)", "CD409", "    import selective_scan_cuda\n"
     "ModuleNotFoundError: No module named 'selective_scan_cuda'"),
    # a status's type before its number; NVIDIA's text after OpenCV's and TensorRT's categories
    ("kaldi-asr/kaldi cudamatrix (CU_SAFE_CALL)", "CD404", "ERROR (nnet3-train[5.5]:AddVecVec():cu-vector.cc:572) "
     "cudaError_t 98 : \"invalid device function\" returned from 'cudaGetLastError()'"),
    ("opencv/opencv private.cuda.hpp (cudaSafeCall)", "CD110", "what():  OpenCV(4.3.0) /home/user/opencv/modules/core/"
     "src/cuda_info.cpp:62: error: (-217:Gpu API call) unknown error in function 'getCudaEnabledDeviceCount'"),
    ("NVIDIA TensorRT logger (TensorRT 10, a 2025 TensorRT-LLM log)", "CD109", "[11/07/2025-17:42:27] [TRT] [E] "
     "[resizingAllocator.cpp::allocate::78] Error Code 1: Cuda Runtime (out of memory)"),
    # NCCL's codes by name: the network's failure
    ("NVIDIA/nccl nccl.h (ncclSystemError)", "CD119", "horovod.common.exceptions.HorovodInternalError: ncclAllReduce "
     "failed: ncclSystemError: System call (e.g. socket, malloc) or external library call failed or device error."),
]

# look-alikes: another module's DKMS build or load, another vendor's, a license that is not NVIDIA's
UNRELATED = [
    ("a public Ubuntu forum thread (2014, VirtualBox's DKMS module)", "Loading new virtualbox-4.3.14 DKMS files...\n"
     "Building only for 3.17.0-rc5+\nBuilding initial module for 3.17.0-rc5+\nError! Bad return status for module "
     "build on kernel: 3.17.0-rc5+ (x86_64)\nConsult /var/lib/dkms/virtualbox/4.3.14/build/make.log for more "
     "information.\nJob for virtualbox.service failed."),
    ("a public AMD ROCm install thread (amdgpu-dkms)", "Loading new amdgpu-5.6.0.15-1098277 DKMS files...\nBuilding "
     "for 5.4.0-56-generic\nError! Bad return status for module build on kernel: 5.4.0-56-generic (x86_64)\nConsult "
     "/var/lib/dkms/amdgpu/5.6.0.15-1098277/build/make.log for more information.\ndpkg: error processing package "
     "amdgpu-dkms (--configure):"),
    ("kmod's words for a Wi-Fi module under Secure Boot", "modprobe: ERROR: could not insert 'rtl8821ce': Required key "
     "not available"),
    ("a MATLAB license error (not NVIDIA's)", "License checkout failed.\nLicense Manager Error -9\nThis error may "
     "occur when the hostid or username does not match."),
    # AMD's GPUs through CDI and Kubernetes (ROCm/container-toolkit, ROCm/k8s-device-plugin): another vendor's
    ("AMD's CDI devices", "Error: setting up CDI devices: unresolvable CDI devices amd.com/gpu=all"),
    ("AMD's device plugin", "0/3 nodes are available: 3 Insufficient amd.com/gpu."),
    # a cloud's compute instance is no MIG instance
    ("a cloud API's words", "ERROR: Failed to create compute instance: quota exceeded for region"),
]


@pytest.mark.parametrize(("source", "code", "message"), CASES, ids=[c[0] for c in CASES])
def test_each_class_answers_with_its_code(source: str, code: str, message: str) -> None:
    data = explain_text(message, None)
    assert data["matches"], source
    assert data["matches"][0]["code"] == code, (source, [m["code"] for m in data["matches"]])


@pytest.mark.parametrize(("source", "message"), UNRELATED, ids=[u[0] for u in UNRELATED])
def test_look_alikes_are_never_claimed(source: str, message: str) -> None:
    assert explain_text(message, None)["matches"] == [], source


def test_a_module_is_judged_by_its_name() -> None:
    assert module_row("nvidia-dkms-580-open")["code"] == "CD101"  # type: ignore[index]
    assert module_row("nvidia_uvm")["code"] == "CD101"  # type: ignore[index]
    assert module_row("nv_peer_mem.ko")["code"] == "CD119"  # type: ignore[index]
    assert module_row("nvidia-peermem")["code"] == "CD119"  # type: ignore[index]
    assert module_row("amdgpu") is None and module_row("virtualbox") is None and module_row("zfs") is None


def test_the_module_and_the_component_reach_the_answer() -> None:
    module = explain_text("modprobe: ERROR: could not insert 'nvidia_uvm': Invalid argument", None)["matches"][0]
    assert "nvidia_uvm" in module["cause"]
    fabric = explain_text(CASES[5][2], None)["matches"][0]
    assert "Fabric Manager" in fabric["cause"] and "nvidia-fabricmanager" in fabric["fix"]
    assert "525.85.12" in fabric["cause"] and "530.41.03" in fabric["cause"]  # both releases the message names


def test_a_toolkit_that_lacks_the_gpu_is_the_toolkits_answer() -> None:
    """AccelerateHS/accelerate-llvm (accelerate-llvm-ptx, Libdevice/Load.hs): the subject that lacks the architecture is
    the CUDA toolkit, so the answer is CD206 with the first toolkit that knows the GPU."""
    message = ("This device (compute capability 8.6) is not supported by this version of the CUDA toolkit (10020)\n"
               "Please upgrade to the latest version of the CUDA toolkit and reinstall the 'cuda' package.")
    answer = explain_text(message, None)["matches"][0]
    assert answer["code"] == "CD206" and "8.6" in answer["cause"]


@pytest.mark.parametrize("message", [
    # gromacs/gromacs src/gromacs/taskassignment/findallgputasks.cpp (gmx_fatal), as a Slurm user posted it
    "Fatal error:\nCannot run short-ranged nonbonded interactions on a GPU because no GPU is detected.",
    # MathWorks Parallel Computing Toolbox, as posted with MATLAB's gpuDevice
    ">> gpuDevice\nError using gpuDevice (line 26)\nNo supported GPU device was found on this computer. To learn more "
    "about supported GPU devices, see www.mathworks.com/gpudevice",
])
def test_no_gpu_in_words_that_name_no_vendor(message: str) -> None:
    assert explain_text(message, None)["matches"][0]["code"] == "CD102"


def test_no_gpu_of_another_vendor_is_never_claimed() -> None:
    # the same words on a line naming Apple's MPS or AMD's HIP are another vendor's; "chip" is no "hip"
    assert explain_text("RuntimeError: no GPU found: the MPS backend is not available on this Mac", None)["matches"] == []
    assert explain_text("HIP: no GPU device was found", None)["matches"] == []
    assert explain_text("Error using gpuDevice: no supported GPU device was found on this chip", None)["matches"]


def test_every_status_of_the_data_is_read_by_its_name() -> None:
    """Every row of compat/status_codes.toml (CUDA's, cuDNN's, NVML's, the math libraries', NCCL's, nvJPEG's,
    nvJitLink's, cuFile's) is read back from a line that names it the way a check macro prints it, and a row with a
    finding answers with that finding's family."""
    from cudnn_doctor.explain.reader import read
    from cudnn_doctor.knowledge.data import load

    rows = load("status_codes")["status"]
    assert {"nccl", "nvjpeg", "nvjitlink", "cufile", "dcgm"} <= {row["api"] for row in rows}
    unread = []
    for row in rows:
        facts = read(f"error: call failed with {row['name']} at library.cpp:42")
        if row["name"] not in {status.name for status in facts.statuses}:
            unread.append(row["name"])
    assert unread == []
    answer = explain_text("nvJitLink error: NVJITLINK_ERROR_PTX_COMPILE", None)["matches"][0]
    assert answer["code"] == "CD207"
    assert explain_text("cuFileDriverOpen failed: CU_FILE_DRIVER_NOT_INITIALIZED", None)["matches"][0]["code"] == "CD119"
    # DCGM's codes are below zero; the Python bindings raise them by name (pydcgm's DCGMError)
    assert explain_text("dcgm_structs.DCGMError_ConnectionNotValid: DCGM_ST_CONNECTION_NOT_VALID", None)["matches"][0][
        "code"] == "CD104"


@pytest.mark.parametrize(("source", "code", "message"), [
    ("NVIDIA/cuda-checkpoint (a driver older than it needs; the words of cudaErrorInsufficientDriver)", "CD103",
     " ./cuda-checkpoint --toggle --pid  9147\nInsufficient driver"),
    ("cupy's CUDADriverError with the name spelled (CUDA_ERROR_NO_BINARY_FOR_GPU)", "CD404",
     "cupy.cuda.driver.CUDADriverError: no binary for GPU"),
    ("ROCm/rccl and NVIDIA/nccl socket.cc (bootstrap interface)", "CD175",
     "No interface found in the same subnet as remote address fe80::1461:22ff:fe33:b471<45015>\n"
     "No usable listening interface found"),
])
def test_a_status_in_words_and_ncclss_interfaces(source: str, code: str, message: str) -> None:
    assert explain_text(message, None)["matches"][0]["code"] == code, source


@pytest.mark.parametrize(("source", "code", "message"), [
    ("NVIDIA driver README, the X log", "CD101", "[    12.345] (EE) NVIDIA: Failed to initialize the NVIDIA kernel module. "
     "Please see the\n[    12.345] (EE) NVIDIA:     system's kernel log for additional error messages and\n"
     "[    12.345] (EE) No devices detected."),
    ("the kernel's firmware loader for the open modules' GSP", "CD102",
     "nvidia 0000:01:00.0: firmware: failed to load nvidia/550.54.14/gsp_ga10x.bin (-2)"),
    ("nvidia-smi's warning", "CD142", "WARNING: infoROM is corrupted at gpu 0000:05:00.0"),
    ("nvidia-smi -q, clocks event reasons", "CD133", "    Clocks Event Reasons\n        HW Power Brake Slowdown   "
     "          : Active"),
    ("T-vK/MobilePassThrough#4 (dnf)", "CD521", "Problem: package akmod-nvidia-3:418.74-1.fc30.x86_64 requires "
     "xorg-x11-drv-nvidia-kmodsrc >= 3:418.74-1, but none of the providers can be installed"),
    ("CachyOS/distribution#502 (pacman)", "CD521", "error: failed to prepare transaction (could not satisfy dependencies)\n"
     ":: unable to satisfy dependency 'nvidia-utils=610.43.02' required by nvidia-open"),
    ("aws-samples/aws-deep-learning-ami-ubuntu-dcv-desktop#18 (apt)", "CD521",
     "E: Unable to correct problems, you have held broken packages.\n nvidia-dkms-530 : Depends: nvidia-kernel-common-530 "
     "(>= 530.41.03) but 530.30.02-0ubuntu1 is to be installed"),
])
def test_the_driver_in_the_words_of_x_firmware_smi_and_package_managers(source: str, code: str, message: str) -> None:
    assert explain_text(message, None)["matches"][0]["code"] == code, source


@pytest.mark.parametrize(("source", "code", "wanted", "message"), [
    # Dao-AILab/flash-attention and state-spaces/mamba setup.py (bare_metal_version < Version("11.6"))
    ("state-spaces/mamba setup.py", "CD220", "11.6", "      RuntimeError: mamba_ssm is only supported on CUDA 11.6 and above."
     "  Note: make sure nvcc has a supported version by running nvcc -V.\n      [end of output]"),
    # ggml-cuda's bad_arch(): the GPU is the one ggml_cuda_init names
    ("ggml-org/llama.cpp ggml-cuda.cu (bad_arch)", "CD404", "5.2", "ggml_cuda_init: found 1 CUDA devices:\n  Device 0: "
     "NVIDIA GeForce GTX 970, compute capability 5.2, VMM: yes\nERROR: ggml-cuda was compiled without support for the "
     "current GPU architecture."),
    # pytorch/pytorch torch/utils/cpp_extension.py (_get_cuda_arch_flags)
    ("pytorch/pytorch cpp_extension.py", "CD404", "12.0", "ValueError: Unknown CUDA arch (12.0) or GPU not supported"),
])
def test_requirements_and_architectures_in_other_words(source: str, code: str, wanted: str, message: str) -> None:
    answer = explain_text(message, None)["matches"][0]
    assert answer["code"] == code, source
    assert wanted in answer["cause"] + answer["fix"], source
