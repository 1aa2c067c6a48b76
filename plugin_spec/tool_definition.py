"""A tool as both profiles declare it: its definition for the model and its effect
(spec: fengyu-manifest.md#effects).

The host registers these, and the kit checks what they say, so both read them from here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum

from plugin_spec.json_types import JsonMapping, ReadOnlyJson


class Effect(StrEnum):
    """Approval class of a tool: read runs at once, write and external may need approval."""

    READ = "read"
    WRITE = "write"
    EXTERNAL = "external"

    @classmethod
    def parse(cls, value: object) -> Effect:
        """A declared effect; a missing or unknown one counts as external
        (spec: host.md#approval-by-effect)."""
        try:
            return cls(value) if isinstance(value, str) else cls.EXTERNAL
        except ValueError:
            return cls.EXTERNAL


HOST_ANNOTATION_PREFIX = "x-fengyu-"
HOST_FORMATS = frozenset({"fengyu-file", "fengyu-directory"})
# Keywords whose value maps names to schemas: the names are data, never annotations.
NAMED_SCHEMAS = frozenset({"properties", "patternProperties", "$defs", "definitions"})
# Keywords whose value is an instance, not a schema: nothing in it is an annotation.
VALUES = frozenset({"enum", "const", "default", "examples"})
# Deeper than any schema the kit admits (manifests nest at most 64 levels).
MAX_DEPTH = 200


def model_schema(schema: ReadOnlyJson) -> ReadOnlyJson:
    """A copy of an inputSchema as the model is sent it (spec: providers.md#verdicts):
    without FengYu's host-owned annotations, the `x-fengyu-*` keywords and the `fengyu-file`
    and `fengyu-directory` formats, which tell the host how to treat a value and mean nothing
    to a model provider (some refuse them). Values (enum, const, default, examples) are data
    and stay as they are; a schema nested past MAX_DEPTH is sent as it is."""
    return _without_annotations(schema, MAX_DEPTH)


def _without_annotations(schema: ReadOnlyJson, depth: int) -> ReadOnlyJson:
    if depth <= 0:
        return schema
    if isinstance(schema, list):
        return [_without_annotations(item, depth - 1) for item in schema]
    if not isinstance(schema, Mapping):
        return schema
    cleaned: dict[str, ReadOnlyJson] = {}
    for key, value in schema.items():
        if isinstance(key, str) and key.startswith(HOST_ANNOTATION_PREFIX):
            continue
        if key == "format" and isinstance(value, str) and value in HOST_FORMATS:
            continue
        if key in VALUES:
            cleaned[key] = value
        elif key in NAMED_SCHEMAS and isinstance(value, Mapping):
            cleaned[key] = {n: _without_annotations(v, depth - 1) for n, v in value.items()}
        else:
            cleaned[key] = _without_annotations(value, depth - 1)
    return cleaned


@dataclass(frozen=True)
class ToolDefinition:
    """A tool as offered to the model: name, description and parsed input schema."""

    name: str
    description: str
    input_schema: JsonMapping = field(default_factory=lambda: {"type": "object"})

    def to_openai(self) -> dict[str, ReadOnlyJson]:
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": model_schema(self.input_schema),
            },
        }
