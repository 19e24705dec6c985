"""Issue 41, round eighteen (lead, built from apt's and dnf's own texts before the round's explain set was read): a
Linux package manager refusing a GPU package by its name (apt's 'Unable to locate package %s', 'Package %s is not
available', 'has no installation candidate'; dnf's 'No match for argument', 'Unable to find a match') is a package
with no build where the installer looks (CD520), the package named in the answer; NVIDIA's repository refused for
its signing key (NO_PUBKEY A4B469963BF863CC, the key of April 2022) is an archive that cannot be verified (CD513).
The same words about a package of no GPU stack are not the doctor's business. The messages are written for these
tests in the tools' own words (compat/errors.toml names their sources)."""

from __future__ import annotations

import re

import pytest

from cudnn_doctor.commands.explain import explain_text

PLACEHOLDER = re.compile(r"<[a-z_ ]{2,30}>")


@pytest.mark.parametrize(("message", "code", "named"), [
    ("Reading package lists... Done\nBuilding dependency tree... Done\nE: Unable to locate package libcudnn9-cuda-12",
     "CD520", "libcudnn9-cuda-12"),
    ("Package cuda-toolkit-12-8 is not available, but is referred to by another package.\nThis may mean that the "
     "package is missing, has been obsoleted, or\nis only available from another source\n\n"
     "E: Package 'cuda-toolkit-12-8' has no installation candidate", "CD520", "cuda-toolkit-12-8"),
    ("E: Unable to locate package libnccl2", "CD520", "libnccl2"),
    ("No match for argument: libcudnn9-cuda-13\nError: Unable to find a match: libcudnn9-cuda-13", "CD520",
     "libcudnn9-cuda-13"),
    ("W: GPG error: https://developer.download.nvidia.com/compute/cuda/repos/ubuntu1804/x86_64  InRelease: The "
     "following signatures couldn't be verified because the public key is not available: NO_PUBKEY A4B469963BF863CC\n"
     "E: The repository 'https://developer.download.nvidia.com/compute/cuda/repos/ubuntu1804/x86_64  InRelease' is "
     "not signed.", "CD513", "keyring"),
])
def test_a_package_manager_refusing_a_gpu_package_is_named(message: str, code: str, named: str) -> None:
    match = explain_text(message, None)["matches"][0]
    assert match["code"] == code, match
    said = str(match["cause"]) + str(match["fix"])
    assert named in said and not PLACEHOLDER.search(said), said


@pytest.mark.parametrize("message", [
    "E: Unable to locate package python3-venvv",
    "Package docker.io is not available, but is referred to by another package.\nE: Package 'docker.io' has no "
    "installation candidate",
    "Error: Unable to find a match: htop-ng",
    "W: GPG error: http://ppa.launchpad.net/deadsnakes/ppa/ubuntu focal InRelease: The following signatures couldn't "
    "be verified because the public key is not available: NO_PUBKEY BA6932366A755776",
])
def test_the_same_words_about_another_package_are_not_claimed(message: str) -> None:
    assert not explain_text(message, None)["matches"], message


def test_no_release_of_a_framework_for_this_python_is_no_build_here() -> None:
    """pip finding no release at all of a framework ('(from versions: none)': TensorFlow on a Python it has no wheel
    for) is no build for this Python or platform (CD520), as every set labels it (round eighteen's published set, not
    blind); another package's, or a framework pinned past its releases with some listed, is left to the rules before."""
    message = ("ERROR: Could not find a version that satisfies the requirement tensorflow (from versions: none)\n"
               "ERROR: No matching distribution found for tensorflow")
    assert explain_text(message, None)["matches"][0]["code"] == "CD520"
    other = message.replace("tensorflow", "pandas")
    assert not explain_text(other, None)["matches"]


def test_toolkit_words_of_round_eighteen_are_the_toolkits() -> None:
    """Round eighteen's published set (not blind): a JIT's 'Could not find nvcc' is no toolkit found (CD201); 'SM 12.x
    requires CUDA >= 12.9' is a compiler older than the GPU (CD206, the needed release in the fix), not an
    unsupported GPU; cuda_toolkit.h's refusal of a compiler of another release is a CUDA requirement (CD220)."""
    assert explain_text("RuntimeError: Could not find nvcc", None)["matches"][0]["code"] == "CD201"
    assert not explain_text("RuntimeError: could not find numpy", None)["matches"]
    match = explain_text("Failed to get device capability: SM 12.x requires CUDA >= 12.9", None)["matches"][0]
    assert match["code"] == "CD206" and "12.9" in str(match["fix"]), match
    headers = ('cuda_toolkit.h:41:8: error: #error "CUDA compiler and CUDA toolkit headers are incompatible, please '
               'check your include paths"')
    assert explain_text(headers, None)["matches"][0]["code"] == "CD220"


def test_cudnns_own_words_of_round_eighteen_are_cudnns() -> None:
    """Round eighteen's published set (not blind): the cuDNN frontend's error codes (CD316), cuDNN 9's 3000
    NOT_SUPPORTED finalising plans (CD316), the Lua bindings' 'libcudnn (R5) not found' (CD301, the major named) and a
    frontend check for a newer cuDNN (CD320, the version named); look-alikes of other programs unclaimed."""
    def first(message: str) -> str:
        return str(explain_text(message, None)["matches"][0]["code"])

    assert first("CUDNN_FE failure 11: CUDNN_BACKEND_API_FAILED ; GPU=0 ; file=conv.cc ; line=224") == "CD316"
    assert first("Engine 3 finalize failed: 3000 (NOT_SUPPORTED)") == "CD316"
    match = explain_text("ffi.lua:1603: 'libcudnn (R6) not found in library path.", None)["matches"][0]
    assert match["code"] == "CD301" and "libcudnn.so.6" in str(match["cause"]), match
    match = explain_text("fused attention is not supported with cudnn version below 9.2.0", None)["matches"][0]
    assert match["code"] == "CD320" and "9.2.0" in str(match["fix"]), match
    for other in ("HTTP 3000 (NOT_FOUND) from the proxy", "GRAPH_NOT_SUPPORTEDX is a made-up word",
                  "plugin not found in library path: libfoo"):
        assert not [m for m in explain_text(other, None)["matches"] if str(m["code"]).startswith("CD3")], other
