"""The types of JSON data: what `json.loads` returns, what a schema or a manifest is.

Manifests, schemas, JSON-RPC messages and tool arguments were spelled `dict[str, Any]`, which
lets any mistake through. These aliases say what the data is, so mypy makes each reader narrow
a value (`isinstance`) before it indexes or iterates it. `dict` and `list` are invariant: a
parameter that only reads takes the read-only variants (`JsonMapping`, `ReadOnlyJson`), which
also accept a `dict[str, str]` or a `list[str]`. Values that are not JSON at all are `object`.
"""

import json
from collections.abc import Mapping, Sequence
from typing import TypeAlias

JsonScalar: TypeAlias = bool | int | float | str | None
# What json.loads returns. A recursive alias: mypy follows it, at run time a plain union.
JsonValue: TypeAlias = JsonScalar | list["JsonValue"] | dict[str, "JsonValue"]
JsonObject: TypeAlias = dict[str, JsonValue]
JsonArray: TypeAlias = list[JsonValue]
# JSON Schema 2020-12: a schema is an object, or true (anything) or false (nothing).
JsonSchema: TypeAlias = JsonObject | bool

# Read-only and covariant: what a function that only reads JSON takes.
ReadOnlyJson: TypeAlias = JsonScalar | Sequence["ReadOnlyJson"] | Mapping[str, "ReadOnlyJson"]
JsonMapping: TypeAlias = Mapping[str, ReadOnlyJson]


def as_object(value: JsonValue) -> JsonObject:
    """value when it is a JSON object, else an empty one: for reading an optional member."""
    return value if isinstance(value, dict) else {}


def as_array(value: JsonValue) -> JsonArray:
    """value when it is a JSON array, else an empty one: for reading an optional member."""
    return value if isinstance(value, list) else []


def objects_in(value: JsonValue) -> list[JsonObject]:
    """The objects of value when it is a JSON array (other items left out), else none: for
    reading a list of records."""
    return [item for item in as_array(value) if isinstance(item, dict)]


def json_copy(value: ReadOnlyJson) -> JsonValue:
    """A deep copy in new dicts and lists (a Mapping becomes a dict, a Sequence a list): what
    code that changes JSON it was lent works on."""
    if isinstance(value, Mapping):
        return object_copy(value)
    if isinstance(value, Sequence) and not isinstance(value, str):
        return [json_copy(item) for item in value]
    return value


def object_copy(value: JsonMapping) -> JsonObject:
    """json_copy of an object."""
    return {key: json_copy(item) for key, item in value.items()}


def loads(text: str | bytes) -> JsonValue:
    """json.loads, typed: what it returns is JSON (its errors are json.loads's own)."""
    value: JsonValue = json.loads(text)
    return value
