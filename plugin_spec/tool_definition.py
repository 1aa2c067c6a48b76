"""A tool as both profiles declare it: its definition for the model and its effect
(spec: fengyu-manifest.md#effects).

The host registers these, and the kit checks what they say, so both read them from here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any


class Effect(StrEnum):
    """Approval class of a tool: read runs at once, write and external may need approval."""

    READ = "read"
    WRITE = "write"
    EXTERNAL = "external"

    @classmethod
    def parse(cls, value: Any) -> Effect:
        """A declared effect; a missing or unknown one counts as external
        (spec: host.md#approval-by-effect)."""
        try:
            return cls(value)
        except ValueError:
            return cls.EXTERNAL


@dataclass(frozen=True)
class ToolDefinition:
    """A tool as offered to the model: name, description and parsed input schema."""

    name: str
    description: str
    input_schema: Mapping[str, Any] = field(default_factory=lambda: {"type": "object"})

    def to_openai(self) -> dict[str, Any]:
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": dict(self.input_schema),
            },
        }
