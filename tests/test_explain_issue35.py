"""Issue 35: the families `explain` had no concept of (as catalog data), lines set aside as not the GPU stack's
fault, and any text taken as the message. The CLI runs as a user would."""

from __future__ import annotations

import pytest

from cudnn_doctor.explain.arguments import message_first
from tests.conftest import Machine

TF_START_UP = (
    "2025-03-01 10:00:00.000001: E external/local_xla/xla/stream_executor/cuda/cuda_dnn.cc:8310] Unable to register "
    "cuDNN factory: Attempting to register factory for plugin cuDNN when one has already been registered\n"
    "2025-03-01 10:00:00.000002: E external/local_xla/xla/stream_executor/cuda/cuda_blas.cc:1418] Unable to register "
    "cuBLAS factory: Attempting to register factory for plugin cuBLAS when one has already been registered\n"
    "2025-03-01 10:00:01.000003: W tensorflow/compiler/tf2tensorrt/utils/py_utils.cc:38] TF-TRT Warning: Could not find "
    "TensorRT\n")


def explain(machine: Machine, *args: str) -> tuple[int, dict]:
    result = machine.run("explain", *args, "--json")
    assert "Traceback" not in result.stderr, result.stderr
    return result.exit_code, result.json


@pytest.mark.parametrize(("message", "entry", "code"), [
    ("podman run --rm nvidia/cuda nvidia-smi\nFailed to initialize NVML: Insufficient Permissions",
     "nvml-insufficient-permissions", "CD104"),
    ("RuntimeError: CUDA error: CUDA-capable device(s) is/are busy or unavailable", "gpu-busy-or-unavailable", "CD139"),
    ("ERROR: THESE PACKAGES DO NOT MATCH THE HASHES FROM THE REQUIREMENTS FILE.\n    nvidia-cudnn-cu12==9.1.0.70 from "
     "https://files.pythonhosted.org/packages/nvidia_cudnn_cu12-9.1.0.70-py3-none-manylinux2014_x86_64.whl",
     "pip-hash-mismatch-gpu-wheel", "CD501"),
])
def test_a_new_family_is_answered_with_its_catalog_entry(machine: Machine, message: str, entry: str, code: str) -> None:
    """NVML's 'Insufficient Permissions' carries none of the reader's general words: the entry's own triggers make
    the line read (compat/errors.toml `triggers`)."""
    exit_code, data = explain(machine, message, "--offline-only")
    assert exit_code == 0 and data["matches"][0]["id"] == entry and data["matches"][0]["code"] == code


def test_invalid_device_ordinal_is_the_programs_index_with_this_machines_gpus(machine: Machine) -> None:
    """compat/errors.toml [[aside]] kind "program": not claimed (exit 1), said to be the program's GPU index, and,
    with the machine read, how many GPUs it has (none on this test machine)."""
    message = "RuntimeError: CUDA error: invalid device ordinal\nFor debugging consider passing CUDA_LAUNCH_BLOCKING=1."
    exit_code, data = explain(machine, message)
    assert exit_code == 1 and data["matches"] == []
    [aside] = data["set_aside"]
    assert aside["kind"] == "program" and "GPU index" in aside["why"] and "no GPU" in aside["why"]
    text = machine.run("explain", message)
    assert text.exit_code == 1 and "The program's own request" in text.stdout


def test_tensorflow_start_up_lines_are_harmless_and_a_real_error_beside_them_still_counts(machine: Machine) -> None:
    exit_code, data = explain(machine, TF_START_UP, "--offline-only")
    assert exit_code == 1 and data["matches"] == []
    assert {row["kind"] for row in data["set_aside"]} == {"harmless"}
    error = ("2025-03-01 10:00:02.000004: W tensorflow/compiler/xla/stream_executor/platform/default/dso_loader.cc:64] "
             "Could not load dynamic library 'libcudnn.so.8'; dlerror: libcudnn.so.8: cannot open shared object file: "
             "No such file or directory")
    exit_code, data = explain(machine, TF_START_UP + error, "--offline-only")
    assert exit_code == 0 and data["matches"][0]["id"] == "tf-dlopen-cudnn"


def test_a_pasted_log_beginning_with_dashes_is_the_message(machine: Machine) -> None:
    """A notebook's traceback starts with a row of dashes; `explain "---..."` and `explain -- "---..."` both read it."""
    log = ("---------------------------------------------------------------------------\n"
           "RuntimeError                              Traceback (most recent call last)\n"
           "RuntimeError: CUDA error: all CUDA-capable devices are busy or unavailable")
    for args in ((log, "--offline-only", "--json"), ("--offline-only", "--json", "--", log)):
        result = machine.run("explain", *args)
        assert result.exit_code == 0 and result.json["matches"][0]["code"] == "CD139"


@pytest.mark.parametrize(("args", "parsed"), [
    (["explain", "--- text"], ["explain", "--", "--- text"]),
    (["explain", "--json", "-x", "--offline-only"], ["explain", "--json", "--offline-only", "--", "-x"]),
    (["explain", "--from-file", "-log", "--json"], ["explain", "--from-file", "-log", "--json"]),
    (["explain", "-", "--json"], ["explain", "-", "--json"]),
    (["explain", "--", "--- text"], ["explain", "--", "--- text"]),
    (["check", "--json"], ["check", "--json"]),
])
def test_explain_arguments_keep_the_message_a_message(args: list[str], parsed: list[str]) -> None:
    assert message_first(args) == parsed
