"""A plugin's start gate: one worker start or spec change at a time, spec changes first.

Calls that find no worker fit for them queue here to start one. In the sandbox a worker
serves one conversation's grants, so under many chats nearly every call restarts it, and the
queue can be dozens of starts long. A spec change (upgrade, disable, uninstall) must wait for
the start under way, whose worker it then stops, but never for the starts queued behind it:
it goes before all of them. With a plain FIFO lock a disable waited 35 s behind 50 chats
(issue 35 item 14).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from collections.abc import AsyncIterator


class StartGate:
    """An asyncio lock with two queues: `change()` holders go before every `start()` waiter."""

    def __init__(self) -> None:
        self._held = False
        self._changes: deque[asyncio.Future[None]] = deque()
        self._starts: deque[asyncio.Future[None]] = deque()

    @property
    def waiting_starts(self) -> int:
        """Starts queued behind the holder (diagnostics, and the tests' ordering)."""
        return sum(not future.done() for future in self._starts)

    def start(self) -> contextlib.AbstractAsyncContextManager[None]:
        """Held while a call starts a worker; waits behind queued changes."""
        return self._holding(self._starts)

    def change(self) -> contextlib.AbstractAsyncContextManager[None]:
        """Held while the spec changes; waits for the holder only, not for queued starts."""
        return self._holding(self._changes)

    @contextlib.asynccontextmanager
    async def _holding(self, queue: deque[asyncio.Future[None]]) -> AsyncIterator[None]:
        """The gate, waited for in queue."""
        await self._acquire(queue)
        try:
            yield
        finally:
            self._release()

    async def _acquire(self, queue: deque[asyncio.Future[None]]) -> None:
        if not self._held:
            self._held = True
            return
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        queue.append(future)
        try:
            await future
        except asyncio.CancelledError:
            if future.done() and not future.cancelled():
                self._release()  # handed the gate, then cancelled: pass it on
            else:
                with contextlib.suppress(ValueError):
                    queue.remove(future)
            raise

    def _release(self) -> None:
        """Hand the gate to the first live waiter, changes first; it stays held meanwhile."""
        for queue in (self._changes, self._starts):
            while queue:
                future = queue.popleft()
                if not future.done():
                    future.set_result(None)
                    return
        self._held = False
