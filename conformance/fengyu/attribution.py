"""Whose doing an effect was: each traced attempt laid at the door of one call, or reported
as unattributed, never at the door of a tool that may not have made it.

The kit makes one call at a time, and each call has a window, from its request sent to its
response read. An attempt made in a window is that call's, unless the process or thread that
made it was started by an earlier call of another tool (a thread it left behind, a daemonised
child): then either tool may have made it. An attempt made outside every window (after a
response, before the next request) is the call's that started its doer, when no call of
another tool came between; otherwise, or when its doer has run since the start-up (the main
thread, finishing something after it answered), no call can be named for sure. Those are
unattributed: reported on their own (FY-EFF-004, MCP-ANN-002) with the tools that may have
made them, the likeliest first. What comes before the first call is the start-up's: no
tool's doing. The process tree comes from the trace (Trace.births): a task's origin is the
call in whose window it was started, else its starter's, else the call that answered last
before it started.
"""

from __future__ import annotations

import bisect
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from conformance.fengyu.syscall_trace import Attempt, Trace

Key = TypeVar("Key", bound=Hashable)


@dataclass(frozen=True)
class Window(Generic[Key]):
    """One call: a key the caller knows it by, its tool, and when it ran."""

    key: Key
    tool: str
    start: float
    end: float


@dataclass(frozen=True)
class Unattributed:
    """An attempt no single call can be named for: the tools that may have made it (the
    likeliest first) and why it is not laid at one's door."""

    attempt: Attempt
    suspects: tuple[str, ...]
    why: str

    def describe(self) -> str:
        return f"{self.attempt.describe()} ({self.why})"


@dataclass
class Attribution(Generic[Key]):
    """Each window's attempts made while it ran (during) and after it answered (late), by
    key, and the unattributed ones."""

    during: dict[Key, list[Attempt]] = field(default_factory=dict)
    late: dict[Key, list[Attempt]] = field(default_factory=dict)
    unattributed: list[Unattributed] = field(default_factory=list)


class _Calls(Generic[Key]):
    def __init__(self, windows: Sequence[Window[Key]]) -> None:
        self.windows = sorted(windows, key=lambda w: w.start)
        self.starts = [w.start for w in self.windows]

    def holding(self, at: float) -> Window[Key] | None:
        """The call whose window holds the moment."""
        index = bisect.bisect_right(self.starts, at) - 1
        if index >= 0 and at <= self.windows[index].end:
            return self.windows[index]
        return None

    def before(self, at: float) -> Window[Key] | None:
        """The latest call that answered before the moment."""
        ended = [w for w in self.windows[: bisect.bisect_right(self.starts, at)] if w.end < at]
        return max(ended, key=lambda w: w.end) if ended else None


def attribute(
    trace: Trace, windows: Sequence[Window[Key]], since: float, until: float
) -> Attribution[Key]:
    """The attempts made in (since, until] laid at their calls' doors."""
    calls = _Calls(windows)
    origins: dict[int, Window[Key] | None] = {}

    def origin(task: int, depth: int = 0) -> Window[Key] | None:
        if task not in origins:
            born = trace.births.get(task)
            found: Window[Key] | None = None
            if born is not None and depth < 64:
                starter, at = born
                found = calls.holding(at) or origin(starter, depth + 1) or calls.before(at)
            origins[task] = found
        return origins[task]

    found: Attribution[Key] = Attribution()
    for attempt in trace.attempts:
        if not since < attempt.time <= until:
            continue
        started = origin(attempt.task)
        window = calls.holding(attempt.time)
        if window is not None:
            if started is None or started.tool == window.tool:
                found.during.setdefault(window.key, []).append(attempt)
            else:
                found.unattributed.append(
                    Unattributed(
                        attempt,
                        (started.tool, window.tool),
                        f"during a call of {window.tool!r}, by a process or thread a call of "
                        f"{started.tool!r} started",
                    )
                )
            continue
        before = calls.before(attempt.time)
        if before is None:
            continue  # the worker starting, before any call: no tool's doing
        if started is not None and started.tool == before.tool:
            found.late.setdefault(started.key, []).append(attempt)
        elif started is not None:
            found.unattributed.append(
                Unattributed(
                    attempt,
                    (started.tool, before.tool),
                    f"after a call of {before.tool!r} answered, by a process or thread a call "
                    f"of {started.tool!r} started",
                )
            )
        else:
            found.unattributed.append(
                Unattributed(
                    attempt,
                    (before.tool,),
                    f"after a call of {before.tool!r} answered, by a process or thread running "
                    "since the start (no call is running then to lay it at)",
                )
            )
    return found


def still_acting(trace: Trace, windows: Sequence[Window[Key]]) -> bool:
    """Whether a process or thread a call started is still asleep (a sleep it will wake
    from to act) or is a daemon (a session of its own) that has not ended: the trace is not
    finished yet. Threads a call started and left waiting for work (a pool) do not count,
    nor does the sandbox's init (a session of its own from the worker's start, which a
    worker started with its first call makes look started by it)."""
    if not windows:
        return False
    first = min(w.start for w in windows)
    called = {task for task, (_, at) in trace.births.items() if at >= first}
    waiting = (trace.asleep | trace.daemons) - trace.ended - trace.inits
    return bool(called & waiting)
