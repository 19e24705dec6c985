"""`record` (records.py) means what the standard library's dataclass means, and every class a check makes on its path is
one: each generated method is compiled on its own on Python 3.11, so a dataclass's own __repr__ and __eq__ cost every
check's start (benchmarks/README.md, round nineteen)."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys

import pytest

from cudnn_doctor.records import record
from tests.conftest import Machine


def pairs() -> list[tuple[type, type]]:
    """The same class made by dataclass and by record, plain and frozen."""
    made = []
    for frozen in (False, True):
        def body() -> dict[str, object]:
            return {"__annotations__": {"name": "str", "size": "int", "notes": "list[str]", "hidden": "int"},
                    "size": 0, "notes": dataclasses.field(default_factory=list),
                    "hidden": dataclasses.field(default=0, compare=False, repr=False)}

        made.append((dataclasses.dataclass(frozen=frozen)(type("Item", (), body())),
                     record(frozen=frozen)(type("Item", (), body()))))
    return made


@pytest.mark.parametrize(("standard", "ours"), pairs())
def test_a_record_means_what_a_dataclass_means(standard: type, ours: type) -> None:
    for made in (standard, ours):
        first, same, other = made("a", 1, ["x"], hidden=5), made("a", 1, ["x"], hidden=6), made("a", 2)
        assert first == same and first != other and (first == "a") is False  # `hidden` is not compared
        assert [f.name for f in dataclasses.fields(made)] == ["name", "size", "notes", "hidden"]
        assert dataclasses.replace(first, size=2) == made("a", 2, ["x"])
    assert repr(standard("a", 1, ["x"])) == repr(ours("a", 1, ["x"])) == "Item(name='a', size=1, notes=['x'])"
    if standard.__dataclass_params__.frozen:  # type: ignore[attr-defined]
        assert hash(standard("a", 1, ("x",))) == hash(ours("a", 1, ("x",))) == hash(ours("a", 1, ("x",), hidden=9))
        with pytest.raises(dataclasses.FrozenInstanceError):
            ours("a").size = 3
    else:
        assert standard.__hash__ is None and ours.__hash__ is None  # a plain record is unhashable, as a dataclass


# the dataclasses one `check --json` makes, each with the methods dataclass generated for it (not record's shared ones)
GENERATED = r"""
import dataclasses, json, sys
made = []
process = dataclasses._process_class
def watched(cls, init, repr, eq, *rest):
    if cls.__module__.startswith("cudnn_doctor") and (repr or eq):
        made.append(cls.__module__ + "." + cls.__qualname__)
    return process(cls, init, repr, eq, *rest)
dataclasses._process_class = watched
sys.argv = ["cudnn-doctor", "check", "--json"]
try:
    from cudnn_doctor.entry import main
    main()
finally:
    sys.stderr.write("GENERATED " + json.dumps(made) + "\n")
"""


def test_every_class_a_check_makes_is_a_record(machine: Machine) -> None:
    result = subprocess.run([sys.executable, "-c", GENERATED], capture_output=True, text=True, env=machine.env,
                            cwd=machine.cwd, timeout=120, stdin=subprocess.DEVNULL)
    line = next(x for x in result.stderr.splitlines() if x.startswith("GENERATED "))
    assert json.loads(result.stdout)["schema"] == "cudnn-doctor/report/1"  # the check ran whole
    assert json.loads(line.split(" ", 1)[1]) == []
