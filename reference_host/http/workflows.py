"""The workflow routes (spec: host.md#saved-workflows):

    GET    /api/workflow/catalog              every tool: identity, pluginId, name,
                                              description, effect, inputSchema,
                                              outputSchema, revision
    GET    /api/workflows                     id, name, updatedAt of each saved workflow
    POST   /api/workflows          workflow   save (201 new, 200 replaced; 400 with the
                                              reasons when it does not fit the catalog)
    GET    /api/workflows/{id}                the workflow annotated against the live catalog
    DELETE /api/workflows/{id}                204
    POST   /api/workflows/{id}/reconcile      adopt the live schemas: {"workflow", "reconciled"}
    POST   /api/workflows/{id}/run {"conversationId"?}   text/event-stream, chat's events

Errors have the app's shape (`{"error", "problems"}`; 404 for an unknown workflow). A run
takes X-Tenant-Id and X-Actor like chat, and its approvals are settled through
POST /api/approvals/{id}.
"""

from __future__ import annotations

import uuid
from typing import Any

from fastapi import APIRouter, Body, Header
from fastapi.responses import JSONResponse, Response
from pydantic import Field
from starlette.responses import StreamingResponse

from reference_host.http.answers import CatalogAnswer, Reconciled, ShownWorkflow, WorkflowSummary
from reference_host.http.bodies import StrictBody
from reference_host.http.deps import CanvasDep, HostDep, KeepAliveDep
from reference_host.http.ids import ClientId
from reference_host.http.openapi import NOT_FOUND
from reference_host.http.streaming import EVENT_STREAM, EventStream, stream
from reference_host.workflow.runner import run_saved

router = APIRouter()


class RunBody(StrictBody):
    conversation_id: ClientId | None = Field(default=None, alias="conversationId")


@router.get("/api/workflow/catalog", response_model=list[CatalogAnswer])
async def workflow_catalog(canvas: CanvasDep) -> list[dict[str, Any]]:
    return [entry.to_json() for entry in canvas.catalog().values()]


@router.get("/api/workflows", response_model=list[WorkflowSummary])
async def list_workflows(canvas: CanvasDep) -> list[dict[str, Any]]:
    return canvas.workflows.list()


@router.post(
    "/api/workflows",
    response_model=ShownWorkflow,
    responses={201: {"description": "saved as new (200: replaced)", "model": ShownWorkflow}},
)
async def save_workflow(
    canvas: CanvasDep,
    workflow: dict[str, Any] = Body(...),  # noqa: B008
) -> JSONResponse:
    shown, created = canvas.save(workflow)
    return JSONResponse(shown, status_code=201 if created else 200)


@router.get(
    "/api/workflows/{workflow_id}", response_model=ShownWorkflow, responses={404: NOT_FOUND}
)
async def load_workflow(workflow_id: str, canvas: CanvasDep) -> dict[str, Any]:
    return canvas.load(workflow_id)


@router.delete("/api/workflows/{workflow_id}", status_code=204, responses={404: NOT_FOUND})
async def delete_workflow(workflow_id: str, canvas: CanvasDep) -> Response:
    canvas.delete(workflow_id)
    return Response(status_code=204)


@router.post(
    "/api/workflows/{workflow_id}/reconcile",
    response_model=Reconciled,
    responses={404: NOT_FOUND},
)
async def reconcile_workflow(workflow_id: str, canvas: CanvasDep) -> dict[str, Any]:
    return canvas.reconcile(workflow_id)


@router.post(
    "/api/workflows/{workflow_id}/run",
    response_class=EventStream,
    responses={200: EVENT_STREAM, 404: NOT_FOUND},
)
async def run_workflow(
    workflow_id: str,
    host: HostDep,
    canvas: CanvasDep,
    keep_alive: KeepAliveDep,
    body: RunBody | None = None,
    tenant: str = Header("", alias="X-Tenant-Id"),
    actor: str = Header("", alias="X-Actor"),
) -> StreamingResponse:
    workflow = canvas.raw(workflow_id)
    conversation = (body.conversation_id if body else None) or f"conv_{uuid.uuid4()}"
    run = run_saved(host, workflow, conversation_id=conversation, tenant=tenant, actor=actor)
    return stream(run, conversation, keep_alive=keep_alive)
