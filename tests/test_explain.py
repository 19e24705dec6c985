"""`cudnn-doctor explain`: codes and real messages, with what this machine has to say about them."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from cudnn_doctor.codes import CODES
from cudnn_doctor.commands.explain import normalise
from tests.conftest import Machine
from tests.fakes.build import fake_cudnn


@pytest.fixture
def machine(machine_in_process: Machine) -> Machine:
    """The CLI runs in the test's own process (conftest.run_in_process): nothing here needs a process of its own."""
    return machine_in_process

# Each catalog entry's example resolving to that entry alone (match_message): tests/test_error_catalog.py's
# test_example_resolves_to_itself.


def test_a_libcudnn8_message_on_a_machine_with_only_cudnn9(machine: Machine, tmp_path: Path) -> None:
    fake_cudnn(tmp_path / "cudnn9", version=91900, cudart=13010)
    machine.add_library_path(tmp_path / "cudnn9")
    message = ("2023-06-01 10:00:00.000000: W tensorflow/compiler/xla/stream_executor/platform/default/dso_loader.cc:66]"
               " Could not load dynamic library 'libcudnn.so.8'; dlerror: libcudnn.so.8: cannot open shared object "
               "file: No such file or directory")
    result = machine.run("explain", message, "--json")
    data = result.json
    assert result.exit_code == 0 and data["schema"] == "cudnn-doctor/explain/1"
    assert [m["id"] for m in data["matches"]] == ["tf-dlopen-cudnn"]
    assert data["matches"][0]["values"]["library"] == "libcudnn.so.8"
    summary = " ".join(data["machine"]["summary"])
    assert "has no cuDNN 8 at all" in summary and "9.19.0" in summary
    text = machine.run("explain", message)
    assert "tensorflow: CD301" in text.stdout and "has no cuDNN 8 at all" in text.stdout


def test_pytorch_version_message_compared_with_the_machine(machine: Machine, tmp_path: Path) -> None:
    fake_cudnn(tmp_path / "old", version=8200, cudart=11030)
    machine.add_library_path(tmp_path / "old")
    message = ("RuntimeError: cuDNN version incompatibility: PyTorch was compiled against (8, 3, 2) but found runtime "
               "version (8, 2, 0). PyTorch already comes bundled with cuDNN.")
    data = machine.run("explain", message, "--json").json
    assert data["matches"][0]["values"] == {"compiled_version": "8.3.2", "runtime_version": "8.2.0"}
    summary = " ".join(data["machine"]["summary"])
    assert f"The loaded cuDNN in the message is 8.2.0: {tmp_path / 'old' / 'libcudnn.so.8'}" in summary


def test_standard_input_and_log_files(machine: Machine, tmp_path: Path) -> None:
    log = tmp_path / "train.log"
    log.write_text("epoch 1\nTraceback (most recent call last):\n  File \"train.py\", line 3\n"
                   "RuntimeError: CUDA error: no kernel image is available for execution on the device\n")
    from_file = machine.run("explain", "--from-file", str(log), "--offline-only", "--json")
    assert from_file.exit_code == 0 and from_file.json["machine"] is None
    process = machine.run("explain", "-", "--offline-only", "--json", input=log.read_text())
    assert process.exit_code == 0
    assert json.loads(process.stdout)["matches"] == from_file.json["matches"]


def test_unknown_message_says_so_and_shows_the_machine(machine: Machine) -> None:
    result = machine.run("explain", "Segmentation fault in my own code", "--json")
    assert result.exit_code == 1
    assert result.json["matches"] == [] and result.json["machine"]["summary"]
    text = machine.run("explain", "Segmentation fault in my own code")
    assert "No known cause for this message." in text.stdout


EVERY_CODE = """
import json, os, sys
from pathlib import Path
from tests.conftest import run_in_process
out = {}
for code in sys.argv[1:]:
    result = run_in_process(["explain", code, "--json"], dict(os.environ), Path.cwd())
    out[code] = [result.exit_code, result.json]
print(json.dumps(out))
"""


def test_every_code_explains_itself(machine: Machine) -> None:
    """`explain CODE` for every registered code, through the CLI, in one process."""
    process = subprocess.run([sys.executable, "-c", EVERY_CODE, *sorted(CODES)], capture_output=True, text=True,
                             env=machine.env, cwd=machine.cwd, timeout=120)
    assert process.returncode == 0, process.stderr
    answers = json.loads(process.stdout)
    for code, entry in CODES.items():
        exit_code, data = answers[code]
        assert exit_code == 0 and data["code"]["title"] == entry.title and data["code"]["severity"] == entry.severity
        assert "{" not in data["code"]["explanation"].replace("{libcudnn", "")


def test_explain_code_indents_multi_line_snippets(machine: Machine) -> None:
    text = machine.run("explain", "CD203").stdout
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if "Messages that lead here" in line)
    assert all(line.startswith("      ") for line in lines[start + 1:] if line.strip())


def test_bad_input(machine: Machine, tmp_path: Path) -> None:
    missing = machine.run("explain", "--from-file", str(tmp_path / "nope.log"))
    assert missing.exit_code == 2 and missing.stderr.startswith("cudnn-doctor: error: --from-file")
    assert machine.run("explain", "CD999").exit_code == 1
    folder = machine.run("explain", "--from-file", str(tmp_path))
    assert folder.exit_code == 2 and "is a folder" in folder.stderr
    empty = tmp_path / "empty.log"
    empty.write_bytes(b"")
    assert machine.run("explain", "--from-file", str(empty)).exit_code == 2
    assert machine.run("explain", "   ").exit_code == 2


def test_no_message_or_empty_stdin_is_a_usage_error(machine: Machine) -> None:
    for given in ("", "  \n\t \n"):
        process = machine.run("explain", "-", "--offline-only", input=given)
        assert process.exit_code == 2 and process.stderr.startswith("cudnn-doctor: error: nothing to explain")


def test_normalising_captured_versions() -> None:
    assert normalise("runtime_version", "8100") == "8.1.0"
    assert normalise("runtime_version", "90100") == "9.1.0"
    assert normalise("compiled_version", "8, 9, 2") == "8.9.2"
    assert normalise("cuda_version", "110") == "11.0"
    assert normalise("cuda_version", "12080") == "12.8"
    assert normalise("compute_capability", "86") == "8.6"
