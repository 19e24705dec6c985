"""Issue 45, round twelve: settings that look wrong and do not stop a one-GPU program, because nothing reads them until
a program uses a feature (compat/process_env.toml [[feature]]): NCCL's and torch.distributed's at the first
collective, Inductor's and Triton's at torch.compile, CUDA's core-dump and debugger switches at a GPU exception, the
JIT cache's when the driver compiles PTX. Such a value is never an error; a finding says when it would matter, and
one about a collective is only said (info) where a program sees one GPU and no launcher started several processes.
Settings of another build (Apple's MPS, ROCm) and of compilers are silent. The refusals that do stop a program as it
starts stay errors (TORCH_DISTRIBUTED_DEBUG, read as `import torch` imports torch.distributed). The real torch 2.13
(CPU) and jax 0.4.38 are run with the values: they import and compute."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from cudnn_doctor.knowledge.environment import feature_of, features, rows
from tests.conftest import Machine
from tests.real_wheels import real_jax_cpu, real_torch_cpu
from tests.test_environment_settings import check, closed_loop, settings_findings
from tests.test_frameworks import install_torch, python_env
from tests.test_process_env import gpu_machine, jax_install, plan_lines

# values that look wrong, by the feature whose use first reads them
COLLECTIVE = {
    "NCCL_DEBUG": "LOUD", "NCCL_P2P_LEVEL": "BOGUS", "NCCL_P2P_DISABLE": "maybe", "NCCL_SHM_DISABLE": "2",
    "NCCL_PROTO": "LL,Fast", "NCCL_NTHREADS": "100", "NCCL_SOCKET_NTHREADS": "99", "NCCL_BUFFSIZE": "-5",
    "NCCL_CUMEM_ENABLE": "x", "NCCL_IB_DISABLE": "1", "NCCL_TOPO_FILE": "/nonexistent/topo.xml",
    "TORCH_NCCL_BLOCKING_WAIT": "maybe", "TORCH_NCCL_ASYNC_ERROR_HANDLING": "9", "TORCH_NCCL_TRACE_BUFFER_SIZE": "lots",
    "TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC": "-1", "TORCH_NCCL_DEBUG_INFO_TEMP_FILE": "/nonexistent/dir/trace",
    "NCCL_ASYNC_ERROR_HANDLING": "7", "MASTER_PORT": "99999", "RANK": "-1", "WORLD_SIZE": "0",
}
ELSEWHERE = {  # read when torch.compile compiles, a GPU kernel faults, or the driver compiles PTX
    "TORCHINDUCTOR_CACHE_DIR": "/proc/nope", "TRITON_CACHE_DIR": "/proc/nope", "TRITON_HOME": "/proc/nope",
    "TRITON_PTXAS_PATH": "/nonexistent/ptxas", "TRITON_LIBCUDA_PATH": "/nonexistent",
    "CUDA_DEVICE_WAITS_ON_EXCEPTION": "2", "CUDA_ENABLE_COREDUMP_ON_EXCEPTION": "yes",
    "CUDA_COREDUMP_FILE": "/proc/nope/core", "CUDA_COREDUMP_GENERATION_FLAGS": "bogus",
    "CUDA_COREDUMP_SHOW_PROGRESS": "x", "CUDA_CACHE_PATH": "/proc/nope", "CUDA_CACHE_MAXSIZE": "-1",
    "CUDA_CACHE_DISABLE": "maybe",
}
SILENT = {  # compilers, Inductor's and Triton's modes, debugger and cuBLAS-emulation switches, other builds' settings
    "CC": "/nonexistent/gcc", "CXX": "/nonexistent/g++", "NVCC_PREPEND_FLAGS": "--no-such-flag",
    "NVCC_APPEND_FLAGS": "-bogus", "CUDAHOSTCXX": "/nonexistent/g++", "TORCH_EXTENSIONS_DIR": "/proc/nope",
    "TORCHINDUCTOR_MAX_AUTOTUNE": "maybe", "TORCHINDUCTOR_FX_GRAPH_CACHE": "sure", "TRITON_INTERPRET": "maybe",
    "TORCHDYNAMO_DISABLE": "maybe", "CUDA_DEBUGGER_SOFTWARE_PREEMPTION": "maybe", "CUDA_DEVICE_WAITS_ON_EXCEPTION": "1",
    "CUBLAS_EMULATE_SINGLE_PRECISION": "maybe", "CUBLAS_EMULATION_STRATEGY": "fastest",
    "PYTORCH_MPS_HIGH_WATERMARK_RATIO": "abc", "PYTORCH_ENABLE_MPS_FALLBACK": "maybe", "HIP_VISIBLE_DEVICES": "7",
    "ROCR_VISIBLE_DEVICES": "bogus", "PYTORCH_ROCM_ARCH": "gfx_bogus", "MIOPEN_FIND_MODE": "bogus",
    "HSA_OVERRIDE_GFX_VERSION": "x", "PYTORCH_MIOPEN_SUGGEST_NHWC": "maybe",
    # the common allocator parser skips keys it does not own: a CUDA key and an unknown one in the ROCm builds' name
    "PYTORCH_HIP_ALLOC_CONF": "backend:cudaMallocAsync,garbage_key:1",
}


def one_gpu_with_frameworks(machine: Machine, tmp_path: Path, gpus: int = 1) -> None:
    gpu_machine(machine, tmp_path, gpus=gpus)
    site = python_env(machine, tmp_path)
    install_torch(site)
    jax_install(site)


def test_every_row_and_family_a_feature_names_exists_and_every_feature_is_used() -> None:
    known = rows()
    named = {row["read_when"] for row in known.values() if row.get("read_when")}
    names = {feature["name"] for feature in features()}
    assert named <= names and names <= named | {f["name"] for f in features() if f.get("readers") or f.get("families")}
    assert all(feature_of(name) for name in COLLECTIVE) and all(feature_of(name) for name in ELSEWHERE)
    assert feature_of("TORCHINDUCTOR_ANYTHING")["name"] == "compile"  # type: ignore[index]
    assert feature_of("TORCH_DISTRIBUTED_DEBUG") is None and feature_of("PYTORCH_CUDA_ALLOC_CONF") is None


def test_collective_settings_on_one_gpu_without_a_launcher_are_said_not_warned(machine: Machine,
                                                                               tmp_path: Path) -> None:
    one_gpu_with_frameworks(machine, tmp_path)
    machine.env.update(COLLECTIVE)
    report = check(machine)
    found = [f for name in COLLECTIVE for f in settings_findings(report, name)]
    assert found and {f["subject"] for f in found} >= {"NCCL_DEBUG", "TORCH_NCCL_BLOCKING_WAIT", "MASTER_PORT"}
    for made in found:
        assert made["severity"] == "info", made
        assert "first collective" in made["detail"] and "a one-GPU program runs no collective" in made["detail"]
        assert "check --deep" not in made["detail"], made["detail"]
    assert not [f for f in report["findings"] if f["severity"] == "error" and f["code"].startswith(("CD41", "CD17"))]
    lines = plan_lines(machine)  # what is only said is not the plan's to change
    assert not [line for line in lines if any(name in line for name in COLLECTIVE)], lines


@pytest.mark.parametrize(("launch", "gpus"), [({"WORLD_SIZE": "2"}, 1), ({"OMPI_COMM_WORLD_SIZE": "4"}, 1),
                                              ({"SLURM_NTASKS": "8"}, 1), ({}, 2)])
def test_with_several_gpus_or_a_launcher_they_are_warnings_that_say_when(machine: Machine, tmp_path: Path,
                                                                         launch: dict[str, str], gpus: int) -> None:
    one_gpu_with_frameworks(machine, tmp_path, gpus=gpus)
    machine.env.update({"NCCL_DEBUG": "LOUD", "TORCH_NCCL_BLOCKING_WAIT": "maybe", **launch})
    report = check(machine)
    for name in ("NCCL_DEBUG", "TORCH_NCCL_BLOCKING_WAIT"):
        [made] = settings_findings(report, name)
        assert made["severity"] == "warning" and "first collective" in made["detail"], made
        assert "one-GPU program" not in made["detail"]
    assert not settings_findings(report, next(iter(launch), "WORLD_SIZE"))  # a launcher's count is weighed, not judged
    closed_loop(machine, "CD414", "TORCH_NCCL_BLOCKING_WAIT")


def test_a_launchers_count_is_weighed_and_never_bisected() -> None:
    from cudnn_doctor.knowledge.environment import bisected, set_variables

    env = {"SLURM_NTASKS": "4", "PMI_SIZE": "2", "NCCL_DEBUG": "WARN", "HOME": "/root"}
    assert set(set_variables(env)) == {"SLURM_NTASKS", "PMI_SIZE", "NCCL_DEBUG"}
    assert bisected(env) == ["NCCL_DEBUG"]


def test_a_launchers_count_of_one_or_not_a_number_launches_nothing(machine: Machine, tmp_path: Path) -> None:
    one_gpu_with_frameworks(machine, tmp_path)
    machine.env.update({"NCCL_P2P_LEVEL": "BOGUS", "SLURM_NTASKS": "1", "OMPI_COMM_WORLD_SIZE": "four",
                        "PMI_SIZE": "\u0662"})  # an Arabic-Indic 2: not what a launcher writes
    [made] = settings_findings(check(machine), "NCCL_P2P_LEVEL")
    assert made["severity"] == "info"


def test_settings_read_at_compile_at_a_fault_or_at_ptx_jit_are_warnings_that_say_when(machine: Machine,
                                                                                       tmp_path: Path) -> None:
    one_gpu_with_frameworks(machine, tmp_path)
    machine.env.update(ELSEWHERE)
    report = check(machine)
    said = {"TORCHINDUCTOR_CACHE_DIR": "torch.compile", "TRITON_PTXAS_PATH": "torch.compile",
            "CUDA_ENABLE_COREDUMP_ON_EXCEPTION": "raises an exception", "CUDA_COREDUMP_FILE": "raises an exception",
            "CUDA_DEVICE_WAITS_ON_EXCEPTION": "raises an exception", "CUDA_CACHE_PATH": "compiles PTX",
            "CUDA_CACHE_MAXSIZE": "compiles PTX"}
    for name, words in said.items():
        [made] = settings_findings(report, name) or [{"subject": name, "detail": "", "severity": None}]
        assert made["severity"] == "warning" and "It matters only when" in made["detail"], made
        assert words in made["detail"] and "check --deep" not in made["detail"], made["detail"]
    assert not [f for f in report["findings"] if f["severity"] == "error" and f["subject"] in ELSEWHERE]
    closed_loop(machine, "CD414", "CUDA_ENABLE_COREDUMP_ON_EXCEPTION")


def test_compilers_modes_debuggers_and_other_builds_settings_are_silent(machine: Machine, tmp_path: Path) -> None:
    one_gpu_with_frameworks(machine, tmp_path)
    machine.env.update(SILENT)
    report = check(machine)
    assert not [f for name in SILENT for f in settings_findings(report, name)], report["findings"]


@pytest.mark.parametrize("value", ["LOUD", "", "verbose"])
def test_torch_distributed_debug_refused_at_import_stays_an_error(machine: Machine, tmp_path: Path,
                                                                  value: str) -> None:
    """Not a collective's setting: torch/distributed/__init__.py calls set_debug_level_from_env() as `import torch`
    imports it (the real torch below refuses these values at import); an error on one GPU, without a launcher."""
    one_gpu_with_frameworks(machine, tmp_path)
    machine.env["TORCH_DISTRIBUTED_DEBUG"] = value
    [made] = settings_findings(check(machine), "TORCH_DISTRIBUTED_DEBUG")
    assert made["severity"] == "error" and made["evidence"] == "rule" and made["code"] == "CD411", made
    closed_loop(machine, "CD411", "TORCH_DISTRIBUTED_DEBUG")


def test_a_common_allocator_key_refused_in_the_rocm_name_stays_an_error(machine: Machine, tmp_path: Path) -> None:
    """A CUDA build's common allocator parser reads PYTORCH_HIP_ALLOC_CONF too (c10/core/AllocatorConfig.cpp) and
    refuses what it cannot parse of its own keys (proven in tests/test_alloc_conf.py)."""
    one_gpu_with_frameworks(machine, tmp_path)
    machine.env["PYTORCH_HIP_ALLOC_CONF"] = "expandable_segments:maybe"
    [made] = settings_findings(check(machine), "PYTORCH_HIP_ALLOC_CONF")
    assert made["severity"] == "error" and made["code"] == "CD411", made


def _run_real(folder: Path, code: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    whole = {"PATH": "/usr/bin:/bin", "HOME": os.environ.get("HOME", "/root"), "PYTHONPATH": str(folder), **env}
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=whole, timeout=600)


TORCH_WORK = ("import warnings; warnings.simplefilter('ignore')\nimport torch\n"
              "x = torch.nn.Conv2d(3, 8, 3)(torch.ones(2, 3, 16, 16))\n"
              "y = torch.nn.LSTM(8, 8)(torch.ones(4, 2, 8))[0]\nprint('ran', tuple(x.shape), tuple(y.shape))\n")


def test_the_real_torch_imports_and_computes_with_every_value_that_stays_no_error() -> None:
    """The real torch 2.13 (CPU) with every value above set: it imports and runs a convolution and an LSTM; with
    TORCH_DISTRIBUTED_DEBUG refused it stops at import (the error's rule)."""
    folder = real_torch_cpu()
    values = {**COLLECTIVE, **ELSEWHERE, **SILENT}
    ran = _run_real(folder, TORCH_WORK, values)
    assert ran.returncode == 0 and "ran (2, 8, 14, 14) (4, 2, 8)" in ran.stdout, ran.stderr[-1500:]
    for value in ("LOUD", "", "verbose"):
        refused = _run_real(folder, TORCH_WORK, {**values, "TORCH_DISTRIBUTED_DEBUG": value})
        assert refused.returncode != 0 and "TORCH_DISTRIBUTED_DEBUG must be OFF, INFO, or DETAIL" in refused.stderr


def test_the_real_jax_imports_and_computes_with_them() -> None:
    folder = real_jax_cpu()
    code = ("import jax, jax.numpy as jnp\nx = jax.lax.conv(jnp.ones((2, 3, 16, 16)), jnp.ones((8, 3, 3, 3)), (1, 1), "
            "'VALID')\nprint('ran', x.shape)\n")
    ran = _run_real(folder, code, {**COLLECTIVE, **ELSEWHERE, **SILENT})
    assert ran.returncode == 0 and "ran (2, 8, 14, 14)" in ran.stdout, ran.stderr[-1500:]
