"""Issue 41, round nineteen (builder e28): the installers' own refusals, each shape as the installer's source prints
it (pip's exceptions.py and install.py, uv's install and cache errors, apt's acquire-item.cc, dpkg's archives.c,
conda's exceptions.py, Nix's derivation-check.cc, makeself's header, nvidia-installer's misc.c and kernel.c: the
commits are in compat/errors.toml's "e28" rows), tested both ways: the GPU stack's package, file, index or repository
is the installer's refusal (CD5, the driver installer's CD1), and the same words about another package stay
unclaimed. Messages here are written apart from the development cases (benchmarks/explain_eval/cases_r19_e28.toml)."""

from __future__ import annotations

from tests.test_explain_installers import declined, first


def test_pip_read_timeout_on_a_gpu_wheel_is_a_download_failure() -> None:
    answer = first("#7 912.4 pip._vendor.urllib3.exceptions.ReadTimeoutError: "
                   "HTTPSConnectionPool(host='pypi.nvidia.com', port=443): Read timed out.")
    assert answer["code"] == "CD511", answer  # was unrecognised
    assert "--timeout" in str(answer["fix"])
    streamed = first("  Downloading nvidia_cudnn_cu12-9.1.0.70-py3-none-manylinux2014_x86_64.whl (664.8 MB)\n"
                     "ERROR: Exception:\nTraceback (most recent call last):\n"
                     "pip._vendor.urllib3.exceptions.ProtocolError: ('Connection broken: IncompleteRead(1048 bytes "
                     "read, 2048 more expected)', IncompleteRead(1048 bytes read, 2048 more expected))")
    assert streamed["code"] == "CD511", streamed
    # the same time-out where no installer downloads (a program's own request), or pip downloading another package
    declined("> ConnectionError\n> HTTPSConnectionPool(host='download.pytorch.org', port=443): Read timed out.")
    declined("  Downloading pandas-2.2.1-cp310-cp310-manylinux_2_17_x86_64.whl (13.0 MB)\nERROR: Exception:\n"
             "pip._vendor.urllib3.exceptions.ReadTimeoutError: HTTPSConnectionPool(host='files.pythonhosted.org', "
             "port=443): Read timed out.")


def test_pip_incomplete_download_of_a_gpu_wheel_names_its_resume_option() -> None:
    answer = first("error: incomplete-download\n\n× Download failed after 6 attempts because not enough bytes were "
                   "received (1.1 GB/2.5 GB)\n╰─> URL: https://download.pytorch.org/whl/cu124/"
                   "torch-2.6.0%2Bcu124-cp312-cp312-linux_x86_64.whl")
    assert answer["code"] == "CD511", answer
    assert "--resume-retries" in str(answer["fix"])
    declined("× Download failed because not enough bytes were received (20.0 MB/30.1 MB)\n"
             "╰─> URL: https://files.pythonhosted.org/packages/aa/bb/scipy-1.13.0-cp312-cp312-win_amd64.whl")


def test_uv_download_failure_of_a_gpu_wheel_is_a_download_not_a_hash() -> None:
    answer = first("  × Failed to download `nvidia-cublas-cu12==12.4.5.8`\n"
                   "  ├─▶ Failed to fetch: `https://files.pythonhosted.org/packages/nvidia_cublas_cu12-12.4.5.8-py3-none"
                   "-manylinux2014_x86_64.whl`\n  ╰─▶ error decoding response body\n      operation timed out")
    assert answer["code"] == "CD511", answer
    assert "UV_HTTP_TIMEOUT" in str(answer["fix"])
    # a hash mismatch under the same header stays uv-hash-mismatch's (CD501)
    hashed = first("  × Failed to download `torch==2.7.0+cu128`\n  ╰─▶ Hash mismatch for `torch==2.7.0+cu128`")
    assert hashed["code"] == "CD501", hashed
    declined("  × Failed to download `black==24.3.0`\n  ├─▶ Failed to fetch: `https://files.pythonhosted.org/x`\n"
             "  ╰─▶ error decoding response body")


def test_apt_checksum_and_size_refusals_from_nvidias_repository() -> None:
    hashed = first("E: Failed to fetch https://developer.download.nvidia.com/compute/cuda/repos/debian12/x86_64/"
                   "./cuda-nvcc-12-6_12.6.85-1_amd64.deb  Hash Sum mismatch")
    assert hashed["code"] == "CD501", hashed
    sized = first("E: Failed to fetch https://developer.download.nvidia.com/compute/cuda/repos/ubuntu2204/x86_64/./"
                  "nvidia-driver-570_570.86.15-0ubuntu1_amd64.deb  File has unexpected size (1204 != 2210). "
                  "Mirror sync in progress? [IP: 1.2.3.4 443]")
    assert sized["code"] == "CD517", sized
    declined("E: Failed to fetch http://archive.ubuntu.com/ubuntu/pool/main/f/firefox/firefox_124.0_amd64.deb  "
             "Hash Sum mismatch")
    declined("E: Failed to fetch http://deb.debian.org/debian/pool/main/v/vim/vim_9.0_amd64.deb  File has unexpected "
             "size (100 != 200). Mirror sync in progress?")


def test_nix_hash_mismatch_of_a_cuda_archive() -> None:
    answer = first("error: hash mismatch in fixed-output derivation '/nix/store/"
                   "0123456789abcdfghijklmnpqrsvwxyz-cuda_nvcc-linux-x86_64-12.4.131-archive.tar.xz.drv':\n"
                   "         specified: sha256-AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n"
                   "            got:    sha256-BBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBB=")
    assert answer["code"] == "CD501", answer
    declined("error: hash mismatch in fixed-output derivation '/nix/store/"
             "0123456789abcdfghijklmnpqrsvwxyz-ripgrep-14.1.0-vendor.tar.gz.drv':\n"
             "         specified: sha256-AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=")


def test_invalid_gpu_wheels_from_pip_and_uv() -> None:
    uv = first("error: Failed to install: nvidia_cudnn_cu12-9.5.1.17-py3-none-manylinux_2_28_x86_64.whl "
               "(nvidia-cudnn-cu12==9.5.1.17)\n  Caused by: The wheel is invalid: Missing .dist-info directory")
    assert uv["code"] == "CD515", uv
    pip = first("ERROR: Wheel 'torchvision' located at /tmp/pip-unpack-abc/torchvision-0.20.0+cu124-cp311-cp311-"
                "linux_x86_64.whl is invalid.")
    assert pip["code"] == "CD515", pip
    declined("error: Failed to install: numpy-2.0.0-cp312-cp312-win_amd64.whl (numpy==2.0.0)\n"
             "  Caused by: The wheel is invalid: Metadata field Name not found")
    # pip's other wording of a broken wheel on a ROCm build of a PyG package (round sixteen: unrelated)
    declined("ERROR: torch-scatter has an invalid wheel, could not read 'torch_scatter-2.1.2.dist-info/WHEEL' file: "
             "KeyError(\"There is no item named 'torch_scatter-2.1.2.dist-info/WHEEL' in the archive\")")


def test_permission_refusals_while_installing_gpu_packages() -> None:
    listed = first("Installing collected packages: nvidia-nccl-cu12, torch\n"
                   "ERROR: Could not install packages due to an OSError: [Errno 13] Permission denied: "
                   "'/usr/local/bin/torchrun'\nConsider using the `--user` option or check the permissions.")
    assert listed["code"] == "CD503", listed
    folder = first("ERROR: Could not install packages due to an OSError: [WinError 5] Access is denied: "
                   "'C:\\\\Python312\\\\Lib\\\\site-packages\\\\torch\\\\lib\\\\c10.dll'")
    assert folder["code"] == "CD503", folder
    cache = first("  × Failed to download `nvidia-cudnn-cu12==9.1.0.70`\n  ├─▶ Failed to read from the distribution "
                  "cache\n  ╰─▶ failed to rename file from C:\\uv\\cache\\.tmpAb to C:\\uv\\cache\\archive-v0\\Cd: "
                  "Access is denied. (os error 5)")
    assert cache["code"] == "CD503", cache
    # packages whose names merely contain 'torch', and a non-GPU package's cache rename
    declined("Installing collected packages: efficientnet-pytorch, segmentation_models_pytorch\n"
             "ERROR: Could not install packages due to an OSError: [Errno 13] Permission denied: "
             "'/opt/venv/lib/python3.10/site-packages/timm'")
    declined("  × Failed to download `pillow==10.4.0`\n  ├─▶ Failed to read from the distribution cache\n"
             "  ╰─▶ failed to rename file from C:\\uv\\cache\\.tmpAb to C:\\uv\\cache\\archive-v0\\Cd: Access is "
             "denied. (os error 5)")


def test_externally_managed_python_refusing_a_gpu_install() -> None:
    answer = first("$ pip install tensorflow[and-cuda]\nerror: externally-managed-environment\n\n"
                   "× This environment is externally managed")
    assert answer["code"] == "CD514", answer
    assert "venv" in str(answer["fix"])
    declined("$ pip install requests\nerror: externally-managed-environment\n\n× This environment is externally managed")


def test_conda_http_error_on_the_gpu_channels() -> None:
    answer = first("CondaHTTPError: HTTP 403 FORBIDDEN for url <https://conda.anaconda.org/pytorch/linux-64/"
                   "repodata.json>\nElapsed: 00:00.412")
    assert answer["code"] == "CD511", answer
    declined("CondaHTTPError: HTTP 000 CONNECTION FAILED for url <https://conda.anaconda.org/bioconda/noarch/"
             "repodata.json>\nElapsed: -")


def test_dpkg_overwrite_between_nvidia_packages() -> None:
    answer = first("dpkg: error processing archive /var/cache/apt/archives/nvidia-utils-550_550.120-0ubuntu1_amd64.deb "
                   "(--unpack):\n trying to overwrite '/usr/bin/nvidia-smi', which is also in package "
                   "nvidia-utils-535 535.183.01-0ubuntu1")
    assert answer["code"] == "CD521", answer
    declined("dpkg: error processing archive /var/cache/apt/archives/libglvnd-dev_1.0.0-2ubuntu2_arm64.deb (--unpack):\n"
             " trying to overwrite '/usr/lib/aarch64-linux-gnu/libEGL.so', which is also in package "
             "libmali-rk-utgard-450-r7p0:arm64 1.6-1ayufan10")


def test_nvidia_runfile_failing_its_own_checksum() -> None:
    answer = first("$ sudo sh NVIDIA-Linux-x86_64-550.127.05.run\nVerifying archive integrity... Error in checksums: "
                   "3710297463 is different from 1226470114")
    assert answer["code"] == "CD501", answer
    declined("$ ./ZED_SDK_Ubuntu22_cuda12.1_v4.1.0.zstd.run\nVerifying archive integrity...  100%  Error in MD5 "
             "checksums: 37065f4fd7121fcbed043f6b7830c80a is different from b73330ff110594863356ba57b2c02996")


def test_nvidia_installer_x_server_and_unsigned_module() -> None:
    x_server = first("ERROR: You appear to be running an X server; please exit X before installing.  For further "
                     "details, please see the section INSTALLING THE NVIDIA DRIVER in the README")
    assert x_server["code"] == "CD101", x_server
    unsigned = first("ERROR: The kernel module failed to load. Secure boot is enabled on this system, so this is likely "
                     "because it was not signed by a key that is trusted by the kernel. Please try installing the "
                     "driver again, and sign the kernel module when prompted to do so.")
    assert unsigned["code"] == "CD101", unsigned
    assert "mokutil" in str(unsigned["fix"])
    windows = first("NVIDIA Installer cannot continue\nThis NVIDIA graphics driver is not compatible with this version "
                    "of Windows.")
    assert windows["code"].startswith("CD1"), windows
    # another module's Secure Boot refusal in the same words, without NVIDIA's installer's own sentence
    declined("vboxdrv.sh: failed: The kernel module failed to load. Secure boot is enabled on this system, so this is "
             "likely because it was not signed by a key that is trusted by the kernel.")


def test_xid_43_alone_is_the_applications_own_fault() -> None:
    declined("NVRM: Xid (PCI:0000:65:00): 43, pid=41231, name=python3, channel 0x0000000a")
    # beside a fault of the GPU itself, that one answers
    answer = first("NVRM: Xid (PCI:0000:65:00): 43, pid=41231, name=python3, channel 0x0000000a\n"
                   "NVRM: Xid (PCI:0000:65:00): 79, pid=41231, GPU has fallen off the bus.")
    assert answer["code"].startswith("CD14"), answer


def test_findcuda_architecture_table_without_the_name_is_the_build_tooling() -> None:
    answer = first("CMake Error at cmake/Modules_CUDA_fix/upstream/FindCUDA/select_compute_arch.cmake:235 (message):\n"
                   "  Unknown CUDA Architecture Name 10.0a in CUDA_SELECT_NVCC_ARCH_FLAGS")
    assert answer["code"] == "CD208", answer  # was unrecognised
    assert "TORCH_CUDA_ARCH_LIST" in str(answer["fix"])
    # torch's own extension builder refusing an architecture keeps its answer (the sets label it both ways)
    assert first("ValueError: Unknown CUDA arch (10.0) or GPU not supported")["code"] == "CD404"


def test_uv_lock_release_without_files_on_a_cuda_index() -> None:
    answer = first("error: found distribution torchvision==0.15.0 @ registry+https://download.pytorch.org/whl/cu118 "
                   "with neither wheels nor source distribution")
    assert answer["code"] == "CD520", answer  # was unrecognised
    # the same words for torch from PyPI (no CUDA variant): a Python pin, not claimed
    declined("error: found distribution torch==1.10.0 @ registry+https://pypi.org/simple with neither wheels nor "
             "source distribution")


def test_poetry_hash_refusal_of_a_gpu_wheel() -> None:
    answer = first("  RuntimeError\n\n  Hash for nvidia-cusparse-cu12 (12.1.0.106) from archive "
                   "nvidia_cusparse_cu12-12.1.0.106-py3-none-manylinux1_x86_64.whl not found in known hashes "
                   "(was: sha256:f3b50f42cf363f86ab21f720998517a659a48131e8d538dc02f8768237bd884c)")
    assert answer["code"] == "CD501", answer  # was unrecognised
    assert "poetry cache clear" in str(answer["fix"])
    declined("  Hash for pendulum (3.0.0) from archive pendulum-3.0.0-cp312-none-win_amd64.whl not found in known "
             "hashes (was: sha256:0d4e8c52a1fcf5ed6cfc256d9a370fcf4360958fc79d0b08a51d55e70914df46)")
