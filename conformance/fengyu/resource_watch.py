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

from reference_host.process.limits import LimitPolicy, Overrun

KIT_INTERVAL = 0.25  # seconds between samples: FengYu's 1 s would miss short overruns
REPORT_ONLY = LimitPolicy(interval=KIT_INTERVAL, enforce=False)
Reporter = Callable[[Overrun, str], None]


@dataclass(frozen=True)
class SeenOverrun:
    """One overrun and what the kit was doing when a sample saw it."""

    overrun: Overrun
    step: str


class OverrunLog:
    """The overruns of one plugin's workers in this run, in the order they were seen (the
    process manager reports them from its event loop's thread)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._seen: list[SeenOverrun] = []
        self.suite = "tools suite"  # who calls the worker now; FY-WRK-020 says when it does

    def reporter(self) -> Reporter:
        """What a harness calls with each overrun and the call it was making."""

        def report(overrun: Overrun, doing: str) -> None:
            with self._lock:
                self._seen.append(SeenOverrun(overrun, f"{self.suite}, {doing}"))

        return report

    @property
    def seen(self) -> list[SeenOverrun]:
        with self._lock:
            return list(self._seen)
