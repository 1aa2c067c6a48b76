"""The start gate of a plugin's worker: one holder at a time, spec changes before queued
starts, and a waiter that leaves never keeps the gate (reference_host/process/start_gate.py).
Only the order of entries is checked."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager

from reference_host.process.start_gate import StartGate

Holding = Callable[[], AbstractAsyncContextManager[None]]


async def enter(hold: Holding, name: str, order: list[str], leave: asyncio.Event) -> None:
    async with hold():
        order.append(name)
        await leave.wait()


async def settle() -> None:
    """Let every ready task run until it waits."""
    for _ in range(5):
        await asyncio.sleep(0)


async def test_a_change_goes_before_the_starts_queued_ahead_of_it() -> None:
    gate, order, leave = StartGate(), [], asyncio.Event()
    tasks = [asyncio.create_task(enter(gate.start, "start-0", order, leave))]
    await settle()
    tasks += [asyncio.create_task(enter(gate.start, f"start-{n}", order, leave)) for n in (1, 2)]
    await settle()
    tasks.append(asyncio.create_task(enter(gate.change, "change", order, leave)))
    await settle()
    assert order == ["start-0"] and gate.waiting_starts == 2
    leave.set()
    await asyncio.gather(*tasks)
    assert order == ["start-0", "change", "start-1", "start-2"]


async def test_a_waiter_that_leaves_does_not_keep_the_gate() -> None:
    gate, order, leave = StartGate(), [], asyncio.Event()
    holder = asyncio.create_task(enter(gate.start, "holder", order, leave))
    await settle()
    gone = asyncio.create_task(enter(gate.change, "gone", order, leave))
    after = asyncio.create_task(enter(gate.start, "after", order, leave))
    await settle()
    gone.cancel()
    await settle()
    leave.set()
    await asyncio.gather(holder, after)
    assert gone.cancelled() and order == ["holder", "after"]


async def test_a_waiter_cancelled_as_it_is_handed_the_gate_passes_it_on() -> None:
    gate, order = StartGate(), []

    async def held() -> AsyncIterator[None]:
        async with gate.start():
            yield

    first = held()
    await anext(first)  # the gate is held
    handed = asyncio.create_task(enter(gate.change, "handed", order, asyncio.Event()))
    after = asyncio.create_task(enter(gate.start, "after", order, asyncio.Event()))
    await settle()
    await anext(first, None)  # released: handed to the change, which has not run yet
    handed.cancel()
    await settle()
    assert order == ["after"] and gate.waiting_starts == 0
    after.cancel()
    await asyncio.gather(handed, after, return_exceptions=True)
    async with gate.change():  # free again
        order.append("free")
    assert order == ["after", "free"]
