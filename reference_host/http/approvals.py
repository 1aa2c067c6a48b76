"""The approval route: `POST /api/approvals/{approval_id} {"approved": bool}`
settles a pending approval of a chat or a workflow run."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from reference_host.http.bodies import StrictBody
from reference_host.http.deps import HostDep
from reference_host.http.errors import ApiError
from reference_host.http.openapi import NOT_FOUND
from reference_host.quoting import quoted

router = APIRouter()


class ApprovalBody(StrictBody):
    approved: bool


@router.post("/api/approvals/{approval_id}", responses={404: NOT_FOUND})
async def decide_approval(approval_id: str, body: ApprovalBody, host: HostDep) -> dict[str, Any]:
    if not host.approvals.decide(approval_id, body.approved):
        raise ApiError(404, f"no pending approval {quoted(approval_id)}")
    return {"id": approval_id, "approved": body.approved}
