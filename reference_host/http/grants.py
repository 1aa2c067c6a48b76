"""The FileRef grant routes (spec: host.md#fileref-grants):

POST   /api/conversations/{cid}/grants  {"pluginId", "path", "access"} -> the FileRef (201)
GET    /api/conversations/{cid}/grants
DELETE /api/conversations/{cid}/grants/{refId} -> 204: revoked, its copies deleted

An attach the host's read-copy quota cannot take is a 409 naming the limit and the use (the
client can revoke a grant and try again); a bad path or access is a 400.
"""

from __future__ import annotations

import asyncio
from typing import Any

from fastapi import APIRouter, Path, Response
from pydantic import Field

from plugin_spec.filerefs import FileRef, FileRefError
from reference_host.grants.quota import QuotaError
from reference_host.http.answers import FileRefAnswer, GrantAnswer
from reference_host.http.bodies import PATH_LIMIT, StrictBody
from reference_host.http.deps import HostDep
from reference_host.http.error_answers import ApiError
from reference_host.http.ids import ID_PATTERN, ID_RULE
from reference_host.http.openapi import NOT_FOUND, error
from reference_host.http.plugins import require_plugin
from reference_host.support.quoting import quoted

router = APIRouter()

ConversationPath = Path(pattern=ID_PATTERN, description=f"A conversation id of {ID_RULE}.")
RefPath = Path(description="A FileRef id (ref_<uuid>); any other is a 404.")
OVER_QUOTA = error("the host's read copies are at their limit (the message gives it and the use)")
GRANT_NOT_FOUND = error("no such grant in this conversation")


class GrantBody(StrictBody):
    plugin_id: str = Field(alias="pluginId", min_length=1, max_length=PATH_LIMIT)
    path: str = Field(min_length=1, max_length=PATH_LIMIT)
    access: str


@router.post(
    "/api/conversations/{conversation_id}/grants",
    status_code=201,
    response_model=FileRefAnswer,
    responses={404: NOT_FOUND, 409: OVER_QUOTA},
)
async def attach_grant(
    body: GrantBody, host: HostDep, conversation_id: str = ConversationPath
) -> FileRef:
    require_plugin(host, body.plugin_id)
    try:
        return host.grants.attach(conversation_id, body.plugin_id, body.path, body.access)
    except QuotaError as exc:
        raise ApiError(409, str(exc)) from None
    except FileRefError as exc:
        raise ApiError(400, str(exc)) from None


@router.get("/api/conversations/{conversation_id}/grants", response_model=list[GrantAnswer])
async def list_grants(
    host: HostDep, conversation_id: str = ConversationPath
) -> list[dict[str, Any]]:
    return [
        {"pluginId": grant.plugin_id, "ref": grant.ref, "path": str(grant.path)}
        for grant in host.grants.grants(conversation_id)
    ]


@router.delete(
    "/api/conversations/{conversation_id}/grants/{ref_id}",
    status_code=204,
    responses={404: GRANT_NOT_FOUND},
)
async def revoke_grant(
    host: HostDep, conversation_id: str = ConversationPath, ref_id: str = RefPath
) -> Response:
    """Revoke a grant: its copies and staging are deleted (their quota returns), and a call
    naming it is refused."""
    if not await asyncio.to_thread(host.grants.revoke, conversation_id, ref_id):
        raise ApiError(404, f"no grant {quoted(ref_id)} in conversation {quoted(conversation_id)}")
    return Response(status_code=204)
