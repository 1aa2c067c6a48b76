"""The deadlines of the calls waiting on one worker, behind one timer.

A call's timeout used to be an `asyncio.timeout` of its own: a timer pushed on the event
loop's heap and cancelled again for every call, the largest part of what the host's call path
cost above a bare client, and more with many calls in flight (a heap of cancelled timers).
Here each call only notes its deadline; one timer, set for the earliest, looks when it fires
and sets itself for the next. Answered calls leave their note behind and cost nothing more.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

Expire = Callable[[str, float], None]  # told (method, seconds) of the first call past its time


class CallDeadlines:
    """Calls by request id with the loop time they must be answered by."""

    def __init__(self, loop: asyncio.AbstractEventLoop, expire: Expire) -> None:
        self._loop = loop
        self._expire = expire
        self._waiting: dict[str, tuple[float, str, float]] = {}
        self._timer: asyncio.TimerHandle | None = None
        self._timer_at = 0.0

    def add(self, request_id: str, method: str, seconds: float) -> None:
        deadline = self._loop.time() + seconds
        self._waiting[request_id] = (deadline, method, seconds)
        if self._timer is None or deadline < self._timer_at:
            self._arm(deadline)

    def remove(self, request_id: str) -> None:
        self._waiting.pop(request_id, None)

    def close(self) -> None:
        """No call waits any more: the timer is cancelled."""
        self._waiting.clear()
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _arm(self, deadline: float) -> None:
        if self._timer is not None:
            self._timer.cancel()
        self._timer, self._timer_at = self._loop.call_at(deadline, self._check), deadline

    def _check(self) -> None:
        self._timer = None
        if not self._waiting:
            return
        now = self._loop.time()
        for deadline, method, seconds in self._waiting.values():
            if deadline <= now:
                self._expire(method, seconds)
                return
        self._arm(min(deadline for deadline, _, _ in self._waiting.values()))
