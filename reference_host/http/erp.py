"""The ERP discovery route (spec: erp.md#ownership-and-discovery):
`GET /api/v1/agents/metadata/tools` with X-Tenant-Id and X-Actor, the tools that actor may use,
active or not."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Header

from reference_host.http.answers import DiscoveredTool
from reference_host.http.deps import HostDep
from reference_host.http.error_answers import ApiError
from reference_host.http.openapi import error

router = APIRouter()

# Both are required (400 with one message naming both when either is missing or empty); the
# route checks them itself for that message, so the document states the rule here.
DISCOVERY_HEADERS = {
    "parameters": [
        {
            "name": name,
            "in": "header",
            "required": True,
            "schema": {"type": "string", "minLength": 1},
        }
        for name in ("X-Tenant-Id", "X-Actor")
    ]
}


@router.get(
    "/api/v1/agents/metadata/tools",
    response_model=list[DiscoveredTool],
    openapi_extra=DISCOVERY_HEADERS,
    responses={400: error("X-Tenant-Id or X-Actor is missing or empty")},
)
async def discover_tools(
    host: HostDep,
    tenant: str | None = Header(None, alias="X-Tenant-Id", include_in_schema=False),
    actor: str | None = Header(None, alias="X-Actor", include_in_schema=False),
) -> list[dict[str, Any]]:
    """The ERP discovery endpoint (spec: erp.md#ownership-and-discovery): the tools this actor
    may use, active or not."""
    if not tenant or not actor:
        raise ApiError(400, "the X-Tenant-Id and X-Actor headers are required")
    return host.discover(tenant, actor)
