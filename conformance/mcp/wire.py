"""One MCP server process on raw pipes, its frames recorded within a bound.

The SDKs tolerate what the kit must report (a banner on stdout, an id echoed as another type),
so the kit reads the server byte by byte (RawWorker, as for FengYu workers) and keeps the
transcript: what a failing item saves, and what its reproduction replays.

What is kept is bounded per session, as a server may write gigabytes (a 400 MB flood took the
kit to 1.8 GB): the transcript keeps its first and its last TRANSCRIPT_BYTES / 2 and counts
what fell between (transcript.py), one line keeps its first FRAME_BYTES, and what a request
collects meanwhile is capped too. A line nested deeper than plugin_spec/line_depth.py allows,
or running past the 16 MiB frame limit, is refused at the reader, as hosts refuse it: the
server is stopped, the request waiting on it ends at once and `refused` says why.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Literal

from conformance.deadlines import Deadlines
from conformance.fengyu.raw_worker import Line, RawWorker
from conformance.mcp.transcript import Frame, Transcript
from plugin_spec import jsonrpc, mcp
from plugin_spec.framing import MAX_FRAME_BYTES
from plugin_spec.json_types import JsonMapping, JsonObject, JsonValue
from plugin_spec.jsonrpc import METHOD_NOT_FOUND, OMITTED
from plugin_spec.line_depth import MAX_DEPTH
from reference_host.process.launch import WorkerSpec

# What one request keeps of the messages that came while it waited (responses to other ids,
# progress), in bytes of their lines: the transcript has the rest.
MEANWHILE_BYTES = 1 << 20
STRAYS_KEPT = 5  # MCP-STD-001: stray stdout lines kept to be shown; the rest are counted


@dataclass(frozen=True)
class Reply:
    """What came back for one request: its response (None: none came), the messages the
    server sent meanwhile, and whether it waited out the deadline or saw the server exit."""

    response: JsonObject | None
    meanwhile: tuple[JsonObject, ...] = ()
    timed_out: bool = False
    exited: bool = False
    seconds: float = 0.0  # how long it was waited for
    request_id: int | str | None = None  # the request's id, to cancel it after a timeout
    refused: str = ""  # why the kit refused a line unread and stopped the server (Wire.refused)
    not_kept: int = 0  # messages that came meanwhile past MEANWHILE_BYTES
    progressed: int = 0  # progress notifications naming the request's id as their token

    @property
    def working(self) -> bool:
        """Unanswered at the deadline while progress for it kept coming and the server ran:
        work under way, not silence (a client MAY restart its clock at each progress)."""
        return self.response is None and self.timed_out and self.progressed > 0

    @property
    def result(self) -> JsonValue:
        return self.response.get("result") if self.response else None

    @property
    def error(self) -> JsonObject | None:
        error = self.response.get("error") if self.response else None
        return error if isinstance(error, dict) else None

    @property
    def ok(self) -> bool:
        return self.response is not None and "result" in self.response

    @property
    def succeeded(self) -> bool:
        """A tool call's success: a result that is not marked isError."""
        return isinstance(self.result, dict) and self.result.get("isError") is not True

    def describe(self) -> str:
        """How the request ended, for a finding."""
        if self.response is not None:
            return json.dumps(self.response, ensure_ascii=False)[:300]
        if self.refused:
            return f"no response: the server sent {self.refused}; the kit stopped it"
        if self.exited:
            return "no response: the server exited (or closed its stdout)"
        if self.working:
            return (
                f"no response within {self.seconds:g} s, while {self.progressed} progress "
                "notifications for it came"
            )
        return f"no response within {self.seconds:g} s" if self.timed_out else "no response"


@dataclass(frozen=True)
class Shutdown:
    """How the server ended when its stdin was closed: by itself, or by which signal."""

    by: Literal["eof", "sigterm", "sigkill"]
    seconds: float
    code: int | None
    waited: float  # how long it was given to exit by itself (MCP-LIF-004)

    def describe(self) -> str:
        if self.by == "eof":
            return f"exited {self.seconds:.1f} s after stdin EOF (status {self.code})"
        escalation = "SIGTERM" if self.by == "sigterm" else "SIGTERM, then SIGKILL"
        return f"still running {self.waited:g} s after stdin EOF; ended by {escalation}"


@dataclass(eq=False)
class Wire:
    """A started server: send messages, read what it writes, end it as a client does. Equal
    only to itself (a live process), so it keys what the kit notes per session."""

    spec: WorkerSpec
    deadlines: Deadlines
    transcript: Transcript = field(default_factory=Transcript)
    worker: RawWorker = field(init=False)
    started: float = field(init=False)
    era: str | None = None  # the era its session opened in (session.open_session sets it)
    version: str | None = None  # the protocol version that session speaks
    refused: str = ""  # the line the kit refused unread (too deep, too long), named
    refused_depth: int = 0  # how deeply that line nested, when that was why
    received_count: int = 0  # every line read from stdout, kept in the transcript or not
    # MCP-STD-001: the first stdout lines that are not one message, with why, and how many
    # there were (judged as they are read: the transcript may not keep them)
    strays: list[tuple[Frame, str]] = field(default_factory=list)
    stray_count: int = 0
    on_received: Callable[[Frame], None] | None = None  # told each line as it is read
    _next_id: int = 0  # the first request is 1, as the SDK numbers them
    _unread: list[JsonObject] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.started = time.monotonic()
        self.worker = RawWorker(self.spec)

    def next_id(self) -> int:
        self._next_id += 1
        return self._next_id

    def send(self, message: Mapping[str, object]) -> bool:
        """Write one message as a line, compact as the SDK writes it (a server must not tell
        the kit from a host by its spacing); False when the server no longer reads stdin."""
        return self.write_raw(json.dumps(message, ensure_ascii=False, separators=(",", ":")))

    def write_raw(self, text: str) -> bool:
        """Write a line as given (what no SDK would send)."""
        data = text.encode()
        self.transcript.add("sent", self._now(), text, len(data))
        deadline = time.monotonic() + self.deadlines.request
        return bool(self.worker.send([data + b"\n"], deadline))

    @property
    def frames(self) -> list[Frame]:
        """The frames kept (transcript.py): the first and the last of the session."""
        return self.transcript.frames()

    def notify(self, method: str, params: JsonMapping | None = None) -> bool:
        return self.send(jsonrpc.notification(method, OMITTED if params is None else params))

    def request(
        self,
        method: str,
        params: JsonMapping | None = None,
        *,
        request_id: int | str | None = None,
        seconds: float | None = None,
    ) -> Reply:
        """Send a request and read until its response (matched by id value and type),
        the deadline (seconds, or the run's request deadline) or the server's exit."""
        rid = self.start_request(method, params, request_id)
        if rid is None:
            return Reply(None, exited=True)
        return self.await_response(rid, seconds)

    def start_request(
        self, method: str, params: JsonMapping | None = None, request_id: int | str | None = None
    ) -> int | str | None:
        """Send a request without waiting for its answer: its id, or None when the server
        no longer reads stdin."""
        rid = self.next_id() if request_id is None else request_id
        message = jsonrpc.request(rid, method, OMITTED if params is None else params)
        return rid if self.send(message) else None

    def await_response(self, rid: int | str, seconds: float | None = None) -> Reply:
        """Read until the response to rid, the deadline, the server's exit or a line refused
        unread. Of what came meanwhile, the responses and progress notifications are kept
        (what callers read), up to MEANWHILE_BYTES."""
        seconds = self.deadlines.request if seconds is None else seconds
        meanwhile = _Kept()
        progressed = 0
        for message, size in self._messages(time.monotonic() + seconds):
            if _is_response(message) and same_id(message.get("id"), rid):
                kept = tuple(meanwhile.messages)
                return Reply(message, kept, not_kept=meanwhile.dropped, progressed=progressed)
            if _is_response(message) or message.get("method") == mcp.PROGRESS:
                meanwhile.add(message, size)
            progressed += _progress_for(message, rid)
            self._answer_server_request(message)
        self._unread.extend(m for m in meanwhile.messages if _is_response(m))
        ended = not self.alive()
        return Reply(
            None,
            tuple(meanwhile.messages),
            not ended,
            ended,
            seconds=seconds,
            request_id=rid,
            refused=self.refused,
            not_kept=meanwhile.dropped,
            progressed=progressed,
        )

    def quiet(self, seconds: float) -> list[JsonObject]:
        """The messages that arrive within seconds (and any read earlier but not taken), up
        to MEANWHILE_BYTES of them."""
        seen = _Kept(list(self._unread))
        self._unread = []
        for message, size in self._messages(time.monotonic() + seconds):
            seen.add(message, size)
            self._answer_server_request(message)
        return seen.messages

    def alive(self) -> bool:
        """Whether the server can still answer: running, its stdout not ended (a server
        that closed it may take a while to be reaped, more so in the sandbox)."""
        return self.worker.alive() and not self.worker.at_eof

    def close(self) -> Shutdown:
        """End the server as a client does: close stdin, wait, SIGTERM its group, SIGKILL."""
        begun, waited = time.monotonic(), self.deadlines.eof
        code = self.worker.close_stdin(waited)
        if code is not None:
            self._drain()
            return Shutdown("eof", time.monotonic() - begun, code, waited)
        self.worker.process.terminate()
        code = self.worker.exit_code(self.deadlines.term)
        by: Literal["sigterm", "sigkill"] = "sigterm"
        if code is None:
            by = "sigkill"
        self.worker.kill()
        self._drain()
        return Shutdown(by, time.monotonic() - begun, self.worker.process.returncode, waited)

    def kill(self) -> None:
        self.worker.kill()
        self._drain()

    @property
    def stderr(self) -> str:
        return self.worker.stderr

    def received(self) -> list[Frame]:
        """The received frames kept (received_count counts them all)."""
        return [f for f in self.frames if f.direction == "received"]

    def _drain(self) -> None:
        """Record what the server wrote up to its exit."""
        for line in self.worker.rest(self.deadlines.leftover):
            self._record(line)

    def _messages(self, deadline: float) -> Iterator[tuple[JsonObject, int]]:
        """Each message read by the deadline, with its line's size; a line refused unread
        stops the server and the reading."""
        while not self.refused and (line := self.worker.next_line(deadline)) is not None:
            self._record(line)
            if line.too_deep or line.overlong:
                self._refuse(line)
                return
            if line.message is not None:
                yield line.message, line.size

    def _refuse(self, line: Line) -> None:
        """Stop the server over a line no client reads, as hosts do, naming why."""
        if line.too_deep:
            self.refused_depth = line.depth
            self.refused = (
                f"a line nested {line.depth} levels deep (the kit and hosts read at most "
                f"{MAX_DEPTH})"
            )
        else:
            self.refused = f"a line longer than {MAX_FRAME_BYTES} bytes (the 16 MiB frame limit)"
        self.worker.kill()

    def _record(self, line: Line) -> None:
        self.received_count += 1
        cut = line.too_deep or line.overlong  # its text is already its head
        frame = self.transcript.add("received", self._now(), line.text, line.size, cut=cut)
        if not cut and (problem := not_a_message(line.text, line.message)):
            self.stray_count += 1
            if len(self.strays) < STRAYS_KEPT:
                self.strays.append((frame, problem))
        if self.on_received is not None:
            self.on_received(frame)

    def _answer_server_request(self, message: JsonObject) -> None:
        """A request from the server: ping is answered; the kit declares no client
        capability, so anything else is a method it does not have."""
        if "id" not in message or "method" not in message:
            return
        request_id = message["id"]
        if not isinstance(request_id, str | int):
            return  # not an id a response could name
        if message["method"] == mcp.PING:
            self.send(jsonrpc.result(request_id, {}))
        else:
            refusal = "the kit declares no capability"
            self.send(jsonrpc.error(request_id, METHOD_NOT_FOUND, refusal))

    def _now(self) -> float:
        return time.monotonic() - self.started


class _Kept:
    """Messages kept up to MEANWHILE_BYTES of their lines; the rest counted."""

    def __init__(self, messages: list[JsonObject] | None = None) -> None:
        self.messages = messages or []
        self.size = 0
        self.dropped = 0

    def add(self, message: JsonObject, size: int) -> None:
        if self.size + size > MEANWHILE_BYTES:
            self.dropped += 1
            return
        self.size += size
        self.messages.append(message)


def not_a_message(text: str, message: JsonObject | None) -> str:
    """Why a stdout line is not one JSON-RPC message ("" when it is one)."""
    if message is None:
        stripped = text.strip()
        if stripped.startswith("["):
            return "a batch array"
        return "a blank line" if not stripped else "not a JSON object"
    if message.get("jsonrpc") != "2.0":
        return 'no "jsonrpc": "2.0"'
    return ""


def _progress_for(message: JsonObject, rid: int | str) -> int:
    """1 when message is a progress notification whose token is rid (the kit's calls use
    their own id as their token), else 0."""
    params = message.get("params")
    if message.get("method") != mcp.PROGRESS or not isinstance(params, dict):
        return 0
    token = params.get("progressToken")
    return int(type(token) is type(rid) and token == rid)


def _is_response(message: JsonObject) -> bool:
    return "method" not in message and ("result" in message or "error" in message)


def same_id(got: object, sent: object) -> bool:
    """Whether a response answers the request: same value, or the same text (an id echoed
    as another type is still taken as the answer, and MCP-STD-002 reports it)."""
    return got == sent or (got is not None and str(got) == str(sent))
