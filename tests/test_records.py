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


# calls to the same class's __init__, made by dataclass and by record: what each makes, or the TypeError it raises
CALLS = [((), {}), (("a",), {}), (("a", 1), {}), (("a", 1, ["x"], 3), {}), ((), {"name": "a", "hidden": 4}),
         (("a",), {"name": "b"}), (("a", 1, ["x"], 3, 4), {}), (("a",), {"other": 1}), ((), {"size": 1, "notes": []}),
         (("a",), {"notes": ["y"]}), ((), {"hidden": 1, "notes": [], "size": 3, "name": "a"})]


@pytest.mark.parametrize(("standard", "ours"), pairs())
def test_a_record_is_made_as_a_dataclass_is(standard: type, ours: type) -> None:
    def made(cls: type, args: tuple[object, ...], kwargs: dict[str, object]) -> tuple[str, object]:
        try:
            return "made", list(vars(cls(*args, **kwargs)).items())  # the fields, in the order they were set
        except TypeError as error:
            return "refused", str(error)

    for args, kwargs in CALLS:
        assert made(ours, args, kwargs) == made(standard, args, kwargs), (args, kwargs)
    first, second = ours("a"), ours("a")
    assert first.notes == [] and first.notes is not second.notes  # a default factory called for each


@pytest.mark.parametrize(("standard", "ours"), pairs())
def test_a_frozen_record_refuses_what_a_frozen_dataclass_refuses(standard: type, ours: type) -> None:
    def tried(made: object, change: str) -> str:
        try:
            if change.startswith("del "):
                delattr(made, change[4:])
            else:
                setattr(made, change, 1)
        except (dataclasses.FrozenInstanceError, AttributeError) as error:
            return f"{type(error).__name__}: {error}"
        return f"done: {vars(made)}"

    frozen = standard.__dataclass_params__.frozen  # type: ignore[attr-defined]
    assert ours.__dataclass_params__.frozen == frozen  # type: ignore[attr-defined]
    # a subclass of its own: only its fields are refused there, as dataclass's methods do (they name the class)
    below = (type("Below", (standard,), {}), type("Below", (ours,), {}))
    for change in ("size", "other", "del size", "del other"):
        assert tried(ours("a"), change) == tried(standard("a"), change), change
        assert tried(below[1]("a"), change) == tried(below[0]("a"), change), change
    with pytest.raises(TypeError, match="Cannot overwrite attribute __setattr__"):
        record(frozen=True)(type("Own", (), {"__annotations__": {"name": "str"}, "__setattr__": object.__setattr__}))


def test_every_record_of_the_package_is_made_as_its_dataclass() -> None:
    """Each record class the package defines, made from the same arguments as a dataclass of the same fields (their
    defaults and factories, their order, inherited ones first): the same fields in the same order."""
    import importlib
    import pkgutil

    import cudnn_doctor

    seen = 0
    for module in pkgutil.walk_packages(cudnn_doctor.__path__, "cudnn_doctor."):
        if module.name.startswith(("cudnn_doctor._", "cudnn_doctor.bench.")) or "._" in module.name:
            continue  # the child scripts run as programs
        loaded = importlib.import_module(module.name)
        for cls in [c for c in vars(loaded).values() if isinstance(c, type) and c.__module__ == module.name and
                    "_record_made" in c.__dict__]:
            every = dataclasses.fields(cls)
            twin = dataclasses.dataclass(frozen=cls.__dataclass_params__.frozen)(type(cls.__name__, (), {  # type: ignore[attr-defined]
                "__annotations__": {f.name: f.type for f in every},
                **{f.name: dataclasses.field(default=f.default, default_factory=f.default_factory, init=f.init)
                   for f in every}}))
            required = [object() for f in every if f.default is dataclasses.MISSING and
                        f.default_factory is dataclasses.MISSING]
            for args in (required, [*required, *(object() for _ in range(len(every) - len(required)))]):
                ours, theirs = cls(*args), twin(*args)
                assert [(k, v if not isinstance(v, (list, dict, set)) else type(v)) for k, v in vars(ours).items()] \
                    == [(k, v if not isinstance(v, (list, dict, set)) else type(v)) for k, v in vars(theirs).items()]
            seen += 1
    assert seen >= 60  # the package's records were found (68 when this was written)
