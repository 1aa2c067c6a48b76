"""A provider's rule set, read from its TOML file (spec: providers.md#rule-files).

A rule names one check the judge knows (`check`), its parameters, and what the provider does
with a schema that breaks it: `rejects` (the API answers 400) or `rewrites` (the provider's SDK
changes the schema before sending it, and the judge says exactly how).
"""

from __future__ import annotations

import datetime
import json
import tomllib
from dataclasses import dataclass, field
from enum import StrEnum
from functools import cache
from pathlib import Path
from typing import Any

from plugin_spec.json_types import JsonObject
from plugin_spec.providers import PROVIDERS

HERE = Path(__file__).resolve().parent


class Outcome(StrEnum):
    REJECTS = "rejects"
    REWRITES = "rewrites"


@dataclass(frozen=True)
class Source:
    title: str
    url: str


@dataclass(frozen=True)
class Example:
    """Tools that break the rule: one tool's name and input schema, several names, or a number
    of tools."""

    name: str = "lookup_item"
    input_schema: JsonObject = field(default_factory=lambda: generated("@many-properties:0"))
    names: tuple[str, ...] = ()
    tools: int = 1

    def tool_names(self) -> list[str]:
        if self.names:
            return list(self.names)
        if self.tools > 1:
            return [f"tool_{i:03d}" for i in range(self.tools)]
        return [self.name]


def generated(spec: str) -> JsonObject:
    """An example schema too big to write out: `@KIND:N` (openai.toml lists the kinds)."""
    kind, _, count = spec[1:].partition(":")
    n = int(count)
    properties: JsonObject
    if kind == "many-properties":
        properties = {f"p{i}": {"type": "string"} for i in range(n)}
    elif kind == "many-enum-values":
        properties = {"pick": {"type": "string", "enum": [f"v{i}" for i in range(n)]}}
    elif kind == "long-enum-values":
        properties = {
            "pick": {"type": "string", "enum": [f"{i:04d}" + "x" * 996 for i in range(n)]}
        }
    elif kind == "union-properties":
        properties = {f"p{i}": {"type": ["string", "integer"]} for i in range(n)}
    else:
        raise ValueError(f"unknown example generator {spec!r}")
    return {"type": "object", "properties": properties, "additionalProperties": False}


@dataclass(frozen=True)
class Rule:
    id: str
    provider: str
    check: str
    outcome: Outcome
    text: str
    source: Source
    read: datetime.date
    params: dict[str, Any]
    fails: Example

    @property
    def whole_set(self) -> bool:
        """Judged on the whole tool set of a request, not on one tool."""
        return self.check in SET_CHECKS

    def cite(self) -> str:
        return f"{self.id} ({self.source.title}, {self.source.url}, read {self.read})"


SET_CHECKS = frozenset({"tool-count", "optional-count", "union-count"})
RULE_KEYS = frozenset({"id", "check", "outcome", "text", "source", "read", "fails"})


@dataclass(frozen=True)
class Provider:
    id: str
    title: str
    mode: str
    rules: tuple[Rule, ...]

    def tool_rules(self) -> list[Rule]:
        return [r for r in self.rules if not r.whole_set]

    def set_rules(self) -> list[Rule]:
        return [r for r in self.rules if r.whole_set]


def _example(raw: dict[str, Any] | None) -> Example:
    raw = raw or {}
    schema = raw.get("input_schema")
    return Example(
        name=raw.get("name", Example.name),
        input_schema=(
            Example().input_schema
            if schema is None
            else generated(schema)
            if schema.startswith("@")
            else json.loads(schema)
        ),
        names=tuple(raw.get("names", ())),
        tools=raw.get("tools", 1),
    )


def _rule(provider: str, raw: dict[str, Any]) -> Rule:
    source = raw["source"]
    return Rule(
        id=raw["id"],
        provider=provider,
        check=raw["check"],
        outcome=Outcome(raw["outcome"]),
        text=raw["text"],
        source=Source(source["title"], source["url"]),
        read=raw["read"],
        params={k: v for k, v in raw.items() if k not in RULE_KEYS},
        fails=_example(raw.get("fails")),
    )


@cache
def load_provider(provider: str) -> Provider:
    """The provider's rule set; a malformed file fails loudly, since it ships with the kit."""
    data = tomllib.loads((HERE / f"{provider}.toml").read_text("utf-8"))
    return Provider(
        id=provider,
        title=data["title"],
        mode=data["mode"],
        rules=tuple(_rule(provider, raw) for raw in data["rule"]),
    )


def all_providers() -> list[Provider]:
    return [load_provider(p) for p in PROVIDERS]


def rule(rule_id: str) -> Rule:
    """A rule by id, from any provider."""
    for provider in all_providers():
        for candidate in provider.rules:
            if candidate.id == rule_id:
                return candidate
    raise KeyError(rule_id)
