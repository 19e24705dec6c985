"""`cudnn-doctor bench` end to end: no GPU, bad options, and the ctypes path against gcc-built fakes
of libcudart and libcudnn (tests/fakes/fake_bench_*.c) that compute convolutions on the host."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.fakes.build import compile_library

ROOT = Path(__file__).resolve().parents[1]
def bench(machine, *args: str, timeout: float = 120):
    """`cudnn-doctor bench ARGS` on MACHINE, in this process unless the test is marked `subprocess` (conftest's
    `machine`): the measurement itself is a child of the command's own (cudnn_doctor/bench/run.py), so only a Python
    start and the doctor's imports per run were saved by running it here."""
    result = machine.run("bench", *args, timeout=timeout)
    assert "Traceback" not in result.stderr, result.stderr
    return subprocess.CompletedProcess([sys.executable, "-m", "cudnn_doctor", "bench", *args], result.exit_code,
                                       result.stdout, result.stderr)


def fakes(cudart: dict | None = None, cudnn: dict | None = None) -> list[str]:
    runtime = compile_library("fake_bench_cudart.c", "libcudart.so.13", cudart or {}, soname="libcudart.so.13")
    library = compile_library("fake_bench_cudnn.c", "libcudnn.so.9", cudnn or {}, soname="libcudnn.so.9")
    return ["--cudnn", str(library), "--cudart", str(runtime)]


def codes(data: dict) -> list[str]:
    return [finding["code"] for finding in data["findings"]]


def test_no_driver_is_cd601_fast_without_traceback(machine):
    started = time.monotonic()
    result = bench(machine, "--json")
    elapsed = time.monotonic() - started
    data = json.loads(result.stdout)
    assert result.returncode == 1
    assert data["schema"] == "cudnn-doctor/bench/1"
    assert codes(data) == ["CD601"]
    assert data["summary"]["exit_code"] == 1
    assert elapsed < 5  # well under a second of our own work; the rest is starting Python twice


def test_no_driver_text_names_the_finding(machine):
    result = bench(machine)
    assert result.returncode == 1
    assert "CD601" in result.stdout and "No GPU to benchmark" in result.stdout


@pytest.mark.parametrize("args", [["--dtype", "fp64"], ["--layout", "chwn"], ["--size", "huge"], ["--workload", "gemm"],
                                  ["--device", "first"], ["--workspace-limit", "-1"], ["--repeats", "0"],
                                  ["--api", "v7"]])
def test_bad_options_exit_2_with_one_line(machine, args):
    result = bench(machine, *args)
    assert result.returncode == 2
    assert result.stderr.startswith("cudnn-doctor: error:") and len(result.stderr.strip().splitlines()) == 1


def test_fake_gpu_convolutions_are_checked_and_lstm_failure_is_cd602(machine):
    result = bench(machine, "--json", "--size", "tiny", "--repeats", "2", *fakes())
    data = json.loads(result.stdout)
    by_name = {r["workload"]: r for r in data["results"]}
    for name in ("conv-fwd", "conv-bwd-data", "conv-bwd-filter"):
        assert by_name[name]["ok"] is True, by_name[name]
        assert by_name[name]["max_error"] < 1e-5
        assert by_name[name]["checked"] == "full" and by_name[name]["cpu_ms"] > 0
        # the machine's gcc builds the compiled baseline into the test's cache
        assert by_name[name]["cpu_baseline"].startswith("compiled with ")
        assert by_name[name]["algo"]
        # the fake has no backend (graph) API: the legacy cudnnFind*Ex path runs instead
        assert by_name[name]["api"] == "legacy" and by_name[name]["graph_api_error"] is None
    assert data["devices"][0]["name"] == "NVIDIA H100 80GB HBM3"
    assert data["devices"][0]["peaks_tflops"]["fp32"] == pytest.approx(66.9)
    lstm = by_name["lstm-fwd"]
    assert lstm["ok"] is False and lstm["error"]["name"] == "CUDNN_STATUS_NOT_SUPPORTED"
    assert codes(data) == ["CD602"]
    assert "cudnnSetRNNDescriptor_v8" in data["findings"][0]["detail"]
    assert result.returncode == 1


@pytest.mark.parametrize("layout", ["nchw", "nhwc"])
def test_fake_conv_only_passes_in_both_layouts_without_cpu_baseline(machine, layout):
    result = bench(machine, "--json", "--size", "tiny", "--workload", "conv", "--layout", layout, "--no-cpu",
                   "--repeats", "2", *fakes())
    data = json.loads(result.stdout)
    assert result.returncode == 0, data["findings"]
    assert all(r["ok"] and r["checked"] == "slice" and r.get("cpu_ms") is None for r in data["results"])


def test_api_graph_on_a_cudnn_without_it_is_a_usage_error(machine):
    result = bench(machine, "--size", "tiny", "--repeats", "2", "--workload", "conv", "--api", "graph", *fakes())
    assert result.returncode == 2
    assert result.stderr.startswith("cudnn-doctor: error: --api graph: cuDNN 9.19.0 at ")
    assert "no graph (backend) API" in result.stderr and "--api legacy" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_without_a_compiler_the_numpy_baseline_runs_and_the_output_says_why(machine):
    machine.env["CC"] = "false"
    result = bench(machine, "--size", "tiny", "--repeats", "2", "--workload", "conv", *fakes())
    assert result.returncode == 0, result.stdout
    assert " threads, NumPy (false could not build cpu_kernels.c: exited with status 1)" in result.stdout


def test_api_legacy_runs_the_find_path(machine):
    result = bench(machine, "--json", "--size", "tiny", "--repeats", "2", "--workload", "conv", "--api", "legacy",
                   *fakes())
    data = json.loads(result.stdout)
    assert result.returncode == 0, data
    assert {r["api"] for r in data["results"]} == {"legacy"} and all(r["ok"] for r in data["results"])


def test_cudnn_7_without_the_v8_rnn_api_runs_the_convolutions_and_skips_the_lstm(machine):
    result = bench(machine, "--size", "tiny", "--repeats", "2", *fakes(cudnn={"FAKE_V7": True}))
    assert result.returncode == 0, result.stdout
    assert "cuDNN 7.6.5:" in result.stdout
    lstm_line = next(line for line in result.stdout.splitlines() if line.startswith("lstm-fwd"))
    assert "skipped (CD607)" in lstm_line
    assert "CPU ms: float32 NHWC reference on " in result.stdout and " threads, compiled with " in result.stdout
    assert "CD607 Workload not available in this cuDNN" in result.stdout and "cudnnRNNForward" in result.stdout
    assert "bench passed: 3 workload(s) checked against the CPU reference, 1 not available in this cuDNN" \
        in result.stdout
    data = json.loads(bench(machine, "--json", "--size", "tiny", "--repeats", "2",
                            *fakes(cudnn={"FAKE_V7": True})).stdout)
    by_name = {r["workload"]: r for r in data["results"]}
    assert by_name["lstm-fwd"]["ok"] is None and "cudnnRNNForward" in by_name["lstm-fwd"]["skipped"]
    assert all(by_name[name]["ok"] and by_name[name]["api"] == "legacy" for name in
               ("conv-fwd", "conv-bwd-data", "conv-bwd-filter"))
    assert codes(data) == ["CD607"] and data["summary"]["exit_code"] == 0


def test_wrong_answer_is_cd603(machine):
    result = bench(machine, "--json", "--size", "tiny", "--workload", "conv", "--repeats", "2",
                   *fakes(cudnn={"FAKE_WRONG": True}))
    data = json.loads(result.stdout)
    assert result.returncode == 1
    assert codes(data) == ["CD603", "CD603", "CD603"]
    assert "differs from the CPU reference" in data["findings"][0]["detail"]
    assert [r["ok"] for r in data["results"]] == [False, False, False]
    text = bench(machine, "--size", "tiny", "--workload", "conv", "--repeats", "2", *fakes(cudnn={"FAKE_WRONG": True}))
    assert text.returncode == 1
    assert text.stdout.count("FAIL (full)") == 3 and "bench failed: 3 error(s), 3 workload(s) not passing" in text.stdout


def test_runtime_without_device_is_cd601(machine):
    data = json.loads(bench(machine, "--json", "--size", "tiny", *fakes(cudart={"FAKE_DEVICES": 0})).stdout)
    assert codes(data) == ["CD601"] and "cudaErrorNoDevice" in data["findings"][0]["detail"]


def test_driver_older_than_runtime_is_cd604(machine):
    data = json.loads(bench(machine, "--json", "--size", "tiny", *fakes(cudart={"FAKE_OLD_DRIVER": True})).stdout)
    assert codes(data) == ["CD604"] and "cudaErrorInsufficientDriver" in data["findings"][0]["detail"]


def test_cudnn_that_cannot_initialise_names_its_status(machine):
    data = json.loads(bench(machine, "--json", "--size", "tiny", *fakes(cudnn={"FAKE_NO_GPU": True})).stdout)
    assert codes(data) == ["CD602"]
    detail = data["findings"][0]["detail"]
    assert "cudnnCreate" in detail and "CUDNN_STATUS_NOT_INITIALIZED" in detail and "no GPU or driver" in detail


def test_crash_inside_cudnn_is_cd606_not_our_crash(machine):
    result = bench(machine, "--json", "--size", "tiny", "--workload", "conv", *fakes(cudnn={"FAKE_CRASH_CONV": True}))
    data = json.loads(result.stdout)
    assert result.returncode == 1
    assert codes(data) == ["CD606"] and "SIGSEGV" in data["findings"][0]["detail"]
    assert "cudnn-doctor-progress" not in data["findings"][0]["detail"]  # the child's progress is for a terminal


def test_out_of_memory_is_cd605(machine):
    data = json.loads(bench(machine, "--json", "--size", "small", "--workload", "conv",
                            *fakes(cudart={"FAKE_FREE_MIB": 0})).stdout)
    assert "CD605" in codes(data)


def test_device_beyond_the_runtime_count_is_a_usage_error(machine):
    result = bench(machine, "--device", "3", "--size", "tiny", *fakes())
    assert result.returncode == 2 and "--device 3" in result.stderr


def test_missing_cudnn_library_is_cd307(machine, tmp_path):
    runtime = compile_library("fake_bench_cudart.c", "libcudart.so.13", {}, soname="libcudart.so.13")
    data = json.loads(bench(machine, "--json", "--cudnn", str(tmp_path / "libcudnn.so.9"), "--cudart",
                            str(runtime)).stdout)
    assert codes(data) == ["CD307"]


def test_text_output_prints_hostile_library_paths_as_they_are(machine, tmp_path):
    """A --cudnn path is the user's text: rich markup in it ('[/]' would end the command with a MarkupError,
    '[bold]' would vanish) and terminal escapes reach the terminal as neither."""
    flags = fakes()
    folder = tmp_path / "cudnn [" / "] [bold]x\x1b[31m"  # the path holds "cudnn [/] [bold]x\x1b[31m"
    folder.mkdir(parents=True)
    library = folder / "libcudnn.so.9"
    library.write_bytes(Path(flags[1]).read_bytes())
    result = bench(machine, "--size", "tiny", "--repeats", "2", "--workload", "conv", "--no-cpu",
                   "--cudnn", str(library), *flags[2:])
    assert result.returncode == 0, result.stdout + result.stderr
    assert "internal error" not in result.stderr
    assert "cudnn [/] [bold]x\\x1b[31m/libcudnn.so.9" in result.stdout
    assert "\x1b" not in result.stdout
