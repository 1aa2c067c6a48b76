"""Every subschema of a JSON Schema, with its JSON pointer and how deeply it nests.

The provider checks look at each node on its own (a keyword there, a missing type), so one
walk serves them all.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from plugin_spec.json_types import JsonObject, JsonValue

# Keywords whose value is a map of name -> subschema, one subschema, or a list of them.
SCHEMA_MAPS = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas")
SCHEMA_ONE = (
    "items",
    "additionalProperties",
    "not",
    "if",
    "then",
    "else",
    "contains",
    "propertyNames",
    "unevaluatedItems",
    "unevaluatedProperties",
    "additionalItems",
)
SCHEMA_LISTS = ("anyOf", "oneOf", "allOf", "prefixItems", "items")
# Keywords that open a new level of data: what nesting-depth limits count.
DATA_LEVEL = ("properties", "items", "additionalProperties", "prefixItems")


def escape(token: str) -> str:
    return token.replace("~", "~0").replace("/", "~1")


@dataclass(frozen=True)
class Node:
    pointer: str
    schema: JsonObject
    depth: int  # object and array levels from the root (the root object is level 1)
    in_defs: bool  # under $defs / definitions: reached only through a $ref

    @property
    def types(self) -> set[str]:
        declared = self.schema.get("type")
        if isinstance(declared, str):
            return {declared.lower()}
        if isinstance(declared, list):
            return {t.lower() for t in declared if isinstance(t, str)}
        return set()

    @property
    def is_object(self) -> bool:
        return "object" in self.types or (
            not self.types and isinstance(self.schema.get("properties"), dict)
        )


def nodes(
    schema: JsonValue, pointer: str = "", depth: int = 1, in_defs: bool = False
) -> Iterator[Node]:
    """Each subschema that is an object, parents before children."""
    if not isinstance(schema, dict):
        return
    yield Node(pointer, schema, depth, in_defs)
    for key, value in schema.items():
        deeper = depth + 1 if key in DATA_LEVEL else depth
        defs = in_defs or key in ("$defs", "definitions")
        if key in SCHEMA_MAPS and isinstance(value, dict):
            for name, sub in value.items():
                yield from nodes(sub, f"{pointer}/{key}/{escape(name)}", deeper, defs)
        elif key in SCHEMA_LISTS and isinstance(value, list):
            for index, sub in enumerate(value):
                yield from nodes(sub, f"{pointer}/{key}/{index}", deeper, defs)
        elif key in SCHEMA_ONE and isinstance(value, dict):
            yield from nodes(value, f"{pointer}/{key}", deeper, defs)


def at(schema: JsonValue, pointer: str) -> JsonValue:
    """The value at a JSON pointer of schema (the pointer came from nodes())."""
    for token in pointer.split("/")[1:]:
        token = token.replace("~1", "/").replace("~0", "~")
        if isinstance(schema, list):
            schema = schema[int(token)]
        elif isinstance(schema, dict):
            schema = schema[token]
        else:
            raise KeyError(f"{pointer}: {token!r} is inside a {type(schema).__name__}")
    return schema
