"""The chat route (spec: host.md#tool-events-on-the-chat-stream):
`POST /api/chat {"message", "conversationId"?}`, answered with the run's event stream
(reference_host.http.streaming)."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Callable

from fastapi import APIRouter, Header
from pydantic import Field
from starlette.responses import StreamingResponse

from reference_host.agent.models import ChatModel
from reference_host.host import Host
from reference_host.http.bodies import StrictBody
from reference_host.http.deps import HostDep, KeepAliveDep, ModelFactoryDep
from reference_host.http.ids import ClientId
from reference_host.http.streaming import EVENT_STREAM, EventStream, stream
from reference_host.stream.events import Event

router = APIRouter()


class ChatBody(StrictBody):
    message: str
    conversation_id: ClientId | None = Field(default=None, alias="conversationId")


@router.post("/api/chat", response_class=EventStream, responses={200: EVENT_STREAM})
async def chat(
    body: ChatBody,
    host: HostDep,
    model_factory: ModelFactoryDep,
    keep_alive: KeepAliveDep,
    tenant: str = Header("", alias="X-Tenant-Id"),
    actor: str = Header("", alias="X-Actor"),
) -> StreamingResponse:
    """The chat stream; X-Tenant-Id and X-Actor select the ERP tools offered."""
    conversation = body.conversation_id or f"conv_{uuid.uuid4()}"
    run = _run(host, model_factory, body.message, conversation, tenant, actor)
    return stream(run, conversation, keep_alive=keep_alive)


async def _run(
    host: Host,
    model_factory: Callable[[], ChatModel],
    message: str,
    conversation: str,
    tenant: str,
    actor: str,
) -> AsyncIterator[Event]:
    """One chat run with the factory's model; the factory's owner closes what it made."""
    model = model_factory()
    chat = host.chat(message, model=model, conversation_id=conversation, tenant=tenant, actor=actor)
    async for event in chat:
        yield event
