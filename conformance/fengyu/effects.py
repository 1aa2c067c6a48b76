"""What each tool call did besides answering: files changed, writes and connections
attempted (spec: fengyu-worker.md#effects-on-files).

The worker whose calls are judged runs in the same sandbox as the host's
(reference_host/process/sandbox.py), traced from outside it (syscall_trace.py). There the
only writable places are the worker's data folder, which FengYu lets every tool use, and the
files the kit handed the tool. So every call goes through EffectWatch.observe, which
snapshots the tool's handed files (their bytes included, file_watch.py) before and after it
and notes when it ran; the trace says what was refused anywhere else and every connection
tried. What changed in the handed files after a call's snapshot, before the tool's next call
or until its worker was gone, is laid at that call's door as a late change.

Verdicts wait for the worker's whole process tree to be gone (settle): the kit lets it live
a while after its latest call (Deadlines.linger), as a host's worker would go on living, then
ends it the way a host does. What the trace shows after a call answered is laid at that call's door.
"""

from __future__ import annotations

import bisect
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
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
from conformance.fengyu.syscall_trace import Attempt, read_trace

LOG_LIMIT = 500  # observations kept per tool; a property run makes far fewer calls


@dataclass(frozen=True)
class Observation:
    """One call and what it did: handed files changed, attempts made while it ran, and
    attempts made and handed files changed after it answered (late, late_changes)."""

    outcome: CallOutcome
    changes: tuple[Change, ...]
    start: float
    end: float
    attempts: tuple[Attempt, ...] = ()
    late: tuple[Attempt, ...] = ()
    late_changes: tuple[Change, ...] = ()

    @property
    def connections(self) -> tuple[Attempt, ...]:
        return tuple(a for a in (*self.attempts, *self.late) if a.kind == "connect")


@dataclass
class _Latest:
    """A tool's handed files as its latest observed call (log index) left them."""

    index: int
    area: list[Area]
    skipped: list[Path]
    seen: Snapshot


class EffectWatch:
    """The observed calls of one plugin's traced worker, per tool."""

    def __init__(
        self,
        trace: Path,
        cwd: Path,
        unwatched: str,
        finish: Callable[[], float | None],
        writable: tuple[Path, ...] = (),
    ) -> None:
        """trace: the worker's strace output; cwd: its working folder; writable: the folders
        it may write (its data folder, the handed files); unwatched: why effects
        cannot be seen here ("" when they can); finish: ends the worker, once its linger has
        passed since the latest call, returning when its tree was gone (None when no worker
        was running)."""
        self.trace = trace
        self.cwd = cwd
        self.writable = writable
        self.unwatched = unwatched
        self._finish = finish
        self.log: dict[str, list[Observation]] = {}
        self._unsettled: list[tuple[str, int]] = []
        self._settled_until = 0.0
        self._latest: dict[str, _Latest] = {}

    def observe(
        self,
        tool: str,
        scratch: Path,
        skip: Iterable[Path],
        call: Callable[[], CallOutcome],
    ) -> CallOutcome:
        """Make the call, noting when it ran and what it changed under scratch (the tool's
        handed files) but the skipped folders (its writable grants)."""
        area, skipped = [Area(scratch, "the tool's handed files")], list(skip)
        before = self._snapshot(area, skipped)
        self._since_latest(tool, before, skipped)
        start = time.time()
        outcome = call()
        end = time.time()
        found: list[Change] = []
        after = self._snapshot(area, skipped, found)
        if before is not None and after is not None:
            found += changes(before, after)
        log = self.log.setdefault(tool, [])
        if len(log) < LOG_LIMIT:
            log.append(Observation(outcome, tuple(found), start, end))
            self._unsettled.append((tool, len(log) - 1))
            if after is not None:
                self._latest[tool] = _Latest(len(log) - 1, area, skipped, after)
        return outcome

    def observed(self, tool: str) -> list[Observation]:
        """The tool's observed calls, with all their worker did until it was gone."""
        self.settle()
        return list(self.log.get(tool, ()))

    def settle(self) -> None:
        """End the traced worker and lay each traced attempt since the last settle at the
        door of the call it came during or after."""
        if not self._unsettled:
            return
        gone = self._finish() or time.time()
        for tool, latest in list(self._latest.items()):
            self._since_latest(tool, self._snapshot(latest.area, latest.skipped), latest.skipped)
        pending = sorted(self._unsettled, key=lambda key: self.log[key[0]][key[1]].start)
        starts = [self.log[tool][index].start for tool, index in pending]
        found: dict[tuple[str, int], tuple[list[Attempt], list[Attempt]]] = {}
        for attempt in read_trace(self.trace, self.cwd, self.writable):
            if not self._settled_until < attempt.time <= gone:
                continue
            at = bisect.bisect_right(starts, attempt.time) - 1
            if at < 0:
                continue  # the worker starting, before any call: no tool's doing
            key = pending[at]
            during = attempt.time <= self.log[key[0]][key[1]].end
            found.setdefault(key, ([], []))[0 if during else 1].append(attempt)
        for (tool, index), (while_running, late) in found.items():
            observation = self.log[tool][index]
            self.log[tool][index] = replace(
                observation, attempts=tuple(while_running), late=tuple(late)
            )
        self._unsettled.clear()
        self._settled_until = gone

    def _since_latest(self, tool: str, now: Snapshot | None, skipped: list[Path]) -> None:
        """Lay what changed in the tool's handed files since its latest call's snapshot at
        that call's door, and watch on from now."""
        latest = self._latest.get(tool)
        if latest is None or now is None:
            return
        found = _since(latest.seen, now, latest.area[0].root, skipped)
        latest.seen, latest.skipped = now, skipped
        if found:
            observation = self.log[tool][latest.index]
            late = (*observation.late_changes, *found)
            self.log[tool][latest.index] = replace(observation, late_changes=late)

    def _snapshot(
        self, areas: list[Area], skipped: Iterable[Path] = (), found: list[Change] | None = None
    ) -> Snapshot | None:
        """A snapshot, or None once the area proved too big to watch (unwatched says why).
        After a call (found given), an area that grew past the limit during it is a change of
        its own, so a flood of files cannot hide a write."""
        try:
            return snapshot(areas, skipped)
        except TooManyEntries as exc:
            if found is not None:
                found.append(
                    Change("created", exc.area.root, f"{exc.area.name}: over {exc.limit} entries")
                )
            return None


def _since(earlier: Snapshot, later: Snapshot, scratch: Path, skipped: list[Path]) -> list[Change]:
    """The changes from earlier to later in the folders that were there before: between
    calls the kit itself adds folders next to the handed files (fresh output folders, a
    host's grants), and folders granted writable are not watched."""
    there = {_top(path, scratch) for path in earlier}
    ignored = [str(folder) for folder in skipped]

    def kept(snapshot: Snapshot) -> Snapshot:
        return {
            path: entry
            for path, entry in snapshot.items()
            if _top(path, scratch) in there
            and not any(path == s or path.startswith(s + "/") for s in ignored)
        }

    return changes(kept(earlier), kept(later))


def _top(path: str, scratch: Path) -> str:
    """The first part of path below scratch."""
    return Path(path).relative_to(scratch).parts[0]
