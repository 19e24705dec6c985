"""`compat` for issue 41, round nine: a patch release the data does not hold takes its series' builds where every
release of that series the data holds has the same ones (a patch release keeps its series' CUDA, cuDNN, driver and
architectures: TensorFlow's tested build configurations name one row per minor release, ONNX Runtime's CUDA
execution provider table one per 1.x, TensorRT's support matrix one per 8.x GA); where the series' releases differ,
nothing is inferred."""

from __future__ import annotations

from tests.conftest import Machine
from tests.test_compat_rules import compat, reason


def test_a_patch_release_takes_its_series_builds(machine: Machine) -> None:
    _, data = compat(machine, "tensorflow==2.4.1", "--cuda", "10.1")
    assert data["verdict"] == "incompatible"
    assert "2.4.1 is not in the data" in reason(data, "cuda")["source"] and "2.4.0" in reason(data, "cuda")["source"]
    assert compat(machine, "tensorflow==2.4.1", "--cuda", "11.0")[1]["verdict"] == "compatible"
    # ONNX Runtime 1.20.1 between the data's 1.20.0 and 1.20.2, which agree: a CUDA 12 / cuDNN 9 build
    assert compat(machine, "onnxruntime-gpu==1.20.1", "--cudnn", "8.9")[1]["verdict"] == "incompatible"
    assert compat(machine, "onnxruntime-gpu==1.20.1", "--cuda", "12.4", "--cudnn", "9.1")[1]["verdict"] == "compatible"
    # TensorRT 8.2.3 from 8.2.4.2 and 8.2.5.1 (NVIDIA's four-part versions)
    assert compat(machine, "tensorrt==8.2.3", "--cudnn", "7.6")[1]["verdict"] == "incompatible"


def test_a_series_whose_releases_differ_stays_unknown(machine: Machine) -> None:
    # JAX's 0.4.x releases the data holds need different CUDA (their jaxlib builds changed within the series); 0.4.13
    # is not among them (0.4.20, this test's first example, is data since round eleven: jaxlib's own builds)
    assert compat(machine, "jax==0.4.13", "--cuda", "12.2")[1]["verdict"] == "unknown"
    # a version with letters or two parts is not a patch release of a series
    assert compat(machine, "tensorflow==2.4.1rc0", "--cuda", "11.0")[1]["verdict"] == "unknown"


def test_builds_read_from_the_vendors_own_indexes(machine: Machine) -> None:
    """PyTorch's own wheel index holds torch-1.4.0+cu100 (download.pytorch.org/whl/torch_stable.html, as
    open-mmlab/mmdetection's install guide uses it), though the previous-versions page lists only cu101 and cu92; NVIDIA's
    redistributable index holds cuDNN 5.1 for CUDA 7.5 (redist/cudnn/v5.1/cudnn-7.5-linux-x64-v5.1.tgz) beside 8.0."""
    assert compat(machine, "torch==1.4.0+cu100", "--driver", "410.48")[1]["verdict"] == "compatible"
    assert compat(machine, "torch==1.4.0+cu100", "--driver", "396.26")[1]["verdict"] == "incompatible"
    _, data = compat(machine, "cudnn==5.1", "--cuda", "7.5")
    assert data["verdict"] == "compatible" and "cudnn-7.5-linux-x64-v5.1.tgz" in reason(data, "cuda")["source"]


def test_a_build_from_paddles_own_index(machine: Machine) -> None:
    """Paddle's own index publishes X.Y.Z.postNNN, the release's build for CUDA N.N (PaddlePaddle's install guides:
    paddlepaddle-gpu==2.1.0.post101 for CUDA 10.1): its CUDA, the driver it needs and the architectures CUDA 10.1 can
    target are judged (no CUDA 10.x build holds kernels for Ampere's 8.6, which CUDA 11 first targets)."""
    _, data = compat(machine, "paddlepaddle-gpu==2.1.0.post101", "--compute-capability", "8.6")
    assert data["verdict"] == "incompatible"
    assert compat(machine, "paddlepaddle-gpu==2.1.0.post101", "--cuda", "10.1")[1]["verdict"] == "compatible"
    assert compat(machine, "paddlepaddle-gpu==2.3.2.post116", "--cuda", "11.2")[1]["verdict"] == "incompatible"
    # a row the data holds for its pip version stays that row (2.6.1.post120: CUDA 12.0)
    assert compat(machine, "paddlepaddle-gpu==2.6.1.post120", "--cuda", "12.0")[1]["verdict"] == "compatible"
