"""Catalog entries (spec: host.md#saved-workflows) from a registry snapshot; below the host,
so the host's catalog and the workflow canvas above it share one definition."""

from __future__ import annotations

from plugin_spec.workflow_catalog import BUILTIN, CatalogEntry
from reference_host.tools.snapshot import Snapshot


def from_snapshot(snapshot: Snapshot) -> list[CatalogEntry]:
    """One entry per tool the snapshot offers (built-ins, plugin, ERP and mounted MCP tools
    alike; an MCP tool's plugin id is its owner, `mcp:<server>`)."""
    entries = []
    for callback in snapshot.callbacks.values():
        decl = getattr(callback, "decl", None)
        # ERP tools go by their toolCode, MCP tools by their server's name for them
        name = (
            getattr(decl, "code", None)
            or getattr(callback, "catalog_name", None)
            or callback.definition.name
        )
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
