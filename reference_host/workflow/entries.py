"""Catalog entries from what the host knows: a registry snapshot, or a plugin's manifest."""

from __future__ import annotations

from typing import Any

from reference_host.erp import erp_decls
from reference_host.manifests import tool_decls
from reference_host.registry import Snapshot
from reference_host.workflow.catalog import BUILTIN, CatalogEntry


def from_snapshot(snapshot: Snapshot) -> list[CatalogEntry]:
    """One entry per tool the snapshot offers (built-ins, plugin and ERP tools alike)."""
    entries = []
    for callback in snapshot.callbacks.values():
        decl = getattr(callback, "decl", None)
        name = getattr(decl, "code", None) or callback.definition.name
        owner = callback.owner if callback.owner != "builtin" else BUILTIN
        entries.append(
            CatalogEntry.of(
                owner,
                name,
                callback.definition.description,
                callback.effect.value,
                dict(callback.definition.input_schema),
                getattr(decl, "output_schema", None),
            )
        )
    return entries


def from_manifest(plugin_id: str, manifest: dict[str, Any]) -> list[CatalogEntry]:
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
