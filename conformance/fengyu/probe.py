"""The protocol probe: one scripted conversation with a worker, read by many checks.

Each exchange writes some frames and then a sentinel request for a method no worker can
declare; everything the worker prints before the sentinel's answer belongs to the exchange.
So "no reply to a notification" is seen without waiting for silence, and a worker that
crashes or hangs in one exchange is restarted for the next, keeping checks independent.
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

from conformance.fengyu.raw_worker import Line, LogLines, RawWorker
from conformance.findings import cut
from plugin_spec.fengyu_runtime import (
    DEFAULT_LOCALE,
    HANDSHAKE_METHOD,
    HANDSHAKE_SECONDS,
    SET_LEVEL_METHOD,
    envelope,
    handshake_params,
)
from plugin_spec.framing import MAX_FRAME_BYTES
from reference_host.process import WorkerSpec

SENTINEL_METHOD = "conformance/sentinel"
NO_SUCH_METHOD = "conformance_no_such_method"
REPLY_SECONDS = 5.0
STARTUP_SECONDS = 20.0
EOF_SECONDS = 5.0
EXIT_SECONDS = 2.0  # after stdout EOF: how long the process (a sandbox's) may take to exit
LEFTOVER_SECONDS = 1.0  # after a kill: how long the last lines may take to be read
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
    IDS = "ids"
    CRLF = "crlf"
    BIG_FRAME = "big-frame"


def method_step(method: str) -> str:
    """The name of the step that calls one declared method."""
    return f"{METHOD_STEP}{method}"


def step_method(name: str) -> str | None:
    """The declared method a step calls; None for the fixed steps."""
    return name.removeprefix(METHOD_STEP) if name.startswith(METHOD_STEP) else None


@dataclass
class Exchange:
    """What was sent in one step of the probe and what came back before the sentinel."""

    name: str
    sent: list[bytes]
    replies: list[Line] = field(default_factory=list)
    answered: bool = False
    note: str = ""
    stderr: str = ""

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
    eof_stderr: str = ""
    logs: LogLines = field(default_factory=LogLines)
    # Lines read after an exchange ended: when (AT_EXIT, or after which step) and the line.
    later_lines: list[tuple[str, Line]] = field(default_factory=list)

    def all_lines(self) -> list[tuple[str, Line]]:
        return [(e.name, line) for e in self.exchanges.values() for line in e.replies]

    def keep_rest(self, worker: RawWorker, when: str, seconds: float) -> None:
        """Keep the lines worker wrote that no exchange read, up to its stdout's end."""
        self.later_lines += [(when, line) for line in worker.rest(seconds)]


def request(rid: Any, method: str, params: Any = None) -> dict[str, Any]:
    """A request as FengYu frames it: with the `_fengyu` envelope's locale."""
    message = {"jsonrpc": "2.0", "id": rid, "method": method}
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
            return ("result" in message, message.get("result", message.get("error")))
    return False, None


def frame(message: Any, ending: bytes = b"\n") -> bytes:
    return json.dumps(message, ensure_ascii=False).encode() + ending


def script(methods: dict[str, float]) -> list[tuple[str, list[bytes], float]]:
    """The probe's exchanges: name, frames, seconds to wait for the sentinel."""
    first_method = next(iter(methods), NO_SUCH_METHOD)
    steps: list[tuple[str, list[bytes], float]] = [
        (Step.START, [], REPLY_SECONDS),
        (Step.PARSE_ERROR, [b"{this is not json\n"], REPLY_SECONDS),
        (
            Step.INVALID_REQUEST,
            [frame({"jsonrpc": "2.0", "id": INVALID_REQUEST_ID, "params": {}, **envelope("en")})],
            REPLY_SECONDS,
        ),
        (
            Step.UNKNOWN_METHOD,
            [frame(request(UNKNOWN_METHOD_ID, NO_SUCH_METHOD, {}))],
            REPLY_SECONDS,
        ),
        (
            Step.NOTIFICATIONS,
            [
                frame({"jsonrpc": "2.0", "method": NO_SUCH_METHOD, "params": {}}),
                frame({"jsonrpc": "2.0", "method": first_method, "params": {}}),
            ],
            methods.get(first_method, REPLY_SECONDS),
        ),
        (
            Step.SET_LEVEL,
            [
                frame(
                    {
                        "jsonrpc": "2.0",
                        "method": SET_LEVEL_METHOD,
                        "params": {"level": "DEBUG"},
                    }
                )
            ],
            REPLY_SECONDS,
        ),
        (
            Step.IDS,
            [frame(request(i, NO_SUCH_METHOD, {})) for i in PROBE_IDS],
            REPLY_SECONDS,
        ),
        (
            Step.CRLF,
            [frame(request(CRLF_ID, NO_SUCH_METHOD, {}), b"\r\n")],
            REPLY_SECONDS,
        ),
        (
            Step.BIG_FRAME,
            [frame(request(BIG_FRAME_ID, NO_SUCH_METHOD, {"blob": "x" * BIG_FRAME_BYTES}))],
            REPLY_SECONDS * 2,
        ),
    ]
    steps += [
        (method_step(name), [frame(request(f"method-{name}", name, {}))], timeout)
        for name, timeout in methods.items()
    ]
    # Plain str names: a Step's repr would leak into messages that quote a step name.
    return [(str(name), frames, timeout) for name, frames, timeout in steps]


def run_probe(
    spec: WorkerSpec, methods: dict[str, float], *, start_only: bool = False
) -> Transcript:
    """Run the script (or just its start step) against fresh worker processes.

    Never raises for worker faults: they are what the transcript records.
    """
    transcript = Transcript(command=spec.shell_command())
    worker: RawWorker | None = None
    steps = script(methods)[:1] if start_only else script(methods)
    greeting = handshake_frame(spec)
    last = ""  # the step the current worker served last
    for index, (name, frames, seconds) in enumerate(steps):
        started = worker is None or not worker.alive()
        if worker is None or started:
            if worker is not None:
                _retire(worker, transcript, last)
            worker = RawWorker(spec, transcript.logs)
            last = Step.HANDSHAKE if greeting is not None else Step.START
            if greeting is not None:
                # FengYu greets every worker it starts, and waits for nothing else meanwhile;
                # a worker silent to the greeting and the sentinel after it is silent to the
                # step too, so the greeting's exchange stands for the step's.
                greeted = _exchange(
                    worker, Step.HANDSHAKE, [greeting], "conformance-hello", HANDSHAKE_SECONDS
                )
                transcript.exchanges.setdefault(Step.HANDSHAKE, greeted)
                if not greeted.answered:
                    _retire(worker, transcript, Step.HANDSHAKE)
                    transcript.exchanges[name] = replace(greeted, name=name)
                    if name == Step.START:
                        return transcript
                    continue
        wait = seconds + (STARTUP_SECONDS if started else 0)
        exchange = _exchange(worker, name, frames, f"conformance-sentinel-{index}", wait)
        transcript.exchanges[name] = exchange
        last = name
        if not exchange.answered:
            _retire(worker, transcript, name)
            if name == Step.START:
                return transcript
    if worker is not None and worker.alive():
        transcript.exit_after_eof = worker.close_stdin(EOF_SECONDS)
        transcript.eof_stderr = worker.stderr
        if transcript.exit_after_eof is None:
            worker.kill()
        transcript.keep_rest(worker, AT_EXIT, EOF_SECONDS)
    elif worker is not None:
        transcript.exit_after_eof = worker.process.returncode
        _retire(worker, transcript, last)
    return transcript


def _retire(worker: RawWorker, transcript: Transcript, last: str) -> None:
    """Kill a worker the probe is done with, keeping what it wrote after its last step."""
    worker.kill()
    transcript.keep_rest(worker, f"after step {last!r}", LEFTOVER_SECONDS)


def _exchange(
    worker: RawWorker, name: str, frames: list[bytes], sentinel: str, seconds: float
) -> Exchange:
    exchange = Exchange(name, frames)
    deadline = time.monotonic() + seconds
    sent = worker.send([*frames, frame(request(sentinel, SENTINEL_METHOD, {}))], deadline)
    if sent is None:
        exchange.note = (
            f"the worker stopped reading stdin: the request was not written within {seconds:g} s"
        )
        exchange.stderr = worker.stderr
        return exchange
    while sent:
        line = worker.next_line(deadline)
        if line is None:
            break
        if line.message is not None and line.message.get("id") == sentinel:
            exchange.answered = True
            return exchange
        exchange.replies.append(line)
        if line.overlong:
            exchange.note = (
                f"a stdout line ran past {MAX_FRAME_BYTES} bytes (the 16 MiB frame limit) "
                "without a newline; the kit stopped reading it"
            )
            exchange.stderr = worker.stderr
            return exchange
    exchange.note = _why_unanswered(worker, seconds)
    exchange.stderr = worker.stderr
    return exchange


def _why_unanswered(worker: RawWorker, seconds: float) -> str:
    """Why an exchange got no answer: an exit (stdout ends a moment before the process does,
    a sandboxed one's above all, so its end is waited for), a closed stdout, or silence."""
    if worker.at_eof:
        code = worker.exit_code(EXIT_SECONDS)
        if code is None:
            return "the worker closed its stdout and went on running"
        return f"worker exited with code {code}"
    code = worker.process.poll()
    if code is not None:
        worker.exit_code(EXIT_SECONDS)  # its stderr read to the end
        return f"worker exited with code {code}"
    return f"no answer within {seconds:g} s"


def _tail(text: str, lines: int = 20) -> str:
    return "\n".join(text.splitlines()[-lines:])
