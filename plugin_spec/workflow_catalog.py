"""The workflow catalog (spec: host.md#saved-workflows): every tool with a stable identity and
a schema revision.

Identity is `<pluginId>:<toolName>` (`builtin:<name>` for built-ins; an ERP tool by plugin
and toolCode). The revision is a hash of exactly what a saved canvas depends on
(description, inputSchema, outputSchema) in canonical JSON, so it changes exactly when one of
them changes: not when keys are reordered, and not when the same manifest is reinstalled.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from plugin_spec.erp_decls import erp_decls
from plugin_spec.fengyu_decls import tool_decls
from plugin_spec.json_types import JsonMapping, JsonObject, ReadOnlyJson

BUILTIN = "builtin"


def revision(description: str, input_schema: ReadOnlyJson, output_schema: ReadOnlyJson) -> str:
    canonical = json.dumps(
        {"description": description, "inputSchema": input_schema, "outputSchema": output_schema},
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=False,
    )
    return hashlib.sha256(canonical.encode()).hexdigest()[:16]


@dataclass(frozen=True)
class CatalogEntry:
    identity: str
    plugin_id: str
    name: str
    description: str
    effect: str
    input_schema: JsonMapping
    output_schema: JsonMapping | None
    revision: str

    @classmethod
    def of(
        cls,
        plugin_id: str,
        name: str,
        description: str,
        effect: str,
        input_schema: JsonMapping,
        output_schema: JsonMapping | None,
    ) -> CatalogEntry:
        return cls(
            f"{plugin_id}:{name}",
            plugin_id,
            name,
            description,
            effect,
            input_schema,
            output_schema,
            revision(description, input_schema, output_schema),
        )

    @property
    def inputs(self) -> set[str]:
        return _names(self.input_schema.get("properties"))

    @property
    def required(self) -> set[str]:
        required = self.input_schema.get("required")
        if isinstance(required, Sequence) and not isinstance(required, str):
            return {name for name in required if isinstance(name, str)}
        return set()

    @property
    def output_fields(self) -> set[str]:
        return _names((self.output_schema or {}).get("properties"))

    def to_json(self) -> dict[str, ReadOnlyJson]:
        return {
            "identity": self.identity,
            "pluginId": self.plugin_id,
            "name": self.name,
            "description": self.description,
            "effect": self.effect,
            "inputSchema": self.input_schema,
            "outputSchema": self.output_schema,
            "revision": self.revision,
        }


def _names(properties: ReadOnlyJson) -> set[str]:
    return set(properties) if isinstance(properties, Mapping) else set()


@dataclass(frozen=True)
class ToolChange:
    """What one upgrade does to one tool, as far as saved canvases are concerned."""

    identity: str
    removed: bool = False
    inputs_removed: tuple[str, ...] = ()
    newly_required: tuple[str, ...] = ()
    outputs_removed: tuple[str, ...] = ()
    revision_changed: bool = False

    @property
    def breaking(self) -> bool:
        """A change a saved canvas cannot absorb on its own."""
        return self.removed or bool(
            self.inputs_removed or self.newly_required or self.outputs_removed
        )

    def describe(self) -> list[str]:
        if self.removed:
            return [f"{self.identity}: tool removed"]
        parts = [f"{self.identity}: input {n!r} removed" for n in self.inputs_removed]
        parts += [f"{self.identity}: input {n!r} newly required" for n in self.newly_required]
        parts += [f"{self.identity}: output field {n!r} removed" for n in self.outputs_removed]
        return parts


@dataclass(frozen=True)
class CatalogDiff:
    changes: tuple[ToolChange, ...] = field(default_factory=tuple)
    added: tuple[str, ...] = ()

    @property
    def breaking(self) -> list[ToolChange]:
        return [c for c in self.changes if c.breaking]

    @property
    def revised(self) -> list[str]:
        return [c.identity for c in self.changes if c.revision_changed and not c.removed]


def diff(before: Iterable[CatalogEntry], after: Iterable[CatalogEntry]) -> CatalogDiff:
    """What going from before to after changes for canvases built on before."""
    old = {e.identity: e for e in before}
    new = {e.identity: e for e in after}
    changes = []
    for identity, entry in old.items():
        now = new.get(identity)
        if now is None:
            changes.append(ToolChange(identity, removed=True))
            continue
        change = ToolChange(
            identity,
            inputs_removed=tuple(sorted(entry.inputs - now.inputs)),
            newly_required=tuple(sorted(now.required - entry.required)),
            outputs_removed=tuple(sorted(entry.output_fields - now.output_fields)),
            revision_changed=entry.revision != now.revision,
        )
        if change.breaking or change.revision_changed:
            changes.append(change)
    return CatalogDiff(tuple(changes), tuple(sorted(set(new) - set(old))))


def from_manifest(plugin_id: str, manifest: JsonObject) -> list[CatalogEntry]:
    """The entries a plugin would contribute (for upgrade checks without installing it)."""
    if "erpTools" in manifest:
        return [
            CatalogEntry.of(
                plugin_id,
                d.code,
                d.definition.description,
                d.effect.value,
                dict(d.definition.input_schema),
                None,
            )
            for d in erp_decls(manifest)
        ]
    return [
        CatalogEntry.of(
            plugin_id,
            d.definition.name,
            d.definition.description,
            d.effect.value,
            dict(d.definition.input_schema),
            d.output_schema,
        )
        for d in tool_decls(manifest)
    ]
