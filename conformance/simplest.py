"""The simplest instance of a JSON Schema, built directly instead of searched for.

A scripted host call needs one valid input, and the smaller the better. Asking hypothesis to
`find` and shrink one costs about a second per schema, most of a kit run on a small plugin;
walking the schema costs microseconds. The walk covers what tool schemas use (const, enum,
type, bounds, lengths, required properties, items, a few formats); anything else (`pattern`,
`allOf`, `$ref`, ...) is left to the caller's fallback, and the caller validates the result.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TypeGuard

from plugin_spec.json_types import JsonArray, JsonObject, JsonValue

FORMATS = {
    "date": "2000-01-01",
    "date-time": "2000-01-01T00:00:00Z",
    "time": "00:00:00Z",
    "email": "a@example.com",
    "uri": "http://localhost/",
    "uuid": "00000000-0000-0000-0000-000000000000",
    "hostname": "localhost",
    "ipv4": "127.0.0.1",
}
HANDLED = frozenset(
    {
        "type", "const", "enum", "nullable", "format", "minLength", "maxLength", "minimum",
        "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf", "minItems", "maxItems",
        "items", "properties", "required", "additionalProperties", "minProperties",
        "maxProperties", "uniqueItems", "default", "examples", "title", "description",
        "$schema", "$id", "$comment", "readOnly", "writeOnly", "deprecated",
    }
)  # fmt: skip


class NoSimpleInstance(Exception):
    """The schema uses something the walk does not build; search for an instance instead."""


def simplest_instance(schema: JsonValue) -> JsonValue:
    """A small value valid against schema (the caller validates it), or NoSimpleInstance."""
    if schema is True or schema == {}:
        return {}
    if not isinstance(schema, dict):
        raise NoSimpleInstance("not a schema object")
    # x- keywords are annotations (FengYu's x-fengyu-*): they constrain no instance
    unknown = {k for k in schema if not str(k).startswith("x-")} - HANDLED
    if unknown:
        raise NoSimpleInstance(f"uses {sorted(unknown)[0]}")
    if "const" in schema:
        return schema["const"]
    if "enum" in schema:
        enum = schema["enum"]
        if not isinstance(enum, list) or not enum:
            raise NoSimpleInstance("empty enum")
        return enum[0]
    kind = schema.get("type")
    kinds = kind if isinstance(kind, list) else [kind]
    for candidate in kinds:
        if isinstance(candidate, str) and candidate in BUILDERS:
            return BUILDERS[candidate](schema)
    if kind is None:
        return BUILDERS["object"](schema) if "properties" in schema else {}
    raise NoSimpleInstance(f"type {kind!r}")


def _string(schema: JsonObject) -> str:
    form = schema.get("format")
    if isinstance(form, str) and form in FORMATS:
        return FORMATS[form]
    length = schema.get("minLength", 0)
    if not isinstance(length, int):
        raise NoSimpleInstance("minLength")
    return "a" * length


def _number(schema: JsonObject, integer: bool) -> int | float:
    """0 unless the bounds exclude it, then the nearest bound; the caller checks the rest."""
    value: float = 0
    low, high = schema.get("minimum"), schema.get("maximum")
    above, below = schema.get("exclusiveMinimum"), schema.get("exclusiveMaximum")
    if _is_number(low) and value < low:
        value = low
    if _is_number(above) and value <= above:
        value = math.floor(above) + 1 if integer else above + 1
    if _is_number(high) and value > high:
        value = high
    if _is_number(below) and value >= below:
        value = math.ceil(below) - 1 if integer else below - 1
    step = schema.get("multipleOf")
    if _is_number(step) and step > 0:
        value = math.ceil(value / step) * step
    if integer or float(value).is_integer():
        return int(value)
    return value


def _is_number(value: object) -> TypeGuard[int | float]:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _array(schema: JsonObject) -> JsonArray:
    count = schema.get("minItems", 0)
    if not isinstance(count, int):
        raise NoSimpleInstance("minItems")
    if count == 0:
        return []
    if schema.get("uniqueItems") and count > 1:
        raise NoSimpleInstance("uniqueItems with minItems > 1")
    return [simplest_instance(schema.get("items", {})) for _ in range(count)]


def _object(schema: JsonObject) -> JsonObject:
    properties = schema.get("properties") or {}
    required = schema.get("required") or []
    if not isinstance(properties, dict) or not isinstance(required, list):
        raise NoSimpleInstance("properties or required malformed")
    names = [name for name in required if isinstance(name, str)]
    if len(names) != len(required):
        raise NoSimpleInstance("properties or required malformed")
    return {name: simplest_instance(properties.get(name, {})) for name in names}


BUILDERS: dict[str, Callable[[JsonObject], JsonValue]] = {
    "object": _object,
    "string": _string,
    "integer": lambda schema: _number(schema, integer=True),
    "number": lambda schema: _number(schema, integer=False),
    "boolean": lambda schema: False,
    "array": _array,
    "null": lambda schema: None,
}
