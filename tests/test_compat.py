"""`cudnn-doctor compat`: answers checked against the sources the data was read from."""

from __future__ import annotations

import pytest

from tests.conftest import Machine


@pytest.fixture
def machine(machine_in_process: Machine) -> Machine:
    """The CLI runs in the test's own process (conftest.run_in_process): nothing here needs a process of its own."""
    return machine_in_process


def compat(machine: Machine, *args: str) -> tuple[int, dict]:
    result = machine.run("compat", *args, "--json")
    assert "Traceback" not in result.stderr
    return result.exit_code, result.json


def test_tensorflow_release_needs(machine: Machine) -> None:
    """tensorflow/docs site/en/install/source.md, Linux GPU table: tensorflow-2.15.0 -> CUDA 12.2, cuDNN 8.9."""
    code, data = compat(machine, "tensorflow==2.15.0")
    assert code == 0 and data["schema"] == "cudnn-doctor/compat/1"
    [linux] = data["requires"]
    assert (linux["cuda"], linux["cudnn"], linux["os"]) == ("12.2", "8.9", "linux")
    assert linux["driver"] == ">=535.54.03"  # CUDA 12.2 GA's minimum driver, CUDA release notes table 3
    assert "source.md" in linux["source"]
    assert "verdict" not in data


def test_tensorflow_combination_compatible(machine: Machine) -> None:
    code, data = compat(machine, "tensorflow==2.15.0", "--cuda", "12.2", "--cudnn", "8.9.7", "--driver", "535.54.03")
    assert code == 0 and data["verdict"] == "compatible"
    assert {r["part"]: r["verdict"] for r in data["reasons"]} == {"cuda": "compatible", "cudnn": "compatible",
                                                                  "driver": "compatible"}
    assert all(r["source"] for r in data["reasons"])


@pytest.mark.parametrize(("cudnn", "verdict"), [("8.9.7", "compatible"), ("8.6.0", "incompatible"),
                                                ("9.1.0", "incompatible")])
def test_tensorflow_runtime_rule(machine: Machine, cudnn: str, verdict: str) -> None:
    """TF's check (cuda_dnn.cc): same major, loaded minor >= compiled minor ('Loaded runtime CuDNN library: 8.8.0
    but source was compiled with: 8.9.4', tensorflow/docs PR #2291)."""
    code, data = compat(machine, "tensorflow==2.15.0", "--cudnn", cudnn)
    assert data["verdict"] == verdict
    assert code == (1 if verdict == "incompatible" else 0)


def test_tensorflow_windows_last_native_gpu(machine: Machine) -> None:
    """source_windows.md GPU table: tensorflow_gpu-2.10.0 -> CUDA 11.2, cuDNN 8.1; nothing newer on Windows."""
    _, data = compat(machine, "tensorflow==2.10.0", "--os", "windows")
    assert [(r["os"], r["cuda"], r["cudnn"]) for r in data["requires"]] == [("windows", "11.2", "8.1")]


def test_pytorch_build_and_its_cudnn(machine: Machine) -> None:
    """pytorch/pytorch RELEASE.md release matrix: 2.5 -> CUDA 11.8/12.1/12.4 with cuDNN 9.1.0.70."""
    code, data = compat(machine, "torch==2.5.1+cu124", "--cudnn", "9.1.0", "--driver", "550.54.14")
    assert data["build"] == "CUDA 12.4"
    assert [r["cuda"] for r in data["requires"]] == ["12.4"]  # the build asked for, not its siblings
    _, every = compat(machine, "torch==2.5.1")
    assert {r["cuda"] for r in every["requires"]} >= {"11.8", "12.1", "12.4"}
    assert {r["cudnn"] for r in every["requires"]} == {"9.1.0.70"}
    assert data["verdict"] == "compatible" and code == 0


def test_pytorch_rejects_other_cudnn_major_and_old_driver(machine: Machine) -> None:
    code, data = compat(machine, "torch==2.5.1+cu124", "--cudnn", "8.9.7", "--driver", "450.51.06")
    parts = {r["part"]: r for r in data["reasons"]}
    assert parts["cudnn"]["verdict"] == "incompatible"
    assert parts["driver"]["verdict"] == "incompatible" and "525.60.13" in parts["driver"]["why"]
    assert code == 1


def test_pytorch_new_cudnn_refuses_old_gpus(machine: Machine) -> None:
    """torch/backends/cudnn/__init__.py: cuDNN >= 9.11 is refused on devices with SM < 7.5."""
    _, data = compat(machine, "torch==2.9.0", "--cudnn", "9.13.0", "--compute-capability", "7.0")
    reason = next(r for r in data["reasons"] if r["part"] == "compute_capability")
    assert reason["verdict"] == "incompatible" and "7.5" in reason["why"]


def test_theano_accepted_cudnn(machine: Machine) -> None:
    """Theano rel-0.9.0 gpuarray/dnn.py: v < 5000 refused ('Update to v5'); seed 002: Theano took only cuDNN 5."""
    assert compat(machine, "theano==0.9.0", "--cudnn", "5.1.10")[1]["verdict"] == "compatible"
    code, data = compat(machine, "theano==0.9.0", "--cudnn", "4.0.7")
    assert data["verdict"] == "incompatible" and code == 1


def test_dl4j_091_supports_only_cudnn_6(machine: Machine) -> None:
    """deeplearning4j-docs cudnn.md (2017-09) and seed 000: 'only cuDNN 6.0 is supported' for 0.9.1."""
    _, data = compat(machine, "dl4j==0.9.1", "--cudnn", "6.0.21", "--artifact", "nd4j-cuda-8.0-platform")
    assert data["verdict"] == "compatible"
    assert [r["artifact"] for r in data["requires"]] == ["nd4j-cuda-8.0"]
    code, data = compat(machine, "dl4j==0.9.1", "--cudnn", "7.0.5")
    assert data["verdict"] == "incompatible" and code == 1


def test_outside_the_data_is_unknown_not_compatible(machine: Machine) -> None:
    code, data = compat(machine, "tensorflow==0.1.0", "--cudnn", "8.9.7")
    assert data["verdict"] == "unknown" and code == 0
    text = machine.run("compat", "jax==0.1.0", "--cudnn", "9.1")
    assert "UNKNOWN" in text.stdout and "unknown is not compatible" in text.stdout


def test_list_tables(machine: Machine) -> None:
    _, data = compat(machine, "--list", "cudnn")
    versions = [row["version"] for row in data["rows"]]
    assert "8.9.7" in versions and "9.19.0" in versions and all(row["source"] for row in data["rows"])
    text = machine.run("compat", "--list", "tensorflow")
    assert "2.15.0" in text.stdout and text.exit_code == 0


def test_bad_input_is_one_line(machine: Machine) -> None:
    for args in (("banana==1.0",), ("tensorflow",), ("--list", "spreadsheets"), ()):
        result = machine.run("compat", *args)
        assert result.exit_code == 2, args
        assert "Traceback" not in result.stderr and result.stderr.startswith("cudnn-doctor: error:"), result.stderr
