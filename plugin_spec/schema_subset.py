"""A method schema of the manifest subset read as standard JSON Schema
(spec: fengyu-manifest.md#method-schemas).

The subset admits null with `nullable: true` (OpenAPI style); JSON Schema says the same with a
type list or a null enum value. The kit generates and validates inputs with it, and the worker
SDK validates params with it, so both read `nullable` the same way.
"""

from __future__ import annotations

from typing import Any


def to_json_schema(schema: Any) -> Any:
    """The subset schema as standard JSON Schema: `nullable: true` admits null.

    Only the places the subset nests schemas are walked (properties, items), so enum values
    or property names that happen to be called "nullable" are left alone.
    """
    if not isinstance(schema, dict):
        return schema
    result = {key: value for key, value in schema.items() if key != "nullable"}
    if isinstance(schema.get("properties"), dict):
        result["properties"] = {
            name: to_json_schema(sub) for name, sub in schema["properties"].items()
        }
    if "items" in schema:
        result["items"] = to_json_schema(schema["items"])
    if schema.get("nullable") is True:
        if isinstance(result.get("type"), str):
            result["type"] = [result["type"], "null"]
        if isinstance(result.get("enum"), list) and None not in result["enum"]:
            result["enum"] = [*result["enum"], None]
    return result
