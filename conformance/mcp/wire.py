"""One MCP server process on raw pipes, every frame it exchanged recorded.

The SDKs tolerate what the kit must report (a banner on stdout, an id echoed as another type),
so the kit reads the server byte by byte (RawWorker, as for FengYu workers) and keeps the
transcript: what a failing item saves, and what its reproduction replays.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Literal

from conformance.deadlines import Deadlines
from conformance.fengyu.raw_worker import Line, RawWorker
from plugin_spec import mcp
from plugin_spec.jsonrpc import METHOD_NOT_FOUND
from reference_host.process.launch import WorkerSpec

Direction = Literal["sent", "received"]


@dataclass(frozen=True)
class Frame:
    """One line on the wire: who wrote it, when (seconds since launch), its text and, when
    it is a JSON object, the object."""

    direction: Direction
    at: float
    text: str
    message: dict[str, Any] | None

    def to_json(self) -> dict[str, Any]:
        return {"dir": self.direction, "at": round(self.at, 4), "line": self.text}


@dataclass(frozen=True)
class Reply:
    """What came back for one request: its response (None: none came), the messages the
    server sent meanwhile, and whether it waited out the deadline or saw the server exit."""

    response: dict[str, Any] | None
    meanwhile: tuple[dict[str, Any], ...] = ()
    timed_out: bool = False
    exited: bool = False
    seconds: float = 0.0  # how long it was waited for
    request_id: int | str | None = None  # the request's id, to cancel it after a timeout

    @property
    def result(self) -> Any:
        return self.response.get("result") if self.response else None

    @property
    def error(self) -> dict[str, Any] | None:
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
        if self.exited:
            return "no response: the server exited (or closed its stdout)"
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


@dataclass
class Wire:
    """A started server: send messages, read what it writes, end it as a client does."""

    spec: WorkerSpec
    deadlines: Deadlines
    frames: list[Frame] = field(default_factory=list)
    worker: RawWorker = field(init=False)
    started: float = field(init=False)
    era: str | None = None  # the era its session opened in (session.open_session sets it)
    version: str | None = None  # the protocol version that session speaks
    _next_id: int = 0  # the first request is 1, as the SDK numbers them
    _unread: list[dict[str, Any]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.started = time.monotonic()
        self.worker = RawWorker(self.spec)

    def next_id(self) -> int:
        self._next_id += 1
        return self._next_id

    def send(self, message: Any) -> bool:
        """Write one message as a line, compact as the SDK writes it (a server must not tell
        the kit from a host by its spacing); False when the server no longer reads stdin."""
        text = json.dumps(message, ensure_ascii=False, separators=(",", ":"))
        self.frames.append(Frame("sent", self._now(), text, message))
        deadline = time.monotonic() + self.deadlines.request
        return bool(self.worker.send([text.encode() + b"\n"], deadline))

    def write_raw(self, text: str) -> bool:
        """Write a line as given (what no SDK would send)."""
        self.frames.append(Frame("sent", self._now(), text, None))
        deadline = time.monotonic() + self.deadlines.request
        return bool(self.worker.send([text.encode() + b"\n"], deadline))

    def notify(self, method: str, params: dict[str, Any] | None = None) -> bool:
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        return self.send(message)

    def request(
        self,
        method: str,
        params: dict[str, Any] | None = None,
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
        self, method: str, params: dict[str, Any] | None = None, request_id: int | str | None = None
    ) -> int | str | None:
        """Send a request without waiting for its answer: its id, or None when the server
        no longer reads stdin."""
        rid = self.next_id() if request_id is None else request_id
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": rid, "method": method}
        if params is not None:
            message["params"] = params
        return rid if self.send(message) else None

    def await_response(self, rid: int | str, seconds: float | None = None) -> Reply:
        seconds = self.deadlines.request if seconds is None else seconds
        meanwhile: list[dict[str, Any]] = []
        for message in self._messages(time.monotonic() + seconds):
            if _is_response(message) and _same_id(message.get("id"), rid):
                return Reply(message, tuple(meanwhile))
            meanwhile.append(message)
            self._answer_server_request(message)
        self._unread.extend(m for m in meanwhile if _is_response(m))
        ended = not self.alive()
        return Reply(None, tuple(meanwhile), not ended, ended, seconds=seconds, request_id=rid)

    def quiet(self, seconds: float) -> list[dict[str, Any]]:
        """Every message that arrives within seconds (and any read earlier but not taken)."""
        seen, self._unread = self._unread, []
        for message in self._messages(time.monotonic() + seconds):
            seen.append(message)
            self._answer_server_request(message)
        return seen

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
        return [f for f in self.frames if f.direction == "received"]

    def _drain(self) -> None:
        """Record what the server wrote up to its exit."""
        for line in self.worker.rest(self.deadlines.leftover):
            self._record(line)

    def _messages(self, deadline: float) -> Iterator[dict[str, Any]]:
        while (line := self.worker.next_line(deadline)) is not None:
            self._record(line)
            if line.message is not None:
                yield line.message

    def _record(self, line: Line) -> None:
        self.frames.append(Frame("received", self._now(), line.text, line.message))

    def _answer_server_request(self, message: dict[str, Any]) -> None:
        """A request from the server: ping is answered; the kit declares no client
        capability, so anything else is a method it does not have."""
        if "id" not in message or "method" not in message:
            return
        if message["method"] == mcp.PING:
            self.send({"jsonrpc": "2.0", "id": message["id"], "result": {}})
        else:
            error = {"code": METHOD_NOT_FOUND, "message": "the kit declares no capability"}
            self.send({"jsonrpc": "2.0", "id": message["id"], "error": error})

    def _now(self) -> float:
        return time.monotonic() - self.started


def _is_response(message: dict[str, Any]) -> bool:
    return "method" not in message and ("result" in message or "error" in message)


def _same_id(got: Any, sent: int | str) -> bool:
    """Whether a response answers the request: same value, or the same text (an id echoed
    as another type is still taken as the answer, and MCP-STD-002 reports it)."""
    return got == sent or (got is not None and str(got) == str(sent))
