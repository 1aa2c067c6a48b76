"""What each tool call did besides answering: files changed and connections opened (SPEC S1).

Every call a tool check makes goes through EffectWatch.observe, which snapshots the watched
folders before and after it and collects the connections the recording proxy saw meanwhile.
The FY-EFF checks then judge the log against the tool's declared effect. Watched are the
plugin folder (also the worker's working folder), the kit's HOME for the worker (with the
XDG folders in it) and the tool's own scratch folder with the files handed to it; the worker's
data folder (TMP) is not watched, and neither are folders granted writable to a write tool.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from conformance.fengyu.file_watch import (
    Area,
    Change,
    Snapshot,
    TooManyEntries,
    changes,
    snapshot,
)
from conformance.fengyu.harness import CallOutcome
from conformance.fengyu.net_recorder import Connection, NetRecorder

LOG_LIMIT = 500  # observations kept per tool; a property run makes far fewer calls


@dataclass(frozen=True)
class Observation:
    """One call and what it did."""

    outcome: CallOutcome
    changes: tuple[Change, ...]
    connections: tuple[Connection, ...]

    @property
    def succeeded(self) -> bool:
        """A result that does not say success false."""
        value = self.outcome.value
        return self.outcome.kind == "result" and not (
            isinstance(value, dict) and value.get("success") is False
        )


class EffectWatch:
    """The watched folders of one plugin's worker and the log of observed calls per tool."""

    def __init__(self, plugin_root: Path, home: Path, recorder: NetRecorder) -> None:
        self.areas = [Area(plugin_root, "the plugin folder"), Area(home, "HOME")]
        self.recorder = recorder
        self.log: dict[str, list[Observation]] = {}
        self.unwatched = ""  # why files could not be watched, once an area proved too big

    def observe(
        self,
        tool: str,
        scratch: Path,
        skip: Iterable[Path],
        call: Callable[[], CallOutcome],
    ) -> CallOutcome:
        """Make the call and log what it changed under the watched folders and scratch (the
        tool's handed files), but the skipped folders, and which connections it opened."""
        areas = [*self.areas, Area(scratch, "the tool's handed files")]
        skipped = list(skip)
        start = time.monotonic()
        before = self._snapshot(areas, skipped)
        outcome = call()
        after = self._snapshot(areas, skipped)
        found = changes(before, after) if before is not None and after is not None else []
        return self._log(tool, outcome, found, start)

    def _snapshot(self, areas: list[Area], skipped: list[Path]) -> Snapshot | None:
        """A snapshot, or None once some area proved too big to watch (unwatched says why)."""
        if self.unwatched:
            return None
        try:
            return snapshot(areas, skipped)
        except TooManyEntries as exc:
            self.unwatched = str(exc)
            return None

    def _log(
        self, tool: str, outcome: CallOutcome, found: list[Change], start: float
    ) -> CallOutcome:
        log = self.log.setdefault(tool, [])
        if len(log) < LOG_LIMIT:
            log.append(Observation(outcome, tuple(found), tuple(self.recorder.since(start))))
        return outcome

    def observed(self, tool: str) -> list[Observation]:
        return list(self.log.get(tool, ()))
