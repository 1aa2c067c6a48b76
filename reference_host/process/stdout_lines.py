"""A worker's stdout cut into lines in the pipe's own callback, each handed on at once.

The host reads one JSON-RPC response per line. Reading them through a StreamReader and a
reader task cost every call an extra turn of the event loop (the pipe wakes the task, the
task wakes the caller) and a third of the host's CPU per small call; here the pipe's data
callback cuts the lines and hands each to its consumer directly, so the reply wakes the
caller in the same turn. A line longer than the frame limit stops the delivery for good
(the consumer kills the worker); lines that come before a consumer is attached wait for it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

LineSink = Callable[[bytes], None]


class StdoutLines:
    """Newline-ended lines from pipe data; `closed` resolves at EOF or at the first line
    over limit (then `overrun` is True), after every line before it was handed on."""

    def __init__(self, limit: int, loop: asyncio.AbstractEventLoop) -> None:
        self._limit = limit
        self._partial: list[bytes] = []  # the pieces of a line begun, joined once it ends
        self._held = 0  # their bytes
        self._sink: LineSink | None = None
        self._early: list[bytes] = []
        self.overrun = False
        self.closed: asyncio.Future[None] = loop.create_future()

    def attach(self, sink: LineSink) -> None:
        """Hand every line to sink from now on, first those that came before."""
        self._sink = sink
        early, self._early = self._early, []
        for line in early:
            sink(line)

    def feed(self, data: bytes) -> None:
        if self.closed.done():
            return
        end = data.find(b"\n")
        if end < 0:
            self._keep(data)
            return
        if self._partial:
            self._partial.append(data[: end + 1])
            first = b"".join(self._partial)
            self._partial, self._held = [], 0
        else:
            first = data if end + 1 == len(data) else data[: end + 1]
        if not self._deliver(first):
            return
        start = end + 1
        while (end := data.find(b"\n", start)) >= 0:
            if not self._deliver(data[start : end + 1]):
                return
            start = end + 1
        if start < len(data):
            self._keep(data[start:])

    def feed_eof(self) -> None:
        """The pipe is closed: a last line without its newline is handed on too."""
        if self.closed.done():
            return
        rest = b"".join(self._partial)
        self._partial, self._held = [], 0
        if rest.strip():
            self._deliver(rest)
        if not self.closed.done():
            self.closed.set_result(None)

    def _keep(self, data: bytes) -> None:
        """Hold the start of a line; one that outgrows the limit ends the delivery."""
        self._partial.append(data)
        self._held += len(data)
        if self._held > self._limit:
            self._stop()

    def _deliver(self, line: bytes) -> bool:
        if len(line) > self._limit:
            self._stop()
            return False
        if self._sink is None:
            self._early.append(line)
        else:
            self._sink(line)
        return True

    def _stop(self) -> None:
        self.overrun = True
        self._partial, self._held = [], 0
        self.closed.set_result(None)
