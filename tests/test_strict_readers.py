"""Every JSON the doctor prints is read by strict readers (issue 43, round thirteen): jq and JavaScript turn an
integer beyond +-2^53 into another number, a strict parser refuses NaN and Infinity, duplicate keys and unpaired
surrogates. What check, compat, explain and fix print with --json on the tests' hostile machines (paths holding
every class of character, a cuDNN whose version is 2^64 - 1, a framework that answers --deep with NaN, Infinity and
integers of 20 digits) parses under all of those rules; the values the doctor could not carry exactly are strings."""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Machine
from tests.fakes.build import fake_cudnn
from tests.test_ci_formats_hostile import ALL
from tests.test_cli_ci import broken_machine
from tests.test_frameworks import FAKE_TORCH, install_torch, python_env, real_python_sees

EXACT = 2**53  # the largest integer a double holds exactly next to its neighbours: JavaScript's, jq's


def strict_loads(text: str) -> Any:
    """TEXT read as the strictest common reader does: no NaN or Infinity, no duplicate key, no integer a double cannot
    hold, no float that overflows, no unpaired surrogate in a string."""
    def refuse(name: str) -> None:
        raise AssertionError(f"{name} is not JSON")

    def number(text: str) -> int:
        value = int(text)
        assert -EXACT <= value <= EXACT, f"{text} is beyond 2^53: a JavaScript or jq reader gets another number"
        return value

    def real(text: str) -> float:
        value = float(text)
        assert math.isfinite(value), f"{text} overflows a double"
        return value

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        keys = [key for key, _ in items]
        assert len(keys) == len(set(keys)), f"duplicate keys: {sorted(k for k in keys if keys.count(k) > 1)}"
        for key, value in items:
            key.encode("utf-8")
            if isinstance(value, str):
                value.encode("utf-8")  # an unpaired \udcNN escape fails here
            elif isinstance(value, list):
                for item in value:
                    if isinstance(item, str):
                        item.encode("utf-8")
        return dict(items)

    read = json.loads(text, parse_constant=refuse, parse_int=number, parse_float=real, object_pairs_hook=pairs)
    if isinstance(read, str):
        read.encode("utf-8")
    return read


def hostile_torch(machine: Machine, tmp_path: Path) -> None:
    """A torch whose answers under --deep are numbers no strict reader keeps: NaN, Infinity, 2^64 + 1."""
    site = python_env(machine, tmp_path)
    install_torch(site)
    odd = FAKE_TORCH.replace('__version__ = "2.5.1+cu124"', '__version__ = float("inf")') \
        .replace('cuda = "12.4"', 'cuda = float("nan")') \
        .replace("return int(_cudnn.cudnnGetVersion())", "return 2**64 + 1") \
        .replace("return 0\n", "return -(2**70)\n")
    (site / "torch" / "__init__.py").write_text(odd)
    real_python_sees(site, tmp_path)


def test_deep_answers_beyond_what_json_readers_keep_come_out_as_strings(machine_in_process: Machine,
                                                                       tmp_path: Path) -> None:
    machine = machine_in_process
    hostile_torch(machine, tmp_path)
    result = machine.run("check", "--deep", "--json")
    assert "Traceback" not in result.stderr, result.stderr
    report = strict_loads(result.stdout)
    [torch] = report["frameworks"]
    deep = torch["details"]["deep"]
    assert deep["cudnn_version"] == str(2**64 + 1), deep  # the number itself, as text
    assert deep["cuda"] == "NaN" and deep["version"] == "Infinity", deep
    assert report["summary"]["exit_code"] == result.exit_code != 3


def hostile_paths(machine: Machine, tmp_path: Path) -> None:
    broken_machine(machine)
    machine.env["CUDA_HOME"] = f"{tmp_path}/cuda{ALL}\tend"
    machine.env["CUDNN_PATH"] = f"{tmp_path}/cudnn{ALL}" + os.fsdecode(b"\x80\xff")


def huge_cudnn(machine: Machine, tmp_path: Path) -> None:
    """A libcudnn whose cudnnGetVersion answers 2^64 - 1 (size_t's largest) and whose cudart is 2^32 - 1."""
    machine.add_library_path(fake_cudnn(tmp_path / "huge", version=2**64 - 1, cudart=2**32 - 1).parent)


MACHINES = {"hostile paths": hostile_paths, "huge cuDNN": huge_cudnn, "torch answering NaN": hostile_torch}
COMMANDS = {
    "check": ("check", "--json"),
    "check -v": ("check", "--json", "-v", "--require", "cudnn>=99999999999999999999"),
    "fix": ("fix", "--json"),
    "compat": ("compat", "torch==2.5.1", "--cuda", "12.4", "--cudnn", "9.1", "--driver", "99999999999999999999.1",
               "--json"),
    "explain": ("explain", "--json", "CUDNN_STATUS_NOT_SUPPORTED cudnn 99999999999999999999.0 NaN Infinity "
                "cuda 1e999 driver 18446744073709551617" + ALL),
}


@pytest.mark.parametrize("label", list(COMMANDS))
@pytest.mark.parametrize("name", list(MACHINES))
def test_every_json_output_on_hostile_machines_parses_strictly(machine_in_process: Machine, tmp_path: Path, name: str,
                                                               label: str) -> None:
    machine = machine_in_process
    MACHINES[name](machine, tmp_path)
    args = COMMANDS[label]
    if name == "torch answering NaN" and label in ("check", "check -v", "fix"):
        args = (*args, "--deep")
    result = machine.run(*args)
    assert "Traceback" not in result.stderr and result.exit_code != 3, (label, result.stderr)
    data = strict_loads(result.stdout)
    said = data.get("exit_code", data.get("summary", {}).get("exit_code"))
    assert said in (None, result.exit_code), (said, result.exit_code, result.stdout[:2000])


def test_json_text_writes_what_no_strict_reader_takes_as_digits_or_null() -> None:
    """The one writer of every --json document: a float that is no number (a bench's rate over no time) is null, an
    integer beyond 2^53 its digits, a bool still a bool; json.dumps(allow_nan=False) never raises on it."""
    from cudnn_doctor.render.json_out import json_text

    text = json_text({"nan": float("nan"), "rates": [float("inf"), -float("inf"), 1.5], "big": 2**64 + 1,
                      "small": -(2**53), "below": -(2**53) - 1, "yes": True, "nested": {"n": (2**63,)}})
    assert strict_loads(text) == {"nan": None, "rates": [None, None, 1.5], "big": str(2**64 + 1), "small": -(2**53),
                                  "below": str(-(2**53) - 1), "yes": True, "nested": {"n": [str(2**63)]}}


def test_the_json_written_without_the_json_module_is_strict_json() -> None:
    """entry._json_string, the one JSON written when a process limit leaves no module to load: a character beyond
    U+FFFF was written \\u1f600 (five digits: JSON reads U+1F60 and a '0'), a path's byte that is not UTF-8 as an
    unpaired \\udcff that a strict reader refuses."""
    from cudnn_doctor.entry import _json_string

    text = "ulimit -v in /home/\U0001f600/" + os.fsdecode(b"\xff") + '"\\\n'
    written = _json_string(text)
    try:
        read = strict_loads(written)
    except (AssertionError, ValueError) as error:  # said in ASCII: a lone surrogate cannot cross to pytest's workers
        raise AssertionError(ascii((written, str(error)))) from None
    if read != "ulimit -v in /home/\U0001f600/\\xff\"\\\n":
        raise AssertionError(ascii(read))
