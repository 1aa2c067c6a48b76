"""The SSE answer of chat and of a workflow run: framing, keep-alives, the pump
(spec: host.md#tool-events-on-the-chat-stream).

Why a StreamingResponse with our own framing rather than sse-starlette's EventSourceResponse:
EventSourceResponse passes bytes through, so `: connected` and our frames could be sent, but
(1) its ping is a fixed timer, not "no event for N seconds", and it is sent on a separate
task outside the event order, so a ping can land after the final `error` frame (between the
last event and the end of the body); (2) it adds `Connection: keep-alive` and defaults to
`Cache-Control: no-store`; (3) importing it monkey-patches uvicorn's `Server.handle_exit`
process-wide and starts a shutdown-watcher task per loop. A dozen lines of our own give the
exact stream of the spec: `: connected` first, `Event.encode()` frames, `: keep-alive` only after N
idle seconds (one generator, so never after the last event), `done`/`error` last.

A client disconnect stops the run: uvicorn (ASGI spec 2.3) makes Starlette's
StreamingResponse listen for `http.disconnect` and cancel the streaming task; the cancel
reaches our generator, which cancels the task running the run (the model call, the
approval wait or the worker call it is in) and closes the run.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import anyio
from starlette.responses import StreamingResponse

from reference_host.http.error_answers import MESSAGE_LIMIT
from reference_host.http.ids import ID_PATTERN
from reference_host.stream import events
from reference_host.stream.events import CONNECTED, KEEP_ALIVE, Event
from reference_host.support.quoting import shortened

DEFAULT_KEEP_ALIVE = 15.0
SSE_HEADERS = {
    "Content-Type": "text/event-stream",
    "Cache-Control": "no-cache",
    "X-Accel-Buffering": "no",
}
TERMINAL = frozenset({"done", "error"})
CLEANUP_SECONDS = 5.0
# How far a run may get ahead of its stream: enough to batch a burst into one write, few
# enough that the first events go out at once and a slow client holds the run back.
PUMP_AHEAD = 16
CONVERSATION_HEADER = {
    "X-Conversation-Id": {
        "description": "the run's conversation: the one sent, or a new `conv_<uuid>`",
        "schema": {"type": "string", "pattern": ID_PATTERN},
    }
}
# One event of the stream, as OpenAPI 3.1 describes text/event-stream: its `schema` is that
# of each event ({event, data, id, retry}); data is one JSON object.
SSE_EVENT = {
    "type": "object",
    "required": ["event", "data"],
    "properties": {
        "event": {"enum": ["token", "thinking", "tool", "approval", "done", "error"]},
        "data": {
            "type": "string",
            "contentMediaType": "application/json",
            "contentSchema": {"type": "object"},
        },
    },
}
EVENT_STREAM: dict[str, Any] = {
    "description": "the run's events (spec: host.md#tool-events-on-the-chat-stream): "
    "`: connected`, then `event:`/`data:` frames, `done` or `error` last",
    "content": {"text/event-stream": {"schema": SSE_EVENT}},
    "headers": CONVERSATION_HEADER,
}


class EventStream(StreamingResponse):
    """The media type of the chat and run answers, for the document (the answer itself sets
    Content-Type exactly, without the charset Starlette would add)."""

    media_type = "text/event-stream"


def stream(run: AsyncIterator[Event], conversation: str, *, keep_alive: float) -> StreamingResponse:
    """The answer streaming run's events, naming its conversation in X-Conversation-Id."""
    return StreamingResponse(
        sse_frames(run, keep_alive=keep_alive),
        headers={**SSE_HEADERS, "X-Conversation-Id": conversation},
        media_type=None,
    )


async def sse_frames(run: AsyncIterator[Event], *, keep_alive: float) -> AsyncIterator[bytes]:
    """The chat stream's bytes for one run: `: connected`, the event frames, keep-alives.

    `done` or `error` ends the stream; an exception in the run becomes a final error
    event, and so does a run that ends without either. Cancelling the consumer (client
    disconnect) cancels the run.

    The run is pumped by its own task into a short queue, and every event already waiting
    is sent in one chunk: a burst of tool events costs one write, not one per event, and
    no timer is set while events are ready.
    """
    yield CONNECTED
    queue: asyncio.Queue[Event] = asyncio.Queue(maxsize=PUMP_AHEAD)
    pump = asyncio.create_task(_pump(run, queue), name="sse run")
    try:
        while True:
            if queue.empty():
                try:
                    async with asyncio.timeout(keep_alive):
                        first = await queue.get()
                except TimeoutError:
                    yield KEEP_ALIVE
                    continue
            else:
                first = queue.get_nowait()
            chunk, ended = _frames(first, queue)
            yield chunk
            if ended:
                return
    finally:
        # Shielded: on a disconnect anyio keeps cancelling this task at every await.
        with anyio.move_on_after(CLEANUP_SECONDS, shield=True):
            pump.cancel()
            await asyncio.wait({pump})


def _frames(first: Event, queue: asyncio.Queue[Event]) -> tuple[bytes, bool]:
    """The frames of first and every event waiting after it, up to a terminal one, and
    whether one was met."""
    frames: list[bytes] = []
    event: Event | None = first
    while event is not None:
        frames.append(event.encode())
        if event.type in TERMINAL:
            return b"".join(frames), True
        event = None if queue.empty() else queue.get_nowait()
    return b"".join(frames), False


async def _pump(run: AsyncIterator[Event], queue: asyncio.Queue[Event]) -> None:
    """Move the run's events into queue and end it with a terminal event, whatever happens;
    closes the run when it ends or when the stream is cancelled."""
    try:
        async for event in run:
            await queue.put(event)
            if event.type in TERMINAL:
                return
        await queue.put(events.error("the run ended without a result"))
    except asyncio.CancelledError:
        task = asyncio.current_task()
        if task is not None and task.cancelling():
            raise  # the stream is gone
        await queue.put(events.error("the run was cancelled"))  # not ours: the run's own
    except Exception as exc:
        text = shortened(str(exc), MESSAGE_LIMIT)
        await queue.put(events.error(f"internal error: {type(exc).__name__}: {text}"))
    finally:
        closer = getattr(run, "aclose", None)
        if closer is not None:
            with contextlib.suppress(Exception):
                await closer()
