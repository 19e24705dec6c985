"""The JSON Schema keywords compat/schema/ uses (draft 2020-12), checked in plain Python: the doctor's own data
is validated once where it is parsed (knowledge/data.py), without a validator library on every user's machine.

A keyword this module does not know is an error of the schema, never silently passed: tests/test_damaged_data.py
holds that every keyword of compat/schema/ is known, and that this agrees with jsonschema on damaged data.
"""

from __future__ import annotations

import re
from typing import Any

ANNOTATIONS = frozenset({"$schema", "$id", "$comment", "title", "description", "format", "examples", "default",
                         "$defs", "definitions", "deprecated", "readOnly", "writeOnly"})
KNOWN = ANNOTATIONS | {"$ref", "type", "enum", "const", "properties", "required", "additionalProperties",
                       "patternProperties", "dependentRequired", "items", "minItems", "maxItems", "uniqueItems",
                       "minLength", "maxLength", "pattern", "minimum", "maximum", "exclusiveMinimum",
                       "exclusiveMaximum", "allOf", "anyOf", "oneOf", "not", "if", "then", "else"}


class SchemaMismatch(Exception):
    """Where the data breaks its schema: the path within it (`build[3].cudnn`) and what is wrong, in words."""


_TYPES: dict[str, Any] = {"object": dict, "array": list, "string": str, "boolean": bool, "null": type(None)}


def _is(value: Any, kind: str) -> bool:
    if kind == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if kind == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    wanted = _TYPES.get(kind)
    if wanted is None:
        raise SchemaMismatch(f"the schema names an unknown type {kind!r}")
    return isinstance(value, wanted)


def _where(path: str) -> str:
    return path or "the top level"


class _Checker:
    def __init__(self, root: dict[str, Any]) -> None:
        self.root = root
        self.patterns: dict[str, re.Pattern[str]] = {}

    def pattern(self, text: str) -> re.Pattern[str]:
        compiled = self.patterns.get(text)
        if compiled is None:
            compiled = self.patterns[text] = re.compile(text)
        return compiled

    def resolve(self, ref: str) -> Any:
        if not ref.startswith("#"):
            raise SchemaMismatch(f"the schema refers outside itself ({ref})")
        node: Any = self.root
        for part in [p for p in ref[1:].split("/") if p]:
            if not isinstance(node, dict) or part not in node:
                raise SchemaMismatch(f"the schema refers to {ref}, which it does not hold")
            node = node[part]
        return node

    def valid(self, value: Any, schema: Any, path: str) -> bool:
        try:
            self.check(value, schema, path)
        except SchemaMismatch:
            return False
        return True

    def check(self, value: Any, schema: Any, path: str) -> None:  # noqa: C901 - one keyword a branch
        if schema is True:
            return
        if schema is False:
            raise SchemaMismatch(f"{_where(path)}: not allowed here")
        if not isinstance(schema, dict):
            raise SchemaMismatch(f"the schema at {_where(path)} is not an object")
        unknown = set(schema) - KNOWN
        if unknown:
            raise SchemaMismatch(f"the schema uses keywords this reader does not know: {', '.join(sorted(unknown))}")
        if "$ref" in schema:
            self.check(value, self.resolve(str(schema["$ref"])), path)
        kinds = schema.get("type")
        if kinds is not None:
            names = [kinds] if isinstance(kinds, str) else list(kinds)
            if not any(_is(value, kind) for kind in names):
                raise SchemaMismatch(f"{_where(path)}: {type(value).__name__} where {' or '.join(names)} is expected")
        if "enum" in schema and not any(_same(value, one) for one in schema["enum"]):
            raise SchemaMismatch(f"{_where(path)}: {value!r} is not one of {schema['enum']!r}")
        if "const" in schema and not _same(value, schema["const"]):
            raise SchemaMismatch(f"{_where(path)}: {value!r} where {schema['const']!r} is expected")
        if isinstance(value, dict):
            self.check_object(value, schema, path)
        elif isinstance(value, list):
            self.check_array(value, schema, path)
        elif isinstance(value, str):
            if len(value) < schema.get("minLength", 0) or len(value) > schema.get("maxLength", len(value)):
                raise SchemaMismatch(f"{_where(path)}: a string of {len(value)} characters is out of its bounds")
            if "pattern" in schema and not self.pattern(str(schema["pattern"])).search(value):
                raise SchemaMismatch(f"{_where(path)}: {value[:80]!r} does not match {schema['pattern']!r}")
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            self.check_number(value, schema, path)
        for part in schema.get("allOf", ()):
            self.check(value, part, path)
        if "anyOf" in schema and not any(self.valid(value, part, path) for part in schema["anyOf"]):
            raise SchemaMismatch(f"{_where(path)}: matches none of the forms it may take")
        if "oneOf" in schema and sum(self.valid(value, part, path) for part in schema["oneOf"]) != 1:
            raise SchemaMismatch(f"{_where(path)}: matches not exactly one of the forms it may take")
        if "not" in schema and self.valid(value, schema["not"], path):
            raise SchemaMismatch(f"{_where(path)}: takes a form it may not")
        if "if" in schema:
            branch = schema.get("then") if self.valid(value, schema["if"], path) else schema.get("else")
            if branch is not None:
                self.check(value, branch, path)

    def check_object(self, value: dict[str, Any], schema: dict[str, Any], path: str) -> None:
        for key in schema.get("required", ()):
            if key not in value:
                raise SchemaMismatch(f"{_where(path)}: the required key {key!r} is missing")
        for key, needs in schema.get("dependentRequired", {}).items():
            if key in value:
                for other in needs:
                    if other not in value:
                        raise SchemaMismatch(f"{_where(path)}: {key!r} needs {other!r}, which is missing")
        properties = schema.get("properties", {})
        patterns = schema.get("patternProperties", {})
        extra = schema.get("additionalProperties", True)
        for key, item in value.items():
            inner = f"{path}.{key}" if path else str(key)
            matched = False
            if key in properties:
                matched = True
                self.check(item, properties[key], inner)
            for text, part in patterns.items():
                if self.pattern(text).search(key):
                    matched = True
                    self.check(item, part, inner)
            if not matched and extra is not True:
                if extra is False:
                    raise SchemaMismatch(f"{_where(path)}: the key {key!r} is not one it takes")
                self.check(item, extra, inner)

    def check_array(self, value: list[Any], schema: dict[str, Any], path: str) -> None:
        if len(value) < schema.get("minItems", 0) or len(value) > schema.get("maxItems", len(value)):
            raise SchemaMismatch(f"{_where(path)}: {len(value)} items is out of its bounds")
        if "items" in schema:
            for index, item in enumerate(value):
                self.check(item, schema["items"], f"{path}[{index}]")
        if schema.get("uniqueItems"):
            seen: list[Any] = []
            for item in value:
                if any(_same(item, other) for other in seen):
                    raise SchemaMismatch(f"{_where(path)}: {item!r} is there twice")
                seen.append(item)

    def check_number(self, value: float, schema: dict[str, Any], path: str) -> None:
        bounds = (("minimum", lambda b: value >= b), ("maximum", lambda b: value <= b),
                  ("exclusiveMinimum", lambda b: value > b), ("exclusiveMaximum", lambda b: value < b))
        for keyword, holds in bounds:
            if keyword in schema and not holds(schema[keyword]):
                raise SchemaMismatch(f"{_where(path)}: {value!r} breaks its {keyword} {schema[keyword]!r}")


def _same(value: Any, other: Any) -> bool:
    """JSON's equality: 1 is not true, 1 is 1.0."""
    if isinstance(value, bool) or isinstance(other, bool):
        return isinstance(value, bool) and isinstance(other, bool) and value == other
    return bool(value == other)


def check(value: Any, schema: dict[str, Any]) -> None:
    """Raise SchemaMismatch (the first place VALUE breaks SCHEMA, in words) unless VALUE is valid. A schema that is
    itself damaged (a keyword of the wrong type, a pattern that does not compile) is a SchemaMismatch that says so."""
    try:
        _Checker(schema).check(value, schema, "")
    except (TypeError, ValueError, KeyError, AttributeError, IndexError, re.error) as error:
        raise SchemaMismatch(f"the schema is not one this reader can hold data to ({type(error).__name__}: "
                             f"{str(error)[:200]})") from None
