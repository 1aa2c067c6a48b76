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
a while after its latest call (Deadlines.linger), as a host's worker would go on living, and
longer while a process or thread a call started is asleep or daemonised (up to
Deadlines.late), then ends it the way a host does. Each traced attempt is laid at the door of
the call that made it, or kept as unattributed (attribution.py): never at the door of a tool
whose call merely happened to be running.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from pathlib import Path

from conformance.fengyu.attribution import Unattributed, Window, attribute, still_acting
from conformance.fengyu.file_watch import (
    Area,
    Change,
    Snapshot,
    TooManyEntries,
    changes,
    snapshot,
)
from conformance.fengyu.harness import CallOutcome
from conformance.fengyu.syscall_trace import NET_KINDS, Attempt, read_full

LOG_LIMIT = 500  # observations kept per tool; a property run makes far fewer calls
POLL = 0.1  # seconds between two looks at the trace while something a call started sleeps


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
        """The connections and sends the call made, while it ran or after."""
        return tuple(a for a in (*self.attempts, *self.late) if a.kind in NET_KINDS)


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
        late: float = 0.0,
    ) -> None:
        """trace: the worker's strace output; cwd: its working folder; writable: the folders
        it may write (its data folder, the handed files); unwatched: why effects
        cannot be seen here ("" when they can); finish: ends the worker, once its linger has
        passed since the latest call, returning when its tree was gone (None when no worker
        was running); late: how long past that the kit waits while a process or thread a call
        started is asleep or daemonised (Deadlines.late)."""
        self.trace = trace
        self.late = late
        self.unattributed: list[Unattributed] = []
        # Every call the harness made (observed or not: a reproduction, a cancellation) and
        # the tool of each method, so that no call's effect is laid at another's door.
        self.calls: list[tuple[float, float, CallOutcome]] = []
        self.tools: dict[str, str] = {}
        self._calls_settled = 0
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
        door of the call that made it, or keep it as unattributed."""
        if not self._unsettled and len(self.calls) == self._calls_settled:
            return
        windows = self._windows()
        self._wait_for_sleepers(windows)
        gone = self._finish() or time.time()
        for tool, latest in list(self._latest.items()):
            self._since_latest(tool, self._snapshot(latest.area, latest.skipped), latest.skipped)
        trace = read_full(self.trace, self.cwd, self.writable)
        found = attribute(trace, windows, self._settled_until, gone)
        for key in {*found.during, *found.late}:
            tool, index = key
            if index < 0:  # a call no check observed: its own entry in the log
                began, ended, outcome = self.calls[-1 - index]
                self.log.setdefault(tool, []).append(Observation(outcome, (), began, ended))
                index = len(self.log[tool]) - 1
            observation = self.log[tool][index]
            self.log[tool][index] = replace(
                observation,
                attempts=(*observation.attempts, *found.during.get(key, ())),
                late=(*observation.late, *found.late.get(key, ())),
            )
        self.unattributed += found.unattributed
        self._unsettled.clear()
        self._settled_until = gone
        self._calls_settled = len(self.calls)

    def _windows(self) -> list[Window[tuple[str, int]]]:
        """Each observed call, and each other call of the harness (keyed by a negative
        index into calls), as attribution.py reads them."""
        observed = [
            Window((tool, index), tool, observation.start, observation.end)
            for tool, log in self.log.items()
            for index, observation in enumerate(log)
        ]
        others = [
            Window((self.tools.get(outcome.request["method"], ""), -1 - index), "", began, ended)
            for index, (began, ended, outcome) in enumerate(self.calls)
            if not any(w.start <= began and ended <= w.end for w in observed)
        ]
        return observed + [replace(w, tool=w.key[0]) for w in others if w.key[0]]

    def _wait_for_sleepers(self, windows: list[Window[tuple[str, int]]]) -> None:
        """Let a process or thread a call started finish what it sleeps before (a write 2.5 s
        after the call answered), up to `late` after the latest call: only then is the trace
        complete. A worker whose calls left nothing asleep is not waited on."""
        if not windows:
            return
        horizon = max(w.end for w in windows) + self.late
        while time.time() < horizon:
            if not still_acting(read_full(self.trace, self.cwd, self.writable), windows):
                return
            time.sleep(POLL)

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
