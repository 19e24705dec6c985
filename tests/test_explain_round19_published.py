"""Round nineteen's published explain set (benchmarks/held_out/round19), not blind: installers' words for a build that
does not exist here, by class, each beside a look-alike left unclaimed. The messages here are written apart from the
set's cases (other packages, versions and platforms)."""

from __future__ import annotations

from tests.test_explain_installers import answers, declined


def first_code(message: str) -> str:
    return str(answers(message)[0]["code"])


def test_a_framework_pinned_older_than_every_release_its_index_offers_is_no_build_here() -> None:
    """pip lists the releases it found for this interpreter; a framework pinned below all of them has no wheel for
    this Python (TensorFlow 2.12 was built for Python 3.8-3.11): CD520, the fix names the first release offered. A
    package no GPU stack builds per CUDA, or a pin inside the listed range, is left unclaimed."""
    message = ("ERROR: Could not find a version that satisfies the requirement tensorflow==2.12.1 (from versions: "
               "2.16.1, 2.16.2, 2.17.0)\nERROR: No matching distribution found for tensorflow==2.12.1")
    [said] = answers(message)[:1]
    assert said["code"] == "CD520" and "2.16.1" in str(said["fix"]), said
    declined("ERROR: Could not find a version that satisfies the requirement requests==1.2.0 (from versions: 2.31.0, "
             "2.32.3)\nERROR: No matching distribution found for requests==1.2.0")


def test_uvs_platform_refusal_read_across_its_wrapped_lines() -> None:
    """uv wraps its words at the terminal's width, a line break and indentation between any two of them: the same
    refusal read whole (was missed where the break fell between 'a' and 'source'); onnxruntime, the CPU package whose
    provider is onnxruntime-gpu's, is the stack's too."""
    message = ("error: Distribution `onnxruntime==1.22.0 @ registry+https://pypi.org/simple` can't be installed because "
               "it doesn't have a\n        source distribution or wheel for the current platform\n\nhint: You're on "
               "macOS (`macosx_13_0_x86_64`), but `onnxruntime` (v1.22.0) only has wheels for the following platforms: "
               "`manylinux_2_27_x86_64`, `win_amd64`")
    assert first_code(message) == "CD520"
    declined("error: Distribution `left-pad==1.0.0 @ registry+https://pypi.org/simple` can't be installed because it "
             "doesn't have a\n        source distribution or wheel for the current platform")


def test_vllms_own_refusal_of_a_platform_it_does_not_build_for() -> None:
    message = ("      vLLM only supports Linux platform (including WSL) and MacOS.Building on cygwin, so vLLM may not be "
               "able to run correctly")
    said = answers(message)[0]
    assert said["code"] == "CD520" and "WSL" in str(said["fix"]), said
    declined("vLLM supports Linux; this guide covers the server's options")


def test_jax_and_jaxlib_of_other_releases_in_jaxs_own_words() -> None:
    """jax's check_jaxlib_version, both directions (jaxlib newer than jax; older than the minimum this jax names):
    framework parts built apart, CD410. Another library's 'newer than' is not claimed."""
    assert first_code("RuntimeError: jaxlib version 0.4.26 is newer than and incompatible with jax version 0.4.20. "
                      "Please update your jax and/or jaxlib packages.") == "CD410"
    assert first_code("RuntimeError: jaxlib is version 0.3.10, but this version of jax requires version >= 0.4.6.") \
        == "CD410"
    declined("RuntimeError: numpy version 2.1 is newer than and incompatible with pandas version 1.5")


def test_open3d_without_its_cuda_module() -> None:
    """Open3D's MemoryManager refusing a CUDA device (or its CUDA package missing): a build without its CUDA module,
    CD406; the same library refusing a CPU device for another reason is not this."""
    said = answers("RuntimeError: [Open3D ERROR] MemoryManager::GetDeviceMemoryManager: Unimplemented device")[0]
    assert said["code"] == "CD406" and "BUILD_CUDA_MODULE" in str(said["fix"]), said
    assert first_code("AttributeError: module 'open3d' has no attribute 'cuda'") == "CD406"
    declined("RuntimeError: [Open3D Error] PointCloud has no normals")


def test_a_message_after_a_million_empty_lines_is_read_and_frames_still_are() -> None:
    """Round nineteen's published red-team (explainlog, million_empty_lines): the traceback reader's frame pattern
    began '^\\s*' over the whole text, so at every empty line it ran through all the empty lines after it (quadratic:
    explain ran past 45 s on a million). Read once now; a frame indented with spaces or a tab is still a frame."""
    from cudnn_doctor.explain.read_traceback import frames_in

    message = "\n" * 1_000_000 + "RuntimeError: cuDNN error: CUDNN_STATUS_NOT_INITIALIZED"
    assert first_code(message).startswith("CD")
    assert frames_in('\n\n  File "/x/torch/__init__.py", line 3, in <module>\n\tFile "a.py", line 1, in f\n') == \
        ["/x/torch/__init__.py:3:<module>", "a.py:1:f"]


def test_glibcs_c23_math_clash_read_where_edg_wraps_its_words() -> None:
    """EDG's 'exception specification is incompatible with that of' then, on the next line, 'previous function
    "sinpif" (declared ... crt/math_functions.h)': glibc 2.41's C23 math against CUDA's header (CD209), as on one line;
    another 'previous function' with no exception specification near is not this."""
    assert first_code('bits/mathcalls.h(79): error: exception specification is incompatible with that of\n'
                      '          previous function "sinpif" (declared at line 2623 of /usr/local/cuda-12.6/'
                      'targets/x86_64-linux/include/crt/math_functions.h)') == "CD209"
    declined('main.cpp:3: error: redefinition; previous function "foo" is declared here')


def test_the_drivers_gsp_timeout_in_its_own_words() -> None:
    """NVRM's 'Timeout waiting for RPC from GSP' (the condition of Xid 119) without the Xid line: a driver/firmware
    fault (CD142)."""
    assert first_code("[   12.345678] NVRM: Timeout waiting for RPC from GSP1! Expected function 10 (FREE).") == "CD142"
    declined("timeout waiting for RPC from the license server")
