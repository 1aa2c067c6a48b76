"""The live sessions the MCP checks judge, each started once per run and shared by the items
that read it: the lifecycle probe (a scripted session from launch to exit), a legacy session
for the 2025-11-25 rules of a dual-era server, a second start (rug pulls), and the session
tool calls go through. Every session's frames can be saved as a JSONL transcript.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

from conformance.deadlines import Deadlines
from conformance.examples_file import ToolExamples
from conformance.findings import NotApplicable, cut, shown
from conformance.mcp.call_effects import CallEffects
from conformance.mcp.refusal import refusal
from conformance.mcp.server import McpServer, McpTool
from conformance.mcp.session import Listing, Opening, Session, open_session
from conformance.mcp.tried import TriedCalls
from conformance.mcp.wire import Reply, Shutdown, Wire
from conformance.search_settings import PropertySettings
from conformance.sources import strings_in
from plugin_spec import mcp
from plugin_spec.json_types import JsonValue, ReadOnlyJson
from plugin_spec.jsonrpc import RequestId
from plugin_spec.secret_search import Match, find

if TYPE_CHECKING:
    from conformance.strategies import GeneratorGap, InputSpace

UNKNOWN_VERSION = "1999-01-01"  # MCP-LIF-002: a version no server knows
UNKNOWN_TOOL = "conformance_no_such_tool"  # MCP-CALL-005: never listed
# MCP-STD-002: the probe's request ids, by kind. A digit-only string is what a server that
# converts ids by their look echoes as a number; no host need send one, so only the probe does.
PROBE_IDS: dict[str, str | int] = {
    "string": "conformance-7",
    "number": 2**31,
    "digit-only string": "7",
}


@dataclass
class Probe:
    """The lifecycle probe: one session from launch to exit, and what each step got."""

    wire: Wire
    opening: Opening
    ids: dict[str, Reply] = field(default_factory=dict)  # by the id's kind (PROBE_IDS)
    after_cancel: Reply | None = None
    shutdown: Shutdown | None = None


@dataclass
class Progress:
    """The progress notifications one call was sent: (token named, progress) in order, and
    whether one came after its response."""

    token: int
    values: list[tuple[JsonValue, JsonValue]] = field(default_factory=list)
    late: bool = False


# How long an exit that follows an answer (a tool that signals its own process group) takes
# to show as the end of the server's stdout: a process's exit, not a server's work.
EXIT_SETTLE = 0.05


@dataclass(frozen=True)
class Called:
    """One call of the run as MCP-SEC-003 reads it later: not its answer (a server may answer
    every call with megabytes, and the run makes hundreds), but how the answer began and the
    secrets the server was given that it holds, each with how it was written."""

    tool: str
    arguments: ReadOnlyJson
    got: str  # Reply.describe()
    leaked: dict[str, Match]  # by the variable's name
    working: bool = False  # still at work, sending progress, when the kit cancelled it
    seconds: float = 0.0  # how long the kit waited for it
    session: int = 0  # which calls session's server process answered it (counted from 1)


class McpServices:
    """One server's sessions for the checks of a run."""

    def __init__(
        self,
        server: McpServer,
        settings: PropertySettings,
        transcripts: Path,
        deadlines: Deadlines,
        examples: ToolExamples | None = None,
    ) -> None:
        """examples: --examples-file, seeding each tool's inputs and making its setup calls
        first in each calls session and again before each tool's search."""
        self.server = server
        self.settings = settings
        self.transcripts = transcripts
        self.deadlines = deadlines
        self._wires: list[Wire] = []
        self._session: Session | None = None
        self._sessions_started = 0  # calls sessions so far: which process answered a call
        # Progress per (wire, token): a token is its request's id, which a restarted session
        # numbers from 1 again (a Wire is hashed by identity, and the run keeps every one).
        self._progress: dict[tuple[Wire, RequestId], Progress] = {}
        self._abandoned: set[tuple[Wire, RequestId]] = set()  # calls timed out and cancelled
        self.unanswered: set[str] = set()  # tools whose invalid arguments got no answer
        self._exercised = False
        self.results: list[Called] = []  # every call of the run
        self._spaces: dict[str, InputSpace | GeneratorGap] = {}  # by the tool's pointer
        self._tried = TriedCalls()  # answers to calls already made, sent once (tried.py)
        self._last_listings: list[tuple[str, Listing]] = []  # MCP-SEC-002 (last_listings)
        self.call_effects = CallEffects(server, deadlines.late)  # MCP-ANN-001, MCP-ANN-002
        self.examples = examples or ToolExamples()
        self.setup_failures: list[str] = []  # setup calls that failed, as a reason names them
        # told of each call sent: tool, success, how it was answered (the run's CallLog)
        self.on_call: Callable[[str, bool, str], None] = lambda tool, ok, answer: None

    def wires(self) -> list[Wire]:
        """Every server process the run's checks started, in order."""
        return list(self._wires)

    def launch(self, wrapper: tuple[str, ...] = ()) -> Wire:
        """The server started once more, as a host restarts it (the same data folder)."""
        wire = Wire(self.server.spec(wrapper), self.deadlines)
        self._wires.append(wire)
        return wire

    def require_session(self) -> None:
        if self.server.era is None:
            raise NotApplicable("no session could be opened (MCP-LIF-001)", ("MCP-LIF-001",))

    @cached_property
    def probe(self) -> Probe:
        """Launch, open as a dual-era client, send ids of both kinds, notifications, a
        cancellation, then close stdin and escalate as a client does."""
        wire = self.launch()
        opening = open_session(wire, self.server.mode)
        probe = Probe(wire, opening)
        if opening.era is None:
            probe.shutdown = wire.close()
            return probe
        session = Session(wire, opening)
        for kind, request_id in PROBE_IDS.items():
            probe.ids[kind] = wire.request(mcp.TOOLS_LIST, session.params(), request_id=request_id)
        wire.notify("notifications/conformance/unknown", {})
        wire.notify(mcp.CANCELLED, {"requestId": "never-sent", "reason": "probe"})
        wire.quiet(self.deadlines.quiet)  # what they made the server write (MCP-STD-003)
        cancelled = wire.start_request(mcp.TOOLS_LIST, session.params())
        wire.notify(mcp.CANCELLED, {"requestId": cancelled, "reason": "the kit cancels it"})
        wire.quiet(self.deadlines.quiet)
        probe.after_cancel = session.request(mcp.TOOLS_LIST)
        probe.shutdown = wire.close()
        return probe

    @cached_property
    def legacy(self) -> Session | None:
        """A 2025-11-25 session of its own, a launch that goes straight to initialize (None:
        the server does not open one); the probe's session has ended by the time it is asked
        for, whichever era the probe spoke."""
        wire = self.launch()
        opening = open_session(wire, "legacy")
        return Session(wire, opening) if opening.era == mcp.LEGACY else None

    def require_legacy(self) -> Session:
        if self.legacy is None:
            raise NotApplicable("the server does not speak 2025-11-25 (initialize failed)")
        return self.legacy

    @cached_property
    def unknown_version(self) -> tuple[Reply, bool]:
        """initialize offering a version no server knows: the reply, and whether the
        server still ran after it."""
        wire = self.launch()
        reply = wire.request(mcp.INITIALIZE, mcp.initialize_params(UNKNOWN_VERSION))
        wire.quiet(self.deadlines.quiet)
        alive = wire.alive()
        wire.kill()
        return reply, alive

    @property
    def session(self) -> Session:
        """The session tool calls and repeated listings go through (the era a dual-era
        client would pick), started again when the server has exited, as a client restarts
        a crashed server: one tool's crash is its own finding, not every later item's."""
        self.require_session()
        if self._session is None or not self._session.wire.alive():
            wrapper, trace = self.call_effects.wrapper()  # traced: every call's effects
            wire = self.launch(wrapper)
            self.call_effects.launched(wire, trace)
            self._session = Session(wire, open_session(wire, self.server.mode))
            self._sessions_started += 1
            self._set_up(self._session)
        return self._session

    def begin_search(self) -> None:
        """Before a tool's search: the examples file's setup calls again, in the running calls
        session, so that each search starts from the state they make, whatever the calls
        before it left (a session started for the search makes them anyway)."""
        if self._session is not None and self._session.wire.alive():
            self._set_up(self._session)

    def _set_up(self, session: Session) -> None:
        """The examples file's setup calls naming this server's tools, in order, made as
        every call is (traced, counted); one that fails is kept for the reasons of the
        items whose tools then stay unexercised."""
        self.setup_failures.clear()
        listed = {t.name for t in self.server.tools if t.name is not None}
        for setup in self.examples.setup_for(listed):
            began = time.time()
            reply = session.call_tool(setup.tool, setup.arguments)
            self.call_effects.note(session.wire, setup.tool, setup.arguments, began, reply)
            self.on_call(setup.tool, reply.succeeded, refusal(reply))
            if not reply.succeeded:
                self.setup_failures.append(
                    f"the setup call {setup.tool} of {self.examples.path} {setup.pointer} "
                    f"failed: {refusal(reply)}"
                )

    @property
    def second_start(self) -> Listing | None:
        """The tools listed by a second start of the server (None: it opened no session)."""
        return self._second_start[0]

    @property
    def unknown_tool(self) -> Reply | None:
        """MCP-CALL-005: the answer to a tools/call of a tool never listed (None: the second
        start opened no session)."""
        return self._second_start[1]

    @cached_property
    def _second_start(self) -> tuple[Listing | None, Reply | None]:
        """A second start, which lists the tools and then calls one it did not list. Not in
        the calls session: a call no host makes would tell the server, before the calls that
        are judged, that it is being checked."""
        wire = self.launch()
        opening = open_session(wire, self.server.mode)
        if opening.era is None:
            wire.kill()
            return None, None
        session = Session(wire, opening)
        listing = session.list_tools()
        reply = session.call_tool(UNKNOWN_TOOL, {})
        wire.kill()
        return listing, reply

    def call(self, tool: str, arguments: ReadOnlyJson) -> Reply:
        """One tools/call in the calls session, following its progress as a host that shows
        progress does (the token is the request's id); the progress it is sent is kept for
        MCP-UTL-004, the reply for MCP-SEC-003. A call this session already answered is not
        sent again: the answer is the first one (tried.py)."""
        session = self.session
        if (tried := self._tried.get(session.wire, tool, arguments)) is not None:
            return tried
        wire = session.wire
        token = session.wire.next_id()
        began = time.time()
        reply = session.call_tool(tool, arguments, progress=token)
        self.call_effects.note(session.wire, tool, arguments, began, reply)
        self.on_call(tool, reply.succeeded, refusal(reply))
        if reply.timed_out:
            # A client cancels what it stopped waiting for; what the server still sends for
            # it answers nothing the kit waits on, so it is not judged late. The kit reads on
            # a moment, so the transcript shows how the server took the cancellation.
            reason = "the kit stopped waiting for it"
            session.wire.notify(mcp.CANCELLED, {"requestId": token, "reason": reason})
            self._abandoned.add((wire, token))
            session.wire.quiet(self.deadlines.quiet)
        progress = Progress(token)
        for message in reply.meanwhile:
            if message.get("method") != mcp.PROGRESS:
                continue
            params = message.get("params") or {}
            sent = params.get("progressToken") if isinstance(params, dict) else None
            value = params.get("progress") if isinstance(params, dict) else None
            hashable = isinstance(sent, str | int) and not isinstance(sent, bool)
            key = (wire, sent) if hashable else None
            if key in self._abandoned and sent != token:
                continue
            if key in self._progress:
                self._progress[key].late = True
            else:
                progress.values.append((sent, value))
        if progress.values:
            self._progress[(wire, token)] = progress
        described, leaks = reply.describe(), self._leaks(reply)
        self.results.append(
            Called(
                tool,
                arguments,
                described,
                leaks,
                reply.working,
                reply.seconds,
                self._sessions_started,
            )
        )
        self._tried.put(session.wire, tool, arguments, reply)
        return reply

    def server_gone(self) -> bool:
        """Whether the calls session's server has exited (without starting it again)."""
        return self._session is not None and not self._session.wire.alive()

    def previous_call(self) -> Called | None:
        """The call before the latest one, if the same server process answered both."""
        current = self.results[-1] if self.results else None
        earlier = [c for c in self.results[:-1] if current and c.session == current.session]
        return earlier[-1] if earlier else None

    def last_call_of(self, tool: str) -> Called | None:
        return next((c for c in reversed(self.results) if c.tool == tool), None)

    def survives_alone(self, tool: str, arguments: ReadOnlyJson) -> bool:
        """Whether a fresh server lives on after this one call (and a quiet moment): the
        way to tell a call that ends the server from one that found it ending."""
        reply = self.call(tool, arguments)
        if reply.exited:
            return False
        return not self.gone_after_quiet()

    def gone_after_quiet(self) -> bool:
        """Whether the calls session's server has exited, after EXIT_SETTLE for an exit that
        follows an answer to show (without starting it again). Not the quiet deadline: this
        runs once per tool, and a server of 46 tools would wait 23 s more."""
        if self._session is not None and self._session.wire.alive():
            self._session.wire.quiet(EXIT_SETTLE)
        return self.server_gone()

    def call_before(self) -> str:
        """The call before the latest one in the same server process, named for a finding
        about that process's exit: a tool that signals its own process group answers first
        and dies a moment later, during the next call ("" when there is none)."""
        before = self.previous_call()
        if before is None:
            return ""
        return (
            f"; the call before it, which may have ended the server instead: {before.tool} "
            f"{shown(before.arguments, 200)} (answered {cut(before.got, 200)})"
        )

    def _leaks(self, reply: Reply) -> dict[str, Match]:
        """The secrets the server was given (McpServer.secrets) that the answer holds: one
        text for the whole answer, so a secret split across two strings is found too."""
        given = self.server.secrets()
        if not given or reply.response is None:
            return {}
        text = "\0".join(text for _, text in strings_in(reply.response))
        found = ((name, find(value, text)) for name, value in given.items())
        return {name: match for name, match in found if match is not None}

    def input_space(self, tool: McpTool) -> InputSpace:
        """The tool's inputs, worked out once for every check of the run (its minimal()
        with them: one search per tool, not one per check); raises GeneratorGap."""
        from conformance.strategies import GeneratorGap, InputSpace

        if tool.pointer not in self._spaces:
            name = tool.name or ""
            try:
                self._spaces[tool.pointer] = InputSpace.of(tool.input_schema).seeded(
                    self.examples.of(name),
                    tool.definition.get("description"),
                    self.examples.pointer(name),
                )
            except GeneratorGap as gap:
                self._spaces[tool.pointer] = gap
        space = self._spaces[tool.pointer]
        if isinstance(space, GeneratorGap):
            raise space.with_traceback(None)
        return space

    def progress_seen(self) -> list[Progress]:
        """The progress every call of the run was sent, after one call of each tool with its
        simplest valid input, made here if no call was made yet."""
        if not self._exercised:
            self._exercised = True
            from conformance.strategies import GeneratorGap

            for tool in self.server.tools:
                if tool.name is None or tool.task_only:
                    continue
                try:
                    arguments = self.input_space(tool).minimal()
                except GeneratorGap:
                    continue
                self.call(tool.name, arguments)
        return [p for p in self._progress.values() if p.values or p.late]

    def call_effects_judged(self) -> CallEffects:
        """Every call's effects complete: the calls session, when running, ended once what
        its calls left asleep has acted (call_effects.py); a later call starts it again."""
        if self._session is not None:
            self.call_effects.wait(self._session.wire)
            self._list_at_end(self._session)
            self._session.wire.close()
            self._session = None
        return self.call_effects

    def last_listings(self) -> list[tuple[str, Listing]]:
        """MCP-SEC-002: the tools as each calls session listed them last, at its end, with
        when (the session still running is listed now): a definition that changes a while
        after the start, not at a call, shows only there."""
        if self._session is not None and self._session.wire.alive():
            self._list_at_end(self._session)
        return list(self._last_listings)

    def _list_at_end(self, session: Session) -> None:
        age = time.monotonic() - session.wire.started
        when = f"at the end of a calls session, {age:.0f} s after its start"
        self._last_listings.append((when, session.list_tools()))

    def save(self, wire: Wire, name: str) -> Path:
        """The wire's frames as JSONL (a header line naming the command, then one line per
        frame): what `plugin-conformance mcp-replay` sends again."""
        path = self.transcripts / self.server.label / f"{name}.jsonl"
        path.parent.mkdir(parents=True, exist_ok=True)
        header = {
            "command": list(self.server.argv),
            "cwd": str(self.server.root),
            "env": sorted(self.server.env),
        }
        entries = wire.transcript.entries()
        lines = [json.dumps(header)] + [json.dumps(e, ensure_ascii=False) for e in entries]
        path.write_text("\n".join(lines) + "\n", "utf-8")
        return path

    def transcript_note(self, wire: Wire, name: str) -> str:
        """Where the wire's transcript is saved and how to replay it; and, when the kit did
        not keep all of it, what it lacks."""
        path = self.save(wire, name)
        cut = wire.transcript.describe_cut()
        note = f"transcript: {path}\nreplay: plugin-conformance mcp-replay {path}"
        return f"{note}\n{cut}" if cut else note

    def close(self) -> None:
        for wire in self._wires:
            wire.kill()
