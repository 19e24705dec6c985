"""A framework's own words refusing a setting of the environment (compat/errors.toml [[event]] kind "setting"): the
classes check names from the environment, read in a program's output, as `check --deep` reads what a framework said
in its child. The messages are the frameworks' own (their source, and what torch 2.11 and JAX 0.11 printed on an
H100 and the real jax 0.4.38 on the CPU)."""

from __future__ import annotations

import json

import pytest

from tests.conftest import Machine

CASES = [
    ("Traceback (most recent call last):\n  File \"/usr/lib/python3/dist-packages/torch/__init__.py\", line 2791, in "
     "<module>\n    _import_device_backends()\nRuntimeError: Failed to load the backend extension: torch_npu. You can "
     "disable extension auto-loading with TORCH_DEVICE_BACKEND_AUTOLOAD=0.", "CD421", "TORCH_DEVICE_BACKEND_AUTOLOAD=0"),
    ("RuntimeError: You cannot disable CPU feature 'AVX2', since it is part of the baseline optimizations:\n"
     "(SSE SSE2 SSE3 SSSE3 SSE41 POPCNT SSE42 AVX F16C FMA3 AVX2)", "CD411", "NPY_DISABLE_CPU_FEATURES"),
    ("ValueError: The value of TORCH_DISTRIBUTED_DEBUG must be OFF, INFO, or DETAIL.", "CD411", "TORCH_DISTRIBUTED_DEBUG"),
    ("jax.errors.JaxRuntimeError: INVALID_ARGUMENT: Disallowed host-to-device transfer: aval=ShapedArray(float32[]), "
     "dst_sharding=SingleDeviceSharding(device=CudaDevice(id=0), memory_kind=device)", "CD411", "JAX_TRANSFER_GUARD"),
    ("jax._src.dtypes.TypePromotionError: Input dtypes ('float32', 'int32') have no available implicit dtype promotion "
     "path when jax_numpy_dtype_promotion=strict. Try explicitly casting inputs to the desired output type, or set "
     "jax_numpy_dtype_promotion=standard.", "CD411", "JAX_NUMPY_DTYPE_PROMOTION"),
    ("ValueError: Operands could not be broadcast together for add on shapes (2, 3) and (3,) and with the config "
     "option jax_numpy_rank_promotion='raise'.", "CD411", "JAX_NUMPY_RANK_PROMOTION"),
    ("F1206 16:53:22.367602   26965 parse_flags_from_env.cc:220] Check failed: tsl::Flags::Parse(&env_argv->argc, "
     "env_argv->argv.data(), flag_list) Flag parsing failed.\nusage: --xla_gpu_enable_libnvptxcompiler=true\nFlags:",
     "CD411", "XLA_FLAGS"),
    ("2026-12-06 16:54:13.335877: F external/xla/xla/parse_flags_from_env.cc:234] Unknown flag in XLA_FLAGS: "
     "--xla_gpu_no_such_flag_at_all=true", "CD411", "XLA_FLAGS"),
    ("\tUnable to write PTX contents to: /proc/tempfile-node7-d1bfe5ffc9880699-10053-661f84b9eca8a", "CD417", "TMPDIR"),
]


@pytest.mark.parametrize(("message", "code", "named"), CASES, ids=[c[1] + "-" + c[2] for c in CASES])
def test_a_frameworks_words_refusing_a_setting_name_it_and_its_line(machine: Machine, message: str, code: str,
                                                                   named: str) -> None:
    done = machine.run("explain", "-", "--json", "--offline-only", input=message)
    answer = json.loads(done.stdout)
    [first, *_] = answer["matches"]
    assert first["code"] == code, answer["matches"]
    assert named in json.dumps(first), first


def test_the_same_words_without_the_setting_are_not_claimed(machine: Machine) -> None:
    done = machine.run("explain", "-", "--json", "--offline-only",
                       input="warning: implicit rank promotion disallowed by style guide (flake8-numpy)")
    assert not json.loads(done.stdout)["matches"], done.stdout
