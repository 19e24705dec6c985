"""The CPU package `onnxruntime` (as on the project's H100 machine: onnxruntime 1.30.0) is named, and said to
be a CPU-only build, with the fix ONNX Runtime's install docs give; `onnxruntime-gpu` is judged as a GPU build."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import Machine, codes
from tests.fakes.build import fake_cudnn, fake_framework_library
from tests.test_compat_rules import CUDNN9, install_wheel, python_env


def test_the_cpu_package_is_a_cpu_only_build(machine: Machine, tmp_path: Path) -> None:
    site = python_env(machine, tmp_path)
    # a cuDNN on the loader's path, as on the H100 machine: the CPU build must not be said to load it
    fake_cudnn(tmp_path / "system", version=91400, cudart=13000, sublibraries=CUDNN9)
    machine.add_library_path(tmp_path / "system")
    install_wheel(site, "onnxruntime", "1.30.0", "numpy>=1.21.6", "protobuf")
    (site / "onnxruntime" / "capi").mkdir(parents=True)  # the CPU package's own libraries, no CUDA provider
    (site / "onnxruntime" / "capi" / "libonnxruntime_providers_shared.so").write_bytes(b"\x7fELF")
    report = machine.check_json()
    [ort] = report["frameworks"]
    assert (ort["name"], ort["version"]) == ("onnxruntime", "1.30.0") and ort["details"]["cpu_only"] is True
    assert ort["cudnn_expected"] is None and ort["cudnn_used"] is None
    assert all("onnxruntime" not in copy["loaded_by"] for copy in report["cudnn"])
    [cpu] = [f for f in report["findings"] if f["code"] == "CD406"]
    assert "onnxruntime-gpu" in cpu["fix"] and "pip uninstall onnxruntime" in cpu["fix"]
    assert "CD401" not in codes(report)
    met = machine.check_json("--require", "onnxruntime>=1.30")
    assert "CD420" not in codes(met)
    unmet = machine.check_json("--require", "onnxruntime>=1.31")
    assert any(f["code"] == "CD420" and "1.30.0" in f["detail"] for f in unmet["findings"])
    line = next(x for x in machine.run("check").stdout.splitlines() if "onnxruntime 1.30.0," in x)
    assert line.strip() == "• onnxruntime 1.30.0, CPU-only build (no CUDA, no cuDNN)"
    explained = machine.run("explain", "CUDAExecutionProvider is not in available provider names")
    assert "CPU-only build" in explained.stdout


def test_the_gpu_package_with_its_cuda_provider_is_not_cpu_only(machine: Machine, tmp_path: Path) -> None:
    site = python_env(machine, tmp_path)
    install_wheel(site, "onnxruntime-gpu", "1.30.0", 'nvidia-cudnn-cu13~=9.0; extra == "cudnn"')
    fake_framework_library(site / "onnxruntime" / "capi" / "libonnxruntime_providers_cuda.so", site,
                           "$ORIGIN/../../nvidia/cudnn/lib")
    fake_cudnn(site / "nvidia" / "cudnn" / "lib", version=91900, cudart=13010, sublibraries=CUDNN9,
               versioned_files=False)
    report = machine.check_json()
    [ort] = report["frameworks"]
    assert not ort["details"].get("cpu_only") and "CD406" not in codes(report)
    assert ort["cudnn_used"] == str(site / "nvidia" / "cudnn" / "lib" / "libcudnn.so.9")
