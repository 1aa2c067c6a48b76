"""The protocol probe: one scripted conversation with a worker, read by many checks.

Each exchange writes some frames and then a sentinel request for a method no worker can
declare; everything the worker prints before the sentinel's answer belongs to the exchange.
So "no reply to a notification" is seen without waiting for silence, and a worker that
crashes or hangs in one exchange is restarted for the next, keeping checks independent.
Answers are matched by id, not by order, as FengYu matches them: JSON-RPC lets a worker
answer in any order (FengYu's Go SDK answers each request from its own goroutine), so a step
that is still missing an expected reply when the sentinel's comes reads on for a short grace,
and a reply that comes later still, with the id of an earlier step, is put back with it.
A worker that does not answer the first exchange at all ends the probe there: every later
step would only wait out its own timeout on a fresh copy of the same dead worker.
Stdout is read to its end: what a worker writes after the last exchange, at its exit (an
unflushed banner) or before it was killed, is kept with the step it followed (FY-WRK-007).
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Any

from conformance.deadlines import Deadlines
from conformance.fengyu.raw_worker import Line, LogLines, RawWorker
from conformance.findings import cut
from plugin_spec import jsonrpc
from plugin_spec.fengyu_runtime import (
    CANCEL_METHOD,
    DEFAULT_LOCALE,
    HANDSHAKE_METHOD,
    SET_LEVEL_METHOD,
    envelope,
    handshake_params,
)
from plugin_spec.framing import MAX_FRAME_BYTES
from plugin_spec.jsonrpc import INVALID_REQUEST, PARSE_ERROR
from reference_host.process.launch import WorkerSpec

SENTINEL_METHOD = "conformance/sentinel"
NO_SUCH_METHOD = "conformance_no_such_method"
AT_EXIT = "at its exit, after its stdin was closed"
BIG_FRAME_BYTES = 4 * 1024 * 1024
# The ids of the "ids" exchange, expected back unchanged: a string beyond ASCII, a small
# number, and 2^53 + 1, which a worker that parses numbers as doubles turns into 2^53.
PROBE_IDS: tuple[str | int, ...] = ("id-ü-1", 4242, 2**53 + 1)
# The ids of the requests other steps send, which the checks expect back.
INVALID_REQUEST_ID = "inv-1"
UNKNOWN_METHOD_ID = "unk-1"
CRLF_ID = "crlf-1"
BIG_FRAME_ID = "big-1"
HANDSHAKE_ID = "init-1"
# The call `$/cancelRequest` names: one answered already, as when a cancel loses the race
# with its call's answer, which FengYu's can.
CANCELLED_ID = UNKNOWN_METHOD_ID
METHOD_STEP = "method:"


class Step(StrEnum):
    """The probe's fixed steps, by the name their exchange is kept under in a Transcript."""

    HANDSHAKE = "handshake"
    START = "start"
    PARSE_ERROR = "parse-error"
    INVALID_REQUEST = "invalid-request"
    UNKNOWN_METHOD = "unknown-method"
    NOTIFICATIONS = "notifications"
    SET_LEVEL = "set-level"
    CANCEL = "cancel"
    IDS = "ids"
    CRLF = "crlf"
    BIG_FRAME = "big-frame"


def method_step(method: str) -> str:
    """The name of the step that calls one declared method."""
    return f"{METHOD_STEP}{method}"


def step_method(name: str) -> str | None:
    """The declared method a step calls; None for the fixed steps."""
    return name.removeprefix(METHOD_STEP) if name.startswith(METHOD_STEP) else None


def id_key(value: Any) -> tuple[str, str]:
    """An id with its JSON type: 4242, 4242.0 and "4242" are three different ids."""
    return type(value).__name__, json.dumps(value, ensure_ascii=False)


NULL_ID = id_key(None)  # a null id, or none at all (FengYu's Go SDK drops a nil id)


@dataclass(frozen=True)
class Planned:
    """One step of the script: its frames, how long its sentinel may take, the replies it
    expects (for each, the ids it may carry) and whether it sends only notifications."""

    name: str
    frames: list[bytes]
    seconds: float
    expects: tuple[tuple[Any, ...], ...] = ()
    notifies: bool = False


@dataclass
class Exchange:
    """What was sent in one step of the probe and what came back for it: before the
    sentinel's answer, in the grace after it, or later with one of its ids."""

    name: str
    sent: list[bytes]
    replies: list[Line] = field(default_factory=list)
    answered: bool = False
    note: str = ""
    stderr: str = ""
    expects: tuple[tuple[Any, ...], ...] = ()
    notifies: bool = False

    def expects_id(self, key: tuple[str, str]) -> bool:
        return any(key in map(id_key, ids) for ids in self.expects)

    def missing(self) -> list[tuple[str, str]]:
        """The id keys the expected replies that have not come may carry."""
        got = [reply_key(line) for line in self.replies]
        left: list[tuple[str, str]] = []
        for ids in self.expects:
            keys = set(map(id_key, ids))
            hit = next((key for key in got if key in keys), None)
            if hit is None:
                left += keys
            else:
                got.remove(hit)
        return left

    def describe(self) -> str:
        sent = " | ".join(cut(frame.decode("utf-8", "replace")) for frame in self.sent)
        got = " | ".join(cut(line.text) for line in self.replies) or "nothing"
        text = f"sent: {sent}\ngot: {got}"
        if self.note:
            text += f"\nnote: {self.note}"
        if self.stderr:
            text += "\nworker stderr (last lines):\n" + _tail(self.stderr)
        return text


@dataclass
class Transcript:
    """The whole probe: its exchanges by name and what happened at stdin EOF."""

    command: str
    exchanges: dict[str, Exchange] = field(default_factory=dict)
    exit_after_eof: int | None = None
    eof_wait: float = 0.0  # how long the worker was given to exit after its stdin closed
    eof_stderr: str = ""
    logs: LogLines = field(default_factory=LogLines)
    # Lines read after an exchange ended: when (AT_EXIT, or after which step) and the line.
    later_lines: list[tuple[str, Line]] = field(default_factory=list)

    def all_lines(self) -> list[tuple[str, Line]]:
        return [(e.name, line) for e in self.exchanges.values() for line in e.replies]

    def keep_rest(
        self, worker: RawWorker, when: str, seconds: float, served: list[Exchange]
    ) -> None:
        """Keep the lines worker wrote that no exchange read, up to its stdout's end: a late
        reply with an id of a step it served goes to that step, the rest are later lines."""
        for line in worker.rest(seconds):
            key = reply_key(line)
            step = next((e for e in reversed(served) if key and e.expects_id(key)), None)
            if step is not None and key != NULL_ID:
                step.replies.append(line)
            else:
                self.later_lines.append((when, line))


def reply_key(line: Line) -> tuple[str, str] | None:
    """The id key of a JSON object line (a missing id counts as null); None for other lines."""
    return None if line.message is None else id_key(line.message.get("id"))


def owner(line: Line, current: Exchange, earlier: list[Exchange]) -> Exchange:
    """The step a line belongs to: the current one, unless it carries an id only an earlier
    step of the same worker expects, or a null id the current step cannot have caused: a
    parse or invalid-request error an earlier step is still missing, or, right after a step
    of notifications, a late reply to one of them (a defect, kept with its step)."""
    key = reply_key(line)
    if key is None or current.expects_id(key) or (key == NULL_ID and current.notifies):
        return current
    if key != NULL_ID:
        return next((e for e in reversed(earlier) if e.expects_id(key)), current)
    error = line.message.get("error") if line.message else None
    if isinstance(error, dict) and error.get("code") in (PARSE_ERROR, INVALID_REQUEST):
        return next((e for e in reversed(earlier) if NULL_ID in e.missing()), current)
    return earlier[-1] if earlier and earlier[-1].notifies else current


def request(rid: Any, method: str, params: Any = None) -> dict[str, Any]:
    """A request as FengYu frames it: with the `_fengyu` envelope's locale."""
    message: dict[str, Any] = {"jsonrpc": jsonrpc.VERSION, "id": rid, "method": method}
    if params is not None:
        message["params"] = params
    return {**message, **envelope(DEFAULT_LOCALE)}


def handshake_frame(spec: WorkerSpec) -> bytes | None:
    """FengYu's `$/fengyu/initialize` for the spec's declared protocol version; None for a
    legacy package, which FengYu does not greet."""
    if spec.protocol_version is None:
        return None
    params = handshake_params(spec.protocol_version, spec.plugin_id, spec.plugin_version)
    return frame(request(HANDSHAKE_ID, HANDSHAKE_METHOD, params))


def handshake_result(exchange: Exchange | None) -> tuple[bool, Any]:
    """Whether the handshake got a result, and the result or the error that came instead."""
    replies = (
        [line.message for line in exchange.replies if line.message is not None] if exchange else []
    )
    for message in replies:
        if message.get("id") == HANDSHAKE_ID:
            # as FengYu reads it: a non-null error is the answer; a reply with neither member
            # would be a null result, which FengYu refuses (so does FY-WRK-013)
            error = message.get("error")
            answered = "result" in message and error is None
            return (answered, message.get("result") if answered else error)
    return False, None


def frame(message: Any, ending: bytes = b"\n") -> bytes:
    return json.dumps(message, ensure_ascii=False).encode() + ending


def script(methods: dict[str, float], reply: float) -> list[Planned]:
    """The probe's exchanges, each waited on for reply seconds (a method's call, for its
    declared timeout). The notification steps have a step with replies to wait for between
    them, so that a late reply to one of them is not met in the other: the notifications
    FengYu never sends, setLevel, then `$/cancelRequest`."""
    first_method = next(iter(methods), NO_SUCH_METHOD)
    steps = [
        Planned(Step.START, [], reply),
        Planned(Step.PARSE_ERROR, [b"{this is not json\n"], reply, ((None,),)),
        Planned(
            Step.INVALID_REQUEST,
            [frame({"jsonrpc": "2.0", "id": INVALID_REQUEST_ID, "params": {}, **envelope("en")})],
            reply,
            ((INVALID_REQUEST_ID, None),),
        ),
        Planned(
            Step.UNKNOWN_METHOD,
            [frame(request(UNKNOWN_METHOD_ID, NO_SUCH_METHOD, {}))],
            reply,
            ((UNKNOWN_METHOD_ID,),),
        ),
        Planned(
            Step.NOTIFICATIONS,
            [
                frame(jsonrpc.notification(NO_SUCH_METHOD, {})),
                frame(jsonrpc.notification(first_method, {})),
            ],
            methods.get(first_method, reply),
            notifies=True,
        ),
        Planned(
            Step.IDS,
            [frame(request(i, NO_SUCH_METHOD, {})) for i in PROBE_IDS],
            reply,
            tuple((i,) for i in PROBE_IDS),
        ),
        Planned(
            Step.SET_LEVEL,
            [frame(jsonrpc.notification(SET_LEVEL_METHOD, {"level": "DEBUG"}))],
            reply,
            notifies=True,
        ),
        Planned(
            Step.CRLF,
            [frame(request(CRLF_ID, NO_SUCH_METHOD, {}), b"\r\n")],
            reply,
            ((CRLF_ID,),),
        ),
        Planned(
            Step.CANCEL,
            [frame(jsonrpc.notification(CANCEL_METHOD, {"id": CANCELLED_ID}))],
            reply,
            notifies=True,
        ),
        Planned(
            Step.BIG_FRAME,
            [frame(request(BIG_FRAME_ID, NO_SUCH_METHOD, {"blob": "x" * BIG_FRAME_BYTES}))],
            reply * 2,
            ((BIG_FRAME_ID,),),
        ),
    ]
    steps += [
        Planned(
            method_step(name),
            [frame(request(method_id(name), name, {}))],
            timeout,
            ((method_id(name),),),
        )
        for name, timeout in methods.items()
    ]
    # Plain str names: a Step's repr would leak into messages that quote a step name.
    return [replace(step, name=str(step.name)) for step in steps]


def method_id(method: str) -> str:
    """The id of the request that calls one declared method."""
    return f"method-{method}"


def run_probe(
    spec: WorkerSpec, methods: dict[str, float], deadlines: Deadlines, *, start_only: bool = False
) -> Transcript:
    """Run the script (or just its start step) against fresh worker processes, waiting on
    them as long as deadlines say.

    Never raises for worker faults: they are what the transcript records.
    """
    transcript = Transcript(command=spec.shell_command())
    worker: RawWorker | None = None
    steps = script(methods, deadlines.reply)[: 1 if start_only else None]
    greeting = handshake_frame(spec)
    served: list[Exchange] = []  # the steps the current worker served, in order
    for index, step in enumerate(steps):
        name = step.name
        started = worker is None or not worker.alive()
        if worker is None or started:
            if worker is not None:
                _retire(worker, transcript, served, deadlines)
            worker = RawWorker(spec, transcript.logs)
            served = []
            if greeting is not None:
                # FengYu greets every worker it starts, and waits for nothing else meanwhile;
                # a worker silent to the greeting and the sentinel after it is silent to the
                # step too, so the greeting's exchange stands for the step's.
                wait = deadlines.handshake
                hello = Planned(str(Step.HANDSHAKE), [greeting], wait, ((HANDSHAKE_ID,),))
                greeted = _exchange(worker, hello, "conformance-hello", deadlines, wait, [])
                transcript.exchanges.setdefault(Step.HANDSHAKE, greeted)
                served.append(greeted)
                if not greeted.answered:
                    _retire(worker, transcript, served, deadlines)
                    transcript.exchanges[name] = replace(greeted, name=name)
                    if name == Step.START:
                        return transcript
                    continue
        wait = step.seconds + (deadlines.startup if started else 0)
        sentinel = f"conformance-sentinel-{index}"
        exchange = _exchange(worker, step, sentinel, deadlines, wait, served)
        transcript.exchanges[name] = exchange
        served.append(exchange)
        if not exchange.answered:
            _retire(worker, transcript, served, deadlines)
            if name == Step.START:
                return transcript
    if worker is not None and worker.alive():
        transcript.eof_wait = deadlines.eof
        transcript.exit_after_eof = worker.close_stdin(deadlines.eof)
        transcript.eof_stderr = worker.stderr
        if transcript.exit_after_eof is None:
            worker.kill()
        transcript.keep_rest(worker, AT_EXIT, deadlines.eof, served)
    elif worker is not None:
        transcript.exit_after_eof = worker.process.returncode
        _retire(worker, transcript, served, deadlines)
    return transcript


def _retire(
    worker: RawWorker, transcript: Transcript, served: list[Exchange], deadlines: Deadlines
) -> None:
    """Kill a worker the probe is done with, keeping what it wrote after its last step."""
    worker.kill()
    last = served[-1].name if served else Step.START
    transcript.keep_rest(worker, f"after step {str(last)!r}", deadlines.leftover, served)


def _exchange(
    worker: RawWorker,
    step: Planned,
    sentinel: str,
    deadlines: Deadlines,
    seconds: float,
    earlier: list[Exchange],
) -> Exchange:
    """Send the step's frames and the sentinel; read for up to seconds until the sentinel's
    answer has come and every reply the step expects too, or the grace after it has passed
    (kept short: a worker that rewrites ids makes each of its steps wait this long). A line
    with an id of an earlier step of this worker (earlier) is put back with that step."""
    exchange = Exchange(step.name, step.frames, expects=step.expects, notifies=step.notifies)
    deadline = time.monotonic() + seconds
    sent = worker.send([*step.frames, frame(request(sentinel, SENTINEL_METHOD, {}))], deadline)
    if sent is None:
        exchange.note = (
            f"the worker stopped reading stdin: the request was not written within {seconds:g} s"
        )
        exchange.stderr = worker.stderr
        return exchange
    while sent and not (exchange.answered and not exchange.missing()):
        line = worker.next_line(deadline)
        if line is None:
            break
        if line.message is not None and line.message.get("id") == sentinel:
            exchange.answered = True
            deadline = time.monotonic() + deadlines.grace
            continue
        owner(line, exchange, earlier).replies.append(line)
        if line.overlong:
            exchange.note = (
                f"a stdout line ran past {MAX_FRAME_BYTES} bytes (the 16 MiB frame limit) "
                "without a newline; the kit stopped reading it"
            )
            exchange.stderr = worker.stderr
            return exchange
    if not exchange.answered:
        exchange.note = _why_unanswered(worker, seconds, deadlines.exit)
        exchange.stderr = worker.stderr
    return exchange


def _why_unanswered(worker: RawWorker, seconds: float, exit_wait: float) -> str:
    """Why an exchange got no answer: an exit (stdout ends a moment before the process does,
    a sandboxed one's above all, so its end is waited for), a closed stdout, or silence."""
    if worker.at_eof:
        code = worker.exit_code(exit_wait)
        if code is None:
            return "the worker closed its stdout and went on running"
        return f"worker exited with code {code}"
    code = worker.process.poll()
    if code is not None:
        worker.exit_code(exit_wait)  # its stderr read to the end
        return f"worker exited with code {code}"
    return f"no answer within {seconds:g} s"


def _tail(text: str, lines: int = 20) -> str:
    return "\n".join(text.splitlines()[-lines:])
