"""The doctor's records: what `@dataclass` gives its data (an `__init__` by field, a repr, equality, a hash
when frozen, `replace`, `fields`, `asdict`), made without generating source.

Why not `dataclasses`: on Python 3.10-3.12 each class it makes `exec`s one generated function per method
(six for a frozen class), 0.3-0.5 ms a class, and the module imports `inspect` (and `ast`, `dis`,
`tokenize`) to write docstrings. `check` makes about forty records: 17 ms, plus 5 ms of imports, out of
a command that should cost little more than its imports (benchmarks/README.md, issue 25). Here every
method is one function written once, in this file, that reads the class's field table: bytecode cached
like any other, 10-20 us a class.

The subset the doctor uses, with dataclasses' meaning: fields from the class's own annotations in order;
defaults, `field(default=..., default_factory=..., repr=False, compare=False)`; `frozen=True` (assigning
or deleting a field raises FrozenInstanceError, an AttributeError; equal records hash alike); a mutable
class is unhashable. No inheritance between records, no `__post_init__`, no ClassVar fields: `record`
refuses a class that would need them. Type checkers read `record` as a dataclass (dataclass_transform).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from typing_extensions import dataclass_transform
elif sys.version_info >= (3, 11):
    from typing import dataclass_transform
else:  # Python 3.10: the marker is for type checkers only
    def dataclass_transform(**_: Any) -> Callable[[Any], Any]:
        return lambda decorator: decorator

__all__ = ["FrozenInstanceError", "Field", "asdict", "field", "fields", "is_record", "record", "replace"]

T = TypeVar("T")
MISSING: Any = type("MISSING", (), {"__repr__": lambda self: "MISSING"})()
FIELDS = "__record_fields__"  # the class's fields, in order: a tuple of Field
MUTABLE_DEFAULTS = (list, dict, set)


class FrozenInstanceError(AttributeError):
    """A field of a frozen record was assigned or deleted."""


class Field:
    """One field of a record: its name, its default or default factory, and whether repr and == read it."""

    __slots__ = ("compare", "default", "default_factory", "name", "repr")

    def __init__(self, default: Any = MISSING, default_factory: Any = MISSING, repr: bool = True,  # noqa: A002
                 compare: bool = True) -> None:
        if default is not MISSING and default_factory is not MISSING:
            raise ValueError("cannot specify both default and default_factory")
        self.name = ""
        self.default = default
        self.default_factory = default_factory
        self.repr = repr
        self.compare = compare

    def __repr__(self) -> str:
        return (f"Field(name={self.name!r}, default={self.default!r}, default_factory={self.default_factory!r}, "
                f"repr={self.repr}, compare={self.compare})")


def field(*, default: Any = MISSING, default_factory: Callable[[], Any] | Any = MISSING, repr: bool = True,  # noqa: A002
          compare: bool = True) -> Any:
    """A field's options, as dataclasses.field takes them."""
    return Field(default, default_factory, repr, compare)


@dataclass_transform(eq_default=True, field_specifiers=(field, Field))
def record(cls: type[T] | None = None, /, *, frozen: bool = False) -> Any:
    """Make CLS a record: `@record` or `@record(frozen=True)`."""
    if cls is None:
        return lambda klass: _make(klass, frozen)
    return _make(cls, frozen)


def _make(cls: type[T], frozen: bool) -> type[T]:
    if any(getattr(base, FIELDS, None) is not None for base in cls.__mro__[1:]):
        raise TypeError(f"{cls.__name__}: a record cannot inherit from another record")
    if "__post_init__" in cls.__dict__:
        raise TypeError(f"{cls.__name__}: records have no __post_init__")
    made: list[Field] = []
    for name, annotation in cls.__dict__.get("__annotations__", {}).items():
        if "ClassVar" in str(annotation) or "InitVar" in str(annotation):
            raise TypeError(f"{cls.__name__}.{name}: records have no ClassVar or InitVar fields")
        value = cls.__dict__.get(name, MISSING)
        one = value if isinstance(value, Field) else Field(default=value)
        one.name = name
        if isinstance(one.default, MUTABLE_DEFAULTS):
            raise ValueError(f"mutable default {type(one.default)} for field {name} is not allowed: "
                             "use default_factory")
        if one.default is MISSING:
            if isinstance(value, Field):
                delattr(cls, name)  # no class attribute: a missing argument is an error, not the Field
        else:
            setattr(cls, name, one.default)
        if made and one.default is MISSING and one.default_factory is MISSING and _has_default(made[-1]):
            raise TypeError(f"non-default argument {name!r} follows default argument")
        made.append(one)
    table = tuple(made)
    setattr(cls, FIELDS, table)
    cls.__init__ = _init  # type: ignore[assignment,misc]
    cls.__repr__ = _repr  # type: ignore[assignment,method-assign]
    cls.__eq__ = _eq  # type: ignore[assignment,method-assign]
    if frozen:
        cls.__setattr__ = _frozen_setattr  # type: ignore[assignment,method-assign]
        cls.__delattr__ = _frozen_delattr  # type: ignore[assignment,method-assign]
        cls.__hash__ = _hash  # type: ignore[assignment,method-assign]
    else:
        cls.__hash__ = None  # type: ignore[assignment]  # equal by value and mutable: unhashable
    cls.__match_args__ = tuple(one.name for one in table)  # type: ignore[attr-defined,misc]
    return cls


def _has_default(one: Field) -> bool:
    return one.default is not MISSING or one.default_factory is not MISSING


def _init(self: Any, *args: Any, **kwargs: Any) -> None:
    table: tuple[Field, ...] = getattr(type(self), FIELDS)
    name_of = type(self).__name__
    if len(args) > len(table):
        raise TypeError(f"{name_of}.__init__() takes at most {len(table) + 1} positional arguments but "
                        f"{len(args) + 1} were given")
    values = self.__dict__
    for one, value in zip(table, args):  # noqa: B905 - fewer arguments than fields is allowed
        values[one.name] = value
    if kwargs:
        for name, value in kwargs.items():
            if name in values:
                raise TypeError(f"{name_of}.__init__() got multiple values for argument {name!r}")
            values[name] = value
    for one in table[len(args):]:
        if one.name in values:
            continue
        if one.default is not MISSING:
            values[one.name] = one.default
        elif one.default_factory is not MISSING:
            values[one.name] = one.default_factory()
        else:
            raise TypeError(f"{name_of}.__init__() missing 1 required positional argument: {one.name!r}")
    if kwargs and len(values) > len(table):
        known = {one.name for one in table}
        unknown = next(name for name in kwargs if name not in known)
        for name in kwargs:
            values.pop(name, None)
        raise TypeError(f"{name_of}.__init__() got an unexpected keyword argument {unknown!r}")


def _repr(self: Any) -> str:
    shown = ", ".join(f"{one.name}={getattr(self, one.name)!r}" for one in getattr(type(self), FIELDS) if one.repr)
    return f"{type(self).__qualname__}({shown})"


def _compared(self: Any) -> tuple[Any, ...]:
    return tuple(getattr(self, one.name) for one in getattr(type(self), FIELDS) if one.compare)


def _eq(self: Any, other: Any) -> Any:
    if other.__class__ is not self.__class__:
        return NotImplemented
    return _compared(self) == _compared(other)


def _hash(self: Any) -> int:
    return hash(_compared(self))


def _frozen_setattr(self: Any, name: str, value: Any) -> None:
    raise FrozenInstanceError(f"cannot assign to field {name!r}")


def _frozen_delattr(self: Any, name: str) -> None:
    raise FrozenInstanceError(f"cannot delete field {name!r}")


def is_record(value: Any) -> bool:
    """Whether VALUE is a record or a record class."""
    return getattr(value, FIELDS, None) is not None


def fields(value: Any) -> tuple[Field, ...]:
    """The fields of a record or record class, in order."""
    table = getattr(value, FIELDS, None)
    if table is None:
        raise TypeError("must be called with a record type or instance")
    return table  # type: ignore[no-any-return]


def replace(value: T, /, **changes: Any) -> T:
    """A copy of the record VALUE with CHANGES, made through its __init__ (a wrong name is a TypeError)."""
    for one in fields(value):
        if one.name not in changes:
            changes[one.name] = getattr(value, one.name)
    return type(value)(**changes)


def asdict(value: Any) -> dict[str, Any]:
    """The record as a dict, records, lists, tuples and dicts inside it converted too (as dataclasses.asdict)."""
    if not is_record(value) or isinstance(value, type):
        raise TypeError("asdict() should be called on record instances")
    return _plain(value)  # type: ignore[no-any-return]


def _plain(value: Any) -> Any:
    if value is None or isinstance(value, (str, int, float)):
        return value
    if is_record(value) and not isinstance(value, type):
        return {one.name: _plain(getattr(value, one.name)) for one in fields(value)}
    if isinstance(value, tuple) and hasattr(value, "_fields"):  # a named tuple keeps its type
        return type(value)(*[_plain(item) for item in value])
    if isinstance(value, (list, tuple)):
        return type(value)(_plain(item) for item in value)
    if isinstance(value, dict):
        return type(value)((_plain(key), _plain(item)) for key, item in value.items())
    import copy

    return copy.deepcopy(value)
