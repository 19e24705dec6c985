"""`record`: the standard library's dataclass, with one __repr__, __eq__ and __hash__ shared by every class instead of
two or three methods generated for each (the package's records and its tables of knowledge alike). Imports nothing of
the package: the modules loaded before NVML's child starts (child.py's requests and answers, probes/context.py's
search context, library_jobs' Job) use it as model.py's records do."""

from __future__ import annotations

import dataclasses
from dataclasses import fields
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # what record makes is a dataclass, for the type checker too
    from dataclasses import dataclass as record
else:
    def record(cls=None, /, *, frozen=False):
        """dataclasses.dataclass, with one __repr__, __eq__ and __hash__ shared by every record instead of two methods
        generated for each: Python before 3.13 compiles each generated method on its own, and that was half of
        model.py's import, on the path of every check (14 of 21 ms on two cores); a plain class 0.30 -> 0.16 ms, a
        frozen one 0.53 -> 0.35 ms (benchmarks/README.md, round nineteen). Same meaning: equal when of one
        class with equal compared fields; a frozen record hashes them, a plain one is unhashable."""

        def made(cls):
            cls = dataclasses.dataclass(cls, repr=False, eq=False, frozen=frozen)
            every = fields(cls)
            cls._record_shown = tuple(f.name for f in every if f.repr)
            cls._record_compared = tuple(f.name for f in every if f.compare)
            cls.__repr__, cls.__eq__ = _record_repr, _record_eq
            cls.__hash__ = _record_hash if frozen else None
            return cls

        return made if cls is None else made(cls)

    def _record_repr(self):
        shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in self._record_shown)
        return f"{type(self).__qualname__}({shown})"

    def _record_eq(self, other):
        if other.__class__ is not self.__class__:
            return NotImplemented
        return tuple(getattr(self, name) for name in self._record_compared) == \
            tuple(getattr(other, name) for name in self._record_compared)

    def _record_hash(self):
        return hash(tuple(getattr(self, name) for name in self._record_compared))
