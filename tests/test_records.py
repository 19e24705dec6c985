"""cudnn_doctor/records.py keeps dataclasses' meaning for what the doctor uses: each answer here is held to
what `dataclasses` gives the same class."""

from __future__ import annotations

import dataclasses
import subprocess
import sys

import pytest

from cudnn_doctor import records


def _pair(frozen: bool):  # type: ignore[no-untyped-def]
    """The same class made by both: three kinds of field, one out of repr and ==."""

    def body() -> dict[str, object]:
        return {"__annotations__": {"name": "str", "count": "int", "tags": "list[str]", "note": "str"},
                "count": 0}

    ours_ns = body()
    ours_ns["tags"] = records.field(default_factory=list)
    ours_ns["note"] = records.field(default="", repr=False, compare=False)
    theirs_ns = body()
    theirs_ns["tags"] = dataclasses.field(default_factory=list)
    theirs_ns["note"] = dataclasses.field(default="", repr=False, compare=False)
    ours = records.record(type("Item", (), ours_ns), frozen=frozen)
    theirs = dataclasses.dataclass(frozen=frozen)(type("Item", (), theirs_ns))
    return ours, theirs


@pytest.mark.parametrize("frozen", [True, False])
def test_a_record_answers_as_the_same_dataclass(frozen: bool) -> None:
    ours, theirs = _pair(frozen)
    for args, kwargs in [(("a",), {}), (("a", 2), {}), ((), {"name": "b", "tags": ["x"]}),
                         (("a", 2, ["t"], "n"), {}), (("a",), {"note": "other"})]:
        mine, reference = ours(*args, **kwargs), theirs(*args, **kwargs)
        assert repr(mine) == repr(reference)
        assert records.asdict(mine) == dataclasses.asdict(reference)
        assert [f.name for f in records.fields(mine)] == [f.name for f in dataclasses.fields(reference)]
        again = ours(*args, **kwargs)
        assert (mine == again) is (reference == theirs(*args, **kwargs)) is True
        assert mine != ours("other")
        assert mine.__eq__(reference) is NotImplemented  # another class is never equal
        changed = records.replace(mine, count=7)
        assert changed.count == dataclasses.replace(reference, count=7).count == 7
        assert changed.name == mine.name and changed.tags == mine.tags
    assert ours("a").tags is not ours("a").tags  # a factory's value per instance
    assert ours("a", note="x") == ours("a", note="y")  # compare=False
    if frozen:
        assert hash(ours("a", 1, ())) == hash(ours("a", 1, ())) == hash(theirs("a", 1, ()))
        assert {ours("a", 1, ()), ours("a", 1, ())} == {ours("a", 1, ())}  # type: ignore[arg-type]
    else:
        with pytest.raises(TypeError):
            hash(ours("a"))
        with pytest.raises(TypeError):
            hash(theirs("a"))


def test_frozen_records_refuse_assignment_as_dataclasses_do() -> None:
    ours, _ = _pair(True)
    item = ours("a")
    with pytest.raises(AttributeError, match="cannot assign to field 'name'"):
        item.name = "b"
    with pytest.raises(records.FrozenInstanceError):
        del item.name
    mutable, _ = _pair(False)
    item = mutable("a")
    item.count = 3
    assert item.count == 3


@pytest.mark.parametrize(("args", "kwargs", "message"), [
    ((), {}, "missing 1 required positional argument: 'name'"),
    (("a", 1, [], "n", "extra"), {}, "positional arguments but 6 were given"),
    (("a",), {"name": "b"}, "got multiple values for argument 'name'"),
    (("a",), {"colour": "red"}, "got an unexpected keyword argument 'colour'"),
])
def test_wrong_arguments_fail_as_a_dataclass_fails(args: tuple[object, ...], kwargs: dict[str, object],
                                                   message: str) -> None:
    for cls in _pair(True):
        with pytest.raises(TypeError, match=message):
            cls(*args, **kwargs)


def test_what_a_record_cannot_be_is_refused_when_the_class_is_made() -> None:
    with pytest.raises(ValueError, match="mutable default"):
        records.record(type("Bad", (), {"__annotations__": {"items": "list[str]"}, "items": []}))
    with pytest.raises(TypeError, match="non-default argument 'b' follows default argument"):
        records.record(type("Bad", (), {"__annotations__": {"a": "int", "b": "int"}, "a": 0}))
    base = records.record(type("Base", (), {"__annotations__": {"a": "int"}}))
    with pytest.raises(TypeError, match="cannot inherit"):
        records.record(type("Child", (base,), {"__annotations__": {"b": "int"}}))
    with pytest.raises(TypeError, match="ClassVar"):
        records.record(type("Bad", (), {"__annotations__": {"a": "ClassVar[int]"}}))


def test_check_imports_neither_dataclasses_nor_makes_source() -> None:
    """The point of records: check's path makes its classes without `exec` and without `dataclasses`."""
    code = ("import builtins, sys\n"
            "calls = []\n"
            "real = builtins.exec\n"
            "def counting(*args, **kwargs):\n"
            "    if isinstance(args[0], str):  # source text, not a module's code object\n"
            "        calls.append(sys._getframe(1).f_code.co_filename)\n"
            "    return real(*args, **kwargs)\n"
            "builtins.exec = counting\n"
            "import cudnn_doctor.model, cudnn_doctor.commands.check, cudnn_doctor.plan.planner\n"
            "import cudnn_doctor.rules, cudnn_doctor.knowledge.frameworks, cudnn_doctor.knowledge.query\n"
            "print(sorted(set(calls)), 'dataclasses' in sys.modules)\n")
    shown = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert shown == "[] False"
