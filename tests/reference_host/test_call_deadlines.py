"""One timer for the deadlines of all the calls waiting on a worker
(reference_host/process/call_deadlines.py): the first call past its time is told, answered
calls are forgotten, and a closed set tells nothing."""

from __future__ import annotations

import asyncio

from reference_host.process.call_deadlines import CallDeadlines


async def test_the_first_call_past_its_deadline_is_told_and_answered_ones_are_not() -> None:
    told: list[tuple[str, float]] = []
    deadlines = CallDeadlines(
        asyncio.get_running_loop(), lambda method, seconds: told.append((method, seconds))
    )
    deadlines.add("1", "answered", 0.01)
    deadlines.add("2", "slow", 0.05)
    deadlines.add("3", "later", 30)
    deadlines.remove("1")
    while not told:
        await asyncio.sleep(0.01)
    assert told == [("slow", 0.05)]
    deadlines.close()


async def test_an_earlier_deadline_moves_the_timer_and_close_stops_it() -> None:
    told: list[str] = []
    deadlines = CallDeadlines(
        asyncio.get_running_loop(), lambda method, seconds: told.append(method)
    )
    deadlines.add("1", "long", 30)
    deadlines.add("2", "short", 0.01)
    while not told:
        await asyncio.sleep(0.01)
    assert told == ["short"]
    quiet = CallDeadlines(asyncio.get_running_loop(), lambda method, seconds: told.append(method))
    quiet.add("3", "closed", 0.01)
    quiet.close()
    await asyncio.sleep(0.05)
    assert told == ["short"]
    deadlines.close()
