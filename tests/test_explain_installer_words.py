"""Issue 41, round seventeen (lead, after the round's explain set was published): an install the machine refused, in
the installer's own words, whatever the package: uv's hash check (CD501, as pip's), pip out of disk space (CD507),
pip on Windows without long paths (CD514). Each beside a look-alike that is not that refusal.

The words are the installers' own (pip's create_os_error_message, uv's Error::HashMismatch; compat/errors.toml names
them); the packages and paths below are written for these tests."""

from __future__ import annotations

import pytest

from cudnn_doctor.commands.explain import explain_text


def codes(message: str) -> list[str]:
    return [str(match["code"]) for match in explain_text(message, None)["matches"]]


@pytest.mark.parametrize(("message", "package"), [
    ("Resolved 12 packages in 3ms\n  × Failed to download `nvidia-cudnn-cu12==9.1.0.70`\n"
     "  ╰─▶ Hash mismatch for `nvidia-cudnn-cu12==9.1.0.70`\n\n      Expected:\n        sha256:" + "a" * 64 +
     "\n\n      Computed:\n        sha256:" + "b" * 64, "nvidia-cudnn-cu12"),
    ("error: Failed to install: torch-2.6.0+cu124-cp312-cp312-linux_x86_64.whl (torch==2.6.0+cu124)\n"
     "  Caused by: Hash mismatch for `torch==2.6.0+cu124`", "torch"),
])
def test_uvs_hash_check_is_a_checksum_mismatch_with_the_package_named(message: str, package: str) -> None:
    match = explain_text(message, None)["matches"][0]
    assert match["code"] == "CD501", match
    assert package in str(match["cause"]) and "uv cache clean" in str(match["fix"]), match


def test_another_tools_hash_mismatch_is_not_uvs() -> None:
    assert "CD501" not in codes("fixture tarball hash mismatch for `fixtures/a.tar`: expected=1 actual=2")


@pytest.mark.parametrize("message", [
    "Installing collected packages: nvidia-cublas-cu12, nvidia-cudnn-cu12, torch\n"
    "ERROR: Could not install packages due to an OSError: [Errno 28] No space left on device",
    "Collecting torch==2.6.0+cu124\n  Downloading https://download.pytorch.org/whl/cu124/torch-2.6.0%2Bcu124-cp312-"
    "cp312-linux_x86_64.whl (768.4 MB)\nERROR: Could not install packages due to an OSError: [Errno 28] No space left on "
    "device",
])
def test_a_disk_that_fills_as_pip_installs_the_gpu_stacks_wheels_is_cd507(message: str) -> None:
    """pip's '[Errno 28] No space left on device' while it fetches or unpacks torch and its nvidia-* wheels: the
    registry's code for an install without disk space (CD507), the family rounds seventeen and eighteen label it
    (round six's two cases, labelled before that rule, said as claimed in benchmarks/README.md)."""
    match = explain_text(message, None)["matches"][0]
    assert match["code"] == "CD507" and "TMPDIR" in str(match["fix"]), match


@pytest.mark.parametrize("message", [
    "  File \"train.py\", line 88, in save\n    torch.save(state, path)\nOSError: [Errno 28] No space left on device",
    "ERROR: Could not install packages due to an EnvironmentError: [Errno 28] No space left on device",
    "Collecting pandas\n  Downloading pandas-2.2.3.tar.gz (4.4 MB)\nERROR: Could not install packages due to an "
    "OSError: [Errno 28] No space left on device",
])
def test_a_full_disk_elsewhere_is_the_machines_not_the_gpu_stacks(message: str) -> None:
    """A program saving to a full disk, or pip's words naming no package of the GPU stack: not claimed."""
    assert "CD507" not in codes(message)


def test_pip_on_windows_without_long_paths_cannot_install_into_that_folder() -> None:
    message = ("ERROR: Could not install packages due to an OSError: [Errno 2] No such file or directory: "
               "'C:\\\\Users\\\\me\\\\AppData\\\\Local\\\\Temp\\\\pip-install-x1\\\\pkg_0123\\\\csrc\\\\" + "a" * 200 +
               ".cu'\nHINT: This error might have occurred since this system does not have Windows Long Path support "
               "enabled. You can find information on how to enable this at https://pip.pypa.io/warnings/enable-long-paths")
    match = explain_text(message, None)["matches"][0]
    assert match["code"] == "CD514" and "LongPathsEnabled" in str(match["fix"]), match


def test_a_missing_file_on_windows_without_the_hint_is_not_a_long_path() -> None:
    message = ("ERROR: Could not install packages due to an OSError: [Errno 2] No such file or directory: "
               "'C:\\\\work\\\\requirements-gpu.txt'")
    assert "CD514" not in codes(message)


@pytest.mark.parametrize("message", [
    # MSVC's C2039, with the colon after the member's name
    "network_cuda.cc(212): error C2039: 'clockRate': is not a member of 'cudaDeviceProp'",
    # GCC, where the code holds the structure as const (UTF-8 quotes)
    "cuda_info.cpp:427:43: error: \u2018const struct cudaDeviceProp\u2019 has no member named \u2018clockRate\u2019",
])
def test_a_field_cuda_13_removed_is_named_in_msvcs_and_gccs_words(message: str) -> None:
    """The compilers' other forms of 'no such member' name the cudaDeviceProp field CUDA 13.0 removed (CD220, from
    [[removed_api]]): they were missed (round seventeen's published set, two of three such messages)."""
    match = explain_text(message, None)["matches"][0]
    assert match["code"] == "CD220" and "cudaDeviceProp::clockRate" in str(match["cause"]), match


def test_a_member_the_toolkit_never_had_is_not_a_removed_one() -> None:
    assert "CD220" not in codes("main.cpp(9): error C2039: 'speed': is not a member of 'Engine'")
