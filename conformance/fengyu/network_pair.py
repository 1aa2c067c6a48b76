"""Two fresh copies of a worker, one with the network and one without, for FY-EFF-003.

Given the same calls in the same order, they hold the same state, so a call that succeeds
in the first and fails in the second failed for want of network. Where strace can trace
(net_trace), the copy without network is traced too, so an attempt that fails quietly is
seen with its target.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from conformance.fengyu.harness import CallOutcome, ToolHarness
from conformance.fengyu.net_trace import attempts

OFFLINE_RETRY_PAUSE = 1.0
"""Seconds the offline copy gets before a failed call is tried again."""


@dataclass(frozen=True)
class PairedCall:
    """One call made to both copies, and the connection attempts traced meanwhile."""

    control: CallOutcome
    offline: CallOutcome
    attempts: tuple[str, ...]


class NetworkPair:
    def __init__(self, control: ToolHarness, offline: ToolHarness, trace: Path | None) -> None:
        """trace: the file strace writes the offline copy's calls to (None: not traced)."""
        self.control, self.offline, self.trace = control, offline, trace
        self._read = 0

    @property
    def traced(self) -> bool:
        return self.trace is not None

    def call(
        self, method: str, params: Any, timeout: float, fresh: Callable[[Any], Any]
    ) -> PairedCall:
        """The same call to both copies; fresh(params) gives each copy its own writable
        folders. What a copy does while it starts is not the call's doing."""
        for harness in (self.control, self.offline):
            harness.warm()
        self._new_attempts()
        control = self.control.call(method, fresh(params), timeout)
        offline = self.offline.call(method, fresh(params), timeout)
        if control.succeeded and not offline.succeeded:
            # The offline copy runs each call just after the control copy, so work that an
            # earlier call started (a job) may not have finished there yet: one more try,
            # after a pause, tells that from a call that needs the network.
            time.sleep(OFFLINE_RETRY_PAUSE)
            offline = self.offline.call(method, fresh(params), timeout)
        return PairedCall(control, offline, tuple(self._new_attempts()))

    def _new_attempts(self) -> list[str]:
        if self.trace is None:
            return []
        try:
            with self.trace.open("rb") as file:
                file.seek(self._read)
                text = file.read()
        except OSError:
            return []
        self._read += len(text)
        return attempts(text.decode("utf-8", "replace"))

    def close(self) -> None:
        self.control.close()
        self.offline.close()
