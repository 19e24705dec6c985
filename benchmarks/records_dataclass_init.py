"""records.py as it was before round twenty-one's shared __init__ (s25, 1ffde42 and 6c759cc): dataclass generates each
record's __init__ (and a frozen one's __setattr__/__delattr__), the __repr__, __eq__ and __hash__ stay shared. Not
imported by the package: benchmarks/gpu_speed_s26.sh copies a tree and puts this in its records.py, to time what the
shared __init__ saves on the device machine (round twenty-two, s26)."""

from __future__ import annotations

import dataclasses
from dataclasses import fields


def record(cls=None, /, *, frozen=False):  # type: ignore[no-untyped-def]
    def made(cls):  # type: ignore[no-untyped-def]
        cls = dataclasses.dataclass(cls, repr=False, eq=False, frozen=frozen)
        every = fields(cls)
        cls._record_shown = tuple(f.name for f in every if f.repr)
        cls._record_compared = tuple(f.name for f in every if f.compare)
        cls.__repr__, cls.__eq__ = _record_repr, _record_eq
        cls.__hash__ = _record_hash if frozen else None
        return cls

    return made if cls is None else made(cls)


def _record_repr(self):  # type: ignore[no-untyped-def]
    shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in self._record_shown)
    return f"{type(self).__qualname__}({shown})"


def _record_eq(self, other):  # type: ignore[no-untyped-def]
    if other.__class__ is not self.__class__:
        return NotImplemented
    return tuple(getattr(self, name) for name in self._record_compared) == \
        tuple(getattr(other, name) for name in self._record_compared)


def _record_hash(self):  # type: ignore[no-untyped-def]
    return hash(tuple(getattr(self, name) for name in self._record_compared))
