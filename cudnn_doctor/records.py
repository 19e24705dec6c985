"""`record`: the standard library's dataclass, with one __init__, __repr__, __eq__ and __hash__ (frozen: one __setattr__
and __delattr__) shared by every class instead of the methods generated for each (the package's records and its tables
of knowledge alike). Imports nothing of the package: the modules loaded before NVML's child starts (child.py's requests
and answers, probes/context.py's search context, library_jobs' Job) use it as model.py's records do."""

from __future__ import annotations

import dataclasses
import sys
from dataclasses import MISSING, fields
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # what record makes is a dataclass, for the type checker too
    from dataclasses import dataclass as record
else:
    def record(cls=None, /, *, frozen=False):
        """dataclasses.dataclass, with one __init__, __repr__, __eq__ and __hash__ (frozen: __setattr__ and
        __delattr__) shared by every record instead of methods generated for each: Python before 3.13 compiles each
        generated method on its own, and that was half of model.py's import, on the path of every check (the
        __init__s 12 ms of a check's main thread on two cores, 66 classes; a frozen one's __setattr__ and __delattr__
        4 ms, 18 classes; benchmarks/README.md, rounds nineteen and twenty-one). Same meaning: made from the same
        arguments, positional and by name, defaults and default factories as dataclass's __init__ (the same
        TypeError where they do not fit); equal when of one class with equal compared fields; a frozen record hashes
        them, refuses to set or delete a field (FrozenInstanceError) and says it is frozen (__dataclass_params__), a
        plain one is unhashable. A class with its own __init__ keeps it, as with dataclass."""

        def made(cls):
            own_init = "__init__" in cls.__dict__
            generated = not own_init and _keyword_or_init_only(cls)  # dataclass's own __init__ where ours differs
            for name in ("__setattr__", "__delattr__") if frozen else ():
                if name in cls.__dict__:  # as dataclass(frozen=True) refuses it
                    raise TypeError(f"Cannot overwrite attribute {name} in class {cls.__name__}")
            # (made frozen by dataclass itself only from frozen bases, which it refuses to extend otherwise: rare, and
            # the shared methods replace its own below)
            # (and where its __init__ is generated, which sets a frozen class's fields through object.__setattr__)
            cls = dataclasses.dataclass(cls, init=generated, repr=False, eq=False,
                                        frozen=_inherits_as_dataclass_does(cls, frozen) or (frozen and generated))
            if frozen:  # dataclass(frozen=True)'s own __setattr__ and __delattr__ are two more methods compiled a class
                cls.__dataclass_params__.frozen = True
                cls._record_frozen = (cls, frozenset(f.name for f in fields(cls)))
                cls.__setattr__, cls.__delattr__ = _record_setattr, _record_delattr
            every = fields(cls)
            cls._record_shown = tuple(f.name for f in every if f.repr)
            cls._record_compared = tuple(f.name for f in every if f.compare)
            cls.__repr__, cls.__eq__ = _record_repr, _record_eq
            cls.__hash__ = _record_hash if frozen else None
            if not own_init and not generated:
                cls._record_made = _InitPlan(cls, every, frozen)
                cls.__init__ = _record_init
            return cls

        return made if cls is None else made(cls)

    def _keyword_or_init_only(cls):
        """Whether CLS (or a record it extends) has a keyword-only field (KW_ONLY, field(kw_only=True)) or an InitVar:
        the shared __init__ takes every field by position and sets each as an attribute, where dataclass's refuses a
        keyword-only one given by position and hands an InitVar to __post_init__ unset; such a class keeps the
        __init__ dataclass generates for it (none of the package's records has one)."""
        annotations = cls.__dict__.get("__annotations__")
        if annotations is None:  # Python 3.14 without `from __future__ import annotations`: evaluated lazily
            try:
                import annotationlib

                annotations = annotationlib.get_annotations(cls, format=annotationlib.Format.STRING)
            except (ImportError, NameError, AttributeError):
                annotations = {}
        said = "\0".join(value if isinstance(value, str) else "KW_ONLY" if value is dataclasses.KW_ONLY else
                         "InitVar" if isinstance(value, dataclasses.InitVar) else "" for value in annotations.values())
        if "KW_ONLY" in said or "InitVar" in said:
            return True
        field_type = dataclasses.Field
        if any(type(value) is field_type and value.kw_only is True for value in cls.__dict__.values()):
            return True
        initvar = getattr(dataclasses, "_FIELD_INITVAR", None)
        return any(f.kw_only is True or f._field_type is initvar for base in cls.__mro__[1:-1]
                   if "__dataclass_fields__" in base.__dict__ for f in base.__dict__["__dataclass_fields__"].values())

    def _inherits_as_dataclass_does(cls, frozen):
        """dataclass(frozen=True)'s refusal of a frozen class made from plain dataclasses (made here with frozen=False,
        so dataclass's own check passes it): 'none of the bases frozen' before Python 3.12, 'not all of them' since.
        True where a base is frozen: dataclass then refuses a class it makes plain ('cannot inherit non-frozen
        dataclass from a frozen one'), so it is told."""
        bases = [getattr(base, "__dataclass_params__", None) for base in cls.__mro__[-1:0:-1]
                 if getattr(base, "__dataclass_fields__", None) is not None]
        if frozen and bases and not (all if sys.version_info >= (3, 12) else any)(b.frozen for b in bases):
            raise TypeError("cannot inherit frozen dataclass from a non-frozen one")
        return frozen and any(b.frozen for b in bases)  # whether dataclass must be told (a frozen base)

    class _InitPlan:
        """What dataclass's generated __init__ of one class does, as data: its parameters in order, their defaults
        and default factories, the fields it sets that are not parameters, whether it calls __post_init__."""

        __slots__ = ("names", "known", "defaults", "later", "post_init", "qualname", "direct", "frozen")

        def __init__(self, cls, every, frozen):
            self.names = tuple(f.name for f in every if f.init)
            self.known = frozenset(self.names)
            self.defaults = {f.name: (f.default, f.default_factory) for f in every if f.init and
                             (f.default is not MISSING or f.default_factory is not MISSING)}
            # a field outside __init__'s parameters that has a default: set as dataclass's __init__ sets it
            self.later = tuple((f.name, f.default, f.default_factory) for f in every if not f.init and
                               (f.default is not MISSING or f.default_factory is not MISSING))
            self.post_init = hasattr(cls, "__post_init__")
            self.qualname = cls.__qualname__
            self.frozen = frozen
            # the fields go straight into the instance's __dict__, in order, where that is what setting each does:
            # no __slots__, no __setattr__ of the class's own (a frozen dataclass's __init__ passes its own by), no
            # class attribute of a field's name that takes the setting (a data descriptor)
            self.direct = "__slots__" not in cls.__dict__ and (frozen or cls.__setattr__ is object.__setattr__) and \
                not any(hasattr(type(getattr(cls, f.name, None)), "__set__") for f in every)

    def _record_init(self, /, *args, **kwargs):
        plan = self._record_made
        names = plan.names
        if kwargs or len(args) != len(names):
            args = _bound(plan, args, kwargs)
        if plan.direct:
            self.__dict__.update(zip(names, args, strict=True))
        else:
            put = object.__setattr__ if plan.frozen else setattr
            for name, value in zip(names, args, strict=True):
                put(self, name, value)
        for name, default, factory in plan.later:
            (object.__setattr__ if plan.frozen else setattr)(self, name, factory() if default is MISSING else default)
        if plan.post_init:
            self.__post_init__()

    def _bound(plan, args, kwargs):
        """The value of each parameter in order, from ARGS, KWARGS and the defaults, or the TypeError Python raises
        for a call to dataclass's __init__ that does not fit."""
        names, defaults = plan.names, plan.defaults
        if len(args) > len(names):
            least = len(names) - len(defaults)
            takes = f"from {least + 1} to {len(names) + 1}" if least < len(names) else f"{len(names) + 1}"
            raise TypeError(f"{plan.qualname}.__init__() takes {takes} positional arguments but {len(args) + 1} were "
                            "given")
        for name in kwargs:
            if name not in plan.known:
                raise TypeError(f"{plan.qualname}.__init__() got an unexpected keyword argument '{name}'")
        for name in names[:len(args)]:
            if name in kwargs:
                raise TypeError(f"{plan.qualname}.__init__() got multiple values for argument '{name}'")
        rest = names[len(args):]
        missing = [name for name in rest if name not in kwargs and name not in defaults]
        if missing:
            quoted = [repr(name) for name in missing]  # as Python words it: 'a', 'a' and 'b', 'a', 'b', and 'c'
            said = quoted[0] if len(quoted) == 1 else " and ".join(quoted) if len(quoted) == 2 else \
                ", ".join(quoted[:-1]) + ", and " + quoted[-1]
            raise TypeError(f"{plan.qualname}.__init__() missing {len(missing)} required positional "
                            f"argument{'s' if len(missing) > 1 else ''}: {said}")
        values = list(args)
        for name in rest:
            if name in kwargs:
                values.append(kwargs[name])
            else:
                default, factory = defaults[name]
                values.append(factory() if default is MISSING else default)
        return values

    def _record_setattr(self, name, value):
        """dataclass(frozen=True)'s __setattr__: no field of the class set, nothing at all set on the class itself."""
        cls, names = self._record_frozen
        if type(self) is cls or name in names:
            raise dataclasses.FrozenInstanceError(f"cannot assign to field {name!r}")
        super(cls, self).__setattr__(name, value)

    def _record_delattr(self, name):
        cls, names = self._record_frozen
        if type(self) is cls or name in names:
            raise dataclasses.FrozenInstanceError(f"cannot delete field {name!r}")
        super(cls, self).__delattr__(name)

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
