"""Declared resources during a kit run (FY-WRK-020): what the worker's tree went over, and when.

The kit's tool calls go through the reference host's process manager, which watches the
worker's tree as a host does (reference_host/process/limits.py), here four times as often as
FengYu and without ending the worker: the overrun is FY-WRK-020's finding, and the other
items judge the worker as if nothing had happened, so that one defect is reported once.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

from reference_host.process.limits import LimitPolicy, Overrun

KIT_INTERVAL = 0.25  # seconds between samples: FengYu's 1 s would miss short overruns
# The host's bounds are not FY-WRK-020's: the kit's worker runs under their kernel share
# (bounds.py), and the item reports what the manifest declares.
REPORT_ONLY = LimitPolicy(interval=KIT_INTERVAL, enforce=False, bounds=False)
Reporter = Callable[[Overrun, str], None]


T = TypeVar("T")


@dataclass(frozen=True)
class Seen(Generic[T]):
    """One thing the kit saw a worker do (an overrun, a stray stdout line) and where: the
    suite and what it was doing then."""

    what: T
    step: str


class SeenLog(Generic[T]):
    """What one plugin's workers were seen doing in this run, in order (the process manager
    reports from its event loop's thread)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._seen: list[Seen[T]] = []

    def add(self, what: T, step: str) -> None:
        with self._lock:
            self._seen.append(Seen(what, step))

    @property
    def seen(self) -> list[Seen[T]]:
        with self._lock:
            return list(self._seen)


SeenOverrun = Seen[Overrun]
OverrunLog = SeenLog[Overrun]
