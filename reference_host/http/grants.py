"""The FileRef grant routes (spec: host.md#fileref-grants):

POST   /api/conversations/{cid}/grants  {"pluginId", "path", "access"} -> the FileRef (201)
GET    /api/conversations/{cid}/grants
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Path
from pydantic import Field

from plugin_spec.filerefs import FileRefError
from reference_host.http.bodies import PATH_LIMIT, StrictBody
from reference_host.http.deps import HostDep
from reference_host.http.errors import ApiError
from reference_host.http.openapi import NOT_FOUND
from reference_host.http.plugins import require_plugin
from reference_host.ids import ID_PATTERN, ID_RULE

router = APIRouter()

ConversationPath = Path(pattern=ID_PATTERN, description=f"A conversation id of {ID_RULE}.")


class GrantBody(StrictBody):
    plugin_id: str = Field(alias="pluginId", min_length=1, max_length=PATH_LIMIT)
    path: str = Field(min_length=1, max_length=PATH_LIMIT)
    access: str


@router.post(
    "/api/conversations/{conversation_id}/grants",
    status_code=201,
    responses={404: NOT_FOUND},
)
async def attach_grant(
    body: GrantBody, host: HostDep, conversation_id: str = ConversationPath
) -> dict[str, Any]:
    require_plugin(host, body.plugin_id)
    try:
        return host.grants.attach(conversation_id, body.plugin_id, body.path, body.access)
    except FileRefError as exc:
        raise ApiError(400, str(exc)) from None


@router.get("/api/conversations/{conversation_id}/grants")
async def list_grants(
    host: HostDep, conversation_id: str = ConversationPath
) -> list[dict[str, Any]]:
    return [
        {"pluginId": grant.plugin_id, "ref": dict(grant.ref), "path": str(grant.path)}
        for grant in host.grants.grants(conversation_id)
    ]
