"""The overall time limit of a chat turn (spec: host.md#limits).

Without it a turn is bounded only by its parts: 64 calls of 20 s each is some 21 minutes, and
a model that streams text forever never ends its turn at all. The limit runs from the start of
the turn and covers everything in it: the model's streams, approval waits, tool calls.

The run's own work is what gets cut: the wait for its next event runs under the deadline, so
when time is up the cancel lands where the run waits (the model's stream, an approval, a
worker call, which then gets `$/cancelRequest` as when its caller leaves), never in the code
that consumes an event. The turn then ends with an `error` naming the limit and how long it ran.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, AsyncIterator

from reference_host.stream import events
from reference_host.stream.events import Event

# What a turn gets unless HostConfig.turn_time_limit (--turn-time-limit) says otherwise.
DEFAULT_TURN_TIME_LIMIT = 600.0
TERMINAL = frozenset({"done", "error"})


async def within_time_limit(run: AsyncGenerator[Event, None], limit: float) -> AsyncIterator[Event]:
    """run's events until it ends or limit seconds have passed; then an `error` saying so,
    with run closed (what it was waiting for cancelled)."""
    loop = asyncio.get_running_loop()
    started = loop.time()
    deadline = started + limit
    try:
        while loop.time() < deadline:
            timer = asyncio.timeout_at(deadline)
            try:
                async with timer:
                    event = await anext(run)
            except StopAsyncIteration:
                return
            except TimeoutError:
                if not timer.expired():
                    raise
                break
            if timer.expired():
                break  # the run took the cancel in and went on: what it gave is too late
            yield event
            if event.type in TERMINAL:
                return
    finally:
        await run.aclose()
    ran = loop.time() - started
    yield events.error(
        f"the turn reached its time limit of {limit:g} s and was stopped after {ran:.1f} s; "
        "its unfinished tool calls were cancelled"
    )
