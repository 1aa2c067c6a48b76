"""The approval route: `POST /api/approvals/{approval_id} {"approved": bool}`
settles a pending approval of a chat or a workflow run.

An approval holds for the tool it showed (spec: host.md#approval-by-effect): when that tool
changed while the approval waited (its plugin upgraded, reinstalled, disabled or removed), an
approval is answered 409 with what changed, and the call is not run; the run's stream says so
too.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from reference_host.http.answers import ApprovalAnswer
from reference_host.http.bodies import StrictBody
from reference_host.http.deps import HostDep
from reference_host.http.error_answers import ApiError
from reference_host.http.openapi import NOT_FOUND, error
from reference_host.support.quoting import quoted

router = APIRouter()

CHANGED = error("what the approval showed changed while it waited; the call was not run")


class ApprovalBody(StrictBody):
    approved: bool


@router.post(
    "/api/approvals/{approval_id}",
    response_model=ApprovalAnswer,
    responses={404: NOT_FOUND, 409: CHANGED},
)
async def decide_approval(approval_id: str, body: ApprovalBody, host: HostDep) -> dict[str, Any]:
    verdict = host.approvals.decide(approval_id, body.approved)
    if verdict is None:
        raise ApiError(404, f"no pending approval {quoted(approval_id)}")
    if verdict.changed is not None:
        raise ApiError(
            409,
            f"approval {quoted(approval_id)} was not applied: {verdict.changed} while it "
            "waited; the call was not run",
        )
    return {"id": approval_id, "approved": body.approved}
