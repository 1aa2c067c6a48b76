"""What every tools/call of the run did besides answering (MCP-ANN-001, MCP-ANN-002).

The calls session itself is traced (syscall_trace.py, from outside the sandbox, which the
server cannot tell), so each call the run makes, for whichever item, is judged, not one call
made for the purpose. Each launch of the calls session has a trace of its own, and each call
a window in it; what the trace shows is laid at the door of the call that did it, or kept as
unattributed (attribution.py). The verdict needs the trace complete: the calls session is
ended first, once what its calls left asleep has woken (Deadlines.late), and a later item that
calls a tool starts it again, traced too.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from pathlib import Path

from conformance.fengyu.attribution import Unattributed, Window, attribute, still_acting
from conformance.fengyu.syscall_trace import effects_unseen, read_full, strace_program, tracer
from conformance.mcp.server import McpServer
from conformance.mcp.wire import Reply, Wire
from plugin_spec.json_types import ReadOnlyJson

POLL = 0.1  # seconds between two looks at a trace while something a call started sleeps


@dataclass(frozen=True)
class Effect:
    """One thing a call did: its arguments, what (as the finding says it) and the kind of
    the attempt (syscall_trace.Attempt: write, connect or send)."""

    arguments: ReadOnlyJson
    what: str
    kind: str


@dataclass(frozen=True)
class _Call:
    trace: Path
    tool: str
    arguments: ReadOnlyJson
    got: str  # Reply.describe(), shortened
    succeeded: bool


class CallEffects:
    """The traced launches of one server's calls session and the calls made in each."""

    def __init__(self, server: McpServer, late: float) -> None:
        self.server = server
        self.late = late
        self.unseen = effects_unseen()
        self._traces: dict[int, Path] = {}  # by id() of the launch's wire
        self._calls: list[_Call] = []
        self._windows: dict[Path, list[Window[int]]] = {}

    def wrapper(self) -> tuple[tuple[str, ...], Path | None]:
        """The tracer to launch the calls session under, and its trace ((), None: effects
        cannot be seen here)."""
        if self.unseen:
            return (), None
        path = self.server.folder() / f"calls-{len(self._windows)}.trace"
        self._windows[path] = []
        return tracer(strace_program(), path), path

    def launched(self, wire: Wire, trace: Path | None) -> None:
        if trace is not None:
            self._traces[id(wire)] = trace

    def note(
        self, wire: Wire, tool: str, arguments: ReadOnlyJson, began: float, reply: Reply
    ) -> None:
        """A call made on wire, from began until now."""
        trace = self._traces.get(id(wire))
        if trace is None:
            return
        self._calls.append(_Call(trace, tool, arguments, reply.describe()[:80], reply.succeeded))
        index = len(self._calls) - 1
        self._windows[trace].append(Window(index, tool, began, time.time()))

    def called(self, tool: str) -> bool:
        return any(c.tool == tool for c in self._calls)

    def succeeded(self, tool: str) -> bool:
        return any(c.tool == tool and c.succeeded for c in self._calls)

    def wait(self, wire: Wire | None) -> None:
        """Let what the live session's calls left asleep (or daemonised) act, up to `late`
        past its latest call, before the session is ended."""
        trace = self._traces.get(id(wire)) if wire is not None else None
        windows = self._windows.get(trace, []) if trace is not None else []
        if trace is None or not windows:
            return
        horizon = max(w.end for w in windows) + self.late
        seen_as = self.server.spec().seen
        while time.time() < horizon:
            read = read_full(trace, seen_as(self.server.root), (seen_as(self.server.data_dir),))
            if not still_acting(read, windows):
                return
            time.sleep(POLL)

    def judged(self) -> tuple[dict[str, list[Effect]], list[Unattributed]]:
        """Each tool's effects, over every call of the run, and the unattributed ones. Only
        once the traced sessions have ended is this complete."""
        seen_as = self.server.spec().seen
        effects: dict[str, list[Effect]] = {}
        unattributed: list[Unattributed] = []
        for trace, windows in self._windows.items():
            if not windows:
                continue
            read = read_full(trace, seen_as(self.server.root), (seen_as(self.server.data_dir),))
            found = attribute(read, windows, 0.0, math.inf)
            for index in sorted({*found.during, *found.late}):
                call = self._calls[index]
                for attempt in (*found.during.get(index, ()), *found.late.get(index, ())):
                    what = f"{attempt.describe()} ({call.got})"
                    if attempt in found.late.get(index, ()):
                        what = f"{attempt.describe()}, after the call answered ({call.got})"
                    effects.setdefault(call.tool, []).append(
                        Effect(call.arguments, what, attempt.kind)
                    )
            unattributed += found.unattributed
        return effects, unattributed
