"""What each tool call did besides answering: files changed, writes and connections
attempted (spec: fengyu-worker.md#effects-on-files).

The worker whose calls are judged runs in the same sandbox as the host's
(reference_host/process/sandbox.py), traced from outside it (syscall_trace.py). There the
only writable places are the worker's data folder, which FengYu lets every tool use, and the
files the kit handed the tool. So every call goes through EffectWatch.observe, which
snapshots the tool's handed files before and after it and notes when it ran; the trace
says what was written or refused anywhere else and every connection tried.

Verdicts wait for the worker's whole process tree to be gone (settle): the kit lets it live
LINGER seconds after its latest call, as a host's worker would go on living, then ends it
the way a host does. What the trace shows after a call answered is laid at that call's door.
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
LINGER = 3.0  # how long the worker lives on after its latest call before it is ended


@dataclass(frozen=True)
class Observation:
    """One call and what it did: handed files changed, attempts made while it ran, and
    attempts made after it answered (late)."""

    outcome: CallOutcome
    changes: tuple[Change, ...]
    start: float
    end: float
    attempts: tuple[Attempt, ...] = ()
    late: tuple[Attempt, ...] = ()

    @property
    def connections(self) -> tuple[Attempt, ...]:
        return tuple(a for a in (*self.attempts, *self.late) if a.kind == "connect")


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
        cannot be seen here ("" when they can); finish: ends the worker, once LINGER has
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
