"""Issue 41, round twenty (builder e29): why explain's gains did not reach the next set, and what was built for it.

1. The installers' rows of compat/errors.toml each listed the packages they were written from (torch, nvidia-*,
   tensorrt ...), so the same refusal of another GPU package (deep_gemm, sgl-kernel, nunchaku, conda's libcublas)
   went unread: they now read one table (`{gpu_package}`: compat/libraries.toml's [[package]] prefixes and frameworks,
   knowledge/gpu_distributions.py).
2. conda's own refusals (conda/exceptions.py, conda/core/path_actions.py) of the GPU stack's channels and packages: a
   channel its mirror does not carry, a checksum, a corrupted package in the cache.
Each is tested both ways: the GPU stack's package or channel is the installer's refusal (CD5), the same words about
another package or channel stay unclaimed. Messages here are written apart from the development cases
(benchmarks/explain_eval/cases_r20_e29.toml)."""

from __future__ import annotations

import re

from cudnn_doctor.knowledge.data import load
from cudnn_doctor.knowledge.gpu_distributions import PLACEHOLDER, gpu_package_pattern
from tests.test_explain_installers import answers as answers_of
from tests.test_explain_installers import declined, first


def test_every_installer_row_reads_the_one_table_of_gpu_packages() -> None:
    """The rows that name the package an installer refused share the table: a package of the table is read by every
    such row, where before each row knew its own list (uv's download row did not know deep-gemm, the permission row
    not flash-attn)."""
    rows = [row for row in load("errors")["error"] if PLACEHOLDER in row["pattern"]]
    assert len(rows) >= 8, [row["id"] for row in rows]
    pattern = re.compile(f"^{gpu_package_pattern()}$", re.IGNORECASE)
    for name in ("torch", "torchvision", "nvidia-cudnn-cu12", "nvidia_cublas_cu12", "tensorrt_cu12_libs", "deep_gemm",
                 "deep-ep", "sgl-kernel", "nunchaku", "flash_attn", "cupy-cuda12x", "libcublas", "cuda-nvcc", "pytorch"):
        assert pattern.match(name), name
    for name in ("numpy", "pillow", "black", "pytorch-lightning", "libcurl", "jaxtyping", "mkl"):
        assert not pattern.match(name), name


def test_uv_download_failure_of_any_gpu_package_of_the_table() -> None:
    answer = first("  × Failed to download `sgl-kernel==0.3.16.post3`\n"
                   "  ├─▶ Failed to fetch: `https://files.pythonhosted.org/packages/sgl_kernel-0.3.16.post3-cp310-abi3-"
                   "manylinux2014_x86_64.whl`\n  ╰─▶ error decoding response body\n      operation timed out")
    assert answer["code"] == "CD511", answer  # was unrecognised: the row listed torch, nvidia-*, tensorrt ... only
    assert "sgl-kernel" in str(answer["cause"])
    declined("  × Failed to download `pillow==10.3.0`\n  ├─▶ Failed to fetch: `https://files.pythonhosted.org/x`\n"
             "  ╰─▶ error decoding response body\n      operation timed out")


def test_pip_permission_refusal_while_installing_a_cuda_kernel_package() -> None:
    answer = first("Installing collected packages: flash_attn\nERROR: Could not install packages due to an OSError: "
                   "[WinError 5] Access is denied: 'C:\\\\Program Files\\\\Python311\\\\Lib\\\\site-packages\\\\flash_attn'")
    assert answer["code"] == "CD503", answer  # was unrecognised: flash-attn was not in that row's list
    declined("Installing collected packages: requests\nERROR: Could not install packages due to an OSError: "
             "[WinError 5] Access is denied: 'C:\\\\Program Files\\\\Python311\\\\Lib\\\\site-packages\\\\requests'")


def test_pip_refuses_the_wheel_of_a_cuda_only_kernel_package_for_this_platform() -> None:
    answer = first("ERROR: deep_ep-1.2.1+a3f5c2d-cp311-cp311-linux_x86_64.whl is not a supported wheel on this platform.")
    assert answer["code"] == "CD520", answer  # was unrecognised: deep_ep was no package of the GPU stack
    assert "3.11" in str(answer["fix"])
    declined("ERROR: pyzmq-25.1.2-cp311-cp311-linux_x86_64.whl is not a supported wheel on this platform.")


def test_conda_channel_that_a_mirror_does_not_carry_both_wordings() -> None:
    new = first("UnavailableInvalidChannel: HTTP 404 NOT FOUND for channel pytorch "
                "<https://mirror.example.org/anaconda/cloud/pytorch>\n\nThe channel is not accessible or is invalid.")
    assert new["code"] == "CD511", new
    assert "mirror.example.org/anaconda/cloud/pytorch" in str(new["cause"])
    assert "conda config --show-sources" in str(new["fix"])
    old = first("UnavailableInvalidChannel: The channel is not accessible or is invalid.\n  channel name: rapidsai\n"
                "  channel url: https://mirror.example.org/anaconda/rapidsai\n  error code: 403")
    assert old["code"] == "CD511", old
    assert "403" in str(old["cause"])
    declined("UnavailableInvalidChannel: HTTP 404 NOT FOUND for channel bioconda_old "
             "<https://conda.anaconda.org/bioconda_old>\n\nThe channel is not accessible or is invalid.")
    declined("UnavailableInvalidChannel: The channel is not accessible or is invalid.\n  channel name: conda-forge\n"
             "  channel url: https://mirror.example.org/anaconda/conda-forge\n  error code: 404")


def test_conda_checksum_refusal_of_a_gpu_channel_or_package() -> None:
    by_channel = first("ChecksumMismatchError: Conda detected a mismatch between the expected content and downloaded "
                       "content\nfor url 'https://conda.anaconda.org/nvidia/linux-64/cuda-nvcc-12.4.131-0.tar.bz2'.\n"
                       "  expected sha256: 1111\n  actual sha256: 2222")
    assert by_channel["code"] == "CD501", by_channel
    by_package = first("ChecksumMismatchError: Conda detected a mismatch between the expected content and downloaded "
                       "content\nfor url 'https://conda.anaconda.org/conda-forge/linux-64/libcublas-12.6.4.1-h5888daf_0"
                       ".conda'.\n  expected sha256: 1111\n  actual sha256: 2222")
    assert by_package["code"] == "CD501", by_package
    assert "libcublas" in str(by_package["cause"])
    declined("ChecksumMismatchError: Conda detected a mismatch between the expected content and downloaded content\n"
             "for url 'https://conda.anaconda.org/conda-forge/linux-64/libcurl-8.8.0-hca28451_1.conda'.\n"
             "  expected sha256: 1111\n  actual sha256: 2222")


def test_conda_corrupted_gpu_package_in_the_cache() -> None:
    answer = first("SafetyError: The package for cuda-nvcc located at /opt/conda/pkgs/cuda-nvcc-12.1.105-0\n"
                   "appears to be corrupted. The path 'bin/ptxas'\nhas an incorrect size.\n"
                   "  reported size: 30425088 bytes\n  actual size: 16777216 bytes")
    assert answer["code"] == "CD515", answer
    assert "/opt/conda/pkgs/cuda-nvcc-12.1.105-0" in str(answer["fix"])
    declined("SafetyError: The package for libxml2 located at /opt/conda/pkgs/libxml2-2.10.4-hcbfbd50_0\n"
             "appears to be corrupted. The path 'lib/libxml2.so.2.10.4'\nhas an incorrect size.\n"
             "  reported size: 1484560 bytes\n  actual size: 1048576 bytes")


def test_pip_download_of_a_gpu_wheel_cut_short_read_by_urllib3s_frame() -> None:
    """The log cut before urllib3's own error line: the GPU wheel pip was downloading and the traceback's first frame
    (urllib3's _error_catcher, around the body read) say the download broke."""
    answer = first("  Downloading https://download.pytorch.org/whl/cu121/torchvision-0.18.1%2Bcu121-cp312-cp312-"
                   "linux_x86_64.whl (7.1 MB)\n     ━━━━━━╺━━━━━━━━━━━━━━━━━━━━━ 1.9/7.1 MB 1.1 kB/s eta 1:18:40\n"
                   "ERROR: Exception:\nTraceback (most recent call last):\n  File \"/opt/venv/lib/python3.12/"
                   "site-packages/pip/_vendor/urllib3/response.py\", line 438, in _error_catcher\n    yield")
    assert answer["code"] == "CD511", answer  # was unrecognised: the row needed urllib3's last line
    assert "--timeout" in str(answer["fix"])
    # another package cut the same way, and a GPU wheel whose traceback says the disk was full (CD507's words)
    declined("  Downloading opencv_python-4.10.0.84-cp37-abi3-win_amd64.whl (38.8 MB)\n"
             "     ---------- 9.5/38.8 MB 20.0 kB/s eta 0:24:25\nERROR: Exception:\nTraceback (most recent call last):\n"
             "  File \"C:\\\\Python312\\\\Lib\\\\site-packages\\\\pip\\\\_vendor\\\\urllib3\\\\response.py\", line 438, "
             "in _error_catcher\n    yield")
    full = answers_of("  Downloading torch-2.3.1-cp311-cp311-manylinux1_x86_64.whl (779.1 MB)\n"
                      "     ━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━ 779.1/779.1 MB 9.0 MB/s eta 0:00:00\nERROR: Exception:\n"
                      "Traceback (most recent call last):\n  File \"/venv/lib/python3.11/site-packages/pip/_vendor/"
                      "urllib3/response.py\", line 438, in _error_catcher\n    yield\nOSError: [Errno 28] No space "
                      "left on devi")
    assert all(match.get("id") != "pip-gpu-wheel-download-cut-short" for match in full), full


def test_isolated_build_read_where_the_traceback_stops_in_pips_hook_runner() -> None:
    """pip names the step (its get_requires_for_build_* hook) and the traceback opens in the script it runs hooks in,
    cut before the setup's own last line: a package whose setup imports torch failed there for want of torch."""
    answer = first("Collecting causal-conv1d\n  Using cached causal_conv1d-1.5.0.post8.tar.gz (9.3 kB)\n"
                   "  Installing build dependencies ... done\n  Getting requirements to build wheel ... error\n"
                   "  error: subprocess-exited-with-error\n\n  × Getting requirements to build wheel did not run "
                   "successfully.\n  │ exit code: 1\n  ╰─> [18 lines of output]\n      Traceback (most recent call "
                   "last):\n        File \"/srv/env/lib/python3.12/site-packages/pip/_vendor/pyproject_hooks/"
                   "_in_process/_in_process.py\", line 389, in <module>\n          main()")
    assert answer["code"] == "CD520", answer  # was unrecognised: the hook's own frame was cut off
    assert "--no-build-isolation causal-conv1d" in str(answer["fix"])
    # pip's banner alone (no traceback), and the same cut traceback for a package whose setup does not import torch
    declined("Collecting causal-conv1d\n  Using cached causal_conv1d-1.5.0.post8.tar.gz (9.3 kB)\n"
             "  Getting requirements to build wheel ... error\n  error: subprocess-exited-with-error\n\n"
             "  × Getting requirements to build wheel did not run successfully.\n  │ exit code: 1\n"
             "  ╰─> See above for output.")
    declined("Collecting pycocotools\n  Using cached pycocotools-2.0.8.tar.gz (24 kB)\n"
             "  × Getting requirements to build wheel did not run successfully.\n  │ exit code: 1\n"
             "  ╰─> [18 lines of output]\n      Traceback (most recent call last):\n        File \"/srv/env/lib/"
             "python3.12/site-packages/pip/_vendor/pyproject_hooks/_in_process/_in_process.py\", line 389, in "
             "<module>\n          main()")
