"""Following a conversation (spec: host.md#following-a-conversation):
`GET /api/conversations/{id}/events`, an SSE stream of the conversation's kept events, then
each new one, whoever posted the turn, until the client goes away.

Each frame carries `id: <number>`; a client that reconnects sends the last number it saw as
`Last-Event-ID` (or `?after=`) and is sent only what came after it."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

from fastapi import APIRouter, Header, Query
from starlette.responses import StreamingResponse

from reference_host.http.deps import HostDep, KeepAliveDep
from reference_host.http.grants import ConversationPath
from reference_host.http.streaming import SSE_HEADERS, EventStream
from reference_host.stream.conversation_log import ConversationLog
from reference_host.stream.events import CONNECTED, KEEP_ALIVE

router = APIRouter()

# One event of the follow stream, as OpenAPI 3.1 describes text/event-stream: the chat
# stream's events and `message`, each numbered (`id`).
FOLLOWED_EVENT: dict[str, Any] = {
    "type": "object",
    "required": ["event", "data", "id"],
    "properties": {
        "event": {"enum": ["message", "token", "thinking", "tool", "approval", "done", "error"]},
        "data": {
            "type": "string",
            "contentMediaType": "application/json",
            "contentSchema": {"type": "object"},
        },
        "id": {"type": "string", "pattern": "^[0-9]+$"},
    },
}
FOLLOW_STREAM = {
    "description": "`: connected`, then `id:`/`event:`/`data:` frames: the kept events of the "
    "conversation, then each new one (a turn starts with `message`); never ends by itself",
    "content": {"text/event-stream": {"schema": FOLLOWED_EVENT}},
}


@router.get(
    "/api/conversations/{conversation_id}/events",
    response_class=EventStream,
    responses={200: FOLLOW_STREAM},
)
async def follow_conversation(
    host: HostDep,
    keep_alive: KeepAliveDep,
    conversation_id: str = ConversationPath,
    after: int = Query(0, ge=0, description="send only events numbered above this"),
    last_event_id: str = Header("", alias="Last-Event-ID"),
) -> StreamingResponse:
    start = int(last_event_id) if last_event_id.isdigit() else after
    frames = _frames(host.conversations, conversation_id, start, keep_alive)
    return StreamingResponse(frames, headers=SSE_HEADERS, media_type=None)


async def _frames(
    log: ConversationLog, conversation: str, after: int, keep_alive: float
) -> AsyncIterator[bytes]:
    yield CONNECTED
    while True:
        numbered, changed = log.since(conversation, after)
        if numbered:
            after = numbered[-1][0]
            yield b"".join(f"id: {n}\n".encode() + frame for n, frame in numbered)
            continue
        try:
            async with asyncio.timeout(keep_alive):
                await changed.wait()
        except TimeoutError:
            yield KEEP_ALIVE
