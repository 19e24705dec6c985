"""The issue-21 / issue-24 data: each test names the source the rows it exercises were read from, runs `compat`
as a user would, and checks the verdict and that the reason cites that source."""

from __future__ import annotations

import pytest
import tomllib

from tests.conftest import ROOT, Machine
from tests.test_compat_rules import compat, reason


def verdict_and_part(machine: Machine, *args: str, part: str = "compute_capability") -> tuple[str, dict]:
    _, data = compat(machine, *args)
    return data["verdict"], reason(data, part)


# --- TensorFlow: architectures read from each release's wheel ----------------------------------------

@pytest.mark.parametrize(("spec", "cc", "verdict", "evidence"), [
    ("tensorflow==2.15.0", "3.5", "incompatible", "sm_50"),   # issue 24: CUDA 12 builds hold no Kepler code
    ("tensorflow==2.15.0", "8.6", "compatible", "PTX for 8.0"),
    ("tensorflow==2.17.0", "5.2", "incompatible", "sm_60"),   # Maxwell gone from 2.17
    ("tensorflow==2.16.1", "9.0", "compatible", "PTX for 9.0"),
    ("tensorflow==2.3.0", "5.0", "incompatible", "sm_35 to sm_61"),  # sm_52 does not run on 5.0
    ("tensorflow==2.14.0", "3.5", "compatible", "sm_35"),
])
def test_tensorflow_architectures_from_the_wheels_build_info(machine: Machine, spec: str, cc: str, verdict: str,
                                                             evidence: str) -> None:
    """tensorflow==X wheels on PyPI, tensorflow/python/platform/build_info.py cuda_compute_capabilities (2.15.0:
    sm_50, sm_60, sm_70, sm_75, compute_80; 2.16: sm_50 ... sm_80, compute_90; 2.17: sm_60 ... sm_89, compute_90;
    2.3.0: sm_35, sm_37, sm_52, sm_60, sm_61, compute_70)."""
    got, part = verdict_and_part(machine, spec, "--compute-capability", cc)
    assert got == verdict and evidence in part["why"]
    assert f"{spec} wheel on PyPI" in part["source"] and "build_info.py" in part["source"]


def test_no_tensorflow_architecture_list_is_copied_across_releases() -> None:
    """Issue 24: every TensorFlow row with an architecture list cites its own release's wheel; a release whose wheel
    records none holds at most the guide's floor, marked floor_only."""
    rows = tomllib.loads((ROOT / "compat" / "tensorflow.toml").read_text())["build"]
    with_lists = [row for row in rows if row.get("arch_list")]
    assert len(with_lists) >= 30
    for row in with_lists:
        assert f"tensorflow=={row['version']} wheel on PyPI" in row["arch_source"], row["version"]
    for row in rows:
        if row.get("min_compute_capability"):
            assert row.get("floor_only") is True and not row.get("arch_list"), row["version"]


def test_a_floor_not_read_for_the_release_is_never_compatible(machine: Machine) -> None:
    """tensorflow/docs gpu.md @ e89b2567 (2018-08) to 1298fe74 (2020-08): 'compute capability 3.5 or higher'. TF
    2.1.0's wheel records no list, so the floor says incompatible below 3.5 and unknown above it."""
    assert verdict_and_part(machine, "tensorflow==2.1.0", "--compute-capability", "3.0")[0] == "incompatible"
    got, part = verdict_and_part(machine, "tensorflow==2.1.0", "--compute-capability", "7.5")
    assert got == "unknown" and "only a floor" in part["why"]


# --- PyTorch: every CUDA build's architectures ------------------------------------------------------

@pytest.mark.parametrize(("spec", "cc", "verdict", "source"), [
    ("torch==2.11.0+cu128", "12.0", "compatible", "#175253"),
    ("torch==2.11.0+cu126", "5.0", "compatible", "#175253"),
    ("torch==2.12.0+cu132", "8.9", "compatible", "#182849"),
    ("torch==2.13.0+cu126", "5.2", "compatible", "#187075"),
    ("torch==2.14.0+cu126", "7.0", "compatible", "#197555"),
    ("torch==2.10.0+cu130", "12.0", "compatible", "#175253"),
])
def test_torch_architectures_of_every_cuda_build(machine: Machine, spec: str, cc: str, verdict: str,
                                                 source: str) -> None:
    """pytorch/pytorch RELEASE.md 'PyTorch CUDA Support Matrix' as set per release by PRs #164471 (2.9), #175253
    (2.10 and 2.11), #182849 (2.12), #187075 (2.13) and #197555 (2.14)."""
    got, part = verdict_and_part(machine, spec, "--compute-capability", cc)
    assert got == verdict and source in part["source"]


def test_volta_left_the_cuda_12_8_build_in_2_11(machine: Machine) -> None:
    """pytorch/pytorch PR #172598 '[CD] Exclude Volta from CUDA-12.8 and 12.9 builds' and PR #175253 (2.11's table:
    12.8.1 starts at Turing(7.5)), while 2.10's 12.8 wheel on PyPI still has sm_70."""
    assert verdict_and_part(machine, "torch==2.11.0+cu128", "--compute-capability", "7.0")[0] == "incompatible"
    got, part = verdict_and_part(machine, "torch==2.10.0+cu128", "--compute-capability", "7.0")
    assert got == "compatible" and "torch==2.10.0 wheel from PyPI" in part["source"]


# --- JAX: CUDA/cuDNN minimums per release, the CUDA 11 builds -----------------------------------------

@pytest.mark.parametrize(("args", "verdict", "evidence"), [
    (("jax==0.4.24", "--cuda", "12.2"), "incompatible", "12.3"),   # 'Support for CUDA 12.2 has been dropped'
    (("jax==0.4.23", "--cuda", "12.1"), "incompatible", "12.2"),   # 0.4.17: 'CUDA 12.2 or newer'
    (("jax==0.7.1", "--cuda", "12.0"), "incompatible", "12.1"),    # 'CUDA 12.1 or newer remain supported'
    (("jax==0.4.25", "--cuda", "11.8"), "compatible", "11.8"),     # jax-cuda11-plugin 0.4.25
    (("jax==0.4.26", "--cuda", "11.8"), "incompatible", "12"),     # 'Support for CUDA 11.8 has been dropped'
])
def test_jax_cuda_minimum_per_release(machine: Machine, args: tuple[str, ...], verdict: str, evidence: str) -> None:
    """jax-ml/jax CHANGELOG.md @ cec06d116c05 ('jaxlib 0.4.17', 'jaxlib 0.4.24', 'jaxlib 0.4.26', 'JAX 0.7.1') and
    https://pypi.org/pypi/jax-cuda11-plugin/json (releases 0.4.22-0.4.25)."""
    got, part = verdict_and_part(machine, *args, part="cuda")
    assert got == verdict and evidence in part["why"]
    if args[0] == "jax==0.4.25":
        assert "jax-cuda11-plugin" in part["source"]


def test_jax_cudnn_floor_before_the_plugin_pins(machine: Machine) -> None:
    """jax-ml/jax CHANGELOG.md, 'jaxlib 0.4.17': 'The CUDA 12 wheels now require ... cuDNN 8.9.4 or newer'."""
    got, part = verdict_and_part(machine, "jax==0.4.23", "--cuda", "12.2", "--cudnn", "8.8.0", part="cudnn")
    assert got == "incompatible" and "8.9.4" in part["why"] and "CHANGELOG.md" in part["source"]
    assert verdict_and_part(machine, "jax==0.4.23", "--cuda", "12.2", "--cudnn", "8.9.4", part="cudnn")[0] == \
        "compatible"


# --- ONNX Runtime: both switches inside a series ----------------------------------------------------

@pytest.mark.parametrize(("args", "verdict"), [
    (("onnxruntime-gpu==1.18.1", "--cuda", "12.4", "--cudnn", "9.1.0"), "compatible"),
    (("onnxruntime-gpu==1.18.1", "--cuda", "12.4", "--cudnn", "8.9.7"), "incompatible"),
    (("onnxruntime-gpu==1.18.1", "--cuda", "11.8", "--cudnn", "8.9.7"), "compatible"),
    (("onnxruntime-gpu==1.18.0", "--cuda", "12.2", "--cudnn", "8.9.7"), "compatible"),
    (("onnxruntime-gpu==1.18.0", "--cuda", "12.2", "--cudnn", "9.1.0"), "incompatible"),
    (("onnxruntime-gpu==1.19.0", "--cuda", "11.8", "--cudnn", "8.9.7"), "compatible"),
])
def test_onnxruntime_cuda_and_cudnn_switches(machine: Machine, args: tuple[str, ...], verdict: str) -> None:
    """ONNX Runtime CUDA EP requirements, CUDA 12.x table ('1.18.1 | 12.x | 9.x', '1.18.0 | 12.x | 8.x') and CUDA
    11.x table ('1.19.x | 11.8 | 8.x | Not available in pypi'); microsoft/onnxruntime issue #20829."""
    _, data = compat(machine, *args)
    assert data["verdict"] == verdict
    assert any("ONNX Runtime CUDA Execution Provider, Requirements" in r["source"] or "PyPI metadata" in r["source"]
               for r in data["reasons"])


def test_onnxruntime_builds_name_where_they_live(machine: Machine) -> None:
    """The CUDA 12 builds of 1.18.1 are on ONNX Runtime's own feed, the CUDA 11.8 builds of 1.19.0 off PyPI."""
    _, data = compat(machine, "onnxruntime-gpu==1.18.1")
    by_cuda = {b["cuda"]: b for b in data["builds"]}
    assert by_cuda["11.8"]["default"] is True and by_cuda["11.8"]["index_url"] is None
    assert by_cuda["12"]["default"] is False and "onnxruntime-cuda-12" in by_cuda["12"]["index_url"]
    _, data = compat(machine, "onnxruntime-gpu==1.19.0")
    off_pypi = next(b for b in data["builds"] if b["cuda"] == "11.8")
    assert off_pypi["index_url"] is None and "not on PyPI" in off_pypi["index_note"]


# --- TensorRT ------------------------------------------------------------------------------------

@pytest.mark.parametrize(("args", "part", "verdict"), [
    (("tensorrt-cu11==10.0.1", "--cuda", "11.8"), "cuda", "compatible"),   # PyPI tensorrt-cu11
    (("tensorrt==10.0.1", "--cuda", "11.8"), "cuda", "compatible"),        # 10.0.1 matrix: CUDA 11.8 and 12.4
    (("tensorrt==8.6.1", "--cuda", "12.1"), "cuda", "compatible"),         # 8.6.1 matrix: 12.0/12.1, 11.0-11.8
    (("tensorrt==8.6.1", "--cuda", "10.2"), "cuda", "incompatible"),
    (("tensorrt-cu12==10.13.2", "--compute-capability", "6.1"), "compute_capability", "incompatible"),
    # issue 35: the 10.x release notes drop only Volta (10.5), so Ampere stays supported (compat/gpu_support.toml)
    (("tensorrt-cu12==10.13.2", "--compute-capability", "8.0"), "compute_capability", "compatible"),
    (("tensorrt-cu12==10.1.0", "--compute-capability", "8.0"), "compute_capability", "compatible"),
])
def test_tensorrt_cuda_per_release_and_floor(machine: Machine, args: tuple[str, ...], part: str,
                                             verdict: str) -> None:
    """NVIDIA TensorRT 8.6.1 and 10.0.1 support matrices (CUDA per platform); https://pypi.org/pypi/tensorrt-cu11/json;
    the 10.1.0 matrix's 'compiled to support ... SM 7.0 or higher' is that release's own statement, a floor only
    for the others."""
    assert verdict_and_part(machine, *args, part=part)[0] == verdict


# --- PaddlePaddle build variants -------------------------------------------------------------------

def test_paddle_post_builds_and_own_index(machine: Machine) -> None:
    """PaddlePaddle/Paddle discussion #56329 (2.4.2.post11x wheels on Paddle's page), Paddle's v2.4 install commands;
    PaddlePaddle/FastDeploy PR #4414 (paddlepaddle-gpu==3.2.0 from https://www.paddlepaddle.org.cn/packages/stable/cu126/)."""
    code, data = compat(machine, "paddlepaddle-gpu==2.4.2", "--cuda", "11.7")
    assert code == 0 and data["verdict"] == "compatible" and "#56329" in reason(data, "cuda")["source"]
    requirements = {b["requirement"] for b in data["builds"]}
    assert {"paddlepaddle-gpu==2.4.2", "paddlepaddle-gpu==2.4.2.post117"} <= requirements
    _, data = compat(machine, "paddlepaddle-gpu==3.2.0")
    indexes = {build["cuda"]: build["index_url"] for build in data["builds"]}
    assert indexes == {"12.6": "https://www.paddlepaddle.org.cn/packages/stable/cu126/",
                       "12.9": "https://www.paddlepaddle.org.cn/packages/stable/cu129/"}


# --- Theano: the device check of each release, both back ends --------------------------------------

@pytest.mark.parametrize("release", ["0.8.0", "0.8.2", "0.9.0", "1.0.5"])
def test_theano_device_check_of_each_release(machine: Machine, release: str) -> None:
    """Theano/Theano at tags rel-0.8.0 (4b76348319c0), rel-0.8.2 (127aa70c6d34), rel-0.9.0 (c697eeab84e5):
    theano/sandbox/cuda/__init__.py 'device_properties(dev)['major'] < 3' and the gpuarray back end's
    'ctx.bin_id[-2:] < b'30'' turn cuDNN off ('Device not supported'); rel-1.0.0 to rel-1.0.5 theano/gpuarray/dnn.py
    'if int(ctx.bin_id[-2:]) < 30'."""
    cudnn = {"0.8.0": "4.0.7", "0.8.2": "5.0.5", "0.9.0": "5.1.10", "1.0.5": "7.1.4"}[release]
    got, part = verdict_and_part(machine, f"theano=={release}", "--cudnn", cudnn, "--compute-capability", "2.1")
    assert got == "incompatible" and "Device not supported" in part["why"]
    assert ("rel-0.8.0" in part["source"]) == (release < "1.0")
