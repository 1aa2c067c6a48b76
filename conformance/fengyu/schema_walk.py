"""The nodes of a method schema, with their pointers: what the per-property rules read.

Only where the subset nests schemas is walked (properties, items), so a property that happens
to be named like a keyword is never mistaken for one.
"""

from __future__ import annotations

from collections.abc import Iterator

from conformance.fengyu.manifest import FengYuPlugin
from conformance.sources import pointer
from plugin_spec.json_types import JsonObject, JsonValue


def schema_nodes(schema: JsonValue, at: str) -> Iterator[tuple[str, JsonObject]]:
    """Every object schema in schema (itself first), with the pointer written at."""
    if not isinstance(schema, dict):
        return
    yield at, schema
    properties = schema.get("properties")
    if isinstance(properties, dict):
        for name, sub in properties.items():
            yield from schema_nodes(sub, at + pointer("properties", name))
    yield from schema_nodes(schema.get("items"), at + pointer("items"))


def plugin_schema_nodes(plugin: FengYuPlugin) -> Iterator[tuple[str, JsonObject]]:
    """Every schema node of every method (v1: of every tool) of the plugin."""
    for site in plugin.schemas:
        yield from schema_nodes(site.data, site.pointer)


def input_properties(schema: JsonValue) -> JsonObject | None:
    """The top-level properties of a method schema, or None when it declares none."""
    if not isinstance(schema, dict):
        return None
    properties = schema.get("properties")
    return properties if isinstance(properties, dict) else None
