"""The tool routes: `GET /api/tools`, the current snapshot's name, description, inputSchema,
effect and owner of each tool; `GET /api/tools/providers`, which model providers can take that
snapshot in one request (spec: providers.md#the-whole-request)."""

from __future__ import annotations

import asyncio
from typing import Any

from fastapi import APIRouter

from plugin_spec.providers.judge import fits
from plugin_spec.tool_definition import model_schema
from reference_host.http.answers import ProviderFit, ToolAnswer
from reference_host.http.deps import HostDep

router = APIRouter()


@router.get("/api/tools", response_model=list[ToolAnswer])
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


@router.get("/api/tools/providers", response_model=ProviderFit)
async def provider_fit(host: HostDep) -> dict[str, Any]:
    """Per provider: whether every tool of the snapshot, and the snapshot as one request, is
    within its rules; what stands in the way, rule by rule, when not. Judged once per snapshot
    and off the event loop: a snapshot of large schemas takes a while to walk."""
    snapshot = host.registry.snapshot()
    if "providers" not in snapshot.derived:
        tools = [(d.name, model_schema(d.input_schema)) for d in snapshot.definitions()]
        fit = await asyncio.to_thread(fits, tools)
        snapshot.derived["providers"] = {"tools": len(tools), "providers": fit}
    answer: dict[str, Any] = snapshot.derived["providers"]
    return answer
