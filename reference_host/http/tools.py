"""The tool route: `GET /api/tools`, the current snapshot's name, description,
inputSchema, effect and owner of each tool."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from reference_host.http.deps import HostDep

router = APIRouter()


@router.get("/api/tools")
async def list_tools(host: HostDep) -> list[dict[str, Any]]:
    snapshot = host.registry.snapshot()
    return [
        {
            "name": callback.definition.name,
            "description": callback.definition.description,
            "inputSchema": dict(callback.definition.input_schema),
            "effect": callback.effect.value,
            "owner": callback.owner,
        }
        for callback in snapshot.callbacks.values()
    ]
