"""What each tool call did besides answering: files changed and connections opened
(spec: fengyu-worker.md).

Every call a tool check makes goes through EffectWatch.observe, which snapshots the watched
folders before and after it and collects the connections the recording proxy saw meanwhile.
The FY-EFF checks then judge the log against the tool's declared effect. Watched are the
plugin folder (also the worker's working folder), the kit's HOME for the worker (with the
XDG folders in it) and the tool's own scratch folder with the files handed to it; the worker's
data folder (TMP) is not watched, and neither are folders granted writable to a write tool.

Nothing but the worker writes to the plugin folder or HOME between calls, so what changed
there after a call answered (a write from a background thread, a detached child) is seen at
the next call, or when the FY-EFF items settle the log, and laid at that call's door.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
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
SETTLE_SECONDS = 1.0  # how long after the latest call a verdict waits for its late writes


@dataclass(frozen=True)
class Observation:
    """One call and what it did: during the call, and after it answered (late)."""

    outcome: CallOutcome
    changes: tuple[Change, ...]
    connections: tuple[Connection, ...]
    late: tuple[Change, ...] = ()


@dataclass
class _Last:
    """The latest observed call: whose it was, where in its log, and the shared folders after
    it."""

    tool: str
    index: int
    after: Snapshot | None
    ended: float = field(default_factory=time.monotonic)


class EffectWatch:
    """The watched folders of one plugin's worker and the log of observed calls per tool."""

    def __init__(self, plugin_root: Path, home: Path, recorder: NetRecorder) -> None:
        self.shared = [Area(plugin_root, "the plugin folder", tooling=True), Area(home, "HOME")]
        self.recorder = recorder
        self.log: dict[str, list[Observation]] = {}
        self.unwatched = ""  # why files could not be watched, once an area proved too big
        self._last: _Last | None = None

    def observe(
        self,
        tool: str,
        scratch: Path,
        skip: Iterable[Path],
        call: Callable[[], CallOutcome],
    ) -> CallOutcome:
        """Make the call and log what it changed under the watched folders and scratch (the
        tool's handed files), but the skipped folders, and which connections it opened."""
        own = [Area(scratch, "the tool's handed files")]
        skipped = list(skip)
        before = (self.settle(), self._snapshot(own, skipped))
        start = time.monotonic()
        outcome = call()
        found: list[Change] = []
        after = (self._snapshot(self.shared, (), found), self._snapshot(own, skipped, found))
        for old, new in zip(before, after, strict=True):
            if old is not None and new is not None:
                found += changes(old, new)
        log = self.log.setdefault(tool, [])
        if len(log) < LOG_LIMIT:
            log.append(Observation(outcome, tuple(found), tuple(self.recorder.since(start))))
            self._last = _Last(tool, len(log) - 1, after[0])
        return outcome

    def settle(self) -> Snapshot | None:
        """Lay what changed in the shared folders since the latest call at that call's door;
        returns their snapshot now (None when they are not watched)."""
        now = self._snapshot(self.shared)
        last = self._last
        if now is None or last is None or last.after is None:
            return now
        late = changes(last.after, now)
        last.after = now
        if late:
            log = self.log[last.tool]
            log[last.index] = replace(log[last.index], late=log[last.index].late + tuple(late))
        return now

    def observed(self, tool: str) -> list[Observation]:
        """The tool's observed calls, once what the latest call started had SETTLE_SECONDS
        to write after it answered (waited once, not per verdict)."""
        if self._last is not None:
            time.sleep(max(0.0, self._last.ended + SETTLE_SECONDS - time.monotonic()))
        self.settle()
        return list(self.log.get(tool, ()))

    def _snapshot(
        self, areas: list[Area], skipped: Iterable[Path] = (), found: list[Change] | None = None
    ) -> Snapshot | None:
        """A snapshot, or None once some area proved too big to watch (unwatched says why).
        After a call (found given), an area that grew past the limit during it is a change of
        its own, so a flood of files cannot hide a write."""
        if self.unwatched:
            return None
        try:
            return snapshot(areas, skipped)
        except TooManyEntries as exc:
            self.unwatched = str(exc)
            if found is not None:
                found.append(
                    Change("created", exc.area.root, f"{exc.area.name}: over {exc.limit} entries")
                )
            return None
