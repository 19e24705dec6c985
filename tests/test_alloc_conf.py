"""PyTorch's allocator settings (PYTORCH_CUDA_ALLOC_CONF, PYTORCH_ALLOC_CONF, PYTORCH_HIP_ALLOC_CONF) judged as torch's
own parsers read them (issue 45): the verdicts of the common parser's keys are proven against a real CPU build of
torch (its c10 holds that parser in every build), the edge values on both sides of every bound; which variable
each parser reads, by the real torch's own choice among them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from cudnn_doctor.knowledge.environment import c_stod, c_stoull
from cudnn_doctor.rules.process_env import alloc_conf_problems
from tests.conftest import Machine, codes
from tests.real_wheels import real_torch_cpu
from tests.test_frameworks import install_torch, python_env
from tests.test_process_env import check_after, finding, gpu_machine, plan_lines

# values on both sides of each bound of the common parser's keys, and the forms its number readers take or refuse
EDGES = [
    "max_split_size_mb:20", "max_split_size_mb:19", "max_split_size_mb:512MB", "max_split_size_mb:-1",
    "max_split_size_mb:1e3", "max_split_size_mb:abc", "max_split_size_mb:+64", "max_split_size_mb:0x40",
    "max_split_size_mb:99999999999999999999", "max_split_size_mb: 1 28", "max_split_size_mb:[64]",
    "max_non_split_rounding_mb:19", "max_non_split_rounding_mb:20",
    "large_segment_size_mb:10", "large_segment_size_mb:11",
    "garbage_collection_threshold:0", "garbage_collection_threshold:1", "garbage_collection_threshold:0.999",
    "garbage_collection_threshold:0.5abc", "garbage_collection_threshold:nan", "garbage_collection_threshold:inf",
    "garbage_collection_threshold:0x1p-1", "garbage_collection_threshold:.5", "garbage_collection_threshold:5e-1",
    "garbage_collection_threshold:1e-400", "garbage_collection_threshold:x",
    "roundup_power2_divisions:0", "roundup_power2_divisions:1", "roundup_power2_divisions:3",
    "roundup_power2_divisions:4", "roundup_power2_divisions:[64:8,256:4,>:1]", "roundup_power2_divisions:[64:0,>:3]",
    "roundup_power2_divisions:[63:8]", "roundup_power2_divisions:[64:8", "roundup_power2_divisions:[]",
    "roundup_power2_divisions:[0:8]", "roundup_power2_divisions:[1:2,>:0]", "roundup_power2_divisions:[x:2]",
    "expandable_segments:true", "expandable_segments:True", "expandable_segments:False", "expandable_segments: True",
    "pinned_use_background_threads:1", "pinned_use_background_threads:True",
    "foo:1", "foo", "max_split_size_mb", "max_split_size_mb:", "max_split_size_mb:128:x", "backend:nonsense",
    "max_split_size_mb:128,expandable_segments:True,roundup_power2_divisions:[256:2,>:1]",
    # hostile: more digits than Python's int() takes (4,300), leading zeros past it, Unicode digits, an underflow
    "max_split_size_mb:" + "9" * 5000, "max_split_size_mb:" + "0" * 5000 + "64", "max_split_size_mb:\u0661\u0662\u0668",
    "roundup_power2_divisions:[" + "1" * 5000 + ":4]", "garbage_collection_threshold:0." + "0" * 5000 + "5",
]


def test_the_common_parsers_verdicts_are_torchs_own(torch_answers: tuple[dict[str, str], list[str]]) -> None:
    """Every edge value: refused by the rule exactly where the real torch's parser raises, taken where it takes it
    (PYTORCH_HIP_ALLOC_CONF on a CUDA build reaches this parser alone)."""
    verdicts = torch_answers[0]
    ours = {value: alloc_conf_problems(value, None, ("common",)) for value in EDGES}
    wrong = {value: (verdicts[value], ours[value]) for value in EDGES if (verdicts[value] == "ok") != (not ours[value])}
    assert not wrong, wrong
    assert verdicts["max_split_size_mb:20"] == "ok" and "must be >= 20" in verdicts["max_split_size_mb:19"]


CHOICES = [
    ({"PYTORCH_HIP_ALLOC_CONF": "max_split_size_mb:10"}, True),
    ({"PYTORCH_HIP_ALLOC_CONF": "max_split_size_mb:64,backend:foo,zzz:1"}, False),
    ({"PYTORCH_CUDA_ALLOC_CONF": "max_split_size_mb:64", "PYTORCH_HIP_ALLOC_CONF": "max_split_size_mb:10"}, False),
    ({"PYTORCH_ALLOC_CONF": "max_split_size_mb:64", "PYTORCH_HIP_ALLOC_CONF": "max_split_size_mb:10"}, True),
    ({"PYTORCH_ALLOC_CONF": "max_split_size_mb:10", "PYTORCH_CUDA_ALLOC_CONF": "max_split_size_mb:64"}, False),
    ({"PYTORCH_ALLOC_CONF": "max_split_size_mb:64", "PYTORCH_CUDA_ALLOC_CONF": "max_split_size_mb:10"}, True),
]
ALLOC_NAMES = ("PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_HIP_ALLOC_CONF", "PYTORCH_ALLOC_CONF")


@pytest.fixture(scope="module")
def torch_answers() -> tuple[dict[str, str], list[str]]:
    """What the real torch says, from one import of it, each answer in a process of its own forked from it:
    - each value of EDGES given to its common allocator parser (torch._C._accelerator_setAllocatorSettings), one
      after another in one fork: 'ok' or its exception (a process of its own before, one more torch import);
    - of each environment of CHOICES: 'ok' or 'refused ...' (torch reads these variables when its allocator settings
      are first asked for, not at import: the six answers differ, so a read at import would fail the tests), its
      environment set in its fork before the question (one torch import for the six: it was one per environment,
      about 2 CPU s each).
    No fork asks before another has ended, and the parent never asks: each starts from torch as imported."""
    script = ("import json, os, sys, warnings\nwarnings.simplefilter('ignore')\nimport torch\n"
              "sys.stdout.flush()\n"
              "pid = os.fork()\n"
              "if pid == 0:\n"
              "    out = {}\n"
              "    for value in json.loads(sys.argv[2]):\n"
              "        try:\n            torch._C._accelerator_setAllocatorSettings(value)\n            out[value] = 'ok'\n"
              "        except Exception as error:\n            out[value] = type(error).__name__ + ': ' + str(error)[:200]\n"
              "    print(json.dumps(out), flush=True)\n"
              "    os._exit(0)\n"
              "os.waitpid(pid, 0)\n"
              "for env in json.loads(sys.argv[1]):\n"
              "    sys.stdout.flush()\n"
              "    pid = os.fork()\n"
              "    if pid == 0:\n"
              "        for name in " + repr(ALLOC_NAMES) + ":\n"
              "            os.environ.pop(name, None)\n"
              "        os.environ.update(env)\n"
              "        try:\n            torch._C._accelerator_getAllocatorSettings()\n            said = 'ok'\n"
              "        except Exception as error:\n            said = 'refused ' + str(error)\n"
              "        print(json.dumps(said), flush=True)\n"
              "        os._exit(0)\n"
              "    os.waitpid(pid, 0)\n")
    base = {key: value for key, value in os.environ.items() if key not in ALLOC_NAMES}
    child = subprocess.run([sys.executable, "-c", script, json.dumps([env for env, _ in CHOICES]), json.dumps(EDGES)],
                           capture_output=True, text=True, timeout=600, env={**base, "PYTHONPATH": str(real_torch_cpu())})
    said = [json.loads(line) for line in child.stdout.splitlines()]
    assert child.returncode == 0 and len(said) == 1 + len(CHOICES), child.stdout[-2000:] + child.stderr[-1000:]
    assert isinstance(said[0], dict) and set(said[0]) == set(EDGES), said[0]
    return said[0], said[1:]


@pytest.fixture(scope="module")
def torchs_choices(torch_answers: tuple[dict[str, str], list[str]]) -> list[str]:
    return torch_answers[1]


@pytest.mark.parametrize(("env", "refused"), CHOICES)
def test_which_variable_the_common_parser_reads_is_torchs_choice(torchs_choices: list[str], env: dict[str, str],
                                                                 refused: bool) -> None:
    """The data's alloc_parsers (which name each parser takes first) against the real torch reading its
    environment: the common parser reads PYTORCH_CUDA_ALLOC_CONF, else PYTORCH_HIP_ALLOC_CONF, else
    PYTORCH_ALLOC_CONF."""
    said = torchs_choices[CHOICES.index((env, refused))]
    assert said.startswith("refused") == refused, said
    from cudnn_doctor.knowledge.environment import rows
    from cudnn_doctor.model import ProcessView, Report
    from cudnn_doctor.rules.process_env import _alloc_parsers

    report = Report.__new__(Report)
    object.__setattr__(report, "process", ProcessView.__new__(ProcessView))
    object.__setattr__(report.process, "settings", env)
    ours = any(alloc_conf_problems(value, None, tuple(p for p in _alloc_parsers(rows()[name], report) if p == "common"))
               for name, value in env.items())
    assert ours == refused


@pytest.mark.parametrize(("text", "number"), [("512MB", 512), ("-1", 2**64 - 1), ("+7", 7), ("1e3", 1), ("0x40", 0),
                                              ("18446744073709551615", 2**64 - 1), ("18446744073709551616", None),
                                              ("", None), ("MB", None), ("9" * 5000, None), ("-" + "9" * 5000, None),
                                              ("0" * 5000 + "7", 7), ("\u0661\u0662", None), ("\u00b2", None)])
def test_stoull_reads_as_glibc_reads(text: str, number: int | None) -> None:
    assert c_stoull(text)[0] == number


@pytest.mark.parametrize(("text", "number"), [("0.5abc", 0.5), (".5", 0.5), ("5e-1", 0.5), ("0x1p-1", 0.5),
                                              ("1e", 1.0), ("-0", -0.0), ("1e999", None), ("1e-400", None),
                                              ("0e-400", 0.0), ("x", None), ("", None)])
def test_stod_reads_as_glibc_reads(text: str, number: float | None) -> None:
    assert c_stod(text)[0] == number


def test_cuda_keys_bounds_and_unknown_keys() -> None:
    """The CUDA parser's keys, from its source: a power of two from 1 to 128 threads, a fraction in [0, 1]; an unknown
    key refused by it and skipped by the common parser alone."""
    assert alloc_conf_problems("pinned_num_register_threads:128,per_process_memory_fraction:1") == []
    assert len(alloc_conf_problems("pinned_num_register_threads:0,pinned_num_register_threads:256")) == 2
    assert "set it in [0.0, 1.0]" in alloc_conf_problems("per_process_memory_fraction:1.01")[0]
    assert alloc_conf_problems("zzz:1", None, ("common",)) == []
    assert "Unrecognized key 'zzz'" in alloc_conf_problems("zzz:1")[0]
    assert alloc_conf_problems("backend:foo", None, ("common",)) == []


def test_a_newer_torchs_key_its_libraries_do_not_name_is_unrecognized() -> None:
    """requires_name: where the installed torch's libraries were read and do not name the key, torch 2.x's parser
    does not know it; where they name it, it is taken; check_text: a check they do not hold is not made."""
    assert "Unrecognized key 'throw_on_cudamalloc_oom'" in alloc_conf_problems(
        "throw_on_cudamalloc_oom:True", ("backend",))[0]
    assert alloc_conf_problems("throw_on_cudamalloc_oom:True", ("throw_on_cudamalloc_oom",)) == []
    assert alloc_conf_problems("large_segment_size_mb:4", ("large_segment_size_mb",)) == []
    assert alloc_conf_problems("large_segment_size_mb:4", ("large_segment_size_mb", "CachingAllocator option "
                                                           "large_segment_size_mb must be"))


def test_the_hip_name_on_a_cuda_build(machine: Machine, tmp_path: Path) -> None:
    """PYTORCH_HIP_ALLOC_CONF: a CUDA build's common parser reads it (where PYTORCH_CUDA_ALLOC_CONF is unset): a
    max_split_size_mb under 20 is refused, an error whose fix keeps the rest; backend and unknown keys are ignored,
    silently; the edge value 20 is taken."""
    gpu_machine(machine, tmp_path, gpus=1)
    install_torch(python_env(machine, tmp_path))
    machine.env["PYTORCH_HIP_ALLOC_CONF"] = "max_split_size_mb:19,expandable_segments:True,backend:foo,zzz:1"
    refused = finding(machine.check_json(), "CD411")
    assert "must be >= 20, got 19" in refused["detail"] and refused["severity"] == "error"
    lines = plan_lines(machine)
    assert "export PYTORCH_HIP_ALLOC_CONF=expandable_segments:True,backend:foo,zzz:1" in lines, lines
    assert "CD411" not in codes(check_after(machine, lines))
    machine.env["PYTORCH_HIP_ALLOC_CONF"] = "max_split_size_mb:20,backend:foo"
    assert not {"CD411", "CD414"} & codes(machine.check_json())
    machine.env["PYTORCH_CUDA_ALLOC_CONF"] = "max_split_size_mb:64"
    machine.env["PYTORCH_HIP_ALLOC_CONF"] = "max_split_size_mb:10"  # not read: the CUDA name is set
    assert not {"CD411", "CD414"} & codes(machine.check_json())


@pytest.mark.parametrize("value", ["max_split_size_mb:20", "max_split_size_mb:512MB", "max_non_split_rounding_mb:20",
                                   "roundup_power2_divisions:[64:8,256:4,>:1]", "garbage_collection_threshold:.5",
                                   "pinned_num_register_threads:128", "max_split_size _mb:64"])
def test_edge_values_torch_takes_are_silent(machine: Machine, tmp_path: Path, value: str) -> None:
    gpu_machine(machine, tmp_path, gpus=1)
    install_torch(python_env(machine, tmp_path))
    machine.env["PYTORCH_CUDA_ALLOC_CONF"] = value
    assert not {"CD411", "CD414"} & codes(machine.check_json())


@pytest.mark.parametrize("value", ["max_split_size_mb:19", "max_non_split_rounding_mb:10", "roundup_power2_divisions:0",
                                   "roundup_power2_divisions:[63:8]", "garbage_collection_threshold:1",
                                   "pinned_num_register_threads:3", "max_split_size_mb:1e3"])
def test_values_torch_refuses_are_errors_the_fix_cures(machine: Machine, tmp_path: Path, value: str) -> None:
    gpu_machine(machine, tmp_path, gpus=1)
    install_torch(python_env(machine, tmp_path))
    machine.env["PYTORCH_CUDA_ALLOC_CONF"] = value + ",expandable_segments:True"
    assert "CD411" in codes(machine.check_json())
    lines = plan_lines(machine)
    assert "export PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True" in lines, lines
    assert "CD411" not in codes(check_after(machine, lines))


def test_a_newer_check_and_a_newer_key_are_asked_of_the_installed_libraries(machine: Machine, tmp_path: Path) -> None:
    """large_segment_size_mb's floor (a check of newer releases) is made only where the installed torch's library
    holds its message; a newer key (throw_on_cudamalloc_oom) the library does not name is a warning (CD414) whose fix
    leaves it out, never an error."""
    from tests.test_environment_settings import c10_with

    gpu_machine(machine, tmp_path, gpus=1)
    site = python_env(machine, tmp_path)
    install_torch(site)
    c10_with(site, "backend", "large_segment_size_mb")
    machine.env["PYTORCH_CUDA_ALLOC_CONF"] = "large_segment_size_mb:4"
    assert not {"CD411", "CD414"} & codes(machine.check_json())
    c10_with(site, "backend", "large_segment_size_mb", "CachingAllocator option large_segment_size_mb must be > ")
    refused = finding(machine.check_json(), "CD411")
    assert "must be > 10 MB, got 4" in refused["detail"]
    machine.env["PYTORCH_CUDA_ALLOC_CONF"] = "throw_on_cudamalloc_oom:True,large_segment_size_mb:64"
    report = machine.check_json()
    warned = finding(report, "CD414")
    assert warned["severity"] == "warning" and "Unrecognized key 'throw_on_cudamalloc_oom'" in warned["detail"]
    assert "CD411" not in codes(report)
    assert "export PYTORCH_CUDA_ALLOC_CONF=large_segment_size_mb:64" in plan_lines(machine)
