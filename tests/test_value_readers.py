"""A setting's number judged by the grammar of the code that reads it (issue 43, r18), not by Python's strip(), int()
and float(): those take Unicode blanks and digits, '1_0' and 'infinity', which C's readers do not, and refuse
'0x10', which NCCL's strtoll(..., 0) reads as 16. Each row of kind integer, float, pattern or list names its reader
(compat/process_env.toml [[value_reader]], each with its source); a closed-source library's is the documented form.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cudnn_doctor.knowledge import environment
from cudnn_doctor.knowledge.data import load
from tests.conftest import Machine
from tests.test_process_env import gpu_machine

# (variable, value, what its reader makes of it: "ok", or words its problem holds)
CASES = [
    # a closed-source reader (the CUDA driver, MPS, cuBLAS): only the documented form is known to be read
    ("CUDA_DEVICE_MAX_CONNECTIONS", "\u00a08", "not a whole number"),  # a no-break space Python strips
    ("CUDA_DEVICE_MAX_CONNECTIONS", "\u20038", "not a whole number"),  # an em space
    ("CUDA_DEVICE_MAX_CONNECTIONS", "8", "ok"),
    ("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE", "1_0", "not a number"),  # float('1_0') == 10.0
    ("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE", "\u0665\u0660", "not a number"),  # float('٥٠') == 50.0
    ("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE", "50.5", "ok"),
    ("CUBLAS_WORKSPACE_CONFIG", "\u2003:4096:8", "not of the form"),  # str.strip() takes the em space away
    ("CUBLAS_WORKSPACE_CONFIG", ":4096:8", "ok"),
    ("CUDA_COREDUMP_GENERATION_FLAGS", "skip_abort,\u00a0skip_global_memory", "(with a no-break space) is not among"),
    ("CUDA_COREDUMP_GENERATION_FLAGS", "skip_abort, skip_global_memory", "(with a space) is not among"),  # documented
    ("CUDA_COREDUMP_GENERATION_FLAGS", "skip_abort,skip_global_memory", "ok"),
    # Python's int() (torch.distributed's rendezvous): what it takes is no problem
    ("WORLD_SIZE", "1_0", "ok"),
    ("WORLD_SIZE", "\u0661", "ok"),
    ("WORLD_SIZE", "\u00a02", "ok"),
    ("WORLD_SIZE", "0x2", "not a whole number to Python's int()"),
    # NCCL's strtoll(value, NULL, 0)
    ("NCCL_IB_TIMEOUT", "0x10", "ok"),  # 16, hexadecimal
    ("NCCL_IB_TIMEOUT", "010", "read as 8"),  # octal
    ("NCCL_IB_TIMEOUT", "1_0", "read as 1"),
    ("NCCL_IB_TIMEOUT", "abc", "reads it as 0"),
    ("NCCL_IB_TIMEOUT", " 20", "ok"),  # strtoll skips C's blanks
    # TensorFlow: safe_strto64 refuses what is not digits and C blanks; istringstream stops at it
    ("TF_GPU_THREAD_COUNT", "9" * 30, "beyond the 64-bit"),
    ("TF_GPU_THREAD_COUNT", " 4 ", "ok"),
    ("TF_CPP_MIN_LOG_LEVEL", "\u20033", "reads it as 0"),  # Python read 3: logs hidden; TF reads 0
    ("TF_CPP_MIN_LOG_LEVEL", "2x", "read as 2"),
    # torch's C++ std::stoi: an int of 32 bits, the rest ignored
    ("TORCH_NCCL_TRACE_BUFFER_SIZE", "3000000000", "beyond the 32-bit"),
    ("TORCH_NCCL_TRACE_BUFFER_SIZE", "2000", "ok"),
]


@pytest.mark.parametrize(("variable", "value", "verdict"), CASES, ids=[f"{v}={w!r}" for v, w, _ in CASES])
def test_each_value_is_judged_by_its_readers_grammar(variable: str, value: str, verdict: str) -> None:
    problem = environment.grammar_problem(environment.rows()[variable], value)
    if verdict == "ok":
        assert problem is None, problem
    else:
        assert problem and verdict in problem, problem


def test_every_number_row_names_a_reader_that_exists_and_each_reader_has_a_source() -> None:
    readers = {row["name"]: row for row in load("process_env")["value_reader"]}
    assert [name for name, row in readers.items() if row.get("default")] == ["documented"]
    assert all(len(row["source"]) > 40 for row in readers.values())
    for variable, row in environment.rows().items():
        if row.get("reader"):
            assert row["reader"] in readers, variable
    for row in load("multi_gpu")["nccl_setting"]:
        if row["grammar"] == "integer":
            assert row.get("reader") == "nccl-param", row["variable"]
    # the rows whose reader is open source say so; a row that names none is a closed library's
    for variable in ("RANK", "WORLD_SIZE", "MASTER_PORT", "TF_CPP_MIN_LOG_LEVEL", "TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC",
                     "TF_CUDNN_WORKSPACE_LIMIT_IN_MB", "TORCH_CUDNN_V8_API_LRU_CACHE_LIMIT"):
        assert environment.rows()[variable].get("reader"), variable


def test_a_no_break_space_before_a_count_is_a_warning_and_the_plan_unsets_it(machine_in_process: Machine,
                                                                              tmp_path: Path) -> None:
    """The CUDA driver's CUDA_DEVICE_MAX_CONNECTIONS with a no-break space before 8 (a value pasted from a web
    page): Python's strip() made it 8; the documented form is digits alone."""
    gpu_machine(machine_in_process, tmp_path, gpus=1)
    machine_in_process.env["CUDA_DEVICE_MAX_CONNECTIONS"] = "\u00a08"
    report = json.loads(machine_in_process.run("check", "--json").stdout)
    [said] = [f for f in report["findings"] if f["subject"] == "CUDA_DEVICE_MAX_CONNECTIONS"]
    assert said["code"] == "CD414" and "no-break space" in said["detail"], said


def test_a_rank_python_reads_is_no_finding(machine_in_process: Machine, tmp_path: Path) -> None:
    """WORLD_SIZE=1_0 is 10 to int(): nothing said of it (it was 'not a whole number')."""
    gpu_machine(machine_in_process, tmp_path, gpus=1)
    machine_in_process.env.update(WORLD_SIZE="1_0", RANK="\u0663")
    report = json.loads(machine_in_process.run("check", "--json").stdout)
    assert not [f for f in report["findings"] if f["subject"] in ("WORLD_SIZE", "RANK")], report["findings"]
