"""Issue 45, round twelve: the doctor's own children are immune to the Python start-up variables that rewrite
sys.executable (PYTHONEXECUTABLE: CPython's path calculation takes it even under -I and -E), while the children that
stand for the user's program keep them and report what that program gets."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import Machine
from tests.test_environment_settings import real_jax_site
from tests.test_process_env import gpu_machine
from tests.test_python_start import _real_venv_torch

__all__ = ["real_jax_site"]  # the fixture, used by name

REMOVED = "/opt/removed/python3.9/bin/python3.9"  # an interpreter that is not there


def test_under_minus_i_pythonexecutable_still_rewrites_sys_executable(tmp_path: Path) -> None:
    """The fact the immunity rests on, asked of this CPython: -I (and -E) do not stop PYTHONEXECUTABLE."""
    env = {"PATH": os.environ.get("PATH", ""), "PYTHONEXECUTABLE": REMOVED}
    said = subprocess.run([sys.executable, "-I", "-S", "-c", "import sys; print(sys.executable)"], env=env,
                          capture_output=True, text=True, timeout=60)
    assert said.stdout.strip() == REMOVED, said.stdout + said.stderr


def test_own_python_is_the_interpreter_the_kernel_started(tmp_path: Path) -> None:
    """own_python() in a doctor started with PYTHONEXECUTABLE names the program that runs, not the variable's path."""
    env = {"PATH": os.environ.get("PATH", ""), "PYTHONEXECUTABLE": REMOVED,
           "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    code = "import sys; from cudnn_doctor.child import own_python; print(sys.executable); print(own_python())"
    said = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60,
                          cwd=str(Path(__file__).resolve().parents[1]))
    rewritten, own = said.stdout.split()
    assert rewritten == REMOVED and os.path.samefile(own, sys.executable) and own == sys.executable, said.stderr


def test_a_removed_pythonexecutable_names_the_variable_and_nothing_else(machine_process: Machine, tmp_path: Path) -> None:
    """Round eleven's s11-python-executable: a PYTHONEXECUTABLE naming a removed interpreter made every child of the
    doctor's own fail to start (sys.executable is that path), read as NVML, the CUDA runtime and cuDNN failing
    (CD104, CD203, CD307). Now only the variable is named, seen: the venv's python3 loses torch with it."""
    machine = machine_process  # the doctor a process of its own, started with the variable
    _real_venv_torch(machine, tmp_path)
    gpu_machine(machine, tmp_path, gpus=1)
    machine.env["PYTHONEXECUTABLE"] = REMOVED
    # the doctor's own dependencies from this venv's site-packages: it is started as another Python too
    machine.env["PYTHONPATH"] = os.pathsep.join([machine.env["PYTHONPATH"], *[p for p in sys.path if "site-packages"
                                                                               in p]])
    report = machine.check_json()
    errors = [f for f in report["findings"] if f["severity"] == "error"]
    assert errors and all(f["subject"] == "PYTHONEXECUTABLE" for f in errors), errors
    assert errors[0]["evidence"] == "seen" and "import torch" in errors[0]["proof"], errors[0]


# --- jaxlib's GPU-client variables, parsed far below their read ---------------------------------------------------

# generate_pjrt_gpu_plugin_options as jaxlib 0.8 on lays it out (jax-ml/jax@060bca92991314680c1355cdc4dca819d2c9ba08
# jaxlib/xla_client.py): the allocators' tuple and its message between the read of XLA_PYTHON_CLIENT_COLLECTIVE_MEM_
# SIZE_MB and its int(), some 700 characters on; the real jax 0.4.38 runs it here in place of its own
NEWER_OPTIONS = '''def generate_pjrt_gpu_plugin_options() -> _NameValueMapping:
  """Generates the PjRt GPU plugin options."""

  options = {}
  options['platform_name'] = 'cuda'
  allocator = os.getenv('XLA_PYTHON_CLIENT_ALLOCATOR', 'default').lower()
  memory_fraction = os.getenv('XLA_CLIENT_MEM_FRACTION', '')
  deprecated_memory_fraction = os.getenv('XLA_PYTHON_CLIENT_MEM_FRACTION', '')
  if deprecated_memory_fraction:
    if memory_fraction:
      raise ValueError(
          'XLA_CLIENT_MEM_FRACTION is specified together '
          'with XLA_PYTHON_CLIENT_MEM_FRACTION. '
          'Remove the latter one, it is deprecated.'
      )
    else:
      memory_fraction = deprecated_memory_fraction
  preallocate = os.getenv('XLA_PYTHON_CLIENT_PREALLOCATE', '')
  collective_memory_size = os.getenv(
      'XLA_PYTHON_CLIENT_COLLECTIVE_MEM_SIZE_MB', ''
  )
  allowed_allocators = (
      'default',
      'platform',
      'bfc',
      'cuda_async',
      'vmm',
      'address',
  )
  if allocator not in allowed_allocators:
    raise ValueError(
        'XLA_PYTHON_CLIENT_ALLOCATOR env var must be one of %s, got "%s"'
        % (', '.join(f'"{a}"' for a in allowed_allocators), allocator)
    )
  options['allocator'] = allocator
  if memory_fraction:
    options['memory_fraction'] = float(memory_fraction)
  if preallocate:
    options['preallocate'] = preallocate not in ('false', 'False', '0')
  if collective_memory_size:
    options['collective_memory_size'] = int(collective_memory_size) * (1 << 20)
  abort = os.getenv('XLA_PYTHON_CLIENT_ABORT_COLLECTIVES_ON_FAILURE', '0')
  options['abort_collectives_on_failure'] = bool(int(abort))
  use_trft_gpu_client = os.getenv('XLA_PYTHON_CLIENT_USE_TFRT_GPU_CLIENT', '0')
  options['use_tfrt_gpu_client'] = bool(int(use_trft_gpu_client))
  return options
'''


def newer_jaxlib(site: Path) -> Path:
    """SITE's jaxlib made a folder of the real one's files, its xla_client.py a copy whose
    generate_pjrt_gpu_plugin_options is laid out as jaxlib 0.8 on has it (NEWER_OPTIONS)."""
    import re

    from tests.real_wheels import real_jax_cpu

    real = real_jax_cpu() / "jaxlib"
    target = site / "jaxlib"
    if target.is_symlink():
        target.unlink()
    target.mkdir()
    for entry in real.iterdir():
        if entry.name != "xla_client.py":
            (target / entry.name).symlink_to(entry)
    text = (real / "xla_client.py").read_text()
    start = text.index("def generate_pjrt_gpu_plugin_options(")
    end = re.compile(r"\n(?=\S)").search(text, start).start() + 1
    (target / "xla_client.py").write_text(text[:start] + NEWER_OPTIONS + text[end:])
    return site


def test_a_size_parsed_far_below_its_read_is_still_judged_by_its_int(machine: Machine, real_jax_site: Path,
                                                                      tmp_path: Path) -> None:
    """Round eleven's s11-xla-collective-size-unit: plain check was silent on the H100 (JAX 0.11), where the
    int() of XLA_PYTHON_CLIENT_COLLECTIVE_MEM_SIZE_MB lies past the 600 characters after its read that were looked
    at. The whole function is read now: CD411 with its rule, proven by the real jax running the newer layout."""
    from tests.real_wheels import real_jax_cpu
    from tests.test_environment_settings import check, settings_findings
    from tests.test_settings_round14 import with_plugin

    with_plugin(newer_jaxlib(real_jax_site))
    variable = "XLA_PYTHON_CLIENT_COLLECTIVE_MEM_SIZE_MB"
    for value, refused in (("64MB", True), ("64", False)):
        machine.env[variable] = value
        found = [f for f in settings_findings(check(machine), variable) if f["severity"] == "error"]
        env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": f"{real_jax_site}:{real_jax_cpu()}", variable: value}
        said = subprocess.run([sys.executable, "-c", "import jax; print(jax.devices())"], capture_output=True,
                              text=True, env=env, timeout=300)
        assert ("invalid literal for int() with base 10" in said.stderr) == refused, said.stderr[-600:]
        assert bool(found) == refused, found
        if refused:
            assert found[0]["code"] == "CD411" and found[0]["evidence"] == "rule", found


# --- CUDA_VISIBLE_DEVICES as torch itself counts it -----------------------------------------------------------------

UUID = "GPU-00000000-fa4e-0000-0000-000000000000"  # the fake NVML's GPU 0, as nvidia-smi would print it


def torch_with_its_count(machine: Machine, tmp_path: Path, gpus: int = 1) -> Path:
    """A real venv with torch's files, its torch/cuda/__init__.py the real torch 2.13's (the functions that count
    the visible GPUs are asked there), on a machine with one GPU whose driver takes a UUID in any case."""
    from tests.real_wheels import real_torch_cpu

    site = _real_venv_torch(machine, tmp_path)
    gpu_machine(machine, tmp_path, gpus=gpus)
    (site / "torch" / "cuda").mkdir(parents=True, exist_ok=True)
    (site / "torch" / "cuda" / "__init__.py").symlink_to(real_torch_cpu() / "torch" / "cuda" / "__init__.py")
    return site


def test_a_uuid_torch_matches_to_no_gpu_is_named_for_torch(machine: Machine, tmp_path: Path) -> None:
    """Round eleven's s11-cvd-uuid-uppercase: the driver and NVML take a UUID in capitals (cuInit sees the GPU, JAX
    ran), torch's own parse compares it with NVML's as written and counts none; plain check was silent. Now torch's
    own functions are run in its Python with this environment: CD113 for torch, a warning that --deep proves, and the
    plan writes the UUID as nvidia-smi prints it."""
    from tests.test_process_env import plan_lines

    torch_with_its_count(machine, tmp_path)
    machine.env["CUDA_VISIBLE_DEVICES"] = UUID.upper()
    report = machine.check_json()
    assert report["process"]["cuinit"] == 0 and len(report["process"]["visible"]) == 1, report["process"]["cuinit"]
    assert report["process"]["torch_visible"][1] == 0, report["process"]["torch_visible"]
    [made] = [f for f in report["findings"] if f["code"] == "CD113"]
    assert made["severity"] == "warning" and made["evidence"] == "read" and "letter case" in made["detail"], made
    assert f"export CUDA_VISIBLE_DEVICES={UUID}" in plan_lines(machine)


@pytest.mark.parametrize("value", [UUID, UUID[:12], "0", "0,1", " 0", "GPU-00000000-fa4e,1"])
def test_values_torch_counts_a_gpu_for_are_no_finding(machine: Machine, tmp_path: Path, value: str) -> None:
    """As nvidia-smi prints it, a prefix of one, indices (torch trims at the first it cannot use, as CUDA does), a
    space before an index (torch's strtoul skips it after strip()): torch counts a GPU, nothing is said."""
    torch_with_its_count(machine, tmp_path)
    machine.env["CUDA_VISIBLE_DEVICES"] = value
    report = machine.check_json()
    assert not [f for f in report["findings"] if f["subject"] == "CUDA_VISIBLE_DEVICES" and f["code"] == "CD113"], \
        report["findings"]


def test_the_count_is_torchs_own_code_asked_of_its_file(tmp_path: Path) -> None:
    """The child's answer is what torch's own functions give: the same file's functions imported by Python as torch
    does (the real torch 2.13 CPU build) give the same parse for the same values. Both read CUDA_VISIBLE_DEVICES at
    each call (os.getenv in _parse_visible_devices): one process of each asks every value in turn, set in its
    environment before the call (a torch import per value was 3.5 CPU s each, six of them)."""
    from tests.real_wheels import real_torch_cpu

    source = real_torch_cpu() / "torch" / "cuda" / "__init__.py"
    child = Path(__file__).resolve().parents[1] / "cudnn_doctor" / "_python_child.py"
    values = [UUID.upper(), "gpu-00000000", "1,0,1", "3gpu,1", "-1", "GPU-a,GPU-b"]
    each = "import json, os, sys\nfor value in json.loads(sys.argv.pop()):\n    os.environ['CUDA_VISIBLE_DEVICES'] = value\n"
    env = {"PATH": "/usr/bin:/bin"}
    ours = subprocess.run([sys.executable, "-c", "import sys; sys.argv = sys.argv[1:]; ns = {'__name__': 'x', "
                           "'__file__': sys.argv[0]}; exec(compile(open(sys.argv[0]).read(), sys.argv[0], 'exec'), ns)"
                           "\n" + each + "    print(json.dumps(ns['torch_visible'](sys.argv[1])['parsed']))",
                           str(child), str(source), json.dumps(values)], env=env, capture_output=True, text=True,
                          timeout=120)
    theirs = subprocess.run([sys.executable, "-c", "import torch.cuda as c\n" + each + "    print(json.dumps([str(e) "
                             "for e in c._parse_visible_devices()]))", json.dumps(values)],
                            env={**env, "PYTHONPATH": str(real_torch_cpu())}, capture_output=True, text=True, timeout=300)
    assert ours.returncode == 0 and theirs.returncode == 0, (ours.stderr[-400:], theirs.stderr[-400:])
    said, told = ours.stdout.splitlines(), theirs.stdout.splitlines()
    assert len(said) == len(told) == len(values), (said, told)
    for value, our, their in zip(values, said, told, strict=True):
        assert our == their, (value, our, their)


def test_under_deep_torch_failing_makes_its_count_the_error_seen(machine: Machine, tmp_path: Path) -> None:
    """--deep: torch failing its first GPU steps where its own count said no GPU makes that finding the error, seen
    in torch's words (round eleven: CD415, 'nothing the doctor knows', for torch 2.11's 'min() iterable argument is
    empty'). torch here stops as torch 2.11's _lazy_init did on the H100, with its words."""
    site = torch_with_its_count(machine, tmp_path)
    (site / "torch" / "__init__.py").write_text("min_cc = min(\n    []\n)\n")  # as torch 2.11's _lazy_init stopped
    machine.env["CUDA_VISIBLE_DEVICES"] = UUID.upper()
    report = machine.check_json("--deep")
    made = [f for f in report["findings"] if f["code"] == "CD113"]
    assert made and made[0]["severity"] == "error" and made[0]["evidence"] == "seen", made
    assert "ValueError: min() " in made[0]["proof"], made[0]  # Python 3.12's words, or 3.11's: its own min()
    assert not [f for f in report["findings"] if f["code"] == "CD415"], report["findings"]


def test_under_deep_the_framework_is_imported_as_the_program_would_import_it(machine_process: Machine,
                                                                             tmp_path: Path) -> None:
    """--deep with PYTHONEXECUTABLE naming a removed interpreter: the venv's python3 loses its site-packages, so a
    program's `import torch` fails; the deep child took the venv's folder for another interpreter's and put it back
    on sys.path (torch then imported: --deep said it ran). It is the started program's own folder: left off, as the
    program has it, and torch's failure is seen in its words."""
    machine = machine_process
    _real_venv_torch(machine, tmp_path)
    gpu_machine(machine, tmp_path, gpus=1)
    machine.env["PYTHONEXECUTABLE"] = REMOVED
    machine.env["PYTHONPATH"] = os.pathsep.join([machine.env["PYTHONPATH"], *[p for p in sys.path if "site-packages"
                                                                               in p]])
    report = machine.check_json("--deep")
    [torch] = [f for f in report["frameworks"] if f["name"] == "torch"]
    assert "No module named 'torch'" in str(torch["details"]["deep"].get("error")), torch["details"]["deep"]
    errors = [f for f in report["findings"] if f["severity"] == "error"]
    assert errors and all(f["subject"] == "PYTHONEXECUTABLE" for f in errors), errors
    assert errors[0]["evidence"] == "seen" and "No module named" in errors[0]["proof"], errors[0]


def test_a_second_uuid_torch_cannot_match_leaves_torch_fewer_gpus_than_cuda(machine: Machine, tmp_path: Path) -> None:
    """Two GPUs, the second UUID in capitals: CUDA sees both, torch's own count stops at one (its parse stops at the
    first entry it cannot match): CD114 for torch, a warning read from its code; the plan spells both as NVML does."""
    from tests.test_process_env import plan_lines

    torch_with_its_count(machine, tmp_path, gpus=2)
    report = machine.check_json()
    uuids = [gpu["uuid"] for gpu in report["gpus"]]
    assert len(uuids) == 2, uuids
    machine.env["CUDA_VISIBLE_DEVICES"] = f"{uuids[0]},{uuids[1].upper()}"
    report = machine.check_json()
    assert len(report["process"]["visible"]) == 2 and report["process"]["torch_visible"][1] == 1, report["process"]
    [made] = [f for f in report["findings"] if f["code"] == "CD114"]
    assert made["severity"] == "warning" and "torch.cuda.device_count() is 1" in made["detail"], made
    assert f"export CUDA_VISIBLE_DEVICES={uuids[0]},{uuids[1]}" in plan_lines(machine)
